//! [`ClientMetricsManager`]: the sans-I/O core of KIP-714 on the broker (Kafka's `ClientMetricsManager`),
//! time passed in as `now_ms`.
//!
//! - GetTelemetrySubscriptions: a client sending the zero UUID gets a new client instance id. Its
//!   subscription is the union of every subscription whose `match` selects it (and Runnel's default one,
//!   `client.telemetry.default.metrics`): the metric prefixes (`*` alone when any says all), the least
//!   interval. The subscription id is a CRC32C of the sorted prefixes and the interval, XORed with the
//!   instance id's hash, so every broker computes the same id for the same set. A client's instance is
//!   re-evaluated when any subscription changed since it was made.
//! - Throttling, as Kafka: a GetTelemetrySubscriptions less than one push interval after the instance's last
//!   request is THROTTLING_QUOTA_EXCEEDED (not after an UNKNOWN_SUBSCRIPTION_ID or
//!   UNSUPPORTED_COMPRESSION_TYPE); so is a PushTelemetry less than one interval after the last push, unless
//!   a GetTelemetrySubscriptions came in between (clients jitter their first push) or it is terminating.
//! - PushTelemetry checks, in Kafka's order: the zero or reserved id, or a push after a terminating one →
//!   INVALID_REQUEST; throttling; another subscription id → UNKNOWN_SUBSCRIPTION_ID; a compression type
//!   other than 0..=4 → UNSUPPORTED_COMPRESSION_TYPE; a payload over `telemetry.max.bytes` →
//!   TELEMETRY_TOO_LARGE; then decompression (bounded by `telemetry.max.bytes` too: TELEMETRY_TOO_LARGE)
//!   and decoding (INVALID_RECORD).
//! - Expiry: an instance not heard from for max(60 s, 3 push intervals) is forgotten with its series; the
//!   series of an instance that has not pushed for 3 intervals are removed. At most [`MAX_INSTANCES`]
//!   instances are kept (the least recently heard from is evicted), as Kafka's cache.

use std::collections::{BTreeMap, HashMap};

use protocol::record::{decompress, Compression, RecordError};
use uuid::Uuid;

use super::otlp;
use super::series::{format_value, SeriesStore};
use super::subscription::{
    self, ClientInfo, Subscription, SubscriptionError, ALL_METRICS, INTERVAL_MS_DEFAULT,
};

/// At most this many client instances are tracked (Kafka's cache size).
pub const MAX_INSTANCES: usize = 16_384;
/// The least time an instance is kept after its last request (ms; Kafka's cache expiry).
pub const INSTANCE_EXPIRY_MIN_MS: i64 = 60_000;
/// The compression types offered, in preference order (Kafka's: zstd, lz4, gzip, snappy).
pub const ACCEPTED_COMPRESSION_TYPES: [i8; 4] = [4, 3, 1, 2];

/// The time of a request that never came (far enough in the past for any interval, without overflow).
const NEVER: i64 = i64::MIN / 4;

/// The limits and defaults of the manager (broker configs).
#[derive(Debug, Clone)]
pub struct TelemetryConfig {
    /// `telemetry.max.bytes`: the largest payload, before and after decompression (bytes).
    pub max_bytes: usize,
    /// `metrics.client.series.max`.
    pub series_max: usize,
    /// `client.telemetry.default.metrics`: prefixes every client is subscribed to (empty = none).
    pub default_metrics: Vec<String>,
    /// `client.telemetry.default.interval.ms`.
    pub default_interval_ms: i32,
}

/// Why a telemetry request is refused; the handler maps each to its Kafka code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TelemetryError {
    /// INVALID_REQUEST (42).
    #[error("{0}")]
    InvalidRequest(String),
    /// THROTTLING_QUOTA_EXCEEDED (89).
    #[error("request from client instance {0} arrived before the next push interval")]
    Throttled(Uuid),
    /// UNKNOWN_SUBSCRIPTION_ID (117).
    #[error("unknown subscription id for client instance {0}")]
    UnknownSubscriptionId(Uuid),
    /// UNSUPPORTED_COMPRESSION_TYPE (76).
    #[error("unknown compression type {0}")]
    UnsupportedCompressionType(i8),
    /// TELEMETRY_TOO_LARGE (118).
    #[error("telemetry payload larger than {0} bytes")]
    TooLarge(usize),
    /// INVALID_RECORD (87): the payload does not decompress or decode.
    #[error("undecodable telemetry payload: {0}")]
    InvalidRecord(String),
}

/// A GetTelemetrySubscriptions answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscriptionAnswer {
    /// The client's instance id (assigned when it sent the zero UUID).
    pub client_instance_id: Uuid,
    /// The subscription id.
    pub subscription_id: i32,
    /// Metric-name prefixes (`["*"]` = all, empty = none).
    pub requested_metrics: Vec<String>,
    /// The push interval (ms).
    pub push_interval_ms: i32,
}

/// A PushTelemetry as the manager sees it.
#[derive(Debug, Clone, Copy)]
pub struct Push<'a> {
    /// The request's client instance id.
    pub client_instance_id: Uuid,
    /// The request's subscription id.
    pub subscription_id: i32,
    /// True when the client is closing.
    pub terminating: bool,
    /// The compression type id of `metrics`.
    pub compression_type: i8,
    /// The (compressed) OTLP payload.
    pub metrics: &'a [u8],
}

#[derive(Debug)]
struct Instance {
    info: ClientInfo,
    version: u64,
    subscription_id: i32,
    metrics: Vec<String>,
    interval_ms: i32,
    last_get_ms: i64,
    last_push_ms: i64,
    last_seen_ms: i64,
    forgiving: bool,
    terminating: bool,
}

/// The KIP-714 state of one broker. See the module doc.
#[derive(Debug)]
pub struct ClientMetricsManager {
    config: TelemetryConfig,
    subscriptions: BTreeMap<String, Subscription>,
    version: u64,
    instances: HashMap<Uuid, Instance>,
    series: SeriesStore,
}

impl ClientMetricsManager {
    /// A manager without subscriptions (besides the default one of `config`).
    pub fn new(config: TelemetryConfig) -> ClientMetricsManager {
        ClientMetricsManager {
            series: SeriesStore::new(config.series_max),
            config,
            subscriptions: BTreeMap::new(),
            version: 0,
            instances: HashMap::new(),
        }
    }

    /// `telemetry.max.bytes`.
    pub fn max_bytes(&self) -> usize {
        self.config.max_bytes
    }

    /// Replaces every subscription by `configs` (name → its config set, as stored). A set that does not
    /// validate is skipped and logged (it was validated when it was written).
    pub fn replace_subscriptions(&mut self, configs: &BTreeMap<String, BTreeMap<String, String>>) {
        self.subscriptions.clear();
        for (name, set) in configs {
            match subscription::parse(name, set) {
                Ok(s) => {
                    self.subscriptions.insert(name.clone(), s);
                }
                Err(e) => {
                    tracing::warn!(subscription = %name, error = %e, "client metrics subscription skipped")
                }
            }
        }
        self.version += 1;
    }

    /// Sets subscription `name` to `configs` (removes it when empty), after validating them.
    pub fn set_subscription(
        &mut self,
        name: &str,
        configs: &BTreeMap<String, String>,
    ) -> Result<(), SubscriptionError> {
        let parsed = subscription::parse(name, configs)?;
        match configs.is_empty() {
            true => self.subscriptions.remove(name),
            false => self.subscriptions.insert(name.to_string(), parsed),
        };
        self.version += 1;
        Ok(())
    }

    /// The subscription names.
    pub fn subscription_names(&self) -> Vec<String> {
        self.subscriptions.keys().cloned().collect()
    }

    /// Answers a GetTelemetrySubscriptions of `id` (the zero UUID = a new client, given `new_id()`).
    pub fn get_subscriptions(
        &mut self,
        now_ms: i64,
        id: Uuid,
        info: ClientInfo,
        new_id: impl FnMut() -> Uuid,
    ) -> Result<SubscriptionAnswer, TelemetryError> {
        self.expire(now_ms);
        let id = match id.is_nil() {
            true => self.fresh_id(new_id),
            false => id,
        };
        let instance = self.instance(now_ms, id, info);
        let elapsed = now_ms - instance.last_get_ms.max(instance.last_push_ms);
        if elapsed < i64::from(instance.interval_ms) && !instance.forgiving {
            return Err(TelemetryError::Throttled(id));
        }
        instance.last_get_ms = now_ms;
        instance.forgiving = false;
        Ok(SubscriptionAnswer {
            client_instance_id: id,
            subscription_id: instance.subscription_id,
            requested_metrics: instance.metrics.clone(),
            push_interval_ms: instance.interval_ms,
        })
    }

    /// Takes a PushTelemetry: checks it (module doc), then records its samples labelled with the client's
    /// `client_instance_id`, `client_id`, `client_software_name` and `client_software_version`.
    pub fn push(
        &mut self,
        now_ms: i64,
        push: Push<'_>,
        info: ClientInfo,
    ) -> Result<(), TelemetryError> {
        let id = push.client_instance_id;
        if id.is_nil() || id == Uuid::from_u128(1) {
            return Err(TelemetryError::InvalidRequest(format!(
                "Invalid request from the client [{id}], invalid client instance id"
            )));
        }
        self.expire(now_ms);
        let max_bytes = self.config.max_bytes;
        let instance = self.instance(now_ms, id, info);
        let checked = check_push(instance, now_ms, &push, max_bytes);
        instance.terminating |= push.terminating;
        instance.forgiving = matches!(
            checked,
            Err(TelemetryError::UnknownSubscriptionId(_)
                | TelemetryError::UnsupportedCompressionType(_))
        );
        checked?;
        if push.metrics.is_empty() {
            return Ok(());
        }
        let labels = base_labels(id, &instance.info);
        let samples = decode_payload(&push, max_bytes)?;
        self.series.record(id, &labels, samples);
        Ok(())
    }

    /// Forgets instances not heard from for max(60 s, 3 intervals) and the series of instances that have
    /// not pushed for 3 intervals.
    pub fn expire(&mut self, now_ms: i64) {
        let series = &mut self.series;
        self.instances.retain(|id, i| {
            let interval = 3 * i64::from(i.interval_ms);
            let alive = now_ms - i.last_seen_ms < interval.max(INSTANCE_EXPIRY_MIN_MS);
            if !alive || now_ms - i.last_push_ms >= interval {
                series.remove_owner(*id);
            }
            alive
        });
    }

    /// How many client instances are tracked.
    pub fn instance_count(&self) -> usize {
        self.instances.len()
    }

    /// The exported series.
    pub fn series(&self) -> &SeriesStore {
        &self.series
    }

    /// Appends the client series and the manager's own gauges in Prometheus text format, after expiring.
    pub fn render(&mut self, now_ms: i64, out: &mut String) {
        self.expire(now_ms);
        out.push_str("# TYPE kafka_server_client_metrics_instance_count gauge\n");
        let count = self.instances.len() as f64;
        out.push_str(&format!(
            "kafka_server_client_metrics_instance_count {}\n",
            format_value(count)
        ));
        out.push_str("# TYPE kafka_server_client_metrics_series_dropped_total counter\n");
        out.push_str(&format!(
            "kafka_server_client_metrics_series_dropped_total {}\n",
            self.series.dropped()
        ));
        self.series.render(out);
    }

    fn fresh_id(&self, mut new_id: impl FnMut() -> Uuid) -> Uuid {
        loop {
            let id = new_id();
            if !id.is_nil() && id != Uuid::from_u128(1) && !self.instances.contains_key(&id) {
                return id;
            }
        }
    }

    /// The instance of `id`, made (or remade, when the subscriptions changed since) from the current
    /// subscriptions; its last-seen time is now.
    fn instance(&mut self, now_ms: i64, id: Uuid, mut info: ClientInfo) -> &mut Instance {
        info.client_instance_id = id.to_string();
        let stale = self
            .instances
            .get(&id)
            .is_none_or(|i| i.version != self.version);
        if stale {
            if !self.instances.contains_key(&id) && self.instances.len() >= MAX_INSTANCES {
                self.evict_oldest();
            }
            let (metrics, interval_ms) = self.subscribed(&info);
            let previous = self.instances.remove(&id);
            let instance = Instance {
                subscription_id: subscription_id(&metrics, interval_ms, id),
                metrics,
                interval_ms,
                version: self.version,
                last_get_ms: NEVER,
                last_push_ms: NEVER,
                last_seen_ms: now_ms,
                forgiving: false,
                terminating: previous.as_ref().is_some_and(|p| p.terminating),
                info: previous.map_or(info, |p| p.info),
            };
            self.instances.insert(id, instance);
        }
        let instance = self.instances.get_mut(&id).expect("just inserted");
        instance.last_seen_ms = now_ms;
        instance
    }

    fn evict_oldest(&mut self) {
        let oldest = self.instances.iter().min_by_key(|(_, i)| i.last_seen_ms);
        if let Some(id) = oldest.map(|(id, _)| *id) {
            self.instances.remove(&id);
            self.series.remove_owner(id);
        }
    }

    /// The union of the subscriptions matching `info`: sorted prefixes (`["*"]` for all) and the least
    /// interval (the default interval when none matches).
    fn subscribed(&self, info: &ClientInfo) -> (Vec<String>, i32) {
        let mut metrics: Vec<String> = Vec::new();
        let mut interval = INTERVAL_MS_DEFAULT;
        if !self.config.default_metrics.is_empty() {
            metrics.extend(self.config.default_metrics.iter().cloned());
            interval = self.config.default_interval_ms;
        }
        for s in self.subscriptions.values().filter(|s| s.matches(info)) {
            metrics.extend(s.metrics.iter().cloned());
            interval = interval.min(s.interval_ms);
        }
        if metrics.iter().any(|m| m == ALL_METRICS) {
            return (vec![ALL_METRICS.to_string()], interval);
        }
        metrics.sort();
        metrics.dedup();
        (metrics, interval)
    }
}

/// Kafka's push checks on an instance (module doc), updating its last push time when it is accepted.
fn check_push(
    instance: &mut Instance,
    now_ms: i64,
    push: &Push<'_>,
    max_bytes: usize,
) -> Result<(), TelemetryError> {
    let id = push.client_instance_id;
    if instance.terminating {
        return Err(TelemetryError::InvalidRequest(format!(
            "Client [{id}] sent the previous request with state terminating to TRUE, can not accept any requests after that"
        )));
    }
    let accepted = instance.last_get_ms > instance.last_push_ms
        || now_ms - instance.last_push_ms >= i64::from(instance.interval_ms);
    if !accepted && !push.terminating {
        return Err(TelemetryError::Throttled(id));
    }
    if accepted {
        instance.last_push_ms = now_ms;
    }
    if push.subscription_id != instance.subscription_id {
        return Err(TelemetryError::UnknownSubscriptionId(id));
    }
    if !(0..=4).contains(&push.compression_type) {
        return Err(TelemetryError::UnsupportedCompressionType(
            push.compression_type,
        ));
    }
    if push.metrics.len() > max_bytes {
        return Err(TelemetryError::TooLarge(max_bytes));
    }
    Ok(())
}

/// Decompresses (at most `max_bytes`) and decodes a checked push's payload.
fn decode_payload(push: &Push<'_>, max_bytes: usize) -> Result<Vec<otlp::Sample>, TelemetryError> {
    let codec = Compression::from_id(push.compression_type as u8)
        .map_err(|_| TelemetryError::UnsupportedCompressionType(push.compression_type))?;
    let raw = decompress(codec, push.metrics, max_bytes).map_err(|e| match e {
        RecordError::DecompressedTooLarge(n) => TelemetryError::TooLarge(n),
        e => TelemetryError::InvalidRecord(e.to_string()),
    })?;
    otlp::decode(&raw).map_err(|e| TelemetryError::InvalidRecord(e.to_string()))
}

/// The labels the broker puts on every series of a client.
fn base_labels(id: Uuid, info: &ClientInfo) -> Vec<(String, String)> {
    vec![
        ("client_instance_id".into(), id.to_string()),
        ("client_id".into(), info.client_id.clone()),
        ("client_software_name".into(), info.software_name.clone()),
        (
            "client_software_version".into(),
            info.software_version.clone(),
        ),
    ]
}

/// CRC32C of the sorted prefixes joined by `,` and the interval, XORed with the instance id's halves.
pub fn subscription_id(metrics: &[String], interval_ms: i32, id: Uuid) -> i32 {
    let text = format!("{}|{interval_ms}", metrics.join(","));
    let crc = crc32c::crc32c(text.as_bytes());
    let (hi, lo) = id.as_u64_pair();
    let folded = (hi ^ lo) as u32 ^ ((hi ^ lo) >> 32) as u32;
    (crc ^ folded) as i32
}
