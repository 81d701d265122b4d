//! Two ReplicaManagers in one process, each behind its own KafkaApis and TCP listener (127.0.0.1, port 0),
//! replicating one partition over the Kafka protocol: acks=all waits for the follower, leader changes
//! truncate the old leader's unreplicated tail (OffsetForLeaderEpoch), a stopped follower is shrunk out of
//! the ISR and acks=all then fails with min.insync.replicas = 2.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use parking_lot::Mutex;
use protocol::error::ErrorCode;
use protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use protocol::messages::{FetchRequest, OffsetForLeaderEpochRequest, ProduceRequest};
use protocol::record::{Compression, RecordBatchBuilder, Records};
use protocol::{RequestBody, ResponseBody};
use tokio::net::TcpListener;
use tokio::sync::watch;
use uuid::Uuid;

use crate::config::BrokerConfig;
use crate::metadata::{MetadataStore, TopicMetadata};
use replica::cluster_link::ClusterLink;
use replica::partition::PartitionState;
use replica::replica_fetcher::Connection;
use replica::replica_manager::ReplicaManager;
use storage::now_ms;
use types::{BrokerId, LeaderEpoch, Offset, PartitionEpoch};

/// Broker ids from raw integers (test shorthand).
fn ids(raw: &[i32]) -> Vec<BrokerId> {
    raw.iter().copied().map(BrokerId).collect()
}

const TOPIC: &str = "replicated";

/// The test's controller: endpoints and the one partition's registration; AlterPartition is checked
/// against the current epochs as KRaft does.
#[derive(Default)]
struct TestLink {
    endpoints: Mutex<HashMap<BrokerId, (String, u16)>>,
    registration: Mutex<Option<PartitionState>>,
}

impl ClusterLink for TestLink {
    fn broker_endpoint(&self, broker_id: BrokerId) -> Option<(String, u16)> {
        self.endpoints.lock().get(&broker_id).cloned()
    }

    fn alter_partition(
        &self,
        _topic: String,
        _partition: i32,
        state: PartitionState,
    ) -> BoxFuture<'static, Result<PartitionState, metadata::ControllerError>> {
        let mut reg = self.registration.lock();
        let result = match reg.as_mut() {
            Some(r) if r.leader_epoch != state.leader_epoch => Err(metadata::ControllerError::new(
                ErrorCode::FENCED_LEADER_EPOCH,
                "refused",
            )),
            Some(r) if r.partition_epoch != state.partition_epoch => Err(
                metadata::ControllerError::new(ErrorCode::INVALID_UPDATE_VERSION, "refused"),
            ),
            Some(r) => {
                r.isr = state.isr.clone();
                r.partition_epoch = r.partition_epoch.next();
                Ok(r.clone())
            }
            None => Err(metadata::ControllerError::new(
                ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                "refused",
            )),
        };
        Box::pin(futures::future::ready(result))
    }
}

struct TestBroker {
    id: i32,
    rm: Arc<ReplicaManager>,
    port: u16,
    config: storage::LogConfig,
    _shutdown: watch::Sender<bool>,
    _dir: tempfile::TempDir,
}

async fn start_broker(id: i32, link: Arc<TestLink>, topic_id: Uuid) -> TestBroker {
    let dir = tempfile::tempdir().unwrap();
    let pairs: Vec<(String, String)> = [
        ("log.dirs", dir.path().to_str().unwrap()),
        ("node.id", &id.to_string()),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let config = BrokerConfig::from_pairs(&pairs).unwrap();
    let metadata = Arc::new(MetadataStore::open(dir.path(), id).unwrap());
    let mut configs = BTreeMap::new();
    configs.insert("min.insync.replicas".to_string(), "2".to_string());
    metadata
        .create_topic(
            TOPIC,
            TopicMetadata {
                topic_id,
                partitions: 1,
                configs: configs.clone(),
            },
        )
        .unwrap();
    let log_config = crate::topic_config::log_config(&config, &configs);
    let lc = log_config.clone();
    let lm = Arc::new(
        storage::LogManager::open(
            dir.path(),
            move |_| lc.clone(),
            Arc::new(types::SystemClock),
        )
        .unwrap(),
    );
    let rm = Arc::new(ReplicaManager::new(lm, BrokerId(id), link.clone(), 300));
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
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    link.endpoints
        .lock()
        .insert(BrokerId(id), ("127.0.0.1".to_string(), port));
    let (shutdown, rx) = watch::channel(false);
    tokio::spawn(crate::server::network::serve(
        listener,
        crate::server::network::ListenerSecurity::plaintext("PLAINTEXT"),
        apis,
        rx,
    ));
    TestBroker {
        id,
        rm,
        port,
        config: log_config,
        _shutdown: shutdown,
        _dir: dir,
    }
}

impl TestBroker {
    fn apply(&self, state: &PartitionState) {
        self.rm
            .apply_partition_state(TOPIC, 0, self.config.clone(), state.clone())
            .unwrap();
    }

    fn offsets(&self) -> (i64, i64, i64) {
        let o = self.rm.partition(TOPIC, 0).unwrap().offsets();
        (
            o.log_start_offset().get(),
            o.high_watermark().get(),
            o.log_end_offset().get(),
        )
    }

    async fn connect(&self) -> Connection {
        Connection::connect("127.0.0.1", self.port, BrokerId(-1))
            .await
            .unwrap()
    }
}

fn batch(values: &[&str]) -> Bytes {
    let mut b = RecordBatchBuilder::new(Compression::None);
    for v in values {
        b.append(now_ms(), None, Some(Bytes::from(v.to_string())), vec![]);
    }
    b.build().unwrap()
}

/// Produces `values` with `acks`; returns (error code, base offset).
async fn produce(conn: &mut Connection, acks: i16, timeout_ms: i32, values: &[&str]) -> (i16, i64) {
    let request = ProduceRequest {
        acks,
        timeout_ms,
        topic_data: vec![TopicProduceData {
            name: TOPIC.to_string(),
            partition_data: vec![PartitionProduceData {
                index: 0,
                records: Some(Records::Memory(batch(values))),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let resp = conn
        .call(9, RequestBody::Produce(request), Duration::from_secs(30))
        .await
        .unwrap();
    let ResponseBody::Produce(resp) = resp else {
        panic!("not a produce response")
    };
    let p = &resp.responses[0].partition_responses[0];
    (p.error_code, p.base_offset)
}

/// Waits (bounded) until `cond` holds for the partition on `broker`, woken by the partition's changes.
async fn wait_until(broker: &TestBroker, what: &str, cond: impl Fn((i64, i64, i64)) -> bool) {
    let p = broker.rm.partition(TOPIC, 0).unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let notified = p.changed().notified();
        let mut notified = std::pin::pin!(notified);
        notified.as_mut().enable();
        if cond(broker.offsets()) {
            return;
        }
        assert!(
            tokio::time::timeout_at(deadline, notified).await.is_ok(),
            "broker {}: timed out waiting for {what}; offsets {:?}",
            broker.id,
            broker.offsets()
        );
    }
}

/// Every byte of the log from offset 0 to the LEO.
fn log_bytes(broker: &TestBroker) -> Vec<u8> {
    use std::os::unix::fs::FileExt;
    let p = broker.rm.partition(TOPIC, 0).unwrap();
    let leo = p.log_end_offset();
    let mut out = Vec::new();
    let mut offset = Offset::ZERO;
    while offset < leo {
        let data = p.read_records(offset, 1 << 20, leo, true).unwrap();
        let bytes = match &data.records {
            Records::Memory(b) => b.to_vec(),
            Records::File(f) => {
                let mut v = vec![0u8; f.len as usize];
                f.file.read_exact_at(&mut v, f.position).unwrap();
                v
            }
        };
        let batches: Vec<_> = protocol::record::batches(&Bytes::from(bytes.clone()))
            .map(|b| b.unwrap())
            .collect();
        offset = Offset(batches.last().unwrap().next_offset());
        out.extend_from_slice(&bytes);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_brokers_replicate_fail_over_and_shrink_the_isr() {
    let link = Arc::new(TestLink::default());
    let topic_id = Uuid::new_v4();
    let b1 = start_broker(1, link.clone(), topic_id).await;
    let b2 = start_broker(2, link.clone(), topic_id).await;

    // Epoch 1: broker 1 leads, 2 follows.
    let mut reg = PartitionState {
        topic_id,
        leader: BrokerId(1),
        leader_epoch: LeaderEpoch(1),
        partition_epoch: PartitionEpoch(1),
        isr: vec![BrokerId(1), BrokerId(2)],
        replicas: vec![BrokerId(1), BrokerId(2)],
    };
    *link.registration.lock() = Some(reg.clone());
    b1.apply(&reg);
    b2.apply(&reg);

    let mut c1 = b1.connect().await;
    let mut c2 = b2.connect().await;
    // acks=all completes only once the follower has the records.
    assert_eq!(produce(&mut c1, -1, 15_000, &["a", "b", "c"]).await, (0, 0));
    assert!(b2.offsets().2 >= 3, "acks=all answered before replication");
    wait_until(&b2, "follower HW 3", |(_, hw, _)| hw == 3).await;
    // The follower refuses producers, and consumers' Fetches before v11; from v11 (KIP-392) it serves
    // them up to its HighWatermark.
    assert_eq!(
        produce(&mut c2, 1, 1_000, &["x"]).await.0,
        ErrorCode::NOT_LEADER_OR_FOLLOWER.0
    );
    let fetch = FetchRequest {
        replica_id: -1,
        max_wait_ms: 0,
        min_bytes: 1,
        max_bytes: 1 << 20,
        session_epoch: -1,
        topics: vec![FetchTopic {
            topic: TOPIC.to_string(),
            partitions: vec![FetchPartition {
                partition: 0,
                current_leader_epoch: -1,
                fetch_offset: 0,
                partition_max_bytes: 1 << 20,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let ResponseBody::Fetch(resp) = c2
        .call(
            10,
            RequestBody::Fetch(fetch.clone()),
            Duration::from_secs(10),
        )
        .await
        .unwrap()
    else {
        panic!()
    };
    assert_eq!(
        resp.responses[0].partitions[0].error_code,
        ErrorCode::NOT_LEADER_OR_FOLLOWER.0
    );
    let ResponseBody::Fetch(resp) = c2
        .call(12, RequestBody::Fetch(fetch), Duration::from_secs(10))
        .await
        .unwrap()
    else {
        panic!()
    };
    let served = &resp.responses[0].partitions[0];
    assert_eq!(
        (
            served.error_code,
            served.high_watermark,
            served.preferred_read_replica
        ),
        (0, 3, -1)
    );
    assert!(served.records.as_ref().is_some_and(|r| !r.is_empty()));
    // OffsetForLeaderEpoch on the leader: epoch 1 ends at the LEO; a stale current epoch is fenced.
    let ofle = |current: i32| OffsetForLeaderEpochRequest {
        replica_id: -1,
        topics: vec![OffsetForLeaderTopic {
            topic: TOPIC.to_string(),
            partitions: vec![OffsetForLeaderPartition {
                partition: 0,
                current_leader_epoch: current,
                leader_epoch: 1,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let ResponseBody::OffsetForLeaderEpoch(resp) = c1
        .call(
            4,
            RequestBody::OffsetForLeaderEpoch(ofle(1)),
            Duration::from_secs(10),
        )
        .await
        .unwrap()
    else {
        panic!()
    };
    let r = &resp.topics[0].partitions[0];
    assert_eq!((r.error_code, r.leader_epoch, r.end_offset), (0, 1, 3));
    let ResponseBody::OffsetForLeaderEpoch(resp) = c1
        .call(
            4,
            RequestBody::OffsetForLeaderEpoch(ofle(0)),
            Duration::from_secs(10),
        )
        .await
        .unwrap()
    else {
        panic!()
    };
    assert_eq!(
        resp.topics[0].partitions[0].error_code,
        ErrorCode::FENCED_LEADER_EPOCH.0
    );

    // The follower stops; the leader appends an unreplicated tail with acks=1.
    b2.rm.stop_replica(TOPIC, 0, false).unwrap();
    assert_eq!(
        produce(&mut c1, 1, 1_000, &["lost1", "lost2"]).await,
        (0, 3)
    );
    assert_eq!(b1.offsets().2, 5);

    // Epoch 2: broker 2 takes over; broker 1 truncates its tail and follows.
    reg.leader = BrokerId(2);
    reg.leader_epoch = LeaderEpoch(2);
    reg.partition_epoch = reg.partition_epoch.next();
    reg.isr = vec![BrokerId(2), BrokerId(1)];
    *link.registration.lock() = Some(reg.clone());
    b2.apply(&reg);
    b1.apply(&reg);
    assert_eq!(
        produce(&mut c1, -1, 1_000, &["x"]).await.0,
        ErrorCode::NOT_LEADER_OR_FOLLOWER.0
    );
    assert_eq!(produce(&mut c2, -1, 15_000, &["d"]).await, (0, 3));
    wait_until(&b1, "old leader truncated and caught up", |(_, hw, leo)| {
        leo == 4 && hw == 4
    })
    .await;
    assert_eq!(log_bytes(&b1), log_bytes(&b2), "replica logs differ");

    // Broker 1 stops fetching: after replica.lag.time.max.ms the leader shrinks the ISR to itself, so
    // the waiting acks=all produce fails with NOT_ENOUGH_REPLICAS_AFTER_APPEND and the next one is refused.
    b1.rm.stop_replica(TOPIC, 0, false).unwrap();
    let (code, _) = produce(&mut c2, -1, 15_000, &["e"]).await;
    assert_eq!(code, ErrorCode::NOT_ENOUGH_REPLICAS_AFTER_APPEND.0);
    assert_eq!(link.registration.lock().as_ref().unwrap().isr, ids(&[2]));
    assert_eq!(
        produce(&mut c2, -1, 15_000, &["f"]).await.0,
        ErrorCode::NOT_ENOUGH_REPLICAS.0
    );
    // acks=1 still works.
    assert_eq!(produce(&mut c2, 1, 1_000, &["g"]).await, (0, 5));
    b1.rm.shutdown().unwrap();
    b2.rm.shutdown().unwrap();
}

/// A follower that fell behind the leader's LogStartOffset (records deleted while it was away) gets
/// OFFSET_OUT_OF_RANGE, restarts its log at the leader's LogStartOffset, catches up and rejoins the ISR.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follower_behind_the_log_start_restarts_there_and_rejoins() {
    let link = Arc::new(TestLink::default());
    let topic_id = Uuid::new_v4();
    let b1 = start_broker(1, link.clone(), topic_id).await;
    let b2 = start_broker(2, link.clone(), topic_id).await;
    let reg = PartitionState {
        topic_id,
        leader: BrokerId(1),
        leader_epoch: LeaderEpoch(1),
        partition_epoch: PartitionEpoch(1),
        isr: vec![BrokerId(1), BrokerId(2)],
        replicas: vec![BrokerId(1), BrokerId(2)],
    };
    *link.registration.lock() = Some(reg.clone());
    b1.apply(&reg);
    b2.apply(&reg);
    let mut c1 = b1.connect().await;
    assert_eq!(produce(&mut c1, 1, 1_000, &["a", "b"]).await, (0, 0));
    wait_until(&b2, "follower LEO 2", |(_, _, leo)| leo == 2).await;

    // The follower goes away; the leader shrinks the ISR, so its HW reaches its LEO, and deletes records.
    b2.rm.stop_replica(TOPIC, 0, false).unwrap();
    assert_eq!(produce(&mut c1, 1, 1_000, &["c", "d", "e"]).await, (0, 2));
    wait_until(&b1, "ISR shrink lets the HW reach 5", |(_, hw, _)| hw == 5).await;
    assert_eq!(link.registration.lock().as_ref().unwrap().isr, ids(&[1]));
    let p1 = b1.rm.partition(TOPIC, 0).unwrap();
    assert_eq!(p1.delete_records_before(Offset(4)).unwrap(), Offset(4));

    // It comes back: its fetch offset 2 is below the leader's log start 4.
    let reg = link.registration.lock().clone().unwrap();
    b2.apply(&reg);
    wait_until(&b2, "follower restarted at 4 and caught up", |o| {
        o == (4, 5, 5)
    })
    .await;
    wait_until(&b1, "follower back in the ISR", |_| {
        link.registration.lock().as_ref().unwrap().isr == ids(&[1, 2])
    })
    .await;
    // The controller (the test link) has the expanded ISR; the leader applies the AlterPartition answer just
    // after, without a notification to await: poll, bounded.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while p1.registration().isr != ids(&[1, 2]) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the leader's partition state never showed ISR [1, 2]: {:?}",
            p1.registration().isr
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    b1.rm.shutdown().unwrap();
    b2.rm.shutdown().unwrap();
}

/// A consumer long-polling the leader at its HW is answered as soon as the follower's fetch advances the HW
/// (not when its max_wait runs out, and not at the append, when the records are not yet committed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_fetch_wakes_when_the_hw_advances() {
    let link = Arc::new(TestLink::default());
    let topic_id = Uuid::new_v4();
    let b1 = start_broker(1, link.clone(), topic_id).await;
    let b2 = start_broker(2, link.clone(), topic_id).await;
    let reg = PartitionState {
        topic_id,
        leader: BrokerId(1),
        leader_epoch: LeaderEpoch(1),
        partition_epoch: PartitionEpoch(1),
        isr: vec![BrokerId(1), BrokerId(2)],
        replicas: vec![BrokerId(1), BrokerId(2)],
    };
    *link.registration.lock() = Some(reg.clone());
    b1.apply(&reg);
    b2.apply(&reg);
    let mut producer = b1.connect().await;
    let mut consumer = b1.connect().await;
    let fetch = FetchRequest {
        replica_id: -1,
        max_wait_ms: 20_000,
        min_bytes: 1,
        max_bytes: 1 << 20,
        session_epoch: -1,
        topics: vec![FetchTopic {
            topic: TOPIC.to_string(),
            partitions: vec![FetchPartition {
                partition: 0,
                current_leader_epoch: 1,
                fetch_offset: 0,
                partition_max_bytes: 1 << 20,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    // The follower is away: the append does not move the HW, so nothing is visible yet.
    b2.rm.stop_replica(TOPIC, 0, false).unwrap();
    assert_eq!(produce(&mut producer, 1, 1_000, &["a", "b"]).await, (0, 0));
    let mut quick = fetch.clone();
    quick.max_wait_ms = 0;
    let ResponseBody::Fetch(resp) = consumer
        .call(12, RequestBody::Fetch(quick), Duration::from_secs(30))
        .await
        .unwrap()
    else {
        panic!()
    };
    let p = &resp.responses[0].partitions[0];
    assert_eq!((p.error_code, p.high_watermark), (0, 0));
    assert!(p.records.as_ref().is_none_or(|r| r.is_empty()));
    // The consumer long-polls; the follower returns and its fetch advances the HW.
    let started = std::time::Instant::now();
    let poll = tokio::spawn(async move {
        consumer
            .call(12, RequestBody::Fetch(fetch), Duration::from_secs(30))
            .await
            .unwrap()
    });
    b2.apply(&reg);
    let ResponseBody::Fetch(resp) = poll.await.unwrap() else {
        panic!()
    };
    let p = &resp.responses[0].partitions[0];
    assert_eq!(p.error_code, 0);
    assert_eq!(p.high_watermark, 2);
    assert!(
        p.records.as_ref().is_some_and(|r| !r.is_empty()),
        "no records"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the consumer waited for its max_wait"
    );
    b1.rm.shutdown().unwrap();
    b2.rm.shutdown().unwrap();
}

/// Issue 13: a replica that led an epoch without appending keeps that epoch's entry at its LogEndOffset;
/// when the other replica leads the next epoch, the follower's truncation target equals its LEO. The real
/// fetchers must still drop the stale entry and fetch again (else the follower never rejoins and acks=all
/// fails once the ISR shrinks).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follower_with_an_empty_epoch_at_its_log_end_rejoins() {
    let link = Arc::new(TestLink::default());
    let topic_id = Uuid::new_v4();
    let b1 = start_broker(1, link.clone(), topic_id).await;
    let b2 = start_broker(2, link.clone(), topic_id).await;
    let mut reg = PartitionState {
        topic_id,
        leader: BrokerId(1),
        leader_epoch: LeaderEpoch(1),
        partition_epoch: PartitionEpoch(1),
        isr: vec![BrokerId(1), BrokerId(2)],
        replicas: vec![BrokerId(1), BrokerId(2)],
    };
    let next = |leader: i32, reg: &mut PartitionState| {
        reg.leader = BrokerId(leader);
        reg.leader_epoch = LeaderEpoch(reg.leader_epoch.get() + 1);
        reg.partition_epoch = reg.partition_epoch.next();
        reg.isr = vec![BrokerId(1), BrokerId(2)];
        *link.registration.lock() = Some(reg.clone());
        b1.apply(reg);
        b2.apply(reg);
    };
    *link.registration.lock() = Some(reg.clone());
    b1.apply(&reg);
    b2.apply(&reg);
    let mut c1 = b1.connect().await;
    let ten: Vec<String> = (0..10).map(|i| format!("r{i}")).collect();
    let ten: Vec<&str> = ten.iter().map(String::as_str).collect();
    assert_eq!(produce(&mut c1, -1, 15_000, &ten).await, (0, 0));
    wait_until(&b2, "follower HW 10", |(_, hw, _)| hw == 10).await;

    // Epoch 2: broker 2 leads and appends nothing; epoch 3: broker 1 leads again.
    next(2, &mut reg);
    next(1, &mut reg);
    let p2 = b2.rm.partition(TOPIC, 0).unwrap();
    assert_eq!(
        b1.rm.partition(TOPIC, 0).unwrap().latest_epoch(),
        Some(LeaderEpoch(3))
    );
    // acks=all completes only when broker 2 fetches again (min.insync.replicas = 2; a stuck follower is
    // shrunk out of the ISR after 300 ms and the produce fails).
    assert_eq!(produce(&mut c1, -1, 15_000, &["after"]).await, (0, 10));
    wait_until(&b2, "follower caught up in epoch 3", |(_, _, leo)| {
        leo == 11
    })
    .await;
    assert_eq!(p2.latest_epoch(), Some(LeaderEpoch(3)));
    assert_eq!(log_bytes(&b1), log_bytes(&b2), "replica logs differ");
    assert_eq!(link.registration.lock().as_ref().unwrap().isr, ids(&[1, 2]));
    b1.rm.shutdown().unwrap();
    b2.rm.shutdown().unwrap();
}
