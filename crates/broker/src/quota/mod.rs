//! Client quotas and connection limits (Kafka's `ClientQuotaManager`s and `ConnectionQuotas`; KIP-13,
//! KIP-55, KIP-219, KIP-546, KIP-402).
//!
//! - [`rate`]: the sampled rate and the throttle-time formula every quota shares (sans I/O).
//! - [`client`]: [`ClientQuotaManager`], a quota key's sensors per (user, client id) with Kafka's precedence
//!   (sans I/O).
//! - [`mutation`]: the token bucket of `controller_mutation_rate` (KIP-599), strict and permissive (sans I/O).
//! - [`connection`]: connection counts and creation rates, and the acceptors' [`ConnectionLimiter`].
//! - [`replication`]: replication throttling (KIP-73), Kafka's `ReplicationQuotaManager`, leader and
//!   follower side.
//! - here: [`ClientQuotas`], the broker's quota state (the quota image and the Produce, Fetch, request-time
//!   and controller-mutation managers, with the clock), [`MutationQuota`], one admin request's view of the
//!   mutation quota, and [`QuotaAdmin`], where AlterClientQuotas goes — [`LocalQuotaAdmin`] writes the
//!   topic registry standalone, `cluster::QuorumQuotaAdmin` sends `ClientQuotaRecord`s to the controller and
//!   the [`QuotaPublisher`] lays each image's quotas in, as ACLs do.
//!
//! Enforcement (KIP-219): Produce records its request size, Fetch its response size; a client over its quota
//! gets its answer with `throttle_time_ms` set (a throttled Fetch without records, which are taken back
//! out of the rate), and its connection is not read for that time after the answer is sent.
//! `request_percentage` (KIP-124): every request but a follower's Fetch records the time its handler spent
//! running (polled, not waiting) as a percentage of one thread; over the quota it is throttled the same way,
//! for at most one quota window (Kafka's `ClientRequestQuotaManager`). `controller_mutation_rate` (KIP-599):
//! CreateTopics, CreatePartitions and DeleteTopics take one token per partition; see [`mutation`]. Kafka
//! enforces it on the active controller, cluster-wide; Runnel on the broker that got the request.

pub mod client;
pub mod connection;
pub mod mutation;
pub mod rate;
pub mod replication;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use futures::future::BoxFuture;
use metadata::quota::{
    ClientQuotasImage, QuotaAlteration, CONSUMER_BYTE_RATE, CONTROLLER_MUTATION_RATE,
    PRODUCER_BYTE_RATE, REQUEST_PERCENTAGE,
};
use metadata::MetadataImage;
use parking_lot::{Mutex, RwLock};
use types::Clock;

pub use client::ClientQuotaManager;
pub use connection::{ConnectionLimiter, ConnectionQuotaConfig, ConnectionSlot};
pub use mutation::TokenBucket;
pub use rate::QuotaWindow;

use crate::config::{keys, BrokerConfig};
use crate::dynamic_config::DynamicBrokerConfig;
use crate::error::{QuotaError, ThrottlingQuotaExceeded};
use crate::metadata::MetadataStore;
use crate::publisher::MetadataPublisher;

/// The broker's client quotas: what is configured, the Produce and Fetch byte rates, the request-time
/// percentages and the controller mutation buckets.
#[derive(Debug)]
pub struct ClientQuotas {
    /// Whether any byte-rate quota is configured: without one, requests skip the managers' locks.
    enabled: AtomicBool,
    /// Whether any `request_percentage` is configured (then handlers are timed).
    request_enabled: AtomicBool,
    /// Whether any `controller_mutation_rate` is configured.
    mutation_enabled: AtomicBool,
    image: RwLock<ClientQuotasImage>,
    produce: Mutex<ClientQuotaManager>,
    fetch: Mutex<ClientQuotaManager>,
    request: Mutex<ClientQuotaManager>,
    mutation: Mutex<ClientQuotaManager<TokenBucket>>,
    clock: Arc<dyn Clock>,
}

/// Kafka's `NanosToPercentagePerSecond`: one second of handler time per second is 100 %.
const NANOS_TO_PERCENT: f64 = 100.0 / 1e9;

impl ClientQuotas {
    /// No quotas, rates sampled over `window` (the controller mutation buckets too, until
    /// [`ClientQuotas::with_mutation_window`]), time from `clock`.
    pub fn new(window: QuotaWindow, clock: Arc<dyn Clock>) -> ClientQuotas {
        ClientQuotas {
            enabled: AtomicBool::new(false),
            request_enabled: AtomicBool::new(false),
            mutation_enabled: AtomicBool::new(false),
            image: RwLock::new(ClientQuotasImage::default()),
            produce: Mutex::new(ClientQuotaManager::new(PRODUCER_BYTE_RATE, window)),
            fetch: Mutex::new(ClientQuotaManager::new(CONSUMER_BYTE_RATE, window)),
            request: Mutex::new(ClientQuotaManager::new(REQUEST_PERCENTAGE, window)),
            mutation: Mutex::new(ClientQuotaManager::new(CONTROLLER_MUTATION_RATE, window)),
            clock,
        }
    }

    /// The controller mutation buckets' burst sampled over `window` (Kafka's `controller.quota.window.num`
    /// × `controller.quota.window.size.seconds`).
    pub fn with_mutation_window(self, window: QuotaWindow) -> ClientQuotas {
        *self.mutation.lock() = ClientQuotaManager::new(CONTROLLER_MUTATION_RATE, window);
        self
    }

    /// Takes the configured quotas from `image`.
    pub fn update(&self, image: &ClientQuotasImage) {
        self.produce.lock().update(image);
        self.fetch.lock().update(image);
        self.request.lock().update(image);
        self.mutation.lock().update(image);
        let has = |key: &str| image.0.values().any(|values| values.contains_key(key));
        let enabled = has(PRODUCER_BYTE_RATE) || has(CONSUMER_BYTE_RATE);
        self.enabled.store(enabled, Ordering::Release);
        self.request_enabled
            .store(has(REQUEST_PERCENTAGE), Ordering::Release);
        self.mutation_enabled
            .store(has(CONTROLLER_MUTATION_RATE), Ordering::Release);
        *self.image.write() = image.clone();
    }

    /// The configured quotas (DescribeClientQuotas).
    pub fn image(&self) -> ClientQuotasImage {
        self.image.read().clone()
    }

    fn now_ms(&self) -> u64 {
        self.clock.now_ms().max(0) as u64
    }

    /// Records a Produce request of `bytes` by `user` with `client_id`; the throttle time (ms, 0 within the
    /// quota).
    pub fn record_produce(&self, user: &str, client_id: &str, bytes: usize) -> u64 {
        if !self.enabled.load(Ordering::Acquire) {
            return 0;
        }
        let now = self.now_ms();
        self.produce
            .lock()
            .record(user, client_id, bytes as f64, now)
    }

    /// Records a Fetch response of `bytes`; the throttle time (ms). When it is not 0 the response is sent
    /// without its records and the bytes are taken back out of the rate (Kafka's `unrecordQuotaSensor`).
    pub fn record_fetch(&self, user: &str, client_id: &str, bytes: usize) -> u64 {
        if !self.enabled.load(Ordering::Acquire) {
            return 0;
        }
        let now = self.now_ms();
        let mut fetch = self.fetch.lock();
        let throttle = fetch.record(user, client_id, bytes as f64, now);
        if throttle > 0 {
            fetch.unrecord(user, client_id, bytes as f64, now);
        }
        throttle
    }

    /// Takes a Fetch response's `bytes` back out of the consumer rate (a response throttled by another quota
    /// is sent without its records; Kafka's `unrecordQuotaSensor`).
    pub fn unrecord_fetch(&self, user: &str, client_id: &str, bytes: usize) {
        if !self.enabled.load(Ordering::Acquire) {
            return;
        }
        let now = self.now_ms();
        self.fetch
            .lock()
            .unrecord(user, client_id, bytes as f64, now);
    }

    /// Whether any `request_percentage` is configured: only then are handlers timed.
    pub fn request_quotas_enabled(&self) -> bool {
        self.request_enabled.load(Ordering::Acquire)
    }

    /// Records `nanos` of handler time for `user` with `client_id` (KIP-124: as a percentage of one thread);
    /// the throttle time (ms, 0 within the quota), at most one quota window (Kafka's
    /// `ClientRequestQuotaManager`, whose throttle is bounded by `quota.window.size.seconds`).
    pub fn record_request_time(&self, user: &str, client_id: &str, nanos: u64) -> u64 {
        if !self.request_quotas_enabled() {
            return 0;
        }
        let now = self.now_ms();
        let mut request = self.request.lock();
        let max = request.window().window_ms;
        let throttle = request.record(user, client_id, nanos as f64 * NANOS_TO_PERCENT, now);
        throttle.min(max)
    }

    /// The controller mutation quota of one CreateTopics, CreatePartitions or DeleteTopics by `user` with
    /// `client_id`: `strict` from the version with THROTTLING_QUOTA_EXCEEDED (Kafka's `newQuotaFor`).
    pub fn mutation_quota(&self, user: &str, client_id: &str, strict: bool) -> MutationQuota<'_> {
        let bounded = self.mutation_enabled.load(Ordering::Acquire)
            && self.mutation.lock().quota_for(user, client_id).is_some();
        MutationQuota {
            quotas: bounded.then_some(self),
            user: user.to_string(),
            client_id: client_id.to_string(),
            strict,
            last_throttle_ms: 0,
            last_recorded_ms: 0,
        }
    }

    /// The most bytes one Fetch response may carry for the client (its quota's burst, Kafka's
    /// `getMaxValueInQuotaWindow`); `None` without a consumer quota.
    pub fn fetch_max_bytes(&self, user: &str, client_id: &str) -> Option<i32> {
        if !self.enabled.load(Ordering::Acquire) {
            return None;
        }
        let max = self.fetch.lock().max_value_in_window(user, client_id)?;
        Some(max.clamp(1.0, f64::from(i32::MAX)) as i32)
    }
}

/// One admin request's controller mutation quota (Kafka's `ControllerMutationQuota`): each topic's
/// partitions are recorded as the request goes; the response carries [`MutationQuota::throttle_time_ms`].
#[derive(Debug)]
pub struct MutationQuota<'a> {
    /// `None`: no `controller_mutation_rate` applies to the client (Kafka's unbounded quota).
    quotas: Option<&'a ClientQuotas>,
    user: String,
    client_id: String,
    strict: bool,
    last_throttle_ms: u64,
    last_recorded_ms: u64,
}

impl MutationQuota<'_> {
    /// Whether a quota applies: without one, [`MutationQuota::record`] always succeeds and no mutation
    /// needs counting.
    pub fn is_bounded(&self) -> bool {
        self.quotas.is_some()
    }

    /// Counts a mutation of `partitions`. Strict: refused (and not counted) while the client's bucket is
    /// overdrawn, with the time until it is not. Permissive: always counted, the throttle time remembered.
    pub fn record(&mut self, partitions: u32) -> Result<(), ThrottlingQuotaExceeded> {
        let Some(quotas) = self.quotas else {
            return Ok(());
        };
        let now = quotas.now_ms();
        let mut mutation = quotas.mutation.lock();
        let (user, client_id, value) = (&self.user, &self.client_id, f64::from(partitions));
        let throttle = if self.strict {
            mutation.record_strict(user, client_id, value, now).err()
        } else {
            Some(mutation.record_permissive(user, client_id, value, now)).filter(|t| *t > 0)
        };
        let Some(throttle_time_ms) = throttle else {
            return Ok(());
        };
        (self.last_throttle_ms, self.last_recorded_ms) = (throttle_time_ms, now);
        match self.strict {
            true => Err(ThrottlingQuotaExceeded { throttle_time_ms }),
            false => Ok(()),
        }
    }

    /// The throttle time to answer with (ms): the last one recorded, less the time since (Kafka's
    /// `AbstractControllerMutationQuota.throttleTime`; 0 when never over).
    pub fn throttle_time_ms(&self) -> u64 {
        let Some(quotas) = self.quotas else { return 0 };
        let elapsed = quotas.now_ms().saturating_sub(self.last_recorded_ms);
        self.last_throttle_ms.saturating_sub(elapsed)
    }
}

/// Where AlterClientQuotas changes are made: [`LocalQuotaAdmin`] standalone, `cluster::QuorumQuotaAdmin` in
/// a cluster. Both answer once this broker's [`ClientQuotas`] shows the change.
pub trait QuotaAdmin: Send + Sync + std::fmt::Debug {
    /// Applies the validated `entries` together (none with `validate_only`). Errors: KAFKA_STORAGE_ERROR,
    /// controller errors, REQUEST_TIMED_OUT.
    fn alter(
        &self,
        entries: Vec<QuotaAlteration>,
        validate_only: bool,
    ) -> BoxFuture<'_, Result<(), QuotaError>>;
}

/// Standalone quota changes: persisted in the topic registry, then applied to the [`ClientQuotas`].
#[derive(Debug)]
pub struct LocalQuotaAdmin {
    store: Arc<MetadataStore>,
    quotas: Arc<ClientQuotas>,
}

impl LocalQuotaAdmin {
    /// The admin over `store`'s quotas; fills `quotas` from them.
    pub fn new(store: Arc<MetadataStore>, quotas: Arc<ClientQuotas>) -> LocalQuotaAdmin {
        quotas.update(&store.client_quotas());
        LocalQuotaAdmin { store, quotas }
    }
}

impl QuotaAdmin for LocalQuotaAdmin {
    fn alter(
        &self,
        entries: Vec<QuotaAlteration>,
        validate_only: bool,
    ) -> BoxFuture<'_, Result<(), QuotaError>> {
        Box::pin(async move {
            if validate_only {
                return Ok(());
            }
            let (store, quotas) = (self.store.clone(), self.quotas.clone());
            tokio::task::spawn_blocking(move || {
                store
                    .alter_client_quotas(&entries)
                    .map_err(|e| QuotaError::Storage(e.to_string()))?;
                quotas.update(&store.client_quotas());
                Ok(())
            })
            .await
            .map_err(|e| QuotaError::Internal(e.to_string()))?
        })
    }
}

/// Cluster mode: lays each image's client quotas into the [`ClientQuotas`] (before the image's offset is
/// signalled, so an AlterClientQuotas answered after `wait_for_offset` is enforced).
#[derive(Debug)]
pub struct QuotaPublisher(pub Arc<ClientQuotas>);

impl MetadataPublisher for QuotaPublisher {
    fn on_image(&self, previous: &MetadataImage, current: &MetadataImage) {
        if previous.client_quotas != current.client_quotas || previous.offset < 0 {
            self.0.update(&current.client_quotas);
        }
    }
}

/// The broker's quota services, shared by the request handlers and the acceptors.
#[derive(Debug)]
pub struct Quotas {
    /// Client quotas and their rates.
    pub clients: Arc<ClientQuotas>,
    /// Where quota changes go.
    pub admin: Arc<dyn QuotaAdmin>,
    /// Connection limits.
    pub connections: Arc<ConnectionLimiter>,
    /// The leader side's replication throttle (KIP-73), applied to follower fetches.
    pub leader_replication: Arc<replication::ReplicationQuotaManager>,
}

impl Quotas {
    /// The broker's quotas from `config` (windows, connection limits; invalid limits were refused at
    /// startup), time from the system clock; `admin` builds where quota changes go from the client quotas.
    pub fn new(
        config: &BrokerConfig,
        metadata: &Arc<MetadataStore>,
        dynamic: &Arc<DynamicBrokerConfig>,
        admin: impl FnOnce(&Arc<ClientQuotas>) -> Arc<dyn QuotaAdmin>,
    ) -> Arc<Quotas> {
        let clock: Arc<dyn Clock> = Arc::new(types::SystemClock);
        let window = QuotaWindow::new(
            config.get(keys::QUOTA_WINDOW_NUM),
            config.get(keys::QUOTA_WINDOW_SIZE_SECONDS),
        );
        let mutation_window = QuotaWindow::new(
            config.get(keys::CONTROLLER_QUOTA_WINDOW_NUM),
            config.get(keys::CONTROLLER_QUOTA_WINDOW_SIZE_SECONDS),
        );
        let clients = Arc::new(
            ClientQuotas::new(window, clock.clone()).with_mutation_window(mutation_window),
        );
        let admin = admin(&clients);
        let limits = ConnectionQuotaConfig::from_config(config)
            .unwrap_or_else(|_| ConnectionQuotaConfig::unlimited());
        let leader_replication = Arc::new(replication::ReplicationQuotaManager::new(
            replication::ReplicationSide::Leader,
            config.node_id,
            dynamic.clone(),
            metadata.clone(),
            clock.clone(),
        ));
        Arc::new(Quotas {
            clients,
            admin,
            connections: ConnectionLimiter::new(limits, clock),
            leader_replication,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use metadata::quota::{ClientQuotaEntity, EntityName};

    fn image(key: &str, bytes_per_s: f64) -> ClientQuotasImage {
        let mut image = ClientQuotasImage::default();
        let entity = ClientQuotaEntity::of(None, Some(EntityName::Name("c".into())));
        let alt = QuotaAlteration::new(entity, vec![(key.into(), Some(bytes_per_s))]).unwrap();
        for change in image.changes(&alt) {
            image.apply(&change);
        }
        image
    }

    #[test]
    fn a_throttled_fetch_is_taken_back_out_of_the_rate() {
        let clock = Arc::new(types::ManualClock::new(1_000_000));
        let quotas = ClientQuotas::new(QuotaWindow::default(), clock.clone());
        assert_eq!(
            quotas.record_produce("u", "c", 1 << 30),
            0,
            "no quota: nothing recorded"
        );
        quotas.update(&image(CONSUMER_BYTE_RATE, 1000.0));
        assert_eq!(quotas.fetch_max_bytes("u", "c"), Some(10_000));
        assert_eq!(quotas.fetch_max_bytes("u", "other"), None);
        assert_eq!(quotas.record_fetch("u", "c", 9_000), 0);
        // Over the quota: throttled, and not counted (its data is not sent).
        assert!(quotas.record_fetch("u", "c", 9_000) > 0);
        assert_eq!(quotas.record_fetch("u", "c", 1_000), 0);
        assert_eq!(
            quotas.record_produce("u", "c", 1 << 30),
            0,
            "no producer quota"
        );
        clock.advance(1);
        quotas.update(&ClientQuotasImage::default());
        assert_eq!(quotas.record_fetch("u", "c", 1 << 30), 0);
    }

    #[test]
    fn request_time_is_a_percentage_of_a_thread_and_its_throttle_at_most_a_window() {
        let clock = Arc::new(types::ManualClock::new(1_000_000));
        let quotas = ClientQuotas::new(QuotaWindow::default(), clock.clone());
        assert!(!quotas.request_quotas_enabled());
        quotas.update(&image(REQUEST_PERCENTAGE, 10.0));
        assert!(quotas.request_quotas_enabled());
        // 10 % over ten windows: 1 s of handler time goes unthrottled.
        assert_eq!(quotas.record_request_time("u", "c", 1_000_000_000), 0);
        // 0.2 s more: 12 % → (12 - 10) / 10 × 10 s = 2 s, bounded by the 1 s window.
        assert_eq!(quotas.record_request_time("u", "c", 200_000_000), 1_000);
        assert_eq!(quotas.record_request_time("u", "other", u64::MAX / 2), 0);
    }

    #[test]
    fn a_mutation_quota_is_strict_or_permissive_and_its_throttle_counts_down() {
        let clock = Arc::new(types::ManualClock::new(1_000_000));
        let quotas = ClientQuotas::new(QuotaWindow::default(), clock.clone())
            .with_mutation_window(QuotaWindow::new(6, 1));
        quotas.update(&image(CONTROLLER_MUTATION_RATE, 2.0));
        assert!(!quotas.mutation_quota("u", "other", true).is_bounded());
        let mut strict = quotas.mutation_quota("u", "c", true);
        assert!(strict.is_bounded());
        // A burst of 5 windows × 2/s = 10 tokens; 14 leaves the bucket at -4: 2 s.
        assert_eq!(strict.record(14), Ok(()));
        assert_eq!(
            strict.throttle_time_ms(),
            0,
            "the accepted mutation is not throttled"
        );
        let refused = ThrottlingQuotaExceeded {
            throttle_time_ms: 2_000,
        };
        assert_eq!(strict.record(1), Err(refused));
        clock.advance(500);
        assert_eq!(strict.throttle_time_ms(), 1_500);
        let mut permissive = quotas.mutation_quota("u", "c", false);
        assert_eq!(permissive.record(1), Ok(()));
        assert_eq!(permissive.throttle_time_ms(), 2_000, "-3 - 1 tokens at 2/s");
        let mut free = quotas.mutation_quota("u", "other", true);
        assert_eq!(free.record(1_000_000), Ok(()));
        assert_eq!(free.throttle_time_ms(), 0);
    }
}
