//! Kafka requests on a real controller's listener (one voter on 127.0.0.1): ApiVersions, DescribeCluster
//! and DescribeQuorum in Kafka's shapes beside Runnel's JSON frames on the same connection; what cannot be
//! served closes the connection; on a listener with authenticated peers each request is authorized on
//! its own (DESCRIBE, ALTER, CLUSTER_ACTION on the cluster); a broker's registration, heartbeats and
//! AlterPartition as Kafka's requests.

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use controller::rpc::{read_frame, write_frame, ClientRequest, ClientResponse, RpcResponse};
use controller::server::ControllerTuning;
use controller::transport::IoFuture;
use controller::{
    Accepted, BoxedStream, ClusterOperation, ControllerConfig, ControllerServer, MetadataImage,
    Peer, PeerAuthorizer, PendingConnection, RpcListener,
};
use protocol::messages::{
    alter_partition_request, broker_registration_request, describe_quorum_request,
};
use protocol::messages::{
    AlterPartitionRequest, ApiVersionsRequest, BrokerHeartbeatRequest, BrokerRegistrationRequest,
    DescribeClusterRequest, DescribeClusterResponse, DescribeQuorumRequest, DescribeQuorumResponse,
};
use protocol::{RequestBody, RequestHeader, ResponseBody};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use types::BrokerId;

const WAIT: Duration = Duration::from_secs(30);

/// A Kafka client connection to the controller listener.
struct Client {
    stream: TcpStream,
    correlation_id: i32,
}

impl Client {
    async fn connect(addr: SocketAddr, who: Option<u8>) -> Client {
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        if let Some(who) = who {
            stream.write_all(&[who]).await.unwrap();
        }
        Client {
            stream,
            correlation_id: 0,
        }
    }

    /// Sends `body` in `version`; the decoded answer, or the I/O error (EOF: the controller closed).
    async fn ask(&mut self, version: i16, body: RequestBody) -> io::Result<ResponseBody> {
        let api = body.api_key();
        self.correlation_id += 1;
        let header = RequestHeader {
            request_api_key: api as i16,
            request_api_version: version,
            correlation_id: self.correlation_id,
            client_id: Some("kafka-listener-test".into()),
            ..Default::default()
        };
        let frame = protocol::encode_request(&header, &body).unwrap();
        self.stream.write_all(&frame).await?;
        let data = tokio::time::timeout(WAIT, read_raw(&mut self.stream))
            .await
            .expect("no answer and no close within 30 s")?;
        let (h, body) = protocol::decode_response(api, version, Bytes::from(data))
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
        assert_eq!(h.correlation_id, self.correlation_id);
        Ok(body)
    }

    async fn describe_cluster(
        &mut self,
        version: i16,
        endpoint_type: i8,
    ) -> DescribeClusterResponse {
        let body = RequestBody::DescribeCluster(DescribeClusterRequest {
            endpoint_type,
            include_cluster_authorized_operations: true,
            ..Default::default()
        });
        match self
            .ask(version, body)
            .await
            .expect("DescribeCluster answered")
        {
            ResponseBody::DescribeCluster(r) => r,
            other => panic!("answered {other:?}"),
        }
    }

    async fn describe_quorum(&mut self, partition: i32) -> DescribeQuorumResponse {
        let body = RequestBody::DescribeQuorum(DescribeQuorumRequest {
            topics: vec![describe_quorum_request::TopicData {
                topic_name: "__cluster_metadata".into(),
                partitions: vec![describe_quorum_request::PartitionData {
                    partition_index: partition,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        });
        match self.ask(2, body).await.expect("DescribeQuorum answered") {
            ResponseBody::DescribeQuorum(r) => r,
            other => panic!("answered {other:?}"),
        }
    }

    /// A JSON frame (Runnel's inter-node RPC) on the same connection: `Ok` with its answer, or the close.
    async fn json_describe_quorum(&mut self) -> io::Result<RpcResponse> {
        let req = controller::rpc::RpcRequest::Client(ClientRequest::DescribeQuorum);
        write_frame(&mut self.stream, &req).await?;
        tokio::time::timeout(WAIT, read_frame(&mut self.stream))
            .await
            .expect("no answer and no close within 30 s")
    }

    /// Sends raw frame bytes and expects the controller to close the connection.
    async fn expect_closed_after(&mut self, frame: &[u8]) {
        let mut out = (frame.len() as u32).to_be_bytes().to_vec();
        out.extend_from_slice(frame);
        let _ = self.stream.write_all(&out).await;
        let mut buf = [0u8; 64];
        let r = tokio::time::timeout(WAIT, self.stream.read(&mut buf))
            .await
            .expect("the connection stayed open 30 s");
        assert!(matches!(r, Ok(0) | Err(_)), "answered {r:?} to {frame:?}");
    }
}

async fn read_raw(s: &mut TcpStream) -> io::Result<Vec<u8>> {
    let len = s.read_u32().await? as usize;
    let mut data = vec![0u8; len];
    s.read_exact(&mut data).await?;
    Ok(data)
}

/// A listener whose "authentication" is one byte the client sends first (`a` admin, `b` broker, `m`
/// mallory), standing in for SASL: the controller's per-request authorization is what is tested.
struct NamedPeers(TcpListener);

impl RpcListener for NamedPeers {
    fn accept(&self) -> IoFuture<'_, BoxedStream> {
        Box::pin(async move {
            let (s, _) = self.0.accept().await?;
            Ok(Box::new(s) as BoxedStream)
        })
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.0.local_addr()
    }

    fn accept_pending(&self) -> IoFuture<'_, PendingConnection> {
        Box::pin(async move {
            let (mut s, addr) = self.0.accept().await?;
            let pending: PendingConnection = Box::pin(async move {
                let name = match s.read_u8().await? {
                    b'a' => "admin",
                    b'b' => "broker",
                    _ => "mallory",
                };
                Ok(Accepted {
                    stream: Box::new(s),
                    peer: Some(Peer {
                        principal: format!("User:{name}"),
                        host: addr.ip().to_string(),
                    }),
                })
            });
            Ok(pending)
        })
    }

    fn authorizer(&self) -> Option<Arc<dyn PeerAuthorizer>> {
        Some(Arc::new(Acls))
    }

    fn listener_name(&self) -> String {
        "CTL".into()
    }
}

/// admin: DESCRIBE and ALTER; broker: CLUSTER_ACTION; mallory: nothing.
#[derive(Debug)]
struct Acls;

impl PeerAuthorizer for Acls {
    fn authorize(
        &self,
        peer: &Peer,
        _: &MetadataImage,
        op: ClusterOperation,
    ) -> Result<(), String> {
        let ok = matches!(
            (peer.principal.as_str(), op),
            (
                "User:admin",
                ClusterOperation::Describe | ClusterOperation::Alter
            ) | ("User:broker", ClusterOperation::ClusterAction)
        );
        ok.then_some(())
            .ok_or_else(|| format!("{} may not {}", peer.principal, op.name()))
    }

    fn cluster_operations(&self, peer: &Peer, _: &MetadataImage) -> i32 {
        match peer.principal.as_str() {
            "User:admin" => (1 << 8) | (1 << 9),
            _ => 0,
        }
    }
}

/// One voter (id 1) serving on `listener`, once it leads.
async fn single_voter(listener: Box<dyn RpcListener>, dir: &std::path::Path) -> ControllerServer {
    let addr = listener.local_addr().unwrap();
    let config = ControllerConfig {
        node_id: BrokerId(1),
        voters: BTreeMap::from([(BrokerId(1), addr)]),
        bootstrap_servers: Vec::new(),
        listen: addr,
        data_dir: dir.to_path_buf(),
        cluster_id: "kafka-listener-cluster".into(),
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
    let server = ControllerServer::start_with_seams(config, listener, tuning, Default::default())
        .await
        .expect("start controller");
    assert_eq!(server.wait_for_leader(WAIT).await, Some(BrokerId(1)));
    server
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_listener_answers_kafka_requests_beside_json_frames() {
    let dir = tempfile::tempdir().unwrap();
    let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = tcp.local_addr().unwrap();
    let server = single_voter(Box::new(tcp), dir.path()).await;
    let mut c = Client::connect(addr, None).await;

    let ResponseBody::ApiVersions(v) = c
        .ask(
            3,
            RequestBody::ApiVersions(ApiVersionsRequest {
                client_software_name: "apache-kafka-java".into(),
                client_software_version: "4.4.0".into(),
                ..Default::default()
            }),
        )
        .await
        .unwrap()
    else {
        panic!("not ApiVersions")
    };
    assert_eq!(v.error_code, 0);
    let keys: Vec<i16> = v.api_keys.iter().map(|k| k.api_key).collect();
    assert_eq!(keys, vec![17, 18, 36, 55, 56, 60, 62, 63, 80, 81]);

    // KIP-919: the controllers (the voters) and the active one; nobody is asked on an open listener.
    let r = c.describe_cluster(1, 2).await;
    assert_eq!((r.error_code, r.endpoint_type, r.controller_id), (0, 2, 1));
    assert_eq!(r.cluster_id, "kafka-listener-cluster");
    let nodes: Vec<_> = r
        .brokers
        .iter()
        .map(|b| (b.broker_id, b.host.clone(), b.port))
        .collect();
    assert_eq!(
        nodes,
        vec![(1, "127.0.0.1".to_string(), i32::from(addr.port()))]
    );
    assert_eq!(
        r.cluster_authorized_operations,
        controller::transport::ALL_CLUSTER_OPERATIONS
    );
    // A broker endpoint asked of a controller: MISMATCHED_ENDPOINT_TYPE (v1+), INVALID_REQUEST in v0.
    assert_eq!(c.describe_cluster(2, 1).await.error_code, 114);
    assert_eq!(c.describe_cluster(1, 7).await.error_code, 115);
    assert_eq!(c.describe_cluster(0, 1).await.error_code, 42);

    let q = c.describe_quorum(0).await;
    assert_eq!(q.error_code, 0);
    let p = &q.topics[0].partitions[0];
    assert_eq!((p.error_code, p.leader_id), (0, 1));
    assert_eq!(
        p.current_voters
            .iter()
            .map(|v| v.replica_id)
            .collect::<Vec<_>>(),
        vec![1]
    );
    assert!(p.high_watermark > 0, "{p:?}");
    let l = &q.nodes[0].listeners[0];
    assert_eq!((l.name.as_str(), l.port), ("CONTROLLER", addr.port()));
    let q = c.describe_quorum(1).await;
    assert_eq!(q.topics[0].partitions[0].error_code, 3);

    // Runnel's JSON frames on the same connection.
    match c.json_describe_quorum().await.unwrap() {
        RpcResponse::Client(ClientResponse::DescribeQuorum(Ok(info))) => {
            assert_eq!(info.leader_id, Some(BrokerId(1)))
        }
        other => panic!("answered {other:?}"),
    }
    // What cannot be served closes the connection: a key Kafka does not define, a key the controller
    // does not serve (Metadata v12), a version it does not know, a first byte that is neither.
    c.expect_closed_after(&[0, 0xEE, 0, 0, 0, 0, 0, 1, 0, 0])
        .await;
    let mut c = Client::connect(addr, None).await;
    c.expect_closed_after(&[0, 3, 0, 12, 0, 0, 0, 1, 0, 0])
        .await;
    let mut c = Client::connect(addr, None).await;
    c.expect_closed_after(&[0, 55, 0, 9, 0, 0, 0, 1, 0, 0])
        .await;
    let mut c = Client::connect(addr, None).await;
    c.expect_closed_after(b"GET / HTTP/1.1\r\n").await;
    let mut c = Client::connect(addr, None).await;
    c.expect_closed_after(&[]).await;
    // The controller still serves.
    let mut c = Client::connect(addr, None).await;
    assert_eq!(c.describe_quorum(0).await.error_code, 0);
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_request_is_authorized_on_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = tcp.local_addr().unwrap();
    let server = single_voter(Box::new(NamedPeers(tcp)), dir.path()).await;

    // The tool's admin (DESCRIBE, ALTER) connects and describes; a JSON frame closes its connection.
    let mut admin = Client::connect(addr, Some(b'a')).await;
    let r = admin.describe_cluster(2, 2).await;
    assert_eq!((r.error_code, r.controller_id), (0, 1));
    assert_eq!(r.cluster_authorized_operations, (1 << 8) | (1 << 9));
    let q = admin.describe_quorum(0).await;
    assert_eq!(
        (q.error_code, q.nodes[0].listeners[0].name.as_str()),
        (0, "CTL")
    );
    assert!(
        admin.json_describe_quorum().await.is_err(),
        "a JSON frame without CLUSTER_ACTION was answered"
    );

    // Without DESCRIBE or ALTER: CLUSTER_AUTHORIZATION_FAILED, and the connection stays.
    let mut mallory = Client::connect(addr, Some(b'm')).await;
    let r = mallory.describe_cluster(2, 2).await;
    assert_eq!((r.error_code, r.brokers.len()), (31, 0));
    let q = mallory.describe_quorum(0).await;
    assert_eq!((q.error_code, q.topics.len()), (31, 0));
    let r = mallory.describe_cluster(1, 2).await;
    assert_eq!(r.error_code, 31);

    // CLUSTER_ACTION (a broker) may send JSON frames, but not describe.
    let mut broker = Client::connect(addr, Some(b'b')).await;
    assert!(matches!(
        broker.json_describe_quorum().await.unwrap(),
        RpcResponse::Client(ClientResponse::DescribeQuorum(Ok(_)))
    ));
    assert_eq!(broker.describe_quorum(0).await.error_code, 31);
    assert!(broker.json_describe_quorum().await.is_ok());
    server.shutdown().await.unwrap();
}

/// BrokerRegistration v4 of broker 7 in `cluster_id` with one listener per `(name, port)`.
fn registration(cluster_id: &str, listeners: &[(&str, u16)]) -> RequestBody {
    RequestBody::BrokerRegistration(BrokerRegistrationRequest {
        broker_id: 7,
        cluster_id: cluster_id.into(),
        incarnation_id: uuid::Uuid::from_u128(7),
        listeners: listeners
            .iter()
            .map(|&(name, port)| broker_registration_request::Listener {
                name: name.into(),
                host: "127.0.0.1".into(),
                port,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_registers_and_heartbeats_in_kafka_requests_with_cluster_action() {
    let dir = tempfile::tempdir().unwrap();
    let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = tcp.local_addr().unwrap();
    let server = single_voter(Box::new(NamedPeers(tcp)), dir.path()).await;
    let cluster = "kafka-listener-cluster";
    let heartbeat = |epoch: i64, offset: i64| {
        RequestBody::BrokerHeartbeat(BrokerHeartbeatRequest {
            broker_id: 7,
            broker_epoch: epoch,
            current_metadata_offset: offset,
            ..Default::default()
        })
    };
    let alter = |epoch: i64| {
        RequestBody::AlterPartition(AlterPartitionRequest {
            broker_id: 7,
            broker_epoch: epoch,
            topics: vec![alter_partition_request::TopicData {
                topic_id: uuid::Uuid::from_u128(99),
                partitions: vec![alter_partition_request::PartitionData {
                    partition_index: 0,
                    new_isr_with_epochs: vec![alter_partition_request::BrokerState {
                        broker_id: 7,
                        broker_epoch: -1,
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        })
    };

    // Without CLUSTER_ACTION (the admin may describe, not register): CLUSTER_AUTHORIZATION_FAILED.
    let mut admin = Client::connect(addr, Some(b'a')).await;
    let reg = registration(cluster, &[("PLAINTEXT", 9092)]);
    let ResponseBody::BrokerRegistration(r) = admin.ask(4, reg).await.unwrap() else {
        panic!("not BrokerRegistration")
    };
    assert_eq!((r.error_code, r.broker_epoch), (31, -1));
    let ResponseBody::BrokerHeartbeat(h) = admin.ask(2, heartbeat(1, 1)).await.unwrap() else {
        panic!("not BrokerHeartbeat")
    };
    assert_eq!((h.error_code, h.is_fenced), (31, true));
    let ResponseBody::AlterPartition(a) = admin.ask(3, alter(1)).await.unwrap() else {
        panic!("not AlterPartition")
    };
    assert_eq!((a.error_code, a.topics.len()), (31, 0));
    assert!(server.image().brokers.is_empty());

    // A broker: another cluster's id and a registration without listeners are refused.
    let mut broker = Client::connect(addr, Some(b'b')).await;
    let reg = registration("another-cluster", &[("PLAINTEXT", 9092)]);
    let ResponseBody::BrokerRegistration(r) = broker.ask(4, reg).await.unwrap() else {
        panic!("not BrokerRegistration")
    };
    assert_eq!(r.error_code, 104, "INCONSISTENT_CLUSTER_ID");
    let ResponseBody::BrokerRegistration(r) =
        broker.ask(4, registration(cluster, &[])).await.unwrap()
    else {
        panic!("not BrokerRegistration")
    };
    assert_eq!(r.error_code, 42, "INVALID_REQUEST");

    // Registered with both listeners, the first one the inter-broker endpoint.
    let reg = registration(cluster, &[("INTERNAL", 9093), ("PLAINTEXT", 9092)]);
    let ResponseBody::BrokerRegistration(r) = broker.ask(0, reg).await.unwrap() else {
        panic!("not BrokerRegistration")
    };
    assert_eq!(r.error_code, 0);
    let epoch = r.broker_epoch;
    assert!(epoch > 0, "{r:?}");
    let image = server.image();
    let b = &image.brokers[&BrokerId(7)];
    assert_eq!(b.port, 9093);
    let names: Vec<&str> = b.listeners.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["INTERNAL", "PLAINTEXT"]);

    // Heartbeats: a stale epoch is refused; caught up past the registration, the broker is unfenced.
    let ResponseBody::BrokerHeartbeat(h) =
        broker.ask(2, heartbeat(epoch + 100, epoch)).await.unwrap()
    else {
        panic!("not BrokerHeartbeat")
    };
    assert_eq!(h.error_code, 77, "STALE_BROKER_EPOCH");
    let ResponseBody::BrokerHeartbeat(h) = broker.ask(0, heartbeat(epoch, epoch)).await.unwrap()
    else {
        panic!("not BrokerHeartbeat")
    };
    assert_eq!(
        (h.error_code, h.is_caught_up, h.is_fenced),
        (0, true, false),
        "{h:?}"
    );

    // AlterPartition of a topic that does not exist: the partition's error, the request's none.
    let ResponseBody::AlterPartition(a) = broker.ask(3, alter(epoch)).await.unwrap() else {
        panic!("not AlterPartition")
    };
    assert_eq!(a.error_code, 0);
    assert_eq!(
        a.topics[0].partitions[0].error_code, 100,
        "UNKNOWN_TOPIC_ID"
    );
    server.shutdown().await.unwrap();
}
