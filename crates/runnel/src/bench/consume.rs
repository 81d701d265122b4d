//! `runnel bench consume`: consumer threads sharing the topic's partitions by static assignment, from
//! the beginning to the high watermarks seen at start; and the assigned consumer end-to-end runs use.

use super::*;

/// The partition's high watermark (ListOffsets, latest). A leader that the metadata already lists may not
/// serve the partition yet right after the topic's creation (Kafka answers NOT_LEADER_OR_FOLLOWER for a
/// moment): retriable errors are retried every 100 ms until `timeout`.
fn high_watermark(
    consumer: &BaseConsumer<DefaultConsumerContext>,
    timeout: Duration,
    topic: &str,
    p: i32,
) -> anyhow::Result<i64> {
    let deadline = Instant::now() + timeout;
    loop {
        match consumer.fetch_watermarks(topic, p, timeout) {
            Ok((_, high)) => return Ok(high),
            Err(e)
                if Instant::now() < deadline
                    && matches!(
                        e.rdkafka_error_code(),
                        Some(
                            RDKafkaErrorCode::NotLeaderForPartition
                                | RDKafkaErrorCode::LeaderNotAvailable
                                | RDKafkaErrorCode::UnknownTopicOrPartition
                        )
                    ) =>
            {
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => bail!("topic '{topic}' partition {p}: {}", kafka_error(&e)),
        }
    }
}

/// What there is to read: the sum over partitions of high − low watermark now (an upper bound of the
/// records: transaction markers take offsets too).
fn available_records(conn: &ConnArgs, topic: &str, partitions: i32) -> anyhow::Result<u64> {
    let probe = assigned_consumer(conn, topic, &[], false)?;
    let mut available = 0u64;
    for p in 0..partitions {
        let (low, high) = probe
            .fetch_watermarks(topic, p, conn.timeout())
            .with_context(|| format!("topic '{topic}' partition {p}"))?;
        available += (high - low).max(0) as u64;
    }
    Ok(available)
}

/// A consumer (no group membership) assigned `partitions` of `topic`, from the beginning or, with
/// `at_end`, from the current high watermarks.
pub(super) fn assigned_consumer(
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
        // A reader from the beginning stops at each partition's end, wherever the offsets are: transaction
        // markers take offsets that are never delivered as records.
        (
            "enable.partition.eof",
            if at_end { "false" } else { "true" },
        ),
        ("fetch.wait.max.ms", "100"),
        // As rdkafka_performance: keep a deep prefetch queue so fetches stay pipelined.
        ("queued.min.messages", "1000000"),
    ])?;
    let mut tpl = TopicPartitionList::new();
    for &p in partitions {
        let offset = if at_end {
            Offset::Offset(high_watermark(&consumer, conn.timeout(), topic, p)?)
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
pub(super) fn consume(o: &ConsumeOpts) -> anyhow::Result<()> {
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
    let available = available_records(conn, &common.topic, partitions)?;
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
            .zip(shares.iter().map(Vec::len))
            .map(|(c, my_partitions)| {
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
                            Ok(0) if batches.partitions_at_end() >= my_partitions => break,
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
