//! The read side of [`Partition`]: a Fetch's read, on the leader and, for a consumer's Fetch v11+, on a
//! follower (KIP-392), and the leader's candidates for a consumer's preferred read replica.

use protocol::record::Records;
use types::{BrokerId, Offset};

use super::{FetchSource, IsolationLevel, Partition, PartitionRead, Role};

/// What [`Partition::read_replica_candidates`] returns: the leader and the followers that may serve a
/// consumer's offset (KIP-392).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadReplicaCandidates {
    /// The leader (this broker).
    pub leader: BrokerId,
    /// The leader's LogEndOffset.
    pub leader_log_end_offset: Offset,
    /// ISR followers holding the offset: (broker, its LogEndOffset, ms since it was last caught up).
    pub followers: Vec<(BrokerId, Offset, i64)>,
}

impl Partition {
    /// Reads for a Fetch (Kafka's `fetchRecords`): whole batches from `fetch_offset`, at most `max_bytes`
    /// (the first batch whole when `min_one_batch`, KIP-74), up to the LogEndOffset for a follower, the
    /// HighWatermark for a `read_uncommitted` consumer and the LastStableOffset for a `read_committed` one
    /// (`storage::Log::read_committed`, which also lists the aborted transactions of the returned range).
    /// `NotLeader` when this replica does not lead and `source` needs the leader (a follower, a consumer's
    /// Fetch before v11), or once stopped. On a follower (KIP-392) the bounds are its own HighWatermark
    /// (the leader's, capped by its LogEndOffset) and LastStableOffset, so it never serves past what the
    /// leader has told it is committed: an offset between them and its LogEndOffset reads empty, one past
    /// its LogEndOffset or below its LogStartOffset is OffsetOutOfRange.
    pub fn read(
        &self,
        fetch_offset: Offset,
        max_bytes: usize,
        source: FetchSource,
        min_one_batch: bool,
    ) -> PartitionRead {
        let st = self.state.lock();
        let serves = match (&st.role, source) {
            (Role::Leader(_), _) => true,
            (Role::Follower { .. }, FetchSource::Consumer { leader_only, .. }) => {
                !leader_only && !st.is_stopped()
            }
            (Role::Follower { .. }, FetchSource::Follower) => false,
        };
        if !serves {
            return PartitionRead::NotLeader;
        }
        let mut log = self.log.lock();
        let high_watermark = log.high_watermark();
        let last_stable_offset = log.last_stable_offset();
        let log_start_offset = log.log_start_offset();
        let leo = log.log_end_offset();
        let read = match source {
            FetchSource::Follower => log.read(fetch_offset, max_bytes, leo, min_one_batch),
            FetchSource::Consumer {
                isolation: IsolationLevel::ReadCommitted,
                ..
            } => log.read_committed(fetch_offset, max_bytes, min_one_batch),
            // Kafka's `LocalLog.read`: past the HighWatermark but within the log reads nothing, not
            // OffsetOutOfRange (a consumer sent from the leader to a follower whose HW lags, or to a
            // new leader).
            FetchSource::Consumer { .. }
                if fetch_offset > high_watermark
                    && fetch_offset <= leo
                    && fetch_offset >= log_start_offset =>
            {
                return PartitionRead::Records {
                    high_watermark,
                    last_stable_offset,
                    log_start_offset,
                    records: Records::default(),
                    aborted_transactions: Vec::new(),
                };
            }
            FetchSource::Consumer { .. } => {
                log.read(fetch_offset, max_bytes, high_watermark, min_one_batch)
            }
        };
        match read {
            Ok(data) => PartitionRead::Records {
                high_watermark,
                last_stable_offset,
                log_start_offset,
                records: data.records,
                aborted_transactions: data.aborted_transactions.unwrap_or_default(),
            },
            Err(error) => PartitionRead::Error {
                error,
                high_watermark,
                log_start_offset,
            },
        }
    }

    /// KIP-392 on the leader: the replicas that may serve a consumer at `fetch_offset` (Kafka's
    /// `findPreferredReadReplica` filter) — the ISR followers whose LogEndOffset ≥ `fetch_offset` ≥ their
    /// LogStartOffset, as `(broker, LogEndOffset, ms since last caught up)` at `monotonic_ms` — and the
    /// leader's (id, LogEndOffset). `None` unless this replica leads.
    pub fn read_replica_candidates(
        &self,
        fetch_offset: Offset,
        monotonic_ms: i64,
    ) -> Option<ReadReplicaCandidates> {
        let st = self.state.lock();
        let Role::Leader(rs) = &st.role else {
            return None;
        };
        let leader_log_end_offset = self.log.lock().log_end_offset();
        let followers = (rs.isr().iter())
            .filter_map(|&id| rs.follower(id).map(|f| (id, f)))
            .filter(|(_, f)| f.log_end_offset >= fetch_offset && f.log_start_offset <= fetch_offset)
            .map(|(id, f)| {
                let since = (monotonic_ms - f.last_caught_up_time_ms).max(0);
                (id, f.log_end_offset, since)
            })
            .collect();
        Some(ReadReplicaCandidates {
            leader: st.registration.leader,
            leader_log_end_offset,
            followers,
        })
    }
}
