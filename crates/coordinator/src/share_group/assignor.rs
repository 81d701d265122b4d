//! The share groups' `simple` assignor (KIP-932; Kafka's `SimpleAssignor`): every partition of a subscribed
//! topic is assigned, and a partition may go to several members.
//!
//! Per topic, among the members subscribing to it (by member id):
//! - **members ≤ partitions**: each partition goes to exactly one member, each member getting ⌊P/M⌋ or ⌈P/M⌉
//!   partitions; a member keeps the partitions of its previous target up to its quota (sticky), the others go
//!   to the members below their quota in member-id order;
//! - **members > partitions**: each member gets one partition and each partition ⌊M/P⌋ or ⌈M/P⌉ members;
//!   a member keeps its previous partition while that partition is below its quota.
//!
//! Deterministic: the same inputs give the same assignment.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use crate::consumer::api::TopicsImage;
use crate::consumer::Assignment;

/// Computes the target assignment of `members` (member id → subscribed topic names) over the topics of
/// `image`, sticking to `previous` where balance allows. Topics missing from the image are ignored. Every
/// member appears in the result (with an empty assignment when it gets nothing).
pub fn assign(
    members: &BTreeMap<String, BTreeSet<String>>,
    image: &TopicsImage,
    previous: &BTreeMap<String, Assignment>,
) -> BTreeMap<String, Assignment> {
    let mut out: BTreeMap<String, Assignment> = members
        .keys()
        .map(|m| (m.clone(), Assignment::new()))
        .collect();
    let topics: BTreeSet<&String> = members.values().flatten().collect();
    for topic in topics {
        let Some((id, partitions)) = image.topic(topic) else {
            continue;
        };
        if partitions <= 0 {
            continue;
        }
        let subs: Vec<&String> = (members.iter())
            .filter(|(_, t)| t.contains(topic))
            .map(|(m, _)| m)
            .collect();
        let had = |m: &String| -> BTreeSet<i32> {
            (previous
                .get(m)
                .and_then(|a| a.get(&id))
                .cloned()
                .unwrap_or_default())
            .into_iter()
            .filter(|p| *p < partitions)
            .collect()
        };
        let per_member = match subs.len() as i64 <= i64::from(partitions) {
            true => spread_partitions(&subs, partitions, &had),
            false => spread_members(&subs, partitions, &had),
        };
        for (m, ps) in per_member {
            if !ps.is_empty() {
                out.entry(m.clone()).or_default().insert(id, ps);
            }
        }
    }
    out
}

/// Members ≤ partitions: every partition to one member, balanced, sticky.
fn spread_partitions<'a>(
    subs: &[&'a String],
    partitions: i32,
    had: &dyn Fn(&String) -> BTreeSet<i32>,
) -> BTreeMap<&'a String, BTreeSet<i32>> {
    let m = subs.len();
    let n = partitions as usize;
    let quota = |i: usize| n / m + usize::from(i < n % m);
    let mut taken = vec![false; n];
    let mut result: BTreeMap<&String, BTreeSet<i32>> = BTreeMap::new();
    for (i, member) in subs.iter().enumerate() {
        let keep: BTreeSet<i32> = (had(member).into_iter())
            .filter(|p| !taken[*p as usize])
            .take(quota(i))
            .collect();
        for p in &keep {
            taken[*p as usize] = true;
        }
        result.insert(member, keep);
    }
    let mut free = (0..partitions).filter(|p| !taken[*p as usize]);
    for (i, member) in subs.iter().enumerate() {
        let ps = result.entry(member).or_default();
        while ps.len() < quota(i) {
            match free.next() {
                Some(p) => ps.insert(p),
                None => break,
            };
        }
    }
    result
}

/// Members > partitions: one partition per member, each partition shared by a balanced number of members,
/// sticky.
fn spread_members<'a>(
    subs: &[&'a String],
    partitions: i32,
    had: &dyn Fn(&String) -> BTreeSet<i32>,
) -> BTreeMap<&'a String, BTreeSet<i32>> {
    let n = partitions as usize;
    let m = subs.len();
    let quota = |p: usize| m / n + usize::from(p < m % n);
    let mut load = vec![0usize; n];
    let mut result: BTreeMap<&String, BTreeSet<i32>> = BTreeMap::new();
    let mut unplaced = Vec::new();
    for member in subs {
        match had(member)
            .into_iter()
            .find(|p| load[*p as usize] < quota(*p as usize))
        {
            Some(p) => {
                load[p as usize] += 1;
                result.insert(member, BTreeSet::from([p]));
            }
            None => unplaced.push(*member),
        }
    }
    for member in unplaced {
        let p = (0..n).find(|p| load[*p] < quota(*p)).unwrap_or(0);
        load[p] += 1;
        result.insert(member, BTreeSet::from([p as i32]));
    }
    result
}

/// The partitions of `a` as (topic id, partition) pairs.
pub fn pairs(a: &Assignment) -> impl Iterator<Item = (Uuid, i32)> + '_ {
    a.iter()
        .flat_map(|(t, ps)| ps.iter().map(move |p| (*t, *p)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image() -> TopicsImage {
        TopicsImage::new(
            1,
            [
                ("one".to_string(), Uuid::from_u128(1), 1),
                ("six".to_string(), Uuid::from_u128(6), 6),
            ],
        )
    }

    fn members(n: usize, topics: &[&str]) -> BTreeMap<String, BTreeSet<String>> {
        (0..n)
            .map(|i| {
                let t = topics.iter().map(|s| s.to_string()).collect();
                (format!("m{i}"), t)
            })
            .collect()
    }

    fn counts(a: &BTreeMap<String, Assignment>, topic: Uuid, n: i32) -> Vec<usize> {
        (0..n)
            .map(|p| {
                a.values()
                    .filter(|x| x.get(&topic).is_some_and(|s| s.contains(&p)))
                    .count()
            })
            .collect()
    }

    #[test]
    fn five_members_share_one_partition() {
        let a = assign(&members(5, &["one"]), &image(), &BTreeMap::new());
        assert_eq!(a.len(), 5);
        assert_eq!(counts(&a, Uuid::from_u128(1), 1), vec![5]);
    }

    #[test]
    fn fewer_members_than_partitions_split_them_exactly_once_and_balanced() {
        let a = assign(&members(4, &["six"]), &image(), &BTreeMap::new());
        assert_eq!(counts(&a, Uuid::from_u128(6), 6), vec![1; 6]);
        let sizes: Vec<usize> = a.values().map(|x| pairs(x).count()).collect();
        assert_eq!(sizes, vec![2, 2, 1, 1]);
    }

    #[test]
    fn more_members_than_partitions_balance_the_sharing() {
        let a = assign(&members(8, &["six"]), &image(), &BTreeMap::new());
        let mut c = counts(&a, Uuid::from_u128(6), 6);
        c.sort();
        assert_eq!(c, vec![1, 1, 1, 1, 2, 2]);
        assert!(a.values().all(|x| pairs(x).count() == 1));
    }

    #[test]
    fn a_joining_member_moves_as_few_partitions_as_balance_needs() {
        let first = assign(&members(2, &["six"]), &image(), &BTreeMap::new());
        let second = assign(&members(3, &["six"]), &image(), &first);
        for m in ["m0", "m1"] {
            let before: BTreeSet<_> = pairs(&first[m]).collect();
            let after: BTreeSet<_> = pairs(&second[m]).collect();
            assert!(after.is_subset(&before), "{m} kept {after:?} of {before:?}");
            assert_eq!(after.len(), 2);
        }
        assert_eq!(pairs(&second["m2"]).count(), 2);
    }

    #[test]
    fn unknown_topics_and_unsubscribed_members_get_nothing() {
        let mut ms = members(2, &["missing"]);
        ms.insert("x".into(), BTreeSet::new());
        let a = assign(&ms, &image(), &BTreeMap::new());
        assert!(a.values().all(|x| x.is_empty()));
        assert_eq!(a.len(), 3);
    }
}
