//! AddPartitionsToTxn, its verify-only form (KIP-890 part 1) and AddOffsetsToTxn (Kafka's
//! `handleAddPartitionsToTransaction`, `handleVerifyPartitionsInTransaction`).

use types::{ErrorCode, ProducerEpoch, ProducerId};

use super::*;

#[test]
fn first_add_starts_the_transaction() {
    // Kafka's `prepareAddPartitions`: Empty → Ongoing, start timestamp = now; the record lists the partitions.
    let mut h = H::tv2();
    let pe = h.init_ok("t");
    h.now = T0 + 5;
    let fx = h.add_fx("t", pe, &[tp("a", 1), tp("a", 0), tp("b", 3)], TV1);
    let s = h.settle(fx);
    assert_eq!(s.response().error_code, ErrorCode::NONE);
    let v = s.records[0].value.as_ref().unwrap();
    assert_eq!(v.state, TransactionState::Ongoing);
    assert_eq!(v.partitions.len(), 3);
    let md = h.md("t");
    assert_eq!(
        (md.state, md.txn_start_timestamp),
        (TransactionState::Ongoing, T0 + 5)
    );
    assert_eq!(md.client_transaction_version, TV1);
}

#[test]
fn adding_known_partitions_answers_at_once_and_new_ones_extend() {
    // Kafka: "if the partitions are already in the metadata reply OK immediately"; otherwise Ongoing →
    // Ongoing keeps the start time and unions the partitions.
    let mut h = H::tv2();
    let pe = h.ongoing("t", TV1);
    let fx = h.add_fx("t", pe, &[tp("t", 0)], TV1);
    assert!(
        matches!(fx.as_slice(), [TxnEffect::Respond { response, .. }] if response.error_code == ErrorCode::NONE)
    );
    h.now += 10;
    assert_eq!(h.add("t", pe, &[tp("u", 2)], TV1), ErrorCode::NONE);
    let md = h.md("t");
    assert_eq!(md.partitions.len(), 2);
    assert_eq!(md.txn_start_timestamp, T0);
    assert_eq!(md.txn_last_update_timestamp, T0 + 10);
}

#[test]
fn add_partitions_errors() {
    // Kafka: INVALID_REQUEST (empty id), INVALID_PRODUCER_ID_MAPPING (unknown id / other producer id),
    // PRODUCER_FENCED (other epoch), CONCURRENT_TRANSACTIONS (pending or Prepare*).
    let mut h = H::tv2();
    let (pid, e) = h.ongoing("t", TV1);
    let p = [tp("x", 0)];
    assert_eq!(h.add("", (pid, e), &p, TV1), ErrorCode::INVALID_REQUEST);
    assert_eq!(
        h.add("nope", (pid, e), &p, TV1),
        ErrorCode::INVALID_PRODUCER_ID_MAPPING
    );
    assert_eq!(
        h.add("t", (ProducerId(1), e), &p, TV1),
        ErrorCode::INVALID_PRODUCER_ID_MAPPING
    );
    assert_eq!(
        h.add("t", (pid, ProducerEpoch(e.0 + 1)), &p, TV1),
        ErrorCode::PRODUCER_FENCED
    );
    // A pending transition (append not acknowledged yet) is checked before the producer id and epoch
    // (KAFKA-18660: across a TV2 overflow the producer may already use the pending new producer id).
    let fx = h.add_fx("t", (pid, e), &p, TV1);
    assert!(matches!(fx[0], TxnEffect::Append { .. }));
    let y = [tp("y", 0)];
    assert_eq!(
        h.add("t", (pid, e), &y, TV1),
        ErrorCode::CONCURRENT_TRANSACTIONS
    );
    assert_eq!(
        h.add("t", (ProducerId(1), e), &y, TV1),
        ErrorCode::CONCURRENT_TRANSACTIONS
    );
    h.settle(fx);
    h.end("t", (pid, e), COMMIT, TV1);
    assert_eq!(h.state("t"), TransactionState::PrepareCommit);
    assert_eq!(
        h.add("t", (pid, e), &p, TV1),
        ErrorCode::CONCURRENT_TRANSACTIONS
    );
}

#[test]
fn add_after_a_completed_transaction_starts_a_new_one() {
    // Kafka: CompleteCommit → Ongoing is legal and restarts the start timestamp.
    let mut h = H::tv2();
    let pe = h.ongoing("t", TV1);
    h.end("t", pe, COMMIT, TV1);
    h.markers_done("t");
    h.now += 100;
    assert_eq!(h.add("t", pe, &[tp("z", 0)], TV1), ErrorCode::NONE);
    let md = h.md("t");
    assert_eq!(
        (md.state, md.txn_start_timestamp),
        (TransactionState::Ongoing, T0 + 100)
    );
    assert_eq!(md.partitions.len(), 1);
}

#[test]
fn add_offsets_adds_the_group_offsets_partition() {
    // Kafka's AddOffsetsToTxn: the group's __consumer_offsets partition joins the transaction.
    let mut h = H::tv2();
    let (pid, e) = h.init_ok("t");
    let r = h.request();
    let fx = h.c.add_offsets_to_txn(r, "t", pid, e, 17, TV1, h.now);
    assert_eq!(h.settle(fx).response().error_code, ErrorCode::NONE);
    assert!(h.md("t").partitions.contains(&tp("__consumer_offsets", 17)));
    let fx =
        h.c.add_offsets_to_txn(r, "t", pid, ProducerEpoch(9), 17, TV1, h.now);
    assert_eq!(
        h.settle(fx).response().error_code,
        ErrorCode::PRODUCER_FENCED
    );
}

#[test]
fn verify_only_reports_partitions_not_in_the_transaction_as_abortable() {
    // KIP-890 part 1: NONE for partitions in the transaction, TRANSACTION_ABORTABLE for others; no write.
    let mut h = H::tv2();
    let (pid, e) = h.ongoing("t", TV1);
    let got =
        h.c.verify_partitions_in_txn("t", pid, e, &[tp("t", 0), tp("t", 1)]);
    assert_eq!(
        got,
        vec![
            (tp("t", 0), ErrorCode::NONE),
            (tp("t", 1), ErrorCode::TRANSACTION_ABORTABLE)
        ]
    );
    let all =
        |h: &mut H, id: &str, pid, e| h.c.verify_partitions_in_txn(id, pid, e, &[tp("t", 0)])[0].1;
    assert_eq!(all(&mut h, "", pid, e), ErrorCode::INVALID_REQUEST);
    assert_eq!(
        all(&mut h, "x", pid, e),
        ErrorCode::INVALID_PRODUCER_ID_MAPPING
    );
    assert_eq!(
        all(&mut h, "t", ProducerId(3), e),
        ErrorCode::INVALID_PRODUCER_ID_MAPPING
    );
    assert_eq!(
        all(&mut h, "t", pid, ProducerEpoch(4)),
        ErrorCode::PRODUCER_FENCED
    );
    h.end("t", (pid, e), ABORT, TV1);
    assert_eq!(all(&mut h, "t", pid, e), ErrorCode::CONCURRENT_TRANSACTIONS);
}
