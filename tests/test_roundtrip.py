"""Per client and codec: 100,000 records round trip, byte-identical and in order.

Clients: confluent-kafka-python (librdkafka 2.16), kafka-python, the Java client (tests/java), and kcat
(Debian's, librdkafka 2.0.2: the "old client"). Records come from tests/records.py: keys, values and headers
including null versus empty. After each produce a raw Fetch checks that the stored batches carry the
codec's attribute bits (pitfall 7) with valid CRCs.

RUNNEL_TEST_RECORDS overrides the record count (default 100000).
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

import kproto as k
import records
from conftest import ROOT, make_topic

pytestmark = pytest.mark.roundtrip

N = int(os.environ.get("RUNNEL_TEST_RECORDS", "100000"))
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
JAVA_DIR = ROOT / "tests" / "java" / "target"
TIMEOUT_S = 300


def assert_stored_codec(bootstrap, topic, codec):
    """The first stored batch carries the codec's attribute bits and a valid CRC-32C."""
    with k.Connection(bootstrap) as c:
        f = k.fetch(c, topic, 0, 0, partition_max_bytes=256 * 1024)
        assert f.error == 0 and f.high_watermark == N
        batches = f.batches()
        assert batches, "no batch returned from offset 0"
        assert {b.codec for b in batches} == {k.CODECS[codec]}, [b.codec for b in batches]
        assert all(b.crc_ok for b in batches)


def assert_same(got_lines, seed, what, want=None):
    want = want or records.expected_lines(seed, N)
    diff = records.first_difference(got_lines, want)
    assert not diff, f"{what}: {diff}"


# ------------------------------------------------------------------ confluent-kafka (librdkafka 2.16)
def confluent_produce(bootstrap, topic, seed, codec):
    from confluent_kafka import Producer

    errors = []
    p = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "enable.idempotence": True,
                  "acks": "all", "linger.ms": 20, "batch.size": 1_000_000, "queue.buffering.max.messages": N + 10})

    def on_delivery(err, _msg):
        if err is not None:
            errors.append(err)

    for key, value, headers in records.records(seed, N):
        p.produce(topic, value=value, key=key, partition=0, headers=headers or None, on_delivery=on_delivery)
    left = p.flush(TIMEOUT_S)
    assert left == 0, f"{left} records not delivered"
    assert not errors, f"{len(errors)} delivery errors, first: {errors[0]}"


def confluent_consume(bootstrap, topic):
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}", "enable.auto.commit": False,
                  "fetch.max.bytes": 52428800, "max.partition.fetch.bytes": 10485760})
    c.assign([TopicPartition(topic, 0, 0)])
    out = []
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while len(out) < N and time.monotonic() < deadline:
            for m in c.consume(num_messages=10000, timeout=1.0):
                assert m.error() is None, m.error()
                assert m.offset() == len(out), f"offset {m.offset()} at position {len(out)}"
                out.append(records.canonical(m.key(), m.value(), m.headers()))
    finally:
        c.close()
    return out


def kcat_render(seed):
    """What `kcat -f '%K %S %k%s\\n'` prints for the shared records: lengths (-1 = null) and raw bytes.
    (kcat prints header values as C strings, so binary headers cannot be compared through it.)"""
    return [b"%d %d " % (-1 if key is None else len(key), -1 if value is None else len(value))
            + (key or b"") + (value or b"") + b"\n" for key, value, _ in records.records(seed, N)]


def kcat_consume_raw(bootstrap, topic, fmt, count=N):
    res = subprocess.run(["kcat", "-b", bootstrap, "-C", "-t", topic, "-p", "0", "-o", "beginning",
                          "-c", str(count), "-e", "-q", "-f", fmt], capture_output=True, timeout=TIMEOUT_S)
    assert res.returncode == 0, res.stderr.decode(errors="replace")[-2000:]
    return res.stdout


@pytest.mark.parametrize("codec", CODECS)
def test_confluent_kafka_roundtrip(broker, topic, codec):
    seed = f"confluent-{codec}"
    make_topic(broker.bootstrap, topic, 1)
    confluent_produce(broker.bootstrap, topic, seed, codec)
    assert_stored_codec(broker.bootstrap, topic, codec)
    assert_same(confluent_consume(broker.bootstrap, topic), seed, "confluent-kafka")
    # the old client (kcat, librdkafka 2.0.2) reads the same binary records, null vs empty included
    got = kcat_consume_raw(broker.bootstrap, topic, "%K %S %k%s\n")
    want = b"".join(kcat_render(seed))
    if got != want:
        pos = next(i for i in range(min(len(got), len(want))) if got[i:i + 1] != want[i:i + 1]) \
            if got[:len(want)] != want[:len(got)] else min(len(got), len(want))
        pytest.fail(f"kcat output differs at byte {pos}: got {got[pos - 60:pos + 60]!r} "
                    f"want {want[pos - 60:pos + 60]!r}")


# ------------------------------------------------------------------ kafka-python
def kafka_python_records(seed):
    """kafka-python refuses a record whose key and value are both null (those get the key b"\\0") and
    null header values (those become b"null")."""
    return [(b"\0" if key is None and value is None else key, value,
             [(hk, b"null" if hv is None else hv) for hk, hv in headers])
            for key, value, headers in records.records(seed, N)]


def kafka_python_produce(bootstrap, topic, seed, codec):
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=bootstrap, compression_type=None if codec == "none" else codec,
                      acks="all", linger_ms=20, batch_size=512 * 1024, max_in_flight_requests_per_connection=1)
    futures = [p.send(topic, value=value, key=key, partition=0, headers=headers)
               for key, value, headers in kafka_python_records(seed)]
    p.flush(timeout=TIMEOUT_S)
    for i, f in enumerate(futures):
        md = f.get(timeout=TIMEOUT_S)
        assert md.offset == i, f"record {i} stored at offset {md.offset}"
    p.close()


def kafka_python_consume(bootstrap, topic):
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, max_poll_records=10000,
                      fetch_max_bytes=52428800, max_partition_fetch_bytes=10485760)
    tp = TopicPartition(topic, 0)
    c.assign([tp])
    c.seek_to_beginning(tp)
    out = []
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while len(out) < N and time.monotonic() < deadline:
            for msgs in c.poll(timeout_ms=1000).values():
                for m in msgs:
                    assert m.offset == len(out), f"offset {m.offset} at position {len(out)}"
                    out.append(records.canonical(m.key, m.value, m.headers))
    finally:
        c.close()
    return out


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_roundtrip(broker, topic, codec):
    seed = f"kafka-python-{codec}"
    make_topic(broker.bootstrap, topic, 1)
    kafka_python_produce(broker.bootstrap, topic, seed, codec)
    assert_stored_codec(broker.bootstrap, topic, codec)
    want = [records.canonical(*r) for r in kafka_python_records(seed)]
    assert_same(kafka_python_consume(broker.bootstrap, topic), seed, "kafka-python", want)


# ------------------------------------------------------------------ Java client (kafka-clients 4.4.0)
def java(*args, timeout=TIMEOUT_S):
    if not (JAVA_DIR / "runnel-client-test.jar").exists():
        pytest.fail("tests/java not built: run scripts/install-test-deps.sh (scripts/test.sh does)")
    cp = f"{JAVA_DIR / 'runnel-client-test.jar'}:{JAVA_DIR / 'lib'}/*"
    res = subprocess.run(["java", "-XX:TieredStopAtLevel=1", "-cp", cp, "dev.runnel.clienttest.ClientTest",
                          *args], capture_output=True, text=True, timeout=timeout)
    assert res.returncode == 0, f"java {args[0]} failed:\n{res.stdout[-2000:]}\n{res.stderr[-4000:]}"
    return res.stdout


@pytest.mark.parametrize("codec", CODECS)
def test_java_client_roundtrip(broker, topic, codec, tmp_path):
    seed = f"java-{codec}"
    make_topic(broker.bootstrap, topic, 1)
    java("produce", "--bootstrap", broker.bootstrap, "--topic", topic, "--count", str(N), "--seed", seed,
         "--codec", codec, "--acks", "all")
    assert_stored_codec(broker.bootstrap, topic, codec)
    out = tmp_path / "consumed.txt"
    java("consume", "--bootstrap", broker.bootstrap, "--topic", topic, "--count", str(N), "--out", str(out))
    assert_same(out.read_text().splitlines(), seed, "java client")


# ------------------------------------------------------------------ kcat (librdkafka 2.0.2)
def kcat_lines(seed):
    """kcat's producer reads text lines: keys and values are hex text; a line without the tab has a null
    key, an empty key before the tab is an empty key (kcat cannot send a null value without -Z)."""
    out = []
    for key, value, _ in records.records(seed, N):
        v = "" if value is None else value.hex()
        if key is None and not v:
            key = b""  # kcat skips empty lines
        out.append(v if key is None else f"{key.hex()}\t{v}")
    return out


@pytest.mark.parametrize("codec", CODECS)
def test_kcat_roundtrip(broker, topic, codec, tmp_path):
    seed = f"kcat-{codec}"
    make_topic(broker.bootstrap, topic, 1)
    lines = kcat_lines(seed)
    src = tmp_path / "in.txt"
    src.write_text("\n".join(lines) + "\n")
    res = subprocess.run(["kcat", "-b", broker.bootstrap, "-P", "-t", topic, "-p", "0", "-K", "\t", "-z", codec,
                          "-H", f"codec={codec}", "-H", "empty=", "-X", "enable.idempotence=true",
                          "-X", "linger.ms=20", "-l", str(src)], capture_output=True, timeout=TIMEOUT_S)
    assert res.returncode == 0, res.stderr.decode(errors="replace")[-2000:]
    assert_stored_codec(broker.bootstrap, topic, codec)
    got = kcat_consume_raw(broker.bootstrap, topic, "%o %K %S %k\t%s %h\n").decode().splitlines()
    want = []
    for i, line in enumerate(lines):
        key, value = line.split("\t") if "\t" in line else (None, line)
        want.append(f"{i} {-1 if key is None else len(key)} {len(value)} {key or ''}\t{value} "
                    f"codec={codec},empty=")
    diff = records.first_difference(got, want)
    assert not diff, f"kcat: {diff}"


@pytest.mark.parametrize("acks", ["1", "0"])
def test_java_client_other_acks(broker, topic, acks, tmp_path):
    """acks=1 and acks=0 (no response at all, pitfall 2) with a real client: every record still stored."""
    seed = f"java-acks{acks}"
    make_topic(broker.bootstrap, topic, 1)
    java("produce", "--bootstrap", broker.bootstrap, "--topic", topic, "--count", str(N), "--seed", seed,
         "--codec", "lz4", "--acks", acks)
    out = tmp_path / "consumed.txt"
    java("consume", "--bootstrap", broker.bootstrap, "--topic", topic, "--count", str(N), "--out", str(out))
    assert_same(out.read_text().splitlines(), seed, f"java client acks={acks}")
