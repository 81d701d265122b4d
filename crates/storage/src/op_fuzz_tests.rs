//! Op-fuzz property test: random append / roll / read / truncate / delete-records / clean
//! reopen / crash (with a torn active segment) against an in-memory model.
//! Seed: env `RUNNEL_STORAGE_FUZZ_SEED` or random; printed on every run.

use crate::tests::fetched;
use crate::*;
use bytes::Bytes;
use protocol::record::{Compression, RecordBatchBuilder};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use types::{LeaderEpoch, Offset};

#[derive(Debug, Clone)]
struct ModelBatch {
    base: i64,
    values: Vec<Vec<u8>>,
    size: u64,
}

impl ModelBatch {
    fn next(&self) -> i64 {
        self.base + self.values.len() as i64
    }
}

struct Model {
    batches: Vec<ModelBatch>,
    log_start: i64,
    leo: i64,
}

impl Model {
    fn leo(&self) -> i64 {
        self.leo
    }
}

fn config(rng: &mut StdRng) -> LogConfig {
    LogConfig {
        segment_bytes: rng.gen_range(800..4000),
        index_interval_bytes: rng.gen_range(1..500),
        segment_index_bytes: rng.gen_range(16..200),
        retention_ms: -1,
        ..LogConfig::default()
    }
}

const NOW: i64 = 1_700_000_000_000;

fn check_read(log: &mut Log, model: &Model, start: i64, max_bytes: usize, seed: u64) {
    let leo = model.leo();
    let r = log.read(Offset(start), max_bytes, Offset(leo), true);
    if start < model.log_start || start > leo {
        assert!(
            matches!(r, Err(StorageError::OffsetOutOfRange { .. })),
            "seed {seed}: start {start}"
        );
        return;
    }
    let got = fetched(&r.unwrap());
    if start == leo {
        assert!(got.is_empty(), "seed {seed}");
        return;
    }
    assert!(
        !got.is_empty(),
        "seed {seed}: empty read at {start} (leo {leo})"
    );
    let first = model.batches.iter().position(|b| b.next() > start).unwrap();
    for (i, b) in got.iter().enumerate() {
        let m = &model.batches[first + i];
        assert_eq!(b.base_offset(), m.base, "seed {seed}");
        b.validate().unwrap();
        let recs = b.records().unwrap();
        assert_eq!(recs.len(), m.values.len(), "seed {seed}");
        for (r, v) in recs.iter().zip(&m.values) {
            assert_eq!(r.value.as_deref(), Some(&v[..]), "seed {seed}");
        }
    }
    let total: u64 = got.iter().map(|b| b.size_in_bytes() as u64).sum();
    assert!(got.len() == 1 || total <= max_bytes as u64, "seed {seed}");
}

fn run(seed: u64, ops: usize) {
    let mut rng = StdRng::seed_from_u64(seed);
    let d = tempfile::tempdir().unwrap();
    let cfg = config(&mut rng);
    let mut log = Log::open(
        d.path(),
        cfg.clone(),
        uuid::Uuid::nil(),
        false,
        Offset(0),
        NOW,
    )
    .unwrap();
    let mut model = Model {
        batches: Vec::new(),
        log_start: 0,
        leo: 0,
    };
    let mut counter = 0u32;
    for _ in 0..ops {
        match rng.gen_range(0..100) {
            0..=44 => {
                let n = rng.gen_range(1..6);
                let codec = Compression::ALL[rng.gen_range(0..5)];
                let mut b = RecordBatchBuilder::new(codec);
                let mut values = Vec::new();
                for _ in 0..n {
                    counter += 1;
                    let len = rng.gen_range(0..120);
                    let mut v = counter.to_be_bytes().to_vec();
                    v.resize(4 + len, (counter % 251) as u8);
                    b.append(
                        NOW + counter as i64,
                        None,
                        Some(Bytes::from(v.clone())),
                        vec![],
                    );
                    values.push(v);
                }
                let bytes = b.build().unwrap();
                let size = bytes.len() as u64;
                let info = log.append_as_leader(bytes, LeaderEpoch(0), NOW).unwrap();
                assert_eq!(info.first_offset, Offset(model.leo()), "seed {seed}");
                model.batches.push(ModelBatch {
                    base: info.first_offset.get(),
                    values,
                    size,
                });
                model.leo = (info.last_offset + 1).get();
                log.update_high_watermark(Offset(model.leo()));
            }
            45..=64 => {
                let lo = model.log_start - 1;
                let hi = model.leo() + 1;
                let start = rng.gen_range(lo..=hi);
                let max_bytes = rng.gen_range(1..2000);
                check_read(&mut log, &model, start, max_bytes, seed);
            }
            65..=69 => log.force_roll(NOW).unwrap(),
            70..=74 => {
                let to = rng.gen_range(model.log_start..=model.leo());
                let first_base = log.segment_base_offsets()[0];
                log.truncate_to(Offset(to)).unwrap();
                if to >= model.leo {
                    // no-op
                } else if to <= first_base.get() || to < model.log_start {
                    model.batches.clear();
                    model.log_start = to;
                    model.leo = to;
                } else {
                    model.batches.retain(|b| b.next() <= to);
                    model.leo = model.batches.last().map_or(first_base.get(), |b| b.next());
                    model.log_start = model.log_start.min(model.leo);
                }
                assert_eq!(
                    log.log_end_offset(),
                    Offset(model.leo),
                    "seed {seed}: truncate_to({to})"
                );
                assert_eq!(
                    log.log_start_offset(),
                    Offset(model.log_start),
                    "seed {seed}: truncate_to({to})"
                );
                log.update_high_watermark(Offset(model.leo));
            }
            75..=79 => {
                let to = rng.gen_range(model.log_start..=model.leo());
                log.delete_records_before(Offset(to)).unwrap();
                model.log_start = model.log_start.max(to);
                assert_eq!(
                    log.log_start_offset(),
                    Offset(model.log_start),
                    "seed {seed}"
                );
                let first_base = log.segment_base_offsets()[0];
                model.batches.retain(|b| b.base >= first_base.get());
            }
            80..=87 => {
                log.close().unwrap();
                drop(log);
                log = Log::open(
                    d.path(),
                    cfg.clone(),
                    uuid::Uuid::nil(),
                    false,
                    Offset(0),
                    NOW,
                )
                .unwrap();
                log.restore_log_start_offset(Offset(model.log_start));
                log.update_high_watermark(Offset(model.leo));
                assert_eq!(
                    log.log_end_offset(),
                    Offset(model.leo),
                    "seed {seed}: clean reopen"
                );
                assert_eq!(
                    log.log_start_offset(),
                    Offset(model.log_start),
                    "seed {seed}: clean reopen"
                );
            }
            _ => {
                // crash: drop without close, tear the active segment at a random point
                let rp = log.recovery_point();
                let bases = log.segment_base_offsets();
                let active = *bases.last().unwrap();
                drop(log);
                let path = d.path().join(offset_file_name(active.get(), "log"));
                let len = std::fs::metadata(&path).unwrap().len();
                let cut = if rng.gen_bool(0.5) {
                    len
                } else {
                    rng.gen_range(0..=len)
                };
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .unwrap()
                    .set_len(cut)
                    .unwrap();
                let mut end = 0u64;
                model.batches.retain(|b| {
                    if b.base < active.get() {
                        return true;
                    }
                    end += b.size;
                    end <= cut
                });
                model.leo = match model.batches.last() {
                    Some(b) if b.base >= active.get() => b.next(),
                    _ => active.get(),
                };
                if model.log_start > model.leo {
                    model.log_start = bases[0].get();
                }
                log = Log::open(
                    d.path(),
                    cfg.clone(),
                    uuid::Uuid::nil(),
                    true,
                    rp.min(active),
                    NOW,
                )
                .unwrap();
                log.restore_log_start_offset(Offset(model.log_start));
                assert_eq!(
                    log.log_end_offset(),
                    Offset(model.leo),
                    "seed {seed}: crash at cut {cut}/{len}"
                );
                assert_eq!(
                    log.log_start_offset(),
                    Offset(model.log_start),
                    "seed {seed}: crash"
                );
                log.update_high_watermark(Offset(model.leo));
            }
        }
        assert_eq!(log.log_end_offset(), Offset(model.leo), "seed {seed}");
        assert_eq!(
            log.log_start_offset(),
            Offset(model.log_start),
            "seed {seed}"
        );
    }
    // final full check
    let leo = model.leo();
    let mut o = model.log_start;
    while o < leo {
        check_read(&mut log, &model, o, 1 << 20, seed);
        o += 1;
    }
}

#[test]
fn op_fuzz_against_model() {
    let seed: u64 = std::env::var("RUNNEL_STORAGE_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::thread_rng().gen());
    println!("op_fuzz seed = {seed} (set RUNNEL_STORAGE_FUZZ_SEED to replay)");
    let mut rng = StdRng::seed_from_u64(seed);
    for _ in 0..8 {
        run(rng.gen(), 200);
    }
}
