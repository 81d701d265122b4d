//! librdkafka through the `rdkafka` crate (built from its bundled source) against the real `runnel server`:
//! 100,000 records per compression codec — keys, values and headers, with null and empty distinguished —
//! produced with an idempotent acks=all producer and read back byte-identical and in order.

mod common;

use std::time::{Duration, Instant};

use common::Broker;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Header, Headers, Message, OwnedHeaders};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{Offset, TopicPartitionList};

const RECORDS: usize = 100_000;
/// (key, value, headers) of one test record; `None` is null.
type TestRecord = (
    Option<Vec<u8>>,
    Option<Vec<u8>>,
    Vec<(String, Option<Vec<u8>>)>,
);

const WAIT: Duration = Duration::from_secs(120);

/// The i-th record: (key, value, headers). Every 7th key is null and every 11th empty; every 13th value is
/// null and every 17th empty; headers carry a null and an empty value.
fn record(i: usize) -> TestRecord {
    let key = match i {
        _ if i.is_multiple_of(7) => None,
        _ if i.is_multiple_of(11) => Some(vec![]),
        _ => Some(format!("key-{}", i % 1000).into_bytes()),
    };
    let value = match i {
        _ if i.is_multiple_of(13) => None,
        _ if i.is_multiple_of(17) => Some(vec![]),
        _ => Some(format!("value-{i}-{}", "x".repeat(i % 40)).into_bytes()),
    };
    let headers = vec![
        ("n".to_string(), Some(i.to_string().into_bytes())),
        ("null".to_string(), None),
        ("empty".to_string(), Some(vec![])),
    ];
    (key, value, headers)
}

fn round_trip(codec: &str) {
    let broker = Broker::start(&[]);
    let topic = format!("rdkafka-{codec}");
    let producer: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", broker.addr())
        .set("compression.codec", codec)
        .set("enable.idempotence", "true")
        .set("acks", "all")
        .set("linger.ms", "5")
        .set("queue.buffering.max.messages", "200000")
        .create()
        .expect("producer");
    for i in 0..RECORDS {
        let (key, value, headers) = record(i);
        let mut h = OwnedHeaders::new();
        for (k, v) in &headers {
            h = h.insert(Header {
                key: k,
                value: v.as_deref(),
            });
        }
        let mut rec: BaseRecord<'_, [u8], [u8]> = BaseRecord::to(&topic).partition(0).headers(h);
        if let Some(k) = key.as_deref() {
            rec = rec.key(k);
        }
        if let Some(v) = value.as_deref() {
            rec = rec.payload(v);
        }
        let mut rec = rec;
        loop {
            match producer.send(rec) {
                Ok(()) => break,
                Err((e, r)) => {
                    assert!(
                        matches!(
                            e.rdkafka_error_code(),
                            Some(rdkafka::types::RDKafkaErrorCode::QueueFull)
                        ),
                        "produce {i} failed: {e}"
                    );
                    producer.poll(Duration::from_millis(10));
                    rec = r;
                }
            }
        }
    }
    producer.flush(WAIT).expect("flush");
    assert_eq!(producer.in_flight_count(), 0);

    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", broker.addr())
        .set("group.id", format!("rdkafka-test-{codec}"))
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(&topic, 0, Offset::Beginning)
        .unwrap();
    consumer.assign(&tpl).unwrap();
    let deadline = Instant::now() + WAIT;
    let mut next = 0usize;
    while next < RECORDS {
        assert!(
            Instant::now() < deadline,
            "{codec}: only {next} of {RECORDS} records consumed within {WAIT:?}"
        );
        let Some(msg) = consumer.poll(Duration::from_millis(500)) else {
            continue;
        };
        let msg = msg.unwrap_or_else(|e| panic!("{codec}: consume error at {next}: {e}"));
        assert_eq!(
            msg.offset(),
            next as i64,
            "{codec}: offsets must be contiguous"
        );
        let (key, value, headers) = record(next);
        assert_eq!(msg.key(), key.as_deref(), "{codec}: key of record {next}");
        assert_eq!(
            msg.payload(),
            value.as_deref(),
            "{codec}: value of record {next}"
        );
        let got: Vec<(String, Option<Vec<u8>>)> = msg
            .headers()
            .map(|hs| {
                hs.iter()
                    .map(|h| (h.key.to_string(), h.value.map(<[u8]>::to_vec)))
                    .collect()
            })
            .unwrap_or_default();
        assert_eq!(got, headers, "{codec}: headers of record {next}");
        next += 1;
    }
}

#[test]
fn rdkafka_round_trip_none() {
    round_trip("none");
}

#[test]
fn rdkafka_round_trip_gzip() {
    round_trip("gzip");
}

#[test]
fn rdkafka_round_trip_snappy() {
    round_trip("snappy");
}

#[test]
fn rdkafka_round_trip_lz4() {
    round_trip("lz4");
}

#[test]
fn rdkafka_round_trip_zstd() {
    round_trip("zstd");
}
