//! JoinGroup: the first half of a classic-group rebalance (Kafka's `classicGroupJoin`): new, known, pending and
//! static members joining, KIP-394 member ids and KIP-345 static-member replacement.

use std::collections::BTreeMap;

use bytes::Bytes;
use types::ErrorCode;

use super::{group_metadata_record, too_long, validate_member, Ctx, GroupCoordinator};
use crate::api::{Effect, JoinGroupRequest, JoinMember, JoinResult, RequestId, SyncResult};
use crate::config::GroupConfig;
use crate::group::{ClassicGroup, GroupState, Member};

impl GroupCoordinator {
    /// JoinGroup (v0–v9). The response comes as an [`Effect::JoinResponse`] for `request`, either in the returned
    /// effects (errors, MEMBER_ID_REQUIRED, rejoin of a Stable follower, static member rejoin) or from a later
    /// call or [`GroupCoordinator::tick`] when the join phase completes.
    ///
    /// Errors: INVALID_GROUP_ID (empty group id), INVALID_REQUEST (strings too long to persist),
    /// INVALID_SESSION_TIMEOUT, UNKNOWN_MEMBER_ID (member id not known; group unknown and member id non-empty),
    /// MEMBER_ID_REQUIRED (v4+ dynamic member with empty id; `member_id` carries the id to rejoin with),
    /// INCONSISTENT_GROUP_PROTOCOL (other protocol type, or no protocol common to all members),
    /// FENCED_INSTANCE_ID, GROUP_MAX_SIZE_REACHED.
    pub fn join_group(
        &mut self,
        now_ms: i64,
        request: RequestId,
        req: JoinGroupRequest,
    ) -> Vec<Effect> {
        let mut fx = self.fire_due(now_ms);
        if self.share_groups.contains_key(&req.group_id) {
            // A share group (KIP-932) of this id: classic members cannot join it.
            let response =
                JoinResult::error(&req.member_id, ErrorCode::INCONSISTENT_GROUP_PROTOCOL);
            fx.push(Effect::JoinResponse { request, response });
            return fx;
        }
        if self.consumer_groups.contains_key(&req.group_id) {
            // A consumer group (KIP-848): the classic member joins it (online migration).
            self.classic_join_to_consumer_group(now_ms, request, &req, &mut fx);
            return fx;
        }
        let (groups, mut cx) = self.split(now_ms, &mut fx);
        cx.join_group(groups, request, req);
        fx
    }
}

/// The request-level checks of JoinGroup, before any group is looked at.
pub(super) fn join_request_error(
    config: &GroupConfig,
    req: &JoinGroupRequest,
) -> Option<ErrorCode> {
    if req.group_id.is_empty() || too_long(&req.group_id) {
        return Some(ErrorCode::INVALID_GROUP_ID);
    }
    let unstorable = too_long(&req.client_id)
        || too_long(&req.client_host)
        || too_long(&req.protocol_type)
        || req.group_instance_id.as_deref().is_some_and(too_long)
        || req.protocols.iter().any(|p| too_long(&p.name));
    if unstorable {
        return Some(ErrorCode::INVALID_REQUEST);
    }
    if req.session_timeout_ms < config.group_min_session_timeout_ms
        || req.session_timeout_ms > config.group_max_session_timeout_ms
    {
        return Some(ErrorCode::INVALID_SESSION_TIMEOUT);
    }
    None
}

/// `group.max.size` (Kafka's `acceptJoiningMember`): whether `member_id` may join `g` now.
fn accept_joining_member(g: &ClassicGroup, member_id: &str, max: usize) -> bool {
    match g.state {
        GroupState::Empty | GroupState::Dead => true,
        GroupState::PreparingRebalance => {
            g.members
                .get(member_id)
                .is_some_and(|m| m.awaiting_join.is_some())
                || g.num_awaiting_join() < max
        }
        GroupState::CompletingRebalance | GroupState::Stable => {
            g.members.contains_key(member_id) || g.members.len() < max
        }
    }
}

impl Ctx<'_> {
    /// [`GroupCoordinator::join_group`] after the due timers fired.
    fn join_group(
        &mut self,
        groups: &mut BTreeMap<String, ClassicGroup>,
        request: RequestId,
        mut req: JoinGroupRequest,
    ) {
        if let Some(code) = join_request_error(self.config, &req) {
            return self.respond_join(request, JoinResult::error(&req.member_id, code));
        }
        // JoinGroup v0 has no rebalance timeout: it equals the session timeout (pitfall 10).
        if req.api_version == 0 || req.rebalance_timeout_ms < 0 {
            req.rebalance_timeout_ms = req.session_timeout_ms;
        }
        let protocols: Vec<(String, Bytes)> = req
            .protocols
            .iter()
            .map(|p| (p.name.clone(), p.metadata.clone()))
            .collect();
        let is_unknown = req.member_id.is_empty();

        if !groups.contains_key(&req.group_id) {
            if !is_unknown {
                return self.respond_join(
                    request,
                    JoinResult::error(&req.member_id, ErrorCode::UNKNOWN_MEMBER_ID),
                );
            }
            let g = ClassicGroup::new(req.group_id.clone(), self.now);
            self.persist(group_metadata_record(&g));
            groups.insert(req.group_id.clone(), g);
        }
        let Some(g) = groups.get_mut(&req.group_id) else {
            return;
        };

        let max = usize::try_from(self.config.group_max_size.max(0)).unwrap_or(usize::MAX);
        if !accept_joining_member(g, &req.member_id, max) {
            if g.members.contains_key(&req.member_id) {
                self.remove_member_and_update(g, &req.member_id);
            } else {
                g.pending_join_members.remove(&req.member_id);
            }
            return self.respond_join(
                request,
                JoinResult::error("", ErrorCode::GROUP_MAX_SIZE_REACHED),
            );
        }
        if is_unknown {
            self.join_new_member(g, request, &req, protocols);
        } else {
            self.join_existing_member(g, request, &req, protocols);
        }
    }
}

fn generate_member_id(client_id: &str, group_instance_id: Option<&str>, id: uuid::Uuid) -> String {
    format!("{}-{}", group_instance_id.unwrap_or(client_id), id)
}

pub(super) fn current_members(g: &ClassicGroup) -> Vec<JoinMember> {
    let protocol = g.protocol_name.clone().unwrap_or_default();
    g.members
        .values()
        .map(|m| JoinMember {
            member_id: m.member_id.clone(),
            group_instance_id: m.group_instance_id.clone(),
            metadata: m.metadata(&protocol),
        })
        .collect()
}

/// A JoinGroup success response for `member_id` at the group's current generation.
pub(super) fn join_success(
    g: &ClassicGroup,
    member_id: &str,
    members: Vec<JoinMember>,
    leader: String,
    skip: bool,
) -> JoinResult {
    JoinResult {
        error_code: ErrorCode::NONE,
        generation_id: g.generation_id,
        protocol_type: g.protocol_type.clone(),
        protocol_name: g.protocol_name.clone(),
        leader,
        skip_assignment: skip,
        member_id: member_id.to_string(),
        members,
    }
}

impl Ctx<'_> {
    /// Parks `request` as the member's JoinGroup. A JoinGroup already parked for the member (a client retry) is
    /// answered REBALANCE_IN_PROGRESS so that no request stays unanswered (Kafka silently drops it).
    fn park_join(&mut self, g: &mut ClassicGroup, member_id: &str, request: RequestId) {
        let Some(m) = g.members.get_mut(member_id) else {
            return;
        };
        if let Some(old) = m.awaiting_join.replace(request) {
            if old != request {
                let id = m.member_id.clone();
                self.respond_join(
                    old,
                    JoinResult::error(&id, ErrorCode::REBALANCE_IN_PROGRESS),
                );
            }
        }
    }

    /// Kafka's `ClassicGroup.updateMember` with a new JoinGroup parked.
    fn update_member(
        &mut self,
        g: &mut ClassicGroup,
        member_id: &str,
        req: &JoinGroupRequest,
        protocols: Vec<(String, Bytes)>,
        request: RequestId,
    ) {
        if let Some(m) = g.members.get_mut(member_id) {
            m.protocols = protocols;
            m.rebalance_timeout_ms = req.rebalance_timeout_ms;
            m.session_timeout_ms = req.session_timeout_ms;
        }
        self.park_join(g, member_id, request);
    }

    fn join_new_member(
        &mut self,
        g: &mut ClassicGroup,
        rid: RequestId,
        req: &JoinGroupRequest,
        protocols: Vec<(String, Bytes)>,
    ) {
        if g.is(GroupState::Dead) {
            return self.respond_join(
                rid,
                JoinResult::error("", ErrorCode::COORDINATOR_NOT_AVAILABLE),
            );
        }
        if !g.supports_protocols(&req.protocol_type, &protocols) {
            return self.respond_join(
                rid,
                JoinResult::error("", ErrorCode::INCONSISTENT_GROUP_PROTOCOL),
            );
        }
        let new_id = generate_member_id(
            &req.client_id,
            req.group_instance_id.as_deref(),
            self.member_ids.next(),
        );
        if let Some(iid) = &req.group_instance_id {
            match g.static_member_id(iid).cloned() {
                Some(existing) => self.update_static_member_then_rebalance_or_complete_join(
                    g, rid, req, protocols, &existing, &new_id,
                ),
                None => {
                    self.add_member_then_rebalance_or_complete_join(g, rid, req, protocols, new_id)
                }
            }
        } else if req.api_version >= 4 {
            // KIP-394: hand out an id and wait (up to the session timeout) for the member to rejoin with it.
            g.pending_join_members.insert(new_id.clone());
            self.reschedule_heartbeat(g, &new_id, req.session_timeout_ms);
            self.respond_join(
                rid,
                JoinResult::error(&new_id, ErrorCode::MEMBER_ID_REQUIRED),
            );
        } else {
            self.add_member_then_rebalance_or_complete_join(g, rid, req, protocols, new_id);
        }
    }

    fn join_existing_member(
        &mut self,
        g: &mut ClassicGroup,
        rid: RequestId,
        req: &JoinGroupRequest,
        protocols: Vec<(String, Bytes)>,
    ) {
        let member_id = req.member_id.as_str();
        if g.is(GroupState::Dead) {
            return self.respond_join(
                rid,
                JoinResult::error(member_id, ErrorCode::COORDINATOR_NOT_AVAILABLE),
            );
        }
        if !g.supports_protocols(&req.protocol_type, &protocols) {
            return self.respond_join(
                rid,
                JoinResult::error(member_id, ErrorCode::INCONSISTENT_GROUP_PROTOCOL),
            );
        }
        if g.pending_join_members.contains(member_id) {
            if req.group_instance_id.is_some() {
                // Pending ids are only handed to dynamic members; Kafka treats this as an internal error.
                return self.respond_join(
                    rid,
                    JoinResult::error(member_id, ErrorCode::UNKNOWN_MEMBER_ID),
                );
            }
            return self.add_member_then_rebalance_or_complete_join(
                g,
                rid,
                req,
                protocols,
                member_id.to_string(),
            );
        }
        if let Err(code) = validate_member(g, member_id, req.group_instance_id.as_deref()) {
            return self.respond_join(rid, JoinResult::error(member_id, code));
        }
        let matches = g
            .members
            .get(member_id)
            .is_some_and(|m| m.matches(&protocols));
        match g.state {
            GroupState::PreparingRebalance => {
                self.update_member_then_rebalance_or_complete_join(g, rid, req, protocols)
            }
            GroupState::CompletingRebalance => {
                if matches {
                    // Same metadata (the member probably missed its JoinGroup response): resend it.
                    let members = if g.is_leader(member_id) {
                        current_members(g)
                    } else {
                        Vec::new()
                    };
                    let leader = g.leader_id.clone().unwrap_or_default();
                    let resp = join_success(g, member_id, members, leader, false);
                    self.respond_join(rid, resp);
                } else {
                    self.update_member_then_rebalance_or_complete_join(g, rid, req, protocols);
                }
            }
            GroupState::Stable => {
                if g.is_leader(member_id) || !matches {
                    // The leader rejoining forces a rebalance (e.g. topic metadata changed); so do new metadata.
                    self.update_member_then_rebalance_or_complete_join(g, rid, req, protocols);
                } else {
                    let leader = g.leader_id.clone().unwrap_or_default();
                    let resp = join_success(g, member_id, Vec::new(), leader, false);
                    self.respond_join(rid, resp);
                }
            }
            GroupState::Empty | GroupState::Dead => self.respond_join(
                rid,
                JoinResult::error(member_id, ErrorCode::UNKNOWN_MEMBER_ID),
            ),
        }
    }

    fn update_member_then_rebalance_or_complete_join(
        &mut self,
        g: &mut ClassicGroup,
        rid: RequestId,
        req: &JoinGroupRequest,
        protocols: Vec<(String, Bytes)>,
    ) {
        self.update_member(g, &req.member_id, req, protocols, rid);
        self.maybe_prepare_rebalance_or_complete_join(g);
    }

    fn add_member_then_rebalance_or_complete_join(
        &mut self,
        g: &mut ClassicGroup,
        rid: RequestId,
        req: &JoinGroupRequest,
        protocols: Vec<(String, Bytes)>,
        member_id: String,
    ) {
        let member = Member {
            member_id: member_id.clone(),
            group_instance_id: req.group_instance_id.clone(),
            client_id: req.client_id.clone(),
            client_host: req.client_host.clone(),
            rebalance_timeout_ms: req.rebalance_timeout_ms,
            session_timeout_ms: req.session_timeout_ms,
            protocol_type: req.protocol_type.clone(),
            protocols,
            assignment: Bytes::new(),
            awaiting_join: Some(rid),
            awaiting_sync: None,
            is_new: true,
        };
        if g.is(GroupState::PreparingRebalance) && g.previous_state == GroupState::Empty {
            g.new_member_added = true;
        }
        g.add(member);
        // A new member cannot heartbeat while its JoinGroup is parked: bound the wait instead.
        let timeout = self.config.new_member_join_timeout_ms;
        self.reschedule_heartbeat(g, &member_id, timeout);
        self.maybe_prepare_rebalance_or_complete_join(g);
    }

    /// KIP-345: a known `group.instance.id` joins with an unknown member id. The new id replaces the old one
    /// (whose parked requests get FENCED_INSTANCE_ID). In Stable, when the selected protocol would not change, the
    /// member gets the current generation and its old assignment without a rebalance.
    fn update_static_member_then_rebalance_or_complete_join(
        &mut self,
        g: &mut ClassicGroup,
        rid: RequestId,
        req: &JoinGroupRequest,
        protocols: Vec<(String, Bytes)>,
        old_id: &str,
        new_id: &str,
    ) {
        let Some(iid) = req.group_instance_id.clone() else {
            return;
        };
        let current_leader = g.leader_id.clone().unwrap_or_default();
        let Some(old) = g.replace_static_member(&iid, old_id, new_id) else {
            return self.respond_join(rid, JoinResult::error("", ErrorCode::UNKNOWN_MEMBER_ID));
        };
        if let Some(r) = old.awaiting_join {
            self.respond_join(r, JoinResult::error(old_id, ErrorCode::FENCED_INSTANCE_ID));
        }
        if let Some(r) = old.awaiting_sync {
            self.respond_sync(r, SyncResult::error(ErrorCode::FENCED_INSTANCE_ID));
        }
        self.cancel_heartbeat(g, old_id);
        self.reschedule_heartbeat(g, new_id, req.session_timeout_ms);
        let mut req_new = req.clone();
        req_new.member_id = new_id.to_string();
        self.update_member(g, new_id, &req_new, protocols, rid);

        match g.state {
            GroupState::Stable => {
                if g.protocol_name == g.select_protocol() {
                    self.persist(group_metadata_record(g));
                    let resp = if req.api_version >= 9 {
                        // KIP-814: the (new) leader gets the members but must not reassign.
                        let is_leader = g.is_leader(new_id);
                        let members = if is_leader {
                            current_members(g)
                        } else {
                            Vec::new()
                        };
                        let leader = g.leader_id.clone().unwrap_or_default();
                        join_success(g, new_id, members, leader, is_leader)
                    } else {
                        // Report the old leader id so that a replaced leader does not think it leads and reassign.
                        join_success(g, new_id, Vec::new(), current_leader, false)
                    };
                    self.complete_join_future(g, new_id, resp);
                } else {
                    self.maybe_prepare_rebalance_or_complete_join(g);
                }
            }
            // The leader may already be assigning with the old member id: start over.
            GroupState::CompletingRebalance => self.prepare_rebalance(g),
            GroupState::PreparingRebalance => self.maybe_complete_join_phase(g),
            GroupState::Empty | GroupState::Dead => {
                self.complete_join_future(
                    g,
                    new_id,
                    JoinResult::error(new_id, ErrorCode::UNKNOWN_MEMBER_ID),
                );
            }
        }
    }
}
