//! DeleteRecords (key 21), v0–2. Source: Kafka protocol guide; KIP-107.
//!
//! Advances a partition's LogStartOffset to the requested offset (-1 means the HighWatermark); whole
//! segments below it are deleted. An offset above the HighWatermark (or below -1) gets OFFSET_OUT_OF_RANGE
//! (1). The response carries the new low watermark (LogStartOffset). Only the leader deletes (else
//! NOT_LEADER_OR_FOLLOWER, 6); followers follow the leader's LogStartOffset through their fetches.

use protocol::error::ErrorCode;
use protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use protocol::messages::{DeleteRecordsRequest, DeleteRecordsResponse};
use types::Offset;

use super::errors::storage_error_code;
use super::KafkaApis;
use crate::server::context::RequestContext;
use authorizer::{AclOperation, ResourceType};

/// Answers DeleteRecords.
pub fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: DeleteRecordsRequest,
) -> DeleteRecordsResponse {
    let topics = request
        .topics
        .into_iter()
        .map(|t| DeleteRecordsTopicResult {
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    let mut r = DeleteRecordsPartitionResult {
                        partition_index: p.partition_index,
                        low_watermark: -1,
                        ..Default::default()
                    };
                    // Kafka: DELETE on the topic.
                    if let Err(d) =
                        ctx.authorize(AclOperation::Delete, ResourceType::Topic, &t.name)
                    {
                        r.error_code = ErrorCode::from(d).0;
                        return r;
                    }
                    let Some(part) = apis.replica_manager.partition(&t.name, p.partition_index)
                    else {
                        r.error_code = ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.0;
                        return r;
                    };
                    if !part.is_leader() {
                        r.error_code = ErrorCode::NOT_LEADER_OR_FOLLOWER.0;
                        return r;
                    }
                    let log = part.offsets();
                    let hw = log.high_watermark();
                    let target = if p.offset == -1 { hw } else { Offset(p.offset) };
                    if target.get() < 0 || target > hw {
                        r.error_code = ErrorCode::OFFSET_OUT_OF_RANGE.0;
                        return r;
                    }
                    match part.delete_records_before(target) {
                        Ok(low) => r.low_watermark = low.get(),
                        Err(e) => r.error_code = storage_error_code(&e).0,
                    }
                    r
                })
                .collect(),
            name: t.name,
            ..Default::default()
        })
        .collect();
    DeleteRecordsResponse {
        topics,
        ..Default::default()
    }
}
