//! Unit tests of transactional offset commits in the runtime: TRANSACTIONAL batches, completion by
//! markers, and loading them back.

use super::tests::{block, open};
use super::*;
use coordinator::{OffsetCommitPartition, TxnOffsetCommitRequest};
use protocol::record::RecordBatch;
use types::{ErrorCode, ProducerEpoch, ProducerId};

fn txn_commit(producer: i64, offset: i64) -> TxnOffsetCommitRequest {
    TxnOffsetCommitRequest {
        group_id: "g".into(),
        producer_id: ProducerId(producer),
        producer_epoch: ProducerEpoch(0),
        generation_id: -1,
        member_id: String::new(),
        group_instance_id: None,
        topics: vec![(
            "t".into(),
            vec![OffsetCommitPartition {
                partition_index: 0,
                committed_offset: types::Offset(offset),
                committed_leader_epoch: types::LeaderEpoch(1),
                committed_metadata: None,
            }],
        )],
    }
}

fn committed(svc: &GroupCoordinatorService) -> i64 {
    svc.read(|c| c.fetch_offsets("g", Some(&[("t".to_string(), vec![0])])))
        .unwrap()
        .topics[0]
        .1[0]
        .committed_offset
        .0
}

fn pending(svc: &GroupCoordinatorService) -> bool {
    svc.read(|c| c.has_pending_transactional_offsets("g", "t", 0))
        .unwrap()
}

/// Loading hands a control batch's marker to the coordinator for the batch's producer.
fn replay_marker(into: &mut GroupCoordinator, producer: i64, commit: bool, offset: i64) {
    let bytes = storage::EndTransactionMarker::new(commit, 0)
        .to_batch(ProducerId(producer), ProducerEpoch(0), 0)
        .unwrap();
    let mut batch = bytes.to_vec();
    batch[..8].copy_from_slice(&offset.to_be_bytes());
    let batch = RecordBatch::new(bytes::Bytes::from(batch)).unwrap();
    let p = partition_for("g", 3);
    let (replayed, skipped) = loading::replay_batch((p, 3), &batch, types::Offset(0), into);
    assert_eq!((replayed, skipped), (1, 0));
}

#[test]
fn txn_offsets_are_written_transactionally_completed_and_reloaded() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (svc, rm) = open(dir.path());
        svc.load();
        let (r, written) = block(svc.txn_offset_commit(&txn_commit(5, 10))).unwrap();
        written.unwrap();
        assert_eq!(r, vec![("t".to_string(), vec![(0, ErrorCode::NONE)])]);
        assert_eq!((committed(&svc), pending(&svc)), (-1, true));
        // The record went out in a TRANSACTIONAL batch of producer 5.
        let part = rm.partition(OFFSETS_TOPIC, partition_for("g", 3)).unwrap();
        let read = part.read_records(types::Offset(0), 1 << 20, types::Offset(i64::MAX), true);
        let bytes = storage::records_to_bytes(&read.unwrap().records).unwrap();
        let batch: RecordBatch = protocol::record::batches(&bytes).last().unwrap().unwrap();
        assert!(batch.is_transactional() && !batch.is_control());
        assert_eq!((batch.producer_id(), batch.producer_epoch()), (5, 0));
        // WriteTxnMarkers wrote producer 5's COMMIT marker to the partition.
        let p = partition_for("g", 3);
        block(svc.complete_transaction(p, ProducerId(5), true)).unwrap();
        assert_eq!((committed(&svc), pending(&svc)), (10, false));
        // Producer 6 leaves its transaction open.
        block(svc.txn_offset_commit(&txn_commit(6, 20)))
            .unwrap()
            .1
            .unwrap();
        rm.shutdown().unwrap();
    }
    // Reloaded: producer 5's offset is pending again (its marker is not in this log: the replica layer
    // takes control batches only from WriteTxnMarkers), producer 6's too; markers complete them.
    let (svc, _rm) = open(dir.path());
    svc.load();
    assert_eq!((committed(&svc), pending(&svc)), (-1, true));
    let mut st = svc.state.lock();
    replay_marker(&mut st.coordinator, 5, true, 1_000);
    replay_marker(&mut st.coordinator, 6, false, 1_001);
    let f = st
        .coordinator
        .fetch_offsets("g", Some(&[("t".to_string(), vec![0])]));
    assert_eq!(f.topics[0].1[0].committed_offset, types::Offset(10));
    assert!(!st
        .coordinator
        .has_pending_transactional_offsets("g", "t", 0));
}

#[test]
fn complete_transaction_touches_only_the_partition_of_the_marker() {
    let dir = tempfile::tempdir().unwrap();
    let (svc, _rm) = open(dir.path());
    svc.load();
    block(svc.txn_offset_commit(&txn_commit(5, 10)))
        .unwrap()
        .1
        .unwrap();
    let other = (partition_for("g", 3) + 1) % 3;
    block(svc.complete_transaction(other, ProducerId(5), true)).unwrap();
    assert_eq!((committed(&svc), pending(&svc)), (-1, true));
    block(svc.complete_transaction(partition_for("g", 3), ProducerId(5), false)).unwrap();
    assert_eq!((committed(&svc), pending(&svc)), (-1, false));
}

#[test]
fn a_fenced_producer_epoch_is_refused_and_its_offsets_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let (svc, _rm) = open(dir.path());
    svc.load();
    let mut newer = txn_commit(5, 10);
    newer.producer_epoch = ProducerEpoch(1);
    block(svc.txn_offset_commit(&newer)).unwrap().1.unwrap();
    // The zombie (epoch 0) is refused by the log append; its offset does not replace the pending one.
    let (r, written) = block(svc.txn_offset_commit(&txn_commit(5, 99))).unwrap();
    assert_eq!(written, Err(CoordinatorError::InvalidProducerEpoch));
    assert_eq!(
        r[0].1[0].1,
        ErrorCode::NONE,
        "the write error is the handler's to apply"
    );
    block(svc.complete_transaction(partition_for("g", 3), ProducerId(5), true)).unwrap();
    assert_eq!(committed(&svc), 10);
}

/// A producer epoch's second transactional batch in a partition (base sequence 0 again, as every
/// coordinator batch) is written: coordinator-origin batches skip the sequence and duplicate checks.
#[test]
fn a_second_txn_batch_of_one_epoch_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let (svc, rm) = open(dir.path());
    svc.load();
    block(svc.txn_offset_commit(&txn_commit(5, 10)))
        .unwrap()
        .1
        .unwrap();
    let p = rm.partition(OFFSETS_TOPIC, partition_for("g", 3)).unwrap();
    let before = p.offsets().log_end_offset();
    block(svc.txn_offset_commit(&txn_commit(5, 11)))
        .unwrap()
        .1
        .unwrap();
    assert!(p.offsets().log_end_offset() > before);
    block(svc.complete_transaction(partition_for("g", 3), ProducerId(5), true)).unwrap();
    assert_eq!(
        committed(&svc),
        11,
        "the later commit of the transaction wins"
    );
}
