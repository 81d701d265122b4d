//! The simulated quorum's hosts: the turmoil transports behind the controller's seams, three controller
//! hosts (the real `ControllerServer` — openraft, `QuorumControl`, the raft log store and snapshots — on
//! their own `SimFs`), three broker hosts speaking the broker side of KIP-631 through the real
//! `ControllerClient`, and an admin client creating topics.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use controller::transport::{BoxedStream, IoFuture};
use controller::{
    ControllerClient, ControllerConfig, ControllerSeams, ControllerServer, ControllerTuning,
    CreateTopic, MetadataImage, MetadataUpdate, RpcListener, Transport,
};
use parking_lot::Mutex;
use storage::SimFs;
use types::{BrokerEpoch, BrokerId, ErrorCode};
use uuid::Uuid;

use super::Rng;

/// Controller ids (hosts `c1`..`c3`).
pub const CONTROLLERS: [i32; 3] = [1, 2, 3];
/// Broker ids (hosts `b11`..`b13`).
pub const BROKERS: [i32; 3] = [11, 12, 13];
/// The controllers' RPC port.
pub const PORT: u16 = 9093;
/// `broker.session.timeout.ms` of the simulated quorum.
pub const SESSION_MS: i64 = 2_000;
/// Brokers heartbeat this often.
const HEARTBEAT: Duration = Duration::from_millis(400);

/// Host name of controller or broker `id`.
pub fn host(id: i32) -> String {
    if CONTROLLERS.contains(&id) {
        format!("c{id}")
    } else {
        format!("b{id}")
    }
}

/// Connections over turmoil's simulated TCP.
#[derive(Debug)]
pub struct SimTransport;

impl Transport for SimTransport {
    fn connect(&self, addr: &str) -> IoFuture<'static, BoxedStream> {
        let addr = addr.to_string();
        Box::pin(async move {
            let s = turmoil::net::TcpStream::connect(addr.as_str()).await?;
            Ok(Box::new(s) as BoxedStream)
        })
    }
}

/// A turmoil listener as the controller's [`RpcListener`].
struct SimListener(turmoil::net::TcpListener);

impl RpcListener for SimListener {
    fn accept(&self) -> IoFuture<'_, BoxedStream> {
        Box::pin(async move {
            let (s, _) = self.0.accept().await?;
            Ok(Box::new(s) as BoxedStream)
        })
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.0.local_addr()
    }
}

/// An accepted AlterPartition: (topic id, partition, leader epoch, leader).
pub type Altered = (Uuid, i32, i32, i32);

/// What a broker host did, for the checker.
#[derive(Clone, Debug, Default)]
pub struct BrokerView {
    /// The broker epoch of its current registration (None: not registered since its last start).
    pub epoch: Option<BrokerEpoch>,
}

/// State shared by the hosts and the test loop (all behind locks: hosts run on turmoil's one thread).
#[derive(Clone)]
pub struct World {
    /// The run's seed.
    pub seed: u64,
    /// Each controller's disk (kept across crashes).
    pub disks: Arc<BTreeMap<i32, SimFs>>,
    /// The running controllers (removed when crashed).
    pub servers: Arc<Mutex<BTreeMap<i32, Arc<ControllerServer>>>>,
    /// Starts of each host so far (controllers and brokers).
    pub incarnations: Arc<Mutex<BTreeMap<i32, u64>>>,
    /// `controller.quorum.voters` (filled in once the hosts have addresses).
    pub voters: Arc<Mutex<BTreeMap<BrokerId, SocketAddr>>>,
    /// Broker hosts' registrations.
    pub brokers: Arc<Mutex<BTreeMap<i32, BrokerView>>>,
    /// Topics whose CreateTopics was answered OK (name, id) or TOPIC_ALREADY_EXISTS on a retry (nil id).
    pub created: Arc<Mutex<Vec<(String, Uuid)>>>,
    /// Accepted AlterPartitions (topic id, partition, leader epoch, leader).
    pub altered: Arc<Mutex<Vec<Altered>>>,
    /// Unexpected answers (a failed run).
    pub unexpected: Arc<Mutex<Vec<String>>>,
    /// Set when the faults stop: the workload (topic creation, ISR changes) ends, heartbeats go on.
    pub quiet: Arc<AtomicBool>,
    /// The running vote storm, if any (`storm`).
    pub storm: Arc<Mutex<Option<super::storm::Storm>>>,
}

impl World {
    /// A world for `seed` (no hosts yet).
    pub fn new(seed: u64) -> World {
        let disks = CONTROLLERS
            .iter()
            .map(|&c| (c, SimFs::new(seed.wrapping_mul(31).wrapping_add(c as u64))))
            .collect();
        World {
            seed,
            disks: Arc::new(disks),
            servers: Arc::default(),
            incarnations: Arc::default(),
            voters: Arc::default(),
            brokers: Arc::default(),
            created: Arc::default(),
            altered: Arc::default(),
            unexpected: Arc::default(),
            quiet: Arc::default(),
            storm: Arc::default(),
        }
    }

    fn next_incarnation(&self, id: i32) -> u64 {
        let mut inc = self.incarnations.lock();
        let n = inc.entry(id).or_insert(0);
        *n += 1;
        *n
    }

    /// A seeded generator for host `id`'s incarnation `inc`.
    fn rng(&self, id: i32, inc: u64) -> Rng {
        Rng(self.seed ^ ((id as u64) << 40) ^ (inc << 20) ^ 0x5eed)
    }

    fn client(&self) -> ControllerClient {
        ControllerClient::new(self.voters.lock().clone())
            .with_transport(Arc::new(SimTransport))
            .with_timeout(Duration::from_secs(5))
            .with_session_attempt_timeout(Duration::from_millis(SESSION_MS as u64 / 2))
    }
}

/// The raft timing of controller `id`'s incarnation `inc`: openraft draws election timeouts from
/// `thread_rng()`, so the range is one millisecond wide and the seed picks it (distinct per node in the
/// first incarnation, so the first election cannot split forever).
fn tuning(w: &World, id: i32, inc: u64) -> ControllerTuning {
    let min = if inc == 1 {
        let rot = (w.seed % 3) as i32;
        400 + 150 * ((id + rot) % 3) as u64
    } else {
        400 + w.rng(id, inc).below(400)
    };
    ControllerTuning {
        heartbeat_interval_ms: 100,
        election_timeout_min_ms: min,
        election_timeout_max_ms: min + 1,
        snapshot_every: 25,
        logs_kept_after_snapshot: 10,
        tick_interval_ms: 100,
    }
}

/// Controller host `id`'s software: the real `ControllerServer` on its `SimFs` and the simulated network.
pub async fn run_controller(w: World, id: i32) -> turmoil::Result {
    let inc = w.next_incarnation(id);
    let listener =
        turmoil::net::TcpListener::bind((IpAddr::V4(Ipv4Addr::UNSPECIFIED), PORT)).await?;
    let voters = w.voters.lock().clone();
    let config = ControllerConfig {
        node_id: BrokerId(id),
        listen: voters[&BrokerId(id)],
        voters,
        bootstrap_servers: Vec::new(),
        data_dir: PathBuf::from(format!("/c{id}")),
        cluster_id: "sim-cluster".into(),
        broker_session_timeout_ms: SESSION_MS,
        default_num_partitions: 1,
        default_replication_factor: 2,
        unclean_leader_election: false,
        auto_leader_rebalance: false,
        leader_imbalance_check_interval_ms: 300_000,
        balancer: controller::control::BalancerConfig::disabled(),
    };
    let seams = ControllerSeams {
        transport: Arc::new(SimTransport),
        fs: w.disks[&id].fs(),
        rng_seed: Some(w.rng(id, inc).next()),
    };
    let tuning = tuning(&w, id, inc);
    let server =
        ControllerServer::start_with_seams(config, Box::new(SimListener(listener)), tuning, seams)
            .await
            .map_err(|e| format!("controller {id} (start {inc}) failed to start: {e:#}"))?;
    w.servers.lock().insert(id, Arc::new(server));
    std::future::pending::<()>().await;
    Ok(())
}

/// Broker host `id`'s software: follows the metadata log (long-poll fetches into its image), registers,
/// heartbeats with the offset it has replayed (re-registering when told its epoch is stale), and while the
/// workload runs shrinks and re-expands the ISR of partitions it leads (AlterPartition).
pub async fn run_broker(w: World, id: i32) -> turmoil::Result {
    let inc = w.next_incarnation(id);
    let mut rng = w.rng(id, inc);
    let client = w.client();
    let image = Arc::new(Mutex::new(MetadataImage::default()));
    let _fetcher = tokio::spawn(follow_metadata(client.clone(), image.clone()));
    w.brokers.lock().insert(id, BrokerView::default());
    let incarnation = Uuid::from_u64_pair(rng.next(), rng.next());
    loop {
        let epoch = match client
            .register_broker(BrokerId(id), incarnation, host(id), 9092, None, Vec::new())
            .await
        {
            Ok(e) => e,
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        w.brokers
            .lock()
            .insert(id, BrokerView { epoch: Some(epoch) });
        let mut beats = 0u64;
        loop {
            tokio::time::sleep(HEARTBEAT).await;
            let offset = image.lock().offset;
            match client
                .heartbeat(BrokerId(id), epoch, offset, false, false)
                .await
            {
                Ok(_) => {}
                Err(e)
                    if e.code == ErrorCode::STALE_BROKER_EPOCH
                        || e.code == ErrorCode::BROKER_ID_NOT_REGISTERED =>
                {
                    break
                }
                Err(_) => {}
            }
            beats += 1;
            if !w.quiet.load(Ordering::Acquire) && beats.is_multiple_of(2) {
                alter_one(&w, &client, id, epoch, &image, &mut rng).await;
            }
        }
    }
}

/// Replays the metadata log into `image`, as a broker's metadata publisher does.
async fn follow_metadata(client: ControllerClient, image: Arc<Mutex<MetadataImage>>) {
    loop {
        let since = image.lock().offset;
        match client
            .fetch_metadata(since, Duration::from_millis(500))
            .await
        {
            Ok(MetadataUpdate::Image(i)) => *image.lock() = *i,
            Ok(MetadataUpdate::Records(v)) => {
                let mut img = image.lock();
                for (o, r) in &v {
                    img.apply(*o, r);
                }
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// One AlterPartition by broker `id` for a partition it leads: drop a follower from a full ISR, or put
/// every unfenced replica back.
async fn alter_one(
    w: &World,
    client: &ControllerClient,
    id: i32,
    epoch: BrokerEpoch,
    image: &Mutex<MetadataImage>,
    rng: &mut Rng,
) {
    let candidates: Vec<_> = {
        let img = image.lock();
        img.topics
            .values()
            .flat_map(|t| {
                t.partitions
                    .iter()
                    .map(move |(p, r)| (t.topic_id, *p, r.clone()))
            })
            .filter(|(_, _, r)| r.leader == BrokerId(id))
            .map(|(t, p, r)| {
                let full = r.isr.len() == r.replicas.len();
                let isr: Vec<BrokerId> = if full && r.isr.len() > 1 {
                    r.isr
                        .iter()
                        .copied()
                        .filter(|&b| b != BrokerId(id))
                        .take(r.isr.len() - 2)
                        .chain([BrokerId(id)])
                        .collect()
                } else {
                    r.replicas
                        .iter()
                        .copied()
                        .filter(|b| img.brokers.get(b).is_some_and(|reg| !reg.fenced))
                        .collect()
                };
                (t, p, r, isr)
            })
            .collect()
    };
    if candidates.is_empty() {
        return;
    }
    let (topic, p, reg, isr) = candidates[rng.below(candidates.len() as u64) as usize].clone();
    if isr == reg.isr {
        return;
    }
    match client
        .alter_partition(
            BrokerId(id),
            epoch,
            topic,
            p,
            reg.leader_epoch,
            reg.partition_epoch,
            isr,
        )
        .await
    {
        Ok(r) => w
            .altered
            .lock()
            .push((topic, p, r.leader_epoch.0, r.leader.get())),
        Err(e) if is_retriable_alter(e.code) => {}
        Err(e) => w
            .unexpected
            .lock()
            .push(format!("AlterPartition by {id}: {e:?}")),
    }
}

fn is_retriable_alter(code: ErrorCode) -> bool {
    [
        ErrorCode::FENCED_LEADER_EPOCH,
        ErrorCode::INVALID_UPDATE_VERSION,
        ErrorCode::NOT_CONTROLLER,
        ErrorCode::REQUEST_TIMED_OUT,
        ErrorCode::STALE_BROKER_EPOCH,
        ErrorCode::NOT_LEADER_OR_FOLLOWER,
        ErrorCode::INELIGIBLE_REPLICA,
        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode::UNKNOWN_TOPIC_ID,
        ErrorCode::OPERATION_NOT_ATTEMPTED,
    ]
    .contains(&code)
}

/// The admin client: creates topics `t1`, `t2`, ... (two partitions, replication factor 2) one at a time,
/// retrying a name until it is answered OK or TOPIC_ALREADY_EXISTS (an earlier attempt was committed).
pub async fn run_admin(w: World) -> turmoil::Result {
    let client = w.client();
    let mut n = 0;
    while !w.quiet.load(Ordering::Acquire) {
        n += 1;
        let name = format!("t{n}");
        while !w.quiet.load(Ordering::Acquire) {
            let topic = CreateTopic {
                name: name.clone(),
                num_partitions: 2,
                replication_factor: 2,
                assignments: Vec::new(),
                configs: BTreeMap::new(),
            };
            let r = client.create_topics(vec![topic], false).await;
            match r.reply.into_iter().next() {
                Some(Ok(t)) => {
                    w.created.lock().push((name.clone(), t.topic_id));
                    break;
                }
                Some(Err(e)) if e.code == ErrorCode::TOPIC_ALREADY_EXISTS => {
                    w.created.lock().push((name.clone(), Uuid::nil()));
                    break;
                }
                Some(Err(e))
                    if [
                        ErrorCode::NOT_CONTROLLER,
                        ErrorCode::REQUEST_TIMED_OUT,
                        ErrorCode::INVALID_REPLICATION_FACTOR,
                    ]
                    .contains(&e.code) => {}
                other => w
                    .unexpected
                    .lock()
                    .push(format!("CreateTopics {name}: {other:?}")),
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    Ok(())
}
