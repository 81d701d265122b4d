"""A data directory written by an older Runnel opens unchanged (issue 12: the reshaped broker keeps the
on-disk layout). `fixtures/standalone-datadir-18d0c67.tar.gz` was written by the standalone broker of commit
18d0c67 (`fixtures/make_standalone_datadir.py`): topic `orders` (2 partitions, a `retention.ms` override),
10 records per partition, group `g1` with committed offsets 3 and 7, a dynamic per-broker
`log.retention.ms`. Today's binary must serve all of it, accept new writes, and keep them across a restart."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from conftest import MODE, BrokerProcess

pytestmark = pytest.mark.skipif(MODE != "runnel", reason="opens a runnel data directory")

FIXTURES = Path(__file__).parent / "fixtures"


def read_all(bootstrap: str, partition: int, expect: int) -> list[bytes]:
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "compat-reader", "enable.auto.commit": False})
    c.assign([TopicPartition("orders", partition, 0)])
    out: list[bytes] = []
    try:
        for _ in range(200):
            if len(out) >= expect:
                break
            m = c.poll(0.2)
            if m is not None and not m.error():
                out.append(m.value())
    finally:
        c.close()
    return out


@pytest.mark.parametrize("fixture", ["standalone-datadir-18d0c67.tar.gz"])
def test_an_older_standalone_data_dir_opens(fixture):
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType
    b = BrokerProcess()
    with tarfile.open(FIXTURES / fixture) as tar:
        tar.extractall(b.dir, filter="data")
    # The metrics endpoint stays on the port of its own: the default 9644 may be another broker's.
    b.sets = {"offsets.topic.num.partitions": "3", "metrics.listeners": b.sets["metrics.listeners"]}
    try:
        b.start()
        a = AdminClient({"bootstrap.servers": b.bootstrap})
        md = a.list_topics(timeout=10)
        assert len(md.topics["orders"].partitions) == 2
        for part in (0, 1):
            got = read_all(b.bootstrap, part, 10)
            assert got == [b"order-%d-%d" % (part, i) for i in range(10)], f"partition {part}: {got}"
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g1", "enable.auto.commit": False})
        committed = c.committed([TopicPartition("orders", 0), TopicPartition("orders", 1)], timeout=30)
        c.close()
        assert [tp.offset for tp in committed] == [3, 7]
        topic = ConfigResource(ResourceType.TOPIC, "orders")
        broker = ConfigResource(ResourceType.BROKER, "1")
        configs = a.describe_configs([topic, broker])
        assert configs[topic].result(30)["retention.ms"].value == "172800000"
        assert configs[broker].result(30)["log.retention.ms"].value == "86400000"
        p = Producer({"bootstrap.servers": b.bootstrap, "enable.idempotence": True, "acks": "all"})
        p.produce("orders", value=b"after-upgrade", partition=0)
        assert p.flush(30) == 0
        b.restart()
        assert read_all(b.bootstrap, 0, 11)[-1] == b"after-upgrade"
    finally:
        b.close()
