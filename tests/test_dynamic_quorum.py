"""KIP-853's dynamic controller quorum with Kafka's own `kafka-metadata-quorum.sh` (MetadataQuorumCommand).

One `runnel` process (node 1, broker + controller) starts as the only voter (`controller.quorum.voters` =
itself); three controller-only processes (nodes 2, 3, 4) start with `controller.quorum.bootstrap.servers`
instead and join as learners, which DescribeQuorum lists as observers. While an idempotent acks=all
producer keeps writing to node 1's broker:
- `add-controller --command-config <node's controller.properties>` (node.id, the CONTROLLER listener and
  the data dir, whose meta.properties carries the directory.id the tool sends) makes 2 and 3 voters: the
  quorum grows from one voter to three; then 4 (four voters);
- adding a voter again is refused (DUPLICATE_VOTER), removing with a wrong directory id too
  (VOTER_NOT_FOUND);
- `remove-controller --controller-id 2 --controller-directory-id <its id>` leaves voters 1, 3, 4;
- node 3 is `kill -9`'d: the two voters left of three still commit (a topic is created), and the producer
  goes on; every acknowledged record is read back exactly once, in order;
- node 3 restarts and is a voter again (the membership it learned is in its log), caught up.

Why four controllers: with three voters, removing one leaves two, and a kill -9 of either would leave no
majority; growing to four first keeps "remove one, kill one" meaningful.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

import kproto as k
from conftest import MODE, BrokerProcess, free_port
from test_cluster import ClusterNode, Stream, consume_all
from test_kafka_tools import run_tool, tool

pytestmark = [pytest.mark.cluster, pytest.mark.kafka_tools,
              pytest.mark.skipif(MODE != "runnel", reason="starts its own runnel processes")]

QUORUM_TOOL = "org.apache.kafka.tools.MetadataQuorumCommand"
CLUSTER_ID = "RHluYW1pY1F1b3J1bVRzdA"  # 22 characters of base64url, as Kafka's cluster ids
BASE = {"cluster.id": CLUSTER_ID, "broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "300"}


def wait_until(cond, what: str, timeout: float = 60.0, interval: float = 0.5):
    """Polls `cond()` until it returns a truthy value (returned), failing with `what` and the last value."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = cond()
            if last:
                return last
        except Exception as e:  # noqa: BLE001 - a tool may fail while the quorum changes
            last = e
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout}s waiting for {what}; last: {last}")


class SeedNode(ClusterNode):
    """Node 1: broker + controller, the quorum's only voter at first."""

    def __init__(self):
        port = free_port()
        super().__init__(1, port, f"1@127.0.0.1:{port}",
                         {**BASE, "num.partitions": "1", "default.replication.factor": "1",
                          "offsets.topic.replication.factor": "1", "min.insync.replicas": "1"})


class JoiningController(BrokerProcess):
    """A controller-only node that joins through `controller.quorum.bootstrap.servers`."""

    def __init__(self, node_id: int, bootstrap_controllers: str):
        super().__init__({**BASE, "process.roles": "controller",
                          "controller.quorum.bootstrap.servers": bootstrap_controllers})
        self.node_id = node_id
        self.controller_port = free_port()
        self.controller = f"127.0.0.1:{self.controller_port}"

    def argv(self) -> list[str]:
        return super().argv() + ["--node-id", str(self.node_id), "--controller-listen", self.controller]

    def wait_ready(self):
        """A controller-only process has no broker listener: its controller listener answers ApiVersions."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"controller {self.node_id} exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                with k.Connection(self.controller, timeout=2.0) as c:
                    if k.api_versions_v0(c)[0] == 0:
                        return
            except (OSError, ValueError, ConnectionError):
                pass
            time.sleep(0.1)
        pytest.fail(f"controller {self.node_id} not answering on {self.controller}:\n{self.log_tail()}")

    def command_config(self) -> Path:
        """The controller's properties as `add-controller --command-config` reads them (Kafka's keys)."""
        path = self.dir / "controller.properties"
        path.write_text(f"node.id={self.node_id}\nprocess.roles=controller\ncontroller.listener.names=CONTROLLER\n"
                        f"listeners=CONTROLLER://{self.controller}\nlog.dirs={self.data_dir}\n")
        return path

    def directory_id(self) -> str:
        """`directory.id` from the data dir's meta.properties (written once, at the controller's first start)."""
        text = (self.data_dir / "meta.properties").read_text()
        m = re.search(r"^directory\.id=(\S+)$", text, re.M)
        assert m, text
        return m.group(1)


def status(ctl: str) -> dict:
    """`describe --status` through the controllers: its `Key: value` lines, the lists parsed."""
    out = tool(QUORUM_TOOL, "--bootstrap-controller", ctl, "describe", "--status")
    fields = {}
    for line in out.splitlines():
        m = re.match(r"^(\w+):\s+(.*)$", line.strip())
        if m:
            fields[m.group(1)] = m.group(2).strip()
    fields["voters"] = {v["id"]: v for v in json.loads(fields["CurrentVoters"])}
    fields["observers"] = {o["id"]: o for o in json.loads(fields["CurrentObservers"])}
    return fields


def replication(ctl: str) -> dict[int, dict]:
    """`describe --replication` rows by node id."""
    out = tool(QUORUM_TOOL, "--bootstrap-controller", ctl, "describe", "--replication")
    lines = [ln.split() for ln in out.splitlines() if ln.strip()]
    return {int(row[0]): dict(zip(lines[0], row)) for row in lines[1:]}


def create_topic(bootstrap: str, name: str):
    """CreateTopics through node 1's broker: answered once the controller committed it."""
    from confluent_kafka.admin import AdminClient, NewTopic
    a = AdminClient({"bootstrap.servers": bootstrap})
    a.create_topics([NewTopic(name, 1, 1)], operation_timeout=30)[name].result(60)


@pytest.fixture
def nodes():
    seed = SeedNode()
    joiners = {n: JoiningController(n, f"127.0.0.1:{seed.controller_port}") for n in (2, 3, 4)}
    try:
        seed.start()
        for j in joiners.values():
            j.start()
        yield seed, joiners
    finally:
        for p in (seed, *joiners.values()):
            p.close()


def test_one_voter_grows_to_four_then_loses_one_by_removal_and_one_by_kill9(nodes, topic):
    seed, joiners = nodes
    ctl = f"127.0.0.1:{seed.controller_port}"
    st = wait_until(lambda: (s := status(ctl)) and set(s["observers"]) >= {2, 3, 4} and s,
                    "the joining controllers observing (learners)")
    assert list(st["voters"]) == [1], st
    assert st["voters"][1]["endpoints"] == [f"CONTROLLER://{ctl}"], st
    # The learners' directory ids are those of their meta.properties.
    for n, j in joiners.items():
        assert st["observers"][n].get("directoryId") == j.directory_id(), st

    create_topic(seed.bootstrap, topic)
    s = Stream(seed.bootstrap, topic)
    s.until_acked(1000)
    for n in (2, 3, 4):
        out = tool(QUORUM_TOOL, "--bootstrap-controller", ctl, "--command-config",
                   str(joiners[n].command_config()), "add-controller")
        assert f"Added controller {n}" in out, out
        s.until_acked(len(s.acked) + 500)
    st = status(ctl)
    assert sorted(st["voters"]) == [1, 2, 3, 4], st
    for n, j in joiners.items():
        v = st["voters"][n]
        assert v["directoryId"] == j.directory_id() and v["endpoints"] == [f"CONTROLLER://{j.controller}"], st
    assert not set(st["observers"]) & {2, 3, 4}, st

    # Kafka's refusals: a voter added twice, a voter named with another directory id.
    dup = run_tool(QUORUM_TOOL, "--bootstrap-controller", ctl, "--command-config",
                   str(joiners[2].command_config()), "add-controller")
    assert dup.returncode != 0 and "DuplicateVoterException" in dup.stdout + dup.stderr, dup
    wrong = run_tool(QUORUM_TOOL, "--bootstrap-controller", ctl, "remove-controller", "--controller-id", "2",
                     "--controller-directory-id", joiners[3].directory_id())
    assert wrong.returncode != 0 and "VoterNotFoundException" in wrong.stdout + wrong.stderr, wrong

    out = tool(QUORUM_TOOL, "--bootstrap-controller", ctl, "remove-controller", "--controller-id", "2",
               "--controller-directory-id", joiners[2].directory_id())
    assert "Removed" in out and "controller 2" in out, out
    st = status(ctl)
    assert sorted(st["voters"]) == [1, 3, 4], st
    s.until_acked(len(s.acked) + 500)

    # Voters 1, 3, 4: without 3, two of three still commit.
    joiners[3].kill9()
    create_topic(seed.bootstrap, topic + "-after-kill")
    s.until_acked(len(s.acked) + 1000)
    s.finish()
    assert not s.failed, f"produce failures: {s.failed[:3]}"
    got = consume_all(seed.bootstrap, topic, len(s.acked))
    values = [v for _, v in got]
    assert len(values) == len(set(values)), "a record is stored twice"
    stored = {v: o for o, v in got}
    missing = [v for v in s.acked if v not in stored]
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {missing[:3]}"
    assert all(stored[v] == o for v, o in s.acked.items()), "records not at their acknowledged offsets"
    assert [int(v[4:]) for v in values] == sorted(int(v[4:]) for v in values), "records out of order"

    # Node 3 restarts a voter (its log holds the membership) and catches up.
    joiners[3].start()
    hw = int(status(ctl)["HighWatermark"])
    wait_until(lambda: (r := replication(ctl)).get(3, {}).get("Status") == "Follower"
               and int(r[3]["LogEndOffset"]) >= hw, "restarted voter 3 caught up", timeout=60)
    assert sorted(status(ctl)["voters"]) == [1, 3, 4]


class BootstrapBroker(BrokerProcess):
    """A `process.roles=broker` node that finds the controllers through `controller.quorum.bootstrap.servers`
    (no `controller.quorum.voters`)."""

    def __init__(self, node_id: int, bootstrap_controllers: str):
        super().__init__({**BASE, "process.roles": "broker", "num.partitions": "1",
                          "default.replication.factor": "1", "offsets.topic.replication.factor": "1",
                          "controller.quorum.bootstrap.servers": bootstrap_controllers})
        self.node_id = node_id

    def argv(self) -> list[str]:
        return super().argv() + ["--node-id", str(self.node_id)]


def test_a_broker_finds_the_quorum_through_a_bootstrap_controller_that_is_not_active(nodes, topic):
    """Broker 5 knows only controller 2, a learner: it learns the active controller's address from 2's
    NOT_CONTROLLER answer, then the voters, registers, and serves clients; controller 2 then
    becomes a voter and the broker keeps its session (still listed as an observer) and its clients."""
    seed, joiners = nodes
    ctl = f"127.0.0.1:{seed.controller_port}"
    wait_until(lambda: 2 in status(ctl)["observers"], "controller 2 observing")
    broker = BootstrapBroker(5, joiners[2].controller)
    try:
        broker.start()
        wait_until(lambda: 5 in status(ctl)["observers"], "broker 5 registered and heartbeating")
        from confluent_kafka.admin import AdminClient, NewTopic
        a = AdminClient({"bootstrap.servers": broker.bootstrap})
        a.create_topics([NewTopic(topic, 2, 1)], operation_timeout=30)[topic].result(60)
        s = Stream(broker.bootstrap, topic)
        s.until_acked(500)
        # Controller 2 becomes a voter: the broker follows the membership and keeps its session.
        tool(QUORUM_TOOL, "--bootstrap-controller", ctl, "--command-config", str(joiners[2].command_config()),
             "add-controller")
        wait_until(lambda: sorted(status(ctl)["voters"]) == [1, 2], "controller 2 a voter")
        s.until_acked(len(s.acked) + 500)
        s.finish()
        assert len(consume_all(broker.bootstrap, topic, len(s.acked))) >= len(s.acked)
        assert 5 in status(ctl)["observers"]
    finally:
        broker.close()
