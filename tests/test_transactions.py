"""Transactions (KIP-98, KIP-447) with a real transactional client (confluent-kafka / librdkafka) against one
broker: commit and abort seen by read_committed and read_uncommitted consumers, fencing by a second instance
of the same transactional id, the coordinator aborting a transaction that outlives its timeout,
consume-transform-produce with `send_offsets_to_transaction`, and the state surviving a restart.

Also runs against Apache Kafka 4.4.0 (RUNNEL_TEST_BROKER=kafka) to check the expectations.
"""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from conftest import make_topic, new_broker, MODE

TIMEOUT_S = 60


def txn_producer(bootstrap: str, txn_id: str, **conf) -> Producer:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id,
                  "transaction.timeout.ms": 60000, **conf})
    p.init_transactions(TIMEOUT_S)
    return p


def read_all(bootstrap: str, topic: str, partitions: int, isolation: str, expect: int | None = None,
             idle_s: float = 3.0) -> list[tuple[int, int, bytes]]:
    """Every record of `topic` from the start as (partition, offset, value); stops at `expect` records or after
    `idle_s` without a record (bounded by TIMEOUT_S)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}",
                  "isolation.level": isolation, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        out: list[tuple[int, int, bytes]] = []
        deadline = time.monotonic() + TIMEOUT_S
        last = time.monotonic()
        while time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is None:
                if expect is None and time.monotonic() - last > idle_s:
                    break
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise KafkaException(m.error())
            out.append((m.partition(), m.offset(), m.value()))
            last = time.monotonic()
            if expect is not None and len(out) >= expect:
                break
        return out
    finally:
        c.close()


def end_offsets(bootstrap: str, topic: str, partition: int, isolation: str) -> int:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"w-{uuid.uuid4().hex[:8]}",
                  "isolation.level": isolation})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, partition), timeout=TIMEOUT_S, cached=False)[1]
    finally:
        c.close()


def test_committed_records_are_read_and_aborted_ones_are_not(broker, topic):
    make_topic(broker.bootstrap, topic, partitions=3)
    p = txn_producer(broker.bootstrap, f"tx-{topic}")
    expected = []
    for round_, commit in enumerate([True, False, True, False, True]):
        p.begin_transaction()
        for i in range(6):
            v = f"r{round_}-{i}".encode()
            p.produce(topic, v, partition=i % 3)
            if commit:
                expected.append(v)
        p.flush(TIMEOUT_S)
        if commit:
            p.commit_transaction(TIMEOUT_S)
        else:
            p.abort_transaction(TIMEOUT_S)
    committed = read_all(broker.bootstrap, topic, 3, "read_committed", expect=len(expected))
    assert sorted(v for _, _, v in committed) == sorted(expected)
    # Order within a partition is the produce order.
    for part in range(3):
        got = [v for pp, _, v in committed if pp == part]
        assert got == [v for i, v in enumerate(expected) if int(v.split(b"-")[1]) % 3 == part]
    # read_uncommitted sees the aborted records too (but never the markers).
    everything = read_all(broker.bootstrap, topic, 3, "read_uncommitted", expect=30)
    assert len(everything) == 30
    # Each of the 5 transactions left one marker per partition: the end offset counts them.
    assert sum(end_offsets(broker.bootstrap, topic, part, "read_committed") for part in range(3)) == 30 + 15


def test_an_open_transaction_holds_read_committed_consumers_at_the_last_stable_offset(broker, topic):
    make_topic(broker.bootstrap, topic)
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    plain.produce(topic, b"before", partition=0)
    plain.flush(TIMEOUT_S)
    p = txn_producer(broker.bootstrap, f"tx-{topic}")
    p.begin_transaction()
    p.produce(topic, b"open", partition=0)
    p.flush(TIMEOUT_S)
    # The open transaction's record is past the LSO: read_committed stops before it.
    assert end_offsets(broker.bootstrap, topic, 0, "read_committed") == 1
    assert end_offsets(broker.bootstrap, topic, 0, "read_uncommitted") == 2
    assert [v for _, _, v in read_all(broker.bootstrap, topic, 1, "read_committed", idle_s=2)] == [b"before"]
    p.commit_transaction(TIMEOUT_S)
    got = read_all(broker.bootstrap, topic, 1, "read_committed", expect=2)
    assert [v for _, _, v in got] == [b"before", b"open"]


def test_a_second_instance_fences_the_first(broker, topic):
    make_topic(broker.bootstrap, topic)
    txn_id = f"tx-{topic}"
    first = txn_producer(broker.bootstrap, txn_id)
    first.begin_transaction()
    first.produce(topic, b"zombie", partition=0)
    first.flush(TIMEOUT_S)
    second = txn_producer(broker.bootstrap, txn_id)  # aborts the first's open transaction
    second.begin_transaction()
    second.produce(topic, b"live", partition=0)
    second.commit_transaction(TIMEOUT_S)
    with pytest.raises(KafkaException) as e:  # the first is still in its (aborted) transaction
        first.produce(topic, b"zombie-2", partition=0)
        first.commit_transaction(TIMEOUT_S)
    assert e.value.args[0].fatal() or e.value.args[0].code() in (
        KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH), e.value
    got = read_all(broker.bootstrap, topic, 1, "read_committed", expect=1, idle_s=2)
    assert [v for _, _, v in got] == [b"live"]


@pytest.fixture
def quick_abort_broker():
    if MODE == "external":
        pytest.skip("needs a broker started by the tests")
    b = new_broker({"transaction.abort.timed.out.transaction.cleanup.interval.ms": "200"})
    yield b
    b.close()


def test_the_coordinator_aborts_a_transaction_that_outlives_its_timeout(quick_abort_broker, topic):
    bootstrap = quick_abort_broker.bootstrap
    make_topic(bootstrap, topic)
    p = txn_producer(bootstrap, f"tx-{topic}", **{"transaction.timeout.ms": 1500})
    p.begin_transaction()
    p.produce(topic, b"abandoned", partition=0)
    p.flush(TIMEOUT_S)
    # The abort marker moves the LSO past the record (record + marker = 2).
    deadline = time.monotonic() + TIMEOUT_S
    while end_offsets(bootstrap, topic, 0, "read_committed") != 2:
        assert time.monotonic() < deadline, "the timed-out transaction was not aborted"
        time.sleep(0.2)
    assert read_all(bootstrap, topic, 1, "read_committed", idle_s=1) == []
    with pytest.raises(KafkaException):
        p.commit_transaction(TIMEOUT_S)


def test_consume_transform_produce_commits_offsets_with_the_transaction(broker, topic):
    src, dst = f"{topic}-in", f"{topic}-out"
    make_topic(broker.bootstrap, src)
    make_topic(broker.bootstrap, dst)
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(10):
        plain.produce(src, f"m{i}".encode(), partition=0)
    plain.flush(TIMEOUT_S)
    group = f"g-{topic}"
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    c.assign([TopicPartition(src, 0, 0)])
    p = txn_producer(broker.bootstrap, f"tx-{topic}")
    try:
        for commit in (False, True):
            p.begin_transaction()
            got = 0
            deadline = time.monotonic() + TIMEOUT_S
            while got < 5:
                assert time.monotonic() < deadline
                m = c.poll(0.5)
                if m is None or m.error():
                    continue
                p.produce(dst, m.value().upper(), partition=0)
                got += 1
            p.send_offsets_to_transaction([TopicPartition(src, 0, m.offset() + 1)],
                                          c.consumer_group_metadata(), TIMEOUT_S)
            if commit:
                p.commit_transaction(TIMEOUT_S)
            else:
                p.abort_transaction(TIMEOUT_S)
                c.seek(TopicPartition(src, 0, 0))  # the aborted offsets were not committed
    finally:
        c.close()
    out = read_all(broker.bootstrap, dst, 1, "read_committed", expect=5)
    assert [v for _, _, v in out] == [f"M{i}".encode() for i in range(5)]
    check = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    try:
        committed = check.committed([TopicPartition(src, 0)], timeout=TIMEOUT_S)
        assert committed[0].offset == 5
    finally:
        check.close()


def test_transactions_survive_a_restart(fresh_broker, topic):
    make_topic(fresh_broker.bootstrap, topic)
    txn_id = f"tx-{topic}"
    p = txn_producer(fresh_broker.bootstrap, txn_id)
    p.begin_transaction()
    p.produce(topic, b"kept", partition=0)
    p.commit_transaction(TIMEOUT_S)
    p.begin_transaction()
    p.produce(topic, b"open-at-kill", partition=0)
    p.flush(TIMEOUT_S)
    fresh_broker.kill9()
    fresh_broker.start()
    # The open transaction is still open after recovery: read_committed stops before it...
    assert end_offsets(fresh_broker.bootstrap, topic, 0, "read_committed") == 2
    # ...until a new instance of the producer aborts it.
    p2 = txn_producer(fresh_broker.bootstrap, txn_id)
    p2.begin_transaction()
    p2.produce(topic, b"after", partition=0)
    p2.commit_transaction(TIMEOUT_S)
    got = read_all(fresh_broker.bootstrap, topic, 1, "read_committed", expect=2)
    assert [v for _, _, v in got] == [b"kept", b"after"]


def runnel_cli(bootstrap: str, *args: str):
    import json
    import subprocess
    from conftest import RUNNEL_BIN
    p = subprocess.run([str(RUNNEL_BIN), "transaction", *args, "--json", "-b", bootstrap, "--timeout", "20"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, f"runnel transaction {args}: {p.stderr}"
    return json.loads(p.stdout)


@pytest.mark.skipif(MODE != "runnel", reason="the runnel CLI")
def test_runnel_transaction_cli_lists_describes_and_aborts(broker, topic):
    make_topic(broker.bootstrap, topic)
    txn_id = f"tx-{topic}"
    p = txn_producer(broker.bootstrap, txn_id)
    p.begin_transaction()
    p.produce(topic, b"hanging", partition=0)
    p.flush(TIMEOUT_S)
    listed = runnel_cli(broker.bootstrap, "list", "--state", "Ongoing")
    assert any(t["transactional_id"] == txn_id for t in listed), listed
    d = runnel_cli(broker.bootstrap, "describe", txn_id)
    assert d["state"] == "Ongoing" and d["partitions"] == [f"{topic}-0"], d
    assert end_offsets(broker.bootstrap, topic, 0, "read_committed") == 0
    out = runnel_cli(broker.bootstrap, "abort", "--topic", topic, "--partition", "0", "--start-offset", "0")
    assert out["aborted_start_offset"] == 0
    # The ABORT marker ends the transaction on the partition: the LSO moves past record and marker.
    assert end_offsets(broker.bootstrap, topic, 0, "read_committed") == 2
    assert read_all(broker.bootstrap, topic, 1, "read_committed", idle_s=1) == []
