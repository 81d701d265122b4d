//! WriteTxnMarkers (key 27), v1–2: a transaction coordinator asks a partition leader to end a
//! transaction with a COMMIT or ABORT marker (KIP-98; v0 was removed in Kafka 4.0, KIP-896; v2 adds
//! `transaction_version`, KIP-890, which the log does not need: the coordinator picks the marker's epoch).
//!
//! CLUSTER_ACTION on the cluster is required, else every partition is answered
//! CLUSTER_AUTHORIZATION_FAILED (31), as Kafka's error response. Each (marker, partition) is written by
//! [`crate::txn_markers::write_marker`] (hosted and led here, appended with the coordinator origin and the
//! marker's coordinator epoch, acks=all bounded by [`MARKER_TIMEOUT`], then a `__consumer_offsets`
//! partition's transactional offsets completed); all are written concurrently and answered in request
//! order.

use std::time::Duration;

use protocol::error::ErrorCode;
use protocol::messages::write_txn_markers_response::{
    WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
};
use protocol::messages::{WriteTxnMarkersRequest, WriteTxnMarkersResponse};
use types::{ProducerEpoch, ProducerId};

use super::KafkaApis;
use crate::server::context::RequestContext;
use crate::txn_markers::{write_marker, MarkerWrite};
use authorizer::AclOperation;

/// How long a marker waits for replication: Kafka's default `request.timeout.ms` (30 s), what its
/// WriteTxnMarkers handler appends with.
pub const MARKER_TIMEOUT: Duration = Duration::from_secs(30);

/// Writes every marker of the request on its partitions and answers each partition's code.
pub async fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: WriteTxnMarkersRequest,
) -> WriteTxnMarkersResponse {
    let denied = ctx
        .authorize_cluster(AclOperation::ClusterAction)
        .err()
        .map(ErrorCode::from);
    let writes: Vec<MarkerWrite> = (request.markers.iter())
        .flat_map(|m| {
            m.topics.iter().flat_map(move |t| {
                t.partition_indexes
                    .iter()
                    .map(move |&partition| MarkerWrite {
                        topic: t.name.clone(),
                        partition,
                        producer_id: ProducerId(m.producer_id),
                        producer_epoch: ProducerEpoch(m.producer_epoch),
                        commit: m.transaction_result,
                        coordinator_epoch: m.coordinator_epoch,
                    })
            })
        })
        .collect();
    let codes: Vec<ErrorCode> = match denied {
        Some(code) => vec![code; writes.len()],
        None => {
            let (replicas, groups) = (&*apis.replica_manager, &*apis.groups);
            let all = (writes.iter()).map(|w| write_marker(replicas, groups, w, MARKER_TIMEOUT));
            futures::future::join_all(all).await
        }
    };
    let mut codes = codes.into_iter();
    let markers = (request.markers.into_iter())
        .map(|m| WritableTxnMarkerResult {
            producer_id: m.producer_id,
            topics: (m.topics.into_iter())
                .map(|t| WritableTxnMarkerTopicResult {
                    partitions: (t.partition_indexes.iter())
                        .map(|&partition_index| WritableTxnMarkerPartitionResult {
                            partition_index,
                            error_code: codes.next().map_or(0, |c| c.0),
                            ..Default::default()
                        })
                        .collect(),
                    name: t.name,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    WriteTxnMarkersResponse {
        markers,
        ..Default::default()
    }
}
