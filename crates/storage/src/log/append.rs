//! Appends: as leader (validation, offset assignment, idempotence, recompression) and as follower, and
//! segment rolling.

use super::txn::{coordinator_marker, marker_of, AppendOrigin};
use super::*;
use crate::producer_state::CompletedTxn;
use crate::verification::VerificationGuard;
use protocol::record::{RecordBatchHeader, RECORD_BATCH_OVERHEAD};
use types::{ProducerEpoch, ProducerId};

impl Log {
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
    /// first/last offset -1. Same as [`append_as_leader_with_origin`](Self::append_as_leader_with_origin)
    /// with [`AppendOrigin::Client`].
    pub fn append_as_leader(
        &mut self,
        records: Bytes,
        leader_epoch: LeaderEpoch,
        now_ms: i64,
    ) -> Result<LogAppendInfo, StorageError> {
        self.append_as_leader_with_origin(records, leader_epoch, AppendOrigin::Client, now_ms)
    }

    /// [`append_as_leader`](Self::append_as_leader) for an append of `origin` (Kafka's `appendAsLeader`
    /// with its `AppendOrigin`). From a [`AppendOrigin::Client`] a control batch is refused
    /// (InvalidRecord); from a coordinator (or [`AppendOrigin::Replication`]) a control batch must be
    /// one end-transaction marker (transactional, a producer id, one record, else InvalidRecord); from a
    /// coordinator its epochs are checked (older producer epoch → InvalidProducerEpoch, older
    /// coordinator epoch → TransactionCoordinatorFenced). Transactional data batches open their
    /// producer's transaction; a non-transactional batch of a producer in a transaction →
    /// InvalidTxnState. A marker completes its producer's transaction; an ABORT adds an entry to the
    /// active segment's transaction index.
    pub fn append_as_leader_with_origin(
        &mut self,
        records: Bytes,
        leader_epoch: LeaderEpoch,
        origin: AppendOrigin,
        now_ms: i64,
    ) -> Result<LogAppendInfo, StorageError> {
        self.append_leader(records, leader_epoch, origin, None, now_ms)
    }

    /// A client's append under transaction verification (KIP-890 part 1; Kafka's `appendAsLeader` with a
    /// `VerificationGuard`): as [`append_as_leader`](Self::append_as_leader), but a transactional batch that
    /// would open a transaction (its producer has none ongoing at the batch's epoch) is refused with
    /// InvalidTxnState unless `guard` is the producer's current guard from
    /// [`maybe_start_transaction_verification`](Self::maybe_start_transaction_verification) — that is,
    /// unless no batch or marker of the producer was appended since the coordinator was asked.
    pub fn append_as_leader_verified(
        &mut self,
        records: Bytes,
        leader_epoch: LeaderEpoch,
        guard: VerificationGuard,
        now_ms: i64,
    ) -> Result<LogAppendInfo, StorageError> {
        self.append_leader(
            records,
            leader_epoch,
            AppendOrigin::Client,
            Some(guard),
            now_ms,
        )
    }

    /// The guard to take before asking the transaction coordinator about `producer_id`'s transaction
    /// (see [`crate::VerificationGuard`]): `None` when the producer already has a transaction ongoing here
    /// at `producer_epoch` (no verification needed), else its guard for the epoch.
    pub fn maybe_start_transaction_verification(
        &mut self,
        producer_id: ProducerId,
        producer_epoch: ProducerEpoch,
        now_ms: i64,
    ) -> Option<VerificationGuard> {
        let (id, epoch) = (producer_id.get(), producer_epoch.get());
        if self.producer_state.has_ongoing_txn(None, id, epoch) {
            return None;
        }
        Some(self.verification.start(id, epoch, now_ms))
    }

    fn append_leader(
        &mut self,
        records: Bytes,
        leader_epoch: LeaderEpoch,
        origin: AppendOrigin,
        verification: Option<VerificationGuard>,
        now_ms: i64,
    ) -> Result<LogAppendInfo, StorageError> {
        self.check_online()?;
        let leader_epoch = leader_epoch.get();
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
            completed: Vec::new(),
            origin,
            verification,
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
            completed,
            next,
            ..
        } = plan;
        let timestamp_type = if log_append {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        };
        let pieces = apply_header_edits(records, &edits, leader_epoch, timestamp_type)?;
        let pieces: Vec<&[u8]> = pieces.iter().map(|p| &p[..]).collect();
        info.last_offset = Offset(next - 1);
        info.valid_bytes = pieces.iter().map(|p| p.len()).sum();
        // A leader assigns offsets with no gap: from the LEO, one per record.
        assert!(
            info.first_offset.get() == self.log_end_offset
                && next - info.first_offset.get() == info.records_count,
            "{}: leader append assigned [{}, {next}) for {} records at LogEndOffset {}",
            self.dir.display(),
            info.first_offset,
            info.records_count,
            self.log_end_offset
        );
        self.write_batches(&pieces, &metas, info.first_offset.get(), next, now_ms)?;
        for producer_id in pending.keys() {
            self.verification.clear(*producer_id);
        }
        self.producer_state.commit(pending, next);
        self.complete_txns(&completed)?;
        if let Err(e) = self
            .leader_epoch_cache
            .assign(LeaderEpoch(leader_epoch), info.first_offset)
        {
            return self.poison("leader epoch checkpoint", e);
        }
        self.count_unflushed(info.records_count);
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
        let summary = self.validate_leader_batch(batch, log_append, now_ms, plan.origin)?;
        let mut h = *batch.header();
        let marker = if batch.is_control() {
            let m = coordinator_marker(batch)?;
            if plan.origin != AppendOrigin::Replication {
                self.producer_state.check_marker(&plan.pending, &h, &m)?;
            }
            Some(m)
        } else {
            None
        };
        if h.producer_id >= 0 && marker.is_none() {
            let client = plan.origin == AppendOrigin::Client;
            if let SequenceCheck::Duplicate(d) =
                self.producer_state.check(&plan.pending, &h, client)?
            {
                return Ok(Some(LogAppendInfo {
                    first_offset: d.first_offset,
                    last_offset: d.last_offset,
                    max_timestamp: d.max_timestamp,
                    offset_of_max_timestamp: d.last_offset,
                    duplicate: true,
                    ..plan.info
                }));
            }
            self.check_verified(plan, &h)?;
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
        if let Some(m) = marker {
            let done = self
                .producer_state
                .stage_marker(&mut plan.pending, &h, next, m, now_ms);
            plan.completed.extend(done);
        } else if h.producer_id >= 0 {
            self.producer_state
                .stage(&mut plan.pending, &h, next, now_ms);
        }
        let info = &mut plan.info;
        if info.first_offset.get() < 0 {
            info.first_offset = Offset(next);
        }
        if stored_max > info.max_timestamp || info.offset_of_max_timestamp.get() < 0 {
            info.max_timestamp = stored_max;
            info.offset_of_max_timestamp = Offset(h.last_offset());
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

    /// Counts appended messages toward `flush.messages`. The fsync it may make due is not run here,
    /// under the log's lock: the appender takes it with [`prepare_due_flush`](Self::prepare_due_flush) and
    /// runs it after releasing the lock.
    fn count_unflushed(&mut self, messages: i64) {
        self.unflushed_messages += messages;
    }

    /// The per-batch checks of [`append_as_leader`](Self::append_as_leader): size, framing and CRC,
    /// record count, no control batch from a client, keys on a compacted log, a producer's sequence,
    /// timestamps (CreateTime only). Returns the batch's summary.
    fn validate_leader_batch(
        &self,
        batch: &RecordBatch,
        log_append: bool,
        now_ms: i64,
        origin: AppendOrigin,
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
        if batch.is_control() && origin == AppendOrigin::Client {
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
        if batch.producer_id() >= 0 && batch.base_sequence() < 0 && !batch.is_control() {
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
        pieces: &[&[u8]],
        metas: &[AppendedBatch],
        first_offset: i64,
        next: i64,
        now_ms: i64,
    ) -> Result<(), StorageError> {
        let len = pieces.iter().map(|p| p.len()).sum();
        if let Err(e) = self.maybe_roll(len, first_offset, next - 1, now_ms) {
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
        if let Err(e) = self.active().append_vectored(pieces, metas, now_ms) {
            return self.poison("append", e);
        }
        self.log_end_offset = next;
        self.assert_offsets();
        Ok(())
    }

    /// Appends batches replicated from the leader, keeping their offsets (simple version of
    /// Kafka's `appendAsFollower`, origin REPLICATION): each batch is CRC/structure-checked, offsets must
    /// increase from the LEO (→ UnexpectedAppendOffset). Producer state is updated without checks;
    /// control batches are accepted, their end-transaction markers complete transactions and an ABORT
    /// adds a transaction index entry, as on the leader.
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
            if info.first_offset.get() < 0 {
                info.first_offset = Offset(batch.base_offset());
            }
            if batch.max_timestamp() > info.max_timestamp {
                info.max_timestamp = batch.max_timestamp();
                info.offset_of_max_timestamp = Offset(batch.last_offset());
            }
            info.records_count += batch.records_count() as i64;
            metas.push(AppendedBatch {
                last_offset: batch.last_offset(),
                max_timestamp: batch.max_timestamp(),
                size: batch.size_in_bytes() as u32,
            });
            let marker = marker_of(&batch).unwrap_or_else(|e| {
                tracing::warn!(dir = %self.dir.display(), offset = batch.base_offset(), error = %e, "replicated control batch without a readable marker");
                None
            });
            headers.push((*batch.header(), marker));
            next = batch.next_offset();
        }
        info.last_offset = Offset(next - 1);
        self.write_batches(&[&records], &metas, info.first_offset.get(), next, now_ms)?;
        let mut completed = Vec::new();
        for (h, marker) in &headers {
            self.verification.clear(h.producer_id);
            completed.extend(self.producer_state.replay(h, *marker, now_ms));
            if let Err(e) = self
                .leader_epoch_cache
                .assign(LeaderEpoch(h.partition_leader_epoch), Offset(h.base_offset))
            {
                return self.poison("leader epoch checkpoint", e);
            }
        }
        self.complete_txns(&completed)?;
        self.count_unflushed(info.records_count);
        Ok(info)
    }

    /// Under verification, a transactional data batch opening a transaction needs its producer's
    /// current guard (else InvalidTxnState, as Kafka's "Record was not part of an ongoing transaction").
    fn check_verified(
        &self,
        plan: &LeaderAppendPlan,
        h: &RecordBatchHeader,
    ) -> Result<(), StorageError> {
        let Some(guard) = plan.verification else {
            return Ok(());
        };
        let (id, epoch) = (h.producer_id, h.producer_epoch);
        if !h.is_transactional()
            || self
                .producer_state
                .has_ongoing_txn(Some(&plan.pending), id, epoch)
            || self.verification.verify(id, guard)
        {
            return Ok(());
        }
        Err(StorageError::InvalidTxnState(format!(
            "producer {id} epoch {epoch}: the record was not part of an ongoing transaction \
             (the partition was not verified in it, or the transaction ended meanwhile)"
        )))
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
        for suffix in ["log", "index", "timeindex", "txnindex"] {
            let p = self.dir.join(offset_file_name(new_base, suffix));
            if self.fs.exists(&p) {
                self.fs.remove_file(&p)?;
            }
        }
        let seg = LogSegment::open_in(
            &self.fs,
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
}

/// Kafka's broker-side recompression for a topic whose `compression.type` is not `producer`: every
/// batch stored with another codec is validated (CRC and structure, so corruption is never masked) and
/// rebuilt with `target`, keeping the producer id, epoch and base sequence, the transactional flag and
/// every record's timestamp, key, value and headers. Batches already in `target` are kept as they are;
/// control batches are left for the append checks to refuse.
///
/// Public so that a partition can recompress before it takes the log's lock
/// (`replica::Partition::append_as_leader`); the append then finds every batch already in `target` and
/// keeps them as they are. Errors: CorruptRecord and the codec's errors, as the append's own checks.
pub fn recompress(
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
    /// Transactions completed by the append's markers, in order.
    completed: Vec<CompletedTxn>,
    /// Who appends.
    origin: AppendOrigin,
    /// A verified client append's guard (KIP-890); `None`: no verification required.
    verification: Option<VerificationGuard>,
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

/// Edits the validated batches' headers: base offset, leader epoch, and where needed the max timestamp,
/// timestamp type and CRC. Returns the bytes to write, in order. When the append holds the only reference
/// to the producer's buffer the headers are edited in place (one piece); otherwise — the records are a
/// slice of the request's frame, which other references (the connection's read buffer, the request) may
/// still share — each batch's 61-byte header is copied and edited, and its body is written from the
/// request's buffer as it is (header, body, header, body, ...), so the batch is never copied whole.
fn apply_header_edits(
    records: Bytes,
    edits: &[HeaderEdit],
    leader_epoch: i32,
    timestamp_type: TimestampType,
) -> Result<Vec<Bytes>, StorageError> {
    let edit = |m: &mut RecordBatchMut<'_>, e: &HeaderEdit, body: &[u8]| {
        m.set_base_offset(e.base_offset);
        m.set_partition_leader_epoch(leader_epoch);
        if e.rewrite_crc {
            m.set_max_timestamp(timestamp_type, e.max_timestamp);
            m.update_crc_continued(body);
        }
    };
    match records.try_into_mut() {
        Ok(mut buf) => {
            for e in edits {
                edit(
                    &mut RecordBatchMut::new(&mut buf[e.position..e.position + e.size])?,
                    e,
                    &[],
                );
            }
            Ok(vec![buf.freeze()])
        }
        Err(shared) => {
            let mut pieces = Vec::with_capacity(edits.len() * 2);
            for e in edits {
                let body_start = e.position + RECORD_BATCH_OVERHEAD;
                let mut header = bytes::BytesMut::from(&shared[e.position..body_start]);
                let body = shared.slice(body_start..e.position + e.size);
                edit(&mut RecordBatchMut::new(&mut header)?, e, &body);
                pieces.push(header.freeze());
                pieces.push(body);
            }
            // The edits are the batches of `records`, in order and back to back.
            assert_eq!(
                edits.last().map_or(0, |e| e.position + e.size),
                shared.len(),
                "header edits do not cover the appended records"
            );
            Ok(pieces)
        }
    }
}
