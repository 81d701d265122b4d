"""SASL/OAUTHBEARER (KIP-255, KIP-768) and re-authentication (KIP-368) on a real `runnel`.

- confluent-kafka (librdkafka) produces and consumes with OAUTHBEARER: unsecured (its built-in `alg: none`
  token, `sasl.oauthbearer.config=principal=alice`) and validated (an RS256 token signed with a key made
  here, checked by the broker against a JWKS file, issuer and audience); kafka-python with a token provider;
- raw sockets (kproto): an expired or wrongly signed token is answered with RFC 7628's JSON error as the
  challenge, then the client's `\\x01` gets SASL_AUTHENTICATION_FAILED (58) carrying that JSON, and a close;
  SaslAuthenticate v1 answers `session_lifetime_ms` (the token's remaining life, capped by
  `connections.max.reauth.ms`); a re-authentication on the same connection succeeds, one with another
  principal fails with Kafka's message, and a request after the session expired closes the connection;
- a rotated JWKS file is reread after a token names its new `kid`;
- librdkafka re-authenticates by itself when `connections.max.reauth.ms` is short and keeps producing.

Codes and messages are Kafka 4.4.0's (SaslServerAuthenticator, OAuthBearerSaslServer).
"""

from __future__ import annotations

import base64
import json
import logging
import time
import uuid

import pytest

import kproto as k
from conftest import MODE, BrokerProcess, free_port, kafka_python_read
from test_sasl import METADATA, SASL_AUTHENTICATION_FAILED, authenticate, handshake, metadata_request_body, \
    plain_jaas, roundtrip_confluent

pytestmark = pytest.mark.skipif(MODE != "runnel", reason="starts runnel with its own listeners")

OAUTH_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
VALIDATOR = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
ISSUER, AUDIENCE = "https://issuer.test", "kafka"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64json(obj) -> str:
    return b64url(json.dumps(obj).encode())


class Issuer:
    """An RSA key made at test time, its JWKS file, and RS256 tokens signed with it."""

    def __init__(self, directory, kid="key-1"):
        from cryptography.hazmat.primitives.asymmetric import rsa
        self.kid = kid
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        numbers = self.key.public_key().public_numbers()
        to_bytes = lambda v: v.to_bytes((v.bit_length() + 7) // 8, "big")
        jwk = {"kty": "RSA", "kid": kid, "alg": "RS256", "use": "sig",
               "n": b64url(to_bytes(numbers.n)), "e": b64url(to_bytes(numbers.e))}
        self.jwks = directory / "jwks.json"
        self.jwks.write_text(json.dumps({"keys": [jwk]}))

    def token(self, sub="alice", lifetime_s=3600, key=None, **claims) -> str:
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding
        now = int(time.time())
        body = {"sub": sub, "iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + lifetime_s,
                "scope": "kafka", **claims}
        signing_input = f"{b64json({'alg': 'RS256', 'typ': 'JWT', 'kid': self.kid})}.{b64json(body)}"
        signature = (key or self.key).sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
        return f"{signing_input}.{b64url(signature)}"


def unsecured_token(sub="alice", lifetime_s=3600) -> str:
    now = int(time.time())
    return f"{b64json({'alg': 'none'})}.{b64json({'sub': sub, 'iat': now, 'exp': now + lifetime_s})}."


def oauth_broker(issuer: Issuer | None = None, extra=None):
    """A broker with PLAINTEXT on its bootstrap port and SASL_PLAINTEXT (OAUTHBEARER and PLAIN) on another;
    validated OAUTHBEARER when `issuer` is given, else unsecured. Returns it and the SASL address."""
    b = BrokerProcess(dict(extra or {}))
    port = free_port()
    b.sets.update({
        "listeners": f"PLAINTEXT://{b.bootstrap},SASL_PLAINTEXT://127.0.0.1:{port}",
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "OAUTHBEARER,PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": plain_jaas(alice="alice-secret", bob="bob-secret"),
        "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": f"{OAUTH_MODULE} required;",
    })
    if issuer is not None:
        b.sets.update({
            "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class": VALIDATOR,
            "sasl.oauthbearer.jwks.endpoint.url": f"file://{issuer.jwks}",
            "sasl.oauthbearer.expected.issuer": ISSUER,
            "sasl.oauthbearer.expected.audience": AUDIENCE,
        })
    b.start()
    return b, f"127.0.0.1:{port}"


def oauth_message(token: str) -> bytes:
    return f"n,,\x01auth=Bearer {token}\x01\x01".encode()


# ---------------------------------------------------------------- real clients
def test_confluent_unsecured_oauthbearer_roundtrip(topic):
    b, addr = oauth_broker()
    try:
        conf = {"bootstrap.servers": addr, "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": True,
                "sasl.oauthbearer.config": "principal=alice"}
        roundtrip_confluent(conf, topic)
    finally:
        b.close()


def test_confluent_and_kafka_python_with_a_signed_token_checked_against_a_jwks_file(tmp_path, topic):
    issuer = Issuer(tmp_path)
    b, addr = oauth_broker(issuer)
    try:
        conf = {"bootstrap.servers": addr, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
                "oauth_cb": lambda _config: (issuer.token("alice"), time.time() + 3600)}
        roundtrip_confluent(conf, topic)

        from kafka import KafkaConsumer, KafkaProducer
        from kafka.net.sasl.oauth import AbstractTokenProvider

        class Provider(AbstractTokenProvider):
            def token(self):
                return issuer.token("alice")

        kw = dict(bootstrap_servers=addr, security_protocol="SASL_PLAINTEXT", sasl_mechanism="OAUTHBEARER",
                  sasl_oauth_token_provider=Provider())
        p = KafkaProducer(acks="all", **kw)
        for i in range(20):
            p.send(topic + "-kp", value=b"x%03d" % i)
        p.flush(30)
        p.close()
        c = KafkaConsumer(topic + "-kp", auto_offset_reset="earliest", group_id=f"g-{uuid.uuid4().hex[:6]}", **kw)
        try:
            got = sorted(kafka_python_read(c, 20))
        finally:
            c.close()
        assert got == [b"x%03d" % i for i in range(20)]
    finally:
        b.close()


# ---------------------------------------------------------------- raw sockets
def expect_json_error_then_failure(c, token: bytes):
    assert handshake(c, "OAUTHBEARER")[0] == 0
    err, msg, challenge, _ = authenticate(c, token)
    assert (err, msg) == (0, None), (err, msg)
    assert json.loads(challenge) == {"status": "invalid_token"}, challenge
    err, msg, _, _ = authenticate(c, b"\x01")
    assert (err, msg) == (SASL_AUTHENTICATION_FAILED, '{"status":"invalid_token"}'), (err, msg)
    assert c.is_closed_by_peer()


def test_expired_and_wrongly_signed_tokens_fail_with_the_rfc_7628_error(tmp_path):
    from cryptography.hazmat.primitives.asymmetric import rsa
    issuer = Issuer(tmp_path)
    b, addr = oauth_broker(issuer)
    try:
        with k.Connection(addr) as c:
            assert handshake(c, "OAUTHBEARER")[0] == 0
            err, _, _, lifetime = authenticate(c, oauth_message(issuer.token(lifetime_s=600)))
            assert err == 0 and 590_000 < lifetime <= 600_000, lifetime
        with k.Connection(addr) as c:
            expect_json_error_then_failure(c, oauth_message(issuer.token(lifetime_s=-120)))
        with k.Connection(addr) as c:
            other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            expect_json_error_then_failure(c, oauth_message(issuer.token(key=other)))
        with k.Connection(addr) as c:
            expect_json_error_then_failure(c, oauth_message(unsecured_token()))  # alg none is refused
        with k.Connection(addr) as c:
            expect_json_error_then_failure(c, oauth_message(issuer.token(aud="elsewhere")))
        # A malformed first message fails at once with Kafka's generic message.
        with k.Connection(addr) as c:
            assert handshake(c, "OAUTHBEARER")[0] == 0
            err, msg, _, _ = authenticate(c, b"n,,auth=Bearer x")
            assert err == SASL_AUTHENTICATION_FAILED
            assert msg == ("Authentication failed during authentication due to invalid credentials with SASL "
                           "mechanism OAUTHBEARER"), msg
            assert c.is_closed_by_peer()
    finally:
        b.close()


def test_a_rotated_key_is_picked_up_after_a_token_names_its_unknown_kid(tmp_path):
    issuer = Issuer(tmp_path)
    b, addr = oauth_broker(issuer)
    try:
        rotated = Issuer(tmp_path, kid="key-2")  # rewrites jwks.json with only the new key

        def attempt() -> int:
            with k.Connection(addr) as c:
                assert handshake(c, "OAUTHBEARER")[0] == 0
                err, _, challenge, _ = authenticate(c, oauth_message(rotated.token()))
                return err if not challenge else -1

        # The first token with kid key-2 is refused and asks for a reload (at most one a second); a later
        # attempt is accepted. Bounded: 50 attempts, each a full connection.
        results = [attempt()]
        while results[-1] != 0 and len(results) < 50:
            time.sleep(0.2)  # polling the broker's background reload, which has no observable event
            results.append(attempt())
        assert results[0] == -1 and results[-1] == 0, results
    finally:
        b.close()


def test_session_lifetime_reauthentication_and_expiry_on_raw_sockets():
    b, addr = oauth_broker(extra={"listener.name.sasl_plaintext.plain.connections.max.reauth.ms": "3000"})
    try:
        # OAUTHBEARER without connections.max.reauth.ms: the session lasts as long as the token.
        with k.Connection(addr) as c:
            assert handshake(c, "OAUTHBEARER")[0] == 0
            err, _, _, lifetime = authenticate(c, oauth_message(unsecured_token(lifetime_s=100)))
            assert err == 0 and 90_000 < lifetime <= 100_000, lifetime
        # PLAIN with connections.max.reauth.ms=3000: re-authenticate, then let the session lapse.
        with k.Connection(addr) as c:
            assert handshake(c, "PLAIN")[0] == 0
            assert authenticate(c, b"\0alice\0alice-secret")[::3] == (0, 3000)
            c.send(METADATA, 1, metadata_request_body())
            c.recv()
            assert handshake(c, "PLAIN")[0] == 0
            assert authenticate(c, b"\0alice\0alice-secret")[::3] == (0, 3000)
            expired_at = time.monotonic() + 3.0
            c.send(METADATA, 1, metadata_request_body())
            c.recv()
            time.sleep(max(0.0, expired_at - time.monotonic()) + 0.2)  # the session's lifetime is what is tested
            c.send(METADATA, 1, metadata_request_body())
            assert c.is_closed_by_peer(), "a request after the session expired was served"
        # The principal must not change on re-authentication.
        with k.Connection(addr) as c:
            assert handshake(c, "PLAIN")[0] == 0
            assert authenticate(c, b"\0alice\0alice-secret")[0] == 0
            assert handshake(c, "PLAIN")[0] == 0
            err, msg, _, _ = authenticate(c, b"\0bob\0bob-secret")
            assert (err, msg) == (SASL_AUTHENTICATION_FAILED,
                                  "Cannot change principals during re-authentication from User.alice: User.bob")
            assert c.is_closed_by_peer()
    finally:
        b.close()


def test_librdkafka_reauthenticates_on_a_short_session(topic):
    b, addr = oauth_broker(extra={"connections.max.reauth.ms": "1000"})
    try:
        from confluent_kafka import Producer
        records = []
        handler = logging.Handler()
        handler.emit = lambda r: records.append(r.getMessage())
        logger = logging.getLogger(f"rdkafka-{uuid.uuid4().hex[:6]}")
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
        p = Producer({"bootstrap.servers": addr, "security.protocol": "SASL_PLAINTEXT",
                      "sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": "alice-secret",
                      "debug": "security", "logger": logger, "linger.ms": 5})
        errors = []

        def reauthenticated() -> int:
            """Re-authentications librdkafka began and then completed (it logs the new session lifetime)."""
            done, began = 0, False
            for m in list(records):
                if "Auth in state REAUTH" in m:
                    began = True
                elif began and "Received session lifetime 1000 ms" in m:
                    done, began = done + 1, False
            return done

        deadline = time.monotonic() + 60
        sent = 0
        # Produce until the client has re-authenticated at least twice (each session lasts 1 s), then check
        # every record was delivered over the connections that re-authenticated.
        while reauthenticated() < 2 and time.monotonic() < deadline:
            p.produce(topic, value=b"v%05d" % sent, on_delivery=lambda err, _m: err and errors.append(err))
            sent += 1
            p.poll(0.05)
        assert p.flush(30) == 0
        assert not errors, errors[:3]
        assert reauthenticated() >= 2, "librdkafka never re-authenticated"
    finally:
        b.close()
