"""Restart keeps everything; kill -9 during a produce stream loses no acknowledged record.

These need a broker the fixtures start and stop (runnel, or Kafka with RUNNEL_TEST_BROKER=kafka);
with RUNNEL_TEST_BOOTSTRAP they are skipped.
"""

from __future__ import annotations

import struct
import time

import pytest

import kproto as k
import records
from conftest import make_topic

pytestmark = pytest.mark.durability


def confluent_produce_all(bootstrap, topic, seed, n, partitions, codec="zstd"):
    """Produce records 0..n-1 of `seed`, record i to partition i % partitions; returns {i: (partition, offset)}."""
    from confluent_kafka import Producer

    acked, errors = {}, []
    p = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "enable.idempotence": True,
                  "linger.ms": 10})
    for i, (key, value, headers) in enumerate(records.records(seed, n)):
        def cb(err, msg, i=i):
            if err is not None:
                errors.append(err)
            else:
                acked[i] = (msg.partition(), msg.offset())
        p.produce(topic, value=value, key=key, headers=headers or None, partition=i % partitions, on_delivery=cb)
        if i % 10000 == 0:
            p.poll(0)
    assert p.flush(120) == 0 and not errors, errors[:3]
    return acked


def read_partition(bootstrap, topic, partition, expect_count, timeout=120):
    """All records of one partition via the raw Fetch API: list of (offset, canonical line)."""
    out = []
    deadline = time.monotonic() + timeout
    with k.Connection(bootstrap) as c:
        offset = 0
        while len(out) < expect_count and time.monotonic() < deadline:
            f = k.fetch(c, topic, partition, offset, max_wait_ms=500)
            assert f.error == 0, f"fetch {topic}-{partition}@{offset}: error {f.error}"
            for b in f.batches():
                assert b.crc_ok
                for r in b.records:
                    if r.offset >= offset:
                        out.append((r.offset, records.canonical(r.key, r.value, r.headers)))
                        offset = r.offset + 1
        hw = k.fetch(c, topic, partition, 0, max_wait_ms=0).high_watermark
    return out, hw


def test_restart_keeps_everything(fresh_broker, topic):
    b = fresh_broker
    parts, n, seed = 4, 20000, "restart"
    make_topic(b.bootstrap, topic, parts)
    acked = confluent_produce_all(b.bootstrap, topic, seed, n, parts)
    assert len(acked) == n

    b.restart()
    # a second restart right after the first must be just as lossless
    b.restart()

    want = records.expected_lines(seed, n)
    for p in range(parts):
        expect = sorted((off, want[i]) for i, (pp, off) in acked.items() if pp == p)
        got, hw = read_partition(b.bootstrap, topic, p, len(expect))
        assert hw == len(expect)
        assert got == expect, f"partition {p}: {records.first_difference([g[1] for g in got], [e[1] for e in expect])}"
    # offsets continue where they stopped
    with k.Connection(b.bootstrap) as c:
        res = k.produce(c, topic, 0, k.encode_batch([k.Record(b"after", b"restart")]))
        assert res.error == 0 and res.base_offset == n // parts
        err, _, latest = k.list_offsets(c, topic, 0, -1)
        assert err == 0 and latest == n // parts + 1
        err, _, earliest = k.list_offsets(c, topic, 0, -2)
        assert err == 0 and earliest == 0


def test_kill9_during_produce_stream_keeps_every_acknowledged_record(fresh_broker, topic):
    from confluent_kafka import Producer

    b = fresh_broker
    make_topic(b.bootstrap, topic, 1)
    acked = {}  # value -> offset
    failed = []
    p = Producer({"bootstrap.servers": b.bootstrap, "enable.idempotence": True, "acks": "all",
                  "linger.ms": 2, "batch.size": 16384, "message.timeout.ms": 120000,
                  "reconnect.backoff.max.ms": 500, "retry.backoff.max.ms": 500})

    def cb(err, msg):
        if err is None:
            acked[msg.value()] = msg.offset()
        else:
            failed.append((msg.value(), str(err)))

    i = 0
    killed_at = None
    deadline = time.monotonic() + 120
    # stream until 30k are acknowledged, kill -9 with records still in flight, keep producing a little more
    while time.monotonic() < deadline:
        try:
            for _ in range(500):
                p.produce(topic, value=b"rec-%08d" % i, key=b"k%d" % (i % 97), partition=0, on_delivery=cb)
                i += 1
        except BufferError:  # local queue full: let deliveries drain (or, once killed, stop producing)
            if killed_at is not None:
                break
            p.poll(0.05)
        p.poll(0.001)
        if killed_at is None and len(acked) >= 30000:
            b.kill9()
            killed_at = i
        elif killed_at is not None and i >= killed_at + 5000:
            break
    assert killed_at is not None, f"only {len(acked)} records acknowledged before the deadline"
    acked_before_kill = dict(acked)
    p.poll(1)
    b.start()  # same port and data dir
    left = p.flush(120)
    assert left == 0, f"{left} records still undelivered after the restart"

    got, hw = read_partition(b.bootstrap, topic, 0, len(acked), timeout=120)
    offsets = [o for o, _ in got]
    assert offsets == list(range(hw)), "offsets are not contiguous from 0"
    values = [line.split(" ")[1] for _, line in got]
    assert len(values) == len(set(values)), "a record was stored twice (idempotent producer)"
    stored = {bytes.fromhex(v[1:]): o for o, v in zip(offsets, values)}
    missing = [v for v in acked_before_kill if v not in stored]
    assert not missing, f"{len(missing)} records acknowledged before kill -9 are gone, e.g. {missing[:3]}"
    moved = [(v, o, stored[v]) for v, o in acked.items() if stored.get(v) != o]
    assert not moved, f"acknowledged records not at their acknowledged offsets: {moved[:3]}"
    # per key the order of production is kept
    seqs = [int(bytes.fromhex(v[1:])[4:]) for v in values]
    assert seqs == sorted(seqs), "records stored out of production order"
    print(f"acked before kill: {len(acked_before_kill)}, total stored: {hw}, failed callbacks: {len(failed)}")


@pytest.mark.parametrize("how", ["restart", "kill9"])
def test_idempotent_producer_state_survives(fresh_broker, topic, how):
    b = fresh_broker
    make_topic(b.bootstrap, topic, 1)
    with k.Connection(b.bootstrap) as c:
        pid, epoch = k.init_producer_id(c)
        batch0 = k.encode_batch([k.Record(b"a", b"1")], producer_id=pid, producer_epoch=epoch, base_sequence=0)
        batch1 = k.encode_batch([k.Record(b"b", b"2"), k.Record(b"c", b"3")], producer_id=pid,
                                producer_epoch=epoch, base_sequence=1)
        assert k.produce(c, topic, 0, batch0).base_offset == 0
        assert k.produce(c, topic, 0, batch1).base_offset == 1
    if how == "restart":
        b.restart()
    else:
        b.kill9()
        b.start()
    with k.Connection(b.bootstrap) as c:
        dup = k.produce(c, topic, 0, batch1)
        assert dup.error == 0 and dup.base_offset == 1, dup
        gap = k.produce(c, topic, 0, k.encode_batch([k.Record(b"d", b"4")], producer_id=pid,
                                                    producer_epoch=epoch, base_sequence=9))
        assert gap.error == k.OUT_OF_ORDER_SEQUENCE_NUMBER
        nxt = k.produce(c, topic, 0, k.encode_batch([k.Record(b"d", b"4")], producer_id=pid,
                                                    producer_epoch=epoch, base_sequence=3))
        assert nxt.error == 0 and nxt.base_offset == 3
        assert k.fetch(c, topic, 0, 0).high_watermark == 4


@pytest.mark.parametrize("garbage", ["partial_header", "zeros", "bad_crc_batch"])
def test_torn_tail_after_kill9_is_truncated(fresh_broker, topic, garbage):
    """A crash can leave a torn write at the end of the active segment (same file layout in Kafka and
    runnel: <data>/<topic>-<partition>/<20-digit base offset>.log). Recovery keeps every whole batch, drops the
    tail, and appends continue at the next offset."""
    b = fresh_broker
    make_topic(b.bootstrap, topic, 1)
    with k.Connection(b.bootstrap) as c:
        for i in range(5):
            assert k.produce(c, topic, 0, k.encode_batch(
                [k.Record(b"k%d" % i, b"v%d" % i), k.Record(None, b"")])).error == 0
    b.kill9()
    segs = sorted((b.data_dir / f"{topic}-0").glob("*.log"))
    assert segs, f"no segment files under {b.data_dir / f'{topic}-0'}"
    tail = {
        "partial_header": struct.pack(">qi", 10, 500) + b"\x00\x00",
        "zeros": b"\x00" * 4096,
        "bad_crc_batch": bytearray(k.encode_batch([k.Record(b"torn", b"x" * 100)])),
    }[garbage]
    if garbage == "bad_crc_batch":
        struct.pack_into(">q", tail, 0, 10)  # plausible next base offset
        tail[-1] ^= 0xFF
    with open(segs[-1], "ab") as f:
        f.write(bytes(tail))
    b.start()
    with k.Connection(b.bootstrap) as c:
        f = k.fetch(c, topic, 0, 0)
        assert f.error == 0 and f.high_watermark == 10
        recs = [(r.offset, r.key, r.value) for bt in f.batches() for r in bt.records]
        assert recs == [x for i in range(5) for x in ((2 * i, b"k%d" % i, b"v%d" % i), (2 * i + 1, None, b""))]
        res = k.produce(c, topic, 0, k.encode_batch([k.Record(b"after", b"crash")]))
        assert res.error == 0 and res.base_offset == 10
        assert k.fetch(c, topic, 0, 10).batches()[0].records[0].key == b"after"


@pytest.mark.skipif(__import__("conftest").MODE != "runnel", reason="edits runnel's metadata file")
def test_a_delete_cut_short_by_a_crash_leaves_no_stray_log(fresh_broker, topic):
    """A DeleteTopics rewrites the topic registry, then deletes the logs. `kill -9` between the two left the old
    logs on disk: a re-created topic of the same name then failed with KAFKA_STORAGE_ERROR, stayed listed
    without partitions, and the next start refused ("inconsistent topic id"). The crash is reproduced exactly
    by removing the topic from the registry of a killed broker; the broker must start, delete the stray logs,
    and serve a re-created topic from offset 0."""
    import json
    b = fresh_broker
    make_topic(b.bootstrap, topic, partitions=2)
    with k.Connection(b.bootstrap) as c:
        for p in (0, 1):
            assert k.produce(c, topic, p, k.encode_batch([k.Record(key=b"k", value=b"old")])).error == 0
    b.kill9()
    # the registry's change log gets the deletion (length, CRC-32C, JSON change), as a DeleteTopics writes it
    change = json.dumps({"op": "delete_topic", "name": topic}).encode()
    with open(b.data_dir / "runnel-metadata.log", "ab") as log:
        log.write(struct.pack(">II", len(change), k.crc32c(change)) + change)
    b.start()
    assert not (b.data_dir / f"{topic}-0").exists(), "the stray log was not deleted at start"
    make_topic(b.bootstrap, topic, partitions=2)
    with k.Connection(b.bootstrap) as c:
        for p in (0, 1):
            assert k.list_offsets(c, topic, p, -1)[::2] == (0, 0), f"partition {p} kept the old records"
            assert k.produce(c, topic, p, k.encode_batch([k.Record(key=b"k", value=b"new")])).error == 0
    b.restart()
    with k.Connection(b.bootstrap) as c:
        assert k.list_offsets(c, topic, 0, -1)[2] == 1
