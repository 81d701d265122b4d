//! API v3: clusters, brokers, topics, partitions and replicas (Confluent REST Proxy shapes: `kind`,
//! `metadata.self`, `related` links, `data` arrays). Answered from DescribeCluster, Metadata, CreateTopics and
//! DeleteTopics sent through the broker's handlers.

use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;
use protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use protocol::messages::delete_topics_request::DeleteTopicState;
use protocol::messages::describe_cluster_response::DescribeClusterBroker;
use protocol::messages::metadata_request::MetadataRequestTopic;
use protocol::messages::metadata_response::{MetadataResponsePartition, MetadataResponseTopic};
use protocol::messages::{
    CreateTopicsRequest, DeleteTopicsRequest, DescribeClusterRequest, DescribeClusterResponse,
    MetadataRequest,
};
use protocol::{RequestBody, ResponseBody};
use serde::Deserialize;
use serde_json::{json, Value};

use super::error::RestError;
use super::{no_content, ok, Ctx, JsonBody, RestResult, P};

/// How long CreateTopics and DeleteTopics may wait for the change (ms).
const ADMIN_TIMEOUT_MS: i32 = 30_000;

/// An unexpected response type (never happens: the bridge decodes the response of the request sent).
pub(super) fn unexpected() -> RestError {
    RestError::internal("unexpected response type")
}

async fn describe_cluster(ctx: &Ctx) -> Result<DescribeClusterResponse, RestError> {
    let request = DescribeClusterRequest {
        endpoint_type: 1,
        ..Default::default()
    };
    match ctx.call(RequestBody::DescribeCluster(request)).await? {
        ResponseBody::DescribeCluster(r) => {
            RestError::check(r.error_code, r.error_message.as_deref())?;
            Ok(r)
        }
        _ => Err(unexpected()),
    }
}

/// Metadata for every topic (`None`) or for `topic`, whose error (unknown: 404) is returned.
pub(super) async fn metadata(
    ctx: &Ctx,
    topic: Option<&str>,
) -> Result<Vec<MetadataResponseTopic>, RestError> {
    let topics = topic.map(|name| {
        vec![MetadataRequestTopic {
            name: Some(name.to_string()),
            ..Default::default()
        }]
    });
    let request = MetadataRequest {
        topics,
        allow_auto_topic_creation: false,
        ..Default::default()
    };
    let ResponseBody::Metadata(response) = ctx.call(RequestBody::Metadata(request)).await? else {
        return Err(unexpected());
    };
    if let Some(name) = topic {
        let t = response.topics.first().ok_or_else(unexpected)?;
        if t.error_code == protocol::ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.0 {
            return Err(RestError::not_found(format!(
                "This server does not host this topic-partition: topic {name} not found."
            )));
        }
        RestError::check(t.error_code, None)?;
    }
    Ok(response.topics)
}

fn cluster_json(ctx: &Ctx, r: &DescribeClusterResponse) -> Value {
    let c = format!("/v3/clusters/{}", r.cluster_id);
    json!({
        "kind": "KafkaCluster",
        "metadata": ctx.meta(&c, Some(format!("crn:///kafka={}", r.cluster_id))),
        "cluster_id": r.cluster_id,
        "controller": ctx.related(&format!("{c}/brokers/{}", r.controller_id)),
        "brokers": ctx.related(&format!("{c}/brokers")),
        "topics": ctx.related(&format!("{c}/topics")),
        "consumer_groups": ctx.related(&format!("{c}/consumer-groups")),
    })
}

/// `GET /v3/clusters`: this cluster, alone.
pub async fn list_clusters(ctx: Ctx) -> RestResult {
    let r = describe_cluster(&ctx).await?;
    ctx.list(
        "KafkaClusterList",
        "/v3/clusters",
        vec![cluster_json(&ctx, &r)],
    )
}

/// `GET /v3/clusters/{cluster_id}`.
pub async fn get_cluster(ctx: Ctx, P(cluster_id): P<String>) -> RestResult {
    ctx.check_cluster(&cluster_id)?;
    let r = describe_cluster(&ctx).await?;
    ok(cluster_json(&ctx, &r))
}

fn broker_json(ctx: &Ctx, cluster: &str, b: &DescribeClusterBroker) -> Value {
    let path = format!("/v3/clusters/{cluster}/brokers/{}", b.broker_id);
    json!({
        "kind": "KafkaBroker",
        "metadata": ctx.meta(&path, Some(format!("crn:///kafka={cluster}/broker={}", b.broker_id))),
        "cluster_id": cluster,
        "broker_id": b.broker_id,
        "host": b.host,
        "port": b.port,
        "rack": b.rack,
    })
}

/// `GET /v3/clusters/{cluster_id}/brokers`.
pub async fn list_brokers(ctx: Ctx, P(cluster_id): P<String>) -> RestResult {
    let cluster = ctx.check_cluster(&cluster_id)?;
    let r = describe_cluster(&ctx).await?;
    let data = r.brokers.iter().map(|b| broker_json(&ctx, &cluster, b));
    let path = format!("/v3/clusters/{cluster}/brokers");
    ctx.list("KafkaBrokerList", &path, data.collect())
}

/// `GET /v3/clusters/{cluster_id}/brokers/{broker_id}`.
pub async fn get_broker(ctx: Ctx, P((cluster_id, broker_id)): P<(String, String)>) -> RestResult {
    let cluster = ctx.check_cluster(&cluster_id)?;
    let r = describe_cluster(&ctx).await?;
    let found =
        (broker_id.parse::<i32>().ok()).and_then(|id| r.brokers.iter().find(|b| b.broker_id == id));
    match found {
        Some(b) => ok(broker_json(&ctx, &cluster, b)),
        None => Err(RestError::not_found(format!(
            "Broker {broker_id} cannot be found."
        ))),
    }
}

fn topic_json(ctx: &Ctx, cluster: &str, t: &MetadataResponseTopic) -> Value {
    let name = t.name.as_deref().unwrap_or("");
    let rf = t.partitions.first().map_or(0, |p| p.replica_nodes.len());
    topic_shape(
        ctx,
        cluster,
        name,
        t.is_internal,
        rf as i32,
        t.partitions.len() as i32,
    )
}

fn topic_shape(
    ctx: &Ctx,
    cluster: &str,
    name: &str,
    is_internal: bool,
    replication_factor: i32,
    partitions_count: i32,
) -> Value {
    let path = format!("/v3/clusters/{cluster}/topics/{name}");
    json!({
        "kind": "KafkaTopic",
        "metadata": ctx.meta(&path, Some(format!("crn:///kafka={cluster}/topic={name}"))),
        "cluster_id": cluster,
        "topic_name": name,
        "is_internal": is_internal,
        "replication_factor": replication_factor,
        "partitions_count": partitions_count,
        "partitions": ctx.related(&format!("{path}/partitions")),
        "configs": ctx.related(&format!("{path}/configs")),
    })
}

/// `GET /v3/clusters/{cluster_id}/topics`: every topic the principal may describe, by name.
pub async fn list_topics(ctx: Ctx, P(cluster_id): P<String>) -> RestResult {
    let cluster = ctx.check_cluster(&cluster_id)?;
    let mut topics = metadata(&ctx, None).await?;
    topics.sort_by(|a, b| a.name.cmp(&b.name));
    let data = topics.iter().map(|t| topic_json(&ctx, &cluster, t));
    let path = format!("/v3/clusters/{cluster}/topics");
    ctx.list("KafkaTopicList", &path, data.collect())
}

/// `GET /v3/clusters/{cluster_id}/topics/{topic_name}`.
pub async fn get_topic(ctx: Ctx, P((cluster_id, topic)): P<(String, String)>) -> RestResult {
    let cluster = ctx.check_cluster(&cluster_id)?;
    let topics = metadata(&ctx, Some(&topic)).await?;
    let t = topics.first().ok_or_else(unexpected)?;
    ok(topic_json(&ctx, &cluster, t))
}

/// One config of a create-topic request.
#[derive(Debug, Deserialize)]
pub struct ConfigEntry {
    name: String,
    value: Option<String>,
}

/// The body of `POST /v3/clusters/{cluster_id}/topics`.
#[derive(Debug, Deserialize)]
pub struct CreateTopic {
    topic_name: String,
    /// Absent: the broker's `num.partitions`.
    partitions_count: Option<i32>,
    /// Absent: the broker's `default.replication.factor`.
    replication_factor: Option<i16>,
    #[serde(default)]
    configs: Vec<ConfigEntry>,
    #[serde(default)]
    validate_only: bool,
}

/// `POST /v3/clusters/{cluster_id}/topics`: CreateTopics; 201 with the topic.
pub async fn create_topic(
    ctx: Ctx,
    P(cluster_id): P<String>,
    JsonBody(body): JsonBody<CreateTopic>,
) -> RestResult {
    let cluster = ctx.check_cluster(&cluster_id)?;
    let topic = CreatableTopic {
        name: body.topic_name.clone(),
        num_partitions: body.partitions_count.unwrap_or(-1),
        replication_factor: body.replication_factor.unwrap_or(-1),
        configs: (body.configs.into_iter())
            .map(|c| CreatableTopicConfig {
                name: c.name,
                value: c.value,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let request = CreateTopicsRequest {
        topics: vec![topic],
        timeout_ms: ADMIN_TIMEOUT_MS,
        validate_only: body.validate_only,
        ..Default::default()
    };
    let ResponseBody::CreateTopics(r) = ctx.call(RequestBody::CreateTopics(request)).await? else {
        return Err(unexpected());
    };
    let t = r.topics.first().ok_or_else(unexpected)?;
    RestError::check(t.error_code, t.error_message.as_deref())?;
    let shape = topic_shape(
        &ctx,
        &cluster,
        &t.name,
        false,
        i32::from(t.replication_factor),
        t.num_partitions,
    );
    Ok((StatusCode::CREATED, Json(shape)).into_response())
}

/// `DELETE /v3/clusters/{cluster_id}/topics/{topic_name}`: DeleteTopics; 204.
pub async fn delete_topic(ctx: Ctx, P((cluster_id, topic)): P<(String, String)>) -> RestResult {
    ctx.check_cluster(&cluster_id)?;
    let request = DeleteTopicsRequest {
        topics: vec![DeleteTopicState {
            name: Some(topic.clone()),
            ..Default::default()
        }],
        topic_names: vec![topic],
        timeout_ms: ADMIN_TIMEOUT_MS,
        ..Default::default()
    };
    let ResponseBody::DeleteTopics(r) = ctx.call(RequestBody::DeleteTopics(request)).await? else {
        return Err(unexpected());
    };
    let t = r.responses.first().ok_or_else(unexpected)?;
    RestError::check(t.error_code, t.error_message.as_deref())?;
    no_content()
}

fn partition_json(ctx: &Ctx, cluster: &str, topic: &str, p: &MetadataResponsePartition) -> Value {
    let path = format!(
        "/v3/clusters/{cluster}/topics/{topic}/partitions/{}",
        p.partition_index
    );
    let leader = match p.leader_id {
        id if id >= 0 => ctx.related(&format!("{path}/replicas/{id}")),
        _ => Value::Null,
    };
    json!({
        "kind": "KafkaPartition",
        "metadata": ctx.meta(&path, Some(format!(
            "crn:///kafka={cluster}/topic={topic}/partition={}", p.partition_index))),
        "cluster_id": cluster,
        "topic_name": topic,
        "partition_id": p.partition_index,
        "leader": leader,
        "replicas": ctx.related(&format!("{path}/replicas")),
    })
}

/// The partitions of `topic` (404 for an unknown topic).
async fn partitions(ctx: &Ctx, topic: &str) -> Result<Vec<MetadataResponsePartition>, RestError> {
    let topics = metadata(ctx, Some(topic)).await?;
    let mut partitions = topics.into_iter().next().ok_or_else(unexpected)?.partitions;
    partitions.sort_by_key(|p| p.partition_index);
    Ok(partitions)
}

/// Partition `id` of `topic`: 404 when the topic or the partition does not exist.
pub(super) async fn partition(
    ctx: &Ctx,
    topic: &str,
    id: &str,
) -> Result<MetadataResponsePartition, RestError> {
    let all = partitions(ctx, topic).await?;
    let found = id
        .parse::<i32>()
        .ok()
        .and_then(|id| all.into_iter().find(|p| p.partition_index == id));
    found.ok_or_else(|| {
        RestError::not_found(format!("Partition {id} of topic {topic} cannot be found."))
    })
}

/// `GET .../topics/{topic_name}/partitions`.
pub async fn list_partitions(ctx: Ctx, P((cluster_id, topic)): P<(String, String)>) -> RestResult {
    let cluster = ctx.check_cluster(&cluster_id)?;
    let parts = partitions(&ctx, &topic).await?;
    let data = parts
        .iter()
        .map(|p| partition_json(&ctx, &cluster, &topic, p));
    let path = format!("/v3/clusters/{cluster}/topics/{topic}/partitions");
    ctx.list("KafkaPartitionList", &path, data.collect())
}

/// `GET .../topics/{topic_name}/partitions/{partition_id}`.
pub async fn get_partition(
    ctx: Ctx,
    P((cluster_id, topic, id)): P<(String, String, String)>,
) -> RestResult {
    let cluster = ctx.check_cluster(&cluster_id)?;
    let p = partition(&ctx, &topic, &id).await?;
    ok(partition_json(&ctx, &cluster, &topic, &p))
}

fn replica_json(
    ctx: &Ctx,
    cluster: &str,
    topic: &str,
    p: &MetadataResponsePartition,
    b: i32,
) -> Value {
    let base = format!(
        "/v3/clusters/{cluster}/topics/{topic}/partitions/{}",
        p.partition_index
    );
    json!({
        "kind": "KafkaReplica",
        "metadata": ctx.meta(&format!("{base}/replicas/{b}"), None),
        "cluster_id": cluster,
        "topic_name": topic,
        "partition_id": p.partition_index,
        "broker_id": b,
        "is_leader": b == p.leader_id,
        "is_in_sync": p.isr_nodes.contains(&b),
        "broker": ctx.related(&format!("/v3/clusters/{cluster}/brokers/{b}")),
    })
}

/// `GET .../partitions/{partition_id}/replicas`: each replica with whether it leads and is in sync.
pub async fn list_replicas(
    ctx: Ctx,
    P((cluster_id, topic, id)): P<(String, String, String)>,
) -> RestResult {
    let cluster = ctx.check_cluster(&cluster_id)?;
    let p = partition(&ctx, &topic, &id).await?;
    let data = (p.replica_nodes.iter()).map(|&b| replica_json(&ctx, &cluster, &topic, &p, b));
    let path = format!(
        "/v3/clusters/{cluster}/topics/{topic}/partitions/{}/replicas",
        p.partition_index
    );
    ctx.list("KafkaReplicaList", &path, data.collect())
}

/// `GET .../partitions/{partition_id}/replicas/{broker_id}`.
pub async fn get_replica(
    ctx: Ctx,
    P((cluster_id, topic, id, broker)): P<(String, String, String, String)>,
) -> RestResult {
    let cluster = ctx.check_cluster(&cluster_id)?;
    let p = partition(&ctx, &topic, &id).await?;
    let found = (broker.parse::<i32>().ok()).filter(|b| p.replica_nodes.contains(b));
    match found {
        Some(b) => ok(replica_json(&ctx, &cluster, &topic, &p, b)),
        None => Err(RestError::not_found(format!(
            "Replica {broker} cannot be found."
        ))),
    }
}
