//! The `__transaction_state` codec (Kafka's `TransactionLogKey` v0, `TransactionLogValue` v0/v1).

use types::{ProducerEpoch, ProducerId};

use super::*;
use crate::records::RecordDecodeError;

fn sample(version: i16, state: TransactionState) -> TransactionLogValue {
    TransactionLogValue {
        version,
        producer_id: ProducerId(4_000_000_000),
        previous_producer_id: if version == 1 {
            ProducerId(12)
        } else {
            ProducerId::NONE
        },
        next_producer_id: if version == 1 {
            ProducerId(13)
        } else {
            ProducerId::NONE
        },
        producer_epoch: ProducerEpoch(300),
        transaction_timeout_ms: 60_000,
        state,
        partitions: if state == TransactionState::Empty {
            Default::default()
        } else {
            [tp("a", 0), tp("a", 2), tp("bé", 7)].into_iter().collect()
        },
        last_update_timestamp_ms: 1_700_000_000_123,
        start_timestamp_ms: 1_700_000_000_000,
        client_transaction_version: if version == 1 {
            TV2
        } else {
            TransactionVersion::TV_0
        },
    }
}

#[test]
fn round_trips_every_state_in_both_value_versions_and_tombstones() {
    for version in [0, 1] {
        for state in TransactionState::ALL {
            let rec = TransactionLogRecord {
                transactional_id: "txn-ü".into(),
                value: Some(sample(version, state)),
            };
            let (k, v) = encode_transaction_record(&rec);
            assert_eq!(
                decode_transaction_record(&k, v.as_deref()),
                Ok(rec),
                "{version} {state}"
            );
        }
    }
    let tomb = TransactionLogRecord {
        transactional_id: "gone".into(),
        value: None,
    };
    let (k, v) = encode_transaction_record(&tomb);
    assert_eq!(v, None);
    assert_eq!(decode_transaction_record(&k, None), Ok(tomb));
}

#[test]
fn empty_state_is_written_with_null_partitions() {
    // Kafka's `valueToBytes`: no partitions for Empty (null array); the reader ignores them for Empty.
    let (_, v) = encode_transaction_record(&TransactionLogRecord {
        transactional_id: "t".into(),
        value: Some(sample(0, TransactionState::Empty)),
    });
    let v = v.unwrap();
    // version 2 + pid 8 + epoch 2 + timeout 4 + status 1 = offset 17: the array count.
    assert_eq!(&v[17..21], &(-1i32).to_be_bytes());
    let (_, v) = encode_transaction_record(&TransactionLogRecord {
        transactional_id: "t".into(),
        value: Some(sample(1, TransactionState::Empty)),
    });
    assert_eq!(v.unwrap()[17], 0, "compact null array");
}

/// Bytes built field by field from TransactionLogKey.json / TransactionLogValue.json.
#[test]
fn decodes_hand_built_bytes() {
    let mut key = Vec::new();
    key.extend(0i16.to_be_bytes()); // key version 0
    key.extend(3i16.to_be_bytes()); // TransactionalId: STRING length
    key.extend(b"tx1");

    // Value version 0: non-flexible.
    let mut v0 = Vec::new();
    v0.extend(0i16.to_be_bytes()); // version
    v0.extend(42i64.to_be_bytes()); // ProducerId
    v0.extend(5i16.to_be_bytes()); // ProducerEpoch
    v0.extend(30_000i32.to_be_bytes()); // TransactionTimeoutMs
    v0.push(1); // TransactionStatus = Ongoing
    v0.extend(1i32.to_be_bytes()); // TransactionPartitions: 1 entry
    v0.extend(5i16.to_be_bytes()); // Topic length
    v0.extend(b"topic");
    v0.extend(2i32.to_be_bytes()); // PartitionIds: 2 entries
    v0.extend(3i32.to_be_bytes());
    v0.extend(9i32.to_be_bytes());
    v0.extend(1_000i64.to_be_bytes()); // TransactionLastUpdateTimestampMs
    v0.extend(900i64.to_be_bytes()); // TransactionStartTimestampMs
    let want0 = TransactionLogValue {
        version: 0,
        producer_id: ProducerId(42),
        previous_producer_id: ProducerId::NONE,
        next_producer_id: ProducerId::NONE,
        producer_epoch: ProducerEpoch(5),
        transaction_timeout_ms: 30_000,
        state: TransactionState::Ongoing,
        partitions: [tp("topic", 3), tp("topic", 9)].into_iter().collect(),
        last_update_timestamp_ms: 1_000,
        start_timestamp_ms: 900,
        client_transaction_version: TransactionVersion::TV_0,
    };
    let rec = decode_transaction_record(&key, Some(&v0)).unwrap();
    assert_eq!(rec.transactional_id, "tx1");
    assert_eq!(rec.value.as_ref(), Some(&want0));
    assert_eq!(
        encode_transaction_record(&rec).1.unwrap().as_ref(),
        v0.as_slice()
    );

    // Value version 1: flexible.
    let mut v1 = Vec::new();
    v1.extend(1i16.to_be_bytes()); // version
    v1.extend(42i64.to_be_bytes()); // ProducerId
    v1.extend(5i16.to_be_bytes()); // ProducerEpoch
    v1.extend(30_000i32.to_be_bytes()); // TransactionTimeoutMs
    v1.push(2); // TransactionStatus = PrepareCommit
    v1.push(2); // TransactionPartitions: compact array, 1 entry (+1)
    v1.push(6); // Topic: compact string, 5 bytes (+1)
    v1.extend(b"topic");
    v1.push(3); // PartitionIds: compact array, 2 entries (+1)
    v1.extend(3i32.to_be_bytes());
    v1.extend(9i32.to_be_bytes());
    v1.push(0); // PartitionsSchema tagged fields: none
    v1.extend(1_000i64.to_be_bytes()); // TransactionLastUpdateTimestampMs
    v1.extend(900i64.to_be_bytes()); // TransactionStartTimestampMs
    v1.push(3); // tagged fields: 3
    v1.extend([0, 8]); // tag 0 PreviousProducerId, 8 bytes
    v1.extend(41i64.to_be_bytes());
    v1.extend([1, 8]); // tag 1 NextProducerId, 8 bytes
    v1.extend(43i64.to_be_bytes());
    v1.extend([2, 2]); // tag 2 ClientTransactionVersion, 2 bytes
    v1.extend(2i16.to_be_bytes());
    let want1 = TransactionLogValue {
        version: 1,
        previous_producer_id: ProducerId(41),
        next_producer_id: ProducerId(43),
        state: TransactionState::PrepareCommit,
        client_transaction_version: TV2,
        ..want0
    };
    let rec = decode_transaction_record(&key, Some(&v1)).unwrap();
    assert_eq!(rec.value.as_ref(), Some(&want1));
    assert_eq!(
        encode_transaction_record(&rec).1.unwrap().as_ref(),
        v1.as_slice()
    );

    // An unknown tag (newer Kafka's tag 3) is skipped.
    let mut v1x = v1.clone();
    let tags_at = v1x.len() - 25;
    v1x[tags_at] = 4;
    v1x.extend([3, 2, 0, 7]);
    assert_eq!(
        decode_transaction_record(&key, Some(&v1x)).unwrap().value,
        Some(want1)
    );
}

#[test]
fn decode_errors() {
    let (k, v) = encode_transaction_record(&TransactionLogRecord {
        transactional_id: "t".into(),
        value: Some(sample(1, TransactionState::Ongoing)),
    });
    let v = v.unwrap();
    let mut other_key = k.to_vec();
    other_key[1] = 1;
    assert_eq!(
        decode_transaction_record(&other_key, None),
        Err(RecordDecodeError::UnknownKeyVersion(1))
    );
    let mut v2 = v.to_vec();
    v2[1] = 2;
    assert!(matches!(
        decode_transaction_record(&k, Some(&v2)),
        Err(RecordDecodeError::UnknownValueVersion { version: 2, .. })
    ));
    for cut in 0..v.len() {
        assert!(
            decode_transaction_record(&k, Some(&v[..cut])).is_err(),
            "{cut}"
        );
    }
    let mut bad_state = v.to_vec();
    bad_state[16] = 9;
    assert!(matches!(
        decode_transaction_record(&k, Some(&bad_state)),
        Err(RecordDecodeError::Malformed(_))
    ));
    assert!(decode_transaction_record(&[0, 0, 0, 5, b'a'], None).is_err());
    assert_eq!(
        decode_transaction_record(&[0, 0, 0, 2, 0xff, 0xfe], None),
        Err(RecordDecodeError::InvalidUtf8)
    );
}

proptest::proptest! {
    #[test]
    fn decode_never_panics(
        key in proptest::collection::vec(proptest::num::u8::ANY, 0..20),
        value in proptest::option::of(proptest::collection::vec(proptest::num::u8::ANY, 0..120)),
    ) {
        let mut k = vec![0u8, 0];
        k.extend(key);
        let _ = decode_transaction_record(&k, value.as_deref());
        if let Some(mut v) = value {
            v.splice(0..v.len().min(2), [0u8, 1]);
            let _ = decode_transaction_record(&[0, 0, 0, 0], Some(&v));
        }
    }
}
