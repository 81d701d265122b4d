//! Where dynamic broker config changes (KIP-226) are made: [`BrokerConfigAdmin`], one async trait with two
//! implementations chosen by the composition root (`lifecycle`) — this module's [`LocalBrokerConfigAdmin`] for
//! a standalone broker (the `dynamic-broker-configs.json` of its data directory) and
//! [`crate::cluster::QuorumBrokerConfigAdmin`] for a cluster member (the active controller writes
//! `ConfigRecord`s of resource type BROKER into the metadata log, as Kafka's KRaft controller does; each broker's
//! [`DynamicConfigPublisher`] lays the levels of every new image into its [`DynamicBrokerConfig`]).
//!
//! [`BrokerConfigManager`] is what the AlterConfigs / IncrementalAlterConfigs handlers call: it validates a
//! change with the one resolver ([`DynamicBrokerConfig::next_level`]) the same way in both modes, then hands
//! it to the admin; no handler knows which mode it runs in.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use metadata::MetadataImage;

use crate::dynamic_config::{ConfigLevel, DynamicBrokerConfig};
use crate::error::AlterConfigError;
use crate::publisher::MetadataPublisher;
use crate::topics::TopicManager;

/// A change of one dynamic level: `(key, Some(value))` sets, `(key, None)` deletes; with `replace` every key
/// the ops do not set is removed (AlterConfigs), else the other keys stay (IncrementalAlterConfigs).
pub type ConfigOps = Vec<(String, Option<String>)>;

/// The place dynamic broker config changes are stored. The caller has validated the change
/// ([`BrokerConfigManager::alter`]); the answer comes once this broker's effective config and every live
/// partition's `LogConfig` follow it. Errors are the Kafka codes a client sees.
pub trait BrokerConfigAdmin: Send + Sync + std::fmt::Debug {
    /// Applies `ops` to `level` (see [`ConfigOps`]). Errors: KAFKA_STORAGE_ERROR (56) when the standalone file
    /// cannot be written; in a cluster the controller's errors (NOT_CONTROLLER, REQUEST_TIMED_OUT, ...).
    fn alter(
        &self,
        level: ConfigLevel,
        ops: ConfigOps,
        replace: bool,
    ) -> BoxFuture<'_, Result<(), AlterConfigError>>;
}

/// The dynamic broker configs as the request handlers see them: the one resolver and the mode's admin.
#[derive(Debug)]
pub struct BrokerConfigManager {
    dynamic: Arc<DynamicBrokerConfig>,
    admin: Arc<dyn BrokerConfigAdmin>,
}

impl BrokerConfigManager {
    /// The manager over `dynamic` whose changes `admin` stores.
    pub fn new(
        dynamic: Arc<DynamicBrokerConfig>,
        admin: Arc<dyn BrokerConfigAdmin>,
    ) -> BrokerConfigManager {
        BrokerConfigManager { dynamic, admin }
    }

    /// The resolver: levels, effective config, synonyms.
    pub fn dynamic(&self) -> &Arc<DynamicBrokerConfig> {
        &self.dynamic
    }

    /// Applies `ops` to `level` (see [`ConfigOps`]) after checking the resulting set with
    /// [`DynamicBrokerConfig::next_level`]; `validate_only` checks and changes nothing. Errors: INVALID_CONFIG
    /// (40) for an unknown key, INVALID_REQUEST (42) for read-only keys and bad values (Kafka's messages), and
    /// the admin's errors.
    pub async fn alter(
        &self,
        level: ConfigLevel,
        ops: ConfigOps,
        replace: bool,
        validate_only: bool,
    ) -> Result<(), AlterConfigError> {
        self.dynamic.next_level(level, &ops, replace)?;
        if validate_only {
            return Ok(());
        }
        self.admin.alter(level, ops, replace).await
    }
}

/// The standalone [`BrokerConfigAdmin`]: the levels live in `dynamic-broker-configs.json`
/// ([`DynamicBrokerConfig::alter`] rewrites it), and every topic's `LogConfig` is recomputed at once. Runs on
/// the blocking pool (an fsynced file write).
#[derive(Debug)]
pub struct LocalBrokerConfigAdmin {
    dynamic: Arc<DynamicBrokerConfig>,
    topics: Arc<TopicManager>,
}

impl LocalBrokerConfigAdmin {
    /// The admin of a standalone broker whose levels are `dynamic`'s file and whose partitions `topics` has.
    pub fn new(
        dynamic: Arc<DynamicBrokerConfig>,
        topics: Arc<TopicManager>,
    ) -> LocalBrokerConfigAdmin {
        LocalBrokerConfigAdmin { dynamic, topics }
    }
}

impl BrokerConfigAdmin for LocalBrokerConfigAdmin {
    fn alter(
        &self,
        level: ConfigLevel,
        ops: ConfigOps,
        replace: bool,
    ) -> BoxFuture<'_, Result<(), AlterConfigError>> {
        let (dynamic, topics) = (self.dynamic.clone(), self.topics.clone());
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                dynamic.alter(level, &ops, replace)?;
                topics.reapply_log_configs();
                Ok(())
            })
            .await
            .map_err(|e| AlterConfigError::Internal(e.to_string()))?
        })
    }
}

/// The controller ops that turn `current` into `next` (for a replacing change sent to the controller, which
/// stores key by key): deletes for keys `next` lacks, sets for new or changed values.
pub fn diff_ops(current: &BTreeMap<String, String>, next: &BTreeMap<String, String>) -> ConfigOps {
    let deleted = current
        .keys()
        .filter(|k| !next.contains_key(*k))
        .map(|k| (k.clone(), None));
    let set = next
        .iter()
        .filter(|(k, v)| current.get(*k) != Some(*v))
        .map(|(k, v)| (k.clone(), Some(v.clone())));
    deleted.chain(set).collect()
}

/// A cluster member's [`MetadataPublisher`] of dynamic broker configs: when an image's `broker_configs`
/// (the BROKER `ConfigRecord`s) change, they become the levels of the broker's [`DynamicBrokerConfig`], and
/// when this broker's levels changed every live partition's `LogConfig` is recomputed.
#[derive(Debug)]
pub struct DynamicConfigPublisher {
    dynamic: Arc<DynamicBrokerConfig>,
    topics: Arc<TopicManager>,
}

impl DynamicConfigPublisher {
    /// The publisher laying images into `dynamic` and reapplying `topics`' `LogConfig`s.
    pub fn new(dynamic: Arc<DynamicBrokerConfig>, topics: Arc<TopicManager>) -> Self {
        DynamicConfigPublisher { dynamic, topics }
    }
}

impl MetadataPublisher for DynamicConfigPublisher {
    fn on_image(&self, previous: &MetadataImage, current: &MetadataImage) {
        if previous.broker_configs == current.broker_configs {
            return;
        }
        if self.dynamic.replace_levels(&current.broker_configs) {
            self.topics.reapply_log_configs();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(p: &[(&str, &str)]) -> BTreeMap<String, String> {
        p.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn diff_ops_delete_missing_and_set_changed_keys_only() {
        let current = map(&[("a", "1"), ("b", "2"), ("c", "3")]);
        let next = map(&[("b", "2"), ("c", "4"), ("d", "5")]);
        assert_eq!(
            diff_ops(&current, &next),
            vec![
                ("a".to_string(), None),
                ("c".to_string(), Some("4".to_string())),
                ("d".to_string(), Some("5".to_string())),
            ]
        );
        assert!(diff_ops(&next, &next).is_empty());
    }
}
