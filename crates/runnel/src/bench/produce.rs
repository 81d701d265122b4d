//! `runnel bench produce|end-to-end`: the run — producer threads, the end-to-end consumer thread, the
//! report.

use super::*;

/// `produce` and `end-to-end`.
pub(super) fn produce(o: &ProduceOpts, e2e: bool) -> anyhow::Result<()> {
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
    let shared = WorkerShared {
        o,
        e2e,
        count,
        deadline_secs,
        pool: &pool,
        barrier: &barrier,
        progress: &progress,
        sent_total: &sent_total,
        stop: &stop,
        clock,
    };
    let shared = &shared;
    std::thread::scope(|s| -> anyhow::Result<()> {
        let rate_thread =
            s.spawn(|| rate_line(&progress, if e2e { "delivered" } else { "produced" }));
        let consumer_thread = consumer.as_ref().map(|c| {
            let progress = &progress;
            let producers_done = &producers_done;
            let sent_total = &sent_total;
            let consumed_total = &consumed_total;
            s.spawn(move || {
                e2e_consume(
                    c,
                    conn,
                    progress,
                    producers_done,
                    sent_total,
                    consumed_total,
                )
            })
        });

        let workers: Vec<_> = (0..o.producers)
            .map(|id| s.spawn(move || producer_worker(id, shared)))
            .collect();
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

/// The end-to-end consumer: reads until the producers are done and every sent record arrived, recording
/// each record's delivery latency (receive time − the send time in its first 8 bytes). Fails when nothing
/// more arrives within the connection timeout once the producers are done.
fn e2e_consume(
    c: &BaseConsumer<DefaultConsumerContext>,
    conn: &ConnArgs,
    progress: &Progress,
    producers_done: &AtomicBool,
    sent_total: &AtomicU64,
    consumed_total: &AtomicU64,
) -> anyhow::Result<Histogram<u64>> {
    let mut h = new_histogram()?;
    let mut batches = fast::Batches::new(c);
    let mut idle_since: Option<Instant> = None;
    loop {
        let done = producers_done.load(Ordering::Acquire);
        if done && consumed_total.load(Ordering::Relaxed) >= sent_total.load(Ordering::Relaxed) {
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
}

/// What every producer thread of a run shares.
struct WorkerShared<'a> {
    o: &'a ProduceOpts,
    e2e: bool,
    /// Records in all (`u64::MAX`: until the deadline).
    count: u64,
    deadline_secs: Option<f64>,
    pool: &'a [u8],
    barrier: &'a std::sync::Barrier,
    progress: &'a Progress,
    sent_total: &'a AtomicU64,
    stop: &'a AtomicBool,
    clock: Clock,
}

/// Producer thread `id`: connects and learns the topic before the start barrier, sends its share of the
/// count at its share of the rate, then flushes (failing when the broker stops acknowledging for the
/// connection timeout) and returns its latency histogram and counts.
fn producer_worker(id: usize, w: &WorkerShared) -> anyhow::Result<WorkerResult> {
    let WorkerShared {
        o,
        e2e,
        count,
        deadline_secs,
        pool,
        barrier,
        progress,
        sent_total,
        stop,
        clock,
    } = *w;
    let common = &o.common;
    let conn = &common.conn;
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
    finish_worker(&producer, conn.timeout())
}

/// A producer thread's end: flushes in steps, giving up when nothing more is delivered for `timeout` (a
/// stalled broker) rather than after librdkafka's message.timeout.ms; then its histogram and counts.
fn finish_worker(
    producer: &BaseProducer<ProduceCtx>,
    timeout: Duration,
) -> anyhow::Result<WorkerResult> {
    // Flush in steps; give up when nothing more is delivered for --timeout (a stalled broker),
    // not after librdkafka's message.timeout.ms.
    let mut last = (Instant::now(), delivered(producer.context()));
    while producer.in_flight_count() > 0 {
        let _ = producer.flush(Duration::from_millis(200));
        let done = delivered(producer.context());
        if done != last.1 {
            last = (Instant::now(), done);
        } else if last.0.elapsed() > timeout {
            bail!(
                "the broker stopped acknowledging: {} records outstanding, none delivered within {:?}",
                producer.in_flight_count(),
                timeout
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
}
