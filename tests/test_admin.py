"""Admin APIs through real clients: topic configs (describe, alter, incremental alter) applied live,
CreatePartitions, DeleteRecords, DescribeCluster, DescribeLogDirs; and Kafka's kafka-configs and
kafka-topics --alter tools.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    ResourceType,
)

import kproto as k
from conftest import MODE, make_topic
from test_kafka_tools import tool

TIMEOUT_S = 30


def admin(bootstrap):
    return AdminClient({"bootstrap.servers": bootstrap})


def topic_configs(a, topic):
    res = ConfigResource(ResourceType.TOPIC, topic)
    return a.describe_configs([res])[res].result(TIMEOUT_S)


def test_describe_topic_configs_reports_defaults_and_overrides(broker, topic):
    a = admin(broker.bootstrap)
    make_topic(broker.bootstrap, topic, 1, {"retention.ms": "123456"})
    cfg = topic_configs(a, topic)
    assert cfg["retention.ms"].value == "123456"
    src = cfg["retention.ms"].source
    assert int(getattr(src, "value", src)) == 1  # DYNAMIC_TOPIC_CONFIG
    assert cfg["segment.bytes"].value == "1073741824"
    assert cfg["cleanup.policy"].value == "delete"


def test_incremental_alter_configs_set_delete_append_and_validation(broker, topic):
    a = admin(broker.bootstrap)
    make_topic(broker.bootstrap, topic, 1)
    res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", "1000", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND),
    ])
    a.incremental_alter_configs([res])[res].result(TIMEOUT_S)
    cfg = topic_configs(a, topic)
    assert cfg["retention.ms"].value == "1000"
    assert set(cfg["cleanup.policy"].value.split(",")) == {"delete", "compact"}

    res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE),
    ])
    a.incremental_alter_configs([res])[res].result(TIMEOUT_S)
    assert topic_configs(a, topic)["retention.ms"].value == "604800000"

    bad = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.mss", "5", incremental_operation=AlterConfigOpType.SET),
    ])
    with pytest.raises(KafkaException) as e:
        a.incremental_alter_configs([bad])[bad].result(TIMEOUT_S)
    assert e.value.args[0].code() == 40  # INVALID_CONFIG
    assert "retention.mss" in str(e.value)

    bad_value = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", "soon", incremental_operation=AlterConfigOpType.SET),
    ])
    with pytest.raises(KafkaException) as e:
        a.incremental_alter_configs([bad_value])[bad_value].result(TIMEOUT_S)
    assert e.value.args[0].code() == 40


def test_max_message_bytes_change_takes_effect_live(broker, topic):
    from confluent_kafka import Producer

    a = admin(broker.bootstrap)
    make_topic(broker.bootstrap, topic, 1)
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0, "message.max.bytes": 2_000_000})
    errors = []

    def cb(err, _msg):
        errors.append(err)

    p.produce(topic, b"x" * 5000, partition=0, on_delivery=cb)
    p.flush(TIMEOUT_S)
    assert errors == [None]

    res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("max.message.bytes", "1000", incremental_operation=AlterConfigOpType.SET),
    ])
    a.incremental_alter_configs([res])[res].result(TIMEOUT_S)
    errors.clear()
    p.produce(topic, b"x" * 5000, partition=0, on_delivery=cb)
    p.flush(TIMEOUT_S)
    assert len(errors) == 1 and errors[0] is not None
    assert errors[0].code() == 10, errors[0]  # MESSAGE_TOO_LARGE


def test_create_partitions_grows_only(broker, topic):
    a = admin(broker.bootstrap)
    make_topic(broker.bootstrap, topic, 2)
    a.create_partitions([NewPartitions(topic, 5)])[topic].result(TIMEOUT_S)
    md = a.list_topics(topic, timeout=TIMEOUT_S)
    assert len(md.topics[topic].partitions) == 5
    with pytest.raises(KafkaException) as e:
        a.create_partitions([NewPartitions(topic, 3)])[topic].result(TIMEOUT_S)
    assert e.value.args[0].code() == 37  # INVALID_PARTITIONS


def test_delete_records_advances_log_start(broker, topic):
    a = admin(broker.bootstrap)
    make_topic(broker.bootstrap, topic, 1)
    with k.Connection(broker.bootstrap) as c:
        for i in range(10):
            assert k.produce(c, topic, 0, k.encode_batch([k.Record(b"k", b"v%d" % i)])).error == 0
    res = a.delete_records([TopicPartition(topic, 0, 4)])
    deleted = res[TopicPartition(topic, 0, 4)].result(TIMEOUT_S)
    assert deleted.low_watermark == 4
    with k.Connection(broker.bootstrap) as c:
        assert k.list_offsets(c, topic, 0, -2)[2] == 4
        f = k.fetch(c, topic, 0, 0)
        assert f.error == 1 and f.log_start_offset == 4  # OFFSET_OUT_OF_RANGE below the log start
    bad = a.delete_records([TopicPartition(topic, 0, 100)])
    with pytest.raises(KafkaException) as e:
        bad[TopicPartition(topic, 0, 100)].result(TIMEOUT_S)
    assert e.value.args[0].code() == 1


def test_elect_leaders_single_replica_needs_no_election(broker, topic):
    """ElectLeaders (KIP-460) on one broker: every partition is led by its only replica. Kafka answers
    ELECTION_NOT_NEEDED per partition asked for, UNKNOWN_TOPIC_OR_PARTITION for a missing one, and leaves
    partitions that needed nothing out of an all-partitions answer."""
    from confluent_kafka import ElectionType
    a = admin(broker.bootstrap)
    make_topic(broker.bootstrap, topic, 2)
    tps = [TopicPartition(topic, 0), TopicPartition(topic, 1), TopicPartition(topic, 7)]
    res = a.elect_leaders(ElectionType.PREFERRED, tps).result(TIMEOUT_S)
    codes = {tp.partition: (err.code() if err is not None else 0) for tp, err in res.items()}
    assert codes == {0: 84, 1: 84, 7: 3}, codes  # ELECTION_NOT_NEEDED, UNKNOWN_TOPIC_OR_PARTITION
    assert a.elect_leaders(ElectionType.PREFERRED, None).result(TIMEOUT_S) == {}
    # The tool operators use: it reports the partitions that already have their preferred leader.
    out = tool("org.apache.kafka.tools.LeaderElectionCommand", "--bootstrap-server", broker.bootstrap,
               "--election-type", "PREFERRED", "--topic", topic, "--partition", "0")
    assert "Valid replica already elected for partitions" in out, out


def _elect_v1(bootstrap: str, election_type: int, topic: str, partitions) -> tuple[int, list]:
    w = k.Writer().i8(election_type).i32(1).string(topic).i32(len(partitions))
    for p in partitions:
        w.i32(p)
    w.i32(30000)
    with k.Connection(bootstrap) as c:
        r = c.request(43, 1, bytes(w.buf))
    r.i32()  # throttle
    top = r.i16()
    results = r.array(lambda r: (r.string(), r.array(lambda r: (r.i32(), r.i16(), r.string()))))
    return top, results


def test_elect_leaders_bad_requests(broker, topic):
    """An unknown election type is INVALID_REQUEST at the top (v1+)."""
    make_topic(broker.bootstrap, topic, 1)
    top, results = _elect_v1(broker.bootstrap, 0, topic, [0])
    assert top == 0 and results == [(topic, [(0, 84, results[0][1][0][2])])], results
    top, _ = _elect_v1(broker.bootstrap, 5, topic, [0])
    assert top == 42, top


@pytest.mark.skipif(MODE != "runnel", reason="runnel's own bound (Kafka has none)")
def test_elect_leaders_bounds_the_partitions_per_request(broker, topic):
    """Work per request is bounded: more than 100,000 partitions is INVALID_REQUEST, not a huge answer."""
    make_topic(broker.bootstrap, topic, 1)
    top, results = _elect_v1(broker.bootstrap, 0, topic, range(100_001))
    assert top == 42 and results == [], (top, len(results))


def test_describe_cluster(broker):
    a = admin(broker.bootstrap)
    desc = a.describe_cluster().result(TIMEOUT_S)
    assert desc.cluster_id
    assert len(desc.nodes) == 1
    assert desc.controller is not None and desc.controller.id == desc.nodes[0].id


def test_kafka_configs_and_topics_alter_tools(broker, topic):
    b = broker.bootstrap
    make_topic(b, topic, 1)
    tool("org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", b, "--entity-type", "topics",
         "--entity-name", topic, "--alter", "--add-config", "retention.ms=5000,segment.bytes=1048576")
    out = tool("org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", b, "--entity-type", "topics",
               "--entity-name", topic, "--describe")
    assert "retention.ms=5000" in out and "segment.bytes=1048576" in out, out
    tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", b, "--alter", "--topic", topic,
         "--partitions", "3")
    out = tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", b, "--describe", "--topic", topic)
    assert "PartitionCount: 3" in out, out


@pytest.mark.durability
def test_topic_configs_survive_restart(fresh_broker, topic):
    a = admin(fresh_broker.bootstrap)
    make_topic(fresh_broker.bootstrap, topic, 1)
    res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.bytes", "1048576", incremental_operation=AlterConfigOpType.SET),
    ])
    a.incremental_alter_configs([res])[res].result(TIMEOUT_S)
    fresh_broker.restart()
    a = admin(fresh_broker.bootstrap)
    assert topic_configs(a, topic)["retention.bytes"].value == "1048576"


@pytest.mark.durability
def test_retention_change_shrinks_the_log_live(topic):
    """Lowering retention.bytes on a live topic deletes its oldest segments at the next retention check."""
    from conftest import new_broker

    b = new_broker({"log.retention.check.interval.ms": "200"})
    try:
        if b.kind == "external":
            pytest.skip("needs a broker started by the tests")
        a = admin(b.bootstrap)
        make_topic(b.bootstrap, topic, 1, {"segment.bytes": "4096"})
        with k.Connection(b.bootstrap) as c:
            for i in range(200):
                assert k.produce(c, topic, 0, k.encode_batch([k.Record(b"k", b"v" * 100)])).error == 0
            assert k.list_offsets(c, topic, 0, -2)[2] == 0
        res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
            ConfigEntry("retention.bytes", "8192", incremental_operation=AlterConfigOpType.SET),
        ])
        a.incremental_alter_configs([res])[res].result(TIMEOUT_S)
        deadline = time.monotonic() + TIMEOUT_S
        with k.Connection(b.bootstrap) as c:
            while True:
                start = k.list_offsets(c, topic, 0, -2)[2]
                if start > 0:
                    break
                assert time.monotonic() < deadline, "retention.bytes=8192 did not advance the log start offset"
                time.sleep(0.1)
            assert k.list_offsets(c, topic, 0, -1)[2] == 200
    finally:
        b.close()


@pytest.mark.parametrize("target,codec_id", [("zstd", 4), ("uncompressed", 0)])
def test_topic_compression_type_recompresses_on_the_broker(broker, topic, target, codec_id):
    """compression.type other than `producer` stores every batch with that codec, records unchanged."""
    from confluent_kafka import Consumer, Producer

    make_topic(broker.bootstrap, topic, 1, {"compression.type": target})
    p = Producer({"bootstrap.servers": broker.bootstrap, "compression.codec": "lz4", "linger.ms": 5,
                  "enable.idempotence": True})
    for i in range(500):
        p.produce(topic, key=b"k%d" % i, value=b"value-%d" % i, partition=0, headers=[("h", b"%d" % i)])
    assert p.flush(TIMEOUT_S) == 0
    with k.Connection(broker.bootstrap) as c:
        f = k.fetch(c, topic, 0, 0, partition_max_bytes=1 << 20)
        assert f.error == 0 and f.high_watermark == 500
        assert {b.codec for b in f.batches()} == {codec_id}
        assert all(b.crc_ok for b in f.batches())
    cons = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": topic, "auto.offset.reset": "earliest",
                     "enable.auto.commit": False})
    cons.assign([TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.monotonic() + TIMEOUT_S
    while len(got) < 500 and time.monotonic() < deadline:
        m = cons.poll(0.5)
        if m is None:
            continue
        assert m.error() is None, m.error()
        got.append((m.offset(), m.key(), m.value(), m.headers()))
    cons.close()
    assert got == [(i, b"k%d" % i, b"value-%d" % i, [("h", b"%d" % i)]) for i in range(500)]
