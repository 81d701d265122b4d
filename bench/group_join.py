#!/usr/bin/env python3
"""Group-join timing (issues 3 and 19): librdkafka consumers (confluent-kafka) of a 30-partition topic holding
3,000 records, with the classic protocol (`range` assignor) and the KIP-848 consumer protocol
(`group.protocol=consumer`, the broker's `uniform` assignor).

Per broker, protocol and group size (1, 3, 30 members subscribing together) it prints the median time from
`subscribe()` until the first member has a record and until every member has one; then, with that group
consuming, the time from one more member's `subscribe()` to its first record ("join → stable"). Nothing is
committed, so every newly assigned partition is read from its start.

The brokers' group settings are their defaults except `group.initial.rebalance.delay.ms=0` (runnel here,
Kafka through scripts/kafka-reference.sh); both keep `group.consumer.heartbeat.interval.ms` at 5000 ms, the
bound on how soon a KIP-848 member learns of a new assignment.

Usage: python3 bench/group_join.py [REPS] [--kafka HOST:PORT] [--sizes 1,3,30]   (after `cargo build --release`)
"""

from __future__ import annotations

import statistics
import sys
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from conftest import BrokerProcess, make_topic  # noqa: E402

PARTITIONS = 30
DEADLINE_S = 90


def consumer(bootstrap: str, group: str, protocol: str):
    from confluent_kafka import Consumer
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
            "enable.auto.commit": False}
    if protocol == "consumer":
        conf["group.protocol"] = "consumer"
    else:
        conf["partition.assignment.strategy"] = "range"
    return Consumer(conf)


def group_times(bootstrap: str, topic: str, members: int, protocol: str) -> tuple[list[float], float]:
    """Starts `members` consumers of a fresh group together; returns each one's subscribe→first-record time (s),
    then the subscribe→first-record time of one more member joining the consuming group."""
    group = "gj-" + uuid.uuid4().hex[:8]
    times: list[float] = [float("nan")] * (members + 1)
    barrier = threading.Barrier(members)
    joiner_done = threading.Event()

    def member(i: int):
        c = consumer(bootstrap, group, protocol)
        try:
            if i < members:
                barrier.wait()
            t0 = time.monotonic()
            c.subscribe([topic])
            deadline = t0 + DEADLINE_S
            while time.monotonic() < deadline and times[i] != times[i]:
                m = c.poll(0.05)
                if m is not None and m.error() is None:
                    times[i] = time.monotonic() - t0
            # Stay in the group until the joiner has a record, so no leave triggers a rebalance.
            while not joiner_done.is_set() and time.monotonic() < deadline:
                c.poll(0.05)
        finally:
            if i == members:
                joiner_done.set()
            c.close()

    threads = [threading.Thread(target=member, args=(i,)) for i in range(members)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + DEADLINE_S
    while any(t != t for t in times[:members]) and time.monotonic() < deadline:
        time.sleep(0.05)
    joiner = threading.Thread(target=member, args=(members,))
    joiner.start()
    joiner.join()
    joiner_done.set()
    for t in threads:
        t.join()
    return times[:members], times[members]


def measure(label: str, bootstrap: str, reps: int, sizes: list[int]):
    from confluent_kafka import Producer
    topic = "gj-" + uuid.uuid4().hex[:8]
    make_topic(bootstrap, topic, PARTITIONS)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(100 * PARTITIONS):
        p.produce(topic, value=b"v%d" % i, partition=i % PARTITIONS)
    assert p.flush(30) == 0
    for protocol in ("classic", "consumer"):
        for members in sizes:
            firsts, alls, joins = [], [], []
            for _ in range(reps):
                t, join = group_times(bootstrap, topic, members, protocol)
                assert all(x == x for x in t) and join == join, f"{label}: no record within {DEADLINE_S} s"
                firsts.append(min(t))
                alls.append(max(t))
                joins.append(join)
            print(f"{label:<34} {protocol:<8} {members:>2} member(s): first record "
                  f"{statistics.median(firsts):6.3f} s, every member {statistics.median(alls):6.3f} s, "
                  f"join → stable {statistics.median(joins):6.3f} s (medians of {reps}; every-member runs "
                  f"{['%.2f' % a for a in alls]}, joins {['%.2f' % j for j in joins]})", flush=True)


def main():
    args = sys.argv[1:]
    kafka = None
    sizes = [1, 3, 30]
    if "--kafka" in args:
        i = args.index("--kafka")
        kafka = args[i + 1]
        del args[i:i + 2]
    if "--sizes" in args:
        i = args.index("--sizes")
        sizes = [int(x) for x in args[i + 1].split(",")]
        del args[i:i + 2]
    reps = int(args[0]) if args else 3
    b = BrokerProcess({"group.initial.rebalance.delay.ms": "0"})
    b.start()
    try:
        measure("runnel (initial delay 0)", b.bootstrap, reps, sizes)
    finally:
        b.close()
    if kafka:
        measure(f"kafka {kafka} (initial delay 0)", kafka, reps, sizes)


if __name__ == "__main__":
    main()
