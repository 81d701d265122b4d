//! Where DescribeQuorum (KIP-595) learns the metadata quorum's state: [`MetadataQuorum`], answered by the
//! active controller in a cluster ([`ControllerQuorum`]) and by the broker itself standalone
//! ([`LocalQuorum`]), where the one process is the quorum's only voter and leader, as a single combined
//! Kafka node is.

use std::sync::Arc;

use futures::future::BoxFuture;
use metadata::{ControllerError, QuorumInfo, ReplicaProgress};
use types::BrokerId;

use crate::cluster::BrokerCluster;
use crate::metadata_cache::MetadataCache;

/// The metadata quorum as the request handlers see it.
pub trait MetadataQuorum: Send + Sync + std::fmt::Debug {
    /// The active controller's view of the quorum. Errors: the controller's, passed through (cluster
    /// mode: REQUEST_TIMED_OUT, NOT_CONTROLLER when no controller could be reached, ...).
    fn describe(&self) -> BoxFuture<'_, Result<QuorumInfo, ControllerError>>;
}

/// The cluster-mode [`MetadataQuorum`]: asks the active controller (`ControllerClient::describe_quorum`).
#[derive(Debug)]
pub struct ControllerQuorum(pub Arc<BrokerCluster>);

impl MetadataQuorum for ControllerQuorum {
    fn describe(&self) -> BoxFuture<'_, Result<QuorumInfo, ControllerError>> {
        Box::pin(self.0.client().describe_quorum())
    }
}

/// The standalone [`MetadataQuorum`]: this broker is the only voter and the leader (epoch 0, as its
/// partitions' leader epochs); the metadata offset is the topic registry's generation, the offset of the
/// standalone image. It has no controller socket, so `voters` is empty: the voter is in `current_voters`.
#[derive(Debug)]
pub struct LocalQuorum {
    node_id: BrokerId,
    cache: Arc<dyn MetadataCache>,
}

impl LocalQuorum {
    /// The quorum of standalone broker `node_id` over its metadata `cache`.
    pub fn new(node_id: BrokerId, cache: Arc<dyn MetadataCache>) -> LocalQuorum {
        LocalQuorum { node_id, cache }
    }
}

impl MetadataQuorum for LocalQuorum {
    fn describe(&self) -> BoxFuture<'_, Result<QuorumInfo, ControllerError>> {
        let offset = self.cache.image().offset;
        let now_ms = types::Clock::now_ms(&types::SystemClock);
        Box::pin(std::future::ready(Ok(QuorumInfo {
            leader_id: Some(self.node_id),
            leader_epoch: 0,
            high_watermark: offset,
            voters: Default::default(),
            current_voters: vec![ReplicaProgress {
                replica_id: self.node_id,
                last_offset: offset,
                last_fetch_ms: now_ms,
                last_caught_up_ms: now_ms,
            }],
            observers: Vec::new(),
            directory_ids: Default::default(),
        })))
    }
}

/// The [`MetadataQuorum`] of a broker: the controller's in a cluster, its own standalone.
pub fn metadata_quorum(
    node_id: BrokerId,
    cluster: Option<&Arc<BrokerCluster>>,
    cache: &Arc<dyn MetadataCache>,
) -> Arc<dyn MetadataQuorum> {
    match cluster {
        Some(c) => Arc::new(ControllerQuorum(c.clone())),
        None => Arc::new(LocalQuorum::new(node_id, cache.clone())),
    }
}
