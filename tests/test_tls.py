"""Named listeners and TLS (issue 14, first slice): a real `runnel` with a PLAINTEXT and an SSL listener.

- confluent-kafka (librdkafka) and kafka-python produce and consume over SSL (PEM and PKCS12 key stores,
  an encrypted PEM key, inline PEM);
- mutual TLS with `ssl.client.auth=required`: a client without a certificate, with one from an untrusted CA
  or with an expired one is refused; the principal from the certificate (after
  `ssl.principal.mapping.rules`) is in the broker's debug log;
- Metadata answers with the endpoints of the listener the client came in on;
- bad input on the SSL port (garbage, a plaintext Kafka request, a stalled handshake) closes that connection
  and the broker serves on;
- bad listener combinations stop the broker at startup with Kafka's message;
- three processes whose inter-broker listener is SSL replicate (the fetchers connect with TLS).

Certificates are made at test time (tests/tls_certs.py).
"""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import time
import uuid

import pytest

import kproto
from conftest import MODE, RUNNEL_BIN, BrokerProcess, free_port, kafka_python_read
from tls_certs import PASSWORD, Certs

pytestmark = pytest.mark.skipif(MODE != "runnel", reason="starts runnel with its own listeners")


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return Certs(tmp_path_factory.mktemp("certs"))


def tls_broker(sets: dict, monkeypatch=None) -> tuple[BrokerProcess, str]:
    """A broker with PLAINTEXT on its bootstrap port and SSL on another; returns it and the SSL address."""
    b = BrokerProcess(dict(sets))
    ssl_port = free_port()
    b.sets["listeners"] = f"PLAINTEXT://{b.bootstrap},SSL://127.0.0.1:{ssl_port}"
    b.start()
    return b, f"127.0.0.1:{ssl_port}"


def pem_keystore(certs: Certs, **extra) -> dict:
    return {"ssl.keystore.type": "PEM", "ssl.keystore.location": certs.server_pem, **extra}


def ssl_conf(certs: Certs, bootstrap: str, client_cert: str | None = None, **extra) -> dict:
    conf = {"bootstrap.servers": bootstrap, "security.protocol": "SSL", "ssl.ca.location": certs.ca}
    if client_cert:
        conf["ssl.certificate.location"] = getattr(certs, f"{client_cert}_cert")
        conf["ssl.key.location"] = getattr(certs, f"{client_cert}_key")
    conf.update(extra)
    return conf


def roundtrip_confluent(conf: dict, topic: str, n: int = 200):
    from confluent_kafka import Consumer, Producer
    p = Producer({**conf, "acks": "all", "linger.ms": 5})
    for i in range(n):
        p.produce(topic, value=b"v%05d" % i, key=b"k")
    assert p.flush(30) == 0, "records left undelivered over SSL"
    c = Consumer({**conf, "group.id": f"g-{uuid.uuid4().hex[:6]}", "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got = []
    deadline = time.monotonic() + 60
    try:
        while len(got) < n and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got.append(m.value())
    finally:
        c.close()
    assert got == [b"v%05d" % i for i in range(n)]


def test_confluent_produces_and_consumes_over_ssl_with_a_pem_keystore(certs, topic):
    b, ssl_addr = tls_broker(pem_keystore(certs))
    try:
        roundtrip_confluent(ssl_conf(certs, ssl_addr), topic)
    finally:
        b.close()


@pytest.mark.parametrize("store", ["pkcs12", "encrypted-pem", "inline-pem"])
def test_kafka_python_over_ssl_with_each_keystore_kind(certs, topic, store):
    from kafka import KafkaConsumer, KafkaProducer
    sets = {
        "pkcs12": {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": certs.server_p12,
                   "ssl.keystore.password": PASSWORD},
        "encrypted-pem": {"ssl.keystore.type": "PEM", "ssl.keystore.location": certs.server_pem_encrypted,
                          "ssl.key.password": PASSWORD},
        # Inline PEM goes through a properties file: the values span lines.
        "inline-pem": {},
    }[store]
    b = BrokerProcess(sets)
    ssl_port = free_port()
    b.sets["listeners"] = f"PLAINTEXT://{b.bootstrap},SSL://127.0.0.1:{ssl_port}"
    if store == "inline-pem":
        # Per-listener keys (listener.name.ssl.*) with the PEM text inline, one line each.
        chain = certs.server_cert_pem.replace("\n", "\\n")
        key = certs.server_key_pem.replace("\n", "\\n")
        b.sets.update({"listener.name.ssl.ssl.keystore.type": "PEM",
                       "listener.name.ssl.ssl.keystore.certificate.chain": chain,
                       "listener.name.ssl.ssl.keystore.key": key})
    b.start()
    try:
        kw = dict(bootstrap_servers=f"127.0.0.1:{ssl_port}", security_protocol="SSL", ssl_cafile=certs.ca)
        p = KafkaProducer(acks="all", **kw)
        for i in range(50):
            p.send(topic, value=b"x%03d" % i)
        p.flush(30)
        p.close()
        c = KafkaConsumer(topic, auto_offset_reset="earliest", group_id=f"g-{uuid.uuid4().hex[:6]}", **kw)
        try:
            got = kafka_python_read(c, 50)
        finally:
            c.close()
        assert sorted(got) == [b"x%03d" % i for i in range(50)]
    finally:
        b.close()


def tls_connection(addr: str, certs: Certs, client_cert: str | None = None) -> kproto.Connection:
    """A raw Kafka connection over TLS (verifying the broker against the test CA)."""
    ctx = ssl.create_default_context(cafile=certs.ca)
    if client_cert:
        ctx.load_cert_chain(getattr(certs, f"{client_cert}_cert"), getattr(certs, f"{client_cert}_key"))
    c = kproto.Connection(addr, timeout=10)
    c.sock = ctx.wrap_socket(c.sock, server_hostname="localhost")
    return c


def refused(addr: str, certs: Certs, client_cert: str | None) -> bool:
    """True when an ApiVersions over TLS does not get an answer (handshake or first read fails)."""
    try:
        with tls_connection(addr, certs, client_cert) as c:
            err, _ = kproto.api_versions_v0(c)
            return False
    except (ssl.SSLError, OSError, ConnectionError, ValueError):
        return True


def test_mutual_tls_required_refuses_clients_without_a_trusted_valid_cert(certs, topic, monkeypatch):
    monkeypatch.setenv("RUNNEL_LOG", "info,broker::server::network=debug")
    b, ssl_addr = tls_broker(pem_keystore(
        certs, **{"ssl.client.auth": "required", "ssl.truststore.type": "PEM",
                  "ssl.truststore.location": certs.ca,
                  "ssl.principal.mapping.rules": "RULE:^CN=([^,]+),OU=eng,.*$/$1@eng/L,DEFAULT"}))
    try:
        assert refused(ssl_addr, certs, None), "a client without a certificate was served"
        assert refused(ssl_addr, certs, "stranger"), "a certificate from an untrusted CA was accepted"
        assert refused(ssl_addr, certs, "expired"), "an expired certificate was accepted"
        with tls_connection(ssl_addr, certs, "client") as c:
            err, apis = kproto.api_versions_v0(c)
            assert err == 0 and kproto.API_VERSIONS in apis
        roundtrip_confluent(ssl_conf(certs, ssl_addr, client_cert="client"), topic, n=20)
        deadline = time.monotonic() + 10
        while "principal=User:client1@eng" not in open(b.log_path, errors="replace").read():
            assert time.monotonic() < deadline, f"no principal in the log:\n{b.log_tail()}"
            time.sleep(0.1)
        # The broker serves on after the refusals.
        ok, why = __import__("conftest").api_versions_ok(b.bootstrap)
        assert ok, why
    finally:
        b.close()


def test_requested_client_auth_lets_clients_without_a_cert_in_as_anonymous(certs, monkeypatch):
    monkeypatch.setenv("RUNNEL_LOG", "info,broker::server::network=debug")
    b, ssl_addr = tls_broker(pem_keystore(
        certs, **{"ssl.client.auth": "requested", "ssl.truststore.type": "PKCS12",
                  "ssl.truststore.location": certs.truststore_p12, "ssl.truststore.password": PASSWORD}))
    try:
        assert not refused(ssl_addr, certs, None)
        assert not refused(ssl_addr, certs, "client")
        assert refused(ssl_addr, certs, "stranger"), "requested still verifies a presented certificate"
        log = open(b.log_path, errors="replace").read()
        assert "principal=User:ANONYMOUS" in log
        assert f"principal=User:{certs.client_dn}" in log, "the default rule keeps the RFC 2253 DN"
    finally:
        b.close()


def served_ou(addr: str, certs: Certs) -> str:
    """The OU of the certificate the broker presents on `addr`."""
    with tls_connection(addr, certs) as c:
        subject = dict(x[0] for x in c.sock.getpeercert()["subject"])
        return subject["organizationalUnitName"]


def test_altering_the_keystore_location_reloads_it_without_a_restart(certs):
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                       ResourceType)
    b, ssl_addr = tls_broker(pem_keystore(certs))
    admin = AdminClient({"bootstrap.servers": b.bootstrap})

    def alter(value: str):
        res = ConfigResource(ResourceType.BROKER, "1", incremental_configs=[ConfigEntry(
            "listener.name.ssl.ssl.keystore.location", value,
            incremental_operation=AlterConfigOpType.SET)])
        return admin.incremental_alter_configs([res])[res].result(30)

    try:
        assert served_ou(ssl_addr, certs) == "brokers"
        with pytest.raises(KafkaException) as e:
            alter("/nonexistent/keystore.pem")
        assert "Validation of dynamic config update of SSLFactory failed" in str(e.value)
        assert served_ou(ssl_addr, certs) == "brokers", "a refused change must keep the old stores"
        alter(certs.server_rotated_pem)
        assert served_ou(ssl_addr, certs) == "rotated"
        # Survives a restart (the per-broker level is persisted).
        b.restart()
        assert served_ou(ssl_addr, certs) == "rotated"
    finally:
        b.close()


def metadata_endpoints(conn: kproto.Connection) -> list[tuple[int, str, int]]:
    r = conn.request(kproto.METADATA, 1, bytes(kproto.Writer().i32(0).buf))
    return [(b[0], b[1], b[2]) for b in r.array(lambda r: (r.i32(), r.string(), r.i32(), r.string()))]


def test_metadata_answers_the_endpoints_of_the_listener_the_client_came_in_on(certs):
    b = BrokerProcess(pem_keystore(certs))
    ssl_port, internal_port = free_port(), free_port()
    b.sets.update({
        "listeners": f"PLAINTEXT://{b.bootstrap},SSL://127.0.0.1:{ssl_port},INTERNAL://127.0.0.1:{internal_port}",
        "advertised.listeners": f"PLAINTEXT://{b.bootstrap},SSL://localhost:{ssl_port},"
                                f"INTERNAL://127.0.0.1:{internal_port}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,INTERNAL:PLAINTEXT",
        "inter.broker.listener.name": "INTERNAL",
    })
    b.start()
    try:
        with kproto.Connection(b.bootstrap) as c:
            assert metadata_endpoints(c) == [(1, "127.0.0.1", b.port)]
        with kproto.Connection(f"127.0.0.1:{internal_port}") as c:
            assert metadata_endpoints(c) == [(1, "127.0.0.1", internal_port)]
        with tls_connection(f"127.0.0.1:{ssl_port}", certs) as c:
            assert metadata_endpoints(c) == [(1, "localhost", ssl_port)]
        from confluent_kafka.admin import AdminClient
        md = AdminClient(ssl_conf(certs, f"localhost:{ssl_port}")).list_topics(timeout=10)
        assert [(x.id, x.host, x.port) for x in md.brokers.values()] == [(1, "localhost", ssl_port)]
    finally:
        b.close()


def closed_within(sock: socket.socket, seconds: float) -> bool:
    """True when the peer closes (EOF or reset) within `seconds`; data before the close is ignored."""
    sock.settimeout(seconds)
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            if sock.recv(4096) == b"":
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False
    return False


def test_bad_input_on_the_ssl_port_closes_only_that_connection(certs):
    b, ssl_addr = tls_broker(pem_keystore(certs))
    host, port = ssl_addr.rsplit(":", 1)
    try:
        s = socket.create_connection((host, int(port)))
        s.sendall(os.urandom(512))
        assert closed_within(s, 5), "garbage before the handshake did not close the connection"
        s.close()
        # A plaintext Kafka ApiVersions on the SSL port.
        s = socket.create_connection((host, int(port)))
        s.sendall(bytes.fromhex("0000000e00120000000000010004746573740000"))
        assert closed_within(s, 5), "a plaintext request on the SSL port was not refused"
        s.close()
        # A stalled handshake (a TLS record header and nothing more) is cut off by the handshake bound.
        s = socket.create_connection((host, int(port)))
        s.sendall(bytes.fromhex("1603010200"))
        assert closed_within(s, 20), "a stalled handshake was not closed within its bound"
        s.close()
        ok, why = __import__("conftest").api_versions_ok(b.bootstrap)
        assert ok and not refused(ssl_addr, certs, None), why
    finally:
        b.close()


@pytest.mark.parametrize("sets,message", [
    ({"listeners": "PLAINTEXT://127.0.0.1:0,FOO://127.0.0.1:0"}, "No security protocol defined for listener FOO"),
    ({"listeners": "PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0"}, "Each listener must have a different name"),
    ({"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0", "advertised.listeners": "SSL://h:1"},
     "inter.broker.listener.name must be a listener name defined in advertised.listeners"),
    ({"listeners": "PLAINTEXT://127.0.0.1:0", "advertised.listeners": "PLAINTEXT://h:1,SSL://h:2"},
     "advertised.listeners listener names must be equal to or a subset of the ones defined in listeners"),
    ({"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0"}, "an SSL listener needs a key store"),
])
def test_bad_listener_configs_stop_the_broker_with_kafkas_message(tmp_path, sets, message):
    argv = [str(RUNNEL_BIN), "server", "--data-dir", str(tmp_path / "d")]
    for k, v in sets.items():
        argv += ["--set", f"{k}={v}"]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert r.returncode != 0, r.stdout + r.stderr
    assert message in r.stdout + r.stderr


def test_three_brokers_replicate_over_an_ssl_inter_broker_listener(certs, topic):
    from test_cluster import Cluster, Stream, check_exactly_once_in_order, create_topic
    sets = {"ssl.keystore.type": "PEM", "ssl.keystore.location": certs.server_pem,
            "ssl.truststore.type": "PEM", "ssl.truststore.location": certs.ca,
            "ssl.client.auth": "required", "inter.broker.listener.name": "SSL"}
    c = Cluster(sets)
    for n in c.nodes.values():
        n.sets["listeners"] = f"PLAINTEXT://{n.bootstrap},SSL://127.0.0.1:{free_port()}"
    try:
        c.start()
        create_topic(c, topic)
        s = Stream(c.bootstrap, topic)
        s.until_acked(2000)
        s.finish()
        c.wait(lambda md: len(md.topics[topic].partitions[0].isrs) == 3, "full ISR after producing")
        check_exactly_once_in_order(c, s)
        leader = c.partition(topic).leader
        c.nodes[leader].kill9()
        c.wait(lambda md: md.topics[topic].partitions[0].leader not in (-1, leader), "a new leader")
        s2 = Stream(c.alive_bootstrap(), topic)
        s2.until_acked(200)
        s2.finish()
    finally:
        c.close()
