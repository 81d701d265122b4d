//! What the log cleaner does with transactions (Kafka's `Cleaner` with its `CleanedTransactionMetadata`,
//! KIP-98, and KIP-534's delete horizon for markers; read in Kafka's
//! `storage/.../internals/log/Cleaner.java` (`cleanSegments`, `cleanInto`'s `checkBatchRetention`) and
//! `CleanedTransactionMetadata.java`).
//!
//! - **Offset map.** Records of an aborted transaction never enter the offset map ([`AbortedRanges::holds`]),
//!   so an aborted write cannot make the cleaner drop the committed record it would otherwise supersede.
//! - **Only decided data.** Nothing at or past the LastStableOffset is cleaned (the cleanable range ends
//!   there), so an undecided transaction is left whole.
//! - **Aborted data is discarded** ([`TxnCleanState`]): walking the rewritten segments in offset order, a
//!   transactional data batch whose producer has an aborted transaction (from the transaction indexes)
//!   spanning it is dropped whole, on the first clean that covers it.
//! - **Markers** (control batches) go in two or three cleans, as in Kafka. A marker may be discarded only
//!   when this clean saw no data batch of its transaction: for an ABORT marker, no batch of the aborted
//!   transaction (the clean that drops the aborted data keeps the marker and its `.txnindex` entry); for a
//!   COMMIT marker, no transactional batch of that producer since its previous marker (a committed batch
//!   is counted as seen even when all its records are cleaned away in the same pass, as Kafka does). The
//!   first clean finding a marker discardable keeps it but sets its delete horizon (attribute bit 6,
//!   baseTimestamp = now + `delete.retention.ms`, the tombstones' KIP-534 mechanism, timestamps kept); a
//!   clean after the horizon drops it. While a transaction still has records, its marker stays, since a
//!   read_committed consumer needs it to decide them. An empty control batch is discarded. Other control
//!   types (not ABORT/COMMIT) are kept. Beyond Kafka: an ABORT marker whose producer had a transactional
//!   batch in the pass that was not known to be aborted is kept (a defensive check for an incomplete
//!   transaction index; it never fires when the indexes are whole).
//! - **Transaction index.** As in Kafka, the cleaned segment's `.txnindex` holds the aborted transactions
//!   whose ABORT marker is kept without being discardable (their data was still seen); the entry of a
//!   marker found discardable is dropped, since the data it told read_committed consumers to skip is gone.
//!   Here that is the segment's old entries less those of the markers found discardable (the same set
//!   when the indexes are whole). The `.txnindex.cleaned` file is swapped in with the other cleaned files.
//! - **Crash recovery.** The `.log` rename is the commit point of a swap: before it the old segment with
//!   its old `.txnindex` stands; after it recovery rebuilds the segment's indexes, the transaction index by
//!   replaying producer state. That replay may add back an entry for an ABORT marker whose data is gone
//!   (covering at most that producer's removed batches and the marker, so it hides nothing committed); the
//!   next clean finds the marker discardable again and drops the entry. So a crash at any point leaves a
//!   log whose read_committed reading is the same.
//! - **Empty batches kept (Kafka's `BatchRetention.RETAIN_EMPTY`).** A batch that cleaning leaves without
//!   records (superseded keys, aborted data, a marker past its horizon) is dropped, except when it holds an
//!   active producer's last data offset (so its last sequence survives for idempotence) or, for a producer
//!   with no data batch in its current epoch, is a marker of that epoch (for fencing): then its header is
//!   kept as an empty batch (no records, no compression, offsets and producer fields unchanged). Such an
//!   empty batch of a transaction counts as seen data, so that transaction's marker stays while it does,
//!   as in Kafka. Not done: Kafka's retention of the last batch of a cleaning round (our segment base
//!   offsets and LogEndOffset do not depend on it).

use crate::cleaner_batch::{parse_raw_records, rebuild_batch, records_section, RawRecord};
use crate::error::StorageError;
use crate::txn_index::AbortedTxn;
use crate::txn_marker::ControlRecordType;
use bytes::Bytes;
use protocol::record::RecordBatchHeader;
use std::collections::{HashMap, HashSet};

/// The aborted transactions of a log, for lookups by producer and offset.
#[derive(Debug, Clone, Default)]
pub(crate) struct AbortedRanges(Vec<AbortedTxn>);

impl AbortedRanges {
    pub(crate) fn new(aborted: Vec<AbortedTxn>) -> AbortedRanges {
        AbortedRanges(aborted)
    }

    /// True when the batch with header `h` is transactional and belongs to an aborted transaction (one of
    /// its producer's aborted transactions spans its offset).
    pub(crate) fn holds(&self, h: &RecordBatchHeader) -> bool {
        h.is_transactional()
            && self.0.iter().any(|t| {
                t.producer_id.get() == h.producer_id
                    && t.first_offset.get() <= h.base_offset
                    && h.base_offset < t.last_offset.get()
            })
    }
}

/// Each active producer's last data offset (None when it has no batch of its current epoch) and epoch, by
/// producer id (Kafka's `lastRecordsOfActiveProducers`).
pub(crate) type LastRecords = HashMap<i64, (Option<i64>, i16)>;

/// What to do with one batch, as far as transactions are concerned.
#[derive(Debug)]
pub(crate) enum TxnVerdict {
    /// A data batch not of an aborted transaction: the key rule decides its records.
    Data,
    /// Drop the whole batch: aborted data (`marker` false), or a marker past its delete horizon.
    Discard { marker: bool },
    /// Keep this control batch: unchanged (`rewritten` None) or rewritten with a new delete horizon;
    /// `horizon` is its pending delete horizon when it is discardable.
    Marker {
        rewritten: Option<Bytes>,
        horizon: Option<i64>,
    },
}

/// An aborted transaction reached by the walk, and whether a batch of it was seen in this pass.
#[derive(Debug)]
struct OngoingAbort {
    seen_data: bool,
}

/// Kafka's `CleanedTransactionMetadata`: the transaction state of one clean, carried across the segments
/// it rewrites (ascending offsets, from the log start).
#[derive(Debug)]
pub(crate) struct TxnCleanState {
    /// Aborted transactions not reached yet, by descending first offset (the next one is last).
    pending: Vec<AbortedTxn>,
    ongoing_aborted: HashMap<i64, OngoingAbort>,
    /// Producers with a transactional batch seen since their last marker and not known aborted.
    ongoing_committed: HashSet<i64>,
    /// ABORT markers found discardable in the current segment: (producer id, marker offset).
    released: Vec<(i64, i64)>,
    last_records: LastRecords,
    now_ms: i64,
    delete_retention_ms: i64,
}

impl TxnCleanState {
    /// The state for a clean at `now_ms` of a log whose aborted transactions are `aborted` and whose
    /// active producers' last records are `last_records`.
    pub(crate) fn new(
        aborted: &AbortedRanges,
        last_records: &LastRecords,
        now_ms: i64,
        delete_retention_ms: i64,
    ) -> TxnCleanState {
        let mut pending = aborted.0.clone();
        pending.sort_by_key(|t| std::cmp::Reverse(t.first_offset));
        TxnCleanState {
            pending,
            ongoing_aborted: HashMap::new(),
            ongoing_committed: HashSet::new(),
            released: Vec::new(),
            last_records: last_records.clone(),
            now_ms,
            delete_retention_ms: delete_retention_ms.max(0),
        }
    }

    fn consume_aborted_up_to(&mut self, offset: i64) {
        while self
            .pending
            .last()
            .is_some_and(|t| t.first_offset.get() <= offset)
        {
            let t = self.pending.pop().expect("checked");
            self.ongoing_aborted
                .entry(t.producer_id.get())
                .or_insert(OngoingAbort { seen_data: false });
        }
    }

    /// Walks batch `h` (stored bytes `bytes`); batches must come in offset order.
    pub(crate) fn on_batch(
        &mut self,
        h: &RecordBatchHeader,
        bytes: &[u8],
    ) -> Result<TxnVerdict, StorageError> {
        self.consume_aborted_up_to(h.last_offset());
        if h.is_control() {
            return self.on_control_batch(h, bytes);
        }
        if !h.is_transactional() {
            return Ok(TxnVerdict::Data);
        }
        if let Some(a) = self.ongoing_aborted.get_mut(&h.producer_id) {
            a.seen_data = true;
            return Ok(TxnVerdict::Discard { marker: false });
        }
        self.ongoing_committed.insert(h.producer_id);
        Ok(TxnVerdict::Data)
    }

    fn on_control_batch(
        &mut self,
        h: &RecordBatchHeader,
        bytes: &[u8],
    ) -> Result<TxnVerdict, StorageError> {
        let data = records_section(bytes, h)?;
        let recs = parse_raw_records(&data, h.records_count)?;
        let pid = h.producer_id;
        let Some(first) = recs.first() else {
            // An empty control batch: nothing left to decide.
            return Ok(TxnVerdict::Discard { marker: true });
        };
        let kind = match &first.key {
            Some(k) => ControlRecordType::parse_key(&data[k.clone()])?,
            None => ControlRecordType::Other(-1),
        };
        let discardable = match kind {
            ControlRecordType::Abort => {
                let aborted_seen = self
                    .ongoing_aborted
                    .remove(&pid)
                    .is_some_and(|a| a.seen_data);
                let unknown_seen = self.ongoing_committed.remove(&pid);
                !aborted_seen && !unknown_seen
            }
            ControlRecordType::Commit => !self.ongoing_committed.remove(&pid),
            ControlRecordType::Other(_) => false,
        };
        if !discardable {
            return Ok(TxnVerdict::Marker {
                rewritten: None,
                horizon: None,
            });
        }
        if kind == ControlRecordType::Abort {
            self.released.push((pid, h.last_offset()));
        }
        if h.has_delete_horizon() {
            if self.now_ms >= h.base_timestamp {
                return Ok(TxnVerdict::Discard { marker: true });
            }
            return Ok(TxnVerdict::Marker {
                rewritten: None,
                horizon: Some(h.base_timestamp),
            });
        }
        let horizon = self.now_ms.saturating_add(self.delete_retention_ms);
        let keep: Vec<&RawRecord> = recs.iter().collect();
        Ok(TxnVerdict::Marker {
            rewritten: Some(rebuild_batch(h, &data, &keep, Some(horizon))?),
            horizon: Some(horizon),
        })
    }

    /// Kafka's `BatchRetention.RETAIN_EMPTY`: true when batch `h`, if left without records, must stay as
    /// an empty header, because it holds an active producer's last sequence (the batch of its last data
    /// offset) or, when that producer has no data batch of its epoch, its epoch (a marker of that epoch).
    pub(crate) fn retain_empty(&self, h: &RecordBatchHeader) -> bool {
        h.has_producer_id()
            && self
                .last_records
                .get(&h.producer_id)
                .is_some_and(|&(last_data, epoch)| match last_data {
                    Some(o) => h.last_offset() == o,
                    None => h.is_control() && h.producer_epoch == epoch,
                })
    }

    /// The `.txnindex` entries of the segment just walked, whose old entries are `old`: those whose ABORT
    /// marker was not found discardable. Clears the per-segment record of discardable markers.
    pub(crate) fn cleaned_index(&mut self, old: &[AbortedTxn]) -> Vec<AbortedTxn> {
        let released = std::mem::take(&mut self.released);
        old.iter()
            .filter(|t| !released.contains(&(t.producer_id.get(), t.last_offset.get())))
            .copied()
            .collect()
    }
}
