//! Tests of the assignors: the rack-less behaviour, rack awareness (KIP-881) and a property test.

use super::*;

fn t(n: u128) -> Uuid {
    Uuid::from_u128(n)
}

fn spec(topics: &[u128], previous: Assignment) -> MemberSpec {
    MemberSpec {
        topics: topics.iter().map(|n| t(*n)).collect(),
        previous,
        rack: None,
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

// Rack awareness (KIP-881).

fn racked(topics: &[u128], rack: &str) -> MemberSpec {
    MemberSpec {
        rack: Some(rack.to_string()),
        ..spec(topics, Assignment::new())
    }
}

/// Racks of a topic's partitions, one rack per partition (replication factor 1), by the rack names' letters.
fn one_rack_each(racks: &str) -> Vec<BTreeSet<String>> {
    racks
        .chars()
        .map(|r| [r.to_string()].into_iter().collect())
        .collect()
}

fn set(ps: &[i32]) -> BTreeSet<i32> {
    ps.iter().copied().collect()
}

/// How many partitions sit on a member whose rack holds one of their replicas.
fn rack_matched(
    out: &BTreeMap<String, Assignment>,
    members: &BTreeMap<String, MemberSpec>,
    racks: &PartitionRacks,
) -> usize {
    let mut n = 0;
    for (m, a) in out {
        let Some(rack) = members[m].rack.as_deref() else {
            continue;
        };
        for (topic, ps) in a {
            for p in ps {
                let on = (racks.get(topic)).and_then(|v| v.get(*p as usize));
                n += usize::from(on.is_some_and(|rs| rs.contains(rack)));
            }
        }
    }
    n
}

fn members_of(specs: Vec<(&str, MemberSpec)>) -> BTreeMap<String, MemberSpec> {
    specs.into_iter().map(|(m, s)| (m.to_string(), s)).collect()
}

#[test]
fn uniform_gives_members_the_partitions_on_their_rack() {
    let partitions: BTreeMap<Uuid, i32> = [(t(1), 6)].into_iter().collect();
    let racks: PartitionRacks = [(t(1), one_rack_each("aaabbb"))].into_iter().collect();
    let members = members_of(vec![("m0", racked(&[1], "b")), ("m1", racked(&[1], "a"))]);
    let out = assign_with_racks(UNIFORM, &members, &partitions, &racks);
    assert_eq!(out["m0"][&t(1)], set(&[3, 4, 5]), "{out:?}");
    assert_eq!(out["m1"][&t(1)], set(&[0, 1, 2]), "{out:?}");
    // Re-run on its own output: nothing moves.
    let mut again = members.clone();
    for (m, a) in &out {
        again.get_mut(m).unwrap().previous = a.clone();
    }
    assert_eq!(assign_with_racks(UNIFORM, &again, &partitions, &racks), out);
    // A third member on rack a: still 2/2/2, and only one partition can be off its rack.
    again.insert("m2".into(), racked(&[1], "a"));
    let third = assign_with_racks(UNIFORM, &again, &partitions, &racks);
    assert_eq!(counts(&third), vec![2, 2, 2], "{third:?}");
    assert_eq!(rack_matched(&third, &again, &racks), 5, "{third:?}");
}

#[test]
fn uniform_with_racks_keeps_balance_when_the_racks_are_skewed() {
    // Every replica on rack a: balance wins over rack-matching, and the a member carries the extra one.
    let partitions: BTreeMap<Uuid, i32> = [(t(1), 7)].into_iter().collect();
    let racks: PartitionRacks = [(t(1), one_rack_each("aaaaaaa"))].into_iter().collect();
    let members = members_of(vec![
        ("m0", racked(&[1], "b")),
        ("m1", racked(&[1], "b")),
        ("m2", racked(&[1], "a")),
    ]);
    let out = assign_with_racks(UNIFORM, &members, &partitions, &racks);
    assert_eq!(counts(&out), vec![2, 2, 3], "{out:?}");
}

#[test]
fn uniform_with_racks_and_different_subscriptions_stays_balanced() {
    // m0 (rack b) takes A and B, m1 (rack a) B only; B's partitions all on rack b. m1 must still take all of
    // B for balance, as without racks.
    let partitions: BTreeMap<Uuid, i32> = [(t(1), 4), (t(2), 4)].into_iter().collect();
    let racks: PartitionRacks = [(t(2), one_rack_each("bbbb"))].into_iter().collect();
    let members = members_of(vec![
        ("m0", racked(&[1, 2], "b")),
        ("m1", racked(&[2], "a")),
    ]);
    let out = assign_with_racks(UNIFORM, &members, &partitions, &racks);
    assert_eq!(out["m0"][&t(1)].len(), 4, "{out:?}");
    assert_eq!(out["m1"][&t(2)].len(), 4, "{out:?}");
}

#[test]
fn range_rack_matching_members_take_their_partitions_first() {
    let partitions: BTreeMap<Uuid, i32> = [(t(1), 6)].into_iter().collect();
    let racks: PartitionRacks = [(t(1), one_rack_each("bbaacc"))].into_iter().collect();
    let members = members_of(vec![
        ("m0", racked(&[1], "a")),
        ("m1", racked(&[1], "b")),
        ("m2", racked(&[1], "c")),
    ]);
    let out = assign_with_racks(RANGE, &members, &partitions, &racks);
    assert_eq!(out["m0"][&t(1)], set(&[2, 3]));
    assert_eq!(out["m1"][&t(1)], set(&[0, 1]));
    assert_eq!(out["m2"][&t(1)], set(&[4, 5]));
    // Uneven: 7 partitions over two members, quotas 4 and 3; the b member claims the extra one.
    let partitions: BTreeMap<Uuid, i32> = [(t(1), 7)].into_iter().collect();
    let racks: PartitionRacks = [(t(1), one_rack_each("bbbbaaa"))].into_iter().collect();
    let members = members_of(vec![("m0", racked(&[1], "a")), ("m1", racked(&[1], "b"))]);
    let out = assign_with_racks(RANGE, &members, &partitions, &racks);
    assert_eq!(out["m0"][&t(1)], set(&[4, 5, 6]));
    assert_eq!(out["m1"][&t(1)], set(&[0, 1, 2, 3]));
}

#[test]
fn range_with_racks_keeps_quotas_when_one_rack_holds_everything() {
    // All on rack a; quotas 2, 1, 1: m1 (a) claims the extra one and the lowest, the rest fill in order.
    let partitions: BTreeMap<Uuid, i32> = [(t(1), 4)].into_iter().collect();
    let racks: PartitionRacks = [(t(1), one_rack_each("aaaa"))].into_iter().collect();
    let members = members_of(vec![
        ("m0", racked(&[1], "b")),
        ("m1", racked(&[1], "a")),
        ("m2", racked(&[1], "a")),
    ]);
    let out = assign_with_racks(RANGE, &members, &partitions, &racks);
    assert_eq!(out["m1"][&t(1)], set(&[0, 1]));
    assert_eq!(out["m2"][&t(1)], set(&[2]));
    assert_eq!(out["m0"][&t(1)], set(&[3]));
}

#[test]
fn range_with_racks_keeps_co_partitioned_topics_aligned() {
    let partitions: BTreeMap<Uuid, i32> = [(t(1), 4), (t(2), 4)].into_iter().collect();
    let members = members_of(vec![
        ("m0", racked(&[1, 2], "a")),
        ("m1", racked(&[1, 2], "b")),
    ]);
    let same: PartitionRacks = [(t(1), one_rack_each("bbaa")), (t(2), one_rack_each("bbaa"))]
        .into_iter()
        .collect();
    let out = assign_with_racks(RANGE, &members, &partitions, &same);
    for topic in [1, 2] {
        assert_eq!(out["m0"][&t(topic)], set(&[2, 3]), "{out:?}");
        assert_eq!(out["m1"][&t(topic)], set(&[0, 1]), "{out:?}");
    }
    // Racks that disagree between the topics: the indexes still go together.
    let differ: PartitionRacks = [(t(1), one_rack_each("bbaa")), (t(2), one_rack_each("abab"))]
        .into_iter()
        .collect();
    let out = assign_with_racks(RANGE, &members, &partitions, &differ);
    for m in ["m0", "m1"] {
        assert_eq!(out[m][&t(1)], out[m][&t(2)], "{out:?}");
    }
}

#[test]
fn without_member_racks_or_partition_racks_the_output_is_unchanged() {
    let partitions: BTreeMap<Uuid, i32> = [(t(1), 7), (t(2), 3), (t(3), 5)].into_iter().collect();
    let previous: Assignment = [(t(1), set(&[5, 6])), (t(3), set(&[0]))]
        .into_iter()
        .collect();
    let plain = members_of(vec![
        ("m0", spec(&[1, 2], Assignment::new())),
        ("m1", spec(&[1, 3], previous)),
        ("m2", spec(&[1, 2, 3], Assignment::new())),
    ]);
    let racks: PartitionRacks = [
        (t(1), one_rack_each("abcabca")),
        (t(3), one_rack_each("ccbba")),
    ]
    .into_iter()
    .collect();
    let mut with_racks = plain.clone();
    for (s, r) in with_racks.values_mut().zip(["a", "b", "c"]) {
        s.rack = Some(r.to_string());
    }
    for name in [UNIFORM, RANGE] {
        let today = assign(name, &plain, &partitions);
        // Partition racks, no member rack.
        assert_eq!(assign_with_racks(name, &plain, &partitions, &racks), today);
        // Member racks, no partition rack.
        assert_eq!(assign(name, &with_racks, &partitions), today);
        let empty: PartitionRacks = [(t(1), vec![BTreeSet::new(); 7])].into_iter().collect();
        assert_eq!(
            assign_with_racks(name, &with_racks, &partitions, &empty),
            today
        );
    }
}

/// A random group: members with random racks and subscriptions (homogeneous or not), topics with random
/// partition counts and replica racks, random (possibly conflicting) previous assignments.
#[derive(Debug, Clone)]
struct Case {
    members: BTreeMap<String, MemberSpec>,
    partitions: BTreeMap<Uuid, i32>,
    racks: PartitionRacks,
}

fn case() -> impl proptest::strategy::Strategy<Value = Case> {
    use proptest::prelude::*;
    const RACKS: [&str; 3] = ["a", "b", "c"];
    let topics = proptest::collection::vec(
        proptest::collection::vec(0u8..8, 0..9), // per partition: a bitmask of racks
        1..4,
    );
    let members = proptest::collection::vec(
        (
            0usize..4,
            1u8..8,
            proptest::collection::vec((0u8..3, 0i32..9), 0..6),
        ),
        1..7,
    );
    (topics, members, any::<bool>()).prop_map(|(topics, members, homogeneous)| {
        let rack_set = |mask: u8| -> BTreeSet<String> {
            (0..3)
                .filter(|i| mask & (1 << i) != 0)
                .map(|i| RACKS[i].to_string())
                .collect()
        };
        let partitions: BTreeMap<Uuid, i32> = (topics.iter().enumerate())
            .map(|(i, ps)| (t(i as u128 + 1), ps.len() as i32))
            .collect();
        let racks: PartitionRacks = (topics.iter().enumerate())
            .map(|(i, ps)| (t(i as u128 + 1), ps.iter().map(|m| rack_set(*m)).collect()))
            .collect();
        let members = (members.into_iter().enumerate())
            .map(|(i, (rack, subs, previous))| {
                let subs = if homogeneous { 7 } else { subs };
                let topics: BTreeSet<Uuid> = (0..topics.len())
                    .filter(|j| subs & (1 << j) != 0)
                    .map(|j| t(j as u128 + 1))
                    .collect();
                let mut prev = Assignment::new();
                for (topic, p) in previous {
                    prev.entry(t(u128::from(topic) + 1)).or_default().insert(p);
                }
                let spec = MemberSpec {
                    topics,
                    previous: prev,
                    rack: RACKS.get(rack).map(|r| r.to_string()),
                };
                (format!("m{i}"), spec)
            })
            .collect();
        Case {
            members,
            partitions,
            racks,
        }
    })
}

fn loads(out: &BTreeMap<String, Assignment>) -> BTreeMap<&str, usize> {
    (out.iter())
        .map(|(m, a)| (m.as_str(), a.values().map(BTreeSet::len).sum()))
        .collect()
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(400))]

    /// With random racks: every partition is assigned exactly once; uniform stays balanced (no member holds a
    /// partition a subscriber with two fewer could take) and is a fixed point of itself; range keeps every
    /// topic's range quotas; without member racks the output is the rack-less one.
    #[test]
    fn rack_aware_assignors_assign_once_and_stay_balanced(c in case()) {
        for name in [UNIFORM, RANGE] {
            let out = assign_with_racks(name, &c.members, &c.partitions, &c.racks);
            proptest::prop_assert!(every_partition_once(&out, &c.members, &c.partitions), "{out:?}");
            let mut rackless = c.members.clone();
            for s in rackless.values_mut() {
                s.rack = None;
            }
            proptest::prop_assert_eq!(
                assign_with_racks(name, &rackless, &c.partitions, &c.racks),
                assign(name, &rackless, &c.partitions)
            );
            let load = loads(&out);
            for (topic, &count) in &c.partitions {
                let subs: Vec<&String> = (c.members.iter())
                    .filter(|(_, s)| s.topics.contains(topic))
                    .map(|(m, _)| m)
                    .collect();
                if subs.is_empty() || count == 0 {
                    continue;
                }
                if name == RANGE {
                    let (per, extra) = (count as usize / subs.len(), count as usize % subs.len());
                    let got: Vec<usize> = (subs.iter())
                        .map(|m| out[*m].get(topic).map_or(0, BTreeSet::len))
                        .collect();
                    proptest::prop_assert!(got.iter().all(|n| *n == per || *n == per + 1), "{got:?}");
                    proptest::prop_assert_eq!(got.iter().filter(|n| **n == per + 1).count(), extra);
                    continue;
                }
                let floor = subs.iter().map(|m| load[m.as_str()]).min().unwrap_or(0);
                for (m, a) in &out {
                    if a.get(topic).is_some_and(|ps| !ps.is_empty()) {
                        proptest::prop_assert!(floor + 1 >= load[m.as_str()], "{m} on {topic}: {out:?}");
                    }
                }
            }
            if name == UNIFORM {
                let mut again = c.members.clone();
                for (m, a) in &out {
                    again.get_mut(m).unwrap().previous = a.clone();
                }
                proptest::prop_assert_eq!(
                    &assign_with_racks(name, &again, &c.partitions, &c.racks), &out
                );
            }
        }
    }
}
