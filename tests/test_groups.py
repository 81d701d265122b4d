"""Consumer groups (issue 3) with real clients, plus pitfalls 9 and 10 over raw sockets.

Every group member is its own OS process (so that `kill -9` is real), started from the MEMBER script below,
reporting on stdout as JSON lines: its current assignment whenever it changes, and each record it consumed
*after* the synchronous commit of that record succeeded (a failed commit seeks back, so the record is consumed
again by whoever owns the partition next). "Exactly once across the group" is then: every produced
(partition, offset) is reported exactly once by the union of members.

Clients: confluent-kafka (librdkafka) with `range` and with `cooperative-sticky`, kafka-python (`range`), and
the Java client (kafka-clients from tests/java/target/lib, the member launched as a single-file Java program)
for the rebalance test.

The brokers run with `group.initial.rebalance.delay.ms=0` (runnel via --set; scripts/kafka-reference.sh
configures Kafka the same way) and members use Kafka's minimum session timeout, 6 s, so the kill -9 test takes
about that long. Run against Apache Kafka 4.4.0 with RUNNEL_TEST_BROKER=kafka.
RUNNEL_TEST_CLIENT_DEBUG=kafka.coordinator (comma-separated logger names) turns on kafka-python members' debug
logging into their stderr files under pytest's tmp_path.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import kproto  # noqa: E402
from conftest import EXTERNAL, MODE, ROOT, BrokerProcess, make_topic  # noqa: E402



SESSION_MS = 6000  # Kafka's group.min.session.timeout.ms default: the smallest session a member may ask for
WAIT_S = 45  # bound for "the group becomes stable" (joins + sync; no fixed delays are expected)
JAVA_LIB = ROOT / "tests" / "java" / "target" / "lib"

# KIP-848 groups: the member session the classic tests ask for, and a heartbeat interval a test can wait out.
GROUP_SETS = {"group.initial.rebalance.delay.ms": "0", "group.consumer.session.timeout.ms": str(SESSION_MS),
              "group.consumer.heartbeat.interval.ms": "1000"}


# ---------------------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def gbroker():
    """A broker for this module: runnel with group.initial.rebalance.delay.ms=0 (Kafka is configured so by
    kafka-reference.sh), or the external one."""
    if MODE == "external":
        from conftest import ExternalBroker
        yield ExternalBroker(EXTERNAL)
        return
    b = BrokerProcess(GROUP_SETS).start()
    yield b
    b.close()


@pytest.fixture
def fresh_gbroker():
    if MODE == "external":
        pytest.skip("needs a broker started by the tests (RUNNEL_TEST_BOOTSTRAP is set)")
    b = BrokerProcess(GROUP_SETS).start()
    yield b
    b.close()


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


# ---------------------------------------------------------------------------------------------- members
MEMBER = r'''
import json, signal, sys, time
cfg = json.loads(sys.argv[1])
stop = False
def _term(*_):
    global stop
    stop = True
signal.signal(signal.SIGTERM, _term)
import os
if os.environ.get("RUNNEL_TEST_CLIENT_DEBUG"):
    import logging
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(threadName)s %(name)s %(message)s")
    for n in os.environ["RUNNEL_TEST_CLIENT_DEBUG"].split(","):
        logging.getLogger(n).setLevel(logging.DEBUG)

def emit(**ev):
    sys.stdout.write(json.dumps(ev) + "\n")
    sys.stdout.flush()

last = None
def report(parts):
    global last
    s = sorted(parts)
    if s != last:
        last = s
        emit(ev="assign", parts=s)

limit = cfg.get("max_records") or 0
done = 0
if cfg["client"] == "confluent":
    from confluent_kafka import Consumer, TopicPartition
    conf = {
        "bootstrap.servers": cfg["bootstrap"], "group.id": cfg["group"],
        "auto.offset.reset": "earliest", "enable.auto.commit": False,
    }
    if cfg["strategy"] == "consumer":
        # KIP-848: the broker assigns; session and heartbeat come from the broker's group.consumer.* configs.
        conf["group.protocol"] = "consumer"
    else:
        conf.update({"session.timeout.ms": cfg["session_ms"], "heartbeat.interval.ms": 1000,
                     "partition.assignment.strategy": cfg["strategy"]})
    if cfg.get("instance"):
        conf["group.instance.id"] = cfg["instance"]
    c = Consumer(conf)
    c.subscribe([cfg["topic"]])
    emit(ev="ready")
    while not stop and not (limit and done >= limit):
        m = c.poll(0.1)
        report(tp.partition for tp in c.assignment())
        if m is None or m.error():
            continue
        try:
            c.commit(offsets=[TopicPartition(m.topic(), m.partition(), m.offset() + 1)], asynchronous=False)
        except Exception as e:
            emit(ev="commit_failed", p=m.partition(), o=m.offset(), error=str(e))
            try:
                c.seek(TopicPartition(m.topic(), m.partition(), m.offset()))
            except Exception:
                pass
            continue
        done += 1
        emit(ev="rec", p=m.partition(), o=m.offset())
    c.close()
else:
    from kafka import KafkaConsumer, OffsetAndMetadata
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.consumer import ConsumerCoordinator
    # kafka-python 3.0.x client race (not a broker behaviour): when poll() times out while a JoinGroup/SyncGroup
    # round trip that the leader started for a metadata change is in flight, and that round trip completes
    # before the next poll(), the leader's own assignment makes need_rejoin() False, so the finished join is
    # never consumed: heartbeats stay disabled and the member silently drops out of the group while its poll()
    # keeps running. kafka-python 2.x guarded this with `_rejoin_incomplete()` (a pending join future); restore
    # that check. Seen against runnel and possible against Kafka (its SyncGroup answers a few ms later, which
    # makes the window rarer). See README.md, "Client quirks the tests work around".
    _need_rejoin = ConsumerCoordinator.need_rejoin
    ConsumerCoordinator.need_rejoin = lambda self: (
        _need_rejoin(self) or getattr(self, "_join_task", None) is not None)
    c = KafkaConsumer(
        bootstrap_servers=cfg["bootstrap"], group_id=cfg["group"], auto_offset_reset="earliest",
        enable_auto_commit=False, session_timeout_ms=cfg["session_ms"], heartbeat_interval_ms=1000,
        partition_assignment_strategy=[RangePartitionAssignor])
    c.subscribe([cfg["topic"]])
    emit(ev="ready")
    while not stop and not (limit and done >= limit):
        batches = c.poll(timeout_ms=100)
        report(tp.partition for tp in c.assignment())
        for tp, recs in batches.items():
            for r in recs:
                if limit and done >= limit:
                    c.seek(tp, r.offset)
                    break
                try:
                    c.commit({tp: OffsetAndMetadata(r.offset + 1, "", -1)})
                except Exception as e:
                    emit(ev="commit_failed", p=tp.partition, o=r.offset, error=repr(e))
                    c.seek(tp, r.offset)
                    break
                done += 1
                emit(ev="rec", p=tp.partition, o=r.offset)
    c.close()
emit(ev="closed")
'''

JAVA_MEMBER = r'''
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class GroupMember {
    static void emit(String s) { System.out.println(s); System.out.flush(); }
    public static void main(String[] a) {
        Properties p = new Properties();
        p.put("bootstrap.servers", a[0]);
        p.put("group.id", a[1]);
        p.put("auto.offset.reset", "earliest");
        p.put("enable.auto.commit", "false");
        if (a.length > 4 && a[4].equals("consumer")) {
            // KIP-848: the broker assigns; the session and heartbeat interval are the broker's.
            p.put("group.protocol", "consumer");
        } else {
            p.put("session.timeout.ms", a[3]);
            p.put("heartbeat.interval.ms", "1000");
            p.put("partition.assignment.strategy", "org.apache.kafka.clients.consumer.RangeAssignor");
        }
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
            c.subscribe(List.of(a[2]));
            emit("{\"ev\": \"ready\"}");
            String last = null;
            while (true) {
                ConsumerRecords<byte[], byte[]> rs = c.poll(Duration.ofMillis(100));
                List<Integer> parts = new ArrayList<>();
                for (TopicPartition tp : c.assignment()) parts.add(tp.partition());
                Collections.sort(parts);
                String now = parts.toString();
                if (!now.equals(last)) { last = now; emit("{\"ev\": \"assign\", \"parts\": " + now + "}"); }
                outer:
                for (TopicPartition tp : rs.partitions()) {
                    for (ConsumerRecord<byte[], byte[]> r : rs.records(tp)) {
                        try {
                            c.commitSync(Map.of(tp, new OffsetAndMetadata(r.offset() + 1)));
                        } catch (Exception e) {
                            emit("{\"ev\": \"commit_failed\", \"p\": " + tp.partition() + ", \"o\": " + r.offset() + "}");
                            c.seek(tp, r.offset());
                            continue outer;
                        }
                        emit("{\"ev\": \"rec\", \"p\": " + tp.partition() + ", \"o\": " + r.offset() + "}");
                    }
                }
            }
        }
    }
}
'''


class Group:
    """The member processes of one test, and what they reported."""

    def __init__(self, bootstrap: str, topic: str, group: str, tmp: Path):
        self.bootstrap, self.topic, self.group, self.tmp = bootstrap, topic, group, tmp
        self.cond = threading.Condition()
        self.members: list[Member] = []

    def add(self, client: str, strategy: str = "range", instance: str | None = None,
            session_ms: int = SESSION_MS, max_records: int = 0, name: str | None = None) -> "Member":
        m = Member(self, name or f"m{len(self.members)}", client, strategy, instance, session_ms, max_records)
        self.members.append(m)
        return m

    def alive(self):
        return [m for m in self.members if m.alive()]

    def wait(self, pred, timeout: float, what: str):
        deadline = time.monotonic() + timeout
        with self.cond:
            while not pred():
                left = deadline - time.monotonic()
                if left <= 0:
                    pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}; members:\n{self.describe()}")
                self.cond.wait(min(left, 0.5))

    def describe(self) -> str:
        return "\n".join(f"  {m.name} ({m.client}, pid {m.proc.pid}, alive={m.alive()}): assignment "
                         f"{sorted(m.assignment)}, {len(m.records)} records, last events {m.events[-4:]}; "
                         f"stderr tail: {m.stderr_tail()}" for m in self.members)

    def stable(self, members, partitions: int) -> bool:
        """Every given member owns at least one partition, no partition twice, all partitions owned."""
        owned = [p for m in members for p in m.assignment]
        return (all(m.assignment for m in members) and len(owned) == len(set(owned))
                and set(owned) == set(range(partitions)))

    def wait_stable(self, members, partitions: int, timeout: float = WAIT_S) -> float:
        t0 = time.monotonic()
        self.wait(lambda: self.stable(members, partitions), timeout,
                  f"{len(members)} members to own {partitions} partitions exactly once")
        return time.monotonic() - t0

    def consumed(self) -> Counter:
        c = Counter()
        for m in self.members:
            c.update(m.records)
        return c

    def close(self):
        for m in self.members:
            m.stop()


class Member:
    def __init__(self, group: Group, name, client, strategy, instance, session_ms, max_records):
        self.g, self.name, self.client = group, name, client
        self.assignment: set[int] = set()
        self.assign_events = 0
        self.records: list[tuple[int, int]] = []
        self.events: list[dict] = []
        self.closed = False
        self.ready = False
        self.stderr_path = group.tmp / f"{name}-{uuid.uuid4().hex[:6]}.stderr"
        err = open(self.stderr_path, "wb")
        if client == "java":
            src = group.tmp / "GroupMember.java"
            if not src.exists():
                src.write_text(JAVA_MEMBER)
            argv = ["java", "-XX:TieredStopAtLevel=1", "-cp", f"{JAVA_LIB}/*", str(src), group.bootstrap,
                    group.group, group.topic, str(session_ms), strategy]
        else:
            cfg = dict(client=client, bootstrap=group.bootstrap, group=group.group, topic=group.topic,
                       strategy=strategy, instance=instance, session_ms=session_ms, max_records=max_records)
            argv = [sys.executable, "-c", MEMBER, json.dumps(cfg)]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL,
                                     text=True)
        err.close()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            line = line.strip()
            if not line.startswith("{"):
                continue
            ev = json.loads(line)
            with self.g.cond:
                self.events.append(ev)
                if ev["ev"] == "assign":
                    self.assignment = set(ev["parts"])
                    self.assign_events += 1
                elif ev["ev"] == "rec":
                    self.records.append((ev["p"], ev["o"]))
                elif ev["ev"] == "ready":
                    self.ready = True
                elif ev["ev"] == "closed":
                    self.closed = True
                self.g.cond.notify_all()
        with self.g.cond:
            self.assignment = set()
            self.g.cond.notify_all()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stderr_tail(self, n: int = 300) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")[-n:].replace("\n", " | ")
        except OSError:
            return ""

    def kill9(self):
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self.reader.join(5)

    def stop(self, timeout: float = 30.0):
        """SIGTERM (the member closes its consumer, leaving the group), bounded wait, then SIGKILL."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(5)


def produce(bootstrap: str, topic: str, partitions: int, count: int, start: int = 0) -> set[tuple[int, int]]:
    """Produces `count` records round-robin over the partitions; returns their (partition, offset)s."""
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True})
    out, errors = set(), []

    def dr(err, msg):
        if err:
            errors.append(err)
        else:
            out.add((msg.partition(), msg.offset()))

    for i in range(start, start + count):
        p.produce(topic, value=f"v{i}".encode(), partition=i % partitions, on_delivery=dr)
        p.poll(0)
    assert p.flush(30) == 0, "produce did not finish within 30 s"
    assert not errors, errors
    return out


def start_members(g: Group, n: int, client: str, strategy: str):
    return [g.add(client, strategy) for _ in range(n)]


CLIENTS = [
    pytest.param("confluent", "range", id="librdkafka-range"),
    pytest.param("confluent", "cooperative-sticky", id="librdkafka-cooperative-sticky"),
    pytest.param("kafka-python", "range", id="kafka-python"),
    pytest.param("java", "range", id="java"),
    # KIP-848: the same tests with the consumer rebalance protocol (ConsumerGroupHeartbeat).
    pytest.param("confluent", "consumer", id="librdkafka-kip848"),
    pytest.param("java", "consumer", id="java-kip848"),
]


def need_client(client: str):
    if client == "java" and not JAVA_LIB.is_dir():
        pytest.skip("tests/java not built (scripts/install-test-deps.sh builds it)")


# ---------------------------------------------------------------------------------------------- client tests
@pytest.mark.parametrize("client,strategy", CLIENTS)
def test_three_members_then_a_fourth_exactly_once(gbroker, client, strategy, tmp_path):
    """Three members share 6 partitions; a fourth joins and the partitions are redistributed; with synchronous
    commits every record is consumed exactly once across the group."""
    need_client(client)
    topic, group = unique("grp"), unique("g")
    make_topic(gbroker.bootstrap, topic, 6)
    produced = produce(gbroker.bootstrap, topic, 6, 300)
    g = Group(gbroker.bootstrap, topic, group, tmp_path)
    try:
        t0 = time.monotonic()
        first = g.add(client, strategy)
        g.wait(lambda: first.records, WAIT_S, "the first record for a single member")
        t_first = time.monotonic() - t0
        members = [first] + start_members(g, 2, client, strategy)
        t_three = g.wait_stable(members, 6)
        fourth = g.add(client, strategy)
        t_four = g.wait_stable(members + [fourth], 6)
        produced |= produce(gbroker.bootstrap, topic, 6, 300, start=300)
        g.wait(lambda: set(g.consumed()) >= produced, WAIT_S, f"all {len(produced)} records consumed")
        counts = g.consumed()
        dups = {k: v for k, v in counts.items() if v > 1}
        assert not dups, f"records consumed more than once: {sorted(dups)[:20]}"
        assert set(counts) == produced
        print(f"\n[{client}/{strategy}] subscribe→first record (1 member) {t_first:.2f}s; "
              f"3 members stable {t_three:.2f}s later; 4th member redistributed in {t_four:.2f}s; "
              f"commit retries: {sum(1 for m in g.members for e in m.events if e['ev'] == 'commit_failed')}")
    finally:
        g.close()


@pytest.mark.parametrize("client,strategy", CLIENTS[:3] + CLIENTS[4:5])
def test_kill9_member_survivors_take_over(gbroker, client, strategy, tmp_path):
    """kill -9 of one member: the survivors own every partition within session timeout + rebalance time."""
    topic, group = unique("grpk"), unique("g")
    make_topic(gbroker.bootstrap, topic, 6)
    g = Group(gbroker.bootstrap, topic, group, tmp_path)
    try:
        members = start_members(g, 3, client, strategy)
        t_stable = g.wait_stable(members, 6)
        print(f"\n[{client}/{strategy}] three members started together own 6 partitions after {t_stable:.2f}s")
        victim, survivors = members[0], members[1:]
        t0 = time.monotonic()
        victim.kill9()
        bound = SESSION_MS / 1000 + 15
        took = g.wait_stable(survivors, 6, timeout=bound)
        total = time.monotonic() - t0
        print(f"\n[{client}/{strategy}] survivors own all partitions {total:.2f}s after kill -9 "
              f"(session timeout {SESSION_MS / 1000:.0f}s)")
        assert took <= bound
        # The survivors consume what arrives next.
        produced = produce(gbroker.bootstrap, topic, 6, 60)
        g.wait(lambda: set(g.consumed()) >= produced, WAIT_S, "records produced after the kill to be consumed")
    finally:
        g.close()


def test_broker_restart_group_resumes_from_committed_offsets(fresh_gbroker, tmp_path):
    """Commit part of a topic, restart the broker, and a new member of the group continues exactly at the
    committed offsets: nothing is re-read, nothing skipped."""
    b = fresh_gbroker
    topic, group = unique("grpr"), unique("g")
    make_topic(b.bootstrap, topic, 3)
    produced = produce(b.bootstrap, topic, 3, 90)
    g = Group(b.bootstrap, topic, group, tmp_path)
    first = g.add("confluent", "range", max_records=40)
    g.wait(lambda: first.closed, WAIT_S, "the first member to commit 40 records and close")
    first.stop()
    before = fetch_offsets_raw(b.bootstrap, group, topic, 3)
    b.restart()
    after = fetch_offsets_raw(b.bootstrap, group, topic, 3)
    assert after == before, f"committed offsets changed across the restart: {before} -> {after}"
    g2 = Group(b.bootstrap, topic, group, tmp_path)
    try:
        second = g2.add("confluent", "range")
        g2.wait(lambda: len(second.records) >= 50, WAIT_S, "the remaining 50 records")
        a, s = set(first.records), set(second.records)
        assert not (a & s), f"re-read after restart: {sorted(a & s)[:10]}"
        assert a | s == produced
        for p, off in before.items():
            mine = sorted(o for (pp, o) in s if pp == p)
            if mine:
                want = off if off >= 0 else 0  # nothing committed: auto.offset.reset=earliest
                assert mine[0] == want, f"partition {p}: resumed at {mine[0]}, committed {off}"
    finally:
        g2.close()


def test_static_member_restart_within_session_timeout_no_rebalance(gbroker, tmp_path):
    """KIP-345: a static member that restarts within its session timeout gets its old assignment back and the
    other member sees no rebalance."""
    topic, group = unique("grps"), unique("g")
    make_topic(gbroker.bootstrap, topic, 4)
    g = Group(gbroker.bootstrap, topic, group, tmp_path)
    try:
        a = g.add("confluent", "range", instance="inst-a", session_ms=15000, name="a")
        bm = g.add("confluent", "range", instance="inst-b", session_ms=15000, name="b")
        g.wait_stable([a, bm], 4)
        # Let the group settle (both members past their first sync) before taking the baseline.
        g.wait(lambda: a.ready and bm.ready, WAIT_S, "both members ready")
        a_parts, b_events = set(a.assignment), bm.assign_events
        t0 = time.monotonic()
        a.kill9()
        a2 = g.add("confluent", "range", instance="inst-a", session_ms=15000, name="a2")
        g.wait(lambda: a2.assignment == a_parts, WAIT_S, "the restarted static member to get its partitions back")
        took = time.monotonic() - t0
        # Absence of a rebalance can only be observed over time: give one would-be rebalance (heartbeat interval
        # 1 s → REBALANCE_IN_PROGRESS → rejoin) a bounded chance to show up.
        time.sleep(3)
        assert bm.assign_events == b_events and bm.assignment == set(range(4)) - a_parts, (
            f"the other member saw a rebalance: {bm.events[-5:]}")
        state, members = describe_group_raw(gbroker.bootstrap, group)
        assert state == "Stable" and len(members) == 2, (state, members)
        print(f"\n[static] restarted member had its partitions back {took:.2f}s after kill -9, no rebalance")
    finally:
        g.close()


# ---------------------------------------------------------------------------------------------- raw protocol
JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP, DESCRIBE_GROUPS, FIND_COORDINATOR = 11, 12, 13, 14, 15, 10
OFFSET_FETCH = 9
MEMBER_ID_REQUIRED, REBALANCE_IN_PROGRESS, UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION = 79, 27, 25, 22


def join_body(version: int, group: str, member_id: str, protocols, session_ms=SESSION_MS, rebalance_ms=None,
              instance=None, protocol_type="consumer") -> bytes:
    w = kproto.Writer().string(group).i32(session_ms)
    if version >= 1:
        w.i32(rebalance_ms if rebalance_ms is not None else session_ms)
    w.string(member_id)
    if version >= 5:
        w.string(instance)
    w.string(protocol_type).i32(len(protocols))
    for name, meta in protocols:
        w.string(name).bytes_(meta)
    return bytes(w.buf)


def join(conn, version, group, member_id, protocols, **kw) -> dict:
    r = conn.request(JOIN_GROUP, version, join_body(version, group, member_id, protocols, **kw))
    if version >= 2:
        r.i32()
    out = dict(error=r.i16(), generation=r.i32(), protocol=r.string(), leader=r.string(), member_id=r.string())
    members = []
    for _ in range(r.i32()):
        mid = r.string()
        iid = r.string() if version >= 5 else None
        members.append((mid, iid, r.bytes_()))
    out["members"] = members
    return out


def sync(conn, group, generation, member_id, assignments=(), version=3) -> tuple[int, bytes | None]:
    w = kproto.Writer().string(group).i32(generation).string(member_id)
    if version >= 3:
        w.string(None)
    w.i32(len(assignments))
    for mid, data in assignments:
        w.string(mid).bytes_(data)
    r = conn.request(SYNC_GROUP, version, bytes(w.buf))
    if version >= 1:
        r.i32()
    return r.i16(), r.bytes_()


def heartbeat(conn, group, generation, member_id) -> int:
    w = kproto.Writer().string(group).i32(generation).string(member_id).string(None)
    r = conn.request(HEARTBEAT, 3, bytes(w.buf))
    r.i32()
    return r.i16()


def describe_group_raw(bootstrap, group):
    with kproto.Connection(bootstrap) as c:
        w = kproto.Writer().i32(1).string(group).i8(0)
        r = c.request(DESCRIBE_GROUPS, 3, bytes(w.buf))
        r.i32()
        assert r.i32() == 1
        err, gid, state, ptype, pdata = r.i16(), r.string(), r.string(), r.string(), r.string()
        assert err == 0, f"DescribeGroups error {err}"
        members = []
        for _ in range(r.i32()):
            members.append(dict(member_id=r.string(), client_id=r.string(), host=r.string(),
                                metadata=r.bytes_(), assignment=r.bytes_()))
        return state, members


def fetch_offsets_raw(bootstrap, group, topic, partitions, timeout=30.0) -> dict[int, int]:
    """OffsetFetch v5 (retrying COORDINATOR_LOAD_IN_PROGRESS / NOT_AVAILABLE) → {partition: offset}."""
    deadline = time.monotonic() + timeout
    while True:
        with kproto.Connection(bootstrap) as c:
            w = kproto.Writer().string(group).i32(1).string(topic).i32(partitions)
            for p in range(partitions):
                w.i32(p)
            r = c.request(OFFSET_FETCH, 5, bytes(w.buf))
            r.i32()
            out = {}
            for _ in range(r.i32()):
                r.string()
                for _ in range(r.i32()):
                    p, off, _epoch, _meta, err = r.i32(), r.i64(), r.i32(), r.string(), r.i16()
                    out[p] = (off, err)
            top = r.i16()
        if top in (14, 15, 16) and time.monotonic() < deadline:
            time.sleep(0.1)
            continue
        assert top == 0, f"OffsetFetch error {top}"
        assert all(e == 0 for _, e in out.values()), out
        return {p: o for p, (o, _) in out.items()}


def find_coordinator_raw(bootstrap, group):
    with kproto.Connection(bootstrap) as c:
        r = c.request(FIND_COORDINATOR, 1, bytes(kproto.Writer().string(group).i8(0).buf))
        r.i32()
        return r.i16(), r.string(), r.i32(), r.string(), r.i32()


def wait_coordinator(bootstrap, group, timeout=30.0):
    """FindCoordinator until it answers (Kafka answers COORDINATOR_NOT_AVAILABLE while creating the topic)."""
    deadline = time.monotonic() + timeout
    while True:
        err, _msg, node, host, port = find_coordinator_raw(bootstrap, group)
        if err == 0:
            return node, host, port
        assert time.monotonic() < deadline, f"FindCoordinator error {err} for {timeout}s"
        time.sleep(0.1)


def join_until_ready(conn, version, group, member_id, protocols, timeout=30.0, **kw):
    """JoinGroup, retrying COORDINATOR_LOAD_IN_PROGRESS / COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR."""
    deadline = time.monotonic() + timeout
    while True:
        resp = join(conn, version, group, member_id, protocols, **kw)
        if resp["error"] not in (14, 15, 16) or time.monotonic() > deadline:
            return resp
        time.sleep(0.1)


@pytest.mark.pitfalls
def test_pitfall9_rebalance_with_several_members(gbroker):
    """JoinGroup v4+ with an empty member id → 79 and an id; one generation bump per rebalance; the leader gets
    every member's metadata; the protocol is one every member supports; SyncGroup gives each member its bytes
    (empty but present when it got nothing); a second member never gets UNKNOWN_MEMBER_ID."""
    group = unique("p9")
    wait_coordinator(gbroker.bootstrap, group)
    a_protocols = [("range", b"meta-a-range"), ("roundrobin", b"meta-a-rr")]
    b_protocols = [("roundrobin", b"meta-b-rr")]
    with kproto.Connection(gbroker.bootstrap) as ca, kproto.Connection(gbroker.bootstrap) as cb:
        first = join_until_ready(ca, 5, group, "", a_protocols)
        assert first["error"] == MEMBER_ID_REQUIRED and first["member_id"], first
        a_id = first["member_id"]
        ja = join(ca, 5, group, a_id, a_protocols)
        assert ja["error"] == 0 and ja["leader"] == a_id, ja
        gen1 = ja["generation"]
        assert sync(ca, group, gen1, a_id, [(a_id, b"assign-a")]) == (0, b"assign-a")

        # B joins: A learns about the rebalance from its heartbeat and rejoins.
        b_first = join(cb, 5, group, "", b_protocols)
        assert b_first["error"] == MEMBER_ID_REQUIRED, b_first
        b_id = b_first["member_id"]
        with ThreadPoolExecutor(2) as ex:
            fb = ex.submit(join, cb, 5, group, b_id, b_protocols)
            deadline = time.monotonic() + WAIT_S
            while heartbeat(ca, group, gen1, a_id) != REBALANCE_IN_PROGRESS:
                assert time.monotonic() < deadline, "A's heartbeat never reported the rebalance"
                time.sleep(0.05)
            fa = ex.submit(join, ca, 5, group, a_id, a_protocols)
            ra, rb = fa.result(WAIT_S), fb.result(WAIT_S)
        assert ra["error"] == 0 and rb["error"] == 0, (ra, rb)
        assert rb["error"] != UNKNOWN_MEMBER_ID
        assert ra["generation"] == rb["generation"] == gen1 + 1, "exactly one generation bump"
        assert ra["protocol"] == rb["protocol"] == "roundrobin", "the protocol every member supports"
        leader, follower = (ra, rb) if ra["leader"] == a_id else (rb, ra)
        assert leader["leader"] == follower["leader"]
        got = {mid: meta for mid, _iid, meta in leader["members"]}
        assert got == {a_id: b"meta-a-rr", b_id: b"meta-b-rr"}, got
        assert follower["members"] == []
        gen2 = ra["generation"]
        # The leader assigns bytes only to itself: the other member gets empty (not null) bytes.
        leader_conn, follower_conn = (ca, cb) if leader is ra else (cb, ca)
        leader_id, follower_id = leader["member_id"], follower["member_id"]
        with ThreadPoolExecutor(1) as ex:
            ff = ex.submit(sync, follower_conn, group, gen2, follower_id)
            assert sync(leader_conn, group, gen2, leader_id, [(leader_id, b"all")]) == (0, b"all")
            assert ff.result(WAIT_S) == (0, b""), "a member without assignment gets empty bytes, never null"
        assert heartbeat(ca, group, gen2, a_id) == 0
        assert heartbeat(cb, group, gen2, b_id) == 0
        assert heartbeat(cb, group, gen1, b_id) == ILLEGAL_GENERATION


@pytest.mark.pitfalls
def test_pitfall10_session_timeout_and_v0_rebalance_timeout(gbroker):
    """JoinGroup v0 has no rebalance timeout field: it is the session timeout (never -1, which would drop the v0
    member from every rebalance at once), so a v0 member that rejoins during a rebalance stays in the group.
    During the rebalance Heartbeat answers 27. A member silent for session_timeout_ms is removed and a
    rebalance starts."""
    group = unique("p10")
    wait_coordinator(gbroker.bootstrap, group)
    protocols = [("range", b"m")]
    with kproto.Connection(gbroker.bootstrap) as c0, kproto.Connection(gbroker.bootstrap) as c1:
        # v0 member: an empty member id is accepted directly (KIP-394 applies from v4).
        j0 = join_until_ready(c0, 0, group, "", protocols)
        assert j0["error"] == 0 and j0["member_id"], j0
        m0, gen = j0["member_id"], j0["generation"]
        assert sync(c0, group, gen, m0, [(m0, b"x")], version=0) == (0, b"x")
        first = join(c1, 5, group, "", protocols)
        assert first["error"] == MEMBER_ID_REQUIRED, first
        m1 = first["member_id"]
        with ThreadPoolExecutor(1) as ex:
            f1 = ex.submit(join, c1, 5, group, m1, protocols)
            deadline = time.monotonic() + WAIT_S
            code = None
            while time.monotonic() < deadline:
                code = heartbeat(c0, group, gen, m0)
                if code == REBALANCE_IN_PROGRESS:
                    break
                time.sleep(0.05)
            assert code == REBALANCE_IN_PROGRESS, f"heartbeat during the rebalance answered {code}"
            time.sleep(1.0)  # the v0 member takes its time to rejoin, well within its session timeout
            r0 = join(c0, 0, group, m0, protocols)
            r1 = f1.result(WAIT_S)
        assert r0["error"] == 0 and r1["error"] == 0, (r0, r1)
        assert r0["generation"] == r1["generation"] == gen + 1
        leader = r0 if r0["leader"] == m0 else r1
        assert sorted(m for m, _i, _meta in leader["members"]) == sorted([m0, m1]), leader
        gen2 = r0["generation"]
        with ThreadPoolExecutor(1) as ex:
            follower_conn, follower_id = (c1, m1) if leader is r0 else (c0, m0)
            leader_conn, leader_id = (c0, m0) if leader is r0 else (c1, m1)
            ff = ex.submit(sync, follower_conn, group, gen2, follower_id, (), 0 if follower_conn is c0 else 3)
            assert sync(leader_conn, group, gen2, leader_id, [(m0, b"a0"), (m1, b"a1")],
                        0 if leader_conn is c0 else 3)[0] == 0
            assert ff.result(WAIT_S)[0] == 0
        # Session timeout: m0 goes silent; m1 keeps heartbeating until it is told to rejoin.
        t_silent = time.monotonic()
        deadline = t_silent + SESSION_MS / 1000 + 15
        while (code := heartbeat(c1, group, gen2, m1)) == 0:
            assert time.monotonic() < deadline, "the silent member was never removed"
            time.sleep(0.2)
        took = time.monotonic() - t_silent
        assert code == REBALANCE_IN_PROGRESS, code
        assert SESSION_MS / 1000 - 1.5 <= took <= SESSION_MS / 1000 + 5, (
            f"silent member removed after {took:.1f}s, session timeout {SESSION_MS / 1000:.0f}s")
        r1 = join(c1, 5, group, m1, protocols)
        assert r1["error"] == 0 and r1["generation"] == gen2 + 1, r1
        assert [m for m, _i, _meta in r1["members"]] == [m1], r1
        assert heartbeat(c0, group, gen2, m0) == UNKNOWN_MEMBER_ID


# ---------------------------------------------------------------------------------------------- admin APIs
OFFSET_COMMIT, LIST_GROUPS = 8, 16


def commit_raw(conn, group, topic, partition, offset, metadata, generation=-1, member_id="") -> int:
    """OffsetCommit v7 of one partition → its error code."""
    w = (kproto.Writer().string(group).i32(generation).string(member_id).string(None).i32(1).string(topic)
         .i32(1).i32(partition).i64(offset).i32(-1).string(metadata))
    r = conn.request(OFFSET_COMMIT, 7, bytes(w.buf))
    r.i32()
    assert r.i32() == 1
    r.string()
    assert r.i32() == 1
    r.i32()
    return r.i16()


def fetch_groups_v8(conn, groups_topics):
    """OffsetFetch v8 (flexible) for several groups → {group: (error, {(topic, p): (offset, metadata)})}."""
    w = kproto.Writer().uvarint(len(groups_topics) + 1)
    for g, topic, parts in groups_topics:
        w.compact_string(g).uvarint(2).compact_string(topic).uvarint(len(parts) + 1)
        for p in parts:
            w.i32(p)
        w.tags().tags()
    w.i8(0).tags()
    r = conn.request(OFFSET_FETCH, 8, bytes(w.buf), flexible_header=True, flexible_response=True)
    r.i32()

    def cstr():
        n = r.uvarint()
        return None if n == 0 else r.raw(n - 1).decode()
    out = {}
    for _ in range(r.uvarint() - 1):
        gid = cstr()
        offsets = {}
        for _ in range(r.uvarint() - 1):
            t = cstr()
            for _ in range(r.uvarint() - 1):
                p, off, _epoch, meta, err = r.i32(), r.i64(), r.i32(), cstr(), r.i16()
                assert r.uvarint() == 0
                assert err == 0, err
                offsets[(t, p)] = (off, meta)
            assert r.uvarint() == 0
        err = r.i16()
        assert r.uvarint() == 0
        out[gid] = (err, offsets)
    return out


def find_coordinators_v4(conn, keys):
    """FindCoordinator v4 (batched keys, flexible) → [(key, node, error)]."""
    w = kproto.Writer().i8(0).uvarint(len(keys) + 1)
    for k in keys:
        w.compact_string(k)
    w.tags()
    r = conn.request(FIND_COORDINATOR, 4, bytes(w.buf), flexible_header=True, flexible_response=True)
    r.i32()
    out = []
    for _ in range(r.uvarint() - 1):
        key = r.raw(r.uvarint() - 1).decode()
        node = r.i32()
        r.raw(r.uvarint() - 1)  # host
        r.i32()
        err = r.i16()
        n = r.uvarint()
        if n:
            r.raw(n - 1)
        assert r.uvarint() == 0
        out.append((key, node, err))
    return out


GROUP_SUBSCRIBED_TO_TOPIC, OFFSET_DELETE = 86, 47


def offset_delete_raw(conn, group, topic, partition):
    """OffsetDelete v0 of one partition → (group error, partition error)."""
    w = kproto.Writer().string(group).i32(1).string(topic).i32(1).i32(partition)
    r = conn.request(OFFSET_DELETE, 0, bytes(w.buf))
    err = r.i16()
    r.i32()
    perr = None
    for _ in range(r.i32()):
        r.string()
        for _ in range(r.i32()):
            r.i32()
            perr = r.i16()
    return err, perr


def describe_v0(conn, group):
    r = conn.request(DESCRIBE_GROUPS, 0, bytes(kproto.Writer().i32(1).string(group).buf))
    assert r.i32() == 1
    return r.i16(), r.string(), r.string()


def leave_v0(conn, group, member_id) -> int:
    r = conn.request(LEAVE_GROUP, 0, bytes(kproto.Writer().string(group).string(member_id).buf))
    return r.i16()


def test_admin_apis_and_commits_outside_group_management(gbroker, tmp_path):
    """Commits from outside group management are stored for an empty group (metadata round-trips) and refused
    for an active one; OffsetFetch v8 answers several groups; ListGroups' states filter; DescribeGroups of an
    unknown group below v6; DeleteGroups / OffsetDelete refuse active groups and subscribed topics, then
    delete; LeaveGroup v0 carries the member's error at top level; FindCoordinator v4 batches keys."""
    from confluent_kafka import ConsumerGroupState
    from confluent_kafka.admin import AdminClient

    bs = gbroker.bootstrap
    topic, group, other = unique("adm"), unique("ga"), unique("gx")
    make_topic(bs, topic, 2)
    wait_coordinator(bs, group)
    admin = AdminClient({"bootstrap.servers": bs})
    with kproto.Connection(bs) as c:
        assert find_coordinators_v4(c, [group, other]) == [(group, 1, 0), (other, 1, 0)]
        assert commit_raw(c, group, topic, 0, 5, "meta-x") == 0
        assert commit_raw(c, group, topic, 1, 7, None) == 0
        got = fetch_groups_v8(c, [(group, topic, [0, 1]), (other, topic, [0])])
        assert got[group] == (0, {(topic, 0): (5, "meta-x"), (topic, 1): (7, "")}), got
        assert got[other] == (0, {(topic, 0): (-1, "")}), got
        assert describe_v0(c, other) == (0, other, "Dead")
        assert leave_v0(c, group, "no-such-member") == UNKNOWN_MEMBER_ID

    def listed(states):
        r = admin.list_consumer_groups(states=states, request_timeout=15).result()
        return {g.group_id for g in r.valid}
    assert group in listed({ConsumerGroupState.EMPTY})
    assert group not in listed({ConsumerGroupState.STABLE})

    g = Group(bs, topic, group, tmp_path)
    try:
        m = g.add("confluent", "range")
        g.wait_stable([m], 2)
        assert group in listed({ConsumerGroupState.STABLE})
        with kproto.Connection(bs) as c:
            assert commit_raw(c, group, topic, 0, 9, "x") == UNKNOWN_MEMBER_ID, "commit refused for active group"
        fut = admin.delete_consumer_groups([group], request_timeout=15)[group]
        with pytest.raises(Exception, match="NON_EMPTY_GROUP"):
            fut.result()
        with kproto.Connection(bs) as c:
            assert offset_delete_raw(c, group, topic, 0) == (0, GROUP_SUBSCRIBED_TO_TOPIC)
    finally:
        g.close()
    deadline = time.monotonic() + WAIT_S
    while describe_group_raw(bs, group)[0] != "Empty":
        assert time.monotonic() < deadline, "group not Empty after its only member closed"
        time.sleep(0.1)
    with kproto.Connection(bs) as c:
        assert offset_delete_raw(c, group, topic, 0) == (0, 0)
        assert fetch_groups_v8(c, [(group, topic, [0, 1])])[group][1] == {(topic, 0): (-1, ""), (topic, 1): (7, "")}
    admin.delete_consumer_groups([group], request_timeout=15)[group].result()
    assert group not in listed(set())
    with kproto.Connection(bs) as c:
        assert describe_v0(c, group) == (0, group, "Dead")


# ---------------------------------------------------------------------------------------------- break-test fixes
def commit_ready(bootstrap, group, topic, partition, offset, metadata=None) -> int:
    """commit_raw, retrying while the coordinator is still coming up (14/15/16: Kafka creates and loads
    `__consumer_offsets` on first use); bounded."""
    deadline = time.monotonic() + 60
    while True:
        with kproto.Connection(bootstrap) as c:
            find_coordinators_v4(c, [group])  # Kafka creates `__consumer_offsets` on FindCoordinator
            code = commit_raw(c, group, topic, partition, offset, metadata)
        if code not in (14, 15, 16) or time.monotonic() > deadline:
            return code
        time.sleep(0.2)


def committed_offsets(bootstrap, group, topic, partitions):
    from confluent_kafka import TopicPartition
    from confluent_kafka import ConsumerGroupTopicPartitions
    from confluent_kafka.admin import AdminClient
    a = AdminClient({"bootstrap.servers": bootstrap})
    req = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(partitions)])
    got = a.list_consumer_group_offsets([req])[group].result(30)
    return {tp.partition: tp.offset for tp in got.topic_partitions}


def test_deleted_topic_takes_its_committed_offsets_along(gbroker, tmp_path):
    """A topic deleted and re-created under the same name is read from its start by a group that had
    committed offsets for the old one (Kafka's onPartitionsDeleted): nothing of the new log is skipped."""
    from confluent_kafka.admin import AdminClient
    topic, group = unique("grpdel"), unique("g")
    make_topic(gbroker.bootstrap, topic, 2)
    assert commit_ready(gbroker.bootstrap, group, topic, 0, 500, "m") == 0
    assert commit_ready(gbroker.bootstrap, group, topic, 1, 7) == 0
    assert committed_offsets(gbroker.bootstrap, group, topic, 2) == {0: 500, 1: 7}
    a = AdminClient({"bootstrap.servers": gbroker.bootstrap})
    a.delete_topics([topic], operation_timeout=30)[topic].result(60)
    deadline = time.monotonic() + 30
    while topic in a.list_topics(timeout=10).topics:
        assert time.monotonic() < deadline, "topic still listed 30 s after deletion"
        time.sleep(0.1)
    make_topic(gbroker.bootstrap, topic, 2)
    assert committed_offsets(gbroker.bootstrap, group, topic, 2) == {0: -1001, 1: -1001}  # OFFSET_INVALID
    produced = produce(gbroker.bootstrap, topic, 2, 20)
    g = Group(gbroker.bootstrap, topic, group, tmp_path)
    try:
        m = g.add("confluent", "range")
        g.wait(lambda: set(m.records) >= produced, WAIT_S, "every record of the re-created topic")
    finally:
        g.close()


def test_commits_to_partitions_a_topic_does_not_have_are_refused(gbroker):
    """OffsetCommit for partition 7 of a 2-partition topic (or −1) is UNKNOWN_TOPIC_OR_PARTITION and nothing
    is stored, as in Kafka; the topic's real partitions in the same request are committed."""
    topic, group = unique("grpnp"), unique("g")
    make_topic(gbroker.bootstrap, topic, 2)
    assert commit_ready(gbroker.bootstrap, group, topic, 1, 9) == 0
    assert commit_ready(gbroker.bootstrap, group, topic, 7, 5) == 3
    assert commit_ready(gbroker.bootstrap, group, topic, -1, 5) == 3
    assert committed_offsets(gbroker.bootstrap, group, topic, 8) == {
        0: -1001, 1: 9, 2: -1001, 3: -1001, 4: -1001, 5: -1001, 6: -1001, 7: -1001}


def test_a_commit_too_large_to_store_is_refused_and_not_visible(gbroker):
    """A commit whose records exceed `__consumer_offsets`' max.message.bytes (400 partitions × 4,000-byte
    metadata ≈ 1.6 MB) gets UNKNOWN_SERVER_ERROR (−1, not retriable), as Kafka answers, and OffsetFetch keeps
    the previous commit — it never shows an offset that is not in the log."""
    topic, group = unique("grpbig"), unique("g")
    make_topic(gbroker.bootstrap, topic, 400)
    assert commit_ready(gbroker.bootstrap, group, topic, 0, 10) == 0
    with kproto.Connection(gbroker.bootstrap) as c:
        w = kproto.Writer().string(group).i32(-1).string("").string(None).i32(1).string(topic).i32(400)
        for p in range(400):
            w.i32(p).i64(20).i32(-1).string("x" * 4000)
        r = c.request(OFFSET_COMMIT, 7, bytes(w.buf))
        r.i32()
        assert r.i32() == 1
        r.string()
        codes = {r.i32(): r.i16() for _ in range(r.i32())}
    assert set(codes.values()) == {-1}, sorted(set(codes.values()))
    got = committed_offsets(gbroker.bootstrap, group, topic, 2)
    assert got == {0: 10, 1: -1001}, got


@pytest.mark.skipif(MODE != "runnel", reason="starts its own broker with group settings")
def test_group_settings_kafka_names_are_accepted_and_enforced():
    """`group.max.size`, `offset.metadata.max.bytes`, `offsets.retention.check.interval.ms` are Kafka broker
    keys: accepted at startup and applied (a second member of a group limited to one gets
    GROUP_MAX_SIZE_REACHED, 81; metadata over the limit is OFFSET_METADATA_TOO_LARGE, 12)."""
    b = BrokerProcess({**GROUP_SETS, "group.max.size": "1", "offset.metadata.max.bytes": "10",
                       "offsets.retention.check.interval.ms": "60000"}).start()
    try:
        topic, group = unique("grpmax"), unique("g")
        make_topic(b.bootstrap, topic, 1)
        protocols = [("range", b"\x00\x00\x00\x00\x00\x00\x00\x00")]  # consumer subscription v0, no topics
        with kproto.Connection(b.bootstrap) as c1, kproto.Connection(b.bootstrap) as c2:
            j = join(c1, 5, group, "", protocols)
            assert j["error"] == MEMBER_ID_REQUIRED, j
            j = join(c1, 5, group, j["member_id"], protocols)
            assert j["error"] == 0, j
            assert join(c2, 5, group, "", protocols)["error"] == 81  # GROUP_MAX_SIZE_REACHED
            assert commit_raw(c2, unique("g"), topic, 0, 1, "x" * 11) == 12
            assert commit_raw(c2, unique("g"), topic, 0, 1, "x" * 10) == 0
    finally:
        b.close()


def test_empty_and_unknown_group_ids_get_kafkas_answers(gbroker):
    """Kafka 4.4.0's answers for a group id nobody uses, the empty one included: OffsetFetch gives −1 offsets,
    DescribeGroups says Dead, DeleteGroups GROUP_ID_NOT_FOUND (69), and LeaveGroup v3+ answers each member
    UNKNOWN_MEMBER_ID (25) rather than failing the request (but the empty id there is INVALID_GROUP_ID, 24)."""
    topic = unique("grpempty")
    make_topic(gbroker.bootstrap, topic, 1)
    for group in ["", unique("nobody")]:
        assert fetch_offsets_raw(gbroker.bootstrap, group, topic, 1) == {0: -1}, repr(group)
        state, members = describe_group_raw(gbroker.bootstrap, group)
        assert (state, members) == ("Dead", []), repr(group)
        with kproto.Connection(gbroker.bootstrap) as c:
            r = c.request(42, 1, bytes(kproto.Writer().i32(1).string(group).buf))  # DeleteGroups v1
            r.i32()
            assert r.array(lambda r: (r.string(), r.i16())) == [(group, 69)], repr(group)
            w = kproto.Writer().string(group).i32(1).string("m-1").string(None)  # LeaveGroup v3
            r = c.request(LEAVE_GROUP, 3, bytes(w.buf))
            r.i32()
            top = r.i16()
            want = (24, []) if group == "" else (0, [("m-1", None, 25)])  # INVALID_GROUP_ID for "" here
            assert (top, r.array(lambda r: (r.string(), r.string(), r.i16()))) == want, repr(group)


def test_deleting_consumer_offsets_forgets_every_group(fresh_gbroker):
    """Deleting `__consumer_offsets` (Kafka allows it) forgets every group and offset at once, as Kafka does;
    the next group request creates it again and commits work."""
    from confluent_kafka.admin import AdminClient
    b = fresh_gbroker
    topic, group = unique("grpco"), unique("g")
    make_topic(b.bootstrap, topic, 1)
    assert commit_ready(b.bootstrap, group, topic, 0, 42) == 0
    assert fetch_offsets_raw(b.bootstrap, group, topic, 1) == {0: 42}
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    a.delete_topics(["__consumer_offsets"], operation_timeout=30)["__consumer_offsets"].result(60)
    assert fetch_offsets_raw(b.bootstrap, group, topic, 1) == {0: -1}
    assert commit_ready(b.bootstrap, group, topic, 0, 7) == 0
    assert fetch_offsets_raw(b.bootstrap, group, topic, 1) == {0: 7}
    b.restart()
    assert fetch_offsets_raw(b.bootstrap, group, topic, 1) == {0: 7}
