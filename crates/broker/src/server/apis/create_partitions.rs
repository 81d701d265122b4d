//! CreatePartitions (key 37), v0–3. Source: Kafka protocol guide; KIP-195.
//!
//! Grows a topic; shrinking or keeping the count is INVALID_PARTITIONS (37). Explicit assignments must
//! give one replica list, naming only this broker, per new partition.

use protocol::error::ErrorCode;
use protocol::messages::create_partitions_request::CreatePartitionsTopic;
use protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use protocol::messages::{CreatePartitionsRequest, CreatePartitionsResponse};

use super::errors::ApiError;
use super::KafkaApis;
use crate::server::context::RequestContext;
use authorizer::{AclOperation, ResourceType};

/// Answers CreatePartitions, one result per topic in request order.
pub async fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: CreatePartitionsRequest,
) -> CreatePartitionsResponse {
    let mut results = Vec::with_capacity(request.topics.len());
    for t in request.topics {
        let allowed = ctx
            .authorize(AclOperation::Alter, ResourceType::Topic, &t.name)
            .map_err(ApiError::from);
        let result = match allowed.and_then(|()| check_assignments(apis, &t)) {
            Ok(()) => apis
                .topics
                .add_partitions(&t.name, t.count, request.validate_only)
                .await
                .map_err(ApiError::from),
            Err(e) => Err(e),
        };
        let (error_code, error_message) = match result {
            Ok(()) => (0, None),
            Err(e) => (e.code.0, Some(e.message)),
        };
        results.push(CreatePartitionsTopicResult {
            name: t.name,
            error_code,
            error_message,
            ..Default::default()
        });
    }
    CreatePartitionsResponse {
        results,
        ..Default::default()
    }
}

/// Explicit assignments: one replica list per new partition, each naming only this broker.
fn check_assignments(apis: &KafkaApis, t: &CreatePartitionsTopic) -> Result<(), ApiError> {
    let Some(assignments) = &t.assignments else {
        return Ok(());
    };
    let node = apis.config().node_id.get();
    let current = apis
        .metadata
        .topic(&t.name)
        .map(|m| m.partitions)
        .unwrap_or(0);
    let more = i64::from(t.count) - i64::from(current);
    if assignments.len() as i64 != more {
        return Err(ApiError::new(
            ErrorCode::INVALID_REPLICA_ASSIGNMENT,
            format!(
                "Increasing the number of partitions by {more} but {} assignments provided.",
                assignments.len()
            ),
        ));
    }
    if assignments.iter().any(|a| a.broker_ids != [node]) {
        return Err(ApiError::new(
            ErrorCode::INVALID_REPLICA_ASSIGNMENT,
            format!("Assignments must name exactly broker {node}."),
        ));
    }
    Ok(())
}
