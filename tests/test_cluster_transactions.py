"""Transactions on a three-process cluster (issue 15): markers written by other brokers' partition leaders, and
the transaction coordinator's broker `kill -9`'d between and during transactions.

A checker reads everything with read_committed and asserts: no record of an aborted transaction is visible, a
committed transaction is visible whole (all or none of an ambiguous one — a commit whose answer was lost to
the kill), no committed record is lost, none is duplicated.
"""

from __future__ import annotations

import os
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


ROUNDS = int(os.environ.get("TXN_FAULT_ROUNDS", "12"))


class TxnClient:
    """One transactional producer and the outcome of each of its transactions."""

    def __init__(self, c: Cluster, txn_id: str):
        self.c, self.txn_id = c, txn_id
        self.p = producer(c, txn_id)
        self.open: tuple[int, list[bytes], bool] | None = None

    def begin(self, n: int, topic: str, parts: int, commit: bool, log: "Outcomes"):
        values = [f"{self.txn_id}-t{n}-r{i}".encode() for i in range(parts * 2)]
        try:
            self.p.begin_transaction()
            for i, v in enumerate(values):
                self.p.produce(topic, v, partition=i % parts)
            self.p.poll(0)
            self.open = (n, values, commit)
        except KafkaException:
            log.aborted.append(values)  # never reached the commit: aborted by the recovery below
            self.recover()

    def end(self, log: "Outcomes"):
        if self.open is None:
            return
        n, values, commit = self.open
        self.open = None
        try:
            if self.p.flush(TIMEOUT_S) != 0:
                raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "flush"))
            if commit:
                self.p.commit_transaction(TIMEOUT_S)
                log.committed.append(values)
            else:
                self.p.abort_transaction(TIMEOUT_S)
                log.aborted.append(values)
        except KafkaException:
            (log.ambiguous if commit else log.aborted).append(values)
            self.recover()

    def recover(self):
        try:
            self.p.abort_transaction(TIMEOUT_S)
        except KafkaException:
            self.p = producer(self.c, self.txn_id)  # a new instance fences the old one and aborts


class Outcomes:
    def __init__(self):
        self.committed: list[list[bytes]] = []
        self.aborted: list[list[bytes]] = []
        self.ambiguous: list[list[bytes]] = []


def test_concurrent_transactions_survive_coordinator_and_leader_kill9(txn_cluster, topic):
    """The fault test (bounded in CI; TXN_FAULT_ROUNDS=200 for the full run): three transactional producers
    interleave transactions over six partitions with random commit/abort; in some rounds, between the produce
    and the commit, the coordinator's broker or a partition leader is kill -9'd and restarted."""
    c = txn_cluster
    parts = 6
    create_topic(c, topic, partitions=parts, rf=3)
    seed = int(os.environ.get("TXN_FAULT_SEED", random.randrange(2**31)))
    rng = random.Random(seed)
    print(f"seed {seed} rounds {ROUNDS}")
    clients = [TxnClient(c, f"tx-{topic}-{k}") for k in range(3)]
    log = Outcomes()
    kills = 0
    for n in range(ROUNDS):
        for cl in clients:
            cl.begin(n, topic, parts, rng.random() < 0.6, log)
        if n % 4 == 2:
            if rng.random() < 0.5:
                victim = coordinator_node(c, rng.choice(clients).txn_id)
            else:
                victim = c.partition(topic, rng.randrange(parts)).leader
            c.nodes[victim].kill9()
            c.nodes[victim].start()
            kills += 1
        for cl in clients:
            cl.end(log)
    got = read_committed(c, topic, parts)
    seen = set(got)
    assert len(got) == len(seen), f"a committed record was read twice (seed {seed})"
    for values in log.committed:
        missing = [v for v in values if v not in seen]
        assert not missing, f"a committed transaction lost {len(missing)} records (seed {seed}): {missing[:3]}"
    for values in log.aborted:
        assert not any(v in seen for v in values), f"an aborted transaction is visible (seed {seed})"
    for values in log.ambiguous:
        visible = sum(v in seen for v in values)
        assert visible in (0, len(values)), f"a torn transaction: {visible}/{len(values)} (seed {seed})"
    known = {v for t in log.committed + log.aborted + log.ambiguous for v in t}
    assert seen <= known, f"records no transaction wrote (seed {seed})"
    assert log.committed and log.aborted
    print(f"kills {kills} committed {len(log.committed)} aborted {len(log.aborted)} "
          f"ambiguous {len(log.ambiguous)} records checked {len(got)} anomalies 0")
