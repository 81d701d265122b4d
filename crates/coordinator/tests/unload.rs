//! Cluster mode: unloading the groups of a `__consumer_offsets` partition on resignation, and loading the
//! groups of one partition into a live coordinator on election.

mod common;

use common::*;
use coordinator::*;
use types::ErrorCode;

#[test]
fn unload_forgets_groups_offsets_and_timers_and_answers_parked_requests() {
    let mut h = H::new();
    // "a": Stable at generation 1 with two members and one committed offset.
    let a = stable_group(&mut h, "a", 2);
    assert_eq!(h.commit("a", 1, &a[0], 7), ErrorCode::NONE);
    // "b": a member's rejoin parked in the initial rebalance delay.
    let (_b_member, b_rid, fx) = h.join_new(join_req("b", ""));
    assert!(join_resp(&fx, b_rid).is_none(), "parked");
    // "c": two members at generation 1 in CompletingRebalance, the follower's SyncGroup parked.
    let (c1, c1_rid, _) = h.join_new(join_req("c", ""));
    let (c2, c2_rid, _) = h.join_new(join_req("c", ""));
    // "keep": an offsets-only group that stays.
    assert_eq!(h.commit("keep", -1, "", 42), ErrorCode::NONE);
    let mut fx = h.advance(3_000);
    if join_resp(&fx, c1_rid).is_none() {
        // The second member extended the initial rebalance delay.
        fx = h.advance(3_000);
    }
    let r1 = join_resp(&fx, c1_rid).unwrap();
    join_resp(&fx, c2_rid).unwrap();
    let follower = if r1.leader == c1 { &c2 } else { &c1 };
    let req = h.sync_req("c", follower, 1, vec![]);
    let (c_sync, fx) = h.sync(req);
    assert!(sync_resp(&fx, c_sync).is_none(), "follower parked");
    // "b"'s join completed in the same tick (initial delay over): park a fresh one by a second member.
    let (_b2, b2_rid, fx) = h.join_new(join_req("b", ""));
    assert!(
        join_resp(&fx, b2_rid).is_none(),
        "parked while b rebalances"
    );

    let fx = h.c.unload_groups(|g| g != "keep");
    assert!(persisted(&fx).is_empty(), "unloading writes nothing");
    assert_eq!(
        join_resp(&fx, b2_rid).map(|r| r.error_code),
        Some(ErrorCode::NOT_COORDINATOR)
    );
    assert_eq!(
        sync_resp(&fx, c_sync).map(|r| r.error_code),
        Some(ErrorCode::NOT_COORDINATOR)
    );
    for g in ["a", "b", "c"] {
        assert!(!h.c.has_group(g), "{g}");
        assert_eq!(
            h.c.describe_group(g).error_code,
            ErrorCode::GROUP_ID_NOT_FOUND
        );
    }
    assert_eq!(h.committed("a"), -1);
    assert_eq!(h.committed("keep"), 42);
    let listed: Vec<String> =
        h.c.list_groups(&[])
            .into_iter()
            .map(|g| g.group_id)
            .collect();
    assert_eq!(listed, vec!["keep".to_string()]);
    // No timer of an unloaded group fires: only the retention check is left.
    let fx = h.advance(60_000);
    assert!(fx.is_empty(), "{fx:?}");
    // Unloading again (or unloading nothing) is a no-op.
    assert!(h.c.unload_groups(|g| g != "keep").is_empty());
    assert_eq!(h.committed("keep"), 42);
}

#[test]
fn load_groups_merges_one_partition_and_starts_only_its_sessions() {
    // The old coordinator of "moved" wrote its records; this coordinator already serves "here".
    let mut old = H::new();
    let moved = stable_group(&mut old, "moved", 1);
    assert_eq!(old.commit("moved", 1, &moved[0], 100), ErrorCode::NONE);
    let records = old.persisted.clone();

    let mut h = H::new();
    h.now = old.now;
    let here = stable_group(&mut h, "here", 1);
    assert_eq!(h.commit("here", 1, &here[0], 5), ErrorCode::NONE);

    let mut replayed = GroupCoordinator::new(test_config());
    for r in records {
        replayed.replay(r);
    }
    // 8 s later "here"'s member has at most 2 s of session left; the loaded member gets a fresh 10 s.
    h.now += 8_000;
    let loaded_at = h.now;
    let fx = h.c.load_groups(h.now, replayed);
    assert!(persisted(&fx).is_empty());
    assert!(h.c.has_group("moved"));
    assert_eq!(h.committed("moved"), 100);
    assert_eq!(h.committed("here"), 5);
    assert_eq!(h.c.group_generation("moved"), Some(1));
    while h.c.group_state("here") == Some(GroupState::Stable) {
        h.advance(100);
        assert!(
            h.now <= loaded_at + 2_000,
            "the session of a group already here was not restarted"
        );
    }
    assert_eq!(h.c.group_state("moved"), Some(GroupState::Stable));
    assert_eq!(h.heartbeat("moved", &moved[0], 1), ErrorCode::NONE);
    // Loading a partition again replaces that partition's groups only.
    let mut again = GroupCoordinator::new(test_config());
    again.replay(GroupRecord::OffsetCommit {
        group: "moved".into(),
        topic: TOPIC.into(),
        partition: 0,
        value: Some(OffsetCommitValue {
            offset: types::Offset(200),
            leader_epoch: types::LeaderEpoch::NONE,
            metadata: String::new(),
            commit_timestamp: h.now,
            expire_timestamp: -1,
        }),
    });
    h.c.unload_groups(|g| g == "moved");
    h.c.load_groups(h.now, again);
    assert_eq!(h.committed("moved"), 200);
    assert_eq!(h.committed("here"), 5);
}
