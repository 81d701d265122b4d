//! The broker's read view of cluster metadata (Kafka's `MetadataCache`): brokers, topics with their
//! partitions' leaders, epochs, replicas and ISR, and the controllers — as one [`MetadataImage`] in both modes,
//! so request handlers answer Metadata, DescribeCluster, FindCoordinator and CreateTopics the same way.
//!
//! A cluster member's view is the image it replays from the metadata quorum ([`crate::cluster`]). A
//! standalone broker's is [`LocalMetadataCache`]: an image derived from its own topic registry in which it is
//! the only broker, the controller, and the leader (LeaderEpoch 0) and sole ISR member of every partition.

use std::sync::Arc;

use imbl::ordmap::DiffItem;
use imbl::OrdMap;
use metadata::{BrokerRegistration, MetadataImage, PartitionRegistration, TopicImage};
use parking_lot::Mutex;
use types::{BrokerId, LeaderEpoch, PartitionEpoch};

use replica::replica_selector::ReplicaSelector;

use crate::config::{keys, BrokerConfig};
use crate::metadata::{MetadataStore, TopicMetadata};

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

/// `broker.rack` (KIP-36), `None` when unset or empty.
pub fn broker_rack(config: &BrokerConfig) -> Option<String> {
    config.value("broker.rack").filter(|r| !r.trim().is_empty())
}

/// `replica.selector.class` (KIP-392) as the selector it names: `Ok(None)` when unset (Kafka's default:
/// consumers read from the leader only). Error: a class Runnel does not implement, with a message naming
/// the ones it does (refused at startup).
pub fn replica_selector(config: &BrokerConfig) -> Result<Option<ReplicaSelector>, String> {
    let class = config.get(keys::REPLICA_SELECTOR_CLASS).unwrap_or_default();
    ReplicaSelector::from_class_name(&class)
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
///
/// The image is kept, not rebuilt: on a registry change the new registry is diffed against the one the image
/// was made from (both persistent maps sharing structure, so the diff visits only what changed) and only
/// the changed topics are replaced — O(changes · log topics) per change (issue 13).
#[derive(Debug)]
pub struct LocalMetadataCache {
    node_id: BrokerId,
    host: String,
    port: u16,
    metadata: Arc<MetadataStore>,
    cached: Mutex<Cached>,
}

/// The last image and the registry it was derived from.
#[derive(Debug)]
struct Cached {
    /// The registry generation of `registry`; `u64::MAX` before the first image.
    generation: u64,
    registry: OrdMap<String, TopicMetadata>,
    image: Arc<MetadataImage>,
}

impl LocalMetadataCache {
    /// The view of a standalone broker with `config` over its topic registry `metadata`.
    pub fn new(config: &BrokerConfig, metadata: Arc<MetadataStore>) -> LocalMetadataCache {
        let me = config.node_id;
        let broker = BrokerRegistration {
            broker_id: me,
            broker_epoch: types::BrokerEpoch(0),
            incarnation_id: uuid::Uuid::nil(),
            host: config.advertised_listener.host.clone(),
            port: config.advertised_listener.port,
            listeners: advertised_endpoints(config),
            rack: broker_rack(config),
            fenced: false,
            in_controlled_shutdown: false,
            log_dir_offline: false,
            log_dirs: Vec::new(),
            offline_log_dirs: Vec::new(),
        };
        let image = MetadataImage {
            cluster_id: metadata.cluster_id().to_string(),
            brokers: [(me, broker)].into(),
            ..MetadataImage::default()
        };
        LocalMetadataCache {
            node_id: me,
            host: config.advertised_listener.host.clone(),
            port: config.advertised_listener.port,
            metadata,
            cached: Mutex::new(Cached {
                generation: u64::MAX,
                registry: OrdMap::new(),
                image: Arc::new(image),
            }),
        }
    }

    /// Topic `name` of the registry as an image topic: every partition led by this broker alone.
    fn topic_image(&self, name: &str, t: &TopicMetadata) -> TopicImage {
        let only_me = PartitionRegistration {
            replicas: vec![self.node_id],
            isr: vec![self.node_id],
            leader: self.node_id,
            leader_epoch: LeaderEpoch(0),
            partition_epoch: PartitionEpoch(0),
            adding_replicas: Vec::new(),
            removing_replicas: Vec::new(),
            directories: Vec::new(),
        };
        TopicImage {
            name: name.to_string(),
            topic_id: t.topic_id,
            partitions: (0..t.partitions).map(|p| (p, only_me.clone())).collect(),
            configs: t.configs.clone(),
        }
    }

    /// `cached` brought to registry `registry` at `generation`: only the topics that differ are replaced.
    fn advance(
        &self,
        cached: &mut Cached,
        generation: u64,
        registry: OrdMap<String, TopicMetadata>,
    ) {
        let mut image = (*cached.image).clone();
        for change in cached.registry.diff(&registry) {
            match change {
                DiffItem::Add(name, t) | DiffItem::Update { new: (name, t), .. } => {
                    image.topics.insert(name.clone(), self.topic_image(name, t));
                }
                DiffItem::Remove(name, _) => {
                    image.topics.remove(name);
                }
            }
        }
        image.offset = i64::try_from(generation).unwrap_or(i64::MAX);
        *cached = Cached {
            generation,
            registry,
            image: Arc::new(image),
        };
    }
}

impl MetadataCache for LocalMetadataCache {
    fn image(&self) -> Arc<MetadataImage> {
        let mut cached = self.cached.lock();
        if cached.generation != self.metadata.generation() {
            let (generation, registry) = self.metadata.topics_at_generation();
            self.advance(&mut cached, generation, registry);
        }
        cached.image.clone()
    }

    fn controller_id(&self) -> BrokerId {
        self.node_id
    }

    fn controllers(&self) -> Vec<ControllerEndpoint> {
        vec![(self.node_id, self.host.clone(), self.port)]
    }
}
