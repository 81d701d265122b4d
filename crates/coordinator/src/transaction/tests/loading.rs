//! Loading and unloading `__transaction_state` partitions, replay, Describe/ListTransactions
//! (Kafka's `loadTransactionsForTxnTopicPartition`, `handleDescribeTransactions`, `listTransactionStates`).

use types::{ErrorCode, ProducerEpoch, ProducerId};

use super::*;

/// Replays every record `s` wrote into a fresh coordinator and returns it.
fn replayed(h: &H, records: &[TransactionLogRecord]) -> TransactionCoordinator {
    let config = h.c.config().clone();
    let mut c = TransactionCoordinator::new(config.clone(), Box::new(Pids::default()));
    for p in 0..config.transaction_topic_num_partitions {
        c.load_partition(p, 8);
    }
    for r in records {
        // Through the codec, as the runtime reads them back.
        let (k, v) = encode_transaction_record(r);
        let decoded = decode_transaction_record(&k, v.as_deref()).unwrap();
        c.replay(c.partition_for(&r.transactional_id), decoded);
    }
    c
}

#[test]
fn replay_rebuilds_the_same_state() {
    // Kafka: the cache after loading equals the state the records describe (last record wins, tombstones
    // remove; `lastProducerEpoch` is not stored and comes back as -1).
    let mut h = H::tv2();
    let mut log = Vec::new();
    log.extend(h.init("a", None).records);
    let pe = h.pe("a");
    let fx = h.add_fx("a", pe, &[tp("x", 0), tp("y", 2)], TV2);
    log.extend(h.settle(fx).records);
    log.extend(h.end("a", pe, COMMIT, TV2).records);
    log.extend(h.markers_done("a").records);
    log.extend(h.init("b", None).records);
    let pb = h.pe("b");
    let fx = h.add_fx("b", pb, &[tp("z", 1)], TV1);
    log.extend(h.settle(fx).records);
    log.extend(h.init("c", None).records);
    log.push(TransactionLogRecord {
        transactional_id: "c".into(),
        value: None,
    });
    let mut c = replayed(&h, &log);
    for p in 0..50 {
        assert!(c.loaded(p, h.now).is_empty());
    }
    for id in ["a", "b"] {
        let mut want = h.md(id).clone();
        want.last_producer_epoch = ProducerEpoch::NONE;
        assert_eq!(c.metadata(id), Some(&want), "{id}");
    }
    assert!(c.metadata("c").is_none());
}

#[test]
fn loading_a_prepare_state_resends_its_markers() {
    // Kafka: after a load, transactions in PrepareCommit/PrepareAbort have their markers sent again and
    // complete once they are written.
    let mut h = H::tv2();
    let p = h.c.partition_for("t");
    assert!(h.c.load_partition(p, 8).is_empty());
    assert!(h.c.is_loading(p));
    h.c.replay(
        p,
        TransactionLogRecord {
            transactional_id: "t".into(),
            value: Some(value(
                TransactionState::PrepareAbort,
                9,
                4,
                &[tp("a", 0), tp("a", 1)],
            )),
        },
    );
    let fx = h.c.loaded(p, h.now);
    let [TxnEffect::WriteMarkers(m)] = fx.as_slice() else {
        panic!("{fx:?}")
    };
    assert_eq!(
        (
            m.producer_id,
            m.producer_epoch,
            m.result,
            m.coordinator_epoch
        ),
        (ProducerId(9), ProducerEpoch(4), ABORT, 8)
    );
    assert_eq!(m.partitions.len(), 2);
    assert!(
        h.c.markers_written("t", 7, h.now).is_empty(),
        "stale coordinator epoch"
    );
    let fx = h.c.markers_written("t", 8, h.now);
    let s = h.settle(fx);
    assert_eq!(
        s.records[0].value.as_ref().unwrap().state,
        TransactionState::CompleteAbort
    );
    assert_eq!(h.state("t"), TransactionState::CompleteAbort);
}

#[test]
fn replay_outside_loading_is_ignored() {
    let mut h = H::tv2();
    let p = h.c.partition_for("t");
    h.c.replay(
        p,
        TransactionLogRecord {
            transactional_id: "t".into(),
            value: Some(value(TransactionState::Empty, 1, 0, &[])),
        },
    );
    assert!(h.c.metadata("t").is_none());
}

#[test]
fn describe_transactions() {
    // KIP-664 / Kafka's `handleDescribeTransactions`.
    let mut h = H::tv2();
    let (pid, e) = h.ongoing("t", TV1);
    h.add("t", (pid, e), &[tp("b", 1), tp("a", 3), tp("a", 1)], TV1);
    let d =
        h.c.describe_transactions(&["t".into(), "".into(), "none".into()]);
    assert_eq!(
        d[0],
        DescribedTransaction {
            error_code: ErrorCode::NONE,
            transactional_id: "t".into(),
            transaction_state: "Ongoing".into(),
            transaction_timeout_ms: 60_000,
            transaction_start_time_ms: T0,
            producer_id: pid,
            producer_epoch: e,
            topics: vec![
                ("a".into(), vec![1, 3]),
                ("b".into(), vec![1]),
                ("t".into(), vec![0])
            ],
        }
    );
    assert_eq!(d[1].error_code, ErrorCode::INVALID_REQUEST);
    assert_eq!(d[2].error_code, ErrorCode::TRANSACTIONAL_ID_NOT_FOUND);
    let p = h.c.partition_for("t");
    h.c.load_partition(p, 9);
    assert_eq!(
        h.c.describe_transactions(&["t".into()])[0].error_code,
        ErrorCode::COORDINATOR_LOAD_IN_PROGRESS
    );
    h.c.unload_partition(p, None);
    assert_eq!(
        h.c.describe_transactions(&["t".into()])[0].error_code,
        ErrorCode::NOT_COORDINATOR
    );
}

#[test]
fn list_transactions_filters() {
    // KIP-664 / KIP-994: state, producer id and duration filters; unknown state names reported back;
    // COORDINATOR_LOAD_IN_PROGRESS while a partition loads.
    let mut h = H::tv2();
    let (pa, _) = h.ongoing("a", TV1);
    h.now = T0 + 1_000;
    let (pb, _) = h.init_ok("b");
    h.ongoing("c", TV1);
    let ids = |r: &ListTransactionsResult| {
        let mut v: Vec<String> = r
            .transaction_states
            .iter()
            .map(|t| t.transactional_id.clone())
            .collect();
        v.sort();
        v
    };
    let all =
        h.c.list_transactions(&ListTransactionsFilter::default(), h.now);
    assert_eq!(
        (all.error_code, ids(&all)),
        (ErrorCode::NONE, vec!["a".into(), "b".into(), "c".into()])
    );
    let f = ListTransactionsFilter {
        state_filters: vec!["Ongoing".into(), "Bogus".into()],
        duration_filter_ms: -1,
        ..Default::default()
    };
    let r = h.c.list_transactions(&f, h.now);
    assert_eq!(ids(&r), vec!["a".to_string(), "c".into()]);
    assert_eq!(r.unknown_state_filters, vec!["Bogus".to_string()]);
    let f = ListTransactionsFilter {
        producer_id_filters: vec![pa, pb],
        duration_filter_ms: -1,
        ..Default::default()
    };
    assert_eq!(
        ids(&h.c.list_transactions(&f, h.now)),
        vec!["a".to_string(), "b".into()]
    );
    let f = ListTransactionsFilter {
        state_filters: vec!["Ongoing".into()],
        duration_filter_ms: 500,
        ..Default::default()
    };
    assert_eq!(
        ids(&h.c.list_transactions(&f, h.now)),
        vec!["a".to_string()]
    );
    let p = h.c.partition_for("zzz");
    h.c.load_partition(p, 9);
    assert_eq!(
        h.c.list_transactions(&ListTransactionsFilter::default(), h.now)
            .error_code,
        ErrorCode::COORDINATOR_LOAD_IN_PROGRESS
    );
}

#[test]
fn partition_for_is_javas_hash_mod_partitions() {
    // Kafka's `partitionFor`: Utils.abs(transactionalId.hashCode) % transaction.state.log.num.partitions.
    assert_eq!(transaction_partition_for("a", 50), 97 % 50);
    assert_eq!(transaction_partition_for("hello", 50), 99_162_322 % 50);
    // "polygenelubricants".hashCode() == Integer.MIN_VALUE; Utils.abs maps it to 0.
    assert_eq!(transaction_partition_for("polygenelubricants", 50), 0);
    assert_eq!(transaction_partition_for("x", 0), 0);
    let h = H::tv2();
    assert_eq!(
        h.c.partition_for("my-txn"),
        transaction_partition_for("my-txn", 50)
    );
}
