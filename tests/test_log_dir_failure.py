"""A full disk under a partition leader (issue 13; KIP-112/KIP-858 log dir failure, recovered without a restart).

The disk is real: a small tmpfs is mounted at the partition's directory inside each broker's data dir before
the topic is created, and the leader's is then filled with a file until ENOSPC. The next append fails with
ENOSPC, the broker takes its data dir offline, reports it to the controller in its heartbeat, and the
controller moves the leadership to another ISR member and drops the failed replica from the ISR. Freeing the
space lets the broker's probe succeed: it reopens its logs with recovery and its follower rejoins the ISR,
without a restart. Standalone, produce answers KAFKA_STORAGE_ERROR while the disk is full (no hang) and the
log takes writes again once space is freed.

Needs root and a kernel that lets it mount tmpfs (CI runs as root); skipped with the reason otherwise.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import MODE, BrokerProcess
from test_cluster import Cluster, Stream, check_exactly_once_in_order

pytestmark = pytest.mark.skipif(MODE != "runnel", reason="mounts file systems under runnel's data dirs")

TMPFS_SIZE = "8m"


def _can_mount() -> str | None:
    """None when a tmpfs can be mounted here, else why not."""
    if os.geteuid() != 0:
        return "mounting a tmpfs needs root"
    probe = Path(subprocess.run(["mktemp", "-d"], capture_output=True, text=True, check=True).stdout.strip())
    try:
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(probe)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            return f"mount -t tmpfs is refused here: {r.stderr.strip()}"
        subprocess.run(["umount", str(probe)], check=True)
        return None
    finally:
        probe.rmdir()


CANNOT_MOUNT = _can_mount()
needs_mount = pytest.mark.skipif(CANNOT_MOUNT is not None, reason=str(CANNOT_MOUNT))


class Mounts:
    """Small tmpfs mounts, unmounted at the end whatever happened."""

    def __init__(self):
        self.points: list[Path] = []

    def mount(self, path: Path):
        path.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE}", "tmpfs", str(path)], check=True)
        self.points.append(path)

    def close(self):
        for p in self.points:
            subprocess.run(["umount", "-l", str(p)], capture_output=True)


def fill(path: Path) -> Path:
    """Writes `path`/filler until the file system is full; returns the filler."""
    filler = path / "filler"
    # Unbuffered: a buffered file keeps the bytes of the write that hit ENOSPC and raises again when closed.
    with open(filler, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 65536)
        except OSError:
            pass
    return filler


def wait_until(cond, what: str, timeout: float, tails=lambda: ""):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return time.monotonic()
        time.sleep(0.1)
    pytest.fail(f"timed out after {timeout}s waiting for {what}\n{tails()}")


def describe_log_dir_error(bootstrap: str) -> int:
    """DescribeLogDirs (v1) error code of the broker's one log dir."""
    import kproto
    with kproto.Connection(bootstrap) as c:
        r = c.request(35, 1, bytes(kproto.Writer().i32(-1).buf))  # all topics: a null array
    r.i32()  # throttle_time_ms
    assert r.i32() == 1, "one log dir"
    return r.i16()


@needs_mount
def test_full_disk_on_the_leader_moves_leadership_and_the_broker_rejoins_without_restart(topic):
    c = Cluster()
    mounts = Mounts()
    try:
        c.start()
        # The partition's directory is a small disk of its own on every broker.
        for n in c.nodes.values():
            mounts.mount(n.data_dir / f"{topic}-0")
        from test_cluster import create_topic
        create_topic(c, topic)
        s = Stream(c.bootstrap, topic)
        s.until_acked(500)
        failed = c.partition(topic).leader
        node = c.nodes[failed]
        tails = lambda: "\n".join(f"--- node {i}:\n{n.log_tail(30)}" for i, n in c.nodes.items())  # noqa: E731
        filler = fill(node.data_dir / f"{topic}-0")
        t0 = time.monotonic()
        # Producing goes on: the next appends hit ENOSPC on the leader.
        def moved():
            s.send(50)
            s.p.poll(0.05)
            p = c.partition(topic)
            return p.leader not in (failed, -1) and failed not in p.isrs
        t_moved = wait_until(moved, "leadership off the full disk and the failed replica out of the ISR", 30,
                             tails)
        acked_at_move = len(s.acked)
        s.until_acked(acked_at_move + 500, timeout=60)
        print(f"leader {failed} disk full -> new leader {c.partition(topic).leader} in {t_moved - t0:.2f}s")
        assert describe_log_dir_error(node.bootstrap) == 56, "DescribeLogDirs must show KAFKA_STORAGE_ERROR"
        # Space comes back: the broker recovers its logs and rejoins the ISR, same process.
        pid = node.proc.pid
        filler.unlink()
        t1 = time.monotonic()

        def rejoined():
            s.send(20)
            s.p.poll(0.05)
            return failed in c.partition(topic).isrs
        t_back = wait_until(rejoined, "the recovered broker back in the ISR", 60, tails)
        print(f"disk freed -> broker {failed} back in the ISR in {t_back - t1:.2f}s")
        assert node.proc.pid == pid and node.proc.poll() is None, "the broker was restarted"
        assert describe_log_dir_error(node.bootstrap) == 0
        s.until_acked(len(s.acked) + 200, timeout=60)
        s.finish()
        check_exactly_once_in_order(c, s)
    finally:
        c.close()
        mounts.close()
        for n in c.nodes.values():
            shutil.rmtree(n.dir, ignore_errors=True)


@needs_mount
def test_standalone_full_disk_answers_storage_error_and_recovers_without_restart(topic):
    from confluent_kafka import KafkaError, Producer
    b = BrokerProcess({})
    mounts = Mounts()
    try:
        b.data_dir.mkdir(parents=True, exist_ok=True)
        mounts.mount(b.data_dir)
        b.start()
        p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 0, "retries": 0,
                      "message.timeout.ms": 10000})
        results: list = []
        cb = lambda err, msg: results.append(err)  # noqa: E731
        p.produce(topic, value=b"first", on_delivery=cb)
        assert p.flush(30) == 0 and len(results) == 1 and results[0] is None, results
        filler = fill(b.data_dir)
        errors = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not errors:
            results.clear()
            p.produce(topic, value=b"x" * 4096, on_delivery=cb)
            assert p.flush(20) == 0, "produce hung on a full disk"
            errors = [e for e in results if e is not None]
        assert errors and errors[0].code() == KafkaError.KAFKA_STORAGE_ERROR, errors
        assert describe_log_dir_error(b.bootstrap) == 56
        filler.unlink()

        def writable():
            results.clear()
            p.produce(topic, value=b"again", on_delivery=cb)
            p.flush(10)
            return len(results) == 1 and results[0] is None
        wait_until(writable, "produce to succeed after space was freed", 30, lambda: b.log_tail(30))
        assert describe_log_dir_error(b.bootstrap) == 0
    finally:
        b.close()
        mounts.close()
        shutil.rmtree(b.dir, ignore_errors=True)


def describe_log_dirs_errors(bootstrap: str) -> dict[str, int]:
    """DescribeLogDirs (v1): {dir path: error code} of every log dir of the broker."""
    from test_jbod import describe_log_dirs
    return {d: err for d, (err, _) in describe_log_dirs(bootstrap).items()}


@needs_mount
def test_one_failed_dir_of_two_takes_only_its_partitions_offline(topic):
    """JBOD (KIP-112/KIP-858): node 1 has two log dirs, the second a small disk of its own. Topics `healthy`
    and `failing` are both led by node 1, one partition in each dir. The failing dir fills up under an
    acks=all load: only its partition's leadership moves and only its replica leaves the ISR; the other
    partition keeps node 1 as leader and in-sync member and keeps taking writes. Freed space brings the
    dir back without a restart. Every acknowledged record of both topics is stored once, in order."""
    from confluent_kafka.admin import AdminClient, NewTopic
    c = Cluster()
    mounts = Mounts()
    dirs = {}
    for i, n in c.nodes.items():
        dirs[i] = [n.data_dir, n.dir / "data2"]
        n.sets["log.dirs"] = ",".join(str(d) for d in dirs[i])
    mounts.mount(dirs[1][1])
    tails = lambda: "\n".join(f"--- node {i}:\n{n.log_tail(30)}" for i, n in c.nodes.items())  # noqa: E731
    try:
        c.start()
        names = [f"{topic}-a", f"{topic}-b"]
        a = AdminClient({"bootstrap.servers": c.bootstrap})
        # Every broker registered and unfenced first (an explicit assignment naming a broker not yet
        # registered is refused).
        c.wait(lambda md: sorted(md.brokers) == [1, 2, 3], "three brokers")
        for name, replicas in zip(names, ([1, 2, 3], [1, 3, 2])):
            deadline = time.monotonic() + 30
            while True:
                try:
                    a.create_topics([NewTopic(name, 1, replica_assignment=[replicas])])[name].result(60)
                    break
                except Exception as e:  # noqa: BLE001 - INVALID_REPLICA_ASSIGNMENT until registered
                    if "INVALID_REPLICA_ASSIGNMENT" not in str(e) or time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
            c.wait(lambda md, t=name: t in md.topics and md.topics[t].partitions[0].leader == 1
                   and len(md.topics[t].partitions[0].isrs) == 3, f"{name} led by node 1 with a full ISR")
        # Which of the two topics node 1 put on the small disk (the dir with fewer partitions gets a new one).
        on_small = [t for t in names if (dirs[1][1] / f"{t}-0").is_dir()]
        assert len(on_small) == 1, f"expected one partition per dir on node 1: {on_small}"
        failing, = on_small
        healthy, = [t for t in names if t != failing]
        assert (dirs[1][0] / f"{healthy}-0").is_dir()
        streams = {t: Stream(c.bootstrap, t) for t in names}
        for s in streams.values():
            s.until_acked(300)
        filler = fill(dirs[1][1])

        def failing_moved():
            for s in streams.values():
                s.send(50)
                s.p.poll(0.02)
            p = c.partition(failing)
            return p.leader not in (1, -1) and 1 not in p.isrs
        wait_until(failing_moved, f"{failing}'s leadership off the full dir and node 1 out of its ISR", 60, tails)
        # The healthy dir's partition is untouched and keeps taking acks=all writes through node 1.
        h = streams[healthy]
        h.until_acked(len(h.acked) + 500, timeout=60)
        p = c.partition(healthy)
        assert p.leader == 1 and sorted(p.isrs) == [1, 2, 3], (p.leader, p.isrs)
        errors = describe_log_dirs_errors(c.nodes[1].bootstrap)
        by_dir = {str(d.resolve()): errors.get(str(d.resolve())) for d in dirs[1]}
        assert list(by_dir.values()) == [0, 56], f"DescribeLogDirs per dir: {errors}"
        f = streams[failing]
        f.until_acked(len(f.acked) + 300, timeout=60)
        # Space comes back: the dir is reopened with recovery and node 1 rejoins the ISR, same process.
        pid = c.nodes[1].proc.pid
        filler.unlink()

        def rejoined():
            f.send(20)
            f.p.poll(0.05)
            return 1 in c.partition(failing).isrs
        wait_until(rejoined, f"node 1 back in {failing}'s ISR", 60, tails)
        assert c.nodes[1].proc.pid == pid and c.nodes[1].proc.poll() is None, "node 1 was restarted"
        assert set(describe_log_dirs_errors(c.nodes[1].bootstrap).values()) == {0}
        for s in streams.values():
            s.finish()
            check_exactly_once_in_order(c, s)
    finally:
        c.close()
        mounts.close()
        for n in c.nodes.values():
            shutil.rmtree(n.dir, ignore_errors=True)
