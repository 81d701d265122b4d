//! `__share_group_state` records, in Kafka's coordinator record format
//! (`share-coordinator/src/main/resources/common/message/Share*.json`, Kafka 4.4).
//!
//! Key: INT16 record type, then the key struct in the classic (non-flexible) encoding:
//! `GroupId STRING (INT16 length + UTF-8), TopicId UUID (16 bytes), Partition INT32`. Type 0 is
//! ShareSnapshotKey, type 1 ShareUpdateKey (same fields).
//!
//! Value: INT16 version 0, then the value struct in the flexible encoding (compact arrays, tagged-field
//! sections, one per struct):
//!
//! - ShareSnapshotValue (type 0): `SnapshotEpoch INT32, StateEpoch INT32, LeaderEpoch INT32,
//!   StartOffset INT64, CreateTimestamp INT64, WriteTimestamp INT64, StateBatches [StateBatch]`, tag 0
//!   `DeliveryCompleteCount INT32` (KIP-1226, default -1: written only when not -1).
//! - ShareUpdateValue (type 1): `SnapshotEpoch INT32, LeaderEpoch INT32, StartOffset INT64,
//!   StateBatches [StateBatch]`, tag 0 `DeliveryCompleteCount INT32` (default -1).
//! - StateBatch: `FirstOffset INT64, LastOffset INT64, DeliveryState INT8, DeliveryCount INT16` and an empty
//!   tagged-field section.
//!
//! A missing value is a tombstone (DeleteShareGroupState). Decoding never panics and never allocates more
//! than the input could hold: an array length is checked against the bytes left (a batch takes 20 bytes).

use bytes::{BufMut, Bytes, BytesMut};
use uuid::Uuid;

use crate::coordinator::SharePartitionKey;
use crate::state::{DeliveryState, StateBatch};

/// Record type (key version) of ShareSnapshot.
pub const SHARE_SNAPSHOT_RECORD_TYPE: i16 = 0;
/// Record type (key version) of ShareUpdate.
pub const SHARE_UPDATE_RECORD_TYPE: i16 = 1;
/// Bytes of one encoded StateBatch (two INT64, INT8, INT16, an empty tagged-field section).
const STATE_BATCH_BYTES: usize = 8 + 8 + 1 + 2 + 1;

/// The full state of a share-partition at one write (ShareSnapshotValue v0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShareSnapshotValue {
    /// Counts the snapshots of this key (0 for the first); ShareUpdates refer to it.
    pub snapshot_epoch: i32,
    /// The state epoch.
    pub state_epoch: i32,
    /// The leader epoch of the share-partition's last writer (-1 none yet).
    pub leader_epoch: i32,
    /// The share-partition start offset.
    pub start_offset: i64,
    /// Offsets at or above the start offset whose delivery is complete (tag 0, KIP-1226); -1 unknown.
    pub delivery_complete_count: i32,
    /// When the state was first created (initialized), ms since the epoch.
    pub create_timestamp: i64,
    /// When this snapshot was written, ms since the epoch.
    pub write_timestamp: i64,
    /// The state batches, non-overlapping, ascending.
    pub state_batches: Vec<StateBatch>,
}

/// A delta over the last snapshot (ShareUpdateValue v0). Runnel reads these (Kafka writes them) but writes
/// full snapshots only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShareUpdateValue {
    /// The snapshot epoch of the snapshot this update applies to.
    pub snapshot_epoch: i32,
    /// The leader epoch of the writer (-1 unchanged).
    pub leader_epoch: i32,
    /// The new start offset, or -1 if unchanged.
    pub start_offset: i64,
    /// Tag 0, KIP-1226; -1 unknown.
    pub delivery_complete_count: i32,
    /// The batches that changed.
    pub state_batches: Vec<StateBatch>,
}

/// One `__share_group_state` record; `None` values are tombstones.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShareRecord {
    /// Type 0: the full state of `key`.
    Snapshot {
        /// The share-partition.
        key: SharePartitionKey,
        /// The state; `None` deletes the key.
        value: Option<ShareSnapshotValue>,
    },
    /// Type 1: an incremental update of `key`.
    Update {
        /// The share-partition.
        key: SharePartitionKey,
        /// The update; `None` deletes the key.
        value: Option<ShareUpdateValue>,
    },
}

impl ShareRecord {
    /// The share-partition this record is about.
    pub fn key(&self) -> &SharePartitionKey {
        match self {
            ShareRecord::Snapshot { key, .. } | ShareRecord::Update { key, .. } => key,
        }
    }
}

/// Why a record could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecordDecodeError {
    /// The input ended inside a field.
    #[error("record truncated")]
    Truncated,
    /// A key whose record type is neither 0 (ShareSnapshot) nor 1 (ShareUpdate).
    #[error("unknown share-state record type {0}")]
    UnknownRecordType(i16),
    /// A value whose version is not 0.
    #[error("unknown share-state value version {0}")]
    UnknownValueVersion(i16),
    /// A field that does not parse: a negative length, invalid UTF-8, a delivery state other than 0, 2, 4,
    /// an over-long varint, or bytes left after the value.
    #[error("malformed share-state record: {0}")]
    Malformed(&'static str),
}

/// Encodes `record` as a `(key, value)` pair; `value` is `None` for a tombstone.
pub fn encode_record(record: &ShareRecord) -> (Bytes, Option<Bytes>) {
    let (record_type, key) = match record {
        ShareRecord::Snapshot { key, .. } => (SHARE_SNAPSHOT_RECORD_TYPE, key),
        ShareRecord::Update { key, .. } => (SHARE_UPDATE_RECORD_TYPE, key),
    };
    let mut k = BytesMut::new();
    k.put_i16(record_type);
    // A STRING holds at most i16::MAX bytes: longer group ids (Kafka refuses them) are cut at a char boundary.
    let mut len = key.group_id.len().min(i16::MAX as usize);
    while !key.group_id.is_char_boundary(len) {
        len -= 1;
    }
    k.put_i16(len as i16);
    k.put_slice(&key.group_id.as_bytes()[..len]);
    k.put_slice(key.topic_id.as_bytes());
    k.put_i32(key.partition);
    let value = match record {
        ShareRecord::Snapshot { value, .. } => value.as_ref().map(|v| {
            let mut b = BytesMut::new();
            b.put_i16(0);
            b.put_i32(v.snapshot_epoch);
            b.put_i32(v.state_epoch);
            b.put_i32(v.leader_epoch);
            b.put_i64(v.start_offset);
            b.put_i64(v.create_timestamp);
            b.put_i64(v.write_timestamp);
            put_batches(&mut b, &v.state_batches);
            put_delivery_complete_count(&mut b, v.delivery_complete_count);
            b.freeze()
        }),
        ShareRecord::Update { value, .. } => value.as_ref().map(|v| {
            let mut b = BytesMut::new();
            b.put_i16(0);
            b.put_i32(v.snapshot_epoch);
            b.put_i32(v.leader_epoch);
            b.put_i64(v.start_offset);
            put_batches(&mut b, &v.state_batches);
            put_delivery_complete_count(&mut b, v.delivery_complete_count);
            b.freeze()
        }),
    };
    (k.freeze(), value)
}

fn put_batches(b: &mut BytesMut, batches: &[StateBatch]) {
    put_uvarint(b, batches.len() as u64 + 1);
    for s in batches {
        b.put_i64(s.first_offset);
        b.put_i64(s.last_offset);
        b.put_i8(s.delivery_state.id());
        b.put_i16(s.delivery_count);
        put_uvarint(b, 0);
    }
}

/// The top-level tagged-field section: tag 0 when the count is not its default (-1).
fn put_delivery_complete_count(b: &mut BytesMut, count: i32) {
    if count == -1 {
        put_uvarint(b, 0);
    } else {
        put_uvarint(b, 1);
        put_uvarint(b, 0);
        put_uvarint(b, 4);
        b.put_i32(count);
    }
}

fn put_uvarint(b: &mut BytesMut, mut v: u64) {
    while v >= 0x80 {
        b.put_u8((v as u8) | 0x80);
        v >>= 7;
    }
    b.put_u8(v as u8);
}

/// Decodes a `__share_group_state` record from its key and value (`None`: a tombstone).
///
/// Errors: [`RecordDecodeError::UnknownRecordType`] for a key type other than 0 and 1 (the loader skips
/// those), [`RecordDecodeError::UnknownValueVersion`], [`RecordDecodeError::Truncated`] and
/// [`RecordDecodeError::Malformed`] for bad bytes.
pub fn decode_record(key: &[u8], value: Option<&[u8]>) -> Result<ShareRecord, RecordDecodeError> {
    let mut r = Reader { buf: key };
    let record_type = r.i16()?;
    if record_type != SHARE_SNAPSHOT_RECORD_TYPE && record_type != SHARE_UPDATE_RECORD_TYPE {
        return Err(RecordDecodeError::UnknownRecordType(record_type));
    }
    let len = r.i16()?;
    let len = usize::try_from(len).map_err(|_| RecordDecodeError::Malformed("null group id"))?;
    let group_id = std::str::from_utf8(r.take(len)?)
        .map_err(|_| RecordDecodeError::Malformed("group id is not UTF-8"))?
        .to_string();
    let topic_id = Uuid::from_slice(r.take(16)?).map_err(|_| RecordDecodeError::Truncated)?;
    let partition = r.i32()?;
    r.end()?;
    let key = SharePartitionKey {
        group_id,
        topic_id,
        partition,
    };
    let Some(value) = value else {
        return Ok(match record_type {
            SHARE_SNAPSHOT_RECORD_TYPE => ShareRecord::Snapshot { key, value: None },
            _ => ShareRecord::Update { key, value: None },
        });
    };
    let mut r = Reader { buf: value };
    let version = r.i16()?;
    if version != 0 {
        return Err(RecordDecodeError::UnknownValueVersion(version));
    }
    let record = if record_type == SHARE_SNAPSHOT_RECORD_TYPE {
        let snapshot_epoch = r.i32()?;
        let state_epoch = r.i32()?;
        let leader_epoch = r.i32()?;
        let start_offset = r.i64()?;
        let create_timestamp = r.i64()?;
        let write_timestamp = r.i64()?;
        let state_batches = r.batches()?;
        let delivery_complete_count = r.top_level_tags()?;
        let value = ShareSnapshotValue {
            snapshot_epoch,
            state_epoch,
            leader_epoch,
            start_offset,
            delivery_complete_count,
            create_timestamp,
            write_timestamp,
            state_batches,
        };
        ShareRecord::Snapshot {
            key,
            value: Some(value),
        }
    } else {
        let snapshot_epoch = r.i32()?;
        let leader_epoch = r.i32()?;
        let start_offset = r.i64()?;
        let state_batches = r.batches()?;
        let delivery_complete_count = r.top_level_tags()?;
        let value = ShareUpdateValue {
            snapshot_epoch,
            leader_epoch,
            start_offset,
            delivery_complete_count,
            state_batches,
        };
        ShareRecord::Update {
            key,
            value: Some(value),
        }
    };
    r.end()?;
    Ok(record)
}

/// A bounds-checked cursor over a record's bytes.
struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], RecordDecodeError> {
        if n > self.buf.len() {
            return Err(RecordDecodeError::Truncated);
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], RecordDecodeError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    fn i8(&mut self) -> Result<i8, RecordDecodeError> {
        Ok(i8::from_be_bytes(self.array()?))
    }

    fn i16(&mut self) -> Result<i16, RecordDecodeError> {
        Ok(i16::from_be_bytes(self.array()?))
    }

    fn i32(&mut self) -> Result<i32, RecordDecodeError> {
        Ok(i32::from_be_bytes(self.array()?))
    }

    fn i64(&mut self) -> Result<i64, RecordDecodeError> {
        Ok(i64::from_be_bytes(self.array()?))
    }

    fn uvarint(&mut self) -> Result<u64, RecordDecodeError> {
        let mut v = 0u64;
        for shift in (0..35).step_by(7) {
            let byte = self.take(1)?[0];
            v |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(RecordDecodeError::Malformed("varint too long"))
    }

    fn end(&self) -> Result<(), RecordDecodeError> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            Err(RecordDecodeError::Malformed("trailing bytes"))
        }
    }

    /// A compact array of StateBatch (non-nullable), its length capped by the bytes left.
    fn batches(&mut self) -> Result<Vec<StateBatch>, RecordDecodeError> {
        let n = match self.uvarint()? {
            0 => return Err(RecordDecodeError::Malformed("null state batches")),
            n => (n - 1) as usize,
        };
        if n > self.buf.len() / STATE_BATCH_BYTES {
            return Err(RecordDecodeError::Truncated);
        }
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let first_offset = self.i64()?;
            let last_offset = self.i64()?;
            let delivery_state = DeliveryState::from_id(self.i8()?)
                .ok_or(RecordDecodeError::Malformed("unknown delivery state"))?;
            let delivery_count = self.i16()?;
            self.skip_tags()?;
            out.push(StateBatch {
                first_offset,
                last_offset,
                delivery_state,
                delivery_count,
            });
        }
        Ok(out)
    }

    /// Skips a tagged-field section.
    fn skip_tags(&mut self) -> Result<(), RecordDecodeError> {
        let n = self.uvarint()?;
        for _ in 0..n {
            self.uvarint()?;
            let size = self.uvarint()?;
            self.take(usize::try_from(size).map_err(|_| RecordDecodeError::Truncated)?)?;
        }
        Ok(())
    }

    /// The top-level tagged-field section of a value: tag 0 DeliveryCompleteCount (-1 when absent); other
    /// tags are skipped.
    fn top_level_tags(&mut self) -> Result<i32, RecordDecodeError> {
        let mut count = -1;
        let n = self.uvarint()?;
        for _ in 0..n {
            let tag = self.uvarint()?;
            let size =
                usize::try_from(self.uvarint()?).map_err(|_| RecordDecodeError::Truncated)?;
            let data = self.take(size)?;
            if tag == 0 {
                let bytes: [u8; 4] = data
                    .try_into()
                    .map_err(|_| RecordDecodeError::Malformed("DeliveryCompleteCount size"))?;
                count = i32::from_be_bytes(bytes);
            }
        }
        Ok(count)
    }
}

#[cfg(test)]
#[path = "records_tests.rs"]
mod tests;
