//! Heartbeat: keeping a member's session alive, and what happens when it expires.

use types::ErrorCode;

use super::{validate_member, Ctx, GroupCoordinator};
use crate::api::Outcome;
use crate::group::{ClassicGroup, GroupState};

impl GroupCoordinator {
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
    ) -> Outcome<ErrorCode> {
        let mut fx = self.fire_due(now_ms);
        if self.consumer_groups.contains_key(group_id) {
            // A classic member of a consumer group (KIP-848 online migration).
            let response = self.classic_heartbeat_to_consumer_group(
                now_ms,
                group_id,
                member_id,
                group_instance_id,
                generation_id,
            );
            return Outcome {
                response,
                effects: fx,
            };
        }
        let (groups, mut cx) = self.split(now_ms, &mut fx);
        let cx = &mut cx;
        let response = {
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
            code
        };
        Outcome {
            response,
            effects: fx,
        }
    }
}

impl Ctx<'_> {
    /// The member's session timer fired: a pending member (KIP-394) is forgotten, a member that has not
    /// heartbeaten in time is removed.
    pub(super) fn expire_heartbeat(&mut self, g: &mut ClassicGroup, member_id: &str) {
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
}
