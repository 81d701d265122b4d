//! Moving a log to another data directory (KIP-113, the `future_log` module): the copy under appends,
//! the swap, truncation of the current log during the copy, and the startup rule after a crash.

use crate::tests::{batch, clock_at, fetched, idem_batch, small_config};
use crate::*;
use std::path::PathBuf;
use types::{LeaderEpoch, Offset, TopicPartition};

const NOW: i64 = 1_700_000_000_000;

fn two_dirs(root: &std::path::Path) -> Vec<PathBuf> {
    ["a", "b"].iter().map(|d| root.join(d)).collect()
}

fn open(dirs: &[PathBuf]) -> LogManager {
    LogManager::open_dirs(dirs.to_vec(), |_| small_config(), clock_at(NOW)).unwrap()
}

/// Every batch of the partition's log: (base offset, last offset, CRC).
fn contents(lm: &LogManager, tp: &TopicPartition) -> Vec<(i64, i64, u32)> {
    let log = lm.get_log(&tp.topic, tp.partition).unwrap();
    let mut l = log.lock();
    let (mut at, end) = (l.log_start_offset(), l.log_end_offset());
    let mut out = Vec::new();
    while at < end {
        let read = l.read(at, 1 << 20, end, true).unwrap();
        for b in fetched(&read) {
            out.push((b.base_offset(), b.last_offset(), b.crc()));
            at = Offset(b.last_offset() + 1);
        }
    }
    out
}

fn append(lm: &LogManager, tp: &TopicPartition, epoch: i32, n: usize) {
    let log = lm.get_log(&tp.topic, tp.partition).unwrap();
    for i in 0..n {
        let r = log
            .lock()
            .append_as_leader(batch(3, NOW + i as i64, 50), LeaderEpoch(epoch), NOW);
        r.unwrap();
    }
}

/// Runs the mover's loop by hand until the move is done (bounded).
fn finish_move(lm: &LogManager, tp: &TopicPartition) {
    for _ in 0..10_000 {
        match lm.copy_to_future(tp, 4096).unwrap() {
            FutureCopy::CaughtUp => {
                if lm.replace_current_with_future(tp).unwrap() {
                    return;
                }
            }
            FutureCopy::Behind { .. } => {}
            FutureCopy::Gone => return,
        }
    }
    panic!("the move of {tp:?} did not finish");
}

fn entries(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = (std::fs::read_dir(dir).unwrap())
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.contains("checkpoint") && !n.starts_with('.'))
        .collect();
    v.sort();
    v
}

#[test]
fn a_log_moves_to_another_dir_while_it_takes_appends() {
    let root = tempfile::tempdir().unwrap();
    let dirs = two_dirs(root.path());
    let lm = open(&dirs);
    let tp = TopicPartition::new("t", 0);
    let id = uuid::Uuid::from_u128(7);
    let log = lm.get_or_create_log("t", 0, id, small_config()).unwrap();
    assert_eq!(lm.log_dir_index_of("t", 0), Some(0));
    append(&lm, &tp, 1, 40);
    log.lock()
        .append_as_leader(idem_batch(42, 0, 0, 2), LeaderEpoch(1), NOW)
        .unwrap();
    assert_eq!(lm.alter_log_dir("t", 0, 1).unwrap(), AlterLogDir::Started);
    assert_eq!(
        lm.alter_log_dir("t", 0, 1).unwrap(),
        AlterLogDir::InProgress
    );
    // Copy a little, append more (a new epoch too), copy again.
    assert!(matches!(
        lm.copy_to_future(&tp, 2048).unwrap(),
        FutureCopy::Behind { .. }
    ));
    append(&lm, &tp, 2, 20);
    let before = contents(&lm, &tp);
    finish_move(&lm, &tp);
    assert_eq!(lm.log_dir_index_of("t", 0), Some(1));
    assert!(lm.future_logs().is_empty());
    assert_eq!(contents(&lm, &tp), before);
    // The partition's Arc is the same: whoever held it sees the moved log and appends to it.
    assert!(std::sync::Arc::ptr_eq(&log, &lm.get_log("t", 0).unwrap()));
    assert!(log.lock().dir().starts_with(&dirs[1]));
    append(&lm, &tp, 2, 1);
    // The producer state came along: a retried batch is a duplicate, not a new append.
    let dup = log
        .lock()
        .append_as_leader(idem_batch(42, 0, 0, 2), LeaderEpoch(2), NOW)
        .unwrap();
    assert_eq!(dup.first_offset, Offset(120), "{dup:?}");
    assert_eq!(entries(&dirs[0]), Vec::<String>::new());
    assert_eq!(entries(&dirs[1]), vec!["t-0".to_string()]);
    let after = contents(&lm, &tp);
    lm.shutdown().unwrap();
    drop(lm);
    let lm = open(&dirs);
    assert_eq!(lm.log_dir_index_of("t", 0), Some(1));
    assert_eq!(contents(&lm, &tp), after);
    assert_eq!(lm.get_log("t", 0).unwrap().lock().topic_id(), id);
}

#[test]
fn the_future_follows_truncation_and_log_start_of_the_current_log() {
    let root = tempfile::tempdir().unwrap();
    let dirs = two_dirs(root.path());
    let lm = open(&dirs);
    let tp = TopicPartition::new("t", 0);
    let log = lm
        .get_or_create_log("t", 0, uuid::Uuid::nil(), small_config())
        .unwrap();
    append(&lm, &tp, 1, 30);
    lm.alter_log_dir("t", 0, 1).unwrap();
    while matches!(
        lm.copy_to_future(&tp, 1 << 20).unwrap(),
        FutureCopy::Behind { .. }
    ) {}
    // A follower's truncation and new appends in a later epoch, past where the future is.
    log.lock().truncate_to(Offset(45)).unwrap();
    append(&lm, &tp, 3, 30);
    // Retention moved the log start.
    log.lock().update_high_watermark(Offset(60));
    log.lock().delete_records_before(Offset(20)).unwrap();
    let expect = contents(&lm, &tp);
    finish_move(&lm, &tp);
    assert_eq!(lm.log_dir_index_of("t", 0), Some(1));
    assert_eq!(contents(&lm, &tp), expect);
    assert_eq!(log.lock().log_start_offset(), Offset(20));
    assert_eq!(log.lock().high_watermark(), Offset(60));
    assert_eq!(log.lock().latest_epoch(), Some(LeaderEpoch(3)));
}

#[test]
fn a_move_resumes_after_a_restart_and_a_crash_between_the_renames_completes_it() {
    let root = tempfile::tempdir().unwrap();
    let dirs = two_dirs(root.path());
    let tp = TopicPartition::new("t", 0);
    let lm = open(&dirs);
    lm.get_or_create_log("t", 0, uuid::Uuid::nil(), small_config())
        .unwrap();
    append(&lm, &tp, 1, 30);
    lm.alter_log_dir("t", 0, 1).unwrap();
    lm.copy_to_future(&tp, 2048).unwrap();
    let expect = contents(&lm, &tp);
    lm.shutdown().unwrap();
    drop(lm);
    // Restart: the future is loaded and the move goes on.
    let lm = open(&dirs);
    assert_eq!(lm.future_logs().len(), 1);
    assert_eq!(lm.log_dir_index_of("t", 0), Some(0));
    while matches!(
        lm.copy_to_future(&tp, 1 << 20).unwrap(),
        FutureCopy::Behind { .. }
    ) {}
    lm.shutdown().unwrap();
    drop(lm);
    // A crash right after the swap's first rename: the current directory is `-delete`, the future not
    // yet renamed. The next start must take the future as the log.
    let future = entries(&dirs[1])
        .into_iter()
        .find(|n| n.ends_with(FUTURE_DIR_SUFFIX))
        .unwrap();
    std::fs::rename(
        dirs[0].join("t-0"),
        dirs[0].join("t-0.0123456789abcdef0123456789abcdef-delete"),
    )
    .unwrap();
    std::fs::remove_file(dirs[1].join(".kafka_cleanshutdown")).unwrap();
    assert!(future.starts_with("t-0."));
    let lm = open(&dirs);
    assert!(lm.future_logs().is_empty());
    assert_eq!(lm.log_dir_index_of("t", 0), Some(1));
    assert_eq!(contents(&lm, &tp), expect);
    assert_eq!(entries(&dirs[0]), Vec::<String>::new());
}

#[test]
fn cancelling_deleting_and_asking_before_the_replica_exists() {
    let root = tempfile::tempdir().unwrap();
    let dirs = two_dirs(root.path());
    let lm = open(&dirs);
    let tp = TopicPartition::new("t", 0);
    // Not hosted yet: remembered, and the log is created there.
    assert_eq!(lm.alter_log_dir("t", 0, 1).unwrap(), AlterLogDir::NotHosted);
    lm.get_or_create_log("t", 0, uuid::Uuid::nil(), small_config())
        .unwrap();
    assert_eq!(lm.log_dir_index_of("t", 0), Some(1));
    assert_eq!(
        lm.alter_log_dir("t", 0, 1).unwrap(),
        AlterLogDir::AlreadyThere
    );
    // A move back, cancelled by asking for the directory the log is in.
    append(&lm, &tp, 1, 5);
    assert_eq!(lm.alter_log_dir("t", 0, 0).unwrap(), AlterLogDir::Started);
    assert_eq!(
        lm.alter_log_dir("t", 0, 1).unwrap(),
        AlterLogDir::AlreadyThere
    );
    assert!(lm.future_logs().is_empty());
    assert_eq!(entries(&dirs[0]), Vec::<String>::new());
    // Deleting the partition deletes its future too.
    lm.alter_log_dir("t", 0, 0).unwrap();
    assert!(lm.delete_log("t", 0).unwrap());
    assert!(lm.future_logs().is_empty());
    assert_eq!(entries(&dirs[0]), Vec::<String>::new());
    assert_eq!(entries(&dirs[1]), Vec::<String>::new());
    // A topic name too long for `<name>-<p>.<uuid>-future` (255 bytes) is refused.
    let long = "x".repeat(240);
    assert!(matches!(
        lm.alter_log_dir(&long, 0, 0),
        Err(StorageError::InvalidTopic(_))
    ));
}
