//! [`Log`]: one partition's log (Kafka's `UnifiedLog` + `LocalLog`), single writer.
//!
//! Split by concern: this module has the type, opening and recovery, and the accessors; [`append`]
//! (leader and follower appends, rolling), [`read`] (fetch, offsets by timestamp) and [`maintenance`]
//! (retention, flush, truncation, close) add to it.

mod append;
mod layout;
mod maintenance;
mod read;
mod txn;

use crate::config::LogConfig;
use crate::error::StorageError;
use crate::leader_epoch::LeaderEpochFileCache;
use crate::producer_state::{ProducerStateEntry, ProducerStateManager, SequenceCheck};
use crate::segment::{AppendedBatch, LogSegment};
use crate::vfs::{real_fs, FileRef, Fs};
use crate::{
    offset_file_name, EARLIEST_LOCAL_TIMESTAMP, EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP,
};
use bytes::Bytes;
use protocol::record::{batches, RecordBatch, RecordBatchMut, Records, TimestampType};
use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use types::{LeaderEpoch, Offset};

pub use append::recompress;
pub use read::FetchDataInfo;
pub use txn::AppendOrigin;

/// Files to fsync, prepared by [`Log::prepare_flush`] and run without the log's lock.
#[derive(Debug)]
pub struct FlushJob {
    fs: Fs,
    files: Vec<FileRef>,
    paths: Vec<PathBuf>,
    dir: Option<PathBuf>,
    upto: i64,
    messages: i64,
}

impl FlushJob {
    /// fsyncs the segment files, the index files (by path; a file deleted meanwhile is
    /// skipped) and, after a roll, the partition directory.
    pub fn run(&self) -> io::Result<()> {
        let started = std::time::Instant::now();
        for f in &self.files {
            f.sync_data()?;
        }
        for p in &self.paths {
            match self.fs.open(p, false) {
                Ok(f) => f.sync_all()?,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        if let Some(d) = &self.dir {
            self.fs.sync_dir(d)?;
        }
        crate::stats::flushed(started);
        Ok(())
    }

    /// The offset the recovery point advances to when the job succeeds.
    pub fn upto(&self) -> Offset {
        Offset(self.upto)
    }
}

/// Result of an append (Kafka's `LogAppendInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogAppendInfo {
    /// Offset of the first record appended ([`Offset::NONE`] when the append held no batch).
    pub first_offset: Offset,
    /// Offset of the last record appended ([`Offset::NONE`] when none).
    pub last_offset: Offset,
    /// Largest timestamp (ms) among the appended batches (the append time for LogAppendTime).
    pub max_timestamp: i64,
    /// Offset (batch last offset) holding `max_timestamp`.
    pub offset_of_max_timestamp: Offset,
    /// Append time (ms) when the topic uses LogAppendTime, else -1.
    pub log_append_time_ms: i64,
    /// Log start offset after the append.
    pub log_start_offset: Offset,
    /// Records appended.
    pub records_count: i64,
    /// Bytes appended.
    pub valid_bytes: usize,
    /// True when the batch was a duplicate of an already appended idempotent batch: offsets are
    /// the original ones and nothing was written.
    pub duplicate: bool,
}

impl LogAppendInfo {
    /// The result of appending nothing: offsets and timestamps -1.
    fn nothing(log_start_offset: i64) -> Self {
        LogAppendInfo {
            first_offset: Offset::NONE,
            last_offset: Offset::NONE,
            max_timestamp: -1,
            offset_of_max_timestamp: Offset::NONE,
            log_append_time_ms: -1,
            log_start_offset: Offset(log_start_offset),
            records_count: 0,
            valid_bytes: 0,
            duplicate: false,
        }
    }
}

/// Position of an offset in the log (Kafka's `LogOffsetMetadata`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogOffsetMetadata {
    /// The offset.
    pub message_offset: Offset,
    /// Base offset of the segment holding it ([`Offset::NONE`] when unknown).
    pub segment_base_offset: Offset,
    /// Byte position of its batch in that segment, in bytes (-1 when unknown).
    pub relative_position: i64,
}

/// One partition's log: a directory `<topic>-<partition>` of [`LogSegment`]s, producer
/// snapshots and `partition.metadata` (Kafka's UnifiedLog semantics).
///
/// Offsets: `log_start_offset` ≤ `high_watermark` ≤ `log_end_offset` (LEO = next offset to
/// assign). The recovery point is the offset below which everything is fsynced.
///
/// Recovery rule: `open(recover = false)` (after a clean shutdown) trusts the files: it stats the
/// segments, reads the last time-index entry of each and scans only the active segment's tail
/// after its last index entry. `open(recover = true)` (after a crash) re-validates every batch of
/// every segment from the one containing the recovery point, truncates at the first torn or
/// corrupt batch (deleting later segments), rebuilds those indexes and fsyncs. Producer state is
/// loaded from the newest usable snapshot and replayed from there to the log end. Transaction
/// indexes (`.txnindex`) of the segments recovery re-reads, and of any whose file fails its sanity
/// check, are emptied and rebuilt by that replay (from a snapshot at or below the first of them). A
/// missing `.txnindex` of a segment below the recovery point cannot be told from one without aborted
/// transactions and is not rebuilt (as Kafka).
///
/// Leader epochs: a [`LeaderEpochFileCache`] (`leader-epoch-checkpoint`) records the first
/// offset of each leader epoch that appended.
///
/// Failure rule: an I/O error while writing or syncing takes the log offline: later appends,
/// flushes and truncations fail with [`StorageError::LogOffline`] (no silent retry), and the log's
/// data directory is marked offline ([`crate::LogDirHealth`]); only [`reopen`](Self::reopen) (with
/// recovery) brings it back. After [`close`](Self::close) the log is likewise read-only.
#[derive(Debug)]
pub struct Log {
    fs: Fs,
    dir: PathBuf,
    topic_id: uuid::Uuid,
    config: LogConfig,
    segments: BTreeMap<i64, LogSegment>,
    log_start_offset: i64,
    log_end_offset: i64,
    high_watermark: i64,
    recovery_point: i64,
    producer_state: ProducerStateManager,
    leader_epoch_cache: LeaderEpochFileCache,
    /// Bases of the segments whose transaction index is rebuilt by the next producer-state replay.
    txn_rebuild: std::collections::BTreeSet<i64>,
    /// Transaction verification guards (KIP-890), in memory.
    verification: crate::verification::VerificationGuards,
    needs_dir_fsync: bool,
    unflushed_messages: i64,
    last_flush_ms: i64,
    pending_roll_flush: Option<i64>,
    offline: Option<String>,
    /// The data directory's health, told of a write failure (set by the LogManager).
    dir_health: Option<std::sync::Arc<crate::LogDirHealth>>,
    /// The wall clock of what the log decides by itself (retention after DeleteRecords, the flush time,
    /// producer expiry when a truncation rebuilds the producer state): the system clock unless the
    /// [`crate::LogManager`] gave its own (simulations).
    clock: std::sync::Arc<dyn types::Clock>,
    /// Test hook: fail the next segment write with an I/O error.
    #[cfg(test)]
    pub(crate) fail_next_write: bool,
}

fn is_leftover(name: &str) -> bool {
    name.ends_with(".tmp")
        || name.ends_with(".deleted")
        || name.ends_with(".cleaned")
        || name.ends_with(".swap")
}

/// Completes or discards an interrupted log-cleaner swap (Kafka's `.cleaned`/`.swap` protocol,
/// see [`crate::cleaner`]): `*.cleaned` files are an unfinished clean and are deleted (the old
/// segment is intact); `<base>.log.swap` was committed and replaces `<base>.log`; index
/// `.swap` files are deleted. Returns the bases whose indexes must be rebuilt.
fn complete_swaps(fs: &Fs, dir: &Path) -> io::Result<Vec<i64>> {
    let mut rebuild = Vec::new();
    let names: Vec<String> = fs.read_dir(dir)?.into_iter().map(|e| e.name).collect();
    for name in &names {
        if name.ends_with(crate::segment::CLEANED_SUFFIX) {
            fs.remove_file(&dir.join(name))?;
        }
    }
    let mut changed = false;
    for name in &names {
        let Some(stem) = name.strip_suffix(crate::segment::SWAP_SUFFIX) else {
            continue;
        };
        let base = stem
            .strip_suffix(".log")
            .or_else(|| stem.strip_suffix(".index"))
            .or_else(|| stem.strip_suffix(".timeindex"))
            .or_else(|| stem.strip_suffix(".txnindex"))
            .and_then(|b| b.parse::<i64>().ok());
        if let Some(b) = base {
            rebuild.push(b);
        }
        if stem.ends_with(".log") && base.is_some() {
            tracing::warn!(dir = %dir.display(), file = %name, "completing interrupted log cleaner swap");
            fs.rename(&dir.join(name), &dir.join(stem))?;
        } else {
            fs.remove_file(&dir.join(name))?;
        }
        changed = true;
    }
    if changed {
        fs.sync_dir(dir)?;
    }
    rebuild.sort_unstable();
    rebuild.dedup();
    Ok(rebuild)
}

impl Log {
    /// Opens (creating if needed) the log in `dir`. See the type docs for the recovery rule.
    /// `recovery_point`: offset below which data is known to be fsynced (from the
    /// recovery-point checkpoint; 0 when unknown). `now_ms`: wall clock.
    pub fn open(
        dir: &Path,
        config: LogConfig,
        topic_id: uuid::Uuid,
        recover: bool,
        recovery_point: Offset,
        now_ms: i64,
    ) -> Result<Log, StorageError> {
        Self::open_in(
            real_fs(),
            dir,
            config,
            topic_id,
            recover,
            recovery_point,
            now_ms,
        )
    }

    /// [`open`](Self::open) on the file system `fs` (a [`crate::SimFs`] in simulations).
    pub fn open_in(
        fs: Fs,
        dir: &Path,
        config: LogConfig,
        topic_id: uuid::Uuid,
        recover: bool,
        recovery_point: Offset,
        now_ms: i64,
    ) -> Result<Log, StorageError> {
        let recovery_point = recovery_point.get();
        fs.create_dir_all(dir)?;
        let rebuild = complete_swaps(&fs, dir)?;
        let bases = layout::segment_bases(&fs, dir)?;
        let mut segments = BTreeMap::new();
        for &b in &bases {
            segments.insert(
                b,
                LogSegment::open_in(
                    &fs,
                    dir,
                    b,
                    config.index_interval_bytes,
                    config.segment_index_bytes,
                )?,
            );
        }
        let producer_state =
            ProducerStateManager::new_in(fs.clone(), dir, config.producer_id_expiration_ms)?;
        let leader_epoch_cache = LeaderEpochFileCache::load_in(fs.clone(), dir);
        let mut log = Log {
            fs,
            dir: dir.to_path_buf(),
            topic_id,
            config,
            segments,
            log_start_offset: bases[0],
            log_end_offset: bases[0],
            high_watermark: bases[0],
            recovery_point: 0,
            producer_state,
            leader_epoch_cache,
            txn_rebuild: Default::default(),
            verification: Default::default(),
            // Segment files created now (or by a crashed process) need a directory fsync to last.
            needs_dir_fsync: true,
            unflushed_messages: 0,
            last_flush_ms: now_ms,
            pending_roll_flush: None,
            offline: None,
            dir_health: None,
            clock: std::sync::Arc::new(types::SystemClock),
            #[cfg(test)]
            fail_next_write: false,
        };
        log.load_segments(recover, recovery_point, &rebuild)?;
        if recover {
            // The recovery point moves to the LEO: the names of the segments below it (maybe created
            // by the crashed process) and recovery's removals must be durable (SimFs found it).
            log.fs.sync_dir(dir)?;
            log.needs_dir_fsync = false;
        }
        log.recovery_point = if recover {
            log.log_end_offset
        } else {
            recovery_point
                .max(log.log_start_offset)
                .min(log.log_end_offset)
        };
        log.high_watermark = log.log_start_offset;
        log.rebuild_producer_state(now_ms)?;
        log.leader_epoch_cache
            .truncate_from_end(Offset(log.log_end_offset))?;
        log.leader_epoch_cache
            .truncate_from_start(Offset(log.log_start_offset))?;
        if let Some(active) = log.segments.values_mut().next_back() {
            if active.size() > 0 {
                active.set_rolling_base_ms(now_ms);
            }
        }
        Ok(log)
    }

    fn load_segments(
        &mut self,
        recover: bool,
        recovery_point: i64,
        rebuild: &[i64],
    ) -> Result<(), StorageError> {
        let bases: Vec<i64> = self.segments.keys().copied().collect();
        let last = *bases.last().expect("at least one segment");
        let recover_from = if recover {
            self.segments
                .range(..=recovery_point.max(bases[0]))
                .next_back()
                .map_or(bases[0], |(b, _)| *b)
        } else {
            i64::MAX
        };
        let (mut truncated_at, mut recovered_end): (Option<i64>, Option<i64>) = (None, None);
        for &b in &bases {
            if truncated_at.is_none() && self.starts_past_a_hole(b, recovered_end) {
                truncated_at = recovered_end;
            }
            if let Some(t) = truncated_at {
                // Everything after a truncated segment is unreachable garbage.
                tracing::warn!(dir = %self.dir.display(), segment = b, after = t, "deleting segment after corrupt tail");
                let seg = self.segments.remove(&b).expect("exists");
                seg.delete_files(&self.dir)?;
                continue;
            }
            let seg = self.segments.get_mut(&b).expect("exists");
            let mut needs_recovery =
                b >= recover_from || seg.indexes_torn() || rebuild.binary_search(&b).is_ok();
            if !needs_recovery {
                if b == last {
                    if let Err(e) = seg.load_tail() {
                        tracing::warn!(dir = %self.dir.display(), segment = b, error = %e, "active segment tail invalid; recovering");
                        needs_recovery = true;
                    }
                } else {
                    seg.load_max_timestamp_from_index()?;
                }
            }
            if needs_recovery || seg.txn_index().needs_rebuild() {
                self.txn_rebuild.insert(b);
            }
            if needs_recovery {
                let cut = seg.recover(|_| {})?;
                seg.flush()?;
                // Flushed, so nothing waits for an fsync: every segment, the active one too, keeps
                // only its `.log` descriptor (as after a clean open), or a crash restart would hold
                // three per partition and run out of descriptors within the partition budget.
                seg.release_index_handles();
                if cut > 0 {
                    tracing::warn!(dir = %self.dir.display(), segment = b, bytes = cut, "truncated invalid bytes during recovery");
                    truncated_at = Some(b);
                }
                recovered_end = seg.next_offset().filter(|_| b >= recover_from);
            } else {
                recovered_end = None;
            }
        }
        // A segment emptied by recovery that is not the first keeps its base; LEO is from the last.
        let active = self.segments.values().next_back().expect("segment");
        self.log_end_offset = match active.next_offset() {
            Some(o) => o,
            None => active.base_offset(),
        };
        // If the last segment is empty, the previous one's end is the true LEO only when it is
        // larger (it can't be: bases increase), so LEO = active base in that case.
        Ok(())
    }

    /// Whether the segment at base `b` starts past a hole after one recovered up to `recovered_end`
    /// (a power loss may keep a later segment's writes and lose an earlier one's unsynced tail). Not
    /// for a compacted log: cleaning and follower rolls at a leader's gap leave gaps between segments.
    fn starts_past_a_hole(&self, b: i64, recovered_end: Option<i64>) -> bool {
        if recovered_end.is_none_or(|end| end == b) || self.config.compacts() {
            return false;
        }
        tracing::warn!(dir = %self.dir.display(), segment = b, previous_ends_at = ?recovered_end, "segment starts past the end of the previous one after a crash; the log ends there");
        true
    }

    /// The file system the log lives on.
    pub fn fs(&self) -> &Fs {
        &self.fs
    }

    /// The partition directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The topic id from `partition.metadata` (nil when unknown).
    pub fn topic_id(&self) -> uuid::Uuid {
        self.topic_id
    }

    /// Current config.
    pub fn config(&self) -> &LogConfig {
        &self.config
    }

    /// Replaces the config (topic config change); applies to later appends/rolls/retention.
    pub fn set_config(&mut self, config: LogConfig) {
        self.producer_state
            .set_expiration_ms(config.producer_id_expiration_ms);
        self.config = config;
    }

    /// First offset still in the log.
    pub fn log_start_offset(&self) -> Offset {
        Offset(self.log_start_offset)
    }

    /// Offset the next appended record gets (LEO).
    pub fn log_end_offset(&self) -> Offset {
        Offset(self.log_end_offset)
    }

    /// High watermark (maintained by the broker through [`update_high_watermark`](Self::update_high_watermark)).
    pub fn high_watermark(&self) -> Offset {
        Offset(self.high_watermark)
    }

    /// Sets the high watermark; returns the value stored. `offset` must not exceed the LEO (panics: a
    /// HighWatermark past the LogEndOffset is a bug; callers holding an outside value, such as a
    /// follower with the leader's HW or a checkpoint read at startup, clamp it first). A value below
    /// the log start offset is raised to it (retention may have moved the log start past the HW).
    /// Completed transactions whose marker it passes become stable (see `Log::last_stable_offset`).
    pub fn update_high_watermark(&mut self, offset: Offset) -> Offset {
        let offset = offset.get();
        assert!(
            offset <= self.log_end_offset,
            "{}: HighWatermark {offset} past the LogEndOffset {}",
            self.dir.display(),
            self.log_end_offset
        );
        self.high_watermark = offset.max(self.log_start_offset);
        self.assert_offsets();
        self.producer_state
            .on_high_watermark_updated(self.high_watermark);
        Offset(self.high_watermark)
    }

    /// LogStartOffset ≤ HighWatermark ≤ LogEndOffset: checked after every change of either (O(1)).
    fn assert_offsets(&self) {
        assert!(
            self.log_start_offset <= self.high_watermark
                && self.high_watermark <= self.log_end_offset,
            "{}: offsets out of order: log start {}, HighWatermark {}, LogEndOffset {}",
            self.dir.display(),
            self.log_start_offset,
            self.high_watermark,
            self.log_end_offset
        );
    }

    /// Offset below which all data is fsynced.
    pub fn recovery_point(&self) -> Offset {
        Offset(self.recovery_point)
    }

    /// Total bytes of all segments.
    pub fn size_in_bytes(&self) -> u64 {
        self.segments.values().map(|s| s.size()).sum()
    }

    /// Number of segments.
    pub fn number_of_segments(&self) -> usize {
        self.segments.len()
    }

    /// Base offsets of the segments, ascending.
    pub fn segment_base_offsets(&self) -> Vec<Offset> {
        self.segments.keys().copied().map(Offset).collect()
    }

    /// True after a write/fsync failure.
    pub fn is_offline(&self) -> bool {
        self.offline.is_some()
    }

    /// Marks the log deleted: later appends, flushes and truncations fail with LogOffline.
    pub fn mark_deleted(&mut self) {
        self.offline = Some(format!("log {} was deleted", self.dir.display()));
    }

    /// Latest leader epoch that appended to this log.
    pub fn latest_epoch(&self) -> Option<LeaderEpoch> {
        self.leader_epoch_cache.latest_epoch()
    }

    /// OffsetForLeaderEpoch answer (Kafka's `endOffsetForEpoch`): (epoch, end offset), see
    /// [`LeaderEpochFileCache::end_offset_for`]; (-1, -1) when unknown.
    pub fn end_offset_for_epoch(&self, leader_epoch: LeaderEpoch) -> (LeaderEpoch, Offset) {
        self.leader_epoch_cache
            .end_offset_for(leader_epoch, Offset(self.log_end_offset))
    }

    /// Records that `leader_epoch` starts at `start_offset` (Kafka's `maybeAssignEpochStartOffset`,
    /// called when this replica becomes leader, KIP-101/KIP-279): a leader that has not yet appended
    /// in its epoch still answers OffsetForLeaderEpoch for older epochs with the LEO at which it took
    /// over. No-op when the epoch is not newer than the latest; an I/O error takes the log offline.
    pub fn assign_epoch_start_offset(
        &mut self,
        leader_epoch: LeaderEpoch,
        start_offset: Offset,
    ) -> Result<(), StorageError> {
        self.check_online()?;
        if let Err(e) = self.leader_epoch_cache.assign(leader_epoch, start_offset) {
            return self.poison("leader epoch checkpoint", e);
        }
        Ok(())
    }

    /// Leader epoch entries (epoch, start offset), ascending.
    pub fn leader_epoch_entries(&self) -> &[(LeaderEpoch, Offset)] {
        self.leader_epoch_cache.entries()
    }

    /// Producer state (read-only).
    pub fn producer_state(&self) -> &ProducerStateManager {
        &self.producer_state
    }

    /// Raises the log start offset (from the log-start-offset checkpoint at startup); ignored
    /// when not within [current log start, LEO].
    pub fn restore_log_start_offset(&mut self, offset: Offset) {
        let offset = offset.get();
        if offset > self.log_start_offset && offset <= self.log_end_offset {
            self.log_start_offset = offset;
            self.high_watermark = self.high_watermark.max(offset);
            if let Err(e) = self.leader_epoch_cache.truncate_from_start(Offset(offset)) {
                tracing::warn!(dir = %self.dir.display(), error = %e, "leader epoch checkpoint write failed");
            }
        }
    }

    fn check_online(&self) -> Result<(), StorageError> {
        match &self.offline {
            Some(m) => Err(StorageError::LogOffline(m.clone())),
            None => Ok(()),
        }
    }

    fn poison<T>(&mut self, what: &str, e: io::Error) -> Result<T, StorageError> {
        let msg = format!("{what} failed in {}: {e}", self.dir.display());
        tracing::error!("{msg}; log is now offline");
        if let Some(h) = &self.dir_health {
            h.mark_offline(&msg, &self.dir);
        }
        self.offline = Some(msg);
        Err(StorageError::KafkaStorage(e))
    }

    fn active(&mut self) -> &mut LogSegment {
        self.segments
            .values_mut()
            .next_back()
            .expect("a log always has a segment")
    }
}

/// An inactive segment as seen by the log cleaner (taken under the lock, read without it).
#[derive(Debug, Clone)]
pub(crate) struct CleanerSegment {
    pub base_offset: i64,
    /// Base offset of the following segment (everything here is below it).
    pub next_base: i64,
    pub file: FileRef,
    pub size: u64,
    pub max_timestamp: i64,
    /// The segment's `.txnindex` entries (the cleaner keeps those whose markers still decide data).
    pub aborted: Vec<crate::AbortedTxn>,
}

/// What the log cleaner needs to know about a log, copied under the lock.
#[derive(Debug, Clone)]
pub(crate) struct CleanerView {
    pub fs: Fs,
    pub dir: PathBuf,
    pub config: LogConfig,
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    /// The LastStableOffset (≤ the HighWatermark): neither uncommitted records nor an undecided
    /// transaction's are cleaned.
    pub last_stable_offset: i64,
    /// The aborted transactions below the LastStableOffset: their records never supersede others.
    pub aborted: crate::cleaner_txn::AbortedRanges,
    /// Each active producer's last data offset and epoch (Kafka's `lastRecordsOfActiveProducers`).
    pub last_records: crate::cleaner_txn::LastRecords,
    pub active_base: i64,
    /// Inactive segments, ascending.
    pub segments: Vec<CleanerSegment>,
}

/// Steps of [`Log::swap_cleaned_segment`], for crash injection in tests: the swap stops with an
/// error right after the named step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[allow(dead_code)]
pub(crate) enum SwapStep {
    /// `.index.cleaned`/`.timeindex.cleaned`/`.txnindex.cleaned` renamed to `.swap`.
    IndexesToSwap,
    /// `.log.cleaned` renamed to `.log.swap` and the directory fsynced (the commit point).
    LogToSwap,
    /// Index `.swap` files renamed over the live indexes.
    IndexesInPlace,
    /// `.log.swap` renamed over the live `.log` and the directory fsynced.
    LogInPlace,
}

/// Deletes the cleaner's `.cleaned` files of segment `base` (an abandoned clean).
pub(crate) fn discard_cleaned(fs: &Fs, dir: &Path, base: i64) {
    for suffix in ["log", "index", "timeindex", "txnindex"] {
        let _ = fs.remove_file(&dir.join(format!(
            "{}{}",
            offset_file_name(base, suffix),
            crate::segment::CLEANED_SUFFIX
        )));
    }
}

impl Log {
    /// Snapshot of the log for the cleaner.
    pub(crate) fn cleaner_view(&self) -> CleanerView {
        let bases: Vec<i64> = self.segments.keys().copied().collect();
        let active_base = *bases.last().expect("segment");
        let segments = bases
            .windows(2)
            .map(|w| {
                let s = &self.segments[&w[0]];
                CleanerSegment {
                    base_offset: w[0],
                    next_base: w[1],
                    file: s.log_file().clone(),
                    size: s.size(),
                    max_timestamp: s.max_timestamp_so_far(),
                    aborted: s.txn_index().entries().to_vec(),
                }
            })
            .collect();
        CleanerView {
            fs: self.fs.clone(),
            dir: self.dir.clone(),
            config: self.config.clone(),
            log_start_offset: self.log_start_offset,
            log_end_offset: self.log_end_offset,
            last_stable_offset: self.last_stable_offset().get(),
            last_records: self
                .producer_state
                .active_producers()
                .map(|e| {
                    let last_data = e.batches.back().map(|b| b.last_offset.get());
                    (e.producer_id.get(), (last_data, e.producer_epoch.get()))
                })
                .collect(),
            aborted: crate::cleaner_txn::AbortedRanges::new(self.collect_aborted_transactions(
                Offset(self.log_start_offset),
                self.last_stable_offset(),
            )),
            active_base,
            segments,
        }
    }

    /// Replaces inactive segment `base` by the cleaner's fsynced `<base>.*.cleaned` files
    /// (Kafka's swap protocol): index files (offset, time and transaction index) `.cleaned` →
    /// `.swap`; `.log.cleaned` → `.log.swap` and a directory fsync (commit point: from here recovery completes the swap); the
    /// `.swap` files renamed over the live ones; directory fsync; the in-memory segment
    /// replaced (readers holding the old file keep reading the old bytes). A cleaned segment
    /// that is empty and not the first is deleted afterwards. Returns false (and deletes the
    /// `.cleaned` files) when the segment changed since `expected` was taken (deleted by
    /// retention, truncated, or now the active one). An I/O error takes the log offline; the
    /// files are put right at the next open.
    pub(crate) fn swap_cleaned_segment(
        &mut self,
        base: i64,
        expected: &FileRef,
        expected_size: u64,
        crash_after: Option<SwapStep>,
    ) -> Result<bool, StorageError> {
        self.check_online()?;
        let active_base = *self.segments.keys().next_back().expect("segment");
        let unchanged = base != active_base
            && self.segments.get(&base).is_some_and(|s| {
                std::sync::Arc::ptr_eq(s.log_file(), expected) && s.size() == expected_size
            });
        if !unchanged {
            discard_cleaned(&self.fs, &self.dir, base);
            return Ok(false);
        }
        let dir = self.dir.clone();
        let name = |suffix: &str, extra: &str| {
            dir.join(format!("{}{extra}", offset_file_name(base, suffix)))
        };
        let (cleaned, swap) = (crate::segment::CLEANED_SUFFIX, crate::segment::SWAP_SUFFIX);
        let crash = |step: SwapStep| -> io::Result<()> {
            if crash_after == Some(step) {
                return Err(io::Error::other(format!("injected crash after {step:?}")));
            }
            Ok(())
        };
        let fs = self.fs.clone();
        let r: io::Result<()> = (|| {
            for sfx in ["index", "timeindex", "txnindex"] {
                fs.rename(&name(sfx, cleaned), &name(sfx, swap))?;
            }
            crash(SwapStep::IndexesToSwap)?;
            fs.rename(&name("log", cleaned), &name("log", swap))?;
            fs.sync_dir(&dir)?;
            crash(SwapStep::LogToSwap)?;
            for sfx in ["index", "timeindex", "txnindex"] {
                fs.rename(&name(sfx, swap), &name(sfx, ""))?;
            }
            crash(SwapStep::IndexesInPlace)?;
            fs.rename(&name("log", swap), &name("log", ""))?;
            fs.sync_dir(&dir)?;
            crash(SwapStep::LogInPlace)?;
            Ok(())
        })();
        if let Err(e) = r {
            return self.poison("log cleaner swap", e);
        }
        let opened: io::Result<LogSegment> = (|| {
            let mut seg = LogSegment::open_in(
                &fs,
                &dir,
                base,
                self.config.index_interval_bytes,
                self.config.segment_index_bytes,
            )?;
            seg.load_max_timestamp_from_index()?;
            seg.release_index_handles();
            Ok(seg)
        })();
        let seg = match opened {
            Ok(s) => s,
            Err(e) => return self.poison("log cleaner swap", e),
        };
        let first_base = *self.segments.keys().next().expect("segment");
        if seg.size() == 0 && base != first_base {
            self.segments.remove(&base);
            if let Err(e) = seg.delete_files(&dir) {
                return self.poison("log cleaner swap", e);
            }
        } else {
            self.segments.insert(base, seg);
        }
        Ok(true)
    }
}
