"""The data plane of transactions (KIP-98/664) over the raw protocol, with the broker playing no
coordinator: a transactional Produce (a made-up producer id, as a coordinator would have handed out),
Fetch and ListOffsets at both isolation levels, DescribeProducers, and WriteTxnMarkers sent as a
transaction coordinator would.

runnel only, on a broker with `transaction.partition.verification.enable=false`: otherwise (the default,
as Kafka 4.4) a transactional Produce is verified with the transaction coordinator first (KIP-890), so a
producer id no coordinator knows is refused — which the last test checks. The client-level transaction
tests are in test_transactions.py.
"""

from __future__ import annotations

import time

import pytest

import kproto as k
from conftest import MODE, make_topic, new_broker

pytestmark = pytest.mark.skipif(MODE != "runnel", reason="a raw transactional producer needs no coordinator only on runnel")

WRITE_TXN_MARKERS, DESCRIBE_PRODUCERS = 27, 61
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
TOPIC_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED = 29, 31
STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
PID, EPOCH = 4242, 0
UNVERIFIED = {"transaction.partition.verification.enable": "false"}
INVALID_PRODUCER_ID_MAPPING, NOT_ENOUGH_REPLICAS = 49, 19


@pytest.fixture(scope="module")
def broker():
    b = new_broker(UNVERIFIED)
    yield b
    b.close()


def write_txn_markers(conn: k.Connection, topic: str, partitions: list[int], commit: bool) -> dict:
    """WriteTxnMarkers v1 with one marker for (PID, EPOCH) → {partition: error}."""
    w = k.Writer()

    def topic_entry(w, t):
        w.compact_string(t)
        k.compact_array(w, partitions, lambda w, p: w.i32(p))
        w.tags()

    def marker(w, _):
        w.i64(PID).i16(EPOCH).i8(1 if commit else 0)
        k.compact_array(w, [topic], topic_entry)
        w.i32(0).tags()  # coordinator epoch

    k.compact_array(w, [None], marker)
    w.tags()
    r = conn.request(WRITE_TXN_MARKERS, 1, bytes(w.buf), flexible_header=True, flexible_response=True)

    def partition(r):
        p, err = r.i32(), r.i16()
        r.uvarint()
        return p, err

    def topic_result(r):
        k.read_compact_string(r)
        parts = k.read_compact_array(r, partition)
        r.uvarint()
        return parts

    def marker_result(r):
        assert r.i64() == PID
        topics = k.read_compact_array(r, topic_result)
        r.uvarint()
        return topics

    markers = k.read_compact_array(r, marker_result)
    return dict(markers[0][0])


def describe_producers(conn: k.Connection, topic: str) -> tuple[int, list]:
    """DescribeProducers v0 for partition 0 → (error, [(pid, epoch, last_seq, coord_epoch, txn_start)])."""
    w = k.Writer()

    def topic_entry(w, t):
        w.compact_string(t)
        k.compact_array(w, [0], lambda w, p: w.i32(p))
        w.tags()

    k.compact_array(w, [topic], topic_entry)
    w.tags()
    r = conn.request(DESCRIBE_PRODUCERS, 0, bytes(w.buf), flexible_header=True, flexible_response=True)
    r.i32()  # throttle

    def producer(r):
        pid, epoch, seq, _ts, coord, start = r.i64(), r.i32(), r.i32(), r.i64(), r.i32(), r.i64()
        r.uvarint()
        return pid, epoch, seq, coord, start

    def partition(r):
        r.i32()
        err = r.i16()
        k.read_compact_string(r)
        producers = k.read_compact_array(r, producer)
        r.uvarint()
        return err, producers

    def topic_result(r):
        k.read_compact_string(r)
        parts = k.read_compact_array(r, partition)
        r.uvarint()
        return parts

    topics = k.read_compact_array(r, topic_result)
    return topics[0][0]


def txn_batch(n: int, seq: int) -> bytes:
    recs = [k.Record(None, f"v{i}".encode(), []) for i in range(n)]
    return k.encode_batch(recs, producer_id=PID, producer_epoch=EPOCH, base_sequence=seq,
                          transactional=True)


def produce(conn, topic, batch, transactional_id):
    body = k.produce_body(topic, 0, batch, acks=-1, transactional_id=transactional_id)
    return k.parse_produce(conn.request(k.PRODUCE, 8, body), 8)


def test_aborted_transaction_is_hidden_from_read_committed(broker, topic):
    make_topic(broker.bootstrap, topic)
    with k.Connection(broker.bootstrap) as c:
        refused = produce(c, topic, txn_batch(1, 0), transactional_id=None)
        assert refused.error == TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        assert produce(c, topic, txn_batch(3, 0), "tx-data").error == 0

        # Ongoing: read_committed sees nothing, read_uncommitted the three records; LSO 0 for both.
        committed = k.fetch(c, topic, 0, 0, isolation_level=1)
        assert (committed.error, committed.last_stable_offset, committed.aborted) == (0, 0, [])
        assert committed.batches() == []
        uncommitted = k.fetch(c, topic, 0, 0)
        assert (uncommitted.high_watermark, uncommitted.last_stable_offset) == (3, 0)
        assert uncommitted.aborted is None, "read_uncommitted answers null aborted transactions"
        assert sum(len(b.records) for b in uncommitted.batches()) == 3
        assert k.list_offsets(c, topic, 0, -1, isolation_level=1)[2] == 0
        assert k.list_offsets(c, topic, 0, -1, isolation_level=0)[2] == 3

        err, producers = describe_producers(c, topic)
        assert (err, producers) == (0, [(PID, EPOCH, 2, -1, 0)])

        assert write_txn_markers(c, topic, [0, 7], commit=False) == {
            0: 0, 7: k.UNKNOWN_TOPIC_OR_PARTITION}

        committed = k.fetch(c, topic, 0, 0, isolation_level=1)
        assert (committed.high_watermark, committed.last_stable_offset) == (4, 4)
        assert committed.aborted == [(PID, 0)], "the aborted transaction, for the consumer to drop"
        assert [bool(b.attributes & 0x20) for b in committed.batches()] == [False, True]
        assert k.list_offsets(c, topic, 0, -1, isolation_level=1)[2] == 4
        err, producers = describe_producers(c, topic)
        assert (err, producers) == (0, [(PID, EPOCH, 2, 0, -1)])


def test_read_committed_fetch_waits_for_the_marker(broker, topic):
    """A delayed read_committed Fetch answers once the COMMIT marker makes the records stable."""
    make_topic(broker.bootstrap, topic)
    with k.Connection(broker.bootstrap) as c, k.Connection(broker.bootstrap) as marker_conn:
        assert produce(c, topic, txn_batch(2, 0), "tx-wait").error == 0
        body = k.fetch_body(topic, 0, 0, max_wait_ms=10_000, min_bytes=1, isolation_level=1)
        started = time.monotonic()
        corr = c.send(k.FETCH, 11, body)
        time.sleep(0.3)
        assert write_txn_markers(marker_conn, topic, [0], commit=True) == {0: 0}
        got, r = c.recv()
        assert got == corr
        part = k.parse_fetch(r, 11)
        assert time.monotonic() - started < 5, "answered by the marker, not by max_wait_ms"
        assert (part.last_stable_offset, part.aborted) == (3, [])
        assert sum(len(b.records) for b in part.batches() if not b.attributes & 0x20) == 2


def test_authorization(topic):
    """Deny by default (StandardAuthorizer, no ACLs): WriteTxnMarkers needs CLUSTER_ACTION (31 per
    partition), DescribeProducers READ on the topic (29), a transactional Produce WRITE on its
    TransactionalId (53, before the topic's own check)."""
    b = new_broker({"authorizer.class.name": STANDARD, "super.users": "User:ANONYMOUS", **UNVERIFIED})
    try:
        make_topic(b.bootstrap, topic)
        b.sets.pop("super.users")
        b.restart()
        with k.Connection(b.bootstrap) as c:
            assert produce(c, topic, txn_batch(1, 0), "tx-denied").error == TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            assert write_txn_markers(c, topic, [0, 1], commit=True) == {
                0: CLUSTER_AUTHORIZATION_FAILED, 1: CLUSTER_AUTHORIZATION_FAILED}
            assert describe_producers(c, topic) == (TOPIC_AUTHORIZATION_FAILED, [])
    finally:
        b.close()


def add_partitions_v2(conn: k.Connection, txn_id: str, pid: int, epoch: int, topics: dict) -> dict:
    """AddPartitionsToTxn v2 → {(topic, partition): error}."""
    w = k.Writer().string(txn_id).i64(pid).i16(epoch)
    w.i32(len(topics))
    for name, parts in topics.items():
        w.string(name).i32(len(parts))
        for p in parts:
            w.i32(p)
    r = conn.request(24, 2, bytes(w.buf))
    r.i32()  # throttle
    out = {}
    for _ in range(r.i32()):
        name = r.string()
        for _ in range(r.i32()):
            p = r.i32()
            out[(name, p)] = r.i16()
    return out


def init_transactional(conn: k.Connection, txn_id: str) -> tuple[int, int]:
    """FindCoordinator v1 (which creates `__transaction_state`, as a client's would), then InitProducerId v1
    with a transactional id (retrying while the coordinator loads)."""
    for _ in range(150):
        r = conn.request(10, 1, bytes(k.Writer().string(txn_id).i8(1).buf))
        r.i32()
        if r.i16() == 0:
            break
        time.sleep(0.2)
    for _ in range(150):
        r = conn.request(22, 1, bytes(k.Writer().string(txn_id).i32(60000).buf))
        r.i32()
        err, pid, epoch = r.i16(), r.i64(), r.i16()
        if err not in (14, 15, 16, 51):
            assert err == 0, f"InitProducerId: {err}"
            return pid, epoch
        time.sleep(0.2)
    raise AssertionError("InitProducerId kept answering a retriable error")


@pytest.mark.skipif(MODE != "runnel", reason="checks Runnel's answer to an attack found by a review")
def test_partitions_a_topic_does_not_have_are_refused(broker, topic):
    """A partition index the topic lacks is UNKNOWN_TOPIC_OR_PARTITION (3), the rest OPERATION_NOT_ATTEMPTED
    (55), nothing added (as Kafka): accepted, its marker could never be written and the transactional id
    would stay in PrepareAbort for good."""
    make_topic(broker.bootstrap, topic, partitions=3)
    with k.Connection(broker.bootstrap) as c:
        pid, epoch = init_transactional(c, f"tx-{topic}")
        got = add_partitions_v2(c, f"tx-{topic}", pid, epoch, {topic: [-1, 99, 0]})
        assert got == {(topic, -1): 3, (topic, 99): 3, (topic, 0): 55}, got
        assert add_partitions_v2(c, f"tx-{topic}", pid, epoch, {topic: [0, 2]}) == {(topic, 0): 0, (topic, 2): 0}
        r = c.request(26, 2, bytes(k.Writer().string(f"tx-{topic}").i64(pid).i16(epoch).i8(0).buf))
        r.i32()
        assert r.i16() == 0
        # The abort completes: a new InitProducerId is answered (not CONCURRENT_TRANSACTIONS forever).
        init_transactional(c, f"tx-{topic}")


def test_an_unverified_transactional_produce_is_refused_by_default(topic):
    """KIP-890 part 1: with verification on (the default), the leader asks the transaction coordinator,
    which knows no transaction of this producer: the batch is refused, no transaction opens."""
    b = new_broker()
    try:
        make_topic(b.bootstrap, topic)
        with k.Connection(b.bootstrap) as c:
            # No `__transaction_state` yet: no coordinator to ask, NOT_ENOUGH_REPLICAS (retriable), as Kafka.
            assert produce(c, topic, txn_batch(2, 0), "tx-nobody").error == NOT_ENOUGH_REPLICAS
            init_transactional(c, "tx-somebody")  # creates and loads the coordinator
            errors = []
            for _ in range(100):
                errors.append(produce(c, topic, txn_batch(2, 0), "tx-nobody").error)
                if errors[-1] != NOT_ENOUGH_REPLICAS:
                    break
                time.sleep(0.1)
            assert errors[-1] == INVALID_PRODUCER_ID_MAPPING, errors
            err, producers = describe_producers(c, topic)
            assert err == 0 and producers == [], producers
    finally:
        b.close()
