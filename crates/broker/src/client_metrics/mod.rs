//! Client metrics and observability (KIP-714): clients that support it (the Java client ≥ 3.7, librdkafka
//! ≥ 2.5 with `enable.metrics.push=true`) ask for their subscription with GetTelemetrySubscriptions (key 71)
//! and push their metrics as OTLP protobuf with PushTelemetry (key 72); the broker exports them on its
//! Prometheus endpoint (`/metrics` of `metrics.listeners`) as `kafka_client_<name>` series labelled with the
//! client's `client_instance_id`, `client_id`, `client_software_name` and `client_software_version`.
//!
//! - `subscription.rs`: the CLIENT_METRICS config resources (type 16: `metrics`, `interval.ms`, `match`)
//!   and their validation, as Kafka's `ClientMetricsConfigs`.
//! - `manager.rs`: [`ClientMetricsManager`], the sans-I/O core (instances, subscription ids, throttling, the
//!   errors, expiry), time passed in.
//! - `otlp.rs`: the payload's prost messages; `series.rs`: the bounded series store and its rendering.
//! - here: [`ClientTelemetry`], the core behind a lock with the broker's clock, and where subscriptions
//!   are stored — [`ClientMetricsAdmin`]: the topic registry standalone ([`LocalClientMetricsAdmin`]),
//!   CLIENT_METRICS `ConfigRecord`s through the controller in a cluster ([`QuorumClientMetricsAdmin`], with
//!   [`ClientMetricsPublisher`] laying each image's subscriptions in).
//!
//! Beyond Kafka: `client.telemetry.default.metrics` subscribes every client without any resource, and the
//! metrics are exported by the broker itself (Kafka needs a `ClientTelemetry` metrics-reporter plugin, and
//! advertises the two APIs only with one). Runnel asks for cumulative temporality (`DeltaTemporality`
//! false), as Prometheus wants; a client sending deltas anyway has them summed.

mod manager;
pub mod otlp;
pub mod series;
pub mod subscription;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

use futures::future::BoxFuture;
use metadata::MetadataImage;
use parking_lot::Mutex;
use types::Clock;
use uuid::Uuid;

pub use manager::{
    subscription_id, ClientMetricsManager, Push, SubscriptionAnswer, TelemetryConfig,
    TelemetryError, ACCEPTED_COMPRESSION_TYPES, MAX_INSTANCES,
};
pub use subscription::{ClientInfo, SubscriptionError};

use crate::cluster::BrokerCluster;
use crate::config::{keys, BrokerConfig};
use crate::config_admin::ConfigOps;
use crate::error::AlterConfigError;
use crate::metadata::MetadataStore;
use crate::publisher::{MetadataPublisher, Publishers};

/// Resource type CLIENT_METRICS (KIP-714).
pub const RESOURCE_CLIENT_METRICS: i8 = 16;

/// The broker's KIP-714 service: the core under a lock, the clock, and where subscription changes go.
pub struct ClientTelemetry {
    core: Mutex<ClientMetricsManager>,
    clock: Arc<dyn Clock>,
    admin: Mutex<Option<Arc<dyn ClientMetricsAdmin>>>,
}

impl std::fmt::Debug for ClientTelemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientTelemetry").finish_non_exhaustive()
    }
}

impl ClientTelemetry {
    /// The service over `config`'s limits, reading time from `clock`.
    pub fn new(config: TelemetryConfig, clock: Arc<dyn Clock>) -> ClientTelemetry {
        ClientTelemetry {
            core: Mutex::new(ClientMetricsManager::new(config)),
            clock,
            admin: Mutex::new(None),
        }
    }

    /// The limits of `config`: `telemetry.max.bytes`, `metrics.client.series.max`,
    /// `client.telemetry.default.metrics` and `client.telemetry.default.interval.ms` (out-of-range values
    /// are clamped: the interval to 100..=3600000, sizes to at least 1 byte / 0 series).
    pub fn config_of(config: &BrokerConfig) -> TelemetryConfig {
        let interval = config.get(keys::CLIENT_TELEMETRY_DEFAULT_INTERVAL_MS);
        TelemetryConfig {
            max_bytes: config.get(keys::TELEMETRY_MAX_BYTES).max(1) as usize,
            series_max: config.get(keys::METRICS_CLIENT_SERIES_MAX).max(0) as usize,
            default_metrics: subscription::parse_list(
                &config.get(keys::CLIENT_TELEMETRY_DEFAULT_METRICS),
            ),
            default_interval_ms: interval
                .clamp(subscription::INTERVAL_MS_MIN, subscription::INTERVAL_MS_MAX),
        }
    }

    /// Runs `f` on the core (tests, and the handlers through the methods below).
    pub fn with_core<R>(&self, f: impl FnOnce(&mut ClientMetricsManager) -> R) -> R {
        f(&mut self.core.lock())
    }

    /// GetTelemetrySubscriptions (new instance ids are random v4 UUIDs).
    pub fn get_subscriptions(
        &self,
        id: Uuid,
        info: ClientInfo,
    ) -> Result<SubscriptionAnswer, TelemetryError> {
        let now = self.clock.now_ms();
        self.core
            .lock()
            .get_subscriptions(now, id, info, Uuid::new_v4)
    }

    /// PushTelemetry. The payload is decoded under the lock: it is bounded by `telemetry.max.bytes`.
    pub fn push(&self, push: Push<'_>, info: ClientInfo) -> Result<(), TelemetryError> {
        let now = self.clock.now_ms();
        self.core.lock().push(now, push, info)
    }

    /// `telemetry.max.bytes`.
    pub fn max_bytes(&self) -> usize {
        self.core.lock().max_bytes()
    }

    /// The subscription names (ListConfigResources).
    pub fn subscription_names(&self) -> Vec<String> {
        self.core.lock().subscription_names()
    }

    /// Appends the client series to a `/metrics` body.
    pub fn render(&self, out: &mut String) {
        let now = self.clock.now_ms();
        self.core.lock().render(now, out);
    }

    /// Replaces every subscription (the stored resources).
    pub fn replace_subscriptions(&self, configs: &BTreeMap<String, BTreeMap<String, String>>) {
        self.core.lock().replace_subscriptions(configs);
    }

    /// Where subscription changes go (set once by [`wire`]).
    pub fn admin(&self) -> Option<Arc<dyn ClientMetricsAdmin>> {
        self.admin.lock().clone()
    }
}

/// Where CLIENT_METRICS resources are stored. `next` is the resource's whole config set after the change
/// (validated by the caller; empty = the resource is removed), `ops` the change key by key.
pub trait ClientMetricsAdmin: Send + Sync {
    /// Stores the change; answers once this broker's subscriptions follow it. Errors: KAFKA_STORAGE_ERROR
    /// standalone, the controller's errors in a cluster.
    fn alter(
        &self,
        name: String,
        ops: ConfigOps,
        next: BTreeMap<String, String>,
    ) -> BoxFuture<'_, Result<(), AlterConfigError>>;

    /// The stored config set of resource `name` (empty when there is none).
    fn configs(&self, name: &str) -> BTreeMap<String, String>;

    /// Every stored resource.
    fn all(&self) -> BTreeMap<String, BTreeMap<String, String>>;
}

/// The standalone [`ClientMetricsAdmin`]: the resources live in the topic registry (one synced change each).
pub struct LocalClientMetricsAdmin {
    store: Arc<MetadataStore>,
    /// Weak: the service holds its admin.
    telemetry: Weak<ClientTelemetry>,
}

impl ClientMetricsAdmin for LocalClientMetricsAdmin {
    fn alter(
        &self,
        name: String,
        _ops: ConfigOps,
        next: BTreeMap<String, String>,
    ) -> BoxFuture<'_, Result<(), AlterConfigError>> {
        let (store, telemetry) = (self.store.clone(), self.telemetry.clone());
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                store
                    .set_client_metrics(&name, next)
                    .map_err(|e| AlterConfigError::Storage(e.to_string()))?;
                if let Some(t) = telemetry.upgrade() {
                    t.replace_subscriptions(&store.client_metrics());
                }
                Ok(())
            })
            .await
            .map_err(|e| AlterConfigError::Internal(e.to_string()))?
        })
    }

    fn configs(&self, name: &str) -> BTreeMap<String, String> {
        self.store.client_metrics().remove(name).unwrap_or_default()
    }

    fn all(&self) -> BTreeMap<String, BTreeMap<String, String>> {
        self.store.client_metrics()
    }
}

/// The cluster [`ClientMetricsAdmin`]: CLIENT_METRICS `ConfigRecord`s through the active controller,
/// answered once this broker's image (and so, by [`ClientMetricsPublisher`], its subscriptions) shows them.
pub struct QuorumClientMetricsAdmin(pub Arc<BrokerCluster>);

impl ClientMetricsAdmin for QuorumClientMetricsAdmin {
    fn alter(
        &self,
        name: String,
        ops: ConfigOps,
        _next: BTreeMap<String, String>,
    ) -> BoxFuture<'_, Result<(), AlterConfigError>> {
        Box::pin(async move {
            (self.0)
                .alter_configs(RESOURCE_CLIENT_METRICS, name, ops, false)
                .await
        })
    }

    fn configs(&self, name: &str) -> BTreeMap<String, String> {
        let image = self.0.image();
        image.client_metrics.get(name).cloned().unwrap_or_default()
    }

    fn all(&self) -> BTreeMap<String, BTreeMap<String, String>> {
        self.0.image().client_metrics.clone()
    }
}

/// Lays each metadata image's CLIENT_METRICS resources into the subscriptions (cluster mode).
pub struct ClientMetricsPublisher(pub Arc<ClientTelemetry>);

impl MetadataPublisher for ClientMetricsPublisher {
    fn on_image(&self, previous: &MetadataImage, current: &MetadataImage) {
        if previous.client_metrics != current.client_metrics || previous.offset < 0 {
            self.0.replace_subscriptions(&current.client_metrics);
        }
    }
}

/// Builds the service of `config` (on the system clock) and its admin: the registry's resources standalone,
/// the image's in a cluster (a publisher installed on `publishers`).
pub fn wire(
    config: &BrokerConfig,
    store: &Arc<MetadataStore>,
    cluster: Option<&Arc<BrokerCluster>>,
    publishers: &Publishers,
) -> Arc<ClientTelemetry> {
    let clock = Arc::new(types::SystemClock);
    let telemetry = Arc::new(ClientTelemetry::new(
        ClientTelemetry::config_of(config),
        clock,
    ));
    let admin: Arc<dyn ClientMetricsAdmin> = match cluster {
        Some(c) => {
            publishers.install(Arc::new(ClientMetricsPublisher(telemetry.clone())));
            Arc::new(QuorumClientMetricsAdmin(c.clone()))
        }
        None => {
            telemetry.replace_subscriptions(&store.client_metrics());
            Arc::new(LocalClientMetricsAdmin {
                store: store.clone(),
                telemetry: Arc::downgrade(&telemetry),
            })
        }
    };
    *telemetry.admin.lock() = Some(admin);
    telemetry
}
