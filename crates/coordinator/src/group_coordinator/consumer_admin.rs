//! Consumer groups (KIP-848) beyond the heartbeat: ConsumerGroupDescribe, their place in ListGroups and
//! DeleteGroups, offset commit and fetch validation by member epoch, and replaying their records.

use types::ErrorCode;

use super::GroupCoordinator;
use crate::api::{Effect, ListedGroup};
use crate::consumer::api::{DescribedConsumerGroup, DescribedConsumerMember};
use crate::consumer::records::{ConsumerRecord, CurrentAssignmentValue};
use crate::consumer::{ConsumerGroup, ConsumerMember, MemberState};
use crate::records::GroupRecord;
use crate::timers::{TimerAction, TimerKey};

/// `ListGroups` v5 `group_type` of consumer groups.
pub const CONSUMER_GROUP_TYPE: &str = "consumer";
/// `ListGroups` v5 `group_type` of classic groups.
pub const CLASSIC_GROUP_TYPE: &str = "classic";

impl GroupCoordinator {
    /// ConsumerGroupDescribe for one group: GROUP_ID_NOT_FOUND (69) with state "Dead" when the group is
    /// unknown or is not a consumer group (Kafka's answer, after which the admin client falls back to
    /// DescribeGroups).
    pub fn describe_consumer_group(&self, group_id: &str) -> DescribedConsumerGroup {
        let Some(g) = self.consumer_groups.get(group_id) else {
            let message = match self.groups.contains_key(group_id) {
                true => format!("Group {group_id} is not a consumer group."),
                false => format!("Group {group_id} not found."),
            };
            return DescribedConsumerGroup {
                error_code: ErrorCode::GROUP_ID_NOT_FOUND,
                error_message: Some(message),
                group_id: group_id.to_string(),
                group_state: "Dead".to_string(),
                ..Default::default()
            };
        };
        DescribedConsumerGroup {
            error_code: ErrorCode::NONE,
            error_message: None,
            group_id: group_id.to_string(),
            group_state: g.state().as_str().to_string(),
            group_epoch: g.group_epoch,
            assignment_epoch: g.assignment_epoch,
            assignor_name: super::consumer::group_assignor(g, &self.config.consumer_assignors),
            members: g.members.values().map(|m| describe_member(g, m)).collect(),
        }
    }

    /// The consumer groups as ListGroups entries (protocol type "consumer", group type "consumer"), filtered by
    /// state name (case-insensitive; empty = all).
    pub(super) fn list_consumer_groups(&self, states_filter: &[String]) -> Vec<ListedGroup> {
        (self.consumer_groups.values())
            .filter(|g| {
                let state = g.state().as_str();
                states_filter.is_empty()
                    || states_filter.iter().any(|s| s.eq_ignore_ascii_case(state))
            })
            .map(|g| ListedGroup {
                group_id: g.group_id.clone(),
                protocol_type: crate::group::CONSUMER_PROTOCOL_TYPE.to_string(),
                group_state: g.state().as_str().to_string(),
                group_type: CONSUMER_GROUP_TYPE.to_string(),
            })
            .collect()
    }

    /// DeleteGroups of a consumer group: NON_EMPTY_GROUP while it has members; else its records are
    /// tombstoned (target assignment epoch, group epoch) and it is removed. `None` when `group_id` is not a
    /// consumer group.
    pub(super) fn delete_consumer_group(
        &mut self,
        group_id: &str,
        fx: &mut Vec<Effect>,
    ) -> Option<ErrorCode> {
        let g = self.consumer_groups.get(group_id)?;
        if !g.members.is_empty() {
            return Some(ErrorCode::NON_EMPTY_GROUP);
        }
        for r in [
            ConsumerRecord::TargetMetadata {
                group: group_id.to_string(),
                epoch: None,
            },
            ConsumerRecord::GroupMetadata {
                group: group_id.to_string(),
                value: None,
            },
        ] {
            fx.push(Effect::Persist(GroupRecord::Consumer(Box::new(r))));
        }
        self.consumer_groups.remove(group_id);
        self.timers.cancel_group(group_id);
        Some(ErrorCode::NONE)
    }

    /// Kafka's `ConsumerGroup.validateOffsetCommit` for a consumer group (`None` when `group_id` is not one):
    /// commits from outside the group (epoch < 0, no member id) are accepted while it has no members; else the
    /// member must exist (UNKNOWN_MEMBER_ID), commit with OffsetCommit v9+ (UNSUPPORTED_VERSION) and carry its
    /// current epoch (STALE_MEMBER_EPOCH; ILLEGAL_GENERATION for a TxnOffsetCommit). A member speaking the
    /// classic protocol commits with any version, its generation being its member epoch (ILLEGAL_GENERATION).
    pub(super) fn validate_consumer_commit(
        &self,
        group_id: &str,
        member_id: &str,
        epoch: i32,
        api_version: Option<i16>,
    ) -> Option<ErrorCode> {
        let g = self.consumer_groups.get(group_id)?;
        let transactional = api_version.is_none();
        if epoch < 0 && (g.members.is_empty() || (transactional && member_id.is_empty())) {
            return Some(ErrorCode::NONE);
        }
        let Some(m) = g.members.get(member_id) else {
            return Some(ErrorCode::UNKNOWN_MEMBER_ID);
        };
        let classic = m.uses_classic_protocol();
        if !classic && api_version.is_some_and(|v| v < 9) {
            return Some(ErrorCode::UNSUPPORTED_VERSION);
        }
        Some(
            match (epoch == m.current.member_epoch, transactional || classic) {
                (true, _) => ErrorCode::NONE,
                (false, false) => ErrorCode::STALE_MEMBER_EPOCH,
                (false, true) => ErrorCode::ILLEGAL_GENERATION,
            },
        )
    }

    /// OffsetFetch v9+ member check (KIP-848): with a member id and epoch ≥ 0, the group must be a consumer
    /// group holding that member (UNKNOWN_MEMBER_ID) at that epoch (STALE_MEMBER_EPOCH). Fetches without a
    /// member (admin tools, epoch -1) are always allowed.
    pub fn validate_offset_fetch(
        &self,
        group_id: &str,
        member_id: Option<&str>,
        member_epoch: i32,
    ) -> ErrorCode {
        let Some(member_id) = member_id.filter(|_| member_epoch >= 0) else {
            return ErrorCode::NONE;
        };
        let Some(g) = self.consumer_groups.get(group_id) else {
            return ErrorCode::GROUP_ID_NOT_FOUND;
        };
        match g.members.get(member_id) {
            None => ErrorCode::UNKNOWN_MEMBER_ID,
            Some(m) if m.current.member_epoch != member_epoch => ErrorCode::STALE_MEMBER_EPOCH,
            Some(_) => ErrorCode::NONE,
        }
    }

    /// Whether a member of consumer group `group_id` subscribes to `topic` (OffsetDelete refuses those
    /// topics' offsets with GROUP_SUBSCRIBED_TO_TOPIC).
    pub(super) fn consumer_group_subscribes(&self, group_id: &str, topic: &str) -> bool {
        self.consumer_groups
            .get(group_id)
            .is_some_and(|g| g.subscribed_topics().contains(topic))
    }

    /// Replays one consumer-group record (later records win; tombstones remove).
    pub(super) fn replay_consumer(&mut self, record: ConsumerRecord) {
        let gid = record.group_id().to_string();
        if let ConsumerRecord::GroupMetadata { value: None, .. } = record {
            self.consumer_groups.remove(&gid);
            self.timers.cancel_group(&gid);
            return;
        }
        // A consumer group's record replaces a classic group of the same id (it was converted).
        if self.groups.remove(&gid).is_some() {
            self.timers.cancel_group(&gid);
        }
        let g = self
            .consumer_groups
            .entry(gid.clone())
            .or_insert_with(|| ConsumerGroup::new(&gid));
        let ensure = |g: &mut ConsumerGroup, id: &str| {
            g.members
                .entry(id.to_string())
                .or_insert_with(|| ConsumerMember {
                    member_id: id.to_string(),
                    ..Default::default()
                });
        };
        match record {
            ConsumerRecord::GroupMetadata { value: Some(v), .. } => {
                g.group_epoch = v.epoch;
                g.metadata_hash = v.metadata_hash;
            }
            ConsumerRecord::GroupMetadata { value: None, .. } => {}
            ConsumerRecord::MemberMetadata {
                member,
                value: Some(v),
                ..
            } => {
                ensure(g, &member);
                if let Some(iid) = &v.instance_id {
                    g.static_members.insert(iid.clone(), member.clone());
                }
                g.members.get_mut(&member).expect("ensured").metadata = v;
            }
            ConsumerRecord::MemberMetadata {
                member,
                value: None,
                ..
            } => {
                g.remove_member(&member);
            }
            ConsumerRecord::TargetMetadata { epoch, .. } => {
                if let Some(e) = epoch {
                    g.assignment_epoch = e;
                }
            }
            ConsumerRecord::TargetMember { member, value, .. } => match value {
                Some(a) => {
                    g.target.insert(member, a);
                }
                None => {
                    g.target.remove(&member);
                }
            },
            ConsumerRecord::CurrentAssignment { member, value, .. } => match value {
                Some(c) => {
                    ensure(g, &member);
                    g.set_current(&member, c);
                }
                None => g.set_current(&member, CurrentAssignmentValue::default()),
            },
        }
    }

    /// Ends loading of consumer groups `ids`: each member's session timer starts at `now_ms`, and members
    /// still revoking get their rebalance timeout.
    pub(super) fn consumer_groups_loaded(&mut self, now_ms: i64, ids: &[String]) {
        let mut sessions = Vec::new();
        for id in ids {
            let Some(g) = self.consumer_groups.get(id) else {
                continue;
            };
            for m in g.members.values() {
                sessions.push((id.clone(), m.member_id.clone()));
                if m.current.state == MemberState::UnrevokedPartitions {
                    let at =
                        now_ms.saturating_add(i64::from(m.metadata.rebalance_timeout_ms.max(0)));
                    let key = TimerKey::ConsumerRebalance {
                        group: id.clone(),
                        member: m.member_id.clone(),
                    };
                    let action = TimerAction::ExpireConsumerRebalance {
                        epoch: m.current.member_epoch,
                    };
                    self.timers.schedule(key, at, action);
                }
            }
        }
        for (g, m) in sessions {
            self.schedule_consumer_session(now_ms, &g, &m);
        }
    }

    /// True if `group_id` is a consumer group here.
    pub fn is_consumer_group(&self, group_id: &str) -> bool {
        self.consumer_groups.contains_key(group_id)
    }
}

fn describe_member(g: &ConsumerGroup, m: &ConsumerMember) -> DescribedConsumerMember {
    DescribedConsumerMember {
        member_id: m.member_id.clone(),
        instance_id: m.metadata.instance_id.clone(),
        rack_id: m.metadata.rack_id.clone(),
        member_epoch: m.current.member_epoch,
        client_id: m.metadata.client_id.clone(),
        client_host: m.metadata.client_host.clone(),
        subscribed_topic_names: m
            .subscribed_topics(g)
            .into_iter()
            .map(str::to_string)
            .collect(),
        subscribed_topic_regex: m.metadata.subscribed_topic_regex.clone(),
        assignment: m.current.assigned.clone(),
        target_assignment: g.target.get(&m.member_id).cloned().unwrap_or_default(),
        member_type: match m.uses_classic_protocol() {
            true => 0,
            false => 1,
        },
    }
}
