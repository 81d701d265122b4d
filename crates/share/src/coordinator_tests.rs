use super::*;
use crate::records::encode_record;
use crate::state::DeliveryState;
use crate::state::DeliveryState::{Acknowledged, Archived, Available};

fn key(p: i32) -> SharePartitionKey {
    SharePartitionKey::new("g", Uuid::from_u128(42), p)
}

fn sb(first: i64, last: i64, state: DeliveryState, count: i16) -> StateBatch {
    StateBatch {
        first_offset: first,
        last_offset: last,
        delivery_state: state,
        delivery_count: count,
    }
}

fn write(
    state_epoch: i32,
    leader_epoch: i32,
    start: i64,
    batches: Vec<StateBatch>,
) -> WriteRequest {
    WriteRequest {
        state_epoch,
        leader_epoch,
        start_offset: start,
        delivery_complete_count: -1,
        batches,
    }
}

/// Replays `records` into a fresh coordinator, as a load from the log does.
fn reload(records: &[ShareRecord]) -> ShareCoordinator {
    let mut c = ShareCoordinator::new(50);
    for r in records {
        let (k, v) = encode_record(r);
        c.replay(&k, v.as_deref()).unwrap();
    }
    c
}

#[test]
fn kafka_uuid_strings_and_coordinator_keys() {
    // Kafka's Uuid.ONE_UUID (0, 1) prints as "AAAAAAAAAAAAAAAAAAAAAQ"; METADATA_TOPIC_ID (0, 1) too.
    assert_eq!(
        kafka_uuid_string(&Uuid::from_u128(1)),
        "AAAAAAAAAAAAAAAAAAAAAQ"
    );
    assert_eq!(kafka_uuid_string(&Uuid::nil()), "AAAAAAAAAAAAAAAAAAAAAA");
    // The Kafka formatter test's topic id "gtb2stGYRk-vWZ2zAozmoA", decoded by hand from base64url.
    let id = Uuid::from_bytes([
        0x82, 0xd6, 0xf6, 0xb2, 0xd1, 0x98, 0x46, 0x4f, 0xaf, 0x59, 0x9d, 0xb3, 0x02, 0x8c, 0xe6,
        0xa0,
    ]);
    assert_eq!(kafka_uuid_string(&id), "gtb2stGYRk-vWZ2zAozmoA");
    let k = SharePartitionKey::new("gs1", id, 0);
    assert_eq!(k.as_coordinator_key(), "gs1:gtb2stGYRk-vWZ2zAozmoA:0");
}

#[test]
fn partition_for_is_javas_hash_of_the_coordinator_key() {
    assert_eq!(java_string_hashcode("hello"), 99_162_322);
    assert_eq!(java_string_hashcode("polygenelubricants"), i32::MIN);
    let id = Uuid::from_u128(1);
    let h = java_string_hashcode("g:AAAAAAAAAAAAAAAAAAAAAQ:3");
    let want = if h == i32::MIN { 0 } else { h.abs() } % 50;
    assert_eq!(share_partition_for("g", id, 3, 50), want);
    assert_eq!(share_partition_for("g", id, 3, 0), 0);
    for p in 0..20 {
        assert!((0..7).contains(&share_partition_for("grp", id, p, 7)));
    }
}

#[test]
fn read_and_write_need_initialize() {
    let mut c = ShareCoordinator::new(50);
    assert_eq!(c.read(&key(0), 1, 0), Err(StateError::NotInitialized));
    assert_eq!(
        c.write(&key(0), &write(0, 1, 0, vec![]), 0),
        Err(StateError::NotInitialized)
    );
    assert_eq!(StateError::NotInitialized.code(), 42);
    assert_eq!(c.read_summary(&key(0), -1), Ok(None));
    let bad = SharePartitionKey::new("g", Uuid::nil(), -1);
    assert!(matches!(
        c.initialize(&bad, 0, 0, 0),
        Err(StateError::InvalidRequest(_))
    ));

    let rec = c.initialize(&key(0), 0, 10, 1_000).unwrap();
    let ShareRecord::Snapshot { value: Some(v), .. } = &rec else {
        panic!("{rec:?}")
    };
    assert_eq!(
        (
            v.snapshot_epoch,
            v.state_epoch,
            v.leader_epoch,
            v.start_offset
        ),
        (0, 0, -1, 10)
    );
    assert_eq!((v.create_timestamp, v.write_timestamp), (1_000, 1_000));
    let (state, rec) = c.read(&key(0), 3, 2_000).unwrap();
    assert_eq!(state, ShareState::initial(10));
    // The newer leader epoch is recorded.
    let Some(ShareRecord::Snapshot { value: Some(v), .. }) = rec else {
        panic!()
    };
    assert_eq!(
        (v.snapshot_epoch, v.leader_epoch, v.write_timestamp),
        (1, 3, 2_000)
    );
    // The same epoch again writes nothing.
    assert_eq!(c.read(&key(0), 3, 2_000).unwrap().1, None);
}

fn invalid<T>(r: Result<T, StateError>) -> bool {
    matches!(r, Err(StateError::InvalidRequest(_)))
}

#[test]
fn negative_epochs_are_invalid_requests() {
    let mut c = ShareCoordinator::new(50);
    assert!(invalid(c.initialize(&key(0), -1, 0, 0)));
    c.initialize(&key(0), 0, 0, 0).unwrap();
    assert!(invalid(c.read(&key(0), -1, 0)));
    assert!(invalid(c.write(&key(0), &write(-1, 0, 0, vec![]), 0)));
    assert!(invalid(c.write(&key(0), &write(0, -1, 0, vec![]), 0)));
    assert_eq!(StateError::InvalidRequest("x").code(), 42);
}

#[test]
fn older_leader_and_state_epochs_are_fenced() {
    let mut c = ShareCoordinator::new(50);
    c.initialize(&key(0), 2, 0, 0).unwrap();
    c.read(&key(0), 5, 0).unwrap();
    let fenced_leader = StateError::FencedLeaderEpoch {
        stored: 5,
        requested: 4,
    };
    assert_eq!(c.read(&key(0), 4, 0), Err(fenced_leader.clone()));
    assert_eq!(
        c.write(&key(0), &write(2, 4, 0, vec![]), 0),
        Err(fenced_leader.clone())
    );
    // The summary is not fenced (Kafka checks only the key).
    assert!(c.read_summary(&key(0), 4).unwrap().is_some());
    assert_eq!(fenced_leader.code(), 74);
    let fenced_state = StateError::FencedStateEpoch {
        stored: 2,
        requested: 1,
    };
    assert_eq!(
        c.write(&key(0), &write(1, 5, 0, vec![]), 0),
        Err(fenced_state.clone())
    );
    assert_eq!(fenced_state.code(), 124);
    // Leader fencing is checked first, as Kafka does.
    assert_eq!(
        c.write(&key(0), &write(1, 4, 0, vec![]), 0),
        Err(fenced_leader)
    );
    assert_eq!(c.initialize(&key(0), 1, 0, 0), Err(fenced_state));
    // Writes never move the stored epochs (KAFKA-19456): only initialize and read do.
    c.write(&key(0), &write(3, 6, -1, vec![]), 0).unwrap();
    let s = c.state(&key(0)).unwrap();
    assert_eq!((s.state_epoch, s.leader_epoch, s.start_offset), (2, 5, 0));
    c.read(&key(0), 6, 0).unwrap();
    assert_eq!(c.state(&key(0)).unwrap().leader_epoch, 6);
    // Re-initializing with a newer state epoch resets the batches, keeps the leader epoch.
    c.write(&key(0), &write(2, 6, 0, vec![sb(0, 3, Available, 1)]), 0)
        .unwrap();
    c.initialize(&key(0), 3, 100, 9).unwrap();
    let s = c.state(&key(0)).unwrap();
    assert_eq!((s.state_epoch, s.leader_epoch, s.start_offset), (3, 6, 100));
    assert!(s.batches.is_empty());
}

#[test]
fn writes_merge_over_the_stored_batches() {
    let mut c = ShareCoordinator::new(50);
    c.initialize(&key(0), 0, 0, 0).unwrap();
    c.read(&key(0), 1, 0).unwrap();
    let w1 = write(0, 1, 0, vec![sb(0, 9, Available, 1)]);
    c.write(&key(0), &w1, 10).unwrap();
    let w2 = write(
        0,
        1,
        3,
        vec![sb(3, 4, Acknowledged, 1), sb(6, 6, Archived, 1)],
    );
    let rec = c.write(&key(0), &w2, 20).unwrap();
    let want = vec![
        sb(3, 4, Acknowledged, 1),
        sb(5, 5, Available, 1),
        sb(6, 6, Archived, 1),
        sb(7, 9, Available, 1),
    ];
    let s = c.state(&key(0)).unwrap();
    assert_eq!(
        (s.start_offset, s.snapshot_epoch, s.write_timestamp),
        (3, 3, 20)
    );
    assert_eq!(s.batches, want);
    // The record is the full state.
    let ShareRecord::Snapshot { value: Some(v), .. } = &rec else {
        panic!()
    };
    assert_eq!(v.state_batches, want);
    // Start offset -1: unchanged.
    c.write(
        &key(0),
        &write(0, 1, -1, vec![sb(5, 5, Acknowledged, 1)]),
        30,
    )
    .unwrap();
    let s = c.state(&key(0)).unwrap();
    assert_eq!(s.start_offset, 3);
    assert_eq!(s.batches[0], sb(3, 5, Acknowledged, 1));
    let summary = c.read_summary(&key(0), -1).unwrap().unwrap();
    assert_eq!(
        (
            summary.start_offset,
            summary.leader_epoch,
            summary.state_epoch
        ),
        (3, 1, 0)
    );
}

#[test]
fn replay_rebuilds_what_the_operations_built() {
    let mut c = ShareCoordinator::new(50);
    let mut log = vec![c.initialize(&key(0), 0, 0, 0).unwrap()];
    log.push(c.initialize(&key(1), 0, 5, 0).unwrap());
    log.push(c.read(&key(0), 2, 0).unwrap().1.unwrap());
    log.push(
        c.write(&key(0), &write(0, 2, 0, vec![sb(0, 4, Available, 1)]), 1)
            .unwrap(),
    );
    log.push(
        c.write(&key(0), &write(0, 2, 2, vec![sb(2, 2, Acknowledged, 1)]), 2)
            .unwrap(),
    );
    log.push(c.delete(&key(1)).unwrap());
    assert_eq!(c.delete(&key(1)), None);
    let loaded = reload(&log);
    assert_eq!(loaded.state(&key(0)), c.state(&key(0)));
    assert_eq!(loaded.state(&key(1)), None);
    assert_eq!(loaded.len(), 1);
}

#[test]
fn replay_merges_kafkas_share_updates() {
    let update = |start: i64, leader: i32, batches| ShareRecord::Update {
        key: key(0),
        value: Some(crate::records::ShareUpdateValue {
            snapshot_epoch: 0,
            leader_epoch: leader,
            start_offset: start,
            delivery_complete_count: -1,
            state_batches: batches,
        }),
    };
    let mut c = ShareCoordinator::new(50);
    let snap = c.initialize(&key(0), 1, 0, 0).unwrap();
    let log = [
        snap,
        update(0, 3, vec![sb(0, 9, Available, 1)]),
        update(-1, -1, vec![sb(0, 1, Acknowledged, 1)]),
        update(1, -1, vec![]),
    ];
    let c = reload(&log);
    let s = c.state(&key(0)).unwrap();
    assert_eq!((s.state_epoch, s.leader_epoch, s.start_offset), (1, 3, 1));
    assert_eq!(
        s.batches,
        vec![sb(1, 1, Acknowledged, 1), sb(2, 9, Available, 1)]
    );
    // An update with no snapshot before it becomes the state; a ShareUpdate tombstone deletes.
    let c = reload(&[update(4, 1, vec![])]);
    assert_eq!(c.state(&key(0)).unwrap().state_epoch, -1);
    let c = reload(&[
        update(4, 1, vec![]),
        ShareRecord::Update {
            key: key(0),
            value: None,
        },
    ]);
    assert!(c.is_empty());
}

#[test]
fn unload_forgets_only_the_keys_of_that_partition() {
    let mut c = ShareCoordinator::new(3);
    for p in 0..30 {
        c.initialize(&key(p), 0, 0, 0).unwrap();
    }
    let target = c.partition_for(&key(0));
    let kept = (0..30)
        .filter(|p| c.partition_for(&key(*p)) != target)
        .count();
    c.unload_partition(target);
    assert_eq!(c.len(), kept);
    assert!(c.state(&key(0)).is_none());
    assert!((0..30)
        .filter(|p| c.partition_for(&key(*p)) != target)
        .all(|p| c.state(&key(p)).is_some()));
}

#[test]
fn the_delivery_complete_count_does_not_regress() {
    let mut c = ShareCoordinator::new(50);
    c.initialize(&key(0), 0, 10, 0).unwrap();
    c.read(&key(0), 0, 0).unwrap();
    let with = |start: i64, dcc: i32| WriteRequest {
        delivery_complete_count: dcc,
        ..write(0, 0, start, vec![])
    };
    let dcc = |c: &ShareCoordinator| c.state(&key(0)).unwrap().delivery_complete_count;
    c.write(&key(0), &with(10, 4), 0).unwrap();
    assert_eq!(dcc(&c), 4);
    c.write(&key(0), &with(10, 2), 0).unwrap(); // same start: the larger
    assert_eq!(dcc(&c), 4);
    c.write(&key(0), &with(12, 1), 0).unwrap(); // start moved on: the new one
    assert_eq!(dcc(&c), 1);
    c.write(&key(0), &with(11, 9), 0).unwrap(); // a late write behind the start: kept
    assert_eq!(dcc(&c), 1);
}
