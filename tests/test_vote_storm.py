"""A voter that can still reach the active controller cannot depose it (issue 14; KIP-996's idea).

Three real `runnel` processes (broker + controller each, the fixtures of test_cluster.py). A raw socket
speaks the controller RPC (a 4-byte big-endian length, then JSON) and sends raft RequestVotes in the name of
a follower controller, with a term around 10^9 and a last log id ahead of anyone's, to every controller
four times a second for a few seconds — the vote storm a voter cut off from the leader's replication makes.
Checked: every vote is answered and refused (so the frames were understood), and the active controller
stays the same throughout (sampled with `runnel cluster info`), while the leader's majority is intact.
"""

from __future__ import annotations

import json
import socket
import struct
import time

import pytest

from conftest import MODE
from test_cluster import active_controller, cluster  # noqa: F401 - the fixture

pytestmark = [pytest.mark.cluster,
              pytest.mark.skipif(MODE != "runnel", reason="starts its own three runnel processes")]

TERM = 10**9


def request_vote(port: int, term: int, candidate: int) -> dict:
    """One RequestVote on a fresh connection to the controller port; its decoded answer."""
    log_id = {"leader_id": {"term": term - 1, "node_id": candidate}, "index": 10**12}
    req = {"Vote": {"vote": {"leader_id": {"term": term, "node_id": candidate}, "committed": False},
                    "last_log_id": log_id}}
    body = json.dumps(req).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(struct.pack(">I", len(body)) + body)
        head = _read_exact(s, 4)
        (n,) = struct.unpack(">I", head)
        return json.loads(_read_exact(s, n))


def _read_exact(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        assert chunk, f"the controller closed the connection after {len(buf)} of {n} bytes"
        buf += chunk
    return buf


def test_vote_storm_with_a_huge_term_does_not_depose_the_active_controller(cluster):
    leader = active_controller(cluster.alive_bootstrap())
    assert leader in cluster.nodes, f"no active controller: {leader}"
    time.sleep(1.5)  # past the leader's election-time lease: openraft alone would now grant the vote
    candidate = next(n for n in cluster.nodes if n != leader)
    seen = []
    for i in range(16):
        for n, node in cluster.nodes.items():
            if n == candidate:
                continue
            resp = request_vote(node.controller_port, TERM + i, candidate)
            answer = resp.get("Vote", {}).get("Ok")
            assert answer is not None, f"controller {n} answered {resp}"
            assert not answer["vote_granted"], f"controller {n} granted the vote of term {TERM + i}: {answer}"
            assert answer["vote"]["leader_id"]["term"] < TERM, f"controller {n} took the term: {answer}"
        seen.append(active_controller(cluster.alive_bootstrap()))
        time.sleep(0.25)
    assert set(seen) == {leader}, f"the active controller changed during the storm: {seen}"
