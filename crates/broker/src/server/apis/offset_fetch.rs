//! OffsetFetch (key 9), v1–9. Source: Kafka protocol guide; KIP-88 (null topics = all, v2+), KIP-320 (leader
//! epoch, v5+), KIP-447 (require_stable, v7+), KIP-709 (several groups per request, v8+), KIP-848 (member id /
//! epoch, v9+: a consumer-group member fetches at its current epoch, else STALE_MEMBER_EPOCH (113) or
//! UNKNOWN_MEMBER_ID (25) for the group; classic groups ignore them).
//!
//! Partitions without a committed offset get offset -1, leader epoch -1 and metadata "" with no error; an
//! unknown group is answered the same way. v1–v7 carry one group (v1 has no top-level error field: errors go
//! to every partition); v8+ a list, each group checked on its own (cluster mode: NOT_COORDINATOR (16) for a
//! group coordinated elsewhere, COORDINATOR_LOAD_IN_PROGRESS (14) while its partition loads).
//! `require_stable` (v7+, KIP-447; one flag for every group of a v8+ request): a partition with a pending
//! transactional offset (a TxnOffsetCommit whose transaction has not ended) answers UNSTABLE_OFFSET_COMMIT (88)
//! on that partition, with offset -1, leader epoch -1 and metadata "", instead of its committed offset; the
//! consumer retries until the transaction's marker completes it (Kafka's `OffsetMetadataManager.fetchOffsets`).
//! Without the flag pending offsets are simply not visible.
//! v10 (topic ids) is not served.

use protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use protocol::messages::{OffsetFetchRequest, OffsetFetchResponse};

use super::KafkaApis;
use crate::group_coordinator::CoordinatorError;
use crate::server::context::{Denied, RequestContext};
use authorizer::{AclOperation, ResourceType};
use protocol::error::ErrorCode;
use types::{LeaderEpoch, Offset};

/// One group's answer: the coordinator's result, or a group-level error code. Kafka's checks: DESCRIBE on the
/// group (else GROUP_AUTHORIZATION_FAILED), DESCRIBE on each topic — a requested topic without it answers
/// TOPIC_AUTHORIZATION_FAILED per partition, and an all-topics fetch leaves it out.
fn fetch(
    apis: &KafkaApis,
    ctx: &RequestContext,
    group_id: &str,
    topics: Option<Vec<(String, Vec<i32>)>>,
    require_stable: bool,
    member: (Option<&str>, i32),
) -> coordinator::OffsetFetchGroup {
    let error = |error_code: ErrorCode| coordinator::OffsetFetchGroup {
        group_id: group_id.to_string(),
        error_code,
        topics: Vec::new(),
    };
    if let Err(d) = ctx.authorize(AclOperation::Describe, ResourceType::Group, group_id) {
        return error(ErrorCode::from(d));
    }
    let all_topics = topics.is_none();
    // An empty group id is just a group nobody joined (Kafka 4 answers its offsets as −1).
    let mut r = apis
        .groups
        .read_group(group_id, |c| {
            // KIP-848 (v9+): a member of a consumer group fetches at its current epoch.
            match c.validate_offset_fetch(group_id, member.0, member.1) {
                ErrorCode::NONE => {
                    c.fetch_offsets_stable(group_id, topics.as_deref(), require_stable)
                }
                code => error(code),
            }
        })
        .unwrap_or_else(|e: CoordinatorError| error(e.into()));
    r.topics.retain_mut(|(name, parts)| {
        if ctx.is_allowed(AclOperation::Describe, ResourceType::Topic, name) {
            return true;
        }
        for p in parts.iter_mut() {
            p.committed_offset = Offset::NONE;
            p.committed_leader_epoch = LeaderEpoch::NONE;
            p.metadata = String::new();
            p.error_code = ErrorCode::from(Denied(ResourceType::Topic));
        }
        !all_topics
    });
    r
}

/// Answers the committed offsets of the requested group(s).
pub fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: OffsetFetchRequest,
) -> OffsetFetchResponse {
    let version = ctx.api_version();
    if version >= 8 {
        let groups = request
            .groups
            .into_iter()
            .map(|g| {
                let topics = g.topics.map(|ts| {
                    ts.into_iter()
                        .map(|t| (t.name, t.partition_indexes))
                        .collect()
                });
                let member = (g.member_id.as_deref(), g.member_epoch);
                let r = fetch(
                    apis,
                    ctx,
                    &g.group_id,
                    topics,
                    request.require_stable,
                    member,
                );
                group_v8(g.group_id, r)
            })
            .collect();
        return OffsetFetchResponse {
            groups,
            ..Default::default()
        };
    }
    // v1 cannot ask for all topics; an absent list there means none.
    let requested: Option<Vec<(String, Vec<i32>)>> = match request.topics {
        Some(ts) => Some(
            ts.into_iter()
                .map(|t| (t.name, t.partition_indexes))
                .collect(),
        ),
        None if version < 2 => Some(Vec::new()),
        None => None,
    };
    let require_stable = version >= 7 && request.require_stable;
    let r = fetch(
        apis,
        ctx,
        &request.group_id,
        requested.clone(),
        require_stable,
        (None, -1),
    );
    let error_code = r.error_code.0;
    let topics: Vec<OffsetFetchResponseTopic> = if !r.error_code.is_ok() && version < 2 {
        // No top-level error field: report it on every requested partition.
        requested
            .unwrap_or_default()
            .into_iter()
            .map(|(name, parts)| OffsetFetchResponseTopic {
                name,
                partitions: parts
                    .into_iter()
                    .map(|p| OffsetFetchResponsePartition {
                        partition_index: p,
                        committed_offset: -1,
                        committed_leader_epoch: -1,
                        metadata: Some(String::new()),
                        error_code,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect()
    } else {
        r.topics.into_iter().map(topic_v1).collect()
    };
    OffsetFetchResponse {
        topics,
        error_code,
        ..Default::default()
    }
}

/// A v1–v7 topic of the coordinator's answer.
fn topic_v1(
    (name, parts): (String, Vec<coordinator::OffsetFetchPartition>),
) -> OffsetFetchResponseTopic {
    OffsetFetchResponseTopic {
        name,
        partitions: parts
            .into_iter()
            .map(|p| OffsetFetchResponsePartition {
                partition_index: p.partition_index,
                committed_offset: p.committed_offset.0,
                committed_leader_epoch: p.committed_leader_epoch.0,
                metadata: Some(p.metadata),
                error_code: p.error_code.0,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// A v8+ group of the coordinator's answer.
fn group_v8(group_id: String, r: coordinator::OffsetFetchGroup) -> OffsetFetchResponseGroup {
    OffsetFetchResponseGroup {
        group_id,
        error_code: r.error_code.0,
        topics: r
            .topics
            .into_iter()
            .map(|(name, parts)| OffsetFetchResponseTopics {
                name,
                partitions: parts
                    .into_iter()
                    .map(|p| OffsetFetchResponsePartitions {
                        partition_index: p.partition_index,
                        committed_offset: p.committed_offset.0,
                        committed_leader_epoch: p.committed_leader_epoch.0,
                        metadata: Some(p.metadata),
                        error_code: p.error_code.0,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}
