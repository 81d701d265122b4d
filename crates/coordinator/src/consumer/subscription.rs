//! What a consumer group subscribes to: regular expressions resolved against the topics image, and the
//! metadata hash whose change bumps the group epoch (KIP-848, KIP-1101).

use std::collections::{BTreeMap, BTreeSet};

use super::api::TopicsImage;
use super::ConsumerGroup;

/// A subscription regular expression, matched against whole topic names (Java's `Matcher.matches`).
/// Its compiled size is bounded so that a hostile pattern cannot take the coordinator's memory.
pub fn compile_regex(re: &str) -> Result<regex::Regex, regex::Error> {
    regex::RegexBuilder::new(&format!("^(?:{re})$"))
        .size_limit(1 << 20)
        .build()
}

/// FNV-1a over the subscribed topics' names, ids, partition counts and, for a topic whose replicas have
/// racks, each partition's index and sorted replica racks (length-prefixed, as KIP-1101's topic hash does):
/// the group's metadata hash. A change of a partition's racks thus bumps the group epoch and re-assigns
/// (the assignors are rack-aware); a topic without racks hashes as it did before racks were hashed.
pub(crate) fn metadata_hash(topics: &BTreeSet<String>, image: &TopicsImage) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for t in topics {
        if let Some((id, n)) = image.topic(t) {
            eat(t.as_bytes());
            eat(id.as_bytes());
            eat(&n.to_be_bytes());
            for (p, racks) in image.partition_racks(&id).iter().enumerate() {
                eat(&(p as u32).to_be_bytes());
                eat(&(racks.len() as u32).to_be_bytes());
                for r in racks {
                    eat(&(r.len() as u32).to_be_bytes());
                    eat(r.as_bytes());
                }
            }
        }
    }
    // The low 63 bits, at least 1 (0 is "no hash"): a hash with the top bit set used to collapse to 1, so a
    // change between two such hashes went unnoticed.
    ((h & i64::MAX as u64) as i64).max(1)
}

/// Re-resolves the group's regular expressions when the topics image changed; true when a resolution
/// changed. Internal topics (`__`-prefixed) never match, as in Kafka.
pub(crate) fn resolve_regexes(g: &mut ConsumerGroup, image: &TopicsImage) -> bool {
    let regexes: BTreeSet<&String> = (g.members.values())
        .filter_map(|m| m.metadata.subscribed_topic_regex.as_ref())
        .collect();
    let stale = g.resolved_version != Some(image.version)
        || regexes.iter().any(|r| !g.resolved_regex.contains_key(*r));
    if !stale {
        return false;
    }
    let mut resolved = BTreeMap::new();
    for re in regexes {
        let topics: BTreeSet<String> = match compile_regex(re) {
            Ok(compiled) => (image.names())
                .filter(|t| !t.starts_with("__") && compiled.is_match(t))
                .map(str::to_string)
                .collect(),
            Err(_) => BTreeSet::new(),
        };
        resolved.insert(re.clone(), topics);
    }
    g.resolved_version = Some(image.version);
    let changed = resolved != g.resolved_regex;
    g.resolved_regex = resolved;
    changed
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use uuid::Uuid;

    use super::*;

    fn image(racks: &[&[&str]]) -> TopicsImage {
        let id = Uuid::from_u128(7);
        let racks = (racks.iter())
            .map(|rs| rs.iter().map(|r| r.to_string()).collect::<BTreeSet<_>>())
            .collect();
        TopicsImage::new(1, [("t".to_string(), id, 3)]).with_partition_racks(id, racks)
    }

    #[test]
    fn the_metadata_hash_follows_partition_racks() {
        let topics: BTreeSet<String> = ["t".to_string()].into();
        let plain = TopicsImage::new(1, [("t".to_string(), Uuid::from_u128(7), 3)]);
        let hashes = [
            metadata_hash(&topics, &plain),
            metadata_hash(&topics, &image(&[&["a"], &["b"], &["c"]])),
            metadata_hash(&topics, &image(&[&["b"], &["a"], &["c"]])),
            metadata_hash(&topics, &image(&[&["a", "b"], &[], &["c"]])),
            metadata_hash(&topics, &image(&[&["ab"], &[], &["c"]])),
        ];
        let distinct: BTreeSet<i64> = hashes.iter().copied().collect();
        assert_eq!(distinct.len(), hashes.len(), "{hashes:?}");
        assert!(hashes.iter().all(|h| *h >= 1));
        // No racks at all hashes as a rack-less image.
        assert_eq!(metadata_hash(&topics, &image(&[&[], &[], &[]])), hashes[0]);
    }
}
