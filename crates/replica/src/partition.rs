//! One hosted partition (Kafka's `Partition`): its log, its role (leader with the follower bookkeeping of
//! [`ReplicaStates`], or follower) and the wake-ups for delayed produces and fetches.
//!
//! Callers use verbs: [`Partition::append_as_leader`], [`Partition::append_txn_marker`] (transactions:
//! `partition/txn.rs`), [`Partition::read`] (`partition/read.rs`; also a follower's for a consumer, KIP-392),
//! [`Partition::follower_fetch`],
//! [`Partition::wait_for_replication`] on the leader side; [`Partition::append_as_follower`],
//! [`Partition::truncate_by_epoch`], [`Partition::truncate_out_of_range`] on the follower side (each applies
//! only while [`Partition::is_following`] the fetcher's leader in its epoch); [`Partition::apply_partition_state`]
//! for role changes. The HighWatermark/ISR rules themselves are the pure [`ReplicaStates`].
//!
//! Sources: Kafka's `Partition` (`makeLeader`, `makeFollower`, `appendRecordsToLeader`, `fetchRecords`,
//! `updateFollowerFetchState`, `maybeShrinkIsr`); KIP-101 and KIP-279 (truncation by leader epoch), KIP-497
//! (AlterPartition), KIP-320 (FENCED/UNKNOWN_LEADER_EPOCH), KIP-595 (diverging epoch).
//!
//! Lock order: the state mutex before the log mutex. Both are private to this file, so the order is kept
//! here only; no verb awaits or calls out while holding either (AlterPartition proposals are returned to
//! the caller, which sends them).
//!
//! Invariants, asserted (a failure is a bug, not an error path):
//! - the applied registration's leader epoch never goes backwards;
//! - HighWatermark ≤ LogEndOffset (asserted by the log on every update; the follower clamps the leader's
//!   HW to its own LEO explicitly, as Kafka does);
//! - appended offsets are contiguous from the LEO (asserted by the log).

use metadata::ControllerError;
use std::sync::Arc;
use tokio::time::Instant;

use bytes::Bytes;
use parking_lot::Mutex;
use storage::VerificationGuard;
use storage::{
    AppendOrigin, FetchDataInfo, Log, LogAppendInfo, LogConfig, LogManager, StorageError,
};
use tokio::sync::Notify;
use types::{BrokerId, LeaderEpoch, Offset, PartitionEpoch, ProducerEpoch, ProducerId};
use uuid::Uuid;

pub use crate::partition_results::{
    ActiveProducer, DivergingEpoch, FetchSource, IsolationLevel, LogOffsets, LogStats,
    PartitionRead, ReplicaError,
};
pub use crate::replica_states::{truncation_offset, FollowerState, PartitionState, ReplicaStates};

/// What the follower's fetcher needs to build its Fetch for a partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FetchPosition {
    /// The fetch offset: this replica's LogEndOffset.
    pub log_end_offset: Offset,
    /// This replica's LogStartOffset.
    pub log_start_offset: Offset,
    /// The latest epoch in this replica's epoch cache, [`LeaderEpoch::NONE`] when empty.
    pub last_fetched_epoch: LeaderEpoch,
}

/// How the role changed in [`Partition::apply_partition_state`]: tells the ReplicaManager which fetcher
/// (if any) the partition belongs to now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RoleChange {
    /// Same role (an older, repeated, or same-leadership registration).
    Unchanged,
    /// This replica now leads: it fetches from nobody.
    Leader,
    /// This replica now follows `leader` (None: no leader known; nothing is fetched).
    Follower {
        /// The leader to fetch from.
        leader: Option<BrokerId>,
    },
}

/// This replica's role for a partition.
#[derive(Debug, Clone)]
enum Role {
    /// Leading: the follower bookkeeping.
    Leader(ReplicaStates),
    /// Following broker `leader` (-1: no leader known; nothing is fetched).
    Follower {
        /// Leader broker id, -1 for none.
        leader: BrokerId,
    },
}

/// The mutable part of a partition, guarded by `Partition::state`.
#[derive(Debug, Clone)]
struct PartitionInner {
    /// The registration last applied.
    registration: PartitionState,
    /// Leader or follower.
    role: Role,
    /// The leader epoch of the latest switch to follower (i32::MAX once stopped; -1 never): an acks=all
    /// append made in epoch E is still valid under a later leader epoch only if this is below E (this
    /// replica led without interruption, so its log was not truncated).
    last_follower_epoch: LeaderEpoch,
}

impl PartitionInner {
    /// True once [`Partition::stop`] ran: the replica is no longer hosted and serves nobody.
    fn is_stopped(&self) -> bool {
        self.last_follower_epoch == LeaderEpoch(i32::MAX)
    }

    /// True while following `leader` in `epoch` (the fetcher's guard).
    fn follows(&self, leader: BrokerId, epoch: LeaderEpoch) -> bool {
        matches!(self.role, Role::Follower { leader: l } if l == leader)
            && self.registration.leader_epoch == epoch
    }
}

/// One hosted partition.
#[derive(Debug)]
pub struct Partition {
    /// Topic name.
    pub topic: String,
    /// Partition index.
    pub partition: i32,
    topic_id: Uuid,
    /// The partition's log (shared with the LogManager for flushes, retention and the cleaner). Lock after
    /// `state`.
    log: Arc<Mutex<Log>>,
    /// Role, epochs and follower bookkeeping. Lock before `log`.
    state: Mutex<PartitionInner>,
    /// Notified after every append, HighWatermark advance, ISR change and role change: wakes delayed
    /// fetches and produces.
    changed: Notify,
    /// Checkpointed after a follower truncation lowers the recovery point (Kafka's `LogManager.truncateTo`):
    /// a restart must not trust unflushed appends made after it. None in unit tests.
    log_manager: Option<Arc<LogManager>>,
}

impl Partition {
    /// A partition over `log` that neither leads nor follows yet (no registration applied: epochs -1).
    pub(crate) fn new(
        topic: &str,
        partition: i32,
        topic_id: Uuid,
        log: Arc<Mutex<Log>>,
    ) -> Partition {
        Partition {
            topic: topic.to_string(),
            partition,
            topic_id,
            log,
            log_manager: None,
            state: Mutex::new(PartitionInner {
                registration: PartitionState {
                    topic_id,
                    leader: BrokerId::NONE,
                    leader_epoch: LeaderEpoch::NONE,
                    partition_epoch: PartitionEpoch::NONE,
                    isr: Vec::new(),
                    replicas: Vec::new(),
                },
                role: Role::Follower {
                    leader: BrokerId::NONE,
                },
                last_follower_epoch: LeaderEpoch::NONE,
            }),
            changed: Notify::new(),
        }
    }

    /// Topic id (KIP-516).
    pub fn topic_id(&self) -> Uuid {
        self.topic_id
    }

    /// Replaces the log's config (topic config change, or a new registration).
    pub fn set_config(&self, config: LogConfig) {
        self.log.lock().set_config(config);
    }

    /// `min.insync.replicas` from the log's config (at least 1).
    pub fn min_insync_replicas(&self) -> usize {
        self.log.lock().config().min_insync_replicas.max(1)
    }

    /// LogStartOffset, HighWatermark and LogEndOffset, read together.
    pub fn offsets(&self) -> LogOffsets {
        let log = self.log.lock();
        LogOffsets {
            log_start_offset: log.log_start_offset(),
            high_watermark: log.high_watermark(),
            log_end_offset: log.log_end_offset(),
        }
    }

    /// Size, segments and offsets of the log (the metrics endpoint's view).
    pub fn log_stats(&self) -> LogStats {
        let log = self.log.lock();
        LogStats {
            size_bytes: log.size_in_bytes(),
            segments: log.number_of_segments(),
            log_start_offset: log.log_start_offset(),
            high_watermark: log.high_watermark(),
            log_end_offset: log.log_end_offset(),
            last_stable_offset: log.last_stable_offset(),
        }
    }

    /// The HighWatermark.
    pub fn high_watermark(&self) -> Offset {
        self.log.lock().high_watermark()
    }

    /// The LogEndOffset.
    pub fn log_end_offset(&self) -> Offset {
        self.log.lock().log_end_offset()
    }

    /// The LogStartOffset.
    pub fn log_start_offset(&self) -> Offset {
        self.log.lock().log_start_offset()
    }

    /// Total bytes of the log's segments.
    pub fn size_in_bytes(&self) -> u64 {
        self.log.lock().size_in_bytes()
    }

    /// The current leader epoch (from the last applied registration).
    pub fn leader_epoch(&self) -> LeaderEpoch {
        self.state.lock().registration.leader_epoch
    }

    /// True when this replica leads the partition.
    pub fn is_leader(&self) -> bool {
        matches!(self.state.lock().role, Role::Leader(_))
    }

    /// True while this replica leads and has other replicas (the ISR-shrink check has work).
    pub fn leads_with_followers(&self) -> bool {
        matches!(&self.state.lock().role, Role::Leader(rs) if rs.replicas().len() > 1)
    }

    /// The last applied registration (leader, epochs, ISR, replicas). While leading, the ISR is the
    /// committed one including AlterPartition answers.
    pub fn registration(&self) -> PartitionState {
        let st = self.state.lock();
        let mut r = st.registration.clone();
        if let Role::Leader(rs) = &st.role {
            r.isr = rs.isr().to_vec();
            r.partition_epoch = rs.partition_epoch();
        }
        r
    }

    /// KIP-320: Err(UnknownLeaderEpoch) when `current_leader_epoch` is newer than ours,
    /// Err(FencedLeaderEpoch) when older; -1 ([`LeaderEpoch::NONE`]) skips the check.
    pub fn check_leader_epoch(
        &self,
        current_leader_epoch: LeaderEpoch,
    ) -> Result<(), ReplicaError> {
        let current = self.leader_epoch();
        let request = current_leader_epoch;
        if request.get() < 0 || request == current {
            Ok(())
        } else if request > current {
            Err(ReplicaError::UnknownLeaderEpoch { request, current })
        } else {
            Err(ReplicaError::FencedLeaderEpoch { request, current })
        }
    }

    /// OffsetForLeaderEpoch (Kafka's `endOffsetForEpoch`): (epoch, end offset) of the largest epoch ≤
    /// `leader_epoch` in the epoch cache; (-1, -1) when unknown.
    pub fn end_offset_for_epoch(&self, leader_epoch: LeaderEpoch) -> (LeaderEpoch, Offset) {
        self.log.lock().end_offset_for_epoch(leader_epoch)
    }

    /// The latest epoch in the epoch cache (None: empty).
    pub fn latest_epoch(&self) -> Option<LeaderEpoch> {
        self.log.lock().latest_epoch()
    }

    /// ListOffsets by timestamp: (offset, timestamp) of the first record at or after `timestamp` (or the
    /// storage sentinels, see `Log::fetch_offset_by_timestamp`); None when there is none.
    pub fn fetch_offset_by_timestamp(
        &self,
        timestamp: i64,
    ) -> Result<Option<(Offset, i64)>, StorageError> {
        self.log.lock().fetch_offset_by_timestamp(timestamp)
    }

    /// DeleteRecords: advances the LogStartOffset to `offset` (≤ HighWatermark, else OffsetOutOfRange).
    /// Returns the new LogStartOffset.
    pub fn delete_records_before(&self, offset: Offset) -> Result<Offset, StorageError> {
        self.log.lock().delete_records_before(offset)
    }

    /// Reads whole batches from `start_offset` regardless of the role (loading a coordinator partition),
    /// at most `max_bytes` (the first batch whole when `min_one_batch`), below `max_offset_exclusive`.
    pub fn read_records(
        &self,
        start_offset: Offset,
        max_bytes: usize,
        max_offset_exclusive: Offset,
        min_one_batch: bool,
    ) -> Result<FetchDataInfo, StorageError> {
        self.log
            .lock()
            .read(start_offset, max_bytes, max_offset_exclusive, min_one_batch)
    }

    /// Becomes leader or follower (or just updates ISR/epochs) per `state` (Kafka's `makeLeader` /
    /// `makeFollower`). `local_id` is this broker; `monotonic_ms` is `Clock::monotonic_ms` (ISR lag is
    /// measured on it).
    ///
    /// Idempotent for the same epochs; a state with an older leader epoch than known (or the same leader
    /// epoch and an older partition epoch) is ignored. As leader: records the epoch's start offset in the
    /// leader-epoch cache and starts tracking followers (HW = LEO when the ISR is this broker alone). As
    /// follower: the caller moves the partition to the new leader's fetcher. Waiters are woken (a lost
    /// leadership answers NOT_LEADER_OR_FOLLOWER). Errors: the epoch checkpoint cannot be written.
    pub(crate) fn apply_partition_state(
        &self,
        local_id: BrokerId,
        state: &PartitionState,
        monotonic_ms: i64,
    ) -> Result<RoleChange, StorageError> {
        let change = {
            let mut st = self.state.lock();
            let previous_epoch = st.registration.leader_epoch;
            let change = self.apply_locked(&mut st, local_id, state, monotonic_ms)?;
            assert!(
                st.registration.leader_epoch >= previous_epoch,
                "{}-{}: leader epoch went back from {previous_epoch} to {}",
                self.topic,
                self.partition,
                st.registration.leader_epoch
            );
            change
        };
        self.wake();
        Ok(change)
    }

    fn apply_locked(
        &self,
        st: &mut PartitionInner,
        local_id: BrokerId,
        state: &PartitionState,
        monotonic_ms: i64,
    ) -> Result<RoleChange, StorageError> {
        let cur = &st.registration;
        if state.leader_epoch < cur.leader_epoch
            || (state.leader_epoch == cur.leader_epoch
                && state.partition_epoch <= cur.partition_epoch)
        {
            // Older or already applied.
            return Ok(RoleChange::Unchanged);
        }
        if state.leader_epoch == cur.leader_epoch {
            // Same leadership: ISR / replicas / partition epoch only.
            if matches!(st.role, Role::Leader(_)) {
                // The controller's own ISR changes (a fenced follower removed) count as the leader's do.
                count_isr_change(st.registration.isr.len(), state.isr.len());
            }
            st.registration = state.clone();
            if let Role::Leader(rs) = &mut st.role {
                rs.apply_committed(state, monotonic_ms);
                let mut log = self.log.lock();
                let leo = log.log_end_offset();
                raise_high_watermark(rs, &mut log, leo);
            }
            return Ok(RoleChange::Unchanged);
        }
        if state.leader == local_id {
            let mut log = self.log.lock();
            let leo = log.log_end_offset();
            if state.leader_epoch > LeaderEpoch(0) || leo > log.log_start_offset() {
                log.assign_epoch_start_offset(state.leader_epoch, leo)?;
            }
            let mut rs =
                ReplicaStates::new(local_id, state, leo, log.high_watermark(), monotonic_ms);
            raise_high_watermark(&mut rs, &mut log, leo);
            st.role = Role::Leader(rs);
            st.registration = state.clone();
            tracing::info!(topic = %self.topic, partition = self.partition, leader_epoch = %state.leader_epoch, isr = ?state.isr, "became leader");
            return Ok(RoleChange::Leader);
        }
        st.role = Role::Follower {
            leader: state.leader,
        };
        st.last_follower_epoch = state.leader_epoch;
        st.registration = state.clone();
        tracing::info!(topic = %self.topic, partition = self.partition, leader = %state.leader, leader_epoch = %state.leader_epoch, "became follower");
        Ok(RoleChange::Follower {
            leader: (!state.leader.is_none()).then_some(state.leader),
        })
    }

    /// Stops the replica (it is no longer hosted): follows nobody, and no acks=all append made before
    /// stays valid. Waiters are woken (NOT_LEADER_OR_FOLLOWER).
    pub(crate) fn stop(&self) {
        {
            let mut st = self.state.lock();
            st.role = Role::Follower {
                leader: BrokerId::NONE,
            };
            st.last_follower_epoch = LeaderEpoch(i32::MAX);
        }
        self.wake();
    }

    /// Has truncations that lower the recovery point checkpointed through `log_manager` (the ReplicaManager
    /// sets it; unit tests leave it out).
    pub(crate) fn with_log_manager(mut self, log_manager: Arc<LogManager>) -> Partition {
        self.log_manager = Some(log_manager);
        self
    }

    /// Wakes delayed produces and fetches on this partition.
    pub(crate) fn wake(&self) {
        self.changed.notify_waiters();
    }

    /// The notification a delayed fetch or produce waits on (see `changed`).
    pub fn changed(&self) -> &Notify {
        &self.changed
    }
}

/// Leader side.
impl Partition {
    /// The Produce append (Kafka's `appendRecordsToLeader`): checks leadership and, when `min_isr` > 0
    /// (acks=all), that the committed ISR has at least `min_isr` members; appends with the current leader
    /// epoch; advances the HW. Returns the append info and the leader epoch it was appended in (for
    /// [`wait_for_replication`](Self::wait_for_replication)). Errors: NotLeaderOrFollower,
    /// NotEnoughReplicas, Storage. A client's append: [`append_as_leader_with_origin`] with
    /// [`AppendOrigin::Client`].
    ///
    /// [`append_as_leader_with_origin`]: Self::append_as_leader_with_origin
    pub fn append_as_leader(
        &self,
        records: Bytes,
        min_isr: usize,
        now_ms: i64,
    ) -> Result<(LogAppendInfo, LeaderEpoch), ReplicaError> {
        self.append_as_leader_with_origin(records, AppendOrigin::Client, min_isr, now_ms)
    }

    /// [`append_as_leader`](Self::append_as_leader) for `origin` (Kafka's `AppendOrigin`): only a
    /// coordinator's append may hold control batches (see `storage::Log::append_as_leader_with_origin`).
    pub fn append_as_leader_with_origin(
        &self,
        records: Bytes,
        origin: AppendOrigin,
        min_isr: usize,
        now_ms: i64,
    ) -> Result<(LogAppendInfo, LeaderEpoch), ReplicaError> {
        let records = self.recompress_unlocked(records)?;
        self.append_with(min_isr, now_ms, |log, epoch| {
            log.append_as_leader_with_origin(records, epoch, origin, now_ms)
        })
    }

    /// A client's append under transaction verification (KIP-890): as
    /// [`append_as_leader`](Self::append_as_leader), with `guard` from
    /// [`maybe_start_transaction_verification`](Self::maybe_start_transaction_verification) (see
    /// `storage::Log::append_as_leader_verified`; a transactional batch opening a transaction without the
    /// producer's current guard → Storage(InvalidTxnState)).
    pub fn append_as_leader_verified(
        &self,
        records: Bytes,
        guard: VerificationGuard,
        min_isr: usize,
        now_ms: i64,
    ) -> Result<(LogAppendInfo, LeaderEpoch), ReplicaError> {
        let records = self.recompress_unlocked(records)?;
        self.append_with(min_isr, now_ms, |log, epoch| {
            log.append_as_leader_verified(records, epoch, guard, now_ms)
        })
    }

    /// A topic with a `compression.type` other than `producer` stores its batches in that codec: they are
    /// rebuilt here, before the partition's locks are taken (`storage::recompress`; decompressing and
    /// compressing a MiB takes milliseconds, which Fetches of the partition would otherwise wait out). The
    /// append then keeps them as they are; if the config changed in between, it recompresses again.
    fn recompress_unlocked(&self, records: Bytes) -> Result<Bytes, ReplicaError> {
        let (target, max) = {
            let log = self.log.lock();
            let config = log.config();
            (config.compression_type, config.max_decompressed_bytes)
        };
        match target {
            Some(target) => Ok(storage::recompress(records, target, max)?),
            None => Ok(records),
        }
    }

    /// The guard to take before asking the transaction coordinator whether this partition is in
    /// `producer_id`'s transaction (`storage::Log::maybe_start_transaction_verification`): `None` when a
    /// transaction of the producer at `producer_epoch` is ongoing here. Errors: NotLeaderOrFollower.
    pub fn maybe_start_transaction_verification(
        &self,
        producer_id: ProducerId,
        producer_epoch: ProducerEpoch,
        now_ms: i64,
    ) -> Result<Option<VerificationGuard>, ReplicaError> {
        let st = self.state.lock();
        if !matches!(st.role, Role::Leader(_)) {
            return Err(ReplicaError::NotLeaderOrFollower);
        }
        let mut log = self.log.lock();
        Ok(log.maybe_start_transaction_verification(producer_id, producer_epoch, now_ms))
    }

    /// Every leader append: under the state then the log lock, NotLeaderOrFollower unless leading,
    /// NotEnoughReplicas when the committed ISR is below `min_isr` (0: no check); `append` runs with the
    /// current leader epoch; the HW advances if the ISR allows; waiters are woken.
    ///
    /// When the append reaches `flush.messages`, the fsync runs after both locks are released and off the
    /// runtime's worker ([`run_flush`](Self::run_flush)), and the append is answered only once it is done,
    /// as Kafka's; this append's records count toward the HW only once flushed (Kafka flushes before the
    /// leader's HW moves), so a consumer never reads what a crash could still take back.
    fn append_with(
        &self,
        min_isr: usize,
        now_ms: i64,
        append: impl FnOnce(&mut Log, LeaderEpoch) -> Result<LogAppendInfo, StorageError>,
    ) -> Result<(LogAppendInfo, LeaderEpoch), ReplicaError> {
        let (info, epoch, flush) = {
            let mut st = self.state.lock();
            let Role::Leader(rs) = &mut st.role else {
                return Err(ReplicaError::NotLeaderOrFollower);
            };
            let isr = rs.isr().len();
            if isr < min_isr {
                return Err(ReplicaError::NotEnoughReplicas { isr, min_isr });
            }
            let epoch = rs.leader_epoch();
            let mut log = self.log.lock();
            let info = append(&mut log, epoch)?;
            let flush = log.prepare_due_flush(now_ms)?;
            if flush.is_none() {
                let leo = log.log_end_offset();
                raise_high_watermark(rs, &mut log, leo);
            }
            (info, epoch, flush)
        };
        if let Some(job) = flush {
            self.run_flush(job)?;
            let mut st = self.state.lock();
            if let Role::Leader(rs) = &mut st.role {
                let mut log = self.log.lock();
                let flushed = log.recovery_point().min(log.log_end_offset());
                raise_high_watermark(rs, &mut log, flushed);
            }
        }
        self.wake();
        Ok((info, epoch))
    }

    /// Runs a [`FlushJob`] prepared under the log's lock without holding it, then completes it under the
    /// lock (a failed fsync takes the log offline). On a multi-threaded runtime the fsync runs in
    /// `block_in_place`, so the worker's other tasks (other connections' requests) move to another thread
    /// instead of waiting for the disk.
    pub(crate) fn run_flush(&self, job: storage::FlushJob) -> Result<(), StorageError> {
        let multi_thread = tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        let ran = if multi_thread {
            tokio::task::block_in_place(|| job.run())
        } else {
            job.run()
        };
        self.log.lock().complete_flush(job, ran)
    }

    /// The delayed produce (acks=all): waits until the HighWatermark reaches `required_offset` (the
    /// append's last offset + 1) while this replica leads in `leader_epoch` (or in a later epoch without
    /// having been a follower since, so the append cannot have been truncated), or until `deadline`.
    /// Woken by HW advances, ISR and role changes (no polling). Errors: NotLeaderOrFollower (leadership
    /// lost or moved to another epoch), NotEnoughReplicasAfterAppend (HW reached with the ISR below
    /// `min_isr`), RequestTimedOut.
    pub async fn wait_for_replication(
        &self,
        required_offset: Offset,
        leader_epoch: LeaderEpoch,
        min_isr: usize,
        deadline: Instant,
    ) -> Result<(), ReplicaError> {
        loop {
            let notified = self.changed.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if let Some(done) = self.replication_done(required_offset, leader_epoch, min_isr) {
                return done;
            }
            let now = Instant::now();
            if now >= deadline
                || tokio::time::timeout(deadline - now, notified)
                    .await
                    .is_err()
            {
                return Err(ReplicaError::RequestTimedOut);
            }
        }
    }

    /// None while an acks=all append still waits for the HighWatermark; see `wait_for_replication`.
    fn replication_done(
        &self,
        required_offset: Offset,
        leader_epoch: LeaderEpoch,
        min_isr: usize,
    ) -> Option<Result<(), ReplicaError>> {
        let st = self.state.lock();
        match &st.role {
            // Still leading, in the append's epoch or without interruption since.
            Role::Leader(rs)
                if rs.leader_epoch() == leader_epoch
                    || (rs.leader_epoch() > leader_epoch
                        && st.last_follower_epoch < leader_epoch) =>
            {
                let hw = self.log.lock().high_watermark();
                (hw >= required_offset).then(|| {
                    let isr = rs.isr().len();
                    if isr >= min_isr {
                        Ok(())
                    } else {
                        Err(ReplicaError::NotEnoughReplicasAfterAppend { isr, min_isr })
                    }
                })
            }
            _ => Some(Err(ReplicaError::NotLeaderOrFollower)),
        }
    }

    /// Leader side of a follower's Fetch: NotLeaderOrFollower unless this replica leads and `replica_id` is
    /// one of its followers; `Ok(Some(d))` when the follower's `last_fetched_epoch` diverges from our epoch
    /// cache (KIP-595, Kafka's `validateFetchOffsetAndMaybeGetDivergingEpoch`: its end offset in our cache
    /// is below `fetch_offset`, or our cache knows only an older epoch; -1 is not checked) — nothing is
    /// recorded then. Otherwise records the follower's LEO `fetch_offset` and its `log_start_offset` (Kafka's
    /// `updateFollowerFetchState`), advances the HW if the ISR allows and returns `Ok(None)` plus the ISR
    /// expansion to send with AlterPartition when the follower caught up. `monotonic_ms`: the fetch's time on
    /// `Clock::monotonic_ms`, what ISR lag is measured on.
    pub fn follower_fetch(
        &self,
        replica_id: BrokerId,
        last_fetched_epoch: LeaderEpoch,
        (fetch_offset, log_start_offset): (Offset, Offset),
        monotonic_ms: i64,
    ) -> Result<(Option<DivergingEpoch>, Option<PartitionState>), ReplicaError> {
        let (advanced, proposal) = {
            let mut st = self.state.lock();
            let Role::Leader(rs) = &mut st.role else {
                return Err(ReplicaError::NotLeaderOrFollower);
            };
            let mut log = self.log.lock();
            if last_fetched_epoch.get() >= 0 {
                let (epoch, end_offset) = log.end_offset_for_epoch(last_fetched_epoch);
                if epoch.get() >= 0
                    && end_offset.get() >= 0
                    && (end_offset < fetch_offset || epoch < last_fetched_epoch)
                {
                    let d = DivergingEpoch {
                        epoch,
                        end_offset,
                        high_watermark: log.high_watermark(),
                        log_start_offset: log.log_start_offset(),
                    };
                    return Ok((Some(d), None));
                }
            }
            if rs.follower(replica_id).is_none() {
                return Err(ReplicaError::NotLeaderOrFollower);
            }
            let leo = log.log_end_offset();
            // A fetch offset past our LEO is answered OFFSET_OUT_OF_RANGE by the read; it says nothing
            // about which of our records the follower holds, so it is not recorded (Kafka reads first).
            if fetch_offset > leo {
                return Ok((None, None));
            }
            rs.update_follower_fetch(replica_id, fetch_offset, leo, monotonic_ms);
            rs.update_follower_log_start_offset(replica_id, log_start_offset);
            let advanced = raise_high_watermark(rs, &mut log, leo);
            drop(log);
            let proposal = rs
                .maybe_expand_isr(replica_id)
                .map(|isr| rs.proposal(self.topic_id, isr));
            (advanced, proposal)
        };
        if advanced {
            self.wake();
        }
        Ok((None, proposal))
    }

    /// The ISR-shrink check of one partition (Kafka's `maybeShrinkIsr`): while leading, the AlterPartition
    /// proposal that drops the followers not caught up for `lag_max_ms`, if any (`monotonic_ms` on
    /// `Clock::monotonic_ms`, so a wall-clock step neither delays nor hastens it).
    pub(crate) fn maybe_shrink_isr(
        &self,
        monotonic_ms: i64,
        lag_max_ms: i64,
    ) -> Option<PartitionState> {
        let mut st = self.state.lock();
        let Role::Leader(rs) = &mut st.role else {
            return None;
        };
        let leo = self.log.lock().log_end_offset();
        rs.maybe_shrink_isr(leo, monotonic_ms, lag_max_ms)
            .map(|isr| rs.proposal(self.topic_id, isr))
    }

    /// Applies the answer to an AlterPartition `proposal` when this replica still leads in the proposal's
    /// epoch: a committed state of the same epoch replaces the ISR (and may advance the HW). Returns false
    /// when the answer failed (an error code or another leader epoch): the caller backs off and then calls
    /// [`clear_pending_isr`](Self::clear_pending_isr).
    pub(crate) fn complete_alter_partition(
        &self,
        proposal: &PartitionState,
        result: Result<PartitionState, ControllerError>,
        monotonic_ms: i64,
    ) -> bool {
        let mut st = self.state.lock();
        let PartitionInner {
            registration, role, ..
        } = &mut *st;
        let Role::Leader(rs) = role else { return true };
        if rs.leader_epoch() != proposal.leader_epoch {
            return true;
        }
        match result {
            Ok(committed) if committed.leader_epoch == proposal.leader_epoch => {
                count_isr_change(registration.isr.len(), committed.isr.len());
                rs.apply_committed(&committed, monotonic_ms);
                if committed.partition_epoch >= registration.partition_epoch {
                    *registration = committed;
                }
                let mut log = self.log.lock();
                let leo = log.log_end_offset();
                raise_high_watermark(rs, &mut log, leo);
                true
            }
            Ok(other) => {
                tracing::info!(topic = %self.topic, partition = self.partition, leader_epoch = %other.leader_epoch, "AlterPartition answered with another leader epoch");
                false
            }
            Err(e) => {
                tracing::warn!(topic = %self.topic, partition = self.partition, error = e.code.name(), message = %e.message, "AlterPartition failed");
                false
            }
        }
    }

    /// Forgets the in-flight AlterPartition proposal (all of it with None, else only when it is still
    /// `proposed_isr`), so the next check may propose again.
    pub(crate) fn clear_pending_isr(&self, proposed_isr: Option<&[BrokerId]>) {
        if let Role::Leader(rs) = &mut self.state.lock().role {
            match proposed_isr {
                Some(isr) => rs.clear_pending_if(isr),
                None => rs.clear_pending(),
            }
        }
    }
}

/// Kafka's `IsrShrinksPerSec`/`IsrExpandsPerSec` (`kafka.server:type=ReplicaManager`): a committed
/// AlterPartition of this leader that made its ISR smaller or larger.
fn count_isr_change(before: usize, after: usize) {
    let name = match after.cmp(&before) {
        std::cmp::Ordering::Less => "kafka_server_replicamanager_isrshrinks_total",
        std::cmp::Ordering::Greater => "kafka_server_replicamanager_isrexpands_total",
        std::cmp::Ordering::Equal => return,
    };
    metrics::counter!(name).increment(1);
}

mod follower;
mod read;
mod txn;

pub use read::ReadReplicaCandidates;

/// Recomputes the leader's HighWatermark with `leader_leo` as its own LogEndOffset (the LEO, or less when
/// only that much is flushed) and lays it into the log. Returns true when it advanced.
fn raise_high_watermark(rs: &mut ReplicaStates, log: &mut Log, leader_leo: Offset) -> bool {
    match rs.maybe_increment_high_watermark(leader_leo) {
        Some(hw) => {
            log.update_high_watermark(hw);
            true
        }
        None => false,
    }
}

#[cfg(test)]
#[path = "partition_tests.rs"]
mod tests;
