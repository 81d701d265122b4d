//! ListGroups (key 16), v0–5. Source: Kafka protocol guide; KIP-518 (states filter and group state, v4+),
//! KIP-848 (types filter and group type, v5+).
//!
//! Classic groups have type "classic", KIP-848 consumer groups type "consumer" (protocol type "consumer",
//! states "Empty", "Assigning", "Reconciling", "Stable"); groups that only hold offsets committed from outside
//! group management are listed with protocol type "" and state "Empty", as in Kafka.

use protocol::error::ErrorCode;
use protocol::messages::list_groups_response::ListedGroup;
use protocol::messages::{ListGroupsRequest, ListGroupsResponse};

use super::KafkaApis;
use crate::server::context::RequestContext;
use authorizer::{AclOperation, ResourceType};

/// Lists the groups matching the filters (empty filter = all).
pub fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: ListGroupsRequest,
) -> ListGroupsResponse {
    let version = ctx.api_version();
    let states = if version >= 4 {
        request.states_filter
    } else {
        Vec::new()
    };
    let types_match = |group_type: &str| {
        version < 5
            || request.types_filter.is_empty()
            || (request.types_filter.iter()).any(|t| t.eq_ignore_ascii_case(group_type))
    };
    // Kafka: DESCRIBE on the cluster lists every group; otherwise only the groups with DESCRIBE.
    let all_groups = ctx.authorize_cluster(AclOperation::Describe).is_ok();
    let visible =
        |g: &str| all_groups || ctx.is_allowed(AclOperation::Describe, ResourceType::Group, g);
    match apis.groups.read(|c| c.list_groups(&states)) {
        Ok(groups) => ListGroupsResponse {
            error_code: 0,
            groups: groups
                .into_iter()
                .filter(|g| types_match(&g.group_type) && visible(&g.group_id))
                .map(|g| ListedGroup {
                    group_id: g.group_id,
                    protocol_type: g.protocol_type,
                    group_state: g.group_state,
                    group_type: g.group_type,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        },
        Err(code) => ListGroupsResponse {
            error_code: ErrorCode::from(code).0,
            ..Default::default()
        },
    }
}
