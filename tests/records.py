"""Deterministic test records shared by every client test (Python side; tests/java mirrors it).

Record i of a stream with seed S is derived from h = SHA-256(f"{S}:{i}") (32 bytes):
  key     None if i % 10 == 0, b"" if i % 10 == 1, else h[:4 + i % 13]
  value   None if i % 13 == 0, b"" if i % 13 == 1, else (h * 4)[:20 + (i * 7) % 81]
  headers i % 6: 0 -> none, 1 -> [("n", None)], 2 -> [("e", b"")],
                 3 -> [("a", h[:3]), ("b", h[3:10])], else [("id", str(i))]
Records are compared through `canonical(key, value, headers)`, one text line per record, so that null and
empty stay distinct and any client's output can be checked line by line.
"""

from __future__ import annotations

import hashlib


def record(seed: str, i: int):
    h = hashlib.sha256(f"{seed}:{i}".encode()).digest()
    key = None if i % 10 == 0 else b"" if i % 10 == 1 else h[: 4 + i % 13]
    value = None if i % 13 == 0 else b"" if i % 13 == 1 else (h * 4)[: 20 + (i * 7) % 81]
    m = i % 6
    if m == 0:
        headers = []
    elif m == 1:
        headers = [("n", None)]
    elif m == 2:
        headers = [("e", b"")]
    elif m == 3:
        headers = [("a", h[:3]), ("b", h[3:10])]
    else:
        headers = [("id", str(i).encode())]
    return key, value, headers


def records(seed: str, n: int):
    return [record(seed, i) for i in range(n)]


def _b(v):
    return "-" if v is None else "=" + v.hex()


def canonical(key, value, headers) -> str:
    hs = ",".join(f"{k}:{_b(v)}" for k, v in (headers or []))
    return f"{_b(key)} {_b(value)} {hs}"


def expected_lines(seed: str, n: int):
    return [canonical(*record(seed, i)) for i in range(n)]


def first_difference(got: list, want: list) -> str:
    """A short human-readable description of where two canonical line lists differ ('' if equal)."""
    if got == want:
        return ""
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            return f"record {i} differs:\n  got  {g}\n  want {w}\n(got {len(got)} records, want {len(want)})"
    return f"lengths differ: got {len(got)} records, want {len(want)}"
