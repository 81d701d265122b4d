//! DescribeTopicPartitions (key 75), v0 (KIP-966; `kafka-topics.sh --describe` in Kafka 4.x). Source: Kafka's
//! message spec and the behaviour of Kafka 4.4.0's `DescribeTopicPartitionsRequestHandler` (checked with
//! `tests/test_admin_surface.py` against both brokers).
//!
//! - Topics: the requested ones (deduplicated), or every topic for an empty list; only names at or after the
//!   cursor's topic, answered in name order.
//! - Paging: at most `max(min(2000, response_partition_limit), 1)` partitions; a topic is cut at the limit
//!   with `next_cursor` = (that topic, its next partition); when the limit is reached exactly at a topic's end
//!   and more topics follow, `next_cursor` = (the next topic, 0). The cursor's topic starts at the cursor's
//!   partition, every other at 0.
//! - A cursor whose topic is not among the requested ones, or with a negative partition, is INVALID_REQUEST
//!   for every requested topic (in request order, no topic id, authorized operations left out).
//! - DESCRIBE on the topic: a listed topic without it is TOPIC_AUTHORIZATION_FAILED (after the others, no
//!   topic id); with an empty list such topics are left out silently.
//! - A requested topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION, or INVALID_TOPIC_EXCEPTION for an
//!   illegal name (with authorized operations, as Kafka).
//! - Partitions: leader (-1 when it has none), leader epoch, replicas, ISR, offline replicas; Runnel has no
//!   ELR (KIP-966), so `eligible_leader_replicas` and `last_known_elr` are empty, as Kafka answers without.

use protocol::error::ErrorCode;
use protocol::messages::describe_topic_partitions_response::{
    Cursor, DescribeTopicPartitionsResponsePartition, DescribeTopicPartitionsResponseTopic,
};
use protocol::messages::{DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse};
use uuid::Uuid;

use super::metadata::image_topic_response;
use super::KafkaApis;
use crate::server::context::RequestContext;
use crate::topics::validate_topic_name;
use authorizer::{AclOperation, ResourceType};

/// Kafka's `max.request.partition.size.limit` default: the most partitions one response holds.
const MAX_PARTITIONS: i32 = 2000;

/// Answers DescribeTopicPartitions.
pub fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: DescribeTopicPartitionsRequest,
) -> DescribeTopicPartitionsResponse {
    let all = request.topics.is_empty();
    let cursor = request.cursor.as_ref();
    let cursor_topic = cursor.map_or("", |c| c.topic_name.as_str());
    let mut names: Vec<String> = if all {
        apis.metadata.topics().keys().cloned().collect()
    } else {
        request.topics.iter().map(|t| t.name.clone()).collect()
    };
    names.retain(|n| n.as_str() >= cursor_topic);
    names.sort();
    names.dedup();
    let bad_cursor =
        cursor.is_some_and(|c| c.partition_index < 0 || (!all && !names.contains(&c.topic_name)));
    if bad_cursor {
        return invalid_request(&request);
    }
    let mut denied = Vec::new();
    names.retain(|name| {
        let allowed = ctx.is_allowed(AclOperation::Describe, ResourceType::Topic, name);
        if !allowed && !all {
            denied.push(topic_error(name, ErrorCode::TOPIC_AUTHORIZATION_FAILED));
        }
        allowed
    });
    let limit = request.response_partition_limit.clamp(1, MAX_PARTITIONS) as usize;
    let start = |name: &str| match cursor {
        Some(c) if c.topic_name == name => c.partition_index as usize,
        _ => 0,
    };
    let mut response = page(apis, &names, limit, &start, all);
    for t in &mut response.topics {
        if let Some(name) = &t.name {
            t.topic_authorized_operations = ctx.authorized_operations(ResourceType::Topic, name);
        }
    }
    response.topics.extend(denied);
    response
}

/// The topics `names` (sorted, authorized) from their start partitions, at most `limit` partitions.
fn page(
    apis: &KafkaApis,
    names: &[String],
    limit: usize,
    start: &dyn Fn(&str) -> usize,
    all: bool,
) -> DescribeTopicPartitionsResponse {
    let image = apis.metadata_cache().image();
    let mut out = DescribeTopicPartitionsResponse::default();
    let mut remaining = limit;
    for name in names {
        if remaining == 0 {
            out.next_cursor = Some(cursor(name, 0));
            break;
        }
        let Some(topic) = apis.metadata.topic(name) else {
            if !all {
                let code = match validate_topic_name(name) {
                    Ok(()) => ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                    Err(_) => ErrorCode::INVALID_TOPIC_EXCEPTION,
                };
                out.topics.push(topic_error(name, code));
            }
            continue;
        };
        let described = image_topic_response(&image, name, &topic);
        let count = described.partitions.len();
        let from = start(name);
        let upper = count.min(from.saturating_add(remaining));
        let partitions: Vec<_> = described
            .partitions
            .into_iter()
            .filter(|p| (from..upper).contains(&(p.partition_index as usize)))
            .map(|p| DescribeTopicPartitionsResponsePartition {
                error_code: 0,
                partition_index: p.partition_index,
                leader_id: p.leader_id,
                leader_epoch: p.leader_epoch,
                replica_nodes: p.replica_nodes,
                isr_nodes: p.isr_nodes,
                eligible_leader_replicas: Some(vec![]),
                last_known_elr: Some(vec![]),
                offline_replicas: p.offline_replicas,
                ..Default::default()
            })
            .collect();
        let taken = partitions.len();
        out.topics.push(DescribeTopicPartitionsResponseTopic {
            error_code: 0,
            name: Some(name.clone()),
            topic_id: described.topic_id,
            is_internal: described.is_internal,
            partitions,
            ..Default::default()
        });
        if upper < count {
            out.next_cursor = Some(cursor(name, upper as i32));
            break;
        }
        remaining -= taken;
    }
    out
}

fn cursor(topic: &str, partition: i32) -> Cursor {
    Cursor {
        topic_name: topic.to_string(),
        partition_index: partition,
        ..Default::default()
    }
}

fn topic_error(name: &str, code: ErrorCode) -> DescribeTopicPartitionsResponseTopic {
    DescribeTopicPartitionsResponseTopic {
        error_code: code.0,
        name: Some(name.to_string()),
        topic_id: Uuid::nil(),
        is_internal: false,
        ..Default::default()
    }
}

/// Kafka's error response: every requested topic, in request order, with INVALID_REQUEST.
fn invalid_request(request: &DescribeTopicPartitionsRequest) -> DescribeTopicPartitionsResponse {
    DescribeTopicPartitionsResponse {
        topics: (request.topics.iter())
            .map(|t| topic_error(&t.name, ErrorCode::INVALID_REQUEST))
            .collect(),
        ..Default::default()
    }
}
