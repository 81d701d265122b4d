//! API v3 produce: `POST /v3/clusters/{cluster_id}/topics/{topic_name}/records`. Each record of the body
//! becomes one Produce (acks=all, one uncompressed batch) through the broker's handler; the answer is
//! Confluent's produce response (`error_code` 200, `partition_id`, `offset`, `timestamp`, key and value
//! sizes). A body of several JSON objects one after another (Confluent's streaming mode) produces each in
//! order and answers one JSON object per record, each on its own line, an error object for a record that
//! failed.
//!
//! Key and value are `{"type": "JSON" | "STRING" | "BINARY", "data": ...}`: JSON data is stored as its
//! compact JSON text, STRING as the string's UTF-8, BINARY as the bytes of its base64 text. Without a
//! `partition_id` a keyed record goes to Kafka's default partition for its key (murmur2, as the Java
//! client's), an unkeyed one round robin.

use std::sync::atomic::Ordering;

use axum::extract::Request;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use base64ct::{Base64, Encoding};
use bytes::Bytes;
use protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use protocol::messages::ProduceRequest;
use protocol::record::{Compression, RecordBatchBuilder, Records};
use protocol::{RequestBody, ResponseBody};
use serde::Deserialize;
use serde_json::{json, Value};

use super::error::RestError;
use super::time::{format_iso8601, parse_iso8601};
use super::v3::{metadata, partition, unexpected};
use super::{json_bytes, json_error, Ctx, RestResult, P};

/// How long a Produce may wait for acks=all (ms).
const PRODUCE_TIMEOUT_MS: i32 = 30_000;

/// A key or value: its type and data.
#[derive(Debug, Deserialize)]
pub struct Data {
    #[serde(rename = "type")]
    kind: Option<String>,
    data: Option<Value>,
}

/// A record header: a name and a base64 value.
#[derive(Debug, Deserialize)]
pub struct Header {
    name: String,
    value: Option<String>,
}

/// One record of a produce body.
#[derive(Debug, Deserialize)]
pub struct ProduceRecord {
    partition_id: Option<i32>,
    #[serde(default)]
    headers: Vec<Header>,
    key: Option<Data>,
    value: Option<Data>,
    /// ISO 8601 (`2026-12-05T18:00:00.000Z`); absent: now.
    timestamp: Option<String>,
}

/// Encoded bytes of a key or value (`None`: a null key or value) and its type name.
fn encode(d: Option<&Data>) -> Result<(Option<Bytes>, &'static str), RestError> {
    let Some(d) = d else {
        return Ok((None, "JSON"));
    };
    let kind = d.kind.as_deref().unwrap_or("JSON").to_ascii_uppercase();
    let (kind, data) = match (kind.as_str(), &d.data) {
        ("JSON", v) => ("JSON", v.as_ref().map(|v| v.to_string().into_bytes())),
        ("STRING", Some(Value::String(s))) => ("STRING", Some(s.clone().into_bytes())),
        ("BINARY", Some(Value::String(s))) => {
            let bytes = Base64::decode_vec(s)
                .map_err(|_| RestError::bad_request("BINARY data is not valid base64"))?;
            ("BINARY", Some(bytes))
        }
        ("STRING" | "BINARY", None | Some(Value::Null)) => {
            (if kind == "STRING" { "STRING" } else { "BINARY" }, None)
        }
        ("STRING" | "BINARY", Some(_)) => {
            return Err(RestError::bad_request(format!(
                "{kind} data must be a string"
            )))
        }
        (other, _) => {
            return Err(RestError::bad_request(format!(
                "Unsupported type {other}: JSON, STRING or BINARY"
            )))
        }
    };
    Ok((data.map(Bytes::from), kind))
}

/// Kafka's `Utils.murmur2` (the Java client's default partitioner hash).
fn murmur2(data: &[u8]) -> i32 {
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;
    let mut h: u32 = 0x9747_b28c ^ (data.len() as u32);
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        let mut k = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    let rest = chunks.remainder();
    if rest.len() >= 3 {
        h ^= u32::from(rest[2]) << 16;
    }
    if rest.len() >= 2 {
        h ^= u32::from(rest[1]) << 8;
    }
    if !rest.is_empty() {
        h ^= u32::from(rest[0]);
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h as i32
}

/// The partition a record goes to (404 for an unknown topic or partition).
async fn choose_partition(
    ctx: &Ctx,
    topic: &str,
    given: Option<i32>,
    key: Option<&Bytes>,
) -> Result<i32, RestError> {
    if let Some(p) = given {
        return Ok(partition(ctx, topic, &p.to_string()).await?.partition_index);
    }
    let topics = metadata(ctx, Some(topic)).await?;
    let count = topics.first().map_or(0, |t| t.partitions.len()) as u32;
    if count == 0 {
        return Err(RestError::from_kafka(
            protocol::ErrorCode::LEADER_NOT_AVAILABLE,
            None,
        ));
    }
    Ok(match key {
        Some(k) => ((murmur2(k) & 0x7fff_ffff) as u32 % count) as i32,
        None => (ctx.state.round_robin.fetch_add(1, Ordering::Relaxed) % count) as i32,
    })
}

/// Produces one record; Confluent's produce response.
async fn produce_one(
    ctx: &Ctx,
    cluster: &str,
    topic: &str,
    r: ProduceRecord,
) -> Result<Value, RestError> {
    let (key, key_type) = encode(r.key.as_ref())?;
    let (value, value_type) = encode(r.value.as_ref())?;
    let timestamp = match &r.timestamp {
        Some(t) => parse_iso8601(t)
            .ok_or_else(|| RestError::bad_request(format!("timestamp {t} is not ISO 8601 UTC")))?,
        None => super::time::now_ms(),
    };
    let mut headers = Vec::with_capacity(r.headers.len());
    for h in r.headers {
        let value = match h.value {
            Some(v) => Some(Bytes::from(Base64::decode_vec(&v).map_err(|_| {
                RestError::bad_request(format!("header {} is not valid base64", h.name))
            })?)),
            None => None,
        };
        headers.push((h.name, value));
    }
    let partition_id = choose_partition(ctx, topic, r.partition_id, key.as_ref()).await?;
    let sizes = (key.as_ref().map(Bytes::len), value.as_ref().map(Bytes::len));
    let mut builder = RecordBatchBuilder::new(Compression::None);
    builder.append(timestamp, key, value, headers);
    let batch = builder
        .build()
        .map_err(|e| RestError::internal(format!("building the batch: {e}")))?;
    let request = ProduceRequest {
        acks: -1,
        timeout_ms: PRODUCE_TIMEOUT_MS,
        topic_data: vec![TopicProduceData {
            name: topic.to_string(),
            partition_data: vec![PartitionProduceData {
                index: partition_id,
                records: Some(Records::Memory(batch)),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let ResponseBody::Produce(response) = ctx.call(RequestBody::Produce(request)).await? else {
        return Err(unexpected());
    };
    let p = (response.responses.first())
        .and_then(|t| t.partition_responses.first())
        .ok_or_else(unexpected)?;
    if p.error_code == protocol::ErrorCode::NOT_LEADER_OR_FOLLOWER.0 {
        // In a cluster: records go through this broker's Produce handler, which only appends as leader.
        let message = format!(
            "This broker does not lead partition {partition_id} of topic {topic}: produce through the \
             HTTP listener of the broker its `leader` link names"
        );
        return Err(RestError::from_kafka(
            protocol::ErrorCode(p.error_code),
            Some(&message),
        ));
    }
    RestError::check(p.error_code, p.error_message.as_deref())?;
    let stored_at = match p.log_append_time_ms {
        -1 => timestamp,
        t => t,
    };
    let size = |kind: &str, size: Option<usize>| match size {
        Some(n) => json!({ "type": kind, "size": n }),
        None => Value::Null,
    };
    Ok(json!({
        "error_code": 200,
        "cluster_id": cluster,
        "topic_name": topic,
        "partition_id": partition_id,
        "offset": p.base_offset,
        "timestamp": format_iso8601(stored_at),
        "key": size(key_type, sizes.0),
        "value": size(value_type, sizes.1),
    }))
}

/// `POST .../topics/{topic_name}/records`: one record (200 with the produce response, or the error), or
/// several in streaming mode (200, one JSON object per line).
pub async fn produce(
    ctx: Ctx,
    P((cluster_id, topic)): P<(String, String)>,
    request: Request,
) -> RestResult {
    let cluster = ctx.check_cluster(&cluster_id)?;
    let bytes = json_bytes(request, &()).await?;
    let mut records = serde_json::Deserializer::from_slice(&bytes).into_iter::<ProduceRecord>();
    let first = match records.next() {
        Some(r) => r.map_err(json_error)?,
        None => return Err(RestError::bad_request("Request body is empty")),
    };
    let first = produce_one(&ctx, &cluster, &topic, first).await;
    let Some(second) = records.next() else {
        return first.map(|v| (StatusCode::OK, axum::Json(v)).into_response());
    };
    // Streaming mode: every record answered, in order.
    let mut out = String::new();
    let mut push = |r: Result<Value, RestError>| {
        let v = r.unwrap_or_else(|e| json!({ "error_code": e.error_code, "message": e.message }));
        out.push_str(&v.to_string());
        out.push('\n');
    };
    push(first);
    for r in std::iter::once(second).chain(records) {
        match r {
            Ok(r) => push(produce_one(&ctx, &cluster, &topic, r).await),
            Err(e) => {
                // The rest of the body cannot be read past a parse error.
                push(Err(json_error(e)));
                break;
            }
        }
    }
    Ok(([(header::CONTENT_TYPE, "application/json")], out).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn murmur2_matches_kafka() {
        // Kafka's UtilsTest.testMurmur2 values.
        assert_eq!(murmur2(b"21"), -973932308);
        assert_eq!(murmur2(b"foobar"), -790332482);
        assert_eq!(murmur2(b"a-little-bit-long-string"), -985981536);
        assert_eq!(murmur2(b"a-little-bit-longer-string"), -1486304829);
        assert_eq!(
            murmur2(b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8"),
            -58897971
        );
        assert_eq!(murmur2(b"abc"), 479470107);
    }

    #[test]
    fn data_encodes_by_type() {
        let d = |kind: &str, data: Value| Data {
            kind: Some(kind.into()),
            data: Some(data),
        };
        let (b, k) = encode(Some(&d("JSON", json!({"a": 1})))).unwrap();
        assert_eq!((b.as_deref(), k), (Some(&b"{\"a\":1}"[..]), "JSON"));
        let (b, _) = encode(Some(&d("string", json!("hi")))).unwrap();
        assert_eq!(b.as_deref(), Some(&b"hi"[..]));
        let (b, _) = encode(Some(&d("BINARY", json!("aGk=")))).unwrap();
        assert_eq!(b.as_deref(), Some(&b"hi"[..]));
        assert!(encode(Some(&d("BINARY", json!("!!")))).is_err());
        assert!(encode(Some(&d("AVRO", json!(1)))).is_err());
        assert_eq!(encode(None).unwrap().0, None);
    }
}
