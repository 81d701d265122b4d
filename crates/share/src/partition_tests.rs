use super::*;
use AcknowledgeType::{Accept, Gap, Reject, Release, Renew};

const LOCK: i64 = 30_000;

fn config(limit: i16, window: usize) -> SharePartitionConfig {
    SharePartitionConfig {
        record_lock_duration_ms: LOCK,
        delivery_count_limit: limit,
        max_in_flight_records: window,
    }
}

fn fresh() -> SharePartition {
    SharePartition::new(ShareState::initial(0), config(3, 100))
}

fn ack(first: i64, last: i64, types: &[AcknowledgeType]) -> AcknowledgementBatch {
    AcknowledgementBatch {
        first_offset: first,
        last_offset: last,
        types: types.to_vec(),
    }
}

fn range(first: i64, last: i64, count: i16) -> AcquiredRecords {
    AcquiredRecords {
        first_offset: first,
        last_offset: last,
        delivery_count: count,
    }
}

fn sb(first: i64, last: i64, state: DeliveryState, count: i16) -> StateBatch {
    StateBatch {
        first_offset: first,
        last_offset: last,
        delivery_state: state,
        delivery_count: count,
    }
}

fn acquired_by(sp: &SharePartition, offset: i64) -> Option<String> {
    match &sp.record(offset)?.state {
        RecordState::Acquired { member_id, .. } => Some(member_id.clone()),
        _ => None,
    }
}

#[test]
fn new_records_are_acquired_with_count_one_and_a_lock() {
    let mut sp = fresh();
    assert_eq!(sp.next_fetch_offset(), Some(0));
    let got = sp.acquire("m1", &[(0, 4), (5, 9)], 100, false, 1_000);
    assert_eq!(got, vec![range(0, 9, 1)]);
    assert_eq!((sp.start_offset(), sp.end_offset()), (0, 10));
    assert_eq!(sp.next_deadline(), Some(1_000 + LOCK));
    assert_eq!(sp.next_fetch_offset(), Some(10));
    assert_eq!(acquired_by(&sp, 3).as_deref(), Some("m1"));
    assert_eq!(sp.in_flight_counts().acquired, 10);
    sp.check_invariants();
}

#[test]
fn batch_mode_takes_whole_batches_and_strict_mode_stops_at_max() {
    let mut sp = fresh();
    // Batch-optimized: the first batch alone reaches 5 of max 3; the second batch is not started.
    let got = sp.acquire("m1", &[(0, 4), (5, 9)], 3, false, 0);
    assert_eq!(got, vec![range(0, 4, 1)]);
    assert_eq!(sp.end_offset(), 5);
    // Record-limit: exactly 3, splitting the batch.
    let got = sp.acquire("m2", &[(5, 9)], 3, true, 0);
    assert_eq!(got, vec![range(5, 7, 1)]);
    assert_eq!(sp.end_offset(), 8);
    sp.check_invariants();
}

#[test]
fn strict_mode_counts_redelivered_and_new_records_together() {
    let mut sp = fresh();
    sp.acquire("m1", &[(0, 4)], 10, false, 0);
    sp.acknowledge("m1", &[ack(2, 3, &[Release])], 0).unwrap();
    // 2 and 3 are available again; reading from 2 the leader gets the batch [0,4] then [5,9].
    assert_eq!(sp.next_fetch_offset(), Some(2));
    let got = sp.acquire("m2", &[(0, 4), (5, 9)], 4, true, 0);
    assert_eq!(got, vec![range(2, 3, 2), range(5, 6, 1)]);
    assert_eq!(acquired_by(&sp, 0).as_deref(), Some("m1"));
    sp.check_invariants();
}

#[test]
fn the_window_caps_new_records_and_next_fetch_offset() {
    let mut sp = SharePartition::new(ShareState::initial(0), config(3, 6));
    let got = sp.acquire("m1", &[(0, 9)], 100, false, 0);
    assert_eq!(got, vec![range(0, 5, 1)]);
    assert_eq!(sp.next_fetch_offset(), None);
    assert!(sp.acquire("m2", &[(6, 9)], 100, false, 0).is_empty());
    sp.acknowledge("m1", &[ack(0, 1, &[Accept])], 0).unwrap();
    assert_eq!(sp.start_offset(), 2);
    assert_eq!(sp.next_fetch_offset(), Some(6));
    let got = sp.acquire("m2", &[(0, 9)], 100, false, 0);
    assert_eq!(got, vec![range(6, 7, 1)]);
    sp.check_invariants();
}

#[test]
fn offsets_below_the_start_offset_are_never_acquired() {
    let mut sp = SharePartition::new(ShareState::initial(7), config(3, 100));
    // The log batch containing offset 7 starts at 5.
    let got = sp.acquire("m1", &[(5, 9)], 100, false, 0);
    assert_eq!(got, vec![range(7, 9, 1)]);
    sp.check_invariants();
}

#[test]
fn gaps_between_batches_are_skipped_and_the_start_offset_passes_them() {
    let mut sp = fresh();
    let got = sp.acquire("m1", &[(0, 1), (5, 6)], 100, false, 0);
    assert_eq!(got, vec![range(0, 1, 1), range(5, 6, 1)]);
    assert_eq!(sp.end_offset(), 7);
    sp.acknowledge("m1", &[ack(0, 1, &[Accept])], 0).unwrap();
    assert_eq!(sp.start_offset(), 5);
    // Nothing in flight: a gap before the next batch moves the window.
    sp.acknowledge("m1", &[ack(5, 6, &[Accept])], 0).unwrap();
    assert_eq!(sp.start_offset(), 7);
    let got = sp.acquire("m1", &[(500, 501)], 100, false, 0);
    assert_eq!(got, vec![range(500, 501, 1)]);
    assert_eq!(sp.start_offset(), 500);
    sp.check_invariants();
}

#[test]
fn accept_reject_gap_release_and_renew() {
    let mut sp = fresh();
    sp.acquire("m1", &[(0, 9)], 100, false, 0);
    let per_offset = [Accept, Reject, Gap, Release, Renew];
    sp.acknowledge("m1", &[ack(0, 4, &per_offset)], 5_000)
        .unwrap();
    // 0..=2 are done and leading: the start offset moves past them.
    assert_eq!(sp.start_offset(), 3);
    assert_eq!(sp.record(3).unwrap().state, RecordState::Available);
    assert_eq!(
        sp.record(4).unwrap().state,
        RecordState::Acquired {
            member_id: "m1".into(),
            lock_deadline_ms: 5_000 + LOCK
        }
    );
    sp.acknowledge("m1", &[ack(5, 9, &[Accept])], 0).unwrap();
    assert_eq!(sp.start_offset(), 3);
    let c = sp.in_flight_counts();
    assert_eq!(
        (c.available, c.acquired, c.acknowledged, c.archived),
        (1, 1, 5, 0)
    );
    assert_eq!(sp.delivery_complete_count(), 5);
    sp.check_invariants();
}

#[test]
fn acknowledge_validates_everything_before_applying_anything() {
    let mut sp = fresh();
    sp.acquire("m1", &[(0, 4)], 100, false, 0);
    sp.acquire("m2", &[(5, 9)], 100, false, 0);
    let before = sp.snapshot();
    let cases: Vec<(Vec<AcknowledgementBatch>, ShareError)> = vec![
        (
            vec![ack(0, 1, &[Accept]), ack(5, 5, &[Accept])],
            ShareError::InvalidRecordState { offset: 5 },
        ),
        (
            vec![ack(0, 2, &[Accept, Accept])],
            ShareError::InvalidRequest("acknowledge types must be one, or one per offset"),
        ),
        (
            vec![ack(3, 2, &[Accept])],
            ShareError::InvalidRequest("first offset above last offset"),
        ),
        (
            vec![ack(2, 3, &[Accept]), ack(0, 1, &[Accept])],
            ShareError::InvalidRequest("acknowledgement batches overlap or are out of order"),
        ),
        (
            vec![ack(3, 12, &[Accept])],
            ShareError::InvalidRecordState { offset: 5 },
        ),
        (
            vec![ack(40, 41, &[Accept])],
            ShareError::InvalidRecordState { offset: 40 },
        ),
        (
            vec![ack(0, i64::MAX, &[Accept])],
            ShareError::InvalidRecordState { offset: 0 },
        ),
    ];
    for (batches, want) in cases {
        assert_eq!(sp.acknowledge("m1", &batches, 0), Err(want.clone()));
        assert_eq!(sp.snapshot(), before, "{want:?} changed the state");
    }
    assert_eq!(ShareError::InvalidRecordState { offset: 0 }.code(), 121);
    assert_eq!(ShareError::InvalidRequest("x").code(), 42);
    // Acknowledging twice: the second finds the offsets no longer acquired.
    sp.acknowledge("m1", &[ack(0, 1, &[Accept])], 0).unwrap();
    assert_eq!(
        sp.acknowledge("m1", &[ack(1, 1, &[Accept])], 0),
        Err(ShareError::InvalidRecordState { offset: 1 })
    );
    sp.check_invariants();
}

#[test]
fn release_at_the_delivery_limit_archives() {
    let mut sp = SharePartition::new(ShareState::initial(0), config(2, 100));
    for round in 1..=2 {
        let got = sp.acquire("m1", &[(0, 1)], 100, false, 0);
        assert_eq!(got, vec![range(0, 1, round)]);
        sp.acknowledge("m1", &[ack(0, 1, &[Release])], 0).unwrap();
        sp.check_invariants();
    }
    // The second release archives both: the start offset moves past them.
    assert_eq!(sp.start_offset(), 2);
    assert_eq!(sp.next_fetch_offset(), Some(2));
    assert!(sp.acquire("m1", &[(0, 1)], 100, false, 0).is_empty());
}

#[test]
fn a_record_on_its_last_delivery_attempt_is_delivered_alone() {
    let mut sp = fresh(); // limit 3: the third delivery is the last
    sp.acquire("m1", &[(0, 3)], 100, false, 0);
    sp.acknowledge("m1", &[ack(0, 3, &[Release])], 0).unwrap();
    sp.acquire("m1", &[(0, 3)], 100, false, 0);
    sp.acknowledge("m1", &[ack(0, 0, &[Accept]), ack(1, 3, &[Release])], 0)
        .unwrap();
    // 1..=3 were delivered twice: each goes out alone, new records are not added to it.
    for offset in 1..=3 {
        let got = sp.acquire("m2", &[(0, 3), (4, 9)], 100, false, 0);
        assert_eq!(got, vec![range(offset, offset, 3)]);
    }
    // With records already taken, the acquisition stops before a last-attempt record.
    let mut sp = fresh();
    sp.acquire("m1", &[(0, 1)], 100, false, 0);
    sp.acknowledge("m1", &[ack(1, 1, &[Release])], 0).unwrap();
    sp.acquire("m1", &[(0, 1)], 100, false, 0);
    sp.acknowledge("m1", &[ack(0, 1, &[Release])], 0).unwrap();
    // 0 was delivered once, 1 twice.
    let got = sp.acquire("m2", &[(0, 1)], 100, false, 0);
    assert_eq!(got, vec![range(0, 0, 2)]);
    let got = sp.acquire("m2", &[(0, 1)], 100, false, 0);
    assert_eq!(got, vec![range(1, 1, 3)]);
    sp.check_invariants();
}

#[test]
fn available_records_before_the_first_read_batch_are_archived_as_compacted() {
    let mut sp = fresh();
    sp.acquire("m1", &[(0, 9)], 100, false, 0);
    sp.acknowledge("m1", &[ack(0, 9, &[Release])], 0).unwrap();
    // The log now starts its batches at 4 for a read from 0: 0..=3 were compacted away.
    let got = sp.acquire("m2", &[(4, 9)], 100, false, 0);
    assert_eq!(got, vec![range(4, 9, 2)]);
    assert_eq!(sp.start_offset(), 4);
    assert!(sp.record(2).is_none());
    sp.check_invariants();
}

#[test]
fn release_member_frees_only_its_records() {
    let mut sp = fresh();
    sp.acquire("m1", &[(0, 2)], 100, false, 0);
    sp.acquire("m2", &[(3, 5)], 100, false, 0);
    assert!(sp.release_member("m1", 0));
    assert!(!sp.release_member("m1", 0));
    assert_eq!(sp.record(1).unwrap().state, RecordState::Available);
    assert_eq!(acquired_by(&sp, 4).as_deref(), Some("m2"));
    assert_eq!(sp.next_fetch_offset(), Some(0));
    let got = sp.acquire("m2", &[(0, 2), (3, 5)], 100, false, 0);
    assert_eq!(got, vec![range(0, 2, 2)]);
    sp.check_invariants();
}

#[test]
fn expired_locks_are_released_by_tick() {
    let mut sp = fresh(); // limit 3
    sp.acquire("m1", &[(0, 1)], 100, false, 1_000);
    sp.acquire("m2", &[(2, 3)], 100, false, 2_000);
    assert_eq!(sp.next_deadline(), Some(1_000 + LOCK));
    assert!(!sp.tick(1_000 + LOCK - 1));
    assert!(sp.tick(1_000 + LOCK));
    assert_eq!(sp.record(0).unwrap().state, RecordState::Available);
    assert_eq!(sp.next_deadline(), Some(2_000 + LOCK));
    // Renew pushes m2's deadline out.
    sp.acknowledge("m2", &[ack(2, 3, &[Renew])], 10_000)
        .unwrap();
    assert!(!sp.tick(2_000 + LOCK));
    assert_eq!(sp.next_deadline(), Some(10_000 + LOCK));
    // The late acknowledgement of an expired lock fails.
    assert_eq!(
        sp.acknowledge("m1", &[ack(0, 0, &[Accept])], 0),
        Err(ShareError::InvalidRecordState { offset: 0 })
    );
    sp.check_invariants();
}

#[test]
fn expiry_at_the_delivery_limit_archives() {
    let mut sp = SharePartition::new(ShareState::initial(0), config(1, 100));
    sp.acquire("m1", &[(0, 0)], 100, false, 0);
    assert!(sp.tick(LOCK));
    assert_eq!(sp.start_offset(), 1);
    assert!(sp.record(0).is_none());
    sp.check_invariants();
}

#[test]
fn snapshot_writes_acquired_as_available_and_merges_runs() {
    let mut sp = fresh();
    sp.acquire("m1", &[(0, 9)], 100, false, 0);
    sp.acknowledge("m1", &[ack(3, 4, &[Accept]), ack(6, 6, &[Reject])], 0)
        .unwrap();
    sp.acknowledge("m1", &[ack(8, 9, &[Release])], 0).unwrap();
    let snap = sp.snapshot();
    assert_eq!(snap.start_offset, 0);
    assert_eq!(
        snap.batches,
        vec![
            sb(0, 2, DeliveryState::Available, 1),
            sb(3, 4, DeliveryState::Acknowledged, 1),
            sb(5, 5, DeliveryState::Available, 1),
            sb(6, 6, DeliveryState::Archived, 1),
            sb(7, 9, DeliveryState::Available, 1),
        ]
    );
    // Reloaded: everything not done is redelivered, with its count going on.
    let mut again = SharePartition::new(snap, config(3, 100));
    again.check_invariants();
    assert_eq!((again.start_offset(), again.end_offset()), (0, 10));
    let got = again.acquire("m2", &[(0, 9)], 100, false, 0);
    assert_eq!(got, vec![range(0, 2, 2), range(5, 5, 2), range(7, 9, 2)]);
    again.check_invariants();
}

#[test]
fn new_drops_batches_below_the_start_and_archives_exhausted_offsets() {
    let persisted = ShareState {
        state_epoch: 4,
        start_offset: 10,
        batches: vec![
            sb(0, 11, DeliveryState::Available, 1),
            sb(12, 12, DeliveryState::Available, 3),
            sb(13, 14, DeliveryState::Acknowledged, 1),
            sb(15, 15, DeliveryState::Available, 0),
        ],
    };
    let sp = SharePartition::new(persisted, config(3, 100));
    sp.check_invariants();
    assert_eq!(sp.state_epoch(), 4);
    assert_eq!((sp.start_offset(), sp.end_offset()), (10, 16));
    assert_eq!(sp.record(12).unwrap().state, RecordState::Archived);
    assert!(sp.record(9).is_none());
    assert_eq!(sp.next_fetch_offset(), Some(10));
    // Everything done: the start offset reaches the end.
    let persisted = ShareState {
        state_epoch: 0,
        start_offset: 3,
        batches: vec![sb(3, 7, DeliveryState::Archived, 2)],
    };
    let sp = SharePartition::new(persisted, config(3, 100));
    assert_eq!((sp.start_offset(), sp.end_offset()), (8, 8));
    sp.check_invariants();
}

#[test]
fn reset_start_offset_inside_and_outside_the_window() {
    let mut sp = fresh();
    sp.acquire("m1", &[(0, 9)], 100, false, 0);
    sp.reset_start_offset(4);
    assert_eq!((sp.start_offset(), sp.end_offset()), (4, 10));
    assert!(sp.record(3).is_none());
    assert_eq!(
        sp.acknowledge("m1", &[ack(2, 2, &[Accept])], 0),
        Err(ShareError::InvalidRecordState { offset: 2 })
    );
    sp.check_invariants();
    sp.reset_start_offset(50);
    assert_eq!((sp.start_offset(), sp.end_offset()), (50, 50));
    assert_eq!(sp.in_flight_counts(), InFlightCounts::default());
    sp.reset_start_offset(20);
    assert_eq!((sp.start_offset(), sp.end_offset()), (20, 20));
    assert_eq!(sp.next_fetch_offset(), Some(20));
    sp.check_invariants();
}

#[test]
fn the_log_start_only_moves_the_start_offset_forward() {
    let mut sp = fresh();
    sp.acquire("m1", &[(0, 9)], 100, false, 0);
    sp.log_start_offset_moved(0);
    assert_eq!(sp.start_offset(), 0);
    sp.log_start_offset_moved(6);
    assert_eq!((sp.start_offset(), sp.end_offset()), (6, 10));
    sp.log_start_offset_moved(3);
    assert_eq!(sp.start_offset(), 6);
    sp.check_invariants();
}

#[test]
fn acknowledge_type_ids() {
    for (id, t) in [(0, Gap), (1, Accept), (2, Release), (3, Reject), (4, Renew)] {
        assert_eq!(AcknowledgeType::from_id(id), Some(t));
        assert_eq!(t as i8, id);
    }
    assert_eq!(AcknowledgeType::from_id(5), None);
}

#[test]
fn extreme_offsets_do_not_overflow() {
    let mut sp = fresh();
    sp.reset_start_offset(-5);
    assert_eq!(sp.start_offset(), 0);
    sp.reset_start_offset(i64::MAX - 3);
    let got = sp.acquire("m1", &[(i64::MAX - 3, i64::MAX - 1)], 100, false, 0);
    assert_eq!(got, vec![range(i64::MAX - 3, i64::MAX - 1, 1)]);
    assert_eq!(sp.end_offset(), i64::MAX);
    assert_eq!(
        sp.acknowledge("m1", &[ack(i64::MAX - 3, i64::MAX, &[Accept])], 0),
        Err(ShareError::InvalidRecordState {
            offset: i64::MAX - 3
        })
    );
    sp.acknowledge("m1", &[ack(i64::MAX - 3, i64::MAX - 1, &[Accept])], 0)
        .unwrap();
    assert_eq!(sp.start_offset(), i64::MAX);
    sp.check_invariants();
}

#[test]
fn a_stored_state_past_the_span_bound_is_cut_at_it() {
    let persisted = ShareState {
        state_epoch: 0,
        start_offset: 10,
        batches: vec![sb(10, i64::MAX, DeliveryState::Available, 1)],
    };
    let sp = SharePartition::new(persisted, config(5, 100));
    assert_eq!(sp.in_flight.len() as i64, crate::state::MAX_STATE_SPAN);
    assert_eq!(sp.end_offset, 10 + crate::state::MAX_STATE_SPAN);
}
