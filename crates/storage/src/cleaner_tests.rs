//! Tests of the log cleaner: retention rule, offsets, tombstones, thresholds, crash safety of
//! the swap, and a randomized model check.

use crate::cleaner::{Cleaner, CleanerConfig};
use crate::log::SwapStep;
use crate::*;
use bytes::Bytes;
use parking_lot::Mutex;
use protocol::record::{batches, Compression, RecordBatchBuilder, Records};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;
use types::{LeaderEpoch, Offset};

pub(crate) const NOW: i64 = 1_700_000_000_000;

pub(crate) fn compact_config() -> LogConfig {
    LogConfig {
        segment_bytes: 2048,
        index_interval_bytes: 200,
        cleanup_policy: CleanupPolicy::Compact,
        delete_retention_ms: 1000,
        ..LogConfig::default()
    }
}

pub(crate) fn open(dir: &Path, config: LogConfig, recover: bool) -> Arc<Mutex<Log>> {
    Arc::new(Mutex::new(
        Log::open(dir, config, uuid::Uuid::nil(), recover, Offset(0), NOW).unwrap(),
    ))
}

/// (key, value) pairs; value None = tombstone.
pub(crate) type Kv = (String, Option<String>);

pub(crate) fn kv_batch(codec: Compression, ts: i64, recs: &[Kv]) -> Bytes {
    let mut b = RecordBatchBuilder::new(codec);
    for (k, v) in recs {
        b.append(
            ts,
            Some(Bytes::from(k.clone())),
            v.clone().map(Bytes::from),
            vec![],
        );
    }
    b.build().unwrap()
}

/// Every record of the log from the start: (offset, key, value, timestamp).
type Rec = (i64, Option<String>, Option<String>, i64);

fn read_all(log: &Arc<Mutex<Log>>) -> Vec<Rec> {
    let mut l = log.lock();
    let mut out = Vec::new();
    let mut offset = l.log_start_offset();
    let leo = l.log_end_offset();
    while offset < leo {
        let info = l.read(offset, 1 << 20, leo, true).unwrap();
        let bytes = match &info.records {
            Records::Memory(b) => b.clone(),
            Records::File(f) => {
                let mut v = vec![0u8; f.len as usize];
                f.file.read_exact_at(&mut v, f.position).unwrap();
                Bytes::from(v)
            }
        };
        if bytes.is_empty() {
            break;
        }
        for b in batches(&bytes) {
            let b = b.unwrap();
            b.validate().unwrap();
            for r in b.records().unwrap() {
                if r.offset >= offset.get() {
                    out.push((
                        r.offset,
                        r.key.map(|k| String::from_utf8(k.to_vec()).unwrap()),
                        r.value.map(|v| String::from_utf8(v.to_vec()).unwrap()),
                        r.timestamp,
                    ));
                }
            }
            offset = Offset(b.next_offset());
        }
    }
    for w in out.windows(2) {
        assert!(w[0].0 < w[1].0, "offsets not increasing: {w:?}");
    }
    out
}

/// Appends as leader and advances the high watermark (as the broker does on one node).
pub(crate) fn app(l: &mut Log, records: Bytes, now: i64) -> Result<LogAppendInfo, StorageError> {
    let r = l.append_as_leader(records, LeaderEpoch(0), now)?;
    let leo = l.log_end_offset();
    l.update_high_watermark(leo);
    Ok(r)
}

pub(crate) fn tp() -> TopicPartition {
    TopicPartition::new("t", 0)
}

pub(crate) fn cleaner(dir: &Path) -> Cleaner {
    Cleaner::new(crate::real_fs(), dir, CleanerConfig::default())
}

/// Appends `rounds` rounds over `keys` keys ("k<i>" → "v<round>-<i>") in batches of 5,
/// rolling at the end so everything is cleanable.
fn fill(log: &Arc<Mutex<Log>>, keys: usize, rounds: usize, codec: Compression) {
    let mut l = log.lock();
    for round in 0..rounds {
        let recs: Vec<Kv> = (0..keys)
            .map(|i| (format!("k{i}"), Some(format!("v{round}-{i}"))))
            .collect();
        for chunk in recs.chunks(5) {
            app(&mut l, kv_batch(codec, NOW, chunk), NOW).unwrap();
        }
    }
    l.force_roll(NOW).unwrap();
}

#[test]
fn keeps_latest_per_key_and_offsets() {
    for codec in Compression::ALL {
        let d = tempfile::tempdir().unwrap();
        let log = open(d.path(), compact_config(), false);
        fill(&log, 20, 10, codec);
        let before = read_all(&log);
        let (start, leo) = {
            let l = log.lock();
            (l.log_start_offset(), l.log_end_offset())
        };
        let mut c = cleaner(d.path());
        let st = c.clean_log(&tp(), &log, NOW).unwrap().expect("cleaned");
        assert!(st.segments_swapped > 0, "{codec:?}: {st:?}");
        let after = read_all(&log);
        let mut latest: BTreeMap<String, Rec> = BTreeMap::new();
        for r in &before {
            latest.insert(r.1.clone().unwrap(), r.clone());
        }
        let expected: Vec<Rec> = {
            let mut v: Vec<Rec> = latest.into_values().collect();
            v.sort();
            v
        };
        assert_eq!(after, expected, "{codec:?}");
        let l = log.lock();
        assert_eq!((l.log_start_offset(), l.log_end_offset()), (start, leo));
        drop(l);
        // Compressed batches stay compressed with their codec.
        let l2 = log.clone();
        let mut g = l2.lock();
        let info = g.read(Offset(0), 1 << 20, leo, true).unwrap();
        if let Records::File(f) = &info.records {
            let mut v = vec![0u8; f.len as usize];
            f.file.read_exact_at(&mut v, f.position).unwrap();
            let b = batches(&Bytes::from(v)).next().unwrap().unwrap();
            assert_eq!(b.compression().unwrap(), codec);
        }
    }
}

#[test]
fn reopen_after_clean_and_second_clean_is_noop() {
    let d = tempfile::tempdir().unwrap();
    let log = open(d.path(), compact_config(), false);
    fill(&log, 10, 6, Compression::Lz4);
    let mut c = cleaner(d.path());
    c.clean_log(&tp(), &log, NOW).unwrap().unwrap();
    let after = read_all(&log);
    let st = c.clean_log(&tp(), &log, NOW).unwrap().unwrap();
    assert_eq!(st.segments_swapped, 0);
    log.lock().close().unwrap();
    for recover in [false, true] {
        let log2 = open(d.path(), compact_config(), recover);
        assert_eq!(read_all(&log2), after);
    }
}

#[test]
fn tombstones_removed_after_delete_retention() {
    let d = tempfile::tempdir().unwrap();
    let log = open(d.path(), compact_config(), false);
    fill(&log, 10, 2, Compression::None);
    {
        let mut l = log.lock();
        let tomb: Vec<Kv> = (0..5).map(|i| (format!("k{i}"), None)).collect();
        app(&mut l, kv_batch(Compression::Gzip, NOW, &tomb), NOW).unwrap();
        l.force_roll(NOW).unwrap();
    }
    let mut c = cleaner(d.path());
    c.clean_log(&tp(), &log, NOW).unwrap().unwrap();
    let r = read_all(&log);
    // Tombstones kept (with their original timestamps), old values of those keys gone.
    assert_eq!(r.iter().filter(|x| x.2.is_none()).count(), 5);
    assert!(r.iter().all(|x| x.3 == NOW), "timestamps preserved: {r:?}");
    assert_eq!(r.len(), 10);
    assert_eq!(c.pending_horizon(&tp()), Some(NOW + 1000));
    // Before the horizon: still there.
    c.clean_log(&tp(), &log, NOW + 999).unwrap().unwrap();
    assert_eq!(read_all(&log).len(), 10);
    // After: removed; the other keys stay.
    let st = c.clean_log(&tp(), &log, NOW + 1000).unwrap().unwrap();
    assert_eq!(st.tombstones_removed, 5);
    let r = read_all(&log);
    assert_eq!(r.len(), 5);
    assert!(r.iter().all(|x| x.2.is_some()));
    assert_eq!(c.pending_horizon(&tp()), None);
}

#[test]
fn thresholds_lag_and_ratio() {
    let d = tempfile::tempdir().unwrap();
    let cfg = LogConfig {
        min_compaction_lag_ms: 10_000,
        ..compact_config()
    };
    let log = open(d.path(), cfg.clone(), false);
    fill(&log, 10, 6, Compression::None);
    let logs = vec![(tp(), log.clone())];
    let mut c = cleaner(d.path());
    // Records are at NOW: too young until NOW + 10s.
    assert!(c.clean_one(&logs, NOW + 5_000).unwrap().is_none());
    assert!(c.clean_one(&logs, NOW + 10_001).unwrap().is_some());
    // Now fully clean: the dirty ratio is 0 → nothing to do.
    assert!(c.clean_one(&logs, NOW + 20_000).unwrap().is_none());
    // A little new data: ratio below 0.5 → nothing; lots → cleaned.
    {
        let mut l = log.lock();
        app(
            &mut l,
            kv_batch(Compression::None, NOW, &[("k1".into(), Some("x".into()))]),
            NOW,
        )
        .unwrap();
        l.force_roll(NOW).unwrap();
    }
    assert!(c.clean_one(&logs, NOW + 20_000).unwrap().is_none());
    fill(&log, 10, 6, Compression::None);
    assert!(c.clean_one(&logs, NOW + 20_000).unwrap().is_some());
    // max.compaction.lag.ms forces a clean below the ratio.
    {
        let mut l = log.lock();
        app(
            &mut l,
            kv_batch(Compression::None, NOW, &[("k2".into(), Some("y".into()))]),
            NOW,
        )
        .unwrap();
        l.force_roll(NOW).unwrap();
        l.set_config(LogConfig {
            max_compaction_lag_ms: 60_000,
            ..cfg.clone()
        });
    }
    assert!(c.clean_one(&logs, NOW + 30_000).unwrap().is_none());
    assert!(c.clean_one(&logs, NOW + 60_001).unwrap().is_some());
    // The delete policy is never cleaned.
    log.lock().set_config(LogConfig {
        cleanup_policy: CleanupPolicy::Delete,
        ..cfg
    });
    fill(&log, 10, 6, Compression::None);
    assert!(c.clean_one(&logs, NOW + 90_000).unwrap().is_none());
}

#[test]
fn checkpoint_survives_restart() {
    let d = tempfile::tempdir().unwrap();
    let log = open(d.path().join("t-0").as_path(), compact_config(), false);
    fill(&log, 10, 4, Compression::None);
    let logs = vec![(tp(), log.clone())];
    let mut c = cleaner(d.path());
    let st = c.clean_log(&tp(), &log, NOW).unwrap().unwrap();
    c.write_checkpoint(&logs).unwrap();
    let c2 = cleaner(d.path());
    assert_eq!(c2.first_dirty_offset(&tp()), Some(st.end_offset));
    assert_eq!(
        st.end_offset,
        log.lock()
            .segment_base_offsets()
            .last()
            .copied()
            .unwrap()
            .get()
    );
    let text = std::fs::read_to_string(d.path().join(CLEANER_OFFSET_CHECKPOINT)).unwrap();
    assert_eq!(text, format!("0\n1\nt 0 {}\n", st.end_offset));
}

#[test]
fn small_offset_map_cleans_in_rounds() {
    let d = tempfile::tempdir().unwrap();
    let log = open(d.path(), compact_config(), false);
    fill(&log, 200, 5, Compression::None);
    let before = read_all(&log);
    let mut latest: BTreeMap<String, Rec> = BTreeMap::new();
    for r in &before {
        latest.insert(r.1.clone().unwrap(), r.clone());
    }
    let mut expected: Vec<Rec> = latest.into_values().collect();
    expected.sort();
    // Room for ~56 keys: several rounds needed.
    let mut c = Cleaner::new(
        crate::real_fs(),
        d.path(),
        CleanerConfig {
            dedupe_buffer_size: 64 * 25 * 2,
            ..CleanerConfig::default()
        },
    );
    let mut rounds = 0;
    let logs = vec![(tp(), log.clone())];
    while c.clean_one(&logs, NOW).unwrap().is_some() {
        rounds += 1;
        assert!(rounds < 100);
    }
    assert!(rounds > 1, "expected several rounds, got {rounds}");
    // Whatever was cleaned, the latest per key survives; a final full clean gives exactly it.
    let mid = read_all(&log);
    for e in &expected {
        assert!(mid.contains(e));
    }
    let mut full = cleaner(d.path());
    full.clean_log(&tp(), &log, NOW).unwrap();
    let mut full2 = Cleaner::new(crate::real_fs(), d.path(), CleanerConfig::default());
    full2.clean_log(&tp(), &log, NOW).unwrap();
    assert_eq!(read_all(&log), expected);
}

#[test]
fn refuses_records_without_key_on_compacted_log() {
    let d = tempfile::tempdir().unwrap();
    let log = open(d.path(), compact_config(), false);
    let mut b = RecordBatchBuilder::new(Compression::None);
    b.append(
        NOW,
        Some(Bytes::from_static(b"k")),
        Some("v".into()),
        vec![],
    );
    b.append(NOW, None, Some("v".into()), vec![]);
    let err = log
        .lock()
        .append_as_leader(b.build().unwrap(), LeaderEpoch(0), NOW)
        .unwrap_err();
    match err {
        StorageError::InvalidRecords { batch_indexes, .. } => assert_eq!(batch_indexes, vec![1]),
        e => panic!("unexpected error {e}"),
    }
    assert_eq!(log.lock().log_end_offset(), Offset(0));
}

fn open_hw(dir: &Path, recover: bool) -> Arc<Mutex<Log>> {
    let log = open(dir, compact_config(), recover);
    {
        let mut l = log.lock();
        let leo = l.log_end_offset();
        l.update_high_watermark(leo);
    }
    log
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

#[test]
fn crash_at_each_swap_step_leaves_old_or_new() {
    for step in [
        SwapStep::IndexesToSwap,
        SwapStep::LogToSwap,
        SwapStep::IndexesInPlace,
        SwapStep::LogInPlace,
    ] {
        for recover in [false, true] {
            let root = tempfile::tempdir().unwrap();
            let a = root.path().join("a");
            let b = root.path().join("b");
            let log = open(&a, compact_config(), false);
            // One inactive segment to clean.
            {
                let mut l = log.lock();
                for round in 0..4 {
                    let recs: Vec<Kv> = (0..4)
                        .map(|i| (format!("k{i}"), Some(format!("v{round}"))))
                        .collect();
                    app(&mut l, kv_batch(Compression::Snappy, NOW, &recs), NOW).unwrap();
                }
                l.force_roll(NOW).unwrap();
                l.flush().unwrap();
            }
            let old = read_all(&log);
            copy_dir(&a, &b);
            let log_b = open_hw(&b, false);
            cleaner(&b).clean_log(&tp(), &log_b, NOW).unwrap().unwrap();
            let new = read_all(&log_b);
            assert_ne!(old, new);

            let mut c = cleaner(&a);
            c.crash_after = Some(step);
            let err = c.clean_log(&tp(), &log, NOW).unwrap_err();
            assert!(err.to_string().contains("injected"), "{err}");
            drop(log); // "crash": no close
            let reopened = open_hw(&a, recover);
            let got = read_all(&reopened);
            let expect = if step >= SwapStep::LogToSwap {
                &new
            } else {
                &old
            };
            assert_eq!(&got, expect, "{step:?} recover={recover}");
            for e in std::fs::read_dir(&a).unwrap() {
                let n = e.unwrap().file_name().to_string_lossy().into_owned();
                assert!(
                    !n.ends_with(".cleaned") && !n.ends_with(".swap"),
                    "{step:?}: leftover {n}"
                );
            }
            // Cleaning again converges on the new contents; lookups work (indexes rebuilt).
            cleaner(&a).clean_log(&tp(), &reopened, NOW).unwrap();
            assert_eq!(read_all(&reopened), new);
            let mut l = reopened.lock();
            let leo = l.log_end_offset();
            for r in &new {
                let info = l.read(Offset(r.0), 1 << 20, leo, true).unwrap();
                assert!(info.first_batch_base_offset <= Offset(r.0));
            }
        }
    }
}

/// Randomized check against a model: after any interleaving of appends (values and
/// tombstones, all codecs), rolls and cleans, reading the log from the start gives, for every
/// key, its latest appended value at its original offset (tombstoned keys: a tombstone or
/// nothing), and every record read is exactly what was appended at that offset.
#[test]
fn cleaner_matches_model() {
    let seed: u64 = std::env::var("CLEANER_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    println!("cleaner_matches_model seed {seed} (rerun with CLEANER_SEED={seed})");
    let mut rng = StdRng::seed_from_u64(seed);
    for iteration in 0..6 {
        let d = tempfile::tempdir().unwrap();
        let cfg = LogConfig {
            segment_bytes: rng.gen_range(300..3000),
            delete_retention_ms: rng.gen_range(0..2000),
            ..compact_config()
        };
        let mut log = open(d.path(), cfg.clone(), false);
        let mut c = Cleaner::new(
            crate::real_fs(),
            d.path(),
            CleanerConfig {
                dedupe_buffer_size: if rng.gen_bool(0.5) { 2000 } else { 1 << 20 },
                ..CleanerConfig::default()
            },
        );
        let keys = rng.gen_range(1..40);
        let mut appended: BTreeMap<i64, (String, Option<String>)> = BTreeMap::new();
        let mut latest: BTreeMap<String, (i64, Option<String>)> = BTreeMap::new();
        let mut now = NOW;
        for _ in 0..rng.gen_range(20..120) {
            match rng.gen_range(0..10) {
                0..=6 => {
                    let n = rng.gen_range(1..8);
                    let recs: Vec<Kv> = (0..n)
                        .map(|_| {
                            let k = format!("k{}", rng.gen_range(0..keys));
                            let v = if rng.gen_bool(0.15) {
                                None
                            } else {
                                Some(format!("v{}", rng.gen::<u32>()))
                            };
                            (k, v)
                        })
                        .collect();
                    let codec = Compression::ALL[rng.gen_range(0..Compression::ALL.len())];
                    let info = app(&mut log.lock(), kv_batch(codec, now, &recs), now).unwrap();
                    for (i, (k, v)) in recs.into_iter().enumerate() {
                        let o = info.first_offset + i as i64;
                        appended.insert(o.get(), (k.clone(), v.clone()));
                        latest.insert(k, (o.get(), v));
                    }
                }
                7 => log.lock().force_roll(now).unwrap(),
                8 => {
                    now += rng.gen_range(0..1500);
                    c.clean_log(&tp(), &log, now).unwrap();
                }
                _ => {
                    if rng.gen_bool(0.3) {
                        log.lock().close().unwrap();
                        log = open(d.path(), cfg.clone(), rng.gen_bool(0.5));
                        let mut l = log.lock();
                        let leo = l.log_end_offset();
                        l.update_high_watermark(leo);
                    }
                }
            }
        }
        log.lock().force_roll(now).unwrap();
        c.clean_log(&tp(), &log, now).unwrap();
        let got = read_all(&log);
        let ctx = format!("seed {seed} iteration {iteration}");
        for (o, k, v, _) in &got {
            let (ak, av) = appended
                .get(o)
                .unwrap_or_else(|| panic!("{ctx}: offset {o}"));
            assert_eq!((k.as_ref(), v), (Some(ak), av), "{ctx}: offset {o}");
        }
        let mut seen: BTreeMap<String, (i64, Option<String>)> = BTreeMap::new();
        for (o, k, v, _) in got {
            seen.insert(k.unwrap(), (o, v));
        }
        for (k, (o, v)) in &latest {
            match (v, seen.get(k)) {
                (Some(_), s) => assert_eq!(s, Some(&(*o, v.clone())), "{ctx}: key {k}"),
                (None, None) => {}
                (None, Some(s)) => assert_eq!(s, &(*o, None), "{ctx}: key {k}"),
            }
        }
        // After the horizon everything tombstoned is gone (two more passes at most).
        now += cfg.delete_retention_ms + 1;
        c.clean_log(&tp(), &log, now).unwrap();
        let got: Vec<Rec> = read_all(&log);
        let live = latest.values().filter(|(_, v)| v.is_some()).count();
        assert_eq!(got.len(), live, "{ctx}: {got:?}");
    }
}

#[test]
fn recreated_log_is_cleaned_from_scratch() {
    let d = tempfile::tempdir().unwrap();
    let log = open(&d.path().join("t-0"), compact_config(), false);
    fill(&log, 10, 6, Compression::None);
    let mut c = cleaner(d.path());
    assert!(c.clean_one(&[(tp(), log.clone())], NOW).unwrap().is_some());
    let end = c.first_dirty_offset(&tp()).unwrap();
    assert!(end > 0);
    // Same name, new log (deleted and recreated): the old first dirty offset is forgotten.
    let log2 = open(&d.path().join("t-0b"), compact_config(), false);
    fill(&log2, 10, 12, Compression::None);
    let st = c
        .clean_one(&[(tp(), log2.clone())], NOW)
        .unwrap()
        .unwrap()
        .1;
    assert_eq!(st.first_dirty_offset, 0);
    assert_eq!(read_all(&log2).len(), 10);
}

/// Throughput of one clean over ~100 MB (1M records of ~100 bytes over 1000 keys, 16 MiB
/// segments, uncompressed). `cargo test --release -p storage cleaner_throughput -- --ignored
/// --nocapture`.
#[test]
#[ignore]
fn cleaner_throughput() {
    let d = tempfile::tempdir().unwrap();
    let cfg = LogConfig {
        segment_bytes: 16 << 20,
        index_interval_bytes: 4096,
        ..compact_config()
    };
    let log = open(d.path(), cfg, false);
    {
        let mut l = log.lock();
        let value = "x".repeat(80);
        for chunk in 0..10_000 {
            let recs: Vec<Kv> = (0..100)
                .map(|i| {
                    let n = chunk * 100 + i;
                    (format!("key-{}", n % 1000), Some(format!("{n}-{value}")))
                })
                .collect();
            app(&mut l, kv_batch(Compression::None, NOW, &recs), NOW).unwrap();
        }
        l.force_roll(NOW).unwrap();
    }
    let mut c = cleaner(d.path());
    let st = c.clean_log(&tp(), &log, NOW).unwrap().unwrap();
    println!(
        "cleaned {:.1} MB in {:?}: {:.1} MB/s, {} records → {}, cleaner memory {:.2} MB, process peak RSS {:.1} MB",
        st.segment_bytes_cleaned as f64 / 1e6,
        st.elapsed,
        st.mb_per_sec(),
        st.records_read,
        st.records_retained,
        st.peak_memory_bytes as f64 / 1e6,
        process_peak_rss_bytes().unwrap_or(0) as f64 / 1e6
    );
    assert_eq!(read_all(&log).len(), 1000);
}

/// A transactional batch of producer `pid` with `recs`.
pub(crate) fn txn_kv(pid: i64, seq: i32, recs: &[Kv]) -> Bytes {
    let mut b = RecordBatchBuilder::new(Compression::None)
        .producer(pid, 0, seq)
        .transactional(true);
    for (k, v) in recs {
        b.append(
            NOW,
            Some(Bytes::from(k.clone())),
            v.clone().map(Bytes::from),
            vec![],
        );
    }
    b.build().unwrap()
}

pub(crate) fn end_txn(l: &mut Log, pid: i64, commit: bool) {
    let m = EndTransactionMarker::new(commit, 0);
    let ids = (types::ProducerId(pid), types::ProducerEpoch(0));
    l.append_end_txn_marker(ids.0, ids.1, m, LeaderEpoch(0), NOW)
        .unwrap();
    let leo = l.log_end_offset();
    l.update_high_watermark(leo);
}

/// Issue 15: an aborted transaction's write of a key must not make the cleaner drop the committed value
/// it would supersede, and an undecided transaction is not cleaned at all.
#[test]
fn aborted_records_supersede_nothing_and_open_transactions_are_not_cleaned() {
    let d = tempfile::tempdir().unwrap();
    let log = open(d.path(), compact_config(), false);
    let kv = |k: &str, v: &str| (k.to_string(), Some(v.to_string()));
    {
        let mut l = log.lock();
        app(
            &mut l,
            kv_batch(Compression::None, NOW, &[kv("a", "a1"), kv("b", "b1")]),
            NOW,
        )
        .unwrap();
        // Producer 7 aborts its write of a=a2; producer 8 commits b=b2.
        app(&mut l, txn_kv(7, 0, &[kv("a", "a2")]), NOW).unwrap();
        app(&mut l, txn_kv(8, 0, &[kv("b", "b2")]), NOW).unwrap();
        end_txn(&mut l, 7, false);
        end_txn(&mut l, 8, true);
        l.force_roll(NOW).unwrap();
        // Producer 9's transaction stays open in the next (inactive) segment: c=c1 then c=c2 are undecided.
        app(&mut l, txn_kv(9, 0, &[kv("c", "c1")]), NOW).unwrap();
        app(&mut l, txn_kv(9, 1, &[kv("c", "c2")]), NOW).unwrap();
        l.force_roll(NOW).unwrap();
    }
    let mut c = cleaner(d.path());
    c.clean_log(&tp(), &log, NOW).unwrap();
    let values: Vec<(String, String)> = read_all(&log)
        .into_iter()
        .filter_map(|(_, k, v, _)| Some((k?, v?)))
        .collect();
    let has = |k: &str, v: &str| values.contains(&(k.to_string(), v.to_string()));
    assert!(
        has("a", "a1"),
        "the committed a1 was dropped for an aborted a2: {values:?}"
    );
    assert!(
        !has("b", "b1") && has("b", "b2"),
        "b1 is superseded by the committed b2: {values:?}"
    );
    assert!(
        has("c", "c1") && has("c", "c2"),
        "the open transaction was cleaned: {values:?}"
    );
}
