//! Where group config changes go: [`LocalGroupConfigAdmin`] into the topic registry standalone,
//! [`QuorumGroupConfigAdmin`] as GROUP `ConfigRecord`s through the controller in a cluster (answered once this
//! broker's image, and so its registry's mirror, shows them). Reads are
//! [`MetadataStore::group_config`] in both modes.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::future::BoxFuture;

use super::RESOURCE_GROUP;
use crate::cluster::BrokerCluster;
use crate::config_admin::ConfigOps;
use crate::error::AlterConfigError;
use crate::metadata::MetadataStore;

/// Where a group's configs are stored.
pub trait GroupConfigAdmin: Send + Sync + std::fmt::Debug {
    /// Stores a change of group `name`'s configs: `ops` key by key, `next` the whole set after it (validated
    /// by the caller; empty = the resource is removed). Answers once this broker's registry shows it.
    fn alter(
        &self,
        name: String,
        ops: ConfigOps,
        next: BTreeMap<String, String>,
    ) -> BoxFuture<'_, Result<(), AlterConfigError>>;
}

/// The standalone [`GroupConfigAdmin`]: one synced registry change per alteration.
#[derive(Debug)]
pub struct LocalGroupConfigAdmin(pub Arc<MetadataStore>);

impl GroupConfigAdmin for LocalGroupConfigAdmin {
    fn alter(
        &self,
        name: String,
        _ops: ConfigOps,
        next: BTreeMap<String, String>,
    ) -> BoxFuture<'_, Result<(), AlterConfigError>> {
        let store = self.0.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                (store.set_group_config(&name, next))
                    .map_err(|e| AlterConfigError::Storage(e.to_string()))
            })
            .await
            .map_err(|e| AlterConfigError::Internal(e.to_string()))?
        })
    }
}

/// The cluster [`GroupConfigAdmin`]: the change as GROUP `ConfigRecord`s through the active controller.
pub struct QuorumGroupConfigAdmin(pub Arc<BrokerCluster>);

impl std::fmt::Debug for QuorumGroupConfigAdmin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuorumGroupConfigAdmin")
            .finish_non_exhaustive()
    }
}

impl GroupConfigAdmin for QuorumGroupConfigAdmin {
    fn alter(
        &self,
        name: String,
        ops: ConfigOps,
        _next: BTreeMap<String, String>,
    ) -> BoxFuture<'_, Result<(), AlterConfigError>> {
        Box::pin(async move {
            (self.0)
                .alter_configs(RESOURCE_GROUP, name, ops, false)
                .await
        })
    }
}

/// The admin of the mode: the controller's in a cluster, the registry's standalone.
pub fn wire(
    store: &Arc<MetadataStore>,
    cluster: Option<&Arc<BrokerCluster>>,
) -> Arc<dyn GroupConfigAdmin> {
    match cluster {
        Some(c) => Arc::new(QuorumGroupConfigAdmin(c.clone())),
        None => Arc::new(LocalGroupConfigAdmin(store.clone())),
    }
}
