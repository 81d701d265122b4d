//! Coordinator configuration (broker configs of the same names; defaults are Kafka's).

/// Group coordinator settings. All durations in milliseconds.
///
/// Source: Kafka broker configs `group.min.session.timeout.ms`, `group.max.session.timeout.ms`,
/// `group.initial.rebalance.delay.ms`, `group.max.size`, `offsets.retention.minutes`,
/// `offsets.retention.check.interval.ms`, `offset.metadata.max.bytes`, `offsets.topic.num.partitions`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupConfig {
    /// Smallest session timeout a member may ask for (default 6000 ms); smaller gets INVALID_SESSION_TIMEOUT.
    pub group_min_session_timeout_ms: i32,
    /// Largest session timeout a member may ask for (default 1800000 ms); larger gets INVALID_SESSION_TIMEOUT.
    pub group_max_session_timeout_ms: i32,
    /// Delay of the first rebalance of an Empty group (default 3000 ms), extended by each new joiner, capped by the
    /// group's rebalance timeout. Never applied to later rebalances.
    pub group_initial_rebalance_delay_ms: i32,
    /// Maximum members per group (default `i32::MAX`, i.e. unlimited); more get GROUP_MAX_SIZE_REACHED.
    pub group_max_size: i32,
    /// How long a new member's JoinGroup may wait for its rebalance to complete before the member is dropped
    /// (Kafka's `group.classic.new.member.join.timeout`, 300000 ms).
    pub new_member_join_timeout_ms: i32,
    /// `offsets.retention.minutes` in milliseconds (default 7 days).
    pub offsets_retention_ms: i64,
    /// How often expired offsets are looked for (default 600000 ms).
    pub offsets_retention_check_interval_ms: i64,
    /// Longest commit metadata string in bytes (default 4096).
    pub offset_metadata_max_bytes: usize,
    /// Partition count of `__consumer_offsets` (default 50); see [`crate::partition_for`].
    pub offsets_topic_num_partitions: i32,
    /// KIP-848 `group.consumer.session.timeout.ms` (default 45000): a consumer-group member that does not
    /// heartbeat for this long is fenced.
    pub consumer_session_timeout_ms: i32,
    /// KIP-848 `group.consumer.heartbeat.interval.ms` (default 5000), told to members in every heartbeat.
    pub consumer_heartbeat_interval_ms: i32,
    /// KIP-848 `group.consumer.max.size` (default `i32::MAX`): more members get GROUP_MAX_SIZE_REACHED.
    pub consumer_max_size: i32,
    /// KIP-848 `group.consumer.assignors` (default `uniform, range`); the first is the default.
    pub consumer_assignors: Vec<String>,
    /// KIP-932 `group.share.session.timeout.ms` (default 45000): a share-group member that does not
    /// heartbeat for this long is removed.
    pub share_session_timeout_ms: i32,
    /// KIP-932 `group.share.heartbeat.interval.ms` (default 5000), told to members in every heartbeat.
    pub share_heartbeat_interval_ms: i32,
    /// KIP-932 `group.share.max.size` (default 200): more members get GROUP_MAX_SIZE_REACHED.
    pub share_max_size: i32,
    /// KIP-848 `group.consumer.migration.policy` (default `bidirectional`): whether a classic group with
    /// members is upgraded to a consumer group when a ConsumerGroupHeartbeat joins it, and whether a consumer
    /// group whose members all speak the classic protocol again is downgraded back.
    pub consumer_migration_policy: ConsumerGroupMigrationPolicy,
}

/// One group's own session timeout and heartbeat interval (its dynamic group configs, KIP-848
/// `consumer.session.timeout.ms` / `consumer.heartbeat.interval.ms` and KIP-932 `share.session.timeout.ms` /
/// `share.heartbeat.interval.ms`), already clamped to the broker's bounds; `None` keeps the broker's
/// `group.consumer.*` / `group.share.*` value of [`GroupConfig`]. Milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupTimeouts {
    /// `consumer.session.timeout.ms`.
    pub consumer_session_timeout_ms: Option<i32>,
    /// `consumer.heartbeat.interval.ms`.
    pub consumer_heartbeat_interval_ms: Option<i32>,
    /// `share.session.timeout.ms`.
    pub share_session_timeout_ms: Option<i32>,
    /// `share.heartbeat.interval.ms`.
    pub share_heartbeat_interval_ms: Option<i32>,
}

/// Kafka's `ConsumerGroupMigrationPolicy` (`group.consumer.migration.policy`): which online conversions
/// between classic and consumer groups are allowed (KIP-848 "online upgrade/downgrade"). An *empty* classic
/// group is converted by a consumer-protocol join whatever the policy, as in Kafka.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ConsumerGroupMigrationPolicy {
    /// Both upgrade and downgrade (Kafka 4.x default).
    #[default]
    Bidirectional,
    /// Only classic → consumer.
    Upgrade,
    /// Only consumer → classic.
    Downgrade,
    /// Neither.
    Disabled,
}

impl ConsumerGroupMigrationPolicy {
    /// The policy named `s` (case-insensitive, as Kafka's `CaseInsensitiveValidString`); `None` otherwise.
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "bidirectional" => Some(Self::Bidirectional),
            "upgrade" => Some(Self::Upgrade),
            "downgrade" => Some(Self::Downgrade),
            "disabled" => Some(Self::Disabled),
            _ => None,
        }
    }

    /// Kafka's `isUpgradeEnabled`: a non-empty classic group may become a consumer group.
    pub fn is_upgrade_enabled(self) -> bool {
        matches!(self, Self::Bidirectional | Self::Upgrade)
    }

    /// Kafka's `isDowngradeEnabled`: a consumer group left with classic members only may become classic.
    pub fn is_downgrade_enabled(self) -> bool {
        matches!(self, Self::Bidirectional | Self::Downgrade)
    }

    /// The config value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Bidirectional => "bidirectional",
            Self::Upgrade => "upgrade",
            Self::Downgrade => "downgrade",
            Self::Disabled => "disabled",
        }
    }
}

impl Default for GroupConfig {
    fn default() -> Self {
        GroupConfig {
            group_min_session_timeout_ms: 6_000,
            group_max_session_timeout_ms: 1_800_000,
            group_initial_rebalance_delay_ms: 3_000,
            group_max_size: i32::MAX,
            new_member_join_timeout_ms: 300_000,
            offsets_retention_ms: 7 * 24 * 60 * 60 * 1000,
            offsets_retention_check_interval_ms: 600_000,
            offset_metadata_max_bytes: 4096,
            offsets_topic_num_partitions: 50,
            consumer_session_timeout_ms: 45_000,
            consumer_heartbeat_interval_ms: 5_000,
            consumer_max_size: i32::MAX,
            consumer_assignors: vec![
                crate::consumer::assignor::UNIFORM.to_string(),
                crate::consumer::assignor::RANGE.to_string(),
            ],
            share_session_timeout_ms: 45_000,
            share_heartbeat_interval_ms: 5_000,
            share_max_size: 200,
            consumer_migration_policy: ConsumerGroupMigrationPolicy::Bidirectional,
        }
    }
}
