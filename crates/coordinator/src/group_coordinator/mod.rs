//! [`GroupCoordinator`]: classic group membership (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) and committed
//! offsets, as a state machine driven by calls that carry the current time.
//!
//! Behaviour follows Kafka's group coordinator for classic groups (`GroupMetadataManager`, `ClassicGroup`,
//! `OffsetMetadataManager` in Kafka's `group-coordinator` module); deviations are noted where they occur.
//!
//! This module holds the state, the timer loop and the per-call context `Ctx`; one module per Kafka operation
//! holds the rest: `join`, `sync`, `heartbeat`, `leave`, the `rebalance` machinery they share, `offsets`,
//! `txn_offsets` (TxnOffsetCommit's pending transactional offsets), `admin` and `loading`.

mod admin;
mod consumer;
mod consumer_admin;
mod consumer_classic;
mod heartbeat;
mod join;
mod leave;
mod loading;
mod migration;
mod offsets;
mod rebalance;
mod share;
mod sync;
mod txn_offsets;

pub use admin::GroupSummary;
pub use txn_offsets::TxnOffsetsSnapshot;

use std::collections::BTreeMap;

use types::ErrorCode;

use crate::api::{Effect, JoinResult, Outcome, RequestId, SyncResult};
use crate::config::GroupConfig;
use crate::group::{ClassicGroup, GroupState};
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
/// Startup: create, [`GroupCoordinator::replay_entry`] (or [`GroupCoordinator::replay`]) every record of the
/// owned `__consumer_offsets` partitions in log order, then call [`GroupCoordinator::loaded`].
#[derive(Debug)]
pub struct GroupCoordinator {
    config: GroupConfig,
    groups: BTreeMap<String, ClassicGroup>,
    /// Consumer groups (KIP-848). A group id names a classic or a consumer group, never both.
    consumer_groups: BTreeMap<String, crate::consumer::ConsumerGroup>,
    /// Share groups (KIP-932). A group id names one group of one type.
    share_groups: BTreeMap<String, crate::share_group::ShareGroup>,
    offsets: OffsetStore,
    /// Pending transactional offsets (TxnOffsetCommit), by producer.
    pending: txn_offsets::PendingStore,
    /// Order of the next record produced live (above every replayed record's offset).
    next_record_order: i64,
    timers: Timers,
    member_ids: MemberIds,
    /// Rebalances completed here since start (SyncGroup moved a group to Stable): Kafka's
    /// `group-completed-rebalance-count`.
    completed_rebalances: u64,
    /// The topics as last handed in ([`GroupCoordinator::set_topics_image`] or a ConsumerGroupHeartbeat):
    /// what classic members of consumer groups are assigned from, and how their partitions are named.
    topics: std::sync::Arc<crate::consumer::api::TopicsImage>,
    /// Groups' own timeouts (their group configs), as last handed in
    /// ([`GroupCoordinator::set_group_timeouts`]).
    group_timeouts: std::sync::Arc<BTreeMap<String, crate::config::GroupTimeouts>>,
}

/// Where the random part of a new member id comes from.
#[derive(Debug, Clone, Copy)]
enum MemberIds {
    /// A random UUID (v4), as Kafka.
    Random,
    /// The next UUID of a seeded splitmix64 stream (a deterministic simulation; see
    /// [`GroupCoordinator::with_member_id_seed`]).
    Seeded(u64),
}

impl MemberIds {
    /// The next id's UUID.
    fn next(&mut self) -> uuid::Uuid {
        match self {
            MemberIds::Random => uuid::Uuid::new_v4(),
            MemberIds::Seeded(state) => {
                let mut draw = || {
                    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
                    let mut z = *state;
                    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                    z ^ (z >> 31)
                };
                let (hi, lo) = (draw(), draw());
                uuid::Uuid::from_u64_pair(hi, lo)
            }
        }
    }
}

fn too_long(s: &str) -> bool {
    s.len() > MAX_RECORD_STRING_BYTES
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

/// Borrowed context of one call: configuration, timers, output effects and the current time.
struct Ctx<'a> {
    config: &'a GroupConfig,
    timers: &'a mut Timers,
    member_ids: &'a mut MemberIds,
    completed_rebalances: &'a mut u64,
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
}

impl GroupCoordinator {
    /// A coordinator with no groups and no offsets.
    pub fn new(config: GroupConfig) -> Self {
        GroupCoordinator {
            config,
            groups: BTreeMap::new(),
            consumer_groups: BTreeMap::new(),
            share_groups: BTreeMap::new(),
            offsets: BTreeMap::new(),
            pending: BTreeMap::new(),
            next_record_order: 0,
            timers: Timers::default(),
            member_ids: MemberIds::Random,
            completed_rebalances: 0,
            topics: Default::default(),
            group_timeouts: Default::default(),
        }
    }

    /// Hands in the current topics image, which the classic-protocol operations on consumer groups (KIP-848
    /// online migration: JoinGroup/SyncGroup/LeaveGroup of classic members, the conversions) assign from and
    /// name partitions by. The glue calls it whenever the metadata changed, before those calls.
    pub fn set_topics_image(&mut self, image: std::sync::Arc<crate::consumer::api::TopicsImage>) {
        self.topics = image;
    }

    /// Hands in the groups' own timeouts (KIP-848 `consumer.*`, KIP-932 `share.*` group configs), by group
    /// id; a group not in the map uses the broker's. They apply from the next heartbeat of each member.
    pub fn set_group_timeouts(
        &mut self,
        timeouts: std::sync::Arc<BTreeMap<String, crate::config::GroupTimeouts>>,
    ) {
        self.group_timeouts = timeouts;
    }

    /// Group `group`'s own timeouts (default: none).
    pub(crate) fn timeouts_of(&self, group: &str) -> crate::config::GroupTimeouts {
        self.group_timeouts.get(group).copied().unwrap_or_default()
    }

    /// The same coordinator, but new member ids take their random part from a splitmix64 stream seeded
    /// with `seed` instead of a random UUID: a deterministic simulation's runs then depend on their seed
    /// only. Ids stay unique within the stream (128 bits drawn per id).
    pub fn with_member_id_seed(mut self, seed: u64) -> Self {
        self.member_ids = MemberIds::Seeded(seed);
        self
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
        self.fire_due(now_ms)
    }

    /// Fires every timer due at `now`; returns their effects, to which the calling operation appends its own.
    fn fire_due(&mut self, now: i64) -> Vec<Effect> {
        let mut fx = Vec::new();
        if !self.timers.contains(&TimerKey::OffsetsRetention) {
            self.schedule_retention(now);
        }
        for _ in 0..MAX_TIMERS_PER_CALL {
            let Some((key, action)) = self.timers.pop_due(now) else {
                break;
            };
            match key {
                TimerKey::OffsetsRetention => {
                    self.cleanup_expired_offsets(now, &mut fx);
                    self.schedule_retention(now);
                }
                TimerKey::Heartbeat { group, member } => {
                    let (groups, mut cx) = self.split(now, &mut fx);
                    if let Some(g) = groups.get_mut(&group) {
                        cx.expire_heartbeat(g, &member);
                    }
                }
                TimerKey::ConsumerSession { group, member } => {
                    self.fence_consumer_member(now, &group, &member, &mut fx);
                }
                TimerKey::ShareSession { group, member } => {
                    self.remove_share_member(&group, &member, &mut fx);
                }
                TimerKey::ConsumerJoin { group, member }
                | TimerKey::ConsumerSync { group, member } => {
                    self.expire_classic_member(now, &group, &member, &mut fx);
                }
                TimerKey::ConsumerRebalance { group, member } => {
                    if let TimerAction::ExpireConsumerRebalance { epoch } = action {
                        self.expire_consumer_rebalance(now, &group, &member, epoch, &mut fx);
                    }
                }
                TimerKey::Join { group } | TimerKey::Sync { group } => {
                    let (groups, mut cx) = self.split(now, &mut fx);
                    let Some(g) = groups.get_mut(&group) else {
                        continue;
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
        fx
    }

    /// The prologue of every group operation: fires the timers due at `now`, then runs `op` on the groups with
    /// the call's [`Ctx`]. The timers' effects come first, then `op`'s.
    fn run<T>(
        &mut self,
        now: i64,
        op: impl FnOnce(&mut BTreeMap<String, ClassicGroup>, &mut Ctx<'_>) -> T,
    ) -> Outcome<T> {
        let mut fx = self.fire_due(now);
        let (groups, mut cx) = self.split(now, &mut fx);
        let response = op(groups, &mut cx);
        Outcome {
            response,
            effects: fx,
        }
    }

    /// Splits `self` into the groups and a [`Ctx`] writing to `fx` at time `now`.
    fn split<'a>(
        &'a mut self,
        now: i64,
        fx: &'a mut Vec<Effect>,
    ) -> (&'a mut BTreeMap<String, ClassicGroup>, Ctx<'a>) {
        let Self {
            groups,
            timers,
            config,
            member_ids,
            completed_rebalances,
            ..
        } = self;
        (
            groups,
            Ctx {
                config,
                timers,
                member_ids,
                completed_rebalances,
                fx,
                now,
            },
        )
    }

    fn schedule_retention(&mut self, now: i64) {
        let interval = self.config.offsets_retention_check_interval_ms.max(1);
        self.timers.schedule(
            TimerKey::OffsetsRetention,
            now.saturating_add(interval),
            TimerAction::OffsetsRetention,
        );
    }
}
