//! Runnel's cluster metadata as plain values (KIP-500, KIP-631): the metadata log records, the
//! [`MetadataImage`] every controller and broker builds by replaying them, and the request and reply
//! formats of the broker-controller API.
//!
//! - [`record`]: [`MetadataRecord`], one entry of `__cluster_metadata-0`.
//! - [`image`]: [`MetadataImage`] and [`MetadataImage::apply`], the only way the image changes.
//! - [`request`]: what a broker asks the controller and what it answers ([`RegisterBroker`],
//!   [`Heartbeat`], [`AlterPartition`], [`CreateTopic`], [`MetadataUpdate`], ...).
//! - [`rpc`]: [`rpc::ClientRequest`]/[`rpc::ClientResponse`], the broker-facing RPC messages.
//! - [`quota`]: client quotas (entities, values, the image, AlterClientQuotas/DescribeClientQuotas rules).
//! - [`error`]: [`ControllerError`], an error answered to a broker.
//!
//! The `controller` crate (openraft node, raft log store, state machine, `QuorumControl`, server and
//! `ControllerClient`) builds on this crate and re-exports it; brokers that only read the image
//! import from here.
//!
//! # Rule: no I/O, no tokio, no openraft
//!
//! This crate does no I/O and depends on neither tokio nor openraft (nor anything that pulls them in):
//! replay and the message formats are pure, so tests and a simulator can drive them without a
//! runtime. Its normal dependencies are serde, thiserror, uuid, `types` and imbl (the image's persistent
//! maps, [`TopicsImage`]);
//! `cargo tree -p metadata -e normal` shows the whole list, and `tests/dependency_rule.rs` fails when
//! a dependency outside that list is added.
//!
//! # Wire format
//!
//! Every type here is serialized as JSON on the controller RPC, in raft log entries and in snapshots.
//! The serde attributes are that format; `tests/wire_format.rs` pins it byte for byte.

#![warn(missing_docs)]

pub mod error;
pub mod image;
pub mod quota;
pub mod reassignment;
pub mod record;
pub mod request;
pub mod rpc;
pub mod scram;
pub mod topics_image;

pub use error::ControllerError;
pub use image::{
    BrokerRegistration, MetadataImage, PartitionRegistration, TopicImage, CORDONED_LOG_DIRS,
};
pub use reassignment::{ongoing_reassignments, OngoingReassignment, Reassignment};
pub use record::{
    AclEntry, BrokerEndpoint, MetadataRecord, DIRECTORY_LOST, DIRECTORY_UNASSIGNED, NO_LEADER,
    RESOURCE_BROKER, RESOURCE_CLIENT_METRICS, RESOURCE_GROUP, RESOURCE_TOPIC,
};
pub use request::{
    AlterPartition, AssignReplicasToDirs, CreateTopic, CreatedTopic, ElectionResult, ElectionType,
    Heartbeat, HeartbeatReply, LeaderAndIsr, MetadataUpdate, PartitionSizes, QuorumInfo,
    RegisterBroker, ReplicaProgress,
};
pub use topics_image::TopicsImage;
