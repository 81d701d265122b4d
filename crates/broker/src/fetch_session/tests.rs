use super::cache::Incremental;
use super::*;

fn key(topic: &str, partition: i32) -> PartitionKey {
    PartitionKey {
        topic: TopicKey::Name(topic.to_string()),
        partition,
    }
}

fn fetch(offset: i64) -> PartitionFetch {
    PartitionFetch {
        fetch_offset: offset,
        log_start_offset: -1,
        max_bytes: 1 << 20,
        current_leader_epoch: -1,
        last_fetched_epoch: -1,
    }
}

fn parts(n: i32) -> Vec<CachedPartition> {
    (0..n)
        .map(|p| CachedPartition::new(key("t", p), fetch(0)))
        .collect()
}

fn quiet(hw: i64) -> PartitionAnswer {
    PartitionAnswer {
        state: PartitionState {
            high_watermark: hw,
            last_stable_offset: hw,
            log_start_offset: 0,
        },
        has_records: false,
        error: false,
        urgent: false,
    }
}

fn cache(slots: usize) -> FetchSessionCache {
    let config = FetchSessionConfig {
        max_slots: slots,
        ..FetchSessionConfig::default()
    };
    FetchSessionCache::new(config, 7)
}

/// Reads `id` at `epoch` with no changes; returns the new epoch and partition keys in session order.
fn read(c: &mut FetchSessionCache, id: i32, epoch: i32) -> (i32, Vec<PartitionKey>) {
    match c.update(1, id, epoch, false, vec![], &[]).unwrap() {
        Incremental::Read { epoch, partitions } => {
            (epoch, partitions.into_iter().map(|p| p.key).collect())
        }
        Incremental::Closed => panic!("session closed"),
    }
}

#[test]
fn classify_follows_kafka_fetch_metadata() {
    use SessionRequest::*;
    assert_eq!(SessionRequest::classify(0, -1), Sessionless { close: None });
    assert_eq!(SessionRequest::classify(0, 0), Full { close: None });
    assert_eq!(
        SessionRequest::classify(5, -1),
        Sessionless { close: Some(5) }
    );
    assert_eq!(SessionRequest::classify(5, 0), Full { close: Some(5) });
    let inc = |session_id, epoch| Incremental { session_id, epoch };
    assert_eq!(SessionRequest::classify(5, 3), inc(5, 3));
    // Neither full epoch: incremental, and then refused by the cache (0 is never a session).
    assert_eq!(SessionRequest::classify(0, 4), inc(0, 4));
    assert_eq!(SessionRequest::classify(5, -7), inc(5, -7));
}

#[test]
fn next_epoch_wraps_to_one() {
    assert_eq!(next_epoch(0), 1);
    assert_eq!(next_epoch(41), 42);
    assert_eq!(next_epoch(i32::MAX), 1);
    assert_eq!(next_epoch(-1), -1);
}

#[test]
fn created_session_starts_at_epoch_one_with_request_order() {
    let mut c = cache(10);
    let mut ps = parts(3);
    ps.push(CachedPartition::new(key("t", 0), fetch(9))); // repeated: first place, last parameters
    let id = c.create(0, false, false, ps).unwrap();
    assert!(id > 0);
    let s = c.get(id).unwrap();
    assert_eq!((s.epoch(), s.len()), (1, 3));
    assert_eq!(s.partitions()[0].fetch.fetch_offset, 9);
    assert_eq!((c.len(), c.num_partitions()), (1, 3));
}

#[test]
fn created_session_keeps_what_the_full_fetch_answered() {
    let mut c = cache(10);
    let mut answered = parts(2);
    assert!(answered[0].must_respond(&quiet(5)));
    assert!(answered[1].must_respond(&quiet(0)));
    let id = c.create(0, false, false, answered).unwrap();
    let (epoch, _) = read(&mut c, id, 1);
    let sent = c.respond(id, epoch, &[quiet(5), quiet(1)]).unwrap();
    assert_eq!(sent, vec![false, true]);
}

#[test]
fn unknown_session_wrong_epoch_and_topic_id_change_are_refused() {
    let mut c = cache(10);
    let id = c.create(0, false, false, parts(2)).unwrap();
    let err = c.update(1, id + 1, 1, false, vec![], &[]).unwrap_err();
    assert_eq!(err, FetchSessionError::NotFound { session_id: id + 1 });
    let err = c.update(1, id, 2, false, vec![], &[]).unwrap_err();
    assert!(matches!(
        err,
        FetchSessionError::InvalidEpoch {
            expected: 1,
            got: 2,
            ..
        }
    ));
    let err = c.update(1, id, 1, true, vec![], &[]).unwrap_err();
    assert!(matches!(
        err,
        FetchSessionError::TopicIdUsageChanged {
            uses_topic_ids: false,
            ..
        }
    ));
    // Refusals leave the session as it was.
    assert_eq!(read(&mut c, id, 1).0, 2);
    assert_eq!(read(&mut c, id, 2).0, 3);
    let err = c.update(1, id, 2, false, vec![], &[]).unwrap_err();
    assert!(matches!(
        err,
        FetchSessionError::InvalidEpoch {
            expected: 3,
            got: 2,
            ..
        }
    ));
}

#[test]
fn removed_session_is_not_found() {
    let mut c = cache(10);
    let id = c.create(0, false, false, parts(2)).unwrap();
    assert!(c.remove(id));
    assert!(!c.remove(id));
    assert_eq!((c.len(), c.num_partitions()), (0, 0));
    let err = c.update(1, id, 1, false, vec![], &[]).unwrap_err();
    assert_eq!(err, FetchSessionError::NotFound { session_id: id });
}

#[test]
fn updates_add_at_the_end_and_forgotten_remove() {
    let mut c = cache(10);
    let id = c.create(0, false, false, parts(3)).unwrap();
    let updates = vec![(key("u", 0), fetch(5)), (key("t", 1), fetch(7))];
    let forgotten = [key("t", 0), key("nope", 3)];
    let Incremental::Read { epoch, partitions } =
        c.update(1, id, 1, false, updates, &forgotten).unwrap()
    else {
        panic!("closed")
    };
    assert_eq!(epoch, 2);
    let keys: Vec<_> = partitions.iter().map(|p| p.key.clone()).collect();
    assert_eq!(keys, vec![key("t", 1), key("t", 2), key("u", 0)]);
    assert_eq!(partitions[0].fetch.fetch_offset, 7);
    assert_eq!(c.num_partitions(), 3);
    // Forgetting everything closes the session.
    let all: Vec<_> = keys.clone();
    assert_eq!(
        c.update(2, id, 2, false, vec![], &all).unwrap(),
        Incremental::Closed
    );
    assert!(c.get(id).is_none());
    assert_eq!(c.num_partitions(), 0);
}

#[test]
fn only_changed_partitions_are_answered() {
    let mut c = cache(10);
    let id = c.create(0, false, false, parts(4)).unwrap();
    // First round: nothing told yet, every partition goes out.
    let (epoch, _) = read(&mut c, id, 1);
    assert_eq!(
        c.respond(id, epoch, &[quiet(10); 4]).unwrap(),
        vec![true; 4]
    );
    // Same offsets: nothing goes out.
    let (epoch, _) = read(&mut c, id, epoch);
    assert_eq!(
        c.respond(id, epoch, &[quiet(10); 4]).unwrap(),
        vec![false; 4]
    );
    // A new HighWatermark, an LSO change, an error, a preferred replica.
    let (epoch, _) = read(&mut c, id, epoch);
    let mut lso = quiet(10);
    lso.state.last_stable_offset = 8;
    let mut err = quiet(10);
    err.error = true;
    let mut urgent = quiet(10);
    urgent.urgent = true;
    let sent = c
        .respond(id, epoch, &[quiet(11), lso, err, urgent])
        .unwrap();
    assert_eq!(sent, vec![true; 4]);
    // The error cleared: the partition is answered again (its HighWatermark was forgotten).
    let (epoch, _) = read(&mut c, id, epoch);
    let sent = c
        .respond(id, epoch, &[quiet(11), lso, quiet(10), quiet(10)])
        .unwrap();
    assert_eq!(sent, vec![false, false, true, false]);
}

#[test]
fn partitions_with_records_rotate_to_the_end() {
    let mut c = cache(10);
    let id = c.create(0, false, false, parts(4)).unwrap();
    let (epoch, _) = read(&mut c, id, 1);
    let mut data = quiet(10);
    data.has_records = true;
    let sent = c
        .respond(id, epoch, &[data, quiet(10), data, quiet(10)])
        .unwrap();
    assert_eq!(sent, vec![true; 4]);
    let (_, order) = read(&mut c, id, epoch);
    assert_eq!(
        order,
        vec![key("t", 1), key("t", 3), key("t", 0), key("t", 2)]
    );
}

#[test]
fn respond_after_a_concurrent_request_is_refused() {
    let mut c = cache(10);
    let id = c.create(0, false, false, parts(1)).unwrap();
    let (first, _) = read(&mut c, id, 1);
    let (second, _) = read(&mut c, id, first);
    let err = c.respond(id, first, &[quiet(1)]).unwrap_err();
    assert!(matches!(err, FetchSessionError::InvalidEpoch { .. }));
    assert_eq!(c.respond(id, second, &[quiet(1)]).unwrap(), vec![true]);
    c.remove(id);
    let err = c.respond(id, second, &[quiet(1)]).unwrap_err();
    assert!(matches!(err, FetchSessionError::NotFound { .. }));
}

#[test]
fn epoch_wraps_after_i32_max() {
    let mut c = cache(10);
    let id = c.create(0, false, false, parts(1)).unwrap();
    c.sessions_mut_for_test(id).epoch = i32::MAX;
    assert_eq!(read(&mut c, id, i32::MAX).0, 1);
    assert_eq!(read(&mut c, id, 1).0, 2);
}

#[test]
fn no_slots_means_no_sessions() {
    let mut c = cache(0);
    assert_eq!(c.create(0, true, false, parts(3)), None);
}

#[test]
fn session_over_the_partition_bound_is_closed() {
    let config = FetchSessionConfig {
        max_partitions: 3,
        ..FetchSessionConfig::default()
    };
    let mut c = FetchSessionCache::new(config, 1);
    assert_eq!(c.create(0, false, false, parts(4)), None);
    let id = c.create(0, false, false, parts(3)).unwrap();
    let err = c
        .update(1, id, 1, false, vec![(key("t", 9), fetch(0))], &[])
        .unwrap_err();
    assert!(matches!(
        err,
        FetchSessionError::TooManyPartitions {
            partitions: 4,
            max: 3,
            ..
        }
    ));
    assert!(c.get(id).is_none());
    assert_eq!(c.num_partitions(), 0);
}

#[test]
fn stale_session_is_evicted_first() {
    let mut c = cache(2);
    let a = c.create(0, true, false, parts(100)).unwrap();
    let b = c.create(50_000, true, false, parts(100)).unwrap();
    // Before a is idle 120 s, a small consumer session cannot displace followers' sessions.
    assert_eq!(c.create(120_000, false, false, parts(1)), None);
    let n = c.create(120_001, false, false, parts(1)).unwrap();
    assert!(c.get(a).is_none() && c.get(b).is_some() && c.get(n).is_some());
    assert_eq!(c.evictions(), 1);
}

#[test]
fn privileged_newcomer_evicts_a_consumer_session() {
    let mut c = cache(2);
    let small = c.create(0, false, false, parts(1)).unwrap();
    let big = c.create(0, false, false, parts(50)).unwrap();
    // A consumer cannot evict young sessions.
    assert_eq!(c.create(10, false, false, parts(500)), None);
    // A follower evicts the least valuable consumer session.
    let f = c.create(10, true, false, parts(1)).unwrap();
    assert!(c.get(small).is_none() && c.get(big).is_some() && c.get(f).is_some());
    // Followers' young sessions are safe from another follower.
    let other = c.create(20, true, false, parts(1));
    assert!(other.is_some(), "the consumer's session is still evictable");
    assert!(c.get(big).is_none());
    assert_eq!(c.create(30, true, false, parts(1000)), None);
    assert_eq!(c.evictions(), 2);
}

#[test]
fn larger_newcomer_evicts_smaller_old_session() {
    let mut c = cache(1);
    let old = c.create(0, false, false, parts(10)).unwrap();
    // Used at 121 s, 1 ms past the eviction age since creation: evictable by all.
    read(&mut c, old, 1);
    c.touch_for_test(old, 121_000);
    // Same size: not more valuable (newcomer id 0 sorts first), refused.
    assert_eq!(c.create(130_000, false, false, parts(10)), None);
    let new = c.create(130_000, false, false, parts(11)).unwrap();
    assert!(c.get(old).is_none() && c.get(new).is_some());
    assert_eq!((c.len(), c.num_partitions(), c.evictions()), (1, 11, 1));
}

#[test]
fn session_ids_are_positive_and_unique() {
    let mut c = cache(500);
    let mut ids = std::collections::HashSet::new();
    for i in 0..500 {
        let id = c.create(i, false, false, parts(1)).unwrap();
        assert!(id > 0);
        assert!(ids.insert(id));
    }
    assert_eq!((c.len(), c.num_partitions()), (500, 500));
}
