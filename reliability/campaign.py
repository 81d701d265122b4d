#!/usr/bin/env python3
"""Fault campaign against three real `runnel` processes (issue 13). See reliability/README.md.

    python3 reliability/campaign.py --rounds 50 --max-minutes 180     # the full campaign
    python3 reliability/campaign.py --rounds 1                        # smoke: one round per class
    python3 reliability/campaign.py --classes kill9_leader,disk_full --rounds 5 --seed 42

Each round: a fresh topic (RF 3, min.insync.replicas=2), idempotent acks=all producers, one fault injected
and healed, then the liveness clock (every partition led with its full ISR within 30 s of the heal) and the
checker (every acknowledged record stored once, at its acknowledged offset, in order per producer and
partition). Results: reliability/results/<date>-<classes>.md and .jsonl.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import faults  # noqa: E402
import rig  # noqa: E402
import workload  # noqa: E402

LIVENESS_S = 30.0
LIVENESS_WAIT_S = 90.0  # how long the clock keeps running past the bound, to report the actual time
WARM_ACKS = 60  # per producer, before the fault and again after the heal
SETS = {"num.partitions": "3", "default.replication.factor": "3", "min.insync.replicas": "2",
        "broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "300",
        "replica.lag.time.max.ms": "5000", "offsets.topic.replication.factor": "3",
        "offsets.topic.num.partitions": "3", "group.initial.rebalance.delay.ms": "0",
        "leader.imbalance.check.interval.seconds": "10"}


def log(msg: str):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def full_isr(cluster: rig.Cluster, topics: list[str]) -> bool:
    """Every node answers and agrees: all three brokers are registered (unfenced) and each partition of
    `topics` has a leader and all three in its ISR."""
    leaders = None
    for n in rig.NODES:
        md = cluster.ask(n, topics)
        if not md or md["brokers"] != list(rig.NODES):  # all three registered and unfenced, as seen by n
            return False
        mine = {}
        for t in topics:
            parts = md["topics"].get(t)
            if not parts:
                return False
            for p, (err, leader, isr) in parts.items():
                if err != 0 or leader < 0 or isr != list(rig.NODES):
                    return False
                mine[(t, p)] = leader
        if leaders is not None and mine != leaders:
            return False
        leaders = mine
    return True


def wait_full_isr(ctx: faults.Ctx, since: float, limit: float = LIVENESS_WAIT_S) -> float | None:
    topics = [ctx.topic] + (["__consumer_offsets"] if ctx.group is not None else [])
    while time.monotonic() - since < limit:
        if full_isr(ctx.cluster, topics):
            return round(time.monotonic() - since, 3)
        time.sleep(0.1)
    return None


def create_topic(cluster: rig.Cluster, topic: str, partitions: int):
    from confluent_kafka.admin import AdminClient, NewTopic
    a = AdminClient(workload.conf(cluster.bootstrap))
    a.create_topics([NewTopic(topic, partitions, 3, config={"min.insync.replicas": "2"})],
                    operation_timeout=30)[topic].result(60)
    deadline = time.monotonic() + 30
    while not full_isr(cluster, [topic]):
        if time.monotonic() > deadline:
            raise rig.RigError(f"{topic} not led with a full ISR 30 s after creation")
        time.sleep(0.1)


def delete_topic(cluster: rig.Cluster, topic: str):
    from confluent_kafka.admin import AdminClient
    a = AdminClient(workload.conf(cluster.bootstrap))
    try:
        a.delete_topics([topic], operation_timeout=30)[topic].result(30)
    except Exception as e:  # noqa: BLE001 - housekeeping only
        log(f"  (delete {topic} failed: {e})")


def run_round(cfg, cluster: rig.Cluster, mounts: rig.Mounts, net: rig.Net, cls: str, r: int) -> dict:
    rng = random.Random(f"{cfg.seed}/{cls}/{r}")
    topic = f"{cls.replace('_', '-')}-r{r}"
    ctx = faults.Ctx(cluster=cluster, net=net, mounts=mounts, rng=rng, topic=topic, partitions=cfg.partitions)
    ctx.wait_full_isr = lambda: wait_full_isr(ctx, time.monotonic(), LIVENESS_S)
    if cls == "disk_full":
        faults.prepare_disk_full(ctx)
    deadline = time.monotonic() + 30
    while not full_isr(cluster, []):  # the previous round's victim may still be registering
        if time.monotonic() > deadline:
            raise rig.RigError("three brokers not all registered 30 s into the round")
        time.sleep(0.1)
    create_topic(cluster, topic, cfg.partitions)
    workers = [workload.ProducerWorker(i, cluster.bootstrap, topic, cfg.partitions) for i in range(cfg.producers)]
    for w in workers:
        w.start()
    row = {"class": cls, "round": r, "seed": cfg.seed, "topic": topic}
    t0 = time.monotonic()
    group = None
    try:
        if not workload.wait_acks(workers, WARM_ACKS, 30):
            raise rig.RigError("producers got no acknowledgements before the fault")
        if cls == "coordinator_kill":
            group = ctx.group = workload.Group(cluster.bootstrap, topic, cfg.partitions)
            group.start()
        row["controller_before"] = ctx.controller()
        row["fault"] = faults.CLASSES[cls][0](ctx)
        isr_s = wait_full_isr(ctx, ctx.heal_at)
        watched = [topic] + (["__consumer_offsets"] if group is not None else [])
        row["time_to_full_isr_s"] = isr_s
        if isr_s is None or isr_s > LIVENESS_S:
            ctx.violations.append({"kind": "liveness", "evidence": f"full ISR and leaders "
                                   f"{'not within ' + str(LIVENESS_WAIT_S) if isr_s is None else f'after {isr_s}'}"
                                   f" s of the heal; metadata: {[cluster.ask(n, watched) for n in rig.NODES]}"})
        if not workload.wait_acks(workers, WARM_ACKS, 60):
            ctx.violations.append({"kind": "writes_not_resumed", "evidence": f"acks per producer "
                                   f"{[len(w.acked) for w in workers]} did not grow by {WARM_ACKS} within 60 s"})
    finally:
        left = [w.finish() for w in workers]
    if any(left):
        ctx.violations.append({"kind": "undelivered", "evidence": f"delivery reports missing after flush: {left}"})
    for w in workers:
        if w.fatal:
            ctx.violations.append({"kind": "producer_fatal", "evidence": f"producer {w.pid}: {w.fatal}"})
    records, hw, complete = workload.read_log(cluster.bootstrap, topic, cfg.partitions)
    violations = ctx.violations + workload.check(workers, records, hw, complete)
    if group is not None:
        deadline = time.monotonic() + 30
        while not group.caught_up(hw) and time.monotonic() < deadline:
            time.sleep(0.2)
        caught_up = group.caught_up(hw)
        final = group.stop()
        group.close()
        if not caught_up:
            violations.append({"kind": "group_stuck", "evidence": f"commits {group.log.acked_commit} did not "
                               f"reach the log ends {hw} within 30 s (last commit error: "
                               f"{group.log.last_commit_error})"})
        violations += workload.check_group(group, workers, final)
        row["group"] = {"final_committed": final, "commit_errors": group.log.commit_errors,
                        "samples": sum(len(v) for v in group.log.observed.values())}
    no_offset = workload.acked_without_offset(workers)
    row.update({"acked_without_offset": len(no_offset), "acked_without_offset_e_g": no_offset[:5],
                "duration_s": round(time.monotonic() - t0, 2), "acked": sum(len(w.acked) for w in workers),
                "failed_deliveries": sum(len(w.failed) for w in workers),
                "stored": sum(len(v) for v in records.values()), "violations": violations})
    # The tmpfs mount points stay until the class's cluster is gone; a failed round's topic stays as evidence.
    if cls != "disk_full" and not violations:
        delete_topic(cluster, topic)
    return row


class ClassRun:
    """One class's rounds on a cluster of its own (a fresh one after a violation or a harness error)."""

    def __init__(self, cfg, net: rig.Net, cls: str):
        self.cfg, self.net, self.cls = cfg, net, cls
        self.gen = 0
        self.cluster = self.mounts = None

    def up(self):
        self.gen += 1
        self.base = rig.WORK_ROOT / self.cfg.run_id / f"{self.cls}-g{self.gen}"
        self.mounts = rig.Mounts()
        self.cluster = rig.Cluster(self.net, self.base, SETS)
        if self.cls in ("power_loss", "power_loss_quick_restart"):
            faults.prepare_power_loss(self.cluster, self.mounts)
        self.cluster.start()

    def down(self, keep: bool):
        if self.cluster is not None:
            self.cluster.close()
        if self.mounts is not None:
            self.mounts.close()
            rig.unmount_under(self.base)
        if keep:
            (self.base / "KEEP").touch()
            log(f"  kept {self.base} (data dirs and broker.log per node)")
        else:
            subprocess.run(["rm", "-rf", str(self.base)])
        self.cluster = self.mounts = None


def run_class(cfg, net: rig.Net, cls: str, budget_s: float, out, rows: list[dict]):
    """Runs `cls`'s rounds, appending each round's row to `rows` (kept if interrupted) and to `out`."""
    run = ClassRun(cfg, net, cls)
    t_end = time.monotonic() + budget_s
    keep = cfg.keep
    try:
        for r in range(cfg.rounds):
            if time.monotonic() > t_end:
                log(f"{cls}: time budget used after {r} rounds (--max-minutes)")
                break
            if run.cluster is None:
                run.up()
            try:
                row = run_round(cfg, run.cluster, run.mounts, net, cls, r)
            except KeyboardInterrupt:
                raise
            except:  # noqa: E722 - a harness error ends this cluster, not the campaign (bare: librdkafka's
                # KafkaError is raised from C without deriving from BaseException)
                e = sys.exc_info()[1]
                row = {"class": cls, "round": r, "seed": cfg.seed, "error": f"{type(e).__name__}: {e}",
                       "traceback": traceback.format_exc()[-2000:], "tails": run.cluster.tails(15),
                       "violations": []}
            row["dir"] = str(run.base)
            rows.append(row)
            out.write(json.dumps(row) + "\n")
            out.flush()
            if row["violations"] or row.get("error"):
                what = "VIOLATION" if row["violations"] else "HARNESS ERROR"
                log(f"{what} class={cls} round={r} seed={cfg.seed} "
                    f"(reproduce: --classes {cls} --seed {cfg.seed} --rounds {r + 1})")
                for v in row["violations"]:
                    log(f"  {v['kind']}: {v['evidence'][:1500]}")
                if row.get("error"):
                    log(f"  {row['error']}\n{row['traceback']}")
                run.down(keep=True)
            else:
                note = f" acked-without-offset={row['acked_without_offset']}" if row["acked_without_offset"] else ""
                log(f"{cls} r{r}: ok acked={row['acked']}{note} full-ISR {row['time_to_full_isr_s']}s "
                    f"fault={json.dumps(row['fault'])} ({row['duration_s']}s)")
    except:  # noqa: E722 - interrupted or failed mid-round: keep what it left
        keep = True
        raise
    finally:
        if run.cluster is not None:
            run.down(keep=keep)


def pct(xs: list[float], q: float):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def report(cfg, rows: list[dict], skipped: dict, started: float, path: Path):
    lines = [f"# Fault campaign {time.strftime('%Y-%m-%d %H:%M', time.localtime(started))}", "",
             f"Command: `python3 reliability/campaign.py {' '.join(sys.argv[1:])}`  ",
             f"Seed: {cfg.seed}; runnel commit {cfg.commit}; kernel {os.uname().release}; "
             f"{cfg.producers} idempotent acks=all producers, {cfg.partitions} partitions, RF 3, "
             f"min.insync.replicas=2; wall time {(time.time() - started) / 60:.1f} min.", "",
             "| class | rounds | acked records | acked without offset | violations | harness errors "
             "| full ISR p50 / max (s) | failover p50 / max (s) | round (s) |", "|---|---|---|---|---|---|---|---|---|"]
    for cls in cfg.classes:
        rs = [r for r in rows if r["class"] == cls]
        if cls in skipped:
            lines.append(f"| {cls} | skipped: {skipped[cls]} | | | | | | | |")
            continue
        ok = [r for r in rs if not r.get("error")]
        isr = [r.get("time_to_full_isr_s") for r in ok]
        fo = [(r.get("fault") or {}).get("failover_s") for r in ok]
        fo_s = f"{pct(fo, .5)} / {pct(fo, 1)}" if pct(fo, 1) is not None else "-"
        dur = statistics.mean(r["duration_s"] for r in ok) if ok else 0
        lines.append(f"| {cls} | {len(rs)} | {sum(r.get('acked', 0) for r in rs)} | "
                     f"{sum(r.get('acked_without_offset', 0) for r in rs)} | "
                     f"{sum(len(r['violations']) for r in rs)} | {sum(1 for r in rs if r.get('error'))} | "
                     f"{pct(isr, .5)} / {pct(isr, 1)} | {fo_s} | {dur:.1f} |")
    bad = [r for r in rows if r["violations"] or r.get("error")]
    lines += ["", "Full ISR: seconds from the heal (restart, SIGCONT, link up, space freed) until every node "
              "reports every partition of the round's topic (and `__consumer_offsets` for coordinator_kill) "
              "led, with all three replicas in the ISR. Failover: fault to a new leader (or a new active "
              "controller).", "", "## Violations and harness errors", ""]
    if not bad:
        lines.append("None.")
    for r in bad:
        lines.append(f"- {r['class']} round {r['round']} (seed {r['seed']}, dir `{r.get('dir')}`):")
        for v in r["violations"]:
            lines.append(f"  - {v['kind']}: {v['evidence'][:600]}")
        if r.get("error"):
            lines.append(f"  - harness error: {r['error'][:600]}")
    path.write_text("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--classes", default=",".join(faults.CLASSES), help="comma-separated fault classes")
    ap.add_argument("--rounds", type=int, default=50, help="rounds per class")
    ap.add_argument("--seed", type=int, default=None, help="schedule seed (printed; random by default)")
    ap.add_argument("--max-minutes", type=float, default=180.0, help="bound on the whole campaign")
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--producers", type=int, default=3)
    ap.add_argument("--keep", action="store_true", help="keep every cluster's data dirs and logs")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    ap.add_argument("--unprivileged", action="store_true",
                    help="never use root-only setup (namespaces, mounts) even as root; those classes are "
                         "skipped (the CI smoke)")
    ap.add_argument("--fail-on-error", action="store_true",
                    help="exit 1 on a harness error too, not only on a violation (the CI smoke)")
    cfg = ap.parse_args()
    if cfg.unprivileged:
        os.environ["RUNNEL_CAMPAIGN_UNPRIVILEGED"] = "1"
    cfg.classes = [c.strip() for c in cfg.classes.split(",") if c.strip()]
    unknown = [c for c in cfg.classes if c not in faults.CLASSES]
    if unknown:
        ap.error(f"unknown classes {unknown}; known: {', '.join(faults.CLASSES)}")
    if cfg.seed is None:
        cfg.seed = random.randrange(1 << 31)
    if not rig.RUNNEL_BIN.exists():
        sys.exit(f"{rig.RUNNEL_BIN} not found: cargo build --release -p runnel (or set RUNNEL_BIN)")
    cfg.run_id = time.strftime("%Y%m%d-%H%M%S")
    cfg.commit = subprocess.run(["git", "-C", str(rig.ROOT), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
    started = time.time()
    log(f"seed {cfg.seed}; classes {','.join(cfg.classes)}; {cfg.rounds} rounds each; "
        f"bound {cfg.max_minutes} min; binary {rig.RUNNEL_BIN}")
    root = rig.is_root()
    skipped = {} if root else {c: "needs root (network namespaces / mounts)"
                               for c in cfg.classes if faults.CLASSES[c][1]}
    for c, why in skipped.items():
        log(f"skipping {c}: {why}")
    label = "all" if cfg.classes == list(faults.CLASSES) else "+".join(cfg.classes)
    out_dir = Path(cfg.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = out_dir / f"{time.strftime('%Y-%m-%d')}-{label}-r{cfg.rounds}-s{cfg.seed}"
    rows: list[dict] = []
    rig.cleanup_stale()
    (rig.WORK_ROOT / cfg.run_id).mkdir(parents=True, exist_ok=True)
    workload.client_log_to(rig.WORK_ROOT / cfg.run_id / "clients.log")
    net = rig.Net(enabled=root)
    try:
        net.setup()
        with open(f"{stem}.jsonl", "w") as out:
            todo = [c for c in cfg.classes if c not in skipped]
            for i, cls in enumerate(todo):
                left = cfg.max_minutes * 60 - (time.time() - started)
                if left <= 0:
                    log(f"--max-minutes reached; {cls} and later classes not run")
                    break
                run_class(cfg, net, cls, left / (len(todo) - i), out, rows)
    except KeyboardInterrupt:
        log("interrupted")
    finally:
        net.teardown()
        rig.cleanup_stale()
        report(cfg, rows, skipped, started, Path(f"{stem}.md"))
        log(f"report {stem}.md, rounds {stem}.jsonl")
    nv = sum(len(r["violations"]) for r in rows)
    ne = sum(1 for r in rows if r.get("error"))
    log(f"{len(rows)} rounds, {nv} violations, {ne} harness errors; seed {cfg.seed}")
    sys.exit(1 if nv or (cfg.fail_on_error and (ne or not rows)) else 0)


if __name__ == "__main__":
    main()
