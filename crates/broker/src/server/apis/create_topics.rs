//! CreateTopics (key 19), v2–7. Source: Kafka protocol guide; KIP-464 (-1 for broker defaults, v4+),
//! KIP-525 (created topic's configs in the response, v5+), KIP-516 (topic id, v7+).
//!
//! Explicit replica assignments must name only this broker, each partition once, partitions 0..n.
//!
//! KIP-599: a valid topic's partitions count against the client's `controller_mutation_rate`; from v6 a topic
//! over it is refused with THROTTLING_QUOTA_EXCEEDED (89), before v6 it is created and the client throttled.

use std::collections::BTreeMap;

use protocol::error::ErrorCode;
use protocol::messages::create_topics_request::CreatableTopic;
use protocol::messages::create_topics_response::{CreatableTopicConfigs, CreatableTopicResult};
use protocol::messages::{CreateTopicsRequest, CreateTopicsResponse};

use super::describe_configs::{config_source_for_topic, is_sensitive, topic_config_names};
use super::errors::ApiError;
use super::KafkaApis;
use crate::metadata::TopicMetadata;
use crate::quota::MutationQuota;
use crate::server::context::RequestContext;
use authorizer::{AclOperation, ResourceType};

/// Creates each topic; one result per requested topic, in order. A name given twice gets INVALID_REQUEST.
/// `throttle_time_ms` is the controller mutation quota's.
pub async fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: CreateTopicsRequest,
) -> CreateTopicsResponse {
    let version = ctx.api_version();
    let mut quota = apis.quotas().clients.mutation_quota(
        &ctx.connection.principal.name,
        ctx.client_id().unwrap_or(""),
        version >= 6,
    );
    let mut seen = std::collections::HashMap::new();
    for t in &request.topics {
        *seen.entry(t.name.clone()).or_insert(0) += 1;
    }
    let mut topics = Vec::with_capacity(request.topics.len());
    for t in request.topics {
        let mut result = CreatableTopicResult {
            name: t.name.clone(),
            num_partitions: -1,
            replication_factor: -1,
            configs: None,
            ..Default::default()
        };
        let created = if seen.get(&t.name).copied().unwrap_or(0) > 1 {
            Err(ApiError::new(
                ErrorCode::INVALID_REQUEST,
                format!(
                    "Create topics request from client contains topic '{}' more than once.",
                    t.name
                ),
            ))
        } else if let Err(d) = ctx
            .authorize_cluster(AclOperation::Create)
            .or_else(|_| ctx.authorize(AclOperation::Create, ResourceType::Topic, &t.name))
        {
            // Kafka: CREATE on the cluster, or on the topic.
            Err(ApiError::from(d))
        } else {
            create_one(apis, &t, request.validate_only, &mut quota).await
        };
        match created {
            Ok(topic) => fill_created(apis, version, &t, &topic, &mut result),
            Err(e) => {
                (result.error_code, result.error_message) = e.into_parts();
            }
        }
        topics.push(result);
    }
    CreateTopicsResponse {
        throttle_time_ms: quota.throttle_time_ms().min(i32::MAX as u64) as i32,
        topics,
        ..Default::default()
    }
}

/// Checks one entry's assignments and configs, then creates it. With a mutation quota, the topic is validated
/// first and its partitions counted before it is created (Kafka checks the quota after every other check).
async fn create_one(
    apis: &KafkaApis,
    t: &CreatableTopic,
    validate_only: bool,
    quota: &mut MutationQuota<'_>,
) -> Result<TopicMetadata, ApiError> {
    let (mut partitions, mut rf) = (t.num_partitions, t.replication_factor);
    let explicit = !t.assignments.is_empty() && apis.config().is_cluster();
    if !t.assignments.is_empty() && !explicit {
        partitions = check_assignments(apis, t)?;
        rf = 1;
    }
    let mut configs = BTreeMap::new();
    for c in &t.configs {
        let Some(v) = &c.value else {
            return Err(ApiError::new(
                ErrorCode::INVALID_CONFIG,
                format!("Null value not supported for topic configs: {}", c.name),
            ));
        };
        configs.insert(c.name.clone(), v.clone());
    }
    // In a cluster the controller checks and places explicit assignments (empty: it places the topic).
    let mut assignments = Vec::new();
    if explicit {
        check_counts_unset(t)?;
        assignments = (t.assignments.iter())
            .map(|a| {
                (
                    a.partition_index,
                    a.broker_ids.iter().copied().map(types::BrokerId).collect(),
                )
            })
            .collect();
    }
    let create = |configs, validate_only| {
        (apis.topics).create_topic_assigned(
            &t.name,
            (partitions, rf),
            assignments.clone(),
            configs,
            validate_only,
        )
    };
    if quota.is_bounded() {
        let checked = create(configs.clone(), true).await?;
        quota.record(checked.partitions.max(0) as u32)?;
        if validate_only {
            return Ok(checked);
        }
    }
    Ok(create(configs, validate_only).await?)
}

/// Kafka's rule for CreateTopics with explicit assignments: both counts -1. Errors: INVALID_REQUEST.
fn check_counts_unset(t: &CreatableTopic) -> Result<(), ApiError> {
    if t.num_partitions != -1 || t.replication_factor != -1 {
        return Err(ApiError::new(
            ErrorCode::INVALID_REQUEST,
            "Both numPartitions or replicationFactor and replicasAssignments were set.",
        ));
    }
    Ok(())
}

/// Explicit replica assignments: partitions numbered 0..n, each naming only this broker. Returns n.
fn check_assignments(apis: &KafkaApis, t: &CreatableTopic) -> Result<i32, ApiError> {
    check_counts_unset(t)?;
    let mut indexes: Vec<i32> = t.assignments.iter().map(|a| a.partition_index).collect();
    indexes.sort_unstable();
    if indexes.iter().enumerate().any(|(i, p)| *p != i as i32) {
        return Err(ApiError::new(
            ErrorCode::INVALID_REPLICA_ASSIGNMENT,
            "Partitions must be numbered consecutively from 0.",
        ));
    }
    let node = apis.config().node_id.get();
    for a in &t.assignments {
        if a.broker_ids.len() != 1 || a.broker_ids[0] != node {
            return Err(ApiError::new(
                ErrorCode::INVALID_REPLICA_ASSIGNMENT,
                format!(
                    "Replica assignment {:?} names brokers that do not exist or repeats one.",
                    a.broker_ids
                ),
            ));
        }
    }
    Ok(indexes.len() as i32)
}

/// The result of a created (or validated) topic: id, counts, and from v5 its configs.
fn fill_created(
    apis: &KafkaApis,
    version: i16,
    t: &CreatableTopic,
    topic: &TopicMetadata,
    result: &mut CreatableTopicResult,
) {
    result.topic_id = topic.topic_id;
    result.num_partitions = topic.partitions;
    // The replica count placed (validate_only: what was asked, or the default).
    result.replication_factor = apis
        .metadata_cache()
        .image()
        .topics
        .get(&t.name)
        .filter(|image| image.topic_id == topic.topic_id)
        .and_then(|image| image.partitions.values().next())
        .map_or(
            if t.replication_factor > 0 {
                t.replication_factor
            } else {
                apis.config().default_replication_factor
            },
            |r| r.replicas.len() as i16,
        );
    if version >= 5 {
        result.configs = Some(
            topic_config_names()
                .map(|name| CreatableTopicConfigs {
                    name: name.to_string(),
                    value: apis.topics.topic_config_value(&topic.configs, name),
                    read_only: false,
                    config_source: config_source_for_topic(apis, &topic.configs, name),
                    is_sensitive: is_sensitive(name),
                    ..Default::default()
                })
                .collect(),
        );
    }
}
