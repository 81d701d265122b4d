//! Classic-protocol members of a consumer group (KIP-848 online migration): their JoinGroup, SyncGroup,
//! Heartbeat and LeaveGroup served by the consumer group (Kafka 4.4's `classicGroupJoinToConsumerGroup`,
//! `classicGroupSyncToConsumerGroup`, `classicGroupHeartbeatToConsumerGroup`,
//! `classicGroupLeaveToConsumerGroup`).
//!
//! Such a member is a consumer-group member with `ClassicMemberMetadata`. Its JoinGroup updates its
//! subscription (from the embedded `ConsumerProtocolSubscription`), may bump the group epoch and compute a
//! new target with the server assignor, and reconciles it with the partitions the subscription says it
//! owns; the answer is immediate, its generation the member epoch, with no leader (every classic member is a
//! follower). Its SyncGroup hands out its current assignment as a `ConsumerProtocolAssignment`. Its
//! Heartbeat answers REBALANCE_IN_PROGRESS while it must rejoin to move on — the group epoch is ahead of its
//! epoch, it must revoke partitions, or partitions it waits for were released. It must rejoin within its
//! rebalance timeout after being told so, and sync within it after joining, or it is fenced.

use bytes::Bytes;
use types::ErrorCode;

use super::consumer::{maybe_bump_and_assign, tombstone_member};
use super::join::join_request_error;
use super::migration::{to_ids, to_names};
use super::GroupCoordinator;
use crate::api::{
    Effect, JoinGroupRequest, JoinResult, LeaveMember, LeaveMemberResult, LeaveResult, RequestId,
    SyncGroupRequest, SyncResult,
};
use crate::consumer::classic;
use crate::consumer::records::{ClassicMemberMetadata, ConsumerRecord};
use crate::consumer::{ConsumerGroup, ConsumerMember, MemberState};
use crate::group::CONSUMER_PROTOCOL_TYPE;
use crate::records::GroupRecord;
use crate::timers::{TimerAction, TimerKey};

fn persist(fx: &mut Vec<Effect>, r: ConsumerRecord) {
    fx.push(Effect::Persist(GroupRecord::Consumer(Box::new(r))));
}

/// Kafka's `ConsumerGroup.supportsClassicProtocols`: the embedded consumer protocol, with at least one
/// protocol every classic member of the group also supports.
fn supports_classic_protocols(
    g: &ConsumerGroup,
    protocol_type: &str,
    protocols: &[(String, Bytes)],
) -> bool {
    if protocol_type != CONSUMER_PROTOCOL_TYPE || protocols.is_empty() {
        return false;
    }
    let classic: Vec<&ClassicMemberMetadata> = g
        .members
        .values()
        .filter_map(|m| m.metadata.classic.as_ref())
        .collect();
    classic.is_empty()
        || protocols.iter().any(|(name, _)| {
            classic
                .iter()
                .all(|c| c.supported_protocols.iter().any(|(n, _)| n == name))
        })
}

/// Kafka's `validateConsumerGroupMember` + `throwIfMemberDoesNotUseClassicProtocol`: the classic member
/// `member_id` (and `instance_id`'s holder, if given).
fn classic_member<'a>(
    g: &'a ConsumerGroup,
    member_id: &str,
    instance_id: Option<&str>,
) -> Result<&'a ConsumerMember, ErrorCode> {
    if let Some(iid) = instance_id {
        match g.static_members.get(iid) {
            None => return Err(ErrorCode::UNKNOWN_MEMBER_ID),
            Some(holder) if holder != member_id => return Err(ErrorCode::FENCED_INSTANCE_ID),
            Some(_) => {}
        }
    }
    match g.members.get(member_id) {
        Some(m) if m.uses_classic_protocol() => Ok(m),
        _ => Err(ErrorCode::UNKNOWN_MEMBER_ID),
    }
}

/// Kafka's `ConsumerGroup.waitingOnUnreleasedPartition`: whether a partition of the member's target that it
/// does not own yet is still held by another member.
fn waiting_on_unreleased(g: &ConsumerGroup, m: &ConsumerMember) -> bool {
    let Some(target) = g.target.get(&m.member_id) else {
        return false;
    };
    target.iter().any(|(t, ps)| {
        ps.iter().any(|p| {
            !m.current.assigned.get(t).is_some_and(|a| a.contains(p))
                && g.owners.get(&(*t, *p)).is_some_and(|o| *o != m.member_id)
        })
    })
}

impl GroupCoordinator {
    /// JoinGroup of a classic member to consumer group `req.group_id`; the answer is pushed to `fx`.
    pub(super) fn classic_join_to_consumer_group(
        &mut self,
        now: i64,
        request: RequestId,
        req: &JoinGroupRequest,
        fx: &mut Vec<Effect>,
    ) {
        let response = self.classic_join(now, req, fx).unwrap_or_else(|e| *e);
        fx.push(Effect::JoinResponse { request, response });
    }

    fn classic_join(
        &mut self,
        now: i64,
        req: &JoinGroupRequest,
        fx: &mut Vec<Effect>,
    ) -> Result<JoinResult, Box<JoinResult>> {
        let err = |code| Box::new(JoinResult::error(&req.member_id, code));
        if let Some(code) = join_request_error(&self.config, req) {
            return Err(err(code));
        }
        let rebalance_timeout_ms = match req.api_version == 0 || req.rebalance_timeout_ms < 0 {
            true => req.session_timeout_ms,
            false => req.rebalance_timeout_ms,
        };
        let protocols: Vec<(String, Bytes)> = (req.protocols.iter())
            .map(|p| (p.name.clone(), p.metadata.clone()))
            .collect();
        let unknown = req.member_id.is_empty();
        let member_id = match unknown {
            true => self.member_ids.next().to_string(),
            false => req.member_id.clone(),
        };
        let max = usize::try_from(self.config.consumer_max_size.max(0)).unwrap_or(usize::MAX);
        let g = self
            .consumer_groups
            .get_mut(&req.group_id)
            .expect("a consumer group");
        if !g.members.contains_key(&member_id) && g.members.len() >= max {
            return Err(Box::new(JoinResult::error(
                "",
                ErrorCode::GROUP_MAX_SIZE_REACHED,
            )));
        }
        if !supports_classic_protocols(g, &req.protocol_type, &protocols) {
            return Err(err(ErrorCode::INCONSISTENT_GROUP_PROTOCOL));
        }
        if unknown && req.group_instance_id.is_none() && req.api_version >= 4 {
            return Err(Box::new(JoinResult::error(
                &member_id,
                ErrorCode::MEMBER_ID_REQUIRED,
            )));
        }
        let sub = classic::parse_subscription(&protocols[0].1)
            .ok_or_else(|| err(ErrorCode::INCONSISTENT_GROUP_PROTOCOL))?;
        classic_member_for(g, &member_id, unknown, req.group_instance_id.as_deref(), fx)
            .map_err(err)?;
        let bump = update_classic_metadata(
            g,
            &member_id,
            req,
            &sub,
            protocols.clone(),
            rebalance_timeout_ms,
            fx,
        );
        let image = self.topics.clone();
        maybe_bump_and_assign(g, bump, &image, &self.config.consumer_assignors, fx);
        let owned = to_ids(&sub.owned_partitions, &image);
        let gid = req.group_id.clone();
        let Ok(next) = self.reconcile_member(now, &gid, &member_id, &image, Some(&owned), fx)
        else {
            self.fence_consumer_member(now, &gid, &member_id, fx);
            return Err(err(ErrorCode::UNKNOWN_MEMBER_ID));
        };
        self.timers.cancel(&TimerKey::ConsumerJoin {
            group: gid.clone(),
            member: member_id.clone(),
        });
        self.schedule_consumer_session(now, &gid, &member_id);
        let at = now.saturating_add(i64::from(rebalance_timeout_ms.max(0)));
        let key = TimerKey::ConsumerSync {
            group: gid,
            member: member_id.clone(),
        };
        self.timers
            .schedule(key, at, TimerAction::ExpireClassicMember);
        Ok(JoinResult {
            error_code: ErrorCode::NONE,
            generation_id: next.member_epoch,
            protocol_type: Some(CONSUMER_PROTOCOL_TYPE.to_string()),
            protocol_name: Some(protocols[0].0.clone()),
            leader: String::new(),
            skip_assignment: false,
            member_id,
            members: Vec::new(),
        })
    }

    /// SyncGroup of a classic member of consumer group `req.group_id`: its current assignment, or
    /// UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, ILLEGAL_GENERATION (not its member epoch),
    /// INCONSISTENT_GROUP_PROTOCOL, REBALANCE_IN_PROGRESS (the group moved on: rejoin).
    pub(super) fn classic_sync_to_consumer_group(
        &mut self,
        now: i64,
        req: &SyncGroupRequest,
    ) -> SyncResult {
        let g = self
            .consumer_groups
            .get(&req.group_id)
            .expect("a consumer group");
        let m = match classic_member(g, &req.member_id, req.group_instance_id.as_deref()) {
            Ok(m) => m,
            Err(code) => return SyncResult::error(code),
        };
        if req.generation_id != m.current.member_epoch {
            return SyncResult::error(ErrorCode::ILLEGAL_GENERATION);
        }
        let (name, metadata) = (m.metadata.classic.as_ref())
            .and_then(|c| c.supported_protocols.first().cloned())
            .unwrap_or_default();
        if req
            .protocol_type
            .as_deref()
            .is_some_and(|t| t != CONSUMER_PROTOCOL_TYPE)
            || req.protocol_name.as_deref().is_some_and(|n| n != name)
        {
            return SyncResult::error(ErrorCode::INCONSISTENT_GROUP_PROTOCOL);
        }
        if g.group_epoch > m.current.member_epoch
            && m.current.state != MemberState::UnrevokedPartitions
        {
            return SyncResult::error(ErrorCode::REBALANCE_IN_PROGRESS);
        }
        let version = classic::subscription_version(&metadata);
        let assignment =
            classic::encode_assignment(version, &to_names(&m.current.assigned, &self.topics));
        let key = TimerKey::ConsumerSync {
            group: req.group_id.clone(),
            member: req.member_id.clone(),
        };
        self.timers.cancel(&key);
        self.schedule_consumer_session(now, &req.group_id, &req.member_id);
        SyncResult {
            error_code: ErrorCode::NONE,
            protocol_type: Some(CONSUMER_PROTOCOL_TYPE.to_string()),
            protocol_name: Some(name),
            assignment,
        }
    }

    /// Heartbeat of a classic member of consumer group `group_id`: 0, or REBALANCE_IN_PROGRESS when it must
    /// rejoin (its join timeout then starts), UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, ILLEGAL_GENERATION.
    pub(super) fn classic_heartbeat_to_consumer_group(
        &mut self,
        now: i64,
        group_id: &str,
        member_id: &str,
        instance_id: Option<&str>,
        generation_id: i32,
    ) -> ErrorCode {
        let g = self
            .consumer_groups
            .get(group_id)
            .expect("a consumer group");
        let m = match classic_member(g, member_id, instance_id) {
            Ok(m) => m,
            Err(code) => return code,
        };
        if generation_id != m.current.member_epoch {
            return ErrorCode::ILLEGAL_GENERATION;
        }
        let rejoin = m.current.member_epoch < g.group_epoch
            || m.current.state == MemberState::UnrevokedPartitions
            || (m.current.state == MemberState::UnreleasedPartitions
                && !waiting_on_unreleased(g, m));
        let rebalance_timeout = m.metadata.rebalance_timeout_ms;
        self.schedule_consumer_session(now, group_id, member_id);
        if !rejoin {
            return ErrorCode::NONE;
        }
        let key = TimerKey::ConsumerJoin {
            group: group_id.to_string(),
            member: member_id.to_string(),
        };
        if !self.timers.contains(&key) {
            let at = now.saturating_add(i64::from(rebalance_timeout.max(0)));
            self.timers
                .schedule(key, at, TimerAction::ExpireClassicMember);
        }
        ErrorCode::REBALANCE_IN_PROGRESS
    }

    /// LeaveGroup of classic members of consumer group `group_id`: each is removed (and the group maybe
    /// downgraded, see `fence_consumer_members`); UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID per member otherwise.
    pub(super) fn classic_leave_to_consumer_group(
        &mut self,
        now: i64,
        group_id: &str,
        members: &[LeaveMember],
        fx: &mut Vec<Effect>,
    ) -> LeaveResult {
        let g = self
            .consumer_groups
            .get(group_id)
            .expect("a consumer group");
        let mut leaving = Vec::new();
        let mut results = Vec::with_capacity(members.len());
        for lm in members {
            let id = match lm.member_id.is_empty() {
                true => lm
                    .group_instance_id
                    .as_ref()
                    .and_then(|i| g.static_members.get(i))
                    .cloned(),
                false => Some(lm.member_id.clone()),
            };
            let code = match id
                .as_deref()
                .map(|id| classic_member(g, id, lm.group_instance_id.as_deref()))
            {
                None => ErrorCode::UNKNOWN_MEMBER_ID,
                Some(Err(code)) => code,
                Some(Ok(m)) => {
                    leaving.push(m.member_id.clone());
                    ErrorCode::NONE
                }
            };
            results.push(LeaveMemberResult {
                member_id: lm.member_id.clone(),
                group_instance_id: lm.group_instance_id.clone(),
                error_code: code,
            });
        }
        self.fence_consumer_members(now, group_id, &leaving, fx);
        LeaveResult {
            error_code: ErrorCode::NONE,
            members: results,
        }
    }

    /// A classic member's join or sync timeout fired: it is fenced if it is still a classic member.
    pub(super) fn expire_classic_member(
        &mut self,
        now: i64,
        group: &str,
        member: &str,
        fx: &mut Vec<Effect>,
    ) {
        let classic = (self.consumer_groups.get(group))
            .and_then(|g| g.members.get(member))
            .is_some_and(ConsumerMember::uses_classic_protocol);
        if classic {
            self.fence_consumer_member(now, group, member, fx);
        }
    }
}

/// Applies a classic JoinGroup to member `member_id`'s subscription (topics and rack from the embedded
/// subscription, its `ClassicMemberMetadata`); persists it when it changed. True when the group epoch must be
/// bumped (a new member, or new topics).
fn update_classic_metadata(
    g: &mut ConsumerGroup,
    member_id: &str,
    req: &JoinGroupRequest,
    sub: &classic::Subscription,
    protocols: Vec<(String, Bytes)>,
    rebalance_timeout_ms: i32,
    fx: &mut Vec<Effect>,
) -> bool {
    let m = g.members.get_mut(member_id).expect("member exists");
    let old = m.metadata.clone();
    let mut md = old.clone();
    if req.group_instance_id.is_some() {
        md.instance_id = req.group_instance_id.clone();
    }
    if sub.rack_id.is_some() {
        md.rack_id = sub.rack_id.clone();
    }
    md.rebalance_timeout_ms = rebalance_timeout_ms;
    let mut topics = sub.topics.clone();
    topics.sort();
    topics.dedup();
    md.subscribed_topic_names = topics;
    md.subscribed_topic_regex = None;
    md.client_id = req.client_id.clone();
    md.client_host = req.client_host.clone();
    md.classic = Some(ClassicMemberMetadata {
        session_timeout_ms: req.session_timeout_ms,
        supported_protocols: protocols,
    });
    let bump = old == Default::default()
        || md.subscribed_topic_names != old.subscribed_topic_names
        || md.subscribed_topic_regex != old.subscribed_topic_regex;
    if md != old {
        if let Some(iid) = &md.instance_id {
            g.static_members.insert(iid.clone(), member_id.to_string());
        }
        m.metadata = md.clone();
        let (group, member) = (g.group_id.clone(), member_id.to_string());
        persist(
            fx,
            ConsumerRecord::MemberMetadata {
                group,
                member,
                value: Some(md),
            },
        );
    }
    bump
}

/// The member a classic JoinGroup addresses, created for a new id (Kafka creates any unknown id, as it keeps
/// no pending ids for consumer groups) or, for a new static member id, taking over the instance id's holder
/// with its assignment. Errors: UNKNOWN_MEMBER_ID (a consumer-protocol member's id, or a static member id
/// the instance id does not map to), FENCED_INSTANCE_ID.
fn classic_member_for(
    g: &mut ConsumerGroup,
    member_id: &str,
    unknown: bool,
    instance_id: Option<&str>,
    fx: &mut Vec<Effect>,
) -> Result<(), ErrorCode> {
    if let Some(iid) = instance_id {
        let holder = g.static_members.get(iid).cloned();
        match holder {
            Some(h) if !unknown && h != member_id => return Err(ErrorCode::FENCED_INSTANCE_ID),
            None if !unknown => return Err(ErrorCode::UNKNOWN_MEMBER_ID),
            Some(h) if unknown => {
                // KIP-345: the new member id replaces the old one, with its assignment and target.
                let old = g.members.get(&h).cloned().unwrap_or_default();
                let target = g.target.get(&h).cloned();
                g.remove_member(&h);
                tombstone_member(fx, &g.group_id, &h);
                let mut member = old.clone();
                member.member_id = member_id.to_string();
                member.metadata = Default::default();
                g.members.insert(
                    member_id.to_string(),
                    ConsumerMember {
                        current: Default::default(),
                        ..member
                    },
                );
                if let Some(t) = target {
                    let (group, member) = (g.group_id.clone(), member_id.to_string());
                    persist(
                        fx,
                        ConsumerRecord::TargetMember {
                            group,
                            member,
                            value: Some(t.clone()),
                        },
                    );
                    g.target.insert(member_id.to_string(), t);
                }
                g.set_current(member_id, old.current.clone());
                let (group, member) = (g.group_id.clone(), member_id.to_string());
                persist(
                    fx,
                    ConsumerRecord::CurrentAssignment {
                        group,
                        member,
                        value: Some(old.current),
                    },
                );
                return Ok(());
            }
            _ => {}
        }
    }
    match g.members.get(member_id) {
        Some(m) if !m.uses_classic_protocol() => Err(ErrorCode::UNKNOWN_MEMBER_ID),
        Some(_) => Ok(()),
        None => {
            let m = ConsumerMember {
                member_id: member_id.to_string(),
                ..Default::default()
            };
            g.members.insert(member_id.to_string(), m);
            Ok(())
        }
    }
}
