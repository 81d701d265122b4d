//! API v3 topic configs: list, get one, update one (PUT), reset one (DELETE) and the batch
//! `configs:alter`, through DescribeConfigs and IncrementalAlterConfigs (KIP-339) on the TOPIC resource.

use protocol::messages::describe_configs_request::DescribeConfigsResource;
use protocol::messages::describe_configs_response::DescribeConfigsResourceResult;
use protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use protocol::messages::{DescribeConfigsRequest, IncrementalAlterConfigsRequest};
use protocol::{RequestBody, ResponseBody};
use serde::Deserialize;
use serde_json::{json, Value};

use super::error::RestError;
use super::v3::unexpected;
use super::{no_content, ok, Ctx, JsonBody, RestResult, P};

/// Kafka's `ConfigResource.Type.TOPIC`.
const TOPIC: i8 = 2;

/// Kafka's `AlterConfigOp.OpType` codes.
const SET: i8 = 0;
const DELETE: i8 = 1;

/// Kafka's `ConfigEntry.ConfigSource` names by their DescribeConfigs code.
fn source_name(code: i8) -> &'static str {
    match code {
        1 => "DYNAMIC_TOPIC_CONFIG",
        2 => "DYNAMIC_BROKER_CONFIG",
        3 => "DYNAMIC_DEFAULT_BROKER_CONFIG",
        4 => "STATIC_BROKER_CONFIG",
        5 => "DEFAULT_CONFIG",
        6 => "DYNAMIC_BROKER_LOGGER_CONFIG",
        7 => "CLIENT_METRICS_CONFIG",
        8 => "GROUP_CONFIG",
        _ => "UNKNOWN",
    }
}

/// The topic's configs (`keys` = `None`: all of them). 404 for an unknown topic.
async fn describe(
    ctx: &Ctx,
    topic: &str,
    keys: Option<Vec<String>>,
) -> Result<Vec<DescribeConfigsResourceResult>, RestError> {
    let request = DescribeConfigsRequest {
        resources: vec![DescribeConfigsResource {
            resource_type: TOPIC,
            resource_name: topic.to_string(),
            configuration_keys: keys,
            ..Default::default()
        }],
        include_synonyms: true,
        ..Default::default()
    };
    let ResponseBody::DescribeConfigs(r) = ctx.call(RequestBody::DescribeConfigs(request)).await?
    else {
        return Err(unexpected());
    };
    let result = r.results.into_iter().next().ok_or_else(unexpected)?;
    RestError::check(result.error_code, result.error_message.as_deref())?;
    Ok(result.configs)
}

fn config_json(ctx: &Ctx, cluster: &str, topic: &str, c: &DescribeConfigsResourceResult) -> Value {
    let path = format!("/v3/clusters/{cluster}/topics/{topic}/configs/{}", c.name);
    let synonyms: Vec<Value> = (c.synonyms.iter())
        .map(|s| json!({ "name": s.name, "value": s.value, "source": source_name(s.source) }))
        .collect();
    json!({
        "kind": "KafkaTopicConfig",
        "metadata": ctx.meta(&path, Some(format!(
            "crn:///kafka={cluster}/topic={topic}/config={}", c.name))),
        "cluster_id": cluster,
        "topic_name": topic,
        "name": c.name,
        "value": c.value,
        "is_default": c.config_source == 5,
        "is_read_only": c.read_only,
        "is_sensitive": c.is_sensitive,
        "source": source_name(c.config_source),
        "synonyms": synonyms,
    })
}

/// `GET .../topics/{topic_name}/configs`.
pub async fn list(ctx: Ctx, P((cluster_id, topic)): P<(String, String)>) -> RestResult {
    let cluster = ctx.check_cluster(&cluster_id)?;
    let configs = describe(&ctx, &topic, None).await?;
    let data = configs
        .iter()
        .map(|c| config_json(&ctx, &cluster, &topic, c));
    let path = format!("/v3/clusters/{cluster}/topics/{topic}/configs");
    ctx.list("KafkaTopicConfigList", &path, data.collect())
}

/// `GET .../topics/{topic_name}/configs/{name}`: 404 for a config the topic does not have.
pub async fn get_one(
    ctx: Ctx,
    P((cluster_id, topic, name)): P<(String, String, String)>,
) -> RestResult {
    let cluster = ctx.check_cluster(&cluster_id)?;
    let configs = describe(&ctx, &topic, Some(vec![name.clone()])).await?;
    match configs.iter().find(|c| c.name == name) {
        Some(c) => ok(config_json(&ctx, &cluster, &topic, c)),
        None => Err(RestError::not_found(format!(
            "Config {name} of topic {topic} cannot be found."
        ))),
    }
}

/// Sends one IncrementalAlterConfigs for `topic`.
async fn alter(
    ctx: &Ctx,
    topic: &str,
    configs: Vec<AlterableConfig>,
    validate_only: bool,
) -> Result<(), RestError> {
    let request = IncrementalAlterConfigsRequest {
        resources: vec![AlterConfigsResource {
            resource_type: TOPIC,
            resource_name: topic.to_string(),
            configs,
            ..Default::default()
        }],
        validate_only,
        ..Default::default()
    };
    let ResponseBody::IncrementalAlterConfigs(r) = ctx
        .call(RequestBody::IncrementalAlterConfigs(request))
        .await?
    else {
        return Err(unexpected());
    };
    let result = r.responses.first().ok_or_else(unexpected)?;
    RestError::check(result.error_code, result.error_message.as_deref())
}

fn op(name: String, config_operation: i8, value: Option<String>) -> AlterableConfig {
    AlterableConfig {
        name,
        config_operation,
        value,
        ..Default::default()
    }
}

/// The body of `PUT .../configs/{name}`.
#[derive(Debug, Deserialize)]
pub struct UpdateConfig {
    value: Option<String>,
}

/// `PUT .../topics/{topic_name}/configs/{name}`: sets the topic's override; 204.
pub async fn update(
    ctx: Ctx,
    P((cluster_id, topic, name)): P<(String, String, String)>,
    JsonBody(body): JsonBody<UpdateConfig>,
) -> RestResult {
    ctx.check_cluster(&cluster_id)?;
    alter(&ctx, &topic, vec![op(name, SET, body.value)], false).await?;
    no_content()
}

/// `DELETE .../topics/{topic_name}/configs/{name}`: removes the topic's override; 204.
pub async fn reset(
    ctx: Ctx,
    P((cluster_id, topic, name)): P<(String, String, String)>,
) -> RestResult {
    ctx.check_cluster(&cluster_id)?;
    alter(&ctx, &topic, vec![op(name, DELETE, None)], false).await?;
    no_content()
}

/// One entry of `configs:alter`.
#[derive(Debug, Deserialize)]
pub struct AlterEntry {
    name: String,
    value: Option<String>,
    /// `SET` (default) or `DELETE`.
    operation: Option<String>,
}

/// The body of `POST .../configs:alter`.
#[derive(Debug, Deserialize)]
pub struct AlterBatch {
    data: Vec<AlterEntry>,
    #[serde(default)]
    validate_only: bool,
}

/// `POST .../topics/{topic_name}/configs:alter`: every change in one IncrementalAlterConfigs (all or
/// nothing); 204. An operation other than SET/DELETE is a 400.
pub async fn alter_batch(
    ctx: Ctx,
    P((cluster_id, topic)): P<(String, String)>,
    JsonBody(body): JsonBody<AlterBatch>,
) -> RestResult {
    ctx.check_cluster(&cluster_id)?;
    let mut configs = Vec::with_capacity(body.data.len());
    for e in body.data {
        let code = match e
            .operation
            .as_deref()
            .map(str::to_ascii_uppercase)
            .as_deref()
        {
            None | Some("SET") => SET,
            Some("DELETE") => DELETE,
            Some(other) => {
                return Err(RestError::bad_request(format!(
                    "Unknown operation {other}: SET or DELETE"
                )))
            }
        };
        configs.push(op(e.name, code, e.value));
    }
    alter(&ctx, &topic, configs, body.validate_only).await?;
    no_content()
}
