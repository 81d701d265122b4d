//! Three controllers on 127.0.0.1: registration, topic creation, leader failover, long-poll
//! metadata fetch, and restart from a snapshot.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use controller::rpc::{
    read_frame, write_frame, ClientRequest, ClientResponse, RpcRequest, RpcResponse,
};
use controller::server::ControllerTuning;
use controller::{
    ControllerClient, ControllerConfig, ControllerServer, CreateTopic, MetadataImage,
    MetadataRecord, MetadataUpdate,
};
use tokio::net::TcpListener;
use types::{BrokerEpoch, BrokerId, ErrorCode, LeaderEpoch};
use uuid::Uuid;

const WAIT: Duration = Duration::from_secs(30);
const SESSION_MS: i64 = 60_000;

fn tuning() -> ControllerTuning {
    ControllerTuning {
        heartbeat_interval_ms: 50,
        election_timeout_min_ms: 300,
        election_timeout_max_ms: 600,
        snapshot_every: 20,
        logs_kept_after_snapshot: 5,
        tick_interval_ms: 50,
    }
}

/// The voters keyed by node id, as the controller API takes them.
fn typed(voters: &BTreeMap<i32, SocketAddr>) -> BTreeMap<BrokerId, SocketAddr> {
    voters.iter().map(|(&id, &a)| (BrokerId(id), a)).collect()
}

fn config(
    id: i32,
    voters: &BTreeMap<i32, SocketAddr>,
    dir: &Path,
    session_ms: i64,
) -> ControllerConfig {
    ControllerConfig {
        node_id: BrokerId(id),
        voters: typed(voters),
        bootstrap_servers: Vec::new(),
        listen: voters[&id],
        data_dir: dir.to_path_buf(),
        cluster_id: "test-cluster".into(),
        broker_session_timeout_ms: session_ms,
        default_num_partitions: 1,
        default_replication_factor: 3,
        unclean_leader_election: false,
        auto_leader_rebalance: false,
        leader_imbalance_check_interval_ms: 300_000,
        balancer: controller::control::BalancerConfig::disabled(),
    }
}

fn topic(name: &str, partitions: i32, rf: i16) -> CreateTopic {
    CreateTopic {
        name: name.into(),
        num_partitions: partitions,
        replication_factor: rf,
        assignments: vec![],
        configs: BTreeMap::new(),
    }
}

async fn start(
    id: i32,
    voters: &BTreeMap<i32, SocketAddr>,
    dir: &Path,
    listener: Option<TcpListener>,
) -> ControllerServer {
    let listener = match listener {
        Some(l) => l,
        None => TcpListener::bind(voters[&id])
            .await
            .expect("rebind own port"),
    };
    ControllerServer::start_with_listener(config(id, voters, dir, SESSION_MS), listener, tuning())
        .await
        .expect("start controller")
}

struct Cluster {
    voters: BTreeMap<i32, SocketAddr>,
    dirs: Vec<tempfile::TempDir>,
    servers: BTreeMap<i32, ControllerServer>,
}

/// Three controllers with ids 1..=3; listeners are bound first so the voter map holds real ports.
async fn cluster(session_ms: i64) -> Cluster {
    let mut listeners = Vec::new();
    let mut voters = BTreeMap::new();
    for id in 1..=3 {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        voters.insert(id, l.local_addr().unwrap());
        listeners.push(Some(l));
    }
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut servers = BTreeMap::new();
    for id in 1..=3 {
        let l = listeners[(id - 1) as usize].take().unwrap();
        let cfg = config(id, &voters, dirs[(id - 1) as usize].path(), session_ms);
        let s = ControllerServer::start_with_listener(cfg, l, tuning())
            .await
            .expect("start controller");
        servers.insert(id, s);
    }
    Cluster {
        voters,
        dirs,
        servers,
    }
}

async fn register_all(client: &ControllerClient, ids: &[i32]) -> BTreeMap<i32, BrokerEpoch> {
    let mut epochs = BTreeMap::new();
    for &b in ids {
        let epoch = client
            .register_broker(
                BrokerId(b),
                Uuid::from_u128(b as u128),
                "localhost".into(),
                9090 + b as u16,
                None,
                Vec::new(),
            )
            .await
            .expect("register");
        let hb = client
            .heartbeat(BrokerId(b), epoch, epoch.get(), false, false)
            .await
            .unwrap();
        assert!(!hb.is_fenced && hb.is_caught_up);
        epochs.insert(b, epoch);
    }
    epochs
}

/// Follows committed metadata (long polls) until `cond` holds for the image; bounded by WAIT.
async fn await_image(
    client: &ControllerClient,
    cond: impl Fn(&MetadataImage) -> bool,
) -> MetadataImage {
    let deadline = tokio::time::Instant::now() + WAIT;
    let mut image = match client.fetch_metadata(-1, Duration::ZERO).await.unwrap() {
        MetadataUpdate::Image(i) => *i,
        other => panic!("expected an image, got {other:?}"),
    };
    loop {
        if cond(&image) {
            return image;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "condition not reached: {image:?}"
        );
        match client
            .fetch_metadata(image.offset, Duration::from_secs(2))
            .await
            .unwrap()
        {
            MetadataUpdate::Image(i) => image = *i,
            MetadataUpdate::Records(rs) => {
                for (o, r) in &rs {
                    image.apply(*o, r);
                }
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_controllers_fail_over_and_restart_from_snapshot() {
    let Cluster {
        voters,
        dirs,
        mut servers,
    } = cluster(SESSION_MS).await;
    let client = ControllerClient::new(typed(&voters)).with_timeout(WAIT);

    // Brokers register fenced, and the first caught-up heartbeat unfences them.
    let epochs = register_all(&client, &[1, 2, 3]).await;
    let err = client
        .heartbeat(BrokerId(1), BrokerEpoch(12345), 0, false, false)
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::STALE_BROKER_EPOCH);

    let created = client
        .create_topics(vec![topic("t", 6, 3)], false)
        .await
        .reply;
    let t = created[0].as_ref().expect("create t");
    assert_eq!((t.num_partitions, t.replication_factor), (6, 3));
    let dup = client
        .create_topics(vec![topic("t", 1, 1)], false)
        .await
        .reply;
    assert_eq!(
        dup[0].as_ref().unwrap_err().code,
        ErrorCode::TOPIC_ALREADY_EXISTS
    );

    // A long poll from the current offset wakes up on the next commit.
    let quorum = client.describe_quorum().await.unwrap();
    let leader = quorum.leader_id.expect("leader").get();
    assert_eq!(quorum.voters, typed(&voters));
    // A follower answers broker requests with NOT_CONTROLLER naming the leader.
    let follower = *voters.keys().find(|&&id| id != leader).unwrap();
    let mut conn = tokio::net::TcpStream::connect(voters[&follower])
        .await
        .unwrap();
    write_frame(
        &mut conn,
        &RpcRequest::Client(ClientRequest::DescribeQuorum),
    )
    .await
    .unwrap();
    match read_frame(&mut conn).await.unwrap() {
        RpcResponse::Client(ClientResponse::NotController { leader: l, .. }) => {
            assert_eq!(l, Some(BrokerId(leader)))
        }
        other => panic!("expected NOT_CONTROLLER, got {other:?}"),
    }
    let image = match client.fetch_metadata(-1, Duration::ZERO).await.unwrap() {
        MetadataUpdate::Image(i) => *i,
        other => panic!("expected an image, got {other:?}"),
    };
    assert_eq!(image.cluster_id, "test-cluster");
    assert_eq!(image.topics["t"].partitions.len(), 6);
    assert_eq!(image.brokers.len(), 3);
    let poll = {
        let c = client.clone();
        let since = image.offset;
        tokio::spawn(async move { c.fetch_metadata(since, Duration::from_secs(20)).await })
    };
    // Enough writes to build a snapshot (every 20 entries) and purge the log behind it.
    for _ in 0..30 {
        client
            .allocate_producer_ids(BrokerId(1), epochs[&1])
            .await
            .unwrap();
    }
    match poll.await.unwrap().unwrap() {
        MetadataUpdate::Records(r) => {
            assert!(!r.is_empty());
            assert!(r.iter().all(|(o, _)| *o > image.offset));
            assert!(matches!(r[0].1, MetadataRecord::ProducerIdsRecord { .. }));
        }
        other => panic!("expected records, got {other:?}"),
    }

    // Every controller applies the same state.
    let leader_image = servers[&leader].image();
    for s in servers.values() {
        assert!(s.wait_for_offset(leader_image.offset, WAIT).await);
        assert_eq!(s.image().topics, leader_image.topics);
    }

    // Kill the active controller; the client finds the new one and keeps working.
    let old = servers.remove(&leader).unwrap();
    old.shutdown().await.unwrap();
    let created = client
        .create_topics(vec![topic("u", 2, 3)], false)
        .await
        .reply;
    assert!(created[0].is_ok(), "{created:?}");
    let quorum = client.describe_quorum().await.unwrap();
    let new_leader = quorum.leader_id.unwrap().get();
    assert_ne!(new_leader, leader);
    assert_eq!(client.leader_hint(), Some(BrokerId(new_leader)));
    // Sessions and epochs survive the failover.
    let hb = client
        .heartbeat(BrokerId(2), epochs[&2], quorum.high_watermark, false, false)
        .await
        .unwrap();
    assert!(!hb.is_fenced);
    let img = servers[&new_leader].image();
    assert_eq!(img.topics["t"], leader_image.topics["t"]);
    assert_eq!(img.topics["u"].partitions.len(), 2);
    assert_eq!(img.next_producer_id, leader_image.next_producer_id);

    // The old leader built a snapshot and purged its log behind it.
    let meta_dir = dirs[(leader - 1) as usize]
        .path()
        .join("__cluster_metadata-0");
    assert!(meta_dir.join("snapshot.json").exists());
    assert!(meta_dir.join("purged.json").exists());

    // More commits (and snapshots) while it is down.
    for _ in 0..30 {
        client
            .allocate_producer_ids(BrokerId(2), epochs[&2])
            .await
            .unwrap();
    }

    // Restart it on its own port: it loads its snapshot, then catches up.
    let restarted = start(leader, &voters, dirs[(leader - 1) as usize].path(), None).await;
    let before_catch_up = restarted.image();
    assert!(
        before_catch_up.topics.contains_key("t"),
        "the snapshot alone restores topic t"
    );
    let target = servers[&new_leader].image().offset;
    assert!(restarted.wait_for_offset(target, WAIT).await);
    assert_eq!(
        restarted.image().topics,
        servers[&new_leader].image().topics
    );
    assert_eq!(
        restarted.image().brokers,
        servers[&new_leader].image().brokers
    );
    servers.insert(leader, restarted);

    // The quorum still answers after the restart.
    let deleted = client.delete_topics(vec!["u".into()]).await.reply;
    assert!(deleted[0].is_ok());
    for s in servers.into_values() {
        s.shutdown().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_broker_is_fenced_and_controlled_shutdown_moves_leadership() {
    let c = cluster(2500).await;
    let client = ControllerClient::new(typed(&c.voters)).with_timeout(WAIT);
    let epochs = register_all(&client, &[1, 2, 3]).await;
    let mut t = topic("t", -1, -1);
    t.assignments = vec![
        (0, vec![BrokerId(2), BrokerId(1), BrokerId(3)]),
        (1, vec![BrokerId(3), BrokerId(1), BrokerId(2)]),
    ];
    let created = client.create_topics(vec![t], false).await.reply;
    let topic_id = created[0].as_ref().unwrap().topic_id;

    // Brokers 1 and 3 heartbeat; broker 2 goes silent.
    let beaters: Vec<_> = [1, 3]
        .into_iter()
        .map(|b| {
            let c = client.clone();
            let epoch = epochs[&b];
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(Duration::from_millis(200));
                loop {
                    tick.tick().await;
                    let _ = c
                        .heartbeat(BrokerId(b), epoch, i64::MAX, false, false)
                        .await;
                }
            })
        })
        .collect();
    let img = await_image(&client, |i| i.brokers[&BrokerId(2)].fenced).await;
    let p0 = &img.topics["t"].partitions[&0];
    assert_eq!(
        p0.leader,
        BrokerId(1),
        "next ISR replica in replica order: {p0:?}"
    );
    assert_eq!(p0.leader_epoch, LeaderEpoch(1));
    assert!(!p0.isr.contains(&BrokerId(2)));
    let p1 = &img.topics["t"].partitions[&1];
    assert_eq!(p1.leader, BrokerId(3));
    assert!(!img.brokers[&BrokerId(1)].fenced && !img.brokers[&BrokerId(3)].fenced);

    // Controlled shutdown of broker 3: its leadership moves to 1, then it may exit (fenced).
    beaters[1].abort();
    let mut done = false;
    for _ in 0..10 {
        let r = client
            .heartbeat(BrokerId(3), epochs[&3], i64::MAX, false, true)
            .await
            .unwrap();
        if r.should_shut_down {
            assert!(r.is_fenced);
            done = true;
            break;
        }
    }
    assert!(done, "controlled shutdown did not complete");
    let img = await_image(&client, |i| i.brokers[&BrokerId(3)].fenced).await;
    assert!(img.brokers[&BrokerId(3)].in_controlled_shutdown);
    let p1 = &img.topics["t"].partitions[&1];
    assert_eq!(p1.leader, BrokerId(1));
    assert_eq!(p1.isr, vec![BrokerId(1)]);

    // AlterPartition by the new leader: broker 2 is fenced, so it cannot rejoin the ISR.
    let err = client
        .alter_partition(
            BrokerId(1),
            epochs[&1],
            topic_id,
            1,
            p1.leader_epoch,
            p1.partition_epoch,
            vec![BrokerId(1), BrokerId(2)],
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::INELIGIBLE_REPLICA);
    beaters[0].abort();
    for s in c.servers.into_values() {
        s.shutdown().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_voter_recovers_its_state_after_restart() {
    let dir = tempfile::tempdir().unwrap();
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let voters = BTreeMap::from([(7, l.local_addr().unwrap())]);
    let s = ControllerServer::start_with_listener(
        config(7, &voters, dir.path(), SESSION_MS),
        l,
        tuning(),
    )
    .await
    .unwrap();
    assert_eq!(s.wait_for_leader(WAIT).await, Some(BrokerId(7)));
    let client = ControllerClient::new(typed(&voters)).with_timeout(WAIT);
    let epochs = register_all(&client, &[1]).await;
    let created = client
        .create_topics(vec![topic("solo", 3, 1)], false)
        .await
        .reply;
    assert!(created[0].is_ok());
    let at = client
        .alter_configs(
            2,
            "solo".into(),
            vec![("retention.ms".into(), Some("1000".into()))],
            false,
        )
        .await
        .unwrap();
    // The answer names the offset at which the change is visible.
    assert!(s.wait_for_offset(at, WAIT).await);
    assert_eq!(s.image().topics["solo"].configs["retention.ms"], "1000");
    // A decision that writes nothing is visible at the offset of the last record it was decided on.
    let noop = client
        .alter_configs(2, "solo".into(), Vec::new(), true)
        .await
        .unwrap();
    assert!(noop >= at && noop <= s.image().offset, "{noop} vs {at}");
    let before = s.image();
    s.shutdown().await.unwrap();

    let s = start(7, &voters, dir.path(), None).await;
    assert!(s.wait_for_offset(before.offset, WAIT).await);
    let after = s.image();
    assert_eq!(after.topics, before.topics);
    assert_eq!(after.brokers, before.brokers);
    // The registration survives: the broker's epoch is still valid after the restart.
    let hb = client
        .heartbeat(BrokerId(1), epochs[&1], after.offset, false, false)
        .await
        .unwrap();
    assert!(!hb.is_fenced);
    s.shutdown().await.unwrap();
}
