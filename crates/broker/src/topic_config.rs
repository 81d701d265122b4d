//! Topic-level configuration resolved into the storage layer's settings: a topic's [`LogConfig`] from its
//! overrides and the effective broker config (topic override > per-broker > cluster default > static >
//! default, see [`crate::dynamic_config`]), and the log cleaner's [`storage::CleanerConfig`].

use std::collections::BTreeMap;

use protocol::record::{Compression, TimestampType};
use storage::LogConfig;

use crate::config::{keys, topic_value, BrokerConfig};

/// Builds the storage config of a topic from its overrides and the broker defaults.
pub fn log_config(config: &BrokerConfig, overrides: &BTreeMap<String, String>) -> LogConfig {
    let int = |key: &str, default: i64| -> i64 {
        topic_value(config, overrides, key)
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(default)
    };
    let d = LogConfig::default();
    LogConfig {
        segment_bytes: int("segment.bytes", d.segment_bytes as i64) as _,
        segment_ms: int("segment.ms", d.segment_ms),
        retention_ms: int("retention.ms", d.retention_ms),
        retention_bytes: int("retention.bytes", d.retention_bytes),
        index_interval_bytes: int("index.interval.bytes", d.index_interval_bytes as i64) as _,
        segment_index_bytes: int("segment.index.bytes", d.segment_index_bytes as i64) as _,
        flush_messages: int("flush.messages", d.flush_messages),
        flush_ms: int("flush.ms", d.flush_ms),
        max_message_bytes: int("max.message.bytes", d.max_message_bytes as i64) as _,
        min_insync_replicas: int("min.insync.replicas", 1).max(1) as usize,
        message_timestamp_type: match topic_value(config, overrides, "message.timestamp.type")
            .as_deref()
        {
            Some("LogAppendTime") => TimestampType::LogAppendTime,
            _ => TimestampType::CreateTime,
        },
        producer_id_expiration_ms: config.producer_id_expiration_ms,
        compression_type: match topic_value(config, overrides, "compression.type").as_deref() {
            Some("uncompressed") => Some(Compression::None),
            Some("gzip") => Some(Compression::Gzip),
            Some("snappy") => Some(Compression::Snappy),
            Some("lz4") => Some(Compression::Lz4),
            Some("zstd") => Some(Compression::Zstd),
            _ => None,
        },
        cleanup_policy: topic_value(config, overrides, "cleanup.policy")
            .and_then(|v| LogConfig::parse_cleanup_policy(v.trim_matches(['[', ']'])))
            .unwrap_or(d.cleanup_policy),
        delete_retention_ms: int("delete.retention.ms", d.delete_retention_ms),
        min_compaction_lag_ms: int("min.compaction.lag.ms", d.min_compaction_lag_ms),
        max_compaction_lag_ms: int("max.compaction.lag.ms", d.max_compaction_lag_ms),
        min_cleanable_dirty_ratio: topic_value(config, overrides, "min.cleanable.dirty.ratio")
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|r| r.is_finite())
            .unwrap_or(d.min_cleanable_dirty_ratio),
        ..d
    }
}

/// The log cleaner's settings from the broker keys `log.cleaner.dedupe.buffer.size` (bytes),
/// `log.cleaner.io.max.bytes.per.second` and `log.cleaner.backoff.ms` (Kafka's names and defaults: 128 MiB,
/// unlimited, 15000 ms). A value that is not positive keeps the storage default.
pub fn cleaner_config(config: &BrokerConfig) -> storage::CleanerConfig {
    let d = storage::CleanerConfig::default();
    let dedupe = config.get(keys::LOG_CLEANER_DEDUPE_BUFFER_SIZE);
    let io = config.get(keys::LOG_CLEANER_IO_MAX_BYTES_PER_SECOND);
    let backoff = config.get(keys::LOG_CLEANER_BACKOFF_MS);
    storage::CleanerConfig {
        dedupe_buffer_size: if dedupe > 0 {
            dedupe as usize
        } else {
            d.dedupe_buffer_size
        },
        io_max_bytes_per_second: if io > 0.0 && io.is_finite() {
            io
        } else {
            d.io_max_bytes_per_second
        },
        backoff_ms: if backoff > 0 {
            backoff as u64
        } else {
            d.backoff_ms
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compaction_configs_map_to_log_config() {
        let broker = BrokerConfig::from_pairs(&[]).unwrap();
        let d = log_config(&broker, &BTreeMap::new());
        assert_eq!(d.cleanup_policy, storage::CleanupPolicy::Delete);
        assert_eq!(d.delete_retention_ms, 86_400_000);
        assert_eq!(d.min_cleanable_dirty_ratio, 0.5);
        let o: BTreeMap<String, String> = [
            ("cleanup.policy", "compact,delete"),
            ("delete.retention.ms", "100"),
            ("min.compaction.lag.ms", "200"),
            ("max.compaction.lag.ms", "300"),
            ("min.cleanable.dirty.ratio", "0.1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let c = log_config(&broker, &o);
        assert_eq!(c.cleanup_policy, storage::CleanupPolicy::CompactDelete);
        assert_eq!(
            (
                c.delete_retention_ms,
                c.min_compaction_lag_ms,
                c.max_compaction_lag_ms
            ),
            (100, 200, 300)
        );
        assert_eq!(c.min_cleanable_dirty_ratio, 0.1);
        let mut o2 = BTreeMap::new();
        o2.insert("cleanup.policy".to_string(), "compact".to_string());
        assert_eq!(
            log_config(&broker, &o2).cleanup_policy,
            storage::CleanupPolicy::Compact
        );
    }
}
