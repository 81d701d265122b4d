//! LeaveGroup (key 13), v0–5. Source: Kafka protocol guide; KIP-345 (batched members by member id and/or
//! group instance id, v3+), KIP-800 (reason, v5+).
//!
//! v0–v2 remove one member and carry a single top-level error: the group-level error if any, else that
//! member's. v3+ answer per member, with a top-level error only for group-level failures (including
//! NOT_COORDINATOR (16) / COORDINATOR_LOAD_IN_PROGRESS (14) in cluster mode).

use protocol::messages::leave_group_response::MemberResponse;
use protocol::messages::{LeaveGroupRequest, LeaveGroupResponse};
use protocol::ErrorCode;

use super::KafkaApis;
use crate::server::context::RequestContext;
use authorizer::{AclOperation, ResourceType};

/// Removes the members from the group (a rebalance follows if the group had others).
pub async fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: LeaveGroupRequest,
) -> LeaveGroupResponse {
    let version = ctx.api_version();
    let members: Vec<coordinator::LeaveMember> = if version <= 2 {
        vec![coordinator::LeaveMember {
            member_id: request.member_id.clone(),
            group_instance_id: None,
        }]
    } else {
        request
            .members
            .iter()
            .map(|m| coordinator::LeaveMember {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
            })
            .collect()
    };
    tracing::debug!(group = %request.group_id,
        members = ?members.iter().map(|m| m.member_id.as_str()).collect::<Vec<_>>(), "LeaveGroup");
    // A leave may downgrade a consumer group, naming its members' partitions (KIP-848 migration).
    apis.groups.topics_image(&apis.metadata_cache().image());
    let result =
        if let Err(d) = ctx.authorize(AclOperation::Read, ResourceType::Group, &request.group_id) {
            Err(ErrorCode::from(d))
        } else if request.group_id.is_empty() {
            Err(ErrorCode::INVALID_GROUP_ID)
        } else {
            match apis
                .groups
                .with_group(&request.group_id, |c, now| {
                    c.leave_group(now, &request.group_id, &members)
                })
                .await
            {
                Ok((r, _)) => Ok(r),
                Err(e) => Err(e.into()),
            }
        };
    let result = match result {
        Ok(r) if r.error_code == ErrorCode::NONE => r,
        // An unknown group in v3+ (batched members): Kafka answers each member UNKNOWN_MEMBER_ID, not the
        // whole request.
        Ok(r) if version >= 3 && r.error_code == ErrorCode::UNKNOWN_MEMBER_ID => {
            coordinator::LeaveResult {
                error_code: ErrorCode::NONE,
                members: members
                    .into_iter()
                    .map(|m| coordinator::LeaveMemberResult {
                        member_id: m.member_id,
                        group_instance_id: m.group_instance_id,
                        error_code: r.error_code,
                    })
                    .collect(),
            }
        }
        Ok(r) => {
            return LeaveGroupResponse {
                error_code: r.error_code.0,
                ..Default::default()
            }
        }
        Err(code) => {
            return LeaveGroupResponse {
                error_code: code.0,
                ..Default::default()
            }
        }
    };
    if version <= 2 {
        LeaveGroupResponse {
            error_code: result.members.first().map_or(0, |m| m.error_code.0),
            ..Default::default()
        }
    } else {
        LeaveGroupResponse {
            error_code: 0,
            members: result
                .members
                .into_iter()
                .map(|m| MemberResponse {
                    member_id: m.member_id,
                    group_instance_id: m.group_instance_id,
                    error_code: m.error_code.0,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }
}
