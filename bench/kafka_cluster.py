"""A four-node Apache Kafka 4.4.0 KRaft cluster on 127.0.0.1 for the benches (bench/rebalance.py --peer kafka).

Nodes 1-3 are combined controller+broker nodes (static `controller.quorum.voters`, like the tests' runnel
Cluster), node 4 is a broker-only node started later (`start_fourth`). Jars, the JVM command line and the
log4j layout come from scripts/kafka-reference.sh (`classpath`, `java-cmd`); every JVM runs under
`nice -n $KAFKA_NICE` (default 10: a shared machine; 0 runs Kafka at runnel's priority) with KAFKA_HEAP_OPTS
(default -Xms128m -Xmx512m), on free ports, in one temp dir that `close` deletes after killing every node by
its PID (also on failure: use the cluster as a context manager).

Kafka's command-line tools run with `tool(main_class, *args)` (same JVM, smaller heap, bounded).
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from conftest import _die_with_parent, api_versions_ok, free_port  # noqa: E402
from test_cluster import MetadataWaits  # noqa: E402

KAFKA_SCRIPT = ROOT / "scripts" / "kafka-reference.sh"
HEAP = os.environ.get("KAFKA_HEAP_OPTS", "-Xms128m -Xmx512m")
NICE = ["nice", "-n", os.environ.get("KAFKA_NICE", "10")]  # 0: as runnel runs (a quiet machine)
STARTUP_TIMEOUT_S = 180  # a JVM under nice on a busy 2-core machine
TOOL_TIMEOUT_S = 300
REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
CONTROLLERS = (1, 2, 3)

_classpath: str | None = None


def classpath() -> str:
    """The Kafka jars (`kafka-reference.sh classpath` fetches them once)."""
    global _classpath
    if _classpath is None:
        _classpath = subprocess.run(["bash", str(KAFKA_SCRIPT), "classpath"], check=True, capture_output=True,
                                    text=True, timeout=1800).stdout.strip().splitlines()[-1]
    return _classpath


def tool_log_config() -> Path:
    path = ROOT / ".test-deps" / "kafka" / "tools-log4j.properties"
    if not path.exists():
        path.write_text("log4j.rootLogger=ERROR, stderr\nlog4j.appender.stderr=org.apache.log4j.ConsoleAppender\n"
                        "log4j.appender.stderr.Target=System.err\n"
                        "log4j.appender.stderr.layout=org.apache.log4j.PatternLayout\n"
                        "log4j.appender.stderr.layout.ConversionPattern=%p %m (%c)%n\n")
    return path


def tool_argv(main_class: str, *args: str) -> list[str]:
    return [*NICE, "java", "-XX:TieredStopAtLevel=1", "-Xmx256m", f"-Dlog4j.configuration=file:{tool_log_config()}",
            "-cp", classpath(), main_class, *args]


def tool(main_class: str, *args: str, timeout: float = TOOL_TIMEOUT_S) -> str:
    """Runs a Kafka tool to its exit (bounded); its stdout. Raises with its output unless it exits 0."""
    res = subprocess.run(tool_argv(main_class, *args), capture_output=True, text=True, timeout=timeout)
    if res.returncode != 0:
        raise RuntimeError(f"{main_class} {' '.join(args)} exited {res.returncode}:\n{res.stdout[-3000:]}\n"
                           f"{res.stderr[-3000:]}")
    return res.stdout


class KafkaNode:
    def __init__(self, node_id: int, root: Path, voters: str, controller_port: int | None, props: dict):
        self.node_id = node_id
        self.port = free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.controller_port = controller_port
        self.dir = root / f"node{node_id}"
        self.data_dir = self.dir / "data"
        self.log_path = self.dir / "server.log"
        self.proc: subprocess.Popen | None = None
        self.dir.mkdir(parents=True)
        listeners = f"PLAINTEXT://{self.bootstrap}"
        if controller_port:
            listeners += f",CONTROLLER://127.0.0.1:{controller_port}"
        lines = {"process.roles": "broker,controller" if controller_port else "broker",
                 "node.id": str(node_id), "controller.quorum.voters": voters, "listeners": listeners,
                 "advertised.listeners": f"PLAINTEXT://{self.bootstrap}", "controller.listener.names": "CONTROLLER",
                 "inter.broker.listener.name": "PLAINTEXT",
                 "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                 "log.dirs": str(self.data_dir), **props}
        (self.dir / "server.properties").write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
        (self.dir / "log4j.properties").write_text(
            "log4j.rootLogger=WARN, stderr\nlog4j.appender.stderr=org.apache.log4j.ConsoleAppender\n"
            "log4j.appender.stderr.Target=System.err\nlog4j.appender.stderr.layout=org.apache.log4j.PatternLayout\n"
            "log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n\n")

    def format_cmd(self, cluster_id: str) -> list[str]:
        return tool_argv("kafka.tools.StorageTool", "format", "-t", cluster_id, "-c",
                         str(self.dir / "server.properties"))

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"

    def start(self):
        env = {**os.environ, "KAFKA_HEAP_OPTS": HEAP}
        argv = subprocess.run(["bash", str(KAFKA_SCRIPT), "java-cmd", str(self.dir)], check=True, env=env,
                              capture_output=True, text=True, timeout=60).stdout.splitlines()
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen([*NICE, *argv], stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, cwd=self.dir, preexec_fn=_die_with_parent)

    def wait_ready(self):
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        why = ""
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"kafka node {self.node_id} exited with {self.proc.returncode} during startup; "
                                   f"log tail:\n{self.log_tail()}")
            ok, why = api_versions_ok(self.bootstrap)
            if ok:
                return
            time.sleep(0.2)
        raise RuntimeError(f"kafka node {self.node_id} on {self.bootstrap} not answering ApiVersions within "
                           f"{STARTUP_TIMEOUT_S}s (last: {why}); log tail:\n{self.log_tail()}")

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(60)


class KafkaCluster(MetadataWaits):
    """Nodes 1-3 combined, node 4 broker-only (not started by `start`). Quacks like the tests' runnel Cluster
    where bench/rebalance.py needs it: `nodes`, `bootstrap`, `client_conf`, `alive_bootstrap`, `metadata`, `wait`."""

    def __init__(self, props: dict | None = None):
        self.client_conf: dict = {}
        self.root = Path(tempfile.mkdtemp(prefix="kafka-bench-"))
        base = {"num.partitions": "1", "default.replication.factor": "3", "min.insync.replicas": "1",
                "offsets.topic.replication.factor": "3", "offsets.topic.num.partitions": "3",
                "transaction.state.log.replication.factor": "3", "transaction.state.log.min.isr": "1",
                "share.coordinator.state.topic.replication.factor": "3",
                "share.coordinator.state.topic.min.isr": "1", "group.initial.rebalance.delay.ms": "0",
                **(props or {})}
        cports = {n: free_port() for n in CONTROLLERS}
        voters = ",".join(f"{n}@127.0.0.1:{cports[n]}" for n in CONTROLLERS)
        self.nodes = {n: KafkaNode(n, self.root, voters, cports[n], base) for n in CONTROLLERS}
        self.nodes[4] = KafkaNode(4, self.root, voters, None, base)

    def __enter__(self):
        return self

    def __exit__(self, *_exc):
        self.close()

    @property
    def bootstrap(self) -> str:
        return ",".join(self.nodes[n].bootstrap for n in CONTROLLERS)

    def alive_bootstrap(self) -> str:
        return ",".join(n.bootstrap for n in self.nodes.values() if n.proc and n.proc.poll() is None)

    def start(self):
        """Formats all four nodes' storage (one cluster id), starts nodes 1-3, waits for three brokers."""
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        formats = []
        try:
            for n in self.nodes.values():
                formats.append((n, subprocess.Popen(n.format_cmd(cluster_id), stdout=subprocess.PIPE,
                                                    stderr=subprocess.STDOUT, text=True)))
            for n, p in formats:
                try:
                    out, _ = p.communicate(timeout=TOOL_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    raise RuntimeError(f"formatting kafka node {n.node_id} took over {TOOL_TIMEOUT_S}s") from None
                if p.returncode != 0:
                    raise RuntimeError(f"formatting kafka node {n.node_id} failed:\n{out[-3000:]}")
        finally:
            for _, p in formats:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        for n in CONTROLLERS:
            self.nodes[n].start()
        for n in CONTROLLERS:
            self.nodes[n].wait_ready()
        self.wait(lambda md: len(md.brokers) == 3, "three kafka brokers registered", STARTUP_TIMEOUT_S)
        return self

    def start_fourth(self):
        self.nodes[4].start()

    def wait_fourth(self):
        self.nodes[4].wait_ready()
        self.wait(lambda md: len(md.brokers) == 4, "four kafka brokers registered", STARTUP_TIMEOUT_S)

    def close(self):
        for n in self.nodes.values():
            n.kill()
        if os.environ.get("RUNNEL_TEST_KEEP"):
            print(f"kept {self.root}", file=sys.stderr)
        else:
            shutil.rmtree(self.root, ignore_errors=True)
