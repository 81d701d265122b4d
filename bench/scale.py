#!/usr/bin/env python3
"""Scale rows of issue 18 (Performance): many partitions on one broker, and many idle connections, for Runnel
and for Apache Kafka 4.4.0 measured in the same run.

Partitions (one fresh broker per system, replication factor 1):
  1. create TOPICS topics of 100 partitions with CreateTopics v4 in batches of 10 topics (raw client,
     tests/kproto.py); time to create them all;
  2. produce one record (100 B value) to every 10th partition (10% of them; one Produce v8 per topic, acks=1),
     so a restart has logs with data to recover, not only empty ones;
  3. RSS idle: VmRSS of the broker after 10 s (--quick: 3 s) without requests;
  4. Metadata latency for all topics: N (default 20) full Metadata v8 requests (topics = null) over one
     connection, timed from the send to the last byte of the answer (the answer is not decoded in the timing);
     median and max; the answer's size;
  5. time to ready after a clean shutdown: SIGTERM, wait for the process to exit (the shutdown time is reported
     too), start it again on the same data dir; "ready" = the first full Metadata v8 answer that lists every
     created topic with all its partitions, each with error NONE and a leader (≠ -1), polled every 50 ms on a
     new connection; time from the spawn of the new process. Then the 10% partitions are read back with
     ListOffsets v4 (latest), repeated every 0.2 s until each answers end offset 1: the first pass's other
     answers (by error code) and the time from the spawn until all answered 1 are reported too (Kafka lists
     leaders in Metadata before it can serve those partitions: NOT_LEADER_OR_FOLLOWER meanwhile);
  6. time to ready after `kill -9` (SIGKILL right after the clean restart's ready: whatever was written is in
     the page cache, nothing was flushed by a shutdown), same definition and same check.
Connections (a fresh broker per system, no topics): CONNS raw TCP connections, each sends one ApiVersions v0
request, reads the answer and then idles; RSS added = VmRSS after all are open and 5 s of idling, minus
VmRSS before the first one. The script raises its own soft RLIMIT_NOFILE to the hard limit with `resource`.
Neither broker limits connections by default (`max.connections`, `max.connections.per.ip` and
`max.connection.creation.rate` are all unlimited in both), so nothing is set.

The partition count is capped by the open-file limit: Runnel keeps one descriptor per partition (the active
segment's .log) and refuses partitions beyond the soft RLIMIT_NOFILE less a reserve
(broker::topics::partition_budget); Kafka also keeps the active segment's .log open. An unprivileged process
cannot raise the hard limit, so on a machine whose hard limit is below the count asked for, the script caps
TOPICS at what fits (and says so in the report).

Each Kafka step is bounded (--kafka-timeout seconds, default 600); a step that runs out records "did not finish
in N s" and the Kafka rows after it are skipped. Kafka runs with KAFKA_HEAP_OPTS (default -Xms1g -Xmx2g here).

Every process is started by this script, killed by PID in a finally, and its data lives under one temporary
directory that is deleted at the end.

Usage: python3 bench/scale.py [--quick] [--topics 1000] [--conns 10000] [--metadata-reps 20]
                              [--no-kafka] [--kafka-timeout 600] [--out bench/results/DATE-scale]
  --quick: 20 topics (2,000 partitions), 1,000 connections, 5 Metadata requests, 3 s of idling instead of 10
           (Runnel alone, --no-kafka: about 25 s; with Kafka just under 2 minutes: 116 s here)
  (after `cargo build --release -p runnel`; RUNNEL_BIN=path picks another binary)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import kproto  # noqa: E402

RUNNEL_BIN = Path(os.environ.get("RUNNEL_BIN", ROOT / "target" / "release" / "runnel"))
KAFKA_SCRIPT = ROOT / "scripts" / "kafka-reference.sh"
PARTS_PER_TOPIC = 100
BATCH_TOPICS = 10


class StepTimeout(Exception):
    pass


def log(msg: str):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status(pid: int) -> dict:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        k, _, v = line.partition(":")
        if k in ("VmRSS", "VmHWM", "Threads", "RssAnon", "RssFile"):
            out[k] = int(v.split()[0]) if k != "Threads" else int(v)
    out["fds"] = len(os.listdir(f"/proc/{pid}/fd"))
    return out


def cpu_seconds(pid: int) -> float:
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


# ------------------------------------------------------------------ brokers
class Broker:
    """A broker process this script started; `spawn()` starts it (again) on the same data dir."""

    name = "?"

    def __init__(self, root: Path):
        self.port = free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.dir = Path(tempfile.mkdtemp(prefix=f"{self.name}-", dir=root))
        self.proc: subprocess.Popen | None = None
        self.log_path = self.dir / "broker.log"
        self.spawned_at = 0.0

    def argv(self) -> list[str]:
        raise NotImplementedError

    def env(self) -> dict:
        return dict(os.environ)

    def spawn(self):
        argv = self.argv()
        with open(self.log_path, "ab") as lf:
            lf.write(f"\n===== {' '.join(argv)}\n".encode())
            lf.flush()
            self.spawned_at = time.monotonic()
            self.proc = subprocess.Popen(argv, stdout=lf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         cwd=self.dir, env=self.env())
        return self

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait_listening(self, timeout: float):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited ({self.proc.returncode}); log:\n{self.tail()}")
            try:
                with kproto.Connection(self.bootstrap, timeout=5) as c:
                    if kproto.api_versions_v0(c)[0] == 0:
                        return time.monotonic() - self.spawned_at
            except OSError:
                pass
            time.sleep(0.05)
        raise StepTimeout(f"{self.name} did not answer ApiVersions within {timeout:.0f} s")

    def stop(self, sig=signal.SIGTERM, timeout: float = 120) -> float:
        """Sends `sig` to the process (by PID) and waits for it to exit; returns the seconds it took."""
        if self.proc is None or self.proc.poll() is not None:
            return 0.0
        t = time.monotonic()
        os.kill(self.proc.pid, sig)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)
            raise StepTimeout(f"{self.name} did not exit within {timeout:.0f} s of signal {sig}")
        return time.monotonic() - t

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)

    def tail(self, n=30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"


class Runnel(Broker):
    name = "runnel"

    def __init__(self, root: Path):
        super().__init__(root)
        self.metrics_port = free_port()

    def argv(self):
        return [str(RUNNEL_BIN), "server", "--listen", self.bootstrap, "--data-dir", str(self.dir / "data"),
                "--set", f"metrics.listeners=http://127.0.0.1:{self.metrics_port}",
                "--set", "num.partitions=1", "--set", "auto.create.topics.enable=false"]


class Kafka(Broker):
    name = "kafka"

    def __init__(self, root: Path, heap: str):
        super().__init__(root)
        self.heap = heap
        subprocess.run(["bash", str(KAFKA_SCRIPT), "prepare", str(self.dir), str(self.port)], check=True,
                       env=self.env(), capture_output=True, timeout=300)
        self._argv = subprocess.run(["bash", str(KAFKA_SCRIPT), "java-cmd", str(self.dir)], check=True,
                                    env=self.env(), capture_output=True, text=True).stdout.splitlines()

    def env(self):
        return {**os.environ, "KAFKA_HEAP_OPTS": self.heap}

    def argv(self):
        return self._argv


# ------------------------------------------------------------------ requests
def create_topics(conn: kproto.Connection, names: list[str], parts: int) -> list:
    w = kproto.Writer().i32(len(names))
    for n in names:
        w.string(n).i32(parts).i16(1).i32(0).i32(0)
    w.i32(600_000).i8(0)
    r = conn.request(kproto.CREATE_TOPICS, 4, bytes(w.buf))
    r.i32()
    return [x for x in r.array(lambda r: (r.string(), r.i16(), r.string())) if x[1] != 0]


def produce_topic(conn: kproto.Connection, topic: str, partitions: list[int]) -> list:
    batch = kproto.encode_batch([kproto.Record(key=None, value=b"x" * 100)])
    w = kproto.Writer().string(None).i16(1).i32(30000).i32(1).string(topic).i32(len(partitions))
    for p in partitions:
        w.i32(p).bytes_(batch)
    r = conn.request(kproto.PRODUCE, 8, bytes(w.buf))
    errs = []
    for _ in range(r.i32()):
        r.string()
        for _ in range(r.i32()):
            idx, err = r.i32(), r.i16()
            r.i64(), r.i64(), r.i64()
            r.array(lambda r: (r.i32(), r.string()))
            r.string()
            if err:
                errs.append((idx, err))
    return errs


def list_offsets_topic(conn: kproto.Connection, topic: str, partitions: list[int]) -> dict:
    w = kproto.Writer().i32(-1).i8(0).i32(1).string(topic).i32(len(partitions))
    for p in partitions:
        w.i32(p).i32(-1).i64(-1)
    r = conn.request(kproto.LIST_OFFSETS, 4, bytes(w.buf))
    r.i32()
    out = {}
    for _ in range(r.i32()):
        r.string()
        for _ in range(r.i32()):
            idx, err, _ts, off, _ep = r.i32(), r.i16(), r.i64(), r.i64(), r.i32()
            out[idx] = off if err == 0 else -1000 - err
    return out


METADATA_ALL = bytes(kproto.Writer().i32(-1).i8(0).i8(0).i8(0).buf)  # v8: all topics


def metadata_all_raw(conn: kproto.Connection) -> tuple[float, bytes]:
    t = time.monotonic()
    corr = conn.send(kproto.METADATA, 8, METADATA_ALL)
    (size,) = struct.unpack(">i", conn._recv_exact(4))
    body = conn._recv_exact(size)
    took = time.monotonic() - t
    assert struct.unpack(">i", body[:4])[0] == corr
    return took, body


def complete_topics(body: bytes, expected: dict[str, int]) -> int:
    """How many of the `expected` topics (name -> partition count) the Metadata v8 answer lists complete:
    topic error NONE, every partition present with error NONE and a leader."""
    r = kproto.Reader(body[4:])
    r.i32()
    r.array(lambda r: (r.i32(), r.string(), r.i32(), r.string()))
    r.string()
    r.i32()
    ok = 0
    for _ in range(r.i32()):
        err, name, _internal = r.i16(), r.string(), r.i8()
        good = 0
        for _ in range(r.i32()):
            perr, _idx, leader, _ep = r.i16(), r.i32(), r.i32(), r.i32()
            r.array(lambda r: r.i32())
            r.array(lambda r: r.i32())
            r.array(lambda r: r.i32())
            good += perr == 0 and leader >= 0
        r.i32()
        if err == 0 and expected.get(name) == good:
            ok += 1
    return ok


def wait_ready(b: Broker, expected: dict[str, int], timeout: float) -> dict:
    """Polls full Metadata until every expected topic is complete; seconds since the spawn."""
    deadline = b.spawned_at + timeout
    first_answer = None
    polls = 0
    while time.monotonic() < deadline:
        if b.proc.poll() is not None:
            raise RuntimeError(f"{b.name} exited ({b.proc.returncode}); log:\n{b.tail()}")
        try:
            with kproto.Connection(b.bootstrap, timeout=max(1.0, deadline - time.monotonic())) as c:
                while time.monotonic() < deadline:
                    _, body = metadata_all_raw(c)
                    polls += 1
                    now = time.monotonic()
                    if first_answer is None:
                        first_answer = now - b.spawned_at
                    if complete_topics(body, expected) == len(expected):
                        return {"ready_s": now - b.spawned_at, "first_metadata_s": first_answer, "polls": polls}
                    time.sleep(0.05)
        except (OSError, ConnectionError, AssertionError):
            time.sleep(0.05)
    raise StepTimeout(f"{b.name}: not ready (all topics listed) within {timeout:.0f} s of the spawn")


# ------------------------------------------------------------------ scenarios
def partitions_scenario(b: Broker, topics: int, reps: int, step_timeout: float, res: dict, profile: bool,
                        idle_s: float = 10):
    names = [f"scale-{i:05d}" for i in range(topics)]
    expected = {n: PARTS_PER_TOPIC for n in names}
    total = topics * PARTS_PER_TOPIC
    b.spawn()
    res["start_empty_s"] = b.wait_listening(step_timeout)
    log(f"{b.name}: listening after {res['start_empty_s']:.2f} s; creating {total:,} partitions")
    t0 = time.monotonic()
    with kproto.Connection(b.bootstrap, timeout=step_timeout) as c:
        for i in range(0, topics, BATCH_TOPICS):
            errs = create_topics(c, names[i:i + BATCH_TOPICS], PARTS_PER_TOPIC)
            if errs:
                raise RuntimeError(f"CreateTopics: {errs[:3]}")
            if time.monotonic() - t0 > step_timeout:
                raise StepTimeout(f"creating {total:,} partitions did not finish in {step_timeout:.0f} s "
                                  f"({(i + BATCH_TOPICS) * PARTS_PER_TOPIC:,} created)")
            if (i // BATCH_TOPICS) % 10 == 9:
                log(f"{b.name}: {(i + BATCH_TOPICS) * PARTS_PER_TOPIC:,} partitions, {time.monotonic() - t0:.1f} s")
    res["create_s"] = time.monotonic() - t0
    # The creation answered; wait until all are served (Kafka: leaders elected, logs created).
    b.spawned_at = time.monotonic()
    res["create_to_ready_extra_s"] = wait_ready(b, expected, step_timeout)["ready_s"]
    log(f"{b.name}: created in {res['create_s']:.1f} s (+{res['create_to_ready_extra_s']:.1f} s until all listed)")
    with_data = list(range(0, PARTS_PER_TOPIC, 10))
    t = time.monotonic()
    with kproto.Connection(b.bootstrap, timeout=step_timeout) as c:
        for n in names:
            todo = with_data
            while True:  # Kafka lists a leader before that leader's log exists: NOT_LEADER (6) a while
                errs = produce_topic(c, n, todo)
                if not errs:
                    break
                if any(e not in (6, 3, 5) for _, e in errs) or time.monotonic() - t > step_timeout:
                    raise RuntimeError(f"Produce {n}: {errs[:3]}")
                res["produce_retries"] = res.get("produce_retries", 0) + 1
                todo = [p for p, _ in errs]
                time.sleep(0.1)
    res["records_written"] = topics * len(with_data)
    res["produce_s"] = time.monotonic() - t
    log(f"{b.name}: 1 record in each of {res['records_written']:,} partitions ({res['produce_s']:.1f} s); idling {idle_s:.0f} s")
    time.sleep(idle_s)
    res["idle"] = status(b.pid)
    log(f"{b.name}: idle RSS {res['idle']['VmRSS'] / 1024:.0f} MiB, {res['idle']['fds']:,} fds, "
        f"{res['idle']['Threads']} threads")
    lat = []
    cpu0 = cpu_seconds(b.pid)
    with kproto.Connection(b.bootstrap, timeout=step_timeout) as c:
        for _ in range(reps):
            took, body = metadata_all_raw(c)
            lat.append(took)
        assert complete_topics(body, expected) == topics
    res["metadata"] = {"n": reps, "median_ms": statistics.median(lat) * 1000, "max_ms": max(lat) * 1000,
                       "min_ms": min(lat) * 1000, "bytes": len(body) + 4,
                       "broker_cpu_ms_per_req": (cpu_seconds(b.pid) - cpu0) / reps * 1000}
    m = res["metadata"]
    log(f"{b.name}: full Metadata x{reps}: median {m['median_ms']:.1f} ms, max {m['max_ms']:.1f} ms, "
        f"{m['bytes'] / 1e6:.2f} MB")
    if profile and shutil.which("perf") and b.name == "runnel":
        prof = b.dir / "metadata.perf"
        pr = subprocess.Popen(["perf", "record", "-g", "-o", str(prof), "-p", str(b.pid)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            with kproto.Connection(b.bootstrap, timeout=step_timeout) as c:
                for _ in range(reps):
                    metadata_all_raw(c)
        finally:
            os.kill(pr.pid, signal.SIGINT)
            pr.wait(60)
        rep = subprocess.run(["perf", "report", "-i", str(prof), "--no-children", "--stdio"],
                             capture_output=True, text=True).stdout
        res["metadata_profile_top"] = [ln for ln in rep.splitlines() if ln.strip() and not ln.startswith("#")][:60]

    def check_records(key: str):
        """ListOffsets (latest) of the written partitions until each answers 1 (bounded): the first pass's
        answers other than 1 (by kind), and the seconds from the spawn until all answered 1."""
        first = None
        with kproto.Connection(b.bootstrap, timeout=step_timeout) as c:
            while True:
                kinds: dict = {}
                for n in names:
                    for o in list_offsets_topic(c, n, with_data).values():
                        if o != 1:
                            k = f"error {-1000 - o}" if o <= -1000 else f"offset {o}"
                            kinds[k] = kinds.get(k, 0) + 1
                if first is None:
                    first = kinds
                if not kinds or time.monotonic() - b.spawned_at > step_timeout:
                    break
                time.sleep(0.2)
        res[f"records_first_pass_{key}"] = first
        res[f"records_missing_{key}"] = sum(kinds.values())
        res[f"records_readable_{key}_s"] = None if kinds else time.monotonic() - b.spawned_at
        return sum(kinds.values())

    # clean shutdown, restart
    log(f"{b.name}: SIGTERM")
    res["sigterm_shutdown_s"] = b.stop(signal.SIGTERM, step_timeout)
    b.spawn()
    r = wait_ready(b, expected, step_timeout)
    res["ready_after_sigterm_s"], res["first_metadata_after_sigterm_s"] = r["ready_s"], r["first_metadata_s"]
    res["after_sigterm_status"] = status(b.pid)
    res["after_sigterm_cpu_s"] = cpu_seconds(b.pid)
    check_records("after_sigterm")
    log(f"{b.name}: ready {r['ready_s']:.2f} s after the spawn (clean shutdown took {res['sigterm_shutdown_s']:.2f} s); "
        f"all records readable after {res['records_readable_after_sigterm_s']} s (first pass: {res['records_first_pass_after_sigterm']})")
    # kill -9, restart
    log(f"{b.name}: kill -9")
    b.stop(signal.SIGKILL, 60)
    b.spawn()
    r = wait_ready(b, expected, step_timeout)
    res["ready_after_kill9_s"], res["first_metadata_after_kill9_s"] = r["ready_s"], r["first_metadata_s"]
    res["after_kill9_cpu_s"] = cpu_seconds(b.pid)
    check_records("after_kill9")
    time.sleep(5)
    res["after_kill9_status"] = status(b.pid)
    log(f"{b.name}: ready {r['ready_s']:.2f} s after the spawn; all records readable after "
        f"{res['records_readable_after_kill9_s']} s (first pass: {res['records_first_pass_after_kill9']})")


def connections_scenario(b: Broker, conns: int, step_timeout: float, res: dict):
    b.spawn()
    b.wait_listening(step_timeout)
    time.sleep(3)
    before = status(b.pid)
    res["before"] = before
    socks = []
    t = time.monotonic()
    req = struct.pack(">ihhih", 10, kproto.API_VERSIONS, 0, 1, -1)
    try:
        batch = 200  # send on a batch of connections, then read their answers (pipelined over sockets)
        for i in range(0, conns, batch):
            group = []
            for _ in range(min(batch, conns - i)):
                s = socket.create_connection(("127.0.0.1", b.port), timeout=step_timeout)
                s.sendall(req)
                group.append(s)
            for s in group:
                (size,) = struct.unpack(">i", recv_exact(s, 4))
                body = recv_exact(s, size)
                if struct.unpack(">ih", body[:6]) != (1, 0):
                    raise RuntimeError("bad ApiVersions answer")
            socks.extend(group)
            if time.monotonic() - t > step_timeout:
                raise StepTimeout(f"{len(socks):,} of {conns:,} connections in {step_timeout:.0f} s")
            if (i // batch) % 10 == 9:
                log(f"{b.name}: {len(socks):,} connections open")
        res["open_s"] = time.monotonic() - t
        time.sleep(5)
        after = status(b.pid)
        res["after"] = after
        res["conns"] = len(socks)
        res["rss_added_kib"] = after["VmRSS"] - before["VmRSS"]
        log(f"{b.name}: {len(socks):,} idle connections in {res['open_s']:.1f} s: RSS +{res['rss_added_kib'] / 1024:.1f} MiB "
            f"({res['rss_added_kib'] * 1024 / len(socks):,.0f} B per connection), {after['Threads']} threads")
    finally:
        for s in socks:
            s.close()


def recv_exact(s: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        c = s.recv(n - len(buf))
        if not c:
            raise ConnectionError("closed")
        buf += c
    return bytes(buf)


# ------------------------------------------------------------------ report
def fmt(v, unit="", nd=2):
    if v is None:
        return "—"
    if isinstance(v, str):
        return v
    return f"{v:,.{nd}f}{unit}"


def ratio(a, b):
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b:
        return f"{a / b:.2f}"
    return "—"


def report(path: Path, meta: dict, results: dict):
    R, K = results.get("runnel", {}), results.get("kafka", {})
    P, KP = R.get("partitions", {}), K.get("partitions", {})
    C, KC = R.get("connections", {}), K.get("connections", {})

    def g(d, *ks):
        for k in ks:
            if not isinstance(d, dict) or k not in d:
                return None  # not measured (an error, printed below the table, ended the scenario)
            d = d[k]
        return d

    def mib(v):
        return v / 1024 if isinstance(v, (int, float)) else v

    def mb(v):
        return v / 1e6 if isinstance(v, (int, float)) else v

    rows = [
        ("Partitions on the broker", g(P, "partitions"), g(KP, "partitions"), "100,000", 0),
        ("Create all (CreateTopics, batches of 10 topics), s", g(P, "create_s"), g(KP, "create_s"), "", 1),
        ("… then until Metadata lists them all, s", g(P, "create_to_ready_extra_s"), g(KP, "create_to_ready_extra_s"), "", 1),
        ("RSS idle with them, MiB", mib(g(P, "idle", "VmRSS")), mib(g(KP, "idle", "VmRSS")), "≤ 1,024", 0),
        ("Open file descriptors idle", g(P, "idle", "fds"), g(KP, "idle", "fds"), "", 0),
        ("Full Metadata, median ms", g(P, "metadata", "median_ms"), g(KP, "metadata", "median_ms"), "", 1),
        ("Full Metadata, max ms", g(P, "metadata", "max_ms"), g(KP, "metadata", "max_ms"), "", 1),
        ("Full Metadata answer, MB", mb(g(P, "metadata", "bytes")), mb(g(KP, "metadata", "bytes")), "", 2),
        ("Clean shutdown (SIGTERM → exit), s", g(P, "sigterm_shutdown_s"), g(KP, "sigterm_shutdown_s"), "", 2),
        ("Ready after clean shutdown, s", g(P, "ready_after_sigterm_s"), g(KP, "ready_after_sigterm_s"), "≤ 5", 2),
        ("Ready after kill -9, s", g(P, "ready_after_kill9_s"), g(KP, "ready_after_kill9_s"), "≤ 30", 2),
        ("… every written partition's ListOffsets = 1, after SIGTERM, s", g(P, "records_readable_after_sigterm_s"),
         g(KP, "records_readable_after_sigterm_s"), "", 2),
        ("… every written partition's ListOffsets = 1, after kill -9, s", g(P, "records_readable_after_kill9_s"),
         g(KP, "records_readable_after_kill9_s"), "", 2),
        ("Records missing after the restarts (in the end)", (g(P, "records_missing_after_sigterm"), g(P, "records_missing_after_kill9")),
         (g(KP, "records_missing_after_sigterm"), g(KP, "records_missing_after_kill9")), "0", 0),
        ("Idle connections", g(C, "conns"), g(KC, "conns"), "10,000", 0),
        ("RSS added by them, MiB", mib(g(C, "rss_added_kib")), mib(g(KC, "rss_added_kib")), "≤ 100", 1),
    ]
    lines = [f"# Scale: many partitions, many idle connections (issue 18) — {meta['date']}", "",
             f"`python3 bench/scale.py {' '.join(meta['argv'])}` — Runnel {meta['commit']} vs Apache Kafka 4.4.0 "
             f"(KRaft combined mode, {meta['kafka_heap']}), same run, one after the other.", "",
             f"Machine: {meta['machine']}. **Shared with other work** (load average at the start: {meta['loadavg']}); "
             "timings are of one run each.", "",
             f"Open-file limit of this machine's processes: soft/hard {meta['nofile']} (not raisable here: "
             f"`setrlimit` beyond the hard limit is refused). {meta['cap_note']}", "",
             "| | Runnel | Kafka 4.4.0 | Runnel / Kafka | target |", "|---|---:|---:|---:|---:|"]
    for label, a, b, target, nd in rows:
        if isinstance(a, tuple):
            sa, sb, rt = " / ".join(fmt(x, nd=0) for x in a), " / ".join(fmt(x, nd=0) for x in b), "—"
        else:
            sa, sb, rt = fmt(a, nd=nd), fmt(b, nd=nd), ratio(a, b)
        lines.append(f"| {label} | {sa} | {sb} | {rt} | {target} |")
    lines += ["", "Definitions: see the module docstring of `bench/scale.py` (ready = first full Metadata v8 answer "
              "listing every topic with all partitions at error NONE with a leader, timed from the spawn; records "
              "missing = partitions among the 10% written whose ListOffsets latest ≠ 1 (after SIGTERM / after kill -9))."]
    for who, d in (("Runnel", P), ("Kafka", KP)):
        if "error" in d:
            lines.append(f"\n{who} partitions: **{d['error']}**")
    for who, d in (("Runnel", C), ("Kafka", KC)):
        if "error" in d:
            lines.append(f"\n{who} connections: **{d['error']}**")
    path.write_text("\n".join(lines) + "\n")


# ------------------------------------------------------------------ main
def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--topics", type=int)
    ap.add_argument("--conns", type=int)
    ap.add_argument("--metadata-reps", type=int)
    ap.add_argument("--no-kafka", action="store_true")
    ap.add_argument("--systems", default="runnel,kafka")
    ap.add_argument("--kafka-timeout", type=float, default=600)
    ap.add_argument("--kafka-heap", default="-Xms1g -Xmx2g")
    ap.add_argument("--profile", action="store_true", help="perf record the Runnel broker during the Metadata reps")
    ap.add_argument("--only", default="partitions,connections")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / f"{time.strftime('%Y-%m-%d')}-scale"))
    a = ap.parse_args()
    topics = a.topics or (20 if a.quick else 1000)
    conns = a.conns or (1000 if a.quick else 10000)
    reps = a.metadata_reps or (5 if a.quick else 20)

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    cap_note = ""
    budget = hard - min(hard // 4, 1024)  # Runnel's partition_budget() for this limit
    if topics * PARTS_PER_TOPIC > budget - 1000:
        capped = (budget - 1000) // PARTS_PER_TOPIC
        cap_note = (f"**{topics * PARTS_PER_TOPIC:,} partitions were asked for, but with a hard limit of {hard:,} "
                    f"open files Runnel refuses more than {budget:,} partitions (one descriptor each), so this run "
                    f"uses {capped:,} topics × {PARTS_PER_TOPIC} = {capped * PARTS_PER_TOPIC:,} partitions.**")
        log(cap_note.replace("**", ""))
        topics = capped
    if conns > hard - 200:
        conns = hard - 200
    meta = {"date": time.strftime("%Y-%m-%d"), "argv": sys.argv[1:],
            "commit": subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                     text=True).stdout.strip(),
            "machine": f"{os.cpu_count()} cores ({platform.processor() or platform.machine()}), "
                       f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB RAM, "
                       f"Linux {platform.release()}",
            "loadavg": " ".join(Path("/proc/loadavg").read_text().split()[:3]),
            "nofile": f"{soft:,}/{hard:,}", "kafka_heap": a.kafka_heap, "cap_note": cap_note,
            "vm.max_map_count": Path("/proc/sys/vm/max_map_count").read_text().strip()}
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    results: dict = {}
    root = Path(tempfile.mkdtemp(prefix="runnel-scale-", dir=ROOT / "target"))
    brokers: list[Broker] = []
    systems = [s for s in a.systems.split(",") if not (a.no_kafka and s == "kafka")]
    t_all = time.monotonic()
    try:
        for sysname in systems:
            timeout = 300 if sysname == "runnel" else a.kafka_timeout
            results[sysname] = {}
            for scen in a.only.split(","):
                b = Runnel(root) if sysname == "runnel" else Kafka(root, a.kafka_heap)
                brokers.append(b)
                res = {"partitions": topics * PARTS_PER_TOPIC} if scen == "partitions" else {}
                results[sysname][scen] = res
                log(f"== {sysname}: {scen}")
                try:
                    if scen == "partitions":
                        partitions_scenario(b, topics, reps, timeout, res, a.profile, 3 if a.quick else 10)
                    else:
                        connections_scenario(b, conns, timeout, res)
                except (StepTimeout, RuntimeError, OSError, ConnectionError) as e:
                    res["error"] = f"{type(e).__name__}: {e}".splitlines()[0][:300]
                    log(f"{sysname} {scen}: {res['error']}")
                    res["log_tail"] = b.tail(15)
                finally:
                    b.kill()
                    shutil.rmtree(b.dir, ignore_errors=True)
                with open(str(out) + ".jsonl", "a") as f:
                    f.write(json.dumps({"meta": meta, "system": sysname, "scenario": scen, **res}) + "\n")
                report(Path(str(out) + ".md"), meta, results)
    finally:
        for b in brokers:
            try:
                b.kill()
            except OSError:
                pass
        shutil.rmtree(root, ignore_errors=True)
    log(f"done in {time.monotonic() - t_all:.0f} s: {out}.md")


if __name__ == "__main__":
    main()
