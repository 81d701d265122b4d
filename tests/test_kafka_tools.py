"""Apache Kafka's own command-line tools (from the kafka-tools 4.4.0 jar) as clients.

Main classes are run with `java -cp .test-deps/kafka/libs/*` (scripts/kafka-reference.sh fetch puts them there).
"""

from __future__ import annotations

import re
import subprocess

import pytest

import kproto as k
from conftest import ROOT, make_topic

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
