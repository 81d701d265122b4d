//! The broker's read view of cluster metadata (Kafka's `MetadataCache`): brokers, topics with their
//! partitions' leaders, epochs, replicas and ISR, and the controllers — as one [`MetadataImage`] in both modes,
//! so request handlers answer Metadata, DescribeCluster, FindCoordinator and CreateTopics the same way.
//!
//! A cluster member's view is the image it replays from the metadata quorum ([`crate::cluster`]). A
//! standalone broker's is [`LocalMetadataCache`]: an image derived from its own topic registry in which it is
//! the only broker, the controller, and the leader (LeaderEpoch 0) and sole ISR member of every partition.

use std::sync::Arc;

use metadata::{BrokerRegistration, MetadataImage, PartitionRegistration, TopicImage};
use parking_lot::Mutex;
use types::{BrokerId, LeaderEpoch, PartitionEpoch};

use crate::config::BrokerConfig;
use crate::metadata::MetadataStore;

/// A controller endpoint: (node id, host, port).
pub type ControllerEndpoint = (BrokerId, String, u16);

/// Where handlers read cluster metadata.
pub trait MetadataCache: Send + Sync + std::fmt::Debug {
    /// The current image (cheap: shared, rebuilt only when metadata changed).
    fn image(&self) -> Arc<MetadataImage>;
    /// The active controller as last known, [`BrokerId::NONE`] when unknown.
    fn controller_id(&self) -> BrokerId;
    /// The controller quorum's voters (KIP-919 controller endpoints).
    fn controllers(&self) -> Vec<ControllerEndpoint>;
}

/// This broker's advertised listeners as registered (Kafka's `BrokerRegistration` endpoints).
pub fn advertised_endpoints(config: &BrokerConfig) -> Vec<metadata::BrokerEndpoint> {
    let listeners = &config.listeners;
    listeners
        .advertised
        .iter()
        .map(|e| metadata::BrokerEndpoint {
            name: e.name.clone(),
            host: e.host.clone(),
            port: e.port,
            security_protocol: listeners
                .get(&e.name)
                .map_or(0, |l| l.security_protocol.id()),
        })
        .collect()
}

/// The standalone [`MetadataCache`]: one broker that is its own controller and leads every partition.
#[derive(Debug)]
pub struct LocalMetadataCache {
    node_id: BrokerId,
    listeners: Vec<metadata::BrokerEndpoint>,
    host: String,
    port: u16,
    cluster_id: String,
    metadata: Arc<MetadataStore>,
    /// The image of metadata generation `.0`.
    cached: Mutex<(u64, Arc<MetadataImage>)>,
}

impl LocalMetadataCache {
    /// The view of a standalone broker with `config` over its topic registry `metadata`.
    pub fn new(config: &BrokerConfig, metadata: Arc<MetadataStore>) -> LocalMetadataCache {
        LocalMetadataCache {
            node_id: config.node_id,
            listeners: advertised_endpoints(config),
            host: config.advertised_listener.host.clone(),
            port: config.advertised_listener.port,
            cluster_id: metadata.cluster_id().to_string(),
            metadata,
            cached: Mutex::new((u64::MAX, Arc::new(MetadataImage::default()))),
        }
    }

    fn build(&self, generation: u64) -> MetadataImage {
        let me = self.node_id;
        let broker = BrokerRegistration {
            broker_id: me,
            broker_epoch: types::BrokerEpoch(0),
            incarnation_id: uuid::Uuid::nil(),
            host: self.host.clone(),
            port: self.port,
            listeners: self.listeners.clone(),
            rack: None,
            fenced: false,
            in_controlled_shutdown: false,
            log_dir_offline: false,
        };
        let only_me = PartitionRegistration {
            replicas: vec![me],
            isr: vec![me],
            leader: me,
            leader_epoch: LeaderEpoch(0),
            partition_epoch: PartitionEpoch(0),
        };
        let topics = self
            .metadata
            .topics()
            .into_iter()
            .map(|(name, t)| {
                let image = TopicImage {
                    name: name.clone(),
                    topic_id: t.topic_id,
                    partitions: (0..t.partitions).map(|p| (p, only_me.clone())).collect(),
                    configs: t.configs,
                };
                (name, image)
            })
            .collect();
        MetadataImage {
            offset: i64::try_from(generation).unwrap_or(i64::MAX),
            cluster_id: self.cluster_id.clone(),
            brokers: [(me, broker)].into(),
            topics,
            ..MetadataImage::default()
        }
    }
}

impl MetadataCache for LocalMetadataCache {
    fn image(&self) -> Arc<MetadataImage> {
        let generation = self.metadata.generation();
        let mut cached = self.cached.lock();
        if cached.0 != generation {
            *cached = (generation, Arc::new(self.build(generation)));
        }
        cached.1.clone()
    }

    fn controller_id(&self) -> BrokerId {
        self.node_id
    }

    fn controllers(&self) -> Vec<ControllerEndpoint> {
        vec![(self.node_id, self.host.clone(), self.port)]
    }
}
