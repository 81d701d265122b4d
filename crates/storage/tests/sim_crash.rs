//! Crash simulation of the real storage code on [`SimFs`]: seeded runs of appends, rolls,
//! flushes, checkpoints, clean shutdowns, disk-full and fsync faults, cut by simulated power
//! losses (unsynced writes lost or torn, unsynced directory entries undone), each followed by a
//! normal reopen with recovery and a check of what a broker would serve.
//!
//! `SIM_SEEDS=<n>` runs n seeds (default 200); `SIM_SEED=<s>` runs only seed s; `SIM_TRACE=1`
//! prints every step. Follower truncations are followed by the recovery-point checkpoint. Every
//! failure names its seed.

use bytes::Bytes;
use protocol::record::{batches, Compression, RecordBatchBuilder, Records};
use std::collections::BTreeMap;
use std::path::Path;
use storage::{FileSystem, LogConfig, LogManager, SimFs, StorageError};
use types::{LeaderEpoch, Offset};

const DATA: &str = "/data";
const TOPIC: &str = "sim";
const NOW: i64 = 1_700_000_000_000;

/// The test's own choices (the file system has its own stream from the same seed).
use storage::vfs::SimRng as Rng;

fn config(rng: &mut Rng) -> LogConfig {
    LogConfig {
        segment_bytes: 600 + rng.below(2000),
        index_interval_bytes: 64 + rng.below(300),
        retention_ms: -1,
        ..LogConfig::default()
    }
}

/// A batch of `n` records whose values name their generation and offset.
fn batch(gen: u64, first_offset: i64, n: usize) -> Bytes {
    let mut b = RecordBatchBuilder::new(Compression::None);
    for i in 0..n {
        let v = format!("{gen}:{}", first_offset + i as i64);
        b.append(NOW, None, Some(Bytes::from(v)), vec![]);
    }
    b.build().unwrap()
}

/// What the test wrote: value per offset, and the offset below which everything was fsynced.
#[derive(Default)]
struct Model {
    values: BTreeMap<i64, String>,
    flushed: i64,
}

struct Sim {
    seed: u64,
    fs: SimFs,
    rng: Rng,
    config: LogConfig,
    model: Model,
    gen: u64,
    crashes: u64,
}

fn open(sim: &Sim) -> Result<LogManager, StorageError> {
    let cfg = sim.config.clone();
    LogManager::open_in(
        sim.fs.fs(),
        DATA,
        move |_| cfg.clone(),
        std::sync::Arc::new(types::ManualClock::new(NOW)),
    )
}

impl Sim {
    fn new(seed: u64) -> Self {
        let fs = SimFs::new(seed);
        fs.create_dir_all(Path::new(DATA)).unwrap();
        fs.sync_dir(Path::new("/")).unwrap();
        let mut rng = Rng(seed ^ 0xD1B5_4A32_D192_ED03);
        let config = config(&mut rng);
        Sim {
            seed,
            fs,
            rng,
            config,
            model: Model::default(),
            gen: 0,
            crashes: 0,
        }
    }

    fn fail(&self, msg: impl std::fmt::Display) -> String {
        format!("seed {} (after {} crashes): {msg}", self.seed, self.crashes)
    }

    /// Reads the whole log and checks it against the model: contiguous offsets from the log
    /// start, CRC-valid batches, every value the one last written at its offset, the LEO right
    /// after the last batch and at or above the flushed offset.
    fn verify(&mut self, mgr: &LogManager) -> Result<(), String> {
        let Some(log) = mgr.get_log(TOPIC, 0) else {
            if self.model.flushed > 0 {
                return Err(self.fail("the log is gone"));
            }
            return Ok(());
        };
        let mut log = log.lock();
        let leo = log.log_end_offset().get();
        if leo < self.model.flushed {
            return Err(self.fail(format!(
                "LogEndOffset {leo} below the flushed offset {}",
                self.model.flushed
            )));
        }
        let mut next = log.log_start_offset().get();
        if next != 0 {
            return Err(self.fail(format!("log start {next}, expected 0")));
        }
        while next < leo {
            let info = log
                .read(Offset(next), 1 << 20, Offset(leo), true)
                .map_err(|e| self.fail(format!("read at {next}: {e}")))?;
            let bytes = match &info.records {
                Records::Memory(b) => b.clone(),
                Records::File(_) => return Err(self.fail("SimFs served a file slice")),
            };
            if bytes.is_empty() {
                return Err(self.fail(format!("empty read at {next} below LEO {leo}")));
            }
            for b in batches(&bytes) {
                let b = b.map_err(|e| self.fail(format!("bad batch near {next}: {e}")))?;
                b.validate()
                    .map_err(|e| self.fail(format!("corrupt batch served at {next}: {e}")))?;
                for r in b.records().map_err(|e| self.fail(e))? {
                    if r.offset != next {
                        return Err(self.fail(format!("offset {} where {next} expected", r.offset)));
                    }
                    let got =
                        String::from_utf8_lossy(r.value.as_deref().unwrap_or(b"")).to_string();
                    if self.model.values.get(&next) != Some(&got) {
                        return Err(self.fail(format!(
                            "offset {next} holds {got:?}, wrote {:?}",
                            self.model.values.get(&next)
                        )));
                    }
                    next += 1;
                }
            }
        }
        if next != leo {
            return Err(self.fail(format!("batches end at {next}, LogEndOffset {leo}")));
        }
        // Forget what the crash took: those offsets are assigned anew.
        self.model.values.split_off(&leo);
        self.model.flushed = self.model.flushed.min(leo);
        Ok(())
    }

    /// One step on a running broker; false when the step ended this run (crash or shutdown).
    fn step(&mut self, mgr: &LogManager) -> Result<bool, String> {
        let log = match mgr.get_or_create_log(TOPIC, 0, uuid::Uuid::nil(), self.config.clone()) {
            Ok(l) => l,
            Err(_) => return Ok(self.rng.chance(30)),
        };
        let r = self.rng.below(100);
        if std::env::var("SIM_TRACE").is_ok() {
            let l = log.lock();
            eprintln!(
                "step r={r} leo={} rp={} flushed={} segs={:?} offline={}",
                l.log_end_offset().get(),
                l.recovery_point().get(),
                self.model.flushed,
                l.segment_base_offsets(),
                l.is_offline()
            );
        }
        if r < 60 {
            let mut l = log.lock();
            let leo = l.log_end_offset().get();
            let n = 1 + self.rng.below(8) as usize;
            self.gen += 1;
            let epoch = LeaderEpoch(0);
            // A failed append (ENOSPC on an index after the data went in) may still be on disk
            // after a crash: its values are what those offsets may hold.
            match l.append_as_leader(batch(self.gen, leo, n), epoch, NOW) {
                Ok(info) => assert_eq!(info.first_offset.get(), leo, "seed {}", self.seed),
                Err(StorageError::LogOffline(_)) => return Ok(true),
                Err(_) => {}
            }
            for i in 0..n as i64 {
                self.model
                    .values
                    .insert(leo + i, format!("{}:{}", self.gen, leo + i));
            }
        } else if r < 72 {
            let mut l = log.lock();
            if l.flush().is_ok() {
                self.model.flushed = l.log_end_offset().get();
            }
        } else if r < 78 {
            let _ = mgr.checkpoint();
        } else if r < 82 {
            let _ = log.lock().force_roll(NOW);
        } else if r < 86 {
            self.fs.set_disk_full(self.rng.chance(50));
        } else if r < 89 {
            self.fs.fail_next_sync();
        } else if r < 93 {
            // A clean shutdown; anything may still be lost by a crash right after it.
            self.fs.set_disk_full(false);
            if mgr.shutdown().is_ok() {
                self.model.flushed = log.lock().log_end_offset().get();
            }
            return Ok(false);
        } else if r < 96 {
            // A follower's truncation (OffsetForLeaderEpoch), possibly below the flushed offset, then
            // the recovery-point checkpoint the replica layer writes right after it (Kafka's
            // `LogManager.truncateTo`; `Partition`'s follower verbs): without it a restart trusted the
            // unflushed appends made after the truncation (this simulation found it: seed 95).
            let mut l = log.lock();
            let to = self.rng.below(l.log_end_offset().get() as u64 + 1) as i64;
            let truncated = l.truncate_to(Offset(to));
            let leo = l.log_end_offset().get();
            drop(l);
            match truncated {
                Ok(()) => {
                    // Whole batches go: the LEO may end below `to`.
                    self.model.values.split_off(&leo);
                    self.model.flushed = self.model.flushed.min(leo);
                    // A failed checkpoint takes the directory offline: later appends are refused.
                    let _ = mgr.checkpoint();
                }
                Err(StorageError::LogOffline(_)) => {}
                // Failed midway (EIO, ENOSPC): the batch holding `to` (at most 8 records) and
                // everything after may be gone after a crash.
                Err(_) => self.model.flushed = self.model.flushed.min((to - 7).max(0)),
            }
        } else {
            return Ok(false);
        }
        Ok(true)
    }

    fn run(&mut self, steps: usize) -> Result<(), String> {
        let mut mgr = open(self).map_err(|e| self.fail(format!("first open: {e}")))?;
        for _ in 0..steps {
            if self.step(&mgr)? {
                continue;
            }
            drop(mgr);
            if self.rng.chance(80) {
                if std::env::var("SIM_TRACE").is_ok() {
                    eprintln!("crash");
                }
                self.fs.crash();
                self.crashes += 1;
            }
            self.fs.clear_faults();
            mgr = open(self).map_err(|e| self.fail(format!("reopen: {e}")))?;
            self.verify(&mgr)?;
        }
        drop(mgr);
        self.fs.crash();
        self.crashes += 1;
        self.fs.clear_faults();
        let mgr = open(self).map_err(|e| self.fail(format!("final reopen: {e}")))?;
        self.verify(&mgr)
    }
}

fn seeds() -> Vec<u64> {
    storage::vfs::sim_seeds(1, 200)
}

/// Many seeded runs: every flushed record survives every crash, nothing corrupt or stale is
/// served, the LogEndOffset ends the last batch.
#[test]
fn crash_recovery_keeps_flushed_records_over_seeds() {
    let seeds = seeds();
    println!(
        "crash simulation over {} seeds (SIM_SEEDS / SIM_SEED)",
        seeds.len()
    );
    let failures: Vec<String> = seeds
        .iter()
        .filter_map(|&seed| Sim::new(seed).run(150).err())
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} seeds failed; first: {}",
        failures.len(),
        seeds.len(),
        failures[0]
    );
}

/// The clean-shutdown marker must not let a crash after the next start skip recovery: the
/// marker is removed (durably) at start, so unsynced appends after it are checked and a torn
/// tail is cut.
#[test]
fn crash_after_clean_restart_runs_recovery() {
    for seed in 1..=50u64 {
        let mut sim = Sim::new(seed);
        println!("seed {seed}");
        let mgr = open(&sim).unwrap();
        let log = mgr
            .get_or_create_log(TOPIC, 0, uuid::Uuid::nil(), sim.config.clone())
            .unwrap();
        for _ in 0..5 {
            sim.gen += 1;
            let leo = log.lock().log_end_offset().get();
            log.lock()
                .append_as_leader(batch(sim.gen, leo, 3), LeaderEpoch(0), NOW)
                .unwrap();
            for k in 0..3 {
                sim.model
                    .values
                    .insert(leo + k, format!("{}:{}", sim.gen, leo + k));
            }
        }
        mgr.shutdown().unwrap();
        sim.model.flushed = log.lock().log_end_offset().get();
        drop((log, mgr));
        let mgr = open(&sim).unwrap();
        assert!(mgr.had_clean_shutdown(), "seed {seed}");
        let log = mgr.get_log(TOPIC, 0).unwrap();
        for _ in 0..4 {
            sim.gen += 1;
            let leo = log.lock().log_end_offset().get();
            log.lock()
                .append_as_leader(batch(sim.gen, leo, 2), LeaderEpoch(0), NOW)
                .unwrap();
            for k in 0..2 {
                sim.model
                    .values
                    .insert(leo + k, format!("{}:{}", sim.gen, leo + k));
            }
        }
        drop((log, mgr));
        sim.fs.crash();
        let mgr = open(&sim).unwrap();
        assert!(!mgr.had_clean_shutdown(), "seed {seed}: marker survived");
        sim.verify(&mgr).unwrap();
    }
}

/// RealFs and SimFs agree on what a log serves without faults (the seam changes no behaviour).
#[test]
fn real_and_sim_serve_the_same_bytes() {
    let d = tempfile::tempdir().unwrap();
    let sim = SimFs::new(7);
    sim.create_dir_all(Path::new(DATA)).unwrap();
    let cfg = LogConfig {
        segment_bytes: 700,
        index_interval_bytes: 100,
        ..LogConfig::default()
    };
    let c2 = cfg.clone();
    let real = LogManager::open(
        d.path(),
        move |_| c2.clone(),
        std::sync::Arc::new(types::ManualClock::new(NOW)),
    )
    .unwrap();
    let c3 = cfg.clone();
    let simm = LogManager::open_in(
        sim.fs(),
        DATA,
        move |_| c3.clone(),
        std::sync::Arc::new(types::ManualClock::new(NOW)),
    )
    .unwrap();
    let mut out = Vec::new();
    for mgr in [&real, &simm] {
        let log = mgr
            .get_or_create_log(TOPIC, 0, uuid::Uuid::nil(), cfg.clone())
            .unwrap();
        let mut l = log.lock();
        for i in 0..40 {
            let leo = l.log_end_offset().get();
            l.append_as_leader(batch(i, leo, 1 + (i as usize % 4)), LeaderEpoch(0), NOW)
                .unwrap();
        }
        let mut served = Vec::new();
        let mut next = 0;
        while next < l.log_end_offset().get() {
            let leo = l.log_end_offset();
            let info = l.read(Offset(next), 300, leo, true).unwrap();
            let b = storage::records_to_bytes(&info.records).unwrap();
            next = batches(&b)
                .map(|b| b.unwrap().next_offset())
                .last()
                .unwrap();
            served.push(b);
        }
        out.push((served, l.segment_base_offsets()));
    }
    assert_eq!(out[0], out[1]);
}

fn append(sim: &mut Sim, mgr: &LogManager, n: usize) {
    let log = mgr
        .get_or_create_log(TOPIC, 0, uuid::Uuid::nil(), sim.config.clone())
        .unwrap();
    let mut l = log.lock();
    let leo = l.log_end_offset().get();
    sim.gen += 1;
    l.append_as_leader(batch(sim.gen, leo, n), LeaderEpoch(0), NOW)
        .unwrap();
    for k in 0..n as i64 {
        sim.model
            .values
            .insert(leo + k, format!("{}:{}", sim.gen, leo + k));
    }
}

/// A new log's first segment is created after the directory's last fsync: a flush must make its
/// name durable (today the leader-epoch checkpoint written by the first leader append fsyncs the
/// directory too; the log's first flush now does so itself).
#[test]
fn flushed_records_of_a_new_log_survive_a_crash() {
    let mut sim = Sim::new(1);
    let mgr = open(&sim).unwrap();
    append(&mut sim, &mgr, 5);
    let log = mgr.get_log(TOPIC, 0).unwrap();
    log.lock().flush().unwrap();
    sim.model.flushed = log.lock().log_end_offset().get();
    drop((log, mgr));
    sim.fs.crash();
    let mgr = open(&sim).unwrap();
    sim.verify(&mgr).unwrap();
}

/// Regression: segments rolled by a process that died before fsyncing the directory were
/// recovered (data fsynced, recovery point moved past them) without a directory fsync, so even
/// a later clean shutdown left their names undurable and a power loss dropped flushed records.
#[test]
fn segments_recovered_after_a_process_crash_survive_a_power_loss() {
    let mut sim = Sim::new(2);
    let mgr = open(&sim).unwrap();
    append(&mut sim, &mgr, 3);
    mgr.get_log(TOPIC, 0)
        .unwrap()
        .lock()
        .force_roll(NOW)
        .unwrap();
    append(&mut sim, &mgr, 3);
    // kill -9: the page cache keeps everything, nothing was fsynced.
    drop(mgr);
    let mgr = open(&sim).unwrap();
    assert!(!mgr.had_clean_shutdown());
    mgr.shutdown().unwrap();
    sim.model.flushed = 6;
    drop(mgr);
    sim.fs.crash();
    let mgr = open(&sim).unwrap();
    sim.verify(&mgr).unwrap();
}
