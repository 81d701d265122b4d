//! DescribeLogDirs (key 35), v1–5. Source: Kafka protocol guide; KIP-113, KIP-827 (total/usable bytes, v4+).
//!
//! One log dir (the configured data directory); per partition its size in bytes and offset lag 0. While
//! the dir is offline (a write failed, KIP-112) its result carries KAFKA_STORAGE_ERROR (56).

use protocol::messages::describe_log_dirs_response::{
    DescribeLogDirsPartition, DescribeLogDirsResult, DescribeLogDirsTopic,
};
use protocol::messages::{DescribeLogDirsRequest, DescribeLogDirsResponse};
use types::ErrorCode;

use super::KafkaApis;
use crate::server::context::RequestContext;

/// Describes the data directory and the requested partitions in it (all for a null topic list).
pub fn handle(
    apis: &KafkaApis,
    _ctx: &RequestContext,
    request: DescribeLogDirsRequest,
) -> DescribeLogDirsResponse {
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
    let topics = wanted
        .into_iter()
        .filter_map(|(name, partitions)| {
            let partitions: Vec<DescribeLogDirsPartition> = partitions
                .into_iter()
                .filter_map(|p| {
                    let part = apis.replica_manager.partition(&name, p)?;
                    let size = part.size_in_bytes() as i64;
                    Some(DescribeLogDirsPartition {
                        partition_index: p,
                        partition_size: size,
                        offset_lag: 0,
                        is_future_key: false,
                        ..Default::default()
                    })
                })
                .collect();
            (!partitions.is_empty()).then(|| DescribeLogDirsTopic {
                name,
                partitions,
                ..Default::default()
            })
        })
        .collect();
    let dir = apis.config().log_dir.clone();
    let offline = apis.replica_manager.log_manager().dir_health().is_offline();
    let (total, usable) = disk_space(&dir).unwrap_or((-1, -1));
    DescribeLogDirsResponse {
        results: vec![DescribeLogDirsResult {
            error_code: if offline {
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
        }],
        ..Default::default()
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
