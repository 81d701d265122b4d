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
//! - A Partition's Log is touched only through [`Partition`]'s verbs, under its mutex, and only for bounded
//!   work (an append, an index lookup); bytes for consumers are sent from a `FileSlice` outside the lock.
//!   The lock order (partition state, then log) is kept inside `partition.rs`.
//! - Every append, HighWatermark advance, ISR change and role change wakes the partition's waiters, so a
//!   delayed fetch or produce never misses what it waits for.
//! - At most one AlterPartition per partition is in flight (KIP-497); its answer is applied only when the
//!   leader epoch is unchanged.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use bytes::Bytes;
use parking_lot::{Mutex, RwLock};
use storage::{EndTransactionMarker, LogAppendInfo, LogConfig, LogManager, StorageError};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use types::{
    BrokerId, Clock, LeaderEpoch, Offset, PartitionEpoch, ProducerEpoch, ProducerId, SystemClock,
};
use uuid::Uuid;

use crate::cluster_link::{ClusterLink, TopicPartition};
use crate::partition::RoleChange;
pub use crate::partition::{
    ActiveProducer, DivergingEpoch, FetchSource, IsolationLevel, Partition, PartitionRead,
    PartitionState, ReadReplicaCandidates, ReplicaError, ReplicaStates,
};
use crate::replica_fetcher::{FetcherSeams, ReplicaFetcher};
use crate::replication_quota::{ReplicationQuota, Unthrottled};
use crate::transport::{Connector, TcpConnector};

/// How long a leader waits after a failed AlterPartition before proposing again.
const ALTER_PARTITION_RETRY_BACKOFF: Duration = Duration::from_millis(500);

/// The replica id consumers send in Fetch / ListOffsets (Kafka's `CONSUMER_REPLICA_ID`).
pub const CONSUMER_REPLICA_ID: i32 = -1;

/// What a Fetch asks of one partition.
#[derive(Debug, Clone)]
pub struct FetchPartitionRequest {
    /// The partition.
    pub partition: Arc<Partition>,
    /// First offset wanted.
    pub fetch_offset: Offset,
    /// Per-partition byte limit (`partition_max_bytes`).
    pub max_bytes: i32,
}

pub(crate) struct Inner {
    log_manager: Arc<LogManager>,
    local_id: BrokerId,
    link: Arc<dyn ClusterLink>,
    /// The fetchers' connector and the clock every replication decision reads (ISR lag, append times).
    seams: FetcherSeams,
    lag_max_ms: i64,
    /// Hosted partitions by topic, then partition index (looked up by `&str`, no key allocation).
    partitions: RwLock<HashMap<String, HashMap<i32, Arc<Partition>>>>,
    fetchers: Mutex<HashMap<BrokerId, ReplicaFetcher>>,
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
            .field(
                "partitions",
                &self
                    .inner
                    .partitions
                    .read()
                    .values()
                    .map(HashMap::len)
                    .sum::<usize>(),
            )
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
        local_broker_id: BrokerId,
        link: Arc<dyn ClusterLink>,
        replica_lag_time_max_ms: i64,
    ) -> ReplicaManager {
        ReplicaManager::with_seams(
            log_manager,
            local_broker_id,
            link,
            replica_lag_time_max_ms,
            Arc::new(SystemClock),
            Arc::new(TcpConnector),
        )
    }

    /// [`new`](Self::new) with the I/O seams a simulation replaces: `clock` is read for every append time
    /// and ISR-lag decision (ms since the Unix epoch), `connector` opens the fetchers' connections to
    /// leaders. Deadlines and backoffs use tokio's clock, which a simulation pauses and advances.
    pub fn with_seams(
        log_manager: Arc<LogManager>,
        local_broker_id: BrokerId,
        link: Arc<dyn ClusterLink>,
        replica_lag_time_max_ms: i64,
        clock: Arc<dyn Clock>,
        connector: Arc<dyn Connector>,
    ) -> ReplicaManager {
        ReplicaManager {
            inner: Arc::new(Inner {
                log_manager,
                local_id: local_broker_id,
                link,
                seams: FetcherSeams {
                    connector,
                    clock,
                    quota: Arc::new(Unthrottled),
                },
                lag_max_ms: replica_lag_time_max_ms.max(1),
                partitions: RwLock::new(HashMap::new()),
                fetchers: Mutex::new(HashMap::new()),
                isr_task: Mutex::new(None),
                stopped: AtomicBool::new(false),
            }),
        }
    }

    /// This manager with `quota` as its fetchers' follower-side replication quota (KIP-73; default:
    /// [`Unthrottled`]). Only before the manager is shared or has started a fetcher.
    pub fn with_follower_quota(mut self, quota: Arc<dyn ReplicationQuota>) -> ReplicaManager {
        let inner = Arc::get_mut(&mut self.inner).expect("with_follower_quota before sharing");
        inner.seams.quota = quota;
        self
    }

    /// The log manager.
    pub fn log_manager(&self) -> &Arc<LogManager> {
        &self.inner.log_manager
    }

    /// The connector the fetchers open connections to other brokers with (the inter-broker listener's
    /// TLS/SASL); other inter-broker clients (the transaction coordinator's markers) share it.
    pub fn connector(&self) -> Arc<dyn Connector> {
        self.inner.seams.connector.clone()
    }

    /// The clock appends and ISR lag are measured on (the fetch sessions' idle times too).
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.inner.seams.clock
    }

    /// This broker's id.
    pub fn local_broker_id(&self) -> BrokerId {
        self.inner.local_id
    }

    /// Returns the hosted partition, if any.
    pub fn partition(&self, topic: &str, partition: i32) -> Option<Arc<Partition>> {
        self.inner.partition(topic, partition)
    }

    /// Every hosted partition.
    pub fn partitions(&self) -> Vec<Arc<Partition>> {
        self.inner.all_partitions()
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
            p.set_config(config);
            return Ok(p);
        }
        let me = self.inner.local_id;
        let state = PartitionState {
            topic_id,
            leader: me,
            leader_epoch: LeaderEpoch(0),
            partition_epoch: PartitionEpoch(0),
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
        let p = match inner.partition(topic, partition) {
            Some(p) => {
                p.set_config(config);
                p
            }
            None => {
                let log = inner.log_manager.get_or_create_log(
                    topic,
                    partition,
                    state.topic_id,
                    config,
                )?;
                let p = Arc::new(
                    Partition::new(topic, partition, state.topic_id, log)
                        .with_log_manager(inner.log_manager.clone()),
                );
                let mut partitions = inner.partitions.write();
                let by_index = partitions.entry(topic.to_string()).or_default();
                by_index.entry(partition).or_insert(p).clone()
            }
        };
        let change = p.apply_partition_state(inner.local_id, &state, inner.monotonic_ms())?;
        // Fetcher membership follows the role.
        let key = TopicPartition::new(topic, partition);
        match change {
            RoleChange::Unchanged => {}
            RoleChange::Leader => inner.remove_from_fetchers(&key, None),
            RoleChange::Follower { leader } => {
                inner.remove_from_fetchers(&key, leader);
                if let Some(leader) = leader {
                    inner.add_to_fetcher(leader, p.clone(), state.leader_epoch);
                }
            }
        }
        if p.leads_with_followers() {
            inner.ensure_isr_task();
        }
        Ok(p)
    }

    /// After the data dir at `dir_index` (into `log.dirs`) came back online
    /// ([`LogManager::try_recover_dir`] reopened every log of it with recovery): every followed partition
    /// of that dir rejoins its leader's fetcher from the start, so it first truncates by epoch
    /// (OffsetForLeaderEpoch, KIP-101/KIP-279) what recovery kept past the leader's log, then catches up;
    /// the leader adds it back to the ISR once it has (AlterPartition).
    pub fn log_dir_recovered(&self, dir_index: usize) {
        let me = self.inner.local_id;
        let in_dir: std::collections::HashSet<types::TopicPartition> = self
            .log_manager()
            .partitions_in_dir(dir_index)
            .into_iter()
            .collect();
        for p in self.inner.all_partitions() {
            if !in_dir.contains(&types::TopicPartition::new(&p.topic, p.partition)) {
                continue;
            }
            let reg = p.registration();
            if reg.leader != me
                && reg.leader != BrokerId::NONE
                && p.is_following(reg.leader, reg.leader_epoch)
            {
                self.inner
                    .add_to_fetcher(reg.leader, p.clone(), reg.leader_epoch);
            }
        }
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
        let removed = {
            let mut partitions = self.inner.partitions.write();
            let by_index = partitions.get_mut(topic);
            let removed = by_index.and_then(|m| m.remove(&partition));
            if partitions.get(topic).is_some_and(HashMap::is_empty) {
                partitions.remove(topic);
            }
            removed
        };
        self.inner.remove_from_fetchers(&key, None);
        if let Some(p) = removed {
            p.stop();
        }
        if delete {
            self.inner.log_manager.delete_log(topic, partition)?;
        }
        Ok(())
    }

    /// Stops hosting every partition of `topic` and deletes their logs.
    pub fn delete_topic(&self, topic: &str) -> Result<(), StorageError> {
        let indexes: Vec<i32> = self
            .inner
            .partitions
            .read()
            .get(topic)
            .map(|m| m.keys().copied().collect())
            .unwrap_or_default();
        for p in indexes {
            self.stop_replica(topic, p, true)?;
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

    /// The Produce append: see [`Partition::append_as_leader`] (`min_isr` > 0 for acks=all). Returns the
    /// append info and the leader epoch it was appended in (for
    /// [`wait_for_replication`](Self::wait_for_replication)).
    pub fn append_to_leader(
        &self,
        partition: &Partition,
        records: Bytes,
        min_isr: usize,
    ) -> Result<(LogAppendInfo, LeaderEpoch), ReplicaError> {
        partition.append_as_leader(records, min_isr, self.inner.now_ms())
    }

    /// A client's Produce append under transaction verification (KIP-890): see
    /// [`Partition::append_as_leader_verified`].
    pub fn append_to_leader_verified(
        &self,
        partition: &Partition,
        records: Bytes,
        guard: storage::VerificationGuard,
        min_isr: usize,
    ) -> Result<(LogAppendInfo, LeaderEpoch), ReplicaError> {
        partition.append_as_leader_verified(records, guard, min_isr, self.inner.now_ms())
    }

    /// The guard to take before verifying `partition` in a transaction: see
    /// [`Partition::maybe_start_transaction_verification`].
    pub fn maybe_start_transaction_verification(
        &self,
        partition: &Partition,
        producer_id: ProducerId,
        producer_epoch: ProducerEpoch,
    ) -> Result<Option<storage::VerificationGuard>, ReplicaError> {
        let now_ms = self.inner.now_ms();
        partition.maybe_start_transaction_verification(producer_id, producer_epoch, now_ms)
    }

    /// WriteTxnMarkers' append of one end-transaction marker as leader, timestamped with this broker's
    /// clock: see [`Partition::append_txn_marker`] (`min_isr` > 0 for acks=all).
    pub fn append_txn_marker(
        &self,
        partition: &Partition,
        producer_id: ProducerId,
        producer_epoch: ProducerEpoch,
        marker: EndTransactionMarker,
        min_isr: usize,
    ) -> Result<(LogAppendInfo, LeaderEpoch), ReplicaError> {
        let now_ms = self.inner.now_ms();
        partition.append_txn_marker(producer_id, producer_epoch, marker, min_isr, now_ms)
    }

    /// The delayed produce (acks=all): see [`Partition::wait_for_replication`].
    pub async fn wait_for_replication(
        &self,
        partition: &Partition,
        required_offset: Offset,
        leader_epoch: LeaderEpoch,
        min_isr: usize,
        deadline: Instant,
    ) -> Result<(), ReplicaError> {
        partition
            .wait_for_replication(required_offset, leader_epoch, min_isr, deadline)
            .await
    }

    /// Leader side of a follower's Fetch (see [`Partition::follower_fetch`]; the follower's fetch offset and
    /// LogStartOffset): the diverging epoch to answer
    /// instead of records, if any; an ISR expansion it proposes is sent with AlterPartition. Errors:
    /// NotLeaderOrFollower (this broker does not lead, or `replica_id` is not a follower).
    pub fn follower_fetch(
        &self,
        partition: &Arc<Partition>,
        replica_id: BrokerId,
        last_fetched_epoch: LeaderEpoch,
        (fetch_offset, log_start_offset): (Offset, Offset),
    ) -> Result<Option<DivergingEpoch>, ReplicaError> {
        let (diverging, proposal) = partition.follower_fetch(
            replica_id,
            last_fetched_epoch,
            (fetch_offset, log_start_offset),
            self.inner.monotonic_ms(),
        )?;
        if let Some(p) = proposal {
            tracing::info!(topic = %partition.topic, partition = partition.partition, isr = ?p.isr, "expanding ISR");
            self.inner.send_alter_partition(partition.clone(), p);
        }
        Ok(diverging)
    }

    /// Reads each partition once, up to `max_bytes` in total (KIP-74: the first batch of the response is
    /// returned whole even when it is larger than the limits). Consumers read up to the HighWatermark
    /// (ReadUncommitted) or the LastStableOffset (ReadCommitted), followers up to the LogEndOffset (see
    /// [`Partition::read`]: where `source` needs the leader, a partition this broker does not lead reads
    /// `NotLeader`).
    pub fn read(
        &self,
        requests: &[FetchPartitionRequest],
        max_bytes: i32,
        source: FetchSource,
    ) -> Vec<PartitionRead> {
        let mut budget = max_bytes.max(0) as i64;
        let mut first = true;
        requests
            .iter()
            .map(|r| {
                let limit = budget.min(r.max_bytes.max(0) as i64) as usize;
                let read = (r.partition).read(r.fetch_offset, limit, source, first);
                let n = read.bytes() as i64;
                if n > 0 {
                    first = false;
                }
                budget = (budget - n).max(0);
                read
            })
            .collect()
    }

    /// The delayed fetch: reads, and while fewer than `min_bytes` are available and `max_wait` has not
    /// passed, waits for a change of any of the partitions (append, HighWatermark advance, role change)
    /// and reads again. Never holds past `max_wait` (pitfall 3); answers as soon as `min_bytes` are there,
    /// or at once on an error or when this broker stopped leading one of the partitions. A follower's fetch also answers when a HighWatermark
    /// moved, so followers learn it promptly. A `read_committed` consumer's reads stop at the
    /// LastStableOffset, which moves only with the HighWatermark or an append (a marker), both of which
    /// wake the wait.
    pub async fn fetch(
        &self,
        requests: &[FetchPartitionRequest],
        max_bytes: i32,
        min_bytes: i32,
        max_wait: Duration,
        source: FetchSource,
    ) -> Vec<PartitionRead> {
        let deadline = Instant::now() + max_wait;
        let mut first_hws: Option<Vec<Offset>> = None;
        loop {
            let notified: Vec<_> = requests
                .iter()
                .map(|r| Box::pin(r.partition.changed().notified()))
                .collect();
            let mut notified = notified;
            for n in notified.iter_mut() {
                n.as_mut().enable();
            }
            let reads = self.read(requests, max_bytes, source);
            let bytes: i64 = reads.iter().map(|r| r.bytes() as i64).sum();
            let errored = reads.iter().any(PartitionRead::is_error);
            let hws: Vec<Offset> = reads.iter().map(PartitionRead::high_watermark).collect();
            let hw_moved = source.is_follower() && first_hws.as_ref().is_some_and(|f| *f != hws);
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
                return self.read(requests, max_bytes, source);
            }
        }
    }

    /// KIP-392: the leader's candidates for a consumer's preferred read replica at `fetch_offset` (see
    /// [`Partition::read_replica_candidates`], timed on this manager's monotonic clock); `None` unless
    /// this broker leads the partition.
    pub fn read_replica_candidates(
        &self,
        partition: &Partition,
        fetch_offset: Offset,
    ) -> Option<ReadReplicaCandidates> {
        partition.read_replica_candidates(fetch_offset, self.inner.monotonic_ms())
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
    /// Now, from the injected clock (ms since the Unix epoch).
    fn now_ms(&self) -> i64 {
        self.seams.clock.now_ms()
    }

    /// Now on the injected clock's monotonic time (ms, arbitrary origin): what ISR lag is measured in, so
    /// a step of the wall clock neither keeps a dead follower in the ISR nor drops live ones.
    fn monotonic_ms(&self) -> i64 {
        self.seams.clock.monotonic_ms()
    }

    fn partition(&self, topic: &str, partition: i32) -> Option<Arc<Partition>> {
        self.partitions.read().get(topic)?.get(&partition).cloned()
    }

    fn all_partitions(&self) -> Vec<Arc<Partition>> {
        let partitions = self.partitions.read();
        partitions
            .values()
            .flat_map(|m| m.values().cloned())
            .collect()
    }

    /// Removes the partition from every fetcher except the one of `keep_leader`; fetchers left without
    /// partitions stop.
    fn remove_from_fetchers(&self, key: &TopicPartition, keep_leader: Option<BrokerId>) {
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

    fn add_to_fetcher(
        &self,
        leader: BrokerId,
        partition: Arc<Partition>,
        leader_epoch: LeaderEpoch,
    ) {
        if self.stopped.load(Ordering::Acquire) {
            return;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(topic = %partition.topic, partition = partition.partition, "no async runtime: not fetching");
            return;
        };
        let mut fetchers = self.fetchers.lock();
        let f = fetchers.entry(leader).or_insert_with(|| {
            ReplicaFetcher::start(
                &handle,
                self.local_id,
                leader,
                self.link.clone(),
                &self.seams,
            )
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
            partition.clear_pending_isr(None);
            return;
        };
        let clock = self.seams.clock.clone();
        let fut = self.link.alter_partition(
            partition.topic.clone(),
            partition.partition,
            proposal.clone(),
        );
        handle.spawn(async move {
            let result = fut.await;
            if !partition.complete_alter_partition(&proposal, result, clock.monotonic_ms()) {
                // Back off before the next proposal (the metadata image usually brings the newer state
                // meanwhile, which clears the proposal by itself); then allow proposals again.
                tokio::time::sleep(ALTER_PARTITION_RETRY_BACKOFF).await;
                partition.clear_pending_isr(Some(&proposal.isr));
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
        let now = inner.monotonic_ms();
        for p in inner.all_partitions() {
            if let Some(proposal) = p.maybe_shrink_isr(now, inner.lag_max_ms) {
                tracing::info!(topic = %p.topic, partition = p.partition, isr = ?proposal.isr, "shrinking ISR");
                inner.send_alter_partition(p, proposal);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storage::now_ms;

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
            leader: BrokerId(leader),
            leader_epoch: LeaderEpoch(leader_epoch),
            partition_epoch: PartitionEpoch(leader_epoch),
            isr: isr.iter().copied().map(BrokerId).collect(),
            replicas: vec![BrokerId(1), BrokerId(2)],
        }
    }

    /// An acks=all wait survives a leader-epoch bump that keeps this broker leader, but not a period as
    /// follower (the append may have been truncated); a follower fetch completes it.
    #[tokio::test]
    async fn acks_all_wait_across_leader_epochs() {
        let dir = tempfile::tempdir().unwrap();
        let lm = Arc::new(
            LogManager::open(
                dir.path(),
                |_| LogConfig::default(),
                Arc::new(types::SystemClock),
            )
            .unwrap(),
        );
        let rm = Arc::new(ReplicaManager::new(
            lm,
            BrokerId(1),
            Arc::new(crate::cluster_link::StandaloneLink),
            30_000,
        ));
        let cfg = LogConfig::default();
        let p = rm
            .apply_partition_state("t", 0, cfg.clone(), state(1, 1, &[1, 2]))
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        let (info, epoch) = rm.append_to_leader(&p, batch(2), 2).unwrap();
        assert_eq!((info.last_offset, epoch), (Offset(1), LeaderEpoch(1)));
        // Nobody fetched: the HW waits for broker 2.
        assert!(matches!(
            rm.wait_for_replication(&p, Offset(2), LeaderEpoch(1), 2, Instant::now())
                .await,
            Err(ReplicaError::RequestTimedOut)
        ));
        let waiter = {
            let (rm, p) = (rm.clone(), p.clone());
            tokio::spawn(async move {
                rm.wait_for_replication(&p, Offset(2), LeaderEpoch(1), 2, deadline)
                    .await
            })
        };
        // Same leader, new epoch: still valid; the follower's fetch at 2 completes it.
        rm.apply_partition_state("t", 0, cfg.clone(), state(1, 2, &[1, 2]))
            .unwrap();
        assert!(matches!(
            rm.follower_fetch(&p, BrokerId(2), LeaderEpoch(-1), (Offset(2), Offset(0))),
            Ok(None)
        ));
        assert!(waiter.await.unwrap().is_ok());
        assert_eq!(p.high_watermark(), Offset(2));

        // An append in epoch 2, then a follower period (epoch 3), then leader again (epoch 4): refused.
        let (_, epoch) = rm.append_to_leader(&p, batch(1), 2).unwrap();
        assert_eq!(epoch, LeaderEpoch(2));
        let waiter = {
            let (rm, p) = (rm.clone(), p.clone());
            tokio::spawn(async move {
                rm.wait_for_replication(&p, Offset(3), LeaderEpoch(2), 2, deadline)
                    .await
            })
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
            rm.wait_for_replication(&p, Offset(3), LeaderEpoch(2), 1, deadline)
                .await,
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
