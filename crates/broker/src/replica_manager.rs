//! ReplicaManager: the partitions this broker hosts, as leader or follower (Kafka's `ReplicaManager`): the
//! append path (Produce, with the acks=all wait), the read path (Fetch for consumers and followers,
//! ListOffsets), the delayed-fetch and delayed-produce purgatories, the ISR-shrink check, and the replica
//! fetchers that pull from leaders.
//!
//! Roles come from the metadata image through [`ReplicaManager::apply_partition_state`] (standalone mode:
//! [`ReplicaManager::make_leader`], leader = this broker, ISR = replicas = [this broker], epoch 0). The
//! leader-side HighWatermark/ISR rules live in [`crate::partition::ReplicaStates`]; followers pull with
//! [`crate::replica_fetcher`].
//!
//! Invariants:
//! - A Partition's Log is touched only under its mutex, and only for bounded work (an append, an index
//!   lookup); bytes for consumers are sent from a `FileSlice` outside the lock. Lock order: partition state,
//!   then log.
//! - Every append, HighWatermark advance, ISR change and role change wakes the partition's waiters
//!   ([`Partition::wake`]), so a delayed fetch or produce never misses what it waits for.
//! - At most one AlterPartition per partition is in flight (KIP-497); its answer is applied only when the
//!   leader epoch is unchanged.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::{Mutex, RwLock};
use protocol::record::Records;
use storage::{now_ms, LogAppendInfo, LogConfig, LogManager, StorageError};
use tokio::task::JoinHandle;
use uuid::Uuid;

use crate::cluster_link::{ClusterLink, TopicPartition};
pub use crate::partition::{Partition, PartitionState, ReplicaStates};
use crate::partition::{PartitionInner, Role};
use crate::replica_fetcher::ReplicaFetcher;

/// How long a leader waits after a failed AlterPartition before proposing again.
const ALTER_PARTITION_RETRY_BACKOFF: Duration = Duration::from_millis(500);

/// The replica id consumers send in Fetch / ListOffsets (Kafka's `CONSUMER_REPLICA_ID`).
pub const CONSUMER_REPLICA_ID: i32 = -1;

/// Why an append or an acks=all wait failed (Produce error codes).
#[derive(Debug, thiserror::Error)]
pub enum ReplicaError {
    /// This broker does not lead the partition (or stopped leading it while the request waited):
    /// NOT_LEADER_OR_FOLLOWER (6).
    #[error("this broker is not the leader of the partition")]
    NotLeaderOrFollower,
    /// acks=all and the ISR is smaller than `min.insync.replicas`: NOT_ENOUGH_REPLICAS (19).
    #[error("The size of the current ISR {isr} is insufficient to satisfy the min.isr requirement of {min_isr}")]
    NotEnoughReplicas {
        /// Current ISR size.
        isr: usize,
        /// `min.insync.replicas`.
        min_isr: usize,
    },
    /// The append reached the HighWatermark but the ISR was below `min.insync.replicas`:
    /// NOT_ENOUGH_REPLICAS_AFTER_APPEND (20).
    #[error("the ISR shrank to {isr}, below min.insync.replicas {min_isr}, while waiting for replication")]
    NotEnoughReplicasAfterAppend {
        /// ISR size at completion.
        isr: usize,
        /// `min.insync.replicas`.
        min_isr: usize,
    },
    /// The followers did not replicate within the request's timeout: REQUEST_TIMED_OUT (7).
    #[error("replication did not complete within the request timeout")]
    RequestTimedOut,
    /// The storage layer refused the append.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// The result of reading one partition for a Fetch.
#[derive(Debug)]
pub struct PartitionRead {
    /// This broker no longer leads the partition (NOT_LEADER_OR_FOLLOWER; `records` is empty).
    pub not_leader: bool,
    /// Error, if any (then `records` is empty).
    pub error: Option<StorageError>,
    /// HighWatermark at the time of the read.
    pub high_watermark: i64,
    /// LogStartOffset at the time of the read.
    pub log_start_offset: i64,
    /// Whole batches starting with the one that contains the fetch offset.
    pub records: Records,
}

/// What a Fetch asks of one partition.
#[derive(Debug, Clone)]
pub struct FetchPartitionRequest {
    /// The partition.
    pub partition: Arc<Partition>,
    /// First offset wanted.
    pub fetch_offset: i64,
    /// Per-partition byte limit (`partition_max_bytes`).
    pub max_bytes: i32,
}

pub(crate) struct Inner {
    log_manager: Arc<LogManager>,
    local_id: i32,
    link: Arc<dyn ClusterLink>,
    lag_max_ms: i64,
    partitions: RwLock<HashMap<TopicPartition, Arc<Partition>>>,
    fetchers: Mutex<HashMap<i32, ReplicaFetcher>>,
    isr_task: Mutex<Option<JoinHandle<()>>>,
    stopped: AtomicBool,
}

/// Hosts the partitions of this broker.
pub struct ReplicaManager {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for ReplicaManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplicaManager")
            .field("local_id", &self.inner.local_id)
            .field("partitions", &self.inner.partitions.read().len())
            .finish()
    }
}

impl ReplicaManager {
    /// Creates a manager over already-opened logs. `local_broker_id` is this broker's `node.id`;
    /// `replica_lag_time_max_ms` is `replica.lag.time.max.ms` (a follower not caught up this long leaves
    /// the ISR). Background work (fetchers, the ISR check) starts on the current tokio runtime when the
    /// first partition needs it.
    pub fn new(
        log_manager: Arc<LogManager>,
        local_broker_id: i32,
        link: Arc<dyn ClusterLink>,
        replica_lag_time_max_ms: i64,
    ) -> ReplicaManager {
        ReplicaManager {
            inner: Arc::new(Inner {
                log_manager,
                local_id: local_broker_id,
                link,
                lag_max_ms: replica_lag_time_max_ms.max(1),
                partitions: RwLock::new(HashMap::new()),
                fetchers: Mutex::new(HashMap::new()),
                isr_task: Mutex::new(None),
                stopped: AtomicBool::new(false),
            }),
        }
    }

    /// The log manager.
    pub fn log_manager(&self) -> &Arc<LogManager> {
        &self.inner.log_manager
    }

    /// This broker's id.
    pub fn local_broker_id(&self) -> i32 {
        self.inner.local_id
    }

    /// Returns the hosted partition, if any.
    pub fn partition(&self, topic: &str, partition: i32) -> Option<Arc<Partition>> {
        self.inner.partition(topic, partition)
    }

    /// Every hosted partition.
    pub fn partitions(&self) -> Vec<Arc<Partition>> {
        self.inner.partitions.read().values().cloned().collect()
    }

    /// Opens or creates the partition's log and starts hosting it as the only replica (standalone mode:
    /// leader = this broker at LeaderEpoch 0, ISR = replicas = [this broker]). An already hosted partition
    /// only takes the new config.
    pub fn make_leader(
        &self,
        topic: &str,
        partition: i32,
        topic_id: Uuid,
        config: LogConfig,
    ) -> Result<Arc<Partition>, StorageError> {
        if let Some(p) = self.partition(topic, partition) {
            p.log.lock().set_config(config);
            return Ok(p);
        }
        let me = self.inner.local_id;
        let state = PartitionState {
            topic_id,
            leader: me,
            leader_epoch: 0,
            partition_epoch: 0,
            isr: vec![me],
            replicas: vec![me],
        };
        self.apply_partition_state(topic, partition, config, state)
    }

    /// Becomes leader or follower (or just updates ISR/epochs) per `state`; opens/creates the log.
    ///
    /// Idempotent for the same epochs; a state with an older leader epoch than known (or the same leader
    /// epoch and an older partition epoch) is ignored. As leader: records the epoch's start offset in the
    /// leader-epoch cache and starts tracking followers (HW = LEO when the ISR is this broker alone). As
    /// follower: leaves any fetcher it was in and joins the fetcher of the new leader, which first
    /// truncates with OffsetForLeaderEpoch (KIP-101/KIP-279) and then fetches. Waiters of a lost
    /// leadership are woken (they answer NOT_LEADER_OR_FOLLOWER). Errors: the log cannot be opened or
    /// the epoch checkpoint cannot be written.
    pub fn apply_partition_state(
        &self,
        topic: &str,
        partition: i32,
        config: LogConfig,
        state: PartitionState,
    ) -> Result<Arc<Partition>, StorageError> {
        let inner = &self.inner;
        let key = TopicPartition::new(topic, partition);
        let p = match inner.partition(topic, partition) {
            Some(p) => {
                p.log.lock().set_config(config);
                p
            }
            None => {
                let log = inner.log_manager.get_or_create_log(
                    topic,
                    partition,
                    state.topic_id,
                    config,
                )?;
                let p = Arc::new(Partition::new(
                    topic,
                    partition,
                    state.topic_id,
                    log,
                    PartitionInner {
                        registration: PartitionState {
                            topic_id: state.topic_id,
                            leader: -1,
                            leader_epoch: -1,
                            partition_epoch: -1,
                            isr: Vec::new(),
                            replicas: Vec::new(),
                        },
                        role: Role::Follower { leader: -1 },
                        last_follower_epoch: -1,
                    },
                ));
                inner
                    .partitions
                    .write()
                    .entry(key.clone())
                    .or_insert(p)
                    .clone()
            }
        };
        let now = now_ms();
        let me = inner.local_id;
        // None: fetcher membership unchanged; Some(None): fetch from nobody; Some(Some(l)): fetch from l.
        let mut fetch_from: Option<Option<i32>> = None;
        {
            let mut st = p.state.lock();
            let cur = &st.registration;
            let stale = state.leader_epoch < cur.leader_epoch
                || (state.leader_epoch == cur.leader_epoch
                    && state.partition_epoch <= cur.partition_epoch);
            if stale {
                // Older or already applied.
            } else if state.leader_epoch == cur.leader_epoch {
                // Same leadership: ISR / replicas / partition epoch only.
                let PartitionInner {
                    registration, role, ..
                } = &mut *st;
                *registration = state.clone();
                if let Role::Leader(rs) = role {
                    rs.apply_committed(&state, now);
                    let mut log = p.log.lock();
                    let leo = log.log_end_offset();
                    if let Some(hw) = rs.maybe_increment_high_watermark(leo) {
                        log.update_high_watermark(hw);
                    }
                }
            } else if state.leader == me {
                let mut log = p.log.lock();
                let leo = log.log_end_offset();
                if state.leader_epoch > 0 || leo > log.log_start_offset() {
                    log.assign_epoch_start_offset(state.leader_epoch, leo)?;
                }
                let mut rs = ReplicaStates::new(me, &state, leo, log.high_watermark(), now);
                if let Some(hw) = rs.maybe_increment_high_watermark(leo) {
                    log.update_high_watermark(hw);
                }
                fetch_from = Some(None);
                st.role = Role::Leader(rs);
                st.registration = state.clone();
                tracing::info!(topic, partition, leader_epoch = state.leader_epoch, isr = ?state.isr, "became leader");
            } else {
                st.role = Role::Follower {
                    leader: state.leader,
                };
                st.last_follower_epoch = state.leader_epoch;
                st.registration = state.clone();
                fetch_from = Some((state.leader >= 0).then_some(state.leader));
                tracing::info!(
                    topic,
                    partition,
                    leader = state.leader,
                    leader_epoch = state.leader_epoch,
                    "became follower"
                );
            }
        }
        let leads_with_followers = {
            let st = p.state.lock();
            matches!(&st.role, Role::Leader(rs) if rs.replicas().len() > 1)
        };
        p.wake();
        // Fetcher membership follows the role.
        if let Some(target) = fetch_from {
            inner.remove_from_fetchers(&key, target);
            if let Some(leader) = target {
                inner.add_to_fetcher(leader, p.clone(), state.leader_epoch);
            }
        }
        if leads_with_followers {
            inner.ensure_isr_task();
        }
        Ok(p)
    }

    /// Stops hosting (and fetching) a partition; deletes its log when `delete`. Waiters on it are woken
    /// (NOT_LEADER_OR_FOLLOWER). Unknown partitions are a no-op.
    pub fn stop_replica(
        &self,
        topic: &str,
        partition: i32,
        delete: bool,
    ) -> Result<(), StorageError> {
        let key = TopicPartition::new(topic, partition);
        let removed = self.inner.partitions.write().remove(&key);
        self.inner.remove_from_fetchers(&key, None);
        if let Some(p) = removed {
            {
                let mut st = p.state.lock();
                st.role = Role::Follower { leader: -1 };
                st.last_follower_epoch = i32::MAX;
            }
            p.wake();
        }
        if delete {
            self.inner.log_manager.delete_log(topic, partition)?;
        }
        Ok(())
    }

    /// Stops hosting every partition of `topic` and deletes their logs.
    pub fn delete_topic(&self, topic: &str) -> Result<(), StorageError> {
        let keys: Vec<TopicPartition> = self
            .inner
            .partitions
            .read()
            .keys()
            .filter(|k| k.topic == topic)
            .cloned()
            .collect();
        for k in keys {
            self.stop_replica(&k.topic, k.partition, true)?;
        }
        Ok(())
    }

    /// Appends producer batches to the leader log and advances the HighWatermark when the ISR allows
    /// (with ISR = [self], HW = LEO at once). Not the leader → `StorageError::LogOffline` naming the
    /// partition (internal callers such as the group coordinator; Produce uses
    /// [`append_to_leader`](Self::append_to_leader)).
    pub fn append(
        &self,
        partition: &Partition,
        records: Bytes,
    ) -> Result<LogAppendInfo, StorageError> {
        match self.append_to_leader(partition, records, 0) {
            Ok((info, _)) => Ok(info),
            Err(ReplicaError::Storage(e)) => Err(e),
            Err(e) => Err(StorageError::LogOffline(format!(
                "{}-{}: {e}",
                partition.topic, partition.partition
            ))),
        }
    }

    /// The Produce append: checks leadership and, when `min_isr` > 0 (acks=all), that the committed ISR
    /// has at least `min_isr` members; appends with the current leader epoch; advances the HW. Returns the
    /// append info and the leader epoch it was appended in (for
    /// [`wait_for_replication`](Self::wait_for_replication)). Errors: NotLeaderOrFollower,
    /// NotEnoughReplicas, Storage.
    pub fn append_to_leader(
        &self,
        partition: &Partition,
        records: Bytes,
        min_isr: usize,
    ) -> Result<(LogAppendInfo, i32), ReplicaError> {
        let info;
        let epoch;
        {
            let mut st = partition.state.lock();
            let Role::Leader(rs) = &mut st.role else {
                return Err(ReplicaError::NotLeaderOrFollower);
            };
            let isr = rs.isr().len();
            if isr < min_isr {
                return Err(ReplicaError::NotEnoughReplicas { isr, min_isr });
            }
            epoch = rs.leader_epoch();
            let mut log = partition.log.lock();
            info = log.append_as_leader(records, epoch, now_ms())?;
            let leo = log.log_end_offset();
            if let Some(hw) = rs.maybe_increment_high_watermark(leo) {
                log.update_high_watermark(hw);
            }
        }
        partition.wake();
        Ok((info, epoch))
    }

    /// The delayed produce (acks=all): waits until the HighWatermark reaches `required_offset` (the
    /// append's last offset + 1) while this broker leads in `leader_epoch` (or in a later epoch without
    /// having been a follower since, so the append cannot have been truncated), or until `deadline`.
    /// Woken by HW advances, ISR and role changes (no polling). Errors: NotLeaderOrFollower (leadership
    /// lost or moved to another epoch), NotEnoughReplicasAfterAppend (HW reached with the ISR below
    /// `min_isr`), RequestTimedOut.
    pub async fn wait_for_replication(
        &self,
        partition: &Partition,
        required_offset: i64,
        leader_epoch: i32,
        min_isr: usize,
        deadline: Instant,
    ) -> Result<(), ReplicaError> {
        loop {
            let notified = partition.changed.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            {
                let st = partition.state.lock();
                match &st.role {
                    // Still leading, in the append's epoch or without interruption since.
                    Role::Leader(rs)
                        if rs.leader_epoch() == leader_epoch
                            || (rs.leader_epoch() > leader_epoch
                                && st.last_follower_epoch < leader_epoch) =>
                    {
                        let hw = partition.log.lock().high_watermark();
                        if hw >= required_offset {
                            let isr = rs.isr().len();
                            return if isr >= min_isr {
                                Ok(())
                            } else {
                                Err(ReplicaError::NotEnoughReplicasAfterAppend { isr, min_isr })
                            };
                        }
                    }
                    _ => return Err(ReplicaError::NotLeaderOrFollower),
                }
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

    /// Leader side of a follower's Fetch (Kafka's `updateFollowerFetchState`): records that replica
    /// `replica_id` has LEO `fetch_offset`, advances the HW if the ISR allows and proposes adding the
    /// follower to the ISR when it caught up. Returns false when this broker does not lead the partition
    /// or `replica_id` is not one of its replicas (the Fetch then gets NOT_LEADER_OR_FOLLOWER).
    pub fn update_follower_fetch_state(
        &self,
        partition: &Arc<Partition>,
        replica_id: i32,
        fetch_offset: i64,
    ) -> bool {
        let mut advanced = false;
        let proposal;
        {
            let mut st = partition.state.lock();
            let Role::Leader(rs) = &mut st.role else {
                return false;
            };
            let mut log = partition.log.lock();
            let leo = log.log_end_offset();
            if !rs.replicas().contains(&replica_id) || replica_id == self.inner.local_id {
                return false;
            }
            // A fetch offset past our LEO is answered OFFSET_OUT_OF_RANGE by the read; it says nothing
            // about which of our records the follower holds, so it is not recorded (Kafka reads first).
            if fetch_offset > leo {
                return true;
            }
            rs.update_follower_fetch(replica_id, fetch_offset, leo, now_ms());
            if let Some(hw) = rs.maybe_increment_high_watermark(leo) {
                log.update_high_watermark(hw);
                advanced = true;
            }
            drop(log);
            proposal = rs
                .maybe_expand_isr(replica_id)
                .map(|isr| rs.proposal(partition.topic_id, isr));
        }
        if advanced {
            partition.wake();
        }
        if let Some(p) = proposal {
            tracing::info!(topic = %partition.topic, partition = partition.partition, isr = ?p.isr, "expanding ISR");
            self.inner.send_alter_partition(partition.clone(), p);
        }
        true
    }

    /// Reads each partition once, up to `max_bytes` in total (KIP-74: the first batch of the response is
    /// returned whole even when it is larger than the limits). Consumers (`replica_id` < 0) read up to the
    /// HighWatermark, followers up to the LogEndOffset.
    pub fn read(
        &self,
        requests: &[FetchPartitionRequest],
        max_bytes: i32,
        replica_id: i32,
    ) -> Vec<PartitionRead> {
        let mut budget = max_bytes.max(0) as i64;
        let mut first = true;
        requests
            .iter()
            .map(|r| {
                let limit = budget.min(r.max_bytes.max(0) as i64) as usize;
                let leads = r.partition.is_leader();
                let mut log = r.partition.log.lock();
                let hw = log.high_watermark();
                let lso = log.log_start_offset();
                let upto = if replica_id >= 0 {
                    log.log_end_offset()
                } else {
                    hw
                };
                if !leads {
                    return PartitionRead {
                        not_leader: true,
                        error: None,
                        high_watermark: hw,
                        log_start_offset: lso,
                        records: Records::default(),
                    };
                }
                match log.read(r.fetch_offset, limit, upto, first) {
                    Ok(data) => {
                        let n = data.records.len() as i64;
                        if n > 0 {
                            first = false;
                        }
                        budget = (budget - n).max(0);
                        PartitionRead {
                            not_leader: false,
                            error: None,
                            high_watermark: hw,
                            log_start_offset: lso,
                            records: data.records,
                        }
                    }
                    Err(e) => PartitionRead {
                        not_leader: false,
                        error: Some(e),
                        high_watermark: hw,
                        log_start_offset: lso,
                        records: Records::default(),
                    },
                }
            })
            .collect()
    }

    /// The delayed fetch: reads, and while fewer than `min_bytes` are available and `max_wait` has not
    /// passed, waits for a change of any of the partitions (append, HighWatermark advance, role change)
    /// and reads again. Never holds past `max_wait` (pitfall 3); answers as soon as `min_bytes` are there,
    /// or at once on an error or when this broker stopped leading one of the partitions. A follower's fetch (`replica_id` ≥ 0) also answers when a HighWatermark
    /// moved, so followers learn it promptly.
    pub async fn fetch(
        &self,
        requests: &[FetchPartitionRequest],
        max_bytes: i32,
        min_bytes: i32,
        max_wait: Duration,
        replica_id: i32,
    ) -> Vec<PartitionRead> {
        let deadline = Instant::now() + max_wait;
        let mut first_hws: Option<Vec<i64>> = None;
        loop {
            let notified: Vec<_> = requests
                .iter()
                .map(|r| Box::pin(r.partition.changed.notified()))
                .collect();
            let mut notified = notified;
            for n in notified.iter_mut() {
                n.as_mut().enable();
            }
            let reads = self.read(requests, max_bytes, replica_id);
            let bytes: i64 = reads.iter().map(|r| r.records.len() as i64).sum();
            let errored = reads.iter().any(|r| r.error.is_some() || r.not_leader);
            let hws: Vec<i64> = reads.iter().map(|r| r.high_watermark).collect();
            let hw_moved = replica_id >= 0 && first_hws.as_ref().is_some_and(|f| *f != hws);
            if first_hws.is_none() {
                first_hws = Some(hws);
            }
            let now = Instant::now();
            if errored
                || hw_moved
                || bytes >= min_bytes.max(1) as i64
                || now >= deadline
                || requests.is_empty()
            {
                return reads;
            }
            let wait = futures::future::select_all(notified);
            if tokio::time::timeout(deadline - now, wait).await.is_err() {
                return self.read(requests, max_bytes, replica_id);
            }
        }
    }

    /// Stops the fetchers and the ISR check, then flushes and closes every log (clean shutdown).
    pub fn shutdown(&self) -> Result<(), StorageError> {
        self.inner.stopped.store(true, Ordering::Release);
        let fetchers: Vec<ReplicaFetcher> =
            self.inner.fetchers.lock().drain().map(|(_, f)| f).collect();
        for f in fetchers {
            f.stop();
        }
        if let Some(t) = self.inner.isr_task.lock().take() {
            t.abort();
        }
        self.inner.log_manager.shutdown()
    }
}

impl Inner {
    fn partition(&self, topic: &str, partition: i32) -> Option<Arc<Partition>> {
        self.partitions
            .read()
            .get(&TopicPartition::new(topic, partition))
            .cloned()
    }

    /// Removes the partition from every fetcher except the one of `keep_leader`; fetchers left without
    /// partitions stop.
    fn remove_from_fetchers(&self, key: &TopicPartition, keep_leader: Option<i32>) {
        let mut fetchers = self.fetchers.lock();
        let mut empty = Vec::new();
        for (leader, f) in fetchers.iter() {
            if Some(*leader) != keep_leader && f.remove_partition(key) {
                empty.push(*leader);
            }
        }
        for leader in empty {
            if let Some(f) = fetchers.remove(&leader) {
                f.stop();
            }
        }
    }

    fn add_to_fetcher(&self, leader: i32, partition: Arc<Partition>, leader_epoch: i32) {
        if self.stopped.load(Ordering::Acquire) {
            return;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(topic = %partition.topic, partition = partition.partition, "no async runtime: not fetching");
            return;
        };
        let mut fetchers = self.fetchers.lock();
        let f = fetchers.entry(leader).or_insert_with(|| {
            ReplicaFetcher::start(&handle, self.local_id, leader, self.link.clone())
        });
        f.add_partition(partition, leader_epoch);
    }

    fn ensure_isr_task(self: &Arc<Self>) {
        let mut task = self.isr_task.lock();
        if task.is_some() || self.stopped.load(Ordering::Acquire) {
            return;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let weak = Arc::downgrade(self);
        let period = Duration::from_millis((self.lag_max_ms / 2).clamp(10, 5_000) as u64);
        *task = Some(handle.spawn(isr_expiration(weak, period)));
    }

    fn send_alter_partition(&self, partition: Arc<Partition>, proposal: PartitionState) {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            if let Role::Leader(rs) = &mut partition.state.lock().role {
                rs.clear_pending();
            }
            return;
        };
        let fut = self.link.alter_partition(
            partition.topic.clone(),
            partition.partition,
            proposal.clone(),
        );
        handle.spawn(async move {
            let result = fut.await;
            let mut failed = false;
            {
                let mut st = partition.state.lock();
                let PartitionInner {
                    registration, role, ..
                } = &mut *st;
                let Role::Leader(rs) = role else { return };
                if rs.leader_epoch() != proposal.leader_epoch {
                    return;
                }
                match result {
                    Ok(committed) if committed.leader_epoch == proposal.leader_epoch => {
                        rs.apply_committed(&committed, now_ms());
                        if committed.partition_epoch >= registration.partition_epoch {
                            *registration = committed;
                        }
                        let mut log = partition.log.lock();
                        let leo = log.log_end_offset();
                        if let Some(hw) = rs.maybe_increment_high_watermark(leo) {
                            log.update_high_watermark(hw);
                        }
                    }
                    Ok(other) => {
                        tracing::info!(topic = %partition.topic, partition = partition.partition, leader_epoch = other.leader_epoch, "AlterPartition answered with another leader epoch");
                        failed = true;
                    }
                    Err(code) => {
                        tracing::warn!(topic = %partition.topic, partition = partition.partition, error = protocol::error::ErrorCode(code).name(), "AlterPartition failed");
                        failed = true;
                    }
                }
            }
            if failed {
                // Back off before the next proposal (the metadata image usually brings the newer state
                // meanwhile, which clears the proposal by itself); then allow proposals again.
                tokio::time::sleep(ALTER_PARTITION_RETRY_BACKOFF).await;
                if let Role::Leader(rs) = &mut partition.state.lock().role {
                    rs.clear_pending_if(&proposal.isr);
                }
            }
            partition.wake();
        });
    }
}

/// The ISR-shrink check (Kafka's `isr-expiration` task): every `period`, each led partition drops the
/// followers that have not caught up for `replica.lag.time.max.ms`. Ends when the manager is dropped or
/// shut down.
async fn isr_expiration(inner: Weak<Inner>, period: Duration) {
    loop {
        tokio::time::sleep(period).await;
        let Some(inner) = inner.upgrade() else { return };
        if inner.stopped.load(Ordering::Acquire) {
            return;
        }
        let parts: Vec<Arc<Partition>> = inner.partitions.read().values().cloned().collect();
        let now = now_ms();
        for p in parts {
            let proposal = {
                let mut st = p.state.lock();
                let Role::Leader(rs) = &mut st.role else {
                    continue;
                };
                let leo = p.log.lock().log_end_offset();
                rs.maybe_shrink_isr(leo, now, inner.lag_max_ms)
                    .map(|isr| rs.proposal(p.topic_id, isr))
            };
            if let Some(proposal) = proposal {
                tracing::info!(topic = %p.topic, partition = p.partition, isr = ?proposal.isr, "shrinking ISR");
                inner.send_alter_partition(p, proposal);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(n: usize) -> Bytes {
        let mut b = protocol::record::RecordBatchBuilder::new(protocol::record::Compression::None);
        for _ in 0..n {
            b.append(now_ms(), None, Some(Bytes::from_static(b"v")), vec![]);
        }
        b.build().unwrap()
    }

    fn state(leader: i32, leader_epoch: i32, isr: &[i32]) -> PartitionState {
        PartitionState {
            topic_id: Uuid::nil(),
            leader,
            leader_epoch,
            partition_epoch: leader_epoch,
            isr: isr.to_vec(),
            replicas: vec![1, 2],
        }
    }

    /// An acks=all wait survives a leader-epoch bump that keeps this broker leader, but not a period as
    /// follower (the append may have been truncated); a follower fetch completes it.
    #[tokio::test]
    async fn acks_all_wait_across_leader_epochs() {
        let dir = tempfile::tempdir().unwrap();
        let lm =
            Arc::new(LogManager::open(dir.path(), |_| LogConfig::default(), now_ms()).unwrap());
        let rm = Arc::new(ReplicaManager::new(
            lm,
            1,
            Arc::new(crate::cluster_link::StandaloneLink),
            30_000,
        ));
        let cfg = LogConfig::default();
        let p = rm
            .apply_partition_state("t", 0, cfg.clone(), state(1, 1, &[1, 2]))
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        let (info, epoch) = rm.append_to_leader(&p, batch(2), 2).unwrap();
        assert_eq!((info.last_offset, epoch), (1, 1));
        // Nobody fetched: the HW waits for broker 2.
        assert!(matches!(
            rm.wait_for_replication(&p, 2, 1, 2, Instant::now()).await,
            Err(ReplicaError::RequestTimedOut)
        ));
        let waiter = {
            let (rm, p) = (rm.clone(), p.clone());
            tokio::spawn(async move { rm.wait_for_replication(&p, 2, 1, 2, deadline).await })
        };
        // Same leader, new epoch: still valid; the follower's fetch at 2 completes it.
        rm.apply_partition_state("t", 0, cfg.clone(), state(1, 2, &[1, 2]))
            .unwrap();
        assert!(rm.update_follower_fetch_state(&p, 2, 2));
        assert!(waiter.await.unwrap().is_ok());
        assert_eq!(p.offsets().1, 2);

        // An append in epoch 2, then a follower period (epoch 3), then leader again (epoch 4): refused.
        let (_, epoch) = rm.append_to_leader(&p, batch(1), 2).unwrap();
        assert_eq!(epoch, 2);
        let waiter = {
            let (rm, p) = (rm.clone(), p.clone());
            tokio::spawn(async move { rm.wait_for_replication(&p, 3, 2, 2, deadline).await })
        };
        rm.apply_partition_state("t", 0, cfg.clone(), state(2, 3, &[2, 1]))
            .unwrap();
        assert!(matches!(
            waiter.await.unwrap(),
            Err(ReplicaError::NotLeaderOrFollower)
        ));
        assert!(matches!(
            rm.append_to_leader(&p, batch(1), 0),
            Err(ReplicaError::NotLeaderOrFollower)
        ));
        rm.apply_partition_state("t", 0, cfg.clone(), state(1, 4, &[1, 2]))
            .unwrap();
        assert!(matches!(
            rm.wait_for_replication(&p, 3, 2, 1, deadline).await,
            Err(ReplicaError::NotLeaderOrFollower)
        ));
        // Stale states are ignored; min.insync.replicas is checked before appending.
        rm.apply_partition_state("t", 0, cfg.clone(), state(2, 3, &[2]))
            .unwrap();
        assert!(p.is_leader());
        assert!(matches!(
            rm.append_to_leader(&p, batch(1), 3),
            Err(ReplicaError::NotEnoughReplicas { isr: 2, min_isr: 3 })
        ));
        rm.shutdown().unwrap();
    }
}
