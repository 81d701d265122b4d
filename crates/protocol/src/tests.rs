//! Crate-level tests: round trips of every API and version, frames, bounded decoding.

use crate::codec::*;
use crate::messages::*;
use crate::sample::Seq;
use crate::*;
use bytes::{BufMut, Bytes, BytesMut};

fn seed() -> u64 {
    let s = std::env::var("PROTOCOL_TEST_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed_1234_u64);
    eprintln!("seed = {s} (set PROTOCOL_TEST_SEED to reproduce)");
    s
}

fn encode_body(body: &impl Encode, version: i16) -> Bytes {
    let mut e = Encoder::new();
    body.encode(&mut e, version).unwrap();
    e.into_bytes().unwrap()
}

#[test]
fn every_api_and_version_round_trips() {
    let mut s = Seq::new(seed());
    let mut count = 0;
    for &api in IMPLEMENTED_APIS {
        let (lo, hi) = supported_versions(api).unwrap();
        for v in lo..=hi {
            for round in 0..4 {
                let req = sample_request(api, v, &mut s).unwrap();
                let header = RequestHeader {
                    request_api_key: api as i16,
                    request_api_version: v,
                    correlation_id: 7 + round,
                    client_id: if round == 1 {
                        None
                    } else {
                        Some("client-1".into())
                    },
                    unknown_tagged_fields: Vec::new(),
                };
                let frame =
                    encode_request(&header, &req).unwrap_or_else(|e| panic!("{api} v{v}: {e}"));
                let size = i32::from_be_bytes(frame[..4].try_into().unwrap());
                assert_eq!(size as usize, frame.len() - 4);
                let (h2, req2) =
                    decode_request(frame.slice(4..)).unwrap_or_else(|e| panic!("{api} v{v}: {e}"));
                assert_eq!(h2, header, "{api} v{v}");
                assert_eq!(req2, req, "{api} v{v} request");

                let resp = sample_response(api, v, &mut s).unwrap();
                let chunks = encode_response(99, api, v, &resp)
                    .unwrap_or_else(|e| panic!("{api} v{v}: {e}"));
                let bytes = chunks_to_bytes(&chunks).unwrap();
                let size = i32::from_be_bytes(bytes[..4].try_into().unwrap());
                assert_eq!(size as usize, bytes.len() - 4);
                let (rh, resp2) = decode_response(api, v, bytes.slice(4..))
                    .unwrap_or_else(|e| panic!("{api} v{v}: {e}"));
                assert_eq!(rh.correlation_id, 99);
                assert_eq!(resp2, resp, "{api} v{v} response");
                count += 1;
            }
        }
    }
    assert!(count > 100);
}

#[test]
fn truncated_frames_are_malformed_never_panic() {
    let mut s = Seq::new(seed());
    for &api in IMPLEMENTED_APIS {
        let (lo, hi) = supported_versions(api).unwrap();
        for v in [lo, hi] {
            let req = sample_request(api, v, &mut s).unwrap();
            let header = RequestHeader {
                request_api_key: api as i16,
                request_api_version: v,
                correlation_id: 1,
                client_id: Some("c".into()),
                unknown_tagged_fields: Vec::new(),
            };
            let frame = encode_request(&header, &req).unwrap().slice(4..);
            for cut in 0..frame.len() {
                // Every strict prefix must fail to decode (it may never succeed with bytes missing
                // unless the tail is optional, which Kafka frames never are).
                let r = decode_request(frame.slice(..cut));
                assert!(
                    r.is_err(),
                    "{api} v{v} decoded from {cut}/{} bytes",
                    frame.len()
                );
            }
            // Trailing bytes are ignored, as Kafka ignores them.
            let mut longer = BytesMut::from(&frame[..]);
            longer.put_u8(0);
            assert!(
                decode_request(longer.freeze()).is_ok(),
                "{api} v{v} trailing byte refused"
            );
        }
    }
}

#[test]
fn unsupported_key_and_version() {
    // Unknown API key.
    let mut f = BytesMut::new();
    f.put_i16(9999);
    f.put_i16(0);
    f.put_i32(5);
    f.put_i16(-1);
    assert_eq!(
        decode_request(f.freeze()),
        Err(DecodeError::UnsupportedApiKey(9999))
    );
    // ApiVersions v6 (above our max): UnsupportedVersion, and the correlation id is peekable.
    let mut f = BytesMut::new();
    f.put_i16(18);
    f.put_i16(6);
    f.put_i32(42);
    f.put_i16(-1);
    f.put_u8(0);
    let frame = f.freeze();
    assert_eq!(
        decode_request(frame.clone()),
        Err(DecodeError::UnsupportedVersion {
            api_key: 18,
            version: 6
        })
    );
    assert_eq!(RequestHeader::peek(&frame), Some((18, 6, 42)));
    assert_eq!(RequestHeader::peek(&frame[..7]), None);
    // Too short for a header.
    assert!(matches!(
        decode_request(Bytes::from_static(&[0, 18, 0])),
        Err(DecodeError::Malformed(_))
    ));
}

#[test]
fn api_versions_response_header_is_v0_even_when_flexible() {
    // Pitfall 1: v3 response (flexible body) still has the 4-byte header without tagged fields.
    let body = ResponseBody::ApiVersions(ApiVersionsResponse {
        error_code: 35,
        api_keys: vec![api_versions_response::ApiVersion {
            api_key: 18,
            min_version: 0,
            max_version: 4,
            ..Default::default()
        }],
        ..Default::default()
    });
    assert_eq!(response_header_version(ApiKey::ApiVersions, 3), 0);
    assert_eq!(response_header_version(ApiKey::Metadata, 9), 1);
    assert_eq!(response_header_version(ApiKey::Metadata, 8), 0);
    assert_eq!(request_header_version(ApiKey::Metadata, 9), 2);
    assert_eq!(request_header_version(ApiKey::Metadata, 8), 1);
    let bytes =
        chunks_to_bytes(&encode_response(77, ApiKey::ApiVersions, 0, &body).unwrap()).unwrap();
    // size, correlation id, error code 35, array of 1, key 18, 0, 4, throttle absent in v0.
    assert_eq!(
        &bytes[..],
        &[0, 0, 0, 16, 0, 0, 0, 77, 0, 35, 0, 0, 0, 1, 0, 18, 0, 0, 0, 4][..]
    );
    let v3 = chunks_to_bytes(&encode_response(77, ApiKey::ApiVersions, 3, &body).unwrap()).unwrap();
    // correlation id is directly followed by the error code (no header tagged-field byte).
    assert_eq!(&v3[4..10], &[0, 0, 0, 77, 0, 35]);
}

#[test]
fn fetch_defaults_follow_the_spec() {
    let p = fetch_response::PartitionData::default();
    assert_eq!(p.last_stable_offset, -1);
    assert_eq!(p.log_start_offset, -1);
    assert_eq!(p.preferred_read_replica, -1);
    // Pitfall 6: empty partitions carry zero-length records, never null.
    assert_eq!(p.records, Some(crate::record::Records::default()));
    let b = encode_body(&p, 4);
    // partition, error, hw, lso, aborted_transactions (empty array, v4), records length 0
    assert_eq!(&b[b.len() - 4..], &[0, 0, 0, 0]);
    let r = FetchRequest::default();
    assert_eq!(r.replica_id, -1);
    assert_eq!(r.max_bytes, 0x7fff_ffff);
    assert_eq!(r.session_epoch, -1);
    assert_eq!(MetadataResponse::default().controller_id, -1);
    assert!(MetadataRequest::default().allow_auto_topic_creation);
    assert_eq!(ProduceRequest::default().transactional_id, None);
    assert_eq!(
        metadata_response::MetadataResponseTopic::default().topic_authorized_operations,
        i32::MIN
    );
}

#[test]
fn unknown_tagged_fields_are_kept_and_reencoded() {
    let mut req = ApiVersionsRequest {
        client_software_name: "x".into(),
        ..Default::default()
    };
    req.unknown_tagged_fields = vec![(5, Bytes::from_static(b"abc")), (700, Bytes::new())];
    let b = encode_body(&req, 3);
    let mut buf = b.clone();
    let back = ApiVersionsRequest::decode(&mut buf, 3).unwrap();
    assert_eq!(back, req);
    assert_eq!(encode_body(&back, 3), b);
    // Known tagged field + unknown ones interleave in tag order.
    let mut resp = ApiVersionsResponse {
        finalized_features_epoch: 9,
        ..Default::default()
    };
    resp.unknown_tagged_fields = vec![(0x7f_ffff, Bytes::from_static(b"z"))];
    let b = encode_body(&resp, 3);
    let mut buf = b.clone();
    let back = ApiVersionsResponse::decode(&mut buf, 3).unwrap();
    assert_eq!(back, resp);
    assert!(buf.is_empty());
}

#[test]
fn tagged_fields_out_of_order_or_oversized_are_malformed() {
    // ApiVersionsRequest v3: two compact strings then tagged fields.
    let mut f = BytesMut::new();
    f.put_u8(1); // ""
    f.put_u8(1); // ""
    f.put_u8(2); // two tagged fields
    f.put_u8(5);
    f.put_u8(0);
    f.put_u8(4); // tag 4 < 5
    f.put_u8(0);
    let mut b = f.freeze();
    assert!(ApiVersionsRequest::decode(&mut b, 3).is_err());
    let mut b = Bytes::from_static(&[1, 1, 1, 5, 100]);
    assert!(ApiVersionsRequest::decode(&mut b, 3).is_err());
}

fn request_frame(api: i16, version: i16, flexible_header: bool, body: &[u8]) -> Bytes {
    let mut f = BytesMut::new();
    f.put_i16(api);
    f.put_i16(version);
    f.put_i32(1);
    f.put_i16(-1); // null client id
    if flexible_header {
        f.put_u8(0);
    }
    f.put_slice(body);
    f.freeze()
}

#[test]
fn huge_array_counts_are_rejected_without_allocating() {
    // DescribeLogDirs v1 with topic count 2^31-1 (the 19-byte frame of pitfall 11).
    let frame = request_frame(35, 1, false, &[0x7f, 0xff, 0xff, 0xff, 0]);
    assert!(matches!(
        decode_request(frame),
        Err(DecodeError::Malformed(_))
    ));
    // Count 2^31 as a compact array (flexible v2): uvarint 0x80000001.
    let frame = request_frame(35, 2, true, &[0x81, 0x80, 0x80, 0x80, 0x08]);
    assert!(matches!(
        decode_request(frame),
        Err(DecodeError::Malformed(_))
    ));
    // Metadata v1 topics count -2.
    let frame = request_frame(3, 1, false, &[0xff, 0xff, 0xff, 0xfe]);
    assert!(matches!(
        decode_request(frame),
        Err(DecodeError::Malformed(_))
    ));
    // Metadata v0 topics null is not allowed (nullable from v1).
    let frame = request_frame(3, 0, false, &[0xff, 0xff, 0xff, 0xff]);
    assert!(matches!(
        decode_request(frame),
        Err(DecodeError::Malformed(_))
    ));
    let frame = request_frame(3, 1, false, &[0xff, 0xff, 0xff, 0xff]);
    let (_, body) = decode_request(frame).unwrap();
    assert_eq!(
        body,
        RequestBody::Metadata(MetadataRequest {
            topics: None,
            ..Default::default()
        })
    );
    // Huge string length in a Produce v3 transactional id.
    let frame = request_frame(0, 3, false, &[0x7f, 0xff, b'a']);
    assert!(matches!(
        decode_request(frame),
        Err(DecodeError::Malformed(_))
    ));
    // Huge records length.
    let mut body = BytesMut::new();
    body.put_i16(-1); // transactional id
    body.put_i16(1); // acks
    body.put_i32(1000); // timeout
    body.put_i32(1); // 1 topic
    body.put_i16(1);
    body.put_u8(b't');
    body.put_i32(1); // 1 partition
    body.put_i32(0);
    body.put_i32(0x7fff_fff0); // records length
    let frame = request_frame(0, 3, false, &body);
    assert!(matches!(
        decode_request(frame),
        Err(DecodeError::Malformed(_))
    ));
}

#[test]
fn random_bytes_never_panic() {
    let mut s = Seq::new(seed());
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    for &api in IMPLEMENTED_APIS {
        let (lo, hi) = supported_versions(api).unwrap();
        for v in lo..=hi {
            let req = sample_request(api, v, &mut s).unwrap();
            let header = RequestHeader {
                request_api_key: api as i16,
                request_api_version: v,
                correlation_id: 1,
                client_id: None,
                unknown_tagged_fields: Vec::new(),
            };
            let frame = encode_request(&header, &req).unwrap().slice(4..);
            for _ in 0..20 {
                let mut m = frame.to_vec();
                for _ in 0..3 {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    if m.len() > 8 {
                        let i = 8 + (state as usize) % (m.len() - 8);
                        m[i] = (state >> 32) as u8;
                    }
                }
                let _ = decode_request(Bytes::from(m));
            }
        }
    }
}

#[test]
fn supported_versions_match_the_newest_specs() {
    let expect = [
        (ApiKey::Produce, (3, 13)),
        (ApiKey::Fetch, (4, 18)),
        (ApiKey::ListOffsets, (1, 11)),
        (ApiKey::Metadata, (0, 13)),
        (ApiKey::FindCoordinator, (0, 6)),
        (ApiKey::ApiVersions, (0, 5)),
        (ApiKey::CreateTopics, (2, 7)),
        (ApiKey::DeleteTopics, (1, 6)),
        (ApiKey::InitProducerId, (0, 5)),
        (ApiKey::DescribeConfigs, (1, 4)),
        (ApiKey::OffsetCommit, (2, 10)),
        (ApiKey::OffsetFetch, (1, 10)),
        (ApiKey::DeleteGroups, (0, 3)),
        (ApiKey::AlterReplicaLogDirs, (1, 2)),
        (ApiKey::DescribeLogDirs, (1, 5)),
        (ApiKey::JoinGroup, (0, 9)),
    ];
    for (k, r) in expect {
        assert_eq!(supported_versions(k), Some(r), "{k}");
    }
    assert_eq!(supported_versions(ApiKey::Vote), None);
    assert_eq!(supported_versions(ApiKey::TxnOffsetCommit), Some((0, 6)));
    assert_eq!(
        supported_versions(ApiKey::DescribeTopicPartitions),
        Some((0, 0))
    );
}

#[test]
fn bodies_convert_from_messages() {
    let b: ResponseBody = HeartbeatResponse {
        error_code: 27,
        ..Default::default()
    }
    .into();
    assert_eq!(b.api_key(), ApiKey::Heartbeat);
    let q: RequestBody = FetchRequest::default().into();
    assert_eq!(q.api_key(), ApiKey::Fetch);
    // A body for another API is refused.
    assert_eq!(
        encode_response(1, ApiKey::Fetch, 4, &b).unwrap_err(),
        EncodeError::BodyMismatch(1)
    );
    // Versions outside the supported range are refused when encoding.
    assert!(matches!(
        encode_response(1, ApiKey::Heartbeat, 99, &b),
        Err(EncodeError::UnsupportedVersion { .. })
    ));
}

#[test]
fn fetch_response_with_file_records_is_sendfile_ready() {
    use crate::record::{FileSlice, Records};
    use std::io::Write;
    let mut f = tempfile::tempfile().unwrap();
    let data: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
    f.write_all(&data).unwrap();
    let file = std::sync::Arc::new(f);
    let part = |idx: i32, records: Option<Records>| fetch_response::PartitionData {
        partition_index: idx,
        high_watermark: 10,
        records,
        ..Default::default()
    };
    let body = FetchResponse {
        responses: vec![fetch_response::FetchableTopicResponse {
            topic: "t".into(),
            partitions: vec![
                part(
                    0,
                    Some(Records::File(FileSlice {
                        file: file.clone(),
                        position: 100,
                        len: 4000,
                    })),
                ),
                part(1, Some(Records::default())),
                part(2, Some(Records::Memory(Bytes::from(vec![9u8; 300])))),
            ],
            ..Default::default()
        }],
        ..Default::default()
    };
    for v in [4, 11, 12, 16] {
        let chunks =
            encode_response(5, ApiKey::Fetch, v, &ResponseBody::Fetch(body.clone())).unwrap();
        let files: Vec<_> = chunks
            .iter()
            .filter(|c| matches!(c, Chunk::File(_)))
            .collect();
        assert_eq!(files.len(), 1, "v{v}");
        let total: usize = chunks.iter().map(Chunk::len).sum();
        let bytes = chunks_to_bytes(&chunks).unwrap();
        assert_eq!(bytes.len(), total);
        assert_eq!(
            i32::from_be_bytes(bytes[..4].try_into().unwrap()) as usize,
            total - 4
        );
        let (h, back) = decode_response(ApiKey::Fetch, v, bytes.slice(4..)).unwrap();
        assert_eq!(h.correlation_id, 5);
        let ResponseBody::Fetch(back) = back else {
            panic!()
        };
        let parts = &back.responses[0].partitions;
        assert_eq!(
            parts[0].records,
            Some(Records::Memory(Bytes::copy_from_slice(&data[100..4100])))
        );
        // Empty partition: zero-length records, not null (pitfall 6).
        assert_eq!(parts[1].records, Some(Records::Memory(Bytes::new())));
        assert_eq!(
            parts[2].records,
            Some(Records::Memory(Bytes::from(vec![9u8; 300])))
        );
    }
}
