//! Op-fuzz test of transactions: random transactional and plain appends, COMMIT/ABORT markers, rolls,
//! truncations, clean reopens and crashes (with the `.txnindex` files deleted when every segment is
//! re-read) against a model replaying the appended batches. Checked after every op: the ongoing
//! transactions, the aborted transactions found across all segments, and the LastStableOffset.
//! Seed: env `RUNNEL_STORAGE_FUZZ_SEED` or random; printed on every run.

use crate::*;
use bytes::Bytes;
use protocol::record::{Compression, RecordBatchBuilder};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use types::{LeaderEpoch, Offset, ProducerEpoch, ProducerId};

const NOW: i64 = 1_700_000_000_000;

/// One appended batch: `n` records of producer `pid` (transactional) or of no producer, or a marker.
#[derive(Debug, Clone, Copy)]
enum Event {
    Data { base: i64, n: i64, pid: Option<i64> },
    Marker { base: i64, pid: i64, abort: bool },
}

impl Event {
    fn base(&self) -> i64 {
        match *self {
            Event::Data { base, .. } | Event::Marker { base, .. } => base,
        }
    }
}

/// An aborted transaction as (producer id, first offset, marker offset).
type Aborted = (i64, i64, i64);

/// Ongoing transactions (pid → first offset) and aborted ones, from the events.
fn model(events: &[Event]) -> (BTreeMap<i64, i64>, Vec<Aborted>) {
    let mut ongoing = BTreeMap::new();
    let mut aborted = Vec::new();
    for e in events {
        match *e {
            Event::Data {
                base, pid: Some(p), ..
            } => {
                ongoing.entry(p).or_insert(base);
            }
            Event::Data { .. } => {}
            Event::Marker { base, pid, abort } => {
                if let Some(first) = ongoing.remove(&pid) {
                    if abort {
                        aborted.push((pid, first, base));
                    }
                }
            }
        }
    }
    (ongoing, aborted)
}

fn check(log: &mut Log, events: &[Event], seed: u64) {
    let (ongoing, aborted) = model(events);
    let leo = log.log_end_offset();
    log.update_high_watermark(leo);
    let mut want: Vec<(ProducerId, Offset)> = ongoing
        .iter()
        .map(|(&p, &f)| (ProducerId(p), Offset(f)))
        .collect();
    want.sort_by_key(|&(_, f)| f);
    assert_eq!(log.producer_state().ongoing_txns(), want, "seed {seed}");
    let got: Vec<Aborted> = log
        .collect_aborted_transactions(Offset(0), leo)
        .iter()
        .map(|t| {
            (
                t.producer_id.get(),
                t.first_offset.get(),
                t.last_offset.get(),
            )
        })
        .collect();
    assert_eq!(got, aborted, "seed {seed}");
    let lso = ongoing.values().min().map_or(leo.get(), |&f| f);
    assert_eq!(log.last_stable_offset(), Offset(lso), "seed {seed}");
}

fn run(seed: u64, ops: usize) {
    let mut rng = StdRng::seed_from_u64(seed);
    let d = tempfile::tempdir().unwrap();
    let config = LogConfig {
        segment_bytes: rng.gen_range(400..2000),
        index_interval_bytes: rng.gen_range(1..300),
        retention_ms: -1,
        ..LogConfig::default()
    };
    let open = |recover: bool, rp: Offset| {
        Log::open(
            d.path(),
            config.clone(),
            uuid::Uuid::nil(),
            recover,
            rp,
            NOW,
        )
        .unwrap()
    };
    let mut log = open(false, Offset(0));
    let mut events: Vec<Event> = Vec::new();
    let mut seqs = [0i32; 3];
    for _ in 0..ops {
        match rng.gen_range(0..100) {
            0..=49 => {
                let n = rng.gen_range(1..4);
                let pid = rng.gen_bool(0.8).then(|| rng.gen_range(0..3i64));
                let mut b = RecordBatchBuilder::new(Compression::None);
                if let Some(p) = pid {
                    b = b.producer(p, 0, seqs[p as usize]).transactional(true);
                }
                for i in 0..n {
                    b.append(NOW + i, None, Some(Bytes::from_static(b"value")), vec![]);
                }
                let info = log
                    .append_as_leader(b.build().unwrap(), LeaderEpoch(0), NOW)
                    .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
                if let Some(p) = pid {
                    seqs[p as usize] += n as i32;
                }
                events.push(Event::Data {
                    base: info.first_offset.get(),
                    n,
                    pid,
                });
            }
            50..=74 => {
                let pid = rng.gen_range(0..3i64);
                let abort = rng.gen_bool(0.5);
                let info = log
                    .append_end_txn_marker(
                        ProducerId(pid),
                        ProducerEpoch(0),
                        EndTransactionMarker::new(!abort, 0),
                        LeaderEpoch(0),
                        NOW,
                    )
                    .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
                events.push(Event::Marker {
                    base: info.first_offset.get(),
                    pid,
                    abort,
                });
            }
            75..=82 => log.force_roll(NOW).unwrap(),
            83..=88 if !events.is_empty() => {
                let cut = rng.gen_range(0..events.len());
                let at = events[cut].base();
                log.truncate_to(Offset(at)).unwrap();
                events.truncate(cut);
                // The producers' last sequences follow the surviving batches.
                seqs = [0; 3];
                for e in &events {
                    if let Event::Data {
                        n, pid: Some(p), ..
                    } = *e
                    {
                        seqs[p as usize] += n as i32;
                    }
                }
            }
            89..=93 => {
                log.close().unwrap();
                log = open(false, log.recovery_point());
            }
            _ => {
                let rp = log.recovery_point();
                drop(log);
                let everything = rng.gen_bool(0.5);
                if everything {
                    for e in std::fs::read_dir(d.path()).unwrap() {
                        let p = e.unwrap().path();
                        if p.extension().is_some_and(|x| x == "txnindex") {
                            std::fs::remove_file(p).unwrap();
                        }
                    }
                }
                log = open(true, if everything { Offset(0) } else { rp });
            }
        }
        check(&mut log, &events, seed);
    }
}

#[test]
fn txn_op_fuzz() {
    let seed = std::env::var("RUNNEL_STORAGE_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random::<u64>);
    eprintln!("txn op fuzz seed {seed} (RUNNEL_STORAGE_FUZZ_SEED)");
    for i in 0..8 {
        run(seed.wrapping_add(i), 150);
    }
}
