//! Admin operations: DescribeGroups, ListGroups, DeleteGroups, and read-only views of a group.

use bytes::Bytes;
use types::ErrorCode;

use super::GroupCoordinator;
use crate::api::{DescribedGroup, DescribedMember, Effect, ListedGroup, Outcome};
use crate::group::GroupState;
use crate::records::GroupRecord;

impl GroupCoordinator {
    /// DescribeGroups for one group. Members carry metadata and assignment only when the group is Stable.
    pub fn describe_group(&self, group_id: &str) -> DescribedGroup {
        let Some(g) = self.groups.get(group_id) else {
            return DescribedGroup {
                error_code: ErrorCode::GROUP_ID_NOT_FOUND,
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
            error_code: ErrorCode::NONE,
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
        let mut listed: Vec<ListedGroup> = self
            .groups
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
                group_type: super::consumer_admin::CLASSIC_GROUP_TYPE.to_string(),
            })
            .collect();
        listed.extend(self.list_consumer_groups(states_filter));
        listed.extend(self.list_share_groups(states_filter));
        listed.sort_by(|a, b| a.group_id.cmp(&b.group_id));
        listed
    }

    /// DeleteGroups: deletes Empty groups with all their offsets (tombstones persisted). Per group:
    /// 0, GROUP_ID_NOT_FOUND or NON_EMPTY_GROUP.
    pub fn delete_groups(
        &mut self,
        now_ms: i64,
        group_ids: &[String],
    ) -> Outcome<Vec<(String, ErrorCode)>> {
        let mut fx = self.fire_due(now_ms);
        let mut result = Vec::with_capacity(group_ids.len());
        for gid in group_ids {
            if let Some(code) = self.delete_share_group(gid, &mut fx) {
                result.push((gid.clone(), code));
                continue;
            }
            if let Some(code) = self.delete_consumer_group(gid, &mut fx) {
                if code == ErrorCode::NONE {
                    self.delete_group_offsets(gid, &mut fx);
                }
                result.push((gid.clone(), code));
                continue;
            }
            let code = match self.groups.get(gid) {
                None => ErrorCode::GROUP_ID_NOT_FOUND,
                Some(g) if g.is(GroupState::Dead) => ErrorCode::GROUP_ID_NOT_FOUND,
                Some(g) if !g.is(GroupState::Empty) => ErrorCode::NON_EMPTY_GROUP,
                Some(_) => {
                    self.delete_group_offsets(gid, &mut fx);
                    fx.push(Effect::Persist(GroupRecord::GroupMetadata {
                        group: gid.clone(),
                        value: None,
                    }));
                    self.groups.remove(gid);
                    self.timers.cancel_group(gid);
                    ErrorCode::NONE
                }
            };
            result.push((gid.clone(), code));
        }
        Outcome {
            response: result,
            effects: fx,
        }
    }

    /// Drops a deleted group's pending transactional offsets and tombstones its committed ones.
    fn delete_group_offsets(&mut self, gid: &str, fx: &mut Vec<Effect>) {
        self.delete_group_pending(gid, fx);
        for (topic, parts) in self.offsets.remove(gid).unwrap_or_default() {
            for p in parts.keys() {
                fx.push(Effect::Persist(GroupRecord::OffsetCommit {
                    group: gid.to_string(),
                    topic: topic.clone(),
                    partition: *p,
                    value: None,
                }));
            }
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

    /// Every group's state and member count, in group-id order: what the broker's group metrics count
    /// (Kafka's `NumGroups<State>` gauges, kafka_exporter's `kafka_consumergroup_members`).
    pub fn group_summaries(&self) -> Vec<GroupSummary> {
        (self.groups.values())
            .map(|g| GroupSummary {
                group_id: g.group_id.clone(),
                state: g.state,
                members: g.members.len(),
                completed_rebalances: g.completed_rebalances,
            })
            .collect()
    }

    /// Rebalances completed by this coordinator since it started (Kafka's `group-completed-rebalance-count`,
    /// the group coordinator metrics' Meter: SyncGroup gave every member its assignment and the group became
    /// Stable). Groups that were unloaded or deleted still count.
    pub fn completed_rebalances(&self) -> u64 {
        self.completed_rebalances
    }

    /// Calls `f(group, topic, partition, offset)` for every committed offset, in (group, topic, partition)
    /// order, stopping after `limit` calls: the broker's consumer-lag metrics.
    pub fn for_each_committed_offset(&self, limit: usize, mut f: impl FnMut(&str, &str, i32, i64)) {
        let committed = self.offsets.iter().flat_map(|(g, topics)| {
            topics.iter().flat_map(move |(t, ps)| {
                ps.iter()
                    .map(move |(p, v)| (g.as_str(), t.as_str(), *p, v.offset.0))
            })
        });
        for (g, t, p, offset) in committed.take(limit) {
            f(g, t, p, offset);
        }
    }
}

/// One group as [`GroupCoordinator::group_summaries`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupSummary {
    /// The group id.
    pub group_id: String,
    /// Its state.
    pub state: GroupState,
    /// Its members (static and dynamic, pending ones excluded).
    pub members: usize,
    /// Rebalances it completed since it was created or loaded here.
    pub completed_rebalances: u64,
}
