"""Issue 16's admin surface over the raw protocol and Kafka's own tools: IncrementalAlterConfigs APPEND/SUBTRACT
on list configs (an empty list is stored), DescribeConfigs of a topic (every key with its source and synonyms),
DescribeTopicPartitions (KIP-966, key 75: paging with the cursor) and ListConfigResources (KIP-1142, key 74).

Every expectation was taken from Apache Kafka 4.4.0 (RUNNEL_TEST_BROKER=kafka) and passes against both brokers.
Known differences, asserted per broker kind:
- Kafka 4.4 sets `min.insync.replicas` at the cluster-default level by itself (ELR), so its topics show that key
  with source DYNAMIC_DEFAULT_BROKER_CONFIG; the key is left out of the comparison (topics here set it).
- Runnel lists every topic key Kafka does, with Kafka's value, source, synonyms and type; the compression levels,
  tiered storage and group dead-letter-queue keys are accepted without an effect, and `remote.storage.enable=true`
  is refused as by a Kafka broker without tiered storage.
- DescribeConfigs documentation: Kafka fills it (include_documentation); Runnel leaves it null.
- ListConfigResources: Kafka lists each broker's id as a BROKER_LOGGER (8) resource; Runnel has no such
  resource and answers that type with UNSUPPORTED_VERSION.
"""

from __future__ import annotations

import re
import time
import uuid

import pytest

import kproto as k
from conftest import MODE
from test_kafka_tools import tool

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
DYNAMIC_TOPIC, DEFAULT = 1, 5
INVALID_TOPIC, UNKNOWN_TOPIC, UNSUPPORTED_VERSION, INVALID_CONFIG, INVALID_REQUEST = 17, 3, 35, 40, 42
ALL_TOPIC_OPS = 3576  # Kafka's authorized-operations bits of a topic without an authorizer
OPS_OMITTED = -2147483648


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def eventually(check, timeout=15.0):
    """Retries `check` until it stops raising AssertionError (Kafka applies config changes asynchronously)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return check()
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def create(c, name, partitions=1, configs=None):
    assert k.create_topic(c, name, partitions, configs) == 0
    k.wait_topic_ready(c, name, partitions)


# ------------------------------------------------------------------ raw protocol (flexible versions)
def flexible(c, api, version, w: k.Writer) -> k.Reader:
    return c.request(api, version, bytes(w.buf), flexible_header=True, flexible_response=True)


def incremental_alter(c, name, entries):
    """IncrementalAlterConfigs v1 of one topic; entries = [(key, op, value)] → (error_code, message)."""
    def entry(w, e):
        w.compact_string(e[0]).i8(e[1]).compact_string(e[2]).tags()

    w = k.Writer()
    k.compact_array(w, [name], lambda w, n: k.compact_array(w.i8(TOPIC).compact_string(n), entries, entry).tags())
    r = flexible(c, 44, 1, w.i8(0).tags())
    r.i32()

    def result(r):
        out = (r.i16(), k.read_compact_string(r))
        r.i8(), k.read_compact_string(r), r.uvarint()
        return out
    (res,) = k.read_compact_array(r, result)
    return res


def describe_configs(c, rtype, name, keys=None, synonyms=True, version=4):
    """DescribeConfigs v4 of one resource → (error, {key: entry}); an entry is (value, read_only, source,
    sensitive, [(synonym, value, source)], config_type)."""
    w = k.Writer()

    def resource(w, _):
        w.i8(rtype).compact_string(name)
        if keys is None:
            w.uvarint(0)
        else:
            k.compact_array(w, keys, lambda w, s: w.compact_string(s))
        w.tags()
    k.compact_array(w, [None], resource)
    r = flexible(c, 32, version, w.i8(1 if synonyms else 0).i8(1).tags())
    r.i32()

    def synonym(r):
        s = (k.read_compact_string(r), k.read_compact_string(r), r.i8())
        r.uvarint()
        return s

    def entry(r):
        key, value, ro, src, sens = k.read_compact_string(r), k.read_compact_string(r), r.i8(), r.i8(), r.i8()
        syn, ty = k.read_compact_array(r, synonym), r.i8()
        k.read_compact_string(r)  # documentation: Kafka's prose, not compared
        r.uvarint()
        return key, (value, bool(ro), src, bool(sens), syn, ty)

    def result(r):
        err, _msg, _t, _n = r.i16(), k.read_compact_string(r), r.i8(), k.read_compact_string(r)
        entries = dict(k.read_compact_array(r, entry))
        r.uvarint()
        return err, entries
    (res,) = k.read_compact_array(r, result)
    return res


def describe_topic_partitions(c, topics, limit=2000, cursor=None):
    """DescribeTopicPartitions v0 → ([topic dict], next_cursor or None)."""
    w = k.Writer()
    k.compact_array(w, topics, lambda w, t: w.compact_string(t).tags())
    w.i32(limit)
    if cursor is None:
        w.i8(-1)
    else:
        w.i8(1).compact_string(cursor[0]).i32(cursor[1]).tags()
    r = flexible(c, 75, 0, w.tags())
    r.i32()

    def ints(r):
        return k.read_compact_array(r, lambda r: r.i32())

    def partition(r):
        p = (r.i16(), r.i32(), r.i32(), r.i32(), ints(r), ints(r), ints(r), ints(r), ints(r))
        r.uvarint()
        return p  # (error, index, leader, epoch, replicas, isr, elr, last_known_elr, offline)

    def topic(r):
        t = dict(error=r.i16(), name=k.read_compact_string(r), id=r.raw(16), internal=r.i8(),
                 partitions=k.read_compact_array(r, partition), ops=r.i32())
        r.uvarint()
        return t
    topics = k.read_compact_array(r, topic)
    next_cursor = None
    if r.i8() >= 0:
        next_cursor = (k.read_compact_string(r), r.i32())
        r.uvarint()
    return topics, next_cursor


def list_config_resources(c, types=(), version=1):
    """ListConfigResources → (error, [(name, type)]); v0 has no types (None)."""
    w = k.Writer()
    if version >= 1:
        k.compact_array(w, list(types), lambda w, t: w.i8(t))
    r = flexible(c, 74, version, w.tags())
    r.i32()
    err = r.i16()

    def resource(r):
        out = (k.read_compact_string(r), r.i8() if version >= 1 else None)
        r.uvarint()
        return out
    return err, k.read_compact_array(r, resource)


def api_versions(c) -> dict:
    return k.api_versions_v0(c)[1]


# ------------------------------------------------------------------ 1. list configs: APPEND / SUBTRACT
def cleanup_policy(c, name):
    _, entries = describe_configs(c, TOPIC, name, ["cleanup.policy"])
    value, _ro, source, _s, synonyms, _t = entries["cleanup.policy"]
    return value, source, synonyms


def test_subtract_to_empty_list_and_append(broker):
    name = unique("list-ops")
    with k.Connection(broker.bootstrap) as c:
        create(c, name, configs={"cleanup.policy": "delete"})
        steps = [
            ((SUBTRACT, "delete"), ""),          # confluent-kafka-python's test_incremental_alter_configs
            ((SUBTRACT, "compact"), ""),         # absent: no-op
            ((APPEND, "compact"), "compact"),    # onto the empty list: no empty item
            ((APPEND, "compact"), "compact"),    # present: no repeat
            ((APPEND, "delete,compact"), "compact,delete"),
            ((SUBTRACT, "delete,compact"), ""),
            ((SET, "delete, compact"), "delete,compact"),  # described trimmed
            ((SET, "delete,delete"), "delete"),            # and without repeats
            ((SET, ""), ""),
        ]
        for (op, value), want in steps:
            assert incremental_alter(c, name, [("cleanup.policy", op, value)]) == (0, None), (op, value)
            eventually(lambda: _expect(cleanup_policy(c, name), (
                want, DYNAMIC_TOPIC, [("cleanup.policy", want, DYNAMIC_TOPIC), ("log.cleanup.policy", "delete", DEFAULT)])))
        assert incremental_alter(c, name, [("cleanup.policy", DELETE, None)]) == (0, None)
        eventually(lambda: _expect(cleanup_policy(c, name), ("delete", DEFAULT, [("log.cleanup.policy", "delete", DEFAULT)])))
        # SUBTRACT of the default's only item stores the empty list as an override.
        assert incremental_alter(c, name, [("cleanup.policy", SUBTRACT, "delete")]) == (0, None)
        eventually(lambda: _expect(cleanup_policy(c, name)[:2], ("", DYNAMIC_TOPIC)))


def _expect(got, want):
    assert got == want, (got, want)


def test_list_op_errors(broker):
    name = unique("list-errors")
    with k.Connection(broker.bootstrap) as c:
        create(c, name)
        assert incremental_alter(c, name, [("retention.ms", APPEND, "5")]) == (
            INVALID_CONFIG, "Can't APPEND to key retention.ms because its type is not LIST.")
        assert incremental_alter(c, name, [("retention.ms", SUBTRACT, "5")]) == (
            INVALID_CONFIG, "Can't SUBTRACT to key retention.ms because its type is not LIST.")
        for op in (APPEND, SUBTRACT):
            assert incremental_alter(c, name, [("cleanup.policy", op, None)]) == (
                INVALID_REQUEST, "Null value not supported for : cleanup.policy")
        assert incremental_alter(c, name, [("cleanup.policy", APPEND, "bogus")])[0] == INVALID_CONFIG
        assert cleanup_policy(c, name)[:2] == ("delete", DEFAULT)


# ------------------------------------------------------------------ 2. DescribeConfigs of a topic
# Kafka 4.4.0's answer for a fresh topic created with retention.ms=12345 and min.insync.replicas=1, for every
# key Runnel has: (value, read_only, source, sensitive, synonyms, config_type).
BOOLEAN, STRING, INT, LONG, DOUBLE, LIST = 1, 2, 3, 5, 6, 7


def _default(key, value, ty, broker_key=None):
    return key, (value, False, DEFAULT, False, [(broker_key, value, DEFAULT)] if broker_key else [], ty)


FRESH_TOPIC = dict([
    _default("cleanup.policy", "delete", LIST, "log.cleanup.policy"),
    _default("compression.type", "producer", STRING, "compression.type"),
    _default("delete.retention.ms", "86400000", LONG, "log.cleaner.delete.retention.ms"),
    _default("file.delete.delay.ms", "60000", LONG, "log.segment.delete.delay.ms"),
    _default("flush.messages", "9223372036854775807", LONG, "log.flush.interval.messages"),
    _default("flush.ms", "9223372036854775807", LONG),
    _default("follower.replication.throttled.replicas", "", LIST),
    _default("index.interval.bytes", "4096", INT, "log.index.interval.bytes"),
    _default("leader.replication.throttled.replicas", "", LIST),
    _default("max.compaction.lag.ms", "9223372036854775807", LONG, "log.cleaner.max.compaction.lag.ms"),
    _default("max.message.bytes", "1048588", INT, "message.max.bytes"),
    _default("message.timestamp.after.max.ms", "3600000", LONG, "log.message.timestamp.after.max.ms"),
    _default("message.timestamp.before.max.ms", "9223372036854775807", LONG, "log.message.timestamp.before.max.ms"),
    _default("message.timestamp.type", "CreateTime", STRING, "log.message.timestamp.type"),
    _default("min.cleanable.dirty.ratio", "0.5", DOUBLE, "log.cleaner.min.cleanable.ratio"),
    _default("min.compaction.lag.ms", "0", LONG, "log.cleaner.min.compaction.lag.ms"),
    ("min.insync.replicas", None),  # Kafka 4.4 sets a cluster default (ELR): see the module docstring
    _default("preallocate", "false", BOOLEAN, "log.preallocate"),
    _default("retention.bytes", "-1", LONG, "log.retention.bytes"),
    ("retention.ms", ("12345", False, DYNAMIC_TOPIC, False, [("retention.ms", "12345", DYNAMIC_TOPIC)], LONG)),
    _default("segment.bytes", "1073741824", INT, "log.segment.bytes"),
    _default("segment.index.bytes", "10485760", INT, "log.index.size.max.bytes"),
    _default("segment.jitter.ms", "0", LONG),
    _default("segment.ms", "604800000", LONG),
    _default("unclean.leader.election.enable", "false", BOOLEAN, "unclean.leader.election.enable"),
])
# Keys Runnel lists with Kafka's defaults and synonyms but without an effect (levels, tiered storage, the
# group dead-letter queue): a Kafka user's tools see the same list.
FRESH_TOPIC.update([
    _default("compression.gzip.level", "-1", INT, "compression.gzip.level"),
    _default("compression.lz4.level", "9", INT, "compression.lz4.level"),
    _default("compression.zstd.level", "3", INT, "compression.zstd.level"),
    _default("errors.deadletterqueue.group.enable", "false", BOOLEAN),
    _default("local.retention.bytes", "-2", LONG, "log.local.retention.bytes"),
    _default("local.retention.ms", "-2", LONG, "log.local.retention.ms"),
    _default("max.decompressed.message.bytes", "2147483639", INT, "max.decompressed.message.bytes"),
    _default("remote.copy.lag.bytes", "-1", LONG, "log.remote.copy.lag.bytes"),
    _default("remote.copy.lag.ms", "0", LONG, "log.remote.copy.lag.ms"),
    _default("remote.log.copy.disable", "false", BOOLEAN),
    _default("remote.log.delete.on.disable", "false", BOOLEAN),
    _default("remote.storage.enable", "false", BOOLEAN),
])


def test_describe_configs_lists_every_topic_key_with_sources(broker):
    name = unique("describe-all")
    with k.Connection(broker.bootstrap) as c:
        create(c, name, configs={"retention.ms": "12345", "min.insync.replicas": "1"})
        err, entries = describe_configs(c, TOPIC, name)
        assert err == 0
        assert set(entries) == set(FRESH_TOPIC)
        for key, want in FRESH_TOPIC.items():
            if want is not None:
                assert entries[key] == want, (key, entries[key])
        assert entries["min.insync.replicas"] == (
            "1", False, DYNAMIC_TOPIC, False, [("min.insync.replicas", "1", DYNAMIC_TOPIC)] +
            ([("min.insync.replicas", "1", 3)] if MODE == "kafka" else []) + [("min.insync.replicas", "1", DEFAULT)],
            INT)
        # Without synonyms, and only the keys asked for.
        err, entries = describe_configs(c, TOPIC, name, ["retention.ms", "segment.ms", "no.such.key"],
                                        synonyms=False)
        assert (err, entries) == (0, {"retention.ms": ("12345", False, DYNAMIC_TOPIC, False, [], LONG),
                                      "segment.ms": ("604800000", False, DEFAULT, False, [], LONG)})


def test_remote_storage_is_refused_as_by_a_broker_without_tiered_storage(broker):
    name = unique("remote")
    with k.Connection(broker.bootstrap) as c:
        create(c, name)
        err, _ = incremental_alter(c, name, [("remote.storage.enable", SET, "true")])
        assert err == INVALID_CONFIG
        assert incremental_alter(c, name, [("remote.storage.enable", SET, "false")])[0] == 0
        assert incremental_alter(c, name, [("compression.zstd.level", SET, "5")])[0] == 0


# ------------------------------------------------------------------ 3. DescribeTopicPartitions
def partitions_of(topic):
    return [p[1] for p in topic["partitions"]]


def test_describe_topic_partitions_named_topics(broker):
    a, b = unique("dtp-a"), unique("dtp-b")
    with k.Connection(broker.bootstrap) as c:
        assert api_versions(c)[75] == (0, 0)
        create(c, a, 3)
        create(c, b, 2)
        topics, cursor = describe_topic_partitions(c, [b, a, "nope-" + a, a, "bad name!"])
        assert cursor is None
        assert [(t["name"], t["error"], t["internal"], t["ops"]) for t in topics] == [
            ("bad name!", INVALID_TOPIC, 0, ALL_TOPIC_OPS), (a, 0, 0, ALL_TOPIC_OPS), (b, 0, 0, ALL_TOPIC_OPS),
            ("nope-" + a, UNKNOWN_TOPIC, 0, ALL_TOPIC_OPS)]
        assert topics[0]["id"] == bytes(16) and topics[3]["id"] == bytes(16) and topics[1]["id"] != bytes(16)
        assert topics[0]["partitions"] == [] and topics[3]["partitions"] == []
        # leader 1, epoch 0, replicas [1], ISR [1], ELR and last known ELR empty (not null), none offline
        assert topics[1]["partitions"] == [(0, p, 1, 0, [1], [1], [], [], []) for p in range(3)]
        assert partitions_of(topics[2]) == [0, 1]


def test_describe_topic_partitions_cursor(broker):
    base = unique("dtp-cursor")
    a, b, c_ = f"{base}-a", f"{base}-b", f"{base}-c"
    with k.Connection(broker.bootstrap) as c:
        for name, n in ((a, 3), (b, 2), (c_, 1)):
            create(c, name, n)

        def page(topics, limit, cursor=None):
            ts, nxt = describe_topic_partitions(c, topics, limit, cursor)
            return [(t["name"], t["error"], partitions_of(t)) for t in ts], nxt
        named = [a, b, c_]
        assert page(named, 2) == ([(a, 0, [0, 1])], (a, 2))
        assert page(named, 3) == ([(a, 0, [0, 1, 2])], (b, 0))  # limit reached at a topic's end
        assert page(named, 4, (a, 1)) == ([(a, 0, [1, 2]), (b, 0, [0, 1])], (c_, 0))
        assert page(named, 4, (b, 5)) == ([(b, 0, []), (c_, 0, [0])], None)  # past the end: empty
        assert page(named, 0) == ([(a, 0, [0])], (a, 1))  # the limit is at least 1
        assert page(named, -5) == ([(a, 0, [0])], (a, 1))
        # Every topic (an empty list): from the cursor's topic on, in name order.
        got, nxt = page([], 2, (b, 1))
        assert got == [(b, 0, [1]), (c_, 0, [0])]
        assert nxt is None or (nxt[0] > c_ and nxt[1] == 0)  # the next topic of the shared broker, if any
        assert page([], 2, (f"{base}-aa", 7)) == ([(b, 0, [0, 1])], (c_, 0))
        # A cursor outside the listed topics, or a negative partition: INVALID_REQUEST for every topic.
        for topics, cursor in (([a, c_], (b, 0)), ([a, b], (b, -1))):
            ts, nxt = describe_topic_partitions(c, topics, 4, cursor)
            assert nxt is None
            assert [(t["name"], t["error"], t["id"], t["partitions"], t["ops"]) for t in ts] == [
                (t, INVALID_REQUEST, bytes(16), [], OPS_OMITTED) for t in topics]


def test_kafka_topics_describe_uses_describe_topic_partitions(broker):
    name = unique("dtp-tool")
    with k.Connection(broker.bootstrap) as c:
        create(c, name, 2, {"min.insync.replicas": "1", "retention.ms": "12345"})
    out = tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", broker.bootstrap, "--describe",
               "--topic", name)
    out = re.sub(r"TopicId: \S+", "TopicId: ID", out)
    # Elr / LastKnownElr are printed only from a DescribeTopicPartitions answer.
    assert out == (
        f"Topic: {name}\tTopicId: ID\tPartitionCount: 2\tReplicationFactor: 1\t"
        f"Configs: min.insync.replicas=1,retention.ms=12345\n"
        f"\tTopic: {name}\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1\tElr: \tLastKnownElr: \n"
        f"\tTopic: {name}\tPartition: 1\tLeader: 1\tReplicas: 1\tIsr: 1\tElr: \tLastKnownElr: \n"), out


# ------------------------------------------------------------------ 4. ListConfigResources
def test_list_config_resources(broker):
    name = unique("lcr")
    with k.Connection(broker.bootstrap) as c:
        assert api_versions(c)[74] == (0, 1)
        create(c, name)
        assert list_config_resources(c, version=0) == (0, [])  # v0: client-metrics resources only
        err, topics = list_config_resources(c, [TOPIC])
        assert err == 0 and (name, TOPIC) in topics and {t for _, t in topics} == {TOPIC}
        assert list_config_resources(c, [BROKER]) == (0, [("1", BROKER)])
        assert list_config_resources(c, [CLIENT_METRICS]) == (0, [])
        assert list_config_resources(c, [GROUP]) == (0, [])
        assert list_config_resources(c, [1]) == (UNSUPPORTED_VERSION, [])
        assert list_config_resources(c, [TOPIC, 99]) == (UNSUPPORTED_VERSION, [])
        err, both = list_config_resources(c, [TOPIC, BROKER])
        assert err == 0 and both[0] == ("1", BROKER) and sorted(both[1:]) == sorted(topics)
        err, every = list_config_resources(c)
        assert err == 0
        logger = [("1", BROKER_LOGGER)] if MODE == "kafka" else []
        assert every[:len(logger) + 1] == logger + [("1", BROKER)]
        assert sorted(every[len(logger) + 1:]) == sorted(topics)


@pytest.mark.skipif(MODE != "kafka", reason="Runnel has no BROKER_LOGGER resource (see the module docstring)")
def test_list_config_resources_broker_logger(broker):
    with k.Connection(broker.bootstrap) as c:
        assert list_config_resources(c, [BROKER_LOGGER]) == (0, [("1", BROKER_LOGGER)])
