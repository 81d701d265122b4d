//! What replication needs from the cluster, as a leaf both the [`crate::replica_manager`] and the
//! [`crate::replica_fetcher`] import (so neither imports the other for it): the [`ClusterLink`] trait,
//! its single-node implementation [`StandaloneLink`], and the [`TopicPartition`] key.
//!
//! The cluster-mode implementation is `broker::cluster::ControllerLink` (endpoints from the metadata image,
//! AlterPartition through the controller, KIP-497).

use futures::future::BoxFuture;
use metadata::ControllerError;
use types::BrokerId;

use crate::partition::PartitionState;

/// A topic-partition (topic name, partition index): storage's key, shared by the broker.
pub use storage::TopicPartition;

/// What the ReplicaManager needs from the cluster (implemented by the broker: standalone mode = local only,
/// see [`StandaloneLink`]; cluster mode = controller client + metadata image).
pub trait ClusterLink: Send + Sync + 'static {
    /// Advertised host/port of a broker (followers connect to leaders here with the Kafka protocol).
    fn broker_endpoint(&self, broker_id: BrokerId) -> Option<(String, u16)>;
    /// Proposes an ISR change (Kafka's AlterPartition, KIP-497); returns the committed state or the
    /// controller's refusal (e.g. INVALID_UPDATE_VERSION 95, FENCED_LEADER_EPOCH 74, or REQUEST_TIMED_OUT
    /// when no controller answered).
    fn alter_partition(
        &self,
        topic: String,
        partition: i32,
        state: PartitionState,
    ) -> BoxFuture<'static, Result<PartitionState, ControllerError>>;
}

/// The single-node [`ClusterLink`]: no other brokers; AlterPartition commits the proposal at once with the
/// partition epoch bumped.
#[derive(Debug, Default, Clone, Copy)]
pub struct StandaloneLink;

impl ClusterLink for StandaloneLink {
    fn broker_endpoint(&self, _broker_id: BrokerId) -> Option<(String, u16)> {
        None
    }

    fn alter_partition(
        &self,
        _topic: String,
        _partition: i32,
        mut state: PartitionState,
    ) -> BoxFuture<'static, Result<PartitionState, ControllerError>> {
        state.partition_epoch = state.partition_epoch.next();
        Box::pin(futures::future::ready(Ok(state)))
    }
}
