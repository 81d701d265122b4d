//! Topic lifecycle: validation, creation (CreateTopics and auto-creation from Metadata), deletion, and the
//! mapping from topic configs to the storage `LogConfig`.

use std::collections::BTreeMap;
use std::sync::Arc;

use protocol::error::ErrorCode;
use protocol::record::{Compression, TimestampType};
use storage::LogConfig;
use uuid::Uuid;

use controller::CreateTopic;

use crate::cluster::{block_on, BrokerCluster};
use crate::config::{topic_value, validate_topic_config, BrokerConfig, ConfigError};
use crate::dynamic_config::DynamicBrokerConfig;
use crate::metadata::{MetadataStore, TopicMetadata, UpdateError};
use crate::replica_manager::ReplicaManager;

/// Longest legal topic name (Kafka's `Topic.MAX_NAME_LENGTH`).
pub const MAX_TOPIC_NAME_LENGTH: usize = 249;

/// An error with the Kafka code and message a client sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// Kafka error code.
    pub code: ErrorCode,
    /// Human-readable reason.
    pub message: String,
}

impl ApiError {
    /// Builds an error.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            message: message.into(),
        }
    }
}

impl From<ConfigError> for ApiError {
    fn from(e: ConfigError) -> ApiError {
        ApiError::new(ErrorCode::INVALID_CONFIG, e.to_string())
    }
}

/// Checks a topic name as Kafka does: 1..=249 characters of `[a-zA-Z0-9._-]`, not `.` or `..`.
/// Error: INVALID_TOPIC_EXCEPTION (17).
pub fn validate_topic_name(name: &str) -> Result<(), ApiError> {
    let bad = |why: &str| {
        ApiError::new(
            ErrorCode::INVALID_TOPIC_EXCEPTION,
            format!("topic name '{name}' is illegal: {why}"),
        )
    };
    if name.is_empty() {
        return Err(bad("it is empty"));
    }
    if name == "." || name == ".." {
        return Err(bad("'.' and '..' are not allowed"));
    }
    if name.len() > MAX_TOPIC_NAME_LENGTH {
        return Err(bad("it is longer than 249 characters"));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
    {
        return Err(bad(
            "only ASCII alphanumerics, '.', '_' and '-' are allowed",
        ));
    }
    Ok(())
}

/// Creates, deletes and configures topics.
#[derive(Debug)]
pub struct TopicManager {
    config: BrokerConfig,
    metadata: Arc<MetadataStore>,
    replica_manager: Arc<ReplicaManager>,
    /// Dynamic broker configs (KIP-226): topic `LogConfig`s resolve broker defaults through it.
    dynamic: Arc<DynamicBrokerConfig>,
    /// Cluster mode: topic changes go to the controller (see [`crate::cluster`]).
    cluster: Option<Arc<BrokerCluster>>,
}

impl TopicManager {
    /// Creates the manager.
    pub fn new(
        config: BrokerConfig,
        metadata: Arc<MetadataStore>,
        replica_manager: Arc<ReplicaManager>,
    ) -> TopicManager {
        TopicManager {
            dynamic: Arc::new(DynamicBrokerConfig::in_memory(config.clone())),
            config,
            metadata,
            replica_manager,
            cluster: None,
        }
    }

    /// Cluster mode: sends topic changes to the controller through `cluster`.
    pub fn with_cluster(mut self, cluster: Option<Arc<BrokerCluster>>) -> TopicManager {
        self.cluster = cluster;
        self
    }

    /// Shares `dynamic` (see [`crate::dynamic_config`]): topic `LogConfig`s then follow dynamic broker configs.
    pub fn with_dynamic_config(mut self, dynamic: Arc<DynamicBrokerConfig>) -> TopicManager {
        self.dynamic = dynamic;
        self
    }

    /// Opens every partition of every known topic (startup).
    pub fn load_all(&self) -> Result<(), storage::StorageError> {
        for (name, topic) in self.metadata.topics() {
            let config = self.log_config(&topic.configs);
            for p in 0..topic.partitions {
                self.replica_manager
                    .make_leader(&name, p, topic.topic_id, config.clone())?;
            }
        }
        Ok(())
    }

    /// Creates a topic. `partitions` / `replication_factor` of -1 take the broker defaults.
    /// Errors: INVALID_TOPIC_EXCEPTION (17), TOPIC_ALREADY_EXISTS (36), INVALID_PARTITIONS (37),
    /// INVALID_REPLICATION_FACTOR (38), INVALID_CONFIG (40), KAFKA_STORAGE_ERROR (56).
    pub fn create_topic(
        &self,
        name: &str,
        partitions: i32,
        replication_factor: i16,
        configs: BTreeMap<String, String>,
        validate_only: bool,
    ) -> Result<TopicMetadata, ApiError> {
        validate_topic_name(name)?;
        if self.metadata.topic(name).is_some() {
            return Err(ApiError::new(
                ErrorCode::TOPIC_ALREADY_EXISTS,
                format!("Topic '{name}' already exists."),
            ));
        }
        if let Some(other) = self.metadata.colliding_topic(name) {
            return Err(ApiError::new(
                ErrorCode::INVALID_TOPIC_EXCEPTION,
                format!(
                    "Topic '{name}' collides with existing topic '{other}' ('.' and '_' collide)."
                ),
            ));
        }
        let partitions = if partitions == -1 {
            self.config.num_partitions
        } else {
            partitions
        };
        if partitions < 1 {
            return Err(ApiError::new(
                ErrorCode::INVALID_PARTITIONS,
                format!("Number of partitions must be larger than 0, got {partitions}."),
            ));
        }
        let rf = if replication_factor == -1 {
            self.config.default_replication_factor
        } else {
            replication_factor
        };
        if rf < 1 {
            return Err(ApiError::new(
                ErrorCode::INVALID_REPLICATION_FACTOR,
                format!("Replication factor must be larger than 0, got {rf}."),
            ));
        }
        if rf > 1 && self.cluster.is_none() {
            return Err(ApiError::new(
                ErrorCode::INVALID_REPLICATION_FACTOR,
                format!("Replication factor: {rf} larger than available brokers: 1."),
            ));
        }
        for (k, v) in &configs {
            validate_topic_config(k, v)?;
        }
        self.check_partition_budget(i64::from(partitions))?;
        if let Some(cluster) = &self.cluster {
            // Placement and the replication-factor check against live brokers are the controller's.
            return block_on(cluster.create_topic(
                CreateTopic {
                    name: name.to_string(),
                    num_partitions: partitions,
                    replication_factor: rf,
                    assignments: Vec::new(),
                    configs,
                },
                validate_only,
            ));
        }
        let topic = TopicMetadata {
            topic_id: Uuid::new_v4(),
            partitions,
            configs,
        };
        if validate_only {
            return Ok(topic);
        }
        let created = self
            .metadata
            .create_topic(name, topic.clone())
            .map_err(|e| ApiError::new(ErrorCode::KAFKA_STORAGE_ERROR, e.to_string()))?;
        if !created {
            return Err(ApiError::new(
                ErrorCode::TOPIC_ALREADY_EXISTS,
                format!("Topic '{name}' already exists."),
            ));
        }
        let config = self.log_config(&topic.configs);
        for p in 0..partitions {
            self.replica_manager
                .make_leader(name, p, topic.topic_id, config.clone())
                .map_err(|e| ApiError::new(ErrorCode::KAFKA_STORAGE_ERROR, e.to_string()))?;
        }
        tracing::info!(topic = name, partitions, "created topic");
        Ok(topic)
    }

    /// Deletes a topic and its logs. Errors: UNKNOWN_TOPIC_OR_PARTITION (3), TOPIC_DELETION_DISABLED (73).
    pub fn delete_topic(&self, name: &str) -> Result<Uuid, ApiError> {
        if !self.config.delete_topic_enable {
            return Err(ApiError::new(
                ErrorCode::TOPIC_DELETION_DISABLED,
                "delete.topic.enable is false",
            ));
        }
        if let Some(cluster) = &self.cluster {
            return block_on(cluster.delete_topic(name));
        }
        let removed = self
            .metadata
            .delete_topic(name)
            .map_err(|e| ApiError::new(ErrorCode::KAFKA_STORAGE_ERROR, e.to_string()))?;
        let Some(topic) = removed else {
            return Err(ApiError::new(
                ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                "This server does not host this topic-partition.",
            ));
        };
        self.replica_manager
            .delete_topic(name)
            .map_err(|e| ApiError::new(ErrorCode::KAFKA_STORAGE_ERROR, e.to_string()))?;
        tracing::info!(topic = name, "deleted topic");
        Ok(topic.topic_id)
    }

    /// Replaces a topic's config overrides and applies them to its live partitions (retention, roll size,
    /// limits take effect at once). Errors: UNKNOWN_TOPIC_OR_PARTITION (3), INVALID_CONFIG (40).
    pub fn set_topic_configs(
        &self,
        name: &str,
        configs: BTreeMap<String, String>,
        validate_only: bool,
    ) -> Result<(), ApiError> {
        for (k, v) in &configs {
            validate_topic_config(k, v)?;
        }
        if let Some(cluster) = &self.cluster {
            return block_on(cluster.set_topic_configs(name, configs, validate_only));
        }
        if validate_only {
            return self
                .metadata
                .topic(name)
                .map(|_| ())
                .ok_or_else(unknown_topic);
        }
        let updated = self
            .metadata
            .update_topic(name, |t| -> Result<_, ApiError> {
                Ok(TopicMetadata {
                    configs: configs.clone(),
                    ..t.clone()
                })
            })
            .map_err(update_error)?
            .ok_or_else(unknown_topic)?;
        let config = self.log_config(&updated.configs);
        for p in 0..updated.partitions {
            if let Some(part) = self.replica_manager.partition(name, p) {
                part.set_config(config.clone());
            }
        }
        tracing::info!(topic = name, ?configs, "topic configs changed");
        Ok(())
    }

    /// Grows a topic to `count` partitions. Errors: UNKNOWN_TOPIC_OR_PARTITION (3), INVALID_PARTITIONS (37)
    /// when `count` is not larger than the current count.
    pub fn add_partitions(
        &self,
        name: &str,
        count: i32,
        validate_only: bool,
    ) -> Result<(), ApiError> {
        let check = |t: &TopicMetadata| -> Result<TopicMetadata, ApiError> {
            if count <= t.partitions {
                return Err(ApiError::new(
                    ErrorCode::INVALID_PARTITIONS,
                    format!(
                        "Topic currently has {} partitions, which is higher than or equal to the requested {count}.",
                        t.partitions
                    ),
                ));
            }
            Ok(TopicMetadata {
                partitions: count,
                ..t.clone()
            })
        };
        if let Some(t) = self.metadata.topic(name) {
            self.check_partition_budget(i64::from(count) - i64::from(t.partitions))?;
        }
        if let Some(cluster) = &self.cluster {
            let t = self.metadata.topic(name).ok_or_else(unknown_topic)?;
            check(&t)?;
            return block_on(cluster.create_partitions(name, count, validate_only));
        }
        if validate_only {
            let t = self.metadata.topic(name).ok_or_else(unknown_topic)?;
            return check(&t).map(|_| ());
        }
        let updated = self
            .metadata
            .update_topic(name, check)
            .map_err(update_error)?
            .ok_or_else(unknown_topic)?;
        let config = self.log_config(&updated.configs);
        for p in 0..updated.partitions {
            self.replica_manager
                .make_leader(name, p, updated.topic_id, config.clone())
                .map_err(|e| ApiError::new(ErrorCode::KAFKA_STORAGE_ERROR, e.to_string()))?;
        }
        tracing::info!(topic = name, partitions = count, "partitions added");
        Ok(())
    }

    /// The effective value of a topic config key.
    pub fn topic_config_value(
        &self,
        overrides: &BTreeMap<String, String>,
        key: &str,
    ) -> Option<String> {
        topic_value(&self.dynamic.effective(), overrides, key)
    }

    /// Builds the storage config of a topic from its overrides and the broker defaults.
    pub fn log_config(&self, overrides: &BTreeMap<String, String>) -> LogConfig {
        log_config(&self.dynamic.effective(), overrides)
    }

    /// Recomputes every topic's `LogConfig` from its overrides and the current broker defaults and applies it
    /// to the live partitions (after a dynamic broker config change).
    pub fn reapply_log_configs(&self) {
        for (name, topic) in self.metadata.topics() {
            let config = self.log_config(&topic.configs);
            for p in 0..topic.partitions {
                if let Some(part) = self.replica_manager.partition(&name, p) {
                    part.set_config(config.clone());
                }
            }
        }
    }
}

impl TopicManager {
    /// Refuses `more` new partitions when this broker would then hold more than [`partition_budget`]
    /// partitions in all (every topic's count, as if all were local): each partition keeps at least one
    /// file open, and running out of file handles mid-creation leaves a half-created topic and a broker
    /// that cannot accept connections. Error: INVALID_PARTITIONS (37), naming the limit.
    fn check_partition_budget(&self, more: i64) -> Result<(), ApiError> {
        let existing: i64 = self
            .metadata
            .topics()
            .values()
            .map(|t| i64::from(t.partitions))
            .sum();
        let budget = partition_budget();
        if more > 0 && existing + more > budget {
            return Err(ApiError::new(
                ErrorCode::INVALID_PARTITIONS,
                format!(
                    "{more} more partitions would make {} on this broker, over its limit of {budget} \
                     (derived from the open-file limit RLIMIT_NOFILE; raise it with `ulimit -n`).",
                    existing + more
                ),
            ));
        }
        Ok(())
    }
}

/// How many partitions this broker may hold: the soft open-file limit (RLIMIT_NOFILE) less a reserve
/// for connections and other files (a quarter of it, at most 1,024). Unlimited when the limit is unknown.
pub fn partition_budget() -> i64 {
    // SAFETY: getrlimit writes into the zeroed struct we pass and reads nothing else.
    let mut rl: libc::rlimit = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } != 0
        || rl.rlim_cur == libc::RLIM_INFINITY
    {
        return i64::MAX;
    }
    let soft = i64::try_from(rl.rlim_cur).unwrap_or(i64::MAX);
    soft - (soft / 4).min(1024)
}

fn unknown_topic() -> ApiError {
    ApiError::new(
        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
        "This server does not host this topic-partition.",
    )
}

fn update_error(e: UpdateError<ApiError>) -> ApiError {
    match e {
        UpdateError::Rejected(e) => e,
        UpdateError::Metadata(e) => ApiError::new(ErrorCode::KAFKA_STORAGE_ERROR, e.to_string()),
    }
}

/// Builds the storage config of a topic from its overrides and the broker defaults.
pub fn log_config(config: &BrokerConfig, overrides: &BTreeMap<String, String>) -> LogConfig {
    let int = |key: &str, default: i64| -> i64 {
        topic_value(config, overrides, key)
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(default)
    };
    let d = LogConfig::default();
    LogConfig {
        segment_bytes: int("segment.bytes", d.segment_bytes as i64) as _,
        segment_ms: int("segment.ms", d.segment_ms),
        retention_ms: int("retention.ms", d.retention_ms),
        retention_bytes: int("retention.bytes", d.retention_bytes),
        index_interval_bytes: int("index.interval.bytes", d.index_interval_bytes as i64) as _,
        segment_index_bytes: int("segment.index.bytes", d.segment_index_bytes as i64) as _,
        flush_messages: int("flush.messages", d.flush_messages),
        flush_ms: int("flush.ms", d.flush_ms),
        max_message_bytes: int("max.message.bytes", d.max_message_bytes as i64) as _,
        min_insync_replicas: int("min.insync.replicas", 1).max(1) as usize,
        message_timestamp_type: match topic_value(config, overrides, "message.timestamp.type")
            .as_deref()
        {
            Some("LogAppendTime") => TimestampType::LogAppendTime,
            _ => TimestampType::CreateTime,
        },
        producer_id_expiration_ms: config.producer_id_expiration_ms,
        compression_type: match topic_value(config, overrides, "compression.type").as_deref() {
            Some("uncompressed") => Some(Compression::None),
            Some("gzip") => Some(Compression::Gzip),
            Some("snappy") => Some(Compression::Snappy),
            Some("lz4") => Some(Compression::Lz4),
            Some("zstd") => Some(Compression::Zstd),
            _ => None,
        },
        cleanup_policy: topic_value(config, overrides, "cleanup.policy")
            .and_then(|v| LogConfig::parse_cleanup_policy(v.trim_matches(['[', ']'])))
            .unwrap_or(d.cleanup_policy),
        delete_retention_ms: int("delete.retention.ms", d.delete_retention_ms),
        min_compaction_lag_ms: int("min.compaction.lag.ms", d.min_compaction_lag_ms),
        max_compaction_lag_ms: int("max.compaction.lag.ms", d.max_compaction_lag_ms),
        min_cleanable_dirty_ratio: topic_value(config, overrides, "min.cleanable.dirty.ratio")
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|r| r.is_finite())
            .unwrap_or(d.min_cleanable_dirty_ratio),
        ..d
    }
}

/// The log cleaner's settings from the broker keys `log.cleaner.dedupe.buffer.size` (bytes),
/// `log.cleaner.io.max.bytes.per.second` and `log.cleaner.backoff.ms` (Kafka's names; defaults
/// 128 MiB, unlimited, 15000 ms when a key is not set).
pub fn cleaner_config(config: &BrokerConfig) -> storage::CleanerConfig {
    let num = |key: &str| {
        config
            .value(key)
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v > 0.0)
    };
    let d = storage::CleanerConfig::default();
    storage::CleanerConfig {
        dedupe_buffer_size: num("log.cleaner.dedupe.buffer.size")
            .map_or(d.dedupe_buffer_size, |v| v as usize),
        io_max_bytes_per_second: num("log.cleaner.io.max.bytes.per.second")
            .unwrap_or(d.io_max_bytes_per_second),
        backoff_ms: num("log.cleaner.backoff.ms").map_or(d.backoff_ms, |v| v as u64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compaction_configs_map_to_log_config() {
        let broker = BrokerConfig::from_pairs(&[]).unwrap();
        let d = log_config(&broker, &BTreeMap::new());
        assert_eq!(d.cleanup_policy, storage::CleanupPolicy::Delete);
        assert_eq!(d.delete_retention_ms, 86_400_000);
        assert_eq!(d.min_cleanable_dirty_ratio, 0.5);
        let o: BTreeMap<String, String> = [
            ("cleanup.policy", "compact,delete"),
            ("delete.retention.ms", "100"),
            ("min.compaction.lag.ms", "200"),
            ("max.compaction.lag.ms", "300"),
            ("min.cleanable.dirty.ratio", "0.1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let c = log_config(&broker, &o);
        assert_eq!(c.cleanup_policy, storage::CleanupPolicy::CompactDelete);
        assert_eq!(
            (
                c.delete_retention_ms,
                c.min_compaction_lag_ms,
                c.max_compaction_lag_ms
            ),
            (100, 200, 300)
        );
        assert_eq!(c.min_cleanable_dirty_ratio, 0.1);
        let mut o2 = BTreeMap::new();
        o2.insert("cleanup.policy".to_string(), "compact".to_string());
        assert_eq!(
            log_config(&broker, &o2).cleanup_policy,
            storage::CleanupPolicy::Compact
        );
    }

    #[test]
    fn topic_names() {
        assert!(validate_topic_name("orders-v1.x_y").is_ok());
        assert!(validate_topic_name("").is_err());
        assert!(validate_topic_name("..").is_err());
        assert!(validate_topic_name("a b").is_err());
        assert!(validate_topic_name(&"a".repeat(250)).is_err());
        assert!(validate_topic_name(&"a".repeat(249)).is_ok());
    }
}
