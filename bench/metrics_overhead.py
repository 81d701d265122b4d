#!/usr/bin/env python3
"""What metrics cost (issue 17): the produce and consume hot paths with the Prometheus recorder on versus off,
and the resident memory of 10,000 partitions' series.

Throughput: for each repetition, a fresh `runnel server` with metrics on (`metrics.listeners` set, /metrics
scraped every 5 s while the client runs, as Prometheus would) and one with metrics off (`metrics.listeners=`
empty: no recorder is installed, so every counter and histogram call is the facade's no-op), in an order that
flips every repetition so drift cancels. Each broker gets the rows of `bench/run.sh --quick`'s produce and
consume matrix that touch the counted paths — 100 B and 1 KiB records to 1 partition, acks=1 and acks=all,
then a consume of what was written — with the same client (`runnel bench`, librdkafka). The report is the
median records/s of each row on and off and the overhead (1 - on/off), and beside it the broker's CPU time per
record (utime + stime from /proc), which the run-to-run spread of throughput on a small machine hides less.

Memory: a broker with metrics on and one with them off each get 10 topics of 1,000 partitions; with metrics on
/metrics is scraped (the per-partition log series: `metrics.partition.series.max` = 10,000 by default); VmRSS
of both after the scrape, the series count and the scrape's time and size are reported.

Usage: python3 bench/metrics_overhead.py [--reps 3] [--records 2000000] [--json FILE] [--skip-rss]
   (after `cargo build --release -p runnel`; RUNNEL_BIN=path picks another binary)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import conftest  # noqa: E402
import kproto  # noqa: E402
from conftest import BrokerProcess  # noqa: E402

if os.environ.get("RUNNEL_BIN"):
    conftest.RUNNEL_BIN = Path(os.environ["RUNNEL_BIN"])

# (size, acks): the quick matrix's single-partition rows.
ROWS = [(100, "1"), (100, "all"), (1024, "1"), (1024, "all")]


def broker(metrics: bool) -> BrokerProcess:
    b = BrokerProcess({"num.partitions": "1"})
    if not metrics:
        b.sets["metrics.listeners"] = ""
    return b.start()


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def cpu_s(pid: int) -> float:
    """The process's user + system CPU time so far (s)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench(b: BrokerProcess, *args: str) -> tuple[float, float]:
    """One `runnel bench` run: (records per second, broker CPU microseconds per record)."""
    n = int(args[args.index("-n") + 1]) if "-n" in args else None
    cpu0 = cpu_s(b.proc.pid)
    out = subprocess.run([str(conftest.RUNNEL_BIN), "bench", *args, "-b", b.bootstrap, "--timeout", "60", "--json"],
                         capture_output=True, text=True, timeout=900)
    cpu = cpu_s(b.proc.pid) - cpu0
    try:
        d = json.loads(out.stdout.strip().splitlines()[-1])
        records = n or d.get("records") or d["records_per_sec"] * d["elapsed_s"]
        return float(d["records_per_sec"]), 1e6 * cpu / records
    except (ValueError, IndexError, KeyError):
        raise SystemExit(f"runnel bench {' '.join(args)} failed: {out.stderr[-400:]}")


class Scraper(threading.Thread):
    """GET /metrics every `period` seconds until stopped (metrics-on brokers only)."""

    def __init__(self, b: BrokerProcess, period: float = 5.0):
        super().__init__(daemon=True)
        self.url, self.period, self.stop = f"http://127.0.0.1:{b.metrics_port}/metrics", period, threading.Event()

    def run(self):
        while not self.stop.wait(self.period):
            try:
                urllib.request.urlopen(self.url, timeout=10).read()
            except OSError:  # the broker is stopping at the end of its runs
                return


def one_broker(metrics: bool, records: int) -> dict[str, tuple[float, float]]:
    b = broker(metrics)
    scraper = Scraper(b) if metrics else None
    if scraper:
        scraper.start()
    try:
        out = {}
        for size, acks in ROWS:
            n = str(records if size == 100 else records // 4)
            topic = f"m-{size}-{acks}"
            out[f"produce {size} B acks={acks}"] = bench(b, "produce", "-t", topic, "--partitions", "1",
                                                         "-s", str(size), "-n", n, "--acks", acks)
            out[f"consume {size} B ({acks})"] = bench(b, "consume", "-t", topic, "--partitions", "1")
        return out
    finally:
        if scraper:
            scraper.stop.set()
        b.close()


def throughput(reps: int, records: int) -> dict:
    runs = {True: [], False: []}
    for rep in range(reps):
        for metrics in ((True, False) if rep % 2 == 0 else (False, True)):
            r = one_broker(metrics, records)
            runs[metrics].append(r)
            print(f"  rep {rep + 1} metrics {'on ' if metrics else 'off'}: "
                  + ", ".join(f"{k} {v:,.0f}/s {c:.2f} µs" for k, (v, c) in r.items()), flush=True)
    table = {}
    for row in runs[True][0]:
        on = statistics.median(r[row][0] for r in runs[True])
        off = statistics.median(r[row][0] for r in runs[False])
        cpu_on = statistics.median(r[row][1] for r in runs[True])
        cpu_off = statistics.median(r[row][1] for r in runs[False])
        table[row] = {"on": on, "off": off, "overhead_pct": 100 * (1 - on / off),
                      "cpu_us_per_record_on": cpu_on, "cpu_us_per_record_off": cpu_off,
                      "cpu_overhead_pct": 100 * (cpu_on / cpu_off - 1)}
    return table


def memory(partitions_per_topic: int = 1000, topics: int = 10) -> dict:
    out = {}
    for metrics in (True, False):
        b = broker(metrics)
        try:
            with kproto.Connection(b.bootstrap, timeout=300) as c:
                for t in range(topics):
                    err = kproto.create_topic(c, f"rss-{t}", partitions=partitions_per_topic, timeout_ms=300000)
                    assert err == 0, f"CreateTopics rss-{t}: {err}"
            row = {"rss_before_scrape_mib": rss_kib(b.proc.pid) / 1024}
            if metrics:
                t0 = time.monotonic()
                body = urllib.request.urlopen(f"http://127.0.0.1:{b.metrics_port}/metrics", timeout=120).read()
                row["scrape_ms"] = 1000 * (time.monotonic() - t0)
                row["scrape_bytes"] = len(body)
                row["series"] = sum(1 for line in body.splitlines() if line and not line.startswith(b"#"))
                urllib.request.urlopen(f"http://127.0.0.1:{b.metrics_port}/metrics", timeout=120).read()
            row["rss_mib"] = rss_kib(b.proc.pid) / 1024
            out["on" if metrics else "off"] = row
            print(f"  {topics * partitions_per_topic} partitions, metrics {'on' if metrics else 'off'}: {row}",
                  flush=True)
        finally:
            b.close()
    out["rss_delta_mib"] = out["on"]["rss_mib"] - out["off"]["rss_mib"]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--records", type=int, default=2_000_000, help="records of the 100 B rows (1 KiB: a quarter)")
    ap.add_argument("--json")
    ap.add_argument("--skip-rss", action="store_true")
    a = ap.parse_args()
    print(f"throughput, {a.reps} repetitions", flush=True)
    result = {"throughput": throughput(a.reps, a.records)}
    for row, v in result["throughput"].items():
        print(f"{row:28} on {v['on']:>12,.0f}/s  off {v['off']:>12,.0f}/s  overhead {v['overhead_pct']:+.1f}%   "
              f"broker CPU/record on {v['cpu_us_per_record_on']:.3f} µs off {v['cpu_us_per_record_off']:.3f} µs "
              f"({v['cpu_overhead_pct']:+.1f}%)")
    if not a.skip_rss:
        print("memory, 10,000 partitions", flush=True)
        result["memory"] = memory()
        m = result["memory"]
        print(f"RSS with metrics on {m['on']['rss_mib']:.0f} MiB, off {m['off']['rss_mib']:.0f} MiB "
              f"(+{m['rss_delta_mib']:.0f} MiB); {m['on']['series']:,} series, scrape {m['on']['scrape_ms']:.0f} ms, "
              f"{m['on']['scrape_bytes'] / 1e6:.1f} MB")
    if a.json:
        Path(a.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
