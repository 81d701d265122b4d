//! Topic lifecycle: validation of creation (CreateTopics and auto-creation from Metadata), deletion, config
//! changes and partition growth, the same in every mode; the change itself is the [`TopicAdmin`]'s.

use std::collections::BTreeMap;
use std::sync::Arc;

use storage::LogConfig;
use uuid::Uuid;

use crate::config::{topic_value, validate_topic_config, BrokerConfig};
use crate::dynamic_config::DynamicBrokerConfig;
pub use crate::error::TopicError;
use crate::metadata::{MetadataStore, TopicMetadata};
use crate::topic_admin::{check_partition_count, NewTopic, TopicAdmin};
use crate::topic_config::log_config;
use replica::replica_manager::ReplicaManager;

/// Longest legal topic name (Kafka's `Topic.MAX_NAME_LENGTH`).
pub const MAX_TOPIC_NAME_LENGTH: usize = 249;

/// Checks a topic name as Kafka does: 1..=249 characters of `[a-zA-Z0-9._-]`, not `.` or `..`.
/// Error: [`TopicError::InvalidTopic`].
pub fn validate_topic_name(name: &str) -> Result<(), TopicError> {
    let bad =
        |why: &str| TopicError::InvalidTopic(format!("topic name '{name}' is illegal: {why}"));
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

/// Validates topic changes the same way in every mode and hands them to the [`TopicAdmin`] (standalone or
/// quorum). Shared by the request handlers and the group coordinator (one instance per broker).
#[derive(Debug)]
pub struct TopicManager {
    config: BrokerConfig,
    metadata: Arc<MetadataStore>,
    replica_manager: Arc<ReplicaManager>,
    /// Dynamic broker configs (KIP-226): topic `LogConfig`s resolve broker defaults through it.
    dynamic: Arc<DynamicBrokerConfig>,
    admin: Arc<dyn TopicAdmin>,
}

impl TopicManager {
    /// The manager of a broker whose static config is `dynamic.static_config()`.
    pub fn new(
        metadata: Arc<MetadataStore>,
        replica_manager: Arc<ReplicaManager>,
        dynamic: Arc<DynamicBrokerConfig>,
        admin: Arc<dyn TopicAdmin>,
    ) -> TopicManager {
        TopicManager {
            config: dynamic.static_config().clone(),
            metadata,
            replica_manager,
            dynamic,
            admin,
        }
    }

    /// Opens every partition of every known topic (standalone startup), after deleting stray logs: logs in the
    /// data directory of a topic the registry no longer has, of an older topic of the same name, or of a
    /// partition past the topic's count — what a DeleteTopics cut short by a crash between its metadata
    /// rewrite and its log deletion leaves (Kafka's KAFKA-14616 handling; a cluster member does the same on
    /// its first metadata image).
    pub fn load_all(&self) -> Result<(), storage::StorageError> {
        let topics = self.metadata.topics();
        for (tp, log) in self.replica_manager.log_manager().all_logs() {
            let id = log.lock().topic_id();
            let known = topics.get(&tp.topic).is_some_and(|t| {
                (id.is_nil() || id == t.topic_id) && (0..t.partitions).contains(&tp.partition)
            });
            if !known {
                tracing::info!(topic = %tp.topic, partition = tp.partition, topic_id = %id, "deleting stray log");
                self.replica_manager
                    .stop_replica(&tp.topic, tp.partition, true)?;
            }
        }
        for (name, topic) in topics {
            let config = self.log_config(&topic.configs);
            for p in 0..topic.partitions {
                self.replica_manager
                    .make_leader(&name, p, topic.topic_id, config.clone())?;
            }
        }
        Ok(())
    }

    /// Brokers that can host replicas now (1 standalone).
    pub fn registered_brokers(&self) -> usize {
        self.admin.registered_brokers()
    }

    /// UnregisterBroker through the [`TopicAdmin`] (see [`TopicAdmin::unregister_broker`]).
    pub async fn unregister_broker(&self, id: types::BrokerId) -> Result<(), TopicError> {
        self.admin.unregister_broker(id).await
    }

    /// Partition reassignments through the [`TopicAdmin`] (see
    /// [`TopicAdmin::alter_partition_reassignments`]).
    pub async fn alter_partition_reassignments(
        &self,
        reassignments: Vec<metadata::Reassignment>,
        allow_replication_factor_change: bool,
    ) -> Result<Vec<Result<(), metadata::ControllerError>>, TopicError> {
        self.admin
            .alter_partition_reassignments(reassignments, allow_replication_factor_change)
            .await
    }

    /// A leader election through the [`TopicAdmin`] (see [`TopicAdmin::elect_leaders`]).
    pub async fn elect_leaders(
        &self,
        election: metadata::ElectionType,
        partitions: Option<Vec<(String, i32)>>,
    ) -> Result<Vec<metadata::ElectionResult>, TopicError> {
        self.admin.elect_leaders(election, partitions).await
    }

    /// Creates a topic. `partitions` / `replication_factor` of -1 take the broker defaults.
    /// Errors: INVALID_TOPIC_EXCEPTION (17), TOPIC_ALREADY_EXISTS (36), INVALID_PARTITIONS (37),
    /// INVALID_REPLICATION_FACTOR (38), INVALID_CONFIG (40), KAFKA_STORAGE_ERROR (56), controller errors.
    pub async fn create_topic(
        &self,
        name: &str,
        partitions: i32,
        replication_factor: i16,
        configs: BTreeMap<String, String>,
        validate_only: bool,
    ) -> Result<TopicMetadata, TopicError> {
        let counts = (partitions, replication_factor);
        (self.create_topic_assigned(name, counts, Vec::new(), configs, validate_only)).await
    }

    /// [`create_topic`](Self::create_topic) with explicit replica `assignments` (partition index, replica
    /// ids), in a cluster: when not empty they decide the partition count and replication factor
    /// (`counts` is ignored) and the controller checks them (Kafka's `validateManualPartitionAssignment`:
    /// numbered from 0, one length, no duplicate, every broker registered → INVALID_REPLICA_ASSIGNMENT);
    /// empty, the controller places `counts` (partitions, replication factor; -1 = the broker default).
    /// The name, configs and partition budget are checked here. Errors: as `create_topic`.
    pub async fn create_topic_assigned(
        &self,
        name: &str,
        counts: (i32, i16),
        assignments: Vec<(i32, Vec<types::BrokerId>)>,
        configs: BTreeMap<String, String>,
        validate_only: bool,
    ) -> Result<TopicMetadata, TopicError> {
        let (partitions, rf) = match assignments.first() {
            Some((_, replicas)) => (assignments.len() as i32, replicas.len() as i16),
            None => counts,
        };
        let mut topic = self.validate_new_topic(name, partitions, rf, configs)?;
        topic.assignments = assignments;
        self.admin.create_topic(topic, validate_only).await
    }

    fn validate_new_topic(
        &self,
        name: &str,
        partitions: i32,
        replication_factor: i16,
        configs: BTreeMap<String, String>,
    ) -> Result<NewTopic, TopicError> {
        validate_topic_name(name)?;
        if self.metadata.topic(name).is_some() {
            return Err(TopicError::AlreadyExists(name.to_string()));
        }
        if let Some(other) = self.metadata.colliding_topic(name) {
            return Err(TopicError::InvalidTopic(format!(
                "Topic '{name}' collides with existing topic '{other}' ('.' and '_' collide)."
            )));
        }
        let partitions = if partitions == -1 {
            self.config.num_partitions
        } else {
            partitions
        };
        if partitions < 1 {
            return Err(TopicError::InvalidPartitions(format!(
                "Number of partitions must be larger than 0, got {partitions}."
            )));
        }
        let rf = if replication_factor == -1 {
            self.config.default_replication_factor
        } else {
            replication_factor
        };
        if rf < 1 {
            return Err(TopicError::InvalidReplicationFactor(format!(
                "Replication factor must be larger than 0, got {rf}."
            )));
        }
        for (k, v) in &configs {
            validate_topic_config(k, v)?;
        }
        self.check_partition_budget(i64::from(partitions))?;
        Ok(NewTopic {
            name: name.to_string(),
            partitions,
            replication_factor: rf,
            configs,
            assignments: Vec::new(),
        })
    }

    /// Deletes a topic and its logs. Errors: UNKNOWN_TOPIC_OR_PARTITION (3), TOPIC_DELETION_DISABLED (73).
    pub async fn delete_topic(&self, name: &str) -> Result<Uuid, TopicError> {
        if !self.config.delete_topic_enable {
            return Err(TopicError::DeletionDisabled);
        }
        self.admin.delete_topic(name.to_string()).await
    }

    /// Replaces a topic's config overrides and applies them to its live partitions (retention, roll size,
    /// limits take effect at once). Errors: UNKNOWN_TOPIC_OR_PARTITION (3), INVALID_CONFIG (40).
    pub async fn set_topic_configs(
        &self,
        name: &str,
        configs: BTreeMap<String, String>,
        validate_only: bool,
    ) -> Result<(), TopicError> {
        for (k, v) in &configs {
            validate_topic_config(k, v)?;
        }
        self.admin
            .set_topic_configs(name.to_string(), configs, validate_only)
            .await
    }

    /// Grows a topic to `count` partitions. Errors: UNKNOWN_TOPIC_OR_PARTITION (3), INVALID_PARTITIONS (37)
    /// when `count` is not larger than the current count.
    pub async fn add_partitions(
        &self,
        name: &str,
        count: i32,
        validate_only: bool,
    ) -> Result<(), TopicError> {
        let t = self.metadata.topic(name).ok_or(TopicError::UnknownTopic)?;
        check_partition_count(&t, count)?;
        self.check_partition_budget(i64::from(count) - i64::from(t.partitions))?;
        self.admin
            .create_partitions(name.to_string(), count, validate_only)
            .await
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

    /// Refuses `more` new partitions when this broker would then hold more than [`partition_budget`]
    /// partitions in all (every topic's count, as if all were local): each partition keeps at least one
    /// file open, and running out of file handles mid-creation leaves a half-created topic and a broker
    /// that cannot accept connections. Error: INVALID_PARTITIONS (37), naming the limit.
    fn check_partition_budget(&self, more: i64) -> Result<(), TopicError> {
        let existing = self.metadata.partition_count();
        let budget = partition_budget();
        if more > 0 && existing + more > budget {
            return Err(TopicError::InvalidPartitions(format!(
                "{more} more partitions would make {} on this broker, over its limit of {budget} \
                 (derived from the open-file limit RLIMIT_NOFILE; raise it with `ulimit -n`).",
                existing + more
            )));
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

#[cfg(test)]
mod tests {
    use super::*;

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
