//! Quotas per client (Kafka's `ClientQuotaManager`, KIP-13/KIP-55/KIP-124/KIP-219/KIP-599), sans I/O: one
//! [`ClientQuotaManager`] per quota key (`producer_byte_rate` for Produce, `consumer_byte_rate` for Fetch,
//! `request_percentage` for handler time, `controller_mutation_rate` with [`super::mutation`]'s token
//! bucket) records each request's amount against the entity its (user, client id) resolves to and says how
//! long the client is throttled. Time comes in as `now_ms`.
//!
//! Which quota applies — Kafka's precedence, most specific first, over the entities that have a value for
//! this key:
//! 1. `users/<user>/clients/<client-id>`  2. `users/<user>/clients/<default>`  3. `users/<user>`
//! 4. `users/<default>/clients/<client-id>`  5. `users/<default>/clients/<default>`  6. `users/<default>`
//! 7. `clients/<client-id>`  8. `clients/<default>`.
//!
//! Clients share a rate ("sensor") when they resolve to the same (user, client id) tags: a quota on
//! `users/<user>` is shared by every client id of that user, a quota on `clients/<client-id>` by every user
//! of that client id (Kafka's `quotaMetricTags`). No quota with this key anywhere: nothing is recorded.
//! A sensor unused for an hour is dropped (Kafka's inactive-sensor expiry).

use std::collections::HashMap;

use metadata::quota::{ClientQuotaEntity, ClientQuotasImage, EntityName};

use super::rate::{throttle_time_ms, QuotaWindow, SampledRate};

/// A sensor unused for this long is dropped (ms; Kafka's `InactiveSensorExpirationTimeSeconds`, 1 h).
const SENSOR_EXPIRY_MS: u64 = 3_600_000;

/// The (user, client id) a sensor is kept for; `""` where the quota does not distinguish it.
type Tags = (String, String);

#[derive(Debug)]
struct Sensor<S> {
    stat: S,
    last_used_ms: u64,
}

/// One quota key's sensors and the quotas configured for it. `S` is what a sensor measures: a
/// [`SampledRate`] (byte rates, `request_percentage`) or a [`super::mutation::TokenBucket`]
/// (`controller_mutation_rate`, KIP-599).
#[derive(Debug)]
pub struct ClientQuotaManager<S = SampledRate> {
    key: &'static str,
    window: QuotaWindow,
    /// The entities with a value for `key`, and that value (bytes/s, percent, mutations/s).
    quotas: HashMap<ClientQuotaEntity, f64>,
    sensors: HashMap<Tags, Sensor<S>>,
    last_expiry_ms: u64,
}

fn name(n: &str) -> Option<EntityName> {
    Some(EntityName::Name(n.to_string()))
}

const DEFAULT: Option<EntityName> = Some(EntityName::Default);

impl<S: Default> ClientQuotaManager<S> {
    /// A manager of the quota `key` sampled over `window`, with no quotas.
    pub fn new(key: &'static str, window: QuotaWindow) -> ClientQuotaManager<S> {
        ClientQuotaManager {
            key,
            window,
            quotas: HashMap::new(),
            sensors: HashMap::new(),
            last_expiry_ms: 0,
        }
    }

    /// Takes the quotas for this key from `image` (existing rates are kept; the next record uses the new
    /// bounds, as Kafka updates its sensors' quotas).
    pub fn update(&mut self, image: &ClientQuotasImage) {
        self.quotas = image
            .0
            .iter()
            .filter(|(e, _)| e.ip.is_none())
            .filter_map(|(e, values)| values.get(self.key).map(|v| (e.clone(), v.0)))
            .collect();
        if self.quotas.is_empty() {
            self.sensors.clear();
        }
    }

    fn quota(&self, user: Option<EntityName>, client_id: Option<EntityName>) -> Option<f64> {
        self.quotas
            .get(&ClientQuotaEntity::of(user, client_id))
            .copied()
    }

    fn has(&self, user: Option<EntityName>, client_id: Option<EntityName>) -> bool {
        self.quota(user, client_id).is_some()
    }

    /// The tags `user`/`client_id` share a sensor under (Kafka's `quotaMetricTags`).
    fn tags(&self, user: &str, client_id: &str) -> Tags {
        let both = (user.to_string(), client_id.to_string());
        let user_only = (user.to_string(), String::new());
        if self.has(name(user), name(client_id)) || self.has(name(user), DEFAULT) {
            both
        } else if self.has(name(user), None) {
            user_only
        } else if self.has(DEFAULT, name(client_id)) || self.has(DEFAULT, DEFAULT) {
            both
        } else if self.has(DEFAULT, None) {
            user_only
        } else {
            (String::new(), client_id.to_string())
        }
    }

    /// The bound of the sensor with `tags` (Kafka's `quotaLimit`), `None` without a quota.
    fn bound(&self, (user, client_id): &Tags) -> Option<f64> {
        match (user.is_empty(), client_id.is_empty()) {
            (false, false) => self
                .quota(name(user), name(client_id))
                .or_else(|| self.quota(name(user), DEFAULT))
                .or_else(|| self.quota(DEFAULT, name(client_id)))
                .or_else(|| self.quota(DEFAULT, DEFAULT)),
            (false, true) => self
                .quota(name(user), None)
                .or_else(|| self.quota(DEFAULT, None)),
            (true, false) => self
                .quota(None, name(client_id))
                .or_else(|| self.quota(None, DEFAULT)),
            (true, true) => None,
        }
    }

    /// The quota (bytes/s) that applies to `user` with `client_id`, if any.
    pub fn quota_for(&self, user: &str, client_id: &str) -> Option<f64> {
        self.bound(&self.tags(user, client_id))
    }

    /// Whether any entity has a quota with this key (without one, nothing is recorded).
    pub fn is_enabled(&self) -> bool {
        !self.quotas.is_empty()
    }

    /// The windows the sensors are sampled over.
    pub fn window(&self) -> QuotaWindow {
        self.window
    }

    /// The sensor `user`/`client_id` records into at `now_ms` (created if new), with the bound that applies
    /// to it (`None` without a quota; Kafka's `getOrCreateQuotaSensors`). Idle sensors are expired first.
    pub fn sensor(&mut self, user: &str, client_id: &str, now_ms: u64) -> (Option<f64>, &mut S) {
        self.expire(now_ms);
        let tags = self.tags(user, client_id);
        let bound = self.bound(&tags);
        let sensor = self.sensors.entry(tags).or_insert_with(|| Sensor {
            stat: S::default(),
            last_used_ms: now_ms,
        });
        sensor.last_used_ms = now_ms;
        (bound, &mut sensor.stat)
    }

    fn expire(&mut self, now_ms: u64) {
        if now_ms.saturating_sub(self.last_expiry_ms) < 60_000 {
            return;
        }
        self.last_expiry_ms = now_ms;
        self.sensors
            .retain(|_, s| now_ms.saturating_sub(s.last_used_ms) < SENSOR_EXPIRY_MS);
    }

    /// How many sensors are kept (for tests).
    #[cfg(test)]
    fn sensors(&self) -> usize {
        self.sensors.len()
    }
}

impl ClientQuotaManager<SampledRate> {
    /// Records `value` (bytes; percent for `request_percentage`) for `user`/`client_id` at `now_ms` and
    /// returns the throttle time (ms, 0 within the quota; Kafka's `recordAndGetThrottleTimeMs`).
    pub fn record(&mut self, user: &str, client_id: &str, value: f64, now_ms: u64) -> u64 {
        if self.quotas.is_empty() {
            return 0;
        }
        let window = self.window;
        let (bound, rate) = self.sensor(user, client_id, now_ms);
        rate.record(window, value, now_ms);
        let Some(bound) = bound else { return 0 };
        let measured = rate.measure(window, now_ms);
        throttle_time_ms(measured, bound, rate.window_ms(window, now_ms))
    }

    /// Takes back `value` recorded at `now_ms` (a throttled Fetch whose data is not sent; Kafka's
    /// `unrecordQuotaSensor`).
    pub fn unrecord(&mut self, user: &str, client_id: &str, value: f64, now_ms: u64) {
        let tags = self.tags(user, client_id);
        if let Some(s) = self.sensors.get_mut(&tags) {
            s.stat.record(self.window, -value, now_ms);
        }
    }

    /// The most bytes one response may carry for `user`/`client_id` (Kafka's `getMaxValueInQuotaWindow`:
    /// the quota × the `samples - 1` windows a first burst is measured against); `None` without a quota.
    pub fn max_value_in_window(&self, user: &str, client_id: &str) -> Option<f64> {
        let bound = self.quota_for(user, client_id)?;
        let seconds = (self.window.samples - 1) as f64 * self.window.window_ms as f64 / 1000.0;
        Some(bound * seconds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use metadata::quota::{QuotaAlteration, PRODUCER_BYTE_RATE};

    fn image(entries: &[(Option<EntityName>, Option<EntityName>, f64)]) -> ClientQuotasImage {
        let mut image = ClientQuotasImage::default();
        for (u, c, v) in entries {
            let e = ClientQuotaEntity::of(u.clone(), c.clone());
            let alt = QuotaAlteration::new(e, vec![(PRODUCER_BYTE_RATE.into(), Some(*v))]).unwrap();
            for ch in image.changes(&alt) {
                image.apply(&ch);
            }
        }
        image
    }

    fn manager(entries: &[(Option<EntityName>, Option<EntityName>, f64)]) -> ClientQuotaManager {
        let mut m = ClientQuotaManager::new(PRODUCER_BYTE_RATE, QuotaWindow::default());
        m.update(&image(entries));
        m
    }

    /// Each of the eight levels wins over every less specific one.
    #[test]
    fn precedence_follows_kafka() {
        let levels = [
            (name("u"), name("c"), 1.0),
            (name("u"), DEFAULT, 2.0),
            (name("u"), None, 3.0),
            (DEFAULT, name("c"), 4.0),
            (DEFAULT, DEFAULT, 5.0),
            (DEFAULT, None, 6.0),
            (None, name("c"), 7.0),
            (None, DEFAULT, 8.0),
        ];
        for i in 0..levels.len() {
            let m = manager(&levels[i..]);
            assert_eq!(m.quota_for("u", "c"), Some(levels[i].2), "level {}", i + 1);
        }
        let m = manager(&[]);
        assert_eq!(m.quota_for("u", "c"), None);
        // Another user and client only match the defaults.
        let m = manager(&levels);
        assert_eq!(m.quota_for("v", "d"), Some(5.0));
        let m = manager(&[(None, name("c"), 7.0)]);
        assert_eq!(m.quota_for("v", "d"), None);
    }

    #[test]
    fn a_client_over_its_quota_is_throttled_and_others_are_not() {
        let mut m = manager(&[(None, name("slow"), 1000.0)]);
        // 10 s × 1000 B/s may go at once (the first burst is measured over ten windows).
        assert_eq!(m.record("ANONYMOUS", "slow", 10_000.0, 0), 0);
        // 2000 more: 12 000 B over 10 s → 20 % over → 2 s.
        assert_eq!(m.record("ANONYMOUS", "slow", 2_000.0, 0), 2_000);
        // Another client id is not limited, and every user of "slow" shares its rate.
        assert_eq!(m.record("ANONYMOUS", "fast", 1e9, 0), 0);
        assert!(m.record("alice", "slow", 1.0, 0) > 0);
        // Taking the last record back brings it under the quota.
        m.unrecord("ANONYMOUS", "slow", 2_001.0, 0);
        assert_eq!(m.record("ANONYMOUS", "slow", 0.0, 0), 0);
        assert_eq!(m.max_value_in_window("x", "slow"), Some(10_000.0));
        assert_eq!(m.max_value_in_window("x", "fast"), None);
    }

    /// Sent at the throttled pace, a client's long-run rate is its quota.
    #[test]
    fn a_throttled_client_converges_to_its_quota() {
        let mut m = manager(&[(None, name("c"), 1000.0)]);
        let (mut now, mut sent) = (0u64, 0.0);
        while now < 120_000 {
            sent += 500.0;
            now += m.record("u", "c", 500.0, now) + 1;
        }
        let rate = sent / (now as f64 / 1000.0);
        assert!((900.0..=1100.0).contains(&rate), "{rate} B/s");
    }

    #[test]
    fn quotas_follow_the_image_and_idle_sensors_expire() {
        let mut m = manager(&[(name("u"), None, 100.0)]);
        m.record("u", "a", 10.0, 0);
        m.record("u", "b", 10.0, 0);
        assert_eq!(
            m.sensors(),
            1,
            "a user quota is shared by the user's client ids"
        );
        m.record("v", "b", 10.0, 0);
        assert_eq!(m.sensors(), 2);
        m.record("u", "a", 10.0, SENSOR_EXPIRY_MS + 1000);
        assert_eq!(m.sensors(), 1);
        m.update(&image(&[]));
        assert_eq!(m.record("u", "a", 1e12, 0), 0);
        assert_eq!(m.sensors(), 0);
    }
}
