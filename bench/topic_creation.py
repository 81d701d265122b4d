#!/usr/bin/env python3
"""Topic-creation cost (issue 13): does creating a topic get slower as the number of topics grows?

Starts a real `runnel server` (release build of this checkout) and creates N topics of one partition each,
one at a time, over one raw connection (tests/kproto.py, so the client adds no per-topic cost of its own):

- `create`: CreateTopics v4 naming one topic per request (a batch of 1); the answer comes once the topic
  exists (standalone: in the registry; cluster: in this broker's published metadata image).
- `auto`: Metadata v8 naming one unknown topic with allow_auto_topic_creation; the same request is repeated
  until the topic answers without an error (the first answer is LEADER_NOT_AVAILABLE or, if the broker
  waited for the creation, NONE), so the time counted is the time until the topic is usable.

Each (mode, method) pair gets a fresh broker: `standalone` (no controller) and `cluster` (one process with
both roles, `controller.quorum.voters` naming itself, replication factor 1). The rate printed at k topics
is the creation rate over the WINDOW topics that end at the k-th one (topics per second).

Usage: python3 bench/topic_creation.py [N=10000] [--modes standalone,cluster] [--methods create,auto]
                                        [--json FILE] [--max-seconds S]
   (after `nice -n 15 cargo build --release -p runnel`; RUNNEL_BIN=path picks another binary)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import conftest  # noqa: E402
import kproto  # noqa: E402
from conftest import BrokerProcess, free_port  # noqa: E402

if os.environ.get("RUNNEL_BIN"):  # measure another build, e.g. a copy of the binary before a change
    conftest.RUNNEL_BIN = Path(os.environ["RUNNEL_BIN"])

WINDOW = 500
MARKS = (1000, 5000, 10000)


class OneNodeCluster(BrokerProcess):
    """`runnel server` with both roles and a quorum of itself."""

    def __init__(self, sets: dict):
        super().__init__(sets)
        self.controller_port = free_port()
        self.sets["controller.quorum.voters"] = f"1@127.0.0.1:{self.controller_port}"

    def argv(self) -> list[str]:
        return super().argv() + ["--node-id", "1", "--controller-listen", f"127.0.0.1:{self.controller_port}"]


def start(mode: str) -> BrokerProcess:
    sets = {"num.partitions": "1", "default.replication.factor": "1", "auto.create.topics.enable": "true",
            "offsets.topic.replication.factor": "1", "min.insync.replicas": "1"}
    b = OneNodeCluster(sets) if mode == "cluster" else BrokerProcess(sets)
    b.start()
    if mode == "cluster":  # wait until the broker is registered and serves metadata
        deadline = time.monotonic() + 60
        with kproto.Connection(b.bootstrap) as c:
            while kproto.create_topic(c, "warmup") not in (kproto.NONE, 36):
                if time.monotonic() > deadline:
                    raise SystemExit(f"cluster did not come up; log tail:\n{b.log_tail()}")
                time.sleep(0.2)
    return b


def create_one(conn: kproto.Connection, name: str, method: str):
    if method == "create":
        err = kproto.create_topic(conn, name)
        if err != kproto.NONE:
            raise SystemExit(f"CreateTopics {name}: error {err}")
        return
    deadline = time.monotonic() + 30
    while True:
        err, parts = kproto.metadata(conn, [name])[name]
        if err == kproto.NONE and parts and all(e == kproto.NONE for e, _ in parts.values()):
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"Metadata auto-creation of {name}: still error {err} after 30 s")


def run(mode: str, method: str, n: int, max_seconds: float) -> dict:
    b = start(mode)
    try:
        done: list[float] = []
        with kproto.Connection(b.bootstrap, timeout=60) as conn:
            t0 = time.monotonic()
            for i in range(n):
                create_one(conn, f"{method}-{i:06d}", method)
                done.append(time.monotonic())
                if (i + 1) % 1000 == 0:
                    print(f"  {mode}/{method}: {i + 1} topics, {done[-1] - t0:.1f} s", flush=True)
                if done[-1] - t0 > max_seconds:
                    print(f"  {mode}/{method}: stopped at {i + 1} topics (--max-seconds)", flush=True)
                    break
        rates = {}
        for k in MARKS:
            if k <= len(done) and k > WINDOW:
                rates[k] = WINDOW / (done[k - 1] - done[k - 1 - WINDOW])
        return {"mode": mode, "method": method, "topics": len(done), "seconds": done[-1] - t0, "rates": rates}
    finally:
        b.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("n", nargs="?", type=int, default=10000)
    ap.add_argument("--modes", default="standalone,cluster")
    ap.add_argument("--methods", default="create,auto")
    ap.add_argument("--json")
    ap.add_argument("--max-seconds", type=float, default=float("inf"),
                    help="stop a run after this long; rates are printed for the marks reached")
    a = ap.parse_args()
    results = []
    for mode in a.modes.split(","):
        for method in a.methods.split(","):
            r = run(mode, method, a.n, a.max_seconds)
            results.append(r)
            marks = ", ".join(f"{k}: {v:,.0f}/s" for k, v in r["rates"].items())
            print(f"{mode:10} {method:6} {r['topics']} topics in {r['seconds']:.1f} s; rate over the last {WINDOW} at {marks}",
                  flush=True)
    if a.json:
        Path(a.json).write_text("\n".join(json.dumps(r) for r in results) + "\n")


if __name__ == "__main__":
    main()
