"""Apache Kafka's own command-line tools (from the kafka-tools 4.4.0 jar) as clients.

Main classes are run with `java -cp .test-deps/kafka/libs/*` (scripts/kafka-reference.sh fetch puts them there).
"""

from __future__ import annotations

import re
import subprocess
import time

import pytest

import kproto as k
from conftest import MODE, ROOT, make_topic, new_broker

pytestmark = pytest.mark.kafka_tools

LIBS = ROOT / ".test-deps" / "kafka" / "libs"
TIMEOUT_S = 120


def tool(main_class, *args, stdin=None):
    """Runs a Kafka tool; its stdout (fails the test unless it exits 0)."""
    res = run_tool(main_class, *args, stdin=stdin)
    assert res.returncode == 0, f"{main_class} {args} exited {res.returncode}:\n{res.stdout[-3000:]}\n" \
                                f"{res.stderr[-3000:]}"
    return res.stdout


def run_tool(main_class, *args, stdin=None) -> subprocess.CompletedProcess:
    """Runs a Kafka tool (bounded by TIMEOUT_S) whatever its exit code."""
    if not (LIBS / ".complete-4.4.0").exists():
        pytest.fail("Kafka jars missing: run scripts/kafka-reference.sh fetch (scripts/test.sh does)")
    log_cfg = ROOT / ".test-deps" / "kafka" / "tools-log4j.properties"
    if not log_cfg.exists():
        log_cfg.write_text("log4j.rootLogger=ERROR, stderr\nlog4j.appender.stderr=org.apache.log4j.ConsoleAppender\n"
                           "log4j.appender.stderr.Target=System.err\n"
                           "log4j.appender.stderr.layout=org.apache.log4j.PatternLayout\n"
                           "log4j.appender.stderr.layout.ConversionPattern=%p %m (%c)%n\n")
    return subprocess.run(["java", "-XX:TieredStopAtLevel=1", "-Xmx512m", f"-Dlog4j.configuration=file:{log_cfg}",
                           "-cp", f"{LIBS}/*", main_class, *args], input=stdin, capture_output=True, text=True,
                          timeout=TIMEOUT_S)


def test_kafka_topics_create_list_describe(broker, topic):
    b = broker.bootstrap
    tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", b, "--create", "--topic", topic,
         "--partitions", "3", "--replication-factor", "1")
    listed = tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", b, "--list").split()
    assert topic in listed
    described = tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", b, "--describe", "--topic", topic)
    assert re.search(r"PartitionCount:\s*3", described), described
    for p in range(3):
        assert re.search(rf"Partition:\s*{p}\s+Leader:\s*\d+", described), described


@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_console_producer_and_consumer_round_trip(broker, topic, codec):
    b = broker.bootstrap
    make_topic(b, topic, 1)
    lines = [f"key{i}:value {i} " + "x" * (i % 50) for i in range(500)]
    tool("org.apache.kafka.tools.ConsoleProducer", "--bootstrap-server", b, "--topic", topic,
         "--compression-codec", codec, "--property", "parse.key=true", "--property", "key.separator=:",
         stdin="\n".join(lines) + "\n")
    out = tool("org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", b, "--topic", topic,
               "--partition", "0", "--offset", "earliest", "--max-messages", str(len(lines)),
               "--timeout-ms", "60000", "--property", "print.key=true", "--property", "key.separator=:",
               "--command-property", "enable.auto.commit=false")
    assert [line for line in out.splitlines() if line.startswith("key")] == lines, out[-2000:]
    with k.Connection(b) as c:
        (batch, *_) = k.fetch(c, topic, 0, 0).batches()
        assert batch.codec == k.CODECS[codec]


def test_producer_perf_test(broker, topic):
    make_topic(broker.bootstrap, topic, 1)
    out = tool("org.apache.kafka.tools.ProducerPerformance", "--topic", topic, "--num-records", "100000",
               "--record-size", "100", "--throughput", "-1", "--producer-props",
               f"bootstrap.servers={broker.bootstrap}", "acks=all", "linger.ms=5")
    final = [line for line in out.splitlines() if line.startswith("100000 records sent")]
    assert final, out
    print(final[0])
    with k.Connection(broker.bootstrap) as c:
        assert k.list_offsets(c, topic, 0, -1)[2] == 100000


def test_get_offset_shell(broker, topic):
    make_topic(broker.bootstrap, topic, 2)
    with k.Connection(broker.bootstrap) as c:
        res = k.produce(c, topic, 1, k.encode_batch([k.Record(b"a", b"b")] * 7))
        assert res.error == 0
    out = tool("org.apache.kafka.tools.GetOffsetShell", "--bootstrap-server", broker.bootstrap, "--topic", topic)
    assert sorted(out.split()) == sorted([f"{topic}:0:0", f"{topic}:1:7"]), out


# ------------------------------------------------------------------ kafka-transactions.sh (TransactionsCommand)
TXN_TOOL = "org.apache.kafka.tools.TransactionsCommand"


def txn_tool(bootstrap, *args) -> list[list[str]]:
    """Runs kafka-transactions.sh; its table's rows (header first) split on whitespace."""
    out = tool(TXN_TOOL, "--bootstrap-server", bootstrap, *args)
    print(out)
    return [line.split() for line in out.splitlines() if line.strip()]


def test_kafka_transactions_list_describe_and_describe_producers(broker, topic):
    """list, describe --transactional-id and describe-producers, for an open and then a committed transaction of a
    real transactional producer (confluent-kafka)."""
    from confluent_kafka import Producer
    b = broker.bootstrap
    make_topic(b, topic, 1)
    txn_id = f"tx-{topic}"
    p = Producer({"bootstrap.servers": b, "transactional.id": txn_id, "transaction.timeout.ms": 60000})
    p.init_transactions(TIMEOUT_S)
    p.begin_transaction()
    p.produce(topic, b"open", partition=0)
    p.flush(TIMEOUT_S)

    listed = txn_tool(b, "list")
    assert listed[0] == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"], listed
    (row,) = [r for r in listed[1:] if r[0] == txn_id]
    producer_id = row[2]
    assert row[3] == "Ongoing", row

    described = txn_tool(b, "describe", "--transactional-id", txn_id)
    assert described[0][:5] == ["CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch",
                                "TransactionState"], described
    d = described[1]
    assert d[1:3] == [txn_id, producer_id] and d[4] == "Ongoing" and d[-1] == f"{topic}-0", d

    producers = txn_tool(b, "describe-producers", "--topic", topic, "--partition", "0")
    assert producers[0] == ["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence",
                            "LastTimestamp", "CurrentTransactionStartOffset"], producers
    (prow,) = producers[1:]
    assert prow[0] == producer_id and prow[1] == d[3] and prow[3] == "0" and prow[5] == "0", prow

    p.commit_transaction(TIMEOUT_S)
    d = txn_tool(b, "describe", "--transactional-id", txn_id)[1]
    assert d[1:3] == [txn_id, producer_id] and d[4] == "CompleteCommit", d
    (prow,) = txn_tool(b, "describe-producers", "--topic", topic, "--partition", "0")[1:]
    assert prow[0] == producer_id and prow[5] == "None", prow
    assert [r for r in txn_tool(b, "list")[1:] if r[0] == txn_id][0][3] == "CompleteCommit"


def init_txn_producer_id(conn, txn_id: str, timeout: float = 30.0):
    """InitProducerId v1 for `txn_id` on a single broker (its own transaction coordinator) -> (producer id,
    epoch); FindCoordinator v1 (type transaction) first, as a client does: it creates `__transaction_state`.
    Retries COORDINATOR_LOAD_IN_PROGRESS / COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR (bounded)."""
    deadline = time.monotonic() + timeout
    while True:
        conn.request(k.FIND_COORDINATOR, 1, bytes(k.Writer().string(txn_id).i8(1).buf))
        r = conn.request(k.INIT_PRODUCER_ID, 1, bytes(k.Writer().string(txn_id).i32(60000).buf))
        r.i32()
        err, pid, epoch = r.i16(), r.i64(), r.i16()
        if err == 0:
            return pid, epoch
        assert err in (14, 15, 16) and time.monotonic() < deadline, f"InitProducerId({txn_id}): error {err}"
        time.sleep(0.2)


@pytest.fixture
def unverified_broker(tmp_path, monkeypatch):
    """A broker that appends a transactional batch to a partition never added to its transaction: both get
    transaction.partition.verification.enable=false (KIP-890 part 1 verification off; on, the batch is refused
    with INVALID_TXN_STATE)."""
    if MODE == "external":
        pytest.skip("needs a broker started by the tests")
    unverified = {"transaction.partition.verification.enable": "false"}
    if MODE == "kafka":
        extra = tmp_path / "extra.properties"
        extra.write_text("transaction.partition.verification.enable=false\n")
        monkeypatch.setenv("KAFKA_EXTRA_PROPERTIES", str(extra))
    b = new_broker(unverified if MODE == "runnel" else None)
    yield b
    b.close()


def test_kafka_transactions_find_hanging_and_abort(unverified_broker, topic):
    """A hanging transaction (the KIP-664 case): a transactional batch in a partition its transaction coordinator
    never heard of (raw Produce with the producer id of a transactional id, no AddPartitionsToTxn). find-hanging
    lists it (the coordinator's DescribeTransactions does not name the partition); abort --start-offset
    (DescribeProducers, then WriteTxnMarkers sent by the admin client to the partition leader) ends it: the LSO
    moves past it and read_committed never shows its record."""
    b = unverified_broker.bootstrap
    make_topic(b, topic, 1)
    txn_id = f"tx-{topic}"
    with k.Connection(b) as c:
        (broker_id, *_) = k.metadata_brokers(c)
        assert k.produce(c, topic, 0, k.encode_batch([k.Record(b"k", b"before")])).error == 0
        pid, epoch = init_txn_producer_id(c, txn_id)
        batch = k.encode_batch([k.Record(b"k", b"hanging")], producer_id=pid, producer_epoch=epoch,
                               base_sequence=0, transactional=True)
        r = c.request(k.PRODUCE, 8, k.produce_body(topic, 0, batch, transactional_id=txn_id))
        res = k.parse_produce(r, 8)
        assert res.error == 0, f"transactional Produce of a partition not in the transaction: error {res.error}"
        start = res.base_offset
        assert start == 1
        assert k.produce(c, topic, 0, k.encode_batch([k.Record(b"k", b"after")])).error == 0
        assert k.list_offsets(c, topic, 0, -1, isolation_level=1)[2] == start  # the LSO stops at it

    hanging = txn_tool(b, "find-hanging", "--broker-id", str(broker_id), "--max-transaction-timeout", "0")
    assert hanging[0][:6] == ["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch",
                              "StartOffset"], hanging
    rows = [r for r in hanging[1:] if r[0] == topic]
    assert len(rows) == 1 and rows[0][1:4] == ["0", str(pid), str(epoch)] and rows[0][5] == str(start), hanging

    txn_tool(b, "abort", "--topic", topic, "--partition", "0", "--start-offset", str(start))
    with k.Connection(b) as c:
        # before, hanging, after, the abort marker
        assert k.list_offsets(c, topic, 0, -1, isolation_level=1)[2] == 4
        assert k.list_offsets(c, topic, 0, -1)[2] == 4
    (prow,) = [r for r in txn_tool(b, "describe-producers", "--topic", topic, "--partition", "0")[1:]
               if r[0] == str(pid)]
    assert prow[5] == "None", prow
    hanging = txn_tool(b, "find-hanging", "--broker-id", str(broker_id), "--max-transaction-timeout", "0")
    assert not [r for r in hanging[1:] if r[0] == topic], hanging
    out = tool("org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", b, "--topic", topic,
               "--partition", "0", "--offset", "earliest", "--max-messages", "2", "--timeout-ms", "30000",
               "--isolation-level", "read_committed", "--command-property", "enable.auto.commit=false")
    assert [line for line in out.splitlines() if line in ("before", "hanging", "after")] == ["before", "after"], out
