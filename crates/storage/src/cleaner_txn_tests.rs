//! Tests of the cleaner's transaction rules (`cleaner_txn.rs`): aborted data removed on the first clean,
//! markers given a delete horizon once their transaction has no data left and removed after it, the
//! transaction index kept consistent, open transactions untouched, and read_committed reads of the
//! cleaned (and recovered) log.

use crate::cleaner_tests::{
    app, cleaner, compact_config, end_txn, kv_batch, open, tp, txn_kv, Kv, NOW,
};
use crate::*;
use bytes::Bytes;
use parking_lot::Mutex;
use protocol::record::{batches, Compression, RecordBatch, Records};
use std::collections::BTreeMap;
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use types::Offset;

fn kv(k: &str, v: &str) -> Kv {
    (k.to_string(), Some(v.to_string()))
}

fn bytes_of(records: &Records) -> Bytes {
    match records {
        Records::Memory(b) => b.clone(),
        Records::File(f) => {
            let mut v = vec![0u8; f.len as usize];
            f.file.read_exact_at(&mut v, f.position).unwrap();
            Bytes::from(v)
        }
    }
}

/// Every batch of the log, control batches included.
fn all_batches(log: &Arc<Mutex<Log>>) -> Vec<RecordBatch> {
    let mut l = log.lock();
    let (mut offset, leo) = (l.log_start_offset(), l.log_end_offset());
    let mut out = Vec::new();
    while offset < leo {
        let bytes = bytes_of(&l.read(offset, 1 << 20, leo, true).unwrap().records);
        if bytes.is_empty() {
            break;
        }
        for b in batches(&bytes) {
            let b = b.unwrap();
            b.validate().unwrap();
            offset = Offset(b.next_offset());
            out.push(b);
        }
    }
    out
}

/// The control batches of producer `pid`: (offset, delete horizon if set).
fn markers_of(log: &Arc<Mutex<Log>>, pid: i64) -> Vec<(i64, Option<i64>)> {
    all_batches(log)
        .into_iter()
        .filter(|b| b.is_control() && b.header().producer_id == pid)
        .map(|b| {
            let h = b.header();
            (
                h.base_offset,
                h.has_delete_horizon().then_some(h.base_timestamp),
            )
        })
        .collect()
}

/// Record count of producer `pid`'s data batches.
fn data_records_of(log: &Arc<Mutex<Log>>, pid: i64) -> usize {
    all_batches(log)
        .iter()
        .filter(|b| !b.is_control() && b.header().producer_id == pid)
        .map(|b| b.records().unwrap().len())
        .sum()
}

fn aborted_pids(log: &Arc<Mutex<Log>>) -> Vec<i64> {
    log.lock()
        .collect_aborted_transactions(Offset(0), Offset(i64::MAX))
        .iter()
        .map(|t| t.producer_id.get())
        .collect()
}

/// What a read_committed consumer ends with (Kafka's consumer rule: the fetch's aborted transactions
/// make a producer's transactional batches skipped from the transaction's first offset until its ABORT
/// marker), key → latest value.
fn read_committed_view(log: &Arc<Mutex<Log>>) -> BTreeMap<String, String> {
    let mut l = log.lock();
    let mut offset = l.log_start_offset();
    let mut view = BTreeMap::new();
    let mut aborted: Vec<AbortedTxn> = Vec::new();
    let mut skipping: std::collections::HashSet<i64> = Default::default();
    loop {
        let info = l.read_committed(offset, 1 << 20, true).unwrap();
        let bytes = bytes_of(&info.records);
        if bytes.is_empty() {
            break;
        }
        aborted.extend(info.aborted_transactions.unwrap_or_default());
        for b in batches(&bytes) {
            let b = b.unwrap();
            let h = *b.header();
            offset = Offset(b.next_offset());
            for t in aborted
                .iter()
                .filter(|t| t.first_offset.get() <= h.last_offset())
            {
                skipping.insert(t.producer_id.get());
            }
            aborted.retain(|t| t.first_offset.get() > h.last_offset());
            if h.is_control() {
                skipping.remove(&h.producer_id);
                continue;
            }
            if h.is_transactional() && skipping.contains(&h.producer_id) {
                continue;
            }
            for r in b.records().unwrap() {
                let k = String::from_utf8(r.key.unwrap().to_vec()).unwrap();
                match r.value {
                    Some(v) => view.insert(k, String::from_utf8(v.to_vec()).unwrap()),
                    None => view.remove(&k),
                };
            }
        }
    }
    view
}

/// Reopens the log (with a full recovery when `full`: every segment re-read, transaction indexes
/// rebuilt), the high watermark at the LEO as on a single node, and idle producers expired again (the
/// producer state is rebuilt from snapshots taken before they expired).
fn reopen(dir: &std::path::Path, full: bool) -> Arc<Mutex<Log>> {
    let log = open(dir, compact_config(), full);
    {
        let mut l = log.lock();
        let leo = l.log_end_offset();
        l.update_high_watermark(leo);
        l.delete_old_segments(NOW + compact_config().producer_id_expiration_ms + 1)
            .unwrap();
    }
    log
}

fn recover(dir: &std::path::Path) -> Arc<Mutex<Log>> {
    reopen(dir, true)
}

fn expected(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Producer 7 aborts (a=a2, x=x7); producer 8 commits b=b2, later superseded by a plain b=b3; producer 9
/// commits c=c9, never superseded; producer 10's transaction (d) stays open past the LSO. Producers 7 to
/// 9 then expire (`producer.id.expiration.ms`), so no batch of theirs is kept as an empty header for
/// their sequence (RETAIN_EMPTY, tested apart).
fn build_log(dir: &std::path::Path) -> Arc<Mutex<Log>> {
    let log = build_log_unexpired(dir);
    let expired = NOW + compact_config().producer_id_expiration_ms + 1;
    log.lock().delete_old_segments(expired).unwrap();
    let active: Vec<i64> = log
        .lock()
        .producer_state()
        .active_producers()
        .map(|e| e.producer_id.get())
        .collect();
    assert_eq!(
        active,
        vec![10],
        "only the open transaction's producer stays"
    );
    log
}

fn build_log_unexpired(dir: &std::path::Path) -> Arc<Mutex<Log>> {
    let log = open(dir, compact_config(), false);
    {
        let mut l = log.lock();
        let plain = |recs: &[Kv]| kv_batch(Compression::None, NOW, recs);
        app(&mut l, plain(&[kv("a", "a1"), kv("b", "b1")]), NOW).unwrap();
        app(&mut l, txn_kv(7, 0, &[kv("a", "a2")]), NOW).unwrap();
        app(&mut l, txn_kv(8, 0, &[kv("b", "b2")]), NOW).unwrap();
        app(&mut l, txn_kv(7, 1, &[kv("x", "x7")]), NOW).unwrap();
        end_txn(&mut l, 7, false);
        end_txn(&mut l, 8, true);
        app(&mut l, txn_kv(9, 0, &[kv("c", "c9")]), NOW).unwrap();
        end_txn(&mut l, 9, true);
        l.force_roll(NOW).unwrap();
        app(&mut l, plain(&[kv("b", "b3")]), NOW).unwrap();
        l.force_roll(NOW).unwrap();
        app(&mut l, txn_kv(10, 0, &[kv("d", "d1")]), NOW).unwrap();
        l.force_roll(NOW).unwrap();
    }
    log
}

/// The full life of aborted data and both kinds of markers over three cleans (Kafka's sequence: the
/// clean that removes a transaction's last data keeps its marker; the next one sets the horizon; a clean
/// after the horizon removes it), with read_committed reads and a recovery after each step.
#[test]
fn aborted_data_goes_at_once_and_markers_follow_their_data_after_the_horizon() {
    let d = tempfile::tempdir().unwrap();
    let log = build_log(d.path());
    let committed = expected(&[("a", "a1"), ("b", "b3"), ("c", "c9")]);
    assert_eq!(read_committed_view(&log), committed);
    assert_eq!(aborted_pids(&log), vec![7]);
    let mut c = cleaner(d.path());

    // 1st clean: the aborted batches go; producer 8's b2 is superseded, so its batch goes too.
    let st = c.clean_log(&tp(), &log, NOW).unwrap().unwrap();
    assert_eq!(st.aborted_batches_removed, 2, "{st:?}");
    assert_eq!(data_records_of(&log, 7), 0);
    assert_eq!(data_records_of(&log, 8), 0);
    assert_eq!(data_records_of(&log, 9), 1);
    // Both markers were seen with data of their transaction in this pass: kept as they were.
    assert_eq!(markers_of(&log, 7).len(), 1);
    assert_eq!(markers_of(&log, 7)[0].1, None);
    assert_eq!(markers_of(&log, 8)[0].1, None);
    assert_eq!(
        aborted_pids(&log),
        vec![7],
        "the abort entry stays while its marker does"
    );
    assert_eq!(read_committed_view(&log), committed);

    // 2nd clean: no data of 7 or 8 is left, so their markers get a horizon and 7's entry goes.
    c.clean_log(&tp(), &log, NOW).unwrap().unwrap();
    let horizon = NOW + compact_config().delete_retention_ms;
    assert_eq!(markers_of(&log, 7)[0].1, Some(horizon));
    assert_eq!(markers_of(&log, 8)[0].1, Some(horizon));
    assert_eq!(
        markers_of(&log, 9)[0].1,
        None,
        "c9 survives: its marker stays"
    );
    assert!(aborted_pids(&log).is_empty());
    assert_eq!(c.pending_horizon(&tp()), Some(horizon));
    assert_eq!(read_committed_view(&log), committed);

    // Before the horizon nothing more goes.
    c.clean_log(&tp(), &log, horizon - 1).unwrap().unwrap();
    assert_eq!(markers_of(&log, 7).len(), 1);
    assert_eq!(markers_of(&log, 8).len(), 1);

    // 3rd clean, at the horizon: both markers go; producer 9's stays; the open transaction is untouched.
    let st = c.clean_log(&tp(), &log, horizon).unwrap().unwrap();
    assert_eq!(st.txn_markers_removed, 2, "{st:?}");
    assert!(markers_of(&log, 7).is_empty());
    assert!(markers_of(&log, 8).is_empty());
    assert_eq!(markers_of(&log, 9).len(), 1);
    assert_eq!(data_records_of(&log, 10), 1);
    assert_eq!(read_committed_view(&log), committed);
    assert_eq!(c.pending_horizon(&tp()), None);

    // Producer 10 commits: d1 becomes visible.
    {
        let mut l = log.lock();
        end_txn(&mut l, 10, true);
    }
    let mut with_d = committed.clone();
    with_d.insert("d".into(), "d1".into());
    assert_eq!(read_committed_view(&log), with_d);

    // A full recovery (every segment re-read, transaction indexes rebuilt) reads the same.
    drop(log);
    let log = recover(d.path());
    assert!(aborted_pids(&log).is_empty());
    assert_eq!(read_committed_view(&log), with_d);
}

/// A transaction whose aborted data is all in one segment and marker in the next: the data goes
/// while the marker's segment keeps the marker and the `.txnindex` entry; a crash-recovered log (every
/// transaction index rebuilt by producer-state replay) still reads committed values only.
#[test]
fn aborted_data_and_marker_in_different_segments_and_recovery() {
    let d = tempfile::tempdir().unwrap();
    let log = open(d.path(), compact_config(), false);
    {
        let mut l = log.lock();
        app(
            &mut l,
            kv_batch(Compression::None, NOW, &[kv("k", "v1")]),
            NOW,
        )
        .unwrap();
        app(&mut l, txn_kv(7, 0, &[kv("k", "aborted")]), NOW).unwrap();
        l.force_roll(NOW).unwrap();
        end_txn(&mut l, 7, false);
        app(
            &mut l,
            kv_batch(Compression::None, NOW, &[kv("z", "z1")]),
            NOW,
        )
        .unwrap();
        l.force_roll(NOW).unwrap();
        l.delete_old_segments(NOW + compact_config().producer_id_expiration_ms + 1)
            .unwrap();
    }
    let committed = expected(&[("k", "v1"), ("z", "z1")]);
    let mut c = cleaner(d.path());
    c.clean_log(&tp(), &log, NOW).unwrap().unwrap();
    assert_eq!(data_records_of(&log, 7), 0);
    assert_eq!(markers_of(&log, 7)[0].1, None);
    assert_eq!(aborted_pids(&log), vec![7]);
    assert_eq!(read_committed_view(&log), committed);
    drop(log);
    let log = recover(d.path());
    assert_eq!(read_committed_view(&log), committed);
    c.clean_log(&tp(), &log, NOW).unwrap().unwrap();
    assert!(markers_of(&log, 7)[0].1.is_some());
    assert!(aborted_pids(&log).is_empty());
    assert_eq!(read_committed_view(&log), committed);
}

/// A crash at each step of the swap of the clean that changes a segment's `.txnindex` (markers given a
/// horizon, the abort entry dropped) leaves the old or the new segment with a consistent transaction
/// index: read_committed reads the same, no swap file is left, and a later clean finishes the job.
#[test]
fn crash_during_the_swap_of_a_marker_clean_keeps_read_committed() {
    use crate::log::SwapStep;
    let committed = expected(&[("a", "a1"), ("b", "b3"), ("c", "c9")]);
    for step in [
        SwapStep::IndexesToSwap,
        SwapStep::LogToSwap,
        SwapStep::IndexesInPlace,
        SwapStep::LogInPlace,
    ] {
        for full_recovery in [false, true] {
            let d = tempfile::tempdir().unwrap();
            let log = build_log(d.path());
            let mut c = cleaner(d.path());
            c.clean_log(&tp(), &log, NOW).unwrap().unwrap();
            c.crash_after = Some(step);
            let err = c.clean_log(&tp(), &log, NOW).unwrap_err();
            assert!(err.to_string().contains("injected"), "{err}");
            drop(log); // "crash": no close
            let log = reopen(d.path(), full_recovery);
            assert_eq!(read_committed_view(&log), committed, "{step:?}");
            for e in std::fs::read_dir(d.path()).unwrap() {
                let name = e.unwrap().file_name().into_string().unwrap();
                assert!(
                    !name.ends_with(".swap") && !name.ends_with(".cleaned"),
                    "{step:?}: {name} left"
                );
            }
            let mut c = cleaner(d.path());
            c.clean_log(&tp(), &log, NOW).unwrap().unwrap();
            let horizon = NOW + compact_config().delete_retention_ms;
            c.clean_log(&tp(), &log, horizon).unwrap().unwrap();
            assert!(markers_of(&log, 7).is_empty(), "{step:?}");
            assert!(markers_of(&log, 8).is_empty(), "{step:?}");
            assert!(aborted_pids(&log).is_empty(), "{step:?}");
            assert_eq!(read_committed_view(&log), committed, "{step:?}");
        }
    }
}

/// Kafka's RETAIN_EMPTY: the batch holding an active producer's last sequence stays as an empty header
/// when cleaning leaves it without records (here an idempotent producer's superseded write and a
/// transactional producer's aborted write); the abort marker stays while the empty batch of its
/// transaction does. Once the producers move on (or expire) the empty batches go and the marker follows.
#[test]
fn an_active_producers_last_batch_stays_as_an_empty_header() {
    let d = tempfile::tempdir().unwrap();
    let log = open(d.path(), compact_config(), false);
    let idempotent = |seq: i32, recs: &[Kv]| {
        let mut b = protocol::record::RecordBatchBuilder::new(Compression::Lz4).producer(5, 0, seq);
        for (k, v) in recs {
            b.append(
                NOW,
                Some(Bytes::from(k.clone())),
                v.clone().map(Bytes::from),
                vec![],
            );
        }
        b.build().unwrap()
    };
    {
        let mut l = log.lock();
        app(&mut l, idempotent(0, &[kv("k", "v1"), kv("j", "j1")]), NOW).unwrap();
        app(&mut l, txn_kv(7, 0, &[kv("a", "a2")]), NOW).unwrap();
        end_txn(&mut l, 7, false);
        app(
            &mut l,
            kv_batch(Compression::None, NOW, &[kv("k", "v2"), kv("j", "j2")]),
            NOW,
        )
        .unwrap();
        l.force_roll(NOW).unwrap();
    }
    let committed = expected(&[("j", "j2"), ("k", "v2")]);
    let empty_batches_of = |log: &Arc<Mutex<Log>>, pid: i64| {
        all_batches(log)
            .iter()
            .filter(|b| !b.is_control() && b.header().producer_id == pid)
            .map(|b| (b.header().records_count, b.header().base_sequence))
            .collect::<Vec<_>>()
    };
    let mut c = cleaner(d.path());
    let horizon = NOW + compact_config().delete_retention_ms;
    for now in [NOW, NOW, horizon] {
        c.clean_log(&tp(), &log, now).unwrap().unwrap();
        assert_eq!(empty_batches_of(&log, 5), vec![(0, 0)], "at {now}");
        assert_eq!(empty_batches_of(&log, 7), vec![(0, 0)], "at {now}");
        assert_eq!(markers_of(&log, 7), vec![(3, None)], "at {now}");
        assert_eq!(aborted_pids(&log), vec![7]);
        assert_eq!(read_committed_view(&log), committed);
    }
    // A full recovery re-reads the empty batches (producer state replayed over them).
    drop(log);
    let log = open(d.path(), compact_config(), true);
    {
        let mut l = log.lock();
        let leo = l.log_end_offset();
        l.update_high_watermark(leo);
    }
    assert_eq!(empty_batches_of(&log, 5), vec![(0, 0)]);
    assert_eq!(read_committed_view(&log), committed);
    // Producer 5 writes again, its next sequence (its last sequence moves on); producer 7 expires.
    {
        let mut l = log.lock();
        app(&mut l, idempotent(2, &[kv("m", "m1")]), NOW).unwrap();
        l.force_roll(NOW).unwrap();
        let active: Vec<i64> = l
            .producer_state()
            .active_producers()
            .map(|e| e.producer_id.get())
            .collect();
        assert!(active.contains(&7));
    }
    c.clean_log(&tp(), &log, NOW).unwrap().unwrap();
    assert_eq!(
        empty_batches_of(&log, 5),
        vec![(1, 2)],
        "the empty header goes"
    );
    assert_eq!(
        empty_batches_of(&log, 7),
        vec![(0, 0)],
        "producer 7 is still active"
    );
    log.lock()
        .delete_old_segments(NOW + compact_config().producer_id_expiration_ms + 1)
        .unwrap();
    c.clean_log(&tp(), &log, NOW).unwrap().unwrap();
    assert!(empty_batches_of(&log, 7).is_empty());
    assert_eq!(
        markers_of(&log, 7),
        vec![(3, None)],
        "its data was seen in this pass"
    );
    c.clean_log(&tp(), &log, NOW).unwrap().unwrap();
    assert_eq!(markers_of(&log, 7), vec![(3, Some(horizon))]);
    c.clean_log(&tp(), &log, horizon).unwrap().unwrap();
    assert!(markers_of(&log, 7).is_empty());
    let mut all = committed.clone();
    all.insert("m".into(), "m1".into());
    assert_eq!(read_committed_view(&log), all);
}
