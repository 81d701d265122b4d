"""Client metrics (KIP-714, issue 17): a subscription made with Kafka's own `kafka-client-metrics.sh`
(`org.apache.kafka.tools.ClientMetricsCommand`; Runnel's `client.telemetry.default.metrics` besides), then a librdkafka producer and Kafka's Java console producer
with `enable.metrics.push` push their metrics, which the broker's `/metrics` shows labelled with each client's
`client_instance_id`. Raw GetTelemetrySubscriptions/PushTelemetry requests check the errors: a garbage payload
is INVALID_RECORD, an oversized one TELEMETRY_TOO_LARGE, a second push within the interval
THROTTLING_QUOTA_EXCEEDED, a wrong subscription id UNKNOWN_SUBSCRIPTION_ID."""

from __future__ import annotations

import re
import subprocess
import uuid

import pytest

import kproto as k
from conftest import MODE, BrokerProcess
from test_dynamic_quorum import wait_until
from test_kafka_tools import LIBS, tool
from test_metrics import get, scrape

pytestmark = pytest.mark.skipif(MODE != "runnel", reason="Runnel's own metrics endpoint")

GET_TELEMETRY_SUBSCRIPTIONS, PUSH_TELEMETRY = 71, 72
INVALID_RECORD, THROTTLING_QUOTA_EXCEEDED, UNKNOWN_SUBSCRIPTION_ID, TELEMETRY_TOO_LARGE = 87, 89, 117, 118
MAX_BYTES = 65536
DEFAULT_METRICS = "org.apache.kafka.producer."
CLIENT_METRICS = "org.apache.kafka.tools.ClientMetricsCommand"


@pytest.fixture(scope="module")
def telemetry_broker():
    # Runnel's default subscription (no CLIENT_METRICS resource needed) with a long interval: the tool's
    # one-second subscription decides the interval of the clients it matches.
    b = BrokerProcess({"num.partitions": "1", "telemetry.max.bytes": str(MAX_BYTES),
                       "client.telemetry.default.metrics": DEFAULT_METRICS,
                       "client.telemetry.default.interval.ms": "60000"}).start()
    yield b
    b.close()


def get_subscriptions(conn: k.Connection, instance_id: bytes = bytes(16)) -> dict:
    body = k.Writer().raw(instance_id).tags()
    r = conn.request(GET_TELEMETRY_SUBSCRIPTIONS, 0, bytes(body.buf), flexible_header=True,
                     flexible_response=True)
    out = {"throttle_time_ms": r.i32(), "error_code": r.i16(), "client_instance_id": r.raw(16),
           "subscription_id": r.i32(), "accepted_compression_types": k.read_compact_array(r, lambda r: r.i8()),
           "push_interval_ms": r.i32(), "telemetry_max_bytes": r.i32(), "delta_temporality": r.i8()}
    out["requested_metrics"] = k.read_compact_array(r, k.read_compact_string)
    return out


def push(conn: k.Connection, sub: dict, payload: bytes, subscription_id: int | None = None) -> int:
    sid = sub["subscription_id"] if subscription_id is None else subscription_id
    w = k.Writer().raw(sub["client_instance_id"]).i32(sid).i8(0).i8(0)
    w.uvarint(len(payload) + 1).raw(payload).tags()
    r = conn.request(PUSH_TELEMETRY, 0, bytes(w.buf), flexible_header=True, flexible_response=True)
    r.i32()
    return r.i16()


def client_series(port: int, client_id: str) -> dict:
    """`kafka_client_*` samples of `client_id`: {(name, labels): value}."""
    return {key: v for key, v in scrape(port).items()
            if key[0].startswith("kafka_client_") and ("client_id", client_id) in key[1]}


def instance_ids(series: dict) -> set:
    return {v for key in series for (n, v) in key[1] if n == "client_instance_id"}


def test_subscribed_clients_push_their_metrics_to_metrics_endpoint(telemetry_broker, topic):
    from confluent_kafka import Producer
    b = telemetry_broker
    tool(CLIENT_METRICS, "--bootstrap-server", b.bootstrap, "--alter", "--name", "producers",
         "--metrics", "org.apache.kafka.producer.", "--interval", "1000")
    # Without --name the tool lists the resources (ListConfigResources), then describes each.
    described = tool(CLIENT_METRICS, "--bootstrap-server", b.bootstrap, "--describe")
    assert "producers" in described, described
    assert "metrics=org.apache.kafka.producer." in described and "interval.ms=1000" in described, described

    # librdkafka (confluent-kafka-python) pushes every interval while it runs.
    p = Producer({"bootstrap.servers": b.bootstrap, "client.id": "telemetry-rdkafka",
                  "enable.metrics.push": True, "linger.ms": 5})
    for i in range(20):
        p.produce(topic, value=b"v%d" % i)
    assert p.flush(30) == 0
    series = wait_until(lambda: client_series(b.metrics_port, "telemetry-rdkafka"), timeout=15,
                        what="librdkafka's pushed producer metrics on /metrics")
    assert all(name.startswith("kafka_client_org_apache_kafka_producer_") for name, _ in series), series
    ids = instance_ids(series)
    assert len(ids) == 1 and uuid.UUID(ids.pop()).int != 0, series
    software = {v for key in series for (n, v) in key[1] if n == "client_software_name"}
    assert software == {"confluent-kafka-python"} or software == {"librdkafka"}, software

    # Kafka's Java client (its console producer, kept running until its push is seen).
    java_producer = subprocess.Popen(
        ["java", "-XX:TieredStopAtLevel=1", "-Xmx256m", "-cp", f"{LIBS}/*", "org.apache.kafka.tools.ConsoleProducer",
         "--bootstrap-server", b.bootstrap, "--topic", topic, "--command-property", "client.id=telemetry-java"],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
    try:
        java_producer.stdin.write("a\nb\nc\n")
        java_producer.stdin.flush()
        java = wait_until(lambda: client_series(b.metrics_port, "telemetry-java"), timeout=20,
                          what="the Java producer's pushed metrics on /metrics")
        java_producer.stdin.close()
        assert java_producer.wait(timeout=30) == 0
    finally:
        java_producer.kill()
    assert any(name.startswith("kafka_client_org_apache_kafka_producer_record_send") for name, _ in java), \
        sorted({name for name, _ in java})
    assert len(instance_ids(java)) == 1
    p.flush(0)


def test_bad_pushes_get_kafkas_errors(telemetry_broker):
    b = telemetry_broker
    # Subscribed by `client.telemetry.default.metrics` alone (and by the first test's resource if it ran).
    with k.Connection(b.bootstrap, client_id="raw-telemetry") as conn:
        garbage, oversized = get_subscriptions(conn), get_subscriptions(conn)
        assert garbage["error_code"] == 0 and garbage["requested_metrics"] == [DEFAULT_METRICS], garbage
        assert garbage["telemetry_max_bytes"] == MAX_BYTES and garbage["push_interval_ms"] <= 60000
        assert garbage["accepted_compression_types"] == [4, 3, 1, 2]
        assert garbage["client_instance_id"] != oversized["client_instance_id"]
        # The instance asks again at once: too early.
        again = get_subscriptions(conn, garbage["client_instance_id"])
        assert again["error_code"] == THROTTLING_QUOTA_EXCEEDED, again

        assert push(conn, garbage, b"\xff" * 32) == INVALID_RECORD
        assert push(conn, garbage, b"") == THROTTLING_QUOTA_EXCEEDED
        assert push(conn, oversized, b"\0" * (MAX_BYTES + 1)) == TELEMETRY_TOO_LARGE
        wrong = get_subscriptions(conn)
        assert push(conn, wrong, b"", subscription_id=wrong["subscription_id"] ^ 1) == UNKNOWN_SUBSCRIPTION_ID
    status, text = get(b.metrics_port, "/metrics")
    assert status == 200 and re.search(r"^kafka_server_client_metrics_instance_count \d+", text, re.M), text
