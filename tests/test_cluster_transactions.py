"""Transactions on a three-process cluster (issue 15): markers written by other brokers' partition leaders, and
the transaction coordinator's broker `kill -9`'d between and during transactions.

A checker reads everything with read_committed and asserts: no record of an aborted transaction is visible, a
committed transaction is visible whole (all or none of an ambiguous one — a commit whose answer was lost to
the kill), no committed record is lost, none is duplicated.
"""

from __future__ import annotations

import random
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from test_cluster import Cluster, create_topic

pytestmark = [pytest.mark.cluster]

TXN_PARTITIONS = 3
TIMEOUT_S = 60


def java_hash_partition(key: str, n: int) -> int:
    """Kafka's `Utils.abs(key.hashCode()) % n` (Java's String.hashCode over UTF-16 code units)."""
    h = 0
    units = key.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i:i + 2], "big")) & 0xFFFFFFFF
    if h >= 2**31:
        h -= 2**32
    return (0 if h == -(2**31) else abs(h)) % n


@pytest.fixture
def txn_cluster():
    c = Cluster({"transaction.state.log.num.partitions": str(TXN_PARTITIONS),
                 "transaction.state.log.replication.factor": "3",
                 "transaction.state.log.min.isr": "2"})
    try:
        yield c.start()
    finally:
        c.close()


def producer(c: Cluster, txn_id: str) -> Producer:
    p = Producer({"bootstrap.servers": c.alive_bootstrap(), "transactional.id": txn_id,
                  "transaction.timeout.ms": 20000, "message.timeout.ms": 20000})
    p.init_transactions(TIMEOUT_S)
    return p


def read_committed(c: Cluster, topic: str, partitions: int, idle_s: float = 4.0) -> list[bytes]:
    cons = Consumer({"bootstrap.servers": c.alive_bootstrap(), "group.id": f"v-{uuid.uuid4().hex[:8]}",
                     "isolation.level": "read_committed", "enable.auto.commit": False,
                     "auto.offset.reset": "earliest"})
    cons.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out, last = [], time.monotonic()
    deadline = last + 120
    try:
        while time.monotonic() < deadline and time.monotonic() - last < idle_s:
            m = cons.poll(0.2)
            if m is None or (m.error() and m.error().code() == KafkaError._PARTITION_EOF):
                continue
            if m.error():
                raise KafkaException(m.error())
            out.append(m.value())
            last = time.monotonic()
    finally:
        cons.close()
    return out


def coordinator_node(c: Cluster, txn_id: str) -> int:
    p = java_hash_partition(txn_id, TXN_PARTITIONS)
    return c.partition("__transaction_state", p).leader


def test_markers_reach_every_leader_and_survive_the_coordinator_kill9(txn_cluster, topic):
    c = txn_cluster
    parts = 6
    create_topic(c, topic, partitions=parts, rf=3)
    txn_id = f"tx-{topic}"
    p = producer(c, txn_id)
    rng = random.Random(int(time.time()))
    seed = rng.randrange(2**31)
    rng = random.Random(seed)
    print(f"seed {seed}")
    committed: dict[int, list[bytes]] = {}
    aborted: dict[int, list[bytes]] = {}
    ambiguous: dict[int, list[bytes]] = {}
    kill_at = 6
    for n in range(14):
        if n == kill_at:
            victim = coordinator_node(c, txn_id)
            c.nodes[victim].kill9()
            c.nodes[victim].start()
        values = [f"t{n}-r{i}".encode() for i in range(parts * 2)]
        commit = rng.random() < 0.6
        try:
            p.begin_transaction()
            for i, v in enumerate(values):
                p.produce(topic, v, partition=i % parts)
            if p.flush(TIMEOUT_S) != 0:
                raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "flush"))
            if commit:
                p.commit_transaction(TIMEOUT_S)
                committed[n] = values
            else:
                p.abort_transaction(TIMEOUT_S)
                aborted[n] = values
        except KafkaException as e:
            err = e.args[0]
            (ambiguous if commit else aborted)[n] = values
            if err.txn_requires_abort():
                try:
                    p.abort_transaction(TIMEOUT_S)
                except KafkaException:
                    p = producer(c, txn_id)
            else:
                p = producer(c, txn_id)  # fatal or unknown: a new instance fences and aborts
    got = read_committed(c, topic, parts)
    seen = set(got)
    assert len(got) == len(seen), "a committed record was read twice"
    for n, values in committed.items():
        missing = [v for v in values if v not in seen]
        assert not missing, f"transaction {n} committed but {len(missing)} records missing (seed {seed})"
    for n, values in aborted.items():
        assert not any(v in seen for v in values), f"aborted transaction {n} is visible (seed {seed})"
    for n, values in ambiguous.items():
        visible = sum(v in seen for v in values)
        assert visible in (0, len(values)), f"transaction {n} is torn: {visible}/{len(values)} (seed {seed})"
    assert len(committed) > 0 and len(aborted) > 0
    print(f"committed {len(committed)} aborted {len(aborted)} ambiguous {len(ambiguous)} "
          f"records checked {len(got)}")
