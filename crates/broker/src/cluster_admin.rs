//! The cluster-mode admin adapters: each sends a change to the active controller through the member's
//! [`BrokerCluster`] and answers once this broker's published image shows it (read-your-writes by metadata
//! offset). One per admin seam: [`TopicAdmin`], [`BrokerConfigAdmin`], [`AclAdmin`], client quotas and
//! SCRAM credentials; their standalone counterparts live beside the seams.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use metadata::scram::{ScramAlterResult, ScramDeletion, ScramUpsertion};
use metadata::{
    AclEntry, ControllerError, CreateTopic, ElectionResult, ElectionType, Reassignment,
    RESOURCE_BROKER,
};
use uuid::Uuid;

use crate::acls::AclAdmin;
use crate::cluster::BrokerCluster;
use crate::config_admin::{diff_ops, BrokerConfigAdmin, ConfigOps};
use crate::dynamic_config::{ConfigLevel, DynamicBrokerConfig};
use crate::error::{AclError, AlterConfigError, CredentialError, TopicError};
use crate::metadata::TopicMetadata;
use crate::scram::ScramAdmin;
use crate::topic_admin::{NewTopic, TopicAdmin};

/// The cluster-mode [`TopicAdmin`]: the active controller decides (placement, the replication factor against
/// live brokers, configs), and each answer comes once this broker's image shows the change.
#[derive(Debug)]
pub struct QuorumTopicAdmin(pub Arc<BrokerCluster>);

impl TopicAdmin for QuorumTopicAdmin {
    fn create_topic(
        &self,
        topic: NewTopic,
        validate_only: bool,
    ) -> BoxFuture<'_, Result<TopicMetadata, TopicError>> {
        // Kafka's rule: with explicit assignments the counts are -1 (the controller derives them).
        let explicit = !topic.assignments.is_empty();
        let create = CreateTopic {
            name: topic.name,
            num_partitions: if explicit { -1 } else { topic.partitions },
            replication_factor: if explicit {
                -1
            } else {
                topic.replication_factor
            },
            assignments: topic.assignments,
            configs: topic.configs,
        };
        Box::pin(self.0.create_topic(create, validate_only))
    }

    fn delete_topic(&self, name: String) -> BoxFuture<'_, Result<Uuid, TopicError>> {
        Box::pin(async move { self.0.delete_topic(&name).await })
    }

    fn set_topic_configs(
        &self,
        name: String,
        configs: BTreeMap<String, String>,
        validate_only: bool,
    ) -> BoxFuture<'_, Result<(), TopicError>> {
        Box::pin(async move {
            self.0
                .set_topic_configs(&name, configs, validate_only)
                .await
        })
    }

    fn create_partitions(
        &self,
        name: String,
        count: i32,
        validate_only: bool,
    ) -> BoxFuture<'_, Result<(), TopicError>> {
        Box::pin(async move { self.0.create_partitions(&name, count, validate_only).await })
    }

    fn elect_leaders(
        &self,
        election: ElectionType,
        partitions: Option<Vec<(String, i32)>>,
    ) -> BoxFuture<'_, Result<Vec<ElectionResult>, TopicError>> {
        Box::pin(self.0.elect_leaders(election, partitions))
    }

    fn unregister_broker(&self, id: types::BrokerId) -> BoxFuture<'_, Result<(), TopicError>> {
        Box::pin(self.0.unregister_broker(id))
    }

    fn alter_partition_reassignments(
        &self,
        reassignments: Vec<Reassignment>,
        allow_replication_factor_change: bool,
    ) -> BoxFuture<'_, Result<Vec<Result<(), ControllerError>>, TopicError>> {
        Box::pin(
            self.0
                .alter_partition_reassignments(reassignments, allow_replication_factor_change),
        )
    }

    fn registered_brokers(&self) -> usize {
        self.0.image().brokers.len()
    }
}

/// The cluster-mode [`BrokerConfigAdmin`]: a dynamic broker config change becomes `ConfigRecord`s of resource
/// type BROKER (name `""` or the broker id) that the active controller writes to the metadata log (KIP-631);
/// the answer comes once this broker has published the image at the change's offset, so its own
/// [`crate::config_admin::DynamicConfigPublisher`] has laid the levels in. Any broker id may be changed.
#[derive(Debug)]
pub struct QuorumBrokerConfigAdmin {
    cluster: Arc<BrokerCluster>,
    dynamic: Arc<DynamicBrokerConfig>,
}

impl QuorumBrokerConfigAdmin {
    /// The admin of a cluster member whose levels `dynamic` follows.
    pub fn new(cluster: Arc<BrokerCluster>, dynamic: Arc<DynamicBrokerConfig>) -> Self {
        QuorumBrokerConfigAdmin { cluster, dynamic }
    }
}

impl BrokerConfigAdmin for QuorumBrokerConfigAdmin {
    fn alter(
        &self,
        level: ConfigLevel,
        ops: ConfigOps,
        replace: bool,
    ) -> BoxFuture<'_, Result<(), AlterConfigError>> {
        Box::pin(async move {
            // The controller stores key by key: a replacing change is sent as the difference from the
            // levels this broker's image holds; an incremental one as given.
            let ops = if replace {
                let next = self.dynamic.next_level(level, &ops, true)?;
                diff_ops(&self.dynamic.level_configs(level), &next)
            } else {
                ops
            };
            let name = self.dynamic.resource_name(level);
            self.cluster
                .alter_configs(RESOURCE_BROKER, name, ops, false)
                .await
        })
    }
}

/// Cluster-mode ACL changes: records through the controller, answered once this broker's image (and so its
/// `AclCache`, filled by the `AclPublisher`) shows them.
#[derive(Debug)]
pub struct QuorumAclAdmin(pub Arc<BrokerCluster>);

impl AclAdmin for QuorumAclAdmin {
    fn create(&self, acls: Vec<AclEntry>) -> BoxFuture<'_, Result<(), AclError>> {
        Box::pin(async move {
            let at = self.0.client().create_acls(acls).await?;
            Ok(self.0.wait_for_offset(at).await?)
        })
    }

    fn delete(&self, ids: Vec<Uuid>) -> BoxFuture<'_, Result<(), AclError>> {
        Box::pin(async move {
            let at = self.0.client().delete_acls(ids).await?;
            Ok(self.0.wait_for_offset(at).await?)
        })
    }
}

/// Cluster-mode quota changes: `ClientQuotaRecord`s through the controller, answered once this broker's
/// image (and so its `ClientQuotas`, filled by the `QuotaPublisher`) shows them.
#[derive(Debug)]
pub struct QuorumQuotaAdmin(pub Arc<BrokerCluster>);

impl crate::quota::QuotaAdmin for QuorumQuotaAdmin {
    fn alter(
        &self,
        entries: Vec<metadata::quota::QuotaAlteration>,
        validate_only: bool,
    ) -> BoxFuture<'_, Result<(), crate::error::QuotaError>> {
        Box::pin(async move {
            let at = self
                .0
                .client()
                .alter_client_quotas(entries, validate_only)
                .await?;
            Ok(self.0.wait_for_offset(at).await?)
        })
    }
}

/// Cluster-mode SCRAM credential changes: decided by the controller against its image
/// (`UserScramCredentialRecord`s), answered once this broker's image (and so the cache, filled by the
/// `ScramPublisher`) shows them.
#[derive(Debug)]
pub struct QuorumScramAdmin(pub Arc<BrokerCluster>);

impl ScramAdmin for QuorumScramAdmin {
    fn alter(
        &self,
        deletions: Vec<ScramDeletion>,
        upsertions: Vec<ScramUpsertion>,
    ) -> BoxFuture<'_, Result<Vec<ScramAlterResult>, CredentialError>> {
        Box::pin(async move {
            let (results, at) = self
                .0
                .client()
                .alter_scram_credentials(deletions, upsertions)
                .await?;
            self.0.wait_for_offset(at).await?;
            Ok(results)
        })
    }
}
