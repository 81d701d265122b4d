//! Typed broker config keys: each constant names a key of the key table ([`super::BROKER_CONFIGS`]) with the
//! Rust type it is read as, so code reads `config.get(keys::LOG_CLEANER_ENABLE)` (a `bool`) instead of parsing
//! a string at the point of use. A unit test checks every key here against the table: the key exists, its
//! table type fits the Rust type, and a non-nullable key has a default.
//!
//! Read dynamic keys from the effective config ([`crate::dynamic_config::DynamicBrokerConfig::effective`]) so
//! that dynamic values (KIP-226) apply.

use std::marker::PhantomData;

use super::{parse_bool, ConfigType};

/// A broker config key read as `T`.
#[derive(Debug)]
pub struct Key<T> {
    name: &'static str,
    _ty: PhantomData<fn() -> T>,
}

impl<T> Clone for Key<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Key<T> {}

impl<T> Key<T> {
    /// The key named `name` (Kafka's name, e.g. `log.cleaner.enable`).
    pub const fn new(name: &'static str) -> Key<T> {
        Key {
            name,
            _ty: PhantomData,
        }
    }

    /// Kafka's name of the key.
    pub const fn name(&self) -> &'static str {
        self.name
    }
}

/// A Rust type a config value is read as.
pub trait ConfigValue: Sized {
    /// The key-table types this Rust type can read.
    const TYPES: &'static [ConfigType];
    /// True when a missing value (a null default) reads as a value (`Option<_>`).
    const NULLABLE: bool = false;
    /// Reads the text of a value (`None`: the key has no value). `None` when it does not read.
    fn from_text(text: Option<&str>) -> Option<Self>;
}

impl ConfigValue for bool {
    const TYPES: &'static [ConfigType] = &[ConfigType::Boolean];
    fn from_text(text: Option<&str>) -> Option<bool> {
        parse_bool(text?)
    }
}

impl ConfigValue for i32 {
    const TYPES: &'static [ConfigType] = &[ConfigType::Int];
    fn from_text(text: Option<&str>) -> Option<i32> {
        text?.trim().parse().ok()
    }
}

impl ConfigValue for i64 {
    const TYPES: &'static [ConfigType] = &[ConfigType::Int, ConfigType::Long];
    fn from_text(text: Option<&str>) -> Option<i64> {
        text?.trim().parse().ok()
    }
}

impl ConfigValue for f64 {
    const TYPES: &'static [ConfigType] = &[ConfigType::Double];
    fn from_text(text: Option<&str>) -> Option<f64> {
        text?.trim().parse().ok().filter(|v: &f64| !v.is_nan())
    }
}

impl ConfigValue for String {
    const TYPES: &'static [ConfigType] = &[ConfigType::String, ConfigType::List, ConfigType::Class];
    fn from_text(text: Option<&str>) -> Option<String> {
        text.map(str::to_string)
    }
}

impl<T: ConfigValue> ConfigValue for Option<T> {
    const TYPES: &'static [ConfigType] = T::TYPES;
    const NULLABLE: bool = true;
    fn from_text(text: Option<&str>) -> Option<Option<T>> {
        match text {
            None => Some(None),
            Some(t) => T::from_text(Some(t)).map(Some),
        }
    }
}

macro_rules! keys {
    ($($(#[$doc:meta])* $id:ident: $ty:ty = $name:literal;)*) => {
        $($(#[$doc])* pub const $id: Key<$ty> = Key::new($name);)*

        /// Every typed key: (name, accepted table types, nullable), checked against the key table by a test.
        #[cfg(test)]
        pub(crate) const ALL: &[(&str, &[ConfigType], bool)] =
            &[$(($name, <$ty as ConfigValue>::TYPES, <$ty as ConfigValue>::NULLABLE)),*];
    };
}

keys! {
    /// `log.cleaner.enable`: run the log cleaner (compaction of `cleanup.policy=compact` topics).
    LOG_CLEANER_ENABLE: bool = "log.cleaner.enable";
    /// `log.cleaner.dedupe.buffer.size` (bytes): the cleaner's key-to-offset map.
    LOG_CLEANER_DEDUPE_BUFFER_SIZE: i64 = "log.cleaner.dedupe.buffer.size";
    /// `log.cleaner.io.max.bytes.per.second`: the cleaner's read+write throttle.
    LOG_CLEANER_IO_MAX_BYTES_PER_SECOND: f64 = "log.cleaner.io.max.bytes.per.second";
    /// `replica.alter.log.dirs.io.max.bytes.per.second`: the most bytes per second moving logs between
    /// data directories copies (AlterReplicaLogDirs, KIP-113), dynamic.
    REPLICA_ALTER_LOG_DIRS_IO_MAX_BYTES_PER_SECOND: i64 = "replica.alter.log.dirs.io.max.bytes.per.second";
    /// `log.cleaner.backoff.ms`: sleep when there is nothing to clean (ms).
    LOG_CLEANER_BACKOFF_MS: i64 = "log.cleaner.backoff.ms";
    /// `producer.id.expiration.ms`: how long an idle producer id's state is kept (ms).
    PRODUCER_ID_EXPIRATION_MS: i64 = "producer.id.expiration.ms";
    /// `min.insync.replicas`: replicas that must have a write for acks=all (and for group commits).
    MIN_INSYNC_REPLICAS: i32 = "min.insync.replicas";
    /// `num.io.threads`: the runtime's worker threads, which serve requests including their disk I/O (Kafka's
    /// request handler threads, default 8; `TOKIO_WORKER_THREADS` overrides it).
    NUM_IO_THREADS: i32 = "num.io.threads";
    /// `num.recovery.threads.per.data.dir`: threads opening (recovering after a crash) and, at a clean
    /// shutdown, closing each data directory's partition logs; read at startup. Unset:
    /// `storage::default_recovery_threads()` (twice the cores, 4–16; Kafka's default is 1 — the work is
    /// fsync-bound, so more threads than cores shorten it).
    NUM_RECOVERY_THREADS_PER_DATA_DIR: Option<i32> = "num.recovery.threads.per.data.dir";
    /// `offsets.topic.replication.factor`: replication factor of `__consumer_offsets` (capped by the
    /// brokers registered in the cluster, fenced ones included, when the topic is created).
    OFFSETS_TOPIC_REPLICATION_FACTOR: i32 = "offsets.topic.replication.factor";
    /// `offsets.commit.timeout.ms`: how long a group write waits for the ISR before it fails (ms).
    OFFSETS_COMMIT_TIMEOUT_MS: i32 = "offsets.commit.timeout.ms";
    /// `transaction.state.log.replication.factor`: replication factor of `__transaction_state` (capped by
    /// the brokers registered in the cluster when the topic is created).
    TRANSACTION_STATE_LOG_REPLICATION_FACTOR: i32 = "transaction.state.log.replication.factor";
    /// `transaction.state.log.min.isr`: `min.insync.replicas` of `__transaction_state` (capped by its
    /// replication factor).
    TRANSACTION_STATE_LOG_MIN_ISR: i32 = "transaction.state.log.min.isr";
    /// `transaction.state.log.num.partitions`: partitions of `__transaction_state` when it is created.
    TRANSACTION_STATE_LOG_NUM_PARTITIONS: i32 = "transaction.state.log.num.partitions";
    /// `transaction.state.log.segment.bytes`: `segment.bytes` of `__transaction_state`.
    TRANSACTION_STATE_LOG_SEGMENT_BYTES: i32 = "transaction.state.log.segment.bytes";
    /// `transaction.max.timeout.ms`: the longest `transaction.timeout.ms` a producer may ask for (ms).
    TRANSACTION_MAX_TIMEOUT_MS: i32 = "transaction.max.timeout.ms";
    /// `transaction.partition.verification.enable`: partition leaders verify with the transaction
    /// coordinator that a partition is in the transaction before its first transactional write (KIP-890
    /// part 1; transaction version 2 clients are always verified, their partitions being added that way).
    TRANSACTION_PARTITION_VERIFICATION_ENABLE: bool = "transaction.partition.verification.enable";
    /// `transactional.id.expiration.ms`: an idle transactional id is expired after this long (ms).
    TRANSACTIONAL_ID_EXPIRATION_MS: i32 = "transactional.id.expiration.ms";
    /// `transaction.abort.timed.out.transaction.cleanup.interval.ms`: how often timed-out transactions
    /// are aborted (ms).
    TRANSACTION_ABORT_TIMED_OUT_INTERVAL_MS: i32 =
        "transaction.abort.timed.out.transaction.cleanup.interval.ms";
    /// `transaction.remove.expired.transaction.cleanup.interval.ms`: how often expired transactional ids
    /// are removed (ms).
    TRANSACTION_REMOVE_EXPIRED_INTERVAL_MS: i32 =
        "transaction.remove.expired.transaction.cleanup.interval.ms";
    /// `group.max.size`: members per group (GROUP_MAX_SIZE_REACHED past it).
    GROUP_MAX_SIZE: i32 = "group.max.size";
    /// `group.consumer.session.timeout.ms`: a KIP-848 consumer-group member silent this long is fenced (ms).
    GROUP_CONSUMER_SESSION_TIMEOUT_MS: i32 = "group.consumer.session.timeout.ms";
    /// `group.consumer.heartbeat.interval.ms`: how often KIP-848 members heartbeat (ms).
    GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS: i32 = "group.consumer.heartbeat.interval.ms";
    /// `group.consumer.max.size`: members per consumer group (GROUP_MAX_SIZE_REACHED past it).
    GROUP_CONSUMER_MAX_SIZE: i32 = "group.consumer.max.size";
    /// `group.consumer.migration.policy`: `bidirectional` (default), `upgrade`, `downgrade` or `disabled` —
    /// which KIP-848 online conversions between classic and consumer groups are allowed (case-insensitive;
    /// validated at startup).
    GROUP_CONSUMER_MIGRATION_POLICY: String = "group.consumer.migration.policy";
    /// `offset.metadata.max.bytes`: longest commit metadata string (OFFSET_METADATA_TOO_LARGE past it).
    OFFSET_METADATA_MAX_BYTES: i32 = "offset.metadata.max.bytes";
    /// `offsets.retention.check.interval.ms`: how often expired offsets are removed (ms).
    OFFSETS_RETENTION_CHECK_INTERVAL_MS: i64 = "offsets.retention.check.interval.ms";
    /// `connections.max.idle.ms`: a client connection without a complete request for this long is closed,
    /// also in the middle of a frame (ms; negative: never). Read once at startup (Kafka: read-only).
    CONNECTIONS_MAX_IDLE_MS: i64 = "connections.max.idle.ms";
    /// `max.connections`: client connections on all listeners together; the acceptor waits at the limit (the
    /// inter-broker listener is exempt). Per listener: `listener.name.<l>.max.connections`. Read at startup.
    MAX_CONNECTIONS: i32 = "max.connections";
    /// `max.connections.per.ip`: connections from one address; one more is closed at accept.
    MAX_CONNECTIONS_PER_IP: i32 = "max.connections.per.ip";
    /// `max.connections.per.ip.overrides`: `host:count,...` limits for some addresses.
    MAX_CONNECTIONS_PER_IP_OVERRIDES: String = "max.connections.per.ip.overrides";
    /// `max.connection.creation.rate`: new connections/s broker-wide; over it the acceptor waits (per
    /// listener: `listener.name.<l>.max.connection.creation.rate`).
    MAX_CONNECTION_CREATION_RATE: i32 = "max.connection.creation.rate";
    /// `quota.window.num`: windows a quota's rate is sampled over (client quotas, connection rates).
    QUOTA_WINDOW_NUM: i32 = "quota.window.num";
    /// `quota.window.size.seconds`: length of one quota window (s).
    QUOTA_WINDOW_SIZE_SECONDS: i32 = "quota.window.size.seconds";
    /// `controller.quota.window.num`: windows of the controller mutation quota's burst (KIP-599).
    CONTROLLER_QUOTA_WINDOW_NUM: i32 = "controller.quota.window.num";
    /// `controller.quota.window.size.seconds`: length of one controller mutation quota window (s).
    CONTROLLER_QUOTA_WINDOW_SIZE_SECONDS: i32 = "controller.quota.window.size.seconds";
    /// `authorizer.class.name`: empty = no authorizer (every request allowed, the ACL APIs answer
    /// SECURITY_DISABLED); `org.apache.kafka.metadata.authorizer.StandardAuthorizer` = ACLs enforced. Read once
    /// at startup.
    AUTHORIZER_CLASS_NAME: String = "authorizer.class.name";
    /// `super.users`: `;`-separated principals (`User:admin`) allowed everything.
    SUPER_USERS: Option<String> = "super.users";
    /// `allow.everyone.if.no.acl.found`: what a resource without any ACL gets (Kafka's default false: denied).
    ALLOW_EVERYONE_IF_NO_ACL_FOUND: bool = "allow.everyone.if.no.acl.found";
    /// `replica.selector.class` (KIP-392): unset (Kafka's default) = consumers read from the leader only;
    /// `org.apache.kafka.common.replica.RackAwareReplicaSelector` = a consumer whose `client.rack` matches
    /// an in-sync replica's `broker.rack` is sent to it; `org.apache.kafka.common.replica.LeaderSelector`
    /// = the leader. Anything else is refused at startup. Static (read once at startup).
    REPLICA_SELECTOR_CLASS: Option<String> = "replica.selector.class";
    /// `max.incremental.fetch.session.cache.slots` (KIP-227): most incremental fetch sessions this broker
    /// keeps (Kafka's default 1000); 0 = none, every Fetch is answered with session id 0 (a negative value
    /// counts as 0). Static (read once at startup).
    MAX_INCREMENTAL_FETCH_SESSION_CACHE_SLOTS: i32 = "max.incremental.fetch.session.cache.slots";
    /// `metrics.listeners` (Runnel, issue 17): comma-separated `http://HOST:PORT` addresses of the metrics and
    /// health endpoint; empty = none. Default `http://127.0.0.1:9644` (loopback). Static.
    METRICS_LISTENERS: String = "metrics.listeners";
    /// `metrics.partition.series.max` (Runnel): at most this many per-partition log series and as many
    /// per-(group, partition) consumer-lag series on `/metrics` (0 = none). Static.
    METRICS_PARTITION_SERIES_MAX: i32 = "metrics.partition.series.max";
    /// `console.enabled` (Runnel, issue 17): whether the `metrics.listeners` HTTP listeners serve the web
    /// console at `/console/`: unset (the default) on loopback addresses only, `true` on every one, `false`
    /// on none. Static.
    CONSOLE_ENABLED: Option<bool> = "console.enabled";
    /// `http.authentication.method` (Runnel; REST Proxy's `authentication.method`): `NONE` (the default) or
    /// `BASIC` — HTTP Basic against the SCRAM credentials on every `metrics.listeners` route but the health
    /// checks. Static.
    HTTP_AUTHENTICATION_METHOD: String = "http.authentication.method";
    /// `telemetry.max.bytes` (KIP-714): the largest PushTelemetry payload accepted, compressed as sent
    /// (bytes; Kafka's default 1 MiB); larger ones get TELEMETRY_TOO_LARGE. Static.
    TELEMETRY_MAX_BYTES: i32 = "telemetry.max.bytes";
    /// `client.telemetry.default.metrics` (Runnel, beyond KIP-714): metric-name prefixes every client is
    /// subscribed to without any CLIENT_METRICS resource (`*` = all); empty (the default) = none, as Kafka.
    /// Static.
    CLIENT_TELEMETRY_DEFAULT_METRICS: String = "client.telemetry.default.metrics";
    /// `client.telemetry.default.interval.ms` (Runnel): the push interval of that default subscription
    /// (ms, 100..=3600000; Kafka's subscription default 300000). Static.
    CLIENT_TELEMETRY_DEFAULT_INTERVAL_MS: i32 = "client.telemetry.default.interval.ms";
    /// `metrics.client.series.max` (Runnel): at most this many client-pushed series (KIP-714) on
    /// `/metrics`; further series are dropped and counted (0 = none). Static.
    METRICS_CLIENT_SERIES_MAX: i32 = "metrics.client.series.max";
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{broker_def, BrokerConfig};

    #[test]
    fn every_typed_key_is_in_the_key_table_with_a_fitting_type() {
        for (name, types, nullable) in ALL {
            let def = broker_def(name).unwrap_or_else(|| panic!("{name} is not in BROKER_CONFIGS"));
            assert!(
                types.contains(&def.ty),
                "{name} is {:?} in the table",
                def.ty
            );
            assert!(def.used, "{name} is read but marked accepted-only");
            assert!(
                *nullable || def.default.is_some(),
                "{name} has no default but is read as non-nullable"
            );
        }
    }

    #[test]
    fn every_typed_key_reads_from_the_defaults() {
        let c = BrokerConfig::from_pairs(&[]).unwrap();
        assert!(c.get(LOG_CLEANER_ENABLE));
        assert_eq!(c.get(OFFSETS_COMMIT_TIMEOUT_MS), 5000);
        assert_eq!(c.get(LOG_CLEANER_BACKOFF_MS), 15_000);
        assert!(c.get(LOG_CLEANER_IO_MAX_BYTES_PER_SECOND) > 1e300);
    }

    /// B4: a value that passes validation is read the same way (` True ` enabled the cleaner in validation
    /// and disabled it at use).
    #[test]
    fn booleans_read_as_validated() {
        for (text, want) in [
            (" True ", true),
            ("TRUE", true),
            ("false", false),
            ("False ", false),
        ] {
            let c =
                BrokerConfig::from_pairs(&[("log.cleaner.enable".into(), text.into())]).unwrap();
            assert_eq!(c.get(LOG_CLEANER_ENABLE), want, "{text:?}");
        }
    }

    /// B3: `offsets.commit.timeout.ms` is a known key and is read.
    #[test]
    fn offsets_commit_timeout_can_be_set() {
        let c = BrokerConfig::from_pairs(&[("offsets.commit.timeout.ms".into(), "1234".into())])
            .unwrap();
        assert_eq!(c.get(OFFSETS_COMMIT_TIMEOUT_MS), 1234);
    }
}
