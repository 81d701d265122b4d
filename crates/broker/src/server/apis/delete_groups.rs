//! DeleteGroups (key 42), v0–3. Source: Kafka protocol guide; KIP-229. v3's per-group `error_message` is left
//! null.
//!
//! Deletes Empty groups with all their committed offsets (tombstones are written to `__consumer_offsets`).
//! Per group: 0, NON_EMPTY_GROUP (68), GROUP_ID_NOT_FOUND (69, also for an empty id, as Kafka 4),
//! COORDINATOR_LOAD_IN_PROGRESS (14), COORDINATOR_NOT_AVAILABLE (15) (tombstones not written), or
//! NOT_COORDINATOR (16) (cluster mode: the group is coordinated by another broker, or leadership was lost
//! while writing).

use protocol::error::ErrorCode;
use protocol::messages::delete_groups_response::DeletableGroupResult;
use protocol::messages::{DeleteGroupsRequest, DeleteGroupsResponse};

use super::KafkaApis;
use crate::server::context::RequestContext;
use authorizer::{AclOperation, ResourceType};

/// Deletes each group; one result per requested group, in request order. Each group is checked and deleted
/// on its own (in cluster mode groups of one request may have different coordinators: a group coordinated
/// elsewhere gets NOT_COORDINATOR (16), one whose partition is loading COORDINATOR_LOAD_IN_PROGRESS (14)).
pub async fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: DeleteGroupsRequest,
) -> DeleteGroupsResponse {
    let mut results = Vec::with_capacity(request.groups_names.len());
    for group_id in request.groups_names {
        // An empty group id is looked up like any other (Kafka 4: GROUP_ID_NOT_FOUND).
        let one = std::slice::from_ref(&group_id);
        let denied = ctx.authorize(AclOperation::Delete, ResourceType::Group, &group_id);
        let code = if let Err(d) = denied {
            ErrorCode::from(d)
        } else {
            let share = (apis
                .groups
                .read_group(&group_id, |c| c.is_share_group(&group_id)))
            .unwrap_or(false);
            let deleted = apis
                .groups
                .with_group(&group_id, |c, now| c.delete_groups(now, one))
                .await;
            if share
                && matches!(&deleted, Ok((r, Ok(()))) if r.first().is_some_and(|(_, c)| *c == ErrorCode::NONE))
            {
                // A share group's share-partition state goes with it (Kafka's DeleteShareGroupState).
                super::share_admin::delete_group_state(apis, &group_id).await;
            }
            match deleted {
                Ok((r, written)) => {
                    let code = r
                        .first()
                        .map_or(ErrorCode::UNKNOWN_SERVER_ERROR, |(_, c)| *c);
                    match written {
                        Err(e) if code == ErrorCode::NONE => e.into(),
                        _ => code,
                    }
                }
                Err(e) => e.into(),
            }
        };
        results.push(DeletableGroupResult {
            group_id,
            error_code: code.0,
            ..Default::default()
        });
    }
    DeleteGroupsResponse {
        results,
        ..Default::default()
    }
}
