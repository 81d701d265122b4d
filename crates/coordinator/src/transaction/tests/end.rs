//! EndTxn under TV1 and TV2, markers and completion (Kafka's `endTransaction` / `endTransactionWithTV1`,
//! `prepareAbortOrCommit`, `prepareComplete`, KIP-890 part 2).

use types::{ErrorCode, ProducerEpoch, ProducerId};

use super::*;

#[test]
fn tv1_commit_prepares_answers_writes_markers_then_completes() {
    // Kafka: PrepareCommit appended → answer NONE → markers sent → CompleteCommit appended.
    let mut h = H::tv2();
    let (pid, e) = h.ongoing("t", TV1);
    h.now += 50;
    let s = h.end("t", (pid, e), COMMIT, TV1);
    assert_eq!(s.response(), TxnResult::error(ErrorCode::NONE));
    assert_eq!(s.records.len(), 1);
    let v = s.records[0].value.as_ref().unwrap();
    assert_eq!(
        (v.state, v.producer_epoch),
        (TransactionState::PrepareCommit, e)
    );
    assert_eq!(
        s.markers,
        vec![TxnMarkers {
            transactional_id: "t".into(),
            producer_id: pid,
            producer_epoch: e,
            result: COMMIT,
            coordinator_epoch: 7,
            partitions: [tp("t", 0)].into_iter().collect(),
            transaction_version: TransactionVersion::TV_0,
        }]
    );
    // Completion is pending while the markers are written.
    assert_eq!(
        h.md("t").pending_state,
        Some(TransactionState::CompleteCommit)
    );
    let done = h.markers_done("t");
    let v = done.records[0].value.as_ref().unwrap();
    assert_eq!(v.state, TransactionState::CompleteCommit);
    assert!(v.partitions.is_empty());
    let md = h.md("t");
    assert_eq!(
        (md.state, md.producer_epoch),
        (TransactionState::CompleteCommit, e)
    );
    assert!(md.partitions.is_empty());
    // Markers reported twice, or under another coordinator epoch, are ignored.
    assert!(h.c.markers_written("t", 7, h.now).is_empty());
}

#[test]
fn tv1_end_answers_per_state() {
    // Kafka's TV1 table: retry of the same end → NONE (Complete*) or CONCURRENT_TRANSACTIONS (Prepare*);
    // the other end → INVALID_TXN_STATE; Empty → INVALID_TXN_STATE.
    let mut h = H::tv2();
    let pe = h.init_ok("t");
    assert_eq!(
        h.end("t", pe, COMMIT, TV1).response().error_code,
        ErrorCode::INVALID_TXN_STATE
    );
    assert_eq!(
        h.end("t", pe, ABORT, TV1).response().error_code,
        ErrorCode::INVALID_TXN_STATE
    );
    h.add("t", pe, &[tp("a", 0)], TV1);
    h.end("t", pe, ABORT, TV1);
    assert_eq!(h.state("t"), TransactionState::PrepareAbort);
    assert_eq!(
        h.end("t", pe, ABORT, TV1).response().error_code,
        ErrorCode::CONCURRENT_TRANSACTIONS
    );
    assert_eq!(
        h.end("t", pe, COMMIT, TV1).response().error_code,
        ErrorCode::CONCURRENT_TRANSACTIONS
    );
    h.markers_done("t");
    assert_eq!(
        h.end("t", pe, ABORT, TV1).response().error_code,
        ErrorCode::NONE
    );
    assert_eq!(
        h.end("t", pe, COMMIT, TV1).response().error_code,
        ErrorCode::INVALID_TXN_STATE
    );
    h.add("t", pe, &[tp("a", 0)], TV1);
    h.end("t", pe, COMMIT, TV1);
    h.markers_done("t");
    assert_eq!(
        h.end("t", pe, COMMIT, TV1).response().error_code,
        ErrorCode::NONE
    );
    assert_eq!(
        h.end("t", pe, ABORT, TV1).response().error_code,
        ErrorCode::INVALID_TXN_STATE
    );
}

#[test]
fn prepare_commit_with_abort_is_invalid_txn_state_once_nothing_is_pending() {
    // Kafka: while the completion is pending any end gets CONCURRENT_TRANSACTIONS (the pending check comes
    // first); with nothing pending, PrepareCommit + abort → INVALID_TXN_STATE and + commit →
    // CONCURRENT_TRANSACTIONS. A completion append failing with a non-retriable error leaves it so.
    let mut h = H::tv2();
    let fx = h.reload_with(
        "t",
        value(TransactionState::PrepareCommit, 5, 3, &[tp("a", 0)]),
    );
    assert_eq!(h.settle(fx).markers.len(), 1);
    assert_eq!(
        h.md("t").pending_state,
        Some(TransactionState::CompleteCommit)
    );
    let pe = (ProducerId(5), ProducerEpoch(3));
    assert_eq!(
        h.end("t", pe, ABORT, TV1).response().error_code,
        ErrorCode::CONCURRENT_TRANSACTIONS
    );
    let fx = h.c.markers_written("t", 7, h.now);
    let TxnEffect::Append { append, .. } = fx[0] else {
        panic!()
    };
    assert!(h
        .c
        .append_completed(append, ErrorCode::MESSAGE_TOO_LARGE, h.now)
        .is_empty());
    assert_eq!(h.md("t").pending_state, None);
    assert_eq!(
        h.end("t", pe, ABORT, TV1).response().error_code,
        ErrorCode::INVALID_TXN_STATE
    );
    assert_eq!(
        h.end("t", pe, COMMIT, TV1).response().error_code,
        ErrorCode::CONCURRENT_TRANSACTIONS
    );
}

#[test]
fn tv1_end_errors() {
    // Kafka: INVALID_REQUEST, INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED (strict epoch from clients).
    let mut h = H::tv2();
    let (pid, e) = h.ongoing("t", TV1);
    assert_eq!(
        h.end("", (pid, e), COMMIT, TV1).response().error_code,
        ErrorCode::INVALID_REQUEST
    );
    assert_eq!(
        h.end("x", (pid, e), COMMIT, TV1).response().error_code,
        ErrorCode::INVALID_PRODUCER_ID_MAPPING
    );
    assert_eq!(
        h.end("t", (ProducerId(1), e), COMMIT, TV1)
            .response()
            .error_code,
        ErrorCode::INVALID_PRODUCER_ID_MAPPING
    );
    assert_eq!(
        h.end("t", (pid, ProducerEpoch(e.0 + 1)), COMMIT, TV1)
            .response()
            .error_code,
        ErrorCode::PRODUCER_FENCED
    );
    let p = h.c.partition_for("t");
    h.c.unload_partition(p, None);
    assert_eq!(
        h.end("t", (pid, e), COMMIT, TV1).response().error_code,
        ErrorCode::NOT_COORDINATOR
    );
}

#[test]
fn tv2_end_bumps_the_epoch_and_answers_the_next_one() {
    // KIP-890 part 2: every EndTxn bumps the epoch; the answer carries the producer id and epoch to use.
    let mut h = H::tv2();
    let (pid, e) = h.ongoing("t", TV2);
    let s = h.end("t", (pid, e), COMMIT, TV2);
    let next = ProducerEpoch(e.0 + 1);
    assert_eq!(s.response(), TxnResult::ok(pid, next));
    assert_eq!(s.markers[0].producer_epoch, next);
    assert_eq!(s.markers[0].transaction_version, TV2);
    assert_eq!(h.md("t").last_producer_epoch, e);
    h.markers_done("t");
    assert_eq!(h.pe("t"), (pid, next));
    // Retry with the pre-bump epoch: NONE with the current id and epoch, nothing written.
    let retry = h.end("t", (pid, e), COMMIT, TV2);
    assert_eq!(retry.response(), TxnResult::ok(pid, next));
    assert!(retry.records.is_empty());
    // The current epoch asking to commit again: INVALID_TXN_STATE.
    assert_eq!(
        h.end("t", (pid, next), COMMIT, TV2).response().error_code,
        ErrorCode::INVALID_TXN_STATE
    );
    // A retry of the other outcome: INVALID_TXN_STATE.
    assert_eq!(
        h.end("t", (pid, e), ABORT, TV2).response().error_code,
        ErrorCode::INVALID_TXN_STATE
    );
}

#[test]
fn tv2_abort_without_a_transaction_bumps_the_epoch() {
    // Kafka's TV2 table: Empty/CompleteCommit/CompleteAbort + abort at the current epoch → epoch bump
    // (PrepareAbort with no partition, completed without markers); Empty + commit → INVALID_TXN_STATE;
    // Empty + abort at the previous epoch → PRODUCER_FENCED.
    let mut h = H::tv2();
    let (pid, e) = h.init_ok("t");
    assert_eq!(
        h.end("t", (pid, e), COMMIT, TV2).response().error_code,
        ErrorCode::INVALID_TXN_STATE
    );
    let s = h.end("t", (pid, e), ABORT, TV2);
    assert_eq!(s.response(), TxnResult::ok(pid, ProducerEpoch(e.0 + 1)));
    assert!(s.markers.is_empty());
    let states: Vec<_> = s
        .records
        .iter()
        .map(|r| r.value.as_ref().unwrap().state)
        .collect();
    assert_eq!(
        states,
        vec![
            TransactionState::PrepareAbort,
            TransactionState::CompleteAbort
        ]
    );
    assert_eq!(h.state("t"), TransactionState::CompleteAbort);
    assert_eq!(h.md("t").txn_start_timestamp, h.now);
    let e1 = ProducerEpoch(e.0 + 1);
    // CompleteAbort + abort at the current epoch: another bump.
    assert_eq!(
        h.end("t", (pid, e1), ABORT, TV2).response(),
        TxnResult::ok(pid, ProducerEpoch(e.0 + 2))
    );
    // Epoch older than the retry epoch: fenced.
    assert_eq!(
        h.end("t", (pid, e), ABORT, TV2).response().error_code,
        ErrorCode::PRODUCER_FENCED
    );
    // From CompleteCommit: a current-epoch abort also starts and aborts an empty transaction.
    let e2 = ProducerEpoch(e.0 + 2);
    h.add("t", (pid, e2), &[tp("a", 0)], TV2);
    h.end("t", (pid, e2), COMMIT, TV2);
    h.markers_done("t");
    let e3 = ProducerEpoch(e.0 + 3);
    assert_eq!(
        h.end("t", (pid, e3), ABORT, TV2).response(),
        TxnResult::ok(pid, ProducerEpoch(e.0 + 4))
    );
    let mut h = H::tv2();
    let (pid, e) = h.init_ok("u");
    h.init_ok("u");
    assert_eq!(
        h.end("u", (pid, e), ABORT, TV2).response().error_code,
        ErrorCode::PRODUCER_FENCED
    );
}

#[test]
fn tv2_prepare_states_answer_retries_concurrent_and_fence_the_current_epoch() {
    // Kafka's TV2 validity: in PrepareCommit/PrepareAbort only the retry epoch (current - 1) is valid.
    let mut h = H::tv2();
    let (pid, e) = h.ongoing("t", TV2);
    h.end("t", (pid, e), COMMIT, TV2);
    let e1 = ProducerEpoch(e.0 + 1);
    assert_eq!(
        h.end("t", (pid, e), COMMIT, TV2).response().error_code,
        ErrorCode::CONCURRENT_TRANSACTIONS
    );
    assert_eq!(
        h.end("t", (pid, e1), COMMIT, TV2).response().error_code,
        ErrorCode::PRODUCER_FENCED
    );
}

#[test]
fn tv2_epoch_overflow_rotates_the_producer_id_at_completion() {
    // Kafka: an end bumping epoch i16::MAX - 1 allocates the next producer id; the answer is (new id, 0);
    // completion switches to it; a retry with (old id, MAX - 1) is answered NONE (retryOnOverflow).
    let mut h = H::tv2();
    let max1 = ProducerEpoch(i16::MAX - 1);
    h.reload_with(
        "t",
        value(TransactionState::Ongoing, 55, max1.0, &[tp("a", 0)]),
    );
    let old = (ProducerId(55), max1);
    let s = h.end("t", old, COMMIT, TV2);
    assert_eq!(
        s.response(),
        TxnResult::ok(ProducerId(1000), ProducerEpoch(0))
    );
    let v = s.records[0].value.as_ref().unwrap();
    assert_eq!(
        (v.producer_epoch, v.next_producer_id),
        (ProducerEpoch(i16::MAX), ProducerId(1000))
    );
    assert_eq!(s.markers[0].producer_id, ProducerId(55));
    assert_eq!(s.markers[0].producer_epoch, ProducerEpoch(i16::MAX));
    let done = h.markers_done("t");
    let v = done.records[0].value.as_ref().unwrap();
    assert_eq!(
        (v.producer_id, v.producer_epoch, v.previous_producer_id),
        (ProducerId(1000), ProducerEpoch(0), ProducerId(55))
    );
    assert_eq!(h.md("t").next_producer_id, ProducerId::NONE);
    let retry = h.end("t", old, COMMIT, TV2);
    assert_eq!(
        retry.response(),
        TxnResult::ok(ProducerId(1000), ProducerEpoch(0))
    );
}

#[test]
fn failed_prepare_append_rolls_back_to_ongoing() {
    // Kafka: a failed PrepareCommit append clears the pending state and answers the mapped error.
    let mut h = H::tv2();
    let pe = h.ongoing("t", TV1);
    let fx = h.end_fx("t", pe, COMMIT, TV1);
    let TxnEffect::Append { append, .. } = fx[0] else {
        panic!()
    };
    let fx =
        h.c.append_completed(append, ErrorCode::REQUEST_TIMED_OUT, h.now);
    assert!(
        matches!(fx.as_slice(), [TxnEffect::Respond { response, .. }]
        if response.error_code == ErrorCode::COORDINATOR_NOT_AVAILABLE)
    );
    assert_eq!(h.state("t"), TransactionState::Ongoing);
    assert_eq!(h.md("t").pending_state, None);
    assert_eq!(
        h.end("t", pe, COMMIT, TV1).response().error_code,
        ErrorCode::NONE
    );
}

#[test]
fn failed_completion_append_is_retried() {
    // Kafka's marker channel manager retries the completion append on COORDINATOR_NOT_AVAILABLE.
    let mut h = H::tv2();
    let pe = h.ongoing("t", TV1);
    h.end("t", pe, COMMIT, TV1);
    let fx = h.c.markers_written("t", 7, h.now);
    let TxnEffect::Append { append, .. } = fx[0] else {
        panic!()
    };
    let fx =
        h.c.append_completed(append, ErrorCode::NOT_ENOUGH_REPLICAS, h.now);
    assert!(matches!(fx.as_slice(), [TxnEffect::Append { .. }]));
    assert_eq!(
        h.md("t").pending_state,
        Some(TransactionState::CompleteCommit)
    );
    h.settle(fx);
    assert_eq!(h.state("t"), TransactionState::CompleteCommit);
}

#[test]
fn failed_epoch_fence_is_not_bumped_again() {
    // Kafka: when the fencing abort cannot be written, `hasFailedEpochFence` keeps the next fence from
    // bumping the (already bumped, never returned) epoch again.
    let mut h = H::tv1();
    let (_, e) = h.ongoing("t", TV1);
    let fx = h.init_fx("t", None);
    let TxnEffect::Append { append, record, .. } = &fx[0] else {
        panic!()
    };
    assert_eq!(
        record.value.as_ref().unwrap().producer_epoch,
        ProducerEpoch(e.0 + 1)
    );
    let fx =
        h.c.append_completed(*append, ErrorCode::NOT_ENOUGH_REPLICAS, h.now);
    assert!(
        matches!(fx.as_slice(), [TxnEffect::Respond { response, .. }]
        if response.error_code == ErrorCode::COORDINATOR_NOT_AVAILABLE)
    );
    let md = h.md("t");
    assert!(md.has_failed_epoch_fence);
    assert_eq!(
        (md.state, md.producer_epoch),
        (TransactionState::Ongoing, ProducerEpoch(e.0 + 1))
    );
    let s = h.init("t", None);
    assert_eq!(s.response().error_code, ErrorCode::CONCURRENT_TRANSACTIONS);
    assert_eq!(
        s.records[0].value.as_ref().unwrap().producer_epoch,
        ProducerEpoch(e.0 + 1)
    );
}
