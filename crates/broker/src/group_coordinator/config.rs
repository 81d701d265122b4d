//! The group coordinator's settings, read from the broker config (`group.*`, `offsets.*`).

use coordinator::GroupConfig;

use crate::config::{keys, BrokerConfig};

/// The coordinator settings taken from the broker config (`group.*`, `offsets.*`).
pub fn group_config(config: &BrokerConfig) -> GroupConfig {
    let d = GroupConfig::default();
    GroupConfig {
        group_min_session_timeout_ms: config.group_min_session_timeout_ms,
        group_max_session_timeout_ms: config.group_max_session_timeout_ms,
        group_initial_rebalance_delay_ms: config
            .group_initial_rebalance_delay_ms
            .clamp(0, i64::from(i32::MAX)) as i32,
        offsets_retention_ms: config.offsets_retention_ms,
        offsets_topic_num_partitions: config.offsets_topic_num_partitions.max(1),
        group_max_size: config.get(keys::GROUP_MAX_SIZE).max(1),
        offset_metadata_max_bytes: config.get(keys::OFFSET_METADATA_MAX_BYTES).max(0) as usize,
        offsets_retention_check_interval_ms: config
            .get(keys::OFFSETS_RETENTION_CHECK_INTERVAL_MS)
            .max(1),
        consumer_session_timeout_ms: config.get(keys::GROUP_CONSUMER_SESSION_TIMEOUT_MS).max(1),
        consumer_heartbeat_interval_ms: config
            .get(keys::GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS)
            .max(1),
        consumer_max_size: config.get(keys::GROUP_CONSUMER_MAX_SIZE).max(1),
        consumer_assignors: consumer_assignors(config),
        consumer_migration_policy: coordinator::ConsumerGroupMigrationPolicy::parse(
            &config.get(keys::GROUP_CONSUMER_MIGRATION_POLICY),
        )
        .unwrap_or_default(),
        ..d
    }
}

/// `group.consumer.assignors`: the names of the server assignors Runnel has (`uniform`, `range`; Kafka also
/// accepts class names, whose simple names are matched here), in order; unknown ones are dropped, and the
/// default order is kept when none is left.
fn consumer_assignors(config: &BrokerConfig) -> Vec<String> {
    let known = [
        coordinator::consumer::assignor::UNIFORM,
        coordinator::consumer::assignor::RANGE,
    ];
    let wanted: Vec<String> = (config.value("group.consumer.assignors").unwrap_or_default())
        .split(',')
        .map(|s| {
            s.trim()
                .rsplit('.')
                .next()
                .unwrap_or("")
                .to_ascii_lowercase()
        })
        .map(|s| s.trim_end_matches("assignor").to_string())
        .filter(|s| known.contains(&s.as_str()))
        .collect();
    match wanted.is_empty() {
        true => GroupConfig::default().consumer_assignors,
        false => wanted,
    }
}
