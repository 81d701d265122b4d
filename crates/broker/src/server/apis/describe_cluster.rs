//! DescribeCluster (key 60), v0–2. Source: Kafka protocol guide; KIP-700 (v0), KIP-919 (endpoint type, v1),
//! KIP-1073 (fenced brokers, v2).

use protocol::error::ErrorCode;
use protocol::messages::describe_cluster_response::DescribeClusterBroker;
use protocol::messages::{DescribeClusterRequest, DescribeClusterResponse};

use super::KafkaApis;
use crate::server::context::RequestContext;
use authorizer::{AclOperation, ResourceType, CLUSTER_NAME};

/// Endpoint type "brokers" (1).
const ENDPOINT_TYPE_BROKERS: i8 = 1;
/// Endpoint type "controllers" (2, KIP-919).
const ENDPOINT_TYPE_CONTROLLERS: i8 = 2;

/// The brokers of the metadata image with this broker as the controller id (it forwards admin requests);
/// endpoint type 2 (KIP-919) lists the controller quorum's voters and the active controller. A standalone
/// broker is the whole cluster and its only controller.
pub fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: DescribeClusterRequest,
) -> DescribeClusterResponse {
    let config = apis.config();
    let cluster_id = apis.metadata.cluster_id().to_string();
    let cache = apis.metadata_cache();
    match request.endpoint_type {
        // KIP-919's controller endpoints (which Kafka serves from controllers only): the voters and the
        // active controller as this broker last learned it (-1 unknown). `runnel cluster info` uses it.
        ENDPOINT_TYPE_CONTROLLERS => DescribeClusterResponse {
            endpoint_type: ENDPOINT_TYPE_CONTROLLERS,
            cluster_id,
            controller_id: cache.controller_id().get(),
            brokers: cache
                .controllers()
                .into_iter()
                .map(|(id, host, port)| DescribeClusterBroker {
                    broker_id: id.get(),
                    host,
                    port: i32::from(port),
                    rack: None,
                    is_fenced: false,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        },
        ENDPOINT_TYPE_BROKERS => {
            // v2+ (KIP-1073) may ask for fenced brokers too; below v2 only unfenced ones are listed.
            let image = cache.image();
            // Endpoints of the listener the request came in on (brokers without it are left out).
            let listener = ctx.listener_name();
            let mut brokers: Vec<DescribeClusterBroker> = image
                .brokers
                .values()
                .filter(|b| !b.fenced || request.include_fenced_brokers)
                .filter_map(|b| {
                    let (host, port) = b.endpoint(listener)?;
                    Some(DescribeClusterBroker {
                        broker_id: b.broker_id.get(),
                        host: host.to_string(),
                        port: i32::from(port),
                        rack: b.rack.clone(),
                        is_fenced: b.fenced,
                        ..Default::default()
                    })
                })
                .collect();
            if image.brokers.is_empty() {
                // A cluster member not yet registered: the client reached this broker.
                let me = config.advertised_for(listener);
                brokers.push(DescribeClusterBroker {
                    broker_id: config.node_id.get(),
                    host: me.host.clone(),
                    port: i32::from(me.port),
                    ..Default::default()
                });
            }
            // Clients send admin requests to this id: this broker (alive, since the client reached it),
            // which forwards to the active controller — as Kafka answers a live broker in KRaft mode. A dead
            // controller named here would stall clients that cache it.
            DescribeClusterResponse {
                endpoint_type: ENDPOINT_TYPE_BROKERS,
                cluster_id,
                controller_id: config.node_id.get(),
                brokers,
                cluster_authorized_operations: authorized_operations(ctx, &request),
                ..Default::default()
            }
        }
        other => DescribeClusterResponse {
            error_code: ErrorCode::UNSUPPORTED_ENDPOINT_TYPE.0,
            error_message: Some("Only broker and controller endpoints are served".into()),
            endpoint_type: other,
            cluster_id,
            ..Default::default()
        },
    }
}

/// Kafka's `handleDescribeClusterRequest`: the cluster's authorized operations when asked for, 0 without
/// DESCRIBE on the cluster.
fn authorized_operations(ctx: &RequestContext, request: &DescribeClusterRequest) -> i32 {
    if !request.include_cluster_authorized_operations {
        i32::MIN
    } else if ctx.authorize_cluster(AclOperation::Describe).is_err() {
        0
    } else {
        ctx.authorized_operations(ResourceType::Cluster, CLUSTER_NAME)
    }
}
