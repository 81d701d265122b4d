//! OffsetForLeaderEpoch (key 23), v2–4. Source: Kafka protocol guide; KIP-101 (truncation by leader epoch),
//! KIP-279 (the answer names the epoch whose end offset it is), KIP-320 (`current_leader_epoch` fencing).
//!
//! For each requested (partition, `leader_epoch`) the leader answers from its leader-epoch cache: the
//! requested epoch when it is the latest, with the LogEndOffset; otherwise the largest epoch ≤ the requested
//! one with the start offset of the next higher epoch; (-1, -1) when unknown. Errors per partition:
//! UNKNOWN_TOPIC_OR_PARTITION (3); FENCED_LEADER_EPOCH (74) / UNKNOWN_LEADER_EPOCH (75) for an older / newer
//! `current_leader_epoch`; NOT_LEADER_OR_FOLLOWER (6) on a non-leader, except for the debugging replica id
//! -2.

use protocol::error::ErrorCode;
use protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use protocol::messages::{OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse};
use types::LeaderEpoch;

use super::KafkaApis;
use crate::server::context::RequestContext;

/// Kafka's `DEBUGGING_REPLICA_ID`: may ask any replica.
const DEBUGGING_REPLICA_ID: i32 = -2;

/// Answers OffsetForLeaderEpoch.
pub fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: OffsetForLeaderEpochRequest,
) -> OffsetForLeaderEpochResponse {
    // v2 has no replica_id field: those requests come from consumers (leader only).
    let replica_id = if ctx.api_version() >= 3 {
        request.replica_id
    } else {
        -1
    };
    let topics = request
        .topics
        .into_iter()
        .map(|t| OffsetForLeaderTopicResult {
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    let mut r = EpochEndOffset {
                        partition: p.partition,
                        leader_epoch: -1,
                        end_offset: -1,
                        ..Default::default()
                    };
                    let Some(part) = apis.replica_manager.partition(&t.topic, p.partition) else {
                        r.error_code = ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.0;
                        return r;
                    };
                    if let Some(code) = super::fetch::check_epoch(&part, p.current_leader_epoch) {
                        r.error_code = code.0;
                        return r;
                    }
                    if replica_id != DEBUGGING_REPLICA_ID && !part.is_leader() {
                        r.error_code = ErrorCode::NOT_LEADER_OR_FOLLOWER.0;
                        return r;
                    }
                    let (epoch, end) = part.end_offset_for_epoch(LeaderEpoch(p.leader_epoch));
                    r.leader_epoch = epoch.get();
                    r.end_offset = end.get();
                    r
                })
                .collect(),
            topic: t.topic,
            ..Default::default()
        })
        .collect();
    OffsetForLeaderEpochResponse {
        topics,
        ..Default::default()
    }
}
