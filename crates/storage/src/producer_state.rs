//! Idempotent-producer state of one partition (Kafka's `ProducerStateManager`).

use crate::error::StorageError;
use crate::offset_file_name;
use crate::txn_marker::EndTransactionMarker;
use crate::vfs::{real_fs, Fs};
use protocol::record::{increment_sequence, RecordBatchHeader, NO_PRODUCER_EPOCH};
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::io;
use std::path::{Path, PathBuf};
use types::{Offset, ProducerEpoch, ProducerId};

/// Batches remembered per producer for duplicate detection (Kafka's NUM_BATCHES_TO_RETAIN).
pub const NUM_BATCHES_TO_RETAIN: usize = 5;
/// Snapshot files kept on disk.
const SNAPSHOTS_TO_KEEP: usize = 3;
const SNAPSHOT_VERSION: i16 = 1;

/// One appended batch of a producer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchMetadata {
    /// baseSequence.
    pub first_seq: i32,
    /// Sequence of the last record.
    pub last_seq: i32,
    /// Offset assigned to the first record.
    pub first_offset: Offset,
    /// Offset assigned to the last record.
    pub last_offset: Offset,
    /// Batch max timestamp (ms) as stored.
    pub max_timestamp: i64,
}

/// State of one producer id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerStateEntry {
    /// Producer id.
    pub producer_id: ProducerId,
    /// Current epoch ([`ProducerEpoch::NONE`] until the first batch).
    pub producer_epoch: ProducerEpoch,
    /// Up to [`NUM_BATCHES_TO_RETAIN`] most recent batches of this epoch, oldest first.
    pub batches: VecDeque<BatchMetadata>,
    /// Wall-clock time (ms) of the last append by this producer; expiry is measured from it.
    pub last_update_ms: i64,
    /// Coordinator epoch of the last transaction marker (-1 = none).
    pub coordinator_epoch: i32,
    /// First offset of the open transaction, [`Offset::NONE`] when none.
    pub current_txn_first_offset: Offset,
}

impl ProducerStateEntry {
    fn new(producer_id: i64) -> Self {
        ProducerStateEntry {
            producer_id: ProducerId(producer_id),
            producer_epoch: ProducerEpoch(NO_PRODUCER_EPOCH),
            batches: VecDeque::new(),
            last_update_ms: 0,
            coordinator_epoch: -1,
            current_txn_first_offset: Offset::NONE,
        }
    }

    /// Last sequence appended, -1 when none.
    pub fn last_seq(&self) -> i32 {
        self.batches.back().map_or(-1, |b| b.last_seq)
    }

    fn find_duplicate(&self, h: &RecordBatchHeader) -> Option<BatchMetadata> {
        if h.producer_epoch != self.producer_epoch.get() {
            return None;
        }
        let last = h.last_sequence();
        self.batches
            .iter()
            .find(|b| b.first_seq == h.base_sequence && b.last_seq == last)
            .copied()
    }

    fn add_batch(&mut self, h: &RecordBatchHeader, first_offset: i64, now_ms: i64) {
        if h.producer_epoch != self.producer_epoch.get() {
            self.producer_epoch = ProducerEpoch(h.producer_epoch);
            self.batches.clear();
        }
        self.batches.push_back(BatchMetadata {
            first_seq: h.base_sequence,
            last_seq: h.last_sequence(),
            first_offset: Offset(first_offset),
            last_offset: Offset(first_offset + h.last_offset_delta as i64),
            max_timestamp: h.max_timestamp,
        });
        while self.batches.len() > NUM_BATCHES_TO_RETAIN {
            self.batches.pop_front();
        }
        self.last_update_ms = now_ms;
    }
}

impl ProducerStateEntry {
    /// A data batch at `first_offset`: remembered for duplicates; a transactional one opens the
    /// producer's transaction when none is ongoing (Kafka's `appendDataBatch`).
    fn add_data_batch(&mut self, h: &RecordBatchHeader, first_offset: i64, now_ms: i64) {
        self.add_batch(h, first_offset, now_ms);
        if h.is_transactional() && self.current_txn_first_offset.get() < 0 {
            self.current_txn_first_offset = Offset(first_offset);
        }
    }

    /// An end-transaction marker at `offset` (Kafka's `appendEndTxnMarker` after its checks): completes
    /// the ongoing transaction, if any; takes the marker's producer epoch (a new epoch forgets the
    /// retained batches) and coordinator epoch.
    fn end_txn(
        &mut self,
        h: &RecordBatchHeader,
        offset: i64,
        marker: EndTransactionMarker,
        now_ms: i64,
    ) -> Option<CompletedTxn> {
        let completed = (self.current_txn_first_offset.get() >= 0).then(|| CompletedTxn {
            producer_id: self.producer_id,
            first_offset: self.current_txn_first_offset,
            last_offset: Offset(offset),
            is_aborted: marker.is_abort(),
        });
        if h.producer_epoch != self.producer_epoch.get() {
            self.producer_epoch = ProducerEpoch(h.producer_epoch);
            self.batches.clear();
        }
        self.coordinator_epoch = marker.coordinator_epoch;
        self.current_txn_first_offset = Offset::NONE;
        self.last_update_ms = now_ms;
        completed
    }
}

fn in_sequence(last_seq: i32, next_seq: i32) -> bool {
    next_seq as i64 == last_seq as i64 + 1 || (next_seq == 0 && last_seq == i32::MAX)
}

/// Per-partition producer state: for each producer id its epoch and last 5 batches, and for a
/// transactional producer its ongoing transaction (`current_txn_first_offset`, set by its first
/// transactional batch after a marker, cleared by the next COMMIT/ABORT marker, which yields a
/// [`CompletedTxn`]). The ongoing transactions are indexed by first offset (Kafka's `ongoingTxns`,
/// rebuilt from the entries when a snapshot is loaded); completed ones whose marker the HighWatermark has
/// not passed are kept in memory only (Kafka's `unreplicatedTxns`; a replay re-adds them).
///
/// Snapshot file `<20-digit offset>.snapshot` holds the state after every batch below that
/// offset. Format (Runnel's, big-endian; Kafka's layout extended to keep all retained batches):
///
/// ```text
/// version: i16 (= 1)
/// crc: u32            CRC-32C of everything after this field
/// producer_count: i32
/// per producer:
///   producer_id i64, producer_epoch i16, last_update_ms i64, coordinator_epoch i32,
///   current_txn_first_offset i64, batch_count i32,
///   per batch: first_seq i32, last_seq i32, first_offset i64, last_offset i64, max_timestamp i64
/// ```
///
/// Snapshots are written on segment roll and on close (temp file + rename). Recovery rule: the
/// newest readable snapshot at or below the log end offset is loaded (newer ones are deleted,
/// unreadable ones skipped), then batch headers from its offset to the log end are replayed (a
/// control batch's marker is read to complete transactions). When segments await a transaction-index
/// rebuild the snapshot is taken at or below the first of them instead (see `Log`'s recovery). The
/// format is unchanged by transactions: `coordinator_epoch` and `current_txn_first_offset` (Kafka's
/// `CurrentTxnFirstOffset`, -1 = none) were always written, so older snapshots load as they are.
#[derive(Debug)]
pub struct ProducerStateManager {
    fs: Fs,
    dir: PathBuf,
    producers: HashMap<i64, ProducerStateEntry>,
    /// Offset up to which (exclusive) batches have been applied.
    map_end_offset: i64,
    snapshots: BTreeSet<i64>,
    producer_id_expiration_ms: i64,
    /// Ongoing transactions as (first offset, producer id), ascending (Kafka's `ongoingTxns`): the
    /// producers whose `current_txn_first_offset` is set.
    ongoing: BTreeSet<(i64, i64)>,
    /// Completed transactions as (first offset, marker offset) whose marker the HighWatermark has not
    /// passed yet (Kafka's `unreplicatedTxns`): still unstable. In memory only; a replay re-adds them.
    unreplicated: BTreeSet<(i64, i64)>,
    /// The offset of a snapshot file this process wrote or loaded holding no producer (the state
    /// [`snapshot_unneeded`](Self::snapshot_unneeded) compares with); `None` when unknown.
    empty_snapshot_at: Option<i64>,
}

/// A transaction ended by a marker (Kafka's `CompletedTxn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompletedTxn {
    /// The transactional producer.
    pub producer_id: ProducerId,
    /// Offset of the transaction's first batch in this partition.
    pub first_offset: Offset,
    /// Offset of the marker that ended it.
    pub last_offset: Offset,
    /// True when the marker was ABORT.
    pub is_aborted: bool,
}

/// Result of checking one batch against the state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SequenceCheck {
    /// Append it.
    Append,
    /// Already appended: answer with these offsets, append nothing.
    Duplicate(BatchMetadata),
}

impl ProducerStateManager {
    /// Empty state for the partition directory `dir`; lists existing snapshot files.
    pub fn new(dir: &Path, producer_id_expiration_ms: i64) -> io::Result<Self> {
        Self::new_in(real_fs(), dir, producer_id_expiration_ms)
    }

    /// [`new`](Self::new) on `fs`.
    pub fn new_in(fs: Fs, dir: &Path, producer_id_expiration_ms: i64) -> io::Result<Self> {
        let mut snapshots = BTreeSet::new();
        for entry in fs.read_dir(dir)? {
            if let Some(stem) = entry.name.strip_suffix(".snapshot") {
                if let Ok(o) = stem.parse::<i64>() {
                    snapshots.insert(o);
                }
            }
        }
        Ok(ProducerStateManager {
            fs,
            dir: dir.to_path_buf(),
            producers: HashMap::new(),
            map_end_offset: 0,
            snapshots,
            producer_id_expiration_ms,
            ongoing: BTreeSet::new(),
            unreplicated: BTreeSet::new(),
            empty_snapshot_at: None,
        })
    }

    /// The state of a producer.
    pub fn last_entry(&self, producer_id: ProducerId) -> Option<&ProducerStateEntry> {
        self.producers.get(&producer_id.get())
    }

    /// Every producer tracked, in no particular order (DescribeProducers, KIP-664; Kafka's
    /// `activeProducers`).
    pub fn active_producers(&self) -> impl Iterator<Item = &ProducerStateEntry> {
        self.producers.values()
    }

    /// Number of producers tracked.
    pub fn len(&self) -> usize {
        self.producers.len()
    }

    /// True when no producer is tracked.
    pub fn is_empty(&self) -> bool {
        self.producers.is_empty()
    }

    /// Offsets of the snapshot files present.
    pub fn snapshot_offsets(&self) -> Vec<Offset> {
        self.snapshots.iter().copied().map(Offset).collect()
    }

    /// Offset up to which (exclusive) batches have been applied.
    pub fn map_end_offset(&self) -> Offset {
        Offset(self.map_end_offset)
    }

    pub(crate) fn set_expiration_ms(&mut self, ms: i64) {
        self.producer_id_expiration_ms = ms;
    }

    /// Checks a client batch (producer id >= 0) against `pending` (entries already updated by
    /// earlier batches of the same append) or the stored state, following Kafka's
    /// ProducerAppendInfo: duplicate of one of the last 5 batches of the same epoch → Duplicate;
    /// epoch older than the current → InvalidProducerEpoch; new epoch must start at sequence 0
    /// (unless the producer is unknown); same epoch must continue at last sequence + 1 →
    /// otherwise OutOfOrderSequence. An unknown producer is accepted with any sequence. Without
    /// `check_sequence` (a coordinator's own batches, e.g. transactional offset commits written with
    /// base sequence 0 each time: Kafka checks duplicates and sequences only for CLIENT appends) only the
    /// epoch and the transaction state are checked.
    pub(crate) fn check(
        &self,
        pending: &HashMap<i64, ProducerStateEntry>,
        h: &RecordBatchHeader,
        check_sequence: bool,
    ) -> Result<SequenceCheck, StorageError> {
        let entry = pending
            .get(&h.producer_id)
            .or_else(|| self.producers.get(&h.producer_id));
        let Some(entry) = entry else {
            return Ok(SequenceCheck::Append);
        };
        if let Some(d) = entry.find_duplicate(h).filter(|_| check_sequence) {
            return Ok(SequenceCheck::Duplicate(d));
        }
        let current_epoch = entry.producer_epoch.get();
        if h.producer_epoch < current_epoch {
            return Err(StorageError::InvalidProducerEpoch(format!(
                "producer {} epoch {} is older than current epoch {}",
                h.producer_id, h.producer_epoch, current_epoch
            )));
        }
        if !h.is_transactional() && entry.current_txn_first_offset.get() >= 0 {
            return Err(StorageError::InvalidTxnState(format!(
                "non-transactional batch from producer {} while its transaction started at {} is ongoing",
                h.producer_id, entry.current_txn_first_offset
            )));
        }
        if !check_sequence {
            return Ok(SequenceCheck::Append);
        }
        if h.producer_epoch != current_epoch {
            if h.base_sequence != 0 && current_epoch != NO_PRODUCER_EPOCH {
                return Err(StorageError::OutOfOrderSequence(format!(
                    "producer {} new epoch {} must start at sequence 0, got {}",
                    h.producer_id, h.producer_epoch, h.base_sequence
                )));
            }
        } else {
            let last = entry.last_seq();
            if current_epoch != NO_PRODUCER_EPOCH
                && last >= 0
                && !in_sequence(last, h.base_sequence)
            {
                return Err(StorageError::OutOfOrderSequence(format!(
                    "producer {} epoch {}: expected sequence {}, got {}",
                    h.producer_id,
                    h.producer_epoch,
                    increment_sequence(last, 1),
                    h.base_sequence
                )));
            }
        }
        Ok(SequenceCheck::Append)
    }

    /// Applies an appended batch (offsets assigned) to `pending`.
    pub(crate) fn stage(
        &self,
        pending: &mut HashMap<i64, ProducerStateEntry>,
        h: &RecordBatchHeader,
        first_offset: i64,
        now_ms: i64,
    ) {
        self.pending_entry(pending, h.producer_id)
            .add_data_batch(h, first_offset, now_ms);
    }

    fn pending_entry<'a>(
        &self,
        pending: &'a mut HashMap<i64, ProducerStateEntry>,
        producer_id: i64,
    ) -> &'a mut ProducerStateEntry {
        pending.entry(producer_id).or_insert_with(|| {
            self.producers
                .get(&producer_id)
                .cloned()
                .unwrap_or_else(|| ProducerStateEntry::new(producer_id))
        })
    }

    /// Commits staged entries after a successful write; `end_offset` is the new log end.
    pub(crate) fn commit(&mut self, pending: HashMap<i64, ProducerStateEntry>, end_offset: i64) {
        for (_, e) in pending {
            self.put(e);
        }
        self.map_end_offset = end_offset;
    }

    /// Stores `e`, keeping the ongoing-transaction index in step.
    fn put(&mut self, e: ProducerStateEntry) {
        let pid = e.producer_id.get();
        if let Some(old) = self.producers.get(&pid) {
            self.ongoing
                .remove(&(old.current_txn_first_offset.get(), pid));
        }
        if e.current_txn_first_offset.get() >= 0 {
            self.ongoing.insert((e.current_txn_first_offset.get(), pid));
        }
        self.producers.insert(pid, e);
    }

    fn reindex_ongoing(&mut self) {
        self.ongoing = self
            .producers
            .values()
            .filter(|e| e.current_txn_first_offset.get() >= 0)
            .map(|e| (e.current_txn_first_offset.get(), e.producer_id.get()))
            .collect();
    }

    /// Applies a stored batch during replay/follower append (Kafka's REPLICATION origin: no checks).
    /// `marker` is the end-transaction marker of a control batch (`None` for data batches, and for a
    /// control batch holding none). Returns the transaction a marker completed.
    pub(crate) fn replay(
        &mut self,
        h: &RecordBatchHeader,
        marker: Option<EndTransactionMarker>,
        now_ms: i64,
    ) -> Option<CompletedTxn> {
        let mut completed = None;
        if h.producer_id >= 0 && (!h.is_control() || marker.is_some()) {
            let mut e = self
                .producers
                .get(&h.producer_id)
                .cloned()
                .unwrap_or_else(|| ProducerStateEntry::new(h.producer_id));
            match marker {
                Some(m) => completed = e.end_txn(h, h.base_offset, m, now_ms),
                None => e.add_data_batch(h, h.base_offset, now_ms),
            }
            self.put(e);
        }
        self.map_end_offset = self.map_end_offset.max(h.next_offset());
        completed
    }

    /// Checks an end-transaction marker appended as leader (Kafka's `appendEndTxnMarker` checks for
    /// transaction versions 0/1): an epoch older than the producer's → InvalidProducerEpoch; a coordinator
    /// epoch older than the last marker's → TransactionCoordinatorFenced.
    pub(crate) fn check_marker(
        &self,
        pending: &HashMap<i64, ProducerStateEntry>,
        h: &RecordBatchHeader,
        marker: &EndTransactionMarker,
    ) -> Result<(), StorageError> {
        let entry = pending
            .get(&h.producer_id)
            .or_else(|| self.producers.get(&h.producer_id));
        let Some(entry) = entry else { return Ok(()) };
        if h.producer_epoch < entry.producer_epoch.get() {
            return Err(StorageError::InvalidProducerEpoch(format!(
                "transaction marker of producer {} has epoch {}, older than the current epoch {}",
                h.producer_id, h.producer_epoch, entry.producer_epoch
            )));
        }
        if marker.coordinator_epoch < entry.coordinator_epoch {
            return Err(StorageError::TransactionCoordinatorFenced(format!(
                "transaction marker of producer {} from coordinator epoch {}, older than {}",
                h.producer_id, marker.coordinator_epoch, entry.coordinator_epoch
            )));
        }
        Ok(())
    }

    /// Applies an end-transaction marker at `offset` to `pending`; returns the transaction it completed
    /// (`None` when the producer had none ongoing, as Kafka).
    pub(crate) fn stage_marker(
        &self,
        pending: &mut HashMap<i64, ProducerStateEntry>,
        h: &RecordBatchHeader,
        offset: i64,
        marker: EndTransactionMarker,
        now_ms: i64,
    ) -> Option<CompletedTxn> {
        self.pending_entry(pending, h.producer_id)
            .end_txn(h, offset, marker, now_ms)
    }

    /// Kafka's `firstUndecidedOffset`: the first offset of the earliest ongoing transaction.
    pub fn first_undecided_offset(&self) -> Option<Offset> {
        self.ongoing.first().map(|&(o, _)| Offset(o))
    }

    /// Kafka's `firstUnstableOffset` for a partition whose HighWatermark is `high_watermark`: the first
    /// offset of the earliest transaction that is ongoing, or completed by a marker at or past the
    /// HighWatermark (not yet replicated).
    pub fn first_unstable_offset(&self, high_watermark: Offset) -> Option<Offset> {
        let unreplicated = self
            .unreplicated
            .iter()
            .find(|&&(_, last)| last >= high_watermark.get())
            .map(|&(first, _)| Offset(first));
        match (self.first_undecided_offset(), unreplicated) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Kafka's `completeTxn`: `txn` stays unstable until the HighWatermark passes its marker.
    pub(crate) fn complete_txn(&mut self, txn: &CompletedTxn) {
        self.unreplicated
            .insert((txn.first_offset.get(), txn.last_offset.get()));
    }

    /// Kafka's `onHighWatermarkUpdated`: forgets the completed transactions whose marker is below
    /// `high_watermark`.
    pub(crate) fn on_high_watermark_updated(&mut self, high_watermark: i64) {
        self.unreplicated
            .retain(|&(_, last)| last >= high_watermark);
    }

    /// The ongoing transactions as (producer id, first offset), by first offset.
    pub fn ongoing_txns(&self) -> Vec<(ProducerId, Offset)> {
        self.ongoing
            .iter()
            .map(|&(o, pid)| (ProducerId(pid), Offset(o)))
            .collect()
    }

    /// Kafka's `lastStableOffset(CompletedTxn)`, the value a transaction index entry stores: the first
    /// offset of the earliest ongoing transaction of another producer, else the marker's offset + 1.
    pub(crate) fn last_stable_offset_after(&self, txn: &CompletedTxn) -> i64 {
        self.first_ongoing_except(txn.producer_id)
            .unwrap_or(txn.last_offset.get() + 1)
    }

    /// True when `producer_id` has a transaction ongoing at `epoch` (Kafka's `hasOngoingTransaction`),
    /// looking first at the entries `pending` staged by an append in progress.
    pub(crate) fn has_ongoing_txn(
        &self,
        pending: Option<&HashMap<i64, ProducerStateEntry>>,
        producer_id: i64,
        epoch: i16,
    ) -> bool {
        let entry = pending
            .and_then(|p| p.get(&producer_id))
            .or_else(|| self.producers.get(&producer_id));
        entry.is_some_and(|e| {
            e.current_txn_first_offset.get() >= 0 && e.producer_epoch.get() == epoch
        })
    }

    /// First offset of the earliest ongoing transaction of a producer other than `producer_id`.
    pub(crate) fn first_ongoing_except(&self, producer_id: ProducerId) -> Option<i64> {
        self.ongoing
            .iter()
            .find(|&&(_, pid)| pid != producer_id.get())
            .map(|&(o, _)| o)
    }

    pub(crate) fn set_map_end_offset(&mut self, o: i64) {
        self.map_end_offset = o;
    }

    /// Drops producers idle (wall clock) for at least `producer.id.expiration.ms`. Returns how
    /// many were removed. Record timestamps play no part.
    pub fn remove_expired_producers(&mut self, now_ms: i64) -> usize {
        let before = self.producers.len();
        let exp = self.producer_id_expiration_ms;
        self.producers.retain(|_, e| {
            e.current_txn_first_offset.get() >= 0 || now_ms.saturating_sub(e.last_update_ms) < exp
        });
        before - self.producers.len()
    }

    fn encode(&self) -> Vec<u8> {
        let mut body = Vec::new();
        let mut ids: Vec<_> = self.producers.keys().copied().collect();
        ids.sort_unstable();
        body.extend_from_slice(&(ids.len() as i32).to_be_bytes());
        for id in ids {
            let e = &self.producers[&id];
            body.extend_from_slice(&e.producer_id.get().to_be_bytes());
            body.extend_from_slice(&e.producer_epoch.get().to_be_bytes());
            body.extend_from_slice(&e.last_update_ms.to_be_bytes());
            body.extend_from_slice(&e.coordinator_epoch.to_be_bytes());
            body.extend_from_slice(&e.current_txn_first_offset.get().to_be_bytes());
            body.extend_from_slice(&(e.batches.len() as i32).to_be_bytes());
            for b in &e.batches {
                body.extend_from_slice(&b.first_seq.to_be_bytes());
                body.extend_from_slice(&b.last_seq.to_be_bytes());
                body.extend_from_slice(&b.first_offset.get().to_be_bytes());
                body.extend_from_slice(&b.last_offset.get().to_be_bytes());
                body.extend_from_slice(&b.max_timestamp.to_be_bytes());
            }
        }
        let mut out = Vec::with_capacity(body.len() + 6);
        out.extend_from_slice(&SNAPSHOT_VERSION.to_be_bytes());
        out.extend_from_slice(&crc32c::crc32c(&body).to_be_bytes());
        out.extend_from_slice(&body);
        out
    }

    fn decode(buf: &[u8]) -> Option<HashMap<i64, ProducerStateEntry>> {
        struct R<'a>(&'a [u8], usize);
        impl R<'_> {
            fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
                let s = self.0.get(self.1..self.1 + N)?;
                self.1 += N;
                s.try_into().ok()
            }
            fn i16(&mut self) -> Option<i16> {
                self.take::<2>().map(i16::from_be_bytes)
            }
            fn i32(&mut self) -> Option<i32> {
                self.take::<4>().map(i32::from_be_bytes)
            }
            fn i64(&mut self) -> Option<i64> {
                self.take::<8>().map(i64::from_be_bytes)
            }
        }
        let mut r = R(buf, 0);
        if r.i16()? != SNAPSHOT_VERSION {
            return None;
        }
        let crc = r.i32()? as u32;
        if crc32c::crc32c(&buf[6..]) != crc {
            return None;
        }
        let n = r.i32()?;
        if n < 0 || n as usize > buf.len() / 34 {
            return None;
        }
        let mut out = HashMap::with_capacity(n as usize);
        for _ in 0..n {
            let mut e = ProducerStateEntry::new(r.i64()?);
            e.producer_epoch = ProducerEpoch(r.i16()?);
            e.last_update_ms = r.i64()?;
            e.coordinator_epoch = r.i32()?;
            e.current_txn_first_offset = Offset(r.i64()?);
            let nb = r.i32()?;
            if !(0..=NUM_BATCHES_TO_RETAIN as i32).contains(&nb) {
                return None;
            }
            for _ in 0..nb {
                e.batches.push_back(BatchMetadata {
                    first_seq: r.i32()?,
                    last_seq: r.i32()?,
                    first_offset: Offset(r.i64()?),
                    last_offset: Offset(r.i64()?),
                    max_timestamp: r.i64()?,
                });
            }
            out.insert(e.producer_id.get(), e);
        }
        if r.1 != buf.len() {
            return None;
        }
        Some(out)
    }

    /// Whether a snapshot now would change nothing a reload ([`load_for`](Self::load_for) at a clean
    /// open, then the replay to the log end) finds: no producer, and either no snapshot file with the
    /// map end at `log_start_offset` (a reload starts empty there, nothing to replay), or the newest
    /// file is a producer-less one at the map end. `Log::close` then writes none.
    pub(crate) fn snapshot_unneeded(&self, log_start_offset: i64) -> bool {
        let newest = self.snapshots.last().copied();
        self.producers.is_empty()
            && match newest {
                None => self.map_end_offset == log_start_offset,
                Some(o) => o == self.map_end_offset && self.empty_snapshot_at == Some(o),
            }
    }

    /// Writes `<map_end_offset>.snapshot` (temp file + rename; fsynced when `sync`), then keeps
    /// only the newest few snapshot files.
    pub fn take_snapshot(&mut self, sync: bool) -> io::Result<()> {
        let offset = self.map_end_offset;
        let path = self.dir.join(offset_file_name(offset, "snapshot"));
        let tmp = self.dir.join(offset_file_name(offset, "snapshot.tmp"));
        {
            let f = self.fs.create(&tmp)?;
            f.write_all_at(&self.encode(), 0)?;
            if sync {
                f.sync_all()?;
            }
        }
        self.fs.rename(&tmp, &path)?;
        self.snapshots.insert(offset);
        self.empty_snapshot_at = self.producers.is_empty().then_some(offset);
        while self.snapshots.len() > SNAPSHOTS_TO_KEEP {
            let oldest = *self.snapshots.iter().next().expect("non-empty");
            self.delete_snapshot(oldest)?;
        }
        Ok(())
    }

    /// Writes this state as `<map_end_offset>.snapshot` into the partition directory `dir` (another
    /// log's: a future log taking over, see `LogManager::replace_current_with_future`), fsynced, through a
    /// temp file and a rename. The state itself and its own directory are unchanged.
    pub(crate) fn write_snapshot_into(&self, dir: &Path) -> io::Result<()> {
        let offset = self.map_end_offset;
        let tmp = dir.join(offset_file_name(offset, "snapshot.tmp"));
        {
            let f = self.fs.create(&tmp)?;
            f.write_all_at(&self.encode(), 0)?;
            f.sync_all()?;
        }
        self.fs
            .rename(&tmp, &dir.join(offset_file_name(offset, "snapshot")))
    }

    fn delete_snapshot(&mut self, offset: i64) -> io::Result<()> {
        self.snapshots.remove(&offset);
        self.empty_snapshot_at = self.empty_snapshot_at.filter(|&o| o != offset);
        match self
            .fs
            .remove_file(&self.dir.join(offset_file_name(offset, "snapshot")))
        {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// Resets to the newest readable snapshot at or below `upto` (≤ `log_end_offset`; snapshots past
    /// the log end are deleted); with none, to empty state at `log_start_offset`. Returns the offset
    /// from which batches must be replayed.
    pub(crate) fn load_for(
        &mut self,
        log_start_offset: i64,
        log_end_offset: i64,
        upto: i64,
    ) -> io::Result<i64> {
        let newer: Vec<i64> = self
            .snapshots
            .range(log_end_offset + 1..)
            .copied()
            .collect();
        for o in newer {
            self.delete_snapshot(o)?;
        }
        self.producers.clear();
        while let Some(&o) = self.snapshots.range(..=upto).next_back() {
            let path = self.dir.join(offset_file_name(o, "snapshot"));
            match self.fs.read(&path).ok().and_then(|b| Self::decode(&b)) {
                Some(p) => {
                    self.empty_snapshot_at = p.is_empty().then_some(o);
                    self.producers = p;
                    self.reindex_ongoing();
                    self.unreplicated.clear();
                    self.map_end_offset = o.max(log_start_offset);
                    return Ok(self.map_end_offset);
                }
                None => {
                    tracing::warn!(path = %path.display(), "skipping unreadable producer snapshot");
                    self.delete_snapshot(o)?;
                }
            }
        }
        self.ongoing.clear();
        self.unreplicated.clear();
        self.map_end_offset = log_start_offset;
        Ok(log_start_offset)
    }

    /// Deletes every snapshot file (used when the log is deleted or fully truncated).
    pub(crate) fn delete_all_snapshots(&mut self) -> io::Result<()> {
        let all: Vec<i64> = self.snapshots.iter().copied().collect();
        for o in all {
            self.delete_snapshot(o)?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "producer_state_tests.rs"]
mod tests;
