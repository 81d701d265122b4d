//! `__transaction_state` record format: Kafka's `TransactionLogKey` and `TransactionLogValue`
//! (`transaction-coordinator/src/main/resources/common/message/`).
//!
//! Every key and value starts with a big-endian INT16 version.
//!
//! - Key version 0 — `TransactionalId: STRING` (INT16 length + UTF-8). Other key versions are other
//!   coordinators' records: [`decode_transaction_record`] reports [`RecordDecodeError::UnknownKeyVersion`].
//! - Value version 0 (non-flexible): `ProducerId INT64, ProducerEpoch INT16, TransactionTimeoutMs INT32,
//!   TransactionStatus INT8, TransactionPartitions NULLABLE [Topic STRING, PartitionIds [INT32]],
//!   TransactionLastUpdateTimestampMs INT64, TransactionStartTimestampMs INT64`. Arrays: INT32 count (-1 = null).
//! - Value version 1 (flexible): the same fields with compact encodings (unsigned-varint length + 1, 0 = null),
//!   an empty tagged-field section after each partitions entry, and top-level tagged fields
//!   `0: PreviousProducerId INT64` (default -1), `1: NextProducerId INT64` (default -1),
//!   `2: ClientTransactionVersion INT16` (default 0), each written only when not the default. Unknown tags
//!   (e.g. newer Kafka's tag 3) are skipped on decode.
//! - A null value is a tombstone: the transactional id was expired.
//!
//! The value version follows the cluster's `transaction.version` ([`super::TransactionVersion::log_value_version`]).
//! Partitions are written only for states other than Empty and are ignored when decoding an Empty value, as
//! Kafka does. Decoding never trusts a length beyond the bytes that remain.

use std::collections::{BTreeMap, BTreeSet};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use types::{ProducerEpoch, ProducerId};

use super::metadata::{TopicPartition, TransactionState, TransactionVersion};
pub use crate::records::RecordDecodeError;

/// The only `TransactionLogKey` version.
pub const TRANSACTION_LOG_KEY_VERSION: i16 = 0;

/// One `__transaction_state` record: a transactional id and its state, or a tombstone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransactionLogRecord {
    /// The transactional id (the key).
    pub transactional_id: String,
    /// The value; `None` for a tombstone.
    pub value: Option<TransactionLogValue>,
}

/// A `TransactionLogValue`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransactionLogValue {
    /// Value version: 0 (non-flexible) or 1 (flexible, with tagged fields).
    pub version: i16,
    /// Producer id in use.
    pub producer_id: ProducerId,
    /// Tag 0 (v1): previous producer id, -1 when none. Not stored by v0 (decodes as -1).
    pub previous_producer_id: ProducerId,
    /// Tag 1 (v1): TV2's next producer id, -1 when none. Not stored by v0.
    pub next_producer_id: ProducerId,
    /// Producer epoch.
    pub producer_epoch: ProducerEpoch,
    /// Transaction timeout, ms.
    pub transaction_timeout_ms: i32,
    /// State (stored as its id).
    pub state: TransactionState,
    /// Partitions of the transaction (empty for Empty; written as null then).
    pub partitions: BTreeSet<TopicPartition>,
    /// Last update, ms since the epoch.
    pub last_update_timestamp_ms: i64,
    /// Transaction start, ms since the epoch (-1 when none).
    pub start_timestamp_ms: i64,
    /// Tag 2 (v1): the client's transaction version, default 0.
    pub client_transaction_version: TransactionVersion,
}

/// Encodes `record` as the `(key, value)` of a `__transaction_state` record (`value` is `None` for a
/// tombstone). Strings longer than `i16::MAX` bytes cannot be stored in the key: they are truncated at a
/// character boundary rather than panic (the coordinator never produces them).
pub fn encode_transaction_record(record: &TransactionLogRecord) -> (Bytes, Option<Bytes>) {
    let mut k = BytesMut::new();
    k.put_i16(TRANSACTION_LOG_KEY_VERSION);
    put_string(&mut k, &record.transactional_id);
    let v = record.value.as_ref().map(encode_value);
    (k.freeze(), v)
}

fn encode_value(v: &TransactionLogValue) -> Bytes {
    let flexible = v.version >= 1;
    let mut b = BytesMut::new();
    b.put_i16(if flexible { 1 } else { 0 });
    b.put_i64(v.producer_id.0);
    b.put_i16(v.producer_epoch.0);
    b.put_i32(v.transaction_timeout_ms);
    b.put_i8(v.state.id());
    let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for tp in &v.partitions {
        by_topic.entry(&tp.topic).or_default().push(tp.partition);
    }
    let null = v.state == TransactionState::Empty;
    if flexible {
        if null {
            put_uvarint(&mut b, 0);
        } else {
            put_uvarint(&mut b, by_topic.len() as u64 + 1);
            for (topic, parts) in &by_topic {
                put_compact_string(&mut b, topic);
                put_uvarint(&mut b, parts.len() as u64 + 1);
                parts.iter().for_each(|p| b.put_i32(*p));
                put_uvarint(&mut b, 0);
            }
        }
    } else if null {
        b.put_i32(-1);
    } else {
        b.put_i32(by_topic.len() as i32);
        for (topic, parts) in &by_topic {
            put_string(&mut b, topic);
            b.put_i32(parts.len() as i32);
            parts.iter().for_each(|p| b.put_i32(*p));
        }
    }
    b.put_i64(v.last_update_timestamp_ms);
    b.put_i64(v.start_timestamp_ms);
    if flexible {
        let mut tags: Vec<(u64, Vec<u8>)> = Vec::new();
        if !v.previous_producer_id.is_none() {
            tags.push((0, v.previous_producer_id.0.to_be_bytes().to_vec()));
        }
        if !v.next_producer_id.is_none() {
            tags.push((1, v.next_producer_id.0.to_be_bytes().to_vec()));
        }
        if v.client_transaction_version.0 != 0 {
            tags.push((2, v.client_transaction_version.0.to_be_bytes().to_vec()));
        }
        put_uvarint(&mut b, tags.len() as u64);
        for (tag, data) in tags {
            put_uvarint(&mut b, tag);
            put_uvarint(&mut b, data.len() as u64);
            b.put_slice(&data);
        }
    }
    b.freeze()
}

/// Decodes a `__transaction_state` record from its key and value (`None` = tombstone).
///
/// Errors: [`RecordDecodeError::UnknownKeyVersion`] for keys other than version 0 (not ours: skip them),
/// [`RecordDecodeError::UnknownValueVersion`] for values other than 0 and 1, `Malformed` for truncated bytes,
/// negative lengths or an unknown state id, `InvalidUtf8` for a bad string.
pub fn decode_transaction_record(
    key: &[u8],
    value: Option<&[u8]>,
) -> Result<TransactionLogRecord, RecordDecodeError> {
    let mut k = Reader(key);
    let version = k.i16()?;
    if version != TRANSACTION_LOG_KEY_VERSION {
        return Err(RecordDecodeError::UnknownKeyVersion(version));
    }
    let transactional_id = k.string()?;
    let value = match value {
        None => None,
        Some(v) => Some(decode_value(v)?),
    };
    Ok(TransactionLogRecord {
        transactional_id,
        value,
    })
}

fn decode_value(bytes: &[u8]) -> Result<TransactionLogValue, RecordDecodeError> {
    let mut r = Reader(bytes);
    let version = r.i16()?;
    if !(0..=1).contains(&version) {
        return Err(RecordDecodeError::UnknownValueVersion {
            what: "TransactionLogValue",
            version,
        });
    }
    let flexible = version == 1;
    let producer_id = ProducerId(r.i64()?);
    let producer_epoch = ProducerEpoch(r.i16()?);
    let transaction_timeout_ms = r.i32()?;
    let state = TransactionState::from_id(r.i8()?)
        .ok_or(RecordDecodeError::Malformed("unknown transaction state id"))?;
    let mut partitions = BTreeSet::new();
    let topics = if flexible {
        r.compact_len()?
    } else {
        r.len32()?
    };
    for _ in 0..topics.unwrap_or(0) {
        let topic = if flexible {
            r.compact_string()?
        } else {
            r.string()?
        };
        let n = if flexible {
            r.compact_len()?
        } else {
            r.len32()?
        };
        for _ in 0..n.unwrap_or(0) {
            partitions.insert(TopicPartition::new(topic.clone(), r.i32()?));
        }
        if flexible {
            r.skip_tagged_fields(|_, _| Ok(()))?;
        }
    }
    if state == TransactionState::Empty {
        partitions.clear();
    }
    let mut v = TransactionLogValue {
        version,
        producer_id,
        previous_producer_id: ProducerId::NONE,
        next_producer_id: ProducerId::NONE,
        producer_epoch,
        transaction_timeout_ms,
        state,
        partitions,
        last_update_timestamp_ms: r.i64()?,
        start_timestamp_ms: r.i64()?,
        client_transaction_version: TransactionVersion::TV_0,
    };
    if flexible {
        r.skip_tagged_fields(|tag, mut data| {
            match tag {
                0 => v.previous_producer_id = ProducerId(data.i64()?),
                1 => v.next_producer_id = ProducerId(data.i64()?),
                2 => v.client_transaction_version = TransactionVersion(data.i16()?),
                _ => {}
            }
            Ok(())
        })?;
    }
    Ok(v)
}

fn put_string(b: &mut BytesMut, s: &str) {
    let s = truncate(s, i16::MAX as usize);
    b.put_i16(s.len() as i16);
    b.put_slice(s.as_bytes());
}

fn put_compact_string(b: &mut BytesMut, s: &str) {
    let s = truncate(s, i16::MAX as usize);
    put_uvarint(b, s.len() as u64 + 1);
    b.put_slice(s.as_bytes());
}

fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Kafka's unsigned varint (7 bits per byte, low first).
fn put_uvarint(b: &mut BytesMut, mut v: u64) {
    while v >= 0x80 {
        b.put_u8((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    b.put_u8(v as u8);
}

/// A bounds-checked cursor.
struct Reader<'a>(&'a [u8]);

const TRUNCATED: RecordDecodeError = RecordDecodeError::Malformed("record truncated");

impl<'a> Reader<'a> {
    fn need(&self, n: usize) -> Result<(), RecordDecodeError> {
        if self.0.remaining() < n {
            return Err(TRUNCATED);
        }
        Ok(())
    }

    fn i8(&mut self) -> Result<i8, RecordDecodeError> {
        self.need(1)?;
        Ok(self.0.get_i8())
    }

    fn i16(&mut self) -> Result<i16, RecordDecodeError> {
        self.need(2)?;
        Ok(self.0.get_i16())
    }

    fn i32(&mut self) -> Result<i32, RecordDecodeError> {
        self.need(4)?;
        Ok(self.0.get_i32())
    }

    fn i64(&mut self) -> Result<i64, RecordDecodeError> {
        self.need(8)?;
        Ok(self.0.get_i64())
    }

    fn uvarint(&mut self) -> Result<u64, RecordDecodeError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.i8()? as u8;
            v |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(RecordDecodeError::Malformed("varint too long"))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], RecordDecodeError> {
        self.need(n)?;
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Ok(head)
    }

    fn utf8(&mut self, n: usize) -> Result<String, RecordDecodeError> {
        let bytes = self.take(n)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| RecordDecodeError::InvalidUtf8)
    }

    /// INT16-length STRING (non-null).
    fn string(&mut self) -> Result<String, RecordDecodeError> {
        let n = self.i16()?;
        let n = usize::try_from(n).map_err(|_| RecordDecodeError::Malformed("null string"))?;
        self.utf8(n)
    }

    /// Compact (varint length + 1) STRING (non-null).
    fn compact_string(&mut self) -> Result<String, RecordDecodeError> {
        match self.compact_len()? {
            Some(n) => self.utf8(n),
            None => Err(RecordDecodeError::Malformed("null string")),
        }
    }

    /// INT32 array count; -1 = null. Counts beyond the remaining bytes are rejected.
    fn len32(&mut self) -> Result<Option<usize>, RecordDecodeError> {
        let n = self.i32()?;
        if n == -1 {
            return Ok(None);
        }
        let n = usize::try_from(n).map_err(|_| RecordDecodeError::Malformed("negative length"))?;
        self.need(n)?;
        Ok(Some(n))
    }

    /// Compact length (varint, 0 = null). Lengths beyond the remaining bytes are rejected.
    fn compact_len(&mut self) -> Result<Option<usize>, RecordDecodeError> {
        let n = self.uvarint()?;
        if n == 0 {
            return Ok(None);
        }
        let n = usize::try_from(n - 1).map_err(|_| TRUNCATED)?;
        self.need(n)?;
        Ok(Some(n))
    }

    /// A tagged-field section: each field's (tag, bytes) goes to `on_field`.
    fn skip_tagged_fields(
        &mut self,
        mut on_field: impl FnMut(u64, Reader<'a>) -> Result<(), RecordDecodeError>,
    ) -> Result<(), RecordDecodeError> {
        let count = self.uvarint()?;
        for _ in 0..count {
            let tag = self.uvarint()?;
            let size = usize::try_from(self.uvarint()?).map_err(|_| TRUNCATED)?;
            let data = self.take(size)?;
            on_field(tag, Reader(data))?;
        }
        Ok(())
    }
}
