//! ShareGroupHeartbeat and ShareGroupDescribe (KIP-932): joining, heartbeating and leaving a share group,
//! the session timeout that removes members, and the share groups' part of ListGroups, DeleteGroups and
//! loading (Kafka's `GroupMetadataManager.shareGroupHeartbeat`).
//!
//! Records of one heartbeat: the member's subscription (type 10) when it changed, then the group epoch (11)
//! when it was bumped. A removed member's subscription is tombstoned and the group epoch bumped.

use std::collections::{BTreeMap, BTreeSet};

use types::ErrorCode;

use super::{too_long, GroupCoordinator};
use crate::api::{Effect, ListedGroup, Outcome};
use crate::consumer::api::TopicsImage;
use crate::consumer::subscription::metadata_hash;
use crate::records::GroupRecord;
use crate::share_group::records::{ShareMemberMetadataValue, ShareRecord};
use crate::share_group::{
    assignor, DescribedShareGroup, DescribedShareMember, ShareGroup, ShareHeartbeatRequest,
    ShareHeartbeatResult, ShareMember, LEAVE_GROUP_MEMBER_EPOCH, SHARE_GROUP_TYPE,
    SHARE_PROTOCOL_TYPE, SIMPLE_ASSIGNOR,
};
use crate::timers::{TimerAction, TimerKey};

type HbResult<T> = Result<T, ShareHeartbeatResult>;

fn invalid(message: &str) -> ShareHeartbeatResult {
    ShareHeartbeatResult::error(ErrorCode::INVALID_REQUEST, message)
}

fn persist(fx: &mut Vec<Effect>, r: ShareRecord) {
    fx.push(Effect::Persist(GroupRecord::Share(Box::new(r))));
}

/// Kafka's request checks (`throwIfShareGroupHeartbeatRequestIsInvalid`), plus the bounds of the record
/// encoding.
fn validate(req: &ShareHeartbeatRequest) -> HbResult<()> {
    if req.group_id.is_empty() {
        return Err(invalid("GroupId can't be empty."));
    }
    if req.member_id.is_empty() {
        return Err(invalid("MemberId can't be empty."));
    }
    let long = [&req.group_id, &req.member_id, &req.client_id]
        .into_iter()
        .chain(req.rack_id.as_ref())
        .chain(req.subscribed_topic_names.iter().flatten())
        .any(|s| too_long(s));
    if long {
        return Err(ShareHeartbeatResult::error(
            ErrorCode::INVALID_GROUP_ID,
            "a string of the request is too long to store",
        ));
    }
    if req.rack_id.as_deref() == Some("") {
        return Err(invalid("RackId can't be empty."));
    }
    match req.member_epoch {
        0 if req
            .subscribed_topic_names
            .as_ref()
            .is_none_or(Vec::is_empty) =>
        {
            Err(invalid(
                "SubscribedTopicNames must be set in first request.",
            ))
        }
        e if e < LEAVE_GROUP_MEMBER_EPOCH => Err(invalid("MemberEpoch is invalid.")),
        _ => Ok(()),
    }
}

impl GroupCoordinator {
    /// ShareGroupHeartbeat (v1, KIP-932): join (`member_epoch` 0), heartbeat (the member's epoch) or leave
    /// (-1). `image` is the current topics image: the target assignment is computed from it, and a change of a
    /// subscribed topic bumps the group epoch.
    ///
    /// Errors: INVALID_REQUEST (malformed request), GROUP_ID_NOT_FOUND (a heartbeat for an unknown group, or
    /// the id of a classic or consumer group), UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH (the member must rejoin
    /// with epoch 0), GROUP_MAX_SIZE_REACHED (`group.share.max.size`).
    pub fn share_group_heartbeat(
        &mut self,
        now_ms: i64,
        req: &ShareHeartbeatRequest,
        image: &TopicsImage,
    ) -> Outcome<ShareHeartbeatResult> {
        let mut fx = self.fire_due(now_ms);
        let response = validate(req)
            .and_then(|()| match req.member_epoch {
                LEAVE_GROUP_MEMBER_EPOCH => self.share_leave(req, &mut fx),
                _ => self.share_heartbeat(now_ms, req, image, &mut fx),
            })
            .unwrap_or_else(|e| e);
        Outcome {
            response,
            effects: fx,
        }
    }

    fn share_heartbeat(
        &mut self,
        now: i64,
        req: &ShareHeartbeatRequest,
        image: &TopicsImage,
        fx: &mut Vec<Effect>,
    ) -> HbResult<ShareHeartbeatResult> {
        self.share_group_for(req)?;
        let max = usize::try_from(self.config.share_max_size.max(0)).unwrap_or(usize::MAX);
        let g = (self.share_groups.get_mut(&req.group_id)).expect("created above");
        let joined = admit_member(g, req, max)?;
        let mut bump = update_metadata(g, req, fx) || joined;
        let hash = metadata_hash(&g.subscribed_topics(), image);
        bump |= hash != g.metadata_hash;
        if bump {
            g.group_epoch = g.group_epoch.max(g.assignment_epoch) + 1;
            g.metadata_hash = hash;
            persist(fx, group_epoch_record(g));
        }
        if g.group_epoch > g.assignment_epoch {
            let subscriptions: BTreeMap<String, BTreeSet<String>> = (g.members.iter())
                .map(|(id, m)| {
                    let topics = m.metadata.subscribed_topic_names.iter().cloned();
                    (id.clone(), topics.collect())
                })
                .collect();
            g.target = assignor::assign(&subscriptions, image, &g.target);
            g.assignment_epoch = g.group_epoch;
        }
        let epoch = g.assignment_epoch;
        let target = g.target.get(&req.member_id).cloned().unwrap_or_default();
        let m = g.members.get_mut(&req.member_id).expect("admitted above");
        let send = req.member_epoch == 0 || m.member_epoch.is_none() || m.assignment != target;
        if m.member_epoch != Some(epoch) {
            m.previous_member_epoch = m.member_epoch.unwrap_or(req.member_epoch);
            m.member_epoch = Some(epoch);
        }
        m.assignment = target;
        let assignment = send.then(|| m.assignment.clone());
        self.schedule_share_session(now, &req.group_id, &req.member_id);
        Ok(ShareHeartbeatResult {
            member_id: Some(req.member_id.clone()),
            member_epoch: epoch,
            heartbeat_interval_ms: (self.timeouts_of(&req.group_id).share_heartbeat_interval_ms)
                .unwrap_or(self.config.share_heartbeat_interval_ms),
            assignment,
            ..Default::default()
        })
    }

    /// The share group of a heartbeat: existing, or created by a join (epoch 0). The id of a classic or
    /// consumer group is refused (GROUP_ID_NOT_FOUND), as Kafka does.
    fn share_group_for(&mut self, req: &ShareHeartbeatRequest) -> HbResult<()> {
        if self.share_groups.contains_key(&req.group_id) {
            return Ok(());
        }
        if self.groups.contains_key(&req.group_id)
            || self.consumer_groups.contains_key(&req.group_id)
        {
            return Err(ShareHeartbeatResult::error(
                ErrorCode::GROUP_ID_NOT_FOUND,
                format!("Group {} is not a share group.", req.group_id),
            ));
        }
        if req.member_epoch != 0 {
            return Err(ShareHeartbeatResult::error(
                ErrorCode::GROUP_ID_NOT_FOUND,
                format!("Share group {} not found.", req.group_id),
            ));
        }
        (self.share_groups).insert(req.group_id.clone(), ShareGroup::new(&req.group_id));
        Ok(())
    }

    /// Leave (-1): the member is removed and the group epoch bumped.
    fn share_leave(
        &mut self,
        req: &ShareHeartbeatRequest,
        fx: &mut Vec<Effect>,
    ) -> HbResult<ShareHeartbeatResult> {
        let known = (self.share_groups.get(&req.group_id))
            .is_some_and(|g| g.members.contains_key(&req.member_id));
        if !known {
            return Err(ShareHeartbeatResult::error(
                ErrorCode::UNKNOWN_MEMBER_ID,
                format!("Member {} is not a member of the group.", req.member_id),
            ));
        }
        self.remove_share_member(&req.group_id, &req.member_id, fx);
        Ok(ShareHeartbeatResult {
            member_id: Some(req.member_id.clone()),
            member_epoch: LEAVE_GROUP_MEMBER_EPOCH,
            heartbeat_interval_ms: 0,
            ..Default::default()
        })
    }

    /// Removes a member (it left, or its session expired): tombstones its subscription and bumps the group
    /// epoch, so that the next heartbeat recomputes the assignment.
    pub(super) fn remove_share_member(&mut self, group: &str, member: &str, fx: &mut Vec<Effect>) {
        self.timers.cancel(&TimerKey::ShareSession {
            group: group.to_string(),
            member: member.to_string(),
        });
        let Some(g) = self.share_groups.get_mut(group) else {
            return;
        };
        if g.members.remove(member).is_none() {
            return;
        }
        g.target.remove(member);
        persist(
            fx,
            ShareRecord::MemberMetadata {
                group: group.to_string(),
                member: member.to_string(),
                value: None,
            },
        );
        g.group_epoch = g.group_epoch.max(g.assignment_epoch) + 1;
        persist(fx, group_epoch_record(g));
    }

    fn schedule_share_session(&mut self, now: i64, group: &str, member: &str) {
        let timeout = (self.timeouts_of(group).share_session_timeout_ms)
            .unwrap_or(self.config.share_session_timeout_ms);
        let at = now.saturating_add(i64::from(timeout.max(0)));
        let key = TimerKey::ShareSession {
            group: group.to_string(),
            member: member.to_string(),
        };
        self.timers
            .schedule(key, at, TimerAction::ExpireShareSession);
    }

    /// ShareGroupDescribe (v1): each group, or GROUP_ID_NOT_FOUND (69) for an unknown group or one that is
    /// not a share group.
    pub fn describe_share_groups(&self, group_ids: &[String]) -> Vec<DescribedShareGroup> {
        group_ids
            .iter()
            .map(|id| match self.share_groups.get(id) {
                None => DescribedShareGroup {
                    error_code: ErrorCode::GROUP_ID_NOT_FOUND,
                    error_message: Some(format!("Group {id} is not a share group.")),
                    group_id: id.clone(),
                    group_state: "Dead".to_string(),
                    ..Default::default()
                },
                Some(g) => DescribedShareGroup {
                    group_id: id.clone(),
                    group_state: g.state().as_str().to_string(),
                    group_epoch: g.group_epoch,
                    assignment_epoch: g.assignment_epoch,
                    assignor_name: SIMPLE_ASSIGNOR.to_string(),
                    members: (g.members.values())
                        .map(|m| DescribedShareMember {
                            member_id: m.member_id.clone(),
                            rack_id: m.metadata.rack_id.clone(),
                            member_epoch: m.member_epoch.unwrap_or(g.group_epoch),
                            client_id: m.metadata.client_id.clone(),
                            client_host: m.metadata.client_host.clone(),
                            subscribed_topic_names: m.metadata.subscribed_topic_names.clone(),
                            assignment: m.assignment.clone(),
                        })
                        .collect(),
                    ..Default::default()
                },
            })
            .collect()
    }

    /// True when `group_id` names a share group here.
    pub fn is_share_group(&self, group_id: &str) -> bool {
        self.share_groups.contains_key(group_id)
    }

    /// The share groups' rows of ListGroups (type "share", protocol type "share").
    pub(super) fn list_share_groups(&self, states_filter: &[String]) -> Vec<ListedGroup> {
        (self.share_groups.values())
            .filter(|g| {
                let state = g.state().as_str();
                states_filter.is_empty()
                    || states_filter.iter().any(|s| s.eq_ignore_ascii_case(state))
            })
            .map(|g| ListedGroup {
                group_id: g.group_id.clone(),
                protocol_type: SHARE_PROTOCOL_TYPE.to_string(),
                group_state: g.state().as_str().to_string(),
                group_type: SHARE_GROUP_TYPE.to_string(),
            })
            .collect()
    }

    /// DeleteGroups of a share group: `None` when `group_id` is not one; NON_EMPTY_GROUP while it has members;
    /// else the group is tombstoned. The caller deletes its share-partition state.
    pub(super) fn delete_share_group(
        &mut self,
        group_id: &str,
        fx: &mut Vec<Effect>,
    ) -> Option<ErrorCode> {
        let g = self.share_groups.get(group_id)?;
        if !g.members.is_empty() {
            return Some(ErrorCode::NON_EMPTY_GROUP);
        }
        self.share_groups.remove(group_id);
        self.timers.cancel_group(group_id);
        persist(
            fx,
            ShareRecord::GroupMetadata {
                group: group_id.to_string(),
                value: None,
            },
        );
        Some(ErrorCode::NONE)
    }

    /// Replays one share-group record (loading).
    pub(super) fn replay_share(&mut self, record: ShareRecord) {
        match record {
            ShareRecord::GroupMetadata { group, value: None } => {
                self.share_groups.remove(&group);
                self.timers.cancel_group(&group);
            }
            ShareRecord::GroupMetadata {
                group,
                value: Some((epoch, hash)),
            } => {
                let g = (self.share_groups.entry(group.clone()))
                    .or_insert_with(|| ShareGroup::new(&group));
                g.group_epoch = epoch;
                g.metadata_hash = hash;
            }
            ShareRecord::MemberMetadata {
                group,
                member,
                value,
            } => {
                let g = (self.share_groups.entry(group.clone()))
                    .or_insert_with(|| ShareGroup::new(&group));
                match value {
                    None => {
                        g.members.remove(&member);
                    }
                    Some(metadata) => {
                        let m = g.members.entry(member.clone()).or_default();
                        m.member_id = member;
                        m.metadata = metadata;
                    }
                }
            }
        }
    }

    /// Ends loading of share groups `ids`: recovered members' sessions start at `now_ms`, and their target
    /// assignment is recomputed on the next heartbeat.
    pub(super) fn share_groups_loaded(&mut self, now_ms: i64, ids: &[String]) {
        let mut sessions = Vec::new();
        for id in ids {
            if let Some(g) = self.share_groups.get_mut(id) {
                g.assignment_epoch = g.assignment_epoch.min(g.group_epoch - 1);
                sessions.extend(g.members.keys().map(|m| (id.clone(), m.clone())));
            }
        }
        for (g, m) in sessions {
            self.schedule_share_session(now_ms, &g, &m);
        }
    }
}

/// Admits the heartbeat's member: a join creates it (GROUP_MAX_SIZE_REACHED past `max`) or resets a known
/// one; other epochs need a known member (UNKNOWN_MEMBER_ID) at its epoch or the one before
/// (FENCED_MEMBER_EPOCH). Returns true for a new member.
fn admit_member(g: &mut ShareGroup, req: &ShareHeartbeatRequest, max: usize) -> HbResult<bool> {
    let existing = g.members.get(&req.member_id);
    if req.member_epoch == 0 {
        if existing.is_some() {
            return Ok(false);
        }
        if g.members.len() >= max {
            return Err(ShareHeartbeatResult::error(
                ErrorCode::GROUP_MAX_SIZE_REACHED,
                format!("The share group has reached its maximum size of {max}."),
            ));
        }
        let member = ShareMember {
            member_id: req.member_id.clone(),
            ..Default::default()
        };
        g.members.insert(req.member_id.clone(), member);
        return Ok(true);
    }
    let Some(m) = existing else {
        return Err(ShareHeartbeatResult::error(
            ErrorCode::UNKNOWN_MEMBER_ID,
            format!("Member {} is not a member of the group.", req.member_id),
        ));
    };
    let ok = match m.member_epoch {
        None => req.member_epoch <= g.group_epoch,
        Some(e) => req.member_epoch == e || req.member_epoch == m.previous_member_epoch,
    };
    if !ok {
        return Err(ShareHeartbeatResult::error(
            ErrorCode::FENCED_MEMBER_EPOCH,
            format!(
                "The share group member has an invalid epoch {}; it must rejoin.",
                req.member_epoch
            ),
        ));
    }
    Ok(false)
}

/// Applies the request's subscription and client details to the member; persists them when they changed.
/// True when the subscription changed (a new target assignment is due).
fn update_metadata(g: &mut ShareGroup, req: &ShareHeartbeatRequest, fx: &mut Vec<Effect>) -> bool {
    let m = g.members.get_mut(&req.member_id).expect("admitted");
    let mut next = m.metadata.clone();
    if let Some(names) = &req.subscribed_topic_names {
        let mut names = names.clone();
        names.sort();
        names.dedup();
        next.subscribed_topic_names = names;
    }
    if req.rack_id.is_some() {
        next.rack_id = req.rack_id.clone();
    }
    next.client_id = req.client_id.clone();
    next.client_host = req.client_host.clone();
    if next == m.metadata {
        return false;
    }
    let resubscribed = next.subscribed_topic_names != m.metadata.subscribed_topic_names;
    m.metadata = next.clone();
    persist(
        fx,
        ShareRecord::MemberMetadata {
            group: g.group_id.clone(),
            member: req.member_id.clone(),
            value: Some(ShareMemberMetadataValue { ..next }),
        },
    );
    resubscribed
}

fn group_epoch_record(g: &ShareGroup) -> ShareRecord {
    ShareRecord::GroupMetadata {
        group: g.group_id.clone(),
        value: Some((g.group_epoch, g.metadata_hash)),
    }
}
