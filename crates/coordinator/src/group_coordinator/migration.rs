//! KIP-848 online migration between classic and consumer groups (Kafka 4.4's
//! `GroupMetadataManager.convertToConsumerGroup` / `convertToClassicGroup`, `ConsumerGroup.fromClassicGroup`,
//! `ClassicGroup.fromConsumerGroup`), as `group.consumer.migration.policy` allows.
//!
//! - **Upgrade**: a ConsumerGroupHeartbeat joining (epoch 0) a classic group with members that use the
//!   embedded consumer protocol converts it: each classic member becomes a consumer-group member that keeps
//!   speaking the classic protocol (its `ClassicMemberMetadata`: session timeout and JoinGroup protocols),
//!   STABLE at the classic generation, owning — and targeted to — the partitions of its last SyncGroup
//!   assignment, so no partition is owned twice. The classic group is tombstoned and the consumer group's
//!   records written; parked JoinGroup/SyncGroup requests are answered REBALANCE_IN_PROGRESS.
//! - **Downgrade**: when the members left after fencing or leaving all use the classic protocol, the
//!   consumer group's records are tombstoned, a classic group (Stable at the group epoch, each member's
//!   assignment its target) is written and a rebalance starts.

use bytes::Bytes;
use types::ErrorCode;

use super::consumer::tombstone_member;
use super::{group_metadata_record, GroupCoordinator};
use crate::api::{Effect, JoinResult, SyncResult};
use crate::consumer::api::{ConsumerHeartbeatResult, TopicsImage};
use crate::consumer::classic::{self, NamedPartitions};
use crate::consumer::records::{
    ClassicMemberMetadata, ConsumerRecord, CurrentAssignmentValue, GroupEpochValue,
    MemberMetadataValue,
};
use crate::consumer::{Assignment, ConsumerGroup, ConsumerMember, MemberState};
use crate::group::{ClassicGroup, GroupState, Member, CONSUMER_PROTOCOL_TYPE};
use crate::records::GroupRecord;
use crate::timers::TimerKey;

fn persist(fx: &mut Vec<Effect>, r: ConsumerRecord) {
    fx.push(Effect::Persist(GroupRecord::Consumer(Box::new(r))));
}

/// Partitions by topic name → by topic id; topics the image does not have are dropped.
pub(super) fn to_ids(named: &NamedPartitions, image: &TopicsImage) -> Assignment {
    (named.iter())
        .filter_map(|(t, ps)| image.topic(t).map(|(id, _)| (id, ps.clone())))
        .filter(|(_, ps)| !ps.is_empty())
        .collect()
}

/// Partitions by topic id → by topic name; topics the image does not have are dropped.
pub(super) fn to_names(a: &Assignment, image: &TopicsImage) -> NamedPartitions {
    (a.iter())
        .filter_map(|(id, ps)| image.name(id).map(|n| (n.to_string(), ps.clone())))
        .collect()
}

impl GroupCoordinator {
    /// Kafka's `validateOnlineUpgrade`: why classic group `g` (with members) may not become a consumer group,
    /// or `None` when it may.
    fn upgrade_refusal(&self, g: &ClassicGroup) -> Option<String> {
        let id = &g.group_id;
        if !self.config.consumer_migration_policy.is_upgrade_enabled() {
            Some(format!("Cannot upgrade classic group {id} to consumer group because the online upgrade is disabled."))
        } else if g.protocol_type.as_deref() != Some(CONSUMER_PROTOCOL_TYPE) {
            Some(format!("Cannot upgrade classic group {id} to consumer group because the group does not use the consumer embedded protocol."))
        } else if g.members.len()
            >= usize::try_from(self.config.consumer_max_size.max(0)).unwrap_or(usize::MAX)
        {
            Some(format!("Cannot upgrade classic group {id} to consumer group because the group size exceeds the consumer group maximum size."))
        } else {
            None
        }
    }

    /// Kafka's `convertToConsumerGroup`: classic group `group_id` (with members) becomes a consumer group,
    /// or GROUP_ID_NOT_FOUND when the policy, its protocol type, its size or its members' embedded protocol
    /// forbid it (the classic group is then left as it was).
    pub(super) fn convert_to_consumer_group(
        &mut self,
        now: i64,
        group_id: &str,
        image: &TopicsImage,
        fx: &mut Vec<Effect>,
    ) -> Result<(), ConsumerHeartbeatResult> {
        let not_found =
            |m: String| ConsumerHeartbeatResult::error(ErrorCode::GROUP_ID_NOT_FOUND, m);
        let classic = self.groups.get(group_id).expect("a classic group");
        if let Some(why) = self.upgrade_refusal(classic) {
            return Err(not_found(why));
        }
        let Some(cg) = consumer_group_from_classic(classic, image) else {
            return Err(not_found(format!("Cannot upgrade classic group {group_id} to consumer group because the embedded consumer protocol is malformed.")));
        };
        let mut classic = self.groups.remove(group_id).expect("checked");
        let ids: Vec<String> = classic.members.keys().cloned().collect();
        for id in &ids {
            if let Some(m) = classic.members.get_mut(id) {
                if let Some(r) = m.awaiting_join.take() {
                    let response = JoinResult::error(id, ErrorCode::REBALANCE_IN_PROGRESS);
                    fx.push(Effect::JoinResponse {
                        request: r,
                        response,
                    });
                }
                if let Some(r) = m.awaiting_sync.take() {
                    let response = SyncResult::error(ErrorCode::REBALANCE_IN_PROGRESS);
                    fx.push(Effect::SyncResponse {
                        request: r,
                        response,
                    });
                }
            }
        }
        self.timers.cancel_group(group_id);
        fx.push(Effect::Persist(GroupRecord::GroupMetadata {
            group: group_id.to_string(),
            value: None,
        }));
        write_consumer_group(&cg, fx);
        self.consumer_groups.insert(group_id.to_string(), cg);
        for id in &ids {
            self.schedule_consumer_session(now, group_id, id);
        }
        Ok(())
    }

    /// Kafka's `consumerGroupFenceMembers`: when only classic-protocol members would remain and the policy
    /// allows it, the group is downgraded to a classic group (KIP-848 online downgrade); otherwise each
    /// member is removed (tombstones for its current assignment, target and subscription, its timers
    /// cancelled) and the group epoch bumped once.
    pub(super) fn fence_consumer_members(
        &mut self,
        now: i64,
        group: &str,
        members: &[String],
        fx: &mut Vec<Effect>,
    ) {
        let Some(g) = self.consumer_groups.get(group) else {
            return;
        };
        let members: Vec<String> = (members.iter())
            .filter(|m| g.members.contains_key(*m))
            .cloned()
            .collect();
        if members.is_empty() {
            return;
        }
        if self.downgrade_allowed(group, &members) {
            self.convert_to_classic_group(now, group, &members, fx);
            return;
        }
        let g = self.consumer_groups.get_mut(group).expect("checked");
        for member in &members {
            g.remove_member(member);
            tombstone_member(fx, group, member);
        }
        g.group_epoch = g.group_epoch.max(g.assignment_epoch) + 1;
        persist(
            fx,
            ConsumerRecord::GroupMetadata {
                group: group.to_string(),
                value: Some(GroupEpochValue {
                    epoch: g.group_epoch,
                    metadata_hash: g.metadata_hash,
                }),
            },
        );
        for member in members {
            self.cancel_consumer_member_timers(group, &member);
        }
    }

    /// Cancels a consumer-group member's session, rebalance, join and sync timeouts.
    pub(super) fn cancel_consumer_member_timers(&mut self, group: &str, member: &str) {
        let (group, member) = (group.to_string(), member.to_string());
        for key in [
            TimerKey::ConsumerSession {
                group: group.clone(),
                member: member.clone(),
            },
            TimerKey::ConsumerRebalance {
                group: group.clone(),
                member: member.clone(),
            },
            TimerKey::ConsumerJoin {
                group: group.clone(),
                member: member.clone(),
            },
            TimerKey::ConsumerSync { group, member },
        ] {
            self.timers.cancel(&key);
        }
    }

    /// Kafka's `validateOnlineDowngradeWithFencedMembers`: whether consumer group `group_id` becomes a
    /// classic group once `leaving` are gone — some members remain, all of them speak the classic protocol,
    /// the policy allows downgrades and they fit `group.max.size`.
    pub(super) fn downgrade_allowed(&self, group_id: &str, leaving: &[String]) -> bool {
        let Some(g) = self.consumer_groups.get(group_id) else {
            return false;
        };
        let remaining: Vec<&ConsumerMember> = (g.members.values())
            .filter(|m| !leaving.contains(&m.member_id))
            .collect();
        let max = usize::try_from(self.config.group_max_size.max(0)).unwrap_or(usize::MAX);
        !remaining.is_empty()
            && remaining.iter().all(|m| m.uses_classic_protocol())
            && self.config.consumer_migration_policy.is_downgrade_enabled()
            && remaining.len() <= max
    }

    /// Kafka's `convertToClassicGroup` after members `leaving` left: the consumer group's records are
    /// tombstoned, the classic group is written and starts a rebalance, so every member rejoins.
    pub(super) fn convert_to_classic_group(
        &mut self,
        now: i64,
        group_id: &str,
        leaving: &[String],
        fx: &mut Vec<Effect>,
    ) {
        let Some(cg) = self.consumer_groups.remove(group_id) else {
            return;
        };
        self.timers.cancel_group(group_id);
        tombstone_consumer_group(&cg, fx);
        let mut g = ClassicGroup::new(group_id.to_string(), now);
        g.generation_id = cg.group_epoch;
        g.protocol_type = Some(CONSUMER_PROTOCOL_TYPE.to_string());
        for m in cg
            .members
            .values()
            .filter(|m| !leaving.contains(&m.member_id))
        {
            let c = m.metadata.classic.clone().unwrap_or_default();
            g.add(Member {
                member_id: m.member_id.clone(),
                group_instance_id: m.metadata.instance_id.clone(),
                client_id: m.metadata.client_id.clone(),
                client_host: m.metadata.client_host.clone(),
                rebalance_timeout_ms: m.metadata.rebalance_timeout_ms,
                session_timeout_ms: c.session_timeout_ms,
                protocol_type: CONSUMER_PROTOCOL_TYPE.to_string(),
                protocols: c.supported_protocols,
                assignment: Bytes::new(),
                awaiting_join: None,
                awaiting_sync: None,
                is_new: false,
            });
        }
        g.protocol_name = g.select_protocol();
        g.subscribed_topics = g.compute_subscribed_topics();
        let protocol = g.protocol_name.clone().unwrap_or_default();
        for m in g.members.values_mut() {
            let target = cg.target.get(&m.member_id).cloned().unwrap_or_default();
            let version = classic::subscription_version(&m.metadata(&protocol));
            m.assignment = classic::encode_assignment(version, &to_names(&target, &self.topics));
        }
        g.transition_to(GroupState::Stable, now);
        fx.push(Effect::Persist(group_metadata_record(&g)));
        self.groups.insert(group_id.to_string(), g);
        let (groups, mut cx) = self.split(now, fx);
        let g = groups.get_mut(group_id).expect("inserted");
        let sessions: Vec<(String, i32)> = (g.members.values())
            .map(|m| (m.member_id.clone(), m.session_timeout_ms))
            .collect();
        for (id, session) in sessions {
            cx.reschedule_heartbeat(g, &id, session);
        }
        cx.prepare_rebalance(g);
    }
}

/// Kafka's `ConsumerGroup.fromClassicGroup`; `None` when a member's subscription or assignment does not
/// parse as the embedded consumer protocol.
fn consumer_group_from_classic(
    classic: &ClassicGroup,
    image: &TopicsImage,
) -> Option<ConsumerGroup> {
    let mut g = ConsumerGroup::new(&classic.group_id);
    g.group_epoch = classic.generation_id;
    g.assignment_epoch = classic.generation_id;
    for m in classic.members.values() {
        let protocol = (classic.protocol_name.clone())
            .or_else(|| m.protocols.first().map(|(n, _)| n.clone()))
            .unwrap_or_default();
        let sub = classic::parse_subscription(&m.metadata(&protocol))?;
        let mut assigned = to_ids(&classic::parse_assignment(&m.assignment)?, image);
        // Never two owners: a partition already taken by an earlier member is left out.
        for (t, ps) in assigned.iter_mut() {
            ps.retain(|p| !g.owners.contains_key(&(*t, *p)));
        }
        assigned.retain(|_, ps| !ps.is_empty());
        let mut topics = sub.topics.clone();
        topics.sort();
        topics.dedup();
        let metadata = MemberMetadataValue {
            instance_id: m.group_instance_id.clone(),
            rack_id: sub.rack_id.clone(),
            client_id: m.client_id.clone(),
            client_host: m.client_host.clone(),
            subscribed_topic_names: topics,
            subscribed_topic_regex: None,
            rebalance_timeout_ms: m.rebalance_timeout_ms,
            server_assignor: None,
            classic: Some(ClassicMemberMetadata {
                session_timeout_ms: m.session_timeout_ms,
                supported_protocols: m.protocols.clone(),
            }),
        };
        if let Some(iid) = &m.group_instance_id {
            g.static_members.insert(iid.clone(), m.member_id.clone());
        }
        g.members.insert(
            m.member_id.clone(),
            ConsumerMember {
                member_id: m.member_id.clone(),
                metadata,
                current: CurrentAssignmentValue::default(),
            },
        );
        g.target.insert(m.member_id.clone(), assigned.clone());
        let current = CurrentAssignmentValue {
            member_epoch: classic.generation_id,
            previous_member_epoch: classic.generation_id,
            state: MemberState::Stable,
            assigned,
            pending_revocation: Assignment::new(),
        };
        g.set_current(&m.member_id, current);
    }
    Some(g)
}

/// Kafka's `ConsumerGroup.createConsumerGroupRecords`: subscriptions, group epoch, targets, target epoch,
/// current assignments.
fn write_consumer_group(g: &ConsumerGroup, fx: &mut Vec<Effect>) {
    let gid = || g.group_id.clone();
    for m in g.members.values() {
        let (member, value) = (m.member_id.clone(), Some(m.metadata.clone()));
        persist(
            fx,
            ConsumerRecord::MemberMetadata {
                group: gid(),
                member,
                value,
            },
        );
    }
    let value = Some(GroupEpochValue {
        epoch: g.group_epoch,
        metadata_hash: g.metadata_hash,
    });
    persist(
        fx,
        ConsumerRecord::GroupMetadata {
            group: gid(),
            value,
        },
    );
    for (member, a) in &g.target {
        let (member, value) = (member.clone(), Some(a.clone()));
        persist(
            fx,
            ConsumerRecord::TargetMember {
                group: gid(),
                member,
                value,
            },
        );
    }
    persist(
        fx,
        ConsumerRecord::TargetMetadata {
            group: gid(),
            epoch: Some(g.assignment_epoch),
        },
    );
    for m in g.members.values() {
        let (member, value) = (m.member_id.clone(), Some(m.current.clone()));
        persist(
            fx,
            ConsumerRecord::CurrentAssignment {
                group: gid(),
                member,
                value,
            },
        );
    }
}

/// Kafka's `ConsumerGroup.createGroupTombstoneRecords`: every member's current assignment and target, the
/// target epoch, every member's subscription, the group epoch.
fn tombstone_consumer_group(g: &ConsumerGroup, fx: &mut Vec<Effect>) {
    let gid = || g.group_id.clone();
    for member in g.members.keys().cloned() {
        persist(
            fx,
            ConsumerRecord::CurrentAssignment {
                group: gid(),
                member,
                value: None,
            },
        );
    }
    for member in g.members.keys().cloned() {
        persist(
            fx,
            ConsumerRecord::TargetMember {
                group: gid(),
                member,
                value: None,
            },
        );
    }
    persist(
        fx,
        ConsumerRecord::TargetMetadata {
            group: gid(),
            epoch: None,
        },
    );
    for member in g.members.keys().cloned() {
        persist(
            fx,
            ConsumerRecord::MemberMetadata {
                group: gid(),
                member,
                value: None,
            },
        );
    }
    persist(
        fx,
        ConsumerRecord::GroupMetadata {
            group: gid(),
            value: None,
        },
    );
}
