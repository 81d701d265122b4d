//! The group simulation's brokers: the replication simulation's [`World`] (test controller, disks, clocks)
//! hosting one `__consumer_offsets` partition (replicas 1..=3, `min.insync.replicas` = 2) instead of its data
//! partition, with the production group coordinator wired as `lifecycle::wire` does in a cluster: every
//! committed partition state becomes a metadata image that is applied to the ReplicaManager and then handed
//! to the installed `MetadataPublisher`s, so the real `GroupCoordinatorPublisher` loads the partition when
//! the broker becomes its leader and unloads it when it stops being one; FindCoordinator answers from the
//! same images ([`SimMetadataCache`]).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use metadata::{BrokerRegistration, MetadataImage, PartitionRegistration, TopicImage};
use parking_lot::Mutex;
use replica::partition::PartitionState;
use replica::replica_manager::ReplicaManager;
use storage::{LogConfig, LogManager};
use tokio::sync::watch;
use types::{BrokerEpoch, BrokerId, LeaderEpoch, PartitionEpoch};
use uuid::Uuid;

use crate::config::BrokerConfig;
use crate::group_coordinator::{GroupCoordinatorService, OFFSETS_TOPIC};
use crate::metadata::{MetadataStore, TopicMetadata};
use crate::metadata_cache::MetadataCache;
use crate::publisher::Publishers;
use crate::sim::cluster::{host, SimLink, TurmoilConnector, World, BROKERS, PORT};

/// The data topic whose offsets the members commit (registry and image only: no partition is hosted).
pub const DATA_TOPIC: &str = "events";
/// Partitions of [`DATA_TOPIC`].
pub const DATA_PARTITIONS: i32 = 6;
/// `replica.lag.time.max.ms` of the simulated brokers (as the replication simulation's).
const LAG_MAX_MS: i64 = 1_000;

/// A broker incarnation's ReplicaManager and group coordinator.
pub type Incarnation = (Arc<ReplicaManager>, Arc<GroupCoordinatorService>);

/// The replication world plus what the group simulation needs of each broker.
pub struct GroupWorld {
    /// Controller, disks, clocks and the running ReplicaManagers (shared with the fault injection).
    pub world: Arc<World>,
    /// The running incarnation of each broker's group coordinator, with its ReplicaManager (an entry is
    /// current only while that ReplicaManager is `world.brokers`').
    pub groups: Mutex<BTreeMap<i32, Incarnation>>,
    /// Incarnations started so far (seeds each one's member ids).
    starts: AtomicU64,
    seed: u64,
    dirs: BTreeMap<i32, tempfile::TempDir>,
    offsets_id: Uuid,
    data_id: Uuid,
}

impl GroupWorld {
    /// Three brokers, broker 1 leading `__consumer_offsets`-0 in epoch 1 with the full ISR.
    pub fn new(seed: u64) -> Arc<GroupWorld> {
        let world = World::new(seed);
        // The partition's topic id, as the test controller's states carry it.
        let offsets_id = world.meta.borrow().topic_id;
        Arc::new(GroupWorld {
            world,
            groups: Mutex::new(BTreeMap::new()),
            starts: AtomicU64::new(0),
            seed,
            dirs: BROKERS
                .iter()
                .map(|&b| (b, tempfile::tempdir().unwrap()))
                .collect(),
            offsets_id,
            data_id: Uuid::from_u64_pair(seed, 51),
        })
    }

    /// The running coordinator of broker `b` (None while it is down).
    pub fn coordinator(
        &self,
        b: i32,
    ) -> Option<(Arc<ReplicaManager>, Arc<GroupCoordinatorService>)> {
        let rm = self.world.brokers.lock().get(&b).cloned()?;
        let groups = self.groups.lock();
        let (r, g) = groups.get(&b)?;
        Arc::ptr_eq(r, &rm).then(|| (r.clone(), g.clone()))
    }

    /// The metadata image of partition state `state` as the simulated brokers see it.
    fn image(&self, state: &PartitionState) -> MetadataImage {
        let (alive, offline) = {
            let ctl = self.world.ctl.lock();
            (ctl.alive.clone(), ctl.offline.clone())
        };
        let mut image = MetadataImage {
            offset: i64::from(state.partition_epoch.get()),
            ..Default::default()
        };
        for b in BROKERS {
            image.brokers.insert(
                BrokerId(b),
                BrokerRegistration {
                    broker_id: BrokerId(b),
                    broker_epoch: BrokerEpoch(1),
                    incarnation_id: Uuid::nil(),
                    host: host(b),
                    port: PORT,
                    listeners: Vec::new(),
                    rack: None,
                    fenced: !alive.contains(&b),
                    in_controlled_shutdown: false,
                    log_dir_offline: offline.contains(&b),
                    log_dirs: Vec::new(),
                    offline_log_dirs: Vec::new(),
                },
            );
        }
        let offsets = PartitionRegistration {
            replicas: state.replicas.clone(),
            isr: state.isr.clone(),
            leader: state.leader,
            leader_epoch: state.leader_epoch,
            partition_epoch: state.partition_epoch,
            adding_replicas: Vec::new(),
            removing_replicas: Vec::new(),
            directories: Vec::new(),
        };
        image.topics.insert(
            OFFSETS_TOPIC.to_string(),
            TopicImage {
                name: OFFSETS_TOPIC.to_string(),
                topic_id: self.offsets_id,
                partitions: BTreeMap::from([(0, offsets)]),
                configs: offsets_configs(),
            },
        );
        let data = (0..DATA_PARTITIONS).map(|p| {
            let reg = PartitionRegistration {
                replicas: vec![BrokerId(1)],
                isr: vec![BrokerId(1)],
                leader: BrokerId(1),
                leader_epoch: LeaderEpoch(0),
                partition_epoch: PartitionEpoch(0),
                adding_replicas: Vec::new(),
                removing_replicas: Vec::new(),
                directories: Vec::new(),
            };
            (p, reg)
        });
        image.topics.insert(
            DATA_TOPIC.to_string(),
            TopicImage {
                name: DATA_TOPIC.to_string(),
                topic_id: self.data_id,
                partitions: data.collect(),
                configs: BTreeMap::new(),
            },
        );
        image
    }
}

/// `__consumer_offsets`' configs: as the coordinator creates it, plus `min.insync.replicas` = 2.
fn offsets_configs() -> BTreeMap<String, String> {
    BTreeMap::from([
        ("cleanup.policy".to_string(), "compact".to_string()),
        ("min.insync.replicas".to_string(), "2".to_string()),
    ])
}

/// A broker's view of the cluster metadata: the last image its runner published.
#[derive(Debug, Default)]
pub struct SimMetadataCache(Mutex<Arc<MetadataImage>>);

impl MetadataCache for SimMetadataCache {
    fn image(&self) -> Arc<MetadataImage> {
        self.0.lock().clone()
    }

    fn controller_id(&self) -> BrokerId {
        BrokerId::NONE
    }

    fn controllers(&self) -> Vec<crate::metadata_cache::ControllerEndpoint> {
        Vec::new()
    }
}

/// A broker host's software: opens its logs from its SimFs, serves the Kafka protocol with the real
/// KafkaApis and group coordinator (cluster mode, on the broker's simulated clock, loads inline), and
/// publishes every committed partition state as an image: ReplicaManager first, then the publishers.
pub async fn run_broker(gw: Arc<GroupWorld>, id: i32) -> turmoil::Result {
    let world = gw.world.clone();
    let dir = gw.dirs[&id].path().to_path_buf();
    let pairs: Vec<(String, String)> = [
        ("log.dirs", dir.to_str().unwrap()),
        ("node.id", &id.to_string()),
        ("log.flush.offset.checkpoint.interval.ms", "200"),
        ("offsets.topic.num.partitions", "1"),
        ("offsets.topic.replication.factor", "3"),
        ("group.initial.rebalance.delay.ms", "300"),
        ("group.min.session.timeout.ms", "1000"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let config = BrokerConfig::from_pairs(&pairs)?;
    let metadata = Arc::new(MetadataStore::open(&dir, id)?);
    for (name, topic_id, partitions, configs) in [
        (OFFSETS_TOPIC, gw.offsets_id, 1, offsets_configs()),
        (DATA_TOPIC, gw.data_id, DATA_PARTITIONS, BTreeMap::new()),
    ] {
        if metadata.topic(name).is_none() {
            let t = TopicMetadata {
                topic_id,
                partitions,
                configs,
            };
            metadata.create_topic(name, t)?;
        }
    }
    let mut log_config: LogConfig = crate::topic_config::log_config(&config, &offsets_configs());
    log_config.segment_bytes = 4096;
    let lc = log_config.clone();
    let clock = world.clocks[&id].clone();
    let lm = LogManager::open_in(
        world.disks[&id].fs(),
        PathBuf::from("/data"),
        move |_| lc.clone(),
        Arc::new(clock.clone()),
    )?;
    let rm = Arc::new(ReplicaManager::with_seams(
        Arc::new(lm),
        BrokerId(id),
        Arc::new(SimLink(world.clone())),
        LAG_MAX_MS,
        Arc::new(clock.clone()),
        Arc::new(TurmoilConnector),
    ));
    let dynamic = Arc::new(crate::dynamic_config::DynamicBrokerConfig::in_memory(
        config.clone(),
    ));
    let cache = Arc::new(SimMetadataCache::default());
    let publishers = Arc::new(Publishers::default());
    let io = crate::log_dir_failure::BackgroundIo { inline: true };
    let incarnation = gw.starts.fetch_add(1, Ordering::Relaxed);
    let member_id_seed = gw.seed.wrapping_mul(1_000_003).wrapping_add(incarnation);
    let seams = crate::lifecycle::WireSeams {
        metadata_cache: Some(cache.clone()),
        groups: Some((Arc::new(clock), io, member_id_seed)),
    };
    let apis = crate::lifecycle::wire_with(
        &config,
        metadata,
        dynamic,
        rm.clone(),
        None,
        &publishers,
        Arc::new(crate::scram::ScramCredentialCache::new()),
        seams,
    );
    let groups = apis.group_coordinator().clone();
    let listener = turmoil::net::TcpListener::bind(("0.0.0.0", PORT)).await?;
    let (_shutdown, rx) = watch::channel(false);
    tokio::spawn(crate::server::network::serve(
        listener,
        crate::server::network::ListenerSecurity::plaintext("PLAINTEXT"),
        apis,
        rx.clone(),
    ));
    // As `lifecycle::Services::spawn`: the group timers, the (cluster-mode) load, then the storage tasks.
    tokio::spawn(groups.clone().run_timers(rx.clone()));
    groups.load();
    crate::sim::cluster::spawn_storage_tasks(&world, id, &config, &rm, rx);
    world.brokers.lock().insert(id, rm.clone());
    gw.groups.lock().insert(id, (rm.clone(), groups));
    world.unfence(id);
    let mut meta = world.meta.subscribe();
    let mut previous = Arc::new(MetadataImage::default());
    loop {
        let state = meta.borrow_and_update().clone();
        let current = Arc::new(gw.image(&state));
        if let Err(e) = rm.apply_partition_state(OFFSETS_TOPIC, 0, log_config.clone(), state) {
            tracing::warn!(broker = id, error = %e, "apply_partition_state failed");
        }
        *cache.0.lock() = current.clone();
        publishers.publish(&previous, &current);
        previous = current;
        if meta.changed().await.is_err() {
            return Ok(());
        }
    }
}
