"""KIP-392 fetch from the closest replica, on three real `runnel` processes with racks a, b, c.

With `replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector` on every broker:
- a Fetch v11 to the leader carrying a follower's rack (`client.rack`) is answered for the partition with
  no records, error NONE and `preferred_read_replica` = that follower; without a rack, with an unknown
  rack or with the leader's own rack it is answered by the leader with -1;
- a confluent-kafka (librdkafka) consumer, and a kafka-python 3.x one (`client_rack`), with the rack of a
  follower is sent there and reads every acknowledged record exactly once and in order;
- the follower serves a consumer's Fetch v11 up to its own HighWatermark and never past it (while a third
  replica is paused, acks=1 records are on the leader and the follower but not committed: the follower
  answers them with nothing, error NONE); past its log: OFFSET_OUT_OF_RANGE; a Fetch before v11 (no client
  metadata) to a follower: NOT_LEADER_OR_FOLLOWER; ListOffsets stays with the leader; a broker that is not
  a replica: NOT_LEADER_OR_FOLLOWER;
- DescribeConfigs shows the key (static, read-only); an unknown selector class stops the broker at startup.
Without the selector (the default) the leader always answers -1.

The three-node fixture is `four_node_cluster` of tests/test_metadata_quorum.py (node 4 not started).
Runnel only: Kafka in RUNNEL_TEST_BROKER=kafka mode is a single broker.
"""

from __future__ import annotations

import logging
import subprocess
import time

import pytest

import kproto as k
from conftest import MODE, RUNNEL_BIN, free_port
from test_cluster import Stream, consume_all, create_topic

pytestmark = [pytest.mark.cluster,
              pytest.mark.skipif(MODE != "runnel", reason="starts its own runnel processes")]

RACK_AWARE = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
RACKS = {1: "a", 2: "b", 3: "c"}
NOT_LEADER_OR_FOLLOWER = 6
# Longer than a test's pause of one broker: the paused broker stays in the ISR (and registered), so the
# HighWatermark cannot pass what it lacks while the other follower is checked.
SLOW_FENCING = {"broker.session.timeout.ms": "30000", "replica.lag.time.max.ms": "30000"}


@pytest.fixture(scope="module")
def rack_cluster():
    from test_metadata_quorum import four_node_cluster
    yield from four_node_cluster(RACKS, sets={"replica.selector.class": RACK_AWARE, **SLOW_FENCING},
                                 start_fourth=False)


@pytest.fixture(scope="module")
def plain_rack_cluster():
    from test_metadata_quorum import four_node_cluster
    yield from four_node_cluster(RACKS, start_fourth=False)


def new_topic(c, name: str) -> tuple[int, list[int]]:
    """Creates `name` (one partition, RF 3) → (leader, followers)."""
    create_topic(c, name)
    pm = c.partition(name)
    return pm.leader, [r for r in pm.replicas if r != pm.leader]


def produce(c, topic: str, n: int) -> Stream:
    s = Stream(c.bootstrap, topic)
    s.until_acked(n)
    s.finish()
    return s


def raw_fetch(c, node: int, topic: str, offset: int, rack: str = "", version: int = 11) -> k.FetchPartition:
    with k.Connection(c.nodes[node].bootstrap) as conn:
        return k.fetch(conn, topic, 0, offset, version=version, rack_id=rack)


def wait_hw(c, node: int, topic: str, hw: int, timeout: float = 30.0) -> k.FetchPartition:
    """Fetch v11 from `node` until its HighWatermark reaches `hw` (a follower learns it one fetch later)."""
    deadline = time.monotonic() + timeout
    while True:
        r = raw_fetch(c, node, topic, 0)
        if r.error == 0 and r.high_watermark >= hw:
            return r
        assert time.monotonic() < deadline, f"node {node}: HW {r.high_watermark} (error {r.error}) < {hw}"
        time.sleep(0.1)


def test_leader_names_the_follower_in_the_consumers_rack(rack_cluster):
    c = rack_cluster
    topic = f"ff-pref-{time.monotonic_ns()}"
    leader, followers = new_topic(c, topic)
    s = produce(c, topic, 500)
    n = len(s.acked)
    for f in followers:
        r = raw_fetch(c, leader, topic, 0, rack=RACKS[f])
        assert (r.error, r.preferred_read_replica) == (0, f), r
        assert not r.batches() and r.records_length == 0, "sent elsewhere: no records"
        assert r.high_watermark == n and r.log_start_offset == 0, r
    # Past a follower's LogEndOffset it is not a candidate: the leader answers itself (here, out of range).
    beyond = raw_fetch(c, leader, topic, n + 10, rack=RACKS[followers[0]])
    assert (beyond.error, beyond.preferred_read_replica) == (k.OFFSET_OUT_OF_RANGE, -1), beyond
    # No rack, a rack without a replica, the leader's own rack: the leader serves, -1.
    for rack in ("", "zz", RACKS[leader]):
        r = raw_fetch(c, leader, topic, 0, rack=rack)
        assert (r.error, r.preferred_read_replica) == (0, -1), (rack, r)
        assert r.batches() and r.batches()[0].base_offset == 0, (rack, r)
    # Before v11 a Fetch has no rack: the leader serves.
    r = raw_fetch(c, leader, topic, 0, version=10)
    assert r.error == 0 and r.batches(), r


def test_consumer_with_a_followers_rack_reads_everything_from_it(rack_cluster):
    c = rack_cluster
    topic = f"ff-consume-{time.monotonic_ns()}"
    leader, followers = new_topic(c, topic)
    s = produce(c, topic, 3000)
    follower = followers[0]
    logs: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record):
            logs.append(record.getMessage())

    log = logging.getLogger(f"rdkafka-{topic}")
    log.setLevel(logging.DEBUG)
    log.addHandler(Collect())
    got = consume_all(c.bootstrap, topic, len(s.acked), conf={"client.rack": RACKS[follower], "debug": "fetch"},
                      logger=log)
    values = [v for _, v in got]
    assert [o for o, _ in got] == list(range(len(s.acked))), "not every offset exactly once, in order"
    assert values == sorted(values) and len(set(values)) == len(values)
    assert set(values) == set(s.acked), "acknowledged records missing"
    # librdkafka logged that the leader delegated the partition to the follower ("migrating from broker L
    # to F (leader is L): preferred replica updated").
    delegated = [m for m in logs if "preferred replica updated" in m and f"to {follower} " in m]
    assert delegated, "the consumer never fetched from its rack's follower:\n" + "\n".join(logs[-20:])


def test_kafka_python_consumer_with_client_rack_reads_from_the_follower(rack_cluster):
    """kafka-python 3.x sends `client_rack` too (Fetch v11+) and follows `preferred_read_replica`."""
    from kafka import KafkaConsumer, TopicPartition
    c = rack_cluster
    topic = f"ff-kp-{time.monotonic_ns()}"
    _, followers = new_topic(c, topic)
    s = produce(c, topic, 1000)
    follower = followers[-1]
    updates: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record):
            if "preferred read replica" in record.getMessage():
                updates.append(record.getMessage())

    fetcher_log = logging.getLogger("kafka.consumer.fetcher")
    handler, level = Collect(), fetcher_log.level
    fetcher_log.addHandler(handler)
    fetcher_log.setLevel(logging.DEBUG)
    cons = KafkaConsumer(bootstrap_servers=c.bootstrap, client_rack=RACKS[follower],
                         enable_auto_commit=False, auto_offset_reset="earliest")
    try:
        tp = TopicPartition(topic, 0)
        cons.assign([tp])
        cons.seek(tp, 0)
        got = []
        deadline = time.monotonic() + 60
        while len(got) < len(s.acked) and time.monotonic() < deadline:
            for recs in cons.poll(timeout_ms=500).values():
                got += [(r.offset, r.value) for r in recs]
    finally:
        cons.close()
        fetcher_log.removeHandler(handler)
        fetcher_log.setLevel(level)
    assert [o for o, _ in got] == list(range(len(s.acked))), "not every offset exactly once, in order"
    assert set(v for _, v in got) == set(s.acked)
    assert any(m.endswith(f" to {follower}") for m in updates), updates


def test_consumer_without_a_rack_reads_from_the_leader(rack_cluster):
    c = rack_cluster
    topic = f"ff-norack-{time.monotonic_ns()}"
    new_topic(c, topic)
    s = produce(c, topic, 300)
    got = consume_all(c.bootstrap, topic, len(s.acked))
    assert [o for o, _ in got] == list(range(len(s.acked)))


def test_follower_serves_up_to_its_high_watermark_only(rack_cluster):
    c = rack_cluster
    topic = f"ff-hw-{time.monotonic_ns()}"
    leader, (follower, other) = new_topic(c, topic)
    committed = len(produce(c, topic, 200).acked)
    r = wait_hw(c, follower, topic, committed)
    assert r.high_watermark == committed and r.preferred_read_replica == -1, r
    last = r.batches()[-1].last_offset
    assert r.batches()[0].base_offset == 0 and last < committed
    # At its HighWatermark: nothing yet, no error; past its log: out of range; pre-v11: leader only.
    at_hw = raw_fetch(c, follower, topic, committed)
    assert (at_hw.error, at_hw.records_length) == (0, 0), at_hw
    assert raw_fetch(c, follower, topic, committed + 1000).error == k.OFFSET_OUT_OF_RANGE
    assert raw_fetch(c, follower, topic, 0, version=10).error == NOT_LEADER_OR_FOLLOWER
    with k.Connection(c.nodes[follower].bootstrap) as conn:
        assert k.list_offsets(conn, topic, 0, -1)[0] == NOT_LEADER_OR_FOLLOWER, "ListOffsets: leader only"

    # Pause the third replica: acks=1 records reach the leader and the follower but stay uncommitted.
    from confluent_kafka import Producer
    c.nodes[other].pause()
    try:
        p = Producer({"bootstrap.servers": c.nodes[leader].bootstrap, "acks": "1", "linger.ms": 0})
        for i in range(50):
            p.produce(topic, value=b"uncommitted-%d" % i, partition=0)
        assert p.flush(30) == 0
        with k.Connection(c.nodes[leader].bootstrap) as conn:
            # The leader holds them (a read past its HW is empty, not out of range) and its HW has not moved.
            lead = k.fetch(conn, topic, 0, committed + 49)
            assert (lead.error, lead.high_watermark) == (0, committed), lead
        time.sleep(1.0)  # the follower fetches them (its fetches are continuous)
        f = raw_fetch(c, follower, topic, 0)
        assert f.error == 0 and f.high_watermark == committed, f
        assert max(b.last_offset for b in f.batches()) < committed, "the follower served past its HW"
        past_hw = raw_fetch(c, follower, topic, committed + 10)
        assert (past_hw.error, past_hw.records_length) == (0, 0), past_hw
    finally:
        c.nodes[other].resume()
    # Once the paused replica catches up, the HW passes the acks=1 records and the follower serves them.
    r = wait_hw(c, follower, topic, committed + 50, timeout=60)
    after = raw_fetch(c, follower, topic, committed)
    assert after.error == 0 and after.batches() and after.batches()[0].base_offset <= committed, after


def test_a_broker_that_is_not_a_replica_answers_not_leader_or_follower(rack_cluster):
    c = rack_cluster
    topic = f"ff-rf2-{time.monotonic_ns()}"
    create_topic(c, topic, rf=2)
    pm = c.partition(topic)
    outsider = next(n for n in RACKS if n not in pm.replicas)
    produce(c, topic, 10)
    assert raw_fetch(c, outsider, topic, 0).error == NOT_LEADER_OR_FOLLOWER
    assert raw_fetch(c, pm.leader, topic, 0, rack=RACKS[outsider]).preferred_read_replica == -1


def test_describe_configs_lists_the_selector(rack_cluster):
    from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType
    c = rack_cluster
    a = AdminClient({"bootstrap.servers": c.nodes[1].bootstrap})
    res = ConfigResource(ResourceType.BROKER, "1")
    entries = a.describe_configs([res])[res].result(30)
    e = entries["replica.selector.class"]
    assert e.value == RACK_AWARE and e.is_read_only, e
    assert entries["broker.rack"].value == "a"


def test_without_the_selector_the_leader_always_serves(plain_rack_cluster):
    c = plain_rack_cluster
    topic = f"ff-off-{time.monotonic_ns()}"
    leader, followers = new_topic(c, topic)
    produce(c, topic, 100)
    for rack in [RACKS[f] for f in followers] + ["", RACKS[leader]]:
        r = raw_fetch(c, leader, topic, 0, rack=rack)
        assert (r.error, r.preferred_read_replica) == (0, -1), (rack, r)
        assert r.batches(), r


def test_unknown_selector_class_is_refused_at_startup(tmp_path):
    argv = [str(RUNNEL_BIN), "server", "--listen", f"127.0.0.1:{free_port()}", "--data-dir", str(tmp_path),
            "--set", "replica.selector.class=com.example.NearestSelector", "--set", "metrics.listeners="]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert p.returncode != 0
    out = p.stdout + p.stderr
    assert "replica.selector.class=com.example.NearestSelector is not supported" in out, out
    assert RACK_AWARE in out, out
