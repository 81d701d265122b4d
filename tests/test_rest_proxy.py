"""The HTTP API (issue 17): Confluent REST Proxy v3 routes served on `metrics.listeners`, driven with a real
HTTP client (`requests`) against the real broker, with records crossing between REST and a Kafka client
(confluent_kafka) both ways, and schemathesis checking the served OpenAPI document against the live API."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time

import pytest
import requests
from confluent_kafka import Consumer, Producer

from conftest import MODE, BrokerProcess, assert_rest_error as assert_error

pytestmark = pytest.mark.skipif(MODE != "runnel", reason="Runnel's own HTTP API")

JSON = {"Content-Type": "application/json"}
TIMEOUT = 10


@pytest.fixture(scope="module")
def rest():
    b = BrokerProcess({"num.partitions": "1"}).start()
    base = f"http://127.0.0.1:{b.metrics_port}"
    clusters = requests.get(f"{base}/v3/clusters", timeout=TIMEOUT).json()
    b.cluster = clusters["data"][0]["cluster_id"]
    b.base = base
    b.v3 = f"{base}/v3/clusters/{b.cluster}"
    yield b
    b.close()


def create(rest, name: str, partitions: int = 1, configs=None) -> requests.Response:
    body = {"topic_name": name, "partitions_count": partitions, "replication_factor": 1,
            "configs": configs or []}
    return requests.post(f"{rest.v3}/topics", json=body, timeout=30)


def test_cluster_brokers_and_topic_lifecycle(rest, topic):
    cluster = requests.get(rest.v3, timeout=TIMEOUT).json()
    assert cluster["kind"] == "KafkaCluster" and cluster["cluster_id"] == rest.cluster
    assert cluster["metadata"]["self"] == rest.v3
    brokers = requests.get(f"{rest.v3}/brokers", timeout=TIMEOUT).json()["data"]
    assert [(b["host"], b["port"]) for b in brokers] == [("127.0.0.1", rest.port)]
    assert requests.get(f"{rest.v3}/brokers/{brokers[0]['broker_id']}", timeout=TIMEOUT).status_code == 200

    r = create(rest, topic, 3, [{"name": "retention.ms", "value": "3600000"}])
    assert r.status_code == 201, r.text
    assert (r.json()["topic_name"], r.json()["partitions_count"]) == (topic, 3)
    assert_error(create(rest, topic), 400, 40002)  # TOPIC_ALREADY_EXISTS
    got = requests.get(f"{rest.v3}/topics/{topic}", timeout=TIMEOUT).json()
    assert (got["kind"], got["partitions_count"], got["replication_factor"]) == ("KafkaTopic", 3, 1)
    names = [t["topic_name"] for t in requests.get(f"{rest.v3}/topics", timeout=TIMEOUT).json()["data"]]
    assert topic in names
    parts = requests.get(f"{rest.v3}/topics/{topic}/partitions", timeout=TIMEOUT).json()["data"]
    assert [p["partition_id"] for p in parts] == [0, 1, 2]
    replicas = requests.get(parts[0]["replicas"]["related"], timeout=TIMEOUT).json()["data"]
    assert [(r["is_leader"], r["is_in_sync"]) for r in replicas] == [(True, True)]
    assert requests.get(parts[0]["leader"]["related"], timeout=TIMEOUT).json()["is_leader"] is True

    r = requests.delete(f"{rest.v3}/topics/{topic}", timeout=30)
    assert r.status_code == 204, r.text
    assert_error(requests.get(f"{rest.v3}/topics/{topic}", timeout=TIMEOUT), 404, 40403)


def test_configs_get_put_delete_and_alter_batch(rest, topic):
    assert create(rest, topic).status_code == 201
    url = f"{rest.v3}/topics/{topic}/configs"
    names = {c["name"] for c in requests.get(url, timeout=TIMEOUT).json()["data"]}
    assert {"retention.ms", "cleanup.policy"} <= names
    r = requests.put(f"{url}/retention.ms", json={"value": "123456"}, timeout=TIMEOUT)
    assert r.status_code == 204, r.text
    one = requests.get(f"{url}/retention.ms", timeout=TIMEOUT).json()
    assert (one["value"], one["source"], one["is_default"]) == ("123456", "DYNAMIC_TOPIC_CONFIG", False)
    r = requests.post(f"{url}:alter", timeout=TIMEOUT, json={"data": [
        {"name": "retention.ms", "operation": "DELETE"},
        {"name": "segment.ms", "value": "7200000"}]})
    assert r.status_code == 204, r.text
    assert requests.get(f"{url}/retention.ms", timeout=TIMEOUT).json()["is_default"] is True
    assert requests.get(f"{url}/segment.ms", timeout=TIMEOUT).json()["value"] == "7200000"
    assert requests.delete(f"{url}/segment.ms", timeout=TIMEOUT).status_code == 204
    assert requests.get(f"{url}/segment.ms", timeout=TIMEOUT).json()["is_default"] is True
    assert_error(requests.put(f"{url}/retention.ms", json={"value": "abc"}, timeout=TIMEOUT), 400, 40002)
    assert_error(requests.get(f"{url}/no.such.config", timeout=TIMEOUT), 404, 40403)


def test_rest_produce_is_consumed_by_kafka_and_kafka_produce_shows_in_lags(rest, topic):
    assert create(rest, topic).status_code == 201
    url = f"{rest.v3}/topics/{topic}/records"
    sent = [
        {"key": {"type": "STRING", "data": "k1"}, "value": {"type": "JSON", "data": {"n": 1}}},
        {"value": {"type": "BINARY", "data": base64.b64encode(b"\x00\xffbin").decode()},
         "headers": [{"name": "h", "value": base64.b64encode(b"hv").decode()}]},
        {"partition_id": 0, "value": {"type": "STRING", "data": "s"}, "timestamp": "2026-01-02T03:04:05.678Z"},
    ]
    offsets = []
    for body in sent:
        r = requests.post(url, json=body, timeout=TIMEOUT)
        assert r.status_code == 200, r.text
        out = r.json()
        assert (out["error_code"], out["topic_name"], out["partition_id"]) == (200, topic, 0), out
        offsets.append(out["offset"])
    assert offsets == [0, 1, 2]
    assert out["timestamp"] == "2026-01-02T03:04:05.678Z"
    assert r.json()["value"] == {"type": "STRING", "size": 1}
    # Streaming mode: two JSON objects in one body, one answer line each.
    stream = '{"value": {"data": 1}} {"value": {"type": "STRING", "data": "two"}}'
    r = requests.post(url, data=stream, headers=JSON, timeout=TIMEOUT)
    assert [json.loads(line)["offset"] for line in r.text.splitlines()] == [3, 4], r.text

    group = f"g-{topic}"
    c = Consumer({"bootstrap.servers": rest.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe([topic])
    got = []
    deadline = time.monotonic() + 15
    while len(got) < 5 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got.append(m)
    assert len(got) == 5, [m.value() for m in got]
    assert (got[0].key(), got[0].value()) == (b"k1", b'{"n":1}')
    assert got[1].value() == b"\x00\xffbin" and got[1].headers() == [("h", b"hv")]
    assert got[2].timestamp()[1] == 1767323045678
    c.commit(message=got[2], asynchronous=False)  # committed offset 3

    # A Kafka producer's records show up in the group's lag over REST.
    p = Producer({"bootstrap.servers": rest.bootstrap})
    for i in range(3):
        p.produce(topic, value=f"k{i}".encode(), partition=0)
    assert p.flush(10) == 0
    g = requests.get(f"{rest.v3}/consumer-groups/{group}", timeout=TIMEOUT).json()
    assert (g["consumer_group_id"], g["is_simple"]) == (group, False), g
    members = requests.get(f"{rest.v3}/consumer-groups/{group}/consumers", timeout=TIMEOUT).json()["data"]
    assert len(members) == 1
    lags = requests.get(f"{rest.v3}/consumer-groups/{group}/lags", timeout=TIMEOUT).json()["data"]
    assert [(l["partition_id"], l["current_offset"], l["log_end_offset"], l["lag"]) for l in lags] == [(0, 3, 8, 5)]
    assert lags[0]["consumer_id"] == members[0]["consumer_id"]
    summary = requests.get(f"{rest.v3}/consumer-groups/{group}/lag-summary", timeout=TIMEOUT).json()
    assert (summary["max_lag"], summary["total_lag"], summary["max_lag_topic_name"]) == (5, 5, topic)
    listed = requests.get(f"{rest.v3}/consumer-groups", timeout=TIMEOUT).json()["data"]
    assert group in [x["consumer_group_id"] for x in listed]
    c.close()


def test_error_shapes(rest, topic):
    url = f"{rest.v3}/topics"
    assert_error(requests.post(url, data="{not json", headers=JSON, timeout=TIMEOUT), 400)
    assert_error(requests.post(url, json={"partitions_count": 1}, timeout=TIMEOUT), 422)
    assert_error(requests.post(url, data='{"topic_name": "x"}', headers={"Content-Type": "text/plain"},
                               timeout=TIMEOUT), 415)
    huge = b'{"topic_name": "' + b"x" * (17 * 1024 * 1024) + b'"}'
    assert_error(requests.post(url, data=huge, headers=JSON, timeout=30), 413)
    assert_error(requests.get(f"{url}/{topic}", timeout=TIMEOUT), 404, 40403)
    record = {"value": {"type": "STRING", "data": "x"}}
    assert_error(requests.post(f"{url}/{topic}/records", json=record, timeout=TIMEOUT), 404, 40403)
    assert_error(requests.get(f"{rest.base}/v3/clusters/nope/topics", timeout=TIMEOUT), 404, 40403)
    assert_error(requests.get(f"{rest.v3}/consumer-groups/no-such-group", timeout=TIMEOUT), 404, 40403)
    assert_error(requests.get(f"{rest.base}/v3/nothing-here", timeout=TIMEOUT), 404)
    assert create(rest, topic).status_code == 201
    bad = {"partition_id": 7, **record}
    assert_error(requests.post(f"{url}/{topic}/records", json=bad, timeout=TIMEOUT), 404, 40403)
    bad = {"value": {"type": "BINARY", "data": "***"}}
    assert_error(requests.post(f"{url}/{topic}/records", json=bad, timeout=TIMEOUT), 400)


def test_every_route_conforms_to_the_served_openapi_document(rest, tmp_path):
    doc = requests.get(f"{rest.base}/v3/openapi.json", timeout=TIMEOUT).json()
    assert doc == requests.get(f"{rest.base}/openapi.json", timeout=TIMEOUT).json()
    assert create(rest, "st-known").status_code == 201
    instance = {"name": "st-instance", "consumer.request.timeout.ms": "0"}
    r = requests.post(f"{rest.base}/consumers/st-group", json=instance, timeout=TIMEOUT)
    assert r.status_code == 200, r.text
    # createTopic is left out of the fuzzing (generated partition counts up to the broker's budget would
    # create thousands of partitions), and deleteTopic and deleteConsumerInstance (they would delete the topic
    # and the v2 consumer instance the others use), and subscribe (each subscription's group join waits out
    # group.initial.rebalance.delay.ms while holding the instance); the tests above and test_rest_consumer.py
    # check their answers.
    # The real cluster id, a real topic and a real consumer instance as path parameters, so requests reach past
    # the 404s.
    config = tmp_path / "schemathesis.toml"
    broker_id = requests.get(f"{rest.v3}/brokers", timeout=TIMEOUT).json()["data"][0]["broker_id"]
    config.write_text(f'[parameters]\n"path.cluster_id" = "{rest.cluster}"\n"path.topic_name" = "st-known"\n'
                      f'"path.partition_id" = "0"\n"path.broker_id" = "{broker_id}"\n'
                      f'"path.group" = "st-group"\n"path.instance" = "st-instance"\n"query.timeout" = "0"\n')
    argv = [sys.executable, "-m", "schemathesis.cli", "--config-file", str(config), "run",
            f"{rest.base}/v3/openapi.json",
            "--checks", "not_a_server_error,response_schema_conformance",
            "--max-examples", "6", "--exclude-operation-id", "createTopic",
            "--exclude-operation-id", "deleteTopic", "--exclude-operation-id", "deleteConsumerInstance",
            "--exclude-operation-id", "subscribe",
            "--phases", "examples,fuzzing", "--seed", "1", "--workers", "2",
            "--request-timeout", "10", "--no-color"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=40, cwd=tmp_path)
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-2000:]
