//! DescribeProducers (key 61), v0: the producers with state in each partition's log, on its leader
//! (KIP-664; Kafka's `KafkaApis.handleDescribeProducersRequest` and `Partition.activeProducerState`).
//!
//! READ on the topic is required (TOPIC_AUTHORIZATION_FAILED, 29); an unknown topic or partition is
//! UNKNOWN_TOPIC_OR_PARTITION (3); a partition this broker does not lead is NOT_LEADER_OR_FOLLOWER (6).
//! Each producer carries its epoch, last sequence and timestamp (of its last retained batch, -1 when
//! none), the coordinator epoch of its last marker and the first offset of its open transaction (-1).

use protocol::error::ErrorCode;
use protocol::messages::describe_producers_response::{
    PartitionResponse, ProducerState, TopicResponse,
};
use protocol::messages::{DescribeProducersRequest, DescribeProducersResponse};

use super::KafkaApis;
use crate::server::context::RequestContext;
use authorizer::{AclOperation, ResourceType};

/// Answers each requested partition with its leader's active producers.
pub fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: DescribeProducersRequest,
) -> DescribeProducersResponse {
    let topics = (request.topics.into_iter())
        .map(|t| {
            let denied = ctx
                .authorize(AclOperation::Read, ResourceType::Topic, &t.name)
                .err();
            let known = apis.metadata.topic(&t.name).is_some();
            let partitions = (t.partition_indexes.iter())
                .map(|&index| match denied {
                    Some(d) => error(index, ErrorCode::from(d)),
                    None => describe(apis, known, &t.name, index),
                })
                .collect();
            TopicResponse {
                name: t.name,
                partitions,
                ..Default::default()
            }
        })
        .collect();
    DescribeProducersResponse {
        topics,
        ..Default::default()
    }
}

fn describe(apis: &KafkaApis, known: bool, topic: &str, index: i32) -> PartitionResponse {
    let partition = apis.replica_manager.partition(topic, index);
    let Some(partition) = partition.filter(|_| known) else {
        return error(index, ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
    };
    if !partition.is_leader() {
        return error(index, ErrorCode::NOT_LEADER_OR_FOLLOWER);
    }
    let active_producers = (partition.active_producers().into_iter())
        .map(|p| ProducerState {
            producer_id: p.producer_id.get(),
            producer_epoch: p.producer_epoch.get().into(),
            last_sequence: p.last_sequence,
            last_timestamp: p.last_timestamp,
            coordinator_epoch: p.coordinator_epoch,
            current_txn_start_offset: p.current_txn_start_offset.get(),
            ..Default::default()
        })
        .collect();
    PartitionResponse {
        partition_index: index,
        active_producers,
        ..Default::default()
    }
}

fn error(partition_index: i32, code: ErrorCode) -> PartitionResponse {
    PartitionResponse {
        partition_index,
        error_code: code.0,
        ..Default::default()
    }
}
