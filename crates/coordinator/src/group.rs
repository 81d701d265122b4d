//! In-memory state of one classic group (Kafka's `ClassicGroup` / `ClassicGroupMember`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;

use bytes::Bytes;

use crate::RequestId;

/// Protocol type of Java-client-style consumers; their member metadata is a ConsumerProtocolSubscription.
pub const CONSUMER_PROTOCOL_TYPE: &str = "consumer";

/// Classic group states (Kafka's `ClassicGroupState`).
///
/// Transitions: Empty → PreparingRebalance (first member joins); PreparingRebalance → CompletingRebalance (join
/// phase done, members left) or Empty (nobody left); CompletingRebalance → Stable (leader's SyncGroup) or
/// PreparingRebalance; Stable → PreparingRebalance. Dead is the state of deleted/unknown groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GroupState {
    /// No members; offsets may still exist.
    Empty,
    /// Waiting for members to (re)join.
    PreparingRebalance,
    /// Join phase complete; waiting for the leader's assignment (SyncGroup).
    CompletingRebalance,
    /// Assignment distributed; members heartbeat.
    Stable,
    /// Deleted or not present.
    Dead,
}

impl GroupState {
    /// Kafka's state name as sent in DescribeGroups/ListGroups ("Empty", "PreparingRebalance", ...).
    pub fn as_str(self) -> &'static str {
        match self {
            GroupState::Empty => "Empty",
            GroupState::PreparingRebalance => "PreparingRebalance",
            GroupState::CompletingRebalance => "CompletingRebalance",
            GroupState::Stable => "Stable",
            GroupState::Dead => "Dead",
        }
    }

    fn can_precede_preparing_rebalance(self) -> bool {
        matches!(
            self,
            GroupState::Stable | GroupState::CompletingRebalance | GroupState::Empty
        )
    }
}

impl fmt::Display for GroupState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A member of a classic group.
#[derive(Clone, Debug)]
pub(crate) struct Member {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    pub protocol_type: String,
    /// (name, metadata) in the member's preference order.
    pub protocols: Vec<(String, Bytes)>,
    pub assignment: Bytes,
    /// The JoinGroup request waiting for the join phase to complete.
    pub awaiting_join: Option<RequestId>,
    /// The SyncGroup request waiting for the leader's assignment.
    pub awaiting_sync: Option<RequestId>,
    /// Joined in the current rebalance and has not yet received a JoinGroup response.
    pub is_new: bool,
}

impl Member {
    pub fn metadata(&self, protocol: &str) -> Bytes {
        self.protocols
            .iter()
            .find(|(n, _)| n == protocol)
            .map(|(_, m)| m.clone())
            .unwrap_or_default()
    }

    /// Same protocol names and metadata, in the same order.
    pub fn matches(&self, protocols: &[(String, Bytes)]) -> bool {
        self.protocols == protocols
    }

    /// The member's first preference among `candidates`.
    fn vote(&self, candidates: &BTreeSet<String>) -> Option<&str> {
        self.protocols
            .iter()
            .map(|(n, _)| n.as_str())
            .find(|n| candidates.contains(*n))
    }

    /// Whether an expiring heartbeat timer may be ignored (Kafka's `hasSatisfiedHeartbeat`): members waiting in a
    /// JoinGroup or SyncGroup are alive by definition, unless they are new (then the join timeout applies).
    pub fn has_satisfied_heartbeat(&self) -> bool {
        if self.is_new {
            false
        } else {
            self.awaiting_join.is_some() || self.awaiting_sync.is_some()
        }
    }
}

/// One classic group. Members are kept ordered by member id so that behaviour is deterministic.
#[derive(Debug)]
pub(crate) struct ClassicGroup {
    pub group_id: String,
    pub state: GroupState,
    pub previous_state: GroupState,
    pub state_timestamp: Option<i64>,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub generation_id: i32,
    pub leader_id: Option<String>,
    pub members: BTreeMap<String, Member>,
    /// group.instance.id → member id.
    pub static_members: HashMap<String, String>,
    /// Member ids handed out with MEMBER_ID_REQUIRED that have not joined yet.
    pub pending_join_members: BTreeSet<String>,
    /// Members that received their JoinGroup response but have not sent SyncGroup yet.
    pub pending_sync_members: BTreeSet<String>,
    /// A member joined during the initial (delayed) rebalance: extend the delay.
    pub new_member_added: bool,
    /// Topics subscribed by the members, when the protocol type is "consumer" and the metadata parses.
    pub subscribed_topics: Option<BTreeSet<String>>,
    /// Rebalances this group completed since it was created or loaded here (the broker's metrics).
    pub completed_rebalances: u64,
}

impl ClassicGroup {
    pub fn new(group_id: String, now_ms: i64) -> Self {
        ClassicGroup {
            group_id,
            state: GroupState::Empty,
            previous_state: GroupState::Dead,
            state_timestamp: Some(now_ms),
            protocol_type: None,
            protocol_name: None,
            generation_id: 0,
            leader_id: None,
            members: BTreeMap::new(),
            static_members: HashMap::new(),
            pending_join_members: BTreeSet::new(),
            pending_sync_members: BTreeSet::new(),
            new_member_added: false,
            subscribed_topics: None,
            completed_rebalances: 0,
        }
    }

    pub fn is(&self, s: GroupState) -> bool {
        self.state == s
    }

    pub fn transition_to(&mut self, s: GroupState, now_ms: i64) {
        self.previous_state = self.state;
        self.state = s;
        self.state_timestamp = Some(now_ms);
    }

    pub fn can_rebalance(&self) -> bool {
        self.state.can_precede_preparing_rebalance()
    }

    pub fn is_leader(&self, member_id: &str) -> bool {
        self.leader_id.as_deref() == Some(member_id)
    }

    pub fn num_awaiting_join(&self) -> usize {
        self.members
            .values()
            .filter(|m| m.awaiting_join.is_some())
            .count()
    }

    pub fn has_all_members_joined(&self) -> bool {
        self.members.len() == self.num_awaiting_join() && self.pending_join_members.is_empty()
    }

    /// Max of the members' rebalance timeouts (0 when empty).
    pub fn rebalance_timeout_ms(&self) -> i32 {
        self.members
            .values()
            .map(|m| m.rebalance_timeout_ms)
            .max()
            .unwrap_or(0)
    }

    pub fn static_member_id(&self, instance_id: &str) -> Option<&String> {
        self.static_members.get(instance_id)
    }

    /// Adds a member (the group must support its protocols). The first member sets the protocol type and leads.
    pub fn add(&mut self, member: Member) {
        if let Some(iid) = &member.group_instance_id {
            self.static_members
                .insert(iid.clone(), member.member_id.clone());
        }
        if self.members.is_empty() {
            self.protocol_type = Some(member.protocol_type.clone());
        }
        if self.leader_id.is_none() {
            self.leader_id = Some(member.member_id.clone());
        }
        self.pending_join_members.remove(&member.member_id);
        self.members.insert(member.member_id.clone(), member);
    }

    /// Removes a member (or pending member); elects the first remaining member as leader if it led.
    pub fn remove(&mut self, member_id: &str) -> Option<Member> {
        let removed = self.members.remove(member_id);
        if let Some(m) = &removed {
            if let Some(iid) = &m.group_instance_id {
                if self.static_members.get(iid).map(String::as_str) == Some(member_id) {
                    self.static_members.remove(iid);
                }
            }
        }
        if self.is_leader(member_id) {
            self.leader_id = self.members.keys().next().cloned();
        }
        self.pending_join_members.remove(member_id);
        self.pending_sync_members.remove(member_id);
        removed
    }

    /// KIP-345: re-keys a static member under `new_member_id`, keeping everything else. Returns the old member
    /// (with its pending requests, which the caller fences).
    pub fn replace_static_member(
        &mut self,
        instance_id: &str,
        old_member_id: &str,
        new_member_id: &str,
    ) -> Option<Member> {
        let old = self.members.remove(old_member_id)?;
        let mut new = old.clone();
        new.member_id = new_member_id.to_string();
        new.awaiting_join = None;
        new.awaiting_sync = None;
        self.members.insert(new_member_id.to_string(), new);
        if self.is_leader(old_member_id) {
            self.leader_id = Some(new_member_id.to_string());
        }
        self.static_members
            .insert(instance_id.to_string(), new_member_id.to_string());
        if self.pending_sync_members.remove(old_member_id) {
            self.pending_sync_members.insert(new_member_id.to_string());
        }
        Some(old)
    }

    /// If the leader has not rejoined, picks a member that has. False when no member rejoined or there is no
    /// leader (empty group).
    pub fn maybe_elect_new_joined_leader(&mut self) -> bool {
        let Some(leader) = self.leader_id.clone() else {
            return false;
        };
        match self.members.get(&leader) {
            Some(m) if m.awaiting_join.is_some() => true,
            _ => {
                if let Some(m) = self.members.values().find(|m| m.awaiting_join.is_some()) {
                    self.leader_id = Some(m.member_id.clone());
                    true
                } else {
                    false
                }
            }
        }
    }

    /// Protocols supported by every member.
    fn candidate_protocols(&self) -> BTreeSet<String> {
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for m in self.members.values() {
            let mut seen = BTreeSet::new();
            for (n, _) in &m.protocols {
                if seen.insert(n.as_str()) {
                    *counts.entry(n.as_str()).or_default() += 1;
                }
            }
        }
        counts
            .into_iter()
            .filter(|(_, c)| *c == self.members.len())
            .map(|(n, _)| n.to_string())
            .collect()
    }

    /// Kafka's `selectProtocol`: each member votes for its first preference among the protocols every member
    /// supports; most votes wins. Ties go to the leader's (then the first member's) earliest preference, so the
    /// result is deterministic.
    pub fn select_protocol(&self) -> Option<String> {
        let candidates = self.candidate_protocols();
        let mut votes: HashMap<&str, usize> = HashMap::new();
        for m in self.members.values() {
            if let Some(v) = m.vote(&candidates) {
                *votes.entry(v).or_default() += 1;
            }
        }
        let best = votes.values().copied().max()?;
        let tie_order = self
            .leader_id
            .as_ref()
            .and_then(|l| self.members.get(l))
            .or_else(|| self.members.values().next())?;
        tie_order
            .protocols
            .iter()
            .map(|(n, _)| n.as_str())
            .find(|n| votes.get(n) == Some(&best))
            .or_else(|| votes.iter().find(|(_, c)| **c == best).map(|(n, _)| *n))
            .map(str::to_string)
    }

    /// Kafka's `supportsProtocols`: an Empty group accepts any non-empty type with at least one protocol;
    /// otherwise the type must match and one of the names must be supported by every current member.
    pub fn supports_protocols(&self, protocol_type: &str, protocols: &[(String, Bytes)]) -> bool {
        if self.is(GroupState::Empty) {
            !protocol_type.is_empty() && !protocols.is_empty()
        } else {
            if self.protocol_type.as_deref() != Some(protocol_type) {
                return false;
            }
            let candidates = self.candidate_protocols();
            protocols.iter().any(|(n, _)| candidates.contains(n))
        }
    }

    /// Starts the next generation (Kafka's `initNextGeneration`).
    pub fn init_next_generation(&mut self, now_ms: i64) {
        self.generation_id = self.generation_id.wrapping_add(1);
        if !self.members.is_empty() {
            self.protocol_name = self.select_protocol();
            self.subscribed_topics = self.compute_subscribed_topics();
            self.transition_to(GroupState::CompletingRebalance, now_ms);
        } else {
            self.protocol_name = None;
            self.subscribed_topics = self.compute_subscribed_topics();
            self.transition_to(GroupState::Empty, now_ms);
        }
        self.pending_sync_members.clear();
    }

    /// Topics of all members' ConsumerProtocolSubscription (protocol type "consumer" only).
    pub fn compute_subscribed_topics(&self) -> Option<BTreeSet<String>> {
        if self.protocol_type.as_deref() != Some(CONSUMER_PROTOCOL_TYPE) {
            return None;
        }
        if self.members.is_empty() {
            return Some(BTreeSet::new());
        }
        let protocol = self.protocol_name.as_deref()?;
        let mut all = BTreeSet::new();
        for m in self.members.values() {
            all.extend(parse_subscription_topics(&m.metadata(protocol))?);
        }
        Some(all)
    }

    /// Kafka's `isSubscribedToTopic`: when unknown, a group using the consumer protocol counts as subscribed.
    pub fn is_subscribed_to_topic(&self, topic: &str) -> bool {
        match &self.subscribed_topics {
            Some(t) => t.contains(topic),
            None => self.protocol_type.as_deref() == Some(CONSUMER_PROTOCOL_TYPE),
        }
    }
}

/// Topics of a ConsumerProtocolSubscription (any version: all start with `version INT16, topics [STRING]`).
/// `None` when the bytes do not parse.
pub(crate) fn parse_subscription_topics(b: &[u8]) -> Option<Vec<String>> {
    let mut p = 0usize;
    let mut take = |n: usize| -> Option<&[u8]> {
        let s = b.get(p..p.checked_add(n)?)?;
        p += n;
        Some(s)
    };
    let version = i16::from_be_bytes(take(2)?.try_into().ok()?);
    if version < 0 {
        return None;
    }
    let count = i32::from_be_bytes(take(4)?.try_into().ok()?);
    if count < 0 {
        return None;
    }
    let mut topics = Vec::new();
    for _ in 0..count {
        let len = i16::from_be_bytes(take(2)?.try_into().ok()?);
        if len < 0 {
            return None;
        }
        topics.push(String::from_utf8(take(len as usize)?.to_vec()).ok()?);
    }
    Some(topics)
}
