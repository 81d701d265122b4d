//! The `range` assignor (Kafka's range semantics), rack-aware as KIP-881's client-side range assignor.

use std::collections::BTreeMap;

use uuid::Uuid;

use super::rack::Racks;
use super::{Assignment, MemberSpec};

/// Kafka's range assignor, per topic: the members subscribed to it, in member-id order, take contiguous
/// ranges of its partitions, the first `partitions % members` one more than the others. Co-partitioned
/// topics (same subscribers, same partition count) therefore land on the same member per partition index.
///
/// With `racks` (KIP-881): each member in order first takes, lowest first, the partitions on its rack up to
/// its quota (`partitions / members`, plus one while extra partitions remain), then the members in order fill
/// their quotas with the lowest partitions left. A partition index of co-partitioned topics is on a member's
/// rack only when it is so in every one of those topics, so they stay aligned. When every member's rack
/// holds every partition, or none does, this is the plain range assignment.
pub(super) fn range(
    members: &BTreeMap<String, MemberSpec>,
    partitions: &BTreeMap<Uuid, i32>,
    racks: Option<&Racks<'_>>,
) -> BTreeMap<String, Assignment> {
    let mut out: BTreeMap<String, Assignment> = members
        .keys()
        .map(|m| (m.clone(), Assignment::new()))
        .collect();
    // Topics grouped by (subscribers, partition count): each group is assigned per partition index once.
    let mut groups: BTreeMap<(Vec<&str>, i32), Vec<Uuid>> = BTreeMap::new();
    for (topic, &count) in partitions {
        let subscribed: Vec<&str> = (members.iter())
            .filter(|(_, s)| s.topics.contains(topic))
            .map(|(m, _)| m.as_str())
            .collect();
        if subscribed.is_empty() || count <= 0 {
            continue;
        }
        groups.entry((subscribed, count)).or_default().push(*topic);
    }
    for ((subscribed, count), topics) in groups {
        let owners = match racks {
            None => plain_ranges(subscribed.len(), count),
            Some(racks) => rack_ranges(&subscribed, count, &topics, racks),
        };
        for topic in topics {
            for (p, &i) in (0..count).zip(&owners) {
                let set = out.entry(subscribed[i].to_string()).or_default();
                set.entry(topic).or_default().insert(p);
            }
        }
    }
    out
}

/// The owner (index into the subscribers) of each of `count` partitions: contiguous ranges, the first
/// `count % n` members one partition more.
fn plain_ranges(n: usize, count: i32) -> Vec<usize> {
    let count = count.max(0) as usize;
    let (per, extra) = (count / n, count % n);
    (0..n)
        .flat_map(|i| std::iter::repeat_n(i, per + usize::from(i < extra)))
        .collect()
}

/// KIP-881's rack-aware range: the owner (index into `subscribed`) of each of `count` partition indexes of
/// the co-partitioned `topics`. Quotas are those of [`plain_ranges`] (which members get the extra partitions
/// may differ: rack-matching members claim them first).
fn rack_ranges(subscribed: &[&str], count: i32, topics: &[Uuid], racks: &Racks<'_>) -> Vec<usize> {
    let n = subscribed.len();
    let size = count.max(0) as usize;
    let per = size / n;
    let mut extra = size % n;
    let mut owner: Vec<Option<usize>> = vec![None; size];
    let mut quota = vec![per; n];
    let mut taken = vec![0usize; n];
    // Rack-matching partitions first, within each member's quota.
    for (i, m) in subscribed.iter().enumerate() {
        let on_rack: Vec<usize> = (0..size)
            .filter(|&p| owner[p].is_none())
            .filter(|&p| topics.iter().all(|t| racks.matches(m, t, p as i32)))
            .collect();
        if on_rack.len() > per && extra > 0 {
            quota[i] += 1;
            extra -= 1;
        }
        for &p in on_rack.iter().take(quota[i]) {
            owner[p] = Some(i);
            taken[i] += 1;
        }
    }
    // The rest in range order: members in order fill their quotas (the extras left going to the first ones
    // that did not take one) with the lowest partitions left.
    let mut free = (0..size)
        .filter(|&p| owner[p].is_none())
        .collect::<Vec<_>>()
        .into_iter();
    for i in 0..n {
        if quota[i] == per && extra > 0 {
            quota[i] += 1;
            extra -= 1;
        }
        while taken[i] < quota[i] {
            let p = free.next().expect("quotas sum to the partition count");
            owner[p] = Some(i);
            taken[i] += 1;
        }
    }
    owner
        .into_iter()
        .map(|o| o.expect("every partition has an owner"))
        .collect()
}
