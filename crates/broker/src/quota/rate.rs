//! A rate over a sliding set of time windows, as Kafka's `SampledStat` + `Rate` measure the quota sensors
//! (KIP-13, KIP-219): `samples` windows of `window_ms` each; a value is added to the current window; the
//! rate is the sum of the live windows over the time they span, counted as at least `samples - 1` full
//! windows (so a first burst is measured against ten seconds by default, not against the milliseconds it
//! took). A window older than `samples * window_ms` is dropped. Time is a parameter (ms), never read here.

/// The sampling of a rate: `quota.window.num` windows of `quota.window.size.seconds` (Kafka's defaults: 11
/// windows of 1 s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotaWindow {
    /// Number of windows kept (≥ 1).
    pub samples: u32,
    /// Length of one window (ms, ≥ 1).
    pub window_ms: u64,
}

impl Default for QuotaWindow {
    fn default() -> Self {
        QuotaWindow {
            samples: 11,
            window_ms: 1000,
        }
    }
}

impl QuotaWindow {
    /// The window of `samples` × `window_seconds` (clamped to at least one window of 1 s).
    pub fn new(samples: i32, window_seconds: i32) -> QuotaWindow {
        QuotaWindow {
            samples: samples.max(1) as u32,
            window_ms: window_seconds.max(1) as u64 * 1000,
        }
    }

    /// The time every live window spans together (ms).
    fn span_ms(&self) -> u64 {
        u64::from(self.samples) * self.window_ms
    }
}

#[derive(Debug, Clone, Copy)]
struct Sample {
    /// When the window began (ms).
    start_ms: u64,
    /// What was recorded in it.
    value: f64,
}

/// A rate per second of recorded values (Kafka's `Rate` over a `SampledStat`).
#[derive(Debug, Clone, Default)]
pub struct SampledRate {
    samples: Vec<Sample>,
    current: usize,
}

impl SampledRate {
    /// Adds `value` at `now_ms` (a negative value takes back an earlier record, Kafka's `unrecord`).
    pub fn record(&mut self, window: QuotaWindow, value: f64, now_ms: u64) {
        if self.samples.is_empty() {
            self.samples.push(Sample {
                start_ms: now_ms,
                value: 0.0,
            });
            self.current = 0;
        }
        let cur = self.samples[self.current];
        let elapsed = now_ms.saturating_sub(cur.start_ms);
        if elapsed >= window.window_ms {
            // Windows stay aligned to the first one's start.
            let start_ms = cur.start_ms + elapsed / window.window_ms * window.window_ms;
            let fresh = Sample {
                start_ms,
                value: 0.0,
            };
            if self.samples.len() < window.samples as usize {
                self.samples.push(fresh);
                self.current = self.samples.len() - 1;
            } else {
                self.current = (self.current + 1) % self.samples.len();
                self.samples[self.current] = fresh;
            }
        }
        self.samples[self.current].value += value;
    }

    /// The rate at `now_ms`, per second.
    pub fn measure(&mut self, window: QuotaWindow, now_ms: u64) -> f64 {
        let span = self.window_ms(window, now_ms);
        let total: f64 = self.samples.iter().map(|s| s.value).sum();
        total / (span as f64 / 1000.0)
    }

    /// The time the rate is measured over at `now_ms` (Kafka's `Rate.windowSize`): from the oldest live
    /// window's start, at least `samples - 1` full windows, at least 1 ms.
    pub fn window_ms(&mut self, window: QuotaWindow, now_ms: u64) -> u64 {
        self.purge(window, now_ms);
        let oldest = self.samples.iter().map(|s| s.start_ms).min();
        let mut elapsed = now_ms.saturating_sub(oldest.unwrap_or(now_ms));
        let full = elapsed / window.window_ms;
        let min_full = u64::from(window.samples - 1);
        if full < min_full {
            elapsed += (min_full - full) * window.window_ms;
        }
        elapsed.max(1)
    }

    /// Empties the windows that have left the span (Kafka's `purgeObsoleteSamples`).
    fn purge(&mut self, window: QuotaWindow, now_ms: u64) {
        for s in &mut self.samples {
            if now_ms.saturating_sub(s.start_ms) >= window.span_ms() {
                *s = Sample {
                    start_ms: now_ms,
                    value: 0.0,
                };
            }
        }
    }
}

/// How long a client over its quota waits (Kafka's `QuotaUtils.throttleTime`, KIP-219): the time at which the
/// measured rate falls back to `bound`, `(rate - bound) / bound × window`, in ms, rounded; 0 when within the
/// bound, at most `i32::MAX` (the wire field) — also for a bound of 0.
pub fn throttle_time_ms(rate: f64, bound: f64, window_ms: u64) -> u64 {
    if rate <= bound {
        return 0;
    }
    let ms = (rate - bound) / bound * window_ms as f64;
    if ms.is_finite() {
        ms.round().clamp(0.0, f64::from(i32::MAX)) as u64
    } else {
        i32::MAX as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: QuotaWindow = QuotaWindow {
        samples: 11,
        window_ms: 1000,
    };

    #[test]
    fn a_first_burst_is_measured_against_ten_windows() {
        let mut r = SampledRate::default();
        r.record(W, 10_000.0, 5_000);
        assert_eq!(r.window_ms(W, 5_000), 10_000);
        assert_eq!(r.measure(W, 5_000), 1_000.0);
        // Half a window later: 10.5 s.
        assert_eq!(r.window_ms(W, 5_500), 10_500);
    }

    #[test]
    fn old_windows_leave_the_span() {
        let mut r = SampledRate::default();
        r.record(W, 500.0, 0);
        for s in 1..=10u64 {
            r.record(W, 100.0, s * 1000);
        }
        // 11 windows: 500 + 10 × 100 over 10.5 s.
        assert!((r.measure(W, 10_500) - 1500.0 / 10.5).abs() < 1e-9);
        // At 11 s the first window is gone; a record there reuses its slot.
        r.record(W, 100.0, 11_000);
        let rate = r.measure(W, 11_000);
        assert!((rate - 1100.0 / 10.0).abs() < 1e-9, "{rate}");
        // Negative values take a record back.
        r.record(W, -100.0, 11_000);
        assert!((r.measure(W, 11_000) - 100.0).abs() < 1e-9);
        // Long after, everything is purged.
        assert_eq!(r.measure(W, 1_000_000), 0.0);
    }

    #[test]
    fn throttle_time_brings_the_rate_back_to_the_bound() {
        // 12 KB over a 10 s window against 1 KB/s: 1.2 KB/s, 20 % over → 2 s.
        assert_eq!(throttle_time_ms(1200.0, 1000.0, 10_000), 2000);
        assert_eq!(throttle_time_ms(900.0, 1000.0, 10_000), 0);
        assert_eq!(throttle_time_ms(1.0, 0.0, 10_000), i32::MAX as u64);
        // Measured at the window the rate used: 12 KB at 0 against 1 KB/s waits 2 s.
        let mut r = SampledRate::default();
        r.record(W, 12_000.0, 0);
        let t = throttle_time_ms(r.measure(W, 0), 1000.0, r.window_ms(W, 0));
        assert_eq!(t, 2000);
    }
}
