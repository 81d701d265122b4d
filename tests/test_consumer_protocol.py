"""The KIP-848 consumer rebalance protocol (issue 19) with real clients, beyond the classic group tests that
test_groups.py runs a second time with `group.protocol=consumer`:

- Kafka's `kafka-consumer-groups.sh` lists and describes a consumer group (type, state, assignor, member
  epochs, current and target assignments) as it does against Kafka 4.4.0, and `runnel group` shows the same;
- a broker restart keeps the group's members and epochs (its records are in `__consumer_offsets`): the members
  go on with the same ids, no record is lost or consumed twice;
- a static member (`group.instance.id`) that closes and comes back within its session gets its partitions back
  without the other member's assignment changing;
- a regular-expression subscription takes a topic created after the member joined.

Members are OS processes (test_groups.py's MEMBER script, librdkafka with `group.protocol=consumer`). Run against
Apache Kafka 4.4.0 with RUNNEL_TEST_BROKER=kafka (the `runnel group` checks are then skipped).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import MODE, RUNNEL_BIN, make_topic  # noqa: E402
from test_groups import (WAIT_S, Group, fresh_gbroker, gbroker, produce,  # noqa: E402,F401
                         unique)
from test_kafka_tools import tool  # noqa: E402

GROUP_TOOL = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"


def group_tool(bootstrap: str, *args: str) -> list[list[str]]:
    """kafka-consumer-groups.sh's table rows (header first), split on whitespace."""
    out = tool(GROUP_TOOL, "--bootstrap-server", bootstrap, *args)
    return [line.split() for line in out.splitlines() if line.strip()]


def runnel_describe(bootstrap: str, group: str) -> dict:
    res = subprocess.run([str(RUNNEL_BIN), "group", "--bootstrap-server", bootstrap, "--json", "describe", group],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def wait_described(bootstrap: str, group: str, pred, what: str, timeout: float = WAIT_S) -> list[dict]:
    """Polls `--describe --members --verbose` until `pred(rows)` holds; each row keyed by its column header
    (GROUP CONSUMER-ID [GROUP-INSTANCE-ID] HOST CLIENT-ID #PARTITIONS CURRENT-EPOCH CURRENT-ASSIGNMENT
    TARGET-EPOCH TARGET-ASSIGNMENT)."""
    deadline = time.monotonic() + timeout
    while True:
        table = group_tool(bootstrap, "--describe", "--group", group, "--members", "--verbose")
        rows = [dict(zip(table[0], r)) for r in table[1:]]
        if pred(rows):
            return rows
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}; last --members --verbose rows: {rows}")
        time.sleep(0.5)


def reconciled(rows: list[dict]) -> bool:
    """Two members, each at the target epoch with its target assignment."""
    return len(rows) == 2 and all(r["CURRENT-EPOCH"] == r["TARGET-EPOCH"]
                                  and r["CURRENT-ASSIGNMENT"] == r["TARGET-ASSIGNMENT"] for r in rows)


def test_kafka_consumer_groups_describes_a_consumer_group(gbroker, tmp_path):
    topic, group = unique("kip848t"), unique("g")
    make_topic(gbroker.bootstrap, topic, 4)
    g = Group(gbroker.bootstrap, topic, group, tmp_path)
    try:
        members = [g.add("confluent", "consumer") for _ in range(2)]
        g.wait_stable(members, 4)
        listed = group_tool(gbroker.bootstrap, "--list", "--type")
        assert [group, "Consumer"] in listed, listed
        state = group_tool(gbroker.bootstrap, "--describe", "--group", group, "--state")
        assert state[0][:3] == ["GROUP", "COORDINATOR", "(ID)"], state
        assert state[1][0] == group and state[1][-3:] == ["uniform", "Stable", "2"], state
        # Every member reconciled: current epoch = target epoch, assignment = target.
        rows = wait_described(gbroker.bootstrap, group, reconciled, "both members reconciled")
        owned = sorted(p for r in rows for p in r["CURRENT-ASSIGNMENT"].split(":")[1].split(","))
        assert owned == ["0", "1", "2", "3"], rows
        if MODE == "runnel":
            d = runnel_describe(gbroker.bootstrap, group)
            assert (d["type"], d["state"], d["protocol"]) == ("consumer", "Stable", "uniform"), d
            assert d["group_epoch"] == d["assignment_epoch"] and len(d["members"]) == 2, d
            for m in d["members"]:
                assert m["member_epoch"] == d["assignment_epoch"] and m["assignment"] == m["target_assignment"], d
    finally:
        g.close()


@pytest.mark.skipif(MODE != "runnel", reason="restarts the broker the test started")
def test_broker_restart_keeps_members_and_epochs(fresh_gbroker, tmp_path):
    """kill -9 of the broker: the group's records bring back its members and epochs, the members go on with the
    same ids and epochs, and with synchronous commits every record is consumed exactly once."""
    b = fresh_gbroker
    topic, group = unique("kip848r"), unique("g")
    make_topic(b.bootstrap, topic, 4)
    produced = produce(b.bootstrap, topic, 4, 200)
    g = Group(b.bootstrap, topic, group, tmp_path)
    try:
        members = [g.add("confluent", "consumer") for _ in range(2)]
        g.wait_stable(members, 4)
        g.wait(lambda: set(g.consumed()) >= produced, WAIT_S, "the first 200 records consumed")
        before = runnel_describe(b.bootstrap, group)
        b.kill9()
        b.start()
        after = runnel_describe(b.bootstrap, group)
        key = lambda d: sorted((m["member_id"], m["member_epoch"]) for m in d["members"])  # noqa: E731
        assert key(after) == key(before), f"members or epochs changed across kill -9:\n{before}\n{after}"
        assert after["group_epoch"] == before["group_epoch"], (before, after)
        produced |= produce(b.bootstrap, topic, 4, 200, start=200)
        g.wait(lambda: set(g.consumed()) >= produced, WAIT_S, "the records produced after the restart")
        counts = g.consumed()
        dups = {k: v for k, v in counts.items() if v > 1}
        assert not dups, f"records consumed more than once: {sorted(dups)[:20]}"
        final = runnel_describe(b.bootstrap, group)
        assert key(final) == key(before), f"the members rejoined after the restart:\n{before}\n{final}"
    finally:
        g.close()


def test_static_member_closes_and_returns_without_a_rebalance(gbroker, tmp_path):
    """A static member leaving with epoch -2 (a clean close) and coming back within its session gets its
    partitions back; the group epoch does not move and the other member's assignment does not change."""
    topic, group = unique("kip848s"), unique("g")
    make_topic(gbroker.bootstrap, topic, 4)
    g = Group(gbroker.bootstrap, topic, group, tmp_path)
    try:
        a = g.add("confluent", "consumer", instance="inst-a", name="a")
        bm = g.add("confluent", "consumer", instance="inst-b", name="b")
        g.wait_stable([a, bm], 4)
        rows = wait_described(gbroker.bootstrap, group, reconciled, "both members reconciled")
        epoch = rows[0]["TARGET-EPOCH"]
        a_parts, b_events = set(a.assignment), bm.assign_events
        a.stop()
        a2 = g.add("confluent", "consumer", instance="inst-a", name="a2")
        g.wait(lambda: a2.assignment == a_parts, WAIT_S, "the returning static member to get its partitions back")
        rows = wait_described(gbroker.bootstrap, group, lambda rs: len(rs) == 2, "two members")
        assert all(r["TARGET-EPOCH"] == epoch for r in rows), f"the target epoch moved from {epoch}: {rows}"
        assert bm.assign_events == b_events, f"the other member's assignment changed: {bm.events[-5:]}"
    finally:
        g.close()


def test_regex_subscription_takes_a_topic_created_later(gbroker, tmp_path):
    prefix = unique("kip848x")
    make_topic(gbroker.bootstrap, f"{prefix}-a", 2)
    g = Group(gbroker.bootstrap, f"^{prefix}-.*", unique("g"), tmp_path)
    try:
        m = g.add("confluent", "consumer")
        g.wait(lambda: len(m.assignment) == 2, WAIT_S, "the two partitions of the first topic")
        make_topic(gbroker.bootstrap, f"{prefix}-b", 3)
        produced = produce(gbroker.bootstrap, f"{prefix}-b", 3, 30)
        g.wait(lambda: len(m.records) >= len(produced), WAIT_S, "the records of the topic created later")
    finally:
        g.close()
