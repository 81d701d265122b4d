//! The single-node metadata store: the cluster id, topics (name, topic id, partition count, config
//! overrides) and the producer-id block, persisted in the data directory.
//!
//! On disk (in `log.dirs`):
//! - `meta.properties` — Kafka's format: `version=1`, `cluster.id=<22-char base64url UUID>`, `node.id=<n>`.
//!   Written once; a later start with a different `node.id` is refused.
//! - `runnel-metadata.json` — the snapshot: `{ "topics": { name: { "topic_id", "partitions", "configs" } },
//!   "next_producer_id": n }`, written atomically (write temp, fsync, rename, fsync directory), so a crash
//!   leaves either the old or the new file. Data dirs of earlier versions hold only this file.
//! - `runnel-metadata.log` — the changes since the snapshot ([`crate::registry_log`]: length-prefixed,
//!   CRC-checked entries, each synced before the change is acknowledged; a torn tail is cut at open). One
//!   JSON [`Change`] per entry: `{"op":"put_topic","name","topic"}`, `{"op":"delete_topic","name"}`,
//!   `{"op":"next_producer_id","next"}`, `{"op":"put_acls","acls":[[id, acl]]}`, `{"op":"delete_acls","ids"}`
//!   (the ACLs of one CreateAcls/DeleteAcls, as the metadata log's `AccessControlEntryRecord`s),
//!   `{"op":"client_quotas","changes"}` (one AlterClientQuotas, as `ClientQuotaRecord`s),
//!   `{"op":"alter_scram","deletions","upsertions"}` (one AlterUserScramCredentials' accepted changes),
//!   `{"op":"client_metrics","name","configs"}` (a KIP-714 CLIENT_METRICS resource's whole config set; empty
//!   = removed), `{"op":"group_config","name","configs"}` (a group's dynamic configs, the GROUP resource;
//!   empty = removed). A change costs one small append, not a rewrite of the registry.
//!   When the log grows past the snapshot's size (at least [`COMPACT_MIN_BYTES`]) the current state is written
//!   as a new snapshot and the log emptied.
//!
//! Recovery rule: the state is the snapshot (empty if absent) with the log's valid entries applied in order.
//! Every change is absolute (a topic's whole definition, a removal, the next producer id), so replaying entries
//! the snapshot already contains — a crash between writing a snapshot and emptying the log — ends in the same
//! state.
//!
//! This stands in for the KRaft metadata log until the cluster issue replaces it; the types here are the
//! records that log will carry (topic ids are UUIDs from the start).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use imbl::OrdMap;
use parking_lot::RwLock;

use crate::registry_log::RegistryLog;
use metadata::quota::{ClientQuotaChange, ClientQuotasImage, QuotaAlteration};
use metadata::scram::{self, ScramChange, ScramCredentials, ScramDeletion, ScramUpsertion};
use metadata::AclEntry;
use serde::{Deserialize, Serialize};
use types::ProducerId;
use uuid::Uuid;

/// How many producer ids are reserved on disk at a time.
const PRODUCER_ID_BLOCK: i64 = 1000;

/// The change log is compacted into a snapshot once it is larger than the snapshot and than this (bytes).
pub const COMPACT_MIN_BYTES: u64 = 64 * 1024;

/// The snapshot file.
const SNAPSHOT: &str = "runnel-metadata.json";
/// The change log file.
const CHANGE_LOG: &str = "runnel-metadata.log";

/// One change of the registry, as logged (see the module doc).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "op", rename_all = "snake_case")]
enum Change {
    /// Creates or replaces a topic.
    PutTopic { name: String, topic: TopicMetadata },
    /// Removes a topic.
    DeleteTopic { name: String },
    /// Sets the first producer id not yet reserved.
    NextProducerId { next: i64 },
    /// Creates (or replaces) ACLs by id.
    PutAcls { acls: Vec<(Uuid, AclEntry)> },
    /// Removes ACLs by id (unknown ids are ignored).
    DeleteAcls { ids: Vec<Uuid> },
    /// Sets or removes client quota keys (one AlterClientQuotas, as the metadata log's `ClientQuotaRecord`s).
    ClientQuotas { changes: Vec<ClientQuotaChange> },
    /// The SCRAM credential changes of one AlterUserScramCredentials (KIP-554), deletions first.
    AlterScram {
        deletions: Vec<ScramDeletion>,
        upsertions: Vec<ScramUpsertion>,
    },
    /// Sets a client metrics subscription's config set (KIP-714); empty removes it.
    ClientMetrics {
        name: String,
        configs: BTreeMap<String, String>,
    },
    /// Sets a group's dynamic config set (the GROUP config resource); empty removes it.
    GroupConfig {
        name: String,
        configs: BTreeMap<String, String>,
    },
}

impl State {
    fn apply(&mut self, change: Change) {
        match change {
            Change::PutTopic { name, topic } => self.put(name, topic),
            Change::DeleteTopic { name } => self.remove(&name),
            Change::NextProducerId { next } => self.next_producer_id = next,
            Change::PutAcls { acls } => self.acls.extend(acls),
            Change::DeleteAcls { ids } => {
                for id in ids {
                    self.acls.remove(&id);
                }
            }
            Change::ClientQuotas { changes } => {
                for c in &changes {
                    self.client_quotas.apply(c);
                }
            }
            Change::AlterScram {
                deletions,
                upsertions,
            } => {
                let deletes = deletions.into_iter().map(ScramChange::Delete);
                for c in deletes.chain(upsertions.into_iter().map(ScramChange::Upsert)) {
                    scram::apply_change(&mut self.scram_credentials, &c);
                }
            }
            Change::ClientMetrics { name, configs } if configs.is_empty() => {
                self.client_metrics.remove(&name);
            }
            Change::ClientMetrics { name, configs } => {
                self.client_metrics.insert(name, configs);
            }
            Change::GroupConfig { name, configs } if configs.is_empty() => {
                self.group_configs.remove(&name);
            }
            Change::GroupConfig { name, configs } => {
                self.group_configs.insert(name, configs);
            }
        }
    }

    /// Adds or replaces a topic, keeping the index in step (O(log n)).
    fn put(&mut self, name: String, topic: TopicMetadata) {
        self.remove(&name);
        self.index.add(&name, &topic);
        self.topics.insert(name, topic);
    }

    /// Removes a topic if present, keeping the index in step (O(log n)).
    fn remove(&mut self, name: &str) {
        if let Some(old) = self.topics.remove(name) {
            self.index.remove(name, &old);
        }
    }

    /// Rebuilds the index from `topics` (after reading a snapshot).
    fn reindex(&mut self) {
        self.index = TopicIndex::default();
        for (name, topic) in &self.topics {
            self.index.add(name, topic);
        }
    }
}

/// What the registry answers per request without a scan of every topic (issue 13: a topic's creation must not
/// cost O(topics)): topic ids, names by their collision form, and the partition total. Derived from
/// [`State::topics`], never persisted.
#[derive(Debug, Default, Clone)]
struct TopicIndex {
    by_id: HashMap<Uuid, String>,
    /// Names by [`collision_form`]: topics whose names differ only in `.` versus `_`.
    by_collision_form: HashMap<String, BTreeSet<String>>,
    /// The partitions of all topics.
    partitions: i64,
}

/// A topic name with `.` replaced by `_`: two names of one form collide (Kafka refuses such pairs because
/// their metric names collide).
fn collision_form(name: &str) -> String {
    name.replace('.', "_")
}

impl TopicIndex {
    fn add(&mut self, name: &str, topic: &TopicMetadata) {
        self.by_id.insert(topic.topic_id, name.to_string());
        self.by_collision_form
            .entry(collision_form(name))
            .or_default()
            .insert(name.to_string());
        self.partitions += i64::from(topic.partitions);
    }

    fn remove(&mut self, name: &str, topic: &TopicMetadata) {
        if self.by_id.get(&topic.topic_id).is_some_and(|n| n == name) {
            self.by_id.remove(&topic.topic_id);
        }
        let form = collision_form(name);
        if let Some(names) = self.by_collision_form.get_mut(&form) {
            names.remove(name);
            if names.is_empty() {
                self.by_collision_form.remove(&form);
            }
        }
        self.partitions -= i64::from(topic.partitions);
    }
}

/// The open change log and the size of the snapshot it follows.
#[derive(Debug)]
struct Persistence {
    log: RegistryLog,
    snapshot_bytes: u64,
}

/// A topic's definition.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TopicMetadata {
    /// Topic id (KIP-516).
    pub topic_id: Uuid,
    /// Number of partitions.
    pub partitions: i32,
    /// Topic-level config overrides (`retention.ms`, ...).
    pub configs: BTreeMap<String, String>,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
struct State {
    /// A persistent map: [`MetadataStore::topics`] hands out O(1) copies, and a change costs O(log n).
    topics: OrdMap<String, TopicMetadata>,
    /// First producer id not yet reserved on disk.
    next_producer_id: i64,
    /// ACLs by id; absent from snapshots of earlier versions and when empty.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    acls: BTreeMap<Uuid, AclEntry>,
    /// Client quotas; absent from snapshots of earlier versions and when empty.
    #[serde(default, skip_serializing_if = "ClientQuotasImage::is_empty")]
    client_quotas: ClientQuotasImage,
    /// SCRAM credentials; absent from snapshots of earlier versions and when empty.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    scram_credentials: ScramCredentials,
    /// Client metrics subscriptions (KIP-714) by name; absent from snapshots of earlier versions and when
    /// empty.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    client_metrics: BTreeMap<String, BTreeMap<String, String>>,
    /// Dynamic group configs by group id (standalone; a cluster member mirrors its image's); absent from
    /// snapshots of earlier versions and when empty.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    group_configs: BTreeMap<String, BTreeMap<String, String>>,
    #[serde(skip)]
    index: TopicIndex,
}

/// Errors of the metadata store.
#[derive(Debug, thiserror::Error)]
pub enum MetadataError {
    /// The data directory could not be read or written.
    #[error("metadata i/o on {path}: {source}")]
    Io {
        /// File concerned.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// A metadata file does not parse, or belongs to another node.
    #[error("metadata file {path} is invalid: {reason}")]
    Invalid {
        /// File concerned.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// No producer-id block could be had from the controller (not registered yet, no active controller):
    /// retriable.
    #[error("no producer id block from the controller: {0}")]
    ProducerIdsUnavailable(String),
}

/// Why [`MetadataStore::update_topic`] changed nothing.
#[derive(Debug)]
pub enum UpdateError<E> {
    /// The update function refused.
    Rejected(E),
    /// The new state could not be persisted.
    Metadata(MetadataError),
}

/// The persistent topic registry and id allocator. Thread-safe.
pub struct MetadataStore {
    dir: PathBuf,
    cluster_id: String,
    state: RwLock<State>,
    /// Producer ids handed out from the reserved block: (next, end exclusive).
    producer_ids: parking_lot::Mutex<(i64, i64)>,
    /// Cluster mode: the topic registry mirrors the controller's metadata image (set by
    /// [`MetadataStore::replace_topics`], not persisted here) and producer-id blocks come from the controller.
    producer_id_source: RwLock<Option<ProducerIdSource>>,
    /// See [`MetadataStore::generation`].
    generation: std::sync::atomic::AtomicU64,
    /// The change log; taken under the state write lock (state before log).
    persistence: parking_lot::Mutex<Persistence>,
}

/// Fetches a block of producer ids `(first, count)` from elsewhere (the controller's AllocateProducerIds,
/// KIP-730, in cluster mode). Errors are a reason for the log.
pub type ProducerIdSource = Arc<
    dyn Fn() -> futures::future::BoxFuture<'static, Result<(ProducerId, i32), String>>
        + Send
        + Sync,
>;

impl std::fmt::Debug for MetadataStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetadataStore")
            .field("dir", &self.dir)
            .field("cluster_id", &self.cluster_id)
            .field("topics", &self.state.read().topics.len())
            .finish()
    }
}

impl MetadataStore {
    /// Opens (or initializes) the store in `dir` for `node_id`.
    pub fn open(dir: &Path, node_id: i32) -> Result<MetadataStore, MetadataError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| MetadataError::Io { path, source }
        };
        fs::create_dir_all(dir).map_err(io(dir))?;
        let meta = dir.join("meta.properties");
        let cluster_id = if meta.exists() {
            let text = fs::read_to_string(&meta).map_err(io(&meta))?;
            let mut cluster_id = None;
            let mut stored_node = None;
            for line in text.lines() {
                if let Some(v) = line.strip_prefix("cluster.id=") {
                    cluster_id = Some(v.trim().to_string());
                }
                if let Some(v) = line.strip_prefix("node.id=") {
                    stored_node = v.trim().parse::<i32>().ok();
                }
            }
            if stored_node.is_some_and(|n| n != node_id) {
                return Err(MetadataError::Invalid {
                    path: meta,
                    reason: format!(
                        "written by node.id {}, but this broker is node.id {node_id}",
                        stored_node.unwrap_or_default()
                    ),
                });
            }
            cluster_id.ok_or_else(|| MetadataError::Invalid {
                path: meta.clone(),
                reason: "no cluster.id".into(),
            })?
        } else {
            let id = base64url_uuid(Uuid::new_v4());
            let text = format!("#Runnel\nversion=1\ncluster.id={id}\nnode.id={node_id}\n");
            write_atomically(dir, "meta.properties", text.as_bytes())?;
            id
        };
        let (state, persistence) = load_registry(dir)?;
        let next = state.next_producer_id;
        Ok(MetadataStore {
            dir: dir.to_path_buf(),
            cluster_id,
            state: RwLock::new(state),
            producer_ids: parking_lot::Mutex::new((next, next)),
            producer_id_source: RwLock::new(None),
            generation: std::sync::atomic::AtomicU64::new(0),
            persistence: parking_lot::Mutex::new(persistence),
        })
    }

    /// Like [`MetadataStore::open`], but a cluster member: the cluster id is the quorum's `cluster_id`
    /// (written to `meta.properties` on first start; a data dir formatted for another cluster is an error).
    pub fn open_for_cluster(
        dir: &Path,
        node_id: i32,
        cluster_id: &str,
    ) -> Result<MetadataStore, MetadataError> {
        let meta = dir.join("meta.properties");
        if !meta.exists() {
            fs::create_dir_all(dir).map_err(|source| MetadataError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
            let text = format!("#Runnel\nversion=1\ncluster.id={cluster_id}\nnode.id={node_id}\n");
            write_atomically(dir, "meta.properties", text.as_bytes())?;
        }
        let store = MetadataStore::open(dir, node_id)?;
        if store.cluster_id != cluster_id {
            return Err(MetadataError::Invalid {
                path: meta,
                reason: format!(
                    "formatted for cluster {}, but this node joins cluster {cluster_id}",
                    store.cluster_id
                ),
            });
        }
        Ok(store)
    }

    /// Cluster mode: replaces the in-memory topic registry with the controller's view (the first metadata
    /// image); nothing is written to disk, the quorum's log is the record.
    pub fn replace_topics(&self, topics: impl IntoIterator<Item = (String, TopicMetadata)>) {
        let mut state = self.state.write();
        state.topics = topics.into_iter().collect();
        state.reindex();
        self.bump();
    }

    /// Cluster mode: brings the in-memory topic registry in step with the controller's view (the metadata
    /// image) by `changes` — `(name, Some(topic))` adds or replaces a topic, `(name, None)` removes it; O(log n)
    /// each. Nothing is written to disk, the quorum's log is the record.
    pub fn apply_topic_changes(
        &self,
        changes: impl IntoIterator<Item = (String, Option<TopicMetadata>)>,
    ) {
        let mut state = self.state.write();
        let mut changed = false;
        for (name, topic) in changes {
            changed = true;
            match topic {
                Some(t) => state.put(name, t),
                None => state.remove(&name),
            }
        }
        if changed {
            self.bump();
        }
    }

    /// A counter that changes with every change of the topic registry or of the group configs (to cache what
    /// is derived from them).
    pub fn generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Marks a change; called with the state write lock held, after the change.
    fn bump(&self) {
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    }

    /// Cluster mode: producer-id blocks come from `source` (the controller's AllocateProducerIds) instead of
    /// the local file.
    pub fn set_producer_id_source(&self, source: ProducerIdSource) {
        *self.producer_id_source.write() = Some(source);
    }

    /// The cluster id (22-character base64url UUID, as Kafka's `kafka-storage random-uuid`).
    pub fn cluster_id(&self) -> &str {
        &self.cluster_id
    }

    /// A topic's metadata.
    pub fn topic(&self, name: &str) -> Option<TopicMetadata> {
        self.state.read().topics.get(name).cloned()
    }

    /// The name and metadata of the topic with id `id` (O(log n)).
    pub fn topic_by_id(&self, id: Uuid) -> Option<(String, TopicMetadata)> {
        let state = self.state.read();
        let name = state.index.by_id.get(&id)?;
        state.topics.get(name).map(|t| (name.clone(), t.clone()))
    }

    /// All topics, by name: a persistent map, so the copy is O(1) and later changes do not show in it.
    pub fn topics(&self) -> OrdMap<String, TopicMetadata> {
        self.state.read().topics.clone()
    }

    /// [`MetadataStore::topics`] and the [`MetadataStore::generation`] they are at, read together.
    pub fn topics_at_generation(&self) -> (u64, OrdMap<String, TopicMetadata>) {
        let state = self.state.read();
        (self.generation(), state.topics.clone())
    }

    /// The partitions of all topics together (O(1)).
    pub fn partition_count(&self) -> i64 {
        self.state.read().index.partitions
    }

    /// The name of an existing topic that collides with `name` once `.` and `_` are treated alike (Kafka
    /// refuses such pairs because their metric names collide). O(log n).
    pub fn colliding_topic(&self, name: &str) -> Option<String> {
        let state = self.state.read();
        state
            .index
            .by_collision_form
            .get(&collision_form(name))?
            .iter()
            .find(|k| k.as_str() != name)
            .cloned()
    }

    /// Adds a topic; returns `false` (changing nothing) when the name exists.
    pub fn create_topic(&self, name: &str, topic: TopicMetadata) -> Result<bool, MetadataError> {
        let mut state = self.state.write();
        if state.topics.contains_key(name) {
            return Ok(false);
        }
        let name = name.to_string();
        self.record(&mut state, Change::PutTopic { name, topic })?;
        self.bump();
        Ok(true)
    }

    /// Removes a topic; returns its metadata, or `None` when it did not exist.
    pub fn delete_topic(&self, name: &str) -> Result<Option<TopicMetadata>, MetadataError> {
        let mut state = self.state.write();
        let removed = state.topics.get(name).cloned();
        if removed.is_some() {
            let name = name.to_string();
            self.record(&mut state, Change::DeleteTopic { name })?;
            self.bump();
        }
        Ok(removed)
    }

    /// Replaces a topic's metadata with `update(current)`; returns the new metadata, or `None` when the topic
    /// does not exist. Nothing changes when `update` fails.
    pub fn update_topic<E>(
        &self,
        name: &str,
        update: impl FnOnce(&TopicMetadata) -> Result<TopicMetadata, E>,
    ) -> Result<Option<TopicMetadata>, UpdateError<E>> {
        let mut state = self.state.write();
        let Some(current) = state.topics.get(name) else {
            return Ok(None);
        };
        let updated = update(current).map_err(UpdateError::Rejected)?;
        let change = Change::PutTopic {
            name: name.to_string(),
            topic: updated.clone(),
        };
        self.record(&mut state, change)
            .map_err(UpdateError::Metadata)?;
        self.bump();
        Ok(Some(updated))
    }

    /// The ACLs by id (standalone: persisted here; a cluster member reads its image's instead).
    pub fn acls(&self) -> BTreeMap<Uuid, AclEntry> {
        self.state.read().acls.clone()
    }

    /// Creates `acls` with one synced append. Nothing changes when it fails.
    pub fn put_acls(&self, acls: Vec<(Uuid, AclEntry)>) -> Result<(), MetadataError> {
        let mut state = self.state.write();
        self.record(&mut state, Change::PutAcls { acls })
    }

    /// Removes the ACLs `ids` with one synced append. Nothing changes when it fails.
    pub fn delete_acls(&self, ids: Vec<Uuid>) -> Result<(), MetadataError> {
        let mut state = self.state.write();
        self.record(&mut state, Change::DeleteAcls { ids })
    }

    /// The client quotas (standalone: persisted here; a cluster member reads its image's instead).
    pub fn client_quotas(&self) -> ClientQuotasImage {
        self.state.read().client_quotas.clone()
    }

    /// Applies AlterClientQuotas `entries` with one synced append (none when nothing changes). Nothing
    /// changes when it fails.
    pub fn alter_client_quotas(&self, entries: &[QuotaAlteration]) -> Result<(), MetadataError> {
        let mut state = self.state.write();
        let mut next = state.client_quotas.clone();
        let mut changes = Vec::new();
        for entry in entries {
            for c in next.changes(entry) {
                next.apply(&c);
                changes.push(c);
            }
        }
        if changes.is_empty() {
            return Ok(());
        }
        self.record(&mut state, Change::ClientQuotas { changes })
    }

    /// The SCRAM credentials (standalone: persisted here; a cluster member reads its image's instead).
    pub fn scram_credentials(&self) -> ScramCredentials {
        self.state.read().scram_credentials.clone()
    }

    /// Applies the credential changes of one AlterUserScramCredentials with one synced append. Nothing
    /// changes when it fails.
    pub fn alter_scram(
        &self,
        deletions: Vec<ScramDeletion>,
        upsertions: Vec<ScramUpsertion>,
    ) -> Result<(), MetadataError> {
        let mut state = self.state.write();
        let change = Change::AlterScram {
            deletions,
            upsertions,
        };
        self.record(&mut state, change)
    }

    /// The client metrics subscriptions (KIP-714; standalone: persisted here; a cluster member reads its
    /// image's instead).
    pub fn client_metrics(&self) -> BTreeMap<String, BTreeMap<String, String>> {
        self.state.read().client_metrics.clone()
    }

    /// Sets subscription `name`'s whole config set (empty = removes it) with one synced append. Nothing
    /// changes when it fails.
    pub fn set_client_metrics(
        &self,
        name: &str,
        configs: BTreeMap<String, String>,
    ) -> Result<(), MetadataError> {
        let mut state = self.state.write();
        let name = name.to_string();
        self.record(&mut state, Change::ClientMetrics { name, configs })
    }

    /// The dynamic configs of group `group` (the GROUP config resource; empty when none is set). Both modes:
    /// standalone they are persisted here, a cluster member mirrors its metadata image's
    /// ([`MetadataStore::replace_group_configs`]) before the image is published.
    pub fn group_config(&self, group: &str) -> BTreeMap<String, String> {
        (self.state.read().group_configs.get(group).cloned()).unwrap_or_default()
    }

    /// The ids of the groups with dynamic configs, sorted.
    pub fn groups_with_configs(&self) -> Vec<String> {
        self.state.read().group_configs.keys().cloned().collect()
    }

    /// Sets group `name`'s whole config set (empty = removes it) with one synced append (standalone). Nothing
    /// changes when it fails.
    pub fn set_group_config(
        &self,
        name: &str,
        configs: BTreeMap<String, String>,
    ) -> Result<(), MetadataError> {
        let mut state = self.state.write();
        let name = name.to_string();
        self.record(&mut state, Change::GroupConfig { name, configs })?;
        self.bump();
        Ok(())
    }

    /// Cluster mode: the group configs become the metadata image's; nothing is written to disk.
    pub fn replace_group_configs(&self, configs: &BTreeMap<String, BTreeMap<String, String>>) {
        let mut state = self.state.write();
        if state.group_configs != *configs {
            state.group_configs = configs.clone();
            self.bump();
        }
    }

    /// Allocates a new producer id (KIP-98). Ids are reserved on disk in blocks so that a restart never
    /// hands out an id twice.
    pub async fn allocate_producer_id(&self) -> Result<ProducerId, MetadataError> {
        let source = self.producer_id_source.read().clone();
        if let Some(source) = source {
            // Cluster mode: the block comes from the controller; no lock is held while waiting for it, and a
            // block fetched concurrently by another caller is kept.
            loop {
                {
                    let mut ids = self.producer_ids.lock();
                    if ids.0 < ids.1 {
                        let id = ids.0;
                        ids.0 += 1;
                        return Ok(ProducerId(id));
                    }
                }
                let (first, count) = source()
                    .await
                    .map_err(MetadataError::ProducerIdsUnavailable)?;
                let mut ids = self.producer_ids.lock();
                if ids.0 >= ids.1 {
                    *ids = (first.get(), first.get() + i64::from(count.max(1)));
                }
            }
        }
        let mut ids = self.producer_ids.lock();
        if ids.0 >= ids.1 {
            let mut state = self.state.write();
            let start = state.next_producer_id;
            let next = start + PRODUCER_ID_BLOCK;
            self.record(&mut state, Change::NextProducerId { next })?;
            *ids = (start, start + PRODUCER_ID_BLOCK);
        }
        let id = ids.0;
        ids.0 += 1;
        Ok(ProducerId(id))
    }

    /// Makes `change` durable (one synced log append), then applies it to `state` (held write-locked by the
    /// caller); compacts the log into a snapshot when it has outgrown it. Nothing changes when the append
    /// fails. A failed compaction is only logged: the change is durable in the log either way.
    fn record(&self, state: &mut State, change: Change) -> Result<(), MetadataError> {
        let mut p = self.persistence.lock();
        let payload = serde_json::to_vec(&change).expect("a change serializes");
        p.log.append(&payload).map_err(|source| MetadataError::Io {
            path: p.log.path().to_path_buf(),
            source,
        })?;
        state.apply(change);
        if p.log.len() > p.snapshot_bytes.max(COMPACT_MIN_BYTES) {
            if let Err(e) = compact(&self.dir, state, &mut p) {
                tracing::warn!(error = %e, "topic registry: compaction failed; the change log keeps growing");
            }
        }
        Ok(())
    }
}

/// Reads the snapshot and applies the change log (the recovery rule of the module doc).
fn load_registry(dir: &Path) -> Result<(State, Persistence), MetadataError> {
    let path = dir.join(SNAPSHOT);
    let invalid = |path: &Path, reason: String| MetadataError::Invalid {
        path: path.to_path_buf(),
        reason,
    };
    let (mut state, snapshot_bytes) = if path.exists() {
        let text = fs::read(&path).map_err(|source| MetadataError::Io {
            path: path.clone(),
            source,
        })?;
        let mut state: State =
            serde_json::from_slice(&text).map_err(|e| invalid(&path, e.to_string()))?;
        state.reindex();
        (state, text.len() as u64)
    } else {
        (State::default(), 0)
    };
    let log_path = dir.join(CHANGE_LOG);
    let (log, entries) = RegistryLog::open(&log_path).map_err(|source| MetadataError::Io {
        path: log_path.clone(),
        source,
    })?;
    for entry in entries {
        let change: Change =
            serde_json::from_slice(&entry).map_err(|e| invalid(&log_path, e.to_string()))?;
        state.apply(change);
    }
    let persistence = Persistence {
        log,
        snapshot_bytes,
    };
    Ok((state, persistence))
}

/// Writes `state` as the new snapshot, then empties the change log.
fn compact(dir: &Path, state: &State, p: &mut Persistence) -> Result<(), MetadataError> {
    let bytes = serde_json::to_vec_pretty(state).expect("the registry serializes");
    write_atomically(dir, SNAPSHOT, &bytes)?;
    p.snapshot_bytes = bytes.len() as u64;
    p.log.clear().map_err(|source| MetadataError::Io {
        path: p.log.path().to_path_buf(),
        source,
    })
}

/// Writes `dir/name` so that a crash leaves the old or the new content: temp file, fsync, rename, fsync dir.
pub fn write_atomically(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), MetadataError> {
    let tmp = dir.join(format!("{name}.tmp"));
    let dst = dir.join(name);
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| MetadataError::Io { path, source }
    };
    let mut f = fs::File::create(&tmp).map_err(io(&tmp))?;
    f.write_all(bytes).map_err(io(&tmp))?;
    f.sync_all().map_err(io(&tmp))?;
    fs::rename(&tmp, &dst).map_err(io(&dst))?;
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io(dir))?;
    Ok(())
}

/// Encodes a UUID as 22 characters of unpadded base64url, Kafka's textual form of cluster and topic ids.
pub fn base64url_uuid(id: Uuid) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let bytes = id.as_bytes();
    let mut out = String::with_capacity(22);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let chars = chunk.len() + 1;
        for i in 0..chars {
            out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

#[cfg(test)]
#[path = "metadata_tests.rs"]
mod tests;
