#!/usr/bin/env python3
"""Turns bench/run.sh's raw JSON lines into bench/results/<date>.md.

usage: report.py RESULTS.jsonl OUT.md QUICK REPS [NOTE]

NOTE (optional) is printed under the title, e.g. why the run was aborted (the report is then partial).

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
note = sys.argv[5] if len(sys.argv) > 5 else ""


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


def cpu_per_m(broker, tag, key):
    """Median CPU seconds per million records (`key`: broker_cpu_s or client_cpu_s) over a tag's runs."""
    return med([r[key] / r["records"] * 1e6 for r in bench(broker, tag)
                if "error" not in r and r.get(key) is not None and r.get("records")])


def failed_lines():
    """The failed and retried runs."""
    errs = [(b, t, e) for t in tags for b in ("runnel", "kafka", "mock", "sink", "peer") for e in errors(b, t)]
    retried = [r for r in rows if r.get("kind") == "bench_retried"]
    if not errs and not retried:
        return []
    out = ["## Failed runs", ""]
    for b, t, e in errs:
        out.append(f"- {b} `{t}`: {e}")
    for r in retried:
        e = r.get("error", "").strip().splitlines()
        out.append(f"- {r.get('broker')} `{r.get('tag')}` failed once and was retried after 10 s (the table has the retry): "
                   f"{e[-1] if e else 'failed'}")
    return out + [""]


def tls_lines():
    """The TLS rows (bench/tls.sh): per listener, the figure, R/K, and the ratios issue 14 sets targets for."""
    tt = [t for t in tags if t.startswith("tls-")]
    if not tt:
        return []
    out = ["## TLS: produce and consume over PLAINTEXT, SSL and SASL_SSL (1 KiB records, acks=all)", "",
           "Per listener a fresh topic is produced (acks=all, no compression), then consumed from the page cache "
           "(one consumer from the beginning). SASL_SSL logs in with PLAIN. Targets (issue 14): Runnel over TLS "
           "≥ 0.8× its own PLAINTEXT figure and ≥ 1.5× Kafka's figure over the same protocol. Both brokers "
           "encrypt in user space (Runnel: rustls with ring, so Fetch over TLS reads and encrypts instead of "
           "`sendfile`; Kafka: the JDK's SSLEngine, which also gives up zero-copy transfer over TLS).", ""]
    env = one("tls_env")
    if env:
        out.append(f"- Kernel TLS: {'available' if env.get('ktls') else 'unavailable on this machine'} "
                   f"(tcp_available_ulp: `{env.get('ulp', '?').strip()}`), so it is not used.")
    for r in rows:
        if r.get("kind") == "tls_cipher":
            out.append(f"- {r['broker']}'s SSL listener with OpenSSL's s_client: `{r.get('line') or 'no answer'}`.")
    out += ["", "| run | parts | listener | Runnel records/s (MB/s) | Kafka records/s (MB/s) | R/K | Runnel ÷ own "
            "PLAINTEXT | Kafka ÷ own PLAINTEXT | broker CPU s/M R / K | targets: ≥ 0.8× own, ≥ 1.5× Kafka |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for t in tt:
        what, proto, rest = t.split(":", 2)
        parts = rest.split(":")[1]
        base = t.replace(f":{proto}:", ":PLAINTEXT:")
        rr, rm = figure("runnel", t, "records_per_sec"), figure("runnel", t, "mb_per_sec")
        kr, km = figure("kafka", t, "records_per_sec"), figure("kafka", t, "mb_per_sec")
        rb, kb = figure("runnel", base, "records_per_sec"), figure("kafka", base, "records_per_sec")
        verdict = "—"
        if proto != "PLAINTEXT" and None not in (rr, rb, kr):
            verdict = (f"{'met' if rr >= 0.8 * rb else 'missed'} ({rr / rb:.2f}×), "
                       f"{'met' if rr >= 1.5 * kr else 'missed'} ({rr / kr:.2f}×)")
        cpu = f"{fmt_f(cpu_per_m('runnel', t, 'broker_cpu_s'), 2)} / {fmt_f(cpu_per_m('kafka', t, 'broker_cpu_s'), 2)}"
        out.append(f"| {what.split('-')[1]} | {parts} | {proto} | {fmt_n(rr)} ({fmt_f(rm)}) | {fmt_n(kr)} ({fmt_f(km)}) | "
                   f"{ratio(rr, kr)} | {ratio(rr, rb)} | {ratio(kr, kb)} | {cpu} | {verdict} |")
    out.append("")
    return out


def txn_lines():
    """The transaction rows (bench/txn.sh): figures, R/K, and the ratios issue 15 sets targets for."""
    if not any(t.startswith("txn-") for t in tags):
        return []
    out = ["## Transactions (100 B records, 8 partitions, acks=all)", "",
           "The same producer without transactions and with one transaction committed every 100 ms "
           "(`runnel bench produce --txn-ms 100`); the transactional topic consumed with read_uncommitted and "
           "read_committed. Targets (issue 15): transactional ≥ 0.9× non-transactional produce; read_committed "
           "≥ 0.95× read_uncommitted consume.", "",
           "| row | Runnel records/s | Kafka records/s | R/K | Runnel ÷ its baseline | Kafka ÷ its baseline | target |",
           "|---|---|---|---|---|---|---|"]
    for tag, base, target in (("txn-produce:plain", None, None), ("txn-produce:txn", "txn-produce:plain", 0.9),
                              ("txn-consume:read_uncommitted", None, None),
                              ("txn-consume:read_committed", "txn-consume:read_uncommitted", 0.95)):
        rr, kr = figure("runnel", tag, "records_per_sec"), figure("kafka", tag, "records_per_sec")
        rb = figure("runnel", base, "records_per_sec") if base else None
        kb = figure("kafka", base, "records_per_sec") if base else None
        verdict = "—"
        if target and rr is not None and rb:
            verdict = f"{'met' if rr >= target * rb else 'missed'} (≥ {target}×)"
        out.append(f"| {tag} | {fmt_n(rr)} | {fmt_n(kr)} | {ratio(rr, kr)} | {ratio(rr, rb) if base else '—'} | "
                   f"{ratio(kr, kb) if base else '—'} | {verdict} |")
    return out + [""]


def acl_lines():
    """bench/acl_bench.py's row: produce with no authorizer vs the StandardAuthorizer with 10,000 ACLs."""
    s = one("acl_summary")
    if not s:
        return []
    out = ["## Authorizer cost (bench/acl_bench.py)", ""]
    if "error" in s:
        return out + [f"Failed: `{s['error'].strip().splitlines()[-1] if s['error'].strip() else 'no output'}`", ""]
    runs = [r for r in rows if r.get("kind") == "acl"]
    out += [f"Two more Runnel brokers of the same build: no authorizer, and the StandardAuthorizer with {s['acls']:,} "
            "ACLs and no super users (every Produce checked); `runnel bench produce` for "
            f"{s['seconds']} s, {s['record_size']} B records, 1 partition, acks=1, alternating between them "
            f"({s['reps']} run(s) each, medians). Target (issue 14): < 2% of the throughput.", "",
            "| authorizer | records/s (median) | runs |", "|---|---|---|",
            f"| off | {fmt_n(s['off'])} | {', '.join(fmt_n(r['records_per_sec']) for r in runs if r['authorizer'] == 'off')} |",
            f"| on, {s['acls']:,} ACLs | {fmt_n(s['on'])} | "
            f"{', '.join(fmt_n(r['records_per_sec']) for r in runs if r['authorizer'] == 'on')} |", "",
            f"Cost: {100 * s['cost']:.1f}% ({'met' if s['cost'] < 0.02 else 'missed'}: < 2%; a negative cost is noise).", ""]
    return out


tags = []
for r in rows:
    if r.get("kind") == "bench" and r["tag"] not in tags:
        tags.append(r["tag"])

disk = one("ref_disk", flush="fdatasync").get("mb_per_sec")
disk_cache = one("ref_disk", flush="none").get("mb_per_sec")
tcp = one("ref_tcp").get("mb_per_sec")
# The client's ceiling per record size: `runnel bench sink` (a separate process) when the run had it,
# else librdkafka's in-process mock broker (produce only).
sink_ok = one("sink").get("available", False)
ceiling = {t.split(":")[1]: figure("mock", t, "records_per_sec") for t in tags if t.startswith("produce:") and bench("mock", t)}
ceiling_src = "mock"
sink_produce = {t.split(":")[1]: figure("sink", t, "records_per_sec") for t in tags if t.startswith("produce:") and bench("sink", t)}
if any(v is not None for v in sink_produce.values()):
    ceiling, ceiling_src = {k: v for k, v in sink_produce.items() if v is not None}, "sink"
# Consume ceiling per (size, partitions); a partition count without a sink row uses the same size's row.
consume_ceiling = {tuple(t.split(":")[1:3]): figure("sink", t, "records_per_sec")
                   for t in tags if t.startswith("consume-cached:") and bench("sink", t)}
for (s_, p_), v in list(consume_ceiling.items()):
    consume_ceiling.setdefault((s_, "*"), v)
try:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
except OSError:
    commit = "?"

L = []
L.append(f"# Benchmark: Runnel vs Apache Kafka 4.4.0 — {time.strftime('%Y-%m-%d', time.gmtime())}")
L.append("")
if note:
    L.append(f"**Partial report — {note}.** The runs after that point are missing.")
    L.append("")
tls_only = bool(tags) and all(t.startswith("tls-") for t in tags)
flags = (" --quick" if quick else "") + (" --tls-only" if tls_only else "")
L.append(
    f"`bench/run.sh{flags}` on the working tree at commit `{commit}`, {reps} repetition(s), Runnel and Kafka "
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
if tls_only:
    L += tls_lines() + acl_lines() + failed_lines()
    open(out_path, "w").write("\n".join(L))
    print("\n".join(L))
    sys.exit(0)
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
for t in tags:
    if (t.startswith("produce:") or t.startswith("consume-cached:")) and bench("sink", t):
        what = "produce" if t.startswith("produce:") else "consume"
        s, p = t.split(":")[1:3]
        e = errors("sink", t)
        fig = f"{fmt_n(figure('sink', t, 'records_per_sec'))} records/s ({fmt_f(figure('sink', t, 'mb_per_sec'))} MB/s)"
        L.append(f"| client ceiling: `runnel bench {what}` against `runnel bench sink` (own process), {s} B, {p} partition(s) | "
                 f"{fig if not e else 'failed: ' + e[0]} |")
for b in ("runnel", "kafka"):
    st = one("startup", broker=b)
    L.append(f"| {b}: spawn to first accepted TCP connection (polled every ~50 ms), empty data dir | {st.get('ms')} ms |")
    if st.get("log_ms") is not None:
        L.append(f"| {b}: `startup_ms` from its log (Server::start: open/recover the data dir, bind, serve; excludes process exec and runtime setup), empty data dir | {st['log_ms']} ms |")
rs = one("startup_restart", broker="runnel")
if rs:
    if "error" in rs:
        L.append(f"| runnel: restart after a clean shutdown (SIGTERM) | failed: {rs['error']} |")
    else:
        L.append(f"| runnel: `startup_ms` after a clean shutdown (SIGTERM{'' if rs.get('clean_shutdown') else ', needed SIGKILL'}), "
                 f"{rs.get('log_dirs')} partition dirs incl. the 1,000-partition topic | {rs.get('log_ms')} ms "
                 f"(spawn to first accept {rs.get('ms')} ms) |")
L.append("")
L.append("MB = 10^6 bytes of record values. Ratios: R/K = Runnel ÷ Kafka; /disk = MB/s ÷ the fdatasync write "
         "bandwidth; /tcp = MB/s ÷ loopback TCP; /ceil = records/s ÷ the client ceiling for that record size "
         f"({'`runnel bench sink`' if ceiling_src == 'sink' else 'the in-process mock broker'}).")
L.append("")
if ceiling_src == "sink":
    L.append("`runnel bench sink` acknowledges produce requests without storing them and serves consumers a "
             "synthetic log of the matrix's record count per partition; it runs in its own process on the same "
             "two cores, so it is the client's ceiling on this machine with a broker that does no work (consume "
             "rows whose partition count has no sink row use the same record size's sink row). The mock-broker row runs librdkafka's mock broker inside the client process (sharing its CPU).")
else:
    L.append("The mock-broker ceiling runs librdkafka's mock broker inside the client process, so it shares the "
             "client's CPU: it is a lower bound of the client's ceiling, not the ceiling itself (a /ceil above 1× "
             "means exactly that). " + ("`runnel bench sink` was not available in this build, so " if not sink_ok else "")
             + "the consume side has no sink reference; the cross-checks below compare the load generator with "
             "librdkafka's and Kafka's own tools.")
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
L.append("| size B | parts | cache | Runnel records/s (MB/s) | Kafka records/s (MB/s) | R/K | Runnel /tcp | Kafka /tcp | Runnel /ceil |")
L.append("|---|---|---|---|---|---|---|---|---|")
for t in tags:
    if not t.startswith("consume-"):
        continue
    mode = t.split(":")[0].split("-", 1)[1]
    s, p = t.split(":")[1:]
    rr, rm = figure("runnel", t, "records_per_sec"), figure("runnel", t, "mb_per_sec")
    kr, km = figure("kafka", t, "records_per_sec"), figure("kafka", t, "mb_per_sec")
    what = "page cache" if mode == "cached" else "after fadvise(DONTNEED)"
    L.append(f"| {s} | {p} | {what} | {fmt_n(rr)} ({fmt_f(rm)}) | {fmt_n(kr)} ({fmt_f(km)}) | {ratio(rr, kr)} | {ratio(rm, tcp)} | "
             f"{ratio(km, tcp)} | {ratio(rr, consume_ceiling.get((s, p), consume_ceiling.get((s, '*'))))} |")
L.append("")
multi = [t for t in tags if t.startswith(("produce4:", "consume4-"))]
if multi:
    L.append("## Four producers, then four consumers (each its own client; acks=1, no compression)")
    L.append("")
    L.append("| run | Runnel records/s (MB/s) | Kafka records/s (MB/s) | peer records/s | R/K | Runnel ÷ peer |")
    L.append("|---|---|---|---|---|---|")
    for t in multi:
        rr, rm = figure("runnel", t, "records_per_sec"), figure("runnel", t, "mb_per_sec")
        kr, km = figure("kafka", t, "records_per_sec"), figure("kafka", t, "mb_per_sec")
        pr = figure("peer", t, "records_per_sec")
        L.append(f"| `{t}` | {fmt_n(rr)} ({fmt_f(rm)}) | {fmt_n(kr)} ({fmt_f(km)}) | {fmt_n(pr)} | {ratio(rr, kr)} | {ratio(rr, pr)} |")
    L.append("")
L += txn_lines() + tls_lines() + acl_lines()

cpu_tags = [t for t in tags if t.startswith(("produce:", "consume-", "produce4:", "consume4-"))
            and any(r.get("broker_cpu_s") is not None for b in ("runnel", "kafka") for r in bench(b, t))]
if cpu_tags:
    L.append("## CPU per million records (which side bounds the figure)")
    L.append("")
    L.append("Broker CPU is the broker process's utime + stime over the run (/proc/PID/stat); client CPU is the "
             "load generator's own (getrusage). With two cores shared by client and broker, a side that uses "
             "close to a core per second of run is the bound.")
    L.append("")
    L.append("| run | Runnel broker s/M | Kafka broker s/M | peer broker s/M | Runnel ÷ Kafka (broker; target ≤ 0.33×) | Runnel broker s/GB | client s/M vs Runnel / vs Kafka |")
    L.append("|---|---|---|---|---|---|---|")
    for t in cpu_tags:
        rb, kb = cpu_per_m("runnel", t, "broker_cpu_s"), cpu_per_m("kafka", t, "broker_cpu_s")
        pb = cpu_per_m("peer", t, "broker_cpu_s")
        rc, kc = cpu_per_m("runnel", t, "client_cpu_s"), cpu_per_m("kafka", t, "client_cpu_s")
        gb = rb / (int(t.split(":")[1]) * 1e6 / 1e9) if rb is not None else None
        L.append(f"| {t} | {fmt_f(rb, 2)} | {fmt_f(kb, 2)} | {fmt_f(pb, 2)} | {ratio(rb, kb)} | {fmt_f(gb, 2)} | "
                 f"{fmt_f(rc, 2)} / {fmt_f(kc, 2)} |")
    L.append("")
    L.append("s/GB: broker CPU-seconds per 10^9 bytes of record values. The peer's CPU is its process's (tansu runs "
             "in memory, so it writes nothing to a file).")
    L.append("")

L.append("## End-to-end latency (produce → consume, acks=1, linger.ms=1, at 50% of the lower peak produce rate, and at a fixed 100 MB/s)")
L.append("")
L.append("| size B | parts | rate records/s | Runnel p50 / p99 / p99.9 / max ms | Kafka p50 / p99 / p99.9 / max ms | p99 R/K |")
L.append("|---|---|---|---|---|---|")
for t in tags:
    if not t.startswith(("e2e:", "e2e-fixed:")):
        continue
    s, p = t.split(":")[1:3]
    rate = med([r.get("target_rate") for r in bench("runnel", t) + bench("kafka", t)])
    cells = []
    for b in ("runnel", "kafka"):
        cells.append(" / ".join(fmt_f(lat(b, t, q), 2) for q in ("p50", "p99", "p99_9", "max")))
    what = " (fixed)" if t.startswith("e2e-fixed:") else ""
    L.append(f"| {s} | {p} | {fmt_n(rate)}{what} | {cells[0]} | {cells[1]} | {ratio(lat('runnel', t, 'p99'), lat('kafka', t, 'p99'))} |")
L.append("")

if any(bench("peer", t) for t in tags):
    L.append("## Peer broker (`--peer`), same runs")
    L.append("")
    L.append("| run | peer records/s (MB/s) | peer p99 ms | Runnel ÷ peer | Kafka ÷ peer | peer peak RSS MiB |")
    L.append("|---|---|---|---|---|---|")
    for t in tags:
        if not bench("peer", t):
            continue
        pr, pm = figure("peer", t, "records_per_sec"), figure("peer", t, "mb_per_sec")
        key = "p99" if t.startswith(("e2e", "produce")) else None
        e = errors("peer", t)
        rss = max([r.get("rss_peak_kib", 0) for r in bench("peer", t)] or [0])
        if t.startswith("e2e"):
            cmp_r = ratio(lat("runnel", t, "p99"), lat("peer", t, "p99"))
            cmp_k = ratio(lat("kafka", t, "p99"), lat("peer", t, "p99"))
        else:
            cmp_r = ratio(figure("runnel", t, "records_per_sec"), pr)
            cmp_k = ratio(figure("kafka", t, "records_per_sec"), pr)
        L.append(f"| `{t}` | {fmt_n(pr)} ({fmt_f(pm)}){' failed: ' + e[0] if e else ''} | "
                 f"{fmt_f(lat('peer', t, key)) if key else '—'} | {cmp_r} | {cmp_k} | {fmt_f(rss / 1024 if rss else None)} |")
    L.append("")
    L.append("Ratios of records/s (for e2e rows: of p99 latency, lower is better).")
    L.append("")

L.append("## Broker resident memory (VmRSS)")
L.append("")
L.append("| broker | idle MiB | peak under load MiB (max over all runs) |")
L.append("|---|---|---|")
peaks = {}
for b in ("runnel", "kafka"):
    idle = one("rss_idle", broker=b).get("rss_kib")
    peak = max([r.get("rss_peak_kib", 0) for r in rows if r.get("kind") == "bench" and r.get("broker") == b
                and not r.get("tag", "").startswith("rss1000")] or [0])
    peaks[b] = (idle, peak)
    L.append(f"| {b} | {fmt_f(idle / 1024 if idle else None)} | {fmt_f(peak / 1024 if peak else None)} |")
(ri, rp), (ki, kp) = peaks["runnel"], peaks["kafka"]
L.append(f"| Runnel ÷ Kafka | {ratio(ri, ki)} | {ratio(rp, kp)} |")
L.append("")

if any(t.startswith("rss1000:") for t in tags):
    L.append("### One topic with 1,000 partitions (100 B records, acks=1), produced then consumed")
    L.append("")
    L.append("| broker | peak MiB while producing | peak MiB while consuming | produce records/s | consume records/s |")
    L.append("|---|---|---|---|---|")
    pk = {}
    for b in ("runnel", "kafka"):
        cells = []
        for mode in ("produce", "consume"):
            rr = bench(b, f"rss1000:{mode}")
            cells.append(max([r.get("rss_peak_kib", 0) for r in rr] or [0]) or None)
        pk[b] = max([c for c in cells if c] or [0]) or None
        e = errors(b, "rss1000:produce") + errors(b, "rss1000:consume")
        L.append(f"| {b} | {fmt_f(cells[0] / 1024 if cells[0] else None)} | {fmt_f(cells[1] / 1024 if cells[1] else None)} | "
                 f"{fmt_n(figure(b, 'rss1000:produce', 'records_per_sec'))} | {fmt_n(figure(b, 'rss1000:consume', 'records_per_sec'))}"
                 f"{' (failed: ' + e[0] + ')' if e else ''} |")
    r1, k1 = pk["runnel"], pk["kafka"]
    verdict = "—" if not r1 or not k1 else (
        f"Runnel peak {r1 / 1024:.1f} MiB {'≤' if r1 <= 256 * 1024 else '>'} 256 MiB; "
        f"{r1 / k1:.2f}× Kafka ({'≤' if r1 <= 0.1 * k1 else '>'} 0.1×)")
    L.append(f"| Runnel ÷ Kafka (peak) | {ratio(r1, k1)} | | | |")
    L.append("")
    L.append(f"Target: Runnel ≤ 256 MiB and ≤ 0.1× Kafka. {verdict}.")
    L.append("")

rd = [r for r in rows if r.get("kind") == "rdperf"]
for r in rd:  # rdkafka_performance prints "N msgs/s and M MB/s" (produce) or "N msgs/s (M MB/s)" (consume)
    if r.get("records_per_sec") is None:
        m = re.search(r"([\d.]+) msgs/s(?: and|) \(?([\d.]+) MB/s", r.get("line", ""))
        if m:
            r["records_per_sec"], r["mb_per_sec"] = float(m.group(1)), float(m.group(2))


def target_lines():
    """Issue 18's targets, each computed from this run's figures (a missing figure reads —)."""
    def verdict(ok):
        return "—" if ok is None else ("met" if ok else "missed")

    def cmp(a, b, want, le=False):
        if a is None or not b:
            return "—", None
        r = a / b
        return f"{r:.2f}×", (r <= want if le else r >= want)

    out = ["## Issue 18's targets in this run", "", "| target | figure | verdict |", "|---|---|---|"]
    for mode, want_p, want_k in (("consume", 1.5, 1.3), ("produce", 1.3, 1.3)):
        r = rdperf_med("runnel", mode, "records_per_sec")
        for b, want in (("peer", want_p), ("kafka", want_k)):
            txt, ok = cmp(r, rdperf_med(b, mode, "records_per_sec"), want)
            out.append(f"| {mode}, 100 B, 1 partition, rdkafka_performance: Runnel ÷ {b} ≥ {want}× | {txt} | {verdict(ok)} |")
    cpu = [(t, cpu_per_m("runnel", t, "broker_cpu_s"), cpu_per_m("kafka", t, "broker_cpu_s")) for t in cpu_tags]
    cpu = [(t, r / k) for t, r, k in cpu if r is not None and k]
    if cpu:
        worst = max(cpu, key=lambda x: x[1])
        n_ok = sum(1 for _, x in cpu if x <= 0.33)
        out.append(f"| broker CPU per record ≤ 0.33× Kafka's on every produce and consume row | {n_ok} of {len(cpu)} rows; "
                   f"range {min(x for _, x in cpu):.2f}–{worst[1]:.2f}× (worst `{worst[0]}`) | {verdict(n_ok == len(cpu))} |")
    for t in [t for t in tags if t.startswith(("e2e:1024:8", "e2e-fixed:1024:8"))]:
        txt, ok = cmp(lat("runnel", t, "p99"), lat("kafka", t, "p99"), 0.5, le=True)
        what = "fixed 100 MB/s" if t.startswith("e2e-fixed") else "50% of peak"
        out.append(f"| end-to-end p99, 1 KiB × 8 partitions, {what}: Runnel ÷ Kafka ≤ 0.5× | {txt} "
                   f"({fmt_f(lat('runnel', t, 'p99'), 1)} / {fmt_f(lat('kafka', t, 'p99'), 1)} ms) | {verdict(ok)} |")
    gbs = [(t, cpu_per_m("runnel", t, "broker_cpu_s")) for t in tags
           if t.startswith(("produce:1024:", "produce4:1024:")) and t.endswith(":none")]
    gbs = [(t, v / 1.024) for t, v in gbs if v is not None]
    if gbs:
        out.append(f"| produce 1 KiB uncompressed: broker CPU ≤ 0.5 s per GB | {min(v for _, v in gbs):.2f}–"
                   f"{max(v for _, v in gbs):.2f} s/GB over {len(gbs)} rows | {verdict(max(v for _, v in gbs) <= 0.5)} |")
    out += ["", "The scale targets (100,000 partitions, 10,000 connections) are in the scale report.", ""]
    return out


def rdperf_med(b, mode, key):
    return med([r.get(key) for r in rd if r["broker"] == b and r["mode"] == mode])


if rd:
    L.append("## Cross-check: librdkafka's rdkafka_performance, 100 B, 1 partition, acks=1")
    L.append("")
    L.append("| broker | mode | runs | rdkafka_performance records/s (MB/s), median | each run records/s | broker s/M | runnel bench records/s |")
    L.append("|---|---|---|---|---|---|---|")
    for b in ("runnel", "kafka", "peer"):
        for mode in ("produce", "consume"):
            rs = [r for r in rd if r["broker"] == b and r["mode"] == mode]
            if not rs:
                continue
            t = "produce:100:1:1:none" if mode == "produce" else "consume-cached:100:1"
            cpu = med([r["broker_cpu_s"] / r["records"] * 1e6 for r in rs if r.get("broker_cpu_s") and r.get("records")])
            L.append(
                f"| {b} | {mode} | {len(rs)} | {fmt_n(rdperf_med(b, mode, 'records_per_sec'))} ({fmt_f(rdperf_med(b, mode, 'mb_per_sec'))}) | "
                f"{', '.join(fmt_n(r.get('records_per_sec')) for r in rs)} | {fmt_f(cpu, 2)} | {fmt_n(figure(b, t, 'records_per_sec'))} |"
            )
    L.append("")

kp = [r for r in rows if r.get("kind") == "kperf"]
if kp:
    L.append("## Cross-check: Kafka's ProducerPerformance (kafka-producer-perf-test), 100 B, 1 partition, acks=1, linger.ms=5")
    L.append("")
    L.append("| broker | records/s (MB/s) | avg / max ms | p50 / p95 / p99 / p99.9 ms | runnel bench records/s |")
    L.append("|---|---|---|---|---|")
    for r in kp:
        pc = r.get("percentiles_ms") or {}
        if "error" in r:
            L.append(f"| {r['broker']} | failed: {r['error']} | | | |")
            continue
        L.append(
            f"| {r['broker']} | {fmt_n(r.get('records_per_sec'))} ({fmt_f(r.get('mb_per_sec'))}) | "
            f"{fmt_f(r.get('avg_ms'))} / {fmt_f(r.get('max_ms'), 0)} | "
            f"{' / '.join(fmt_f(pc.get(q), 0) for q in ('50', '95', '99', '99.9'))} | "
            f"{fmt_n(figure(r['broker'], 'produce:100:1:1:none', 'records_per_sec'))} |"
        )
    L.append("")
    L.append("ProducerPerformance is Kafka's Java producer (one thread, batch.size 16 KiB default, "
             f"{kp[0].get('records', 0):,} records); its own MB/sec figure is MiB/s, the table's MB/s is records/s × 100 B / 10^6.")
    L.append("")

L += target_lines()
sc = one("scale")
if sc:
    L.append("## Scale rows")
    L.append("")
    L.append(f"`bench/scale.py`, after the rows above: [{sc['report']}]({sc['report']})." if "report" in sc
             else f"`bench/scale.py`: {sc.get('error')}.")
    L.append("")
L += failed_lines()
open(out_path, "w").write("\n".join(L))
print("\n".join(L))
