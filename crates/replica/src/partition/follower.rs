//! The follower side of [`Partition`]: the verbs the replica fetcher calls. Each applies only while the
//! partition still follows the fetcher's leader in its epoch, and a truncation that lowers the recovery
//! point is checkpointed before the verb returns.

use bytes::Bytes;
use storage::StorageError;
use types::{BrokerId, LeaderEpoch, Offset};

use super::{truncation_offset, FetchPosition, Partition};

/// Follower side: every verb applies only while the partition still follows the fetcher's `leader` in
/// its `epoch` (else it does nothing and reports so).
impl Partition {
    /// True while this replica follows `leader` in leader epoch `epoch`.
    pub fn is_following(&self, leader: BrokerId, epoch: LeaderEpoch) -> bool {
        self.state.lock().follows(leader, epoch)
    }

    /// Where the next follower Fetch starts.
    pub(crate) fn fetch_position(&self) -> FetchPosition {
        let log = self.log.lock();
        FetchPosition {
            log_end_offset: log.log_end_offset(),
            log_start_offset: log.log_start_offset(),
            last_fetched_epoch: log.latest_epoch().unwrap_or(LeaderEpoch::NONE),
        }
    }

    /// Truncates by the leader's (epoch, end offset) `answer` for `requested` (our latest epoch when asked;
    /// None: our cache was empty) to [`truncation_offset`] (KIP-101, KIP-279); a target equal to the
    /// LogEndOffset still drops the epoch-cache entries starting there. Returns false when the
    /// partition no longer follows `leader` in `epoch`.
    pub(crate) fn truncate_by_epoch(
        &self,
        leader: BrokerId,
        epoch: LeaderEpoch,
        requested: Option<LeaderEpoch>,
        answer: (LeaderEpoch, Offset),
    ) -> Result<bool, StorageError> {
        let lowered = {
            let st = self.state.lock();
            if !st.follows(leader, epoch) {
                return Ok(false);
            }
            let mut log = self.log.lock();
            let leo = log.log_end_offset();
            let hw = log.high_watermark();
            let to = truncation_offset(requested, answer, |e| log.end_offset_for_epoch(e), leo, hw);
            if to < leo {
                tracing::info!(topic = %self.topic, partition = self.partition, from = %leo, to = %to, "truncating follower log");
            }
            // Also at the LEO (no record removed): the log still drops epoch entries starting there — an
            // epoch this replica led without appending, which would make every Fetch diverge (Kafka's
            // `truncateTo` always truncates the epoch cache).
            let before = log.recovery_point();
            log.truncate_to(to)?;
            log.recovery_point() < before
        };
        self.checkpoint_if(lowered)?;
        Ok(true)
    }

    /// Appends fetched batches (Kafka's `appendRecordsToFollowerOrFutureReplica`) and follows the leader's
    /// HighWatermark (capped by our LEO) and LogStartOffset. Returns false when the partition no longer
    /// follows `leader` in `epoch` (nothing applied). Errors: UnexpectedAppendOffset (the fetcher then
    /// truncates again), storage failures.
    pub(crate) fn append_as_follower(
        &self,
        leader: BrokerId,
        epoch: LeaderEpoch,
        records: Bytes,
        leader_hw: Offset,
        leader_log_start: Offset,
        now_ms: i64,
    ) -> Result<bool, StorageError> {
        let mut lowered = false;
        let flush = {
            let st = self.state.lock();
            if !st.follows(leader, epoch) {
                return Ok(false);
            }
            let mut log = self.log.lock();
            if !records.is_empty() {
                // An empty log restarted inside a batch (the leader's LogStartOffset fell mid-batch, e.g.
                // after DeleteRecords): start it at the batch's base offset instead; the LogStartOffset
                // follows the leader's below.
                let leo = log.log_end_offset();
                if leo == log.log_start_offset() {
                    if let Some(Ok(first)) = protocol::record::batches(&records).next() {
                        let (base, last) =
                            (Offset(first.base_offset()), Offset(first.last_offset()));
                        if base < leo && last >= leo {
                            let before = log.recovery_point();
                            log.truncate_fully_and_start_at(base)?;
                            lowered = log.recovery_point() < before;
                        }
                    }
                }
                log.append_as_follower(records, now_ms)?;
            }
            // The leader's HW may be past what we hold: the one caller that clamps to the LEO.
            let leo = log.log_end_offset();
            log.update_high_watermark(leader_hw.min(leo));
            if leader_log_start > log.log_start_offset() {
                let to = leader_log_start.min(log.high_watermark());
                if to > log.log_start_offset() {
                    log.delete_records_before(to)?;
                }
            }
            // `flush.messages` on a follower: fsynced once the locks are released, as on the leader.
            log.prepare_due_flush(now_ms)?
        };
        if let Some(job) = flush {
            self.run_flush(job)?;
        }
        self.checkpoint_if(lowered)?;
        self.wake();
        Ok(true)
    }

    /// OFFSET_OUT_OF_RANGE from the leader: below the leader's LogStartOffset → start over there; else
    /// truncate to the leader's HW (our LEO is past the leader's log end). Returns false when neither
    /// applies; true also when the partition no longer follows `leader` in `epoch` (nothing to do).
    pub(crate) fn truncate_out_of_range(
        &self,
        leader: BrokerId,
        epoch: LeaderEpoch,
        leader_log_start: Offset,
        leader_hw: Offset,
    ) -> Result<bool, StorageError> {
        let (done, lowered) = {
            let st = self.state.lock();
            if !st.follows(leader, epoch) {
                return Ok(true);
            }
            let mut log = self.log.lock();
            let leo = log.log_end_offset();
            let before = log.recovery_point();
            let done = if leader_log_start.get() >= 0 && leo < leader_log_start {
                tracing::info!(topic = %self.topic, partition = self.partition, %leo, %leader_log_start, "follower behind the leader's log start: starting over");
                log.truncate_fully_and_start_at(leader_log_start)?;
                true
            } else if leader_hw.get() >= 0 && leader_hw < leo {
                log.truncate_to(leader_hw)?;
                true
            } else {
                false
            };
            (done, log.recovery_point() < before)
        };
        self.checkpoint_if(lowered)?;
        Ok(done)
    }

    /// Writes the recovery-point checkpoint when a truncation lowered this log's recovery point (Kafka's
    /// `LogManager.truncateTo` checkpoints right after truncating): until it is written, a restart would
    /// start recovery past the truncation and trust unflushed appends made after it (found by the SimFs
    /// crash simulation). Called with no partition lock held (the checkpoint locks every log). Errors: the
    /// checkpoint's (the LogManager then takes the directory offline).
    fn checkpoint_if(&self, lowered: bool) -> Result<(), StorageError> {
        match (&self.log_manager, lowered) {
            (Some(lm), true) => lm.checkpoint(),
            _ => Ok(()),
        }
    }
}
