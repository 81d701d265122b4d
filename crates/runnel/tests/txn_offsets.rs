//! TxnOffsetCommit and OffsetFetch `require_stable` against the real `runnel` binary over the wire: a
//! transactional offset commit is pending (invisible, UNSTABLE_OFFSET_COMMIT with `require_stable`, in the
//! v7 and the v8+ group forms), and unknown topics are refused. The producer id is made up, with no
//! transaction coordinator behind it, so the broker runs with `transaction.partition.verification.enable=false`
//! (KIP-890's verification of the offsets partition would refuse it; tests/test_transactions_v2.py covers that).

use std::net::TcpStream;
use std::time::{Duration, Instant};

use protocol::messages::create_topics_request::CreatableTopic;
use protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
};
use protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use protocol::messages::{CreateTopicsRequest, OffsetFetchRequest, TxnOffsetCommitRequest};
use protocol::{ApiKey, RequestBody, ResponseBody};

mod common;
use common::{round_trip, Broker};

fn txn_commit(topic: &str) -> TxnOffsetCommitRequest {
    TxnOffsetCommitRequest {
        transactional_id: "tx".into(),
        group_id: "tg".into(),
        producer_id: 1000,
        producer_epoch: 0,
        generation_id_or_member_epoch: -1,
        topics: vec![TxnOffsetCommitRequestTopic {
            name: topic.into(),
            partitions: vec![TxnOffsetCommitRequestPartition {
                partition_index: 0,
                committed_offset: 5,
                committed_leader_epoch: -1,
                committed_metadata: Some(String::new()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// Error code and offset of partition t-0 in a v7 OffsetFetch of group "tg".
fn fetch_v7(stream: &mut TcpStream, require_stable: bool) -> (i16, i64) {
    let req = OffsetFetchRequest {
        group_id: "tg".into(),
        topics: Some(vec![OffsetFetchRequestTopic {
            name: "t".into(),
            partition_indexes: vec![0],
            ..Default::default()
        }]),
        require_stable,
        ..Default::default()
    };
    let ResponseBody::OffsetFetch(r) = round_trip(
        stream,
        ApiKey::OffsetFetch,
        7,
        RequestBody::OffsetFetch(req),
    ) else {
        panic!("not an OffsetFetch response")
    };
    let p = &r.topics[0].partitions[0];
    (p.error_code, p.committed_offset)
}

#[test]
fn txn_offsets_are_pending_and_unstable_for_require_stable() {
    let broker = Broker::start(&["--set", "transaction.partition.verification.enable=false"]);
    let mut s = broker.connect();
    let create = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: "t".into(),
            num_partitions: 1,
            replication_factor: 1,
            ..Default::default()
        }],
        timeout_ms: 10_000,
        ..Default::default()
    };
    let ResponseBody::CreateTopics(r) = round_trip(
        &mut s,
        ApiKey::CreateTopics,
        5,
        RequestBody::CreateTopics(create),
    ) else {
        panic!("not a CreateTopics response")
    };
    assert_eq!(r.topics[0].error_code, 0);

    // The coordinator may still be loading (14) or creating __consumer_offsets (15): retry briefly.
    let deadline = Instant::now() + Duration::from_secs(20);
    let code = loop {
        let body = RequestBody::TxnOffsetCommit(txn_commit("t"));
        let ResponseBody::TxnOffsetCommit(r) = round_trip(&mut s, ApiKey::TxnOffsetCommit, 3, body)
        else {
            panic!("not a TxnOffsetCommit response")
        };
        let code = r.topics[0].partitions[0].error_code;
        if !matches!(code, 14 | 15) || Instant::now() > deadline {
            break code;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(code, 0, "log: {}", broker.log());

    assert_eq!(
        fetch_v7(&mut s, false),
        (0, -1),
        "pending offsets are not visible"
    );
    assert_eq!(fetch_v7(&mut s, true), (88, -1), "UNSTABLE_OFFSET_COMMIT");

    let req = OffsetFetchRequest {
        groups: vec![OffsetFetchRequestGroup {
            group_id: "tg".into(),
            topics: Some(vec![OffsetFetchRequestTopics {
                name: "t".into(),
                partition_indexes: vec![0],
                ..Default::default()
            }]),
            ..Default::default()
        }],
        require_stable: true,
        ..Default::default()
    };
    let ResponseBody::OffsetFetch(r) = round_trip(
        &mut s,
        ApiKey::OffsetFetch,
        8,
        RequestBody::OffsetFetch(req),
    ) else {
        panic!("not an OffsetFetch response")
    };
    assert_eq!(r.groups[0].error_code, 0);
    assert_eq!(r.groups[0].topics[0].partitions[0].error_code, 88);

    let body = RequestBody::TxnOffsetCommit(txn_commit("nope"));
    let ResponseBody::TxnOffsetCommit(r) = round_trip(&mut s, ApiKey::TxnOffsetCommit, 0, body)
    else {
        panic!("not a TxnOffsetCommit response")
    };
    assert_eq!(
        r.topics[0].partitions[0].error_code, 3,
        "UNKNOWN_TOPIC_OR_PARTITION"
    );
}
