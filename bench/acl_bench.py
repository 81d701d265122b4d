#!/usr/bin/env python3
"""Produce throughput with the authorizer off vs on with 10,000 ACLs (issue 14: the authorizer should cost < 2%).

Two fresh standalone brokers side by side (not the full bench matrix), `runnel bench produce` runs alternating
between them (the order flips every repetition, so drift on a shared machine cancels); medians over the reps:
  off: no authorizer.
  on:  StandardAuthorizer with 10,000 ACLs (half LITERAL, half PREFIXED, 500 other principals) plus the ALLOWs
       User:ANONYMOUS needs for the bench topic; no super.users, so every produce is checked.
Usage: python3 bench/acl_bench.py [seconds] [record_size] [--reps N] [--json]
  --json: one JSON line per run ({"kind": "acl", "authorizer": "off"|"on", "acls": N, ...runnel bench --json})
  and a summary line ({"kind": "acl_summary", "off", "on", "cost"}), as bench/run.sh records them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import kproto as k  # noqa: E402
from conftest import RUNNEL_BIN, BrokerProcess, make_topic  # noqa: E402

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
TOPIC = "acl-bench"


def create_acls(bootstrap, acls):
    w = k.Writer().i32(len(acls))
    for rt, name, pt, principal, op, perm in acls:
        w.i8(rt).string(name).i8(pt).string(principal).string("*").i8(op).i8(perm)
    with k.Connection(bootstrap, timeout=120) as c:
        r = c.request(30, 1, bytes(w.buf))
        r.i32()
        errors = r.array(lambda r: (r.i16(), r.string()))
    bad = [e for e in errors if e[0] != 0]
    assert not bad, bad[:3]


def bench(bootstrap, seconds, size, json_out) -> str:
    argv = [str(RUNNEL_BIN), "bench", "produce", "-b", bootstrap, "-t", TOPIC, "-d", str(seconds), "-s", str(size)]
    out = subprocess.run(argv + (["--json"] if json_out else []), capture_output=True, text=True,
                         timeout=seconds + 120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def start_with_acls() -> BrokerProcess:
    """A broker with the StandardAuthorizer and 10,000 ACLs; User:ANONYMOUS is a super user only while the ACLs
    are created, then the broker restarts without super.users."""
    on = BrokerProcess({"authorizer.class.name": STANDARD, "super.users": "User:ANONYMOUS"}).start()
    make_topic(on.bootstrap, TOPIC, 1)
    acls = [(2, f"team-{i % 100}-topic-{i}", 3 if i % 2 == 0 else 4, f"User:user-{i % 500}", 4, 3)
            for i in range(9_995)]
    acls += [(2, TOPIC, 3, "User:ANONYMOUS", op, 3) for op in (4, 8, 5)]  # WRITE, DESCRIBE, CREATE
    acls += [(4, "kafka-cluster", 3, "User:ANONYMOUS", op, 3) for op in (12, 8)]  # IDEMPOTENT_WRITE, DESCRIBE
    create_acls(on.bootstrap, acls)
    on.acls = len(acls)
    on.sets.pop("super.users")
    on.restart()
    return on


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("seconds", nargs="?", type=int, default=15)
    ap.add_argument("record_size", nargs="?", type=int, default=1024)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    off = on = None
    try:
        off = BrokerProcess().start()
        make_topic(off.bootstrap, TOPIC, 1)
        on = start_with_acls()
        rates = {"off": [], "on": []}
        for rep in range(a.reps):
            for name in ("off", "on") if rep % 2 == 0 else ("on", "off"):
                b = off if name == "off" else on
                out = bench(b.bootstrap, a.seconds, a.record_size, a.json)
                if not a.json:
                    print(f"authorizer {name}{f', {on.acls} ACLs' if name == 'on' else ''}:\n{out}")
                    continue
                d = json.loads(out)
                rates[name].append(d["records_per_sec"])
                d.update(kind="acl", authorizer=name, acls=on.acls if name == "on" else 0, rep=rep + 1)
                print(json.dumps(d), flush=True)
        if a.json:
            m = {k: statistics.median(v) for k, v in rates.items()}
            print(json.dumps({"kind": "acl_summary", "acls": on.acls, "reps": a.reps, "seconds": a.seconds,
                              "record_size": a.record_size, "off": m["off"], "on": m["on"],
                              "cost": 1 - m["on"] / m["off"]}))
    finally:
        for b in (off, on):
            if b is not None:
                b.close()


if __name__ == "__main__":
    main()
