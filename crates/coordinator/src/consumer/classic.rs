//! The classic protocol's embedded consumer protocol (Kafka's `ConsumerProtocolSubscription` and
//! `ConsumerProtocolAssignment`, `clients/src/main/resources/common/message/`), as a consumer group reads a
//! classic member's JoinGroup metadata and writes its SyncGroup assignment (KIP-848 online migration).
//!
//! Both are non-flexible structs after an INT16 version: STRING = INT16 length + UTF-8, arrays = INT32 count,
//! BYTES = INT32 length (-1 = null).
//!
//! - Subscription: `Topics [STRING]`, `UserData BYTES` (nullable), v1+ `OwnedPartitions [Topic STRING,
//!   Partitions [INT32]]`, v2+ `GenerationId INT32` (default -1), v3+ `RackId NULLABLE_STRING`.
//! - Assignment: `AssignedPartitions [Topic STRING, Partitions [INT32]]`, `UserData BYTES` (nullable).

use std::collections::{BTreeMap, BTreeSet};

use bytes::{BufMut, Bytes, BytesMut};

/// Partitions by topic name.
pub type NamedPartitions = BTreeMap<String, BTreeSet<i32>>;

/// The version of `ConsumerProtocolAssignment` written (Kafka's highest, 3; every version has the same layout).
pub const ASSIGNMENT_VERSION: i16 = 3;

/// A decoded `ConsumerProtocolSubscription`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Subscription {
    /// The version the member wrote.
    pub version: i16,
    /// Subscribed topic names.
    pub topics: Vec<String>,
    /// Partitions the member owns (v1+; eager members send none).
    pub owned_partitions: NamedPartitions,
    /// The generation the member last synced in (v2+; -1 unknown).
    pub generation_id: i32,
    /// `client.rack` (v3+).
    pub rack_id: Option<String>,
}

struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.0.len() {
            return None;
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Some(head)
    }
    fn i16(&mut self) -> Option<i16> {
        Some(i16::from_be_bytes(self.take(2)?.try_into().ok()?))
    }
    fn i32(&mut self) -> Option<i32> {
        Some(i32::from_be_bytes(self.take(4)?.try_into().ok()?))
    }
    fn string(&mut self) -> Option<Option<String>> {
        let n = self.i16()?;
        if n < 0 {
            return Some(None);
        }
        Some(Some(
            String::from_utf8(self.take(n as usize)?.to_vec()).ok()?,
        ))
    }
    fn count(&mut self) -> Option<usize> {
        let n = self.i32()?;
        (n >= 0 && n as usize <= self.0.len()).then_some(n as usize)
    }
    fn skip_bytes(&mut self) -> Option<()> {
        let n = self.i32()?;
        if n >= 0 {
            self.take(n as usize)?;
        }
        Some(())
    }
    fn partitions(&mut self) -> Option<NamedPartitions> {
        let mut out = NamedPartitions::new();
        for _ in 0..self.count()? {
            let topic = self.string()??;
            let ps = out.entry(topic).or_default();
            for _ in 0..self.count()? {
                ps.insert(self.i32()?);
            }
        }
        Some(out)
    }
}

/// Decodes a `ConsumerProtocolSubscription` (any version ≥ 0; fields of later versions are absent when the
/// bytes end, as Kafka reads them). `None` when the bytes do not parse.
pub fn parse_subscription(b: &[u8]) -> Option<Subscription> {
    let mut c = Cursor(b);
    let version = c.i16()?;
    if version < 0 {
        return None;
    }
    let mut s = Subscription {
        version,
        generation_id: -1,
        ..Default::default()
    };
    for _ in 0..c.count()? {
        s.topics.push(c.string()??);
    }
    if c.0.is_empty() {
        return Some(s);
    }
    c.skip_bytes()?;
    if version >= 1 && !c.0.is_empty() {
        s.owned_partitions = c.partitions()?;
    }
    if version >= 2 && !c.0.is_empty() {
        s.generation_id = c.i32()?;
    }
    if version >= 3 && !c.0.is_empty() {
        s.rack_id = c.string()?;
    }
    Some(s)
}

/// Encodes a `ConsumerProtocolAssignment` of `version` with `partitions` and null user data.
pub fn encode_assignment(version: i16, partitions: &NamedPartitions) -> Bytes {
    let mut b = BytesMut::new();
    b.put_i16(version.max(0));
    b.put_i32(partitions.len() as i32);
    for (topic, ps) in partitions {
        b.put_i16(topic.len() as i16);
        b.put_slice(topic.as_bytes());
        b.put_i32(ps.len() as i32);
        for p in ps {
            b.put_i32(*p);
        }
    }
    b.put_i32(-1);
    b.freeze()
}

/// Decodes a `ConsumerProtocolAssignment`'s partitions; `None` when the bytes do not parse. Empty bytes (a
/// member the leader left out) are no partitions.
pub fn parse_assignment(b: &[u8]) -> Option<NamedPartitions> {
    if b.is_empty() {
        return Some(NamedPartitions::new());
    }
    let mut c = Cursor(b);
    if c.i16()? < 0 {
        return None;
    }
    c.partitions()
}

/// The version of a `ConsumerProtocolSubscription` (Kafka's `ConsumerProtocol.deserializeVersion`): an
/// assignment written back to the member uses it (capped at [`ASSIGNMENT_VERSION`]); 0 when unreadable.
pub fn subscription_version(b: &[u8]) -> i16 {
    Cursor(b).i16().unwrap_or(0).clamp(0, ASSIGNMENT_VERSION)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subscription_v3(topics: &[&str], owned: &[(&str, &[i32])], gen: i32, rack: &str) -> Bytes {
        let mut b = BytesMut::new();
        b.put_i16(3);
        b.put_i32(topics.len() as i32);
        for t in topics {
            b.put_i16(t.len() as i16);
            b.put_slice(t.as_bytes());
        }
        b.put_i32(-1);
        b.put_i32(owned.len() as i32);
        for (t, ps) in owned {
            b.put_i16(t.len() as i16);
            b.put_slice(t.as_bytes());
            b.put_i32(ps.len() as i32);
            ps.iter().for_each(|p| b.put_i32(*p));
        }
        b.put_i32(gen);
        b.put_i16(rack.len() as i16);
        b.put_slice(rack.as_bytes());
        b.freeze()
    }

    #[test]
    fn subscriptions_of_every_version_parse() {
        let b = subscription_v3(&["a", "b"], &[("a", &[0, 2])], 7, "r1");
        let s = parse_subscription(&b).unwrap();
        assert_eq!(s.topics, vec!["a", "b"]);
        assert_eq!(s.owned_partitions["a"], [0, 2].into_iter().collect());
        assert_eq!((s.generation_id, s.rack_id.as_deref()), (7, Some("r1")));
        // v0: topics and user data only.
        let mut v0 = BytesMut::new();
        v0.put_i16(0);
        v0.put_i32(1);
        v0.put_i16(1);
        v0.put_slice(b"t");
        v0.put_i32(3);
        v0.put_slice(b"abc");
        let s = parse_subscription(&v0).unwrap();
        assert_eq!((s.topics.len(), s.generation_id), (1, -1));
        assert!(parse_subscription(&b[..5]).is_none());
    }

    #[test]
    fn assignments_round_trip() {
        let p: NamedPartitions = [("x".to_string(), [1, 3].into_iter().collect())].into();
        let b = encode_assignment(ASSIGNMENT_VERSION, &p);
        assert_eq!(parse_assignment(&b), Some(p));
        assert_eq!(parse_assignment(&[]), Some(NamedPartitions::new()));
    }
}
