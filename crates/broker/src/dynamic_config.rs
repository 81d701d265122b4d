//! Dynamic broker configs (KIP-226): broker keys changed at runtime with AlterConfigs /
//! IncrementalAlterConfigs on a BROKER resource (resource type 4), without a restart.
//!
//! Two dynamic levels sit above the static config (properties file and `--set`):
//! - **per-broker** (resource name = this broker's `node.id`, DescribeConfigs source DYNAMIC_BROKER_CONFIG = 2),
//! - **cluster default** (resource name `""`, source DYNAMIC_DEFAULT_BROKER_CONFIG = 3).
//!
//! Precedence, most specific first, as Kafka: topic override (1) > per-broker (2) > cluster default (3) >
//! static (STATIC_BROKER_CONFIG = 4) > built-in default (DEFAULT_CONFIG = 5). [`DynamicBrokerConfig::effective`]
//! is the static [`BrokerConfig`] with both dynamic levels laid over its explicit keys, so every reader that
//! resolves keys through it (topic `LogConfig`s, DescribeConfigs values) sees the live values.
//!
//! Which keys are dynamic follows Kafka's `DynamicBrokerConfig` lists (checked against Kafka 4.4 for every key
//! Runnel knows): the broker synonyms of topic configs (`log.retention.ms`, `log.segment.bytes`,
//! `log.cleanup.policy`, `message.max.bytes`, `compression.type`, `min.insync.replicas`, ...), the cleaner's
//! `log.cleaner.*` settings, `producer.id.expiration.ms`, the replication throttles (KIP-73) and the thread
//! counts. Everything else (`node.id`,
//! `log.dirs`, `num.partitions`, `log.retention.hours`, ...) is read-only: INVALID_REQUEST (42)
//! "Cannot update these configs dynamically: [k1, k2]". Bad values are INVALID_REQUEST with Kafka's
//! "Invalid value V for configuration K: REASON". Unknown keys are INVALID_CONFIG (40) naming the key (Kafka
//! stores unknown broker keys as custom configs; Runnel refuses them, as it refuses them at startup).
//!
//! This type is the one resolver of both modes (levels, validation, effective config, synonyms); where the
//! levels are stored is the mode's [`crate::config_admin::BrokerConfigAdmin`]:
//! - standalone ([`DynamicBrokerConfig::load`]): `<log.dirs>/dynamic-broker-configs.json`, rewritten whole and
//!   atomically (temp file, fsync, rename, fsync dir) on every change ([`DynamicBrokerConfig::alter`]):
//!   `{"version":1,"default":{KEY:VALUE,...},"brokers":{"NODE_ID":{KEY:VALUE,...},...}}`. Recovery rule: a
//!   missing file means no dynamic configs; a file that does not parse is a startup error naming it;
//! - cluster member ([`DynamicBrokerConfig::following_image`]): the metadata log's `ConfigRecord`s of resource
//!   type BROKER (KIP-631), laid in from each new image with [`DynamicBrokerConfig::replace_levels`]; every
//!   broker id's level is held, so a change for another broker may be sent to any broker, as in Kafka.
//!
//! In both, entries that are no longer valid (unknown or read-only key, bad value) are logged and skipped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use serde::{Deserialize, Serialize};

pub use crate::config::broker_synonyms;
use crate::config::{broker_def, keys, BrokerConfig, ConfigType};
use crate::error::AlterConfigError;
use crate::metadata::{write_atomically, MetadataError};
use crate::reconfigurable::is_listener_ssl_key;
pub use crate::reconfigurable::Reconfigurable;

/// File name of the persisted dynamic configs inside the data directory.
pub const DYNAMIC_CONFIG_FILE: &str = "dynamic-broker-configs.json";

/// DescribeConfigs `config_source` codes (Kafka's `DescribeConfigsResponse.ConfigSource`).
pub mod source {
    /// A topic override.
    pub const DYNAMIC_TOPIC_CONFIG: i8 = 1;
    /// A dynamic config of this broker.
    pub const DYNAMIC_BROKER_CONFIG: i8 = 2;
    /// A dynamic cluster-wide default.
    pub const DYNAMIC_DEFAULT_BROKER_CONFIG: i8 = 3;
    /// The broker's properties file or `--set`.
    pub const STATIC_BROKER_CONFIG: i8 = 4;
    /// The built-in default.
    pub const DEFAULT_CONFIG: i8 = 5;
}

/// Which dynamic level a BROKER resource addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigLevel {
    /// Resource name = this broker's node id.
    PerBroker,
    /// Resource name `""`: the cluster-wide default.
    ClusterDefault,
    /// Resource name = another broker's id (a cluster member's AlterConfigs only; validated against this
    /// broker's static config, as Kafka's receiving broker does).
    OtherBroker(i32),
}

/// One entry of a DescribeConfigs synonyms list: a key, its value at one level (`None` for secrets) and the
/// level's source code (see [`source`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigSynonym {
    /// Broker key, e.g. `log.retention.hours`.
    pub name: String,
    /// Value at that level.
    pub value: Option<String>,
    /// Source code (2..=5).
    pub source: i8,
}

/// How a dynamic key's value is checked beyond its type.
#[derive(Debug, Clone, Copy)]
enum Check {
    Any,
    AtLeast(i64),
    Ratio,
    OneOf(&'static [&'static str]),
    ListOf(&'static [&'static str]),
    DedupeBuffer,
}

const COMPRESSION_TYPES: &[&str] = &["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"];

/// The keys Runnel knows that Kafka lets change dynamically (per broker and cluster-wide), with their checks.
const DYNAMIC_KEYS: &[(&str, Check)] = &[
    ("log.segment.bytes", Check::AtLeast(1_048_576)),
    ("log.roll.ms", Check::AtLeast(1)),
    ("log.roll.jitter.ms", Check::AtLeast(0)),
    ("log.retention.ms", Check::Any),
    ("log.retention.bytes", Check::Any),
    ("log.index.interval.bytes", Check::AtLeast(0)),
    ("log.index.size.max.bytes", Check::AtLeast(4)),
    ("log.flush.interval.messages", Check::AtLeast(1)),
    ("log.flush.interval.ms", Check::Any),
    (
        "log.message.timestamp.type",
        Check::OneOf(&["CreateTime", "LogAppendTime"]),
    ),
    ("log.message.timestamp.before.max.ms", Check::AtLeast(0)),
    ("log.message.timestamp.after.max.ms", Check::AtLeast(0)),
    ("log.cleanup.policy", Check::ListOf(&["compact", "delete"])),
    ("log.cleaner.delete.retention.ms", Check::AtLeast(0)),
    ("log.cleaner.min.compaction.lag.ms", Check::AtLeast(0)),
    ("log.cleaner.max.compaction.lag.ms", Check::AtLeast(1)),
    ("log.cleaner.min.cleanable.ratio", Check::Ratio),
    ("log.segment.delete.delay.ms", Check::AtLeast(0)),
    ("log.cleaner.dedupe.buffer.size", Check::DedupeBuffer),
    ("log.cleaner.io.max.bytes.per.second", Check::Any),
    ("log.cleaner.backoff.ms", Check::AtLeast(0)),
    ("log.cleaner.threads", Check::AtLeast(0)),
    ("log.preallocate", Check::Any),
    ("message.max.bytes", Check::AtLeast(0)),
    ("leader.replication.throttled.rate", Check::AtLeast(0)),
    ("follower.replication.throttled.rate", Check::AtLeast(0)),
    (
        "replica.alter.log.dirs.io.max.bytes.per.second",
        Check::AtLeast(0),
    ),
    ("compression.type", Check::OneOf(COMPRESSION_TYPES)),
    ("min.insync.replicas", Check::AtLeast(1)),
    ("unclean.leader.election.enable", Check::Any),
    ("producer.id.expiration.ms", Check::AtLeast(1)),
    ("num.network.threads", Check::AtLeast(1)),
    ("num.io.threads", Check::AtLeast(1)),
    ("num.recovery.threads.per.data.dir", Check::AtLeast(1)),
    // KIP-1066; read by the controller from the metadata image (`MetadataImage::is_cordoned`).
    ("cordoned.log.dirs", Check::Any),
];

/// Keys Kafka updates only per broker, never at the cluster-default level. Runnel cannot rebind its listener
/// live, so they are read-only at both levels here; the cluster-default level answers with Kafka's message.
const PER_BROKER_ONLY_KEYS: &[&str] = &["listeners", "listener.security.protocol.map"];

/// True for a key Kafka updates only per broker: [`PER_BROKER_ONLY_KEYS`] and the per-listener TLS keys.
fn is_per_broker_only(key: &str) -> bool {
    PER_BROKER_ONLY_KEYS.contains(&key) || is_listener_ssl_key(key)
}

/// True when `key` can be changed with AlterConfigs on a BROKER resource.
pub fn is_dynamic(key: &str) -> bool {
    DYNAMIC_KEYS.iter().any(|(k, _)| *k == key) || is_listener_ssl_key(key)
}

/// Errors opening the persisted dynamic configs.
#[derive(Debug, thiserror::Error)]
pub enum DynamicConfigError {
    /// The file exists but cannot be read.
    #[error("reading {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file does not parse.
    #[error("{path} is not a valid dynamic broker config file: {reason}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Persisted {
    version: u32,
    #[serde(default)]
    default: BTreeMap<String, String>,
    #[serde(default)]
    brokers: BTreeMap<String, BTreeMap<String, String>>,
}

#[derive(Debug, Default, Clone)]
struct Levels {
    /// Per-broker configs of every node id seen in the file (only this node's apply).
    brokers: BTreeMap<String, BTreeMap<String, String>>,
    /// Cluster-wide defaults.
    default: BTreeMap<String, String>,
}

/// The dynamic broker config levels of this broker, their persistence, and the resulting effective config.
#[derive(Debug)]
pub struct DynamicBrokerConfig {
    static_config: BrokerConfig,
    path: Option<PathBuf>,
    /// Levels of other broker ids may be addressed (a cluster member's levels come from the image).
    other_brokers: bool,
    levels: Mutex<Levels>,
    effective: RwLock<Arc<BrokerConfig>>,
    reconfigurables: RwLock<Vec<Arc<dyn Reconfigurable>>>,
}

impl DynamicBrokerConfig {
    /// Loads `<log_dir>/dynamic-broker-configs.json` (if present) over `static_config`. Errors: the file cannot
    /// be read or does not parse. Invalid entries are skipped with a warning.
    pub fn load(static_config: BrokerConfig) -> Result<DynamicBrokerConfig, DynamicConfigError> {
        let path = static_config.log_dir.join(DYNAMIC_CONFIG_FILE);
        let mut levels = Levels::default();
        match std::fs::read(&path) {
            Ok(bytes) => {
                let p: Persisted =
                    serde_json::from_slice(&bytes).map_err(|e| DynamicConfigError::Corrupt {
                        path: path.clone(),
                        reason: e.to_string(),
                    })?;
                if p.version != 1 {
                    return Err(DynamicConfigError::Corrupt {
                        path,
                        reason: format!("unsupported version {}", p.version),
                    });
                }
                levels.default = keep_valid(p.default, ConfigLevel::ClusterDefault, &static_config);
                levels.brokers = p
                    .brokers
                    .into_iter()
                    .map(|(id, m)| (id, keep_valid(m, ConfigLevel::PerBroker, &static_config)))
                    .collect();
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(DynamicConfigError::Io { path, source }),
        }
        let me = DynamicBrokerConfig {
            effective: RwLock::new(Arc::new(static_config.clone())),
            static_config,
            path: Some(path),
            other_brokers: false,
            levels: Mutex::new(levels),
            reconfigurables: RwLock::default(),
        };
        me.recompute(&me.levels.lock());
        Ok(me)
    }

    /// No dynamic configs and no persistence: the effective config is `static_config` (tests, and components
    /// that only need the static view).
    pub fn in_memory(static_config: BrokerConfig) -> DynamicBrokerConfig {
        DynamicBrokerConfig {
            effective: RwLock::new(Arc::new(static_config.clone())),
            static_config,
            path: None,
            other_brokers: false,
            levels: Mutex::new(Levels::default()),
            reconfigurables: RwLock::default(),
        }
    }

    /// Registers `r` to check and follow changes of the effective config (the TLS listeners).
    pub fn add_reconfigurable(&self, r: Arc<dyn Reconfigurable>) {
        self.reconfigurables.write().push(r);
    }

    /// A cluster member's dynamic configs: no levels until the first metadata image is laid in with
    /// [`DynamicBrokerConfig::replace_levels`]; every broker id may be addressed. A
    /// `dynamic-broker-configs.json` left in the data directory (a standalone broker's, or one written before
    /// cluster members kept these levels in the metadata log) is not read; a warning names it.
    pub fn following_image(static_config: BrokerConfig) -> DynamicBrokerConfig {
        let file = static_config.log_dir.join(DYNAMIC_CONFIG_FILE);
        if file.exists() {
            tracing::warn!(file = %file.display(), "ignoring the dynamic broker config file: a cluster member's dynamic broker configs are in the metadata log");
        }
        DynamicBrokerConfig {
            other_brokers: true,
            ..DynamicBrokerConfig::in_memory(static_config)
        }
    }

    /// The static config (file and `--set`), without dynamic values.
    pub fn static_config(&self) -> &BrokerConfig {
        &self.static_config
    }

    /// The static config with the cluster-default level, then this broker's level, laid over its explicit keys.
    pub fn effective(&self) -> Arc<BrokerConfig> {
        self.effective.read().clone()
    }

    /// Maps a BROKER resource name to a level: `""` is the cluster default, this broker's node id is
    /// per-broker. Errors (INVALID_REQUEST, Kafka's messages): a name that is not an integer or is another
    /// broker's id. `for_describe` picks DescribeConfigs' wording over AlterConfigs'.
    pub fn resolve(
        &self,
        resource_name: &str,
        for_describe: bool,
    ) -> Result<ConfigLevel, AlterConfigError> {
        if resource_name.is_empty() {
            return Ok(ConfigLevel::ClusterDefault);
        }
        let node = self.static_config.node_id.get();
        let Ok(id) = resource_name.parse::<i32>() else {
            let what = if for_describe { "Broker" } else { "Node" };
            return Err(AlterConfigError::InvalidRequest(format!(
                "{what} id must be an integer, but it is: {resource_name}"
            )));
        };
        if id != node && self.other_brokers && !for_describe && id >= 0 {
            return Ok(ConfigLevel::OtherBroker(id));
        }
        if id != node {
            let or_empty = if for_describe { " or empty string" } else { "" };
            return Err(AlterConfigError::InvalidRequest(format!(
                "Unexpected broker id, expected {node}{or_empty}, but received {resource_name}"
            )));
        }
        Ok(ConfigLevel::PerBroker)
    }

    /// The dynamic value of `key` at `level`, if set there.
    pub fn get(&self, level: ConfigLevel, key: &str) -> Option<String> {
        let levels = self.levels.lock();
        self.level_map(&levels, level)
            .and_then(|m| m.get(key).cloned())
    }

    /// Every key set at `level`.
    pub fn level_configs(&self, level: ConfigLevel) -> BTreeMap<String, String> {
        let levels = self.levels.lock();
        self.level_map(&levels, level).cloned().unwrap_or_default()
    }

    /// The value `key` has at `level` when `level` itself does not set it: for the per-broker level the
    /// cluster default, else the static/default value; for the cluster default the static/default value.
    /// This is the base that IncrementalAlterConfigs APPEND / SUBTRACT edit.
    pub fn value_or_inherited(&self, level: ConfigLevel, key: &str) -> Option<String> {
        self.inherited_in(&self.levels.lock(), level, key)
    }

    fn inherited_in(&self, levels: &Levels, level: ConfigLevel, key: &str) -> Option<String> {
        if let Some(v) = self.level_map(levels, level).and_then(|m| m.get(key)) {
            return Some(v.clone());
        }
        if level != ConfigLevel::ClusterDefault {
            if let Some(v) = levels.default.get(key) {
                return Some(v.clone());
            }
        }
        self.static_config.value(key)
    }

    /// Checks `entries` (in request order) as the new values of `level`: every key must be known and dynamic
    /// (read-only keys are listed together, as Kafka does), every value valid. Errors: INVALID_CONFIG (40) for
    /// an unknown key; INVALID_REQUEST (42) for read-only keys and bad values.
    pub fn validate(
        &self,
        level: ConfigLevel,
        entries: &[(String, String)],
    ) -> Result<(), AlterConfigError> {
        self.validate_in(&self.levels.lock(), level, entries)
    }

    /// [`DynamicBrokerConfig::validate`] against `levels` (held by the caller).
    fn validate_in(
        &self,
        levels: &Levels,
        level: ConfigLevel,
        entries: &[(String, String)],
    ) -> Result<(), AlterConfigError> {
        if let Some((k, _)) = entries.iter().find(|(k, _)| broker_def(k).is_none()) {
            return Err(AlterConfigError::UnknownKey(k.clone()));
        }
        if level == ConfigLevel::ClusterDefault {
            let per_broker: Vec<&str> = entries
                .iter()
                .map(|(k, _)| k.as_str())
                .filter(|k| is_per_broker_only(k))
                .collect();
            if !per_broker.is_empty() {
                return Err(AlterConfigError::InvalidRequest(format!(
                        "Cannot update these configs at default cluster level, broker id must be specified: [{}]",
                        per_broker.join(", ")
                    ),
                ));
            }
        }
        let read_only: Vec<&str> = entries
            .iter()
            .map(|(k, _)| k.as_str())
            .filter(|k| !is_dynamic(k))
            .collect();
        if !read_only.is_empty() {
            return Err(AlterConfigError::InvalidRequest(format!(
                "Cannot update these configs dynamically: [{}]",
                read_only.join(", ")
            )));
        }
        let threads = entries
            .iter()
            .find(|(k, _)| k == "log.cleaner.threads")
            .map(|(_, v)| v.clone())
            .or_else(|| self.inherited_in(levels, level, "log.cleaner.threads"))
            .and_then(|v| v.trim().parse::<i64>().ok())
            .unwrap_or(1)
            .max(1);
        for (k, v) in entries {
            validate_value(k, v, threads)?;
        }
        if level == ConfigLevel::PerBroker && entries.iter().any(|(k, _)| is_listener_ssl_key(k)) {
            // This broker's listeners must load the new stores (Kafka validates the new SSL engine first).
            let mut next = levels.clone();
            let map = entries.iter().cloned().collect();
            next.brokers.insert(self.resource_name(level), map);
            crate::reconfigurable::validate_all(
                &self.reconfigurables.read(),
                &self.overlay(&next),
            )?;
        }
        Ok(())
    }

    /// The resource name of `level` in AlterConfigs and in the metadata log's `ConfigRecord`s: `""` for the
    /// cluster default, else the decimal broker id.
    pub fn resource_name(&self, level: ConfigLevel) -> String {
        match level {
            ConfigLevel::ClusterDefault => String::new(),
            ConfigLevel::PerBroker => self.static_config.node_id.to_string(),
            ConfigLevel::OtherBroker(id) => id.to_string(),
        }
    }

    /// The key set `level` would have after `ops` (`(key, Some(value))` set, `(key, None)` delete; with
    /// `replace`, every key not set by `ops` is removed first — AlterConfigs' semantics), checked with
    /// [`DynamicBrokerConfig::validate`] — the one validation of both modes. Errors: as `validate`.
    pub fn next_level(
        &self,
        level: ConfigLevel,
        ops: &[(String, Option<String>)],
        replace: bool,
    ) -> Result<BTreeMap<String, String>, AlterConfigError> {
        let levels = self.levels.lock();
        self.next_of(&levels, level, ops, replace)
    }

    fn next_of(
        &self,
        levels: &Levels,
        level: ConfigLevel,
        ops: &[(String, Option<String>)],
        replace: bool,
    ) -> Result<BTreeMap<String, String>, AlterConfigError> {
        let mut next = match replace {
            true => BTreeMap::new(),
            false => self.level_map(levels, level).cloned().unwrap_or_default(),
        };
        for (k, v) in ops {
            match v {
                Some(v) => next.insert(k.clone(), v.clone()),
                None => next.remove(k),
            };
        }
        // The request's keys first, in request order, so errors name them as Kafka does; then the whole set.
        let given: Vec<(String, String)> = ops
            .iter()
            .filter_map(|(k, v)| v.clone().map(|v| (k.clone(), v)))
            .collect();
        self.validate_in(levels, level, &given)?;
        let entries: Vec<(String, String)> = next.clone().into_iter().collect();
        self.validate_in(levels, level, &entries)?;
        Ok(next)
    }

    /// Applies `ops` to `level` as [`DynamicBrokerConfig::next_level`] computes it, persists the result (the
    /// standalone file) and recomputes [`DynamicBrokerConfig::effective`]; one change at a time, each from
    /// the levels the previous one left. Errors: as `validate`; KAFKA_STORAGE_ERROR (56) when the file
    /// cannot be written (nothing changes then).
    pub fn alter(
        &self,
        level: ConfigLevel,
        ops: &[(String, Option<String>)],
        replace: bool,
    ) -> Result<(), AlterConfigError> {
        let mut levels = self.levels.lock();
        let map = self.next_of(&levels, level, ops, replace)?;
        let mut next = Levels {
            brokers: levels.brokers.clone(),
            default: levels.default.clone(),
        };
        match level {
            ConfigLevel::ClusterDefault => next.default = map,
            ConfigLevel::PerBroker | ConfigLevel::OtherBroker(_) => {
                let id = self.resource_name(level);
                if map.is_empty() {
                    next.brokers.remove(&id);
                } else {
                    next.brokers.insert(id, map);
                }
            }
        }
        self.persist(&next)
            .map_err(|e| AlterConfigError::Storage(e.to_string()))?;
        *levels = next;
        self.recompute(&levels);
        tracing::info!(?level, "dynamic broker configs changed");
        self.notify_reconfigurables();
        Ok(())
    }

    /// Replaces every key of `level` with `entries` (AlterConfigs semantics; a key given twice keeps its last
    /// value): [`DynamicBrokerConfig::alter`] with `replace`. `validate_only` checks and changes nothing.
    pub fn set(
        &self,
        level: ConfigLevel,
        entries: Vec<(String, String)>,
        validate_only: bool,
    ) -> Result<(), AlterConfigError> {
        let ops: Vec<(String, Option<String>)> =
            entries.into_iter().map(|(k, v)| (k, Some(v))).collect();
        if validate_only {
            return self.next_level(level, &ops, true).map(|_| ());
        }
        self.alter(level, &ops, true)
    }

    /// Replaces every level with those of a metadata image (`broker_configs`: `""` the cluster default,
    /// else a decimal broker id), skipping invalid entries with a warning, and recomputes
    /// [`DynamicBrokerConfig::effective`]. Returns whether this broker's levels (its own and the default)
    /// changed.
    pub fn replace_levels(
        &self,
        broker_configs: &BTreeMap<String, BTreeMap<String, String>>,
    ) -> bool {
        let mut next = Levels::default();
        for (name, map) in broker_configs {
            let level = match name.as_str() {
                "" => ConfigLevel::ClusterDefault,
                _ => ConfigLevel::PerBroker,
            };
            let kept = keep_valid(map.clone(), level, &self.static_config);
            match level {
                ConfigLevel::ClusterDefault => next.default = kept,
                _ => {
                    next.brokers.insert(name.clone(), kept);
                }
            }
        }
        let mut levels = self.levels.lock();
        let changed = levels.default != next.default
            || self.level_map(&levels, ConfigLevel::PerBroker)
                != self.level_map(&next, ConfigLevel::PerBroker);
        *levels = next;
        self.recompute(&levels);
        drop(levels);
        if changed {
            tracing::info!("dynamic broker configs changed in the metadata log");
            self.notify_reconfigurables();
        }
        changed
    }

    /// The synonyms of broker key `name` across the levels, as Kafka lists them: for each of `name`'s
    /// [`broker_synonyms`] the per-broker values, then the cluster defaults, then static values, then built-in
    /// defaults; leading entries for other names are dropped (so `log.retention.ms` unset everywhere lists
    /// nothing, even though `log.retention.hours` has a default). Secrets have `None` values.
    pub fn synonyms(&self, name: &str) -> Vec<ConfigSynonym> {
        let own = [name];
        let names: &[&str] = match broker_synonyms(name) {
            [] => &own,
            s => s,
        };
        let sensitive = broker_def(name).is_some_and(|d| d.ty == ConfigType::Password);
        let levels = self.levels.lock();
        let per_broker = self.level_map(&levels, ConfigLevel::PerBroker);
        let mut out = Vec::new();
        let mut add = |n: &str, v: Option<&String>, src: i8| {
            if let Some(v) = v {
                out.push(ConfigSynonym {
                    name: n.to_string(),
                    value: (!sensitive).then(|| v.clone()),
                    source: src,
                });
            }
        };
        for n in names {
            add(
                n,
                per_broker.and_then(|m| m.get(*n)),
                source::DYNAMIC_BROKER_CONFIG,
            );
        }
        for n in names {
            add(
                n,
                levels.default.get(*n),
                source::DYNAMIC_DEFAULT_BROKER_CONFIG,
            );
        }
        for n in names {
            add(
                n,
                self.static_config.explicit.get(*n),
                source::STATIC_BROKER_CONFIG,
            );
        }
        for n in names {
            let d = broker_def(n).and_then(|d| d.default).map(str::to_string);
            add(n, d.as_ref(), source::DEFAULT_CONFIG);
        }
        let start = out.iter().position(|s| s.name == name).unwrap_or(out.len());
        out.split_off(start)
    }

    fn level_map<'a>(
        &self,
        levels: &'a Levels,
        level: ConfigLevel,
    ) -> Option<&'a BTreeMap<String, String>> {
        match level {
            ConfigLevel::ClusterDefault => Some(&levels.default),
            ConfigLevel::PerBroker | ConfigLevel::OtherBroker(_) => {
                levels.brokers.get(&self.resource_name(level))
            }
        }
    }

    fn recompute(&self, levels: &Levels) {
        *self.effective.write() = Arc::new(self.overlay(levels));
    }

    /// Tells every [`Reconfigurable`] the current effective config.
    fn notify_reconfigurables(&self) {
        let effective = self.effective();
        for r in self.reconfigurables.read().iter() {
            r.reconfigure(&effective);
        }
    }

    /// The static config with `levels` laid over it.
    fn overlay(&self, levels: &Levels) -> BrokerConfig {
        let mut c = self.static_config.clone();
        let per_broker = self.level_map(levels, ConfigLevel::PerBroker);
        for (k, v) in levels
            .default
            .iter()
            .chain(per_broker.into_iter().flatten())
        {
            c.explicit.insert(k.clone(), v.clone());
        }
        // The one typed field with a dynamic key: follow the levels just laid over (values were validated).
        c.producer_id_expiration_ms = c.get(keys::PRODUCER_ID_EXPIRATION_MS);
        c
    }

    /// Rewrites the file with `levels` (nothing without a path). Errors: the file cannot be written.
    fn persist(&self, levels: &Levels) -> Result<(), MetadataError> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let p = Persisted {
            version: 1,
            default: levels.default.clone(),
            brokers: levels.brokers.clone(),
        };
        let bytes = serde_json::to_vec_pretty(&p).map_err(|e| MetadataError::Invalid {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        let dir = path.parent().unwrap_or(Path::new("."));
        write_atomically(dir, DYNAMIC_CONFIG_FILE, &bytes)
    }
}

/// Drops (with a warning) persisted entries that are no longer valid for `level`.
fn keep_valid(
    map: BTreeMap<String, String>,
    level: ConfigLevel,
    static_config: &BrokerConfig,
) -> BTreeMap<String, String> {
    let checker = DynamicBrokerConfig::in_memory(static_config.clone());
    map.into_iter()
        .filter(|(k, v)| {
            match checker.validate(level, &[(k.clone(), v.clone())]) {
                Ok(()) => true,
                Err(e) => {
                    tracing::warn!(key = %k, value = %v, error = %e, "ignoring persisted dynamic broker config");
                    false
                }
            }
        })
        .collect()
}

/// Checks one dynamic key's value: its type, then its range or allowed values. Errors are INVALID_REQUEST
/// "Invalid value V for configuration K: REASON" (Kafka's wording).
fn validate_value(key: &str, value: &str, cleaner_threads: i64) -> Result<(), AlterConfigError> {
    let bad = |why: String| {
        AlterConfigError::InvalidRequest(format!(
            "Invalid value {value} for configuration {key}: {why}"
        ))
    };
    let ty = broker_def(key).map_or(ConfigType::String, |d| d.ty);
    let v = value.trim();
    let mut number: Option<f64> = None;
    match ty {
        ConfigType::Int => {
            let n: i32 = v
                .parse()
                .map_err(|_| bad("Not a number of type INT".into()))?;
            number = Some(f64::from(n));
        }
        ConfigType::Long => {
            let n: i64 = v
                .parse()
                .map_err(|_| bad("Not a number of type LONG".into()))?;
            number = Some(n as f64);
        }
        ConfigType::Double => {
            let n: f64 = v
                .parse()
                .map_err(|_| bad("Not a number of type DOUBLE".into()))?;
            number = Some(n);
        }
        ConfigType::Boolean => {
            if !v.eq_ignore_ascii_case("true") && !v.eq_ignore_ascii_case("false") {
                return Err(bad("Expected value to be either true or false".into()));
            }
        }
        ConfigType::String | ConfigType::List | ConfigType::Password | ConfigType::Class => {}
    }
    let check = DYNAMIC_KEYS
        .iter()
        .find(|(k, _)| *k == key)
        .map_or(Check::Any, |(_, c)| *c);
    match check {
        Check::Any => {}
        Check::AtLeast(min) => {
            if number.is_some_and(|n| n < min as f64) {
                return Err(bad(format!("Value must be at least {min}")));
            }
        }
        Check::Ratio => {
            let n = number.unwrap_or(0.0);
            if n < 0.0 {
                return Err(bad("Value must be at least 0".into()));
            }
            if n > 1.0 || n.is_nan() {
                return Err(bad("Value must be no more than 1".into()));
            }
        }
        Check::OneOf(allowed) => {
            if !allowed.contains(&v) {
                return Err(bad(format!(
                    "String must be one of: {}",
                    allowed.join(", ")
                )));
            }
        }
        Check::ListOf(allowed) => {
            for item in v.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                if !allowed.contains(&item) {
                    return Err(AlterConfigError::InvalidRequest(format!(
                        "Invalid value {item} for configuration {key}: String must be one of: {}",
                        allowed.join(", ")
                    )));
                }
            }
        }
        Check::DedupeBuffer => {
            if number.is_some_and(|n| n < (1_048_576 * cleaner_threads) as f64) {
                return Err(AlterConfigError::InvalidRequest(format!(
                    "requirement failed: {key} must be at least 1MB per cleaner thread."
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "dynamic_config_tests.rs"]
mod tests;
