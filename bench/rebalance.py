#!/usr/bin/env python3
"""Rebalancing onto a new broker (issue 16), on real processes on 127.0.0.1: Runnel's automatic balancing and,
with `--peer kafka`, Apache Kafka 4.4.0 doing the same move with kafka-reassign-partitions in the same run.

Each round: three combined nodes hold a topic `moved` of PARTITIONS partitions × MB MiB each (replication factor
2, 16 KiB records, the same count in every partition), a fourth, broker-only node joins and replicas move onto
it.
- runnel: automatic balancing (`auto.balance.*`, check every second, 10 moves at a time) moves its share as
  soon as node 4 starts;
- kafka (bench/kafka_cluster.py): node 4 starts, then `ReassignPartitionsCommand --generate` for the topic and
  brokers 1,2,3,4 and `--execute` of its proposal (`--throttle` in the throttled round), then `--verify` until
  every partition is complete (which also removes the throttle). Kafka has no automatic balancing; its plan
  moves more replicas than needed (it reassigns every partition afresh), so both the replicas and bytes it
  moved in all and those onto node 4 are reported.

Measured per broker, once without and once with a replication throttle of THROTTLE_MB MB/s (Runnel: KIP-73's
leader/follower rate on every broker and `*` throttled replicas on the topic; Kafka: `--throttle`, which sets
the same keys for the moving replicas):
- `seconds`: runnel from node 4's start, kafka from the launch of `--execute` (a JVM start, ~1-3 s, included),
  until ListPartitionReassignments is empty (runnel: and stays so for 3 s; the time is when it became empty);
- `seconds_from_first_move`: from the first poll (every 0.1 s) that saw a reassignment in progress until the
  same end, the comparable figure; null ("not seen") when every move began and ended between two polls (runnel
  then ends at the first poll after the metadata, read every second, showed replicas on node 4); kafka's
  `seconds_to_verify` runs until `--verify` (one JVM per call) said every partition completed;
- replicas moved (in all / onto node 4), partitions whose replica set changed, bytes of the `moved` logs on node
  4 after the move and bytes of every newly added replica (the log files on its new broker);
- a probe producer's ack latency (acks=all, 200 records/s to its own RF-3 topic, `runnel bench produce`), p99 in
  5-second windows: before the move (baseline: the median of two windows on the idle cluster after one
  discarded) and during it (the windows overlapping the move: median and worst).

Usage: python3 bench/rebalance.py [--partitions 100] [--mb 100] [--throttle-mb 50] [--peer kafka]
                                  [--brokers runnel,kafka] [--out FILE.jsonl]
e.g.   RUNNEL_BIN=target/release/runnel python3 bench/rebalance.py --peer kafka --partitions 10 --mb 10 \
           --throttle-mb 2 --out /tmp/rebalance.jsonl
Rounds run one after the other (runnel unthrottled, throttled, then kafka's two); each cluster and its data is
deleted before the next starts. RUNNEL_BIN names the runnel binary (default target/release/runnel, after
`cargo build --release`). Kafka's jars come from `scripts/kafka-reference.sh fetch` (a Maven copy, no bin/
scripts: the tools run as their main classes, e.g. kafka-reassign-partitions.sh is ReassignPartitionsCommand);
its JVMs run under `nice -n $KAFKA_NICE` (default 10, for a shared machine: set KAFKA_NICE=0 on a quiet one,
or Kafka's latencies compete at a lower priority than runnel's) with KAFKA_HEAP_OPTS (default -Xmx512m).
Appends one JSON row per round (with a `broker` field) to --out and prints a markdown table at the end
(`--table FILE.jsonl` prints it again from the rows). The issue's figure is 100 × 100 MB: ~21 GB of disk per
cluster with the replicas, plus the moved copies until the old replicas are deleted (Kafka: a minute after the
move); one cluster at a time.
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
sys.path.insert(0, str(ROOT / "bench"))

from conftest import RUNNEL_BIN  # noqa: E402
from kafka_cluster import REASSIGN, KafkaCluster, tool, tool_argv  # noqa: E402
from test_balancing import alter_config  # noqa: E402
from test_cluster import create_topic  # noqa: E402
from test_metadata_quorum import four_node_cluster  # noqa: E402
from test_reassignment import list_ongoing  # noqa: E402

RECORD = 16384
POLL_S = 0.1
QUIET_S = 3
WINDOW_S = 5


def bench(bootstrap: str, *args: str, timeout: float = 120) -> dict:
    out = subprocess.run([str(RUNNEL_BIN), "bench", "produce", "-b", bootstrap, "--json", *args],
                         capture_output=True, text=True, timeout=timeout, check=True).stdout
    return json.loads(out)


def probe_window(bootstrap: str) -> float | None:
    r = bench(bootstrap, "-t", "probe", "--rate", "200", "--acks", "all", "--duration", str(WINDOW_S), "-s", "100")
    return r["latency_ms"]["p99"] if r.get("latency_ms") else None


def fill(bootstrap: str, partitions: int, mb: int) -> dict:
    """`moved` gets MB MiB of 16 KiB records in every partition: one acks=all producer (confluent-kafka; acks=1
    lost unreplicated tails to leadership changes during the 2026-12-05 fill, as acks=1 may) writes
    partition 0, 1, 2, ... in turn, at most 64 MiB queued (nothing held beyond that). Not `runnel bench
    produce`: it sends runs of 4096 records (64 MiB of these) to one partition after another, which leaves
    most partitions of a small fill empty and puts one or two runs in each at 100 × 100 MB."""
    from confluent_kafka import Producer
    errors: list = []
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20,
                  "queue.buffering.max.kbytes": 65536, "message.timeout.ms": 300000})
    value = bytes(RECORD)
    per_partition = mb * (1 << 20) // RECORD
    started = time.monotonic()
    for i in range(per_partition * partitions):
        while True:
            try:
                p.produce("moved", value=value, partition=i % partitions,
                          on_delivery=lambda err, _msg: err and errors.append(err))
                break
            except BufferError:
                p.poll(0.05)
        if i % 1024 == 0:
            p.poll(0)
        if errors:
            raise RuntimeError(f"filling moved: {errors[0]}")
    left = p.flush(600 + partitions * mb)
    if left or errors:
        raise RuntimeError(f"filling moved: {left} records not acknowledged, errors: {errors[:3]}")
    took = time.monotonic() - started
    return {"mb_per_sec": per_partition * partitions * RECORD / 1e6 / took}


def move_timeout(partitions: int, mb: int, throttle_mb: int | None) -> float:
    """Every replica of the topic moved once, four times over, at the throttle (or at >= 5 MB/s)."""
    return 600 + 4 * partitions * mb * 2 / (throttle_mb or 5)


def log_bytes(data_dir: Path, p: int) -> int:
    return sum(f.stat().st_size for f in (Path(data_dir) / f"moved-{p}").glob("*.log"))


class Probe:
    """acks=all probes in 5 s windows until stopped: (start, end, p99 ack latency in ms) per window."""

    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap
        self.windows: list[tuple[float, float, float]] = []
        self.error: Exception | None = None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self.stop.is_set():
            start = time.monotonic()
            try:
                p99 = probe_window(self.bootstrap)
            except (subprocess.SubprocessError, ValueError) as e:
                self.error = e
                return
            if p99 is not None:
                self.windows.append((start, time.monotonic(), p99))

    def start(self):
        self.thread.start()

    def finish(self):
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join(WINDOW_S + 60)

    def during(self, t0: float, t1: float) -> list[float]:
        return [p99 for start, end, p99 in self.windows if start < t1 and end > t0]


def baseline(bootstrap: str) -> float:
    """The median p99 of two windows on the idle cluster, after one discarded window (a fresh JVM's JIT, the
    probe topic's first writes)."""
    probe_window(bootstrap)
    return statistics.median(p for p in (probe_window(bootstrap) for _ in range(2)) if p is not None)


def row(broker: str, c, partitions: int, mb: int, throttle_mb: int | None, filled: dict, base: float, probe: Probe,
        before: dict, t0: float, first_move: float | None, settled: float, **extra) -> dict:
    after = c.metadata("moved").topics["moved"].partitions
    added = [(p, b) for p in after for b in set(after[p].replicas) - set(before[p].replicas)]
    during = probe.during(t0, settled)
    return {"broker": broker, "partitions": partitions, "mb_per_partition": mb, "throttle_mb_per_s": throttle_mb,
            "filled_mb_per_s": filled["mb_per_sec"], "seconds": round(settled - t0, 2),
            "seconds_from_first_move": None if first_move is None else round(settled - first_move, 2), **extra,
            "replicas_moved": len(added), "replicas_to_new_broker": sum(b == 4 for _, b in added),
            "partitions_changed": sum(set(after[p].replicas) != set(before[p].replicas) for p in after),
            "bytes_to_new_broker": sum(log_bytes(c.nodes[4].data_dir, p) for p in after if 4 in after[p].replicas),
            "bytes_moved": sum(log_bytes(c.nodes[b].data_dir, p) for p, b in added),
            "probe_p99_ms_baseline": base,
            "probe_p99_ms_during_median": statistics.median(during) if during else None,
            "probe_p99_ms_during_worst": max(during) if during else None}


def runnel_run(partitions: int, mb: int, throttle_mb: int | None) -> dict:
    sets = {"auto.balance.enable": "true", "auto.balance.check.interval.ms": "1000",
            "auto.balance.max.concurrent.moves": "10", "min.insync.replicas": "1"}
    g = four_node_cluster(sets=sets, start_fourth=False)
    c = next(g)
    bootstrap = ",".join(c.nodes[n].bootstrap for n in (1, 2, 3))  # c.bootstrap names node 4, not started yet
    probe = Probe(bootstrap)
    try:
        create_topic(c, "moved", partitions=partitions, rf=2)
        create_topic(c, "probe", partitions=1, rf=3)
        filled = fill(bootstrap, partitions, mb)
        base = baseline(bootstrap)
        b2 = c.nodes[2].bootstrap
        if throttle_mb:
            rate = str(throttle_mb * 1_000_000)
            alter_config(b2, 4, "", "follower.replication.throttled.rate", rate)
            alter_config(b2, 4, "", "leader.replication.throttled.rate", rate)
            alter_config(b2, 2, "moved", "follower.replication.throttled.replicas", "*")
            alter_config(b2, 2, "moved", "leader.replication.throttled.replicas", "*")
        before = c.metadata("moved").topics["moved"].partitions
        probe.start()
        t0 = time.monotonic()
        deadline = t0 + move_timeout(partitions, mb, throttle_mb)
        # Node 4 is spawned without waiting for it to answer (start() would wait) so that the polls below run
        # from its start: balancing may begin, even end, before it answers. (Not from a thread: the broker
        # gets SIGKILL when the thread that spawned it exits, PR_SET_PDEATHSIG.)
        node4 = c.nodes[4]
        node4.wait_ready = lambda: None
        node4.start()
        first_move = landed = quiet_since = None
        checked = t0
        while True:
            if node4.proc.poll() is not None:
                raise RuntimeError(f"runnel node 4 exited {node4.proc.returncode}:\n{node4.log_tail()}")
            ongoing = list_ongoing(b2)
            now = time.monotonic()
            if ongoing and first_move is None:
                first_move = now
            if first_move is None and landed is None and not ongoing and now - checked >= 1:
                # A move may start and finish between two polls: the metadata shows where it went.
                checked = now
                if any(4 in pm.replicas for pm in c.metadata("moved").topics["moved"].partitions.values()):
                    landed = now
            if ongoing or (first_move is None and landed is None):
                quiet_since = None
            elif quiet_since is None:
                quiet_since = now
            elif now - quiet_since >= QUIET_S:
                break
            if now > deadline:
                raise RuntimeError(f"runnel: the move did not settle within {deadline - t0:.0f}s "
                                   f"(moving: {sorted(ongoing)})")
            time.sleep(POLL_S)
        probe.finish()
        return row("runnel", c, partitions, mb, throttle_mb, filled, base, probe, before, t0, first_move,
                   quiet_since)
    finally:
        probe.finish()
        try:
            next(g)
        except StopIteration:
            pass


def proposed_plan(generate_out: str) -> dict:
    """The JSON after 'Proposed partition reassignment configuration' in `--generate`'s output."""
    lines = generate_out.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Proposed partition reassignment configuration"):
            return json.loads(next(x for x in lines[i + 1:] if x.strip()))
    raise RuntimeError(f"no proposed reassignment in --generate's output:\n{generate_out}")


def kafka_run(partitions: int, mb: int, throttle_mb: int | None) -> dict:
    with KafkaCluster() as c:
        probe = Probe(c.bootstrap)
        try:
            return _kafka_round(c, probe, partitions, mb, throttle_mb)
        finally:
            probe.finish()


def _kafka_round(c: KafkaCluster, probe: Probe, partitions: int, mb: int, throttle_mb: int | None) -> dict:
    c.start()
    create_topic(c, "moved", partitions=partitions, rf=2)
    create_topic(c, "probe", partitions=1, rf=3)
    filled = fill(c.bootstrap, partitions, mb)
    c.start_fourth()
    c.wait_fourth()
    b = c.nodes[1].bootstrap
    topics, plan = c.root / "topics.json", c.root / "plan.json"
    topics.write_text(json.dumps({"topics": [{"topic": "moved"}], "version": 1}))
    plan.write_text(json.dumps(proposed_plan(tool(REASSIGN, "--bootstrap-server", b, "--topics-to-move-json-file",
                                                  str(topics), "--broker-list", "1,2,3,4", "--generate"))))
    base = baseline(c.bootstrap)
    before = c.metadata("moved").topics["moved"].partitions
    throttle = ["--throttle", str(throttle_mb * 1_000_000)] if throttle_mb else []
    execute = tool_argv(REASSIGN, "--bootstrap-server", b, "--reassignment-json-file", str(plan), "--execute",
                        *throttle)
    probe.start()
    t0 = time.monotonic()
    deadline = t0 + move_timeout(partitions, mb, throttle_mb)
    with open(c.root / "execute.log", "w+") as log:
        proc = subprocess.Popen(execute, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            executed = first_move = None
            while True:
                now = time.monotonic()
                if executed is None and proc.poll() is not None:
                    executed = now
                    if proc.returncode != 0:
                        log.seek(0)
                        raise RuntimeError(f"--execute exited {proc.returncode}:\n{log.read()[-3000:]}")
                ongoing = list_ongoing(b)
                if ongoing and first_move is None:
                    first_move = now
                if executed is not None and not ongoing:
                    settled = now
                    break
                if now > deadline:
                    raise RuntimeError(f"kafka: the reassignment did not complete within {deadline - t0:.0f}s "
                                       f"(moving: {sorted(ongoing)})")
                time.sleep(POLL_S)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    expect = len(json.loads(plan.read_text())["partitions"])
    while True:
        out = tool(REASSIGN, "--bootstrap-server", b, "--reassignment-json-file", str(plan), "--verify")
        if out.count(" is completed") == expect:
            verified = time.monotonic()
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"kafka: --verify never said every partition completed:\n{out}")
    probe.finish()
    return row("kafka", c, partitions, mb, throttle_mb, filled, base, probe, before, t0, first_move, settled,
               seconds_to_verify=round(verified - t0, 2))


def mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


def table(rows: list[dict]) -> str:
    out = [("| broker | throttle | time to settle | from first move | until --verify "
            "| replicas moved (onto broker 4 / all) | bytes to broker 4 | bytes moved (all) | probe p99 before "
            "| probe p99 during (median / worst) |"),
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        throttle = f"{r['throttle_mb_per_s']} MB/s" if r["throttle_mb_per_s"] else "none"
        first = r["seconds_from_first_move"]
        first = "not seen" if first is None else f"{first:.2f} s"
        verify = f"{r['seconds_to_verify']:.2f} s" if "seconds_to_verify" in r else "-"
        out.append(f"| {r['broker']} | {throttle} | {r['seconds']:.2f} s | {first} | {verify} "
                   f"| {r['replicas_to_new_broker']} / {r['replicas_moved']} | {mb(r['bytes_to_new_broker'])} "
                   f"| {mb(r['bytes_moved'])} | {ms(r['probe_p99_ms_baseline'])} ms "
                   f"| {ms(r['probe_p99_ms_during_median'])} / {ms(r['probe_p99_ms_during_worst'])} ms |")
    out += ["", "Time to settle: runnel from node 4's start, kafka from the launch of --execute, until no "
            "reassignment is listed; from first move: from the first poll (0.1 s) that listed one; until --verify: "
            "from the launch of --execute until --verify said every partition completed."]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--mb", type=int, default=100)
    ap.add_argument("--throttle-mb", type=int, default=50)
    ap.add_argument("--brokers", default="runnel", help="comma-separated, in order: runnel, kafka")
    ap.add_argument("--peer", choices=["kafka"], help="also measure it after runnel (= --brokers runnel,kafka)")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--table", type=Path, metavar="JSONL", help="only print the table of an --out file's rows")
    a = ap.parse_args()
    if a.table:
        print(table([json.loads(line) for line in a.table.read_text().splitlines() if line.strip()]))
        return
    brokers = a.brokers.split(",") + ([a.peer] if a.peer and a.peer not in a.brokers.split(",") else [])
    runs = {"runnel": runnel_run, "kafka": kafka_run}
    if unknown := [b for b in brokers if b not in runs]:
        ap.error(f"unknown broker(s) {unknown}: runnel, kafka")
    rows = []
    for broker in brokers:
        for throttle in (None, a.throttle_mb):
            r = runs[broker](a.partitions, a.mb, throttle)
            rows.append(r)
            print(json.dumps(r), flush=True)
            if a.out:
                with a.out.open("a") as f:
                    f.write(json.dumps(r) + "\n")
    print()
    print(table(rows))


if __name__ == "__main__":
    main()
