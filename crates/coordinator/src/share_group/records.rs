//! `__consumer_offsets` records of share groups (KIP-932), in Kafka's coordinator record formats
//! (`group-coordinator/src/main/resources/common/message/ShareGroup*.json`, Kafka 4.4).
//!
//! Key: INT16 record type, then the key struct in the classic encoding (STRING = INT16 length + UTF-8):
//!
//! | type | record | key fields |
//! |---|---|---|
//! | 10 | ShareGroupMemberMetadata | group, member id |
//! | 11 | ShareGroupMetadata | group |
//!
//! Value: INT16 version 0, then the flexible encoding (compact strings and arrays, tagged-field sections):
//!
//! - 10: `RackId NULLABLE_STRING, ClientId STRING, ClientHost STRING, SubscribedTopicNames [STRING]`.
//! - 11: `Epoch INT32, MetadataHash INT64`.
//!
//! A null value is a tombstone. Types 12–15 (target and current assignments, share-partition initialization)
//! are not written — see the module doc of [`crate::share_group`] — and are skipped on read.

use bytes::{BufMut, Bytes, BytesMut};

use crate::consumer::records::{put_compact_nullable, put_uvarint};
use crate::records::{put_string, Reader, RecordDecodeError};

/// Record type of ShareGroupMemberMetadata.
pub const MEMBER_METADATA_TYPE: i16 = 10;
/// Record type of ShareGroupMetadata.
pub const GROUP_METADATA_TYPE: i16 = 11;

/// A share-group member's subscription, as persisted (ShareGroupMemberMetadataValue v0).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ShareMemberMetadataValue {
    /// `client.rack`.
    pub rack_id: Option<String>,
    /// Client id of the member's last heartbeat.
    pub client_id: String,
    /// Client address, e.g. "/127.0.0.1".
    pub client_host: String,
    /// Subscribed topic names.
    pub subscribed_topic_names: Vec<String>,
}

/// One share-group record of `__consumer_offsets`; `None` values are tombstones.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShareRecord {
    /// Type 11: the group epoch and metadata hash; a tombstone deletes the group.
    GroupMetadata {
        /// Group id.
        group: String,
        /// (epoch, metadata hash).
        value: Option<(i32, i64)>,
    },
    /// Type 10: a member's subscription; a tombstone removes the member.
    MemberMetadata {
        /// Group id.
        group: String,
        /// Member id.
        member: String,
        /// The subscription.
        value: Option<ShareMemberMetadataValue>,
    },
}

impl ShareRecord {
    /// The group id this record belongs to.
    pub fn group_id(&self) -> &str {
        match self {
            ShareRecord::GroupMetadata { group, .. }
            | ShareRecord::MemberMetadata { group, .. } => group,
        }
    }
}

/// Encodes `record` as a `(key, value)` pair; `value` is `None` for a tombstone.
pub(crate) fn encode(record: &ShareRecord) -> (Bytes, Option<Bytes>) {
    let mut k = BytesMut::new();
    let value = |f: &dyn Fn(&mut BytesMut)| {
        let mut b = BytesMut::new();
        b.put_i16(0);
        f(&mut b);
        put_uvarint(&mut b, 0);
        b.freeze()
    };
    let v = match record {
        ShareRecord::GroupMetadata { group, value: v } => {
            k.put_i16(GROUP_METADATA_TYPE);
            put_string(&mut k, group);
            v.map(|(epoch, hash)| {
                value(&|b| {
                    b.put_i32(epoch);
                    b.put_i64(hash);
                })
            })
        }
        ShareRecord::MemberMetadata {
            group,
            member,
            value: v,
        } => {
            k.put_i16(MEMBER_METADATA_TYPE);
            put_string(&mut k, group);
            put_string(&mut k, member);
            v.as_ref().map(|m| {
                value(&|b| {
                    put_compact_nullable(b, m.rack_id.as_deref());
                    put_compact_nullable(b, Some(&m.client_id));
                    put_compact_nullable(b, Some(&m.client_host));
                    put_uvarint(b, m.subscribed_topic_names.len() as u64 + 1);
                    for t in &m.subscribed_topic_names {
                        put_compact_nullable(b, Some(t));
                    }
                })
            })
        }
    };
    (k.freeze(), v)
}

/// Decodes a share-group record whose key (after its INT16 type `record_type`, 10 or 11) is in `kr`.
/// Errors: [`RecordDecodeError::UnknownKeyVersion`] for other types; [`RecordDecodeError::UnknownValueVersion`]
/// for a value version other than 0; truncation errors for short input.
pub(crate) fn decode(
    record_type: i16,
    kr: &mut Reader<'_>,
    value: Option<&[u8]>,
) -> Result<ShareRecord, RecordDecodeError> {
    let group = kr.string()?;
    let mut r = match value {
        None => None,
        Some(v) => {
            let version = Reader::new(v, false).i16()?;
            if version != 0 {
                return Err(RecordDecodeError::UnknownValueVersion {
                    what: "share group",
                    version,
                });
            }
            Some(Reader::new(&v[2..], true))
        }
    };
    let record = match record_type {
        GROUP_METADATA_TYPE => ShareRecord::GroupMetadata {
            group,
            value: r.as_mut().map(|r| Ok((r.i32()?, r.i64()?))).transpose()?,
        },
        MEMBER_METADATA_TYPE => {
            let member = kr.string()?;
            let value = match r.as_mut() {
                None => None,
                Some(r) => {
                    let rack_id = r.nullable_string()?;
                    let client_id = r.string()?;
                    let client_host = r.string()?;
                    let n = r.array_len()?;
                    let mut subscribed_topic_names = Vec::with_capacity(n);
                    for _ in 0..n {
                        subscribed_topic_names.push(r.string()?);
                    }
                    Some(ShareMemberMetadataValue {
                        rack_id,
                        client_id,
                        client_host,
                        subscribed_topic_names,
                    })
                }
            };
            ShareRecord::MemberMetadata {
                group,
                member,
                value,
            }
        }
        other => return Err(RecordDecodeError::UnknownKeyVersion(other)),
    };
    if let Some(r) = r.as_mut() {
        r.tagged_fields()?;
    }
    Ok(record)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{decode_record, encode_record, GroupRecord};

    fn roundtrip(record: ShareRecord) {
        let g = GroupRecord::Share(Box::new(record));
        let (k, v) = encode_record(&g);
        assert_eq!(decode_record(&k, v.as_deref()).unwrap(), g);
    }

    #[test]
    fn both_record_types_round_trip_with_tombstones() {
        roundtrip(ShareRecord::GroupMetadata {
            group: "g".into(),
            value: Some((7, -3)),
        });
        roundtrip(ShareRecord::GroupMetadata {
            group: "g".into(),
            value: None,
        });
        roundtrip(ShareRecord::MemberMetadata {
            group: "g".into(),
            member: "m".into(),
            value: Some(ShareMemberMetadataValue {
                rack_id: Some("r1".into()),
                client_id: "c".into(),
                client_host: "/127.0.0.1".into(),
                subscribed_topic_names: vec!["a".into(), "b".into()],
            }),
        });
        roundtrip(ShareRecord::MemberMetadata {
            group: "g".into(),
            member: "m".into(),
            value: None,
        });
    }

    #[test]
    fn kafkas_layout_of_the_group_epoch() {
        let (k, v) = encode(&ShareRecord::GroupMetadata {
            group: "g".into(),
            value: Some((2, 5)),
        });
        assert_eq!(&k[..], &[0, 11, 0, 1, b'g']);
        let v = v.unwrap();
        assert_eq!(&v[..], &[0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 5, 0]);
    }

    #[test]
    fn truncated_values_are_errors_not_panics() {
        let (k, v) = encode(&ShareRecord::MemberMetadata {
            group: "g".into(),
            member: "m".into(),
            value: Some(ShareMemberMetadataValue {
                subscribed_topic_names: vec!["t".into()],
                ..Default::default()
            }),
        });
        let v = v.unwrap();
        for cut in 0..v.len() {
            assert!(decode_record(&k, Some(&v[..cut])).is_err(), "cut at {cut}");
        }
        let mut bad = v.to_vec();
        bad[1] = 9;
        assert!(decode_record(&k, Some(&bad)).is_err());
    }
}
