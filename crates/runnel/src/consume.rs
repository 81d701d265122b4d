//! `runnel consume TOPIC`: records to stdout through rdkafka's consumer (`--share-group`: [`crate::share_consume`]).
//!
//! Without `--group` the consumer assigns itself the partitions (all, or `--partition P`) at the
//! chosen start (`--from-beginning`, `--offset N`, `--offset -N` for the last N per partition,
//! `--from-timestamp T`, default: the end). With `--group G` it joins the group (Kafka's group
//! protocol), starts from the group's committed offsets (or, with none, the end — the beginning with
//! `--from-beginning`) and commits what it printed. Without `--follow` it stops once every
//! partition it consumes has reached its end; `--max-messages N` stops after N records.
//!
//! Text output prints the value per line, preceded (tab-separated, as Kafka's console consumer) by
//! the fields asked for with `--print-*`. `--format json` prints one object per record:
//! `{"topic","partition","offset","timestamp","timestamp_type","key","value","headers"}` with
//! headers as `[[key, value], ...]`; bytes that are not UTF-8 are replaced by U+FFFD there.

use std::collections::BTreeSet;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail};
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{BorrowedMessage, Headers, Message};
use rdkafka::{Offset, Timestamp, TopicPartitionList};
use serde_json::{json, Value};

use crate::client::{code_words, kafka_error, parse_timestamp, ConnArgs, RateLine};

/// How long a group consumer without `--follow` waits for its first partition assignment.
const JOIN_TIMEOUT: Duration = Duration::from_secs(30);

/// `runnel consume ...`
#[derive(clap::Args, Debug)]
pub struct ConsumeArgs {
    #[command(flatten)]
    pub(crate) conn: ConnArgs,
    /// Topic to consume.
    #[arg(required_unless_present = "topic_flag", conflicts_with = "topic_flag")]
    topic: Option<String>,
    /// Topic to consume (the same as the positional TOPIC).
    #[arg(long = "topic", short = 't', value_name = "TOPIC")]
    topic_flag: Option<String>,
    /// Consume as a member of this consumer group, committing offsets.
    #[arg(long, short = 'g', conflicts_with = "share_group")]
    group: Option<String>,
    /// Consume as a member of this share group (KIP-932): records are acquired, printed and acknowledged
    /// with --ack; runs until --max-messages or Ctrl-C.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["from_beginning", "offset", "from_timestamp", "partition", "follow"])]
    share_group: Option<String>,
    /// With --share-group: how printed records are acknowledged.
    #[arg(long, default_value = "accept", value_parser = ["accept", "release", "reject"], requires = "share_group")]
    pub(crate) ack: String,
    /// Start at the earliest offset (with --group: when the group has no committed offset).
    #[arg(long, conflicts_with_all = ["offset", "from_timestamp"])]
    from_beginning: bool,
    /// Start at this offset; -N starts N records before the end of each partition.
    #[arg(long, short = 'o', allow_hyphen_values = true, conflicts_with_all = ["group", "from_timestamp"])]
    offset: Option<i64>,
    /// Start at the first record with a timestamp at or after T (epoch ms or YYYY-MM-DDTHH:MM:SSZ).
    #[arg(long, value_name = "T", conflicts_with = "group")]
    from_timestamp: Option<String>,
    /// Consume only this partition.
    #[arg(long, short = 'p', conflicts_with = "group")]
    partition: Option<i32>,
    /// Stop after this many records.
    #[arg(long, short = 'n', value_name = "N")]
    pub(crate) max_messages: Option<u64>,
    /// Keep waiting for new records instead of stopping at the end.
    #[arg(long, short = 'F')]
    follow: bool,
    /// Output format: text or json (--json is the same as --format json).
    #[arg(long, short = 'f', default_value = "text", value_parser = ["text", "json"])]
    pub(crate) format: String,
    /// Text output: print the key.
    #[arg(long)]
    pub(crate) print_key: bool,
    /// Text output: print the headers as k1:v1,k2:v2.
    #[arg(long)]
    pub(crate) print_headers: bool,
    /// Text output: print the partition.
    #[arg(long)]
    pub(crate) print_partition: bool,
    /// Text output: print the offset.
    #[arg(long)]
    pub(crate) print_offset: bool,
    /// Text output: print the timestamp (CreateTime:ms or LogAppendTime:ms).
    #[arg(long)]
    pub(crate) print_timestamp: bool,
    /// Text output: separator between the printed fields, key and value.
    #[arg(long, short = 'K', value_name = "SEP", default_value = "\t")]
    pub(crate) key_separator: String,
}

fn lossy(b: Option<&[u8]>) -> Value {
    match b {
        Some(b) => Value::String(String::from_utf8_lossy(b).into_owned()),
        None => Value::Null,
    }
}

fn format_json(m: &BorrowedMessage<'_>) -> Vec<u8> {
    let (ts, ts_type) = match m.timestamp() {
        Timestamp::NotAvailable => (Value::Null, Value::Null),
        Timestamp::CreateTime(t) => (json!(t), json!("CreateTime")),
        Timestamp::LogAppendTime(t) => (json!(t), json!("LogAppendTime")),
    };
    let headers: Vec<Value> = m
        .headers()
        .map(|h| h.iter().map(|h| json!([h.key, lossy(h.value)])).collect())
        .unwrap_or_default();
    let v = json!({
        "topic": m.topic(),
        "partition": m.partition(),
        "offset": m.offset(),
        "timestamp": ts,
        "timestamp_type": ts_type,
        "key": lossy(m.key()),
        "value": lossy(m.payload()),
        "headers": headers,
    });
    let mut out = serde_json::to_vec(&v).unwrap_or_default();
    out.push(b'\n');
    out
}

fn format_text(a: &ConsumeArgs, m: &BorrowedMessage<'_>) -> Vec<u8> {
    let sep = a.key_separator.as_bytes();
    let mut out = Vec::new();
    let field = |out: &mut Vec<u8>, bytes: &[u8]| {
        out.extend_from_slice(bytes);
        out.extend_from_slice(sep);
    };
    if a.print_timestamp {
        let t = match m.timestamp() {
            Timestamp::NotAvailable => "NO_TIMESTAMP".to_string(),
            Timestamp::CreateTime(t) => format!("CreateTime:{t}"),
            Timestamp::LogAppendTime(t) => format!("LogAppendTime:{t}"),
        };
        field(&mut out, t.as_bytes());
    }
    if a.print_partition {
        field(&mut out, format!("Partition:{}", m.partition()).as_bytes());
    }
    if a.print_offset {
        field(&mut out, format!("Offset:{}", m.offset()).as_bytes());
    }
    if a.print_headers {
        let mut hs = Vec::new();
        if let Some(h) = m.headers() {
            for (i, h) in h.iter().enumerate() {
                if i > 0 {
                    hs.push(b',');
                }
                hs.extend_from_slice(h.key.as_bytes());
                hs.push(b':');
                hs.extend_from_slice(h.value.unwrap_or(b"null"));
            }
        }
        if hs.is_empty() {
            hs.extend_from_slice(b"NO_HEADERS");
        }
        field(&mut out, &hs);
    }
    if a.print_key {
        field(&mut out, m.key().unwrap_or(b"null"));
    }
    out.extend_from_slice(m.payload().unwrap_or(b"null"));
    out.push(b'\n');
    out
}

/// Sets the returned flag on SIGINT/SIGTERM so the consumer can commit and leave its group (and `bench`
/// can report what it did). The handlers are installed before this returns (bounded wait of 1 s).
pub(crate) fn stop_flag() -> Arc<AtomicBool> {
    use tokio::signal::unix::{signal, SignalKind};
    let flag = Arc::new(AtomicBool::new(false));
    let f = flag.clone();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        rt.block_on(async {
            let (Ok(mut int), Ok(mut term)) = (
                signal(SignalKind::interrupt()),
                signal(SignalKind::terminate()),
            ) else {
                return;
            };
            let _ = ready_tx.send(());
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
            f.store(true, Ordering::SeqCst);
        });
    });
    let _ = ready_rx.recv_timeout(std::time::Duration::from_secs(1));
    flag
}

/// Runs `runnel consume`: a share consumer with `--share-group`, else rdkafka's consumer.
pub fn run(args: ConsumeArgs) -> anyhow::Result<()> {
    let Some(topic) = args.topic.as_deref().or(args.topic_flag.as_deref()) else {
        bail!("say which topic: TOPIC or --topic TOPIC");
    };
    match &args.share_group {
        Some(g) => crate::share_consume::run(&args, g, topic),
        None => consume_records(&args, topic),
    }
}

/// Consumes `topic` with rdkafka's consumer (assigned partitions, or a member of `--group`).
fn consume_records(args: &ConsumeArgs, topic: &str) -> anyhow::Result<()> {
    let conn = &args.conn;
    let timeout = conn.timeout();
    let mut extra: Vec<(&str, &str)> = vec![
        ("enable.partition.eof", "true"),
        ("allow.auto.create.topics", "false"),
        (
            "auto.offset.reset",
            if args.from_beginning {
                "earliest"
            } else {
                "latest"
            },
        ),
    ];
    if let Some(g) = &args.group {
        extra.extend([
            ("group.id", g.as_str()),
            ("enable.auto.commit", "true"),
            ("auto.commit.interval.ms", "1000"),
            ("enable.auto.offset.store", "false"),
        ]);
    } else {
        extra.extend([
            ("group.id", "runnel-cli-unused"),
            ("enable.auto.commit", "false"),
        ]);
    }
    let consumer: BaseConsumer = conn.create(&extra)?;

    // The topic must exist; its partitions are validated here for assign mode.
    let md = consumer
        .fetch_metadata(Some(topic), timeout)
        .map_err(|e| anyhow!("topic '{topic}': {}", kafka_error(&e)))?;
    let t = md
        .topics()
        .iter()
        .find(|t| t.name() == topic)
        .ok_or_else(|| anyhow!("topic '{topic}': not in the broker's metadata response"))?;
    if let Some(e) = t.error() {
        bail!("topic '{topic}': {}", code_words(e.into()));
    }
    let mut all: Vec<i32> = t.partitions().iter().map(|p| p.id()).collect();
    all.sort_unstable();

    if let Some(g) = &args.group {
        consumer.subscribe(&[topic]).map_err(|e| {
            anyhow!(
                "subscribing group '{g}' to topic '{topic}': {}",
                kafka_error(&e)
            )
        })?;
    } else {
        let parts: Vec<i32> = match args.partition {
            Some(p) if all.contains(&p) => vec![p],
            Some(p) => bail!(
                "topic '{topic}' partition {p} does not exist (the topic has {} partitions)",
                all.len()
            ),
            None => all.clone(),
        };
        let start = if args.from_beginning {
            Offset::Beginning
        } else {
            match args.offset {
                Some(n) if n >= 0 => Offset::Offset(n),
                Some(n) => Offset::OffsetTail(n.checked_neg().unwrap_or(i64::MAX)),
                None => Offset::End,
            }
        };
        let mut tpl = TopicPartitionList::new();
        for p in &parts {
            tpl.add_partition_offset(topic, *p, start)?;
        }
        if let Some(ts) = &args.from_timestamp {
            let ts = parse_timestamp(ts)?;
            let mut q = TopicPartitionList::new();
            for p in &parts {
                q.add_partition_offset(topic, *p, Offset::Offset(ts))?;
            }
            let found = consumer.offsets_for_times(q, timeout).map_err(|e| {
                anyhow!(
                    "looking up offsets of topic '{topic}' for timestamp {ts}: {}",
                    kafka_error(&e)
                )
            })?;
            for el in found.elements() {
                if let Err(e) = el.error() {
                    bail!(
                        "topic '{topic}' partition {}: offset for timestamp {ts}: {}",
                        el.partition(),
                        kafka_error(&e)
                    );
                }
                let off = match el.offset() {
                    Offset::Offset(o) if o >= 0 => Offset::Offset(o),
                    _ => Offset::End,
                };
                tpl.set_partition_offset(topic, el.partition(), off)?;
            }
        }
        consumer
            .assign(&tpl)
            .map_err(|e| anyhow!("assigning topic '{topic}': {}", kafka_error(&e)))?;
    }

    let stop = stop_flag();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut rate = RateLine::new("consumed");
    let mut eof: BTreeSet<i32> = BTreeSet::new();
    let mut count = 0u64;
    let started = Instant::now();
    let max = args.max_messages.unwrap_or(u64::MAX);
    let json = args.format == "json" || conn.json;
    let mut broken_pipe = false;
    let mut result = Ok(());
    while count < max && !stop.load(Ordering::SeqCst) {
        match consumer.poll(Duration::from_millis(200)) {
            None => {
                if out.flush().is_err() {
                    broken_pipe = true;
                    break;
                }
            }
            Some(Ok(m)) => {
                eof.remove(&m.partition());
                let bytes = if json {
                    format_json(&m)
                } else {
                    format_text(args, &m)
                };
                if let Err(e) = out.write_all(&bytes) {
                    if e.kind() == std::io::ErrorKind::BrokenPipe {
                        broken_pipe = true;
                        break;
                    }
                    result = Err(anyhow!("writing stdout: {e}"));
                    break;
                }
                if args.group.is_some() {
                    if let Err(e) = consumer.store_offset_from_message(&m) {
                        // Happens when the partition was revoked meanwhile; the next owner re-reads it.
                        tracing::debug!("storing offset: {e}");
                    }
                }
                count += 1;
                rate.tick(m.payload_len() + m.key().map_or(0, <[u8]>::len));
                continue;
            }
            Some(Err(KafkaError::PartitionEOF(p))) => {
                eof.insert(p);
            }
            Some(Err(e)) => {
                let what = match &args.group {
                    Some(g) => format!("consuming topic '{topic}' in group '{g}'"),
                    None => format!("consuming topic '{topic}'"),
                };
                if let Some(code) = e.rdkafka_error_code() {
                    // Transient conditions librdkafka recovers from by itself.
                    use rdkafka::types::RDKafkaErrorCode as C;
                    if matches!(
                        code,
                        C::BrokerTransportFailure | C::AllBrokersDown | C::OperationTimedOut
                    ) && args.follow
                    {
                        eprintln!("runnel: warning: {what}: {}", kafka_error(&e));
                        continue;
                    }
                }
                result = Err(anyhow!("{what}: {}", kafka_error(&e)));
                break;
            }
        }
        if !args.follow {
            let assigned: BTreeSet<i32> = match consumer.assignment() {
                Ok(tpl) => tpl
                    .elements()
                    .iter()
                    .filter(|e| e.topic() == topic)
                    .map(|e| e.partition())
                    .collect(),
                Err(_) => BTreeSet::new(),
            };
            if !assigned.is_empty() && assigned.is_subset(&eof) {
                break;
            }
            if assigned.is_empty() && started.elapsed() > JOIN_TIMEOUT + timeout {
                result = Err(match &args.group {
                    Some(g) => anyhow!(
                        "no partition of topic '{topic}' was assigned to this member of group '{g}' within {:?}",
                        JOIN_TIMEOUT + timeout
                    ),
                    None => anyhow!("topic '{topic}': no partition assigned"),
                });
                break;
            }
        }
    }
    let _ = out.flush();
    drop(out);
    rate.finish();
    if let Some(g) = &args.group {
        if count > 0 {
            if let Err(e) = consumer.commit_consumer_state(CommitMode::Sync) {
                if !matches!(
                    e.rdkafka_error_code(),
                    Some(rdkafka::types::RDKafkaErrorCode::NoOffset)
                ) {
                    let err = anyhow!("committing offsets of group '{g}': {}", kafka_error(&e));
                    if result.is_ok() {
                        result = Err(err);
                    }
                }
            }
        }
    }
    let _ = broken_pipe;
    result
}
