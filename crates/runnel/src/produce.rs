//! `runnel produce TOPIC`: records from stdin, one per line, through rdkafka's producer (batching,
//! compression, retries and, with acks=all, idempotence).
//!
//! Text lines end at `\n` (a `\r` before it is dropped, as Kafka's console producer does); with
//! `--key-separator S` the bytes before the first `S` are the key. `--format json` reads one JSON
//! object per line: `{"key": string|null, "value": string|null, "headers": {..} | [[k, v], ..],
//! "partition": n, "timestamp": ms}`, every field optional; other fields (such as `offset` from
//! `runnel consume --format json`) are ignored.

use std::io::BufRead;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use rdkafka::client::ClientContext;
use rdkafka::error::KafkaError;
use rdkafka::message::{Header, Message, OwnedHeaders};
use rdkafka::producer::{BaseProducer, BaseRecord, DeliveryResult, Producer, ProducerContext};
use rdkafka::types::RDKafkaErrorCode;
use serde_json::{json, Value};

use crate::client::{code_words, kafka_error, print_json, split_kv, ConnArgs, RateLine};

/// How many failed deliveries are reported one by one.
const MAX_REPORTED_ERRORS: usize = 10;

/// `runnel produce ...`
#[derive(clap::Args, Debug)]
pub struct ProduceArgs {
    #[command(flatten)]
    conn: ConnArgs,
    /// Topic to produce to.
    topic: String,
    /// Split each text line at the first occurrence of this string into key and value.
    #[arg(long, short = 'K', value_name = "SEP")]
    key_separator: Option<String>,
    /// Header added to every record, e.g. --header source=cli; may be repeated.
    #[arg(long, short = 'H', value_name = "KEY=VALUE")]
    header: Vec<String>,
    /// Send every record to this partition (default: by key hash, or sticky for keyless records).
    #[arg(long, short = 'p')]
    partition: Option<i32>,
    /// Compression codec: none, gzip, snappy, lz4 or zstd.
    #[arg(long, short = 'z', default_value = "none",
          value_parser = ["none", "gzip", "snappy", "lz4", "zstd"])]
    compression: String,
    /// Acknowledgements: all (= -1), 1 or 0. With all, the producer is idempotent.
    #[arg(long, default_value = "all", value_parser = ["all", "-1", "0", "1"])]
    acks: String,
    /// Input format: text (one record per line) or json (one object per line).
    #[arg(long, short = 'f', default_value = "text", value_parser = ["text", "json"])]
    format: String,
    /// Give up on a record not acknowledged after this many seconds.
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    delivery_timeout: u64,
}

/// Counts deliveries and keeps the first few failures (topic, partition, error).
#[derive(Default)]
struct Ctx {
    ok: AtomicU64,
    failed: AtomicU64,
    errors: Mutex<Vec<String>>,
}

impl ClientContext for Ctx {}

impl ProducerContext for Ctx {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        match result {
            Ok(_) => {
                self.ok.fetch_add(1, Ordering::Relaxed);
            }
            Err((e, msg)) => {
                self.failed.fetch_add(1, Ordering::Relaxed);
                let mut errors = self.errors.lock().unwrap_or_else(|p| p.into_inner());
                if errors.len() < MAX_REPORTED_ERRORS {
                    let part = if msg.partition() >= 0 {
                        format!(" partition {}", msg.partition())
                    } else {
                        String::new()
                    };
                    errors.push(format!("topic '{}'{part}: {}", msg.topic(), kafka_error(e)));
                }
            }
        }
    }
}

/// One record to send.
struct Rec {
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    headers: Vec<(String, Option<Vec<u8>>)>,
    partition: Option<i32>,
    timestamp: Option<i64>,
}

fn json_bytes(v: &Value, what: &str) -> anyhow::Result<Option<Vec<u8>>> {
    match v {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s.clone().into_bytes())),
        other => bail!("{what} must be a string or null, got {other}"),
    }
}

/// Parses one `--format json` line.
fn parse_json_line(line: &[u8]) -> anyhow::Result<Rec> {
    let v: Value = serde_json::from_slice(line).context("not a JSON object")?;
    let Value::Object(o) = v else {
        bail!("expected a JSON object");
    };
    let mut headers = Vec::new();
    match o.get("headers") {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            for (k, v) in m {
                headers.push((k.clone(), json_bytes(v, "a header value")?));
            }
        }
        Some(Value::Array(a)) => {
            for h in a {
                match h {
                    Value::Array(kv) if kv.len() == 2 => {
                        let Value::String(k) = &kv[0] else {
                            bail!("a header key must be a string");
                        };
                        headers.push((k.clone(), json_bytes(&kv[1], "a header value")?));
                    }
                    Value::Object(m) => {
                        let Some(Value::String(k)) = m.get("key") else {
                            bail!("a header object needs a string \"key\"");
                        };
                        let v = m.get("value").unwrap_or(&Value::Null);
                        headers.push((k.clone(), json_bytes(v, "a header value")?));
                    }
                    _ => bail!("headers must be an object, or an array of [key, value] pairs"),
                }
            }
        }
        Some(_) => bail!("headers must be an object, or an array of [key, value] pairs"),
    }
    let int = |name: &str| -> anyhow::Result<Option<i64>> {
        match o.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_i64()
                .map(Some)
                .ok_or_else(|| anyhow!("\"{name}\" must be an integer")),
        }
    };
    let partition = match int("partition")? {
        Some(p) => Some(i32::try_from(p).map_err(|_| anyhow!("\"partition\" out of range"))?),
        None => None,
    };
    Ok(Rec {
        key: json_bytes(o.get("key").unwrap_or(&Value::Null), "\"key\"")?,
        value: json_bytes(o.get("value").unwrap_or(&Value::Null), "\"value\"")?,
        headers,
        partition,
        timestamp: int("timestamp")?,
    })
}

fn parse_text_line(line: &[u8], sep: Option<&[u8]>) -> Rec {
    let (key, value) = match sep {
        Some(sep) if !sep.is_empty() => match line.windows(sep.len()).position(|w| w == sep) {
            Some(i) => (Some(line[..i].to_vec()), line[i + sep.len()..].to_vec()),
            None => (None, line.to_vec()),
        },
        _ => (None, line.to_vec()),
    };
    Rec {
        key,
        value: Some(value),
        headers: Vec::new(),
        partition: None,
        timestamp: None,
    }
}

/// Waits (bounded) for the topic's metadata; producers may auto-create topics, as Kafka's do.
/// The reason for a producer's fatal error (e.g. its InitProducerId refused), which librdkafka reports to
/// each record only as "Local: Fatal error"; empty when there is none.
fn fatal_reason(producer: &BaseProducer<Ctx>) -> String {
    match producer.client().fatal_error() {
        Some((code, reason)) => format!("\n  fatal: {} ({reason})", code_words(code)),
        None => String::new(),
    }
}

fn partition_count(
    producer: &BaseProducer<Ctx>,
    topic: &str,
    timeout: Duration,
) -> anyhow::Result<usize> {
    let deadline = Instant::now() + timeout;
    loop {
        let md = producer
            .client()
            .fetch_metadata(Some(topic), timeout)
            .map_err(|e| anyhow!("topic '{topic}': {}", kafka_error(&e)))?;
        let t = md
            .topics()
            .iter()
            .find(|t| t.name() == topic)
            .ok_or_else(|| anyhow!("topic '{topic}': not in the broker's metadata response"))?;
        match t.error() {
            None if !t.partitions().is_empty() => return Ok(t.partitions().len()),
            None => {}
            Some(e) => {
                let code = RDKafkaErrorCode::from(e);
                if code != RDKafkaErrorCode::LeaderNotAvailable || Instant::now() >= deadline {
                    bail!("topic '{topic}': {}", code_words(code));
                }
            }
        }
        if Instant::now() >= deadline {
            bail!("topic '{topic}': no partitions in the broker's metadata within {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Runs `runnel produce`.
pub fn run(args: ProduceArgs) -> anyhow::Result<()> {
    let conn = &args.conn;
    let fixed_headers: Vec<(String, Option<Vec<u8>>)> = args
        .header
        .iter()
        .map(|h| split_kv(h, "--header").map(|(k, v)| (k.to_string(), Some(v.as_bytes().to_vec()))))
        .collect::<Result<_, _>>()?;
    let acks = if args.acks == "-1" {
        "all"
    } else {
        args.acks.as_str()
    };
    let idempotent = if acks == "all" { "true" } else { "false" };
    let delivery_ms = (args.delivery_timeout.max(1) * 1000).to_string();
    conn.preflight()?;
    let mut config = conn.client_config()?;
    config
        .set("acks", acks)
        .set("enable.idempotence", idempotent)
        .set("compression.type", &args.compression)
        .set("message.timeout.ms", &delivery_ms)
        .set("linger.ms", "5")
        .set("queue.buffering.max.messages", "100000");
    for p in &conn.properties {
        let (k, v) = split_kv(p, "-X")?;
        config.set(k, v);
    }
    let producer: BaseProducer<Ctx> = config
        .create_with_context(Ctx::default())
        .map_err(|e| anyhow!("creating the producer: {}", kafka_error(&e)))?;
    let count = partition_count(&producer, &args.topic, conn.timeout())?;
    if let Some(p) = args.partition {
        if p < 0 || p as usize >= count {
            bail!(
                "topic '{}' partition {p} does not exist (the topic has {count} partitions)",
                args.topic
            );
        }
    }

    let sep = args.key_separator.as_deref().map(str::as_bytes);
    let json = args.format == "json";
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut line = Vec::new();
    let mut rate = RateLine::new("produced");
    let mut lineno = 0u64;
    let mut sent = 0u64;
    let mut bytes = 0u64;
    loop {
        line.clear();
        let n = input
            .read_until(b'\n', &mut line)
            .context("reading stdin")?;
        if n == 0 {
            break;
        }
        lineno += 1;
        if line.last() == Some(&b'\n') {
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
        }
        let rec = if json {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            parse_json_line(&line).with_context(|| format!("stdin line {lineno}"))?
        } else {
            parse_text_line(&line, sep)
        };
        let partition = rec.partition.or(args.partition);
        if let Some(p) = partition {
            if p < 0 || p as usize >= count {
                bail!(
                    "stdin line {lineno}: topic '{}' partition {p} does not exist (the topic has {count} partitions)",
                    args.topic
                );
            }
        }
        let mut headers = OwnedHeaders::new();
        for (k, v) in fixed_headers.iter().chain(rec.headers.iter()) {
            headers = headers.insert(Header {
                key: k,
                value: v.as_deref(),
            });
        }
        let size = rec.key.as_ref().map_or(0, Vec::len) + rec.value.as_ref().map_or(0, Vec::len);
        let mut record: BaseRecord<'_, [u8], [u8], ()> =
            BaseRecord::to(&args.topic).headers(headers);
        if let Some(k) = &rec.key {
            record = record.key(k.as_slice());
        }
        if let Some(v) = &rec.value {
            record = record.payload(v.as_slice());
        }
        if let Some(p) = partition {
            record = record.partition(p);
        }
        if let Some(ts) = rec.timestamp {
            record = record.timestamp(ts);
        }
        loop {
            match producer.send(record) {
                Ok(()) => break,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), r)) => {
                    record = r;
                    producer.poll(Duration::from_millis(50));
                }
                Err((e, _)) => {
                    let why = format!("{}{}", kafka_error(&e), fatal_reason(&producer));
                    bail!("stdin line {lineno}: topic '{}': {why}", args.topic)
                }
            }
        }
        sent += 1;
        bytes += size as u64;
        rate.tick(size);
        producer.poll(Duration::ZERO);
        if producer.context().failed.load(Ordering::Relaxed) > 0 {
            break;
        }
    }
    let flush_timeout = Duration::from_millis(args.delivery_timeout.max(1) * 1000 + 5000);
    let flushed = producer.flush(flush_timeout);
    rate.finish();
    let ctx = producer.context();
    let ok = ctx.ok.load(Ordering::Relaxed);
    let failed = ctx.failed.load(Ordering::Relaxed);
    if failed > 0 {
        let errors = ctx.errors.lock().unwrap_or_else(|p| p.into_inner());
        bail!(
            "{failed} record(s) failed ({ok} of {sent} read acknowledged); stopped reading at stdin line {lineno}:\n  {}{}",
            errors.join("\n  "),
            fatal_reason(&producer)
        );
    }
    if let Err(e) = flushed {
        bail!(
            "{} of {sent} record(s) not acknowledged within {flush_timeout:?}: {}",
            sent - ok,
            kafka_error(&e)
        );
    }
    if conn.json {
        print_json(&json!({"topic": args.topic, "records": ok, "bytes": bytes}));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_lines_split_at_the_first_separator() {
        let r = parse_text_line(b"k1::v::x", Some(b"::"));
        assert_eq!(r.key.as_deref(), Some(&b"k1"[..]));
        assert_eq!(r.value.as_deref(), Some(&b"v::x"[..]));
        let r = parse_text_line(b"novalue", Some(b"::"));
        assert_eq!(r.key, None);
        assert_eq!(r.value.as_deref(), Some(&b"novalue"[..]));
    }

    #[test]
    fn json_lines() {
        let r = parse_json_line(
            br#"{"key":"k","value":null,"headers":[["a","1"],["a",null]],"partition":2,"offset":9}"#,
        )
        .unwrap();
        assert_eq!(r.key.as_deref(), Some(&b"k"[..]));
        assert_eq!(r.value, None);
        assert_eq!(r.headers.len(), 2);
        assert_eq!(r.headers[1].1, None);
        assert_eq!(r.partition, Some(2));
        let r = parse_json_line(br#"{"value":"v","headers":{"x":"y"}}"#).unwrap();
        assert_eq!(r.headers, vec![("x".to_string(), Some(b"y".to_vec()))]);
        assert!(parse_json_line(b"[1]").is_err());
        assert!(parse_json_line(br#"{"value":5}"#).is_err());
        assert!(parse_json_line(br#"{"partition":1e99}"#).is_err());
    }
}
