"""A cluster secured like a production Kafka (issue 14), configured as README's "Securing a cluster" shows:
SASL_SSL on every listener — clients, inter-broker and controller —, the StandardAuthorizer denying by default,
the brokers and an operator as super users (PLAIN), applications as SCRAM users with ACLs made with the CLI.

- three processes form the cluster over SASL_SSL only (no PLAINTEXT listener anywhere);
- a SCRAM user with ACLs from `runnel user scram` / `runnel acl` produces idempotently with acks=all, the
  partition leader is killed with `kill -9`, and every acknowledged record is read back once, in order;
- without credentials nothing is served: plain TCP on the client and controller ports gets no answer, and a
  TLS client that does not log in cannot fetch metadata.
"""

from __future__ import annotations

import socket
import subprocess
import time
import uuid

import pytest

from conftest import MODE, RUNNEL_BIN
from test_cluster import Cluster, ClusterNode, Stream, check_exactly_once_in_order, create_topic
from tls_certs import Certs

pytestmark = [pytest.mark.cluster,
              pytest.mark.skipif(MODE != "runnel", reason="starts its own runnel processes")]

PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
PLAIN_USERS = f'{PLAIN} required username="broker" password="broker-secret" ' \
              f'user_broker="broker-secret" user_admin="admin-secret";'


def secured_sets(certs: Certs) -> dict:
    """The server.properties of README's example, as `--set` pairs (listeners come from the flags)."""
    return {
        "listener.security.protocol.map": "SASL_SSL:SASL_SSL,CONTROLLER:SASL_SSL",
        "inter.broker.listener.name": "SASL_SSL",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": certs.server_pem,
        "ssl.truststore.type": "PEM", "ssl.truststore.location": certs.ca,
        "listener.name.sasl_ssl.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_USERS,
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.controller.plain.sasl.jaas.config": PLAIN_USERS,
        "sasl.mechanism.controller.protocol": "PLAIN",
        "authorizer.class.name": STANDARD,
        "super.users": "User:broker;User:admin",
    }


class SecuredNode(ClusterNode):
    """A node whose one client listener is SASL_SSL; ready when the admin can list topics through it."""
    admin_conf: dict = {}

    def argv(self) -> list[str]:
        argv = super().argv()
        argv[argv.index("--listen") + 1] = f"SASL_SSL://{self.bootstrap}"
        return argv

    def wait_ready(self):
        from confluent_kafka.admin import AdminClient
        deadline = time.monotonic() + 60
        last = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"node {self.node_id} exited during startup:\n{self.log_tail()}")
            try:
                AdminClient({"bootstrap.servers": self.bootstrap, **self.admin_conf}).list_topics(timeout=2)
                return
            except Exception as e:  # noqa: BLE001 - not up yet
                last = e
                time.sleep(0.2)
        pytest.fail(f"node {self.node_id} not serving SASL_SSL within 60 s ({last}):\n{self.log_tail()}")


class SecuredCluster(Cluster):
    node_class = SecuredNode


def sasl_ssl(certs: Certs, mechanism: str, user: str, password: str) -> dict:
    return {"security.protocol": "SASL_SSL", "sasl.mechanism": mechanism, "sasl.username": user,
            "sasl.password": password, "ssl.ca.location": certs.ca}


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    d = tmp_path_factory.mktemp("secure-cluster")
    certs = Certs(d)
    admin = sasl_ssl(certs, "PLAIN", "admin", "admin-secret")
    SecuredNode.admin_conf = admin
    c = SecuredCluster(secured_sets(certs), client_conf=admin)
    try:
        yield c.start(), certs, d
    finally:
        c.close()


def runnel(c: Cluster, certs: Certs, *args: str):
    conf = sasl_ssl(certs, "PLAIN", "admin", "admin-secret")
    xs = [a for k, v in conf.items() for a in ("-X", f"{k}={v}")]
    p = subprocess.run([str(RUNNEL_BIN), *args, "-b", c.alive_bootstrap(), "--timeout", "30", *xs],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, f"runnel {' '.join(args)}: {p.stderr}"


def test_a_scram_user_survives_a_leader_kill9_on_a_sasl_ssl_cluster(secured):
    c, certs, _ = secured
    topic = f"secure-{uuid.uuid4().hex[:8]}"
    create_topic(c, topic, configs={"min.insync.replicas": "2"})
    runnel(c, certs, "user", "scram", "set", "--user", "app", "--password", "app-secret")
    for op in ("write", "describe", "read"):
        runnel(c, certs, "acl", "create", "--principal", "User:app", "--operation", op, "--topic", topic)
    runnel(c, certs, "acl", "create", "--principal", "User:app", "--operation", "read", "--group", "verify-",
           "--prefixed")
    app = sasl_ssl(certs, "SCRAM-SHA-512", "app", "app-secret")
    s = Stream(c.bootstrap, topic, conf=app)
    s.until_acked(2000)
    leader = c.partition(topic).leader
    c.nodes[leader].kill9()
    c.wait(lambda md: md.topics[topic].partitions[0].leader not in (-1, leader), "a new leader after kill -9")
    s.until_acked(len(s.acked) + 2000)
    s.finish()
    assert not s.failed, f"produce failures: {s.failed[:3]}"
    c.client_conf = app  # read back as the application
    try:
        check_exactly_once_in_order(c, s)
    finally:
        c.client_conf = sasl_ssl(certs, "PLAIN", "admin", "admin-secret")
    c.nodes[leader].start()
    c.wait(lambda md: sorted(md.topics[topic].partitions[0].isrs) == [1, 2, 3],
           f"broker {leader} back in the ISR over the SASL_SSL inter-broker listener")


def not_served(port: int, payload: bytes) -> bool:
    """True when `payload` sent over plain TCP is not served: the peer closes, sends nothing within 3 s, or
    answers only with a TLS alert record (content type 21), which is how a TLS server refuses plaintext."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.settimeout(3)
        try:
            s.sendall(payload)
            data = s.recv(4096)
        except (socket.timeout, ConnectionResetError, BrokenPipeError):
            return True
        return data == b"" or data[0] == 21


def test_nothing_is_served_without_credentials(secured):
    c, certs, _ = secured
    api_versions = bytes.fromhex("0000001100120000000000010007") + b"attack\x00"
    node = c.nodes[1]
    assert not_served(node.port, api_versions), "plain TCP answered on a SASL_SSL client listener"
    assert not_served(node.controller_port, b'\x00\x00\x00\x02{}'), "plain TCP answered on the controller port"
    from confluent_kafka.admin import AdminClient
    tls_only = {"security.protocol": "SSL", "ssl.ca.location": certs.ca}
    with pytest.raises(Exception):
        AdminClient({"bootstrap.servers": node.bootstrap, **tls_only}).list_topics(timeout=5)
    wrong = sasl_ssl(certs, "PLAIN", "admin", "wrong")
    with pytest.raises(Exception):
        AdminClient({"bootstrap.servers": node.bootstrap, **wrong}).list_topics(timeout=5)
