//! Wall-clock time as a value that can be passed in, so code that reads the time can be driven by tests and a
//! simulator.
//!
//! Runnel's timestamps are Kafka's: milliseconds since the Unix epoch as an `i64` (record timestamps,
//! `retention.ms` deadlines, session timeouts). Code that needs "now" takes a [`Clock`] (or a `now_ms`
//! argument computed from one) instead of calling `SystemTime::now()` itself. Production wires in
//! [`SystemClock`]; tests wire in a [`ManualClock`] and move time forward explicitly, so no test has to sleep.
//!
//! This is Kafka's `org.apache.kafka.common.utils.Time` (with `SystemTime` and `MockTime`), reduced to the
//! wall clock ([`Clock::now_ms`]) and a monotonic clock ([`Clock::monotonic_ms`], Kafka's `hiResClockMs`)
//! for the durations a wall-clock step must not stretch or shrink (ISR lag).

use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::OnceLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// A source of wall-clock time.
///
/// Implementations are shared between threads (`Send + Sync`) and must be cheap to call: hot paths (append,
/// fetch, heartbeats) read the clock once per request.
pub trait Clock: Send + Sync + fmt::Debug {
    /// Milliseconds since the Unix epoch (1970-01-01T00:00:00Z), the unit of Kafka's timestamps.
    ///
    /// Not guaranteed to be monotonic: the system clock can be stepped backwards. Callers that compare two
    /// readings must tolerate a negative difference (treat it as zero elapsed time).
    fn now_ms(&self) -> i64;

    /// Milliseconds on a monotonic clock with an arbitrary origin (Kafka's `Time.hiResClockMs`, from
    /// `System.nanoTime`): never goes back and does not move when the wall clock is stepped. Only the
    /// difference of two readings means anything; use it for durations that decide progress, such as how
    /// long a follower has been out of sync.
    fn monotonic_ms(&self) -> i64;
}

/// The operating system's wall clock (`SystemTime::now()`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SystemClock;

impl Clock for SystemClock {
    /// The system time in ms since the Unix epoch; 0 if the system clock is set before 1970.
    fn now_ms(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0)
    }

    /// Milliseconds since the first reading in this process (`Instant`, CLOCK_MONOTONIC).
    fn monotonic_ms(&self) -> i64 {
        static ORIGIN: OnceLock<Instant> = OnceLock::new();
        let origin = *ORIGIN.get_or_init(Instant::now);
        i64::try_from(origin.elapsed().as_millis()).unwrap_or(i64::MAX)
    }
}

/// A clock that moves only when told to, for tests and simulation (Kafka's `MockTime`).
///
/// Shared by reference (or in an `Arc`) between the code under test and the test itself; every method takes
/// `&self`.
#[derive(Debug, Default)]
pub struct ManualClock {
    now_ms: AtomicI64,
    /// The monotonic reading: moved by forward [`advance`](ManualClock::advance)s only.
    monotonic_ms: AtomicI64,
}

impl ManualClock {
    /// A clock that reads `start_ms` (ms since the Unix epoch) until it is moved.
    pub fn new(start_ms: i64) -> Self {
        ManualClock {
            now_ms: AtomicI64::new(start_ms),
            monotonic_ms: AtomicI64::new(0),
        }
    }

    /// Moves the clock forward by `delta_ms` milliseconds and returns the new time. A negative `delta_ms` moves
    /// the wall clock backwards, as a stepped system clock would, and leaves the monotonic clock where it is.
    pub fn advance(&self, delta_ms: i64) -> i64 {
        self.monotonic_ms
            .fetch_add(delta_ms.max(0), Ordering::SeqCst);
        self.now_ms.fetch_add(delta_ms, Ordering::SeqCst) + delta_ms
    }

    /// Sets the wall clock to `now_ms` (ms since the Unix epoch), a step: the monotonic clock stays.
    pub fn set(&self, now_ms: i64) {
        self.now_ms.store(now_ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.now_ms.load(Ordering::SeqCst)
    }

    fn monotonic_ms(&self) -> i64 {
        self.monotonic_ms.load(Ordering::SeqCst)
    }
}

impl<C: Clock + ?Sized> Clock for std::sync::Arc<C> {
    fn now_ms(&self) -> i64 {
        (**self).now_ms()
    }

    fn monotonic_ms(&self) -> i64 {
        (**self).monotonic_ms()
    }
}

impl<C: Clock + ?Sized> Clock for &C {
    fn now_ms(&self) -> i64 {
        (**self).now_ms()
    }

    fn monotonic_ms(&self) -> i64 {
        (**self).monotonic_ms()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let clock = ManualClock::new(1_000);
        assert_eq!(clock.now_ms(), 1_000);
        assert_eq!(clock.now_ms(), 1_000);
        assert_eq!(clock.advance(250), 1_250);
        assert_eq!(clock.now_ms(), 1_250);
        clock.set(42);
        assert_eq!(clock.now_ms(), 42);
        assert_eq!(clock.advance(-2), 40);
    }

    #[test]
    fn a_wall_clock_step_leaves_the_monotonic_clock() {
        let clock = ManualClock::new(1_000);
        assert_eq!(clock.monotonic_ms(), 0);
        clock.advance(250);
        assert_eq!(clock.monotonic_ms(), 250);
        clock.advance(-600_000);
        clock.set(5);
        assert_eq!(
            clock.monotonic_ms(),
            250,
            "steps back or set do not move it"
        );
        let system = SystemClock;
        let a = system.monotonic_ms();
        assert!(system.monotonic_ms() >= a);
    }

    #[test]
    fn clocks_work_behind_a_trait_object() {
        let manual = Arc::new(ManualClock::new(7));
        let shared: Arc<dyn Clock> = manual.clone();
        manual.advance(3);
        assert_eq!(shared.now_ms(), 10);

        // 2020-01-01T00:00:00Z; any machine running these tests is past it.
        let system: &dyn Clock = &SystemClock;
        assert!(system.now_ms() > 1_577_836_800_000);
    }
}
