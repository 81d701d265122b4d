//! A data directory going offline on a write failure and coming back without a restart.

use crate::tests::batch;
use crate::*;
use std::io::Write;
use types::{LeaderEpoch, Offset};

const NOW: i64 = 1_700_000_000_000;

#[test]
fn write_failure_takes_the_dir_offline_and_recovery_brings_every_log_back() {
    let d = tempfile::tempdir().unwrap();
    let lm = LogManager::open(
        d.path(),
        |_| LogConfig::default(),
        crate::tests::clock_at(NOW),
    )
    .unwrap();
    let id = uuid::Uuid::from_u128(7);
    let a = lm
        .get_or_create_log("a", 0, id, LogConfig::default())
        .unwrap();
    let b = lm
        .get_or_create_log("b", 0, id, LogConfig::default())
        .unwrap();
    a.lock()
        .append_as_leader(batch(2, NOW, 10), LeaderEpoch(0), NOW)
        .unwrap();
    let told = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let t = told.clone();
    lm.dir_health(0).set_listener(move |_| {
        t.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    });
    // An append that fails (as on ENOSPC) takes the directory offline, once.
    a.lock().fail_next_write = true;
    assert!(a
        .lock()
        .append_as_leader(batch(1, NOW, 10), LeaderEpoch(0), NOW)
        .is_err());
    assert!(lm.dir_health(0).is_offline());
    assert_eq!(told.load(std::sync::atomic::Ordering::SeqCst), 1);
    // Every log of the dir goes offline with it; no new log can be created there.
    lm.take_dir_offline(0);
    assert!(matches!(
        b.lock()
            .append_as_leader(batch(1, NOW, 10), LeaderEpoch(0), NOW),
        Err(StorageError::LogOffline(_))
    ));
    assert!(matches!(
        lm.get_or_create_log("c", 0, id, LogConfig::default()),
        Err(StorageError::LogOffline(_))
    ));
    // A torn tail left by the failure is cut at recovery.
    let path = {
        let l = a.lock();
        let base = *l.segment_base_offsets().last().unwrap();
        l.dir().join(offset_file_name(base.get(), "log"))
    };
    let len = std::fs::metadata(&path).unwrap().len();
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(&[1, 2, 3])
        .unwrap();
    // The dir is healthy: recovery reopens both logs, which take writes again.
    assert!(lm.try_recover_dir(0).unwrap());
    assert!(!lm.dir_health(0).is_offline());
    assert_eq!(std::fs::metadata(&path).unwrap().len(), len);
    assert_eq!(a.lock().log_end_offset(), Offset(2));
    a.lock()
        .append_as_leader(batch(1, NOW, 10), LeaderEpoch(0), NOW)
        .unwrap();
    b.lock()
        .append_as_leader(batch(1, NOW, 10), LeaderEpoch(0), NOW)
        .unwrap();
    assert_eq!(a.lock().log_end_offset(), Offset(3));
    assert!(!lm.try_recover_dir(0).unwrap(), "online: nothing to do");
    assert!(!d.path().join(DIR_PROBE_FILE).exists());
}

/// The fsyncgate case: a failed fsync dropped the unsynced pages (reads still see them, the disk never
/// gets them). Recovery must not trust them: it rewrites and fsyncs everything past the last recovery
/// point before the dir is online, so a power loss afterwards keeps every record the log still shows.
#[test]
fn recovery_after_a_failed_fsync_makes_the_cached_tail_durable_again() {
    use crate::vfs::FileSystem;
    let sim = SimFs::new(5);
    sim.create_dir_all(std::path::Path::new("/data")).unwrap();
    sim.sync_dir(std::path::Path::new("/")).unwrap();
    let open = || {
        LogManager::open_in(
            sim.fs(),
            "/data",
            |_| LogConfig::default(),
            crate::tests::clock_at(NOW),
        )
        .unwrap()
    };
    let id = uuid::Uuid::from_u128(9);
    let lm = open();
    let log = lm
        .get_or_create_log("a", 0, id, LogConfig::default())
        .unwrap();
    let append = |n| {
        log.lock()
            .append_as_leader(batch(n, NOW, 10), LeaderEpoch(0), NOW)
    };
    append(3).unwrap();
    log.lock().flush().unwrap();
    append(4).unwrap();
    sim.fail_next_sync_dropping();
    assert!(log.lock().flush().is_err());
    assert!(lm.dir_health(0).is_offline());
    lm.take_dir_offline(0);
    assert!(lm.try_recover_dir(0).unwrap());
    assert_eq!(log.lock().log_end_offset(), Offset(7));
    lm.checkpoint().unwrap();
    drop((log, lm));
    sim.crash();
    let lm = open();
    let log = lm
        .get_or_create_log("a", 0, id, LogConfig::default())
        .unwrap();
    assert_eq!(
        log.lock().log_end_offset(),
        Offset(7),
        "records shown after recovery were lost by a power loss"
    );
}

/// A data directory the LogManager creates (missing at the first start) is fsynced into its parent: a
/// power loss after the first flush keeps it, with every flushed record (found by the replication
/// simulation, where every restart after a crash came back empty).
#[test]
fn a_created_data_dir_survives_a_power_loss() {
    let sim = SimFs::new(11);
    let open = || {
        LogManager::open_in(
            sim.fs(),
            "/var/runnel/data",
            |_| LogConfig::default(),
            crate::tests::clock_at(NOW),
        )
        .unwrap()
    };
    let id = uuid::Uuid::from_u128(11);
    let lm = open();
    let log = lm
        .get_or_create_log("a", 0, id, LogConfig::default())
        .unwrap();
    log.lock()
        .append_as_leader(batch(3, NOW, 10), LeaderEpoch(0), NOW)
        .unwrap();
    log.lock().flush().unwrap();
    lm.checkpoint().unwrap();
    drop((log, lm));
    sim.crash();
    let lm = open();
    let log = lm.get_log("a", 0).expect("the partition's log survives");
    assert_eq!(log.lock().log_end_offset(), Offset(3));
}

#[test]
fn a_failed_dir_takes_only_its_own_logs_offline() {
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let dirs = vec![d1.path().to_path_buf(), d2.path().to_path_buf()];
    let lm =
        LogManager::open_dirs(dirs, |_| LogConfig::default(), crate::tests::clock_at(NOW)).unwrap();
    let id = uuid::Uuid::from_u128(7);
    // Fewest partitions first: a → dir 0, b → dir 1.
    let a = lm
        .get_or_create_log("a", 0, id, LogConfig::default())
        .unwrap();
    let b = lm
        .get_or_create_log("b", 0, id, LogConfig::default())
        .unwrap();
    assert_eq!(lm.log_dir_of("b", 0), Some(d2.path()));
    a.lock().fail_next_write = true;
    assert!(a
        .lock()
        .append_as_leader(batch(1, NOW, 10), LeaderEpoch(0), NOW)
        .is_err());
    assert_eq!(lm.offline_dirs(), vec![0]);
    lm.take_dir_offline(0);
    // The other dir's log takes appends; a new partition goes there; maintenance skips dir 0.
    b.lock()
        .append_as_leader(batch(2, NOW, 10), LeaderEpoch(0), NOW)
        .unwrap();
    lm.get_or_create_log("c", 0, id, LogConfig::default())
        .unwrap();
    assert_eq!(lm.log_dir_of("c", 0), Some(d2.path()));
    lm.checkpoint().unwrap();
    assert!(d2.path().join("recovery-point-offset-checkpoint").exists());
    // A clean shutdown marks only the healthy dir clean.
    assert!(lm.shutdown().is_err(), "dir 0's log cannot close");
    assert!(!d1.path().join(CLEAN_SHUTDOWN_FILE).exists());
    assert!(d2.path().join(CLEAN_SHUTDOWN_FILE).exists());
}
