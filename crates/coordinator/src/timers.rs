//! Deadline timers keyed by what they guard; re-scheduling a key replaces its deadline (Kafka's
//! `CoordinatorTimer` semantics).

use std::collections::{BTreeMap, HashMap};

/// What a timer guards.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum TimerKey {
    /// Session (or new-member join / pending-member) expiry of one member.
    Heartbeat { group: String, member: String },
    /// End of the join phase of a group.
    Join { group: String },
    /// End of the sync phase of a group.
    Sync { group: String },
    /// Periodic offsets retention check.
    OffsetsRetention,
    /// Session expiry of a consumer-group member (KIP-848).
    ConsumerSession { group: String, member: String },
    /// Rebalance timeout of a consumer-group member that must revoke partitions (KIP-848).
    ConsumerRebalance { group: String, member: String },
    /// Session expiry of a share-group member (KIP-932).
    ShareSession { group: String, member: String },
    /// A classic member of a consumer group told to rejoin must send JoinGroup within its rebalance timeout
    /// (Kafka's `consumer-group-join-timeout`).
    ConsumerJoin { group: String, member: String },
    /// A classic member of a consumer group must send SyncGroup within its rebalance timeout after its
    /// JoinGroup answer (Kafka's `consumer-group-sync-timeout`).
    ConsumerSync { group: String, member: String },
}

/// What to do when a timer fires.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum TimerAction {
    ExpireHeartbeat,
    CompleteJoin,
    /// Initial rebalance of an Empty group: `delay` just elapsed, `remaining` of the rebalance timeout is left.
    InitialRebalance {
        delay: i32,
        remaining: i32,
    },
    ExpirePendingSync {
        generation: i32,
    },
    OffsetsRetention,
    ExpireConsumerSession,
    ExpireShareSession,
    /// Fence a classic member of a consumer group that did not rejoin or sync in time.
    ExpireClassicMember,
    /// Fence the member if it is still revoking at this epoch.
    ExpireConsumerRebalance {
        epoch: i32,
    },
}

#[derive(Default, Debug)]
pub(crate) struct Timers {
    by_deadline: BTreeMap<(i64, u64), TimerKey>,
    by_key: HashMap<TimerKey, (i64, u64, TimerAction)>,
    seq: u64,
}

impl Timers {
    pub fn schedule(&mut self, key: TimerKey, deadline: i64, action: TimerAction) {
        self.cancel(&key);
        self.seq += 1;
        self.by_deadline.insert((deadline, self.seq), key.clone());
        self.by_key.insert(key, (deadline, self.seq, action));
    }

    pub fn cancel(&mut self, key: &TimerKey) {
        if let Some((d, s, _)) = self.by_key.remove(key) {
            self.by_deadline.remove(&(d, s));
        }
    }

    pub fn contains(&self, key: &TimerKey) -> bool {
        self.by_key.contains_key(key)
    }

    pub fn next_deadline(&self) -> Option<i64> {
        self.by_deadline.keys().next().map(|(d, _)| *d)
    }

    /// Removes and returns the earliest timer due at `now_ms`.
    pub fn pop_due(&mut self, now_ms: i64) -> Option<(TimerKey, TimerAction)> {
        let (&(d, s), _) = self.by_deadline.iter().next()?;
        if d > now_ms {
            return None;
        }
        let key = self.by_deadline.remove(&(d, s))?;
        let (_, _, action) = self.by_key.remove(&key)?;
        Some((key, action))
    }

    /// Cancels every timer of `group`.
    pub fn cancel_group(&mut self, group: &str) {
        let keys: Vec<TimerKey> = self
            .by_key
            .keys()
            .filter(|k| match k {
                TimerKey::Heartbeat { group: g, .. }
                | TimerKey::Join { group: g }
                | TimerKey::Sync { group: g }
                | TimerKey::ConsumerSession { group: g, .. }
                | TimerKey::ConsumerRebalance { group: g, .. }
                | TimerKey::ShareSession { group: g, .. }
                | TimerKey::ConsumerJoin { group: g, .. }
                | TimerKey::ConsumerSync { group: g, .. } => g == group,
                TimerKey::OffsetsRetention => false,
            })
            .cloned()
            .collect();
        for k in keys {
            self.cancel(&k);
        }
    }
}
