"""The operator CLI against a secured broker (issue 14): `runnel acl`, `runnel user scram`, `runnel quota`, and
the client security options every client command takes — `-X` (librdkafka's names) and `--command-config` (a
Java client properties file, as Kafka's tools take it).

One broker with a SASL_SSL listener (PLAIN for `admin`, a super user; SCRAM for users the CLI creates) and
the StandardAuthorizer, deny by default. Every command below goes through that listener: the librdkafka-based
ones (topic, produce, consume) and the ones on our own codec (acl, user, quota, cluster), which open TLS and
log in with SASL themselves.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from conftest import MODE, RUNNEL_BIN
from test_sasl import PLAIN_MODULE, STANDARD, sasl_broker
from tls_certs import Certs

pytestmark = pytest.mark.skipif(MODE != "runnel", reason="starts runnel with its own listeners")


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    """(broker, SASL_SSL address, admin --command-config file, CA file)."""
    d = tmp_path_factory.mktemp("cli-security")
    certs = Certs(d)
    b, addr = sasl_broker("SASL_SSL", "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", {
        "ssl.keystore.type": "PEM", "ssl.keystore.location": certs.server_pem,
        "authorizer.class.name": STANDARD, "super.users": "User:admin"})
    admin = d / "admin.properties"
    admin.write_text(
        "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"
        f'sasl.jaas.config={PLAIN_MODULE} required username="admin" password="admin-secret";\n'
        f"ssl.truststore.type=PEM\nssl.truststore.location={certs.ca}\n")
    try:
        yield b, addr, str(admin), str(certs.ca)
    finally:
        b.close()


def cli(addr, *args, stdin=None, check=True):
    p = subprocess.run([str(RUNNEL_BIN), *args, "-b", addr, "--timeout", "20"], input=stdin,
                       capture_output=True, text=True, timeout=90)
    if check:
        assert p.returncode == 0, f"runnel {' '.join(args)} failed:\n{p.stderr}"
    return p


def as_user(ca, user, password, mechanism="SCRAM-SHA-256"):
    return ["-X", "security.protocol=SASL_SSL", "-X", f"sasl.mechanism={mechanism}", "-X", f"sasl.username={user}",
            "-X", f"sasl.password={password}", "-X", f"ssl.ca.location={ca}"]


def test_users_acls_and_quotas_through_the_cli(secured):
    _, addr, admin, ca = secured
    adm = ["--command-config", admin]
    topic, group = "cli-sec-orders", "cli-sec-g1"
    cli(addr, "user", "scram", "set", "--user", "carol", "--mechanism", "SCRAM-SHA-256", "--password", "carol-pw",
        *adm)
    users = json.loads(cli(addr, "user", "scram", "list", "--json", *adm).stdout)
    assert {"user": "carol", "mechanism": "SCRAM-SHA-256", "iterations": "8192"} in users
    cli(addr, "topic", "create", topic, "--partitions", "1", *adm)

    carol = as_user(ca, "carol", "carol-pw")
    denied = cli(addr, "produce", topic, *carol, stdin="a\n", check=False)
    assert denied.returncode != 0 and "TOPIC_AUTHORIZATION_FAILED" in denied.stderr, denied.stderr

    cli(addr, "acl", "create", "--principal", "User:carol", "--operation", "write", "--operation", "describe",
        "--topic", topic, *adm)
    cli(addr, "acl", "create", "--principal", "User:carol", "--operation", "read", "--topic", topic, *adm)
    cli(addr, "acl", "create", "--principal", "User:carol", "--operation", "read", "--group", "cli-sec-",
        "--prefixed", *adm)
    acls = json.loads(cli(addr, "acl", "list", "--json", *adm).stdout)
    assert {(a["resource_type"], a["name"], a["pattern"], a["operation"]) for a in acls
            if a["principal"] == "User:carol"} == {
        ("TOPIC", topic, "LITERAL", "WRITE"), ("TOPIC", topic, "LITERAL", "DESCRIBE"),
        ("TOPIC", topic, "LITERAL", "READ"), ("GROUP", "cli-sec-", "PREFIXED", "READ")}

    cli(addr, "produce", topic, *carol, stdin="one\ntwo\nthree\n")
    out = cli(addr, "consume", topic, "--group", group, "--from-beginning", "-n", "3", *carol).stdout
    assert out.split() == ["one", "two", "three"]

    gone = json.loads(cli(addr, "acl", "delete", "--topic", topic, "--principal", "User:carol",
                          "--operation", "write", "--json", *adm).stdout)
    assert gone == {"deleted": 1}
    # Still allowed to describe the topic, carol now has WRITE on no topic: the idempotent producer's
    # InitProducerId is refused (KIP-679: IDEMPOTENT_WRITE on the cluster or WRITE on some topic), as in Kafka.
    denied = cli(addr, "produce", topic, *carol, stdin="four\n", check=False)
    assert denied.returncode != 0 and "Cluster authorization failed" in denied.stderr, denied.stderr

    cli(addr, "quota", "set", "--user", "carol", "--set", "producer_byte_rate=1048576",
        "--set", "consumer_byte_rate=2097152", *adm)
    cli(addr, "quota", "set", "--default-client-id", "--set", "request_percentage=50", *adm)
    quotas = json.loads(cli(addr, "quota", "describe", "--json", *adm).stdout)
    assert {"entity": "user=carol", "key": "producer_byte_rate", "value": 1048576.0} in quotas
    assert {"entity": "client-id=<default>", "key": "request_percentage", "value": 50.0} in quotas
    cli(addr, "quota", "set", "--user", "carol", "--remove", "producer_byte_rate", *adm)
    quotas = json.loads(cli(addr, "quota", "describe", "--user", "carol", "--json", *adm).stdout)
    assert quotas == [{"entity": "user=carol", "key": "consumer_byte_rate", "value": 2097152.0}]

    cli(addr, "user", "scram", "delete", "--user", "carol", "--mechanism", "SCRAM-SHA-256", *adm)
    assert all(u["user"] != "carol" for u in json.loads(cli(addr, "user", "scram", "list", "--json", *adm).stdout))


def test_refusals_are_clear(secured):
    _, addr, admin, ca = secured
    # A wrong password on our own codec's connection: the broker's SASL error, exit 1.
    bad = cli(addr, "cluster", "info", *as_user(ca, "admin", "wrong", "PLAIN"), check=False)
    assert bad.returncode == 1 and "SASL authentication failed" in bad.stderr, bad.stderr
    # A user who may not alter ACLs gets CLUSTER_AUTHORIZATION_FAILED.
    cli(addr, "user", "scram", "set", "--user", "dave", "--password", "dave-pw", "--command-config", admin)
    dave = as_user(ca, "dave", "dave-pw", "SCRAM-SHA-512")
    refused = cli(addr, "acl", "create", "--principal", "User:dave", "--operation", "all", "--cluster", *dave,
                  check=False)
    assert refused.returncode == 1 and "CLUSTER_AUTHORIZATION_FAILED" in refused.stderr, refused.stderr
    # TLS without a CA to verify the broker with.
    no_ca = cli(addr, "acl", "list", "-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanism=PLAIN",
                "-X", "sasl.username=admin", "-X", "sasl.password=admin-secret", check=False)
    assert no_ca.returncode == 1 and "ssl.ca.location" in no_ca.stderr, no_ca.stderr
    # The super user sees the cluster over SASL_SSL on our own codec.
    info = cli(addr, "cluster", "info", "--command-config", admin).stdout
    assert "cluster" in info.lower()
