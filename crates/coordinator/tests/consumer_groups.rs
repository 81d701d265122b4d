//! KIP-848 consumer groups through `consumer_group_heartbeat`, with injected time (no sleeps).

use std::collections::{BTreeMap, BTreeSet};

use coordinator::consumer::Assignment;
use coordinator::*;
use types::ErrorCode;
use uuid::Uuid;

const G: &str = "cg";

struct H {
    c: GroupCoordinator,
    now: i64,
    image: TopicsImage,
    log: Vec<GroupRecord>,
    /// What each member owns on its side (what it reports in `topic_partitions`).
    owned: BTreeMap<String, Assignment>,
    epochs: BTreeMap<String, i32>,
}

fn tid(name: &str) -> Uuid {
    Uuid::from_u128(name.bytes().fold(1u128, |h, b| h * 31 + u128::from(b)))
}

impl H {
    fn new(topics: &[(&str, i32)]) -> H {
        H {
            c: GroupCoordinator::new(GroupConfig::default()),
            now: 1_000_000,
            image: image(1, topics),
            log: Vec::new(),
            owned: BTreeMap::new(),
            epochs: BTreeMap::new(),
        }
    }

    fn req(&self, member: &str, epoch: i32) -> ConsumerHeartbeatRequest {
        ConsumerHeartbeatRequest {
            api_version: 1,
            group_id: G.into(),
            member_id: member.into(),
            member_epoch: epoch,
            rebalance_timeout_ms: if epoch == 0 { 30_000 } else { -1 },
            subscribed_topic_names: (epoch == 0).then(|| vec!["t".to_string()]),
            topic_partitions: Some(self.owned.get(member).cloned().unwrap_or_default()),
            client_id: "c".into(),
            client_host: "/127.0.0.1".into(),
            ..Default::default()
        }
    }

    fn send(&mut self, req: ConsumerHeartbeatRequest) -> ConsumerHeartbeatResult {
        let out = self.c.consumer_group_heartbeat(self.now, &req, &self.image);
        for e in out.effects {
            if let Effect::Persist(r) = e {
                self.log.push(r);
            }
        }
        let r = out.response;
        if r.error_code == ErrorCode::NONE {
            let id = r.member_id.clone().unwrap();
            self.epochs.insert(id.clone(), r.member_epoch);
            if let Some(a) = &r.assignment {
                // A client revokes at once and takes what it is given.
                self.owned.insert(id, a.clone());
            }
        }
        r
    }

    /// A heartbeat of `member` at its last epoch (0 to join).
    fn hb(&mut self, member: &str) -> ConsumerHeartbeatResult {
        let epoch = self.epochs.get(member).copied().unwrap_or(0);
        let req = self.req(member, epoch);
        self.send(req)
    }

    /// Heartbeats every member in turn until the group is Stable; asserts no partition is ever owned twice.
    fn settle(&mut self, members: &[&str]) {
        for _ in 0..10 {
            for m in members {
                let r = self.hb(m);
                assert_eq!(r.error_code, ErrorCode::NONE, "{m}: {r:?}");
                self.assert_exclusive();
            }
            if self.c.describe_consumer_group(G).group_state == "Stable" {
                return;
            }
        }
        panic!("not stable: {:?}", self.c.describe_consumer_group(G));
    }

    fn assert_exclusive(&self) {
        let mut seen = BTreeSet::new();
        for a in self.owned.values() {
            for (t, ps) in a {
                for p in ps {
                    assert!(
                        seen.insert((*t, *p)),
                        "partition {p} owned twice: {:?}",
                        self.owned
                    );
                }
            }
        }
    }

    fn count(&self, member: &str) -> usize {
        self.owned
            .get(member)
            .map_or(0, |a| a.values().map(BTreeSet::len).sum())
    }
}

fn image(version: u64, topics: &[(&str, i32)]) -> TopicsImage {
    TopicsImage::new(
        version,
        topics.iter().map(|(n, p)| (n.to_string(), tid(n), *p)),
    )
}

#[test]
fn members_join_partitions_are_balanced_and_never_owned_twice() {
    let mut h = H::new(&[("t", 6)]);
    let r = h.hb("a");
    assert_eq!((r.error_code, r.member_epoch), (ErrorCode::NONE, 1));
    assert_eq!(h.count("a"), 6);
    assert_eq!(r.heartbeat_interval_ms, 5_000);
    // b's partitions are still a's: b is asked back within 500 ms instead of the 5 s interval.
    let r = h.hb("b");
    assert_eq!((r.member_epoch, r.heartbeat_interval_ms), (2, 500));
    assert_eq!(h.count("b"), 0);
    h.hb("c");
    h.settle(&["a", "b", "c"]);
    assert_eq!([h.count("a"), h.count("b"), h.count("c")], [2, 2, 2]);
    h.hb("d");
    h.settle(&["a", "b", "c", "d"]);
    let mut counts: Vec<usize> = ["a", "b", "c", "d"].iter().map(|m| h.count(m)).collect();
    counts.sort();
    assert_eq!(counts, vec![1, 1, 2, 2]);
    let d = h.c.describe_consumer_group(G);
    assert_eq!(
        (d.group_epoch, d.assignment_epoch, d.members.len()),
        (4, 4, 4)
    );
    assert!(d
        .members
        .iter()
        .all(|m| m.member_epoch == 4 && m.assignment == m.target_assignment));
}

#[test]
fn a_leaving_member_and_an_expired_session_give_their_partitions_away() {
    let mut h = H::new(&[("t", 4)]);
    for m in ["a", "b"] {
        h.hb(m);
    }
    h.settle(&["a", "b"]);
    let mut leave = h.req("a", -1);
    leave.topic_partitions = None;
    let r = h.send(leave);
    assert_eq!((r.error_code, r.member_epoch), (ErrorCode::NONE, -1));
    h.owned.remove("a");
    h.settle(&["b"]);
    assert_eq!(h.count("b"), 4);
    // c joins, then stops heartbeating: after the session timeout it is fenced and b gets everything back.
    h.hb("c");
    h.settle(&["b", "c"]);
    h.now += 30_000;
    h.hb("b");
    h.now += 15_000;
    assert!(h
        .c
        .tick(h.now)
        .iter()
        .any(|e| matches!(e, Effect::Persist(_))));
    h.owned.remove("c");
    h.settle(&["b"]);
    assert_eq!(h.count("b"), 4);
    let r = h.hb("c");
    assert_eq!(r.error_code, ErrorCode::UNKNOWN_MEMBER_ID);
}

#[test]
fn a_group_config_sets_the_groups_session_timeout_and_heartbeat_interval() {
    let mut h = H::new(&[("t", 2)]);
    let own = GroupTimeouts {
        consumer_session_timeout_ms: Some(60_000),
        consumer_heartbeat_interval_ms: Some(7_000),
        ..Default::default()
    };
    h.c.set_group_timeouts(std::sync::Arc::new([(G.to_string(), own)].into()));
    assert_eq!(h.hb("a").heartbeat_interval_ms, 7_000);
    h.settle(&["a"]);
    // Past the broker's 45 s but within the group's 60 s: still a member.
    h.now += 50_000;
    assert!(h.c.tick(h.now).is_empty());
    assert_eq!(h.hb("a").error_code, ErrorCode::NONE);
    // Another group keeps the broker's values.
    let mut other = h.req("x", 0);
    other.group_id = "other".into();
    assert_eq!(h.send(other).heartbeat_interval_ms, 5_000);
    h.now += 61_000;
    h.c.tick(h.now);
    assert_eq!(h.hb("a").error_code, ErrorCode::UNKNOWN_MEMBER_ID);
}

#[test]
fn epochs_are_checked_and_a_lost_response_is_tolerated() {
    let mut h = H::new(&[("t", 2)]);
    h.hb("a");
    let e = h.epochs["a"];
    let mut req = h.req("a", e + 1);
    assert_eq!(
        h.send(req.clone()).error_code,
        ErrorCode::FENCED_MEMBER_EPOCH
    );
    h.hb("b");
    h.settle(&["a", "b"]);
    // a moved from epoch 1 to 2; a heartbeat still at 1 with a subset of its partitions is accepted.
    assert_eq!(h.epochs["a"], 2);
    req = h.req("a", 1);
    assert_eq!(h.send(req).error_code, ErrorCode::NONE);
    req = h.req("a", 0);
    req.member_epoch = 7;
    assert_eq!(h.send(req).error_code, ErrorCode::FENCED_MEMBER_EPOCH);
    let mut bad = h.req("z", 0);
    bad.rebalance_timeout_ms = -1;
    assert_eq!(h.send(bad).error_code, ErrorCode::INVALID_REQUEST);
    let mut bad = h.req("z", 0);
    bad.server_assignor = Some("sticky".into());
    assert_eq!(h.send(bad).error_code, ErrorCode::UNSUPPORTED_ASSIGNOR);
    let mut bad = h.req("z", 0);
    bad.subscribed_topic_names = None;
    bad.subscribed_topic_regex = Some("(".into());
    assert_eq!(
        h.send(bad).error_code,
        ErrorCode::INVALID_REGULAR_EXPRESSION
    );
}

#[test]
fn a_replayed_coordinator_keeps_members_epochs_and_assignments() {
    let mut h = H::new(&[("t", 5)]);
    for m in ["a", "b", "c"] {
        h.hb(m);
    }
    h.settle(&["a", "b", "c"]);
    let before = h.c.describe_consumer_group(G);
    let mut c2 = GroupCoordinator::new(GroupConfig::default());
    for r in &h.log {
        let (k, v) = encode_record(r);
        c2.replay(decode_record(&k, v.as_deref()).unwrap());
    }
    c2.loaded(h.now);
    assert_eq!(c2.describe_consumer_group(G), before);
    // The members go on heartbeating against the new coordinator with their epochs.
    h.c = c2;
    h.settle(&["a", "b", "c"]);
    assert_eq!(
        h.c.describe_consumer_group(G).group_epoch,
        before.group_epoch
    );
}

#[test]
fn a_regex_subscription_takes_new_topics_when_they_appear() {
    let mut h = H::new(&[("orders-1", 2), ("other", 2)]);
    let mut req = h.req("a", 0);
    req.subscribed_topic_names = None;
    req.subscribed_topic_regex = Some("orders-.*".into());
    h.send(req);
    assert_eq!(h.count("a"), 2);
    h.image = image(2, &[("orders-1", 2), ("orders-2", 3), ("other", 2)]);
    h.settle(&["a"]);
    assert_eq!(h.count("a"), 5);
    let d = h.c.describe_consumer_group(G);
    assert_eq!(
        d.members[0].subscribed_topic_names,
        vec!["orders-1", "orders-2"]
    );
}

#[test]
fn a_static_member_rejoins_without_a_rebalance() {
    let mut h = H::new(&[("t", 4)]);
    for m in ["a", "b"] {
        let mut req = h.req(m, 0);
        req.instance_id = Some(format!("i-{m}"));
        h.send(req);
    }
    h.settle(&["a", "b"]);
    let epoch = h.c.describe_consumer_group(G).group_epoch;
    let a_parts = h.owned["a"].clone();
    let mut leave = h.req("a", -2);
    leave.instance_id = Some("i-a".into());
    assert_eq!(h.send(leave).member_epoch, -2);
    // Another member id with the same instance id takes over a's partitions; the group epoch is unchanged.
    let mut back = h.req("a2", 0);
    back.instance_id = Some("i-a".into());
    let r = h.send(back);
    assert_eq!(r.error_code, ErrorCode::NONE);
    assert_eq!(r.assignment.as_ref(), Some(&a_parts));
    assert_eq!(h.c.describe_consumer_group(G).group_epoch, epoch);
    // While a2 is live, the instance id cannot be taken.
    let mut thief = h.req("x", 0);
    thief.instance_id = Some("i-a".into());
    assert_eq!(h.send(thief).error_code, ErrorCode::UNRELEASED_INSTANCE_ID);
}

#[test]
fn classic_and_consumer_groups_do_not_mix_and_commits_check_the_member_epoch() {
    let mut h = H::new(&[("t", 1)]);
    h.hb("a");
    let e = h.epochs["a"];
    let commit = |member: &str, epoch: i32, version: i16| OffsetCommitRequest {
        api_version: version,
        group_id: G.into(),
        generation_id: epoch,
        member_id: member.into(),
        group_instance_id: None,
        retention_time_ms: -1,
        topics: vec![(
            "t".into(),
            vec![OffsetCommitPartition {
                partition_index: 0,
                committed_offset: types::Offset(5),
                committed_leader_epoch: types::LeaderEpoch::NONE,
                committed_metadata: None,
            }],
        )],
    };
    let code = |h: &mut H, r: &OffsetCommitRequest| h.c.commit_offsets(h.now, r).response[0].1[0].1;
    assert_eq!(code(&mut h, &commit("a", e, 9)), ErrorCode::NONE);
    assert_eq!(
        code(&mut h, &commit("a", e - 1, 9)),
        ErrorCode::STALE_MEMBER_EPOCH
    );
    assert_eq!(
        code(&mut h, &commit("zz", e, 9)),
        ErrorCode::UNKNOWN_MEMBER_ID
    );
    assert_eq!(
        code(&mut h, &commit("", -1, 9)),
        ErrorCode::UNKNOWN_MEMBER_ID
    );
    assert_eq!(
        h.c.validate_offset_fetch(G, Some("a"), e - 1),
        ErrorCode::STALE_MEMBER_EPOCH
    );
    let listed = h.c.list_groups(&[]);
    assert_eq!(
        (
            listed[0].group_type.as_str(),
            listed[0].group_state.as_str()
        ),
        ("consumer", "Stable")
    );
    let delete = h.c.delete_groups(h.now, &[G.to_string()]).response;
    assert_eq!(delete[0].1, ErrorCode::NON_EMPTY_GROUP);
}

/// One step of a random run: a member joins, heartbeats (revoking at once or late), leaves, goes silent past
/// its session, or a topic grows.
#[derive(Clone, Debug)]
enum Step {
    Join(u8),
    Heartbeat(u8),
    Leave(u8),
    Silent(u8),
    Grow,
}

fn step() -> impl proptest::strategy::Strategy<Value = Step> {
    use proptest::prelude::*;
    prop_oneof![
        2 => (0u8..6).prop_map(Step::Join),
        4 => (0u8..6).prop_map(Step::Heartbeat),
        1 => (0u8..6).prop_map(Step::Leave),
        1 => (0u8..6).prop_map(Step::Silent),
        1 => Just(Step::Grow),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

    /// Whatever members do, no partition is ever owned by two members (as the members themselves see it),
    /// and once everyone heartbeats the group becomes Stable with every partition owned exactly once.
    #[test]
    fn random_membership_never_owns_a_partition_twice_and_converges(
        steps in proptest::collection::vec(step(), 1..60)
    ) {
        let mut h = H::new(&[("t", 7)]);
        let mut partitions = 7;
        let mut live: BTreeSet<String> = BTreeSet::new();
        for s in steps {
            h.now += 100;
            match s {
                Step::Join(i) | Step::Heartbeat(i) => {
                    let m = format!("m{i}");
                    if matches!(s, Step::Join(_)) && !live.contains(&m) {
                        h.epochs.remove(&m);
                        h.owned.remove(&m);
                    }
                    let r = h.hb(&m);
                    if r.error_code == ErrorCode::NONE {
                        live.insert(m);
                    } else {
                        // Fenced or unknown: the client drops its partitions and rejoins later.
                        h.epochs.remove(&m);
                        h.owned.remove(&m);
                        live.remove(&m);
                    }
                }
                Step::Leave(i) => {
                    let m = format!("m{i}");
                    if live.remove(&m) {
                        let mut req = h.req(&m, -1);
                        req.member_epoch = -1;
                        h.send(req);
                        h.epochs.remove(&m);
                        h.owned.remove(&m);
                    }
                }
                Step::Silent(i) => {
                    // Everyone else heartbeats while m's session runs out.
                    let m = format!("m{i}");
                    if live.remove(&m) {
                        h.owned.remove(&m);
                        h.epochs.remove(&m);
                        for _ in 0..3 {
                            h.now += 20_000;
                            for o in live.clone() {
                                if h.hb(&o).error_code != ErrorCode::NONE {
                                    live.remove(&o);
                                    h.owned.remove(&o);
                                    h.epochs.remove(&o);
                                }
                            }
                            h.c.tick(h.now);
                        }
                    }
                }
                Step::Grow => {
                    partitions += 1;
                    h.image = image(h.image.version + 1, &[("t", partitions)]);
                }
            }
            h.assert_exclusive();
        }
        let members: Vec<String> = live.into_iter().collect();
        let refs: Vec<&str> = members.iter().map(String::as_str).collect();
        if !refs.is_empty() {
            h.settle(&refs);
            let owned: usize = refs.iter().map(|m| h.count(m)).sum();
            proptest::prop_assert_eq!(owned, partitions as usize);
        }
    }
}
