//! DescribeLogDirs (key 35), v1–5. Source: Kafka protocol guide; KIP-113, KIP-827 (total/usable bytes, v4+).
//!
//! One result per data directory (`log.dirs`, JBOD); per partition its size in bytes and offset lag 0.
//! A replica being moved by AlterReplicaLogDirs is also listed under its destination as a future replica
//! (`is_future_key`), its offset lag the current log's LogEndOffset minus the future's. A directory
//! offline after a failed write (KIP-112) carries KAFKA_STORAGE_ERROR (56). DESCRIBE on the cluster is
//! required, else the top-level CLUSTER_AUTHORIZATION_FAILED (31) and no result (as Kafka).

use protocol::messages::describe_log_dirs_response::{
    DescribeLogDirsPartition, DescribeLogDirsResult, DescribeLogDirsTopic,
};
use protocol::messages::{DescribeLogDirsRequest, DescribeLogDirsResponse};
use std::collections::HashSet;
use types::ErrorCode;

use super::KafkaApis;
use crate::server::context::RequestContext;
use authorizer::AclOperation;

/// Describes every data directory (`log.dirs`, in order) and the requested partitions in it (all for a
/// null topic list); a partition is listed under the directory holding its log.
pub fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: DescribeLogDirsRequest,
) -> DescribeLogDirsResponse {
    if ctx.authorize_cluster(AclOperation::Describe).is_err() {
        return DescribeLogDirsResponse {
            error_code: ErrorCode::CLUSTER_AUTHORIZATION_FAILED.0,
            ..Default::default()
        };
    }
    let filter: Option<HashSet<(String, i32)>> = (request.topics.as_ref()).map(|topics| {
        (topics.iter())
            .flat_map(|t| t.partitions.iter().map(|&p| (t.topic.clone(), p)))
            .collect()
    });
    let wanted: Vec<(String, Vec<i32>)> = match request.topics {
        Some(topics) => topics
            .into_iter()
            .map(|t| (t.topic, t.partitions))
            .collect(),
        None => apis
            .metadata
            .topics()
            .into_iter()
            .map(|(name, t)| (name, (0..t.partitions).collect()))
            .collect(),
    };
    let log_manager = apis.replica_manager.log_manager();
    let dirs = log_manager.dirs().to_vec();
    // Per directory: topic name → its partitions there, in request order.
    let mut per_dir: Vec<Vec<DescribeLogDirsTopic>> = vec![Vec::new(); dirs.len()];
    for (name, partitions) in wanted {
        for p in partitions {
            let Some(part) = apis.replica_manager.partition(&name, p) else {
                continue;
            };
            let Some(index) = log_manager
                .log_dir_of(&name, p)
                .and_then(|d| dirs.iter().position(|x| x == d))
            else {
                continue;
            };
            let entry = DescribeLogDirsPartition {
                partition_index: p,
                partition_size: part.size_in_bytes() as i64,
                offset_lag: 0,
                is_future_key: false,
                ..Default::default()
            };
            add(&mut per_dir[index], &name, entry);
        }
    }
    add_futures(log_manager, filter.as_ref(), &mut per_dir);
    let results = dirs
        .into_iter()
        .zip(per_dir)
        .enumerate()
        .map(|(index, (dir, topics))| {
            let (total, usable) = disk_space(&dir).unwrap_or((-1, -1));
            DescribeLogDirsResult {
                error_code: if log_manager.dir_health(index).is_offline() {
                    ErrorCode::KAFKA_STORAGE_ERROR.0
                } else {
                    0
                },
                log_dir: std::fs::canonicalize(&dir)
                    .unwrap_or(dir)
                    .display()
                    .to_string(),
                topics,
                total_bytes: total,
                usable_bytes: usable,
                ..Default::default()
            }
        })
        .collect();
    DescribeLogDirsResponse {
        results,
        ..Default::default()
    }
}

/// Lists every future replica (a move under way) the request names, under its destination directory.
fn add_futures(
    log_manager: &storage::LogManager,
    filter: Option<&HashSet<(String, i32)>>,
    per_dir: &mut [Vec<DescribeLogDirsTopic>],
) {
    for (tp, future, index) in log_manager.future_logs() {
        let Some(current) = log_manager.get_log(&tp.topic, tp.partition) else {
            continue;
        };
        if !filter.is_none_or(|w| w.contains(&(tp.topic.clone(), tp.partition))) {
            continue;
        }
        let current_end = current.lock().log_end_offset().get();
        let f = future.lock();
        let entry = DescribeLogDirsPartition {
            partition_index: tp.partition,
            partition_size: f.size_in_bytes() as i64,
            offset_lag: (current_end - f.log_end_offset().get()).max(0),
            is_future_key: true,
            ..Default::default()
        };
        add(&mut per_dir[index], &tp.topic, entry);
    }
}

/// Adds a partition's entry under its topic (in first-seen order).
fn add(topics: &mut Vec<DescribeLogDirsTopic>, name: &str, entry: DescribeLogDirsPartition) {
    match topics.iter_mut().find(|t| t.name == name) {
        Some(t) => t.partitions.push(entry),
        None => topics.push(DescribeLogDirsTopic {
            name: name.to_string(),
            partitions: vec![entry],
            ..Default::default()
        }),
    }
}

/// Total and available bytes of the filesystem holding `dir` (statvfs).
fn disk_space(dir: &std::path::Path) -> Option<(i64, i64)> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs writes into the zeroed struct we own; `path` is a valid NUL-terminated string.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::statvfs(path.as_ptr(), &mut st) };
    if rc != 0 {
        return None;
    }
    let frsize = st.f_frsize as i64;
    Some((st.f_blocks as i64 * frsize, st.f_bavail as i64 * frsize))
}
