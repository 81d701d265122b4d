"""Kafka behaviours of issue 2's APIs beyond the pitfalls, over raw sockets (validated against Kafka 4.4.0):
produce validation (CRC, structure, max.message.bytes, internal topics refused), LogAppendTime, ListOffsets (-1, -2, -3, by timestamp),
Metadata auto-creation and its allow flag, CreateTopics/DeleteTopics errors, DescribeConfigs.
"""

from __future__ import annotations

import struct
import time
import uuid

import pytest

import kproto as k
from conftest import make_topic

pytestmark = pytest.mark.api

CORRUPT_MESSAGE = 2
UNKNOWN_TOPIC = 3
MESSAGE_TOO_LARGE = 10
INVALID_TOPIC = 17
INVALID_PARTITIONS = 37
INVALID_REPLICATION_FACTOR = 38
INVALID_RECORD = 87


def recs(n, size=10):
    return [k.Record(b"k%d" % i, b"v" * size) for i in range(n)]


# ------------------------------------------------------------------ produce validation
def test_corrupt_crc_is_rejected_with_error_2(broker, topic):
    make_topic(broker.bootstrap, topic, 1)
    batch = bytearray(k.encode_batch(recs(3)))
    batch[-1] ^= 0xFF  # flip the last byte of the last record: CRC no longer matches
    with k.Connection(broker.bootstrap) as c:
        res = k.produce(c, topic, 0, bytes(batch))
        assert res.error == CORRUPT_MESSAGE
        assert k.fetch(c, topic, 0, 0).high_watermark == 0
        assert k.produce(c, topic, 0, k.encode_batch(recs(1))).error == 0


def fix_crc(batch: bytearray) -> bytes:
    struct.pack_into(">I", batch, 17, k.crc32c(bytes(batch[21:])))
    return bytes(batch)


def test_record_count_mismatch_is_rejected(broker, topic):
    make_topic(broker.bootstrap, topic, 1)
    batch = bytearray(k.encode_batch(recs(3)))
    struct.pack_into(">i", batch, 57, 5)  # records count says 5, only 3 follow; CRC recomputed
    with k.Connection(broker.bootstrap) as c:
        res = k.produce(c, topic, 0, fix_crc(batch))
        assert res.error == INVALID_RECORD, res  # Kafka 4.4: 87
        assert k.fetch(c, topic, 0, 0).high_watermark == 0


def test_truncated_batch_is_rejected(broker, topic):
    make_topic(broker.bootstrap, topic, 1)
    batch = k.encode_batch(recs(3))
    with k.Connection(broker.bootstrap) as c:
        res = k.produce(c, topic, 0, batch[:-7])
        assert res.error == INVALID_RECORD, res  # Kafka 4.4: 87
        assert k.fetch(c, topic, 0, 0).high_watermark == 0


def test_max_message_bytes_is_error_10(broker, topic):
    make_topic(broker.bootstrap, topic, 1, {"max.message.bytes": "2000"})
    with k.Connection(broker.bootstrap) as c:
        assert k.produce(c, topic, 0, k.encode_batch(recs(1, 3000))).error == MESSAGE_TOO_LARGE
        assert k.produce(c, topic, 0, k.encode_batch(recs(1, 1000))).error == 0
        assert k.fetch(c, topic, 0, 0).high_watermark == 1


def test_log_append_time_topic(broker, topic):
    make_topic(broker.bootstrap, topic, 1, {"message.timestamp.type": "LogAppendTime"})
    with k.Connection(broker.bootstrap) as c:
        before = int(time.time() * 1000)
        res = k.produce(c, topic, 0, k.encode_batch(recs(2), timestamp=1_000_000))
        after = int(time.time() * 1000)
        assert res.error == 0
        assert before - 5000 <= res.log_append_time <= after + 5000, res
        (b,) = k.fetch(c, topic, 0, 0).batches()
        assert b.attributes & 0x08, "timestamp-type bit (LogAppendTime) not set on the stored batch"
        assert b.crc_ok


def test_create_time_is_kept_as_sent(broker, topic):
    make_topic(broker.bootstrap, topic, 1)
    ts = int(time.time() * 1000) - 60_000
    with k.Connection(broker.bootstrap) as c:
        res = k.produce(c, topic, 0, k.encode_batch(recs(2), timestamp=ts))
        assert res.error == 0 and res.log_append_time == -1
        (b,) = k.fetch(c, topic, 0, 0).batches()
        assert not b.attributes & 0x08
        assert [r.timestamp for r in b.records] == [ts, ts]


def produce_two_topics(conn, a: str, b: str, batch: bytes) -> dict:
    """One Produce v8 (acks=-1) with partition 0 of topics `a` and `b`; returns {topic: (error, base_offset)}."""
    w = k.Writer().string(None).i16(-1).i32(30000).i32(2)
    for t in (a, b):
        w.string(t).i32(1).i32(0).bytes_(batch)
    r = conn.request(k.PRODUCE, 8, bytes(w.buf))
    out = {}
    for _ in range(r.i32()):
        name = r.string()
        for _ in range(r.i32()):
            r.i32()
            err, base = r.i16(), r.i64()
            r.i64(), r.i64()
            r.array(lambda r: (r.i32(), r.string()))
            r.string()
            out[name] = (err, base)
    r.i32()
    return out


def test_produce_to_consumer_offsets_is_refused_but_the_coordinator_still_writes(broker, topic):
    """Kafka refuses a client's Produce to an internal topic with INVALID_TOPIC_EXCEPTION (17), per partition
    (the request's other partitions are appended); the group coordinator's own writes go on."""
    from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
    make_topic(broker.bootstrap, topic, 1)
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}",
                  "enable.auto.commit": False})
    try:
        c.commit(offsets=[TopicPartition(topic, 0, 5)], asynchronous=False)  # __consumer_offsets exists now
        errors = []
        p = Producer({"bootstrap.servers": broker.bootstrap, "message.timeout.ms": 20000})
        p.produce("__consumer_offsets", key=b"k", value=b"v", partition=0,
                  on_delivery=lambda err, msg: errors.append(err))
        assert p.flush(30) == 0
        assert errors[0] is not None and errors[0].code() == KafkaError.TOPIC_EXCEPTION, errors
        with k.Connection(broker.bootstrap) as conn:
            got = produce_two_topics(conn, topic, "__consumer_offsets", k.encode_batch(recs(2)))
        assert got[topic] == (0, 0) and got["__consumer_offsets"][0] == INVALID_TOPIC, got
        c.commit(offsets=[TopicPartition(topic, 0, 7)], asynchronous=False)
        assert c.committed([TopicPartition(topic, 0)], timeout=10)[0].offset == 7
    finally:
        c.close()


# ------------------------------------------------------------------ ListOffsets
def list_offsets_v7(conn, topic, partition, timestamp):
    """ListOffsets v7 (flexible) → (error, timestamp, offset). Needed for -3 (max timestamp)."""
    w = (k.Writer().i32(-1).i8(0).uvarint(2).compact_string(topic).uvarint(2).i32(partition).i32(-1)
         .i64(timestamp).tags().tags().tags())
    corr = conn.send(k.LIST_OFFSETS, 7, bytes(w.buf), flexible_header=True)
    got, r = conn.recv(flexible_header=True)
    assert got == corr
    r.i32()
    assert r.uvarint() == 2
    r.raw(r.uvarint() - 1)
    assert r.uvarint() == 2
    r.i32()
    err, ts, off = r.i16(), r.i64(), r.i64()
    return err, ts, off


def test_list_offsets_latest_earliest_max_timestamp_and_by_time(broker, topic):
    make_topic(broker.bootstrap, topic, 1)
    now = int(time.time() * 1000)
    with k.Connection(broker.bootstrap) as c:
        assert k.list_offsets(c, topic, 0, -1)[::2] == (0, 0)
        assert k.list_offsets(c, topic, 0, -2)[::2] == (0, 0)
        # three batches of 2 records: timestamps now-30s, now-10s (the max), now-20s
        for ts in (now - 30_000, now - 10_000, now - 20_000):
            assert k.produce(c, topic, 0, k.encode_batch(recs(2), timestamp=ts)).error == 0
        assert k.list_offsets(c, topic, 0, -1) == (0, -1, 6)
        assert k.list_offsets(c, topic, 0, -2) == (0, -1, 0)
        # by timestamp: the first offset whose timestamp >= the target
        assert k.list_offsets(c, topic, 0, now - 30_000) == (0, now - 30_000, 0)
        assert k.list_offsets(c, topic, 0, now - 25_000) == (0, now - 10_000, 2)
        assert k.list_offsets(c, topic, 0, now - 10_000) == (0, now - 10_000, 2)
        err, ts, off = k.list_offsets(c, topic, 0, now)  # nothing that late
        assert err == 0 and off == -1 and ts == -1
        _, apis = k.api_versions_v0(c)
        if apis[k.LIST_OFFSETS][1] >= 7:
            # max timestamp (-3): the first record carrying the largest timestamp (Kafka 4.4: offset 2 here)
            assert list_offsets_v7(c, topic, 0, -3) == (0, now - 10_000, 2)


def test_list_offsets_unknown_partition(broker, topic):
    make_topic(broker.bootstrap, topic, 1)
    with k.Connection(broker.bootstrap) as c:
        assert k.list_offsets(c, topic, 5, -1)[0] == UNKNOWN_TOPIC


# ------------------------------------------------------------------ Metadata auto-creation
def test_metadata_auto_creation_honours_allow_flag(broker):
    name = f"auto-{uuid.uuid4().hex[:10]}"
    with k.Connection(broker.bootstrap) as c:
        w = k.Writer().i32(1).string(name).i8(0).i8(0).i8(0)  # v8, allow_auto_topic_creation=false
        r = c.request(k.METADATA, 8, bytes(w.buf))
        md = parse_metadata_v8_topics(r)
        assert md[name] == UNKNOWN_TOPIC
        # still not created
        r = c.request(k.METADATA, 8, bytes(k.Writer().i32(1).string(name).i8(0).i8(0).i8(0).buf))
        assert parse_metadata_v8_topics(r)[name] == UNKNOWN_TOPIC
        # allowed: created with num.partitions (4) partitions
        k.wait_topic_ready(c, name, 4)
        assert len(k.metadata(c, [name])[name][1]) == 4


def parse_metadata_v8_topics(r):
    r.i32()
    r.array(lambda r: (r.i32(), r.string(), r.i32(), r.string()))
    r.string()
    r.i32()
    out = {}
    for _ in range(r.i32()):
        err, name, _ = r.i16(), r.string(), r.i8()
        r.array(lambda r: (r.i16(), r.i32(), r.i32(), r.i32(), r.array(lambda r: r.i32()),
                           r.array(lambda r: r.i32()), r.array(lambda r: r.i32())))
        r.i32()
        out[name] = err
    return out


def test_produce_to_unknown_topic_auto_creates_via_client(broker):
    """confluent-kafka producing to a new topic works with nothing configured (auto-creation)."""
    from confluent_kafka import Producer
    name = f"autoprod-{uuid.uuid4().hex[:10]}"
    p = Producer({"bootstrap.servers": broker.bootstrap})
    delivered = []
    p.produce(name, b"hello", on_delivery=lambda err, msg: delivered.append((err, msg.partition())))
    assert p.flush(30) == 0
    assert delivered and delivered[0][0] is None, delivered
    with k.Connection(broker.bootstrap) as c:
        assert len(k.metadata(c, [name])[name][1]) == 4


# ------------------------------------------------------------------ CreateTopics / DeleteTopics
def create_topic_err(conn, name, partitions, replication=1):
    w = k.Writer().i32(1).string(name).i32(partitions).i16(replication).i32(0).i32(0).i32(30000).i8(0)
    r = conn.request(k.CREATE_TOPICS, 4, bytes(w.buf))
    r.i32()
    return r.array(lambda r: (r.string(), r.i16(), r.string()))[0][1]


def test_create_topics_errors(broker, topic):
    with k.Connection(broker.bootstrap) as c:
        assert create_topic_err(c, topic, 2) == 0
        assert create_topic_err(c, topic, 2) == k.TOPIC_ALREADY_EXISTS
        assert create_topic_err(c, topic + "-z", 0) == INVALID_PARTITIONS
        assert create_topic_err(c, "bad/name", 1) == INVALID_TOPIC
        assert create_topic_err(c, "x" * 250, 1) == INVALID_TOPIC
        assert create_topic_err(c, topic + "-rf", 1, replication=3) == INVALID_REPLICATION_FACTOR


def test_partition_count_beyond_the_open_file_budget_is_refused(broker, topic):
    """Runnel refuses a topic (or growth) that would need more partitions than its open-file limit allows,
    with INVALID_PARTITIONS, instead of running out of file handles half-way (Kafka has no such check and
    would try), and stays healthy. Runnel only."""
    if broker.kind != "runnel":
        pytest.skip("runnel's partition budget; Kafka has none")
    with k.Connection(broker.bootstrap) as c:
        assert create_topic_err(c, topic + "-huge", 10_000_000) == INVALID_PARTITIONS
        assert create_topic_err(c, topic, 2) == 0
    names = [t for t in _metadata_topic_names(broker.bootstrap)]
    assert topic in names and topic + "-huge" not in names


def _metadata_topic_names(bootstrap):
    from confluent_kafka.admin import AdminClient
    return list(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics)


def test_delete_topics(broker, topic):
    make_topic(broker.bootstrap, topic, 2)
    with k.Connection(broker.bootstrap) as c:
        assert k.produce(c, topic, 0, k.encode_batch(recs(3))).error == 0
        w = k.Writer().i32(1).string(topic).i32(30000)
        r = c.request(20, 1, bytes(w.buf))  # DeleteTopics v1
        r.i32()
        assert r.array(lambda r: (r.string(), r.i16())) == [(topic, 0)]
        deadline = time.monotonic() + 30
        while True:
            r = c.request(k.METADATA, 8, bytes(k.Writer().i32(1).string(topic).i8(0).i8(0).i8(0).buf))
            if parse_metadata_v8_topics(r)[topic] == UNKNOWN_TOPIC:
                break
            assert time.monotonic() < deadline, "topic still listed 30 s after DeleteTopics"
            time.sleep(0.1)
        r = c.request(20, 1, bytes(k.Writer().i32(1).string(topic).i32(30000).buf))
        r.i32()
        assert r.array(lambda r: (r.string(), r.i16())) == [(topic, UNKNOWN_TOPIC)]


# ------------------------------------------------------------------ DescribeConfigs
def describe_configs(conn, resource_type, name, keys=None):
    """DescribeConfigs v1 → (error, {name: (value, read_only, source)})."""
    w = k.Writer().i32(1).i8(resource_type).string(name)
    if keys is None:
        w.i32(-1)
    else:
        w.i32(len(keys))
        for key in keys:
            w.string(key)
    w.i8(0)
    r = conn.request(32, 1, bytes(w.buf))
    r.i32()
    assert r.i32() == 1
    err, _msg, _rt, _rn = r.i16(), r.string(), r.i8(), r.string()
    configs = {}
    for _ in range(r.i32()):
        cname, value, ro, source, _sens = r.string(), r.string(), r.i8(), r.i8(), r.i8()
        r.array(lambda r: (r.string(), r.string(), r.i8()))
        configs[cname] = (value, ro, source)
    return err, configs


def test_describe_configs_topic_and_broker(broker, topic):
    make_topic(broker.bootstrap, topic, 1, {"retention.ms": "3600000"})
    with k.Connection(broker.bootstrap) as c:
        err, cfg = describe_configs(c, 2, topic)
        assert err == 0
        assert cfg["retention.ms"][0] == "3600000" and cfg["retention.ms"][2] == 1  # DYNAMIC_TOPIC_CONFIG
        assert cfg["cleanup.policy"][0] == "delete"
        assert cfg["segment.bytes"][0] == "1073741824"
        assert cfg["max.message.bytes"][0] == "1048588"
        err, cfg = describe_configs(c, 2, topic, ["retention.ms"])
        assert err == 0 and list(cfg) == ["retention.ms"]
        err, _ = describe_configs(c, 2, "no-such-topic-" + uuid.uuid4().hex[:6])
        assert err == UNKNOWN_TOPIC
        node = k.metadata_brokers(c)[0]
        err, cfg = describe_configs(c, 4, str(node))
        assert err == 0
        assert cfg["num.partitions"][0] == "4"
        assert cfg["log.segment.bytes"][0] == "1073741824"


# ------------------------------------------------------------------ Fetch size limits (KIP-74)
def test_fetch_first_batch_whole_even_above_limits(broker, topic):
    make_topic(broker.bootstrap, topic, 1)
    big = [k.Record(b"big", b"x" * 200_000)]
    with k.Connection(broker.bootstrap) as c:
        assert k.produce(c, topic, 0, k.encode_batch(big)).error == 0
        assert k.produce(c, topic, 0, k.encode_batch(recs(3))).error == 0
        f = k.fetch(c, topic, 0, 0, max_bytes=1000, partition_max_bytes=1000)
        assert f.error == 0
        batches = f.batches()
        assert batches and batches[0].base_offset == 0 and batches[0].records[0].value == b"x" * 200_000


def test_fetch_partition_max_bytes_bounds_the_rest(broker, topic):
    make_topic(broker.bootstrap, topic, 1)
    with k.Connection(broker.bootstrap) as c:
        for i in range(10):
            assert k.produce(c, topic, 0, k.encode_batch([k.Record(b"%d" % i, b"y" * 10_000)])).error == 0
        f = k.fetch(c, topic, 0, 0, partition_max_bytes=25_000)
        assert f.error == 0 and f.high_watermark == 10
        assert f.records_length <= 25_000
        batches = f.batches()  # whole batches; a trailing partial one is allowed and skipped
        assert [b.base_offset for b in batches] == list(range(len(batches))) and 1 <= len(batches) <= 2
        # a consumer continuing from there gets the rest in order
        seen, offset = [], 0
        while offset < 10:
            got = k.fetch(c, topic, 0, offset, partition_max_bytes=25_000).batches()
            assert got, f"no whole batch returned at offset {offset}"
            for b in got:
                seen.append(b.base_offset)
                offset = b.last_offset + 1
        assert seen == list(range(10))


def test_fetch_response_max_bytes_across_partitions(broker, topic):
    make_topic(broker.bootstrap, topic, 3)
    with k.Connection(broker.bootstrap) as c:
        for p in range(3):
            for i in range(3):
                assert k.produce(c, topic, p, k.encode_batch([k.Record(b"k", b"z" * 10_000)])).error == 0
        body = k.fetch_body(topic, 0, 0, 11, max_bytes=15_000, partition_max_bytes=1_000_000,
                            partitions=[(0, 0), (1, 0), (2, 0)])
        parts = k.parse_fetch_all(c.request(k.FETCH, 11, body), 11)
        total = sum(max(p.records_length, 0) for p in parts.values())
        assert parts[0].batches(), "the first partition's first batch must be returned whole"
        assert total <= 15_000, f"response carried {total} record bytes for max_bytes=15000"  # Kafka: 15000
