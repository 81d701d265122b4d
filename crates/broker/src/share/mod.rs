//! The partition leader's side of share groups (KIP-932; Kafka's `SharePartitionManager`): one
//! [`share::SharePartition`] per (share group, topic-partition) led here, holding which records are in
//! flight, who acquired them until when, and how often each was delivered.
//!
//! - **Loading**: the first ShareFetch of a group for a partition (and the first after the partition's
//!   LeaderEpoch changed) reads the share-partition's state from the share coordinator
//!   ([`crate::share_coordinator`]); a share-partition never initialized starts at
//!   `share.auto.offset.reset` of its group (`latest`, Kafka's default: the HighWatermark; `earliest`: the
//!   LogStartOffset; `by_duration:PnDTnHnMn.nS`: the first offset at or after now minus the duration) and that
//!   initial state is written before any record is acquired.
//! - **Acquiring** (ShareFetch): the log is read from [`share::SharePartition::next_fetch_offset`] up to the
//!   HighWatermark; the records of the batches read are acquired for the member for
//!   `share.record.lock.duration.ms` of its group. Acquisition is not persisted (as in Kafka): after a crash
//!   an acquired record is Available again with the delivery count last persisted.
//! - **Acknowledging** (ShareFetch and ShareAcknowledge): ACCEPT, RELEASE, REJECT (and GAP, RENEW) are
//!   applied and the new state is written to the share coordinator before the request is answered, so an
//!   acknowledged record is never delivered again, even after `kill -9`.
//! - **Releasing**: a member's acquired records are released when its share session closes.
//! - **Locks**: [`SharePartitionManager::run_timers`] expires acquisition locks at their deadlines (the
//!   records become Available, or Archived at `share.delivery.count.limit`) and persists the result.
//!
//! Each share-partition is behind its own async mutex, held across its persistence, so its writes reach the
//! share coordinator in the order they were made.

pub mod persister;
pub mod sessions;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use protocol::record::{RecordBatchHeader, Records, RECORD_BATCH_OVERHEAD};
use replica::partition::{FetchSource, IsolationLevel, Partition, PartitionRead};
use replica::replica_manager::{FetchPartitionRequest, ReplicaManager};
use share::{
    AcknowledgementBatch, AcquiredRecords, SharePartition, SharePartitionConfig, SharePartitionKey,
    ShareState,
};
use tokio::sync::{watch, Notify};
use types::Clock;

use crate::share_coordinator::{ShareCoordinatorError, ShareCoordinatorService};
use persister::SharePersister;
use sessions::ShareSessionCache;

/// Where a share-partition never initialized starts (`share.auto.offset.reset`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AutoOffsetReset {
    /// The HighWatermark (Kafka's default).
    Latest,
    /// The LogStartOffset.
    Earliest,
    /// The first offset whose timestamp is at or after now minus this many ms.
    ByDuration(i64),
}

/// The settings of one share group (its group configs over the broker's `group.share.*` defaults).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShareGroupSettings {
    /// `share.record.lock.duration.ms` (default 30000).
    pub record_lock_duration_ms: i64,
    /// `share.delivery.count.limit` (default 5).
    pub delivery_count_limit: i16,
    /// `share.partition.max.record.locks` (default 2000).
    pub max_record_locks: usize,
    /// `share.auto.offset.reset` (default latest).
    pub auto_offset_reset: AutoOffsetReset,
}

impl Default for ShareGroupSettings {
    fn default() -> Self {
        ShareGroupSettings {
            record_lock_duration_ms: 30_000,
            delivery_count_limit: 5,
            max_record_locks: 2000,
            auto_offset_reset: AutoOffsetReset::Latest,
        }
    }
}

/// Resolves a group's settings (group configs over broker defaults).
pub type SettingsResolver = Arc<dyn Fn(&str) -> ShareGroupSettings + Send + Sync>;

/// Why a share-partition operation failed; the server edge answers each with its Kafka code.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SharePartitionError {
    /// The partition is not hosted here (UNKNOWN_TOPIC_OR_PARTITION, 3).
    #[error("unknown topic or partition")]
    UnknownTopicOrPartition,
    /// This broker does not lead the partition (NOT_LEADER_OR_FOLLOWER, 6).
    #[error("not the leader")]
    NotLeaderOrFollower,
    /// The acknowledgements were refused (INVALID_RECORD_STATE, 121, or INVALID_REQUEST, 42).
    #[error(transparent)]
    Share(#[from] share::ShareError),
    /// The share coordinator refused or failed the read or write.
    #[error(transparent)]
    Coordinator(#[from] ShareCoordinatorError),
}

/// What one partition's acquisition produced.
#[derive(Debug, Default)]
pub struct Acquired {
    /// The batches read (they may hold offsets not acquired, which the client skips).
    pub records: Option<Records>,
    /// The acquired offset ranges with their delivery counts.
    pub acquired: Vec<AcquiredRecords>,
}

struct Entry {
    /// `None` until loaded; reloaded when the partition's LeaderEpoch changes.
    sp: Option<(i32, SharePartition)>,
}

/// The share-partitions led by this broker and the share sessions of its members.
pub struct SharePartitionManager {
    replica_manager: Arc<ReplicaManager>,
    persister: SharePersister,
    settings: SettingsResolver,
    partitions: Mutex<HashMap<SharePartitionKey, Arc<tokio::sync::Mutex<Entry>>>>,
    /// The share sessions.
    pub sessions: Mutex<ShareSessionCache>,
    /// Woken when a lock deadline may have moved earlier, or records were released.
    timer: Notify,
    /// Woken (every waiter) when records may have become acquirable: released, expired, acknowledged.
    released: Notify,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for SharePartitionManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharePartitionManager")
            .finish_non_exhaustive()
    }
}

impl SharePartitionManager {
    /// A manager persisting through `coordinator`, with group settings from `settings`.
    pub fn new(
        replica_manager: Arc<ReplicaManager>,
        persister: SharePersister,
        settings: SettingsResolver,
        max_sessions: usize,
        clock: Arc<dyn Clock>,
    ) -> Self {
        SharePartitionManager {
            replica_manager,
            persister,
            settings,
            partitions: Mutex::new(HashMap::new()),
            sessions: Mutex::new(ShareSessionCache::new(max_sessions)),
            timer: Notify::new(),
            released: Notify::new(),
            clock,
        }
    }

    /// This broker's share coordinator (the keys of the `__share_group_state` partitions it leads).
    pub fn coordinator(&self) -> &Arc<ShareCoordinatorService> {
        self.persister.local()
    }

    /// The acquisition lock duration of `group` (ShareFetch's `AcquisitionLockTimeoutMs`).
    pub fn lock_duration_ms(&self, group: &str) -> i64 {
        (self.settings)(group).record_lock_duration_ms
    }

    /// Notified (all waiters) when records may have become acquirable (released, expired, acknowledged):
    /// a parked ShareFetch retries. Separate from the lock timer's wake-up, which a `notify_one` on a shared
    /// `Notify` could hand to a parked fetch instead (the timer then slept past a lock's expiry).
    pub fn released(&self) -> &Notify {
        &self.released
    }

    fn entry(&self, key: &SharePartitionKey) -> Arc<tokio::sync::Mutex<Entry>> {
        self.partitions
            .lock()
            .entry(key.clone())
            .or_insert_with(|| Arc::new(tokio::sync::Mutex::new(Entry { sp: None })))
            .clone()
    }

    /// The led partition `topic`-`index`. Errors: UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER.
    pub fn leader(&self, topic: &str, index: i32) -> Result<Arc<Partition>, SharePartitionError> {
        match self.replica_manager.partition(topic, index) {
            None => Err(SharePartitionError::UnknownTopicOrPartition),
            Some(p) if !p.is_leader() => Err(SharePartitionError::NotLeaderOrFollower),
            Some(p) => Ok(p),
        }
    }

    /// Acquires records of `partition` for `member` of `group` (ShareFetch): at most `max_bytes` read,
    /// `max_records` acquired (exceeded to keep whole batches unless `strict`).
    pub async fn acquire(
        &self,
        group: &str,
        member: &str,
        partition: &Arc<Partition>,
        (max_bytes, max_records, strict): (i32, usize, bool),
    ) -> Result<Acquired, SharePartitionError> {
        let key = key_of(group, partition);
        let entry = self.entry(&key);
        let mut e = entry.lock().await;
        let settings = (self.settings)(group);
        let sp = self.loaded(&key, &mut e, partition, &settings).await?;
        let log_start = partition.log_start_offset().get();
        if log_start > sp.start_offset() {
            sp.log_start_offset_moved(log_start);
        }
        let Some(offset) = sp.next_fetch_offset() else {
            return Ok(Acquired::default());
        };
        let request = FetchPartitionRequest {
            partition: partition.clone(),
            fetch_offset: types::Offset(offset),
            max_bytes,
        };
        let source = FetchSource::Consumer {
            isolation: IsolationLevel::ReadUncommitted,
            leader_only: true,
        };
        let read = self.replica_manager.read(&[request], max_bytes, source);
        let records = match read.into_iter().next() {
            Some(PartitionRead::Records { records, .. }) => records,
            Some(PartitionRead::NotLeader) => return Err(SharePartitionError::NotLeaderOrFollower),
            Some(PartitionRead::Error { error, .. }) => {
                tracing::debug!(error = %error, "share fetch read failed");
                return Ok(Acquired::default());
            }
            None => return Ok(Acquired::default()),
        };
        let spans = batch_spans(&records);
        let bounds: Vec<(i64, i64)> = spans
            .iter()
            .map(|b| (b.base_offset, b.last_offset))
            .collect();
        if bounds.is_empty() {
            return Ok(Acquired::default());
        }
        let now = self.clock.now_ms();
        let acquired = sp.acquire(member, &bounds, max_records, strict, now);
        if acquired.is_empty() {
            return Ok(Acquired::default());
        }
        tracing::debug!(group, member, topic_id = %partition.topic_id(), partition = partition.partition,
            ranges = ?acquired.iter().map(|a| (a.first_offset, a.last_offset, a.delivery_count)).collect::<Vec<_>>(),
            "acquired records");
        self.timer.notify_one();
        Ok(Acquired {
            records: Some(slice_to_acquired(records, &spans, &acquired)),
            acquired,
        })
    }

    /// Applies `member`'s acknowledgements to `partition` and persists the result before returning.
    /// Errors: INVALID_RECORD_STATE / INVALID_REQUEST from the share-partition, the share coordinator's
    /// errors, NOT_LEADER_OR_FOLLOWER.
    pub async fn acknowledge(
        &self,
        group: &str,
        member: &str,
        partition: &Arc<Partition>,
        batches: &[AcknowledgementBatch],
    ) -> Result<(), SharePartitionError> {
        let key = key_of(group, partition);
        let entry = self.entry(&key);
        let mut e = entry.lock().await;
        let settings = (self.settings)(group);
        let epoch = partition.leader_epoch().get();
        let sp = self.loaded(&key, &mut e, partition, &settings).await?;
        let now = self.clock.now_ms();
        let applied = sp.acknowledge(member, batches, now);
        tracing::debug!(group, member, topic_id = %partition.topic_id(), partition = partition.partition,
            batches = ?batches.iter().map(|b| (b.first_offset, b.last_offset)).collect::<Vec<_>>(),
            result = ?applied, "acknowledged records");
        applied?;
        let snapshot = sp.snapshot();
        self.timer.notify_one();
        let persisted = self.persist_or_reload(&key, &mut e, epoch, snapshot).await;
        // Acknowledged records may move the start offset (room in the in-flight window), released ones are
        // Available again: every parked ShareFetch looks again.
        self.released().notify_waiters();
        persisted
    }

    /// Releases every record `member` of `group` holds on any partition here (its share session closed).
    pub async fn release_member(&self, group: &str, member: &str) {
        let entries: Vec<(SharePartitionKey, Arc<tokio::sync::Mutex<Entry>>)> =
            (self.partitions.lock())
                .iter()
                .filter(|(k, _)| k.group_id == group)
                .map(|(k, e)| (k.clone(), e.clone()))
                .collect();
        let now = self.clock.now_ms();
        for (key, entry) in entries {
            let mut e = entry.lock().await;
            let Some((epoch, sp)) = e.sp.as_mut() else {
                continue;
            };
            if sp.release_member(member, now) {
                let (epoch, snapshot) = (*epoch, sp.snapshot());
                if let Err(code) = self.persist_or_reload(&key, &mut e, epoch, snapshot).await {
                    tracing::warn!(
                        ?code,
                        group,
                        "cannot persist released records; reloading the state"
                    );
                }
            }
        }
        self.released().notify_waiters();
        self.timer.notify_one();
    }

    /// Expires acquisition locks at their deadlines until `shutdown` flips (see the module doc).
    pub async fn run_timers(self: Arc<Self>, mut shutdown: watch::Receiver<bool>) {
        loop {
            let notified = self.timer.notified();
            let next = self.expire_due().await;
            let wait = match next {
                Some(at) => {
                    Duration::from_millis((at - self.clock.now_ms()).clamp(1, 60_000) as u64)
                }
                None => Duration::from_secs(60),
            };
            tokio::select! {
                _ = notified => {}
                _ = tokio::time::sleep(wait) => {}
                _ = shutdown.changed() => return,
            }
        }
    }

    /// Ticks every share-partition with a due lock; returns the earliest deadline left.
    async fn expire_due(&self) -> Option<i64> {
        let entries: Vec<(SharePartitionKey, Arc<tokio::sync::Mutex<Entry>>)> =
            (self.partitions.lock().iter())
                .map(|(k, e)| (k.clone(), e.clone()))
                .collect();
        let mut next: Option<i64> = None;
        for (key, entry) in entries {
            let Ok(mut e) = entry.try_lock() else {
                // Busy: its holder will notify; look again soon.
                next = Some(next.map_or(self.clock.now_ms() + 10, |n| {
                    n.min(self.clock.now_ms() + 10)
                }));
                continue;
            };
            let Some((epoch, sp)) = e.sp.as_mut() else {
                continue;
            };
            let now = self.clock.now_ms();
            if sp.next_deadline().is_some_and(|d| d <= now) && sp.tick(now) {
                tracing::debug!(group = %key.group_id, "acquisition locks expired");
                let (epoch, snapshot) = (*epoch, sp.snapshot());
                self.released().notify_waiters();
                if let Err(code) = self.persist_or_reload(&key, &mut e, epoch, snapshot).await {
                    tracing::warn!(?code, group = %key.group_id, "cannot persist expired locks; reloading the state");
                }
            }
            if let Some((_, sp)) = e.sp.as_ref() {
                if let Some(d) = sp.next_deadline() {
                    next = Some(next.map_or(d, |n| n.min(d)));
                }
            }
        }
        next
    }

    /// The share-partition of `key`, loaded (or initialized) in the partition's current LeaderEpoch.
    async fn loaded<'a>(
        &self,
        key: &SharePartitionKey,
        e: &'a mut Entry,
        partition: &Arc<Partition>,
        settings: &ShareGroupSettings,
    ) -> Result<&'a mut SharePartition, SharePartitionError> {
        let epoch = partition.leader_epoch().get();
        if e.sp.as_ref().is_none_or(|(loaded, _)| *loaded != epoch) {
            let config = SharePartitionConfig {
                record_lock_duration_ms: settings.record_lock_duration_ms,
                delivery_count_limit: settings.delivery_count_limit,
                max_in_flight_records: settings.max_record_locks,
            };
            let stored = self.persister.read(key, epoch).await?;
            let state = match stored {
                Some(s) => s.state,
                None => {
                    let start = self.initial_offset(partition, settings.auto_offset_reset);
                    let state = ShareState::initial(start);
                    self.persist(key, epoch, state.clone()).await?;
                    state
                }
            };
            e.sp = Some((epoch, SharePartition::new(state, config)));
        }
        let (_, sp) = e.sp.as_mut().expect("loaded above");
        sp.set_config(SharePartitionConfig {
            record_lock_duration_ms: settings.record_lock_duration_ms,
            delivery_count_limit: settings.delivery_count_limit,
            max_in_flight_records: settings.max_record_locks,
        });
        Ok(sp)
    }

    fn initial_offset(&self, partition: &Partition, reset: AutoOffsetReset) -> i64 {
        match reset {
            AutoOffsetReset::Latest => partition.high_watermark().get(),
            AutoOffsetReset::Earliest => partition.log_start_offset().get(),
            AutoOffsetReset::ByDuration(ms) => {
                let at = self.clock.now_ms().saturating_sub(ms);
                match partition.fetch_offset_by_timestamp(at) {
                    Ok(Some((offset, _))) => offset.get(),
                    _ => partition.high_watermark().get(),
                }
            }
        }
    }

    async fn persist(
        &self,
        key: &SharePartitionKey,
        leader_epoch: i32,
        state: ShareState,
    ) -> Result<(), SharePartitionError> {
        Ok(self.persister.write(key, leader_epoch, state).await?)
    }

    /// [`persist`](Self::persist), and when it fails the in-memory share-partition is dropped: the stored
    /// state — the last one written — is reloaded on next use, as after a failover, so nothing answered with
    /// an error stays applied (records acquired here and not yet persisted come back Available).
    async fn persist_or_reload(
        &self,
        key: &SharePartitionKey,
        e: &mut Entry,
        leader_epoch: i32,
        state: ShareState,
    ) -> Result<(), SharePartitionError> {
        let persisted = self.persist(key, leader_epoch, state).await;
        if persisted.is_err() {
            e.sp = None;
        }
        persisted
    }

    /// Forgets the in-memory state of `group` (its state was deleted or reset by an admin).
    pub async fn forget_group(&self, group: &str) {
        self.partitions.lock().retain(|k, _| k.group_id != group);
    }
}

fn key_of(group: &str, partition: &Partition) -> SharePartitionKey {
    SharePartitionKey {
        group_id: group.to_string(),
        topic_id: partition.topic_id(),
        partition: partition.partition,
    }
}

/// One whole batch of a read: its offsets and where its bytes are, relative to the read's first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchSpan {
    /// The batch's base offset.
    pub base_offset: i64,
    /// The batch's last offset.
    pub last_offset: i64,
    /// Its first byte, from the start of the read.
    pub start: u64,
    /// Its size in bytes (header included).
    pub len: u64,
}

/// The whole batches of `records` in order, walking the 61-byte batch headers (a trailing partial batch is
/// left out).
pub fn batch_spans(records: &Records) -> Vec<BatchSpan> {
    use std::os::unix::fs::FileExt;
    let mut out = Vec::new();
    let mut buf = [0u8; RECORD_BATCH_OVERHEAD];
    let (origin, end) = match records {
        Records::Memory(b) => (0u64, b.len() as u64),
        Records::File(s) => (s.position, s.position + s.len as u64),
    };
    let mut pos = origin;
    while pos + RECORD_BATCH_OVERHEAD as u64 <= end {
        let header = match records {
            Records::Memory(b) => {
                let at = pos as usize;
                RecordBatchHeader::parse(&b[at..at + RECORD_BATCH_OVERHEAD])
            }
            Records::File(s) => {
                if s.file.read_exact_at(&mut buf, pos).is_err() {
                    break;
                }
                RecordBatchHeader::parse(&buf)
            }
        };
        let Ok(h) = header else { break };
        let size = h.size_in_bytes() as u64;
        if size == 0 || pos + size > end {
            break;
        }
        out.push(BatchSpan {
            base_offset: h.base_offset,
            last_offset: h.last_offset(),
            start: pos - origin,
            len: size,
        });
        pos += size;
    }
    out
}

/// The part of `records` a ShareFetch answer carries: from the first batch holding an acquired offset to
/// the last one (Kafka's `ShareFetchUtils.maybeSliceFetchRecords`). The read may reach far past what was
/// acquired (up to the request's MaxBytes); sending all of it made every answer up to 50 MiB for a few
/// hundred acquired records.
fn slice_to_acquired(
    records: Records,
    spans: &[BatchSpan],
    acquired: &[AcquiredRecords],
) -> Records {
    let (Some(lo), Some(hi)) = (
        acquired.iter().map(|a| a.first_offset).min(),
        acquired.iter().map(|a| a.last_offset).max(),
    ) else {
        return records;
    };
    let first = spans.iter().find(|b| b.last_offset >= lo);
    let last = spans.iter().rev().find(|b| b.base_offset <= hi);
    let (Some(first), Some(last)) = (first, last) else {
        return records;
    };
    let (start, end) = (first.start, last.start + last.len);
    if start >= end {
        return records;
    }
    match records {
        Records::Memory(b) => Records::Memory(b.slice(start as usize..end as usize)),
        Records::File(mut s) => {
            s.position += start;
            s.len = (end - start) as u32;
            Records::File(s)
        }
    }
}

/// Builds the share-partition manager and its share coordinator for a broker (called by
/// [`crate::server::apis::KafkaApis::new`]): group settings come from the broker's `group.share.*` defaults.
pub fn wire(
    config: &crate::config::BrokerConfig,
    metadata: &Arc<crate::metadata::MetadataStore>,
    replica_manager: &Arc<ReplicaManager>,
    topics: &Arc<crate::topics::TopicManager>,
    cache: &Arc<dyn crate::metadata_cache::MetadataCache>,
) -> Arc<SharePartitionManager> {
    let clock: Arc<dyn Clock> = Arc::new(types::SystemClock);
    let coordinator = Arc::new(ShareCoordinatorService::new(
        config.clone(),
        metadata.clone(),
        replica_manager.clone(),
        topics.clone(),
        clock.clone(),
    ));
    let channel = crate::txn_coordinator::channel::BrokerChannel::new(
        config.node_id,
        replica_manager.connector(),
    );
    let persister = SharePersister::new(
        coordinator,
        config.node_id,
        config.listeners.inter_broker_listener_name.clone(),
        cache.clone(),
        channel,
    );
    let (defaults, store) = (config.clone(), metadata.clone());
    let settings: SettingsResolver =
        Arc::new(move |group: &str| settings_of(&defaults, &store.group_config(group)));
    let max_sessions = (config.value("group.share.max.share.sessions"))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(2000)
        .max(1);
    Arc::new(SharePartitionManager::new(
        replica_manager.clone(),
        persister,
        settings,
        max_sessions,
        clock,
    ))
}

/// A group's settings: its group configs over the broker's `group.share.*` defaults
/// ([`crate::group_configs::share_settings`]).
fn settings_of(
    config: &crate::config::BrokerConfig,
    group_configs: &std::collections::BTreeMap<String, String>,
) -> ShareGroupSettings {
    let v = crate::group_configs::share_settings(config, group_configs);
    let reset = v.auto_offset_reset.trim().to_ascii_lowercase();
    let auto_offset_reset = match reset.as_str() {
        "earliest" => AutoOffsetReset::Earliest,
        other => match other.strip_prefix("by_duration:") {
            Some(d) => crate::group_configs::parse_iso8601_ms(d)
                .map_or(AutoOffsetReset::Latest, AutoOffsetReset::ByDuration),
            None => AutoOffsetReset::Latest,
        },
    };
    ShareGroupSettings {
        record_lock_duration_ms: v.record_lock_duration_ms.max(1),
        delivery_count_limit: v.delivery_count_limit.max(1),
        max_record_locks: v.max_record_locks.max(1),
        auto_offset_reset,
    }
}

/// The share-group members (group id, member id) whose share session was opened or advanced on one
/// connection, and the connection's id (unique in the process, the owner [`ShareSessionCache`] records).
/// Equal only to itself (a connection's identity).
#[derive(Clone, Debug)]
pub struct ConnectionShareMembers {
    /// The connection's id.
    pub id: u64,
    members: Arc<Mutex<Vec<(String, String)>>>,
}

impl Default for ConnectionShareMembers {
    fn default() -> Self {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        ConnectionShareMembers {
            id: NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            members: Default::default(),
        }
    }
}

impl ConnectionShareMembers {
    /// Notes that `member` of `group` has its share session on this connection.
    pub fn note(&self, group: &str, member: &str) {
        let mut members = self.members.lock();
        if !members.iter().any(|(g, m)| g == group && m == member) {
            members.push((group.to_string(), member.to_string()));
        }
    }

    /// `member` of `group` closed its share session on this connection.
    pub fn forget(&self, group: &str, member: &str) {
        self.members
            .lock()
            .retain(|(g, m)| g != group || m != member);
    }
}

impl PartialEq for ConnectionShareMembers {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.members, &other.members)
    }
}

impl Eq for ConnectionShareMembers {}

/// Closes the share sessions a connection still owns when it ends (dropped with the connection's task):
/// their members' acquired records are released at once, as Kafka does, rather than when their locks expire.
/// A session its member reopened on another connection is left alone.
pub struct ReleaseOnClose {
    connection: ConnectionShareMembers,
    apis: Arc<crate::server::apis::KafkaApis>,
}

impl ReleaseOnClose {
    /// A guard over the connection's share `members`.
    pub fn new(
        members: &ConnectionShareMembers,
        apis: &Arc<crate::server::apis::KafkaApis>,
    ) -> Self {
        ReleaseOnClose {
            connection: members.clone(),
            apis: apis.clone(),
        }
    }
}

impl Drop for ReleaseOnClose {
    fn drop(&mut self) {
        let members = std::mem::take(&mut *self.connection.members.lock());
        if members.is_empty() {
            return;
        }
        let shares = self.apis.shares().clone();
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let owner = self.connection.id;
        runtime.spawn(async move {
            for (group, member) in members {
                if shares.sessions.lock().remove_owned(&group, &member, owner) {
                    shares.release_member(&group, &member).await;
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::{Bytes, BytesMut};
    use protocol::record::{Compression, RecordBatchBuilder};

    /// Three batches of 5 records each at offsets 0, 5, 10, in memory.
    fn three_batches() -> Records {
        let mut all = BytesMut::new();
        for base in [0, 5, 10] {
            let mut b = RecordBatchBuilder::new(Compression::None).base_offset(base);
            for i in 0..5u8 {
                b.append(0, None, Some(Bytes::from(vec![i])), Vec::new());
            }
            all.extend_from_slice(&b.build().unwrap());
        }
        Records::Memory(all.freeze())
    }

    fn acquired(first_offset: i64, last_offset: i64) -> AcquiredRecords {
        AcquiredRecords {
            first_offset,
            last_offset,
            delivery_count: 1,
        }
    }

    #[test]
    fn an_answer_carries_only_the_batches_holding_acquired_offsets() {
        let records = three_batches();
        let spans = batch_spans(&records);
        let bounds: Vec<_> = spans
            .iter()
            .map(|b| (b.base_offset, b.last_offset))
            .collect();
        assert_eq!(bounds, [(0, 4), (5, 9), (10, 14)]);
        assert_eq!(spans[2].start + spans[2].len, records.len() as u64);
        let middle = slice_to_acquired(records.clone(), &spans, &[acquired(6, 8)]);
        assert_eq!(batch_spans(&middle).len(), 1);
        assert_eq!(batch_spans(&middle)[0].base_offset, 5);
        let two = slice_to_acquired(records.clone(), &spans, &[acquired(0, 4), acquired(5, 7)]);
        assert_eq!(two.len() as u64, spans[1].start + spans[1].len);
        let none = slice_to_acquired(records.clone(), &spans, &[]);
        assert_eq!(none.len(), records.len());
    }
}
