//! Recovery after a power loss that kept a later segment's writes but lost an earlier one's tail, and
//! the flush a roll leaves pending (found by the replication simulation, seed 102 of `SIM_SEEDS=1000`).

use crate::tests::batch;
use crate::vfs::FileSystem;
use crate::*;
use std::path::Path;
use types::{LeaderEpoch, Offset};

const NOW: i64 = 1_700_000_000_000;

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 400,
        ..LogConfig::default()
    }
}

fn open(sim: &SimFs) -> LogManager {
    LogManager::open_in(sim.fs(), "/data", |_| config(), crate::tests::clock_at(NOW)).unwrap()
}

/// Appends one-record batches until the log has `segments` segments and returns the bases.
fn append_until(log: &mut Log, segments: usize) -> Vec<i64> {
    while log.number_of_segments() < segments {
        log.append_as_leader(batch(1, NOW, 40), LeaderEpoch(0), NOW)
            .unwrap();
    }
    log.append_as_leader(batch(1, NOW, 40), LeaderEpoch(0), NOW)
        .unwrap();
    log.segment_base_offsets().iter().map(|o| o.get()).collect()
}

/// Every offset from the log start to the LEO, in order, batch by batch.
fn offsets(log: &mut Log) -> Vec<i64> {
    let mut out = Vec::new();
    let mut at = log.log_start_offset();
    while at < log.log_end_offset() {
        let info = log.read(at, 1 << 20, log.log_end_offset(), true).unwrap();
        let got = crate::tests::fetched(&info);
        assert!(!got.is_empty(), "nothing read at {at:?}");
        for b in got {
            out.extend(b.header().base_offset..=b.header().last_offset());
            at = Offset(b.header().last_offset() + 1);
        }
    }
    out
}

/// A power loss keeps the second segment's writes (written back) while the first segment's unsynced
/// tail is lost (its writeback failed, fsyncgate): recovery from the recovery point must end the log
/// where the first segment now ends, not keep the second one after a hole of missing offsets.
#[test]
fn recovery_ends_the_log_at_a_segment_that_lost_its_tail() {
    let sim = SimFs::new(5);
    let id = uuid::Uuid::from_u128(3);
    let lm = open(&sim);
    let log = lm.get_or_create_log("a", 0, id, config()).unwrap();
    let mut l = log.lock();
    l.append_as_leader(batch(1, NOW, 40), LeaderEpoch(0), NOW)
        .unwrap();
    l.flush().unwrap();
    let bases = append_until(&mut l, 2);
    let leo = l.log_end_offset().get();
    let dir = l.dir().to_path_buf();
    drop(l);
    lm.checkpoint().unwrap();
    // The kernel writes the second segment back; the first one's writeback fails and drops it.
    let sync = |base: i64| {
        let path = dir.join(offset_file_name(base, "log"));
        sim.fs().open(&path, false).unwrap().sync_data()
    };
    sim.fail_next_sync_dropping_on(&offset_file_name(bases[0], "log"));
    assert!(sync(bases[0]).is_err());
    sync(bases[1]).unwrap();
    sim.sync_dir(Path::new(&dir)).unwrap();
    drop((log, lm));
    sim.crash();

    let lm = open(&sim);
    let log = lm.get_or_create_log("a", 0, id, config()).unwrap();
    let mut l = log.lock();
    assert_eq!(
        l.log_end_offset(),
        Offset(1),
        "the log ends where the first segment's durable data ends (LEO was {leo}, segments {bases:?})"
    );
    assert_eq!(offsets(&mut l), vec![0]);
    assert_eq!(l.segment_base_offsets(), vec![Offset(0)]);
    // Appends go on from there with contiguous offsets.
    l.append_as_leader(batch(1, NOW, 40), LeaderEpoch(0), NOW)
        .unwrap();
    assert_eq!(offsets(&mut l), vec![0, 1]);
}

/// A follower truncation between a roll and the flush it schedules keeps that flush: the segments
/// below the new active one are fsynced and the recovery point passes them.
#[test]
fn a_truncation_keeps_the_flush_a_roll_left_pending() {
    let sim = SimFs::new(6);
    let lm = open(&sim);
    let log = lm
        .get_or_create_log("a", 0, uuid::Uuid::from_u128(4), config())
        .unwrap();
    let mut l = log.lock();
    let bases = append_until(&mut l, 2);
    let leo = l.log_end_offset().get();
    assert!(leo > bases[1] + 1, "two batches in the new segment");
    l.truncate_to(Offset(leo - 1)).unwrap();
    assert!(l.maybe_flush(NOW).unwrap(), "the roll's flush still runs");
    assert!(
        l.recovery_point().get() >= bases[1],
        "recovery point {:?} below the roll at {}",
        l.recovery_point(),
        bases[1]
    );
}
