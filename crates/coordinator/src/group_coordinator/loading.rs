//! Loading and unloading: rebuilding groups and offsets from `__consumer_offsets` records, and handing groups
//! over when coordinatorship of a partition moves.

use std::collections::BTreeSet;

use types::{ErrorCode, ProducerId};

use super::offsets::remove_offset;
use super::GroupCoordinator;
use crate::api::{Effect, JoinResult, ReplayEntry, SyncResult};
use crate::group::{ClassicGroup, GroupState, Member};
use crate::records::GroupRecord;
use crate::timers::TimerKey;

impl GroupCoordinator {
    /// Applies one `__consumer_offsets` record read at startup (in log order; later records win):
    /// offset commits and tombstones update the offsets (creating an offsets-only group if needed); group
    /// metadata replaces the group — Stable with its members and assignments if it had members, else Empty;
    /// a group tombstone removes the group.
    ///
    /// The record is taken as a non-transactional one following every record replayed so far; see
    /// [`replay_entry`](Self::replay_entry) for records of transactional batches and markers.
    pub fn replay(&mut self, record: GroupRecord) {
        let offset = self.next_record_order;
        self.replay_record(offset, None, record);
    }

    /// Applies one entry of a `__consumer_offsets` partition read at load time (in log order), as
    /// [`replay`](Self::replay) does, plus transactions (Kafka's `OffsetMetadataManager.replay` and
    /// `replayEndTransactionMarker`): an offset commit of a transactional batch becomes a pending offset of
    /// its producer; a COMMIT or ABORT marker completes that producer's pending offsets of the groups of the
    /// marker's partition, as [`complete_transaction_for`](Self::complete_transaction_for) does. Offsets order records
    /// (later ones win); records committed live afterwards are ordered after every replayed offset.
    pub fn replay_entry(&mut self, entry: ReplayEntry) {
        match entry {
            ReplayEntry::Record {
                offset,
                producer_id,
                record,
            } => self.replay_record(offset, producer_id, record),
            ReplayEntry::EndTransaction {
                offset,
                producer_id,
                commit,
                offsets_partition: (partition, partitions),
            } => {
                self.next_record_order = self.next_record_order.max(offset.saturating_add(1));
                self.end_transaction(producer_id, commit, |g| {
                    crate::records::partition_for(g, partitions) == partition
                });
            }
        }
    }

    fn replay_record(&mut self, offset: i64, producer_id: Option<ProducerId>, record: GroupRecord) {
        self.next_record_order = self.next_record_order.max(offset.saturating_add(1));
        match record {
            GroupRecord::OffsetCommit {
                group,
                topic,
                partition,
                value: Some(v),
            } => {
                if !self.groups.contains_key(&group) && !self.consumer_groups.contains_key(&group) {
                    let mut g = ClassicGroup::new(group.clone(), 0);
                    g.state_timestamp = None;
                    self.groups.insert(group.clone(), g);
                }
                if let Some(pid) = producer_id {
                    self.put_pending(pid, &group, &topic, partition, v, offset);
                    return;
                }
                self.supersede_pending(&group, &topic, partition, Some(offset));
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
                self.drop_pending(&group, &topic, partition);
            }
            GroupRecord::Consumer(record) => self.replay_consumer(*record),
            GroupRecord::Share(record) => self.replay_share(*record),
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
        let consumer: Vec<String> = self.consumer_groups.keys().cloned().collect();
        self.consumer_groups_loaded(now_ms, &consumer);
        let share: Vec<String> = self.share_groups.keys().cloned().collect();
        self.share_groups_loaded(now_ms, &share);
        self.on_loaded(now_ms, &ids)
    }

    /// Kafka's `onLoaded` for the groups `ids` (unknown ids are skipped), then schedules the offsets retention
    /// check if it is not pending.
    fn on_loaded(&mut self, now_ms: i64, ids: &[String]) -> Vec<Effect> {
        let mut fx = Vec::new();
        let max = usize::try_from(self.config.group_max_size.max(0)).unwrap_or(usize::MAX);
        let (groups, mut cx) = self.split(now_ms, &mut fx);
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
    /// committed and pending transactional offset of `loaded` (a coordinator the partition was [`replay`](Self::replay)ed into; its
    /// timers are dropped) into this one — replacing groups and offsets of the same group ids — and ends loading
    /// for exactly those groups as [`loaded`](Self::loaded) does (session timers start at `now_ms`, oversized
    /// groups rebalance). Groups already here are left untouched. Returns the effects (records to persist).
    ///
    /// Source: Kafka's `CoordinatorRuntime` scheduling a load of one partition on leadership
    /// (`GroupCoordinatorService.onElection`).
    pub fn load_groups(&mut self, now_ms: i64, loaded: GroupCoordinator) -> Vec<Effect> {
        let GroupCoordinator {
            groups,
            consumer_groups,
            share_groups,
            offsets,
            pending,
            next_record_order,
            ..
        } = loaded;
        let ids: BTreeSet<String> = (groups.keys().chain(consumer_groups.keys()))
            .chain(share_groups.keys())
            .chain(offsets.keys())
            .cloned()
            .collect();
        for id in &ids {
            self.groups.remove(id);
            self.consumer_groups.remove(id);
            self.share_groups.remove(id);
            self.offsets.remove(id);
            self.drop_pending_group(id);
            self.timers.cancel_group(id);
        }
        self.groups.extend(groups);
        let consumer: Vec<String> = consumer_groups.keys().cloned().collect();
        self.consumer_groups.extend(consumer_groups);
        self.consumer_groups_loaded(now_ms, &consumer);
        let share: Vec<String> = share_groups.keys().cloned().collect();
        self.share_groups.extend(share_groups);
        self.share_groups_loaded(now_ms, &share);
        self.offsets.extend(offsets);
        for (pid, by_group) in pending {
            self.pending.entry(pid).or_default().extend(by_group);
        }
        self.next_record_order = self.next_record_order.max(next_record_order);
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
            .chain(self.consumer_groups.keys())
            .chain(self.share_groups.keys())
            .chain(self.offsets.keys())
            .filter(|id| belongs(id))
            .cloned()
            .collect();
        for id in ids {
            self.offsets.remove(&id);
            self.consumer_groups.remove(&id);
            self.share_groups.remove(&id);
            self.drop_pending_group(&id);
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
        self.groups.contains_key(group_id)
            || self.consumer_groups.contains_key(group_id)
            || self.share_groups.contains_key(group_id)
            || self.offsets.contains_key(group_id)
    }
}
