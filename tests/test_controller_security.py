"""The secured controller listener (issue 14): real `runnel` processes whose controller listener (CONTROLLER,
its protocol from `listener.security.protocol.map`) runs mutual TLS or SASL_PLAINTEXT with PLAIN.

- three processes (broker + controller each) with `CONTROLLER:SSL` (certificates made at test time): the
  brokers register, a topic with three replicas is created, produced to and consumed; raw sockets on a
  controller port — plain TCP, TLS without a certificate, TLS with a trusted certificate whose principal is
  not a super user — are closed before a metadata fetch is answered; the super user's certificate is answered;
- three processes with `CONTROLLER:SASL_PLAINTEXT` (PLAIN): the same round trip; a raw frame without SASL,
  a wrong password (SASL_AUTHENTICATION_FAILED, then closed) and an authenticated non-super user are closed;
  40 connections announcing 64 MiB frames are closed at once (`sasl.server.max.receive.size`) and the
  controller's memory stays put (printed);
- three processes with `CONTROLLER:SASL_SSL`: the round trip (TLS, then the PLAIN login inside it);
- one process with an open (PLAINTEXT) controller listener and `max.connections`: connections past it are
  closed at once, and ones stalled mid-frame are closed after `connections.max.idle.ms`.

The controller RPC frames are Runnel's (`[len u32][JSON]`, crates/controller/src/rpc.rs); the SASL exchange is
Kafka's (SaslHandshake v1, SaslAuthenticate), as on the Kafka listeners. Kafka requests are served there too
(crates/controller/src/kafka_apis.rs): Kafka's `kafka-metadata-quorum.sh --bootstrap-controller` with a
`--command-config` describes the quorum over SASL_PLAINTEXT and mutual TLS as the super user; an authenticated
user without DESCRIBE/ALTER on the cluster is refused with CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import json
import select
import socket
import ssl
import struct
import time
import uuid

import pytest

import kproto as k
from conftest import MODE, BrokerProcess, free_port
from test_cluster import Cluster, Stream, check_exactly_once_in_order, create_topic
from test_kafka_tools import run_tool, tool
from test_metadata_quorum import QUORUM_TOOL, replication_rows, status_fields
from test_sasl import authenticate, handshake
from tls_certs import PASSWORD, Certs

pytestmark = [pytest.mark.cluster,
              pytest.mark.skipif(MODE != "runnel", reason="starts its own runnel processes")]

PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SASL_AUTHENTICATION_FAILED = 58
SUPER_DN = "CN=localhost,OU=brokers,O=Runnel Test,C=US"
# A controller RPC frame asking for the metadata image (every record since the start).
FETCH_IMAGE = {"Client": {"FetchMetadata": {"since_offset": -1, "max_wait_ms": 0}}}


def frame(value) -> bytes:
    data = json.dumps(value).encode()
    return struct.pack(">I", len(data)) + data


def answered(sock, timeout: float = 10.0) -> bool:
    """True if a whole response frame arrives; False if the peer closes (EOF, reset, TLS alert) first."""
    sock.settimeout(timeout)
    buf = b""
    try:
        while len(buf) < 4 or len(buf) < 4 + struct.unpack(">I", buf[:4])[0]:
            chunk = sock.recv(65536)
            if not chunk:
                return False
            buf += chunk
    except (ConnectionResetError, BrokenPipeError, ssl.SSLError):
        return False
    return True


def ask_image(sock) -> bool:
    try:
        sock.sendall(frame(FETCH_IMAGE))
    except (ConnectionResetError, BrokenPipeError, ssl.SSLError):
        return False
    return answered(sock)


def round_trip(c: Cluster):
    topic = f"ctlsec-{uuid.uuid4().hex[:8]}"
    create_topic(c, topic)
    s = Stream(c.bootstrap, topic)
    s.until_acked(300)
    s.finish()
    check_exactly_once_in_order(c, s)


def wait_log(c: Cluster, node: int, text: str):
    c.nodes[node].wait_log(text, "a log line", timeout=15)


# ---------------------------------------------------------------- mutual TLS
@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory):
    certs = Certs(tmp_path_factory.mktemp("ctl-certs"))
    c = Cluster({
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SSL",
        "listener.name.controller.ssl.keystore.type": "PEM",
        "listener.name.controller.ssl.keystore.location": certs.server_pem,
        "listener.name.controller.ssl.truststore.type": "PEM",
        "listener.name.controller.ssl.truststore.location": certs.ca,
        "listener.name.controller.ssl.client.auth": "required",
        "super.users": f"User:{SUPER_DN}",
    })
    try:
        yield c.start(), certs
    finally:
        c.close()


def tls_socket(port: int, certs: Certs, cert: str | None, key: str | None):
    ctx = ssl.create_default_context(cafile=certs.ca)
    ctx.check_hostname = False
    if cert:
        ctx.load_cert_chain(cert, key)
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        return ctx.wrap_socket(raw)
    except (ssl.SSLError, ConnectionResetError):
        raw.close()
        return None


def test_mtls_controllers_register_brokers_and_replicate(tls_cluster):
    c, _ = tls_cluster
    round_trip(c)


def test_mtls_controller_port_closes_peers_without_a_super_user_certificate(tls_cluster):
    c, certs = tls_cluster
    node = c.nodes[1]
    with socket.create_connection(("127.0.0.1", node.controller_port), timeout=10) as s:
        assert not ask_image(s), "plain TCP was answered on an SSL controller listener"
    s = tls_socket(node.controller_port, certs, None, None)
    assert s is None or not ask_image(s), "a TLS peer without a certificate was answered"
    s = tls_socket(node.controller_port, certs, certs.client_cert, certs.client_key)
    assert s is not None, "the client certificate's handshake failed"
    assert not ask_image(s), "a trusted certificate that is not a super user was answered"
    wait_log(c, 1, "not authorized")
    # The control: the super user's certificate (the brokers') is answered on the same port.
    s = tls_socket(node.controller_port, certs, certs.server_pem, certs.server_pem)
    assert s is not None and ask_image(s), "the super user's TLS connection was not answered"
    s.close()


def served_ou(port: int, certs: Certs) -> str:
    """The OU of the certificate the controller listener on `port` presents (to a super user)."""
    s = tls_socket(port, certs, certs.server_pem, certs.server_pem)
    assert s is not None, "the super user's handshake failed"
    with s:
        return dict(x[0] for x in s.getpeercert()["subject"])["organizationalUnitName"]


def test_mtls_controller_keystore_reloads_without_a_restart(tls_cluster):
    """A broker-and-controller process follows `listener.name.controller.ssl.keystore.location` set as a
    dynamic per-broker config (KIP-226), as its broker listeners do; a store that does not load is refused."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                       ResourceType)
    c, certs = tls_cluster
    node = c.nodes[1]
    admin = AdminClient({"bootstrap.servers": node.bootstrap})

    def alter(value: str):
        res = ConfigResource(ResourceType.BROKER, "1", incremental_configs=[ConfigEntry(
            "listener.name.controller.ssl.keystore.location", value,
            incremental_operation=AlterConfigOpType.SET)])
        return admin.incremental_alter_configs([res])[res].result(30)

    before = served_ou(node.controller_port, certs)
    with pytest.raises(KafkaException) as e:
        alter("/nonexistent/keystore.pem")
    assert "Validation of dynamic config update of SSLFactory failed" in str(e.value)
    assert served_ou(node.controller_port, certs) == before
    alter(certs.server_rotated_pem)
    c.wait(lambda _: served_ou(node.controller_port, certs) == "rotated",
           "node 1's controller listener presenting the rotated certificate")
    # Put back: the module's other tests expect the original certificate.
    alter(certs.server_pem)
    c.wait(lambda _: served_ou(node.controller_port, certs) == before, "the original certificate back")
    round_trip(c)


def command_config(tmp_path, name: str, props: dict) -> str:
    path = tmp_path / f"{name}.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return str(path)


def quorum_tool_describes(c: Cluster, config: str):
    """`kafka-metadata-quorum.sh --bootstrap-controller` at node 1's controller port, as `config` says."""
    ctl = f"127.0.0.1:{c.nodes[1].controller_port}"
    common = ("--bootstrap-controller", ctl, "--command-config", config, "describe")
    status = status_fields(tool(QUORUM_TOOL, *common, "--status"))
    assert int(status["LeaderId"]) in (1, 2, 3), status
    assert sorted(v["id"] for v in json.loads(status["CurrentVoters"])) == [1, 2, 3], status
    rows = replication_rows(tool(QUORUM_TOOL, *common, "--replication"))
    assert sorted(int(r["NodeId"]) for r in rows if r["Status"] != "Observer") == [1, 2, 3], rows


@pytest.mark.kafka_tools
def test_mtls_controller_listener_serves_the_quorum_tool(tls_cluster, tmp_path):
    c, certs = tls_cluster
    config = command_config(tmp_path, "mtls", {
        "security.protocol": "SSL",
        "ssl.keystore.type": "PKCS12", "ssl.keystore.location": certs.server_p12,
        "ssl.keystore.password": PASSWORD,
        "ssl.truststore.type": "PKCS12", "ssl.truststore.location": certs.truststore_p12,
        "ssl.truststore.password": PASSWORD,
        "ssl.endpoint.identification.algorithm": "",
    })
    quorum_tool_describes(c, config)


# ---------------------------------------------------------------- SASL_PLAINTEXT with PLAIN
@pytest.fixture(scope="module")
def sasl_cluster():
    c = Cluster({
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
        "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
        "sasl.mechanism.controller.protocol": "PLAIN",
        "listener.name.controller.plain.sasl.jaas.config":
            f'{PLAIN_MODULE} required username="controller" password="ctl-pw" '
            f'user_controller="ctl-pw" user_mallory="mallory-pw";',
        "super.users": "User:controller",
    })
    try:
        yield c.start()
    finally:
        c.close()


def sasl_login(port: int, user: str, password: str):
    c = k.Connection(f"127.0.0.1:{port}", timeout=10)
    err, _ = handshake(c, "PLAIN")
    assert err == 0
    return c, authenticate(c, f"\0{user}\0{password}".encode())


def test_sasl_controllers_register_brokers_and_replicate(sasl_cluster):
    round_trip(sasl_cluster)


def test_sasl_controller_port_closes_unauthenticated_and_unauthorized_peers(sasl_cluster):
    c = sasl_cluster
    port = c.nodes[2].controller_port
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        assert not ask_image(s), "a frame without SASL was answered"
    conn, (err, msg, _, _) = sasl_login(port, "controller", "wrong")
    assert err == SASL_AUTHENTICATION_FAILED, msg
    assert conn.is_closed_by_peer(), "still open after a wrong password"
    conn.close()
    conn, (err, msg, _, _) = sasl_login(port, "mallory", "mallory-pw")
    assert err == 0, msg
    assert not ask_image(conn.sock), "an authenticated user that is not a super user was answered"
    conn.close()
    wait_log(c, 2, "User:mallory is not in super.users")
    # The control: the super user is answered.
    conn, (err, msg, _, _) = sasl_login(port, "controller", "ctl-pw")
    assert err == 0, msg
    assert ask_image(conn.sock), "the super user was not answered"
    conn.close()


def sasl_config(tmp_path, user: str, password: str) -> str:
    return command_config(tmp_path, user, {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": f'{PLAIN_MODULE} required username="{user}" password="{password}";',
        "request.timeout.ms": "10000",
        "default.api.timeout.ms": "15000",
    })


@pytest.mark.kafka_tools
def test_sasl_controller_listener_serves_the_quorum_tool_to_authorized_users_only(sasl_cluster, tmp_path):
    c = sasl_cluster
    quorum_tool_describes(c, sasl_config(tmp_path, "controller", "ctl-pw"))
    # mallory authenticates but may not DESCRIBE (nor ALTER) the cluster.
    ctl = f"127.0.0.1:{c.nodes[1].controller_port}"
    res = run_tool(QUORUM_TOOL, "--bootstrap-controller", ctl, "--command-config",
                   sasl_config(tmp_path, "mallory", "mallory-pw"), "describe", "--status")
    assert res.returncode != 0, res.stdout
    assert "ClusterAuthorizationException" in res.stderr + res.stdout, res.stderr[-3000:]
    wait_log(c, 1, "request refused, not authorized")


def test_sasl_ssl_controllers_register_brokers_and_replicate(tmp_path_factory):
    """SASL_SSL: TLS (server certificate only), then the PLAIN login inside it."""
    certs = Certs(tmp_path_factory.mktemp("ctl-sasl-ssl-certs"))
    c = Cluster({
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_SSL",
        "listener.name.controller.ssl.keystore.type": "PEM",
        "listener.name.controller.ssl.keystore.location": certs.server_pem,
        "listener.name.controller.ssl.truststore.type": "PEM",
        "listener.name.controller.ssl.truststore.location": certs.ca,
        "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
        "sasl.mechanism.controller.protocol": "PLAIN",
        "listener.name.controller.plain.sasl.jaas.config":
            f'{PLAIN_MODULE} required username="controller" password="ctl-pw" user_controller="ctl-pw";',
        "super.users": "User:controller",
    })
    try:
        c.start()
        round_trip(c)
        with socket.create_connection(("127.0.0.1", c.nodes[1].controller_port), timeout=10) as s:
            assert not ask_image(s), "plain TCP was answered on a SASL_SSL controller listener"
    finally:
        c.close()


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def test_sasl_controller_port_refuses_large_unauthenticated_frames(sasl_cluster):
    """The attack of issue 14: 40 connections each announcing a 64 MiB frame and sending part of it."""
    c = sasl_cluster
    node = c.nodes[3]
    before = rss_kib(node.proc.pid)
    socks = []
    for _ in range(40):
        s = socket.create_connection(("127.0.0.1", node.controller_port), timeout=10)
        try:
            s.sendall(struct.pack(">I", 64 << 20) + b"x" * (1 << 20))
        except OSError:  # closed by the peer while sending
            pass
        socks.append(s)
    closed = sum(1 for s in socks if k.Connection.is_closed_by_peer(_Wrap(s)))
    after = rss_kib(node.proc.pid)
    print(f"40 connections x (64 MiB announced, 1 MiB sent): controller RSS {before} KiB -> {after} KiB")
    for s in socks:
        s.close()
    assert closed == 40, f"only {closed} of 40 connections were closed"


def closed_within(socks, want: int, timeout: float) -> list:
    """The sockets the peer closes (EOF or reset) within `timeout`, returning early once `want` are."""
    closed, deadline = [], time.monotonic() + timeout
    while len(closed) < want and time.monotonic() < deadline:
        open_ = [s for s in socks if s not in closed]
        readable, _, _ = select.select(open_, [], [], max(0.0, deadline - time.monotonic()))
        for s in readable:
            try:
                if s.recv(1) == b"":
                    closed.append(s)
            except OSError:
                closed.append(s)
    return closed


class _Wrap:
    """A bare socket as kproto.Connection.is_closed_by_peer expects it."""

    def __init__(self, sock):
        self.sock = sock


# ---------------------------------------------------------------- limits on an open listener
def test_open_controller_listener_caps_connections_and_closes_stalled_frames():
    cport = free_port()
    b = BrokerProcess({
        "controller.quorum.voters": f"1@127.0.0.1:{cport}",
        "listener.name.controller.max.connections": "8",
        "listener.name.controller.connections.max.idle.ms": "5000",
    })
    base_argv = b.argv
    b.argv = lambda: base_argv() + ["--node-id", "1", "--controller-listen", f"127.0.0.1:{cport}"]
    try:
        b.start()
        before = rss_kib(b.proc.pid)
        socks = []
        for _ in range(40):
            s = socket.create_connection(("127.0.0.1", cport), timeout=10)
            try:
                s.sendall(struct.pack(">I", 64 << 20) + b"x" * (256 << 10))
            except (ConnectionResetError, BrokenPipeError):
                pass
            socks.append(s)
        # Past max.connections (the process's own controller client holds a slot too): closed at once, while
        # the admitted ones are still open (their idle timeout, 5 s, is far off).
        refused = closed_within(socks, want=32, timeout=2.0)
        assert 32 <= len(refused) < 40, f"{len(refused)} of 40 connections closed past max.connections=8"
        held = [s for s in socks if s not in refused]
        after = rss_kib(b.proc.pid)
        print(f"{len(held)} held connections x (64 MiB announced, 256 KiB sent): RSS {before} KiB -> {after} KiB")
        # Stalled mid-frame: closed after connections.max.idle.ms (5 s), well within this bound.
        for s in held:
            assert k.Connection.is_closed_by_peer(_Wrap(s), timeout=30), "a stalled connection stayed open"
        for s in socks:
            s.close()
        assert "max.connections reached" in b.log_tail(2000)
    finally:
        b.close()
