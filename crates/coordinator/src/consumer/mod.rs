//! Consumer groups of the KIP-848 rebalance protocol: the broker computes assignments and members reconcile
//! to them incrementally through ConsumerGroupHeartbeat, without a stop-the-world rebalance.
//!
//! The model (Kafka's `ConsumerGroup`, `ConsumerGroupMember`, `CurrentAssignmentBuilder`):
//!
//! - the **group epoch** is bumped whenever what the assignment depends on changes — a member joins, leaves,
//!   changes its subscription, or a subscribed topic's partitions change (tracked by a metadata hash);
//! - the **target assignment** (one per member) is recomputed by the server assignor (`uniform` or `range`,
//!   [`assignor`]) when the group epoch is ahead of the **assignment epoch**, which then takes the group epoch;
//! - each member **reconciles** towards its target ([`reconcile`]): partitions it must give up are revoked
//!   first (state UNREVOKED_PARTITIONS, member epoch unchanged); once its heartbeat no longer reports them, it
//!   moves to the assignment epoch and receives the partitions no other member still holds (UNRELEASED_PARTITIONS
//!   while some are held, then STABLE). A partition is therefore never owned by two members at once.
//!
//! Source: KIP-848; Kafka 4.4's `group-coordinator` module (`GroupMetadataManager.consumerGroupHeartbeat`).

pub mod api;
pub mod assignor;
pub mod classic;
pub mod reconcile;
pub mod records;
pub mod subscription;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use uuid::Uuid;

pub use records::ConsumerRecord;

/// Partitions by topic id: what a member owns, must revoke, or is targeted to own.
pub type Assignment = BTreeMap<Uuid, BTreeSet<i32>>;

/// A member's reconciliation state (Kafka's `MemberState`; the INT8 values are persisted).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MemberState {
    /// Reconciled with the target assignment of its epoch.
    #[default]
    Stable,
    /// Must revoke partitions before it can move to the next epoch.
    UnrevokedPartitions,
    /// At the latest epoch, waiting for partitions other members have not released yet.
    UnreleasedPartitions,
    /// A state written by a newer version: the member is fenced on its next heartbeat.
    Unknown,
}

impl MemberState {
    /// The persisted value: 0 STABLE, 1 UNREVOKED_PARTITIONS, 2 UNRELEASED_PARTITIONS, 127 UNKNOWN.
    pub fn value(self) -> i8 {
        match self {
            MemberState::Stable => 0,
            MemberState::UnrevokedPartitions => 1,
            MemberState::UnreleasedPartitions => 2,
            MemberState::Unknown => 127,
        }
    }

    /// The state of a persisted value (unknown values → [`MemberState::Unknown`]).
    pub fn from_value(v: i8) -> Self {
        match v {
            0 => MemberState::Stable,
            1 => MemberState::UnrevokedPartitions,
            2 => MemberState::UnreleasedPartitions,
            _ => MemberState::Unknown,
        }
    }

    /// Kafka's name of the state, as `kafka-consumer-groups.sh --describe --members --verbose` shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            MemberState::Stable => "STABLE",
            MemberState::UnrevokedPartitions => "UNREVOKED_PARTITIONS",
            MemberState::UnreleasedPartitions => "UNRELEASED_PARTITIONS",
            MemberState::Unknown => "UNKNOWN",
        }
    }
}

/// A consumer group's state (Kafka's `ConsumerGroup.ConsumerGroupState`), derived from its epochs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConsumerGroupState {
    /// No members.
    Empty,
    /// The group epoch is ahead of the assignment epoch: a new target assignment is due.
    Assigning,
    /// Some member is not yet reconciled with the target assignment.
    Reconciling,
    /// Every member is reconciled.
    Stable,
}

impl ConsumerGroupState {
    /// Kafka's name, as ListGroups, ConsumerGroupDescribe and the tools show it.
    pub fn as_str(self) -> &'static str {
        match self {
            ConsumerGroupState::Empty => "Empty",
            ConsumerGroupState::Assigning => "Assigning",
            ConsumerGroupState::Reconciling => "Reconciling",
            ConsumerGroupState::Stable => "Stable",
        }
    }
}

/// Member epoch of a member that left (ConsumerGroupHeartbeat `member_epoch` -1).
pub const LEAVE_GROUP_MEMBER_EPOCH: i32 = -1;
/// Member epoch of a static member leaving temporarily (-2): its assignment is kept for its session timeout.
pub const LEAVE_GROUP_STATIC_MEMBER_EPOCH: i32 = -2;

/// One member of a consumer group.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ConsumerMember {
    /// Member id (client-generated from ConsumerGroupHeartbeat v1; a server UUID for v0).
    pub member_id: String,
    /// Subscription and client details.
    pub metadata: records::MemberMetadataValue,
    /// Current epoch, previous epoch, state, owned and pending-revocation partitions.
    pub current: records::CurrentAssignmentValue,
}

impl ConsumerMember {
    /// Whether the member speaks the classic protocol (JoinGroup/SyncGroup/Heartbeat) in this consumer group
    /// (Kafka's `ConsumerGroupMember.useClassicProtocol`).
    pub fn uses_classic_protocol(&self) -> bool {
        self.metadata.classic.is_some()
    }

    /// The topic names the member subscribes to: its names, or what its regular expression resolves to.
    pub fn subscribed_topics<'a>(&'a self, group: &'a ConsumerGroup) -> BTreeSet<&'a str> {
        let mut topics: BTreeSet<&str> = (self.metadata.subscribed_topic_names.iter())
            .map(String::as_str)
            .collect();
        if let Some(re) = &self.metadata.subscribed_topic_regex {
            if let Some(resolved) = group.resolved_regex.get(re) {
                topics.extend(resolved.iter().map(String::as_str));
            }
        }
        topics
    }
}

/// One consumer group. Members are ordered by member id so that behaviour is deterministic.
#[derive(Clone, Debug, Default)]
pub struct ConsumerGroup {
    /// Group id.
    pub group_id: String,
    /// The group epoch.
    pub group_epoch: i32,
    /// The epoch of the current target assignment (≤ `group_epoch`).
    pub assignment_epoch: i32,
    /// Hash of the subscribed topics' metadata when the group epoch was last bumped.
    pub metadata_hash: i64,
    /// Members by id.
    pub members: BTreeMap<String, ConsumerMember>,
    /// Target assignment by member id.
    pub target: BTreeMap<String, Assignment>,
    /// `group.instance.id` → member id.
    pub static_members: HashMap<String, String>,
    /// Each owned or pending-revocation partition → the member holding it (Kafka's partition epochs map).
    pub owners: HashMap<(Uuid, i32), String>,
    /// Regular expression → the topic names it matched at `resolved_version` of the topics image.
    pub resolved_regex: BTreeMap<String, BTreeSet<String>>,
    /// The topics image version the regular expressions were resolved at (`None`: never).
    pub resolved_version: Option<u64>,
}

impl ConsumerGroup {
    /// An empty group at epoch 0.
    pub fn new(group_id: &str) -> Self {
        ConsumerGroup {
            group_id: group_id.to_string(),
            ..Default::default()
        }
    }

    /// The group's state, derived from its members and epochs.
    pub fn state(&self) -> ConsumerGroupState {
        if self.members.is_empty() {
            ConsumerGroupState::Empty
        } else if self.group_epoch > self.assignment_epoch {
            ConsumerGroupState::Assigning
        } else if self.members.values().any(|m| {
            m.current.state != MemberState::Stable
                || m.current.member_epoch != self.assignment_epoch
        }) {
            ConsumerGroupState::Reconciling
        } else {
            ConsumerGroupState::Stable
        }
    }

    /// Every topic name some member subscribes to.
    pub fn subscribed_topics(&self) -> BTreeSet<String> {
        (self.members.values())
            .flat_map(|m| m.subscribed_topics(self))
            .map(str::to_string)
            .collect()
    }

    /// Replaces member `id`'s current assignment, keeping [`ConsumerGroup::owners`] in step.
    pub fn set_current(&mut self, id: &str, current: records::CurrentAssignmentValue) {
        if let Some(m) = self.members.get(id) {
            for (t, ps) in m
                .current
                .assigned
                .iter()
                .chain(&m.current.pending_revocation)
            {
                for p in ps {
                    if self.owners.get(&(*t, *p)).is_some_and(|o| o == id) {
                        self.owners.remove(&(*t, *p));
                    }
                }
            }
        }
        for (t, ps) in current.assigned.iter().chain(&current.pending_revocation) {
            for p in ps {
                self.owners.insert((*t, *p), id.to_string());
            }
        }
        if let Some(m) = self.members.get_mut(id) {
            m.current = current;
        }
    }

    /// Removes member `id` with its ownerships, target and static mapping; returns it.
    pub fn remove_member(&mut self, id: &str) -> Option<ConsumerMember> {
        self.set_current(id, records::CurrentAssignmentValue::default());
        self.target.remove(id);
        let m = self.members.remove(id)?;
        if let Some(iid) = &m.metadata.instance_id {
            if self.static_members.get(iid).is_some_and(|x| x == id) {
                self.static_members.remove(iid);
            }
        }
        Some(m)
    }
}
