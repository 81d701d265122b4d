//! What every client subcommand shares: the connection options (`-b`, `--timeout`, `-X`,
//! `--command-config`, `--json`), the pre-flight reachability check, rdkafka client construction, error wording, tables and the
//! terminal rate line.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail};
use rdkafka::config::{ClientConfig, FromClientConfig};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};

/// Options common to every subcommand that talks to a broker.
#[derive(clap::Args, Debug, Clone)]
pub struct ConnArgs {
    /// Broker(s) to bootstrap from, comma-separated HOST:PORT.
    #[arg(
        short = 'b',
        long = "bootstrap-server",
        value_name = "HOST:PORT",
        default_value = "127.0.0.1:9092",
        env = "RUNNEL_BOOTSTRAP_SERVER",
        global = true
    )]
    pub bootstrap: String,
    /// Give up on an unreachable or unresponsive broker after this many seconds.
    #[arg(long, value_name = "SECS", default_value_t = 10.0, global = true)]
    pub timeout: f64,
    /// Machine-readable JSON on stdout instead of a table.
    #[arg(long, global = true)]
    pub json: bool,
    /// Extra librdkafka client property (e.g. -X client.id=ops); may be repeated.
    #[arg(
        short = 'X',
        long = "property",
        value_name = "KEY=VALUE",
        global = true
    )]
    pub properties: Vec<String>,
    /// Client properties file in the Java client's names, as Kafka's tools take it (e.g.
    /// `security.protocol`, `sasl.mechanism`, `sasl.jaas.config`, `ssl.truststore.location`); `-X` wins.
    #[arg(long, value_name = "FILE", global = true)]
    pub command_config: Option<std::path::PathBuf>,
}

impl ConnArgs {
    /// The request timeout as a `Duration` (at least 1 ms, at most a day).
    pub fn timeout(&self) -> Duration {
        let secs = if self.timeout.is_finite() {
            self.timeout.clamp(0.001, 86_400.0)
        } else {
            10.0
        };
        Duration::from_secs_f64(secs)
    }

    /// Fails fast, naming the address and the OS error, when no bootstrap broker accepts a TCP
    /// connection within the timeout (librdkafka would otherwise retry silently until it times out).
    pub fn preflight(&self) -> anyhow::Result<()> {
        let timeout = self.timeout().min(Duration::from_secs(5));
        let mut errors = Vec::new();
        for addr in self.addrs() {
            match crate::wire::connect_tcp(addr, timeout) {
                Ok(_) => return Ok(()),
                Err(e) => errors.push(format!("{e:#}")),
            }
        }
        if errors.is_empty() {
            bail!("no bootstrap server given (-b HOST:PORT)");
        }
        bail!("broker unreachable: {}", errors.join("; "))
    }

    /// The bootstrap addresses.
    pub fn addrs(&self) -> impl Iterator<Item = &str> {
        self.bootstrap
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
    }

    /// The client properties in librdkafka's names: the `--command-config` file's (translated from the
    /// Java client's names, [`crate::security::from_java`]), then the `-X` ones (later wins).
    pub fn client_properties(&self) -> anyhow::Result<Vec<(String, String)>> {
        let mut props = match &self.command_config {
            Some(path) => crate::security::command_config(path)?,
            None => Vec::new(),
        };
        for p in &self.properties {
            let (k, v) = split_kv(p, "-X")?;
            props.push((k.to_string(), v.to_string()));
        }
        Ok(props)
    }

    /// A librdkafka configuration with the bootstrap servers, timeouts and [`Self::client_properties`].
    pub fn client_config(&self) -> anyhow::Result<ClientConfig> {
        let ms = self.timeout().as_millis().max(1).to_string();
        let mut c = ClientConfig::new();
        c.set("bootstrap.servers", &self.bootstrap)
            .set("client.id", "runnel-cli")
            .set("socket.timeout.ms", &ms)
            .set("socket.connection.setup.timeout.ms", &ms)
            .set("log_level", "3");
        for (k, v) in self.client_properties()? {
            c.set(k, v);
        }
        Ok(c)
    }

    /// Builds an rdkafka client (admin client, consumer, producer) from [`Self::client_config`]
    /// plus `extra` properties, after the pre-flight check.
    pub fn create<T: FromClientConfig>(&self, extra: &[(&str, &str)]) -> anyhow::Result<T> {
        self.preflight()?;
        let mut c = self.client_config()?;
        for (k, v) in extra {
            c.set(*k, *v);
        }
        // -X and --command-config win over our defaults.
        for (k, v) in self.client_properties()? {
            c.set(k, v);
        }
        c.create()
            .map_err(|e| anyhow!("creating the Kafka client: {}", kafka_error(&e)))
    }
}

/// Splits `KEY=VALUE`, naming the flag in the error.
pub fn split_kv<'a>(s: &'a str, flag: &str) -> anyhow::Result<(&'a str, &'a str)> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k, v)),
        _ => bail!("{flag} {s:?}: expected KEY=VALUE"),
    }
}

/// An rdkafka error code in words: the Kafka error name (for broker errors) and librdkafka's
/// description, e.g. `UNKNOWN_TOPIC_OR_PARTITION (Broker: Unknown topic or partition)`.
pub fn code_words(code: RDKafkaErrorCode) -> String {
    // rdkafka displays `Variant (description)`; keep the description.
    let shown = code.to_string();
    let description = match (shown.find(" ("), shown.ends_with(')')) {
        (Some(i), true) => shown[i + 2..shown.len() - 1].to_string(),
        _ => shown,
    };
    let raw = code as i32;
    if (-1..1000).contains(&raw) {
        let name = protocol::error::ErrorCode(raw as i16).name();
        if !name.is_empty() && name != "UNKNOWN" {
            return format!("{name} ({description})");
        }
    }
    description
}

/// `Ok` when `code` is NONE (0), else the error "`doing`: NAME (error N): message" (a response's error
/// code and message as the CLI reports them).
pub fn check(
    code: i16,
    message: Option<&str>,
    doing: impl std::fmt::Display,
) -> anyhow::Result<()> {
    if code == 0 {
        return Ok(());
    }
    anyhow::bail!("{doing}: {}", protocol_words(code, message))
}

/// A Kafka protocol error code (from our own codec's responses) in words, with the broker's message.
pub fn protocol_words(code: i16, message: Option<&str>) -> String {
    let name = protocol::error::ErrorCode(code).name();
    match message {
        Some(m) if !m.is_empty() => format!("{name} (error {code}): {m}"),
        _ => format!("{name} (error {code})"),
    }
}

/// An rdkafka error in words, with the Kafka error name when there is one.
pub fn kafka_error(e: &KafkaError) -> String {
    match e.rdkafka_error_code() {
        Some(code) => {
            let words = code_words(code);
            match code {
                RDKafkaErrorCode::OperationTimedOut
                | RDKafkaErrorCode::BrokerTransportFailure
                | RDKafkaErrorCode::AllBrokersDown
                | RDKafkaErrorCode::RequestTimedOut => {
                    format!("{words}; is the broker up and reachable?")
                }
                _ => words,
            }
        }
        None => e.to_string(),
    }
}

/// Runs a future to completion on a small current-thread runtime (rdkafka's admin futures are
/// completed by the admin client's own thread).
pub fn block_on<F: std::future::Future>(f: F) -> anyhow::Result<F::Output> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    Ok(rt.block_on(f))
}

/// Prints a table: a header row and left-aligned columns separated by two spaces.
pub fn print_table(headers: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if i < widths.len() {
                widths[i] = widths[i].max(c.chars().count());
            }
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                s.push_str(c);
            } else {
                s.push_str(c);
                let pad = widths[i].saturating_sub(c.chars().count()) + 2;
                s.extend(std::iter::repeat_n(' ', pad));
            }
        }
        s
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", line(headers.to_vec()));
    for r in rows {
        let _ = writeln!(out, "{}", line(r.iter().map(String::as_str).collect()));
    }
}

/// Prints a JSON value on one line of stdout.
pub fn print_json(v: &serde_json::Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{v}");
}

/// A once-per-second `N records, R/s` line on stderr, only when stderr is a terminal.
pub struct RateLine {
    enabled: bool,
    what: &'static str,
    start: Instant,
    last: Instant,
    count: u64,
    bytes: u64,
    shown: bool,
}

impl RateLine {
    /// A rate line counting `what` (e.g. "produced").
    pub fn new(what: &'static str) -> RateLine {
        let now = Instant::now();
        RateLine {
            enabled: std::io::stderr().is_terminal(),
            what,
            start: now,
            last: now,
            count: 0,
            bytes: 0,
            shown: false,
        }
    }

    /// Counts one record of `bytes` bytes; redraws at most once a second.
    pub fn tick(&mut self, bytes: usize) {
        self.count += 1;
        self.bytes += bytes as u64;
        if self.enabled && self.last.elapsed() >= Duration::from_secs(1) {
            self.last = Instant::now();
            self.draw();
        }
    }

    fn draw(&mut self) {
        let secs = self.start.elapsed().as_secs_f64().max(0.001);
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r\x1b[2K{} {} records ({:.1} MB), {:.0} records/s, {:.2} MB/s",
            self.what,
            self.count,
            self.bytes as f64 / 1e6,
            self.count as f64 / secs,
            self.bytes as f64 / 1e6 / secs
        );
        let _ = err.flush();
        self.shown = true;
    }

    /// Draws the final line and ends it, if anything was shown.
    pub fn finish(&mut self) {
        if self.enabled && self.shown {
            self.draw();
            let _ = writeln!(std::io::stderr());
        }
    }
}

/// Parses a timestamp given as epoch milliseconds or as an RFC 3339 / ISO-8601 UTC date-time
/// (`2026-11-29T22:00:00Z`, `2026-11-29T22:00:00.5Z`, `2026-11-29`), returning epoch ms.
pub fn parse_timestamp(s: &str) -> anyhow::Result<i64> {
    if let Ok(ms) = s.parse::<i64>() {
        return Ok(ms);
    }
    let bad = || {
        anyhow!("bad timestamp {s:?}: expected epoch milliseconds or YYYY-MM-DDTHH:MM:SS[.fff]Z")
    };
    let s2 = s.trim_end_matches('Z');
    let (date, time) = s2.split_once(['T', ' ']).unwrap_or((s2, "00:00:00"));
    let d: Vec<i64> = date
        .split('-')
        .map(|p| p.parse().map_err(|_| bad()))
        .collect::<Result<_, _>>()?;
    if d.len() != 3 {
        return Err(bad());
    }
    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
    let t: Vec<i64> = hms
        .split(':')
        .map(|p| p.parse().map_err(|_| bad()))
        .collect::<Result<_, _>>()?;
    if t.len() < 2 || t.len() > 3 {
        return Err(bad());
    }
    let (y, m, day) = (d[0], d[1], d[2]);
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) || t[0] > 23 || t[1] > 59 {
        return Err(bad());
    }
    let sec = t.get(2).copied().unwrap_or(0);
    let ms_frac: i64 = if frac.is_empty() {
        0
    } else {
        let f: String = frac.chars().chain("000".chars()).take(3).collect();
        f.parse().map_err(|_| bad())?
    };
    // Days from civil (Howard Hinnant's algorithm).
    let y2 = if m <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Ok(((days * 24 + t[0]) * 60 + t[1]) * 60_000 + sec * 1000 + ms_frac)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps() {
        assert_eq!(parse_timestamp("0").unwrap(), 0);
        assert_eq!(parse_timestamp("1970-01-01T00:00:00Z").unwrap(), 0);
        assert_eq!(
            parse_timestamp("2021-03-04T05:06:07.5Z").unwrap(),
            1_614_834_367_500
        );
        assert_eq!(parse_timestamp("2000-01-01").unwrap(), 946_684_800_000);
        assert!(parse_timestamp("yesterday").is_err());
        assert!(parse_timestamp("2000-13-01").is_err());
    }

    #[test]
    fn error_words() {
        let w = code_words(RDKafkaErrorCode::UnknownTopicOrPartition);
        assert!(w.starts_with("UNKNOWN_TOPIC_OR_PARTITION"), "{w}");
    }
}
