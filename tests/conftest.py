"""pytest fixtures: a real broker process per session (shared) or per test (isolated).

Which broker:
  default                      target/release/runnel server (built by scripts/test.sh); RUNNEL_BIN=PATH
                               names another build of it
  RUNNEL_TEST_BOOTSTRAP=h:p    an already running external broker; tests needing restart/kill are skipped
  RUNNEL_TEST_BROKER=kafka     Apache Kafka 4.4.0 (scripts/kafka-reference.sh), started and killed by the
                               fixtures exactly like runnel, so restart/kill tests run against Kafka too

Debugging:
  RUNNEL_TEST_KEEP=1           keep each broker's temp dir (data and broker.log) instead of deleting it; the
                               path is printed (use -s). With RUNNEL_LOG=info,broker=debug the log has every
                               JoinGroup/SyncGroup/Heartbeat/LeaveGroup and its answer.

Fixtures:
  broker        session-scoped shared broker (tests use unique topic names)
  fresh_broker  a broker of its own with its own data dir (restart / kill -9 tests)
  topic         a unique topic name; `make_topic(bootstrap, name, partitions)` creates one
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import kproto  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RUNNEL_BIN = Path(os.environ.get("RUNNEL_BIN") or ROOT / "target" / "release" / "runnel")
KAFKA_SCRIPT = ROOT / "scripts" / "kafka-reference.sh"
EXTERNAL = os.environ.get("RUNNEL_TEST_BOOTSTRAP")
MODE = "external" if EXTERNAL else os.environ.get("RUNNEL_TEST_BROKER", "runnel")
STARTUP_TIMEOUT_S = 90 if MODE == "kafka" else 30


def _die_with_parent():
    """preexec_fn: the broker gets SIGKILL if the test process dies (no orphaned brokers after a hard stop)."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def _sigterm_to_interrupt(_sig, _frame):
    raise KeyboardInterrupt("SIGTERM")  # lets pytest run fixture teardowns (brokers killed by PID)


signal.signal(signal.SIGTERM, _sigterm_to_interrupt)


_HANDED_OUT: set[int] = set()


def free_port() -> int:
    """A port free now and never handed out before in this test process: a cluster picks all its ports
    before any process binds them, and the kernel may offer one port twice (a broker listener once collided
    with another node's controller listener)."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port


def api_versions_ok(bootstrap: str) -> tuple[bool, str]:
    """One TCP connect plus an ApiVersions v0 round trip with error 0."""
    try:
        with kproto.Connection(bootstrap, timeout=2.0) as c:
            err, apis = kproto.api_versions_v0(c)
            if err != 0 or kproto.API_VERSIONS not in apis:
                return False, f"ApiVersions error {err}"
            return True, ""
    except (OSError, ValueError, ConnectionError) as e:
        return False, repr(e)


class _PortTaken(Exception):
    """The broker could not bind its port: another process took it after `free_port()` released it."""


class BrokerProcess:
    """A broker process started by the tests: runnel, or Kafka in RUNNEL_TEST_BROKER=kafka mode.

    `.bootstrap` is "127.0.0.1:PORT"; the port and data dir stay the same across restarts.
    """

    kind = MODE

    def __init__(self, sets: dict | None = None):
        self.port = free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.dir = Path(tempfile.mkdtemp(prefix="runnel-test-"))
        self.data_dir = self.dir / "data"
        # Every broker's metrics endpoint (issue 17) on a port of its own: the default one would collide.
        self.metrics_port = free_port()
        self.sets = {"num.partitions": "4", "metrics.listeners": f"http://127.0.0.1:{self.metrics_port}"}
        self.sets.update(sets or {})
        self.proc: subprocess.Popen | None = None
        self.log_path = self.dir / "broker.log"
        self.starts = 0

    # -- command lines
    def argv(self) -> list[str]:
        if self.kind == "kafka":
            subprocess.run(["bash", str(KAFKA_SCRIPT), "prepare", str(self.dir), str(self.port)], check=True)
            out = subprocess.run(["bash", str(KAFKA_SCRIPT), "java-cmd", str(self.dir)], check=True,
                                 capture_output=True, text=True).stdout
            return out.splitlines()
        if not RUNNEL_BIN.exists():
            pytest.fail(f"{RUNNEL_BIN} not found: run `cargo build --release` (scripts/test.sh does)")
        argv = [str(RUNNEL_BIN), "server", "--listen", self.bootstrap, "--data-dir", str(self.data_dir)]
        for k, v in self.sets.items():
            argv += ["--set", f"{k}={v}"]
        return argv

    def log_tail(self, n: int = 40) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return "(no log)"
        return "\n".join(lines[-n:])

    # -- lifecycle
    def start(self):
        """Starts the broker and waits until it answers ApiVersions. A first start whose port was taken by
        another process between `free_port()` and the bind retries on a new port (at most 3 times)."""
        for attempt in range(3):
            try:
                return self._start_once()
            except _PortTaken:
                if self.starts > 1 or attempt == 2:
                    pytest.fail(f"port {self.port} taken; log tail:\n{self.log_tail()}")
                self.starts -= 1
                self.port = free_port()
                self.bootstrap = f"127.0.0.1:{self.port}"

    def _start_once(self):
        assert self.proc is None or self.proc.poll() is not None, "already running"
        argv = self.argv()
        log = open(self.log_path, "ab")
        log.write(f"\n===== start #{self.starts + 1}: {' '.join(argv)}\n".encode())
        log.flush()
        # The broker must serve everything with two runtime workers (issue 12: no request blocks a worker),
        # whatever the machine: two unless the caller asks for another count (the suite also passes with 1).
        env = {**os.environ, "TOKIO_WORKER_THREADS": os.environ.get("TOKIO_WORKER_THREADS", "2")}
        self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     cwd=self.dir, preexec_fn=_die_with_parent, env=env)
        log.close()
        self.starts += 1
        self.wait_ready()
        return self

    def wait_ready(self):
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        why = ""
        while time.monotonic() < deadline:
            rc = self.proc.poll()
            if rc is not None:
                tail = self.log_tail()
                if "Address already in use" in tail.split("===== start #")[-1]:
                    raise _PortTaken()
                pytest.fail(f"{self.kind} broker exited with {rc} during startup; log tail:\n{tail}")
            ok, why = api_versions_ok(self.bootstrap)
            if ok:
                return
            time.sleep(0.1)
        self.kill9()
        pytest.fail(f"{self.kind} broker on {self.bootstrap} not answering ApiVersions within "
                    f"{STARTUP_TIMEOUT_S}s (last: {why}); log tail:\n{self.log_tail()}")

    def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM, wait for the exit (bounded) and return the exit code; runnel must exit 0 (clean shutdown).
        (Kafka's JVM exits 143 on SIGTERM, so the check applies to runnel only.)"""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            pytest.fail(f"broker did not exit within {timeout}s of SIGTERM; log tail:\n{self.log_tail()}")
        if self.kind == "runnel":
            assert rc == 0, f"runnel exited {rc} on SIGTERM (want 0); log tail:\n{self.log_tail()}"
        return rc

    def kill9(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def restart(self):
        """Clean restart: SIGTERM (expects exit 0 for runnel), then start again on the same port and data."""
        self.stop()
        self.start()

    def close(self):
        self.kill9()
        if os.environ.get("RUNNEL_TEST_KEEP"):
            print(f"kept {self.dir}")
        else:
            shutil.rmtree(self.dir, ignore_errors=True)


class ExternalBroker:
    kind = "external"

    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap

    def _skip(self, *_a, **_k):
        pytest.skip("needs a broker started by the tests (RUNNEL_TEST_BOOTSTRAP is set)")

    restart = stop = kill9 = start = _skip

    def close(self):
        pass


def new_broker(sets: dict | None = None):
    if MODE == "external":
        return ExternalBroker(EXTERNAL)
    return BrokerProcess(sets).start()


@pytest.fixture(scope="session")
def broker():
    b = new_broker()
    yield b
    b.close()


@pytest.fixture
def fresh_broker():
    if MODE == "external":
        pytest.skip("needs a broker started by the tests (RUNNEL_TEST_BOOTSTRAP is set)")
    b = new_broker()
    yield b
    b.close()


@pytest.fixture
def topic(request):
    safe = "".join(ch if ch.isalnum() else "-" for ch in request.node.name)[:80]
    return f"t-{safe}-{uuid.uuid4().hex[:8]}"


def make_topic(bootstrap: str, name: str, partitions: int = 1, configs: dict | None = None):
    """Create `name` with CreateTopics (raw protocol) and wait until every partition has a leader."""
    with kproto.Connection(bootstrap) as c:
        err = kproto.create_topic(c, name, partitions, configs)
        assert err in (0, kproto.TOPIC_ALREADY_EXISTS), f"CreateTopics {name}: error {err}"
        kproto.wait_topic_ready(c, name, partitions)


def kafka_python_read(consumer, n: int, timeout: float = 60.0) -> list[bytes]:
    """The values a subscribed kafka-python `consumer` returns until it has `n` (bounded: fails naming how many
    came), then checks that nothing is left to read (its position is the end offset of every assigned partition),
    so the caller's comparison of exactly these `n` values also proves there are no extra records. (Iterating
    with `consumer_timeout_ms` instead would wait that long after the last record.)"""
    got: list[bytes] = []
    deadline = time.monotonic() + timeout
    while len(got) < n:
        if time.monotonic() > deadline:
            pytest.fail(f"kafka-python consumer: {len(got)} of {n} records within {timeout}s")
        for records in consumer.poll(timeout_ms=200).values():
            got.extend(r.value for r in records)
    ends = consumer.end_offsets(list(consumer.assignment()))
    positions = {tp: consumer.position(tp) for tp in ends}
    left = {tp: (positions[tp], end) for tp, end in ends.items() if positions[tp] != end}
    assert not left, f"read {len(got)} records, but partitions are not at their end (position, end): {left}"
    return got


def pytest_report_header(config):
    target = EXTERNAL or (str(RUNNEL_BIN) if MODE == "runnel" else "Apache Kafka 4.4.0 (kafka-reference.sh)")
    return f"broker under test: {MODE} ({target})"


def pytest_configure(config):
    config.addinivalue_line("filterwarnings", "ignore::DeprecationWarning")
    for name, doc in [("pitfalls", "raw-socket tests for shared/guides/pitfalls.md"),
                      ("api", "raw-socket checks of issue 2's APIs against Kafka's behaviour"),
                      ("roundtrip", "100k-record round trips per client and codec"),
                      ("durability", "restart / kill -9 tests (need a broker started by the fixtures)"),
                      ("kafka_tools", "Apache Kafka's own command-line tools as clients (JVM start-up heavy)"),
                      ("cluster", "three runnel processes forming one cluster (issue 5)")]:
        config.addinivalue_line("markers", f"{name}: {doc}")


def assert_rest_error(r, status: int, code: int | None = None):
    """`r` (a `requests` response) is an HTTP API error: `status`, and a REST Proxy error body
    `{"error_code", "message"}` whose code is `code` (default: the status)."""
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"error_code", "message"}, body
    assert body["error_code"] == (code or status), body
    assert body["message"], body
