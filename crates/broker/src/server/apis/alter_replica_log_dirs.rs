//! AlterReplicaLogDirs (key 34), v1–2 (v0 removed in Kafka 4.0, KIP-896). Source: KIP-113; Kafka's
//! `ReplicaManager.alterReplicaLogDirs`.
//!
//! Moves replicas hosted by this broker to another of its data directories (`log.dirs`, JBOD); the copy
//! and the swap run in the background (`storage::ReplicaAlterLogDirsThread`), and DescribeLogDirs shows
//! the move as a future replica (`is_future_key`) with its offset lag. Per partition, as Kafka:
//! - ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED (31) for every partition;
//! - a path that is none of the broker's data directories → LOG_DIR_NOT_FOUND (57);
//! - the destination or the replica's own directory offline → KAFKA_STORAGE_ERROR (56);
//! - a partition the broker does not host → REPLICA_NOT_AVAILABLE (9), or UNKNOWN_TOPIC_OR_PARTITION (3)
//!   when the metadata has no such partition (as Kafka 4.4.0 answers); the directory is remembered for when
//!   the replica is created (what `kafka-reassign-partitions.sh` relies on while it retries);
//! - a topic name too long for a future directory name → INVALID_TOPIC_EXCEPTION (17);
//! - otherwise NONE: already there, moving, or the move started (a move elsewhere is cancelled).
//!
//! In a cluster the new directory reaches the controller through the broker's AssignReplicasToDirs
//! reconciliation at the next heartbeat (`cluster_reports`).

use std::path::{Path, PathBuf};

use authorizer::AclOperation;
use protocol::messages::alter_replica_log_dirs_response::{
    AlterReplicaLogDirPartitionResult, AlterReplicaLogDirTopicResult,
};
use protocol::messages::{AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse};
use storage::{AlterLogDir, LogManager};
use types::ErrorCode;

use super::errors::storage_error_code;
use super::KafkaApis;
use crate::server::context::RequestContext;

/// Answers AlterReplicaLogDirs: see the module doc.
pub fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: AlterReplicaLogDirsRequest,
) -> AlterReplicaLogDirsResponse {
    let allowed = ctx.authorize_cluster(AclOperation::Alter).is_ok();
    let log_manager = apis.replica_manager.log_manager();
    let mut results: Vec<AlterReplicaLogDirTopicResult> = Vec::new();
    for dir in request.dirs {
        let dest = dir_index(log_manager, &dir.path);
        for topic in dir.topics {
            for p in topic.partitions {
                let code = match (allowed, dest) {
                    (false, _) => ErrorCode::CLUSTER_AUTHORIZATION_FAILED,
                    (true, None) => ErrorCode::LOG_DIR_NOT_FOUND,
                    (true, Some(dest)) => match alter_one(log_manager, &topic.name, p, dest) {
                        ErrorCode::REPLICA_NOT_AVAILABLE if !exists(apis, &topic.name, p) => {
                            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
                        }
                        code => code,
                    },
                };
                push(&mut results, &topic.name, p, code);
            }
        }
    }
    AlterReplicaLogDirsResponse {
        results,
        ..Default::default()
    }
}

/// The index of the data directory named by `path` (absolute, as DescribeLogDirs reports it; compared
/// after resolving symlinks).
fn dir_index(log_manager: &LogManager, path: &str) -> Option<usize> {
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let wanted: PathBuf = canonical(Path::new(path));
    (log_manager.dirs().iter())
        .position(|d| d.as_path() == Path::new(path) || canonical(d) == wanted)
}

/// Whether the metadata knows partition `p` of `topic`.
fn exists(apis: &KafkaApis, topic: &str, p: i32) -> bool {
    (apis.metadata.topic(topic)).is_some_and(|t| (0..t.partitions).contains(&p))
}

fn alter_one(log_manager: &LogManager, topic: &str, partition: i32, dest: usize) -> ErrorCode {
    match log_manager.alter_log_dir(topic, partition, dest) {
        Ok(AlterLogDir::NotHosted) => ErrorCode::REPLICA_NOT_AVAILABLE,
        Ok(AlterLogDir::AlreadyThere | AlterLogDir::Started | AlterLogDir::InProgress) => {
            ErrorCode::NONE
        }
        Err(e) => {
            tracing::warn!(topic, partition, error = %e, "AlterReplicaLogDirs refused");
            storage_error_code(&e)
        }
    }
}

fn push(results: &mut Vec<AlterReplicaLogDirTopicResult>, topic: &str, p: i32, code: ErrorCode) {
    let entry = AlterReplicaLogDirPartitionResult {
        partition_index: p,
        error_code: code.0,
        ..Default::default()
    };
    match results.iter_mut().find(|t| t.topic_name == topic) {
        Some(t) => t.partitions.push(entry),
        None => results.push(AlterReplicaLogDirTopicResult {
            topic_name: topic.to_string(),
            partitions: vec![entry],
            ..Default::default()
        }),
    }
}
