"""A minimal, readable Kafka wire-protocol helper for raw-socket tests.

Only what the pitfall tests need: framing, request header v1/v2, a handful of
requests (ApiVersions, Metadata, CreateTopics, Produce, Fetch, ListOffsets,
InitProducerId) in their non-flexible versions, and RecordBatch v2
encode/decode with the five codecs. Field layouts follow the Kafka protocol
guide (https://kafka.apache.org/protocol) and the message specs.

Everything is big-endian; strings are int16-length-prefixed (-1 = null),
bytes int32-length-prefixed (-1 = null), arrays int32-count-prefixed.
"""

from __future__ import annotations

import itertools
import socket
import struct
import time
import zlib
from dataclasses import dataclass, field

import cramjam
import lz4.frame

# API keys
PRODUCE, FETCH, LIST_OFFSETS, METADATA = 0, 1, 2, 3
FIND_COORDINATOR, API_VERSIONS, CREATE_TOPICS, INIT_PRODUCER_ID = 10, 18, 19, 22

# Error codes
NONE = 0
OFFSET_OUT_OF_RANGE = 1
UNKNOWN_TOPIC_OR_PARTITION = 3
UNSUPPORTED_VERSION = 35
TOPIC_ALREADY_EXISTS = 36
OUT_OF_ORDER_SEQUENCE_NUMBER = 45
INVALID_PRODUCER_EPOCH = 47
UNSUPPORTED_COMPRESSION_TYPE = 76

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


# ---------------------------------------------------------------- primitives
class Writer:
    def __init__(self) -> None:
        self.buf = bytearray()

    def i8(self, v):  self.buf += struct.pack(">b", v); return self
    def i16(self, v): self.buf += struct.pack(">h", v); return self
    def i32(self, v): self.buf += struct.pack(">i", v); return self
    def i64(self, v): self.buf += struct.pack(">q", v); return self
    def u32(self, v): self.buf += struct.pack(">I", v); return self
    def raw(self, b): self.buf += b; return self

    def string(self, s):
        if s is None:
            return self.i16(-1)
        b = s.encode()
        return self.i16(len(b)).raw(b)

    def bytes_(self, b):
        if b is None:
            return self.i32(-1)
        return self.i32(len(b)).raw(b)

    def uvarint(self, v):
        while True:
            byte = v & 0x7F
            v >>= 7
            if v:
                self.buf.append(byte | 0x80)
            else:
                self.buf.append(byte)
                return self

    def varint(self, v):  # zig-zag, also used for varlong
        return self.uvarint((v << 1) ^ (v >> 63))

    def compact_string(self, s):
        if s is None:
            return self.uvarint(0)
        b = s.encode()
        return self.uvarint(len(b) + 1).raw(b)

    def tags(self):  # empty tagged-field section
        return self.uvarint(0)


class Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def _unpack(self, fmt, n):
        if self.pos + n > len(self.data):
            raise ValueError(f"truncated: need {n} at {self.pos}, have {len(self.data)}")
        (v,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += n
        return v

    def i8(self):  return self._unpack(">b", 1)
    def i16(self): return self._unpack(">h", 2)
    def i32(self): return self._unpack(">i", 4)
    def i64(self): return self._unpack(">q", 8)
    def u32(self): return self._unpack(">I", 4)

    def raw(self, n):
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError(f"truncated: need {n} at {self.pos}, have {len(self.data)}")
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def string(self):
        n = self.i16()
        return None if n < 0 else self.raw(n).decode()

    def bytes_(self):
        n = self.i32()
        return None if n < 0 else self.raw(n)

    def array(self, fn):
        n = self.i32()
        return None if n < 0 else [fn(self) for _ in range(n)]

    def uvarint(self):
        shift = result = 0
        while True:
            b = self.raw(1)[0]
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7

    def varint(self):
        v = self.uvarint()
        return (v >> 1) ^ -(v & 1)

    def remaining(self):
        return len(self.data) - self.pos


# ---------------------------------------------------------------- CRC-32C
def _crc32c_table():
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    t = _CRC_TABLE
    for b in data:
        crc = t[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


# ---------------------------------------------------------------- codecs
def compress(codec: str, data: bytes) -> bytes:
    if codec == "none":
        return data
    if codec == "gzip":
        return bytes(cramjam.gzip.compress(data))
    if codec == "snappy":  # raw snappy, as librdkafka sends it
        return bytes(cramjam.snappy.compress_raw(data))
    if codec == "lz4":  # LZ4 frame format, independent blocks (Kafka rejects linked blocks)
        return lz4.frame.compress(data, block_linked=False)
    if codec == "zstd":
        return bytes(cramjam.zstd.compress(data))
    raise ValueError(codec)


def decompress(codec_id: int, data: bytes) -> bytes:
    if codec_id == 0:
        return data
    if codec_id == 1:
        return zlib.decompress(data, 47)
    if codec_id == 2:
        if data[:8] == b"\x82SNAPPY\x00":  # xerial framing (Java client)
            out, pos = bytearray(), 16
            while pos < len(data):
                (n,) = struct.unpack_from(">i", data, pos)
                out += cramjam.snappy.decompress_raw(data[pos + 4:pos + 4 + n])
                pos += 4 + n
            return bytes(out)
        return bytes(cramjam.snappy.decompress_raw(data))
    if codec_id == 3:
        return lz4.frame.decompress(data)
    if codec_id == 4:
        return bytes(cramjam.zstd.decompress(data))
    raise ValueError(f"unknown codec id {codec_id}")


# ---------------------------------------------------------------- RecordBatch v2
@dataclass
class Record:
    key: bytes | None
    value: bytes | None
    headers: list = field(default_factory=list)  # [(str, bytes|None)]
    offset: int = -1
    timestamp: int = -1


@dataclass
class Batch:
    base_offset: int
    last_offset_delta: int
    attributes: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records: list
    crc_ok: bool

    @property
    def codec(self):
        return self.attributes & 0x7

    @property
    def last_offset(self):
        return self.base_offset + self.last_offset_delta


def encode_batch(records, codec="none", producer_id=-1, producer_epoch=-1, base_sequence=-1,
                 timestamp=None, transactional=False) -> bytes:
    """Encode `records` (list of Record) as one RecordBatch v2 with base offset 0 (attribute bit 4 set
    when `transactional`)."""
    ts = int(time.time() * 1000) if timestamp is None else timestamp
    body = Writer()
    for i, r in enumerate(records):
        rec = Writer().i8(0).varint(0).varint(i)
        if r.key is None:
            rec.varint(-1)
        else:
            rec.varint(len(r.key)).raw(r.key)
        if r.value is None:
            rec.varint(-1)
        else:
            rec.varint(len(r.value)).raw(r.value)
        rec.varint(len(r.headers))
        for hk, hv in r.headers:
            hkb = hk.encode()
            rec.varint(len(hkb)).raw(hkb)
            if hv is None:
                rec.varint(-1)
            else:
                rec.varint(len(hv)).raw(hv)
        body.varint(len(rec.buf)).raw(rec.buf)
    payload = compress(codec, bytes(body.buf))
    attributes = CODECS[codec] | (0x10 if transactional else 0)
    after_crc = (Writer().i16(attributes).i32(len(records) - 1).i64(ts).i64(ts)
                 .i64(producer_id).i16(producer_epoch).i32(base_sequence).i32(len(records))
                 .raw(payload))
    crc = crc32c(bytes(after_crc.buf))
    # batchLength counts from partitionLeaderEpoch to the end.
    batch_len = 4 + 1 + 4 + len(after_crc.buf)
    return bytes(Writer().i64(0).i32(batch_len).i32(-1).i8(2).u32(crc).raw(after_crc.buf).buf)


def decode_batches(data: bytes | None) -> list:
    """Decode a records field into Batches. A trailing partial batch is ignored (as clients do)."""
    out = []
    if not data:
        return out
    pos = 0
    while pos + 12 <= len(data):
        base_offset, batch_len = struct.unpack_from(">qi", data, pos)
        if pos + 12 + batch_len > len(data):
            break  # partial batch at the end of a size-limited fetch
        r = Reader(data[pos + 12:pos + 12 + batch_len])
        pos += 12 + batch_len
        r.i32()  # partitionLeaderEpoch
        magic = r.i8()
        if magic != 2:
            raise ValueError(f"magic {magic}")
        crc = r.u32()
        crc_ok = crc32c(r.data[r.pos:]) == crc
        attributes = r.i16()
        last_offset_delta = r.i32()
        first_ts = r.i64()
        r.i64()
        producer_id = r.i64()
        producer_epoch = r.i16()
        base_sequence = r.i32()
        count = r.i32()
        rr = Reader(decompress(attributes & 7, r.raw(r.remaining())))
        records = []
        for _ in range(count):
            length = rr.varint()
            rec = Reader(rr.raw(length))
            rec.i8()
            ts_delta = rec.varint()
            off_delta = rec.varint()
            kl = rec.varint()
            key = None if kl < 0 else rec.raw(kl)
            vl = rec.varint()
            value = None if vl < 0 else rec.raw(vl)
            headers = []
            for _ in range(rec.varint()):
                hk = rec.raw(rec.varint()).decode()
                hl = rec.varint()
                headers.append((hk, None if hl < 0 else rec.raw(hl)))
            records.append(Record(key, value, headers, base_offset + off_delta, first_ts + ts_delta))
        out.append(Batch(base_offset, last_offset_delta, attributes, producer_id, producer_epoch,
                         base_sequence, records, crc_ok))
    return out


# ---------------------------------------------------------------- connection
class Connection:
    """One TCP connection speaking Kafka framing. Request header v1 (v2 for flexible requests)."""

    def __init__(self, bootstrap: str, timeout: float = 30.0, client_id: str = "runnel-raw-test"):
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.client_id = client_id
        self._corr = itertools.count(1)

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send_raw(self, data: bytes):
        self.sock.sendall(data)

    def send(self, api_key: int, version: int, body: bytes, flexible_header=False,
             correlation_id=None) -> int:
        corr = next(self._corr) if correlation_id is None else correlation_id
        h = Writer().i16(api_key).i16(version).i32(corr).string(self.client_id)
        if flexible_header:
            h.tags()
        frame = bytes(h.buf) + body
        self.sock.sendall(struct.pack(">i", len(frame)) + frame)
        return corr

    def _recv_exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError(f"connection closed after {len(buf)} of {n} bytes")
            buf += chunk
        return bytes(buf)

    def recv(self, flexible_header=False):
        """Read one response frame; returns (correlation_id, Reader positioned at the body)."""
        (size,) = struct.unpack(">i", self._recv_exact(4))
        r = Reader(self._recv_exact(size))
        corr = r.i32()
        if flexible_header:
            r.uvarint()  # tagged fields (assumed empty)
            # a non-empty tag section would need skipping; the tests only use empty ones
        return corr, r

    def request(self, api_key, version, body, flexible_header=False, flexible_response=False):
        corr = self.send(api_key, version, body, flexible_header)
        got, r = self.recv(flexible_response)
        assert got == corr, f"correlation id {got} != {corr}"
        return r

    def is_closed_by_peer(self, timeout: float = 10.0) -> bool:
        """True if the peer closes (EOF or reset) within `timeout` without sending anything."""
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(1)
            return data == b""
        except (ConnectionResetError, BrokenPipeError):
            return True
        except socket.timeout:
            return False


# ---------------------------------------------------------------- requests
def api_versions_v0(conn: Connection):
    """ApiVersions v0 → (error_code, {api_key: (min, max)})."""
    r = conn.request(API_VERSIONS, 0, b"")
    return parse_api_versions_v0(r)


def parse_api_versions_v0(r: Reader):
    err = r.i16()
    apis = {}
    for _ in range(r.i32()):
        k, lo, hi = r.i16(), r.i16(), r.i16()
        apis[k] = (lo, hi)
    return err, apis


def create_topic(conn: Connection, name: str, partitions=1, configs=None, timeout_ms=30000):
    """CreateTopics v4 → error code for `name` (0 or 36 TOPIC_ALREADY_EXISTS are both fine for callers)."""
    w = Writer().i32(1).string(name).i32(partitions).i16(1).i32(0)
    configs = configs or {}
    w.i32(len(configs))
    for k, v in configs.items():
        w.string(k).string(v)
    w.i32(timeout_ms).i8(0)
    r = conn.request(CREATE_TOPICS, 4, bytes(w.buf))
    r.i32()  # throttle
    results = r.array(lambda r: (r.string(), r.i16(), r.string()))
    return results[0][1]


def metadata(conn: Connection, topics, version=8):
    """Metadata v4..v8 → {topic: (error, {partition: leader})}."""
    w = Writer().i32(len(topics))
    for t in topics:
        w.string(t)
    w.i8(1)  # allow_auto_topic_creation
    if version >= 8:
        w.i8(0).i8(0)
    r = conn.request(METADATA, version, bytes(w.buf))
    r.i32()  # throttle
    r.array(lambda r: (r.i32(), r.string(), r.i32(), r.string()))  # brokers
    r.string()  # cluster id
    r.i32()  # controller id
    out = {}
    for _ in range(r.i32()):
        err, name, _internal = r.i16(), r.string(), r.i8()
        parts = {}
        for _ in range(r.i32()):
            perr, pidx, leader = r.i16(), r.i32(), r.i32()
            if version >= 7:
                r.i32()  # leader epoch
            r.array(lambda r: r.i32())
            r.array(lambda r: r.i32())
            if version >= 5:
                r.array(lambda r: r.i32())
            parts[pidx] = (perr, leader)
        if version >= 8:
            r.i32()
        out[name] = (err, parts)
    return out


def produce_body(topic, partition, batch: bytes | None, acks=-1, timeout_ms=30000,
                 transactional_id=None) -> bytes:
    return bytes(Writer().string(transactional_id).i16(acks).i32(timeout_ms)
                 .i32(1).string(topic).i32(1).i32(partition).bytes_(batch).buf)


@dataclass
class ProducePartition:
    error: int
    base_offset: int
    log_append_time: int
    log_start_offset: int


def parse_produce(r: Reader, version: int) -> ProducePartition:
    topics = []
    for _ in range(r.i32()):
        r.string()
        for _ in range(r.i32()):
            r.i32()
            err, base = r.i16(), r.i64()
            lat = r.i64() if version >= 2 else -1
            lso = r.i64() if version >= 5 else -1
            if version >= 8:
                r.array(lambda r: (r.i32(), r.string()))
                r.string()
            topics.append(ProducePartition(err, base, lat, lso))
    return topics[0]


def produce(conn: Connection, topic, partition, batch: bytes, acks=-1, version=8) -> ProducePartition:
    r = conn.request(PRODUCE, version, produce_body(topic, partition, batch, acks))
    return parse_produce(r, version)


def fetch_body(topic, partition, offset, version=11, max_wait_ms=0, min_bytes=1,
               max_bytes=50 * 1024 * 1024, partition_max_bytes=1024 * 1024, partitions=None,
               isolation_level=0, rack_id="") -> bytes:
    """Fetch v4..v11 body for one topic; `partitions` = [(partition, offset)] overrides partition/offset;
    `rack_id` is the consumer's `client.rack` (v11+, KIP-392)."""
    partitions = partitions or [(partition, offset)]
    w = Writer().i32(-1).i32(max_wait_ms).i32(min_bytes).i32(max_bytes).i8(isolation_level)
    if version >= 7:
        w.i32(0).i32(-1)  # session id, session epoch (-1 = full fetch, no session)
    w.i32(1).string(topic).i32(len(partitions))
    for p, off in partitions:
        w.i32(p)
        if version >= 9:
            w.i32(-1)  # current leader epoch
        w.i64(off)
        if version >= 5:
            w.i64(-1)  # log start offset (followers only)
        w.i32(partition_max_bytes)
    if version >= 7:
        w.i32(0)  # forgotten topics
    if version >= 11:
        w.string(rack_id)  # rack id
    return bytes(w.buf)


@dataclass
class FetchPartition:
    partition: int
    error: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    aborted: list | None
    preferred_read_replica: int
    records: bytes | None
    records_length: int  # the raw int32 length field (-1 = null)

    def batches(self):
        return decode_batches(self.records)


def parse_fetch_all(r: Reader, version: int) -> dict:
    """Parse a Fetch v4..v11 response → {partition: FetchPartition}; asserts no trailing bytes."""
    r.i32()  # throttle
    if version >= 7:
        top_err = r.i16()
        assert top_err == 0, f"top-level fetch error {top_err}"
        r.i32()  # session id
    parts = {}
    for _ in range(r.i32()):
        r.string()
        for _ in range(r.i32()):
            p = r.i32()
            err, hw = r.i16(), r.i64()
            lso = r.i64() if version >= 4 else -1
            lso2 = r.i64() if version >= 5 else -1
            aborted = r.array(lambda r: (r.i64(), r.i64())) if version >= 4 else None
            prr = r.i32() if version >= 11 else -1
            n = r.i32()
            recs = None if n < 0 else r.raw(n)
            parts[p] = FetchPartition(p, err, hw, lso, lso2, aborted, prr, recs, n)
    assert r.remaining() == 0, f"{r.remaining()} trailing bytes in Fetch v{version} response"
    return parts


def parse_fetch(r: Reader, version: int) -> FetchPartition:
    parts = parse_fetch_all(r, version)
    assert len(parts) == 1, parts
    return next(iter(parts.values()))


def fetch(conn: Connection, topic, partition, offset, version=11, **kw) -> FetchPartition:
    r = conn.request(FETCH, version, fetch_body(topic, partition, offset, version, **kw))
    return parse_fetch(r, version)


def list_offsets(conn: Connection, topic, partition, timestamp, version=4, isolation_level=0):
    """ListOffsets v1..v5 → (error, timestamp, offset). timestamp -1 latest, -2 earliest."""
    w = Writer().i32(-1)
    if version >= 2:
        w.i8(isolation_level)
    w.i32(1).string(topic).i32(1).i32(partition)
    if version >= 4:
        w.i32(-1)
    w.i64(timestamp)
    r = conn.request(LIST_OFFSETS, version, bytes(w.buf))
    if version >= 2:
        r.i32()
    r.i32(); r.string(); r.i32(); r.i32()
    err, ts, off = r.i16(), r.i64(), r.i64()
    return err, ts, off


def init_producer_id(conn: Connection, timeout: float = 30.0):
    """InitProducerId v1 (no transactional id) → (producer_id, epoch). Retries retriable coordinator
    errors (14 COORDINATOR_LOAD_IN_PROGRESS, 15 COORDINATOR_NOT_AVAILABLE, 16 NOT_COORDINATOR) for `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        r = conn.request(INIT_PRODUCER_ID, 1, bytes(Writer().string(None).i32(60000).buf))
        r.i32()
        err, pid, epoch = r.i16(), r.i64(), r.i16()
        if err == 0:
            return pid, epoch
        if err not in (14, 15, 16) or time.monotonic() > deadline:
            raise AssertionError(f"InitProducerId error {err}")
        time.sleep(0.2)


def wait_topic_ready(conn: Connection, topic: str, partitions: int, timeout: float = 30.0):
    """Poll Metadata until every partition of `topic` has a leader (bounded)."""
    deadline = time.monotonic() + timeout
    while True:
        md = metadata(conn, [topic])
        err, parts = md.get(topic, (-1, {}))
        if err == 0 and len(parts) == partitions and all(p[0] == 0 and p[1] >= 0 for p in parts.values()):
            # the partition leader itself must be serving (Kafka answers 6 for a moment after creation)
            if all(list_offsets(conn, topic, p, -1)[0] == 0 for p in range(partitions)):
                return
        if time.monotonic() > deadline:
            raise TimeoutError(f"topic {topic} not ready: {md}")
        time.sleep(0.1)


def metadata_brokers(conn: Connection) -> list:
    """Node ids of the brokers in a Metadata v1 response (no topics requested)."""
    r = conn.request(METADATA, 1, bytes(Writer().i32(0).buf))
    return [b[0] for b in r.array(lambda r: (r.i32(), r.string(), r.i32(), r.string()))]


# ---------------------------------------------------------------- flexible-version helpers
def compact_array(w: "Writer", items, fn) -> "Writer":
    """A compact (flexible-version) array: length + 1 as an unsigned varint, then `fn(w, item)` for each."""
    w.uvarint(len(items) + 1)
    for it in items:
        fn(w, it)
    return w


def read_compact_array(r: "Reader", fn):
    """A compact array read with `fn(r)` per item; None for a null array."""
    n = r.uvarint() - 1
    return None if n < 0 else [fn(r) for _ in range(n)]


def read_compact_string(r: "Reader"):
    """A compact nullable string."""
    n = r.uvarint() - 1
    return None if n < 0 else r.raw(n).decode()


# ---------------------------------------------------------------- fetch sessions (KIP-227)
def session_fetch_body(session_id: int, epoch: int, topics, forgotten=(), replica_id=-1, max_wait_ms=0,
                       min_bytes=1, max_bytes=50 * 1024 * 1024, partition_max_bytes=1024 * 1024,
                       version=11) -> bytes:
    """Fetch v7..v11 body with a session: `topics` = [(topic, [(partition, offset), ...])], `forgotten` =
    [(topic, [partition, ...])]; `replica_id` ≥ 0 is a follower's fetch."""
    assert 7 <= version <= 11, version
    w = Writer().i32(replica_id).i32(max_wait_ms).i32(min_bytes).i32(max_bytes).i8(0)
    w.i32(session_id).i32(epoch)
    w.i32(len(topics))
    for name, parts in topics:
        w.string(name).i32(len(parts))
        for p, off in parts:
            w.i32(p)
            if version >= 9:
                w.i32(-1)  # current leader epoch
            w.i64(off).i64(-1).i32(partition_max_bytes)
    w.i32(len(forgotten))
    for name, parts in forgotten:
        w.string(name).i32(len(parts))
        for p in parts:
            w.i32(p)
    if version >= 11:
        w.string("")  # rack id
    return bytes(w.buf)


@dataclass
class SessionFetch:
    error: int
    session_id: int
    partitions: list  # [(topic, FetchPartition)] in answer order


def parse_session_fetch(r: Reader, version: int = 11) -> SessionFetch:
    """A Fetch v7..v11 response with its top-level error and session id (no assertion on the error)."""
    r.i32()  # throttle
    err, session_id = r.i16(), r.i32()
    parts = []
    for _ in range(r.i32()):
        name = r.string()
        for _ in range(r.i32()):
            p = r.i32()
            perr, hw, lso, lso2 = r.i16(), r.i64(), r.i64(), r.i64()
            aborted = r.array(lambda r: (r.i64(), r.i64()))
            prr = r.i32() if version >= 11 else -1
            n = r.i32()
            recs = None if n < 0 else r.raw(n)
            parts.append((name, FetchPartition(p, perr, hw, lso, lso2, aborted, prr, recs, n)))
    assert r.remaining() == 0, f"{r.remaining()} trailing bytes in Fetch v{version} response"
    return SessionFetch(err, session_id, parts)


def session_fetch(conn: Connection, session_id: int, epoch: int, topics, version=11, **kw) -> SessionFetch:
    r = conn.request(FETCH, version, session_fetch_body(session_id, epoch, topics, version=version, **kw))
    return parse_session_fetch(r, version)


def session_fetch_v13_empty(conn: Connection, session_id: int, epoch: int) -> tuple[int, int]:
    """A Fetch v13 (topic ids, flexible) naming no partition → (top-level error, session id)."""
    w = Writer().i32(-1).i32(0).i32(1).i32(1 << 20).i8(0).i32(session_id).i32(epoch)
    w.uvarint(1)  # topics: empty compact array
    w.uvarint(1)  # forgotten topics: empty
    w.compact_string("")  # rack id
    w.tags()
    r = conn.request(FETCH, 13, bytes(w.buf), flexible_header=True, flexible_response=True)
    r.i32()  # throttle
    return r.i16(), r.i32()
