use std::collections::HashMap;

use metadata::{
    CreateTopic, CreatedTopic, ElectionResult, ElectionType, HeartbeatReply, PartitionRegistration,
    NO_LEADER, RESOURCE_BROKER, RESOURCE_TOPIC,
};
use rand::Rng;
use types::{BrokerEpoch, BrokerId, LeaderEpoch, PartitionEpoch, ProducerId};
use uuid::Uuid;

use super::*;

mod balancer_tests;
mod broker_config_tests;
mod log_dir_tests;
mod placement_tests;
mod reassignment_tests;

fn cfg(unclean: bool) -> ControlConfig {
    ControlConfig {
        session_timeout_ms: 9000,
        default_num_partitions: 3,
        default_replication_factor: 3,
        unclean_leader_election: unclean,
        auto_leader_rebalance: false,
        leader_imbalance_check_interval_ms: 300_000,
        balancer: crate::control::BalancerConfig::disabled(),
    }
}

/// Broker ids from raw integers (test shorthand).
fn ids(raw: &[i32]) -> Vec<BrokerId> {
    raw.iter().copied().map(BrokerId).collect()
}

/// Test shorthand: the `Sim` helpers take a broker id as a raw integer or as a [`BrokerId`].
trait AsBroker: Copy {
    fn broker(self) -> BrokerId;
}

impl AsBroker for i32 {
    fn broker(self) -> BrokerId {
        BrokerId(self)
    }
}

impl AsBroker for BrokerId {
    fn broker(self) -> BrokerId {
        self
    }
}

/// The committed log as a test sees it: decisions are committed one batch per offset.
struct Sim {
    image: MetadataImage,
    ctl: QuorumControl,
    now: i64,
    log: Vec<(i64, MetadataRecord)>,
}

impl Sim {
    fn new(unclean: bool) -> Self {
        Sim {
            image: MetadataImage::default(),
            ctl: QuorumControl::new(cfg(unclean), 1),
            now: 0,
            log: Vec::new(),
        }
    }

    fn commit(&mut self, records: Vec<MetadataRecord>) {
        if records.is_empty() {
            return;
        }
        let offset = self.image.offset + 1;
        for r in records {
            self.image.apply(offset, &r);
            self.log.push((offset, r));
        }
    }

    fn register(
        &mut self,
        id: impl AsBroker,
        incarnation: u128,
    ) -> Result<BrokerEpoch, ControllerError> {
        let id = id.broker();
        let recs = self.ctl.register_broker(
            &self.image,
            &RegisterBroker {
                broker_id: id,
                incarnation_id: Uuid::from_u128(incarnation),
                host: "localhost".into(),
                port: 9000 + id.get() as u16,
                rack: None,
                listeners: Vec::new(),
                log_dirs: Vec::new(),
            },
            self.now,
        )?;
        self.commit(recs);
        Ok(self.image.brokers[&id].broker_epoch)
    }

    fn hb(
        &mut self,
        id: impl AsBroker,
        fence: bool,
        shutdown: bool,
    ) -> Result<HeartbeatReply, ControllerError> {
        self.hb_dir(id, fence, shutdown, Vec::new())
    }

    /// A heartbeat that also reports the broker's offline log dirs (KIP-858 ids).
    fn hb_dir(
        &mut self,
        id: impl AsBroker,
        fence: bool,
        shutdown: bool,
        offline_log_dirs: Vec<Uuid>,
    ) -> Result<HeartbeatReply, ControllerError> {
        let id = id.broker();
        let epoch = self
            .image
            .brokers
            .get(&id)
            .map_or(BrokerEpoch::NONE, |b| b.broker_epoch);
        let d = self.ctl.heartbeat(
            &self.image,
            &Heartbeat {
                broker_id: id,
                broker_epoch: epoch,
                metadata_offset: self.image.offset,
                want_fence: fence,
                want_shutdown: shutdown,
                offline_log_dirs,
            },
            self.now,
        )?;
        self.commit(d.records);
        Ok(d.reply)
    }

    fn active(&mut self, ids: &[i32]) {
        for &id in ids {
            self.register(id, id as u128).unwrap();
            assert!(!self.hb(id, false, false).unwrap().is_fenced);
        }
    }

    fn create(&mut self, name: &str, n: i32, rf: i16) -> Result<CreatedTopic, ControllerError> {
        let d = self.ctl.create_topics(
            &self.image,
            &[CreateTopic {
                name: name.into(),
                num_partitions: n,
                replication_factor: rf,
                assignments: vec![],
                configs: BTreeMap::new(),
            }],
            false,
        );
        self.commit(d.records);
        d.reply.into_iter().next().unwrap()
    }

    fn part(&self, topic: &str, p: i32) -> PartitionRegistration {
        self.image.topics[topic].partitions[&p].clone()
    }

    /// AlterPartition from the current leader of `topic`-`p` setting its ISR to `isr`; must succeed.
    fn set_isr(&mut self, topic: &str, p: i32, isr: Vec<impl AsBroker>) {
        let reg = self.part(topic, p);
        let leader = reg.leader;
        let d = self
            .ctl
            .alter_partition(
                &self.image,
                &AlterPartition {
                    broker_id: leader,
                    broker_epoch: self.image.brokers[&leader].broker_epoch,
                    topic_id: self.image.topics[topic].topic_id,
                    partition: p,
                    leader_epoch: reg.leader_epoch,
                    partition_epoch: reg.partition_epoch,
                    new_isr: isr.into_iter().map(AsBroker::broker).collect(),
                },
            )
            .unwrap();
        self.commit(d.records);
    }

    fn tick_at(&mut self, now: i64) {
        self.now = now;
        let recs = self.ctl.tick(&self.image, now);
        self.commit(recs);
    }
}

#[test]
fn registration_starts_fenced_and_first_heartbeat_unfences() {
    let mut s = Sim::new(false);
    let epoch = s.register(1, 11).unwrap();
    assert!(s.image.brokers[&BrokerId(1)].fenced);
    // Not caught up: stays fenced.
    let d = s
        .ctl
        .heartbeat(
            &s.image,
            &Heartbeat {
                broker_id: BrokerId(1),
                broker_epoch: epoch,
                metadata_offset: epoch.get() - 1,
                want_fence: false,
                want_shutdown: false,
                offline_log_dirs: Vec::new(),
            },
            0,
        )
        .unwrap();
    assert!(d.records.is_empty());
    assert!(d.reply.is_fenced && !d.reply.is_caught_up);
    let r = s.hb(1, false, false).unwrap();
    assert!(!r.is_fenced && r.is_caught_up);
    assert!(!s.image.brokers[&BrokerId(1)].fenced);
}

#[test]
fn heartbeat_errors() {
    let mut s = Sim::new(false);
    assert_eq!(
        s.hb(5, false, false).unwrap_err().code,
        ErrorCode::BROKER_ID_NOT_REGISTERED
    );
    s.register(5, 1).unwrap();
    let e = s
        .ctl
        .heartbeat(
            &s.image,
            &Heartbeat {
                broker_id: BrokerId(5),
                broker_epoch: BrokerEpoch(12345),
                metadata_offset: 0,
                want_fence: false,
                want_shutdown: false,
                offline_log_dirs: Vec::new(),
            },
            0,
        )
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::STALE_BROKER_EPOCH);
}

#[test]
fn duplicate_registration_needs_expired_session() {
    let mut s = Sim::new(false);
    s.active(&[1]);
    let old = s.image.brokers[&BrokerId(1)].broker_epoch;
    assert_eq!(
        s.register(1, 99).unwrap_err().code,
        ErrorCode::DUPLICATE_BROKER_REGISTRATION
    );
    // Same incarnation may re-register (a retry) and gets a new epoch.
    let e2 = s.register(1, 1).unwrap();
    assert!(e2 > old);
    s.now = 10_000;
    let e3 = s.register(1, 99).unwrap();
    assert!(e3 > e2);
    assert_eq!(
        s.image.brokers[&BrokerId(1)].incarnation_id,
        Uuid::from_u128(99)
    );
}

#[test]
fn placement_spreads_replicas_and_leaders() {
    let mut s = Sim::new(false);
    s.active(&[1, 2, 3]);
    let t = s.create("t", 6, 2).unwrap();
    assert_eq!((t.num_partitions, t.replication_factor), (6, 2));
    let mut leaders: BTreeMap<BrokerId, usize> = BTreeMap::new();
    for p in 0..6 {
        let reg = s.part("t", p);
        assert_eq!(reg.replicas.len(), 2);
        assert_ne!(reg.replicas[0], reg.replicas[1]);
        assert_eq!(reg.leader, reg.replicas[0]);
        assert_eq!(reg.isr, reg.replicas);
        *leaders.entry(reg.leader).or_default() += 1;
    }
    assert_eq!(leaders.values().copied().collect::<Vec<_>>(), vec![2, 2, 2]);
    assert_eq!(
        s.create("u", 1, 4).unwrap_err().code,
        ErrorCode::INVALID_REPLICATION_FACTOR
    );
    assert_eq!(
        s.create("t", 1, 1).unwrap_err().code,
        ErrorCode::TOPIC_ALREADY_EXISTS
    );
    assert_eq!(
        s.create("v", 0, 1).unwrap_err().code,
        ErrorCode::INVALID_PARTITIONS
    );
    assert_eq!(
        s.create("bad/name", 1, 1).unwrap_err().code,
        ErrorCode::INVALID_TOPIC_EXCEPTION
    );
    // Defaults: 3 partitions, RF 3.
    let d = s.create("w", -1, -1).unwrap();
    assert_eq!((d.num_partitions, d.replication_factor), (3, 3));
}

#[test]
fn create_topics_validates_assignments_and_duplicates() {
    let mut s = Sim::new(false);
    s.active(&[1, 2]);
    let mk = |name: &str, assignments: Vec<(i32, Vec<i32>)>| CreateTopic {
        name: name.into(),
        num_partitions: -1,
        replication_factor: -1,
        assignments: assignments.into_iter().map(|(p, r)| (p, ids(&r))).collect(),
        configs: BTreeMap::from([("cleanup.policy".to_string(), "compact".to_string())]),
    };
    let d = s.ctl.create_topics(
        &s.image,
        &[
            mk("a", vec![(1, vec![2, 1]), (0, vec![1, 2])]),
            mk("b", vec![(0, vec![1, 1])]),
            mk("c", vec![(0, vec![7])]),
            mk("d", vec![(1, vec![1])]),
            mk("e", vec![(0, vec![1]), (1, vec![1, 2])]),
            mk("dup", vec![(0, vec![1])]),
            mk("dup", vec![(0, vec![1])]),
        ],
        false,
    );
    let codes_: Vec<ErrorCode> = d
        .reply
        .iter()
        .map(|r| r.as_ref().map_or_else(|e| e.code, |_| ErrorCode::NONE))
        .collect();
    assert_eq!(
        codes_,
        vec![
            ErrorCode::NONE,
            ErrorCode::INVALID_REPLICA_ASSIGNMENT,
            ErrorCode::INVALID_REPLICA_ASSIGNMENT,
            ErrorCode::INVALID_REPLICA_ASSIGNMENT,
            ErrorCode::INVALID_REPLICA_ASSIGNMENT,
            ErrorCode::INVALID_REQUEST,
            ErrorCode::INVALID_REQUEST
        ]
    );
    s.commit(d.records);
    assert_eq!(s.part("a", 1).replicas, ids(&[2, 1]));
    assert_eq!(s.part("a", 1).leader, BrokerId(2));
    assert_eq!(s.image.topics["a"].configs["cleanup.policy"], "compact");
    // validate_only writes nothing.
    let v = s
        .ctl
        .create_topics(&s.image, &[mk("z", vec![(0, vec![1])])], true);
    assert!(v.records.is_empty());
    assert!(v.reply[0].is_ok());
}

#[test]
fn session_expiry_fences_and_moves_leadership_within_isr() {
    let mut s = Sim::new(false);
    s.active(&[1, 2, 3]);
    s.create("t", 3, 3).unwrap();
    let before: Vec<_> = (0..3).map(|p| s.part("t", p)).collect();
    // Brokers 2 and 3 keep heartbeating; broker 1 goes silent.
    s.now = 5000;
    s.hb(2, false, false).unwrap();
    s.hb(3, false, false).unwrap();
    s.tick_at(8999);
    assert!(!s.image.brokers[&BrokerId(1)].fenced);
    s.tick_at(9000);
    assert!(s.image.brokers[&BrokerId(1)].fenced);
    for (p, old) in before.iter().enumerate() {
        let now = s.part("t", p as i32);
        assert!(!now.isr.contains(&BrokerId(1)));
        assert_ne!(now.leader, BrokerId(1));
        assert!(now.isr.contains(&now.leader));
        if old.leader == BrokerId(1) {
            assert_eq!(now.leader_epoch, LeaderEpoch(old.leader_epoch.get() + 1));
            // First other replica in replica order.
            assert_eq!(now.leader, old.replicas[1]);
        } else {
            assert_eq!(now.leader_epoch, old.leader_epoch);
        }
        assert_eq!(now.partition_epoch, old.partition_epoch.next());
    }
}

#[test]
fn preferred_leaders_are_elected_back_once_per_check_interval() {
    let mut s = Sim::new(false);
    let mut config = cfg(false);
    config.auto_leader_rebalance = true;
    config.leader_imbalance_check_interval_ms = 10_000;
    s.ctl = QuorumControl::new(config, 1);
    s.ctl.activate(&s.image, 0);
    s.active(&[1, 2, 3]);
    s.create("t", 3, 3).unwrap();
    let preferred: Vec<BrokerId> = (0..3).map(|p| s.part("t", p).replicas[0]).collect();
    for p in 0..3 {
        assert_eq!(
            s.part("t", p).leader,
            preferred[p as usize],
            "placement leads on the preferred replica"
        );
    }
    // Broker 1 goes silent and is fenced: its leaderships move away.
    s.now = 5000;
    s.hb(2, false, false).unwrap();
    s.hb(3, false, false).unwrap();
    s.tick_at(9000);
    assert!(s.image.brokers[&BrokerId(1)].fenced);
    let moved: Vec<i32> = (0..3)
        .filter(|&p| preferred[p as usize] == BrokerId(1))
        .collect();
    assert!(!moved.is_empty());
    for &p in &moved {
        assert_ne!(s.part("t", p).leader, BrokerId(1));
    }
    // It comes back (new incarnation) and is unfenced, but is not in the ISR yet: no election.
    s.now = 9500;
    s.register(1, 99).unwrap();
    s.hb(1, false, false).unwrap();
    s.hb(2, false, false).unwrap();
    s.hb(3, false, false).unwrap();
    s.tick_at(10_000);
    for &p in &moved {
        assert_ne!(
            s.part("t", p).leader,
            BrokerId(1),
            "preferred replica not in the ISR must not lead"
        );
    }
    // It catches up: the leaders add it to the ISR.
    for &p in &moved {
        let mut isr = s.part("t", p).isr;
        isr.push(BrokerId(1));
        s.set_isr("t", p, isr);
        assert!(s.part("t", p).isr.contains(&BrokerId(1)));
    }
    // Not before the check interval has passed since the last check (at 10,000).
    s.now = 15_000;
    for b in 1..=3 {
        s.hb(b, false, false).unwrap();
    }
    s.tick_at(19_999);
    for &p in &moved {
        assert_ne!(s.part("t", p).leader, BrokerId(1));
    }
    let before: Vec<PartitionRegistration> = (0..3).map(|p| s.part("t", p)).collect();
    s.tick_at(20_000);
    for p in 0..3 {
        let (old, now) = (&before[p as usize], s.part("t", p));
        assert_eq!(now.leader, preferred[p as usize]);
        assert_eq!(
            now.isr, old.isr,
            "a preferred election leaves the ISR alone"
        );
        if moved.contains(&p) {
            assert_eq!(now.leader_epoch, LeaderEpoch(old.leader_epoch.get() + 1));
        } else {
            assert_eq!(
                now.leader_epoch, old.leader_epoch,
                "balanced partitions are untouched"
            );
        }
    }
}

#[test]
fn preferred_leader_election_skips_a_shutting_down_replica_and_can_be_disabled() {
    for enabled in [true, false] {
        let mut s = Sim::new(false);
        let mut config = cfg(false);
        config.auto_leader_rebalance = enabled;
        config.leader_imbalance_check_interval_ms = 0;
        s.ctl = QuorumControl::new(config, 1);
        s.active(&[1, 2]);
        s.create("t", 1, 2).unwrap();
        let preferred = s.part("t", 0).replicas[0];
        let other = s.part("t", 0).replicas[1];
        // Controlled shutdown of the preferred replica moves leadership to the other one.
        s.hb(preferred, false, true).unwrap();
        assert_eq!(s.part("t", 0).leader, other);
        s.tick_at(1);
        assert_eq!(
            s.part("t", 0).leader,
            other,
            "a replica shutting down is never elected"
        );
        // It restarts, is unfenced and rejoins the ISR.
        s.register(preferred, preferred.get() as u128).unwrap();
        s.hb(preferred, false, false).unwrap();
        s.hb(other, false, false).unwrap();
        s.set_isr("t", 0, vec![other, preferred]);
        s.tick_at(2);
        let want = if enabled { preferred } else { other };
        assert_eq!(
            s.part("t", 0).leader,
            want,
            "auto_leader_rebalance={enabled}"
        );
    }
}

#[test]
fn elect_leaders_preferred_and_unclean() {
    let mut s = Sim::new(false);
    s.active(&[1, 2, 3]);
    s.create("t", 2, 3).unwrap();
    let pref0 = s.part("t", 0).replicas[0];
    let ask = |v: &[(&str, i32)]| -> Vec<(String, i32)> {
        v.iter().map(|(t, p)| (t.to_string(), *p)).collect()
    };
    let codes = |r: &[ElectionResult]| -> Vec<(i32, ErrorCode)> {
        r.iter()
            .map(|r| (r.partition, ErrorCode(r.error_code)))
            .collect()
    };
    // Everything is balanced: asked-for partitions say so, the all-partitions form says nothing.
    let d = s.ctl.elect_leaders(
        &s.image,
        ElectionType::Preferred,
        Some(&ask(&[("t", 0), ("t", 9), ("u", 0)])),
    );
    assert!(d.records.is_empty());
    assert_eq!(
        codes(&d.reply),
        vec![
            (0, ErrorCode::ELECTION_NOT_NEEDED),
            (9, ErrorCode::UNKNOWN_TOPIC_OR_PARTITION),
            (0, ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)
        ]
    );
    let d = s.ctl.elect_leaders(&s.image, ElectionType::Preferred, None);
    assert!(d.records.is_empty() && d.reply.is_empty());
    // The preferred replica of partition 0 shuts down: leadership moves, and it cannot be elected back.
    s.hb(pref0, false, true).unwrap();
    assert_ne!(s.part("t", 0).leader, pref0);
    let d = s
        .ctl
        .elect_leaders(&s.image, ElectionType::Preferred, Some(&ask(&[("t", 0)])));
    assert_eq!(
        codes(&d.reply),
        vec![(0, ErrorCode::PREFERRED_LEADER_NOT_AVAILABLE)]
    );
    // Unclean election has nothing to do for a partition that has a leader.
    let d = s
        .ctl
        .elect_leaders(&s.image, ElectionType::Unclean, Some(&ask(&[("t", 0)])));
    assert_eq!(codes(&d.reply), vec![(0, ErrorCode::ELECTION_NOT_NEEDED)]);

    // Unclean: partition of replicas [a, b] whose ISR shrank to [a]; a is fenced, so it has no leader.
    // No active ISR member: b (outside the ISR) is elected and the ISR becomes [b].
    let mut s = Sim::new(false);
    s.active(&[1, 2]);
    s.create("t", 1, 2).unwrap();
    let reg = s.part("t", 0);
    let (a, b) = (
        reg.leader,
        *reg.replicas.iter().find(|&&r| r != reg.leader).unwrap(),
    );
    s.set_isr("t", 0, vec![a]);
    let d = s
        .ctl
        .elect_leaders(&s.image, ElectionType::Unclean, Some(&ask(&[("t", 0)])));
    assert_eq!(
        codes(&d.reply),
        vec![(0, ErrorCode::ELECTION_NOT_NEEDED)],
        "it has a leader"
    );
    s.now = 5000;
    s.hb(b, false, false).unwrap();
    s.tick_at(9000);
    assert!(s.image.brokers[&a].fenced);
    assert_eq!(s.part("t", 0).leader, NO_LEADER);
    let d = s
        .ctl
        .elect_leaders(&s.image, ElectionType::Preferred, Some(&ask(&[("t", 0)])));
    assert_eq!(
        codes(&d.reply),
        vec![(0, ErrorCode::PREFERRED_LEADER_NOT_AVAILABLE)]
    );
    let d = s
        .ctl
        .elect_leaders(&s.image, ElectionType::Unclean, Some(&ask(&[("t", 0)])));
    assert_eq!(codes(&d.reply), vec![(0, ErrorCode::NONE)]);
    s.commit(d.records);
    assert_eq!(s.part("t", 0).leader, b);
    assert_eq!(s.part("t", 0).isr, vec![b]);
    // Nobody active at all: ELIGIBLE_LEADERS_NOT_AVAILABLE.
    s.now = 14_000;
    s.tick_at(18_000);
    assert!(s.image.brokers[&b].fenced);
    let d = s
        .ctl
        .elect_leaders(&s.image, ElectionType::Unclean, Some(&ask(&[("t", 0)])));
    assert_eq!(
        codes(&d.reply),
        vec![(0, ErrorCode::ELIGIBLE_LEADERS_NOT_AVAILABLE)]
    );
}

#[test]
fn elect_leaders_preferred_moves_leadership_and_bumps_the_epoch() {
    let mut s = Sim::new(false);
    s.active(&[1, 2]);
    s.create("t", 1, 2).unwrap();
    let pref = s.part("t", 0).replicas[0];
    let other = s.part("t", 0).replicas[1];
    // Leadership moves to the other replica (controlled shutdown of the preferred one), then the preferred
    // one is back in the ISR without automatic rebalancing.
    s.hb(pref, false, true).unwrap();
    s.register(pref, pref.get() as u128).unwrap();
    s.hb(pref, false, false).unwrap();
    let reg = s.part("t", 0);
    assert_eq!(reg.leader, other);
    s.set_isr("t", 0, vec![other, pref]);
    let before = s.part("t", 0);
    let d = s.ctl.elect_leaders(&s.image, ElectionType::Preferred, None);
    assert_eq!(d.reply.len(), 1);
    assert_eq!(d.reply[0].error_code, 0);
    s.commit(d.records);
    let after = s.part("t", 0);
    assert_eq!(after.leader, pref);
    assert_eq!(
        after.leader_epoch,
        LeaderEpoch(before.leader_epoch.get() + 1)
    );
    assert_eq!(after.isr, before.isr);
}

#[test]
fn last_isr_member_stays_and_comes_back_as_leader() {
    let mut s = Sim::new(false);
    s.active(&[1, 2]);
    let d = s.ctl.create_topics(
        &s.image,
        &[CreateTopic {
            name: "t".into(),
            num_partitions: -1,
            replication_factor: -1,
            assignments: vec![(0, ids(&[1, 2]))],
            configs: BTreeMap::new(),
        }],
        false,
    );
    s.commit(d.records);
    // Leader shrinks ISR to itself.
    let reg = s.part("t", 0);
    let id = s.image.topics["t"].topic_id;
    let d = s
        .ctl
        .alter_partition(
            &s.image,
            &AlterPartition {
                broker_id: BrokerId(1),
                broker_epoch: s.image.brokers[&BrokerId(1)].broker_epoch,
                topic_id: id,
                partition: 0,
                leader_epoch: reg.leader_epoch,
                partition_epoch: reg.partition_epoch,
                new_isr: vec![BrokerId(1)],
            },
        )
        .unwrap();
    s.commit(d.records);
    assert_eq!(s.part("t", 0), d.reply);
    // Broker 1 is fenced: no other ISR member, so no leader, ISR keeps 1.
    s.now = 1000;
    s.hb(2, false, false).unwrap();
    s.tick_at(9500);
    let p = s.part("t", 0);
    assert_eq!((p.leader, p.isr.clone()), (NO_LEADER, ids(&[1])));
    // Broker 2 coming back does not lead (not in ISR, no unclean election).
    s.hb(2, false, true).unwrap(); // unrelated: 2 goes through controlled shutdown later
    assert_eq!(s.part("t", 0).leader, NO_LEADER);
    // Broker 1 restarts with a new incarnation, heartbeats, and is elected again.
    s.register(1, 777).unwrap();
    assert_eq!(s.part("t", 0).leader, NO_LEADER);
    s.hb(1, false, false).unwrap();
    let p2 = s.part("t", 0);
    assert_eq!(p2.leader, BrokerId(1));
    assert_eq!(p2.leader_epoch, LeaderEpoch(p.leader_epoch.get() + 1));
}

#[test]
fn unclean_election_picks_any_active_replica() {
    let mut s = Sim::new(true);
    s.active(&[1, 2]);
    let d = s.ctl.create_topics(
        &s.image,
        &[CreateTopic {
            name: "t".into(),
            num_partitions: -1,
            replication_factor: -1,
            assignments: vec![(0, ids(&[1, 2]))],
            configs: BTreeMap::new(),
        }],
        false,
    );
    s.commit(d.records);
    let reg = s.part("t", 0);
    let id = s.image.topics["t"].topic_id;
    let d = s
        .ctl
        .alter_partition(
            &s.image,
            &AlterPartition {
                broker_id: BrokerId(1),
                broker_epoch: s.image.brokers[&BrokerId(1)].broker_epoch,
                topic_id: id,
                partition: 0,
                leader_epoch: reg.leader_epoch,
                partition_epoch: reg.partition_epoch,
                new_isr: vec![BrokerId(1)],
            },
        )
        .unwrap();
    s.commit(d.records);
    s.now = 1000;
    s.hb(2, false, false).unwrap();
    s.tick_at(9500);
    let p = s.part("t", 0);
    assert_eq!((p.leader, p.isr), (BrokerId(2), ids(&[2])));
}

#[test]
fn controlled_shutdown_moves_leadership_then_shuts_down() {
    let mut s = Sim::new(false);
    s.active(&[1, 2, 3]);
    s.create("t", 6, 2).unwrap();
    let led_by_1 = (0..6)
        .filter(|&p| s.part("t", p).leader == BrokerId(1))
        .count();
    assert!(led_by_1 > 0);
    let r = s.hb(1, false, true).unwrap();
    assert!(!r.should_shut_down);
    assert!(s.image.brokers[&BrokerId(1)].in_controlled_shutdown);
    for p in 0..6 {
        let reg = s.part("t", p);
        assert_ne!(reg.leader, BrokerId(1));
        assert!(!reg.isr.contains(&BrokerId(1)));
    }
    // A broker in controlled shutdown is not a placement target.
    let t2 = s.create("u", 3, 2).unwrap();
    assert_eq!(t2.num_partitions, 3);
    for p in 0..3 {
        assert!(!s.part("u", p).replicas.contains(&BrokerId(1)));
    }
    let r = s.hb(1, false, true).unwrap();
    assert!(r.should_shut_down && r.is_fenced);
    assert!(s.image.brokers[&BrokerId(1)].fenced);
}

#[test]
fn controlled_shutdown_with_nowhere_to_move() {
    let mut s = Sim::new(false);
    s.active(&[1]);
    s.create("t", 1, 1).unwrap();
    assert!(!s.hb(1, false, true).unwrap().should_shut_down);
    assert_eq!(s.part("t", 0).leader, BrokerId(1)); // could not move: left alone
    let r = s.hb(1, false, true).unwrap();
    assert!(r.should_shut_down);
    assert_eq!(s.part("t", 0).leader, NO_LEADER);
    assert_eq!(s.part("t", 0).isr, ids(&[1]));
}

#[test]
fn alter_partition_rules() {
    let mut s = Sim::new(false);
    s.active(&[1, 2, 3]);
    let d = s.ctl.create_topics(
        &s.image,
        &[CreateTopic {
            name: "t".into(),
            num_partitions: -1,
            replication_factor: -1,
            assignments: vec![(0, vec![BrokerId(1), BrokerId(2), BrokerId(3)])],
            configs: BTreeMap::new(),
        }],
        false,
    );
    s.commit(d.records);
    let id = s.image.topics["t"].topic_id;
    let e1 = s.image.brokers[&BrokerId(1)].broker_epoch;
    let reg = s.part("t", 0);
    let req = |isr: Vec<i32>| AlterPartition {
        broker_id: BrokerId(1),
        broker_epoch: e1,
        topic_id: id,
        partition: 0,
        leader_epoch: reg.leader_epoch,
        partition_epoch: reg.partition_epoch,
        new_isr: ids(&isr),
    };
    let code =
        |s: &mut Sim, r: AlterPartition| s.ctl.alter_partition(&s.image, &r).unwrap_err().code;
    assert_eq!(
        code(
            &mut s,
            AlterPartition {
                broker_epoch: BrokerEpoch(1),
                ..req(vec![1])
            }
        ),
        ErrorCode::STALE_BROKER_EPOCH
    );
    assert_eq!(
        code(
            &mut s,
            AlterPartition {
                leader_epoch: LeaderEpoch(9),
                ..req(vec![1])
            }
        ),
        ErrorCode::FENCED_LEADER_EPOCH
    );
    assert_eq!(
        code(
            &mut s,
            AlterPartition {
                partition_epoch: PartitionEpoch(9),
                ..req(vec![1])
            }
        ),
        ErrorCode::INVALID_UPDATE_VERSION
    );
    assert_eq!(
        code(
            &mut s,
            AlterPartition {
                topic_id: Uuid::from_u128(5),
                ..req(vec![1])
            }
        ),
        ErrorCode::UNKNOWN_TOPIC_ID
    );
    assert_eq!(
        code(
            &mut s,
            AlterPartition {
                partition: 4,
                ..req(vec![1])
            }
        ),
        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
    );
    let e2 = s.image.brokers[&BrokerId(2)].broker_epoch;
    assert_eq!(
        code(
            &mut s,
            AlterPartition {
                broker_id: BrokerId(2),
                broker_epoch: e2,
                ..req(vec![2])
            }
        ),
        ErrorCode::INVALID_REQUEST
    );
    assert_eq!(code(&mut s, req(vec![2, 3])), ErrorCode::INVALID_REQUEST);
    assert_eq!(code(&mut s, req(vec![1, 4])), ErrorCode::INVALID_REQUEST);
    assert_eq!(code(&mut s, req(vec![1, 1])), ErrorCode::INVALID_REQUEST);
    // Same set: no records.
    let same = s
        .ctl
        .alter_partition(&s.image, &req(vec![3, 2, 1]))
        .unwrap();
    assert!(same.records.is_empty());
    // Shrink then try to re-add a fenced broker.
    let d = s.ctl.alter_partition(&s.image, &req(vec![1, 2])).unwrap();
    s.commit(d.records);
    assert_eq!(s.part("t", 0).partition_epoch, reg.partition_epoch.next());
    s.hb(3, true, false).unwrap(); // broker 3 asks to be fenced
    assert!(s.image.brokers[&BrokerId(3)].fenced);
    let reg2 = s.part("t", 0);
    let r = AlterPartition {
        leader_epoch: reg2.leader_epoch,
        partition_epoch: reg2.partition_epoch,
        ..req(vec![1, 2, 3])
    };
    assert_eq!(code(&mut s, r), ErrorCode::INELIGIBLE_REPLICA);
}

#[test]
fn delete_create_partitions_configs_producer_ids() {
    let mut s = Sim::new(false);
    s.active(&[1, 2]);
    let t = s.create("t", 2, 2).unwrap();
    let recs = s
        .ctl
        .create_partitions(&s.image, "t", 2, false)
        .unwrap_err();
    assert_eq!(recs.code, ErrorCode::INVALID_PARTITIONS);
    assert_eq!(
        s.ctl
            .create_partitions(&s.image, "x", 5, false)
            .unwrap_err()
            .code,
        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
    );
    let recs = s.ctl.create_partitions(&s.image, "t", 5, false).unwrap();
    s.commit(recs);
    assert_eq!(s.image.topics["t"].partitions.len(), 5);
    assert_eq!(s.part("t", 4).replicas.len(), 2);

    let recs = s
        .ctl
        .alter_configs(
            &s.image,
            RESOURCE_TOPIC,
            "t",
            &[("retention.ms".into(), Some("10".into()))],
            false,
        )
        .unwrap();
    s.commit(recs);
    assert_eq!(s.image.topics["t"].configs["retention.ms"], "10");
    let recs = s
        .ctl
        .alter_configs(
            &s.image,
            RESOURCE_BROKER,
            "",
            &[("a".into(), Some("b".into()))],
            false,
        )
        .unwrap();
    s.commit(recs);
    assert_eq!(s.image.broker_configs[""]["a"], "b");
    assert_eq!(
        s.ctl
            .alter_configs(&s.image, RESOURCE_BROKER, "x", &[], false)
            .unwrap_err()
            .code,
        ErrorCode::INVALID_REQUEST
    );
    assert_eq!(
        s.ctl
            .alter_configs(&s.image, RESOURCE_TOPIC, "nope", &[], false)
            .unwrap_err()
            .code,
        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
    );

    let e1 = s.image.brokers[&BrokerId(1)].broker_epoch;
    let d = s
        .ctl
        .allocate_producer_ids(&s.image, BrokerId(1), e1)
        .unwrap();
    assert_eq!(d.reply, (ProducerId(0), PRODUCER_ID_BLOCK_SIZE));
    s.commit(d.records);
    let d = s
        .ctl
        .allocate_producer_ids(&s.image, BrokerId(1), e1)
        .unwrap();
    assert_eq!(d.reply.0, ProducerId(PRODUCER_ID_BLOCK_SIZE as i64));
    assert_eq!(
        s.ctl
            .allocate_producer_ids(&s.image, BrokerId(1), BrokerEpoch(e1.get() + 100))
            .unwrap_err()
            .code,
        ErrorCode::STALE_BROKER_EPOCH
    );

    let d = s.ctl.delete_topics(&s.image, &["t".into(), "nope".into()]);
    assert_eq!(d.reply[0].as_ref().unwrap(), &t.topic_id);
    assert_eq!(
        d.reply[1].as_ref().unwrap_err().code,
        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
    );
    s.commit(d.records);
    assert!(s.image.topics.is_empty());
}

/// Invariants of every partition in `image`, plus epoch history checks against `seen`.
fn check_invariants(
    image: &MetadataImage,
    seen: &mut HashMap<(Uuid, i32), LeaderEpoch>,
    leaders: &mut HashMap<(Uuid, i32, LeaderEpoch), BrokerId>,
    seed: u64,
) {
    for t in image.topics.values() {
        for (&pid, p) in &t.partitions {
            let ctx = format!("seed {seed}: {}-{pid} {p:?}", t.name);
            assert!(
                p.isr.iter().all(|r| p.replicas.contains(r)),
                "ISR ⊆ replicas: {ctx}"
            );
            if p.leader != NO_LEADER {
                assert!(p.isr.contains(&p.leader), "leader ∈ ISR: {ctx}");
            }
            assert!(!p.isr.is_empty(), "ISR never empty: {ctx}");
            let key = (t.topic_id, pid);
            let prev = seen
                .insert(key, p.leader_epoch)
                .unwrap_or(LeaderEpoch(i32::MIN));
            assert!(p.leader_epoch >= prev, "leader epoch went back: {ctx}");
            if let Some(&l) = leaders.get(&(t.topic_id, pid, p.leader_epoch)) {
                assert_eq!(l, p.leader, "two leaders in one epoch: {ctx}");
            }
            leaders.insert((t.topic_id, pid, p.leader_epoch), p.leader);
        }
    }
}

#[test]
fn randomized_operations_keep_invariants() {
    let seed: u64 = std::env::var("RUNNEL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    println!("randomized_operations_keep_invariants: RUNNEL_SEED={seed}");
    let mut rng = StdRng::seed_from_u64(seed);
    let unclean = rng.gen_bool(0.3);
    let mut s = Sim::new(unclean);
    let mut config = cfg(unclean);
    // Preferred-leader elections on most seeds, at intervals the steps below cross often.
    config.auto_leader_rebalance = rng.gen_bool(0.7);
    config.leader_imbalance_check_interval_ms = rng.gen_range(0..5000);
    s.ctl = QuorumControl::new(config, seed);
    let mut seen = HashMap::new();
    let mut leaders = HashMap::new();
    let mut incarnations: BTreeMap<i32, u128> = BTreeMap::new();
    for step in 0..2000 {
        s.now += rng.gen_range(0..1500);
        let broker = rng.gen_range(0..5);
        match rng.gen_range(0..100) {
            0..=9 => {
                let inc = if rng.gen_bool(0.5) {
                    *incarnations.entry(broker).or_insert(1)
                } else {
                    let i = rng.gen();
                    incarnations.insert(broker, i);
                    i
                };
                let _ = s.register(broker, inc);
            }
            10..=44 => {
                if s.image.brokers.contains_key(&BrokerId(broker)) {
                    let fence = rng.gen_bool(0.05);
                    let shutdown = rng.gen_bool(0.05);
                    s.hb(broker, fence, shutdown).unwrap();
                } else {
                    assert!(s.hb(broker, false, false).is_err());
                }
            }
            45..=54 => {
                let now = s.now;
                s.tick_at(now);
            }
            55..=64 => {
                let name = format!("t{}", rng.gen_range(0..6));
                let n = rng.gen_range(1..5);
                let rf = rng.gen_range(1..4);
                let _ = s.create(&name, n, rf);
            }
            65..=69 => {
                let name = format!("t{}", rng.gen_range(0..6));
                let d = s.ctl.delete_topics(&s.image, &[name]);
                s.commit(d.records);
            }
            70..=74 => {
                let name = format!("t{}", rng.gen_range(0..6));
                let cur = s
                    .image
                    .topics
                    .get(&name)
                    .map_or(0, |t| t.partitions.len() as i32);
                if let Ok(recs) = s.ctl.create_partitions(&s.image, &name, cur + 1, false) {
                    s.commit(recs);
                }
            }
            _ => {
                // AlterPartition from a random partition's leader (or someone else), with a
                // random ISR proposal and occasionally stale epochs.
                let parts: Vec<(Uuid, i32, PartitionRegistration)> = s
                    .image
                    .topics
                    .values()
                    .flat_map(|t| {
                        t.partitions
                            .iter()
                            .map(|(&p, r)| (t.topic_id, p, r.clone()))
                    })
                    .collect();
                if parts.is_empty() {
                    continue;
                }
                let (tid, pid, reg) = parts[rng.gen_range(0..parts.len())].clone();
                let from = if rng.gen_bool(0.8) {
                    reg.leader
                } else {
                    BrokerId(broker)
                };
                let Some(b) = s.image.brokers.get(&from) else {
                    continue;
                };
                let mut isr: Vec<BrokerId> = reg
                    .replicas
                    .iter()
                    .copied()
                    .filter(|&r| r == from || rng.gen_bool(0.6))
                    .collect();
                if rng.gen_bool(0.05) {
                    isr.push(BrokerId(rng.gen_range(0..6)));
                }
                let req = AlterPartition {
                    broker_id: from,
                    broker_epoch: b.broker_epoch,
                    topic_id: tid,
                    partition: pid,
                    leader_epoch: LeaderEpoch(
                        reg.leader_epoch.get() - i32::from(rng.gen_bool(0.05)),
                    ),
                    partition_epoch: PartitionEpoch(
                        reg.partition_epoch.get() - i32::from(rng.gen_bool(0.05)),
                    ),
                    new_isr: isr,
                };
                if let Ok(d) = s.ctl.alter_partition(&s.image, &req) {
                    s.commit(d.records);
                    assert_eq!(
                        &d.reply,
                        s.image.partition(tid, pid).unwrap(),
                        "seed {seed} step {step}"
                    );
                }
            }
        }
        check_invariants(&s.image, &mut seen, &mut leaders, seed);
        // Every partition leader is an active broker, and fenced brokers lead nothing.
        for t in s.image.topics.values() {
            for p in t.partitions.values() {
                if p.leader != NO_LEADER {
                    let b = &s.image.brokers[&p.leader];
                    assert!(!b.fenced, "seed {seed} step {step}: fenced leader {p:?}");
                }
            }
        }
    }
    let changes = s
        .log
        .iter()
        .filter(|(_, r)| matches!(r, MetadataRecord::PartitionChangeRecord { .. }))
        .count();
    println!(
        "seed {seed}: {} records, {changes} partition changes, {} leader epochs seen",
        s.log.len(),
        leaders.len()
    );
    assert!(
        changes > 0,
        "seed {seed}: the run exercised no partition change"
    );
    // Replaying the log on a fresh image rebuilds the same image.
    let mut replay = MetadataImage::default();
    for (o, r) in &s.log {
        replay.apply(*o, r);
    }
    assert_eq!(replay, s.image, "seed {seed}: replay differs");
}

#[test]
fn unregister_broker_moves_its_partitions_and_removes_the_registration() {
    let mut s = Sim::new(false);
    s.active(&[1, 2, 3]);
    s.create("t", 3, 3).unwrap();
    let e = s.ctl.unregister_broker(&s.image, BrokerId(9)).unwrap_err();
    assert_eq!(e.code, ErrorCode::BROKER_ID_NOT_REGISTERED);
    assert_eq!(e.message, "Broker ID 9 is not currently registered");
    let recs = s.ctl.unregister_broker(&s.image, BrokerId(1)).unwrap();
    s.commit(recs);
    assert!(!s.image.brokers.contains_key(&BrokerId(1)));
    for p in 0..3 {
        let now = s.part("t", p);
        assert_ne!(now.leader, BrokerId(1));
        assert!(!now.isr.contains(&BrokerId(1)));
    }
    // A stale epoch does not remove a newer registration.
    let old = s.image.brokers[&BrokerId(2)].broker_epoch;
    s.register(2, 22).unwrap_err(); // live session: refused
    s.commit(vec![MetadataRecord::UnregisterBrokerRecord {
        broker_id: BrokerId(2),
        broker_epoch: BrokerEpoch(old.get() - 1),
    }]);
    assert!(s.image.brokers.contains_key(&BrokerId(2)));
}
