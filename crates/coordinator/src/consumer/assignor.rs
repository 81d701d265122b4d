//! Server-side assignors of consumer groups (`group.consumer.assignors`, KIP-848): `uniform` (the default) and
//! `range`. Pure functions of the members' subscriptions, the previous target assignment and the topics'
//! partition counts; deterministic (members are visited in id order).

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::Assignment;

/// Name of the uniform assignor.
pub const UNIFORM: &str = "uniform";
/// Name of the range assignor.
pub const RANGE: &str = "range";

/// What an assignor sees of one member.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberSpec {
    /// Ids of the topics the member subscribes to (topics that exist).
    pub topics: BTreeSet<Uuid>,
    /// Its previous target assignment (stickiness).
    pub previous: Assignment,
}

/// Runs assignor `name` ([`UNIFORM`] or [`RANGE`]; anything else runs [`UNIFORM`]) over `members` and the
/// topics' partition counts `partitions`. Every partition of a subscribed topic goes to exactly one member
/// subscribed to it; members subscribed to nothing get an empty assignment.
pub fn assign(
    name: &str,
    members: &BTreeMap<String, MemberSpec>,
    partitions: &BTreeMap<Uuid, i32>,
) -> BTreeMap<String, Assignment> {
    let out = match name {
        RANGE => range(members, partitions),
        _ => uniform(members, partitions),
    };
    debug_assert!(every_partition_once(&out, members, partitions));
    out
}

/// Kafka's range assignor, per topic: the members subscribed to it, in member-id order, take contiguous
/// ranges of its partitions, the first `partitions % members` one more than the others. Co-partitioned
/// topics therefore land on the same member.
fn range(
    members: &BTreeMap<String, MemberSpec>,
    partitions: &BTreeMap<Uuid, i32>,
) -> BTreeMap<String, Assignment> {
    let mut out: BTreeMap<String, Assignment> = members
        .keys()
        .map(|m| (m.clone(), Assignment::new()))
        .collect();
    for (topic, &count) in partitions {
        let subscribed: Vec<&String> = (members.iter())
            .filter(|(_, s)| s.topics.contains(topic))
            .map(|(m, _)| m)
            .collect();
        if subscribed.is_empty() || count <= 0 {
            continue;
        }
        let n = subscribed.len() as i32;
        let (per, extra) = (count / n, count % n);
        let mut next = 0;
        for (i, m) in subscribed.into_iter().enumerate() {
            let take = per + i32::from((i as i32) < extra);
            if take > 0 {
                let set = out.entry(m.clone()).or_default().entry(*topic).or_default();
                set.extend(next..next + take);
            }
            next += take;
        }
    }
    out
}

/// Kafka's uniform assignor's goals: balanced (member partition counts differ by at most one among members
/// that could take each other's partitions) and sticky (a partition stays with its previous member unless
/// balance requires a move). Previous assignments are kept where still valid, free partitions go to the
/// least-loaded subscribed member, then partitions move from the most- to the least-loaded eligible member
/// until no move narrows the gap.
fn uniform(
    members: &BTreeMap<String, MemberSpec>,
    partitions: &BTreeMap<Uuid, i32>,
) -> BTreeMap<String, Assignment> {
    let mut owner: BTreeMap<(Uuid, i32), &str> = BTreeMap::new();
    let mut load: BTreeMap<&str, usize> = members.keys().map(|m| (m.as_str(), 0)).collect();
    // Sticky: keep previous assignments that are still valid.
    for (m, spec) in members {
        for (topic, ps) in &spec.previous {
            let Some(&count) = partitions.get(topic) else {
                continue;
            };
            if !spec.topics.contains(topic) {
                continue;
            }
            for &p in ps.iter().filter(|&&p| p >= 0 && p < count) {
                if let std::collections::btree_map::Entry::Vacant(e) = owner.entry((*topic, p)) {
                    e.insert(m.as_str());
                    *load.entry(m.as_str()).or_default() += 1;
                }
            }
        }
    }
    let eligible = |topic: &Uuid| -> Vec<&str> {
        (members.iter())
            .filter(|(_, s)| s.topics.contains(topic))
            .map(|(m, _)| m.as_str())
            .collect()
    };
    // Free partitions to the least-loaded subscribed member.
    for (topic, &count) in partitions {
        let candidates = eligible(topic);
        if candidates.is_empty() {
            continue;
        }
        for p in 0..count.max(0) {
            if owner.contains_key(&(*topic, p)) {
                continue;
            }
            let m = *candidates
                .iter()
                .min_by_key(|m| (load[**m], **m))
                .expect("non-empty");
            owner.insert((*topic, p), m);
            *load.get_mut(m).expect("member") += 1;
        }
    }
    balance(&mut owner, &mut load, members);
    let mut out: BTreeMap<String, Assignment> = members
        .keys()
        .map(|m| (m.clone(), Assignment::new()))
        .collect();
    for ((topic, p), m) in owner {
        out.get_mut(m)
            .expect("member")
            .entry(topic)
            .or_default()
            .insert(p);
    }
    out
}

/// Moves partitions from the most-loaded member to an eligible member carrying at least two fewer, until no
/// such move exists. Each move lowers the sum of squared loads, so this ends; bounded anyway.
fn balance<'a>(
    owner: &mut BTreeMap<(Uuid, i32), &'a str>,
    load: &mut BTreeMap<&'a str, usize>,
    members: &'a BTreeMap<String, MemberSpec>,
) {
    let mut stuck: BTreeSet<&str> = BTreeSet::new();
    let limit = owner.len().saturating_mul(members.len()).saturating_add(1);
    for _ in 0..limit {
        let Some((&max_m, &max_load)) = (load.iter())
            .filter(|(m, _)| !stuck.contains(*m))
            .max_by_key(|(m, l)| (**l, std::cmp::Reverse(**m)))
        else {
            return;
        };
        // The partitions of `max_m`, latest first, so that a member keeps its lowest partitions.
        let mine: Vec<(Uuid, i32)> = (owner.iter())
            .filter(|(_, m)| **m == max_m)
            .map(|(k, _)| *k)
            .rev()
            .collect();
        let mv = mine.iter().find_map(|(topic, p)| {
            (members.iter())
                .filter(|(m, s)| s.topics.contains(topic) && load[m.as_str()] + 2 <= max_load)
                .min_by_key(|(m, _)| (load[m.as_str()], m.as_str()))
                .map(|(m, _)| ((*topic, *p), m.as_str()))
        });
        match mv {
            Some((key, to)) => {
                owner.insert(key, to);
                *load.get_mut(max_m).expect("member") -= 1;
                *load.get_mut(to).expect("member") += 1;
                stuck.clear();
            }
            None => {
                stuck.insert(max_m);
            }
        }
    }
}

/// The invariant of every assignor's output: each partition of a topic some member subscribes to is
/// assigned exactly once, to a subscribed member.
fn every_partition_once(
    out: &BTreeMap<String, Assignment>,
    members: &BTreeMap<String, MemberSpec>,
    partitions: &BTreeMap<Uuid, i32>,
) -> bool {
    let mut seen: BTreeSet<(Uuid, i32)> = BTreeSet::new();
    for (m, a) in out {
        for (t, ps) in a {
            if !members.get(m).is_some_and(|s| s.topics.contains(t)) {
                return false;
            }
            for p in ps {
                if !seen.insert((*t, *p)) {
                    return false;
                }
            }
        }
    }
    let wanted: usize = (partitions.iter())
        .filter(|(t, _)| members.values().any(|s| s.topics.contains(*t)))
        .map(|(_, &c)| c.max(0) as usize)
        .sum();
    seen.len() == wanted
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    fn spec(topics: &[u128], previous: Assignment) -> MemberSpec {
        MemberSpec {
            topics: topics.iter().map(|n| t(*n)).collect(),
            previous,
        }
    }

    fn counts(out: &BTreeMap<String, Assignment>) -> Vec<usize> {
        out.values()
            .map(|a| a.values().map(BTreeSet::len).sum())
            .collect()
    }

    #[test]
    fn uniform_balances_and_keeps_previous_owners() {
        let partitions: BTreeMap<Uuid, i32> = [(t(1), 6)].into_iter().collect();
        let mut members: BTreeMap<String, MemberSpec> = (0..3)
            .map(|i| (format!("m{i}"), spec(&[1], Assignment::new())))
            .collect();
        let first = assign(UNIFORM, &members, &partitions);
        assert_eq!(counts(&first), vec![2, 2, 2]);
        // A fourth member: one partition moves to it (2, 2, 1, 1), every other stays where it was.
        for (m, a) in &first {
            members.get_mut(m).unwrap().previous = a.clone();
        }
        members.insert("m3".into(), spec(&[1], Assignment::new()));
        let second = assign(UNIFORM, &members, &partitions);
        let mut c = counts(&second);
        c.sort();
        assert_eq!(c, vec![1, 1, 2, 2]);
        let moved: usize = (first.iter())
            .map(|(m, a)| {
                a[&t(1)]
                    .difference(second[m].get(&t(1)).unwrap_or(&BTreeSet::new()))
                    .count()
            })
            .sum();
        assert_eq!(
            moved, 1,
            "one partition moves to the new member: {first:?} → {second:?}"
        );
    }

    #[test]
    fn uniform_with_different_subscriptions_balances_what_it_can() {
        // m0 subscribes to A (4 partitions) and B (4); m1 to B only.
        let partitions: BTreeMap<Uuid, i32> = [(t(1), 4), (t(2), 4)].into_iter().collect();
        let members: BTreeMap<String, MemberSpec> = [
            ("m0".to_string(), spec(&[1, 2], Assignment::new())),
            ("m1".to_string(), spec(&[2], Assignment::new())),
        ]
        .into_iter()
        .collect();
        let out = assign(UNIFORM, &members, &partitions);
        assert_eq!(out["m0"][&t(1)].len(), 4);
        assert_eq!(
            out["m1"][&t(2)].len(),
            4,
            "m1 takes all of B to balance m0's A: {out:?}"
        );
    }

    #[test]
    fn range_gives_contiguous_ranges_per_topic() {
        let partitions: BTreeMap<Uuid, i32> = [(t(1), 7), (t(2), 2)].into_iter().collect();
        let members: BTreeMap<String, MemberSpec> = (0..3)
            .map(|i| (format!("m{i}"), spec(&[1, 2], Assignment::new())))
            .collect();
        let out = assign(RANGE, &members, &partitions);
        let a = |m: &str, topic| out[m].get(&t(topic)).cloned().unwrap_or_default();
        assert_eq!(a("m0", 1), [0, 1, 2].into_iter().collect());
        assert_eq!(a("m1", 1), [3, 4].into_iter().collect());
        assert_eq!(a("m2", 1), [5, 6].into_iter().collect());
        assert_eq!(a("m0", 2), [0].into_iter().collect());
        assert_eq!(a("m1", 2), [1].into_iter().collect());
        assert!(a("m2", 2).is_empty());
    }

    #[test]
    fn deleted_topics_and_shrunk_subscriptions_are_dropped() {
        let partitions: BTreeMap<Uuid, i32> = [(t(1), 2)].into_iter().collect();
        let previous: Assignment = [(t(1), [0, 1].into()), (t(9), [0].into())]
            .into_iter()
            .collect();
        let members: BTreeMap<String, MemberSpec> = [("m0".to_string(), spec(&[1], previous))]
            .into_iter()
            .collect();
        let out = assign(UNIFORM, &members, &partitions);
        assert_eq!(
            out["m0"],
            [(t(1), [0, 1].into())].into_iter().collect::<Assignment>()
        );
    }
}
