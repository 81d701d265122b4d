//! DescribeGroups (key 15), v0–6. Source: Kafka protocol guide; KIP-430 (authorized operations, v3+),
//! KIP-345 (group instance id, v4+), KIP-1043 (GROUP_ID_NOT_FOUND for unknown groups, v6+).
//!
//! An unknown group is state "Dead": with error GROUP_ID_NOT_FOUND (69) from v6, error 0 below v6, as Kafka;
//! so is a KIP-848 consumer group, also one with classic members after an online upgrade ("Group … is not a
//! classic group.", Kafka's `classicGroup` lookup).
//! Member metadata and assignments are filled only while the group is Stable. Each group is checked on its own
//! (cluster mode: NOT_COORDINATOR (16) for a group coordinated elsewhere, COORDINATOR_LOAD_IN_PROGRESS (14)
//! while its partition loads).

use protocol::error::ErrorCode;
use protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use protocol::messages::{DescribeGroupsRequest, DescribeGroupsResponse};

use super::KafkaApis;
use crate::server::context::RequestContext;
use authorizer::{AclOperation, ResourceType};

/// Sentinel for "authorized operations not requested" (`Integer.MIN_VALUE`).
const AUTHORIZED_OPERATIONS_OMITTED: i32 = i32::MIN;

/// Describes each requested group, in request order.
pub fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: DescribeGroupsRequest,
) -> DescribeGroupsResponse {
    let version = ctx.api_version();
    let groups = request
        .groups
        .into_iter()
        .map(|group_id| {
            let ops = if request.include_authorized_operations {
                ctx.authorized_operations(ResourceType::Group, &group_id)
            } else {
                AUTHORIZED_OPERATIONS_OMITTED
            };
            let error = |code: i16, message: Option<String>| DescribedGroup {
                error_code: code,
                error_message: if version >= 6 { message } else { None },
                group_id: group_id.clone(),
                group_state: String::new(),
                authorized_operations: ops,
                ..Default::default()
            };
            // Kafka: DESCRIBE on the group, else GROUP_AUTHORIZATION_FAILED.
            if let Err(d) = ctx.authorize(AclOperation::Describe, ResourceType::Group, &group_id) {
                return error(ErrorCode::from(d).0, None);
            }
            let d = match apis.groups.read_group(&group_id, |c| {
                (c.describe_group(&group_id), c.is_consumer_group(&group_id))
            }) {
                Ok(d) => d,
                Err(code) => return error(ErrorCode::from(code).0, None),
            };
            let (d, consumer) = d;
            let (error_code, error_message) = if d.error_code == ErrorCode::GROUP_ID_NOT_FOUND {
                if version >= 6 {
                    // A consumer group (KIP-848, also one with classic members after an online upgrade) is
                    // not described here, as Kafka's `classicGroup` lookup refuses it.
                    let message = match consumer {
                        true => format!("Group {group_id} is not a classic group."),
                        false => format!("Group {group_id} not found."),
                    };
                    (d.error_code.0, Some(message))
                } else {
                    (0, None)
                }
            } else {
                (d.error_code.0, None)
            };
            DescribedGroup {
                error_code,
                error_message,
                group_id: d.group_id,
                group_state: d.group_state,
                protocol_type: d.protocol_type,
                protocol_data: d.protocol_data,
                members: d
                    .members
                    .into_iter()
                    .map(|m| DescribedGroupMember {
                        member_id: m.member_id,
                        group_instance_id: m.group_instance_id,
                        client_id: m.client_id,
                        client_host: m.client_host,
                        member_metadata: m.member_metadata,
                        member_assignment: m.member_assignment,
                        ..Default::default()
                    })
                    .collect(),
                authorized_operations: ops,
                ..Default::default()
            }
        })
        .collect();
    DescribeGroupsResponse {
        groups,
        ..Default::default()
    }
}
