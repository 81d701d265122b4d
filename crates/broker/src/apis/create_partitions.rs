//! CreatePartitions (key 37), v0–3. Source: Kafka protocol guide; KIP-195.
//!
//! Grows a topic; shrinking or keeping the count is INVALID_PARTITIONS (37). Explicit assignments must
//! give one replica list, naming only this broker, per new partition.

use protocol::error::ErrorCode;
use protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use protocol::messages::{CreatePartitionsRequest, CreatePartitionsResponse};
use protocol::RequestHeader;

use super::KafkaApis;
use crate::topics::ApiError;

/// Answers CreatePartitions, one result per topic in request order.
pub fn handle(
    apis: &KafkaApis,
    _header: &RequestHeader,
    request: CreatePartitionsRequest,
) -> CreatePartitionsResponse {
    let node = apis.config().node_id;
    let results = request
        .topics
        .into_iter()
        .map(|t| {
            let result = (|| -> Result<(), ApiError> {
                if let Some(assignments) = &t.assignments {
                    let current = apis.metadata.topic(&t.name).map(|m| m.partitions).unwrap_or(0);
                    if assignments.len() as i64 != i64::from(t.count) - i64::from(current) {
                        return Err(ApiError::new(
                            ErrorCode::INVALID_REPLICA_ASSIGNMENT,
                            format!(
                                "Increasing the number of partitions by {} but {} assignments provided.",
                                i64::from(t.count) - i64::from(current),
                                assignments.len()
                            ),
                        ));
                    }
                    if assignments.iter().any(|a| a.broker_ids != [node]) {
                        return Err(ApiError::new(
                            ErrorCode::INVALID_REPLICA_ASSIGNMENT,
                            format!("Assignments must name exactly broker {node}."),
                        ));
                    }
                }
                apis.topics.add_partitions(&t.name, t.count, request.validate_only)
            })();
            let (error_code, error_message) = match result {
                Ok(()) => (0, None),
                Err(e) => (e.code.0, Some(e.message)),
            };
            CreatePartitionsTopicResult {
                name: t.name,
                error_code,
                error_message,
                ..Default::default()
            }
        })
        .collect();
    CreatePartitionsResponse {
        results,
        ..Default::default()
    }
}
