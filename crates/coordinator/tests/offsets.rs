//! Committed offsets, persistence round trip and retention, with injected time.

mod common;

use bytes::Bytes;
use common::*;
use coordinator::*;
use types::ErrorCode;

const G: &str = "g";

fn commit_req(group: &str, generation: i32, member: &str, version: i16) -> OffsetCommitRequest {
    OffsetCommitRequest {
        api_version: version,
        group_id: group.into(),
        generation_id: generation,
        member_id: member.into(),
        group_instance_id: None,
        retention_time_ms: -1,
        topics: vec![(
            TOPIC.into(),
            vec![
                OffsetCommitPartition {
                    partition_index: 0,
                    committed_offset: types::Offset(10),
                    committed_leader_epoch: types::LeaderEpoch(4),
                    committed_metadata: Some("meta-0".into()),
                },
                OffsetCommitPartition {
                    partition_index: 1,
                    committed_offset: types::Offset(20),
                    committed_leader_epoch: types::LeaderEpoch(-1),
                    committed_metadata: None,
                },
            ],
        )],
    }
}

#[test]
fn non_member_commits_accepted_for_empty_group_refused_for_active_group() {
    let mut h = H::new();
    // Unknown group, generation -1: stored (offsets-only group created).
    let out = h.c.commit_offsets(h.now, &commit_req("simple", -1, "", 8));
    assert_eq!(
        out.response,
        vec![(
            TOPIC.to_string(),
            vec![(0, ErrorCode::NONE), (1, ErrorCode::NONE)]
        )]
    );
    assert_eq!(persisted(&out.effects).len(), 2);
    let f =
        h.c.fetch_offsets("simple", Some(&[(TOPIC.into(), vec![0, 1, 2])]));
    let p = &f.topics[0].1;
    assert_eq!(
        (
            p[0].committed_offset,
            p[0].committed_leader_epoch,
            p[0].metadata.as_str()
        ),
        (types::Offset(10), types::LeaderEpoch(4), "meta-0")
    );
    assert_eq!(
        (
            p[1].committed_offset,
            p[1].committed_leader_epoch,
            p[1].metadata.as_str()
        ),
        (types::Offset(20), types::LeaderEpoch(-1), "")
    );
    assert_eq!(
        (
            p[2].committed_offset,
            p[2].committed_leader_epoch,
            p[2].metadata.as_str()
        ),
        (types::Offset(-1), types::LeaderEpoch(-1), "")
    );
    // Unknown group, generation >= 0: ILLEGAL_GENERATION before v9, GROUP_ID_NOT_FOUND from v9.
    let out = h.c.commit_offsets(h.now, &commit_req("ghost", 3, "m", 8));
    assert_eq!(out.response[0].1[0].1, ErrorCode::ILLEGAL_GENERATION);
    let out = h.c.commit_offsets(h.now, &commit_req("ghost", 3, "m", 9));
    assert_eq!(out.response[0].1[0].1, ErrorCode::GROUP_ID_NOT_FOUND);
    assert!(h.c.group_state("ghost").is_none());

    // Active group: non-member commits are refused; members commit with their generation.
    let ids = stable_group(&mut h, G, 2);
    assert_eq!(h.commit(G, -1, "", 1), ErrorCode::UNKNOWN_MEMBER_ID);
    assert_eq!(h.commit(G, -1, "stranger", 1), ErrorCode::UNKNOWN_MEMBER_ID);
    assert_eq!(h.commit(G, -1, &ids[0], 1), ErrorCode::ILLEGAL_GENERATION);
    assert_eq!(h.commit(G, 0, &ids[0], 1), ErrorCode::ILLEGAL_GENERATION);
    assert_eq!(h.commit(G, 1, &ids[0], 42), ErrorCode::NONE);
    assert_eq!(h.committed(G), 42);
    // Once the group is Empty again, non-member commits are accepted.
    let out = h.c.leave_group(
        h.now,
        G,
        &[
            LeaveMember {
                member_id: ids[0].clone(),
                group_instance_id: None,
            },
            LeaveMember {
                member_id: ids[1].clone(),
                group_instance_id: None,
            },
        ],
    );
    assert!(out
        .response
        .members
        .iter()
        .all(|m| m.error_code == ErrorCode::NONE));
    assert_eq!(h.c.group_state(G), Some(GroupState::Empty));
    assert_eq!(h.commit(G, -1, "", 43), ErrorCode::NONE);
    assert_eq!(h.committed(G), 43);
}

#[test]
fn commit_during_completing_rebalance_and_metadata_limit() {
    let mut h = H::new();
    let (a, rid, _) = h.join_new(join_req(G, ""));
    let fx = h.advance(3_000);
    assert!(join_resp(&fx, rid).is_some());
    assert_eq!(h.commit(G, 1, &a, 1), ErrorCode::REBALANCE_IN_PROGRESS);
    let mut req = commit_req("big", -1, "", 8);
    req.topics[0].1[0].committed_metadata = Some("x".repeat(4097));
    let out = h.c.commit_offsets(h.now, &req);
    assert_eq!(
        out.response[0].1,
        vec![
            (0, ErrorCode::OFFSET_METADATA_TOO_LARGE),
            (1, ErrorCode::NONE)
        ]
    );
}

#[test]
fn fetch_all_offsets_sorted() {
    let mut h = H::new();
    let mut req = commit_req(G, -1, "", 8);
    req.topics.push((
        "a-topic".into(),
        vec![OffsetCommitPartition {
            partition_index: 3,
            committed_offset: types::Offset(7),
            committed_leader_epoch: types::LeaderEpoch(-1),
            committed_metadata: None,
        }],
    ));
    h.c.commit_offsets(h.now, &req);
    let f = h.c.fetch_offsets(G, None);
    assert_eq!(
        f.topics
            .iter()
            .map(|(t, ps)| (t.as_str(), ps.len()))
            .collect::<Vec<_>>(),
        vec![("a-topic", 1), (TOPIC, 2)]
    );
    assert!(h.c.fetch_offsets("none", None).topics.is_empty());
}

#[test]
fn offset_delete_refuses_subscribed_topics() {
    let mut h = H::new();
    let ids = stable_group(&mut h, G, 1);
    let mut req = commit_req(G, 1, &ids[0], 8);
    req.topics.push((
        "other".into(),
        vec![OffsetCommitPartition {
            partition_index: 0,
            committed_offset: types::Offset(1),
            committed_leader_epoch: types::LeaderEpoch(-1),
            committed_metadata: None,
        }],
    ));
    h.c.commit_offsets(h.now, &req);
    let out = h.c.delete_offsets(
        h.now,
        G,
        &[(TOPIC.into(), vec![0]), ("other".into(), vec![0, 9])],
    );
    assert_eq!(out.response.error_code, ErrorCode::NONE);
    assert_eq!(
        out.response.topics,
        vec![
            (
                TOPIC.into(),
                vec![(0, ErrorCode::GROUP_SUBSCRIBED_TO_TOPIC)]
            ),
            (
                "other".into(),
                vec![(0, ErrorCode::NONE), (9, ErrorCode::NONE)]
            )
        ]
    );
    assert_eq!(
        persisted(&out.effects),
        vec![GroupRecord::OffsetCommit {
            group: G.into(),
            topic: "other".into(),
            partition: 0,
            value: None
        }]
    );
    assert_eq!(
        h.c.delete_offsets(h.now, "none", &[]).response.error_code,
        ErrorCode::GROUP_ID_NOT_FOUND
    );

    // A non-consumer group with members cannot delete offsets.
    let mut r = join_req("connect-group", "");
    r.protocol_type = "connect".into();
    h.join_new(r);
    assert_eq!(
        h.c.delete_offsets(h.now, "connect-group", &[])
            .response
            .error_code,
        ErrorCode::NON_EMPTY_GROUP
    );
}

/// Persist → encode → decode → replay into a fresh coordinator rebuilds offsets and the Stable group, whose
/// members' session timers restart at load.
#[test]
fn replay_round_trip() {
    let mut h = H::new();
    let ids = stable_group(&mut h, G, 2);
    assert_eq!(h.commit(G, 1, &ids[0], 100), ErrorCode::NONE);
    h.c.commit_offsets(h.now, &commit_req("simple", -1, "", 8));
    let mut s = join_req("static", "");
    s.group_instance_id = Some("inst".into());
    let (srid, _) = h.join(s);
    let fx = h.advance(3_000);
    let sid = join_resp(&fx, srid).unwrap().member_id;
    let req = h.sync_req(
        "static",
        &sid,
        1,
        vec![(sid.clone(), Bytes::from_static(b"S"))],
    );
    h.sync(req);
    // Keep G's members alive through the 3 s above.
    for id in &ids {
        assert_eq!(h.heartbeat(G, id, 1), ErrorCode::NONE);
    }
    // Commit records from the harness (commit_offsets calls outside it are re-derived below).
    let mut records = h.persisted.clone();
    records.extend(persisted(
        &h.c.commit_offsets(h.now, &commit_req("simple", -1, "", 8))
            .effects,
    ));

    let mut c2 = GroupCoordinator::new(test_config());
    for r in &records {
        let (k, v) = encode_record(r);
        let decoded = decode_record(&k, v.as_deref()).unwrap();
        assert_eq!(&decoded, r);
        c2.replay(decoded);
    }
    let t0 = h.now + 60_000;
    let fx = c2.loaded(t0);
    assert!(fx.is_empty());
    let before = h.c.describe_group(G);
    let after = c2.describe_group(G);
    assert_eq!(after, before);
    assert_eq!(c2.group_generation(G), Some(1));
    assert_eq!(
        c2.describe_group("static").members[0]
            .group_instance_id
            .as_deref(),
        Some("inst")
    );
    assert_eq!(c2.fetch_offsets(G, None), h.c.fetch_offsets(G, None));
    assert_eq!(
        c2.fetch_offsets("simple", None),
        h.c.fetch_offsets("simple", None)
    );
    assert_eq!(c2.list_groups(&[]), h.c.list_groups(&[]));
    // Members heartbeat with their generation as before the restart.
    assert_eq!(
        c2.heartbeat(t0 + 5_000, G, &ids[0], None, 1).response,
        ErrorCode::NONE
    );
    assert_eq!(
        c2.heartbeat(t0 + 5_000, "static", &sid, Some("inst"), 1)
            .response,
        ErrorCode::NONE
    );
    // ids[1] stays silent: 10 s after load it is removed and a rebalance starts.
    c2.tick(t0 + 9_999);
    assert_eq!(c2.group_state(G), Some(GroupState::Stable));
    c2.tick(t0 + 10_000);
    assert_eq!(c2.group_state(G), Some(GroupState::PreparingRebalance));
    assert_eq!(
        c2.heartbeat(t0 + 10_001, G, &ids[0], None, 1).response,
        ErrorCode::REBALANCE_IN_PROGRESS
    );
    // The static member restarting after the broker restart gets its assignment without a rebalance.
    let mut s = join_req("static", "");
    s.group_instance_id = Some("inst".into());
    let fx = c2.join_group(t0 + 10_002, 777, s);
    let r = join_resp(&fx, 777).unwrap();
    assert_eq!((r.error_code, r.generation_id), (ErrorCode::NONE, 1));
    let fx = c2.sync_group(
        t0 + 10_003,
        778,
        SyncGroupRequest {
            group_id: "static".into(),
            generation_id: 1,
            member_id: r.member_id.clone(),
            group_instance_id: Some("inst".into()),
            protocol_type: None,
            protocol_name: None,
            assignments: vec![],
        },
    );
    assert_eq!(sync_resp(&fx, 778).unwrap().assignment.as_ref(), b"S");

    // Tombstones replay too.
    let mut c3 = GroupCoordinator::new(test_config());
    for r in &records {
        c3.replay(r.clone());
    }
    c3.replay(GroupRecord::OffsetCommit {
        group: G.into(),
        topic: TOPIC.into(),
        partition: 0,
        value: None,
    });
    c3.replay(GroupRecord::GroupMetadata {
        group: "static".into(),
        value: None,
    });
    assert_eq!(
        c3.fetch_offsets(G, Some(&[(TOPIC.into(), vec![0])])).topics[0].1[0].committed_offset,
        types::Offset(-1)
    );
    assert!(c3.group_state("static").is_none());
    // Records of other group types are reported, not misread.
    assert!(matches!(
        decode_record(&[0, 9, 0, 1, b'x'], Some(&[0, 0])),
        Err(RecordDecodeError::UnknownKeyVersion(9))
    ));
}

#[test]
fn offsets_retention_expires_empty_groups_only() {
    let hour = 3_600_000;
    let cfg = GroupConfig {
        offsets_retention_ms: hour,
        offsets_retention_check_interval_ms: 600_000,
        ..test_config()
    };
    let mut h = H::with_config(cfg);
    // An offsets-only group and an active consumer group, both committing at t0.
    h.c.commit_offsets(h.now, &commit_req("simple", -1, "", 8));
    let ids = stable_group(&mut h, G, 1);
    let mut req = commit_req(G, 1, &ids[0], 8);
    req.topics.push((
        "unsubscribed".into(),
        vec![OffsetCommitPartition {
            partition_index: 0,
            committed_offset: types::Offset(5),
            committed_leader_epoch: types::LeaderEpoch(-1),
            committed_metadata: None,
        }],
    ));
    h.c.commit_offsets(h.now, &req);
    let t0 = h.now;
    // Keep G alive with heartbeats for 2 hours; checks run every 10 minutes.
    let mut expired = Vec::new();
    while h.now < t0 + 2 * hour {
        expired.extend(persisted(&h.advance(5_000)));
        assert_eq!(h.heartbeat(G, &ids[0], 1), ErrorCode::NONE);
        if h.now < t0 + hour - 5_000 {
            assert!(
                expired.is_empty(),
                "nothing expires before the retention period"
            );
        }
    }
    // The simple group's offsets and the group itself are gone; G keeps its subscribed topic's offsets but the
    // unsubscribed topic's offset expires (Stable consumer group, retention counted from the commit).
    assert!(expired.contains(&GroupRecord::OffsetCommit {
        group: "simple".into(),
        topic: TOPIC.into(),
        partition: 0,
        value: None
    }));
    assert!(expired.contains(&GroupRecord::GroupMetadata {
        group: "simple".into(),
        value: None
    }));
    assert!(h.c.group_state("simple").is_none());
    assert_eq!(h.committed("simple"), -1);
    assert_eq!(h.committed(G), 10);
    assert!(expired.contains(&GroupRecord::OffsetCommit {
        group: G.into(),
        topic: "unsubscribed".into(),
        partition: 0,
        value: None
    }));

    // G's member leaves: the group is Empty from now on; its offsets expire one retention period later (not
    // counted from the commit, which is older), and then the group is deleted.
    let left_at = h.now;
    h.c.leave_group(
        h.now,
        G,
        &[LeaveMember {
            member_id: ids[0].clone(),
            group_instance_id: None,
        }],
    );
    assert_eq!(h.c.group_state(G), Some(GroupState::Empty));
    let mut gone_at = None;
    while h.now < left_at + 2 * hour {
        let fx = h.advance(60_000);
        if persisted(&fx).contains(&GroupRecord::GroupMetadata {
            group: G.into(),
            value: None,
        }) {
            gone_at = Some(h.now);
            break;
        }
    }
    let gone_at = gone_at.expect("empty group expires");
    assert!(
        gone_at >= left_at + hour && gone_at <= left_at + hour + 600_000 + 60_000,
        "{}",
        gone_at - left_at
    );
    assert_eq!(h.committed(G), -1);
    assert!(h.c.group_state(G).is_none());
}

#[test]
fn explicit_retention_time_from_v2_to_v4() {
    let mut h = H::new();
    let mut req = commit_req("simple", -1, "", 2);
    req.retention_time_ms = 1_000;
    let out = h.c.commit_offsets(h.now, &req);
    match &persisted(&out.effects)[0] {
        GroupRecord::OffsetCommit { value: Some(v), .. } => {
            assert_eq!(v.expire_timestamp, h.now + 1_000)
        }
        other => panic!("{other:?}"),
    }
    // Expires at the first retention check after the explicit expiry, long before offsets.retention.minutes.
    h.advance(600_000);
    assert_eq!(h.committed("simple"), -1);
}

#[test]
fn partition_for_matches_kafka() {
    // Utils.abs("my-group".hashCode()) % 50, hashCode computed as Java does.
    let h = java_string_hashcode("my-group");
    assert_eq!(partition_for("my-group", 50), h.abs() % 50);
    assert_eq!(partition_for("polygenelubricants", 50), 0);
}

#[test]
fn deleted_topics_lose_their_offsets_and_empty_groups_go() {
    let mut h = H::new();
    // An offsets-only group on TOPIC, an active group committing TOPIC and "other".
    h.c.commit_offsets(h.now, &commit_req("simple", -1, "", 8));
    let ids = stable_group(&mut h, G, 1);
    let mut req = commit_req(G, 1, &ids[0], 8);
    req.topics.push((
        "other".into(),
        vec![OffsetCommitPartition {
            partition_index: 0,
            committed_offset: types::Offset(5),
            committed_leader_epoch: types::LeaderEpoch(-1),
            committed_metadata: None,
        }],
    ));
    h.c.commit_offsets(h.now, &req);
    let fx = h.c.delete_topics_offsets(h.now, &[TOPIC.to_string()]);
    let recs = persisted(&fx);
    for (group, p) in [("simple", 0), ("simple", 1), (G, 0), (G, 1)] {
        assert!(
            recs.contains(&GroupRecord::OffsetCommit {
                group: group.into(),
                topic: TOPIC.into(),
                partition: p,
                value: None
            }),
            "tombstone for {group} {TOPIC}-{p}: {recs:?}"
        );
    }
    // The offsets-only group had nothing else: gone. G is active and keeps "other".
    assert!(h.c.group_state("simple").is_none());
    assert_eq!(h.committed("simple"), -1);
    assert_eq!(h.committed(G), -1);
    let f = h.c.fetch_offsets(G, Some(&[("other".into(), vec![0])]));
    assert_eq!(f.topics[0].1[0].committed_offset, types::Offset(5));
    assert!(h.c.group_state(G).is_some());
    // Nothing to do for a topic nobody committed.
    assert!(persisted(&h.c.delete_topics_offsets(h.now, &["nobody".to_string()])).is_empty());
}
