//! DescribeCluster (key 60), v0–2. Source: Kafka protocol guide; KIP-700 (v0), KIP-919 (endpoint type, v1),
//! KIP-1073 (fenced brokers, v2).

use protocol::error::ErrorCode;
use protocol::messages::describe_cluster_response::DescribeClusterBroker;
use protocol::messages::{DescribeClusterRequest, DescribeClusterResponse};
use protocol::RequestHeader;

use super::KafkaApis;

/// Endpoint type "brokers" (1); "controllers" (2) is not served.
const ENDPOINT_TYPE_BROKERS: i8 = 1;

/// Standalone: this broker is the whole cluster and its controller. Cluster mode: the brokers of the metadata
/// image and the active controller when it is also a live broker (else this broker).
pub fn handle(
    apis: &KafkaApis,
    _header: &RequestHeader,
    request: DescribeClusterRequest,
) -> DescribeClusterResponse {
    let config = apis.config();
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
        let controller_id = cluster
            .controller_id()
            .filter(|c| brokers.iter().any(|b| b.broker_id == *c && !b.is_fenced))
            .unwrap_or(config.node_id);
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
