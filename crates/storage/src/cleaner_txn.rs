//! What the log cleaner must know about transactions (Kafka's `LogCleaner` with its
//! `CleanedTransactionMetadata`, KIP-98): records of an aborted transaction never enter the cleaner's offset
//! map, so an aborted write cannot make the cleaner drop the committed record it would otherwise supersede
//! (read_committed consumers skip it, so they would see neither); and nothing at or past the
//! LastStableOffset is cleaned, so an undecided transaction is left whole. Aborted records that supersede
//! nothing are kept, as are all control batches (Kafka removes both once `delete.retention.ms` has passed:
//! not done here).

use crate::txn_index::AbortedTxn;

/// The aborted transactions of a log, for lookups by producer and offset.
#[derive(Debug, Clone, Default)]
pub(crate) struct AbortedRanges(Vec<AbortedTxn>);

impl AbortedRanges {
    pub(crate) fn new(aborted: Vec<AbortedTxn>) -> AbortedRanges {
        AbortedRanges(aborted)
    }

    /// True when the batch with header `h` is transactional and belongs to an aborted transaction (one of
    /// its producer's aborted transactions spans its offset).
    pub(crate) fn holds(&self, h: &protocol::record::RecordBatchHeader) -> bool {
        h.is_transactional()
            && self.0.iter().any(|t| {
                t.producer_id.get() == h.producer_id
                    && t.first_offset.get() <= h.base_offset
                    && h.base_offset < t.last_offset.get()
            })
    }
}
