"""The campaign's workload (idempotent acks=all producers, a consumer group) and its checker.

Every record's value is "<producer id>:<sequence>"; producer i writes sequence s to partition s % P, so
each (producer, partition) pair is a stream whose sequences must be stored in increasing order.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import defaultdict

import logging
import os
import sys

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition

# librdkafka's own log lines (connection refused during every fault...) go to a file, not the terminal.
CLIENT_LOG = logging.getLogger("librdkafka")
CLIENT_LOG.propagate = False
DEBUG = os.environ.get("RUNNEL_CAMPAIGN_CLIENT_DEBUG", "")  # librdkafka `debug` contexts, e.g. "eos,msg"


def client_log_to(path):
    """Sends every client's librdkafka log to `path`."""
    for h in list(CLIENT_LOG.handlers):
        CLIENT_LOG.removeHandler(h)
    h = logging.FileHandler(path)
    h.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    CLIENT_LOG.addHandler(h)
    CLIENT_LOG.setLevel(logging.DEBUG if DEBUG else logging.INFO)


def conf(bootstrap: str, **kw) -> dict:
    """Client config shared by every client: fast reconnects, short connect timeouts, logs to the file."""
    extra = {"debug": DEBUG} if DEBUG else {}
    return {"bootstrap.servers": bootstrap, "socket.connection.setup.timeout.ms": 3000,
            "reconnect.backoff.max.ms": 500, "topic.metadata.refresh.interval.ms": 1000,
            "logger": CLIENT_LOG, **extra, **kw}


class ProducerWorker(threading.Thread):
    """One idempotent acks=all producer at a bounded rate; `acked` maps seq -> (partition, offset) for each
    record whose delivery report came back without error."""

    def __init__(self, pid: int, bootstrap: str, topic: str, partitions: int, per_tick: int = 4,
                 tick_s: float = 0.02):
        super().__init__(daemon=True, name=f"producer-{pid}")
        self.pid, self.topic, self.partitions = pid, topic, partitions
        self.per_tick, self.tick_s = per_tick, tick_s
        self.p = Producer(conf(bootstrap, **{"enable.idempotence": True, "acks": "all", "linger.ms": 5,
                                             "message.timeout.ms": 60000, "request.timeout.ms": 5000,
                                             "retry.backoff.max.ms": 500, "queue.buffering.max.messages": 20000}))
        self.acked: dict[int, tuple[int, int]] = {}
        self.failed: list[tuple[int, str]] = []
        self.sent = 0
        self.stop_flag = threading.Event()
        self.fatal: str | None = None

    def _cb(self, err, msg):
        seq = int(msg.value().split(b":")[1])
        if err is None:
            # offset() is None when librdkafka learnt of the success without an offset (for instance a
            # DUPLICATE_SEQUENCE_NUMBER answer, which it takes as "already persisted")
            self.acked[seq] = (msg.partition(), msg.offset())
        else:
            self.failed.append((seq, str(err)))
            if err.fatal():
                self.fatal = str(err)

    def run(self):
        try:
            while not self.stop_flag.is_set() and self.fatal is None:
                for _ in range(self.per_tick):
                    seq = self.sent
                    try:
                        self.p.produce(self.topic, value=f"{self.pid}:{seq}".encode(),
                                       partition=seq % self.partitions, on_delivery=self._cb)
                        self.sent += 1
                    except BufferError:
                        break
                self.p.poll(self.tick_s)
        except:  # noqa: E722 - a fatal error raised from poll() (KafkaError/KafkaException): unusable
            self.fatal = str(sys.exc_info()[1])

    def finish(self, timeout: float = 70.0) -> int:
        """Stops producing and waits for every outstanding delivery report; returns how many are left."""
        self.stop_flag.set()
        self.join(10)
        try:
            left = self.p.flush(timeout)
        except:  # noqa: E722 - a fatal KafkaError (raised from C, not a BaseException subclass)
            self.fatal = self.fatal or str(sys.exc_info()[1])
            left = len(self.p)
        try:  # no client outlives its round (it would keep reconnecting to the next cluster's addresses)
            self.p.purge()
            self.p.close()
        except Exception:  # noqa: BLE001 - close() is recent in confluent-kafka; GC destroys it otherwise
            pass
        return left


def wait_acks(workers: list[ProducerWorker], more: int, timeout: float) -> bool:
    """True once every producer has `more` acknowledgements beyond what it had at the call."""
    base = [len(w.acked) for w in workers]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(len(w.acked) >= b + more for w, b in zip(workers, base)):
            return True
        time.sleep(0.05)
    return False


class GroupMember(threading.Thread):
    """A consumer-group member: consumes, then commits synchronously what it consumed. Records every
    delivered (partition, offset) and every commit the coordinator acknowledged."""

    def __init__(self, idx: int, bootstrap: str, topic: str, group: str, sink: "GroupLog"):
        super().__init__(daemon=True, name=f"member-{idx}")
        self.c = Consumer(conf(bootstrap, **{"group.id": group, "enable.auto.commit": False,
                                             "auto.offset.reset": "earliest", "session.timeout.ms": 6000,
                                             "heartbeat.interval.ms": 500}))
        self.topic, self.sink = topic, sink
        self.stop_flag = threading.Event()

    def run(self):
        self.c.subscribe([self.topic])
        try:
            while not self.stop_flag.is_set():
                msgs = self.c.consume(200, 0.2)
                got = [(m.partition(), m.offset()) for m in msgs if m.error() is None]
                if not got:
                    continue
                self.sink.delivered.update(got)
                try:
                    res = self.c.commit(asynchronous=False)
                except KafkaException as e:
                    self.sink.commit_errors += 1
                    self.sink.last_commit_error = str(e)
                    continue
                for tp in res or []:
                    if tp.error is None and tp.offset >= 0:
                        p = tp.partition
                        self.sink.acked_commit[p] = max(self.sink.acked_commit.get(p, -1), tp.offset)
        finally:
            self.c.close()


class GroupLog:
    """What the group did: delivered (partition, offset)s, the highest acknowledged commit per partition and
    the committed offsets the harness observed over time (OffsetFetch from a non-member)."""

    def __init__(self):
        self.delivered: set[tuple[int, int]] = set()
        self.acked_commit: dict[int, int] = {}
        self.observed: dict[int, list[int]] = defaultdict(list)
        self.commit_errors = 0
        self.last_commit_error = ""


class Group:
    def __init__(self, bootstrap: str, topic: str, partitions: int, members: int = 3):
        self.id = f"grp-{topic}"
        self.topic, self.partitions, self.bootstrap = topic, partitions, bootstrap
        self.log = GroupLog()
        self.members = [GroupMember(i, bootstrap, topic, self.id, self.log) for i in range(members)]
        self.watcher = Consumer(conf(bootstrap, **{"group.id": self.id, "enable.auto.commit": False}))

    def start(self):
        for m in self.members:
            m.start()
        self.sampler_stop = threading.Event()
        self.sampler = threading.Thread(target=self._sample_loop, daemon=True, name="offsets-sampler")
        self.sampler.start()

    def _sample_loop(self):
        while not self.sampler_stop.is_set():
            self.sample(2.0)
            self.sampler_stop.wait(0.3)

    def sample(self, timeout: float = 3.0):
        """Reads the committed offsets once and appends them to `observed` (skipped if the coordinator is
        unavailable right now)."""
        try:
            tps = self.watcher.committed([TopicPartition(self.topic, p) for p in range(self.partitions)],
                                         timeout=timeout)
        except KafkaException:
            return
        for tp in tps:
            if tp.error is None and tp.offset >= 0:
                self.log.observed[tp.partition].append(tp.offset)

    def stop(self) -> dict[int, int]:
        """Stops the members and the sampler; returns the final committed offsets (read until answered)."""
        for m in self.members:
            m.stop_flag.set()
        for m in self.members:
            m.join(30)
        self.sampler_stop.set()
        self.sampler.join(10)
        final: dict[int, int] = {}
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(final) < self.partitions:
            try:
                tps = self.watcher.committed([TopicPartition(self.topic, p) for p in range(self.partitions)],
                                             timeout=5)
                final = {tp.partition: tp.offset for tp in tps if tp.error is None}
            except KafkaException:
                time.sleep(0.5)
        return final

    def caught_up(self, ends: dict[int, int]) -> bool:
        """Every partition's acknowledged commit has reached `ends` (the log end offsets)."""
        return all(self.log.acked_commit.get(p, 0) >= e for p, e in ends.items() if e > 0)

    def close(self):
        self.watcher.close()


# LEADER_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER, FENCED/UNKNOWN_LEADER_EPOCH, librdkafka's timeout and transport
# errors: what a query sent to a leader that just moved answers (librdkafka does not flag them retriable here).
LEADER_MOVED = {5, 6, 74, 75, KafkaError._TIMED_OUT, KafkaError._TRANSPORT}


def high_watermark(c: Consumer, topic: str, p: int, attempts: int = 20) -> int:
    """The partition's high watermark, asked of its leader. A leadership that moves while it is asked (the
    rig's preferred-leader rebalancing gives a restarted broker its partitions back) answers a retriable
    NOT_LEADER_OR_FOLLOWER; the client refreshes its metadata and the question is asked again (bounded)."""
    for attempt in range(attempts):
        try:
            return c.get_watermark_offsets(TopicPartition(topic, p), timeout=15)[1]
        except KafkaException as e:
            if attempt + 1 == attempts or e.args[0].code() not in LEADER_MOVED:
                raise
            time.sleep(0.5)
    raise AssertionError("unreachable")


def read_log(bootstrap: str, topic: str, partitions: int, timeout: float = 60.0):
    """Every record of every partition from offset 0 to the high watermark: ({p: [(offset, value)]},
    {p: high watermark}, complete?)."""
    c = Consumer(conf(bootstrap, **{"group.id": f"check-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False,
                                    "enable.partition.eof": True}))
    try:
        hw = {p: high_watermark(c, topic, p) for p in range(partitions)}
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        out: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(partitions)}
        done = {p for p in range(partitions) if hw[p] == 0}
        deadline = time.monotonic() + timeout
        while len(done) < partitions and time.monotonic() < deadline:
            for m in c.consume(1000, 0.5):
                p = m.partition()
                if m.error() is not None:
                    continue
                out[p].append((m.offset(), m.value()))
                if m.offset() + 1 >= hw[p]:
                    done.add(p)
        return out, hw, len(done) == partitions
    finally:
        c.close()


def acked_without_offset(workers: list[ProducerWorker]) -> list[tuple[int, int, int]]:
    """(producer, seq, partition) of records acknowledged without an offset (not checkable for movement)."""
    return [(w.pid, s, p) for w in workers for s, (p, o) in w.acked.items() if o is None]


def check(workers: list[ProducerWorker], log: dict, hw: dict, complete: bool) -> list[dict]:
    """Loss, duplication, reordering and offset movement of acknowledged records. Returns violations."""
    v: list[dict] = []
    if not complete:
        got = {p: len(r) for p, r in log.items()}
        v.append({"kind": "read_incomplete", "evidence": f"read {got} of high watermarks {hw}"})
    where: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    streams: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    for p, recs in log.items():
        for off, val in recs:
            try:
                pid, seq = (int(x) for x in val.split(b":"))
            except (ValueError, AttributeError):
                v.append({"kind": "garbage", "evidence": f"p{p}@{off}: {val[:40]!r}"})
                continue
            where[(pid, seq)].append((p, off))
            streams[(pid, p)].append((off, seq))
    for w in workers:
        lost = [s for s in w.acked if (w.pid, s) not in where]
        if lost:
            v.append({"kind": "lost", "evidence": f"producer {w.pid}: {len(lost)} acknowledged records "
                      f"missing, e.g. seqs {sorted(lost)[:5]} acked at {[w.acked[s] for s in sorted(lost)[:5]]}"})
        moved = [(s, w.acked[s], where[(w.pid, s)][0]) for s in w.acked
                 if (w.pid, s) in where and w.acked[s][1] is not None and where[(w.pid, s)][0] != w.acked[s]]
        if moved:
            v.append({"kind": "moved", "evidence": f"producer {w.pid}: {len(moved)} acknowledged records not at "
                      f"their acknowledged (partition, offset), e.g. (seq, acked, stored) {moved[:3]}"})
    dups = [(k, locs) for k, locs in where.items() if len(locs) > 1]
    if dups:
        v.append({"kind": "duplicate", "evidence": f"{len(dups)} (producer, seq) stored more than once, e.g. "
                  f"{dups[:3]}"})
    for (pid, p), recs in streams.items():
        seqs = [s for _, s in sorted(recs)]
        bad = [(seqs[i - 1], seqs[i]) for i in range(1, len(seqs)) if seqs[i] <= seqs[i - 1]]
        if bad:
            v.append({"kind": "reorder", "evidence": f"producer {pid} partition {p}: sequence goes back "
                      f"{len(bad)} times, e.g. {bad[:3]}"})
    return v


def check_group(group: Group, workers: list[ProducerWorker], final: dict[int, int]) -> list[dict]:
    """Committed offsets never go backwards; no acknowledged commit is lost; every acknowledged record below
    the final committed offset was delivered to a member (nothing skipped)."""
    v = []
    for p, seen in group.log.observed.items():
        back = [(seen[i - 1], seen[i]) for i in range(1, len(seen)) if seen[i] < seen[i - 1]]
        if back:
            v.append({"kind": "commit_backwards", "evidence": f"partition {p}: committed offset went back {back[:3]}"})
    for p, off in group.log.acked_commit.items():
        if final.get(p, -1) < off:
            v.append({"kind": "commit_lost", "evidence": f"partition {p}: commit of {off} acknowledged, final "
                      f"committed {final.get(p)}"})
    skipped = [(p, o) for w in workers for (p, o) in w.acked.values()
               if o < final.get(p, -1) and (p, o) not in group.log.delivered]
    if skipped:
        v.append({"kind": "group_skipped", "evidence": f"{len(skipped)} acknowledged records below the committed "
                  f"offset never delivered to the group, e.g. {sorted(skipped)[:5]}"})
    return v
