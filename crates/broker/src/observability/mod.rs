//! Observability (issue 17): Prometheus metrics and health checks, served on an HTTP listener of their own
//! (`metrics.listeners`, loopback by default, never a Kafka listener).
//!
//! Metrics go through the `metrics` facade; the process installs one `metrics-exporter-prometheus`
//! recorder ([`recorder`]) and the `/metrics` route renders it in Prometheus' text format (0.0.4). Two kinds:
//! - events counted where they happen — requests and their latencies ([`requests`]), records and bytes in
//!   and out per topic ([`topics`]), ISR shrinks and expansions (in the `replica` crate);
//! - state read at scrape time ([`collect`]) — partitions, logs, groups and consumer lag, the controller,
//!   the process — so nothing on a hot path keeps a gauge up to date.
//!
//! Names follow what Kafka's JMX metrics become under the Prometheus JMX exporter's usual rules (Strimzi's
//! `kafka-metrics.yaml`: `kafka_server_replicamanager_underreplicatedpartitions`,
//! `kafka_network_requestmetrics_totaltimems{request,quantile}`, ...) and, for consumer lag, kafka_exporter's
//! (`kafka_consumergroup_lag{consumergroup,topic,partition}`), so dashboards and alerts written for those
//! work unchanged; each module below lists its names with their Kafka MBeans (README, "Observability: metrics and health").

pub mod collect;
pub mod end_offsets;
pub mod http;
pub mod requests;
pub mod topics;

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use controller::ControllerStatus;
use replica::replica_manager::ReplicaManager;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use metrics_util::MetricKindMask;

use crate::config::{keys, BrokerConfig, ConfigError};
use crate::server::apis::KafkaApis;
use crate::server::rest::auth::HttpAuthentication;
use collect::Sources;

/// The metrics endpoint's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsConfig {
    /// Where the HTTP listener binds (`metrics.listeners`, `http://host:port` entries; empty = no listener).
    pub listeners: Vec<SocketAddr>,
    /// At most this many per-partition series are exported for logs, and as many per-(group, partition)
    /// series for consumer lag (`metrics.partition.series.max`; 0 = none): bounds the cardinality.
    pub partition_series_max: usize,
    /// `console.enabled`: `None` = the web console on loopback listeners only.
    pub console: Option<bool>,
    /// `http.authentication.method`: who may call the listener's routes (the health checks are open).
    pub authentication: HttpAuthentication,
}

impl MetricsConfig {
    /// Reads `metrics.listeners` and `metrics.partition.series.max`.
    ///
    /// Errors: an entry that is not `http://host:port` with an IP address or `localhost` as host.
    pub fn from_config(config: &BrokerConfig) -> Result<MetricsConfig, ConfigError> {
        let listeners = config.get(keys::METRICS_LISTENERS);
        let listeners = (listeners.split(','))
            .filter(|l| !l.trim().is_empty())
            .map(parse_listener)
            .collect::<Result<Vec<_>, _>>()?;
        let max = config.get(keys::METRICS_PARTITION_SERIES_MAX).max(0);
        Ok(MetricsConfig {
            listeners,
            partition_series_max: usize::try_from(max).unwrap_or(usize::MAX),
            console: config.get(keys::CONSOLE_ENABLED),
            authentication: HttpAuthentication::parse(
                keys::HTTP_AUTHENTICATION_METHOD.name(),
                &config.get(keys::HTTP_AUTHENTICATION_METHOD),
            )?,
        })
    }

    /// Whether the listener bound at `addr` serves the web console (see [`MetricsConfig::console`]).
    pub fn serves_console(&self, addr: &SocketAddr) -> bool {
        self.console.unwrap_or_else(|| addr.ip().is_loopback())
    }
}

/// `http://host:port` → the address to bind (`localhost` = 127.0.0.1, `[::1]` for IPv6).
fn parse_listener(text: &str) -> Result<SocketAddr, ConfigError> {
    let bad = || ConfigError::InvalidValue {
        key: keys::METRICS_LISTENERS.name().to_string(),
        value: text.to_string(),
        reason: "each entry is http://HOST:PORT with an IP address or localhost as HOST"
            .to_string(),
    };
    let rest = text.trim().strip_prefix("http://").ok_or_else(bad)?;
    let rest = rest.trim_end_matches('/');
    let rest = match rest.strip_prefix("localhost:") {
        Some(port) => format!("127.0.0.1:{port}"),
        None => rest.to_string(),
    };
    rest.parse().map_err(|_| bad())
}

/// The metrics endpoint between binding (early in the start, so a port in use stops it) and serving.
#[derive(Debug)]
pub struct MetricsEndpoint {
    listeners: Vec<TcpListener>,
    config: MetricsConfig,
}

impl MetricsEndpoint {
    /// Reads the config and binds `metrics.listeners` (nothing when `enabled` is false: a controller-only
    /// process has no broker services to report yet); with a listener, installs the [`recorder`]. Errors: a bad entry, an address that cannot be bound.
    pub async fn bind(config: &BrokerConfig, enabled: bool) -> anyhow::Result<MetricsEndpoint> {
        let mut config = MetricsConfig::from_config(config)?;
        if !enabled {
            config.listeners.clear();
        }
        let listeners = http::bind(&config.listeners).await?;
        if !listeners.is_empty() {
            // Before any service starts, so what they record from their first moment (the log cleaner's
            // first look for work, say) is kept.
            recorder();
        }
        for l in &listeners {
            tracing::info!(metrics_listen = %l.local_addr()?, "metrics and health endpoint bound");
        }
        Ok(MetricsEndpoint { listeners, config })
    }

    /// The bound addresses (port 0 resolved).
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.listeners
            .iter()
            .filter_map(|l| l.local_addr().ok())
            .collect()
    }

    /// Serves `/metrics`, the health routes and the HTTP API over the broker's services until `shutdown`.
    pub fn start(
        self,
        apis: &Arc<KafkaApis>,
        replica_manager: &Arc<ReplicaManager>,
        controller: Option<ControllerStatus>,
        shutdown: watch::Receiver<bool>,
    ) -> Vec<JoinHandle<()>> {
        if self.listeners.is_empty() {
            return Vec::new();
        }
        recorder();
        let process = metrics_process::Collector::default();
        process.describe();
        let config = apis.config();
        let end_offsets = end_offsets::RemoteEndOffsets::new(
            config.node_id,
            replica_manager.connector(),
            config.listeners.inter_broker_listener_name.clone(),
            Arc::new(types::SystemClock),
        );
        let sources = Sources {
            end_offsets,
            replica_manager: replica_manager.clone(),
            metadata_cache: apis.metadata_cache().clone(),
            groups: apis.group_coordinator().clone(),
            controller,
            local_broker: apis.config().node_id,
            partition_series_max: self.config.partition_series_max,
            process,
            connections: apis.quotas().connections.clone(),
            telemetry: apis.telemetry().clone(),
        };
        let sources = Arc::new(sources);
        let mut tasks = http::spawn(
            self.listeners,
            &self.config,
            sources.clone(),
            apis.clone(),
            shutdown.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let wanted = || sources.remote_committed_partitions();
            let image = || sources.metadata_cache.image();
            end_offsets::refresh_loop(&sources.end_offsets, wanted, image, shutdown).await;
        }));
        tasks
    }
}

/// How long a gauge that stopped being set (a deleted partition's, a group's that is gone) stays in the
/// output. Scrape-time gauges are set just before each render, so live ones never expire.
const IDLE_GAUGE_TIMEOUT: Duration = Duration::from_secs(120);

/// Kafka's percentiles for its latency histograms (`50thPercentile` ... `999thPercentile`).
const QUANTILES: &[f64] = &[0.5, 0.75, 0.95, 0.98, 0.99, 0.999];

/// The process's Prometheus recorder, installed as the global `metrics` recorder on first use. Every
/// broker in the process (tests may run several) records into it; only one can be the global recorder.
pub fn recorder() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let builder = PrometheusBuilder::new()
            .idle_timeout(MetricKindMask::GAUGE, Some(IDLE_GAUGE_TIMEOUT))
            .set_quantiles(QUANTILES)
            .expect("the quantiles are valid");
        let recorder = builder.build_recorder();
        let handle = recorder.handle();
        if metrics::set_global_recorder(recorder).is_err() {
            tracing::warn!("a metrics recorder was already installed: /metrics will be empty");
        }
        requests::describe();
        topics::describe();
        storage::stats::describe();
        handle
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listener_entries_parse() {
        let ok = |t: &str| parse_listener(t).unwrap().to_string();
        assert_eq!(ok("http://127.0.0.1:9644"), "127.0.0.1:9644");
        assert_eq!(ok("http://localhost:1/"), "127.0.0.1:1");
        assert_eq!(ok("http://0.0.0.0:80"), "0.0.0.0:80");
        assert_eq!(ok("http://[::1]:9644"), "[::1]:9644");
        for bad in [
            "127.0.0.1:9644",
            "https://127.0.0.1:1",
            "http://host:1",
            "http://1.2.3.4",
        ] {
            assert!(parse_listener(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_console_is_served_on_loopback_unless_configured() {
        let config = |console| MetricsConfig {
            listeners: Vec::new(),
            partition_series_max: 0,
            console,
            authentication: HttpAuthentication::None,
        };
        let loopback: SocketAddr = "127.0.0.1:9644".parse().unwrap();
        let v6_loopback: SocketAddr = "[::1]:9644".parse().unwrap();
        let any: SocketAddr = "0.0.0.0:9644".parse().unwrap();
        assert!(config(None).serves_console(&loopback));
        assert!(config(None).serves_console(&v6_loopback));
        assert!(!config(None).serves_console(&any));
        assert!(config(Some(true)).serves_console(&any));
        assert!(!config(Some(false)).serves_console(&loopback));
    }
}
