//! AlterConfigs (key 33), v0–2, and IncrementalAlterConfigs (key 44), v0–1. Source: Kafka protocol guide;
//! KIP-133 (AlterConfigs), KIP-339 (IncrementalAlterConfigs: SET 0, DELETE 1, APPEND 2, SUBTRACT 3).
//!
//! Topic configs only: AlterConfigs replaces a topic's whole override set, IncrementalAlterConfigs edits
//! it key by key. Changes are validated (unknown key or bad value → INVALID_CONFIG naming it), persisted
//! with the topic, and applied to the live logs at once. `validate_only` changes nothing. Broker resources
//! are refused with INVALID_REQUEST: no broker config is dynamic yet.

use std::collections::BTreeMap;

use protocol::error::ErrorCode;
use protocol::messages::alter_configs_response::AlterConfigsResourceResponse;
use protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse as IncrementalResult;
use protocol::messages::{
    AlterConfigsRequest, AlterConfigsResponse, IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
};
use protocol::RequestHeader;

use super::describe_configs::{RESOURCE_BROKER, RESOURCE_TOPIC};
use super::KafkaApis;
use crate::config::topic_def;
use crate::topics::ApiError;

const OP_SET: i8 = 0;
const OP_DELETE: i8 = 1;
const OP_APPEND: i8 = 2;
const OP_SUBTRACT: i8 = 3;

/// Answers AlterConfigs: each topic's overrides become exactly the given set.
pub fn handle(
    apis: &KafkaApis,
    _header: &RequestHeader,
    request: AlterConfigsRequest,
) -> AlterConfigsResponse {
    let responses = request
        .resources
        .into_iter()
        .map(|res| {
            let result = check_resource(res.resource_type).and_then(|()| {
                let mut configs = BTreeMap::new();
                for c in res.configs {
                    let value = c.value.ok_or_else(|| {
                        ApiError::new(
                            ErrorCode::INVALID_CONFIG,
                            format!("Null value not supported for {}", c.name),
                        )
                    })?;
                    configs.insert(c.name, value);
                }
                apis.topics
                    .set_topic_configs(&res.resource_name, configs, request.validate_only)
            });
            let (code, message) = split(result);
            AlterConfigsResourceResponse {
                error_code: code,
                error_message: message,
                resource_type: res.resource_type,
                resource_name: res.resource_name,
                ..Default::default()
            }
        })
        .collect();
    AlterConfigsResponse {
        responses,
        ..Default::default()
    }
}

/// Answers IncrementalAlterConfigs: SET, DELETE, APPEND and SUBTRACT per key (APPEND/SUBTRACT only on list
/// keys, e.g. `cleanup.policy`).
pub fn handle_incremental(
    apis: &KafkaApis,
    _header: &RequestHeader,
    request: IncrementalAlterConfigsRequest,
) -> IncrementalAlterConfigsResponse {
    let responses = request
        .resources
        .into_iter()
        .map(|res| {
            let result = check_resource(res.resource_type).and_then(|()| {
                let topic = apis.metadata.topic(&res.resource_name).ok_or_else(|| {
                    ApiError::new(
                        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                        format!("Topic {} does not exist.", res.resource_name),
                    )
                })?;
                let mut configs = topic.configs.clone();
                for c in res.configs {
                    let def = topic_def(&c.name).ok_or_else(|| {
                        ApiError::new(
                            ErrorCode::INVALID_CONFIG,
                            format!("Unknown topic config name: {}", c.name),
                        )
                    })?;
                    let is_list = def.ty == crate::config::ConfigType::List;
                    match c.config_operation {
                        OP_SET => {
                            let v = c.value.ok_or_else(|| {
                                ApiError::new(
                                    ErrorCode::INVALID_CONFIG,
                                    format!("Null value not supported for {}", c.name),
                                )
                            })?;
                            configs.insert(c.name, v);
                        }
                        OP_DELETE => {
                            configs.remove(&c.name);
                        }
                        OP_APPEND | OP_SUBTRACT if is_list => {
                            let current = apis
                                .topics
                                .topic_config_value(&configs, &c.name)
                                .unwrap_or_default();
                            let mut items: Vec<String> = current
                                .split(',')
                                .map(|s| s.trim().to_string())
                                .filter(|s| !s.is_empty())
                                .collect();
                            for v in c
                                .value
                                .unwrap_or_default()
                                .split(',')
                                .map(str::trim)
                                .filter(|s| !s.is_empty())
                            {
                                if c.config_operation == OP_APPEND {
                                    if !items.iter().any(|i| i == v) {
                                        items.push(v.to_string());
                                    }
                                } else {
                                    items.retain(|i| i != v);
                                }
                            }
                            configs.insert(c.name, items.join(","));
                        }
                        OP_APPEND | OP_SUBTRACT => {
                            return Err(ApiError::new(
                                ErrorCode::INVALID_CONFIG,
                                format!(
                                    "Config value append/subtract is not allowed for config key {}",
                                    c.name
                                ),
                            ))
                        }
                        other => {
                            return Err(ApiError::new(
                                ErrorCode::INVALID_REQUEST,
                                format!("Unknown config operation {other}"),
                            ))
                        }
                    }
                }
                apis.topics
                    .set_topic_configs(&res.resource_name, configs, request.validate_only)
            });
            let (code, message) = split(result);
            IncrementalResult {
                error_code: code,
                error_message: message,
                resource_type: res.resource_type,
                resource_name: res.resource_name,
                ..Default::default()
            }
        })
        .collect();
    IncrementalAlterConfigsResponse {
        responses,
        ..Default::default()
    }
}

fn check_resource(resource_type: i8) -> Result<(), ApiError> {
    match resource_type {
        RESOURCE_TOPIC => Ok(()),
        RESOURCE_BROKER => Err(ApiError::new(
            ErrorCode::INVALID_REQUEST,
            "Broker configs are static in Runnel: set them in the properties file or with --set",
        )),
        other => Err(ApiError::new(
            ErrorCode::INVALID_REQUEST,
            format!("Unsupported resource type {other}"),
        )),
    }
}

fn split(result: Result<(), ApiError>) -> (i16, Option<String>) {
    match result {
        Ok(()) => (0, None),
        Err(e) => (e.code.0, Some(e.message)),
    }
}
