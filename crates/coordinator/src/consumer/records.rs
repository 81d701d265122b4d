//! `__consumer_offsets` records of consumer groups (KIP-848), in Kafka's coordinator record formats
//! (`group-coordinator/src/main/resources/common/message/ConsumerGroup*.json`, Kafka 4.4).
//!
//! Key: INT16 record type, then the key struct in the classic encoding (STRING = INT16 length + UTF-8):
//!
//! | type | record | key fields |
//! |---|---|---|
//! | 3 | ConsumerGroupMetadata | group |
//! | 5 | ConsumerGroupMemberMetadata | group, member id |
//! | 6 | ConsumerGroupTargetAssignmentMetadata | group |
//! | 7 | ConsumerGroupTargetAssignmentMember | group, member id |
//! | 8 | ConsumerGroupCurrentMemberAssignment | group, member id |
//!
//! Value: INT16 version 0, then the value struct in the flexible encoding (compact strings and arrays,
//! tagged-field sections), as Kafka writes version 0 of each:
//!
//! - 3: `Epoch INT32`, tag 0 `MetadataHash INT64` (written when non-zero; our own hash of the subscribed
//!   topics, not Kafka's), tag 1 `CreationTimeMs INT64` (skipped).
//! - 5: `InstanceId NULLABLE_STRING, RackId NULLABLE_STRING, ClientId STRING, ClientHost STRING,
//!   SubscribedTopicNames [STRING], SubscribedTopicRegex NULLABLE_STRING, RebalanceTimeoutMs INT32,
//!   ServerAssignor NULLABLE_STRING`, tag 0 `ClassicMemberMetadata` (a nullable struct: INT8 1, then
//!   `SessionTimeoutMs INT32, SupportedProtocols [Name STRING, Metadata BYTES]`), written for a member that
//!   speaks the classic protocol in a consumer group (KIP-848 online migration).
//! - 6: `AssignmentEpoch INT32` (tag 0 `AssignmentTimestamp`, skipped).
//! - 7: `TopicPartitions [TopicId UUID, Partitions [INT32]]`.
//! - 8: `MemberEpoch INT32, PreviousMemberEpoch INT32, State INT8, AssignedPartitions [TopicPartitions],
//!   PartitionsPendingRevocation [TopicPartitions]` (tag 0 of TopicPartitions `AssignmentEpochs`, skipped).
//!
//! A null value is a tombstone. Type 4 (ConsumerGroupPartitionMetadata, superseded by the metadata hash in
//! Kafka 4.1) and 16 (regular expressions, rebuilt from the members' subscriptions here) are not written
//! and are skipped on read like other group types.

use bytes::{BufMut, Bytes, BytesMut};
use uuid::Uuid;

use super::{Assignment, MemberState};
use crate::records::{put_string, Reader, RecordDecodeError};

/// Record type of ConsumerGroupMetadata.
pub const GROUP_METADATA_TYPE: i16 = 3;
/// Record type of ConsumerGroupMemberMetadata.
pub const MEMBER_METADATA_TYPE: i16 = 5;
/// Record type of ConsumerGroupTargetAssignmentMetadata.
pub const TARGET_METADATA_TYPE: i16 = 6;
/// Record type of ConsumerGroupTargetAssignmentMember.
pub const TARGET_MEMBER_TYPE: i16 = 7;
/// Record type of ConsumerGroupCurrentMemberAssignment.
pub const CURRENT_ASSIGNMENT_TYPE: i16 = 8;

/// A consumer group's member subscription, as persisted (ConsumerGroupMemberMetadataValue v0).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct MemberMetadataValue {
    /// `group.instance.id` of a static member.
    pub instance_id: Option<String>,
    /// `client.rack`.
    pub rack_id: Option<String>,
    /// Client id of the member's last heartbeat.
    pub client_id: String,
    /// Client address, e.g. "/127.0.0.1".
    pub client_host: String,
    /// Subscribed topic names (empty with a regular expression).
    pub subscribed_topic_names: Vec<String>,
    /// Subscribed regular expression (RE2 syntax), if any.
    pub subscribed_topic_regex: Option<String>,
    /// Rebalance timeout, ms.
    pub rebalance_timeout_ms: i32,
    /// The server assignor the member asked for, if any.
    pub server_assignor: Option<String>,
    /// Set for a member that uses the classic protocol (JoinGroup/SyncGroup/Heartbeat) in a consumer group.
    pub classic: Option<ClassicMemberMetadata>,
}

/// Kafka's `ConsumerGroupMemberMetadataValue.ClassicMemberMetadata`: what a classic-protocol member of a
/// consumer group joined with — its session timeout and its JoinGroup protocols (name, subscription bytes),
/// so that the group can become a classic group again (KIP-848 online downgrade).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ClassicMemberMetadata {
    /// The JoinGroup session timeout, ms.
    pub session_timeout_ms: i32,
    /// The JoinGroup protocols in preference order: (assignor name, ConsumerProtocolSubscription bytes).
    pub supported_protocols: Vec<(String, Bytes)>,
}

/// A member's current assignment, as persisted (ConsumerGroupCurrentMemberAssignmentValue v0).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct CurrentAssignmentValue {
    /// The epoch the member must heartbeat with.
    pub member_epoch: i32,
    /// The epoch before the last bump (accepted once more if the bump's response was lost).
    pub previous_member_epoch: i32,
    /// The reconciliation state.
    pub state: MemberState,
    /// Partitions the member owns.
    pub assigned: Assignment,
    /// Partitions the member must revoke.
    pub pending_revocation: Assignment,
}

/// The group epoch (ConsumerGroupMetadataValue v0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct GroupEpochValue {
    /// The group epoch.
    pub epoch: i32,
    /// Hash of the subscribed topics' ids, names and partition counts when the epoch was set (tag 0, KIP-1101):
    /// a different hash later means the metadata changed and the group must be rebalanced. 0 = unknown.
    pub metadata_hash: i64,
}

/// One consumer-group record of `__consumer_offsets`; `None` values are tombstones.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConsumerRecord {
    /// Type 3: the group epoch; a tombstone deletes the group.
    GroupMetadata {
        /// Group id.
        group: String,
        /// The group epoch and metadata hash.
        value: Option<GroupEpochValue>,
    },
    /// Type 5: a member's subscription; a tombstone removes the member.
    MemberMetadata {
        /// Group id.
        group: String,
        /// Member id.
        member: String,
        /// The subscription.
        value: Option<MemberMetadataValue>,
    },
    /// Type 6: the epoch of the target assignment.
    TargetMetadata {
        /// Group id.
        group: String,
        /// The assignment epoch.
        epoch: Option<i32>,
    },
    /// Type 7: one member's target assignment.
    TargetMember {
        /// Group id.
        group: String,
        /// Member id.
        member: String,
        /// The target partitions.
        value: Option<Assignment>,
    },
    /// Type 8: one member's current assignment and epochs.
    CurrentAssignment {
        /// Group id.
        group: String,
        /// Member id.
        member: String,
        /// The current assignment.
        value: Option<CurrentAssignmentValue>,
    },
}

impl ConsumerRecord {
    /// The group this record belongs to.
    pub fn group_id(&self) -> &str {
        match self {
            ConsumerRecord::GroupMetadata { group, .. }
            | ConsumerRecord::MemberMetadata { group, .. }
            | ConsumerRecord::TargetMetadata { group, .. }
            | ConsumerRecord::TargetMember { group, .. }
            | ConsumerRecord::CurrentAssignment { group, .. } => group,
        }
    }
}

/// Encodes `record` as a `(key, value)` pair; `value` is `None` for a tombstone.
pub(crate) fn encode(record: &ConsumerRecord) -> (Bytes, Option<Bytes>) {
    let mut k = BytesMut::new();
    let value = |f: &dyn Fn(&mut BytesMut)| {
        let mut b = BytesMut::new();
        b.put_i16(0);
        f(&mut b);
        put_uvarint(&mut b, 0); // no tagged fields
        b.freeze()
    };
    let v = match record {
        ConsumerRecord::GroupMetadata { group, value: v } => {
            key(&mut k, GROUP_METADATA_TYPE, group, None);
            v.map(|v| {
                let mut b = BytesMut::new();
                b.put_i16(0);
                b.put_i32(v.epoch);
                if v.metadata_hash == 0 {
                    put_uvarint(&mut b, 0);
                } else {
                    put_uvarint(&mut b, 1);
                    put_uvarint(&mut b, 0);
                    put_uvarint(&mut b, 8);
                    b.put_i64(v.metadata_hash);
                }
                b.freeze()
            })
        }
        ConsumerRecord::TargetMetadata { group, epoch } => {
            key(&mut k, TARGET_METADATA_TYPE, group, None);
            epoch.map(|e| value(&|b| b.put_i32(e)))
        }
        ConsumerRecord::MemberMetadata {
            group,
            member,
            value: v,
        } => {
            key(&mut k, MEMBER_METADATA_TYPE, group, Some(member));
            v.as_ref().map(|m| {
                let mut b = BytesMut::new();
                b.put_i16(0);
                put_member_metadata(&mut b, m);
                match &m.classic {
                    None => put_uvarint(&mut b, 0),
                    Some(c) => {
                        let mut body = BytesMut::new();
                        put_classic_metadata(&mut body, c);
                        put_uvarint(&mut b, 1);
                        put_uvarint(&mut b, 0);
                        put_uvarint(&mut b, body.len() as u64);
                        b.put_slice(&body);
                    }
                }
                b.freeze()
            })
        }
        ConsumerRecord::TargetMember {
            group,
            member,
            value: v,
        } => {
            key(&mut k, TARGET_MEMBER_TYPE, group, Some(member));
            v.as_ref().map(|a| value(&|b| put_assignment(b, a)))
        }
        ConsumerRecord::CurrentAssignment {
            group,
            member,
            value: v,
        } => {
            key(&mut k, CURRENT_ASSIGNMENT_TYPE, group, Some(member));
            v.as_ref().map(|c| {
                value(&|b| {
                    b.put_i32(c.member_epoch);
                    b.put_i32(c.previous_member_epoch);
                    b.put_i8(c.state.value());
                    put_assignment(b, &c.assigned);
                    put_assignment(b, &c.pending_revocation);
                })
            })
        }
    };
    (k.freeze(), v)
}

fn key(k: &mut BytesMut, record_type: i16, group: &str, member: Option<&str>) {
    k.put_i16(record_type);
    put_string(k, group);
    if let Some(m) = member {
        put_string(k, m);
    }
}

fn put_member_metadata(b: &mut BytesMut, m: &MemberMetadataValue) {
    put_compact_nullable(b, m.instance_id.as_deref());
    put_compact_nullable(b, m.rack_id.as_deref());
    put_compact_nullable(b, Some(&m.client_id));
    put_compact_nullable(b, Some(&m.client_host));
    put_uvarint(b, m.subscribed_topic_names.len() as u64 + 1);
    for t in &m.subscribed_topic_names {
        put_compact_nullable(b, Some(t));
    }
    put_compact_nullable(b, m.subscribed_topic_regex.as_deref());
    b.put_i32(m.rebalance_timeout_ms);
    put_compact_nullable(b, m.server_assignor.as_deref());
}

/// The nullable `ClassicMemberMetadata` struct as Kafka's generated code writes it in a tagged field: the
/// INT8 presence marker 1, the fields, the struct's own (empty) tagged-field section.
fn put_classic_metadata(b: &mut BytesMut, c: &ClassicMemberMetadata) {
    b.put_i8(1);
    b.put_i32(c.session_timeout_ms);
    put_uvarint(b, c.supported_protocols.len() as u64 + 1);
    for (name, metadata) in &c.supported_protocols {
        put_compact_nullable(b, Some(name));
        put_uvarint(b, metadata.len() as u64 + 1);
        b.put_slice(metadata);
        put_uvarint(b, 0);
    }
    put_uvarint(b, 0);
}

/// Reads a `ClassicMemberMetadata` tagged-field body (with or without the INT8 presence marker, which is
/// told apart by the body's length); `None` for a null struct.
fn read_classic_metadata(body: &[u8]) -> Result<Option<ClassicMemberMetadata>, RecordDecodeError> {
    let read = |body: &[u8]| -> Result<ClassicMemberMetadata, RecordDecodeError> {
        let mut r = Reader::new(body, true);
        let session_timeout_ms = r.i32()?;
        let n = r.array_len()?;
        let mut supported_protocols = Vec::with_capacity(n);
        for _ in 0..n {
            let name = r.string()?;
            let metadata = r.bytes()?;
            r.tagged_fields()?;
            supported_protocols.push((name, metadata));
        }
        r.tagged_fields()?;
        if !r.is_empty() {
            return Err(RecordDecodeError::Malformed("trailing bytes"));
        }
        Ok(ClassicMemberMetadata {
            session_timeout_ms,
            supported_protocols,
        })
    };
    match body.first() {
        Some(&m) if (m as i8) < 0 && body.len() == 1 => Ok(None),
        Some(1) => match read(&body[1..]) {
            Ok(c) => Ok(Some(c)),
            Err(_) => read(body).map(Some),
        },
        _ => read(body).map(Some),
    }
}

/// `[TopicId UUID, Partitions [INT32], <tags>]` in compact encoding.
fn put_assignment(b: &mut BytesMut, a: &Assignment) {
    put_uvarint(b, a.len() as u64 + 1);
    for (topic, partitions) in a {
        b.put_slice(topic.as_bytes());
        put_uvarint(b, partitions.len() as u64 + 1);
        for p in partitions {
            b.put_i32(*p);
        }
        put_uvarint(b, 0);
    }
}

pub(crate) fn put_compact_nullable(b: &mut BytesMut, s: Option<&str>) {
    match s {
        None => put_uvarint(b, 0),
        Some(s) => {
            put_uvarint(b, s.len() as u64 + 1);
            b.put_slice(s.as_bytes());
        }
    }
}

pub(crate) fn put_uvarint(b: &mut BytesMut, mut v: u64) {
    while v >= 0x80 {
        b.put_u8((v as u8) | 0x80);
        v >>= 7;
    }
    b.put_u8(v as u8);
}

/// Decodes a consumer-group record whose key (after its INT16 type `record_type`) is in `kr`.
/// Errors: [`RecordDecodeError::UnknownKeyVersion`] for types this coordinator does not read (4, 16, share
/// and streams groups); [`RecordDecodeError::UnknownValueVersion`] for a value version other than 0.
pub(crate) fn decode(
    record_type: i16,
    kr: &mut Reader<'_>,
    value: Option<&[u8]>,
) -> Result<ConsumerRecord, RecordDecodeError> {
    let group = kr.string()?;
    let member = match record_type {
        MEMBER_METADATA_TYPE | TARGET_MEMBER_TYPE | CURRENT_ASSIGNMENT_TYPE => kr.string()?,
        GROUP_METADATA_TYPE | TARGET_METADATA_TYPE => String::new(),
        other => return Err(RecordDecodeError::UnknownKeyVersion(other)),
    };
    let mut r = match value {
        None => None,
        Some(v) => {
            let version = Reader::new(v, false).i16()?;
            if version != 0 {
                return Err(RecordDecodeError::UnknownValueVersion {
                    what: "consumer group",
                    version,
                });
            }
            Some(Reader::new(&v[2..], true))
        }
    };
    let record = match record_type {
        GROUP_METADATA_TYPE => {
            let value = match r.as_mut() {
                None => None,
                Some(r) => {
                    let epoch = r.i32()?;
                    let metadata_hash = r.tagged_i64(0)?.unwrap_or(0);
                    Some(GroupEpochValue {
                        epoch,
                        metadata_hash,
                    })
                }
            };
            return Ok(ConsumerRecord::GroupMetadata { group, value });
        }
        TARGET_METADATA_TYPE => ConsumerRecord::TargetMetadata {
            group,
            epoch: r.as_mut().map(|r| r.i32()).transpose()?,
        },
        MEMBER_METADATA_TYPE => ConsumerRecord::MemberMetadata {
            group,
            member,
            value: r.as_mut().map(read_member_metadata).transpose()?,
        },
        TARGET_MEMBER_TYPE => ConsumerRecord::TargetMember {
            group,
            member,
            value: r.as_mut().map(read_assignment).transpose()?,
        },
        _ => ConsumerRecord::CurrentAssignment {
            group,
            member,
            value: r.as_mut().map(read_current_assignment).transpose()?,
        },
    };
    if let (Some(r), false) = (r.as_mut(), record_type == MEMBER_METADATA_TYPE) {
        r.tagged_fields()?;
    }
    Ok(record)
}

fn read_member_metadata(r: &mut Reader<'_>) -> Result<MemberMetadataValue, RecordDecodeError> {
    let instance_id = r.nullable_string()?;
    let rack_id = r.nullable_string()?;
    let client_id = r.string()?;
    let client_host = r.string()?;
    let n = r.array_len()?;
    let mut subscribed_topic_names = Vec::with_capacity(n);
    for _ in 0..n {
        subscribed_topic_names.push(r.string()?);
    }
    let subscribed_topic_regex = r.nullable_string()?;
    let rebalance_timeout_ms = r.i32()?;
    let server_assignor = r.nullable_string()?;
    let classic = match r.tagged_body(0)? {
        Some(body) => read_classic_metadata(body)?,
        None => None,
    };
    Ok(MemberMetadataValue {
        instance_id,
        rack_id,
        client_id,
        client_host,
        subscribed_topic_names,
        subscribed_topic_regex,
        rebalance_timeout_ms,
        server_assignor,
        classic,
    })
}

fn read_current_assignment(
    r: &mut Reader<'_>,
) -> Result<CurrentAssignmentValue, RecordDecodeError> {
    Ok(CurrentAssignmentValue {
        member_epoch: r.i32()?,
        previous_member_epoch: r.i32()?,
        state: MemberState::from_value(r.i8()?),
        assigned: read_assignment(r)?,
        pending_revocation: read_assignment(r)?,
    })
}

fn read_assignment(r: &mut Reader<'_>) -> Result<Assignment, RecordDecodeError> {
    let n = r.array_len()?;
    let mut a = Assignment::new();
    for _ in 0..n {
        let id = Uuid::from_slice(r.take(16)?).map_err(|_| RecordDecodeError::Malformed("uuid"))?;
        let count = r.array_len()?;
        let partitions = a.entry(id).or_default();
        for _ in 0..count {
            partitions.insert(r.i32()?);
        }
        r.tagged_fields()?;
    }
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(record: ConsumerRecord) {
        let (k, v) = encode(&record);
        let decoded = crate::records::decode_record(&k, v.as_deref()).unwrap();
        assert_eq!(decoded, crate::GroupRecord::Consumer(Box::new(record)));
    }

    #[test]
    fn every_record_type_round_trips_with_tombstones() {
        let t = Uuid::from_u128(7);
        let a: Assignment = [(t, [0, 2, 5].into_iter().collect())].into_iter().collect();
        let g = || "g".to_string();
        let m = || "m-1".to_string();
        for metadata_hash in [0, -5, 77] {
            let value = Some(GroupEpochValue {
                epoch: 4,
                metadata_hash,
            });
            roundtrip(ConsumerRecord::GroupMetadata { group: g(), value });
        }
        roundtrip(ConsumerRecord::GroupMetadata {
            group: g(),
            value: None,
        });
        roundtrip(ConsumerRecord::TargetMetadata {
            group: g(),
            epoch: Some(3),
        });
        roundtrip(ConsumerRecord::TargetMember {
            group: g(),
            member: m(),
            value: Some(a.clone()),
        });
        roundtrip(ConsumerRecord::TargetMember {
            group: g(),
            member: m(),
            value: None,
        });
        roundtrip(ConsumerRecord::MemberMetadata {
            group: g(),
            member: m(),
            value: Some(MemberMetadataValue {
                instance_id: Some("i".into()),
                rack_id: None,
                client_id: "c".into(),
                client_host: "/127.0.0.1".into(),
                subscribed_topic_names: vec!["a".into(), "b".into()],
                subscribed_topic_regex: None,
                rebalance_timeout_ms: 300_000,
                server_assignor: Some("uniform".into()),
                classic: None,
            }),
        });
        roundtrip(ConsumerRecord::MemberMetadata {
            group: g(),
            member: m(),
            value: Some(MemberMetadataValue {
                client_id: "c".into(),
                subscribed_topic_names: vec!["a".into()],
                rebalance_timeout_ms: 300_000,
                classic: Some(ClassicMemberMetadata {
                    session_timeout_ms: 45_000,
                    supported_protocols: vec![
                        ("range".into(), Bytes::from_static(b"\x00\x03sub")),
                        ("roundrobin".into(), Bytes::new()),
                    ],
                }),
                ..Default::default()
            }),
        });
        roundtrip(ConsumerRecord::CurrentAssignment {
            group: g(),
            member: m(),
            value: Some(CurrentAssignmentValue {
                member_epoch: 5,
                previous_member_epoch: 4,
                state: MemberState::UnrevokedPartitions,
                assigned: a.clone(),
                pending_revocation: Assignment::new(),
            }),
        });
    }

    /// Bytes as Kafka 4.4 writes a ConsumerGroupMetadataValue with its two tagged fields: the tags are
    /// skipped, the epoch read.
    #[test]
    fn kafkas_tagged_fields_are_skipped() {
        let mut k = BytesMut::new();
        key(&mut k, GROUP_METADATA_TYPE, "grp", None);
        let mut v = BytesMut::new();
        v.put_i16(0);
        v.put_i32(9);
        put_uvarint(&mut v, 2);
        put_uvarint(&mut v, 0);
        put_uvarint(&mut v, 8);
        v.put_i64(0x1234);
        put_uvarint(&mut v, 1);
        put_uvarint(&mut v, 8);
        v.put_i64(1_700_000_000_000);
        let r = crate::records::decode_record(&k, Some(&v)).unwrap();
        let value = Some(GroupEpochValue {
            epoch: 9,
            metadata_hash: 0x1234,
        });
        let want = ConsumerRecord::GroupMetadata {
            group: "grp".into(),
            value,
        };
        assert_eq!(r, crate::GroupRecord::Consumer(Box::new(want)));
    }

    /// The value bytes Kafka 4.4's generated `ConsumerGroupMemberMetadataValue` writes (version prefix
    /// included) for a classic member — `MessageUtil.toVersionPrefixedByteBuffer` of client id "c", host
    /// "/127.0.0.1", topic "a", rebalance timeout 300000, `ClassicMemberMetadata` with session timeout 45000
    /// and protocol "range" (metadata 00 03 73 75 62), the other strings left at their default "" — are
    /// read, and written back byte for byte (the nullable struct's INT8 presence marker included).
    #[test]
    fn kafkas_classic_member_metadata_bytes_round_trip() {
        let hex =
            "0000010102630b2f3132372e302e302e3102026101000493e001010014010000afc8020672616e6765\
                   0600037375620000";
        let v: Vec<u8> = (0..hex.len() / 2)
            .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        let want = ConsumerRecord::MemberMetadata {
            group: "g".into(),
            member: "m".into(),
            value: Some(MemberMetadataValue {
                instance_id: Some(String::new()),
                rack_id: Some(String::new()),
                client_id: "c".into(),
                client_host: "/127.0.0.1".into(),
                subscribed_topic_names: vec!["a".into()],
                subscribed_topic_regex: Some(String::new()),
                rebalance_timeout_ms: 300_000,
                server_assignor: Some(String::new()),
                classic: Some(ClassicMemberMetadata {
                    session_timeout_ms: 45_000,
                    supported_protocols: vec![(
                        "range".into(),
                        Bytes::from_static(&[0, 3, b's', b'u', b'b']),
                    )],
                }),
            }),
        };
        let (k, ours) = encode(&want);
        assert_eq!(ours.as_deref(), Some(&v[..]));
        let decoded = crate::records::decode_record(&k, Some(&v)).unwrap();
        assert_eq!(decoded, crate::GroupRecord::Consumer(Box::new(want)));
    }

    #[test]
    fn truncated_and_unknown_values_are_errors_not_panics() {
        let (k, v) = encode(&ConsumerRecord::CurrentAssignment {
            group: "g".into(),
            member: "m".into(),
            value: Some(CurrentAssignmentValue::default()),
        });
        let v = v.unwrap();
        for cut in 0..v.len() {
            assert!(crate::records::decode_record(&k, Some(&v[..cut])).is_err());
        }
        let mut k4 = BytesMut::new();
        key(&mut k4, 4, "g", None);
        assert!(matches!(
            crate::records::decode_record(&k4, None),
            Err(RecordDecodeError::UnknownKeyVersion(4))
        ));
    }
}
