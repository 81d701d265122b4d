"""Partition reassignment (KIP-455): AlterPartitionReassignments (45) and ListPartitionReassignments (46),
driven raw and by Kafka's `kafka-reassign-partitions.sh` (ReassignPartitionsCommand), issue 16.

- Raw protocol against the session broker (runnel standalone, or Apache Kafka 4.4.0 with
  RUNNEL_TEST_BROKER=kafka — the same answers are expected of both): an unknown topic or partition is
  UNKNOWN_TOPIC_OR_PARTITION, a target naming an unregistered broker, an empty or repeating target
  INVALID_REPLICA_ASSIGNMENT, cancelling when nothing moves NO_REASSIGNMENT_IN_PROGRESS, a target equal to
  the current replicas is accepted and moves nothing; nothing is listed as ongoing.
- `kafka-reassign-partitions.sh --generate/--execute/--verify` against the session broker (a one-broker
  plan).
- In a runnel cluster of three combined nodes plus a broker-only node 4: the tool's generated plan moves
  every replica off broker 1 onto 2, 3, 4 while an idempotent acks=all producer keeps writing; `--verify`
  reports completion, the replicas are the plan's, broker 1's logs are deleted, and every acknowledged record
  is read back once and in order. Then a move onto broker 4 during which broker 4 is `kill -9`'d and
  restarted: the reassignment completes after its restart, with no acknowledged record lost.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

import kproto as k
from conftest import MODE, make_topic
from test_kafka_tools import tool

REASSIGN_TOOL = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
ALTER_REASSIGNMENTS = 45
LIST_REASSIGNMENTS = 46
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_REPLICA_ASSIGNMENT = 39
NO_REASSIGNMENT_IN_PROGRESS = 85


# -- raw protocol ----------------------------------------------------------------------------------------

def alter(bootstrap: str, moves: list[tuple[str, int, list[int] | None]], version: int = 0):
    """AlterPartitionReassignments → (top-level code, {(topic, partition): code})."""
    by_topic: dict[str, list] = {}
    for t, p, replicas in moves:
        by_topic.setdefault(t, []).append((p, replicas))
    w = k.Writer().i32(30000)
    if version >= 1:
        w.i8(1)

    def partition(w, pr):
        p, replicas = pr
        w.i32(p)
        if replicas is None:
            w.uvarint(0)
        else:
            k.compact_array(w, replicas, lambda w, b: w.i32(b))
        w.tags()

    def topic(w, item):
        name, parts = item
        w.compact_string(name)
        k.compact_array(w, parts, partition)
        w.tags()

    k.compact_array(w, list(by_topic.items()), topic)
    w.tags()
    with k.Connection(bootstrap) as c:
        r = c.request(ALTER_REASSIGNMENTS, version, bytes(w.buf), flexible_header=True, flexible_response=True)
    r.i32()
    if version >= 1:
        r.i8()
    top = r.i16()
    k.read_compact_string(r)
    out = {}

    def read_topic(r):
        name = k.read_compact_string(r)

        def read_partition(r):
            p, code = r.i32(), r.i16()
            k.read_compact_string(r)
            r.uvarint()
            out[(name, p)] = code

        k.read_compact_array(r, read_partition)
        r.uvarint()

    k.read_compact_array(r, read_topic)
    return top, out


def list_ongoing(bootstrap: str) -> dict[tuple[str, int], tuple[list[int], list[int], list[int]]]:
    """ListPartitionReassignments of every partition → {(topic, p): (replicas, adding, removing)}."""
    w = k.Writer().i32(30000).uvarint(0).tags()
    with k.Connection(bootstrap) as c:
        r = c.request(LIST_REASSIGNMENTS, 0, bytes(w.buf), flexible_header=True, flexible_response=True)
    r.i32()
    assert r.i16() == 0
    k.read_compact_string(r)
    out = {}

    def ints(r):
        return k.read_compact_array(r, lambda r: r.i32())

    def read_topic(r):
        name = k.read_compact_string(r)

        def read_partition(r):
            p = r.i32()
            out[(name, p)] = (ints(r), ints(r), ints(r))
            r.uvarint()

        k.read_compact_array(r, read_partition)
        r.uvarint()

    k.read_compact_array(r, read_topic)
    return out


def test_alter_reassignments_answers_as_kafka(broker, topic):
    b = broker.bootstrap
    make_topic(b, topic, partitions=2)
    me = 1
    top, got = alter(b, [(topic, 0, [me]), (topic, 1, None), (topic, 5, [me]),
                         ("no-such-topic-" + topic, 0, [me])])
    assert top == 0
    assert got == {(topic, 0): 0, (topic, 1): NO_REASSIGNMENT_IN_PROGRESS,
                   (topic, 5): UNKNOWN_TOPIC_OR_PARTITION,
                   ("no-such-topic-" + topic, 0): UNKNOWN_TOPIC_OR_PARTITION}
    for bad in ([me, 77], [], [me, me]):
        top, got = alter(b, [(topic, 0, bad)], version=1)
        assert (top, got) == (0, {(topic, 0): INVALID_REPLICA_ASSIGNMENT}), bad
    assert list_ongoing(b) == {}


def test_reassign_partitions_tool_generate_execute_verify(broker, topic, tmp_path: Path):
    b = broker.bootstrap
    make_topic(b, topic, partitions=2)
    (tmp_path / "topics.json").write_text(json.dumps({"version": 1, "topics": [{"topic": topic}]}))
    out = tool(REASSIGN_TOOL, "--bootstrap-server", b, "--generate", "--broker-list", "1",
               "--topics-to-move-json-file", str(tmp_path / "topics.json"))
    plan = json.loads(out.split("Proposed partition reassignment configuration")[1].strip().splitlines()[0])
    assert sorted(p["partition"] for p in plan["partitions"]) == [0, 1]
    assert all(p["replicas"] == [1] for p in plan["partitions"]), plan
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    out = tool(REASSIGN_TOOL, "--bootstrap-server", b, "--execute",
               "--reassignment-json-file", str(tmp_path / "plan.json"))
    assert "Successfully started partition reassignments" in out, out
    out = tool(REASSIGN_TOOL, "--bootstrap-server", b, "--verify",
               "--reassignment-json-file", str(tmp_path / "plan.json"))
    assert f"Reassignment of partition {topic}-0 is completed." in out, out
    assert f"Reassignment of partition {topic}-1 is completed." in out, out
    out = tool(REASSIGN_TOOL, "--bootstrap-server", b, "--list")
    assert "No partition reassignments found." in out, out


# -- a runnel cluster ----------------------------------------------------------------------------------------

@pytest.fixture
def four_nodes():
    if MODE != "runnel":
        pytest.skip("starts its own runnel processes")
    from test_metadata_quorum import four_node_cluster
    yield from four_node_cluster()


@pytest.fixture
def two_racks():
    if MODE != "runnel":
        pytest.skip("starts its own runnel processes")
    from test_metadata_quorum import four_node_cluster
    yield from four_node_cluster({1: "a", 2: "a", 3: "b", 4: "b"})


def wait_verified(bootstrap: str, plan: Path, timeout: float = 120.0) -> str:
    """Runs `--verify` until every partition of `plan` is reported completed (bounded)."""
    deadline = time.monotonic() + timeout
    out = ""
    while time.monotonic() < deadline:
        out = tool(REASSIGN_TOOL, "--bootstrap-server", bootstrap, "--verify", "--reassignment-json-file",
                   str(plan))
        if "is still in progress" not in out:
            return out
        time.sleep(0.5)
    pytest.fail(f"reassignment not complete within {timeout}s:\n{out}")


def partition_logs(node, topic: str) -> list[str]:
    return sorted(p.name for p in Path(node.data_dir).glob(f"{topic}-*"))


@pytest.mark.cluster
@pytest.mark.kafka_tools
def test_moving_every_replica_off_a_broker_while_producing(four_nodes, topic, tmp_path: Path):
    from test_cluster import Stream, check_exactly_once_in_order, create_topic
    c = four_nodes
    create_topic(c, topic, partitions=3, rf=3)
    s = Stream(c.alive_bootstrap(), topic)
    s.until_acked(2000)
    (tmp_path / "topics.json").write_text(json.dumps({"version": 1, "topics": [{"topic": topic}]}))
    out = tool(REASSIGN_TOOL, "--bootstrap-server", c.bootstrap, "--generate", "--broker-list", "2,3,4",
               "--topics-to-move-json-file", str(tmp_path / "topics.json"))
    plan = json.loads(out.split("Proposed partition reassignment configuration")[1].strip().splitlines()[0])
    assert all(sorted(p["replicas"]) == [2, 3, 4] for p in plan["partitions"]), plan
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    out = tool(REASSIGN_TOOL, "--bootstrap-server", c.bootstrap, "--execute",
               "--reassignment-json-file", str(tmp_path / "plan.json"))
    assert "Successfully started partition reassignments" in out, out
    s.until_acked(len(s.acked) + 2000)
    out = wait_verified(c.bootstrap, tmp_path / "plan.json")
    for p in range(3):
        assert f"Reassignment of partition {topic}-{p} is completed." in out, out
    want = {p["partition"]: p["replicas"] for p in plan["partitions"]}
    c.wait(lambda md: all(md.topics[topic].partitions[p].replicas == r
                          and sorted(md.topics[topic].partitions[p].isrs) == [2, 3, 4]
                          for p, r in want.items()), "the plan's replicas, all in sync")
    s.until_acked(len(s.acked) + 1000)
    s.finish()
    check_exactly_once_in_order(c, s)
    deadline = time.monotonic() + 30
    while partition_logs(c.nodes[1], topic) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert partition_logs(c.nodes[1], topic) == [], "broker 1 still holds logs of the moved partitions"
    assert list_ongoing(c.nodes[2].bootstrap) == {}


@pytest.mark.cluster
def test_a_reassignment_survives_kill9_of_the_added_replica(four_nodes, topic):
    from test_cluster import Stream, check_exactly_once_in_order, create_topic
    c = four_nodes
    create_topic(c, topic, partitions=1, rf=3)
    s = Stream(c.alive_bootstrap(), topic)
    s.until_acked(3000)
    replicas = list(c.partition(topic).replicas)
    new = next(b for b in (1, 2, 3, 4) if b not in replicas)
    gone = replicas[0]
    target = [new] + replicas[1:]
    c.nodes[new].pause()  # the new replica cannot catch up until it is resumed (then killed)
    top, got = alter(c.nodes[gone].bootstrap, [(topic, 0, target)])
    assert (top, got) == (0, {(topic, 0): 0})
    ongoing = list_ongoing(c.nodes[gone].bootstrap)
    assert ongoing == {(topic, 0): (target + [gone], [new], [gone])}, ongoing
    c.nodes[new].resume()
    c.nodes[new].kill9()
    s.until_acked(len(s.acked) + 1000)
    c.nodes[new].start()
    c.wait(lambda md: md.topics[topic].partitions[0].replicas == target
           and sorted(md.topics[topic].partitions[0].isrs) == sorted(target), "the move completed", timeout=120)
    assert list_ongoing(c.nodes[target[1]].bootstrap) == {}
    s.until_acked(len(s.acked) + 500)
    s.finish()
    check_exactly_once_in_order(c, s)


def describe_configs(bootstrap: str, resource_type: int, name: str, keys: list[str]) -> dict[str, str | None]:
    """DescribeConfigs v4 of `keys` → {key: value}."""
    w = k.Writer().uvarint(2).i8(resource_type).compact_string(name)
    k.compact_array(w, keys, lambda w, key: w.compact_string(key))
    w.tags().i8(0).i8(0).tags()
    with k.Connection(bootstrap) as c:
        r = c.request(32, 4, bytes(w.buf), flexible_header=True, flexible_response=True)
    r.i32()
    out = {}

    def result(r):
        assert r.i16() == 0
        k.read_compact_string(r)
        r.i8()
        k.read_compact_string(r)

        def entry(r):
            key, value = k.read_compact_string(r), k.read_compact_string(r)
            r.i8(), r.i8(), r.i8()
            k.read_compact_array(r, lambda r: (k.read_compact_string(r), k.read_compact_string(r), r.i8(),
                                               r.uvarint()))
            r.i8()
            k.read_compact_string(r)
            r.uvarint()
            out[key] = value

        k.read_compact_array(r, entry)
        r.uvarint()

    k.read_compact_array(r, result)
    return out


def log_bytes(node, topic: str, p: int = 0) -> int:
    return sum(f.stat().st_size for f in (Path(node.data_dir) / f"{topic}-{p}").glob("*.log"))


THROTTLE_KEYS = ["leader.replication.throttled.rate", "follower.replication.throttled.rate"]


@pytest.mark.cluster
@pytest.mark.kafka_tools
def test_a_throttled_move_is_held_to_its_rate_until_the_throttle_is_lifted(four_nodes, topic, tmp_path: Path):
    from test_cluster import create_topic
    from confluent_kafka import Producer
    c = four_nodes
    create_topic(c, topic, partitions=1, rf=2)
    md = c.partition(topic)
    pr = Producer({"bootstrap.servers": c.alive_bootstrap(), "acks": "all", "linger.ms": 5})
    for i in range(3000):  # ~3 MB, more than one follower fetch (1 MiB per partition)
        pr.produce(topic, value=b"x" * 1000, partition=0)
        if i % 500 == 0:
            pr.poll(0)
    assert pr.flush(60) == 0
    target = [b for b in (1, 2, 3, 4) if b not in md.replicas][:1] + md.replicas[:1]
    plan = {"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": target}]}
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    out = tool(REASSIGN_TOOL, "--bootstrap-server", c.bootstrap, "--execute", "--throttle", "1000",
               "--reassignment-json-file", str(tmp_path / "plan.json"))
    assert "The inter-broker throttle limit was set to 1000 B/s" in out, out
    leader = md.leader
    assert describe_configs(c.nodes[leader].bootstrap, 4, str(leader), THROTTLE_KEYS) == \
        {key: "1000" for key in THROTTLE_KEYS}
    topic_throttles = describe_configs(c.nodes[leader].bootstrap, 2, topic, ["leader.replication.throttled.replicas",
                                                               "follower.replication.throttled.replicas"])
    assert topic_throttles["follower.replication.throttled.replicas"] == f"0:{target[0]}", topic_throttles
    new = c.nodes[target[0]]
    total = log_bytes(c.nodes[leader], topic)
    deadline = time.monotonic() + 30
    while log_bytes(new, topic) == 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert log_bytes(new, topic) > 0, "the added replica fetched nothing"
    # At 1000 B/s the added replica cannot catch up on ~3 MB: after a first fetch it stays behind (this waits
    # for the absence of progress, so it is a bounded observation, not an event).
    time.sleep(2)
    assert log_bytes(new, topic) < total, (log_bytes(new, topic), total)
    assert list_ongoing(c.nodes[1].bootstrap) != {}
    for b in (1, 2, 3, 4):
        tool("org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", c.bootstrap, "--alter",
             "--entity-type", "brokers", "--entity-name", str(b), "--delete-config", ",".join(THROTTLE_KEYS))
    out = wait_verified(c.bootstrap, tmp_path / "plan.json")
    assert f"Reassignment of partition {topic}-0 is completed." in out, out
    assert f"Clearing topic-level throttles on topic {topic}" in out, out
    assert "Clearing broker-level throttles" in out, out
    assert log_bytes(new, topic) >= total
    topic_throttles = describe_configs(c.nodes[leader].bootstrap, 2, topic, ["leader.replication.throttled.replicas",
                                                               "follower.replication.throttled.replicas"])
    assert topic_throttles == {"leader.replication.throttled.replicas": "",
                               "follower.replication.throttled.replicas": ""}, topic_throttles


def runnel(bootstrap: str, *args: str) -> str:
    """Runs the `runnel` CLI against `bootstrap`; its stdout (fails the test unless it exits 0)."""
    import subprocess
    from conftest import RUNNEL_BIN
    res = subprocess.run([str(RUNNEL_BIN), *args, "--bootstrap-server", bootstrap], capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, f"runnel {args} exited {res.returncode}:\n{res.stdout}\n{res.stderr}"
    return res.stdout


@pytest.mark.cluster
def test_decommission_drains_a_broker_while_producing_then_unregisters_it(four_nodes, topic):
    from test_cluster import Stream, check_exactly_once_in_order, create_topic
    from test_cluster_unregister import described_brokers
    c = four_nodes
    create_topic(c, topic, partitions=4, rf=3)
    s = Stream(c.alive_bootstrap(), topic)
    s.until_acked(2000)
    b2 = c.nodes[2].bootstrap
    out = runnel(b2, "cluster", "decommission", "1", "--wait-secs", "120")
    assert "Moving 3 replica(s) off broker 1." in out or "Moving 4 replica(s) off broker 1." in out, out
    assert "is unregistered" in out, out
    md = c.wait(lambda md: all(1 not in p.replicas and len(p.isrs) == 3
                               for p in md.topics[topic].partitions.values()), "no replica on broker 1")
    assert all(len(p.replicas) == 3 for p in md.topics[topic].partitions.values())
    assert "No partition reassignments in progress." in runnel(b2, "cluster", "reassignments")
    s.until_acked(len(s.acked) + 1000)
    s.finish()
    check_exactly_once_in_order(c, s)
    # The running broker registered again; stopped, a second decommission has nothing to move and
    # unregisters it for good.
    assert c.nodes[1].stop() == 0
    c.wait(lambda md: 1 not in md.brokers, "broker 1 fenced")
    out = runnel(b2, "cluster", "decommission", "1", "--wait-secs", "60")
    assert "Moving 0 replica(s) off broker 1." in out, out
    assert set(described_brokers(b2)) == {2, 3, 4}


@pytest.mark.cluster
def test_replicas_are_placed_and_moved_across_racks(two_racks, topic):
    from test_cluster import create_topic
    c = two_racks
    rack = {1: "a", 2: "a", 3: "b", 4: "b"}
    info = json.loads(runnel(c.nodes[1].bootstrap, "cluster", "info", "--json"))
    assert {b["id"]: b["rack"] for b in info["brokers"]} == rack  # Metadata's rack, from broker.rack
    create_topic(c, topic, partitions=8, rf=2)
    md = c.metadata(topic)
    for p, pm in md.topics[topic].partitions.items():
        assert {rack[b] for b in pm.replicas} == {"a", "b"}, (p, pm.replicas)
    runnel(c.nodes[2].bootstrap, "cluster", "decommission", "3", "--wait-secs", "120")
    md = c.wait(lambda md: all(3 not in pm.replicas for pm in md.topics[topic].partitions.values()),
                "no replica on broker 3")
    for p, pm in md.topics[topic].partitions.items():
        assert {rack[b] for b in pm.replicas} == {"a", "b"}, (p, pm.replicas)
