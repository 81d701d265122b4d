//! Writing end-transaction markers on this broker (KIP-98): the per-partition work of WriteTxnMarkers
//! (Kafka's `KafkaApis.handleWriteTxnMarkersRequest`), shared by that handler and by the transaction
//! coordinator for the partitions this broker leads, so those markers need no network round trip.
//!
//! One marker on one partition: the partition must be hosted here (else UNKNOWN_TOPIC_OR_PARTITION) and
//! led here (else NOT_LEADER_OR_FOLLOWER); it is appended as one control batch with
//! `storage::AppendOrigin::Coordinator` (the log checks the producer epoch and the coordinator epoch) and
//! acks=all: the committed ISR must hold `min.insync.replicas` (NOT_ENOUGH_REPLICAS) and the write waits
//! for the HighWatermark to pass it, at most the given timeout (REQUEST_TIMED_OUT) — Kafka appends markers
//! with requiredAcks = -1 and `request.timeout.ms`. A marker on a `__consumer_offsets` partition then
//! completes the producer's pending transactional offsets there (the group coordinator's
//! `complete_transaction`). Errors are typed here ([`MarkerError`]) and mapped to Kafka codes by
//! `server::apis::errors::marker_result_code`.

use std::time::Duration;

use protocol::error::ErrorCode;
use replica::replica_manager::{ReplicaError, ReplicaManager};
use storage::EndTransactionMarker;
use tokio::time::Instant;
use types::{ProducerEpoch, ProducerId};

use crate::group_coordinator::{CoordinatorError, GroupCoordinatorService};

/// The group coordinator's topic (Kafka's `GROUP_METADATA_TOPIC_NAME`): its markers complete
/// transactional offset commits.
const GROUP_METADATA_TOPIC: &str = "__consumer_offsets";

/// One marker to write to one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkerWrite {
    /// The partition's topic name.
    pub topic: String,
    /// The partition index.
    pub partition: i32,
    /// The transactional producer whose transaction ends.
    pub producer_id: ProducerId,
    /// The producer epoch the marker is written with.
    pub producer_epoch: ProducerEpoch,
    /// COMMIT (true) or ABORT (false): WriteTxnMarkers' `transaction_result`.
    pub commit: bool,
    /// The transaction coordinator's epoch (its `__transaction_state` partition's leader epoch); a marker
    /// from an older coordinator than the last one seen by the partition is fenced.
    pub coordinator_epoch: i32,
}

/// Why a marker was not written (or its offsets not completed).
#[derive(Debug, thiserror::Error)]
pub enum MarkerError {
    /// The partition is not hosted by this broker: UNKNOWN_TOPIC_OR_PARTITION (3).
    #[error("the partition is not hosted by this broker")]
    UnknownTopicOrPartition,
    /// The append or its replication failed (not the leader, ISR too small, timeout, the log's epoch
    /// checks).
    #[error(transparent)]
    Replica(#[from] ReplicaError),
    /// The marker is written but the group coordinator could not complete the transaction's offsets.
    #[error("completing the transaction's offsets: {0}")]
    Coordinator(CoordinatorError),
}

/// Writes one marker on this broker (the leader), waits for replication (acks=all) until `timeout`, then completes a `__consumer_offsets` partition's pending transactional offsets. Returns the Kafka error code (NONE on success).
pub async fn write_marker(
    replicas: &ReplicaManager,
    groups: &GroupCoordinatorService,
    w: &MarkerWrite,
    timeout: Duration,
) -> ErrorCode {
    let result = write(replicas, groups, w, timeout).await;
    if let Err(e) = &result {
        tracing::debug!(topic = %w.topic, partition = w.partition, producer_id = %w.producer_id, error = %e, "transaction marker not written");
    }
    crate::server::apis::errors::marker_result_code(&result)
}

/// [`write_marker`] with its typed error.
async fn write(
    replicas: &ReplicaManager,
    groups: &GroupCoordinatorService,
    w: &MarkerWrite,
    timeout: Duration,
) -> Result<(), MarkerError> {
    let deadline = Instant::now() + timeout;
    let partition = replicas
        .partition(&w.topic, w.partition)
        .ok_or(MarkerError::UnknownTopicOrPartition)?;
    let marker = EndTransactionMarker::new(w.commit, w.coordinator_epoch);
    let min_isr = partition.min_insync_replicas();
    let (info, leader_epoch) =
        replicas.append_txn_marker(&partition, w.producer_id, w.producer_epoch, marker, min_isr)?;
    replicas
        .wait_for_replication(
            &partition,
            info.last_offset.next(),
            leader_epoch,
            min_isr,
            deadline,
        )
        .await?;
    if w.topic == GROUP_METADATA_TOPIC {
        groups
            .complete_transaction(w.partition, w.producer_id, w.commit)
            .await
            .map_err(MarkerError::Coordinator)?;
    }
    Ok(())
}
