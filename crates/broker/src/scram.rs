//! SCRAM credentials on the broker (KIP-554): the [`ScramCredentialCache`] SASL/SCRAM authentication reads,
//! and [`ScramAdmin`], where AlterUserScramCredentials changes go — [`LocalScramAdmin`] into the topic
//! registry standalone (one synced change-log append per request), `cluster::QuorumScramAdmin` through the
//! controller (`UserScramCredentialRecord`s), the [`ScramPublisher`] laying each image's credentials into the
//! cache — as ACLs do (`acls.rs`). Which changes apply is decided by `metadata::scram::decide_alter`, the same
//! code in both modes; the broker derives StoredKey/ServerKey from the client's salted password first.

use std::sync::Arc;

use futures::future::BoxFuture;
use metadata::scram::{
    self, ScramAlterResult, ScramCredential, ScramCredentials, ScramDeletion, ScramUpsertion,
};
use metadata::MetadataImage;
use parking_lot::RwLock;

use crate::error::CredentialError;
use crate::metadata::MetadataStore;
use crate::publisher::MetadataPublisher;
use crate::security::sasl::scram::ScramMechanism;

/// Every user's SCRAM credentials, shared by the authenticators, the admin and the publisher.
#[derive(Debug, Default)]
pub struct ScramCredentialCache(RwLock<ScramCredentials>);

impl ScramCredentialCache {
    /// An empty cache.
    pub fn new() -> ScramCredentialCache {
        ScramCredentialCache::default()
    }

    /// `user`'s credential for mechanism type code `mechanism`, if any.
    pub fn get(&self, user: &str, mechanism: i8) -> Option<ScramCredential> {
        self.0.read().get(user)?.get(&mechanism).cloned()
    }

    /// Every user's mechanisms and iteration counts (DescribeUserScramCredentials), by user.
    pub fn describe(&self) -> Vec<(String, Vec<(i8, i32)>)> {
        let creds = self.0.read();
        creds
            .iter()
            .map(|(user, m)| {
                let infos = m.iter().map(|(code, c)| (*code, c.iterations)).collect();
                (user.clone(), infos)
            })
            .collect()
    }

    /// Makes the cache equal to `credentials`.
    pub fn sync(&self, credentials: &ScramCredentials) {
        let mut current = self.0.write();
        if *current != *credentials {
            *current = credentials.clone();
        }
    }
}

/// Where credential changes are made. Both implementations answer once this broker's cache shows the change.
pub trait ScramAdmin: Send + Sync + std::fmt::Debug {
    /// Applies what `decide_alter` accepts; returns one result per user named. Errors (the whole request):
    /// KAFKA_STORAGE_ERROR, controller errors, REQUEST_TIMED_OUT.
    fn alter(
        &self,
        deletions: Vec<ScramDeletion>,
        upsertions: Vec<ScramUpsertion>,
    ) -> BoxFuture<'_, Result<Vec<ScramAlterResult>, CredentialError>>;
}

/// Standalone: decided against the registry's credentials, persisted there, then applied to the cache.
#[derive(Debug)]
pub struct LocalScramAdmin {
    store: Arc<MetadataStore>,
    cache: Arc<ScramCredentialCache>,
}

impl LocalScramAdmin {
    /// The admin over `store`'s credentials; fills `cache` from them.
    pub fn new(store: Arc<MetadataStore>, cache: Arc<ScramCredentialCache>) -> LocalScramAdmin {
        cache.sync(&store.scram_credentials());
        LocalScramAdmin { store, cache }
    }
}

impl ScramAdmin for LocalScramAdmin {
    fn alter(
        &self,
        deletions: Vec<ScramDeletion>,
        upsertions: Vec<ScramUpsertion>,
    ) -> BoxFuture<'_, Result<Vec<ScramAlterResult>, CredentialError>> {
        let store = self.store.clone();
        let cache = self.cache.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                let current = store.scram_credentials();
                let (changes, results) = scram::decide_alter(&current, &deletions, &upsertions);
                if !changes.is_empty() {
                    let (mut dels, mut ups) = (Vec::new(), Vec::new());
                    for c in changes {
                        match c {
                            scram::ScramChange::Delete(d) => dels.push(d),
                            scram::ScramChange::Upsert(u) => ups.push(u),
                        }
                    }
                    store
                        .alter_scram(dels, ups)
                        .map_err(|e| CredentialError::Storage(e.to_string()))?;
                    cache.sync(&store.scram_credentials());
                }
                Ok(results)
            })
            .await
            .map_err(|e| CredentialError::Internal(e.to_string()))?
        })
    }
}

/// What the credential APIs use: the cache (DescribeUserScramCredentials) and the admin of the mode
/// (AlterUserScramCredentials).
#[derive(Debug)]
pub struct ScramCredentialManager {
    cache: Arc<ScramCredentialCache>,
    admin: Arc<dyn ScramAdmin>,
}

impl ScramCredentialManager {
    /// The manager over `cache`, changing credentials through `admin`.
    pub fn new(
        cache: Arc<ScramCredentialCache>,
        admin: Arc<dyn ScramAdmin>,
    ) -> ScramCredentialManager {
        ScramCredentialManager { cache, admin }
    }

    /// The credentials this broker authenticates against.
    pub fn cache(&self) -> &Arc<ScramCredentialCache> {
        &self.cache
    }

    /// AlterUserScramCredentials: see [`ScramAdmin::alter`].
    pub async fn alter(
        &self,
        deletions: Vec<ScramDeletion>,
        upsertions: Vec<ScramUpsertion>,
    ) -> Result<Vec<ScramAlterResult>, CredentialError> {
        self.admin.alter(deletions, upsertions).await
    }
}

/// Cluster mode: lays each image's credentials into the cache (before the image's offset is signalled, so an
/// AlterUserScramCredentials answered after `wait_for_offset` authenticates at once).
#[derive(Debug)]
pub struct ScramPublisher(pub Arc<ScramCredentialCache>);

impl MetadataPublisher for ScramPublisher {
    fn on_image(&self, previous: &MetadataImage, current: &MetadataImage) {
        if previous.scram_credentials != current.scram_credentials || previous.offset < 0 {
            self.0.sync(&current.scram_credentials);
        }
    }
}

/// An upsertion of an AlterUserScramCredentials request with its keys derived from the salted password
/// (RFC 5802; as Kafka's `ScramControlManager.finishUpsertion`). An unknown mechanism keeps empty keys:
/// `decide_alter` refuses it with UNSUPPORTED_SASL_MECHANISM.
pub fn upsertion(
    name: String,
    mechanism: i8,
    iterations: i32,
    salt: &[u8],
    salted_password: &[u8],
) -> ScramUpsertion {
    let credential = match ScramMechanism::from_name(scram::mechanism_name(mechanism).unwrap_or(""))
    {
        Some(m) => m.credential(salted_password, salt, iterations),
        None => ScramCredential {
            salt: salt.to_vec(),
            stored_key: Vec::new(),
            server_key: Vec::new(),
            iterations,
        },
    };
    ScramUpsertion {
        name,
        mechanism,
        credential,
    }
}

/// SCRAM credentials (KIP-554): kept in the registry standalone, in the metadata image in a cluster (laid into
/// `credentials`, which the SASL listeners read, by a publisher).
pub(crate) fn wire_scram(
    metadata: &Arc<MetadataStore>,
    cluster: Option<&Arc<crate::cluster::BrokerCluster>>,
    publishers: &Arc<crate::publisher::Publishers>,
    credentials: Arc<ScramCredentialCache>,
) -> Arc<ScramCredentialManager> {
    let scram_admin: Arc<dyn ScramAdmin> = match cluster {
        Some(c) => {
            publishers.install(Arc::new(ScramPublisher(credentials.clone())));
            Arc::new(crate::cluster::QuorumScramAdmin(c.clone()))
        }
        None => Arc::new(LocalScramAdmin::new(metadata.clone(), credentials.clone())),
    };
    Arc::new(ScramCredentialManager::new(credentials, scram_admin))
}
