//! AlterConfigs (key 33), v0–2. Source: Kafka protocol guide; KIP-133 (AlterConfigs), KIP-226 (dynamic broker
//! configs).
//!
//! Each resource's config set is replaced by exactly the given entries (keys not given are removed):
//! - TOPIC: the topic's overrides. Unknown key or bad value → INVALID_CONFIG (40) naming it. Persisted with the
//!   topic and applied to its live logs at once.
//! - BROKER named by this broker's id (per-broker level) or `""` (cluster-default level), or in a cluster any
//!   broker's id: the dynamic broker configs of that level (see [`crate::dynamic_config`]); read-only keys and
//!   bad values → INVALID_REQUEST (42), unknown keys → INVALID_CONFIG (40), a non-numeric name (or, standalone,
//!   another broker's id) → INVALID_REQUEST, all with Kafka's messages. Stored by the mode's
//!   [`crate::config_admin::BrokerConfigAdmin`] (the data directory standalone, the metadata log in a cluster);
//!   every topic's `LogConfig` follows before the answer.
//!
//! - GROUP (KIP-848/KIP-932): the group's dynamic configs, validated as IncrementalAlterConfigs does (see
//!   [`crate::group_configs`]).
//!
//! `validate_only` checks everything and changes nothing.

use std::collections::BTreeMap;

use protocol::error::ErrorCode;
use protocol::messages::alter_configs_response::AlterConfigsResourceResponse;
use protocol::messages::{AlterConfigsRequest, AlterConfigsResponse};

use super::describe_configs::{authorize_config, RESOURCE_BROKER, RESOURCE_GROUP, RESOURCE_TOPIC};
use super::errors::ApiError;
use super::KafkaApis;
use crate::server::context::RequestContext;
use authorizer::AclOperation;

/// Answers AlterConfigs: each resource's config set becomes exactly the given set.
pub async fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: AlterConfigsRequest,
) -> AlterConfigsResponse {
    let mut responses = Vec::with_capacity(request.resources.len());
    for res in request.resources {
        let entries: Vec<(String, Option<String>)> =
            res.configs.into_iter().map(|c| (c.name, c.value)).collect();
        let op = AclOperation::AlterConfigs;
        let allowed = authorize_config(ctx, op, res.resource_type, &res.resource_name);
        let result = match res.resource_type {
            _ if allowed.is_err() => allowed,
            RESOURCE_TOPIC => {
                alter_topic(apis, &res.resource_name, entries, request.validate_only).await
            }
            RESOURCE_BROKER => {
                alter_broker(apis, &res.resource_name, entries, request.validate_only).await
            }
            RESOURCE_GROUP => {
                alter_group(apis, &res.resource_name, entries, request.validate_only).await
            }
            other => Err(unsupported_resource(other)),
        };
        let (code, message) = split(result);
        responses.push(AlterConfigsResourceResponse {
            error_code: code,
            error_message: message,
            resource_type: res.resource_type,
            resource_name: res.resource_name,
            ..Default::default()
        });
    }
    AlterConfigsResponse {
        responses,
        ..Default::default()
    }
}

async fn alter_topic(
    apis: &KafkaApis,
    topic: &str,
    entries: Vec<(String, Option<String>)>,
    validate_only: bool,
) -> Result<(), ApiError> {
    let mut configs = BTreeMap::new();
    for (name, value) in entries {
        let value = value.ok_or_else(|| {
            ApiError::new(
                ErrorCode::INVALID_CONFIG,
                format!("Null value not supported for {name}"),
            )
        })?;
        configs.insert(name, value);
    }
    Ok(apis
        .topics
        .set_topic_configs(topic, configs, validate_only)
        .await?)
}

async fn alter_broker(
    apis: &KafkaApis,
    name: &str,
    entries: Vec<(String, Option<String>)>,
    validate_only: bool,
) -> Result<(), ApiError> {
    let level = apis.dynamic_config().resolve(name, false)?;
    check_duplicates(entries.iter().map(|(k, _)| k.as_str()))?;
    if let Some((k, _)) = entries.iter().find(|(_, v)| v.is_none()) {
        return Err(null_value(k));
    }
    apis.broker_configs
        .alter(level, entries, true, validate_only)
        .await
        .map_err(ApiError::from)
}

/// Replaces group `name`'s configs by `entries`.
async fn alter_group(
    apis: &KafkaApis,
    name: &str,
    entries: Vec<(String, Option<String>)>,
    validate_only: bool,
) -> Result<(), ApiError> {
    check_duplicates(entries.iter().map(|(k, _)| k.as_str()))?;
    if let Some((k, _)) = entries.iter().find(|(_, v)| v.is_none()) {
        return Err(null_value(k));
    }
    let next: BTreeMap<String, String> = (entries.into_iter())
        .map(|(k, v)| (k, v.unwrap_or_default()))
        .collect();
    let current = apis.group_config(name);
    let removed = current.keys().filter(|k| !next.contains_key(*k));
    let mut ops: Vec<(String, Option<String>)> = removed.map(|k| (k.clone(), None)).collect();
    ops.extend(next.iter().map(|(k, v)| (k.clone(), Some(v.clone()))));
    super::incremental_alter_configs::store_group(apis, name, ops, next, validate_only).await
}

/// INVALID_REQUEST "Error due to duplicate config keys" when a key appears twice (Kafka's check).
pub(super) fn check_duplicates<'a>(keys: impl Iterator<Item = &'a str>) -> Result<(), ApiError> {
    let mut seen = std::collections::BTreeSet::new();
    for k in keys {
        if !seen.insert(k) {
            return Err(ApiError::new(
                ErrorCode::INVALID_REQUEST,
                "Error due to duplicate config keys",
            ));
        }
    }
    Ok(())
}

/// INVALID_REQUEST for a null value where one is needed (Kafka's wording).
pub(super) fn null_value(key: &str) -> ApiError {
    ApiError::new(
        ErrorCode::INVALID_REQUEST,
        format!("Null value not supported for : {key}"),
    )
}

/// INVALID_REQUEST for a resource type other than TOPIC and BROKER.
pub(super) fn unsupported_resource(resource_type: i8) -> ApiError {
    ApiError::new(
        ErrorCode::INVALID_REQUEST,
        format!("Unsupported resource type {resource_type}"),
    )
}

/// The response's (error code, message) for a result.
pub(super) fn split(result: Result<(), ApiError>) -> (i16, Option<String>) {
    match result {
        Ok(()) => (0, None),
        Err(e) => (e.code.0, Some(e.message)),
    }
}
