//! The runtime around the pure [`coordinator::GroupCoordinator`]: locking, parked JoinGroup/SyncGroup
//! requests, the timer task, the internal `__consumer_offsets` topic, and loading it.
//!
//! Source: Kafka's `GroupCoordinatorService` / `CoordinatorRuntime` (classic groups only), KIP-345, KIP-394.
//!
//! - **`__consumer_offsets`** (`offsets.topic.num.partitions` partitions, default 50; replication factor 1
//!   standalone, `offsets.topic.replication.factor` capped by the live brokers in cluster mode;
//!   `cleanup.policy=compact`, `segment.bytes=104857600` as Kafka's `offsets.topic.segment.bytes`) is created
//!   lazily, as Kafka does, by the first FindCoordinator for a group or the first group request that writes.
//!   The log cleaner compacts it like any compacted topic (latest record per key; tombstones kept for
//!   `delete.retention.ms`); loading tolerates the offset gaps and emptied batches that compaction leaves.
//! - **Records**: each effect [`Effect::Persist`] of one coordinator call is encoded with
//!   [`coordinator::encode_record`] and appended, one uncompressed batch per `__consumer_offsets` partition
//!   ([`coordinator::partition_for`]), through [`ReplicaManager::append_to_leader`] (appended to the leader
//!   log; on a single node that is also the HighWatermark). Persisting happens while the coordinator mutex is
//!   held, so records of one group reach the log in the order the coordinator produced them. An append refused
//!   because this broker no longer leads the partition answers NOT_COORDINATOR (16); other write failures
//!   COORDINATOR_NOT_AVAILABLE (15) (Kafka's mapping of write errors in the coordinator runtime). Commits can
//!   additionally wait for the ISR ([`GroupCoordinatorService::with_group_replicated`], Kafka's acks=all).
//!   A failed write is not rolled back in memory (Kafka reverts to the last committed snapshot).
//! - **Ordering rule**: every `Persist` of a call is written before any response that call produced is sent.
//! - **Standalone loading**: [`GroupCoordinatorService::load`] (run on the blocking pool after the listener is
//!   up) replays every partition of `__consumer_offsets` from its LogStartOffset to its HighWatermark into the
//!   coordinator and then calls `loaded(now)`. Records that do not decode (other group types, garbage) are
//!   skipped with a warning. Until loading completes every group request gets COORDINATOR_LOAD_IN_PROGRESS
//!   (14).
//! - **Cluster mode** (Kafka's `onElection` / `onResignation`): this broker coordinates exactly the groups
//!   whose `__consumer_offsets` partition it leads. [`GroupCoordinatorService::on_partition_leadership`]
//!   loads one partition when leadership arrives (replayed on the blocking pool from LogStartOffset to the
//!   LogEndOffset into a fresh coordinator, then merged with
//!   [`coordinator::GroupCoordinator::load_groups`]; its groups get COORDINATOR_LOAD_IN_PROGRESS meanwhile)
//!   and unloads its groups when leadership leaves ([`coordinator::GroupCoordinator::unload_groups`]; parked
//!   JoinGroup/SyncGroup requests are answered NOT_COORDINATOR). Groups of partitions not led here get
//!   NOT_COORDINATOR ([`GroupCoordinatorService::check_coordinator`]). Ownership is re-checked under the
//!   coordinator lock by every call that names a group, so a request racing a resignation never recreates an
//!   unloaded group.
//! - **Timers**: [`GroupCoordinatorService::run_timers`] sleeps until `next_deadline()` and calls `tick`; every
//!   call that may move the deadline wakes it through a [`Notify`].
//! - **Time**: wall-clock milliseconds, forced monotone (the coordinator requires non-decreasing `now_ms`).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use coordinator::{
    decode_record, encode_record, partition_for, Effect, GroupConfig, GroupCoordinator,
    GroupRecord, JoinGroupRequest, JoinResult, RequestId, SyncGroupRequest, SyncResult,
};
use parking_lot::Mutex;
use protocol::error::ErrorCode;
use protocol::record::{batches, Compression, RecordBatchBuilder, Records};
use storage::now_ms;
use tokio::sync::{oneshot, watch, Notify};

use crate::config::BrokerConfig;
use crate::metadata::MetadataStore;
use crate::partition::Partition;
use crate::replica_manager::{ReplicaError, ReplicaManager};
use crate::topics::TopicManager;

/// Name of the internal topic holding committed offsets and group metadata.
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";

/// `offsets.topic.segment.bytes` default (100 MiB).
const OFFSETS_TOPIC_SEGMENT_BYTES: &str = "104857600";

/// `offsets.commit.timeout.ms` default: how long a commit waits for the ISR (ms).
const OFFSETS_COMMIT_TIMEOUT_MS: u64 = 5_000;

/// Bytes read per step while loading a partition.
const LOAD_READ_BYTES: usize = 4 * 1024 * 1024;

/// A request-level failure of the group coordinator, as a Kafka error code: COORDINATOR_LOAD_IN_PROGRESS (14)
/// while loading, NOT_COORDINATOR (16) for a group coordinated elsewhere (cluster mode),
/// COORDINATOR_NOT_AVAILABLE (15) when `__consumer_offsets` cannot be created or written.
pub type CoordinatorError = ErrorCode;

/// Whether the records of one call were written: `Ok` when every record reached the leader log (or there were
/// none), else NOT_COORDINATOR (16, leadership lost) or COORDINATOR_NOT_AVAILABLE (15).
pub type Written = Result<(), CoordinatorError>;

enum Pending {
    Join(oneshot::Sender<JoinResult>),
    Sync(oneshot::Sender<SyncResult>),
}

/// A parked request with its answer, held back until the group records written with it are replicated.
enum Reply {
    Join(oneshot::Sender<JoinResult>, JoinResult),
    Sync(oneshot::Sender<SyncResult>, SyncResult),
}

impl Reply {
    fn send(self) {
        match self {
            Reply::Join(tx, r) => {
                let _ = tx.send(r);
            }
            Reply::Sync(tx, r) => {
                let _ = tx.send(r);
            }
        }
    }

    /// Sends `code` instead (the records could not be replicated).
    fn fail(self, code: CoordinatorError) {
        match self {
            Reply::Join(tx, r) => {
                let _ = tx.send(JoinResult::error(&r.member_id, code.0));
            }
            Reply::Sync(tx, _) => {
                let _ = tx.send(SyncResult::error(code.0));
            }
        }
    }
}

/// One batch appended to a `__consumer_offsets` leader: the partition, the offset the HighWatermark must reach
/// (last offset + 1) and the LeaderEpoch it was appended in.
type Appended = (Arc<Partition>, i64, i32);

/// Cluster mode: this broker's role for one `__consumer_offsets` partition it leads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Coordination {
    /// Being replayed by the load with this id; its groups get COORDINATOR_LOAD_IN_PROGRESS.
    Loading(u64),
    /// Replayed; its groups are served here.
    Loaded,
}

struct State {
    coordinator: GroupCoordinator,
    /// Parked JoinGroup/SyncGroup requests with their group id.
    pending: HashMap<RequestId, (String, Pending)>,
    next_request: RequestId,
    last_now: i64,
}

impl State {
    /// Wall-clock now, never below the previous value handed to the coordinator.
    fn now(&mut self) -> i64 {
        self.last_now = self.last_now.max(now_ms());
        self.last_now
    }

    fn park(&mut self, group: &str, p: Pending) -> RequestId {
        let id = self.next_request;
        self.next_request += 1;
        self.pending.insert(id, (group.to_string(), p));
        id
    }
}

/// The broker's group coordinator service (one per broker). Standalone it owns every group; in cluster mode
/// the groups of the `__consumer_offsets` partitions this broker leads.
pub struct GroupCoordinatorService {
    config: BrokerConfig,
    metadata: Arc<MetadataStore>,
    replica_manager: Arc<ReplicaManager>,
    topics: TopicManager,
    /// Partition count of `__consumer_offsets` used for placement: the existing topic's, else the config's.
    num_partitions: AtomicI32,
    state: Mutex<State>,
    loaded: AtomicBool,
    timer: Notify,
    create_lock: Mutex<()>,
    /// Cluster mode: `__consumer_offsets` is replicated and each group's coordinator is the leader of its
    /// partition.
    cluster: Option<Arc<crate::cluster::BrokerCluster>>,
    /// Coordinate only the partitions given by [`GroupCoordinatorService::on_partition_leadership`] (true with
    /// a cluster, or after [`GroupCoordinatorService::with_cluster_mode`]).
    cluster_mode: bool,
    /// Cluster mode: the `__consumer_offsets` partitions led here. Lock order: `state` before `partitions`.
    partitions: Mutex<HashMap<i32, Coordination>>,
    /// Id source of partition loads (a load whose id is no longer current is discarded).
    load_ids: AtomicU64,
}

impl std::fmt::Debug for GroupCoordinatorService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCoordinatorService")
            .field("loaded", &self.loaded.load(Ordering::Relaxed))
            .field(
                "num_partitions",
                &self.num_partitions.load(Ordering::Relaxed),
            )
            .field("cluster_mode", &self.cluster_mode)
            .finish()
    }
}

/// The coordinator settings taken from the broker config (`group.*`, `offsets.*`).
pub fn group_config(config: &BrokerConfig) -> GroupConfig {
    let d = GroupConfig::default();
    let int = |key: &str, default: i64| -> i64 {
        config
            .value(key)
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(default)
    };
    GroupConfig {
        group_min_session_timeout_ms: config.group_min_session_timeout_ms,
        group_max_session_timeout_ms: config.group_max_session_timeout_ms,
        group_initial_rebalance_delay_ms: config
            .group_initial_rebalance_delay_ms
            .clamp(0, i64::from(i32::MAX)) as i32,
        offsets_retention_ms: config.offsets_retention_ms,
        offsets_topic_num_partitions: config.offsets_topic_num_partitions.max(1),
        group_max_size: int("group.max.size", i64::from(d.group_max_size))
            .clamp(1, i64::from(i32::MAX)) as i32,
        offset_metadata_max_bytes: int(
            "offset.metadata.max.bytes",
            d.offset_metadata_max_bytes as i64,
        )
        .max(0) as usize,
        offsets_retention_check_interval_ms: int(
            "offsets.retention.check.interval.ms",
            d.offsets_retention_check_interval_ms,
        )
        .max(1),
        ..d
    }
}

/// Maps a failed `__consumer_offsets` append to the coordinator error a client sees (Kafka's coordinator
/// runtime): leadership lost → NOT_COORDINATOR; anything else (storage, ISR, timeout) →
/// COORDINATOR_NOT_AVAILABLE.
/// Waits until each append reached the HighWatermark in its LeaderEpoch with at least `min_isr` in-sync
/// replicas. Errors: leadership lost → NOT_COORDINATOR; ISR too small or `deadline` passed →
/// COORDINATOR_NOT_AVAILABLE.
async fn wait_appended(
    rm: &ReplicaManager,
    appended: &[Appended],
    min_isr: usize,
    deadline: std::time::Instant,
) -> Written {
    for (partition, required, epoch) in appended {
        if let Err(e) = rm
            .wait_for_replication(partition, *required, *epoch, min_isr, deadline)
            .await
        {
            tracing::warn!(partition = partition.partition, error = %e,
                "group records not replicated");
            return Err(write_error(&e));
        }
    }
    Ok(())
}

fn write_error(e: &ReplicaError) -> CoordinatorError {
    match e {
        ReplicaError::NotLeaderOrFollower => ErrorCode::NOT_COORDINATOR,
        // Kafka's coordinator answers records that can never fit with UNKNOWN_SERVER_ERROR (not a retriable
        // code, so clients do not retry a commit that cannot succeed).
        ReplicaError::Storage(
            storage::StorageError::MessageTooLarge { .. }
            | storage::StorageError::RecordListTooLarge { .. },
        ) => ErrorCode::UNKNOWN_SERVER_ERROR,
        _ => ErrorCode::COORDINATOR_NOT_AVAILABLE,
    }
}

/// How far a partition is replayed.
#[derive(Clone, Copy, Debug)]
enum ReplayTo {
    /// Up to the HighWatermark (standalone startup).
    HighWatermark,
    /// Up to the LogEndOffset (a new leader: everything in its log is its own history).
    LogEnd,
}

impl GroupCoordinatorService {
    /// A service with an empty, not yet loaded coordinator. With `cluster`, it runs in cluster mode.
    pub fn new(
        config: BrokerConfig,
        metadata: Arc<MetadataStore>,
        replica_manager: Arc<ReplicaManager>,
        cluster: Option<Arc<crate::cluster::BrokerCluster>>,
    ) -> GroupCoordinatorService {
        let topics = TopicManager::new(config.clone(), metadata.clone(), replica_manager.clone())
            .with_cluster(cluster.clone());
        let n = metadata
            .topic(OFFSETS_TOPIC)
            .map_or(config.offsets_topic_num_partitions.max(1), |t| t.partitions);
        GroupCoordinatorService {
            state: Mutex::new(State {
                coordinator: GroupCoordinator::new(group_config(&config)),
                pending: HashMap::new(),
                next_request: 1,
                last_now: 0,
            }),
            config,
            metadata,
            replica_manager,
            topics,
            num_partitions: AtomicI32::new(n),
            loaded: AtomicBool::new(false),
            timer: Notify::new(),
            cluster_mode: cluster.is_some(),
            cluster,
            create_lock: Mutex::new(()),
            partitions: Mutex::new(HashMap::new()),
            load_ids: AtomicU64::new(0),
        }
    }

    /// Cluster-mode coordination without a [`crate::cluster::BrokerCluster`]: the service coordinates only
    /// the `__consumer_offsets` partitions given by [`GroupCoordinatorService::on_partition_leadership`]
    /// (tests, and brokers whose leadership comes from elsewhere).
    pub fn with_cluster_mode(mut self) -> GroupCoordinatorService {
        self.cluster_mode = true;
        self
    }

    /// True in cluster mode (the service coordinates only partitions it leads).
    pub fn is_cluster_mode(&self) -> bool {
        self.cluster_mode
    }

    /// True once [`GroupCoordinatorService::load`] has finished (always in cluster mode, where partitions
    /// load one by one).
    pub fn is_loaded(&self) -> bool {
        self.cluster_mode || self.loaded.load(Ordering::Acquire)
    }

    /// Fails with COORDINATOR_LOAD_IN_PROGRESS until loading has finished.
    pub fn check_loaded(&self) -> Result<(), CoordinatorError> {
        if self.is_loaded() {
            Ok(())
        } else {
            Err(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS)
        }
    }

    /// Whether this broker is the coordinator of `group_id` now. Standalone: COORDINATOR_LOAD_IN_PROGRESS (14)
    /// until [`load`](Self::load) has finished, then always Ok. Cluster mode: Ok when the group's
    /// `__consumer_offsets` partition ([`coordinator::partition_for`]) is led and loaded here,
    /// COORDINATOR_LOAD_IN_PROGRESS (14) while it loads, NOT_COORDINATOR (16) when it is not led here.
    pub fn check_coordinator(&self, group_id: &str) -> Result<(), CoordinatorError> {
        if !self.cluster_mode {
            return self.check_loaded();
        }
        let p = partition_for(group_id, self.num_partitions.load(Ordering::Acquire));
        match self.partitions.lock().get(&p) {
            Some(Coordination::Loaded) => Ok(()),
            Some(Coordination::Loading(_)) => Err(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS),
            None => Err(ErrorCode::NOT_COORDINATOR),
        }
    }

    /// Cluster mode: the `__consumer_offsets` partitions this broker coordinates (loaded or loading), sorted,
    /// with `true` for loaded.
    pub fn coordinated_partitions(&self) -> Vec<(i32, bool)> {
        let mut v: Vec<(i32, bool)> = self
            .partitions
            .lock()
            .iter()
            .map(|(p, c)| (*p, *c == Coordination::Loaded))
            .collect();
        v.sort_unstable();
        v
    }

    /// Creates `__consumer_offsets` if it does not exist yet. Error: COORDINATOR_NOT_AVAILABLE.
    pub fn ensure_offsets_topic(&self) -> Result<(), CoordinatorError> {
        if self.metadata.topic(OFFSETS_TOPIC).is_some() {
            return Ok(());
        }
        // Never wait for the lock: in cluster mode the holder blocks on the controller (on a runtime
        // worker), and a second waiter would pin another worker. Concurrent callers get the retriable
        // COORDINATOR_NOT_AVAILABLE and ask again.
        let Some(_guard) = self.create_lock.try_lock() else {
            return Err(ErrorCode::COORDINATOR_NOT_AVAILABLE);
        };
        if self.metadata.topic(OFFSETS_TOPIC).is_some() {
            return Ok(());
        }
        let n = self.config.offsets_topic_num_partitions.max(1);
        let configs = BTreeMap::from([
            ("cleanup.policy".to_string(), "compact".to_string()),
            (
                "segment.bytes".to_string(),
                OFFSETS_TOPIC_SEGMENT_BYTES.to_string(),
            ),
        ]);
        let started = std::time::Instant::now();
        // Cluster mode: `offsets.topic.replication.factor`, capped by the live brokers so that a small
        // cluster still gets a coordinator.
        let rf = match &self.cluster {
            Some(c) => {
                let want: i16 = self
                    .config
                    .value("offsets.topic.replication.factor")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(3);
                let live = c.image().brokers.values().filter(|b| !b.fenced).count() as i16;
                want.min(live).max(1)
            }
            None => 1,
        };
        match self
            .topics
            .create_topic(OFFSETS_TOPIC, n, rf, configs, false)
        {
            Ok(t) => {
                self.num_partitions.store(t.partitions, Ordering::Release);
                tracing::info!(
                    partitions = t.partitions,
                    elapsed_ms = started.elapsed().as_millis() as u64,
                    "created {OFFSETS_TOPIC}"
                );
                Ok(())
            }
            Err(e) if e.code == ErrorCode::TOPIC_ALREADY_EXISTS => Ok(()),
            Err(e) => {
                tracing::error!(error = %e.message, "cannot create {OFFSETS_TOPIC}");
                Err(ErrorCode::COORDINATOR_NOT_AVAILABLE)
            }
        }
    }

    /// Loaded and `__consumer_offsets` exists: the precondition of every request that may write.
    pub fn ready(&self) -> Result<(), CoordinatorError> {
        self.check_loaded()?;
        self.ensure_offsets_topic()
    }

    /// [`check_coordinator`](Self::check_coordinator) for `group_id`, then `__consumer_offsets` exists.
    fn ready_for(&self, group_id: &str) -> Result<(), CoordinatorError> {
        self.check_coordinator(group_id)?;
        self.ensure_offsets_topic()
    }

    /// Standalone: replays `__consumer_offsets` into the coordinator, then marks it loaded (blocking; call from
    /// the blocking pool). Returns the number of records replayed. Cluster mode: nothing to do (partitions
    /// load on leadership, [`on_partition_leadership`](Self::on_partition_leadership)); returns 0.
    pub fn load(&self) -> usize {
        if self.cluster_mode {
            self.loaded.store(true, Ordering::Release);
            self.timer.notify_one();
            tracing::info!(
                "group coordinator started (cluster mode: partitions load on leadership)"
            );
            return 0;
        }
        let started = std::time::Instant::now();
        let mut replayed = 0usize;
        let mut skipped = 0usize;
        {
            let mut st = self.state.lock();
            if let Some(topic) = self.metadata.topic(OFFSETS_TOPIC) {
                self.num_partitions
                    .store(topic.partitions, Ordering::Release);
                for p in 0..topic.partitions {
                    let (r, s) =
                        self.replay_partition(p, &mut st.coordinator, ReplayTo::HighWatermark);
                    replayed += r;
                    skipped += s;
                }
            }
            let now = st.now();
            let fx = st.coordinator.loaded(now);
            let _ = self.apply(&mut st, fx);
        }
        self.loaded.store(true, Ordering::Release);
        self.timer.notify_one();
        tracing::info!(
            records = replayed,
            skipped,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "group coordinator loaded"
        );
        replayed
    }

    /// Cluster mode hook (Kafka's `onElection` / `onResignation`): this broker became (`is_leader`) or stopped
    /// being the leader of `__consumer_offsets` partition `partition`. Call it after the ReplicaManager has
    /// applied the new partition state, and without holding ReplicaManager or partition locks.
    ///
    /// Becoming leader: the partition is marked loading (its groups get COORDINATOR_LOAD_IN_PROGRESS) and
    /// replayed from its LogStartOffset to its LogEndOffset — on the blocking pool when called inside a tokio
    /// runtime, else inline — then its groups are served here. Repeated calls for a partition already led are
    /// no-ops. Losing leadership: its groups, offsets and timers are dropped at once (parked JoinGroup/SyncGroup
    /// requests are answered NOT_COORDINATOR) and they get NOT_COORDINATOR from then on; a load still running
    /// for it is discarded. Standalone (not cluster mode) this does nothing.
    pub fn on_partition_leadership(self: &Arc<Self>, partition: i32, is_leader: bool) {
        if !self.cluster_mode {
            return;
        }
        if let Some(t) = self.metadata.topic(OFFSETS_TOPIC) {
            self.num_partitions.store(t.partitions, Ordering::Release);
        }
        if is_leader {
            let id = self.load_ids.fetch_add(1, Ordering::Relaxed) + 1;
            {
                let mut parts = self.partitions.lock();
                if parts.contains_key(&partition) {
                    return;
                }
                parts.insert(partition, Coordination::Loading(id));
            }
            tracing::info!(
                partition,
                "loading {OFFSETS_TOPIC} partition (became its leader)"
            );
            match tokio::runtime::Handle::try_current() {
                Ok(handle) => {
                    let this = self.clone();
                    handle.spawn_blocking(move || this.load_partition(partition, id));
                }
                Err(_) => self.load_partition(partition, id),
            }
        } else {
            self.unload_partition(partition);
        }
    }

    /// Topics were deleted: every group coordinated here forgets its committed offsets for them (tombstones
    /// written), and Empty groups left without offsets are deleted (Kafka's `onPartitionsDeleted`). A write
    /// failure is logged; the offsets are gone from memory either way, as the topic is.
    pub fn on_topics_deleted(&self, topics: &[String]) {
        if topics.is_empty() || !self.is_loaded() {
            return;
        }
        let mut st = self.state.lock();
        if topics.iter().any(|t| t == OFFSETS_TOPIC) && !self.cluster_mode {
            // `__consumer_offsets` itself is gone: every group and offset with it (parked joins and syncs
            // get NOT_COORDINATOR); it is created again on the next group request. (In a cluster the
            // partitions' leadership ends, which unloads them.)
            let fx = st.coordinator.unload_groups(|_| true);
            let _ = self.apply(&mut st, fx);
        }
        let topics: Vec<String> = topics
            .iter()
            .filter(|t| *t != OFFSETS_TOPIC)
            .cloned()
            .collect();
        let now = st.now();
        let fx = st.coordinator.delete_topics_offsets(now, &topics);
        if let Err(e) = self.apply(&mut st, fx) {
            tracing::warn!(
                ?topics,
                error = e.0,
                "writing offset tombstones of deleted topics failed"
            );
        }
    }

    /// Replays one partition into a fresh coordinator and, if load `id` is still current, merges it.
    fn load_partition(&self, partition: i32, id: u64) {
        let started = std::time::Instant::now();
        let mut scratch = GroupCoordinator::new(group_config(&self.config));
        let (replayed, skipped) = self.replay_partition(partition, &mut scratch, ReplayTo::LogEnd);
        {
            let mut st = self.state.lock();
            {
                let mut parts = self.partitions.lock();
                if parts.get(&partition) != Some(&Coordination::Loading(id)) {
                    tracing::info!(
                        partition,
                        "{OFFSETS_TOPIC} partition load superseded; discarded"
                    );
                    return;
                }
                parts.insert(partition, Coordination::Loaded);
            }
            let now = st.now();
            let fx = st.coordinator.load_groups(now, scratch);
            let _ = self.apply(&mut st, fx);
        }
        self.timer.notify_one();
        tracing::info!(
            partition,
            records = replayed,
            skipped,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "{OFFSETS_TOPIC} partition loaded"
        );
    }

    /// Drops the groups of a partition no longer led here and answers their parked requests.
    fn unload_partition(&self, partition: i32) {
        if !self.partitions.lock().contains_key(&partition) {
            return; // not led here: nothing to unload (cheap check before the coordinator lock)
        }
        let mut st = self.state.lock();
        if self.partitions.lock().remove(&partition).is_none() {
            return;
        }
        let n = self.num_partitions.load(Ordering::Acquire);
        let belongs = |g: &str| partition_for(g, n) == partition;
        let fx = st.coordinator.unload_groups(belongs);
        let _ = self.apply(&mut st, fx);
        let stale: Vec<RequestId> = st
            .pending
            .iter()
            .filter(|(_, (g, _))| belongs(g))
            .map(|(id, _)| *id)
            .collect();
        for id in stale {
            match st.pending.remove(&id) {
                Some((_, Pending::Join(tx))) => {
                    let _ = tx.send(JoinResult {
                        error_code: ErrorCode::NOT_COORDINATOR.0,
                        generation_id: -1,
                        protocol_type: None,
                        protocol_name: None,
                        leader: String::new(),
                        skip_assignment: false,
                        member_id: String::new(),
                        members: Vec::new(),
                    });
                }
                Some((_, Pending::Sync(tx))) => {
                    let _ = tx.send(SyncResult {
                        error_code: ErrorCode::NOT_COORDINATOR.0,
                        protocol_type: None,
                        protocol_name: None,
                        assignment: Bytes::new(),
                    });
                }
                None => {}
            }
        }
        drop(st);
        self.timer.notify_one();
        tracing::info!(
            partition,
            "unloaded {OFFSETS_TOPIC} partition (no longer its leader)"
        );
    }

    /// Replays partition `p` of `__consumer_offsets` from its LogStartOffset to `to` into `into`. Returns
    /// (records replayed, records skipped).
    fn replay_partition(
        &self,
        p: i32,
        into: &mut GroupCoordinator,
        to: ReplayTo,
    ) -> (usize, usize) {
        let mut replayed = 0usize;
        let mut skipped = 0usize;
        let Some(partition) = self.replica_manager.partition(OFFSETS_TOPIC, p) else {
            tracing::warn!(partition = p, "{OFFSETS_TOPIC} partition is not hosted");
            return (0, 0);
        };
        let (start, end) = {
            let log = partition.offsets();
            let end = match to {
                ReplayTo::HighWatermark => log.high_watermark(),
                ReplayTo::LogEnd => log.log_end_offset(),
            };
            (log.log_start_offset(), end)
        };
        let mut offset = start;
        while offset < end {
            let read = partition.read_records(offset, LOAD_READ_BYTES, end, true);
            let bytes = match read {
                Ok(info) => match read_records(&info.records) {
                    Ok(b) => b,
                    Err(e) => {
                        tracing::warn!(partition = p, offset, error = %e, "cannot read {OFFSETS_TOPIC}");
                        break;
                    }
                },
                Err(e) => {
                    tracing::warn!(partition = p, offset, error = %e, "cannot read {OFFSETS_TOPIC}");
                    break;
                }
            };
            if bytes.is_empty() {
                break;
            }
            let before = offset;
            for batch in batches(&bytes) {
                let batch = match batch {
                    Ok(b) => b,
                    Err(e) => {
                        // A short read at the end of the slice: continue from the last whole batch.
                        tracing::debug!(partition = p, offset, error = %e, "partial batch");
                        break;
                    }
                };
                let next = batch.next_offset();
                if next <= offset {
                    continue;
                }
                if !batch.is_control() {
                    match batch.records() {
                        Ok(records) => {
                            for r in records {
                                if r.offset < offset {
                                    continue;
                                }
                                let Some(key) = r.key.as_deref() else {
                                    skipped += 1;
                                    continue;
                                };
                                match decode_record(key, r.value.as_deref()) {
                                    Ok(rec) => {
                                        into.replay(rec);
                                        replayed += 1;
                                    }
                                    Err(e) => {
                                        skipped += 1;
                                        tracing::warn!(partition = p, offset = r.offset, error = %e,
                                            "skipping undecodable {OFFSETS_TOPIC} record");
                                    }
                                }
                            }
                        }
                        Err(e) => {
                            tracing::warn!(partition = p, offset, error = %e,
                                "skipping unreadable {OFFSETS_TOPIC} batch");
                        }
                    }
                }
                offset = next;
            }
            if offset == before {
                tracing::warn!(
                    partition = p,
                    offset,
                    "no progress loading {OFFSETS_TOPIC}; stopping"
                );
                break;
            }
        }
        (replayed, skipped)
    }

    /// Fires the coordinator's timers at their deadlines until `shutdown` flips.
    pub async fn run_timers(self: Arc<Self>, mut shutdown: watch::Receiver<bool>) {
        loop {
            let wait = {
                let st = self.state.lock();
                match st.coordinator.next_deadline() {
                    Some(d) if self.is_loaded() => {
                        Duration::from_millis(d.saturating_sub(now_ms()).max(0) as u64)
                    }
                    _ => Duration::from_secs(3600),
                }
            };
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = self.timer.notified() => continue,
                _ = shutdown.changed() => return,
            }
            if !self.is_loaded() {
                continue;
            }
            let mut st = self.state.lock();
            let now = st.now();
            let fx = st.coordinator.tick(now);
            let _ = self.apply(&mut st, fx);
        }
    }

    /// Runs `f` on the coordinator under the lock — after re-checking, under the lock, that `group` (if any)
    /// is coordinated here — persists the effects it returns, completes parked requests, and wakes the timer
    /// task. Returns `f`'s value and the appends (or the write error).
    fn call<T>(
        &self,
        group: Option<&str>,
        f: impl FnOnce(&mut State, i64) -> (T, Vec<Effect>),
    ) -> Result<(T, Result<Vec<Appended>, CoordinatorError>), CoordinatorError> {
        self.call_with_undo(
            group,
            |st, now| {
                let (value, fx) = f(st, now);
                (value, fx, ())
            },
            |_, ()| {},
        )
    }

    /// [`call`](Self::call), and when the call's records cannot be appended, `undo` runs with what `f`
    /// returned for it, still under the lock (so no other call sees state the log does not have).
    fn call_with_undo<T, U>(
        &self,
        group: Option<&str>,
        f: impl FnOnce(&mut State, i64) -> (T, Vec<Effect>, U),
        undo: impl FnOnce(&mut State, U),
    ) -> Result<(T, Result<Vec<Appended>, CoordinatorError>), CoordinatorError> {
        let out = {
            let mut st = self.state.lock();
            if let Some(g) = group {
                self.check_coordinator(g)?;
            }
            let now = st.now();
            let (value, fx, u) = f(&mut st, now);
            let written = self.apply(&mut st, fx);
            if written.is_err() {
                undo(&mut st, u);
            }
            (value, written)
        };
        self.timer.notify_one();
        Ok(out)
    }

    /// OffsetCommit: [`with_group_replicated`](Self::with_group_replicated) for `commit_offsets`, except that
    /// when the commit's records cannot be appended the committed offsets return to what they were (Kafka
    /// reverts a failed coordinator write), so OffsetFetch never shows a commit a restart would lose.
    pub async fn commit_offsets(
        &self,
        req: &coordinator::OffsetCommitRequest,
    ) -> Result<(coordinator::OffsetCommitResult, Written), CoordinatorError> {
        self.ready_for(&req.group_id)?;
        let partitions: Vec<(String, i32)> = req
            .topics
            .iter()
            .flat_map(|(t, ps)| ps.iter().map(move |p| (t.clone(), p.partition_index)))
            .collect();
        let group = req.group_id.clone();
        let (value, written) = self.call_with_undo(
            Some(&req.group_id),
            |st, now| {
                let before = st.coordinator.offsets_snapshot(&req.group_id, &partitions);
                let o = st.coordinator.commit_offsets(now, req);
                (o.response, o.effects, before)
            },
            |st, before| st.coordinator.restore_offsets(&group, before),
        )?;
        let appended = match written {
            Ok(a) => a,
            Err(e) => return Ok((value, Err(e))),
        };
        Ok((value, self.wait_replicated(&appended).await))
    }

    /// Persists every `Persist` effect (in order), then completes the parked requests the effects answer.
    /// Returns the appends, or the error of the first failed write.
    fn apply(
        &self,
        st: &mut State,
        effects: Vec<Effect>,
    ) -> Result<Vec<Appended>, CoordinatorError> {
        let records: Vec<&GroupRecord> = effects
            .iter()
            .filter_map(|e| match e {
                Effect::Persist(r) => Some(r),
                _ => None,
            })
            .collect();
        let written = self.persist(&records);
        let mut replies = Vec::new();
        for e in effects {
            match e {
                Effect::JoinResponse { request, response } => {
                    if let Some((_, Pending::Join(tx))) = st.pending.remove(&request) {
                        replies.push(Reply::Join(tx, response));
                    }
                }
                Effect::SyncResponse { request, response } => {
                    if let Some((_, Pending::Sync(tx))) = st.pending.remove(&request) {
                        replies.push(Reply::Sync(tx, response));
                    }
                }
                Effect::Persist(_) => {}
            }
        }
        match &written {
            // Cluster mode: answers of a call that wrote group records (e.g. the leader's SyncGroup
            // storing the assignment) wait until the ISR has the records, as Kafka answers after the
            // write commits; if it cannot, the members get the write's error and rejoin.
            Ok(appended) if self.cluster_mode && !appended.is_empty() && !replies.is_empty() => {
                self.reply_when_replicated(appended.clone(), replies);
            }
            // The records were not written (e.g. a group record larger than max.message.bytes): the
            // answers carry the error, so no member goes on from state the log does not have.
            Err(code) => replies.into_iter().for_each(|r| r.fail(*code)),
            Ok(_) => replies.into_iter().for_each(Reply::send),
        }
        written
    }

    /// Sends `replies` once every append in `appended` is replicated (or their error when that fails or
    /// `offsets.commit.timeout.ms` passes). Without a tokio runtime they are sent at once.
    fn reply_when_replicated(&self, appended: Vec<Appended>, replies: Vec<Reply>) {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            replies.into_iter().for_each(Reply::send);
            return;
        };
        let (min_isr, deadline) = self.replication_bounds();
        let rm = self.replica_manager.clone();
        handle.spawn(async move {
            match wait_appended(&rm, &appended, min_isr, deadline).await {
                Ok(()) => replies.into_iter().for_each(Reply::send),
                Err(code) => replies.into_iter().for_each(|r| r.fail(code)),
            }
        });
    }

    /// Appends `records` to `__consumer_offsets`: one batch per partition, records in call order.
    fn persist(&self, records: &[&GroupRecord]) -> Result<Vec<Appended>, CoordinatorError> {
        if records.is_empty() {
            return Ok(Vec::new());
        }
        self.ensure_offsets_topic()?;
        let n = self.num_partitions.load(Ordering::Acquire);
        let mut by_partition: BTreeMap<i32, Vec<&GroupRecord>> = BTreeMap::new();
        for r in records {
            by_partition
                .entry(partition_for(r.group_id(), n))
                .or_default()
                .push(r);
        }
        let now = now_ms();
        let mut result = Ok(Vec::with_capacity(by_partition.len()));
        for (p, recs) in by_partition {
            let mut builder = RecordBatchBuilder::new(Compression::None);
            for r in recs {
                let (key, value) = encode_record(r);
                builder.append(now, Some(key), value, Vec::new());
            }
            let appended = match builder.build() {
                Err(e) => {
                    tracing::error!(partition = p, error = %e, "cannot encode group records");
                    Err(ErrorCode::COORDINATOR_NOT_AVAILABLE)
                }
                Ok(bytes) => match self.replica_manager.partition(OFFSETS_TOPIC, p) {
                    None => {
                        tracing::error!(partition = p, "{OFFSETS_TOPIC} partition is not hosted");
                        Err(if self.cluster_mode {
                            ErrorCode::NOT_COORDINATOR
                        } else {
                            ErrorCode::COORDINATOR_NOT_AVAILABLE
                        })
                    }
                    Some(partition) => {
                        match self.replica_manager.append_to_leader(&partition, bytes, 0) {
                            Ok((info, epoch)) => Ok((partition, info.last_offset + 1, epoch)),
                            Err(e) => {
                                tracing::error!(partition = p, error = %e, "cannot write group records");
                                Err(write_error(&e))
                            }
                        }
                    }
                },
            };
            match (&mut result, appended) {
                (Ok(v), Ok(a)) => v.push(a),
                (Ok(_), Err(e)) => result = Err(e),
                (Err(_), _) => {}
            }
        }
        result
    }

    /// JoinGroup: parks until the coordinator answers (the rebalance completes, or at once on errors).
    /// Errors: see [`check_coordinator`](Self::check_coordinator), COORDINATOR_NOT_AVAILABLE.
    pub async fn join_group(&self, req: JoinGroupRequest) -> Result<JoinResult, CoordinatorError> {
        self.ready_for(&req.group_id)?;
        let member_id = req.member_id.clone();
        let group = req.group_id.clone();
        let (tx, rx) = oneshot::channel();
        // A failed write of the group's records is not reported to the parked members (the group is
        // unloaded, and they are answered NOT_COORDINATOR, when leadership is lost).
        let _ = self.call(Some(&group), |st, now| {
            let id = st.park(&group, Pending::Join(tx));
            ((), st.coordinator.join_group(now, id, req))
        })?;
        Ok(rx.await.unwrap_or_else(|_| JoinResult {
            error_code: ErrorCode::UNKNOWN_SERVER_ERROR.0,
            generation_id: -1,
            protocol_type: None,
            protocol_name: None,
            leader: String::new(),
            skip_assignment: false,
            member_id,
            members: Vec::new(),
        }))
    }

    /// SyncGroup: parks until the leader's assignment arrives (or at once on errors / for the leader).
    /// Errors: see [`check_coordinator`](Self::check_coordinator), COORDINATOR_NOT_AVAILABLE.
    pub async fn sync_group(&self, req: SyncGroupRequest) -> Result<SyncResult, CoordinatorError> {
        self.ready_for(&req.group_id)?;
        let group = req.group_id.clone();
        let (tx, rx) = oneshot::channel();
        // A failed write of the group's records is not reported to the parked members (the group is
        // unloaded, and they are answered NOT_COORDINATOR, when leadership is lost).
        let _ = self.call(Some(&group), |st, now| {
            let id = st.park(&group, Pending::Sync(tx));
            ((), st.coordinator.sync_group(now, id, req))
        })?;
        Ok(rx.await.unwrap_or_else(|_| SyncResult {
            error_code: ErrorCode::UNKNOWN_SERVER_ERROR.0,
            protocol_type: None,
            protocol_name: None,
            assignment: Bytes::new(),
        }))
    }

    /// Runs a call that names no group and answers at once (`Outcome`-returning coordinator methods).
    /// Returns the response and whether its records were written. Calls about one group use
    /// [`with_group`](Self::with_group).
    pub fn with<T>(
        &self,
        f: impl FnOnce(&mut GroupCoordinator, i64) -> coordinator::Outcome<T>,
    ) -> Result<(T, bool), CoordinatorError> {
        self.ready()?;
        let (value, written) = self.call(None, |st, now| {
            let o = f(&mut st.coordinator, now);
            (o.response, o.effects)
        })?;
        Ok((value, written.is_ok()))
    }

    /// Runs a call about `group_id` that answers at once, if this broker coordinates the group (checked again
    /// under the coordinator lock). Returns the response and whether its records reached the leader log
    /// ([`Written`]). Errors: see [`check_coordinator`](Self::check_coordinator), COORDINATOR_NOT_AVAILABLE
    /// (`__consumer_offsets` cannot be created).
    pub fn with_group<T>(
        &self,
        group_id: &str,
        f: impl FnOnce(&mut GroupCoordinator, i64) -> coordinator::Outcome<T>,
    ) -> Result<(T, Written), CoordinatorError> {
        self.ready_for(group_id)?;
        let (value, written) = self.call(Some(group_id), |st, now| {
            let o = f(&mut st.coordinator, now);
            (o.response, o.effects)
        })?;
        Ok((value, written.map(|_| ())))
    }

    /// [`with_group`](Self::with_group), then waits (up to `offsets.commit.timeout.ms`, default 5000 ms) until
    /// every record written has reached the HighWatermark, i.e. every ISR member has it (Kafka writes
    /// commits with acks=all). `min.insync.replicas` of `__consumer_offsets` applies when the wait ends.
    /// Write errors: leadership lost meanwhile → NOT_COORDINATOR; ISR too small or timeout →
    /// COORDINATOR_NOT_AVAILABLE.
    pub async fn with_group_replicated<T>(
        &self,
        group_id: &str,
        f: impl FnOnce(&mut GroupCoordinator, i64) -> coordinator::Outcome<T>,
    ) -> Result<(T, Written), CoordinatorError> {
        self.ready_for(group_id)?;
        let (value, written) = self.call(Some(group_id), |st, now| {
            let o = f(&mut st.coordinator, now);
            (o.response, o.effects)
        })?;
        let appended = match written {
            Ok(a) => a,
            Err(e) => return Ok((value, Err(e))),
        };
        Ok((value, self.wait_replicated(&appended).await))
    }

    /// Waits until each append reached the HighWatermark in its LeaderEpoch.
    async fn wait_replicated(&self, appended: &[Appended]) -> Written {
        if appended.is_empty() {
            return Ok(());
        }
        let (min_isr, deadline) = self.replication_bounds();
        wait_appended(&self.replica_manager, appended, min_isr, deadline).await
    }

    /// `min.insync.replicas` of `__consumer_offsets` and the deadline of a replication wait started now
    /// (`offsets.commit.timeout.ms`, default 5000 ms).
    fn replication_bounds(&self) -> (usize, std::time::Instant) {
        let timeout = self
            .config
            .value("offsets.commit.timeout.ms")
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(OFFSETS_COMMIT_TIMEOUT_MS);
        let deadline = std::time::Instant::now() + Duration::from_millis(timeout);
        let min_isr = self
            .metadata
            .topic(OFFSETS_TOPIC)
            .and_then(|t| {
                self.topics
                    .topic_config_value(&t.configs, "min.insync.replicas")
            })
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(1)
            .max(1);
        (min_isr, deadline)
    }

    /// Runs a read-only query on the coordinator that names no group (after loading).
    pub fn read<T>(&self, f: impl FnOnce(&GroupCoordinator) -> T) -> Result<T, CoordinatorError> {
        self.check_loaded()?;
        let st = self.state.lock();
        Ok(f(&st.coordinator))
    }

    /// Runs a read-only query about `group_id`, if this broker coordinates the group (checked under the
    /// coordinator lock). Errors: see [`check_coordinator`](Self::check_coordinator).
    pub fn read_group<T>(
        &self,
        group_id: &str,
        f: impl FnOnce(&GroupCoordinator) -> T,
    ) -> Result<T, CoordinatorError> {
        let st = self.state.lock();
        self.check_coordinator(group_id)?;
        Ok(f(&st.coordinator))
    }
}

/// The bytes of a read result (file slices are read with `pread`; a short read returns what is there).
fn read_records(records: &Records) -> std::io::Result<Bytes> {
    match records {
        Records::Memory(b) => Ok(b.clone()),
        Records::File(slice) => {
            use std::os::unix::fs::FileExt;
            let mut buf = vec![0u8; slice.len as usize];
            let mut done = 0usize;
            while done < buf.len() {
                let n = slice
                    .file
                    .read_at(&mut buf[done..], slice.position + done as u64)?;
                if n == 0 {
                    break;
                }
                done += n;
            }
            buf.truncate(done);
            Ok(Bytes::from(buf))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use coordinator::{JoinProtocol, OffsetCommitPartition, OffsetCommitRequest};

    /// A service over `dir` with the topics it finds there opened (as `Server::start` does).
    fn open(dir: &std::path::Path) -> (Arc<GroupCoordinatorService>, Arc<ReplicaManager>) {
        let pairs: Vec<(String, String)> = [
            ("log.dirs", dir.to_str().unwrap()),
            ("offsets.topic.num.partitions", "3"),
            ("group.initial.rebalance.delay.ms", "0"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let config = BrokerConfig::from_pairs(&pairs).unwrap();
        let metadata = Arc::new(MetadataStore::open(dir, config.node_id).unwrap());
        let md = metadata.clone();
        let cfg = config.clone();
        let lm = Arc::new(
            storage::LogManager::open(
                dir,
                move |t| {
                    let o = md.topic(t).map(|t| t.configs).unwrap_or_default();
                    crate::topics::log_config(&cfg, &o)
                },
                now_ms(),
            )
            .unwrap(),
        );
        let rm = Arc::new(ReplicaManager::new(
            lm,
            config.node_id,
            Arc::new(crate::cluster_link::StandaloneLink),
            30_000,
        ));
        let svc = GroupCoordinatorService::new(config, metadata, rm.clone(), None);
        svc.topics.load_all().unwrap();
        (Arc::new(svc), rm)
    }

    fn commit(group: &str, offset: i64) -> OffsetCommitRequest {
        OffsetCommitRequest {
            api_version: 8,
            group_id: group.into(),
            generation_id: -1,
            member_id: String::new(),
            group_instance_id: None,
            retention_time_ms: -1,
            topics: vec![(
                "t".into(),
                vec![OffsetCommitPartition {
                    partition_index: 0,
                    committed_offset: offset,
                    committed_leader_epoch: 3,
                    committed_metadata: Some("meta".into()),
                }],
            )],
        }
    }

    #[test]
    fn requests_wait_for_loading_and_commits_survive_reopen() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (svc, rm) = open(dir.path());
            assert_eq!(
                svc.read(|c| c.list_groups(&[])).unwrap_err(),
                ErrorCode::COORDINATOR_LOAD_IN_PROGRESS
            );
            assert_eq!(svc.load(), 0);
            assert!(
                svc.metadata.topic(OFFSETS_TOPIC).is_none(),
                "created lazily"
            );
            let (r, persisted) = svc
                .with(|c, now| c.commit_offsets(now, &commit("g", 41)))
                .unwrap();
            assert!(persisted);
            assert_eq!(r, vec![("t".to_string(), vec![(0, 0)])]);
            let (_, persisted) = svc
                .with(|c, now| c.commit_offsets(now, &commit("g", 42)))
                .unwrap();
            assert!(persisted);
            assert_eq!(svc.metadata.topic(OFFSETS_TOPIC).unwrap().partitions, 3);
            // A record no coordinator wrote (key version 99) is skipped at load.
            let p = rm.partition(OFFSETS_TOPIC, partition_for("g", 3)).unwrap();
            let mut b = RecordBatchBuilder::new(Compression::None);
            b.append(0, Some(Bytes::from_static(&[0, 99, 1])), None, Vec::new());
            rm.append(&p, b.build().unwrap()).unwrap();
            rm.shutdown().unwrap();
        }
        let (svc, _rm) = open(dir.path());
        assert_eq!(svc.load(), 2);
        let f = svc.read(|c| c.fetch_offsets("g", None)).unwrap();
        assert_eq!(f.topics.len(), 1);
        let p = &f.topics[0].1[0];
        assert_eq!(
            (
                p.committed_offset,
                p.committed_leader_epoch,
                p.metadata.as_str()
            ),
            (42, 3, "meta")
        );
    }

    /// A consumer-protocol JoinGroup v5 for `group` with one "range" protocol.
    fn join_request(group: &str, member: &str) -> coordinator::JoinGroupRequest {
        coordinator::JoinGroupRequest {
            api_version: 5,
            group_id: group.into(),
            session_timeout_ms: 10_000,
            rebalance_timeout_ms: 10_000,
            member_id: member.into(),
            group_instance_id: None,
            protocol_type: "consumer".into(),
            protocols: vec![JoinProtocol {
                name: "range".into(),
                metadata: Bytes::from_static(b"m"),
            }],
            client_id: "c".into(),
            client_host: "/127.0.0.1".into(),
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn join_and_sync_park_until_answered() {
        let dir = tempfile::tempdir().unwrap();
        let (svc, _rm) = open(dir.path());
        svc.load();
        let join = |member: &str| join_request("g", member);
        let first = svc.join_group(join("")).await.unwrap();
        assert_eq!(first.error_code, coordinator::error::MEMBER_ID_REQUIRED);
        let (_shutdown, shutdown_rx) = watch::channel(false);
        let timers = tokio::spawn(svc.clone().run_timers(shutdown_rx));
        let bounded = Duration::from_secs(10);
        let joined = tokio::time::timeout(bounded, svc.join_group(join(&first.member_id)))
            .await
            .expect("the join is answered once the initial rebalance delay (0 ms) passes")
            .unwrap();
        assert_eq!((joined.error_code, joined.generation_id), (0, 1));
        assert_eq!(joined.leader, first.member_id);
        let synced = tokio::time::timeout(
            bounded,
            svc.sync_group(SyncGroupRequest {
                group_id: "g".into(),
                generation_id: 1,
                member_id: first.member_id.clone(),
                group_instance_id: None,
                protocol_type: None,
                protocol_name: None,
                assignments: vec![(first.member_id.clone(), Bytes::from_static(b"a"))],
            }),
        )
        .await
        .expect("the leader's sync is answered at once")
        .unwrap();
        assert_eq!((synced.error_code, &synced.assignment[..]), (0, &b"a"[..]));
        timers.abort();
    }

    /// Group ids whose `__consumer_offsets` partition (of 3) is 0 and 1.
    fn groups_on_0_and_1() -> (String, String) {
        let find = |p: i32| {
            (0..)
                .map(|i| format!("group-{i}"))
                .find(|g| partition_for(g, 3) == p)
                .unwrap()
        };
        (find(0), find(1))
    }

    /// A cluster-mode service whose `__consumer_offsets` (3 partitions) exists and of which it leads nothing.
    fn open_cluster_mode(
        dir: &std::path::Path,
    ) -> (Arc<GroupCoordinatorService>, Arc<ReplicaManager>) {
        let (svc, rm) = open(dir);
        let svc = Arc::new(
            Arc::try_unwrap(svc)
                .expect("sole owner")
                .with_cluster_mode(),
        );
        svc.ensure_offsets_topic().unwrap();
        assert_eq!(svc.load(), 0, "cluster mode loads partitions on leadership");
        (svc, rm)
    }

    fn committed(svc: &GroupCoordinatorService, group: &str) -> Result<i64, CoordinatorError> {
        svc.read_group(group, |c| {
            c.fetch_offsets(group, Some(&[("t".to_string(), vec![0])]))
                .topics[0]
                .1[0]
                .committed_offset
        })
    }

    #[test]
    fn cluster_mode_coordinates_only_led_partitions_and_reloads_on_leadership() {
        let dir = tempfile::tempdir().unwrap();
        let (svc, _rm) = open_cluster_mode(dir.path());
        let (a, b) = groups_on_0_and_1();
        // Nothing led yet: every group is coordinated elsewhere.
        assert_eq!(svc.check_coordinator(&a), Err(ErrorCode::NOT_COORDINATOR));
        assert_eq!(
            svc.with_group(&a, |c, now| c.commit_offsets(now, &commit(&a, 1)))
                .unwrap_err(),
            ErrorCode::NOT_COORDINATOR
        );
        assert_eq!(committed(&svc, &a), Err(ErrorCode::NOT_COORDINATOR));

        // Leader of partitions 0 and 1 (outside a runtime the replay runs inline).
        svc.on_partition_leadership(0, true);
        svc.on_partition_leadership(1, true);
        assert_eq!(svc.coordinated_partitions(), vec![(0, true), (1, true)]);
        assert_eq!(svc.check_coordinator(&a), Ok(()));
        for (g, offset) in [(&a, 10), (&b, 20)] {
            let (r, written) = svc
                .with_group(g, |c, now| c.commit_offsets(now, &commit(g, offset)))
                .unwrap();
            assert_eq!(
                (r, written),
                (vec![("t".to_string(), vec![(0, 0)])], Ok(()))
            );
        }
        let (_, written) = svc
            .with_group(&a, |c, now| c.commit_offsets(now, &commit(&a, 11)))
            .unwrap();
        assert_eq!(written, Ok(()));

        // Losing partition 0: its group is gone and coordinated elsewhere; partition 1 is untouched.
        svc.on_partition_leadership(0, false);
        assert_eq!(svc.coordinated_partitions(), vec![(1, true)]);
        assert_eq!(svc.check_coordinator(&a), Err(ErrorCode::NOT_COORDINATOR));
        assert_eq!(committed(&svc, &a), Err(ErrorCode::NOT_COORDINATOR));
        assert!(!svc.read(|c| c.has_group(&a)).unwrap());
        let listed: Vec<String> = svc
            .read(|c| c.list_groups(&[]))
            .unwrap()
            .into_iter()
            .map(|g| g.group_id)
            .collect();
        assert_eq!(listed, vec![b.clone()]);
        assert_eq!(committed(&svc, &b), Ok(20));
        // Losing it again is a no-op.
        svc.on_partition_leadership(0, false);

        // Regaining it replays the partition's log.
        svc.on_partition_leadership(0, true);
        assert_eq!(committed(&svc, &a), Ok(11));
        assert_eq!(committed(&svc, &b), Ok(20));
        // A second "became leader" for a partition already led changes nothing.
        svc.on_partition_leadership(0, true);
        assert_eq!(committed(&svc, &a), Ok(11));
    }

    #[test]
    fn cluster_mode_loading_state_superseded_loads_and_lost_log() {
        let dir = tempfile::tempdir().unwrap();
        let (svc, rm) = open_cluster_mode(dir.path());
        let (a, b) = groups_on_0_and_1();
        svc.on_partition_leadership(0, true);
        let (_, written) = svc
            .with_group(&a, |c, now| c.commit_offsets(now, &commit(&a, 5)))
            .unwrap();
        assert_eq!(written, Ok(()));
        svc.on_partition_leadership(0, false);

        // While a partition loads its groups get COORDINATOR_LOAD_IN_PROGRESS; a load that was superseded
        // (leadership lost and regained meanwhile) is discarded.
        svc.partitions
            .lock()
            .insert(0, Coordination::Loading(1_000));
        assert_eq!(
            svc.check_coordinator(&a),
            Err(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS)
        );
        assert_eq!(
            svc.with_group(&a, |c, now| c.heartbeat(now, &a, "m", None, 1))
                .unwrap_err(),
            ErrorCode::COORDINATOR_LOAD_IN_PROGRESS
        );
        svc.load_partition(0, 999);
        assert_eq!(
            svc.check_coordinator(&a),
            Err(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS)
        );
        assert!(!svc.read(|c| c.has_group(&a)).unwrap());
        svc.load_partition(0, 1_000);
        assert_eq!(committed(&svc, &a), Ok(5));

        // The log of a led partition went away (leadership moved before the resignation call arrived): the
        // write fails with NOT_COORDINATOR.
        svc.on_partition_leadership(1, true);
        rm.stop_replica(OFFSETS_TOPIC, 1, false).unwrap();
        let (r, written) = svc
            .with_group(&b, |c, now| c.commit_offsets(now, &commit(&b, 1)))
            .unwrap();
        assert_eq!(r, vec![("t".to_string(), vec![(0, 0)])]);
        assert_eq!(written, Err(ErrorCode::NOT_COORDINATOR));
    }

    #[test]
    fn cluster_mode_unload_answers_parked_joins_not_coordinator() {
        let dir = tempfile::tempdir().unwrap();
        let (svc, _rm) = open_cluster_mode(dir.path());
        let (a, b) = groups_on_0_and_1();
        svc.on_partition_leadership(0, true);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let join = |member: &str| join_request(&a, member);
            let first = svc.join_group(join("")).await.unwrap();
            assert_eq!(first.error_code, coordinator::error::MEMBER_ID_REQUIRED);
            // No timer task runs: the rejoin stays parked in the initial rebalance.
            let parked = tokio::spawn({
                let svc = svc.clone();
                let req = join(&first.member_id);
                async move { svc.join_group(req).await }
            });
            while svc.state.lock().pending.is_empty() {
                tokio::task::yield_now().await;
            }
            svc.on_partition_leadership(0, false);
            let r = tokio::time::timeout(Duration::from_secs(10), parked)
                .await
                .expect("answered at once")
                .unwrap()
                .unwrap();
            assert_eq!(r.error_code, ErrorCode::NOT_COORDINATOR.0);
            assert!(svc.state.lock().pending.is_empty());
            assert_eq!(
                svc.with_group_replicated(&a, |c, now| c.commit_offsets(now, &commit(&a, 1)))
                    .await
                    .unwrap_err(),
                ErrorCode::NOT_COORDINATOR
            );
            // acks=all commit on a partition whose ISR is this broker alone: answered at once.
            // From a thread outside the runtime the load runs inline.
            std::thread::spawn({
                let svc = svc.clone();
                move || svc.on_partition_leadership(1, true)
            })
            .join()
            .unwrap();
            assert_eq!(svc.check_coordinator(&b), Ok(()));
            let (r, written) = tokio::time::timeout(
                Duration::from_secs(10),
                svc.with_group_replicated(&b, |c, now| c.commit_offsets(now, &commit(&b, 3))),
            )
            .await
            .expect("the HighWatermark is the LogEndOffset with ISR = [self]")
            .unwrap();
            assert_eq!(
                (r, written),
                (vec![("t".to_string(), vec![(0, 0)])], Ok(()))
            );
            assert_eq!(committed(&svc, &b), Ok(3));
            assert_eq!(
                svc.join_group(join(&first.member_id)).await.unwrap_err(),
                ErrorCode::NOT_COORDINATOR
            );
        });
    }
}
