//! Reads: fetch by offset, and offsets by timestamp (ListOffsets).

use super::*;

/// Result of [`Log::read`].
#[derive(Debug, Clone)]
pub struct FetchDataInfo {
    /// Whole batches, as a slice of a segment file (empty `Records::Memory` when nothing).
    pub records: Records,
    /// Where the first returned batch starts.
    pub fetch_offset_metadata: LogOffsetMetadata,
    /// Base offset of the first returned batch (may be below the requested offset: the whole
    /// batch containing it is returned), [`Offset::NONE`] when empty.
    pub first_batch_base_offset: Offset,
    /// For a `read_committed` read ([`Log::read_committed`]): the aborted transactions overlapping the
    /// returned offsets, what a Fetch response lists per partition (Kafka's
    /// `FetchDataInfo.abortedTransactions`); `None` for every other read.
    pub aborted_transactions: Option<Vec<crate::AbortedTxn>>,
}

impl FetchDataInfo {
    pub(super) fn empty(offset: i64) -> Self {
        FetchDataInfo {
            records: Records::Memory(Bytes::new()),
            fetch_offset_metadata: LogOffsetMetadata {
                message_offset: Offset(offset),
                segment_base_offset: Offset::NONE,
                relative_position: -1,
            },
            first_batch_base_offset: Offset::NONE,
            aborted_transactions: None,
        }
    }
}

impl Log {
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
        start_offset: Offset,
        max_bytes: usize,
        max_offset_exclusive: Offset,
        min_one_batch: bool,
    ) -> Result<FetchDataInfo, StorageError> {
        let (start_offset, max_offset_exclusive) = (start_offset.get(), max_offset_exclusive.get());
        let leo = self.log_end_offset;
        let limit = max_offset_exclusive.min(leo);
        if start_offset < self.log_start_offset
            || start_offset > leo
            || start_offset > limit.max(self.log_start_offset)
        {
            return Err(StorageError::OffsetOutOfRange {
                offset: Offset(start_offset),
                log_start_offset: Offset(self.log_start_offset),
                log_end_offset: Offset(leo),
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
            if let Some((records, position, first_base)) =
                seg.read(from, max_bytes, limit, min_one_batch)?
            {
                let meta = LogOffsetMetadata {
                    message_offset: Offset(start_offset),
                    segment_base_offset: Offset(*base),
                    relative_position: position as i64,
                };
                if records.is_empty() {
                    return Ok(FetchDataInfo {
                        fetch_offset_metadata: meta,
                        ..FetchDataInfo::empty(start_offset)
                    });
                }
                return Ok(FetchDataInfo {
                    records,
                    fetch_offset_metadata: meta,
                    first_batch_base_offset: Offset(first_base),
                    aborted_transactions: None,
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
    ) -> Result<Option<(Offset, i64)>, StorageError> {
        let found = self.offset_by_timestamp(timestamp)?;
        Ok(found.map(|(offset, ts)| (Offset(offset), ts)))
    }

    fn offset_by_timestamp(&mut self, timestamp: i64) -> Result<Option<(i64, i64)>, StorageError> {
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
