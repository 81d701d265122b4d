//! KIP-455 reassignments in the controller: start, completion by the AlterPartition that brings the
//! target into the ISR, leadership handed over, replacement and cancellation, validation.

use super::*;

/// Brokers 1..=4 active; topic `t`, one partition on brokers 1, 2, 3 (ISR all three), led by 1.
fn four_brokers() -> Sim {
    let mut s = Sim::new(false);
    s.active(&[1, 2, 3, 4]);
    let d = s.ctl.create_topics(
        &s.image,
        &[CreateTopic {
            name: "t".into(),
            num_partitions: -1,
            replication_factor: -1,
            assignments: vec![(0, ids(&[1, 2, 3]))],
            configs: BTreeMap::new(),
        }],
        false,
    );
    s.commit(d.records);
    assert_eq!(s.part("t", 0).leader, BrokerId(1));
    s
}

fn reassign(s: &mut Sim, target: Option<&[i32]>) -> Result<(), ControllerError> {
    let d = s.ctl.alter_partition_reassignments(
        &s.image,
        &[Reassignment {
            topic: "t".into(),
            partition: 0,
            target: target.map(ids),
        }],
        true,
    );
    s.commit(d.records);
    d.reply.into_iter().next().unwrap()
}

fn listed(s: &Sim) -> Vec<OngoingReassignment> {
    metadata::ongoing_reassignments(&s.image, None)
}

#[test]
fn a_move_adds_first_and_removes_once_the_target_is_in_sync_handing_over_leadership() {
    let mut s = four_brokers();
    reassign(&mut s, Some(&[4, 2, 3])).unwrap();
    let p = s.part("t", 0);
    assert_eq!(
        (
            p.replicas.clone(),
            p.adding_replicas.clone(),
            p.removing_replicas.clone()
        ),
        (ids(&[4, 2, 3, 1]), ids(&[4]), ids(&[1]))
    );
    assert_eq!(
        (p.leader, p.isr.clone()),
        (BrokerId(1), ids(&[1, 2, 3])),
        "nothing moves yet"
    );
    assert_eq!(listed(&s).len(), 1);
    // The new replica catches up: the leader adds it to the ISR, which completes the move.
    s.set_isr("t", 0, vec![1, 2, 3, 4]);
    let p = s.part("t", 0);
    assert_eq!(p.replicas, ids(&[4, 2, 3]));
    assert!(!p.is_reassigning());
    assert_eq!(p.isr, ids(&[2, 3, 4]), "the removed replica left the ISR");
    assert_eq!(
        p.leader,
        BrokerId(4),
        "the first target replica in the ISR leads"
    );
    assert!(listed(&s).is_empty());
}

#[test]
fn a_shrink_within_the_isr_completes_at_once_and_a_reorder_is_one_change() {
    let mut s = four_brokers();
    reassign(&mut s, Some(&[2, 3])).unwrap();
    let p = s.part("t", 0);
    assert_eq!(
        (p.replicas.clone(), p.isr.clone()),
        (ids(&[2, 3]), ids(&[2, 3]))
    );
    assert_eq!(p.leader, BrokerId(2));
    assert!(!p.is_reassigning());
    reassign(&mut s, Some(&[3, 2])).unwrap();
    assert_eq!(s.part("t", 0).replicas, ids(&[3, 2]));
    let before = s.image.offset;
    reassign(&mut s, Some(&[3, 2])).unwrap();
    assert_eq!(s.image.offset, before, "the same replicas: nothing written");
}

#[test]
fn a_cancel_reverts_to_the_original_replicas_and_a_replacement_starts_from_the_current_list() {
    let mut s = four_brokers();
    assert_eq!(
        reassign(&mut s, None).unwrap_err().code,
        ErrorCode::NO_REASSIGNMENT_IN_PROGRESS
    );
    reassign(&mut s, Some(&[4, 2, 3])).unwrap();
    reassign(&mut s, None).unwrap();
    let p = s.part("t", 0);
    // As Kafka: the original replicas in the order of the moving list (target first, then removing).
    assert_eq!(
        (p.replicas.clone(), p.isr.clone()),
        (ids(&[2, 3, 1]), ids(&[1, 2, 3]))
    );
    assert_eq!(p.leader, BrokerId(1));
    assert!(!p.is_reassigning());
    // A replacement of an ongoing move starts from the current (union) list.
    reassign(&mut s, Some(&[4, 2, 3])).unwrap();
    reassign(&mut s, Some(&[1, 2, 4])).unwrap();
    let p = s.part("t", 0);
    assert_eq!(p.replicas, ids(&[1, 2, 4, 3]));
    assert_eq!(
        p.adding_replicas,
        Vec::<BrokerId>::new(),
        "4 is already in the current list"
    );
    assert_eq!(p.removing_replicas, ids(&[3]));
    // 4 is not in the ISR yet: the move waits for it although nothing is listed as adding.
    s.set_isr("t", 0, vec![1, 2, 3, 4]);
    let p = s.part("t", 0);
    assert_eq!(
        (p.replicas.clone(), p.isr.clone()),
        (ids(&[1, 2, 4]), ids(&[1, 2, 4]))
    );
}

#[test]
fn bad_targets_are_invalid_replica_assignments_and_unknown_partitions_unknown() {
    let mut s = four_brokers();
    for bad in [&[][..], &[1, 1][..], &[1, 9][..]] {
        assert_eq!(
            reassign(&mut s, Some(bad)).unwrap_err().code,
            ErrorCode::INVALID_REPLICA_ASSIGNMENT,
            "{bad:?}"
        );
    }
    let d = s.ctl.alter_partition_reassignments(
        &s.image,
        &[Reassignment {
            topic: "t".into(),
            partition: 7,
            target: Some(ids(&[1])),
        }],
        true,
    );
    assert_eq!(
        d.reply[0].as_ref().unwrap_err().code,
        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
    );
    assert!(d.records.is_empty());
}

#[test]
fn a_replication_factor_change_is_refused_when_not_allowed() {
    let s = four_brokers();
    let before = s.part("t", 0).replicas.clone();
    let d = s.ctl.alter_partition_reassignments(
        &s.image,
        &[Reassignment {
            topic: "t".into(),
            partition: 0,
            target: Some(ids(&[1, 2, 3, 4])),
        }],
        false,
    );
    assert_eq!(
        d.reply[0].as_ref().unwrap_err().code,
        ErrorCode::INVALID_REPLICATION_FACTOR
    );
    assert!(d.records.is_empty());
    assert_eq!(s.part("t", 0).replicas, before);
}
