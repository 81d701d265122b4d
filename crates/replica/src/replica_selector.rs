//! KIP-392 fetch from the closest replica: the broker config `replica.selector.class` as a value
//! ([`ReplicaSelector`]) and the leader's choice of a consumer's preferred read replica
//! ([`preferred_read_replica`]). Pure: no locks, no I/O; the candidates come from the leader's follower
//! state ([`crate::partition::Partition::read_replica_candidates`]) and the broker's metadata (racks,
//! liveness).
//!
//! Sources (facts, not code): Kafka's `RackAwareReplicaSelector`, `ReplicaView.comparator` and
//! `ReplicaManager.findPreferredReadReplica`:
//! - only a consumer's Fetch (replica id < 0, v11+ so that it carries `rack_id`) on the partition's leader
//!   gets a preferred read replica; a follower's never does;
//! - the candidates are the leader and the ISR followers whose LogEndOffset ≥ the fetch offset and whose
//!   LogStartOffset ≤ the fetch offset (so the chosen replica holds the offset), on a live broker;
//! - `RackAwareReplicaSelector`: with an empty client rack, the leader; else the candidates whose broker
//!   rack equals the client's (exact, case-sensitive); none → the leader; the leader among them → the
//!   leader; otherwise the "most caught up" of them: the largest LogEndOffset, then the shortest time
//!   since it was last caught up, then the largest broker id;
//! - `LeaderSelector` (and no selector, Kafka's default) always choose the leader;
//! - the leader is never sent as the preferred read replica: choosing it means -1 in the response.

use types::{BrokerId, Offset};

/// Kafka's class name of the selector that always answers the leader.
pub const LEADER_SELECTOR_CLASS: &str = "org.apache.kafka.common.replica.LeaderSelector";

/// Kafka's class name of the rack-aware selector (a same-rack replica, else the leader).
pub const RACK_AWARE_REPLICA_SELECTOR_CLASS: &str =
    "org.apache.kafka.common.replica.RackAwareReplicaSelector";

/// A `replica.selector.class` Runnel implements (KIP-392).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplicaSelector {
    /// [`LEADER_SELECTOR_CLASS`]: consumers always read from the leader.
    Leader,
    /// [`RACK_AWARE_REPLICA_SELECTOR_CLASS`]: a consumer whose `client.rack` matches a live in-sync
    /// replica's `broker.rack` is sent to that replica.
    RackAware,
}

impl ReplicaSelector {
    /// The selector named by `replica.selector.class` (surrounding spaces ignored): `Ok(None)` when empty
    /// (Kafka's default, no selector: the leader only). Error: any other class name, with a message naming
    /// the two Runnel takes.
    pub fn from_class_name(class: &str) -> Result<Option<ReplicaSelector>, String> {
        match class.trim() {
            "" => Ok(None),
            LEADER_SELECTOR_CLASS => Ok(Some(ReplicaSelector::Leader)),
            RACK_AWARE_REPLICA_SELECTOR_CLASS => Ok(Some(ReplicaSelector::RackAware)),
            other => Err(format!(
                "replica.selector.class={other} is not supported; use \
                 {RACK_AWARE_REPLICA_SELECTOR_CLASS} or {LEADER_SELECTOR_CLASS}, or leave it unset"
            )),
        }
    }
}

/// One replica as the selector sees it (Kafka's `ReplicaView`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplicaView<'a> {
    /// The replica's broker.
    pub broker_id: BrokerId,
    /// Its `broker.rack`, `None` when the broker has none (it then matches no client rack).
    pub rack: Option<&'a str>,
    /// Its LogEndOffset as the leader last saw it (the leader's own for the leader).
    pub log_end_offset: Offset,
    /// ms since it was last caught up to the leader's LogEndOffset (0 for the leader).
    pub time_since_last_caught_up_ms: i64,
}

/// The replica a consumer in rack `client_rack` should fetch from instead of the leader, `None` for the
/// leader itself (the response then carries -1). `followers` are the leader's candidates (see the module
/// doc: in the ISR, on a live broker, holding the fetch offset); `leader` is the leader's own view.
pub fn preferred_read_replica(
    selector: ReplicaSelector,
    client_rack: &str,
    leader: &ReplicaView<'_>,
    followers: &[ReplicaView<'_>],
) -> Option<BrokerId> {
    match selector {
        ReplicaSelector::Leader => None,
        ReplicaSelector::RackAware => rack_aware(client_rack, leader, followers),
    }
}

/// Kafka's `RackAwareReplicaSelector.select`, minus the leader (mapped to `None`).
fn rack_aware(
    client_rack: &str,
    leader: &ReplicaView<'_>,
    followers: &[ReplicaView<'_>],
) -> Option<BrokerId> {
    if client_rack.is_empty() || leader.rack == Some(client_rack) {
        return None;
    }
    followers
        .iter()
        .filter(|f| f.broker_id != leader.broker_id && f.rack == Some(client_rack))
        .max_by(|a, b| {
            a.log_end_offset
                .cmp(&b.log_end_offset)
                // Shorter since caught up is better: reversed.
                .then(
                    b.time_since_last_caught_up_ms
                        .cmp(&a.time_since_last_caught_up_ms),
                )
                .then(a.broker_id.cmp(&b.broker_id))
        })
        .map(|f| f.broker_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(id: i32, rack: Option<&str>, leo: i64, since_ms: i64) -> ReplicaView<'_> {
        ReplicaView {
            broker_id: BrokerId(id),
            rack,
            log_end_offset: Offset(leo),
            time_since_last_caught_up_ms: since_ms,
        }
    }

    #[test]
    fn class_names() {
        assert_eq!(ReplicaSelector::from_class_name(""), Ok(None));
        assert_eq!(ReplicaSelector::from_class_name("  "), Ok(None));
        assert_eq!(
            ReplicaSelector::from_class_name(RACK_AWARE_REPLICA_SELECTOR_CLASS),
            Ok(Some(ReplicaSelector::RackAware))
        );
        assert_eq!(
            ReplicaSelector::from_class_name(&format!(" {LEADER_SELECTOR_CLASS} ")),
            Ok(Some(ReplicaSelector::Leader))
        );
        let err = ReplicaSelector::from_class_name("com.example.MySelector").unwrap_err();
        assert!(err.contains("com.example.MySelector") && err.contains("RackAwareReplicaSelector"));
    }

    #[test]
    fn same_rack_follower_is_chosen() {
        let leader = view(1, Some("a"), 10, 0);
        let followers = [view(2, Some("b"), 10, 0), view(3, Some("c"), 10, 0)];
        let rack_aware = ReplicaSelector::RackAware;
        assert_eq!(
            preferred_read_replica(rack_aware, "b", &leader, &followers),
            Some(BrokerId(2))
        );
        assert_eq!(
            preferred_read_replica(rack_aware, "c", &leader, &followers),
            Some(BrokerId(3))
        );
    }

    #[test]
    fn leader_in_the_clients_rack_or_no_match_or_no_rack_is_the_leader() {
        let leader = view(1, Some("a"), 10, 0);
        let followers = [view(2, Some("a"), 10, 0), view(3, Some("c"), 10, 0)];
        let s = ReplicaSelector::RackAware;
        // The leader shares the rack with a follower: the leader wins.
        assert_eq!(preferred_read_replica(s, "a", &leader, &followers), None);
        // No replica in rack z.
        assert_eq!(preferred_read_replica(s, "z", &leader, &followers), None);
        // No client rack.
        assert_eq!(preferred_read_replica(s, "", &leader, &followers), None);
        // Racks compare exactly (Kafka's `equals`).
        assert_eq!(preferred_read_replica(s, "C", &leader, &followers), None);
        // A broker without a rack matches nothing.
        let no_rack = [view(2, None, 10, 0)];
        assert_eq!(preferred_read_replica(s, "b", &leader, &no_rack), None);
    }

    #[test]
    fn leader_selector_always_answers_the_leader() {
        let leader = view(1, Some("a"), 10, 0);
        let followers = [view(2, Some("b"), 10, 0)];
        let s = ReplicaSelector::Leader;
        assert_eq!(preferred_read_replica(s, "b", &leader, &followers), None);
    }

    #[test]
    fn most_caught_up_same_rack_follower_wins() {
        let leader = view(1, Some("a"), 20, 0);
        let s = ReplicaSelector::RackAware;
        // Largest LogEndOffset first.
        let f = [view(2, Some("b"), 15, 0), view(3, Some("b"), 18, 0)];
        assert_eq!(
            preferred_read_replica(s, "b", &leader, &f),
            Some(BrokerId(3))
        );
        // Then the most recently caught up.
        let f = [view(2, Some("b"), 18, 100), view(3, Some("b"), 18, 900)];
        assert_eq!(
            preferred_read_replica(s, "b", &leader, &f),
            Some(BrokerId(2))
        );
        // Then the largest broker id.
        let f = [view(4, Some("b"), 18, 100), view(3, Some("b"), 18, 100)];
        assert_eq!(
            preferred_read_replica(s, "b", &leader, &f),
            Some(BrokerId(4))
        );
    }
}
