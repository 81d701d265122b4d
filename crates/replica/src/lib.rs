//! Partitions and their replication, the middle layer between request handling and storage:
//! [`partition::Partition`] owns one partition's log and replica state behind its own locks and offers
//! verbs (append as leader or follower, read, truncate, become leader or follower);
//! [`replica_states::ReplicaStates`] is the sans-I/O model of the leader's view of its followers (ISR,
//! HighWatermark); [`replica_manager::ReplicaManager`] holds every partition, the produce/fetch purgatories
//! and the ISR-shrink timer; the replica fetcher pulls from leaders over the Kafka protocol (its connections
//! come from a [`transport::Connector`], tokio TCP in production; its throttling, KIP-73, from a
//! [`replication_quota::ReplicationQuota`]); [`replica_selector`] is KIP-392's choice of a consumer's
//! preferred read replica; and [`cluster_link::ClusterLink`] is the
//! one seam to the controller (AlterPartition, broker endpoints).
//!
//! Depends on `storage`, `protocol`, `metadata` and `types` only; knows nothing of configuration files,
//! request handlers or the cluster mode (the broker's composition root passes what it needs).

#![warn(missing_docs)]

pub mod cluster_link;
mod fetch_session_handler;
pub mod partition;
mod partition_results;
pub mod replica_fetcher;
pub mod replica_manager;
pub mod replica_selector;
mod replica_states;
pub mod replication_quota;
pub mod transport;
