"""SASL authentication (issue 14): a real `runnel` with a PLAINTEXT listener (for setup) and SASL listeners.

- confluent-kafka (librdkafka) and kafka-python produce and consume over SASL_PLAINTEXT with PLAIN,
  SCRAM-SHA-256 and SCRAM-SHA-512, and over SASL_SSL with PLAIN (certificates from tests/tls_certs.py);
- Kafka's own kafka-configs tool adds a SCRAM user (AlterUserScramCredentials, KIP-554) that then
  authenticates, and describes it; credentials survive a restart;
- raw sockets (kproto): a request before authentication closes the connection; a wrong password gets
  SASL_AUTHENTICATION_FAILED (58) with Kafka's message and a close; an unknown mechanism gets
  UNSUPPORTED_SASL_MECHANISM (33) with the enabled list; a SCRAM client-final whose nonce is not the
  server's fails;
- the authorizer sees the SASL principal (`User:alice`): denied without an ACL, allowed with one;
- three processes whose inter-broker listener is SASL_PLAINTEXT replicate (the fetchers log in with PLAIN).

Codes and messages are Kafka 4.4.0's (SaslServerAuthenticator, PlainSaslServer, ScramSaslServer).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import time
import uuid

import pytest

import kproto as k
from conftest import MODE, BrokerProcess, free_port, kafka_python_read
from tls_certs import Certs

pytestmark = pytest.mark.skipif(MODE != "runnel", reason="starts runnel with its own listeners")

SASL_HANDSHAKE, SASL_AUTHENTICATE, METADATA = 17, 36, 3
UNSUPPORTED_SASL_MECHANISM, SASL_AUTHENTICATION_FAILED = 33, 58
TOPIC_AUTHORIZATION_FAILED = 29
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
CONFIG_TOOL = "org.apache.kafka.tools.ConfigCommand"


def plain_jaas(**users) -> str:
    opts = " ".join(f'user_{u}="{p}"' for u, p in users.items())
    return f"{PLAIN_MODULE} required {opts};"


def sasl_broker(listener="SASL_PLAINTEXT", mechanisms="PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", extra=None):
    """A broker with PLAINTEXT on its bootstrap port and a SASL listener on another; returns it and the SASL
    address. PLAIN users: alice/alice-secret, admin/admin-secret."""
    b = BrokerProcess(dict(extra or {}))
    port = free_port()
    lname = listener.lower()
    b.sets.update({
        "listeners": f"PLAINTEXT://{b.bootstrap},{listener}://127.0.0.1:{port}",
        f"listener.name.{lname}.sasl.enabled.mechanisms": mechanisms,
        f"listener.name.{lname}.plain.sasl.jaas.config": plain_jaas(alice="alice-secret", admin="admin-secret"),
    })
    b.start()
    return b, f"127.0.0.1:{port}"


def add_scram_user(bootstrap, user, password, mechanism="SCRAM-SHA-256", iterations=4096):
    from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, \
        UserScramCredentialUpsertion
    admin = AdminClient({"bootstrap.servers": bootstrap})
    mech = {"SCRAM-SHA-256": ScramMechanism.SCRAM_SHA_256, "SCRAM-SHA-512": ScramMechanism.SCRAM_SHA_512}[mechanism]
    upsert = UserScramCredentialUpsertion(user, ScramCredentialInfo(mech, iterations), password.encode())
    for fut in admin.alter_user_scram_credentials([upsert]).values():
        fut.result(30)


def describe_scram(bootstrap, user) -> dict:
    """DescribeUserScramCredentials for `user` → {mechanism name: iterations}."""
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": bootstrap})
    desc = admin.describe_user_scram_credentials([user])[user].result(30)
    return {i.mechanism.name: i.iterations for i in desc.scram_credential_infos}


def confluent_conf(addr, mechanism, user, password, protocol="SASL_PLAINTEXT", **extra):
    return {"bootstrap.servers": addr, "security.protocol": protocol, "sasl.mechanism": mechanism,
            "sasl.username": user, "sasl.password": password, **extra}


def roundtrip_confluent(conf, topic, n=100):
    from confluent_kafka import Consumer, Producer
    p = Producer({**conf, "acks": "all", "linger.ms": 5})
    for i in range(n):
        p.produce(topic, value=b"v%04d" % i, key=b"k")
    assert p.flush(30) == 0, "records left undelivered over SASL"
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
    assert got == [b"v%04d" % i for i in range(n)]


def roundtrip_kafka_python(addr, mechanism, user, password, topic, n=50, **extra):
    from kafka import KafkaConsumer, KafkaProducer
    kw = dict(bootstrap_servers=addr, security_protocol=extra.pop("security_protocol", "SASL_PLAINTEXT"),
              sasl_mechanism=mechanism, sasl_plain_username=user, sasl_plain_password=password, **extra)
    p = KafkaProducer(acks="all", **kw)
    for i in range(n):
        p.send(topic, value=b"x%03d" % i)
    p.flush(30)
    p.close()
    c = KafkaConsumer(topic, auto_offset_reset="earliest", group_id=f"g-{uuid.uuid4().hex[:6]}", **kw)
    try:
        got = kafka_python_read(c, n)
    finally:
        c.close()
    assert sorted(got) == [b"x%03d" % i for i in range(n)]


# ---------------------------------------------------------------- real clients
@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_confluent_and_kafka_python_over_sasl_plaintext(mechanism, topic):
    b, addr = sasl_broker()
    try:
        user, password = ("alice", "alice-secret") if mechanism == "PLAIN" else ("carol", "carol-pw")
        if mechanism != "PLAIN":
            add_scram_user(b.bootstrap, user, password, mechanism, iterations=8192)
        roundtrip_confluent(confluent_conf(addr, mechanism, user, password), topic)
        roundtrip_kafka_python(addr, mechanism, user, password, topic + "-kp")
    finally:
        b.close()


def test_sasl_ssl_with_plain(tmp_path_factory, topic):
    certs = Certs(tmp_path_factory.mktemp("certs"))
    b, addr = sasl_broker("SASL_SSL", "PLAIN", {"ssl.keystore.type": "PEM",
                                                "ssl.keystore.location": certs.server_pem})
    try:
        conf = confluent_conf(addr, "PLAIN", "alice", "alice-secret", "SASL_SSL", **{"ssl.ca.location": certs.ca})
        roundtrip_confluent(conf, topic)
        roundtrip_kafka_python(addr, "PLAIN", "alice", "alice-secret", topic + "-kp", security_protocol="SASL_SSL",
                               ssl_cafile=certs.ca)
    finally:
        b.close()


def test_wrong_credentials_fail_in_the_clients(topic):
    from confluent_kafka import KafkaException, Producer
    b, addr = sasl_broker()
    try:
        p = Producer(confluent_conf(addr, "PLAIN", "alice", "wrong", **{"message.timeout.ms": 5000}))
        errors = []
        p.produce(topic, b"v", on_delivery=lambda err, msg: errors.append(err))
        p.flush(15)
        assert errors and errors[0] is not None, "a producer with a wrong password delivered"
        from kafka import KafkaProducer
        from kafka.errors import KafkaError
        with pytest.raises((KafkaError, KafkaException)):
            KafkaProducer(bootstrap_servers=addr, security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                          sasl_plain_username="alice", sasl_plain_password="wrong", max_block_ms=5000,
                          bootstrap_timeout_ms=5000).send(topic, b"v").get(10)
    finally:
        b.close()


def test_kafka_configs_adds_a_scram_user_that_then_authenticates(topic):
    from test_kafka_tools import tool
    b, addr = sasl_broker()
    try:
        # One mechanism per request: Kafka's ScramControlManager keys a request's changes by user, so both
        # mechanisms in one --add-config answer DUPLICATE_RESOURCE (checked below), as Runnel's decide_alter does.
        for config in ("SCRAM-SHA-512=[iterations=8192,password=dave-secret]", "SCRAM-SHA-256=[password=dave-secret]"):
            tool(CONFIG_TOOL, "--bootstrap-server", b.bootstrap, "--alter", "--add-config", config,
                 "--entity-type", "users", "--entity-name", "dave")
        with pytest.raises(AssertionError, match="DuplicateResourceException"):
            tool(CONFIG_TOOL, "--bootstrap-server", b.bootstrap, "--alter", "--add-config",
                 "SCRAM-SHA-512=[password=x],SCRAM-SHA-256=[password=y]", "--entity-type", "users",
                 "--entity-name", "dave")
        # (`kafka-configs --describe --entity-type users` also asks DescribeClientQuotas, which the quotas work
        # adds; DescribeUserScramCredentials is read here with confluent-kafka's admin client.)
        assert describe_scram(b.bootstrap, "dave") == {"SCRAM_SHA_512": 8192, "SCRAM_SHA_256": 4096}
        roundtrip_confluent(confluent_conf(addr, "SCRAM-SHA-512", "dave", "dave-secret"), topic, n=20)
        # Credentials are persisted (the registry's change log) and survive a restart.
        b.restart()
        roundtrip_confluent(confluent_conf(addr, "SCRAM-SHA-256", "dave", "dave-secret"), topic + "-2", n=20)
        tool(CONFIG_TOOL, "--bootstrap-server", b.bootstrap, "--alter", "--delete-config", "SCRAM-SHA-256",
             "--entity-type", "users", "--entity-name", "dave")
        assert describe_scram(b.bootstrap, "dave") == {"SCRAM_SHA_512": 8192}
        with k.Connection(addr) as c:
            assert scram_exchange(c, "dave", "dave-secret", "SCRAM-SHA-256")[0] == SASL_AUTHENTICATION_FAILED
    finally:
        b.close()


# ---------------------------------------------------------------- raw sockets
def handshake(c, mechanism, version=1):
    r = c.request(SASL_HANDSHAKE, version, bytes(k.Writer().string(mechanism).buf))
    err = r.i16()
    return err, r.array(lambda r: r.string())


def authenticate(c, token: bytes):
    """SaslAuthenticate v1 → (error, message, auth_bytes, session_lifetime_ms)."""
    r = c.request(SASL_AUTHENTICATE, 1, bytes(k.Writer().bytes_(token).buf))
    return r.i16(), r.string(), r.bytes_(), r.i64()


def scram_exchange(c, user, password, mechanism="SCRAM-SHA-256", tamper_nonce=False):
    """A SCRAM exchange over SaslAuthenticate (RFC 5802, with Python's hashlib) → (error, message)."""
    algo = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}[mechanism]
    assert handshake(c, mechanism)[0] == 0
    cnonce = base64.b64encode(os.urandom(18)).decode().replace(",", "x")
    first_bare = f"n={user},r={cnonce}"
    err, msg, server_first, _ = authenticate(c, ("n,," + first_bare).encode())
    if err:
        return err, msg
    fields = dict(f.split("=", 1) for f in server_first.decode().split(","))
    nonce = fields["r"] + ("x" if tamper_nonce else "")
    salted = hashlib.pbkdf2_hmac(algo, password.encode(), base64.b64decode(fields["s"]), int(fields["i"]))
    without_proof = f"c=biws,r={nonce}"
    auth_message = f"{first_bare},{server_first.decode()},{without_proof}".encode()
    client_key = hmac.new(salted, b"Client Key", algo).digest()
    signature = hmac.new(hashlib.new(algo, client_key).digest(), auth_message, algo).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature))
    final = f"{without_proof},p={base64.b64encode(proof).decode()}".encode()
    err, msg, server_final, lifetime = authenticate(c, final)
    if err == 0:
        server_key = hmac.new(salted, b"Server Key", algo).digest()
        expected = base64.b64encode(hmac.new(server_key, auth_message, algo).digest())
        assert server_final == b"v=" + expected, "server signature does not verify"
        assert lifetime == 0
    return err, msg


def metadata_request_body():
    return bytes(k.Writer().i32(-1).buf)  # Metadata v1: all topics


def test_a_request_before_authentication_closes_the_connection():
    b, addr = sasl_broker()
    try:
        # ApiVersions is served before authentication; Metadata is not.
        with k.Connection(addr) as c:
            err, apis = k.api_versions_v0(c)
            assert err == 0 and SASL_HANDSHAKE in apis and SASL_AUTHENTICATE in apis
            c.send(METADATA, 1, metadata_request_body())
            assert c.is_closed_by_peer(), "Metadata before authentication was not refused"
        # Nor after the handshake, before SaslAuthenticate completes.
        with k.Connection(addr) as c:
            assert handshake(c, "PLAIN")[0] == 0
            c.send(METADATA, 1, metadata_request_body())
            assert c.is_closed_by_peer()
        # Once authenticated, requests are served on the same connection.
        with k.Connection(addr) as c:
            assert handshake(c, "PLAIN")[0] == 0
            assert authenticate(c, b"\0alice\0alice-secret")[0] == 0
            c.send(METADATA, 1, metadata_request_body())
            _, r = c.recv()
            assert r.remaining() > 0
        # The PLAINTEXT listener stays unauthenticated.
        with k.Connection(b.bootstrap) as c:
            c.request(METADATA, 1, metadata_request_body())
    finally:
        b.close()


def test_wrong_password_unknown_mechanism_and_a_bad_scram_nonce():
    b, addr = sasl_broker(mechanisms="PLAIN,SCRAM-SHA-256")
    try:
        add_scram_user(b.bootstrap, "erin", "erin-pw")
        with k.Connection(addr) as c:
            assert handshake(c, "PLAIN")[0] == 0
            err, msg, _, _ = authenticate(c, b"\0alice\0not-it")
            assert (err, msg) == (SASL_AUTHENTICATION_FAILED, "Authentication failed: Invalid username or password")
            assert c.is_closed_by_peer()
        with k.Connection(addr) as c:
            err, mechanisms = handshake(c, "GSSAPI")
            assert err == UNSUPPORTED_SASL_MECHANISM and mechanisms == ["PLAIN", "SCRAM-SHA-256"]
            assert c.is_closed_by_peer()
        with k.Connection(addr) as c:
            assert scram_exchange(c, "erin", "erin-pw") == (0, None)
        with k.Connection(addr) as c:
            err, msg = scram_exchange(c, "erin", "erin-pw", tamper_nonce=True)
            assert err == SASL_AUTHENTICATION_FAILED, (err, msg)
            assert msg == ("Authentication failed during authentication due to invalid credentials with SASL "
                           "mechanism SCRAM-SHA-256"), msg
            assert c.is_closed_by_peer()
        with k.Connection(addr) as c:
            assert scram_exchange(c, "erin", "wrong")[0] == SASL_AUTHENTICATION_FAILED
        with k.Connection(addr) as c:
            assert scram_exchange(c, "nobody", "x")[0] == SASL_AUTHENTICATION_FAILED
        # A SaslHandshake v0 takes raw tokens (no SaslAuthenticate header): PLAIN answers an empty token.
        with k.Connection(addr) as c:
            assert handshake(c, "PLAIN", version=0)[0] == 0
            tok = b"\0alice\0alice-secret"
            c.send_raw(len(tok).to_bytes(4, "big") + tok)
            assert c._recv_exact(4) == b"\0\0\0\0"
            c.send(METADATA, 1, metadata_request_body())
            c.recv()
        # A frame larger than sasl.server.max.receive.size before authentication closes the connection.
        with k.Connection(addr) as c:
            c.send_raw((600_000).to_bytes(4, "big") + b"\0" * 64)
            assert c.is_closed_by_peer()
    finally:
        b.close()


def test_the_authorizer_sees_the_sasl_principal(topic):
    b, addr = sasl_broker(extra={"authorizer.class.name": STANDARD, "super.users": "User:ANONYMOUS;User:admin"})
    try:
        with k.Connection(b.bootstrap) as c:
            k.create_topic(c, topic)

        def produce_error(user, password):
            with k.Connection(addr) as c:
                assert handshake(c, "PLAIN")[0] == 0
                assert authenticate(c, f"\0{user}\0{password}".encode())[0] == 0
                return k.produce(c, topic, 0, k.encode_batch([k.Record(b"k", b"v")])).error

        assert produce_error("alice", "alice-secret") == TOPIC_AUTHORIZATION_FAILED
        assert produce_error("admin", "admin-secret") == 0  # a super user
        from test_acls import acls
        acls(b.bootstrap, "--add", "--allow-principal", "User:alice", "--operation", "Write", "--topic", topic)
        assert produce_error("alice", "alice-secret") == 0
    finally:
        b.close()


def test_three_brokers_replicate_over_a_sasl_plaintext_inter_broker_listener(topic):
    from test_cluster import Cluster, Stream, check_exactly_once_in_order, create_topic
    sets = {
        "inter.broker.listener.name": "SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config":
            f'{PLAIN_MODULE} required username="broker" password="broker-pw" user_broker="broker-pw";',
    }
    c = Cluster(sets)
    for n in c.nodes.values():
        n.sets["listeners"] = f"PLAINTEXT://{n.bootstrap},SASL_PLAINTEXT://127.0.0.1:{free_port()}"
    try:
        c.start()
        create_topic(c, topic)
        s = Stream(c.bootstrap, topic)
        s.until_acked(1000)
        s.finish()
        c.wait(lambda md: len(md.topics[topic].partitions[0].isrs) == 3, "full ISR over SASL replication")
        check_exactly_once_in_order(c, s)
        leader = c.partition(topic).leader
        c.nodes[leader].kill9()
        c.wait(lambda md: md.topics[topic].partitions[0].leader not in (-1, leader), "a new leader")
        s2 = Stream(c.alive_bootstrap(), topic)
        s2.until_acked(200)
        s2.finish()
    finally:
        c.close()
