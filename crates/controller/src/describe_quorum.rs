//! DescribeQuorum's answer (key 55, v0–2) in Kafka's shape, shared by the controller listener
//! ([`crate::kafka_apis`]) and the broker's handler (which asks the active controller for its
//! [`QuorumInfo`]). Source: Kafka's DescribeQuorumRequest/Response.json; KIP-595 (v0), KIP-836 (v1:
//! LastFetchTimestamp, LastCaughtUpTimestamp), KIP-853 (v2: ReplicaDirectoryId, ErrorMessage, the voters'
//! Nodes with their listeners); Kafka's `KafkaRaftClient.handleDescribeQuorumRequest`.
//!
//! Offsets are Kafka's end offsets: one past the metadata offset of the last record held (-1 when
//! unknown); directory ids are those the quorum's membership records (controllers added by AddRaftVoter or
//! joined as learners, [`crate::voter_changes`]), the zero UUID for the others. Error messages are empty (not null) on success, as Kafka's. Fields a version lacks are dropped
//! by the encoder.

use metadata::{QuorumInfo, ReplicaProgress};
use protocol::messages::describe_quorum_response::{
    Listener, Node, PartitionData, ReplicaState, TopicData,
};
use protocol::messages::{DescribeQuorumRequest, DescribeQuorumResponse};
use protocol::ErrorCode;
use types::BrokerId;

/// The metadata log's topic name (Kafka's `__cluster_metadata`).
pub const METADATA_TOPIC: &str = "__cluster_metadata";

/// A controller's endpoint as the v2 Nodes list it: node id, host, port.
pub type ControllerEndpoint = (BrokerId, String, u16);

/// The voters of `info` as v2 Nodes' endpoints (their addresses as the quorum's membership records them).
pub fn voter_endpoints(info: &QuorumInfo) -> Vec<ControllerEndpoint> {
    info.voters
        .iter()
        .map(|(id, addr)| (*id, addr.ip().to_string(), addr.port()))
        .collect()
}

/// Kafka's `hasValidTopicPartition`: one topic, `__cluster_metadata`, with one partition, 0.
pub fn names_only_the_metadata_partition(request: &DescribeQuorumRequest) -> bool {
    match request.topics.as_slice() {
        [t] => {
            t.topic_name == METADATA_TOPIC
                && matches!(t.partitions.as_slice(), [p] if p.partition_index == 0)
        }
        _ => false,
    }
}

/// Every partition the request names, refused with UNKNOWN_TOPIC_OR_PARTITION (3; the other fields
/// zero), Kafka's `getPartitionLevelErrorResponse`.
pub fn unknown_partitions(request: &DescribeQuorumRequest) -> DescribeQuorumResponse {
    let topics = request
        .topics
        .iter()
        .map(|t| TopicData {
            topic_name: t.topic_name.clone(),
            partitions: t
                .partitions
                .iter()
                .map(|p| PartitionData {
                    partition_index: p.partition_index,
                    error_code: ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.0,
                    error_message: Some("This server does not host this topic-partition.".into()),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    DescribeQuorumResponse {
        topics,
        ..Default::default()
    }
}

/// A whole-request refusal with `code` and `message` (e.g. CLUSTER_AUTHORIZATION_FAILED, 31).
pub fn top_level_error(code: ErrorCode, message: String) -> DescribeQuorumResponse {
    DescribeQuorumResponse {
        error_code: code.0,
        error_message: Some(message),
        ..Default::default()
    }
}

/// A controller that is not the raft leader: `__cluster_metadata` partition 0 with
/// NOT_LEADER_OR_FOLLOWER (6), Kafka's `DescribeQuorumResponse.singletonErrorResponse`.
pub fn not_leader() -> DescribeQuorumResponse {
    DescribeQuorumResponse {
        topics: vec![TopicData {
            topic_name: METADATA_TOPIC.to_string(),
            partitions: vec![PartitionData {
                partition_index: 0,
                error_code: ErrorCode::NOT_LEADER_OR_FOLLOWER.0,
                error_message: Some(
                    "This controller is not the leader of the metadata quorum.".into(),
                ),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// A metadata offset (-1: none) as Kafka's end offset: one past it, -1 staying unknown.
fn end_offset(offset: i64) -> i64 {
    if offset < 0 {
        -1
    } else {
        offset.saturating_add(1)
    }
}

/// One voter or observer in Kafka's shape (its directory id from `info`, else the zero UUID).
fn replica_state(info: &QuorumInfo, p: &ReplicaProgress) -> ReplicaState {
    ReplicaState {
        replica_id: p.replica_id.get(),
        replica_directory_id: info
            .directory_ids
            .get(&p.replica_id)
            .copied()
            .unwrap_or(uuid::Uuid::nil()),
        log_end_offset: end_offset(p.last_offset),
        last_fetch_timestamp: p.last_fetch_ms,
        last_caught_up_timestamp: p.last_caught_up_ms,
        ..Default::default()
    }
}

/// `info` in Kafka's shape: one topic, `__cluster_metadata`, partition 0; `controllers` (the voters) become
/// the v2 Nodes, each with one endpoint on `listener` (the first of `controller.listener.names`).
pub fn response(
    info: &QuorumInfo,
    controllers: &[ControllerEndpoint],
    listener: &str,
) -> DescribeQuorumResponse {
    let partition = PartitionData {
        partition_index: 0,
        error_code: ErrorCode::NONE.0,
        leader_id: info.leader_id.map_or(-1, |id| id.get()),
        leader_epoch: i32::try_from(info.leader_epoch).unwrap_or(i32::MAX),
        high_watermark: end_offset(info.high_watermark),
        current_voters: info
            .current_voters
            .iter()
            .map(|p| replica_state(info, p))
            .collect(),
        observers: info
            .observers
            .iter()
            .map(|p| replica_state(info, p))
            .collect(),
        ..Default::default()
    };
    let nodes = controllers
        .iter()
        .map(|(id, host, port)| Node {
            node_id: id.get(),
            listeners: vec![Listener {
                name: listener.to_string(),
                host: host.clone(),
                port: *port,
                ..Default::default()
            }],
            ..Default::default()
        })
        .collect();
    DescribeQuorumResponse {
        error_code: ErrorCode::NONE.0,
        topics: vec![TopicData {
            topic_name: METADATA_TOPIC.to_string(),
            partitions: vec![partition],
            ..Default::default()
        }],
        nodes,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::messages::describe_quorum_request;

    fn progress(id: i32, last_offset: i64, at: i64) -> ReplicaProgress {
        ReplicaProgress {
            replica_id: BrokerId(id),
            last_offset,
            last_fetch_ms: at,
            last_caught_up_ms: at,
        }
    }

    #[test]
    fn quorum_info_maps_to_kafkas_shape_with_end_offsets() {
        let info = QuorumInfo {
            leader_id: Some(BrokerId(2)),
            leader_epoch: 7,
            high_watermark: 41,
            voters: Default::default(),
            current_voters: vec![
                progress(1, 40, 900),
                progress(2, 41, 1000),
                progress(3, -1, -1),
            ],
            observers: vec![progress(4, 39, 950)],
            directory_ids: [(BrokerId(4), uuid::Uuid::from_u128(4))].into(),
        };
        let controllers = vec![(BrokerId(1), "h1".to_string(), 9101)];
        let r = response(&info, &controllers, "CONTROLLER");
        // Kafka answers an empty (not null) message on success.
        assert_eq!((r.error_code, r.error_message.as_deref()), (0, Some("")));
        assert_eq!(r.topics.len(), 1);
        assert_eq!(r.topics[0].topic_name, "__cluster_metadata");
        let p = &r.topics[0].partitions[0];
        assert_eq!((p.partition_index, p.error_code, p.leader_id), (0, 0, 2));
        assert_eq!((p.leader_epoch, p.high_watermark), (7, 42));
        let ends: Vec<_> = p
            .current_voters
            .iter()
            .map(|v| (v.replica_id, v.log_end_offset, v.last_fetch_timestamp))
            .collect();
        assert_eq!(ends, vec![(1, 41, 900), (2, 42, 1000), (3, -1, -1)]);
        assert_eq!(p.observers[0].replica_id, 4);
        assert_eq!(p.observers[0].log_end_offset, 40);
        assert_eq!(
            p.observers[0].replica_directory_id,
            uuid::Uuid::from_u128(4)
        );
        assert!(p.current_voters[0].replica_directory_id.is_nil());
        assert_eq!(r.nodes.len(), 1);
        let l = &r.nodes[0].listeners[0];
        assert_eq!(
            (r.nodes[0].node_id, l.name.as_str(), l.host.as_str(), l.port),
            (1, "CONTROLLER", "h1", 9101)
        );
    }

    #[test]
    fn only_the_metadata_partition_is_served() {
        let request = |topic: &str, parts: &[i32]| DescribeQuorumRequest {
            topics: vec![describe_quorum_request::TopicData {
                topic_name: topic.into(),
                partitions: parts
                    .iter()
                    .map(|&p| describe_quorum_request::PartitionData {
                        partition_index: p,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }],
            ..Default::default()
        };
        assert!(names_only_the_metadata_partition(&request(
            "__cluster_metadata",
            &[0]
        )));
        for bad in [
            request("__cluster_metadata", &[1]),
            request("t", &[0]),
            request("__cluster_metadata", &[0, 1]),
        ] {
            assert!(!names_only_the_metadata_partition(&bad));
            let r = unknown_partitions(&bad);
            assert_eq!(r.error_code, 0);
            assert!(r.topics[0].partitions.iter().all(|p| p.error_code == 3));
        }
        assert!(!names_only_the_metadata_partition(
            &DescribeQuorumRequest::default()
        ));
    }
}
