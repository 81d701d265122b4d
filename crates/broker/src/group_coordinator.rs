//! The runtime around the pure [`coordinator::GroupCoordinator`]: locking, parked JoinGroup/SyncGroup
//! requests, the timer task, the internal `__consumer_offsets` topic, and loading it at startup.
//!
//! Source: Kafka's `GroupCoordinatorService` / `CoordinatorRuntime` (classic groups only), KIP-345, KIP-394.
//!
//! - **`__consumer_offsets`** (`offsets.topic.num.partitions` partitions, default 50; replication factor 1;
//!   `cleanup.policy=compact`, `segment.bytes=104857600` as Kafka's `offsets.topic.segment.bytes`) is created
//!   lazily, as Kafka does, by the first FindCoordinator for a group or the first group request that writes.
//!   The log cleaner compacts it like any compacted topic (latest record per key; tombstones kept for
//!   `delete.retention.ms`); loading tolerates the offset gaps and emptied batches that compaction leaves.
//! - **Records**: each effect [`Effect::Persist`] of one coordinator call is encoded with
//!   [`coordinator::encode_record`] and appended, one uncompressed batch per `__consumer_offsets` partition
//!   ([`coordinator::partition_for`]), through [`ReplicaManager::append`] ("acks" = appended to the leader log,
//!   which on a single node is also the HighWatermark). Persisting happens while the coordinator mutex is held,
//!   so records of one group reach the log in the order the coordinator produced them.
//! - **Ordering rule**: every `Persist` of a call is written before any response that call produced is sent.
//! - **Loading**: [`GroupCoordinatorService::load`] (run on the blocking pool after the listener is up) replays
//!   every partition of `__consumer_offsets` from its LogStartOffset to its HighWatermark into the coordinator
//!   and then calls `loaded(now)`. Records that do not decode (other group types, garbage) are skipped with a
//!   warning. Until loading completes every group request gets COORDINATOR_LOAD_IN_PROGRESS (14).
//! - **Timers**: [`GroupCoordinatorService::run_timers`] sleeps until `next_deadline()` and calls `tick`; every
//!   call that may move the deadline wakes it through a [`Notify`].
//! - **Time**: wall-clock milliseconds, forced monotone (the coordinator requires non-decreasing `now_ms`).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
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
use storage::StorageError;
use tokio::sync::{oneshot, watch, Notify};

use crate::config::BrokerConfig;
use crate::metadata::MetadataStore;
use crate::replica_manager::{now_ms, ReplicaManager};
use crate::topics::TopicManager;

/// Name of the internal topic holding committed offsets and group metadata.
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";

/// `offsets.topic.segment.bytes` default (100 MiB).
const OFFSETS_TOPIC_SEGMENT_BYTES: &str = "104857600";

/// Bytes read per step while loading a partition.
const LOAD_READ_BYTES: usize = 4 * 1024 * 1024;

/// A request-level failure of the group coordinator, as a Kafka error code: COORDINATOR_LOAD_IN_PROGRESS (14)
/// while loading, COORDINATOR_NOT_AVAILABLE (15) when `__consumer_offsets` cannot be created.
pub type CoordinatorError = ErrorCode;

enum Pending {
    Join(oneshot::Sender<JoinResult>),
    Sync(oneshot::Sender<SyncResult>),
}

struct State {
    coordinator: GroupCoordinator,
    pending: HashMap<RequestId, Pending>,
    next_request: RequestId,
    last_now: i64,
}

impl State {
    /// Wall-clock now, never below the previous value handed to the coordinator.
    fn now(&mut self) -> i64 {
        self.last_now = self.last_now.max(now_ms());
        self.last_now
    }

    fn park(&mut self, p: Pending) -> RequestId {
        let id = self.next_request;
        self.next_request += 1;
        self.pending.insert(id, p);
        id
    }
}

/// The broker's group coordinator service (one per broker; it owns every group on a single node).
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
}

impl std::fmt::Debug for GroupCoordinatorService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCoordinatorService")
            .field("loaded", &self.loaded.load(Ordering::Relaxed))
            .field(
                "num_partitions",
                &self.num_partitions.load(Ordering::Relaxed),
            )
            .finish()
    }
}

/// The coordinator settings taken from the broker config (`group.*`, `offsets.*`).
pub fn group_config(config: &BrokerConfig) -> GroupConfig {
    let d = GroupConfig::default();
    GroupConfig {
        group_min_session_timeout_ms: config.group_min_session_timeout_ms,
        group_max_session_timeout_ms: config.group_max_session_timeout_ms,
        group_initial_rebalance_delay_ms: config
            .group_initial_rebalance_delay_ms
            .clamp(0, i64::from(i32::MAX)) as i32,
        offsets_retention_ms: config.offsets_retention_ms,
        offsets_topic_num_partitions: config.offsets_topic_num_partitions.max(1),
        ..d
    }
}

impl GroupCoordinatorService {
    /// A service with an empty, not yet loaded coordinator.
    pub fn new(
        config: BrokerConfig,
        metadata: Arc<MetadataStore>,
        replica_manager: Arc<ReplicaManager>,
    ) -> GroupCoordinatorService {
        let topics = TopicManager::new(config.clone(), metadata.clone(), replica_manager.clone());
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
            create_lock: Mutex::new(()),
        }
    }

    /// True once [`GroupCoordinatorService::load`] has finished.
    pub fn is_loaded(&self) -> bool {
        self.loaded.load(Ordering::Acquire)
    }

    /// Fails with COORDINATOR_LOAD_IN_PROGRESS until loading has finished.
    pub fn check_loaded(&self) -> Result<(), CoordinatorError> {
        if self.is_loaded() {
            Ok(())
        } else {
            Err(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS)
        }
    }

    /// Creates `__consumer_offsets` if it does not exist yet. Error: COORDINATOR_NOT_AVAILABLE.
    pub fn ensure_offsets_topic(&self) -> Result<(), CoordinatorError> {
        if self.metadata.topic(OFFSETS_TOPIC).is_some() {
            return Ok(());
        }
        let _guard = self.create_lock.lock();
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
        match self
            .topics
            .create_topic(OFFSETS_TOPIC, n, 1, configs, false)
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

    /// Replays `__consumer_offsets` into the coordinator, then marks it loaded (blocking; call from the
    /// blocking pool). Returns the number of records replayed.
    pub fn load(&self) -> usize {
        let started = std::time::Instant::now();
        let mut replayed = 0usize;
        let mut skipped = 0usize;
        if let Some(topic) = self.metadata.topic(OFFSETS_TOPIC) {
            self.num_partitions
                .store(topic.partitions, Ordering::Release);
            let mut st = self.state.lock();
            for p in 0..topic.partitions {
                let Some(partition) = self.replica_manager.partition(OFFSETS_TOPIC, p) else {
                    tracing::warn!(partition = p, "{OFFSETS_TOPIC} partition is not hosted");
                    continue;
                };
                let (start, hw) = {
                    let log = partition.log.lock();
                    (log.log_start_offset(), log.high_watermark())
                };
                let mut offset = start;
                while offset < hw {
                    let read = partition.log.lock().read(offset, LOAD_READ_BYTES, hw, true);
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
                                                st.coordinator.replay(rec);
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
            }
            let now = st.now();
            let fx = st.coordinator.loaded(now);
            self.apply(&mut st, fx);
        } else {
            let mut st = self.state.lock();
            let now = st.now();
            let fx = st.coordinator.loaded(now);
            self.apply(&mut st, fx);
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
            self.apply(&mut st, fx);
        }
    }

    /// Runs `f` on the coordinator under the lock, persists the effects it returns, completes parked requests,
    /// and wakes the timer task. Returns `f`'s value and whether persisting succeeded.
    fn call<T>(&self, f: impl FnOnce(&mut State, i64) -> (T, Vec<Effect>)) -> (T, bool) {
        let out = {
            let mut st = self.state.lock();
            let now = st.now();
            let (value, fx) = f(&mut st, now);
            let ok = self.apply(&mut st, fx);
            (value, ok)
        };
        self.timer.notify_one();
        out
    }

    /// Persists every `Persist` effect (in order), then completes the parked requests the effects answer.
    /// Returns false if a record could not be written.
    fn apply(&self, st: &mut State, effects: Vec<Effect>) -> bool {
        let records: Vec<&GroupRecord> = effects
            .iter()
            .filter_map(|e| match e {
                Effect::Persist(r) => Some(r),
                _ => None,
            })
            .collect();
        let ok = self.persist(&records);
        for e in effects {
            match e {
                Effect::JoinResponse { request, response } => {
                    if let Some(Pending::Join(tx)) = st.pending.remove(&request) {
                        let _ = tx.send(response);
                    }
                }
                Effect::SyncResponse { request, response } => {
                    if let Some(Pending::Sync(tx)) = st.pending.remove(&request) {
                        let _ = tx.send(response);
                    }
                }
                Effect::Persist(_) => {}
            }
        }
        ok
    }

    /// Appends `records` to `__consumer_offsets`: one batch per partition, records in call order.
    fn persist(&self, records: &[&GroupRecord]) -> bool {
        if records.is_empty() {
            return true;
        }
        if self.ensure_offsets_topic().is_err() {
            return false;
        }
        let n = self.num_partitions.load(Ordering::Acquire);
        let mut by_partition: BTreeMap<i32, Vec<&GroupRecord>> = BTreeMap::new();
        for r in records {
            by_partition
                .entry(partition_for(r.group_id(), n))
                .or_default()
                .push(r);
        }
        let now = now_ms();
        let mut ok = true;
        for (p, recs) in by_partition {
            let mut builder = RecordBatchBuilder::new(Compression::None);
            for r in recs {
                let (key, value) = encode_record(r);
                builder.append(now, Some(key), value, Vec::new());
            }
            let result = builder
                .build()
                .map_err(|e| StorageError::CorruptMessage(e.to_string()))
                .and_then(
                    |bytes| match self.replica_manager.partition(OFFSETS_TOPIC, p) {
                        Some(partition) => self.replica_manager.append(&partition, bytes),
                        None => Err(StorageError::LogOffline(format!("{OFFSETS_TOPIC}-{p}"))),
                    },
                );
            if let Err(e) = result {
                tracing::error!(partition = p, error = %e, "cannot write group records");
                ok = false;
            }
        }
        ok
    }

    /// JoinGroup: parks until the coordinator answers (the rebalance completes, or at once on errors).
    pub async fn join_group(&self, req: JoinGroupRequest) -> Result<JoinResult, CoordinatorError> {
        self.ready()?;
        let member_id = req.member_id.clone();
        let (tx, rx) = oneshot::channel();
        self.call(|st, now| {
            let id = st.park(Pending::Join(tx));
            ((), st.coordinator.join_group(now, id, req))
        });
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
    pub async fn sync_group(&self, req: SyncGroupRequest) -> Result<SyncResult, CoordinatorError> {
        self.ready()?;
        let (tx, rx) = oneshot::channel();
        self.call(|st, now| {
            let id = st.park(Pending::Sync(tx));
            ((), st.coordinator.sync_group(now, id, req))
        });
        Ok(rx.await.unwrap_or_else(|_| SyncResult {
            error_code: ErrorCode::UNKNOWN_SERVER_ERROR.0,
            protocol_type: None,
            protocol_name: None,
            assignment: Bytes::new(),
        }))
    }

    /// Runs a call that answers at once (`Outcome`-returning coordinator methods). Returns the response and
    /// whether its records were written.
    pub fn with<T>(
        &self,
        f: impl FnOnce(&mut GroupCoordinator, i64) -> coordinator::Outcome<T>,
    ) -> Result<(T, bool), CoordinatorError> {
        self.ready()?;
        Ok(self.call(|st, now| {
            let o = f(&mut st.coordinator, now);
            (o.response, o.effects)
        }))
    }

    /// Runs a read-only query on the coordinator (after loading).
    pub fn read<T>(&self, f: impl FnOnce(&GroupCoordinator) -> T) -> Result<T, CoordinatorError> {
        self.check_loaded()?;
        let st = self.state.lock();
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
            Arc::new(crate::replica_manager::StandaloneLink),
            30_000,
        ));
        let svc = GroupCoordinatorService::new(config, metadata, rm.clone());
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

    #[tokio::test(flavor = "current_thread")]
    async fn join_and_sync_park_until_answered() {
        let dir = tempfile::tempdir().unwrap();
        let (svc, _rm) = open(dir.path());
        svc.load();
        let join = |member: &str| coordinator::JoinGroupRequest {
            api_version: 5,
            group_id: "g".into(),
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
        };
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
}
