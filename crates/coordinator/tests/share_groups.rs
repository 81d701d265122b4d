//! KIP-932 share groups through `share_group_heartbeat`, with injected time (no sleeps).

use std::collections::BTreeMap;

use coordinator::consumer::Assignment;
use coordinator::*;
use types::ErrorCode;
use uuid::Uuid;

const G: &str = "sg";

struct H {
    c: GroupCoordinator,
    now: i64,
    image: TopicsImage,
    log: Vec<GroupRecord>,
    epochs: BTreeMap<String, i32>,
    assigned: BTreeMap<String, Assignment>,
}

impl H {
    fn new(partitions: i32) -> H {
        H {
            c: GroupCoordinator::new(GroupConfig::default()),
            now: 1_000_000,
            image: TopicsImage::new(1, [("t".to_string(), Uuid::from_u128(7), partitions)]),
            log: Vec::new(),
            epochs: BTreeMap::new(),
            assigned: BTreeMap::new(),
        }
    }

    fn req(&self, member: &str, epoch: i32) -> ShareHeartbeatRequest {
        ShareHeartbeatRequest {
            group_id: G.into(),
            member_id: member.into(),
            member_epoch: epoch,
            subscribed_topic_names: (epoch == 0).then(|| vec!["t".to_string()]),
            client_id: "c".into(),
            client_host: "/127.0.0.1".into(),
            ..Default::default()
        }
    }

    fn send(&mut self, req: ShareHeartbeatRequest) -> ShareHeartbeatResult {
        let out = self.c.share_group_heartbeat(self.now, &req, &self.image);
        for e in out.effects {
            if let Effect::Persist(r) = e {
                self.log.push(r);
            }
        }
        let r = out.response;
        if r.error_code == ErrorCode::NONE {
            self.epochs.insert(req.member_id.clone(), r.member_epoch);
            if let Some(a) = &r.assignment {
                self.assigned.insert(req.member_id.clone(), a.clone());
            }
        }
        r
    }

    fn hb(&mut self, member: &str) -> ShareHeartbeatResult {
        let epoch = self.epochs.get(member).copied().unwrap_or(0);
        let req = self.req(member, epoch);
        self.send(req)
    }

    fn partitions_of(&self, member: &str) -> Vec<i32> {
        (self
            .assigned
            .get(member)
            .and_then(|a| a.get(&Uuid::from_u128(7))))
        .map(|s| s.iter().copied().collect())
        .unwrap_or_default()
    }
}

#[test]
fn five_members_of_a_one_partition_topic_all_get_the_partition() {
    let mut h = H::new(1);
    let members = ["a", "b", "c", "d", "e"];
    for m in members {
        assert_eq!(h.hb(m).error_code, ErrorCode::NONE);
    }
    for m in members {
        let r = h.hb(m);
        assert_eq!(r.error_code, ErrorCode::NONE);
        assert_eq!(h.partitions_of(m), vec![0], "{m}");
    }
    let d = &h.c.describe_share_groups(&[G.to_string()])[0];
    assert_eq!(d.group_state, "Stable");
    assert_eq!(d.assignor_name, "simple");
    assert_eq!(d.members.len(), 5);
    assert!(d.members.iter().all(|m| m.member_epoch == d.group_epoch));
    let listed = h.c.list_groups(&[]);
    assert_eq!(listed[0].group_type, "share");
    assert_eq!(listed[0].protocol_type, "share");
}

#[test]
fn members_split_partitions_and_take_them_back_when_one_leaves_or_expires() {
    let mut h = H::new(4);
    h.hb("a");
    assert_eq!(h.partitions_of("a"), vec![0, 1, 2, 3]);
    h.hb("b");
    h.hb("a");
    let (a, b) = (h.partitions_of("a"), h.partitions_of("b"));
    assert_eq!(a.len() + b.len(), 4);
    assert!(a.iter().all(|p| !b.contains(p)));
    // b leaves: a gets everything back on its next heartbeat.
    let mut leave = h.req("b", -1);
    leave.subscribed_topic_names = None;
    assert_eq!(h.send(leave).member_epoch, -1);
    h.hb("a");
    assert_eq!(h.partitions_of("a"), vec![0, 1, 2, 3]);
    // c joins, then goes silent past the session timeout: it is removed.
    h.hb("c");
    h.now += 44_000;
    h.hb("a");
    h.now += 2_000;
    h.c.tick(h.now);
    let d = &h.c.describe_share_groups(&[G.to_string()])[0];
    let ids: Vec<&str> = d.members.iter().map(|m| m.member_id.as_str()).collect();
    assert_eq!(ids, vec!["a"]);
    h.hb("a");
    assert_eq!(h.partitions_of("a"), vec![0, 1, 2, 3]);
}

#[test]
fn a_group_config_sets_the_share_groups_session_timeout_and_heartbeat_interval() {
    let mut h = H::new(1);
    let own = GroupTimeouts {
        share_session_timeout_ms: Some(50_000),
        share_heartbeat_interval_ms: Some(6_000),
        ..Default::default()
    };
    h.c.set_group_timeouts(std::sync::Arc::new([(G.to_string(), own)].into()));
    assert_eq!(h.hb("a").heartbeat_interval_ms, 6_000);
    h.now += 47_000;
    h.c.tick(h.now);
    assert_eq!(
        h.hb("a").error_code,
        ErrorCode::NONE,
        "45 s is the broker's, not the group's"
    );
    h.now += 51_000;
    h.c.tick(h.now);
    assert_eq!(h.hb("a").error_code, ErrorCode::UNKNOWN_MEMBER_ID);
}

#[test]
fn epochs_unknown_members_and_other_group_types_are_checked() {
    let mut h = H::new(2);
    h.hb("a");
    assert_eq!(
        h.send(h.req("zzz", 3)).error_code,
        ErrorCode::UNKNOWN_MEMBER_ID
    );
    assert_eq!(
        h.send(h.req("a", 99)).error_code,
        ErrorCode::FENCED_MEMBER_EPOCH
    );
    let mut no_topics = h.req("n", 0);
    no_topics.subscribed_topic_names = Some(vec![]);
    assert_eq!(h.send(no_topics).error_code, ErrorCode::INVALID_REQUEST);
    assert_eq!(h.send(h.req("", 0)).error_code, ErrorCode::INVALID_REQUEST);
    // A share group's id cannot be used by a consumer group, nor a consumer group's by a share group.
    let consumer = ConsumerHeartbeatRequest {
        api_version: 1,
        group_id: G.into(),
        member_id: "x".into(),
        rebalance_timeout_ms: 1000,
        subscribed_topic_names: Some(vec!["t".into()]),
        ..Default::default()
    };
    let r =
        h.c.consumer_group_heartbeat(h.now, &consumer, &h.image)
            .response;
    assert_eq!(r.error_code, ErrorCode::GROUP_ID_NOT_FOUND);
    let other = ConsumerHeartbeatRequest {
        group_id: "cg".into(),
        ..consumer
    };
    let r =
        h.c.consumer_group_heartbeat(h.now, &other, &h.image)
            .response;
    assert_eq!(r.error_code, ErrorCode::NONE);
    let mut share_on_consumer = h.req("s", 0);
    share_on_consumer.group_id = "cg".into();
    assert_eq!(
        h.send(share_on_consumer).error_code,
        ErrorCode::GROUP_ID_NOT_FOUND
    );
    // Deleting a share group needs it empty.
    let out = h.c.delete_groups(h.now, &[G.to_string()]);
    assert_eq!(out.response[0].1, ErrorCode::NON_EMPTY_GROUP);
}

#[test]
fn a_reloaded_coordinator_keeps_the_group_and_accepts_its_members() {
    let mut h = H::new(3);
    for m in ["a", "b"] {
        h.hb(m);
    }
    h.hb("a");
    let epoch = h.epochs["a"];
    let mut fresh = GroupCoordinator::new(GroupConfig::default());
    for r in h.log.drain(..) {
        let (k, v) = encode_record(&r);
        fresh.replay(decode_record(&k, v.as_deref()).unwrap());
    }
    fresh.loaded(h.now);
    h.c = fresh;
    let d = &h.c.describe_share_groups(&[G.to_string()])[0];
    assert_eq!(d.members.len(), 2);
    // Both members go on at the epoch they had; they get a complete assignment between them.
    for m in ["a", "b"] {
        let r = h.hb(m);
        assert_eq!(r.error_code, ErrorCode::NONE, "{m}");
        assert!(r.member_epoch >= epoch);
    }
    let mut all: Vec<i32> = ["a", "b"].iter().flat_map(|m| h.partitions_of(m)).collect();
    all.sort();
    assert_eq!(all, vec![0, 1, 2]);
    // Both leave; the empty group can be deleted, and its tombstone removes it on replay.
    for m in ["a", "b"] {
        let mut leave = h.req(m, -1);
        leave.subscribed_topic_names = None;
        h.send(leave);
    }
    let out = h.c.delete_groups(h.now, &[G.to_string()]);
    assert_eq!(out.response[0].1, ErrorCode::NONE);
    assert!(h.c.list_groups(&[]).is_empty());
}
