"""`runnel consume --share-group` and `runnel share-group list|describe|reset-offsets` (KIP-932) as processes
against the test broker: a share consumer reads every record once, the group is listed and described with its
start offsets, and a reset to the earliest offsets makes a second consumer read them all again.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import kproto as k  # noqa: E402
from conftest import RUNNEL_BIN, make_topic  # noqa: E402
from test_broker_configs import incremental_alter  # noqa: E402

GROUP_RESOURCE, SET = 32, 0
N = 20


def runnel(bootstrap: str, *args: str, stdin: str | None = None, ok: bool = True) -> subprocess.CompletedProcess:
    res = subprocess.run([str(RUNNEL_BIN), *args, "--bootstrap-server", bootstrap], input=stdin,
                         capture_output=True, text=True, timeout=60)
    print(res.stdout, res.stderr)
    if ok:
        assert res.returncode == 0, f"runnel {args} exited {res.returncode}: {res.stderr}"
    return res


def rows(out: str, first: str) -> list[dict]:
    """The rows of the table whose header starts with `first`, keyed by its columns (until a blank or a
    parenthesized line)."""
    table, header = [], None
    for line in out.splitlines():
        cells = line.split()
        if header is None:
            if cells[:1] == [first]:
                header = cells
        elif not cells or line.startswith("("):
            break
        else:
            table.append(dict(zip(header, cells)))
    return table


def share_consume(bootstrap: str, group: str, topic: str) -> list[str]:
    res = runnel(bootstrap, "consume", "--share-group", group, "--topic", topic, "--max-messages", str(N))
    return res.stdout.splitlines()


def test_share_consume_list_describe_reset(broker, topic):
    b = broker.bootstrap
    group = f"g-{uuid.uuid4().hex[:8]}"
    make_topic(b, topic, 2)
    values = [f"v{i}" for i in range(N)]
    runnel(b, "produce", topic, stdin="\n".join(values) + "\n")
    with k.Connection(b) as c:
        assert incremental_alter(c, GROUP_RESOURCE, group, [("share.auto.offset.reset", SET, "earliest")]) \
            == (0, None)

    assert sorted(share_consume(b, group, topic)) == sorted(values)

    listed = rows(runnel(b, "share-group", "list").stdout, "GROUP")
    assert {"GROUP": group, "STATE": "Empty"} in listed, listed

    described = runnel(b, "share-group", "describe", group).stdout
    assert f"Group: {group}  Type: share  State: Empty" in described
    offsets = rows(described, "TOPIC")
    assert sorted(int(r["PARTITION"]) for r in offsets) == [0, 1], offsets
    assert sum(int(r["START-OFFSET"]) for r in offsets) == N, offsets
    assert all(r["LAG"] == "0" for r in offsets), offsets
    d = json.loads(runnel(b, "share-group", "--json", "describe", group).stdout)
    assert d["state"] == "Empty" and d["members"] == [] and {o["lag"] for o in d["offsets"]} == {0}

    plan = runnel(b, "share-group", "reset-offsets", group, "--topic", topic, "--to-earliest").stdout
    assert "add --execute" in plan
    assert {r["NEW-START-OFFSET"] for r in rows(plan, "TOPIC")} == {"0"}
    runnel(b, "share-group", "reset-offsets", group, "--topic", topic, "--to-earliest", "--execute")
    offsets = rows(runnel(b, "share-group", "describe", group).stdout, "TOPIC")
    assert sum(int(r["LAG"]) for r in offsets) == N, offsets

    assert sorted(share_consume(b, group, topic)) == sorted(values)
