//! OffsetDelete (key 47), v0. Source: Kafka protocol guide; KIP-496.
//!
//! Deletes committed offsets of partitions the group is not subscribed to. Group-level errors:
//! INVALID_GROUP_ID (24), GROUP_ID_NOT_FOUND (69), NON_EMPTY_GROUP (68), COORDINATOR_LOAD_IN_PROGRESS (14),
//! NOT_COORDINATOR (16) (cluster mode: coordinated elsewhere, or leadership lost while writing);
//! per partition: GROUP_SUBSCRIBED_TO_TOPIC (86), or UNKNOWN_TOPIC_OR_PARTITION (3) for topics this broker
//! does not know (checked before the coordinator, as in Kafka).

use protocol::error::ErrorCode;
use protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use protocol::messages::{OffsetDeleteRequest, OffsetDeleteResponse};

use super::KafkaApis;
use crate::server::context::RequestContext;
use authorizer::{AclOperation, ResourceType};

/// Deletes the offsets; per-partition results in request order.
pub async fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: OffsetDeleteRequest,
) -> OffsetDeleteResponse {
    let group_error = |code: ErrorCode| OffsetDeleteResponse {
        error_code: code.0,
        ..Default::default()
    };
    // Kafka: DELETE on the group.
    if let Err(d) = ctx.authorize(AclOperation::Delete, ResourceType::Group, &request.group_id) {
        return group_error(ErrorCode::from(d));
    }
    if request.group_id.is_empty() {
        return group_error(ErrorCode::INVALID_GROUP_ID);
    }
    let known: Vec<bool> = request
        .topics
        .iter()
        .map(|t| apis.metadata.topic(&t.name).is_some())
        .collect();
    let wanted: Vec<(String, Vec<i32>)> = request
        .topics
        .iter()
        .zip(&known)
        .filter(|(_, k)| **k)
        .map(|(t, _)| {
            (
                t.name.clone(),
                t.partitions.iter().map(|p| p.partition_index).collect(),
            )
        })
        .collect();
    let result = match apis
        .groups
        .with_group(&request.group_id, |c, now| {
            c.delete_offsets(now, &request.group_id, &wanted)
        })
        .await
    {
        Ok((r, Ok(()))) => r,
        // The tombstones were not written (NOT_COORDINATOR when leadership was lost).
        Ok((r, Err(code))) if r.error_code == ErrorCode::NONE => return group_error(code.into()),
        Ok((r, Err(_))) => r,
        Err(code) => return group_error(code.into()),
    };
    if result.error_code != ErrorCode::NONE {
        return group_error(result.error_code);
    }
    let mut results = result.topics.into_iter();
    let unknown = ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.0;
    OffsetDeleteResponse {
        error_code: 0,
        topics: request
            .topics
            .into_iter()
            .zip(known)
            .map(|(t, known)| {
                let partitions = if known {
                    results
                        .next()
                        .map(|(_, ps)| ps)
                        .unwrap_or_default()
                        .into_iter()
                        .map(|(p, code)| OffsetDeleteResponsePartition {
                            partition_index: p,
                            error_code: code.0,
                        })
                        .collect()
                } else {
                    t.partitions
                        .iter()
                        .map(|p| OffsetDeleteResponsePartition {
                            partition_index: p.partition_index,
                            error_code: unknown,
                        })
                        .collect()
                };
                OffsetDeleteResponseTopic {
                    name: t.name,
                    partitions,
                }
            })
            .collect(),
        ..Default::default()
    }
}
