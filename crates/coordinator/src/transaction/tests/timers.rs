//! `tick`: aborting timed-out transactions and expiring idle transactional ids (Kafka's
//! `abortTimedOutTransactions`, `removeExpiredTransactionalIds`).

use types::{ErrorCode, ProducerEpoch};

use super::*;

#[test]
fn scans_are_scheduled_at_their_intervals() {
    // Kafka schedules both scans periodically (10 s and 1 h by default).
    let h = H::tv2();
    assert_eq!(h.c.next_deadline(), Some(T0 + 10_000));
    let mut c =
        TransactionCoordinator::new(TransactionConfig::default(), Box::new(Pids::default()));
    assert_eq!(c.next_deadline(), None);
    assert!(c.tick(5).is_empty());
    assert_eq!(c.next_deadline(), Some(5 + 10_000));
}

#[test]
fn timed_out_transaction_is_fenced_and_aborted() {
    // Kafka: an Ongoing transaction open longer than its timeout (start + timeout < now) is fenced
    // (epoch + 1) and aborted with that epoch, TV1 server level; the producer's next request is fenced.
    let mut h = H::tv1();
    let (pid, e) = h.ongoing("t", TV1); // timeout 60 s, started at T0
    let fx = h.c.tick(T0 + 60_000);
    assert!(
        fx.is_empty(),
        "start + timeout == now is not yet timed out: {fx:?}"
    );
    h.now = T0 + 60_001;
    let fx = h.c.tick(h.now);
    assert!(fx.is_empty(), "no scan due yet");
    h.now = T0 + 70_000;
    let fx = h.c.tick(h.now);
    let s = h.settle(fx);
    assert!(s.responses.is_empty());
    let v = s.records[0].value.as_ref().unwrap();
    assert_eq!(
        (v.state, v.producer_epoch),
        (TransactionState::PrepareAbort, ProducerEpoch(e.0 + 1))
    );
    assert_eq!(s.markers[0].result, ABORT);
    assert_eq!(h.c.next_deadline(), Some(T0 + 80_000));
    h.markers_done("t");
    assert_eq!(h.state("t"), TransactionState::CompleteAbort);
    assert_eq!(
        h.add("t", (pid, e), &[tp("a", 0)], TV1),
        ErrorCode::PRODUCER_FENCED
    );
    assert_eq!(
        h.end("t", (pid, e), COMMIT, TV1).response().error_code,
        ErrorCode::PRODUCER_FENCED
    );
}

#[test]
fn timed_out_transaction_under_tv2_ends_one_epoch_up() {
    // Kafka 4.1+ (TV2 server level, KAFKA-19367): the fence does not bump; the TV2 abort bumps once.
    let mut h = H::tv2();
    let (_, e) = h.ongoing("t", TV2);
    h.now = T0 + 70_000;
    let fx = h.c.tick(h.now);
    let s = h.settle(fx);
    assert_eq!(
        s.records[0].value.as_ref().unwrap().producer_epoch,
        ProducerEpoch(e.0 + 1)
    );
}

#[test]
fn transactions_with_a_pending_transition_are_not_timed_out() {
    // Kafka: `timedOutTransactions` skips metadata with a pending transition.
    let mut h = H::tv1();
    let pe = h.ongoing("t", TV1);
    let fx = h.add_fx("t", pe, &[tp("b", 0)], TV1);
    assert!(matches!(fx[0], TxnEffect::Append { .. }));
    h.now = T0 + 70_000;
    assert!(h.c.tick(h.now).is_empty());
}

#[test]
fn idle_transactional_ids_expire_with_a_tombstone() {
    // Kafka: Empty/CompleteCommit/CompleteAbort ids whose last update is at least
    // transactional.id.expiration.ms old become Dead, a tombstone is written, and they leave the cache.
    let config = TransactionConfig {
        transactional_id_expiration_ms: 1_000,
        remove_expired_transactional_ids_interval_ms: 500,
        ..TransactionConfig::default()
    };
    let mut h = H::new(config);
    h.init_ok("idle");
    let pe = h.ongoing("busy", TV1);
    h.now = T0 + 500;
    let fx = h.c.tick(T0 + 500);
    assert!(fx.is_empty(), "not idle long enough: {fx:?}");
    h.now = T0 + 1_000;
    let fx = h.c.tick(h.now);
    let TxnEffect::Append { append, record, .. } = &fx[0] else {
        panic!("{fx:?}")
    };
    assert_eq!(fx.len(), 1, "Ongoing ids never expire");
    assert_eq!(
        record,
        &TransactionLogRecord {
            transactional_id: "idle".into(),
            value: None
        }
    );
    assert_eq!(h.md("idle").pending_state, Some(TransactionState::Dead));
    assert!(h
        .c
        .append_completed(*append, ErrorCode::NONE, h.now)
        .is_empty());
    assert!(h.c.metadata("idle").is_none());
    assert_eq!(
        h.c.describe_transactions(&["idle".into()])[0].error_code,
        ErrorCode::TRANSACTIONAL_ID_NOT_FOUND
    );
    assert_eq!(h.state("busy"), TransactionState::Ongoing);
    assert_eq!(h.add("busy", pe, &[tp("t", 0)], TV1), ErrorCode::NONE);
}

#[test]
fn failed_tombstone_keeps_the_transactional_id() {
    // Kafka: when the tombstone append fails, the pending Dead is cleared and the id stays.
    let config = TransactionConfig {
        transactional_id_expiration_ms: 1_000,
        remove_expired_transactional_ids_interval_ms: 1_000,
        ..TransactionConfig::default()
    };
    let mut h = H::new(config);
    let pe = h.init_ok("idle");
    h.now = T0 + 1_000;
    let fx = h.c.tick(h.now);
    let TxnEffect::Append { append, .. } = fx[0] else {
        panic!()
    };
    assert!(h
        .c
        .append_completed(append, ErrorCode::NOT_ENOUGH_REPLICAS, h.now)
        .is_empty());
    assert_eq!(
        (h.state("idle"), h.md("idle").pending_state),
        (TransactionState::Empty, None)
    );
    assert_eq!(h.add("idle", pe, &[tp("a", 0)], TV1), ErrorCode::NONE);
}
