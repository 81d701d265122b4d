//! DescribeCluster (key 60), v0–2. Source: Kafka protocol guide; KIP-700 (v0), KIP-919 (endpoint type, v1),
//! KIP-1073 (fenced brokers, v2).

use protocol::error::ErrorCode;
use protocol::messages::describe_cluster_response::DescribeClusterBroker;
use protocol::messages::{DescribeClusterRequest, DescribeClusterResponse};
use protocol::RequestHeader;

use super::KafkaApis;

/// Endpoint type "brokers" (1).
const ENDPOINT_TYPE_BROKERS: i8 = 1;
/// Endpoint type "controllers" (2, KIP-919): served in cluster mode only.
const ENDPOINT_TYPE_CONTROLLERS: i8 = 2;

/// Standalone: this broker is the whole cluster and its controller. Cluster mode: the brokers of the metadata
/// image with this broker as the controller id (it forwards admin requests); endpoint type 2 lists the
/// controller quorum's voters and the active controller.
pub fn handle(
    apis: &KafkaApis,
    _header: &RequestHeader,
    request: DescribeClusterRequest,
) -> DescribeClusterResponse {
    let config = apis.config();
    if let (Some(cluster), ENDPOINT_TYPE_CONTROLLERS) = (apis.cluster(), request.endpoint_type) {
        // KIP-919's controller endpoints (which Kafka serves from controllers only): the voters and the
        // active controller as this broker last learned it (-1 unknown). `runnel cluster info` uses it.
        return DescribeClusterResponse {
            endpoint_type: ENDPOINT_TYPE_CONTROLLERS,
            cluster_id: apis.metadata.cluster_id().to_string(),
            controller_id: cluster.controller_id().unwrap_or(-1),
            brokers: config
                .controller_quorum_voters
                .iter()
                .map(|(id, e)| DescribeClusterBroker {
                    broker_id: *id,
                    host: e.host.clone(),
                    port: i32::from(e.port),
                    rack: None,
                    is_fenced: false,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
    }
    if request.endpoint_type != ENDPOINT_TYPE_BROKERS {
        return DescribeClusterResponse {
            error_code: ErrorCode::UNSUPPORTED_ENDPOINT_TYPE.0,
            error_message: Some("Only broker endpoints are served".into()),
            endpoint_type: request.endpoint_type,
            cluster_id: apis.metadata.cluster_id().to_string(),
            ..Default::default()
        };
    }
    if let Some(cluster) = apis.cluster() {
        // v2+ (KIP-1073) may ask for fenced brokers too; below v2 only unfenced ones are listed.
        let image = cluster.image();
        let brokers: Vec<DescribeClusterBroker> = image
            .brokers
            .values()
            .filter(|b| !b.fenced || request.include_fenced_brokers)
            .map(|b| DescribeClusterBroker {
                broker_id: b.broker_id,
                host: b.host.clone(),
                port: i32::from(b.port),
                rack: b.rack.clone(),
                is_fenced: b.fenced,
                ..Default::default()
            })
            .collect();
        // Clients send admin requests to this id: this broker (alive, since the client reached it), which
        // forwards to the active controller — as Kafka answers a live broker in KRaft mode. A dead
        // controller named here would stall clients that cache it.
        let controller_id = config.node_id;
        return DescribeClusterResponse {
            endpoint_type: ENDPOINT_TYPE_BROKERS,
            cluster_id: apis.metadata.cluster_id().to_string(),
            controller_id,
            brokers,
            ..Default::default()
        };
    }
    DescribeClusterResponse {
        endpoint_type: ENDPOINT_TYPE_BROKERS,
        cluster_id: apis.metadata.cluster_id().to_string(),
        controller_id: config.node_id,
        brokers: vec![DescribeClusterBroker {
            broker_id: config.node_id,
            host: config.advertised_listener.host.clone(),
            port: i32::from(config.advertised_listener.port),
            rack: None,
            is_fenced: false,
            ..Default::default()
        }],
        ..Default::default()
    }
}
