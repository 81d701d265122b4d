//! OffsetCommit (key 8), v2–9. Source: Kafka protocol guide; KIP-211 (no retention time, v5+), KIP-320
//! (committed leader epoch, v6+), KIP-345 (group instance id, v7+), KIP-447 (GROUP_ID_NOT_FOUND for unknown
//! groups with a generation, v9+).
//!
//! Topics this broker does not know get UNKNOWN_TOPIC_OR_PARTITION (3) without reaching the coordinator, as
//! in Kafka. Commits from outside group management (generation -1, empty member id) are stored for an Empty
//! (or new) group and refused for an active one. If the records cannot be written, the partitions that would
//! have succeeded get COORDINATOR_NOT_AVAILABLE (15) (the commit stays in memory until restart).
//! v10 (topic ids) is not served.

use protocol::error::ErrorCode;
use protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use protocol::messages::{OffsetCommitRequest, OffsetCommitResponse};
use protocol::RequestHeader;

use super::KafkaApis;

/// Commits the offsets; one result per requested partition, in request order.
pub fn handle(
    apis: &KafkaApis,
    header: &RequestHeader,
    request: OffsetCommitRequest,
) -> OffsetCommitResponse {
    let version = header.request_api_version;
    let all_with = |code: i16| OffsetCommitResponse {
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
    };
    if request.group_id.is_empty() {
        return all_with(coordinator::error::INVALID_GROUP_ID);
    }
    let known: Vec<bool> = request
        .topics
        .iter()
        .map(|t| apis.metadata.topic(&t.name).is_some())
        .collect();
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
            .filter(|(_, k)| **k)
            .map(|(t, _)| {
                (
                    t.name.clone(),
                    t.partitions
                        .iter()
                        .map(|p| coordinator::OffsetCommitPartition {
                            partition_index: p.partition_index,
                            committed_offset: p.committed_offset,
                            committed_leader_epoch: p.committed_leader_epoch,
                            committed_metadata: p.committed_metadata.clone(),
                        })
                        .collect(),
                )
            })
            .collect(),
    };
    let mut results = if req.topics.is_empty() {
        Vec::new().into_iter()
    } else {
        match apis.groups.with(|c, now| c.commit_offsets(now, &req)) {
            Ok((mut r, persisted)) => {
                if !persisted {
                    for (_, parts) in r.iter_mut() {
                        for (_, code) in parts.iter_mut() {
                            if *code == 0 {
                                *code = ErrorCode::COORDINATOR_NOT_AVAILABLE.0;
                            }
                        }
                    }
                }
                r.into_iter()
            }
            Err(code) => return all_with(code.0),
        }
    };
    let unknown = ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.0;
    OffsetCommitResponse {
        topics: request
            .topics
            .iter()
            .zip(known)
            .map(|(t, known)| {
                let partitions = if known {
                    results
                        .next()
                        .map(|(_, ps)| ps)
                        .unwrap_or_default()
                        .into_iter()
                        .map(|(p, code)| OffsetCommitResponsePartition {
                            partition_index: p,
                            error_code: code,
                            ..Default::default()
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
