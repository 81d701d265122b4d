//! Client metrics subscriptions: the CLIENT_METRICS config resources (resource type 16) of KIP-714, as
//! Kafka's `ClientMetricsConfigs` defines and validates them.
//!
//! A resource's name is the subscription's; its keys are `metrics` (a comma-separated list of metric-name
//! prefixes; `*` = all; empty = none), `interval.ms` (the push interval, 100..=3600000, default 300000) and
//! `match` (a comma-separated list of `selector=regex`, every one of which must match the whole value of
//! the client's selector; none = every client). Selectors: `client_instance_id`, `client_id`,
//! `client_software_name`, `client_software_version`, `client_source_address`, `client_source_port`.

use std::collections::BTreeMap;

use regex::Regex;

/// The `metrics` key.
pub const METRICS: &str = "metrics";
/// The `interval.ms` key.
pub const INTERVAL_MS: &str = "interval.ms";
/// The `match` key.
pub const MATCH: &str = "match";
/// The keys of a CLIENT_METRICS resource.
pub const KEYS: [&str; 3] = [METRICS, INTERVAL_MS, MATCH];
/// The push interval of a subscription without `interval.ms`, and of a client without any (ms).
pub const INTERVAL_MS_DEFAULT: i32 = 300_000;
/// The least `interval.ms` (ms).
pub const INTERVAL_MS_MIN: i32 = 100;
/// The largest `interval.ms` (ms, one hour).
pub const INTERVAL_MS_MAX: i32 = 3_600_000;
/// The `metrics` item that subscribes every metric.
pub const ALL_METRICS: &str = "*";

/// The selectors a `match` entry may name.
pub const SELECTORS: [&str; 6] = [
    "client_instance_id",
    "client_id",
    "client_software_name",
    "client_software_version",
    "client_source_address",
    "client_source_port",
];

/// Why a CLIENT_METRICS config set is refused, with Kafka's wording.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubscriptionError {
    /// An empty name, an unknown key or an interval out of range (Kafka: INVALID_REQUEST, 42).
    #[error("{0}")]
    InvalidRequest(String),
    /// A value that does not parse or a bad `match` entry (Kafka: INVALID_CONFIG, 40).
    #[error("{0}")]
    InvalidConfig(String),
}

/// One parsed subscription.
#[derive(Debug, Clone)]
pub struct Subscription {
    /// The resource name.
    pub name: String,
    /// Metric-name prefixes (`*` = all).
    pub metrics: Vec<String>,
    /// The push interval (ms).
    pub interval_ms: i32,
    /// `(selector, regex anchored at both ends)`; empty = every client.
    pub matches: Vec<(String, Regex)>,
}

/// What a client is matched on: the values of the selectors.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientInfo {
    /// `client_instance_id` (filled in by the manager).
    pub client_instance_id: String,
    /// The request header's client id.
    pub client_id: String,
    /// KIP-511's software name from the connection's ApiVersions (empty if unknown).
    pub software_name: String,
    /// KIP-511's software version (empty if unknown).
    pub software_version: String,
    /// The peer's IP address.
    pub source_address: String,
    /// The peer's port.
    pub source_port: String,
}

impl ClientInfo {
    fn selector(&self, name: &str) -> &str {
        match name {
            "client_instance_id" => &self.client_instance_id,
            "client_id" => &self.client_id,
            "client_software_name" => &self.software_name,
            "client_software_version" => &self.software_version,
            "client_source_address" => &self.source_address,
            _ => &self.source_port,
        }
    }
}

impl Subscription {
    /// True when every `match` entry matches `client`.
    pub fn matches(&self, client: &ClientInfo) -> bool {
        (self.matches.iter()).all(|(selector, re)| re.is_match(client.selector(selector)))
    }
}

/// A list value as Kafka's `ConfigDef` parses it: split at `,`, items trimmed, an all-blank value empty.
pub fn parse_list(value: &str) -> Vec<String> {
    if value.trim().is_empty() {
        return Vec::new();
    }
    value.split(',').map(|s| s.trim().to_string()).collect()
}

/// Parses and validates the config set of subscription `name` (Kafka's `ClientMetricsConfigs.validate`).
pub fn parse(
    name: &str,
    configs: &BTreeMap<String, String>,
) -> Result<Subscription, SubscriptionError> {
    if name.is_empty() {
        let message = "Subscription name can't be empty".to_string();
        return Err(SubscriptionError::InvalidRequest(message));
    }
    if let Some(key) = configs.keys().find(|k| !KEYS.contains(&k.as_str())) {
        let message = format!("Unknown client metrics configuration: {key}");
        return Err(SubscriptionError::InvalidRequest(message));
    }
    let interval_ms = match configs.get(INTERVAL_MS) {
        None => INTERVAL_MS_DEFAULT,
        Some(v) => parse_interval(v)?,
    };
    let metrics = configs
        .get(METRICS)
        .map_or_else(Vec::new, |v| parse_list(v));
    let matches = configs.get(MATCH).map_or_else(Vec::new, |v| parse_list(v));
    Ok(Subscription {
        name: name.to_string(),
        metrics,
        interval_ms,
        matches: parse_matches(&matches)?,
    })
}

/// An `interval.ms` value: an int in `100..=3600000`.
pub fn parse_interval(value: &str) -> Result<i32, SubscriptionError> {
    let v: i32 = value.trim().parse().map_err(|_| {
        SubscriptionError::InvalidConfig(format!(
            "Invalid value {value} for configuration {INTERVAL_MS}: Not a number of type INT"
        ))
    })?;
    if !(INTERVAL_MS_MIN..=INTERVAL_MS_MAX).contains(&v) {
        return Err(SubscriptionError::InvalidRequest(format!(
            "Invalid value {v} for {INTERVAL_MS}, interval must be between 100 and 3600000 (1 hour)"
        )));
    }
    Ok(v)
}

/// `selector=regex` entries: exactly one `=`, a known selector, a valid regex (matched in full).
fn parse_matches(entries: &[String]) -> Result<Vec<(String, Regex)>, SubscriptionError> {
    let illegal =
        |e: &str| SubscriptionError::InvalidConfig(format!("Illegal client matching pattern: {e}"));
    let mut out: Vec<(String, Regex)> = Vec::new();
    for entry in entries {
        let parts: Vec<&str> = entry.split('=').collect();
        let [selector, pattern] = parts[..] else {
            return Err(illegal(entry));
        };
        let (selector, pattern) = (selector.trim(), pattern.trim());
        if pattern.is_empty() || !SELECTORS.contains(&selector) {
            return Err(illegal(entry));
        }
        let re = Regex::new(&format!("^(?:{pattern})$")).map_err(|_| illegal(entry))?;
        out.retain(|(s, _)| s != selector);
        out.push((selector.to_string(), re));
    }
    Ok(out)
}
