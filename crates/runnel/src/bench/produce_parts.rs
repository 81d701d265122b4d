//! Pieces of `runnel bench produce`'s loop: the producer's configuration, sending one record with
//! back-pressure on a full queue, and transaction pacing (`--txn-ms`: a transaction committed every N ms,
//! issue 15's "transactional produce" benchmark rows).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::bail;
use rdkafka::producer::{BaseProducer, Producer};
use rdkafka::types::RDKafkaErrorCode;

use super::{delivered, fast, Common, ProduceCtx, ProduceOpts};
use crate::client::{code_words, kafka_error, split_kv};

/// Distinguishes the transactional ids of one process's producers.
static NEXT_TXN_PRODUCER: AtomicU64 = AtomicU64::new(0);

/// The librdkafka configuration of one producer of `o` (with `--txn-ms`, a transactional id of its own).
pub(super) fn producer_config(o: &ProduceOpts) -> anyhow::Result<rdkafka::config::ClientConfig> {
    let conn = &o.common.conn;
    let acks = if o.acks == "-1" {
        "all"
    } else {
        o.acks.as_str()
    };
    let mut c = conn.client_config()?;
    c.set("client.id", "runnel-bench")
        .set("acks", acks)
        .set("compression.type", &o.compression)
        .set("linger.ms", o.linger_ms.to_string())
        .set("queue.buffering.max.messages", "1000000")
        .set("message.timeout.ms", "120000");
    if let Some(b) = o.batch_size {
        c.set("batch.size", b.to_string());
    }
    if o.txn_ms > 0 {
        if acks != "all" {
            bail!("--txn-ms needs --acks all (transactions are idempotent)");
        }
        let n = NEXT_TXN_PRODUCER.fetch_add(1, Ordering::Relaxed);
        let id = format!("runnel-bench-{}-{n}", std::process::id());
        // librdkafka needs message.timeout.ms <= transaction.timeout.ms.
        c.set("transactional.id", id)
            .set("transaction.timeout.ms", "120000");
    }
    for p in &conn.properties {
        let (k, v) = split_kv(p, "-X")?;
        c.set(k, v);
    }
    Ok(c)
}

/// Checks `--duration`: when given, finite, above 0 and at most [`super::MAX_DURATION_SECS`].
pub(super) fn check_duration(common: &Common) -> anyhow::Result<()> {
    match common.duration {
        Some(d) if !(d.is_finite() && d > 0.0 && d <= super::MAX_DURATION_SECS) => {
            bail!(
                "--duration must be a number of seconds above 0 and at most {}, got {d}",
                super::MAX_DURATION_SECS
            )
        }
        _ => Ok(()),
    }
}

/// Enqueues one record, polling while librdkafka's queue is full; fails when the queue stays full and no
/// record is delivered for `timeout` (the broker stopped acknowledging: librdkafka alone would wait out
/// `message.timeout.ms`). `sent` is how many records this producer sent before (for the message).
pub(super) fn send(
    handle: &fast::Topic,
    producer: &BaseProducer<ProduceCtx>,
    (value, opaque, partition): (&[u8], usize, i32),
    sent: u64,
    timeout: Duration,
) -> anyhow::Result<()> {
    let mut full_since: Option<(Instant, u64)> = None;
    loop {
        match handle.produce(value, opaque, partition) {
            Ok(()) => return Ok(()),
            Err(RDKafkaErrorCode::QueueFull) => {
                producer.poll(Duration::from_millis(1));
                let done = delivered(producer.context());
                match full_since {
                    Some((t, d)) if d == done => {
                        if t.elapsed() > timeout {
                            bail!(
                                "the broker stopped acknowledging: no record delivered within {timeout:?} ({done} of {sent} sent so far)"
                            );
                        }
                    }
                    _ => full_since = Some((Instant::now(), done)),
                }
            }
            Err(e) => bail!("producing: {}", code_words(e)),
        }
    }
}

/// `--txn-ms`: the open transaction of one producer, committed and a new one begun every `every`.
pub(super) struct TxnPacer {
    every: Option<Duration>,
    began: Instant,
    timeout: Duration,
}

impl TxnPacer {
    /// Without `--txn-ms` (0) a no-op; else initializes the producer's transactions and begins the first.
    pub(super) fn start(
        producer: &BaseProducer<ProduceCtx>,
        txn_ms: u64,
        timeout: Duration,
    ) -> anyhow::Result<TxnPacer> {
        let every = (txn_ms > 0).then(|| Duration::from_millis(txn_ms));
        if every.is_some() {
            producer
                .init_transactions(timeout)
                .map_err(|e| anyhow::anyhow!("init_transactions: {}", kafka_error(&e)))?;
            producer
                .begin_transaction()
                .map_err(|e| anyhow::anyhow!("begin_transaction: {}", kafka_error(&e)))?;
        }
        Ok(TxnPacer {
            every,
            began: Instant::now(),
            timeout,
        })
    }

    /// Commits and begins the next transaction once the current one is `--txn-ms` old.
    pub(super) fn tick(&mut self, producer: &BaseProducer<ProduceCtx>) -> anyhow::Result<()> {
        match self.every {
            Some(every) if self.began.elapsed() >= every => {
                self.commit(producer)?;
                producer
                    .begin_transaction()
                    .map_err(|e| anyhow::anyhow!("begin_transaction: {}", kafka_error(&e)))?;
                self.began = Instant::now();
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Commits the open transaction (at the end of the run).
    pub(super) fn commit(&mut self, producer: &BaseProducer<ProduceCtx>) -> anyhow::Result<()> {
        if self.every.is_some() {
            producer
                .commit_transaction(self.timeout)
                .map_err(|e| anyhow::anyhow!("commit_transaction: {}", kafka_error(&e)))?;
        }
        Ok(())
    }
}
