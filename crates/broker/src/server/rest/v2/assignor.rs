//! The classic consumer protocol as a REST consumer instance speaks it (no I/O): the member metadata it
//! joins with (Kafka's `ConsumerProtocolSubscription` v0: `version INT16, topics [STRING], user_data
//! NULLABLE_BYTES`), the assignment the leader hands out (`ConsumerProtocolAssignment` v0: `version INT16,
//! [topic STRING, partitions [INT32]], user_data NULLABLE_BYTES`), and the "range" assignor that computes it
//! (Kafka's `RangeAssignor`: per topic, the members subscribed to it in member-id order each take a
//! contiguous range, the first `partitions % members` one partition more).

use std::collections::BTreeMap;

/// The protocol type of consumer groups (the Java client's).
pub const PROTOCOL_TYPE: &str = "consumer";
/// The one assignor a REST consumer instance offers.
pub const RANGE: &str = "range";

/// A topic and a partition index.
pub type TopicPartition = (String, i32);

fn put_str(out: &mut Vec<u8>, s: &str) {
    // Topic names are at most 249 bytes (checked before they get here); longer ones are cut to i16::MAX.
    let len = s.len().min(i16::MAX as usize);
    out.extend_from_slice(&(len as i16).to_be_bytes());
    out.extend_from_slice(&s.as_bytes()[..len]);
}

/// `ConsumerProtocolSubscription` v0 for `topics` (user data null).
pub fn encode_subscription(topics: &[String]) -> Vec<u8> {
    let mut out = Vec::with_capacity(10 + topics.iter().map(|t| t.len() + 2).sum::<usize>());
    out.extend_from_slice(&0i16.to_be_bytes());
    out.extend_from_slice(&(topics.len() as i32).to_be_bytes());
    for t in topics {
        put_str(&mut out, t);
    }
    out.extend_from_slice(&(-1i32).to_be_bytes());
    out
}

/// `ConsumerProtocolAssignment` v0 for `partitions` (grouped by topic, user data null).
pub fn encode_assignment(partitions: &[TopicPartition]) -> Vec<u8> {
    let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for (t, p) in partitions {
        by_topic.entry(t).or_default().push(*p);
    }
    let mut out = Vec::new();
    out.extend_from_slice(&0i16.to_be_bytes());
    out.extend_from_slice(&(by_topic.len() as i32).to_be_bytes());
    for (t, ps) in by_topic {
        put_str(&mut out, t);
        out.extend_from_slice(&(ps.len() as i32).to_be_bytes());
        for p in ps {
            out.extend_from_slice(&p.to_be_bytes());
        }
    }
    out.extend_from_slice(&(-1i32).to_be_bytes());
    out
}

/// A bounded reader over big-endian fields: every read checks the bytes are there.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        (self.0.len() >= n).then(|| {
            let (head, rest) = self.0.split_at(n);
            self.0 = rest;
            head
        })
    }
    fn i16(&mut self) -> Option<i16> {
        Some(i16::from_be_bytes(self.take(2)?.try_into().ok()?))
    }
    fn i32(&mut self) -> Option<i32> {
        Some(i32::from_be_bytes(self.take(4)?.try_into().ok()?))
    }
    fn string(&mut self) -> Option<String> {
        let len = usize::try_from(self.i16()?).ok()?;
        String::from_utf8(self.take(len)?.to_vec()).ok()
    }
    /// An array count no larger than the bytes left could hold (`min_size` bytes per element).
    fn count(&mut self, min_size: usize) -> Option<usize> {
        let n = usize::try_from(self.i32()?).ok()?;
        (n.saturating_mul(min_size) <= self.0.len()).then_some(n)
    }
}

/// The topics of a `ConsumerProtocolSubscription` (any version: all begin with version and topics);
/// `None` when the bytes do not parse.
pub fn decode_subscription(b: &[u8]) -> Option<Vec<String>> {
    let mut r = Reader(b);
    (r.i16()? >= 0).then_some(())?;
    let n = r.count(2)?;
    (0..n).map(|_| r.string()).collect()
}

/// The partitions of a `ConsumerProtocolAssignment` (any version); `None` when the bytes do not parse
/// (an empty assignment, zero bytes, is no partitions).
pub fn decode_assignment(b: &[u8]) -> Option<Vec<TopicPartition>> {
    if b.is_empty() {
        return Some(Vec::new());
    }
    let mut r = Reader(b);
    (r.i16()? >= 0).then_some(())?;
    let topics = r.count(6)?;
    let mut out = Vec::new();
    for _ in 0..topics {
        let name = r.string()?;
        let n = r.count(4)?;
        for _ in 0..n {
            out.push((name.clone(), r.i32()?));
        }
    }
    Some(out)
}

/// Kafka's range assignment of `partition_counts` (topic → number of partitions) to `members` (member
/// id → subscribed topics). Every member gets an entry (possibly empty); a topic without a partition
/// count (unknown to the cluster) is assigned to no one.
pub fn range_assign(
    members: &BTreeMap<String, Vec<String>>,
    partition_counts: &BTreeMap<String, i32>,
) -> BTreeMap<String, Vec<TopicPartition>> {
    let mut out: BTreeMap<String, Vec<TopicPartition>> =
        members.keys().map(|m| (m.clone(), Vec::new())).collect();
    for (topic, &count) in partition_counts {
        // BTreeMap keys: the subscribed members in member-id order.
        let subscribed: Vec<&String> = members
            .iter()
            .filter(|(_, topics)| topics.contains(topic))
            .map(|(m, _)| m)
            .collect();
        if subscribed.is_empty() || count <= 0 {
            continue;
        }
        let n = subscribed.len() as i32;
        let (per, extra) = (count / n, count % n);
        for (i, member) in subscribed.into_iter().enumerate() {
            let i = i as i32;
            let start = per * i + i.min(extra);
            let len = per + i32::from(i < extra);
            let partitions = out.entry(member.clone()).or_default();
            partitions.extend((start..start + len).map(|p| (topic.clone(), p)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(t: &str, p: i32) -> TopicPartition {
        (t.to_string(), p)
    }

    #[test]
    fn subscriptions_round_trip() {
        let topics = vec!["a".to_string(), "orders".to_string()];
        let bytes = encode_subscription(&topics);
        assert_eq!(&bytes[..8], &[0, 0, 0, 0, 0, 2, 0, 1]);
        assert_eq!(&bytes[bytes.len() - 4..], &[0xff; 4]);
        assert_eq!(decode_subscription(&bytes), Some(topics));
        assert_eq!(decode_subscription(&[0, 0, 0, 0, 0, 9]), None);
        assert_eq!(decode_subscription(&[0, 0, 0x7f, 0xff, 0xff, 0xff]), None);
        assert_eq!(decode_subscription(&[]), None);
    }

    #[test]
    fn assignments_round_trip() {
        let parts = vec![tp("b", 1), tp("a", 0), tp("a", 2)];
        let bytes = encode_assignment(&parts);
        // Grouped by topic, in topic order.
        assert_eq!(
            decode_assignment(&bytes),
            Some(vec![tp("a", 0), tp("a", 2), tp("b", 1)])
        );
        assert_eq!(decode_assignment(&[]), Some(vec![]));
        assert_eq!(decode_assignment(&[0, 0, 0, 0, 0, 1, 0, 1]), None);
        // A count larger than the bytes could hold is refused, not allocated.
        assert_eq!(decode_assignment(&[0, 0, 0x7f, 0xff, 0xff, 0xff]), None);
    }

    #[test]
    fn range_assignor_matches_kafka() {
        let members: BTreeMap<String, Vec<String>> = [
            ("m1".to_string(), vec!["t".to_string(), "u".to_string()]),
            ("m2".to_string(), vec!["t".to_string()]),
            ("m3".to_string(), vec!["t".to_string()]),
        ]
        .into();
        let counts: BTreeMap<String, i32> = [
            ("t".to_string(), 7),
            ("u".to_string(), 2),
            ("gone".to_string(), 3),
        ]
        .into();
        let a = range_assign(&members, &counts);
        // t: 7 partitions over 3 members → 3, 2, 2; u only to m1.
        assert_eq!(
            a["m1"],
            vec![tp("t", 0), tp("t", 1), tp("t", 2), tp("u", 0), tp("u", 1)]
        );
        assert_eq!(a["m2"], vec![tp("t", 3), tp("t", 4)]);
        assert_eq!(a["m3"], vec![tp("t", 5), tp("t", 6)]);
        // More members than partitions: the later members get nothing.
        let counts: BTreeMap<String, i32> = [("t".to_string(), 1)].into();
        let a = range_assign(&members, &counts);
        assert_eq!((a["m1"].len(), a["m2"].len(), a["m3"].len()), (1, 0, 0));
    }
}
