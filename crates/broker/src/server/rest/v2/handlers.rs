//! The API v2 consumer routes' handlers: request bodies parsed and checked here, the work done by
//! [`ConsumerInstance`]. JSON answers are `application/vnd.kafka.v2+json`; records answers carry the
//! instance's embedded format's content type.

use std::sync::Arc;

use axum::extract::{RawQuery, Request};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::IntoResponse;
use regex::RegexBuilder;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};

use super::assignor::TopicPartition;
use super::format::EmbeddedFormat;
use super::instance::{ConsumerInstance, InstanceConfig, Target};
use super::kafka::Kafka;
use super::registry::RegistryError;
use super::{
    Consumers, FORMAT_MISMATCH, INSTANCE_EXISTS, INVALID_CONSUMER_CONFIG, MAX_FETCH_WAIT_MS,
    MAX_INSTANCES, MAX_ITEMS, MAX_RECORDS_BYTES,
};
use crate::server::rest::error::{RestError, BAD_REQUEST};
use crate::server::rest::{is_json, json_error, no_content, Ctx, RestResult, MAX_BODY_BYTES, P};

/// The content type of API v2's JSON answers.
pub const V2_JSON: &str = "application/vnd.kafka.v2+json";
/// The longest regular expression a `topic_pattern` may compile to (bytes of the compiled program).
const MAX_PATTERN_SIZE: usize = 1 << 20;
/// The longest group id or instance name taken (characters).
const MAX_NAME_LEN: usize = 255;
/// 422 unless `n` items are at most [`MAX_ITEMS`].
fn check_items(n: usize, what: &str) -> Result<(), RestError> {
    match n <= MAX_ITEMS {
        true => Ok(()),
        false => Err(RestError::unprocessable(format!(
            "At most {MAX_ITEMS} {what} in one request"
        ))),
    }
}

/// 200 with `body` as `application/vnd.kafka.v2+json`.
fn v2_ok(body: Value) -> RestResult {
    Ok(([(header::CONTENT_TYPE, V2_JSON)], body.to_string()).into_response())
}

/// An optional JSON body: `None` when it is empty, else as [`JsonBody`](crate::server::rest::JsonBody)
/// checks it (415 for a type that is not JSON, 413 above the limit, 400 for invalid JSON, 422 for the
/// wrong shape).
async fn optional_json<T: DeserializeOwned>(req: Request) -> Result<Option<T>, RestError> {
    let content_type = (req.headers().get(header::CONTENT_TYPE))
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let bytes = axum::body::to_bytes(req.into_body(), MAX_BODY_BYTES)
        .await
        .map_err(|_| {
            RestError::new(
                413,
                format!("Request body is larger than {MAX_BODY_BYTES} bytes"),
            )
        })?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    if !is_json(&content_type) {
        return Err(RestError::new(
            415,
            format!(
                "HTTP 415 Unsupported Media Type: expected application/json, got '{content_type}'"
            ),
        ));
    }
    serde_json::from_slice(&bytes).map(Some).map_err(json_error)
}

/// A required JSON body (400 when empty).
async fn required_json<T: DeserializeOwned>(req: Request) -> Result<T, RestError> {
    optional_json(req)
        .await?
        .ok_or_else(|| RestError::bad_request("Request body is empty"))
}

fn consumers(ctx: &Ctx) -> &Arc<Consumers> {
    &ctx.state.consumers
}

fn kafka(ctx: &Ctx) -> Kafka<'_> {
    Kafka {
        bridge: &ctx.state.consumers.bridge,
        origin: &ctx.origin,
    }
}

fn invalid_config(message: impl std::fmt::Display) -> RestError {
    RestError::new(
        INVALID_CONSUMER_CONFIG,
        format!("Invalid consumer configuration: {message}"),
    )
}

/// `POST /consumers/{group}`'s body. Config values may be JSON strings (as REST Proxy documents them)
/// or numbers and booleans.
#[derive(Debug, Default, Deserialize)]
pub struct CreateBody {
    name: Option<String>,
    format: Option<String>,
    #[serde(rename = "auto.offset.reset")]
    auto_offset_reset: Option<Value>,
    #[serde(rename = "auto.commit.enable")]
    auto_commit_enable: Option<Value>,
    #[serde(rename = "fetch.min.bytes")]
    fetch_min_bytes: Option<Value>,
    #[serde(rename = "consumer.request.timeout.ms")]
    request_timeout_ms: Option<Value>,
}

/// A config value as text (`None`: absent or null).
fn text(v: &Option<Value>) -> Option<String> {
    match v {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.trim().to_string()),
        Some(other) => Some(other.to_string()),
    }
}

/// An integer config in `0..=i32::MAX` (a negative one means "unset": `default`).
fn int_config(v: &Option<Value>, name: &str, default: i32) -> Result<i32, RestError> {
    let Some(t) = text(v) else {
        return Ok(default);
    };
    match t.parse::<i64>() {
        Ok(n) if n < 0 => Ok(default),
        Ok(n) => i32::try_from(n).map_err(|_| invalid_config(format!("{name} is too large"))),
        Err(_) => Err(invalid_config(format!("{name} must be an integer"))),
    }
}

/// The instance configuration `body` asks for (422, 42204, for a value that is not acceptable).
fn parse_config(body: &CreateBody) -> Result<InstanceConfig, RestError> {
    let format = match body.format.as_deref() {
        None => EmbeddedFormat::Binary,
        Some(f) => EmbeddedFormat::parse(f).ok_or_else(|| {
            invalid_config(format!("format {f} is not served: binary, json or string"))
        })?,
    };
    let reset_earliest = match text(&body.auto_offset_reset).as_deref() {
        None | Some("latest" | "largest") => false,
        Some("earliest" | "smallest") => true,
        Some(other) => {
            return Err(invalid_config(format!(
                "auto.offset.reset {other}: earliest or latest"
            )))
        }
    };
    let auto_commit = match text(&body.auto_commit_enable).as_deref() {
        None | Some("true") => true,
        Some("false") => false,
        Some(other) => {
            return Err(invalid_config(format!(
                "auto.commit.enable {other}: true or false"
            )))
        }
    };
    Ok(InstanceConfig {
        format,
        reset_earliest,
        auto_commit,
        fetch_min_bytes: int_config(&body.fetch_min_bytes, "fetch.min.bytes", 1)?,
        request_timeout_ms: int_config(
            &body.request_timeout_ms,
            "consumer.request.timeout.ms",
            1_000,
        )?,
    })
}

/// Whether `name` may name an instance: 1 to 255 of `A-Z a-z 0-9 . _ -`.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && (name.bytes()).all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

/// `s` percent-encoded as one URL path segment.
fn path_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b.is_ascii_alphanumeric() || b"._-~".contains(&b) {
            true => out.push(b as char),
            false => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// `POST /consumers/{group}`: a new instance → `{"instance_id", "base_uri"}`.
pub async fn create(ctx: Ctx, P(group): P<String>, req: Request) -> RestResult {
    let body: CreateBody = optional_json(req).await?.unwrap_or_default();
    let config = parse_config(&body)?;
    if group.chars().count() > MAX_NAME_LEN {
        return Err(RestError::new(
            BAD_REQUEST,
            format!("A group id is at most {MAX_NAME_LEN} characters"),
        ));
    }
    let all = consumers(&ctx);
    let name = match body.name {
        Some(name) if valid_name(&name) => name,
        Some(name) => {
            return Err(invalid_config(format!(
                "name {name:?}: 1 to {MAX_NAME_LEN} of A-Z a-z 0-9 . _ -"
            )))
        }
        None => all.generated_name(),
    };
    let instance = Arc::new(ConsumerInstance::new(
        group.clone(),
        name.clone(),
        config,
        ctx.origin.principal.clone(),
    ));
    let now = crate::server::rest::time::now_ms();
    match all
        .registry
        .lock()
        .insert(&group, &name, instance.clone(), now)
    {
        Ok(()) => {}
        Err(RegistryError::Exists) => return Err(RestError::new(
            INSTANCE_EXISTS,
            "Consumer with specified consumer ID already exists in the specified consumer group.",
        )),
        Err(RegistryError::Full) => {
            return Err(RestError::new(
                429,
                format!("This broker holds its maximum of {MAX_INSTANCES} consumer instances"),
            ))
        }
    }
    all.start_reaper();
    tokio::spawn(instance.run(all.bridge.clone()));
    let path = format!(
        "/consumers/{}/instances/{}",
        path_segment(&group),
        path_segment(&name)
    );
    v2_ok(json!({ "instance_id": name, "base_uri": ctx.url(&path) }))
}

/// `DELETE /consumers/{group}/instances/{instance}`: closes it (it leaves its group) → 204.
pub async fn delete(ctx: Ctx, P((group, name)): P<(String, String)>) -> RestResult {
    let instance = consumers(&ctx).get(&group, &name, &ctx.origin.principal)?;
    consumers(&ctx).registry.lock().remove(&group, &name);
    instance.close(kafka(&ctx)).await;
    no_content()
}

/// `POST .../subscription`'s body: `topics` or `topic_pattern`.
#[derive(Debug, Deserialize)]
pub struct SubscribeBody {
    topics: Option<Vec<String>>,
    topic_pattern: Option<String>,
}

/// Whether `t` is a legal Kafka topic name.
fn valid_topic(t: &str) -> bool {
    !t.is_empty()
        && t.len() <= 249
        && t != "."
        && t != ".."
        && (t.bytes()).all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

/// `POST .../subscription` → 204.
pub async fn subscribe(
    ctx: Ctx,
    P((group, name)): P<(String, String)>,
    req: Request,
) -> RestResult {
    let instance = consumers(&ctx).get(&group, &name, &ctx.origin.principal)?;
    let body: SubscribeBody = required_json(req).await?;
    let target = match (body.topics, body.topic_pattern) {
        (Some(mut topics), None) if !topics.is_empty() => {
            check_items(topics.len(), "topics")?;
            if let Some(bad) = topics.iter().find(|t| !valid_topic(t)) {
                return Err(RestError::new(
                    BAD_REQUEST,
                    format!("Invalid topic name {bad:?}"),
                ));
            }
            topics.sort();
            topics.dedup();
            Target::Topics(topics)
        }
        (None, Some(pattern)) => {
            let build = |p: &str| {
                RegexBuilder::new(p)
                    .size_limit(MAX_PATTERN_SIZE)
                    .build()
                    .map_err(|e| RestError::unprocessable(format!("Invalid topic_pattern: {e}")))
            };
            // The pattern must be a regex on its own before it is anchored: `t)|(x` would otherwise
            // close the anchoring group and match any name containing `x`.
            build(&pattern)?;
            Target::Pattern(build(&format!("^(?:{pattern})$"))?)
        }
        _ => {
            return Err(RestError::unprocessable(
                "A subscription is a non-empty list of topics or a topic_pattern, not both",
            ))
        }
    };
    instance.subscribe(target).await?;
    no_content()
}

/// `GET .../subscription` → `{"topics": [...]}`.
pub async fn subscription(ctx: Ctx, P((group, name)): P<(String, String)>) -> RestResult {
    let instance = consumers(&ctx).get(&group, &name, &ctx.origin.principal)?;
    v2_ok(json!({ "topics": instance.subscription().await }))
}

/// `DELETE .../subscription`: unsubscribes (leaves the group) → 204.
pub async fn unsubscribe(ctx: Ctx, P((group, name)): P<(String, String)>) -> RestResult {
    let instance = consumers(&ctx).get(&group, &name, &ctx.origin.principal)?;
    instance.unsubscribe(kafka(&ctx)).await;
    no_content()
}

/// One partition in a body.
#[derive(Debug, Deserialize)]
pub struct PartitionRef {
    topic: String,
    partition: i32,
}

/// `{"partitions": [{"topic", "partition"}]}`.
#[derive(Debug, Deserialize)]
pub struct PartitionsBody {
    partitions: Vec<PartitionRef>,
}

/// The partitions of a body, sorted and deduplicated; 400 (40002) for an invalid topic or partition.
fn partitions_of(body: PartitionsBody) -> Result<Vec<TopicPartition>, RestError> {
    check_items(body.partitions.len(), "partitions")?;
    let mut out = Vec::with_capacity(body.partitions.len());
    for p in body.partitions {
        if !valid_topic(&p.topic) || p.partition < 0 {
            return Err(RestError::new(
                BAD_REQUEST,
                format!("Invalid partition {:?} {}", p.topic, p.partition),
            ));
        }
        out.push((p.topic, p.partition));
    }
    out.sort();
    out.dedup();
    Ok(out)
}

fn partitions_json(partitions: &[TopicPartition]) -> Value {
    let list: Vec<Value> = (partitions.iter())
        .map(|(t, p)| json!({ "topic": t, "partition": p }))
        .collect();
    json!({ "partitions": list })
}

/// `POST .../assignments` → 204.
pub async fn assign(ctx: Ctx, P((group, name)): P<(String, String)>, req: Request) -> RestResult {
    let instance = consumers(&ctx).get(&group, &name, &ctx.origin.principal)?;
    let partitions = partitions_of(required_json(req).await?)?;
    instance.assign(partitions).await?;
    no_content()
}

/// `GET .../assignments` → `{"partitions": [{"topic", "partition"}]}`.
pub async fn assignments(ctx: Ctx, P((group, name)): P<(String, String)>) -> RestResult {
    let instance = consumers(&ctx).get(&group, &name, &ctx.origin.principal)?;
    v2_ok(partitions_json(&instance.assignment().await))
}

/// One offset in a body (`metadata`: only for commits).
#[derive(Debug, Deserialize)]
pub struct OffsetRef {
    topic: String,
    partition: i32,
    offset: i64,
    metadata: Option<String>,
}

/// `{"offsets": [{"topic", "partition", "offset"}]}`.
#[derive(Debug, Deserialize)]
pub struct OffsetsBody {
    offsets: Vec<OffsetRef>,
}

/// The offsets of a body; 400 (40002) for an invalid topic, partition or negative offset.
fn offsets_of(body: OffsetsBody) -> Result<Vec<(TopicPartition, i64, Option<String>)>, RestError> {
    check_items(body.offsets.len(), "offsets")?;
    let mut out = Vec::with_capacity(body.offsets.len());
    for o in body.offsets {
        if !valid_topic(&o.topic) || o.partition < 0 || o.offset < 0 {
            return Err(RestError::new(
                BAD_REQUEST,
                format!("Invalid offset {:?} {} {}", o.topic, o.partition, o.offset),
            ));
        }
        out.push(((o.topic, o.partition), o.offset, o.metadata));
    }
    Ok(out)
}

/// `POST .../positions` (`{"offsets": [...]}`) → 204.
pub async fn seek(ctx: Ctx, P((group, name)): P<(String, String)>, req: Request) -> RestResult {
    let instance = consumers(&ctx).get(&group, &name, &ctx.origin.principal)?;
    let offsets = offsets_of(required_json(req).await?)?;
    let offsets = offsets.into_iter().map(|(tp, o, _)| (tp, o)).collect();
    instance.seek(offsets).await?;
    no_content()
}

async fn seek_to(
    ctx: Ctx,
    group: String,
    name: String,
    req: Request,
    beginning: bool,
) -> RestResult {
    let instance = consumers(&ctx).get(&group, &name, &ctx.origin.principal)?;
    let partitions = partitions_of(required_json(req).await?)?;
    instance.seek_to(kafka(&ctx), partitions, beginning).await?;
    no_content()
}

/// `POST .../positions/beginning` (`{"partitions": [...]}`) → 204.
pub async fn seek_to_beginning(
    ctx: Ctx,
    P((group, name)): P<(String, String)>,
    req: Request,
) -> RestResult {
    seek_to(ctx, group, name, req, true).await
}

/// `POST .../positions/end` (`{"partitions": [...]}`) → 204.
pub async fn seek_to_end(
    ctx: Ctx,
    P((group, name)): P<(String, String)>,
    req: Request,
) -> RestResult {
    seek_to(ctx, group, name, req, false).await
}

/// `timeout` and `max_bytes` of a records query (400 for a value that is not an integer), cut to
/// `0..=MAX_FETCH_WAIT_MS` and `1..=MAX_RECORDS_BYTES`.
fn records_query(query: Option<&str>, default_timeout_ms: i32) -> Result<(i32, i32), RestError> {
    let (mut timeout, mut max_bytes) =
        (i64::from(default_timeout_ms), i64::from(MAX_RECORDS_BYTES));
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let slot = match key {
            "timeout" => &mut timeout,
            "max_bytes" => &mut max_bytes,
            _ => continue,
        };
        *slot = value.parse().map_err(|_| {
            RestError::bad_request(format!("{key} must be an integer, got {value:?}"))
        })?;
    }
    let timeout = timeout.clamp(0, i64::from(MAX_FETCH_WAIT_MS)) as i32;
    let max_bytes = max_bytes.clamp(1, i64::from(MAX_RECORDS_BYTES)) as i32;
    Ok((timeout, max_bytes))
}

/// `GET .../records?timeout=&max_bytes=` → `[{"topic", "key", "value", "partition", "offset"}]`; 406
/// (40601) when `Accept` names another embedded format than the instance's.
pub async fn records(
    ctx: Ctx,
    P((group, name)): P<(String, String)>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> RestResult {
    let instance = consumers(&ctx).get(&group, &name, &ctx.origin.principal)?;
    let format = instance.config.format;
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    if !format.accepted_by(accept) {
        return Err(RestError::new(
            FORMAT_MISMATCH,
            format!(
                "The requested embedded data format does not match the deserializer for this \
                 consumer instance ({})",
                format.name()
            ),
        ));
    }
    let (timeout, max_bytes) = records_query(query.as_deref(), instance.config.request_timeout_ms)?;
    let out = instance.records(kafka(&ctx), timeout, max_bytes).await?;
    let body = Value::Array(out).to_string();
    Ok(([(header::CONTENT_TYPE, format.content_type())], body).into_response())
}

/// `POST .../offsets`: commits the body's offsets (each the last record processed), or with no body the
/// current positions → 200 without a body.
pub async fn commit(ctx: Ctx, P((group, name)): P<(String, String)>, req: Request) -> RestResult {
    let instance = consumers(&ctx).get(&group, &name, &ctx.origin.principal)?;
    let offsets = match optional_json::<OffsetsBody>(req).await? {
        Some(body) if !body.offsets.is_empty() => Some(offsets_of(body)?),
        _ => None,
    };
    instance.commit(kafka(&ctx), offsets).await?;
    Ok(StatusCode::OK.into_response())
}

/// `GET .../offsets` (body `{"partitions": [...]}`, or none for the assigned partitions) →
/// `{"offsets": [{"topic", "partition", "offset", "metadata"}]}`, the committed ones.
pub async fn committed(
    ctx: Ctx,
    P((group, name)): P<(String, String)>,
    req: Request,
) -> RestResult {
    let instance = consumers(&ctx).get(&group, &name, &ctx.origin.principal)?;
    let partitions = match optional_json::<PartitionsBody>(req).await? {
        Some(body) => Some(partitions_of(body)?),
        None => None,
    };
    let offsets = instance.committed(kafka(&ctx), partitions).await?;
    v2_ok(json!({ "offsets": offsets }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configs_parse_and_bad_ones_are_42204() {
        let body: CreateBody = serde_json::from_value(json!({
            "name": "c1", "format": "json", "auto.offset.reset": "earliest",
            "auto.commit.enable": "false", "fetch.min.bytes": "10",
            "consumer.request.timeout.ms": 500,
        }))
        .unwrap();
        let c = parse_config(&body).unwrap();
        assert_eq!(c.format, EmbeddedFormat::Json);
        assert!(c.reset_earliest && !c.auto_commit);
        assert_eq!((c.fetch_min_bytes, c.request_timeout_ms), (10, 500));
        let d = parse_config(&CreateBody::default()).unwrap();
        assert_eq!(d.format, EmbeddedFormat::Binary);
        assert!(!d.reset_earliest && d.auto_commit);
        for bad in [
            json!({"format": "avro"}),
            json!({"auto.offset.reset": "none"}),
            json!({"auto.commit.enable": "yes"}),
            json!({"fetch.min.bytes": "x"}),
            json!({"fetch.min.bytes": 1_i64 << 40}),
        ] {
            let body: CreateBody = serde_json::from_value(bad.clone()).unwrap();
            let e = parse_config(&body).unwrap_err();
            assert_eq!(e.error_code, INVALID_CONSUMER_CONFIG, "{bad}");
        }
    }

    #[test]
    fn names_queries_and_paths() {
        assert!(valid_name("rest-consumer_1.a"));
        assert!(!valid_name("") && !valid_name("a/b") && !valid_name(&"x".repeat(256)));
        assert!(valid_topic("t-1.x_y") && !valid_topic("..") && !valid_topic("a b"));
        assert_eq!(path_segment("g 1/é"), "g%201%2F%C3%A9");
        assert_eq!(
            records_query(None, 1000).unwrap(),
            (1000, MAX_RECORDS_BYTES)
        );
        assert_eq!(
            records_query(Some("timeout=99999&max_bytes=0&x=y"), 1000).unwrap(),
            (MAX_FETCH_WAIT_MS, 1)
        );
        assert_eq!(records_query(Some("timeout=-1"), 1000).unwrap().0, 0);
        assert_eq!(
            records_query(Some("max_bytes=ten"), 1000)
                .unwrap_err()
                .error_code,
            400
        );
        assert!(check_items(MAX_ITEMS, "partitions").is_ok());
        assert_eq!(
            check_items(MAX_ITEMS + 1, "partitions")
                .unwrap_err()
                .error_code,
            422
        );
    }
}
