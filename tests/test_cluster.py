"""Three real `runnel` processes on 127.0.0.1 forming one cluster (issue 5).

Each process runs a broker and a controller (`process.roles=broker,controller`, the default): its own client
port, its own controller port, its own data dir, the same `controller.quorum.voters`. Clients bootstrap from
all three. Checked with confluent-kafka (librdkafka):
- a topic with replication factor 3 and min.insync.replicas=2 keeps every record an idempotent acks=all
  producer had acknowledged when the partition leader is `kill -9`'d mid-stream; the client fails over; each
  acknowledged record is read back exactly once and in order; the killed broker restarts, catches up and
  rejoins the ISR;
- the active controller is killed while producing continues; a new one is elected;
- a broker stopped with SIGTERM moves its leaderships away before it exits (controlled shutdown);
- a broker frozen (SIGSTOP) while it led an epoch in which it appended nothing rejoins the ISR (issue 13);
- a leader restarted within its old session publishes no metadata, and so leads nothing, until its new
  incarnation is registered (issue 13).


- a broker stopped with SIGTERM moves its leaderships away before it exits (controlled shutdown).
- a SIGSTOPped active controller gets only itself fenced: the healthy brokers reach its successor in time.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

from conftest import MODE, BrokerProcess, free_port

pytestmark = [pytest.mark.cluster,
              pytest.mark.skipif(MODE != "runnel", reason="starts its own three runnel processes")]

NODES = (1, 2, 3)


class ClusterNode(BrokerProcess):
    """One `runnel server` of the three: broker + controller."""

    def __init__(self, node_id: int, controller_port: int, voters: str, sets: dict):
        super().__init__(sets)
        self.node_id = node_id
        self.controller_port = controller_port
        self.sets.update({"controller.quorum.voters": voters})
        self.paused = False

    def pause(self):
        """SIGSTOP: the process stays, but answers nothing (no heartbeats, no fetches) until `resume`."""
        os.kill(self.proc.pid, signal.SIGSTOP)
        self.paused = True

    def resume(self):
        if self.paused and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)
        self.paused = False

    def wait_log(self, text: str, what: str, timeout: float = 60.0):
        """Waits until this node's log shows `text` (bounded; fails with the log's tail)."""
        deadline = time.monotonic() + timeout
        while text not in self.log_tail(1000):
            if time.monotonic() > deadline:
                pytest.fail(f"node {self.node_id}: no {what} ('{text}') within {timeout}s:\n{self.log_tail(30)}")
            time.sleep(0.1)

    def argv(self) -> list[str]:
        argv = super().argv()
        return argv + ["--node-id", str(self.node_id),
                       "--controller-listen", f"127.0.0.1:{self.controller_port}"]


class MetadataWaits:
    """Cluster metadata through any live broker, and waiting on it: for a cluster object with `nodes` (each
    with `log_tail`), `client_conf` and `alive_bootstrap()` — Runnel's here, Kafka's in bench/."""

    def metadata(self, topic: str | None = None):
        from confluent_kafka.admin import AdminClient
        a = AdminClient({"bootstrap.servers": self.alive_bootstrap(), **self.client_conf})
        return a.list_topics(topic=topic, timeout=10)

    def wait(self, cond, what: str, timeout: float = 60.0):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                md = self.metadata()
                if cond(md):
                    return md
                last = md
            except Exception as e:  # noqa: BLE001 - a broker may be restarting
                last = e
            time.sleep(0.2)
        tails = "\n".join(f"--- node {i}:\n{n.log_tail(30)}" for i, n in self.nodes.items())
        pytest.fail(f"timed out after {timeout}s waiting for {what}; last: {last}\n{tails}")


class Cluster(MetadataWaits):
    node_class = ClusterNode  # a subclass may start its nodes differently (tests/test_secure_cluster.py)

    def __init__(self, sets: dict | None = None, client_conf: dict | None = None):
        self.client_conf = dict(client_conf or {})  # librdkafka settings every client of the tests uses
        cports = {n: free_port() for n in NODES}
        voters = ",".join(f"{n}@127.0.0.1:{cports[n]}" for n in NODES)
        base = {"num.partitions": "1", "default.replication.factor": "3", "min.insync.replicas": "2",
                "broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "300",
                "replica.lag.time.max.ms": "5000", "offsets.topic.replication.factor": "3",
                "offsets.topic.num.partitions": "3"}
        base.update(sets or {})
        self.nodes = {n: self.node_class(n, cports[n], voters, base) for n in NODES}

    @property
    def bootstrap(self) -> str:
        return ",".join(n.bootstrap for n in self.nodes.values())

    def start(self):
        for n in self.nodes.values():
            n.start()
        self.wait(lambda md: len(md.brokers) == 3, "three brokers registered")
        return self

    def close(self):
        for n in self.nodes.values():
            n.resume()
            n.close()

    def alive_bootstrap(self) -> str:
        return ",".join(n.bootstrap for n in self.nodes.values()
                        if n.proc and n.proc.poll() is None and not n.paused)


    def partition(self, topic: str, p: int = 0):
        # Brokers apply the metadata log each at its own pace: the broker asked may not show a topic another
        # one already answered for, so wait for it here too.
        md = self.wait(lambda md: topic in md.topics and p in md.topics[topic].partitions,
                       f"{topic}-{p} in the metadata")
        return md.topics[topic].partitions[p]


@pytest.fixture
def cluster():
    c = Cluster()
    try:
        yield c.start()
    finally:
        c.close()


def create_topic(c: Cluster, topic: str, partitions: int = 1, rf: int = 3, configs: dict | None = None):
    from confluent_kafka.admin import AdminClient, NewTopic
    a = AdminClient({"bootstrap.servers": c.alive_bootstrap(), **c.client_conf})
    fs = a.create_topics([NewTopic(topic, partitions, rf, config=configs or {})], operation_timeout=30)
    fs[topic].result(60)
    return c.wait(lambda md: topic in md.topics and len(md.topics[topic].partitions) == partitions
                  and all(pm.leader >= 0 and len(pm.isrs) == rf for pm in md.topics[topic].partitions.values()),
                  f"{topic} led with a full ISR")


def consume_all(bootstrap: str, topic: str, expect: int, timeout: float = 120.0,
                conf: dict | None = None, logger=None) -> list[tuple[int, bytes]]:
    """Reads partition 0 of `topic` from offset 0 until `expect` records or `timeout`; librdkafka's log
    goes to `logger` when one is given."""
    from confluent_kafka import Consumer, TopicPartition
    cons = Consumer({"bootstrap.servers": bootstrap, "group.id": f"verify-{time.monotonic_ns()}",
                     "enable.auto.commit": False, "auto.offset.reset": "earliest", **(conf or {})},
                    **({"logger": logger} if logger else {}))
    cons.assign([TopicPartition(topic, 0, 0)])
    out = []
    deadline = time.monotonic() + timeout
    try:
        while len(out) < expect and time.monotonic() < deadline:
            m = cons.poll(0.5)
            if m is None or m.error():
                continue
            out.append((m.offset(), m.value()))
    finally:
        cons.close()
    return out


class Stream:
    """An idempotent acks=all producer writing rec-00000000, rec-00000001, ... to partition 0."""

    def __init__(self, bootstrap: str, topic: str, conf: dict | None = None):
        from confluent_kafka import Producer
        self.topic = topic
        self.p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                           "linger.ms": 2, "message.timeout.ms": 120000, "request.timeout.ms": 10000,
                           "reconnect.backoff.max.ms": 500, "retry.backoff.max.ms": 500,
                           "topic.metadata.refresh.interval.ms": 1000, **(conf or {})})
        self.acked: dict[bytes, int] = {}
        self.failed: list = []
        self.sent = 0
        self.first_ack_after: dict[str, float] = {}

    def _cb(self, err, msg):
        if err is None:
            self.acked[msg.value()] = msg.offset()
        else:
            self.failed.append((msg.value(), str(err)))

    def send(self, n: int):
        for _ in range(n):
            try:
                self.p.produce(self.topic, value=b"rec-%08d" % self.sent, partition=0, on_delivery=self._cb)
                self.sent += 1
            except BufferError:
                self.p.poll(0.05)
        self.p.poll(0)

    def until_acked(self, n: int, timeout: float = 120.0):
        deadline = time.monotonic() + timeout
        while len(self.acked) < n and time.monotonic() < deadline:
            self.send(200)
            self.p.poll(0.01)
        assert len(self.acked) >= n, f"only {len(self.acked)} acknowledged; failures: {self.failed[:3]}"

    def finish(self):
        left = self.p.flush(120)
        assert left == 0, f"{left} records undelivered"


def check_exactly_once_in_order(c: Cluster, s: Stream):
    got = consume_all(c.alive_bootstrap(), s.topic, len(s.acked), conf=c.client_conf)
    assert len(got) >= len(s.acked), f"read back only {len(got)} of {len(s.acked)} acknowledged records"
    values = [v for _, v in got]
    offsets = [o for o, _ in got]
    assert offsets == list(range(len(got))), "offsets are not contiguous from 0"
    assert len(values) == len(set(values)), "a record is stored twice"
    stored = {v: o for o, v in got}
    missing = [v for v in s.acked if v not in stored]
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {missing[:3]}"
    moved = [(v, o, stored[v]) for v, o in s.acked.items() if stored[v] != o]
    assert not moved, f"acknowledged records not at their acknowledged offsets: {moved[:3]}"
    seqs = [int(v[4:]) for v in values]
    assert seqs == sorted(seqs), "records stored out of production order"


def test_three_brokers_are_listed_and_a_replicated_topic_round_trips(cluster, topic):
    md = cluster.metadata()
    assert sorted(md.brokers) == [1, 2, 3]
    # The metadata of a broker that shows the topic (another broker may not have applied it yet).
    pm = create_topic(cluster, topic, partitions=3).topics[topic].partitions
    assert sorted(p.leader for p in pm.values()) == [1, 2, 3], "leaders are spread over the brokers"
    for p in pm.values():
        assert sorted(p.replicas) == [1, 2, 3] and sorted(p.isrs) == [1, 2, 3]
    s = Stream(cluster.bootstrap, topic)
    s.until_acked(2000)
    s.finish()
    check_exactly_once_in_order(cluster, s)


def test_leader_kill9_loses_no_acknowledged_record_and_the_broker_rejoins(cluster, topic):
    create_topic(cluster, topic, configs={"min.insync.replicas": "2"})
    s = Stream(cluster.bootstrap, topic)
    s.until_acked(5000)
    leader = cluster.partition(topic).leader
    acked_before = dict(s.acked)
    cluster.nodes[leader].kill9()
    killed = time.monotonic()
    cluster.wait(lambda md: md.topics[topic].partitions[0].leader not in (-1, leader),
                 "a new leader after kill -9")
    s.until_acked(len(s.acked) + 5000)
    failover_s = time.monotonic() - killed
    s.finish()
    assert not s.failed, f"produce failures: {s.failed[:3]}"
    lost = [v for v in acked_before if v not in s.acked]
    assert not lost
    check_exactly_once_in_order(cluster, s)
    # the killed broker restarts, catches up and rejoins the ISR
    cluster.nodes[leader].start()
    cluster.wait(lambda md: sorted(md.topics[topic].partitions[0].isrs) == [1, 2, 3],
                 f"broker {leader} back in the ISR")
    print(f"failover (kill -9 to 5000 more acks): {failover_s:.2f}s")


def test_restarted_preferred_replica_gets_its_leadership_back_while_producing(topic):
    """auto.leader.rebalance.enable (on by default; the check runs every second here instead of every 300):
    once the killed leader is back in the ISR, the controller makes it leader again — a live leader hands
    over to a follower under an idempotent acks=all stream, and nothing acknowledged is lost, duplicated or
    reordered."""
    c = Cluster({"leader.imbalance.check.interval.seconds": "1"}).start()
    try:
        create_topic(c, topic, configs={"min.insync.replicas": "2"})
        preferred = c.partition(topic).replicas[0]
        assert c.partition(topic).leader == preferred
        s = Stream(c.bootstrap, topic)
        s.until_acked(3000)
        c.nodes[preferred].kill9()
        c.wait(lambda md: md.topics[topic].partitions[0].leader not in (-1, preferred),
               "a new leader after kill -9")
        s.until_acked(len(s.acked) + 3000)
        c.nodes[preferred].start()
        # Keep producing while the broker catches up, rejoins the ISR and is elected again.
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            s.until_acked(len(s.acked) + 500)
            pm = c.partition(topic)
            if pm.leader == preferred and sorted(pm.isrs) == [1, 2, 3]:
                break
        pm = c.partition(topic)
        assert pm.leader == preferred, f"leadership not back on the preferred replica {preferred}: {pm}"
        s.until_acked(len(s.acked) + 3000)
        s.finish()
        assert not s.failed, f"produce failures: {s.failed[:3]}"
        check_exactly_once_in_order(c, s)
        assert "became leader" in c.nodes[preferred].log_tail(400)
    finally:
        c.close()


def test_elect_leaders_moves_leadership_to_the_preferred_replica_on_request(topic):
    """ElectLeaders (KIP-460) with automatic rebalancing off: a restarted preferred replica back in the ISR
    becomes leader when asked (confluent-kafka's AdminClient and Kafka's own kafka-leader-election tool),
    not before; asking again is ELECTION_NOT_NEEDED; a preferred replica outside the ISR is
    PREFERRED_LEADER_NOT_AVAILABLE."""
    from confluent_kafka import ElectionType, TopicPartition
    from confluent_kafka.admin import AdminClient
    from test_kafka_tools import tool
    c = Cluster({"auto.leader.rebalance.enable": "false"}).start()
    try:
        create_topic(c, topic, partitions=2)
        preferred = {p: c.partition(topic, p).replicas[0] for p in (0, 1)}
        victim = preferred[0]
        s = Stream(c.bootstrap, topic)
        s.until_acked(1000)
        c.nodes[victim].kill9()
        c.wait(lambda md: md.topics[topic].partitions[0].leader not in (-1, victim), "a new leader")
        a = AdminClient({"bootstrap.servers": c.alive_bootstrap()})

        def elect(partitions):
            res = a.elect_leaders(ElectionType.PREFERRED, partitions).result(60)
            return {tp.partition: (e.code() if e is not None else 0) for tp, e in res.items()}

        # While the preferred replica is down it is not in the ISR.
        assert elect([TopicPartition(topic, 0)]) == {0: 80}  # PREFERRED_LEADER_NOT_AVAILABLE
        s.until_acked(len(s.acked) + 1000)
        c.nodes[victim].start()
        c.wait(lambda md: all(sorted(pm.isrs) == [1, 2, 3] for pm in md.topics[topic].partitions.values()),
               f"broker {victim} back in every ISR")
        assert c.partition(topic, 0).leader != victim, "moved back although auto.leader.rebalance.enable=false"
        assert elect([TopicPartition(topic, 0)]) == {0: 0}
        # Answered once the electing broker has the change; the others publish it a moment later.
        c.wait(lambda md: md.topics[topic].partitions[0].leader == victim, f"every broker shows {victim} leading")
        assert elect([TopicPartition(topic, 0)]) == {0: 84}  # ELECTION_NOT_NEEDED
        # Kafka's tool, all partitions: whatever is left unbalanced gets its preferred leader.
        tool("org.apache.kafka.tools.LeaderElectionCommand", "--bootstrap-server", c.alive_bootstrap(),
             "--election-type", "PREFERRED", "--all-topic-partitions")
        c.wait(lambda md: all(pm.leader == preferred[p] for p, pm in md.topics[topic].partitions.items()),
               f"every partition led by its preferred replica {preferred}")
        s.until_acked(len(s.acked) + 1000)
        s.finish()
        assert not s.failed, f"produce failures: {s.failed[:3]}"
        check_exactly_once_in_order(c, s)
    finally:
        c.close()


def active_controller(bootstrap: str) -> int:
    """The active controller's id as `runnel cluster info` reports it (DescribeCluster)."""
    import json
    import subprocess
    from conftest import RUNNEL_BIN
    out = subprocess.run([str(RUNNEL_BIN), "cluster", "info", "--json", "-b", bootstrap],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["controller_id"]


def test_controller_leader_kill_elects_a_new_one_while_producing(cluster, topic):
    import subprocess
    create_topic(cluster, topic)
    s = Stream(cluster.bootstrap, topic)
    s.until_acked(2000)
    old = active_controller(cluster.alive_bootstrap())
    cluster.nodes[old].kill9()
    deadline = time.monotonic() + 60
    new = None
    while time.monotonic() < deadline:
        try:
            new = active_controller(cluster.alive_bootstrap())
            if new not in (-1, old):
                break
        except (AssertionError, ValueError, KeyError, subprocess.TimeoutExpired):
            pass
        time.sleep(0.2)
    assert new not in (None, -1, old), f"no new active controller (last answer {new})"
    s.until_acked(len(s.acked) + 3000)
    s.finish()
    check_exactly_once_in_order(cluster, s)


def test_stopped_active_controller_fences_only_itself(cluster, topic):
    """Found by the fault campaign (reliability/, class sigstop_leader): the active controller is SIGSTOPped,
    so its connections stay open and nothing answers. The healthy brokers' heartbeats and metadata fetches
    must give up on it within half the session timeout and reach the next active controller, which then
    fences the stopped broker only: its leaderships move to an ISR of both healthy brokers and acks=all
    writes (min.insync.replicas=2) go on. (Each attempt used to wait 12 s, longer than the 3 s session: the
    new controller fenced a healthy broker too, ISRs fell to one replica and writes stopped for ~20 s.)"""
    import signal
    create_topic(cluster, topic, partitions=3, configs={"min.insync.replicas": "2"})
    victim = active_controller(cluster.alive_bootstrap())
    healthy = [n for n in NODES if n != victim]
    others = ",".join(cluster.nodes[n].bootstrap for n in healthy)
    s = Stream(cluster.bootstrap, topic)
    s.until_acked(500)
    cluster.nodes[victim].proc.send_signal(signal.SIGSTOP)
    stopped = time.monotonic()
    try:
        from confluent_kafka.admin import AdminClient
        a = AdminClient({"bootstrap.servers": others})
        deadline = stopped + 15
        last = None
        while time.monotonic() < deadline:
            try:
                parts = a.list_topics(topic=topic, timeout=5).topics[topic].partitions
                last = {p.id: (p.leader, sorted(p.isrs)) for p in parts.values()}
                if all(leader in healthy and isr == healthy for leader, isr in last.values()):
                    break
            except Exception as e:  # noqa: BLE001 - metadata may be unavailable during the election
                last = e
            time.sleep(0.2)
        else:
            pytest.fail(f"15 s after SIGSTOP of controller {victim}: not every partition led within the ISR "
                        f"{healthy} (partition: (leader, ISR)): {last}\n" + "\n".join(cluster.nodes[n].log_tail(20) for n in healthy))
        moved_s = time.monotonic() - stopped
        s.until_acked(len(s.acked) + 500, timeout=60)
        resumed_s = time.monotonic() - stopped
    finally:
        cluster.nodes[victim].proc.send_signal(signal.SIGCONT)
    cluster.wait(lambda md: all(sorted(p.isrs) == [1, 2, 3] for p in md.topics[topic].partitions.values()),
                 f"broker {victim} back in every ISR")
    s.finish()
    check_exactly_once_in_order(cluster, s)
    print(f"SIGSTOP of the active controller: leaders within the healthy ISR after {moved_s:.2f}s, "
          f"500 more records acknowledged after {resumed_s:.2f}s")


def test_offsets_topic_waits_for_a_down_broker_instead_of_getting_fewer_replicas(cluster):
    """Found by the fault campaign (coordinator_kill): `__consumer_offsets` was created with the replication
    factor capped by the *live* brokers, so a group's first request while one of three brokers was down gave
    the offsets topic two replicas for good. As Kafka: while the cluster cannot place every replica the
    coordinator is not available (COORDINATOR_NOT_AVAILABLE, and nothing is created); once the broker is back
    the topic gets `offsets.topic.replication.factor` (3) replicas."""
    from test_groups import find_coordinator_raw
    victim = 3
    assert cluster.nodes[victim].stop() == 0
    cluster.wait(lambda md: sorted(md.brokers) == [1, 2], "broker 3 fenced after its controlled shutdown")
    err = find_coordinator_raw(cluster.nodes[1].bootstrap, "g-offsets-rf")[0]
    assert err == 15, f"FindCoordinator with a broker down: expected COORDINATOR_NOT_AVAILABLE (15), got {err}"
    assert "__consumer_offsets" not in cluster.metadata().topics
    cluster.nodes[victim].start()
    cluster.wait(lambda md: len(md.brokers) == 3, "broker 3 back")
    deadline = time.monotonic() + 30
    while (err := find_coordinator_raw(cluster.nodes[1].bootstrap, "g-offsets-rf")[0]) != 0:
        assert time.monotonic() < deadline, f"FindCoordinator still answers {err} 30 s after broker 3 came back"
        time.sleep(0.1)
    md = cluster.wait(lambda md: len(getattr(md.topics.get("__consumer_offsets"), "partitions", {})) == 3,
                      "__consumer_offsets created with its 3 partitions")
    replicas = {p.id: sorted(p.replicas) for p in md.topics["__consumer_offsets"].partitions.values()}
    assert replicas and all(r == [1, 2, 3] for r in replicas.values()), replicas


def test_sigterm_moves_leaderships_before_exit(cluster, topic):
    create_topic(cluster, topic, partitions=3)
    pm = cluster.partition(topic, 0)
    victim = pm.leader
    rc = cluster.nodes[victim].stop()
    assert rc == 0
    md = cluster.metadata(topic)
    for p in md.topics[topic].partitions.values():
        assert p.leader not in (-1, victim), f"partition {p.id} still led by {p.leader} after SIGTERM"
    assert "controlled shutdown complete" in cluster.nodes[victim].log_tail(200)


def test_topic_deleted_while_a_broker_is_down_can_be_recreated(cluster, topic):
    """The returning broker deletes its stray log of the old topic (another topic id), as Kafka does."""
    from confluent_kafka.admin import AdminClient
    create_topic(cluster, topic)
    s = Stream(cluster.bootstrap, topic)
    s.until_acked(50)
    s.finish()
    away = cluster.partition(topic).replicas[-1]
    cluster.nodes[away].kill9()
    a = AdminClient({"bootstrap.servers": cluster.alive_bootstrap()})
    a.delete_topics([topic], operation_timeout=30)[topic].result(60)
    cluster.wait(lambda md: topic not in md.topics, f"{topic} deleted")
    cluster.nodes[away].start()
    cluster.wait(lambda md: len(md.brokers) == 3, "the broker back")
    from confluent_kafka import KafkaException
    try:
        create_topic(cluster, topic)
    except KafkaException as e:
        # The returning voter may force a Raft election (no pre-vote) just as the CreateTopics commits; the
        # broker's controller client then retries on the new leader and gets TOPIC_ALREADY_EXISTS for the topic
        # its first attempt created — as a retried CreateTopics can against Kafka. The topic is new either way
        # (the old one was gone above).
        assert e.args[0].code() == 36, e
        cluster.wait(lambda md: topic in md.topics and all(
            pm.leader >= 0 and len(pm.isrs) == 3 for pm in md.topics[topic].partitions.values()),
            f"{topic} led with a full ISR")
    # Once its new incarnation is registered (after the old session expires) it publishes its first image.
    cluster.nodes[away].wait_log("deleting stray log", "stray log deleted")
    s = Stream(cluster.bootstrap, topic)
    s.until_acked(20)
    s.finish()
    check_exactly_once_in_order(cluster, s)


def produce_one(bootstrap: str, topic: str, size: int):
    """Produces one record of `size` bytes with acks=all to partition 0; returns the KafkaError or None."""
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "message.timeout.ms": 30000,
                  "message.max.bytes": 10_000_000, "topic.metadata.refresh.interval.ms": 1000})
    result = []
    p.produce(topic, value=b"x" * size, partition=0, on_delivery=lambda err, msg: result.append(err))
    assert p.flush(60) == 0, "the record was neither acknowledged nor refused in time"
    return result[0]


def test_dynamic_broker_config_survives_topic_config_and_leader_changes(cluster, topic):
    """B1 (issue 12): a dynamic broker config (here `message.max.bytes`, set per broker with
    IncrementalAlterConfigs as `kafka-configs --entity-type brokers` does) stays in force for a partition
    across a change of its topic configs and a change of its leader. Each of those publishes a new partition
    state, which used to rebuild the partition's LogConfig from the static config and so silently undo it."""
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                       ResourceType)
    create_topic(cluster, topic)
    a = AdminClient({"bootstrap.servers": cluster.alive_bootstrap()})
    for n in NODES:
        res = ConfigResource(ResourceType.BROKER, str(n), incremental_configs=[
            ConfigEntry("message.max.bytes", "2000", incremental_operation=AlterConfigOpType.SET)])
        a.incremental_alter_configs([res])[res].result(60)
    assert produce_one(cluster.bootstrap, topic, 500) is None

    def refused(what: str):
        err = produce_one(cluster.alive_bootstrap(), topic, 5000)
        assert err is not None and err.code() == KafkaError.MSG_SIZE_TOO_LARGE, f"{what}: {err}"

    refused("after the dynamic change")
    res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)])
    a.incremental_alter_configs([res])[res].result(60)
    refused("after a topic config change")
    leader = cluster.partition(topic).leader
    cluster.nodes[leader].kill9()
    cluster.wait(lambda md: md.topics[topic].partitions[0].leader not in (-1, leader), "a new leader")
    refused("after a leader change")
    assert produce_one(cluster.alive_bootstrap(), topic, 500) is None


def test_follower_that_led_an_empty_epoch_rejoins_the_isr(cluster, topic):
    """Issue 13: leader A (epoch 0, 10 records) is frozen past the session timeout, B leads epoch 1 and
    appends nothing; A returns and the ISR is full again; B is frozen, another broker leads epoch 2; B returns
    with its epoch cache ending in (1, 10) while the leader's has (0, 0), (2, 10). B must drop that entry and
    fetch again (it used to get a diverging epoch on every Fetch and stay out of the ISR for good)."""
    from confluent_kafka import Producer
    create_topic(cluster, topic)
    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(10):
        p.produce(topic, value=b"r%d" % i, partition=0)
    assert p.flush(60) == 0

    def leader_is_not(old: int):
        return lambda md: md.topics[topic].partitions[0].leader not in (-1, old)

    def isr_full(md):
        pm = md.topics[topic].partitions[0]
        return pm.leader >= 0 and sorted(pm.isrs) == [1, 2, 3]

    a = cluster.partition(topic).leader
    cluster.nodes[a].pause()
    b = cluster.wait(leader_is_not(a), f"a new leader while broker {a} is stopped").topics[topic].partitions[0].leader
    cluster.nodes[a].resume()
    cluster.wait(isr_full, f"broker {a} back in the ISR")
    cluster.nodes[b].pause()
    cluster.wait(leader_is_not(b), f"a new leader while broker {b} is stopped")
    cluster.nodes[b].resume()
    cluster.wait(isr_full, f"broker {b} (stale epoch at its log end) back in the ISR", timeout=30)
    got = consume_all(cluster.bootstrap, topic, 10)
    assert [v for _, v in got] == [b"r%d" % i for i in range(10)]


def test_broker_restarted_within_its_session_does_not_lead_before_it_registers(topic):
    """Issue 13 (seen in the fault campaign): the leader is `kill -9`'d and restarted before the controller
    notices (a 10 s session). Its new incarnation cannot register until the old session expires, and the
    metadata it reads meanwhile still names it leader at the old epoch. It must not act on that image: a
    produce sent to it straight away is refused (it used to be appended by the restarted process, which after
    a power loss may hold less than its followers). Once registered it follows and rejoins the ISR."""
    import kproto as k
    from confluent_kafka import Producer
    session_s = 10
    c = Cluster({"broker.session.timeout.ms": str(session_s * 1000)}).start()
    try:
        create_topic(c, topic)
        p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all"})
        for i in range(10):
            p.produce(topic, value=b"r%d" % i, partition=0)
        assert p.flush(60) == 0
        leader = c.partition(topic).leader
        node = c.nodes[leader]
        node.kill9()
        killed = time.monotonic()
        node.start()
        answers = []
        batch = k.encode_batch([k.Record(None, b"while unregistered")])
        with k.Connection(node.bootstrap) as conn:
            probe_until = time.monotonic() + 3.0
            while time.monotonic() < probe_until:
                answers.append(k.produce(conn, topic, 0, batch, acks=1).error)
                time.sleep(0.1)
        probed_within_s = time.monotonic() - killed
        assert probed_within_s < session_s - 2, \
            f"the probe ended {probed_within_s:.1f}s after the kill: not within the {session_s} s session"
        accepted = answers.count(0)
        assert accepted == 0, (f"the restarted broker {leader} appended {accepted} of {len(answers)} produces "
                               f"before registering; answers {answers}\n{node.log_tail(30)}")
        assert set(answers) <= {3, 6}, f"unexpected errors {set(answers)}"
        c.wait(lambda md: sorted(md.topics[topic].partitions[0].isrs) == [1, 2, 3]
               and md.topics[topic].partitions[0].leader >= 0,
               f"broker {leader} registered and back in the ISR", timeout=90)
        got = consume_all(c.bootstrap, topic, 10)
        assert [v for _, v in got] == [b"r%d" % i for i in range(10)]
    finally:
        c.close()


# ------------------------------------------------------------ issue 12: one resolver in both modes
def raw_produce_too_big(bootstrap: str, topic: str, partition: int, size: int) -> int:
    """Produces one `size`-byte record to `partition` on the broker at `bootstrap` (its leader); the error code."""
    import kproto as k
    batch = k.encode_batch([k.Record(None, b"x" * size)])
    with k.Connection(bootstrap) as c:
        return k.produce(c, topic, partition, batch).error


def test_dynamic_broker_configs_go_through_the_metadata_log(cluster, topic):
    """Issue 12: BROKER configs sent to one broker are `ConfigRecord`s in the metadata log, so every broker
    applies them. The `--entity-default` `message.max.bytes` set through broker 1 makes the leader on every
    broker refuse a bigger record (MESSAGE_TOO_LARGE) and shows on broker 3 as DYNAMIC_DEFAULT_BROKER_CONFIG;
    a per-broker config for broker 2 set through broker 3 shows on broker 2 (DYNAMIC_BROKER_CONFIG), and a bad
    value for broker 2 is refused by broker 3 as INVALID_REQUEST; a restarted broker keeps both."""
    import kproto as k
    from test_broker_configs import (BROKER, DYNAMIC_BROKER, DYNAMIC_DEFAULT, SET, describe, eventually,
                                     incremental_alter, ok)
    create_topic(cluster, topic, partitions=3)
    nodes = cluster.nodes
    with k.Connection(nodes[1].bootstrap) as c1:
        ok(incremental_alter(c1, BROKER, "", [("message.max.bytes", SET, "2000")]))
    md = cluster.metadata(topic)
    leaders = {p: pm.leader for p, pm in md.topics[topic].partitions.items()}
    assert set(leaders.values()) == set(NODES), f"placement puts one leader on each broker: {leaders}"
    for p, leader in leaders.items():
        def refused(p=p, leader=leader):
            assert raw_produce_too_big(nodes[leader].bootstrap, topic, p, 5000) == 10, f"leader {leader}"
        eventually(refused)
        assert raw_produce_too_big(nodes[leader].bootstrap, topic, p, 100) == 0

    def shows(node: int, name: str, value: str, source: int):
        with k.Connection(nodes[node].bootstrap) as c:
            err, _, entries = describe(c, BROKER, name, ["message.max.bytes"])
        assert err == 0 and entries["message.max.bytes"][:2] == (value, source), entries

    eventually(lambda: shows(3, "3", "2000", DYNAMIC_DEFAULT))
    with k.Connection(nodes[3].bootstrap) as c3:
        ok(incremental_alter(c3, BROKER, "2", [("message.max.bytes", SET, "3000")]))
        err, msg = incremental_alter(c3, BROKER, "2", [("message.max.bytes", SET, "lots")])
        assert err == 42 and "Invalid value lots" in msg, (err, msg)
    eventually(lambda: shows(2, "2", "3000", DYNAMIC_BROKER))
    shows(3, "3", "2000", DYNAMIC_DEFAULT)
    nodes[2].restart()
    eventually(lambda: shows(2, "2", "3000", DYNAMIC_BROKER), timeout=60)
    with k.Connection(nodes[2].bootstrap) as c2:
        _, _, entries = describe(c2, BROKER, "2", ["message.max.bytes"])
    synonyms = [(s[1], s[2]) for s in entries["message.max.bytes"][3]]
    assert synonyms[:2] == [("3000", DYNAMIC_BROKER), ("2000", DYNAMIC_DEFAULT)], synonyms
    assert not any((n.data_dir / "dynamic-broker-configs.json").exists() for n in nodes.values())


def create_partitions_raw(c, topic: str, count: int) -> int:
    """CreatePartitions v0 of one topic to `count` (no assignments) → error code."""
    import kproto as k
    w = k.Writer().i32(1).string(topic).i32(count).i32(-1).i32(30000).i8(0)
    r = c.request(37, 0, bytes(w.buf))
    r.i32()
    ((_, err, _msg),) = r.array(lambda r: (r.string(), r.i16(), r.string()))
    return err


def test_concurrent_config_changes_and_partition_additions_on_one_topic_answer_in_bounds(cluster, topic):
    """Issue 12 (wait_for_image races): threads on all three brokers change one topic's configs and add
    partitions to it at once. Each answer waits for the metadata offset the controller committed the change
    at, which a later change cannot overtake (waiting for "the image shows my configs" could be, and timed
    out after 15 s with REQUEST_TIMED_OUT). Every answer comes within 10 s: configs succeed, partition
    additions succeed or are INVALID_PARTITIONS (37, a concurrent one already grew the topic further)."""
    import threading
    import kproto as k
    from test_broker_configs import SET, TOPIC, incremental_alter
    create_topic(cluster, topic)
    lock = threading.Lock()
    next_count = [2]
    answers, errors = [], []

    def configs(node: int, rounds: int):
        with k.Connection(cluster.nodes[node].bootstrap) as c:
            for i in range(rounds):
                t0 = time.monotonic()
                err, msg = incremental_alter(c, TOPIC, topic, [("retention.ms", SET, str(60_000 + node * 100 + i))])
                answers.append(("configs", node, err, time.monotonic() - t0))
                if err != 0:
                    errors.append((node, err, msg))

    def partitions(node: int, rounds: int):
        with k.Connection(cluster.nodes[node].bootstrap) as c:
            for _ in range(rounds):
                with lock:
                    count = next_count[0]
                    next_count[0] += 1
                t0 = time.monotonic()
                err = create_partitions_raw(c, topic, count)
                answers.append(("partitions", node, err, time.monotonic() - t0))
                if err not in (0, 37):
                    errors.append((node, err, count))

    threads = [threading.Thread(target=configs, args=(n, 20)) for n in NODES]
    threads += [threading.Thread(target=partitions, args=(n, 4)) for n in NODES]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "a request never answered"
    slowest = max(a[3] for a in answers)
    print(f"{len(answers)} answers in {time.monotonic() - started:.1f}s, slowest {slowest:.2f}s")
    assert len(answers) == 3 * 20 + 3 * 4
    assert not errors, errors
    assert slowest < 10, sorted(answers, key=lambda a: -a[3])[:5]
    assert sum(1 for a in answers if a[0] == "partitions" and a[2] == 0) >= 1
