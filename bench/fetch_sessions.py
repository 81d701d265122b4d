#!/usr/bin/env python3
"""Bytes on the wire per idle Fetch of a 1,000-partition consumer, with and without an incremental fetch session
(KIP-227), Runnel and Apache Kafka 4.4.0 side by side. Not a test: it prints a table.

For each broker: a topic of PARTITIONS partitions (no records), then raw Fetch v11 requests (tests/kproto.py;
topic by name, max_wait_ms 0, nothing to read):
  * sessionless  — session id 0, epoch -1: a full fetch naming every partition, answered with every partition;
  * create       — session id 0, epoch 0: the same full fetch, answered with a new session id;
  * incremental  — that session at epochs 1..REPS with no partition named: the idle steady state.
Sizes are whole frames (4-byte size prefix, header and body), request and response.

Measured 2026-12-06 (2 cores; bytes per frame, request / response): Runnel and Kafka 4.4.0 alike — sessionless full
28,090 / 42,048, session creation 28,090 / 42,048, idle incremental 64 / 22. The Java client (Fetch v17, topic ids)
on Runnel, idle, 1,000 partitions (the broker's request-size summary): 33,070 bytes per request without a session
(`max.incremental.fetch.session.cache.slots=0`), 51 with one.

Usage: python3 bench/fetch_sessions.py [PARTITIONS] [REPS] [--no-kafka]   (after `cargo build --release -p runnel`;
Kafka through scripts/kafka-reference.sh, which needs .test-deps/kafka: `scripts/kafka-reference.sh fetch`)
"""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import kproto as k  # noqa: E402
from conftest import BrokerProcess, free_port, make_topic  # noqa: E402

TOPIC = "fetch-sessions-bench"
VERSION = 11


def fetch_sizes(conn: k.Connection, session_id: int, epoch: int, topics) -> tuple[int, int, k.SessionFetch]:
    """One Fetch: (request frame bytes, response frame bytes, parsed answer)."""
    body = k.session_fetch_body(session_id, epoch, topics, version=VERSION)
    header = k.Writer().i16(k.FETCH).i16(VERSION).i32(1).string(conn.client_id)
    request_bytes = 4 + len(header.buf) + len(body)
    conn.send(k.FETCH, VERSION, body)
    (size,) = struct.unpack(">i", conn._recv_exact(4))
    r = k.Reader(conn._recv_exact(size))
    r.i32()  # correlation id
    return request_bytes, 4 + size, k.parse_session_fetch(r, VERSION)


def measure(name: str, bootstrap: str, partitions: int, reps: int) -> list[tuple]:
    make_topic(bootstrap, TOPIC, partitions)
    everything = [(TOPIC, [(p, 0) for p in range(partitions)])]
    rows = []
    with k.Connection(bootstrap) as c:
        req, resp, f = fetch_sizes(c, 0, -1, everything)
        assert f.error == 0 and f.session_id == 0 and len(f.partitions) == partitions, f.error
        rows.append((name, "sessionless full", req, resp, len(f.partitions)))
        req, resp, f = fetch_sizes(c, 0, 0, everything)
        assert f.error == 0 and f.session_id != 0, f"{name}: no session created ({f.error})"
        rows.append((name, "create session (full)", req, resp, len(f.partitions)))
        sid = f.session_id
        sizes = []
        for epoch in range(1, reps + 1):
            req, resp, f = fetch_sizes(c, sid, epoch, [])
            assert f.error == 0 and f.session_id == sid, f"{name}: epoch {epoch}: error {f.error}"
            sizes.append((req, resp, len(f.partitions)))
        assert len(set(sizes)) == 1, f"{name}: idle incremental sizes vary: {set(sizes)}"
        rows.append((name, "incremental, idle", *sizes[0]))
    return rows


def kafka_rows(partitions: int, reps: int) -> list[tuple]:
    script = ROOT / "scripts" / "kafka-reference.sh"
    port = free_port()
    out = subprocess.run(["bash", str(script), "start", str(port)], check=True, capture_output=True, text=True)
    bootstrap = next(line.split("=", 1)[1] for line in out.stdout.splitlines() if line.startswith("BOOTSTRAP="))
    try:
        return measure("kafka 4.4.0", bootstrap, partitions, reps)
    finally:
        subprocess.run(["bash", str(script), "stop", str(port)], check=False, capture_output=True)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    partitions = int(args[0]) if args else 1000
    reps = int(args[1]) if len(args) > 1 else 5
    rows = []
    runnel = BrokerProcess({"num.partitions": "1"}).start()
    try:
        rows += measure("runnel", runnel.bootstrap, partitions, reps)
    finally:
        runnel.close()
    if "--no-kafka" not in sys.argv:
        rows += kafka_rows(partitions, reps)
    print(f"Fetch v{VERSION}, {partitions} partitions of one topic ({len(TOPIC)}-character name), no records; "
          f"frame bytes incl. the size prefix")
    print(f"{'broker':<12} {'fetch':<22} {'request B':>10} {'response B':>11} {'partitions answered':>20}")
    for broker, case, req, resp, n in rows:
        print(f"{broker:<12} {case:<22} {req:>10} {resp:>11} {n:>20}")


if __name__ == "__main__":
    main()
