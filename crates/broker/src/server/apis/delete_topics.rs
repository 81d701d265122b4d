//! DeleteTopics (key 20), v1–6. Source: Kafka protocol guide; KIP-516 (delete by topic id, v6+).
//!
//! KIP-599: a deleted topic's partitions count against the client's `controller_mutation_rate`; from v5 a
//! topic over it is refused with THROTTLING_QUOTA_EXCEEDED (89), before v5 it is deleted and the client
//! throttled.

use protocol::error::ErrorCode;
use protocol::messages::delete_topics_response::DeletableTopicResult;
use protocol::messages::{DeleteTopicsRequest, DeleteTopicsResponse};
use uuid::Uuid;

use super::errors::ApiError;
use super::KafkaApis;
use crate::quota::MutationQuota;
use crate::server::context::{Denied, RequestContext};
use authorizer::{AclOperation, ResourceType};

/// Deletes each named topic (by name below v6, by name or id from v6); `throttle_time_ms` is the controller
/// mutation quota's.
pub async fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: DeleteTopicsRequest,
) -> DeleteTopicsResponse {
    let mut quota = apis.quotas().clients.mutation_quota(
        &ctx.connection.principal.name,
        ctx.client_id().unwrap_or(""),
        ctx.api_version() >= 5,
    );
    let targets: Vec<(Option<String>, Uuid)> = if ctx.api_version() >= 6 {
        request
            .topics
            .into_iter()
            .map(|t| (t.name, t.topic_id))
            .collect()
    } else {
        request
            .topic_names
            .into_iter()
            .map(|n| (Some(n), Uuid::nil()))
            .collect()
    };
    let mut responses = Vec::with_capacity(targets.len());
    for (name, id) in targets {
        responses.push({
            let name = match name {
                Some(n) => Some(n),
                None => apis.metadata.topic_by_id(id).map(|(n, _)| n),
            };
            let mut r = DeletableTopicResult {
                name: name.clone(),
                topic_id: id,
                ..Default::default()
            };
            match name {
                None => r.error_code = ErrorCode::UNKNOWN_TOPIC_ID.0,
                Some(n) if !ctx.is_allowed(AclOperation::Delete, ResourceType::Topic, &n) => {
                    let d = Denied(ResourceType::Topic);
                    (r.error_code, r.error_message) = ApiError::from(d).into_parts();
                }
                Some(n) => match delete_one(apis, &n, &mut quota).await {
                    // The groups' offsets for it go when the metadata change is published (in every
                    // mode, through the group coordinator's MetadataPublisher).
                    Ok(topic_id) => r.topic_id = topic_id,
                    Err(e) => (r.error_code, r.error_message) = e.into_parts(),
                },
            }
            r
        });
    }
    DeleteTopicsResponse {
        throttle_time_ms: quota.throttle_time_ms().min(i32::MAX as u64) as i32,
        responses,
        ..Default::default()
    }
}

/// Deletes one topic, its partitions counted against the mutation quota first when it exists.
async fn delete_one(
    apis: &KafkaApis,
    name: &str,
    quota: &mut MutationQuota<'_>,
) -> Result<Uuid, ApiError> {
    if let Some(topic) = apis.metadata.topic(name) {
        quota.record(topic.partitions.max(0) as u32)?;
    }
    Ok(apis.topics.delete_topic(name).await?)
}
