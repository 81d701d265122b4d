"""Dynamic group configs (the GROUP config resource, type 32; KIP-848 and KIP-932): Kafka's own
`kafka-configs.sh --entity-type groups` (ConfigCommand) and raw IncrementalAlterConfigs/DescribeConfigs/
ListConfigResources set, describe, list and delete a group's configs, invalid ones are refused with Kafka's
INVALID_CONFIG messages, and the configs survive a restart.

Every expectation was taken from Apache Kafka 4.4.0 (RUNNEL_TEST_BROKER=kafka) and passes against both brokers:
a group's configs may be set whether or not the group exists, DescribeConfigs lists every non-internal group key
(a set one with source DYNAMIC_GROUP_CONFIG and its broker synonym after it), and DeleteGroups leaves them.
Known difference: Kafka fills DescribeConfigs' documentation; Runnel leaves it null (not compared).
"""

from __future__ import annotations

import time
import uuid

import pytest

import kproto as k
from conftest import make_topic
from test_admin_surface import describe_configs, eventually, flexible
from test_broker_configs import incremental_alter
from test_groups import commit_ready, wait_coordinator
from test_kafka_tools import run_tool, tool

GROUP = 32
SET, DELETE, APPEND = 0, 1, 2
DYNAMIC_GROUP, DEFAULT = 8, 5
INVALID_CONFIG, INVALID_REQUEST = 40, 42
CONFIG_TOOL = "org.apache.kafka.tools.ConfigCommand"

# Kafka 4.4's answer for a group without configs on a broker with default settings:
# key -> (value, [(synonym, value, source)], config type).
DEFAULTS = {
    "consumer.assignment.interval.ms": ("1000", [("group.consumer.assignment.interval.ms", "1000", 5)], 3),
    "consumer.heartbeat.interval.ms": ("5000", [("group.consumer.heartbeat.interval.ms", "5000", 5)], 3),
    "consumer.session.timeout.ms": ("45000", [("group.consumer.session.timeout.ms", "45000", 5)], 3),
    "errors.deadletterqueue.copy.record.enable": (
        "false", [("errors.deadletterqueue.copy.record.enable", "false", 5)], 1),
    "errors.deadletterqueue.topic.name": ("", [("errors.deadletterqueue.topic.name", "", 5)], 2),
    "share.assignment.interval.ms": ("1000", [("group.share.assignment.interval.ms", "1000", 5)], 3),
    "share.auto.offset.reset": ("latest", [("share.auto.offset.reset", "latest", 5)], 2),
    "share.delivery.count.limit": ("5", [("group.share.delivery.count.limit", "5", 5)], 3),
    "share.heartbeat.interval.ms": ("5000", [("group.share.heartbeat.interval.ms", "5000", 5)], 3),
    "share.isolation.level": ("read_uncommitted", [("share.isolation.level", "read_uncommitted", 5)], 2),
    "share.partition.max.record.locks": ("2000", [("group.share.partition.max.record.locks", "2000", 5)], 3),
    "share.record.lock.duration.ms": ("30000", [("group.share.record.lock.duration.ms", "30000", 5)], 3),
    "share.renew.acknowledge.enable": ("true", [("share.renew.acknowledge.enable", "true", 5)], 1),
    "share.session.timeout.ms": ("45000", [("group.share.session.timeout.ms", "45000", 5)], 3),
    "streams.assignment.interval.ms": ("1000", [("group.streams.assignment.interval.ms", "1000", 5)], 3),
    "streams.assignor.name": ("sticky", [("group.streams.assignors", "sticky", 5)], 2),
    "streams.heartbeat.interval.ms": ("5000", [("group.streams.heartbeat.interval.ms", "5000", 5)], 3),
    "streams.initial.rebalance.delay.ms": (
        "3000", [("group.streams.initial.rebalance.delay.ms", "3000", 5)], 3),
    "streams.num.standby.replicas": ("0", [("group.streams.num.standby.replicas", "0", 5)], 3),
    "streams.rack.aware.assignment.tags": ("", [("group.streams.rack.aware.assignment.tags", "", 5)], 7),
    "streams.session.timeout.ms": ("45000", [("group.streams.session.timeout.ms", "45000", 5)], 3),
}


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def dynamic(c, group) -> dict:
    """The group's set configs as DescribeConfigs v4 reports them: {key: value}."""
    err, entries = describe_configs(c, GROUP, group)
    assert err == 0
    return {key: e[0] for key, e in entries.items() if e[2] == DYNAMIC_GROUP}


def list_groups_with_configs(c) -> set:
    w = k.Writer()
    k.compact_array(w, [GROUP], lambda w, t: w.i8(t))
    r = flexible(c, 74, 1, w.tags())
    r.i32()
    assert r.i16() == 0
    return {name for name, _t, _ in k.read_compact_array(r, lambda r: (k.read_compact_string(r), r.i8(),
                                                                          r.uvarint()))}


def configs_tool(b, *args):
    return tool(CONFIG_TOOL, "--bootstrap-server", b, "--entity-type", "groups", *args)


def test_describe_of_a_group_without_configs_lists_every_key_with_its_default(broker):
    with k.Connection(broker.bootstrap) as c:
        err, entries = describe_configs(c, GROUP, unique("g-none"))
        assert err == 0
        got = {key: (e[0], e[4], e[5]) for key, e in entries.items()}
        assert got == DEFAULTS
        assert all(e[2] == DEFAULT and not e[1] and not e[3] for e in entries.values())
        err, entries = describe_configs(c, GROUP, "")
        assert err == INVALID_REQUEST


def test_set_describe_list_and_delete_with_kafka_configs(broker):
    b, group = broker.bootstrap, unique("g-tool")
    configs_tool(b, "--entity-name", group, "--alter", "--add-config",
                 "share.auto.offset.reset=earliest,consumer.session.timeout.ms=50000")
    with k.Connection(b) as c:
        eventually(lambda: assert_eq(dynamic(c, group), {"share.auto.offset.reset": "earliest",
                                                         "consumer.session.timeout.ms": "50000"}))
        err, entries = describe_configs(c, GROUP, group, keys=["consumer.session.timeout.ms",
                                                               "share.auto.offset.reset"])
        assert err == 0
        assert entries["consumer.session.timeout.ms"][4] == [
            ("consumer.session.timeout.ms", "50000", DYNAMIC_GROUP),
            ("group.consumer.session.timeout.ms", "45000", DEFAULT)]
        assert entries["share.auto.offset.reset"][4] == [
            ("share.auto.offset.reset", "earliest", DYNAMIC_GROUP), ("share.auto.offset.reset", "latest", DEFAULT)]
        assert group in list_groups_with_configs(c)
    out = configs_tool(b, "--entity-name", group, "--describe")
    assert f"Dynamic configs for group {group} are:" in out
    assert "consumer.session.timeout.ms=50000 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:" \
           "consumer.session.timeout.ms=50000, DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000}" in out
    out = configs_tool(b, "--entity-name", group, "--describe", "--all")
    assert "share.isolation.level=read_uncommitted" in out and "share.auto.offset.reset=earliest" in out
    configs_tool(b, "--entity-name", group, "--alter", "--delete-config",
                 "share.auto.offset.reset,consumer.session.timeout.ms")
    with k.Connection(b) as c:
        eventually(lambda: assert_eq(dynamic(c, group), {}))
        assert group not in list_groups_with_configs(c)


def assert_eq(got, want):
    assert got == want


@pytest.mark.parametrize("key,value,message", [
    ("foo.bar", "1", "Unknown group config name: foo.bar"),
    ("consumer.session.timeout.ms", "1000",
     "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive."),
    ("consumer.session.timeout.ms", "abc",
     "Invalid value abc for configuration consumer.session.timeout.ms: Not a number of type INT"),
    ("share.record.lock.duration.ms", "100",
     "Invalid value 100 for configuration share.record.lock.duration.ms: Value must be at least 1000"),
    ("share.record.lock.duration.ms", "999999999",
     "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive."),
    ("share.delivery.count.limit", "11", "share.delivery.count.limit must be in the range 2 to 10 inclusive."),
    ("share.partition.max.record.locks", "20000",
     "share.partition.max.record.locks must be in the range 100 to 4000 inclusive."),
    ("share.isolation.level", "READ_COMMITTED",
     "Invalid value READ_COMMITTED for configuration share.isolation.level: String must be one of: "
     "read_committed, read_uncommitted"),
    ("share.auto.offset.reset", "by_duration:-PT1H",
     "Invalid value by_duration:-PT1H for configuration share.auto.offset.reset: Invalid value "
     "`by_duration:-PT1H` for configuration share.auto.offset.reset. The value must be either 'earliest', "
     "'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."),
    ("streams.num.standby.replicas", "5", "streams.num.standby.replicas must be less than or equal to 2"),
])
def test_invalid_configs_are_refused_with_kafkas_messages(broker, key, value, message):
    group = unique("g-bad")
    with k.Connection(broker.bootstrap) as c:
        assert incremental_alter(c, GROUP, group, [(key, SET, value)]) == (INVALID_CONFIG, message)
        assert incremental_alter(c, GROUP, group, [(key, SET, value)], validate_only=True) == \
            (INVALID_CONFIG, message)
        assert dynamic(c, group) == {}


def test_raw_alter_validate_only_append_and_empty_name(broker):
    group = unique("g-raw")
    with k.Connection(broker.bootstrap) as c:
        ok = [("share.auto.offset.reset", SET, "by_duration:P1DT2H"), ("share.isolation.level", SET, "read_committed")]
        assert incremental_alter(c, GROUP, group, ok, validate_only=True) == (0, None)
        assert dynamic(c, group) == {}
        assert incremental_alter(c, GROUP, "", ok) == (INVALID_REQUEST, "Default group resources are not allowed.")
        assert incremental_alter(c, GROUP, group, [("share.session.timeout.ms", APPEND, "1")]) == (
            INVALID_CONFIG, "Can't APPEND to key share.session.timeout.ms because its type is not LIST.")
        assert incremental_alter(c, GROUP, group, ok) == (0, None)
        eventually(lambda: assert_eq(dynamic(c, group), {"share.auto.offset.reset": "by_duration:P1DT2H",
                                                         "share.isolation.level": "read_committed"}))


def test_group_configs_outlive_delete_groups_as_in_kafka(broker, topic):
    b, group = broker.bootstrap, unique("g-del")
    make_topic(b, topic, 1)
    assert commit_ready(b, group, topic, 0, 5) == 0
    with k.Connection(b) as c:
        assert incremental_alter(c, GROUP, group, [("share.auto.offset.reset", SET, "earliest")]) == (0, None)
        eventually(lambda: assert_eq(dynamic(c, group), {"share.auto.offset.reset": "earliest"}))
        w = k.Writer().i32(1).string(group)
        r = c.request(42, 1, bytes(w.buf))
        r.i32()
        assert r.array(lambda r: (r.string(), r.i16())) == [(group, 0)]
        time.sleep(1)
        assert dynamic(c, group) == {"share.auto.offset.reset": "earliest"}


@pytest.mark.durability
def test_group_configs_survive_a_restart(fresh_broker):
    b, group = fresh_broker, unique("g-restart")
    with k.Connection(b.bootstrap) as c:
        assert incremental_alter(c, GROUP, group, [("share.record.lock.duration.ms", SET, "20000"),
                                                   ("share.delivery.count.limit", SET, "3")]) == (0, None)
        eventually(lambda: assert_eq(dynamic(c, group), {"share.record.lock.duration.ms": "20000",
                                                         "share.delivery.count.limit": "3"}))
    b.restart()

    def after():
        with k.Connection(b.bootstrap) as c:
            assert dynamic(c, group) == {"share.record.lock.duration.ms": "20000", "share.delivery.count.limit": "3"}
            assert group in list_groups_with_configs(c)
    eventually(after, timeout=60)
    res = run_tool(CONFIG_TOOL, "--bootstrap-server", b.bootstrap, "--entity-type", "groups", "--entity-name",
                   group, "--alter", "--add-config", "share.delivery.count.limit=1")
    assert res.returncode != 0
    assert "share.delivery.count.limit" in res.stdout + res.stderr


def heartbeat_interval(c, api: int, group: str, topic: str) -> int:
    """A joining ConsumerGroupHeartbeat v0 (68; the broker names the member) or ShareGroupHeartbeat v1 (76;
    the client does) of a new member → the HeartbeatIntervalMs of the answer (asserting no error)."""
    member = "" if api == 68 else str(uuid.uuid4())[:22]
    w = k.Writer().compact_string(group).compact_string(member).i32(0)
    if api == 68:
        w.compact_string(None).compact_string(None).i32(30000)
        k.compact_array(w, [topic], lambda w, t: w.compact_string(t))
        w.compact_string(None).uvarint(1)  # no ServerAssignor; TopicPartitions = []
    else:
        w.compact_string(None)
        k.compact_array(w, [topic], lambda w, t: w.compact_string(t))
    r = flexible(c, api, 0 if api == 68 else 1, w.tags())
    r.i32()
    err, message = r.i16(), k.read_compact_string(r)
    assert err == 0, message
    k.read_compact_string(r)
    r.i32()
    return r.i32()


def test_group_timeouts_apply_to_the_groups_heartbeats(broker, topic):
    """consumer.heartbeat.interval.ms / share.heartbeat.interval.ms of a group are what its members are told
    (Kafka's GroupConfigManager), and other groups keep the broker's 5000 ms."""
    consumer, share, other = unique("g-cto"), unique("g-sto"), unique("g-other")
    for group in (consumer, share, other):
        wait_coordinator(broker.bootstrap, group)
    with k.Connection(broker.bootstrap) as c:
        for group, key, value in ((consumer, "consumer.heartbeat.interval.ms", "7000"),
                                  (share, "share.heartbeat.interval.ms", "6000")):
            err, message = incremental_alter(c, GROUP, group, [(key, 0, value)])
            assert err == 0, message
        eventually(lambda: assert_eq(heartbeat_interval(c, 68, consumer, topic), 7000))
        eventually(lambda: assert_eq(heartbeat_interval(c, 76, share, topic), 6000))
        assert heartbeat_interval(c, 68, other, topic) == 5000
