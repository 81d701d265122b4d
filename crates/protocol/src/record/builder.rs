//! [`RecordBatchBuilder`]: creates RecordBatch v2 bytes with any codec (tests, internal topics).

use super::batch::{
    RecordBatchMut, TimestampType, MAGIC_V2, NO_PARTITION_LEADER_EPOCH, NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID, NO_SEQUENCE, NO_TIMESTAMP, RECORD_BATCH_OVERHEAD,
};
use super::compression::{self, Compression};
use super::varint::{write_varint, write_varlong};
use super::RecordError;
use bytes::Bytes;

struct PendingRecord {
    timestamp: i64,
    key: Option<Bytes>,
    value: Option<Bytes>,
    headers: Vec<(String, Option<Bytes>)>,
}

/// Builds one RecordBatch v2. Records get consecutive offset deltas 0..n; baseTimestamp is the
/// first record's timestamp and maxTimestamp the largest (or the log-append time given with
/// [`log_append_time`](Self::log_append_time)). The CRC is computed by [`build`](Self::build).
///
/// ```
/// use protocol::record::{RecordBatchBuilder, Compression, batches};
/// let mut b = RecordBatchBuilder::new(Compression::Lz4);
/// b.append(1000, Some("k".into()), Some("v".into()), vec![]);
/// let bytes = b.build().unwrap();
/// let batch = batches(&bytes).next().unwrap().unwrap();
/// batch.validate().unwrap();
/// assert_eq!(batch.records().unwrap()[0].value.as_deref(), Some(&b"v"[..]));
/// ```
pub struct RecordBatchBuilder {
    compression: Compression,
    snappy_xerial: bool,
    base_offset: i64,
    partition_leader_epoch: i32,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    transactional: bool,
    control: bool,
    log_append_time: Option<i64>,
    records: Vec<PendingRecord>,
}

impl RecordBatchBuilder {
    /// A builder for a batch compressed with `compression`, base offset 0, no producer id.
    pub fn new(compression: Compression) -> Self {
        RecordBatchBuilder {
            compression,
            snappy_xerial: true,
            base_offset: 0,
            partition_leader_epoch: NO_PARTITION_LEADER_EPOCH,
            producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
            base_sequence: NO_SEQUENCE,
            transactional: false,
            control: false,
            log_append_time: None,
            records: Vec::new(),
        }
    }

    /// Snappy framing: xerial (`true`, default; as the Java client) or raw (`false`, as librdkafka).
    pub fn snappy_xerial(mut self, xerial: bool) -> Self {
        self.snappy_xerial = xerial;
        self
    }

    /// Sets baseOffset.
    pub fn base_offset(mut self, base_offset: i64) -> Self {
        self.base_offset = base_offset;
        self
    }

    /// Sets partitionLeaderEpoch.
    pub fn partition_leader_epoch(mut self, epoch: i32) -> Self {
        self.partition_leader_epoch = epoch;
        self
    }

    /// Sets producerId, producerEpoch and baseSequence (idempotent producer).
    pub fn producer(mut self, producer_id: i64, producer_epoch: i16, base_sequence: i32) -> Self {
        self.producer_id = producer_id;
        self.producer_epoch = producer_epoch;
        self.base_sequence = base_sequence;
        self
    }

    /// Sets the isTransactional attribute.
    pub fn transactional(mut self, yes: bool) -> Self {
        self.transactional = yes;
        self
    }

    /// Sets the isControlBatch attribute.
    pub fn control(mut self, yes: bool) -> Self {
        self.control = yes;
        self
    }

    /// Marks the batch LogAppendTime with maxTimestamp = `append_time_ms`.
    pub fn log_append_time(mut self, append_time_ms: i64) -> Self {
        self.log_append_time = Some(append_time_ms);
        self
    }

    /// Adds a record; returns its offset delta.
    pub fn append(
        &mut self,
        timestamp: i64,
        key: Option<Bytes>,
        value: Option<Bytes>,
        headers: Vec<(String, Option<Bytes>)>,
    ) -> i32 {
        self.records.push(PendingRecord {
            timestamp,
            key,
            value,
            headers,
        });
        self.records.len() as i32 - 1
    }

    /// Number of records added so far.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// True when no record was added.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Encodes the batch. Errors only if compression fails.
    pub fn build(&self) -> Result<Bytes, RecordError> {
        let base_ts = self.records.first().map_or(NO_TIMESTAMP, |r| r.timestamp);
        let max_ts = self
            .records
            .iter()
            .map(|r| r.timestamp)
            .max()
            .unwrap_or(NO_TIMESTAMP);
        let mut body = Vec::new();
        let mut rec = Vec::new();
        for (i, r) in self.records.iter().enumerate() {
            rec.clear();
            rec.push(0u8); // attributes
            write_varlong(&mut rec, r.timestamp.wrapping_sub(base_ts));
            write_varint(&mut rec, i as i32);
            write_nullable(&mut rec, r.key.as_deref());
            write_nullable(&mut rec, r.value.as_deref());
            write_varint(&mut rec, r.headers.len() as i32);
            for (k, v) in &r.headers {
                write_nullable(&mut rec, Some(k.as_bytes()));
                write_nullable(&mut rec, v.as_deref());
            }
            write_varint(&mut body, rec.len() as i32);
            body.extend_from_slice(&rec);
        }
        let body = compression::compress(self.compression, &body, self.snappy_xerial)?;
        let mut attrs: i16 = self.compression.id() as i16;
        if self.transactional {
            attrs |= 0x10;
        }
        if self.control {
            attrs |= 0x20;
        }
        let n = self.records.len() as i32;
        let mut out = Vec::with_capacity(RECORD_BATCH_OVERHEAD + body.len());
        out.extend_from_slice(&self.base_offset.to_be_bytes());
        out.extend_from_slice(&((RECORD_BATCH_OVERHEAD - 12 + body.len()) as i32).to_be_bytes());
        out.extend_from_slice(&self.partition_leader_epoch.to_be_bytes());
        out.push(MAGIC_V2 as u8);
        out.extend_from_slice(&0u32.to_be_bytes()); // crc, filled below
        out.extend_from_slice(&attrs.to_be_bytes());
        out.extend_from_slice(&(n - 1).max(0).to_be_bytes());
        out.extend_from_slice(&base_ts.to_be_bytes());
        out.extend_from_slice(&max_ts.to_be_bytes());
        out.extend_from_slice(&self.producer_id.to_be_bytes());
        out.extend_from_slice(&self.producer_epoch.to_be_bytes());
        out.extend_from_slice(&self.base_sequence.to_be_bytes());
        out.extend_from_slice(&n.to_be_bytes());
        out.extend_from_slice(&body);
        let mut m = RecordBatchMut::new(&mut out)?;
        match self.log_append_time {
            Some(t) => m.set_max_timestamp(TimestampType::LogAppendTime, t),
            None => m.set_max_timestamp(TimestampType::CreateTime, max_ts),
        }
        m.update_crc();
        Ok(Bytes::from(out))
    }
}

fn write_nullable(out: &mut Vec<u8>, v: Option<&[u8]>) {
    match v {
        None => write_varint(out, -1),
        Some(b) => {
            write_varint(out, b.len() as i32);
            out.extend_from_slice(b);
        }
    }
}
