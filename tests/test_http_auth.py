"""The HTTP listener's guards (issue 17): HTTP Basic authentication against the broker's SCRAM credentials
(`http.authentication.method=BASIC`) with the broker's ACLs deciding what each user may do through the HTTP
API and the console, and the refusals that keep another web site from driving a loopback listener (a foreign
`Host`, `Sec-Fetch-Site: cross-site`, a POST without a JSON content type)."""

from __future__ import annotations

import pytest
import requests
from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient, ResourcePatternType,
                                   ResourceType)

from conftest import MODE, BrokerProcess, assert_rest_error
from test_sasl import add_scram_user

pytestmark = pytest.mark.skipif(MODE != "runnel", reason="Runnel's own HTTP API")

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
TIMEOUT = 10
ADMIN = ("admin", "admin-secret")
ALICE = ("alice", "alice-secret")


@pytest.fixture(scope="module")
def guarded():
    # The Kafka port's unauthenticated admin (User:ANONYMOUS) is a super user, to make users and ACLs; over
    # HTTP nobody is anonymous.
    b = BrokerProcess({"num.partitions": "1", "http.authentication.method": "BASIC",
                       "authorizer.class.name": STANDARD, "super.users": "User:ANONYMOUS;User:admin"}).start()
    add_scram_user(b.bootstrap, *ADMIN)
    add_scram_user(b.bootstrap, *ALICE, mechanism="SCRAM-SHA-512")
    b.base = f"http://127.0.0.1:{b.metrics_port}"
    b.cluster = requests.get(f"{b.base}/v3/clusters", auth=ADMIN, timeout=TIMEOUT).json()["data"][0]["cluster_id"]
    b.v3 = f"{b.base}/v3/clusters/{b.cluster}"
    yield b
    b.close()


def test_basic_authentication_against_scram_credentials(guarded):
    r = requests.get(f"{guarded.base}/v3/clusters", timeout=TIMEOUT)
    assert_rest_error(r, 401)
    assert r.headers["WWW-Authenticate"].startswith('Basic realm="runnel"')
    assert_rest_error(requests.get(f"{guarded.base}/v3/clusters", auth=("alice", "wrong"), timeout=TIMEOUT), 401)
    assert_rest_error(requests.get(f"{guarded.base}/metrics", auth=("mallory", "x"), timeout=TIMEOUT), 401)
    assert_rest_error(requests.get(f"{guarded.base}/console/", timeout=TIMEOUT), 401)
    # The health checks stay open for orchestrators.
    assert requests.get(f"{guarded.base}/health/live", timeout=TIMEOUT).status_code == 200
    # SCRAM-SHA-256 and SCRAM-SHA-512 credentials both log in.
    assert requests.get(f"{guarded.base}/metrics", auth=ADMIN, timeout=TIMEOUT).status_code == 200
    assert requests.get(f"{guarded.base}/console/", auth=ALICE, timeout=TIMEOUT).status_code == 200


def test_acls_decide_what_each_user_may_do(guarded):
    body = {"topic_name": "vault", "partitions_count": 1, "replication_factor": 1}
    assert requests.post(f"{guarded.v3}/topics", json=body, auth=ADMIN, timeout=30).status_code == 201
    names = lambda auth: [t["topic_name"] for t in requests.get(f"{guarded.v3}/topics", auth=auth,
                                                                 timeout=TIMEOUT).json()["data"]]
    assert "vault" in names(ADMIN)
    assert "vault" not in names(ALICE)  # no DESCRIBE: the topic is not shown to her
    other = {"topic_name": "alices", "partitions_count": 1, "replication_factor": 1}
    assert_rest_error(requests.post(f"{guarded.v3}/topics", json=other, auth=ALICE, timeout=30), 403, 40301)
    record = {"value": {"type": "STRING", "data": "hi"}}
    assert_rest_error(requests.post(f"{guarded.v3}/topics/vault/records", json=record, auth=ALICE,
                                    timeout=TIMEOUT), 403, 40301)

    admin = AdminClient({"bootstrap.servers": guarded.bootstrap})
    acls = [AclBinding(ResourceType.TOPIC, "vault", ResourcePatternType.LITERAL, "User:alice", "*", op,
                       AclPermissionType.ALLOW) for op in (AclOperation.DESCRIBE, AclOperation.WRITE)]
    for f in admin.create_acls(acls).values():
        f.result(30)
    assert "vault" in names(ALICE)
    r = requests.post(f"{guarded.v3}/topics/vault/records", json=record, auth=ALICE, timeout=TIMEOUT)
    assert r.status_code == 200 and r.json()["error_code"] == 200, r.text


def test_browser_forgeries_are_refused(guarded):
    url = f"{guarded.base}/v3/clusters"
    # DNS rebinding: a loopback listener answers loopback Host names only.
    assert_rest_error(requests.get(url, auth=ADMIN, headers={"Host": "rebind.attacker.example:9644"},
                                   timeout=TIMEOUT), 403)
    assert requests.get(url, auth=ADMIN, headers={"Host": "localhost"}, timeout=TIMEOUT).status_code == 200
    # A request another site's page makes (Fetch Metadata), even with the browser's cached credentials.
    assert_rest_error(requests.get(url, auth=ADMIN, headers={"Sec-Fetch-Site": "cross-site"}, timeout=TIMEOUT), 403)
    assert requests.get(url, auth=ADMIN, headers={"Sec-Fetch-Site": "same-origin"}, timeout=TIMEOUT).status_code == 200
    # A POST that a form or a no-cors fetch could send: not JSON.
    assert_rest_error(requests.post(f"{guarded.base}/consumers/g", auth=ADMIN, data="",
                                    headers={"Content-Type": "text/plain"}, timeout=TIMEOUT), 415)
    # Wrong methods answer in the REST error shape too.
    assert_rest_error(requests.put(url, auth=ADMIN, timeout=TIMEOUT), 405)
