//! Runnel's KRaft-style metadata quorum (KIP-500, KIP-595 raft, KIP-631 records/registration,
//! KIP-497 AlterPartition) built on openraft.
//!
//! - [`metadata`]: the metadata log records and the replayed [`MetadataImage`].
//! - [`ControllerServer`]: a controller node; [`ControllerClient`]: what brokers use.

pub mod client;
pub mod config;
pub mod control;
pub mod error;
pub mod metadata;
pub mod server;
pub mod types;

pub use client::ControllerClient;
pub use config::{parse_voters, ControllerConfig};
pub use error::{codes, ControllerError};
pub use metadata::{
    BrokerRegistration, MetadataImage, MetadataRecord, PartitionRegistration, TopicImage,
    NO_LEADER, RESOURCE_BROKER, RESOURCE_TOPIC,
};
pub use server::ControllerServer;
pub use types::{CreateTopic, CreatedTopic, HeartbeatReply, MetadataUpdate, QuorumInfo};
