//! `__consumer_offsets` record formats: keys and values of committed offsets and classic group metadata.
//!
//! Byte layout (Kafka's coordinator record schemas `OffsetCommitKey`, `OffsetCommitValue`, `GroupMetadataKey`,
//! `GroupMetadataValue` in `group-coordinator/src/main/resources/common/message/`). Every key and value starts
//! with a big-endian INT16 version, followed by the versioned struct in Kafka's message encoding:
//!
//! - key version 0 or 1 — OffsetCommitKey: `group: STRING, topic: STRING, partition: INT32`. We write version 1.
//! - key version 2 — GroupMetadataKey: `group: STRING`.
//! - key versions 3 and 5–8 — consumer group records (KIP-848), see `consumer::records`.
//! - other key versions — records of other group types (share/streams groups, and consumer-group types 4 and 16
//!   we do not keep): [`decode_record`] reports [`RecordDecodeError::UnknownKeyVersion`] so the loader can skip
//!   them.
//! - OffsetCommitValue v0: `offset INT64, metadata STRING, commitTimestamp INT64`; v1 adds `expireTimestamp INT64`
//!   after commitTimestamp; v2 is v0; v3: `offset INT64, leaderEpoch INT32, metadata STRING, commitTimestamp INT64`;
//!   v4 is v3 in flexible encoding (compact strings, tagged fields). We write v3, or v1 when an explicit expire
//!   timestamp exists (OffsetCommit v2–v4 `retention_time_ms`), as Kafka does.
//! - GroupMetadataValue v0: `protocolType STRING, generation INT32, protocol NULLABLE_STRING,
//!   leader NULLABLE_STRING, members [memberId STRING, clientId STRING, clientHost STRING, sessionTimeout INT32,
//!   subscription BYTES, assignment BYTES]`; v1 adds member `rebalanceTimeout INT32` before sessionTimeout; v2 adds
//!   `currentStateTimestamp INT64` before members; v3 adds member `groupInstanceId NULLABLE_STRING` after memberId;
//!   v4 is v3 in flexible encoding. We write v3.
//! - A value of `None` (null record value) is a tombstone: the offset or group is deleted.
//!
//! STRING is INT16 length + UTF-8 (NULLABLE: length -1 = null); BYTES is INT32 length + bytes; arrays are INT32
//! count + elements. Decoding never trusts a length beyond the bytes that remain.

use bytes::{BufMut, Bytes, BytesMut};
use types::{LeaderEpoch, Offset};

/// One record of `__consumer_offsets` as the coordinator produces and replays it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GroupRecord {
    /// A committed offset of `group` for `topic`-`partition`; `value: None` deletes it (tombstone).
    OffsetCommit {
        /// Group id.
        group: String,
        /// Topic name.
        topic: String,
        /// Partition index.
        partition: i32,
        /// The commit, or `None` for a tombstone.
        value: Option<OffsetCommitValue>,
    },
    /// The classic group's metadata; `value: None` deletes the group (tombstone).
    GroupMetadata {
        /// Group id.
        group: String,
        /// The group's metadata, or `None` for a tombstone.
        value: Option<GroupMetadataValue>,
    },
    /// A consumer group's record (KIP-848; key versions 3, 5–8).
    Consumer(Box<crate::consumer::ConsumerRecord>),
    /// A share group's record (KIP-932; key versions 10–11).
    Share(Box<crate::share_group::records::ShareRecord>),
}

impl GroupRecord {
    /// The group id this record belongs to.
    pub fn group_id(&self) -> &str {
        match self {
            GroupRecord::OffsetCommit { group, .. } | GroupRecord::GroupMetadata { group, .. } => {
                group
            }
            GroupRecord::Consumer(r) => r.group_id(),
            GroupRecord::Share(r) => r.group_id(),
        }
    }
}

/// A committed offset (OffsetCommitValue).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffsetCommitValue {
    /// The committed offset (the next record the group will consume).
    pub offset: Offset,
    /// Leader epoch of the last consumed record, [`LeaderEpoch::NONE`] when unknown (OffsetCommit v6+
    /// `committed_leader_epoch`).
    pub leader_epoch: LeaderEpoch,
    /// Client metadata string, round-tripped verbatim ("" when the client sent null).
    pub metadata: String,
    /// Broker time of the commit, ms since the epoch.
    pub commit_timestamp: i64,
    /// Explicit expiry time (ms since the epoch) from OffsetCommit v2–v4 `retention_time_ms`, -1 when none.
    pub expire_timestamp: i64,
}

/// A classic group's metadata (GroupMetadataValue).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupMetadataValue {
    /// Protocol type, e.g. "consumer"; "" when the group never had a member.
    pub protocol_type: String,
    /// Generation id.
    pub generation: i32,
    /// Selected protocol (assignor) name; `None` when the group is empty.
    pub protocol: Option<String>,
    /// Leader member id; `None` when the group is empty.
    pub leader: Option<String>,
    /// Time the group entered its current state, ms since the epoch (-1 unknown; v2+).
    pub current_state_timestamp: i64,
    /// Members with their subscription (metadata of the selected protocol) and assignment.
    pub members: Vec<MemberMetadataValue>,
}

/// One member inside [`GroupMetadataValue`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberMetadataValue {
    /// Member id.
    pub member_id: String,
    /// `group.instance.id` of a static member (KIP-345), v3+.
    pub group_instance_id: Option<String>,
    /// Client id from the JoinGroup request header.
    pub client_id: String,
    /// Client address as text.
    pub client_host: String,
    /// Rebalance timeout, ms (v1+; v0 records use the session timeout).
    pub rebalance_timeout: i32,
    /// Session timeout, ms.
    pub session_timeout: i32,
    /// The member's metadata for the selected protocol.
    pub subscription: Bytes,
    /// The member's assignment from the leader.
    pub assignment: Bytes,
}

/// Error decoding a `__consumer_offsets` record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordDecodeError {
    /// The key's version denotes a record type this coordinator does not handle (share and streams group
    /// records, consumer-group types 4 and 16). Loaders skip such records.
    #[error("unknown record key version {0}")]
    UnknownKeyVersion(i16),
    /// The value's version is not one of the known versions for its key type.
    #[error("unknown {what} value version {version}")]
    UnknownValueVersion {
        /// Which value type.
        what: &'static str,
        /// The version read.
        version: i16,
    },
    /// The bytes end before the struct does, or a length is negative/invalid.
    #[error("malformed record: {0}")]
    Malformed(&'static str),
    /// A string is not UTF-8.
    #[error("record string is not valid UTF-8")]
    InvalidUtf8,
}

/// Key version written for offset commits (OffsetCommitKey).
pub const OFFSET_COMMIT_KEY_VERSION: i16 = 1;
/// Key version of group metadata (GroupMetadataKey).
pub const GROUP_METADATA_KEY_VERSION: i16 = 2;
/// Largest string the non-flexible record encoding can carry (INT16 length), in bytes.
pub const MAX_RECORD_STRING_BYTES: usize = i16::MAX as usize;

/// Encodes a record as the `(key, value)` of a `__consumer_offsets` record; `value` is `None` for tombstones.
///
/// Strings longer than [`MAX_RECORD_STRING_BYTES`] cannot be represented; the coordinator never produces them
/// (it rejects such inputs), and this function truncates them at a character boundary rather than panic.
pub fn encode_record(record: &GroupRecord) -> (Bytes, Option<Bytes>) {
    match record {
        GroupRecord::OffsetCommit {
            group,
            topic,
            partition,
            value,
        } => {
            let mut k = BytesMut::new();
            k.put_i16(OFFSET_COMMIT_KEY_VERSION);
            put_string(&mut k, group);
            put_string(&mut k, topic);
            k.put_i32(*partition);
            let v = value.as_ref().map(|v| {
                let mut b = BytesMut::new();
                if v.expire_timestamp >= 0 {
                    b.put_i16(1);
                    b.put_i64(v.offset.0);
                    put_string(&mut b, &v.metadata);
                    b.put_i64(v.commit_timestamp);
                    b.put_i64(v.expire_timestamp);
                } else {
                    b.put_i16(3);
                    b.put_i64(v.offset.0);
                    b.put_i32(v.leader_epoch.0);
                    put_string(&mut b, &v.metadata);
                    b.put_i64(v.commit_timestamp);
                }
                b.freeze()
            });
            (k.freeze(), v)
        }
        GroupRecord::GroupMetadata { group, value } => {
            let mut k = BytesMut::new();
            k.put_i16(GROUP_METADATA_KEY_VERSION);
            put_string(&mut k, group);
            let v = value.as_ref().map(|v| {
                let mut b = BytesMut::new();
                b.put_i16(3);
                put_string(&mut b, &v.protocol_type);
                b.put_i32(v.generation);
                put_nullable_string(&mut b, v.protocol.as_deref());
                put_nullable_string(&mut b, v.leader.as_deref());
                b.put_i64(v.current_state_timestamp);
                b.put_i32(v.members.len() as i32);
                for m in &v.members {
                    put_string(&mut b, &m.member_id);
                    put_nullable_string(&mut b, m.group_instance_id.as_deref());
                    put_string(&mut b, &m.client_id);
                    put_string(&mut b, &m.client_host);
                    b.put_i32(m.rebalance_timeout);
                    b.put_i32(m.session_timeout);
                    put_bytes(&mut b, &m.subscription);
                    put_bytes(&mut b, &m.assignment);
                }
                b.freeze()
            });
            (k.freeze(), v)
        }
        GroupRecord::Consumer(r) => crate::consumer::records::encode(r),
        GroupRecord::Share(r) => crate::share_group::records::encode(r),
    }
}

/// Decodes a `__consumer_offsets` record. `value: None` (null value) decodes as a tombstone.
///
/// Errors: [`RecordDecodeError::UnknownKeyVersion`] for other coordinators' record types (skip them);
/// any other error means corrupt bytes.
pub fn decode_record(key: &[u8], value: Option<&[u8]>) -> Result<GroupRecord, RecordDecodeError> {
    let mut kr = Reader::new(key, false);
    let key_version = kr.i16()?;
    match key_version {
        0 | 1 => {
            let group = kr.string()?;
            let topic = kr.string()?;
            let partition = kr.i32()?;
            let value = match value {
                None => None,
                Some(v) => Some(decode_offset_value(v)?),
            };
            Ok(GroupRecord::OffsetCommit {
                group,
                topic,
                partition,
                value,
            })
        }
        2 => {
            let group = kr.string()?;
            let value = match value {
                None => None,
                Some(v) => Some(decode_group_value(v)?),
            };
            Ok(GroupRecord::GroupMetadata { group, value })
        }
        share @ (crate::share_group::records::MEMBER_METADATA_TYPE
        | crate::share_group::records::GROUP_METADATA_TYPE) => {
            crate::share_group::records::decode(share, &mut kr, value)
                .map(|r| GroupRecord::Share(Box::new(r)))
        }
        other => crate::consumer::records::decode(other, &mut kr, value)
            .map(|r| GroupRecord::Consumer(Box::new(r))),
    }
}

fn decode_offset_value(v: &[u8]) -> Result<OffsetCommitValue, RecordDecodeError> {
    let version = Reader::new(v, false).i16()?;
    if !(0..=4).contains(&version) {
        return Err(RecordDecodeError::UnknownValueVersion {
            what: "OffsetCommitValue",
            version,
        });
    }
    let mut r = Reader::new(&v[2..], version >= 4);
    let offset = Offset(r.i64()?);
    let leader_epoch = LeaderEpoch(if version >= 3 { r.i32()? } else { -1 });
    let metadata = r.string()?;
    let commit_timestamp = r.i64()?;
    let expire_timestamp = if version == 1 { r.i64()? } else { -1 };
    r.tagged_fields()?;
    Ok(OffsetCommitValue {
        offset,
        leader_epoch,
        metadata,
        commit_timestamp,
        expire_timestamp,
    })
}

fn decode_group_value(v: &[u8]) -> Result<GroupMetadataValue, RecordDecodeError> {
    let version = Reader::new(v, false).i16()?;
    if !(0..=4).contains(&version) {
        return Err(RecordDecodeError::UnknownValueVersion {
            what: "GroupMetadataValue",
            version,
        });
    }
    let mut r = Reader::new(&v[2..], version >= 4);
    let protocol_type = r.string()?;
    let generation = r.i32()?;
    let protocol = r.nullable_string()?;
    let leader = r.nullable_string()?;
    let current_state_timestamp = if version >= 2 { r.i64()? } else { -1 };
    let count = r.array_len()?;
    let mut members = Vec::new();
    for _ in 0..count {
        let member_id = r.string()?;
        let group_instance_id = if version >= 3 {
            r.nullable_string()?
        } else {
            None
        };
        let client_id = r.string()?;
        let client_host = r.string()?;
        let rebalance_timeout = if version >= 1 { Some(r.i32()?) } else { None };
        let session_timeout = r.i32()?;
        let subscription = r.bytes()?;
        let assignment = r.bytes()?;
        r.tagged_fields()?;
        members.push(MemberMetadataValue {
            member_id,
            group_instance_id,
            client_id,
            client_host,
            rebalance_timeout: rebalance_timeout.unwrap_or(session_timeout),
            session_timeout,
            subscription,
            assignment,
        });
    }
    r.tagged_fields()?;
    Ok(GroupMetadataValue {
        protocol_type,
        generation,
        protocol,
        leader,
        current_state_timestamp,
        members,
    })
}

fn truncated(s: &str) -> &str {
    if s.len() <= MAX_RECORD_STRING_BYTES {
        return s;
    }
    let mut end = MAX_RECORD_STRING_BYTES;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

pub(crate) fn put_string(b: &mut BytesMut, s: &str) {
    let s = truncated(s);
    b.put_i16(s.len() as i16);
    b.put_slice(s.as_bytes());
}

fn put_nullable_string(b: &mut BytesMut, s: Option<&str>) {
    match s {
        None => b.put_i16(-1),
        Some(s) => put_string(b, s),
    }
}

fn put_bytes(b: &mut BytesMut, v: &[u8]) {
    b.put_i32(v.len() as i32);
    b.put_slice(v);
}

/// Bounds-checked big-endian reader for the classic (`flexible = false`) and flexible encodings.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    flexible: bool,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8], flexible: bool) -> Self {
        Reader { buf, flexible }
    }

    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], RecordDecodeError> {
        if n > self.buf.len() {
            return Err(RecordDecodeError::Malformed("truncated"));
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    pub(crate) fn i8(&mut self) -> Result<i8, RecordDecodeError> {
        Ok(self.take(1)?[0] as i8)
    }

    pub(crate) fn i16(&mut self) -> Result<i16, RecordDecodeError> {
        let b = self.take(2)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }

    pub(crate) fn i32(&mut self) -> Result<i32, RecordDecodeError> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub(crate) fn i64(&mut self) -> Result<i64, RecordDecodeError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(i64::from_be_bytes(a))
    }

    fn uvarint(&mut self) -> Result<u64, RecordDecodeError> {
        let mut value: u64 = 0;
        for i in 0..5 {
            let b = self.take(1)?[0];
            value |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(RecordDecodeError::Malformed("varint too long"))
    }

    /// Length of a string/bytes field: `None` = null.
    fn len(&mut self, wide: bool) -> Result<Option<usize>, RecordDecodeError> {
        let n: i64 = if self.flexible {
            self.uvarint()? as i64 - 1
        } else if wide {
            i64::from(self.i32()?)
        } else {
            i64::from(self.i16()?)
        };
        if n < -1 {
            return Err(RecordDecodeError::Malformed("negative length"));
        }
        if n == -1 {
            return Ok(None);
        }
        let n = n as usize;
        if n > self.buf.len() {
            return Err(RecordDecodeError::Malformed("length beyond end of record"));
        }
        Ok(Some(n))
    }

    pub(crate) fn nullable_string(&mut self) -> Result<Option<String>, RecordDecodeError> {
        match self.len(false)? {
            None => Ok(None),
            Some(n) => {
                let b = self.take(n)?;
                String::from_utf8(b.to_vec())
                    .map(Some)
                    .map_err(|_| RecordDecodeError::InvalidUtf8)
            }
        }
    }

    pub(crate) fn string(&mut self) -> Result<String, RecordDecodeError> {
        self.nullable_string()?
            .ok_or(RecordDecodeError::Malformed("null non-nullable string"))
    }

    /// Whether every byte was read.
    pub(crate) fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    pub(crate) fn bytes(&mut self) -> Result<Bytes, RecordDecodeError> {
        match self.len(true)? {
            None => Err(RecordDecodeError::Malformed("null bytes")),
            Some(n) => Ok(Bytes::copy_from_slice(self.take(n)?)),
        }
    }

    pub(crate) fn array_len(&mut self) -> Result<usize, RecordDecodeError> {
        let n: i64 = if self.flexible {
            self.uvarint()? as i64 - 1
        } else {
            i64::from(self.i32()?)
        };
        if n < 0 {
            return Err(RecordDecodeError::Malformed("null or negative array"));
        }
        // Every element takes at least one byte: bound the count by what remains.
        if n as usize > self.buf.len() {
            return Err(RecordDecodeError::Malformed(
                "array count beyond end of record",
            ));
        }
        Ok(n as usize)
    }

    /// Reads a tagged-field section, returning the INT64 value of tag `tag` if present (other tags are
    /// skipped). Flexible encoding only.
    pub(crate) fn tagged_i64(&mut self, tag: u64) -> Result<Option<i64>, RecordDecodeError> {
        let count = self.uvarint()?;
        let mut found = None;
        for _ in 0..count {
            let t = self.uvarint()?;
            let size = self.uvarint()? as usize;
            let body = self.take(size)?;
            if t == tag && size == 8 {
                found = Some(Reader::new(body, false).i64()?);
            }
        }
        Ok(found)
    }

    /// Reads a tagged-field section, returning the body of tag `tag` if present (other tags are skipped).
    /// Flexible encoding only.
    pub(crate) fn tagged_body(&mut self, tag: u64) -> Result<Option<&'a [u8]>, RecordDecodeError> {
        let count = self.uvarint()?;
        let mut found = None;
        for _ in 0..count {
            let t = self.uvarint()?;
            let size = self.uvarint()? as usize;
            let body = self.take(size)?;
            if t == tag {
                found = Some(body);
            }
        }
        Ok(found)
    }

    /// Skips a tagged-field section (flexible versions only).
    pub(crate) fn tagged_fields(&mut self) -> Result<(), RecordDecodeError> {
        if !self.flexible {
            return Ok(());
        }
        let count = self.uvarint()?;
        for _ in 0..count {
            let _tag = self.uvarint()?;
            let size = self.uvarint()? as usize;
            self.take(size)?;
        }
        Ok(())
    }
}

/// Java's `String.hashCode()`: `s[0]*31^(n-1) + ... + s[n-1]` over UTF-16 code units, wrapping INT32.
pub fn java_string_hashcode(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

/// The `__consumer_offsets` partition that owns `group_id`: Kafka's `Utils.abs(groupId.hashCode) % n`, where
/// `Utils.abs(Integer.MIN_VALUE) == 0`. Returns 0 when `num_partitions <= 0`.
pub fn partition_for(group_id: &str, num_partitions: i32) -> i32 {
    if num_partitions <= 0 {
        return 0;
    }
    let h = java_string_hashcode(group_id);
    let abs = if h == i32::MIN { 0 } else { h.abs() };
    abs % num_partitions
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_hashcode_matches_known_values() {
        assert_eq!(java_string_hashcode(""), 0);
        assert_eq!(java_string_hashcode("a"), 97);
        assert_eq!(java_string_hashcode("hello"), 99_162_322);
        // "polygenelubricants".hashCode() == Integer.MIN_VALUE
        assert_eq!(java_string_hashcode("polygenelubricants"), i32::MIN);
        assert_eq!(partition_for("polygenelubricants", 50), 0);
        // Non-BMP characters hash as two UTF-16 surrogates.
        assert_eq!(java_string_hashcode("\u{1F600}"), 0xD83D * 31 + 0xDE00);
    }

    #[test]
    fn partition_for_negative_hash() {
        let h = java_string_hashcode("group-negative-hash-xyz");
        let expect = if h == i32::MIN { 0 } else { h.abs() % 50 };
        assert_eq!(partition_for("group-negative-hash-xyz", 50), expect);
        assert_eq!(partition_for("x", 0), 0);
    }

    #[test]
    fn offset_commit_round_trip_v3_and_v1() {
        for expire in [-1i64, 1234] {
            let rec = GroupRecord::OffsetCommit {
                group: "g".into(),
                topic: "t".into(),
                partition: 7,
                value: Some(OffsetCommitValue {
                    offset: Offset(42),
                    leader_epoch: LeaderEpoch(if expire >= 0 { -1 } else { 5 }),
                    metadata: "meta".into(),
                    commit_timestamp: 1000,
                    expire_timestamp: expire,
                }),
            };
            let (k, v) = encode_record(&rec);
            assert_eq!(&k[..2], &[0, 1]);
            assert_eq!(
                &v.as_ref().unwrap()[..2],
                if expire >= 0 { &[0, 1] } else { &[0, 3] }
            );
            assert_eq!(decode_record(&k, v.as_deref()).unwrap(), rec);
        }
    }

    #[test]
    fn group_metadata_round_trip_and_tombstone() {
        let rec = GroupRecord::GroupMetadata {
            group: "grp".into(),
            value: Some(GroupMetadataValue {
                protocol_type: "consumer".into(),
                generation: 3,
                protocol: Some("range".into()),
                leader: Some("m1".into()),
                current_state_timestamp: 99,
                members: vec![MemberMetadataValue {
                    member_id: "m1".into(),
                    group_instance_id: Some("i1".into()),
                    client_id: "c".into(),
                    client_host: "/127.0.0.1".into(),
                    rebalance_timeout: 300000,
                    session_timeout: 10000,
                    subscription: Bytes::from_static(b"sub"),
                    assignment: Bytes::new(),
                }],
            }),
        };
        let (k, v) = encode_record(&rec);
        assert_eq!(decode_record(&k, v.as_deref()).unwrap(), rec);
        let tomb = GroupRecord::GroupMetadata {
            group: "grp".into(),
            value: None,
        };
        let (k, v) = encode_record(&tomb);
        assert!(v.is_none());
        assert_eq!(decode_record(&k, None).unwrap(), tomb);
    }

    #[test]
    fn decodes_old_and_flexible_versions() {
        // GroupMetadataValue v0: no rebalance timeout, no timestamp, no instance id.
        let mut b = BytesMut::new();
        b.put_i16(0);
        put_string(&mut b, "consumer");
        b.put_i32(1);
        put_nullable_string(&mut b, Some("range"));
        put_nullable_string(&mut b, Some("m"));
        b.put_i32(1);
        put_string(&mut b, "m");
        put_string(&mut b, "cid");
        put_string(&mut b, "host");
        b.put_i32(5000);
        put_bytes(&mut b, b"s");
        put_bytes(&mut b, b"a");
        let mut k = BytesMut::new();
        k.put_i16(2);
        put_string(&mut k, "g");
        match decode_record(&k, Some(&b)).unwrap() {
            GroupRecord::GroupMetadata { value: Some(v), .. } => {
                assert_eq!(v.members[0].rebalance_timeout, 5000);
                assert_eq!(v.current_state_timestamp, -1);
            }
            other => panic!("{other:?}"),
        }
        // OffsetCommitValue v4 (flexible): offset, epoch, compact metadata, timestamp, empty tagged fields.
        let mut v = BytesMut::new();
        v.put_i16(4);
        v.put_i64(10);
        v.put_i32(2);
        v.put_u8(3); // compact string length 2 + 1
        v.put_slice(b"md");
        v.put_i64(77);
        v.put_u8(0);
        let mut k = BytesMut::new();
        k.put_i16(1);
        put_string(&mut k, "g");
        put_string(&mut k, "t");
        k.put_i32(0);
        match decode_record(&k, Some(&v)).unwrap() {
            GroupRecord::OffsetCommit { value: Some(v), .. } => {
                assert_eq!(
                    (
                        v.offset,
                        v.leader_epoch,
                        v.metadata.as_str(),
                        v.commit_timestamp
                    ),
                    (Offset(10), LeaderEpoch(2), "md", 77)
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn rejects_garbage_without_panicking() {
        assert!(matches!(
            decode_record(&[0, 9, 0, 0], None),
            Err(RecordDecodeError::UnknownKeyVersion(9))
        ));
        assert!(decode_record(&[0], None).is_err());
        assert!(decode_record(&[0, 2, 0x7f, 0xff], None).is_err());
        let mut k = BytesMut::new();
        k.put_i16(2);
        put_string(&mut k, "g");
        // Huge member count with no bytes behind it.
        let mut v = BytesMut::new();
        v.put_i16(3);
        put_string(&mut v, "");
        v.put_i32(0);
        v.put_i16(-1);
        v.put_i16(-1);
        v.put_i64(0);
        v.put_i32(i32::MAX);
        assert!(decode_record(&k, Some(&v)).is_err());
        assert!(decode_record(&k, Some(&[0, 9])).is_err());
    }

    proptest::proptest! {
        #[test]
        fn decode_never_panics(key in proptest::collection::vec(proptest::num::u8::ANY, 0..40),
                               value in proptest::option::of(proptest::collection::vec(proptest::num::u8::ANY, 0..80))) {
            let _ = decode_record(&key, value.as_deref());
        }
    }
}
