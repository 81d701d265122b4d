//! ConsumerGroupHeartbeat (key 68), v0–1, and ConsumerGroupDescribe (key 69), v0–1: the KIP-848 consumer
//! rebalance protocol. Source: Kafka protocol guide; KIP-848; KIP-1082 (client-generated member ids, v1).
//!
//! The group logic is the coordinator's ([`coordinator::GroupCoordinator::consumer_group_heartbeat`]); this
//! edge authorizes (READ on the group, DESCRIBE on every subscribed topic name, else
//! TOPIC_AUTHORIZATION_FAILED), maps the wire shapes, and hands the coordinator the topics image it assigns
//! from ([`GroupCoordinatorService::topics_image`](crate::group_coordinator::GroupCoordinatorService::topics_image)).
//! Cluster mode: NOT_COORDINATOR (16) for a group coordinated elsewhere, COORDINATOR_LOAD_IN_PROGRESS (14) while
//! its partition loads.

use coordinator::consumer::Assignment;
use coordinator::{ConsumerHeartbeatRequest, DescribedConsumerGroup};
use protocol::error::ErrorCode;
use protocol::messages::consumer_group_describe_response as describe;
use protocol::messages::consumer_group_heartbeat_response::{self as hb, TopicPartitions};
use protocol::messages::{
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
};

use super::KafkaApis;
use crate::server::context::RequestContext;
use authorizer::{AclOperation, ResourceType};

/// Sentinel for "authorized operations not requested" (`Integer.MIN_VALUE`).
const AUTHORIZED_OPERATIONS_OMITTED: i32 = i32::MIN;

fn error(code: ErrorCode, message: Option<String>) -> ConsumerGroupHeartbeatResponse {
    ConsumerGroupHeartbeatResponse {
        error_code: code.0,
        error_message: message,
        ..Default::default()
    }
}

/// Answers one heartbeat.
pub async fn heartbeat(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: ConsumerGroupHeartbeatRequest,
) -> ConsumerGroupHeartbeatResponse {
    if let Err(d) = ctx.authorize(AclOperation::Read, ResourceType::Group, &request.group_id) {
        return error(ErrorCode::from(d), None);
    }
    let denied = (request.subscribed_topic_names.iter().flatten())
        .find(|t| !ctx.is_allowed(AclOperation::Describe, ResourceType::Topic, t));
    if let Some(t) = denied {
        let message = format!("Not authorized to describe topic {t}.");
        return error(ErrorCode::TOPIC_AUTHORIZATION_FAILED, Some(message));
    }
    let req = ConsumerHeartbeatRequest {
        api_version: ctx.api_version(),
        group_id: request.group_id.clone(),
        member_id: request.member_id,
        member_epoch: request.member_epoch,
        instance_id: request.instance_id,
        rack_id: request.rack_id,
        rebalance_timeout_ms: request.rebalance_timeout_ms,
        subscribed_topic_names: request.subscribed_topic_names,
        subscribed_topic_regex: request.subscribed_topic_regex,
        server_assignor: request.server_assignor,
        topic_partitions: request.topic_partitions.map(|tps| {
            let mut a = Assignment::new();
            for tp in tps {
                a.entry(tp.topic_id).or_default().extend(tp.partitions);
            }
            a
        }),
        client_id: ctx.client_id().unwrap_or("").to_string(),
        client_host: ctx.client_host(),
    };
    let image = apis.groups.topics_image(&apis.metadata_cache().image());
    let result = apis
        .groups
        .with_group(&request.group_id, |c, now| {
            c.consumer_group_heartbeat(now, &req, &image)
        })
        .await;
    let r = match result {
        Ok((r, Ok(()))) => r,
        Ok((_, Err(e))) | Err(e) => return error(ErrorCode::from(e), None),
    };
    tracing::debug!(group = %request.group_id, member = ?r.member_id, epoch = r.member_epoch,
        error = r.error_code.0, message = ?r.error_message, "ConsumerGroupHeartbeat");
    ConsumerGroupHeartbeatResponse {
        error_code: r.error_code.0,
        error_message: r.error_message,
        member_id: r.member_id,
        member_epoch: r.member_epoch,
        heartbeat_interval_ms: r.heartbeat_interval_ms,
        assignment: r.assignment.map(|a| hb::Assignment {
            topic_partitions: a
                .into_iter()
                .map(|(topic_id, ps)| TopicPartitions {
                    topic_id,
                    partitions: ps.into_iter().collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Describes each requested consumer group, in request order.
pub fn describe(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: ConsumerGroupDescribeRequest,
) -> ConsumerGroupDescribeResponse {
    let image = apis.metadata_cache().image();
    let name = |id: &uuid::Uuid| image.topics.name_by_id(*id).unwrap_or("").to_string();
    let assignment = |a: Assignment| describe::Assignment {
        topic_partitions: a
            .into_iter()
            .map(|(topic_id, ps)| describe::TopicPartitions {
                topic_id,
                topic_name: name(&topic_id),
                partitions: ps.into_iter().collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let groups = (request.group_ids.into_iter())
        .map(|group_id| {
            let ops = match request.include_authorized_operations {
                true => ctx.authorized_operations(ResourceType::Group, &group_id),
                false => AUTHORIZED_OPERATIONS_OMITTED,
            };
            let failed = |code: ErrorCode| describe::DescribedGroup {
                error_code: code.0,
                group_id: group_id.clone(),
                authorized_operations: ops,
                ..Default::default()
            };
            if let Err(d) = ctx.authorize(AclOperation::Describe, ResourceType::Group, &group_id) {
                return failed(ErrorCode::from(d));
            }
            let d: DescribedConsumerGroup = match apis
                .groups
                .read_group(&group_id, |c| c.describe_consumer_group(&group_id))
            {
                Ok(d) => d,
                Err(e) => return failed(ErrorCode::from(e)),
            };
            describe::DescribedGroup {
                error_code: d.error_code.0,
                error_message: d.error_message,
                group_id: d.group_id,
                group_state: d.group_state,
                group_epoch: d.group_epoch,
                assignment_epoch: d.assignment_epoch,
                assignor_name: d.assignor_name,
                members: (d.members.into_iter())
                    .map(|m| describe::Member {
                        member_id: m.member_id,
                        instance_id: m.instance_id,
                        rack_id: m.rack_id,
                        member_epoch: m.member_epoch,
                        client_id: m.client_id,
                        client_host: m.client_host,
                        subscribed_topic_names: m.subscribed_topic_names,
                        subscribed_topic_regex: m.subscribed_topic_regex,
                        assignment: assignment(m.assignment),
                        target_assignment: assignment(m.target_assignment),
                        // v1: 0 = a member speaking the classic protocol, 1 = the consumer one.
                        member_type: m.member_type,
                        ..Default::default()
                    })
                    .collect(),
                authorized_operations: ops,
                ..Default::default()
            }
        })
        .collect();
    ConsumerGroupDescribeResponse {
        groups,
        ..Default::default()
    }
}
