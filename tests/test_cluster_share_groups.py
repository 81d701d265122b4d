"""Share groups (KIP-932) in a three-process cluster, with the Java client's KafkaShareConsumer (see
tests/test_share_groups.py for the driver).

`__share_group_state` has one partition here (`share.coordinator.state.topic.num.partitions=1`), so one
broker is every share-partition's share coordinator; the test's topic is led by another broker, so the
share-partition leader reads and writes its state through ReadShareGroupState/WriteShareGroupState on the
inter-broker listener. Checked:
- records accepted through that path are not delivered again after `kill -9` of the share-partition leader
  (the new leader loads the state from the share coordinator), nor after `kill -9` of the share coordinator
  (its successor replays `__share_group_state`, replicated with acks=all);
- no record that was not accepted is lost: every one is delivered and accepted in the end.
"""

from __future__ import annotations

import pytest

from conftest import MODE
from test_cluster import Cluster
from test_metrics import scrape
from test_share_groups import acks, failed_acks, produce, recs, shares, unique  # noqa: F401 - fixture

pytestmark = [pytest.mark.cluster,
              pytest.mark.skipif(MODE != "runnel", reason="starts its own three runnel processes")]

STATE_TOPIC = "__share_group_state"


def create_led_by(c: Cluster, topic: str, replicas: list[int]):
    """A one-partition topic with `replicas` (the first is the preferred leader), led with a full ISR."""
    from confluent_kafka.admin import AdminClient, NewTopic
    a = AdminClient({"bootstrap.servers": c.alive_bootstrap()})
    fs = a.create_topics([NewTopic(topic, 1, replica_assignment=[replicas])], operation_timeout=30)
    fs[topic].result(60)
    c.wait(lambda md: topic in md.topics and md.topics[topic].partitions[0].leader == replicas[0]
           and len(md.topics[topic].partitions[0].isrs) == 3, f"{topic} led by {replicas[0]}")


def served(node, request: str) -> float:
    """How many `request`s `node` has answered (its /metrics)."""
    samples = scrape(node.metrics_port)
    return sum(v for (name, labels), v in samples.items()
               if name == "kafka_network_requestmetrics_requests_total" and ("request", request) in labels)


def accept(shares, tmp_path, name: str, bootstrap: str, group: str, topic: str, *args: str) -> set[int]:
    """Runs a share consumer to its stop condition; returns the offsets whose acceptance the broker confirmed."""
    s = shares(tmp_path, name, bootstrap, group, topic, "--max-poll-records", "10", "--commit", "sync", *args)
    evs = s.wait_exit(timeout=90)
    assert not failed_acks(evs), failed_acks(evs)
    return {e["o"] for e in acks(evs, "accept")}, evs


def test_share_state_survives_kill9_of_the_partition_leader_and_of_the_share_coordinator(tmp_path, shares):
    c = Cluster({"share.coordinator.state.topic.num.partitions": "1"}).start()
    try:
        group = unique("sg")
        topics = {1: unique("sa"), 2: unique("sb")}
        create_led_by(c, topics[1], [1, 2, 3])
        create_led_by(c, topics[2], [2, 3, 1])
        n = 60
        for t in topics.values():
            produce(c.alive_bootstrap(), t, [f"r{i}" for i in range(n)])
        # The group's first acknowledgement creates __share_group_state; then pick the topic led elsewhere.
        first, _ = accept(shares, tmp_path, "first", c.alive_bootstrap(), group, topics[1], "--count", "10")
        coordinator = c.partition(STATE_TOPIC, 0).leader
        leader = 1 if coordinator != 1 else 2
        topic = topics[leader]
        accepted = set(first) if leader == 1 else set()
        more, _ = accept(shares, tmp_path, "a", c.alive_bootstrap(), group, topic, "--count", "20")
        assert not more & accepted
        accepted |= more
        assert served(c.nodes[coordinator], "WriteShareGroupState") > 0, "the remote state path was not taken"

        # kill -9 of the share-partition leader: its successor loads the state from the share coordinator.
        c.nodes[leader].kill9()
        c.wait(lambda md: md.topics[topic].partitions[0].leader not in (-1, leader), f"{topic} led again")
        got, evs = accept(shares, tmp_path, "b", c.alive_bootstrap(), group, topic, "--count", "15")
        again = sorted({e["o"] for e in recs(evs)} & accepted)
        assert not again, f"accepted before the leader's kill, delivered again: {again}"
        accepted |= got

        # kill -9 of the share coordinator (after the first node is back): its successor replays the topic.
        c.nodes[leader].start()
        c.wait(lambda md: len(md.brokers) == 3 and len(md.topics[STATE_TOPIC].partitions[0].isrs) == 3,
               "the node back in the state topic's ISR")
        c.nodes[coordinator].kill9()
        c.wait(lambda md: md.topics[STATE_TOPIC].partitions[0].leader not in (-1, coordinator),
               "a new share coordinator")
        produce(c.alive_bootstrap(), topic, ["END"])
        rest = n + 1 - len(accepted)
        got, evs = accept(shares, tmp_path, "c", c.alive_bootstrap(), group, topic, "--count", str(rest),
                          "--until", "END")
        again = sorted({e["o"] for e in recs(evs)} & accepted)
        assert not again, f"accepted before the coordinator's kill, delivered again: {again}"
        assert sorted(got | accepted) == list(range(n + 1)), "records lost"
    finally:
        c.close()
