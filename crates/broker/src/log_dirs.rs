//! The identity of each data directory (KIP-858): every directory of `log.dirs` carries a
//! `meta.properties` in Kafka's version 1 format — `version=1`, `cluster.id=<22-char base64url UUID>`,
//! `node.id=<n>`, `directory.id=<22-char base64url UUID>` — as Kafka's `MetaPropertiesEnsemble` writes it.
//!
//! Rule: a directory without the file gets one; a directory whose file has no `directory.id` gains a random
//! one (never the zero UUID, never text starting with `-`), kept across restarts. A file naming another
//! `cluster.id` or `node.id` than the broker's, or two directories with the same `directory.id` (one copied
//! onto another), refuse startup, as in Kafka. The first directory's file is the one the broker's metadata
//! store (and, in combined mode, the controller) writes and reads; it only gains the `directory.id` line.

use std::collections::HashMap;

use anyhow::{bail, Context};

use crate::config::{keys, BrokerConfig};
use crate::dynamic_config::DynamicBrokerConfig;
use crate::metadata::MetadataStore;
use crate::topic_config::log_config;

/// Opens every partition log of `config.log_dirs` (`storage::LogManager`'s startup rule: recovery of a
/// directory without its clean-shutdown marker), each topic's `LogConfig` from the effective broker config
/// and the topic's overrides, on `num.recovery.threads.per.data.dir` threads per directory (unset:
/// `storage::default_recovery_threads()`). Errors: the first log or directory that cannot be opened.
pub fn open_logs(
    config: &BrokerConfig,
    metadata: &MetadataStore,
    dynamic: &DynamicBrokerConfig,
) -> anyhow::Result<storage::LogManager> {
    let threads = (dynamic.effective())
        .get(keys::NUM_RECOVERY_THREADS_PER_DATA_DIR)
        .map_or_else(storage::default_recovery_threads, |n| n.max(1) as usize);
    let config_for = |topic: &str| {
        let overrides = metadata.topic(topic).map(|t| t.configs).unwrap_or_default();
        log_config(&dynamic.effective(), &overrides)
    };
    let clock = std::sync::Arc::new(types::SystemClock);
    storage::LogManager::open_dirs_with_threads(config.log_dirs.clone(), config_for, clock, threads)
        .with_context(|| format!("opening logs in {:?}", config.log_dirs))
}

/// Makes sure every data directory of `config.log_dirs` has a `meta.properties` of this broker
/// (`cluster_id`, `config.node_id`) with a `directory.id`, and returns the ids in `log.dirs` order.
/// Errors: I/O; a file of another cluster or node; an unparsable or duplicate `directory.id`.
pub fn ensure_directory_ids(
    config: &BrokerConfig,
    cluster_id: &str,
) -> anyhow::Result<Vec<uuid::Uuid>> {
    let fs = storage::real_fs();
    let node_id = config.node_id.get();
    let mut seen: HashMap<uuid::Uuid, &std::path::Path> = HashMap::new();
    let mut ids = Vec::with_capacity(config.log_dirs.len());
    for dir in &config.log_dirs {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let path = dir.join(controller::meta_properties::META_PROPERTIES);
        if let Ok(text) = std::fs::read_to_string(&path) {
            for line in text.lines().map(str::trim) {
                if let Some(v) = line.strip_prefix("cluster.id=") {
                    if v.trim() != cluster_id {
                        bail!(
                            "{}: cluster.id {v} is not this broker's cluster {cluster_id}",
                            path.display()
                        );
                    }
                }
                if let Some(v) = line.strip_prefix("node.id=") {
                    if v.trim().parse::<i32>().ok() != Some(node_id) {
                        bail!(
                            "{}: node.id {v} is not this broker's node.id {node_id}",
                            path.display()
                        );
                    }
                }
            }
        }
        let id =
            controller::meta_properties::ensure_directory_id(&fs, dir, node_id, cluster_id, None)
                .with_context(|| format!("directory.id in {}", path.display()))?;
        if let Some(other) = seen.insert(id, dir) {
            bail!(
                "{} and {} have the same directory.id {}: one was copied from the other",
                other.display(),
                dir.display(),
                controller::meta_properties::base64url(id)
            );
        }
        ids.push(id);
    }
    tracing::info!(dirs = ?config.log_dirs, ids = ?ids, "data directories (KIP-858 directory.id)");
    Ok(ids)
}

/// [`ensure_directory_ids`] with the cluster id of `metadata`, handing the ids to `cluster`'s reports
/// (a cluster member registers them, KIP-858). Errors: [`ensure_directory_ids`]'s.
pub fn ensure_and_register(
    config: &BrokerConfig,
    metadata: &crate::metadata::MetadataStore,
    cluster: Option<&crate::cluster::BrokerCluster>,
) -> anyhow::Result<()> {
    let ids = ensure_directory_ids(config, metadata.cluster_id())?;
    if let Some(c) = cluster {
        c.reports().set_directory_ids(ids);
    }
    Ok(())
}
