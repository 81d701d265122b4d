//! Tests of [`Partition`]'s verbs on a real log (the replication rules themselves are tested in
//! `replica_states_tests.rs`, the fetcher and the acks=all wait end to end in `replication_tests.rs`).

use super::*;

fn partition(dir: &std::path::Path) -> Partition {
    let log = Log::open(dir, LogConfig::default(), Uuid::nil(), false, Offset(0), 0).unwrap();
    Partition::new("t", 0, Uuid::nil(), Arc::new(Mutex::new(log)))
}

fn state(leader: i32, leader_epoch: i32) -> PartitionState {
    PartitionState {
        topic_id: Uuid::nil(),
        leader: BrokerId(leader),
        leader_epoch: LeaderEpoch(leader_epoch),
        partition_epoch: PartitionEpoch(leader_epoch),
        isr: vec![BrokerId(leader)],
        replicas: vec![BrokerId(1), BrokerId(2)],
    }
}

/// The follower guard: verbs apply only to the fetcher's (leader, epoch); an older registration is
/// ignored and never moves the epoch back.
#[test]
fn follower_verbs_apply_only_in_the_fetchers_epoch() {
    let dir = tempfile::tempdir().unwrap();
    let p = partition(dir.path());
    assert_eq!(
        p.apply_partition_state(BrokerId(1), &state(2, 3), 0)
            .unwrap(),
        RoleChange::Follower {
            leader: Some(BrokerId(2))
        }
    );
    assert!(p.is_following(BrokerId(2), LeaderEpoch(3)));
    assert!(!p.is_following(BrokerId(2), LeaderEpoch(2)));
    assert_eq!(
        p.apply_partition_state(BrokerId(1), &state(2, 1), 0)
            .unwrap(),
        RoleChange::Unchanged
    );
    assert_eq!(p.leader_epoch(), LeaderEpoch(3));
    assert!(!p
        .append_as_follower(
            BrokerId(2),
            LeaderEpoch(2),
            Bytes::new(),
            Offset(0),
            Offset(0),
            0
        )
        .unwrap());
    assert!(p
        .append_as_follower(
            BrokerId(2),
            LeaderEpoch(3),
            Bytes::new(),
            Offset(5),
            Offset(0),
            0
        )
        .unwrap());
    assert_eq!(
        p.high_watermark(),
        Offset(0),
        "the leader's HW is capped by our LEO"
    );
    assert!(matches!(
        p.read(Offset(0), 100, false, true),
        PartitionRead::NotLeader
    ));
    assert_eq!(
        p.apply_partition_state(BrokerId(1), &state(1, 4), 0)
            .unwrap(),
        RoleChange::Leader
    );
    assert!(!p.is_following(BrokerId(2), LeaderEpoch(3)));
    assert!(matches!(
        p.check_leader_epoch(LeaderEpoch(3)),
        Err(ReplicaError::FencedLeaderEpoch {
            request: LeaderEpoch(3),
            current: LeaderEpoch(4)
        })
    ));
    assert!(
        p.check_leader_epoch(LeaderEpoch(4)).is_ok()
            && p.check_leader_epoch(LeaderEpoch(-1)).is_ok()
    );
}
