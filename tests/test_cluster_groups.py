"""Group coordinator failover in a three-process cluster (issue 5).

Each group's coordinator is the leader of its `__consumer_offsets` partition (replication factor 3 here).
Checked with confluent-kafka (librdkafka):
- offsets committed for groups spread over every `__consumer_offsets` partition survive `kill -9` of a
  coordinator: the new leader of its partitions replays them and answers OffsetFetch; commits continue;
- a subscribed consumer keeps consuming across the failover of its coordinator (rejoins the new one) and
  its committed position carries over;
- a broker asked about a group it does not coordinate answers NOT_COORDINATOR (clients then find the
  coordinator again) — exercised implicitly by every client whose coordinator moved.
"""

from __future__ import annotations

import time

import pytest

from test_cluster import Cluster, cluster, create_topic  # noqa: F401 - `cluster` is the shared fixture
from conftest import MODE

pytestmark = [pytest.mark.cluster,
              pytest.mark.skipif(MODE != "runnel", reason="starts its own three runnel processes")]


def coordinator_of(c: Cluster, group: str) -> int:
    from confluent_kafka.admin import AdminClient
    a = AdminClient({"bootstrap.servers": c.alive_bootstrap()})
    deadline = time.monotonic() + 60
    last = None
    while time.monotonic() < deadline:
        try:
            d = a.describe_consumer_groups([group], request_timeout=10)[group].result(15)
            return d.coordinator.id
        except Exception as e:  # noqa: BLE001 - coordinator moving
            last = e
            time.sleep(0.2)
    pytest.fail(f"no coordinator for {group}: {last}")


def committed(c: Cluster, group: str, topic: str) -> int:
    from confluent_kafka import Consumer, TopicPartition
    cons = Consumer({"bootstrap.servers": c.alive_bootstrap(), "group.id": group,
                     "enable.auto.commit": False})
    try:
        deadline = time.monotonic() + 60
        last = None
        while time.monotonic() < deadline:
            try:
                return cons.committed([TopicPartition(topic, 0)], timeout=10)[0].offset
            except Exception as e:  # noqa: BLE001 - coordinator loading / moving
                last = e
                time.sleep(0.2)
        pytest.fail(f"OffsetFetch for {group} kept failing: {last}")
    finally:
        cons.close()


def commit(c: Cluster, group: str, topic: str, offset: int):
    from confluent_kafka import Consumer, TopicPartition
    cons = Consumer({"bootstrap.servers": c.alive_bootstrap(), "group.id": group,
                     "enable.auto.commit": False})
    try:
        deadline = time.monotonic() + 60
        last = None
        while time.monotonic() < deadline:
            try:
                r = cons.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
                assert r[0].error is None, r[0].error
                return
            except Exception as e:  # noqa: BLE001 - coordinator loading / moving
                last = e
                time.sleep(0.2)
        pytest.fail(f"OffsetCommit for {group} kept failing: {last}")
    finally:
        cons.close()


def test_committed_offsets_survive_coordinator_kill9(cluster, topic):
    create_topic(cluster, topic)
    groups = [f"g-{i}" for i in range(12)]
    for i, g in enumerate(groups):
        commit(cluster, g, topic, 100 + i)
    coords = {g: coordinator_of(cluster, g) for g in groups}
    assert len(set(coords.values())) > 1, f"coordinators are spread over the brokers: {coords}"
    victim = coords[groups[0]]
    moved = [g for g in groups if coords[g] == victim]
    cluster.nodes[victim].kill9()
    cluster.wait(lambda md: all(p.leader not in (-1, victim)
                                for p in md.topics["__consumer_offsets"].partitions.values()),
                 "__consumer_offsets led without the killed broker")
    for i, g in enumerate(groups):
        assert committed(cluster, g, topic) == 100 + i, g
    for g in moved:
        assert coordinator_of(cluster, g) != victim
        commit(cluster, g, topic, 500)
        assert committed(cluster, g, topic) == 500
    # The killed broker comes back as a follower: the groups stay where they are and keep their offsets.
    cluster.nodes[victim].start()
    cluster.wait(lambda md: all(sorted(p.isrs) == [1, 2, 3]
                                for p in md.topics["__consumer_offsets"].partitions.values()),
                 "the restarted broker back in the __consumer_offsets ISRs")
    for g in moved:
        assert committed(cluster, g, topic) == 500


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_subscribed_consumer_survives_coordinator_failover(cluster, topic, protocol):
    """kill -9 of the group's coordinator: the member goes on through the new coordinator, which loaded the
    group from the replicated `__consumer_offsets` partition (with `consumer`, KIP-848, its member and epoch)."""
    from confluent_kafka import Consumer, Producer
    create_topic(cluster, topic)
    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(200):
        p.produce(topic, value=b"v%d" % i, partition=0)
    assert p.flush(60) == 0
    group = f"failover-group-{protocol}"
    conf = {"bootstrap.servers": cluster.bootstrap, "group.id": group,
            "auto.offset.reset": "earliest", "enable.auto.commit": False}
    if protocol == "consumer":
        conf["group.protocol"] = "consumer"
    else:
        conf.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
    cons = Consumer(conf)
    cons.subscribe([topic])
    got = 0
    deadline = time.monotonic() + 60
    while got < 100 and time.monotonic() < deadline:
        m = cons.poll(0.5)
        if m is not None and not m.error():
            got += 1
            if got == 100:
                cons.commit(message=m, asynchronous=False)
    assert got == 100
    victim = coordinator_of(cluster, group)
    cluster.nodes[victim].kill9()
    # After the failover the consumer commits again through the new coordinator.
    for i in range(200, 300):
        p.produce(topic, value=b"v%d" % i, partition=0)
    assert p.flush(60) == 0
    last = None
    deadline = time.monotonic() + 90
    while got < 300 and time.monotonic() < deadline:
        m = cons.poll(0.5)
        if m is not None and not m.error():
            got += 1
            last = m
    assert got >= 300, f"consumed {got}"
    deadline = time.monotonic() + 60
    while True:
        try:
            cons.commit(message=last, asynchronous=False)
            break
        except Exception:  # noqa: BLE001 - coordinator moving, or the member must rejoin
            assert time.monotonic() < deadline, "commit after failover kept failing"
            # UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION make librdkafka rejoin, which poll() drives.
            cons.poll(0.2)
    cons.close()
    assert coordinator_of(cluster, group) != victim
    assert committed(cluster, group, topic) == 300


def test_group_does_not_form_while_its_records_cannot_reach_the_isr(cluster):
    """As Kafka, JoinGroup/SyncGroup answers that come with group records wait until the ISR of the group's
    `__consumer_offsets` partition has them: with both followers frozen (SIGSTOP) the coordinator answers
    COORDINATOR_NOT_AVAILABLE within `offsets.commit.timeout.ms` (5 s) instead of admitting a member whose
    assignment a failover would lose; once the followers run again the group forms."""
    import os
    import signal
    import kproto
    from test_groups import join, sync
    group = f"g-isr-{time.monotonic_ns()}"
    coord = coordinator_of(cluster, group)
    cluster.wait(lambda md: "__consumer_offsets" in md.topics and all(
        sorted(p.isrs) == [1, 2, 3] for p in md.topics["__consumer_offsets"].partitions.values()),
        "__consumer_offsets fully in sync")
    others = [n for i, n in cluster.nodes.items() if i != coord]
    protocols = [("range", b"\x00\x00\x00\x00\x00\x01\x00\x01t\x00\x00\x00\x00")]
    addr = cluster.nodes[coord].bootstrap
    try:
        for n in others:
            os.kill(n.proc.pid, signal.SIGSTOP)
        t0 = time.monotonic()
        with kproto.Connection(addr, timeout=30) as c:
            first = join(c, 5, group, "", protocols)
        took = time.monotonic() - t0
        assert first["error"] == 15, f"COORDINATOR_NOT_AVAILABLE expected while the ISR is frozen: {first}"
        assert took < 20, f"answered after {took:.1f}s (offsets.commit.timeout.ms is 5 s)"
        print(f"\nJoinGroup with the ISR frozen: error {first['error']} after {took:.2f}s")
    finally:
        for n in others:
            os.kill(n.proc.pid, signal.SIGCONT)
    deadline = time.monotonic() + 60
    last = None
    while time.monotonic() < deadline:
        with kproto.Connection(addr, timeout=30) as c:
            j = join(c, 5, group, "", protocols)
            if j["error"] == 79:  # MEMBER_ID_REQUIRED
                j = join(c, 5, group, j["member_id"], protocols)
            if j["error"] == 0 and j["leader"] == j["member_id"]:
                err, _ = sync(c, group, j["generation"], j["member_id"], [(j["member_id"], b"")])
                if err == 0:
                    return
                last = ("sync", err)
            else:
                last = ("join", j["error"])
        if last[1] in (15, 16):
            # As a client would: look the coordinator up again. A controller frozen past the session
            # timeout may fence the coordinator's broker when it resumes, moving the partition away.
            addr = cluster.nodes[coordinator_of(cluster, group)].bootstrap
        time.sleep(0.5)
    pytest.fail(f"the group did not form after the followers resumed: {last}")


def test_deleting_a_topic_deletes_its_committed_offsets_on_every_coordinator(cluster, topic):
    """In a cluster each coordinator drops its groups' offsets for a topic when its metadata image loses the
    topic, so the re-created topic starts with nothing committed."""
    from confluent_kafka.admin import AdminClient
    create_topic(cluster, topic)
    groups = [f"g-del-{i}-{time.monotonic_ns()}" for i in range(6)]
    for i, g in enumerate(groups):
        commit(cluster, g, topic, 10 + i)
    assert [committed(cluster, g, topic) for g in groups] == [10 + i for i in range(6)]
    a = AdminClient({"bootstrap.servers": cluster.alive_bootstrap()})
    a.delete_topics([topic], operation_timeout=30)[topic].result(60)
    cluster.wait(lambda md: topic not in md.topics, f"{topic} deleted")
    create_topic(cluster, topic)
    assert [committed(cluster, g, topic) for g in groups] == [-1001] * 6
