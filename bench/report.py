#!/usr/bin/env python3
"""Turns bench/run.sh's raw JSON lines into bench/results/<date>.md.

usage: report.py RESULTS.jsonl OUT.md QUICK REPS

Figures are medians over the repetitions; every ratio is computed from figures of the same run.
"""
import json
import re
import statistics
import subprocess
import sys
import time

rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
out_path, quick, reps = sys.argv[2], sys.argv[3] == "1", int(sys.argv[4])


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def bench(broker, tag):
    return [r for r in rows if r.get("kind") == "bench" and r.get("broker") == broker and r.get("tag") == tag]


def figure(broker, tag, key):
    return med([r.get(key) for r in bench(broker, tag) if "error" not in r])


def lat(broker, tag, q):
    return med([(r.get("latency_ms") or {}).get(q) for r in bench(broker, tag) if "error" not in r])


def errors(broker, tag):
    return [r["error"].strip().splitlines()[-1] if r["error"].strip() else "failed" for r in bench(broker, tag) if "error" in r]


def one(kind, **match):
    for r in rows:
        if r.get("kind") == kind and all(r.get(k) == v for k, v in match.items()):
            return r
    return {}


def fmt_n(v):
    return "—" if v is None else f"{v:,.0f}"


def fmt_f(v, d=1):
    return "—" if v is None else f"{v:,.{d}f}"


def ratio(a, b):
    return "—" if a is None or not b else f"{a / b:.2f}×"


tags = []
for r in rows:
    if r.get("kind") == "bench" and r["tag"] not in tags:
        tags.append(r["tag"])

disk = one("ref_disk", flush="fdatasync").get("mb_per_sec")
disk_cache = one("ref_disk", flush="none").get("mb_per_sec")
tcp = one("ref_tcp").get("mb_per_sec")
ceiling = {t.split(":")[1]: figure("mock", t, "records_per_sec") for t in tags if t.startswith("produce:") and bench("mock", t)}
try:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
except OSError:
    commit = "?"

L = []
L.append(f"# Benchmark: Runnel vs Apache Kafka 4.4.0 — {time.strftime('%Y-%m-%d', time.gmtime())}")
L.append("")
L.append(
    f"`bench/run.sh{' --quick' if quick else ''}` on the working tree at commit `{commit}`, {reps} repetition(s), Runnel and Kafka "
    "alternating run by run (order flipped each run); figures are medians over the repetitions. Load generator: "
    "`runnel bench` (librdkafka through rust-rdkafka), one producer / one consumer thread, linger.ms=5, no keys, "
    "values of random upper-case letters. Kafka: KRaft combined mode via scripts/kafka-reference.sh "
    "(-Xms256m -Xmx1g, G1), default settings otherwise; both brokers' data dirs on the same filesystem, "
    "no fsync per write (both brokers' default flush policy)."
)
L.append("")
L.append(
    "**Machine: a loaded 2-core VM shared with other agents building and testing at the same time** — client "
    "and broker share the two cores, so absolute figures are noisy; only the same-run ratios mean much."
)
L.append("")
L.append("## Same-run references")
L.append("")
L.append("| reference | figure |")
L.append("|---|---|")
L.append(f"| sequential write, dd bs=1M conv=fdatasync, {one('ref_disk', flush='fdatasync').get('bytes', 0):,} bytes | {fmt_f(disk)} MB/s |")
L.append(f"| sequential write into the page cache (no flush), same bytes | {fmt_f(disk_cache)} MB/s |")
L.append(f"| loopback TCP, two processes (Python, 1 MiB sends) | {fmt_f(tcp)} MB/s |")
for t in tags:
    if t.startswith("produce:") and bench("mock", t):
        s, p = t.split(":")[1:3]
        L.append(
            f"| client ceiling: `runnel bench produce` against librdkafka's in-process mock broker, {s} B, {p} partition(s) | "
            f"{fmt_n(figure('mock', t, 'records_per_sec'))} records/s ({fmt_f(figure('mock', t, 'mb_per_sec'))} MB/s) |"
        )
for b in ("runnel", "kafka"):
    st = one("startup", broker=b).get("ms")
    L.append(f"| {b}: start to accepting connections, empty data dir | {st} ms |")
L.append("")
L.append("MB = 10^6 bytes of record values. Ratios: R/K = Runnel ÷ Kafka; /disk = MB/s ÷ the fdatasync write "
         "bandwidth; /tcp = MB/s ÷ loopback TCP; /ceil = records/s ÷ the client ceiling for that record size.")
L.append("")
L.append("The mock-broker ceiling runs librdkafka's mock broker inside the client process, so it shares the "
         "client's CPU: it is a lower bound of the client's ceiling, not the ceiling itself (a /ceil above 1× "
         "means exactly that). The consume side has no sink reference yet; the rdkafka_performance cross-check "
         "below shows the load generator's consumer is not slower than librdkafka's own tool.")
L.append("")

L.append("## Produce")
L.append("")
L.append("| size B | parts | acks | codec | Runnel records/s (MB/s) | Kafka records/s (MB/s) | R/K | Runnel /disk | Kafka /disk | Runnel /ceil | ack p99 ms R / K |")
L.append("|---|---|---|---|---|---|---|---|---|---|---|")
for t in tags:
    if not t.startswith("produce:") or not bench("runnel", t) and not bench("kafka", t):
        continue
    s, p, a, c = t.split(":")[1:]
    rr, rm = figure("runnel", t, "records_per_sec"), figure("runnel", t, "mb_per_sec")
    kr, km = figure("kafka", t, "records_per_sec"), figure("kafka", t, "mb_per_sec")
    ceil = ceiling.get(s)
    L.append(
        f"| {s} | {p} | {a} | {c} | {fmt_n(rr)} ({fmt_f(rm)}) | {fmt_n(kr)} ({fmt_f(km)}) | {ratio(rr, kr)} | "
        f"{ratio(rm, disk)} | {ratio(km, disk)} | {ratio(rr, ceil)} | {fmt_f(lat('runnel', t, 'p99'))} / {fmt_f(lat('kafka', t, 'p99'))} |"
    )
L.append("")

L.append("## Consume (one consumer, all partitions, from the beginning)")
L.append("")
L.append("| size B | parts | cache | Runnel records/s (MB/s) | Kafka records/s (MB/s) | R/K | Runnel /tcp | Kafka /tcp |")
L.append("|---|---|---|---|---|---|---|---|")
for t in tags:
    if not t.startswith("consume-"):
        continue
    mode = t.split(":")[0].split("-", 1)[1]
    s, p = t.split(":")[1:]
    rr, rm = figure("runnel", t, "records_per_sec"), figure("runnel", t, "mb_per_sec")
    kr, km = figure("kafka", t, "records_per_sec"), figure("kafka", t, "mb_per_sec")
    what = "page cache" if mode == "cached" else "after fadvise(DONTNEED)"
    L.append(f"| {s} | {p} | {what} | {fmt_n(rr)} ({fmt_f(rm)}) | {fmt_n(kr)} ({fmt_f(km)}) | {ratio(rr, kr)} | {ratio(rm, tcp)} | {ratio(km, tcp)} |")
L.append("")

L.append("## End-to-end latency (produce → consume, acks=1, linger.ms=1, at 50% of the lower peak produce rate)")
L.append("")
L.append("| size B | parts | rate records/s | Runnel p50 / p99 / p99.9 / max ms | Kafka p50 / p99 / p99.9 / max ms | p99 R/K |")
L.append("|---|---|---|---|---|---|")
for t in tags:
    if not t.startswith("e2e:"):
        continue
    s, p = t.split(":")[1:3]
    rate = med([r.get("target_rate") for r in bench("runnel", t) + bench("kafka", t)])
    cells = []
    for b in ("runnel", "kafka"):
        cells.append(" / ".join(fmt_f(lat(b, t, q), 2) for q in ("p50", "p99", "p99_9", "max")))
    L.append(f"| {s} | {p} | {fmt_n(rate)} | {cells[0]} | {cells[1]} | {ratio(lat('runnel', t, 'p99'), lat('kafka', t, 'p99'))} |")
L.append("")

L.append("## Broker resident memory (VmRSS)")
L.append("")
L.append("| broker | idle MiB | peak under load MiB (max over all runs) |")
L.append("|---|---|---|")
peaks = {}
for b in ("runnel", "kafka"):
    idle = one("rss_idle", broker=b).get("rss_kib")
    peak = max([r.get("rss_peak_kib", 0) for r in rows if r.get("kind") == "bench" and r.get("broker") == b] or [0])
    peaks[b] = (idle, peak)
    L.append(f"| {b} | {fmt_f(idle / 1024 if idle else None)} | {fmt_f(peak / 1024 if peak else None)} |")
(ri, rp), (ki, kp) = peaks["runnel"], peaks["kafka"]
L.append(f"| Runnel ÷ Kafka | {ratio(ri, ki)} | {ratio(rp, kp)} |")
L.append("")

rd = [r for r in rows if r.get("kind") == "rdperf"]
for r in rd:  # rdkafka_performance prints "N msgs/s and M MB/s" (produce) or "N msgs/s (M MB/s)" (consume)
    if r.get("records_per_sec") is None:
        m = re.search(r"([\d.]+) msgs/s(?: and|) \(?([\d.]+) MB/s", r.get("line", ""))
        if m:
            r["records_per_sec"], r["mb_per_sec"] = float(m.group(1)), float(m.group(2))
if rd:
    L.append("## Cross-check: librdkafka's rdkafka_performance, 100 B, 1 partition, acks=1")
    L.append("")
    L.append("| broker | mode | rdkafka_performance records/s (MB/s) | runnel bench records/s |")
    L.append("|---|---|---|---|")
    for r in rd:
        t = "produce:100:1:1:none" if r["mode"] == "produce" else "consume-cached:100:1"
        L.append(
            f"| {r['broker']} | {r['mode']} | {fmt_n(r.get('records_per_sec'))} ({fmt_f(r.get('mb_per_sec'))}) | "
            f"{fmt_n(figure(r['broker'], t, 'records_per_sec'))} |"
        )
    L.append("")

errs = [(b, t, e) for t in tags for b in ("runnel", "kafka", "mock", "peer") for e in errors(b, t)]
if errs:
    L.append("## Failed runs")
    L.append("")
    for b, t, e in errs:
        L.append(f"- {b} `{t}`: {e}")
    L.append("")

open(out_path, "w").write("\n".join(L))
print("\n".join(L))
