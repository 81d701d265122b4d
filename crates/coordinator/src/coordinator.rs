//! [`GroupCoordinator`]: classic group membership (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) and committed
//! offsets, as a state machine driven by calls that carry the current time.
//!
//! Behaviour follows Kafka's group coordinator for classic groups (`GroupMetadataManager`, `ClassicGroup`,
//! `OffsetMetadataManager` in Kafka's `group-coordinator` module); deviations are noted where they occur.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use types::ErrorCode;

use crate::api::*;
use crate::config::GroupConfig;
use crate::group::{ClassicGroup, GroupState, Member, CONSUMER_PROTOCOL_TYPE};
use crate::records::{
    GroupMetadataValue, GroupRecord, MemberMetadataValue, OffsetCommitValue,
    MAX_RECORD_STRING_BYTES,
};
use crate::timers::{TimerAction, TimerKey, Timers};

/// Committed offsets: group → topic → partition → value.
type OffsetStore = BTreeMap<String, BTreeMap<String, BTreeMap<i32, OffsetCommitValue>>>;

/// Upper bound on timers fired by one call (guards against zero-length periodic timers).
const MAX_TIMERS_PER_CALL: usize = 1_000_000;

/// The group coordinator of one broker: every classic group and every committed offset it owns.
///
/// Time is injected: every mutating call takes `now_ms` (ms since the epoch, monotone non-decreasing across
/// calls) and first fires the timers due at `now_ms` (session expiry, rebalance/initial-delay/sync timeouts,
/// offsets retention); their effects come first in the returned effects. The glue must also call
/// [`GroupCoordinator::tick`] at [`GroupCoordinator::next_deadline`] so that JoinGroup/SyncGroup requests parked
/// here are answered on time.
///
/// Startup: create, [`GroupCoordinator::replay`] every record of the owned `__consumer_offsets` partitions in
/// log order, then call [`GroupCoordinator::loaded`].
#[derive(Debug)]
pub struct GroupCoordinator {
    config: GroupConfig,
    groups: BTreeMap<String, ClassicGroup>,
    offsets: OffsetStore,
    timers: Timers,
}

fn too_long(s: &str) -> bool {
    s.len() > MAX_RECORD_STRING_BYTES
}

fn generate_member_id(client_id: &str, group_instance_id: Option<&str>) -> String {
    format!(
        "{}-{}",
        group_instance_id.unwrap_or(client_id),
        uuid::Uuid::new_v4()
    )
}

/// Kafka's `ClassicGroup.validateMember`: the instance id (if any) must map to `member_id`, and the member must
/// exist.
fn validate_member(
    g: &ClassicGroup,
    member_id: &str,
    group_instance_id: Option<&str>,
) -> Result<(), ErrorCode> {
    if let Some(iid) = group_instance_id {
        match g.static_member_id(iid) {
            None => return Err(ErrorCode::UNKNOWN_MEMBER_ID),
            Some(existing) if existing != member_id => return Err(ErrorCode::FENCED_INSTANCE_ID),
            Some(_) => {}
        }
    }
    if !g.members.contains_key(member_id) {
        return Err(ErrorCode::UNKNOWN_MEMBER_ID);
    }
    Ok(())
}

fn group_metadata_record(g: &ClassicGroup) -> GroupRecord {
    let protocol = g.protocol_name.clone().unwrap_or_default();
    GroupRecord::GroupMetadata {
        group: g.group_id.clone(),
        value: Some(GroupMetadataValue {
            protocol_type: g.protocol_type.clone().unwrap_or_default(),
            generation: g.generation_id,
            protocol: g.protocol_name.clone(),
            leader: g.leader_id.clone(),
            current_state_timestamp: g.state_timestamp.unwrap_or(-1),
            members: g
                .members
                .values()
                .map(|m| MemberMetadataValue {
                    member_id: m.member_id.clone(),
                    group_instance_id: m.group_instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    rebalance_timeout: m.rebalance_timeout_ms,
                    session_timeout: m.session_timeout_ms,
                    subscription: m.metadata(&protocol),
                    assignment: m.assignment.clone(),
                })
                .collect(),
        }),
    }
}

fn current_members(g: &ClassicGroup) -> Vec<JoinMember> {
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
fn join_success(
    g: &ClassicGroup,
    member_id: &str,
    members: Vec<JoinMember>,
    leader: String,
    skip: bool,
) -> JoinResult {
    JoinResult {
        error_code: ErrorCode::NONE.0,
        generation_id: g.generation_id,
        protocol_type: g.protocol_type.clone(),
        protocol_name: g.protocol_name.clone(),
        leader,
        skip_assignment: skip,
        member_id: member_id.to_string(),
        members,
    }
}

/// Borrowed context of one call: configuration, timers, output effects and the current time.
struct Ctx<'a> {
    config: &'a GroupConfig,
    timers: &'a mut Timers,
    fx: &'a mut Vec<Effect>,
    now: i64,
}

impl Ctx<'_> {
    fn respond_join(&mut self, request: RequestId, response: JoinResult) {
        self.fx.push(Effect::JoinResponse { request, response });
    }

    fn respond_sync(&mut self, request: RequestId, response: SyncResult) {
        self.fx.push(Effect::SyncResponse { request, response });
    }

    fn persist(&mut self, record: GroupRecord) {
        self.fx.push(Effect::Persist(record));
    }

    fn reschedule_heartbeat(&mut self, g: &ClassicGroup, member_id: &str, timeout_ms: i32) {
        self.timers.schedule(
            TimerKey::Heartbeat {
                group: g.group_id.clone(),
                member: member_id.to_string(),
            },
            self.now.saturating_add(i64::from(timeout_ms.max(0))),
            TimerAction::ExpireHeartbeat,
        );
    }

    fn cancel_heartbeat(&mut self, g: &ClassicGroup, member_id: &str) {
        self.timers.cancel(&TimerKey::Heartbeat {
            group: g.group_id.clone(),
            member: member_id.to_string(),
        });
    }

    /// Completes the member's parked JoinGroup, if any.
    fn complete_join_future(
        &mut self,
        g: &mut ClassicGroup,
        member_id: &str,
        response: JoinResult,
    ) -> bool {
        let Some(rid) = g
            .members
            .get_mut(member_id)
            .and_then(|m| m.awaiting_join.take())
        else {
            return false;
        };
        self.respond_join(rid, response);
        true
    }

    /// Completes the member's parked SyncGroup, if any.
    fn complete_sync_future(
        &mut self,
        g: &mut ClassicGroup,
        member_id: &str,
        response: SyncResult,
    ) -> bool {
        let Some(rid) = g
            .members
            .get_mut(member_id)
            .and_then(|m| m.awaiting_sync.take())
        else {
            return false;
        };
        self.respond_sync(rid, response);
        true
    }

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

    // ---- JoinGroup -------------------------------------------------------------------------------------------

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
        let new_id = generate_member_id(&req.client_id, req.group_instance_id.as_deref());
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

    // ---- Rebalance machinery ---------------------------------------------------------------------------------

    fn maybe_prepare_rebalance_or_complete_join(&mut self, g: &mut ClassicGroup) {
        if g.can_rebalance() {
            self.prepare_rebalance(g);
        } else {
            self.maybe_complete_join_phase(g);
        }
    }

    fn prepare_rebalance(&mut self, g: &mut ClassicGroup) {
        if g.is(GroupState::CompletingRebalance) {
            self.reset_and_propagate_assignment_with_error(g, ErrorCode::REBALANCE_IN_PROGRESS);
        }
        self.remove_sync_expiration(g);
        let initial = g.is(GroupState::Empty);
        if initial {
            // group.initial.rebalance.delay.ms: only for the first rebalance of an Empty group.
            let delay = self.config.group_initial_rebalance_delay_ms.max(0);
            let remaining = (g.rebalance_timeout_ms() - delay).max(0);
            g.new_member_added = false;
            self.timers.schedule(
                TimerKey::Join {
                    group: g.group_id.clone(),
                },
                self.now.saturating_add(i64::from(delay)),
                TimerAction::InitialRebalance { delay, remaining },
            );
        }
        g.transition_to(GroupState::PreparingRebalance, self.now);
        if !initial {
            self.maybe_complete_join_else_schedule(g);
        }
    }

    fn maybe_complete_join_else_schedule(&mut self, g: &mut ClassicGroup) {
        if g.has_all_members_joined() {
            self.complete_join(g);
        } else {
            self.schedule_join_timeout(g);
        }
    }

    fn schedule_join_timeout(&mut self, g: &ClassicGroup) {
        self.timers.schedule(
            TimerKey::Join {
                group: g.group_id.clone(),
            },
            // At least 1 ms so that a zero rebalance timeout cannot re-fire within the same call.
            self.now
                .saturating_add(i64::from(g.rebalance_timeout_ms().max(1))),
            TimerAction::CompleteJoin,
        );
    }

    /// Completes the join phase early when every member has rejoined (never during the initial delay).
    fn maybe_complete_join_phase(&mut self, g: &mut ClassicGroup) {
        if !g.is(GroupState::PreparingRebalance)
            || g.previous_state == GroupState::Empty
            || !g.has_all_members_joined()
        {
            return;
        }
        self.complete_join(g);
    }

    fn initial_rebalance_timer(&mut self, g: &mut ClassicGroup, delay: i32, remaining: i32) {
        if g.new_member_added && remaining != 0 {
            g.new_member_added = false;
            let new_delay = self
                .config
                .group_initial_rebalance_delay_ms
                .max(0)
                .min(remaining);
            let new_remaining = (remaining - delay).max(0);
            self.timers.schedule(
                TimerKey::Join {
                    group: g.group_id.clone(),
                },
                self.now.saturating_add(i64::from(new_delay)),
                TimerAction::InitialRebalance {
                    delay: new_delay,
                    remaining: new_remaining,
                },
            );
        } else {
            self.complete_join(g);
        }
    }

    /// Ends the join phase: drops dynamic members that did not rejoin, bumps the generation, answers every
    /// parked JoinGroup (the leader gets all members' metadata) and starts waiting for SyncGroups.
    fn complete_join(&mut self, g: &mut ClassicGroup) {
        self.timers.cancel(&TimerKey::Join {
            group: g.group_id.clone(),
        });
        let laggards: Vec<String> = g
            .members
            .values()
            .filter(|m| m.awaiting_join.is_none() && m.group_instance_id.is_none())
            .map(|m| m.member_id.clone())
            .collect();
        for id in laggards {
            self.complete_sync_future(g, &id, SyncResult::error(ErrorCode::UNKNOWN_MEMBER_ID));
            g.remove(&id);
            self.cancel_heartbeat(g, &id);
        }
        if g.is(GroupState::Dead) {
            return;
        }
        if !g.maybe_elect_new_joined_leader() && !g.members.is_empty() {
            // Only static members that have not rejoined are left: wait another rebalance timeout.
            self.schedule_join_timeout(g);
            return;
        }
        g.init_next_generation(self.now);
        if g.is(GroupState::Empty) {
            self.persist(group_metadata_record(g));
            return;
        }
        let ids: Vec<String> = g.members.keys().cloned().collect();
        let leader = g.leader_id.clone().unwrap_or_default();
        for id in ids {
            let members = if g.is_leader(&id) {
                current_members(g)
            } else {
                Vec::new()
            };
            let resp = join_success(g, &id, members, leader.clone(), false);
            self.complete_join_future(g, &id, resp);
            let session = g.members.get(&id).map_or(0, |m| m.session_timeout_ms);
            self.reschedule_heartbeat(g, &id, session);
            if let Some(m) = g.members.get_mut(&id) {
                m.is_new = false;
            }
            g.pending_sync_members.insert(id);
        }
        self.timers.schedule(
            TimerKey::Sync {
                group: g.group_id.clone(),
            },
            self.now
                .saturating_add(i64::from(g.rebalance_timeout_ms().max(0))),
            TimerAction::ExpirePendingSync {
                generation: g.generation_id,
            },
        );
    }

    fn remove_sync_expiration(&mut self, g: &mut ClassicGroup) {
        g.pending_sync_members.clear();
        self.timers.cancel(&TimerKey::Sync {
            group: g.group_id.clone(),
        });
    }

    fn remove_pending_sync_member(&mut self, g: &mut ClassicGroup, member_id: &str) {
        g.pending_sync_members.remove(member_id);
        if g.pending_sync_members.is_empty()
            || !matches!(
                g.state,
                GroupState::CompletingRebalance | GroupState::Stable
            )
        {
            self.timers.cancel(&TimerKey::Sync {
                group: g.group_id.clone(),
            });
        }
    }

    /// Members that got their JoinGroup response but never sent SyncGroup within the rebalance timeout are
    /// removed and a new rebalance starts.
    fn expire_pending_sync(&mut self, g: &mut ClassicGroup, generation: i32) {
        if generation != g.generation_id
            || !matches!(
                g.state,
                GroupState::CompletingRebalance | GroupState::Stable
            )
        {
            return;
        }
        if g.pending_sync_members.is_empty() {
            return;
        }
        let pending: Vec<String> = g.pending_sync_members.iter().cloned().collect();
        for id in pending {
            self.complete_join_future(g, &id, JoinResult::error("", ErrorCode::UNKNOWN_MEMBER_ID));
            g.remove(&id);
            self.cancel_heartbeat(g, &id);
        }
        self.prepare_rebalance(g);
    }

    fn reset_and_propagate_assignment_with_error(
        &mut self,
        g: &mut ClassicGroup,
        error: ErrorCode,
    ) {
        for m in g.members.values_mut() {
            m.assignment = Bytes::new();
        }
        self.propagate_assignment(g, error);
    }

    fn propagate_assignment(&mut self, g: &mut ClassicGroup, error: ErrorCode) {
        let (ptype, pname) = if error == ErrorCode::NONE {
            (g.protocol_type.clone(), g.protocol_name.clone())
        } else {
            (None, None)
        };
        let ids: Vec<String> = g.members.keys().cloned().collect();
        for id in ids {
            let assignment = g
                .members
                .get(&id)
                .map(|m| m.assignment.clone())
                .unwrap_or_default();
            let resp = SyncResult {
                error_code: error.0,
                protocol_type: ptype.clone(),
                protocol_name: pname.clone(),
                assignment,
            };
            if self.complete_sync_future(g, &id, resp) {
                let session = g.members.get(&id).map_or(0, |m| m.session_timeout_ms);
                self.reschedule_heartbeat(g, &id, session);
            }
        }
    }

    // ---- Member removal --------------------------------------------------------------------------------------

    fn expire_heartbeat(&mut self, g: &mut ClassicGroup, member_id: &str) {
        if g.is(GroupState::Dead) {
            return;
        }
        if g.pending_join_members.contains(member_id) {
            g.remove(member_id);
            if g.is(GroupState::PreparingRebalance) && g.has_all_members_joined() {
                self.complete_join(g);
            }
        } else if let Some(m) = g.members.get(member_id) {
            if !m.has_satisfied_heartbeat() {
                self.remove_member_and_update(g, member_id);
            }
        }
    }

    /// Removes a member after session expiry (Kafka's `removeMemberAndUpdateClassicGroup`).
    fn remove_member_and_update(&mut self, g: &mut ClassicGroup, member_id: &str) {
        self.remove_member(g, member_id);
        match g.state {
            GroupState::Stable | GroupState::CompletingRebalance => {
                self.maybe_prepare_rebalance_or_complete_join(g)
            }
            GroupState::PreparingRebalance if g.has_all_members_joined() => self.complete_join(g),
            _ => {}
        }
    }

    /// Drops a member, answering its parked JoinGroup (and SyncGroup, which Kafka would leave hanging) with
    /// UNKNOWN_MEMBER_ID.
    fn remove_member(&mut self, g: &mut ClassicGroup, member_id: &str) {
        self.complete_join_future(
            g,
            member_id,
            JoinResult::error("", ErrorCode::UNKNOWN_MEMBER_ID),
        );
        self.complete_sync_future(
            g,
            member_id,
            SyncResult::error(ErrorCode::UNKNOWN_MEMBER_ID),
        );
        g.remove(member_id);
        self.cancel_heartbeat(g, member_id);
    }
}

impl GroupCoordinator {
    /// A coordinator with no groups and no offsets.
    pub fn new(config: GroupConfig) -> Self {
        GroupCoordinator {
            config,
            groups: BTreeMap::new(),
            offsets: BTreeMap::new(),
            timers: Timers::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &GroupConfig {
        &self.config
    }

    /// Earliest time (ms) at which [`GroupCoordinator::tick`] has work to do; `None` when no timer is pending.
    pub fn next_deadline(&self) -> Option<i64> {
        self.timers.next_deadline()
    }

    /// Fires every timer due at `now_ms`: session expiries (member removed, rebalance started), rebalance
    /// timeouts (join phase completed, laggards removed), the initial rebalance delay, sync timeouts and the
    /// periodic offsets retention check. Returns the responses to parked requests and records to persist.
    pub fn tick(&mut self, now_ms: i64) -> Vec<Effect> {
        let mut fx = Vec::new();
        self.fire_due(now_ms, &mut fx);
        fx
    }

    fn fire_due(&mut self, now: i64, fx: &mut Vec<Effect>) {
        if !self.timers.contains(&TimerKey::OffsetsRetention) {
            self.schedule_retention(now);
        }
        for _ in 0..MAX_TIMERS_PER_CALL {
            let Some((key, action)) = self.timers.pop_due(now) else {
                break;
            };
            match key {
                TimerKey::OffsetsRetention => {
                    self.cleanup_expired_offsets(now, fx);
                    self.schedule_retention(now);
                }
                TimerKey::Heartbeat { group, member } => {
                    let Self {
                        groups,
                        timers,
                        config,
                        ..
                    } = self;
                    if let Some(g) = groups.get_mut(&group) {
                        Ctx {
                            config,
                            timers,
                            fx,
                            now,
                        }
                        .expire_heartbeat(g, &member);
                    }
                }
                TimerKey::Join { group } | TimerKey::Sync { group } => {
                    let Self {
                        groups,
                        timers,
                        config,
                        ..
                    } = self;
                    let Some(g) = groups.get_mut(&group) else {
                        continue;
                    };
                    let mut cx = Ctx {
                        config,
                        timers,
                        fx,
                        now,
                    };
                    match action {
                        TimerAction::CompleteJoin if g.is(GroupState::PreparingRebalance) => {
                            cx.complete_join(g)
                        }
                        TimerAction::InitialRebalance { delay, remaining }
                            if g.is(GroupState::PreparingRebalance) =>
                        {
                            cx.initial_rebalance_timer(g, delay, remaining)
                        }
                        TimerAction::ExpirePendingSync { generation } => {
                            cx.expire_pending_sync(g, generation)
                        }
                        _ => {}
                    }
                }
            }
        }
    }

    fn schedule_retention(&mut self, now: i64) {
        let interval = self.config.offsets_retention_check_interval_ms.max(1);
        self.timers.schedule(
            TimerKey::OffsetsRetention,
            now.saturating_add(interval),
            TimerAction::OffsetsRetention,
        );
    }

    // ---- JoinGroup -------------------------------------------------------------------------------------------

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
        mut req: JoinGroupRequest,
    ) -> Vec<Effect> {
        let mut fx = Vec::new();
        self.fire_due(now_ms, &mut fx);
        let Self {
            groups,
            timers,
            config,
            ..
        } = self;
        let mut cx = Ctx {
            config,
            timers,
            fx: &mut fx,
            now: now_ms,
        };

        if req.group_id.is_empty() || too_long(&req.group_id) {
            cx.respond_join(
                request,
                JoinResult::error(&req.member_id, ErrorCode::INVALID_GROUP_ID),
            );
            return fx;
        }
        let unstorable = too_long(&req.client_id)
            || too_long(&req.client_host)
            || too_long(&req.protocol_type)
            || req.group_instance_id.as_deref().is_some_and(too_long)
            || req.protocols.iter().any(|p| too_long(&p.name));
        if unstorable {
            cx.respond_join(
                request,
                JoinResult::error(&req.member_id, ErrorCode::INVALID_REQUEST),
            );
            return fx;
        }
        if req.session_timeout_ms < config.group_min_session_timeout_ms
            || req.session_timeout_ms > config.group_max_session_timeout_ms
        {
            cx.respond_join(
                request,
                JoinResult::error(&req.member_id, ErrorCode::INVALID_SESSION_TIMEOUT),
            );
            return fx;
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
                cx.respond_join(
                    request,
                    JoinResult::error(&req.member_id, ErrorCode::UNKNOWN_MEMBER_ID),
                );
                return fx;
            }
            let g = ClassicGroup::new(req.group_id.clone(), now_ms);
            cx.persist(group_metadata_record(&g));
            groups.insert(req.group_id.clone(), g);
        }
        let Some(g) = groups.get_mut(&req.group_id) else {
            return fx;
        };

        // group.max.size (Kafka's acceptJoiningMember).
        let max = usize::try_from(cx.config.group_max_size.max(0)).unwrap_or(usize::MAX);
        let accept = match g.state {
            GroupState::Empty | GroupState::Dead => true,
            GroupState::PreparingRebalance => {
                g.members
                    .get(&req.member_id)
                    .is_some_and(|m| m.awaiting_join.is_some())
                    || g.num_awaiting_join() < max
            }
            GroupState::CompletingRebalance | GroupState::Stable => {
                g.members.contains_key(&req.member_id) || g.members.len() < max
            }
        };
        if !accept {
            if g.members.contains_key(&req.member_id) {
                cx.remove_member_and_update(g, &req.member_id);
            } else {
                g.pending_join_members.remove(&req.member_id);
            }
            cx.respond_join(
                request,
                JoinResult::error("", ErrorCode::GROUP_MAX_SIZE_REACHED),
            );
            return fx;
        }
        if is_unknown {
            cx.join_new_member(g, request, &req, protocols);
        } else {
            cx.join_existing_member(g, request, &req, protocols);
        }
        fx
    }

    // ---- SyncGroup -------------------------------------------------------------------------------------------

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
        let mut fx = Vec::new();
        self.fire_due(now_ms, &mut fx);
        let Self {
            groups,
            timers,
            config,
            ..
        } = self;
        let mut cx = Ctx {
            config,
            timers,
            fx: &mut fx,
            now: now_ms,
        };
        let Some(g) = groups.get_mut(&req.group_id) else {
            cx.respond_sync(request, SyncResult::error(ErrorCode::UNKNOWN_MEMBER_ID));
            return fx;
        };
        if g.is(GroupState::Empty) {
            cx.respond_sync(request, SyncResult::error(ErrorCode::UNKNOWN_MEMBER_ID));
            return fx;
        }
        if g.is(GroupState::Dead) {
            cx.respond_sync(
                request,
                SyncResult::error(ErrorCode::COORDINATOR_NOT_AVAILABLE),
            );
            return fx;
        }
        if let Err(code) = validate_member(g, &req.member_id, req.group_instance_id.as_deref()) {
            cx.respond_sync(request, SyncResult::error(code));
            return fx;
        }
        if req.generation_id != g.generation_id {
            cx.respond_sync(request, SyncResult::error(ErrorCode::ILLEGAL_GENERATION));
            return fx;
        }
        let inconsistent = |asked: &Option<String>, have: &Option<String>| matches!((asked, have), (Some(a), Some(h)) if a != h);
        if inconsistent(&req.protocol_type, &g.protocol_type)
            || inconsistent(&req.protocol_name, &g.protocol_name)
        {
            cx.respond_sync(
                request,
                SyncResult::error(ErrorCode::INCONSISTENT_GROUP_PROTOCOL),
            );
            return fx;
        }
        match g.state {
            GroupState::PreparingRebalance => {
                cx.respond_sync(request, SyncResult::error(ErrorCode::REBALANCE_IN_PROGRESS))
            }
            GroupState::CompletingRebalance => {
                cx.park_sync(g, &req.member_id, request);
                cx.remove_pending_sync_member(g, &req.member_id);
                if g.is_leader(&req.member_id) {
                    let mut assignment: BTreeMap<&str, &Bytes> = BTreeMap::new();
                    for (id, bytes) in &req.assignments {
                        assignment.insert(id.as_str(), bytes);
                    }
                    for m in g.members.values_mut() {
                        m.assignment = assignment
                            .get(m.member_id.as_str())
                            .map(|b| (*b).clone())
                            .unwrap_or_default();
                    }
                    cx.persist(group_metadata_record(g));
                    cx.propagate_assignment(g, ErrorCode::NONE);
                    g.transition_to(GroupState::Stable, now_ms);
                }
            }
            GroupState::Stable => {
                cx.remove_pending_sync_member(g, &req.member_id);
                let assignment = g
                    .members
                    .get(&req.member_id)
                    .map(|m| m.assignment.clone())
                    .unwrap_or_default();
                let session = g
                    .members
                    .get(&req.member_id)
                    .map_or(0, |m| m.session_timeout_ms);
                cx.reschedule_heartbeat(g, &req.member_id, session);
                let resp = SyncResult {
                    error_code: ErrorCode::NONE.0,
                    protocol_type: g.protocol_type.clone(),
                    protocol_name: g.protocol_name.clone(),
                    assignment,
                };
                cx.respond_sync(request, resp);
            }
            GroupState::Empty | GroupState::Dead => {
                cx.respond_sync(request, SyncResult::error(ErrorCode::UNKNOWN_MEMBER_ID))
            }
        }
        fx
    }

    // ---- Heartbeat -------------------------------------------------------------------------------------------

    /// Heartbeat (v0–v4): keeps the member's session alive.
    ///
    /// Returns 0, REBALANCE_IN_PROGRESS (PreparingRebalance: rejoin), UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID,
    /// ILLEGAL_GENERATION or COORDINATOR_NOT_AVAILABLE. As in current Kafka, a member heartbeating in
    /// CompletingRebalance (after its JoinGroup response, before SyncGroup) gets 0.
    pub fn heartbeat(
        &mut self,
        now_ms: i64,
        group_id: &str,
        member_id: &str,
        group_instance_id: Option<&str>,
        generation_id: i32,
    ) -> Outcome<i16> {
        let mut fx = Vec::new();
        self.fire_due(now_ms, &mut fx);
        let Self {
            groups,
            timers,
            config,
            ..
        } = self;
        let mut cx = Ctx {
            config,
            timers,
            fx: &mut fx,
            now: now_ms,
        };
        let code = match groups.get_mut(group_id) {
            None => ErrorCode::UNKNOWN_MEMBER_ID,
            Some(g) if g.is(GroupState::Dead) => ErrorCode::COORDINATOR_NOT_AVAILABLE,
            Some(g) => match validate_member(g, member_id, group_instance_id) {
                Err(code) => code,
                Ok(()) if generation_id != g.generation_id => ErrorCode::ILLEGAL_GENERATION,
                Ok(()) => {
                    let session = g.members.get(member_id).map_or(0, |m| m.session_timeout_ms);
                    match g.state {
                        GroupState::Empty | GroupState::Dead => ErrorCode::UNKNOWN_MEMBER_ID,
                        GroupState::PreparingRebalance => {
                            cx.reschedule_heartbeat(g, member_id, session);
                            ErrorCode::REBALANCE_IN_PROGRESS
                        }
                        GroupState::CompletingRebalance | GroupState::Stable => {
                            cx.reschedule_heartbeat(g, member_id, session);
                            ErrorCode::NONE
                        }
                    }
                }
            },
        };
        Outcome {
            response: code.0,
            effects: fx,
        }
    }

    // ---- LeaveGroup ------------------------------------------------------------------------------------------

    /// LeaveGroup (v0–v5): removes members by member id, or static members by `group.instance.id` alone (member
    /// id ""), then rebalances (or completes a running join phase).
    pub fn leave_group(
        &mut self,
        now_ms: i64,
        group_id: &str,
        members: &[LeaveMember],
    ) -> Outcome<LeaveResult> {
        let mut fx = Vec::new();
        self.fire_due(now_ms, &mut fx);
        let Self {
            groups,
            timers,
            config,
            ..
        } = self;
        let mut cx = Ctx {
            config,
            timers,
            fx: &mut fx,
            now: now_ms,
        };
        let Some(g) = groups.get_mut(group_id) else {
            return Outcome {
                response: LeaveResult {
                    error_code: ErrorCode::UNKNOWN_MEMBER_ID.0,
                    members: Vec::new(),
                },
                effects: fx,
            };
        };
        if g.is(GroupState::Dead) {
            return Outcome {
                response: LeaveResult {
                    error_code: ErrorCode::COORDINATOR_NOT_AVAILABLE.0,
                    members: Vec::new(),
                },
                effects: fx,
            };
        }
        let mut results = Vec::with_capacity(members.len());
        let mut any_left = false;
        for lm in members {
            let code = if lm.member_id.is_empty() {
                match lm
                    .group_instance_id
                    .as_deref()
                    .and_then(|iid| g.static_member_id(iid).cloned())
                {
                    Some(id) => {
                        cx.remove_member(g, &id);
                        ErrorCode::NONE
                    }
                    None => ErrorCode::UNKNOWN_MEMBER_ID,
                }
            } else if g.pending_join_members.contains(&lm.member_id) {
                g.remove(&lm.member_id);
                cx.cancel_heartbeat(g, &lm.member_id);
                ErrorCode::NONE
            } else {
                match validate_member(g, &lm.member_id, lm.group_instance_id.as_deref()) {
                    Ok(()) => {
                        cx.remove_member(g, &lm.member_id);
                        ErrorCode::NONE
                    }
                    Err(code) => code,
                }
            };
            any_left |= code == ErrorCode::NONE;
            results.push(LeaveMemberResult {
                member_id: lm.member_id.clone(),
                group_instance_id: lm.group_instance_id.clone(),
                error_code: code.0,
            });
        }
        if any_left {
            match g.state {
                GroupState::Stable | GroupState::CompletingRebalance => {
                    cx.maybe_prepare_rebalance_or_complete_join(g)
                }
                GroupState::PreparingRebalance => cx.maybe_complete_join_phase(g),
                _ => {}
            }
        }
        Outcome {
            response: LeaveResult {
                error_code: ErrorCode::NONE.0,
                members: results,
            },
            effects: fx,
        }
    }

    // ---- Offsets ---------------------------------------------------------------------------------------------

    /// OffsetCommit (v2–v9). Members commit with their generation and member id; commits with generation -1 and
    /// an empty member id (simple consumers, admin tools) are accepted only while the group has no members
    /// (unknown group → created as an offsets-only group). Each stored partition yields an
    /// [`Effect::Persist`] record.
    ///
    /// Errors (for every partition): ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID,
    /// REBALANCE_IN_PROGRESS (CompletingRebalance), GROUP_ID_NOT_FOUND (v9+, unknown group, generation >= 0),
    /// INVALID_GROUP_ID (unstorable id); per partition: OFFSET_METADATA_TOO_LARGE,
    /// UNKNOWN_TOPIC_OR_PARTITION (unstorable topic name).
    pub fn commit_offsets(
        &mut self,
        now_ms: i64,
        req: &OffsetCommitRequest,
    ) -> Outcome<OffsetCommitResult> {
        let mut fx = Vec::new();
        self.fire_due(now_ms, &mut fx);
        let group_error = self.validate_offset_commit(now_ms, req, &mut fx);
        let mut result = Vec::with_capacity(req.topics.len());
        for (topic, partitions) in &req.topics {
            let mut presp = Vec::with_capacity(partitions.len());
            for p in partitions {
                let metadata = p.committed_metadata.clone().unwrap_or_default();
                let code = if group_error != ErrorCode::NONE {
                    group_error
                } else if metadata.len() > self.config.offset_metadata_max_bytes
                    || too_long(&metadata)
                {
                    ErrorCode::OFFSET_METADATA_TOO_LARGE
                } else if too_long(topic) {
                    ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
                } else {
                    let value = OffsetCommitValue {
                        offset: p.committed_offset,
                        leader_epoch: p.committed_leader_epoch,
                        metadata,
                        commit_timestamp: now_ms,
                        expire_timestamp: if req.retention_time_ms == -1 {
                            -1
                        } else {
                            now_ms.saturating_add(req.retention_time_ms)
                        },
                    };
                    fx.push(Effect::Persist(GroupRecord::OffsetCommit {
                        group: req.group_id.clone(),
                        topic: topic.clone(),
                        partition: p.partition_index,
                        value: Some(value.clone()),
                    }));
                    self.offsets
                        .entry(req.group_id.clone())
                        .or_default()
                        .entry(topic.clone())
                        .or_default()
                        .insert(p.partition_index, value);
                    ErrorCode::NONE
                };
                presp.push((p.partition_index, code.0));
            }
            result.push((topic.clone(), presp));
        }
        Outcome {
            response: result,
            effects: fx,
        }
    }

    fn validate_offset_commit(
        &mut self,
        now_ms: i64,
        req: &OffsetCommitRequest,
        fx: &mut Vec<Effect>,
    ) -> ErrorCode {
        if too_long(&req.group_id) {
            return ErrorCode::INVALID_GROUP_ID;
        }
        let Self {
            groups,
            timers,
            config,
            ..
        } = self;
        let Some(g) = groups.get_mut(&req.group_id) else {
            if req.generation_id < 0 {
                groups.insert(
                    req.group_id.clone(),
                    ClassicGroup::new(req.group_id.clone(), now_ms),
                );
                return ErrorCode::NONE;
            }
            return if req.api_version >= 9 {
                ErrorCode::GROUP_ID_NOT_FOUND
            } else {
                ErrorCode::ILLEGAL_GENERATION
            };
        };
        if g.is(GroupState::Dead) {
            return ErrorCode::COORDINATOR_NOT_AVAILABLE;
        }
        if req.generation_id < 0 && g.is(GroupState::Empty) {
            return ErrorCode::NONE;
        }
        if req.generation_id >= 0 || !req.member_id.is_empty() || req.group_instance_id.is_some() {
            if let Err(code) = validate_member(g, &req.member_id, req.group_instance_id.as_deref())
            {
                return code;
            }
            if req.generation_id != g.generation_id {
                return ErrorCode::ILLEGAL_GENERATION;
            }
        } else if !g.is(GroupState::Empty) {
            return ErrorCode::UNKNOWN_MEMBER_ID;
        }
        match g.state {
            GroupState::CompletingRebalance => ErrorCode::REBALANCE_IN_PROGRESS,
            GroupState::Stable | GroupState::PreparingRebalance => {
                // A commit keeps the member's session alive.
                let session = g
                    .members
                    .get(&req.member_id)
                    .map_or(0, |m| m.session_timeout_ms);
                if g.members.contains_key(&req.member_id) {
                    Ctx {
                        config,
                        timers,
                        fx,
                        now: now_ms,
                    }
                    .reschedule_heartbeat(g, &req.member_id, session);
                }
                ErrorCode::NONE
            }
            _ => ErrorCode::NONE,
        }
    }

    /// OffsetFetch (v1–v9) for one group: `topics: Some` → those partitions (offset -1, leader epoch -1,
    /// metadata "" where nothing is committed); `None` → every committed offset of the group, sorted by topic and
    /// partition. Unknown groups have no offsets (no error).
    pub fn fetch_offsets(
        &self,
        group_id: &str,
        topics: Option<&[(String, Vec<i32>)]>,
    ) -> OffsetFetchGroup {
        let stored = self.offsets.get(group_id);
        let to_partition = |p: i32, v: Option<&OffsetCommitValue>| match v {
            Some(v) => OffsetFetchPartition {
                partition_index: p,
                committed_offset: v.offset,
                committed_leader_epoch: v.leader_epoch,
                metadata: v.metadata.clone(),
                error_code: ErrorCode::NONE.0,
            },
            None => OffsetFetchPartition {
                partition_index: p,
                committed_offset: -1,
                committed_leader_epoch: -1,
                metadata: String::new(),
                error_code: ErrorCode::NONE.0,
            },
        };
        let topics = match topics {
            Some(req) => req
                .iter()
                .map(|(t, ps)| {
                    let tp = stored.and_then(|s| s.get(t));
                    (
                        t.clone(),
                        ps.iter()
                            .map(|p| to_partition(*p, tp.and_then(|m| m.get(p))))
                            .collect(),
                    )
                })
                .collect(),
            None => stored
                .map(|s| {
                    s.iter()
                        .map(|(t, ps)| {
                            (
                                t.clone(),
                                ps.iter().map(|(p, v)| to_partition(*p, Some(v))).collect(),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default(),
        };
        OffsetFetchGroup {
            group_id: group_id.to_string(),
            error_code: ErrorCode::NONE.0,
            topics,
        }
    }

    /// OffsetDelete: deletes committed offsets of partitions the group is not subscribed to.
    ///
    /// Errors: GROUP_ID_NOT_FOUND; NON_EMPTY_GROUP (group with members not using the "consumer" protocol);
    /// per partition GROUP_SUBSCRIBED_TO_TOPIC.
    pub fn delete_offsets(
        &mut self,
        now_ms: i64,
        group_id: &str,
        topics: &[(String, Vec<i32>)],
    ) -> Outcome<OffsetDeleteResult> {
        let mut fx = Vec::new();
        self.fire_due(now_ms, &mut fx);
        let error = |code: ErrorCode| OffsetDeleteResult {
            error_code: code.0,
            topics: Vec::new(),
        };
        let Some(g) = self.groups.get(group_id) else {
            return Outcome {
                response: error(ErrorCode::GROUP_ID_NOT_FOUND),
                effects: fx,
            };
        };
        match g.state {
            GroupState::Dead => {
                return Outcome {
                    response: error(ErrorCode::GROUP_ID_NOT_FOUND),
                    effects: fx,
                }
            }
            GroupState::Stable
            | GroupState::PreparingRebalance
            | GroupState::CompletingRebalance
                if g.protocol_type.as_deref() != Some(CONSUMER_PROTOCOL_TYPE) =>
            {
                return Outcome {
                    response: error(ErrorCode::NON_EMPTY_GROUP),
                    effects: fx,
                };
            }
            _ => {}
        }
        let mut result = Vec::with_capacity(topics.len());
        for (topic, partitions) in topics {
            let subscribed = g.is_subscribed_to_topic(topic);
            let mut presp = Vec::with_capacity(partitions.len());
            for p in partitions {
                if subscribed {
                    presp.push((*p, ErrorCode::GROUP_SUBSCRIBED_TO_TOPIC.0));
                    continue;
                }
                if remove_offset(&mut self.offsets, group_id, topic, *p) {
                    fx.push(Effect::Persist(GroupRecord::OffsetCommit {
                        group: group_id.to_string(),
                        topic: topic.clone(),
                        partition: *p,
                        value: None,
                    }));
                }
                presp.push((*p, ErrorCode::NONE.0));
            }
            result.push((topic.clone(), presp));
        }
        Outcome {
            response: OffsetDeleteResult {
                error_code: ErrorCode::NONE.0,
                topics: result,
            },
            effects: fx,
        }
    }

    /// Offsets retention (Kafka's `cleanupGroupMetadata`): expires offsets per `offsets.retention.minutes` —
    /// for an Empty group counted from when it became empty (else from the commit), for offsets-only groups from
    /// the commit, for Stable "consumer" groups only offsets of topics no member subscribes to; explicit v2–v4
    /// expire timestamps win. Empty groups left without offsets are deleted (tombstone).
    /// The committed values of `partitions` ((topic, partition) pairs) of `group_id` now, `None` where
    /// nothing is committed: what [`restore_offsets`](Self::restore_offsets) puts back when the records of
    /// a commit could not be written.
    pub fn offsets_snapshot(
        &self,
        group_id: &str,
        partitions: &[(String, i32)],
    ) -> Vec<(String, i32, Option<OffsetCommitValue>)> {
        let by_topic = self.offsets.get(group_id);
        partitions
            .iter()
            .map(|(t, p)| {
                let v = by_topic
                    .and_then(|b| b.get(t))
                    .and_then(|ps| ps.get(p))
                    .cloned();
                (t.clone(), *p, v)
            })
            .collect()
    }

    /// Puts back what [`offsets_snapshot`](Self::offsets_snapshot) took (no records: the state returns to
    /// what the log already has, as Kafka reverts a coordinator write that failed).
    pub fn restore_offsets(
        &mut self,
        group_id: &str,
        snapshot: Vec<(String, i32, Option<OffsetCommitValue>)>,
    ) {
        for (topic, p, v) in snapshot {
            match v {
                Some(v) => {
                    self.offsets
                        .entry(group_id.to_string())
                        .or_default()
                        .entry(topic)
                        .or_default()
                        .insert(p, v);
                }
                None => {
                    remove_offset(&mut self.offsets, group_id, &topic, p);
                }
            }
        }
    }

    /// The topics were deleted (Kafka's `onPartitionsDeleted`): every group's committed offsets for them are
    /// removed (tombstones written), and a group left with no offsets that is Empty (or was only offsets)
    /// is deleted too. So a topic re-created under the same name is read from its start (or by
    /// `auto.offset.reset`), not from an offset of the old log.
    pub fn delete_topics_offsets(&mut self, now_ms: i64, topics: &[String]) -> Vec<Effect> {
        let mut fx = Vec::new();
        self.fire_due(now_ms, &mut fx);
        let gids: Vec<String> = self.offsets.keys().cloned().collect();
        for gid in gids {
            let Some(by_topic) = self.offsets.get_mut(&gid) else {
                continue;
            };
            let mut touched = false;
            for topic in topics {
                let Some(parts) = by_topic.remove(topic) else {
                    continue;
                };
                touched = true;
                for p in parts.into_keys() {
                    fx.push(Effect::Persist(GroupRecord::OffsetCommit {
                        group: gid.clone(),
                        topic: topic.clone(),
                        partition: p,
                        value: None,
                    }));
                }
            }
            if !touched || !by_topic.is_empty() {
                continue;
            }
            self.offsets.remove(&gid);
            match self.groups.get(&gid) {
                Some(g) if !g.is(GroupState::Empty) => {}
                Some(_) => {
                    self.groups.remove(&gid);
                    self.timers.cancel_group(&gid);
                    fx.push(Effect::Persist(GroupRecord::GroupMetadata {
                        group: gid,
                        value: None,
                    }));
                }
                None => {}
            }
        }
        fx
    }

    fn cleanup_expired_offsets(&mut self, now: i64, fx: &mut Vec<Effect>) {
        let retention = self.config.offsets_retention_ms;
        let ids: BTreeSet<String> = self
            .groups
            .keys()
            .chain(self.offsets.keys())
            .cloned()
            .collect();
        for gid in ids {
            let group = self.groups.get(&gid);
            // Base timestamp of the expiration condition; None = offsets of this group never expire now.
            #[derive(Clone, Copy)]
            enum Base {
                Commit,
                StateOrCommit(Option<i64>),
            }
            let base = match group {
                None => Some(Base::Commit),
                Some(g) if g.protocol_type.is_some() => {
                    if g.is(GroupState::Empty) {
                        Some(Base::StateOrCommit(g.state_timestamp))
                    } else if g.protocol_type.as_deref() == Some(CONSUMER_PROTOCOL_TYPE)
                        && g.subscribed_topics.is_some()
                        && g.is(GroupState::Stable)
                    {
                        Some(Base::Commit)
                    } else {
                        None
                    }
                }
                Some(_) => Some(Base::Commit),
            };
            let mut all_expired = true;
            if let Some(by_topic) = self.offsets.get_mut(&gid) {
                match base {
                    None => all_expired = false,
                    Some(base) => {
                        for (topic, parts) in by_topic.iter_mut() {
                            if group.is_some_and(|g| g.is_subscribed_to_topic(topic)) {
                                all_expired = false;
                                continue;
                            }
                            parts.retain(|p, v| {
                                let expired = if v.expire_timestamp >= 0 {
                                    now >= v.expire_timestamp
                                } else {
                                    let b = match base {
                                        Base::Commit => v.commit_timestamp,
                                        Base::StateOrCommit(s) => s.unwrap_or(v.commit_timestamp),
                                    };
                                    now.saturating_sub(b) >= retention
                                };
                                if expired {
                                    fx.push(Effect::Persist(GroupRecord::OffsetCommit {
                                        group: gid.clone(),
                                        topic: topic.clone(),
                                        partition: *p,
                                        value: None,
                                    }));
                                } else {
                                    all_expired = false;
                                }
                                !expired
                            });
                        }
                        by_topic.retain(|_, parts| !parts.is_empty());
                    }
                }
                if by_topic.is_empty() {
                    self.offsets.remove(&gid);
                }
            }
            if all_expired && group.is_some_and(|g| g.is(GroupState::Empty)) {
                self.groups.remove(&gid);
                self.timers.cancel_group(&gid);
                fx.push(Effect::Persist(GroupRecord::GroupMetadata {
                    group: gid,
                    value: None,
                }));
            }
        }
    }

    // ---- Admin -----------------------------------------------------------------------------------------------

    /// DescribeGroups for one group. Members carry metadata and assignment only when the group is Stable.
    pub fn describe_group(&self, group_id: &str) -> DescribedGroup {
        let Some(g) = self.groups.get(group_id) else {
            return DescribedGroup {
                error_code: ErrorCode::GROUP_ID_NOT_FOUND.0,
                group_id: group_id.to_string(),
                group_state: GroupState::Dead.as_str().to_string(),
                protocol_type: String::new(),
                protocol_data: String::new(),
                members: Vec::new(),
            };
        };
        let stable = g.is(GroupState::Stable);
        let protocol = g.protocol_name.clone().unwrap_or_default();
        DescribedGroup {
            error_code: ErrorCode::NONE.0,
            group_id: group_id.to_string(),
            group_state: g.state.as_str().to_string(),
            protocol_type: g.protocol_type.clone().unwrap_or_default(),
            protocol_data: if stable {
                protocol.clone()
            } else {
                String::new()
            },
            members: g
                .members
                .values()
                .map(|m| DescribedMember {
                    member_id: m.member_id.clone(),
                    group_instance_id: m.group_instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    member_metadata: if stable {
                        m.metadata(&protocol)
                    } else {
                        Bytes::new()
                    },
                    member_assignment: if stable {
                        m.assignment.clone()
                    } else {
                        Bytes::new()
                    },
                })
                .collect(),
        }
    }

    /// ListGroups: every group, or those whose state name matches one of `states_filter` (case-insensitive;
    /// empty filter = all), ordered by group id.
    pub fn list_groups(&self, states_filter: &[String]) -> Vec<ListedGroup> {
        self.groups
            .values()
            .filter(|g| {
                states_filter.is_empty()
                    || states_filter
                        .iter()
                        .any(|s| s.eq_ignore_ascii_case(g.state.as_str()))
            })
            .map(|g| ListedGroup {
                group_id: g.group_id.clone(),
                protocol_type: g.protocol_type.clone().unwrap_or_default(),
                group_state: g.state.as_str().to_string(),
            })
            .collect()
    }

    /// DeleteGroups: deletes Empty groups with all their offsets (tombstones persisted). Per group:
    /// 0, GROUP_ID_NOT_FOUND or NON_EMPTY_GROUP.
    pub fn delete_groups(
        &mut self,
        now_ms: i64,
        group_ids: &[String],
    ) -> Outcome<Vec<(String, i16)>> {
        let mut fx = Vec::new();
        self.fire_due(now_ms, &mut fx);
        let mut result = Vec::with_capacity(group_ids.len());
        for gid in group_ids {
            let code = match self.groups.get(gid) {
                None => ErrorCode::GROUP_ID_NOT_FOUND,
                Some(g) if g.is(GroupState::Dead) => ErrorCode::GROUP_ID_NOT_FOUND,
                Some(g) if !g.is(GroupState::Empty) => ErrorCode::NON_EMPTY_GROUP,
                Some(_) => {
                    if let Some(by_topic) = self.offsets.remove(gid) {
                        for (topic, parts) in by_topic {
                            for p in parts.keys() {
                                fx.push(Effect::Persist(GroupRecord::OffsetCommit {
                                    group: gid.clone(),
                                    topic: topic.clone(),
                                    partition: *p,
                                    value: None,
                                }));
                            }
                        }
                    }
                    fx.push(Effect::Persist(GroupRecord::GroupMetadata {
                        group: gid.clone(),
                        value: None,
                    }));
                    self.groups.remove(gid);
                    self.timers.cancel_group(gid);
                    ErrorCode::NONE
                }
            };
            result.push((gid.clone(), code.0));
        }
        Outcome {
            response: result,
            effects: fx,
        }
    }

    /// State of a group, `None` if unknown.
    pub fn group_state(&self, group_id: &str) -> Option<GroupState> {
        self.groups.get(group_id).map(|g| g.state)
    }

    /// Generation id of a group, `None` if unknown.
    pub fn group_generation(&self, group_id: &str) -> Option<i32> {
        self.groups.get(group_id).map(|g| g.generation_id)
    }

    // ---- Loading ---------------------------------------------------------------------------------------------

    /// Applies one `__consumer_offsets` record read at startup (in log order; later records win):
    /// offset commits and tombstones update the offsets (creating an offsets-only group if needed); group
    /// metadata replaces the group — Stable with its members and assignments if it had members, else Empty;
    /// a group tombstone removes the group.
    pub fn replay(&mut self, record: GroupRecord) {
        match record {
            GroupRecord::OffsetCommit {
                group,
                topic,
                partition,
                value: Some(v),
            } => {
                if !self.groups.contains_key(&group) {
                    let mut g = ClassicGroup::new(group.clone(), 0);
                    g.state_timestamp = None;
                    self.groups.insert(group.clone(), g);
                }
                self.offsets
                    .entry(group)
                    .or_default()
                    .entry(topic)
                    .or_default()
                    .insert(partition, v);
            }
            GroupRecord::OffsetCommit {
                group,
                topic,
                partition,
                value: None,
            } => {
                remove_offset(&mut self.offsets, &group, &topic, partition);
            }
            GroupRecord::GroupMetadata { group, value: None } => {
                self.groups.remove(&group);
                self.timers.cancel_group(&group);
            }
            GroupRecord::GroupMetadata {
                group,
                value: Some(v),
            } => {
                self.timers.cancel_group(&group);
                let mut g = ClassicGroup::new(group.clone(), 0);
                g.state = if v.members.is_empty() {
                    GroupState::Empty
                } else {
                    GroupState::Stable
                };
                g.state_timestamp =
                    (v.current_state_timestamp >= 0).then_some(v.current_state_timestamp);
                g.generation_id = v.generation;
                g.protocol_type = (!v.protocol_type.is_empty()).then(|| v.protocol_type.clone());
                g.protocol_name = v.protocol.clone();
                g.leader_id = v.leader.clone();
                let protocol = v.protocol.clone().unwrap_or_default();
                for m in v.members {
                    g.add(Member {
                        member_id: m.member_id,
                        group_instance_id: m.group_instance_id,
                        client_id: m.client_id,
                        client_host: m.client_host,
                        rebalance_timeout_ms: m.rebalance_timeout,
                        session_timeout_ms: m.session_timeout,
                        protocol_type: v.protocol_type.clone(),
                        protocols: vec![(protocol.clone(), m.subscription)],
                        assignment: m.assignment,
                        awaiting_join: None,
                        awaiting_sync: None,
                        is_new: false,
                    });
                }
                if g.leader_id
                    .as_ref()
                    .is_some_and(|l| !g.members.contains_key(l))
                {
                    g.leader_id = g.members.keys().next().cloned();
                }
                g.subscribed_topics = g.compute_subscribed_topics();
                self.groups.insert(group, g);
            }
        }
    }

    /// Ends loading (Kafka's `onLoaded`): every loaded member's session timer starts at `now_ms`, groups above
    /// `group.max.size` rebalance, and the offsets retention check is scheduled.
    pub fn loaded(&mut self, now_ms: i64) -> Vec<Effect> {
        let ids: Vec<String> = self.groups.keys().cloned().collect();
        self.on_loaded(now_ms, &ids)
    }

    /// Kafka's `onLoaded` for the groups `ids` (unknown ids are skipped), then schedules the offsets retention
    /// check if it is not pending.
    fn on_loaded(&mut self, now_ms: i64, ids: &[String]) -> Vec<Effect> {
        let mut fx = Vec::new();
        let max = usize::try_from(self.config.group_max_size.max(0)).unwrap_or(usize::MAX);
        let Self {
            groups,
            timers,
            config,
            ..
        } = self;
        let mut cx = Ctx {
            config,
            timers,
            fx: &mut fx,
            now: now_ms,
        };
        for id in ids {
            let Some(g) = groups.get_mut(id) else {
                continue;
            };
            let sessions: Vec<(String, i32)> = g
                .members
                .values()
                .map(|m| (m.member_id.clone(), m.session_timeout_ms))
                .collect();
            for (id, session) in sessions {
                cx.reschedule_heartbeat(g, &id, session);
            }
            if g.members.len() > max && g.can_rebalance() {
                cx.prepare_rebalance(g);
            }
        }
        if !self.timers.contains(&TimerKey::OffsetsRetention) {
            self.schedule_retention(now_ms);
        }
        fx
    }

    /// Cluster mode, becoming coordinator of one `__consumer_offsets` partition: moves every group and
    /// committed offset of `loaded` (a coordinator the partition was [`replay`](Self::replay)ed into; its
    /// timers are dropped) into this one — replacing groups and offsets of the same group ids — and ends loading
    /// for exactly those groups as [`loaded`](Self::loaded) does (session timers start at `now_ms`, oversized
    /// groups rebalance). Groups already here are left untouched. Returns the effects (records to persist).
    ///
    /// Source: Kafka's `CoordinatorRuntime` scheduling a load of one partition on leadership
    /// (`GroupCoordinatorService.onElection`).
    pub fn load_groups(&mut self, now_ms: i64, loaded: GroupCoordinator) -> Vec<Effect> {
        let GroupCoordinator {
            groups, offsets, ..
        } = loaded;
        let ids: BTreeSet<String> = groups.keys().chain(offsets.keys()).cloned().collect();
        for id in &ids {
            self.groups.remove(id);
            self.offsets.remove(id);
            self.timers.cancel_group(id);
        }
        self.groups.extend(groups);
        self.offsets.extend(offsets);
        let ids: Vec<String> = ids.into_iter().collect();
        self.on_loaded(now_ms, &ids)
    }

    /// Cluster mode, losing coordinatorship of groups (Kafka's `onUnloaded` on resignation from a
    /// `__consumer_offsets` partition): forgets every group for which `belongs(group_id)` is true, with its
    /// members, committed offsets and timers. Nothing is persisted (the new coordinator replays the log).
    ///
    /// Returns NOT_COORDINATOR (16) responses for every JoinGroup and SyncGroup still parked in a removed
    /// group, so that the glue can answer them.
    pub fn unload_groups(&mut self, belongs: impl Fn(&str) -> bool) -> Vec<Effect> {
        let mut fx = Vec::new();
        let ids: Vec<String> = self
            .groups
            .keys()
            .chain(self.offsets.keys())
            .filter(|id| belongs(id))
            .cloned()
            .collect();
        for id in ids {
            self.offsets.remove(&id);
            self.timers.cancel_group(&id);
            let Some(g) = self.groups.remove(&id) else {
                continue;
            };
            for m in g.members.values() {
                if let Some(request) = m.awaiting_join {
                    fx.push(Effect::JoinResponse {
                        request,
                        response: JoinResult::error(&m.member_id, ErrorCode::NOT_COORDINATOR),
                    });
                }
                if let Some(request) = m.awaiting_sync {
                    fx.push(Effect::SyncResponse {
                        request,
                        response: SyncResult::error(ErrorCode::NOT_COORDINATOR),
                    });
                }
            }
        }
        fx
    }

    /// True if the coordinator holds state (a group or committed offsets) for `group_id`.
    pub fn has_group(&self, group_id: &str) -> bool {
        self.groups.contains_key(group_id) || self.offsets.contains_key(group_id)
    }
}

/// Removes one offset; true if it existed.
fn remove_offset(offsets: &mut OffsetStore, group: &str, topic: &str, partition: i32) -> bool {
    let Some(by_topic) = offsets.get_mut(group) else {
        return false;
    };
    let Some(parts) = by_topic.get_mut(topic) else {
        return false;
    };
    let existed = parts.remove(&partition).is_some();
    if parts.is_empty() {
        by_topic.remove(topic);
    }
    if by_topic.is_empty() {
        offsets.remove(group);
    }
    existed
}
