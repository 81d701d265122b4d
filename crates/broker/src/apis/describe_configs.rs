//! DescribeConfigs (key 32), v1–4, read-only. Source: Kafka protocol guide; KIP-226 (synonyms, v1+),
//! KIP-569 (config types and documentation, v3+).
//!
//! Topic configs report each topic key's effective value with its source: DYNAMIC_TOPIC_CONFIG (1) for a
//! topic override, STATIC_BROKER_CONFIG (4) when the broker synonym was set in the broker's config, else
//! DEFAULT_CONFIG (5); synonyms list those layers, most specific first. Broker configs report every known
//! broker key (read-only: nothing is dynamic yet).

use std::collections::BTreeMap;

use protocol::error::ErrorCode;
use protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use protocol::messages::{DescribeConfigsRequest, DescribeConfigsResponse};
use protocol::RequestHeader;

use super::KafkaApis;
use crate::config::{broker_def, topic_def, ConfigType, BROKER_CONFIGS, TOPIC_CONFIGS};

/// Resource type TOPIC.
pub const RESOURCE_TOPIC: i8 = 2;
/// Resource type BROKER.
pub const RESOURCE_BROKER: i8 = 4;

const SOURCE_DYNAMIC_TOPIC: i8 = 1;
const SOURCE_STATIC_BROKER: i8 = 4;
const SOURCE_DEFAULT: i8 = 5;

/// Names of all topic config keys, sorted.
pub fn topic_config_names() -> impl Iterator<Item = &'static str> {
    TOPIC_CONFIGS.iter().map(|d| d.name)
}

/// True for secrets, whose values are never returned.
pub fn is_sensitive(name: &str) -> bool {
    broker_def(name).is_some_and(|d| d.ty == ConfigType::Password)
}

/// The source of a topic key's effective value.
pub fn config_source_for_topic(
    apis: &KafkaApis,
    overrides: &BTreeMap<String, String>,
    name: &str,
) -> i8 {
    if overrides.contains_key(name) {
        SOURCE_DYNAMIC_TOPIC
    } else if topic_def(name).is_some_and(|d| apis.config().is_explicit(d.broker_synonym)) {
        SOURCE_STATIC_BROKER
    } else {
        SOURCE_DEFAULT
    }
}

/// Answers DescribeConfigs for topics and this broker.
pub fn handle(
    apis: &KafkaApis,
    header: &RequestHeader,
    request: DescribeConfigsRequest,
) -> DescribeConfigsResponse {
    let version = header.request_api_version;
    let synonyms_wanted = request.include_synonyms;
    let results = request
        .resources
        .into_iter()
        .map(|res| {
            let mut out = DescribeConfigsResult {
                resource_type: res.resource_type,
                resource_name: res.resource_name.clone(),
                ..Default::default()
            };
            let wanted = |name: &str| {
                res.configuration_keys
                    .as_ref()
                    .is_none_or(|keys| keys.iter().any(|k| k == name))
            };
            match res.resource_type {
                RESOURCE_TOPIC => {
                    let Some(topic) = apis.metadata.topic(&res.resource_name) else {
                        out.error_code = ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.0;
                        out.error_message = Some(format!("Topic {} does not exist.", res.resource_name));
                        return out;
                    };
                    out.configs = TOPIC_CONFIGS
                        .iter()
                        .filter(|d| wanted(d.name))
                        .map(|d| {
                            let mut synonyms = Vec::new();
                            if let Some(v) = topic.configs.get(d.name) {
                                synonyms.push(synonym(d.name, Some(v.clone()), SOURCE_DYNAMIC_TOPIC));
                            }
                            if let Some(v) = apis.config().explicit.get(d.broker_synonym) {
                                synonyms.push(synonym(d.broker_synonym, Some(v.clone()), SOURCE_STATIC_BROKER));
                            }
                            if let Some(def) = broker_def(d.broker_synonym).and_then(|b| b.default) {
                                synonyms.push(synonym(d.broker_synonym, Some(def.to_string()), SOURCE_DEFAULT));
                            }
                            DescribeConfigsResourceResult {
                                name: d.name.to_string(),
                                value: apis.topics.topic_config_value(&topic.configs, d.name),
                                read_only: false,
                                config_source: config_source_for_topic(apis, &topic.configs, d.name),
                                is_sensitive: false,
                                synonyms: if synonyms_wanted { synonyms } else { vec![] },
                                config_type: if version >= 3 { d.ty.describe_code() } else { 0 },
                                documentation: None,
                                ..Default::default()
                            }
                        })
                        .collect();
                }
                RESOURCE_BROKER => {
                    let node = apis.config().node_id.to_string();
                    if !res.resource_name.is_empty() && res.resource_name != node {
                        out.error_code = ErrorCode::INVALID_REQUEST.0;
                        out.error_message = Some(format!(
                            "Unexpected broker id, expected {node} or empty string, but received {}",
                            res.resource_name
                        ));
                        return out;
                    }
                    out.configs = BROKER_CONFIGS
                        .iter()
                        .filter(|d| wanted(d.name))
                        .map(|d| {
                            let explicit = apis.config().is_explicit(d.name);
                            let sensitive = d.ty == ConfigType::Password;
                            let value = if sensitive { None } else { apis.config().value(d.name) };
                            let source = if explicit { SOURCE_STATIC_BROKER } else { SOURCE_DEFAULT };
                            let mut synonyms = Vec::new();
                            if synonyms_wanted {
                                if explicit {
                                    synonyms.push(synonym(d.name, value.clone(), SOURCE_STATIC_BROKER));
                                }
                                if let Some(def) = d.default {
                                    synonyms.push(synonym(d.name, Some(def.to_string()), SOURCE_DEFAULT));
                                }
                            }
                            DescribeConfigsResourceResult {
                                name: d.name.to_string(),
                                value,
                                read_only: true,
                                config_source: source,
                                is_sensitive: sensitive,
                                synonyms,
                                config_type: if version >= 3 { d.ty.describe_code() } else { 0 },
                                documentation: None,
                                ..Default::default()
                            }
                        })
                        .collect();
                }
                other => {
                    out.error_code = ErrorCode::INVALID_REQUEST.0;
                    out.error_message = Some(format!("Unsupported resource type {other}"));
                }
            }
            out
        })
        .collect();
    DescribeConfigsResponse {
        results,
        ..Default::default()
    }
}

fn synonym(name: &str, value: Option<String>, source: i8) -> DescribeConfigsSynonym {
    DescribeConfigsSynonym {
        name: name.to_string(),
        value,
        source,
        ..Default::default()
    }
}
