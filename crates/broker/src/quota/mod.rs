//! Client quotas and connection limits (Kafka's `ClientQuotaManager`s and `ConnectionQuotas`; KIP-13,
//! KIP-55, KIP-219, KIP-546, KIP-402).
//!
//! - [`rate`]: the sampled rate and the throttle-time formula every quota shares (sans I/O).
//! - [`client`]: [`ClientQuotaManager`], byte rates per (user, client id) with Kafka's precedence (sans I/O).
//! - [`connection`]: connection counts and creation rates, and the acceptors' [`ConnectionLimiter`].
//! - here: [`ClientQuotas`], the broker's quota state (the quota image and the Produce and Fetch managers,
//!   with the clock), and [`QuotaAdmin`], where AlterClientQuotas goes — [`LocalQuotaAdmin`] writes the
//!   topic registry standalone, `cluster::QuorumQuotaAdmin` sends `ClientQuotaRecord`s to the controller and
//!   the [`QuotaPublisher`] lays each image's quotas in, as ACLs do.
//!
//! Enforcement (KIP-219): Produce records its request size, Fetch its response size; a client over its quota
//! gets its answer with `throttle_time_ms` set (a throttled Fetch without records, which are taken back
//! out of the rate), and its connection is not read for that time after the answer is sent.
//! `request_percentage` and `controller_mutation_rate` are stored and described but not enforced.

pub mod client;
pub mod connection;
pub mod rate;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use futures::future::BoxFuture;
use metadata::quota::{ClientQuotasImage, QuotaAlteration, CONSUMER_BYTE_RATE, PRODUCER_BYTE_RATE};
use metadata::MetadataImage;
use parking_lot::{Mutex, RwLock};
use types::Clock;

pub use client::ClientQuotaManager;
pub use connection::{ConnectionLimiter, ConnectionQuotaConfig, ConnectionSlot};
pub use rate::QuotaWindow;

use crate::error::QuotaError;
use crate::metadata::MetadataStore;
use crate::publisher::MetadataPublisher;

/// The broker's client quotas: what is configured, and the Produce and Fetch byte rates.
#[derive(Debug)]
pub struct ClientQuotas {
    /// Whether any byte-rate quota is configured: without one, requests skip the managers' locks.
    enabled: AtomicBool,
    image: RwLock<ClientQuotasImage>,
    produce: Mutex<ClientQuotaManager>,
    fetch: Mutex<ClientQuotaManager>,
    clock: Arc<dyn Clock>,
}

impl ClientQuotas {
    /// No quotas, rates sampled over `window`, time from `clock`.
    pub fn new(window: QuotaWindow, clock: Arc<dyn Clock>) -> ClientQuotas {
        ClientQuotas {
            enabled: AtomicBool::new(false),
            image: RwLock::new(ClientQuotasImage::default()),
            produce: Mutex::new(ClientQuotaManager::new(PRODUCER_BYTE_RATE, window)),
            fetch: Mutex::new(ClientQuotaManager::new(CONSUMER_BYTE_RATE, window)),
            clock,
        }
    }

    /// Takes the configured quotas from `image`.
    pub fn update(&self, image: &ClientQuotasImage) {
        self.produce.lock().update(image);
        self.fetch.lock().update(image);
        let enabled = image.0.values().any(|values| {
            values.contains_key(PRODUCER_BYTE_RATE) || values.contains_key(CONSUMER_BYTE_RATE)
        });
        self.enabled.store(enabled, Ordering::Release);
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
}
