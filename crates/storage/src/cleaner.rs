//! Log compaction (Kafka's `LogCleaner`, `LogCleanerManager`, `Cleaner`, `OffsetMap`).
//!
//! One background thread ([`LogCleaner`](crate::LogCleaner) in `log_cleaner.rs`, `log.cleaner.threads` = 1)
//! repeatedly picks the log most in need of cleaning among those whose `cleanup.policy` contains `compact` and
//! cleans it with [`Cleaner`]:
//!
//! - **Cleanable range.** Only inactive segments (never the active one, never at or above the high watermark)
//!   whose largest timestamp is at least `min.compaction.lag.ms` old (KIP-58), up to the first segment that
//!   is not. The *dirty* section starts at the log's first-dirty offset (the `cleaner-offset-checkpoint`
//!   entry, else the log start offset).
//! - **Selection.** A log qualifies when dirty bytes / (clean + dirty bytes) of the cleanable range ≥
//!   `min.cleanable.dirty.ratio`, when its oldest dirty batch is older than `max.compaction.lag.ms` (KIP-354;
//!   these go first), or when a tombstone's delete horizon has passed. Among qualifying logs the dirtiest is
//!   cleaned.
//! - **Offset map.** A map from a 128-bit hash of each key to the offset of its latest record is built over
//!   the dirty section. Its memory is bounded by `log.cleaner.dedupe.buffer.size` (bytes, see
//!   [`CleanerConfig`]); when it fills, cleaning covers the dirty section only up to the batch where it
//!   filled and the rest waits for the next round.
//! - **Rewrite.** Every segment from the log start up to the end of the mapped range is rewritten keeping a
//!   record iff it is the latest of its key (records past the mapped range are kept as they are). Offsets are
//!   never renumbered: a rewritten batch keeps its base offset, last offset delta, producer id/epoch/base
//!   sequence and codec (compressed batches are decompressed and recompressed with the same codec); records
//!   keep their offset deltas. A batch left without records is dropped, unless it holds an active producer's
//!   last sequence or epoch: then, as in Kafka, its header stays as an empty batch (see
//!   [`crate::cleaner_txn`]). Records without a key are dropped (Kafka does the same). A segment that would
//!   not change is not rewritten.
//! - **Transactions** ([`crate::cleaner_txn`], Kafka's `CleanedTransactionMetadata`): aborted data batches
//!   are dropped whole; a transaction marker whose transaction has no data left gets a delete horizon (as
//!   tombstones do) and is removed by a clean after it; the cleaned segment's `.txnindex` keeps only the
//!   aborted transactions whose markers still decide data.
//! - **Tombstones** (null value) follow KIP-534: the first clean that keeps a tombstone rewrites its batch
//!   with the delete-horizon attribute (bit 6) and baseTimestamp = now + `delete.retention.ms` (record
//!   timestamp deltas re-based so record timestamps are unchanged); a later clean after the horizon removes
//!   it. A log whose earliest pending horizon has passed is cleaned even if not dirty.
//! - **Atomic replacement** (Kafka's `.cleaned`/`.swap` protocol): the output is written to
//!   `<base>.log.cleaned` and the `.index`, `.timeindex` and `.txnindex` `.cleaned` files, fsynced without
//!   the log's lock; then, under the lock, renamed to `.swap` (the `.log` rename and a directory fsync are
//!   the commit point), renamed over the live files, and the in-memory segment replaced
//!   ([`Log::swap_cleaned_segment`]). Recovery at open deletes `.cleaned` files (the old segment is intact)
//!   and completes a committed `.log.swap` (indexes rebuilt), so a crash leaves either the old or the new
//!   segment, never a mix. Segments are swapped in ascending order, each durable before the next, so a crash
//!   cannot leave a newer segment whose tombstone was removed behind an older one still holding that key's
//!   values. Segments are cleaned one for one (no grouping), and a cleaned segment left empty is deleted
//!   unless it is the first.
//! - **Throttle**: reads and writes are limited to `log.cleaner.io.max.bytes.per.second`.
//! - **Checkpoint**: after a log is cleaned up to offset `o`, `<data dir>/cleaner-offset-checkpoint` (Kafka's
//!   offset checkpoint format, [`OffsetCheckpointFile`]) records `o` as the log's first dirty offset, so a
//!   restart does not re-map what was already cleaned.
//!
//! Fetches over cleaned regions return whole batches with offset gaps; clients skip ahead.

use crate::checkpoint::OffsetCheckpointFile;
use crate::cleaner_batch::{parse_raw_records, records_section, BatchReader};
use crate::cleaner_txn::{TxnCleanState, TxnVerdict};
use crate::error::StorageError;
use crate::log::{discard_cleaned, CleanerSegment, CleanerView, Log, SwapStep};
use crate::manager::TopicPartition;
use crate::offset_map::OffsetMap;
use crate::segment::{AppendedBatch, LogSegment};
use bytes::Bytes;
use parking_lot::Mutex;
use protocol::record::RecordBatchHeader;
use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Name of the checkpoint of first dirty offsets in the data directory (Kafka's name).
pub const CLEANER_OFFSET_CHECKPOINT: &str = "cleaner-offset-checkpoint";

/// Bytes of output gathered before one write to the cleaned segment.
const WRITE_CHUNK: usize = 1 << 20;

/// Cleaner settings (broker-wide keys, Kafka's names and defaults).
#[derive(Debug, Clone)]
pub struct CleanerConfig {
    /// `log.cleaner.dedupe.buffer.size`: memory for the offset map (bytes). Default 128 MiB.
    pub dedupe_buffer_size: usize,
    /// `log.cleaner.io.max.bytes.per.second`: read + write throttle (bytes/s). Default
    /// unlimited (`f64::INFINITY`).
    pub io_max_bytes_per_second: f64,
    /// `log.cleaner.backoff.ms`: sleep when no log needs cleaning (ms). Default 15000.
    pub backoff_ms: u64,
}

impl Default for CleanerConfig {
    fn default() -> Self {
        CleanerConfig {
            dedupe_buffer_size: 128 << 20,
            io_max_bytes_per_second: f64::INFINITY,
            backoff_ms: 15_000,
        }
    }
}

/// What one clean of one log did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CleanerStats {
    /// First dirty offset before the clean.
    pub first_dirty_offset: i64,
    /// Offset the log is now cleaned up to (the new first dirty offset).
    pub end_offset: i64,
    /// Bytes read (map building + rewriting).
    pub bytes_read: u64,
    /// Bytes written to cleaned segments.
    pub bytes_written: u64,
    /// Bytes of the segments rewritten (the "log cleaned" for throughput).
    pub segment_bytes_cleaned: u64,
    /// Records examined while rewriting.
    pub records_read: u64,
    /// Records kept.
    pub records_retained: u64,
    /// Tombstones removed because their delete horizon passed.
    pub tombstones_removed: u64,
    /// Data batches of aborted transactions removed.
    pub aborted_batches_removed: u64,
    /// Transaction markers removed because their delete horizon passed.
    pub txn_markers_removed: u64,
    /// Segments replaced.
    pub segments_swapped: u64,
    /// Keys in the offset map.
    pub map_entries: u64,
    /// Peak memory the cleaner accounted for (offset map + buffers, bytes).
    pub peak_memory_bytes: u64,
    /// Wall time of the clean.
    pub elapsed: Duration,
}

impl CleanerStats {
    /// Segment bytes cleaned per second, in MB/s (10^6 bytes).
    pub fn mb_per_sec(&self) -> f64 {
        let s = self.elapsed.as_secs_f64().max(1e-9);
        self.segment_bytes_cleaned as f64 / 1e6 / s
    }
}

/// Limits I/O to a rate by sleeping (Kafka's `Throttler`), in slices so a stop is noticed.
struct Throttler {
    rate: f64,
    start: Instant,
    bytes: f64,
}

impl Throttler {
    fn new(rate: f64) -> Self {
        Throttler {
            rate,
            start: Instant::now(),
            bytes: 0.0,
        }
    }

    fn account(&mut self, n: usize, stop: &AtomicBool) {
        if !self.rate.is_finite() || self.rate <= 0.0 {
            return;
        }
        self.bytes += n as f64;
        let elapsed = self.start.elapsed().as_secs_f64();
        let due = self.bytes / self.rate;
        if due > elapsed {
            let mut left = Duration::from_secs_f64(due - elapsed);
            while !left.is_zero() && !stop.load(Ordering::Relaxed) {
                let step = left.min(Duration::from_millis(100));
                std::thread::sleep(step);
                left -= step;
            }
        }
        if elapsed > 1.0 {
            // Restart the window so an idle period does not buy a burst.
            self.start = Instant::now();
            self.bytes = 0.0;
        }
    }
}

fn stopping() -> StorageError {
    StorageError::KafkaStorage(io::Error::new(
        io::ErrorKind::Interrupted,
        "log cleaner stopping",
    ))
}

/// Per-log cleaning decision.
#[derive(Debug, Clone)]
struct Plan {
    first_dirty: i64,
    /// Inactive segments that may be cleaned (fully below the first uncleanable offset).
    cleanable: Vec<CleanerSegment>,
    ratio: f64,
    /// max.compaction.lag.ms exceeded or a tombstone horizon passed.
    urgent: bool,
    /// Dirty enough or urgent.
    wanted: bool,
    fs: crate::vfs::Fs,
    dir: std::path::PathBuf,
    config: crate::config::LogConfig,
    aborted: crate::cleaner_txn::AbortedRanges,
    last_records: crate::cleaner_txn::LastRecords,
}

/// The cleaning engine: state (first dirty offsets, pending tombstone horizons) and the
/// algorithm; [`LogCleaner`](crate::LogCleaner) runs it on a thread. Usable directly (tests, tools).
pub struct Cleaner {
    config: CleanerConfig,
    checkpoint: OffsetCheckpointFile,
    first_dirty: HashMap<TopicPartition, i64>,
    horizons: HashMap<TopicPartition, i64>,
    /// Which `Log` object each partition was when last seen (detects delete + recreate).
    identity: HashMap<TopicPartition, usize>,
    pub(crate) stop: Arc<AtomicBool>,
    /// Test hook: crash the next swap after this step.
    pub(crate) crash_after: Option<SwapStep>,
    gauges: crate::stats::CleanerGauges,
}

impl std::fmt::Debug for Cleaner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cleaner")
            .field("config", &self.config)
            .finish()
    }
}

impl Cleaner {
    /// A cleaner for the logs of data directory `data_dir` on `fs`, loading
    /// `cleaner-offset-checkpoint` (unreadable → start from scratch, with a warning).
    pub fn new(fs: crate::vfs::Fs, data_dir: &std::path::Path, config: CleanerConfig) -> Self {
        let checkpoint = OffsetCheckpointFile::new_in(fs, data_dir.join(CLEANER_OFFSET_CHECKPOINT));
        let first_dirty = match checkpoint.read() {
            Ok(m) => m
                .into_iter()
                .map(|((t, p), o)| (TopicPartition::new(t, p), o))
                .collect(),
            Err(e) => {
                tracing::warn!(error = %e, "ignoring unreadable cleaner offset checkpoint");
                HashMap::new()
            }
        };
        Cleaner {
            config,
            checkpoint,
            first_dirty,
            horizons: HashMap::new(),
            identity: HashMap::new(),
            stop: Arc::new(AtomicBool::new(false)),
            crash_after: None,
            gauges: Default::default(),
        }
    }

    /// The first dirty offset recorded for `tp` (what the checkpoint holds).
    pub fn first_dirty_offset(&self, tp: &TopicPartition) -> Option<i64> {
        self.first_dirty.get(tp).copied()
    }

    /// Earliest pending delete horizon (of a tombstone or a transaction marker) of `tp` (ms), if any.
    pub fn pending_horizon(&self, tp: &TopicPartition) -> Option<i64> {
        self.horizons.get(tp).copied()
    }

    fn plan(&self, tp: &TopicPartition, view: &CleanerView, now_ms: i64) -> Option<Plan> {
        let cfg = &view.config;
        if !cfg.compacts() {
            return None;
        }
        let mut first_uncleanable = view.active_base.min(view.last_stable_offset);
        if cfg.min_compaction_lag_ms > 0 {
            let limit = now_ms.saturating_sub(cfg.min_compaction_lag_ms);
            if let Some(s) = view.segments.iter().find(|s| s.max_timestamp > limit) {
                first_uncleanable = first_uncleanable.min(s.base_offset);
            }
        }
        let cleanable: Vec<CleanerSegment> = view
            .segments
            .iter()
            .filter(|s| s.next_base <= first_uncleanable)
            .cloned()
            .collect();
        if cleanable.is_empty() {
            return None;
        }
        let first_dirty = self
            .first_dirty
            .get(tp)
            .copied()
            .filter(|&o| o >= view.log_start_offset && o <= view.log_end_offset)
            .unwrap_or(view.log_start_offset);
        let (mut clean, mut dirty) = (0u64, 0u64);
        for s in &cleanable {
            if s.next_base <= first_dirty {
                clean += s.size;
            } else {
                dirty += s.size;
            }
        }
        let ratio = dirty as f64 / (clean + dirty).max(1) as f64;
        let mut urgent = self.horizons.get(tp).is_some_and(|&h| h <= now_ms);
        if dirty > 0 && cfg.max_compaction_lag_ms < i64::MAX {
            if let Some(s) = cleanable.iter().find(|s| s.next_base > first_dirty) {
                let mut r = BatchReader::new(s);
                if let Ok(Some((h, _))) = r.next_batch() {
                    let ts = h.max_timestamp;
                    if ts >= 0 && now_ms.saturating_sub(ts) > cfg.max_compaction_lag_ms {
                        urgent = true;
                    }
                }
            }
        }
        let wanted = (dirty > 0 && ratio >= cfg.min_cleanable_dirty_ratio) || urgent;
        Some(Plan {
            first_dirty,
            cleanable,
            ratio,
            urgent,
            wanted,
            fs: view.fs.clone(),
            dir: view.dir.clone(),
            config: view.config.clone(),
            aborted: view.aborted.clone(),
            last_records: view.last_records.clone(),
        })
    }

    /// Picks the log most in need of cleaning among `logs` (urgent ones first, then the
    /// highest dirty ratio) and cleans it. `Ok(None)` when no log qualifies.
    pub fn clean_one(
        &mut self,
        logs: &[(TopicPartition, Arc<Mutex<Log>>)],
        now_ms: i64,
    ) -> Result<Option<(TopicPartition, CleanerStats)>, StorageError> {
        // Forget logs that are gone or were recreated (a new Log under the same name): their
        // first dirty offset no longer describes the data.
        let present: HashMap<&TopicPartition, usize> = logs
            .iter()
            .map(|(tp, l)| (tp, Arc::as_ptr(l) as usize))
            .collect();
        self.first_dirty.retain(|tp, _| present.contains_key(tp));
        self.horizons.retain(|tp, _| present.contains_key(tp));
        self.identity.retain(|tp, _| present.contains_key(tp));
        for (tp, id) in &present {
            if let Some(old) = self.identity.insert((*tp).clone(), *id) {
                if old != *id {
                    self.first_dirty.remove(*tp);
                    self.horizons.remove(*tp);
                }
            }
        }
        let (mut best, mut max_dirty) = (None::<(TopicPartition, Arc<Mutex<Log>>, Plan)>, 0f64);
        for (tp, log) in logs {
            let view = {
                let l = log.lock();
                if l.is_offline() {
                    continue;
                }
                l.cleaner_view()
            };
            if let Some(p) = self.plan(tp, &view, now_ms) {
                max_dirty = max_dirty.max(p.ratio);
                let better = best
                    .as_ref()
                    .is_none_or(|(_, _, b)| (p.urgent, p.ratio) > (b.urgent, b.ratio));
                if p.wanted && better {
                    best = Some((tp.clone(), log.clone(), p));
                }
            }
        }
        let Some((tp, log, plan)) = best else {
            self.gauges.publish(max_dirty, None);
            return Ok(None);
        };
        let stats = self.clean_with_plan(&tp, &log, plan, now_ms)?;
        self.gauges.publish(max_dirty, Some(&stats));
        Ok(Some((tp, stats)))
    }

    /// Cleans `log` now if it has anything cleanable, ignoring the dirty-ratio threshold.
    /// `Ok(None)` when nothing is cleanable (not compacted, no inactive segment old enough).
    pub fn clean_log(
        &mut self,
        tp: &TopicPartition,
        log: &Arc<Mutex<Log>>,
        now_ms: i64,
    ) -> Result<Option<CleanerStats>, StorageError> {
        let view = log.lock().cleaner_view();
        let Some(plan) = self.plan(tp, &view, now_ms) else {
            return Ok(None);
        };
        Ok(Some(self.clean_with_plan(tp, log, plan, now_ms)?))
    }

    fn clean_with_plan(
        &mut self,
        tp: &TopicPartition,
        log: &Arc<Mutex<Log>>,
        plan: Plan,
        now_ms: i64,
    ) -> Result<CleanerStats, StorageError> {
        let started = Instant::now();
        let mut throttler = Throttler::new(self.config.io_max_bytes_per_second);
        let mut stats = CleanerStats {
            first_dirty_offset: plan.first_dirty,
            ..Default::default()
        };
        let mut map = OffsetMap::new(self.config.dedupe_buffer_size);
        let mut peak_buf = 0usize;
        // 1. Offset map over the dirty section.
        let end = self.build_map(&plan, &mut map, &mut stats, &mut throttler, &mut peak_buf)?;
        stats.map_entries = map.len() as u64;
        stats.end_offset = end;
        // 2. Rewrite every segment below `end`.
        let mut min_horizon: Option<i64> = None;
        let mut txn = TxnCleanState::new(
            &plan.aborted,
            &plan.last_records,
            now_ms,
            plan.config.delete_retention_ms,
        );
        for seg in plan.cleanable.iter().filter(|s| s.base_offset < end) {
            if self.stop.load(Ordering::Relaxed) {
                return Err(stopping());
            }
            let out = clean_segment(
                &plan,
                seg,
                &map,
                &mut txn,
                end,
                now_ms,
                &mut stats,
                &mut throttler,
                &self.stop,
                &mut peak_buf,
            )?;
            stats.segment_bytes_cleaned += seg.size;
            if let Some(h) = out.min_horizon {
                min_horizon = Some(min_horizon.map_or(h, |m: i64| m.min(h)));
            }
            if !out.changed {
                continue;
            }
            let swapped = log.lock().swap_cleaned_segment(
                seg.base_offset,
                &seg.file,
                seg.size,
                self.crash_after,
            )?;
            if !swapped {
                tracing::info!(partition = %tp.dir_name(), segment = seg.base_offset, "segment changed during cleaning; will retry");
                return Ok(stats);
            }
            stats.segments_swapped += 1;
        }
        // 3. Checkpoint.
        self.first_dirty
            .insert(tp.clone(), end.max(plan.first_dirty));
        match min_horizon {
            Some(h) => self.horizons.insert(tp.clone(), h),
            None => self.horizons.remove(tp),
        };
        stats.peak_memory_bytes = (map.memory_bytes() + peak_buf + WRITE_CHUNK) as u64;
        stats.elapsed = started.elapsed();
        Ok(stats)
    }

    /// Builds the offset map over the dirty section of `plan`; returns the offset cleaning stops at (the
    /// end of the cleanable range, or the batch where the map filled).
    fn build_map(
        &self,
        plan: &Plan,
        map: &mut OffsetMap,
        stats: &mut CleanerStats,
        throttler: &mut Throttler,
        peak_buf: &mut usize,
    ) -> Result<i64, StorageError> {
        let dirty_end = plan
            .cleanable
            .last()
            .map_or(plan.first_dirty, |s| s.next_base);
        let mut end = dirty_end;
        'segments: for seg in plan
            .cleanable
            .iter()
            .filter(|s| s.next_base > plan.first_dirty)
        {
            let mut reader = BatchReader::new(seg);
            while let Some((h, bytes)) = reader.next_batch()? {
                stats.bytes_read += bytes.len() as u64;
                throttler.account(bytes.len(), &self.stop);
                if h.last_offset() < plan.first_dirty || h.is_control() || plan.aborted.holds(&h) {
                    continue;
                }
                let data = records_section(bytes, &h)?;
                *peak_buf = (*peak_buf).max(data.len() + bytes.len());
                let recs = parse_raw_records(&data, h.records_count)?;
                for r in &recs {
                    let offset = h.base_offset + r.offset_delta as i64;
                    let Some(k) = &r.key else { continue };
                    if offset < plan.first_dirty {
                        continue;
                    }
                    if !map.put(&data[k.clone()], offset) && h.base_offset > plan.first_dirty {
                        end = h.base_offset;
                        break 'segments;
                    }
                }
                if self.stop.load(Ordering::Relaxed) {
                    return Err(stopping());
                }
            }
        }
        Ok(end)
    }

    /// Writes the first dirty offsets of the logs in `logs` to `cleaner-offset-checkpoint`.
    pub fn write_checkpoint(
        &self,
        logs: &[(TopicPartition, Arc<Mutex<Log>>)],
    ) -> Result<(), StorageError> {
        let mut m = HashMap::new();
        for (tp, _) in logs {
            if let Some(&o) = self.first_dirty.get(tp) {
                m.insert((tp.topic.clone(), tp.partition), o);
            }
        }
        self.checkpoint.write(&m)?;
        Ok(())
    }
}

struct SegmentOutcome {
    changed: bool,
    min_horizon: Option<i64>,
}

/// Rewrites one segment into `<base>.*.cleaned` (fsynced). `changed = false` when the output
/// would equal the input (the cleaned files are then deleted).
#[allow(clippy::too_many_arguments)]
fn clean_segment(
    plan: &Plan,
    seg: &CleanerSegment,
    map: &OffsetMap,
    txn: &mut TxnCleanState,
    end: i64,
    now_ms: i64,
    stats: &mut CleanerStats,
    throttler: &mut Throttler,
    stop: &AtomicBool,
    peak_buf: &mut usize,
) -> Result<SegmentOutcome, StorageError> {
    let cfg = &plan.config;
    let mut out = LogSegment::create_cleaned(
        &plan.fs,
        &plan.dir,
        seg.base_offset,
        cfg.index_interval_bytes,
        cfg.segment_index_bytes,
    )?;
    let r = (|| -> Result<SegmentOutcome, StorageError> {
        let mut changed = false;
        let mut min_horizon: Option<i64> = None;
        let mut buf: Vec<u8> = Vec::new();
        let mut metas: Vec<AppendedBatch> = Vec::new();
        let mut reader = BatchReader::new(seg);
        while let Some((h, bytes)) = reader.next_batch()? {
            if stop.load(Ordering::Relaxed) {
                return Err(stopping());
            }
            stats.bytes_read += bytes.len() as u64;
            throttler.account(bytes.len(), stop);
            let (b, horizon) = filter_any(&h, bytes, txn, map, end, now_ms, cfg, stats)?;
            if let Some(hz) = horizon {
                min_horizon = Some(min_horizon.map_or(hz, |m: i64| m.min(hz)));
            }
            changed |= !matches!(b, Filtered::Unchanged);
            let kept = match b {
                Filtered::Unchanged => Some(Bytes::copy_from_slice(bytes)),
                Filtered::Rewritten(nb) => Some(nb),
                Filtered::Dropped => None,
            };
            if let Some(b) = kept {
                let hh = RecordBatchHeader::parse(&b)?;
                metas.push(AppendedBatch {
                    last_offset: hh.last_offset(),
                    max_timestamp: hh.max_timestamp,
                    size: b.len() as u32,
                });
                buf.extend_from_slice(&b);
                *peak_buf = (*peak_buf).max(buf.capacity() + reader.buf.capacity());
                if buf.len() >= WRITE_CHUNK {
                    out.append(&buf, &metas, now_ms)?;
                    stats.bytes_written += buf.len() as u64;
                    throttler.account(buf.len(), stop);
                    buf.clear();
                    metas.clear();
                }
            }
        }
        let txn_entries = txn.cleaned_index(&seg.aborted);
        if !changed {
            return Ok(SegmentOutcome {
                changed,
                min_horizon,
            });
        }
        if !buf.is_empty() {
            out.append(&buf, &metas, now_ms)?;
            stats.bytes_written += buf.len() as u64;
            throttler.account(buf.len(), stop);
        }
        for t in txn_entries {
            out.txn_index_mut().append(t)?;
        }
        out.on_become_inactive()?;
        out.flush()?;
        Ok(SegmentOutcome {
            changed,
            min_horizon,
        })
    })();
    drop(out);
    match &r {
        Ok(o) if o.changed => {}
        _ => discard_cleaned(&plan.fs, &plan.dir, seg.base_offset),
    }
    r
}

/// The retention rule for any batch of a rewritten segment: transactions first ([`TxnCleanState`]: aborted
/// data and discardable markers), then, below `end`, the key rule of [`filter_batch`].
#[allow(clippy::too_many_arguments)]
fn filter_any(
    h: &RecordBatchHeader,
    bytes: &[u8],
    txn: &mut TxnCleanState,
    map: &OffsetMap,
    end: i64,
    now_ms: i64,
    cfg: &crate::config::LogConfig,
    stats: &mut CleanerStats,
) -> Result<(Filtered, Option<i64>), StorageError> {
    let n = h.records_count.max(0) as u64;
    let verdict = txn.on_batch(h, bytes)?;
    let discarded_marker = match verdict {
        TxnVerdict::Discard { marker } => Some(marker),
        _ => None,
    };
    let (f, horizon) = match verdict {
        TxnVerdict::Discard { .. } => {
            stats.records_read += n;
            (Filtered::Dropped, None)
        }
        TxnVerdict::Marker { rewritten, horizon } => {
            stats.records_read += n;
            stats.records_retained += n;
            (
                rewritten.map_or(Filtered::Unchanged, Filtered::Rewritten),
                horizon,
            )
        }
        TxnVerdict::Data if h.base_offset >= end => {
            stats.records_read += n;
            stats.records_retained += n;
            (Filtered::Unchanged, None)
        }
        TxnVerdict::Data => filter_batch(h, bytes, map, end, now_ms, cfg, stats)?,
    };
    if !matches!(f, Filtered::Dropped) {
        return Ok((f, horizon));
    }
    if txn.retain_empty(h) {
        return Ok(match h.records_count {
            0 if !h.has_delete_horizon() => (Filtered::Unchanged, None),
            _ => (
                Filtered::Rewritten(crate::cleaner_batch::empty_batch(h)?),
                None,
            ),
        });
    }
    match discarded_marker {
        Some(true) => stats.txn_markers_removed += 1,
        Some(false) => stats.aborted_batches_removed += 1,
        None => {}
    }
    Ok((Filtered::Dropped, None))
}

enum Filtered {
    Unchanged,
    Rewritten(Bytes),
    Dropped,
}

/// Applies the retention rule to one batch below `end`. Returns the outcome and, when the
/// result keeps tombstones, their delete horizon.
fn filter_batch(
    h: &RecordBatchHeader,
    bytes: &[u8],
    map: &OffsetMap,
    end: i64,
    now_ms: i64,
    cfg: &crate::config::LogConfig,
    stats: &mut CleanerStats,
) -> Result<(Filtered, Option<i64>), StorageError> {
    let data = records_section(bytes, h)?;
    let recs = parse_raw_records(&data, h.records_count)?;
    let horizon_passed = h.has_delete_horizon() && now_ms >= h.base_timestamp;
    let mut keep = Vec::with_capacity(recs.len());
    let mut tombstones = false;
    for r in &recs {
        stats.records_read += 1;
        let offset = h.base_offset + r.offset_delta as i64;
        let retain = if offset >= end {
            if r.value_is_null {
                tombstones = true;
            }
            true
        } else {
            match &r.key {
                None => false,
                Some(k) => {
                    let latest = map.get(&data[k.clone()]).is_none_or(|o| o <= offset);
                    if !latest {
                        false
                    } else if r.value_is_null {
                        if horizon_passed {
                            stats.tombstones_removed += 1;
                            false
                        } else {
                            tombstones = true;
                            true
                        }
                    } else {
                        true
                    }
                }
            }
        };
        if retain {
            keep.push(r);
        }
    }
    stats.records_retained += keep.len() as u64;
    if keep.is_empty() {
        return Ok((Filtered::Dropped, None));
    }
    let needs_horizon = tombstones && !h.has_delete_horizon();
    let horizon = if needs_horizon {
        Some(now_ms.saturating_add(cfg.delete_retention_ms.max(0)))
    } else if tombstones {
        Some(h.base_timestamp)
    } else {
        None
    };
    if keep.len() == recs.len() && !needs_horizon {
        return Ok((Filtered::Unchanged, horizon));
    }
    let new_horizon = if needs_horizon { horizon } else { None };
    let out = crate::cleaner_batch::rebuild_batch(h, &data, &keep, new_horizon)?;
    Ok((Filtered::Rewritten(out), horizon))
}
