//! The controller mutation quota (KIP-599, Kafka's `ControllerMutationQuotaManager`), sans I/O.
//!
//! CreateTopics, CreatePartitions and DeleteTopics count the partitions they create or delete against the
//! client's `controller_mutation_rate` (partitions/s), resolved with the same precedence and sensor sharing as
//! every client quota ([`ClientQuotaManager`]). Each sensor is a [`TokenBucket`]: it holds at most a burst of
//! `rate × (samples - 1) × window` tokens, refills at `rate` tokens/s, and a mutation takes as many tokens as
//! partitions, going negative if it must.
//!
//! - Strict (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+): a mutation is refused with
//!   THROTTLING_QUOTA_EXCEEDED while the bucket is negative, and accepted whatever its size otherwise (Kafka's
//!   `StrictControllerMutationQuota`: check, then record).
//! - Permissive (older versions, which have no such error): every mutation is accepted and recorded; the
//!   client is throttled when it left the bucket negative (Kafka's `PermissiveControllerMutationQuota`).
//!
//! Either way the throttle time is the time the bucket takes to refill to zero: `-tokens / rate` s.

use super::client::ClientQuotaManager;
use super::rate::QuotaWindow;

/// Kafka's `TokenBucket` stat (KIP-599): the tokens left (negative when overdrawn) and when they were last
/// counted. A new bucket is full.
#[derive(Debug, Default, Clone)]
pub struct TokenBucket {
    tokens: f64,
    /// When `tokens` was last refilled (ms); `None` for a new, full bucket.
    last_update_ms: Option<u64>,
}

impl TokenBucket {
    /// The most tokens the bucket holds: `rate` × the `samples - 1` windows.
    fn burst(window: QuotaWindow, rate: f64) -> f64 {
        f64::from(window.samples - 1) * window.window_ms as f64 / 1000.0 * rate
    }

    fn refill(&mut self, window: QuotaWindow, rate: f64, now_ms: u64) {
        let burst = Self::burst(window, rate);
        self.tokens = match self.last_update_ms {
            None => burst,
            Some(last) => {
                let elapsed_s = now_ms.saturating_sub(last) as f64 / 1000.0;
                burst.min(self.tokens + rate * elapsed_s)
            }
        };
        self.last_update_ms = Some(now_ms.max(self.last_update_ms.unwrap_or(0)));
    }

    /// The tokens left at `now_ms` under a quota of `rate` tokens/s.
    pub fn tokens(&mut self, window: QuotaWindow, rate: f64, now_ms: u64) -> f64 {
        self.refill(window, rate, now_ms);
        self.tokens
    }

    /// Takes `value` tokens at `now_ms` (the bucket may go negative).
    pub fn record(&mut self, window: QuotaWindow, rate: f64, value: f64, now_ms: u64) {
        self.refill(window, rate, now_ms);
        self.tokens = Self::burst(window, rate).min(self.tokens - value);
    }
}

/// How long until a bucket with `tokens` refills to zero at `rate` tokens/s (ms; Kafka's
/// `ControllerMutationQuotaManager.throttleTimeMs`, `-tokens / rate × 1000`, rounded), at most `i32::MAX`.
pub fn refill_time_ms(tokens: f64, rate: f64) -> u64 {
    if tokens >= 0.0 {
        return 0;
    }
    let ms = (-tokens / rate * 1000.0).round();
    if ms.is_finite() {
        ms.clamp(0.0, f64::from(i32::MAX)) as u64
    } else {
        i32::MAX as u64
    }
}

impl ClientQuotaManager<TokenBucket> {
    /// A strict mutation of `partitions` by `user`/`client_id` at `now_ms`: refused with the throttle time
    /// (ms) while the client's bucket is negative, else taken (Kafka's `StrictControllerMutationQuota`).
    pub fn record_strict(
        &mut self,
        user: &str,
        client_id: &str,
        partitions: f64,
        now_ms: u64,
    ) -> Result<(), u64> {
        if !self.is_enabled() {
            return Ok(());
        }
        let window = self.window();
        let (bound, bucket) = self.sensor(user, client_id, now_ms);
        let Some(rate) = bound else { return Ok(()) };
        let tokens = bucket.tokens(window, rate, now_ms);
        if tokens < 0.0 {
            return Err(refill_time_ms(tokens, rate));
        }
        bucket.record(window, rate, partitions, now_ms);
        Ok(())
    }

    /// A permissive mutation (a request version without THROTTLING_QUOTA_EXCEEDED): always taken; the
    /// throttle time (ms) when it left the bucket negative, else 0 (Kafka's
    /// `PermissiveControllerMutationQuota`).
    pub fn record_permissive(
        &mut self,
        user: &str,
        client_id: &str,
        partitions: f64,
        now_ms: u64,
    ) -> u64 {
        if !self.is_enabled() {
            return 0;
        }
        let window = self.window();
        let (bound, bucket) = self.sensor(user, client_id, now_ms);
        let Some(rate) = bound else { return 0 };
        bucket.record(window, rate, partitions, now_ms);
        refill_time_ms(bucket.tokens(window, rate, now_ms), rate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use metadata::quota::{
        ClientQuotaEntity, ClientQuotasImage, EntityName, QuotaAlteration, CONTROLLER_MUTATION_RATE,
    };

    fn manager(client_id: &str, rate: f64) -> ClientQuotaManager<TokenBucket> {
        let mut image = ClientQuotasImage::default();
        let entity = ClientQuotaEntity::of(None, Some(EntityName::Name(client_id.into())));
        let alt = QuotaAlteration::new(entity, vec![(CONTROLLER_MUTATION_RATE.into(), Some(rate))])
            .unwrap();
        for change in image.changes(&alt) {
            image.apply(&change);
        }
        let mut m = ClientQuotaManager::new(CONTROLLER_MUTATION_RATE, QuotaWindow::default());
        m.update(&image);
        m
    }

    #[test]
    fn a_bucket_holds_a_burst_and_refills_at_the_rate() {
        let w = QuotaWindow::default();
        let mut b = TokenBucket::default();
        assert_eq!(b.tokens(w, 2.0, 1_000), 20.0, "full: 2/s × 10 windows");
        b.record(w, 2.0, 30.0, 1_000);
        assert_eq!(b.tokens(w, 2.0, 1_000), -10.0);
        assert_eq!(refill_time_ms(-10.0, 2.0), 5_000);
        assert_eq!(b.tokens(w, 2.0, 6_000), 0.0, "5 s refill 10 tokens");
        assert_eq!(b.tokens(w, 2.0, 100_000), 20.0, "never above the burst");
        assert_eq!(refill_time_ms(3.0, 2.0), 0);
        assert_eq!(refill_time_ms(-1.0, 0.0), i32::MAX as u64);
    }

    /// Kafka's strict quota: any size is accepted while the bucket is not negative; then refused until it
    /// refilled, with the time that takes.
    #[test]
    fn strict_refuses_only_once_the_bucket_is_overdrawn() {
        let mut m = manager("admin", 1.0);
        assert_eq!(m.record_strict("u", "admin", 30.0, 0), Ok(()));
        // 10 - 30 = -20 tokens: 20 s at 1/s.
        assert_eq!(m.record_strict("u", "admin", 1.0, 0), Err(20_000));
        assert_eq!(m.record_strict("u", "admin", 1.0, 15_000), Err(5_000));
        assert_eq!(m.record_strict("u", "admin", 1.0, 20_000), Ok(()));
        // Another client id has no quota; neither does a request before any quota is set.
        assert_eq!(m.record_strict("u", "other", 1e9, 20_000), Ok(()));
        assert_eq!(m.record_strict("u", "other", 1e9, 20_000), Ok(()));
    }

    #[test]
    fn permissive_accepts_and_throttles() {
        let mut m = manager("admin", 2.0);
        assert_eq!(m.record_permissive("u", "admin", 20.0, 0), 0, "the burst");
        assert_eq!(m.record_permissive("u", "admin", 4.0, 0), 2_000);
        assert_eq!(m.record_permissive("u", "admin", 4.0, 0), 4_000);
        assert_eq!(m.record_permissive("u", "other", 1e9, 0), 0);
        let mut none = ClientQuotaManager::<TokenBucket>::new(
            CONTROLLER_MUTATION_RATE,
            QuotaWindow::default(),
        );
        assert_eq!(none.record_permissive("u", "admin", 1e9, 0), 0);
        assert_eq!(none.record_strict("u", "admin", 1e9, 0), Ok(()));
    }
}
