"""Pitfalls 1-8, 11, 12 of shared/guides/pitfalls.md, driven over raw sockets (tests/kproto.py).

Expected behaviour is Apache Kafka 4.4.0's (these tests pass against it with RUNNEL_TEST_BOOTSTRAP).
"""

from __future__ import annotations

import select
import struct
import time

import pytest

import kproto as k
from conftest import MODE, BrokerProcess, make_topic

pytestmark = pytest.mark.pitfalls


def recs(n, prefix=b"r"):
    return [k.Record(prefix + b"-k%d" % i, prefix + b"-v%d" % i, [("h", b"%d" % i)]) for i in range(n)]


def produce_ok(conn, topic, partition, records, codec="none", version=8):
    res = k.produce(conn, topic, partition, k.encode_batch(records, codec), version=version)
    assert res.error == 0, f"produce error {res.error}"
    return res.base_offset


def readable(sock, timeout):
    r, _, _ = select.select([sock], [], [], timeout)
    return bool(r)


# ------------------------------------------------------------------ 1. ApiVersions above our max
def skip_tagged_fields(r: k.Reader):
    for _ in range(r.uvarint()):
        r.uvarint()
        r.raw(r.uvarint())


def parse_api_versions_v3(r: k.Reader):
    err = r.i16()
    apis = {}
    for _ in range(r.uvarint() - 1):
        key, lo, hi = r.i16(), r.i16(), r.i16()
        skip_tagged_fields(r)
        apis[key] = (lo, hi)
    r.i32()  # throttle
    skip_tagged_fields(r)
    assert r.remaining() == 0, f"{r.remaining()} trailing bytes: response header must not carry tagged fields"
    return err, apis


def api_versions_v3_body():
    return bytes(k.Writer().compact_string("runnel-test").compact_string("1.0").tags().buf)


def test_p1_api_versions_above_max_gets_v0_shaped_error_35(broker):
    with k.Connection(broker.bootstrap) as c:
        corr = c.send(k.API_VERSIONS, 127, api_versions_v3_body(), flexible_header=True, correlation_id=4242)
        got, r = c.recv()
        assert got == corr == 4242
        err, apis = k.parse_api_versions_v0(r)  # v0-shaped: error, [key, min, max]
        assert err == k.UNSUPPORTED_VERSION
        assert k.API_VERSIONS in apis, "the v0-shaped error reply must carry our ApiVersions range"
        lo, hi = apis[k.API_VERSIONS]
        assert lo == 0 and 3 <= hi < 127
        assert r.remaining() == 0
        # The client retries lower on the same connection and that works (v3: flexible body, header v0).
        c.send(k.API_VERSIONS, hi if hi <= 4 else 4, api_versions_v3_body(), flexible_header=True,
               correlation_id=4243)
        got, r = c.recv()
        assert got == 4243
        err, apis = parse_api_versions_v3(r)
        assert err == 0 and apis[k.API_VERSIONS][1] == hi


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_p1_api_versions_each_version_parses_exactly(broker, version):
    with k.Connection(broker.bootstrap) as c:
        if version >= 3:
            r = c.request(k.API_VERSIONS, version, api_versions_v3_body(), flexible_header=True)
            err, apis = parse_api_versions_v3(r)
        else:
            r = c.request(k.API_VERSIONS, version, b"")
            err, apis = k.parse_api_versions_v0(r)
            if version >= 1:
                r.i32()  # throttle
            assert r.remaining() == 0
        assert err == 0 and k.API_VERSIONS in apis


# ------------------------------------------------------------------ 2. acks=0 silence, pipelining order
def test_p2_acks0_no_response_and_pipelined_responses_in_order(broker, topic):
    make_topic(broker.bootstrap, topic, 1)
    with k.Connection(broker.bootstrap) as c:
        c.send(k.PRODUCE, 8, k.produce_body(topic, 0, k.encode_batch(recs(3, b"acks0")), acks=0),
               correlation_id=100)
        c.send(k.API_VERSIONS, 0, b"", correlation_id=101)
        c.send(k.METADATA, 8, bytes(k.Writer().i32(1).string(topic).i8(0).i8(0).i8(0).buf), correlation_id=102)
        c.send(k.PRODUCE, 8, k.produce_body(topic, 0, k.encode_batch(recs(2, b"acks1")), acks=1),
               correlation_id=103)
        # A fetch at the high watermark (5) is held up to max_wait; the ApiVersions behind it must still be
        # answered after it.
        c.send(k.FETCH, 11, k.fetch_body(topic, 0, 5, max_wait_ms=300), correlation_id=104)
        c.send(k.API_VERSIONS, 0, b"", correlation_id=105)
        order = []
        for _ in range(5):
            corr, r = c.recv()
            order.append(corr)
            if corr == 103:
                res = k.parse_produce(r, 8)
                assert res.error == 0 and res.base_offset == 3
        assert order == [101, 102, 103, 104, 105]
        assert not readable(c.sock, 0.5), "unexpected extra response (acks=0 must get none)"
        f = k.fetch(c, topic, 0, 0)
        assert [r.value for b in f.batches() for r in b.records] == \
            [b"acks0-v0", b"acks0-v1", b"acks0-v2", b"acks1-v0", b"acks1-v1"]


# ------------------------------------------------------------------ 3. Fetch long-poll
def test_p3_fetch_long_poll_answered_after_the_produce(broker, topic):
    make_topic(broker.bootstrap, topic, 1)
    with k.Connection(broker.bootstrap) as consumer, k.Connection(broker.bootstrap) as producer:
        consumer.send(k.FETCH, 11, k.fetch_body(topic, 0, 0, max_wait_ms=20000, min_bytes=1), correlation_id=7)
        # The empty partition's fetch is held: no answer has arrived before we produce.
        assert not readable(consumer.sock, 0.5), "empty fetch answered at once instead of long-polling"
        produce_ok(producer, topic, 0, recs(1, b"wake"))
        t0 = time.monotonic()
        corr, r = consumer.recv()
        waited = time.monotonic() - t0
        assert corr == 7
        f = k.parse_fetch(r, 11)
        assert f.error == 0
        assert [x.value for b in f.batches() for x in b.records] == [b"wake-v0"], \
            "the held fetch must be answered after (and with) the produce"
        assert waited < 10, f"fetch answered {waited:.1f}s after data arrived; max_wait was 20 s"


def test_p3_fetch_never_held_past_max_wait(broker, topic):
    make_topic(broker.bootstrap, topic, 1)
    with k.Connection(broker.bootstrap) as c:
        t0 = time.monotonic()
        f = k.fetch(c, topic, 0, 0, max_wait_ms=500, min_bytes=1)
        elapsed = time.monotonic() - t0
        assert f.error == 0 and f.records_length == 0 and f.high_watermark == 0
        assert elapsed < 5, f"fetch with max_wait_ms=500 held {elapsed:.1f}s"


def test_p3_fetch_min_bytes_waits_for_enough_data(broker, topic):
    make_topic(broker.bootstrap, topic, 1)
    with k.Connection(broker.bootstrap) as consumer, k.Connection(broker.bootstrap) as producer:
        produce_ok(producer, topic, 0, recs(1, b"small"))
        consumer.send(k.FETCH, 11, k.fetch_body(topic, 0, 0, max_wait_ms=20000, min_bytes=2000), correlation_id=9)
        assert not readable(consumer.sock, 0.5), "fetch answered before min_bytes were available"
        produce_ok(producer, topic, 0, [k.Record(b"big", b"x" * 3000)])
        corr, r = consumer.recv()
        f = k.parse_fetch(r, 11)
        assert [x.key for b in f.batches() for x in b.records] == [b"small-k0", b"big"]


# ------------------------------------------------------------------ 4. Fetch from the middle of a batch
def test_p4_fetch_mid_batch_returns_whole_batch(broker, topic):
    make_topic(broker.bootstrap, topic, 1)
    with k.Connection(broker.bootstrap) as c:
        produce_ok(c, topic, 0, recs(10, b"a"))
        produce_ok(c, topic, 0, recs(5, b"b"))
        f = k.fetch(c, topic, 0, 5)
        batches = f.batches()
        assert batches[0].base_offset == 0 and batches[0].last_offset == 9
        assert [r.offset for r in batches[0].records] == list(range(10))
        assert batches[1].base_offset == 10
        assert all(b.crc_ok for b in batches)


# ------------------------------------------------------------------ 5. Out of range
def test_p5_out_of_range_and_exactly_at_high_watermark(broker, topic):
    make_topic(broker.bootstrap, topic, 1)
    with k.Connection(broker.bootstrap) as c:
        produce_ok(c, topic, 0, recs(10))
        above = k.fetch(c, topic, 0, 11)
        assert above.error == k.OFFSET_OUT_OF_RANGE
        # Kafka 4.4 answers -1 for both here; the true values are also acceptable (pitfalls.md asks for them).
        assert above.high_watermark in (-1, 10) and above.log_start_offset in (-1, 0)
        assert above.records_length in (0, -1) and not above.batches()
        at_hw = k.fetch(c, topic, 0, 10)
        assert at_hw.error == 0 and at_hw.high_watermark == 10 and at_hw.records_length == 0
        negative = k.fetch(c, topic, 0, -5)
        assert negative.error == k.OFFSET_OUT_OF_RANGE


def delete_records(conn, topic, partition, offset):
    """DeleteRecords v1 → (error, low_watermark)."""
    w = k.Writer().i32(1).string(topic).i32(1).i32(partition).i64(offset).i32(30000)
    r = conn.request(21, 1, bytes(w.buf))
    r.i32(); r.i32(); r.string(); r.i32(); r.i32()
    low = r.i64()
    return r.i16(), low


def test_p5_below_log_start_offset(broker, topic):
    make_topic(broker.bootstrap, topic, 1)
    with k.Connection(broker.bootstrap) as c:
        _, apis = k.api_versions_v0(c)
        if 21 not in apis:
            pytest.skip("DeleteRecords not advertised: cannot advance the log start offset from a client")
        for _ in range(3):
            produce_ok(c, topic, 0, recs(4))
        err, low = delete_records(c, topic, 0, 4)
        assert err == 0 and low == 4
        below = k.fetch(c, topic, 0, 2)
        assert below.error == k.OFFSET_OUT_OF_RANGE
        assert below.high_watermark in (-1, 12) and below.log_start_offset in (-1, 4)  # Kafka 4.4: -1
        ok = k.fetch(c, topic, 0, 4)
        assert ok.error == 0 and ok.batches()[0].base_offset == 4


# ------------------------------------------------------------------ 6. Empty partitions: zero-length records
@pytest.mark.parametrize("version", [4, 5, 6, 7, 8, 9, 10, 11])
def test_p6_empty_partition_records_are_zero_length_not_null(broker, topic, version):
    make_topic(broker.bootstrap, topic, 2)
    with k.Connection(broker.bootstrap) as c:
        produce_ok(c, topic, 0, recs(2))
        r = c.request(k.FETCH, version, k.fetch_body(topic, 0, 0, version, partitions=[(0, 0), (1, 0)]))
        parts = k.parse_fetch_all(r, version)  # asserts every per-version field present, nothing trailing
        assert parts[1].error == 0 and parts[1].records_length == 0, \
            f"empty partition records length {parts[1].records_length} (must be 0, never -1)"
        assert parts[1].high_watermark == 0
        assert parts[0].error == 0 and len(parts[0].batches()[0].records) == 2
        for p in parts.values():
            assert p.last_stable_offset == p.high_watermark
            if version >= 5:
                assert p.log_start_offset == 0
            if version >= 11:
                assert p.preferred_read_replica == -1


# ------------------------------------------------------------------ 7. Compression attribute bits
@pytest.mark.parametrize("codec", list(k.CODECS))
def test_p7_codec_attribute_bits_describe_stored_bytes(broker, topic, codec):
    make_topic(broker.bootstrap, topic, 1)
    batch_records = recs(50, codec.encode()) + [k.Record(None, None, [("n", None)]), k.Record(b"", b"", [])]
    with k.Connection(broker.bootstrap) as c:
        produce_ok(c, topic, 0, batch_records, codec)
        f = k.fetch(c, topic, 0, 0)
        (b,) = f.batches()
        assert b.codec == k.CODECS[codec] and b.crc_ok
        assert [(r.key, r.value, r.headers) for r in b.records] == \
            [(r.key, r.value, r.headers) for r in batch_records]


def test_p7_snappy_xerial_framed_batch_accepted(broker, topic):
    """Java and franz-go send snappy inside xerial framing; it must be stored and returned as sent."""
    import cramjam
    make_topic(broker.bootstrap, topic, 1)
    orig = k.compress
    try:
        def xerial(codec, data):
            if codec != "snappy":
                return orig(codec, data)
            block = bytes(cramjam.snappy.compress_raw(data))
            return b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1) + struct.pack(">i", len(block)) + block
        k.compress = xerial
        batch = k.encode_batch(recs(20, b"xerial"), "snappy")
    finally:
        k.compress = orig
    with k.Connection(broker.bootstrap) as c:
        res = k.produce(c, topic, 0, batch)
        assert res.error == 0
        (b,) = k.fetch(c, topic, 0, 0).batches()
        assert b.codec == 2 and [r.value for r in b.records] == [r.value for r in recs(20, b"xerial")]


@pytest.mark.parametrize("version", [3, 4, 5, 6])
def test_p7_zstd_with_old_produce_version_is_error_76(broker, topic, version):
    make_topic(broker.bootstrap, topic, 1)
    with k.Connection(broker.bootstrap) as c:
        res = k.produce(c, topic, 0, k.encode_batch(recs(3), "zstd"), version=version)
        assert res.error == k.UNSUPPORTED_COMPRESSION_TYPE
        assert k.fetch(c, topic, 0, 0).high_watermark == 0
        assert k.produce(c, topic, 0, k.encode_batch(recs(3), "zstd"), version=7).error == 0


def test_p7_zstd_batch_to_old_fetch_is_error_76_or_returned_unchanged(broker, topic):
    """Kafka 4.4 returns a stored zstd batch unchanged to Fetch < v10 (earlier Kafka answered 76).
    Either is acceptable; recompressing or corrupting it is not."""
    make_topic(broker.bootstrap, topic, 1)
    with k.Connection(broker.bootstrap) as c:
        produce_ok(c, topic, 0, recs(3), "zstd")
        f = k.fetch(c, topic, 0, 0, version=9)
        if f.error == 0:
            (b,) = f.batches()
            assert b.codec == 4 and b.crc_ok and len(b.records) == 3
        else:
            assert f.error == k.UNSUPPORTED_COMPRESSION_TYPE


# ------------------------------------------------------------------ 8. Idempotent producer
def idem_batch(pid, epoch, seq, n, tag=b"i"):
    return k.encode_batch(recs(n, tag), producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def test_p8_idempotent_duplicate_gap_and_stale_epoch(broker, topic):
    make_topic(broker.bootstrap, topic, 1)
    with k.Connection(broker.bootstrap) as c:
        pid, epoch = k.init_producer_id(c)
        assert pid >= 0 and epoch >= 0
        first = idem_batch(pid, epoch, 0, 3, b"first")
        r0 = k.produce(c, topic, 0, first)
        assert r0.error == 0 and r0.base_offset == 0
        r1 = k.produce(c, topic, 0, idem_batch(pid, epoch, 3, 2, b"second"))
        assert r1.error == 0 and r1.base_offset == 3
        # duplicates of each of the last batches: success with the original offsets, not appended again
        dup0 = k.produce(c, topic, 0, first)
        assert dup0.error == 0 and dup0.base_offset == 0
        dup1 = k.produce(c, topic, 0, idem_batch(pid, epoch, 3, 2, b"second"))
        assert dup1.error == 0 and dup1.base_offset == 3
        assert k.fetch(c, topic, 0, 0).high_watermark == 5
        # a gap: next expected sequence is 5
        gap = k.produce(c, topic, 0, idem_batch(pid, epoch, 7, 1, b"gap"))
        assert gap.error == k.OUT_OF_ORDER_SEQUENCE_NUMBER
        ok = k.produce(c, topic, 0, idem_batch(pid, epoch, 5, 1, b"third"))
        assert ok.error == 0 and ok.base_offset == 5
        # a bumped epoch starts again at sequence 0; the old epoch is then fenced
        bumped = k.produce(c, topic, 0, idem_batch(pid, epoch + 1, 0, 1, b"bumped"))
        assert bumped.error == 0 and bumped.base_offset == 6
        stale = k.produce(c, topic, 0, idem_batch(pid, epoch, 6, 1, b"stale"))
        assert stale.error == k.INVALID_PRODUCER_EPOCH
        f = k.fetch(c, topic, 0, 0)
        assert f.high_watermark == 7
        assert [r.offset for b in f.batches() for r in b.records] == list(range(7))


def test_p8_duplicate_of_fifth_last_batch_still_detected(broker, topic):
    make_topic(broker.bootstrap, topic, 1)
    with k.Connection(broker.bootstrap) as c:
        pid, epoch = k.init_producer_id(c)
        batches = [idem_batch(pid, epoch, i * 2, 2, b"b%d" % i) for i in range(5)]
        offsets = []
        for b in batches:
            res = k.produce(c, topic, 0, b)
            assert res.error == 0
            offsets.append(res.base_offset)
        assert offsets == [0, 2, 4, 6, 8]
        for b, off in zip(batches, offsets):
            res = k.produce(c, topic, 0, b)
            assert res.error == 0 and res.base_offset == off
        assert k.fetch(c, topic, 0, 0).high_watermark == 10


def test_p8_old_record_timestamps_do_not_expire_producer_state(broker, topic):
    """Producer state expires on wall-clock idleness only, never because of record timestamps."""
    make_topic(broker.bootstrap, topic, 1)
    with k.Connection(broker.bootstrap) as c:
        pid, epoch = k.init_producer_id(c)
        old_ts = 1_000_000_000_000  # 2001
        b0 = k.encode_batch(recs(2, b"old"), producer_id=pid, producer_epoch=epoch, base_sequence=0,
                            timestamp=old_ts)
        assert k.produce(c, topic, 0, b0).error == 0
        b1 = k.encode_batch(recs(2, b"old2"), producer_id=pid, producer_epoch=epoch, base_sequence=2,
                            timestamp=old_ts)
        assert k.produce(c, topic, 0, b1).error == 0
        dup = k.produce(c, topic, 0, b0)
        assert dup.error == 0 and dup.base_offset == 0
        assert k.fetch(c, topic, 0, 0).high_watermark == 4


# ------------------------------------------------------------------ 11. Malformed frames
def metadata_huge_array_frame():
    # Metadata v4 request whose topics array claims 2^31-1 entries but the frame ends right after.
    header = k.Writer().i16(k.METADATA).i16(4).i32(1).string("bad").buf
    body = k.Writer().i32(0x7FFFFFFF).buf
    frame = bytes(header + body)
    return struct.pack(">i", len(frame)) + frame


def describe_log_dirs_huge_array_frame():
    # 19-byte DescribeLogDirs v1 (key 35): header + topics count 0x7FFFFFFF.
    header = k.Writer().i16(35).i16(1).i32(1).string("").buf
    frame = bytes(header + k.Writer().i32(0x7FFFFFFF).i8(0).buf)
    return struct.pack(">i", len(frame)) + frame


def unknown_api_key_frame():
    header = k.Writer().i16(32000).i16(0).i32(1).string("bad").buf
    return struct.pack(">i", len(header)) + bytes(header)


MALFORMED = {
    "http_get": b"GET / HTTP/1.1\r\nHost: localhost\r\nUser-Agent: curl/8\r\n\r\n",
    "size_zero": b"\x00\x00\x00\x00",
    "size_negative": b"\xff\xff\xff\xfe" + b"\x00" * 16,
    "size_above_max": struct.pack(">i", 200 * 1024 * 1024) + b"\x00" * 64,
    "array_count_2_31": metadata_huge_array_frame(),
    "describe_log_dirs_19_bytes": describe_log_dirs_huge_array_frame(),
    "unknown_api_key": unknown_api_key_frame(),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_p11_malformed_frame_closes_only_that_connection(broker, case):
    with k.Connection(broker.bootstrap) as bystander:
        assert k.api_versions_v0(bystander)[0] == 0
        with k.Connection(broker.bootstrap) as bad:
            bad.send_raw(MALFORMED[case])
            assert bad.is_closed_by_peer(timeout=20), f"{case}: connection not closed by the broker"
        # every other connection carries on
        assert k.api_versions_v0(bystander)[0] == 0
        with k.Connection(broker.bootstrap) as newcomer:
            assert k.api_versions_v0(newcomer)[0] == 0


class IdleTimeoutBroker(BrokerProcess):
    """A broker with `sets` given statically to Kafka too (its server.properties)."""

    def argv(self):
        argv = super().argv()
        if self.kind == "kafka":
            props = self.dir / "server.properties"
            text = props.read_text()
            if "connections.max.idle.ms" not in text:
                props.write_text(text + "".join(f"{key}={v}\n" for key, v in self.sets.items()
                                                if key == "connections.max.idle.ms"))
        return argv


def test_idle_and_stalled_connections_are_closed_active_ones_are_not():
    """`connections.max.idle.ms` (Kafka's key, default 10 min): a connection that sends nothing, and one that
    stalls after 3 bytes of a size prefix (slow-loris), are closed once that long has passed without a complete
    request; a connection sending requests stays open."""
    if MODE == "external":
        pytest.skip("needs a broker started with connections.max.idle.ms")
    idle_ms = 2000
    b = IdleTimeoutBroker({"connections.max.idle.ms": str(idle_ms)}).start()
    try:
        with k.Connection(b.bootstrap) as idle, k.Connection(b.bootstrap) as stalled, \
                k.Connection(b.bootstrap) as active:
            t0 = time.monotonic()
            stalled.send_raw(b"\x00\x00\x01")
            assert not idle.is_closed_by_peer(timeout=idle_ms / 4000), "closed long before the idle timeout"
            # keep `active` busy for three idle periods; the other two must be closed by then
            while time.monotonic() < t0 + 3 * idle_ms / 1000:
                assert k.api_versions_v0(active)[0] == 0, "an active connection was closed"
                time.sleep(0.1)
            assert idle.is_closed_by_peer(timeout=0.5), "idle connection still open after 3x the idle timeout"
            assert stalled.is_closed_by_peer(timeout=0.5), "stalled frame still open after 3x the idle timeout"
            assert k.api_versions_v0(active)[0] == 0
    finally:
        b.close()


# ------------------------------------------------------------------ 12. ApiVersions drives librdkafka features
def test_p12_api_versions_advertises_what_librdkafka_needs(broker):
    with k.Connection(broker.bootstrap) as c:
        err, apis = k.api_versions_v0(c)
    assert err == 0
    need = {k.PRODUCE: 3, k.FETCH: 4, k.LIST_OFFSETS: 1, k.METADATA: 1, k.FIND_COORDINATOR: 0,
            k.API_VERSIONS: 3, k.INIT_PRODUCER_ID: 0, k.CREATE_TOPICS: 2}
    for key, min_max in need.items():
        assert key in apis, f"api key {key} not advertised"
        assert apis[key][1] >= min_max, f"api key {key}: max v{apis[key][1]} < v{min_max}"
        assert apis[key][0] <= apis[key][1]
    assert apis[k.PRODUCE][1] >= 7 and apis[k.FETCH][1] >= 10, "zstd needs Produce v7+ and Fetch v10+"


def test_p12_librdkafka_enables_modern_features(broker):
    """librdkafka derives features from ApiVersions; check the ones pitfall 12 names are switched on."""
    import logging
    from confluent_kafka import Producer

    lines = []

    class Catch(logging.Handler):
        def emit(self, record):
            lines.append(record.getMessage())

    log = logging.getLogger("rdkafka-features")
    log.setLevel(logging.DEBUG)
    log.addHandler(Catch())
    p = Producer({"bootstrap.servers": broker.bootstrap, "debug": "feature"}, logger=log)
    want = {"MsgVer2", "ApiVersion", "LZ4", "ZSTD", "IdempotentProducer", "BrokerGroupCoordinator", "OffsetTime"}
    enabled = set()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not want <= enabled:
        p.poll(0.1)
        enabled = {m.rsplit("Enabling feature ", 1)[1].strip() for m in lines if "Enabling feature " in m}
    p.flush(5)
    assert want <= enabled, f"librdkafka features not enabled: {sorted(want - enabled)}; enabled: {sorted(enabled)}"
