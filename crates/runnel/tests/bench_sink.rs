//! `runnel bench sink` as a process: the port line, pipelined Produce answers in order with running base
//! offsets, ListOffsets, Fetch from the synthetic log (aligned to its batches, CRCs valid, empty at the end)
//! and exit 0 on SIGTERM.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use protocol::messages::metadata_request::MetadataRequestTopic;
use protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use protocol::messages::{
    ApiVersionsRequest, FetchRequest, ListOffsetsRequest, MetadataRequest, ProduceRequest,
};
use protocol::record::{batches, Compression, RecordBatchBuilder, Records};
use protocol::{decode_response, encode_request, ApiKey, RequestBody, RequestHeader, ResponseBody};

struct Sink {
    child: Child,
    addr: String,
}

impl Sink {
    fn start(args: &[&str]) -> Sink {
        let mut child = Command::new(env!("CARGO_BIN_EXE_runnel"))
            .args(["bench", "sink"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn runnel bench sink");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim()
            .strip_prefix("runnel bench sink listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_string();
        Sink { child, addr }
    }

    fn connect(&self) -> TcpStream {
        let s = TcpStream::connect(&self.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        s
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn frame(version: i16, correlation_id: i32, body: RequestBody) -> Bytes {
    let header = RequestHeader {
        request_api_key: body.api_key() as i16,
        request_api_version: version,
        correlation_id,
        client_id: Some("test".into()),
        unknown_tagged_fields: vec![],
    };
    encode_request(&header, &body).unwrap()
}

fn read_response(
    s: &mut TcpStream,
    api: ApiKey,
    version: i16,
    correlation_id: i32,
) -> ResponseBody {
    let mut size = [0u8; 4];
    s.read_exact(&mut size).unwrap();
    let mut buf = vec![0u8; i32::from_be_bytes(size) as usize];
    s.read_exact(&mut buf).unwrap();
    let (h, body) = decode_response(api, version, Bytes::from(buf)).unwrap();
    assert_eq!(h.correlation_id, correlation_id);
    body
}

fn call(s: &mut TcpStream, version: i16, correlation_id: i32, body: RequestBody) -> ResponseBody {
    let api = body.api_key();
    s.write_all(&frame(version, correlation_id, body)).unwrap();
    read_response(s, api, version, correlation_id)
}

fn batch(count: usize) -> Bytes {
    let mut b = RecordBatchBuilder::new(Compression::None);
    for _ in 0..count {
        b.append(0, None, Some(Bytes::from_static(b"v")), vec![]);
    }
    b.build().unwrap()
}

fn produce(records: Bytes, partition: i32) -> RequestBody {
    RequestBody::Produce(ProduceRequest {
        acks: 1,
        timeout_ms: 1000,
        topic_data: vec![TopicProduceData {
            name: "a".into(),
            partition_data: vec![PartitionProduceData {
                index: partition,
                records: Some(Records::Memory(records)),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    })
}

fn fetch(offset: i64, max_wait_ms: i32) -> RequestBody {
    RequestBody::Fetch(FetchRequest {
        replica_id: -1,
        max_wait_ms,
        min_bytes: 1,
        max_bytes: 50 << 20,
        session_epoch: -1,
        topics: vec![FetchTopic {
            topic: "a".into(),
            partitions: vec![FetchPartition {
                partition: 1,
                fetch_offset: offset,
                partition_max_bytes: 10 << 20,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    })
}

#[test]
fn sink_serves_produce_list_offsets_and_fetch() {
    let mut sink = Sink::start(&[
        "--partitions",
        "2",
        "--fetch-records",
        "2500",
        "--record-size",
        "10",
    ]);
    let mut s = sink.connect();

    let ResponseBody::ApiVersions(v) = call(
        &mut s,
        3,
        1,
        RequestBody::ApiVersions(ApiVersionsRequest {
            client_software_name: "test".into(),
            client_software_version: "1".into(),
            ..Default::default()
        }),
    ) else {
        panic!("not ApiVersions")
    };
    assert_eq!(v.error_code, 0);
    let keys: Vec<i16> = v.api_keys.iter().map(|k| k.api_key).collect();
    assert_eq!(keys, vec![0, 1, 2, 3, 18, 19, 22]);

    let ResponseBody::Metadata(m) = call(
        &mut s,
        12,
        2,
        RequestBody::Metadata(MetadataRequest {
            topics: Some(vec![MetadataRequestTopic {
                name: Some("a".into()),
                ..Default::default()
            }]),
            ..Default::default()
        }),
    ) else {
        panic!("not Metadata")
    };
    assert_eq!(m.brokers.len(), 1);
    assert_eq!(m.brokers[0].node_id, 1);
    assert_eq!(m.topics.len(), 1);
    assert_eq!(m.topics[0].partitions.len(), 2);
    assert!(m.topics[0]
        .partitions
        .iter()
        .all(|p| p.leader_id == 1 && p.leader_epoch == 0));

    // Two batches in one request, then a second request, pipelined: answered in order, base offsets run on.
    let mut two = batch(3).to_vec();
    two.extend_from_slice(&batch(5));
    let mut out = frame(9, 10, produce(Bytes::from(two), 0)).to_vec();
    out.extend_from_slice(&frame(9, 11, produce(batch(4), 0)));
    s.write_all(&out).unwrap();
    for (cid, base) in [(10, 0), (11, 8)] {
        let ResponseBody::Produce(p) = read_response(&mut s, ApiKey::Produce, 9, cid) else {
            panic!("not Produce")
        };
        let r = &p.responses[0].partition_responses[0];
        assert_eq!(
            (r.error_code, r.base_offset, r.log_append_time_ms),
            (0, base, -1)
        );
    }

    let ResponseBody::ListOffsets(l) = call(
        &mut s,
        7,
        3,
        RequestBody::ListOffsets(ListOffsetsRequest {
            replica_id: -1,
            topics: vec![ListOffsetsTopic {
                name: "a".into(),
                partitions: [-2i64, -1]
                    .iter()
                    .enumerate()
                    .map(|(i, ts)| ListOffsetsPartition {
                        partition_index: i as i32,
                        timestamp: *ts,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }],
            ..Default::default()
        }),
    ) else {
        panic!("not ListOffsets")
    };
    let offsets: Vec<i64> = l.topics[0].partitions.iter().map(|p| p.offset).collect();
    assert_eq!(offsets, vec![0, 2500]);

    // From the middle of a batch: served from its start; the tail batch stops at the high watermark.
    let ResponseBody::Fetch(f) = call(&mut s, 12, 4, fetch(1500, 500)) else {
        panic!("not Fetch")
    };
    let p = &f.responses[0].partitions[0];
    assert_eq!((p.error_code, p.high_watermark), (0, 2500));
    let Some(Records::Memory(records)) = &p.records else {
        panic!("no records")
    };
    let mut seen = Vec::new();
    for b in batches(records) {
        let b = b.unwrap();
        b.validate().unwrap();
        assert_eq!(
            b.records().unwrap()[0].value.as_deref(),
            Some(&b"xxxxxxxxxx"[..])
        );
        seen.push((b.base_offset(), b.next_offset()));
    }
    assert_eq!(seen, vec![(1000, 2000), (2000, 2500)]);

    // At the end: empty, after waiting (bounded by) max_wait_ms.
    let start = Instant::now();
    let ResponseBody::Fetch(f) = call(&mut s, 12, 5, fetch(2500, 200)) else {
        panic!("not Fetch")
    };
    assert!(start.elapsed() >= Duration::from_millis(150));
    let p = &f.responses[0].partitions[0];
    assert_eq!(p.error_code, 0);
    assert!(p.records.as_ref().is_none_or(|r| r.is_empty()));

    // An unsupported API closes the connection.
    let mut s2 = sink.connect();
    s2.write_all(&[0, 0, 0, 8, 0, 12, 0, 0, 0, 0, 0, 1])
        .unwrap();
    let mut buf = [0u8; 1];
    assert_eq!(s2.read(&mut buf).unwrap_or(0), 0);

    // SIGTERM: exit 0.
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(
        unsafe { libc::kill(sink.child.id() as i32, libc::SIGTERM) },
        0
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(st) = sink.child.try_wait().unwrap() {
            break st;
        }
        assert!(Instant::now() < deadline, "sink did not exit on SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
}
