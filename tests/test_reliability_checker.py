"""The fault campaign's checker (reliability/workload.py) on hand-made logs: it must see each kind of damage
it claims to see, and pass a clean log. No broker needed."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "reliability"))
import workload  # noqa: E402


def producer(pid: int, acked: dict) -> SimpleNamespace:
    return SimpleNamespace(pid=pid, acked=acked)


def log_of(*records):
    """records: (partition, offset, pid, seq) -> {partition: [(offset, value)]}."""
    out: dict[int, list] = {0: [], 1: []}
    for p, off, pid, seq in records:
        out[p].append((off, f"{pid}:{seq}".encode()))
    return out


HW = {0: 3, 1: 1}


def kinds(workers, log, hw=HW, complete=True):
    return sorted(v["kind"] for v in workload.check(workers, log, hw, complete))


def test_a_clean_log_passes():
    w = producer(0, {0: (0, 0), 1: (1, 0), 2: (0, 1)})
    assert kinds([w], log_of((0, 0, 0, 0), (0, 1, 0, 2), (1, 0, 0, 1), (0, 2, 1, 0))) == []


def test_a_lost_acknowledged_record_is_seen():
    w = producer(0, {0: (0, 0), 2: (0, 1)})
    assert kinds([w], log_of((0, 0, 0, 0))) == ["lost"]


def test_a_duplicate_is_seen_even_if_never_acknowledged():
    w = producer(0, {0: (0, 0)})
    assert kinds([w], log_of((0, 0, 0, 0), (0, 1, 0, 1), (0, 2, 0, 1))) == ["duplicate", "reorder"]


def test_reordering_within_a_producer_and_partition_is_seen():
    w = producer(0, {})
    assert kinds([w], log_of((0, 0, 0, 4), (0, 1, 0, 2))) == ["reorder"]
    # different partitions or producers are independent streams
    assert kinds([w], log_of((0, 0, 0, 4), (1, 0, 0, 2), (0, 1, 1, 0))) == []


def test_an_acknowledged_record_at_another_offset_is_seen_unless_acked_without_offset():
    assert kinds([producer(0, {0: (0, 1)})], log_of((0, 0, 0, 0))) == ["moved"]
    w = producer(0, {0: (0, None)})  # librdkafka's implicit ack: success without an offset
    assert kinds([w], log_of((0, 0, 0, 0))) == []
    assert workload.acked_without_offset([w]) == [(0, 0, 0)]


def test_garbage_and_an_incomplete_read_are_seen():
    log = {0: [(0, b"not-a-record")], 1: []}
    assert kinds([producer(0, {})], log, complete=False) == ["garbage", "read_incomplete"]


def test_group_checks_see_backward_commits_lost_commits_and_skipped_records():
    g = SimpleNamespace(log=workload.GroupLog())
    g.log.observed[0] = [5, 7, 6]
    g.log.acked_commit = {0: 9}
    g.log.delivered = {(0, 0), (0, 1)}
    w = producer(0, {0: (0, 0), 1: (0, 1), 2: (0, 2)})
    found = sorted(v["kind"] for v in workload.check_group(g, [w], {0: 8}))
    assert found == ["commit_backwards", "commit_lost", "group_skipped"]
    g.log.observed[0] = [5, 7, 9]
    g.log.delivered.add((0, 2))
    assert workload.check_group(g, [w], {0: 9}) == []
