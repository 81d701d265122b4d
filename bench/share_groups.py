#!/usr/bin/env python3
"""Share-group (KIP-932, "queues") delivery throughput: 1, 4 and 16 share consumers of ONE partition, Runnel
versus Apache Kafka.

What: a topic with one partition is filled once per broker with RECORDS records of 100 B (confluent-kafka
producer, no compression, acks=all, batch.size B = 16384 by default, the Java producer's default: ~140 records a
batch). The batch size matters: a share-partition has at most `share.partition.max.record.locks` (2000) records
in flight and a ShareFetch acquires whole batches, so batches of ~2,000 records let only one consumer hold
records at a time (on both brokers). Then, per rep and per consumer count K, a fresh share group (its
`share.auto.offset.reset=earliest` set as a group config with Admin.incrementalAlterConfigs) is consumed by K
KafkaShareConsumer threads (kafka-clients 4.4.0, explicit acknowledgement mode, every record ACCEPTed and
`--commit` after every poll) in one JVM — tests/java ShareBench — until N distinct records have been
acknowledged (the broker confirmed the ACCEPT). records/s = N / (time from the first delivered record to the
N-th confirmed acknowledgement); "duplicates" counts deliveries of a record that had been delivered before. A
reference line: one plain KafkaConsumer (assign partition 0, no group, no commits) reading N records of the
same topic. Reps alternate Runnel / Kafka (the Runnel broker and the Kafka broker both stay up for the whole
run, so they share the machine the same way); the table gives medians and same-rep ratios R/K.

How: Runnel is started here (tests/conftest.py BrokerProcess, release binary target/release/runnel, default
share settings); Kafka must already run, e.g. `bash scripts/kafka-reference.sh start 39192` (4.4.0 KRaft,
share groups on by default) and `stop 39192` afterwards. The Java driver is built by
scripts/install-test-deps.sh.

Usage: python3 bench/share_groups.py [REPS] [--kafka HOST:PORT] [--consumers 1,4,16] [--count N] [--max-seconds S]
                                     [--records R] [--batch-bytes B]
                                     [--commit sync|async|poll] [--heap 512m] [--no-classic] [--json FILE]
                                     [--consumer-config KEY=VALUE]...  (extra share-consumer configs)
  (after `cargo build --release -p runnel` and `bash scripts/install-test-deps.sh`)
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from conftest import BrokerProcess, make_topic  # noqa: E402

JAVA_DIR = ROOT / "tests" / "java" / "target"
RECORD_BYTES = 100
MAX_SECONDS = 40.0
HEAP = "512m"


def java(mode: str, *args: str, max_seconds: float = MAX_SECONDS) -> dict:
    """Runs `ShareBench mode args` (capped at `max_seconds` of consuming) and returns its result line."""
    jar = JAVA_DIR / "runnel-client-test.jar"
    if not jar.exists():
        sys.exit("tests/java not built: run scripts/install-test-deps.sh")
    log4j = JAVA_DIR / "bench-log4j.properties"
    log4j.write_text("log4j.rootLogger=ERROR, stderr\nlog4j.appender.stderr=org.apache.log4j.ConsoleAppender\n"
                     "log4j.appender.stderr.Target=System.err\n"
                     "log4j.appender.stderr.layout=org.apache.log4j.PatternLayout\n"
                     "log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n\n")
    argv = ["java", f"-Xmx{HEAP}", f"-Dlog4j.configuration=file:{log4j}", "-cp", f"{jar}:{JAVA_DIR / 'lib'}/*",
            "dev.runnel.clienttest.ShareBench", mode, *args, "--max-seconds", str(max_seconds)]
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=max_seconds + 90)
    except subprocess.TimeoutExpired as e:
        return {"records_per_s": None, "elapsed_s": None, "first_record_s": None, "duplicates": 0,
                "failed_acks": 0, "per_consumer": [], "capped": True, "rc": "timeout",
                "error": f"no result {max_seconds + 90:.0f} s after start", "stderr_tail": str(e.stderr)[-1500:]}
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("{\"mode\"")]
    if not lines:
        raise RuntimeError(f"ShareBench {mode} exited {res.returncode} without a result\n{res.stdout[-2000:]}\n"
                           f"{res.stderr[-3000:]}")
    out = json.loads(lines[-1])
    out["rc"] = res.returncode
    if "OutOfMemoryError" in res.stderr:
        # the share consumer catches errors of its network thread (and logs them): a stalled run, not an error
        out["error"] = ((out.get("error") or "") + " client OutOfMemoryError (JVM heap " + HEAP + ")").strip()
    if res.returncode != 0:
        out["stderr_tail"] = res.stderr[-1500:]
    return out


def fill(bootstrap: str, records: int, batch_bytes: int) -> str:
    from confluent_kafka import Producer
    topic = "sb-" + uuid.uuid4().hex[:8]
    make_topic(bootstrap, topic, 1)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": batch_bytes,
                  "acks": "all", "compression.type": "none"})
    for i in range(records):
        v = (b"%08d" % i).ljust(RECORD_BYTES, b".")
        while True:
            try:
                p.produce(topic, value=v, partition=0)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(60) == 0, "produce did not finish"
    return topic


def share_run(bootstrap: str, topic: str, consumers: int, count: int, commit: str, cap: float,
              extra: list[str]) -> dict:
    group = "sbg-" + uuid.uuid4().hex[:8]
    extra_args = [a for kv in extra for a in ("--consumer-config", kv)]
    return java("share", "--bootstrap", bootstrap, "--group", group, "--topic", topic,
                "--consumers", str(consumers), "--count", str(count), "--commit", commit,
                "--set", "share.auto.offset.reset=earliest", *extra_args, max_seconds=cap)


def classic_run(bootstrap: str, topic: str, count: int) -> dict:
    return java("classic", "--bootstrap", bootstrap, "--topic", topic, "--count", str(count))


def fmt(x: float) -> str:
    return f"{x:,.0f}"


def main():
    args = sys.argv[1:]
    if "-h" in args or "--help" in args:
        print(__doc__)
        return
    opts = {"--kafka": None, "--consumers": "1,4,16", "--count": "100000", "--records": "200000",
            "--commit": "async", "--json": None, "--batch-bytes": "16384", "--max-seconds": str(MAX_SECONDS)}
    classic = True
    global HEAP
    if "--heap" in args:
        i = args.index("--heap")
        HEAP = args[i + 1]
        del args[i:i + 2]
    extra: list[str] = []
    while "--consumer-config" in args:
        i = args.index("--consumer-config")
        extra.append(args[i + 1])
        del args[i:i + 2]
    if "--no-classic" in args:
        args.remove("--no-classic")
        classic = False
    for k in list(opts):
        if k in args:
            i = args.index(k)
            opts[k] = args[i + 1]
            del args[i:i + 2]
    reps = int(args[0]) if args else 3
    sizes = [int(x) for x in opts["--consumers"].split(",")]
    count, records, commit = int(opts["--count"]), int(opts["--records"]), opts["--commit"]
    cap = float(opts["--max-seconds"])
    assert count <= records
    jsonl = open(opts["--json"], "a") if opts["--json"] else None

    b = BrokerProcess()
    b.start()
    try:
        brokers = [("runnel", b.bootstrap)]
        if opts["--kafka"]:
            brokers.append(("kafka", opts["--kafka"]))
        topics = {}
        for name, bs in brokers:
            t0 = time.monotonic()
            topics[name] = fill(bs, records, int(opts["--batch-bytes"]))
            print(f"# {name} {bs}: {records} records of {RECORD_BYTES} B in {topics[name]} "
                  f"({time.monotonic() - t0:.1f} s)", flush=True)
        results: dict[tuple[str, str], list[dict]] = {}
        kinds = (["classic"] if classic else []) + [f"share-{k}" for k in sizes]
        for rep in range(reps):
            for kind in kinds:
                # alternate which broker goes first, rep by rep
                order = brokers if rep % 2 == 0 else brokers[::-1]
                for name, bs in order:
                    if kind == "classic":
                        r = classic_run(bs, topics[name], count)
                    else:
                        r = share_run(bs, topics[name], int(kind.split("-")[1]), count, commit, cap, extra)
                    r.update(broker=name, kind=kind, rep=rep)
                    results.setdefault((name, kind), []).append(r)
                    if jsonl:
                        jsonl.write(json.dumps(r) + "\n")
                        jsonl.flush()
                    rate = r["records_per_s"]
                    capped = " (capped: N not reached)" if r.get("capped") else ""
                    print(f"rep {rep} {name:<6} {kind:<9} "
                          f"{fmt(rate) if rate else 'FAILED':>9} rec/s  elapsed {r['elapsed_s']} s  "
                          f"first {r['first_record_s']} s  dup {r['duplicates']}  failed_acks {r['failed_acks']}  "
                          f"per consumer {r['per_consumer']}  rc {r['rc']}"
                          + capped + (f"  error {r['error']}" if r.get("error") else ""), flush=True)
        print()
        print(f"commit={commit} N={count} records={records} reps={reps} cap={cap} s consumer configs={extra} (medians; R/K = median of "
              f"same-rep ratios; '*' = some runs capped, their rate is acknowledged/elapsed at the cap)")
        print("| consumers | Runnel records/s | Kafka records/s | R/K | duplicates (R / K) |")
        print("|---|---|---|---|---|")
        for kind in kinds:
            rr = results.get(("runnel", kind), [])
            kk = results.get(("kafka", kind), [])
            rv = [x["records_per_s"] for x in rr if x["records_per_s"]]
            kv = [x["records_per_s"] for x in kk if x["records_per_s"]]
            ratios = [a["records_per_s"] / c["records_per_s"] for a, c in zip(rr, kk)
                      if a["records_per_s"] and c["records_per_s"]]
            label = "1 (classic consumer)" if kind == "classic" else kind.split("-")[1]
            star = ["*" if any(x.get("capped") for x in xs) else "" for xs in (rr, kk)]
            med = [fmt(statistics.median(v)) + st if v else "-" for v, st in zip((rv, kv), star)]
            ratio = f"{statistics.median(ratios):.2f}" if ratios else "-"
            dups = f"{sum(x['duplicates'] for x in rr)} / {sum(x['duplicates'] for x in kk)}"
            print(f"| {label} | {med[0]} | {med[1]} | {ratio} | {dups} |")
    finally:
        b.close()
        if jsonl:
            jsonl.close()


if __name__ == "__main__":
    main()
