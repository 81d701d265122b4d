//! The runtime around the pure [`coordinator::GroupCoordinator`]: locking, parked JoinGroup/SyncGroup
//! requests, the timer task, the internal `__consumer_offsets` topic, and loading it.
//!
//! Source: Kafka's `GroupCoordinatorService` / `CoordinatorRuntime` (classic groups only), KIP-345, KIP-394.
//!
//! - **`__consumer_offsets`** (`offsets.topic.num.partitions` partitions, default 50; replication factor 1
//!   standalone, `offsets.topic.replication.factor` capped by the brokers registered in cluster mode, fenced ones included;
//!   `cleanup.policy=compact`, `segment.bytes=104857600` as Kafka's `offsets.topic.segment.bytes`) is created
//!   lazily, as Kafka does, by the first FindCoordinator for a group or the first group request that writes.
//!   The log cleaner compacts it like any compacted topic (latest record per key; tombstones kept for
//!   `delete.retention.ms`); loading tolerates the offset gaps and emptied batches that compaction leaves.
//! - **Records**: each effect [`Effect::Persist`] of one coordinator call is encoded with
//!   [`coordinator::encode_record`] and appended, one uncompressed batch per `__consumer_offsets` partition
//!   ([`coordinator::partition_for`]) — a TxnOffsetCommit's [`Effect::PersistTransactional`] records in a
//!   TRANSACTIONAL batch of their producer (`persist.rs`, `txn_offsets.rs`) —, through [`ReplicaManager::append_to_leader`] (appended to the leader
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
//! - **Time**: wall-clock milliseconds of the injected [`Clock`] (the system clock; a simulation's own, see
//!   [`GroupCoordinatorService::with_seams`]): never backwards (the coordinator requires non-decreasing `now_ms`)
//!   and never standing still when the wall clock steps back (it goes on at the wall clock's pace).

mod config;
mod group_timeouts;
mod loading;
mod parked;
mod persist;
mod topics_image;
mod txn_offsets;

pub use config::group_config;
pub use loading::GroupCoordinatorPublisher;
use parked::{Pending, Reply};
use persist::ToPersist;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use coordinator::{
    decode_record, encode_record, partition_for, Effect, GroupCoordinator, GroupRecord,
    JoinGroupRequest, JoinResult, RequestId, SyncGroupRequest, SyncResult,
};
use parking_lot::Mutex;
use protocol::record::{batches, Compression, RecordBatchBuilder};
use tokio::sync::{oneshot, watch, Notify};
use types::Clock;

use crate::config::{keys, BrokerConfig};
use crate::log_dir_failure::BackgroundIo;
use crate::metadata::MetadataStore;
use crate::publisher::MetadataPublisher;
use crate::topics::TopicManager;
use replica::partition::Partition;
use replica::replica_manager::{ReplicaError, ReplicaManager};

/// Name of the internal topic holding committed offsets and group metadata.
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";

/// `offsets.topic.segment.bytes` default (100 MiB).
const OFFSETS_TOPIC_SEGMENT_BYTES: &str = "104857600";

/// Bytes read per step while loading a partition.
const LOAD_READ_BYTES: usize = 4 * 1024 * 1024;

/// A request-level failure of the group coordinator runtime (Kafka's `CoordinatorRuntime` errors). The server
/// edge (`server::apis::errors`) maps each to its Kafka code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CoordinatorError {
    /// The group's `__consumer_offsets` partition is still loading (COORDINATOR_LOAD_IN_PROGRESS, 14).
    #[error("the coordinator is loading the group's offsets partition")]
    LoadInProgress,
    /// The group is coordinated elsewhere, or leadership was lost meanwhile (NOT_COORDINATOR, 16).
    #[error("this broker is not the group's coordinator")]
    NotCoordinator,
    /// `__consumer_offsets` cannot be created or written (COORDINATOR_NOT_AVAILABLE, 15).
    #[error("the coordinator is not available")]
    NotAvailable,
    /// The group's records can never fit in a batch; not retriable (UNKNOWN_SERVER_ERROR, -1, as Kafka).
    #[error("the group's records are too large to write")]
    RecordsTooLarge,
    /// The parked request's answer was dropped (the service shut down) (UNKNOWN_SERVER_ERROR, -1).
    #[error("the coordinator dropped the request")]
    Dropped,
    /// A TxnOffsetCommit's transactional batch was refused: the producer epoch is older than the
    /// partition's (INVALID_PRODUCER_EPOCH, 47; the producer is fenced), as Kafka passes the append's
    /// error through.
    #[error("the producer epoch is fenced")]
    InvalidProducerEpoch,
}

/// Whether the records of one call were written: `Ok` when every record reached the leader log (or there were
/// none), else NOT_COORDINATOR (16, leadership lost) or COORDINATOR_NOT_AVAILABLE (15).
pub type Written = Result<(), CoordinatorError>;

/// One batch appended to a `__consumer_offsets` leader: the partition, the offset the HighWatermark must reach
/// (last offset + 1) and the LeaderEpoch it was appended in.
type Appended = (Arc<Partition>, types::Offset, types::LeaderEpoch);

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
    /// The wall-clock time read by the previous [`State::now`].
    last_wall: Option<i64>,
    /// Cluster mode, per `__consumer_offsets` partition led here: its last write not yet known to be
    /// replicated (see `parked.rs`).
    last_written: HashMap<i32, Appended>,
    /// Cluster mode: transactions completed on a partition while it was loading, (producer id, commit),
    /// applied once the load is merged (see `txn_offsets.rs`).
    completions: HashMap<i32, Vec<(types::ProducerId, bool)>>,
}

impl State {
    /// The coordinator's now: `clock`'s wall-clock time at first, then advanced by how far the wall clock
    /// moved forward since the previous call — never backwards, and never standing still after the wall
    /// clock steps back (its timers would otherwise stop for the length of the step, as Kafka's, on a
    /// monotonic clock, do not). A forward step is taken at once (sessions it spans expire).
    fn now(&mut self, clock: &dyn Clock) -> i64 {
        let wall = clock.now_ms();
        self.last_now = match self.last_wall {
            None => self.last_now.max(wall),
            Some(prev) => self
                .last_now
                .saturating_add(wall.saturating_sub(prev).max(0)),
        };
        self.last_wall = Some(wall);
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
    /// The broker's topic manager (creates `__consumer_offsets`; resolves its configs with dynamic values).
    topics: Arc<TopicManager>,
    /// Partition count of `__consumer_offsets` used for placement: the existing topic's, else the config's.
    num_partitions: AtomicI32,
    /// Set once `__consumer_offsets` is known to exist with its partitions hosted: by the creation that
    /// returned, or by the first caller of [`ensure_offsets_topic`](Self::ensure_offsets_topic) that finds it
    /// under the creation lock; cleared when the topic is found deleted. The topic is in the metadata before
    /// the creation has opened its partitions, so its presence there alone let a JoinGroup through whose
    /// group write then found its partition not hosted (the member then waited out its session timeout).
    offsets_topic_ready: AtomicBool,
    state: Mutex<State>,
    loaded: AtomicBool,
    timer: Notify,
    /// Serializes the creation of `__consumer_offsets` (held across the controller round trip in a cluster;
    /// never held with `state`).
    create_lock: tokio::sync::Mutex<()>,
    /// Coordinate only the partitions given by [`GroupCoordinatorService::on_partition_leadership`] (true with
    /// a cluster, or after [`GroupCoordinatorService::with_cluster_mode`]).
    cluster_mode: bool,
    /// Cluster mode: the `__consumer_offsets` partitions led here. Lock order: `state` before `partitions`.
    partitions: Mutex<HashMap<i32, Coordination>>,
    /// Id source of partition loads (a load whose id is no longer current is discarded).
    load_ids: AtomicU64,
    /// Wall-clock time of the coordinator, its timers and its records (the system clock in a broker).
    clock: Arc<dyn Clock>,
    /// Where a partition load runs: the blocking pool, or a task of the caller's runtime (simulation).
    load_io: BackgroundIo,
    /// The topics image consumer groups assign from, with the metadata offset it was built at.
    topics_image: Mutex<Option<(i64, Arc<coordinator::TopicsImage>)>>,
    /// The groups' own timeouts (their GROUP configs), with the metadata generation they were resolved at.
    group_timeouts: group_timeouts::GroupTimeoutsCache,
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

/// The (topic, partition) pairs of an OffsetCommit or TxnOffsetCommit request's topics.
fn committed_partitions(
    topics: &[(String, Vec<coordinator::OffsetCommitPartition>)],
) -> Vec<(String, i32)> {
    topics
        .iter()
        .flat_map(|(t, ps)| ps.iter().map(move |p| (t.clone(), p.partition_index)))
        .collect()
}

/// Waits until each append reached the HighWatermark in its LeaderEpoch with at least `min_isr` in-sync
/// replicas. Errors: leadership lost → NOT_COORDINATOR; ISR too small or `deadline` passed →
/// COORDINATOR_NOT_AVAILABLE.
async fn wait_appended(
    rm: &ReplicaManager,
    appended: &[Appended],
    min_isr: usize,
    deadline: tokio::time::Instant,
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

/// Maps a failed `__consumer_offsets` append to the coordinator error a client sees (Kafka's coordinator
/// runtime): leadership lost → NOT_COORDINATOR; records that can never fit → UNKNOWN_SERVER_ERROR; a fenced
/// transactional producer → INVALID_PRODUCER_EPOCH; anything
/// else (storage, ISR, timeout) → COORDINATOR_NOT_AVAILABLE.
fn write_error(e: &ReplicaError) -> CoordinatorError {
    match e {
        ReplicaError::NotLeaderOrFollower => CoordinatorError::NotCoordinator,
        // Kafka's coordinator answers records that can never fit with UNKNOWN_SERVER_ERROR (not a retriable
        // code, so clients do not retry a commit that cannot succeed).
        ReplicaError::Storage(
            storage::StorageError::MessageTooLarge { .. }
            | storage::StorageError::RecordListTooLarge { .. },
        ) => CoordinatorError::RecordsTooLarge,
        ReplicaError::Storage(storage::StorageError::InvalidProducerEpoch(_)) => {
            CoordinatorError::InvalidProducerEpoch
        }
        _ => CoordinatorError::NotAvailable,
    }
}

impl GroupCoordinatorService {
    /// A service with an empty, not yet loaded coordinator for a broker with static config `config`. With
    /// `cluster_mode` it coordinates only the `__consumer_offsets` partitions led here (see
    /// [`on_partition_leadership`](Self::on_partition_leadership)). `topics` is the broker's one topic manager.
    pub fn new(
        config: BrokerConfig,
        metadata: Arc<MetadataStore>,
        replica_manager: Arc<ReplicaManager>,
        topics: Arc<TopicManager>,
        cluster_mode: bool,
    ) -> GroupCoordinatorService {
        let n = metadata
            .topic(OFFSETS_TOPIC)
            .map_or(config.offsets_topic_num_partitions.max(1), |t| t.partitions);
        GroupCoordinatorService {
            state: Mutex::new(State {
                coordinator: GroupCoordinator::new(group_config(&config)),
                pending: HashMap::new(),
                next_request: 1,
                last_now: 0,
                last_wall: None,
                last_written: HashMap::new(),
                completions: HashMap::new(),
            }),
            config,
            metadata,
            replica_manager,
            topics,
            num_partitions: AtomicI32::new(n),
            offsets_topic_ready: AtomicBool::new(false),
            loaded: AtomicBool::new(false),
            timer: Notify::new(),
            cluster_mode,
            create_lock: tokio::sync::Mutex::new(()),
            partitions: Mutex::new(HashMap::new()),
            load_ids: AtomicU64::new(0),
            clock: Arc::new(types::SystemClock),
            load_io: BackgroundIo::blocking_pool(),
            topics_image: Mutex::new(None),
            group_timeouts: Default::default(),
        }
    }

    /// The topics of `image` as the consumer-group coordinator sees them (name, id, partition count, and each
    /// partition's replica racks for the rack-aware assignors — KIP-881), rebuilt only when the metadata
    /// changed since the last call (its version is the metadata offset, which also moves when a broker
    /// registers with another `broker.rack`).
    pub fn topics_image(&self, image: &metadata::MetadataImage) -> Arc<coordinator::TopicsImage> {
        let mut cached = self.topics_image.lock();
        if let Some((offset, t)) = cached.as_ref() {
            if *offset == image.offset {
                return t.clone();
            }
        }
        let t = Arc::new(topics_image::build(image));
        *cached = Some((image.offset, t.clone()));
        t
    }

    /// Hands the last topics image built by [`topics_image`](Self::topics_image) to the coordinator (the
    /// classic members of consumer groups, KIP-848 online migration, are assigned from it), and the groups'
    /// own timeouts from their GROUP configs.
    fn hand_topics_image(&self, st: &mut State) {
        let timeouts = self.group_timeouts.current(&self.config, &self.metadata);
        st.coordinator.set_group_timeouts(timeouts);
        if let Some((_, t)) = self.topics_image.lock().as_ref() {
            st.coordinator.set_topics_image(t.clone());
        }
    }

    /// A deterministic simulation's seams (issue 13): the coordinator reads `clock` (timers, commit
    /// timestamps, record times), partition loads run as tasks of the calling runtime through `load_io`
    /// (inline: no thread outside the simulation's scheduler), and new member ids come from a stream
    /// seeded with `member_id_seed` ([`GroupCoordinator::with_member_id_seed`]) instead of random UUIDs.
    pub fn with_seams(
        mut self,
        clock: Arc<dyn Clock>,
        load_io: BackgroundIo,
        member_id_seed: u64,
    ) -> GroupCoordinatorService {
        self.clock = clock;
        self.load_io = load_io;
        let st = self.state.get_mut();
        let coordinator = std::mem::replace(
            &mut st.coordinator,
            GroupCoordinator::new(group_config(&self.config)),
        );
        st.coordinator = coordinator.with_member_id_seed(member_id_seed);
        self
    }

    /// Cluster-mode coordination: the service coordinates only
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
            Err(CoordinatorError::LoadInProgress)
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
            Some(Coordination::Loading(_)) => Err(CoordinatorError::LoadInProgress),
            None => Err(CoordinatorError::NotCoordinator),
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

    /// Creates `__consumer_offsets` if it does not exist yet (`offsets.topic.num.partitions` partitions;
    /// `offsets.topic.replication.factor` capped by the brokers *registered* in the cluster, so a one- or
    /// two-broker cluster still gets a coordinator). Fenced brokers count: while one is down or restarting the
    /// controller cannot place every replica, the creation fails and the caller answers
    /// COORDINATOR_NOT_AVAILABLE until it is back — as Kafka does — instead of creating the offsets topic with
    /// fewer replicas for good (found by the fault campaign: capping by the live brokers did that).
    /// Concurrent callers wait for the one creation. Error: COORDINATOR_NOT_AVAILABLE.
    pub async fn ensure_offsets_topic(&self) -> Result<(), CoordinatorError> {
        let exists = self.metadata.topic(OFFSETS_TOPIC).is_some();
        if exists && self.offsets_topic_ready.load(Ordering::Acquire) {
            return Ok(());
        }
        if !exists {
            // Deleted (an operator may delete it; every group is then forgotten): created again below.
            self.offsets_topic_ready.store(false, Ordering::Release);
        }
        // Under the lock a creation by this broker has finished: the topic's presence means it is hosted.
        let _guard = self.create_lock.lock().await;
        if self.metadata.topic(OFFSETS_TOPIC).is_some() {
            self.offsets_topic_ready.store(true, Ordering::Release);
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
        let want = self.config.get(keys::OFFSETS_TOPIC_REPLICATION_FACTOR);
        let cluster_size = i32::try_from(self.topics.registered_brokers()).unwrap_or(i32::MAX);
        let rf = want.min(cluster_size).clamp(1, i32::from(i16::MAX)) as i16;
        match self
            .topics
            .create_topic(OFFSETS_TOPIC, n, rf, configs, false)
            .await
        {
            Ok(t) => {
                self.num_partitions.store(t.partitions, Ordering::Release);
                self.offsets_topic_ready.store(true, Ordering::Release);
                tracing::info!(
                    partitions = t.partitions,
                    elapsed_ms = started.elapsed().as_millis() as u64,
                    "created {OFFSETS_TOPIC}"
                );
                Ok(())
            }
            Err(e) if e.is_already_exists() => {
                self.offsets_topic_ready.store(true, Ordering::Release);
                Ok(())
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot create {OFFSETS_TOPIC}");
                Err(CoordinatorError::NotAvailable)
            }
        }
    }

    /// Loaded and `__consumer_offsets` exists: the precondition of every request that may write.
    pub async fn ready(&self) -> Result<(), CoordinatorError> {
        self.check_loaded()?;
        self.ensure_offsets_topic().await
    }

    /// [`check_coordinator`](Self::check_coordinator) for `group_id`, then `__consumer_offsets` exists.
    async fn ready_for(&self, group_id: &str) -> Result<(), CoordinatorError> {
        self.check_coordinator(group_id)?;
        self.ensure_offsets_topic().await
    }

    /// Fires the coordinator's timers at their deadlines until `shutdown` flips.
    pub async fn run_timers(self: Arc<Self>, mut shutdown: watch::Receiver<bool>) {
        loop {
            let wait = {
                let mut st = self.state.lock();
                match st.coordinator.next_deadline() {
                    Some(d) if self.is_loaded() => {
                        let now = st.now(&*self.clock);
                        Duration::from_millis(d.saturating_sub(now).max(0) as u64)
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
            let now = st.now(&*self.clock);
            self.hand_topics_image(&mut st);
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
            let now = st.now(&*self.clock);
            self.hand_topics_image(&mut st);
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
        self.ready_for(&req.group_id).await?;
        let partitions = committed_partitions(&req.topics);
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
        let records: Vec<ToPersist<'_>> = effects
            .iter()
            .filter_map(|e| match e {
                Effect::Persist(r) => Some((None, r)),
                Effect::PersistTransactional {
                    producer_id,
                    producer_epoch,
                    record,
                } => Some((Some((*producer_id, *producer_epoch)), record)),
                _ => None,
            })
            .collect();
        let written = self.persist(&records);
        let mut replies = Vec::new();
        let mut groups = Vec::new();
        for e in effects {
            let parked = match e {
                Effect::JoinResponse { request, response } => match st.pending.remove(&request) {
                    Some((g, Pending::Join(tx))) => Some((g, Reply::Join(tx, response))),
                    _ => None,
                },
                Effect::SyncResponse { request, response } => match st.pending.remove(&request) {
                    Some((g, Pending::Sync(tx))) => Some((g, Reply::Sync(tx, response))),
                    _ => None,
                },
                Effect::Persist(_) | Effect::PersistTransactional { .. } => None,
            };
            if let Some((g, reply)) = parked {
                groups.push(g);
                replies.push(reply);
            }
        }
        match &written {
            // Cluster mode: answers wait until the ISR has every group record written so far to their
            // groups' partitions (this call's, e.g. the leader's SyncGroup storing the assignment, and
            // earlier ones they were read from), as Kafka answers only after those writes commit; if
            // that fails, the members get the write's error and rejoin.
            Ok(appended) => {
                self.note_written(st, appended);
                let waits = self.unreplicated(st, &groups);
                if self.cluster_mode && !waits.is_empty() && !replies.is_empty() {
                    self.reply_when_replicated(waits, replies);
                } else {
                    replies.into_iter().for_each(Reply::send);
                }
            }
            // The records were not written (e.g. a group record larger than max.message.bytes): the
            // answers carry the error, so no member goes on from state the log does not have.
            Err(code) => replies.into_iter().for_each(|r| r.fail(*code)),
        }
        written
    }

    /// JoinGroup: parks until the coordinator answers (the rebalance completes, or at once on errors).
    /// Errors: see [`check_coordinator`](Self::check_coordinator), COORDINATOR_NOT_AVAILABLE.
    pub async fn join_group(&self, req: JoinGroupRequest) -> Result<JoinResult, CoordinatorError> {
        self.ready_for(&req.group_id).await?;
        let group = req.group_id.clone();
        let (tx, rx) = oneshot::channel();
        // A failed write of the group's records is not reported to the parked members (the group is
        // unloaded, and they are answered NOT_COORDINATOR, when leadership is lost).
        let _ = self.call(Some(&group), |st, now| {
            let id = st.park(&group, Pending::Join(tx));
            ((), st.coordinator.join_group(now, id, req))
        })?;
        rx.await.unwrap_or(Err(CoordinatorError::Dropped))
    }

    /// SyncGroup: parks until the leader's assignment arrives (or at once on errors / for the leader).
    /// Errors: see [`check_coordinator`](Self::check_coordinator), COORDINATOR_NOT_AVAILABLE.
    pub async fn sync_group(&self, req: SyncGroupRequest) -> Result<SyncResult, CoordinatorError> {
        self.ready_for(&req.group_id).await?;
        let group = req.group_id.clone();
        let (tx, rx) = oneshot::channel();
        // The parked SyncGroups get a failed write's error; the group then rebalances (Kafka's classic
        // coordinator), so no later SyncGroup is answered from the assignment the log lacks.
        let _ = self.call_with_undo(
            Some(&group),
            |st, now| {
                let id = st.park(&group, Pending::Sync(tx));
                ((), st.coordinator.sync_group(now, id, req), now)
            },
            |st, now| {
                let fx = st.coordinator.assignment_not_written(now, &group);
                let _ = self.apply(st, fx);
            },
        )?;
        rx.await.unwrap_or(Err(CoordinatorError::Dropped))
    }

    /// Runs a call that names no group and answers at once (`Outcome`-returning coordinator methods).
    /// Returns the response and whether its records were written. Calls about one group use
    /// [`with_group`](Self::with_group).
    pub async fn with<T>(
        &self,
        f: impl FnOnce(&mut GroupCoordinator, i64) -> coordinator::Outcome<T>,
    ) -> Result<(T, bool), CoordinatorError> {
        self.ready().await?;
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
    pub async fn with_group<T>(
        &self,
        group_id: &str,
        f: impl FnOnce(&mut GroupCoordinator, i64) -> coordinator::Outcome<T>,
    ) -> Result<(T, Written), CoordinatorError> {
        self.ready_for(group_id).await?;
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
        self.ready_for(group_id).await?;
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
    fn replication_bounds(&self) -> (usize, tokio::time::Instant) {
        let timeout = self.config.get(keys::OFFSETS_COMMIT_TIMEOUT_MS).max(0) as u64;
        let deadline = tokio::time::Instant::now() + Duration::from_millis(timeout);
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

#[cfg(test)]
mod tests;
#[cfg(test)]
mod txn_tests;
