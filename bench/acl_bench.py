#!/usr/bin/env python3
"""Produce throughput with the authorizer off vs on with 10,000 ACLs (issue 14: the authorizer should cost < 2%).

One `runnel bench produce` run per setting against a fresh standalone broker (not the full bench matrix):
  off: no authorizer.
  on:  StandardAuthorizer with 10,000 ACLs (half LITERAL, half PREFIXED, 500 other principals) plus the ALLOWs
       User:ANONYMOUS needs for the bench topic; no super.users, so every produce is checked.
Usage: python3 bench/acl_bench.py [seconds] [record_size]
"""

from __future__ import annotations

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


def bench(bootstrap, seconds, size) -> str:
    out = subprocess.run([str(RUNNEL_BIN), "bench", "produce", "-b", bootstrap, "-t", TOPIC, "-d", str(seconds),
                          "-s", str(size)], capture_output=True, text=True, timeout=seconds + 120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def main():
    seconds = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    size = int(sys.argv[2]) if len(sys.argv) > 2 else 1024
    off = BrokerProcess().start()
    try:
        make_topic(off.bootstrap, TOPIC, 1)
        print("authorizer off:\n" + bench(off.bootstrap, seconds, size))
    finally:
        off.close()
    on = BrokerProcess({"authorizer.class.name": STANDARD, "super.users": "User:ANONYMOUS"}).start()
    try:
        make_topic(on.bootstrap, TOPIC, 1)
        acls = [(2, f"team-{i % 100}-topic-{i}", 3 if i % 2 == 0 else 4, f"User:user-{i % 500}", 4, 3)
                for i in range(9_995)]
        acls += [(2, TOPIC, 3, "User:ANONYMOUS", op, 3) for op in (4, 8, 5)]  # WRITE, DESCRIBE, CREATE
        acls += [(4, "kafka-cluster", 3, "User:ANONYMOUS", op, 3) for op in (12, 8)]  # IDEMPOTENT_WRITE, DESCRIBE
        create_acls(on.bootstrap, acls)
        on.sets.pop("super.users")
        on.restart()
        print(f"authorizer on, {len(acls)} ACLs:\n" + bench(on.bootstrap, seconds, size))
    finally:
        on.close()


if __name__ == "__main__":
    main()
