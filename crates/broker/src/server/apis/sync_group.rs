//! SyncGroup (key 14), v0–5. Source: Kafka protocol guide; KIP-345 (group instance id, v3+), KIP-559
//! (protocol type/name, v5+).
//!
//! The leader sends every member's assignment; followers wait for it. Each member gets its own bytes, empty
//! (never null) when the leader gave it none (pitfall 9).
//! In cluster mode a group coordinated by another broker gets NOT_COORDINATOR (16), one whose
//! `__consumer_offsets` partition is loading COORDINATOR_LOAD_IN_PROGRESS (14); a sync parked when this broker
//! stops coordinating the group is answered NOT_COORDINATOR (checked by
//! `GroupCoordinatorService::sync_group`).

use protocol::error::ErrorCode;
use protocol::messages::{SyncGroupRequest, SyncGroupResponse};

use super::KafkaApis;
use crate::server::context::RequestContext;
use authorizer::{AclOperation, ResourceType};

/// Syncs the member and waits for its assignment.
pub async fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: SyncGroupRequest,
) -> SyncGroupResponse {
    let version = ctx.api_version();
    if let Err(d) = ctx.authorize(AclOperation::Read, ResourceType::Group, &request.group_id) {
        return SyncGroupResponse {
            error_code: ErrorCode::from(d).0,
            ..Default::default()
        };
    }
    let (group_id, member_id) = (request.group_id.clone(), request.member_id.clone());
    tracing::debug!(group = %group_id, member = %member_id, generation = request.generation_id,
        assignments = ?request.assignments.iter().map(|a| (a.member_id.as_str(), a.assignment.len())).collect::<Vec<_>>(),
        "SyncGroup");
    let req = coordinator::SyncGroupRequest {
        group_id: request.group_id,
        generation_id: request.generation_id,
        member_id: request.member_id,
        group_instance_id: request.group_instance_id,
        protocol_type: request.protocol_type,
        protocol_name: request.protocol_name,
        assignments: request
            .assignments
            .into_iter()
            .map(|a| (a.member_id, a.assignment))
            .collect(),
    };
    // Classic members of a consumer group are assigned from the current topics (KIP-848 migration).
    apis.groups.topics_image(&apis.metadata_cache().image());
    let result = apis.groups.sync_group(req).await;
    tracing::debug!(group = %group_id, member = %member_id,
        result = ?result.as_ref().map(|r| (r.error_code.0, r.assignment.len())).map_err(|e| e.to_string()), "SyncGroup answered");
    match result {
        Ok(r) => SyncGroupResponse {
            error_code: r.error_code.0,
            protocol_type: if version >= 5 { r.protocol_type } else { None },
            protocol_name: if version >= 5 { r.protocol_name } else { None },
            assignment: r.assignment,
            ..Default::default()
        },
        Err(code) => SyncGroupResponse {
            error_code: ErrorCode::from(code).0,
            ..Default::default()
        },
    }
}
