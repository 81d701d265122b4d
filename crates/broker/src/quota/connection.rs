//! Connection limits (Kafka's `ConnectionQuotas`, KIP-402, KIP-612): `max.connections` (broker-wide) and
//! `listener.name.<l>.max.connections`, `max.connections.per.ip` with `max.connections.per.ip.overrides`,
//! and `max.connection.creation.rate` (broker-wide) with `listener.name.<l>.max.connection.creation.rate`.
//!
//! As in Kafka's acceptor, an accepted connection is first counted in the creation rates and, when a rate is
//! over its limit, the listener's acceptor waits the throttle time (at most one quota window); then, while
//! the listener or the broker is at its connection limit, it waits for a connection to close (the
//! inter-broker listener, when there are others, is exempt from the broker-wide limit and rate, so
//! replication keeps its connections — without Kafka's closing of another listener's least recently used connection); then a
//! connection from an IP already at its limit is closed. [`ConnectionQuotas`] is the decision (sans I/O,
//! time as `now_ms`); [`ConnectionLimiter`] is the acceptor's async wrapper and the [`ConnectionSlot`] a
//! connection holds until it closes.

use std::collections::HashMap;
use std::net::{IpAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;
use types::Clock;

use super::rate::{throttle_time_ms, QuotaWindow, SampledRate};
use crate::config::{keys, BrokerConfig, ConfigError};

/// The limits, read from the broker config at startup.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnectionQuotaConfig {
    /// `max.connections`: connections on all listeners together.
    pub max_connections: u32,
    /// `listener.name.<l>.max.connections` per listener (upper-case name), where set.
    pub listener_max_connections: HashMap<String, u32>,
    /// `max.connections.per.ip`.
    pub max_per_ip: u32,
    /// `max.connections.per.ip.overrides`, hosts resolved to addresses.
    pub per_ip_overrides: HashMap<IpAddr, u32>,
    /// `max.connection.creation.rate` (connections/s), broker-wide.
    pub max_creation_rate: f64,
    /// `listener.name.<l>.max.connection.creation.rate` per listener, where set.
    pub listener_creation_rate: HashMap<String, f64>,
    /// The inter-broker listener, exempt from the broker-wide limit and rate when the broker has other
    /// listeners (empty otherwise).
    pub inter_broker_listener: String,
    /// The rates' sampling (`quota.window.num`, `quota.window.size.seconds`).
    pub window: QuotaWindow,
}

impl ConnectionQuotaConfig {
    /// Reads the limits of `config`. Errors: an override that is not `host:count`, a host that does not
    /// resolve, `max.connections.per.ip=0` without overrides (Kafka's rule).
    pub fn from_config(config: &BrokerConfig) -> Result<ConnectionQuotaConfig, ConfigError> {
        let limit = |v: i32| v.max(0) as u32;
        let mut listener_max_connections = HashMap::new();
        let mut listener_creation_rate = HashMap::new();
        for l in &config.listeners.listeners {
            let name = l.name().to_string();
            let own = |key: &str| {
                let prefixed = format!("listener.name.{}.{key}", name.to_ascii_lowercase());
                config
                    .explicit
                    .get(&prefixed)
                    .and_then(|v| v.trim().parse::<i32>().ok())
            };
            if let Some(v) = own(keys::MAX_CONNECTIONS.name()) {
                listener_max_connections.insert(name.clone(), limit(v));
            }
            if let Some(v) = own(keys::MAX_CONNECTION_CREATION_RATE.name()) {
                listener_creation_rate.insert(name.clone(), f64::from(v.max(0)));
            }
        }
        let per_ip_overrides =
            parse_overrides(&config.get(keys::MAX_CONNECTIONS_PER_IP_OVERRIDES))?;
        let max_per_ip = limit(config.get(keys::MAX_CONNECTIONS_PER_IP));
        if max_per_ip == 0 && per_ip_overrides.is_empty() {
            return Err(invalid(
                keys::MAX_CONNECTIONS_PER_IP.name(),
                "0",
                "0 is allowed only when max.connections.per.ip.overrides is set",
            ));
        }
        Ok(ConnectionQuotaConfig {
            max_connections: limit(config.get(keys::MAX_CONNECTIONS)),
            listener_max_connections,
            max_per_ip,
            per_ip_overrides,
            max_creation_rate: f64::from(config.get(keys::MAX_CONNECTION_CREATION_RATE).max(0)),
            listener_creation_rate,
            // Kafka's `protectedListener`: only with more than one listener.
            inter_broker_listener: if config.listeners.listeners.len() > 1 {
                config.listeners.inter_broker_listener_name.clone()
            } else {
                String::new()
            },
            window: QuotaWindow::new(
                config.get(keys::QUOTA_WINDOW_NUM),
                config.get(keys::QUOTA_WINDOW_SIZE_SECONDS),
            ),
        })
    }

    /// No limits (tests and simulations).
    pub fn unlimited() -> ConnectionQuotaConfig {
        ConnectionQuotaConfig {
            max_connections: u32::MAX,
            listener_max_connections: HashMap::new(),
            max_per_ip: u32::MAX,
            per_ip_overrides: HashMap::new(),
            max_creation_rate: f64::from(i32::MAX),
            listener_creation_rate: HashMap::new(),
            inter_broker_listener: String::new(),
            window: QuotaWindow::default(),
        }
    }
}

const OVERRIDES: &str = "max.connections.per.ip.overrides";

fn invalid(key: &str, value: &str, reason: &str) -> ConfigError {
    ConfigError::InvalidValue {
        key: key.into(),
        value: value.into(),
        reason: reason.into(),
    }
}

/// `host:count,host:count` (Kafka's `max.connections.per.ip.overrides`); a host name counts for each of its
/// addresses.
fn parse_overrides(text: &str) -> Result<HashMap<IpAddr, u32>, ConfigError> {
    let mut out = HashMap::new();
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let bad = || invalid(OVERRIDES, text, &format!("{entry:?} is not host:count"));
        let (host, count) = entry.rsplit_once(':').ok_or_else(bad)?;
        let count: u32 = count.trim().parse().map_err(|_| bad())?;
        let host = host.trim().trim_start_matches('[').trim_end_matches(']');
        let addrs: Vec<IpAddr> = match host.parse::<IpAddr>() {
            Ok(ip) => vec![ip],
            Err(_) => (host, 0)
                .to_socket_addrs()
                .map_err(|e| invalid(OVERRIDES, text, &format!("{host}: {e}")))?
                .map(|a| a.ip())
                .collect(),
        };
        for ip in addrs {
            out.insert(ip, count);
        }
    }
    Ok(out)
}

/// A connection closed at accept because its IP has `max` connections already (Kafka's
/// `TooManyConnectionsException`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("too many connections from {ip} (max.connections.per.ip: {max})")]
pub struct TooManyConnections {
    /// The client's address.
    pub ip: IpAddr,
    /// Its limit.
    pub max: u32,
}

/// The connection counts and creation rates (sans I/O).
#[derive(Debug)]
pub struct ConnectionQuotas {
    config: ConnectionQuotaConfig,
    total: u32,
    per_listener: HashMap<String, u32>,
    per_ip: HashMap<IpAddr, u32>,
    broker_rate: SampledRate,
    listener_rates: HashMap<String, SampledRate>,
}

impl ConnectionQuotas {
    /// No connections yet under `config`.
    pub fn new(config: ConnectionQuotaConfig) -> ConnectionQuotas {
        ConnectionQuotas {
            config,
            total: 0,
            per_listener: HashMap::new(),
            per_ip: HashMap::new(),
            broker_rate: SampledRate::default(),
            listener_rates: HashMap::new(),
        }
    }

    /// Counts a new connection on `listener` in the creation rates at `now_ms` and returns how long the
    /// acceptor waits before taking it (ms, at most one quota window; Kafka's
    /// `recordConnectionAndGetThrottleTimeMs`).
    pub fn record_creation(&mut self, listener: &str, now_ms: u64) -> u64 {
        let window = self.config.window;
        let mut throttle = 0;
        if let Some(bound) = self.config.listener_creation_rate.get(listener).copied() {
            let rate = self.listener_rates.entry(listener.to_string()).or_default();
            throttle = throttle.max(rate_throttle(rate, window, bound, now_ms));
        }
        if listener != self.config.inter_broker_listener {
            let bound = self.config.max_creation_rate;
            throttle = throttle.max(rate_throttle(&mut self.broker_rate, window, bound, now_ms));
        }
        throttle.min(window.window_ms)
    }

    /// Whether `listener` may take another connection now (below its own limit, and below the broker's
    /// unless it is the inter-broker listener).
    pub fn slot_available(&self, listener: &str) -> bool {
        let on_listener = self.per_listener.get(listener).copied().unwrap_or(0);
        let listener_max = self.config.listener_max_connections.get(listener).copied();
        on_listener < listener_max.unwrap_or(u32::MAX)
            && (self.total < self.config.max_connections
                || listener == self.config.inter_broker_listener)
    }

    /// Counts a connection from `ip` on `listener`, unless `ip` is at its limit (then nothing is counted).
    pub fn admit(&mut self, listener: &str, ip: IpAddr) -> Result<(), TooManyConnections> {
        let max = self
            .config
            .per_ip_overrides
            .get(&ip)
            .copied()
            .unwrap_or(self.config.max_per_ip);
        let count = self.per_ip.entry(ip).or_insert(0);
        if *count >= max {
            if *count == 0 {
                self.per_ip.remove(&ip);
            }
            return Err(TooManyConnections { ip, max });
        }
        *count += 1;
        self.total += 1;
        *self.per_listener.entry(listener.to_string()).or_insert(0) += 1;
        Ok(())
    }

    /// Uncounts a closed connection.
    pub fn release(&mut self, listener: &str, ip: IpAddr) {
        self.total = self.total.saturating_sub(1);
        if let Some(n) = self.per_listener.get_mut(listener) {
            *n = n.saturating_sub(1);
        }
        if let Some(n) = self.per_ip.get_mut(&ip) {
            *n -= 1;
            if *n == 0 {
                self.per_ip.remove(&ip);
            }
        }
    }

    /// Connections counted in all, and from `ip`.
    pub fn counts(&self, ip: IpAddr) -> (u32, u32) {
        (self.total, self.per_ip.get(&ip).copied().unwrap_or(0))
    }
}

fn rate_throttle(rate: &mut SampledRate, window: QuotaWindow, bound: f64, now_ms: u64) -> u64 {
    rate.record(window, 1.0, now_ms);
    let measured = rate.measure(window, now_ms);
    throttle_time_ms(measured, bound, rate.window_ms(window, now_ms))
}

/// The acceptors' shared [`ConnectionQuotas`]: waits as Kafka's acceptor does and hands out
/// [`ConnectionSlot`]s.
#[derive(Debug)]
pub struct ConnectionLimiter {
    quotas: Mutex<ConnectionQuotas>,
    freed: Notify,
    clock: Arc<dyn Clock>,
}

impl ConnectionLimiter {
    /// A limiter over `config`, reading time from `clock`.
    pub fn new(config: ConnectionQuotaConfig, clock: Arc<dyn Clock>) -> Arc<ConnectionLimiter> {
        Arc::new(ConnectionLimiter {
            quotas: Mutex::new(ConnectionQuotas::new(config)),
            freed: Notify::new(),
            clock,
        })
    }

    /// Admits a connection just accepted on `listener` from `ip`: waits out a creation-rate throttle, then
    /// for a free slot on the listener and the broker. Error: `ip` is at its limit (the caller closes it).
    pub async fn acquire(
        self: &Arc<Self>,
        listener: &Arc<str>,
        ip: IpAddr,
    ) -> Result<ConnectionSlot, TooManyConnections> {
        let now = self.clock.now_ms().max(0) as u64;
        let throttle = self.quotas.lock().record_creation(listener, now);
        if throttle > 0 {
            tokio::time::sleep(Duration::from_millis(throttle)).await;
        }
        loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            {
                let mut q = self.quotas.lock();
                if q.slot_available(listener) {
                    q.admit(listener, ip)?;
                    return Ok(ConnectionSlot {
                        limiter: self.clone(),
                        listener: listener.clone(),
                        ip,
                    });
                }
            }
            freed.await;
        }
    }

    /// Connections counted in all, and from `ip`.
    pub fn counts(&self, ip: IpAddr) -> (u32, u32) {
        self.quotas.lock().counts(ip)
    }

    /// Open connections per listener name (the metrics endpoint's `connection_count`).
    pub fn per_listener(&self) -> Vec<(String, u32)> {
        let q = self.quotas.lock();
        q.per_listener
            .iter()
            .map(|(l, n)| (l.clone(), *n))
            .collect()
    }
}

/// A counted connection; dropping it (when the connection closes) frees its slot.
#[derive(Debug)]
pub struct ConnectionSlot {
    limiter: Arc<ConnectionLimiter>,
    listener: Arc<str>,
    ip: IpAddr,
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        self.limiter.quotas.lock().release(&self.listener, self.ip);
        self.limiter.freed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn config() -> ConnectionQuotaConfig {
        ConnectionQuotaConfig {
            inter_broker_listener: "INTERNAL".into(),
            ..ConnectionQuotaConfig::unlimited()
        }
    }

    #[test]
    fn per_ip_limits_and_overrides() {
        let mut c = config();
        c.max_per_ip = 2;
        c.per_ip_overrides = parse_overrides("10.0.0.9:0, 127.0.0.2:3").unwrap();
        let mut q = ConnectionQuotas::new(c);
        let a = ip("127.0.0.1");
        assert!(q.admit("PLAINTEXT", a).is_ok());
        assert!(q.admit("PLAINTEXT", a).is_ok());
        assert_eq!(
            q.admit("PLAINTEXT", a),
            Err(TooManyConnections { ip: a, max: 2 })
        );
        assert_eq!(q.counts(a), (2, 2));
        q.release("PLAINTEXT", a);
        assert!(q.admit("PLAINTEXT", a).is_ok());
        for _ in 0..3 {
            q.admit("PLAINTEXT", ip("127.0.0.2")).unwrap();
        }
        assert!(q.admit("PLAINTEXT", ip("127.0.0.2")).is_err());
        assert!(q.admit("PLAINTEXT", ip("10.0.0.9")).is_err());
        assert_eq!(q.counts(ip("10.0.0.9")), (5, 0));
        assert!(parse_overrides("nocount").is_err());
        assert!(parse_overrides("1.2.3.4:x").is_err());
    }

    #[test]
    fn broker_and_listener_limits_leave_the_inter_broker_listener_free() {
        let mut c = config();
        c.max_connections = 2;
        c.listener_max_connections.insert("SSL".into(), 1);
        let mut q = ConnectionQuotas::new(c);
        assert!(q.slot_available("SSL"));
        q.admit("SSL", ip("1.1.1.1")).unwrap();
        assert!(!q.slot_available("SSL"), "listener limit");
        q.admit("PLAINTEXT", ip("1.1.1.2")).unwrap();
        assert!(!q.slot_available("PLAINTEXT"), "broker limit");
        assert!(q.slot_available("INTERNAL"));
        q.release("PLAINTEXT", ip("1.1.1.2"));
        assert!(q.slot_available("PLAINTEXT"));
    }

    #[test]
    fn creation_rate_throttles_all_but_the_inter_broker_listener() {
        let mut c = config();
        c.max_creation_rate = 2.0;
        c.listener_creation_rate.insert("INTERNAL".into(), 100.0);
        let mut q = ConnectionQuotas::new(c);
        // Ten windows' worth (20) go at once; the 21st waits (capped at one window).
        for _ in 0..20 {
            assert_eq!(q.record_creation("PLAINTEXT", 0), 0);
        }
        assert_eq!(q.record_creation("PLAINTEXT", 0), 500);
        assert_eq!(q.record_creation("PLAINTEXT", 0), 1000);
        assert_eq!(q.record_creation("INTERNAL", 0), 0);
    }

    #[tokio::test]
    async fn the_acceptor_waits_for_a_slot_and_a_closed_connection_frees_it() {
        let mut c = config();
        c.max_connections = 1;
        let limiter = ConnectionLimiter::new(c, Arc::new(types::SystemClock));
        let l: Arc<str> = "PLAINTEXT".into();
        let first = limiter.acquire(&l, ip("1.1.1.1")).await.unwrap();
        let waiting = tokio::spawn({
            let (limiter, l) = (limiter.clone(), l.clone());
            async move { limiter.acquire(&l, ip("1.1.1.2")).await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        drop(first);
        let second = tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("the waiting acceptor got the freed slot")
            .unwrap();
        assert!(second.is_ok());
        assert_eq!(limiter.counts(ip("1.1.1.1")), (1, 0));
    }
}
