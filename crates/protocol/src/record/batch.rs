//! RecordBatch v2 (magic 2) view, validation, record parsing and in-place header rewrite.
//!
//! Layout (Kafka protocol guide, "Record Batch"; KIP-98), all integers big-endian:
//!
//! | bytes  | field                                   |
//! |--------|-----------------------------------------|
//! | 0..8   | baseOffset int64                        |
//! | 8..12  | batchLength int32 (bytes after this field) |
//! | 12..16 | partitionLeaderEpoch int32              |
//! | 16     | magic int8 (= 2)                        |
//! | 17..21 | crc uint32 (CRC-32C of bytes 21..end)   |
//! | 21..23 | attributes int16                        |
//! | 23..27 | lastOffsetDelta int32                   |
//! | 27..35 | baseTimestamp int64                     |
//! | 35..43 | maxTimestamp int64                      |
//! | 43..51 | producerId int64                        |
//! | 51..53 | producerEpoch int16                     |
//! | 53..57 | baseSequence int32                      |
//! | 57..61 | recordsCount int32                      |
//! | 61..   | records (compressed as one unit when attributes bits 0–2 ≠ 0) |
//!
//! Attributes: bits 0–2 compression, bit 3 timestamp type (1 = LogAppendTime), bit 4
//! isTransactional, bit 5 isControlBatch, bit 6 hasDeleteHorizonMs.
//!
//! Each record: length varint, attributes int8, timestampDelta varlong, offsetDelta varint,
//! keyLength varint (-1 = null), key, valueLength varint (-1 = null), value, headerCount varint,
//! then per header: keyLength varint, key (UTF-8), valueLength varint (-1 = null), value.

use super::compression::{self, Compression};
use super::varint::{read_varint, read_varlong};
use bytes::Bytes;

/// Size of the fixed RecordBatch v2 header in bytes (up to and including recordsCount).
pub const RECORD_BATCH_OVERHEAD: usize = 61;
/// Size of baseOffset + batchLength, the part not counted by batchLength.
pub const LOG_OVERHEAD: usize = 12;
/// The only message format ("magic") we support.
pub const MAGIC_V2: i8 = 2;
/// producerId of a batch from a non-idempotent producer.
pub const NO_PRODUCER_ID: i64 = -1;
/// producerEpoch of a batch from a non-idempotent producer.
pub const NO_PRODUCER_EPOCH: i16 = -1;
/// baseSequence of a batch from a non-idempotent producer.
pub const NO_SEQUENCE: i32 = -1;
/// partitionLeaderEpoch as sent by producers.
pub const NO_PARTITION_LEADER_EPOCH: i32 = -1;
/// Timestamp meaning "none".
pub const NO_TIMESTAMP: i64 = -1;
/// Default cap on a batch's decompressed records section (64 MiB).
pub const DEFAULT_MAX_DECOMPRESSED_BYTES: usize = 64 << 20;

/// Smallest possible encoded record: length, attributes, timestampDelta, offsetDelta, keyLength,
/// valueLength, headerCount — one byte each.
const MIN_RECORD_SIZE: usize = 7;

const ATTR_COMPRESSION_MASK: i16 = 0x07;
const ATTR_TIMESTAMP_TYPE: i16 = 0x08;
const ATTR_TRANSACTIONAL: i16 = 0x10;
const ATTR_CONTROL: i16 = 0x20;
const ATTR_DELETE_HORIZON: i16 = 0x40;

const CRC_OFFSET: usize = 17;
const ATTRIBUTES_OFFSET: usize = 21;

/// Errors from parsing or validating record data. The broker maps them to Kafka error codes:
/// `Corrupt` → CORRUPT_MESSAGE (2), `InvalidRecord` and `UnsupportedMagic` → INVALID_RECORD (87),
/// `UnsupportedCompression` → CORRUPT_MESSAGE (2), `DecompressedTooLarge` → MESSAGE_TOO_LARGE (10).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// Bytes don't form a batch: truncated, inconsistent length, CRC mismatch, undecodable
    /// compressed data.
    #[error("corrupt record batch: {0}")]
    Corrupt(String),
    /// The batch is well-formed but its records are not (bad varints, counts, offset deltas).
    #[error("invalid record: {0}")]
    InvalidRecord(String),
    /// Compression id 5–7.
    #[error("unsupported compression type id {0}")]
    UnsupportedCompression(u8),
    /// Magic 0/1 (legacy message sets) or anything other than 2.
    #[error("unsupported record batch magic {0} (only magic 2 is supported)")]
    UnsupportedMagic(i8),
    /// Decompressed records exceed the configured cap (bytes).
    #[error("decompressed records exceed {0} bytes")]
    DecompressedTooLarge(usize),
}

/// Timestamp type (attributes bit 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimestampType {
    /// Bit clear: the producer's timestamps.
    CreateTime,
    /// Bit set: the broker's append time, stored in maxTimestamp.
    LogAppendTime,
}

fn be_i16(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([b[at], b[at + 1]])
}
fn be_i32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
fn be_i64(b: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// The fixed 61-byte header of a RecordBatch v2, decoded. Parsing it does not check the CRC or
/// the records; use [`RecordBatch::validate`] for that.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordBatchHeader {
    /// Offset of the first record (assigned by the broker on append).
    pub base_offset: i64,
    /// Bytes after the batchLength field (total size = batch_length + 12).
    pub batch_length: i32,
    /// Leader epoch of the leader that appended the batch.
    pub partition_leader_epoch: i32,
    /// Message format version; always 2 once parsed.
    pub magic: i8,
    /// CRC-32C over attributes..end, as stored.
    pub crc: u32,
    /// Raw attributes.
    pub attributes: i16,
    /// Offset of the last record minus base_offset.
    pub last_offset_delta: i32,
    /// Timestamp of the first record (ms), or -1.
    pub base_timestamp: i64,
    /// Largest record timestamp (ms); the append time for LogAppendTime batches.
    pub max_timestamp: i64,
    /// Idempotent/transactional producer id, or -1.
    pub producer_id: i64,
    /// Producer epoch, or -1.
    pub producer_epoch: i16,
    /// Sequence number of the first record, or -1.
    pub base_sequence: i32,
    /// Number of records in the batch.
    pub records_count: i32,
}

impl RecordBatchHeader {
    /// Decodes the header from the first 61 bytes of `buf`.
    /// Errors: fewer than 17 bytes or fewer than 61 for magic 2 → `Corrupt`; magic ≠ 2 →
    /// `UnsupportedMagic`; batchLength smaller than the header → `Corrupt`.
    pub fn parse(buf: &[u8]) -> Result<Self, RecordError> {
        if buf.len() < 17 {
            return Err(RecordError::Corrupt(format!(
                "{} bytes is too short for a record batch header",
                buf.len()
            )));
        }
        let magic = buf[16] as i8;
        if magic != MAGIC_V2 {
            return Err(RecordError::UnsupportedMagic(magic));
        }
        if buf.len() < RECORD_BATCH_OVERHEAD {
            return Err(RecordError::Corrupt(format!(
                "{} bytes is too short for a record batch header",
                buf.len()
            )));
        }
        let h = RecordBatchHeader {
            base_offset: be_i64(buf, 0),
            batch_length: be_i32(buf, 8),
            partition_leader_epoch: be_i32(buf, 12),
            magic,
            crc: be_i32(buf, CRC_OFFSET) as u32,
            attributes: be_i16(buf, ATTRIBUTES_OFFSET),
            last_offset_delta: be_i32(buf, 23),
            base_timestamp: be_i64(buf, 27),
            max_timestamp: be_i64(buf, 35),
            producer_id: be_i64(buf, 43),
            producer_epoch: be_i16(buf, 51),
            base_sequence: be_i32(buf, 53),
            records_count: be_i32(buf, 57),
        };
        if (h.batch_length as i64) < (RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) as i64 {
            return Err(RecordError::Corrupt(format!(
                "batch length {} is smaller than the header",
                h.batch_length
            )));
        }
        Ok(h)
    }

    /// Total size of the batch in bytes (batch_length + 12).
    pub fn size_in_bytes(&self) -> usize {
        self.batch_length as usize + LOG_OVERHEAD
    }

    /// Compression codec (attributes bits 0–2); ids 5–7 → `UnsupportedCompression`.
    pub fn compression(&self) -> Result<Compression, RecordError> {
        Compression::from_id((self.attributes & ATTR_COMPRESSION_MASK) as u8)
    }

    /// Timestamp type (attributes bit 3).
    pub fn timestamp_type(&self) -> TimestampType {
        if self.attributes & ATTR_TIMESTAMP_TYPE != 0 {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }

    /// Attributes bit 4.
    pub fn is_transactional(&self) -> bool {
        self.attributes & ATTR_TRANSACTIONAL != 0
    }

    /// Attributes bit 5.
    pub fn is_control(&self) -> bool {
        self.attributes & ATTR_CONTROL != 0
    }

    /// Attributes bit 6 (KIP-534: baseTimestamp holds the delete horizon).
    pub fn has_delete_horizon(&self) -> bool {
        self.attributes & ATTR_DELETE_HORIZON != 0
    }

    /// base_offset + last_offset_delta.
    pub fn last_offset(&self) -> i64 {
        self.base_offset.wrapping_add(self.last_offset_delta as i64)
    }

    /// last_offset + 1: where the next batch starts.
    pub fn next_offset(&self) -> i64 {
        self.last_offset().wrapping_add(1)
    }

    /// Sequence of the last record: base_sequence + last_offset_delta, wrapping past i32::MAX to 0
    /// (as Kafka's DefaultRecordBatch.incrementSequence); -1 without a sequence.
    pub fn last_sequence(&self) -> i32 {
        if self.base_sequence == NO_SEQUENCE {
            return NO_SEQUENCE;
        }
        increment_sequence(self.base_sequence, self.last_offset_delta)
    }

    /// True when the batch comes from an idempotent or transactional producer.
    pub fn has_producer_id(&self) -> bool {
        self.producer_id >= 0
    }
}

/// `seq + inc` wrapping past i32::MAX to 0 (Kafka's sequence arithmetic).
/// Never overflows, whatever the (possibly corrupt) inputs.
pub fn increment_sequence(seq: i32, inc: i32) -> i32 {
    let s = seq as i64 + inc as i64;
    if s > i32::MAX as i64 {
        (s - i32::MAX as i64 - 1) as i32
    } else {
        s as i32
    }
}

/// One record as returned by [`RecordBatch::records`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Absolute offset (batch base offset + offset delta).
    pub offset: i64,
    /// Timestamp in ms (the batch maxTimestamp for LogAppendTime batches).
    pub timestamp: i64,
    /// Key, `None` when null.
    pub key: Option<Bytes>,
    /// Value, `None` when null.
    pub value: Option<Bytes>,
    /// Headers in order: key (lossy UTF-8) and nullable value.
    pub headers: Vec<(String, Option<Bytes>)>,
}

/// What [`RecordBatch::validate`] learned about the records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchSummary {
    /// Number of records parsed (= records_count).
    pub records_count: i32,
    /// Smallest record timestamp (ms); `i64::MAX` for an empty batch.
    pub min_timestamp: i64,
    /// Largest record timestamp (ms); -1 for an empty batch.
    pub max_timestamp: i64,
    /// Offset delta of the record with the largest timestamp (first one on ties).
    pub offset_delta_of_max_timestamp: i32,
    /// Size of the (decompressed) records section in bytes.
    pub records_bytes: usize,
}

/// A view over exactly one RecordBatch v2 held in a `Bytes` (cheap to clone).
#[derive(Debug, Clone)]
pub struct RecordBatch {
    header: RecordBatchHeader,
    buf: Bytes,
}

macro_rules! header_accessors {
    ($($(#[$m:meta])* $name:ident: $ty:ty;)*) => {
        $( $(#[$m])* pub fn $name(&self) -> $ty { self.header.$name } )*
    };
}

impl RecordBatch {
    /// Wraps `buf`, which must hold exactly one batch (batch_length + 12 == buf.len()).
    /// Checks only the header (magic, lengths); see [`validate`](Self::validate).
    pub fn new(buf: Bytes) -> Result<Self, RecordError> {
        let header = RecordBatchHeader::parse(&buf)?;
        if header.size_in_bytes() != buf.len() {
            return Err(RecordError::Corrupt(format!(
                "batch length {} does not match the {} bytes present",
                header.batch_length,
                buf.len()
            )));
        }
        Ok(RecordBatch { header, buf })
    }

    /// The decoded fixed header.
    pub fn header(&self) -> &RecordBatchHeader {
        &self.header
    }

    /// The whole batch's bytes.
    pub fn as_bytes(&self) -> &Bytes {
        &self.buf
    }

    /// Consumes the view, returning its bytes.
    pub fn into_bytes(self) -> Bytes {
        self.buf
    }

    /// Total size in bytes.
    pub fn size_in_bytes(&self) -> usize {
        self.buf.len()
    }

    header_accessors! {
        /// Offset of the first record.
        base_offset: i64;
        /// batchLength field (bytes after it).
        batch_length: i32;
        /// partitionLeaderEpoch field.
        partition_leader_epoch: i32;
        /// magic (always 2).
        magic: i8;
        /// Stored CRC-32C.
        crc: u32;
        /// Raw attributes.
        attributes: i16;
        /// lastOffsetDelta field.
        last_offset_delta: i32;
        /// baseTimestamp (ms).
        base_timestamp: i64;
        /// maxTimestamp (ms).
        max_timestamp: i64;
        /// producerId (-1 = none).
        producer_id: i64;
        /// producerEpoch (-1 = none).
        producer_epoch: i16;
        /// baseSequence (-1 = none).
        base_sequence: i32;
        /// recordsCount field.
        records_count: i32;
    }

    /// Compression codec (attributes bits 0–2).
    pub fn compression(&self) -> Result<Compression, RecordError> {
        self.header.compression()
    }
    /// Timestamp type (attributes bit 3).
    pub fn timestamp_type(&self) -> TimestampType {
        self.header.timestamp_type()
    }
    /// Attributes bit 4.
    pub fn is_transactional(&self) -> bool {
        self.header.is_transactional()
    }
    /// Attributes bit 5.
    pub fn is_control(&self) -> bool {
        self.header.is_control()
    }
    /// base_offset + last_offset_delta.
    pub fn last_offset(&self) -> i64 {
        self.header.last_offset()
    }
    /// last_offset + 1.
    pub fn next_offset(&self) -> i64 {
        self.header.next_offset()
    }
    /// Sequence of the last record (see [`RecordBatchHeader::last_sequence`]).
    pub fn last_sequence(&self) -> i32 {
        self.header.last_sequence()
    }

    /// CRC-32C of bytes 21..end, as it should be stored.
    pub fn compute_crc(&self) -> u32 {
        crc32c::crc32c(&self.buf[ATTRIBUTES_OFFSET..])
    }

    /// Full validation with the default decompression cap
    /// ([`DEFAULT_MAX_DECOMPRESSED_BYTES`]).
    pub fn validate(&self) -> Result<BatchSummary, RecordError> {
        self.validate_with(DEFAULT_MAX_DECOMPRESSED_BYTES)
    }

    /// Full validation: CRC-32C (→ `Corrupt`), records_count ≥ 0 and ≤ lastOffsetDelta + 1,
    /// codec known, records decompressed (at most `max_decompressed` bytes) and every record
    /// parsed within its declared length; offset deltas strictly increasing and ≤ lastOffsetDelta;
    /// exactly records_count records and no trailing bytes (→ `InvalidRecord`).
    pub fn validate_with(&self, max_decompressed: usize) -> Result<BatchSummary, RecordError> {
        let h = &self.header;
        let computed = self.compute_crc();
        if computed != h.crc {
            return Err(RecordError::Corrupt(format!(
                "CRC mismatch: stored {:#010x}, computed {:#010x}",
                h.crc, computed
            )));
        }
        if h.records_count < 0 {
            return Err(RecordError::InvalidRecord(format!(
                "negative records count {}",
                h.records_count
            )));
        }
        if h.last_offset_delta < 0 {
            return Err(RecordError::InvalidRecord(format!(
                "negative last offset delta {}",
                h.last_offset_delta
            )));
        }
        if h.records_count as i64 > h.last_offset_delta as i64 + 1 {
            return Err(RecordError::InvalidRecord(format!(
                "records count {} exceeds last offset delta {} + 1",
                h.records_count, h.last_offset_delta
            )));
        }
        let mut summary = BatchSummary {
            records_count: 0,
            min_timestamp: i64::MAX,
            max_timestamp: NO_TIMESTAMP,
            offset_delta_of_max_timestamp: 0,
            records_bytes: 0,
        };
        let mut last_delta: i64 = -1;
        let data = self.records_section(max_decompressed)?;
        summary.records_bytes = data.len();
        parse_records::<false>(&data, h, |r| {
            if r.offset_delta as i64 <= last_delta {
                return Err(RecordError::InvalidRecord(format!(
                    "offset delta {} not increasing (previous {})",
                    r.offset_delta, last_delta
                )));
            }
            if r.offset_delta > h.last_offset_delta {
                return Err(RecordError::InvalidRecord(format!(
                    "offset delta {} beyond last offset delta {}",
                    r.offset_delta, h.last_offset_delta
                )));
            }
            last_delta = r.offset_delta as i64;
            summary.records_count += 1;
            summary.min_timestamp = summary.min_timestamp.min(r.timestamp);
            if r.timestamp > summary.max_timestamp || summary.records_count == 1 {
                summary.max_timestamp = r.timestamp;
                summary.offset_delta_of_max_timestamp = r.offset_delta;
            }
            Ok(())
        })?;
        Ok(summary)
    }

    /// The records section, decompressed when needed (at most `max_decompressed` bytes).
    fn records_section(&self, max_decompressed: usize) -> Result<Bytes, RecordError> {
        let raw = self.buf.slice(RECORD_BATCH_OVERHEAD..);
        match self.header.compression()? {
            Compression::None => Ok(raw),
            codec => Ok(Bytes::from(compression::decompress(
                codec,
                &raw,
                max_decompressed,
            )?)),
        }
    }

    /// Decodes every record (decompressing with the default cap). Keys/values of uncompressed
    /// batches share this batch's buffer. For LogAppendTime batches every record's timestamp is
    /// the batch maxTimestamp. Does not check the CRC (use [`validate`](Self::validate)).
    pub fn records(&self) -> Result<Vec<Record>, RecordError> {
        let h = &self.header;
        if h.records_count < 0 {
            return Err(RecordError::InvalidRecord("negative records count".into()));
        }
        let data = self.records_section(DEFAULT_MAX_DECOMPRESSED_BYTES)?;
        let mut out =
            Vec::with_capacity((h.records_count as usize).min(data.len() / MIN_RECORD_SIZE));
        let log_append = h.timestamp_type() == TimestampType::LogAppendTime;
        parse_records::<true>(&data, h, |r| {
            out.push(Record {
                offset: h.base_offset.wrapping_add(r.offset_delta as i64),
                timestamp: if log_append {
                    h.max_timestamp
                } else {
                    r.timestamp
                },
                key: r.key.map(|k| data.slice(k)),
                value: r.value.map(|v| data.slice(v)),
                headers: r
                    .headers
                    .iter()
                    .map(|(k, v)| {
                        (
                            String::from_utf8_lossy(&data[k.clone()]).into_owned(),
                            v.clone().map(|v| data.slice(v)),
                        )
                    })
                    .collect(),
            });
            Ok(())
        })?;
        Ok(out)
    }
}

/// One parsed record, referring to byte ranges of the records section (`headers` is empty unless the
/// walk keeps them).
struct RawRecord {
    offset_delta: i32,
    timestamp: i64,
    key: Option<std::ops::Range<usize>>,
    value: Option<std::ops::Range<usize>>,
    headers: Vec<(std::ops::Range<usize>, Option<std::ops::Range<usize>>)>,
}

#[inline]
fn read_bytes_field(
    data: &[u8],
    pos: &mut usize,
    end: usize,
    what: &str,
) -> Result<Option<std::ops::Range<usize>>, RecordError> {
    let len = read_varint(&data[..end], pos)?;
    if len == -1 {
        return Ok(None);
    }
    if len < 0 {
        return Err(RecordError::InvalidRecord(format!(
            "invalid {what} length {len}"
        )));
    }
    let len = len as usize;
    if len > end - *pos {
        return Err(RecordError::InvalidRecord(format!(
            "{what} length {len} overruns the record"
        )));
    }
    let r = *pos..*pos + len;
    *pos += len;
    Ok(Some(r))
}

/// Parses exactly `h.records_count` records from `data`, calling `f` for each; errors on any
/// overrun, length mismatch, or trailing bytes. Header ranges are collected only with
/// `KEEP_HEADERS` (validation checks them without allocating).
#[inline]
fn parse_records<const KEEP_HEADERS: bool>(
    data: &[u8],
    h: &RecordBatchHeader,
    mut f: impl FnMut(RawRecord) -> Result<(), RecordError>,
) -> Result<(), RecordError> {
    let count = h.records_count.max(0) as usize;
    if count > data.len() / MIN_RECORD_SIZE {
        return Err(RecordError::InvalidRecord(format!(
            "records count {count} cannot fit in {} bytes",
            data.len()
        )));
    }
    let mut pos = 0usize;
    for i in 0..count {
        let len = read_varint(data, &mut pos)?;
        if len < 0 || len as usize > data.len() - pos {
            return Err(RecordError::InvalidRecord(format!(
                "record {i} length {len} overruns the batch"
            )));
        }
        let end = pos + len as usize;
        if pos >= end {
            return Err(RecordError::InvalidRecord(format!("record {i} is empty")));
        }
        pos += 1; // attributes (unused)
        let ts_delta = read_varlong(&data[..end], &mut pos)?;
        let offset_delta = read_varint(&data[..end], &mut pos)?;
        let key = read_bytes_field(data, &mut pos, end, "key")?;
        let value = read_bytes_field(data, &mut pos, end, "value")?;
        let header_count = read_varint(&data[..end], &mut pos)?;
        if header_count < 0 || header_count as usize > end - pos {
            return Err(RecordError::InvalidRecord(format!(
                "invalid header count {header_count}"
            )));
        }
        let mut headers = Vec::new();
        if KEEP_HEADERS {
            headers.reserve_exact(header_count as usize);
        }
        for _ in 0..header_count {
            let Some(hk) = read_bytes_field(data, &mut pos, end, "header key")? else {
                return Err(RecordError::InvalidRecord("null header key".into()));
            };
            let hv = read_bytes_field(data, &mut pos, end, "header value")?;
            if KEEP_HEADERS {
                headers.push((hk, hv));
            }
        }
        if pos != end {
            return Err(RecordError::InvalidRecord(format!(
                "record {i} declared {len} bytes but {} were read",
                len as usize - (end - pos)
            )));
        }
        f(RawRecord {
            offset_delta,
            timestamp: h.base_timestamp.wrapping_add(ts_delta),
            key,
            value,
            headers,
        })?;
    }
    if pos != data.len() {
        return Err(RecordError::InvalidRecord(format!(
            "{} bytes remain after the declared {count} records",
            data.len() - pos
        )));
    }
    Ok(())
}

/// Iterator over concatenated batches (the value of a Produce `records` field, or a slice of a
/// segment). Yields an error and then stops at the first malformed batch: short or trailing bytes
/// (`Corrupt`), legacy magic 0/1 (`UnsupportedMagic`). Batches are header-checked only.
#[derive(Debug, Clone)]
pub struct Batches {
    buf: Bytes,
    pos: usize,
    failed: bool,
}

/// Iterates the batches in `records` (see [`Batches`]).
pub fn batches(records: &Bytes) -> Batches {
    Batches {
        buf: records.clone(),
        pos: 0,
        failed: false,
    }
}

impl Iterator for Batches {
    type Item = Result<RecordBatch, RecordError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.buf.len() {
            return None;
        }
        let rest = &self.buf[self.pos..];
        // A batch cut short (too few bytes for its header or its declared length) is INVALID_RECORD, as
        // Kafka answers a Produce whose record set holds no whole batch; a bad CRC stays CORRUPT_MESSAGE.
        let res = RecordBatchHeader::parse(rest)
            .map_err(|e| match e {
                RecordError::Corrupt(m) if rest.len() < RECORD_BATCH_OVERHEAD => {
                    RecordError::InvalidRecord(format!("truncated batch: {m}"))
                }
                other => other,
            })
            .and_then(|h| {
                let size = h.size_in_bytes();
                if size > rest.len() {
                    return Err(RecordError::InvalidRecord(format!(
                        "truncated batch: {size} bytes declared but only {} bytes remain",
                        rest.len()
                    )));
                }
                let b = RecordBatch {
                    header: h,
                    buf: self.buf.slice(self.pos..self.pos + size),
                };
                self.pos += size;
                Ok(b)
            });
        if res.is_err() {
            self.failed = true;
        }
        Some(res)
    }
}

/// In-place editor of one batch's header (used when the leader appends: Kafka's
/// `setLastOffset`/`setPartitionLeaderEpoch`/`setMaxTimestamp`). Call
/// [`update_crc`](Self::update_crc) after editing fields covered by the CRC (attributes,
/// maxTimestamp); base offset and leader epoch are outside it.
pub struct RecordBatchMut<'a> {
    buf: &'a mut [u8],
}

impl<'a> RecordBatchMut<'a> {
    /// Wraps the bytes of one batch; errors when shorter than the 61-byte header.
    pub fn new(buf: &'a mut [u8]) -> Result<Self, RecordError> {
        RecordBatchHeader::parse(buf)?;
        Ok(RecordBatchMut { buf })
    }

    /// Sets baseOffset (bytes 0..8).
    pub fn set_base_offset(&mut self, base_offset: i64) {
        self.buf[0..8].copy_from_slice(&base_offset.to_be_bytes());
    }

    /// Sets partitionLeaderEpoch (bytes 12..16).
    pub fn set_partition_leader_epoch(&mut self, epoch: i32) {
        self.buf[12..16].copy_from_slice(&epoch.to_be_bytes());
    }

    /// Sets the timestamp-type attribute bit and maxTimestamp (Kafka's `setMaxTimestamp`).
    /// For LogAppendTime, `max_timestamp` is the append time. Needs [`update_crc`](Self::update_crc).
    pub fn set_max_timestamp(&mut self, timestamp_type: TimestampType, max_timestamp: i64) {
        let mut attrs = be_i16(self.buf, ATTRIBUTES_OFFSET);
        match timestamp_type {
            TimestampType::CreateTime => attrs &= !ATTR_TIMESTAMP_TYPE,
            TimestampType::LogAppendTime => attrs |= ATTR_TIMESTAMP_TYPE,
        }
        self.buf[ATTRIBUTES_OFFSET..ATTRIBUTES_OFFSET + 2].copy_from_slice(&attrs.to_be_bytes());
        self.buf[35..43].copy_from_slice(&max_timestamp.to_be_bytes());
    }

    /// Recomputes and stores the CRC-32C over bytes 21..end.
    pub fn update_crc(&mut self) {
        self.update_crc_continued(&[]);
    }

    /// Recomputes and stores the CRC-32C over bytes 21.. of this buffer followed by `rest`: for a header
    /// edited apart from its batch, `rest` is the batch's bytes after the 61-byte header.
    pub fn update_crc_continued(&mut self, rest: &[u8]) {
        let crc = crc32c::crc32c(&self.buf[ATTRIBUTES_OFFSET..]);
        let crc = crc32c::crc32c_append(crc, rest);
        self.buf[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
    }
}
