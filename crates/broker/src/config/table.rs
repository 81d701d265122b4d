//! The key tables: every broker key Runnel knows ([`BROKER_CONFIGS`]: Kafka's name, type, default, whether it
//! is read) and every topic key with the broker synonym that supplies its default ([`TOPIC_CONFIGS`]).
//! Source: Kafka's `KafkaConfig`/`ServerLogConfigs` and `TopicConfig`/`LogConfig` definitions.

use super::ConfigType;

/// One known broker config key.
#[derive(Debug, Clone, Copy)]
pub struct BrokerConfigDef {
    /// Kafka's key, e.g. `log.retention.ms`.
    pub name: &'static str,
    /// Value type.
    pub ty: ConfigType,
    /// Default value as text; `None` for keys whose default is null or derived.
    pub default: Option<&'static str>,
    /// True when Runnel reads the key; false when it is accepted for compatibility with Kafka property files
    /// and has no effect (yet).
    pub used: bool,
}

const fn def(name: &'static str, ty: ConfigType, default: Option<&'static str>) -> BrokerConfigDef {
    BrokerConfigDef {
        name,
        ty,
        default,
        used: true,
    }
}

const fn accepted(
    name: &'static str,
    ty: ConfigType,
    default: Option<&'static str>,
) -> BrokerConfigDef {
    BrokerConfigDef {
        name,
        ty,
        default,
        used: false,
    }
}

use ConfigType as T;

/// Every broker key Runnel knows. Keys with `used: false` are accepted so that a Kafka `server.properties`
/// starts Runnel unchanged, but change nothing.
pub const BROKER_CONFIGS: &[BrokerConfigDef] = &[
    def("node.id", T::Int, Some("1")),
    def("broker.id", T::Int, None),
    def("broker.rack", T::String, None),
    def("replica.selector.class", T::Class, None),
    def("metrics.listeners", T::List, Some("http://127.0.0.1:9644")),
    def("metrics.partition.series.max", T::Int, Some("10000")),
    def("console.enabled", T::Boolean, None),
    def("http.authentication.method", T::String, Some("NONE")),
    def("telemetry.max.bytes", T::Int, Some("1048576")),
    def("client.telemetry.default.metrics", T::List, Some("")),
    def(
        "client.telemetry.default.interval.ms",
        T::Int,
        Some("300000"),
    ),
    def("metrics.client.series.max", T::Int, Some("10000")),
    def("process.roles", T::List, Some("broker,controller")),
    def("log.dirs", T::List, None),
    def("log.dir", T::String, Some("./runnel-data")),
    def("listeners", T::List, Some("PLAINTEXT://127.0.0.1:9092")),
    def("advertised.listeners", T::List, None),
    def("num.partitions", T::Int, Some("1")),
    def("default.replication.factor", T::Int, Some("1")),
    def("auto.create.topics.enable", T::Boolean, Some("true")),
    def("delete.topic.enable", T::Boolean, Some("true")),
    def("authorizer.class.name", T::String, Some("")),
    def("super.users", T::List, None),
    def("allow.everyone.if.no.acl.found", T::Boolean, Some("false")),
    def("log.segment.bytes", T::Int, Some("1073741824")),
    def("log.roll.ms", T::Long, None),
    def("log.roll.hours", T::Int, Some("168")),
    def("log.retention.ms", T::Long, None),
    def("log.retention.minutes", T::Int, None),
    def("log.retention.hours", T::Int, Some("168")),
    def("log.retention.bytes", T::Long, Some("-1")),
    def("log.retention.check.interval.ms", T::Long, Some("300000")),
    def("log.index.interval.bytes", T::Int, Some("4096")),
    def("log.index.size.max.bytes", T::Int, Some("10485760")),
    def(
        "log.flush.interval.messages",
        T::Long,
        Some("9223372036854775807"),
    ),
    def("log.flush.interval.ms", T::Long, None),
    def(
        "log.flush.scheduler.interval.ms",
        T::Long,
        Some("9223372036854775807"),
    ),
    def(
        "log.flush.offset.checkpoint.interval.ms",
        T::Int,
        Some("60000"),
    ),
    def("log.message.timestamp.type", T::String, Some("CreateTime")),
    def(
        "log.message.timestamp.before.max.ms",
        T::Long,
        Some("9223372036854775807"),
    ),
    def(
        "log.message.timestamp.after.max.ms",
        T::Long,
        Some("3600000"),
    ),
    def("log.cleanup.policy", T::List, Some("delete")),
    def("log.cleaner.delete.retention.ms", T::Long, Some("86400000")),
    def("log.cleaner.min.compaction.lag.ms", T::Long, Some("0")),
    def(
        "log.cleaner.max.compaction.lag.ms",
        T::Long,
        Some("9223372036854775807"),
    ),
    def("log.cleaner.min.cleanable.ratio", T::Double, Some("0.5")),
    def("log.segment.delete.delay.ms", T::Long, Some("60000")),
    def("log.cleaner.enable", T::Boolean, Some("true")),
    def("log.cleaner.dedupe.buffer.size", T::Long, Some("134217728")),
    def(
        "log.cleaner.io.max.bytes.per.second",
        T::Double,
        Some("1.7976931348623157E308"),
    ),
    def("log.cleaner.backoff.ms", T::Long, Some("15000")),
    accepted("log.cleaner.threads", T::Int, Some("1")),
    def("log.preallocate", T::Boolean, Some("false")),
    def("log.roll.jitter.ms", T::Long, None),
    def("log.roll.jitter.hours", T::Int, Some("0")),
    def(
        "leader.replication.throttled.rate",
        T::Long,
        Some("9223372036854775807"),
    ),
    def(
        "follower.replication.throttled.rate",
        T::Long,
        Some("9223372036854775807"),
    ),
    def(
        "replica.alter.log.dirs.io.max.bytes.per.second",
        T::Long,
        Some("9223372036854775807"),
    ),
    def("message.max.bytes", T::Int, Some("1048588")),
    def("socket.request.max.bytes", T::Int, Some("104857600")),
    def("connections.max.idle.ms", T::Long, Some("600000")),
    def("max.connections", T::Int, Some("2147483647")),
    def("max.connections.per.ip", T::Int, Some("2147483647")),
    def("max.connections.per.ip.overrides", T::String, Some("")),
    def("max.connection.creation.rate", T::Int, Some("2147483647")),
    def("quota.window.num", T::Int, Some("11")),
    def("quota.window.size.seconds", T::Int, Some("1")),
    def("controller.quota.window.num", T::Int, Some("11")),
    def("controller.quota.window.size.seconds", T::Int, Some("1")),
    def("compression.type", T::String, Some("producer")),
    def("min.insync.replicas", T::Int, Some("1")),
    def("unclean.leader.election.enable", T::Boolean, Some("false")),
    def("auto.leader.rebalance.enable", T::Boolean, Some("true")),
    def(
        "leader.imbalance.check.interval.seconds",
        T::Long,
        Some("300"),
    ),
    def("producer.id.expiration.ms", T::Int, Some("86400000")),
    def("offsets.topic.num.partitions", T::Int, Some("50")),
    def("offsets.topic.replication.factor", T::Int, Some("3")),
    def("offsets.retention.minutes", T::Int, Some("10080")),
    def("offsets.commit.timeout.ms", T::Int, Some("5000")),
    def("group.initial.rebalance.delay.ms", T::Int, Some("3000")),
    def("group.min.session.timeout.ms", T::Int, Some("6000")),
    def("group.max.session.timeout.ms", T::Int, Some("1800000")),
    def("group.max.size", T::Int, Some("2147483647")),
    def("group.consumer.session.timeout.ms", T::Int, Some("45000")),
    def("group.consumer.heartbeat.interval.ms", T::Int, Some("5000")),
    def("group.consumer.max.size", T::Int, Some("2147483647")),
    def("group.consumer.assignors", T::List, Some("uniform,range")),
    // Group-config defaults and bounds (Kafka 4.4 `GroupCoordinatorConfig`, `ShareGroupConfig`): read by
    // `group_configs` to describe, validate and resolve a group's dynamic configs.
    def(
        "group.consumer.min.session.timeout.ms",
        T::Int,
        Some("45000"),
    ),
    def(
        "group.consumer.max.session.timeout.ms",
        T::Int,
        Some("60000"),
    ),
    def(
        "group.consumer.min.heartbeat.interval.ms",
        T::Int,
        Some("5000"),
    ),
    def(
        "group.consumer.max.heartbeat.interval.ms",
        T::Int,
        Some("15000"),
    ),
    def(
        "group.consumer.assignment.interval.ms",
        T::Int,
        Some("1000"),
    ),
    def(
        "group.consumer.min.assignment.interval.ms",
        T::Int,
        Some("0"),
    ),
    def(
        "group.consumer.max.assignment.interval.ms",
        T::Int,
        Some("15000"),
    ),
    def(
        "group.consumer.assignor.offload.enable",
        T::Boolean,
        Some("true"),
    ),
    def("group.share.session.timeout.ms", T::Int, Some("45000")),
    def("group.share.min.session.timeout.ms", T::Int, Some("45000")),
    def("group.share.max.session.timeout.ms", T::Int, Some("60000")),
    def("group.share.heartbeat.interval.ms", T::Int, Some("5000")),
    def(
        "group.share.min.heartbeat.interval.ms",
        T::Int,
        Some("5000"),
    ),
    def(
        "group.share.max.heartbeat.interval.ms",
        T::Int,
        Some("15000"),
    ),
    def("group.share.record.lock.duration.ms", T::Int, Some("30000")),
    def(
        "group.share.min.record.lock.duration.ms",
        T::Int,
        Some("15000"),
    ),
    def(
        "group.share.max.record.lock.duration.ms",
        T::Int,
        Some("60000"),
    ),
    def("group.share.delivery.count.limit", T::Int, Some("5")),
    def("group.share.min.delivery.count.limit", T::Int, Some("2")),
    def("group.share.max.delivery.count.limit", T::Int, Some("10")),
    def(
        "group.share.partition.max.record.locks",
        T::Int,
        Some("2000"),
    ),
    def(
        "group.share.min.partition.max.record.locks",
        T::Int,
        Some("100"),
    ),
    def(
        "group.share.max.partition.max.record.locks",
        T::Int,
        Some("4000"),
    ),
    def("group.share.assignment.interval.ms", T::Int, Some("1000")),
    def("group.share.min.assignment.interval.ms", T::Int, Some("0")),
    def(
        "group.share.max.assignment.interval.ms",
        T::Int,
        Some("15000"),
    ),
    def(
        "group.share.assignor.offload.enable",
        T::Boolean,
        Some("true"),
    ),
    def("group.streams.session.timeout.ms", T::Int, Some("45000")),
    def(
        "group.streams.min.session.timeout.ms",
        T::Int,
        Some("45000"),
    ),
    def(
        "group.streams.max.session.timeout.ms",
        T::Int,
        Some("60000"),
    ),
    def("group.streams.heartbeat.interval.ms", T::Int, Some("5000")),
    def(
        "group.streams.min.heartbeat.interval.ms",
        T::Int,
        Some("5000"),
    ),
    def(
        "group.streams.max.heartbeat.interval.ms",
        T::Int,
        Some("15000"),
    ),
    def("group.streams.num.standby.replicas", T::Int, Some("0")),
    def("group.streams.max.standby.replicas", T::Int, Some("2")),
    def(
        "group.streams.initial.rebalance.delay.ms",
        T::Int,
        Some("3000"),
    ),
    def("group.streams.assignment.interval.ms", T::Int, Some("1000")),
    def(
        "group.streams.min.assignment.interval.ms",
        T::Int,
        Some("0"),
    ),
    def(
        "group.streams.max.assignment.interval.ms",
        T::Int,
        Some("15000"),
    ),
    def("group.streams.assignors", T::List, Some("sticky")),
    def(
        "group.streams.rack.aware.assignment.tags",
        T::List,
        Some(""),
    ),
    def(
        "group.streams.assignor.offload.enable",
        T::Boolean,
        Some("true"),
    ),
    def(
        "group.streams.task.offset.interval.ms",
        T::Int,
        Some("60000"),
    ),
    def(
        "group.streams.min.task.offset.interval.ms",
        T::Int,
        Some("15000"),
    ),
    def("group.streams.num.warmup.replicas", T::Int, Some("2")),
    def("group.streams.max.warmup.replicas", T::Int, Some("20")),
    def(
        "group.streams.acceptable.recovery.lag",
        T::Long,
        Some("10000"),
    ),
    def(
        "group.consumer.migration.policy",
        T::String,
        Some("bidirectional"),
    ),
    def("offset.metadata.max.bytes", T::Int, Some("4096")),
    def(
        "offsets.retention.check.interval.ms",
        T::Long,
        Some("600000"),
    ),
    def(
        "transaction.state.log.replication.factor",
        T::Int,
        Some("3"),
    ),
    def("transaction.state.log.min.isr", T::Int, Some("2")),
    def("transaction.state.log.num.partitions", T::Int, Some("50")),
    def(
        "transaction.state.log.segment.bytes",
        T::Int,
        Some("104857600"),
    ),
    def("transaction.max.timeout.ms", T::Int, Some("900000")),
    def(
        "transaction.partition.verification.enable",
        T::Boolean,
        Some("true"),
    ),
    def("transactional.id.expiration.ms", T::Int, Some("604800000")),
    def(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        T::Int,
        Some("10000"),
    ),
    def(
        "transaction.remove.expired.transaction.cleanup.interval.ms",
        T::Int,
        Some("3600000"),
    ),
    def("controller.quorum.voters", T::List, None),
    def("controller.quorum.bootstrap.servers", T::List, None),
    def("controller.listener.names", T::List, None),
    def("replica.lag.time.max.ms", T::Long, Some("30000")),
    def(
        "max.incremental.fetch.session.cache.slots",
        T::Int,
        Some("1000"),
    ),
    def("broker.session.timeout.ms", T::Int, Some("9000")),
    def("broker.heartbeat.interval.ms", T::Int, Some("2000")),
    def("cluster.id", T::String, None),
    // Kafka 4.4 keys that are the broker synonyms of topic keys; accepted, no effect in Runnel (compression
    // levels are the codecs' defaults; there is no tiered storage).
    accepted("compression.gzip.level", T::Int, Some("-1")),
    accepted("compression.lz4.level", T::Int, Some("9")),
    accepted("compression.zstd.level", T::Int, Some("3")),
    accepted("log.local.retention.bytes", T::Long, Some("-2")),
    accepted("log.local.retention.ms", T::Long, Some("-2")),
    accepted("max.decompressed.message.bytes", T::Int, Some("2147483639")),
    accepted("log.remote.copy.lag.bytes", T::Long, Some("-1")),
    accepted("log.remote.copy.lag.ms", T::Long, Some("0")),
    accepted(
        "remote.log.storage.system.enable",
        T::Boolean,
        Some("false"),
    ),
    // Runnel's automatic balancing (read by controllers; see `controller::control::BalancerConfig`).
    def("auto.balance.enable", T::Boolean, Some("true")),
    def("auto.balance.check.interval.ms", T::Long, Some("60000")),
    def("auto.balance.max.concurrent.moves", T::Int, Some("10")),
    def("auto.balance.max.spread.percent", T::Int, Some("10")),
    def(
        "auto.balance.dead.broker.delay.ms",
        T::Long,
        Some("1800000"),
    ),
    // KIP-1066: a broker whose log dirs are cordoned gets no new replicas.
    def("cordoned.log.dirs", T::List, Some("")),
    def("listener.security.protocol.map", T::String, None),
    def("inter.broker.listener.name", T::String, None),
    def("security.inter.broker.protocol", T::String, None),
    def("ssl.keystore.type", T::String, Some("JKS")),
    def("ssl.keystore.location", T::String, None),
    def("ssl.keystore.password", T::Password, None),
    def("ssl.key.password", T::Password, None),
    def("ssl.keystore.key", T::Password, None),
    def("ssl.keystore.certificate.chain", T::Password, None),
    def("ssl.truststore.type", T::String, Some("JKS")),
    def("ssl.truststore.location", T::String, None),
    def("ssl.truststore.password", T::Password, None),
    def("ssl.truststore.certificates", T::Password, None),
    def("ssl.client.auth", T::String, Some("none")),
    def("ssl.enabled.protocols", T::List, Some("TLSv1.2,TLSv1.3")),
    def("ssl.principal.mapping.rules", T::String, Some("DEFAULT")),
    def(
        "ssl.endpoint.identification.algorithm",
        T::String,
        Some("https"),
    ),
    def("sasl.enabled.mechanisms", T::List, Some("GSSAPI")),
    def(
        "sasl.mechanism.inter.broker.protocol",
        T::String,
        Some("GSSAPI"),
    ),
    def(
        "sasl.mechanism.controller.protocol",
        T::String,
        Some("GSSAPI"),
    ),
    def("sasl.server.max.receive.size", T::Int, Some("524288")),
    def("plain.sasl.jaas.config", T::Password, None),
    def("scram-sha-256.sasl.jaas.config", T::Password, None),
    def("scram-sha-512.sasl.jaas.config", T::Password, None),
    def("oauthbearer.sasl.jaas.config", T::Password, None),
    def("sasl.server.callback.handler.class", T::String, None),
    def(
        "oauthbearer.sasl.server.callback.handler.class",
        T::String,
        None,
    ),
    def("sasl.oauthbearer.jwks.endpoint.url", T::String, None),
    def(
        "sasl.oauthbearer.jwks.endpoint.refresh.ms",
        T::Long,
        Some("3600000"),
    ),
    def("sasl.oauthbearer.expected.issuer", T::String, None),
    def("sasl.oauthbearer.expected.audience", T::List, None),
    def("sasl.oauthbearer.clock.skew.seconds", T::Int, Some("30")),
    def("sasl.oauthbearer.sub.claim.name", T::String, Some("sub")),
    def(
        "sasl.oauthbearer.scope.claim.name",
        T::String,
        Some("scope"),
    ),
    def("connections.max.reauth.ms", T::Long, Some("0")),
    def("plain.connections.max.reauth.ms", T::Long, Some("0")),
    def(
        "scram-sha-256.connections.max.reauth.ms",
        T::Long,
        Some("0"),
    ),
    def(
        "scram-sha-512.connections.max.reauth.ms",
        T::Long,
        Some("0"),
    ),
    def("oauthbearer.connections.max.reauth.ms", T::Long, Some("0")),
    accepted("sasl.jaas.config", T::Password, None),
    accepted("ssl.protocol", T::String, Some("TLSv1.3")),
    accepted("ssl.cipher.suites", T::List, None),
    accepted("ssl.keymanager.algorithm", T::String, Some("SunX509")),
    accepted("ssl.trustmanager.algorithm", T::String, Some("PKIX")),
    accepted("ssl.secure.random.implementation", T::String, None),
    accepted("ssl.provider", T::String, None),
    accepted("num.network.threads", T::Int, Some("3")),
    def("num.io.threads", T::Int, Some("8")),
    def("num.recovery.threads.per.data.dir", T::Int, None),
    accepted("socket.send.buffer.bytes", T::Int, Some("102400")),
    accepted("socket.receive.buffer.bytes", T::Int, Some("102400")),
    def(
        "share.coordinator.state.topic.num.partitions",
        T::Int,
        Some("50"),
    ),
    def(
        "share.coordinator.state.topic.replication.factor",
        T::Int,
        Some("3"),
    ),
    def("share.coordinator.state.topic.min.isr", T::Int, Some("2")),
    accepted("controller.quorum.bootstrap.servers", T::List, None),
    accepted("group.coordinator.rebalance.protocols", T::List, None),
];

/// A topic-level config key, its type, and the broker key that supplies its default.
#[derive(Debug, Clone, Copy)]
pub struct TopicConfigDef {
    /// Topic key, e.g. `retention.ms`.
    pub name: &'static str,
    /// Value type.
    pub ty: ConfigType,
    /// The broker key whose value is this key's default (Kafka's `DEFAULT_CONFIG` synonym); `""` for a
    /// topic-only key, whose default is [`default`](Self::default).
    pub broker_synonym: &'static str,
    /// The default of a topic-only key (`None` for keys with a broker synonym).
    pub default: Option<&'static str>,
}

const fn topic(name: &'static str, ty: ConfigType, broker_synonym: &'static str) -> TopicConfigDef {
    TopicConfigDef {
        name,
        ty,
        broker_synonym,
        default: None,
    }
}

/// A topic key with no broker synonym: `default` when the topic does not set it.
const fn topic_only(name: &'static str, ty: ConfigType, default: &'static str) -> TopicConfigDef {
    TopicConfigDef {
        name,
        ty,
        broker_synonym: "",
        default: Some(default),
    }
}

/// The topic-level keys Runnel knows, with their broker synonyms.
pub const TOPIC_CONFIGS: &[TopicConfigDef] = &[
    topic("cleanup.policy", T::List, "log.cleanup.policy"),
    topic("compression.gzip.level", T::Int, "compression.gzip.level"),
    topic("compression.lz4.level", T::Int, "compression.lz4.level"),
    topic("compression.type", T::String, "compression.type"),
    topic("compression.zstd.level", T::Int, "compression.zstd.level"),
    topic(
        "delete.retention.ms",
        T::Long,
        "log.cleaner.delete.retention.ms",
    ),
    topic(
        "file.delete.delay.ms",
        T::Long,
        "log.segment.delete.delay.ms",
    ),
    topic("flush.messages", T::Long, "log.flush.interval.messages"),
    topic_only("follower.replication.throttled.replicas", T::List, ""),
    topic("flush.ms", T::Long, "log.flush.interval.ms"),
    topic_only("errors.deadletterqueue.group.enable", T::Boolean, "false"),
    topic("index.interval.bytes", T::Int, "log.index.interval.bytes"),
    topic_only("leader.replication.throttled.replicas", T::List, ""),
    topic(
        "local.retention.bytes",
        T::Long,
        "log.local.retention.bytes",
    ),
    topic("local.retention.ms", T::Long, "log.local.retention.ms"),
    topic(
        "max.compaction.lag.ms",
        T::Long,
        "log.cleaner.max.compaction.lag.ms",
    ),
    topic(
        "max.decompressed.message.bytes",
        T::Int,
        "max.decompressed.message.bytes",
    ),
    topic("max.message.bytes", T::Int, "message.max.bytes"),
    topic(
        "message.timestamp.after.max.ms",
        T::Long,
        "log.message.timestamp.after.max.ms",
    ),
    topic(
        "message.timestamp.before.max.ms",
        T::Long,
        "log.message.timestamp.before.max.ms",
    ),
    topic(
        "message.timestamp.type",
        T::String,
        "log.message.timestamp.type",
    ),
    topic(
        "min.cleanable.dirty.ratio",
        T::Double,
        "log.cleaner.min.cleanable.ratio",
    ),
    topic(
        "min.compaction.lag.ms",
        T::Long,
        "log.cleaner.min.compaction.lag.ms",
    ),
    topic("min.insync.replicas", T::Int, "min.insync.replicas"),
    topic("preallocate", T::Boolean, "log.preallocate"),
    topic(
        "remote.copy.lag.bytes",
        T::Long,
        "log.remote.copy.lag.bytes",
    ),
    topic("remote.copy.lag.ms", T::Long, "log.remote.copy.lag.ms"),
    topic_only("remote.log.copy.disable", T::Boolean, "false"),
    topic_only("remote.log.delete.on.disable", T::Boolean, "false"),
    topic_only("remote.storage.enable", T::Boolean, "false"),
    topic("retention.bytes", T::Long, "log.retention.bytes"),
    topic("retention.ms", T::Long, "log.retention.ms"),
    topic("segment.bytes", T::Int, "log.segment.bytes"),
    topic("segment.index.bytes", T::Int, "log.index.size.max.bytes"),
    topic("segment.jitter.ms", T::Long, "log.roll.jitter.ms"),
    topic("segment.ms", T::Long, "log.roll.ms"),
    topic(
        "unclean.leader.election.enable",
        T::Boolean,
        "unclean.leader.election.enable",
    ),
];

/// The broker keys that name the same setting, most specific first, as Kafka's
/// `DynamicBrokerConfig.brokerConfigSynonyms` (e.g. `log.retention.ms`, `.minutes`, `.hours`).
pub fn broker_synonyms(key: &str) -> &'static [&'static str] {
    match key {
        "log.retention.ms" | "log.retention.minutes" | "log.retention.hours" => &[
            "log.retention.ms",
            "log.retention.minutes",
            "log.retention.hours",
        ],
        "log.roll.ms" | "log.roll.hours" => &["log.roll.ms", "log.roll.hours"],
        "log.roll.jitter.ms" | "log.roll.jitter.hours" => {
            &["log.roll.jitter.ms", "log.roll.jitter.hours"]
        }
        "log.flush.interval.ms" => &["log.flush.interval.ms", "log.flush.scheduler.interval.ms"],
        _ => &[],
    }
}
