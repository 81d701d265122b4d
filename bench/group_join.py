#!/usr/bin/env python3
"""Group-join timing for issue 3: the time from `subscribe()` to the first record, for one consumer and for
three consumers of one group subscribing at the same moment (librdkafka through confluent-kafka, range
assignor, a 6-partition topic holding 600 records).

For each broker it prints, per case, the time until the first member has a record and until every member
has one. `group.initial.rebalance.delay.ms` (Kafka's default 3000 ms) delays the first rebalance of an empty
group, so both brokers are measured with the default and runnel also with 0.

Usage: python3 bench/group_join.py [REPS] [--kafka HOST:PORT]   (after `cargo build --release`)
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


def first_record_times(bootstrap: str, topic: str, members: int) -> list[float]:
    """Starts `members` consumers of a fresh group together; returns each one's subscribe→first-record time (s)."""
    from confluent_kafka import Consumer
    group = "gj-" + uuid.uuid4().hex[:8]
    times: list[float] = [float("nan")] * members
    barrier = threading.Barrier(members)

    def member(i: int):
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                      "enable.auto.commit": False, "partition.assignment.strategy": "range"})
        try:
            barrier.wait()
            t0 = time.monotonic()
            c.subscribe([topic])
            deadline = t0 + 60
            while time.monotonic() < deadline:
                m = c.poll(0.05)
                if m is not None and m.error() is None:
                    times[i] = time.monotonic() - t0
                    break
            # Stay in the group until every member has a record, so no member's leave triggers a rebalance.
            while any(t != t for t in times) and time.monotonic() < deadline:
                c.poll(0.05)
        finally:
            c.close()

    threads = [threading.Thread(target=member, args=(i,)) for i in range(members)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return times


def measure(label: str, bootstrap: str, reps: int):
    from confluent_kafka import Producer
    topic = "gj-" + uuid.uuid4().hex[:8]
    make_topic(bootstrap, topic, 6)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(600):
        p.produce(topic, value=b"v%d" % i, partition=i % 6)
    assert p.flush(30) == 0
    for members in (1, 3):
        firsts, alls = [], []
        for _ in range(reps):
            t = first_record_times(bootstrap, topic, members)
            assert all(x == x for x in t), f"{label}: a member got no record within 60 s: {t}"
            firsts.append(min(t))
            alls.append(max(t))
        print(f"{label:<42} {members} member(s): first record {statistics.median(firsts):.3f} s, "
              f"every member {statistics.median(alls):.3f} s (median of {reps}; runs {['%.2f' % a for a in alls]})",
              flush=True)


def main():
    args = sys.argv[1:]
    kafka = None
    if "--kafka" in args:
        i = args.index("--kafka")
        kafka = args[i + 1]
        del args[i:i + 2]
    reps = int(args[0]) if args else 3
    for delay in (3000, 0):
        b = BrokerProcess({"group.initial.rebalance.delay.ms": str(delay)})
        b.start()
        try:
            measure(f"runnel (initial.rebalance.delay.ms={delay})", b.bootstrap, reps)
        finally:
            b.close()
    if kafka:
        measure(f"kafka {kafka} (broker's own settings)", kafka, reps)


if __name__ == "__main__":
    main()
