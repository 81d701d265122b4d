"""DescribeQuorum (API 55, KIP-595/836/853) and Kafka's `kafka-metadata-quorum.sh` (issue 14).

- Raw protocol, v0–v2, against the session broker (runnel standalone, or Apache Kafka 4.4.0 with
  RUNNEL_TEST_BROKER=kafka — the shape checks are the same for both): one `__cluster_metadata` partition 0
  led by the node, which is its only voter, no observers, v2 Nodes naming the voter's CONTROLLER listener;
  a request naming another partition gets UNKNOWN_TOPIC_OR_PARTITION per partition.
- Kafka's own MetadataQuorumCommand (`describe --status`, `describe --replication`) against a runnel
  cluster of three combined nodes (test_cluster.py's) plus a broker-only node 4: the leader is the active
  controller, the three voters are listed with their controller endpoints, node 4 is the one observer, and
  every follower and the observer have acknowledged the leader and caught up; then the same with
  `--bootstrap-controller` at a follower's controller listener (the controllers answer Kafka's
  ApiVersions, DescribeCluster and DescribeQuorum themselves). test_controller_security.py runs it
  against SASL and mTLS controller listeners.
"""

from __future__ import annotations

import json
import re
import time

import pytest

import kproto as k
from conftest import MODE, BrokerProcess, new_broker
from test_cluster import Cluster, ClusterNode, active_controller
from test_kafka_tools import tool

DESCRIBE_QUORUM = 55
METADATA_TOPIC = "__cluster_metadata"
UNKNOWN_TOPIC_OR_PARTITION = 3
CLUSTER_AUTHORIZATION_FAILED = 31
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
QUORUM_TOOL = "org.apache.kafka.tools.MetadataQuorumCommand"


# -- raw protocol ----------------------------------------------------------------------------------------

def request_body(topics: list[tuple[str, list[int]]]) -> bytes:
    """A DescribeQuorum request body (flexible in every version)."""
    w = k.Writer().uvarint(len(topics) + 1)
    for name, parts in topics:
        w.compact_string(name).uvarint(len(parts) + 1)
        for p in parts:
            w.i32(p).tags()
        w.tags()
    return bytes(w.tags().buf)


def compact_string(r: k.Reader):
    n = r.uvarint() - 1
    return None if n < 0 else r.raw(n).decode()


def skip_tags(r: k.Reader):
    for _ in range(r.uvarint()):
        r.uvarint()
        r.raw(r.uvarint())


def parse_response(r: k.Reader, version: int) -> dict:
    def replica(r):
        s = {"replica_id": r.i32()}
        if version >= 2:
            s["directory_id"] = r.raw(16).hex()
        s["log_end_offset"] = r.i64()
        if version >= 1:
            s["last_fetch_timestamp"] = r.i64()
            s["last_caught_up_timestamp"] = r.i64()
        skip_tags(r)
        return s

    def partition(r):
        p = {"partition_index": r.i32(), "error_code": r.i16()}
        if version >= 2:
            p["error_message"] = compact_string(r)
        p.update(leader_id=r.i32(), leader_epoch=r.i32(), high_watermark=r.i64(),
                 current_voters=k.read_compact_array(r, replica), observers=k.read_compact_array(r, replica))
        skip_tags(r)
        return p

    def topic(r):
        t = {"topic_name": compact_string(r), "partitions": k.read_compact_array(r, partition)}
        skip_tags(r)
        return t

    def listener(r):
        lst = {"name": compact_string(r), "host": compact_string(r), "port": int.from_bytes(r.raw(2), "big")}
        skip_tags(r)
        return lst

    def node(r):
        n = {"node_id": r.i32(), "listeners": k.read_compact_array(r, listener)}
        skip_tags(r)
        return n

    resp = {"error_code": r.i16()}
    if version >= 2:
        resp["error_message"] = compact_string(r)
    resp["topics"] = k.read_compact_array(r, topic)
    if version >= 2:
        resp["nodes"] = k.read_compact_array(r, node)
    skip_tags(r)
    assert r.remaining() == 0, f"{r.remaining()} bytes left after DescribeQuorum v{version}"
    return resp


def describe_quorum(bootstrap: str, version: int, topics=((METADATA_TOPIC, [0]),)) -> dict:
    with k.Connection(bootstrap) as c:
        r = c.request(DESCRIBE_QUORUM, version, request_body(list(topics)), flexible_header=True,
                      flexible_response=True)
        return parse_response(r, version)


@pytest.mark.parametrize("version", [0, 1, 2])
def test_describe_quorum_of_a_single_node_names_it_leader_and_only_voter(broker, version):
    resp = describe_quorum(broker.bootstrap, version)
    assert resp["error_code"] == 0, resp
    [t] = resp["topics"]
    assert t["topic_name"] == METADATA_TOPIC
    [p] = t["partitions"]
    assert (p["partition_index"], p["error_code"]) == (0, 0), p
    leader = p["leader_id"]
    assert leader >= 0 and p["leader_epoch"] >= 0 and p["high_watermark"] >= 0, p
    [voter] = p["current_voters"]
    assert voter["replica_id"] == leader
    assert voter["log_end_offset"] >= p["high_watermark"], p
    assert p["observers"] == [], p
    if version >= 1:
        now_ms = time.time() * 1000
        # The leader reports itself as fetched and caught up now (its own clock).
        for ts in (voter["last_fetch_timestamp"], voter["last_caught_up_timestamp"]):
            assert abs(ts - now_ms) < 60_000, voter
    if version >= 2:
        assert voter["directory_id"] == "00" * 16 or len(voter["directory_id"]) == 32
        [node] = resp["nodes"]
        assert node["node_id"] == leader
        [lst] = node["listeners"]
        assert lst["name"] == "CONTROLLER" and lst["host"] and lst["port"] > 0, node


def test_describe_quorum_of_another_partition_is_unknown(broker):
    resp = describe_quorum(broker.bootstrap, 2, topics=[(METADATA_TOPIC, [1]), ("t", [0, 2])])
    assert resp["error_code"] == 0, resp
    got = [(t["topic_name"], p["partition_index"], p["error_code"])
           for t in resp["topics"] for p in t["partitions"]]
    assert got == [(METADATA_TOPIC, 1, UNKNOWN_TOPIC_OR_PARTITION), ("t", 0, UNKNOWN_TOPIC_OR_PARTITION),
                   ("t", 2, UNKNOWN_TOPIC_OR_PARTITION)], resp
    assert resp["nodes"] == []


@pytest.mark.skipif(MODE != "runnel", reason="starts a broker with authorizer settings")
def test_describe_quorum_needs_describe_on_the_cluster():
    """Kafka's handler: DESCRIBE on CLUSTER, else CLUSTER_AUTHORIZATION_FAILED at the top (no ACLs, deny by
    default)."""
    b = new_broker({"authorizer.class.name": STANDARD_AUTHORIZER})
    try:
        resp = describe_quorum(b.bootstrap, 2)
        assert resp["error_code"] == CLUSTER_AUTHORIZATION_FAILED, resp
        assert resp["topics"] == [] and resp["nodes"] == [], resp
    finally:
        b.close()


def test_describe_quorum_is_advertised(broker):
    with k.Connection(broker.bootstrap) as c:
        err, apis = k.api_versions_v0(c)
    assert err == 0
    assert apis[DESCRIBE_QUORUM] == (0, 2), apis[DESCRIBE_QUORUM]


# -- Kafka's kafka-metadata-quorum.sh against a three-node cluster ---------------------------------------

def status_fields(out: str) -> dict:
    """`describe --status` output: `Key: value` lines."""
    fields = {}
    for line in out.splitlines():
        m = re.match(r"^(\w+):\s+(.*)$", line.strip())
        if m:
            fields[m.group(1)] = m.group(2).strip()
    return fields


def replication_rows(out: str) -> list[dict]:
    """`describe --replication` output: a header row, then one row per replica."""
    lines = [ln.split() for ln in out.splitlines() if ln.strip()]
    header = lines[0]
    assert header[:3] == ["NodeId", "DirectoryId", "LogEndOffset"], out
    return [dict(zip(header, row)) for row in lines[1:]]


class BrokerOnlyNode(ClusterNode):
    """A `process.roles=broker` node: it follows the metadata log without voting (an observer)."""

    def __init__(self, node_id: int, voters: str, sets: dict):
        super().__init__(node_id, 0, voters, {**sets, "process.roles": "broker"})

    def argv(self) -> list[str]:
        return BrokerProcess.argv(self) + ["--node-id", str(self.node_id)]


def four_node_cluster(racks: dict[int, str] | None = None, sets: dict | None = None,
                      start_fourth: bool = True):
    """Three combined nodes plus the broker-only node 4 (optionally each with a `broker.rack`): yields the
    cluster with node 4 as `nodes[4]` (started unless `start_fourth` is false), closes every node after.
    Automatic balancing is off unless `sets` turns it on: these tests place and move replicas themselves."""
    c = Cluster({"auto.balance.enable": "false", **(sets or {})})
    voters = c.nodes[1].sets["controller.quorum.voters"]
    observer = BrokerOnlyNode(4, voters, {k: v for k, v in c.nodes[1].sets.items()
                                          if k not in ("controller.quorum.voters", "metrics.listeners")})
    for n, rack in (racks or {}).items():
        (c.nodes[n] if n in c.nodes else observer).sets["broker.rack"] = rack
    try:
        c.start()
        c.nodes[4] = observer
        if start_fourth:
            observer.start()
            c.wait(lambda md: len(md.brokers) == 4, "four brokers registered")
        yield c
    finally:
        observer.close()
        c.close()


@pytest.fixture
def cluster_with_observer():
    yield from four_node_cluster()


@pytest.mark.kafka_tools
@pytest.mark.cluster
@pytest.mark.skipif(MODE != "runnel", reason="starts its own runnel processes")
def test_kafka_metadata_quorum_tool_describes_voters_and_observers(cluster_with_observer):
    cluster = cluster_with_observer
    b = cluster.bootstrap
    status = status_fields(tool(QUORUM_TOOL, "--bootstrap-server", b, "describe", "--status"))
    leader = active_controller(b)
    assert int(status["LeaderId"]) == leader, status
    assert int(status["LeaderEpoch"]) >= 1, status
    assert int(status["HighWatermark"]) > 0, status
    voters = json.loads(status["CurrentVoters"])
    assert sorted(v["id"] for v in voters) == [1, 2, 3], status
    ports = {n: cluster.nodes[n].controller_port for n in (1, 2, 3)}
    for v in voters:
        assert v["endpoints"] == [f"CONTROLLER://127.0.0.1:{ports[v['id']]}"], voters
    # The combined nodes are voters only (as in Kafka); the broker-only node is the observer.
    assert [o["id"] for o in json.loads(status["CurrentObservers"])] == [4], status
    assert status["ClusterId"], status

    # Followers acknowledge the leader every raft heartbeat, the observer heartbeats to it: bounded wait
    # until the followers have been caught up at least once.
    deadline = time.monotonic() + 30
    while True:
        rows = replication_rows(tool(QUORUM_TOOL, "--bootstrap-server", b, "describe", "--replication"))
        by_id = {int(r["NodeId"]): r for r in rows}
        followers = [r for r in rows if r["Status"] == "Follower"]
        if len(followers) == 2 and all(r["LastCaughtUpTimestamp"] != "-1" for r in followers):
            break
        assert time.monotonic() < deadline, f"followers never caught up:\n{rows}"
        time.sleep(0.5)
    assert sorted(by_id) == [1, 2, 3, 4], rows
    assert by_id[leader]["Status"] == "Leader", rows
    assert by_id[4]["Status"] == "Observer", rows
    hw = int(status["HighWatermark"])
    for r in rows:
        assert int(r["LogEndOffset"]) > 0 and int(r["LastFetchTimestamp"]) > 0, rows
    for n in (1, 2, 3):
        assert int(by_id[n]["LogEndOffset"]) >= hw, rows
        assert int(by_id[n]["LastCaughtUpTimestamp"]) > 0, rows

    # The same from the controllers themselves (KIP-919: the admin client asks a follower's controller
    # listener for the controllers with DescribeCluster, then the active one for DescribeQuorum).
    follower = next(n for n in (1, 2, 3) if n != leader)
    ctl = f"127.0.0.1:{cluster.nodes[follower].controller_port}"
    status = status_fields(tool(QUORUM_TOOL, "--bootstrap-controller", ctl, "describe", "--status"))
    assert int(status["LeaderId"]) == leader, status
    assert sorted(v["id"] for v in json.loads(status["CurrentVoters"])) == [1, 2, 3], status
    for v in json.loads(status["CurrentVoters"]):
        assert v["endpoints"] == [f"CONTROLLER://127.0.0.1:{ports[v['id']]}"], status
    assert [o["id"] for o in json.loads(status["CurrentObservers"])] == [4], status
    assert int(status["HighWatermark"]) >= hw, status
    rows = replication_rows(tool(QUORUM_TOOL, "--bootstrap-controller", ctl, "describe", "--replication"))
    by_id = {int(r["NodeId"]): r for r in rows}
    assert sorted(by_id) == [1, 2, 3, 4], rows
    assert by_id[leader]["Status"] == "Leader" and by_id[4]["Status"] == "Observer", rows
