"""Client quotas and connection limits (issue 14): Kafka's kafka-configs tool (ConfigCommand) setting and
describing client quotas through AlterClientQuotas/DescribeClientQuotas, byte-rate enforcement as KIP-219
(throttle_time_ms in the answer, the connection muted meanwhile) seen by confluent-kafka and by a raw client,
request_percentage (KIP-124) and controller_mutation_rate (KIP-599) seen by a raw client, and the connection
limits at accept.

Codes are Kafka 4.4.0's (ClientQuotaControlManager / ClientQuotasImage): INVALID_REQUEST 42 for a bad entity or
key, UNSUPPORTED_VERSION 35 for an unknown entity type in a describe filter; THROTTLING_QUOTA_EXCEEDED 89 for a
topic mutation over controller_mutation_rate (ControllerMutationQuotaManager: strict from CreateTopics v6,
DeleteTopics v5, CreatePartitions v3).
"""

from __future__ import annotations

import json
import os
import re
import socket
import struct
import threading
import time

import pytest

import kproto as k
from conftest import MODE, make_topic, new_broker
from test_kafka_tools import tool

pytestmark = pytest.mark.skipif(MODE != "runnel", reason="starts brokers with quota/connection settings")

CONFIG_TOOL = "org.apache.kafka.tools.ConfigCommand"
# The 1 MB/s producer is measured over RATE_MEASURE_S seconds on a broker sampling rates in RATE_SAMPLES windows of
# 1 s (quota.window.num). A cold rate lets a first burst of RATE_SAMPLES - 1 windows' worth through, so the measured
# average overshoots the quota by about (RATE_SAMPLES - 1) / RATE_MEASURE_S of it at most: Kafka's 11 windows over 30 s
# with RUNNEL_TEST_FULL=1, 4 windows over 12 s otherwise (the same bound on the overshoot, 18 s less).
FULL = os.environ.get("RUNNEL_TEST_FULL") == "1"
RATE_SAMPLES, RATE_MEASURE_S = (11, 30) if FULL else (4, 12)
DESCRIBE_CLIENT_QUOTAS, ALTER_CLIENT_QUOTAS = 48, 49
INVALID_REQUEST, UNSUPPORTED_VERSION, THROTTLING_QUOTA_EXCEEDED = 42, 35, 89
MB = 1024 * 1024


@pytest.fixture(scope="module")
def qbroker():
    b = new_broker()
    yield b
    b.close()


def configs(bootstrap, *args):
    return tool(CONFIG_TOOL, "--bootstrap-server", bootstrap, *args)


def alter_quota(bootstrap, entity, ops, validate_only=False) -> tuple[int, str | None]:
    """AlterClientQuotas v0 with one entry: entity = [(type, name|None)], ops = [(key, value|None)]."""
    w = k.Writer().i32(1).i32(len(entity))
    for t, n in entity:
        w.string(t).string(n)
    w.i32(len(ops))
    for key, value in ops:
        w.string(key).raw(struct.pack(">d", value or 0.0)).i8(1 if value is None else 0)
    w.i8(1 if validate_only else 0)
    with k.Connection(bootstrap) as c:
        r = c.request(ALTER_CLIENT_QUOTAS, 0, bytes(w.buf))
        r.i32()  # throttle
        assert r.i32() == 1
        err, msg = r.i16(), r.string()
        r.array(lambda r: (r.string(), r.string()))
        return err, msg


def describe_quotas(bootstrap, components, strict=False):
    """DescribeClientQuotas v0: components = [(type, match_type, match|None)] → (error, {entity: values})."""
    w = k.Writer().i32(len(components))
    for t, mt, m in components:
        w.string(t).i8(mt).string(m)
    w.i8(1 if strict else 0)
    with k.Connection(bootstrap) as c:
        r = c.request(DESCRIBE_CLIENT_QUOTAS, 0, bytes(w.buf))
        r.i32()
        err, _msg = r.i16(), r.string()
        out = {}
        for _ in range(max(r.i32(), 0)):
            entity = tuple(r.array(lambda r: (r.string(), r.string())))
            values = dict(r.array(lambda r: (r.string(), struct.unpack(">d", r.raw(8))[0])))
            out[entity] = values
        return err, out


def test_kafka_configs_sets_describes_and_deletes_client_quotas(qbroker):
    b = qbroker.bootstrap
    configs(b, "--alter", "--add-config", "producer_byte_rate=1048576,consumer_byte_rate=2097152",
            "--entity-type", "clients", "--entity-name", "tool-c1")
    configs(b, "--alter", "--add-config", "request_percentage=50", "--entity-type", "users", "--entity-name",
            "alice", "--entity-type", "clients", "--entity-default")
    out = configs(b, "--describe", "--entity-type", "clients", "--entity-name", "tool-c1")
    assert re.search(r"producer_byte_rate=1048576(\.0)?\b", out), out
    assert re.search(r"consumer_byte_rate=2097152(\.0)?\b", out), out
    out = configs(b, "--describe", "--entity-type", "users", "--entity-name", "alice", "--entity-type",
                  "clients", "--entity-default")
    assert re.search(r"request_percentage=50(\.0)?\b", out), out
    # Every client-id entity (named and default ones).
    out = configs(b, "--describe", "--entity-type", "clients")
    assert "tool-c1" in out, out
    configs(b, "--alter", "--delete-config", "producer_byte_rate", "--entity-type", "clients", "--entity-name",
            "tool-c1")
    err, found = describe_quotas(b, [("client-id", 0, "tool-c1")])
    assert err == 0
    assert found == {(("client-id", "tool-c1"),): {"consumer_byte_rate": 2097152.0}}, found


def test_alter_and_describe_client_quotas_refuse_what_kafka_refuses(qbroker):
    b = qbroker.bootstrap
    assert alter_quota(b, [("client-id", "raw-c")], [("producer_byte_rate", 1.5)])[0] == INVALID_REQUEST
    assert alter_quota(b, [("client-id", "raw-c")], [("no_such_key", 1.0)])[0] == INVALID_REQUEST
    assert alter_quota(b, [("group", "g")], [("producer_byte_rate", 1.0)])[0] == INVALID_REQUEST
    assert alter_quota(b, [], [("producer_byte_rate", 1.0)])[0] == INVALID_REQUEST
    assert alter_quota(b, [("client-id", "")], [("producer_byte_rate", 1.0)])[0] == INVALID_REQUEST
    # validate_only changes nothing.
    assert alter_quota(b, [("client-id", "raw-c")], [("producer_byte_rate", 100.0)], validate_only=True) == (0, None)
    assert describe_quotas(b, [("client-id", 0, "raw-c")]) == (0, {})
    assert describe_quotas(b, [("group", 2, None)])[0] == UNSUPPORTED_VERSION
    assert describe_quotas(b, [("client-id", 0, None)])[0] == INVALID_REQUEST
    assert describe_quotas(b, [("client-id", 2, None), ("client-id", 2, None)])[0] == INVALID_REQUEST
    # Strict: only entities made of exactly the filtered types.
    assert alter_quota(b, [("user", "bob"), ("client-id", "raw-c")], [("consumer_byte_rate", 10.0)])[0] == 0
    assert alter_quota(b, [("user", "bob")], [("consumer_byte_rate", 20.0)])[0] == 0
    _, loose = describe_quotas(b, [("user", 0, "bob")])
    _, strict = describe_quotas(b, [("user", 0, "bob")], strict=True)
    assert len(loose) == 2 and list(strict.values()) == [{"consumer_byte_rate": 20.0}], (loose, strict)


def test_quotas_survive_a_restart():
    b = new_broker()
    try:
        assert alter_quota(b.bootstrap, [("user", None)], [("producer_byte_rate", 4096.0)])[0] == 0
        b.restart()
        err, found = describe_quotas(b.bootstrap, [("user", 1, None)])
        assert (err, found) == (0, {(("user", None),): {"producer_byte_rate": 4096.0}})
    finally:
        b.close()


def raw_produce_throttle(conn, topic, value_bytes) -> tuple[int, int]:
    """A Produce v8 of one record; → (partition error, throttle_time_ms)."""
    batch = k.encode_batch([k.Record(b"k", b"x" * value_bytes)])
    r = conn.request(k.PRODUCE, 8, k.produce_body(topic, 0, batch, acks=1))
    part = k.parse_produce(r, 8)
    return part.error, r.i32()


def test_a_raw_client_over_its_quota_gets_throttle_time_and_a_muted_connection(qbroker, topic):
    b = qbroker.bootstrap
    make_topic(b, topic)
    # 10 KB/s: a first burst of 10 windows (100 KB) goes unthrottled, the next request is throttled.
    assert alter_quota(b, [("client-id", "raw-throttled")], [("producer_byte_rate", 10240.0)])[0] == 0
    with k.Connection(b, client_id="raw-throttled") as c:
        assert raw_produce_throttle(c, topic, 60_000) == (0, 0)
        err, throttle = raw_produce_throttle(c, topic, 60_000)
        assert err == 0 and throttle > 0, throttle
        # Kafka's formula: (rate - bound) / bound × window; about 2 s here.
        assert 1000 <= throttle <= 3000, throttle
        # The connection is muted for that time: the next answer comes no sooner.
        start = time.monotonic()
        k.api_versions_v0(c)
        assert time.monotonic() - start >= throttle / 1000 - 0.05
    # Another client id on the same broker is not throttled.
    with k.Connection(b, client_id="raw-free") as c:
        for _ in range(3):
            assert raw_produce_throttle(c, topic, 60_000) == (0, 0)


def test_a_throttled_fetch_answers_throttle_time_and_no_data(qbroker, topic):
    b = qbroker.bootstrap
    make_topic(b, topic)
    with k.Connection(b) as c:
        for _ in range(4):
            assert k.produce(c, topic, 0, k.encode_batch([k.Record(b"k", b"y" * 50_000)])).error == 0
    assert alter_quota(b, [("client-id", "raw-slow-fetch")], [("consumer_byte_rate", 10240.0)])[0] == 0
    with k.Connection(b, client_id="raw-slow-fetch") as c:
        # The response is capped at the quota's burst (100 KB), so the first fetch is within it.
        first = k.fetch(c, topic, 0, 0, version=11)
        assert first.error == 0 and first.records_length > 0
        r = c.request(k.FETCH, 11, k.fetch_body(topic, 0, 0, version=11))
        throttle = r.i32()
        assert throttle > 0
        assert r.i16() == 0 and r.i32() == 0
        assert r.i32() == 0, "a throttled fetch carries no partitions (Kafka's getThrottledResponse)"


def _metadata_throttle(conn) -> int:
    """A Metadata v8 request for no topics → its throttle_time_ms."""
    r = conn.request(k.METADATA, 8, bytes(k.Writer().i32(0).i8(0).i8(0).i8(0).buf))
    return r.i32()


def test_request_percentage_throttles_only_the_limited_client(qbroker):
    b = qbroker.bootstrap
    # 0.01 % of a thread: 1 ms of handler time in the first ten windows, a few dozen requests.
    assert alter_quota(b, [("client-id", "req-limited")], [("request_percentage", 0.01)])[0] == 0
    throttle, sent = 0, 0
    with k.Connection(b, client_id="req-limited") as c:
        while throttle == 0 and sent < 20_000:
            throttle = _metadata_throttle(c)
            sent += 1
    assert throttle > 0, f"never throttled in {sent} requests"
    # Kafka bounds a request-quota throttle by one quota window (1 s).
    assert throttle <= 1000, throttle
    with k.Connection(b, client_id="req-free") as c:
        assert all(_metadata_throttle(c) == 0 for _ in range(sent + 10))
    assert alter_quota(b, [("client-id", "req-limited")], [("request_percentage", None)])[0] == 0


def _compact_string(r):
    n = r.uvarint() - 1
    return None if n < 0 else r.raw(n).decode()


def _create_topics_v6(conn, topics, validate_only=False):
    """CreateTopics v6 (flexible) of [(name, partitions)] → (throttle_time_ms, {name: (error, message)})."""
    w = k.Writer().uvarint(len(topics) + 1)
    for name, partitions in topics:
        w.compact_string(name).i32(partitions).i16(1).uvarint(1).uvarint(1).tags()
    w.i32(30000).i8(1 if validate_only else 0).tags()
    r = conn.request(CREATE_TOPICS, 6, bytes(w.buf), flexible_header=True, flexible_response=True)
    throttle, out = r.i32(), {}
    for _ in range(r.uvarint() - 1):
        name, err, msg = _compact_string(r), r.i16(), _compact_string(r)
        r.i32(), r.i16()  # num_partitions, replication_factor
        for _ in range(max(r.uvarint() - 1, 0)):  # configs
            _compact_string(r), _compact_string(r), r.i8(), r.i8(), r.i8()
            _skip_tags(r)
        _skip_tags(r)
        out[name] = (err, msg)
    return throttle, out


def _skip_tags(r):
    for _ in range(r.uvarint()):
        r.uvarint()
        r.raw(r.uvarint())


def _create_topics_v4(conn, topics):
    """CreateTopics v4 (no THROTTLING_QUOTA_EXCEEDED) → (throttle_time_ms, {name: error})."""
    w = k.Writer().i32(len(topics))
    for name, partitions in topics:
        w.string(name).i32(partitions).i16(1).i32(0).i32(0)
    w.i32(30000).i8(0)
    r = conn.request(CREATE_TOPICS, 4, bytes(w.buf))
    throttle = r.i32()
    return throttle, {n: e for n, e, _m in r.array(lambda r: (r.string(), r.i16(), r.string()))}


def _delete_topics_v5(conn, names):
    """DeleteTopics v5 (flexible) → (throttle_time_ms, {name: error})."""
    w = k.Writer().uvarint(len(names) + 1)
    for n in names:
        w.compact_string(n)
    w.i32(30000).tags()
    r = conn.request(DELETE_TOPICS, 5, bytes(w.buf), flexible_header=True, flexible_response=True)
    throttle, out = r.i32(), {}
    for _ in range(r.uvarint() - 1):
        name, err = _compact_string(r), r.i16()
        _compact_string(r)
        _skip_tags(r)
        out[name] = err
    return throttle, out


CREATE_TOPICS, DELETE_TOPICS = 19, 20


def test_controller_mutation_rate_refuses_topics_over_it_with_throttling_quota_exceeded(qbroker):
    b = qbroker.bootstrap
    p = f"mut-{time.monotonic_ns()}"
    # 1 partition/s: a bucket of 10 tokens (ten windows), overdrawn by the first large topic.
    assert alter_quota(b, [("client-id", "mut-limited")], [("controller_mutation_rate", 1.0)])[0] == 0
    with k.Connection(b, client_id="mut-limited") as c:
        throttle, results = _create_topics_v6(c, [(f"{p}-a", 20), (f"{p}-b", 5), (f"{p}-c", 1)])
    # Kafka's strict quota: accepted while the bucket is not negative, whatever the size; then refused.
    assert results[f"{p}-a"][0] == 0, results
    for name in (f"{p}-b", f"{p}-c"):
        assert results[name] == (THROTTLING_QUOTA_EXCEEDED, None), results  # Kafka 4.4: no message
    # 10 tokens overdrawn at 1/s: about 10 s until the bucket is back to zero.
    assert 5_000 <= throttle <= 10_000, throttle
    with k.Connection(b) as c:
        found = k.metadata(c, [f"{p}-a"])  # (not b: this Metadata would auto-create it)
    assert len(found[f"{p}-a"][1]) == 20, found
    # validate_only counts too (Kafka's controller checks the quota before it drops the records).
    with k.Connection(b, client_id="mut-limited") as c:
        _throttle, results = _create_topics_v6(c, [(f"{p}-vo", 1)], validate_only=True)
    assert results == {f"{p}-vo": (THROTTLING_QUOTA_EXCEEDED, None)}, results
    # Deleting is a mutation too: refused (v5) while the bucket is overdrawn.
    with k.Connection(b, client_id="mut-limited") as c:
        throttle, deleted = _delete_topics_v5(c, [f"{p}-a"])
    assert deleted == {f"{p}-a": THROTTLING_QUOTA_EXCEEDED} and throttle > 0, (deleted, throttle)
    # A version without the error (CreateTopics v4) is accepted, and throttled.
    with k.Connection(b, client_id="mut-limited") as c:
        throttle, created = _create_topics_v4(c, [(f"{p}-old", 3)])
    assert created == {f"{p}-old": 0} and throttle > 8_000, (created, throttle)
    # Another client on the same broker is not limited.
    with k.Connection(b, client_id="mut-free") as c:
        throttle, results = _create_topics_v6(c, [(f"{p}-free-{i}", 30) for i in range(3)])
        assert throttle == 0 and all(v[0] == 0 for v in results.values()), (throttle, results)
        throttle, deleted = _delete_topics_v5(c, [f"{p}-a", f"{p}-old"] + [f"{p}-free-{i}" for i in range(3)])
        assert throttle == 0 and set(deleted.values()) == {0}, (throttle, deleted)
    assert alter_quota(b, [("client-id", "mut-limited")], [("controller_mutation_rate", None)])[0] == 0


def _stats_throttle(stats_json: str) -> int:
    stats = json.loads(stats_json)
    return max((br.get("throttle", {}).get("max", 0) for br in stats.get("brokers", {}).values()), default=0)


class _Produced:
    """Deliveries of one producer: (time, bytes) of each, errors while measuring, the largest throttle time
    its statistics reported."""

    def __init__(self):
        self.deliveries, self.errors, self.throttle_max, self.closing = [], [], 0, False

    def on_delivery(self, err, msg):
        if err is None:
            self.deliveries.append((time.monotonic(), len(msg.value())))
        elif not self.closing:
            self.errors.append(str(err))

    def on_stats(self, js):
        self.throttle_max = max(self.throttle_max, _stats_throttle(js))

    @property
    def bytes(self):
        return sum(n for _, n in self.deliveries)

    def bytes_within(self, seconds):
        """Bytes delivered from the first delivery for `seconds`."""
        first = self.deliveries[0][0]
        return sum(n for t, n in self.deliveries if t < first + seconds)


def _produce_for(bootstrap, topic, client_id, seconds, out: _Produced, budget=None):
    """Produces 50 KB records (about 100 KB per request) for `seconds` after the first delivery, or until
    `budget` bytes are delivered; then drops what is still queued."""
    from confluent_kafka import Producer
    value = b"z" * 50_000
    p = Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "acks": 1, "linger.ms": 5,
                  "batch.size": 102_400, "statistics.interval.ms": 500, "stats_cb": out.on_stats})
    start = time.monotonic()
    sent = 0
    while True:
        now = time.monotonic()
        first = out.deliveries[0][0] if out.deliveries else start
        if now >= first + seconds or (budget is not None and out.bytes >= budget):
            break
        if len(p) < 100 and (budget is None or sent < budget):
            p.produce(topic, value, callback=out.on_delivery)
            sent += len(value)
        p.poll(0.005)
    out.closing = True
    p.purge()
    p.flush(10)
    p.poll(0.6)  # one more statistics interval
    return out


@pytest.fixture
def rate_broker():
    b = new_broker({"quota.window.num": str(RATE_SAMPLES)})
    yield b
    b.close()


def test_a_producer_limited_to_1_mb_per_s_is_held_to_it_and_others_are_not(rate_broker, topic):
    b = rate_broker.bootstrap
    make_topic(b, topic)
    configs(b, "--alter", "--add-config", f"producer_byte_rate={MB}", "--entity-type", "clients",
            "--entity-name", "quota-1mb")
    throttled, free = _Produced(), _Produced()
    window_s = RATE_MEASURE_S
    t = threading.Thread(target=_produce_for, args=(b, topic, "quota-1mb", window_s, throttled))
    t.start()
    # An unthrottled producer on the same broker meanwhile: 40 MB as fast as it goes.
    _produce_for(b, topic, "quota-free", 60, free, budget=40 * MB)
    t.join()
    assert not throttled.errors and not free.errors, (throttled.errors[:3], free.errors[:3])
    # Kafka's windowed rate lets RATE_SAMPLES - 1 windows' worth through at once and measures against at least
    # that many windows, so over the measure the average is the quota within its sampling (about +10 % from a
    # cold start).
    rate = throttled.bytes_within(window_s) / window_s / MB
    print(f"throttled producer: {rate:.3f} MB/s over {window_s} s, max throttle {throttled.throttle_max} ms; "
          f"free producer: {free.bytes} B, max throttle {free.throttle_max} ms")
    assert 0.8 <= rate <= 1.2, f"{rate:.3f} MB/s against a 1 MB/s quota"
    assert throttled.throttle_max > 0, "the client was never told it is throttled"
    assert free.bytes >= 40 * MB and free.throttle_max == 0


def test_a_consumer_byte_rate_quota_throttles_only_that_consumer(qbroker, topic):
    from confluent_kafka import Consumer, TopicPartition
    b = qbroker.bootstrap
    make_topic(b, topic)
    out = _Produced()
    _produce_for(b, topic, "consumer-test-filler", 60, out, budget=4 * MB)
    total = out.bytes
    assert total >= 4 * MB
    configs(b, "--alter", "--add-config", "consumer_byte_rate=102400", "--entity-type", "clients",
            "--entity-name", "slow-consumer")

    def consume(client_id, seconds):
        got, throttle = 0, [0]
        c = Consumer({"bootstrap.servers": b, "group.id": f"g-{client_id}", "client.id": client_id,
                      "enable.auto.commit": False, "statistics.interval.ms": 500,
                      "stats_cb": lambda js: throttle.__setitem__(0, max(throttle[0], _stats_throttle(js)))})
        c.assign([TopicPartition(topic, 0, 0)])
        end = time.monotonic() + seconds
        while time.monotonic() < end and got < total:
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                got += len(m.value())
        c.poll(0.6)
        c.close()
        return got, throttle[0]

    slow, slow_throttle = consume("slow-consumer", 6)
    fast, fast_throttle = consume("fast-consumer", 30)
    print(f"slow consumer: {slow} B in 6 s, max throttle {slow_throttle} ms; fast: {fast} B")
    # 100 KB/s: ten windows (1 MB) at once, then about the quota: far from the 4 MB the other one reads in that time.
    assert 0 < slow <= 2 * MB, slow
    assert slow_throttle > 0
    assert fast == total and fast_throttle == 0


def _connect(bootstrap, source_ip="127.0.0.1") -> socket.socket:
    host, port = bootstrap.rsplit(":", 1)
    s = socket.socket()
    s.bind((source_ip, 0))
    s.settimeout(10)
    s.connect((host, int(port)))
    return s


def _api_versions(s: socket.socket, timeout: float) -> bool:
    """ApiVersions v0 on `s`: True when answered within `timeout`, False when not (no answer or closed)."""
    s.settimeout(timeout)
    frame = k.Writer().i16(18).i16(0).i32(7).string("conn-test").buf
    try:
        s.sendall(len(frame).to_bytes(4, "big") + bytes(frame))
        head = s.recv(4)
        return len(head) == 4
    except (socket.timeout, ConnectionError):
        return False


def _closed_by_peer(s: socket.socket, timeout: float = 10.0) -> bool:
    s.settimeout(timeout)
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def _served(bootstrap, timeout: float = 10.0) -> socket.socket:
    """A connection the broker serves, once a slot is free (a closed connection's slot is freed when the
    broker has seen the close)."""
    deadline = time.monotonic() + timeout
    while True:
        s = _connect(bootstrap)
        if _api_versions(s, 2):
            return s
        s.close()
        assert time.monotonic() < deadline, "no connection slot became free"


def test_max_connections_per_ip_closes_the_next_connection():
    b = new_broker({"max.connections.per.ip": "3", "max.connections.per.ip.overrides": "127.0.0.2:1"})
    try:
        # (Served ones: the startup probe's connection may not have been seen closed yet.)
        open_ = [_served(b.bootstrap) for _ in range(3)]
        extra = _connect(b.bootstrap)
        assert _closed_by_peer(extra), "the 4th connection from 127.0.0.1 was not closed"
        # The override: one connection from 127.0.0.2, the second closed.
        other = _connect(b.bootstrap, "127.0.0.2")
        assert _api_versions(other, 10)
        assert _closed_by_peer(_connect(b.bootstrap, "127.0.0.2"))
        # A closed connection frees its slot (once the broker has seen the close).
        open_.pop().close()
        s = _served(b.bootstrap)
        for s in open_ + [s, other]:
            s.close()
    finally:
        b.close()


def test_max_connections_makes_the_acceptor_wait_for_a_free_slot():
    b = new_broker({"max.connections": "2"})
    try:
        first = _served(b.bootstrap)
        second = _connect(b.bootstrap)
        assert _api_versions(second, 10)
        waiting = _connect(b.bootstrap)  # accepted by the kernel, not served by the broker
        assert not _api_versions(waiting, 1.0), "a third connection was served past max.connections=2"
        first.close()
        waiting.settimeout(10)
        assert len(waiting.recv(4)) == 4, "the waiting connection was not served once a slot was free"
        second.close()
        waiting.close()
    finally:
        b.close()


@pytest.mark.cluster
def test_quotas_altered_through_one_broker_apply_on_the_others():
    """Client quotas are metadata-log records (ClientQuotaRecord): set through node 1 they are described and
    enforced by every node; removed through node 3, they are gone everywhere."""
    from test_acls import eventually
    from test_cluster import Cluster, create_topic
    c = Cluster().start()
    try:
        n1, n2, n3 = (c.nodes[i].bootstrap for i in (1, 2, 3))
        assert alter_quota(n1, [("client-id", "cl-c")], [("producer_byte_rate", 10240.0)]) == (0, None)
        want = (0, {(("client-id", "cl-c"),): {"producer_byte_rate": 10240.0}})
        for b in (n1, n2, n3):
            # The altering broker answers once its own image has the quota; the others follow the log.
            eventually(lambda: describe_quotas(b, [("client-id", 0, "cl-c")]) == want, f"the quota on {b}")
        # The partition's leader, wherever it is, enforces it.
        topic = f"quota-cluster-{time.monotonic_ns()}"
        create_topic(c, topic)
        leader = c.nodes[c.partition(topic).leader].bootstrap
        with k.Connection(leader, client_id="cl-c") as conn:
            raw_produce_throttle(conn, topic, 60_000)
            assert raw_produce_throttle(conn, topic, 60_000)[1] > 0
        assert alter_quota(n3, [("client-id", "cl-c")], [("producer_byte_rate", None)]) == (0, None)
        for b in (n1, n2, n3):
            eventually(lambda: describe_quotas(b, [("client-id", 0, "cl-c")]) == (0, {}), f"gone from {b}")
    finally:
        c.close()

