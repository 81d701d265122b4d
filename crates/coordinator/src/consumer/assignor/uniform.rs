//! The `uniform` assignor (Kafka's default server assignor, KIP-848), rack-aware when racks are known.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::rack::Racks;
use super::{Assignment, MemberSpec};

/// Who owns each partition, and how many partitions each member owns.
type Owners<'a> = BTreeMap<(Uuid, i32), &'a str>;
type Loads<'a> = BTreeMap<&'a str, usize>;

/// Kafka's uniform assignor's goals: balanced (member partition counts differ by at most one among members
/// that could take each other's partitions) and sticky (a partition stays with its previous member unless
/// balance requires a move). Previous assignments are kept where still valid, free partitions go to the
/// least-loaded subscribed member (among equally loaded ones, a rack-matching one first), then partitions
/// move from the most- to the least-loaded eligible member until no move narrows the gap. With `racks`,
/// [`rack_improve`] then rack-matches what it can without unbalancing.
pub(super) fn uniform(
    members: &BTreeMap<String, MemberSpec>,
    partitions: &BTreeMap<Uuid, i32>,
    racks: Option<&Racks<'_>>,
) -> BTreeMap<String, Assignment> {
    let mut owner: Owners<'_> = BTreeMap::new();
    let mut load: Loads<'_> = members.keys().map(|m| (m.as_str(), 0)).collect();
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
                if let Entry::Vacant(e) = owner.entry((*topic, p)) {
                    e.insert(m.as_str());
                    *load.entry(m.as_str()).or_default() += 1;
                }
            }
        }
    }
    // Free partitions to the least-loaded subscribed member (rack-matching first among equals).
    for (topic, &count) in partitions {
        let candidates = subscribers(members, topic);
        if candidates.is_empty() {
            continue;
        }
        for p in 0..count.max(0) {
            if owner.contains_key(&(*topic, p)) {
                continue;
            }
            let m = *candidates
                .iter()
                .min_by_key(|m| {
                    let far = racks.is_some_and(|r| !r.matches(m, topic, p));
                    (load[**m], far, **m)
                })
                .expect("non-empty");
            owner.insert((*topic, p), m);
            *load.get_mut(m).expect("member") += 1;
        }
    }
    balance(&mut owner, &mut load, members);
    if let Some(racks) = racks {
        rack_improve(&mut owner, &mut load, members, racks);
    }
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

/// The members subscribed to `topic`, in id order.
fn subscribers<'a>(members: &'a BTreeMap<String, MemberSpec>, topic: &Uuid) -> Vec<&'a str> {
    (members.iter())
        .filter(|(_, s)| s.topics.contains(topic))
        .map(|(m, _)| m.as_str())
        .collect()
}

/// Moves partitions from the most-loaded member to an eligible member carrying at least two fewer, until no
/// such move exists. Each move lowers the sum of squared loads, so this ends; bounded anyway.
fn balance<'a>(
    owner: &mut Owners<'a>,
    load: &mut Loads<'a>,
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

/// Rack-matches partitions of a balanced assignment without unbalancing it. A partition held by a member off
/// its replicas' racks goes to a subscribed member on one of them, either
/// - by a move, when the receiver holds exactly one partition fewer (the two members' counts trade places,
///   so the multiset of counts — the balance — is unchanged), or
/// - by a swap with a partition the receiver holds off its racks and the giver may take (counts unchanged).
///
/// Either keeps [`balanced`] (checked) and rack-matches at least one more partition, so this ends.
fn rack_improve<'a>(
    owner: &mut Owners<'a>,
    load: &mut Loads<'a>,
    members: &'a BTreeMap<String, MemberSpec>,
    racks: &Racks<'_>,
) {
    let subs: BTreeMap<Uuid, Vec<&str>> = (owner.keys())
        .map(|(t, _)| *t)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .map(|t| (t, subscribers(members, &t)))
        .collect();
    // Per member, the partitions it holds off its racks (what a swap may give back).
    let mut far: BTreeMap<&str, BTreeSet<(Uuid, i32)>> = BTreeMap::new();
    for ((t, p), m) in owner.iter() {
        if !racks.matches(m, t, *p) {
            far.entry(*m).or_default().insert((*t, *p));
        }
    }
    let mut s = Improve {
        owner,
        load,
        far,
        subs,
        racks,
    };
    for _ in 0..=s.owner.len() {
        let todo: Vec<((Uuid, i32), &str)> = (s.far.iter())
            .flat_map(|(m, ps)| ps.iter().map(move |k| (*k, *m)))
            .collect();
        let mut improved = false;
        for ((topic, p), giver) in todo {
            // An earlier swap of this pass may have moved it.
            if s.owner.get(&(topic, p)) != Some(&giver) {
                continue;
            }
            let mut takers: Vec<&str> = (s.subs[&topic].iter().copied())
                .filter(|m| *m != giver && racks.matches(m, &topic, p))
                .collect();
            takers.sort_by_key(|m| (s.load[m], *m));
            for taker in takers {
                if s.try_move((topic, p), giver, taker) || s.try_swap((topic, p), giver, taker) {
                    improved = true;
                    break;
                }
            }
        }
        if !improved {
            return;
        }
    }
}

/// The state [`rack_improve`] works on.
struct Improve<'s, 'a, 'r> {
    owner: &'s mut Owners<'a>,
    load: &'s mut Loads<'a>,
    far: BTreeMap<&'a str, BTreeSet<(Uuid, i32)>>,
    subs: BTreeMap<Uuid, Vec<&'a str>>,
    racks: &'s Racks<'r>,
}

impl<'a> Improve<'_, 'a, '_> {
    /// The fewest partitions a subscriber of `topic` holds.
    fn floor(&self, topic: &Uuid) -> usize {
        (self.subs[topic].iter())
            .map(|m| self.load[m])
            .min()
            .unwrap_or(0)
    }

    /// Gives `key` (off `from`'s racks) to `to`, which it matches when `matched`.
    fn give(&mut self, key: (Uuid, i32), from: &'a str, to: &'a str, matched: bool) {
        self.owner.insert(key, to);
        if let Some(ps) = self.far.get_mut(from) {
            ps.remove(&key);
        }
        if !matched {
            self.far.entry(to).or_default().insert(key);
        }
    }

    /// Moves `key` from `giver` to `taker` (on its racks) when `taker` holds one partition fewer and the
    /// result is [`balanced`]; true when moved.
    fn try_move(&mut self, key: (Uuid, i32), giver: &'a str, taker: &'a str) -> bool {
        if self.load[taker] + 1 != self.load[giver] {
            return false;
        }
        *self.load.get_mut(giver).expect("member") -= 1;
        *self.load.get_mut(taker).expect("member") += 1;
        self.owner.insert(key, taker);
        if balanced(self.owner, self.load, &self.subs) {
            self.give(key, giver, taker, true);
            return true;
        }
        self.owner.insert(key, giver);
        *self.load.get_mut(giver).expect("member") += 1;
        *self.load.get_mut(taker).expect("member") -= 1;
        false
    }

    /// Swaps `key` (held by `giver`, on `taker`'s racks) with a partition `taker` holds off its racks that
    /// `giver` may take (one on `giver`'s racks first, then the lowest), when the result stays [`balanced`]
    /// (counts are unchanged: only the two partitions' owners' subscribers matter); true when swapped.
    fn try_swap(&mut self, key: (Uuid, i32), giver: &'a str, taker: &'a str) -> bool {
        if self.floor(&key.0) + 1 < self.load[taker] {
            return false;
        }
        let Some(theirs) = self.far.get(taker) else {
            return false;
        };
        let back = (theirs.iter())
            .filter(|(t, _)| self.subs[t].contains(&giver))
            .filter(|(t, _)| self.floor(t) + 1 >= self.load[giver])
            .min_by_key(|(t, q)| (!self.racks.matches(giver, t, *q), *t, *q))
            .copied();
        let Some(back) = back else {
            return false;
        };
        let back_matched = self.racks.matches(giver, &back.0, back.1);
        self.give(key, giver, taker, true);
        self.give(back, taker, giver, back_matched);
        true
    }
}

/// The balance [`balance`] leaves: no member holds a partition that a subscribed member carrying at least two
/// fewer partitions could take.
fn balanced(owner: &Owners<'_>, load: &Loads<'_>, subs: &BTreeMap<Uuid, Vec<&str>>) -> bool {
    let floor: BTreeMap<Uuid, usize> = (subs.iter())
        .map(|(t, ms)| (*t, ms.iter().map(|m| load[m]).min().unwrap_or(0)))
        .collect();
    (owner.iter()).all(|((t, _), m)| floor[t] + 1 >= load[m])
}
