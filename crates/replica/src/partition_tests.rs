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
        p.read(
            Offset(0),
            100,
            FetchSource::Consumer {
                isolation: IsolationLevel::ReadUncommitted,
                leader_only: true
            },
            true
        ),
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

/// `PartitionState` of a two-replica partition (brokers 1 and 2, both in the ISR) led by `leader`.
fn state2(leader: i32, leader_epoch: i32) -> PartitionState {
    PartitionState {
        isr: vec![BrokerId(1), BrokerId(2)],
        ..state(leader, leader_epoch)
    }
}

/// A batch of `n` records in leader epoch `epoch` starting at `base`, as a leader stores it.
fn epoch_batch(base: i64, epoch: i32, n: usize) -> Bytes {
    let mut b = protocol::record::RecordBatchBuilder::new(protocol::record::Compression::None)
        .base_offset(base)
        .partition_leader_epoch(epoch);
    for i in 0..n {
        b.append(0, None, Some(Bytes::from(format!("v{i}"))), vec![]);
    }
    b.build().unwrap()
}

/// The stale-epoch follower (issue 13): B led epoch 1 without appending, so its epoch cache ends with
/// (1, 10) at its LogEndOffset; the new leader A's cache is (0, 0), (2, 10). The leader's answer for
/// epoch 1 is (0, 10): the truncation target equals B's LEO, so no record is removed — but the stale
/// (1, 10) entry must be (Kafka's `truncateTo` → `truncateFromEnd(LEO)`), or every Fetch diverges again.
#[test]
fn follower_drops_a_stale_epoch_entry_at_its_log_end_offset() {
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, b) = (partition(da.path()), partition(db.path()));
    // Epoch 0: A (broker 1) leads, writes 10 records; B (broker 2) replicates them.
    a.apply_partition_state(BrokerId(1), &state2(1, 0), 0)
        .unwrap();
    b.apply_partition_state(BrokerId(2), &state2(1, 0), 0)
        .unwrap();
    a.append_as_leader(epoch_batch(0, -1, 10), 0, 0).unwrap();
    let fetched = epoch_batch(0, 0, 10);
    assert!(b
        .append_as_follower(
            BrokerId(1),
            LeaderEpoch(0),
            fetched,
            Offset(10),
            Offset(0),
            0
        )
        .unwrap());
    // Epoch 1: B leads and appends nothing; epoch 2: A leads again, B follows.
    b.apply_partition_state(BrokerId(2), &state2(2, 1), 0)
        .unwrap();
    a.apply_partition_state(BrokerId(1), &state2(2, 1), 0)
        .unwrap();
    a.apply_partition_state(BrokerId(1), &state2(1, 2), 0)
        .unwrap();
    b.apply_partition_state(BrokerId(2), &state2(1, 2), 0)
        .unwrap();
    assert_eq!(b.latest_epoch(), Some(LeaderEpoch(1)));
    assert_eq!(a.latest_epoch(), Some(LeaderEpoch(2)));

    // B's Fetch (last fetched epoch 1 at offset 10) diverges: the leader knows epoch 0 ending at 10.
    let pos = b.fetch_position();
    let (diverging, _) = a
        .follower_fetch(
            BrokerId(2),
            pos.last_fetched_epoch,
            (pos.log_end_offset, pos.log_start_offset),
            0,
        )
        .unwrap();
    let d = diverging.expect("a diverging epoch for the stale follower");
    assert_eq!((d.epoch, d.end_offset), (LeaderEpoch(0), Offset(10)));
    assert_eq!(
        a.end_offset_for_epoch(LeaderEpoch(1)),
        (LeaderEpoch(0), Offset(10))
    );
    assert!(b
        .truncate_by_epoch(
            BrokerId(1),
            LeaderEpoch(2),
            Some(LeaderEpoch(1)),
            (d.epoch, d.end_offset)
        )
        .unwrap());
    assert_eq!(b.log_end_offset(), Offset(10), "no record is removed");
    assert_eq!(
        b.latest_epoch(),
        Some(LeaderEpoch(0)),
        "the stale epoch-1 entry at the LogEndOffset stays: the follower diverges forever"
    );
    // The next Fetch no longer diverges: the follower is recorded and catches up.
    let pos = b.fetch_position();
    let (diverging, _) = a
        .follower_fetch(
            BrokerId(2),
            pos.last_fetched_epoch,
            (pos.log_end_offset, pos.log_start_offset),
            0,
        )
        .unwrap();
    assert!(diverging.is_none(), "still diverging: {diverging:?}");
}

/// A follower truncation below the recovery point writes the recovery-point checkpoint before the verb
/// returns (Kafka's `LogManager.truncateTo`): otherwise a restart before the next periodic checkpoint
/// would start recovery past the truncation and trust unflushed appends made after it (found by the
/// storage crate's SimFs crash simulation, `tests/sim_crash.rs`).
#[test]
fn truncation_below_the_recovery_point_is_checkpointed_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let lm = Arc::new(
        LogManager::open(
            dir.path(),
            |_| LogConfig::default(),
            Arc::new(types::ManualClock::new(0)),
        )
        .unwrap(),
    );
    let log = lm
        .get_or_create_log("t", 0, Uuid::nil(), LogConfig::default())
        .unwrap();
    let p = Partition::new("t", 0, Uuid::nil(), log.clone()).with_log_manager(lm.clone());
    p.apply_partition_state(BrokerId(2), &state2(1, 0), 0)
        .unwrap();
    let fetched = epoch_batch(0, 0, 10);
    assert!(p
        .append_as_follower(
            BrokerId(1),
            LeaderEpoch(0),
            fetched,
            Offset(0),
            Offset(0),
            0
        )
        .unwrap());
    log.lock().flush().unwrap();
    lm.checkpoint().unwrap();
    let file =
        storage::OffsetCheckpointFile::new(dir.path().join("recovery-point-offset-checkpoint"));
    assert_eq!(file.read().unwrap()[&("t".to_string(), 0)], 10);
    // The leader's epoch 0 ended at 4 (a batch boundary is needed: the whole 10-record batch goes).
    assert!(p
        .truncate_by_epoch(
            BrokerId(1),
            LeaderEpoch(0),
            Some(LeaderEpoch(0)),
            (LeaderEpoch(0), Offset(4))
        )
        .unwrap());
    let leo = log.lock().log_end_offset().get();
    assert!(leo < 10, "truncated to {leo}");
    assert_eq!(
        file.read().unwrap()[&("t".to_string(), 0)],
        leo,
        "the on-disk recovery point follows the truncation at once"
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

/// A transactional batch of `n` records of producer `pid` (epoch 0) at sequence `seq`.
fn txn_batch(pid: i64, seq: i32, n: usize) -> Bytes {
    let mut b = protocol::record::RecordBatchBuilder::new(protocol::record::Compression::None)
        .producer(pid, 0, seq)
        .transactional(true);
    for i in 0..n {
        b.append(0, None, Some(Bytes::from(format!("v{i}"))), vec![]);
    }
    b.build().unwrap()
}

fn read(
    p: &Partition,
    isolation: IsolationLevel,
) -> (Offset, Offset, usize, Vec<storage::AbortedTxn>) {
    let source = FetchSource::Consumer {
        isolation,
        leader_only: true,
    };
    match p.read(Offset(0), 1 << 20, source, true) {
        PartitionRead::Records {
            high_watermark,
            last_stable_offset,
            records,
            aborted_transactions,
            ..
        } => (
            high_watermark,
            last_stable_offset,
            records.len(),
            aborted_transactions,
        ),
        other => panic!("unexpected read {other:?}"),
    }
}

/// A transaction on a leader with a follower in the ISR: the LastStableOffset stays at the
/// transaction's first offset while it is ongoing and after the ABORT marker, until a
/// follower fetch moves the HighWatermark past the marker (Kafka's `unreplicatedTxns`); a
/// `read_committed` read stops at the LSO and lists the aborted transaction, a `read_uncommitted` one
/// reads to the HW and lists nothing; a delayed fetch waiting on the partition is woken by that HW move.
#[tokio::test]
async fn abort_marker_advances_the_last_stable_offset_with_the_high_watermark() {
    use storage::{AbortedTxn, EndTransactionMarker};
    use types::{ProducerEpoch, ProducerId};
    let dir = tempfile::tempdir().unwrap();
    let p = partition(dir.path());
    p.apply_partition_state(BrokerId(1), &state2(1, 0), 0)
        .unwrap();
    p.append_as_leader(txn_batch(7, 0, 3), 0, 0).unwrap(); // 0..=2
    p.follower_fetch(BrokerId(2), LeaderEpoch::NONE, (Offset(3), Offset(0)), 0)
        .unwrap();
    assert_eq!(p.high_watermark(), Offset(3));
    assert_eq!(
        p.last_stable_offset(),
        Offset(0),
        "the ongoing transaction pins the LSO"
    );
    let (hw, lso, bytes, aborted) = read(&p, IsolationLevel::ReadCommitted);
    assert_eq!(
        (hw, lso, bytes, aborted.len()),
        (Offset(3), Offset(0), 0, 0)
    );
    let (_, _, uncommitted_bytes, aborted) = read(&p, IsolationLevel::ReadUncommitted);
    assert!(uncommitted_bytes > 0 && aborted.is_empty());

    let marker = EndTransactionMarker::new(false, 0);
    let (info, epoch) = p
        .append_txn_marker(ProducerId(7), ProducerEpoch(0), marker, 2, 0)
        .unwrap();
    assert_eq!((info.first_offset, epoch), (Offset(3), LeaderEpoch(0)));
    assert_eq!(
        p.last_stable_offset(),
        Offset(0),
        "completed but the HW (3) has not passed the marker: still unstable"
    );
    let (_, lso, bytes, _) = read(&p, IsolationLevel::ReadCommitted);
    assert_eq!((lso, bytes), (Offset(0), 0));

    // A waiter on the partition is woken by the follower fetch that moves the HW past the marker.
    let notified = p.changed().notified();
    let mut notified = std::pin::pin!(notified);
    notified.as_mut().enable();
    p.follower_fetch(BrokerId(2), LeaderEpoch(0), (Offset(4), Offset(0)), 0)
        .unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(1), notified)
        .await
        .expect("the HW advance wakes the delayed fetch");
    assert_eq!(
        (p.high_watermark(), p.last_stable_offset()),
        (Offset(4), Offset(4))
    );
    let (_, lso, bytes, aborted) = read(&p, IsolationLevel::ReadCommitted);
    assert_eq!(lso, Offset(4));
    assert!(bytes > uncommitted_bytes, "the marker is readable too");
    assert_eq!(
        aborted,
        vec![AbortedTxn {
            producer_id: ProducerId(7),
            first_offset: Offset(0),
            last_offset: Offset(3),
            last_stable_offset: Offset(4),
        }]
    );
    let (_, _, _, aborted) = read(&p, IsolationLevel::ReadUncommitted);
    assert!(aborted.is_empty());
}

/// Markers are leader-only, and a client's append may not hold a control batch; DescribeProducers'
/// state shows the producer's epoch, sequence, coordinator epoch and open transaction.
#[test]
fn markers_need_the_leader_and_the_coordinator_origin() {
    use storage::EndTransactionMarker;
    use types::{ProducerEpoch, ProducerId};
    let dir = tempfile::tempdir().unwrap();
    let p = partition(dir.path());
    let marker = EndTransactionMarker::new(true, 5);
    assert!(matches!(
        p.append_txn_marker(ProducerId(7), ProducerEpoch(0), marker, 0, 0),
        Err(ReplicaError::NotLeaderOrFollower)
    ));
    p.apply_partition_state(BrokerId(1), &state(1, 0), 0)
        .unwrap();
    p.append_as_leader(txn_batch(7, 0, 2), 0, 0).unwrap();
    let producers = p.active_producers();
    assert_eq!(producers.len(), 1);
    let open = producers[0];
    assert_eq!(
        (open.producer_id, open.producer_epoch, open.last_sequence),
        (ProducerId(7), ProducerEpoch(0), 1)
    );
    assert_eq!(open.current_txn_start_offset, Offset(0));
    let control = marker.to_batch(ProducerId(7), ProducerEpoch(0), 0).unwrap();
    assert!(matches!(
        p.append_as_leader(control, 0, 0),
        Err(ReplicaError::Storage(StorageError::InvalidRecord(_)))
    ));
    p.append_txn_marker(ProducerId(7), ProducerEpoch(0), marker, 0, 0)
        .unwrap();
    let done = p.active_producers()[0];
    assert_eq!(done.current_txn_start_offset, Offset::NONE);
    assert_eq!(done.coordinator_epoch, 5);
    assert_eq!(p.last_stable_offset(), Offset(3));
}

/// `(first offset, last offset)` of each batch of a read, or the read's error.
fn read_at(p: &Partition, offset: i64, source: FetchSource) -> Result<Vec<(i64, i64)>, String> {
    match p.read(Offset(offset), 1 << 20, source, true) {
        PartitionRead::Records { records, .. } => {
            let bytes = match records {
                protocol::record::Records::Memory(b) => b,
                protocol::record::Records::File(f) => {
                    use std::os::unix::fs::FileExt;
                    let mut buf = vec![0u8; f.len as usize];
                    f.file.read_exact_at(&mut buf, f.position).unwrap();
                    Bytes::from(buf)
                }
            };
            Ok(protocol::record::batches(&bytes)
                .map(|b| b.unwrap())
                .map(|b| (b.base_offset(), b.last_offset()))
                .collect())
        }
        other => Err(format!("{other:?}")),
    }
}

const CONSUMER_V11: FetchSource = FetchSource::Consumer {
    isolation: IsolationLevel::ReadUncommitted,
    leader_only: false,
};

/// KIP-392 on a follower: a consumer's Fetch v11+ is served up to the follower's HighWatermark (the
/// leader's, capped by its LogEndOffset) and never past it; between the HW and the LogEndOffset it reads
/// empty, past the LogEndOffset OffsetOutOfRange; a follower's Fetch and a consumer's Fetch before v11
/// still need the leader; a stopped replica serves nobody.
#[test]
fn follower_serves_consumers_up_to_its_high_watermark() {
    let dir = tempfile::tempdir().unwrap();
    let b = partition(dir.path());
    b.apply_partition_state(BrokerId(2), &state2(1, 0), 0)
        .unwrap();
    let mut fetched = epoch_batch(0, 0, 4).to_vec();
    fetched.extend_from_slice(&epoch_batch(4, 0, 6));
    assert!(b
        .append_as_follower(
            BrokerId(1),
            LeaderEpoch(0),
            fetched.into(),
            Offset(4),
            Offset(0),
            0
        )
        .unwrap());
    assert_eq!(
        (b.high_watermark(), b.log_end_offset()),
        (Offset(4), Offset(10))
    );
    assert_eq!(read_at(&b, 0, CONSUMER_V11), Ok(vec![(0, 3)]));
    assert_eq!(
        read_at(&b, 4, CONSUMER_V11),
        Ok(vec![]),
        "past the HW: empty"
    );
    assert_eq!(read_at(&b, 10, CONSUMER_V11), Ok(vec![]));
    assert!(read_at(&b, 11, CONSUMER_V11)
        .unwrap_err()
        .contains("OffsetOutOfRange"));
    let pre_v11 = FetchSource::Consumer {
        isolation: IsolationLevel::ReadUncommitted,
        leader_only: true,
    };
    assert_eq!(read_at(&b, 0, pre_v11), Err("NotLeader".into()));
    assert_eq!(
        read_at(&b, 0, FetchSource::Follower),
        Err("NotLeader".into())
    );
    // The leader's HW moves on: so does what the follower serves.
    assert!(b
        .append_as_follower(
            BrokerId(1),
            LeaderEpoch(0),
            Bytes::new(),
            Offset(10),
            Offset(0),
            0
        )
        .unwrap());
    assert_eq!(read_at(&b, 4, CONSUMER_V11), Ok(vec![(4, 9)]));
    b.stop();
    assert_eq!(read_at(&b, 0, CONSUMER_V11), Err("NotLeader".into()));
}

/// KIP-392 on a follower with `read_committed`: bounded by the follower's own LastStableOffset (an open
/// transaction it replicated holds it at the transaction's first offset, whatever the HW).
#[test]
fn follower_read_committed_stops_at_its_last_stable_offset() {
    let dir = tempfile::tempdir().unwrap();
    let b = partition(dir.path());
    b.apply_partition_state(BrokerId(2), &state2(1, 0), 0)
        .unwrap();
    let mut fetched = epoch_batch(0, 0, 2).to_vec();
    let mut txn = protocol::record::RecordBatchBuilder::new(protocol::record::Compression::None)
        .base_offset(2)
        .partition_leader_epoch(0)
        .producer(7, 0, 0)
        .transactional(true);
    txn.append(0, None, Some(Bytes::from_static(b"t")), vec![]);
    fetched.extend_from_slice(&txn.build().unwrap());
    assert!(b
        .append_as_follower(
            BrokerId(1),
            LeaderEpoch(0),
            fetched.into(),
            Offset(3),
            Offset(0),
            0
        )
        .unwrap());
    assert_eq!(
        (b.high_watermark(), b.last_stable_offset()),
        (Offset(3), Offset(2))
    );
    let committed = FetchSource::Consumer {
        isolation: IsolationLevel::ReadCommitted,
        leader_only: false,
    };
    assert_eq!(read_at(&b, 0, committed), Ok(vec![(0, 1)]));
    assert_eq!(read_at(&b, 0, CONSUMER_V11), Ok(vec![(0, 1), (2, 2)]));
}

/// KIP-392 on the leader: the preferred-read-replica candidates are the ISR followers whose
/// LogEndOffset ≥ the fetch offset ≥ their LogStartOffset; none on a follower.
#[test]
fn read_replica_candidates_hold_the_offset_and_are_in_sync() {
    let dir = tempfile::tempdir().unwrap();
    let a = partition(dir.path());
    let three = PartitionState {
        isr: vec![BrokerId(1), BrokerId(2)],
        replicas: vec![BrokerId(1), BrokerId(2), BrokerId(3)],
        ..state(1, 0)
    };
    a.apply_partition_state(BrokerId(1), &three, 0).unwrap();
    a.append_as_leader(epoch_batch(0, -1, 10), 0, 0).unwrap();
    // Broker 2 (ISR) holds 3..10; broker 3 (not in the ISR) holds 0..10.
    a.follower_fetch(BrokerId(2), LeaderEpoch::NONE, (Offset(10), Offset(3)), 100)
        .unwrap();
    a.follower_fetch(BrokerId(3), LeaderEpoch::NONE, (Offset(10), Offset(0)), 100)
        .unwrap();
    let c = a.read_replica_candidates(Offset(5), 250).unwrap();
    assert_eq!(
        (c.leader, c.leader_log_end_offset),
        (BrokerId(1), Offset(10))
    );
    assert_eq!(c.followers, vec![(BrokerId(2), Offset(10), 150)]);
    assert!(
        a.read_replica_candidates(Offset(2), 250)
            .unwrap()
            .followers
            .is_empty(),
        "below its log start"
    );
    a.follower_fetch(BrokerId(2), LeaderEpoch::NONE, (Offset(6), Offset(3)), 300)
        .unwrap();
    assert!(
        a.read_replica_candidates(Offset(8), 300)
            .unwrap()
            .followers
            .is_empty(),
        "past its LogEndOffset"
    );
    let dir_b = tempfile::tempdir().unwrap();
    let b = partition(dir_b.path());
    b.apply_partition_state(BrokerId(2), &state2(1, 0), 0)
        .unwrap();
    assert_eq!(b.read_replica_candidates(Offset(0), 0), None);
}

/// A partition led by broker 1, its only replica, on a log with `config`.
fn sole_leader(dir: &std::path::Path, config: LogConfig) -> Partition {
    let log = Log::open(dir, config, Uuid::nil(), false, Offset(0), 0).unwrap();
    let p = Partition::new("t", 0, Uuid::nil(), Arc::new(Mutex::new(log)));
    let mut leader = state(1, 0);
    leader.replicas = vec![BrokerId(1)];
    p.apply_partition_state(BrokerId(1), &leader, 0).unwrap();
    p
}

/// `flush.messages`: the append that reaches it is answered only once fsynced (recovery point at the
/// LogEndOffset) and its records reach the HighWatermark only then; the fsync itself runs after the
/// partition's locks are released (`run_flush`).
#[test]
fn an_append_reaching_flush_messages_is_flushed_before_it_returns() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        flush_messages: 2,
        ..LogConfig::default()
    };
    let p = sole_leader(dir.path(), config);

    p.append_as_leader(epoch_batch(0, 0, 1), 0, 0).unwrap();
    let recovery_point = p.log.lock().recovery_point();
    assert_eq!(
        recovery_point,
        Offset(0),
        "one message is below flush.messages"
    );
    assert_eq!(p.high_watermark(), Offset(1));

    p.append_as_leader(epoch_batch(1, 0, 1), 0, 0).unwrap();
    let log = p.log.lock();
    assert_eq!(log.recovery_point(), Offset(2), "flushed before answering");
    assert!(!log.flush_due());
    assert_eq!(log.high_watermark(), Offset(2));
}

/// A topic's `compression.type` is applied before the locks (`recompress_unlocked`), and what is stored
/// is the target codec.
#[test]
fn a_topic_compression_type_recompresses_the_appended_batches() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        compression_type: Some(protocol::record::Compression::Gzip),
        ..LogConfig::default()
    };
    let p = sole_leader(dir.path(), config);
    p.append_as_leader(epoch_batch(0, 0, 3), 0, 0).unwrap();
    let data = p
        .log
        .lock()
        .read(Offset(0), 1 << 20, Offset(3), true)
        .unwrap();
    let bytes = match data.records {
        protocol::record::Records::File(f) => {
            use std::os::unix::fs::FileExt;
            let mut buf = vec![0u8; f.len as usize];
            f.file.read_exact_at(&mut buf, f.position).unwrap();
            Bytes::from(buf)
        }
        protocol::record::Records::Memory(b) => b,
    };
    let batch = protocol::record::batches(&bytes).next().unwrap().unwrap();
    assert_eq!(
        batch.header().compression().unwrap(),
        protocol::record::Compression::Gzip
    );
    assert_eq!(batch.records_count(), 3);
}
