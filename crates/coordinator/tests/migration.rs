//! KIP-848 online migration (`group.consumer.migration.policy`): classic clients (eager, as librdkafka's
//! `range` assignor) and consumer-protocol clients in one group, driven in-process with injected time. Every
//! client revokes at once when told and takes what it is given; after every call no partition may be owned
//! by two clients.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use coordinator::consumer::classic::{encode_assignment, parse_assignment, NamedPartitions};
use coordinator::*;
use types::{ErrorCode, LeaderEpoch, Offset};
use uuid::Uuid;

const G: &str = "mig";
const T: &str = "t";
const PARTITIONS: i32 = 6;

/// A ConsumerProtocolSubscription v1 of topic `t` (no owned partitions: an eager client).
fn subscription() -> Bytes {
    let mut b = BytesMut::new();
    b.put_i16(1);
    b.put_i32(1);
    b.put_i16(1);
    b.put_slice(T.as_bytes());
    b.put_i32(-1);
    b.put_i32(0);
    b.freeze()
}

#[derive(Debug, Clone, PartialEq)]
enum Phase {
    Idle,
    Joining(RequestId),
    Syncing(RequestId),
}

#[derive(Debug)]
struct Classic {
    member_id: String,
    generation: i32,
    phase: Phase,
    owned: BTreeSet<i32>,
}

#[derive(Debug, Default)]
struct Consumer {
    member_id: String,
    epoch: i32,
    owned: BTreeSet<i32>,
}

struct Sim {
    c: GroupCoordinator,
    now: i64,
    image: Arc<TopicsImage>,
    log: Vec<GroupRecord>,
    classic: BTreeMap<String, Classic>,
    consumer: BTreeMap<String, Consumer>,
    joins: BTreeMap<RequestId, JoinResult>,
    syncs: BTreeMap<RequestId, SyncResult>,
    next_request: RequestId,
}

fn tid() -> Uuid {
    Uuid::from_u128(0x7)
}

impl Sim {
    fn new(policy: ConsumerGroupMigrationPolicy) -> Sim {
        let config = GroupConfig {
            consumer_migration_policy: policy,
            ..GroupConfig::default()
        };
        let image = Arc::new(TopicsImage::new(1, [(T.to_string(), tid(), PARTITIONS)]));
        let mut c = GroupCoordinator::new(config).with_member_id_seed(7);
        c.set_topics_image(image.clone());
        Sim {
            c,
            now: 1_000_000,
            image,
            log: Vec::new(),
            classic: BTreeMap::new(),
            consumer: BTreeMap::new(),
            joins: BTreeMap::new(),
            syncs: BTreeMap::new(),
            next_request: 0,
        }
    }

    fn absorb(&mut self, effects: Vec<Effect>) {
        for e in effects {
            match e {
                Effect::Persist(r) => self.log.push(r),
                Effect::JoinResponse { request, response } => {
                    self.joins.insert(request, response);
                }
                Effect::SyncResponse { request, response } => {
                    self.syncs.insert(request, response);
                }
                Effect::PersistTransactional { .. } => {}
            }
        }
        self.assert_exclusive();
    }

    /// No partition is owned by two clients.
    fn assert_exclusive(&self) {
        let mut seen = BTreeMap::new();
        let owned = (self.classic.iter().map(|(n, c)| (n, &c.owned)))
            .chain(self.consumer.iter().map(|(n, c)| (n, &c.owned)));
        for (name, ps) in owned {
            for p in ps {
                if let Some(other) = seen.insert(*p, name.clone()) {
                    panic!("partition {p} owned by {other} and {name}");
                }
            }
        }
    }

    fn request_id(&mut self) -> RequestId {
        self.next_request += 1;
        self.next_request
    }

    fn send_join(&mut self, name: &str) {
        let rid = self.request_id();
        let cl = &self.classic[name];
        let req = JoinGroupRequest {
            api_version: 5,
            group_id: G.into(),
            session_timeout_ms: 10_000,
            rebalance_timeout_ms: 20_000,
            member_id: cl.member_id.clone(),
            group_instance_id: None,
            protocol_type: "consumer".into(),
            protocols: vec![JoinProtocol {
                name: "range".into(),
                metadata: subscription(),
            }],
            client_id: name.into(),
            client_host: "/127.0.0.1".into(),
        };
        let fx = self.c.join_group(self.now, rid, req);
        let cl = self.classic.get_mut(name).unwrap();
        cl.owned.clear(); // eager: everything is revoked before the JoinGroup
        cl.phase = Phase::Joining(rid);
        self.absorb(fx);
    }

    /// A classic client joins.
    fn add_classic(&mut self, name: &str) {
        let cl = Classic {
            member_id: String::new(),
            generation: -1,
            phase: Phase::Idle,
            owned: BTreeSet::new(),
        };
        self.classic.insert(name.into(), cl);
        self.send_join(name);
    }

    /// A classic client leaves (LeaveGroup after revoking).
    fn remove_classic(&mut self, name: &str) {
        let cl = self.classic.remove(name).unwrap();
        let m = LeaveMember {
            member_id: cl.member_id,
            group_instance_id: None,
        };
        let out = self.c.leave_group(self.now, G, &[m]);
        assert_eq!(out.response.members[0].error_code, ErrorCode::NONE);
        self.absorb(out.effects);
    }

    /// A consumer-protocol client joins; returns the first heartbeat's error.
    fn add_consumer(&mut self, name: &str) -> ErrorCode {
        let member_id = Uuid::from_u128(0x1000 + self.consumer.len() as u128).to_string();
        self.consumer.insert(
            name.into(),
            Consumer {
                member_id,
                ..Default::default()
            },
        );
        let code = self.heartbeat_consumer(name);
        if code != ErrorCode::NONE {
            self.consumer.remove(name);
        }
        code
    }

    fn remove_consumer(&mut self, name: &str) {
        let cc = self.consumer.remove(name).unwrap();
        let req = ConsumerHeartbeatRequest {
            api_version: 1,
            group_id: G.into(),
            member_id: cc.member_id,
            member_epoch: -1,
            rebalance_timeout_ms: -1,
            ..Default::default()
        };
        let out = self.c.consumer_group_heartbeat(self.now, &req, &self.image);
        assert_eq!(out.response.error_code, ErrorCode::NONE);
        self.absorb(out.effects);
    }

    fn heartbeat_consumer(&mut self, name: &str) -> ErrorCode {
        let cc = &self.consumer[name];
        let owned: consumer::Assignment = match cc.owned.is_empty() {
            true => Default::default(),
            false => [(tid(), cc.owned.clone())].into(),
        };
        let join = cc.epoch == 0;
        let req = ConsumerHeartbeatRequest {
            api_version: 1,
            group_id: G.into(),
            member_id: cc.member_id.clone(),
            member_epoch: cc.epoch,
            rebalance_timeout_ms: if join { 20_000 } else { -1 },
            subscribed_topic_names: join.then(|| vec![T.to_string()]),
            topic_partitions: Some(owned),
            client_id: name.into(),
            client_host: "/127.0.0.1".into(),
            ..Default::default()
        };
        let out = self.c.consumer_group_heartbeat(self.now, &req, &self.image);
        let r = out.response;
        let cc = self.consumer.get_mut(name).unwrap();
        match r.error_code {
            ErrorCode::NONE => {
                cc.epoch = r.member_epoch;
                if let Some(a) = r.assignment {
                    cc.owned = a.get(&tid()).cloned().unwrap_or_default();
                }
            }
            ErrorCode::FENCED_MEMBER_EPOCH | ErrorCode::UNKNOWN_MEMBER_ID => {
                cc.owned.clear();
                cc.epoch = 0;
            }
            _ => {}
        }
        self.absorb(out.effects);
        r.error_code
    }

    /// One step of a classic client: heartbeat when idle, else follow its JoinGroup/SyncGroup answers.
    fn step_classic(&mut self, name: &str) {
        match self.classic[name].phase.clone() {
            Phase::Idle => {
                let cl = &self.classic[name];
                let out = self
                    .c
                    .heartbeat(self.now, G, &cl.member_id, None, cl.generation);
                self.absorb(out.effects);
                match out.response {
                    ErrorCode::NONE => {}
                    ErrorCode::UNKNOWN_MEMBER_ID => {
                        self.classic.get_mut(name).unwrap().member_id.clear();
                        self.send_join(name);
                    }
                    _ => self.send_join(name),
                }
            }
            Phase::Joining(rid) => {
                let Some(r) = self.joins.remove(&rid) else {
                    return;
                };
                match r.error_code {
                    ErrorCode::NONE => self.sync(name, &r),
                    ErrorCode::MEMBER_ID_REQUIRED => {
                        self.classic.get_mut(name).unwrap().member_id = r.member_id;
                        self.send_join(name);
                    }
                    ErrorCode::UNKNOWN_MEMBER_ID => {
                        self.classic.get_mut(name).unwrap().member_id.clear();
                        self.send_join(name);
                    }
                    _ => self.send_join(name),
                }
            }
            Phase::Syncing(rid) => {
                let Some(r) = self.syncs.remove(&rid) else {
                    return;
                };
                if r.error_code != ErrorCode::NONE {
                    return self.send_join(name);
                }
                let a = parse_assignment(&r.assignment).expect("a consumer protocol assignment");
                let cl = self.classic.get_mut(name).unwrap();
                cl.owned = a.get(T).cloned().unwrap_or_default();
                cl.phase = Phase::Idle;
                self.assert_exclusive();
            }
        }
    }

    /// SyncGroup after a successful JoinGroup; a leader assigns `t` with the range strategy.
    fn sync(&mut self, name: &str, r: &JoinResult) {
        let cl = self.classic.get_mut(name).unwrap();
        cl.member_id = r.member_id.clone();
        cl.generation = r.generation_id;
        let mut assignments = Vec::new();
        let n = r.members.len() as i32;
        for (i, m) in r.members.iter().enumerate() {
            let i = i as i32;
            let (lo, hi) = (i * PARTITIONS / n, (i + 1) * PARTITIONS / n);
            let named: NamedPartitions = [(T.to_string(), (lo..hi).collect())].into();
            assignments.push((m.member_id.clone(), encode_assignment(3, &named)));
        }
        let req = SyncGroupRequest {
            group_id: G.into(),
            generation_id: r.generation_id,
            member_id: r.member_id.clone(),
            group_instance_id: None,
            protocol_type: r.protocol_type.clone(),
            protocol_name: r.protocol_name.clone(),
            assignments,
        };
        let rid = self.request_id();
        self.classic.get_mut(name).unwrap().phase = Phase::Syncing(rid);
        let fx = self.c.sync_group(self.now, rid, req);
        self.absorb(fx);
    }

    /// One round: every client steps, then 500 ms pass.
    fn round(&mut self) {
        let names: Vec<String> = self.classic.keys().cloned().collect();
        for n in names {
            self.step_classic(&n);
        }
        let names: Vec<String> = self.consumer.keys().cloned().collect();
        for n in names {
            self.heartbeat_consumer(&n);
        }
        self.now += 500;
        let fx = self.c.tick(self.now);
        self.absorb(fx);
    }

    fn owned_total(&self) -> usize {
        let classic = self.classic.values().map(|c| c.owned.len());
        classic
            .chain(self.consumer.values().map(|c| c.owned.len()))
            .sum()
    }

    /// Rounds until every partition is owned, every client idle and the group stable.
    fn settle(&mut self) {
        for _ in 0..200 {
            self.round();
            let idle = self.classic.values().all(|c| c.phase == Phase::Idle);
            let stable = match self.c.is_consumer_group(G) {
                true => self.c.describe_consumer_group(G).group_state == "Stable",
                false => self.c.group_state(G) == Some(GroupState::Stable),
            };
            if idle && stable && self.owned_total() == PARTITIONS as usize {
                return;
            }
        }
        panic!(
            "not settled: classic {:?} consumer {:?}",
            self.classic, self.consumer
        );
    }

    fn group_type(&self) -> String {
        let listed = self.c.list_groups(&[]);
        let g = listed.iter().find(|g| g.group_id == G).expect("listed");
        g.group_type.clone()
    }

    fn commit(&mut self, name: &str, generation: i32) -> ErrorCode {
        let req = OffsetCommitRequest {
            api_version: 8,
            group_id: G.into(),
            generation_id: generation,
            member_id: self.classic[name].member_id.clone(),
            group_instance_id: None,
            retention_time_ms: -1,
            topics: vec![(
                T.into(),
                vec![OffsetCommitPartition {
                    partition_index: 0,
                    committed_offset: Offset(5),
                    committed_leader_epoch: LeaderEpoch(-1),
                    committed_metadata: None,
                }],
            )],
        };
        let out = self.c.commit_offsets(self.now, &req);
        self.absorb(out.effects);
        out.response[0].1[0].1
    }
}

/// Three classic members, upgraded one restart at a time to the consumer protocol, then downgraded back.
#[test]
fn rolling_upgrade_then_downgrade_never_owns_a_partition_twice() {
    let mut s = Sim::new(ConsumerGroupMigrationPolicy::Bidirectional);
    for n in ["a", "b", "c"] {
        s.add_classic(n);
    }
    s.settle();
    assert_eq!(s.group_type(), "classic");

    // Upgrade: each classic member leaves and comes back speaking the consumer protocol.
    s.remove_classic("a");
    assert_eq!(s.add_consumer("A"), ErrorCode::NONE);
    assert!(s.c.is_consumer_group(G), "converted on the first heartbeat");
    s.settle();
    assert_eq!(s.group_type(), "consumer");
    let d = s.c.describe_consumer_group(G);
    let types: BTreeSet<i8> = d.members.iter().map(|m| m.member_type).collect();
    assert_eq!(types, [0, 1].into(), "a mixed group");
    // A classic member commits with its member epoch as generation.
    let epoch = d.members.iter().find(|m| m.member_type == 0).unwrap();
    let name = (s
        .classic
        .iter()
        .find(|(_, c)| c.member_id == epoch.member_id))
    .map(|(n, _)| n.clone())
    .unwrap();
    assert_eq!(s.commit(&name, epoch.member_epoch), ErrorCode::NONE);
    assert_eq!(
        s.commit(&name, epoch.member_epoch + 7),
        ErrorCode::ILLEGAL_GENERATION
    );
    for (old, new) in [("b", "B"), ("c", "C")] {
        s.remove_classic(old);
        assert_eq!(s.add_consumer(new), ErrorCode::NONE);
        s.settle();
    }
    assert!(s.classic.is_empty() && s.c.is_consumer_group(G));

    // Downgrade: each consumer member comes back speaking the classic protocol; the last one to leave
    // turns the group classic again.
    for (old, new) in [("A", "a"), ("B", "b")] {
        s.remove_consumer(old);
        s.add_classic(new);
        s.settle();
        assert!(s.c.is_consumer_group(G));
    }
    s.remove_consumer("C");
    assert!(!s.c.is_consumer_group(G), "downgraded when C left");
    assert_eq!(s.group_type(), "classic");
    s.add_classic("c");
    s.settle();
    assert_eq!(s.c.group_state(G), Some(GroupState::Stable));
    assert_eq!(s.classic.len(), 3);
}

/// Kafka's tools must read the records; replaying them restores the mixed group as it was.
#[test]
fn replay_restores_a_mixed_group() {
    let mut s = Sim::new(ConsumerGroupMigrationPolicy::Bidirectional);
    for n in ["a", "b"] {
        s.add_classic(n);
    }
    s.settle();
    s.remove_classic("a");
    assert_eq!(s.add_consumer("A"), ErrorCode::NONE);
    s.settle();
    let before = s.c.describe_consumer_group(G);
    let mut restored = GroupCoordinator::new(GroupConfig::default());
    for r in &s.log {
        let (k, v) = encode_record(r);
        restored.replay(decode_record(&k, v.as_deref()).expect("decodable"));
    }
    restored.loaded(s.now);
    assert_eq!(restored.describe_consumer_group(G), before);
    assert!(before.members.iter().any(|m| m.member_type == 0));

    // The restored classic member keeps heartbeating at its generation.
    let m = before.members.iter().find(|m| m.member_type == 0).unwrap();
    let hb = restored.heartbeat(s.now, G, &m.member_id, None, m.member_epoch);
    assert_eq!(hb.response, ErrorCode::NONE);

    // A downgrade's records replay into the classic group.
    s.remove_consumer("A");
    assert!(!s.c.is_consumer_group(G));
    let mut restored = GroupCoordinator::new(GroupConfig::default());
    for r in &s.log {
        let (k, v) = encode_record(r);
        restored.replay(decode_record(&k, v.as_deref()).expect("decodable"));
    }
    restored.loaded(s.now);
    assert!(!restored.is_consumer_group(G));
    assert_eq!(restored.describe_group(G).members.len(), 1);
}

/// Each policy value refuses what it should.
#[test]
fn each_policy_refuses_what_it_should() {
    use ConsumerGroupMigrationPolicy::*;
    for policy in [Bidirectional, Upgrade, Downgrade, Disabled] {
        // Upgrade of a classic group with members.
        let mut s = Sim::new(policy);
        s.add_classic("a");
        s.settle();
        let code = s.add_consumer("A");
        if policy.is_upgrade_enabled() {
            assert_eq!(code, ErrorCode::NONE, "{policy:?}");
            assert!(s.c.is_consumer_group(G));
        } else {
            assert_eq!(code, ErrorCode::GROUP_ID_NOT_FOUND, "{policy:?}");
            assert_eq!(s.group_type(), "classic");
            s.settle(); // the classic group goes on
        }

        // Downgrade: a consumer group that a classic member joined (allowed whatever the policy).
        let mut s = Sim::new(policy);
        assert_eq!(s.add_consumer("A"), ErrorCode::NONE);
        s.settle();
        s.add_classic("a");
        s.settle();
        s.remove_consumer("A");
        assert_eq!(
            s.c.is_consumer_group(G),
            !policy.is_downgrade_enabled(),
            "{policy:?}"
        );
        s.settle();
    }
    assert_eq!(
        ConsumerGroupMigrationPolicy::parse("UPGRADE"),
        Some(Upgrade)
    );
    assert_eq!(ConsumerGroupMigrationPolicy::parse("sideways"), None);
    assert_eq!(
        GroupConfig::default().consumer_migration_policy,
        Bidirectional
    );
}

/// A classic member told to rejoin that never does is fenced after its rebalance timeout; the group is
/// downgraded only while some member is left.
#[test]
fn a_classic_member_that_does_not_rejoin_is_fenced() {
    let mut s = Sim::new(ConsumerGroupMigrationPolicy::Bidirectional);
    s.add_classic("a");
    s.add_classic("b");
    s.settle();
    s.remove_classic("a");
    assert_eq!(s.add_consumer("A"), ErrorCode::NONE);
    // b hears REBALANCE_IN_PROGRESS and goes silent (it crashed while revoking).
    let b = s.classic.remove("b").unwrap();
    let hb = s.c.heartbeat(s.now, G, &b.member_id, None, b.generation);
    assert_eq!(hb.response, ErrorCode::REBALANCE_IN_PROGRESS);
    s.absorb(hb.effects);
    for _ in 0..30 {
        s.round();
    }
    let d = s.c.describe_consumer_group(G);
    assert_eq!(d.members.len(), 1, "b fenced after its session timeout");
    assert_eq!(s.consumer["A"].owned.len(), PARTITIONS as usize);
}
