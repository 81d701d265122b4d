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

#[path = "bench_produce.rs"]
mod produce_parts;
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

/// `produce` and `end-to-end`.
fn produce(o: &ProduceOpts, e2e: bool) -> anyhow::Result<()> {
    let common = &o.common;
    let conn = &common.conn;
    if o.producers == 0 {
        bail!("--producers must be at least 1");
    }
    if o.producers > MAX_THREADS {
        bail!("--producers is at most {MAX_THREADS}, got {}", o.producers);
    }
    check_duration(common)?;
    if e2e && o.record_size < 8 {
        bail!("end-to-end needs --record-size of at least 8 (the embedded send time)");
    }
    if e2e && o.rate <= 0.0 {
        bail!("end-to-end needs --rate RECORDS_PER_SEC");
    }
    if !o.rate.is_finite() || o.rate < 0.0 {
        bail!("--rate must be a non-negative number");
    }
    if common.count.is_none() && common.duration.is_none() {
        bail!("give --count N or --duration SECS");
    }
    conn.preflight()?;
    let partitions = ensure_topic(common)?;
    let deadline_secs = common.duration;
    let count = common.count.unwrap_or(u64::MAX);
    let pool = payload_pool(o.record_size + 65_536);
    let progress = Progress::default();
    let mut e2e_hist = new_histogram()?;

    // end-to-end: a consumer positioned at the current ends before anything is sent.
    let consumer = if e2e {
        let c = assigned_consumer(
            conn,
            &common.topic,
            &(0..partitions).collect::<Vec<_>>(),
            true,
        )?;
        Some(c)
    } else {
        None
    };

    // Ctrl-C / SIGTERM end the run early with a report of what was done.
    let stop = crate::consume::stop_flag();
    let clock = Clock::new();
    let start = Instant::now();
    let barrier = std::sync::Barrier::new(o.producers + 1);
    let mut begin = start;
    let sent_total = AtomicU64::new(0);
    let producers_done = AtomicBool::new(false);
    let consumed_total = AtomicU64::new(0);
    let mut produce_hist = new_histogram()?;
    let mut failed = 0u64;
    let mut first_error = None;
    let mut acked = 0u64;
    let mut produce_end = start;
    std::thread::scope(|s| -> anyhow::Result<()> {
        let rate_thread =
            s.spawn(|| rate_line(&progress, if e2e { "delivered" } else { "produced" }));
        let consumer_thread = consumer.as_ref().map(|c| {
            let progress = &progress;
            let producers_done = &producers_done;
            let sent_total = &sent_total;
            let consumed_total = &consumed_total;
            s.spawn(move || -> anyhow::Result<Histogram<u64>> {
                let mut h = new_histogram()?;
                let mut batches = fast::Batches::new(c);
                let mut idle_since: Option<Instant> = None;
                loop {
                    let done = producers_done.load(Ordering::Acquire);
                    if done && consumed_total.load(Ordering::Relaxed) >= sent_total.load(Ordering::Relaxed)
                    {
                        break;
                    }
                    let got = batches.next(100, &mut |v, _| {
                        let now = unix_nanos();
                        if v.len() >= 8 {
                            let sent = u64::from_le_bytes(v[..8].try_into().unwrap_or([0; 8]));
                            let us = (now.saturating_sub(sent) / 1000).clamp(1, MAX_LATENCY_US);
                            let _ = h.record(us);
                        }
                        progress.bytes.fetch_add(v.len() as u64, Ordering::Relaxed);
                    });
                    match got {
                        Ok(0) => {
                            if done {
                                let t = *idle_since.get_or_insert_with(Instant::now);
                                if t.elapsed() > conn.timeout() {
                                    bail!(
                                        "end-to-end: {} of {} records arrived; nothing more within {:?}",
                                        consumed_total.load(Ordering::Relaxed),
                                        sent_total.load(Ordering::Relaxed),
                                        conn.timeout()
                                    );
                                }
                            }
                        }
                        Ok(k) => {
                            idle_since = None;
                            progress.records.fetch_add(k as u64, Ordering::Relaxed);
                            consumed_total.fetch_add(k as u64, Ordering::Relaxed);
                        }
                        Err(e) => bail!("consuming: {}", code_words(e)),
                    }
                }
                Ok(h)
            })
        });

        let mut workers = Vec::new();
        for id in 0..o.producers {
            let pool = &pool;
            let barrier = &barrier;
            let progress = &progress;
            let sent_total = &sent_total;
            let stop = &stop;
            workers.push(s.spawn(move || -> anyhow::Result<WorkerResult> {
                let ctx = ProduceCtx {
                    clock,
                    hist: Mutex::new(new_histogram()?),
                    acked: AtomicU64::new(0),
                    failed: AtomicU64::new(0),
                    first_error: Mutex::new(None),
                };
                // Connect and learn the topic's leaders before the clock starts.
                let setup = producer_config(o).and_then(|c| {
                    let p: BaseProducer<ProduceCtx> = c
                        .create_with_context(ctx)
                        .map_err(|e| anyhow!("creating the producer: {}", kafka_error(&e)))?;
                    let md = p
                        .client()
                        .fetch_metadata(Some(&common.topic), conn.timeout())
                        .map_err(|e| anyhow!("topic '{}': {}", common.topic, kafka_error(&e)))?;
                    let parts = md.topics().first().map_or(0, |t| t.partitions().len()) as i32;
                    Ok((p, parts))
                });
                barrier.wait();
                let (producer, parts) = setup?;
                let handle = fast::Topic::new(&producer, &common.topic)?;
                let mut txn = TxnPacer::start(&producer, o.txn_ms, conn.timeout())?;
                let report_sent = |n: u64| {
                    sent_total.fetch_add(n, Ordering::Relaxed);
                    if !e2e {
                        progress.records.fetch_add(n, Ordering::Relaxed);
                        progress
                            .bytes
                            .fetch_add(n * o.record_size as u64, Ordering::Relaxed);
                    }
                };
                let begin_ns = clock.now_ns();
                // This thread's share of the count and of the rate.
                let n = o.producers as u64;
                let my_count = if count == u64::MAX {
                    u64::MAX
                } else {
                    count / n + u64::from((id as u64) < count % n)
                };
                let my_rate = o.rate / n as f64;
                let mut i = 0u64;
                // Counters shared with the rate line and the end-to-end consumer are advanced in
                // steps, not per record (flushed at the end).
                let mut unreported = 0u64;
                let mut off = (id * 7919) % 65_536;
                while i < my_count {
                    if i & 255 == 0 && stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let now_ns = clock.now_ns();
                    let elapsed = Duration::from_nanos(now_ns.saturating_sub(begin_ns));
                    if let Some(d) = deadline_secs {
                        if elapsed.as_secs_f64() >= d {
                            break;
                        }
                    }
                    if my_rate > 0.0 {
                        let due = (elapsed.as_secs_f64() * my_rate) as u64;
                        if i >= due {
                            producer.poll(Duration::ZERO);
                            let wait = (i + 1) as f64 / my_rate - elapsed.as_secs_f64();
                            std::thread::sleep(Duration::from_secs_f64(wait.clamp(0.0, 0.001)));
                            continue;
                        }
                    }
                    let mut value_buf;
                    let value: &[u8] = if e2e {
                        value_buf = pool[off..off + o.record_size].to_vec();
                        value_buf[..8].copy_from_slice(&unix_nanos().to_le_bytes());
                        &value_buf
                    } else {
                        &pool[off..off + o.record_size]
                    };
                    off = (off + 97) % 65_536;
                    let sent_ns = now_ns as usize;
                    // As the sticky partitioner does, but without its per-record cost: runs of
                    // PARTITION_RUN records per partition, each producer starting elsewhere.
                    let partition = if parts > 0 {
                        ((i / PARTITION_RUN + id as u64) % parts as u64) as i32
                    } else {
                        -1
                    };
                    let record = (value, sent_ns, partition);
                    produce_parts::send(&handle, &producer, record, i, conn.timeout())?;
                    txn.tick(&producer)?;
                    i += 1;
                    unreported += 1;
                    if e2e || unreported == 256 {
                        report_sent(unreported);
                        unreported = 0;
                    }
                    if i & 1023 == 0 {
                        producer.poll(Duration::ZERO);
                    }
                }
                report_sent(unreported);
                txn.commit(&producer)?;
                drop(handle);
                // Flush in steps; give up when nothing more is delivered for --timeout (a stalled broker),
                // not after librdkafka's message.timeout.ms.
                let mut last = (Instant::now(), delivered(producer.context()));
                while producer.in_flight_count() > 0 {
                    let _ = producer.flush(Duration::from_millis(200));
                    let done = delivered(producer.context());
                    if done != last.1 {
                        last = (Instant::now(), done);
                    } else if last.0.elapsed() > conn.timeout() {
                        bail!(
                            "the broker stopped acknowledging: {} records outstanding, none delivered within {:?}",
                            producer.in_flight_count(),
                            conn.timeout()
                        );
                    }
                }
                // Run the last delivery callbacks.
                producer.poll(Duration::ZERO);
                let ctx = producer.context();
                let hist = ctx.hist.lock().unwrap_or_else(|p| p.into_inner()).clone();
                let first = ctx
                    .first_error
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone();
                let out = WorkerResult {
                    hist,
                    acked: ctx.acked.load(Ordering::Relaxed),
                    failed: ctx.failed.load(Ordering::Relaxed),
                    first_error: first,
                };
                Ok(out)
            }));
        }
        barrier.wait();
        begin = Instant::now();
        let mut result = Ok(());
        for w in workers {
            match w.join() {
                Ok(Ok(w)) => {
                    let _ = produce_hist.add(&w.hist);
                    acked += w.acked;
                    failed += w.failed;
                    if first_error.is_none() {
                        first_error = w.first_error;
                    }
                }
                Ok(Err(e)) => result = Err(e),
                Err(_) => result = Err(anyhow!("a producer thread panicked")),
            }
        }
        produce_end = Instant::now();
        producers_done.store(true, Ordering::Release);
        if result.is_err() {
            // Let the consumer stop: pretend everything arrived.
            sent_total.store(0, Ordering::Relaxed);
        }
        if let Some(t) = consumer_thread {
            match t.join() {
                Ok(Ok(h)) => e2e_hist = h,
                Ok(Err(e)) => result = result.and(Err(e)),
                Err(_) => result = result.and(Err(anyhow!("the consumer thread panicked"))),
            }
        }
        progress.done.store(true, Ordering::Relaxed);
        let _ = rate_thread.join();
        result
    })?;
    if failed > 0 {
        bail!(
            "{failed} records failed delivery (first: {})",
            first_error.unwrap_or_default()
        );
    }
    let secs = produce_end.duration_since(begin).as_secs_f64();
    let records = if e2e {
        consumed_total.load(Ordering::Relaxed)
    } else {
        acked
    };
    let v = json!({
        "mode": if e2e { "end-to-end" } else { "produce" },
        "bootstrap": conn.bootstrap,
        "topic": common.topic,
        "partitions": partitions,
        "record_size": o.record_size,
        "producers": o.producers,
        "acks": o.acks,
        "compression": o.compression,
        "linger_ms": o.linger_ms,
        "batch_size": o.batch_size,
        "target_rate": o.rate,
        "produce_latency_ms": latency_json(&produce_hist),
    });
    let hist = if e2e { &e2e_hist } else { &produce_hist };
    report(conn, v, records, records * o.record_size as u64, secs, hist);
    Ok(())
}

/// A consumer (no group membership) assigned `partitions` of `topic`, from the beginning or, with
/// `at_end`, from the current high watermarks.
fn assigned_consumer(
    conn: &ConnArgs,
    topic: &str,
    partitions: &[i32],
    at_end: bool,
) -> anyhow::Result<BaseConsumer<DefaultConsumerContext>> {
    let group = format!("runnel-bench-{}", std::process::id());
    let consumer: BaseConsumer<DefaultConsumerContext> = conn.create(&[
        ("client.id", "runnel-bench"),
        ("group.id", &group),
        ("enable.auto.commit", "false"),
        ("enable.auto.offset.store", "false"),
        ("enable.partition.eof", "false"),
        ("fetch.wait.max.ms", "100"),
        // As rdkafka_performance: keep a deep prefetch queue so fetches stay pipelined.
        ("queued.min.messages", "1000000"),
    ])?;
    let mut tpl = TopicPartitionList::new();
    for &p in partitions {
        let offset = if at_end {
            let (_, high) = consumer
                .fetch_watermarks(topic, p, conn.timeout())
                .map_err(|e| anyhow!("topic '{topic}' partition {p}: {}", kafka_error(&e)))?;
            Offset::Offset(high)
        } else {
            Offset::Beginning
        };
        tpl.add_partition_offset(topic, p, offset)
            .map_err(|e| anyhow!("{}", kafka_error(&e)))?;
    }
    consumer
        .assign(&tpl)
        .map_err(|e| anyhow!("assigning topic '{topic}': {}", kafka_error(&e)))?;
    Ok(consumer)
}

/// `consume`.
fn consume(o: &ConsumeOpts) -> anyhow::Result<()> {
    let common = &o.common;
    let conn = &common.conn;
    if o.consumers == 0 {
        bail!("--consumers must be at least 1");
    }
    if o.consumers > MAX_THREADS {
        bail!("--consumers is at most {MAX_THREADS}, got {}", o.consumers);
    }
    check_duration(common)?;
    conn.preflight()?;
    let partitions = ensure_topic(common)?;
    // What there is to read: the sum over partitions of high - low at start.
    let probe = assigned_consumer(conn, &common.topic, &[], false)?;
    let mut available = 0u64;
    for p in 0..partitions {
        let (low, high) = probe
            .fetch_watermarks(&common.topic, p, conn.timeout())
            .with_context(|| format!("topic '{}' partition {p}", common.topic))?;
        available += (high - low).max(0) as u64;
    }
    drop(probe);
    let target = common.count.map_or(available, |c| c.min(available));
    let consumers = o.consumers.min(partitions as usize);
    let mut shares: Vec<Vec<i32>> = vec![Vec::new(); consumers];
    for p in 0..partitions {
        shares[p as usize % consumers].push(p);
    }
    let clients: Vec<_> = shares
        .iter()
        .map(|ps| assigned_consumer(conn, &common.topic, ps, false))
        .collect::<Result<_, _>>()?;
    let progress = Progress::default();
    let deadline = common
        .duration
        .map(Duration::try_from_secs_f64)
        .transpose()
        .map_err(|e| anyhow!("--duration: {e}"))?;
    // Ctrl-C / SIGTERM end the run early with a report of what was done.
    let stop = crate::consume::stop_flag();
    let start = Instant::now();
    let total = AtomicU64::new(0);
    let total_bytes = AtomicU64::new(0);
    // Nanoseconds after `start` of the first record (the clock starts there, as rdkafka_performance's).
    let first_ns = AtomicU64::new(u64::MAX);
    std::thread::scope(|s| -> anyhow::Result<()> {
        let rate_thread = s.spawn(|| rate_line(&progress, "consumed"));
        let workers: Vec<_> = clients
            .iter()
            .map(|c| {
                let (progress, total, total_bytes, first_ns, stop) =
                    (&progress, &total, &total_bytes, &first_ns, &stop);
                s.spawn(move || -> anyhow::Result<()> {
                    let mut batches = fast::Batches::new(c);
                    let mut last_data = Instant::now();
                    let (mut n, mut b) = (0u64, 0u64);
                    loop {
                        if total.load(Ordering::Relaxed) >= target {
                            break;
                        }
                        if deadline.is_some_and(|d| start.elapsed() >= d)
                            || stop.load(Ordering::Relaxed)
                        {
                            break;
                        }
                        // Count no more than is left of the target (-n N): a batch may run past it.
                        let budget = target.saturating_sub(total.load(Ordering::Relaxed));
                        let (mut bytes, mut taken) = (0u64, 0u64);
                        let got = batches.next(100, &mut |v, key_len| {
                            if taken < budget {
                                taken += 1;
                                bytes += (v.len() + key_len) as u64;
                            }
                        });
                        match got {
                            Ok(0) => {
                                if last_data.elapsed() > conn.timeout() {
                                    bail!(
                                        "consumed {} of {target} records; nothing more within {:?}",
                                        total.load(Ordering::Relaxed),
                                        conn.timeout()
                                    );
                                }
                            }
                            Ok(_) => {
                                last_data = Instant::now();
                                if n == 0 {
                                    first_ns.fetch_min(
                                        start.elapsed().as_nanos() as u64,
                                        Ordering::Relaxed,
                                    );
                                }
                                n += taken;
                                b += bytes;
                                total.fetch_add(taken, Ordering::Relaxed);
                                progress.records.fetch_add(taken, Ordering::Relaxed);
                                progress.bytes.fetch_add(bytes, Ordering::Relaxed);
                            }
                            Err(e) => bail!("consuming: {}", code_words(e)),
                        }
                    }
                    total_bytes.fetch_add(b, Ordering::Relaxed);
                    Ok(())
                })
            })
            .collect();
        let mut result = Ok(());
        for w in workers {
            match w.join() {
                Ok(r) => result = result.and(r),
                Err(_) => result = Err(anyhow!("a consumer thread panicked")),
            }
        }
        progress.done.store(true, Ordering::Relaxed);
        let _ = rate_thread.join();
        result
    })?;
    let end_ns = start.elapsed().as_nanos() as u64;
    let first = first_ns.load(Ordering::Relaxed).min(end_ns);
    let secs = (end_ns - first) as f64 / 1e9;
    let v = json!({
        "mode": "consume",
        "first_record_ms": first as f64 / 1e6,
        "bootstrap": conn.bootstrap,
        "topic": common.topic,
        "partitions": partitions,
        "consumers": consumers,
    });
    report(
        conn,
        v,
        // Several consumers may each take the last of the budget at once.
        total.load(Ordering::Relaxed).min(target),
        total_bytes.load(Ordering::Relaxed),
        secs,
        &new_histogram()?,
    );
    Ok(())
}

/// librdkafka's fast paths, which rust-rdkafka's safe API does not expose: producing through a
/// topic handle (no per-record topic-name copy) and consuming through a queue callback (no per-record
/// event dispatch), as `rdkafka_performance` does. Without them the load generator, not the
/// broker, was the bottleneck (≈2–5× slower than rdkafka_performance on the same broker).
mod fast {
    use std::ffi::{c_void, CString};
    use std::ptr;

    use rdkafka::bindings as rd;
    use rdkafka::consumer::{BaseConsumer, Consumer, DefaultConsumerContext};
    use rdkafka::producer::{BaseProducer, Producer, ProducerContext};
    use rdkafka::types::RDKafkaErrorCode;

    /// A librdkafka topic handle of one producer.
    pub struct Topic {
        rkt: *mut rd::rd_kafka_topic_t,
    }

    impl Topic {
        /// A handle for `topic` on `producer`; it must not outlive the producer.
        pub fn new<C: ProducerContext>(
            producer: &BaseProducer<C>,
            topic: &str,
        ) -> anyhow::Result<Topic> {
            let name = CString::new(topic)?;
            // SAFETY: the client pointer is valid for the producer's life; a null conf is allowed.
            let rkt = unsafe {
                rd::rd_kafka_topic_new(
                    producer.client().native_ptr(),
                    name.as_ptr(),
                    ptr::null_mut(),
                )
            };
            if rkt.is_null() {
                anyhow::bail!("creating a topic handle for '{topic}'");
            }
            Ok(Topic { rkt })
        }

        /// Enqueues a copy of `value` (no key) to `partition` (−1: the partitioner's choice) with
        /// `opaque` as the delivery opaque (what rust-rdkafka hands to `ProducerContext::delivery`
        /// as a `usize`). Returns the error code when librdkafka refuses it (e.g. `QueueFull`).
        pub fn produce(
            &self,
            value: &[u8],
            opaque: usize,
            partition: i32,
        ) -> Result<(), RDKafkaErrorCode> {
            // SAFETY: `rkt` is valid; F_COPY makes librdkafka copy `value` before returning.
            let r = unsafe {
                rd::rd_kafka_produce(
                    self.rkt,
                    partition,
                    rd::RD_KAFKA_MSG_F_COPY,
                    value.as_ptr() as *mut c_void,
                    value.len(),
                    ptr::null(),
                    0,
                    opaque as *mut c_void,
                )
            };
            if r == 0 {
                Ok(())
            } else {
                // SAFETY: reads librdkafka's thread-local last error.
                Err(unsafe { rd::rd_kafka_last_error() }.into())
            }
        }
    }

    impl Drop for Topic {
        fn drop(&mut self) {
            // SAFETY: created by rd_kafka_topic_new, destroyed once.
            unsafe { rd::rd_kafka_topic_destroy(self.rkt) }
        }
    }

    /// The consumer queue of one consumer, read in batches.
    pub struct Batches<'a> {
        _consumer: &'a BaseConsumer<DefaultConsumerContext>,
        queue: *mut rd::rd_kafka_queue_t,
    }

    impl<'a> Batches<'a> {
        /// The consumer's queue (where its assigned partitions' messages arrive).
        pub fn new(consumer: &'a BaseConsumer<DefaultConsumerContext>) -> Batches<'a> {
            // SAFETY: the client pointer is valid while `consumer` is borrowed.
            let queue = unsafe { rd::rd_kafka_queue_get_consumer(consumer.client().native_ptr()) };
            Batches {
                _consumer: consumer,
                queue,
            }
        }

        /// Waits up to `timeout_ms` for the first message, then calls `f(value, key_len)` for
        /// every record already queued (rd_kafka_consume_callback_queue: it does not wait for a
        /// batch to fill, so delivery latency is not inflated); returns how many records were
        /// seen, or the first error.
        pub fn next(
            &mut self,
            timeout_ms: i32,
            f: &mut dyn FnMut(&[u8], usize),
        ) -> Result<usize, RDKafkaErrorCode> {
            if self.queue.is_null() {
                return Err(RDKafkaErrorCode::InvalidArgument);
            }
            let mut state = CallbackState {
                f,
                seen: 0,
                error: None,
            };
            // SAFETY: `state` outlives the call; `on_message` only runs during it.
            let r = unsafe {
                rd::rd_kafka_consume_callback_queue(
                    self.queue,
                    timeout_ms,
                    Some(on_message),
                    &mut state as *mut CallbackState<'_> as *mut c_void,
                )
            };
            if r < 0 {
                // SAFETY: reads librdkafka's thread-local last error.
                return Err(unsafe { rd::rd_kafka_last_error() }.into());
            }
            match state.error {
                Some(e) => Err(e),
                None => Ok(state.seen),
            }
        }
    }

    struct CallbackState<'f> {
        f: &'f mut dyn FnMut(&[u8], usize),
        seen: usize,
        error: Option<RDKafkaErrorCode>,
    }

    /// librdkafka's per-message callback; the message is destroyed by librdkafka afterwards.
    unsafe extern "C" fn on_message(m: *mut rd::rd_kafka_message_t, opaque: *mut c_void) {
        // SAFETY: `opaque` is the `CallbackState` passed by `Batches::next`, alive for the call;
        // `m` is a valid message for the duration of the callback.
        let (state, msg) = unsafe { (&mut *(opaque as *mut CallbackState<'_>), &*m) };
        if msg.err == rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR {
            let value = if msg.payload.is_null() {
                &[][..]
            } else {
                // SAFETY: payload points at `len` bytes owned by the message.
                unsafe { std::slice::from_raw_parts(msg.payload as *const u8, msg.len) }
            };
            (state.f)(value, msg.key_len);
            state.seen += 1;
        } else if msg.err != rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR__PARTITION_EOF
            && state.error.is_none()
        {
            state.error = Some(msg.err.into());
        }
    }

    impl Drop for Batches<'_> {
        fn drop(&mut self) {
            if !self.queue.is_null() {
                // SAFETY: obtained from rd_kafka_queue_get_consumer, destroyed once.
                unsafe { rd::rd_kafka_queue_destroy(self.queue) }
            }
        }
    }
}
