//! The rebalance machinery shared by JoinGroup, SyncGroup, LeaveGroup and the timers (Kafka's
//! `prepareRebalance`, `completeClassicGroupJoin`, the initial rebalance delay and the pending-sync expiry).

use bytes::Bytes;
use types::ErrorCode;

use super::join::{current_members, join_success};
use super::{group_metadata_record, Ctx};
use crate::api::{JoinResult, SyncResult};
use crate::group::{ClassicGroup, GroupState};
use crate::timers::{TimerAction, TimerKey};

impl Ctx<'_> {
    pub(super) fn maybe_prepare_rebalance_or_complete_join(&mut self, g: &mut ClassicGroup) {
        if g.can_rebalance() {
            self.prepare_rebalance(g);
        } else {
            self.maybe_complete_join_phase(g);
        }
    }

    pub(super) fn prepare_rebalance(&mut self, g: &mut ClassicGroup) {
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
    pub(super) fn maybe_complete_join_phase(&mut self, g: &mut ClassicGroup) {
        if !g.is(GroupState::PreparingRebalance)
            || g.previous_state == GroupState::Empty
            || !g.has_all_members_joined()
        {
            return;
        }
        self.complete_join(g);
    }

    pub(super) fn initial_rebalance_timer(
        &mut self,
        g: &mut ClassicGroup,
        delay: i32,
        remaining: i32,
    ) {
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
    pub(super) fn complete_join(&mut self, g: &mut ClassicGroup) {
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

    pub(super) fn remove_pending_sync_member(&mut self, g: &mut ClassicGroup, member_id: &str) {
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
    pub(super) fn expire_pending_sync(&mut self, g: &mut ClassicGroup, generation: i32) {
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

    pub(super) fn propagate_assignment(&mut self, g: &mut ClassicGroup, error: ErrorCode) {
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
                error_code: error,
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
}
