//! The simulated cluster: the turmoil transports behind the network seams, the simulated clock, the test
//! controller (a [`ClusterLink`] that plays KRaft for one partition) and a broker host's software.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use futures::future::BoxFuture;
use parking_lot::Mutex;
use protocol::error::ErrorCode;
use replica::cluster_link::ClusterLink;
use replica::partition::PartitionState;
use replica::replica_manager::ReplicaManager;
use replica::transport::{BoxedStream, Connector};
use storage::{LogConfig, LogManager, SimFs};
use tokio::sync::watch;
use types::{BrokerId, Clock, LeaderEpoch, PartitionEpoch};
use uuid::Uuid;

use crate::config::BrokerConfig;
use crate::metadata::{MetadataStore, TopicMetadata};
use crate::server::network::{Listener, ServerStream};

/// The one simulated topic (one partition, replicas 1..=3).
pub const TOPIC: &str = "sim";
/// The brokers' Kafka port on their simulated hosts.
pub const PORT: u16 = 9092;
/// Broker ids.
pub const BROKERS: [i32; 3] = [1, 2, 3];
/// `replica.lag.time.max.ms` of the simulated brokers.
const LAG_MAX_MS: i64 = 1_000;
/// The simulation's epoch (ms since the Unix epoch), fixed so a run is the same every time.
pub const EPOCH_MS: i64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z

/// Host name of broker `id`.
pub fn host(id: i32) -> String {
    format!("b{id}")
}

impl Listener for turmoil::net::TcpListener {
    type Stream = turmoil::net::TcpStream;

    async fn accept(&self) -> std::io::Result<(turmoil::net::TcpStream, SocketAddr)> {
        turmoil::net::TcpListener::accept(self).await
    }
}

/// A simulated stream: file slices are copied (the trait's default); storage on `SimFs` hands out memory
/// records anyway.
impl ServerStream for turmoil::net::TcpStream {}

/// The fetchers' (and the test client's) connections over the simulated network.
pub struct TurmoilConnector;

impl Connector for TurmoilConnector {
    fn connect(&self, host: &str, port: u16) -> BoxFuture<'static, std::io::Result<BoxedStream>> {
        let host = host.to_string();
        Box::pin(async move {
            let s = turmoil::net::TcpStream::connect((host.as_str(), port)).await?;
            Ok(Box::new(s) as BoxedStream)
        })
    }
}

/// Wall-clock time of the simulation: the epoch plus turmoil's virtual elapsed time, plus this clock's
/// skew (a broker's clock jumps by changing it).
#[derive(Debug, Default, Clone)]
pub struct SimClock {
    skew_ms: Arc<AtomicI64>,
}

impl SimClock {
    /// Steps this clock by `delta_ms` (either way), as an NTP step or an operator would.
    pub fn jump(&self, delta_ms: i64) {
        self.skew_ms.fetch_add(delta_ms, Ordering::SeqCst);
    }

    /// This clock's time when the simulation has run for `elapsed` (read outside a simulated host).
    pub fn at(&self, elapsed: std::time::Duration) -> i64 {
        EPOCH_MS + elapsed.as_millis() as i64 + self.skew_ms.load(Ordering::SeqCst)
    }
}

impl Clock for SimClock {
    fn now_ms(&self) -> i64 {
        let now = turmoil::since_epoch().map_or(EPOCH_MS, |d| d.as_millis() as i64);
        now + self.skew_ms.load(Ordering::SeqCst)
    }

    /// Turmoil's virtual time since the epoch, without the skew: a jump does not move it.
    fn monotonic_ms(&self) -> i64 {
        turmoil::since_epoch().map_or(EPOCH_MS, |d| d.as_millis() as i64)
    }
}

/// What the test controller knows: the partition's registration and which brokers are up.
pub struct Controller {
    /// The committed partition state (KRaft's PartitionRecord + changes).
    pub state: PartitionState,
    /// Brokers whose host is running (not crashed); the controller fences the others.
    pub alive: BTreeSet<i32>,
    /// Brokers whose last report (KIP-858's heartbeat `log_dir_offline`) says their data dir is offline:
    /// ineligible for leadership and the ISR until they report it online.
    pub offline: BTreeSet<i32>,
    /// Decisions, in order (part of the run's trace).
    pub log: Vec<String>,
    /// Brokers an AlterPartition added to the ISR, not yet seen by the test loop.
    pub expanded: Vec<i32>,
    /// The commit latency of each AlterPartition (KRaft commits it through the quorum).
    alter_rng: storage::vfs::SimRng,
}

impl Controller {
    /// Whether broker `b` may lead or join the ISR: running and its data dir online (the real
    /// controller's `is_active_broker`).
    pub fn eligible(&self, b: i32) -> bool {
        self.alive.contains(&b) && !self.offline.contains(&b)
    }
}

/// State shared by the test loop, the hosts and the controller link.
pub struct World {
    /// The controller.
    pub ctl: Mutex<Controller>,
    /// The metadata every broker follows (the controller publishes each committed state).
    pub meta: watch::Sender<PartitionState>,
    /// The running incarnation of each broker's ReplicaManager (None while crashed).
    pub brokers: Mutex<BTreeMap<i32, Arc<ReplicaManager>>>,
    /// Each broker's disk; survives crashes.
    pub disks: BTreeMap<i32, SimFs>,
    /// Each broker's wall clock (jumps survive restarts, as a machine's clock would).
    pub clocks: BTreeMap<i32, SimClock>,
    /// Per crashed broker: the recovery point its log had at the power loss (everything below it was
    /// fsynced, so its log must reach it again when it restarts, before it fetches anything).
    pub durable_floor: Mutex<BTreeMap<i32, i64>>,
    /// Violations found inside the brokers' hosts (the durable floor), for the checker.
    pub violations: Mutex<Vec<String>>,
    /// Each broker's registry directory (real, written once at the first start).
    dirs: BTreeMap<i32, tempfile::TempDir>,
    topic_id: Uuid,
}

impl World {
    /// Three brokers, broker 1 leading epoch 1 with the full ISR; disks seeded from `seed`.
    pub fn new(seed: u64) -> Arc<World> {
        let topic_id = Uuid::from_u64_pair(seed, 13);
        let all: Vec<BrokerId> = BROKERS.iter().copied().map(BrokerId).collect();
        let state = PartitionState {
            topic_id,
            leader: BrokerId(1),
            leader_epoch: LeaderEpoch(1),
            partition_epoch: PartitionEpoch(1),
            isr: all.clone(),
            replicas: all,
        };
        let (meta, _) = watch::channel(state.clone());
        Arc::new(World {
            ctl: Mutex::new(Controller {
                state,
                alive: BROKERS.iter().copied().collect(),
                offline: BTreeSet::new(),
                log: Vec::new(),
                expanded: Vec::new(),
                alter_rng: storage::vfs::SimRng(seed ^ 0xA17E_0000),
            }),
            meta,
            brokers: Mutex::new(BTreeMap::new()),
            disks: BROKERS
                .iter()
                .map(|&b| (b, SimFs::new(seed.wrapping_mul(31).wrapping_add(b as u64))))
                .collect(),
            clocks: BROKERS.iter().map(|&b| (b, SimClock::default())).collect(),
            durable_floor: Mutex::new(BTreeMap::new()),
            violations: Mutex::new(Vec::new()),
            dirs: BROKERS
                .iter()
                .map(|&b| (b, tempfile::tempdir().unwrap()))
                .collect(),
            topic_id,
        })
    }

    /// Commits `state` (partition epoch bumped) and publishes it to every broker.
    fn commit(&self, ctl: &mut Controller, why: &str) {
        ctl.state.partition_epoch = ctl.state.partition_epoch.next();
        let s = &ctl.state;
        ctl.log.push(format!(
            "{why}: leader {} epoch {} pe {} isr {:?}",
            s.leader.get(),
            s.leader_epoch.get(),
            s.partition_epoch.get(),
            s.isr.iter().map(|b| b.get()).collect::<Vec<_>>()
        ));
        self.meta.send_replace(ctl.state.clone());
    }

    /// Whether broker `b` may crash now: every other broker is up and the ISR keeps a member without it
    /// (crashing the last ISR member would lose its unflushed acknowledged records, as in Kafka without
    /// KIP-966; the simulation does not model that case).
    pub fn may_crash(&self, b: i32) -> bool {
        let ctl = self.ctl.lock();
        ctl.alive.len() == BROKERS.len() && ctl.state.isr.iter().any(|i| i.get() != b)
    }

    /// The controller fences crashed broker `b` (see [`leave`](Self::leave)).
    pub fn fence(&self, b: i32) {
        let mut ctl = self.ctl.lock();
        ctl.alive.remove(&b);
        self.leave(&mut ctl, b, &format!("fence {b}"));
    }

    /// Broker `b` left (fenced, or its data dir offline), as the real controller's `broker_leaves`: out of
    /// the ISR unless it is the last member (kept so it can come back); if it led, the first eligible
    /// ISR member leads the next epoch, or no one.
    fn leave(&self, ctl: &mut Controller, b: i32, why: &str) {
        if ctl.state.isr.len() > 1 {
            ctl.state.isr.retain(|i| i.get() != b);
        }
        if ctl.state.leader.get() == b {
            let next = ctl
                .state
                .isr
                .iter()
                .copied()
                .find(|i| ctl.eligible(i.get()));
            ctl.state.leader = next.unwrap_or(BrokerId::NONE);
            ctl.state.leader_epoch = LeaderEpoch(ctl.state.leader_epoch.get() + 1);
        }
        self.commit(ctl, why);
    }

    /// Broker `b` is back (registered again, unfenced, its data dir online as a fresh start opened
    /// it); it rejoins the ISR through its leader.
    pub fn unfence(&self, b: i32) {
        let mut ctl = self.ctl.lock();
        ctl.alive.insert(b);
        ctl.offline.remove(&b);
        ctl.log.push(format!("unfence {b}"));
        self.arrive(&mut ctl, b);
    }

    /// A report of broker `b`'s data dir (the heartbeat's `log_dir_offline`), handled as the real
    /// controller's `log_dir_change`: offline, it leaves (leaderships move to other eligible ISR
    /// members, it leaves the ISR) and is ineligible; online again, it may lead a leaderless partition
    /// whose ISR holds it, and rejoins other ISRs through the leader.
    pub fn log_dir(&self, b: i32, offline: bool) {
        let mut ctl = self.ctl.lock();
        if ctl.offline.contains(&b) == offline {
            return;
        }
        if offline {
            ctl.offline.insert(b);
        } else {
            ctl.offline.remove(&b);
        }
        if !ctl.alive.contains(&b) {
            ctl.log
                .push(format!("log dir of fenced {b} offline {offline}"));
        } else if offline {
            self.leave(&mut ctl, b, &format!("log dir of {b} offline"));
        } else {
            ctl.log.push(format!("log dir of {b} online"));
            self.arrive(&mut ctl, b);
        }
    }

    /// Eligible broker `b` leads the partition if it has no leader and `b` is in its ISR.
    fn arrive(&self, ctl: &mut Controller, b: i32) {
        if ctl.state.leader == BrokerId::NONE
            && ctl.eligible(b)
            && ctl.state.isr.contains(&BrokerId(b))
        {
            ctl.state.leader = BrokerId(b);
            ctl.state.leader_epoch = LeaderEpoch(ctl.state.leader_epoch.get() + 1);
            self.commit(ctl, &format!("{b} leads again"));
        }
    }

    /// A leader election (as a preferred-leader election or a controlled move): the `pick`-th other
    /// ISR member leads the next epoch. False when the ISR has no other member.
    pub fn elect(&self, pick: usize) -> bool {
        let mut ctl = self.ctl.lock();
        let leader = ctl.state.leader;
        let others: Vec<BrokerId> = ctl
            .state
            .isr
            .iter()
            .copied()
            .filter(|b| *b != leader && ctl.eligible(b.get()))
            .collect();
        if others.is_empty() {
            return false;
        }
        ctl.state.leader = others[pick % others.len()];
        ctl.state.leader_epoch = LeaderEpoch(ctl.state.leader_epoch.get() + 1);
        self.commit(&mut ctl, "elect");
        true
    }

    /// A preferred-leader election of broker `b`: it leads the next epoch if it is an eligible ISR member
    /// and does not lead already. False otherwise.
    pub fn elect_broker(&self, b: i32) -> bool {
        let mut ctl = self.ctl.lock();
        let id = BrokerId(b);
        if ctl.state.leader == id || !ctl.state.isr.contains(&id) || !ctl.eligible(b) {
            return false;
        }
        ctl.state.leader = id;
        ctl.state.leader_epoch = LeaderEpoch(ctl.state.leader_epoch.get() + 1);
        self.commit(&mut ctl, "preferred election");
        true
    }

    /// AlterPartition as KRaft decides it: leader epoch, partition epoch, only eligible brokers in the
    /// ISR; a committed expansion is noted in [`Controller::expanded`].
    fn decide_alter(
        &self,
        state: PartitionState,
    ) -> Result<PartitionState, metadata::ControllerError> {
        let mut ctl = self.ctl.lock();
        let refuse = |code, why: &str| Err(metadata::ControllerError::new(code, why));
        if ctl.state.leader_epoch != state.leader_epoch {
            refuse(ErrorCode::FENCED_LEADER_EPOCH, "stale leader epoch")
        } else if ctl.state.partition_epoch != state.partition_epoch {
            refuse(ErrorCode::INVALID_UPDATE_VERSION, "stale partition epoch")
        } else if state.isr.iter().any(|b| !ctl.eligible(b.get())) {
            refuse(
                ErrorCode::INELIGIBLE_REPLICA,
                "fenced broker or offline log dir",
            )
        } else {
            for b in &state.isr {
                if !ctl.state.isr.contains(b) {
                    ctl.expanded.push(b.get());
                }
            }
            ctl.state.isr = state.isr.clone();
            self.commit(&mut ctl, "alter");
            Ok(ctl.state.clone())
        }
    }

    /// Notes broker `b`'s recovery point as it loses power (see [`World::durable_floor`]).
    pub fn note_durable_floor(&self, b: i32) {
        let rm = self.brokers.lock().get(&b).cloned();
        let log = rm.and_then(|rm| rm.log_manager().get_log(TOPIC, 0));
        if let Some(log) = log {
            let rp = log.lock().recovery_point().get();
            self.durable_floor.lock().insert(b, rp);
        }
    }

    /// After broker `id`'s restart opened its logs: the log reaches the recovery point it had at the
    /// power loss (a shorter one lost fsynced data, or trusted data that was never fsynced).
    fn check_durable_floor(&self, id: i32, lm: &LogManager) {
        let Some(floor) = self.durable_floor.lock().remove(&id) else {
            return;
        };
        let leo = lm
            .get_log(TOPIC, 0)
            .map_or(0, |l| l.lock().log_end_offset().get());
        if leo < floor {
            self.violations.lock().push(format!(
                "broker {id}: its log ends at {leo} after a power loss, below the recovery point {floor} it had (data it counted as fsynced is gone)"
            ));
        }
    }

    /// The current leader (None while there is none).
    pub fn leader(&self) -> Option<i32> {
        let l = self.ctl.lock().state.leader;
        (l != BrokerId::NONE).then(|| l.get())
    }
}

/// The controller side of [`ClusterLink`]: endpoints by host name; AlterPartition decided as KRaft
/// does ([`World::decide_alter`]) after a commit latency.
pub struct SimLink(pub Arc<World>);

impl ClusterLink for SimLink {
    fn broker_endpoint(&self, broker_id: BrokerId) -> Option<(String, u16)> {
        Some((host(broker_id.get()), PORT))
    }

    fn alter_partition(
        &self,
        _topic: String,
        _partition: i32,
        state: PartitionState,
    ) -> BoxFuture<'static, Result<PartitionState, metadata::ControllerError>> {
        // The answer (and the commit) come after a seeded 1..30 ms, as through the KRaft quorum: the
        // leader's proposal stays in flight meanwhile (the KIP-497 maximal ISR matters then).
        let world = self.0.clone();
        let delay = world.ctl.lock().alter_rng.ms(1, 30);
        Box::pin(async move {
            tokio::time::sleep(delay).await;
            world.decide_alter(state)
        })
    }
}

/// Broker `id`'s own background storage work, as `lifecycle::Services::spawn` starts it, inline on the
/// simulated host: the flush policy and checkpoints, and the data dir's failure handling (offline on a
/// write/fsync error, reported to the test controller, probed, reopened). Runs until `shutdown` turns true.
pub(crate) fn spawn_storage_tasks(
    world: &Arc<World>,
    id: i32,
    config: &BrokerConfig,
    rm: &Arc<ReplicaManager>,
    shutdown: watch::Receiver<bool>,
) {
    let io = crate::log_dir_failure::BackgroundIo { inline: true };
    tokio::spawn(crate::lifecycle::log_maintenance(
        config.clone(),
        rm.log_manager().clone(),
        shutdown.clone(),
        io,
    ));
    let w = world.clone();
    tokio::spawn(crate::log_dir_failure::run_with(
        rm.clone(),
        Arc::new(move |offline: Vec<usize>| w.log_dir(id, !offline.is_empty())),
        shutdown,
        io,
    ));
}

/// The topic's log config: `min.insync.replicas` = 2, small segments so rolls happen.
fn topic_configs() -> BTreeMap<String, String> {
    let mut c = BTreeMap::new();
    c.insert("min.insync.replicas".to_string(), "2".to_string());
    c
}

/// A broker host's software: opens its logs from its SimFs (recovery after a crash), serves the Kafka
/// protocol on the simulated network with the real KafkaApis, and applies every published partition state.
pub async fn run_broker(world: Arc<World>, id: i32) -> turmoil::Result {
    let dir = world.dirs[&id].path().to_path_buf();
    let pairs: Vec<(String, String)> = [
        ("log.dirs", dir.to_str().unwrap()),
        ("node.id", &id.to_string()),
        // Recovery-point checkpoints often, so a restart trusts (skips recovery of) recent data: damage
        // an fsync failure left on disk shows instead of being cut by recovery.
        ("log.flush.offset.checkpoint.interval.ms", "200"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let config = BrokerConfig::from_pairs(&pairs)?;
    let metadata = Arc::new(MetadataStore::open(&dir, id)?);
    if metadata.topic(TOPIC).is_none() {
        let topic = TopicMetadata {
            topic_id: world.topic_id,
            partitions: 1,
            configs: topic_configs(),
        };
        metadata.create_topic(TOPIC, topic)?;
    }
    let mut log_config: LogConfig = crate::topic_config::log_config(&config, &topic_configs());
    log_config.segment_bytes = 4096;
    let lc = log_config.clone();
    let fs = world.disks[&id].fs();
    let clock = world.clocks[&id].clone();
    let lm = LogManager::open_in(
        fs,
        PathBuf::from("/data"),
        move |_| lc.clone(),
        Arc::new(clock.clone()),
    )?;
    world.check_durable_floor(id, &lm);
    let rm = Arc::new(ReplicaManager::with_seams(
        Arc::new(lm),
        BrokerId(id),
        Arc::new(SimLink(world.clone())),
        LAG_MAX_MS,
        Arc::new(clock),
        Arc::new(TurmoilConnector),
    ));
    let dynamic = Arc::new(crate::dynamic_config::DynamicBrokerConfig::in_memory(
        config.clone(),
    ));
    let apis = crate::lifecycle::wire(
        &config,
        metadata,
        dynamic,
        rm.clone(),
        None,
        &Default::default(),
        Default::default(),
    );
    let listener = turmoil::net::TcpListener::bind(("0.0.0.0", PORT)).await?;
    let (_shutdown, rx) = watch::channel(false);
    tokio::spawn(crate::server::network::serve(
        listener,
        crate::server::network::ListenerSecurity::plaintext("PLAINTEXT"),
        apis,
        rx.clone(),
    ));
    spawn_storage_tasks(&world, id, &config, &rm, rx);
    world.brokers.lock().insert(id, rm.clone());
    world.unfence(id);
    let mut meta = world.meta.subscribe();
    loop {
        let state = meta.borrow_and_update().clone();
        if let Err(e) = rm.apply_partition_state(TOPIC, 0, log_config.clone(), state) {
            tracing::warn!(broker = id, error = %e, "apply_partition_state failed");
        }
        if meta.changed().await.is_err() {
            return Ok(());
        }
    }
}
