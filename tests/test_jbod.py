"""Several data directories per broker (`log.dirs=/a,/b,/c`, JBOD, KIP-112), stage 1: placement and listing.

A standalone runnel broker with three data dirs spreads a topic's partitions over them (the online dir with
the fewest partitions gets the next one, Kafka's LogManager rule), lists every dir in DescribeLogDirs (raw v1
and Kafka's own `kafka-log-dirs` tool), keeps what it acknowledged across a restart, and refuses to start when
one partition is found in two dirs. Each dir carries its own KIP-858 `directory.id` in its meta.properties.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

import kproto
from conftest import MODE, BrokerProcess, make_topic

pytestmark = pytest.mark.skipif(MODE != "runnel", reason="starts runnel brokers with several log.dirs")

LIBS = Path(__file__).resolve().parent.parent / ".test-deps" / "kafka" / "libs"


def describe_log_dirs(bootstrap: str) -> dict[str, tuple[int, dict[tuple[str, int], int]]]:
    """DescribeLogDirs v1 for every topic: {dir: (error code, {(topic, partition): size})}."""
    with kproto.Connection(bootstrap) as c:
        r = c.request(35, 1, bytes(kproto.Writer().i32(-1).buf))  # all topics: a null array
    r.i32()  # throttle_time_ms
    out = {}
    for _ in range(r.i32()):
        err, d = r.i16(), r.string()
        parts = {}
        for _ in range(r.i32()):
            name = r.string()
            for _ in range(r.i32()):
                p, size, _lag, _future = r.i32(), r.i64(), r.i64(), r.i8()
                parts[(name, p)] = size
        out[d] = (err, parts)
    return out


def produce(bootstrap: str, topic: str, n: int) -> None:
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    errors = []
    for i in range(n):
        p.produce(topic, key=str(i).encode(), value=f"v{i}".encode(), partition=i % 6,
                  on_delivery=lambda err, _m: err and errors.append(err))
    assert p.flush(30) == 0 and not errors, errors


def count(bootstrap: str, topic: str, n: int) -> int:
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(6)])
        seen = 0
        for _ in range(200):
            msgs = c.consume(1000, timeout=0.2)
            seen += len([m for m in msgs if m.error() is None])
            if seen >= n:
                break
        return seen
    finally:
        c.close()


@pytest.fixture
def jbod(tmp_path):
    dirs = [tmp_path / d for d in ("a", "b", "c")]
    b = BrokerProcess({"log.dirs": ",".join(str(d) for d in dirs)})
    yield b, dirs
    b.close()
    shutil.rmtree(b.dir, ignore_errors=True)


def on_disk(dirs: list[Path], topic: str) -> list[list[str]]:
    return [sorted(p.name for p in d.iterdir() if p.name.startswith(topic)) for d in dirs]


def test_partitions_spread_over_three_dirs_and_every_dir_is_described(jbod, topic):
    b, dirs = jbod
    b.start()
    make_topic(b.bootstrap, topic, partitions=6)
    placed = on_disk(dirs, topic)
    assert [len(p) for p in placed] == [2, 2, 2], placed
    produce(b.bootstrap, topic, 300)
    described = describe_log_dirs(b.bootstrap)
    assert sorted(described) == sorted(str(d.resolve()) for d in dirs), described
    for d, names in zip(dirs, placed):
        err, parts = described[str(d.resolve())]
        assert err == 0
        assert sorted(f"{t}-{p}" for (t, p) in parts if t == topic) == names
        assert all(size > 0 for (t, _), size in parts.items() if t == topic), parts
    # Kafka's own tool reads the same answer.
    if (LIBS / ".complete-4.4.0").exists():
        out = subprocess.run(["java", "-XX:TieredStopAtLevel=1", "-Xmx256m", "-cp", f"{LIBS}/*",
                              "org.apache.kafka.tools.LogDirsCommand", "--bootstrap-server", b.bootstrap,
                              "--describe", "--topic-list", topic], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr[-2000:]
        doc = json.loads([line for line in out.stdout.splitlines() if line.startswith("{")][-1])
        (broker,) = doc["brokers"]
        tool_dirs = {d["logDir"]: sorted(p["partition"] for p in d["partitions"]) for d in broker["logDirs"]}
        assert tool_dirs == {str(d.resolve()): n for d, n in zip(dirs, placed)}, tool_dirs
    # Every dir has its own KIP-858 directory.id, kept across the restart below.
    ids = directory_ids(dirs)
    assert len(set(ids)) == 3 and all(len(i) == 22 for i in ids), ids
    # A restart loads every dir: all 300 records are there, each partition where it was.
    b.stop()
    b.start()
    assert on_disk(dirs, topic) == placed
    assert directory_ids(dirs) == ids
    assert count(b.bootstrap, topic, 300) == 300


def directory_ids(dirs: list[Path]) -> list[str]:
    """Each dir's `directory.id` from its meta.properties (Kafka's format)."""
    out = []
    for d in dirs:
        props = dict(line.split("=", 1) for line in (d / "meta.properties").read_text().splitlines()
                     if "=" in line and not line.startswith("#"))
        assert props["version"] == "1" and props["node.id"] == "1", props
        out.append(props["directory.id"])
    return out


def test_a_dir_copied_onto_another_refuses_to_start(jbod):
    b, dirs = jbod
    b.start()
    b.stop()
    shutil.copy(dirs[0] / "meta.properties", dirs[2] / "meta.properties")
    b.proc = None
    with pytest.raises(pytest.fail.Exception):
        b.start()
    assert "have the same directory.id" in b.log_tail(20), b.log_tail(20)


def test_a_partition_in_two_dirs_refuses_to_start(jbod, topic):
    b, dirs = jbod
    b.start()
    make_topic(b.bootstrap, topic, partitions=6)
    b.stop()
    first = next(p for p in dirs[0].iterdir() if p.name.startswith(topic))
    shutil.copytree(first, dirs[1] / first.name)
    b.proc = None
    with pytest.raises(pytest.fail.Exception):
        b.start()  # fails the start: the broker exits
    assert "duplicate log directories" in b.log_tail(20) and first.name in b.log_tail(20), b.log_tail(20)
