"""KIP-890 over the raw protocol: transaction verification (transaction version 1) and transaction
version 2, against runnel and Apache Kafka 4.4.0 alike.

- ApiVersions v3 advertises the `transaction.version` feature (supported 0..2, finalized 2).
- TV2: Produce v12 from a transactional producer needs no AddPartitionsToTxn (the leader adds the partition
  through the transaction coordinator); EndTxn v5 bumps the producer epoch and answers it; the old epoch is
  fenced; TxnOffsetCommit v5 needs no AddOffsetsToTxn.
- TV1: Produce v3..11 of a partition the client never added is refused after the leader asks the
  coordinator (verify_only), and nothing is appended: INVALID_TXN_STATE up to v10, TRANSACTION_ABORTABLE
  from v11 (KIP-1050).

Every wait is a bounded poll. Codes asserted are the ones Kafka 4.4.0 answers.
"""

from __future__ import annotations

import time

import pytest

import kproto as k
from conftest import make_topic

ADD_PARTITIONS_TO_TXN, END_TXN, TXN_OFFSET_COMMIT, DESCRIBE_TRANSACTIONS, OFFSET_FETCH = 24, 26, 28, 65, 9
NOT_ENOUGH_REPLICAS = 19
COORDINATOR_RETRIABLE = (14, 15, 16)  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
CONCURRENT_TRANSACTIONS = 51
INVALID_TXN_STATE = 48
INVALID_PRODUCER_EPOCH = 47
PRODUCER_FENCED = 90
UNSTABLE_OFFSET_COMMIT = 88
TRANSACTION_ABORTABLE = 120
POLL_S = 20.0


# ---------------------------------------------------------------- flexible-version helpers
def compact_bytes(w: k.Writer, b: bytes | None):
    if b is None:
        return w.uvarint(0)
    return w.uvarint(len(b) + 1).raw(b)


def skip_tags(r: k.Reader) -> dict:
    """Reads a tagged-field section → {tag: raw bytes}."""
    out = {}
    for _ in range(r.uvarint()):
        tag = r.uvarint()
        out[tag] = r.raw(r.uvarint())
    return out


def first_topic_partition_errors(r: k.Reader) -> dict:
    """A compact array of (topic, [(partition, error, tags)], tags) results → {partition: error} of the first
    topic (AddPartitionsToTxn v3 and TxnOffsetCommit v3+ answer in this shape)."""

    def presult(r):
        p, e = r.i32(), r.i16()
        skip_tags(r)
        return p, e

    def tresult(r):
        k.read_compact_string(r)
        out = k.read_compact_array(r, presult)
        skip_tags(r)
        return out

    return dict(k.read_compact_array(r, tresult)[0])


def poll(what: str, fn, done, timeout: float = POLL_S, interval: float = 0.1):
    """Calls fn() until done(result) (bounded); returns the last result, failing with the history."""
    deadline = time.monotonic() + timeout
    history = []
    while True:
        got = fn()
        history.append(got)
        if done(got):
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: still {got!r} after {timeout}s (history tail {history[-5:]!r})")
        time.sleep(interval)


# ---------------------------------------------------------------- requests
def api_versions_flex(conn: k.Connection, version: int = 3):
    """ApiVersions v3+ → (error, {api: (min, max)}, supported {name: (min, max)}, finalized {name: (min, max)},
    finalized epoch). The response header is v0 even for v3 (KIP-511)."""
    w = k.Writer().compact_string("runnel-raw-test").compact_string("1.0").tags()
    r = conn.request(k.API_VERSIONS, version, bytes(w.buf), flexible_header=True, flexible_response=False)
    err = r.i16()

    def api(r):
        key, lo, hi = r.i16(), r.i16(), r.i16()
        skip_tags(r)
        return key, (lo, hi)

    apis = dict(k.read_compact_array(r, api))
    r.i32()  # throttle
    tags = skip_tags(r)
    assert r.remaining() == 0, f"{r.remaining()} trailing bytes in ApiVersions v{version}"

    def features(raw, finalized):
        if raw is None:
            return {}
        fr = k.Reader(raw)

        def one(r):
            name, a, b = k.read_compact_string(r), r.i16(), r.i16()
            skip_tags(r)
            return name, ((b, a) if finalized else (a, b))  # finalized is (max, min) on the wire

        return dict(k.read_compact_array(fr, one))

    epoch = k.Reader(tags[1]).i64() if 1 in tags else -1
    return err, apis, features(tags.get(0), False), features(tags.get(2), True), epoch


def find_coordinator(conn: k.Connection, key: str, key_type: int):
    """FindCoordinator v1 (creates `__transaction_state` / `__consumer_offsets` on first use), polled."""
    def once():
        r = conn.request(k.FIND_COORDINATOR, 1, bytes(k.Writer().string(key).i8(key_type).buf))
        r.i32()
        return r.i16()
    poll(f"FindCoordinator({key!r}, {key_type})", once, lambda e: e == 0)


def init_transactional(conn: k.Connection, txn_id: str) -> tuple[int, int]:
    find_coordinator(conn, txn_id, 1)

    def once():
        r = conn.request(k.INIT_PRODUCER_ID, 1, bytes(k.Writer().string(txn_id).i32(60000).buf))
        r.i32()
        return r.i16(), r.i64(), r.i16()

    err, pid, epoch = poll(f"InitProducerId({txn_id})", once,
                           lambda g: g[0] not in COORDINATOR_RETRIABLE + (CONCURRENT_TRANSACTIONS,))
    assert err == 0, f"InitProducerId({txn_id}): error {err}"
    return pid, epoch


def txn_batch(pid: int, epoch: int, seq: int, n: int = 2, tag: str = "v") -> bytes:
    recs = [k.Record(None, f"{tag}{i}".encode(), []) for i in range(n)]
    return k.encode_batch(recs, producer_id=pid, producer_epoch=epoch, base_sequence=seq, transactional=True)


def produce_flex(conn: k.Connection, version: int, txn_id: str, topic: str, batches: dict) -> dict:
    """Produce v9..v12 (flexible, topic by name), acks=-1 → {partition: (error, base_offset, error_message)}."""
    assert 9 <= version <= 12
    w = k.Writer().compact_string(txn_id).i16(-1).i32(30000)

    def part(w, item):
        p, b = item
        w.i32(p)
        compact_bytes(w, b)
        w.tags()

    def top(w, _):
        w.compact_string(topic)
        k.compact_array(w, sorted(batches.items()), part)
        w.tags()

    k.compact_array(w, [None], top)
    w.tags()
    r = conn.request(k.PRODUCE, version, bytes(w.buf), flexible_header=True, flexible_response=True)

    def rec_err(r):
        r.i32()
        k.read_compact_string(r)
        skip_tags(r)

    def presp(r):
        p, err, base = r.i32(), r.i16(), r.i64()
        r.i64(); r.i64()  # log append time, log start offset
        k.read_compact_array(r, rec_err)
        msg = k.read_compact_string(r)
        skip_tags(r)
        return p, (err, base, msg)

    def tresp(r):
        k.read_compact_string(r)
        parts = k.read_compact_array(r, presp)
        skip_tags(r)
        return parts

    topics = k.read_compact_array(r, tresp)
    return dict(topics[0])


def produce_until_settled(conn, version, txn_id, topic, batches, retriable=(NOT_ENOUGH_REPLICAS,)) -> dict:
    """Produce, resending while any partition answers a retriable error (the coordinator or the leader's
    view of it still loading); the same batches are resent, as a client would."""
    return poll(f"Produce v{version} {topic} {sorted(batches)}",
                lambda: produce_flex(conn, version, txn_id, topic, batches),
                lambda got: not any(e in retriable for e, _, _ in got.values()))


def add_partitions_v3(conn: k.Connection, txn_id: str, pid: int, epoch: int, topic: str, parts: list) -> dict:
    """AddPartitionsToTxn v3 (flexible, the last client version before KIP-890's v4) → {partition: error}."""
    w = k.Writer().compact_string(txn_id).i64(pid).i16(epoch)

    def top(w, _):
        w.compact_string(topic)
        k.compact_array(w, parts, lambda w, p: w.i32(p))
        w.tags()

    k.compact_array(w, [None], top)
    w.tags()

    def once():
        r = conn.request(ADD_PARTITIONS_TO_TXN, 3, bytes(w.buf), flexible_header=True, flexible_response=True)
        r.i32()
        return first_topic_partition_errors(r)

    return poll(f"AddPartitionsToTxn v3 {txn_id}", once,
                lambda got: not any(e in COORDINATOR_RETRIABLE + (CONCURRENT_TRANSACTIONS,) for e in got.values()))


def end_txn(conn: k.Connection, version: int, txn_id: str, pid: int, epoch: int, commit: bool):
    """EndTxn v3..v5 (flexible) → (error, producer_id, producer_epoch); the last two are -1 before v5."""
    body = bytes(k.Writer().compact_string(txn_id).i64(pid).i16(epoch).i8(1 if commit else 0).tags().buf)

    def once():
        r = conn.request(END_TXN, version, body, flexible_header=True, flexible_response=True)
        r.i32()
        err = r.i16()
        if version >= 5:
            return err, r.i64(), r.i16()
        return err, -1, -1

    return poll(f"EndTxn v{version} {txn_id}", once,
                lambda g: g[0] not in COORDINATOR_RETRIABLE + (CONCURRENT_TRANSACTIONS,))


def describe_transaction(conn: k.Connection, txn_id: str) -> dict:
    """DescribeTransactions v0 → the one transaction's state as a dict (topics as {topic: sorted partitions})."""
    w = k.compact_array(k.Writer(), [txn_id], lambda w, t: w.compact_string(t)).tags()
    r = conn.request(DESCRIBE_TRANSACTIONS, 0, bytes(w.buf), flexible_header=True, flexible_response=True)
    r.i32()

    def topic(r):
        name = k.read_compact_string(r)
        parts = k.read_compact_array(r, lambda r: r.i32())
        skip_tags(r)
        return name, sorted(parts)

    def state(r):
        d = {"error": r.i16(), "id": k.read_compact_string(r), "state": k.read_compact_string(r),
             "timeout_ms": r.i32(), "start_ms": r.i64(), "producer_id": r.i64(), "producer_epoch": r.i16()}
        d["topics"] = dict(k.read_compact_array(r, topic))
        skip_tags(r)
        return d

    return k.read_compact_array(r, state)[0]


def txn_offset_commit(conn: k.Connection, version: int, txn_id: str, group: str, pid: int, epoch: int,
                      topic: str, offsets: dict) -> dict:
    """TxnOffsetCommit v3..v5 (flexible, no group membership: generation -1) → {partition: error}."""
    w = k.Writer().compact_string(txn_id).compact_string(group).i64(pid).i16(epoch)
    w.i32(-1).compact_string("").compact_string(None)

    def part(w, item):
        p, off = item
        w.i32(p).i64(off).i32(-1).compact_string("")
        w.tags()

    def top(w, _):
        w.compact_string(topic)
        k.compact_array(w, sorted(offsets.items()), part)
        w.tags()

    k.compact_array(w, [None], top)
    w.tags()
    r = conn.request(TXN_OFFSET_COMMIT, version, bytes(w.buf), flexible_header=True, flexible_response=True)
    r.i32()
    return first_topic_partition_errors(r)


def offset_fetch_stable(conn: k.Connection, group: str, topic: str, parts: list):
    """OffsetFetch v7 with require_stable → (top error, {partition: (offset, error)})."""
    w = k.Writer().compact_string(group)

    def top(w, _):
        w.compact_string(topic)
        k.compact_array(w, parts, lambda w, p: w.i32(p))
        w.tags()

    k.compact_array(w, [None], top)
    w.i8(1).tags()
    r = conn.request(OFFSET_FETCH, 7, bytes(w.buf), flexible_header=True, flexible_response=True)
    r.i32()

    def presult(r):
        p, off = r.i32(), r.i64()
        r.i32()
        k.read_compact_string(r)
        e = r.i16()
        skip_tags(r)
        return p, (off, e)

    def tresult(r):
        k.read_compact_string(r)
        out = k.read_compact_array(r, presult)
        skip_tags(r)
        return out

    topics = k.read_compact_array(r, tresult)
    err = r.i16()
    return err, dict(topics[0]) if topics else {}


def committed_values(conn: k.Connection, topic: str, partition: int) -> tuple[int, list]:
    """read_committed Fetch v11 from 0 → (last stable offset, values of the data records)."""
    part = k.fetch(conn, topic, partition, 0, isolation_level=1)
    assert part.error == 0, f"Fetch {topic}-{partition}: error {part.error}"
    values = [rec.value for b in part.batches() if not b.attributes & 0x20 for rec in b.records]
    return part.last_stable_offset, values


# ---------------------------------------------------------------- tests
@pytest.mark.parametrize("version", [3, 4])
def test_api_versions_advertises_transaction_version_2(broker, version):
    """Finalized at level 2 in both versions. Supported 0..2 only from v4: Kafka leaves a feature whose
    supported range starts at 0 out of ApiVersions v3 and older (KAFKA-17492: older clients fail to read a
    min version 0), so at v3 Kafka 4.4 lists only `metadata.version` as supported."""
    with k.Connection(broker.bootstrap) as c:
        err, apis, supported, finalized, epoch = api_versions_flex(c, version)
    print(f"\nApiVersions v{version}: supported features {supported}\n"
          f"finalized features (min, max) {finalized} epoch {epoch}")
    assert err == 0
    assert finalized.get("transaction.version", (None, None))[1] == 2, \
        f"transaction.version finalized {finalized.get('transaction.version')}, want max level 2"
    assert epoch >= 0, f"finalized features epoch {epoch}"
    if version >= 4:
        assert "transaction.version" in supported, f"no transaction.version in supported features {supported}"
        lo, hi = supported["transaction.version"]
        assert lo == 0 and hi >= 2, f"transaction.version supported {lo}..{hi}, want 0..>=2"
    else:
        assert all(lo >= 1 for lo, _ in supported.values()), \
            f"ApiVersions v3 lists a feature with min version 0 (Kafka omits them below v4): {supported}"
    # The versions KIP-890 needs: Produce v12, EndTxn v5, TxnOffsetCommit v5, AddPartitionsToTxn v4+.
    assert apis[k.PRODUCE][1] >= 12 and apis[END_TXN][1] >= 5 and apis[TXN_OFFSET_COMMIT][1] >= 5, apis
    assert apis[ADD_PARTITIONS_TO_TXN][1] >= 4, apis


def test_tv2_produce_without_add_partitions_and_epoch_bump_at_commit(broker, topic):
    make_topic(broker.bootstrap, topic, partitions=2)
    txn = f"tx-{topic}"
    with k.Connection(broker.bootstrap) as c:
        pid, epoch = init_transactional(c, txn)
        got = produce_until_settled(c, 12, txn, topic, {0: txn_batch(pid, epoch, 0, tag="a"),
                                                        1: txn_batch(pid, epoch, 0, tag="b")})
        assert {p: e for p, (e, _, _) in got.items()} == {0: 0, 1: 0}, f"Produce v12 without AddPartitionsToTxn: {got}"

        d = describe_transaction(c, txn)
        assert (d["error"], d["state"], d["producer_id"], d["producer_epoch"]) == (0, "Ongoing", pid, epoch), d
        assert d["topics"] == {topic: [0, 1]}, f"partitions added by the leaders: {d['topics']}"
        assert committed_values(c, topic, 0) == (0, []), "nothing stable before the commit"

        err, new_pid, new_epoch = end_txn(c, 5, txn, pid, epoch, commit=True)
        assert (err, new_pid, new_epoch) == (0, pid, epoch + 1), \
            f"EndTxn v5 commit → {(err, new_pid, new_epoch)}, want (0, {pid}, {epoch + 1})"

        # The COMMIT marker is written asynchronously: poll until the records are stable.
        lso, values = poll("read_committed Fetch p0", lambda: committed_values(c, topic, 0), lambda g: g[0] == 3)
        assert values == [b"a0", b"a1"], values
        assert poll("read_committed Fetch p1", lambda: committed_values(c, topic, 1),
                    lambda g: g[0] == 3)[1] == [b"b0", b"b1"]
        assert poll("DescribeTransactions after commit", lambda: describe_transaction(c, txn),
                    lambda d: d["state"] == "CompleteCommit")["producer_epoch"] == epoch + 1

        # The next transaction: the new epoch, sequence from 0 again.
        got = produce_until_settled(c, 12, txn, topic, {0: txn_batch(new_pid, new_epoch, 0, tag="c")})
        assert got[0][0] == 0, f"Produce v12 with the bumped epoch {new_epoch}, sequence 0: {got}"
        assert got[0][1] == 3, f"appended after the first transaction and its marker: {got}"
        assert end_txn(c, 5, txn, new_pid, new_epoch, commit=True) == (0, pid, epoch + 2)
        lso, values = poll("read_committed Fetch p0 (2nd txn)", lambda: committed_values(c, topic, 0),
                           lambda g: g[0] == 6)
        assert values == [b"a0", b"a1", b"c0", b"c1"], values


@pytest.mark.parametrize("version", [10, 11])
def test_tv1_produce_of_a_partition_not_added_is_refused(broker, topic, version):
    make_topic(broker.bootstrap, topic, partitions=1)
    txn = f"tx-{topic}"
    with k.Connection(broker.bootstrap) as c:
        pid, epoch = init_transactional(c, txn)
        batch = txn_batch(pid, epoch, 0)
        got = produce_until_settled(c, version, txn, topic, {0: batch})
        print(f"\nProduce v{version} unverified: {got}")
        # The coordinator answers TRANSACTION_ABORTABLE; the leader turns it into INVALID_TXN_STATE only for
        # Produce v10 and older (Kafka's DEFAULT_ERROR); v11 (GENERIC_ERROR_SUPPORTED) passes it through.
        want = TRANSACTION_ABORTABLE if version >= 11 else INVALID_TXN_STATE
        assert got[0][0] == want, f"Produce v{version} of a partition never added: {got}, want {want}"
        want_msg = None if version >= 11 else "Partition was not added to the transaction"
        assert got[0][2] == want_msg, f"Produce v{version} error message {got[0][2]!r}, want {want_msg!r}"
        err, _, end = k.list_offsets(c, topic, 0, -1)
        assert (err, end) == (0, 0), f"nothing appended: ListOffsets latest {(err, end)}"
        d = describe_transaction(c, txn)
        assert d["state"] == "Empty" and d["topics"] == {}, f"no transaction opened: {d}"

        assert add_partitions_v3(c, txn, pid, epoch, topic, [0]) == {0: 0}
        got = produce_until_settled(c, version, txn, topic, {0: batch})
        assert got[0][:2] == (0, 0), f"Produce v{version} after AddPartitionsToTxn v3: {got}"
        assert end_txn(c, 3, txn, pid, epoch, commit=False)[0] == 0
        assert describe_transaction(c, txn)["producer_epoch"] == epoch, "TV1 ends without bumping the epoch"


def test_tv2_old_epoch_after_commit_is_fenced(broker, topic):
    make_topic(broker.bootstrap, topic, partitions=1)
    txn = f"tx-{topic}"
    with k.Connection(broker.bootstrap) as c:
        pid, epoch = init_transactional(c, txn)
        assert produce_until_settled(c, 12, txn, topic, {0: txn_batch(pid, epoch, 0)})[0][0] == 0
        err, _, new_epoch = end_txn(c, 5, txn, pid, epoch, commit=True)
        assert (err, new_epoch) == (0, epoch + 1)
        poll("COMMIT marker", lambda: committed_values(c, topic, 0)[0], lambda lso: lso == 3)

        # The old epoch again (as a zombie would, sequence following its last batch).
        got = produce_until_settled(c, 12, txn, topic, {0: txn_batch(pid, epoch, 2)})
        assert got[0][0] == INVALID_PRODUCER_EPOCH, f"Produce v12 with the epoch before the bump: {got}"
        got = produce_until_settled(c, 12, txn, topic, {0: txn_batch(pid, epoch, 0)})
        assert got[0][0] == INVALID_PRODUCER_EPOCH, f"... and sequence 0: {got}"
        err, end = k.list_offsets(c, topic, 0, -1)[::2]
        assert (err, end) == (0, 3), f"nothing appended by the fenced epoch: ListOffsets latest {(err, end)}"
        # The current epoch still works.
        assert produce_until_settled(c, 12, txn, topic, {0: txn_batch(pid, new_epoch, 0)})[0][0] == 0
        assert end_txn(c, 5, txn, pid, new_epoch, commit=False) == (0, pid, epoch + 2)


def test_tv2_txn_offset_commit_without_add_offsets(broker, topic):
    make_topic(broker.bootstrap, topic, partitions=2)
    txn, group = f"tx-{topic}", f"g-{topic}"
    with k.Connection(broker.bootstrap) as c:
        find_coordinator(c, group, 0)
        pid, epoch = init_transactional(c, txn)
        got = poll("TxnOffsetCommit v5",
                   lambda: txn_offset_commit(c, 5, txn, group, pid, epoch, topic, {0: 7, 1: 11}),
                   lambda g: not any(e in COORDINATOR_RETRIABLE + (NOT_ENOUGH_REPLICAS,) for e in g.values()))
        assert got == {0: 0, 1: 0}, f"TxnOffsetCommit v5 without AddOffsetsToTxn: {got}"
        d = describe_transaction(c, txn)
        assert d["state"] == "Ongoing" and list(d["topics"]) == ["__consumer_offsets"], d

        err, parts = offset_fetch_stable(c, group, topic, [0, 1])
        assert err == UNSTABLE_OFFSET_COMMIT or all(e == UNSTABLE_OFFSET_COMMIT for _, e in parts.values()), \
            f"require_stable while the offsets are pending: {(err, parts)}"

        assert end_txn(c, 5, txn, pid, epoch, commit=True) == (0, pid, epoch + 1)
        err, parts = poll("OffsetFetch require_stable", lambda: offset_fetch_stable(c, group, topic, [0, 1]),
                          lambda g: g[0] != UNSTABLE_OFFSET_COMMIT
                          and all(e != UNSTABLE_OFFSET_COMMIT for _, e in g[1].values()))
        assert (err, parts) == (0, {0: (7, 0), 1: (11, 0)}), (err, parts)


def add_offsets_v3(conn: k.Connection, txn_id: str, pid: int, epoch: int, group: str) -> int:
    """AddOffsetsToTxn v3 (flexible) → error, polled past the coordinator's retriable answers."""
    body = bytes(k.Writer().compact_string(txn_id).i64(pid).i16(epoch).compact_string(group).tags().buf)

    def once():
        r = conn.request(25, 3, body, flexible_header=True, flexible_response=True)
        r.i32()
        return r.i16()

    return poll(f"AddOffsetsToTxn v3 {txn_id}", once,
                lambda e: e not in COORDINATOR_RETRIABLE + (CONCURRENT_TRANSACTIONS,))


@pytest.mark.parametrize("version", [3, 4])
def test_tv1_txn_offset_commit_without_add_offsets_is_refused(broker, topic, version):
    """TxnOffsetCommit v0..4 is verified like Produce v3..11: INVALID_TXN_STATE up to v3, TRANSACTION_ABORTABLE
    at v4; nothing is committed. After AddOffsetsToTxn the same commit goes through."""
    make_topic(broker.bootstrap, topic, partitions=1)
    txn, group = f"tx-{topic}", f"g-{topic}"
    with k.Connection(broker.bootstrap) as c:
        find_coordinator(c, group, 0)
        pid, epoch = init_transactional(c, txn)
        got = poll(f"TxnOffsetCommit v{version}",
                   lambda: txn_offset_commit(c, version, txn, group, pid, epoch, topic, {0: 5}),
                   lambda g: not any(e in COORDINATOR_RETRIABLE + (NOT_ENOUGH_REPLICAS,) for e in g.values()))
        print(f"\nTxnOffsetCommit v{version} unverified: {got}")
        want = TRANSACTION_ABORTABLE if version >= 4 else INVALID_TXN_STATE
        assert got == {0: want}, f"TxnOffsetCommit v{version} without AddOffsetsToTxn: {got}, want {want}"
        d = describe_transaction(c, txn)
        assert d["state"] == "Empty" and d["topics"] == {}, f"no transaction opened: {d}"

        assert add_offsets_v3(c, txn, pid, epoch, group) == 0
        assert txn_offset_commit(c, version, txn, group, pid, epoch, topic, {0: 5}) == {0: 0}
        assert end_txn(c, 3, txn, pid, epoch, commit=True)[0] == 0
        err, parts = poll("OffsetFetch require_stable", lambda: offset_fetch_stable(c, group, topic, [0]),
                          lambda g: g[0] != UNSTABLE_OFFSET_COMMIT
                          and all(e != UNSTABLE_OFFSET_COMMIT for _, e in g[1].values()))
        assert (err, parts) == (0, {0: (5, 0)}), (err, parts)


def test_tv2_end_txn_on_an_empty_transaction_and_retried(broker, topic):
    """EndTxn v5: a commit with nothing in the transaction is INVALID_TXN_STATE, an abort bumps the epoch all
    the same; a commit retried with the epoch it was sent with (its answer lost) answers the bumped epoch
    again, while an abort with that old epoch is INVALID_TXN_STATE."""
    make_topic(broker.bootstrap, topic, partitions=1)
    txn = f"tx-{topic}"
    with k.Connection(broker.bootstrap) as c:
        pid, epoch = init_transactional(c, txn)
        assert end_txn(c, 5, txn, pid, epoch, commit=True) == (INVALID_TXN_STATE, -1, -1)
        assert end_txn(c, 5, txn, pid, epoch, commit=False) == (0, pid, epoch + 1)
        epoch += 1
        assert describe_transaction(c, txn)["producer_epoch"] == epoch

        assert produce_until_settled(c, 12, txn, topic, {0: txn_batch(pid, epoch, 0)})[0][0] == 0
        assert end_txn(c, 5, txn, pid, epoch, commit=True) == (0, pid, epoch + 1)
        assert end_txn(c, 5, txn, pid, epoch, commit=True) == (0, pid, epoch + 1), "a retried commit"
        assert end_txn(c, 5, txn, pid, epoch, commit=False) == (INVALID_TXN_STATE, -1, -1), \
            "an abort with the epoch of the committed transaction"
        assert end_txn(c, 5, txn, pid, epoch + 1, commit=True) == (INVALID_TXN_STATE, -1, -1), \
            "a commit with no transaction open"
        poll("COMMIT marker", lambda: committed_values(c, topic, 0)[0], lambda lso: lso == 3)
