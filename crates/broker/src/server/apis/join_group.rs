//! JoinGroup (key 11), v0–9. Source: Kafka protocol guide; KIP-394 (member id required, v4+), KIP-345
//! (static membership, v5+), KIP-559 (protocol type/name in the response, v7+), KIP-800 (reason, v8+),
//! KIP-814 (skip assignment, v9+).
//!
//! The request is held until the group's join phase completes (clients wait; the connection serves one
//! request at a time, as Kafka mutes the channel). JoinGroup v0 has no rebalance timeout: the session timeout
//! is used (pitfall 10). Below v7 the protocol name is a non-nullable string: none → "".
//! In cluster mode a group coordinated by another broker gets NOT_COORDINATOR (16), one whose
//! `__consumer_offsets` partition is loading COORDINATOR_LOAD_IN_PROGRESS (14); a join parked when this broker
//! stops coordinating the group is answered NOT_COORDINATOR (checked by
//! `GroupCoordinatorService::join_group`).

use protocol::error::ErrorCode;
use protocol::messages::join_group_response::JoinGroupResponseMember;
use protocol::messages::{JoinGroupRequest, JoinGroupResponse};

use super::KafkaApis;
use crate::server::context::RequestContext;
use authorizer::{AclOperation, ResourceType};

/// Joins (or rejoins) the member and waits for the rebalance outcome.
pub async fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: JoinGroupRequest,
) -> JoinGroupResponse {
    let version = ctx.api_version();
    if let Err(d) = ctx.authorize(AclOperation::Read, ResourceType::Group, &request.group_id) {
        return JoinGroupResponse {
            error_code: ErrorCode::from(d).0,
            generation_id: -1,
            member_id: request.member_id,
            ..Default::default()
        };
    }
    let member_id = request.member_id.clone();
    let group_id = request.group_id.clone();
    tracing::debug!(group = %group_id, member = %member_id, version, instance = ?request.group_instance_id,
        client = ?ctx.client_id(), "JoinGroup");
    let req = coordinator::JoinGroupRequest {
        api_version: version,
        group_id: request.group_id,
        session_timeout_ms: request.session_timeout_ms,
        rebalance_timeout_ms: if version == 0 {
            -1
        } else {
            request.rebalance_timeout_ms
        },
        member_id: request.member_id,
        group_instance_id: request.group_instance_id,
        protocol_type: request.protocol_type,
        protocols: request
            .protocols
            .into_iter()
            .map(|p| coordinator::JoinProtocol {
                name: p.name,
                metadata: p.metadata,
            })
            .collect(),
        client_id: ctx.client_id().unwrap_or_default().to_string(),
        client_host: ctx.client_host(),
    };
    // Classic members of a consumer group are assigned from the current topics (KIP-848 migration).
    apis.groups.topics_image(&apis.metadata_cache().image());
    let result = match apis.groups.join_group(req).await {
        Ok(r) => r,
        Err(code) => {
            tracing::debug!(group = %group_id, member = %member_id, error = %code, "JoinGroup answered");
            return JoinGroupResponse {
                error_code: ErrorCode::from(code).0,
                generation_id: -1,
                protocol_name: (version < 7).then(String::new),
                member_id,
                ..Default::default()
            };
        }
    };
    tracing::debug!(group = %group_id, member = %result.member_id, error = result.error_code.0,
        generation = result.generation_id, leader = %result.leader,
        members = ?result.members.iter().map(|m| m.member_id.as_str()).collect::<Vec<_>>(), "JoinGroup answered");
    JoinGroupResponse {
        error_code: result.error_code.0,
        generation_id: result.generation_id,
        protocol_type: result.protocol_type,
        protocol_name: if version >= 7 {
            result.protocol_name
        } else {
            Some(result.protocol_name.unwrap_or_default())
        },
        leader: result.leader,
        skip_assignment: result.skip_assignment,
        member_id: result.member_id,
        members: result
            .members
            .into_iter()
            .map(|m| JoinGroupResponseMember {
                member_id: m.member_id,
                group_instance_id: m.group_instance_id,
                metadata: m.metadata,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}
