"""The web console (issue 17) in a real browser: Debian's Chromium driven by playwright-core (tests/console/
console.mjs) against the real broker. The browser creates a topic, changes a config, produces a record from the
form and sees it in the live tail and the message browser, browses 1,000 records, watches a consumer group's
lag fall to 0 while a real consumer catches up, resets the group's offsets and opens the metrics charts.
Screenshots land in tests/artifacts/console/ (RUNNEL_TEST_ARTIFACTS overrides the directory)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import MODE, BrokerProcess

pytestmark = pytest.mark.skipif(MODE != "runnel", reason="Runnel's own console")

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tests" / "console" / "console.mjs"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
# The browser script's own waits are 20 s each; the whole run is bounded here.
RUN_TIMEOUT = 180


def prepare(bootstrap: str):
    """1,000 records in console-bulk; 20 in console-lag, of which group console-group committed 5."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic("console-bulk", 1, 1), NewTopic("console-lag", 1, 1)]).values():
        f.result(30)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(1000):
        p.produce("console-bulk", key=f"k{i}".encode(), value=f'{{"n":{i}}}'.encode())
    for i in range(20):
        p.produce("console-lag", value=f"lag-{i}".encode())
    assert p.flush(30) == 0
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "console-group", "enable.auto.commit": False})
    # The first commit can meet __consumer_offsets still being created (COORDINATOR_NOT_AVAILABLE, retriable).
    deadline = time.monotonic() + 30
    while True:
        try:
            c.commit(offsets=[TopicPartition("console-lag", 0, 5)], asynchronous=False)
            break
        except KafkaException as e:
            if not e.args[0].retriable() or time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    c.close()


def consume_rest(bootstrap: str):
    """A real consumer of console-group reads console-lag to its end and commits."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "console-group",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    c.subscribe(["console-lag"])
    seen = 0
    for _ in range(300):
        m = c.poll(0.1)
        if m is not None and m.error() is None:
            seen += 1
            if m.offset() == 19:
                break
    c.commit(asynchronous=False)
    c.close()
    assert seen == 15, seen


def test_console_in_a_browser():
    node = shutil.which("node")
    assert node, "node is required (a toolchain of the README)"
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} missing: scripts/install-test-deps.sh installs Debian's chromium"
    assert (SCRIPT.parent / "node_modules" / "playwright-core").exists(), \
        "playwright-core missing: scripts/install-test-deps.sh runs npm ci in tests/console"
    artifacts = Path(os.environ.get("RUNNEL_TEST_ARTIFACTS", ROOT / "tests" / "artifacts")) / "console"
    b = BrokerProcess({"num.partitions": "1"}).start()
    try:
        prepare(b.bootstrap)
        base = f"http://127.0.0.1:{b.metrics_port}"
        proc = subprocess.Popen([node, str(SCRIPT), base, str(artifacts)], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, cwd=SCRIPT.parent)
        killer = threading.Timer(RUN_TIMEOUT, proc.kill)
        killer.start()
        out, metrics = [], {}
        try:
            for line in proc.stdout:
                out.append(line)
                sys.stdout.write(f"[console] {line}")
                if line.startswith("CONSUME"):
                    consume_rest(b.bootstrap)
                elif line.startswith("METRIC "):
                    name, value = line[7:].strip().split("=")
                    metrics[name] = float(value)
            rc = proc.wait()
        finally:
            killer.cancel()
            if proc.poll() is None:
                proc.kill()
        assert rc == 0 and any(l.startswith("DONE") for l in out), (
            f"the browser run failed (rc {rc}); screenshot {artifacts}/failure.png\n" + "".join(out[-30:]))
        for shot in ("overview", "topic", "messages", "group", "metrics"):
            assert (artifacts / f"{shot}.png").stat().st_size > 10_000, shot
        print(f"console timings: {metrics}")
    finally:
        b.close()
