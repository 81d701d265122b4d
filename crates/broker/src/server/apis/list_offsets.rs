//! ListOffsets (key 2), v1–10. Source: Kafka protocol guide; KIP-79 (lookup by timestamp), KIP-734 (-3 max
//! timestamp, v7+), KIP-405 (-4 earliest local, v8+), KIP-1005 (-5 earliest pending upload, v9+).
//!
//! Only the leader answers (else NOT_LEADER_OR_FOLLOWER, 6), except for the debugging replica id -2;
//! `current_leader_epoch` is checked as in Fetch (KIP-320).
//!
//! The last fetchable offset (Kafka's `Partition.fetchOffsetForTimestamp`) is the HighWatermark for
//! `isolation_level` 0 (read_uncommitted) and the LastStableOffset for 1 (read_committed, KIP-98); any
//! other level is INVALID_REQUEST. Special timestamps: -2 earliest (LogStartOffset), -1 latest (the last
//! fetchable offset), -3 the record with the largest timestamp, -4 earliest local (LogStartOffset, nothing
//! is tiered), -5 earliest pending upload (-1: nothing is tiered). Any other value finds the first offset
//! whose timestamp is at or after it, or -1 when there is none; like -3, an offset at or past the last
//! fetchable offset is not answered (-1).

use protocol::error::ErrorCode;
use protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use protocol::messages::{ListOffsetsRequest, ListOffsetsResponse};

use super::KafkaApis;
use crate::server::context::RequestContext;
use authorizer::{AclOperation, ResourceType};
use replica::partition::IsolationLevel;

const LATEST: i64 = -1;
const EARLIEST: i64 = -2;
const MAX_TIMESTAMP: i64 = -3;
const EARLIEST_LOCAL: i64 = -4;
const EARLIEST_PENDING_UPLOAD: i64 = -5;
/// Kafka's `DEBUGGING_REPLICA_ID`: may read from any replica.
const DEBUGGING_REPLICA_ID: i32 = -2;

/// Answers a ListOffsets request.
pub fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: ListOffsetsRequest,
) -> ListOffsetsResponse {
    let leader_only = request.replica_id != DEBUGGING_REPLICA_ID;
    let isolation = IsolationLevel::from_id(request.isolation_level);
    let topics = request
        .topics
        .into_iter()
        .map(|t| {
            let denied = ctx
                .authorize(AclOperation::Describe, ResourceType::Topic, &t.name)
                .err();
            (t, denied)
        })
        .map(|(t, denied)| ListOffsetsTopicResponse {
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    let mut r = ListOffsetsPartitionResponse {
                        partition_index: p.partition_index,
                        timestamp: -1,
                        offset: -1,
                        leader_epoch: -1,
                        ..Default::default()
                    };
                    if let Some(d) = denied {
                        r.error_code = ErrorCode::from(d).0;
                        return r;
                    }
                    let Some(isolation) = isolation else {
                        r.error_code = ErrorCode::INVALID_REQUEST.0;
                        return r;
                    };
                    let Some(part) = apis.replica_manager.partition(&t.name, p.partition_index)
                    else {
                        r.error_code = ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.0;
                        return r;
                    };
                    if let Some(code) = super::fetch::check_epoch(&part, p.current_leader_epoch) {
                        r.error_code = code.0;
                        return r;
                    }
                    if leader_only && !part.is_leader() {
                        r.error_code = ErrorCode::NOT_LEADER_OR_FOLLOWER.0;
                        return r;
                    }
                    let epoch = part.leader_epoch();
                    let log = part.offsets();
                    let last_fetchable = match isolation {
                        IsolationLevel::ReadUncommitted => log.high_watermark(),
                        IsolationLevel::ReadCommitted => part.last_stable_offset(),
                    };
                    r.leader_epoch = epoch.get();
                    match p.timestamp {
                        LATEST => r.offset = last_fetchable.get(),
                        EARLIEST | EARLIEST_LOCAL => r.offset = log.log_start_offset().get(),
                        EARLIEST_PENDING_UPLOAD => {}
                        MAX_TIMESTAMP | 0.. => {
                            if let Ok(Some((offset, ts))) =
                                part.fetch_offset_by_timestamp(p.timestamp)
                            {
                                if offset < last_fetchable {
                                    r.offset = offset.get();
                                    r.timestamp = ts;
                                }
                            }
                        }
                        _ => {
                            r.error_code = ErrorCode::INVALID_REQUEST.0;
                            r.leader_epoch = -1;
                        }
                    }
                    r
                })
                .collect(),
            name: t.name,
            ..Default::default()
        })
        .collect();
    ListOffsetsResponse {
        topics,
        ..Default::default()
    }
}
