"""The metrics and health endpoint (issue 17): `metrics.listeners`, scraped while real clients produce and
consume. Counters move by exactly what the clients did, consumer lag is the end offset minus the committed
offset, and UnderReplicatedPartitions follows a follower's kill -9 and restart in a three-process cluster."""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from conftest import MODE, BrokerProcess
from test_dynamic_quorum import wait_until

pytestmark = pytest.mark.skipif(MODE != "runnel", reason="Runnel's own metrics endpoint")

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$')


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def scrape(port: int) -> dict[tuple[str, frozenset], float]:
    status, text = get(port, "/metrics")
    assert status == 200, text
    out = {}
    for line in text.splitlines():
        m = SAMPLE.match(line)
        if not m:
            continue
        labels = frozenset(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


def value(samples, name: str, **labels) -> float | None:
    return samples.get((name, frozenset((k, str(v)) for k, v in labels.items())))


@pytest.fixture(scope="module")
def metrics_broker():
    # Appended records are flushed within a second: LogFlushRateAndTimeMs moves.
    b = BrokerProcess({"num.partitions": "1", "log.flush.interval.ms": "1000"}).start()
    yield b
    b.close()


def test_health_routes_answer_and_unknown_paths_are_404(metrics_broker):
    port = metrics_broker.metrics_port
    assert get(port, "/health/live") == (200, '{"status":"live"}')
    status, body = get(port, "/health/ready")
    assert (status, json.loads(body)["status"]) == (200, "ready")
    assert get(port, "/nope")[0] == 404


def test_counters_move_by_what_the_clients_did_and_lag_is_end_minus_committed(metrics_broker, topic):
    from confluent_kafka import Consumer, Producer, TopicPartition
    port, bootstrap = metrics_broker.metrics_port, metrics_broker.bootstrap
    n, committed_at = 500, 200
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True})
    for i in range(n):
        p.produce(topic, value=b"v%05d" % i)
    assert p.flush(30) == 0
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    c.commit(offsets=[TopicPartition(topic, 0, committed_at)], asynchronous=False)
    c.close()

    s = scrape(port)
    assert value(s, "kafka_server_brokertopicmetrics_messagesin_total", topic=topic) == n
    # Bytes in are the record batches appended: exactly the log's size (one segment, no recompression).
    size = value(s, "kafka_log_log_size", topic=topic, partition=0)
    assert size and value(s, "kafka_server_brokertopicmetrics_bytesin_total", topic=topic) == size
    assert value(s, "kafka_log_log_logendoffset", topic=topic, partition=0) == n
    assert value(s, "kafka_log_log_numlogsegments", topic=topic, partition=0) == 1
    group = f"g-{topic}"
    assert value(s, "kafka_consumergroup_current_offset", consumergroup=group, topic=topic, partition=0) \
        == committed_at
    assert value(s, "kafka_consumergroup_lag", consumergroup=group, topic=topic, partition=0) == n - committed_at
    assert value(s, "kafka_network_requestmetrics_errors_total", request="Produce", error="NONE") >= 1
    assert value(s, "kafka_network_requestmetrics_totaltimems", request="Produce", quantile="0.99") is not None
    assert value(s, "kafka_server_replicamanager_underreplicatedpartitions") == 0
    assert value(s, "kafka_server_replicamanager_leadercount") >= 1
    assert value(s, "process_resident_memory_bytes") > 0
    # The log cleaner looked for work at start (no compacted log: nothing dirty) and has cleaned nothing.
    assert value(s, "kafka_log_logcleanermanager_max_dirty_percent") == 0
    assert value(s, "kafka_log_logcleaner_cleans_total") == 0
    flush = "kafka_log_logflushstats_logflushrateandtimems"
    wait_until(lambda: (value(scrape(port), f"{flush}_count") or 0) >= 1, "a timed log flush", 10)
    assert value(scrape(port), flush, quantile="0.99") >= 0

    # A consumer reading everything moves BytesOut by the record bytes it fetched: at least the log.
    before = value(s, "kafka_server_brokertopicmetrics_bytesout_total", topic=topic) or 0
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"read-{topic}", "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, 0, 0)])
    got = 0
    deadline = time.monotonic() + 30
    while got < n and time.monotonic() < deadline:
        m = c.poll(1.0)
        got += m is not None and m.error() is None
    c.close()
    assert got == n
    after = value(scrape(port), "kafka_server_brokertopicmetrics_bytesout_total", topic=topic)
    assert after - before >= size


def test_a_bad_metrics_listener_stops_the_broker_with_the_key_named(tmp_path):
    b = BrokerProcess({"metrics.listeners": "127.0.0.1:9644"})
    try:
        with pytest.raises(pytest.fail.Exception) as e:
            b.start()
        assert "metrics.listeners" in str(e.value)
    finally:
        b.close()


def test_under_replicated_partitions_follow_a_follower_kill9_and_restart(topic):
    from test_cluster import Cluster, create_topic
    c = Cluster().start()
    try:
        create_topic(c, topic)
        leader = c.partition(topic).leader
        follower = next(i for i in c.nodes if i != leader)
        port = c.nodes[leader].metrics_port

        def urp():
            return value(scrape(port), "kafka_server_replicamanager_underreplicatedpartitions")

        assert urp() == 0
        c.nodes[follower].kill9()
        wait_until(lambda: urp() == 1, "UnderReplicatedPartitions 1 after the follower's kill -9", 30)
        assert value(scrape(port), "kafka_cluster_partition_underreplicated", topic=topic, partition=0) == 1
        assert value(scrape(port), "kafka_server_replicamanager_isrshrinks_total") >= 1
        c.nodes[follower].start()
        wait_until(lambda: urp() == 0, "UnderReplicatedPartitions back to 0 after the restart", 30)
        assert value(scrape(port), "kafka_server_replicamanager_isrexpands_total") >= 1
        # Exactly one active controller among the three.
        active = sum(value(scrape(n.metrics_port), "kafka_controller_kafkacontroller_activecontrollercount")
                     for n in c.nodes.values())
        assert active == 1
    finally:
        c.close()


class JsonLogBroker(BrokerProcess):
    """A runnel broker started with `--log-format json`."""

    def argv(self) -> list[str]:
        argv = super().argv()
        return argv[:2] + ["--log-format", "json"] + argv[2:]


@pytest.mark.skipif(MODE != "runnel", reason="runnel's own log format")
def test_json_logs_carry_the_request_context(topic):
    """Every line of `--log-format json` is one JSON object; an event a request handler logs (here the topic
    creation) carries that request's API, client id, principal, listener and peer in `span`."""
    from confluent_kafka.admin import AdminClient, NewTopic
    b = JsonLogBroker({})
    try:
        b.start()
        a = AdminClient({"bootstrap.servers": b.bootstrap, "client.id": "json-log-test"})
        a.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
        lines = [ln for ln in b.log_path.read_text().splitlines() if ln.startswith("{")]
        records = [json.loads(ln) for ln in lines]
        assert records and all({"timestamp", "level", "target"} <= r.keys() for r in records), lines[:3]
        created = [r for r in records if r.get("message") == "created topic" and r.get("topic") == topic]
        assert created, f"no 'created topic' event for {topic}: {lines[-5:]}"
        span = created[0].get("span", {})
        assert span.get("api") == "CreateTopics" and span.get("client_id") == "json-log-test", span
        assert span.get("principal") == "ANONYMOUS" and span.get("listener") == "PLAINTEXT", span
        assert "127.0.0.1" in span.get("peer", ""), span
    finally:
        b.close()


@pytest.fixture(scope="module")
def metrics_cluster():
    """A three-node cluster (each node broker and controller) shared by the tests below."""
    from test_cluster import Cluster
    c = Cluster().start()
    yield c
    c.close()


REBALANCES = "kafka_server_group_coordinator_metrics_group_completed_rebalance_count"


def test_lag_of_a_partition_led_elsewhere_rebalances_and_metadata_offsets_per_broker(metrics_cluster, topic):
    """A group's coordinator hosting no replica of the partition the group committed to exports its lag all
    the same: the end offset it asked the leader for (ListOffsets) minus the committed offset. It also counts
    the group's completed rebalance; the active controller exports each broker's heartbeat metadata offset."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic
    c = metrics_cluster
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    group = f"lag-{topic}"
    coordinator = admin.describe_consumer_groups([group])[group].result(30).coordinator.id
    leader = next(i for i in c.nodes if i != coordinator)
    one_replica = NewTopic(topic, 1, replica_assignment=[[leader]], config={"min.insync.replicas": "1"})
    admin.create_topics([one_replica])[topic].result(30)
    assert c.partition(topic).leader == leader
    n, committed_at = 300, 120
    p = Producer({"bootstrap.servers": c.bootstrap, "linger.ms": 5})
    for i in range(n):
        p.produce(topic, value=b"v%05d" % i)
    assert p.flush(30) == 0
    cons = Consumer({"bootstrap.servers": c.bootstrap, "group.id": group, "enable.auto.commit": False,
                     "auto.offset.reset": "earliest"})
    try:
        cons.subscribe([topic])
        deadline = time.monotonic() + 30
        while not cons.assignment() and time.monotonic() < deadline:
            cons.poll(0.2)
        assert cons.assignment(), "the group's first rebalance did not complete in 30 s"
        cons.commit(offsets=[TopicPartition(topic, 0, committed_at)], asynchronous=False)
    finally:
        cons.close()

    port = c.nodes[coordinator].metrics_port
    labels = {"consumergroup": group, "topic": topic, "partition": 0}
    # The coordinator asks the leaders every 5 s.
    wait_until(lambda: value(scrape(port), "kafka_consumergroup_lag", **labels) == n - committed_at,
               f"lag {n - committed_at} on the coordinator (broker {coordinator}, leader {leader})", 15)
    s = scrape(port)
    assert value(s, "kafka_consumergroup_current_offset", **labels) == committed_at
    assert value(s, REBALANCES, consumergroup=group) == 1
    assert value(s, REBALANCES) >= 1

    def active_controller_samples():
        for node in c.nodes.values():
            s = scrape(node.metrics_port)
            if value(s, "kafka_controller_kafkacontroller_activecontrollercount") == 1:
                return s
    s = wait_until(active_controller_samples, "an active controller", 10)
    for b in c.nodes:
        assert value(s, "kafka_controller_kafkacontroller_brokermetadataoffset", broker=b) > 0, b
        assert value(s, "kafka_controller_kafkacontroller_brokermetadatalag", broker=b) >= 0, b


DEPLOY = Path(__file__).resolve().parent.parent / "deploy"
SELECTOR = re.compile(r'\b((?:kafka|process)_[a-z0-9_]+)(?:\{([^}]*)\})?')
MATCHER = re.compile(r'(\w+)\s*(=~|!=|!~|=)\s*"([^"]*)"')


def shipped_exprs() -> list[tuple[str, str]]:
    """(where, PromQL) of every Grafana panel target and Prometheus alert in deploy/."""
    import yaml
    dash = json.loads((DEPLOY / "grafana" / "runnel-dashboard.json").read_text())
    out = [(f"panel '{p['title']}'", t["expr"]) for p in dash["panels"] for t in p["targets"]]
    rules = yaml.safe_load((DEPLOY / "prometheus" / "runnel-alerts.yml").read_text())
    out += [(f"alert {r['alert']}", r["expr"]) for g in rules["groups"] for r in g["rules"]]
    return out


def selector_matches(series: frozenset, matchers: list[tuple[str, str, str]]) -> bool:
    labels = dict(series)
    for name, op, want in matchers:
        have = labels.get(name, "")
        ok = {"=": have == want, "!=": have != want, "=~": re.fullmatch(want, have) is not None,
              "!~": re.fullmatch(want, have) is None}[op]
        if not ok:
            return False
    return True


def test_the_shipped_dashboard_and_alerts_use_only_metrics_a_live_cluster_exports(metrics_cluster, topic):
    """deploy/grafana/runnel-dashboard.json and deploy/prometheus/runnel-alerts.yml: every metric a panel or an
    alert selects, with its label matchers, is among the series a three-node cluster exports after a produce
    and a consumer group's commits (what an operator's Prometheus would scrape from every node)."""
    from confluent_kafka import Consumer

    from test_cluster import Stream, create_topic
    c = metrics_cluster
    create_topic(c, topic)
    s = Stream(c.bootstrap, topic)
    s.until_acked(500)
    s.finish()
    group = f"dash-{topic}"
    cons = Consumer({"bootstrap.servers": c.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                     "enable.auto.commit": False})
    cons.subscribe([topic])
    got = 0
    deadline = time.monotonic() + 60
    while got < 100 and time.monotonic() < deadline:
        m = cons.poll(0.5)
        if m is not None and m.error() is None:
            got += 1
    cons.commit(asynchronous=False)
    cons.close()
    assert got >= 100, f"consumed only {got}"

    def exported():
        series: dict[str, list[frozenset]] = {}
        for n in c.nodes.values():
            for (name, labels) in scrape(n.metrics_port):
                series.setdefault(name, []).append(labels)
        return series
    wait_until(lambda: "kafka_consumergroup_lag" in exported(), "the group's lag series", 30)
    series = exported()
    missing = []
    for where, expr in shipped_exprs():
        selectors = SELECTOR.findall(expr)
        assert selectors, f"{where}: no metric in {expr!r}"
        for name, matchers in selectors:
            wanted = MATCHER.findall(matchers)
            if not any(selector_matches(ls, wanted) for ls in series.get(name, [])):
                missing.append(f"{where}: {name}{{{matchers}}}")
    assert not missing, "selectors matching no exported series:\n" + "\n".join(missing)
