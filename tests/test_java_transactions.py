"""Transactions (KIP-98, KIP-447) with the Java client (kafka-clients 4.4.0, tests/java TxnTest.java) against one
broker: commit and abort seen exactly by read_committed, fencing by a second instance of the transactional.id
(ProducerFencedException), consume-transform-produce with sendOffsetsToTransaction(offsets,
consumer.groupMetadata()) and the committed offsets checked afterwards, and the coordinator aborting a
transaction past its transaction.timeout.ms (on a broker with a lowered
transaction.abort.timed.out.transaction.cleanup.interval.ms).

Also runs against Apache Kafka 4.4.0 (RUNNEL_TEST_BROKER=kafka); there the lowered interval goes to Kafka's
server.properties through KAFKA_EXTRA_PROPERTIES.
"""

from __future__ import annotations

import subprocess

import pytest

from conftest import MODE, ROOT, make_topic, new_broker

JAVA_DIR = ROOT / "tests" / "java" / "target"
TIMEOUT_S = 60


def txn_java(scenario: str, bootstrap: str, topic: str) -> str:
    if not (JAVA_DIR / "runnel-client-test.jar").exists():
        pytest.fail("tests/java not built: run scripts/install-test-deps.sh (scripts/test.sh does)")
    cp = f"{JAVA_DIR / 'runnel-client-test.jar'}:{JAVA_DIR / 'lib'}/*"
    res = subprocess.run(["java", "-XX:TieredStopAtLevel=1", "-cp", cp,
                          "dev.runnel.clienttest.TxnTest", scenario, "--bootstrap", bootstrap, "--topic", topic,
                          "--timeout-ms", str(TIMEOUT_S * 1000)],
                         capture_output=True, text=True, timeout=3 * TIMEOUT_S)
    print(res.stdout)
    assert res.returncode == 0 and f"OK {scenario}" in res.stdout, \
        f"TxnTest {scenario} exited {res.returncode}:\n{res.stdout[-3000:]}\n{res.stderr[-4000:]}"
    return res.stdout


def test_java_commit_and_abort(broker, topic):
    make_topic(broker.bootstrap, topic)
    txn_java("commit-abort", broker.bootstrap, topic)


def test_java_second_instance_fences_the_first(broker, topic):
    make_topic(broker.bootstrap, topic)
    out = txn_java("fence", broker.bootstrap, topic)
    assert "ProducerFencedException" in out


def test_java_consume_transform_produce(broker, topic):
    make_topic(broker.bootstrap, f"{topic}-in")
    make_topic(broker.bootstrap, f"{topic}-out")
    txn_java("ctp", broker.bootstrap, topic)


@pytest.fixture
def quick_abort_broker(tmp_path, monkeypatch):
    if MODE == "external":
        pytest.skip("needs a broker started by the tests")
    setting = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": "200"}
    if MODE == "kafka":
        extra = tmp_path / "extra.properties"
        extra.write_text("".join(f"{k}={v}\n" for k, v in setting.items()))
        monkeypatch.setenv("KAFKA_EXTRA_PROPERTIES", str(extra))
    b = new_broker(setting)
    yield b
    b.close()


def test_java_transaction_timeout_aborts(quick_abort_broker, topic):
    make_topic(quick_abort_broker.bootstrap, topic)
    txn_java("timeout", quick_abort_broker.bootstrap, topic)
