//! Committed offsets: OffsetCommit, OffsetFetch, OffsetDelete, deleted topics, and the retention check
//! (Kafka's `OffsetMetadataManager`).

use std::collections::BTreeSet;

use types::{ErrorCode, LeaderEpoch, Offset};

use super::txn_offsets::pending_partitions;
use super::{too_long, validate_member, GroupCoordinator, OffsetStore};
use crate::api::{
    Effect, OffsetCommitRequest, OffsetCommitResult, OffsetDeleteResult, OffsetFetchGroup,
    OffsetFetchPartition, Outcome,
};
use crate::group::{ClassicGroup, GroupState, CONSUMER_PROTOCOL_TYPE};
use crate::records::{GroupRecord, OffsetCommitValue};

impl GroupCoordinator {
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
        let mut fx = self.fire_due(now_ms);
        let group_error = self.validate_offset_commit(now_ms, req, &mut fx);
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
                    self.next_order();
                    self.supersede_pending(&req.group_id, topic, p.partition_index, None);
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

    fn validate_offset_commit(
        &mut self,
        now_ms: i64,
        req: &OffsetCommitRequest,
        fx: &mut Vec<Effect>,
    ) -> ErrorCode {
        if too_long(&req.group_id) {
            return ErrorCode::INVALID_GROUP_ID;
        }
        if self.share_groups.contains_key(&req.group_id) {
            // Share groups keep their progress in share-partition state, not in committed offsets.
            return ErrorCode::GROUP_ID_NOT_FOUND;
        }
        let (member, epoch, version) = (&req.member_id, req.generation_id, Some(req.api_version));
        if let Some(code) = self.validate_consumer_commit(&req.group_id, member, epoch, version) {
            return code;
        }
        let (groups, mut cx) = self.split(now_ms, fx);
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
                    cx.reschedule_heartbeat(g, &req.member_id, session);
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
        self.fetch_offsets_stable(group_id, topics, false)
    }

    /// [`fetch_offsets`](Self::fetch_offsets) with OffsetFetch v7+ `require_stable` (KIP-447): when true, a
    /// partition with a pending transactional offset (see
    /// [`has_pending_transactional_offsets`](Self::has_pending_transactional_offsets)) answers
    /// UNSTABLE_OFFSET_COMMIT (88) with offset -1, leader epoch -1 and metadata "" instead of its committed
    /// offset (Kafka's `fetchOffsets` / `fetchAllOffsets`; the consumer retries). When all offsets are
    /// requested only partitions with a committed offset are listed, as Kafka does.
    pub fn fetch_offsets_stable(
        &self,
        group_id: &str,
        topics: Option<&[(String, Vec<i32>)]>,
        require_stable: bool,
    ) -> OffsetFetchGroup {
        let stored = self.offsets.get(group_id);
        let unstable = |t: &str, p: i32| {
            require_stable && self.has_pending_transactional_offsets(group_id, t, p)
        };
        let to_partition = |t: &str, p: i32, v: Option<&OffsetCommitValue>| match v {
            _ if unstable(t, p) => OffsetFetchPartition {
                partition_index: p,
                committed_offset: Offset::NONE,
                committed_leader_epoch: LeaderEpoch::NONE,
                metadata: String::new(),
                error_code: ErrorCode::UNSTABLE_OFFSET_COMMIT,
            },
            Some(v) => OffsetFetchPartition {
                partition_index: p,
                committed_offset: v.offset,
                committed_leader_epoch: v.leader_epoch,
                metadata: v.metadata.clone(),
                error_code: ErrorCode::NONE,
            },
            None => OffsetFetchPartition {
                partition_index: p,
                committed_offset: Offset::NONE,
                committed_leader_epoch: LeaderEpoch::NONE,
                metadata: String::new(),
                error_code: ErrorCode::NONE,
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
                            .map(|p| to_partition(t, *p, tp.and_then(|m| m.get(p))))
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
                                ps.iter()
                                    .map(|(p, v)| to_partition(t, *p, Some(v)))
                                    .collect(),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default(),
        };
        OffsetFetchGroup {
            group_id: group_id.to_string(),
            error_code: ErrorCode::NONE,
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
        let fx = self.fire_due(now_ms);
        let error = |code: ErrorCode| OffsetDeleteResult {
            error_code: code,
            topics: Vec::new(),
        };
        let consumer = self.consumer_groups.contains_key(group_id);
        let Some(g) = self.groups.get(group_id).filter(|_| !consumer) else {
            let code = match consumer {
                true => ErrorCode::NONE,
                false => ErrorCode::GROUP_ID_NOT_FOUND,
            };
            if code != ErrorCode::NONE {
                return Outcome {
                    response: error(code),
                    effects: fx,
                };
            }
            return self.delete_offsets_unchecked(fx, group_id, topics);
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
        self.delete_offsets_unchecked(fx, group_id, topics)
    }

    /// OffsetDelete after the group checks: each partition's offset is tombstoned unless a member subscribes
    /// to its topic.
    fn delete_offsets_unchecked(
        &mut self,
        mut fx: Vec<Effect>,
        group_id: &str,
        topics: &[(String, Vec<i32>)],
    ) -> Outcome<OffsetDeleteResult> {
        let mut result = Vec::with_capacity(topics.len());
        for (topic, partitions) in topics {
            let subscribed = (self.groups.get(group_id))
                .is_some_and(|g| g.is_subscribed_to_topic(topic))
                || self.consumer_group_subscribes(group_id, topic);
            let mut presp = Vec::with_capacity(partitions.len());
            for p in partitions {
                if subscribed {
                    presp.push((*p, ErrorCode::GROUP_SUBSCRIBED_TO_TOPIC));
                    continue;
                }
                let pending = self.has_pending_transactional_offsets(group_id, topic, *p);
                self.drop_pending(group_id, topic, *p);
                if remove_offset(&mut self.offsets, group_id, topic, *p) || pending {
                    fx.push(Effect::Persist(GroupRecord::OffsetCommit {
                        group: group_id.to_string(),
                        topic: topic.clone(),
                        partition: *p,
                        value: None,
                    }));
                }
                presp.push((*p, ErrorCode::NONE));
            }
            result.push((topic.clone(), presp));
        }
        Outcome {
            response: OffsetDeleteResult {
                error_code: ErrorCode::NONE,
                topics: result,
            },
            effects: fx,
        }
    }

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

    /// Every topic some group has a committed offset for.
    pub fn committed_topics(&self) -> std::collections::BTreeSet<String> {
        self.offsets
            .values()
            .flat_map(|by_topic| by_topic.keys().cloned())
            .collect()
    }

    /// The topics were deleted (Kafka's `onPartitionsDeleted`): every group's committed offsets for them are
    /// removed (tombstones written), and a group left with no offsets that is Empty (or was only offsets)
    /// is deleted too. So a topic re-created under the same name is read from its start (or by
    /// `auto.offset.reset`), not from an offset of the old log.
    pub fn delete_topics_offsets(&mut self, now_ms: i64, topics: &[String]) -> Vec<Effect> {
        let mut fx = self.fire_due(now_ms);
        self.delete_topics_pending(topics, &mut fx);
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
            if !touched || !by_topic.is_empty() || self.has_open_transactions(&gid) {
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

    /// Offsets retention (Kafka's `cleanupGroupMetadata`): expires offsets per `offsets.retention.minutes` —
    /// for an Empty group counted from when it became empty (else from the commit), for offsets-only groups from
    /// the commit, for Stable "consumer" groups only offsets of topics no member subscribes to; explicit v2–v4
    /// expire timestamps win. Empty groups left without offsets are deleted (tombstone).
    pub(super) fn cleanup_expired_offsets(&mut self, now: i64, fx: &mut Vec<Effect>) {
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
                            let pending = pending_partitions(&self.pending, &gid, topic);
                            parts.retain(|p, v| {
                                // Not expired while a transaction has a pending offset for it.
                                if pending.contains(p) {
                                    all_expired = false;
                                    return true;
                                }
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
            if all_expired
                && group.is_some_and(|g| g.is(GroupState::Empty))
                && !self
                    .pending
                    .values()
                    .any(|by_group| by_group.contains_key(&gid))
            {
                self.groups.remove(&gid);
                self.timers.cancel_group(&gid);
                fx.push(Effect::Persist(GroupRecord::GroupMetadata {
                    group: gid,
                    value: None,
                }));
            }
        }
    }
}

/// Removes one offset; true if it existed.
pub(super) fn remove_offset(
    offsets: &mut OffsetStore,
    group: &str,
    topic: &str,
    partition: i32,
) -> bool {
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

impl GroupCoordinator {
    /// The error of one partition of an OffsetCommit or TxnOffsetCommit: the group's error if any, else
    /// OFFSET_METADATA_TOO_LARGE (metadata over `offset.metadata.max.bytes` or unstorable), else
    /// UNKNOWN_TOPIC_OR_PARTITION (a topic name too long to store), else NONE.
    pub(super) fn offset_commit_error(
        &self,
        group_error: ErrorCode,
        topic: &str,
        metadata: &str,
    ) -> ErrorCode {
        if group_error != ErrorCode::NONE {
            group_error
        } else if metadata.len() > self.config.offset_metadata_max_bytes || too_long(metadata) {
            ErrorCode::OFFSET_METADATA_TOO_LARGE
        } else if too_long(topic) {
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
        } else {
            ErrorCode::NONE
        }
    }
}
