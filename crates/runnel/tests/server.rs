//! Lifecycle tests of the real `runnel` binary: configuration errors, clean shutdown, and framing limits.
//! Each test starts its own process on a free port of 127.0.0.1 with a temporary data dir and kills it by
//! PID when done.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;

use protocol::messages::{ApiVersionsRequest, MetadataRequest};
use protocol::{ApiKey, RequestBody, ResponseBody};

mod common;
use common::{round_trip, Broker};

fn api_versions(stream: &mut TcpStream) -> ResponseBody {
    round_trip(
        stream,
        ApiKey::ApiVersions,
        3,
        RequestBody::ApiVersions(ApiVersionsRequest {
            client_software_name: "runnel-test".into(),
            client_software_version: "1.0".into(),
            ..Default::default()
        }),
    )
}

#[test]
fn unknown_config_key_is_a_startup_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_runnel"))
        .args(["server", "--data-dir"])
        .arg(dir.path())
        .args(["--set", "log.retention.hourz=5"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("log.retention.hourz"), "stderr: {err}");
}

#[test]
fn config_file_is_read_and_set_overrides_it() {
    let dir = tempfile::tempdir().unwrap();
    let props = dir.path().join("server.properties");
    std::fs::write(&props, "num.partitions=3\nauto.create.topics.enable=true\n").unwrap();
    let props = props.display().to_string();
    let b = Broker::start(&["--config", &props, "--set", "num.partitions=5"]);
    let mut s = b.connect();
    let resp = round_trip(
        &mut s,
        ApiKey::Metadata,
        12,
        RequestBody::Metadata(MetadataRequest {
            topics: Some(vec![
                protocol::messages::metadata_request::MetadataRequestTopic {
                    name: Some("auto".into()),
                    ..Default::default()
                },
            ]),
            allow_auto_topic_creation: true,
            ..Default::default()
        }),
    );
    let ResponseBody::Metadata(m) = resp else {
        panic!("not metadata")
    };
    assert_eq!(m.topics.len(), 1);
    assert_eq!(m.topics[0].error_code, 0);
    assert_eq!(m.topics[0].partitions.len(), 5);
}

#[test]
fn sigterm_shuts_down_cleanly_and_data_survives() {
    let b = Broker::start(&[]);
    let mut s = b.connect();
    let ResponseBody::ApiVersions(v) = api_versions(&mut s) else {
        panic!("not api versions")
    };
    assert_eq!(v.error_code, 0);
    round_trip(
        &mut s,
        ApiKey::Metadata,
        12,
        RequestBody::Metadata(MetadataRequest {
            topics: Some(vec![
                protocol::messages::metadata_request::MetadataRequestTopic {
                    name: Some("kept".into()),
                    ..Default::default()
                },
            ]),
            allow_auto_topic_creation: true,
            ..Default::default()
        }),
    );
    let (status, dir) = b.terminate();
    assert!(status.success(), "exit status after SIGTERM: {status}");
    assert!(
        dir.path()
            .join("data")
            .join(".kafka_cleanshutdown")
            .exists(),
        "clean-shutdown marker missing"
    );
    let b = Broker::start_in(dir, &[]);
    let mut s = b.connect();
    let ResponseBody::Metadata(m) = round_trip(
        &mut s,
        ApiKey::Metadata,
        12,
        RequestBody::Metadata(MetadataRequest {
            topics: None,
            ..Default::default()
        }),
    ) else {
        panic!("not metadata")
    };
    assert!(m.topics.iter().any(|t| t.name.as_deref() == Some("kept")));
}

#[test]
fn oversized_and_garbage_frames_close_only_their_connection() {
    let b = Broker::start(&["--set", "socket.request.max.bytes=1000"]);
    let mut healthy = b.connect();
    for garbage in [
        &b"GET / HTTP/1.1\r\n\r\n"[..],
        &[0, 0, 0, 0][..],
        &[0xff, 0xff, 0xff, 0xf0][..],
        &[0, 0, 0x03, 0xe9][..], // 1001 > socket.request.max.bytes
        &[0, 0, 0, 8, 0x7f, 0x00, 0, 0, 0, 0, 0, 1][..], // unknown api key 32512
    ] {
        let mut s = b.connect();
        s.write_all(garbage).unwrap();
        let mut buf = [0u8; 16];
        let n = s.read(&mut buf).unwrap_or(0);
        assert_eq!(
            n, 0,
            "expected the broker to close the connection for {garbage:?}"
        );
    }
    let ResponseBody::ApiVersions(v) = api_versions(&mut healthy) else {
        panic!()
    };
    assert_eq!(v.error_code, 0);
}
