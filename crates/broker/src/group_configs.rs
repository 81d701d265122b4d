//! Dynamic group configs: the GROUP config resource (type 32) of KIP-848 and KIP-932, as Kafka 4.4's
//! `GroupConfig` defines, validates and describes it.
//!
//! A group's configs are set with IncrementalAlterConfigs/AlterConfigs (`kafka-configs.sh --entity-type
//! groups`), whether or not the group exists, and outlive it (Kafka 4.4 keeps them after DeleteGroups too).
//! They are stored like client-metrics subscriptions: in the topic registry standalone
//! ([`MetadataStore::set_group_config`](crate::metadata::MetadataStore::set_group_config)), as GROUP
//! `ConfigRecord`s through the controller in a cluster, which every broker mirrors into its registry; either way
//! [`MetadataStore::group_config`](crate::metadata::MetadataStore::group_config) is the lookup.
//!
//! - here: the key table ([`GROUP_CONFIGS`]: Kafka's names, types, lower bounds, broker synonyms and the broker
//!   keys bounding each value), [`validate`] with Kafka's messages, and the typed accessors the group code
//!   reads — [`share_settings`] and [`consumer_settings`]: the group's value, clamped to the broker's bounds as
//!   Kafka's `GroupConfig.evaluate` does, else the broker's default.
//! - `admin.rs`: [`GroupConfigAdmin`], where changes go (the registry standalone, the controller in a cluster).
//! - `duration.rs`: the ISO-8601 durations of `share.auto.offset.reset=by_duration:<duration>`.

mod admin;
mod duration;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

pub use admin::{wire, GroupConfigAdmin, LocalGroupConfigAdmin, QuorumGroupConfigAdmin};
pub use duration::parse_iso8601_ms;

use crate::config::BrokerConfig;

/// Resource type GROUP.
pub const RESOURCE_GROUP: i8 = metadata::RESOURCE_GROUP;

/// `share.auto.offset.reset`.
pub const SHARE_AUTO_OFFSET_RESET: &str = "share.auto.offset.reset";
/// `share.isolation.level`.
pub const SHARE_ISOLATION_LEVEL: &str = "share.isolation.level";

/// The value type of a group key (its DescribeConfigs type code is [`GroupConfigType::describe_code`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupConfigType {
    /// A 32-bit integer.
    Int,
    /// A 64-bit integer.
    Long,
    /// `true` / `false` (any case).
    Boolean,
    /// Text.
    String,
    /// A comma-separated list.
    List,
}

impl GroupConfigType {
    /// The DescribeConfigs `config_type` code (KIP-569).
    pub fn describe_code(self) -> i8 {
        match self {
            GroupConfigType::Boolean => 1,
            GroupConfigType::String => 2,
            GroupConfigType::Int => 3,
            GroupConfigType::Long => 5,
            GroupConfigType::List => 7,
        }
    }

    fn name(self) -> &'static str {
        match self {
            GroupConfigType::Int => "INT",
            GroupConfigType::Long => "LONG",
            GroupConfigType::Boolean => "BOOLEAN",
            GroupConfigType::String => "STRING",
            GroupConfigType::List => "LIST",
        }
    }
}

/// The broker keys bounding a group value (Kafka's `validateIntRange`/`Max`/`Min`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// No broker bound.
    None,
    /// Within `[min key, max key]`.
    Range(&'static str, &'static str),
    /// At most the value of the key.
    Max(&'static str),
    /// At least the value of the key.
    Min(&'static str),
}

/// What a value must be besides its type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// Nothing more.
    None,
    /// A number at least this (Kafka's `ConfigDef.Range.atLeast`).
    AtLeast(i64),
    /// One of these strings.
    OneOf(&'static [&'static str]),
    /// `latest`, `earliest` or `by_duration:<non-negative ISO-8601 duration>`.
    AutoOffsetReset,
    /// A topic name not starting with `__` (the dead-letter queue topic).
    DlqTopic,
    /// A list without repeated items.
    DistinctList,
    /// One of the broker's `group.streams.assignors`.
    StreamsAssignor,
}

/// One group config key.
#[derive(Debug, Clone, Copy)]
pub struct GroupConfigDef {
    /// Kafka's key, e.g. `share.record.lock.duration.ms`.
    pub name: &'static str,
    /// Value type.
    pub ty: GroupConfigType,
    /// The broker key whose value is the default (Kafka's `ALL_GROUP_CONFIG_SYNONYMS`); `""` for none.
    pub broker_synonym: &'static str,
    /// The default of a key without a broker synonym.
    pub default: &'static str,
    /// Kafka's `ConfigDef` check.
    pub check: Check,
    /// The broker bounds.
    pub bound: Bound,
    /// Internal: settable, but described only when set.
    pub internal: bool,
}

const fn key(
    name: &'static str,
    ty: GroupConfigType,
    broker_synonym: &'static str,
) -> GroupConfigDef {
    GroupConfigDef {
        name,
        ty,
        broker_synonym,
        default: "",
        check: Check::None,
        bound: Bound::None,
        internal: false,
    }
}

const fn int(
    name: &'static str,
    synonym: &'static str,
    at_least: i64,
    bound: Bound,
) -> GroupConfigDef {
    GroupConfigDef {
        check: Check::AtLeast(at_least),
        bound,
        ..key(name, GroupConfigType::Int, synonym)
    }
}

const fn internal(def: GroupConfigDef) -> GroupConfigDef {
    GroupConfigDef {
        internal: true,
        ..def
    }
}

const fn own(def: GroupConfigDef, default: &'static str, check: Check) -> GroupConfigDef {
    GroupConfigDef {
        default,
        check,
        ..def
    }
}

use GroupConfigType as T;

/// Every group key of Kafka 4.4, sorted by name.
pub const GROUP_CONFIGS: &[GroupConfigDef] = &[
    int(
        "consumer.assignment.interval.ms",
        "group.consumer.assignment.interval.ms",
        0,
        Bound::Range(
            "group.consumer.min.assignment.interval.ms",
            "group.consumer.max.assignment.interval.ms",
        ),
    ),
    internal(key(
        "consumer.assignor.offload.enable",
        T::Boolean,
        "group.consumer.assignor.offload.enable",
    )),
    int(
        "consumer.heartbeat.interval.ms",
        "group.consumer.heartbeat.interval.ms",
        1,
        Bound::Range(
            "group.consumer.min.heartbeat.interval.ms",
            "group.consumer.max.heartbeat.interval.ms",
        ),
    ),
    int(
        "consumer.session.timeout.ms",
        "group.consumer.session.timeout.ms",
        1,
        Bound::Range(
            "group.consumer.min.session.timeout.ms",
            "group.consumer.max.session.timeout.ms",
        ),
    ),
    own(
        key("errors.deadletterqueue.copy.record.enable", T::Boolean, ""),
        "false",
        Check::None,
    ),
    own(
        key("errors.deadletterqueue.topic.name", T::String, ""),
        "",
        Check::DlqTopic,
    ),
    int(
        "share.assignment.interval.ms",
        "group.share.assignment.interval.ms",
        0,
        Bound::Range(
            "group.share.min.assignment.interval.ms",
            "group.share.max.assignment.interval.ms",
        ),
    ),
    internal(key(
        "share.assignor.offload.enable",
        T::Boolean,
        "group.share.assignor.offload.enable",
    )),
    own(
        key(SHARE_AUTO_OFFSET_RESET, T::String, ""),
        "latest",
        Check::AutoOffsetReset,
    ),
    int(
        "share.delivery.count.limit",
        "group.share.delivery.count.limit",
        2,
        Bound::Range(
            "group.share.min.delivery.count.limit",
            "group.share.max.delivery.count.limit",
        ),
    ),
    int(
        "share.heartbeat.interval.ms",
        "group.share.heartbeat.interval.ms",
        1,
        Bound::Range(
            "group.share.min.heartbeat.interval.ms",
            "group.share.max.heartbeat.interval.ms",
        ),
    ),
    own(
        key(SHARE_ISOLATION_LEVEL, T::String, ""),
        "read_uncommitted",
        Check::OneOf(&["read_committed", "read_uncommitted"]),
    ),
    int(
        "share.partition.max.record.locks",
        "group.share.partition.max.record.locks",
        100,
        Bound::Range(
            "group.share.min.partition.max.record.locks",
            "group.share.max.partition.max.record.locks",
        ),
    ),
    int(
        "share.record.lock.duration.ms",
        "group.share.record.lock.duration.ms",
        1000,
        Bound::Range(
            "group.share.min.record.lock.duration.ms",
            "group.share.max.record.lock.duration.ms",
        ),
    ),
    own(
        key("share.renew.acknowledge.enable", T::Boolean, ""),
        "true",
        Check::None,
    ),
    int(
        "share.session.timeout.ms",
        "group.share.session.timeout.ms",
        1,
        Bound::Range(
            "group.share.min.session.timeout.ms",
            "group.share.max.session.timeout.ms",
        ),
    ),
    internal(GroupConfigDef {
        check: Check::AtLeast(0),
        ..key(
            "streams.acceptable.recovery.lag",
            T::Long,
            "group.streams.acceptable.recovery.lag",
        )
    }),
    int(
        "streams.assignment.interval.ms",
        "group.streams.assignment.interval.ms",
        0,
        Bound::Range(
            "group.streams.min.assignment.interval.ms",
            "group.streams.max.assignment.interval.ms",
        ),
    ),
    GroupConfigDef {
        check: Check::StreamsAssignor,
        ..key(
            "streams.assignor.name",
            T::String,
            "group.streams.assignors",
        )
    },
    internal(key(
        "streams.assignor.offload.enable",
        T::Boolean,
        "group.streams.assignor.offload.enable",
    )),
    int(
        "streams.heartbeat.interval.ms",
        "group.streams.heartbeat.interval.ms",
        1,
        Bound::Range(
            "group.streams.min.heartbeat.interval.ms",
            "group.streams.max.heartbeat.interval.ms",
        ),
    ),
    int(
        "streams.initial.rebalance.delay.ms",
        "group.streams.initial.rebalance.delay.ms",
        0,
        Bound::None,
    ),
    int(
        "streams.num.standby.replicas",
        "group.streams.num.standby.replicas",
        0,
        Bound::Max("group.streams.max.standby.replicas"),
    ),
    internal(int(
        "streams.num.warmup.replicas",
        "group.streams.num.warmup.replicas",
        0,
        Bound::Max("group.streams.max.warmup.replicas"),
    )),
    GroupConfigDef {
        check: Check::DistinctList,
        ..key(
            "streams.rack.aware.assignment.tags",
            T::List,
            "group.streams.rack.aware.assignment.tags",
        )
    },
    int(
        "streams.session.timeout.ms",
        "group.streams.session.timeout.ms",
        1,
        Bound::Range(
            "group.streams.min.session.timeout.ms",
            "group.streams.max.session.timeout.ms",
        ),
    ),
    internal(int(
        "streams.task.offset.interval.ms",
        "group.streams.task.offset.interval.ms",
        1,
        Bound::Min("group.streams.min.task.offset.interval.ms"),
    )),
];

/// The (session timeout, heartbeat interval) pairs whose session must exceed the interval.
const SESSION_PAIRS: [(&str, &str); 3] = [
    (
        "consumer.session.timeout.ms",
        "consumer.heartbeat.interval.ms",
    ),
    ("share.session.timeout.ms", "share.heartbeat.interval.ms"),
    (
        "streams.session.timeout.ms",
        "streams.heartbeat.interval.ms",
    ),
];

/// The definition of group key `name`.
pub fn group_def(name: &str) -> Option<&'static GroupConfigDef> {
    GROUP_CONFIGS.iter().find(|d| d.name == name)
}

/// The broker's value of group key `def` when the group sets none: its broker synonym's effective value (for
/// `streams.assignor.name` the first of `group.streams.assignors`), else the key's own default.
pub fn default_value(config: &BrokerConfig, def: &GroupConfigDef) -> String {
    if def.broker_synonym.is_empty() {
        return def.default.to_string();
    }
    let value = config.value(def.broker_synonym).unwrap_or_default();
    match def.check {
        Check::StreamsAssignor => list(&value).into_iter().next().unwrap_or_default(),
        _ => value,
    }
}

/// Validates a group's whole config set after a change, as Kafka's `GroupConfig.validate`: unknown keys, then
/// each value's type and `ConfigDef` check, then the broker bounds of the keys set, then that each session
/// timeout set (or its interval set) exceeds the heartbeat interval (the broker's default for the one not
/// set). `config` is the broker's effective config. The error is Kafka's INVALID_CONFIG message.
pub fn validate(config: &BrokerConfig, configs: &BTreeMap<String, String>) -> Result<(), String> {
    if let Some(name) = configs.keys().find(|k| group_def(k).is_none()) {
        return Err(format!("Unknown group config name: {name}"));
    }
    for def in GROUP_CONFIGS {
        if let Some(value) = configs.get(def.name) {
            check_value(config, def, value)?;
        }
    }
    for def in GROUP_CONFIGS {
        if let Some(value) = configs.get(def.name).and_then(|v| parse_i64(v)) {
            check_bound(config, def, value)?;
        }
    }
    for (session, interval) in SESSION_PAIRS {
        if !configs.contains_key(session) && !configs.contains_key(interval) {
            continue;
        }
        let effective = |name: &str| {
            let def = group_def(name).expect("a session pair key is a group key");
            (configs.get(name).and_then(|v| parse_i64(v)))
                .or_else(|| parse_i64(&default_value(config, def)))
                .unwrap_or(0)
        };
        if effective(session) <= effective(interval) {
            return Err(format!("{session} must be greater than {interval}"));
        }
    }
    Ok(())
}

/// The type and `ConfigDef` check of one value.
fn check_value(config: &BrokerConfig, def: &GroupConfigDef, value: &str) -> Result<(), String> {
    let invalid = |why: String| {
        format!(
            "Invalid value {value} for configuration {}: {why}",
            def.name
        )
    };
    let number = match def.ty {
        T::Int => Some(value.trim().parse::<i32>().map(i64::from).ok()),
        T::Long => Some(value.trim().parse::<i64>().ok()),
        _ => None,
    };
    match number {
        Some(None) => {
            return Err(invalid(format!("Not a number of type {}", def.ty.name())));
        }
        Some(Some(n)) => {
            if let Check::AtLeast(min) = def.check {
                if n < min {
                    return Err(invalid(format!("Value must be at least {min}")));
                }
            }
            return Ok(());
        }
        None => {}
    }
    if def.ty == T::Boolean && !["true", "false"].contains(&value.trim().to_lowercase().as_str()) {
        return Err(invalid("Expected value to be either true or false".into()));
    }
    match def.check {
        Check::OneOf(allowed) if !allowed.contains(&value.trim()) => Err(invalid(format!(
            "String must be one of: {}",
            allowed.join(", ")
        ))),
        Check::AutoOffsetReset if !auto_offset_reset_ok(value) => Err(invalid(format!(
            "Invalid value `{value}` for configuration {}. The value must be either 'earliest', 'latest' \
             or of the format 'by_duration:<PnDTnHnMn.nS>'.",
            def.name
        ))),
        Check::DlqTopic if value.trim().starts_with("__") => Err(format!(
            "{}: DLQ topic name must not start with '__'",
            def.name
        )),
        Check::DistinctList => {
            let items = list(value);
            let distinct: std::collections::BTreeSet<&String> = items.iter().collect();
            match distinct.len() == items.len() {
                true => Ok(()),
                false => Err(format!("{} must not contain duplicate tag keys.", def.name)),
            }
        }
        Check::StreamsAssignor => {
            let registered = list(&config.value(def.broker_synonym).unwrap_or_default());
            match registered.iter().any(|a| a == value.trim()) {
                true => Ok(()),
                false => Err(format!(
                    "{} '{}' is not a registered task assignor. Registered assignors are: [{}].",
                    def.name,
                    value.trim(),
                    registered.join(", ")
                )),
            }
        }
        _ => Ok(()),
    }
}

/// The broker bound of one numeric value.
fn check_bound(config: &BrokerConfig, def: &GroupConfigDef, value: i64) -> Result<(), String> {
    let broker = |key: &str| config.value(key).and_then(|v| parse_i64(&v));
    match def.bound {
        Bound::Range(min, max) => {
            let (min, max) = (
                broker(min).unwrap_or(i64::MIN),
                broker(max).unwrap_or(i64::MAX),
            );
            if value < min || value > max {
                let name = def.name;
                return Err(format!(
                    "{name} must be in the range {min} to {max} inclusive."
                ));
            }
        }
        Bound::Max(max) => match broker(max) {
            Some(max) if value > max => {
                return Err(format!("{} must be less than or equal to {max}", def.name));
            }
            _ => {}
        },
        Bound::Min(min) => match broker(min) {
            Some(min) if value < min => {
                return Err(format!(
                    "{} must be greater than or equal to {min}",
                    def.name
                ));
            }
            _ => {}
        },
        Bound::None => {}
    }
    Ok(())
}

/// `latest`, `earliest` or `by_duration:` with a non-negative ISO-8601 duration (Kafka's
/// `ShareGroupAutoOffsetResetStrategy.Validator`; case-sensitive, as Kafka).
fn auto_offset_reset_ok(value: &str) -> bool {
    match value {
        "latest" | "earliest" => true,
        v => v
            .strip_prefix("by_duration:")
            .and_then(parse_iso8601_ms)
            .is_some_and(|ms| ms >= 0),
    }
}

fn parse_i64(value: &str) -> Option<i64> {
    value.trim().parse().ok()
}

/// A list value as Kafka's `ConfigDef` parses it: split at `,`, items trimmed, an all-blank value empty.
fn list(value: &str) -> Vec<String> {
    if value.trim().is_empty() {
        return Vec::new();
    }
    value.split(',').map(|s| s.trim().to_string()).collect()
}

/// The value a group uses for numeric key `name`: the group's, clamped to the broker's bounds (Kafka's
/// `GroupConfig.evaluate`, which caps a stored value the broker's bounds no longer allow), else the broker's
/// default.
pub fn effective_i64(
    config: &BrokerConfig,
    group_configs: &BTreeMap<String, String>,
    name: &str,
) -> i64 {
    let Some(def) = group_def(name) else {
        return 0;
    };
    let default = parse_i64(&default_value(config, def)).unwrap_or(0);
    let Some(value) = group_configs.get(name).and_then(|v| parse_i64(v)) else {
        return default;
    };
    let broker = |key: &str| config.value(key).and_then(|v| parse_i64(&v));
    match def.bound {
        Bound::Range(min, max) => {
            let (lo, hi) = (
                broker(min).unwrap_or(i64::MIN),
                broker(max).unwrap_or(i64::MAX),
            );
            if lo <= hi {
                value.clamp(lo, hi)
            } else {
                value
            }
        }
        Bound::Max(max) => broker(max).map_or(value, |m| value.min(m)),
        Bound::Min(min) => broker(min).map_or(value, |m| value.max(m)),
        Bound::None => value,
    }
}

/// The value a group uses for text key `name`: the group's, else the broker's default.
pub fn effective_str(
    config: &BrokerConfig,
    group_configs: &BTreeMap<String, String>,
    name: &str,
) -> String {
    match (group_configs.get(name), group_def(name)) {
        (Some(v), _) => v.trim().to_string(),
        (None, Some(def)) => default_value(config, def),
        (None, None) => String::new(),
    }
}

/// A share group's settings (KIP-932): each the group's config if set (clamped to the broker's bounds), else
/// the broker's `group.share.*` default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareGroupSettingsValues {
    /// `share.record.lock.duration.ms` / `group.share.record.lock.duration.ms` (default 30000).
    pub record_lock_duration_ms: i64,
    /// `share.delivery.count.limit` / `group.share.delivery.count.limit` (default 5).
    pub delivery_count_limit: i16,
    /// `share.partition.max.record.locks` / `group.share.partition.max.record.locks` (default 2000).
    pub max_record_locks: usize,
    /// `share.auto.offset.reset`: `latest` (default), `earliest` or `by_duration:<ISO-8601 duration>`
    /// ([`parse_iso8601_ms`] reads the duration).
    pub auto_offset_reset: String,
    /// `share.isolation.level`: `read_uncommitted` (default) or `read_committed`.
    pub isolation_level: String,
    /// `share.session.timeout.ms` / `group.share.session.timeout.ms` (default 45000).
    pub session_timeout_ms: i32,
    /// `share.heartbeat.interval.ms` / `group.share.heartbeat.interval.ms` (default 5000).
    pub heartbeat_interval_ms: i32,
}

/// The settings of a share group whose dynamic configs are `group_configs` (from
/// [`MetadataStore::group_config`](crate::metadata::MetadataStore::group_config)); `config` is the broker's
/// effective config (`DynamicBrokerConfig::effective`).
pub fn share_settings(
    config: &BrokerConfig,
    group_configs: &BTreeMap<String, String>,
) -> ShareGroupSettingsValues {
    let int = |name: &str| effective_i64(config, group_configs, name);
    ShareGroupSettingsValues {
        record_lock_duration_ms: int("share.record.lock.duration.ms"),
        delivery_count_limit: int("share.delivery.count.limit").clamp(0, i16::MAX.into()) as i16,
        max_record_locks: int("share.partition.max.record.locks").max(0) as usize,
        auto_offset_reset: effective_str(config, group_configs, SHARE_AUTO_OFFSET_RESET),
        isolation_level: effective_str(config, group_configs, SHARE_ISOLATION_LEVEL),
        session_timeout_ms: int("share.session.timeout.ms").clamp(0, i32::MAX.into()) as i32,
        heartbeat_interval_ms: int("share.heartbeat.interval.ms").clamp(0, i32::MAX.into()) as i32,
    }
}

/// A KIP-848 consumer group's timeouts: each the group's config if set (clamped to the broker's bounds), else
/// the broker's `group.consumer.*` default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConsumerGroupSettingsValues {
    /// `consumer.session.timeout.ms` / `group.consumer.session.timeout.ms` (default 45000).
    pub session_timeout_ms: i32,
    /// `consumer.heartbeat.interval.ms` / `group.consumer.heartbeat.interval.ms` (default 5000).
    pub heartbeat_interval_ms: i32,
}

/// The timeouts of a consumer group whose dynamic configs are `group_configs`.
pub fn consumer_settings(
    config: &BrokerConfig,
    group_configs: &BTreeMap<String, String>,
) -> ConsumerGroupSettingsValues {
    let int =
        |name: &str| effective_i64(config, group_configs, name).clamp(0, i32::MAX.into()) as i32;
    ConsumerGroupSettingsValues {
        session_timeout_ms: int("consumer.session.timeout.ms"),
        heartbeat_interval_ms: int("consumer.heartbeat.interval.ms"),
    }
}
