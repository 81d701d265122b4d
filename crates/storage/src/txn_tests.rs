//! Transactions in the log (KIP-98): markers, the LastStableOffset, transaction indexes, aborted
//! transactions of `read_committed` fetches, truncation and recovery.

use crate::tests::{fetched, small_config};
use crate::*;
use bytes::Bytes;
use protocol::record::{Compression, RecordBatchBuilder};
use std::path::Path;
use types::{LeaderEpoch, Offset, ProducerEpoch, ProducerId};

const NOW: i64 = 1_700_000_000_000;

fn open(dir: &Path, config: LogConfig, recover: bool) -> Log {
    Log::open(dir, config, uuid::Uuid::nil(), recover, Offset(0), NOW).unwrap()
}

/// A transactional batch of `n` records of producer `pid` (epoch `epoch`) at sequence `seq`.
fn txn_batch(pid: i64, epoch: i16, seq: i32, n: usize) -> Bytes {
    let mut b = RecordBatchBuilder::new(Compression::None)
        .producer(pid, epoch, seq)
        .transactional(true);
    for i in 0..n {
        b.append(NOW + i as i64, None, Some(Bytes::from_static(b"v")), vec![]);
    }
    b.build().unwrap()
}

fn append(log: &mut Log, records: Bytes) -> LogAppendInfo {
    log.append_as_leader(records, LeaderEpoch(0), NOW).unwrap()
}

/// Appends an end-transaction marker of producer `pid` (epoch `epoch`, coordinator epoch 0).
fn marker(
    log: &mut Log,
    pid: i64,
    epoch: i16,
    commit: bool,
) -> Result<LogAppendInfo, StorageError> {
    log.append_end_txn_marker(
        ProducerId(pid),
        ProducerEpoch(epoch),
        EndTransactionMarker::new(commit, 0),
        LeaderEpoch(0),
        NOW,
    )
}

fn hw_to_leo(log: &mut Log) {
    let leo = log.log_end_offset();
    log.update_high_watermark(leo);
}

fn aborted(pid: i64, first: i64, last: i64, lso: i64) -> AbortedTxn {
    AbortedTxn {
        producer_id: ProducerId(pid),
        first_offset: Offset(first),
        last_offset: Offset(last),
        last_stable_offset: Offset(lso),
    }
}

fn txn_index_path(log: &Log, base: i64) -> std::path::PathBuf {
    log.dir().join(offset_file_name(base, "txnindex"))
}

#[test]
fn commit_moves_the_last_stable_offset_from_the_first_offset_to_the_high_watermark() {
    let d = tempfile::tempdir().unwrap();
    let mut log = open(d.path(), LogConfig::default(), false);
    append(&mut log, crate::tests::batch(2, NOW, 5)); // 0..=1, not transactional
    hw_to_leo(&mut log);
    assert_eq!(log.last_stable_offset(), Offset(2));
    assert_eq!(log.first_unstable_offset(), None);
    append(&mut log, txn_batch(7, 0, 0, 3)); // 2..=4
    append(&mut log, txn_batch(7, 0, 3, 1)); // 5
    assert_eq!(log.first_unstable_offset(), Some(Offset(2)));
    assert_eq!(log.last_stable_offset(), Offset(2), "HW 2 still bounds it");
    hw_to_leo(&mut log);
    assert_eq!(
        log.last_stable_offset(),
        Offset(2),
        "the open transaction bounds it"
    );
    let info = marker(&mut log, 7, 0, true).unwrap();
    assert_eq!(
        (info.first_offset, info.last_offset),
        (Offset(6), Offset(6))
    );
    assert_eq!(log.producer_state().first_undecided_offset(), None);
    // Kafka's unreplicatedTxns: stable only once the HighWatermark passes the marker.
    assert_eq!(log.first_unstable_offset(), Some(Offset(2)));
    assert_eq!(
        log.last_stable_offset(),
        Offset(2),
        "HW 6 not yet past the marker"
    );
    hw_to_leo(&mut log);
    assert_eq!(log.first_unstable_offset(), None);
    assert_eq!(log.last_stable_offset(), Offset(7));
    assert!(
        !txn_index_path(&log, 0).exists(),
        "a commit writes no index entry"
    );
    assert!(log
        .collect_aborted_transactions(Offset(0), Offset(7))
        .is_empty());
    let e = log.producer_state().last_entry(ProducerId(7)).unwrap();
    assert_eq!(e.current_txn_first_offset, Offset::NONE);
}

#[test]
fn abort_writes_kafkas_txnindex_entry_and_collect_finds_overlapping_ranges_only() {
    let d = tempfile::tempdir().unwrap();
    let mut log = open(d.path(), LogConfig::default(), false);
    append(&mut log, crate::tests::batch(3, NOW, 5)); // 0..=2
    append(&mut log, txn_batch(9, 1, 0, 2)); // 3..=4
    append(&mut log, txn_batch(9, 1, 2, 2)); // 5..=6
    marker(&mut log, 9, 1, false).unwrap(); // 7
    append(&mut log, crate::tests::batch(2, NOW, 5)); // 8..=9
    hw_to_leo(&mut log);
    assert_eq!(log.last_stable_offset(), Offset(10));
    let bytes = std::fs::read(txn_index_path(&log, 0)).unwrap();
    let mut want = 0i16.to_be_bytes().to_vec();
    for v in [9i64, 3, 7, 8] {
        want.extend_from_slice(&v.to_be_bytes());
    }
    assert_eq!(bytes, want, "version 0, pid 9, first 3, last 7, lso 8");
    let t = aborted(9, 3, 7, 8);
    for (start, upper) in [(0, 4), (3, 10), (7, 8), (5, 6), (0, 100)] {
        assert_eq!(
            log.collect_aborted_transactions(Offset(start), Offset(upper)),
            vec![t],
            "[{start}, {upper})"
        );
    }
    for (start, upper) in [(0, 3), (8, 10), (0, 2)] {
        assert!(
            log.collect_aborted_transactions(Offset(start), Offset(upper))
                .is_empty(),
            "[{start}, {upper})"
        );
    }
}

#[test]
fn two_interleaved_producers() {
    let d = tempfile::tempdir().unwrap();
    let mut log = open(d.path(), LogConfig::default(), false);
    append(&mut log, txn_batch(1, 0, 0, 1)); // 0
    append(&mut log, txn_batch(2, 0, 0, 1)); // 1
    append(&mut log, txn_batch(1, 0, 1, 1)); // 2
    hw_to_leo(&mut log);
    assert_eq!(log.last_stable_offset(), Offset(0));
    marker(&mut log, 1, 0, false).unwrap(); // 3
    hw_to_leo(&mut log);
    assert_eq!(log.last_stable_offset(), Offset(1), "producer 2 still open");
    assert_eq!(
        log.producer_state().ongoing_txns(),
        vec![(ProducerId(2), Offset(1))]
    );
    append(&mut log, txn_batch(2, 0, 1, 1)); // 4
    marker(&mut log, 2, 0, false).unwrap(); // 5
    hw_to_leo(&mut log);
    assert_eq!(log.last_stable_offset(), Offset(6));
    let idx = vec![aborted(1, 0, 3, 1), aborted(2, 1, 5, 6)];
    assert_eq!(log.collect_aborted_transactions(Offset(0), Offset(6)), idx);
    // [0, 1): the first entry's LSO 1 ≥ 1 ends the search before the second.
    assert_eq!(
        log.collect_aborted_transactions(Offset(0), Offset(1)),
        vec![idx[0]]
    );
    assert_eq!(
        log.collect_aborted_transactions(Offset(4), Offset(6)),
        vec![idx[1]]
    );
    let info = log.read_committed(Offset(0), 1 << 20, true).unwrap();
    assert_eq!(info.aborted_transactions, Some(idx));
    assert_eq!(fetched(&info).len(), 6);
}

#[test]
fn truncation_drops_index_entries_and_reopens_the_transaction() {
    let d = tempfile::tempdir().unwrap();
    let mut log = open(d.path(), LogConfig::default(), false);
    append(&mut log, txn_batch(1, 0, 0, 2)); // 0..=1
    marker(&mut log, 1, 0, false).unwrap(); // 2
    append(&mut log, txn_batch(1, 0, 2, 2)); // 3..=4
    marker(&mut log, 1, 0, false).unwrap(); // 5
    assert_eq!(
        log.collect_aborted_transactions(Offset(0), Offset(6)).len(),
        2
    );
    log.truncate_to(Offset(5)).unwrap();
    assert_eq!(
        log.collect_aborted_transactions(Offset(0), Offset(6)),
        vec![aborted(1, 0, 2, 3)]
    );
    assert_eq!(
        std::fs::metadata(txn_index_path(&log, 0)).unwrap().len(),
        34
    );
    assert_eq!(
        log.producer_state().first_undecided_offset(),
        Some(Offset(3)),
        "the transaction is open again"
    );
    // The HighWatermark (0) has not passed the first transaction's marker: it is still unstable.
    assert_eq!(log.first_unstable_offset(), Some(Offset(0)));
    hw_to_leo(&mut log);
    assert_eq!(log.last_stable_offset(), Offset(3));
    log.truncate_to(Offset(2)).unwrap();
    assert!(log
        .collect_aborted_transactions(Offset(0), Offset(6))
        .is_empty());
    assert_eq!(log.first_unstable_offset(), Some(Offset(0)));
}

#[test]
fn roll_mid_transaction_and_collect_across_segments() {
    let d = tempfile::tempdir().unwrap();
    let mut log = open(d.path(), LogConfig::default(), false);
    append(&mut log, txn_batch(1, 0, 0, 2)); // 0..=1 in segment 0
    log.force_roll(NOW).unwrap();
    append(&mut log, crate::tests::batch(1, NOW, 5)); // 2 in segment 2
    append(&mut log, txn_batch(1, 0, 2, 1)); // 3
    assert_eq!(log.first_unstable_offset(), Some(Offset(0)));
    marker(&mut log, 1, 0, false).unwrap(); // 4, in segment 2
    log.force_roll(NOW).unwrap();
    append(&mut log, crate::tests::batch(1, NOW, 5)); // 5 in segment 5
    hw_to_leo(&mut log);
    assert!(!txn_index_path(&log, 0).exists());
    assert!(txn_index_path(&log, 2).exists());
    let t = aborted(1, 0, 4, 5);
    assert_eq!(
        log.collect_aborted_transactions(Offset(0), Offset(2)),
        vec![t]
    );
    // A read_committed fetch of segment 0 alone: upper bound = the next segment's base (2).
    let info = log.read_committed(Offset(0), 1 << 20, true).unwrap();
    assert_eq!(info.aborted_transactions, Some(vec![t]));
    let info = log.read_committed(Offset(5), 1 << 20, true).unwrap();
    assert_eq!(info.aborted_transactions, Some(vec![]));
    // retention deletes a segment's .txnindex with it
    log.delete_records_before(Offset(5)).unwrap();
    assert!(!txn_index_path(&log, 2).exists());
}

#[test]
fn read_committed_stops_at_the_last_stable_offset_read_uncommitted_does_not() {
    let d = tempfile::tempdir().unwrap();
    let mut log = open(d.path(), LogConfig::default(), false);
    append(&mut log, crate::tests::batch(2, NOW, 5)); // 0..=1
    append(&mut log, txn_batch(3, 0, 0, 2)); // 2..=3
    hw_to_leo(&mut log);
    let committed = log.read_committed(Offset(0), 1 << 20, true).unwrap();
    assert_eq!(
        fetched(&committed).len(),
        1,
        "only the batch below the LSO 2"
    );
    assert_eq!(committed.aborted_transactions, Some(vec![]));
    let uncommitted = log
        .read(Offset(0), 1 << 20, log.high_watermark(), true)
        .unwrap();
    assert_eq!(fetched(&uncommitted).len(), 2);
    assert_eq!(uncommitted.aborted_transactions, None);
    let at_lso = log.read_committed(Offset(2), 1 << 20, true).unwrap();
    assert!(at_lso.records.is_empty());
    // Past the LSO but within the log: nothing, as Kafka (not OffsetOutOfRange).
    let past = log.read_committed(Offset(4), 1 << 20, true).unwrap();
    assert!(past.records.is_empty());
    assert_eq!(past.aborted_transactions, Some(vec![]));
    assert!(matches!(
        log.read_committed(Offset(5), 1 << 20, true),
        Err(StorageError::OffsetOutOfRange { .. })
    ));
}

#[test]
fn control_batches_are_refused_from_clients_and_checked_from_coordinators() {
    let d = tempfile::tempdir().unwrap();
    let mut log = open(d.path(), LogConfig::default(), false);
    let abort = EndTransactionMarker::new(false, 0)
        .to_batch(ProducerId(1), ProducerEpoch(0), NOW)
        .unwrap();
    assert!(matches!(
        log.append_as_leader(abort.clone(), LeaderEpoch(0), NOW),
        Err(StorageError::InvalidRecord(_))
    ));
    // A control batch that is not transactional, or holds no marker, is refused from a coordinator.
    let mut not_txn = RecordBatchBuilder::new(Compression::None)
        .producer(1, 0, -1)
        .control(true);
    not_txn.append(
        NOW,
        Some(Bytes::from_static(&[0, 0, 0, 0])),
        Some(Bytes::from_static(&[0; 6])),
        vec![],
    );
    let mut leader_change = RecordBatchBuilder::new(Compression::None)
        .producer(1, 0, -1)
        .transactional(true)
        .control(true);
    leader_change.append(
        NOW,
        Some(Bytes::from_static(&[0, 0, 0, 2])),
        Some(Bytes::from_static(&[0; 6])),
        vec![],
    );
    for bad in [not_txn.build().unwrap(), leader_change.build().unwrap()] {
        assert!(matches!(
            log.append_as_leader_with_origin(bad, LeaderEpoch(0), AppendOrigin::Coordinator, NOW),
            Err(StorageError::InvalidRecord(_))
        ));
    }
    assert_eq!(log.log_end_offset(), Offset(0));
    log.append_as_leader_with_origin(abort, LeaderEpoch(0), AppendOrigin::Coordinator, NOW)
        .unwrap();
    assert_eq!(
        log.log_end_offset(),
        Offset(1),
        "a marker without a transaction is still written"
    );
    assert!(log
        .collect_aborted_transactions(Offset(0), Offset(1))
        .is_empty());
}

#[test]
fn stale_epoch_and_fenced_coordinator_markers_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let mut log = open(d.path(), LogConfig::default(), false);
    append(&mut log, txn_batch(4, 3, 0, 1)); // 0
    assert!(matches!(
        marker(&mut log, 4, 2, true),
        Err(StorageError::InvalidProducerEpoch(_))
    ));
    let at = |ce| EndTransactionMarker::new(true, ce);
    log.append_end_txn_marker(ProducerId(4), ProducerEpoch(3), at(5), LeaderEpoch(0), NOW)
        .unwrap();
    assert!(matches!(
        log.append_end_txn_marker(ProducerId(4), ProducerEpoch(3), at(4), LeaderEpoch(0), NOW),
        Err(StorageError::TransactionCoordinatorFenced(_))
    ));
    // A newer epoch (the coordinator's bump) is taken by the producer.
    marker(&mut log, 4, 4, false).unwrap_err(); // coordinator epoch 0 < 5: fenced
    log.append_end_txn_marker(ProducerId(4), ProducerEpoch(4), at(5), LeaderEpoch(0), NOW)
        .unwrap();
    let e = log.producer_state().last_entry(ProducerId(4)).unwrap();
    assert_eq!(
        (e.producer_epoch, e.coordinator_epoch),
        (ProducerEpoch(4), 5)
    );
    assert_eq!(log.log_end_offset(), Offset(3));
}

#[test]
fn a_non_transactional_batch_inside_a_transaction_is_invalid_txn_state() {
    let d = tempfile::tempdir().unwrap();
    let mut log = open(d.path(), LogConfig::default(), false);
    append(&mut log, txn_batch(5, 0, 0, 1));
    assert!(matches!(
        log.append_as_leader(crate::tests::idem_batch(5, 0, 1, 1), LeaderEpoch(0), NOW),
        Err(StorageError::InvalidTxnState(_))
    ));
    marker(&mut log, 5, 0, true).unwrap();
    append(&mut log, crate::tests::idem_batch(5, 0, 1, 1));
}

#[test]
fn a_verified_append_opens_a_transaction_only_with_the_guard_taken_before_it() {
    let d = tempfile::tempdir().unwrap();
    let mut log = open(d.path(), LogConfig::default(), false);
    let (pid, epoch) = (ProducerId(9), ProducerEpoch(0));
    let verified = |log: &mut Log, seq, guard| {
        log.append_as_leader_verified(txn_batch(9, 0, seq, 1), LeaderEpoch(0), guard, NOW)
    };
    // No guard: the batch would open a transaction nobody verified.
    assert!(matches!(
        verified(&mut log, 0, VerificationGuard::SENTINEL),
        Err(StorageError::InvalidTxnState(_))
    ));
    let guard = log
        .maybe_start_transaction_verification(pid, epoch, NOW)
        .expect("no transaction yet: a guard");
    verified(&mut log, 0, guard).unwrap();
    // Ongoing: no verification needed, any guard goes.
    assert_eq!(
        log.maybe_start_transaction_verification(pid, epoch, NOW),
        None
    );
    verified(&mut log, 1, VerificationGuard::SENTINEL).unwrap();
    // A guard taken, then the transaction ends before the late batch lands: refused, not hanging.
    marker(&mut log, 9, 0, false).unwrap();
    let guard = log
        .maybe_start_transaction_verification(pid, epoch, NOW)
        .unwrap();
    marker(&mut log, 9, 0, false).unwrap();
    assert!(matches!(
        verified(&mut log, 2, guard),
        Err(StorageError::InvalidTxnState(_))
    ));
    hw_to_leo(&mut log);
    assert_eq!(log.first_unstable_offset(), None, "no hanging transaction");
}

#[test]
fn followers_copy_markers_and_build_the_same_index() {
    let d = tempfile::tempdir().unwrap();
    let mut leader = open(&d.path().join("l"), LogConfig::default(), false);
    let mut follower = open(&d.path().join("f"), LogConfig::default(), false);
    append(&mut leader, txn_batch(1, 0, 0, 1));
    append(&mut leader, txn_batch(2, 0, 0, 1));
    marker(&mut leader, 1, 0, false).unwrap();
    append(&mut leader, txn_batch(3, 0, 0, 1));
    marker(&mut leader, 2, 0, true).unwrap();
    let leo = leader.log_end_offset();
    let all = leader.read(Offset(0), 1 << 20, leo, true).unwrap();
    let bytes = records_to_bytes(&all.records).unwrap();
    follower.append_as_follower(bytes, NOW).unwrap();
    hw_to_leo(&mut leader);
    hw_to_leo(&mut follower);
    assert_eq!(follower.last_stable_offset(), leader.last_stable_offset());
    assert_eq!(follower.last_stable_offset(), Offset(3));
    assert_eq!(
        follower.collect_aborted_transactions(Offset(0), Offset(5)),
        leader.collect_aborted_transactions(Offset(0), Offset(5))
    );
    assert_eq!(
        std::fs::read(txn_index_path(&follower, 0)).unwrap(),
        std::fs::read(txn_index_path(&leader, 0)).unwrap()
    );
}

/// A log with an aborted transaction in segment 0 and one ongoing transaction of producer 2 from
/// offset 3 (segment 3 is active), HW at the LEO; returns the aborted entry.
fn crash_fixture(log: &mut Log) -> AbortedTxn {
    append(log, txn_batch(1, 0, 0, 2)); // 0..=1
    marker(log, 1, 0, false).unwrap(); // 2
    log.force_roll(NOW).unwrap();
    append(log, txn_batch(2, 0, 0, 1)); // 3
    append(log, crate::tests::batch(1, NOW, 5)); // 4
    hw_to_leo(log);
    assert_eq!(log.last_stable_offset(), Offset(3));
    aborted(1, 0, 2, 3)
}

#[test]
fn unclean_shutdown_restores_the_ongoing_transaction_and_rebuilds_a_deleted_txnindex() {
    let d = tempfile::tempdir().unwrap();
    let mut log = open(d.path(), LogConfig::default(), false);
    let t = crash_fixture(&mut log);
    let idx = txn_index_path(&log, 0);
    drop(log); // no close: the snapshot at 3 (the roll) is the newest
    std::fs::remove_file(&idx).unwrap();
    let mut log = open(d.path(), LogConfig::default(), true);
    log.update_high_watermark(Offset(5));
    assert_eq!(log.first_unstable_offset(), Some(Offset(3)));
    assert_eq!(log.last_stable_offset(), Offset(3));
    assert_eq!(
        log.collect_aborted_transactions(Offset(0), Offset(5)),
        vec![t]
    );
    assert_eq!(std::fs::metadata(&idx).unwrap().len(), 34);
    // The reopened producer state goes on: committing moves the LSO to the HW.
    marker(&mut log, 2, 0, true).unwrap();
    hw_to_leo(&mut log);
    assert_eq!(log.last_stable_offset(), Offset(6));
}

#[test]
fn clean_close_snapshot_carries_the_ongoing_transaction() {
    let d = tempfile::tempdir().unwrap();
    let mut log = open(d.path(), LogConfig::default(), false);
    crash_fixture(&mut log);
    log.close().unwrap();
    let mut log = open(d.path(), LogConfig::default(), false);
    log.update_high_watermark(Offset(5));
    assert_eq!(log.last_stable_offset(), Offset(3));
    let e = log.producer_state().last_entry(ProducerId(2)).unwrap();
    assert_eq!(e.current_txn_first_offset, Offset(3));
}

#[test]
fn a_corrupt_txnindex_is_rebuilt_at_open() {
    let past = AbortedTxn {
        last_offset: Offset(1),
        ..aborted(1, 0, 2, 3)
    };
    let twice = [aborted(1, 0, 2, 3).encode(), past.encode()].concat();
    for garbage in [vec![1u8; 33], vec![7u8; 34], twice] {
        let d = tempfile::tempdir().unwrap();
        let mut log = open(d.path(), LogConfig::default(), false);
        let t = crash_fixture(&mut log);
        log.close().unwrap();
        let idx = txn_index_path(&log, 0);
        let good = std::fs::read(&idx).unwrap();
        std::fs::write(&idx, &garbage).unwrap();
        let log = open(d.path(), LogConfig::default(), false);
        assert_eq!(
            log.collect_aborted_transactions(Offset(0), Offset(5)),
            vec![t]
        );
        assert_eq!(std::fs::read(&idx).unwrap(), good);
        assert_eq!(
            log.producer_state().first_undecided_offset(),
            Some(Offset(3))
        );
    }
}

#[test]
fn many_aborts_across_rolls_survive_recovery_byte_for_byte() {
    let d = tempfile::tempdir().unwrap();
    let config = LogConfig {
        segment_bytes: 600,
        ..small_config()
    };
    let mut log = open(d.path(), config.clone(), false);
    let mut seq = [0i32; 3];
    for round in 0..30 {
        let pid = (round % 3) as i64;
        append(&mut log, txn_batch(pid, 0, seq[pid as usize], 2));
        seq[pid as usize] += 2;
        if round % 2 == 1 {
            let p = ((round + 1) % 3) as i64;
            let _ = marker(&mut log, p, 0, round % 4 == 1);
        }
    }
    assert!(log.number_of_segments() > 3);
    let before: Vec<(i64, Vec<u8>)> = log
        .segment_base_offsets()
        .iter()
        .map(|b| {
            (
                b.get(),
                std::fs::read(txn_index_path(&log, b.get())).unwrap_or_default(),
            )
        })
        .collect();
    let leo = log.log_end_offset();
    let all = log.collect_aborted_transactions(Offset(0), leo);
    assert!(all.len() > 3);
    let fuo = log.first_unstable_offset();
    drop(log);
    for (b, _) in &before {
        let _ = std::fs::remove_file(d.path().join(offset_file_name(*b, "txnindex")));
    }
    let log = open(d.path(), config, true);
    let after: Vec<(i64, Vec<u8>)> = log
        .segment_base_offsets()
        .iter()
        .map(|b| {
            (
                b.get(),
                std::fs::read(txn_index_path(&log, b.get())).unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(after, before);
    assert_eq!(log.collect_aborted_transactions(Offset(0), leo), all);
    assert_eq!(log.first_unstable_offset(), fuo);
}
