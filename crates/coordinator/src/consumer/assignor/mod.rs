//! Server-side assignors of consumer groups (`group.consumer.assignors`, KIP-848): `uniform` (the default) and
//! `range`. Pure functions of the members' subscriptions and racks, the previous target assignment, the
//! topics' partition counts and the racks of each partition's replicas; deterministic (members are visited in
//! id order).
//!
//! Rack awareness. A member's rack is its `client.rack` (ConsumerGroupHeartbeat `RackId`); a partition's racks
//! are the `broker.rack`s of its replicas' brokers ([`PartitionRacks`], from the
//! [`TopicsImage`](super::api::TopicsImage)). When some member has a rack and some subscribed partition has
//! replica racks, both assignors prefer giving a partition to a member on one of its replicas' racks (the
//! member can then fetch from a follower in its rack, KIP-392), without giving up balance:
//! - `uniform` (`uniform.rs`): the assignment is first computed as without racks (sticky, balanced), then
//!   improved by moves and swaps that each rack-match at least one more partition and leave every member's
//!   partition count balanced as before.
//! - `range` (`range.rs`): KIP-881's rack-aware range assignor: per topic, rack-matching members first take
//!   matching partitions within their range quota, then the rest are filled in range order; co-partitioned
//!   topics (same subscribers, same partition count) still land on the same member per partition index.
//!
//! When no member has a rack or no partition has racks, the output is exactly that of the rack-less
//! assignors. Kafka's server-side assignors ignore racks: their rack code was removed for 3.8 (KAFKA-16694)
//! and Kafka 4.x's `UniformHomogeneousAssignmentBuilder`, `UniformHeterogeneousAssignmentBuilder` and
//! `RangeAssignor` (`org.apache.kafka.coordinator.group.assignor`) never call
//! `SubscribedTopicDescriber::racksForPartition`, though it still exists; Kafka only hashes partition racks
//! into the topic metadata hash (KIP-1101), and its rack-aware server assignor is a test-only class
//! (KAFKA-17747). Runnel's assignors use the racks.

mod rack;
mod range;
#[cfg(test)]
mod tests;
mod uniform;

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::Assignment;

/// Name of the uniform assignor.
pub const UNIFORM: &str = "uniform";
/// Name of the range assignor.
pub const RANGE: &str = "range";

/// Per topic id, the racks of each partition's replicas, indexed by partition (KIP-881's
/// `racksForPartition`). A topic absent, or a partition past the end of its vector, has no racks.
pub type PartitionRacks = BTreeMap<Uuid, Vec<BTreeSet<String>>>;

/// What an assignor sees of one member.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemberSpec {
    /// Ids of the topics the member subscribes to (topics that exist).
    pub topics: BTreeSet<Uuid>,
    /// Its previous target assignment (stickiness).
    pub previous: Assignment,
    /// Its `client.rack`, if any (an empty rack is no rack).
    pub rack: Option<String>,
}

/// Runs assignor `name` ([`UNIFORM`] or [`RANGE`]; anything else runs [`UNIFORM`]) over `members` and the
/// topics' partition counts `partitions`, without partition racks. Every partition of a subscribed topic goes
/// to exactly one member subscribed to it; members subscribed to nothing get an empty assignment.
pub fn assign(
    name: &str,
    members: &BTreeMap<String, MemberSpec>,
    partitions: &BTreeMap<Uuid, i32>,
) -> BTreeMap<String, Assignment> {
    assign_with_racks(name, members, partitions, &PartitionRacks::new())
}

/// [`assign`], rack-aware: `racks` gives the racks of the partitions' replicas. Same invariant as
/// [`assign`]; identical to it when no member has a rack or no subscribed partition has racks.
pub fn assign_with_racks(
    name: &str,
    members: &BTreeMap<String, MemberSpec>,
    partitions: &BTreeMap<Uuid, i32>,
    racks: &PartitionRacks,
) -> BTreeMap<String, Assignment> {
    let racks = rack::Racks::new(members, partitions, racks);
    let out = match name {
        RANGE => range::range(members, partitions, racks.as_ref()),
        _ => uniform::uniform(members, partitions, racks.as_ref()),
    };
    debug_assert!(every_partition_once(&out, members, partitions));
    out
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
