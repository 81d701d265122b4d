//! DescribeQuorum (key 55), v0–2. Source: Kafka's DescribeQuorumRequest/Response.json; KIP-595 (v0),
//! KIP-836 (v1: LastFetchTimestamp, LastCaughtUpTimestamp), KIP-853 (v2: ReplicaDirectoryId, ErrorMessage,
//! the voters' Nodes with their listeners). What `kafka-metadata-quorum.sh describe --status` and
//! `--replication` send (Admin `describeMetadataQuorum`).
//!
//! A Kafka broker forwards it to the active controller; here the broker asks the controller for its
//! `QuorumInfo` ([`crate::quorum::MetadataQuorum`]) and answers in Kafka's shape
//! ([`controller::describe_quorum`], which the controller listener answers with too). Kafka's checks, in
//! its order: DESCRIBE on the cluster, else CLUSTER_AUTHORIZATION_FAILED (31) at the top; the request must
//! name exactly `__cluster_metadata` partition 0, else every named partition gets
//! UNKNOWN_TOPIC_OR_PARTITION (3, the other fields zero, as Kafka); a controller that cannot be asked is a
//! top-level error with its code. In a cluster the Nodes are the voters of the quorum's membership, as the
//! active controller reports them. A standalone broker's one Node is its own advertised endpoint, as in
//! DescribeCluster's controller endpoints.

use controller::describe_quorum::{
    names_only_the_metadata_partition, response, top_level_error, unknown_partitions,
    voter_endpoints,
};
use protocol::messages::{DescribeQuorumRequest, DescribeQuorumResponse};

use super::errors::ApiError;
use super::KafkaApis;
use crate::server::context::RequestContext;
use authorizer::AclOperation;

/// The controllers' listener name in the Nodes of v2 (Kafka's default `controller.listener.names`).
const DEFAULT_CONTROLLER_LISTENER: &str = "CONTROLLER";

/// Answers DescribeQuorum: see the module doc.
pub async fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: DescribeQuorumRequest,
) -> DescribeQuorumResponse {
    if let Err(d) = ctx.authorize_cluster(AclOperation::Describe) {
        return refused(ApiError::from(d));
    }
    if !names_only_the_metadata_partition(&request) {
        return unknown_partitions(&request);
    }
    match apis.metadata_quorum().describe().await {
        Ok(info) => {
            let listener = controller_listener_name(apis);
            // The voters the quorum's membership names (KIP-853: they change with AddRaftVoter and
            // RemoveRaftVoter); a standalone broker's own endpoint otherwise.
            let controllers = match info.voters.is_empty() {
                false => voter_endpoints(&info),
                true => apis.metadata_cache().controllers(),
            };
            response(&info, &controllers, &listener)
        }
        Err(e) => refused(ApiError::from(e)),
    }
}

/// A whole-request refusal.
fn refused(e: ApiError) -> DescribeQuorumResponse {
    top_level_error(e.code, e.message)
}

/// The first of `controller.listener.names`, the listener the voters' endpoints are named by.
fn controller_listener_name(apis: &KafkaApis) -> String {
    apis.config()
        .value("controller.listener.names")
        .and_then(|v| v.split(',').next().map(|s| s.trim().to_uppercase()))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| DEFAULT_CONTROLLER_LISTENER.to_string())
}
