//! The log cleaner's view of stored batches: a segment read batch by batch ([`BatchReader`]), a batch's
//! records section parsed by byte range, a batch rebuilt from the records kept (same base offset, last
//! offset delta, producer fields and codec; optionally with a KIP-534 delete horizon), and the empty
//! header kept for a producer's last sequence. Used by [`crate::cleaner`] and [`crate::cleaner_txn`].

use crate::error::StorageError;
use crate::log::CleanerSegment;
use bytes::Bytes;
use protocol::record::varint::{read_varint, read_varlong, write_varint, write_varlong};
use protocol::record::{
    compress, decompress, Compression, RecordBatch, RecordBatchHeader, RecordBatchMut,
    TimestampType, RECORD_BATCH_OVERHEAD,
};

/// Attribute bit 6: baseTimestamp holds the delete horizon (KIP-534).
pub(crate) const ATTR_DELETE_HORIZON: i16 = 0x40;

/// One record of a batch's (decompressed) records section, by byte range.
pub(crate) struct RawRecord {
    pub timestamp_delta: i64,
    pub offset_delta: i32,
    pub key: Option<std::ops::Range<usize>>,
    pub value_is_null: bool,
    /// Key, value and headers exactly as encoded.
    pub rest: std::ops::Range<usize>,
}

pub(crate) fn invalid(msg: impl Into<String>) -> StorageError {
    StorageError::CorruptMessage(msg.into())
}

fn read_nullable_len(data: &[u8], pos: &mut usize, end: usize) -> Result<i32, StorageError> {
    let len = read_varint(&data[..end], pos)?;
    if len < -1 || (len > 0 && len as usize > end - *pos) {
        return Err(invalid(format!("bad length {len} in a stored record")));
    }
    Ok(len)
}

/// Reads segment batches one at a time (whole batches, CRC-checked).
pub(crate) struct BatchReader<'a> {
    seg: &'a CleanerSegment,
    pos: u64,
    pub buf: Vec<u8>,
}

impl<'a> BatchReader<'a> {
    pub(crate) fn new(seg: &'a CleanerSegment) -> Self {
        BatchReader {
            seg,
            pos: 0,
            buf: Vec::new(),
        }
    }

    /// The next batch (header, bytes); `None` at the end of the segment.
    pub(crate) fn next_batch(
        &mut self,
    ) -> Result<Option<(RecordBatchHeader, &[u8])>, StorageError> {
        if self.pos + RECORD_BATCH_OVERHEAD as u64 > self.seg.size {
            return Ok(None);
        }
        let mut hdr = [0u8; RECORD_BATCH_OVERHEAD];
        self.seg.file.read_exact_at(&mut hdr, self.pos)?;
        let h = RecordBatchHeader::parse(&hdr)?;
        let size = h.size_in_bytes();
        if self.pos + size as u64 > self.seg.size {
            return Err(invalid(format!(
                "batch at position {} runs past the end of segment {}",
                self.pos, self.seg.base_offset
            )));
        }
        self.buf.resize(size, 0);
        self.seg.file.read_exact_at(&mut self.buf, self.pos)?;
        if crc32c::crc32c(&self.buf[21..]) != h.crc {
            return Err(invalid(format!(
                "CRC mismatch in batch at position {} of segment {}",
                self.pos, self.seg.base_offset
            )));
        }
        self.pos += size as u64;
        Ok(Some((h, &self.buf)))
    }
}

/// Parses the records section of a stored batch (sizes checked; never panics on bad bytes).
pub(crate) fn parse_raw_records(data: &[u8], count: i32) -> Result<Vec<RawRecord>, StorageError> {
    let count = count.max(0) as usize;
    if count > data.len() {
        return Err(invalid("records count larger than the batch"));
    }
    let mut out = Vec::with_capacity(count);
    let mut pos = 0usize;
    for _ in 0..count {
        let len = read_varint(data, &mut pos)?;
        if len < 1 || len as usize > data.len() - pos {
            return Err(invalid(format!("bad record length {len}")));
        }
        let end = pos + len as usize;
        pos += 1; // attributes
        let timestamp_delta = read_varlong(&data[..end], &mut pos)?;
        let offset_delta = read_varint(&data[..end], &mut pos)?;
        let rest_start = pos;
        let klen = read_nullable_len(data, &mut pos, end)?;
        let key = if klen < 0 {
            None
        } else {
            let r = pos..pos + klen as usize;
            pos += klen as usize;
            Some(r)
        };
        let vlen = read_nullable_len(data, &mut pos, end)?;
        if pos > end {
            return Err(invalid("record overruns its length"));
        }
        out.push(RawRecord {
            timestamp_delta,
            offset_delta,
            key,
            value_is_null: vlen < 0,
            rest: rest_start..end,
        });
        pos = end;
    }
    if pos != data.len() {
        return Err(invalid("trailing bytes after the records"));
    }
    Ok(out)
}

/// The records section of `batch`, decompressed.
pub(crate) fn records_section(
    batch: &[u8],
    h: &RecordBatchHeader,
) -> Result<Vec<u8>, StorageError> {
    let body = &batch[RECORD_BATCH_OVERHEAD..];
    Ok(match h.compression()? {
        Compression::None => body.to_vec(),
        codec => decompress(
            codec,
            body,
            protocol::record::DEFAULT_MAX_DECOMPRESSED_BYTES,
        )?,
    })
}

/// Rebuilds batch `h` (records section `data`, decompressed) with only the records `keep`: same base
/// offset, last offset delta, producer id/epoch/base sequence and codec; records keep their offset
/// deltas and timestamps. With `new_horizon`, the delete-horizon attribute is set and baseTimestamp
/// holds it (record timestamp deltas re-based). The result is CRC'd and checked to parse.
pub(crate) fn rebuild_batch(
    h: &RecordBatchHeader,
    data: &[u8],
    keep: &[&RawRecord],
    new_horizon: Option<i64>,
) -> Result<Bytes, StorageError> {
    let log_append = h.timestamp_type() == TimestampType::LogAppendTime;
    let new_base_ts = new_horizon.unwrap_or(h.base_timestamp);
    let mut body = Vec::with_capacity(data.len());
    let mut rec = Vec::new();
    let mut max_ts = -1i64;
    for r in keep {
        let ts = h.base_timestamp.wrapping_add(r.timestamp_delta);
        max_ts = max_ts.max(ts);
        rec.clear();
        rec.push(0u8);
        write_varlong(&mut rec, ts.wrapping_sub(new_base_ts));
        write_varint(&mut rec, r.offset_delta);
        rec.extend_from_slice(&data[r.rest.clone()]);
        write_varint(&mut body, rec.len() as i32);
        body.extend_from_slice(&rec);
    }
    let codec = h.compression()?;
    let body = compress(codec, &body, true)?;
    let mut attrs = h.attributes;
    if new_horizon.is_some() {
        attrs |= ATTR_DELETE_HORIZON;
    }
    let stored_max = if log_append { h.max_timestamp } else { max_ts };
    let mut out = Vec::with_capacity(RECORD_BATCH_OVERHEAD + body.len());
    out.extend_from_slice(&h.base_offset.to_be_bytes());
    out.extend_from_slice(&((RECORD_BATCH_OVERHEAD - 12 + body.len()) as i32).to_be_bytes());
    out.extend_from_slice(&h.partition_leader_epoch.to_be_bytes());
    out.push(h.magic as u8);
    out.extend_from_slice(&0u32.to_be_bytes());
    out.extend_from_slice(&attrs.to_be_bytes());
    out.extend_from_slice(&h.last_offset_delta.to_be_bytes());
    out.extend_from_slice(&new_base_ts.to_be_bytes());
    out.extend_from_slice(&stored_max.to_be_bytes());
    out.extend_from_slice(&h.producer_id.to_be_bytes());
    out.extend_from_slice(&h.producer_epoch.to_be_bytes());
    out.extend_from_slice(&h.base_sequence.to_be_bytes());
    out.extend_from_slice(&(keep.len() as i32).to_be_bytes());
    out.extend_from_slice(&body);
    RecordBatchMut::new(&mut out)?.update_crc();
    // Sanity: the rebuilt batch must parse.
    RecordBatch::new(Bytes::copy_from_slice(&out))?;
    Ok(Bytes::from(out))
}

/// The empty header Kafka writes for a batch it keeps only for its producer fields
/// (`BatchRetention.RETAIN_EMPTY`, `DefaultRecordBatch.writeEmptyHeader`): same base offset, last offset
/// delta, partition leader epoch, producer id/epoch/base sequence, timestamp type and the transactional
/// and control bits; no compression, no delete horizon, both timestamps the batch's max timestamp, no
/// records.
pub(crate) fn empty_batch(h: &RecordBatchHeader) -> Result<Bytes, StorageError> {
    let attrs = h.attributes & (0x08 | 0x10 | 0x20);
    let mut out = Vec::with_capacity(RECORD_BATCH_OVERHEAD);
    out.extend_from_slice(&h.base_offset.to_be_bytes());
    out.extend_from_slice(&((RECORD_BATCH_OVERHEAD - 12) as i32).to_be_bytes());
    out.extend_from_slice(&h.partition_leader_epoch.to_be_bytes());
    out.push(h.magic as u8);
    out.extend_from_slice(&0u32.to_be_bytes());
    out.extend_from_slice(&attrs.to_be_bytes());
    out.extend_from_slice(&h.last_offset_delta.to_be_bytes());
    out.extend_from_slice(&h.max_timestamp.to_be_bytes());
    out.extend_from_slice(&h.max_timestamp.to_be_bytes());
    out.extend_from_slice(&h.producer_id.to_be_bytes());
    out.extend_from_slice(&h.producer_epoch.to_be_bytes());
    out.extend_from_slice(&h.base_sequence.to_be_bytes());
    out.extend_from_slice(&0i32.to_be_bytes());
    RecordBatchMut::new(&mut out)?.update_crc();
    RecordBatch::new(Bytes::copy_from_slice(&out))?;
    Ok(Bytes::from(out))
}
