"""The campaign's test rig: network namespaces, mounts and three real `runnel` processes.

Layout with root (the default when the harness runs as root):
  bridge rncbr0 10.213.77.254/24 in the root namespace (the harness and its clients live there)
  netns rnc-N (N = 1, 2, 3): veth rncvN (root side, in the bridge) <-> eth0 10.213.77.N/24; lo up
  node N: `runnel server` in rnc-N, client listener 10.213.77.N:9092, controller 10.213.77.N:9093
Without root every node listens on 127.0.0.1 with free ports and the classes needing root are skipped.

Only the network namespace is entered (setns in the child before exec): mounts stay in the root mount
namespace, so tmpfs/loop mounts made by the harness are what the broker sees. Every process is tracked by
PID (written to WORK_ROOT/pids) and killed by PID, also by the clean-up a later run does after an abort.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
import kproto  # noqa: E402

RUNNEL_BIN = Path(os.environ.get("RUNNEL_BIN", ROOT / "target" / "release" / "runnel"))
WORK_ROOT = Path(os.environ.get("RUNNEL_CAMPAIGN_DIR", "/tmp/runnel-campaign"))
NS_PREFIX = "rnc-"
BRIDGE = "rncbr0"
SUBNET = "10.213.77"
NODES = (1, 2, 3)
CLONE_NEWNET = 0x40000000
EXT4_IOC_SHUTDOWN = 0x8004587D  # _IOR('X', 125, __u32), as XFS_IOC_GOINGDOWN
SHUTDOWN_NOLOGFLUSH = 2  # drop dirty data and the unflushed journal: what a power cut leaves on disk


class RigError(Exception):
    """The rig could not do what was asked (a node not starting, a command failing)."""


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run(list(argv), capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RigError(f"{' '.join(argv)}: exit {r.returncode}: {r.stderr.strip()}")
    return r


def is_root() -> bool:
    """Whether the root-only setup (namespaces, mounts) is used: running as root and not asked to stay
    unprivileged (`--unprivileged` / RUNNEL_CAMPAIGN_UNPRIVILEGED=1, as the CI smoke does)."""
    return os.geteuid() == 0 and os.environ.get("RUNNEL_CAMPAIGN_UNPRIVILEGED", "") not in ("1", "true")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------------------------------------- clean-up
def cleanup_stale():
    """Removes what an aborted run may have left: processes (by recorded PID, only if still a runnel),
    namespaces, the bridge, mounts and loop devices under WORK_ROOT, and work dirs without a kept violation."""
    pids = WORK_ROOT / "pids"
    if pids.exists():
        for line in pids.read_text().split():
            try:
                pid = int(line)
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            except (ValueError, OSError):
                continue
            if b"runnel" in cmd and str(WORK_ROOT).encode() in cmd:  # ours, not a reused PID
                os.kill(pid, signal.SIGKILL)
        pids.unlink()
    if is_root():
        for ns in sh("ip", "netns", "list", check=False).stdout.split("\n"):
            name = ns.split(" ")[0]
            if name.startswith(NS_PREFIX):
                sh("ip", "netns", "del", name, check=False)
        sh("ip", "link", "del", BRIDGE, check=False)
        unmount_under(WORK_ROOT)
    if WORK_ROOT.exists():
        for d in WORK_ROOT.iterdir():
            if d.is_dir() and not (d / "KEEP").exists() and not any(d.glob("*/KEEP")):
                shutil.rmtree(d, ignore_errors=True)


def unmount_under(path: Path):
    """Lazily unmounts every mount below `path`, deepest first (loop devices auto-clear)."""
    prefix = str(path.resolve()) + "/"
    points = [ln.split()[1] for ln in Path("/proc/mounts").read_text().splitlines()
              if ln.split()[1].startswith(prefix)]
    for p in sorted(points, key=len, reverse=True):
        sh("umount", "-l", p, check=False)


def record_pid(pid: int):
    WORK_ROOT.mkdir(parents=True, exist_ok=True)
    with open(WORK_ROOT / "pids", "a") as f:
        f.write(f"{pid}\n")


# ---------------------------------------------------------------------------------------------- network
class Net:
    """The namespaces and the bridge; `enabled` False means plain 127.0.0.1 (no root)."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.blocked: list[tuple[int, int]] = []

    def setup(self):
        if not self.enabled:
            return
        sh("ip", "link", "add", BRIDGE, "type", "bridge")
        sh("ip", "addr", "add", f"{SUBNET}.254/24", "dev", BRIDGE)
        sh("ip", "link", "set", BRIDGE, "up")
        for n in NODES:
            ns = f"{NS_PREFIX}{n}"
            sh("ip", "netns", "add", ns)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
            sh("ip", "link", "add", f"rncv{n}", "type", "veth", "peer", "name", "eth0", "netns", ns)
            sh("ip", "-n", ns, "addr", "add", f"{SUBNET}.{n}/24", "dev", "eth0")
            sh("ip", "-n", ns, "link", "set", "eth0", "up")
            sh("ip", "link", "set", f"rncv{n}", "master", BRIDGE)
            sh("ip", "link", "set", f"rncv{n}", "up")

    def teardown(self):
        if not self.enabled:
            return
        for n in NODES:
            sh("ip", "netns", "del", f"{NS_PREFIX}{n}", check=False)
        sh("ip", "link", "del", BRIDGE, check=False)

    def host(self, n: int) -> str:
        return f"{SUBNET}.{n}" if self.enabled else "127.0.0.1"

    def enter(self, n: int):
        """A preexec_fn: the child joins node n's network namespace and dies with the harness."""
        path = f"/var/run/netns/{NS_PREFIX}{n}" if self.enabled else None

        def pre():
            libc = ctypes.CDLL("libc.so.6", use_errno=True)
            libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
            if path:
                fd = os.open(path, os.O_RDONLY)
                if libc.setns(fd, CLONE_NEWNET) != 0:
                    os._exit(97)
                os.close(fd)
        return pre

    def isolate(self, n: int):
        """Symmetric partition: node n's cable is pulled (no peer and no client reaches it, nor it them)."""
        sh("ip", "link", "set", f"rncv{n}", "down")

    def reconnect(self, n: int):
        sh("ip", "link", "set", f"rncv{n}", "up")

    def block(self, src: int, dst: int):
        """One-way: packets from node src to node dst are dropped (a blackhole route in src's namespace);
        dst still reaches src, and the harness reaches both."""
        sh("ip", "-n", f"{NS_PREFIX}{src}", "route", "add", "blackhole", f"{SUBNET}.{dst}/32")
        self.blocked.append((src, dst))

    def unblock_all(self):
        for src, dst in self.blocked:
            sh("ip", "-n", f"{NS_PREFIX}{src}", "route", "del", "blackhole", f"{SUBNET}.{dst}/32", check=False)
        self.blocked.clear()


# ---------------------------------------------------------------------------------------------- mounts
class Mounts:
    """tmpfs and loop-mounted ext4 file systems, all unmounted by `close` whatever happened."""

    def __init__(self):
        self.points: list[Path] = []

    def tmpfs(self, path: Path, size: str):
        path.mkdir(parents=True, exist_ok=True)
        sh("mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path))
        self.points.append(path)

    def ext4(self, image: Path, path: Path, size: str):
        """An ext4 file system in a sparse image file, loop-mounted at `path`."""
        if not image.exists():
            sh("truncate", "-s", size, str(image))
            sh("mkfs.ext4", "-q", "-F", str(image))
        path.mkdir(parents=True, exist_ok=True)
        sh("mount", "-o", "loop", str(image), str(path))
        self.points.append(path)

    def power_cut(self, path: Path):
        """EXT4_IOC_SHUTDOWN with NOLOGFLUSH (xfstests' `godown`): the file system stops at once and
        its dirty pages and uncommitted journal are dropped, as a power cut drops them; then unmount."""
        import fcntl
        fd = os.open(path, os.O_RDONLY)
        try:
            fcntl.ioctl(fd, EXT4_IOC_SHUTDOWN, struct.pack("I", SHUTDOWN_NOLOGFLUSH))
        finally:
            os.close(fd)
        sh("umount", str(path))
        self.points.remove(path)

    def close(self):
        for p in reversed(self.points):
            sh("umount", "-l", str(p), check=False)
        self.points.clear()


def fill(path: Path) -> Path:
    """Writes `path`/filler until its file system is full (ENOSPC); returns the filler."""
    filler = path / "filler"
    with open(filler, "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass
    return filler


# ---------------------------------------------------------------------------------------------- nodes
class Node:
    """One `runnel server` (broker + controller) of the three."""

    def __init__(self, n: int, net: Net, base: Path, sets: dict, voters: str, ports: tuple[int, int]):
        self.n = n
        self.net = net
        self.dir = base / f"n{n}"
        self.data_dir = self.dir / "data"
        self.log_path = self.dir / "broker.log"
        self.host = net.host(n)
        self.port, self.cport = ports
        self.bootstrap = f"{self.host}:{self.port}"
        # No metrics endpoint (issue 17): the nodes may share one loopback, where its default port collides.
        self.sets = dict(sets, **{"controller.quorum.voters": voters, "metrics.listeners": ""})
        self.proc: subprocess.Popen | None = None
        self.stopped = False  # SIGSTOPped
        self.dir.mkdir(parents=True, exist_ok=True)

    def argv(self) -> list[str]:
        argv = [str(RUNNEL_BIN), "server", "--listen", self.bootstrap, "--data-dir", str(self.data_dir),
                "--node-id", str(self.n), "--controller-listen", f"{self.host}:{self.cport}"]
        for k, v in self.sets.items():
            argv += ["--set", f"{k}={v}"]
        return argv

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def spawn(self):
        assert not self.alive(), f"node {self.n} already running"
        with open(self.log_path, "ab") as log:
            log.write(f"\n===== start at {time.strftime('%H:%M:%S')}: {' '.join(self.argv())}\n".encode())
            log.flush()
            env = {**os.environ, "TOKIO_WORKER_THREADS": "2"}
            self.proc = subprocess.Popen(self.argv(), stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, cwd=self.dir,
                                         preexec_fn=self.net.enter(self.n), env=env)
        record_pid(self.proc.pid)

    def wait_ready(self, timeout: float = 30.0):
        deadline = time.monotonic() + timeout
        why = ""
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RigError(f"node {self.n} exited {self.proc.returncode} at start:\n{self.log_tail()}")
            try:
                with kproto.Connection(self.bootstrap, timeout=1.0) as c:
                    err, _ = kproto.api_versions_v0(c)
                    if err == 0:
                        return
            except (OSError, ValueError, ConnectionError) as e:
                why = repr(e)
            time.sleep(0.1)
        raise RigError(f"node {self.n} not answering within {timeout}s ({why}):\n{self.log_tail()}")

    def start(self):
        self.spawn()
        self.wait_ready()

    def kill9(self):
        if self.alive():
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
        self.stopped = False

    def sigstop(self):
        self.proc.send_signal(signal.SIGSTOP)
        self.stopped = True

    def sigcont(self):
        if self.alive():
            self.proc.send_signal(signal.SIGCONT)
        self.stopped = False

    def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM and wait; returns the exit code (-9 when it had to be killed after `timeout`)."""
        if not self.alive():
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill9()
            return -9

    def log_tail(self, n: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"


# ---------------------------------------------------------------------------------------------- metadata
def metadata(bootstrap: str, topics: list[str] | None, timeout: float = 1.5) -> dict:
    """Metadata v8 asked of one broker: {"brokers": [ids], "topics": {name: {p: (err, leader, isr)}}}.
    `topics` None asks for all topics. Raises OSError/ConnectionError when the broker does not answer."""
    w = kproto.Writer()
    if topics is None:
        w.i32(-1)
    else:
        w.i32(len(topics))
        for t in topics:
            w.string(t)
    w.i8(0).i8(0).i8(0)  # no auto-creation, no cluster/topic authorized operations
    with kproto.Connection(bootstrap, timeout=timeout) as c:
        r = c.request(kproto.METADATA, 8, bytes(w.buf))
    r.i32()
    brokers = [b[0] for b in r.array(lambda r: (r.i32(), r.string(), r.i32(), r.string()))]
    r.string()
    r.i32()
    out = {}
    for _ in range(r.i32()):
        _err, name, _internal = r.i16(), r.string(), r.i8()
        parts = {}
        for _ in range(r.i32()):
            perr, pidx, leader = r.i16(), r.i32(), r.i32()
            r.i32()
            r.array(lambda r: r.i32())
            isr = r.array(lambda r: r.i32())
            r.array(lambda r: r.i32())
            parts[pidx] = (perr, leader, sorted(isr))
        r.i32()
        out[name] = parts
    return {"brokers": sorted(brokers), "topics": out}


class Cluster:
    """Three nodes sharing `controller.quorum.voters`; a fresh base dir per cluster."""

    def __init__(self, net: Net, base: Path, sets: dict):
        self.net = net
        self.base = base
        ports = {n: (9092, 9093) if net.enabled else (free_port(), free_port()) for n in NODES}
        voters = ",".join(f"{n}@{net.host(n)}:{ports[n][1]}" for n in NODES)
        self.nodes = {n: Node(n, net, base, sets, voters, ports[n]) for n in NODES}

    @property
    def bootstrap(self) -> str:
        return ",".join(n.bootstrap for n in self.nodes.values())

    def start(self, timeout: float = 60.0):
        for n in self.nodes.values():
            n.spawn()
        for n in self.nodes.values():
            n.wait_ready()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(self.ask(n, None).get("brokers") == list(NODES) for n in NODES):
                return self
            time.sleep(0.2)
        raise RigError("three brokers not registered in time:\n" + self.tails())

    def ask(self, n: int, topics: list[str] | None) -> dict:
        """Node n's metadata, or {} when it does not answer."""
        node = self.nodes[n]
        if not node.alive() or node.stopped:
            return {}
        try:
            return metadata(node.bootstrap, topics)
        except (OSError, ConnectionError, ValueError, struct.error):
            return {}

    def close(self):
        for n in self.nodes.values():
            n.sigcont()
            n.kill9()

    def tails(self, lines: int = 20) -> str:
        return "\n".join(f"--- node {i}:\n{n.log_tail(lines)}" for i, n in self.nodes.items())
