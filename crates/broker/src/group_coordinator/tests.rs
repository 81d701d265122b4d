//! Unit tests of the group coordinator runtime.

use super::*;
use bytes::Bytes;
use coordinator::{JoinProtocol, OffsetCommitPartition, OffsetCommitRequest};
use protocol::error::ErrorCode;

use crate::dynamic_config::{ConfigLevel, DynamicBrokerConfig};
use crate::topic_admin::LocalTopicAdmin;

/// Runs a coordinator call to completion from a synchronous test (no tokio runtime: partition loads then
/// run inline).
pub(super) fn block<F: std::future::Future>(f: F) -> F::Output {
    futures::executor::block_on(f)
}

/// A service over `dir` with the topics it finds there opened (as `Server::start` does).
pub(super) fn open(dir: &std::path::Path) -> (Arc<GroupCoordinatorService>, Arc<ReplicaManager>) {
    let (svc, rm, _) = open_with_dynamic(dir);
    (svc, rm)
}

/// [`open`], also returning the broker's dynamic configs (shared with the service's topic manager).
fn open_with_dynamic(
    dir: &std::path::Path,
) -> (
    Arc<GroupCoordinatorService>,
    Arc<ReplicaManager>,
    Arc<DynamicBrokerConfig>,
) {
    let pairs: Vec<(String, String)> = [
        ("log.dirs", dir.to_str().unwrap()),
        ("offsets.topic.num.partitions", "3"),
        ("group.initial.rebalance.delay.ms", "0"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let config = BrokerConfig::from_pairs(&pairs).unwrap();
    let metadata = Arc::new(MetadataStore::open(dir, config.node_id.get()).unwrap());
    // The topic the tests commit offsets for (offsets of topics that do not exist are dropped at load).
    if metadata.topic("t").is_none() {
        let t = crate::metadata::TopicMetadata {
            topic_id: uuid::Uuid::new_v4(),
            partitions: 1,
            configs: Default::default(),
        };
        assert!(metadata.create_topic("t", t).unwrap());
    }
    let md = metadata.clone();
    let cfg = config.clone();
    let lm = Arc::new(
        storage::LogManager::open(
            dir,
            move |t| {
                let o = md.topic(t).map(|t| t.configs).unwrap_or_default();
                crate::topic_config::log_config(&cfg, &o)
            },
            std::sync::Arc::new(types::SystemClock),
        )
        .unwrap(),
    );
    let rm = Arc::new(ReplicaManager::new(
        lm,
        config.node_id,
        Arc::new(replica::cluster_link::StandaloneLink),
        30_000,
    ));
    let dynamic = Arc::new(DynamicBrokerConfig::in_memory(config.clone()));
    let cache = Arc::new(crate::metadata_cache::LocalMetadataCache::new(
        &config,
        metadata.clone(),
    ));
    let admin = Arc::new(LocalTopicAdmin::new(
        metadata.clone(),
        rm.clone(),
        dynamic.clone(),
        cache,
        Default::default(),
    ));
    let topics = Arc::new(TopicManager::new(
        metadata.clone(),
        rm.clone(),
        dynamic.clone(),
        admin,
    ));
    topics.load_all().unwrap();
    let svc = GroupCoordinatorService::new(config, metadata, rm.clone(), topics, false);
    (Arc::new(svc), rm, dynamic)
}

/// B2: the coordinator resolves `__consumer_offsets` settings through the broker's dynamic configs (it had
/// a topic manager of its own with static configs only, so a dynamic `min.insync.replicas` never applied
/// to commits).
#[test]
fn commit_min_isr_follows_dynamic_broker_configs() {
    let dir = tempfile::tempdir().unwrap();
    let (svc, _rm, dynamic) = open_with_dynamic(dir.path());
    svc.load();
    block(svc.ensure_offsets_topic()).unwrap();
    assert_eq!(svc.replication_bounds().0, 1);
    dynamic
        .set(
            ConfigLevel::ClusterDefault,
            vec![("min.insync.replicas".into(), "2".into())],
            false,
        )
        .unwrap();
    assert_eq!(svc.replication_bounds().0, 2);
}

fn commit(group: &str, offset: i64) -> OffsetCommitRequest {
    OffsetCommitRequest {
        api_version: 8,
        group_id: group.into(),
        generation_id: -1,
        member_id: String::new(),
        group_instance_id: None,
        retention_time_ms: -1,
        topics: vec![(
            "t".into(),
            vec![OffsetCommitPartition {
                partition_index: 0,
                committed_offset: types::Offset(offset),
                committed_leader_epoch: types::LeaderEpoch(3),
                committed_metadata: Some("meta".into()),
            }],
        )],
    }
}

#[test]
fn requests_wait_for_loading_and_commits_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (svc, rm) = open(dir.path());
        assert_eq!(
            svc.read(|c| c.list_groups(&[])).unwrap_err(),
            CoordinatorError::LoadInProgress
        );
        assert_eq!(svc.load(), 0);
        assert!(
            svc.metadata.topic(OFFSETS_TOPIC).is_none(),
            "created lazily"
        );
        let (r, persisted) =
            block(svc.with(|c, now| c.commit_offsets(now, &commit("g", 41)))).unwrap();
        assert!(persisted);
        assert_eq!(r, vec![("t".to_string(), vec![(0, ErrorCode::NONE)])]);
        let (_, persisted) =
            block(svc.with(|c, now| c.commit_offsets(now, &commit("g", 42)))).unwrap();
        assert!(persisted);
        assert_eq!(svc.metadata.topic(OFFSETS_TOPIC).unwrap().partitions, 3);
        // A record no coordinator wrote (key version 99) is skipped at load.
        let p = rm.partition(OFFSETS_TOPIC, partition_for("g", 3)).unwrap();
        let mut b = RecordBatchBuilder::new(Compression::None);
        b.append(0, Some(Bytes::from_static(&[0, 99, 1])), None, Vec::new());
        rm.append(&p, b.build().unwrap()).unwrap();
        rm.shutdown().unwrap();
    }
    let (svc, _rm) = open(dir.path());
    assert_eq!(svc.load(), 2);
    let f = svc.read(|c| c.fetch_offsets("g", None)).unwrap();
    assert_eq!(f.topics.len(), 1);
    let p = &f.topics[0].1[0];
    assert_eq!(
        (
            p.committed_offset,
            p.committed_leader_epoch,
            p.metadata.as_str()
        ),
        (types::Offset(42), types::LeaderEpoch(3), "meta")
    );
}

/// A consumer-protocol JoinGroup v5 for `group` with one "range" protocol.
fn join_request(group: &str, member: &str) -> coordinator::JoinGroupRequest {
    coordinator::JoinGroupRequest {
        api_version: 5,
        group_id: group.into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 10_000,
        member_id: member.into(),
        group_instance_id: None,
        protocol_type: "consumer".into(),
        protocols: vec![JoinProtocol {
            name: "range".into(),
            metadata: Bytes::from_static(b"m"),
        }],
        client_id: "c".into(),
        client_host: "/127.0.0.1".into(),
    }
}

#[tokio::test(flavor = "current_thread")]
async fn join_and_sync_park_until_answered() {
    let dir = tempfile::tempdir().unwrap();
    let (svc, _rm) = open(dir.path());
    svc.load();
    let join = |member: &str| join_request("g", member);
    let first = svc.join_group(join("")).await.unwrap();
    assert_eq!(first.error_code, ErrorCode::MEMBER_ID_REQUIRED);
    let (_shutdown, shutdown_rx) = watch::channel(false);
    let timers = tokio::spawn(svc.clone().run_timers(shutdown_rx));
    let bounded = Duration::from_secs(10);
    let joined = tokio::time::timeout(bounded, svc.join_group(join(&first.member_id)))
        .await
        .expect("the join is answered once the initial rebalance delay (0 ms) passes")
        .unwrap();
    assert_eq!(
        (joined.error_code, joined.generation_id),
        (ErrorCode::NONE, 1)
    );
    assert_eq!(joined.leader, first.member_id);
    let synced = tokio::time::timeout(
        bounded,
        svc.sync_group(SyncGroupRequest {
            group_id: "g".into(),
            generation_id: 1,
            member_id: first.member_id.clone(),
            group_instance_id: None,
            protocol_type: None,
            protocol_name: None,
            assignments: vec![(first.member_id.clone(), Bytes::from_static(b"a"))],
        }),
    )
    .await
    .expect("the leader's sync is answered at once")
    .unwrap();
    assert_eq!(
        (synced.error_code, &synced.assignment[..]),
        (ErrorCode::NONE, &b"a"[..])
    );
    timers.abort();
}

/// Group ids whose `__consumer_offsets` partition (of 3) is 0 and 1.
fn groups_on_0_and_1() -> (String, String) {
    let find = |p: i32| {
        (0..)
            .map(|i| format!("group-{i}"))
            .find(|g| partition_for(g, 3) == p)
            .unwrap()
    };
    (find(0), find(1))
}

/// A cluster-mode service whose `__consumer_offsets` (3 partitions) exists and of which it leads nothing.
fn open_cluster_mode(dir: &std::path::Path) -> (Arc<GroupCoordinatorService>, Arc<ReplicaManager>) {
    let (svc, rm) = open(dir);
    let svc = Arc::new(
        Arc::try_unwrap(svc)
            .expect("sole owner")
            .with_cluster_mode(),
    );
    block(svc.ensure_offsets_topic()).unwrap();
    assert_eq!(svc.load(), 0, "cluster mode loads partitions on leadership");
    (svc, rm)
}

fn committed(svc: &GroupCoordinatorService, group: &str) -> Result<i64, CoordinatorError> {
    svc.read_group(group, |c| {
        c.fetch_offsets(group, Some(&[("t".to_string(), vec![0])]))
            .topics[0]
            .1[0]
            .committed_offset
            .0
    })
}

#[test]
fn cluster_mode_coordinates_only_led_partitions_and_reloads_on_leadership() {
    let dir = tempfile::tempdir().unwrap();
    let (svc, _rm) = open_cluster_mode(dir.path());
    let (a, b) = groups_on_0_and_1();
    // Nothing led yet: every group is coordinated elsewhere.
    assert_eq!(
        svc.check_coordinator(&a),
        Err(CoordinatorError::NotCoordinator)
    );
    assert_eq!(
        block(svc.with_group(&a, |c, now| c.commit_offsets(now, &commit(&a, 1)))).unwrap_err(),
        CoordinatorError::NotCoordinator
    );
    assert_eq!(committed(&svc, &a), Err(CoordinatorError::NotCoordinator));

    // Leader of partitions 0 and 1 (outside a runtime the replay runs inline).
    svc.on_partition_leadership(0, true);
    svc.on_partition_leadership(1, true);
    assert_eq!(svc.coordinated_partitions(), vec![(0, true), (1, true)]);
    assert_eq!(svc.check_coordinator(&a), Ok(()));
    for (g, offset) in [(&a, 10), (&b, 20)] {
        let (r, written) =
            block(svc.with_group(g, |c, now| c.commit_offsets(now, &commit(g, offset)))).unwrap();
        assert_eq!(
            (r, written),
            (vec![("t".to_string(), vec![(0, ErrorCode::NONE)])], Ok(()))
        );
    }
    let (_, written) =
        block(svc.with_group(&a, |c, now| c.commit_offsets(now, &commit(&a, 11)))).unwrap();
    assert_eq!(written, Ok(()));

    // Losing partition 0: its group is gone and coordinated elsewhere; partition 1 is untouched.
    svc.on_partition_leadership(0, false);
    assert_eq!(svc.coordinated_partitions(), vec![(1, true)]);
    assert_eq!(
        svc.check_coordinator(&a),
        Err(CoordinatorError::NotCoordinator)
    );
    assert_eq!(committed(&svc, &a), Err(CoordinatorError::NotCoordinator));
    assert!(!svc.read(|c| c.has_group(&a)).unwrap());
    let listed: Vec<String> = svc
        .read(|c| c.list_groups(&[]))
        .unwrap()
        .into_iter()
        .map(|g| g.group_id)
        .collect();
    assert_eq!(listed, vec![b.clone()]);
    assert_eq!(committed(&svc, &b), Ok(20));
    // Losing it again is a no-op.
    svc.on_partition_leadership(0, false);

    // Regaining it replays the partition's log.
    svc.on_partition_leadership(0, true);
    assert_eq!(committed(&svc, &a), Ok(11));
    assert_eq!(committed(&svc, &b), Ok(20));
    // A second "became leader" for a partition already led changes nothing.
    svc.on_partition_leadership(0, true);
    assert_eq!(committed(&svc, &a), Ok(11));
}

#[test]
fn cluster_mode_loading_state_superseded_loads_and_lost_log() {
    let dir = tempfile::tempdir().unwrap();
    let (svc, rm) = open_cluster_mode(dir.path());
    let (a, b) = groups_on_0_and_1();
    svc.on_partition_leadership(0, true);
    let (_, written) =
        block(svc.with_group(&a, |c, now| c.commit_offsets(now, &commit(&a, 5)))).unwrap();
    assert_eq!(written, Ok(()));
    svc.on_partition_leadership(0, false);

    // While a partition loads its groups get COORDINATOR_LOAD_IN_PROGRESS; a load that was superseded
    // (leadership lost and regained meanwhile) is discarded.
    svc.partitions
        .lock()
        .insert(0, Coordination::Loading(1_000));
    assert_eq!(
        svc.check_coordinator(&a),
        Err(CoordinatorError::LoadInProgress)
    );
    assert_eq!(
        block(svc.with_group(&a, |c, now| c.heartbeat(now, &a, "m", None, 1))).unwrap_err(),
        CoordinatorError::LoadInProgress
    );
    svc.load_partition(0, 999);
    assert_eq!(
        svc.check_coordinator(&a),
        Err(CoordinatorError::LoadInProgress)
    );
    assert!(!svc.read(|c| c.has_group(&a)).unwrap());
    svc.load_partition(0, 1_000);
    assert_eq!(committed(&svc, &a), Ok(5));

    // The log of a led partition went away (leadership moved before the resignation call arrived): the
    // write fails with NOT_COORDINATOR.
    svc.on_partition_leadership(1, true);
    rm.stop_replica(OFFSETS_TOPIC, 1, false).unwrap();
    let (r, written) =
        block(svc.with_group(&b, |c, now| c.commit_offsets(now, &commit(&b, 1)))).unwrap();
    assert_eq!(r, vec![("t".to_string(), vec![(0, ErrorCode::NONE)])]);
    assert_eq!(written, Err(CoordinatorError::NotCoordinator));
}

#[test]
fn cluster_mode_unload_answers_parked_joins_not_coordinator() {
    let dir = tempfile::tempdir().unwrap();
    let (svc, _rm) = open_cluster_mode(dir.path());
    let (a, b) = groups_on_0_and_1();
    svc.on_partition_leadership(0, true);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let join = |member: &str| join_request(&a, member);
        let first = svc.join_group(join("")).await.unwrap();
        assert_eq!(first.error_code, ErrorCode::MEMBER_ID_REQUIRED);
        // No timer task runs: the rejoin stays parked in the initial rebalance.
        let parked = tokio::spawn({
            let svc = svc.clone();
            let req = join(&first.member_id);
            async move { svc.join_group(req).await }
        });
        while svc.state.lock().pending.is_empty() {
            tokio::task::yield_now().await;
        }
        svc.on_partition_leadership(0, false);
        let r = tokio::time::timeout(Duration::from_secs(10), parked)
            .await
            .expect("answered at once")
            .unwrap();
        // The coordinator's unload answers it, or the runtime does when it drops the parked request.
        let code = match r {
            Ok(r) => r.error_code,
            Err(CoordinatorError::NotCoordinator) => ErrorCode::NOT_COORDINATOR,
            Err(e) => panic!("unexpected {e}"),
        };
        assert_eq!(code, ErrorCode::NOT_COORDINATOR);
        assert!(svc.state.lock().pending.is_empty());
        assert_eq!(
            svc.with_group_replicated(&a, |c, now| c.commit_offsets(now, &commit(&a, 1)))
                .await
                .unwrap_err(),
            CoordinatorError::NotCoordinator
        );
        // acks=all commit on a partition whose ISR is this broker alone: answered at once.
        // From a thread outside the runtime the load runs inline.
        std::thread::spawn({
            let svc = svc.clone();
            move || svc.on_partition_leadership(1, true)
        })
        .join()
        .unwrap();
        assert_eq!(svc.check_coordinator(&b), Ok(()));
        let (r, written) = tokio::time::timeout(
            Duration::from_secs(10),
            svc.with_group_replicated(&b, |c, now| c.commit_offsets(now, &commit(&b, 3))),
        )
        .await
        .expect("the HighWatermark is the LogEndOffset with ISR = [self]")
        .unwrap();
        assert_eq!(
            (r, written),
            (vec![("t".to_string(), vec![(0, ErrorCode::NONE)])], Ok(()))
        );
        assert_eq!(committed(&svc, &b), Ok(3));
        assert_eq!(
            svc.join_group(join(&first.member_id)).await.unwrap_err(),
            CoordinatorError::NotCoordinator
        );
    });
}

/// Offsets replayed for a topic that no longer exists (deleted while this broker did not coordinate the group,
/// or a crash before the tombstones) are deleted at load, so a re-created topic is read from its start.
#[test]
fn offsets_of_a_topic_deleted_meanwhile_are_dropped_at_load() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (svc, rm) = open(dir.path());
        svc.load();
        let (_, written) =
            block(svc.with_group("g", |c, now| c.commit_offsets(now, &commit("g", 41)))).unwrap();
        assert_eq!(written, Ok(()));
        assert_eq!(committed(&svc, "g"), Ok(41));
        // The topic goes from the registry, as a DeleteTopics cut short before the tombstones leaves it.
        assert!(svc.metadata.delete_topic("t").unwrap().is_some());
        rm.shutdown().unwrap();
    }
    let (svc, _rm) = open(dir.path());
    // `open` creates "t" again: the offsets replayed are of the old topic's name, and it exists again — so
    // drop it before loading to see the deletion.
    assert!(svc.metadata.delete_topic("t").unwrap().is_some());
    svc.load();
    assert_eq!(committed(&svc, "g"), Ok(-1));
}

/// The coordinator's time never goes backwards and never stands still: after the wall clock steps back
/// (NTP, an operator), it goes on at the wall clock's pace from where it was. Before, it stayed at the
/// pre-step maximum until the wall clock caught up, so for as long as the step (up to minutes) no session
/// expired and no rebalance timed out (found by the group simulation: groups stuck in PreparingRebalance).
#[test]
fn coordinator_time_goes_on_after_the_wall_clock_steps_back() {
    let clock = types::ManualClock::new(1_000_000);
    let mut st = State {
        coordinator: GroupCoordinator::new(coordinator::GroupConfig::default()),
        pending: HashMap::new(),
        next_request: 1,
        last_now: 0,
        last_wall: None,
        last_written: HashMap::new(),
        completions: HashMap::new(),
    };
    assert_eq!(st.now(&clock), 1_000_000);
    clock.advance(-600_000);
    assert_eq!(st.now(&clock), 1_000_000, "never backwards");
    clock.advance(3_000);
    assert_eq!(
        st.now(&clock),
        1_003_000,
        "on at the wall clock's pace, not frozen for the 10 minutes of the step"
    );
    clock.advance(60_000);
    assert_eq!(st.now(&clock), 1_063_000, "forward steps are taken");
}

/// Read your uncommitted writes (Kafka's `CoordinatorRuntime` defers every answer until the HighWatermark
/// passes the last written offset): a follower's SyncGroup arriving after the leader's SyncGroup wrote the
/// assignment is answered only once that record is replicated. Answered from memory at once, a coordinator
/// failover losing the record made the next coordinator reissue the generation to another membership (two
/// members told the same partitions in one generation; group simulation seeds 243, 587, ...).
#[test]
fn sync_answers_wait_for_the_group_record_they_read() {
    let dir = tempfile::tempdir().unwrap();
    let (svc, rm) = open_cluster_mode(dir.path());
    let (a, _) = groups_on_0_and_1();
    // Leader of __consumer_offsets-0 with a follower (broker 99) in the ISR: the HighWatermark moves
    // only when the follower fetches.
    let me = rm.local_broker_id();
    let follower = types::BrokerId(99);
    let p0 = rm.partition(OFFSETS_TOPIC, 0).unwrap();
    let state = replica::replica_manager::PartitionState {
        topic_id: p0.topic_id(),
        leader: me,
        leader_epoch: types::LeaderEpoch(1),
        partition_epoch: types::PartitionEpoch(1),
        isr: vec![me, follower],
        replicas: vec![me, follower],
    };
    let config = svc
        .topics
        .log_config(&svc.metadata.topic(OFFSETS_TOPIC).unwrap().configs);
    rm.apply_partition_state(OFFSETS_TOPIC, 0, config, state)
        .unwrap();
    // The follower fetches up to the leader's LogEndOffset while `follow` is set.
    let follow = Arc::new(AtomicBool::new(true));
    let fetch_to_end = {
        let (rm, p0, follow) = (rm.clone(), p0.clone(), follow.clone());
        move || {
            if follow.load(Ordering::Acquire) {
                rm.follower_fetch(
                    &p0,
                    follower,
                    types::LeaderEpoch(1),
                    (p0.log_end_offset(), types::Offset(0)),
                )
                .unwrap();
            }
        }
    };
    fetch_to_end();
    svc.on_partition_leadership(0, true);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (_shutdown, shutdown_rx) = watch::channel(false);
        let _timers = tokio::spawn(svc.clone().run_timers(shutdown_rx));
        let _follower = tokio::spawn(async move {
            loop {
                fetch_to_end();
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        });
        let bounded = Duration::from_secs(10);
        let mut ids = Vec::new();
        for _ in 0..2 {
            let r = svc.join_group(join_request(&a, "")).await.unwrap();
            assert_eq!(r.error_code, ErrorCode::MEMBER_ID_REQUIRED);
            ids.push(r.member_id);
        }
        let join = |id: &str| {
            let (svc, req) = (svc.clone(), join_request(&a, id));
            tokio::spawn(async move { svc.join_group(req).await })
        };
        let answer = |task: tokio::task::JoinHandle<Result<JoinResult, CoordinatorError>>| async {
            let r = tokio::time::timeout(bounded, task)
                .await
                .expect("JoinGroup answered")
                .unwrap()
                .unwrap();
            assert_eq!(r.error_code, ErrorCode::NONE);
            r
        };
        // The first member forms generation 1 alone; the second one's join starts generation 2, which
        // completes when the first rejoins.
        assert_eq!(answer(join(&ids[0])).await.generation_id, 1);
        let second = join(&ids[1]);
        while svc
            .read_group(&a, |c| c.describe_group(&a).group_state)
            .unwrap()
            != "PreparingRebalance"
        {
            tokio::task::yield_now().await;
        }
        let joined = [answer(join(&ids[0])).await, answer(second).await];
        assert_eq!([joined[0].generation_id, joined[1].generation_id], [2, 2]);
        let leader = joined[0].leader.clone();
        let other = ids.iter().find(|id| **id != leader).unwrap().clone();
        let sync = |member: &str, assignments: Vec<(String, Bytes)>| {
            let svc = svc.clone();
            let req = SyncGroupRequest {
                group_id: a.clone(),
                generation_id: 2,
                member_id: member.to_string(),
                group_instance_id: None,
                protocol_type: None,
                protocol_name: None,
                assignments,
            };
            tokio::spawn(async move { svc.sync_group(req).await })
        };
        let assignments = vec![
            (leader.clone(), Bytes::from_static(b"0")),
            (other.clone(), Bytes::from_static(b"1")),
        ];
        follow.store(false, Ordering::Release);
        let leader_sync = sync(&leader, assignments);
        while svc
            .read_group(&a, |c| c.describe_group(&a).group_state)
            .unwrap()
            != "Stable"
        {
            tokio::task::yield_now().await;
        }
        // The group record is in the leader's log only; the follower syncs now.
        let follower_sync = sync(&other, Vec::new());
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
        assert!(
            !leader_sync.is_finished(),
            "the leader's answer waits for its record"
        );
        assert!(
            !follower_sync.is_finished(),
            "the follower's answer read the unreplicated record: it waits for it too"
        );
        follow.store(true, Ordering::Release);
        for (task, want) in [(leader_sync, &b"0"[..]), (follower_sync, &b"1"[..])] {
            let r = tokio::time::timeout(bounded, task)
                .await
                .expect("answered once replicated")
                .unwrap()
                .unwrap();
            assert_eq!((r.error_code, &r.assignment[..]), (ErrorCode::NONE, want));
        }
    });
}
