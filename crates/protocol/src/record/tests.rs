use super::*;
use proptest::prelude::*;

fn build(codec: Compression, recs: &[ArbRecord]) -> Bytes {
    let mut b = RecordBatchBuilder::new(codec)
        .base_offset(100)
        .producer(7, 1, 5);
    for (ts, k, v, h) in recs {
        b.append(
            *ts,
            k.clone().map(Bytes::from),
            v.clone().map(Bytes::from),
            h.iter()
                .map(|(k, v)| (k.clone(), v.clone().map(Bytes::from)))
                .collect(),
        );
    }
    b.build().unwrap()
}

#[test]
fn header_fields_and_records() {
    for codec in Compression::ALL {
        let bytes = build(
            codec,
            &[
                (
                    1000,
                    Some(b"k1".to_vec()),
                    Some(b"v1".to_vec()),
                    vec![("h".into(), None)],
                ),
                (999, None, None, vec![]),
                (
                    1005,
                    None,
                    Some(vec![7; 300]),
                    vec![("a".into(), Some(b"b".to_vec()))],
                ),
            ],
        );
        let mut it = batches(&bytes);
        let b = it.next().unwrap().unwrap();
        assert!(it.next().is_none());
        assert_eq!(b.base_offset(), 100);
        assert_eq!(b.magic(), 2);
        assert_eq!(b.records_count(), 3);
        assert_eq!(b.last_offset_delta(), 2);
        assert_eq!(b.last_offset(), 102);
        assert_eq!(b.next_offset(), 103);
        assert_eq!(b.base_timestamp(), 1000);
        assert_eq!(b.max_timestamp(), 1005);
        assert_eq!(b.producer_id(), 7);
        assert_eq!(b.producer_epoch(), 1);
        assert_eq!(b.base_sequence(), 5);
        assert_eq!(b.last_sequence(), 7);
        assert_eq!(b.compression().unwrap(), codec);
        assert_eq!(b.timestamp_type(), TimestampType::CreateTime);
        assert!(!b.is_transactional() && !b.is_control());
        let s = b.validate().unwrap();
        assert_eq!(
            (s.records_count, s.min_timestamp, s.max_timestamp),
            (3, 999, 1005)
        );
        assert_eq!(s.offset_delta_of_max_timestamp, 2);
        let r = b.records().unwrap();
        assert_eq!(r.len(), 3);
        assert_eq!(r[0].offset, 100);
        assert_eq!(r[0].key.as_deref(), Some(&b"k1"[..]));
        assert_eq!(r[0].headers, vec![("h".to_string(), None)]);
        assert_eq!(r[1].timestamp, 999);
        assert_eq!(r[1].key, None);
        assert_eq!(r[1].value, None);
        assert_eq!(r[2].value.as_ref().unwrap().len(), 300);
        assert_eq!(r[2].headers[0].1.as_deref(), Some(&b"b"[..]));
    }
}

#[test]
fn raw_snappy_accepted() {
    let mut b = RecordBatchBuilder::new(Compression::Snappy).snappy_xerial(false);
    b.append(
        1,
        None,
        Some(Bytes::from_static(b"hello hello hello")),
        vec![],
    );
    let bytes = b.build().unwrap();
    let batch = RecordBatch::new(bytes).unwrap();
    batch.validate().unwrap();
    assert_eq!(
        batch.records().unwrap()[0].value.as_deref(),
        Some(&b"hello hello hello"[..])
    );
}

#[test]
fn concatenated_batches_and_trailing_garbage() {
    let a = build(Compression::None, &[(1, None, Some(b"a".to_vec()), vec![])]);
    let b = build(Compression::Gzip, &[(2, None, Some(b"b".to_vec()), vec![])]);
    let mut all = a.to_vec();
    all.extend_from_slice(&b);
    let all_b = Bytes::from(all.clone());
    let v: Vec<_> = batches(&all_b).collect::<Result<_, _>>().unwrap();
    assert_eq!(v.len(), 2);
    all.extend_from_slice(&[0, 0, 0]);
    let r: Vec<_> = batches(&Bytes::from(all)).collect();
    assert_eq!(r.len(), 3);
    assert!(matches!(r[2], Err(RecordError::InvalidRecord(_))));
}

#[test]
fn legacy_magic_rejected() {
    let mut v = build(Compression::None, &[(1, None, Some(b"a".to_vec()), vec![])]).to_vec();
    v[16] = 1;
    assert!(matches!(
        batches(&Bytes::from(v)).next().unwrap(),
        Err(RecordError::UnsupportedMagic(1))
    ));
}

#[test]
fn crc_mismatch_is_corrupt() {
    let mut v = build(
        Compression::None,
        &[(1, None, Some(b"abc".to_vec()), vec![])],
    )
    .to_vec();
    let last = v.len() - 1;
    v[last] ^= 1;
    let b = RecordBatch::new(Bytes::from(v)).unwrap();
    assert!(matches!(b.validate(), Err(RecordError::Corrupt(_))));
}

#[test]
fn rewrite_in_place() {
    let v = build(
        Compression::Zstd,
        &[
            (10, None, Some(b"a".to_vec()), vec![]),
            (20, None, None, vec![]),
        ],
    );
    let mut m = v.to_vec();
    let mut w = RecordBatchMut::new(&mut m).unwrap();
    w.set_base_offset(5000);
    w.set_partition_leader_epoch(9);
    w.set_max_timestamp(TimestampType::LogAppendTime, 777);
    w.update_crc();
    let b = RecordBatch::new(Bytes::from(m)).unwrap();
    b.validate().unwrap();
    assert_eq!(b.base_offset(), 5000);
    assert_eq!(b.partition_leader_epoch(), 9);
    assert_eq!(b.timestamp_type(), TimestampType::LogAppendTime);
    assert_eq!(b.max_timestamp(), 777);
    let r = b.records().unwrap();
    assert_eq!(
        (r[0].offset, r[0].timestamp, r[1].offset, r[1].timestamp),
        (5000, 777, 5001, 777)
    );
}

#[test]
fn bad_counts() {
    // records_count larger than present records, CRC fixed up → InvalidRecord.
    let mut v = build(
        Compression::None,
        &[(1, None, Some(b"abc".to_vec()), vec![])],
    )
    .to_vec();
    v[57..61].copy_from_slice(&1i32.to_be_bytes());
    v[23..27].copy_from_slice(&1i32.to_be_bytes());
    v[57..61].copy_from_slice(&2i32.to_be_bytes());
    RecordBatchMut::new(&mut v).unwrap().update_crc();
    assert!(matches!(
        RecordBatch::new(Bytes::from(v)).unwrap().validate(),
        Err(RecordError::InvalidRecord(_))
    ));
    // huge count
    let mut v = build(
        Compression::None,
        &[(1, None, Some(b"abc".to_vec()), vec![])],
    )
    .to_vec();
    v[23..27].copy_from_slice(&i32::MAX.to_be_bytes());
    v[57..61].copy_from_slice(&i32::MAX.to_be_bytes());
    RecordBatchMut::new(&mut v).unwrap().update_crc();
    assert!(matches!(
        RecordBatch::new(Bytes::from(v)).unwrap().validate(),
        Err(RecordError::InvalidRecord(_))
    ));
}

#[test]
fn sequence_arithmetic() {
    assert_eq!(increment_sequence(5, 3), 8);
    assert_eq!(increment_sequence(i32::MAX, 1), 0);
    assert_eq!(increment_sequence(i32::MAX - 1, 3), 1);
    // corrupt inputs: no overflow panic
    let _ = increment_sequence(i32::MIN, i32::MIN);
    let _ = increment_sequence(5, -10);
    let _ = increment_sequence(i32::MAX, i32::MAX);
}

#[test]
fn empty_batch() {
    let b = RecordBatchBuilder::new(Compression::None).build().unwrap();
    let b = RecordBatch::new(b).unwrap();
    assert_eq!(b.records_count(), 0);
    assert_eq!(b.validate().unwrap().records_count, 0);
    assert!(b.records().unwrap().is_empty());
}

fn arb_codec() -> impl Strategy<Value = Compression> {
    prop::sample::select(Compression::ALL.to_vec())
}

type ArbRecord = (
    i64,
    Option<Vec<u8>>,
    Option<Vec<u8>>,
    Vec<(String, Option<Vec<u8>>)>,
);

fn arb_records() -> impl Strategy<Value = Vec<ArbRecord>> {
    prop::collection::vec(
        (
            0i64..2_000_000_000_000,
            prop::option::of(prop::collection::vec(any::<u8>(), 0..20)),
            prop::option::of(prop::collection::vec(any::<u8>(), 0..200)),
            prop::collection::vec(
                (
                    "[a-z]{0,5}",
                    prop::option::of(prop::collection::vec(any::<u8>(), 0..5)),
                ),
                0..3,
            ),
        ),
        1..20,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn build_parse_round_trip(codec in arb_codec(), recs in arb_records()) {
        let bytes = build(codec, &recs);
        let b = RecordBatch::new(bytes).unwrap();
        let s = b.validate().unwrap();
        prop_assert_eq!(s.records_count as usize, recs.len());
        let parsed = b.records().unwrap();
        for (i, (p, r)) in parsed.iter().zip(recs.iter()).enumerate() {
            prop_assert_eq!(p.offset, 100 + i as i64);
            prop_assert_eq!(p.timestamp, r.0);
            prop_assert_eq!(p.key.as_ref().map(|k| k.to_vec()), r.1.clone());
            prop_assert_eq!(p.value.as_ref().map(|k| k.to_vec()), r.2.clone());
            let hs: Vec<_> = p.headers.iter().map(|(k, v)| (k.clone(), v.as_ref().map(|v| v.to_vec()))).collect();
            prop_assert_eq!(&hs, &r.3);
        }
    }

    #[test]
    fn corrupt_byte_is_error_never_panic(codec in arb_codec(), recs in arb_records(), idx in any::<prop::sample::Index>(), x in 1u8..=255) {
        let bytes = build(codec, &recs);
        let mut v = bytes.to_vec();
        let i = idx.index(v.len());
        v[i] ^= x;
        let v = Bytes::from(v);
        // Never panics; corrupting any byte covered by the CRC or the length/magic is an error.
        let mut any_err = false;
        for b in batches(&v) {
            match b {
                Ok(b) => { if b.validate().is_err() { any_err = true; } let _ = b.records(); }
                Err(_) => any_err = true,
            }
        }
        if i >= 8 && !(12..16).contains(&i) { prop_assert!(any_err, "corrupting byte {} went undetected", i); }
    }

    #[test]
    fn corrupt_with_fixed_crc_never_panics(codec in arb_codec(), recs in arb_records(), idx in any::<prop::sample::Index>(), x in 1u8..=255) {
        let bytes = build(codec, &recs);
        let mut v = bytes.to_vec();
        let i = 21 + idx.index(v.len() - 21);
        v[i] ^= x;
        RecordBatchMut::new(&mut v).unwrap().update_crc();
        let v = Bytes::from(v);
        for b in batches(&v).flatten() {
            if let Ok(s) = b.validate() {
                // whatever validates must decode, record for record
                let recs = b.records().unwrap();
                prop_assert_eq!(recs.len(), s.records_count as usize);
                prop_assert_eq!(s.records_count, b.records_count());
            } else {
                let _ = b.records();
            }
        }
    }

    #[test]
    fn random_bytes_never_panic(v in prop::collection::vec(any::<u8>(), 0..300)) {
        let v = Bytes::from(v);
        for b in batches(&v).flatten() {
            let _ = b.validate();
            let _ = b.records();
        }
    }
}
