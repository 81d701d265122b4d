"""Incremental fetch sessions (KIP-227) against the real broker.

Raw wire (Fetch v11, tests/kproto.py): a full fetch at epoch 0 creates a session; an incremental fetch with no
new data answers no partitions, new data on one partition answers only that one, forgotten partitions leave the
session, a wrong epoch is INVALID_FETCH_SESSION_EPOCH (71), an unknown id FETCH_SESSION_ID_NOT_FOUND (70), epoch
-1 closes the session. With one slot, a follower's session evicts a consumer's, whose next full fetch gets no
session (id 0) but all its partitions. Then the Java client (kafka-clients 4.4.0, Fetch v17 with topic ids)
consuming a 1,000-partition topic: while idle its Fetch requests are incremental (the broker's session gauges and
the request-size summary show it), and after a broker restart (sessions lost: error 70, then a full fetch) it
goes on consuming with no record lost or duplicated.
"""

from __future__ import annotations

import subprocess
import threading
import time

import pytest

import kproto as k
from conftest import MODE, ROOT, make_topic, new_broker
from test_dynamic_quorum import wait_until
from test_metrics import scrape, value

pytestmark = pytest.mark.skipif(MODE != "runnel", reason="Runnel's metrics show the sessions")

JAVA_LIB = ROOT / "tests" / "java" / "target" / "lib"
CACHE = "kafka_server_fetchsessioncache"
NOT_FOUND, INVALID_EPOCH, TOPIC_ID_ERROR = 70, 71, 106


def produce_one(conn, topic: str, partition: int, value_: bytes):
    res = k.produce(conn, topic, partition, k.encode_batch([k.Record(None, value_)]))
    assert res.error == 0, f"produce to {topic}-{partition}: error {res.error}"


def answered(f: k.SessionFetch) -> list[int]:
    return [p.partition for _, p in f.partitions]


@pytest.fixture
def own_broker(request):
    """A broker of the test's own (`request.param`: extra config), so its session metrics are the test's."""
    b = new_broker(getattr(request, "param", None))
    yield b
    b.close()


def test_session_on_the_wire(own_broker, topic):
    bs = own_broker.bootstrap
    make_topic(bs, topic, 3)
    parts = [(0, 0), (1, 0), (2, 0)]
    with k.Connection(bs) as c:
        produce_one(c, topic, 0, b"a")
        full = k.session_fetch(c, 0, 0, [(topic, parts)])
        assert full.error == 0 and full.session_id > 0, full
        assert answered(full) == [0, 1, 2]
        sid = full.session_id
        # The consumer moved past its record on partition 0: nothing else changed.
        inc = k.session_fetch(c, sid, 1, [(topic, [(0, 1)])])
        assert (inc.error, inc.session_id, inc.partitions) == (0, sid, [])
        inc = k.session_fetch(c, sid, 2, [])
        assert (inc.error, inc.session_id, inc.partitions) == (0, sid, [])
        # New data on partition 2 only.
        produce_one(c, topic, 2, b"b")
        inc = k.session_fetch(c, sid, 3, [])
        assert inc.error == 0 and answered(inc) == [2], inc
        (_, p2), = inc.partitions
        assert p2.high_watermark == 1 and [r.value for b in p2.batches() for r in b.records] == [b"b"]
        inc = k.session_fetch(c, sid, 4, [(topic, [(2, 1)])])
        assert inc.partitions == []
        # Forgotten partitions leave the session: new data there is not answered.
        inc = k.session_fetch(c, sid, 5, [], forgotten=[(topic, [1, 2])])
        assert inc.partitions == []
        produce_one(c, topic, 1, b"c")
        inc = k.session_fetch(c, sid, 6, [])
        assert inc.partitions == []
        # ... while partition 0, still in it, is.
        produce_one(c, topic, 0, b"d")
        inc = k.session_fetch(c, sid, 7, [])
        assert answered(inc) == [0]
        # A wrong epoch, an unknown id.
        bad = k.session_fetch(c, sid, 99, [])
        assert (bad.error, bad.session_id, bad.partitions) == (INVALID_EPOCH, 0, [])
        unknown = sid + 1 if sid < 2**31 - 1 else 1
        bad = k.session_fetch(c, unknown, 1, [])
        assert (bad.error, bad.session_id, bad.partitions) == (NOT_FOUND, 0, [])
        # The refusals left the session at its epoch; epoch -1 then closes it (a sessionless full fetch).
        inc = k.session_fetch(c, sid, 8, [(topic, [(0, 2)])])
        assert (inc.error, inc.session_id) == (0, sid)
        closing = k.session_fetch(c, sid, -1, [(topic, [(0, 2)])])
        assert (closing.error, closing.session_id, answered(closing)) == (0, 0, [0])
        bad = k.session_fetch(c, sid, 9, [])
        assert bad.error == NOT_FOUND
    m = scrape(own_broker.metrics_port)
    assert value(m, f"{CACHE}_numincrementalfetchsessions") == 0


def test_session_cannot_change_its_use_of_topic_ids(broker, topic):
    """A session made by Fetch v11 (topic names) used by Fetch v13 (topic ids), and the reverse:
    FETCH_SESSION_TOPIC_ID_ERROR (106), the session kept at its epoch."""
    make_topic(broker.bootstrap, topic, 1)
    with k.Connection(broker.bootstrap) as c:
        by_name = k.session_fetch(c, 0, 0, [(topic, [(0, 0)])])
        assert by_name.error == 0 and by_name.session_id > 0
        assert k.session_fetch_v13_empty(c, by_name.session_id, 1) == (TOPIC_ID_ERROR, 0)
        assert k.session_fetch(c, by_name.session_id, 1, []).error == 0
        err, by_id = k.session_fetch_v13_empty(c, 0, 0)
        assert err == 0 and by_id > 0
        wrong = k.session_fetch(c, by_id, 1, [])
        assert (wrong.error, wrong.session_id) == (TOPIC_ID_ERROR, 0)
        # Kept at epoch 1: its incremental fetch is accepted, and closes it, as it holds no partition.
        assert k.session_fetch_v13_empty(c, by_id, 1) == (0, 0)
        assert k.session_fetch_v13_empty(c, by_id, 2) == (NOT_FOUND, 0)
        # Epoch -1 closes a session.
        assert k.session_fetch(c, by_name.session_id, -1, []).session_id == 0
        assert k.session_fetch(c, by_name.session_id, 2, []).error == NOT_FOUND


@pytest.mark.parametrize("own_broker", [{"max.incremental.fetch.session.cache.slots": "1"}], indirect=True)
def test_follower_session_evicts_consumer_session(own_broker, topic):
    bs = own_broker.bootstrap
    make_topic(bs, topic, 2)
    parts = [(topic, [(0, 0), (1, 0)])]
    with k.Connection(bs) as c:
        consumer = k.session_fetch(c, 0, 0, parts)
        assert consumer.error == 0 and consumer.session_id > 0
        # A (privileged) follower's session takes the only slot: its partitions are answered with errors
        # (broker 2 is no replica here), but the session is made.
        follower = k.session_fetch(c, 0, 0, parts, replica_id=2)
        assert follower.error == 0 and follower.session_id > 0, follower
        assert follower.session_id != consumer.session_id
        # The consumer's session is gone; its new full fetch is answered in full, without a session.
        gone = k.session_fetch(c, consumer.session_id, 1, [])
        assert gone.error == NOT_FOUND
        again = k.session_fetch(c, 0, 0, parts)
        assert (again.error, again.session_id, answered(again)) == (0, 0, [0, 1])
    m = scrape(own_broker.metrics_port)
    assert value(m, f"{CACHE}_numincrementalfetchsessions") == 1
    assert value(m, f"{CACHE}_numincrementalfetchpartitionscached") == 2
    assert value(m, f"{CACHE}_incrementalfetchsessionevictions_total") == 1


JAVA_CONSUMER = r'''
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

public class SessionConsumer {
    public static void main(String[] a) {
        Properties p = new Properties();
        p.put("bootstrap.servers", a[0]);
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        p.put("enable.auto.commit", "false");
        p.put("fetch.max.wait.ms", "100");
        p.put("reconnect.backoff.max.ms", "500");
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < Integer.parseInt(a[2]); i++) tps.add(new TopicPartition(a[1], i));
            c.assign(tps);
            c.seekToBeginning(tps);
            System.out.println("ready");
            System.out.flush();
            while (true) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    System.out.println("rec " + r.partition() + " " + r.offset() + " " + r.value());
                }
                System.out.flush();
            }
        }
    }
}
'''


class JavaConsumer:
    """The Java client assigned every partition of `topic` from the beginning; its records are collected
    from its stdout (one `rec <partition> <offset> <value>` line each). Killed by PID."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, workdir):
        if not JAVA_LIB.exists():
            pytest.fail("tests/java not built: run scripts/install-test-deps.sh (scripts/test.sh does)")
        src = workdir / "SessionConsumer.java"
        src.write_text(JAVA_CONSUMER)
        self.err_path = workdir / "consumer.err"
        err = open(self.err_path, "wb")
        argv = ["java", "-XX:TieredStopAtLevel=1", "-cp", f"{JAVA_LIB}/*", str(src), bootstrap, topic,
                str(partitions)]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL,
                                     text=True)
        err.close()
        self.ready = threading.Event()
        self.records: list[tuple[int, int, str]] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            line = line.strip()
            if line == "ready":
                self.ready.set()
            elif line.startswith("rec "):
                _, p, off, v = line.split(" ", 3)
                with self.lock:
                    self.records.append((int(p), int(off), v))

    def values(self) -> list[str]:
        with self.lock:
            return [v for _, _, v in self.records]

    def wait_for(self, n: int, what: str, timeout: float = 90.0):
        def enough():
            assert self.proc.poll() is None, f"consumer exited {self.proc.returncode}: {self.stderr()}"
            return len(self.values()) >= n
        wait_until(enough, f"{what}: {n} records (have {len(self.values())})", timeout=timeout, interval=0.2)

    def stderr(self) -> str:
        return self.err_path.read_text(errors="replace")[-3000:]

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def fetch_request_bytes(port: int) -> tuple[float, float]:
    """(sum, count) of the consumers' Fetch request sizes on the broker."""
    m = scrape(port)
    name = "kafka_network_requestmetrics_requestbytes"
    s = value(m, f"{name}_sum", request="FetchConsumer") or 0.0
    n = value(m, f"{name}_count", request="FetchConsumer") or 0.0
    return s, n


def produce_round(bs: str, topic: str, partitions, tag: str) -> list[str]:
    values = []
    with k.Connection(bs) as c:
        for p in partitions:
            v = f"{tag}-{p}"
            produce_one(c, topic, p, v.encode())
            values.append(v)
    return values


def test_java_consumer_uses_incremental_fetches_and_survives_restart(own_broker, topic, tmp_path):
    bs, port = own_broker.bootstrap, own_broker.metrics_port
    n = 1000
    make_topic(bs, topic, n)
    first = produce_round(bs, topic, range(0, n, 50), "before")
    consumer = JavaConsumer(bs, topic, n, tmp_path)
    try:
        assert consumer.ready.wait(60), f"consumer not ready: {consumer.stderr()}"
        consumer.wait_for(len(first), "records before the restart")

        # Idle: a session of all 1,000 partitions, and small (incremental) Fetch requests.
        def session_cached():
            m = scrape(port)
            return (value(m, f"{CACHE}_numincrementalfetchsessions") or 0) >= 1 and \
                value(m, f"{CACHE}_numincrementalfetchpartitionscached") == n
        wait_until(session_cached, "a 1,000-partition fetch session", timeout=30, interval=0.2)
        s0, c0 = fetch_request_bytes(port)
        wait_until(lambda: fetch_request_bytes(port)[1] >= c0 + 5, "5 more idle Fetch requests",
                   timeout=30, interval=0.2)
        s1, c1 = fetch_request_bytes(port)
        mean = (s1 - s0) / (c1 - c0)
        # A full Fetch v17 of 1,000 partitions is over 30 KB; an idle incremental one is under 200 bytes.
        assert mean < 500, f"idle Fetch requests average {mean:.0f} bytes: not incremental"
        print(f"Java consumer, 1,000 partitions, idle Fetch request: {mean:.0f} bytes on average")

        # A restart loses the session: error 70, a full fetch, a new session; consuming goes on.
        own_broker.restart()
        second = produce_round(bs, topic, range(25, n, 50), "after")
        # A last record on the partition fetched last: once it is in, a duplicate would have been too.
        end = produce_round(bs, topic, [n - 1], "end")
        consumer.wait_for(len(first) + len(second) + 1, "records after the restart", timeout=120)
        got = consumer.values()
        assert sorted(got) == sorted(first + second + end), "records lost or duplicated"
        keys = [(p, off) for p, off, _ in consumer.records]
        assert len(set(keys)) == len(keys), "a (partition, offset) delivered twice"
        wait_until(session_cached, "a new session after the restart", timeout=30, interval=0.2)
    finally:
        consumer.kill()


def test_followers_replicate_through_incremental_sessions(topic):
    """A three-node cluster: every leader holds its followers' sessions, idle follower Fetch requests are
    incremental (small), and records produced with acks=all reach every replica's log."""
    from confluent_kafka import Producer
    from test_cluster import Cluster, create_topic

    partitions = 60
    c = Cluster().start()
    try:
        create_topic(c, topic, partitions=partitions)
        nodes = list(c.nodes.values())

        def follower_sessions():
            return all((value(scrape(n.metrics_port), f"{CACHE}_numincrementalfetchsessions") or 0) >= 2
                       for n in nodes)
        wait_until(follower_sessions, "two follower sessions on every leader", timeout=30, interval=0.2)

        def follower_fetch_bytes(n):
            m = scrape(n.metrics_port)
            name = "kafka_network_requestmetrics_requestbytes"
            return (value(m, f"{name}_sum", request="FetchFollower") or 0.0,
                    value(m, f"{name}_count", request="FetchFollower") or 0.0)
        # Once the partitions settled (the first rounds add them), idle follower Fetch requests are small:
        # a full one (20 partitions a leader) is over 700 bytes, an idle incremental one under 100.
        last = {n.node_id: follower_fetch_bytes(n) for n in nodes}
        means = {}

        def idle_fetches_small():
            now = {n.node_id: follower_fetch_bytes(n) for n in nodes}
            if any(now[i][1] < last[i][1] + 4 for i in now):
                return False  # a window of at least 4 requests on every leader
            for i, (s1, c1) in now.items():
                (s0, c0) = last[i]
                means[i] = (s1 - s0) / (c1 - c0)
            last.update(now)
            return all(m < 300 for m in means.values())
        wait_until(lambda: idle_fetches_small() and means, "small idle follower Fetch requests", timeout=30,
                   interval=0.5)

        per_partition = 10
        p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all", "linger.ms": 5})
        failed = []
        for i in range(per_partition * partitions):
            p.produce(topic, f"v{i}".encode(), partition=i % partitions,
                      on_delivery=lambda err, _m: err and failed.append(err))
        assert p.flush(60) == 0 and not failed, failed

        def replicated():
            for n in nodes:
                m = scrape(n.metrics_port)
                for q in range(partitions):
                    leo = value(m, "kafka_log_log_logendoffset", topic=topic, partition=q)
                    if leo != per_partition:
                        return False
            return True
        wait_until(replicated, f"{per_partition} records in every replica of every partition", timeout=60,
                   interval=0.2)
    finally:
        c.close()
