//! Retention (time, size, DeleteRecords), flushing and truncation.

use super::*;

impl Log {
    /// Deletes old segments by retention (never the active one): `retention_ms` against each
    /// segment's largest timestamp (file mtime when none), `retention_bytes` against the total
    /// size, and segments wholly below the log start offset. Advances the log start offset to
    /// the first remaining segment. Returns how many segments were deleted. Also expires idle
    /// producer state. Policy `compact` deletes only below the log start offset.
    pub fn delete_old_segments(&mut self, now_ms: i64) -> Result<usize, StorageError> {
        self.producer_state.remove_expired_producers(now_ms);
        let expiration_ms = self.config.producer_id_expiration_ms;
        self.verification.expire(now_ms, expiration_ms);
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
        // The removals become durable with the next flush's directory fsync.
        self.needs_dir_fsync |= n > 0;
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
                .is_some_and(|e| e.1.get() < self.log_start_offset)
        {
            if let Err(e) = self
                .leader_epoch_cache
                .truncate_from_start(Offset(self.log_start_offset))
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
    pub fn delete_records_before(&mut self, offset: Offset) -> Result<Offset, StorageError> {
        let offset = offset.get();
        if offset > self.high_watermark || offset < 0 {
            return Err(StorageError::OffsetOutOfRange {
                offset: Offset(offset),
                log_start_offset: Offset(self.log_start_offset),
                log_end_offset: Offset(self.log_end_offset),
            });
        }
        if offset > self.log_start_offset {
            self.log_start_offset = offset;
            let saved = self.config.cleanup_policy;
            self.config.cleanup_policy = crate::config::CleanupPolicy::Compact; // only the start-offset rule
            let r = self.delete_old_segments(self.clock.now_ms());
            self.config.cleanup_policy = saved;
            r?;
        }
        Ok(Offset(self.log_start_offset))
    }

    /// Writes every segment from the one holding offset `from` (the last recovery point known to be
    /// fsynced) on again and flushes them (see [`reopen`](Self::reopen)); the directory is fsynced
    /// again too.
    fn rewrite_from(&mut self, from: i64) -> Result<(), StorageError> {
        let floor = self
            .segments
            .range(..=from)
            .next_back()
            .map_or(i64::MIN, |(b, _)| *b);
        let mut res = Ok(());
        for seg in self.segments.range_mut(floor..).map(|(_, s)| s) {
            res = seg.rewrite().and_then(|()| seg.flush());
            if res.is_err() {
                break;
            }
        }
        if let Err(e) = res.and_then(|()| self.fs.sync_dir(&self.dir)) {
            return self.poison("rewrite", e);
        }
        self.needs_dir_fsync = false;
        Ok(())
    }

    /// fsyncs every segment (data + indexes) and advances the recovery point to the LEO.
    pub fn flush(&mut self) -> Result<(), StorageError> {
        self.check_online()?;
        let started = std::time::Instant::now();
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
            res = self.fs.sync_dir(&self.dir);
        }
        if let Err(e) = res {
            return self.poison("fsync", e);
        }
        crate::stats::flushed(started);
        self.needs_dir_fsync = false;
        self.recovery_point = self.log_end_offset;
        self.unflushed_messages = 0;
        self.last_flush_ms = self.clock.now_ms();
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
        Ok(Some(self.flush_job_upto(upto)))
    }

    /// True when the appends since the last flush reached `flush.messages` (Kafka's `flushInterval`):
    /// the appender owes an fsync before it acknowledges.
    pub fn flush_due(&self) -> bool {
        self.unflushed_messages > 0 && self.unflushed_messages >= self.config.flush_messages
    }

    /// The fsync an append made due by `flush.messages` ([`flush_due`](Self::flush_due)), up to the
    /// LogEndOffset, as a [`FlushJob`] for the appender to run after releasing the log's lock (so Fetches and
    /// other appends of the partition are not held behind the disk) and hand back to
    /// [`complete_flush`](Self::complete_flush). `None` when none is due. Errors: the log is offline.
    pub fn prepare_due_flush(&mut self, now_ms: i64) -> Result<Option<FlushJob>, StorageError> {
        self.check_online()?;
        if !self.flush_due() {
            return Ok(None);
        }
        self.last_flush_ms = now_ms;
        self.pending_roll_flush = None;
        Ok(Some(self.flush_job_upto(self.log_end_offset)))
    }

    /// The files to fsync for the recovery point to advance to `upto`.
    fn flush_job_upto(&mut self, upto: i64) -> FlushJob {
        let rp_floor = self
            .segments
            .range(..=self.recovery_point)
            .next_back()
            .map_or(i64::MIN, |(b, _)| *b);
        let mut job = FlushJob {
            fs: self.fs.clone(),
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
        job
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
    pub fn truncate_to(&mut self, offset: Offset) -> Result<(), StorageError> {
        let offset = offset.get();
        self.check_online()?;
        if offset >= self.log_end_offset {
            // Still drop epoch entries starting at the LEO: this replica may have become leader and
            // recorded an epoch start without appending before another leader took over (Kafka's
            // `truncateTo` does the same); left in place it would diverge from the leader forever.
            let leo = Offset(self.log_end_offset);
            if let Err(e) = self.leader_epoch_cache.truncate_from_end(leo) {
                return self.poison("leader epoch checkpoint", e);
            }
            return Ok(());
        }
        let first = *self.segments.keys().next().expect("segment");
        if offset <= first || offset < self.log_start_offset {
            return self.truncate_fully_and_start_at(Offset(offset.max(0)));
        }
        let r: io::Result<i64> = (|| {
            // From the end backwards, each step durable before the next (found by the SimFs crash
            // simulation): a power loss mid-way leaves a shorter but gapless log, never a cut
            // segment followed by a removed one that came back.
            let doomed: Vec<i64> = self.segments.range(offset..).map(|(b, _)| *b).collect();
            for b in doomed.into_iter().rev() {
                let seg = self.segments.remove(&b).expect("exists");
                seg.delete_files(&self.dir)?;
                self.fs.sync_dir(&self.dir)?;
            }
            let new_leo = self.active().truncate_to(offset)?;
            self.active().flush()?;
            Ok(new_leo)
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
        // The segments a roll left for the next flush are still unflushed below the new LEO.
        self.pending_roll_flush = self.pending_roll_flush.map(|upto| upto.min(new_leo));
        if let Err(e) = self.leader_epoch_cache.truncate_from_end(Offset(new_leo)) {
            return self.poison("leader epoch checkpoint", e);
        }
        self.rebuild_producer_state(self.clock.now_ms())?;
        Ok(())
    }

    /// Deletes all segments and starts an empty log at `offset` (Kafka's
    /// `truncateFullyAndStartAt`).
    pub fn truncate_fully_and_start_at(&mut self, offset: Offset) -> Result<(), StorageError> {
        let offset = offset.get();
        self.check_online()?;
        let r: io::Result<()> = (|| {
            let all: Vec<i64> = self.segments.keys().copied().collect();
            for b in all {
                let seg = self.segments.remove(&b).expect("exists");
                seg.delete_files(&self.dir)?;
            }
            self.producer_state.delete_all_snapshots()?;
            self.leader_epoch_cache.clear()?;
            let seg = LogSegment::open_in(
                &self.fs,
                &self.dir,
                offset,
                self.config.index_interval_bytes,
                self.config.segment_index_bytes,
            )?;
            self.segments.insert(offset, seg);
            self.fs.sync_dir(&self.dir)
        })();
        if let Err(e) = r {
            return self.poison("truncate", e);
        }
        self.log_start_offset = offset;
        self.log_end_offset = offset;
        self.high_watermark = offset;
        self.recovery_point = offset;
        self.pending_roll_flush = None;
        self.rebuild_producer_state(self.clock.now_ms())?;
        Ok(())
    }

    /// Clean close: final time-index entry for the active segment, fsync of everything, producer
    /// snapshot at the LEO (fsynced) — none when the state has no producer and the next clean open
    /// rebuilds it the same without one (`ProducerStateManager::snapshot_unneeded`: no snapshot file
    /// and an empty log, or the newest file is a producer-less one at the LEO).
    pub fn close(&mut self) -> Result<(), StorageError> {
        self.check_online()?;
        if let Err(e) = self.active().on_become_inactive() {
            return self.poison("close", e);
        }
        self.flush()?;
        self.producer_state.set_map_end_offset(self.log_end_offset);
        // No file for a state the next clean open rebuilds the same without it (no producer).
        if !self.producer_state.snapshot_unneeded(self.log_start_offset) {
            if let Err(e) = self.producer_state.take_snapshot(true) {
                return self.poison("producer snapshot", e);
            }
        }
        self.offline = Some(format!("log {} is closed", self.dir.display()));
        Ok(())
    }

    /// Takes over from `old`, the current log this one (a caught-up future log, reopened at its final
    /// place) replaces (KIP-113): its log start offset, HighWatermark, transaction verifications in flight
    /// and clock; `old` is left closed. Both logs must end at the same offset.
    pub(crate) fn take_over_from(&mut self, old: &mut Log) {
        debug_assert_eq!(
            self.log_end_offset, old.log_end_offset,
            "the future log caught up"
        );
        self.restore_log_start_offset(Offset(old.log_start_offset));
        self.update_high_watermark(Offset(old.high_watermark).min(Offset(self.log_end_offset)));
        self.verification = std::mem::take(&mut old.verification);
        self.clock = old.clock.clone();
        old.offline = Some(format!(
            "log {} moved to {}",
            old.dir.display(),
            self.dir.display()
        ));
    }

    /// The clock the log reads when it decides by itself (see the field); the [`crate::LogManager`]'s.
    pub(crate) fn attach_clock(&mut self, clock: std::sync::Arc<dyn types::Clock>) {
        self.clock = clock;
    }

    /// Ties the log to its data directory's health: a later write failure marks the dir offline.
    pub(crate) fn attach_dir_health(&mut self, health: std::sync::Arc<crate::LogDirHealth>) {
        self.dir_health = Some(health);
    }

    /// Takes the log offline because its data directory failed (`reason`); a no-op for a log that
    /// is already offline.
    pub(crate) fn mark_dir_offline(&mut self, reason: &str) {
        if self.offline.is_none() {
            self.offline = Some(format!("log directory offline: {reason}"));
        }
    }

    /// Brings a log back after its directory failed and is healthy again: opens it afresh with
    /// recovery from the recovery point (every batch past it re-validated, a torn or corrupt tail
    /// truncated, indexes rebuilt, producer state reloaded), keeping the log start offset and the
    /// HighWatermark (clamped to the recovered LogEndOffset). Nothing unflushed is trusted: after a
    /// failed fsync Linux may drop the dirty pages while reads still return them and later fsyncs
    /// succeed ("fsyncgate"), so every segment from the recovery point's on is written again from
    /// what recovery validated and fsynced before the log takes writes. On error the log stays as it
    /// was (offline). Readers holding file slices of the old segments keep reading them.
    pub fn reopen(&mut self, now_ms: i64) -> Result<(), StorageError> {
        let mut fresh = Log::open_in(
            self.fs.clone(),
            &self.dir,
            self.config.clone(),
            self.topic_id,
            true,
            Offset(self.recovery_point),
            now_ms,
        )?;
        fresh.restore_log_start_offset(Offset(self.log_start_offset));
        fresh.rewrite_from(self.recovery_point)?;
        let hw = Offset(self.high_watermark).min(fresh.log_end_offset());
        fresh.update_high_watermark(hw);
        fresh.dir_health = self.dir_health.take();
        fresh.clock = self.clock.clone();
        tracing::info!(dir = %self.dir.display(), log_end_offset = fresh.log_end_offset, "log reopened after its directory came back");
        *self = fresh;
        Ok(())
    }
}
