//! Criterion micro-benchmarks of the broker's hot paths, through the `protocol` and `storage`
//! crates' public APIs: Produce request decode, RecordBatch validation (CRC-32C), append to a log
//! segment with index maintenance, offset lookup (Log::read: offset index, then batch headers), and
//! Fetch response encoding.
//!
//! `cargo bench -p runnel --bench hot_paths` (add `-- --quick` for a short run). Figures are
//! per-iteration times and, where set, bytes/s of record data.

use std::hint::black_box;

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use protocol::messages::{fetch_response, produce_request, FetchResponse, ProduceRequest};
use protocol::record::{Compression, RecordBatch, RecordBatchBuilder, Records};
use protocol::{
    decode_request, encode_request, encode_response, ApiKey, RequestBody, RequestHeader,
    ResponseBody,
};
use storage::{Log, LogConfig};
use types::{LeaderEpoch, Offset};

/// A RecordBatch of `n` keyless records with `size`-byte values (random upper-case letters).
fn batch(n: usize, size: usize, compression: Compression) -> Bytes {
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut b = RecordBatchBuilder::new(compression);
    for _ in 0..n {
        let v: Vec<u8> = (0..size)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                b'A' + (x % 26) as u8
            })
            .collect();
        b.append(1_700_000_000_000, None, Some(Bytes::from(v)), Vec::new());
    }
    b.build().expect("building a batch")
}

fn produce_frame(records: &Bytes) -> Bytes {
    let body = ProduceRequest {
        acks: 1,
        timeout_ms: 30_000,
        topic_data: vec![produce_request::TopicProduceData {
            name: "bench".into(),
            partition_data: vec![produce_request::PartitionProduceData {
                index: 0,
                records: Some(Records::Memory(records.clone())),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let header = RequestHeader {
        request_api_key: ApiKey::Produce as i16,
        request_api_version: 9,
        correlation_id: 7,
        client_id: Some("bench".into()),
        unknown_tagged_fields: Vec::new(),
    };
    let frame = encode_request(&header, &RequestBody::Produce(body)).expect("encoding");
    frame.slice(4..) // without the size prefix
}

fn decode(c: &mut Criterion) {
    let mut g = c.benchmark_group("produce_request_decode");
    for (n, size) in [(100, 100), (1000, 1024)] {
        let records = batch(n, size, Compression::None);
        let frame = produce_frame(&records);
        g.throughput(Throughput::Bytes(frame.len() as u64));
        g.bench_function(format!("{n}x{size}B"), |b| {
            b.iter(|| decode_request(black_box(frame.clone())).expect("decoding"))
        });
    }
    g.finish();
}

fn validate(c: &mut Criterion) {
    let mut g = c.benchmark_group("record_batch_validate");
    for (n, size, codec, name) in [
        (1000, 100, Compression::None, "1000x100B-none"),
        (1000, 1024, Compression::None, "1000x1KiB-none"),
        (1000, 100, Compression::Lz4, "1000x100B-lz4"),
    ] {
        let bytes = batch(n, size, codec);
        g.throughput(Throughput::Bytes((n * size) as u64));
        g.bench_function(name, |b| {
            b.iter(|| {
                let rb = RecordBatch::new(black_box(bytes.clone())).expect("header");
                rb.validate().expect("valid")
            })
        });
    }
    g.finish();
}

fn open_log(dir: &std::path::Path) -> Log {
    let config = LogConfig {
        segment_bytes: 64 << 20,
        ..LogConfig::default()
    };
    Log::open(
        dir,
        config,
        uuid::Uuid::nil(),
        false,
        Offset::ZERO,
        storage::now_ms(),
    )
    .expect("opening the log")
}

fn append(c: &mut Criterion) {
    let mut g = c.benchmark_group("log_append");
    for (n, size) in [(100, 100), (16, 1024)] {
        let records = batch(n, size, Compression::None);
        let dir = tempfile::tempdir().expect("tempdir");
        let mut log = open_log(dir.path());
        g.throughput(Throughput::Bytes(records.len() as u64));
        g.bench_function(format!("{n}x{size}B"), |b| {
            b.iter_batched(
                || records.clone(),
                |r| {
                    log.append_as_leader(r, LeaderEpoch(0), 1_700_000_000_000)
                        .expect("append");
                    // Bound the disk use: start over past 256 MiB.
                    if log.size_in_bytes() > 256 << 20 {
                        let leo = log.log_end_offset();
                        log.truncate_fully_and_start_at(leo).expect("truncate");
                    }
                },
                BatchSize::SmallInput,
            )
        });
    }
    g.finish();
}

fn lookup(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = open_log(dir.path());
    let records = batch(100, 100, Compression::None);
    for _ in 0..20_000 {
        log.append_as_leader(records.clone(), LeaderEpoch(0), 1_700_000_000_000)
            .expect("append");
    }
    let leo = log.log_end_offset();
    let mut x: u64 = 88_172_645_463_325_252;
    let mut g = c.benchmark_group("offset_lookup");
    // max_bytes 1 with min_one_batch: the lookup alone (index, then headers up to the batch);
    // 1 MiB: also the header walk that sizes a full Fetch response.
    for (name, max_bytes) in [
        ("2M_records_one_batch", 1usize),
        ("2M_records_1MiB", 1 << 20),
    ] {
        g.bench_function(name, |b| {
            b.iter(|| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let offset = Offset((x % leo.get() as u64) as i64);
                log.read(black_box(offset), max_bytes, leo, true)
                    .expect("read")
            })
        });
    }
    g.finish();
}

fn fetch_encode(c: &mut Criterion) {
    let mut g = c.benchmark_group("fetch_response_encode");
    let records = batch(1000, 1024, Compression::None);
    for parts in [1, 8] {
        let body = FetchResponse {
            responses: vec![fetch_response::FetchableTopicResponse {
                topic: "bench".into(),
                partitions: (0..parts)
                    .map(|p| fetch_response::PartitionData {
                        partition_index: p,
                        high_watermark: 1_000_000,
                        records: Some(Records::Memory(records.clone())),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let body = ResponseBody::Fetch(body);
        g.throughput(Throughput::Bytes((records.len() * parts as usize) as u64));
        g.bench_function(format!("{parts}x1MB-v16"), |b| {
            b.iter(|| encode_response(7, ApiKey::Fetch, 16, black_box(&body)).expect("encode"))
        });
    }
    g.finish();
}

criterion_group!(benches, decode, validate, append, lookup, fetch_encode);
criterion_main!(benches);
