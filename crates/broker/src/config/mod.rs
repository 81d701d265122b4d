//! Broker and topic configuration, with Kafka's key names, types, defaults and meanings.
//!
//! Source: Kafka's broker configs (`KafkaConfig`, `ServerLogConfigs`) and topic configs (`TopicConfig`,
//! `LogConfig`). A broker config comes from a Kafka-style `.properties` file (`--config`) and `--set KEY=VALUE`
//! overrides; unknown keys are a startup error naming the key. A topic config override map holds the
//! topic-level keys (`retention.ms`, ...); each topic key has a broker-level synonym that supplies its default
//! (`log.retention.ms`, ...), as Kafka's DescribeConfigs synonyms report.

pub mod keys;
pub mod listeners;
mod table;

pub use listeners::{ListenerConfig, Listeners, SecurityProtocol};

pub use table::{broker_synonyms, BrokerConfigDef, TopicConfigDef, BROKER_CONFIGS, TOPIC_CONFIGS};

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;

use types::BrokerId;

/// A config value's type, as Kafka's `ConfigDef.Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigType {
    /// `true` / `false`.
    Boolean,
    /// 32-bit integer.
    Int,
    /// 64-bit integer.
    Long,
    /// 64-bit float.
    Double,
    /// Free text.
    String,
    /// Comma-separated list.
    List,
    /// Secret (reported as null by DescribeConfigs).
    Password,
    /// A Java class name (Kafka's `CLASS`): Runnel accepts only the classes it implements, checked where
    /// the key is read.
    Class,
}

impl ConfigType {
    /// The DescribeConfigs v3+ `config_type` code (KIP-569): 1 BOOLEAN, 2 STRING, 3 INT, 5 LONG, 6 DOUBLE,
    /// 7 LIST, 8 CLASS, 9 PASSWORD.
    pub fn describe_code(self) -> i8 {
        match self {
            ConfigType::Boolean => 1,
            ConfigType::String => 2,
            ConfigType::Int => 3,
            ConfigType::Long => 5,
            ConfigType::Double => 6,
            ConfigType::List => 7,
            ConfigType::Class => 8,
            ConfigType::Password => 9,
        }
    }

    fn validate(self, key: &str, value: &str) -> Result<(), ConfigError> {
        let bad = |why: &str| ConfigError::InvalidValue {
            key: key.to_string(),
            value: value.to_string(),
            reason: why.to_string(),
        };
        match self {
            ConfigType::Boolean => parse_bool(value)
                .map(|_| ())
                .ok_or_else(|| bad("expected true or false")),
            ConfigType::Int => value
                .trim()
                .parse::<i32>()
                .map(|_| ())
                .map_err(|_| bad("expected a 32-bit integer")),
            ConfigType::Long => value
                .trim()
                .parse::<i64>()
                .map(|_| ())
                .map_err(|_| bad("expected a 64-bit integer")),
            ConfigType::Double => value
                .trim()
                .parse::<f64>()
                .map(|_| ())
                .map_err(|_| bad("expected a number")),
            ConfigType::String | ConfigType::List | ConfigType::Password | ConfigType::Class => {
                Ok(())
            }
        }
    }
}

/// Configuration errors: reported at startup (broker) or as INVALID_CONFIG (topic).
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    /// The key is not a Kafka key Runnel knows.
    #[error("unknown configuration key '{0}'")]
    UnknownKey(String),
    /// The value does not parse as the key's type or is out of range.
    #[error("invalid value '{value}' for configuration '{key}': {reason}")]
    InvalidValue {
        /// The key.
        key: String,
        /// The rejected value.
        value: String,
        /// Why.
        reason: String,
    },
    /// A `.properties` line without `=` or `:`.
    #[error("line {line}: expected KEY=VALUE, got '{text}'")]
    Syntax {
        /// 1-based line number.
        line: usize,
        /// The line.
        text: String,
    },
}

/// Parses Kafka-style `.properties` text: `key=value` or `key: value` lines, `#`/`!` comments, blank lines.
/// Line continuations and escapes beyond `\\` are not supported.
pub fn parse_properties(text: &str) -> Result<Vec<(String, String)>, ConfigError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
            continue;
        }
        let split = line.find(['=', ':']).ok_or_else(|| ConfigError::Syntax {
            line: i + 1,
            text: raw.to_string(),
        })?;
        let key = line[..split].trim().to_string();
        let value = line[split + 1..].trim().to_string();
        out.push((key, value));
    }
    Ok(out)
}

/// Parses a `--set` argument `KEY=VALUE`.
pub fn parse_override(arg: &str) -> Result<(String, String), ConfigError> {
    match arg.split_once('=') {
        Some((k, v)) => Ok((k.trim().to_string(), v.trim().to_string())),
        None => Err(ConfigError::Syntax {
            line: 0,
            text: arg.to_string(),
        }),
    }
}

/// A host and port as given in `listeners` / `advertised.listeners` (`PLAINTEXT://host:port` or `host:port`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Listener name (the `NAME://` prefix, upper-cased; `PLAINTEXT` when the entry has none).
    pub name: String,
    /// Host name or IP literal.
    pub host: String,
    /// TCP port.
    pub port: u16,
}

impl Endpoint {
    /// Parses `[NAME://]host:port`; an empty host means all interfaces (`0.0.0.0`).
    pub fn parse(key: &str, text: &str) -> Result<Endpoint, ConfigError> {
        let bad = |why: &str| ConfigError::InvalidValue {
            key: key.to_string(),
            value: text.to_string(),
            reason: why.to_string(),
        };
        let first = text.split(',').next().unwrap_or("").trim();
        let (name, addr) = match first.split_once("://") {
            Some((name, rest)) => (name.to_ascii_uppercase(), rest),
            None => ("PLAINTEXT".to_string(), first),
        };
        let (host, port) = addr
            .rsplit_once(':')
            .ok_or_else(|| bad("expected HOST:PORT"))?;
        let port: u16 = port.parse().map_err(|_| bad("bad port"))?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let host = if host.is_empty() { "0.0.0.0" } else { host };
        Ok(Endpoint {
            name,
            host: host.to_string(),
            port,
        })
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// The validated broker configuration. Every field has Kafka's key and unit in its doc.
#[derive(Debug, Clone)]
pub struct BrokerConfig {
    /// Keys set explicitly (file or `--set`), for DescribeConfigs' STATIC_BROKER_CONFIG source.
    pub explicit: BTreeMap<String, String>,
    /// `node.id` (or `broker.id`): this broker's id (in combined mode also its controller's node id).
    pub node_id: BrokerId,
    /// First entry of `log.dirs`, else `log.dir`: where the broker keeps its metadata files.
    pub log_dir: PathBuf,
    /// Every data directory (`log.dirs`, comma-separated, in order; else `log.dir` alone; never empty):
    /// the partitions are spread over them (JBOD, KIP-112). Empty entries are skipped.
    pub log_dirs: Vec<PathBuf>,
    /// `listeners` (without the controller's), `advertised.listeners`, `listener.security.protocol.map`
    /// and `inter.broker.listener.name`, validated together.
    pub listeners: Listeners,
    /// The inter-broker listener's advertised endpoint: what this broker registers as its host and port
    /// (standalone: what it names itself as when a client's listener is not advertised).
    pub advertised_listener: Endpoint,
    /// `num.partitions` for auto-created topics and CreateTopics with -1.
    pub num_partitions: i32,
    /// `default.replication.factor`.
    pub default_replication_factor: i16,
    /// `auto.create.topics.enable`.
    pub auto_create_topics_enable: bool,
    /// `delete.topic.enable`.
    pub delete_topic_enable: bool,
    /// `socket.request.max.bytes`: larger request frames close the connection (bytes).
    pub socket_request_max_bytes: i32,
    /// `log.retention.check.interval.ms`.
    pub log_retention_check_interval_ms: i64,
    /// `log.flush.scheduler.interval.ms`.
    pub log_flush_scheduler_interval_ms: i64,
    /// `log.flush.offset.checkpoint.interval.ms`.
    pub log_flush_offset_checkpoint_interval_ms: i64,
    /// `producer.id.expiration.ms`.
    pub producer_id_expiration_ms: i64,
    /// `offsets.topic.num.partitions`.
    pub offsets_topic_num_partitions: i32,
    /// `group.initial.rebalance.delay.ms`.
    pub group_initial_rebalance_delay_ms: i64,
    /// `group.min.session.timeout.ms`.
    pub group_min_session_timeout_ms: i32,
    /// `group.max.session.timeout.ms`.
    pub group_max_session_timeout_ms: i32,
    /// `offsets.retention.minutes`, in ms.
    pub offsets_retention_ms: i64,
    /// `process.roles`: which parts this process runs.
    pub process_roles: ProcessRoles,
    /// `controller.quorum.voters` (`id@host:port,...`): the static Raft voters, by node id. Empty means
    /// standalone mode (one process, metadata kept in the local data dir, no quorum).
    pub controller_quorum_voters: BTreeMap<BrokerId, Endpoint>,
    /// `controller.quorum.bootstrap.servers` (KIP-853, `host:port,...`): for a controller-only process
    /// without `controller.quorum.voters`, the controllers it asks to replicate the metadata log to it as
    /// a learner; it votes once AddRaftVoter (`kafka-metadata-quorum.sh add-controller`) adds it. Needs
    /// `cluster.id` and a controller listener.
    pub controller_quorum_bootstrap_servers: Vec<Endpoint>,
    /// The `listeners` entry named in `controller.listener.names` (default `CONTROLLER`), where this process's
    /// controller binds; when absent, the voter entry for `node.id` is used.
    pub controller_listener: Option<Endpoint>,
    /// `broker.session.timeout.ms`: a broker silent this long is fenced by the controller (ms).
    pub broker_session_timeout_ms: i64,
    /// `broker.heartbeat.interval.ms`: how often a broker heartbeats to the active controller (ms).
    pub broker_heartbeat_interval_ms: i64,
    /// `replica.lag.time.max.ms`: a follower not caught up this long leaves the ISR (ms).
    pub replica_lag_time_max_ms: i64,
    /// `unclean.leader.election.enable`.
    pub unclean_leader_election_enable: bool,
    /// `auto.leader.rebalance.enable`: the active controller moves leaderships back to preferred replicas.
    pub auto_leader_rebalance_enable: bool,
    /// `leader.imbalance.check.interval.seconds` in ms: how often it checks.
    pub leader_imbalance_check_interval_ms: i64,
    /// `cluster.id`, if set; otherwise derived (standalone: random at first start; cluster: from the voters).
    pub cluster_id: Option<String>,
    /// The `auto.balance.*` keys: the controller's automatic balancing.
    pub balancer: controller::control::BalancerConfig,
}

/// `process.roles` (KIP-500): `broker`, `controller`, or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessRoles {
    /// Serves clients and hosts partition replicas.
    pub broker: bool,
    /// Is a voter of the metadata quorum.
    pub controller: bool,
}

impl BrokerConfig {
    /// True when `controller.quorum.voters` (or, for a joining controller,
    /// `controller.quorum.bootstrap.servers`) is set: metadata lives in the Raft quorum, partitions replicate.
    pub fn is_cluster(&self) -> bool {
        !self.controller_quorum_voters.is_empty()
            || !self.controller_quorum_bootstrap_servers.is_empty()
    }
}

impl BrokerConfig {
    /// Where this process's controller listens: the controller listener, else its own
    /// `controller.quorum.voters` entry; `None` for neither (a joining controller without a listener).
    pub fn controller_endpoint(&self) -> Option<&Endpoint> {
        let voter = self.controller_quorum_voters.get(&self.node_id);
        self.controller_listener.as_ref().or(voter)
    }

    /// `controller.quorum.bootstrap.servers` resolved (an entry that does not resolve is left out, logged).
    pub fn controller_bootstrap_addrs(&self) -> Vec<SocketAddr> {
        use std::net::ToSocketAddrs;
        (self.controller_quorum_bootstrap_servers.iter())
            .filter_map(|e| match (e.host.as_str(), e.port).to_socket_addrs() {
                Ok(mut addrs) => addrs.next(),
                Err(err) => {
                    tracing::warn!(%err, host = %e.host, "a controller.quorum.bootstrap.servers entry does not resolve");
                    None
                }
            })
            .collect()
    }

    /// `controller.quorum.bootstrap.servers` as `host:port` strings.
    pub fn controller_bootstrap_servers(&self) -> Vec<String> {
        self.controller_quorum_bootstrap_servers
            .iter()
            .map(|e| format!("{}:{}", e.host, e.port))
            .collect()
    }
}

/// Parses `controller.quorum.voters`: `id@host:port` entries separated by commas.
fn parse_voters(text: &str) -> Result<BTreeMap<BrokerId, Endpoint>, ConfigError> {
    let mut voters = BTreeMap::new();
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let bad = |why: &str| ConfigError::InvalidValue {
            key: "controller.quorum.voters".into(),
            value: text.to_string(),
            reason: format!("{why} in '{entry}' (expected id@host:port,...)"),
        };
        let (id, addr) = entry.split_once('@').ok_or_else(|| bad("no '@'"))?;
        let id: i32 = id.trim().parse().map_err(|_| bad("bad node id"))?;
        let endpoint = Endpoint::parse("controller.quorum.voters", addr)?;
        if voters.insert(BrokerId(id), endpoint).is_some() {
            return Err(bad("duplicate node id"));
        }
    }
    Ok(voters)
}

impl BrokerConfig {
    /// Builds the config from `(key, value)` pairs in order (later wins). Unknown keys and values that do not
    /// parse are errors naming the key.
    pub fn from_pairs(pairs: &[(String, String)]) -> Result<BrokerConfig, ConfigError> {
        let mut explicit = BTreeMap::new();
        for (k, v) in pairs {
            let def = broker_def(k).ok_or_else(|| ConfigError::UnknownKey(k.clone()))?;
            def.ty.validate(k, v)?;
            explicit.insert(k.clone(), v.clone());
        }
        let get = |k: &str| -> Option<String> {
            explicit
                .get(k)
                .cloned()
                .or_else(|| broker_def(k).and_then(|d| d.default.map(str::to_string)))
        };
        let int = |k: &str| -> i64 { get(k).and_then(|v| v.trim().parse().ok()).unwrap_or(0) };
        let boolean = |k: &str| get(k).and_then(|v| parse_bool(&v)).unwrap_or(false);

        let node_id = explicit
            .get("node.id")
            .or_else(|| explicit.get("broker.id"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(1);
        let mut log_dirs: Vec<PathBuf> = match explicit.get("log.dirs") {
            Some(dirs) => dirs
                .split(',')
                .map(str::trim)
                .filter(|d| !d.is_empty())
                .map(PathBuf::from)
                .collect(),
            None => Vec::new(),
        };
        if log_dirs.is_empty() {
            log_dirs.push(PathBuf::from(get("log.dir").unwrap_or_default()));
        }
        let log_dir = log_dirs[0].clone();
        let (listeners, controller_listener) = parse_listeners(&get)?;
        let (process_roles, controller_quorum_voters) =
            parse_roles_and_voters(&get, node_id, controller_listener.as_ref())?;
        if let Some(v) = get("group.consumer.migration.policy") {
            if coordinator::ConsumerGroupMigrationPolicy::parse(&v).is_none() {
                return Err(ConfigError::InvalidValue {
                    key: "group.consumer.migration.policy".into(),
                    value: v,
                    reason: "expected one of bidirectional, upgrade, downgrade, disabled".into(),
                });
            }
        }
        let controller_quorum_bootstrap_servers =
            parse_bootstrap_servers(&get, process_roles, &controller_quorum_voters)?;
        let advertised_listener = listeners
            .inter_broker()
            .or(listeners.advertised.first())
            .cloned()
            .unwrap_or_else(|| listeners.listeners[0].endpoint.clone());
        let socket_request_max_bytes =
            at_least_one("socket.request.max.bytes", int("socket.request.max.bytes"))?;
        let num_partitions = at_least_one("num.partitions", int("num.partitions"))?;
        Ok(BrokerConfig {
            node_id: BrokerId(node_id),
            log_dir,
            log_dirs,
            listeners,
            advertised_listener,
            num_partitions: num_partitions as i32,
            default_replication_factor: int("default.replication.factor") as i16,
            auto_create_topics_enable: boolean("auto.create.topics.enable"),
            delete_topic_enable: boolean("delete.topic.enable"),
            socket_request_max_bytes: socket_request_max_bytes as i32,
            log_retention_check_interval_ms: int("log.retention.check.interval.ms"),
            log_flush_scheduler_interval_ms: int("log.flush.scheduler.interval.ms"),
            log_flush_offset_checkpoint_interval_ms: int("log.flush.offset.checkpoint.interval.ms"),
            producer_id_expiration_ms: int("producer.id.expiration.ms"),
            offsets_topic_num_partitions: int("offsets.topic.num.partitions") as i32,
            group_initial_rebalance_delay_ms: int("group.initial.rebalance.delay.ms"),
            group_min_session_timeout_ms: int("group.min.session.timeout.ms") as i32,
            group_max_session_timeout_ms: int("group.max.session.timeout.ms") as i32,
            offsets_retention_ms: int("offsets.retention.minutes") * 60_000,
            process_roles,
            controller_quorum_voters,
            controller_quorum_bootstrap_servers,
            controller_listener,
            broker_session_timeout_ms: int("broker.session.timeout.ms"),
            broker_heartbeat_interval_ms: int("broker.heartbeat.interval.ms"),
            replica_lag_time_max_ms: int("replica.lag.time.max.ms"),
            unclean_leader_election_enable: boolean("unclean.leader.election.enable"),
            auto_leader_rebalance_enable: boolean("auto.leader.rebalance.enable"),
            leader_imbalance_check_interval_ms: int("leader.imbalance.check.interval.seconds")
                .saturating_mul(1000),
            cluster_id: get("cluster.id").filter(|c| !c.trim().is_empty()),
            balancer: controller::control::BalancerConfig {
                enable: boolean("auto.balance.enable"),
                check_interval_ms: int("auto.balance.check.interval.ms").max(1),
                max_concurrent_moves: int("auto.balance.max.concurrent.moves").max(0) as usize,
                max_spread_percent: int("auto.balance.max.spread.percent").clamp(0, 1000) as u32,
                dead_broker_delay_ms: int("auto.balance.dead.broker.delay.ms"),
            },
            explicit,
        })
    }

    /// The effective value of broker key `key` as text (explicit, else derived, else default), or `None` when
    /// it is null. Derived keys: `log.retention.ms` from minutes/hours, `log.roll.ms` from hours,
    /// `log.flush.interval.ms` from the scheduler interval.
    pub fn value(&self, key: &str) -> Option<String> {
        if let Some(v) = self.explicit.get(key) {
            return Some(v.clone());
        }
        match key {
            "log.retention.ms" => {
                if let Some(m) = self.explicit.get("log.retention.minutes") {
                    return m
                        .trim()
                        .parse::<i64>()
                        .ok()
                        .map(|m| (m * 60_000).to_string());
                }
                let h: i64 = self
                    .value("log.retention.hours")
                    .and_then(|h| h.trim().parse().ok())
                    .unwrap_or(168);
                Some((h * 3_600_000).to_string())
            }
            "log.roll.ms" => {
                let h: i64 = self
                    .value("log.roll.hours")
                    .and_then(|h| h.trim().parse().ok())
                    .unwrap_or(168);
                Some((h * 3_600_000).to_string())
            }
            "log.roll.jitter.ms" => {
                let h: i64 = self
                    .value("log.roll.jitter.hours")
                    .and_then(|h| h.trim().parse().ok())
                    .unwrap_or(0);
                Some((h * 3_600_000).to_string())
            }
            "log.flush.interval.ms" => self.value("log.flush.scheduler.interval.ms"),
            "node.id" | "broker.id" => Some(self.node_id.to_string()),
            _ => broker_def(key).and_then(|d| d.default.map(str::to_string)),
        }
    }

    /// The typed value of `key` (explicit, else derived, else the key table's default), parsed by the same
    /// rules that validated it. Keys are declared in [`keys`]; a test checks each against the key table.
    ///
    /// Panics when a non-nullable key has no value or its value does not parse: the config was validated at
    /// load time, so that is a bug (a key missing from the table or declared with the wrong type).
    pub fn get<T: keys::ConfigValue>(&self, key: keys::Key<T>) -> T {
        let text = self.value(key.name());
        T::from_text(text.as_deref()).unwrap_or_else(|| {
            panic!(
                "broker config {} = {text:?} does not read as {}",
                key.name(),
                std::any::type_name::<T>()
            )
        })
    }
}

/// Parses the listener keys into the broker's [`Listeners`] and the controller listener (the first
/// `listeners` entry named in `controller.listener.names`, default `CONTROLLER`), if any.
fn parse_listeners(
    get: &dyn Fn(&str) -> Option<String>,
) -> Result<(Listeners, Option<Endpoint>), ConfigError> {
    let controller_names: Vec<String> = get("controller.listener.names")
        .unwrap_or_else(|| "CONTROLLER".into())
        .split(',')
        .map(|n| n.trim().to_ascii_uppercase())
        .collect();
    let text = get("listeners").unwrap_or_default();
    let controller_listener = listeners::parse_endpoint_list("listeners", &text)?
        .into_iter()
        .find(|e| controller_names.contains(&e.name));
    let roles = get("process.roles").unwrap_or_default();
    let advertised = get("advertised.listeners");
    let map = get("listener.security.protocol.map");
    let inter = get("inter.broker.listener.name");
    let inter_protocol = get("security.inter.broker.protocol");
    let parsed = Listeners::parse(&listeners::ListenerKeys {
        listeners: &text,
        advertised: advertised.as_deref(),
        protocol_map: map.as_deref(),
        inter_broker_listener_name: inter.as_deref(),
        security_inter_broker_protocol: inter_protocol.as_deref(),
        controller_names: &controller_names,
        broker_role: roles.to_ascii_lowercase().contains("broker"),
    })?;
    Ok((parsed, controller_listener))
}

/// Splits a per-listener key `listener.name.<listener>.<key>` into the listener name (upper-cased) and
/// the base key (Kafka's `ListenerName.configPrefix`).
pub fn listener_override(key: &str) -> Option<(String, &str)> {
    let rest = key.strip_prefix("listener.name.")?;
    let (name, base) = rest.split_once('.')?;
    (!name.is_empty() && !base.is_empty()).then(|| (name.to_ascii_uppercase(), base))
}

impl BrokerConfig {
    /// This broker's advertised endpoint on listener `name`, else its inter-broker one.
    pub fn advertised_for(&self, name: &str) -> &Endpoint {
        self.listeners
            .advertised(name)
            .unwrap_or(&self.advertised_listener)
    }

    /// The value of `key` for listener `listener`: `listener.name.<listener lower-case>.<key>` if set, else
    /// the broker-wide `key` (Kafka's per-listener overrides, e.g. `listener.name.ssl.ssl.keystore.location`).
    pub fn listener_value(&self, listener: &str, key: &str) -> Option<String> {
        let prefixed = format!("listener.name.{}.{key}", listener.to_ascii_lowercase());
        self.explicit
            .get(&prefixed)
            .cloned()
            .or_else(|| self.value(key))
    }
}

/// `process.roles` and `controller.quorum.voters`, checked together: at least one role; a broker-only or
/// controller-only process needs voters; a controller's listener is its voter address and its node id a
/// voter.
fn parse_roles_and_voters(
    get: &dyn Fn(&str) -> Option<String>,
    node_id: i32,
    controller_listener: Option<&Endpoint>,
) -> Result<(ProcessRoles, BTreeMap<BrokerId, Endpoint>), ConfigError> {
    let roles = get("process.roles")
        .unwrap_or_default()
        .to_ascii_lowercase();
    let process_roles = ProcessRoles {
        broker: roles.split(',').any(|r| r.trim() == "broker"),
        controller: roles.split(',').any(|r| r.trim() == "controller"),
    };
    if !process_roles.broker && !process_roles.controller {
        return Err(ConfigError::InvalidValue {
            key: "process.roles".into(),
            value: roles,
            reason: "expected broker, controller, or broker,controller".into(),
        });
    }
    let controller_quorum_voters =
        parse_voters(&get("controller.quorum.voters").unwrap_or_default())?;
    // A controller-only process joins through the bootstrap servers (KIP-853); a broker-only one finds
    // the controllers through them.
    let joins = process_roles.controller != process_roles.broker
        && get("controller.quorum.bootstrap.servers").is_some_and(|v| !v.trim().is_empty());
    if controller_quorum_voters.is_empty()
        && !joins
        && !(process_roles.broker && process_roles.controller)
    {
        return Err(ConfigError::InvalidValue {
            key: "process.roles".into(),
            value: roles,
            reason: "a broker-only or controller-only process needs controller.quorum.voters"
                .into(),
        });
    }
    if let (Some(listen), Some(voter)) = (
        controller_listener,
        controller_quorum_voters.get(&BrokerId(node_id)),
    ) {
        if process_roles.controller && (listen.port != voter.port || listen.host != voter.host) {
            return Err(ConfigError::InvalidValue {
                    key: "listeners".into(),
                    value: format!("CONTROLLER://{listen}"),
                    reason: format!(
                        "the controller listener must be this node's voter address {voter} from controller.quorum.voters"
                    ),
                });
        }
    }
    if process_roles.controller
        && !controller_quorum_voters.is_empty()
        && !controller_quorum_voters.contains_key(&BrokerId(node_id))
    {
        return Err(ConfigError::InvalidValue {
            key: "controller.quorum.voters".into(),
            value: get("controller.quorum.voters").unwrap_or_default(),
            reason: format!("node.id {node_id} runs a controller but is not a voter"),
        });
    }
    Ok((process_roles, controller_quorum_voters))
}

/// `controller.quorum.bootstrap.servers` (KIP-853): used by a controller-only process without
/// `controller.quorum.voters` (which wins when both are set), and then `cluster.id` must be set (a joining
/// node cannot derive it from the voters). A process with the broker role needs the voters: its controller
/// client finds the active controller among them.
fn parse_bootstrap_servers(
    get: &dyn Fn(&str) -> Option<String>,
    roles: ProcessRoles,
    voters: &BTreeMap<BrokerId, Endpoint>,
) -> Result<Vec<Endpoint>, ConfigError> {
    const KEY: &str = "controller.quorum.bootstrap.servers";
    let text = get(KEY).unwrap_or_default();
    let servers = text
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(|e| Endpoint::parse(KEY, e))
        .collect::<Result<Vec<_>, _>>()?;
    if servers.is_empty() || !voters.is_empty() {
        return Ok(servers);
    }
    let refuse = |reason: &str| ConfigError::InvalidValue {
        key: KEY.into(),
        value: text.clone(),
        reason: reason.into(),
    };
    if roles.broker && roles.controller {
        return Err(refuse(
            "a combined broker and controller needs controller.quorum.voters; a controller-only process \
             joins, and a broker-only one finds the controllers, through the bootstrap servers",
        ));
    }
    if get("cluster.id").is_none_or(|c| c.trim().is_empty()) {
        return Err(refuse(
            "a process that finds the quorum through the bootstrap servers needs cluster.id",
        ));
    }
    Ok(servers)
}

/// `value` if it is at least 1, else an error naming `key`.
fn at_least_one(key: &str, value: i64) -> Result<i64, ConfigError> {
    if value < 1 {
        return Err(ConfigError::InvalidValue {
            key: key.into(),
            value: value.to_string(),
            reason: "must be at least 1".into(),
        });
    }
    Ok(value)
}

/// Parses a Kafka boolean as Kafka's `ConfigDef` does: `true` or `false`, any case, surrounding blanks
/// ignored. The one parser for validation and use (a value that validates is read the same way).
pub fn parse_bool(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// Looks up a broker key's definition; a per-listener key `listener.name.<l>.<key>` has `<key>`'s.
pub fn broker_def(key: &str) -> Option<&'static BrokerConfigDef> {
    let find = |k: &str| BROKER_CONFIGS.iter().find(|d| d.name == k);
    find(key).or_else(|| listener_override(key).and_then(|(_, base)| find(base)))
}

/// Looks up a topic key's definition.
pub fn topic_def(key: &str) -> Option<&'static TopicConfigDef> {
    TOPIC_CONFIGS.iter().find(|d| d.name == key)
}

/// Validates a topic config override. Errors name the key and the reason (INVALID_CONFIG at the protocol edge).
pub fn validate_topic_config(key: &str, value: &str) -> Result<(), ConfigError> {
    let def = topic_def(key).ok_or_else(|| ConfigError::UnknownKey(key.to_string()))?;
    def.ty.validate(key, value)?;
    let bad = |why: &str| ConfigError::InvalidValue {
        key: key.to_string(),
        value: value.to_string(),
        reason: why.to_string(),
    };
    match key {
        "cleanup.policy" => {
            // The empty list is valid (Kafka 4.x: no cleanup, infinite retention).
            for p in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                if !matches!(p, "delete" | "compact") {
                    return Err(bad("expected delete, compact or both"));
                }
            }
        }
        "leader.replication.throttled.replicas" | "follower.replication.throttled.replicas" => {
            crate::quota::replication::parse_throttled_replicas(value).map_err(|why| bad(&why))?;
        }
        "message.timestamp.type" if !matches!(value, "CreateTime" | "LogAppendTime") => {
            return Err(bad("expected CreateTime or LogAppendTime"));
        }
        "compression.type"
            if !matches!(
                value,
                "producer" | "uncompressed" | "gzip" | "snappy" | "lz4" | "zstd"
            ) =>
        {
            return Err(bad(
                "expected producer, uncompressed, gzip, snappy, lz4 or zstd",
            ));
        }
        // Kafka's answer without tiered storage (`remote.log.storage.system.enable=false`).
        "remote.storage.enable" if value.trim().eq_ignore_ascii_case("true") => {
            return Err(bad(
                "Tiered Storage functionality is disabled in the broker. Topic cannot be configured \
                 with remote log storage.",
            ));
        }
        "segment.bytes" if value.trim().parse::<i64>().unwrap_or(0) < 14 => {
            return Err(bad("must be at least 14"));
        }
        "max.message.bytes" | "min.insync.replicas"
            if value.trim().parse::<i64>().unwrap_or(0) < 1 =>
        {
            return Err(bad("must be at least 1"));
        }
        _ => {}
    }
    Ok(())
}

/// Resolves the effective value of topic key `key`: the topic's override, else the broker synonym's value.
pub fn topic_value(
    broker: &BrokerConfig,
    overrides: &BTreeMap<String, String>,
    key: &str,
) -> Option<String> {
    if let Some(v) = overrides.get(key) {
        return Some(v.clone());
    }
    let def = topic_def(key)?;
    if def.broker_synonym.is_empty() {
        return def.default.map(str::to_string);
    }
    broker.value(def.broker_synonym)
}

/// Parses the `listeners`-style address a socket binds to.
pub fn bind_addr(e: &Endpoint) -> Result<SocketAddr, ConfigError> {
    use std::net::ToSocketAddrs;
    (e.host.as_str(), e.port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut it| it.next())
        .ok_or_else(|| ConfigError::InvalidValue {
            key: "listeners".into(),
            value: e.to_string(),
            reason: "cannot resolve host".into(),
        })
}

#[cfg(test)]
mod tests;
