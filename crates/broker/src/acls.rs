//! ACLs and the broker's authorizer (KIP-11, KIP-290, KIP-801): [`Authorizer`] is what request handlers ask
//! (through `RequestContext::authorize`) and what the ACL APIs change; the decision itself is the
//! `authorizer` crate's [`StandardAuthorizer`], over the ACL set in an [`AclCache`].
//!
//! Where ACLs live depends on the mode, behind one trait, [`AclAdmin`], as topic changes do: standalone,
//! [`LocalAclAdmin`] writes them to the topic registry (`metadata.rs`: one synced change-log append per
//! CreateAcls/DeleteAcls) and updates the cache; in a cluster, `cluster::QuorumAclAdmin` sends them to the
//! controller (`AccessControlEntryRecord`s in the metadata log) and the [`AclPublisher`] lays every image's
//! ACLs into the cache before the change is answered. The bindings are validated here, the same in both
//! modes; DeleteAcls filters are resolved against this broker's ACLs and the matching ids removed.
//!
//! `authorizer.class.name` empty (the default) means no authorizer: every request is allowed and the ACL
//! APIs answer SECURITY_DISABLED, as Kafka.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use authorizer::{
    AccessControlEntry, AclBinding, AclBindingFilter, AclOperation, AclPermissionType,
    AuthorizerConfig, PatternType, Requester, ResourcePattern, ResourceType, StandardAuthorizer,
};
use futures::future::BoxFuture;
use metadata::{AclEntry, MetadataImage};
use parking_lot::RwLock;
use uuid::Uuid;

use crate::config::{keys, BrokerConfig};
use crate::error::AclError;
use crate::metadata::MetadataStore;
use crate::publisher::MetadataPublisher;

/// Kafka's `authorizer.class.name` of the KRaft StandardAuthorizer, the one value besides empty Runnel takes.
pub const STANDARD_AUTHORIZER_CLASS: &str =
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer";

/// The authorizer settings of `config`: `None` when `authorizer.class.name` is empty (no authorizer).
/// Error: another class name (Runnel implements only Kafka's StandardAuthorizer).
pub fn authorizer_config(config: &BrokerConfig) -> Result<Option<AuthorizerConfig>, String> {
    let class = config.get(keys::AUTHORIZER_CLASS_NAME);
    match class.trim() {
        "" => Ok(None),
        STANDARD_AUTHORIZER_CLASS => Ok(Some(AuthorizerConfig {
            super_users: config
                .get(keys::SUPER_USERS)
                .map(|v| AuthorizerConfig::parse_super_users(&v))
                .unwrap_or_default(),
            allow_everyone_if_no_acl_found: config.get(keys::ALLOW_EVERYONE_IF_NO_ACL_FOUND),
        })),
        other => Err(format!(
            "authorizer.class.name={other} is not supported; use {STANDARD_AUTHORIZER_CLASS} or leave it empty"
        )),
    }
}

/// A stored ACL as a binding (codes Kafka does not know read as UNKNOWN and match nothing).
pub fn to_binding(e: &AclEntry) -> AclBinding {
    AclBinding {
        pattern: ResourcePattern {
            resource_type: ResourceType::from_code(e.resource_type),
            name: e.resource_name.clone(),
            pattern_type: PatternType::from_code(e.pattern_type),
        },
        entry: AccessControlEntry {
            principal: e.principal.clone(),
            host: e.host.clone(),
            operation: AclOperation::from_code(e.operation),
            permission_type: AclPermissionType::from_code(e.permission_type),
        },
    }
}

/// A binding as stored.
pub fn to_entry(b: &AclBinding) -> AclEntry {
    AclEntry {
        resource_type: b.pattern.resource_type.code(),
        resource_name: b.pattern.name.clone(),
        pattern_type: b.pattern.pattern_type.code(),
        principal: b.entry.principal.clone(),
        host: b.entry.host.clone(),
        operation: b.entry.operation.code(),
        permission_type: b.entry.permission_type.code(),
    }
}

/// The ACL set requests are authorized against, shared by the handlers, the admin and the publisher.
#[derive(Debug)]
pub struct AclCache(RwLock<StandardAuthorizer>);

impl AclCache {
    /// An empty set with `config`'s super users and no-ACL rule.
    pub fn new(config: AuthorizerConfig) -> AclCache {
        AclCache(RwLock::new(StandardAuthorizer::new(config)))
    }

    /// Makes the set equal to `acls` (removing the ids it lacks, adding the new ones).
    pub fn sync(&self, acls: &BTreeMap<Uuid, AclEntry>) {
        let mut a = self.0.write();
        let current: Vec<(Uuid, AclBinding)> = a.acls(&AclBindingFilter::ANY);
        for (id, binding) in &current {
            if acls.get(id).map(to_binding).as_ref() != Some(binding) {
                a.remove(*id);
            }
        }
        let present: BTreeSet<Uuid> = current.iter().map(|(id, _)| *id).collect();
        for (id, e) in acls {
            if !present.contains(id) || a.find(&to_binding(e)) != Some(*id) {
                a.add(*id, to_binding(e));
            }
        }
    }

    fn read(&self) -> parking_lot::RwLockReadGuard<'_, StandardAuthorizer> {
        self.0.read()
    }
}

/// Where ACL changes are made: [`LocalAclAdmin`] standalone, `cluster::QuorumAclAdmin` in a cluster. Both
/// answer once this broker's [`AclCache`] shows the change.
pub trait AclAdmin: Send + Sync + std::fmt::Debug {
    /// Creates `acls` (validated; ones equal to existing ACLs are skipped). Errors: KAFKA_STORAGE_ERROR,
    /// controller errors, REQUEST_TIMED_OUT.
    fn create(&self, acls: Vec<AclEntry>) -> BoxFuture<'_, Result<(), AclError>>;
    /// Removes the ACLs `ids` (unknown ids are skipped). Errors as for `create`.
    fn delete(&self, ids: Vec<Uuid>) -> BoxFuture<'_, Result<(), AclError>>;
}

/// Standalone ACL changes: persisted in the topic registry, then applied to the cache.
#[derive(Debug)]
pub struct LocalAclAdmin {
    store: Arc<MetadataStore>,
    cache: Arc<AclCache>,
}

impl LocalAclAdmin {
    /// The admin over `store`'s ACLs; fills `cache` from them.
    pub fn new(store: Arc<MetadataStore>, cache: Arc<AclCache>) -> LocalAclAdmin {
        cache.sync(&store.acls());
        LocalAclAdmin { store, cache }
    }

    /// Runs a registry write on the blocking pool (it fsyncs), then refreshes the cache from the registry.
    async fn change(
        &self,
        write: impl FnOnce(&MetadataStore) -> Result<(), AclError> + Send + 'static,
    ) -> Result<(), AclError> {
        let store = self.store.clone();
        let cache = self.cache.clone();
        tokio::task::spawn_blocking(move || {
            write(&store)?;
            cache.sync(&store.acls());
            Ok(())
        })
        .await
        .map_err(|e| AclError::Internal(e.to_string()))?
    }
}

impl AclAdmin for LocalAclAdmin {
    fn create(&self, acls: Vec<AclEntry>) -> BoxFuture<'_, Result<(), AclError>> {
        Box::pin(self.change(move |store| {
            let existing: BTreeSet<AclEntry> = store.acls().into_values().collect();
            let mut seen = BTreeSet::new();
            let new: Vec<(Uuid, AclEntry)> = acls
                .into_iter()
                .filter(|a| !existing.contains(a) && seen.insert(a.clone()))
                .map(|a| (Uuid::new_v4(), a))
                .collect();
            if new.is_empty() {
                return Ok(());
            }
            store
                .put_acls(new)
                .map_err(|e| AclError::Storage(e.to_string()))
        }))
    }

    fn delete(&self, ids: Vec<Uuid>) -> BoxFuture<'_, Result<(), AclError>> {
        Box::pin(self.change(move |store| {
            if ids.is_empty() {
                return Ok(());
            }
            store
                .delete_acls(ids)
                .map_err(|e| AclError::Storage(e.to_string()))
        }))
    }
}

/// Cluster mode: lays each image's ACLs into the cache (before the image's offset is signalled, so a
/// CreateAcls answered after `wait_for_offset` is enforced).
#[derive(Debug)]
pub struct AclPublisher(pub Arc<AclCache>);

impl MetadataPublisher for AclPublisher {
    fn on_image(&self, previous: &MetadataImage, current: &MetadataImage) {
        if previous.acls != current.acls || previous.offset < 0 {
            self.0.sync(&current.acls);
        }
    }
}

/// The broker's authorizer (present when `authorizer.class.name` names the StandardAuthorizer).
#[derive(Debug)]
pub struct Authorizer {
    cache: Arc<AclCache>,
    admin: Arc<dyn AclAdmin>,
}

impl Authorizer {
    /// The authorizer over `cache`, changing ACLs through `admin`.
    pub fn new(cache: Arc<AclCache>, admin: Arc<dyn AclAdmin>) -> Authorizer {
        Authorizer { cache, admin }
    }

    /// Whether `who` may do `op` on the resource (Kafka's `Authorizer.authorize` for one action).
    pub fn is_allowed(
        &self,
        who: &Requester<'_>,
        op: AclOperation,
        rt: ResourceType,
        name: &str,
    ) -> bool {
        self.cache.read().is_allowed(who, op, rt, name)
    }

    /// Whether `who` may do `op` on some resource of type `rt` (KIP-679's `authorizeByResourceType`).
    pub fn is_allowed_any(&self, who: &Requester<'_>, op: AclOperation, rt: ResourceType) -> bool {
        self.cache.read().authorize_any(who, op, rt) == authorizer::AuthorizationResult::Allowed
    }

    /// The authorized-operations bit field of one resource.
    pub fn authorized_operations(&self, who: &Requester<'_>, rt: ResourceType, name: &str) -> i32 {
        self.cache.read().authorized_operations(who, rt, name)
    }

    /// DescribeAcls: the ACLs `filter` selects, sorted.
    pub fn describe(&self, filter: &AclBindingFilter) -> Vec<AclBinding> {
        let acls = self.cache.read().acls(filter);
        acls.into_iter().map(|(_, b)| b).collect()
    }

    /// CreateAcls: one result per binding, in order. Invalid bindings get `AclError::Invalid` (Kafka's
    /// messages); the valid ones are created together, sharing one outcome.
    pub async fn create(&self, bindings: Vec<AclBinding>) -> Vec<Result<(), AclError>> {
        let checked: Vec<Result<AclEntry, AclError>> = bindings
            .iter()
            .map(|b| {
                b.validate()
                    .map(|()| to_entry(b))
                    .map_err(|e| AclError::Invalid(e.0))
            })
            .collect();
        let valid: Vec<AclEntry> = checked.iter().filter_map(|r| r.clone().ok()).collect();
        let outcome = if valid.is_empty() {
            Ok(())
        } else {
            self.admin.create(valid).await
        };
        checked
            .into_iter()
            .map(|r| r.and_then(|_| outcome.clone()))
            .collect()
    }

    /// DeleteAcls: per filter, the ACLs it matched and removed. A filter with UNKNOWN elements gets
    /// `AclError::Invalid`; the others' matches are removed together, sharing one outcome.
    pub async fn delete(
        &self,
        filters: Vec<AclBindingFilter>,
    ) -> Vec<Result<Vec<AclBinding>, AclError>> {
        let matched: Vec<Result<Vec<(Uuid, AclBinding)>, AclError>> = {
            let acls = self.cache.read();
            filters
                .iter()
                .map(|f| {
                    f.validate()
                        .map(|()| acls.acls(f))
                        .map_err(|e| AclError::Invalid(e.0))
                })
                .collect()
        };
        let ids: BTreeSet<Uuid> = matched
            .iter()
            .flat_map(|r| r.iter().flatten().map(|(id, _)| *id))
            .collect();
        let outcome = if ids.is_empty() {
            Ok(())
        } else {
            self.admin.delete(ids.into_iter().collect()).await
        };
        matched
            .into_iter()
            .map(|r| {
                let acls = r?;
                outcome.clone()?;
                Ok(acls.into_iter().map(|(_, b)| b).collect())
            })
            .collect()
    }
}
