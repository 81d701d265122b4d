#!/usr/bin/env python3
"""Rebalancing onto a new broker (issue 16), on real `runnel` processes on 127.0.0.1: three combined nodes hold
a topic of PARTITIONS partitions × MB megabytes each (replication factor 2); a fourth, broker-only node starts
and automatic balancing (`auto.balance.*`, check every second, 10 moves at a time) moves its share onto it.

Measured, once without and once with a replication throttle (Kafka's KIP-73 keys, THROTTLE_MB MB/s):
- the time from the fourth broker's start until nothing moves any more, the replicas moved and the bytes the
  new broker received (its DescribeLogDirs total);
- a probe producer's ack latency (acks=all, 200 records/s to its own RF-3 topic, `runnel bench produce`),
  p99 in 5-second windows: before the move (baseline) and during it (median and worst window).

Usage: python3 bench/rebalance.py [--partitions 100] [--mb 100] [--throttle-mb 50] [--out FILE.jsonl]
(after `cargo build --release`; the issue's figure is 100 × 100 MB, ~20 GB of disk with the replicas).
Kafka 4.4.0 doing the same move with kafka-reassign-partitions.sh is not part of this script yet (see the
results file).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from conftest import RUNNEL_BIN  # noqa: E402
from test_balancing import alter_config  # noqa: E402
from test_cluster import create_topic  # noqa: E402
from test_metadata_quorum import four_node_cluster  # noqa: E402
from test_reassignment import list_ongoing  # noqa: E402

RECORD = 16384


def bench(bootstrap: str, *args: str) -> dict:
    out = subprocess.run([str(RUNNEL_BIN), "bench", "produce", "-b", bootstrap, "--json", *args],
                         capture_output=True, text=True, timeout=3600, check=True).stdout
    return json.loads(out)


def node4_bytes(c) -> int:
    return sum(f.stat().st_size for f in Path(c.nodes[4].data_dir).glob("moved-*/*.log"))


class Probe:
    """acks=all probes in 5 s windows until stopped; each window's p99 ack latency (ms)."""

    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap
        self.p99: list[float] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self.stop.is_set():
            r = bench(self.bootstrap, "-t", "probe", "--rate", "200", "--acks", "all", "--duration", "5",
                      "-s", "100")
            if r.get("latency_ms"):
                self.p99.append(r["latency_ms"]["p99"])


def one_run(partitions: int, mb: int, throttle_mb: int | None) -> dict:
    sets = {"auto.balance.enable": "true", "auto.balance.check.interval.ms": "1000",
            "auto.balance.max.concurrent.moves": "10", "min.insync.replicas": "1"}
    g = four_node_cluster(sets=sets, start_fourth=False)
    c = next(g)
    try:
        create_topic(c, "moved", partitions=partitions, rf=2)
        create_topic(c, "probe", partitions=1, rf=3)
        fill = bench(c.bootstrap, "-t", "moved", "-s", str(RECORD), "--acks", "1", "--linger-ms", "20",
                     "-n", str(partitions * mb * (1 << 20) // RECORD))
        probe = Probe(c.bootstrap)
        baseline = [bench(c.bootstrap, "-t", "probe", "--rate", "200", "--acks", "all", "--duration", "5",
                          "-s", "100")["latency_ms"]["p99"] for _ in range(2)]
        b2 = c.nodes[2].bootstrap
        if throttle_mb:
            rate = str(throttle_mb * 1_000_000)
            alter_config(b2, 4, "", "follower.replication.throttled.rate", rate)
            alter_config(b2, 4, "", "leader.replication.throttled.rate", rate)
            alter_config(b2, 2, "moved", "follower.replication.throttled.replicas", "*")
            alter_config(b2, 2, "moved", "leader.replication.throttled.replicas", "*")
        before = c.metadata("moved").topics["moved"].partitions
        probe.thread.start()
        t0 = time.monotonic()
        c.nodes[4].start()
        quiet_since = None
        moved_any = False
        while True:
            ongoing = list_ongoing(b2)
            moved_any = moved_any or bool(ongoing)
            now = time.monotonic()
            if ongoing or not moved_any:
                quiet_since = None
            elif quiet_since is None:
                quiet_since = now
            elif now - quiet_since >= 3:
                break
            assert now - t0 < 7200, "the move did not finish within two hours"
            time.sleep(0.2)
        took = quiet_since - t0
        probe.stop.set()
        probe.thread.join(60)
        after = c.metadata("moved").topics["moved"].partitions
        moved = sum(len(set(after[p].replicas) - set(before[p].replicas)) for p in after)
        return {"partitions": partitions, "mb_per_partition": mb, "throttle_mb_per_s": throttle_mb,
                "filled_mb_per_s": fill["mb_per_sec"], "seconds": round(took, 2), "replicas_moved": moved,
                "bytes_to_new_broker": node4_bytes(c),
                "probe_p99_ms_baseline": statistics.median(baseline),
                "probe_p99_ms_during_median": statistics.median(probe.p99) if probe.p99 else None,
                "probe_p99_ms_during_worst": max(probe.p99) if probe.p99 else None}
    finally:
        try:
            next(g)
        except StopIteration:
            pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--mb", type=int, default=100)
    ap.add_argument("--throttle-mb", type=int, default=50)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    for throttle in (None, a.throttle_mb):
        r = one_run(a.partitions, a.mb, throttle)
        print(json.dumps(r), flush=True)
        if a.out:
            with a.out.open("a") as f:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
