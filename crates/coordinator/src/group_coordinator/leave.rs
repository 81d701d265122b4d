//! LeaveGroup, and the member removal it shares with session expiry and the join-phase size check.

use types::ErrorCode;

use super::{validate_member, Ctx, GroupCoordinator};
use crate::api::{JoinResult, LeaveMember, LeaveMemberResult, LeaveResult, Outcome, SyncResult};
use crate::group::{ClassicGroup, GroupState};

impl GroupCoordinator {
    /// LeaveGroup (v0–v5): removes members by member id, or static members by `group.instance.id` alone (member
    /// id ""), then rebalances (or completes a running join phase).
    pub fn leave_group(
        &mut self,
        now_ms: i64,
        group_id: &str,
        members: &[LeaveMember],
    ) -> Outcome<LeaveResult> {
        if self.consumer_groups.contains_key(group_id) {
            // Classic members of a consumer group (KIP-848 online migration).
            let mut fx = self.fire_due(now_ms);
            if self.consumer_groups.contains_key(group_id) {
                let response =
                    self.classic_leave_to_consumer_group(now_ms, group_id, members, &mut fx);
                return Outcome {
                    response,
                    effects: fx,
                };
            }
            let (groups, mut cx) = self.split(now_ms, &mut fx);
            let response = leave_classic(groups, &mut cx, group_id, members);
            return Outcome {
                response,
                effects: fx,
            };
        }
        self.run(now_ms, |groups, cx| {
            leave_classic(groups, cx, group_id, members)
        })
    }
}

/// LeaveGroup of a classic group (or none).
fn leave_classic(
    groups: &mut std::collections::BTreeMap<String, ClassicGroup>,
    cx: &mut Ctx<'_>,
    group_id: &str,
    members: &[LeaveMember],
) -> LeaveResult {
    {
        let Some(g) = groups.get_mut(group_id) else {
            return LeaveResult {
                error_code: ErrorCode::UNKNOWN_MEMBER_ID,
                members: Vec::new(),
            };
        };
        if g.is(GroupState::Dead) {
            return LeaveResult {
                error_code: ErrorCode::COORDINATOR_NOT_AVAILABLE,
                members: Vec::new(),
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
                error_code: code,
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
        LeaveResult {
            error_code: ErrorCode::NONE,
            members: results,
        }
    }
}

impl Ctx<'_> {
    /// Removes a member after session expiry (Kafka's `removeMemberAndUpdateClassicGroup`).
    pub(super) fn remove_member_and_update(&mut self, g: &mut ClassicGroup, member_id: &str) {
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
