//! Placeholder until the WriteTxnMarkers data plane lands: see the txndata branch.

use std::time::Duration;

use protocol::error::ErrorCode;
use replica::replica_manager::ReplicaManager;

use crate::group_coordinator::GroupCoordinatorService;

/// One marker to write to one partition.
pub struct MarkerWrite {
    /// Topic.
    pub topic: String,
    /// Partition index.
    pub partition: i32,
    /// Producer id.
    pub producer_id: types::ProducerId,
    /// Producer epoch.
    pub producer_epoch: types::ProducerEpoch,
    /// Commit or abort.
    pub commit: bool,
    /// Coordinator epoch.
    pub coordinator_epoch: i32,
}

/// Writes one marker on this broker.
pub async fn write_marker(
    _replicas: &ReplicaManager,
    _groups: &GroupCoordinatorService,
    _w: &MarkerWrite,
    _timeout: Duration,
) -> ErrorCode {
    ErrorCode::NOT_LEADER_OR_FOLLOWER
}
