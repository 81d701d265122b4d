//! DescribeConfigs (key 32), v1–4, read-only. Source: Kafka protocol guide; KIP-226 (synonyms, v1+; dynamic
//! broker configs), KIP-569 (config types and documentation, v3+).
//!
//! Each value reports its source — DYNAMIC_TOPIC_CONFIG (1), DYNAMIC_BROKER_CONFIG (2),
//! DYNAMIC_DEFAULT_BROKER_CONFIG (3), STATIC_BROKER_CONFIG (4), DEFAULT_CONFIG (5) — and, when asked, the
//! synonyms list of every level that sets it, most specific first, built as Kafka builds it (see
//! [`DynamicBrokerConfig::synonyms`](crate::dynamic_config::DynamicBrokerConfig::synonyms)).
//! - TOPIC: every topic key, its effective value (override > per-broker > cluster default > static > default).
//! - BROKER named by this broker's id: every known broker key with its effective value; `read_only` is false
//!   exactly for the keys AlterConfigs may change.
//! - BROKER named `""`: only the keys set at the cluster-default level, with their synonyms at that level.
//!
//! - CLIENT_METRICS (KIP-714): the keys set on the subscription, source CLIENT_METRICS_CONFIG (7), as Kafka
//!   (none for an unknown name; an empty name is INVALID_REQUEST).
//! - GROUP (KIP-848/KIP-932): every non-internal group key (an internal one only when set) — a set one with
//!   source DYNAMIC_GROUP_CONFIG (8) and synonyms [the group's, then its broker synonym's levels], the rest
//!   the broker synonym's value and source (or the key's own default, DEFAULT_CONFIG), as Kafka 4.4; any
//!   group id, existing or not; an empty one is INVALID_REQUEST. Authorized by DESCRIBE_CONFIGS on the group.
//!
//! Another broker's id or a non-numeric name is INVALID_REQUEST with Kafka's message.

use std::collections::BTreeMap;

use protocol::error::ErrorCode;
use protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use protocol::messages::{DescribeConfigsRequest, DescribeConfigsResponse};

use super::errors::ApiError;
use super::KafkaApis;
use crate::config::{broker_def, topic_def, ConfigType, BROKER_CONFIGS, TOPIC_CONFIGS};
use crate::dynamic_config::{is_dynamic, source, ConfigLevel, ConfigSynonym};
use crate::server::context::RequestContext;
use authorizer::{AclOperation, ResourceType};

/// Resource type TOPIC.
pub const RESOURCE_TOPIC: i8 = 2;
/// Resource type BROKER.
pub const RESOURCE_BROKER: i8 = 4;
/// Resource type CLIENT_METRICS (KIP-714).
pub const RESOURCE_CLIENT_METRICS: i8 = crate::client_metrics::RESOURCE_CLIENT_METRICS;
/// ConfigSource CLIENT_METRICS_CONFIG.
const CLIENT_METRICS_CONFIG: i8 = 7;
/// Resource type GROUP (KIP-848/KIP-932).
pub const RESOURCE_GROUP: i8 = crate::group_configs::RESOURCE_GROUP;
/// ConfigSource DYNAMIC_GROUP_CONFIG.
const DYNAMIC_GROUP_CONFIG: i8 = 8;

/// Names of all topic config keys, sorted.
pub fn topic_config_names() -> impl Iterator<Item = &'static str> {
    TOPIC_CONFIGS.iter().map(|d| d.name)
}

/// True for secrets, whose values are never returned.
pub fn is_sensitive(name: &str) -> bool {
    broker_def(name).is_some_and(|d| d.ty == ConfigType::Password)
}

/// The source of a topic key's effective value: DYNAMIC_TOPIC_CONFIG (1) for an override, else the source
/// of the broker synonym's most specific level (2..=5).
pub fn config_source_for_topic(
    apis: &KafkaApis,
    overrides: &BTreeMap<String, String>,
    name: &str,
) -> i8 {
    topic_synonyms(apis, overrides, name)
        .first()
        .map_or(source::DEFAULT_CONFIG, |s| s.source)
}

/// The synonyms of topic key `name`: its override (source 1), then its broker synonym's levels.
fn topic_synonyms(
    apis: &KafkaApis,
    overrides: &BTreeMap<String, String>,
    name: &str,
) -> Vec<ConfigSynonym> {
    let mut out = Vec::new();
    if let Some(v) = overrides.get(name) {
        out.push(ConfigSynonym {
            name: name.to_string(),
            value: Some(described_value(name, v.clone())),
            source: source::DYNAMIC_TOPIC_CONFIG,
        });
    }
    if let Some(d) = topic_def(name) {
        out.extend(apis.dynamic_config().synonyms(d.broker_synonym));
    }
    out
}

/// A topic value as Kafka describes it: a list's items trimmed, without empty items or repeats, joined by
/// `,` (`"delete, compact,delete"` → `"delete,compact"`); other types unchanged.
fn described_value(name: &str, value: String) -> String {
    if topic_def(name).is_none_or(|d| d.ty != ConfigType::List) {
        return value;
    }
    let mut items: Vec<&str> = Vec::new();
    for item in value.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        if !items.contains(&item) {
            items.push(item);
        }
    }
    items.join(",")
}

/// Answers DescribeConfigs for topics and this broker.
/// Kafka's config checks: `op` (DESCRIBE_CONFIGS or ALTER_CONFIGS) on the topic for a topic
/// (TOPIC_AUTHORIZATION_FAILED), on the group for a group (GROUP_AUTHORIZATION_FAILED), on the cluster for a
/// broker or client-metrics resource (CLUSTER_AUTHORIZATION_FAILED).
pub fn authorize_config(
    ctx: &RequestContext,
    op: AclOperation,
    resource_type: i8,
    name: &str,
) -> Result<(), ApiError> {
    match resource_type {
        RESOURCE_TOPIC => ctx.authorize(op, ResourceType::Topic, name),
        RESOURCE_GROUP => ctx.authorize(op, ResourceType::Group, name),
        RESOURCE_BROKER | RESOURCE_CLIENT_METRICS => ctx.authorize_cluster(op),
        _ => Ok(()),
    }
    .map_err(ApiError::from)
}

/// Answers DescribeConfigs.
pub fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: DescribeConfigsRequest,
) -> DescribeConfigsResponse {
    let version = ctx.api_version();
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
            let allowed = authorize_config(
                ctx,
                AclOperation::DescribeConfigs,
                res.resource_type,
                &res.resource_name,
            );
            if let Err(e) = allowed {
                (out.error_code, out.error_message) = e.into_parts();
                return out;
            }
            match res.resource_type {
                RESOURCE_TOPIC => {
                    let name = &res.resource_name;
                    match topic_entries(apis, name, &wanted, synonyms_wanted, version) {
                        Ok(configs) => out.configs = configs,
                        Err(e) => (out.error_code, out.error_message) = e.into_parts(),
                    }
                }
                RESOURCE_BROKER => {
                    let level = match apis.dynamic_config().resolve(&res.resource_name, true) {
                        Ok(level) => level,
                        Err(e) => {
                            (out.error_code, out.error_message) = ApiError::from(e).into_parts();
                            return out;
                        }
                    };
                    out.configs = broker_entries(apis, level, &wanted, synonyms_wanted, version);
                }
                RESOURCE_CLIENT_METRICS => match client_metrics_entries(apis, &res.resource_name) {
                    Ok(configs) => {
                        out.configs = configs.into_iter().filter(|c| wanted(&c.name)).collect()
                    }
                    Err(e) => (out.error_code, out.error_message) = e.into_parts(),
                },
                RESOURCE_GROUP => {
                    let name = &res.resource_name;
                    match group_entries(apis, name, &wanted, synonyms_wanted, version) {
                        Ok(configs) => out.configs = configs,
                        Err(e) => (out.error_code, out.error_message) = e.into_parts(),
                    }
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

/// A TOPIC resource's entries: every topic key with its effective value, source and synonyms.
fn topic_entries(
    apis: &KafkaApis,
    name: &str,
    wanted: &dyn Fn(&str) -> bool,
    synonyms_wanted: bool,
    version: i16,
) -> Result<Vec<DescribeConfigsResourceResult>, ApiError> {
    let Some(topic) = apis.metadata.topic(name) else {
        let message = format!("Topic {name} does not exist.");
        return Err(ApiError::new(
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
            message,
        ));
    };
    Ok(TOPIC_CONFIGS
        .iter()
        .filter(|d| wanted(d.name))
        .map(|d| {
            let synonyms = topic_synonyms(apis, &topic.configs, d.name);
            DescribeConfigsResourceResult {
                name: d.name.to_string(),
                value: apis
                    .topics
                    .topic_config_value(&topic.configs, d.name)
                    .map(|v| described_value(d.name, v)),
                read_only: false,
                config_source: synonyms
                    .first()
                    .map_or(source::DEFAULT_CONFIG, |s| s.source),
                is_sensitive: false,
                synonyms: if synonyms_wanted {
                    wire(synonyms)
                } else {
                    vec![]
                },
                config_type: if version >= 3 {
                    d.ty.describe_code()
                } else {
                    0
                },
                documentation: None,
                ..Default::default()
            }
        })
        .collect())
}

/// The BROKER resource's entries: every known key for this broker's id, only the cluster-default keys for "".
fn broker_entries(
    apis: &KafkaApis,
    level: ConfigLevel,
    wanted: &dyn Fn(&str) -> bool,
    synonyms_wanted: bool,
    version: i16,
) -> Vec<DescribeConfigsResourceResult> {
    let effective = apis.dynamic_config().effective();
    let defaults = apis
        .dynamic_config()
        .level_configs(ConfigLevel::ClusterDefault);
    BROKER_CONFIGS
        .iter()
        .filter(|d| wanted(d.name))
        .filter(|d| level == ConfigLevel::PerBroker || defaults.contains_key(d.name))
        .map(|d| {
            let sensitive = d.ty == ConfigType::Password;
            let mut synonyms = apis.dynamic_config().synonyms(d.name);
            let value = match level {
                ConfigLevel::PerBroker | ConfigLevel::OtherBroker(_) => effective.value(d.name),
                ConfigLevel::ClusterDefault => {
                    synonyms.retain(|s| s.source == source::DYNAMIC_DEFAULT_BROKER_CONFIG);
                    defaults.get(d.name).cloned()
                }
            };
            DescribeConfigsResourceResult {
                name: d.name.to_string(),
                value: if sensitive { None } else { value },
                read_only: !is_dynamic(d.name),
                config_source: synonyms
                    .first()
                    .map_or(source::DEFAULT_CONFIG, |s| s.source),
                is_sensitive: sensitive,
                synonyms: if synonyms_wanted {
                    wire(synonyms)
                } else {
                    vec![]
                },
                config_type: if version >= 3 {
                    d.ty.describe_code()
                } else {
                    0
                },
                documentation: None,
                ..Default::default()
            }
        })
        .collect()
}

/// A CLIENT_METRICS resource's set keys.
fn client_metrics_entries(
    apis: &KafkaApis,
    name: &str,
) -> Result<Vec<DescribeConfigsResourceResult>, ApiError> {
    if name.is_empty() {
        let message = "Client metrics subscription name must not be empty";
        return Err(ApiError::new(ErrorCode::INVALID_REQUEST, message));
    }
    let configs = (apis.telemetry.admin()).map_or_else(BTreeMap::new, |a| a.configs(name));
    Ok(configs
        .into_iter()
        .map(|(name, value)| DescribeConfigsResourceResult {
            name,
            value: Some(value),
            config_source: CLIENT_METRICS_CONFIG,
            ..Default::default()
        })
        .collect())
}

/// A GROUP resource's entries (see the module doc).
fn group_entries(
    apis: &KafkaApis,
    name: &str,
    wanted: &dyn Fn(&str) -> bool,
    synonyms_wanted: bool,
    version: i16,
) -> Result<Vec<DescribeConfigsResourceResult>, ApiError> {
    use crate::group_configs::{default_value, Check, GROUP_CONFIGS};
    if name.is_empty() {
        let message = "Group name must not be empty";
        return Err(ApiError::new(ErrorCode::INVALID_REQUEST, message));
    }
    let group = apis.group_config(name);
    let effective = apis.dynamic_config().effective();
    Ok(GROUP_CONFIGS
        .iter()
        .filter(|d| wanted(d.name) && (!d.internal || group.contains_key(d.name)))
        .map(|d| {
            let default = default_value(&effective, d);
            let mut synonyms = Vec::new();
            if let Some(v) = group.get(d.name) {
                synonyms.push(ConfigSynonym {
                    name: d.name.to_string(),
                    value: Some(v.clone()),
                    source: DYNAMIC_GROUP_CONFIG,
                });
            }
            if d.broker_synonym.is_empty() {
                synonyms.push(ConfigSynonym {
                    name: d.name.to_string(),
                    value: Some(default.clone()),
                    source: source::DEFAULT_CONFIG,
                });
            } else {
                let mut broker = apis.dynamic_config().synonyms(d.broker_synonym);
                if d.check == Check::StreamsAssignor {
                    // Kafka names the assignor the group would use: the first registered one.
                    for s in &mut broker {
                        s.value = Some(default.clone());
                    }
                }
                synonyms.extend(broker);
            }
            DescribeConfigsResourceResult {
                name: d.name.to_string(),
                value: Some(group.get(d.name).cloned().unwrap_or(default)),
                read_only: false,
                config_source: synonyms
                    .first()
                    .map_or(source::DEFAULT_CONFIG, |s| s.source),
                is_sensitive: false,
                synonyms: if synonyms_wanted {
                    wire(synonyms)
                } else {
                    vec![]
                },
                config_type: if version >= 3 {
                    d.ty.describe_code()
                } else {
                    0
                },
                documentation: None,
                ..Default::default()
            }
        })
        .collect())
}

fn wire(synonyms: Vec<ConfigSynonym>) -> Vec<DescribeConfigsSynonym> {
    synonyms
        .into_iter()
        .map(|s| DescribeConfigsSynonym {
            name: s.name,
            value: s.value,
            source: s.source,
            ..Default::default()
        })
        .collect()
}
