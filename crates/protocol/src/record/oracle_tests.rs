//! Differential tests against the `kafka-protocol` crate's RecordBatch codec (dev-only oracle;
//! never used on untrusted input).

use super::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records as kp;

fn kp_codec(c: Compression) -> kp::Compression {
    match c {
        Compression::None => kp::Compression::None,
        Compression::Gzip => kp::Compression::Gzip,
        Compression::Snappy => kp::Compression::Snappy,
        Compression::Lz4 => kp::Compression::Lz4,
        Compression::Zstd => kp::Compression::Zstd,
    }
}

fn our_codec(c: kp::Compression) -> Compression {
    match c {
        kp::Compression::None => Compression::None,
        kp::Compression::Gzip => Compression::Gzip,
        kp::Compression::Snappy => Compression::Snappy,
        kp::Compression::Lz4 => Compression::Lz4,
        kp::Compression::Zstd => Compression::Zstd,
    }
}

#[test]
fn ours_decoded_by_kafka_protocol() {
    for codec in Compression::ALL {
        let mut b = RecordBatchBuilder::new(codec)
            .base_offset(40)
            .producer(9, 2, 17);
        b.append(
            1_000,
            Some(Bytes::from_static(b"k")),
            Some(Bytes::from_static(b"v1")),
            vec![("h".into(), Some(Bytes::from_static(b"x")))],
        );
        b.append(999, None, None, vec![]);
        b.append(
            1_010,
            Some(Bytes::from_static(b"")),
            Some(Bytes::from(vec![3u8; 500])),
            vec![],
        );
        let mut bytes = b.build().unwrap();
        let set = kp::RecordBatchDecoder::decode_with_custom_compression(
            &mut bytes,
            Some(|data: &mut Bytes, c: kp::Compression| {
                Ok(Bytes::from(
                    decompress(our_codec(c), data, 1 << 20).unwrap(),
                ))
            }),
        )
        .unwrap();
        assert_eq!(set.compression, kp_codec(codec));
        assert_eq!(set.records.len(), 3);
        let r = &set.records;
        assert_eq!(
            (
                r[0].offset,
                r[0].timestamp,
                r[0].producer_id,
                r[0].producer_epoch,
                r[0].sequence
            ),
            (40, 1_000, 9, 2, 17)
        );
        assert_eq!(r[0].key.as_deref(), Some(&b"k"[..]));
        assert_eq!(
            r[0].headers
                .get(&StrBytes::from_static_str("h"))
                .cloned()
                .flatten()
                .as_deref(),
            Some(&b"x"[..])
        );
        assert_eq!((r[1].offset, r[1].timestamp, r[1].sequence), (41, 999, 18));
        assert_eq!((r[1].key.clone(), r[1].value.clone()), (None, None));
        assert_eq!(r[2].value.as_ref().unwrap().len(), 500);
        assert_eq!(r[2].key.as_deref(), Some(&b""[..]));
    }
}

#[test]
fn kafka_protocol_decoded_by_ours() {
    let mut headers = kafka_protocol::indexmap::IndexMap::new();
    headers.insert(
        StrBytes::from_static_str("trace"),
        Some(Bytes::from_static(b"abc")),
    );
    headers.insert(StrBytes::from_static_str("nil"), None);
    let recs: Vec<kp::Record> = (0..4)
        .map(|i| kp::Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 7,
            producer_id: 5,
            producer_epoch: 1,
            timestamp_type: kp::TimestampType::Creation,
            offset: 100 + i,
            sequence: 3 + i as i32,
            timestamp: 50_000 + i * 3,
            key: if i % 2 == 0 {
                Some(Bytes::from(format!("key{i}")))
            } else {
                None
            },
            value: Some(Bytes::from(vec![i as u8; 10 * i as usize])),
            headers: headers.clone(),
        })
        .collect();
    for codec in Compression::ALL {
        let mut buf = bytes::BytesMut::new();
        kp::RecordBatchEncoder::encode_with_custom_compression(
            &mut buf,
            &recs,
            &kp::RecordEncodeOptions {
                version: 2,
                compression: kp_codec(codec),
            },
            Some(
                |src: &mut bytes::BytesMut, dst: &mut bytes::BytesMut, c: kp::Compression| {
                    dst.extend_from_slice(&compress(our_codec(c), src, true).unwrap());
                    Ok(())
                },
            ),
        )
        .unwrap();
        let bytes = buf.freeze();
        let batch = batches(&bytes).next().unwrap().unwrap();
        let s = batch.validate().unwrap();
        assert_eq!(s.records_count, 4);
        assert_eq!(batch.compression().unwrap(), codec);
        assert_eq!(
            (
                batch.base_offset(),
                batch.partition_leader_epoch(),
                batch.producer_id(),
                batch.base_sequence()
            ),
            (100, 7, 5, 3)
        );
        assert_eq!(batch.max_timestamp(), 50_009);
        let ours = batch.records().unwrap();
        for (o, k) in ours.iter().zip(&recs) {
            assert_eq!(o.offset, k.offset);
            assert_eq!(o.timestamp, k.timestamp);
            assert_eq!(o.key, k.key);
            assert_eq!(o.value, k.value);
            assert_eq!(o.headers.len(), 2);
            assert_eq!(
                o.headers[0],
                ("trace".to_string(), Some(Bytes::from_static(b"abc")))
            );
            assert_eq!(o.headers[1], ("nil".to_string(), None));
        }
    }
}
