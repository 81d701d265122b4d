//! KIP-853 on real controllers (127.0.0.1): a voter started alone, two controllers started with bootstrap
//! servers that join as learners (DescribeQuorum's observers, with their meta.properties directory ids),
//! AddRaftVoter making them voters, Kafka's refusals (DUPLICATE_VOTER, VOTER_NOT_FOUND,
//! INCONSISTENT_CLUSTER_ID, NOT_LEADER_OR_FOLLOWER on a follower), RemoveRaftVoter dropping one, and a
//! restarted voter keeping the membership it learned from its log.

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use controller::server::ControllerTuning;
use controller::{ControllerConfig, ControllerServer};
use protocol::messages::add_raft_voter_request::Listener;
use protocol::messages::describe_quorum_request;
use protocol::messages::{
    AddRaftVoterRequest, DescribeQuorumRequest, DescribeQuorumResponse, RemoveRaftVoterRequest,
};
use protocol::{ErrorCode, RequestBody, RequestHeader, ResponseBody};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use types::BrokerId;

const WAIT: Duration = Duration::from_secs(30);
const CLUSTER: &str = "voter-changes-cluster";

/// One Kafka request on a new connection to `addr`: the decoded answer.
async fn ask(addr: SocketAddr, version: i16, body: RequestBody) -> io::Result<ResponseBody> {
    let mut stream = TcpStream::connect(addr).await?;
    let api = body.api_key();
    let header = RequestHeader {
        request_api_key: api as i16,
        request_api_version: version,
        correlation_id: 7,
        client_id: Some("voter-changes-test".into()),
        ..Default::default()
    };
    stream
        .write_all(&protocol::encode_request(&header, &body).unwrap())
        .await?;
    let len = tokio::time::timeout(WAIT, stream.read_u32())
        .await
        .expect("no answer within 30 s")? as usize;
    let mut data = vec![0; len];
    stream.read_exact(&mut data).await?;
    let (_, body) = protocol::decode_response(api, version, Bytes::from(data))
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
    Ok(body)
}

async fn describe_quorum(addr: SocketAddr) -> DescribeQuorumResponse {
    let body = RequestBody::DescribeQuorum(DescribeQuorumRequest {
        topics: vec![describe_quorum_request::TopicData {
            topic_name: "__cluster_metadata".into(),
            partitions: vec![describe_quorum_request::PartitionData::default()],
            ..Default::default()
        }],
        ..Default::default()
    });
    match ask(addr, 2, body).await.expect("DescribeQuorum answered") {
        ResponseBody::DescribeQuorum(r) => r,
        other => panic!("answered {other:?}"),
    }
}

/// (voter ids, observer ids with their directory ids) of the leader at `addr`.
async fn members(addr: SocketAddr) -> (Vec<i32>, BTreeMap<i32, uuid::Uuid>) {
    let r = describe_quorum(addr).await;
    let p = &r.topics[0].partitions[0];
    let voters = p.current_voters.iter().map(|v| v.replica_id).collect();
    let observers = p
        .observers
        .iter()
        .map(|o| (o.replica_id, o.replica_directory_id))
        .collect();
    (voters, observers)
}

async fn start(
    id: i32,
    tcp: TcpListener,
    voters: BTreeMap<BrokerId, SocketAddr>,
    bootstrap: Vec<String>,
    dir: &Path,
) -> ControllerServer {
    let addr = tcp.local_addr().unwrap();
    let config = ControllerConfig {
        node_id: BrokerId(id),
        voters,
        bootstrap_servers: bootstrap,
        listen: addr,
        data_dir: dir.to_path_buf(),
        cluster_id: CLUSTER.into(),
        broker_session_timeout_ms: 60_000,
        default_num_partitions: 1,
        default_replication_factor: 1,
        unclean_leader_election: false,
        auto_leader_rebalance: false,
        leader_imbalance_check_interval_ms: 300_000,
        balancer: controller::control::BalancerConfig::disabled(),
    };
    let tuning = ControllerTuning {
        heartbeat_interval_ms: 50,
        election_timeout_min_ms: 300,
        election_timeout_max_ms: 600,
        ..ControllerTuning::default()
    };
    ControllerServer::start_with_seams(config, Box::new(tcp), tuning, Default::default())
        .await
        .expect("start controller")
}

fn add_voter(id: i32, dir: uuid::Uuid, addr: SocketAddr) -> RequestBody {
    RequestBody::AddRaftVoter(AddRaftVoterRequest {
        cluster_id: Some(CLUSTER.into()),
        timeout_ms: 20_000,
        voter_id: id,
        voter_directory_id: dir,
        listeners: vec![Listener {
            name: "CONTROLLER".into(),
            host: addr.ip().to_string(),
            port: addr.port(),
            ..Default::default()
        }],
        ack_when_committed: true,
        ..Default::default()
    })
}

fn remove_voter(id: i32, dir: uuid::Uuid) -> RequestBody {
    RequestBody::RemoveRaftVoter(RemoveRaftVoterRequest {
        cluster_id: Some(CLUSTER.into()),
        voter_id: id,
        voter_directory_id: dir,
        ..Default::default()
    })
}

async fn add(leader: SocketAddr, body: RequestBody) -> (i16, Option<String>) {
    match ask(leader, 1, body).await.unwrap() {
        ResponseBody::AddRaftVoter(r) => (r.error_code, r.error_message),
        other => panic!("answered {other:?}"),
    }
}

async fn remove(leader: SocketAddr, body: RequestBody) -> (i16, Option<String>) {
    match ask(leader, 0, body).await.unwrap() {
        ResponseBody::RemoveRaftVoter(r) => (r.error_code, r.error_message),
        other => panic!("answered {other:?}"),
    }
}

/// Polls `f` every 100 ms until it is true (bounded by [`WAIT`]), failing with `what`.
async fn wait_until<F, Fut>(what: &str, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + WAIT;
    while !f().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controllers_join_as_learners_become_voters_and_one_is_removed() {
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let tcp1 = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let a1 = tcp1.local_addr().unwrap();
    let c1 = start(
        1,
        tcp1,
        BTreeMap::from([(BrokerId(1), a1)]),
        vec![],
        dirs[0].path(),
    )
    .await;
    assert_eq!(c1.wait_for_leader(WAIT).await, Some(BrokerId(1)));
    let mut joiners = BTreeMap::new();
    let mut addrs = BTreeMap::new();
    for (i, id) in [2, 3].into_iter().enumerate() {
        let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
        addrs.insert(id, tcp.local_addr().unwrap());
        let dir = dirs[i + 1].path();
        joiners.insert(
            id,
            start(id, tcp, BTreeMap::new(), vec![a1.to_string()], dir).await,
        );
    }
    // Each joiner's directory id is in its meta.properties; the leader lists it as an observer with it.
    let dir_of = |i: usize| {
        let text = std::fs::read_to_string(dirs[i].path().join("meta.properties")).unwrap();
        let line = text
            .lines()
            .find_map(|l| l.strip_prefix("directory.id="))
            .unwrap();
        controller::meta_properties::parse_base64url(line).unwrap()
    };
    let (d2, d3) = (dir_of(1), dir_of(2));
    wait_until("both joiners observing", || async {
        let (voters, observers) = members(a1).await;
        voters == [1] && observers == BTreeMap::from([(2, d2), (3, d3)])
    })
    .await;

    assert_eq!(add(a1, add_voter(2, d2, addrs[&2])).await, (0, None));
    assert_eq!(add(a1, add_voter(3, d3, addrs[&3])).await, (0, None));
    let (voters, observers) = members(a1).await;
    assert_eq!((voters, observers.len()), (vec![1, 2, 3], 0));
    // Kafka's refusals.
    let dup = add(a1, add_voter(2, d2, addrs[&2])).await;
    assert_eq!(dup.0, ErrorCode::DUPLICATE_VOTER.0, "{dup:?}");
    let wrong = remove(a1, remove_voter(2, d3)).await;
    assert_eq!(wrong.0, ErrorCode::VOTER_NOT_FOUND.0, "{wrong:?}");
    let other_cluster = RequestBody::RemoveRaftVoter(RemoveRaftVoterRequest {
        cluster_id: Some("another".into()),
        voter_id: 2,
        voter_directory_id: d2,
        ..Default::default()
    });
    assert_eq!(
        remove(a1, other_cluster).await.0,
        ErrorCode::INCONSISTENT_CLUSTER_ID.0
    );
    let follower = add(addrs[&2], add_voter(4, d2, addrs[&2])).await;
    assert_eq!(
        follower.0,
        ErrorCode::NOT_LEADER_OR_FOLLOWER.0,
        "{follower:?}"
    );

    assert_eq!(remove(a1, remove_voter(2, d2)).await, (0, None));
    wait_until("voters 1 and 3", || async { members(a1).await.0 == [1, 3] }).await;

    // A restarted voter comes back with the membership of its log: a voter, no join needed.
    let c3 = joiners.remove(&3).unwrap();
    c3.shutdown().await.unwrap();
    let tcp = TcpListener::bind(addrs[&3]).await.unwrap();
    let c3 = start(
        3,
        tcp,
        BTreeMap::new(),
        vec![a1.to_string()],
        dirs[2].path(),
    )
    .await;
    wait_until("restarted voter 3 following", || async {
        let r = describe_quorum(a1).await;
        let p = &r.topics[0].partitions[0];
        p.current_voters
            .iter()
            .any(|v| v.replica_id == 3 && v.log_end_offset >= p.high_watermark)
    })
    .await;
    assert_eq!(members(a1).await.0, [1, 3]);
    c3.shutdown().await.unwrap();
    for (_, j) in joiners {
        j.shutdown().await.unwrap();
    }
    c1.shutdown().await.unwrap();
}
