//! Unit tests of the KIP-714 core, time injected as `now_ms`.

use std::collections::BTreeMap;

use prost::Message;
use protocol::record::{compress, Compression};
use uuid::Uuid;

use super::otlp::{self, AnyValue, KeyValue, Metric, MetricsData, NumberDataPoint};
use super::subscription::{self, SubscriptionError};
use super::*;

const SECOND: i64 = 1000;

fn config() -> TelemetryConfig {
    TelemetryConfig {
        max_bytes: 1024,
        series_max: 100,
        default_metrics: Vec::new(),
        default_interval_ms: 300_000,
    }
}

fn set(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A manager with subscription `sub` = producer metrics every second.
fn manager() -> ClientMetricsManager {
    let mut m = ClientMetricsManager::new(config());
    let configs = set(&[
        ("metrics", "org.apache.kafka.producer."),
        ("interval.ms", "1000"),
    ]);
    m.set_subscription("sub", &configs).unwrap();
    m
}

fn info(client_id: &str) -> ClientInfo {
    ClientInfo {
        client_id: client_id.into(),
        software_name: "apache-kafka-java".into(),
        software_version: "4.4.0".into(),
        source_address: "127.0.0.1".into(),
        source_port: "5000".into(),
        ..Default::default()
    }
}

/// Ids 100, 101, ... in order.
fn ids() -> impl FnMut() -> Uuid {
    let mut next = 100u128;
    move || {
        next += 1;
        Uuid::from_u128(next - 1)
    }
}

fn get(
    m: &mut ClientMetricsManager,
    now: i64,
    id: Uuid,
) -> Result<SubscriptionAnswer, TelemetryError> {
    m.get_subscriptions(now, id, info("p1"), ids())
}

/// One gauge `org.apache.kafka.producer.record.queue.time.avg` = `value` with attribute `node_id=1`.
fn payload(value: f64) -> Vec<u8> {
    let point = NumberDataPoint {
        attributes: vec![KeyValue {
            key: "node.id".into(),
            value: Some(AnyValue {
                string_value: Some("1".into()),
                ..Default::default()
            }),
        }],
        as_double: Some(value),
        as_int: None,
    };
    let metric = Metric {
        name: "org.apache.kafka.producer.record.queue.time.avg".into(),
        gauge: Some(otlp::Gauge {
            data_points: vec![point],
        }),
        ..Default::default()
    };
    MetricsData {
        resource_metrics: vec![otlp::ResourceMetrics {
            resource: None,
            scope_metrics: vec![otlp::ScopeMetrics {
                metrics: vec![metric],
            }],
        }],
    }
    .encode_to_vec()
}

fn push<'a>(answer: &SubscriptionAnswer, metrics: &'a [u8], compression_type: i8) -> Push<'a> {
    Push {
        client_instance_id: answer.client_instance_id,
        subscription_id: answer.subscription_id,
        terminating: false,
        compression_type,
        metrics,
    }
}

const FAMILY: &str = "kafka_client_org_apache_kafka_producer_record_queue_time_avg";

fn labels(id: Uuid) -> Vec<(&'static str, String)> {
    vec![
        ("client_instance_id", id.to_string()),
        ("client_id", "p1".into()),
        ("client_software_name", "apache-kafka-java".into()),
        ("client_software_version", "4.4.0".into()),
        ("node_id", "1".into()),
    ]
}

fn value(m: &ClientMetricsManager, id: Uuid) -> Option<f64> {
    let labels = labels(id);
    let labels: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
    m.series().value(FAMILY, "", &labels)
}

#[test]
fn a_new_client_gets_an_instance_id_and_the_matching_subscription() {
    let mut m = manager();
    let a = get(&mut m, 0, Uuid::nil()).unwrap();
    assert_eq!(a.client_instance_id, Uuid::from_u128(100));
    assert_eq!(a.requested_metrics, vec!["org.apache.kafka.producer."]);
    assert_eq!(a.push_interval_ms, 1000);
    let expected = subscription_id(&a.requested_metrics, 1000, a.client_instance_id);
    assert_eq!(a.subscription_id, expected);
    // A known id is kept; the same set gives the same id on any broker.
    let mut other = manager();
    let b = get(&mut other, 0, a.client_instance_id).unwrap();
    assert_eq!(b, a);
}

#[test]
fn subscription_ids_change_with_the_set_and_the_instance() {
    let metrics = vec!["a.".to_string()];
    let id = Uuid::from_u128(7);
    let base = subscription_id(&metrics, 1000, id);
    assert_ne!(base, subscription_id(&metrics, 2000, id));
    assert_ne!(base, subscription_id(&["b.".to_string()], 1000, id));
    assert_ne!(base, subscription_id(&metrics, 1000, Uuid::from_u128(8)));
    assert_eq!(base, subscription_id(&metrics, 1000, id));
}

#[test]
fn requests_faster_than_the_interval_are_throttled() {
    let mut m = manager();
    let a = get(&mut m, 0, Uuid::nil()).unwrap();
    let id = a.client_instance_id;
    assert_eq!(get(&mut m, 999, id), Err(TelemetryError::Throttled(id)));
    // The first push after a GetTelemetrySubscriptions is accepted at once (clients jitter it).
    let p = payload(1.0);
    m.push(500, push(&a, &p, 0), info("p1")).unwrap();
    assert_eq!(
        m.push(1499, push(&a, &p, 0), info("p1")),
        Err(TelemetryError::Throttled(id))
    );
    m.push(1500, push(&a, &p, 0), info("p1")).unwrap();
    // A terminating push is accepted within the interval; nothing is accepted after it.
    let mut last = push(&a, &p, 0);
    last.terminating = true;
    m.push(1600, last, info("p1")).unwrap();
    let after = m.push(5000, push(&a, &p, 0), info("p1"));
    assert!(
        matches!(after, Err(TelemetryError::InvalidRequest(_))),
        "{after:?}"
    );
}

#[test]
fn a_stale_subscription_id_is_unknown_and_the_client_may_ask_again_at_once() {
    let mut m = manager();
    let a = get(&mut m, 0, Uuid::nil()).unwrap();
    let id = a.client_instance_id;
    let p = payload(1.0);
    let mut wrong = push(&a, &p, 0);
    wrong.subscription_id ^= 1;
    assert_eq!(
        m.push(10, wrong, info("p1")),
        Err(TelemetryError::UnknownSubscriptionId(id))
    );
    get(&mut m, 20, id).unwrap();
    // A changed subscription set makes the client's id unknown; its next GetTelemetrySubscriptions says
    // the new one without waiting.
    let configs = set(&[("metrics", "*"), ("interval.ms", "2000")]);
    m.set_subscription("sub", &configs).unwrap();
    assert_eq!(
        m.push(1500, push(&a, &p, 0), info("p1")),
        Err(TelemetryError::UnknownSubscriptionId(id))
    );
    let b = get(&mut m, 1510, id).unwrap();
    assert_eq!(b.requested_metrics, vec!["*"]);
    assert_eq!(b.push_interval_ms, 2000);
    assert_ne!(b.subscription_id, a.subscription_id);
    m.push(1520, push(&b, &p, 0), info("p1")).unwrap();
}

#[test]
fn bad_payloads_get_kafkas_errors() {
    let mut m = manager();
    let a = get(&mut m, 0, Uuid::nil()).unwrap();
    let garbage = [0xffu8; 16];
    // One push per interval, each accepted by the throttle and refused after it.
    let mut now = 0;
    let mut send = |m: &mut ClientMetricsManager, metrics: &[u8], compression: i8| {
        now += SECOND;
        m.push(now, push(&a, metrics, compression), info("p1"))
    };
    let r = send(&mut m, &garbage, 0);
    assert!(matches!(r, Err(TelemetryError::InvalidRecord(_))), "{r:?}");
    let r = send(&mut m, &garbage, 7);
    assert_eq!(r, Err(TelemetryError::UnsupportedCompressionType(7)));
    let big = vec![0u8; 1025];
    assert_eq!(send(&mut m, &big, 0), Err(TelemetryError::TooLarge(1024)));
    // A small zstd payload that expands past telemetry.max.bytes is refused before it is decoded.
    let bomb = compress(Compression::Zstd, &vec![0u8; 1 << 20], false).unwrap();
    assert!(bomb.len() < 1024, "{}", bomb.len());
    assert_eq!(send(&mut m, &bomb, 4), Err(TelemetryError::TooLarge(1024)));
    // Undecodable zstd.
    let r = send(&mut m, &garbage, 4);
    assert!(matches!(r, Err(TelemetryError::InvalidRecord(_))), "{r:?}");
    send(&mut m, &payload(1.0), 0).unwrap();
}

#[test]
fn the_zero_or_reserved_instance_id_is_an_invalid_push() {
    let mut m = manager();
    let a = get(&mut m, 0, Uuid::nil()).unwrap();
    for id in [Uuid::nil(), Uuid::from_u128(1)] {
        let mut p = push(&a, &[], 0);
        p.client_instance_id = id;
        let r = m.push(0, p, info("p1"));
        assert!(matches!(r, Err(TelemetryError::InvalidRequest(_))), "{r:?}");
    }
}

#[test]
fn pushed_values_become_labelled_series_that_expire() {
    let mut m = manager();
    let a = get(&mut m, 0, Uuid::nil()).unwrap();
    let id = a.client_instance_id;
    let p = compress(Compression::Gzip, &payload(2.5), false).unwrap();
    m.push(100, push(&a, &p, 1), info("p1")).unwrap();
    assert_eq!(value(&m, id), Some(2.5));
    let mut text = String::new();
    m.render(200, &mut text);
    assert!(text.contains(&format!("# TYPE {FAMILY} gauge")), "{text}");
    assert!(
        text.contains(&format!(
            "{FAMILY}{{client_instance_id=\"{id}\",client_id=\"p1\""
        )),
        "{text}"
    );
    assert!(
        text.contains("kafka_server_client_metrics_instance_count 1"),
        "{text}"
    );
    // Three intervals without a push: the series go, the instance stays until 60 s without requests.
    m.expire(100 + 3 * SECOND - 1);
    assert_eq!(value(&m, id), Some(2.5));
    m.expire(100 + 3 * SECOND);
    assert_eq!(value(&m, id), None);
    assert_eq!(m.instance_count(), 1);
    m.expire(100 + 60 * SECOND);
    assert_eq!(m.instance_count(), 0);
}

#[test]
fn series_are_capped_and_the_excess_counted() {
    let mut m = ClientMetricsManager::new(TelemetryConfig {
        series_max: 1,
        ..config()
    });
    let configs = set(&[("metrics", "*"), ("interval.ms", "100")]);
    m.set_subscription("all", &configs).unwrap();
    let a = get(&mut m, 0, Uuid::nil()).unwrap();
    let b = get(&mut m, 0, Uuid::nil()).unwrap();
    assert_ne!(a.client_instance_id, b.client_instance_id);
    let p = payload(1.0);
    m.push(0, push(&a, &p, 0), info("p1")).unwrap();
    m.push(0, push(&b, &p, 0), info("p1")).unwrap();
    assert_eq!(m.series().len(), 1);
    assert_eq!(m.series().dropped(), 1);
    assert_eq!(value(&m, a.client_instance_id), Some(1.0));
}

#[test]
fn match_selectors_must_match_whole_values() {
    let mut m = ClientMetricsManager::new(config());
    let configs = set(&[
        ("metrics", "x."),
        (
            "match",
            "client_id=p.*, client_software_name=apache-kafka-java",
        ),
    ]);
    m.set_subscription("only-p", &configs).unwrap();
    let a = m
        .get_subscriptions(0, Uuid::nil(), info("p1"), ids())
        .unwrap();
    assert_eq!(a.requested_metrics, vec!["x."]);
    let b = m
        .get_subscriptions(0, Uuid::nil(), info("xp1"), ids())
        .unwrap();
    assert!(b.requested_metrics.is_empty());
    assert_eq!(b.push_interval_ms, 300_000);
}

#[test]
fn the_default_subscription_applies_to_every_client() {
    let mut m = ClientMetricsManager::new(TelemetryConfig {
        default_metrics: vec!["org.apache.kafka.".into()],
        default_interval_ms: 5000,
        ..config()
    });
    let a = get(&mut m, 0, Uuid::nil()).unwrap();
    assert_eq!(a.requested_metrics, vec!["org.apache.kafka."]);
    assert_eq!(a.push_interval_ms, 5000);
}

#[test]
fn configs_are_validated_as_kafka_does() {
    let invalid_request =
        |e: Result<_, SubscriptionError>| matches!(e, Err(SubscriptionError::InvalidRequest(_)));
    let invalid_config =
        |e: Result<_, SubscriptionError>| matches!(e, Err(SubscriptionError::InvalidConfig(_)));
    assert!(invalid_request(subscription::parse("", &set(&[]))));
    assert!(invalid_request(subscription::parse(
        "s",
        &set(&[("nope", "1")])
    )));
    assert!(invalid_request(subscription::parse(
        "s",
        &set(&[("interval.ms", "99")])
    )));
    assert!(invalid_request(subscription::parse(
        "s",
        &set(&[("interval.ms", "3600001")])
    )));
    assert!(invalid_config(subscription::parse(
        "s",
        &set(&[("interval.ms", "x")])
    )));
    assert!(invalid_config(subscription::parse(
        "s",
        &set(&[("match", "client_id")])
    )));
    assert!(invalid_config(subscription::parse(
        "s",
        &set(&[("match", "rack=a")])
    )));
    assert!(invalid_config(subscription::parse(
        "s",
        &set(&[("match", "client_id=(")])
    )));
    let ok = subscription::parse("s", &set(&[("metrics", "a., b."), ("interval.ms", "100")]));
    assert_eq!(ok.unwrap().metrics, vec!["a.", "b."]);
}
