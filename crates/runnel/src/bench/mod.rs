//! `runnel bench produce|consume|end-to-end`: a load generator for any Kafka-protocol broker, in
//! the spirit of Kafka's `kafka-producer-perf-test` / `kafka-consumer-perf-test`, on librdkafka
//! (through rust-rdkafka) so that the client is not the bottleneck.
//!
//! - `produce`: N producer threads send `--record-size`-byte values (random upper-case letters, so
//!   compression ratios are realistic) for `--count` records or `--duration` seconds, optionally
//!   paced at `--rate` records/s in total. Latency is the time from `send` to the delivery report
//!   (the produce acknowledgement), in an HDR histogram (microsecond resolution, 3 significant
//!   digits).
//! - `consume`: M consumer threads share the topic's partitions (static assignment, no group)
//!   and read from the beginning up to the high watermarks seen at start (or `--count` records).
//! - `end-to-end`: one consumer positioned at the current high watermarks, then producers paced at
//!   `--rate`; each value starts with the send time (u64 little-endian nanoseconds since the Unix
//!   epoch) and the consumer records `receive time - send time`: the delivery latency.
//!
//! Output: one summary line (records, records/s, MB/s with MB = 10^6 bytes, latency p50/p99/p99.9/max
//! in ms), or one JSON object with `--json`. A live rate line is drawn on stderr once a second, only
//! when stderr is a terminal.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, bail, Context};
use hdrhistogram::Histogram;
use rdkafka::admin::{NewTopic, TopicReplication};
use rdkafka::client::ClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer, DefaultConsumerContext};
use rdkafka::producer::{BaseProducer, DeliveryResult, Producer, ProducerContext};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{Offset, TopicPartitionList};
use serde_json::{json, Value};

use crate::client::{block_on, code_words, kafka_error, print_json, ConnArgs};

mod consume;
mod fast;
mod produce;
mod produce_parts;
use consume::{assigned_consumer, consume};
use produce::produce;
use produce_parts::{check_duration, producer_config, TxnPacer};

/// Highest latency the histograms track: 10 minutes, in microseconds.
const MAX_LATENCY_US: u64 = 600_000_000;

/// `runnel bench ...`
#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    #[command(subcommand)]
    command: BenchCommand,
}

#[derive(clap::Subcommand, Debug)]
enum BenchCommand {
    /// Produce records as fast as possible (or at --rate); reports throughput and ack latency.
    Produce(ProduceOpts),
    /// Consume a topic from the beginning to its end; reports throughput.
    Consume(ConsumeOpts),
    /// Produce at --rate while consuming; reports the produce-to-consume (delivery) latency.
    EndToEnd(ProduceOpts),
    /// A Kafka-protocol sink broker (acknowledges produce, serves a synthetic log): the client ceiling.
    Sink(crate::bench_sink::SinkOpts),
}

/// Longest `--duration` accepted (seconds; about 116 days).
const MAX_DURATION_SECS: f64 = 1e7;

/// Most `--producers` / `--consumers` threads accepted.
const MAX_THREADS: usize = 1024;

/// Records a producer sends to one partition before moving to the next (the load generator picks
/// partitions itself, round-robin in runs, instead of paying librdkafka's partitioner per record).
const PARTITION_RUN: u64 = 4096;

/// Options shared by every bench mode.
#[derive(clap::Args, Debug, Clone)]
struct Common {
    #[command(flatten)]
    conn: ConnArgs,
    /// Topic to use; created with --partitions (replication factor 1) if it does not exist.
    #[arg(long, short = 't', default_value = "runnel-bench")]
    topic: String,
    /// Partition count used when the topic is created.
    #[arg(long, default_value_t = 1)]
    partitions: i32,
    /// Stop after this many records (produce: in total over all producers).
    #[arg(long, short = 'n')]
    count: Option<u64>,
    /// Stop after this many seconds (finite, > 0, at most 1e7).
    #[arg(long, short = 'd', value_name = "SECS")]
    duration: Option<f64>,
}

/// Options of `produce` and `end-to-end`.
#[derive(clap::Args, Debug, Clone)]
struct ProduceOpts {
    #[command(flatten)]
    common: Common,
    /// Value size in bytes (no key). end-to-end needs at least 8 (the embedded send time).
    #[arg(long, short = 's', default_value_t = 100)]
    record_size: usize,
    /// Producer threads, each with its own client (1 to 1024).
    #[arg(long, default_value_t = 1)]
    producers: usize,
    /// Acknowledgements: all (= -1), 1 or 0.
    #[arg(long, default_value = "1", value_parser = ["all", "-1", "0", "1"])]
    acks: String,
    /// Compression codec: none, gzip, snappy, lz4 or zstd.
    #[arg(long, short = 'z', default_value = "none",
          value_parser = ["none", "gzip", "snappy", "lz4", "zstd"])]
    compression: String,
    /// linger.ms: how long a batch may wait to fill.
    #[arg(long, default_value_t = 5)]
    linger_ms: u64,
    /// batch.size: the largest batch in bytes (librdkafka's default when not given).
    #[arg(long)]
    batch_size: Option<u64>,
    /// Target rate in records/s over all producers; 0 = as fast as possible.
    #[arg(long, default_value_t = 0.0)]
    rate: f64,
    /// Transactions: each producer commits one every this many ms (0: no transactions).
    #[arg(long, default_value_t = 0, value_name = "MS")]
    txn_ms: u64,
}

/// Options of `consume`.
#[derive(clap::Args, Debug, Clone)]
struct ConsumeOpts {
    #[command(flatten)]
    common: Common,
    /// Consumer threads (1 to 1024); partitions are dealt round-robin.
    #[arg(long, default_value_t = 1)]
    consumers: usize,
}

/// Runs `runnel bench`.
pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    match args.command {
        BenchCommand::Produce(o) => produce(&o, false),
        BenchCommand::EndToEnd(o) => produce(&o, true),
        BenchCommand::Consume(o) => consume(&o),
        BenchCommand::Sink(o) => crate::bench_sink::run(&o),
    }
}

/// Latency summary in milliseconds.
fn latency_json(h: &Histogram<u64>) -> Value {
    if h.is_empty() {
        return Value::Null;
    }
    let ms = |us: u64| us as f64 / 1000.0;
    json!({
        "count": h.len(),
        "mean": h.mean() / 1000.0,
        "p50": ms(h.value_at_quantile(0.50)),
        "p99": ms(h.value_at_quantile(0.99)),
        "p99_9": ms(h.value_at_quantile(0.999)),
        "max": ms(h.max()),
    })
}

fn new_histogram() -> anyhow::Result<Histogram<u64>> {
    Histogram::new_with_bounds(1, MAX_LATENCY_US, 3).map_err(|e| anyhow!("histogram: {e}"))
}

/// Prints the result: a JSON object or one line of text.
fn report(
    conn: &ConnArgs,
    mut v: Value,
    records: u64,
    bytes: u64,
    secs: f64,
    lat: &Histogram<u64>,
) {
    let secs = secs.max(1e-9);
    let rps = records as f64 / secs;
    let mbps = bytes as f64 / 1e6 / secs;
    v["records"] = json!(records);
    v["bytes"] = json!(bytes);
    v["seconds"] = json!(secs);
    v["records_per_sec"] = json!(rps);
    v["mb_per_sec"] = json!(mbps);
    v["latency_ms"] = latency_json(lat);
    // The load generator's own CPU time, so a report can show which side is the bottleneck.
    v["client_cpu_s"] = json!(process_cpu_seconds());
    if conn.json {
        print_json(&v);
        return;
    }
    let mut line = format!(
        "{}: {records} records in {secs:.2} s: {rps:.0} records/s, {mbps:.2} MB/s",
        v["mode"].as_str().unwrap_or("bench")
    );
    if !lat.is_empty() {
        let ms = |us: u64| us as f64 / 1000.0;
        line.push_str(&format!(
            "; {} latency ms: p50 {:.3}, p99 {:.3}, p99.9 {:.3}, max {:.3}",
            if v["mode"] == "end-to-end" {
                "delivery"
            } else {
                "ack"
            },
            ms(lat.value_at_quantile(0.5)),
            ms(lat.value_at_quantile(0.99)),
            ms(lat.value_at_quantile(0.999)),
            ms(lat.max())
        ));
    }
    println!("{line}");
}

/// User + system CPU time of this process so far, in seconds (getrusage(RUSAGE_SELF)); 0 if unavailable.
fn process_cpu_seconds() -> f64 {
    // SAFETY: getrusage writes into the zeroed struct we pass and reads nothing else.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Live counters shared by the workers and the rate line.
#[derive(Default)]
struct Progress {
    records: AtomicU64,
    bytes: AtomicU64,
    done: AtomicBool,
}

/// Draws a live rate line on stderr once a second until `progress.done`, only on a terminal.
fn rate_line(progress: &Progress, what: &str) {
    let tty = std::io::stderr().is_terminal();
    let start = Instant::now();
    let mut last = (start, 0u64);
    let mut shown = false;
    while !progress.done.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
        if !tty || last.0.elapsed() < Duration::from_secs(1) {
            continue;
        }
        let now = Instant::now();
        let n = progress.records.load(Ordering::Relaxed);
        let rate = (n - last.1) as f64 / now.duration_since(last.0).as_secs_f64();
        let mb = progress.bytes.load(Ordering::Relaxed) as f64 / 1e6;
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r\x1b[2K{what} {n} records ({mb:.1} MB), {rate:.0} records/s now"
        );
        let _ = err.flush();
        shown = true;
        last = (now, n);
    }
    if shown {
        let _ = writeln!(std::io::stderr());
    }
}

/// Creates the topic with `partitions` partitions unless it exists; returns its partition count.
fn ensure_topic(common: &Common) -> anyhow::Result<i32> {
    let conn = &common.conn;
    if common.partitions < 1 {
        bail!("--partitions must be at least 1, got {}", common.partitions);
    }
    // librdkafka's in-process mock cluster (-X test.mock.num.brokers=N, the client-ceiling sink)
    // is per client instance and auto-creates topics on first use; there is nothing to create.
    if conn
        .properties
        .iter()
        .any(|p| p.starts_with("test.mock.num.brokers="))
    {
        return Ok(common.partitions);
    }
    let admin: rdkafka::admin::AdminClient<rdkafka::client::DefaultClientContext> =
        conn.create(&[("allow.auto.create.topics", "false")])?;
    let topic = NewTopic::new(&common.topic, common.partitions, TopicReplication::Fixed(1));
    let opts = rdkafka::admin::AdminOptions::new()
        .request_timeout(Some(conn.timeout()))
        .operation_timeout(Some(conn.timeout()));
    let results = block_on(admin.create_topics([&topic], &opts))?
        .map_err(|e| anyhow!("creating topic '{}': {}", common.topic, kafka_error(&e)))?;
    for r in results {
        if let Err((t, code)) = r {
            if code != RDKafkaErrorCode::TopicAlreadyExists {
                bail!("creating topic '{t}': {}", code_words(code));
            }
        }
    }
    // Wait (bounded) until the metadata shows every partition with a leader.
    let deadline = Instant::now() + conn.timeout();
    loop {
        let md = admin
            .inner()
            .fetch_metadata(Some(&common.topic), conn.timeout())
            .map_err(|e| anyhow!("topic '{}': {}", common.topic, kafka_error(&e)))?;
        if let Some(t) = md.topics().iter().find(|t| t.name() == common.topic) {
            let n = t.partitions().len();
            if t.error().is_none() && n > 0 && t.partitions().iter().all(|p| p.leader() >= 0) {
                return Ok(n as i32);
            }
        }
        if Instant::now() >= deadline {
            bail!(
                "topic '{}': partitions without a leader after {:?}",
                common.topic,
                conn.timeout()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Random upper-case letters (as kafka-producer-perf-test sends), from a fixed seed.
fn payload_pool(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            b'A' + (x % 26) as u8
        })
        .collect()
}

fn unix_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// A cheap monotonic clock in nanoseconds: on x86_64 the CPU's time-stamp counter scaled by a
/// rate calibrated against `Instant` over 20 ms, because `clock_gettime` is slow on VMs (it was
/// 22% of the producer's CPU in a profile here); elsewhere `Instant`.
#[derive(Clone, Copy)]
struct Clock {
    start: Instant,
    tsc0: u64,
    ns_per_tick: f64,
}

impl Clock {
    fn new() -> Clock {
        let start = Instant::now();
        let tsc0 = tsc();
        let mut ns_per_tick = 0.0;
        if tsc0 != 0 {
            std::thread::sleep(Duration::from_millis(20));
            let ticks = tsc().wrapping_sub(tsc0);
            let ns = start.elapsed().as_nanos() as f64;
            if ticks > 0 {
                ns_per_tick = ns / ticks as f64;
            }
        }
        Clock {
            start,
            tsc0,
            ns_per_tick,
        }
    }

    /// Nanoseconds since the clock was made.
    fn now_ns(&self) -> u64 {
        if self.ns_per_tick > 0.0 && self.ns_per_tick.is_finite() {
            (tsc().wrapping_sub(self.tsc0) as f64 * self.ns_per_tick) as u64
        } else {
            self.start.elapsed().as_nanos() as u64
        }
    }
}

/// The time-stamp counter (0 where there is none).
fn tsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        #[allow(unused_unsafe)]
        // SAFETY: RDTSC has no preconditions on x86_64.
        unsafe {
            core::arch::x86_64::_rdtsc()
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        0
    }
}

/// Delivery-report context: ack latency histogram and failures.
struct ProduceCtx {
    clock: Clock,
    hist: Mutex<Histogram<u64>>,
    acked: AtomicU64,
    failed: AtomicU64,
    first_error: Mutex<Option<String>>,
}

impl ClientContext for ProduceCtx {}

/// Records whose delivery report arrived so far (acknowledged or failed).
fn delivered(ctx: &ProduceCtx) -> u64 {
    ctx.acked.load(Ordering::Relaxed) + ctx.failed.load(Ordering::Relaxed)
}

impl ProducerContext for ProduceCtx {
    /// Send time in nanoseconds since `start`.
    type DeliveryOpaque = usize;

    fn delivery(&self, result: &DeliveryResult<'_>, sent_ns: usize) {
        match result {
            Ok(_) => {
                self.acked.fetch_add(1, Ordering::Relaxed);
                let now = self.clock.now_ns();
                let us = (now.saturating_sub(sent_ns as u64) / 1000).clamp(1, MAX_LATENCY_US);
                let mut h = self.hist.lock().unwrap_or_else(|p| p.into_inner());
                let _ = h.record(us);
            }
            Err((e, _)) => {
                self.failed.fetch_add(1, Ordering::Relaxed);
                let mut f = self.first_error.lock().unwrap_or_else(|p| p.into_inner());
                if f.is_none() {
                    *f = Some(kafka_error(e));
                }
            }
        }
    }
}

/// What one producer thread hands back.
struct WorkerResult {
    hist: Histogram<u64>,
    acked: u64,
    failed: u64,
    first_error: Option<String>,
}
