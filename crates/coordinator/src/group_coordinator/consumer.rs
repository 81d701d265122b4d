//! ConsumerGroupHeartbeat (KIP-848): joining, heartbeating, reconciling and leaving a consumer group, and the
//! session and rebalance timeouts that fence members (Kafka's `GroupMetadataManager.consumerGroupHeartbeat`).
//!
//! Records of one heartbeat, in the order Kafka writes them: the member's subscription (type 5) when it
//! changed, the group epoch (3) when it was bumped, the target assignment of every member whose target changed
//! (7) and the assignment epoch (6) when a new target was computed, and the member's current assignment (8)
//! when it changed. A fenced member's records are tombstoned (8, 7, 5) and the group epoch bumped.

use std::collections::{BTreeMap, BTreeSet};

use types::ErrorCode;
use uuid::Uuid;

use super::{too_long, GroupCoordinator};
use crate::api::{Effect, Outcome};
use crate::consumer::api::{ConsumerHeartbeatRequest, ConsumerHeartbeatResult, TopicsImage};
use crate::consumer::assignor::{self, MemberSpec};
use crate::consumer::reconcile::{self, Inputs};
use crate::consumer::records::{
    ConsumerRecord, CurrentAssignmentValue, GroupEpochValue, MemberMetadataValue,
};
use crate::consumer::subscription::{compile_regex, metadata_hash, resolve_regexes};
use crate::consumer::{
    Assignment, ConsumerGroup, ConsumerMember, MemberState, LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
};
use crate::records::GroupRecord;
use crate::timers::{TimerAction, TimerKey};

type HbResult<T> = Result<T, ConsumerHeartbeatResult>;

fn invalid(message: &str) -> ConsumerHeartbeatResult {
    ConsumerHeartbeatResult::error(ErrorCode::INVALID_REQUEST, message)
}

fn persist(fx: &mut Vec<Effect>, r: ConsumerRecord) {
    fx.push(Effect::Persist(GroupRecord::Consumer(Box::new(r))));
}

/// Kafka's request checks (`throwIfConsumerGroupHeartbeatRequestIsInvalid`), plus the bounds of the record
/// encoding.
fn validate(req: &ConsumerHeartbeatRequest, assignors: &[String]) -> HbResult<()> {
    if req.group_id.is_empty() {
        return Err(invalid("GroupId can't be empty."));
    }
    let long = [&req.group_id, &req.member_id, &req.client_id]
        .into_iter()
        .chain(req.instance_id.as_ref())
        .chain(req.subscribed_topic_regex.as_ref())
        .chain(req.subscribed_topic_names.iter().flatten())
        .any(|s| too_long(s));
    if long {
        return Err(ConsumerHeartbeatResult::error(
            ErrorCode::INVALID_GROUP_ID,
            "a string of the request is too long to store",
        ));
    }
    if req.instance_id.as_deref() == Some("") {
        return Err(invalid("InstanceId can't be empty."));
    }
    if req.rack_id.as_deref() == Some("") {
        return Err(invalid("RackId can't be empty."));
    }
    match req.member_epoch {
        0 => {
            if req.api_version >= 1 && req.member_id.is_empty() {
                return Err(invalid("MemberId can't be empty."));
            }
            if req.rebalance_timeout_ms == -1 {
                return Err(invalid(
                    "RebalanceTimeoutMs must be provided in first request.",
                ));
            }
            if req.subscribed_topic_names.is_none() && req.subscribed_topic_regex.is_none() {
                return Err(invalid(
                    "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.",
                ));
            }
            if req.topic_partitions.as_ref().is_some_and(|t| !t.is_empty()) {
                return Err(invalid("TopicPartitions must be empty when (re-)joining."));
            }
        }
        LEAVE_GROUP_STATIC_MEMBER_EPOCH if req.instance_id.is_none() => {
            return Err(invalid("InstanceId can't be null."));
        }
        e if e < LEAVE_GROUP_STATIC_MEMBER_EPOCH => return Err(invalid("MemberEpoch is invalid.")),
        _ if req.member_id.is_empty() => return Err(invalid("MemberId can't be empty.")),
        _ => {}
    }
    let regex = req
        .subscribed_topic_regex
        .as_deref()
        .filter(|r| !r.is_empty());
    let names = req
        .subscribed_topic_names
        .as_ref()
        .filter(|n| !n.is_empty());
    if names.is_some() && regex.is_some() {
        return Err(invalid(
            "SubscribedTopicNames and SubscribedTopicRegex cannot be used together.",
        ));
    }
    if let Some(re) = regex {
        if let Err(e) = compile_regex(re) {
            return Err(ConsumerHeartbeatResult::error(
                ErrorCode::INVALID_REGULAR_EXPRESSION,
                format!("SubscribedTopicRegex `{re}` is not a valid regular expression: {e}."),
            ));
        }
    }
    if let Some(a) = &req.server_assignor {
        if !assignors.iter().any(|x| x == a) {
            return Err(ConsumerHeartbeatResult::error(
                ErrorCode::UNSUPPORTED_ASSIGNOR,
                format!("ServerAssignor {a} is not supported. Supported assignors: {assignors:?}."),
            ));
        }
    }
    Ok(())
}

impl GroupCoordinator {
    /// ConsumerGroupHeartbeat (v0–v1, KIP-848): join (`member_epoch` 0), heartbeat (the member's epoch),
    /// leave (-1) or leave temporarily as a static member (-2). `image` is the current topics image: the
    /// target assignment is computed from it, and a change of a subscribed topic bumps the group epoch.
    ///
    /// Errors: INVALID_REQUEST (malformed request), GROUP_ID_NOT_FOUND (a heartbeat for an unknown group, or
    /// the id of a classic group with members that `group.consumer.migration.policy` does not let it upgrade), UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH (the member must
    /// rejoin with epoch 0 and no partitions), UNRELEASED_INSTANCE_ID (another live member holds the instance
    /// id), FENCED_INSTANCE_ID, GROUP_MAX_SIZE_REACHED, UNSUPPORTED_ASSIGNOR, INVALID_REGULAR_EXPRESSION.
    pub fn consumer_group_heartbeat(
        &mut self,
        now_ms: i64,
        req: &ConsumerHeartbeatRequest,
        image: &TopicsImage,
    ) -> Outcome<ConsumerHeartbeatResult> {
        let mut fx = self.fire_due(now_ms);
        if image.version != self.topics.version || self.topics.names().next().is_none() {
            self.topics = std::sync::Arc::new(image.clone());
        }
        let response = validate(req, &self.config.consumer_assignors)
            .and_then(|()| match req.member_epoch {
                LEAVE_GROUP_MEMBER_EPOCH | LEAVE_GROUP_STATIC_MEMBER_EPOCH => {
                    self.consumer_leave(now_ms, req, &mut fx)
                }
                _ => self.consumer_heartbeat(now_ms, req, image, &mut fx),
            })
            .unwrap_or_else(|e| e);
        Outcome {
            response,
            effects: fx,
        }
    }

    fn consumer_heartbeat(
        &mut self,
        now: i64,
        req: &ConsumerHeartbeatRequest,
        image: &TopicsImage,
        fx: &mut Vec<Effect>,
    ) -> HbResult<ConsumerHeartbeatResult> {
        self.consumer_group_for(now, req, image, fx)?;
        let max = usize::try_from(self.config.consumer_max_size.max(0)).unwrap_or(usize::MAX);
        let g = self
            .consumer_groups
            .get_mut(&req.group_id)
            .expect("created above");
        let member_id = member_for(g, req, max, fx, &mut self.member_ids)?;
        let assigned_before = g.members[&member_id].current.assigned.clone();
        let bump = update_metadata(g, &member_id, req, fx);
        maybe_bump_and_assign(g, bump, image, &self.config.consumer_assignors, fx);
        let owned = req.topic_partitions.as_ref();
        let Ok(next) = self.reconcile_member(now, &req.group_id, &member_id, image, owned, fx)
        else {
            self.fence_consumer_member(now, &req.group_id, &member_id, fx);
            return Err(ConsumerHeartbeatResult::error(
                ErrorCode::FENCED_MEMBER_EPOCH,
                "The member is in an unknown state; it must rejoin.",
            ));
        };
        self.schedule_consumer_session(now, &req.group_id, &member_id);
        let full = req.rebalance_timeout_ms != -1
            && (req.subscribed_topic_names.is_some() || req.subscribed_topic_regex.is_some())
            && req.topic_partitions.is_some();
        let send = req.member_epoch == 0 || full || next.assigned != assigned_before;
        Ok(ConsumerHeartbeatResult {
            member_id: Some(member_id),
            member_epoch: next.member_epoch,
            heartbeat_interval_ms: heartbeat_interval(
                (self
                    .timeouts_of(&req.group_id)
                    .consumer_heartbeat_interval_ms)
                    .unwrap_or(self.config.consumer_heartbeat_interval_ms),
                next.state,
            ),
            assignment: send.then_some(next.assigned),
            ..Default::default()
        })
    }

    /// Reconciles member `member_id` towards its target (Kafka's `maybeReconcile`) with the partitions it
    /// reported owning (`None`: unknown), persists its changed current assignment and arms or cancels its
    /// rebalance timeout. `Err(())` when it must be fenced (an UNKNOWN state).
    pub(super) fn reconcile_member(
        &mut self,
        now: i64,
        group: &str,
        member_id: &str,
        image: &TopicsImage,
        owned: Option<&Assignment>,
        fx: &mut Vec<Effect>,
    ) -> Result<CurrentAssignmentValue, ()> {
        let g = self.consumer_groups.get_mut(group).expect("group exists");
        let member = &g.members[member_id];
        let subscribed: BTreeSet<Uuid> = (member.subscribed_topics(g).into_iter())
            .filter_map(|t| image.topic(t).map(|(id, _)| id))
            .collect();
        let empty = Assignment::new();
        let owners = &g.owners;
        let owner = |t: Uuid, p: i32| owners.get(&(t, p)).map(String::as_str);
        let next = reconcile::next(&Inputs {
            current: &member.current,
            member_id,
            target_epoch: g.assignment_epoch,
            target: g.target.get(member_id).unwrap_or(&empty),
            subscribed: &subscribed,
            owner: &owner,
            owned,
        })?;
        let rebalance_timeout = member.metadata.rebalance_timeout_ms;
        let changed = next != member.current;
        if changed {
            g.set_current(member_id, next.clone());
            persist(
                fx,
                ConsumerRecord::CurrentAssignment {
                    group: g.group_id.clone(),
                    member: member_id.to_string(),
                    value: Some(next.clone()),
                },
            );
        }
        let rebalance_key = TimerKey::ConsumerRebalance {
            group: group.to_string(),
            member: member_id.to_string(),
        };
        if next.state == MemberState::UnrevokedPartitions {
            if changed || !self.timers.contains(&rebalance_key) {
                let at = now.saturating_add(i64::from(rebalance_timeout.max(0)));
                let action = TimerAction::ExpireConsumerRebalance {
                    epoch: next.member_epoch,
                };
                self.timers.schedule(rebalance_key, at, action);
            }
        } else {
            self.timers.cancel(&rebalance_key);
        }
        Ok(next)
    }

    /// The group of a heartbeat: existing, or created by a join (epoch 0). An empty classic group of the same
    /// id (one that only holds offsets) is replaced whatever the policy (Kafka's
    /// `maybeDeleteEmptyClassicGroup`); one with members is upgraded when `group.consumer.migration.policy`
    /// allows it, else refused with GROUP_ID_NOT_FOUND.
    fn consumer_group_for(
        &mut self,
        now: i64,
        req: &ConsumerHeartbeatRequest,
        image: &TopicsImage,
        fx: &mut Vec<Effect>,
    ) -> HbResult<()> {
        if self.consumer_groups.contains_key(&req.group_id) {
            return Ok(());
        }
        if self.share_groups.contains_key(&req.group_id) {
            return Err(ConsumerHeartbeatResult::error(
                ErrorCode::GROUP_ID_NOT_FOUND,
                format!("Group {} is not a consumer group.", req.group_id),
            ));
        }
        if let Some(classic) = self.groups.get(&req.group_id) {
            if !classic.members.is_empty() {
                if req.member_epoch != 0 {
                    return Err(ConsumerHeartbeatResult::error(
                        ErrorCode::GROUP_ID_NOT_FOUND,
                        format!("Group {} is not a consumer group.", req.group_id),
                    ));
                }
                // KIP-848 online upgrade, when `group.consumer.migration.policy` allows it.
                return self.convert_to_consumer_group(now, &req.group_id, image, fx);
            }
        }
        if req.member_epoch != 0 {
            return Err(ConsumerHeartbeatResult::error(
                ErrorCode::GROUP_ID_NOT_FOUND,
                format!("Consumer group {} not found.", req.group_id),
            ));
        }
        if let Some(classic) = self.groups.remove(&req.group_id) {
            self.timers.cancel_group(&req.group_id);
            if classic.protocol_type.is_some() || classic.generation_id > 0 {
                fx.push(Effect::Persist(GroupRecord::GroupMetadata {
                    group: req.group_id.clone(),
                    value: None,
                }));
            }
        }
        let g = ConsumerGroup::new(&req.group_id);
        self.consumer_groups.insert(req.group_id.clone(), g);
        Ok(())
    }

    /// Leaves: -1 removes the member (its partitions are reassigned); -2 keeps a static member's assignment
    /// for its session timeout so that it can rejoin with the same instance id without a rebalance.
    fn consumer_leave(
        &mut self,
        now: i64,
        req: &ConsumerHeartbeatRequest,
        fx: &mut Vec<Effect>,
    ) -> HbResult<ConsumerHeartbeatResult> {
        let Some(g) = self.consumer_groups.get_mut(&req.group_id) else {
            return Err(ConsumerHeartbeatResult::error(
                ErrorCode::GROUP_ID_NOT_FOUND,
                format!("Consumer group {} not found.", req.group_id),
            ));
        };
        let member_id = match &req.instance_id {
            Some(iid) => match g.static_members.get(iid) {
                None => {
                    return Err(ConsumerHeartbeatResult::error(
                        ErrorCode::UNKNOWN_MEMBER_ID,
                        "",
                    ))
                }
                Some(m) if *m != req.member_id => {
                    return Err(ConsumerHeartbeatResult::error(
                        ErrorCode::FENCED_INSTANCE_ID,
                        format!("Instance id {iid} is held by another member."),
                    ))
                }
                Some(m) => m.clone(),
            },
            None if g.members.contains_key(&req.member_id) => req.member_id.clone(),
            None => {
                return Err(ConsumerHeartbeatResult::error(
                    ErrorCode::UNKNOWN_MEMBER_ID,
                    "",
                ))
            }
        };
        if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH {
            let m = &g.members[&member_id];
            let mut current = m.current.clone();
            if current.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH {
                current.previous_member_epoch = current.member_epoch;
                current.member_epoch = LEAVE_GROUP_STATIC_MEMBER_EPOCH;
            }
            g.set_current(&member_id, current.clone());
            persist(
                fx,
                ConsumerRecord::CurrentAssignment {
                    group: g.group_id.clone(),
                    member: member_id.clone(),
                    value: Some(current),
                },
            );
            self.schedule_consumer_session(now, &req.group_id, &member_id);
        } else {
            self.fence_consumer_member(now, &req.group_id, &member_id, fx);
        }
        Ok(ConsumerHeartbeatResult {
            member_id: Some(member_id),
            member_epoch: req.member_epoch,
            ..Default::default()
        })
    }

    /// Removes a member: tombstones for its current assignment, target and subscription, a bumped group
    /// epoch, and its timers cancelled. Its partitions go to the others on their next heartbeats.
    pub(super) fn fence_consumer_member(
        &mut self,
        now: i64,
        group: &str,
        member: &str,
        fx: &mut Vec<Effect>,
    ) {
        self.fence_consumer_members(now, group, &[member.to_string()], fx);
    }

    /// (Re)arms a member's session timeout: the group's `consumer.session.timeout.ms`, else the broker's
    /// `group.consumer.session.timeout.ms`, or the session timeout a classic-protocol member joined with.
    pub(super) fn schedule_consumer_session(&mut self, now: i64, group: &str, member: &str) {
        let classic = (self.consumer_groups.get(group))
            .and_then(|g| g.members.get(member))
            .and_then(|m| m.metadata.classic.as_ref())
            .map(|c| c.session_timeout_ms);
        let timeout = classic.unwrap_or_else(|| {
            (self.timeouts_of(group).consumer_session_timeout_ms)
                .unwrap_or(self.config.consumer_session_timeout_ms)
        });
        let at = now.saturating_add(i64::from(timeout.max(0)));
        let key = TimerKey::ConsumerSession {
            group: group.to_string(),
            member: member.to_string(),
        };
        self.timers
            .schedule(key, at, TimerAction::ExpireConsumerSession);
    }

    /// A rebalance timeout fired: the member is fenced if it still has not revoked at `epoch`.
    pub(super) fn expire_consumer_rebalance(
        &mut self,
        now: i64,
        group: &str,
        member: &str,
        epoch: i32,
        fx: &mut Vec<Effect>,
    ) {
        let late = (self.consumer_groups.get(group))
            .and_then(|g| g.members.get(member))
            .is_some_and(|m| {
                m.current.state == MemberState::UnrevokedPartitions
                    && m.current.member_epoch == epoch
            });
        if late {
            self.fence_consumer_member(now, group, member, fx);
        }
    }
}

/// How soon a member waiting for partitions that others still hold (UNRELEASED_PARTITIONS) is asked back, ms.
pub const RECONCILING_HEARTBEAT_INTERVAL_MS: i32 = 500;

/// The heartbeat interval told to a member in `state`: the group's `interval` (its
/// `consumer.heartbeat.interval.ms`, else `group.consumer.heartbeat.interval.ms`), except for a
/// member waiting for partitions others still hold, which is asked back within
/// [`RECONCILING_HEARTBEAT_INTERVAL_MS`] so that it takes them soon after their release — Kafka answers the
/// configured interval (5 s by default) and the member waits that long. Clients follow the interval of each
/// response (the Java client and librdkafka both do).
fn heartbeat_interval(interval: i32, state: MemberState) -> i32 {
    match state {
        MemberState::UnreleasedPartitions => interval.min(RECONCILING_HEARTBEAT_INTERVAL_MS),
        _ => interval,
    }
}

/// The member a join or heartbeat addresses, created or replaced on a join. Returns its id.
fn member_for(
    g: &mut ConsumerGroup,
    req: &ConsumerHeartbeatRequest,
    max: usize,
    fx: &mut Vec<Effect>,
    ids: &mut super::MemberIds,
) -> HbResult<String> {
    if req.member_epoch != 0 {
        let Some(m) = g.members.get(&req.member_id) else {
            return Err(ConsumerHeartbeatResult::error(
                ErrorCode::UNKNOWN_MEMBER_ID,
                format!(
                    "Member {} is not a member of group {}.",
                    req.member_id, g.group_id
                ),
            ));
        };
        check_epoch(m, req)?;
        return Ok(req.member_id.clone());
    }
    let member_id = match req.member_id.is_empty() {
        true => ids.next().to_string(),
        false => req.member_id.clone(),
    };
    let mut inherited = None;
    if let Some(iid) = &req.instance_id {
        if let Some(holder) = g.static_members.get(iid).cloned() {
            let held = &g.members[&holder];
            if holder != member_id && held.current.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH {
                return Err(ConsumerHeartbeatResult::error(
                    ErrorCode::UNRELEASED_INSTANCE_ID,
                    format!("Static member {holder} with instance id {iid} is not released yet."),
                ));
            }
            if holder != member_id {
                // The static member is back under a new member id: it takes over the old one's assignment.
                inherited = Some(release_static_member(g, &holder, fx));
            }
        }
    }
    if !g.members.contains_key(&member_id) {
        if g.members.len() >= max {
            return Err(ConsumerHeartbeatResult::error(
                ErrorCode::GROUP_MAX_SIZE_REACHED,
                format!("The consumer group has reached its maximum capacity of {max} members."),
            ));
        }
        g.members.insert(
            member_id.clone(),
            ConsumerMember {
                member_id: member_id.clone(),
                ..Default::default()
            },
        );
    } else if inherited.is_none() {
        // A rejoin of a known member (after it was fenced on its side): it owns nothing now.
        inherited = Some((CurrentAssignmentValue::default(), None, None));
    }
    if let Some((current, target, metadata)) = inherited {
        let (gid, mid) = (g.group_id.clone(), member_id.clone());
        if let Some(target) = target {
            // A replaced static member: its records move to the new member id.
            persist(
                fx,
                ConsumerRecord::TargetMember {
                    group: gid.clone(),
                    member: mid.clone(),
                    value: Some(target.clone()),
                },
            );
            g.target.insert(member_id.clone(), target);
        }
        if let Some(metadata) = metadata {
            if let Some(iid) = &metadata.instance_id {
                g.static_members.insert(iid.clone(), member_id.clone());
            }
            persist(
                fx,
                ConsumerRecord::MemberMetadata {
                    group: gid.clone(),
                    member: mid.clone(),
                    value: Some(metadata.clone()),
                },
            );
            persist(
                fx,
                ConsumerRecord::CurrentAssignment {
                    group: gid,
                    member: mid,
                    value: Some(current.clone()),
                },
            );
            g.members.get_mut(&member_id).expect("inserted").metadata = metadata;
        }
        g.set_current(&member_id, current);
    }
    Ok(member_id)
}

/// What a rejoining member takes over: its current assignment, target and subscription.
type Inherited = (
    CurrentAssignmentValue,
    Option<Assignment>,
    Option<MemberMetadataValue>,
);

/// Tombstones a removed member's records: its current assignment, target and subscription.
pub(super) fn tombstone_member(fx: &mut Vec<Effect>, group: &str, member: &str) {
    let (group, member) = (group.to_string(), member.to_string());
    for r in [
        ConsumerRecord::CurrentAssignment {
            group: group.clone(),
            member: member.clone(),
            value: None,
        },
        ConsumerRecord::TargetMember {
            group: group.clone(),
            member: member.clone(),
            value: None,
        },
        ConsumerRecord::MemberMetadata {
            group,
            member,
            value: None,
        },
    ] {
        persist(fx, r);
    }
}

/// Removes static member `holder` (tombstoning its records) and returns what its replacement inherits: its
/// assignment at the epoch before its temporary leave, its target and its subscription.
pub(super) fn release_static_member(
    g: &mut ConsumerGroup,
    holder: &str,
    fx: &mut Vec<Effect>,
) -> Inherited {
    let held = &g.members[holder];
    let mut current = held.current.clone();
    current.member_epoch = current.previous_member_epoch;
    let inherited = (
        current,
        g.target.get(holder).cloned(),
        Some(held.metadata.clone()),
    );
    g.remove_member(holder);
    tombstone_member(fx, &g.group_id, holder);
    inherited
}

/// Kafka's `throwIfMemberEpochIsInvalid`: a newer epoch than the member's, or an older one that is not its
/// previous epoch with owned partitions within its assignment (a lost response), fences the member.
fn check_epoch(m: &ConsumerMember, req: &ConsumerHeartbeatRequest) -> HbResult<()> {
    let fenced = || {
        Err(ConsumerHeartbeatResult::error(
            ErrorCode::FENCED_MEMBER_EPOCH,
            format!(
                "The consumer group member has a greater or smaller epoch ({}) than expected ({}).",
                req.member_epoch, m.current.member_epoch
            ),
        ))
    };
    let e = req.member_epoch;
    if e > m.current.member_epoch {
        return fenced();
    }
    if e < m.current.member_epoch {
        let within = req.topic_partitions.as_ref().is_some_and(|owned| {
            owned.iter().all(|(t, ps)| {
                ps.is_empty() || m.current.assigned.get(t).is_some_and(|a| ps.is_subset(a))
            })
        });
        if e != m.current.previous_member_epoch || !within {
            return fenced();
        }
    }
    Ok(())
}

/// Applies the request's subscription to the member; persists it when it changed. True when the change
/// requires a new target assignment (a new member, or a new subscription or assignor).
fn update_metadata(
    g: &mut ConsumerGroup,
    member_id: &str,
    req: &ConsumerHeartbeatRequest,
    fx: &mut Vec<Effect>,
) -> bool {
    let m = g.members.get_mut(member_id).expect("member exists");
    let old = m.metadata.clone();
    let new_member = old == MemberMetadataValue::default();
    let mut md = old.clone();
    md.client_id = req.client_id.clone();
    md.client_host = req.client_host.clone();
    if req.instance_id.is_some() {
        md.instance_id = req.instance_id.clone();
    }
    if req.rack_id.is_some() {
        md.rack_id = req.rack_id.clone();
    }
    if req.rebalance_timeout_ms != -1 {
        md.rebalance_timeout_ms = req.rebalance_timeout_ms;
    }
    if let Some(names) = &req.subscribed_topic_names {
        let mut names = names.clone();
        names.sort();
        names.dedup();
        md.subscribed_topic_names = names;
        md.subscribed_topic_regex = None;
    }
    match req.subscribed_topic_regex.as_deref() {
        // An empty expression clears a regular-expression subscription (librdkafka sends one with names).
        Some("") => md.subscribed_topic_regex = None,
        Some(re) => {
            md.subscribed_topic_regex = Some(re.to_string());
            md.subscribed_topic_names = Vec::new();
        }
        None => {}
    }
    if req.server_assignor.is_some() {
        md.server_assignor = req.server_assignor.clone();
    }
    if md == old {
        return false;
    }
    let bump = new_member
        || md.subscribed_topic_names != old.subscribed_topic_names
        || md.subscribed_topic_regex != old.subscribed_topic_regex
        || md.server_assignor != old.server_assignor;
    if let Some(iid) = &md.instance_id {
        g.static_members.insert(iid.clone(), member_id.to_string());
    }
    m.metadata = md.clone();
    persist(
        fx,
        ConsumerRecord::MemberMetadata {
            group: g.group_id.clone(),
            member: member_id.to_string(),
            value: Some(md),
        },
    );
    bump
}

/// Bumps the group epoch (persisted) when `bump` — a member joined or changed its subscription — or when the
/// subscribed topics' metadata changed, then computes a new target assignment if the group epoch is ahead.
pub(super) fn maybe_bump_and_assign(
    g: &mut ConsumerGroup,
    mut bump: bool,
    image: &TopicsImage,
    assignors: &[String],
    fx: &mut Vec<Effect>,
) {
    bump |= resolve_regexes(g, image);
    let hash = metadata_hash(&g.subscribed_topics(), image);
    if bump || hash != g.metadata_hash {
        g.group_epoch = g.group_epoch.max(g.assignment_epoch) + 1;
        g.metadata_hash = hash;
        persist(
            fx,
            ConsumerRecord::GroupMetadata {
                group: g.group_id.clone(),
                value: Some(GroupEpochValue {
                    epoch: g.group_epoch,
                    metadata_hash: hash,
                }),
            },
        );
    }
    if g.group_epoch > g.assignment_epoch {
        update_target(g, image, assignors, fx);
    }
}

/// Computes a new target assignment at the group epoch with the group's assignor (the one most members ask
/// for, else the first configured), rack-aware from the members' racks and the image's partition racks, and
/// persists the members' changed targets and the assignment epoch.
pub(super) fn update_target(
    g: &mut ConsumerGroup,
    image: &TopicsImage,
    assignors: &[String],
    fx: &mut Vec<Effect>,
) {
    let name = group_assignor(g, assignors);
    let mut partitions = BTreeMap::new();
    let mut racks = assignor::PartitionRacks::new();
    let mut specs = BTreeMap::new();
    for (id, m) in &g.members {
        let mut topics = BTreeSet::new();
        for t in m.subscribed_topics(g) {
            if let Some((tid, n)) = image.topic(t) {
                topics.insert(tid);
                if partitions.insert(tid, n).is_none() && !image.partition_racks(&tid).is_empty() {
                    racks.insert(tid, image.partition_racks(&tid).to_vec());
                }
            }
        }
        let previous = g.target.get(id).cloned().unwrap_or_default();
        let rack = m.metadata.rack_id.clone();
        specs.insert(
            id.clone(),
            MemberSpec {
                topics,
                previous,
                rack,
            },
        );
    }
    let out = assignor::assign_with_racks(&name, &specs, &partitions, &racks);
    for (id, a) in out {
        if g.target.get(&id) != Some(&a) {
            persist(
                fx,
                ConsumerRecord::TargetMember {
                    group: g.group_id.clone(),
                    member: id.clone(),
                    value: Some(a.clone()),
                },
            );
            g.target.insert(id, a);
        }
    }
    g.assignment_epoch = g.group_epoch;
    persist(
        fx,
        ConsumerRecord::TargetMetadata {
            group: g.group_id.clone(),
            epoch: Some(g.assignment_epoch),
        },
    );
}

/// The assignor a group uses: the one most of its members name (ties: by name), else the first configured.
pub(crate) fn group_assignor(g: &ConsumerGroup, assignors: &[String]) -> String {
    let mut votes: BTreeMap<&str, usize> = BTreeMap::new();
    for m in g.members.values() {
        if let Some(a) = &m.metadata.server_assignor {
            *votes.entry(a.as_str()).or_default() += 1;
        }
    }
    (votes
        .into_iter()
        .max_by_key(|(name, n)| (*n, std::cmp::Reverse(*name))))
    .map(|(name, _)| name.to_string())
    .or_else(|| assignors.first().cloned())
    .unwrap_or_else(|| assignor::UNIFORM.to_string())
}
