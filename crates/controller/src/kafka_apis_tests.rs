//! The controller listener's Kafka dispatch without a running controller: headers, versions and the
//! ApiVersions round trip (the served requests against a real controller are in
//! `tests/kafka_listener.rs`).

use super::*;
use protocol::messages::ApiVersionsRequest;

/// A request frame (size prefix stripped, as the listener hands it over).
fn request(key: ApiKey, version: i16, body: RequestBody) -> Bytes {
    let header = RequestHeader {
        request_api_key: key as i16,
        request_api_version: version,
        correlation_id: 77,
        client_id: Some("test".into()),
        ..Default::default()
    };
    protocol::encode_request(&header, &body).unwrap().slice(4..)
}

fn api_versions_request(name: &str) -> RequestBody {
    RequestBody::ApiVersions(ApiVersionsRequest {
        client_software_name: name.into(),
        client_software_version: "4.4.0".into(),
        ..Default::default()
    })
}

/// Decodes a response frame (size prefix included) to `key` in `version`.
fn decode(key: ApiKey, version: i16, frame: &[u8]) -> (i32, ResponseBody) {
    let len = u32::from_be_bytes(frame[..4].try_into().unwrap()) as usize;
    assert_eq!(len, frame.len() - 4, "size prefix");
    let (header, body) =
        protocol::decode_response(key, version, Bytes::copy_from_slice(&frame[4..])).unwrap();
    (header.correlation_id, body)
}

#[test]
fn api_versions_round_trips_in_every_version_with_the_controller_apis() {
    for version in 0..=4 {
        let frame = request(
            ApiKey::ApiVersions,
            version,
            api_versions_request("apache-kafka-java"),
        );
        let out = answer_api_versions(frame).unwrap();
        let (correlation_id, body) = decode(ApiKey::ApiVersions, version, &out);
        assert_eq!(correlation_id, 77);
        let ResponseBody::ApiVersions(r) = body else {
            panic!("not ApiVersions")
        };
        assert_eq!(r.error_code, 0, "v{version}");
        let keys: Vec<_> = r
            .api_keys
            .iter()
            .map(|k| (k.api_key, k.min_version, k.max_version))
            .collect();
        assert_eq!(
            keys,
            vec![
                (17, 0, 1),
                (18, 0, 4),
                (36, 0, 2),
                (55, 0, 2),
                (56, 2, 3),
                (60, 0, 2),
                (62, 0, 4),
                (63, 0, 2),
                (80, 0, 1),
                (81, 0, 0)
            ],
            "v{version}"
        );
    }
}

#[test]
fn api_versions_above_ours_gets_kafkas_v0_answer_and_bad_software_names_are_invalid() {
    let mut frame = request(ApiKey::ApiVersions, 4, api_versions_request("x")).to_vec();
    frame[2..4].copy_from_slice(&9i16.to_be_bytes());
    let out = answer_api_versions(Bytes::from(frame)).unwrap();
    let (_, body) = decode(ApiKey::ApiVersions, 0, &out);
    let ResponseBody::ApiVersions(r) = body else {
        panic!("not ApiVersions")
    };
    assert_eq!(r.error_code, ErrorCode::UNSUPPORTED_VERSION.0);
    assert!(r
        .api_keys
        .iter()
        .any(|k| k.api_key == 18 && k.max_version == 4));

    for bad in ["", "-kafka", "kafka-", "kafka java"] {
        let out = answer_api_versions(request(ApiKey::ApiVersions, 3, api_versions_request(bad)))
            .unwrap();
        let (_, body) = decode(ApiKey::ApiVersions, 3, &out);
        let ResponseBody::ApiVersions(r) = body else {
            panic!("not ApiVersions")
        };
        assert_eq!(r.error_code, ErrorCode::INVALID_REQUEST.0, "{bad:?}");
    }
    // Below v3 the names are not sent, nothing to judge.
    let out =
        answer_api_versions(request(ApiKey::ApiVersions, 2, api_versions_request(""))).unwrap();
    let (_, ResponseBody::ApiVersions(r)) = decode(ApiKey::ApiVersions, 2, &out) else {
        panic!("not ApiVersions")
    };
    assert_eq!(r.error_code, 0);
}

#[test]
fn headers_that_cannot_be_served_close_the_connection() {
    let closes = |frame: &[u8]| match check_header(frame) {
        Err(Early::Close(reason)) => reason,
        Err(Early::Respond(_)) => panic!("answered {frame:?}"),
        Ok(h) => panic!("served {frame:?} as {h:?}"),
    };
    // Shorter than a header.
    assert!(closes(&[0, 18, 0]).contains("shorter than its header"));
    // A key Kafka does not define.
    let r = closes(&[0x00, 0xEE, 0, 0, 0, 0, 0, 1]);
    assert!(r.contains("unknown api key 238"), "{r}");
    // Keys Kafka defines that the controller does not serve (Produce, Metadata, Fetch).
    for key in [0u8, 1, 3] {
        let r = closes(&[0, key, 0, 9, 0, 0, 0, 1]);
        assert!(r.contains("not served on the controller listener"), "{r}");
    }
    // DescribeQuorum beyond v2.
    let r = closes(&[0, 55, 0, 3, 0, 0, 0, 1]);
    assert!(r.contains("outside the served range 0..=2"), "{r}");
    // Served: DescribeCluster v1 with its correlation id.
    assert!(matches!(
        check_header(&[0, 60, 0, 1, 0, 0, 1, 0]),
        Ok((ApiKey::DescribeCluster, 1, 256))
    ));
}

#[test]
fn a_garbled_body_is_refused_without_a_panic() {
    // A valid DescribeCluster v1 header (flexible: header v2) followed by a truncated body, and random
    // tails after an ApiVersions header: errors, never a panic.
    let mut frame = request(
        ApiKey::ApiVersions,
        3,
        api_versions_request("apache-kafka-java"),
    )
    .to_vec();
    frame.truncate(frame.len() - 3);
    assert!(answer_api_versions(Bytes::from(frame)).is_err());
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    for len in 0..64 {
        let mut frame = vec![0, 18, 0, 3, 0, 0, 0, 1];
        for _ in 0..len {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            frame.push(seed as u8);
        }
        let _ = answer_api_versions(Bytes::from(frame));
    }
    // Another API through the ApiVersions entry point is refused.
    let other = request(
        ApiKey::DescribeCluster,
        1,
        RequestBody::DescribeCluster(Default::default()),
    );
    let e = answer_api_versions(other).unwrap_err();
    assert!(e.contains("is not ApiVersions"), "{e}");
}

#[test]
fn served_ranges_are_clipped_to_the_codec() {
    for (key, lo, hi) in CONTROLLER_APIS {
        let (clo, chi) = protocol::supported_versions(*key).unwrap();
        assert_eq!(served_range(*key), Some(((*lo).max(clo), (*hi).min(chi))));
    }
    assert_eq!(served_range(ApiKey::Produce), None);
}
