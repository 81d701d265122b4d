//! The OTLP metrics payload of PushTelemetry (KIP-714: `MetricsData` of OpenTelemetry's
//! `opentelemetry/proto/metrics/v1/metrics.proto`, protobuf), decoded into flat [`Sample`]s.
//!
//! Only the fields Runnel exports are declared (prost skips every other field): resource and data-point
//! attributes with scalar values, and the Gauge, Sum and Histogram data (a histogram's count and sum; its
//! buckets, exponential histograms and summaries are ignored). Field numbers are OTLP's.
//!
//! Bounds: the payload was already capped (`telemetry.max.bytes`, after decompression); prost allocates no
//! more than the bytes it reads and nests at most 100 messages deep, and [`decode`] emits at most
//! [`MAX_SAMPLES`] samples.

use prost::Message;

/// At most this many samples are taken from one payload; the rest are dropped.
pub const MAX_SAMPLES: usize = 10_000;

/// At most this many attributes of one data point become labels.
const MAX_ATTRIBUTES: usize = 8;

/// OTLP `MetricsData`.
#[derive(Clone, PartialEq, Message)]
pub struct MetricsData {
    /// `resource_metrics = 1`.
    #[prost(message, repeated, tag = "1")]
    pub resource_metrics: Vec<ResourceMetrics>,
}

/// OTLP `ResourceMetrics`.
#[derive(Clone, PartialEq, Message)]
pub struct ResourceMetrics {
    /// `resource = 1`.
    #[prost(message, optional, tag = "1")]
    pub resource: Option<Resource>,
    /// `scope_metrics = 2`.
    #[prost(message, repeated, tag = "2")]
    pub scope_metrics: Vec<ScopeMetrics>,
}

/// OTLP `Resource`.
#[derive(Clone, PartialEq, Message)]
pub struct Resource {
    /// `attributes = 1`.
    #[prost(message, repeated, tag = "1")]
    pub attributes: Vec<KeyValue>,
}

/// OTLP `ScopeMetrics`.
#[derive(Clone, PartialEq, Message)]
pub struct ScopeMetrics {
    /// `metrics = 2`.
    #[prost(message, repeated, tag = "2")]
    pub metrics: Vec<Metric>,
}

/// OTLP `Metric` (its `data` oneof as optional fields: at most one is set).
#[derive(Clone, PartialEq, Message)]
pub struct Metric {
    /// `name = 1`, e.g. `org.apache.kafka.producer.record.queue.time.avg`.
    #[prost(string, tag = "1")]
    pub name: String,
    /// `gauge = 5`.
    #[prost(message, optional, tag = "5")]
    pub gauge: Option<Gauge>,
    /// `sum = 7`.
    #[prost(message, optional, tag = "7")]
    pub sum: Option<Sum>,
    /// `histogram = 9`.
    #[prost(message, optional, tag = "9")]
    pub histogram: Option<Histogram>,
}

/// OTLP `Gauge`.
#[derive(Clone, PartialEq, Message)]
pub struct Gauge {
    /// `data_points = 1`.
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<NumberDataPoint>,
}

/// OTLP `Sum`.
#[derive(Clone, PartialEq, Message)]
pub struct Sum {
    /// `data_points = 1`.
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<NumberDataPoint>,
    /// `aggregation_temporality = 2`: 1 DELTA, 2 CUMULATIVE.
    #[prost(int32, tag = "2")]
    pub aggregation_temporality: i32,
    /// `is_monotonic = 3`.
    #[prost(bool, tag = "3")]
    pub is_monotonic: bool,
}

/// OTLP `Histogram`.
#[derive(Clone, PartialEq, Message)]
pub struct Histogram {
    /// `data_points = 1`.
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<HistogramDataPoint>,
    /// `aggregation_temporality = 2`.
    #[prost(int32, tag = "2")]
    pub aggregation_temporality: i32,
}

/// OTLP `NumberDataPoint` (its `value` oneof as optional fields).
#[derive(Clone, PartialEq, Message)]
pub struct NumberDataPoint {
    /// `attributes = 7`.
    #[prost(message, repeated, tag = "7")]
    pub attributes: Vec<KeyValue>,
    /// `as_double = 4`.
    #[prost(double, optional, tag = "4")]
    pub as_double: Option<f64>,
    /// `as_int = 6`.
    #[prost(sfixed64, optional, tag = "6")]
    pub as_int: Option<i64>,
}

/// OTLP `HistogramDataPoint`.
#[derive(Clone, PartialEq, Message)]
pub struct HistogramDataPoint {
    /// `attributes = 9`.
    #[prost(message, repeated, tag = "9")]
    pub attributes: Vec<KeyValue>,
    /// `count = 4`.
    #[prost(fixed64, tag = "4")]
    pub count: u64,
    /// `sum = 5`.
    #[prost(double, optional, tag = "5")]
    pub sum: Option<f64>,
}

/// OTLP `KeyValue`.
#[derive(Clone, PartialEq, Message)]
pub struct KeyValue {
    /// `key = 1`.
    #[prost(string, tag = "1")]
    pub key: String,
    /// `value = 2`.
    #[prost(message, optional, tag = "2")]
    pub value: Option<AnyValue>,
}

/// OTLP `AnyValue`, scalar variants only (arrays, maps and bytes are skipped).
#[derive(Clone, PartialEq, Message)]
pub struct AnyValue {
    /// `string_value = 1`.
    #[prost(string, optional, tag = "1")]
    pub string_value: Option<String>,
    /// `bool_value = 2`.
    #[prost(bool, optional, tag = "2")]
    pub bool_value: Option<bool>,
    /// `int_value = 3`.
    #[prost(int64, optional, tag = "3")]
    pub int_value: Option<i64>,
    /// `double_value = 4`.
    #[prost(double, optional, tag = "4")]
    pub double_value: Option<f64>,
}

/// OTLP's `AGGREGATION_TEMPORALITY_DELTA`.
const DELTA: i32 = 1;

/// The Prometheus type of a family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A Gauge, or a Sum that is not monotonic.
    Gauge,
    /// A monotonic Sum.
    Counter,
    /// A Histogram, exported as `_count` and `_sum`.
    Summary,
}

impl Kind {
    /// The `# TYPE` word.
    pub fn type_name(self) -> &'static str {
        match self {
            Kind::Gauge => "gauge",
            Kind::Counter => "counter",
            Kind::Summary => "summary",
        }
    }
}

/// One value of a pushed metric, before the broker's labels are added.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The Prometheus family name: `kafka_client_` + the OTLP name, every character outside `[A-Za-z0-9_]`
    /// replaced by `_`.
    pub family: String,
    /// `""`, or `_count` / `_sum` for a histogram.
    pub suffix: &'static str,
    /// The family's type.
    pub kind: Kind,
    /// The data point's (then the resource's) scalar attributes as sanitized label names, at most
    /// [`MAX_ATTRIBUTES`], sorted by name.
    pub labels: Vec<(String, String)>,
    /// The value.
    pub value: f64,
    /// True when `value` is a delta to add to the previous one (DELTA temporality).
    pub delta: bool,
}

/// Decodes an uncompressed `MetricsData` payload. Errors: the protobuf does not decode (the broker
/// answers INVALID_RECORD).
pub fn decode(payload: &[u8]) -> Result<Vec<Sample>, prost::DecodeError> {
    let data = MetricsData::decode(payload)?;
    let mut out = Vec::new();
    for rm in &data.resource_metrics {
        let resource: &[KeyValue] = rm.resource.as_ref().map_or(&[], |r| &r.attributes);
        for metric in rm.scope_metrics.iter().flat_map(|s| &s.metrics) {
            samples_of(metric, resource, &mut out);
            if out.len() >= MAX_SAMPLES {
                out.truncate(MAX_SAMPLES);
                return Ok(out);
            }
        }
    }
    Ok(out)
}

/// Appends the samples of one metric.
fn samples_of(metric: &Metric, resource: &[KeyValue], out: &mut Vec<Sample>) {
    let family = format!("kafka_client_{}", sanitize(&metric.name));
    let number = |kind: Kind, delta: bool, p: &NumberDataPoint| Sample {
        family: family.clone(),
        suffix: "",
        kind,
        labels: labels(&p.attributes, resource),
        value: p
            .as_double
            .or(p.as_int.map(|i| i as f64))
            .unwrap_or_default(),
        delta,
    };
    if let Some(g) = &metric.gauge {
        out.extend(g.data_points.iter().map(|p| number(Kind::Gauge, false, p)));
    } else if let Some(s) = &metric.sum {
        let (kind, delta) = match s.is_monotonic {
            true => (Kind::Counter, s.aggregation_temporality == DELTA),
            false => (Kind::Gauge, false),
        };
        out.extend(s.data_points.iter().map(|p| number(kind, delta, p)));
    } else if let Some(h) = &metric.histogram {
        let delta = h.aggregation_temporality == DELTA;
        for p in &h.data_points {
            let labels = labels(&p.attributes, resource);
            let sample = |suffix, value| Sample {
                family: family.clone(),
                suffix,
                kind: Kind::Summary,
                labels: labels.clone(),
                value,
                delta,
            };
            out.push(sample("_count", p.count as f64));
            out.push(sample("_sum", p.sum.unwrap_or_default()));
        }
    }
}

/// The scalar attributes of a data point, then of its resource (a data point's wins), as labels.
fn labels(point: &[KeyValue], resource: &[KeyValue]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for kv in point.iter().chain(resource) {
        let Some(value) = kv.value.as_ref().and_then(scalar) else {
            continue;
        };
        let name = sanitize(&kv.key);
        if name.is_empty() || out.iter().any(|(n, _)| *n == name) {
            continue;
        }
        out.push((name, value));
        if out.len() == MAX_ATTRIBUTES {
            break;
        }
    }
    out.sort();
    out
}

fn scalar(v: &AnyValue) -> Option<String> {
    if let Some(s) = &v.string_value {
        return Some(s.clone());
    }
    v.int_value
        .map(|i| i.to_string())
        .or(v.bool_value.map(|b| b.to_string()))
        .or(v.double_value.map(|d| d.to_string()))
}

/// A Prometheus metric or label name: every character outside `[A-Za-z0-9_]` becomes `_`, and a leading
/// digit gets a `_` before it.
pub fn sanitize(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| match c.is_ascii_alphanumeric() {
            true => c,
            false => '_',
        })
        .collect();
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}
