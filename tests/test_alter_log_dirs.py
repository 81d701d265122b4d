"""Moving replicas between the data directories of one broker: AlterReplicaLogDirs (34, KIP-113), issue 16.

A standalone runnel broker with three `log.dirs`:
- answers AlterReplicaLogDirs as Kafka 4.4.0 does (LOG_DIR_NOT_FOUND for a path it does not have,
  UNKNOWN_TOPIC_OR_PARTITION for a partition the cluster does not have, NONE otherwise);
- moves a partition under an acks=all idempotent load, throttled by
  `replica.alter.log.dirs.io.max.bytes.per.second`; DescribeLogDirs shows the move as a future replica
  with its lag; a `kill -9` in the middle of the move loses nothing: after the restart the move resumes
  and completes, and every acknowledged record is there exactly once, in order;
- `kafka-reassign-partitions.sh --execute` with `log_dirs` in the plan moves replicas too, and `--verify`
  reports the moves complete.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

import kproto
from conftest import MODE, BrokerProcess, make_topic
from test_kafka_tools import tool

pytestmark = pytest.mark.skipif(MODE != "runnel", reason="starts runnel brokers with several log.dirs")

ALTER_REPLICA_LOG_DIRS = 34
UNKNOWN_TOPIC_OR_PARTITION = 3
LOG_DIR_NOT_FOUND = 57
REASSIGN_TOOL = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"


def alter_replica_log_dirs(bootstrap: str, moves: dict[str, list[tuple[str, int]]]) -> dict[tuple[str, int], int]:
    """AlterReplicaLogDirs v1 {path: [(topic, partition)]} → {(topic, partition): error code}."""
    w = kproto.Writer().i32(len(moves))
    for path, parts in moves.items():
        w.string(path).i32(len(parts))
        for t, p in parts:
            w.string(t).i32(1).i32(p)
    with kproto.Connection(bootstrap) as c:
        r = c.request(ALTER_REPLICA_LOG_DIRS, 1, bytes(w.buf))
    r.i32()  # throttle_time_ms
    out = {}
    for _ in range(r.i32()):
        t = r.string()
        for _ in range(r.i32()):
            p, err = r.i32(), r.i16()
            out[(t, p)] = err
    return out


def log_dirs(bootstrap: str) -> dict[str, dict[tuple[str, int, bool], tuple[int, int]]]:
    """DescribeLogDirs v1: {dir: {(topic, partition, is_future): (size, offset lag)}}."""
    with kproto.Connection(bootstrap) as c:
        r = c.request(35, 1, bytes(kproto.Writer().i32(-1).buf))
    r.i32()
    out = {}
    for _ in range(r.i32()):
        _err, d = r.i16(), r.string()
        parts = {}
        for _ in range(r.i32()):
            name = r.string()
            for _ in range(r.i32()):
                p, size, lag, future = r.i32(), r.i64(), r.i64(), r.i8()
                parts[(name, p, bool(future))] = (size, lag)
        out[d] = parts
    return out


def wait_until(cond, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(0.05)
    pytest.fail(f"timed out after {timeout}s waiting for {what}")


def produce(bootstrap: str, topic: str, start: int, n: int) -> None:
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 5})
    errors = []
    for i in range(start, start + n):
        p.produce(topic, key=str(i).encode(), value=f"{i:08d}".encode() + b"x" * 1000, partition=0,
                  on_delivery=lambda err, _m: err and errors.append(err))
        if i % 1000 == 0:
            p.poll(0)
    assert p.flush(60) == 0 and not errors, errors


def consume_all(bootstrap: str, topic: str, n: int) -> list[int]:
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        seen: list[int] = []
        deadline = time.monotonic() + 60
        while len(seen) < n and time.monotonic() < deadline:
            for m in c.consume(1000, timeout=0.5):
                assert m.error() is None, m.error()
                seen.append(int(m.value()[:8]))
        return seen
    finally:
        c.close()


def where(dirs: list[Path], topic: str) -> list[list[str]]:
    return [sorted(p.name for p in d.iterdir() if p.name.startswith(f"{topic}-")) for d in dirs]


@pytest.fixture
def three_dirs(tmp_path):
    dirs = [tmp_path / d for d in ("a", "b", "c")]
    b = BrokerProcess({"log.dirs": ",".join(str(d) for d in dirs),
                       "replica.alter.log.dirs.io.max.bytes.per.second": "4000000"})
    yield b, [d.resolve() if d.exists() else d for d in dirs]
    b.close()
    shutil.rmtree(b.dir, ignore_errors=True)


def test_a_replica_moves_under_load_and_a_kill9_mid_move_loses_nothing(three_dirs, topic):
    b, dirs = three_dirs
    b.start()
    dirs = [d.resolve() for d in dirs]
    make_topic(b.bootstrap, topic, partitions=1)
    produce(b.bootstrap, topic, 0, 12_000)  # ~12 MB: three seconds of copying at 4 MB/s
    (src,) = [i for i, names in enumerate(where(dirs, topic)) if names]
    dest = (src + 1) % 3
    # Kafka's answers for a path the broker does not have and a partition it does not host.
    assert alter_replica_log_dirs(b.bootstrap, {"/no/such/dir": [(topic, 0)]}) == {(topic, 0): LOG_DIR_NOT_FOUND}
    assert alter_replica_log_dirs(b.bootstrap, {str(dirs[dest]): [("no-such-topic", 0)]}) == \
        {("no-such-topic", 0): UNKNOWN_TOPIC_OR_PARTITION}
    assert alter_replica_log_dirs(b.bootstrap, {str(dirs[dest]): [(topic, 0)]}) == {(topic, 0): 0}
    # The move shows as a future replica under the destination, with a lag.
    (size, lag) = wait_until(lambda: log_dirs(b.bootstrap)[str(dirs[dest])].get((topic, 0, True)),
                             "the future replica in DescribeLogDirs", 20)
    assert lag > 0, (size, lag)
    produce(b.bootstrap, topic, 12_000, 500)  # acknowledged while the log is being copied
    b.kill9()
    b.start()
    # The move resumes after the restart and completes: the log is in the destination only.
    wait_until(lambda: where(dirs, topic)[dest] == [f"{topic}-0"] and not where(dirs, topic)[src],
               "the move to complete after the restart", 60)
    described = log_dirs(b.bootstrap)
    assert (topic, 0, False) in described[str(dirs[dest])], described
    assert not any(t == topic for parts in described.values() for (t, _p, fut) in parts if fut), described
    produce(b.bootstrap, topic, 12_500, 500)
    assert consume_all(b.bootstrap, topic, 13_000) == list(range(13_000))


def test_kafka_reassign_partitions_moves_replicas_between_dirs(three_dirs, topic, tmp_path: Path):
    b, dirs = three_dirs
    b.start()
    dirs = [d.resolve() for d in dirs]
    make_topic(b.bootstrap, topic, partitions=3)
    produce(b.bootstrap, topic, 0, 300)
    placed = where(dirs, topic)
    # Every partition to the directory after the one holding it.
    moves = []
    for i, names in enumerate(placed):
        for name in names:
            moves.append({"topic": topic, "partition": int(name.rsplit("-", 1)[1]), "replicas": [1],
                          "log_dirs": [str(dirs[(i + 1) % 3])]})
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": moves}))
    out = tool(REASSIGN_TOOL, "--bootstrap-server", b.bootstrap, "--execute", "--reassignment-json-file",
               str(plan))
    assert out.count("Successfully started moving log directory to") == 3, out

    def verified():
        out = tool(REASSIGN_TOOL, "--bootstrap-server", b.bootstrap, "--verify", "--reassignment-json-file",
                   str(plan))
        return out if all(f"{topic}-{m['partition']} is completed" in out
                          and "in progress" not in out for m in moves) else None

    out = wait_until(verified, "kafka-reassign-partitions --verify to report the moves complete", 60)
    assert where(dirs, topic) == [placed[2], placed[0], placed[1]], (where(dirs, topic), out)
