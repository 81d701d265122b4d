use protocol::record::TimestampType;

/// `cleanup.policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CleanupPolicy {
    /// `delete`: retention by time/size.
    Delete,
    /// `compact`: no retention deletion; the log cleaner keeps the latest record per key.
    Compact,
    /// `compact,delete`.
    CompactDelete,
    /// The empty list (Kafka 4.x): neither, the same as `delete` with infinite retention — segments go only
    /// when they fall below the log start offset.
    Empty,
}

/// Per-log settings, Kafka topic-config names in the field docs, Kafka defaults in `Default`.
/// The broker fills it from `log.*` broker keys and topic configs.
#[derive(Debug, Clone)]
pub struct LogConfig {
    /// `segment.bytes`: roll when the active segment would exceed this (bytes). Default 1 GiB.
    pub segment_bytes: u64,
    /// `segment.ms`: roll a non-empty active segment this long after its first append. 7 days.
    pub segment_ms: i64,
    /// `retention.ms`: delete segments whose largest timestamp is older (ms); -1 = infinite.
    /// Default 7 days.
    pub retention_ms: i64,
    /// `retention.bytes`: delete oldest segments while the log is larger (bytes); -1 = infinite.
    pub retention_bytes: i64,
    /// `index.interval.bytes`: bytes between sparse index entries. Default 4096.
    pub index_interval_bytes: u64,
    /// `segment.index.bytes`: max size of an index file (bytes); a full index rolls. 10 MiB.
    pub segment_index_bytes: u64,
    /// `flush.messages`: fsync after this many appended messages. Default i64::MAX (never).
    pub flush_messages: i64,
    /// `flush.ms`: fsync when the last flush is this old (ms). Default i64::MAX (never).
    pub flush_ms: i64,
    /// `max.message.bytes`: largest batch (bytes). Default 1048588.
    pub max_message_bytes: usize,
    /// `message.timestamp.type`. Default CreateTime.
    pub message_timestamp_type: TimestampType,
    /// `message.timestamp.before.max.ms`: how far in the past a CreateTime timestamp may be (ms).
    /// Default i64::MAX.
    pub message_timestamp_before_max_ms: i64,
    /// `message.timestamp.after.max.ms`: how far in the future a CreateTime timestamp may be (ms).
    /// Default 3600000 (Kafka 4.0).
    pub message_timestamp_after_max_ms: i64,
    /// `cleanup.policy`. Default Delete.
    pub cleanup_policy: CleanupPolicy,
    /// `producer.id.expiration.ms` (broker key): producer state idle this long on the wall clock
    /// is dropped. Default 86400000.
    pub producer_id_expiration_ms: i64,
    /// Cap on the decompressed size of one batch during validation (bytes). Runnel-specific;
    /// default 64 MiB.
    pub max_decompressed_bytes: usize,
    /// `delete.retention.ms`: how long a tombstone (null value) survives after the cleaner first
    /// saw it (ms; KIP-534 delete horizon). Default 86400000 (1 day).
    pub delete_retention_ms: i64,
    /// `min.compaction.lag.ms`: a segment is cleanable only once its largest timestamp is at
    /// least this old (ms; KIP-58). Default 0.
    pub min_compaction_lag_ms: i64,
    /// `max.compaction.lag.ms`: the log is cleaned regardless of its dirty ratio once its
    /// oldest dirty batch is this old (ms; KIP-354). Default i64::MAX (never).
    pub max_compaction_lag_ms: i64,
    /// `min.cleanable.dirty.ratio`: clean when dirty bytes / (clean + dirty bytes) of the
    /// cleanable part reaches this. Default 0.5.
    pub min_cleanable_dirty_ratio: f64,
    /// `compression.type`: `None` keeps the producer's codec (`producer`); `Some(codec)` recompresses
    /// every batch stored with another codec (`uncompressed` is `Some(Compression::None)`).
    pub compression_type: Option<protocol::record::Compression>,
    /// `min.insync.replicas`: an acks=all append needs at least this many in-sync replicas (checked by
    /// the broker, before the append and when its replication completes). Default 1.
    pub min_insync_replicas: usize,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            segment_bytes: 1024 * 1024 * 1024,
            segment_ms: 7 * 24 * 60 * 60 * 1000,
            retention_ms: 7 * 24 * 60 * 60 * 1000,
            retention_bytes: -1,
            index_interval_bytes: 4096,
            segment_index_bytes: 10 * 1024 * 1024,
            flush_messages: i64::MAX,
            flush_ms: i64::MAX,
            max_message_bytes: 1_048_588,
            message_timestamp_type: TimestampType::CreateTime,
            message_timestamp_before_max_ms: i64::MAX,
            message_timestamp_after_max_ms: 3_600_000,
            cleanup_policy: CleanupPolicy::Delete,
            producer_id_expiration_ms: 86_400_000,
            max_decompressed_bytes: protocol::record::DEFAULT_MAX_DECOMPRESSED_BYTES,
            delete_retention_ms: 86_400_000,
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: i64::MAX,
            min_cleanable_dirty_ratio: 0.5,
            compression_type: None,
            min_insync_replicas: 1,
        }
    }
}

impl LogConfig {
    /// True when retention may delete segments (policy contains `delete`).
    pub fn deletes(&self) -> bool {
        matches!(
            self.cleanup_policy,
            CleanupPolicy::Delete | CleanupPolicy::CompactDelete
        )
    }

    /// True when the log cleaner compacts the log (policy contains `compact`).
    pub fn compacts(&self) -> bool {
        matches!(
            self.cleanup_policy,
            CleanupPolicy::Compact | CleanupPolicy::CompactDelete
        )
    }

    /// Parses a `cleanup.policy` value (`delete`, `compact`, `compact,delete` in any order,
    /// comma separated, blanks ignored; nothing is [`CleanupPolicy::Empty`]); `None` for anything else.
    pub fn parse_cleanup_policy(value: &str) -> Option<CleanupPolicy> {
        let (mut c, mut d) = (false, false);
        for part in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match part {
                "compact" => c = true,
                "delete" => d = true,
                _ => return None,
            }
        }
        match (c, d) {
            (true, true) => Some(CleanupPolicy::CompactDelete),
            (true, false) => Some(CleanupPolicy::Compact),
            (false, true) => Some(CleanupPolicy::Delete),
            (false, false) => Some(CleanupPolicy::Empty),
        }
    }
}
