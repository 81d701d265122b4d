"""The HTTP API's consume half (issue 17): Confluent REST Proxy API v2 consumer instances, driven with
`requests` against the real broker — records produced by a Kafka client (confluent_kafka) read through a
subscription (classic group protocol, range assignor) or a manual assignment, offsets committed and seen by
the v3 lag routes, and the v2 error shapes."""

from __future__ import annotations

import base64
import json
import time

import pytest
import requests
from confluent_kafka import Producer

from conftest import MODE, BrokerProcess, assert_rest_error as assert_error

pytestmark = pytest.mark.skipif(MODE != "runnel", reason="Runnel's own HTTP API")

V2 = {"Content-Type": "application/vnd.kafka.v2+json"}
BINARY = {"Accept": "application/vnd.kafka.binary.v2+json"}
JSON_FORMAT = {"Accept": "application/vnd.kafka.json.v2+json"}
TIMEOUT = 10


@pytest.fixture(scope="module")
def rest():
    # No initial rebalance delay: a group's first JoinGroup answers at once.
    b = BrokerProcess({"num.partitions": "1", "group.initial.rebalance.delay.ms": "0"}).start()
    b.base = f"http://127.0.0.1:{b.metrics_port}"
    b.cluster = requests.get(f"{b.base}/v3/clusters", timeout=TIMEOUT).json()["data"][0]["cluster_id"]
    b.v3 = f"{b.base}/v3/clusters/{b.cluster}"
    yield b
    b.close()


def make_topic(rest, name: str, partitions: int):
    body = {"topic_name": name, "partitions_count": partitions, "replication_factor": 1}
    r = requests.post(f"{rest.v3}/topics", json=body, timeout=30)
    assert r.status_code == 201, r.text


def produce(rest, topic: str, records: list[tuple[int, bytes, bytes]]):
    p = Producer({"bootstrap.servers": rest.bootstrap})
    for partition, key, value in records:
        p.produce(topic, key=key, value=value, partition=partition)
    assert p.flush(10) == 0


def new_instance(rest, group: str, **config) -> str:
    r = requests.post(f"{rest.base}/consumers/{group}", json=config, headers=V2, timeout=TIMEOUT)
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"] == "application/vnd.kafka.v2+json"
    body = r.json()
    assert body["base_uri"] == f"{rest.base}/consumers/{group}/instances/{body['instance_id']}"
    return body["base_uri"]


def poll(uri: str, accept: dict, want: int, deadline_s: float = 8) -> list[dict]:
    """Records calls (each waiting up to 500 ms) until `want` records arrived or the deadline passed."""
    got: list[dict] = []
    deadline = time.monotonic() + deadline_s
    while len(got) < want and time.monotonic() < deadline:
        r = requests.get(f"{uri}/records?timeout=500", headers=accept, timeout=TIMEOUT)
        assert r.status_code == 200, r.text
        assert r.headers["Content-Type"] == accept["Accept"]
        got += r.json()
    return got


def test_subscribe_read_commit_and_delete(rest, topic):
    make_topic(rest, topic, 2)
    produce(rest, topic, [(i % 2, f"k{i}".encode(), json.dumps({"n": i}).encode()) for i in range(6)])
    group = f"g-{topic}"
    uri = new_instance(rest, group, name="a", format="binary", **{"auto.offset.reset": "earliest",
                                                                   "auto.commit.enable": "false"})
    dup = requests.post(f"{rest.base}/consumers/{group}", json={"name": "a"}, headers=V2, timeout=TIMEOUT)
    assert_error(dup, 409, 40902)
    r = requests.post(f"{uri}/subscription", json={"topics": [topic]}, headers=V2, timeout=TIMEOUT)
    assert r.status_code == 204, r.text
    assert requests.get(f"{uri}/subscription", timeout=TIMEOUT).json() == {"topics": [topic]}

    got = poll(uri, BINARY, 6)
    assert sorted((m["partition"], m["offset"]) for m in got) == [(p, o) for p in (0, 1) for o in range(3)]
    for m in got:
        n = json.loads(base64.b64decode(m["value"]))["n"]
        assert (m["topic"], base64.b64decode(m["key"]), n % 2) == (topic, f"k{n}".encode(), m["partition"])
    assigned = requests.get(f"{uri}/assignments", timeout=TIMEOUT).json()["partitions"]
    assert assigned == [{"topic": topic, "partition": 0}, {"topic": topic, "partition": 1}]
    # A json Accept header for a binary instance: 406.
    assert_error(requests.get(f"{uri}/records", headers=JSON_FORMAT, timeout=TIMEOUT), 406, 40601)

    # Nothing committed yet (auto-commit off); an empty commit commits the positions.
    assert requests.get(f"{uri}/offsets", timeout=TIMEOUT).json() == {"offsets": []}
    assert requests.post(f"{uri}/offsets", headers=V2, timeout=TIMEOUT).status_code == 200
    # A POST without a JSON content type is refused, body or not (what a cross-site form or no-cors fetch sends).
    assert_error(requests.post(f"{uri}/offsets", headers={"Content-Type": "text/plain"}, timeout=TIMEOUT), 415)
    offsets = requests.get(f"{uri}/offsets", timeout=TIMEOUT).json()["offsets"]
    assert [(o["partition"], o["offset"]) for o in offsets] == [(0, 3), (1, 3)]
    lags = requests.get(f"{rest.v3}/consumer-groups/{group}/lags", timeout=TIMEOUT).json()["data"]
    assert [(l["partition_id"], l["current_offset"], l["lag"]) for l in lags] == [(0, 3, 0), (1, 3, 0)]
    consumers = requests.get(f"{rest.v3}/consumer-groups/{group}/consumers", timeout=TIMEOUT).json()["data"]
    assert len(consumers) == 1 and lags[0]["consumer_id"] == consumers[0]["consumer_id"]

    assert requests.delete(uri, timeout=TIMEOUT).status_code == 204
    assert_error(requests.get(f"{uri}/subscription", timeout=TIMEOUT), 404, 40403)
    g = requests.get(f"{rest.v3}/consumer-groups/{group}", timeout=TIMEOUT).json()
    assert g["state"] == "EMPTY", g  # the instance left its group


def test_json_format_and_auto_commit(rest, topic):
    make_topic(rest, topic, 1)
    produce(rest, topic, [(0, b'"k"', json.dumps({"n": i, "s": "é"}).encode()) for i in range(3)])
    group = f"g-{topic}"
    uri = new_instance(rest, group, format="json", **{"auto.offset.reset": "earliest"})
    r = requests.post(f"{uri}/subscription", json={"topic_pattern": f"{topic[:-3]}.*"}, headers=V2,
                      timeout=TIMEOUT)
    assert r.status_code == 204, r.text
    got = poll(uri, JSON_FORMAT, 3)
    assert [(m["key"], m["value"], m["offset"]) for m in got] == [("k", {"n": i, "s": "é"}, i) for i in range(3)]
    assert requests.get(f"{uri}/subscription", timeout=TIMEOUT).json() == {"topics": [topic]}
    # Auto-commit: the records call committed the positions.
    body = {"partitions": [{"topic": topic, "partition": 0}]}
    offsets = requests.get(f"{uri}/offsets", json=body, timeout=TIMEOUT).json()["offsets"]
    assert offsets == [{"topic": topic, "partition": 0, "offset": 3, "metadata": ""}]
    assert requests.delete(f"{uri}/subscription", timeout=TIMEOUT).status_code == 204
    assert requests.get(f"{uri}/assignments", timeout=TIMEOUT).json() == {"partitions": []}
    assert requests.delete(uri, timeout=TIMEOUT).status_code == 204


def test_assignment_positions_and_explicit_commit(rest, topic):
    make_topic(rest, topic, 2)
    produce(rest, topic, [(0, b"k", f"v{i}".encode()) for i in range(5)])
    group = f"g-{topic}"
    uri = new_instance(rest, group, format="string", **{"auto.commit.enable": "false"})
    p0 = {"topic": topic, "partition": 0}
    assert requests.post(f"{uri}/assignments", json={"partitions": [p0]}, headers=V2,
                         timeout=TIMEOUT).status_code == 204
    # auto.offset.reset is latest: nothing until the position moves to the beginning.
    string = {"Accept": "application/vnd.kafka.string.v2+json"}
    assert requests.get(f"{uri}/records?timeout=0", headers=string, timeout=TIMEOUT).json() == []
    r = requests.post(f"{uri}/positions/beginning", json={"partitions": [p0]}, headers=V2, timeout=TIMEOUT)
    assert r.status_code == 204, r.text
    assert [m["value"] for m in poll(uri, string, 5)] == [f"v{i}" for i in range(5)]
    seek = {"offsets": [{**p0, "offset": 3}]}
    assert requests.post(f"{uri}/positions", json=seek, headers=V2, timeout=TIMEOUT).status_code == 204
    assert [m["offset"] for m in poll(uri, string, 2)] == [3, 4]
    # max_bytes: at least one record, then no more than the budget (3 bytes per record: "k" and "vN").
    requests.post(f"{uri}/positions/beginning", json={"partitions": [p0]}, headers=V2, timeout=TIMEOUT)
    r = requests.get(f"{uri}/records?timeout=1000&max_bytes=7", headers=string, timeout=TIMEOUT)
    assert [m["offset"] for m in r.json()] == [0, 1], r.text
    assert requests.post(f"{uri}/positions/end", json={"partitions": [p0]}, headers=V2,
                         timeout=TIMEOUT).status_code == 204
    assert requests.get(f"{uri}/records?timeout=0", headers=string, timeout=TIMEOUT).json() == []

    # An explicit commit stores the offset after the one named (the last record processed).
    commit = {"offsets": [{**p0, "offset": 1, "metadata": "m"}]}
    assert requests.post(f"{uri}/offsets", json=commit, headers=V2, timeout=TIMEOUT).status_code == 200
    offsets = requests.get(f"{uri}/offsets", timeout=TIMEOUT).json()["offsets"]
    assert offsets == [{**p0, "offset": 2, "metadata": "m"}]

    # A subscription beside a manual assignment, a seek on an unassigned partition: 409 40903.
    r = requests.post(f"{uri}/subscription", json={"topics": [topic]}, headers=V2, timeout=TIMEOUT)
    assert_error(r, 409, 40903)
    seek = {"offsets": [{"topic": topic, "partition": 1, "offset": 0}]}
    assert_error(requests.post(f"{uri}/positions", json=seek, headers=V2, timeout=TIMEOUT), 409, 40903)
    assert requests.delete(uri, timeout=TIMEOUT).status_code == 204


def test_two_instances_share_a_group(rest, topic):
    make_topic(rest, topic, 2)
    group = f"g-{topic}"
    uris = [new_instance(rest, group, name=n) for n in ("a", "b")]
    for uri in uris:
        requests.post(f"{uri}/subscription", json={"topics": [topic]}, headers=V2, timeout=TIMEOUT)
    # The second join rebalances the first (its heartbeat sees REBALANCE_IN_PROGRESS and rejoins); the range
    # assignor then gives each one partition (which one follows the coordinator's member ids).
    deadline = time.monotonic() + 8
    while time.monotonic() < deadline:
        for uri in uris:
            requests.get(f"{uri}/records?timeout=100", headers=BINARY, timeout=TIMEOUT)
        got = [requests.get(f"{uri}/assignments", timeout=TIMEOUT).json()["partitions"] for uri in uris]
        if sorted(p["partition"] for ps in got for p in ps) == [0, 1] and all(len(ps) == 1 for ps in got):
            break
    assert sorted(p["partition"] for ps in got for p in ps) == [0, 1] and all(len(ps) == 1 for ps in got), got
    consumers = requests.get(f"{rest.v3}/consumer-groups/{group}/consumers", timeout=TIMEOUT).json()["data"]
    assert len(consumers) == 2
    for uri in uris:
        assert requests.delete(uri, timeout=TIMEOUT).status_code == 204


def test_error_shapes(rest, topic):
    base = f"{rest.base}/consumers/g-{topic}"
    missing = f"{base}/instances/nope"
    assert_error(requests.get(f"{missing}/records", headers=BINARY, timeout=TIMEOUT), 404, 40403)
    assert_error(requests.delete(missing, timeout=TIMEOUT), 404, 40403)
    assert_error(requests.post(f"{missing}/offsets", headers=V2, timeout=TIMEOUT), 404, 40403)
    assert_error(requests.post(base, json={"format": "avro"}, headers=V2, timeout=TIMEOUT), 422, 42204)
    assert_error(requests.post(base, json={"name": "a/b"}, headers=V2, timeout=TIMEOUT), 422, 42204)
    assert_error(requests.post(base, data="{not json", headers=V2, timeout=TIMEOUT), 400)
    uri = new_instance(rest, f"g-{topic}")
    assert_error(requests.post(f"{uri}/subscription", data="{not json", headers=V2, timeout=TIMEOUT), 400)
    assert_error(requests.post(f"{uri}/subscription", json={}, headers=V2, timeout=TIMEOUT), 422)
    for pattern in ("(", "t)|(zzz"):  # the second would escape the anchoring group
        bad = {"topic_pattern": pattern, "topics": None}
        assert_error(requests.post(f"{uri}/subscription", json=bad, headers=V2, timeout=TIMEOUT), 422)
    assert_error(requests.post(f"{uri}/subscription", data='{"topics": ["t"]}',
                               headers={"Content-Type": "text/plain"}, timeout=TIMEOUT), 415)
    assert_error(requests.get(f"{uri}/records?timeout=x", headers=BINARY, timeout=TIMEOUT), 400)
    assert requests.delete(uri, timeout=TIMEOUT).status_code == 204
