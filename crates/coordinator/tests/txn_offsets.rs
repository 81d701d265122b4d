//! Transactional offset commits (TxnOffsetCommit, KIP-98 / KIP-447): pending offsets, their completion by
//! COMMIT/ABORT, require_stable, loading with markers, and ordering against plain commits; injected time.

mod common;

use common::*;
use coordinator::*;
use types::{ErrorCode, LeaderEpoch, Offset, ProducerEpoch, ProducerId};

const G: &str = "g";
const PID: ProducerId = ProducerId(7);

fn txn_req(group: &str, generation: i32, member: &str, offset: i64) -> TxnOffsetCommitRequest {
    TxnOffsetCommitRequest {
        group_id: group.into(),
        producer_id: PID,
        producer_epoch: ProducerEpoch(2),
        generation_id: generation,
        member_id: member.into(),
        group_instance_id: None,
        topics: vec![(
            TOPIC.into(),
            vec![OffsetCommitPartition {
                partition_index: 0,
                committed_offset: Offset(offset),
                committed_leader_epoch: LeaderEpoch(1),
                committed_metadata: Some("txn".into()),
            }],
        )],
    }
}

fn txn_commit(h: &mut H, group: &str, offset: i64) -> ErrorCode {
    let out =
        h.c.txn_offset_commit(h.now, &txn_req(group, -1, "", offset));
    out.response[0].1[0].1
}

fn fetch_stable(h: &H, group: &str) -> OffsetFetchPartition {
    h.c.fetch_offsets_stable(group, Some(&[(TOPIC.into(), vec![0])]), true)
        .topics[0]
        .1[0]
        .clone()
}

fn value(offset: i64) -> OffsetCommitValue {
    OffsetCommitValue {
        offset: Offset(offset),
        leader_epoch: LeaderEpoch::NONE,
        metadata: String::new(),
        commit_timestamp: 1,
        expire_timestamp: -1,
    }
}

fn record(offset: i64) -> GroupRecord {
    GroupRecord::OffsetCommit {
        group: G.into(),
        topic: TOPIC.into(),
        partition: 0,
        value: Some(value(offset)),
    }
}

#[test]
fn txn_commit_is_pending_until_committed() {
    let mut h = H::new();
    let out = h.c.txn_offset_commit(h.now, &txn_req(G, -1, "", 42));
    assert_eq!(
        out.response,
        vec![(TOPIC.into(), vec![(0, ErrorCode::NONE)])]
    );
    let txn: Vec<_> = out
        .effects
        .iter()
        .filter_map(|e| match e {
            Effect::PersistTransactional {
                producer_id,
                producer_epoch,
                record,
            } => Some((*producer_id, *producer_epoch, record.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(txn.len(), 1);
    assert_eq!((txn[0].0, txn[0].1), (PID, ProducerEpoch(2)));
    assert!(persisted(&out.effects).is_empty());
    // Not visible to OffsetFetch; require_stable reports it.
    assert_eq!(h.committed(G), -1);
    assert!(h.c.has_pending_transactional_offsets(G, TOPIC, 0));
    assert!(!h.c.has_pending_transactional_offsets(G, TOPIC, 1));
    let p = fetch_stable(&h, G);
    assert_eq!(p.error_code, ErrorCode::UNSTABLE_OFFSET_COMMIT);
    assert_eq!(p.committed_offset, Offset::NONE);
    h.now += 10;
    let fx = h.c.complete_transaction(h.now, PID, true);
    assert!(persisted(&fx).is_empty());
    assert_eq!(h.committed(G), 42);
    assert!(!h.c.has_pending_transactional_offsets(G, TOPIC, 0));
    let p = fetch_stable(&h, G);
    assert_eq!(
        (p.error_code, p.committed_offset),
        (ErrorCode::NONE, Offset(42))
    );
    assert_eq!(p.metadata, "txn");
}

#[test]
fn abort_drops_pending_and_keeps_committed() {
    let mut h = H::new();
    assert_eq!(h.commit(G, -1, "", 5), ErrorCode::NONE);
    assert_eq!(txn_commit(&mut h, G, 42), ErrorCode::NONE);
    assert_eq!(h.committed(G), 5);
    h.c.complete_transaction(h.now, PID, false);
    assert_eq!(h.committed(G), 5);
    assert!(!h.c.has_pending_transactional_offsets(G, TOPIC, 0));
    // Unknown producer: nothing happens.
    h.c.complete_transaction(h.now, ProducerId(99), true);
    assert_eq!(h.committed(G), 5);
}

#[test]
fn require_stable_lists_all_offsets_with_unstable_partitions() {
    let mut h = H::new();
    assert_eq!(h.commit(G, -1, "", 5), ErrorCode::NONE);
    assert_eq!(txn_commit(&mut h, G, 42), ErrorCode::NONE);
    let all = h.c.fetch_offsets_stable(G, None, true);
    assert_eq!(
        all.topics[0].1[0].error_code,
        ErrorCode::UNSTABLE_OFFSET_COMMIT
    );
    let plain = h.c.fetch_offsets_stable(G, None, false);
    assert_eq!(plain.topics[0].1[0].committed_offset, Offset(5));
    assert_eq!(plain.topics[0].1[0].error_code, ErrorCode::NONE);
}

#[test]
fn later_plain_commit_wins_over_earlier_txn_commit() {
    let mut h = H::new();
    assert_eq!(txn_commit(&mut h, G, 100), ErrorCode::NONE);
    assert_eq!(h.commit(G, -1, "", 200), ErrorCode::NONE);
    h.c.complete_transaction(h.now, PID, true);
    assert_eq!(h.committed(G), 200, "the plain commit's record is later");

    // A plain commit before the transactional one is replaced by it.
    let mut h = H::new();
    assert_eq!(h.commit(G, -1, "", 200), ErrorCode::NONE);
    assert_eq!(txn_commit(&mut h, G, 100), ErrorCode::NONE);
    h.c.complete_transaction(h.now, PID, true);
    assert_eq!(h.committed(G), 100);
}

#[test]
fn member_validation_follows_kafka() {
    let mut h = H::new();
    let ids = stable_group(&mut h, G, 1);
    let generation = h.c.group_generation(G).unwrap();
    let code =
        |h: &mut H, r: TxnOffsetCommitRequest| h.c.txn_offset_commit(h.now, &r).response[0].1[0].1;
    assert_eq!(
        code(&mut h, txn_req(G, generation, &ids[0], 1)),
        ErrorCode::NONE
    );
    assert_eq!(
        code(&mut h, txn_req(G, generation + 1, &ids[0], 1)),
        ErrorCode::ILLEGAL_GENERATION
    );
    assert_eq!(
        code(&mut h, txn_req(G, generation, "nobody", 1)),
        ErrorCode::UNKNOWN_MEMBER_ID
    );
    let mut r = txn_req(G, generation, &ids[0], 1);
    r.group_instance_id = Some("unknown-instance".into());
    assert_eq!(code(&mut h, r), ErrorCode::UNKNOWN_MEMBER_ID);
    // No group metadata (v0–v2 or a producer without it): accepted even though the group has members.
    assert_eq!(code(&mut h, txn_req(G, -1, "", 1)), ErrorCode::NONE);
    // Unknown group: only without a generation.
    assert_eq!(
        code(&mut h, txn_req("other", 1, "m", 1)),
        ErrorCode::ILLEGAL_GENERATION
    );
    assert!(!h.c.has_group("other"));
    assert_eq!(code(&mut h, txn_req("simple", -1, "", 1)), ErrorCode::NONE);
    assert!(h.c.has_group("simple"));
}

#[test]
fn fenced_static_member_is_refused() {
    let mut h = H::new();
    let mut req = join_req(G, "");
    req.group_instance_id = Some("i1".into());
    let (rid, _) = h.join(req);
    let fx = h.advance(6_000);
    let id = join_resp(&fx, rid).expect("join response").member_id;
    let generation = h.c.group_generation(G).unwrap();
    let mut r = txn_req(G, generation, "someone-else", 1);
    r.group_instance_id = Some("i1".into());
    let out = h.c.txn_offset_commit(h.now, &r);
    assert_eq!(out.response[0].1[0].1, ErrorCode::FENCED_INSTANCE_ID);
    let mut r = txn_req(G, generation, &id, 1);
    r.group_instance_id = Some("i1".into());
    let out = h.c.txn_offset_commit(h.now, &r);
    assert_eq!(out.response[0].1[0].1, ErrorCode::NONE);
}

#[test]
fn replay_completes_pending_offsets_with_markers() {
    let mut c = GroupCoordinator::new(test_config());
    c.replay_entry(ReplayEntry::Record {
        offset: 0,
        producer_id: None,
        record: record(5),
    });
    c.replay_entry(ReplayEntry::Record {
        offset: 1,
        producer_id: Some(PID),
        record: record(10),
    });
    c.replay_entry(ReplayEntry::Record {
        offset: 2,
        producer_id: Some(ProducerId(8)),
        record: GroupRecord::OffsetCommit {
            group: G.into(),
            topic: TOPIC.into(),
            partition: 1,
            value: Some(value(77)),
        },
    });
    assert!(c.has_pending_transactional_offsets(G, TOPIC, 0));
    let committed = |c: &GroupCoordinator, p: i32| {
        c.fetch_offsets(G, Some(&[(TOPIC.into(), vec![p])])).topics[0].1[0].committed_offset
    };
    assert_eq!(committed(&c, 0), Offset(5));
    c.replay_entry(ReplayEntry::EndTransaction {
        offset: 3,
        producer_id: PID,
        commit: true,
        offsets_partition: (partition_for(G, 50), 50),
    });
    c.replay_entry(ReplayEntry::EndTransaction {
        offset: 4,
        producer_id: ProducerId(8),
        commit: false,
        offsets_partition: (partition_for(G, 50), 50),
    });
    c.loaded(0);
    assert_eq!(committed(&c, 0), Offset(10));
    assert_eq!(committed(&c, 1), Offset::NONE);
    assert!(!c.has_pending_transactional_offsets(G, TOPIC, 1));
}

#[test]
fn replay_keeps_the_later_record_and_leaves_open_transactions_pending() {
    let mut c = GroupCoordinator::new(test_config());
    c.replay_entry(ReplayEntry::Record {
        offset: 10,
        producer_id: Some(PID),
        record: record(100),
    });
    c.replay_entry(ReplayEntry::Record {
        offset: 11,
        producer_id: None,
        record: record(200),
    });
    c.replay_entry(ReplayEntry::Record {
        offset: 12,
        producer_id: Some(ProducerId(8)),
        record: record(300),
    });
    c.replay_entry(ReplayEntry::EndTransaction {
        offset: 13,
        producer_id: PID,
        commit: true,
        offsets_partition: (partition_for(G, 50), 50),
    });
    c.loaded(0);
    let f = c.fetch_offsets(G, Some(&[(TOPIC.into(), vec![0])]));
    assert_eq!(f.topics[0].1[0].committed_offset, Offset(200));
    // Producer 8's transaction is still open after loading; its marker arrives live.
    assert!(c.has_pending_transactional_offsets(G, TOPIC, 0));
    c.complete_transaction(1, ProducerId(8), true);
    let f = c.fetch_offsets(G, Some(&[(TOPIC.into(), vec![0])]));
    assert_eq!(f.topics[0].1[0].committed_offset, Offset(300));
}

#[test]
fn completion_is_per_partition_of_groups() {
    let mut h = H::new();
    assert_eq!(txn_commit(&mut h, "a", 1), ErrorCode::NONE);
    assert_eq!(txn_commit(&mut h, "b", 2), ErrorCode::NONE);
    h.c.complete_transaction_for(h.now, PID, true, |g| g == "a");
    assert_eq!(h.committed("a"), 1);
    assert_eq!(h.committed("b"), -1);
    assert!(h.c.has_pending_transactional_offsets("b", TOPIC, 0));
    h.c.complete_transaction_for(h.now, PID, true, |g| g == "b");
    assert_eq!(h.committed("b"), 2);
}

#[test]
fn deleting_offsets_or_groups_drops_pending_offsets() {
    let mut h = H::new();
    assert_eq!(txn_commit(&mut h, G, 1), ErrorCode::NONE);
    let out = h.c.delete_offsets(h.now, G, &[(TOPIC.into(), vec![0])]);
    assert_eq!(out.response.error_code, ErrorCode::NONE);
    assert_eq!(
        persisted(&out.effects).len(),
        1,
        "a tombstone for the pending offset"
    );
    assert!(!h.c.has_pending_transactional_offsets(G, TOPIC, 0));
    h.c.complete_transaction(h.now, PID, true);
    assert_eq!(h.committed(G), -1);

    assert_eq!(txn_commit(&mut h, G, 1), ErrorCode::NONE);
    let out = h.c.delete_groups(h.now, &[G.to_string()]);
    assert_eq!(out.response[0].1, ErrorCode::NONE);
    assert!(!h.c.has_pending_transactional_offsets(G, TOPIC, 0));
}

#[test]
fn failed_write_restores_pending_offsets() {
    let mut h = H::new();
    let parts = [(TOPIC.to_string(), 0)];
    let snap = h.c.txn_offsets_snapshot(PID, "fresh", &parts);
    assert_eq!(txn_commit(&mut h, "fresh", 1), ErrorCode::NONE);
    h.c.restore_txn_offsets(snap);
    assert!(!h.c.has_pending_transactional_offsets("fresh", TOPIC, 0));
    assert!(
        !h.c.has_group("fresh"),
        "the group the failed commit created is gone"
    );
}

#[test]
fn pending_offsets_are_not_expired_by_retention() {
    let mut h = H::new();
    assert_eq!(h.commit(G, -1, "", 5), ErrorCode::NONE);
    assert_eq!(txn_commit(&mut h, G, 6), ErrorCode::NONE);
    let retention = h.c.config().offsets_retention_ms;
    h.advance(retention + h.c.config().offsets_retention_check_interval_ms + 1);
    assert_eq!(h.committed(G), 5, "kept while a transaction is open on it");
    h.c.complete_transaction(h.now, PID, true);
    assert_eq!(h.committed(G), 6);
}

#[test]
fn a_replayed_marker_completes_only_its_partitions_groups() {
    let mut c = GroupCoordinator::new(test_config());
    c.replay_entry(ReplayEntry::Record {
        offset: 0,
        producer_id: Some(PID),
        record: record(10),
    });
    let other = (partition_for(G, 50) + 1) % 50;
    c.replay_entry(ReplayEntry::EndTransaction {
        offset: 0,
        producer_id: PID,
        commit: true,
        offsets_partition: (other, 50),
    });
    assert!(c.has_pending_transactional_offsets(G, TOPIC, 0));
    c.replay_entry(ReplayEntry::EndTransaction {
        offset: 1,
        producer_id: PID,
        commit: true,
        offsets_partition: (partition_for(G, 50), 50),
    });
    assert!(!c.has_pending_transactional_offsets(G, TOPIC, 0));
    let f = c.fetch_offsets(G, Some(&[(TOPIC.into(), vec![0])]));
    assert_eq!(f.topics[0].1[0].committed_offset, Offset(10));
}
