//! A broker's data dirs going offline and coming back (KIP-858's `OfflineLogDirs` in the heartbeat and
//! AssignReplicasToDirs): with every dir offline (or `DirectoryId.LOST`), leadership moves, the ISR
//! shrinks, and the broker is not elected, added to an ISR or given replicas until it reports a dir
//! online again; with one dir of several offline, only the replicas in it are affected.

use super::*;
use metadata::{AssignReplicasToDirs, DIRECTORY_LOST};

/// The heartbeat's `OfflineLogDirs` of a broker that cannot name its failed dir: all of them.
fn lost() -> Vec<Uuid> {
    vec![DIRECTORY_LOST]
}

/// Brokers 1..=3 active, topic `t` with one partition on all three, ISR all three.
fn three_brokers() -> Sim {
    let mut s = Sim::new(false);
    s.active(&[1, 2, 3]);
    s.create("t", 1, 3).unwrap();
    s
}

#[test]
fn offline_log_dir_moves_leadership_and_shrinks_the_isr() {
    let mut s = three_brokers();
    let before = s.part("t", 0);
    let old_leader = before.leader;
    assert_eq!(before.isr.len(), 3);
    let reply = s.hb_dir(old_leader, false, false, lost()).unwrap();
    assert!(
        !reply.is_fenced,
        "a broker with an offline dir stays registered and unfenced"
    );
    let after = s.part("t", 0);
    assert_ne!(
        after.leader, old_leader,
        "leadership moved off the failed dir"
    );
    assert_ne!(after.leader, NO_LEADER);
    assert!(before.isr.contains(&after.leader));
    assert!(
        !after.isr.contains(&old_leader),
        "failed replica left the ISR"
    );
    assert_eq!(after.leader_epoch.get(), before.leader_epoch.get() + 1);
    assert!(s.image.brokers[&old_leader].log_dir_offline);
    assert!(!s.image.is_active_broker(old_leader));
    // Repeating the heartbeat changes nothing.
    let n = s.log.len();
    s.hb_dir(old_leader, false, false, lost()).unwrap();
    assert_eq!(s.log.len(), n, "an unchanged state writes no record");
}

#[test]
fn offline_replica_is_never_elected_or_added_back_to_the_isr() {
    let mut s = three_brokers();
    let failed = s.part("t", 0).leader;
    s.hb_dir(failed, false, false, lost()).unwrap();
    // The leader tries to add it back: refused.
    let reg = s.part("t", 0);
    let mut isr = reg.isr.clone();
    isr.push(failed);
    let req = AlterPartition {
        broker_id: reg.leader,
        broker_epoch: s.image.brokers[&reg.leader].broker_epoch,
        topic_id: s.image.topics["t"].topic_id,
        partition: 0,
        leader_epoch: reg.leader_epoch,
        partition_epoch: reg.partition_epoch,
        new_isr: isr,
    };
    let e = s.ctl.alter_partition(&s.image, &req).unwrap_err();
    assert_eq!(e.code, ErrorCode::INELIGIBLE_REPLICA);
    // Every other replica goes away: the partition goes leaderless rather than to the failed one.
    for other in reg.isr.clone() {
        s.hb(other, true, false).unwrap();
    }
    assert_eq!(s.part("t", 0).leader, NO_LEADER);
    // A preferred election does not pick it either.
    let d = s.ctl.elect_leaders(&s.image, ElectionType::Preferred, None);
    s.commit(d.records);
    assert_eq!(s.part("t", 0).leader, NO_LEADER);
    // Nor does placement: no broker is active, so even RF 1 cannot be placed.
    assert!(s.create("u", 1, 1).is_err());
}

#[test]
fn log_dir_back_online_makes_the_broker_eligible_again() {
    let mut s = three_brokers();
    let failed = s.part("t", 0).leader;
    s.hb_dir(failed, false, false, lost()).unwrap();
    s.hb_dir(failed, false, false, Vec::new()).unwrap();
    assert!(!s.image.brokers[&failed].log_dir_offline);
    assert!(s.image.is_active_broker(failed));
    // Its follower can be added back to the ISR by the leader.
    let mut isr = s.part("t", 0).isr;
    isr.push(failed);
    s.set_isr("t", 0, isr);
    assert!(s.part("t", 0).isr.contains(&failed));
}

#[test]
fn sole_replica_partition_goes_leaderless_and_comes_back_with_its_dir() {
    let mut s = Sim::new(false);
    s.active(&[1]);
    s.create("solo", 1, 1).unwrap();
    assert_eq!(s.part("solo", 0).leader, BrokerId(1));
    s.hb_dir(1, false, false, lost()).unwrap();
    let p = s.part("solo", 0);
    assert_eq!(
        p.leader, NO_LEADER,
        "no other replica: the partition is offline"
    );
    assert_eq!(
        p.isr,
        ids(&[1]),
        "the last ISR member stays so it can come back"
    );
    s.hb_dir(1, false, false, Vec::new()).unwrap();
    assert_eq!(
        s.part("solo", 0).leader,
        BrokerId(1),
        "back as leader once online"
    );
}

#[test]
fn offline_dir_reported_while_fenced_keeps_the_broker_ineligible_after_unfencing() {
    let mut s = Sim::new(false);
    s.active(&[1, 2]);
    s.create("t", 1, 2).unwrap();
    let epoch = s.register(3, 3).unwrap();
    assert!(s.image.brokers[&BrokerId(3)].fenced);
    assert_eq!(s.image.brokers[&BrokerId(3)].broker_epoch, epoch);
    // Its first heartbeat reports the dir offline: unfenced, but not active.
    let reply = s.hb_dir(3, false, false, lost()).unwrap();
    assert!(!reply.is_fenced);
    assert!(!s.image.is_active_broker(BrokerId(3)));
}

/// The two data dirs of broker `b` in the tests below.
fn dirs_of(b: i32) -> [Uuid; 2] {
    [
        Uuid::from_u128(100 + b as u128),
        Uuid::from_u128(200 + b as u128),
    ]
}

/// Brokers 1..=3 registered with two dirs each and unfenced; topic `t` with `n` partitions on all three.
fn jbod(n: i32) -> Sim {
    let mut s = Sim::new(false);
    for b in 1..=3 {
        let req = RegisterBroker {
            broker_id: BrokerId(b),
            incarnation_id: Uuid::from_u128(b as u128),
            host: "localhost".into(),
            port: 9000 + b as u16,
            rack: None,
            listeners: Vec::new(),
            log_dirs: dirs_of(b).to_vec(),
        };
        let recs = s.ctl.register_broker(&s.image, &req, s.now).unwrap();
        s.commit(recs);
        s.hb(b, false, false).unwrap();
    }
    s.create("t", n, 3).unwrap();
    s
}

/// Broker `b` says partition `p` of `t` is in its dir `dir` (0 or 1).
fn assign(s: &mut Sim, b: i32, p: i32, dir: usize) {
    let req = AssignReplicasToDirs {
        broker_id: BrokerId(b),
        broker_epoch: s.image.brokers[&BrokerId(b)].broker_epoch,
        assignments: vec![(s.image.topics["t"].topic_id, p, dirs_of(b)[dir])],
    };
    let recs = s.ctl.assign_replicas_to_dirs(&s.image, &req).unwrap();
    s.commit(recs);
}

#[test]
fn one_failed_dir_of_several_moves_only_its_replicas() {
    let mut s = jbod(2);
    let leader = s.part("t", 0).leader;
    let b = leader.get();
    // Partition 0's replica on the leader is in dir 0, partition 1's in dir 1.
    assign(&mut s, b, 0, 0);
    assign(&mut s, b, 1, 1);
    assert_eq!(s.part("t", 0).directory_of(leader), dirs_of(b)[0]);
    let untouched = s.part("t", 1);
    s.hb_dir(b, false, false, vec![dirs_of(b)[0]]).unwrap();
    let reg = &s.image.brokers[&leader];
    assert!(
        !reg.log_dir_offline,
        "one dir of two: the broker stays active"
    );
    assert!(s.image.is_active_broker(leader));
    let p0 = s.part("t", 0);
    assert_ne!(
        p0.leader, leader,
        "partition 0's leadership moved off the failed dir"
    );
    assert!(!p0.isr.contains(&leader), "its replica left the ISR");
    // Partition 1, in the healthy dir, is untouched.
    assert_eq!(s.part("t", 1), untouched);
    // The failed replica is not elected back nor added to the ISR while its dir is offline.
    let d = s.ctl.elect_leaders(&s.image, ElectionType::Preferred, None);
    s.commit(d.records);
    assert!(!s.part("t", 0).isr.contains(&leader));
    assert_ne!(s.part("t", 0).leader, leader);
    // Back online: eligible again; the preferred election may return it.
    s.hb_dir(b, false, false, Vec::new()).unwrap();
    assert!(s.image.brokers[&leader].offline_log_dirs.is_empty());
    let mut isr = s.part("t", 0).isr;
    isr.push(leader);
    s.set_isr("t", 0, isr);
    assert!(s.part("t", 0).isr.contains(&leader));
}

#[test]
fn every_dir_offline_is_the_whole_broker_offline() {
    let mut s = jbod(1);
    let leader = s.part("t", 0).leader;
    s.hb_dir(leader, false, false, dirs_of(leader.get()).to_vec())
        .unwrap();
    assert!(s.image.brokers[&leader].log_dir_offline);
    assert!(!s.image.is_active_broker(leader));
    assert_ne!(s.part("t", 0).leader, leader);
}

#[test]
fn an_assignment_into_an_offline_dir_takes_the_replica_out() {
    let mut s = jbod(1);
    let leader = s.part("t", 0).leader;
    let b = leader.get();
    // The dir fails before the broker told where the replica is: unassigned counts as online.
    s.hb_dir(b, false, false, vec![dirs_of(b)[1]]).unwrap();
    assert_eq!(s.part("t", 0).leader, leader);
    // Then the assignment arrives: the replica is in the failed dir and leaves.
    assign(&mut s, b, 0, 1);
    let p = s.part("t", 0);
    assert_ne!(p.leader, leader);
    assert!(!p.isr.contains(&leader));
    // An assignment that changes nothing writes nothing; a stale epoch is refused.
    let n = s.log.len();
    assign(&mut s, b, 0, 1);
    assert_eq!(s.log.len(), n);
    let stale = AssignReplicasToDirs {
        broker_id: leader,
        broker_epoch: BrokerEpoch(1),
        assignments: Vec::new(),
    };
    let e = s.ctl.assign_replicas_to_dirs(&s.image, &stale).unwrap_err();
    assert_eq!(e.code, ErrorCode::STALE_BROKER_EPOCH);
}

#[test]
fn a_replica_kept_by_a_reassignment_keeps_its_directory() {
    let mut s = jbod(1);
    let tid = s.image.topics["t"].topic_id;
    for b in 1..=3 {
        assign(&mut s, b, 0, 1);
    }
    let p = s.part("t", 0);
    let mut order = p.replicas.clone();
    order.rotate_left(1);
    let mut change = MetadataRecord::isr_leader_change(tid, 0, None, None);
    if let MetadataRecord::PartitionChangeRecord { replicas, .. } = &mut change {
        *replicas = Some(order.clone());
    }
    s.commit(vec![change]);
    let q = s.part("t", 0);
    for r in order {
        assert_eq!(q.directory_of(r), dirs_of(r.get())[1]);
    }
}
