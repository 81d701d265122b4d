//! Heartbeat (key 12), v0–4. Source: Kafka protocol guide; KIP-345 (group instance id, v3+).
//!
//! Keeps a member's session alive. During a rebalance the answer is REBALANCE_IN_PROGRESS (27), telling the
//! member to rejoin (pitfall 10). In cluster mode: NOT_COORDINATOR (16) for a group coordinated by another
//! broker, COORDINATOR_LOAD_IN_PROGRESS (14) while its `__consumer_offsets` partition loads.

use protocol::messages::{HeartbeatRequest, HeartbeatResponse};

use super::KafkaApis;
use crate::server::context::RequestContext;
use authorizer::{AclOperation, ResourceType};

/// Records the heartbeat; returns the member's error code.
pub async fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: HeartbeatRequest,
) -> HeartbeatResponse {
    let code =
        if let Err(d) = ctx.authorize(AclOperation::Read, ResourceType::Group, &request.group_id) {
            protocol::ErrorCode::from(d)
        } else if request.group_id.is_empty() {
            protocol::ErrorCode::INVALID_GROUP_ID
        } else {
            match apis
                .groups
                .with_group(&request.group_id, |c, now| {
                    c.heartbeat(
                        now,
                        &request.group_id,
                        &request.member_id,
                        request.group_instance_id.as_deref(),
                        request.generation_id,
                    )
                })
                .await
            {
                Ok((code, _)) => code,
                Err(e) => e.into(),
            }
        };
    tracing::debug!(group = %request.group_id, member = %request.member_id, generation = request.generation_id,
        error = code.0, "Heartbeat");
    HeartbeatResponse {
        error_code: code.0,
        ..Default::default()
    }
}
