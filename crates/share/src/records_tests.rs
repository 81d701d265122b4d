use super::*;
use DeliveryState::{Acknowledged, Archived, Available};

fn key() -> SharePartitionKey {
    SharePartitionKey::new(
        "gs1",
        Uuid::from_u128(0x0102_0304_0506_0708_090a_0b0c_0d0e_0f10),
        7,
    )
}

fn sb(first: i64, last: i64, state: DeliveryState, count: i16) -> StateBatch {
    StateBatch {
        first_offset: first,
        last_offset: last,
        delivery_state: state,
        delivery_count: count,
    }
}

fn snapshot(delivery_complete_count: i32) -> ShareSnapshotValue {
    ShareSnapshotValue {
        snapshot_epoch: 0,
        state_epoch: 1,
        leader_epoch: 20,
        start_offset: 50,
        delivery_complete_count,
        create_timestamp: 1_744_279_603,
        write_timestamp: 1_744_279_604,
        state_batches: vec![sb(100, 200, Available, 10), sb(201, 210, Acknowledged, 10)],
    }
}

fn roundtrip(record: ShareRecord) {
    let (k, v) = encode_record(&record);
    assert_eq!(decode_record(&k, v.as_deref()), Ok(record));
}

#[test]
fn every_record_round_trips_with_tombstones() {
    for dcc in [-1, 0, 11] {
        roundtrip(ShareRecord::Snapshot {
            key: key(),
            value: Some(snapshot(dcc)),
        });
        roundtrip(ShareRecord::Update {
            key: key(),
            value: Some(ShareUpdateValue {
                snapshot_epoch: 3,
                leader_epoch: -1,
                start_offset: -1,
                delivery_complete_count: dcc,
                state_batches: vec![sb(5, 9, Archived, 2)],
            }),
        });
    }
    roundtrip(ShareRecord::Snapshot {
        key: key(),
        value: None,
    });
    roundtrip(ShareRecord::Update {
        key: SharePartitionKey::new("", Uuid::nil(), 0),
        value: None,
    });
}

/// The bytes Kafka's generated `ShareSnapshotKey`/`ShareSnapshotValue` write (`MessageUtil
/// .toVersionPrefixedByteBuffer`), built by hand from the JSON schemas.
#[test]
fn snapshot_bytes_match_kafkas_layout() {
    let mut want_key = vec![0x00, 0x00, 0x00, 0x03, b'g', b's', b'1'];
    want_key.extend(1u8..=16);
    want_key.extend([0, 0, 0, 7]);
    let mut want_value = vec![0x00, 0x00]; // value version 0
    want_value.extend([0, 0, 0, 0]); // SnapshotEpoch
    want_value.extend([0, 0, 0, 1]); // StateEpoch
    want_value.extend([0, 0, 0, 20]); // LeaderEpoch
    want_value.extend(50i64.to_be_bytes()); // StartOffset
    want_value.extend(1_744_279_603i64.to_be_bytes()); // CreateTimestamp
    want_value.extend(1_744_279_604i64.to_be_bytes()); // WriteTimestamp
    want_value.push(3); // StateBatches: compact length 2 + 1
    want_value.extend(100i64.to_be_bytes());
    want_value.extend(200i64.to_be_bytes());
    want_value.extend([0, 0, 10, 0]); // state 0, count 10, no tags
    want_value.extend(201i64.to_be_bytes());
    want_value.extend(210i64.to_be_bytes());
    want_value.extend([2, 0, 10, 0]); // state 2, count 10, no tags
    let mut with_tag = want_value.clone();
    want_value.push(0); // no tagged fields (DeliveryCompleteCount is its default -1)
    with_tag.extend([1, 0, 4, 0, 0, 0, 11]); // one tag: 0, size 4, 11

    let (k, v) = encode_record(&ShareRecord::Snapshot {
        key: key(),
        value: Some(snapshot(-1)),
    });
    assert_eq!(&k[..], &want_key[..]);
    assert_eq!(v.as_deref(), Some(&want_value[..]));
    let (_, v) = encode_record(&ShareRecord::Snapshot {
        key: key(),
        value: Some(snapshot(11)),
    });
    assert_eq!(v.as_deref(), Some(&with_tag[..]));
    // Kafka may write other tags (and batch tags) that we skip.
    let mut unknown_tag = want_value.clone();
    unknown_tag.pop();
    unknown_tag.extend([2, 0, 4, 0, 0, 0, 11, 5, 2, 0xab, 0xcd]);
    let decoded = decode_record(&want_key, Some(&unknown_tag)).unwrap();
    assert_eq!(
        decoded,
        ShareRecord::Snapshot {
            key: key(),
            value: Some(snapshot(11))
        }
    );
}

#[test]
fn update_bytes_match_kafkas_layout() {
    let mut want_key = vec![0x00, 0x01, 0x00, 0x03, b'g', b's', b'1'];
    want_key.extend(1u8..=16);
    want_key.extend([0, 0, 0, 7]);
    let mut want_value = vec![0x00, 0x00];
    want_value.extend([0, 0, 0, 1]); // SnapshotEpoch
    want_value.extend([0, 0, 0, 25]); // LeaderEpoch
    want_value.extend(55i64.to_be_bytes()); // StartOffset
    want_value.push(1); // no batches
    want_value.push(0);
    let (k, v) = encode_record(&ShareRecord::Update {
        key: key(),
        value: Some(ShareUpdateValue {
            snapshot_epoch: 1,
            leader_epoch: 25,
            start_offset: 55,
            delivery_complete_count: -1,
            state_batches: vec![],
        }),
    });
    assert_eq!(&k[..], &want_key[..]);
    assert_eq!(v.as_deref(), Some(&want_value[..]));
}

#[test]
fn truncated_and_garbage_input_are_errors_not_panics() {
    let (k, v) = encode_record(&ShareRecord::Snapshot {
        key: key(),
        value: Some(snapshot(11)),
    });
    let v = v.unwrap();
    for cut in 0..k.len() {
        assert!(decode_record(&k[..cut], None).is_err(), "key cut at {cut}");
    }
    for cut in 0..v.len() {
        assert!(
            decode_record(&k, Some(&v[..cut])).is_err(),
            "value cut at {cut}"
        );
    }
    let mut trailing = v.to_vec();
    trailing.push(0);
    assert_eq!(
        decode_record(&k, Some(&trailing)),
        Err(RecordDecodeError::Malformed("trailing bytes"))
    );
    // A huge batch count with few bytes left is refused before allocating.
    let mut huge = v[..38].to_vec();
    huge.extend([0xff, 0xff, 0xff, 0xff, 0x0f]);
    assert_eq!(
        decode_record(&k, Some(&huge)),
        Err(RecordDecodeError::Truncated)
    );
    // Unknown types and versions, a bad delivery state.
    let mut k2 = k.to_vec();
    k2[1] = 2;
    assert_eq!(
        decode_record(&k2, None),
        Err(RecordDecodeError::UnknownRecordType(2))
    );
    let mut v2 = v.to_vec();
    v2[1] = 1;
    assert_eq!(
        decode_record(&k, Some(&v2)),
        Err(RecordDecodeError::UnknownValueVersion(1))
    );
    let mut v3 = v.to_vec();
    v3[39 + 16] = 1; // the first batch's delivery state: Acquired is never persisted
    assert_eq!(
        decode_record(&k, Some(&v3)),
        Err(RecordDecodeError::Malformed("unknown delivery state"))
    );
    // Arbitrary bytes never panic.
    let mut x: u32 = 12345;
    for len in 0..200usize {
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                (x >> 16) as u8
            })
            .collect();
        let _ = decode_record(&k, Some(&bytes));
        let _ = decode_record(&bytes, Some(&bytes));
    }
}

#[test]
fn an_over_long_group_id_is_cut_at_a_char_boundary() {
    let long = SharePartitionKey::new("é".repeat(20_000), Uuid::nil(), 0);
    let (k, _) = encode_record(&ShareRecord::Snapshot {
        key: long,
        value: None,
    });
    let ShareRecord::Snapshot { key, .. } = decode_record(&k, None).unwrap() else {
        panic!()
    };
    assert_eq!(key.group_id, "é".repeat(16_383));
}

mod prop {
    use super::*;
    use proptest::prelude::*;

    fn batch() -> impl Strategy<Value = StateBatch> {
        let state = prop_oneof![Just(Available), Just(Acknowledged), Just(Archived)];
        (any::<i64>(), any::<i64>(), state, any::<i16>()).prop_map(|(f, l, s, c)| sb(f, l, s, c))
    }

    fn record() -> impl Strategy<Value = ShareRecord> {
        let key = (".{0,20}", any::<u128>(), any::<i32>())
            .prop_map(|(g, t, p)| SharePartitionKey::new(g, Uuid::from_u128(t), p));
        let ints = (
            any::<i32>(),
            any::<i32>(),
            any::<i32>(),
            any::<i64>(),
            any::<i32>(),
        );
        let times = (any::<i64>(), any::<i64>());
        let batches = proptest::collection::vec(batch(), 0..5);
        (key, any::<u8>(), ints, times, batches).prop_map(|(key, kind, i, t, state_batches)| {
            match kind % 4 {
                0 => ShareRecord::Snapshot {
                    key,
                    value: Some(ShareSnapshotValue {
                        snapshot_epoch: i.0,
                        state_epoch: i.1,
                        leader_epoch: i.2,
                        start_offset: i.3,
                        delivery_complete_count: i.4,
                        create_timestamp: t.0,
                        write_timestamp: t.1,
                        state_batches,
                    }),
                },
                1 => ShareRecord::Update {
                    key,
                    value: Some(ShareUpdateValue {
                        snapshot_epoch: i.0,
                        leader_epoch: i.2,
                        start_offset: i.3,
                        delivery_complete_count: i.4,
                        state_batches,
                    }),
                },
                2 => ShareRecord::Snapshot { key, value: None },
                _ => ShareRecord::Update { key, value: None },
            }
        })
    }

    proptest! {
        #[test]
        fn any_record_round_trips(r in record()) {
            let (k, v) = encode_record(&r);
            prop_assert_eq!(decode_record(&k, v.as_deref()), Ok(r));
        }

        #[test]
        fn any_bytes_decode_or_fail_without_panicking(
            k in proptest::collection::vec(any::<u8>(), 0..40),
            v in proptest::collection::vec(any::<u8>(), 0..120),
        ) {
            let _ = decode_record(&k, Some(&v));
            let _ = decode_record(&k, None);
            // The same value bytes behind valid keys of both types.
            let records = [
                ShareRecord::Snapshot { key: key(), value: None },
                ShareRecord::Update { key: key(), value: None },
            ];
            for record in &records {
                let (valid_key, _) = encode_record(record);
                let _ = decode_record(&valid_key, Some(&v));
            }
        }
    }
}
