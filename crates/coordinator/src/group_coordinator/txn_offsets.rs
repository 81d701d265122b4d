//! Transactional offset commits (KIP-98, KIP-447): TxnOffsetCommit stores offsets as pending for their
//! producer; a COMMIT marker moves them into the committed offsets, an ABORT marker drops them; OffsetFetch
//! with `require_stable` sees which partitions have pending offsets.
//!
//! Source: Kafka's `OffsetMetadataManager` (`commitTransactionalOffset`, `validateTransactionalOffsetCommit`,
//! `replayEndTransactionMarker`, `hasPendingTransactionalOffsets`) and `ClassicGroup.validateOffsetCommit`
//! with `isTransactional`.
//!
//! Record order: Kafka keeps, for each offset, the log offset of the record that carried it
//! (`OffsetAndMetadata.recordOffset`) and on a COMMIT marker a pending offset replaces the committed one only
//! if its record is the later one. Here every pending offset carries its record's order (the log offset when
//! replayed, a counter above every replayed offset when committed live, as records of one partition are
//! appended in the order the coordinator produced them) and is marked superseded as soon as a later record
//! stores an offset for the same partition; a superseded pending offset is dropped on COMMIT.

use std::collections::BTreeMap;

use types::{ErrorCode, ProducerId};

use super::{too_long, validate_member, GroupCoordinator};
use crate::api::{Effect, OffsetCommitResult, Outcome, TxnOffsetCommitRequest};
use crate::group::{ClassicGroup, GroupState};
use crate::records::{GroupRecord, OffsetCommitValue};

/// One pending transactional offset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct PendingOffset {
    /// The value the COMMIT marker stores.
    value: OffsetCommitValue,
    /// Order of the record that carried it (see the module doc).
    order: i64,
    /// A later record stored an offset for the same partition: COMMIT does not materialize this one.
    superseded: bool,
}

/// Pending transactional offsets: producer id → group → topic → partition → offset.
pub(super) type PendingStore =
    BTreeMap<ProducerId, BTreeMap<String, BTreeMap<String, BTreeMap<i32, PendingOffset>>>>;

/// The pending offsets of one producer for some partitions of one group, as they were before a
/// TxnOffsetCommit: what [`GroupCoordinator::restore_txn_offsets`] puts back when the commit's records could
/// not be written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnOffsetsSnapshot {
    producer_id: ProducerId,
    group_id: String,
    partitions: Vec<(String, i32, Option<PendingOffset>)>,
    created_group: bool,
}

impl GroupCoordinator {
    /// TxnOffsetCommit (v0–v5): validates the group metadata as Kafka's `validateTransactionalOffsetCommit`
    /// and stores each partition's offset as pending for `req.producer_id`; each yields an
    /// [`Effect::PersistTransactional`] record. Pending offsets are not visible to OffsetFetch until
    /// [`complete_transaction`](Self::complete_transaction) commits them. A later commit of the same
    /// producer for the same partition replaces the earlier pending one. Unlike OffsetCommit it neither
    /// refreshes the member's session nor fails while the group is CompletingRebalance.
    ///
    /// Validation: an unknown group is accepted (and created as an empty group, as OffsetCommit does) only
    /// with generation < 0, else ILLEGAL_GENERATION; a group with generation < 0 while Empty, or with
    /// generation -1, empty member id and no instance id (a producer without group metadata, or v0–v2) is
    /// accepted in any state; otherwise the member must exist (UNKNOWN_MEMBER_ID), its instance id must map to
    /// it (FENCED_INSTANCE_ID) and the generation must be the group's (ILLEGAL_GENERATION). A Dead group gives
    /// COORDINATOR_NOT_AVAILABLE, an unstorable group id INVALID_GROUP_ID. Per partition:
    /// OFFSET_METADATA_TOO_LARGE, UNKNOWN_TOPIC_OR_PARTITION (unstorable topic name).
    pub fn txn_offset_commit(
        &mut self,
        now_ms: i64,
        req: &TxnOffsetCommitRequest,
    ) -> Outcome<OffsetCommitResult> {
        let mut fx = self.fire_due(now_ms);
        let group_error = self.validate_txn_offset_commit(now_ms, req);
        let mut result = Vec::with_capacity(req.topics.len());
        for (topic, partitions) in &req.topics {
            let mut presp = Vec::with_capacity(partitions.len());
            for p in partitions {
                let metadata = p.committed_metadata.clone().unwrap_or_default();
                let code = self.offset_commit_error(group_error, topic, &metadata);
                let code = if code != ErrorCode::NONE {
                    code
                } else {
                    let value = OffsetCommitValue {
                        offset: p.committed_offset,
                        leader_epoch: p.committed_leader_epoch,
                        metadata,
                        commit_timestamp: now_ms,
                        expire_timestamp: -1,
                    };
                    fx.push(Effect::PersistTransactional {
                        producer_id: req.producer_id,
                        producer_epoch: req.producer_epoch,
                        record: GroupRecord::OffsetCommit {
                            group: req.group_id.clone(),
                            topic: topic.clone(),
                            partition: p.partition_index,
                            value: Some(value.clone()),
                        },
                    });
                    let order = self.next_order();
                    self.put_pending(
                        req.producer_id,
                        &req.group_id,
                        topic,
                        p.partition_index,
                        value,
                        order,
                    );
                    ErrorCode::NONE
                };
                presp.push((p.partition_index, code));
            }
            result.push((topic.clone(), presp));
        }
        Outcome {
            response: result,
            effects: fx,
        }
    }

    /// Kafka's `validateTransactionalOffsetCommit` with `ClassicGroup.validateOffsetCommit(isTransactional)`.
    fn validate_txn_offset_commit(
        &mut self,
        now_ms: i64,
        req: &TxnOffsetCommitRequest,
    ) -> ErrorCode {
        if too_long(&req.group_id) {
            return ErrorCode::INVALID_GROUP_ID;
        }
        let (member, epoch) = (&req.member_id, req.generation_id);
        if let Some(code) = self.validate_consumer_commit(&req.group_id, member, epoch, None) {
            return code;
        }
        let Some(g) = self.groups.get(&req.group_id) else {
            if req.generation_id < 0 {
                let group = ClassicGroup::new(req.group_id.clone(), now_ms);
                self.groups.insert(req.group_id.clone(), group);
                return ErrorCode::NONE;
            }
            return ErrorCode::ILLEGAL_GENERATION;
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
        }
        ErrorCode::NONE
    }

    /// A transaction of `producer_id` ended (its COMMIT or ABORT marker was written to the groups'
    /// `__consumer_offsets` partition): completes its pending offsets of every group (Kafka's
    /// `replayEndTransactionMarker`). See [`complete_transaction_for`](Self::complete_transaction_for).
    pub fn complete_transaction(
        &mut self,
        now_ms: i64,
        producer_id: ProducerId,
        commit: bool,
    ) -> Vec<Effect> {
        self.complete_transaction_for(now_ms, producer_id, commit, |_| true)
    }

    /// Completes the pending offsets of `producer_id` for the groups with `belongs(group_id)` true (those of
    /// the `__consumer_offsets` partition the marker went to; Kafka completes per partition). `commit`: each
    /// pending offset becomes the committed one unless a later record already stored an offset for its
    /// partition (Kafka's `recordOffset` rule); abort: they are dropped. No records are written (the marker
    /// is the record). Returns the effects of the timers due at `now_ms`. Unknown producers: nothing happens.
    pub fn complete_transaction_for(
        &mut self,
        now_ms: i64,
        producer_id: ProducerId,
        commit: bool,
        belongs: impl Fn(&str) -> bool,
    ) -> Vec<Effect> {
        let fx = self.fire_due(now_ms);
        self.end_transaction(producer_id, commit, belongs);
        fx
    }

    /// Moves (commit) or drops (abort) the pending offsets of `producer_id` for the groups `belongs` picks.
    pub(super) fn end_transaction(
        &mut self,
        producer_id: ProducerId,
        commit: bool,
        belongs: impl Fn(&str) -> bool,
    ) {
        let Some(by_group) = self.pending.get_mut(&producer_id) else {
            return;
        };
        let ended: Vec<String> = by_group.keys().filter(|g| belongs(g)).cloned().collect();
        let mut done = Vec::with_capacity(ended.len());
        for gid in ended {
            if let Some(offsets) = by_group.remove(&gid) {
                done.push((gid, offsets));
            }
        }
        if by_group.is_empty() {
            self.pending.remove(&producer_id);
        }
        if !commit {
            return;
        }
        for (gid, by_topic) in done {
            for (topic, parts) in by_topic {
                for (p, pending) in parts {
                    if pending.superseded {
                        continue;
                    }
                    self.supersede_pending(&gid, &topic, p, Some(pending.order));
                    self.offsets
                        .entry(gid.clone())
                        .or_default()
                        .entry(topic.clone())
                        .or_default()
                        .insert(p, pending.value);
                }
            }
        }
    }

    /// True if some open transaction has a pending offset for the partition (Kafka's
    /// `hasPendingTransactionalOffsets`): OffsetFetch with `require_stable` answers UNSTABLE_OFFSET_COMMIT
    /// for it.
    pub fn has_pending_transactional_offsets(
        &self,
        group_id: &str,
        topic: &str,
        partition: i32,
    ) -> bool {
        self.pending.values().any(|by_group| {
            by_group
                .get(group_id)
                .and_then(|t| t.get(topic))
                .is_some_and(|ps| ps.contains_key(&partition))
        })
    }

    /// True if some open transaction has pending offsets for the group.
    pub fn has_open_transactions(&self, group_id: &str) -> bool {
        self.pending
            .values()
            .any(|by_group| by_group.contains_key(group_id))
    }

    /// The pending offsets of `producer_id` for `partitions` ((topic, partition) pairs) of `group_id`, and
    /// whether the group exists: what [`restore_txn_offsets`](Self::restore_txn_offsets) puts back when a
    /// TxnOffsetCommit's records could not be written.
    pub fn txn_offsets_snapshot(
        &self,
        producer_id: ProducerId,
        group_id: &str,
        partitions: &[(String, i32)],
    ) -> TxnOffsetsSnapshot {
        let by_topic = self.pending.get(&producer_id).and_then(|g| g.get(group_id));
        TxnOffsetsSnapshot {
            producer_id,
            group_id: group_id.to_string(),
            partitions: partitions
                .iter()
                .map(|(t, p)| {
                    let v = by_topic.and_then(|b| b.get(t)).and_then(|ps| ps.get(p));
                    (t.clone(), *p, v.cloned())
                })
                .collect(),
            created_group: !self.groups.contains_key(group_id),
        }
    }

    /// Puts back what [`txn_offsets_snapshot`](Self::txn_offsets_snapshot) took; a group the failed commit
    /// created is removed again if it holds nothing. No records.
    pub fn restore_txn_offsets(&mut self, snapshot: TxnOffsetsSnapshot) {
        let TxnOffsetsSnapshot {
            producer_id,
            group_id,
            partitions,
            created_group,
        } = snapshot;
        for (topic, p, v) in partitions {
            match v {
                Some(v) => {
                    self.pending
                        .entry(producer_id)
                        .or_default()
                        .entry(group_id.clone())
                        .or_default()
                        .entry(topic)
                        .or_default()
                        .insert(p, v);
                }
                None => remove_pending(&mut self.pending, producer_id, &group_id, &topic, p),
            }
        }
        let empty = self
            .groups
            .get(&group_id)
            .is_some_and(|g| g.members.is_empty() && g.protocol_type.is_none());
        if created_group
            && empty
            && !self.offsets.contains_key(&group_id)
            && !self.has_open_transactions(&group_id)
        {
            self.groups.remove(&group_id);
        }
    }

    /// The order of the next record produced live.
    pub(super) fn next_order(&mut self) -> i64 {
        let o = self.next_record_order;
        self.next_record_order = o.saturating_add(1);
        o
    }

    /// Stores a pending offset of `producer_id` with record order `order`.
    pub(super) fn put_pending(
        &mut self,
        producer_id: ProducerId,
        group: &str,
        topic: &str,
        partition: i32,
        value: OffsetCommitValue,
        order: i64,
    ) {
        self.pending
            .entry(producer_id)
            .or_default()
            .entry(group.to_string())
            .or_default()
            .entry(topic.to_string())
            .or_default()
            .insert(
                partition,
                PendingOffset {
                    value,
                    order,
                    superseded: false,
                },
            );
    }

    /// An offset for the partition was stored by a record of order `order` (`None`: a record later than
    /// every pending one): every pending offset of an earlier record is superseded.
    pub(super) fn supersede_pending(
        &mut self,
        group: &str,
        topic: &str,
        partition: i32,
        order: Option<i64>,
    ) {
        for by_group in self.pending.values_mut() {
            if let Some(p) = by_group
                .get_mut(group)
                .and_then(|t| t.get_mut(topic))
                .and_then(|ps| ps.get_mut(&partition))
            {
                if order.is_none_or(|o| p.order < o) {
                    p.superseded = true;
                }
            }
        }
    }

    /// The partition's offset was deleted (a tombstone): every pending offset for it goes too (Kafka's
    /// replay of an offset tombstone).
    pub(super) fn drop_pending(&mut self, group: &str, topic: &str, partition: i32) {
        let producers: Vec<ProducerId> = self.pending.keys().copied().collect();
        for pid in producers {
            remove_pending(&mut self.pending, pid, group, topic, partition);
        }
    }

    /// The group was deleted or unloaded: its pending offsets go too.
    pub(super) fn drop_pending_group(&mut self, group: &str) {
        self.pending.retain(|_, by_group| {
            by_group.remove(group);
            !by_group.is_empty()
        });
    }

    /// The topics were deleted: every pending offset for them goes, with a tombstone for each partition that
    /// has no committed offset (those get theirs from the committed offsets' deletion).
    pub(super) fn delete_topics_pending(&mut self, topics: &[String], fx: &mut Vec<Effect>) {
        let mut gone = std::collections::BTreeSet::new();
        for by_group in self.pending.values_mut() {
            for (gid, by_topic) in by_group.iter_mut() {
                for topic in topics {
                    if let Some(parts) = by_topic.remove(topic) {
                        gone.extend(parts.into_keys().map(|p| (gid.clone(), topic.clone(), p)));
                    }
                }
            }
            by_group.retain(|_, by_topic| !by_topic.is_empty());
        }
        self.pending.retain(|_, by_group| !by_group.is_empty());
        self.tombstone_uncommitted(gone, fx);
    }

    /// The group is deleted: its pending offsets go, with a tombstone for each partition that has no
    /// committed offset (Kafka's `deleteAllOffsets`).
    pub(super) fn delete_group_pending(&mut self, group: &str, fx: &mut Vec<Effect>) {
        let mut gone = std::collections::BTreeSet::new();
        for by_group in self.pending.values() {
            for (topic, parts) in by_group.get(group).into_iter().flatten() {
                gone.extend(parts.keys().map(|p| (group.to_string(), topic.clone(), *p)));
            }
        }
        self.drop_pending_group(group);
        self.tombstone_uncommitted(gone, fx);
    }

    fn tombstone_uncommitted(
        &self,
        partitions: std::collections::BTreeSet<(String, String, i32)>,
        fx: &mut Vec<Effect>,
    ) {
        for (group, topic, partition) in partitions {
            let committed = self
                .offsets
                .get(&group)
                .and_then(|t| t.get(&topic))
                .is_some_and(|ps| ps.contains_key(&partition));
            if !committed {
                fx.push(Effect::Persist(GroupRecord::OffsetCommit {
                    group,
                    topic,
                    partition,
                    value: None,
                }));
            }
        }
    }
}

/// The partitions of `topic` with a pending offset of `group` (any producer), ascending.
pub(super) fn pending_partitions(pending: &PendingStore, group: &str, topic: &str) -> Vec<i32> {
    let mut ps: Vec<i32> = pending
        .values()
        .filter_map(|g| g.get(group).and_then(|t| t.get(topic)))
        .flat_map(|ps| ps.keys().copied())
        .collect();
    ps.sort_unstable();
    ps.dedup();
    ps
}

/// Removes one pending offset, pruning empty maps.
fn remove_pending(
    pending: &mut PendingStore,
    producer_id: ProducerId,
    group: &str,
    topic: &str,
    partition: i32,
) {
    let Some(by_group) = pending.get_mut(&producer_id) else {
        return;
    };
    if let Some(by_topic) = by_group.get_mut(group) {
        if let Some(parts) = by_topic.get_mut(topic) {
            parts.remove(&partition);
            if parts.is_empty() {
                by_topic.remove(topic);
            }
        }
        if by_topic.is_empty() {
            by_group.remove(group);
        }
    }
    if by_group.is_empty() {
        pending.remove(&producer_id);
    }
}
