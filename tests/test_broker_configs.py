"""Dynamic broker configs (KIP-226): AlterConfigs / IncrementalAlterConfigs / DescribeConfigs on BROKER resources
(resource type 4): per-broker (name = node id 1) and cluster-default (name "") levels, precedence
topic > per-broker > cluster default > static > default, Kafka's sources and synonyms, errors, validate_only,
persistence across restarts, and live effect on topics (retention).

Every expectation here was checked against Apache Kafka 4.4.0 (RUNNEL_TEST_BROKER=kafka). Where Runnel
deliberately differs, the test says so and asserts per broker kind:
- unknown keys: Kafka stores them as custom configs (error 0); Runnel refuses them with INVALID_CONFIG.
- Kafka 4.4 sets `min.insync.replicas` at the cluster-default level by itself (ELR); the tests ignore that key.
"""

from __future__ import annotations

import time

import pytest

import kproto as k
from conftest import MODE, BrokerProcess, make_topic
from test_kafka_tools import tool

BROKER, TOPIC = 4, 2
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
DYNAMIC_TOPIC, DYNAMIC_BROKER, DYNAMIC_DEFAULT, STATIC, DEFAULT = 1, 2, 3, 4, 5
INVALID_REQUEST, INVALID_CONFIG = 42, 40
NODE = "1"
TIMEOUT_S = 60

# Static keys given to the broker (runnel: --set; Kafka: appended to server.properties).
STATIC_KEYS = {"log.segment.bytes": "536870912", "log.retention.check.interval.ms": "300"}
# Every dynamic key the tests touch; reset() deletes them at both levels.
TOUCHED = ["log.retention.ms", "log.retention.bytes", "log.segment.bytes", "log.roll.ms", "log.cleanup.policy",
           "message.max.bytes", "unclean.leader.election.enable", "compression.type"]

pytestmark = pytest.mark.skipif(MODE == "external", reason="needs brokers started by the tests")


class ConfigBroker(BrokerProcess):
    """A broker of its own with STATIC_KEYS set statically, for both runnel and Kafka."""

    def __init__(self):
        super().__init__(sets=STATIC_KEYS)

    def argv(self):
        argv = super().argv()
        if self.kind == "kafka":
            props = self.dir / "server.properties"
            text = props.read_text()
            if "log.segment.bytes" not in text:
                props.write_text(text + "".join(f"{key}={v}\n" for key, v in STATIC_KEYS.items()))
        return argv


@pytest.fixture(scope="module")
def cfg_broker():
    b = ConfigBroker().start()
    yield b
    b.close()


@pytest.fixture
def own_broker():
    b = ConfigBroker().start()
    yield b
    b.close()


# ------------------------------------------------------------------ raw protocol (non-flexible versions)
def incremental_alter(c, rtype, name, entries, validate_only=False):
    """IncrementalAlterConfigs v0 of one resource; entries = [(key, op, value)] → (error_code, message)."""
    w = k.Writer().i32(1).i8(rtype).string(name).i32(len(entries))
    for key, op, value in entries:
        w.string(key).i8(op).string(value)
    w.i8(1 if validate_only else 0)
    r = c.request(44, 0, bytes(w.buf))
    r.i32()
    (res,) = r.array(lambda r: (r.i16(), r.string(), r.i8(), r.string()))
    return res[0], res[1]


def alter(c, rtype, name, configs, validate_only=False):
    """AlterConfigs v0 of one resource; configs = [(key, value)] → (error_code, message)."""
    w = k.Writer().i32(1).i8(rtype).string(name).i32(len(configs))
    for key, value in configs:
        w.string(key).string(value)
    w.i8(1 if validate_only else 0)
    r = c.request(33, 0, bytes(w.buf))
    r.i32()
    (res,) = r.array(lambda r: (r.i16(), r.string(), r.i8(), r.string()))
    return res[0], res[1]


def describe(c, rtype, name, keys=None):
    """DescribeConfigs v1 with synonyms → (error, message, {key: (value, source, read_only, [(n, v, src)])})."""
    w = k.Writer().i32(1).i8(rtype).string(name)
    if keys is None:
        w.i32(-1)
    else:
        w.i32(len(keys))
        for key in keys:
            w.string(key)
    w.i8(1)
    r = c.request(32, 1, bytes(w.buf))
    r.i32()

    def entry(r):
        key, value, ro, src, _sensitive = r.string(), r.string(), r.i8(), r.i8(), r.i8()
        syn = r.array(lambda r: (r.string(), r.string(), r.i8()))
        return key, (value, src, bool(ro), syn)

    def result(r):
        err, msg, _t, _n = r.i16(), r.string(), r.i8(), r.string()
        return err, msg, dict(r.array(entry) or [])

    (res,) = r.array(result)
    return res


def ok(result):
    assert result == (0, None), result


def reset(c):
    """Deletes every TOUCHED key at both levels and waits until DescribeConfigs shows none of them."""
    for name in (NODE, ""):
        ok(incremental_alter(c, BROKER, name, [(key, DELETE, None) for key in TOUCHED]))

    def clean():
        _, _, per_broker = describe(c, BROKER, NODE, TOUCHED)
        assert all(v[1] not in (DYNAMIC_BROKER, DYNAMIC_DEFAULT) for v in per_broker.values()), per_broker
        _, _, default = describe(c, BROKER, "")
        assert not set(default) & set(TOUCHED), default
    eventually(clean)


def eventually(check, timeout=15.0):
    """Retries `check` until it stops raising AssertionError (Kafka applies dynamic configs asynchronously,
    through its metadata log; Runnel applies them before answering, so the first try passes)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return check()
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def configs_tool(b, *args):
    return tool("org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", b.bootstrap, *args)


# ------------------------------------------------------------------ sources and synonyms
def test_sources_and_synonyms_at_every_level(cfg_broker, topic):
    b = cfg_broker.bootstrap
    plain, overridden = topic + "-plain", topic + "-over"
    make_topic(b, plain, 1)
    make_topic(b, overridden, 1, {"retention.ms": "7777", "segment.bytes": "1048576"})
    tkeys = ["retention.ms", "retention.bytes", "segment.bytes", "segment.ms", "max.message.bytes",
             "cleanup.policy"]
    with k.Connection(b) as c:
        reset(c)
        _, _, cfg = describe(c, TOPIC, plain, tkeys)
        assert cfg["retention.ms"] == ("604800000", DEFAULT, False, [])  # log.retention.ms unset: no synonyms
        assert cfg["segment.bytes"] == ("536870912", STATIC, False, [
            ("log.segment.bytes", "536870912", STATIC), ("log.segment.bytes", "1073741824", DEFAULT)])
        assert cfg["max.message.bytes"] == ("1048588", DEFAULT, False, [("message.max.bytes", "1048588", DEFAULT)])

        ok(incremental_alter(c, BROKER, "", [("log.retention.bytes", SET, "1000000000"),
                                             ("log.retention.ms", SET, "3000000"),
                                             ("log.segment.bytes", SET, "268435456")]))
        ok(incremental_alter(c, BROKER, NODE, [("log.retention.ms", SET, "2000000"),
                                               ("log.segment.bytes", SET, "134217728"),
                                               ("log.roll.ms", SET, "60000")]))
        ok(incremental_alter(c, BROKER, NODE, [("log.cleanup.policy", APPEND, "compact")]))
        eventually(lambda: check_all_levels(c, plain, overridden, tkeys))

        # DELETE falls back to the next level; SUBTRACT edits the effective list.
        ok(incremental_alter(c, BROKER, NODE, [("log.retention.ms", DELETE, None),
                                               ("log.cleanup.policy", SUBTRACT, "delete")]))

        def after_delete():
            _, _, cfg = describe(c, TOPIC, plain, ["retention.ms", "cleanup.policy"])
            assert cfg["retention.ms"][:2] == ("3000000", DYNAMIC_DEFAULT)
            assert cfg["cleanup.policy"][:2] == ("compact", DYNAMIC_BROKER)
        eventually(after_delete)
        # AlterConfigs replaces the whole per-broker set.
        ok(alter(c, BROKER, NODE, [("message.max.bytes", "2000000")]))

        def after_replace():
            _, _, cfg = describe(c, BROKER, NODE, ["message.max.bytes", "log.segment.bytes", "log.roll.ms"])
            assert cfg["message.max.bytes"][:2] == ("2000000", DYNAMIC_BROKER)
            assert cfg["log.segment.bytes"][:2] == ("268435456", DYNAMIC_DEFAULT)
            assert cfg["log.roll.ms"][1] == DEFAULT
        eventually(after_replace)
        reset(c)


def check_all_levels(c, plain, overridden, tkeys):
    _, _, cfg = describe(c, TOPIC, plain, tkeys)
    assert cfg["retention.bytes"] == ("1000000000", DYNAMIC_DEFAULT, False, [
        ("log.retention.bytes", "1000000000", DYNAMIC_DEFAULT), ("log.retention.bytes", "-1", DEFAULT)])
    assert cfg["retention.ms"] == ("2000000", DYNAMIC_BROKER, False, [
        ("log.retention.ms", "2000000", DYNAMIC_BROKER), ("log.retention.ms", "3000000", DYNAMIC_DEFAULT),
        ("log.retention.hours", "168", DEFAULT)])
    segment_synonyms = [("log.segment.bytes", "134217728", DYNAMIC_BROKER),
                        ("log.segment.bytes", "268435456", DYNAMIC_DEFAULT),
                        ("log.segment.bytes", "536870912", STATIC),
                        ("log.segment.bytes", "1073741824", DEFAULT)]
    assert cfg["segment.bytes"] == ("134217728", DYNAMIC_BROKER, False, segment_synonyms)
    assert cfg["segment.ms"] == ("60000", DYNAMIC_BROKER, False, [
        ("log.roll.ms", "60000", DYNAMIC_BROKER), ("log.roll.hours", "168", DEFAULT)])
    assert cfg["cleanup.policy"] == ("delete,compact", DYNAMIC_BROKER, False, [
        ("log.cleanup.policy", "delete,compact", DYNAMIC_BROKER), ("log.cleanup.policy", "delete", DEFAULT)])
    assert cfg["max.message.bytes"][1] == DEFAULT

    _, _, cfg = describe(c, TOPIC, overridden, tkeys)
    assert cfg["retention.ms"] == ("7777", DYNAMIC_TOPIC, False, [
        ("retention.ms", "7777", DYNAMIC_TOPIC), ("log.retention.ms", "2000000", DYNAMIC_BROKER),
        ("log.retention.ms", "3000000", DYNAMIC_DEFAULT), ("log.retention.hours", "168", DEFAULT)])
    assert cfg["segment.bytes"] == ("1048576", DYNAMIC_TOPIC, False,
                                    [("segment.bytes", "1048576", DYNAMIC_TOPIC)] + segment_synonyms)

    bkeys = ["log.segment.bytes", "log.retention.ms", "log.retention.hours", "log.roll.ms",
             "message.max.bytes", "num.partitions", "node.id", "log.retention.bytes"]
    err, _, cfg = describe(c, BROKER, NODE, bkeys)
    assert err == 0
    assert cfg["log.segment.bytes"] == ("134217728", DYNAMIC_BROKER, False, segment_synonyms)
    assert cfg["log.retention.ms"] == ("2000000", DYNAMIC_BROKER, False, [
        ("log.retention.ms", "2000000", DYNAMIC_BROKER), ("log.retention.ms", "3000000", DYNAMIC_DEFAULT),
        ("log.retention.hours", "168", DEFAULT)])
    assert cfg["log.retention.bytes"][:2] == ("1000000000", DYNAMIC_DEFAULT)
    assert cfg["log.retention.hours"] == ("168", DEFAULT, True, [("log.retention.hours", "168", DEFAULT)])
    assert cfg["message.max.bytes"] == ("1048588", DEFAULT, False, [("message.max.bytes", "1048588", DEFAULT)])
    assert cfg["num.partitions"] == ("4", STATIC, True, [("num.partitions", "4", STATIC),
                                                         ("num.partitions", "1", DEFAULT)])
    assert (cfg["node.id"][0], cfg["node.id"][2]) == ("1", True)  # static in Kafka's file, a default here

    # The cluster-default resource lists only the keys set at that level, with that level's synonyms.
    err, _, cfg = describe(c, BROKER, "")
    assert err == 0
    cfg.pop("min.insync.replicas", None)  # Kafka 4.4 (ELR) sets it there itself
    assert cfg == {
        "log.retention.bytes": ("1000000000", DYNAMIC_DEFAULT, False,
                                [("log.retention.bytes", "1000000000", DYNAMIC_DEFAULT)]),
        "log.retention.ms": ("3000000", DYNAMIC_DEFAULT, False,
                             [("log.retention.ms", "3000000", DYNAMIC_DEFAULT)]),
        "log.segment.bytes": ("268435456", DYNAMIC_DEFAULT, False,
                              [("log.segment.bytes", "268435456", DYNAMIC_DEFAULT)]),
    }


# ------------------------------------------------------------------ errors and validate_only
def test_resource_names_read_only_and_bad_values(cfg_broker):
    with k.Connection(cfg_broker.bootstrap) as c:
        reset(c)
        entry = [("log.retention.ms", SET, "1000")]
        assert incremental_alter(c, BROKER, "2", entry) == (
            INVALID_REQUEST, "Unexpected broker id, expected 1, but received 2")
        assert incremental_alter(c, BROKER, "abc", entry) == (
            INVALID_REQUEST, "Node id must be an integer, but it is: abc")
        assert alter(c, BROKER, "2", [("log.retention.ms", "1")]) == (
            INVALID_REQUEST, "Unexpected broker id, expected 1, but received 2")
        assert describe(c, BROKER, "2", ["log.retention.ms"])[:2] == (
            INVALID_REQUEST, "Unexpected broker id, expected 1 or empty string, but received 2")
        assert describe(c, BROKER, "x", ["log.retention.ms"])[:2] == (
            INVALID_REQUEST, "Broker id must be an integer, but it is: x")

        for name in (NODE, ""):
            assert incremental_alter(c, BROKER, name, [("num.partitions", SET, "3"), ("log.dirs", SET, "/x")]) == (
                INVALID_REQUEST, "Cannot update these configs dynamically: [num.partitions, log.dirs]")
            assert incremental_alter(c, BROKER, name, [("log.retention.hours", SET, "5")]) == (
                INVALID_REQUEST, "Cannot update these configs dynamically: [log.retention.hours]")
            assert alter(c, BROKER, name, [("node.id", "1")]) == (
                INVALID_REQUEST, "Cannot update these configs dynamically: [node.id]")
        assert incremental_alter(c, BROKER, "", [("listeners", SET, "PLAINTEXT://127.0.0.1:1")]) == (
            INVALID_REQUEST,
            "Cannot update these configs at default cluster level, broker id must be specified: [listeners]")

        bad = {
            ("log.retention.ms", "soon"): "Not a number of type LONG",
            ("log.segment.bytes", "10"): "Value must be at least 1048576",
            ("log.segment.bytes", "3000000000"): "Not a number of type INT",
            ("compression.type", "brotli"):
                "String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer",
            ("log.cleanup.policy", "keep"): "String must be one of: compact, delete",
            ("min.insync.replicas", "0"): "Value must be at least 1",
            ("unclean.leader.election.enable", "yes"): "Expected value to be either true or false",
            ("log.message.timestamp.type", "Now"): "String must be one of: CreateTime, LogAppendTime",
            ("log.index.size.max.bytes", "3"): "Value must be at least 4",
            ("log.cleaner.min.cleanable.ratio", "abc"): "Not a number of type DOUBLE",
        }
        for (key, value), reason in bad.items():
            assert incremental_alter(c, BROKER, NODE, [(key, SET, value)]) == (
                INVALID_REQUEST, f"Invalid value {value} for configuration {key}: {reason}"), key

        assert incremental_alter(c, BROKER, NODE, [("log.retention.ms", APPEND, "1")]) == (
            INVALID_CONFIG, "Config value append is not allowed for config key: log.retention.ms")
        assert incremental_alter(c, BROKER, NODE, [("log.retention.ms", SET, None)]) == (
            INVALID_REQUEST, "Null value not supported for : log.retention.ms")
        assert incremental_alter(c, BROKER, NODE, [("log.retention.ms", 7, "1")]) == (
            INVALID_REQUEST, "Unknown operations type 7")
        assert incremental_alter(c, BROKER, NODE, [("log.retention.ms", SET, "1"), ("log.retention.ms", SET, "2")]) \
            == (INVALID_REQUEST, "Error due to duplicate config keys")
        # DELETE of a key that is not set (even a read-only one) is a no-op, as in Kafka.
        ok(incremental_alter(c, BROKER, NODE, [("node.id", DELETE, None)]))

        # Unknown keys: Kafka keeps them as custom configs; Runnel refuses them, naming the key.
        err, msg = incremental_alter(c, BROKER, NODE, [("log.retention.mss", SET, "1")], validate_only=True)
        if cfg_broker.kind == "kafka":
            assert err == 0
        else:
            assert err == INVALID_CONFIG and "log.retention.mss" in msg, (err, msg)

        # Nothing above changed anything.
        _, _, cfg = describe(c, BROKER, NODE, ["log.retention.ms", "log.segment.bytes", "message.max.bytes"])
        assert cfg["log.retention.ms"][1] == DEFAULT
        assert cfg["log.segment.bytes"][:2] == ("536870912", STATIC)


def test_validate_only_changes_nothing(cfg_broker):
    with k.Connection(cfg_broker.bootstrap) as c:
        reset(c)
        ok(incremental_alter(c, BROKER, NODE, [("log.retention.bytes", SET, "777")], validate_only=True))
        ok(incremental_alter(c, BROKER, "", [("log.retention.bytes", SET, "777")], validate_only=True))
        ok(alter(c, BROKER, NODE, [("message.max.bytes", "4000")], validate_only=True))
        assert incremental_alter(c, BROKER, NODE, [("log.retention.ms", SET, "x")], validate_only=True)[0] == \
            INVALID_REQUEST
        assert incremental_alter(c, BROKER, NODE, [("num.partitions", SET, "3")], validate_only=True)[0] == \
            INVALID_REQUEST
        _, _, cfg = describe(c, BROKER, NODE, ["log.retention.bytes", "message.max.bytes"])
        assert cfg["log.retention.bytes"][:2] == ("-1", DEFAULT)
        assert cfg["message.max.bytes"][:2] == ("1048588", DEFAULT)
        err, _, cfg = describe(c, BROKER, "")
        cfg.pop("min.insync.replicas", None)
        assert (err, cfg) == (0, {})


# ------------------------------------------------------------------ live effect, tools, clients, restart
def produce_old_records(b, topic, batches=40, per_batch=10, size=10_000):
    """~4 MB with CreateTime one hour ago, so that any retention.ms below an hour expires them."""
    old = int(time.time() * 1000) - 3_600_000
    with k.Connection(b) as c:
        for i in range(batches):
            records = [k.Record(b"k", bytes([65 + i % 26]) * size) for _ in range(per_batch)]
            res = k.produce(c, topic, 0, k.encode_batch(records, timestamp=old))
            assert res.error == 0, res.error


def wait_log_start_above(b, topic, minimum, timeout=TIMEOUT_S):
    deadline = time.monotonic() + timeout
    with k.Connection(b) as c:
        while True:
            start = k.list_offsets(c, topic, 0, -2)[2]
            if start > minimum or time.monotonic() > deadline:
                return start
            time.sleep(0.2)


@pytest.mark.kafka_tools
def test_kafka_configs_tool_retention_shrinks_existing_topic_live(own_broker, topic):
    b = own_broker
    make_topic(b.bootstrap, topic, 1, {"segment.bytes": "1048576"})
    produce_old_records(b.bootstrap, topic)
    with k.Connection(b.bootstrap) as c:
        end = k.list_offsets(c, topic, 0, -1)[2]
        assert end == 400
        assert k.list_offsets(c, topic, 0, -2)[2] == 0  # the default 7 days keeps everything
    configs_tool(b, "--entity-type", "brokers", "--entity-name", NODE, "--alter",
                 "--add-config", "log.retention.ms=600000")
    start = wait_log_start_above(b.bootstrap, topic, 0)
    assert 0 < start <= end, start
    out = configs_tool(b, "--entity-type", "brokers", "--entity-name", NODE, "--describe")
    print(out)
    assert "log.retention.ms=600000" in out, out
    assert "DYNAMIC_BROKER_CONFIG:log.retention.ms=600000" in out, out

    # The cluster-wide default, by --entity-default.
    configs_tool(b, "--entity-type", "brokers", "--entity-default", "--alter",
                 "--add-config", "log.retention.bytes=123456789")

    def default_described():
        out = configs_tool(b, "--entity-type", "brokers", "--entity-default", "--describe")
        assert "log.retention.bytes=123456789" in out, out
        assert "DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.bytes=123456789" in out, out
    eventually(default_described, timeout=TIMEOUT_S)
    configs_tool(b, "--entity-type", "brokers", "--entity-name", NODE, "--alter",
                 "--delete-config", "log.retention.ms")

    def deleted():
        out = configs_tool(b, "--entity-type", "brokers", "--entity-name", NODE, "--describe")
        assert "log.retention.ms" not in out, out
    eventually(deleted, timeout=TIMEOUT_S)


def test_dynamic_configs_survive_restart(own_broker, topic):
    b = own_broker
    make_topic(b.bootstrap, topic, 1)
    with k.Connection(b.bootstrap) as c:
        ok(incremental_alter(c, BROKER, "", [("log.retention.bytes", SET, "5000000"),
                                             ("log.segment.bytes", SET, "2097152")]))
        ok(incremental_alter(c, BROKER, NODE, [("log.segment.bytes", SET, "3145728"),
                                               ("compression.type", SET, "zstd")]))
    b.restart()
    with k.Connection(b.bootstrap) as c:
        _, _, cfg = describe(c, TOPIC, topic, ["retention.bytes", "segment.bytes", "compression.type"])
        assert cfg["retention.bytes"][:2] == ("5000000", DYNAMIC_DEFAULT)
        assert cfg["segment.bytes"] == ("3145728", DYNAMIC_BROKER, False, [
            ("log.segment.bytes", "3145728", DYNAMIC_BROKER), ("log.segment.bytes", "2097152", DYNAMIC_DEFAULT),
            ("log.segment.bytes", "536870912", STATIC), ("log.segment.bytes", "1073741824", DEFAULT)])
        assert cfg["compression.type"][:2] == ("zstd", DYNAMIC_BROKER)
        # The live topic follows: a zstd broker default recompresses an uncompressed batch.
        assert k.produce(c, topic, 0, k.encode_batch([k.Record(b"k", b"v" * 100)])).error == 0
        (batch,) = k.fetch(c, topic, 0, 0).batches()
        assert batch.codec == k.CODECS["zstd"]


def test_confluent_admin_client_and_kafka_python(cfg_broker, topic):
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
    from kafka.admin import ConfigResource as KpResource
    from kafka.admin import ConfigResourceType, KafkaAdminClient

    b = cfg_broker.bootstrap
    with k.Connection(b) as c:
        reset(c)
    a = AdminClient({"bootstrap.servers": b})
    res = ConfigResource(ResourceType.BROKER, NODE, incremental_configs=[
        ConfigEntry("message.max.bytes", "2000000", incremental_operation=AlterConfigOpType.SET)])
    a.incremental_alter_configs([res])[res].result(TIMEOUT_S)
    desc = ConfigResource(ResourceType.BROKER, NODE)

    def applied():
        cfg = a.describe_configs([desc])[desc].result(TIMEOUT_S)
        entry = cfg["message.max.bytes"]
        assert entry.value == "2000000"
        assert int(getattr(entry.source, "value", entry.source)) == DYNAMIC_BROKER
        assert not entry.is_read_only and cfg["num.partitions"].is_read_only
    eventually(applied)
    # A topic without overrides inherits it.
    make_topic(b, topic, 1)
    tres = ConfigResource(ResourceType.TOPIC, topic)
    assert a.describe_configs([tres])[tres].result(TIMEOUT_S)["max.message.bytes"].value == "2000000"

    kp = KafkaAdminClient(bootstrap_servers=b, request_timeout_ms=TIMEOUT_S * 1000)
    try:
        # kafka-python accepts only numeric broker names (it sends IncrementalAlterConfigs).
        out = kp.alter_configs([KpResource(ConfigResourceType.BROKER, NODE,
                                           configs={"log.retention.ms": "86400000"})])
        assert out == {"broker": {NODE: "OK"}}, out
        out = kp.alter_configs([KpResource(ConfigResourceType.BROKER, NODE, configs={"num.partitions": "3"})],
                               raise_on_unknown=False)
        assert "Cannot update these configs dynamically: [num.partitions]" in str(out["broker"][NODE]), out

        def per_broker_level():
            described = kp.describe_configs([KpResource(ConfigResourceType.BROKER, NODE)])["broker"][NODE]
            assert described["log.retention.ms"]["value"] == "86400000", described
            assert described["log.retention.ms"]["config_source"] == "DYNAMIC_BROKER_CONFIG", described
            assert described["message.max.bytes"]["value"] == "2000000", described
        eventually(per_broker_level)
    finally:
        kp.close()
    with k.Connection(b) as c:
        reset(c)
