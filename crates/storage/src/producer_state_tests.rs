//! Tests of [`super`]: the producer-state snapshot format and its load rules.

use super::*;

#[test]
fn snapshot_round_trip_and_corruption() {
    let d = tempfile::tempdir().unwrap();
    let mut m = ProducerStateManager::new(d.path(), 1000).unwrap();
    for pid in 0..3i64 {
        let mut e = ProducerStateEntry::new(pid);
        e.producer_epoch = ProducerEpoch(2);
        e.last_update_ms = 77;
        for i in 0..7 {
            e.batches.push_back(BatchMetadata {
                first_seq: i,
                last_seq: i,
                first_offset: Offset(i as i64),
                last_offset: Offset(i as i64),
                max_timestamp: 5,
            });
            while e.batches.len() > NUM_BATCHES_TO_RETAIN {
                e.batches.pop_front();
            }
        }
        m.producers.insert(pid, e);
    }
    m.map_end_offset = 42;
    let enc = m.encode();
    assert_eq!(ProducerStateManager::decode(&enc).unwrap(), m.producers);
    for i in 0..enc.len() {
        let mut bad = enc.clone();
        bad[i] ^= 0x20;
        assert!(
            ProducerStateManager::decode(&bad).is_none(),
            "flip at {i} undetected"
        );
    }
    for n in 0..enc.len() {
        assert!(ProducerStateManager::decode(&enc[..n]).is_none());
    }
    m.take_snapshot(true).unwrap();
    let mut m2 = ProducerStateManager::new(d.path(), 1000).unwrap();
    assert_eq!(m2.load_for(0, 100, 100).unwrap(), 42);
    assert_eq!(m2.producers, m.producers);
    // a snapshot beyond the log end is discarded
    let mut m3 = ProducerStateManager::new(d.path(), 1000).unwrap();
    assert_eq!(m3.load_for(0, 10, 10).unwrap(), 0);
    assert!(m3.is_empty());
    assert!(m3.snapshot_offsets().is_empty());
}

proptest::proptest! {
    #[test]
    fn garbage_snapshots_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300)) {
        let _ = ProducerStateManager::decode(&bytes);
    }
}
