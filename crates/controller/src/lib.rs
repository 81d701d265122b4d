//! Runnel's KRaft-style metadata quorum (KIP-500; KIP-595 raft quorum; KIP-631 records, broker
//! registration and heartbeats; KIP-497 AlterPartition) built on openraft 0.9.
//!
//! - [`metadata`]: the metadata log records ([`MetadataRecord`]) and the replayed [`MetadataImage`].
//! - [`control`]: the pure decision logic ([`control::QuorumControl`]).
//! - [`log_store`] / [`state_machine`]: the disk-backed raft log and the snapshotting state machine.
//! - [`ControllerServer`]: a controller node; [`ControllerClient`]: what brokers use.
//!
//! Wiring a broker: build a [`ControllerClient`] from `controller.quorum.voters`
//! ([`parse_voters`]), `register_broker`, then heartbeat every ~2 s with the offset of the image it
//! has replayed, and long-poll `fetch_metadata(offset, ..)` applying `Records` with
//! [`MetadataImage::apply`] (or replacing the image on `Image`). Client calls wait for an active
//! controller themselves (bounded by the client's deadline).

#![warn(missing_docs)]

pub mod client;
pub mod config;
pub mod control;
pub mod error;
pub mod log_store;
pub mod metadata;
pub mod network;
pub mod raft_types;
pub mod rpc;
pub mod server;
pub mod state_machine;
pub mod types;

pub use client::ControllerClient;
pub use config::{parse_voters, ControllerConfig};
pub use error::ControllerError;
pub use metadata::{
    BrokerRegistration, MetadataImage, MetadataRecord, PartitionRegistration, TopicImage,
    NO_LEADER, RESOURCE_BROKER, RESOURCE_TOPIC,
};
pub use server::{ControllerServer, ControllerTuning};
pub use types::{
    CreateTopic, CreatedTopic, ElectionResult, ElectionType, HeartbeatReply, MetadataUpdate,
    QuorumInfo,
};
