//! The share coordinator's runtime (KIP-932; Kafka's `ShareCoordinatorService`): the durable state of every
//! share-partition — its start offset and the delivery state and count of its in-flight records — kept in
//! the internal topic `__share_group_state`.
//!
//! - **Topic**: `__share_group_state`, `share.coordinator.state.topic.num.partitions` partitions (default 50),
//!   replication factor `share.coordinator.state.topic.replication.factor` (default 3) capped by the brokers
//!   registered, `cleanup.policy=compact`, `min.insync.replicas` from `share.coordinator.state.topic.min.isr`
//!   (default 2, capped by the replication factor). Created lazily by the first write, as Kafka does.
//! - **Placement**: the state of (group, topic id, partition) lives in partition
//!   [`share::share_partition_for`] of the topic; the broker leading that partition is its share coordinator.
//! - **Records**: every write appends one `ShareSnapshot` record (Kafka's format, crate `share`) holding the
//!   whole state of its share-partition; compaction keeps the latest per key; a deleted share-partition is a
//!   tombstone. Writes are acks=all: a write is answered only once the record reached the HighWatermark
//!   (`offsets.commit.timeout.ms` at most), and only then applied in memory, so a read never returns state
//!   that a failover could lose.
//! - **Loading**: lazily, per partition and LeaderEpoch: the first request for a key of a partition this broker
//!   leads replays the partition from its LogStartOffset to its LogEndOffset (on the blocking pool); when the
//!   LeaderEpoch changed since (leadership moved away and back) it is replayed again. A partition led
//!   elsewhere answers NOT_COORDINATOR.
//! - **Fencing** (Kafka's `ShareCoordinatorShard`): a write or read with a LeaderEpoch older than the stored
//!   one is FENCED_LEADER_EPOCH; a write with an older state epoch FENCED_STATE_EPOCH.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use protocol::record::{batches, Compression, RecordBatchBuilder};
use share::{SharePartitionKey, ShareState};
use types::Clock;

use crate::config::BrokerConfig;
use crate::metadata::MetadataStore;
use crate::topics::TopicManager;
use replica::replica_manager::{ReplicaError, ReplicaManager};

/// Name of the internal topic holding share-partition state.
pub const SHARE_STATE_TOPIC: &str = "__share_group_state";

/// Bytes read per step while loading a partition.
const LOAD_READ_BYTES: usize = 4 * 1024 * 1024;

/// A failed share-state request (Kafka's share coordinator errors); mapped to Kafka codes at the server edge (`server::apis::errors`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ShareCoordinatorError {
    /// The key's `__share_group_state` partition is led elsewhere (NOT_COORDINATOR, 16).
    #[error("this broker is not the share coordinator of the key")]
    NotCoordinator,
    /// The partition is being loaded (COORDINATOR_LOAD_IN_PROGRESS, 14).
    #[error("the share coordinator is loading")]
    LoadInProgress,
    /// `__share_group_state` cannot be created or written (COORDINATOR_NOT_AVAILABLE, 15).
    #[error("the share coordinator is not available")]
    NotAvailable,
    /// The writer's LeaderEpoch is older than the stored one (FENCED_LEADER_EPOCH, 74).
    #[error("fenced leader epoch")]
    FencedLeaderEpoch,
    /// The writer's state epoch is older than the stored one (FENCED_STATE_EPOCH, 124).
    #[error("fenced state epoch")]
    FencedStateEpoch,
}

impl ShareCoordinatorError {
    /// Whether the error passes by itself: the key's coordinator is being elected, moves or loads
    /// (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE).
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            ShareCoordinatorError::NotCoordinator
                | ShareCoordinatorError::LoadInProgress
                | ShareCoordinatorError::NotAvailable
        )
    }
}

/// The stored state of one share-partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredShareState {
    /// The LeaderEpoch of the data partition's leader that wrote it last.
    pub leader_epoch: i32,
    /// The state.
    pub state: ShareState,
}

#[derive(Default)]
struct Core {
    /// State by key.
    states: HashMap<SharePartitionKey, StoredShareState>,
    /// `__share_group_state` partition → the LeaderEpoch it was loaded in.
    loaded: HashMap<i32, i32>,
}

/// The broker's share coordinator (one per broker).
pub struct ShareCoordinatorService {
    config: BrokerConfig,
    metadata: Arc<MetadataStore>,
    replica_manager: Arc<ReplicaManager>,
    topics: Arc<TopicManager>,
    num_partitions: AtomicI32,
    topic_ready: AtomicBool,
    create_lock: tokio::sync::Mutex<()>,
    /// Serializes loads (one replay at a time; a load is rare).
    load_lock: tokio::sync::Mutex<()>,
    core: Mutex<Core>,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for ShareCoordinatorService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShareCoordinatorService")
            .finish_non_exhaustive()
    }
}

impl ShareCoordinatorService {
    /// A service for a broker with static config `config`.
    pub fn new(
        config: BrokerConfig,
        metadata: Arc<MetadataStore>,
        replica_manager: Arc<ReplicaManager>,
        topics: Arc<TopicManager>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        let n = int_config(&config, "share.coordinator.state.topic.num.partitions", 50).max(1);
        ShareCoordinatorService {
            config,
            metadata,
            replica_manager,
            topics,
            num_partitions: AtomicI32::new(n),
            topic_ready: AtomicBool::new(false),
            create_lock: tokio::sync::Mutex::new(()),
            load_lock: tokio::sync::Mutex::new(()),
            core: Mutex::new(Core::default()),
            clock,
        }
    }

    /// The `__share_group_state` partition of `key`.
    pub fn partition_for(&self, key: &SharePartitionKey) -> i32 {
        let n = match self.metadata.topic(SHARE_STATE_TOPIC) {
            Some(t) => t.partitions,
            None => self.num_partitions.load(Ordering::Acquire),
        };
        share::share_partition_for(&key.group_id, key.topic_id, key.partition, n.max(1))
    }

    /// ReadShareGroupState: the stored state of `key` (`None`: never initialized). A `leader_epoch` newer than
    /// the stored one is remembered; an older one is FENCED_LEADER_EPOCH.
    pub async fn read(
        &self,
        key: &SharePartitionKey,
        leader_epoch: i32,
    ) -> Result<Option<StoredShareState>, ShareCoordinatorError> {
        self.ensure_topic().await?;
        let p = self.partition_for(key);
        self.ensure_loaded(p).await?;
        let mut core = self.core.lock();
        match core.states.get_mut(key) {
            None => Ok(None),
            Some(s) if leader_epoch >= 0 && leader_epoch < s.leader_epoch => {
                Err(ShareCoordinatorError::FencedLeaderEpoch)
            }
            Some(s) => {
                s.leader_epoch = s.leader_epoch.max(leader_epoch);
                Ok(Some(s.clone()))
            }
        }
    }

    /// WriteShareGroupState (and InitializeShareGroupState): replaces the state of `key` with `state`,
    /// written by a leader in `leader_epoch` (-1: not checked). Answered once the record is replicated.
    pub async fn write(
        &self,
        key: &SharePartitionKey,
        leader_epoch: i32,
        state: ShareState,
    ) -> Result<(), ShareCoordinatorError> {
        self.ensure_topic().await?;
        let p = self.partition_for(key);
        self.ensure_loaded(p).await?;
        let stored = {
            let core = self.core.lock();
            let current = core.states.get(key);
            if let Some(c) = current {
                if leader_epoch >= 0 && leader_epoch < c.leader_epoch {
                    return Err(ShareCoordinatorError::FencedLeaderEpoch);
                }
                if state.state_epoch < c.state.state_epoch {
                    return Err(ShareCoordinatorError::FencedStateEpoch);
                }
            }
            let leader_epoch = leader_epoch.max(current.map_or(-1, |c| c.leader_epoch));
            StoredShareState {
                leader_epoch,
                state,
            }
        };
        let (k, v) = encode_snapshot(key, &stored, self.clock.now_ms());
        self.append(p, k, Some(v)).await?;
        self.core.lock().states.insert(key.clone(), stored);
        Ok(())
    }

    /// DeleteShareGroupState: tombstones `key` (nothing when it has no state).
    pub async fn delete(&self, key: &SharePartitionKey) -> Result<(), ShareCoordinatorError> {
        self.ensure_topic().await?;
        let p = self.partition_for(key);
        self.ensure_loaded(p).await?;
        if !self.core.lock().states.contains_key(key) {
            return Ok(());
        }
        let (k, _) = encode_snapshot(
            key,
            &StoredShareState {
                leader_epoch: -1,
                state: ShareState::initial(0),
            },
            0,
        );
        self.append(p, k, None).await?;
        self.core.lock().states.remove(key);
        Ok(())
    }

    /// Every key of `group_id` with state, among the partitions loaded here (standalone: after
    /// [`load_all`](Self::load_all), every key).
    pub fn group_states(&self, group_id: &str) -> BTreeMap<(uuid::Uuid, i32), StoredShareState> {
        let core = self.core.lock();
        (core.states.iter())
            .filter(|(k, _)| k.group_id == group_id)
            .map(|(k, s)| ((k.topic_id, k.partition), s.clone()))
            .collect()
    }

    /// Loads every partition of `__share_group_state` this broker leads (when the topic exists).
    pub async fn load_all(&self) {
        let Some(t) = self.metadata.topic(SHARE_STATE_TOPIC) else {
            return;
        };
        for p in 0..t.partitions {
            if let Err(e) = self.ensure_loaded(p).await {
                tracing::debug!(partition = p, error = %e, "share state partition not loaded");
            }
        }
    }

    /// Creates `__share_group_state` when it does not exist (see the module doc).
    pub async fn ensure_topic(&self) -> Result<(), ShareCoordinatorError> {
        if self.topic_ready.load(Ordering::Acquire)
            && self.metadata.topic(SHARE_STATE_TOPIC).is_some()
        {
            return Ok(());
        }
        let _guard = self.create_lock.lock().await;
        if let Some(t) = self.metadata.topic(SHARE_STATE_TOPIC) {
            self.num_partitions.store(t.partitions, Ordering::Release);
            self.topic_ready.store(true, Ordering::Release);
            return Ok(());
        }
        let n = self.num_partitions.load(Ordering::Acquire);
        let want = int_config(
            &self.config,
            "share.coordinator.state.topic.replication.factor",
            3,
        );
        let cluster_size = i32::try_from(self.topics.registered_brokers()).unwrap_or(i32::MAX);
        let rf = want.min(cluster_size).clamp(1, i32::from(i16::MAX)) as i16;
        let min_isr = int_config(&self.config, "share.coordinator.state.topic.min.isr", 2)
            .clamp(1, i32::from(rf));
        let configs = BTreeMap::from([
            ("cleanup.policy".to_string(), "compact".to_string()),
            ("min.insync.replicas".to_string(), min_isr.to_string()),
            ("segment.bytes".to_string(), "104857600".to_string()),
        ]);
        match self
            .topics
            .create_topic(SHARE_STATE_TOPIC, n, rf, configs, false)
            .await
        {
            Ok(t) => {
                self.num_partitions.store(t.partitions, Ordering::Release);
                self.topic_ready.store(true, Ordering::Release);
                tracing::info!(partitions = t.partitions, "created {SHARE_STATE_TOPIC}");
                Ok(())
            }
            Err(e) if e.is_already_exists() => {
                self.topic_ready.store(true, Ordering::Release);
                Ok(())
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot create {SHARE_STATE_TOPIC}");
                Err(ShareCoordinatorError::NotAvailable)
            }
        }
    }

    /// Replays partition `p` when this broker leads it and has not loaded it in its current LeaderEpoch.
    async fn ensure_loaded(&self, p: i32) -> Result<(), ShareCoordinatorError> {
        let partition = self.leader_partition(p)?;
        let epoch = partition.leader_epoch().get();
        if self.core.lock().loaded.get(&p) == Some(&epoch) {
            return Ok(());
        }
        let _guard = self.load_lock.lock().await;
        if self.core.lock().loaded.get(&p) == Some(&epoch) {
            return Ok(());
        }
        let records = tokio::task::spawn_blocking(move || read_partition(&partition))
            .await
            .map_err(|_| ShareCoordinatorError::NotAvailable)?;
        let mut core = self.core.lock();
        let n = self.num_partitions.load(Ordering::Acquire);
        core.states.retain(|k, _| {
            share::share_partition_for(&k.group_id, k.topic_id, k.partition, n) != p
        });
        let mut count = 0usize;
        for (key, value) in records {
            match decode_snapshot(&key, value.as_deref(), &core.states) {
                Ok((k, Some(s))) => {
                    core.states.insert(k, s);
                    count += 1;
                }
                Ok((k, None)) => {
                    core.states.remove(&k);
                }
                Err(e) => tracing::warn!(partition = p, error = %e, "skipping share state record"),
            }
        }
        core.loaded.insert(p, epoch);
        tracing::debug!(
            partition = p,
            records = count,
            "loaded {SHARE_STATE_TOPIC} partition"
        );
        Ok(())
    }

    fn leader_partition(
        &self,
        p: i32,
    ) -> Result<Arc<replica::partition::Partition>, ShareCoordinatorError> {
        match self.replica_manager.partition(SHARE_STATE_TOPIC, p) {
            Some(partition) if partition.is_leader() => Ok(partition),
            _ => Err(ShareCoordinatorError::NotCoordinator),
        }
    }

    /// Appends one record to partition `p` and waits until it is replicated (acks=all).
    async fn append(
        &self,
        p: i32,
        key: bytes::Bytes,
        value: Option<bytes::Bytes>,
    ) -> Result<(), ShareCoordinatorError> {
        let partition = self.leader_partition(p)?;
        let now = self.clock.now_ms();
        let mut builder = RecordBatchBuilder::new(Compression::None);
        builder.append(now, Some(key), value, Vec::new());
        let bytes = builder
            .build()
            .map_err(|_| ShareCoordinatorError::NotAvailable)?;
        let min_isr = partition.min_insync_replicas().max(1);
        let origin = storage::AppendOrigin::Coordinator;
        let (info, epoch) = partition
            .append_as_leader_with_origin(bytes, origin, min_isr, now)
            .map_err(|e| write_error(&e))?;
        let timeout = self
            .config
            .get(crate::config::keys::OFFSETS_COMMIT_TIMEOUT_MS)
            .max(0) as u64;
        let deadline = tokio::time::Instant::now() + Duration::from_millis(timeout);
        self.replica_manager
            .wait_for_replication(
                &partition,
                info.last_offset.next(),
                epoch,
                min_isr,
                deadline,
            )
            .await
            .map_err(|e| write_error(&e))
    }
}

fn write_error(e: &ReplicaError) -> ShareCoordinatorError {
    tracing::warn!(error = %e, "cannot write {SHARE_STATE_TOPIC}");
    match e {
        ReplicaError::NotLeaderOrFollower => ShareCoordinatorError::NotCoordinator,
        _ => ShareCoordinatorError::NotAvailable,
    }
}

fn int_config(config: &BrokerConfig, key: &str, default: i32) -> i32 {
    (config.value(key).and_then(|v| v.trim().parse().ok())).unwrap_or(default)
}

/// Every (key, value) record of `partition` from its LogStartOffset to its LogEndOffset.
fn read_partition(
    partition: &replica::partition::Partition,
) -> Vec<(bytes::Bytes, Option<bytes::Bytes>)> {
    let mut out = Vec::new();
    let (start, end) = (partition.log_start_offset(), partition.log_end_offset());
    let mut offset = start;
    while offset < end {
        let Ok(info) = partition.read_records(offset, LOAD_READ_BYTES, end, true) else {
            break;
        };
        let Ok(bytes) = storage::records_to_bytes(&info.records) else {
            break;
        };
        let before = offset;
        for batch in batches(&bytes) {
            let Ok(batch) = batch else { break };
            let next = types::Offset(batch.next_offset());
            if next <= offset || batch.is_control() {
                offset = offset.max(next);
                continue;
            }
            if let Ok(records) = batch.records() {
                for r in records.iter().filter(|r| r.offset >= offset.get()) {
                    if let Some(k) = &r.key {
                        out.push((k.clone(), r.value.clone()));
                    }
                }
            }
            offset = next;
        }
        if offset == before {
            break;
        }
    }
    out
}

/// The ShareSnapshot record of `key` holding `stored` (a full snapshot: Runnel writes no ShareUpdates).
fn encode_snapshot(
    key: &SharePartitionKey,
    stored: &StoredShareState,
    now_ms: i64,
) -> (bytes::Bytes, bytes::Bytes) {
    let value = share::ShareSnapshotValue {
        snapshot_epoch: 0,
        state_epoch: stored.state.state_epoch,
        leader_epoch: stored.leader_epoch,
        start_offset: stored.state.start_offset,
        delivery_complete_count: -1,
        create_timestamp: now_ms,
        write_timestamp: now_ms,
        state_batches: stored.state.batches.clone(),
    };
    let record = share::ShareRecord::Snapshot {
        key: key.clone(),
        value: Some(value),
    };
    let (k, v) = share::encode_record(&record);
    (k, v.unwrap_or_default())
}

/// A `__share_group_state` record: its key and, applied over `current`, the new state (`None`: deleted).
/// A ShareUpdate (Kafka writes them between snapshots) is merged over the current state.
fn decode_snapshot(
    key: &[u8],
    value: Option<&[u8]>,
    current: &HashMap<SharePartitionKey, StoredShareState>,
) -> Result<(SharePartitionKey, Option<StoredShareState>), share::RecordDecodeError> {
    Ok(match share::decode_record(key, value)? {
        share::ShareRecord::Snapshot { key, value } => {
            let stored = value.map(|v| StoredShareState {
                leader_epoch: v.leader_epoch,
                state: ShareState {
                    state_epoch: v.state_epoch,
                    start_offset: v.start_offset,
                    batches: v.state_batches,
                },
            });
            (key, stored)
        }
        share::ShareRecord::Update { key, value: None } => (key, None),
        share::ShareRecord::Update {
            key,
            value: Some(u),
        } => {
            let mut stored = current.get(&key).cloned().unwrap_or(StoredShareState {
                leader_epoch: -1,
                state: ShareState::initial(0),
            });
            if u.start_offset >= 0 {
                stored.state.start_offset = u.start_offset;
            }
            if u.leader_epoch >= 0 {
                stored.leader_epoch = u.leader_epoch;
            }
            let start = stored.state.start_offset;
            stored.state.batches =
                share::combine_state_batches(&stored.state.batches, &u.state_batches, start);
            (key, Some(stored))
        }
    })
}
