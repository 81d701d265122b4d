"""UnregisterBroker (KIP-500) in a three-node runnel cluster, driven by Kafka's `kafka-cluster.sh unregister`.

A broker stopped with SIGTERM stays registered (fenced); `unregister --id N` through another broker removes it
from the cluster metadata (DescribeCluster with fenced brokers no longer lists it), and a second unregister is
BROKER_ID_NOT_REGISTERED. Runnel only: Kafka's fixture starts a single node.
"""

from __future__ import annotations

import time

import pytest

import kproto as k
from conftest import MODE
from test_cluster import cluster  # noqa: F401 - the three-node fixture
from test_features import BROKER_ID_NOT_REGISTERED, unregister_broker
from test_kafka_tools import tool

pytestmark = [pytest.mark.cluster,
              pytest.mark.skipif(MODE != "runnel", reason="starts its own three runnel processes")]


def described_brokers(bootstrap: str) -> dict[int, bool]:
    """DescribeCluster v2 with fenced brokers → {broker id: is_fenced}."""
    body = k.Writer().i8(0).i8(1).i8(1).tags()
    with k.Connection(bootstrap) as c:
        r = c.request(60, 2, bytes(body.buf), flexible_header=True, flexible_response=True)
    r.i32()
    assert r.i16() == 0
    k.read_compact_string(r)
    r.i8()
    k.read_compact_string(r)
    r.i32()

    def broker(r):
        bid, _, _, _ = r.i32(), k.read_compact_string(r), r.i32(), k.read_compact_string(r)
        fenced = r.i8() == 1
        r.uvarint()
        return bid, fenced

    return dict(k.read_compact_array(r, broker))


def wait_for(cond, what: str, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = cond()
        if last:
            return last
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}")


def test_unregister_a_stopped_broker(cluster):  # noqa: F811 - the fixture
    bootstrap = cluster.nodes[1].bootstrap
    assert cluster.nodes[3].stop() == 0
    wait_for(lambda: described_brokers(bootstrap).get(3) is True, "broker 3 fenced")
    out = tool("org.apache.kafka.tools.ClusterTool", "unregister", "--bootstrap-server", bootstrap, "--id", "3")
    print(out)
    assert "Broker 3 is no longer registered." in out, out
    assert set(described_brokers(bootstrap)) == {1, 2}
    wait_for(lambda: set(described_brokers(cluster.nodes[2].bootstrap)) == {1, 2}, "broker 2's image")
    assert unregister_broker(bootstrap, 3) == (BROKER_ID_NOT_REGISTERED, "Broker ID 3 is not currently registered")
