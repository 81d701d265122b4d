"""Log compaction end to end with a real client (confluent-kafka / librdkafka).

100,000 records over 1,000 keys plus tombstones for 100 of them go to a compacted topic with small
segments and short delete.retention.ms; after the cleaner has run, a consumer reading from the
beginning sees exactly the latest value of every live key, no deleted key, offsets strictly
increasing — and the same after a clean restart. Records without a key are refused (INVALID_RECORD).

The broker logs each clean ("log cleaner cleaned log": MB/s, memory); the test prints those lines.
"""

from __future__ import annotations

import os
import re
import time
import uuid

import pytest

import kproto
from conftest import MODE, BrokerProcess, make_topic

pytestmark = pytest.mark.durability

KEYS = 1000
RECORDS = 100_000
DELETED = 100
SEGMENT_MS = 1000
# Producer codec (COMPACTION_TEST_CODEC=none measures the cleaner on uncompressed batches).
CODEC = os.environ.get("COMPACTION_TEST_CODEC", "lz4")
CONFIGS = {
    "cleanup.policy": "compact",
    "segment.bytes": str(256 * 1024),
    "segment.ms": str(SEGMENT_MS),
    "delete.retention.ms": "1000",
    "min.compaction.lag.ms": "0",
    "min.cleanable.dirty.ratio": "0.01",
}
# The cleaner looks for work every 250 ms instead of Kafka's 15 s (log.cleaner.backoff.ms): the tests wait for
# cleaning, not for the cleaner's idle sleep.
CLEANER_SETS = {"log.cleaner.backoff.ms": "250"}


@pytest.fixture
def cleaner_broker():
    """A runnel broker of its own with CLEANER_SETS, not started yet (a test may set the environment first)."""
    if MODE != "runnel":
        pytest.skip("the cleaner log lines, timings and crash hook are runnel's")
    b = BrokerProcess(CLEANER_SETS)
    yield b
    b.close()


def produce(bootstrap, topic, items, codec="lz4"):
    """items: iterable of (key bytes, value bytes or None). Waits for every ack."""
    from confluent_kafka import Producer

    errors = []
    # batch.size below segment.bytes: a produce request larger than a segment is refused (18).
    p = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 20, "batch.size": 65536,
                  "enable.idempotence": True})

    def cb(err, _msg):
        if err is not None:
            errors.append(err)

    for i, (k, v) in enumerate(items):
        while True:
            try:
                p.produce(topic, key=k, value=v, partition=0, on_delivery=cb)
                break
            except BufferError:
                p.poll(0.1)
        if i % 10000 == 0:
            p.poll(0)
    assert p.flush(120) == 0 and not errors, errors[:3]


def consume_all(bootstrap, topic, timeout=120):
    """Every record of partition 0 from the beginning to the end: [(offset, key, value)]."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition, OFFSET_BEGINNING

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}",
                  "enable.auto.commit": False, "enable.partition.eof": True,
                  "auto.offset.reset": "earliest"})
    try:
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        out = []
        deadline = time.monotonic() + timeout
        while True:
            assert time.monotonic() < deadline, f"consuming {topic} did not reach the end in {timeout}s"
            m = c.poll(1.0)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    return out
                raise AssertionError(f"consumer error: {m.error()}")
            out.append((m.offset(), m.key(), m.value()))
    finally:
        c.close()


def cleaner_lines(broker):
    try:
        text = broker.log_path.read_text(errors="replace")
    except OSError:
        return []
    return [l for l in text.splitlines() if "log cleaner cleaned log" in l]


def check(records, expected, deleted=frozenset()):
    offsets = [o for o, _, _ in records]
    assert all(a < b for a, b in zip(offsets, offsets[1:])), "offsets not strictly increasing"
    got = {}
    for _, k, v in records:
        got[k] = v
    assert not deleted & set(got), f"deleted keys seen: {sorted(deleted & set(got))[:5]}"
    assert got == expected, (f"{len(got)} keys seen, {len(expected)} expected; "
                             f"wrong: {[k for k in expected if got.get(k) != expected[k]][:5]}")
    assert len(records) == len(expected), f"{len(records)} records for {len(expected)} live keys (duplicates)"


def test_compaction_end_to_end(cleaner_broker, topic):
    fresh_broker = cleaner_broker.start()
    b = fresh_broker.bootstrap
    make_topic(b, topic, 1, CONFIGS)

    expected = {}

    def data():
        for i in range(RECORDS):
            k = f"key-{i % KEYS}".encode()
            v = f"value-{i}-{'x' * (i % 37)}".encode()
            expected[k] = v
            yield k, v
        for i in range(DELETED):
            k = f"key-{i}".encode()
            expected.pop(k, None)
            yield k, None

    t0 = time.monotonic()
    produce(b, topic, data(), codec=CODEC)
    produced_s = time.monotonic() - t0
    # Roll the active segment (segment.ms) so everything above is cleanable: the sentinel is the
    # only record left in the active segment.
    time.sleep(SEGMENT_MS / 1000 + 0.5)
    produce(b, topic, [(b"sentinel", b"last")])
    expected[b"sentinel"] = b"last"

    deadline = time.monotonic() + 120
    while True:
        records = consume_all(b, topic)
        if len(records) == len(expected):
            break
        assert time.monotonic() < deadline, (
            f"cleaning did not finish within 120 s: {len(records)} records remain for {len(expected)} live "
            f"keys; cleaner log lines: {cleaner_lines(fresh_broker)[-3:]}; broker log tail:\n"
            f"{fresh_broker.log_tail(20)}")
        time.sleep(0.5)
    deleted = {f"key-{i}".encode() for i in range(DELETED)}
    check(records, expected, deleted)
    lines = cleaner_lines(fresh_broker)
    assert lines, "no 'log cleaner cleaned log' line in the broker log"
    print(f"\nproduced {RECORDS + DELETED} records ({CODEC}) in {produced_s:.1f}s; cleaner runs:")
    for l in lines:
        print("  " + re.sub(r"^.*?log cleaner cleaned log", "cleaned", l)[:400])

    fresh_broker.restart()
    after = consume_all(b, topic)
    assert after == records, "contents changed across the restart"
    check(after, expected, deleted)


def test_records_without_key_refused(broker, topic):
    from confluent_kafka import KafkaError, Producer

    make_topic(broker.bootstrap, topic, 1, {"cleanup.policy": "compact"})
    errs = []
    p = Producer({"bootstrap.servers": broker.bootstrap, "message.timeout.ms": 20000, "retries": 0})
    p.produce(topic, value=b"no key", partition=0, on_delivery=lambda e, m: errs.append(e))
    assert p.flush(30) == 0
    p.produce(topic, key=b"k", value=b"with key", partition=0, on_delivery=lambda e, m: errs.append(e))
    assert p.flush(30) == 0
    codes = sorted((e.code() if e else 0) for e in errs)
    assert codes == sorted([0, KafkaError.INVALID_RECORD]), errs


@pytest.mark.parametrize("step", ["IndexesToSwap", "IndexesInPlace"])
def test_crash_during_cleaning_loses_nothing(cleaner_broker, topic, monkeypatch, step):
    """The broker aborts in the middle of its first segment swap (before / after the commit point,
    via the RUNNEL_TEST_CLEANER_CRASH_AFTER hook); after a restart every key still has its latest
    value, and cleaning then completes."""
    monkeypatch.setenv("RUNNEL_TEST_CLEANER_CRASH_AFTER", step)
    fresh_broker = cleaner_broker.start()
    b = fresh_broker.bootstrap
    # Created with cleanup.policy=delete and compacted only once every record is in, so that the first swap (and
    # the crash) comes in a clean of the whole data, not while it is produced.
    make_topic(b, topic, 1, dict(CONFIGS, **{"segment.bytes": str(64 * 1024), "cleanup.policy": "delete"}))
    expected = {}

    def data():
        for i in range(20_000):
            k = f"key-{i % 200}".encode()
            v = f"value-{i}".encode()
            expected[k] = v
            yield k, v

    produce(b, topic, data())
    time.sleep(SEGMENT_MS / 1000 + 0.5)
    produce(b, topic, [(b"sentinel", b"last")])
    expected[b"sentinel"] = b"last"
    from test_broker_configs import incremental_alter
    with kproto.Connection(b) as c:
        assert incremental_alter(c, 2, topic, [("cleanup.policy", 0, "compact")])[0] == 0
    deadline = time.monotonic() + 60
    while fresh_broker.proc.poll() is None:
        assert time.monotonic() < deadline, "the broker did not crash in its first cleaner swap within 60 s"
        time.sleep(0.2)
    assert "aborting (RUNNEL_TEST_CLEANER_CRASH_AFTER)" in fresh_broker.log_tail(200)
    monkeypatch.delenv("RUNNEL_TEST_CLEANER_CRASH_AFTER")
    fresh_broker.start()
    records = consume_all(b, topic)
    offsets = [o for o, _, _ in records]
    assert all(x < y for x, y in zip(offsets, offsets[1:])), "offsets not strictly increasing"
    assert {k: v for _, k, v in records} == expected, "latest values changed by the crash"
    deadline = time.monotonic() + 90
    while len(records) != len(expected):
        assert time.monotonic() < deadline, f"cleaning did not finish after the crash: {len(records)} records"
        time.sleep(0.5)
        records = consume_all(b, topic)
    check(records, expected)
