//! ListConfigResources (key 74), v0–1 (KIP-1142; v0 was ListClientMetricsResources, KIP-714). Source: Kafka's
//! message spec and the answers of Kafka 4.4.0 (`tests/test_admin_surface.py`).
//!
//! DESCRIBE_CONFIGS on the cluster is required (CLUSTER_AUTHORIZATION_FAILED, no resources). v0 lists only
//! client-metrics resources; v1 the requested resource types, all supported ones for an empty list, and
//! UNSUPPORTED_VERSION (no resources) when one requested type is not supported. Resources are listed by type
//! in Kafka's order: groups with configs, client-metrics resources, brokers, topics.
//!
//! Client-metrics resources are the KIP-714 subscriptions ([`crate::client_metrics`]); group resources the
//! groups with dynamic configs ([`crate::group_configs`]), whether or not the group exists. It has no
//! BROKER_LOGGER resource (DescribeConfigs does not serve it): that
//! type is UNSUPPORTED_VERSION when asked for and left out of an empty list (Kafka lists each broker's id).

use protocol::error::ErrorCode;
use protocol::messages::list_config_resources_response::ConfigResource;
use protocol::messages::{ListConfigResourcesRequest, ListConfigResourcesResponse};

use super::KafkaApis;
use crate::server::context::RequestContext;
use authorizer::AclOperation;

/// Resource type TOPIC.
const TOPIC: i8 = 2;
/// Resource type BROKER.
const BROKER: i8 = 4;
/// Resource type CLIENT_METRICS.
const CLIENT_METRICS: i8 = 16;
/// Resource type GROUP.
const GROUP: i8 = 32;

/// Answers ListConfigResources.
pub fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: ListConfigResourcesRequest,
) -> ListConfigResourcesResponse {
    let error = |code: ErrorCode| ListConfigResourcesResponse {
        error_code: code.0,
        ..Default::default()
    };
    if ctx
        .authorize_cluster(AclOperation::DescribeConfigs)
        .is_err()
    {
        return error(ErrorCode::CLUSTER_AUTHORIZATION_FAILED);
    }
    let supported: &[i8] = if ctx.api_version() == 0 {
        &[CLIENT_METRICS]
    } else {
        &[TOPIC, BROKER, CLIENT_METRICS, GROUP]
    };
    let types = if request.resource_types.is_empty() {
        supported.to_vec()
    } else {
        request.resource_types
    };
    if types.iter().any(|t| !supported.contains(t)) {
        return error(ErrorCode::UNSUPPORTED_VERSION);
    }
    let mut config_resources = Vec::new();
    let resource = |name: String, resource_type: i8| ConfigResource {
        resource_name: name,
        resource_type,
        ..Default::default()
    };
    if types.contains(&GROUP) {
        let groups = apis.metadata.groups_with_configs();
        config_resources.extend(groups.into_iter().map(|g| resource(g, GROUP)));
    }
    if types.contains(&CLIENT_METRICS) {
        let names = apis.telemetry.subscription_names();
        config_resources.extend(names.into_iter().map(|n| resource(n, CLIENT_METRICS)));
    }
    if types.contains(&BROKER) {
        config_resources.extend(broker_ids(apis, ctx).map(|id| resource(id, BROKER)));
    }
    if types.contains(&TOPIC) {
        let topics = apis.metadata.topics();
        config_resources.extend(topics.keys().map(|name| resource(name.clone(), TOPIC)));
    }
    ListConfigResourcesResponse {
        config_resources,
        ..Default::default()
    }
}

/// The ids of the brokers with an endpoint on the client's listener (this broker's alone while the image
/// has none).
fn broker_ids(apis: &KafkaApis, ctx: &RequestContext) -> impl Iterator<Item = String> {
    let image = apis.metadata_cache().image();
    let listener = ctx.listener_name();
    let mut ids: Vec<String> = (image.brokers.values())
        .filter(|b| b.endpoint(listener).is_some())
        .map(|b| b.broker_id.get().to_string())
        .collect();
    if image.brokers.is_empty() {
        ids.push(apis.config().node_id.get().to_string());
    }
    ids.into_iter()
}
