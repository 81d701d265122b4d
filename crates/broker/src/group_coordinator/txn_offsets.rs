//! Transactional offset commits (KIP-98, KIP-447): TxnOffsetCommit writes the offsets in a TRANSACTIONAL
//! batch of the producer; they stay pending in the coordinator until WriteTxnMarkers has written the
//! producer's COMMIT or ABORT marker to the groups' `__consumer_offsets` partition and calls
//! [`GroupCoordinatorService::complete_transaction`] (Kafka's `GroupCoordinatorService.completeTransaction`;
//! loading replays the markers themselves).

use super::*;

impl GroupCoordinatorService {
    /// TxnOffsetCommit: [`coordinator::GroupCoordinator::txn_offset_commit`], its records appended in a
    /// TRANSACTIONAL batch of `req.producer_id` / `req.producer_epoch`, then waits (up to
    /// `offsets.commit.timeout.ms`) for the ISR as OffsetCommit does. When the records cannot be appended
    /// the producer's pending offsets return to what they were (Kafka reverts a failed coordinator write).
    ///
    /// Errors: see [`check_coordinator`](Self::check_coordinator), COORDINATOR_NOT_AVAILABLE; write errors
    /// come back as the [`Written`] half (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, UNKNOWN_SERVER_ERROR
    /// for records too large).
    pub async fn txn_offset_commit(
        &self,
        req: &coordinator::TxnOffsetCommitRequest,
    ) -> Result<(coordinator::OffsetCommitResult, Written), CoordinatorError> {
        self.ready_for(&req.group_id).await?;
        let partitions = committed_partitions(&req.topics);
        let (value, written) = self.call_with_undo(
            Some(&req.group_id),
            |st, now| {
                let before = st.coordinator.txn_offsets_snapshot(
                    req.producer_id,
                    &req.group_id,
                    &partitions,
                );
                let o = st.coordinator.txn_offset_commit(now, req);
                (o.response, o.effects, before)
            },
            |st, before| st.coordinator.restore_txn_offsets(before),
        )?;
        let appended = match written {
            Ok(a) => a,
            Err(e) => return Ok((value, Err(e))),
        };
        Ok((value, self.wait_replicated(&appended).await))
    }

    /// The transaction of `producer_id` ended: its COMMIT (`commit`) or ABORT marker has been written to
    /// `__consumer_offsets` partition `offsets_partition`. Completes that producer's pending transactional
    /// offsets of the groups of that partition (committed offsets replaced on COMMIT unless a later plain
    /// commit of the partition exists; dropped on ABORT). Called by the WriteTxnMarkers handler after the
    /// marker is appended; writes nothing itself (the marker is the record) and is idempotent (applying a
    /// marker loading already replayed finds nothing pending).
    ///
    /// Cluster mode: a partition still loading records the completion and applies it once its load is merged
    /// (the load may have read the log before the marker). Errors: NOT_COORDINATOR when this broker does not
    /// lead `offsets_partition` (cluster mode).
    ///
    /// Source: Kafka's `GroupCoordinatorService.completeTransaction` / `OffsetMetadataManager.replayEndTransactionMarker`.
    pub async fn complete_transaction(
        &self,
        offsets_partition: i32,
        producer_id: types::ProducerId,
        commit: bool,
    ) -> Written {
        {
            let mut st = self.state.lock();
            if self.cluster_mode {
                match self.partitions.lock().get(&offsets_partition) {
                    None => return Err(CoordinatorError::NotCoordinator),
                    Some(Coordination::Loading(_)) => {
                        st.completions
                            .entry(offsets_partition)
                            .or_default()
                            .push((producer_id, commit));
                        return Ok(());
                    }
                    Some(Coordination::Loaded) => {}
                }
            }
            let now = st.now(&*self.clock);
            let n = self.num_partitions.load(Ordering::Acquire);
            let fx = st
                .coordinator
                .complete_transaction_for(now, producer_id, commit, |g| {
                    partition_for(g, n) == offsets_partition
                });
            let _ = self.apply(&mut st, fx);
        }
        self.timer.notify_one();
        Ok(())
    }

    /// Cluster mode, a load of `partition` was just merged: applies the completions that arrived while it
    /// was loading.
    pub(super) fn apply_deferred_completions(&self, st: &mut State, partition: i32, now: i64) {
        let Some(done) = st.completions.remove(&partition) else {
            return;
        };
        let n = self.num_partitions.load(Ordering::Acquire);
        for (producer_id, commit) in done {
            let fx = st
                .coordinator
                .complete_transaction_for(now, producer_id, commit, |g| {
                    partition_for(g, n) == partition
                });
            let _ = self.apply(st, fx);
        }
    }
}
