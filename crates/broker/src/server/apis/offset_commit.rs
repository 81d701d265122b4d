//! OffsetCommit (key 8), v2–9. Source: Kafka protocol guide; KIP-211 (no retention time, v5+), KIP-320
//! (committed leader epoch, v6+), KIP-345 (group instance id, v7+), KIP-447 (GROUP_ID_NOT_FOUND for unknown
//! groups with a generation, v9+).
//!
//! Topics this broker does not know, and partitions a known topic does not have, get UNKNOWN_TOPIC_OR_PARTITION
//! (3) without reaching the coordinator, as in Kafka. Commits from outside group management (generation -1, empty member id) are stored for an Empty
//! (or new) group and refused for an active one. If the records cannot be written, the partitions that would
//! have succeeded get the write error: NOT_COORDINATOR (16) when this broker no longer leads the group's
//! `__consumer_offsets` partition, UNKNOWN_SERVER_ERROR (-1) when they can never fit (larger than the
//! partition's max.message.bytes), else COORDINATOR_NOT_AVAILABLE (15); the committed offsets then stay what
//! they were, as Kafka reverts a failed coordinator write.
//! In cluster mode a group coordinated elsewhere gets NOT_COORDINATOR on every partition.
//! [`handle`] answers once the records are in the leader log (acks=1); [`handle_async`] also waits for the
//! ISR (Kafka's acks=all for commits) and is the one to dispatch to.
//! v10 (topic ids) is not served.

use protocol::error::ErrorCode;
use protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use protocol::messages::{OffsetCommitRequest, OffsetCommitResponse};

use super::KafkaApis;
use crate::group_coordinator::{CoordinatorError, Written};
use crate::server::context::{Denied, RequestContext};
use authorizer::{AclOperation, ResourceType};

/// The coordinator's per-topic, per-partition commit results.
type CommitResult = coordinator::OffsetCommitResult;

/// What remains to answer after the request has been checked.
enum Prepared {
    /// Answered without the coordinator.
    Done(OffsetCommitResponse),
    /// Ask the coordinator: the coordinator request, and per request topic its partition count (`None`:
    /// unknown topic). Partitions outside `0..count` are answered UNKNOWN_TOPIC_OR_PARTITION here.
    Commit(coordinator::OffsetCommitRequest, Vec<Option<i32>>),
}

/// Commits the offsets; one result per requested partition, in request order. Answers once the records have
/// reached the `__consumer_offsets` HighWatermark (every ISR member has them), as Kafka's coordinator writes
/// commits with acks=all.
pub async fn handle_async(
    apis: &KafkaApis,
    ctx: &RequestContext,
    mut request: OffsetCommitRequest,
) -> OffsetCommitResponse {
    // Kafka: READ on the group (else every partition GROUP_AUTHORIZATION_FAILED), READ on each topic (else
    // its partitions TOPIC_AUTHORIZATION_FAILED, and they are not committed).
    if let Err(d) = ctx.authorize(AclOperation::Read, ResourceType::Group, &request.group_id) {
        return all_with(&request, ErrorCode::from(d).0);
    }
    let (allowed, denied): (Vec<_>, Vec<_>) = std::mem::take(&mut request.topics)
        .into_iter()
        .partition(|t| ctx.is_allowed(AclOperation::Read, ResourceType::Topic, &t.name));
    request.topics = allowed;
    let denied = OffsetCommitRequest {
        topics: denied,
        ..Default::default()
    };
    let mut response = match prepare(apis, ctx, &request) {
        Prepared::Done(r) => r,
        Prepared::Commit(req, known) => {
            let outcome = apis.groups.commit_offsets(&req).await;
            finish(&request, known, outcome)
        }
    };
    let code = ErrorCode::from(Denied(ResourceType::Topic)).0;
    response.topics.extend(all_with(&denied, code).topics);
    response
}

/// Every requested partition with `code`.
fn all_with(request: &OffsetCommitRequest, code: i16) -> OffsetCommitResponse {
    OffsetCommitResponse {
        topics: request
            .topics
            .iter()
            .map(|t| OffsetCommitResponseTopic {
                name: t.name.clone(),
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| OffsetCommitResponsePartition {
                        partition_index: p.partition_index,
                        error_code: code,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// Validates the group id, splits off unknown topics and builds the coordinator request.
fn prepare(apis: &KafkaApis, ctx: &RequestContext, request: &OffsetCommitRequest) -> Prepared {
    let version = ctx.api_version();
    if request.group_id.is_empty() {
        return Prepared::Done(all_with(request, ErrorCode::INVALID_GROUP_ID.0));
    }
    if let Err(code) = apis.groups.check_coordinator(&request.group_id) {
        return Prepared::Done(all_with(request, ErrorCode::from(code).0));
    }
    let known: Vec<Option<i32>> = request
        .topics
        .iter()
        .map(|t| apis.metadata.topic(&t.name).map(|m| m.partitions))
        .collect();
    let exists = |count: Option<i32>, p: i32| count.is_some_and(|n| (0..n).contains(&p));
    let any = request
        .topics
        .iter()
        .zip(&known)
        .any(|(t, k)| t.partitions.iter().any(|p| exists(*k, p.partition_index)));
    if !any {
        return Prepared::Done(all_with(request, ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.0));
    }
    let req = coordinator::OffsetCommitRequest {
        api_version: version,
        group_id: request.group_id.clone(),
        generation_id: request.generation_id_or_member_epoch,
        member_id: request.member_id.clone(),
        group_instance_id: request.group_instance_id.clone(),
        retention_time_ms: if version <= 4 {
            request.retention_time_ms
        } else {
            -1
        },
        topics: request
            .topics
            .iter()
            .zip(&known)
            .filter(|(_, k)| k.is_some())
            .map(|(t, k)| {
                (
                    t.name.clone(),
                    t.partitions
                        .iter()
                        .filter(|p| exists(*k, p.partition_index))
                        .map(|p| coordinator::OffsetCommitPartition {
                            partition_index: p.partition_index,
                            committed_offset: types::Offset(p.committed_offset),
                            committed_leader_epoch: types::LeaderEpoch(p.committed_leader_epoch),
                            committed_metadata: p.committed_metadata.clone(),
                        })
                        .collect(),
                )
            })
            .collect(),
    };
    Prepared::Commit(req, known)
}

/// Builds the response from the coordinator's outcome (requests without a known topic never reach it).
fn finish(
    request: &OffsetCommitRequest,
    known: Vec<Option<i32>>,
    outcome: Result<(CommitResult, Written), CoordinatorError>,
) -> OffsetCommitResponse {
    let mut results = match outcome {
        Ok((mut r, written)) => {
            if let Err(e) = written {
                for (_, parts) in r.iter_mut() {
                    for (_, code) in parts.iter_mut() {
                        if *code == ErrorCode::NONE {
                            *code = e.into();
                        }
                    }
                }
            }
            r.into_iter()
        }
        Err(code) => return all_with(request, ErrorCode::from(code).0),
    };
    let unknown = ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.0;
    OffsetCommitResponse {
        topics: request
            .topics
            .iter()
            .zip(known)
            .map(|(t, known)| {
                let partitions = if let Some(count) = known {
                    // The coordinator answered the partitions that exist, in request order.
                    let mut answered = results
                        .next()
                        .map(|(_, ps)| ps)
                        .unwrap_or_default()
                        .into_iter();
                    t.partitions
                        .iter()
                        .map(|p| {
                            let error_code = if (0..count).contains(&p.partition_index) {
                                answered.next().map_or(unknown, |(_, code)| code.0)
                            } else {
                                unknown
                            };
                            OffsetCommitResponsePartition {
                                partition_index: p.partition_index,
                                error_code,
                                ..Default::default()
                            }
                        })
                        .collect()
                } else {
                    t.partitions
                        .iter()
                        .map(|p| OffsetCommitResponsePartition {
                            partition_index: p.partition_index,
                            error_code: unknown,
                            ..Default::default()
                        })
                        .collect()
                };
                OffsetCommitResponseTopic {
                    name: t.name.clone(),
                    partitions,
                    ..Default::default()
                }
            })
            .collect(),
        ..Default::default()
    }
}
