//! CreatePartitions (key 37), v0–3. Source: Kafka protocol guide; KIP-195.
//!
//! Grows a topic; shrinking or keeping the count is INVALID_PARTITIONS (37). Explicit assignments must
//! give one replica list, naming only this broker, per new partition.
//!
//! KIP-599: the partitions added count against the client's `controller_mutation_rate`; from v3 a topic over
//! it is refused with THROTTLING_QUOTA_EXCEEDED (89), before v3 it grows and the client is throttled.

use protocol::error::ErrorCode;
use protocol::messages::create_partitions_request::CreatePartitionsTopic;
use protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use protocol::messages::{CreatePartitionsRequest, CreatePartitionsResponse};

use super::errors::ApiError;
use super::KafkaApis;
use crate::quota::MutationQuota;
use crate::server::context::RequestContext;
use authorizer::{AclOperation, ResourceType};

/// Answers CreatePartitions, one result per topic in request order; `throttle_time_ms` is the controller
/// mutation quota's.
pub async fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: CreatePartitionsRequest,
) -> CreatePartitionsResponse {
    let mut quota = apis.quotas().clients.mutation_quota(
        &ctx.connection.principal.name,
        ctx.client_id().unwrap_or(""),
        ctx.api_version() >= 3,
    );
    let mut results = Vec::with_capacity(request.topics.len());
    for t in request.topics {
        let allowed = ctx
            .authorize(AclOperation::Alter, ResourceType::Topic, &t.name)
            .map_err(ApiError::from);
        let result = match allowed.and_then(|()| check_assignments(apis, &t)) {
            Ok(()) => add_partitions(apis, &t, request.validate_only, &mut quota).await,
            Err(e) => Err(e),
        };
        let (error_code, error_message) = match result {
            Ok(()) => (0, None),
            Err(e) => e.into_parts(),
        };
        results.push(CreatePartitionsTopicResult {
            name: t.name,
            error_code,
            error_message,
            ..Default::default()
        });
    }
    CreatePartitionsResponse {
        throttle_time_ms: quota.throttle_time_ms().min(i32::MAX as u64) as i32,
        results,
        ..Default::default()
    }
}

/// Grows one topic. With a mutation quota the growth is validated first and the new partitions counted
/// before it is made (Kafka checks the quota after every other check).
async fn add_partitions(
    apis: &KafkaApis,
    t: &CreatePartitionsTopic,
    validate_only: bool,
    quota: &mut MutationQuota<'_>,
) -> Result<(), ApiError> {
    if quota.is_bounded() {
        let current = apis.metadata.topic(&t.name).map_or(0, |m| m.partitions);
        apis.topics.add_partitions(&t.name, t.count, true).await?;
        quota.record((t.count - current).max(0) as u32)?;
        if validate_only {
            return Ok(());
        }
    }
    Ok(apis
        .topics
        .add_partitions(&t.name, t.count, validate_only)
        .await?)
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
