#!/usr/bin/env python3
"""Cluster numbers for issue 5, on three real `runnel` processes on 127.0.0.1 (the tests' Cluster harness).

1. Failover time: an idempotent acks=all producer streams to a replication-factor-3 topic
   (min.insync.replicas=2); the partition leader is `kill -9`'d; the time from the kill to the first
   acknowledgement of a record produced after the kill. Repeated RUNS times (the killed broker restarts and
   rejoins the ISR between runs); prints each run and the median.
2. acks=all throughput with three replicas versus one, measured in the same run on the same cluster with
   `runnel bench produce` (100-byte records, one producer).

Usage: python3 bench/cluster.py [RUNS] [RECORDS]   (after `cargo build --release`)
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from conftest import RUNNEL_BIN  # noqa: E402
from test_cluster import Cluster, create_topic  # noqa: E402


def failover_once(c: Cluster, topic: str) -> float:
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": c.bootstrap, "enable.idempotence": True, "acks": "all",
                  "linger.ms": 1, "message.timeout.ms": 60000, "reconnect.backoff.max.ms": 100,
                  "retry.backoff.ms": 20, "retry.backoff.max.ms": 100,
                  "topic.metadata.refresh.interval.ms": 1000, "topic.metadata.refresh.fast.interval.ms": 50})
    acks: list[float] = []
    sent_after_kill: set[bytes] = set()

    def cb(err, msg):
        if err is None and msg.value() in sent_after_kill:
            acks.append(time.monotonic())

    for i in range(200):
        p.produce(topic, value=b"warm-%d" % i, partition=0, on_delivery=cb)
    assert p.flush(30) == 0
    leader = c.partition(topic).leader
    c.nodes[leader].kill9()
    killed = time.monotonic()
    i = 0
    deadline = killed + 60
    while not acks and time.monotonic() < deadline:
        v = b"after-%d" % i
        sent_after_kill.add(v)
        p.produce(topic, value=v, partition=0, on_delivery=cb)
        i += 1
        p.poll(0.005)
    p.flush(60)
    assert acks, "no acknowledgement within 60 s of the kill"
    took = acks[0] - killed
    c.nodes[leader].start()
    c.wait(lambda md: sorted(md.topics[topic].partitions[0].isrs) == [1, 2, 3], "ISR full again", 120)
    return took


def bench_produce(c: Cluster, topic: str, records: int) -> float:
    out = subprocess.run([str(RUNNEL_BIN), "bench", "produce", "-b", c.alive_bootstrap(), "-t", topic,
                          "--acks", "all", "-n", str(records), "--json"],
                         capture_output=True, text=True, timeout=600, check=True)
    r = json.loads(out.stdout)
    return float(r.get("records_per_sec") or r.get("rate") or r["throughput_records_per_sec"])


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    records = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
    c = Cluster()
    try:
        c.start()
        create_topic(c, "failover", configs={"min.insync.replicas": "2"})
        times = []
        for r in range(runs):
            t = failover_once(c, "failover")
            times.append(t)
            print(f"failover run {r + 1}: {t * 1000:.0f} ms", flush=True)
        print(f"failover median {statistics.median(times) * 1000:.0f} ms, min {min(times) * 1000:.0f}, "
              f"max {max(times) * 1000:.0f} over {runs} runs")
        create_topic(c, "rf3", rf=3, configs={"min.insync.replicas": "2"})
        create_topic(c, "rf1", rf=1, configs={"min.insync.replicas": "1"})
        rf1 = bench_produce(c, "rf1", records)
        rf3 = bench_produce(c, "rf3", records)
        print(f"acks=all produce, 100 B records: rf=1 {rf1:,.0f} rec/s, rf=3 {rf3:,.0f} rec/s, "
              f"ratio rf3/rf1 {rf3 / rf1:.2f}")
    finally:
        c.close()


if __name__ == "__main__":
    main()
