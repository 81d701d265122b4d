//! Startup and clean shutdown at scale: logs opened (recovered) and closed on a pool of threads give
//! what one thread gives, an error in one log still fails the open, and a clean close writes no
//! producer snapshot a reload would not need.

use crate::tests::{batch, clock_at, idem_batch, small_config};
use crate::*;
use std::path::{Path, PathBuf};
use types::{LeaderEpoch, Offset};

const NOW: i64 = 1_700_000_000_000;

/// Opens the data directory `dir` with `threads` threads per directory.
fn open_with(dir: &Path, threads: usize) -> Result<LogManager, StorageError> {
    LogManager::open_dirs_with_threads(
        vec![dir.to_path_buf()],
        |_| small_config(),
        clock_at(NOW),
        threads,
    )
}

/// Per partition: (log start, log end, HighWatermark, recovery point, segment bases, producers).
type Summary = Vec<(TopicPartition, i64, i64, i64, i64, Vec<Offset>, usize)>;

fn summary(m: &LogManager) -> Summary {
    (m.all_logs().into_iter())
        .map(|(tp, l)| {
            let l = l.lock();
            let producers = l.producer_state().active_producers().count();
            let (ls, le) = (l.log_start_offset().get(), l.log_end_offset().get());
            let (hw, rp) = (l.high_watermark().get(), l.recovery_point().get());
            (tp, ls, le, hw, rp, l.segment_base_offsets(), producers)
        })
        .collect()
}

/// 40 partitions, some empty, some with several segments, one with an idempotent producer, left as a
/// `kill -9` leaves them: appended, checkpointed once midway, never closed.
fn crashed_data_dir() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let m = open_with(d.path(), 4).unwrap();
    for p in 0..40 {
        let log = (m.get_or_create_log("t", p, uuid::Uuid::nil(), small_config())).unwrap();
        let mut l = log.lock();
        for i in 0..(p % 5) * 3 {
            (l.append_as_leader(batch(3, NOW + i as i64, 50), LeaderEpoch(0), NOW)).unwrap();
        }
        if p == 7 {
            (l.append_as_leader(idem_batch(42, 0, 0, 2), LeaderEpoch(0), NOW)).unwrap();
        }
        let leo = l.log_end_offset();
        l.update_high_watermark(leo);
        if p == 20 {
            drop(l);
            m.checkpoint().unwrap();
        }
    }
    drop(m);
    d
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target: PathBuf = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

#[test]
fn logs_recovered_on_a_pool_match_logs_recovered_one_by_one() {
    let crashed = crashed_data_dir();
    let copies = tempfile::tempdir().unwrap();
    let mut seen = Vec::new();
    for threads in [1, 3, 16] {
        let dir = copies.path().join(format!("t{threads}"));
        copy_dir(crashed.path(), &dir);
        let m = open_with(&dir, threads).unwrap();
        assert!(!m.had_clean_shutdown());
        seen.push(summary(&m));
        // A clean shutdown on the pool, then a clean reopen (one thread) sees the same logs.
        m.shutdown().unwrap();
        drop(m);
        let again = open_with(&dir, 1).unwrap();
        assert!(again.had_clean_shutdown());
        let mut reopened = summary(&again);
        let mut expected = seen.last().unwrap().clone();
        // The recovery point of a clean reopen is the checkpointed one: the LEO after the close.
        expected.iter_mut().for_each(|e| e.4 = e.2);
        reopened.iter_mut().for_each(|e| e.3 = e.2);
        expected.iter_mut().for_each(|e| e.3 = e.2);
        assert_eq!(reopened, expected, "{threads} threads");
    }
    assert_eq!(seen[0].len(), 40);
    assert!(
        seen[0].iter().any(|e| e.5.len() > 1),
        "some logs have several segments"
    );
    assert_eq!(
        seen[0].iter().map(|e| e.6).sum::<usize>(),
        1,
        "partition 7's producer"
    );
    assert_eq!(seen[1], seen[0]);
    assert_eq!(seen[2], seen[0]);
}

#[test]
fn a_log_that_cannot_be_opened_fails_a_parallel_open_as_a_serial_one() {
    let crashed = crashed_data_dir();
    let copies = tempfile::tempdir().unwrap();
    let mut errors = Vec::new();
    for threads in [1, 8] {
        let dir = copies.path().join(format!("t{threads}"));
        copy_dir(crashed.path(), &dir);
        // A segment's `.log` that is a directory cannot be opened.
        let bad = dir.join("t-13").join("00000000000000000100.log");
        std::fs::create_dir_all(&bad).unwrap();
        let err = open_with(&dir, threads).expect_err("the bad log fails the open");
        errors.push(err.to_string());
        // The open failed before the clean-shutdown rule: nothing marks the directory clean.
        assert!(!dir.join(CLEAN_SHUTDOWN_FILE).exists());
    }
    assert_eq!(errors[0], errors[1]);
}

fn snapshot_files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = (std::fs::read_dir(dir).unwrap())
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".snapshot"))
        .collect();
    v.sort();
    v
}

#[test]
fn a_clean_close_writes_no_producer_snapshot_a_reload_would_not_need() {
    let d = tempfile::tempdir().unwrap();
    let m = open_with(d.path(), 4).unwrap();
    let config = small_config();
    m.get_or_create_log("t", 0, uuid::Uuid::nil(), config.clone())
        .unwrap();
    let plain = m
        .get_or_create_log("t", 1, uuid::Uuid::nil(), config.clone())
        .unwrap();
    let idem = m
        .get_or_create_log("t", 2, uuid::Uuid::nil(), config)
        .unwrap();
    (plain
        .lock()
        .append_as_leader(batch(2, NOW, 10), LeaderEpoch(0), NOW))
    .unwrap();
    (idem
        .lock()
        .append_as_leader(idem_batch(9, 0, 0, 2), LeaderEpoch(0), NOW))
    .unwrap();
    m.shutdown().unwrap();
    drop(m);
    let dir = |p: i32| d.path().join(format!("t-{p}"));
    // Empty, no producer: no file (a reload starts empty at the log start, nothing to replay).
    assert!(snapshot_files(&dir(0)).is_empty());
    // Data but no producer and no snapshot yet: one (else a clean open would replay the whole log).
    assert_eq!(snapshot_files(&dir(1)), ["00000000000000000002.snapshot"]);
    assert_eq!(snapshot_files(&dir(2)), ["00000000000000000002.snapshot"]);
    let written = std::fs::metadata(dir(1).join("00000000000000000002.snapshot"))
        .and_then(|m| m.modified())
        .unwrap();

    for round in 0..2 {
        let m = open_with(d.path(), 4).unwrap();
        assert!(m.had_clean_shutdown(), "round {round}");
        let producers = |p: i32| {
            let l = m.get_log("t", p).unwrap();
            let l = l.lock();
            let n = l.producer_state().active_producers().count();
            (n, l.log_end_offset().get())
        };
        assert_eq!(
            [producers(0), producers(1), producers(2)],
            [(0, 0), (0, 2), (1, 2)]
        );
        m.shutdown().unwrap();
    }
    // The producer-less snapshot at the log end was current: not written again.
    assert!(snapshot_files(&dir(0)).is_empty());
    let now = std::fs::metadata(dir(1).join("00000000000000000002.snapshot"))
        .and_then(|m| m.modified())
        .unwrap();
    assert_eq!(now, written);
    assert_eq!(snapshot_files(&dir(2)), ["00000000000000000002.snapshot"]);
}

#[test]
fn producers_gone_since_the_last_snapshot_get_a_new_one() {
    let d = tempfile::tempdir().unwrap();
    let config = small_config();
    let mut log = Log::open(
        d.path(),
        config.clone(),
        uuid::Uuid::nil(),
        false,
        Offset(0),
        NOW,
    )
    .unwrap();
    (log.append_as_leader(idem_batch(9, 0, 0, 2), LeaderEpoch(0), NOW)).unwrap();
    log.close().unwrap();
    // Fully truncated: no producer now, but the 2.snapshot left behind held one.
    let mut log = Log::open(
        d.path(),
        config.clone(),
        uuid::Uuid::nil(),
        false,
        Offset(2),
        NOW,
    )
    .unwrap();
    assert_eq!(log.producer_state().active_producers().count(), 1);
    log.truncate_fully_and_start_at(Offset(5)).unwrap();
    log.close().unwrap();
    let log = Log::open(d.path(), config, uuid::Uuid::nil(), false, Offset(5), NOW).unwrap();
    assert_eq!(log.producer_state().active_producers().count(), 0);
    assert_eq!(log.log_start_offset(), Offset(5));
}

#[test]
fn an_index_truncation_that_cuts_nothing_writes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("00000000000000000100.index");
    let mut idx = OffsetIndex::open(&p, 100, 80).unwrap();
    // An empty index reset (what crash recovery does first): nothing to fsync.
    idx.reset().unwrap();
    assert_eq!(idx.take_dirty_path(), None);
    for i in 1..=3 {
        idx.append(100 + i * 10, (i * 1000) as u32).unwrap();
    }
    idx.flush().unwrap();
    // At or past the last entry: nothing cut, nothing dirty; the entries stay.
    idx.truncate_to(131).unwrap();
    assert_eq!(idx.take_dirty_path(), None);
    assert_eq!(idx.entries(), 3);
    // A real cut is written and waits for its fsync.
    idx.truncate_to(120).unwrap();
    assert_eq!(idx.take_dirty_path(), Some(p.clone()));
    assert_eq!(std::fs::metadata(&p).unwrap().len(), 8);
    // A torn file (a partial entry) is cut back to whole entries even when the count is unchanged.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&p)
        .and_then(|mut f| std::io::Write::write_all(&mut f, &[0, 1, 2]))
        .unwrap();
    let mut idx = OffsetIndex::open(&p, 100, 80).unwrap();
    assert!(idx.is_torn());
    idx.truncate_to(1000).unwrap();
    assert_eq!(std::fs::metadata(&p).unwrap().len(), 8);
    assert!(idx.take_dirty_path().is_some());
}
