//! Unit tests of Log / LogManager behaviour.

use crate::*;
use bytes::Bytes;
use protocol::record::{
    batches, Compression, RecordBatch, RecordBatchBuilder, Records, TimestampType,
};
use std::os::unix::fs::FileExt;
use types::{LeaderEpoch, Offset, ProducerId};

pub(crate) fn batch(n: usize, ts: i64, value_len: usize) -> Bytes {
    let mut b = RecordBatchBuilder::new(Compression::None);
    for i in 0..n {
        b.append(
            ts + i as i64,
            None,
            Some(Bytes::from(vec![b'x'; value_len])),
            vec![],
        );
    }
    b.build().unwrap()
}

pub(crate) fn idem_batch(pid: i64, epoch: i16, seq: i32, n: usize) -> Bytes {
    let mut b = RecordBatchBuilder::new(Compression::None).producer(pid, epoch, seq);
    for i in 0..n {
        b.append(
            1000 + i as i64,
            None,
            Some(Bytes::from_static(b"v")),
            vec![],
        );
    }
    b.build().unwrap()
}

/// Reads the records a FetchDataInfo covers.
pub(crate) fn fetched(info: &FetchDataInfo) -> Vec<RecordBatch> {
    let bytes = match &info.records {
        Records::Memory(b) => b.clone(),
        Records::File(f) => {
            let mut v = vec![0u8; f.len as usize];
            f.file.read_exact_at(&mut v, f.position).unwrap();
            Bytes::from(v)
        }
    };
    batches(&bytes).map(|b| b.unwrap()).collect()
}

pub(crate) fn small_config() -> LogConfig {
    LogConfig {
        segment_bytes: 1024,
        index_interval_bytes: 100,
        ..LogConfig::default()
    }
}

const NOW: i64 = 1_700_000_000_000;

/// A clock that reads `now_ms` (for `LogManager::open`).
pub(crate) fn clock_at(now_ms: i64) -> std::sync::Arc<dyn types::Clock> {
    std::sync::Arc::new(types::ManualClock::new(now_ms))
}

/// The segment base offsets as raw integers, for comparing with literals.
fn segment_bases(log: &Log) -> Vec<i64> {
    log.segment_base_offsets().iter().map(|o| o.get()).collect()
}

fn epoch_entry(epoch: i32, offset: i64) -> (LeaderEpoch, Offset) {
    (LeaderEpoch(epoch), Offset(offset))
}
/// Opens the log in `dir` (nil topic id, recovery point 0, at `NOW`); `recover`: as after a crash.
pub(crate) fn open(dir: &std::path::Path, config: LogConfig, recover: bool) -> Log {
    Log::open(dir, config, uuid::Uuid::nil(), recover, Offset(0), NOW).unwrap()
}

/// A HighWatermark past the LogEndOffset is a bug: the log panics instead of clamping it (callers with
/// an outside value clamp first); a value below the log start offset is raised to it.
#[test]
fn high_watermark_is_never_past_the_log_end() {
    let d = tempfile::tempdir().unwrap();
    let mut log = open(d.path(), LogConfig::default(), false);
    log.append_as_leader(batch(3, NOW, 10), LeaderEpoch(0), NOW)
        .unwrap();
    assert_eq!(log.update_high_watermark(Offset(3)), Offset(3));
    log.delete_records_before(Offset(2)).unwrap();
    assert_eq!(log.update_high_watermark(Offset(1)), Offset(2));
    let past = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        log.update_high_watermark(Offset(4));
    }));
    assert!(past.is_err(), "an HW past the LEO must panic");
}

#[test]
fn append_assigns_offsets_and_reads_back() {
    let d = tempfile::tempdir().unwrap();
    let mut log = open(d.path(), LogConfig::default(), false);
    assert_eq!(
        (log.log_start_offset().get(), log.log_end_offset().get()),
        (0, 0)
    );
    let a = log
        .append_as_leader(batch(3, NOW, 10), LeaderEpoch(5), NOW)
        .unwrap();
    assert_eq!(
        (a.first_offset.get(), a.last_offset.get(), a.duplicate),
        (0, 2, false)
    );
    assert_eq!(a.log_append_time_ms, -1);
    assert_eq!(a.max_timestamp, NOW + 2);
    let b = log
        .append_as_leader(batch(2, NOW, 10), LeaderEpoch(5), NOW)
        .unwrap();
    assert_eq!((b.first_offset.get(), b.last_offset.get()), (3, 4));
    assert_eq!(log.log_end_offset(), Offset(5));
    log.update_high_watermark(Offset(5));
    let r = log.read(Offset(0), 1 << 20, Offset(5), true).unwrap();
    let got = fetched(&r);
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].base_offset(), 0);
    assert_eq!(got[0].partition_leader_epoch(), 5);
    got[0].validate().unwrap();
    got[1].validate().unwrap();
    assert_eq!(got[1].base_offset(), 3);
    assert_eq!(got[1].records().unwrap()[1].offset, 4);
}

#[test]
fn read_from_mid_batch_returns_containing_batch() {
    let d = tempfile::tempdir().unwrap();
    let mut log = open(d.path(), small_config(), false);
    for _ in 0..20 {
        log.append_as_leader(batch(5, NOW, 20), LeaderEpoch(0), NOW)
            .unwrap();
    }
    assert!(log.number_of_segments() > 2);
    for start in [0, 3, 7, 42, 58, 99] {
        let r = log
            .read(Offset(start), 1 << 20, Offset(100), false)
            .unwrap();
        let got = fetched(&r);
        assert!(!got.is_empty(), "start {start}");
        assert_eq!(got[0].base_offset(), start / 5 * 5, "start {start}");
        assert_eq!(r.first_batch_base_offset, Offset(start / 5 * 5));
        for w in got.windows(2) {
            assert_eq!(w[0].next_offset(), w[1].base_offset());
        }
    }
}

#[test]
fn read_bounds() {
    let d = tempfile::tempdir().unwrap();
    let mut log = open(d.path(), LogConfig::default(), false);
    let one = batch(2, NOW, 100);
    let size = one.len();
    for _ in 0..5 {
        log.append_as_leader(one.clone(), LeaderEpoch(0), NOW)
            .unwrap();
    }
    // max_bytes fits two batches
    assert_eq!(
        fetched(
            &log.read(Offset(0), size * 2 + 10, Offset(10), false)
                .unwrap()
        )
        .len(),
        2
    );
    // max_bytes smaller than one batch: min_one_batch decides
    assert_eq!(
        fetched(&log.read(Offset(0), 10, Offset(10), true).unwrap()).len(),
        1
    );
    assert!(log
        .read(Offset(0), 10, Offset(10), false)
        .unwrap()
        .records
        .is_empty());
    // high watermark excludes batches at/after it
    let got = fetched(&log.read(Offset(0), 1 << 20, Offset(4), true).unwrap());
    assert_eq!(got.len(), 2);
    assert!(got.iter().all(|b| b.last_offset() < 4));
    // HW inside a batch: that batch is excluded
    assert_eq!(
        fetched(&log.read(Offset(0), 1 << 20, Offset(3), true).unwrap()).len(),
        1
    );
    // start == HW → empty, no error; start == LEO → empty
    assert!(log
        .read(Offset(4), 1 << 20, Offset(4), true)
        .unwrap()
        .records
        .is_empty());
    assert!(log
        .read(Offset(10), 1 << 20, Offset(10), true)
        .unwrap()
        .records
        .is_empty());
    // out of range
    assert!(matches!(
        log.read(Offset(11), 100, Offset(10), true),
        Err(StorageError::OffsetOutOfRange { .. })
    ));
    assert!(matches!(
        log.read(Offset(6), 100, Offset(4), true),
        Err(StorageError::OffsetOutOfRange { .. })
    ));
    assert!(matches!(
        log.read(Offset(-1), 100, Offset(10), true),
        Err(StorageError::OffsetOutOfRange { .. })
    ));
}

#[test]
fn rolls_by_size_and_index_lookup_reads_correctly() {
    let d = tempfile::tempdir().unwrap();
    let mut log = open(d.path(), small_config(), false);
    for i in 0..50 {
        let a = log
            .append_as_leader(batch(1, NOW + i, 50), LeaderEpoch(0), NOW)
            .unwrap();
        assert_eq!(a.first_offset, Offset(i));
    }
    let bases = log.segment_base_offsets();
    assert!(bases.len() >= 3, "{bases:?}");
    assert_eq!(bases[0], Offset(0));
    for w in d.path().read_dir().unwrap() {
        let n = w.unwrap().file_name().to_string_lossy().into_owned();
        if let Some(stem) = n.strip_suffix(".log") {
            assert_eq!(stem.len(), 20);
        }
    }
    for o in 0..50 {
        let got = fetched(&log.read(Offset(o), 1, Offset(50), true).unwrap());
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].base_offset(), o);
    }
}

#[test]
fn rolls_by_time() {
    let d = tempfile::tempdir().unwrap();
    let cfg = LogConfig {
        segment_ms: 1000,
        ..LogConfig::default()
    };
    let mut log = open(d.path(), cfg, false);
    log.append_as_leader(batch(1, NOW, 10), LeaderEpoch(0), NOW)
        .unwrap();
    log.append_as_leader(batch(1, NOW, 10), LeaderEpoch(0), NOW + 500)
        .unwrap();
    assert_eq!(log.number_of_segments(), 1);
    log.append_as_leader(batch(1, NOW, 10), LeaderEpoch(0), NOW + 1001)
        .unwrap();
    assert_eq!(segment_bases(&log), vec![0, 2]);
}

#[test]
fn rejects_bad_batches() {
    let d = tempfile::tempdir().unwrap();
    let cfg = LogConfig {
        max_message_bytes: 500,
        ..LogConfig::default()
    };
    let mut log = open(d.path(), cfg, false);
    assert!(matches!(
        log.append_as_leader(batch(1, NOW, 600), LeaderEpoch(0), NOW),
        Err(StorageError::MessageTooLarge { .. })
    ));
    let mut bad = batch(1, NOW, 10).to_vec();
    let n = bad.len();
    bad[n - 1] ^= 0xff;
    assert!(matches!(
        log.append_as_leader(Bytes::from(bad), LeaderEpoch(0), NOW),
        Err(StorageError::CorruptMessage(_))
    ));
    let mut legacy = batch(1, NOW, 10).to_vec();
    legacy[16] = 1;
    assert!(matches!(
        log.append_as_leader(Bytes::from(legacy), LeaderEpoch(0), NOW),
        Err(StorageError::InvalidRecord(_))
    ));
    let ctl = RecordBatchBuilder::new(Compression::None).control(true);
    let mut ctl = ctl;
    ctl.append(NOW, Some(Bytes::from_static(b"\0\0\0\0")), None, vec![]);
    assert!(matches!(
        log.append_as_leader(ctl.build().unwrap(), LeaderEpoch(0), NOW),
        Err(StorageError::InvalidRecord(_))
    ));
    let future = batch(1, NOW + 2 * 3_600_000, 10);
    assert!(matches!(
        log.append_as_leader(future, LeaderEpoch(0), NOW),
        Err(StorageError::InvalidTimestamp(_))
    ));
    let mut trailing = batch(1, NOW, 10).to_vec();
    trailing.extend_from_slice(&[1, 2, 3]);
    assert!(matches!(
        log.append_as_leader(Bytes::from(trailing), LeaderEpoch(0), NOW),
        Err(StorageError::InvalidRecord(_))
    ));
    assert_eq!(log.log_end_offset(), Offset(0));
    assert_eq!(log.size_in_bytes(), 0);
    let e = log
        .append_as_leader(Bytes::new(), LeaderEpoch(0), NOW)
        .unwrap();
    assert_eq!(e.first_offset, Offset(-1));
}

#[test]
fn log_append_time_stamps_batches() {
    let d = tempfile::tempdir().unwrap();
    let cfg = LogConfig {
        message_timestamp_type: TimestampType::LogAppendTime,
        ..LogConfig::default()
    };
    let mut log = open(d.path(), cfg, false);
    let mut b = RecordBatchBuilder::new(Compression::Gzip);
    b.append(5, None, Some(Bytes::from_static(b"a")), vec![]);
    b.append(6, None, Some(Bytes::from_static(b"b")), vec![]);
    let original_payload = b.build().unwrap();
    let a = log
        .append_as_leader(original_payload.clone(), LeaderEpoch(0), NOW)
        .unwrap();
    assert_eq!(a.log_append_time_ms, NOW);
    let got = fetched(&log.read(Offset(0), 1 << 20, Offset(2), true).unwrap());
    assert_eq!(got[0].timestamp_type(), TimestampType::LogAppendTime);
    assert_eq!(got[0].max_timestamp(), NOW);
    assert_eq!(got[0].compression().unwrap(), Compression::Gzip);
    got[0].validate().unwrap();
    // records section stored as received (no recompression)
    assert_eq!(&got[0].as_bytes()[61..], &original_payload[61..]);
    assert!(got[0].records().unwrap().iter().all(|r| r.timestamp == NOW));
}

#[test]
fn all_codecs_stored_and_read() {
    let d = tempfile::tempdir().unwrap();
    let mut log = open(d.path(), LogConfig::default(), false);
    for c in Compression::ALL {
        let mut b = RecordBatchBuilder::new(c);
        for i in 0..10 {
            b.append(
                NOW + i,
                Some(Bytes::from(format!("k{i}"))),
                Some(Bytes::from(vec![i as u8; 100])),
                vec![],
            );
        }
        log.append_as_leader(b.build().unwrap(), LeaderEpoch(0), NOW)
            .unwrap();
    }
    let got = fetched(&log.read(Offset(0), 1 << 20, Offset(50), true).unwrap());
    assert_eq!(got.len(), 5);
    for (i, b) in got.iter().enumerate() {
        assert_eq!(b.compression().unwrap(), Compression::ALL[i]);
        let r = b.records().unwrap();
        assert_eq!(r[9].offset, i as i64 * 10 + 9);
    }
}

#[test]
fn offset_for_timestamp() {
    let d = tempfile::tempdir().unwrap();
    let mut log = open(d.path(), small_config(), false);
    // batches of 3 records with timestamps NOW + 10*i .. +2
    for i in 0..30i64 {
        let mut b = RecordBatchBuilder::new(if i % 2 == 0 {
            Compression::None
        } else {
            Compression::Lz4
        });
        for j in 0..3 {
            b.append(
                NOW + 10 * i + j,
                None,
                Some(Bytes::from(vec![0u8; 30])),
                vec![],
            );
        }
        log.append_as_leader(b.build().unwrap(), LeaderEpoch(0), NOW)
            .unwrap();
    }
    assert!(log.number_of_segments() > 2);
    assert_eq!(
        log.fetch_offset_by_timestamp(EARLIEST_TIMESTAMP).unwrap(),
        Some((Offset(0), -1))
    );
    assert_eq!(
        log.fetch_offset_by_timestamp(LATEST_TIMESTAMP).unwrap(),
        Some((Offset(90), -1))
    );
    assert_eq!(
        log.fetch_offset_by_timestamp(MAX_TIMESTAMP).unwrap(),
        Some((Offset(89), NOW + 292))
    );
    assert_eq!(
        log.fetch_offset_by_timestamp(0).unwrap(),
        Some((Offset(0), NOW))
    );
    assert_eq!(
        log.fetch_offset_by_timestamp(NOW + 1).unwrap(),
        Some((Offset(1), NOW + 1))
    );
    assert_eq!(
        log.fetch_offset_by_timestamp(NOW + 3).unwrap(),
        Some((Offset(3), NOW + 10))
    );
    assert_eq!(
        log.fetch_offset_by_timestamp(NOW + 155).unwrap(),
        Some((Offset(48), NOW + 160))
    );
    assert_eq!(
        log.fetch_offset_by_timestamp(NOW + 292).unwrap(),
        Some((Offset(89), NOW + 292))
    );
    assert_eq!(log.fetch_offset_by_timestamp(NOW + 293).unwrap(), None);
    // after a clean restart, same answers
    log.close().unwrap();
    drop(log);
    let mut log = open(d.path(), small_config(), false);
    assert_eq!(
        log.fetch_offset_by_timestamp(NOW + 155).unwrap(),
        Some((Offset(48), NOW + 160))
    );
    assert_eq!(
        log.fetch_offset_by_timestamp(MAX_TIMESTAMP).unwrap(),
        Some((Offset(89), NOW + 292))
    );
}

#[test]
fn clean_restart_keeps_everything() {
    let d = tempfile::tempdir().unwrap();
    let mut log = open(d.path(), small_config(), false);
    for _ in 0..40 {
        log.append_as_leader(batch(2, NOW, 30), LeaderEpoch(0), NOW)
            .unwrap();
    }
    let bases = log.segment_base_offsets();
    log.close().unwrap();
    drop(log);
    let mut log = open(d.path(), small_config(), false);
    assert_eq!(log.segment_base_offsets(), bases);
    assert_eq!(log.log_end_offset(), Offset(80));
    let a = log
        .append_as_leader(batch(1, NOW, 30), LeaderEpoch(0), NOW)
        .unwrap();
    assert_eq!(a.first_offset, Offset(80));
    for o in [0, 33, 79, 80] {
        assert_eq!(
            fetched(&log.read(Offset(o), 1, Offset(81), true).unwrap())[0].base_offset(),
            o / 2 * 2
        );
    }
}

#[test]
fn log_manager_create_restart_delete() {
    let d = tempfile::tempdir().unwrap();
    let id = uuid::Uuid::new_v4();
    {
        let m = LogManager::open(d.path(), |_| LogConfig::default(), clock_at(NOW)).unwrap();
        assert!(!m.had_clean_shutdown());
        let l = m
            .get_or_create_log("orders", 3, id, LogConfig::default())
            .unwrap();
        l.lock()
            .append_as_leader(batch(4, NOW, 10), LeaderEpoch(0), NOW)
            .unwrap();
        l.lock().update_high_watermark(Offset(4));
        assert!(matches!(
            m.get_or_create_log("orders", 3, uuid::Uuid::new_v4(), LogConfig::default()),
            Err(StorageError::InconsistentTopicId(_))
        ));
        assert!(matches!(
            m.get_or_create_log("../x", 0, id, LogConfig::default()),
            Err(StorageError::InvalidTopic(_))
        ));
        m.get_or_create_log("other", 0, uuid::Uuid::new_v4(), LogConfig::default())
            .unwrap();
        m.shutdown().unwrap();
        assert!(d.path().join(CLEAN_SHUTDOWN_FILE).exists());
        let cp = std::fs::read_to_string(d.path().join("replication-offset-checkpoint")).unwrap();
        assert_eq!(cp, "0\n2\norders 3 4\nother 0 0\n");
    }
    let m = LogManager::open(d.path(), |_| LogConfig::default(), clock_at(NOW)).unwrap();
    assert!(m.had_clean_shutdown());
    assert!(!d.path().join(CLEAN_SHUTDOWN_FILE).exists());
    let l = m.get_log("orders", 3).unwrap();
    assert_eq!(l.lock().topic_id(), id);
    assert_eq!(l.lock().log_end_offset(), Offset(4));
    assert_eq!(l.lock().high_watermark(), Offset(4));
    assert_eq!(m.all_logs().len(), 2);
    assert!(m.delete_log("orders", 3).unwrap());
    assert!(!m.delete_log("orders", 3).unwrap());
    assert!(!d.path().join("orders-3").exists());
    assert!(m.get_log("orders", 3).is_none());
}

#[test]
fn idempotent_dedup_gap_epoch_and_restart() {
    let d = tempfile::tempdir().unwrap();
    let mut log = open(d.path(), LogConfig::default(), false);
    let a = log
        .append_as_leader(idem_batch(7, 0, 0, 3), LeaderEpoch(0), NOW)
        .unwrap();
    assert_eq!((a.first_offset.get(), a.last_offset.get()), (0, 2));
    log.append_as_leader(batch(1, NOW, 5), LeaderEpoch(0), NOW)
        .unwrap(); // non-idempotent in between
    let b = log
        .append_as_leader(idem_batch(7, 0, 3, 2), LeaderEpoch(0), NOW)
        .unwrap();
    assert_eq!((b.first_offset.get(), b.last_offset.get()), (4, 5));
    // duplicate of the first batch → original offsets, nothing appended
    let dup = log
        .append_as_leader(idem_batch(7, 0, 0, 3), LeaderEpoch(0), NOW)
        .unwrap();
    assert!(dup.duplicate);
    assert_eq!((dup.first_offset.get(), dup.last_offset.get()), (0, 2));
    assert_eq!(log.log_end_offset(), Offset(6));
    // gap
    assert!(matches!(
        log.append_as_leader(idem_batch(7, 0, 9, 1), LeaderEpoch(0), NOW),
        Err(StorageError::OutOfOrderSequence(_))
    ));
    // stale epoch... first bump the epoch (new epoch starts at 0)
    assert!(matches!(
        log.append_as_leader(idem_batch(7, 1, 5, 1), LeaderEpoch(0), NOW),
        Err(StorageError::OutOfOrderSequence(_))
    ));
    log.append_as_leader(idem_batch(7, 1, 0, 1), LeaderEpoch(0), NOW)
        .unwrap();
    assert!(matches!(
        log.append_as_leader(idem_batch(7, 0, 5, 1), LeaderEpoch(0), NOW),
        Err(StorageError::InvalidProducerEpoch(_))
    ));
    assert!(matches!(
        log.append_as_leader(idem_batch(7, 1, -1, 1), LeaderEpoch(0), NOW),
        Err(StorageError::InvalidRecord(_))
    ));
    // unknown producer with seq != 0 is accepted (as Kafka since KIP-360)
    log.append_as_leader(idem_batch(8, 0, 42, 1), LeaderEpoch(0), NOW)
        .unwrap();
    // two batches of one producer in one request: the second continues the first
    let mut two = idem_batch(9, 0, 0, 2).to_vec();
    two.extend_from_slice(&idem_batch(9, 0, 2, 2));
    let t = log
        .append_as_leader(Bytes::from(two), LeaderEpoch(0), NOW)
        .unwrap();
    assert_eq!(t.last_offset.get() - t.first_offset.get(), 3);
    let leo = log.log_end_offset();
    // survives a clean restart
    log.close().unwrap();
    drop(log);
    let mut log = open(d.path(), LogConfig::default(), false);
    let dup = log
        .append_as_leader(idem_batch(7, 1, 0, 1), LeaderEpoch(0), NOW)
        .unwrap();
    assert!(dup.duplicate);
    assert_eq!(dup.first_offset, Offset(6));
    assert!(matches!(
        log.append_as_leader(idem_batch(7, 1, 2, 1), LeaderEpoch(0), NOW),
        Err(StorageError::OutOfOrderSequence(_))
    ));
    log.append_as_leader(idem_batch(7, 1, 1, 1), LeaderEpoch(0), NOW)
        .unwrap();
    assert_eq!(log.log_end_offset(), leo + 1);
    // survives a crash (no close; snapshot replay from the log)
    drop(log);
    let mut log = Log::open(
        d.path(),
        LogConfig::default(),
        uuid::Uuid::nil(),
        true,
        Offset(0),
        NOW,
    )
    .unwrap();
    assert!(
        log.append_as_leader(idem_batch(7, 1, 1, 1), LeaderEpoch(0), NOW)
            .unwrap()
            .duplicate
    );
    assert!(
        log.append_as_leader(idem_batch(9, 0, 2, 2), LeaderEpoch(0), NOW)
            .unwrap()
            .duplicate
    );
    // expiry is wall-clock idleness only
    assert_eq!(log.delete_old_segments(NOW + 86_400_000 - 1).unwrap(), 0);
    assert!(log.producer_state().last_entry(ProducerId(7)).is_some());
    log.delete_old_segments(NOW + 86_400_000).unwrap();
    assert!(log.producer_state().is_empty());
}

fn active_log_path(log: &Log) -> std::path::PathBuf {
    let base = *log.segment_base_offsets().last().unwrap();
    log.dir().join(offset_file_name(base.get(), "log"))
}

fn all_offsets(log: &mut Log) -> Vec<i64> {
    let mut out = Vec::new();
    let mut o = log.log_start_offset();
    let leo = log.log_end_offset();
    while o < leo {
        let got = fetched(&log.read(o, 1 << 20, leo, true).unwrap());
        assert!(!got.is_empty());
        for b in &got {
            b.validate().unwrap();
            for r in b.records().unwrap() {
                if r.offset >= o.get() {
                    out.push(r.offset);
                }
            }
            o = Offset(b.next_offset());
        }
    }
    out
}

#[test]
fn recovery_truncates_torn_tail_and_rebuilds_indexes() {
    let d = tempfile::tempdir().unwrap();
    let mut log = open(d.path(), small_config(), false);
    for _ in 0..30 {
        log.append_as_leader(batch(2, NOW, 40), LeaderEpoch(0), NOW)
            .unwrap();
    }
    let path = active_log_path(&log);
    let base = *log.segment_base_offsets().last().unwrap();
    drop(log); // crash: no close
    let len = std::fs::metadata(&path).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(len - 7).unwrap();
    // wreck the index files of the active segment too: recovery must rebuild them
    std::fs::write(
        d.path().join(offset_file_name(base.get(), "index")),
        [0xffu8; 13],
    )
    .unwrap();
    let mut log = open(d.path(), small_config(), true);
    assert_eq!(log.log_end_offset(), Offset(58));
    assert_eq!(all_offsets(&mut log), (0..58).collect::<Vec<_>>());
    for o in 0..58 {
        assert_eq!(
            fetched(&log.read(Offset(o), 1, Offset(58), true).unwrap())[0].base_offset(),
            o / 2 * 2
        );
    }
    let a = log
        .append_as_leader(batch(1, NOW, 40), LeaderEpoch(0), NOW)
        .unwrap();
    assert_eq!(a.first_offset, Offset(58));
}

#[test]
fn recovery_truncates_at_corrupt_byte_in_last_batch() {
    let d = tempfile::tempdir().unwrap();
    let mut log = open(d.path(), LogConfig::default(), false);
    for _ in 0..5 {
        log.append_as_leader(batch(3, NOW, 40), LeaderEpoch(0), NOW)
            .unwrap();
    }
    let path = active_log_path(&log);
    drop(log);
    let len = std::fs::metadata(&path).unwrap().len();
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    let mut byte = [0u8; 1];
    f.read_exact_at(&mut byte, len - 20).unwrap();
    f.write_all_at(&[byte[0] ^ 0x55], len - 20).unwrap();
    let mut log = open(d.path(), LogConfig::default(), true);
    assert_eq!(log.log_end_offset(), Offset(12));
    assert_eq!(all_offsets(&mut log), (0..12).collect::<Vec<_>>());
    assert_eq!(log.recovery_point(), Offset(12));
}

#[test]
fn recovery_of_corrupt_middle_segment_drops_later_segments() {
    let d = tempfile::tempdir().unwrap();
    let mut log = open(d.path(), small_config(), false);
    for _ in 0..40 {
        log.append_as_leader(batch(1, NOW, 100), LeaderEpoch(0), NOW)
            .unwrap();
    }
    let bases = log.segment_base_offsets();
    assert!(bases.len() >= 4);
    drop(log);
    let mid = bases[1];
    let p = d.path().join(offset_file_name(mid.get(), "log"));
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&p)
        .unwrap();
    f.write_all_at(&[0xAA; 4], 200).unwrap(); // inside the second batch of that segment
    let mut log = Log::open(d.path(), small_config(), uuid::Uuid::nil(), true, mid, NOW).unwrap();
    assert_eq!(log.segment_base_offsets(), vec![bases[0], mid]);
    let leo = log.log_end_offset();
    assert!(leo > mid && leo < bases[2]);
    assert_eq!(all_offsets(&mut log), (0..leo.get()).collect::<Vec<_>>());
}

#[test]
fn clean_open_with_torn_active_tail_falls_back_to_recovery() {
    let d = tempfile::tempdir().unwrap();
    let mut log = open(d.path(), LogConfig::default(), false);
    for _ in 0..3 {
        log.append_as_leader(batch(1, NOW, 10), LeaderEpoch(0), NOW)
            .unwrap();
    }
    let path = active_log_path(&log);
    log.close().unwrap();
    drop(log);
    let len = std::fs::metadata(&path).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(len - 1)
        .unwrap();
    let log = open(d.path(), LogConfig::default(), false);
    assert_eq!(log.log_end_offset(), Offset(2));
}

#[test]
fn retention_by_time_and_size() {
    let d = tempfile::tempdir().unwrap();
    let cfg = LogConfig {
        retention_ms: 1000,
        ..small_config()
    };
    let mut log = open(d.path(), cfg.clone(), false);
    for i in 0..40 {
        log.append_as_leader(batch(1, NOW + i * 100, 100), LeaderEpoch(0), NOW + i * 100)
            .unwrap();
    }
    log.update_high_watermark(Offset(40));
    let n = log.number_of_segments();
    assert!(n >= 4);
    // nothing older than 1s relative to the newest timestamps
    assert_eq!(log.delete_old_segments(NOW).unwrap(), 0);
    // far in the future: everything but the active segment goes
    let deleted = log.delete_old_segments(NOW + 1_000_000).unwrap();
    assert_eq!(deleted, n - 1);
    assert_eq!(log.number_of_segments(), 1);
    let active_base = log.segment_base_offsets()[0];
    assert_eq!(log.log_start_offset(), active_base);
    assert!(matches!(
        log.read(Offset(0), 100, Offset(40), true),
        Err(StorageError::OffsetOutOfRange { .. })
    ));
    assert_eq!(
        fetched(&log.read(active_base, 1 << 20, Offset(40), true).unwrap())[0].base_offset(),
        active_base.get()
    );
    assert_eq!(
        log.fetch_offset_by_timestamp(EARLIEST_TIMESTAMP).unwrap(),
        Some((active_base, -1))
    );

    let d = tempfile::tempdir().unwrap();
    let cfg = LogConfig {
        retention_ms: -1,
        retention_bytes: 2000,
        ..small_config()
    };
    let mut log = open(d.path(), cfg, false);
    for _ in 0..40 {
        log.append_as_leader(batch(1, NOW, 100), LeaderEpoch(0), NOW)
            .unwrap();
    }
    let before = log.number_of_segments();
    let deleted = log.delete_old_segments(NOW).unwrap();
    assert!(deleted > 0 && deleted < before);
    assert!(log.size_in_bytes() <= 2000 + 1024);
    assert!(log.size_in_bytes() >= 2000);
}

#[test]
fn delete_records_before_advances_log_start() {
    let d = tempfile::tempdir().unwrap();
    let mut log = open(d.path(), small_config(), false);
    for _ in 0..40 {
        log.append_as_leader(batch(1, NOW, 100), LeaderEpoch(0), NOW)
            .unwrap();
    }
    assert!(matches!(
        log.delete_records_before(Offset(5)),
        Err(StorageError::OffsetOutOfRange { .. })
    ));
    log.update_high_watermark(Offset(40));
    assert_eq!(log.delete_records_before(Offset(25)).unwrap(), Offset(25));
    assert_eq!(log.log_start_offset(), Offset(25));
    assert!(log.segment_base_offsets()[0] <= Offset(25));
    assert!(log
        .segment_base_offsets()
        .get(1)
        .is_none_or(|b| *b > Offset(25)));
    assert!(matches!(
        log.read(Offset(24), 100, Offset(40), true),
        Err(StorageError::OffsetOutOfRange { .. })
    ));
    assert_eq!(
        fetched(&log.read(Offset(25), 1, Offset(40), true).unwrap())[0].base_offset(),
        25
    );
}

#[test]
fn flush_policy_and_recovery_point() {
    let d = tempfile::tempdir().unwrap();
    let cfg = LogConfig {
        flush_messages: 3,
        ..small_config()
    };
    let mut log = open(d.path(), cfg, false);
    log.append_as_leader(batch(2, NOW, 10), LeaderEpoch(0), NOW)
        .unwrap();
    assert!(log.prepare_due_flush(NOW).unwrap().is_none());
    log.append_as_leader(batch(1, NOW, 10), LeaderEpoch(0), NOW)
        .unwrap();
    // flush.messages reached: the appender runs the due fsync after releasing the partition's lock.
    assert!(log.flush_due() && log.recovery_point() == Offset(0));
    let job = log.prepare_due_flush(NOW).unwrap().expect("a flush is due");
    log.complete_flush(job, Ok(())).unwrap();
    assert!(!log.flush_due() && log.recovery_point() == Offset(3));

    let d = tempfile::tempdir().unwrap();
    let cfg = LogConfig {
        flush_ms: 1000,
        ..small_config()
    };
    let mut log = open(d.path(), cfg, false);
    log.append_as_leader(batch(1, NOW, 10), LeaderEpoch(0), NOW)
        .unwrap();
    assert!(!log.maybe_flush(NOW + 10).unwrap());
    assert!(log.maybe_flush(NOW + 1000).unwrap());
    assert_eq!(log.recovery_point(), Offset(1));

    // after a roll, maybe_flush advances the recovery point to the new active segment
    let d = tempfile::tempdir().unwrap();
    let mut log = open(d.path(), small_config(), false);
    for _ in 0..20 {
        log.append_as_leader(batch(1, NOW, 100), LeaderEpoch(0), NOW)
            .unwrap();
    }
    let last_base = *log.segment_base_offsets().last().unwrap();
    assert!(log.maybe_flush(NOW).unwrap());
    assert_eq!(log.recovery_point(), last_base);
}

#[test]
fn failed_write_takes_log_offline() {
    let d = tempfile::tempdir().unwrap();
    let mut log = open(d.path(), LogConfig::default(), false);
    log.append_as_leader(batch(1, NOW, 10), LeaderEpoch(0), NOW)
        .unwrap();
    log.fail_next_write = true;
    assert!(matches!(
        log.append_as_leader(batch(1, NOW, 10), LeaderEpoch(0), NOW),
        Err(StorageError::KafkaStorage(_))
    ));
    assert!(log.is_offline());
    assert!(matches!(
        log.append_as_leader(batch(1, NOW, 10), LeaderEpoch(0), NOW),
        Err(StorageError::LogOffline(_))
    ));
    assert!(matches!(log.flush(), Err(StorageError::LogOffline(_))));
    assert_eq!(log.log_end_offset(), Offset(1));
}

#[test]
fn truncate_to_removes_whole_batches() {
    let d = tempfile::tempdir().unwrap();
    let mut log = open(d.path(), small_config(), false);
    for _ in 0..30 {
        log.append_as_leader(batch(3, NOW, 20), LeaderEpoch(0), NOW)
            .unwrap();
    }
    log.update_high_watermark(Offset(90));
    log.truncate_to(Offset(50)).unwrap(); // inside batch 48..50
    assert_eq!(log.log_end_offset(), Offset(48));
    assert_eq!(log.high_watermark(), Offset(48));
    assert_eq!(all_offsets(&mut log), (0..48).collect::<Vec<_>>());
    assert_eq!(
        log.append_as_leader(batch(1, NOW, 20), LeaderEpoch(0), NOW)
            .unwrap()
            .first_offset,
        Offset(48)
    );
    log.truncate_to(Offset(0)).unwrap();
    assert_eq!(
        (
            log.log_start_offset().get(),
            log.log_end_offset().get(),
            log.number_of_segments()
        ),
        (0, 0, 1)
    );
}

#[test]
fn follower_append_keeps_offsets() {
    let d = tempfile::tempdir().unwrap();
    let mut log = open(d.path(), LogConfig::default(), false);
    let b = RecordBatchBuilder::new(Compression::Snappy)
        .base_offset(0)
        .partition_leader_epoch(3);
    let mut b = b;
    b.append(NOW, None, Some(Bytes::from_static(b"x")), vec![]);
    b.append(NOW, None, Some(Bytes::from_static(b"y")), vec![]);
    log.append_as_follower(b.build().unwrap(), NOW).unwrap();
    let mut b2 = RecordBatchBuilder::new(Compression::None).base_offset(10);
    b2.append(NOW, None, None, vec![]);
    log.append_as_follower(b2.build().unwrap(), NOW).unwrap();
    assert_eq!(log.log_end_offset(), Offset(11));
    let mut b3 = RecordBatchBuilder::new(Compression::None).base_offset(5);
    b3.append(NOW, None, None, vec![]);
    assert!(matches!(
        log.append_as_follower(b3.build().unwrap(), NOW),
        Err(StorageError::UnexpectedAppendOffset(_))
    ));
    let got = fetched(&log.read(Offset(5), 1 << 20, Offset(11), true).unwrap());
    assert_eq!(got[0].base_offset(), 10);
}

#[test]
fn crash_restart_through_log_manager_recovers() {
    let d = tempfile::tempdir().unwrap();
    let id = uuid::Uuid::new_v4();
    {
        let m = LogManager::open(d.path(), |_| small_config(), clock_at(NOW)).unwrap();
        let l = m.get_or_create_log("t", 0, id, small_config()).unwrap();
        for _ in 0..20 {
            l.lock()
                .append_as_leader(batch(1, NOW, 100), LeaderEpoch(0), NOW)
                .unwrap();
        }
        m.flush_dirty(NOW);
        m.checkpoint().unwrap();
        // crash: no shutdown
    }
    let m = LogManager::open(d.path(), |_| small_config(), clock_at(NOW)).unwrap();
    assert!(!m.had_clean_shutdown());
    let l = m.get_log("t", 0).unwrap();
    assert_eq!(l.lock().log_end_offset(), Offset(20));
    assert_eq!(l.lock().topic_id(), id);
}

#[test]
fn leader_epochs_tracked_and_truncated() {
    let d = tempfile::tempdir().unwrap();
    let mut log = open(d.path(), LogConfig::default(), false);
    log.append_as_leader(batch(2, NOW, 10), LeaderEpoch(0), NOW)
        .unwrap();
    log.append_as_leader(batch(2, NOW, 10), LeaderEpoch(0), NOW)
        .unwrap();
    log.append_as_leader(batch(2, NOW, 10), LeaderEpoch(3), NOW)
        .unwrap();
    assert_eq!(
        log.leader_epoch_entries(),
        &[epoch_entry(0, 0), epoch_entry(3, 4)]
    );
    assert_eq!(log.end_offset_for_epoch(LeaderEpoch(0)), epoch_entry(0, 4));
    assert_eq!(log.end_offset_for_epoch(LeaderEpoch(3)), epoch_entry(3, 6));
    log.close().unwrap();
    assert!(matches!(
        log.append_as_leader(batch(1, NOW, 1), LeaderEpoch(3), NOW),
        Err(StorageError::LogOffline(_))
    ));
    drop(log);
    let mut log = open(d.path(), LogConfig::default(), false);
    assert_eq!(log.latest_epoch(), Some(LeaderEpoch(3)));
    log.truncate_to(Offset(4)).unwrap();
    assert_eq!(log.leader_epoch_entries(), &[epoch_entry(0, 0)]);
}

#[test]
fn epoch_start_offset_assigned_on_leadership() {
    let d = tempfile::tempdir().unwrap();
    let mut log = open(d.path(), LogConfig::default(), false);
    log.append_as_leader(batch(3, NOW, 10), LeaderEpoch(0), NOW)
        .unwrap();
    log.assign_epoch_start_offset(LeaderEpoch(2), Offset(3))
        .unwrap();
    log.assign_epoch_start_offset(LeaderEpoch(1), Offset(3))
        .unwrap(); // older: ignored
    assert_eq!(
        log.leader_epoch_entries(),
        &[epoch_entry(0, 0), epoch_entry(2, 3)]
    );
    assert_eq!(log.end_offset_for_epoch(LeaderEpoch(0)), epoch_entry(0, 3));
    assert_eq!(log.end_offset_for_epoch(LeaderEpoch(1)), epoch_entry(0, 3));
    assert_eq!(log.end_offset_for_epoch(LeaderEpoch(2)), epoch_entry(2, 3));
    log.append_as_leader(batch(1, NOW, 10), LeaderEpoch(2), NOW)
        .unwrap();
    assert_eq!(
        log.leader_epoch_entries(),
        &[epoch_entry(0, 0), epoch_entry(2, 3)]
    );
    assert_eq!(log.end_offset_for_epoch(LeaderEpoch(2)), epoch_entry(2, 4));
    // A leadership that appended nothing leaves an epoch entry at the LEO; truncating to (or past) the
    // LEO drops it.
    log.assign_epoch_start_offset(LeaderEpoch(5), Offset(4))
        .unwrap();
    assert_eq!(log.latest_epoch(), Some(LeaderEpoch(5)));
    log.truncate_to(Offset(4)).unwrap();
    assert_eq!(
        log.leader_epoch_entries(),
        &[epoch_entry(0, 0), epoch_entry(2, 3)]
    );
    assert_eq!(log.log_end_offset(), Offset(4));
}

#[test]
fn inactive_segments_hold_one_descriptor() {
    fn fds() -> usize {
        std::fs::read_dir("/proc/self/fd").unwrap().count()
    }
    let d = tempfile::tempdir().unwrap();
    let mut log = open(d.path(), small_config(), false);
    for _ in 0..400 {
        log.append_as_leader(batch(1, NOW, 100), LeaderEpoch(0), NOW)
            .unwrap();
    }
    log.close().unwrap();
    drop(log);
    let before = fds();
    let mut log = open(d.path(), small_config(), false);
    let segs = log.number_of_segments();
    assert!(segs > 50);
    // one .log descriptor per segment plus the active segment's indexes (other tests run in
    // parallel, so allow slack)
    let _ = log.read(Offset(5), 1 << 20, Offset(400), true).unwrap();
    let _ = log.fetch_offset_by_timestamp(NOW + 1).unwrap();
    let used = fds().saturating_sub(before);
    assert!(used <= segs + segs / 2, "{used} fds for {segs} segments");
}

#[test]
fn truncate_at_segment_boundary_after_clean_reopen() {
    let d = tempfile::tempdir().unwrap();
    let mut log = open(d.path(), small_config(), false);
    for _ in 0..30 {
        log.append_as_leader(batch(1, NOW, 100), LeaderEpoch(0), NOW)
            .unwrap();
    }
    let bases = log.segment_base_offsets();
    log.close().unwrap();
    drop(log);
    let mut log = open(d.path(), small_config(), false);
    log.truncate_to(bases[2]).unwrap();
    assert_eq!(log.log_end_offset(), bases[2]);
    assert_eq!(log.segment_base_offsets(), bases[..2].to_vec());
    assert_eq!(
        log.append_as_leader(batch(1, NOW, 100), LeaderEpoch(0), NOW)
            .unwrap()
            .first_offset,
        bases[2]
    );
    assert_eq!(
        all_offsets(&mut log),
        (0..=bases[2].get()).collect::<Vec<_>>()
    );
}

#[test]
fn rolls_when_index_full_and_snapshots_on_roll_and_close() {
    let d = tempfile::tempdir().unwrap();
    let cfg = LogConfig {
        index_interval_bytes: 1,
        segment_index_bytes: 16,
        ..LogConfig::default()
    };
    let mut log = open(d.path(), cfg.clone(), false);
    for i in 0..10 {
        log.append_as_leader(idem_batch(1, 0, i, 1), LeaderEpoch(0), NOW)
            .unwrap();
    }
    // each segment holds at most 2 offset-index entries (entry per batch after the first)
    assert!(
        log.number_of_segments() >= 3,
        "{:?}",
        log.segment_base_offsets()
    );
    let snaps = log.producer_state().snapshot_offsets();
    assert!(!snaps.is_empty());
    assert!(snaps.iter().all(|o| log.segment_base_offsets().contains(o)));
    for &o in &snaps {
        assert!(d
            .path()
            .join(offset_file_name(o.get(), "snapshot"))
            .exists());
    }
    log.close().unwrap();
    assert!(d.path().join(offset_file_name(10, "snapshot")).exists());
}

fn write_sample(dir: &std::path::Path) -> i64 {
    let _ = std::fs::remove_dir_all(dir);
    let cfg = LogConfig {
        segment_bytes: 64 * 1024,
        index_interval_bytes: 4096,
        ..LogConfig::default()
    };
    let mut log = Log::open(dir, cfg, uuid::Uuid::new_v4(), false, Offset(0), NOW).unwrap();
    for i in 0..400i64 {
        let c = Compression::ALL[(i % 5) as usize];
        let mut b = if i % 3 == 0 {
            RecordBatchBuilder::new(c).producer(77, 0, (i / 3 * 10) as i32)
        } else {
            RecordBatchBuilder::new(c)
        };
        for j in 0..10 {
            b.append(
                NOW + i * 10 + j,
                Some(Bytes::from(format!("k{i}-{j}"))),
                Some(Bytes::from(vec![(i % 256) as u8; 50 + j as usize * 7])),
                vec![("h".into(), Some(Bytes::from_static(b"v")))],
            );
        }
        log.append_as_leader(b.build().unwrap(), LeaderEpoch((i / 100) as i32), NOW)
            .unwrap();
    }
    log.close().unwrap();
    4000
}

/// Interop check of our on-disk format with Apache Kafka's own `DumpLogSegments`: every batch
/// (all five codecs) deep-iterates with a valid CRC and the `.index`/`.timeindex` files verify
/// against the `.log`. Needs Kafka's jars: `RUNNEL_KAFKA_LIBS=<dir with kafka jars>` (e.g.
/// `.test-deps/kafka/libs` after `scripts/kafka-reference.sh fetch`) and
/// `cargo test -p storage kafka_dump_log_segments -- --ignored`.
#[test]
#[ignore]
fn kafka_dump_log_segments_reads_our_files() {
    let libs = std::env::var("RUNNEL_KAFKA_LIBS").expect("RUNNEL_KAFKA_LIBS");
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    let records = write_sample(&dir);
    let mut logs = Vec::new();
    let mut indexes = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path().display().to_string();
        if p.ends_with(".log") {
            logs.push(p);
        } else if p.ends_with("index") {
            indexes.push(p);
        }
    }
    let run = |files: &[String], extra: &[&str]| {
        let out = std::process::Command::new("java")
            .arg("-cp")
            .arg(format!("{libs}/*"))
            .arg("org.apache.kafka.tools.DumpLogSegments")
            .arg("--files")
            .arg(files.join(","))
            .args(extra)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let dump = run(&logs, &["--deep-iteration"]);
    assert_eq!(dump.matches("isvalid: true").count(), 400, "{dump}");
    assert_eq!(dump.matches("isvalid: false").count(), 0);
    assert_eq!(
        dump.lines().filter(|l| l.starts_with("| offset")).count() as i64,
        records
    );
    for codec in ["none", "gzip", "snappy", "lz4", "zstd"] {
        assert_eq!(
            dump.matches(&format!("compresscodec: {codec} ")).count(),
            80,
            "{codec}"
        );
    }
    let verify = run(&indexes, &["--verify-index-only"]);
    assert!(!verify.to_lowercase().contains("mismatch"), "{verify}");
}

/// Writes a sample partition directory for checking our on-disk format with Kafka's own
/// `kafka.tools.DumpLogSegments` (see scripts/ or run with RUNNEL_SAMPLE_LOG_DIR=<dir>
/// `cargo test -p storage write_sample_log -- --ignored`).
#[test]
#[ignore]
fn write_sample_log() {
    let dir = std::env::var("RUNNEL_SAMPLE_LOG_DIR").expect("RUNNEL_SAMPLE_LOG_DIR");
    write_sample(std::path::Path::new(&dir));
}
