"""The fault classes. Each takes the round's context, injects its fault under load, heals it and returns
what it saw; `ctx.heal_at` is set to the moment the last fault was healed (the liveness clock starts there).
"""

from __future__ import annotations

import json
import signal  # noqa: F401 - documented: SIGSTOP/SIGCONT/SIGKILL are sent by rig.Node
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import rig

FAILOVER_TIMEOUT_S = 30.0


@dataclass
class Ctx:
    cluster: rig.Cluster
    net: rig.Net
    mounts: rig.Mounts
    rng: object
    topic: str
    partitions: int
    group: object = None
    wait_full_isr: object = None  # () -> seconds until every partition has a leader and a full ISR
    heal_at: float = 0.0
    info: dict = field(default_factory=dict)
    violations: list = field(default_factory=list)

    # -- observations
    def leader(self, p: int, topic: str | None = None) -> int:
        topic = topic or self.topic
        for n in rig.NODES:
            t = self.cluster.ask(n, [topic]).get("topics", {}).get(topic, {})
            if p in t and t[p][1] >= 0:
                return t[p][1]
        raise rig.RigError(f"no leader known for {topic}-{p}")

    def wait_moved(self, p: int, old: int, what: str, extra=lambda: True,
                   timeout: float = FAILOVER_TIMEOUT_S) -> float | None:
        """Seconds until a node other than `old` reports a leader other than `old` for partition p (and
        `extra()` holds); None (and a liveness violation) on timeout."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            for n in rig.NODES:
                if n == old:
                    continue
                t = self.cluster.ask(n, [self.topic]).get("topics", {}).get(self.topic, {})
                if p in t and t[p][1] not in (-1, old) and extra():
                    return round(time.monotonic() - t0, 3)
            time.sleep(0.1)
        self.violations.append({"kind": "no_failover", "evidence": f"{what}: partition {p} still led by {old} "
                                f"or leaderless after {timeout}s"})
        return None

    def controller(self) -> int:
        """The active controller (DescribeCluster's controller id, as `runnel cluster info` shows it)."""
        alive = ",".join(n.bootstrap for n in self.cluster.nodes.values() if n.alive() and not n.stopped)
        r = subprocess.run([str(rig.RUNNEL_BIN), "cluster", "info", "--json", "--timeout", "3",
                            "-b", alive], capture_output=True,
                           text=True, timeout=20)
        if r.returncode != 0:
            return -1
        return json.loads(r.stdout).get("controller_id", -1)

    def pick_leader(self) -> tuple[int, int]:
        p = self.rng.randrange(self.partitions)
        return p, self.leader(p)

    def dwell(self, lo: float = 0.0, hi: float = 1.5):
        time.sleep(self.rng.uniform(lo, hi))

    def restart(self, *nodes: int):
        for n in nodes:
            self.cluster.nodes[n].spawn()
        self.heal_at = time.monotonic()
        for n in nodes:
            self.cluster.nodes[n].wait_ready()


# ---------------------------------------------------------------------------------------------- classes
def kill9_leader(ctx: Ctx) -> dict:
    p, victim = ctx.pick_leader()
    ctx.cluster.nodes[victim].kill9()
    failover = ctx.wait_moved(p, victim, "kill -9 of the leader")
    ctx.dwell()
    ctx.restart(victim)
    return {"victim": victim, "partition": p, "failover_s": failover}


def kill9_controller(ctx: Ctx) -> dict:
    old = ctx.controller()
    if old not in rig.NODES:
        raise rig.RigError(f"no active controller known ({old})")
    ctx.cluster.nodes[old].kill9()
    t0 = time.monotonic()
    new = -1
    while time.monotonic() - t0 < FAILOVER_TIMEOUT_S:
        new = ctx.controller()
        if new not in (-1, old):
            break
        time.sleep(0.2)
    elected = round(time.monotonic() - t0, 3) if new not in (-1, old) else None
    if elected is None:
        ctx.violations.append({"kind": "no_failover", "evidence": f"no new active controller after {old} died"})
    ctx.dwell()
    ctx.restart(old)
    return {"victim": old, "new_controller": new, "failover_s": elected}


def sigstop_leader(ctx: Ctx) -> dict:
    """SIGSTOP past broker.session.timeout.ms: the controller fences the silent broker and moves its
    leaderships; SIGCONT brings back a stale leader that must step down."""
    p, victim = ctx.pick_leader()
    ctx.cluster.nodes[victim].sigstop()
    failover = ctx.wait_moved(p, victim, "SIGSTOP of the leader")
    ctx.dwell(0.0, 1.0)
    ctx.cluster.nodes[victim].sigcont()
    ctx.heal_at = time.monotonic()
    return {"victim": victim, "partition": p, "failover_s": failover}


def kill_two_of_three(ctx: Ctx) -> dict:
    """Two of three nodes killed: no quorum and no min ISR, so writes stop; they resume when both return."""
    victims = sorted(ctx.rng.sample(list(rig.NODES), 2))
    for v in victims:
        ctx.cluster.nodes[v].kill9()
    ctx.dwell(2.0, 4.0)
    ctx.restart(*victims)
    return {"victims": victims}


def partition_leader(ctx: Ctx) -> dict:
    """The leader's link goes down (symmetric: peers, controller quorum and clients all cut off)."""
    p, victim = ctx.pick_leader()
    ctx.net.isolate(victim)
    try:
        failover = ctx.wait_moved(p, victim, "network partition of the leader")
        ctx.dwell()
    finally:
        ctx.net.reconnect(victim)
    ctx.heal_at = time.monotonic()
    return {"victim": victim, "partition": p, "failover_s": failover}


def partition_one_way(ctx: Ctx) -> dict:
    """Packets one way only between the leader and both peers (the harness and clients still reach the
    leader both ways): "out" drops the leader's packets to its peers, "in" the peers' packets to it."""
    p, victim = ctx.pick_leader()
    direction = ctx.rng.choice(["out", "in"])
    others = [n for n in rig.NODES if n != victim]
    try:
        for o in others:
            if direction == "out":
                ctx.net.block(victim, o)
            else:
                ctx.net.block(o, victim)
        failover = ctx.wait_moved(p, victim, f"one-way partition ({direction}) of the leader")
        ctx.dwell()
    finally:
        ctx.net.unblock_all()
    ctx.heal_at = time.monotonic()
    return {"victim": victim, "partition": p, "direction": direction, "failover_s": failover}


DISK_SIZE = "8m"


def prepare_disk_full(ctx: Ctx):
    """Before the topic exists: every partition directory on every node is a small tmpfs of its own."""
    for node in ctx.cluster.nodes.values():
        for p in range(ctx.partitions):
            ctx.mounts.tmpfs(node.data_dir / f"{ctx.topic}-{p}", DISK_SIZE)


def disk_full(ctx: Ctx) -> dict:
    """The leader's partition disk fills (ENOSPC): its log dir goes offline, leadership moves and the replica
    leaves the ISR; freeing the space brings the dir back without a restart (KIP-858 style)."""
    p, victim = ctx.pick_leader()
    node = ctx.cluster.nodes[victim]
    pid = node.proc.pid
    filler = rig.fill(node.data_dir / f"{ctx.topic}-{p}")
    try:
        def out_of_isr():
            t = ctx.cluster.ask([n for n in rig.NODES if n != victim][0], [ctx.topic])
            return victim not in t.get("topics", {}).get(ctx.topic, {}).get(p, (0, 0, [victim]))[2]
        failover = ctx.wait_moved(p, victim, "full disk under the leader", extra=out_of_isr)
        ctx.dwell()
    finally:
        Path(filler).unlink()
    ctx.heal_at = time.monotonic()
    if not node.alive() or node.proc.pid != pid:
        ctx.violations.append({"kind": "crash", "evidence": f"node {victim} exited on a full disk "
                               f"(rc {node.proc.returncode}):\n{node.log_tail()}"})
    return {"victim": victim, "partition": p, "failover_s": failover}


def rolling_restart(ctx: Ctx) -> dict:
    """Each node in turn: SIGTERM (controlled shutdown, exit 0), start again, full ISR before the next."""
    order = list(rig.NODES)
    ctx.rng.shuffle(order)
    rcs = {}
    waits = {}
    for i, n in enumerate(order):
        rcs[n] = ctx.cluster.nodes[n].stop()
        if rcs[n] != 0:
            ctx.violations.append({"kind": "unclean_shutdown", "evidence": f"node {n} exited {rcs[n]} on "
                                   f"SIGTERM:\n{ctx.cluster.nodes[n].log_tail()}"})
        ctx.restart(n)
        if i < len(order) - 1:
            waits[n] = ctx.wait_full_isr()
    return {"order": order, "exit_codes": rcs, "isr_waits": waits}


def coordinator_kill(ctx: Ctx) -> dict:
    """The group coordinator (leader of the group's __consumer_offsets partition) is killed while a group of
    three members consumes and commits."""
    from confluent_kafka.admin import AdminClient
    from workload import conf
    a = AdminClient(conf(ctx.cluster.bootstrap))
    coord = -1
    # 45 s: right after the previous round's restart the rig's preferred-leader rebalancing (every 10 s) moves
    # __consumer_offsets leaders back, and each move makes the members find the coordinator and rejoin again
    # (20 s was not always enough on a loaded machine: seed 20261202 round 44).
    deadline = time.monotonic() + 45
    while time.monotonic() < deadline:
        try:
            d = a.describe_consumer_groups([ctx.group.id], request_timeout=5)[ctx.group.id].result(10)
            if d.state.name == "STABLE" and len(d.members) == len(ctx.group.members):
                coord = d.coordinator.id
                break
        except Exception:  # noqa: BLE001 - the group is still forming
            pass
        time.sleep(0.3)
    if coord not in rig.NODES:
        raise rig.RigError("the group did not become stable with all members")
    ctx.cluster.nodes[coord].kill9()
    t0 = time.monotonic()
    ctx.dwell(1.0, 3.0)
    ctx.restart(coord)
    return {"victim": coord, "killed_for_s": round(ctx.heal_at - t0, 3)}


def prepare_power_loss(cluster: rig.Cluster, mounts: rig.Mounts):
    """Each node's data dir is an ext4 file system on a loop device (256 MB sparse image)."""
    for node in cluster.nodes.values():
        mounts.ext4(node.dir / "disk.img", node.data_dir, "256M")


def power_loss(ctx: Ctx) -> dict:
    """The leader loses power: kill -9, then its file system is shut down dropping every page not yet
    synced (EXT4_IOC_SHUTDOWN, NOLOGFLUSH), remounted (journal replay) and the node restarted."""
    p, victim = ctx.pick_leader()
    node = ctx.cluster.nodes[victim]
    node.kill9()
    ctx.mounts.power_cut(node.data_dir)
    failover = ctx.wait_moved(p, victim, "power loss of the leader")
    ctx.mounts.ext4(node.dir / "disk.img", node.data_dir, "256M")
    ctx.dwell(0.0, 1.0)
    ctx.restart(victim)
    return {"victim": victim, "partition": p, "failover_s": failover}


def quick_restart(ctx: Ctx, power_cut: bool) -> dict:
    """The leader dies (kill -9, and with `power_cut` its unsynced pages are dropped as in `power_loss`) and
    is restarted at once, well within its broker session: the controller still names it leader, and its new
    incarnation cannot register until the old session expires. It must not lead on the stale image meanwhile
    (with a log a power loss cut short, its followers would be ahead of it)."""
    p, victim = ctx.pick_leader()
    node = ctx.cluster.nodes[victim]
    node.kill9()
    if power_cut:
        ctx.mounts.power_cut(node.data_dir)
        ctx.mounts.ext4(node.dir / "disk.img", node.data_dir, "256M")
    ctx.restart(victim)
    failover = ctx.wait_moved(p, victim, "quick restart of the leader")
    return {"victim": victim, "partition": p, "failover_s": failover, "power_cut": power_cut}


def kill9_quick_restart(ctx: Ctx) -> dict:
    return quick_restart(ctx, power_cut=False)


def power_loss_quick_restart(ctx: Ctx) -> dict:
    return quick_restart(ctx, power_cut=True)


# name -> (function, needs root)
CLASSES = {
    "kill9_leader": (kill9_leader, False),
    "kill9_controller": (kill9_controller, False),
    "sigstop_leader": (sigstop_leader, False),
    "kill_two_of_three": (kill_two_of_three, False),
    "partition_leader": (partition_leader, True),
    "partition_one_way": (partition_one_way, True),
    "disk_full": (disk_full, True),
    "rolling_restart": (rolling_restart, False),
    "coordinator_kill": (coordinator_kill, False),
    "power_loss": (power_loss, True),
    "kill9_quick_restart": (kill9_quick_restart, False),
    "power_loss_quick_restart": (power_loss_quick_restart, True),
}
