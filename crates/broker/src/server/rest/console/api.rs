//! The console's own JSON routes, for what the REST Proxy v3 resources do not give in one call:
//! - `GET /console/api/cluster`: the brokers, the controller and every topic with its partition health
//!   (one Metadata request);
//! - `GET /console/api/topics/{topic}`: each partition's leader, replicas, ISR, LogStartOffset,
//!   HighWatermark and size on this broker (Metadata, ListOffsets, DescribeLogDirs);
//! - `POST /console/api/consumer-groups/{group}/offsets`: reset a group's committed offsets for a topic, as
//!   `kafka-consumer-groups --reset-offsets --execute` does (only while the group has no members).
//!
//! Everything goes through the broker's handlers ([`super::super::bridge`]), so ACLs apply as to a client.

use std::collections::HashMap;

use protocol::messages::describe_log_dirs_request::DescribableLogDirTopic;
use protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use protocol::messages::{DescribeLogDirsRequest, MetadataRequest, OffsetCommitRequest};
use protocol::{ErrorCode, RequestBody, ResponseBody};
use serde::Deserialize;
use serde_json::{json, Value};

use super::super::error::RestError;
use super::super::groups::describe;
use super::super::v3::{metadata, unexpected};
use super::super::{ok, Ctx, JsonBody, RestResult, P};
use super::browse::{list_offsets, EARLIEST, LATEST};

/// `GET /console/api/cluster`: `{"cluster_id", "controller_id", "brokers": [{"id", "host", "port", "rack"}],
/// "topics": [{"name", "internal", "partitions", "replication_factor", "under_replicated", "offline"}]}`
/// (topics sorted by name; `offline` = partitions without a leader).
pub async fn cluster(ctx: Ctx) -> RestResult {
    let request = MetadataRequest {
        topics: None,
        ..Default::default()
    };
    let ResponseBody::Metadata(r) = ctx.call(RequestBody::Metadata(request)).await? else {
        return Err(unexpected());
    };
    let mut brokers: Vec<Value> = (r.brokers.iter())
        .map(|b| json!({ "id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack }))
        .collect();
    brokers.sort_by_key(|b| b["id"].as_i64());
    let mut topics: Vec<Value> = (r.topics.iter())
        .filter(|t| t.error_code == 0)
        .map(|t| {
            let under = (t.partitions.iter())
                .filter(|p| p.isr_nodes.len() < p.replica_nodes.len())
                .count();
            let offline = t.partitions.iter().filter(|p| p.leader_id < 0).count();
            let rf = t.partitions.first().map_or(0, |p| p.replica_nodes.len());
            json!({
                "name": t.name,
                "internal": t.is_internal,
                "partitions": t.partitions.len(),
                "replication_factor": rf,
                "under_replicated": under,
                "offline": offline,
            })
        })
        .collect();
    topics.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    ok(json!({
        "cluster_id": ctx.cluster_id(),
        "controller_id": r.controller_id,
        "brokers": brokers,
        "topics": topics,
    }))
}

/// Bytes of each partition of `topic` on this broker (DescribeLogDirs; empty when not allowed).
async fn sizes(ctx: &Ctx, topic: &str, partitions: &[i32]) -> HashMap<i32, i64> {
    let request = DescribeLogDirsRequest {
        topics: Some(vec![DescribableLogDirTopic {
            topic: topic.to_string(),
            partitions: partitions.to_vec(),
            ..Default::default()
        }]),
        ..Default::default()
    };
    let mut out = HashMap::new();
    if let Ok(ResponseBody::DescribeLogDirs(r)) =
        ctx.call(RequestBody::DescribeLogDirs(request)).await
    {
        let current = (r.results.iter())
            .flat_map(|d| &d.topics)
            .flat_map(|t| &t.partitions)
            .filter(|p| !p.is_future_key);
        for p in current {
            out.insert(p.partition_index, p.partition_size);
        }
    }
    out
}

/// `GET /console/api/topics/{topic}`: `{"name", "topic_id", "internal", "partitions": [{"partition", "leader",
/// "replicas", "isr", "offline_replicas", "log_start_offset", "high_watermark", "size_bytes"}]}`; offsets -1
/// and `size_bytes` null where unknown (a partition hosted elsewhere has no size here). 404: unknown topic.
pub async fn topic(ctx: Ctx, P(topic): P<String>) -> RestResult {
    let t = metadata(&ctx, Some(&topic)).await?;
    let t = t.into_iter().next().ok_or_else(unexpected)?;
    let mut parts = t.partitions;
    parts.sort_by_key(|p| p.partition_index);
    let ids: Vec<i32> = parts.iter().map(|p| p.partition_index).collect();
    let starts: HashMap<_, _> = list_offsets(&ctx, &topic, &ids, EARLIEST)
        .await?
        .into_iter()
        .collect();
    let ends: HashMap<_, _> = list_offsets(&ctx, &topic, &ids, LATEST)
        .await?
        .into_iter()
        .collect();
    let sizes = sizes(&ctx, &topic, &ids).await;
    let list: Vec<Value> = (parts.iter())
        .map(|p| {
            let i = p.partition_index;
            json!({
                "partition": i,
                "leader": p.leader_id,
                "replicas": p.replica_nodes,
                "isr": p.isr_nodes,
                "offline_replicas": p.offline_replicas,
                "log_start_offset": starts.get(&i).copied().unwrap_or(-1),
                "high_watermark": ends.get(&i).copied().unwrap_or(-1),
                "size_bytes": sizes.get(&i),
            })
        })
        .collect();
    ok(json!({
        "name": topic,
        "topic_id": t.topic_id.to_string(),
        "internal": t.is_internal,
        "partitions": list,
    }))
}

/// The most partitions one reset may name.
pub const MAX_PARTITIONS: usize = 10_000;

/// A reset: `{"topic", "partitions": [..] (absent: all; at most [`MAX_PARTITIONS`]), "to": "earliest" | "latest" | "offset" |
/// "timestamp", "offset", "timestamp" (ms)}`.
#[derive(Debug, Deserialize)]
pub struct Reset {
    topic: String,
    partitions: Option<Vec<i32>>,
    to: String,
    offset: Option<i64>,
    timestamp: Option<i64>,
}

/// The offsets `reset` asks for, per partition of `all` it names. Errors: 422 for a bad `to` or a partition
/// the topic does not have.
async fn targets(ctx: &Ctx, reset: &Reset, all: &[i32]) -> Result<Vec<(i32, i64)>, RestError> {
    let mut chosen = reset.partitions.clone().unwrap_or_else(|| all.to_vec());
    chosen.sort_unstable();
    chosen.dedup();
    if let Some(p) = chosen.iter().find(|p| all.binary_search(p).is_err()) {
        return Err(RestError::unprocessable(format!(
            "Partition {p} of topic {} cannot be found.",
            reset.topic
        )));
    }
    let (topic, to) = (&reset.topic, reset.to.as_str());
    let earliest = list_offsets(ctx, topic, &chosen, EARLIEST).await?;
    let latest = list_offsets(ctx, topic, &chosen, LATEST).await?;
    let bounded =
        |(i, &(p, lo)): (usize, &(i32, i64)), want: i64| (p, want.clamp(lo, latest[i].1.max(lo)));
    let out = match (to, reset.offset, reset.timestamp) {
        ("earliest", None, None) => earliest,
        ("latest", None, None) => latest.clone(),
        ("offset", Some(o), None) => earliest.iter().enumerate().map(|e| bounded(e, o)).collect(),
        ("timestamp", None, Some(ts)) if ts >= 0 => {
            let at = list_offsets(ctx, topic, &chosen, ts).await?;
            // No record that late: the end, as kafka-consumer-groups --to-datetime does.
            (at.iter().zip(&latest))
                .map(|(&(p, o), &(_, end))| (p, if o < 0 { end } else { o }))
                .collect()
        }
        _ => {
            return Err(RestError::unprocessable(
                "to is earliest, latest, offset (with offset) or timestamp (with a timestamp in ms >= 0)",
            ))
        }
    };
    Ok(out)
}

/// `POST /console/api/consumer-groups/{group}/offsets` with a [`Reset`]: commits the new offsets and answers
/// `{"offsets": [{"partition", "offset", "error"}]}` (`error` null or a Kafka error name). 409 (40901) while
/// the group has members; 404 for an unknown topic.
pub async fn reset_offsets(
    ctx: Ctx,
    P(group): P<String>,
    JsonBody(reset): JsonBody<Reset>,
) -> RestResult {
    if group.is_empty()
        || reset
            .partitions
            .as_ref()
            .is_some_and(|p| p.len() > MAX_PARTITIONS)
    {
        return Err(RestError::unprocessable(format!(
            "a group id and at most {MAX_PARTITIONS} partitions are required"
        )));
    }
    match describe(&ctx, &group).await {
        Ok(g) if !g.members.is_empty() => {
            return Err(RestError::new(
                40901,
                format!(
                "Consumer group {group} has {} active member(s) ({}): offsets can be reset only \
                     while it is empty, as with kafka-consumer-groups --reset-offsets",
                g.members.len(),
                g.group_state
            ),
            ))
        }
        Ok(_) => {}
        Err(e) if e.error_code == 40403 => {} // No group yet: the commit creates it.
        Err(e) => return Err(e),
    }
    let t = metadata(&ctx, Some(&reset.topic)).await?;
    let t = t.into_iter().next().ok_or_else(unexpected)?;
    let mut all: Vec<i32> = t.partitions.iter().map(|p| p.partition_index).collect();
    all.sort_unstable();
    let offsets = targets(&ctx, &reset, &all).await?;
    let partitions =
        (offsets.iter())
            .filter(|(_, o)| *o >= 0)
            .map(|&(p, o)| OffsetCommitRequestPartition {
                partition_index: p,
                committed_offset: o,
                committed_leader_epoch: -1,
                committed_metadata: Some(String::new()),
                ..Default::default()
            });
    let request = OffsetCommitRequest {
        group_id: group.clone(),
        generation_id_or_member_epoch: -1,
        retention_time_ms: -1,
        topics: vec![OffsetCommitRequestTopic {
            name: reset.topic.clone(),
            topic_id: t.topic_id,
            partitions: partitions.collect(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let ResponseBody::OffsetCommit(r) = ctx.call(RequestBody::OffsetCommit(request)).await? else {
        return Err(unexpected());
    };
    let errors: HashMap<i32, i16> = (r.topics.into_iter())
        .flat_map(|t| t.partitions)
        .map(|p| (p.partition_index, p.error_code))
        .collect();
    let list: Vec<Value> = (offsets.iter())
        .map(|&(p, o)| {
            let error = match errors.get(&p) {
                Some(0) => Value::Null,
                Some(&c) => Value::String(ErrorCode(c).name().to_string()),
                None => Value::String("OFFSET_NOT_AVAILABLE".to_string()),
            };
            json!({ "partition": p, "offset": o, "error": error })
        })
        .collect();
    ok(json!({ "offsets": list }))
}
