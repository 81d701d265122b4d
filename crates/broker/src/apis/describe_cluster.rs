//! DescribeCluster (key 60), v0–2. Source: Kafka protocol guide; KIP-700 (v0), KIP-919 (endpoint type, v1),
//! KIP-1073 (fenced brokers, v2).

use protocol::error::ErrorCode;
use protocol::messages::describe_cluster_response::DescribeClusterBroker;
use protocol::messages::{DescribeClusterRequest, DescribeClusterResponse};
use protocol::RequestHeader;

use super::KafkaApis;

/// Endpoint type "brokers" (1); "controllers" (2) is not served.
const ENDPOINT_TYPE_BROKERS: i8 = 1;

/// Answers with this broker as the whole cluster and its controller.
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
