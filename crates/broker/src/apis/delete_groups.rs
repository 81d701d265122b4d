//! DeleteGroups (key 42), v0–3. Source: Kafka protocol guide; KIP-229. v3's per-group `error_message` is left
//! null.
//!
//! Deletes Empty groups with all their committed offsets (tombstones are written to `__consumer_offsets`).
//! Per group: 0, INVALID_GROUP_ID (24, empty id), NON_EMPTY_GROUP (68), GROUP_ID_NOT_FOUND (69), or
//! COORDINATOR_LOAD_IN_PROGRESS (14) / COORDINATOR_NOT_AVAILABLE (15).

use protocol::error::ErrorCode;
use protocol::messages::delete_groups_response::DeletableGroupResult;
use protocol::messages::{DeleteGroupsRequest, DeleteGroupsResponse};
use protocol::RequestHeader;

use super::KafkaApis;

/// Deletes each group; one result per requested group, in request order.
pub fn handle(
    apis: &KafkaApis,
    _header: &RequestHeader,
    request: DeleteGroupsRequest,
) -> DeleteGroupsResponse {
    let valid: Vec<String> = request
        .groups_names
        .iter()
        .filter(|g| !g.is_empty())
        .cloned()
        .collect();
    let outcome = if valid.is_empty() {
        Ok(Vec::new())
    } else {
        match apis.groups.with(|c, now| c.delete_groups(now, &valid)) {
            Ok((mut r, persisted)) => {
                if !persisted {
                    for (_, code) in r.iter_mut() {
                        if *code == 0 {
                            *code = ErrorCode::COORDINATOR_NOT_AVAILABLE.0;
                        }
                    }
                }
                Ok(r)
            }
            Err(code) => Err(code.0),
        }
    };
    let mut results = match &outcome {
        Ok(r) => r.iter().map(|(_, c)| *c).collect::<Vec<_>>().into_iter(),
        Err(_) => Vec::new().into_iter(),
    };
    DeleteGroupsResponse {
        results: request
            .groups_names
            .into_iter()
            .map(|group_id| {
                let error_code = if group_id.is_empty() {
                    coordinator::error::INVALID_GROUP_ID
                } else {
                    match &outcome {
                        Ok(_) => results.next().unwrap_or(ErrorCode::UNKNOWN_SERVER_ERROR.0),
                        Err(code) => *code,
                    }
                };
                DeletableGroupResult {
                    group_id,
                    error_code,
                    ..Default::default()
                }
            })
            .collect(),
        ..Default::default()
    }
}
