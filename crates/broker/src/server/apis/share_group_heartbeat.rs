//! ShareGroupHeartbeat (key 76) and ShareGroupDescribe (key 77), v1: share-group membership (KIP-932).
//! Source: Kafka protocol guide; KIP-932.
//!
//! The group logic is the coordinator's ([`coordinator::GroupCoordinator::share_group_heartbeat`]); this edge
//! authorizes (READ on the group, DESCRIBE on every subscribed topic name, else TOPIC_AUTHORIZATION_FAILED),
//! maps the wire shapes and hands the coordinator the topics image it assigns from. A member that leaves
//! (epoch -1) has its share session here dropped and its acquired records released.

use coordinator::consumer::Assignment;
use coordinator::{DescribedShareGroup, ShareHeartbeatRequest};
use protocol::error::ErrorCode;
use protocol::messages::share_group_describe_response as describe;
use protocol::messages::share_group_heartbeat_response::{self as hb, TopicPartitions};
use protocol::messages::{
    ShareGroupDescribeRequest, ShareGroupDescribeResponse, ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
};

use super::KafkaApis;
use crate::server::context::RequestContext;
use authorizer::{AclOperation, ResourceType};

/// Sentinel for "authorized operations not requested" (`Integer.MIN_VALUE`).
const AUTHORIZED_OPERATIONS_OMITTED: i32 = i32::MIN;

fn error(code: ErrorCode, message: Option<String>) -> ShareGroupHeartbeatResponse {
    ShareGroupHeartbeatResponse {
        error_code: code.0,
        error_message: message,
        ..Default::default()
    }
}

/// Answers one heartbeat.
pub async fn heartbeat(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: ShareGroupHeartbeatRequest,
) -> ShareGroupHeartbeatResponse {
    if let Err(d) = ctx.authorize(AclOperation::Read, ResourceType::Group, &request.group_id) {
        return error(ErrorCode::from(d), None);
    }
    let denied = (request.subscribed_topic_names.iter().flatten())
        .find(|t| !ctx.is_allowed(AclOperation::Describe, ResourceType::Topic, t));
    if let Some(t) = denied {
        let message = format!("Not authorized to describe topic {t}.");
        return error(ErrorCode::TOPIC_AUTHORIZATION_FAILED, Some(message));
    }
    let req = ShareHeartbeatRequest {
        group_id: request.group_id.clone(),
        member_id: request.member_id.clone(),
        member_epoch: request.member_epoch,
        rack_id: request.rack_id,
        subscribed_topic_names: request.subscribed_topic_names,
        client_id: ctx.client_id().unwrap_or("").to_string(),
        client_host: ctx.client_host(),
    };
    let image = apis.groups.topics_image(&apis.metadata_cache().image());
    let result = apis
        .groups
        .with_group(&request.group_id, |c, now| {
            c.share_group_heartbeat(now, &req, &image)
        })
        .await;
    let r = match result {
        Ok((r, Ok(()))) => r,
        Ok((_, Err(e))) | Err(e) => return error(ErrorCode::from(e), None),
    };
    if request.member_epoch == coordinator::share_group::LEAVE_GROUP_MEMBER_EPOCH {
        let shares = apis.shares();
        shares
            .sessions
            .lock()
            .remove(&request.group_id, &request.member_id);
        shares
            .release_member(&request.group_id, &request.member_id)
            .await;
    }
    tracing::debug!(group = %request.group_id, member = ?r.member_id, epoch = r.member_epoch,
        error = r.error_code.0, message = ?r.error_message, "ShareGroupHeartbeat");
    ShareGroupHeartbeatResponse {
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

/// Describes each requested share group, in request order.
pub fn describe(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: ShareGroupDescribeRequest,
) -> ShareGroupDescribeResponse {
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
            let described = apis.groups.read_group(&group_id, |c| {
                c.describe_share_groups(std::slice::from_ref(&group_id))
            });
            let d: DescribedShareGroup = match described {
                Ok(mut d) => d.remove(0),
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
                        rack_id: m.rack_id,
                        member_epoch: m.member_epoch,
                        client_id: m.client_id,
                        client_host: m.client_host,
                        subscribed_topic_names: m.subscribed_topic_names,
                        assignment: assignment(m.assignment),
                        ..Default::default()
                    })
                    .collect(),
                authorized_operations: ops,
                ..Default::default()
            }
        })
        .collect();
    ShareGroupDescribeResponse {
        groups,
        ..Default::default()
    }
}
