//! IncrementalAlterConfigs (key 44), v0–1. Source: Kafka protocol guide; KIP-339 (operations SET 0, DELETE 1,
//! APPEND 2, SUBTRACT 3), KIP-226 (dynamic broker configs).
//!
//! Edits a resource's config set key by key; APPEND / SUBTRACT only apply to list keys (`cleanup.policy`,
//! `log.cleanup.policy`) and edit the current effective list (INVALID_CONFIG otherwise). DELETE of a key that
//! is not set is a no-op.
//! - TOPIC: the topic's overrides (unknown key or bad value → INVALID_CONFIG naming it), applied live.
//! - CLIENT_METRICS (KIP-714): a subscription's `metrics`, `interval.ms`, `match` (APPEND/SUBTRACT on the
//!   two lists), validated as Kafka's `ClientMetricsConfigs` (see [`crate::client_metrics::subscription`]);
//!   a subscription left without keys is removed. Stored by the mode's
//!   [`crate::client_metrics::ClientMetricsAdmin`].
//! - GROUP (KIP-848/KIP-932): a group's dynamic configs (APPEND/SUBTRACT on `streams.rack.aware.assignment.tags`),
//!   the whole resulting set validated as Kafka 4.4's `GroupConfig` (see [`crate::group_configs`]; unknown
//!   keys and bad or out-of-bounds values → INVALID_CONFIG, an empty group id → INVALID_REQUEST); a group left
//!   without keys is removed. Stored by the mode's [`crate::group_configs::GroupConfigAdmin`].
//! - BROKER named by this broker's id or `""` (in a cluster: any broker's id): that dynamic level (see
//!   [`crate::dynamic_config`] for which keys may change and the errors), stored by the mode's
//!   [`crate::config_admin::BrokerConfigAdmin`]; every topic's `LogConfig` follows before the answer.
//!
//! Before any change: a key given twice or an unknown operation → INVALID_REQUEST; SET, APPEND or SUBTRACT
//! without a value → INVALID_REQUEST (Kafka's messages). SUBTRACT may leave a list empty: Kafka 4.x stores
//! the empty list (`cleanup.policy` empty = no cleanup, infinite retention). `validate_only` checks everything and changes nothing.

use protocol::error::ErrorCode;
use protocol::messages::incremental_alter_configs_request::AlterableConfig;
use protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse;
use protocol::messages::{IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse};

use super::alter_configs::{check_duplicates, null_value, split, unsupported_resource};
use super::describe_configs::{
    authorize_config, RESOURCE_BROKER, RESOURCE_CLIENT_METRICS, RESOURCE_GROUP, RESOURCE_TOPIC,
};
use super::errors::ApiError;
use super::KafkaApis;
use crate::client_metrics::subscription::{self, SubscriptionError};
use crate::config::{broker_def, topic_def, ConfigType};
use crate::dynamic_config::ConfigLevel;
use crate::server::context::RequestContext;
use authorizer::AclOperation;

const OP_SET: i8 = 0;
const OP_DELETE: i8 = 1;
const OP_APPEND: i8 = 2;
const OP_SUBTRACT: i8 = 3;

/// Answers IncrementalAlterConfigs.
pub async fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: IncrementalAlterConfigsRequest,
) -> IncrementalAlterConfigsResponse {
    let mut responses = Vec::with_capacity(request.resources.len());
    for res in request.resources {
        let op = AclOperation::AlterConfigs;
        let allowed = authorize_config(ctx, op, res.resource_type, &res.resource_name);
        let result = match (check_ops(&res.configs), res.resource_type) {
            _ if allowed.is_err() => allowed,
            (Err(e), _) => Err(e),
            (Ok(()), RESOURCE_TOPIC) => {
                alter_topic(apis, &res.resource_name, res.configs, request.validate_only).await
            }
            (Ok(()), RESOURCE_BROKER) => {
                alter_broker(apis, &res.resource_name, res.configs, request.validate_only).await
            }
            (Ok(()), RESOURCE_CLIENT_METRICS) => {
                let (name, validate) = (&res.resource_name, request.validate_only);
                alter_client_metrics(apis, name, res.configs, validate).await
            }
            (Ok(()), RESOURCE_GROUP) => {
                let (name, validate) = (&res.resource_name, request.validate_only);
                alter_group(apis, name, res.configs, validate).await
            }
            (Ok(()), other) => Err(unsupported_resource(other)),
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
    IncrementalAlterConfigsResponse {
        responses,
        ..Default::default()
    }
}

/// Duplicate keys, unknown operations and SET without a value are refused before anything else.
fn check_ops(configs: &[AlterableConfig]) -> Result<(), ApiError> {
    check_duplicates(configs.iter().map(|c| c.name.as_str()))?;
    for c in configs {
        match c.config_operation {
            OP_SET | OP_APPEND | OP_SUBTRACT if c.value.is_none() => {
                return Err(null_value(&c.name))
            }
            OP_SET | OP_DELETE | OP_APPEND | OP_SUBTRACT => {}
            other => {
                return Err(ApiError::new(
                    ErrorCode::INVALID_REQUEST,
                    format!("Unknown operations type {other}"),
                ))
            }
        }
    }
    Ok(())
}

/// `current` (comma-separated) with `value`'s items appended (if absent) or removed.
fn edit_list(current: Option<String>, value: Option<&str>, op: i8) -> String {
    let mut items: Vec<String> = current
        .unwrap_or_default()
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    for v in value
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        if op == OP_APPEND {
            if !items.iter().any(|i| i == v) {
                items.push(v.to_string());
            }
        } else {
            items.retain(|i| i != v);
        }
    }
    items.join(",")
}

/// INVALID_CONFIG for APPEND/SUBTRACT on a key that is not a list, with Kafka 4.4's message, which differs
/// between topics (the controller's check) and brokers (the broker's).
fn list_op_not_allowed(op: i8, key: &str, topic: bool) -> ApiError {
    let message = match (topic, op == OP_APPEND) {
        (true, true) => format!("Can't APPEND to key {key} because its type is not LIST."),
        (true, false) => format!("Can't SUBTRACT to key {key} because its type is not LIST."),
        (false, true) => format!("Config value append is not allowed for config key: {key}"),
        (false, false) => format!("Config value subtract is not allowed for config key: {key}"),
    };
    ApiError::new(ErrorCode::INVALID_CONFIG, message)
}

async fn alter_topic(
    apis: &KafkaApis,
    name: &str,
    configs: Vec<AlterableConfig>,
    validate_only: bool,
) -> Result<(), ApiError> {
    let topic = apis.metadata.topic(name).ok_or_else(|| {
        ApiError::new(
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
            format!("Topic {name} does not exist."),
        )
    })?;
    let mut overrides = topic.configs.clone();
    for c in configs {
        let def = topic_def(&c.name).ok_or_else(|| {
            ApiError::new(
                ErrorCode::INVALID_CONFIG,
                format!("Unknown topic config name: {}", c.name),
            )
        })?;
        match c.config_operation {
            OP_SET => {
                overrides.insert(c.name, c.value.unwrap_or_default());
            }
            OP_DELETE => {
                overrides.remove(&c.name);
            }
            op if def.ty == ConfigType::List => {
                let current = apis.topics.topic_config_value(&overrides, &c.name);
                let edited = edit_list(current, c.value.as_deref(), op);
                overrides.insert(c.name, edited);
            }
            op => return Err(list_op_not_allowed(op, &c.name, true)),
        }
    }
    Ok(apis
        .topics
        .set_topic_configs(name, overrides, validate_only)
        .await?)
}

async fn alter_broker(
    apis: &KafkaApis,
    name: &str,
    configs: Vec<AlterableConfig>,
    validate_only: bool,
) -> Result<(), ApiError> {
    let dynamic = apis.dynamic_config();
    let level: ConfigLevel = dynamic.resolve(name, false)?;
    let mut ops = Vec::new();
    for c in &configs {
        match c.config_operation {
            OP_SET => ops.push((c.name.clone(), Some(c.value.clone().unwrap_or_default()))),
            OP_DELETE => ops.push((c.name.clone(), None)),
            op => {
                let def = broker_def(&c.name).ok_or_else(|| {
                    ApiError::new(
                        ErrorCode::INVALID_CONFIG,
                        format!("Unknown broker config name: {}", c.name),
                    )
                })?;
                if def.ty != ConfigType::List {
                    return Err(list_op_not_allowed(op, &c.name, false));
                }
                let current = dynamic.value_or_inherited(level, &c.name);
                let edited = edit_list(current, c.value.as_deref(), op);
                ops.push((c.name.clone(), Some(edited)));
            }
        }
    }
    apis.broker_configs
        .alter(level, ops, false, validate_only)
        .await
        .map_err(ApiError::from)
}

/// Edits subscription `name` (KIP-714) key by key, validates the resulting set and stores it.
async fn alter_client_metrics(
    apis: &KafkaApis,
    name: &str,
    configs: Vec<AlterableConfig>,
    validate_only: bool,
) -> Result<(), ApiError> {
    let admin = (apis.telemetry.admin())
        .ok_or_else(|| ApiError::new(ErrorCode::UNKNOWN_SERVER_ERROR, "no client metrics store"))?;
    let mut next = admin.configs(name);
    let mut ops = Vec::new();
    for c in configs {
        let value = match c.config_operation {
            OP_SET => Some(c.value.unwrap_or_default()),
            OP_DELETE => None,
            op if c.name == subscription::METRICS || c.name == subscription::MATCH => Some(
                edit_list(next.get(&c.name).cloned(), c.value.as_deref(), op),
            ),
            op => return Err(list_op_not_allowed(op, &c.name, true)),
        };
        match &value {
            Some(v) => next.insert(c.name.clone(), v.clone()),
            None => next.remove(&c.name),
        };
        ops.push((c.name, value));
    }
    subscription::parse(name, &next).map_err(|e| match e {
        SubscriptionError::InvalidRequest(m) => ApiError::new(ErrorCode::INVALID_REQUEST, m),
        SubscriptionError::InvalidConfig(m) => ApiError::new(ErrorCode::INVALID_CONFIG, m),
    })?;
    if validate_only {
        return Ok(());
    }
    Ok(admin.alter(name.to_string(), ops, next).await?)
}

/// Edits group `name`'s configs key by key, validates the resulting set and stores it.
async fn alter_group(
    apis: &KafkaApis,
    name: &str,
    configs: Vec<AlterableConfig>,
    validate_only: bool,
) -> Result<(), ApiError> {
    use crate::group_configs::{group_def, GroupConfigType};
    let mut next = apis.group_config(name);
    let mut ops = Vec::new();
    for c in configs {
        let value = match c.config_operation {
            OP_SET => Some(c.value.unwrap_or_default()),
            OP_DELETE => None,
            op if group_def(&c.name).is_some_and(|d| d.ty == GroupConfigType::List) => Some(
                edit_list(next.get(&c.name).cloned(), c.value.as_deref(), op),
            ),
            op => return Err(list_op_not_allowed(op, &c.name, true)),
        };
        match &value {
            Some(v) => next.insert(c.name.clone(), v.clone()),
            None => next.remove(&c.name),
        };
        ops.push((c.name, value));
    }
    store_group(apis, name, ops, next, validate_only).await
}

/// Validates group `name`'s config set `next` (reached by `ops`) and, unless `validate_only`, stores it.
pub(super) async fn store_group(
    apis: &KafkaApis,
    name: &str,
    ops: Vec<(String, Option<String>)>,
    next: std::collections::BTreeMap<String, String>,
    validate_only: bool,
) -> Result<(), ApiError> {
    if name.is_empty() {
        let message = "Default group resources are not allowed.";
        return Err(ApiError::new(ErrorCode::INVALID_REQUEST, message));
    }
    let effective = apis.dynamic_config().effective();
    crate::group_configs::validate(&effective, &next)
        .map_err(|m| ApiError::new(ErrorCode::INVALID_CONFIG, m))?;
    if validate_only || ops.is_empty() {
        return Ok(());
    }
    Ok(apis
        .group_config_admin
        .alter(name.to_string(), ops, next)
        .await?)
}
