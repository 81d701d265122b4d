"""ACLs and the StandardAuthorizer (issue 14): Kafka's own kafka-acls tool (org.apache.kafka.tools.AclCommand)
against Runnel, and the decisions seen by a raw-protocol client whose principal is User:ANONYMOUS (no TLS/SASL
yet): deny by default, an ALLOW opens produce/consume, a DENY wins, super.users allows everything.

Expected codes are Kafka 4.4.0's (KafkaApis / AclApis): TOPIC_AUTHORIZATION_FAILED 29, GROUP_ 30, CLUSTER_ 31,
SECURITY_DISABLED 54 for the ACL APIs without an authorizer.
"""

from __future__ import annotations

import time

import pytest

import kproto as k
from conftest import MODE, make_topic, new_broker
from test_kafka_tools import tool

pytestmark = [pytest.mark.kafka_tools,
              pytest.mark.skipif(MODE != "runnel", reason="starts brokers with authorizer settings")]

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ACL_TOOL = "org.apache.kafka.tools.AclCommand"
TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED, SECURITY_DISABLED = 29, 30, 54
DESCRIBE_ACLS, FIND_COORDINATOR = 29, 10


def acls(bootstrap, *args):
    return tool(ACL_TOOL, "--bootstrap-server", bootstrap, *args)


def describe_acls_error(bootstrap) -> int:
    """DescribeAcls v1 with a match-everything filter → the top-level error code."""
    body = (k.Writer().i8(1).string(None).i8(1).string(None).string(None).i8(1).i8(1)).buf
    with k.Connection(bootstrap) as c:
        r = c.request(DESCRIBE_ACLS, 1, bytes(body))
        r.i32()  # throttle
        return r.i16()


def find_coordinator_error(bootstrap, group) -> int:
    """FindCoordinator v1 for a group → its error code."""
    body = k.Writer().string(group).i8(0).buf
    with k.Connection(bootstrap) as c:
        r = c.request(FIND_COORDINATOR, 1, bytes(body))
        r.i32()  # throttle
        return r.i16()


def produce_error(bootstrap, topic) -> int:
    with k.Connection(bootstrap) as c:
        return k.produce(c, topic, 0, k.encode_batch([k.Record(b"k", b"v")])).error


def fetch_error(bootstrap, topic) -> int:
    with k.Connection(bootstrap) as c:
        return k.fetch(c, topic, 0, 0).error


def _all_topics(c) -> dict:
    # Metadata v1+ with a null topic list = every topic the principal may DESCRIBE.
    w = k.Writer().i32(-1).i8(1).i8(0).i8(0)
    r = c.request(3, 8, bytes(w.buf))
    r.i32()
    r.array(lambda r: (r.i32(), r.string(), r.i32(), r.string()))
    r.string()
    r.i32()
    names = {}
    for _ in range(r.i32()):
        err, name, _internal = r.i16(), r.string(), r.i8()
        for _ in range(r.i32()):
            r.i16(), r.i32(), r.i32(), r.i32()
            r.array(lambda r: r.i32())
            r.array(lambda r: r.i32())
            r.array(lambda r: r.i32())
        r.i32()
        names[name] = err
    return names


def test_acl_apis_without_an_authorizer_answer_security_disabled(broker):
    assert describe_acls_error(broker.bootstrap) == SECURITY_DISABLED


def test_kafka_acls_tool_add_list_remove_with_prefixes():
    b = new_broker({"authorizer.class.name": STANDARD, "super.users": "User:ANONYMOUS"})
    try:
        bs = b.bootstrap
        acls(bs, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--operation", "Write",
             "--topic", "orders")
        acls(bs, "--add", "--deny-principal", "User:bob", "--operation", "All", "--topic", "pay-",
             "--resource-pattern-type", "prefixed")
        acls(bs, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--group", "g1")
        out = acls(bs, "--list")
        assert "name=orders, patternType=LITERAL" in out, out
        assert "name=pay-, patternType=PREFIXED" in out, out
        assert "principal=User:alice, host=*, operation=READ, permissionType=ALLOW" in out, out
        assert "principal=User:bob, host=*, operation=ALL, permissionType=DENY" in out, out
        assert "resourceType=GROUP, name=g1" in out, out
        # --list --topic uses a MATCH filter: the prefixed ACL applies to pay-2024 and is listed.
        out = acls(bs, "--list", "--topic", "pay-2024", "--resource-pattern-type", "match")
        assert "name=pay-, patternType=PREFIXED" in out and "orders" not in out, out
        # ACLs survive a restart (the registry's change log).
        b.restart()
        acls(bs, "--remove", "--force", "--allow-principal", "User:alice", "--operation", "Write",
             "--topic", "orders")
        out = acls(bs, "--list", "--topic", "orders")
        assert "operation=READ" in out and "operation=WRITE" not in out, out
        acls(bs, "--remove", "--force", "--topic", "pay-", "--resource-pattern-type", "prefixed")
        out = acls(bs, "--list")
        assert "pay-" not in out and "name=orders" in out, out
    finally:
        b.close()


def test_deny_by_default_allow_opens_deny_wins_super_user_allows(topic):
    # Set up as a super user: the topic, and the cluster ACLs that let ANONYMOUS manage ACLs afterwards.
    b = new_broker({"authorizer.class.name": STANDARD, "super.users": "User:ANONYMOUS"})
    try:
        bs = b.bootstrap
        make_topic(bs, topic, 1)
        other = topic + "-other"
        make_topic(bs, other, 1)
        acls(bs, "--add", "--allow-principal", "User:ANONYMOUS", "--operation", "Alter", "--operation",
             "Describe", "--cluster")
        b.sets.pop("super.users")
        b.restart()

        # Deny by default: no ACL on the topic or group.
        assert produce_error(bs, topic) == TOPIC_AUTHORIZATION_FAILED
        assert fetch_error(bs, topic) == TOPIC_AUTHORIZATION_FAILED
        with k.Connection(bs) as c:
            assert k.metadata(c, [topic])[topic][0] == TOPIC_AUTHORIZATION_FAILED
        assert topic not in _all_topics_of(bs)
        assert find_coordinator_error(bs, "g1") == GROUP_AUTHORIZATION_FAILED

        # An ALLOW for User:ANONYMOUS opens produce and consume (READ/WRITE imply DESCRIBE: Metadata lists it).
        acls(bs, "--add", "--allow-principal", "User:ANONYMOUS", "--operation", "Write", "--operation",
             "Read", "--topic", topic)
        assert produce_error(bs, topic) == 0
        assert fetch_error(bs, topic) == 0
        listed = _all_topics_of(bs)
        assert topic in listed and other not in listed, listed

        # A DENY wins, here through a prefixed pattern and only for WRITE.
        acls(bs, "--add", "--deny-principal", "User:ANONYMOUS", "--operation", "Write", "--topic", topic[:6],
             "--resource-pattern-type", "prefixed")
        assert produce_error(bs, topic) == TOPIC_AUTHORIZATION_FAILED
        assert fetch_error(bs, topic) == 0

        # super.users allows everything, DENY or not.
        b.sets["super.users"] = "User:ANONYMOUS"
        b.restart()
        assert produce_error(bs, topic) == 0
        assert produce_error(bs, other) == 0
        assert find_coordinator_error(bs, "g1") == 0
    finally:
        b.close()


def test_allow_everyone_if_no_acl_found(topic):
    b = new_broker({"authorizer.class.name": STANDARD, "allow.everyone.if.no.acl.found": "true"})
    try:
        make_topic(b.bootstrap, topic, 1)
        assert produce_error(b.bootstrap, topic) == 0
        assert fetch_error(b.bootstrap, topic) == 0
    finally:
        b.close()


def eventually(cond, what: str, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.2)


def _all_topics_of(bootstrap) -> dict:
    with k.Connection(bootstrap) as c:
        return _all_topics(c)


@pytest.mark.cluster
def test_acls_created_through_one_broker_apply_on_the_others():
    """ACLs are metadata-log records: created through node 1, every node's authorizer has them; removed through
    node 3, none has them. (super.users=User:ANONYMOUS: the brokers' replica fetches are anonymous too.)"""
    from test_cluster import Cluster
    c = Cluster({"authorizer.class.name": STANDARD, "super.users": "User:ANONYMOUS"}).start()
    try:
        n1, n2, n3 = (c.nodes[i].bootstrap for i in (1, 2, 3))
        acls(n1, "--add", "--allow-principal", "User:carol", "--operation", "Read", "--topic", "shared-",
             "--resource-pattern-type", "prefixed")
        want = "principal=User:carol, host=*, operation=READ, permissionType=ALLOW"
        for b in (n1, n2, n3):
            # The creating broker answers once its own image has the ACL; the others follow the log.
            eventually(lambda: want in acls(b, "--list", "--topic", "shared-", "--resource-pattern-type",
                                            "prefixed"), f"the ACL listed by {b}")
        acls(n3, "--remove", "--force", "--topic", "shared-", "--resource-pattern-type", "prefixed")
        for b in (n1, n2, n3):
            eventually(lambda: "User:carol" not in acls(b, "--list"), f"the ACL gone from {b}")
    finally:
        c.close()
