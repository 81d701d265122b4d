//! Runnel's KRaft-style metadata quorum (KIP-500; KIP-595 raft quorum; KIP-631 records, broker
//! registration and heartbeats; KIP-497 AlterPartition) built on openraft 0.9.
//!
//! - The metadata log records ([`MetadataRecord`]), the replayed [`MetadataImage`], the request and
//!   reply formats and [`ControllerError`] live in the `metadata` crate (no I/O, no tokio, no
//!   openraft) and are re-exported here.
//! - [`control`]: the pure decision logic ([`control::QuorumControl`]).
//! - [`log_store`] / [`state_machine`]: the disk-backed raft log and the snapshotting state machine.
//! - [`ControllerServer`]: a controller node; [`ControllerClient`]: what brokers use.
//! - [`kafka_apis`]: Kafka requests on the controller listener (ApiVersions, DescribeCluster,
//!   DescribeQuorum: what `kafka-metadata-quorum.sh --bootstrap-controller` sends), beside the JSON frames
//!   of [`rpc`]; [`describe_quorum`]: DescribeQuorum's answer, shared with the broker.
//! - [`voter_changes`]: KIP-853's dynamic quorum (AddRaftVoter, RemoveRaftVoter, controllers joining as
//!   learners through `controller.quorum.bootstrap.servers`) on openraft's membership;
//!   [`meta_properties`]: the controller's `directory.id`.
//! - [`transport`]: the I/O seams (network, disk, seed) a deterministic simulation replaces.
//!
//! Wiring a broker: build a [`ControllerClient`] from `controller.quorum.voters`
//! ([`parse_voters`]), `register_broker`, then heartbeat every ~2 s with the offset of the image it
//! has replayed, and long-poll `fetch_metadata(offset, ..)` applying `Records` with
//! [`MetadataImage::apply`] (or replacing the image on `Image`). Client calls wait for an active
//! controller themselves (bounded by the client's deadline).

#![warn(missing_docs)]

mod broker_apis;
pub mod client;
pub mod config;
pub mod control;
pub mod describe_quorum;
pub mod kafka_apis;
mod listener;
pub mod log_store;
pub mod meta_properties;
pub mod network;
mod quorum_state;
pub mod raft_types;
pub mod rpc;
pub mod server;
pub mod state_machine;
mod status;
pub mod transport;
mod vote_guard;
pub mod voter_changes;

pub use client::{Committed, ControllerClient};
pub use config::{parse_voters, ControllerConfig};
pub use metadata::{
    AlterPartition, BrokerRegistration, ControllerError, CreateTopic, CreatedTopic, ElectionResult,
    ElectionType, Heartbeat, HeartbeatReply, MetadataImage, MetadataRecord, MetadataUpdate,
    PartitionRegistration, QuorumInfo, RegisterBroker, ReplicaProgress, TopicImage, NO_LEADER,
    RESOURCE_BROKER, RESOURCE_TOPIC,
};
pub use server::{ControllerServer, ControllerTuning, RaftStatus};
pub use status::ControllerStatus;
pub use transport::{
    Accepted, BoxedStream, ClusterOperation, ControllerSeams, ListenerLimits, Peer, PeerAuthorizer,
    PendingConnection, RpcListener, TcpTransport, Transport,
};
