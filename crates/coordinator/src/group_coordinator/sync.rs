//! SyncGroup: the second half of a rebalance (Kafka's `classicGroupSync`): the leader's assignment is stored,
//! persisted and handed to every member; followers wait for it.

use std::collections::BTreeMap;

use bytes::Bytes;
use types::ErrorCode;

use super::{group_metadata_record, validate_member, Ctx, GroupCoordinator};
use crate::api::{Effect, RequestId, SyncGroupRequest, SyncResult};
use crate::group::{ClassicGroup, GroupState};

impl GroupCoordinator {
    /// SyncGroup (v0–v5). The leader's call distributes its assignment to every member (members it left out get
    /// empty bytes) and persists the group; followers' calls wait for the leader. Responses arrive as
    /// [`Effect::SyncResponse`].
    ///
    /// Errors: UNKNOWN_MEMBER_ID (group unknown or Empty, member unknown), FENCED_INSTANCE_ID,
    /// ILLEGAL_GENERATION, INCONSISTENT_GROUP_PROTOCOL (v5 protocol type/name mismatch), REBALANCE_IN_PROGRESS
    /// (join phase running, or a new rebalance started while waiting).
    pub fn sync_group(
        &mut self,
        now_ms: i64,
        request: RequestId,
        req: SyncGroupRequest,
    ) -> Vec<Effect> {
        if self.consumer_groups.contains_key(&req.group_id) {
            // A classic member of a consumer group (KIP-848 online migration).
            let mut fx = self.fire_due(now_ms);
            if self.consumer_groups.contains_key(&req.group_id) {
                let response = self.classic_sync_to_consumer_group(now_ms, &req);
                fx.push(Effect::SyncResponse { request, response });
                return fx;
            }
            let (groups, mut cx) = self.split(now_ms, &mut fx);
            sync_classic(groups, &mut cx, request, &req);
            return fx;
        }
        self.run(now_ms, |groups, cx| sync_classic(groups, cx, request, &req))
            .effects
    }
}

/// SyncGroup of a classic group (or none).
fn sync_classic(
    groups: &mut BTreeMap<String, ClassicGroup>,
    cx: &mut Ctx<'_>,
    request: RequestId,
    req: &SyncGroupRequest,
) {
    match groups.get_mut(&req.group_id) {
        None => cx.respond_sync(request, SyncResult::error(ErrorCode::UNKNOWN_MEMBER_ID)),
        Some(g) => match sync_request_error(g, req) {
            Some(code) => cx.respond_sync(request, SyncResult::error(code)),
            None => cx.sync_member(g, request, req),
        },
    }
}

impl GroupCoordinator {
    /// The group record that a leader's SyncGroup for `group_id` produced could not be written (the
    /// caller's append failed; the parked SyncGroups got the write's error). As Kafka's classic coordinator
    /// when storing the assignment fails (`resetAndPropagateAssignmentWithError`, then a rebalance): every
    /// assignment is dropped and a rebalance starts, so no later SyncGroup is answered from an assignment
    /// the log does not have. Effects: those of the rebalance (none are records of a non-empty group).
    pub fn assignment_not_written(&mut self, now_ms: i64, group_id: &str) -> Vec<Effect> {
        self.run(now_ms, |groups, cx| {
            let Some(g) = groups.get_mut(group_id) else {
                return;
            };
            if !matches!(
                g.state,
                GroupState::Stable | GroupState::CompletingRebalance
            ) {
                return;
            }
            for m in g.members.values_mut() {
                m.assignment = Bytes::new();
            }
            if g.can_rebalance() {
                cx.prepare_rebalance(g);
            }
        })
        .effects
    }
}

/// The checks of a SyncGroup against its group, before the state decides.
fn sync_request_error(g: &ClassicGroup, req: &SyncGroupRequest) -> Option<ErrorCode> {
    if g.is(GroupState::Empty) {
        return Some(ErrorCode::UNKNOWN_MEMBER_ID);
    }
    if g.is(GroupState::Dead) {
        return Some(ErrorCode::COORDINATOR_NOT_AVAILABLE);
    }
    if let Err(code) = validate_member(g, &req.member_id, req.group_instance_id.as_deref()) {
        return Some(code);
    }
    if req.generation_id != g.generation_id {
        return Some(ErrorCode::ILLEGAL_GENERATION);
    }
    let inconsistent = |asked: &Option<String>, have: &Option<String>| matches!((asked, have), (Some(a), Some(h)) if a != h);
    if inconsistent(&req.protocol_type, &g.protocol_type)
        || inconsistent(&req.protocol_name, &g.protocol_name)
    {
        return Some(ErrorCode::INCONSISTENT_GROUP_PROTOCOL);
    }
    None
}

impl Ctx<'_> {
    /// A valid SyncGroup of a member of `g`, by the group's state.
    fn sync_member(&mut self, g: &mut ClassicGroup, request: RequestId, req: &SyncGroupRequest) {
        match g.state {
            GroupState::PreparingRebalance => {
                self.respond_sync(request, SyncResult::error(ErrorCode::REBALANCE_IN_PROGRESS))
            }
            GroupState::CompletingRebalance => {
                self.park_sync(g, &req.member_id, request);
                self.remove_pending_sync_member(g, &req.member_id);
                if g.is_leader(&req.member_id) {
                    self.set_and_propagate_assignment(g, &req.assignments);
                }
            }
            GroupState::Stable => {
                self.remove_pending_sync_member(g, &req.member_id);
                let assignment = g
                    .members
                    .get(&req.member_id)
                    .map(|m| m.assignment.clone())
                    .unwrap_or_default();
                let session = g
                    .members
                    .get(&req.member_id)
                    .map_or(0, |m| m.session_timeout_ms);
                self.reschedule_heartbeat(g, &req.member_id, session);
                let resp = SyncResult {
                    error_code: ErrorCode::NONE,
                    protocol_type: g.protocol_type.clone(),
                    protocol_name: g.protocol_name.clone(),
                    assignment,
                };
                self.respond_sync(request, resp);
            }
            GroupState::Empty | GroupState::Dead => {
                self.respond_sync(request, SyncResult::error(ErrorCode::UNKNOWN_MEMBER_ID))
            }
        }
    }

    /// The leader's assignment: stored on every member (empty for members it left out), persisted, and sent to
    /// every parked SyncGroup; the group becomes Stable.
    fn set_and_propagate_assignment(
        &mut self,
        g: &mut ClassicGroup,
        assignments: &[(String, Bytes)],
    ) {
        let mut assignment: BTreeMap<&str, &Bytes> = BTreeMap::new();
        for (id, bytes) in assignments {
            assignment.insert(id.as_str(), bytes);
        }
        for m in g.members.values_mut() {
            m.assignment = assignment
                .get(m.member_id.as_str())
                .map(|b| (*b).clone())
                .unwrap_or_default();
        }
        self.persist(group_metadata_record(g));
        self.propagate_assignment(g, ErrorCode::NONE);
        g.transition_to(GroupState::Stable, self.now);
        g.completed_rebalances += 1;
        *self.completed_rebalances += 1;
    }
}

impl Ctx<'_> {
    fn park_sync(&mut self, g: &mut ClassicGroup, member_id: &str, request: RequestId) {
        let Some(m) = g.members.get_mut(member_id) else {
            return;
        };
        if let Some(old) = m.awaiting_sync.replace(request) {
            if old != request {
                self.respond_sync(old, SyncResult::error(ErrorCode::REBALANCE_IN_PROGRESS));
            }
        }
    }
}
