//! A broker's data dir going offline and coming back (KIP-858's `OfflineLogDirs` in the heartbeat,
//! reduced to one dir per broker): leadership moves, the ISR shrinks, and the broker is not elected,
//! added to an ISR or given replicas until it reports the dir online again.

use super::*;

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
    let reply = s.hb_dir(old_leader, false, false, true).unwrap();
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
    s.hb_dir(old_leader, false, false, true).unwrap();
    assert_eq!(s.log.len(), n, "an unchanged state writes no record");
}

#[test]
fn offline_replica_is_never_elected_or_added_back_to_the_isr() {
    let mut s = three_brokers();
    let failed = s.part("t", 0).leader;
    s.hb_dir(failed, false, false, true).unwrap();
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
    s.hb_dir(failed, false, false, true).unwrap();
    s.hb_dir(failed, false, false, false).unwrap();
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
    s.hb_dir(1, false, false, true).unwrap();
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
    s.hb_dir(1, false, false, false).unwrap();
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
    let reply = s.hb_dir(3, false, false, true).unwrap();
    assert!(!reply.is_fenced);
    assert!(!s.image.is_active_broker(BrokerId(3)));
}
