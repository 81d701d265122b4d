"""Feature flags (KIP-584) and UnregisterBroker (KIP-500) against runnel and Kafka 4.4.0.

- ApiVersions v4 lists the supported and finalized features; `kafka-features.sh describe` prints them.
- UpdateFeatures (v1, v2; `validate_only`, so Kafka's levels stay as they are) answers Kafka's codes and
  messages: a no-op update succeeds, an unknown feature, a level beyond the supported range, a negative level,
  an unknown upgrade type or a downgrade without a downgrade type fail the whole request with
  INVALID_UPDATE_VERSION (95).
- UnregisterBroker of an unknown id is BROKER_ID_NOT_REGISTERED (102) with Kafka's message, also through
  `kafka-cluster.sh unregister`. The three-node case is in tests/test_cluster_unregister.py.
"""

from __future__ import annotations

import pytest

import kproto as k
from conftest import MODE
from test_kafka_tools import run_tool, tool
from test_transactions_v2 import api_versions_flex

UPDATE_FEATURES = 57
UNREGISTER_BROKER = 64
INVALID_UPDATE_VERSION = 95
BROKER_ID_NOT_REGISTERED = 102
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3
FAILED = "The update failed for all features since the following feature had an error: "


def update_features(bootstrap: str, updates, version: int = 1, validate_only: bool = True):
    """UpdateFeatures v1+ → (error, message, [(feature, error, message)]) (results only below v2)."""
    w = k.Writer().i32(60000)

    def one(w, u):
        name, level, upgrade_type = u
        w.compact_string(name).i16(level).i8(upgrade_type).tags()

    k.compact_array(w, updates, one)
    w.i8(1 if validate_only else 0).tags()
    with k.Connection(bootstrap) as c:
        r = c.request(UPDATE_FEATURES, version, bytes(w.buf), flexible_header=True, flexible_response=True)
        r.i32()
        err, msg = r.i16(), k.read_compact_string(r)
        results = []
        if version <= 1:
            def result(r):
                out = (k.read_compact_string(r), r.i16(), k.read_compact_string(r))
                r.uvarint()
                return out
            results = k.read_compact_array(r, result)
        return err, msg, results


def unregister_broker(bootstrap: str, broker_id: int):
    """UnregisterBroker v0 → (error, message)."""
    with k.Connection(bootstrap) as c:
        r = c.request(UNREGISTER_BROKER, 0, bytes(k.Writer().i32(broker_id).tags().buf),
                      flexible_header=True, flexible_response=True)
        r.i32()
        return r.i16(), k.read_compact_string(r)


def test_api_versions_v4_lists_the_features(broker):
    with k.Connection(broker.bootstrap) as c:
        err, apis, supported, finalized, epoch = api_versions_flex(c, 4)
    print(f"\nsupported {supported}\nfinalized {finalized} epoch {epoch}")
    assert err == 0 and epoch >= 0
    assert apis[UPDATE_FEATURES] == (0, 2) and apis[UNREGISTER_BROKER] == (0, 0), apis
    for name in ("group.version", "kraft.version", "metadata.version", "share.version", "streams.version",
                 "transaction.version", "eligible.leader.replicas.version"):
        assert name in supported, f"{name} not in supported features {supported}"
    assert supported["transaction.version"] == (0, 2) and finalized["transaction.version"][1] == 2
    lo, hi = supported["metadata.version"]
    assert lo <= finalized["metadata.version"][1] <= hi
    if MODE == "runnel":
        # What Runnel implements: MV 12 (3.6-IV0), kraft.version 1 (KIP-853: voters in the log), group.version 1
        # (the KIP-848 consumer protocol), share.version 1 (KIP-932 share groups), no KIP-966/1071 levels.
        assert supported["metadata.version"] == (12, 12) and finalized["metadata.version"][1] == 12
        assert set(finalized) == {"group.version", "kraft.version", "metadata.version", "share.version",
                                  "transaction.version"}, finalized
        assert supported["kraft.version"] == (0, 1) and finalized["kraft.version"][1] == 1
        assert supported["group.version"] == (0, 1) and finalized["group.version"][1] == 1
        assert supported["share.version"] == (0, 1) and finalized["share.version"][1] == 1
        assert supported["streams.version"] == (0, 0), supported["streams.version"]


def test_kafka_features_describe_prints_the_features(broker):
    out = tool("org.apache.kafka.tools.FeatureCommand", "--bootstrap-server", broker.bootstrap, "describe")
    print(out)
    lines = {line.split()[1]: line for line in out.splitlines() if line.startswith("Feature:")}
    assert "FinalizedVersionLevel: 2" in lines["transaction.version"], out
    assert "metadata.version" in lines and "group.version" in lines, out
    if MODE == "runnel":
        assert "FinalizedVersionLevel: 3.6-IV0" in lines["metadata.version"], out


@pytest.mark.parametrize("version", [1, 2])
def test_update_features_to_the_current_level_succeeds(broker, version):
    err, msg, results = update_features(broker.bootstrap, [("transaction.version", 2, UPGRADE)], version)
    assert (err, msg) == (0, None)
    assert results == ([("transaction.version", 0, "NONE")] if version == 1 else [])
    assert update_features(broker.bootstrap, [], version) == (0, None, [])


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("update,reason", [
    (("transaction.version", 3, UPGRADE), "Invalid update version 3 for feature transaction.version. "
                                          "Local controller 1 only supports versions 0-2"),
    (("transaction.version", 1, UPGRADE), "Invalid update version 1 for feature transaction.version. Can't "
     "downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade."),
    (("transaction.version", -1, UPGRADE), "Invalid update version -1 for feature transaction.version. "
                                           "A feature version cannot be less than 0."),
    (("transaction.version", 2, 7), "Invalid update version 2 for feature transaction.version. "
                                    "The controller does not support the given upgrade type."),
    (("foo.version", 1, UPGRADE), "Invalid update version 1 for feature foo.version. "
                                  "Local controller 1 does not support this feature."),
    (("foo.version", 0, SAFE_DOWNGRADE), "Invalid update version 0 for feature foo.version. "
                                         "Feature foo.version not found."),
])
def test_update_features_refusals_match_kafka(broker, version, update, reason):
    err, msg, results = update_features(broker.bootstrap, [("transaction.version", 2, UPGRADE), update], version)
    assert (err, msg, results) == (INVALID_UPDATE_VERSION, FAILED + reason, [])


def test_update_features_beyond_supported_group_version_is_refused(broker):
    err, msg, _ = update_features(broker.bootstrap, [("group.version", 2, UPGRADE)])
    assert err == INVALID_UPDATE_VERSION
    assert msg.startswith(FAILED + "Invalid update version 2 for feature group.version. Local controller 1 "
                                   "only supports versions 0-"), msg


@pytest.mark.skipif(MODE != "runnel", reason="Runnel's fixed finalized levels; Kafka would change them")
def test_runnel_refuses_to_change_a_finalized_level(broker):
    for validate_only in (True, False):
        err, msg, _ = update_features(broker.bootstrap, [("transaction.version", 1, SAFE_DOWNGRADE)],
                                      validate_only=validate_only)
        assert err == INVALID_UPDATE_VERSION and "cannot change finalized feature levels" in msg, msg


def test_kafka_features_upgrade_dry_run_beyond_supported_fails(broker):
    res = run_tool("org.apache.kafka.tools.FeatureCommand", "--bootstrap-server", broker.bootstrap, "upgrade",
                   "--feature", "transaction.version=3", "--dry-run")
    assert res.returncode == 1, res.stdout + res.stderr
    assert "Local controller 1 only supports versions 0-2" in res.stdout + res.stderr


def test_unregister_unknown_broker_is_broker_id_not_registered(broker):
    assert unregister_broker(broker.bootstrap, 7) == (BROKER_ID_NOT_REGISTERED,
                                                     "Broker ID 7 is not currently registered")
    res = run_tool("org.apache.kafka.tools.ClusterTool", "unregister", "--bootstrap-server", broker.bootstrap,
                   "--id", "7")
    assert res.returncode == 1 and "BrokerIdNotRegisteredException: Broker ID 7 is not currently registered" \
        in res.stdout + res.stderr, res.stdout + res.stderr
