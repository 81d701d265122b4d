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

/// Found by the fault campaign (reliability/, kill_two_of_three): this replica became leader of epoch 2,
/// recorded the epoch's start at its LEO, and was replaced before appending anything. Following the epoch 3
/// leader, whose log has no epoch 2 and reaches past our LEO, the diverging answer truncates nothing, but
/// the empty epoch 2 entry must go (Kafka's `truncateTo` drops it), or every later Fetch sends
/// last_fetched_epoch 2 again, is answered as diverging again, and the replica never rejoins the ISR.
#[test]
fn diverging_answer_drops_an_epoch_led_without_appending() {
    let dir = tempfile::tempdir().unwrap();
    let p = partition(dir.path());
    assert_eq!(
        p.apply_partition_state(BrokerId(1), &state(1, 2), 0)
            .unwrap(),
        RoleChange::Leader
    );
    assert_eq!(p.latest_epoch(), Some(LeaderEpoch(2)));
    p.apply_partition_state(BrokerId(1), &state(2, 3), 0)
        .unwrap();
    // The new leader's cache: epoch 0 up to offset 10, then its own epoch 3.
    let answer = (LeaderEpoch(0), Offset(10));
    assert!(p
        .truncate_by_epoch(BrokerId(2), LeaderEpoch(3), Some(LeaderEpoch(2)), answer)
        .unwrap());
    assert_eq!(p.log_end_offset(), Offset(0));
    assert_eq!(
        p.latest_epoch(),
        None,
        "the empty epoch 2 entry is gone: the next Fetch no longer diverges"
    );
}
