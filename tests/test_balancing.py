"""Automatic balancing (Runnel's `auto.balance.*`, beyond Kafka): a three-node cluster grows to four while an
idempotent acks=all producer writes to every partition and a consumer group reads; the balancer moves a share
of replicas and leaderships onto the new broker; then the first broker is decommissioned (cordoned, drained,
unregistered); then, uncordoned, it is balanced back onto while the broker-only node is killed with kill -9
in the middle of the moves. Throughout: no acknowledged record lost or reordered, no sequence of the producer
stored twice (see `check_every_acked_record` for the copies librdkafka itself sends under a new epoch), every
partition keeps its replication factor, and the group keeps consuming."""

from __future__ import annotations

import threading
import time

import kproto as k
import pytest

from conftest import MODE
from test_reassignment import list_ongoing, runnel

pytestmark = [pytest.mark.cluster,
              pytest.mark.skipif(MODE != "runnel", reason="starts its own runnel processes")]

PARTITIONS = 8
RF = 2


@pytest.fixture
def growing():
    from test_metadata_quorum import four_node_cluster
    yield from four_node_cluster(sets={"auto.balance.enable": "true",
                                       "auto.balance.check.interval.ms": "1000",
                                       "auto.balance.max.concurrent.moves": "4"},
                                 start_fourth=False)


class Load:
    """An idempotent acks=all producer thread writing `p<partition>-<seq>` round robin to every partition."""

    def __init__(self, bootstrap: str, topic: str):
        from confluent_kafka import Producer
        self.topic = topic
        self.p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                           "linger.ms": 5, "message.timeout.ms": 180000, "request.timeout.ms": 10000,
                           "reconnect.backoff.max.ms": 500, "retry.backoff.max.ms": 500,
                           "topic.metadata.refresh.interval.ms": 1000})
        self.acked: dict[int, dict[bytes, int]] = {p: {} for p in range(PARTITIONS)}
        self.failed: list = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _cb(self, err, msg):
        if err is None:
            self.acked[msg.partition()][msg.value()] = msg.offset()
        else:
            self.failed.append((msg.value(), str(err)))

    def _run(self):
        seq = 0
        while not self.stop.is_set():
            for _ in range(PARTITIONS * 4):
                p = seq % PARTITIONS
                try:
                    self.p.produce(self.topic, value=b"p%d-%08d" % (p, seq // PARTITIONS), partition=p,
                                   on_delivery=self._cb)
                    seq += 1
                except BufferError:
                    break
            self.p.poll(0.02)  # also paces the load at roughly 1,500 records/s

    def total(self) -> int:
        return sum(len(a) for a in self.acked.values())

    def wait_acked(self, n: int, timeout: float = 120.0):
        deadline = time.monotonic() + timeout
        while self.total() < n:
            assert not self.failed, f"produce failures: {self.failed[:3]}"
            assert time.monotonic() < deadline, f"only {self.total()} of {n} acknowledged"
            time.sleep(0.05)

    def finish(self):
        self.stop.set()
        self.thread.join(30)
        assert self.p.flush(120) == 0, "records undelivered"
        assert not self.failed, f"produce failures: {self.failed[:3]}"


class Group:
    """A consumer in a group reading the topic from the start in a thread, counting what it reads."""

    def __init__(self, bootstrap: str, topic: str):
        from confluent_kafka import Consumer
        self.c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"balancing-{time.monotonic_ns()}",
                           "auto.offset.reset": "earliest", "enable.auto.commit": True,
                           "session.timeout.ms": 10000, "topic.metadata.refresh.interval.ms": 1000})
        self.c.subscribe([topic])
        self.read: dict[int, set[bytes]] = {p: set() for p in range(PARTITIONS)}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self.stop.is_set():
            m = self.c.poll(0.2)
            if m is not None and not m.error():
                self.read[m.partition()].add(m.value())
        self.c.close()

    def count(self) -> int:
        return sum(len(r) for r in self.read.values())

    def wait_progress(self, since: int, what: str, timeout: float = 60.0):
        deadline = time.monotonic() + timeout
        while self.count() < since + 500:
            assert time.monotonic() < deadline, f"the group stopped consuming {what} (at {self.count()})"
            time.sleep(0.05)


def settled(c, topic: str, brokers: list[int]):
    """Waits until nothing moves, every partition of `topic` has RF in-sync replicas on `brokers` only, and
    the replica counts of `brokers` over every topic (what the balancer evens out) are within one of each
    other (its spread at this size); the metadata."""
    def ok(md):
        parts = md.topics[topic].partitions.values()
        if any(len(p.replicas) != RF or sorted(p.isrs) != sorted(p.replicas) for p in parts):
            return False
        if any(b not in brokers for p in parts for b in p.replicas):
            return False
        everything = [p for t in md.topics.values() for p in t.partitions.values()]
        counts = [sum(b in p.replicas for p in everything) for b in brokers]
        return max(counts) - min(counts) <= 1 and not list_ongoing(c.nodes[2].bootstrap)
    try:
        return c.wait(ok, f"balanced over brokers {brokers}", timeout=120)
    except BaseException:
        md = c.metadata(topic)
        print({p: (pm.replicas, pm.isrs, pm.leader) for p, pm in md.topics[topic].partitions.items()},
              list_ongoing(c.nodes[2].bootstrap))
        raise


def alter_config(bootstrap: str, rtype: int, name: str, key: str, value: str | None):
    """IncrementalAlterConfigs of one key: SET `value`, or DELETE when it is None; must succeed."""
    from test_broker_configs import incremental_alter
    with k.Connection(bootstrap) as conn:
        res = incremental_alter(conn, rtype, name, [(key, 0 if value is not None else 1, value)])
    assert res[0] == 0, res


def stored_records(c, topic: str, p: int, expect: int) -> list[tuple[int, bytes, tuple[int, int], int]]:
    """Partition `p` from its leader with the raw Fetch API, up to its HighWatermark (at least `expect`
    records): (offset, value, (producer id, producer epoch), sequence) per record."""
    leader = c.metadata(topic).topics[topic].partitions[p].leader
    out: list[tuple[int, bytes, tuple[int, int], int]] = []
    deadline = time.monotonic() + 60
    with k.Connection(c.nodes[leader].bootstrap) as conn:
        hw = 0
        while len(out) < max(expect, hw):
            assert time.monotonic() < deadline, f"partition {p}: read {len(out)} of {max(expect, hw)} records"
            f = k.fetch(conn, topic, p, len(out), max_wait_ms=500)
            assert f.error == 0, f"fetch {topic}-{p}@{len(out)} from broker {leader}: error {f.error}"
            hw = f.high_watermark
            for b in f.batches():
                assert b.crc_ok, f"partition {p}: batch at {b.base_offset} fails its CRC"
                for i, r in enumerate(b.records):
                    if r.offset >= len(out):
                        assert r.offset == len(out), f"partition {p}: offset {len(out)} missing"
                        out.append((r.offset, r.value, (b.producer_id, b.producer_epoch), b.base_sequence + i))
    return out


def check_every_acked_record(c, topic: str, load: Load) -> int:
    """Every partition against what the producer was told, through the broker's idempotence invariant:
    under one producer id and epoch the sequences stored run gapless and each is stored once. A value may
    be stored again only under a newer epoch: librdkafka bumps the epoch of the whole producer when one
    partition answers OUT_OF_ORDER_SEQUENCE_NUMBER for a batch behind a failed one, and re-sends under it
    the batches other partitions had in flight, also those written but answered with an error such as
    NOT_ENOUGH_REPLICAS_AFTER_APPEND (confluentinc/librdkafka#4953; Kafka stores them twice as well: a
    new epoch starts a new sequence space no broker can match against the old one). Every acknowledged
    value is at the offset it was acknowledged with, and first copies keep the production order. Returns
    how many records were stored again under a newer epoch."""
    again = 0
    for p in range(PARTITIONS):
        got = stored_records(c, topic, p, len(load.acked[p]))
        last_seq: dict[tuple[int, int], int] = {}
        first: dict[bytes, tuple[int, tuple[int, int]]] = {}
        order = []
        for o, v, pid_epoch, seq in got:
            prev = last_seq.get(pid_epoch)
            assert prev is None or seq == prev + 1, \
                f"partition {p}: offset {o} has sequence {seq} of producer {pid_epoch} after {prev}"
            last_seq[pid_epoch] = seq
            if v in first:
                assert first[v][1][0] == pid_epoch[0] and first[v][1][1] < pid_epoch[1], \
                    f"partition {p}: {v!r} stored at {first[v][0]} and at {o} in producer epochs " \
                    f"{first[v][1]} and {pid_epoch}"
                again += 1
            else:
                first[v] = (o, pid_epoch)
                order.append(int(v.split(b"-")[1]))
        by_offset = {o: v for o, v, _, _ in got}
        moved = [(v, o) for v, o in load.acked[p].items() if by_offset.get(o) != v]
        assert not moved, f"partition {p}: {len(moved)} acknowledged records lost or moved, e.g. {moved[:3]}"
        assert order == sorted(order), f"partition {p}: records out of production order"
    return again


def test_a_cluster_grows_drains_and_survives_kill9_while_balancing(growing, topic):
    from test_cluster import create_topic
    c = growing
    create_topic(c, topic, partitions=PARTITIONS, rf=RF)
    load = Load(c.alive_bootstrap(), topic)
    group = Group(c.alive_bootstrap(), topic)
    load.thread.start()
    group.thread.start()
    try:
        load.wait_acked(2000)
        group.wait_progress(0, "before the fourth broker joined")

        # 1. Broker 4 joins: the balancer gives it a share of the replicas and of the leaderships.
        c.nodes[4].start()
        md = settled(c, topic, [1, 2, 3, 4])
        parts = md.topics[topic].partitions.values()
        assert sum(4 in p.replicas for p in parts) >= 3, [p.replicas for p in parts]
        c.wait(lambda md: any(p.replicas[0] == 4 and p.leader == 4
                              for t in md.topics.values() for p in t.partitions.values()),
               "broker 4 is the preferred replica and leader of a partition")
        status = runnel(c.nodes[2].bootstrap, "cluster", "balance", "status")
        assert "auto.balance.enable = true" in status, status
        assert "Partition reassignments in progress: 0" in status, status
        n = group.count()
        load.wait_acked(load.total() + 1000)
        group.wait_progress(n, "after the fourth broker joined")

        # 2. Broker 1 is decommissioned: cordoned, drained, unregistered; it registers again (still running)
        # and, cordoned, the balancer gives it nothing.
        out = runnel(c.nodes[2].bootstrap, "cluster", "decommission", "1", "--wait-secs", "120")
        assert "is unregistered" in out, out
        settled(c, topic, [2, 3, 4])
        c.wait(lambda md: 1 in md.brokers, "broker 1 registered again")
        status = runnel(c.nodes[2].bootstrap, "cluster", "balance", "status")
        assert "cordoned" in status, status
        n = group.count()
        load.wait_acked(load.total() + 1000)
        group.wait_progress(n, "after broker 1 was drained")
        md = c.metadata(topic)
        assert all(1 not in p.replicas for p in md.topics[topic].partitions.values()), "cordon ignored"

        # 3. Uncordoned, broker 1 is balanced back onto, its fetches throttled (KIP-73) so the moves last;
        # broker 4 is killed with kill -9 mid-move and restarted; the throttle is lifted; the moves complete
        # and every partition ends with its replication factor.
        b2 = c.nodes[2].bootstrap
        alter_config(b2, 2, topic, "follower.replication.throttled.replicas", "*")
        alter_config(b2, 4, "1", "follower.replication.throttled.rate", "2000")
        alter_config(b2, 4, "1", "cordoned.log.dirs", None)
        c.wait(lambda md: list_ongoing(b2) != {}, "moves onto broker 1 started")
        c.nodes[4].kill9()
        assert list_ongoing(b2) != {}, "the moves completed before the kill"
        load.wait_acked(load.total() + 500)
        c.nodes[4].start()
        alter_config(b2, 4, "1", "follower.replication.throttled.rate", None)
        alter_config(b2, 2, topic, "follower.replication.throttled.replicas", None)
        settled(c, topic, [1, 2, 3, 4])
        n = group.count()
        load.wait_acked(load.total() + 1000)
        group.wait_progress(n, "after the kill -9")
        load.finish()
        # The group reads every acknowledged record.
        deadline = time.monotonic() + 60
        while any(set(load.acked[p]) - group.read[p] for p in range(PARTITIONS)):
            assert time.monotonic() < deadline, "the group did not read every acknowledged record"
            time.sleep(0.1)
    finally:
        load.stop.set()
        group.stop.set()
        group.thread.join(30)
    again = check_every_acked_record(c, topic, load)
    print(f"{load.total()} records acknowledged; {again} stored again by the client under a new producer epoch")
