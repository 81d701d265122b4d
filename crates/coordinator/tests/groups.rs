//! Group membership tests with injected time (no sleeps).

mod common;

use bytes::Bytes;
use common::*;
use coordinator::*;
use types::ErrorCode;

const G: &str = "g";

#[test]
fn single_member_join_sync_heartbeat() {
    let mut h = H::new();
    let (id, rid, fx) = h.join_new(join_req(G, ""));
    assert!(join_resp(&fx, rid).is_none());
    assert_eq!(h.c.group_state(G), Some(GroupState::PreparingRebalance));
    // The first rebalance of an Empty group waits group.initial.rebalance.delay.ms, then completes.
    assert_eq!(h.c.next_deadline(), Some(h.now + 3_000));
    assert!(join_responses(&h.advance(2_999)).is_empty());
    let fx = h.advance(1);
    let r = join_resp(&fx, rid).unwrap();
    assert_eq!(
        (
            r.error_code,
            r.generation_id,
            r.leader.as_str(),
            r.member_id.as_str()
        ),
        (ErrorCode::NONE, 1, id.as_str(), id.as_str())
    );
    assert_eq!(r.protocol_name.as_deref(), Some("range"));
    assert_eq!(r.protocol_type.as_deref(), Some("consumer"));
    assert_eq!(r.members.len(), 1);
    assert_eq!(r.members[0].metadata, subscription(&[TOPIC]));
    assert_eq!(h.c.group_state(G), Some(GroupState::CompletingRebalance));
    // Heartbeat between JoinGroup response and SyncGroup is fine.
    assert_eq!(h.heartbeat(G, &id, 1), ErrorCode::NONE);

    let req = h.sync_req(G, &id, 1, vec![(id.clone(), Bytes::from_static(b"A"))]);
    let (srid, fx) = h.sync(req);
    // The group record is persisted before the response.
    let persist_pos = fx
        .iter()
        .position(|e| matches!(e, Effect::Persist(GroupRecord::GroupMetadata { .. })))
        .unwrap();
    let resp_pos = fx
        .iter()
        .position(|e| matches!(e, Effect::SyncResponse { .. }))
        .unwrap();
    assert!(persist_pos < resp_pos);
    let s = sync_resp(&fx, srid).unwrap();
    assert_eq!(
        (s.error_code, s.assignment.as_ref()),
        (ErrorCode::NONE, &b"A"[..])
    );
    assert_eq!(s.protocol_name.as_deref(), Some("range"));
    assert_eq!(h.c.group_state(G), Some(GroupState::Stable));
    assert_eq!(h.heartbeat(G, &id, 1), ErrorCode::NONE);
    assert_eq!(h.heartbeat(G, &id, 0), ErrorCode::ILLEGAL_GENERATION);
    assert_eq!(h.heartbeat(G, "nobody", 1), ErrorCode::UNKNOWN_MEMBER_ID);
    assert_eq!(h.heartbeat("other", &id, 1), ErrorCode::UNKNOWN_MEMBER_ID);
    // Sync again while Stable returns the same assignment at once.
    let req = h.sync_req(G, &id, 1, vec![]);
    let (srid, fx) = h.sync(req);
    assert_eq!(sync_resp(&fx, srid).unwrap().assignment.as_ref(), b"A");
}

/// Pitfall 9: several members; member id required; one generation bump; the leader gets every member's
/// metadata; the assignor is one every member supports; each member gets its bytes (empty when none); nobody
/// ever sees UNKNOWN_MEMBER_ID.
#[test]
fn pitfall_9_three_member_rebalance() {
    let mut h = H::new();
    let mut reqs = Vec::new();
    for (client, protos) in [
        ("a", &["cooperative-sticky", "range"][..]),
        ("b", &["range"][..]),
        ("c", &["roundrobin", "range"][..]),
    ] {
        let mut r = join_req(G, "");
        r.client_id = client.into();
        r.api_version = 7;
        r.protocols = protocols(protos);
        reqs.push(r);
    }
    let mut ids = Vec::new();
    let mut rids = Vec::new();
    for (i, mut r) in reqs.into_iter().enumerate() {
        let (rid, fx) = h.join(r.clone());
        let resp = join_resp(&fx, rid).unwrap();
        assert_eq!(resp.error_code, ErrorCode::MEMBER_ID_REQUIRED);
        assert!(resp.member_id.starts_with(&format!("{}-", r.client_id)));
        r.member_id = resp.member_id.clone();
        let (rid, fx) = h.join(r);
        assert!(join_resp(&fx, rid).is_none());
        ids.push(resp.member_id);
        rids.push(rid);
        if i < 2 {
            h.advance(1_000);
        }
    }
    // Joined at +0, +1000, +2000: the 3 s delay is extended once per joiner window, then completes.
    let mut all = Vec::new();
    for _ in 0..20 {
        all.extend(h.advance(500));
    }
    let resps: Vec<JoinResult> = rids.iter().map(|r| join_resp(&all, *r).unwrap()).collect();
    assert!(all
        .iter()
        .all(|e| !matches!(e, Effect::JoinResponse { response, .. } if response.error_code != ErrorCode::NONE)));
    let leader = resps[0].leader.clone();
    for r in &resps {
        assert_eq!(r.error_code, ErrorCode::NONE);
        assert_eq!(r.generation_id, 1, "one generation bump per rebalance");
        assert_eq!(
            r.protocol_name.as_deref(),
            Some("range"),
            "the only protocol all three support"
        );
        assert_eq!(r.leader, leader);
        if r.member_id == leader {
            let mut got: Vec<String> = r.members.iter().map(|m| m.member_id.clone()).collect();
            got.sort();
            let mut want = ids.clone();
            want.sort();
            assert_eq!(got, want, "the leader gets every member");
            assert!(r
                .members
                .iter()
                .all(|m| m.metadata == subscription(&[TOPIC])));
        } else {
            assert!(r.members.is_empty(), "followers get no members");
        }
    }
    // Followers sync first and wait; the leader assigns to itself and one follower only.
    let followers: Vec<String> = ids.iter().filter(|i| **i != leader).cloned().collect();
    let mut waiting = Vec::new();
    for f in &followers {
        let req = h.sync_req(G, f, 1, vec![]);
        let (rid, fx) = h.sync(req);
        assert!(sync_resp(&fx, rid).is_none());
        waiting.push(rid);
    }
    let req = h.sync_req(
        G,
        &leader,
        1,
        vec![
            (leader.clone(), Bytes::from_static(b"L")),
            (followers[0].clone(), Bytes::from_static(b"F0")),
        ],
    );
    let (lrid, fx) = h.sync(req);
    assert_eq!(sync_resp(&fx, lrid).unwrap().assignment.as_ref(), b"L");
    assert_eq!(
        sync_resp(&fx, waiting[0]).unwrap().assignment.as_ref(),
        b"F0"
    );
    let empty = sync_resp(&fx, waiting[1]).unwrap();
    assert_eq!(
        (empty.error_code, empty.assignment.len()),
        (ErrorCode::NONE, 0),
        "empty but present"
    );
    assert_eq!(h.c.group_generation(G), Some(1));
    for id in &ids {
        assert_eq!(h.heartbeat(G, id, 1), ErrorCode::NONE);
    }
}

#[test]
fn member_id_required_only_from_v4_and_pending_expires() {
    let mut h = H::new();
    // v3: no KIP-394 round trip; the member is added at once.
    let mut r = join_req(G, "");
    r.api_version = 3;
    let (rid, fx) = h.join(r);
    assert!(join_resp(&fx, rid).is_none());
    let fx = h.advance(3_000);
    let resp = join_resp(&fx, rid).unwrap();
    assert_eq!((resp.error_code, resp.generation_id), (ErrorCode::NONE, 1));
    assert!(resp.member_id.starts_with("client-"));

    // v4 on another group: 79 with an id; if the member never comes back, the id expires after the session
    // timeout and is then unknown.
    let mut r = join_req("g2", "");
    r.api_version = 4;
    let (rid, fx) = h.join(r.clone());
    let resp = join_resp(&fx, rid).unwrap();
    assert_eq!(resp.error_code, ErrorCode::MEMBER_ID_REQUIRED);
    assert_eq!(resp.generation_id, -1);
    h.advance(10_000);
    r.member_id = resp.member_id;
    let (rid, fx) = h.join(r);
    assert_eq!(
        join_resp(&fx, rid).unwrap().error_code,
        ErrorCode::UNKNOWN_MEMBER_ID
    );
    // Unknown member id on an unknown group.
    let (rid, fx) = h.join(join_req("g3", "made-up"));
    assert_eq!(
        join_resp(&fx, rid).unwrap().error_code,
        ErrorCode::UNKNOWN_MEMBER_ID
    );
}

#[test]
fn seeded_member_ids_repeat_per_seed_and_differ_between_seeds() {
    // Two new members' ids (KIP-394 round trip) from a coordinator seeded with `seed`.
    let ids = |seed: Option<u64>| {
        let mut h = H::new();
        if let Some(s) = seed {
            h.c = GroupCoordinator::new(test_config()).with_member_id_seed(s);
        }
        let mut out = Vec::new();
        for group in ["a", "b"] {
            let (rid, fx) = h.join(join_req(group, ""));
            let resp = join_resp(&fx, rid).unwrap();
            assert_eq!(resp.error_code, ErrorCode::MEMBER_ID_REQUIRED);
            assert!(resp.member_id.starts_with("client-"));
            out.push(resp.member_id);
        }
        out
    };
    let (first, again, other) = (ids(Some(7)), ids(Some(7)), ids(Some(8)));
    assert_eq!(first, again, "the same seed gives the same ids");
    assert_ne!(first[0], first[1], "ids of one stream differ");
    assert!(
        first.iter().all(|id| !other.contains(id)),
        "{first:?} vs {other:?}"
    );
    // Unseeded: random UUIDs, as Kafka's.
    assert_ne!(ids(None), ids(None));
}

#[test]
fn new_member_joining_stable_group_rebalances_without_delay() {
    let mut h = H::new();
    let ids = stable_group(&mut h, G, 1);
    let a = ids[0].clone();
    let rebalances = |h: &H| {
        (
            h.c.completed_rebalances(),
            h.c.group_summaries()[0].completed_rebalances,
        )
    };
    assert_eq!(rebalances(&h), (1, 1), "the initial rebalance completed");
    let (b, brid, fx) = h.join_new(join_req(G, ""));
    assert!(join_resp(&fx, brid).is_none());
    assert_eq!(h.c.group_state(G), Some(GroupState::PreparingRebalance));
    // During the rebalance A's heartbeat says rejoin.
    assert_eq!(h.heartbeat(G, &a, 1), ErrorCode::REBALANCE_IN_PROGRESS);
    // A rejoins: everybody is in, the join phase completes at once (no initial delay on a non-empty group).
    let (arid, fx) = h.join(join_req(G, &a));
    let ra = join_resp(&fx, arid).unwrap();
    let rb = join_resp(&fx, brid).unwrap();
    assert_eq!(
        (ra.error_code, rb.error_code),
        (ErrorCode::NONE, ErrorCode::NONE)
    );
    assert_eq!((ra.generation_id, rb.generation_id), (2, 2));
    assert_eq!(ra.leader, a, "the old leader keeps leading");
    assert_eq!(ra.members.len(), 2);
    assert!(rb.members.is_empty());
    // Sync: follower then leader.
    let req = h.sync_req(G, &b, 2, vec![]);
    let (bs, _) = h.sync(req);
    let req = h.sync_req(
        G,
        &a,
        2,
        vec![
            (a.clone(), Bytes::from_static(b"0")),
            (b.clone(), Bytes::from_static(b"1")),
        ],
    );
    let (_, fx) = h.sync(req);
    assert_eq!(sync_resp(&fx, bs).unwrap().assignment.as_ref(), b"1");
    assert_eq!(h.c.group_state(G), Some(GroupState::Stable));
    assert_eq!(
        rebalances(&h),
        (2, 2),
        "completed when the group became Stable again"
    );
}

#[test]
fn stable_follower_rejoin_with_same_metadata_does_not_rebalance_but_leader_rejoin_does() {
    let mut h = H::new();
    let ids = stable_group(&mut h, G, 2);
    let (rid, fx) = h.join(join_req(G, &ids[1]));
    let r = join_resp(&fx, rid).unwrap();
    assert_eq!((r.error_code, r.generation_id), (ErrorCode::NONE, 1));
    assert_eq!(h.c.group_state(G), Some(GroupState::Stable));
    let (rid, fx) = h.join(join_req(G, &ids[0]));
    assert!(join_resp(&fx, rid).is_none());
    assert_eq!(h.c.group_state(G), Some(GroupState::PreparingRebalance));
}

#[test]
fn session_expiry_removes_member_and_rebalances() {
    let mut h = H::new();
    let ids = stable_group(&mut h, G, 2);
    let (a, b) = (ids[0].clone(), ids[1].clone());
    // A heartbeats every 3 s, B stays silent; session timeout is 10 s from the sync.
    for _ in 0..3 {
        h.advance(3_000);
        assert_eq!(h.heartbeat(G, &a, 1), ErrorCode::NONE);
    }
    assert_eq!(h.c.group_state(G), Some(GroupState::Stable));
    h.advance(1_000); // 10 s since B's last sign of life
    assert_eq!(h.c.group_state(G), Some(GroupState::PreparingRebalance));
    assert_eq!(h.heartbeat(G, &b, 1), ErrorCode::UNKNOWN_MEMBER_ID);
    assert_eq!(h.heartbeat(G, &a, 1), ErrorCode::REBALANCE_IN_PROGRESS);
    let (rid, fx) = h.join(join_req(G, &a));
    let r = join_resp(&fx, rid).unwrap();
    assert_eq!(
        (r.error_code, r.generation_id, r.members.len()),
        (ErrorCode::NONE, 2, 1)
    );
}

#[test]
fn rebalance_timeout_removes_members_that_did_not_rejoin() {
    let mut h = H::new();
    let mut ids = stable_group(&mut h, G, 2);
    let (a, b) = (ids.remove(0), ids.remove(0));
    let mut creq = join_req(G, "");
    creq.rebalance_timeout_ms = 20_000;
    let (c, crid, _) = h.join_new(creq);
    let (arid, fx) = h.join(join_req(G, &a));
    assert!(join_resp(&fx, arid).is_none(), "B has not rejoined yet");
    // B keeps heartbeating but never rejoins; the rebalance timeout (max of members' = 30 s) ends the join phase.
    let mut fx = Vec::new();
    for _ in 0..10 {
        fx.extend(h.advance(2_999));
        assert_eq!(h.heartbeat(G, &b, 1), ErrorCode::REBALANCE_IN_PROGRESS);
    }
    assert!(join_responses(&fx).is_empty());
    let fx = h.advance(10);
    let ra = join_resp(&fx, arid).unwrap();
    let rc = join_resp(&fx, crid).unwrap();
    assert_eq!((ra.generation_id, rc.generation_id), (2, 2));
    let leader = if ra.members.is_empty() { &rc } else { &ra };
    let mut members: Vec<String> = leader.members.iter().map(|m| m.member_id.clone()).collect();
    members.sort();
    let mut want = vec![a.clone(), c.clone()];
    want.sort();
    assert_eq!(members, want);
    assert_eq!(h.heartbeat(G, &b, 1), ErrorCode::UNKNOWN_MEMBER_ID);
}

#[test]
fn initial_delay_extends_per_new_member_capped_by_rebalance_timeout() {
    let mut h = H::new();
    let mut r = join_req(G, "");
    r.rebalance_timeout_ms = 10_000;
    let (_, rid0, _) = h.join_new(r.clone());
    // A new member every 2 s: t=0 delay 3 s (7 s left) → t=3 s +3 s (4 s left) → t=6 s +3 s (1 s left)
    // → t=9 s +1 s (0 left) → completes at t=10 s = the rebalance timeout.
    let mut rids = vec![rid0];
    let mut done_at = None;
    for step in 1..=30 {
        let fx = h.advance(500);
        if join_resp(&fx, rid0).is_some() {
            done_at = Some(step * 500);
            break;
        }
        if step % 4 == 0 {
            let (_, rid, _) = h.join_new(r.clone());
            rids.push(rid);
        }
    }
    assert_eq!(done_at, Some(10_000));
    assert_eq!(h.c.group_generation(G), Some(1));

    // No new joiner: completes exactly after the delay.
    let (_, rid, _) = h.join_new(join_req("g2", ""));
    assert!(join_resp(&h.advance(2_999), rid).is_none());
    assert!(join_resp(&h.advance(1), rid).is_some());
}

#[test]
fn later_joins_never_wait_for_the_initial_delay() {
    let mut h = H::new();
    let ids = stable_group(&mut h, G, 1);
    // The member leaves; the group becomes Empty; generation bumps once and is persisted.
    let out = h.c.leave_group(
        h.now,
        G,
        &[LeaveMember {
            member_id: ids[0].clone(),
            group_instance_id: None,
        }],
    );
    assert_eq!(out.response.members[0].error_code, ErrorCode::NONE);
    assert_eq!(h.c.group_state(G), Some(GroupState::Empty));
    assert_eq!(h.c.group_generation(G), Some(2));
    assert!(
        matches!(persisted(&out.effects).last(), Some(GroupRecord::GroupMetadata { value: Some(v), .. }) if v.members.is_empty() && v.generation == 2)
    );
    // A fresh member of the now Empty group waits the delay again (Kafka semantics: first member of an Empty
    // group), but the join of a member into a Stable group does not (see new_member_joining_stable_group...).
    let (_, rid, _) = h.join_new(join_req(G, ""));
    assert!(join_resp(&h.advance(3_000), rid).is_some());
}

#[test]
fn static_member_rejoin_keeps_assignment_without_rebalance_and_fences_old_id() {
    let mut h = H::new();
    let mut reqs = Vec::new();
    let mut rids = Vec::new();
    for inst in ["ia", "ib"] {
        let mut r = join_req(G, "");
        r.group_instance_id = Some(inst.into());
        // Static members get their id at once (no MEMBER_ID_REQUIRED).
        let (rid, fx) = h.join(r.clone());
        assert!(join_resp(&fx, rid).is_none());
        reqs.push(r);
        rids.push(rid);
    }
    h.advance(3_000); // the second joiner extended the initial delay once
    let fx = h.advance(3_000);
    let resps: Vec<JoinResult> = rids.iter().map(|r| join_resp(&fx, *r).unwrap()).collect();
    let leader = resps[0].leader.clone();
    let ids: Vec<String> = resps.iter().map(|r| r.member_id.clone()).collect();
    assert!(ids[0].starts_with("ia-") && ids[1].starts_with("ib-"));
    let follower_idx = if ids[0] == leader { 1 } else { 0 };
    let leader_idx = 1 - follower_idx;
    let mut sreq = h.sync_req(G, &ids[follower_idx], 1, vec![]);
    sreq.group_instance_id = reqs[follower_idx].group_instance_id.clone();
    h.sync(sreq);
    let mut sreq = h.sync_req(
        G,
        &leader,
        1,
        vec![
            (ids[0].clone(), Bytes::from_static(b"A0")),
            (ids[1].clone(), Bytes::from_static(b"A1")),
        ],
    );
    sreq.group_instance_id = reqs[leader_idx].group_instance_id.clone();
    h.sync(sreq);
    assert_eq!(h.c.group_state(G), Some(GroupState::Stable));

    // The follower restarts: same instance id, empty member id → new id, same generation, no rebalance.
    let (rid, fx) = h.join(reqs[follower_idx].clone());
    let r = join_resp(&fx, rid).unwrap();
    assert_eq!(r.error_code, ErrorCode::NONE);
    assert_ne!(r.member_id, ids[follower_idx]);
    assert_eq!(r.generation_id, 1);
    assert_eq!(r.leader, leader);
    assert_eq!(h.c.group_state(G), Some(GroupState::Stable));
    assert!(persisted(&fx).iter().any(|rec| matches!(rec, GroupRecord::GroupMetadata { value: Some(v), .. } if v.members.iter().any(|m| m.member_id == r.member_id))));
    let new_id = r.member_id.clone();
    let inst = reqs[follower_idx].group_instance_id.clone().unwrap();
    let mut sreq = h.sync_req(G, &new_id, 1, vec![]);
    sreq.group_instance_id = Some(inst.clone());
    let (srid, fx) = h.sync(sreq);
    let want: &[u8] = if follower_idx == 0 { b"A0" } else { b"A1" };
    assert_eq!(
        sync_resp(&fx, srid).unwrap().assignment.as_ref(),
        want,
        "old assignment kept"
    );
    // The replaced id is fenced.
    assert_eq!(
        h.heartbeat_static(G, &ids[follower_idx], &inst, 1),
        ErrorCode::FENCED_INSTANCE_ID
    );
    assert_eq!(h.heartbeat_static(G, &new_id, &inst, 1), ErrorCode::NONE);
    let mut sreq = h.sync_req(G, &ids[follower_idx], 1, vec![]);
    sreq.group_instance_id = Some(inst.clone());
    let (srid, fx) = h.sync(sreq);
    assert_eq!(
        sync_resp(&fx, srid).unwrap().error_code,
        ErrorCode::FENCED_INSTANCE_ID
    );
    let mut jreq = reqs[follower_idx].clone();
    jreq.member_id = ids[follower_idx].clone();
    let (jrid, fx) = h.join(jreq);
    assert_eq!(
        join_resp(&fx, jrid).unwrap().error_code,
        ErrorCode::FENCED_INSTANCE_ID
    );
    let commit = h.c.commit_offsets(
        h.now,
        &OffsetCommitRequest {
            api_version: 8,
            group_id: G.into(),
            generation_id: 1,
            member_id: ids[follower_idx].clone(),
            group_instance_id: Some(inst),
            retention_time_ms: -1,
            topics: vec![(
                TOPIC.into(),
                vec![OffsetCommitPartition {
                    partition_index: 0,
                    committed_offset: types::Offset(1),
                    committed_leader_epoch: types::LeaderEpoch(-1),
                    committed_metadata: None,
                }],
            )],
        },
    );
    assert_eq!(commit.response[0].1[0].1, ErrorCode::FENCED_INSTANCE_ID);

    // The leader restarts with JoinGroup v5: it is told the old leader id, so it does not reassign.
    let (rid, fx) = h.join(reqs[leader_idx].clone());
    let r = join_resp(&fx, rid).unwrap();
    assert_eq!(
        (r.error_code, r.generation_id, r.skip_assignment),
        (ErrorCode::NONE, 1, false)
    );
    assert_eq!(r.leader, leader);
    assert_ne!(r.member_id, leader);
    // With v9 (KIP-814) the new leader learns it leads, gets the members, and skips assignment.
    let mut v9 = reqs[leader_idx].clone();
    v9.api_version = 9;
    let (rid, fx) = h.join(v9);
    let r = join_resp(&fx, rid).unwrap();
    assert_eq!((r.error_code, r.skip_assignment), (ErrorCode::NONE, true));
    assert_eq!(r.leader, r.member_id);
    assert_eq!(r.members.len(), 2);
    assert_eq!(h.c.group_generation(G), Some(1));
    assert_eq!(h.c.group_state(G), Some(GroupState::Stable));
}

#[test]
fn static_member_rejoin_during_completing_rebalance_restarts_it_and_fences_parked_sync() {
    let mut h = H::new();
    let mut r = join_req(G, "");
    r.group_instance_id = Some("i".into());
    let (rid, _) = h.join(r.clone());
    let fx = h.advance(3_000);
    let old = join_resp(&fx, rid).unwrap().member_id;
    assert_eq!(h.c.group_state(G), Some(GroupState::CompletingRebalance));
    // The leader may be assigning with the old id: a new rebalance starts, and since the only member has
    // rejoined it completes at once with a new generation.
    let (rid2, fx) = h.join(r);
    let r2 = join_resp(&fx, rid2).unwrap();
    assert_eq!((r2.error_code, r2.generation_id), (ErrorCode::NONE, 2));
    assert_ne!(r2.member_id, old);
    let mut s = h.sync_req(G, &old, 1, vec![]);
    s.group_instance_id = Some("i".into());
    let (srid, fx) = h.sync(s);
    assert_eq!(
        sync_resp(&fx, srid).unwrap().error_code,
        ErrorCode::FENCED_INSTANCE_ID
    );
}

#[test]
fn heartbeat_answers_27_during_rebalance() {
    let mut h = H::new();
    let ids = stable_group(&mut h, G, 2);
    h.join_new(join_req(G, ""));
    assert_eq!(h.c.group_state(G), Some(GroupState::PreparingRebalance));
    for id in &ids {
        assert_eq!(h.heartbeat(G, id, 1), ErrorCode::REBALANCE_IN_PROGRESS);
    }
    // Syncing during the join phase is refused the same way.
    let req = h.sync_req(G, &ids[0], 1, vec![]);
    let (rid, fx) = h.sync(req);
    assert_eq!(
        sync_resp(&fx, rid).unwrap().error_code,
        ErrorCode::REBALANCE_IN_PROGRESS
    );
}

/// Pitfall 10: session timeout removal, and JoinGroup v0 whose rebalance timeout is the session timeout.
#[test]
fn pitfall_10_session_timeout_and_v0_rebalance_timeout() {
    let mut h = H::new();
    let mut v0 = join_req(G, "");
    v0.api_version = 0;
    v0.session_timeout_ms = 10_000;
    v0.rebalance_timeout_ms = -1; // absent in v0
    let (rid, fx) = h.join(v0.clone());
    assert!(
        join_resp(&fx, rid).is_none(),
        "v0 gets no MEMBER_ID_REQUIRED"
    );
    let fx = h.advance(3_000);
    let a = join_resp(&fx, rid).unwrap().member_id;
    let req = h.sync_req(G, &a, 1, vec![(a.clone(), Bytes::from_static(b"x"))]);
    let (_, fx) = h.sync(req);
    match persisted(&fx).last() {
        Some(GroupRecord::GroupMetadata { value: Some(v), .. }) => {
            assert_eq!(
                v.members[0].rebalance_timeout, 10_000,
                "v0 rebalance timeout = session timeout, never -1"
            );
        }
        other => panic!("{other:?}"),
    }
    // A second v0 member joins; A keeps heartbeating (27) but never rejoins: the join phase ends after the
    // rebalance timeout = 10 s, not never.
    let (brid, _) = h.join(v0.clone());
    let mut done = None;
    for i in 1..=20 {
        let fx = h.advance(1_000);
        if i % 3 == 0 {
            assert_eq!(h.heartbeat(G, &a, 1), ErrorCode::REBALANCE_IN_PROGRESS);
        }
        if let Some(r) = join_resp(&fx, brid) {
            done = Some((i, r));
            break;
        }
    }
    let (secs, rb) = done.expect("join phase must end");
    assert_eq!(secs, 10);
    assert_eq!(
        (rb.error_code, rb.generation_id, rb.leader.clone()),
        (ErrorCode::NONE, 2, rb.member_id.clone())
    );
    let b = rb.member_id;
    assert_eq!(h.heartbeat(G, &a, 1), ErrorCode::UNKNOWN_MEMBER_ID);
    let req = h.sync_req(G, &b, 2, vec![]);
    h.sync(req);
    assert_eq!(h.c.group_state(G), Some(GroupState::Stable));
    // B goes silent: after exactly session_timeout_ms it is removed and the group (now memberless) goes Empty.
    h.advance(9_999);
    assert_eq!(h.c.group_state(G), Some(GroupState::Stable));
    h.advance(1);
    assert_eq!(h.c.group_state(G), Some(GroupState::Empty));
    assert_eq!(h.c.group_generation(G), Some(3));
}

#[test]
fn pending_sync_expiry_removes_members_that_never_sync() {
    let mut h = H::new();
    let (a, arid, _) = h.join_new(join_req(G, ""));
    let (b, _brid, _) = h.join_new(join_req(G, ""));
    h.advance(3_000);
    let fx = h.advance(3_000);
    let leader = join_resp(&fx, arid).unwrap().leader;
    let follower = if leader == a { b } else { a };
    let req = h.sync_req(G, &leader, 1, vec![]);
    h.sync(req);
    assert_eq!(h.c.group_state(G), Some(GroupState::Stable));
    // The follower never syncs (but heartbeats): after the rebalance timeout it is dropped and a rebalance starts.
    for _ in 0..10 {
        h.advance(2_999);
        assert_eq!(h.heartbeat(G, &leader, 1), ErrorCode::NONE);
        assert_eq!(h.heartbeat(G, &follower, 1), ErrorCode::NONE);
    }
    h.advance(10);
    assert_eq!(h.c.group_state(G), Some(GroupState::PreparingRebalance));
    assert_eq!(h.heartbeat(G, &follower, 1), ErrorCode::UNKNOWN_MEMBER_ID);
}

#[test]
fn sync_and_join_errors() {
    let mut h = H::new();
    let ids = stable_group(&mut h, G, 2);
    let req = h.sync_req(G, "ghost", 1, vec![]);
    let (rid, fx) = h.sync(req);
    assert_eq!(
        sync_resp(&fx, rid).unwrap().error_code,
        ErrorCode::UNKNOWN_MEMBER_ID
    );
    let req = h.sync_req(G, &ids[1], 7, vec![]);
    let (rid, fx) = h.sync(req);
    assert_eq!(
        sync_resp(&fx, rid).unwrap().error_code,
        ErrorCode::ILLEGAL_GENERATION
    );
    let mut req = h.sync_req(G, &ids[1], 1, vec![]);
    req.protocol_name = Some("roundrobin".into());
    let (rid, fx) = h.sync(req);
    assert_eq!(
        sync_resp(&fx, rid).unwrap().error_code,
        ErrorCode::INCONSISTENT_GROUP_PROTOCOL
    );
    let mut req = h.sync_req(G, &ids[1], 1, vec![]);
    req.protocol_type = Some("connect".into());
    let (rid, fx) = h.sync(req);
    assert_eq!(
        sync_resp(&fx, rid).unwrap().error_code,
        ErrorCode::INCONSISTENT_GROUP_PROTOCOL
    );
    let req = h.sync_req("nope", &ids[1], 1, vec![]);
    let (rid, fx) = h.sync(req);
    assert_eq!(
        sync_resp(&fx, rid).unwrap().error_code,
        ErrorCode::UNKNOWN_MEMBER_ID
    );

    // Protocol type mismatch, no common protocol, session timeout bounds, empty group id.
    let mut r = join_req(G, "");
    r.protocol_type = "connect".into();
    let (rid, fx) = h.join(r);
    assert_eq!(
        join_resp(&fx, rid).unwrap().error_code,
        ErrorCode::INCONSISTENT_GROUP_PROTOCOL
    );
    let mut r = join_req(G, "");
    r.protocols = protocols(&["roundrobin"]);
    let (rid, fx) = h.join(r);
    assert_eq!(
        join_resp(&fx, rid).unwrap().error_code,
        ErrorCode::INCONSISTENT_GROUP_PROTOCOL
    );
    for t in [999, 1_800_001] {
        let mut r = join_req(G, "");
        r.session_timeout_ms = t;
        let (rid, fx) = h.join(r);
        assert_eq!(
            join_resp(&fx, rid).unwrap().error_code,
            ErrorCode::INVALID_SESSION_TIMEOUT
        );
    }
    let (rid, fx) = h.join(join_req("", ""));
    assert_eq!(
        join_resp(&fx, rid).unwrap().error_code,
        ErrorCode::INVALID_GROUP_ID
    );
    let mut r = join_req("fresh", "");
    r.protocols.clear();
    let (rid, fx) = h.join(r);
    assert_eq!(
        join_resp(&fx, rid).unwrap().error_code,
        ErrorCode::INCONSISTENT_GROUP_PROTOCOL
    );
}

#[test]
fn group_max_size() {
    let mut h = H::with_config(GroupConfig {
        group_max_size: 1,
        ..test_config()
    });
    stable_group(&mut h, G, 1);
    let (rid, fx) = h.join(join_req(G, ""));
    // The MEMBER_ID_REQUIRED round trip is refused up front once the group is full.
    assert_eq!(
        join_resp(&fx, rid).unwrap().error_code,
        ErrorCode::GROUP_MAX_SIZE_REACHED
    );
}

#[test]
fn leave_group_batched_and_by_instance_id() {
    let mut h = H::new();
    let mut rids = Vec::new();
    for inst in ["i1", "i2"] {
        let mut r = join_req(G, "");
        r.group_instance_id = Some(inst.into());
        rids.push(h.join(r).0);
    }
    let (dynamic, drid, _) = h.join_new(join_req(G, ""));
    h.advance(3_000); // later joiners extended the initial delay once
    let fx = h.advance(3_000);
    let ids: Vec<String> = rids
        .iter()
        .map(|r| join_resp(&fx, *r).unwrap().member_id)
        .collect();
    assert!(join_resp(&fx, drid).is_some());
    let out = h.c.leave_group(
        h.now,
        G,
        &[
            LeaveMember {
                member_id: String::new(),
                group_instance_id: Some("i1".into()),
            },
            LeaveMember {
                member_id: "wrong".into(),
                group_instance_id: Some("i2".into()),
            },
            LeaveMember {
                member_id: "ghost".into(),
                group_instance_id: None,
            },
            LeaveMember {
                member_id: dynamic.clone(),
                group_instance_id: None,
            },
        ],
    );
    let codes: Vec<ErrorCode> = out.response.members.iter().map(|m| m.error_code).collect();
    assert_eq!(
        codes,
        vec![
            ErrorCode::NONE,
            ErrorCode::FENCED_INSTANCE_ID,
            ErrorCode::UNKNOWN_MEMBER_ID,
            ErrorCode::NONE
        ]
    );
    assert_eq!(out.response.error_code, ErrorCode::NONE);
    // The remaining static member's parked state: group rebalances around it.
    let d = h.c.describe_group(G);
    assert_eq!(
        d.members
            .iter()
            .map(|m| m.member_id.clone())
            .collect::<Vec<_>>(),
        vec![ids[1].clone()]
    );
    let out = h.c.leave_group(
        h.now,
        "unknown-group",
        &[LeaveMember {
            member_id: "x".into(),
            group_instance_id: None,
        }],
    );
    assert_eq!(out.response.error_code, ErrorCode::UNKNOWN_MEMBER_ID);
}

#[test]
fn describe_list_and_delete_groups() {
    let mut h = H::new();
    let ids = stable_group(&mut h, G, 2);
    let d = h.c.describe_group(G);
    assert_eq!(
        (
            d.error_code,
            d.group_state.as_str(),
            d.protocol_type.as_str(),
            d.protocol_data.as_str()
        ),
        (ErrorCode::NONE, "Stable", "consumer", "range")
    );
    assert_eq!(d.members.len(), 2);
    assert!(d
        .members
        .iter()
        .all(|m| m.member_metadata == subscription(&[TOPIC]) && !m.member_assignment.is_empty()));
    let d = h.c.describe_group("none");
    assert_eq!(
        (d.error_code, d.group_state.as_str()),
        (ErrorCode::GROUP_ID_NOT_FOUND, "Dead")
    );

    // An offsets-only group.
    assert_eq!(h.commit("simple", -1, "", 5), ErrorCode::NONE);
    let all = h.c.list_groups(&[]);
    assert_eq!(
        all.iter()
            .map(|g| (
                g.group_id.as_str(),
                g.group_state.as_str(),
                g.protocol_type.as_str()
            ))
            .collect::<Vec<_>>(),
        vec![("g", "Stable", "consumer"), ("simple", "Empty", "")]
    );
    let stable = h.c.list_groups(&["stable".into()]);
    assert_eq!(stable.len(), 1);
    assert!(h.c.list_groups(&["Dead".into()]).is_empty());

    let out =
        h.c.delete_groups(h.now, &[G.into(), "simple".into(), "none".into()]);
    assert_eq!(
        out.response,
        vec![
            (G.into(), ErrorCode::NON_EMPTY_GROUP),
            ("simple".into(), ErrorCode::NONE),
            ("none".into(), ErrorCode::GROUP_ID_NOT_FOUND)
        ]
    );
    let recs = persisted(&out.effects);
    assert!(recs.contains(&GroupRecord::OffsetCommit {
        group: "simple".into(),
        topic: TOPIC.into(),
        partition: 0,
        value: None
    }));
    assert!(recs.contains(&GroupRecord::GroupMetadata {
        group: "simple".into(),
        value: None
    }));
    assert_eq!(h.committed("simple"), -1);
    assert!(h.c.group_state("simple").is_none());
    assert_eq!(ids.len(), 2);
}

#[test]
fn next_deadline_tracks_timers() {
    let mut h = H::new();
    assert_eq!(h.c.next_deadline(), None);
    let (_, _, _) = h.join_new(join_req(G, ""));
    assert_eq!(h.c.next_deadline(), Some(h.now + 3_000));
    let fx = h.advance(3_000);
    assert_eq!(join_responses(&fx).len(), 1);
    // Next: the member's session (10 s) before the sync timeout (30 s) and the retention check.
    assert_eq!(h.c.next_deadline(), Some(h.now + 10_000));
}
