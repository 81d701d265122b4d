//! [`Log`]: one partition's log (Kafka's `UnifiedLog` + `LocalLog`), single writer.

use crate::config::LogConfig;
use crate::error::StorageError;
use crate::leader_epoch::LeaderEpochFileCache;
use crate::producer_state::{ProducerStateEntry, ProducerStateManager, SequenceCheck};
use crate::segment::{AppendedBatch, LogSegment};
use crate::{
    offset_file_name, EARLIEST_LOCAL_TIMESTAMP, EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP,
};
use bytes::Bytes;
use protocol::record::{batches, RecordBatch, RecordBatchMut, Records, TimestampType};
use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Files to fsync, prepared by [`Log::prepare_flush`] and run without the log's lock.
#[derive(Debug)]
pub struct FlushJob {
    files: Vec<std::sync::Arc<std::fs::File>>,
    paths: Vec<PathBuf>,
    dir: Option<PathBuf>,
    upto: i64,
    messages: i64,
}

impl FlushJob {
    /// fsyncs the segment files, the index files (by path; a file deleted meanwhile is
    /// skipped) and, after a roll, the partition directory.
    pub fn run(&self) -> io::Result<()> {
        for f in &self.files {
            f.sync_data()?;
        }
        for p in &self.paths {
            match fs::File::open(p) {
                Ok(f) => f.sync_all()?,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        if let Some(d) = &self.dir {
            crate::checkpoint::fsync_dir(d)?;
        }
        Ok(())
    }

    /// The offset the recovery point advances to when the job succeeds.
    pub fn upto(&self) -> i64 {
        self.upto
    }
}

/// Result of an append (Kafka's `LogAppendInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogAppendInfo {
    /// Offset of the first record appended (-1 when the append held no batch).
    pub first_offset: i64,
    /// Offset of the last record appended (-1 when none).
    pub last_offset: i64,
    /// Largest timestamp (ms) among the appended batches (the append time for LogAppendTime).
    pub max_timestamp: i64,
    /// Offset (batch last offset) holding `max_timestamp`.
    pub offset_of_max_timestamp: i64,
    /// Append time (ms) when the topic uses LogAppendTime, else -1.
    pub log_append_time_ms: i64,
    /// Log start offset after the append.
    pub log_start_offset: i64,
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
            first_offset: -1,
            last_offset: -1,
            max_timestamp: -1,
            offset_of_max_timestamp: -1,
            log_append_time_ms: -1,
            log_start_offset,
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
    pub message_offset: i64,
    /// Base offset of the segment holding it (-1 when unknown).
    pub segment_base_offset: i64,
    /// Byte position of its batch in that segment (-1 when unknown).
    pub relative_position: i64,
}

/// Result of [`Log::read`].
#[derive(Debug, Clone)]
pub struct FetchDataInfo {
    /// Whole batches, as a slice of a segment file (empty `Records::Memory` when nothing).
    pub records: Records,
    /// Where the first returned batch starts.
    pub fetch_offset_metadata: LogOffsetMetadata,
    /// Base offset of the first returned batch (may be below the requested offset: the whole
    /// batch containing it is returned), -1 when empty.
    pub first_batch_base_offset: i64,
}

impl FetchDataInfo {
    fn empty(offset: i64) -> Self {
        FetchDataInfo {
            records: Records::Memory(Bytes::new()),
            fetch_offset_metadata: LogOffsetMetadata {
                message_offset: offset,
                segment_base_offset: -1,
                relative_position: -1,
            },
            first_batch_base_offset: -1,
        }
    }
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
/// loaded from the newest usable snapshot and replayed from there to the log end.
///
/// Leader epochs: a [`LeaderEpochFileCache`] (`leader-epoch-checkpoint`) records the first
/// offset of each leader epoch that appended.
///
/// Failure rule: an I/O error while writing or syncing takes the log offline: later appends,
/// flushes and truncations fail with [`StorageError::LogOffline`] (no silent retry). After
/// [`close`](Self::close) the log is likewise read-only.
#[derive(Debug)]
pub struct Log {
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
    needs_dir_fsync: bool,
    unflushed_messages: i64,
    last_flush_ms: i64,
    pending_roll_flush: Option<i64>,
    offline: Option<String>,
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
fn complete_swaps(dir: &Path) -> io::Result<Vec<i64>> {
    let mut rebuild = Vec::new();
    let mut names = Vec::new();
    for entry in fs::read_dir(dir)? {
        names.push(entry?.file_name().to_string_lossy().into_owned());
    }
    for name in &names {
        if name.ends_with(crate::segment::CLEANED_SUFFIX) {
            fs::remove_file(dir.join(name))?;
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
            .and_then(|b| b.parse::<i64>().ok());
        if let Some(b) = base {
            rebuild.push(b);
        }
        if stem.ends_with(".log") && base.is_some() {
            tracing::warn!(dir = %dir.display(), file = %name, "completing interrupted log cleaner swap");
            fs::rename(dir.join(name), dir.join(stem))?;
        } else {
            fs::remove_file(dir.join(name))?;
        }
        changed = true;
    }
    if changed {
        crate::checkpoint::fsync_dir(dir)?;
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
        recovery_point: i64,
        now_ms: i64,
    ) -> Result<Log, StorageError> {
        fs::create_dir_all(dir)?;
        let rebuild = complete_swaps(dir)?;
        let mut bases = Vec::new();
        for entry in fs::read_dir(dir)? {
            let entry = entry?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if is_leftover(&name) {
                let _ = fs::remove_file(entry.path());
                continue;
            }
            if let Some(stem) = name.strip_suffix(".log") {
                if let Ok(o) = stem.parse::<i64>() {
                    bases.push(o);
                }
            }
        }
        bases.sort_unstable();
        // Index files whose .log is missing are stale.
        for entry in fs::read_dir(dir)? {
            let entry = entry?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            for suffix in [".index", ".timeindex"] {
                if let Some(stem) = name.strip_suffix(suffix) {
                    if let Ok(o) = stem.parse::<i64>() {
                        if bases.binary_search(&o).is_err() {
                            let _ = fs::remove_file(entry.path());
                        }
                    }
                }
            }
        }
        if bases.is_empty() {
            bases.push(0);
        }
        let mut segments = BTreeMap::new();
        for &b in &bases {
            segments.insert(
                b,
                LogSegment::open(
                    dir,
                    b,
                    config.index_interval_bytes,
                    config.segment_index_bytes,
                )?,
            );
        }
        let producer_state = ProducerStateManager::new(dir, config.producer_id_expiration_ms)?;
        let mut log = Log {
            dir: dir.to_path_buf(),
            topic_id,
            config,
            segments,
            log_start_offset: bases[0],
            log_end_offset: bases[0],
            high_watermark: bases[0],
            recovery_point: 0,
            producer_state,
            leader_epoch_cache: LeaderEpochFileCache::load(dir),
            needs_dir_fsync: false,
            unflushed_messages: 0,
            last_flush_ms: now_ms,
            pending_roll_flush: None,
            offline: None,
            #[cfg(test)]
            fail_next_write: false,
        };
        log.load_segments(recover, recovery_point, &rebuild)?;
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
            .truncate_from_end(log.log_end_offset)?;
        log.leader_epoch_cache
            .truncate_from_start(log.log_start_offset)?;
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
        let mut truncated_at: Option<i64> = None;
        for &b in &bases {
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
            if needs_recovery {
                let cut = seg.recover(|_| {})?;
                seg.flush()?;
                if b != last {
                    seg.release_index_handles();
                }
                if cut > 0 {
                    tracing::warn!(dir = %self.dir.display(), segment = b, bytes = cut, "truncated invalid bytes during recovery");
                    truncated_at = Some(b);
                }
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

    fn rebuild_producer_state(&mut self, now_ms: i64) -> Result<(), StorageError> {
        let from = self
            .producer_state
            .load_for(self.log_start_offset, self.log_end_offset)?;
        self.replay_producer_state(from, now_ms)?;
        self.producer_state.set_map_end_offset(self.log_end_offset);
        Ok(())
    }

    fn replay_producer_state(&mut self, from: i64, now_ms: i64) -> Result<(), StorageError> {
        if from >= self.log_end_offset {
            return Ok(());
        }
        let floor = self.segments.range(..=from).next_back().map(|(b, _)| *b);
        let start_key = floor.unwrap_or(i64::MIN);
        let keys: Vec<i64> = self.segments.range(start_key..).map(|(b, _)| *b).collect();
        for k in keys {
            let seg = self.segments.get_mut(&k).expect("exists");
            let Some(pos) = seg.position_of(from)? else {
                continue;
            };
            let psm = &mut self.producer_state;
            seg.for_each_header(pos, |b| {
                if b.header.last_offset() >= from {
                    psm.replay(&b.header, now_ms);
                }
                Ok(true)
            })?;
        }
        Ok(())
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
    pub fn log_start_offset(&self) -> i64 {
        self.log_start_offset
    }

    /// Offset the next appended record gets (LEO).
    pub fn log_end_offset(&self) -> i64 {
        self.log_end_offset
    }

    /// High watermark (maintained by the broker through [`update_high_watermark`](Self::update_high_watermark)).
    pub fn high_watermark(&self) -> i64 {
        self.high_watermark
    }

    /// Sets the high watermark; returns the value stored. `offset` must not exceed the LEO (panics: a
    /// HighWatermark past the LogEndOffset is a bug; callers holding an outside value, such as a
    /// follower with the leader's HW or a checkpoint read at startup, clamp it first). A value below
    /// the log start offset is raised to it (retention may have moved the log start past the HW).
    pub fn update_high_watermark(&mut self, offset: i64) -> i64 {
        assert!(
            offset <= self.log_end_offset,
            "{}: HighWatermark {offset} past the LogEndOffset {}",
            self.dir.display(),
            self.log_end_offset
        );
        self.high_watermark = offset.max(self.log_start_offset);
        self.assert_offsets();
        self.high_watermark
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
    pub fn recovery_point(&self) -> i64 {
        self.recovery_point
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
    pub fn segment_base_offsets(&self) -> Vec<i64> {
        self.segments.keys().copied().collect()
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
    pub fn latest_epoch(&self) -> Option<i32> {
        self.leader_epoch_cache.latest_epoch()
    }

    /// OffsetForLeaderEpoch answer (Kafka's `endOffsetForEpoch`): (epoch, end offset), see
    /// [`LeaderEpochFileCache::end_offset_for`]; (-1, -1) when unknown.
    pub fn end_offset_for_epoch(&self, leader_epoch: i32) -> (i32, i64) {
        self.leader_epoch_cache
            .end_offset_for(leader_epoch, self.log_end_offset)
    }

    /// Records that `leader_epoch` starts at `start_offset` (Kafka's `maybeAssignEpochStartOffset`,
    /// called when this replica becomes leader, KIP-101/KIP-279): a leader that has not yet appended
    /// in its epoch still answers OffsetForLeaderEpoch for older epochs with the LEO at which it took
    /// over. No-op when the epoch is not newer than the latest; an I/O error takes the log offline.
    pub fn assign_epoch_start_offset(
        &mut self,
        leader_epoch: i32,
        start_offset: i64,
    ) -> Result<(), StorageError> {
        self.check_online()?;
        if let Err(e) = self.leader_epoch_cache.assign(leader_epoch, start_offset) {
            return self.poison("leader epoch checkpoint", e);
        }
        Ok(())
    }

    /// Leader epoch entries (epoch, start offset), ascending.
    pub fn leader_epoch_entries(&self) -> &[(i32, i64)] {
        self.leader_epoch_cache.entries()
    }

    /// Producer state (read-only).
    pub fn producer_state(&self) -> &ProducerStateManager {
        &self.producer_state
    }

    /// Raises the log start offset (from the log-start-offset checkpoint at startup); ignored
    /// when not within [current log start, LEO].
    pub fn restore_log_start_offset(&mut self, offset: i64) {
        if offset > self.log_start_offset && offset <= self.log_end_offset {
            self.log_start_offset = offset;
            self.high_watermark = self.high_watermark.max(offset);
            if let Err(e) = self.leader_epoch_cache.truncate_from_start(offset) {
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
        self.offline = Some(msg);
        Err(StorageError::KafkaStorage(e))
    }

    fn active(&mut self) -> &mut LogSegment {
        self.segments
            .values_mut()
            .next_back()
            .expect("a log always has a segment")
    }

    /// Appends a Produce request's `records` as leader (Kafka's `appendAsLeader`).
    ///
    /// Every batch is validated: framing/CRC (→ CorruptMessage), structure (→ InvalidRecord;
    /// also: empty batch, lastOffsetDelta ≠ count−1, control batch), size vs
    /// `max_message_bytes` (→ MessageTooLarge), whole append vs `segment_bytes`
    /// (→ RecordListTooLarge), a record without a key on a compacted log (→ InvalidRecord, as
    /// Kafka), CreateTime timestamps vs the before/after windows
    /// (→ InvalidTimestamp), idempotent sequence/epoch (→ OutOfOrderSequence,
    /// InvalidProducerEpoch). Offsets are assigned from the LEO by rewriting each batch header
    /// (base offset, `leader_epoch`, max timestamp — `now_ms` for LogAppendTime topics) and CRC;
    /// the batches are otherwise stored as received (recompressed only when the topic's
    /// `compression.type` names another codec). A duplicate of one of a
    /// producer's last 5 batches returns its original offsets with `duplicate = true` and
    /// appends nothing. Rolls the segment first when needed. Empty `records` → Ok with
    /// first/last offset -1.
    pub fn append_as_leader(
        &mut self,
        records: Bytes,
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<LogAppendInfo, StorageError> {
        self.check_online()?;
        let mut info = LogAppendInfo::nothing(self.log_start_offset);
        if records.is_empty() {
            return Ok(info);
        }
        let max_segment = self.config.segment_bytes.min(i32::MAX as u64) as usize;
        if records.len() > max_segment {
            return Err(StorageError::RecordListTooLarge {
                size: records.len(),
                max: max_segment,
            });
        }
        let log_append = self.config.message_timestamp_type == TimestampType::LogAppendTime;
        if log_append {
            info.log_append_time_ms = now_ms;
        }
        let records = match self.config.compression_type {
            Some(target) => recompress(records, target, self.config.max_decompressed_bytes)?,
            None => records,
        };
        let mut plan = LeaderAppendPlan {
            info,
            edits: Vec::new(),
            metas: Vec::new(),
            pending: HashMap::new(),
            next: self.log_end_offset,
            position: 0,
        };
        for batch in batches(&records) {
            let batch = batch?;
            if let Some(duplicate) =
                self.plan_leader_batch(&mut plan, &batch, leader_epoch, log_append, now_ms)?
            {
                return Ok(duplicate);
            }
        }
        let LeaderAppendPlan {
            mut info,
            edits,
            metas,
            pending,
            next,
            ..
        } = plan;
        let timestamp_type = if log_append {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        };
        let buf = apply_header_edits(records, &edits, leader_epoch, timestamp_type)?;
        info.last_offset = next - 1;
        info.valid_bytes = buf.len();
        // A leader assigns offsets with no gap: from the LEO, one per record.
        assert!(
            info.first_offset == self.log_end_offset
                && next - info.first_offset == info.records_count,
            "{}: leader append assigned [{}, {next}) for {} records at LogEndOffset {}",
            self.dir.display(),
            info.first_offset,
            info.records_count,
            self.log_end_offset
        );
        self.write_batches(&buf, &metas, info.first_offset, next, now_ms)?;
        self.producer_state.commit(pending, next);
        if let Err(e) = self
            .leader_epoch_cache
            .assign(leader_epoch, info.first_offset)
        {
            return self.poison("leader epoch checkpoint", e);
        }
        self.count_unflushed(info.records_count)?;
        Ok(info)
    }

    /// Validates one batch of a leader append and adds it to `plan` (offsets from `plan.next`, the header
    /// edit, producer state staged). Returns the original append's info when the batch duplicates one
    /// of its producer's last batches (nothing is appended then).
    fn plan_leader_batch(
        &mut self,
        plan: &mut LeaderAppendPlan,
        batch: &RecordBatch,
        leader_epoch: i32,
        log_append: bool,
        now_ms: i64,
    ) -> Result<Option<LogAppendInfo>, StorageError> {
        let size = batch.size_in_bytes();
        let summary = self.validate_leader_batch(batch, log_append, now_ms)?;
        let mut h = *batch.header();
        if h.producer_id >= 0 {
            if let SequenceCheck::Duplicate(d) = self.producer_state.check(&plan.pending, &h)? {
                return Ok(Some(LogAppendInfo {
                    first_offset: d.first_offset,
                    last_offset: d.last_offset,
                    max_timestamp: d.max_timestamp,
                    offset_of_max_timestamp: d.last_offset,
                    duplicate: true,
                    ..plan.info
                }));
            }
        }
        let next = plan.next;
        let stored_max = if log_append {
            now_ms
        } else {
            summary.max_timestamp
        };
        // Base offset and partition leader epoch lie outside the CRC; the max timestamp and the
        // timestamp-type bit lie inside it, so the CRC is recomputed only when they change (as Kafka).
        let rewrite_crc = log_append
            || h.timestamp_type() != TimestampType::CreateTime
            || h.max_timestamp != stored_max;
        plan.edits.push(HeaderEdit {
            position: plan.position,
            size,
            base_offset: next,
            max_timestamp: stored_max,
            rewrite_crc,
        });
        h.base_offset = next;
        h.partition_leader_epoch = leader_epoch;
        h.max_timestamp = stored_max;
        if h.producer_id >= 0 {
            self.producer_state
                .stage(&mut plan.pending, &h, next, now_ms);
        }
        let info = &mut plan.info;
        if info.first_offset < 0 {
            info.first_offset = next;
        }
        if stored_max > info.max_timestamp || info.offset_of_max_timestamp < 0 {
            info.max_timestamp = stored_max;
            info.offset_of_max_timestamp = h.last_offset();
        }
        info.records_count += batch.records_count() as i64;
        plan.metas.push(AppendedBatch {
            last_offset: h.last_offset(),
            max_timestamp: stored_max,
            size: size as u32,
        });
        plan.next = h.next_offset();
        plan.position += size;
        Ok(None)
    }

    /// Counts appended messages toward `flush.messages`; fsyncs when it is reached.
    fn count_unflushed(&mut self, messages: i64) -> Result<(), StorageError> {
        self.unflushed_messages += messages;
        if self.unflushed_messages >= self.config.flush_messages {
            self.flush()?;
        }
        Ok(())
    }

    /// The per-batch checks of [`append_as_leader`](Self::append_as_leader): size, framing and CRC,
    /// record count, no control batch, keys on a compacted log, a producer's sequence, timestamps
    /// (CreateTime only). Returns the batch's summary.
    fn validate_leader_batch(
        &self,
        batch: &RecordBatch,
        log_append: bool,
        now_ms: i64,
    ) -> Result<protocol::record::BatchSummary, StorageError> {
        let size = batch.size_in_bytes();
        if size > self.config.max_message_bytes {
            return Err(StorageError::MessageTooLarge {
                size,
                max: self.config.max_message_bytes,
            });
        }
        let summary = batch.validate_with(self.config.max_decompressed_bytes)?;
        if batch.records_count() == 0 {
            return Err(StorageError::InvalidRecord("batch has no records".into()));
        }
        if batch.last_offset_delta() != batch.records_count() - 1 {
            return Err(StorageError::InvalidRecord(format!(
                "last offset delta {} inconsistent with record count {}",
                batch.last_offset_delta(),
                batch.records_count()
            )));
        }
        if batch.is_control() {
            return Err(StorageError::InvalidRecord(
                "clients may not write control batches".into(),
            ));
        }
        if self.config.compacts() {
            let keyless: Vec<i32> = batch
                .records()?
                .iter()
                .enumerate()
                .filter(|(_, r)| r.key.is_none())
                .map(|(i, _)| i as i32)
                .collect();
            if !keyless.is_empty() {
                return Err(StorageError::InvalidRecords {
                    message: format!(
                        "Compacted topic cannot accept message without key in topic partition {}.",
                        self.dir
                            .file_name()
                            .map(|n| n.to_string_lossy().into_owned())
                            .unwrap_or_default()
                    ),
                    batch_indexes: keyless,
                });
            }
        }
        if batch.producer_id() >= 0 && batch.base_sequence() < 0 {
            return Err(StorageError::InvalidRecord(format!(
                "invalid sequence number {} in batch with producer id {}",
                batch.base_sequence(),
                batch.producer_id()
            )));
        }
        if !log_append {
            self.check_timestamps(&summary, now_ms)?;
        }
        Ok(summary)
    }

    fn check_timestamps(
        &self,
        s: &protocol::record::BatchSummary,
        now_ms: i64,
    ) -> Result<(), StorageError> {
        let before = self.config.message_timestamp_before_max_ms;
        let after = self.config.message_timestamp_after_max_ms;
        if s.min_timestamp >= 0 && now_ms.saturating_sub(s.min_timestamp) > before {
            return Err(StorageError::InvalidTimestamp(format!(
                "timestamp {} is more than {before} ms before the broker time {now_ms}",
                s.min_timestamp
            )));
        }
        if s.max_timestamp >= 0 && s.max_timestamp.saturating_sub(now_ms) > after {
            return Err(StorageError::InvalidTimestamp(format!(
                "timestamp {} is more than {after} ms after the broker time {now_ms}",
                s.max_timestamp
            )));
        }
        Ok(())
    }

    fn write_batches(
        &mut self,
        buf: &[u8],
        metas: &[AppendedBatch],
        first_offset: i64,
        next: i64,
        now_ms: i64,
    ) -> Result<(), StorageError> {
        if let Err(e) = self.maybe_roll(buf.len(), first_offset, next - 1, now_ms) {
            return self.poison("roll", e);
        }
        #[cfg(test)]
        if std::mem::take(&mut self.fail_next_write) {
            return self.poison("append", io::Error::other("injected failure"));
        }
        // Appended offsets continue from the LEO (a leader's exactly, a follower's possibly after a
        // gap left by compaction) and every batch advances it.
        assert!(
            first_offset >= self.log_end_offset && next > first_offset,
            "{}: append of offsets [{first_offset}, {next}) at LogEndOffset {}",
            self.dir.display(),
            self.log_end_offset
        );
        if let Err(e) = self.active().append(buf, metas, now_ms) {
            return self.poison("append", e);
        }
        self.log_end_offset = next;
        self.assert_offsets();
        Ok(())
    }

    /// Appends batches replicated from the leader, keeping their offsets (simple version of
    /// Kafka's `appendAsFollower`): each batch is CRC/structure-checked, offsets must increase
    /// from the LEO (→ UnexpectedAppendOffset). Producer state is updated without checks.
    pub fn append_as_follower(
        &mut self,
        records: Bytes,
        now_ms: i64,
    ) -> Result<LogAppendInfo, StorageError> {
        self.check_online()?;
        let mut info = LogAppendInfo {
            valid_bytes: records.len(),
            ..LogAppendInfo::nothing(self.log_start_offset)
        };
        if records.is_empty() {
            return Ok(info);
        }
        let mut metas = Vec::new();
        let mut headers = Vec::new();
        let mut next = self.log_end_offset;
        for batch in batches(&records) {
            let batch: RecordBatch = batch?;
            batch.validate_with(self.config.max_decompressed_bytes)?;
            if batch.base_offset() < next {
                return Err(StorageError::UnexpectedAppendOffset(format!(
                    "batch base offset {} below expected {}",
                    batch.base_offset(),
                    next
                )));
            }
            if info.first_offset < 0 {
                info.first_offset = batch.base_offset();
            }
            if batch.max_timestamp() > info.max_timestamp {
                info.max_timestamp = batch.max_timestamp();
                info.offset_of_max_timestamp = batch.last_offset();
            }
            info.records_count += batch.records_count() as i64;
            metas.push(AppendedBatch {
                last_offset: batch.last_offset(),
                max_timestamp: batch.max_timestamp(),
                size: batch.size_in_bytes() as u32,
            });
            headers.push(*batch.header());
            next = batch.next_offset();
        }
        info.last_offset = next - 1;
        self.write_batches(&records, &metas, info.first_offset, next, now_ms)?;
        for h in &headers {
            self.producer_state.replay(h, now_ms);
            if let Err(e) = self
                .leader_epoch_cache
                .assign(h.partition_leader_epoch, h.base_offset)
            {
                return self.poison("leader epoch checkpoint", e);
            }
        }
        self.count_unflushed(info.records_count)?;
        Ok(info)
    }

    fn maybe_roll(
        &mut self,
        size: usize,
        first_offset: i64,
        last_offset: i64,
        now_ms: i64,
    ) -> io::Result<()> {
        let max_segment = self.config.segment_bytes.min(i32::MAX as u64);
        let segment_ms = self.config.segment_ms;
        let seg = self.active();
        if seg.size() == 0 {
            return Ok(());
        }
        let by_size = seg.size() + size as u64 > max_segment;
        let by_time = seg
            .rolling_base_ms()
            .is_some_and(|t| now_ms.saturating_sub(t) > segment_ms);
        let by_index = seg.offset_index_full();
        let by_offset = last_offset - seg.base_offset() > i32::MAX as i64;
        if by_size || by_time || by_index || by_offset {
            self.roll(Some(first_offset), now_ms)?;
        }
        Ok(())
    }

    /// Starts a new active segment at the LEO (or `at`, when larger; follower gaps). The old
    /// segment gets its final time-index entry; a producer snapshot is written at the new base;
    /// the old segments are fsynced by the next [`maybe_flush`](Self::maybe_flush).
    fn roll(&mut self, at: Option<i64>, _now_ms: i64) -> io::Result<()> {
        let new_base = at.unwrap_or(self.log_end_offset).max(self.log_end_offset);
        if self.active().base_offset() == new_base {
            return Ok(());
        }
        self.active().on_become_inactive()?;
        self.producer_state.set_map_end_offset(self.log_end_offset);
        self.producer_state.take_snapshot(false)?;
        for suffix in ["log", "index", "timeindex"] {
            let p = self.dir.join(offset_file_name(new_base, suffix));
            if p.exists() {
                fs::remove_file(p)?;
            }
        }
        let seg = LogSegment::open(
            &self.dir,
            new_base,
            self.config.index_interval_bytes,
            self.config.segment_index_bytes,
        )?;
        self.segments.insert(new_base, seg);
        self.pending_roll_flush = Some(new_base);
        self.needs_dir_fsync = true;
        Ok(())
    }

    /// Forces a roll (e.g. before deleting by retention, or for tests). No-op when the active
    /// segment is empty.
    pub fn force_roll(&mut self, now_ms: i64) -> Result<(), StorageError> {
        self.check_online()?;
        if self.active().size() == 0 {
            return Ok(());
        }
        if let Err(e) = self.roll(None, now_ms) {
            return self.poison("roll", e);
        }
        Ok(())
    }

    /// Reads whole batches for a Fetch (Kafka's `UnifiedLog.read`).
    ///
    /// Starts with the stored batch that CONTAINS `start_offset` (clients skip records below
    /// the fetch offset), adds following batches while the total stays ≤ `max_bytes` (the first
    /// batch is returned whole regardless when `min_one_batch`, KIP-74), never includes a batch
    /// whose last offset is ≥ `max_offset_exclusive` (the high watermark for consumers, the LEO
    /// for followers) and stays within one segment. Errors: `start_offset` below the log start
    /// offset, above the LEO, or above `max_offset_exclusive` → OffsetOutOfRange. `start_offset` ==
    /// `max_offset_exclusive` → empty records, no error. Only headers are read (offset-index
    /// lookup, then 61-byte headers); the returned [`Records::File`] slice is read later without
    /// the lock. A concurrent truncation can make the file shorter than the slice: readers must
    /// tolerate a short read.
    pub fn read(
        &mut self,
        start_offset: i64,
        max_bytes: usize,
        max_offset_exclusive: i64,
        min_one_batch: bool,
    ) -> Result<FetchDataInfo, StorageError> {
        let leo = self.log_end_offset;
        let limit = max_offset_exclusive.min(leo);
        if start_offset < self.log_start_offset
            || start_offset > leo
            || start_offset > limit.max(self.log_start_offset)
        {
            return Err(StorageError::OffsetOutOfRange {
                offset: start_offset,
                log_start_offset: self.log_start_offset,
                log_end_offset: leo,
            });
        }
        if start_offset >= limit {
            return Ok(FetchDataInfo::empty(start_offset));
        }
        let floor = self
            .segments
            .range(..=start_offset)
            .next_back()
            .map_or(i64::MIN, |(b, _)| *b);
        for (base, seg) in self.segments.range_mut(floor..) {
            let from = start_offset.max(*base);
            if let Some((slice, first_base)) = seg.read(from, max_bytes, limit, min_one_batch)? {
                let meta = LogOffsetMetadata {
                    message_offset: start_offset,
                    segment_base_offset: *base,
                    relative_position: slice.position as i64,
                };
                if slice.len == 0 {
                    return Ok(FetchDataInfo {
                        fetch_offset_metadata: meta,
                        ..FetchDataInfo::empty(start_offset)
                    });
                }
                return Ok(FetchDataInfo {
                    records: Records::File(slice),
                    fetch_offset_metadata: meta,
                    first_batch_base_offset: first_base,
                });
            }
        }
        Ok(FetchDataInfo::empty(start_offset))
    }

    /// ListOffsets lookup (Kafka's `fetchOffsetByTimestamp`): returns (offset, timestamp).
    /// `-2` (earliest) and `-4` (earliest local) → (log start, -1); `-1` (latest) → (LEO, -1);
    /// `-3` (max timestamp, KIP-734) → the first record with the largest timestamp; any other
    /// value → the first record at or after log start with timestamp ≥ `timestamp`
    /// (segments by max timestamp, then time index, offset index and a short batch scan).
    /// `None` when no record qualifies.
    pub fn fetch_offset_by_timestamp(
        &mut self,
        timestamp: i64,
    ) -> Result<Option<(i64, i64)>, StorageError> {
        match timestamp {
            EARLIEST_TIMESTAMP | EARLIEST_LOCAL_TIMESTAMP => {
                return Ok(Some((self.log_start_offset, -1)))
            }
            LATEST_TIMESTAMP => return Ok(Some((self.log_end_offset, -1))),
            MAX_TIMESTAMP => return self.find_max_timestamp(),
            _ => {}
        }
        let log_start = self.log_start_offset;
        for seg in self.segments.values_mut() {
            if seg.max_timestamp_so_far() < timestamp {
                continue;
            }
            if let Some(r) = find_in_segment(seg, timestamp, log_start)? {
                return Ok(Some(r));
            }
        }
        Ok(None)
    }

    fn find_max_timestamp(&mut self) -> Result<Option<(i64, i64)>, StorageError> {
        let log_start = self.log_start_offset;
        let mut best: Option<&mut LogSegment> = None;
        for seg in self.segments.values_mut() {
            if seg.max_timestamp_so_far() >= 0
                && best
                    .as_ref()
                    .is_none_or(|b| seg.max_timestamp_so_far() > b.max_timestamp_so_far())
            {
                best = Some(seg);
            }
        }
        let Some(seg) = best else { return Ok(None) };
        let ts = seg.max_timestamp_so_far();
        let target = seg.offset_of_max_timestamp_so_far().max(log_start);
        let Some(b) = seg.find_batch(target)? else {
            return Ok(None);
        };
        let bytes = Bytes::from(seg.read_batch_bytes(&b)?);
        let batch = RecordBatch::new(bytes)?;
        let recs = batch.records()?;
        Ok(recs
            .iter()
            .find(|r| r.timestamp == ts && r.offset >= log_start)
            .or_else(|| recs.iter().rev().find(|r| r.offset >= log_start))
            .map(|r| (r.offset, r.timestamp)))
    }

    /// Deletes old segments by retention (never the active one): `retention_ms` against each
    /// segment's largest timestamp (file mtime when none), `retention_bytes` against the total
    /// size, and segments wholly below the log start offset. Advances the log start offset to
    /// the first remaining segment. Returns how many segments were deleted. Also expires idle
    /// producer state. Policy `compact` deletes only below the log start offset.
    pub fn delete_old_segments(&mut self, now_ms: i64) -> Result<usize, StorageError> {
        self.producer_state.remove_expired_producers(now_ms);
        let deletes = self.config.deletes();
        let mut total: i64 = self.size_in_bytes() as i64;
        let mut doomed = Vec::new();
        let bases: Vec<i64> = self.segments.keys().copied().collect();
        for w in bases.windows(2) {
            let (b, next_base) = (w[0], w[1]);
            let seg = self.segments.get(&b).expect("exists");
            let largest = if seg.max_timestamp_so_far() > 0 {
                seg.max_timestamp_so_far()
            } else {
                seg.last_modified_ms()
            };
            let by_start = next_base <= self.log_start_offset;
            let by_time = deletes
                && self.config.retention_ms >= 0
                && now_ms.saturating_sub(largest) > self.config.retention_ms;
            let by_size = deletes
                && self.config.retention_bytes >= 0
                && total - seg.size() as i64 >= self.config.retention_bytes;
            if !(by_start || by_time || by_size) {
                break;
            }
            total -= seg.size() as i64;
            doomed.push((b, next_base));
        }
        let n = doomed.len();
        for (b, next_base) in doomed {
            let seg = self.segments.remove(&b).expect("exists");
            self.log_start_offset = self.log_start_offset.max(next_base);
            if let Err(e) = seg.delete_files(&self.dir) {
                return self.poison("segment delete", e);
            }
        }
        if n > 0
            || self
                .leader_epoch_cache
                .entries()
                .first()
                .is_some_and(|e| e.1 < self.log_start_offset)
        {
            if let Err(e) = self
                .leader_epoch_cache
                .truncate_from_start(self.log_start_offset)
            {
                return self.poison("leader epoch checkpoint", e);
            }
        }
        if n > 0 {
            self.high_watermark = self.high_watermark.max(self.log_start_offset);
            self.recovery_point = self.recovery_point.max(self.log_start_offset);
            self.assert_offsets();
            tracing::info!(dir = %self.dir.display(), segments = n, log_start_offset = self.log_start_offset, "deleted segments by retention");
        }
        Ok(n)
    }

    /// Advances the log start offset to `offset` (DeleteRecords) and deletes segments wholly
    /// below it. `offset` > high watermark → OffsetOutOfRange. Returns the new log start offset.
    pub fn delete_records_before(&mut self, offset: i64) -> Result<i64, StorageError> {
        if offset > self.high_watermark || offset < 0 {
            return Err(StorageError::OffsetOutOfRange {
                offset,
                log_start_offset: self.log_start_offset,
                log_end_offset: self.log_end_offset,
            });
        }
        if offset > self.log_start_offset {
            self.log_start_offset = offset;
            let saved = self.config.cleanup_policy;
            self.config.cleanup_policy = crate::config::CleanupPolicy::Compact; // only the start-offset rule
            let r = self.delete_old_segments(crate::now_ms());
            self.config.cleanup_policy = saved;
            r?;
        }
        Ok(self.log_start_offset)
    }

    /// fsyncs every segment (data + indexes) and advances the recovery point to the LEO.
    pub fn flush(&mut self) -> Result<(), StorageError> {
        self.check_online()?;
        let rp_floor = self
            .segments
            .range(..=self.recovery_point)
            .next_back()
            .map_or(i64::MIN, |(b, _)| *b);
        let mut res = Ok(());
        for seg in self.segments.range_mut(rp_floor..).map(|(_, s)| s) {
            if let Err(e) = seg.flush() {
                res = Err(e);
                break;
            }
        }
        if res.is_ok() && self.needs_dir_fsync {
            res = crate::checkpoint::fsync_dir(&self.dir);
        }
        if let Err(e) = res {
            return self.poison("fsync", e);
        }
        self.needs_dir_fsync = false;
        self.recovery_point = self.log_end_offset;
        self.unflushed_messages = 0;
        self.last_flush_ms = crate::now_ms();
        self.pending_roll_flush = None;
        Ok(())
    }

    /// Periodic flush policy: full flush when `flush_messages` unflushed messages accumulated
    /// or the last flush is older than `flush_ms`; otherwise, after a roll, fsyncs the segments
    /// below the new active one and advances the recovery point to its base (as Kafka's
    /// asynchronous flush on roll). Returns true when something was fsynced. Same as
    /// [`prepare_flush`](Self::prepare_flush) + [`FlushJob::run`] +
    /// [`complete_flush`](Self::complete_flush) under one `&mut self`.
    pub fn maybe_flush(&mut self, now_ms: i64) -> Result<bool, StorageError> {
        let Some(job) = self.prepare_flush(now_ms)? else {
            return Ok(false);
        };
        let r = job.run();
        self.complete_flush(job, r)?;
        Ok(true)
    }

    /// First half of the periodic flush (see [`maybe_flush`](Self::maybe_flush)): decides what
    /// to fsync and returns it as a [`FlushJob`] to run WITHOUT holding the log's lock, then
    /// hand back to [`complete_flush`](Self::complete_flush). `None` when nothing is due.
    pub fn prepare_flush(&mut self, now_ms: i64) -> Result<Option<FlushJob>, StorageError> {
        self.check_online()?;
        let by_count =
            self.unflushed_messages > 0 && self.unflushed_messages >= self.config.flush_messages;
        let by_time = self.unflushed_messages > 0
            && now_ms.saturating_sub(self.last_flush_ms) >= self.config.flush_ms;
        let upto = if by_count || by_time {
            self.last_flush_ms = now_ms;
            self.pending_roll_flush = None;
            self.log_end_offset
        } else if let Some(upto) = self.pending_roll_flush.take() {
            upto
        } else {
            return Ok(None);
        };
        let rp_floor = self
            .segments
            .range(..=self.recovery_point)
            .next_back()
            .map_or(i64::MIN, |(b, _)| *b);
        let mut job = FlushJob {
            files: Vec::new(),
            paths: Vec::new(),
            dir: None,
            upto,
            messages: self.unflushed_messages,
        };
        let active_base = *self.segments.keys().next_back().expect("segment");
        for (&b, seg) in self.segments.range_mut(rp_floor..) {
            if b >= upto && !(upto == self.log_end_offset && b == active_base) {
                break;
            }
            seg.take_flush_targets(&mut job.files, &mut job.paths);
        }
        if std::mem::take(&mut self.needs_dir_fsync) {
            job.dir = Some(self.dir.clone());
        }
        Ok(Some(job))
    }

    /// Second half of the periodic flush: on success advances the recovery point to the job's
    /// offset and closes the index descriptors of flushed inactive segments; on failure takes
    /// the log offline.
    pub fn complete_flush(
        &mut self,
        job: FlushJob,
        result: io::Result<()>,
    ) -> Result<(), StorageError> {
        if let Err(e) = result {
            return self.poison("fsync", e);
        }
        self.recovery_point = self.recovery_point.max(job.upto.min(self.log_end_offset));
        self.unflushed_messages = (self.unflushed_messages - job.messages).max(0);
        let active_base = *self.segments.keys().next_back().expect("segment");
        for (&b, seg) in self.segments.range_mut(..job.upto) {
            if b != active_base {
                seg.release_index_handles();
            }
        }
        Ok(())
    }

    /// Removes all data at and above `offset` (for replication), whole batches: a batch
    /// containing `offset` is removed too. HW and recovery point are lowered to the new LEO;
    /// producer state is reloaded from snapshots. Below the first segment → the log is emptied
    /// and restarted at `offset`.
    pub fn truncate_to(&mut self, offset: i64) -> Result<(), StorageError> {
        self.check_online()?;
        if offset >= self.log_end_offset {
            // Still drop epoch entries starting at the LEO: this replica may have become leader and
            // recorded an epoch start without appending before another leader took over (Kafka's
            // `truncateTo` does the same); left in place it would diverge from the leader forever.
            let leo = self.log_end_offset;
            if let Err(e) = self.leader_epoch_cache.truncate_from_end(leo) {
                return self.poison("leader epoch checkpoint", e);
            }
            return Ok(());
        }
        let first = *self.segments.keys().next().expect("segment");
        if offset <= first || offset < self.log_start_offset {
            return self.truncate_fully_and_start_at(offset.max(0));
        }
        let r: io::Result<i64> = (|| {
            let doomed: Vec<i64> = self.segments.range(offset..).map(|(b, _)| *b).collect();
            for b in doomed {
                let seg = self.segments.remove(&b).expect("exists");
                seg.delete_files(&self.dir)?;
            }
            self.active().truncate_to(offset)
        })();
        let new_leo = match r {
            Ok(o) => o,
            Err(e) => return self.poison("truncate", e),
        };
        self.log_end_offset = new_leo;
        self.log_start_offset = self.log_start_offset.min(new_leo);
        self.high_watermark = self.high_watermark.min(new_leo);
        self.recovery_point = self.recovery_point.min(new_leo);
        self.assert_offsets();
        self.pending_roll_flush = None;
        if let Err(e) = self.leader_epoch_cache.truncate_from_end(new_leo) {
            return self.poison("leader epoch checkpoint", e);
        }
        self.rebuild_producer_state(crate::now_ms())?;
        Ok(())
    }

    /// Deletes all segments and starts an empty log at `offset` (Kafka's
    /// `truncateFullyAndStartAt`).
    pub fn truncate_fully_and_start_at(&mut self, offset: i64) -> Result<(), StorageError> {
        self.check_online()?;
        let r: io::Result<()> = (|| {
            let all: Vec<i64> = self.segments.keys().copied().collect();
            for b in all {
                let seg = self.segments.remove(&b).expect("exists");
                seg.delete_files(&self.dir)?;
            }
            self.producer_state.delete_all_snapshots()?;
            self.leader_epoch_cache.clear()?;
            let seg = LogSegment::open(
                &self.dir,
                offset,
                self.config.index_interval_bytes,
                self.config.segment_index_bytes,
            )?;
            self.segments.insert(offset, seg);
            Ok(())
        })();
        if let Err(e) = r {
            return self.poison("truncate", e);
        }
        self.log_start_offset = offset;
        self.log_end_offset = offset;
        self.high_watermark = offset;
        self.recovery_point = offset;
        self.pending_roll_flush = None;
        self.rebuild_producer_state(crate::now_ms())?;
        Ok(())
    }

    /// Clean close: final time-index entry for the active segment, fsync of everything, producer
    /// snapshot at the LEO (fsynced).
    pub fn close(&mut self) -> Result<(), StorageError> {
        self.check_online()?;
        if let Err(e) = self.active().on_become_inactive() {
            return self.poison("close", e);
        }
        self.flush()?;
        self.producer_state.set_map_end_offset(self.log_end_offset);
        if let Err(e) = self.producer_state.take_snapshot(true) {
            return self.poison("producer snapshot", e);
        }
        self.offline = Some(format!("log {} is closed", self.dir.display()));
        Ok(())
    }
}

/// An inactive segment as seen by the log cleaner (taken under the lock, read without it).
#[derive(Debug, Clone)]
pub(crate) struct CleanerSegment {
    pub base_offset: i64,
    /// Base offset of the following segment (everything here is below it).
    pub next_base: i64,
    pub file: std::sync::Arc<fs::File>,
    pub size: u64,
    pub max_timestamp: i64,
}

/// What the log cleaner needs to know about a log, copied under the lock.
#[derive(Debug, Clone)]
pub(crate) struct CleanerView {
    pub dir: PathBuf,
    pub config: LogConfig,
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    pub high_watermark: i64,
    pub active_base: i64,
    /// Inactive segments, ascending.
    pub segments: Vec<CleanerSegment>,
}

/// Steps of [`Log::swap_cleaned_segment`], for crash injection in tests: the swap stops with an
/// error right after the named step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[allow(dead_code)]
pub(crate) enum SwapStep {
    /// `.index.cleaned`/`.timeindex.cleaned` renamed to `.swap`.
    IndexesToSwap,
    /// `.log.cleaned` renamed to `.log.swap` and the directory fsynced (the commit point).
    LogToSwap,
    /// Index `.swap` files renamed over the live indexes.
    IndexesInPlace,
    /// `.log.swap` renamed over the live `.log` and the directory fsynced.
    LogInPlace,
}

/// Deletes the cleaner's `.cleaned` files of segment `base` (an abandoned clean).
pub(crate) fn discard_cleaned(dir: &Path, base: i64) {
    for suffix in ["log", "index", "timeindex"] {
        let _ = fs::remove_file(dir.join(format!(
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
                }
            })
            .collect();
        CleanerView {
            dir: self.dir.clone(),
            config: self.config.clone(),
            log_start_offset: self.log_start_offset,
            log_end_offset: self.log_end_offset,
            high_watermark: self.high_watermark,
            active_base,
            segments,
        }
    }

    /// Replaces inactive segment `base` by the cleaner's fsynced `<base>.*.cleaned` files
    /// (Kafka's swap protocol): index files `.cleaned` → `.swap`; `.log.cleaned` → `.log.swap`
    /// and a directory fsync (commit point: from here recovery completes the swap); the
    /// `.swap` files renamed over the live ones; directory fsync; the in-memory segment
    /// replaced (readers holding the old file keep reading the old bytes). A cleaned segment
    /// that is empty and not the first is deleted afterwards. Returns false (and deletes the
    /// `.cleaned` files) when the segment changed since `expected` was taken (deleted by
    /// retention, truncated, or now the active one). An I/O error takes the log offline; the
    /// files are put right at the next open.
    pub(crate) fn swap_cleaned_segment(
        &mut self,
        base: i64,
        expected: &std::sync::Arc<fs::File>,
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
            discard_cleaned(&self.dir, base);
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
        let r: io::Result<()> = (|| {
            for sfx in ["index", "timeindex"] {
                fs::rename(name(sfx, cleaned), name(sfx, swap))?;
            }
            crash(SwapStep::IndexesToSwap)?;
            fs::rename(name("log", cleaned), name("log", swap))?;
            crate::checkpoint::fsync_dir(&dir)?;
            crash(SwapStep::LogToSwap)?;
            for sfx in ["index", "timeindex"] {
                fs::rename(name(sfx, swap), name(sfx, ""))?;
            }
            crash(SwapStep::IndexesInPlace)?;
            fs::rename(name("log", swap), name("log", ""))?;
            crate::checkpoint::fsync_dir(&dir)?;
            crash(SwapStep::LogInPlace)?;
            Ok(())
        })();
        if let Err(e) = r {
            return self.poison("log cleaner swap", e);
        }
        let opened: io::Result<LogSegment> = (|| {
            let mut seg = LogSegment::open(
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

/// First record with timestamp ≥ `ts` and offset ≥ `log_start` in `seg`.
fn find_in_segment(
    seg: &mut LogSegment,
    ts: i64,
    log_start: i64,
) -> Result<Option<(i64, i64)>, StorageError> {
    let te = seg.time_index_lookup(ts)?;
    let from = te.max(log_start).max(seg.base_offset());
    let Some(first) = seg.find_batch(from)? else {
        return Ok(None);
    };
    let mut found = None;
    let mut err = None;
    let seg_ref: &LogSegment = seg;
    seg_ref.for_each_header(first.position, |b| {
        if b.header.max_timestamp < ts || b.header.last_offset() < log_start {
            return Ok(true);
        }
        let bytes = seg_ref.read_batch_bytes(b)?;
        match RecordBatch::new(Bytes::from(bytes)).and_then(|batch| batch.records()) {
            Ok(recs) => {
                found = recs
                    .into_iter()
                    .find(|r| r.timestamp >= ts && r.offset >= log_start)
                    .map(|r| (r.offset, r.timestamp));
                Ok(found.is_none())
            }
            Err(e) => {
                err = Some(e);
                Ok(false)
            }
        }
    })?;
    if let Some(e) = err {
        return Err(e.into());
    }
    Ok(found)
}

/// Kafka's broker-side recompression for a topic whose `compression.type` is not `producer`: every
/// batch stored with another codec is validated (CRC and structure, so corruption is never masked) and
/// rebuilt with `target`, keeping the producer id, epoch and base sequence, the transactional flag and
/// every record's timestamp, key, value and headers. Batches already in `target` are kept as they are;
/// control batches are left for the append checks to refuse.
fn recompress(
    records: Bytes,
    target: protocol::record::Compression,
    max_decompressed: usize,
) -> Result<Bytes, StorageError> {
    let mut needed = false;
    for batch in batches(&records) {
        let batch = batch?;
        if batch.header().compression()? != target && !batch.is_control() {
            needed = true;
            break;
        }
    }
    if !needed {
        return Ok(records);
    }
    let mut out = bytes::BytesMut::with_capacity(records.len());
    for batch in batches(&records) {
        let batch = batch?;
        if batch.header().compression()? == target || batch.is_control() {
            out.extend_from_slice(batch.as_bytes());
            continue;
        }
        batch.validate_with(max_decompressed)?;
        let h = *batch.header();
        let mut builder = protocol::record::RecordBatchBuilder::new(target)
            .base_offset(h.base_offset)
            .producer(h.producer_id, h.producer_epoch, h.base_sequence)
            .transactional(h.is_transactional());
        for r in batch.records()? {
            builder.append(r.timestamp, r.key, r.value, r.headers);
        }
        out.extend_from_slice(&builder.build()?);
    }
    Ok(out.freeze())
}

/// What a leader append builds while it walks the batches, before anything is written.
struct LeaderAppendPlan {
    /// The append's info so far.
    info: LogAppendInfo,
    /// Header edits, one per batch.
    edits: Vec<HeaderEdit>,
    /// Index metadata, one per batch.
    metas: Vec<AppendedBatch>,
    /// Producer state staged by the batches, committed after the write.
    pending: HashMap<i64, ProducerStateEntry>,
    /// The next offset to assign.
    next: i64,
    /// Byte position of the next batch in the append.
    position: usize,
}

/// A leader append's change to one batch header, applied once every batch has validated.
struct HeaderEdit {
    /// Byte position of the batch in the append.
    position: usize,
    /// Batch size in bytes.
    size: usize,
    /// The assigned base offset.
    base_offset: i64,
    /// The max timestamp to store.
    max_timestamp: i64,
    /// Whether the CRC-covered part changes (max timestamp or timestamp type; base offset and leader
    /// epoch lie outside the CRC), so the CRC is recomputed only then, as Kafka does.
    rewrite_crc: bool,
}

/// Edits the validated batches' headers in place: base offset, leader epoch, and where needed the max
/// timestamp, timestamp type and CRC. The producer's buffer is reused when the append holds the only
/// reference to it (the usual single-partition Produce), else copied once.
fn apply_header_edits(
    records: Bytes,
    edits: &[HeaderEdit],
    leader_epoch: i32,
    timestamp_type: TimestampType,
) -> Result<bytes::BytesMut, StorageError> {
    let mut buf = records
        .try_into_mut()
        .unwrap_or_else(|shared| bytes::BytesMut::from(&shared[..]));
    for e in edits {
        let mut m = RecordBatchMut::new(&mut buf[e.position..e.position + e.size])?;
        m.set_base_offset(e.base_offset);
        m.set_partition_leader_epoch(leader_epoch);
        if e.rewrite_crc {
            m.set_max_timestamp(timestamp_type, e.max_timestamp);
            m.update_crc();
        }
    }
    Ok(buf)
}
