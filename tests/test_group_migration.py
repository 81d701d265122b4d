"""KIP-848 online migration (`group.consumer.migration.policy`, default `bidirectional`) with real clients.

A classic group of three librdkafka (confluent-kafka-python) consumers, consuming a stream produced throughout
with a synchronous commit after every record, is upgraded by restarting its members one at a time with
`group.protocol=consumer` (the first consumer-protocol heartbeat converts the group; the classic members left
are then served by the consumer group), then downgraded back by restarting them one at a time with
`group.protocol=classic` (the last consumer-protocol member leaving converts it back). Checked:

- no partition is ever owned by two members at once: each member reports its rebalance callbacks
  (`on_assign` at the callback's start, `on_revoke`/`on_lost` at its end) with CLOCK_MONOTONIC times, which
  are comparable across processes on one host, and the ownership intervals of a partition must not overlap;
- no committed offset is lost: every produced record is consumed, and the group's committed offsets, polled
  from outside the group throughout, never go backwards;
- the group's type is "consumer" while mixed and "classic" at the end (DescribeConsumerGroups).

Runs against Apache Kafka 4.4.0 too (RUNNEL_TEST_BROKER=kafka).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import BrokerProcess, MODE, make_topic  # noqa: E402
from test_groups import GROUP_SETS, WAIT_S, unique  # noqa: E402

PARTITIONS = 6

MEMBER = r'''
import json, signal, sys, time
cfg = json.loads(sys.argv[1])
stop = False
def _term(*_):
    global stop
    stop = True
signal.signal(signal.SIGTERM, _term)
from confluent_kafka import Consumer, TopicPartition

def emit(**ev):
    ev["t"] = time.monotonic()
    sys.stdout.write(json.dumps(ev) + "\n")
    sys.stdout.flush()

conf = {"bootstrap.servers": cfg["bootstrap"], "group.id": cfg["group"], "auto.offset.reset": "earliest",
        "enable.auto.commit": False}
if cfg["protocol"] == "consumer":
    conf["group.protocol"] = "consumer"
else:
    conf.update({"group.protocol": "classic", "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
                 "partition.assignment.strategy": "range"})
c = Consumer(conf)

def on_assign(consumer, parts):
    emit(ev="assign", parts=[p.partition for p in parts])

def on_revoke(consumer, parts):
    emit(ev="revoke", parts=[p.partition for p in parts])

def on_lost(consumer, parts):
    emit(ev="revoke", parts=[p.partition for p in parts], lost=True)

c.subscribe([cfg["topic"]], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
emit(ev="ready")
while not stop:
    m = c.poll(0.1)
    if m is None or m.error():
        continue
    try:
        c.commit(offsets=[TopicPartition(m.topic(), m.partition(), m.offset() + 1)], asynchronous=False)
    except Exception as e:
        emit(ev="commit_failed", p=m.partition(), o=m.offset(), error=str(e))
        try:
            c.seek(TopicPartition(m.topic(), m.partition(), m.offset()))
        except Exception:
            pass
        continue
    emit(ev="rec", p=m.partition(), o=m.offset())
c.close()
emit(ev="closed")
'''


class Member:
    """One consumer process and the events it reported."""

    def __init__(self, name: str, protocol: str, bootstrap: str, group: str, topic: str, cond, tmp: Path):
        self.name, self.protocol, self.cond = name, protocol, cond
        self.events: list[dict] = []
        self.owned: set[int] = set()
        self.closed = False
        self.stderr = tmp / f"{name}.stderr"
        cfg = dict(bootstrap=bootstrap, group=group, topic=topic, protocol=protocol)
        with open(self.stderr, "wb") as err:
            self.proc = subprocess.Popen([sys.executable, "-c", MEMBER, json.dumps(cfg)], stdout=subprocess.PIPE,
                                         stderr=err, stdin=subprocess.DEVNULL, text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            if not line.startswith("{"):
                continue
            ev = json.loads(line)
            with self.cond:
                self.events.append(ev)
                if ev["ev"] == "assign":
                    self.owned |= set(ev["parts"])
                elif ev["ev"] == "revoke":
                    self.owned -= set(ev["parts"])
                elif ev["ev"] == "closed":
                    self.closed = True
                self.cond.notify_all()
        with self.cond:
            self.closed = True
            self.owned = set()
            self.cond.notify_all()

    def records(self) -> list[tuple[int, int]]:
        return [(e["p"], e["o"]) for e in self.events if e["ev"] == "rec"]

    def stop(self, timeout: float = 30.0):
        """SIGTERM: the member closes its consumer (revoking, then leaving the group)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(5)


def overlapping_ownership(members: list[Member]) -> list[str]:
    """Pairs of members that owned one partition at once, from their callbacks' times."""
    intervals: dict[int, list[tuple[float, float, str]]] = {}
    for m in members:
        start: dict[int, float] = {}
        for e in m.events:
            if e["ev"] == "assign":
                for p in e["parts"]:
                    start.setdefault(p, e["t"])
            elif e["ev"] == "revoke":
                for p in e["parts"]:
                    if p in start:
                        intervals.setdefault(p, []).append((start.pop(p), e["t"], m.name))
        end = max((e["t"] for e in m.events), default=0.0)
        for p, t in start.items():
            intervals.setdefault(p, []).append((t, end, m.name))
    bad = []
    for p, spans in intervals.items():
        spans.sort()
        for (s1, e1, n1), (s2, e2, n2) in zip(spans, spans[1:]):
            if s2 < e1:
                bad.append(f"partition {p}: {n1} [{s1:.3f}, {e1:.3f}] and {n2} [{s2:.3f}, {e2:.3f}]")
    return bad


class Producer(threading.Thread):
    """Produces a record to each partition in turn, 100 a second, until stopped; keeps what was acknowledged."""

    def __init__(self, bootstrap: str, topic: str):
        super().__init__(daemon=True)
        from confluent_kafka import Producer as P
        self.p = P({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True})
        self.topic, self.acked, self.errors = topic, set(), []
        self.halt = threading.Event()

    def _dr(self, err, msg):
        if err:
            self.errors.append(err)
        else:
            self.acked.add((msg.partition(), msg.offset()))

    def run(self):
        i = 0
        while not self.halt.wait(0.01):
            self.p.produce(self.topic, value=f"v{i}".encode(), partition=i % PARTITIONS, on_delivery=self._dr)
            self.p.poll(0)
            i += 1
        assert self.p.flush(30) == 0


class CommitWatch(threading.Thread):
    """Polls the group's committed offsets from outside the group; records any offset that went backwards."""

    def __init__(self, bootstrap: str, group: str, topic: str):
        super().__init__(daemon=True)
        from confluent_kafka import Consumer
        self.c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
        self.topic, self.last, self.backwards = topic, {}, []
        self.halt = threading.Event()

    def run(self):
        from confluent_kafka import TopicPartition
        parts = [TopicPartition(self.topic, p) for p in range(PARTITIONS)]
        while not self.halt.wait(0.2):
            try:
                committed = self.c.committed(parts, timeout=5)
            except Exception:
                continue
            for tp in committed:
                if tp.offset < 0:
                    continue
                prev = self.last.get(tp.partition, -1)
                if tp.offset < prev:
                    self.backwards.append((tp.partition, prev, tp.offset))
                self.last[tp.partition] = max(prev, tp.offset)
        self.c.close()


def group_type(bootstrap: str, group: str) -> str:
    from confluent_kafka.admin import AdminClient
    a = AdminClient({"bootstrap.servers": bootstrap})
    d = a.describe_consumer_groups([group])[group].result(30)
    return str(d.type).rsplit(".", 1)[-1].lower()


@pytest.fixture
def mbroker():
    if MODE == "external":
        pytest.skip("needs a broker started by the tests")
    b = BrokerProcess(GROUP_SETS).start()
    yield b
    b.close()


def test_rolling_upgrade_and_downgrade_of_a_librdkafka_group(mbroker, tmp_path):
    bootstrap = mbroker.bootstrap
    topic, group = unique("mig"), unique("g")
    make_topic(bootstrap, topic, PARTITIONS)
    cond = threading.Condition()
    members: list[Member] = []
    live: list[Member] = []

    def start(protocol: str) -> Member:
        m = Member(f"m{len(members)}-{protocol}", protocol, bootstrap, group, topic, cond, tmp_path)
        members.append(m)
        live.append(m)
        return m

    def wait(pred, what: str):
        deadline = time.monotonic() + WAIT_S
        with cond:
            while not pred():
                left = deadline - time.monotonic()
                if left <= 0:
                    state = "\n".join(f"  {m.name}: owned {sorted(m.owned)}, last events {m.events[-5:]}, "
                                      f"stderr {m.stderr.read_text(errors='replace')[-400:]}" for m in members)
                    pytest.fail(f"timed out waiting for {what}:\n{state}")
                cond.wait(min(left, 0.5))

    def stable() -> bool:
        owned = [p for m in live for p in m.owned]
        return all(m.owned for m in live) and sorted(owned) == list(range(PARTITIONS))

    def restart(old: Member, protocol: str):
        old.stop()
        live.remove(old)
        start(protocol)
        wait(stable, f"{len(live)} members to own the {PARTITIONS} partitions after {old.name} became {protocol}")

    producer, watch = Producer(bootstrap, topic), CommitWatch(bootstrap, group, topic)
    t0 = time.monotonic()
    try:
        producer.start()
        for _ in range(3):
            start("classic")
        wait(stable, "the classic group to be stable")
        watch.start()
        assert group_type(bootstrap, group) == "classic"
        for old in list(live):
            restart(old, "consumer")
            assert group_type(bootstrap, group) == "consumer", "a mixed group is a consumer group"
        for old in list(live):
            restart(old, "classic")
        assert group_type(bootstrap, group) == "classic"
        producer.halt.set()
        producer.join(60)
        assert not producer.errors, producer.errors
        consumed = lambda: {r for m in members for r in m.records()}  # noqa: E731
        wait(lambda: consumed() >= producer.acked, f"all {len(producer.acked)} produced records consumed")
    finally:
        producer.halt.set()
        watch.halt.set()
        for m in members:
            m.stop()
        if watch.is_alive():
            watch.join(10)
    overlaps = overlapping_ownership(members)
    assert not overlaps, "partitions owned twice:\n" + "\n".join(overlaps[:20])
    assert not watch.backwards, f"committed offsets went backwards: {watch.backwards[:20]}"
    all_records = [r for m in members for r in m.records()]
    print(f"\nmigration: {len(producer.acked)} records produced, {len(all_records)} consumed "
          f"({len(all_records) - len(set(all_records))} again after a rebalance), "
          f"{sum(1 for m in members for e in m.events if e['ev'] == 'commit_failed')} commit retries, "
          f"{time.monotonic() - t0:.1f}s")
