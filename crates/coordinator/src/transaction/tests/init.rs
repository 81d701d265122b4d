//! InitProducerId (Kafka's `handleInitProducerId` / `prepareInitProducerIdTransit`, KIP-98, KIP-360).

use types::{ErrorCode, ProducerEpoch, ProducerId};

use super::*;

#[test]
fn idempotent_producer_gets_a_fresh_id_at_epoch_0_without_a_write() {
    // Kafka: a null transactional id is accepted blindly with a new producer id and epoch 0.
    let mut h = H::tv2();
    let fx = h.c.init_producer_id(5, None, 60_000, None, T0);
    assert_eq!(
        fx,
        vec![TxnEffect::Respond {
            request: 5,
            response: TxnResult::ok(ProducerId(1000), ProducerEpoch(0))
        }]
    );
}

#[test]
fn empty_transactional_id_is_invalid_request() {
    // Kafka: an empty transactional id gets INVALID_REQUEST, as the producer client would refuse it.
    let mut h = H::tv2();
    let fx = h.c.init_producer_id(1, Some(""), 60_000, None, T0);
    assert_eq!(
        h.settle(fx).response().error_code,
        ErrorCode::INVALID_REQUEST
    );
    // Longer than a record key's INT16 length: refused rather than stored truncated.
    let long = "x".repeat(i16::MAX as usize + 1);
    let fx = h.c.init_producer_id(1, Some(&long), 60_000, None, T0);
    assert_eq!(
        h.settle(fx).response().error_code,
        ErrorCode::INVALID_REQUEST
    );
    assert!(h.c.metadata(&long).is_none());
}

#[test]
fn transaction_timeout_is_checked_against_the_maximum() {
    // Kafka's `validateTransactionTimeoutMs`: 0 < timeout <= transaction.max.timeout.ms.
    let mut h = H::tv2();
    for bad in [0, -1, 900_001] {
        let fx = h.c.init_producer_id(1, Some("t"), bad, None, T0);
        assert_eq!(
            h.settle(fx).response().error_code,
            ErrorCode::INVALID_TRANSACTION_TIMEOUT,
            "{bad}"
        );
    }
    let fx = h.c.init_producer_id(1, Some("t"), 900_000, None, T0);
    assert_eq!(h.settle(fx).response().error_code, ErrorCode::NONE);
    assert_eq!(h.md("t").txn_timeout_ms, 900_000);
}

#[test]
fn new_transactional_id_is_answered_only_after_its_record_is_written() {
    // Kafka: metadata is created (epoch -1), the Empty transition at epoch 0 is appended, and the callback
    // of the append answers.
    let mut h = H::tv2();
    let fx = h.init_fx("t", None);
    assert_eq!(fx.len(), 1);
    let TxnEffect::Append {
        append,
        partition,
        coordinator_epoch,
        record,
    } = &fx[0]
    else {
        panic!("{fx:?}")
    };
    assert_eq!(*partition, h.c.partition_for("t"));
    assert_eq!(*coordinator_epoch, 7);
    let v = record.value.as_ref().unwrap();
    assert_eq!(
        (v.state, v.producer_epoch, v.version),
        (TransactionState::Empty, ProducerEpoch(0), 1)
    );
    // Not applied yet: the pending state blocks other transitions.
    assert_eq!(h.md("t").producer_epoch, ProducerEpoch::NONE);
    assert_eq!(h.md("t").pending_state, Some(TransactionState::Empty));
    assert_eq!(
        h.init("t", None).response().error_code,
        ErrorCode::CONCURRENT_TRANSACTIONS
    );
    let fx = h.c.append_completed(*append, ErrorCode::NONE, T0);
    assert_eq!(
        fx,
        vec![TxnEffect::Respond {
            request: 2,
            response: TxnResult::ok(ProducerId(1000), ProducerEpoch(0))
        }]
    );
    assert_eq!(h.state("t"), TransactionState::Empty);
    assert_eq!(h.md("t").pending_state, None);
}

#[test]
fn second_init_bumps_the_epoch_and_fences_the_first_producer() {
    // KIP-98 zombie fencing: a new instance's InitProducerId bumps the epoch; the old epoch is fenced.
    let mut h = H::tv2();
    let first = h.init_ok("t");
    let second = h.init_ok("t");
    assert_eq!(second, (first.0, ProducerEpoch(1)));
    assert_eq!(
        h.add("t", first, &[tp("a", 0)], TV1),
        ErrorCode::PRODUCER_FENCED
    );
    assert_eq!(h.add("t", second, &[tp("a", 0)], TV1), ErrorCode::NONE);
}

#[test]
fn kip360_expected_epoch_bumps_retries_and_fences() {
    // Kafka's `prepareIncrementProducerEpoch`: expected == current bumps and remembers the last epoch;
    // expected == last epoch is a retry answered with the current epoch; anything else is fenced.
    let mut h = H::tv2();
    let (pid, e0) = h.init_ok("t");
    let r = h.init("t", Some((pid, e0))).response();
    assert_eq!(
        (r.error_code, r.producer_epoch),
        (ErrorCode::NONE, ProducerEpoch(1))
    );
    assert_eq!(h.md("t").last_producer_epoch, e0);
    let retry = h.init("t", Some((pid, e0))).response();
    assert_eq!(
        (retry.error_code, retry.producer_epoch),
        (ErrorCode::NONE, ProducerEpoch(1))
    );
    // A plain InitProducerId (no expected epoch) forgets the last epoch: the old retry is now fenced.
    assert_eq!(h.init_ok("t").1, ProducerEpoch(2));
    assert_eq!(
        h.init("t", Some((pid, e0))).response().error_code,
        ErrorCode::PRODUCER_FENCED
    );
    // An expected producer id that is neither current nor previous is fenced.
    assert_eq!(
        h.init("t", Some((ProducerId(4242), ProducerEpoch(2))))
            .response()
            .error_code,
        ErrorCode::PRODUCER_FENCED
    );
}

#[test]
fn kip360_any_expected_id_is_accepted_for_metadata_just_created() {
    // Kafka: producer epoch -1 (metadata just created) accepts any expected id: a producer recovering from
    // UNKNOWN_PRODUCER_ID after its transactional id expired.
    let mut h = H::tv2();
    let r = h
        .init("t", Some((ProducerId(77), ProducerEpoch(3))))
        .response();
    assert_eq!(r, TxnResult::ok(ProducerId(1000), ProducerEpoch(0)));
}

#[test]
fn init_while_ongoing_fences_aborts_and_answers_concurrent_transactions_tv1() {
    // Kafka: Ongoing → PrepareEpochFence (epoch + 1, in memory), then an abort written with that epoch; the
    // request gets CONCURRENT_TRANSACTIONS so that the client retries and bumps again.
    let mut h = H::tv1();
    let (pid, e) = h.ongoing("t", TV1);
    let s = h.init("t", None);
    assert_eq!(s.response().error_code, ErrorCode::CONCURRENT_TRANSACTIONS);
    let v = s.records[0].value.as_ref().unwrap();
    assert_eq!(
        (v.state, v.producer_epoch),
        (TransactionState::PrepareAbort, ProducerEpoch(e.0 + 1))
    );
    assert_eq!(s.markers.len(), 1);
    let m = &s.markers[0];
    assert_eq!(
        (m.producer_id, m.producer_epoch, m.result),
        (pid, ProducerEpoch(e.0 + 1), ABORT)
    );
    // While the markers are written the retry still gets CONCURRENT_TRANSACTIONS.
    assert_eq!(
        h.init("t", None).response().error_code,
        ErrorCode::CONCURRENT_TRANSACTIONS
    );
    h.markers_done("t");
    assert_eq!(h.state("t"), TransactionState::CompleteAbort);
    assert_eq!(h.init_ok("t"), (pid, ProducerEpoch(e.0 + 2)));
}

#[test]
fn init_while_ongoing_under_tv2_bumps_once_in_the_abort() {
    // Kafka 4.1+ (KAFKA-19367): under TV2 the fence does not bump the epoch itself; the TV2 abort's bump
    // is the only one. The retry then bumps again.
    let mut h = H::tv2();
    let (pid, e) = h.ongoing("t", TV2);
    let s = h.init("t", None);
    assert_eq!(s.response().error_code, ErrorCode::CONCURRENT_TRANSACTIONS);
    let v = s.records[0].value.as_ref().unwrap();
    assert_eq!(
        (v.state, v.producer_epoch),
        (TransactionState::PrepareAbort, ProducerEpoch(e.0 + 1))
    );
    assert_eq!(s.markers[0].producer_epoch, ProducerEpoch(e.0 + 1));
    h.markers_done("t");
    assert_eq!(h.init_ok("t"), (pid, ProducerEpoch(e.0 + 2)));
}

#[test]
fn failed_tv2_fence_leaves_the_epoch_and_the_retry_bumps_once() {
    // KAFKA-19367 follow-up: a TV2 fence whose abort cannot be written changed nothing (no failed-fence
    // flag); the retried InitProducerId aborts at epoch + 1 and answers CONCURRENT_TRANSACTIONS, and the
    // client's next retry gets epoch + 2.
    let mut h = H::tv2();
    let (pid, e) = h.ongoing("t", TV2);
    let fx = h.init_fx("t", None);
    let TxnEffect::Append { append, .. } = fx[0] else {
        panic!()
    };
    h.c.append_completed(append, ErrorCode::NOT_ENOUGH_REPLICAS, h.now);
    let md = h.md("t");
    assert_eq!(
        (md.state, md.producer_epoch, md.has_failed_epoch_fence),
        (TransactionState::Ongoing, e, false)
    );
    let s = h.init("t", None);
    assert_eq!(s.response().error_code, ErrorCode::CONCURRENT_TRANSACTIONS);
    h.markers_done("t");
    assert_eq!(h.pe("t"), (pid, ProducerEpoch(e.0 + 1)));
    assert_eq!(h.init_ok("t"), (pid, ProducerEpoch(e.0 + 2)));
}

#[test]
fn init_during_prepare_commit_is_concurrent_transactions() {
    // Kafka: PrepareCommit/PrepareAbort → CONCURRENT_TRANSACTIONS (retriable).
    let mut h = H::tv2();
    let pe = h.ongoing("t", TV1);
    let s = h.end("t", pe, COMMIT, TV1);
    assert_eq!(s.response().error_code, ErrorCode::NONE);
    assert_eq!(h.state("t"), TransactionState::PrepareCommit);
    assert_eq!(
        h.init("t", None).response().error_code,
        ErrorCode::CONCURRENT_TRANSACTIONS
    );
}

#[test]
fn exhausted_epoch_rotates_to_a_new_producer_id() {
    // Kafka's `prepareProducerIdRotation`: at epoch >= i16::MAX - 1 a new producer id at epoch 0 is issued.
    let mut h = H::tv2();
    h.reload_with(
        "t",
        value(TransactionState::CompleteCommit, 55, i16::MAX - 1, &[]),
    );
    let r = h.init("t", None).response();
    assert_eq!(r, TxnResult::ok(ProducerId(1000), ProducerEpoch(0)));
    assert_eq!(h.md("t").prev_producer_id, ProducerId(55));
    assert_eq!(h.md("t").last_producer_epoch, ProducerEpoch::NONE);
}

#[test]
fn kip360_retry_after_rotation_is_answered_with_the_new_id() {
    // Kafka: expected = (previous id, exhausted epoch) is a retry of the rotation; the last epoch kept by
    // the rotation makes it a no-bump retry.
    let mut h = H::tv2();
    h.reload_with("t", value(TransactionState::Empty, 55, i16::MAX - 1, &[]));
    let old = (ProducerId(55), ProducerEpoch(i16::MAX - 1));
    let r = h.init("t", Some(old)).response();
    assert_eq!(r, TxnResult::ok(ProducerId(1000), ProducerEpoch(0)));
    assert_eq!(h.md("t").last_producer_epoch, old.1);
    let retry = h.init("t", Some(old)).response();
    assert_eq!(retry, TxnResult::ok(ProducerId(1000), ProducerEpoch(0)));
}

#[test]
fn producer_id_source_errors_are_answered() {
    // Kafka: `Errors.forException` of the producer id manager's failure (COORDINATOR_LOAD_IN_PROGRESS
    // while no block is at hand).
    let mut h = H::tv2();
    h.pids.fail.store(true, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(
        h.init("t", None).response().error_code,
        ErrorCode::COORDINATOR_LOAD_IN_PROGRESS
    );
    let fx = h.c.init_producer_id(1, None, 1, None, T0);
    assert_eq!(
        h.settle(fx).response().error_code,
        ErrorCode::COORDINATOR_LOAD_IN_PROGRESS
    );
    assert!(h.c.metadata("t").is_none());
}

#[test]
fn failed_append_rolls_back_and_maps_the_error() {
    // Kafka's `appendTransactionToLog`: the pending state is cleared and NOT_ENOUGH_REPLICAS is answered
    // as COORDINATOR_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER as NOT_COORDINATOR.
    let mut h = H::tv2();
    h.init_ok("t");
    for (append_error, answer) in [
        (
            ErrorCode::NOT_ENOUGH_REPLICAS,
            ErrorCode::COORDINATOR_NOT_AVAILABLE,
        ),
        (
            ErrorCode::NOT_LEADER_OR_FOLLOWER,
            ErrorCode::NOT_COORDINATOR,
        ),
        (
            ErrorCode::MESSAGE_TOO_LARGE,
            ErrorCode::UNKNOWN_SERVER_ERROR,
        ),
    ] {
        let fx = h.init_fx("t", None);
        let TxnEffect::Append { append, .. } = fx[0] else {
            panic!()
        };
        let fx = h.c.append_completed(append, append_error, T0);
        let [TxnEffect::Respond { response, .. }] = fx.as_slice() else {
            panic!("{fx:?}")
        };
        assert_eq!(response.error_code, answer);
        assert_eq!(h.md("t").pending_state, None);
        assert_eq!(h.md("t").producer_epoch, ProducerEpoch(0));
    }
    assert_eq!(h.init_ok("t").1, ProducerEpoch(1));
}

#[test]
fn not_coordinator_and_loading() {
    // Kafka's `getTransactionState`: loading partition → COORDINATOR_LOAD_IN_PROGRESS; not owned →
    // NOT_COORDINATOR.
    let mut h = H::tv2();
    let p = h.c.partition_for("t");
    h.c.load_partition(p, 8);
    assert_eq!(
        h.init("t", None).response().error_code,
        ErrorCode::COORDINATOR_LOAD_IN_PROGRESS
    );
    h.c.unload_partition(p, Some(8));
    assert_eq!(
        h.init("t", None).response().error_code,
        ErrorCode::NOT_COORDINATOR
    );
}

#[test]
fn resignation_answers_parked_requests_not_coordinator() {
    // Kafka: an append completing after the coordinator epoch changed answers NOT_COORDINATOR.
    let mut h = H::tv2();
    let fx = h.init_fx("t", None);
    let TxnEffect::Append { append, .. } = fx[0] else {
        panic!()
    };
    let p = h.c.partition_for("t");
    let fx = h.c.unload_partition(p, Some(7));
    assert_eq!(
        fx,
        vec![TxnEffect::Respond {
            request: 2,
            response: TxnResult::error(ErrorCode::NOT_COORDINATOR)
        }]
    );
    assert!(h.c.append_completed(append, ErrorCode::NONE, T0).is_empty());
    // A stale resignation (other epoch) is ignored.
    h.c.load_partition(p, 9);
    h.c.loaded(p, T0);
    h.c.unload_partition(p, Some(8));
    assert!(!h.c.is_loading(p));
    assert_eq!(
        h.c.owned_partitions().iter().find(|(q, _)| *q == p),
        Some(&(p, 9))
    );
}

#[test]
fn producer_fenced_is_invalid_producer_epoch_for_old_clients() {
    // KIP-588 / Kafka's `KafkaApis`: older request versions get INVALID_PRODUCER_EPOCH.
    use ErrorCode as E;
    assert_eq!(
        producer_fenced_for_version(E::PRODUCER_FENCED, TxnApi::InitProducerId, 3),
        E::INVALID_PRODUCER_EPOCH
    );
    assert_eq!(
        producer_fenced_for_version(E::PRODUCER_FENCED, TxnApi::InitProducerId, 4),
        E::PRODUCER_FENCED
    );
    assert_eq!(
        producer_fenced_for_version(E::PRODUCER_FENCED, TxnApi::EndTxn, 1),
        E::INVALID_PRODUCER_EPOCH
    );
    assert_eq!(
        producer_fenced_for_version(E::PRODUCER_FENCED, TxnApi::AddOffsetsToTxn, 2),
        E::PRODUCER_FENCED
    );
    assert_eq!(
        producer_fenced_for_version(E::PRODUCER_FENCED, TxnApi::AddPartitionsToTxn, 1),
        E::INVALID_PRODUCER_EPOCH
    );
    assert_eq!(
        producer_fenced_for_version(E::NONE, TxnApi::EndTxn, 0),
        E::NONE
    );
}

#[test]
fn metadata_whose_first_init_failed_stays_at_epoch_minus_1() {
    // Kafka keeps the metadata created by a failed first InitProducerId (epoch -1); a request presenting
    // epoch -1 then fails Kafka's `prepareTransitionTo` epoch check (IllegalArgumentException →
    // UNKNOWN_SERVER_ERROR), and the next InitProducerId starts at epoch 0.
    let mut h = H::tv2();
    let fx = h.init_fx("t", None);
    let TxnEffect::Append { append, .. } = fx[0] else {
        panic!()
    };
    h.c.append_completed(append, ErrorCode::NOT_ENOUGH_REPLICAS, h.now);
    let pe = h.pe("t");
    assert_eq!(pe.1, ProducerEpoch::NONE);
    assert_eq!(
        h.add("t", pe, &[tp("a", 0)], TV1),
        ErrorCode::UNKNOWN_SERVER_ERROR
    );
    assert_eq!(h.md("t").pending_state, None);
    assert_eq!(h.init_ok("t"), (pe.0, ProducerEpoch(0)));
}

#[test]
fn exhausted_epoch_with_another_expected_epoch_is_an_unknown_server_error() {
    // Kafka: the id is not rotated (the expected epoch is not the current one) and
    // `prepareIncrementProducerEpoch` refuses an exhausted epoch with IllegalStateException, answered as
    // UNKNOWN_SERVER_ERROR; nothing is left pending.
    let mut h = H::tv2();
    h.reload_with("t", value(TransactionState::Empty, 55, i16::MAX - 1, &[]));
    let r = h
        .init("t", Some((ProducerId(55), ProducerEpoch(3))))
        .response();
    assert_eq!(r.error_code, ErrorCode::UNKNOWN_SERVER_ERROR);
    assert_eq!(h.md("t").pending_state, None);
    assert_eq!(h.init_ok("t"), (ProducerId(1000), ProducerEpoch(0)));
}
