//! Where topic changes are decided: [`TopicAdmin`], one async trait with two implementations — this module's
//! [`LocalTopicAdmin`] for a standalone broker (its own metadata file and logs) and
//! [`crate::cluster::QuorumTopicAdmin`] for a cluster member (the active controller decides, and the answer
//! comes once this broker's metadata image shows the change).
//!
//! [`crate::topics::TopicManager`] validates a request the same way in both modes and then calls the admin;
//! no request handler knows which mode it runs in. Every method is async and never blocks a runtime worker.

use std::collections::BTreeMap;
use std::sync::Arc;

use controller::control::{ControlConfig, QuorumControl};
use futures::future::BoxFuture;
use metadata::{ControllerError, ElectionResult, ElectionType, Reassignment};
use parking_lot::Mutex;
use uuid::Uuid;

use crate::dynamic_config::DynamicBrokerConfig;
use crate::error::TopicError;
use crate::metadata::{MetadataStore, TopicMetadata, UpdateError};
use crate::metadata_cache::{LocalMetadataCache, MetadataCache};
use crate::publisher::Publishers;
use crate::topic_config::log_config;
use replica::replica_manager::ReplicaManager;

/// A validated CreateTopics entry: name legal and free, counts resolved (no -1), configs valid.
#[derive(Debug, Clone)]
pub struct NewTopic {
    /// Topic name.
    pub name: String,
    /// Partition count (≥ 1).
    pub partitions: i32,
    /// Replication factor (≥ 1).
    pub replication_factor: i16,
    /// Topic config overrides.
    pub configs: BTreeMap<String, String>,
    /// Explicit replica assignments (CreateTopics `Assignments`): (partition index, replica broker ids),
    /// partitions numbered from 0, every list `replication_factor` long; empty: the controller places the
    /// replicas. Only a cluster's controller takes them (a standalone broker checks them before: each may
    /// name only itself).
    pub assignments: Vec<(i32, Vec<types::BrokerId>)>,
}

/// The place topic changes are made. Errors are the Kafka codes a client sees (see each method).
pub trait TopicAdmin: Send + Sync + std::fmt::Debug {
    /// Creates `topic` (or only checks it, `validate_only`). Errors: TOPIC_ALREADY_EXISTS (36),
    /// INVALID_REPLICATION_FACTOR (38, more replicas than brokers), KAFKA_STORAGE_ERROR (56), controller errors
    /// in a cluster (NOT_CONTROLLER, REQUEST_TIMED_OUT, ...).
    fn create_topic(
        &self,
        topic: NewTopic,
        validate_only: bool,
    ) -> BoxFuture<'_, Result<TopicMetadata, TopicError>>;

    /// Deletes topic `name` and its logs; returns its id. Errors: UNKNOWN_TOPIC_OR_PARTITION (3),
    /// KAFKA_STORAGE_ERROR (56), controller errors.
    fn delete_topic(&self, name: String) -> BoxFuture<'_, Result<Uuid, TopicError>>;

    /// Replaces the config overrides of topic `name` (keys absent from `configs` are removed) and applies them
    /// to its live partitions. Errors: UNKNOWN_TOPIC_OR_PARTITION (3), KAFKA_STORAGE_ERROR (56), controller
    /// errors.
    fn set_topic_configs(
        &self,
        name: String,
        configs: BTreeMap<String, String>,
        validate_only: bool,
    ) -> BoxFuture<'_, Result<(), TopicError>>;

    /// Grows topic `name` to `count` partitions (the caller checked that `count` is larger). Errors:
    /// UNKNOWN_TOPIC_OR_PARTITION (3), INVALID_PARTITIONS (37), KAFKA_STORAGE_ERROR (56), controller errors.
    fn create_partitions(
        &self,
        name: String,
        count: i32,
        validate_only: bool,
    ) -> BoxFuture<'_, Result<(), TopicError>>;

    /// Runs a preferred or unclean leader election (KIP-183, KIP-460) for `partitions` (`None`: every
    /// partition that needs one) and answers per partition: ELECTION_NOT_NEEDED (84),
    /// PREFERRED_LEADER_NOT_AVAILABLE (80), ELIGIBLE_LEADERS_NOT_AVAILABLE (83), UNKNOWN_TOPIC_OR_PARTITION
    /// (3). Error: the election could not be run (controller errors).
    fn elect_leaders(
        &self,
        election: ElectionType,
        partitions: Option<Vec<(String, i32)>>,
    ) -> BoxFuture<'_, Result<Vec<ElectionResult>, TopicError>>;

    /// Starts, replaces or cancels partition reassignments (KIP-455; KIP-860's
    /// `allow_replication_factor_change`): one result per entry, in order, with Kafka's per-partition codes
    /// (see `QuorumControl::alter_partition_reassignments`). Error: the change could not be made at all
    /// (controller errors).
    fn alter_partition_reassignments(
        &self,
        reassignments: Vec<Reassignment>,
        allow_replication_factor_change: bool,
    ) -> BoxFuture<'_, Result<Vec<Result<(), ControllerError>>, TopicError>>;

    /// Brokers registered with the cluster, fenced or not (1 standalone): how many replicas a topic of this
    /// cluster can ever have, whether or not every broker is up now.
    fn registered_brokers(&self) -> usize;

    /// Removes broker `id`'s registration (KIP-500 UnregisterBroker); the caller checked that `id` is
    /// registered. Errors: controller errors (BROKER_ID_NOT_REGISTERED when it went meanwhile).
    fn unregister_broker(&self, id: types::BrokerId) -> BoxFuture<'_, Result<(), TopicError>>;
}

/// The standalone [`TopicAdmin`]: one broker, topics in its metadata file, every partition led here. Each
/// change is published (the image before and after it) to the broker's [`Publishers`], as a cluster member's
/// metadata listener publishes the images it replays. Changes run on the blocking pool (a topic's partitions
/// are files to create or delete), so a large CreateTopics never holds a runtime worker.
#[derive(Debug, Clone)]
pub struct LocalTopicAdmin(Arc<LocalAdmin>);

/// The state of a [`LocalTopicAdmin`].
#[derive(Debug)]
struct LocalAdmin {
    metadata: Arc<MetadataStore>,
    replica_manager: Arc<ReplicaManager>,
    dynamic: Arc<DynamicBrokerConfig>,
    cache: Arc<LocalMetadataCache>,
    publishers: Arc<Publishers>,
    /// Serializes changes, so images are published in the order the changes were made.
    changes: Mutex<()>,
}

impl LocalTopicAdmin {
    /// The admin of a standalone broker: topics go to `metadata`, partitions to `replica_manager`, their
    /// `LogConfig` resolves broker defaults through `dynamic`, and each change is published from `cache`'s
    /// images to `publishers`.
    pub fn new(
        metadata: Arc<MetadataStore>,
        replica_manager: Arc<ReplicaManager>,
        dynamic: Arc<DynamicBrokerConfig>,
        cache: Arc<LocalMetadataCache>,
        publishers: Arc<Publishers>,
    ) -> LocalTopicAdmin {
        LocalTopicAdmin(Arc::new(LocalAdmin {
            metadata,
            replica_manager,
            dynamic,
            cache,
            publishers,
            changes: Mutex::new(()),
        }))
    }

    /// Runs `change` (a topic change of the shared state) on the blocking pool — inline when there is no tokio
    /// runtime (synchronous tests). A change that panicked answers UNKNOWN_SERVER_ERROR.
    fn run<T: Send + 'static>(
        &self,
        change: impl FnOnce(&LocalAdmin) -> Result<T, TopicError> + Send + 'static,
    ) -> BoxFuture<'static, Result<T, TopicError>> {
        let admin = self.0.clone();
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return Box::pin(std::future::ready(change(&admin)));
        };
        // The request's span (`--log-format json`'s request context) follows the change onto the pool.
        let span = tracing::Span::current();
        let task = runtime.spawn_blocking(move || span.in_scope(|| change(&admin)));
        Box::pin(async move {
            task.await.unwrap_or_else(|e| {
                Err(TopicError::Internal(format!(
                    "the topic change failed: {e}"
                )))
            })
        })
    }
}

impl LocalAdmin {
    /// Runs `change` and publishes the image before and after it (when it changed anything).
    fn publishing<T>(
        &self,
        change: impl FnOnce() -> Result<T, TopicError>,
    ) -> Result<T, TopicError> {
        let _serial = self.changes.lock();
        let previous = self.cache.image();
        let result = change();
        let current = self.cache.image();
        if current.offset != previous.offset {
            self.publishers.publish(&previous, &current);
        }
        result
    }

    fn create(&self, t: NewTopic, validate_only: bool) -> Result<TopicMetadata, TopicError> {
        if t.replication_factor > 1 {
            return Err(TopicError::InvalidReplicationFactor(format!(
                "Replication factor: {} larger than available brokers: 1.",
                t.replication_factor
            )));
        }
        let topic = TopicMetadata {
            topic_id: Uuid::new_v4(),
            partitions: t.partitions,
            configs: t.configs,
        };
        if validate_only {
            return Ok(topic);
        }
        let created = self
            .metadata
            .create_topic(&t.name, topic.clone())
            .map_err(storage_error)?;
        if !created {
            return Err(TopicError::AlreadyExists(t.name));
        }
        let config = log_config(&self.dynamic.effective(), &topic.configs);
        for p in 0..topic.partitions {
            self.open_partition(&t.name, p, topic.topic_id, &config)?;
        }
        tracing::info!(
            topic = t.name,
            partitions = topic.partitions,
            "created topic"
        );
        Ok(topic)
    }

    /// Opens (or creates) partition `p` of topic `id` as leader. A log left on disk by an older topic of the
    /// same name (a delete cut short by a crash) is deleted first, as a stray log is (Kafka's KAFKA-14616).
    fn open_partition(
        &self,
        name: &str,
        p: i32,
        id: Uuid,
        config: &storage::LogConfig,
    ) -> Result<(), TopicError> {
        let rm = &self.replica_manager;
        match rm.make_leader(name, p, id, config.clone()) {
            Err(storage::StorageError::InconsistentTopicId(_)) => {
                tracing::info!(
                    topic = name,
                    partition = p,
                    "replacing the log of a deleted topic of the same name"
                );
                rm.stop_replica(name, p, true)
                    .and_then(|()| rm.make_leader(name, p, id, config.clone()))
                    .map(|_| ())
                    .map_err(storage_error)
            }
            other => other.map(|_| ()).map_err(storage_error),
        }
    }

    fn delete(&self, name: &str) -> Result<Uuid, TopicError> {
        let removed = self.metadata.delete_topic(name).map_err(storage_error)?;
        let Some(topic) = removed else {
            return Err(TopicError::UnknownTopic);
        };
        self.replica_manager
            .delete_topic(name)
            .map_err(storage_error)?;
        tracing::info!(topic = name, "deleted topic");
        Ok(topic.topic_id)
    }

    fn set_configs(
        &self,
        name: &str,
        configs: BTreeMap<String, String>,
        validate_only: bool,
    ) -> Result<(), TopicError> {
        if validate_only {
            return self
                .metadata
                .topic(name)
                .map(|_| ())
                .ok_or(TopicError::UnknownTopic);
        }
        let updated = self
            .metadata
            .update_topic(name, |t| -> Result<_, TopicError> {
                Ok(TopicMetadata {
                    configs: configs.clone(),
                    ..t.clone()
                })
            })
            .map_err(update_error)?
            .ok_or(TopicError::UnknownTopic)?;
        let config = log_config(&self.dynamic.effective(), &updated.configs);
        for p in 0..updated.partitions {
            if let Some(part) = self.replica_manager.partition(name, p) {
                part.set_config(config.clone());
            }
        }
        tracing::info!(topic = name, ?configs, "topic configs changed");
        Ok(())
    }

    fn add_partitions(
        &self,
        name: &str,
        count: i32,
        validate_only: bool,
    ) -> Result<(), TopicError> {
        let grow = |t: &TopicMetadata| -> Result<TopicMetadata, TopicError> {
            check_partition_count(t, count)?;
            Ok(TopicMetadata {
                partitions: count,
                ..t.clone()
            })
        };
        if validate_only {
            let t = self.metadata.topic(name).ok_or(TopicError::UnknownTopic)?;
            return grow(&t).map(|_| ());
        }
        let updated = self
            .metadata
            .update_topic(name, grow)
            .map_err(update_error)?
            .ok_or(TopicError::UnknownTopic)?;
        let config = log_config(&self.dynamic.effective(), &updated.configs);
        for p in 0..updated.partitions {
            self.open_partition(name, p, updated.topic_id, &config)?;
        }
        tracing::info!(topic = name, partitions = count, "partitions added");
        Ok(())
    }
}

impl TopicAdmin for LocalTopicAdmin {
    fn create_topic(
        &self,
        topic: NewTopic,
        validate_only: bool,
    ) -> BoxFuture<'_, Result<TopicMetadata, TopicError>> {
        self.run(move |a| a.publishing(|| a.create(topic, validate_only)))
    }

    fn delete_topic(&self, name: String) -> BoxFuture<'_, Result<Uuid, TopicError>> {
        self.run(move |a| a.publishing(|| a.delete(&name)))
    }

    fn set_topic_configs(
        &self,
        name: String,
        configs: BTreeMap<String, String>,
        validate_only: bool,
    ) -> BoxFuture<'_, Result<(), TopicError>> {
        self.run(move |a| a.publishing(|| a.set_configs(&name, configs, validate_only)))
    }

    fn create_partitions(
        &self,
        name: String,
        count: i32,
        validate_only: bool,
    ) -> BoxFuture<'_, Result<(), TopicError>> {
        self.run(move |a| a.publishing(|| a.add_partitions(&name, count, validate_only)))
    }

    fn elect_leaders(
        &self,
        _election: ElectionType,
        partitions: Option<Vec<(String, i32)>>,
    ) -> BoxFuture<'_, Result<Vec<ElectionResult>, TopicError>> {
        // One broker: each existing partition already has the only possible leader, and "every partition
        // that needs an election" is none.
        let results = partitions
            .unwrap_or_default()
            .into_iter()
            .map(|(topic, partition)| {
                let exists = self
                    .0
                    .metadata
                    .topic(&topic)
                    .is_some_and(|t| (0..t.partitions).contains(&partition));
                if exists {
                    ElectionResult::not_needed(topic, partition, "the only replica is the leader")
                } else {
                    ElectionResult::unknown_partition(topic, partition)
                }
            })
            .collect();
        Box::pin(std::future::ready(Ok(results)))
    }

    fn alter_partition_reassignments(
        &self,
        reassignments: Vec<Reassignment>,
        allow_replication_factor_change: bool,
    ) -> BoxFuture<'_, Result<Vec<Result<(), ControllerError>>, TopicError>> {
        // The controller's own validation against the standalone image (this broker the only one
        // registered): a target of [this broker] is what every partition has already, so nothing moves; any
        // other target names a broker that is not registered, and nothing is ever being reassigned.
        let control = QuorumControl::new(ControlConfig::default(), 0);
        let decision = control.alter_partition_reassignments(
            &self.0.cache.image(),
            &reassignments,
            allow_replication_factor_change,
        );
        debug_assert!(
            decision.records.is_empty(),
            "a standalone reassignment moved a replica"
        );
        Box::pin(std::future::ready(Ok(decision.reply)))
    }

    fn registered_brokers(&self) -> usize {
        1
    }

    fn unregister_broker(&self, _id: types::BrokerId) -> BoxFuture<'_, Result<(), TopicError>> {
        // The only registered broker is this one. Kafka's single node answers NONE and registers again
        // with its next heartbeat; a standalone broker's registration is its own process, so the end
        // state is the same at once.
        Box::pin(async { Ok(()) })
    }
}

/// [`TopicError::InvalidPartitions`] unless `count` is larger than the topic's partition count (Kafka's message).
pub fn check_partition_count(t: &TopicMetadata, count: i32) -> Result<(), TopicError> {
    if count <= t.partitions {
        return Err(TopicError::InvalidPartitions(format!(
            "Topic currently has {} partitions, which is higher than or equal to the requested {count}.",
            t.partitions
        )));
    }
    Ok(())
}

fn storage_error(e: impl std::fmt::Display) -> TopicError {
    TopicError::Storage(e.to_string())
}

fn update_error(e: UpdateError<TopicError>) -> TopicError {
    match e {
        UpdateError::Rejected(e) => e,
        UpdateError::Metadata(e) => storage_error(e),
    }
}
