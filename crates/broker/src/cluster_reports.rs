//! What a cluster member tells the controller about its storage besides the heartbeat's liveness fields
//! (KIP-858): the `directory.id` of each data directory (BrokerRegistration `LogDirs`), which of them
//! are offline (BrokerHeartbeat `OfflineLogDirs`), and the directory each of its replicas is in
//! (AssignReplicasToDirs, so the controller knows which replicas a failed directory takes offline);
//! and Runnel's own report of the sizes of the partitions it leads (automatic balancing weighs them).
//!
//! The assignments are reconciled rather than sent once: at each heartbeat the broker compares the
//! directory of every local replica's log with the one its metadata image shows and sends the
//! differences (at most [`MAX_ASSIGNMENTS_PER_REQUEST`]); a lost request or a controller failover is
//! thus repaired by the next heartbeat, and a replica moved between directories is reported too.

use std::sync::{Arc, OnceLock, Weak};

use metadata::{MetadataImage, DIRECTORY_LOST};
use parking_lot::Mutex;
use replica::replica_manager::ReplicaManager;
use types::{BrokerEpoch, BrokerId};
use uuid::Uuid;

/// The most replica directories one AssignReplicasToDirs carries (Kafka's broker batches them too).
pub const MAX_ASSIGNMENTS_PER_REQUEST: usize = 1000;

/// This broker's storage as reported to the controller (see the module docs). Shared by the heartbeat
/// loop, the log dir failure handler and the composition root, which fills it in at startup.
#[derive(Default)]
pub struct BrokerReports {
    /// The `directory.id`s of `log.dirs`, in order (set once at startup, before registering).
    directory_ids: OnceLock<Vec<Uuid>>,
    /// Indexes (into `log.dirs`) of the directories offline now.
    offline_dirs: Mutex<Vec<usize>>,
    /// Where replicas, their logs and sizes are read (weak: none once the broker stops).
    replica_manager: OnceLock<Weak<ReplicaManager>>,
}

impl std::fmt::Debug for BrokerReports {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrokerReports")
            .field("directory_ids", &self.directory_ids.get())
            .field("offline_dirs", &*self.offline_dirs.lock())
            .finish()
    }
}

impl BrokerReports {
    /// Sets the data directories' ids (`log.dirs` order); later calls are ignored.
    pub fn set_directory_ids(&self, ids: Vec<Uuid>) {
        let _ = self.directory_ids.set(ids);
    }

    /// The data directories' ids (empty before [`set_directory_ids`](Self::set_directory_ids)).
    pub fn directory_ids(&self) -> Vec<Uuid> {
        self.directory_ids.get().cloned().unwrap_or_default()
    }

    /// Records which directories are offline now (indexes into `log.dirs`).
    pub fn set_offline_dirs(&self, offline: Vec<usize>) {
        *self.offline_dirs.lock() = offline;
    }

    /// The heartbeat's `OfflineLogDirs`: the offline directories' ids, or Kafka's `DirectoryId.LOST`
    /// when their ids are not known.
    pub fn offline_log_dirs(&self) -> Vec<Uuid> {
        let offline = self.offline_dirs.lock().clone();
        let ids = self.directory_ids();
        offline
            .iter()
            .map(|&i| ids.get(i).copied().unwrap_or(DIRECTORY_LOST))
            .collect()
    }

    /// Reads replicas, logs and sizes from `replica_manager` from now on (held weakly).
    pub fn watch(&self, replica_manager: &Arc<ReplicaManager>) {
        let _ = self.replica_manager.set(Arc::downgrade(replica_manager));
    }

    fn replica_manager(&self) -> Option<Arc<ReplicaManager>> {
        self.replica_manager.get().and_then(Weak::upgrade)
    }

    /// (topic id, partition, bytes on disk) of each partition led here.
    pub fn partition_sizes(&self) -> Vec<(Uuid, i32, u64)> {
        let Some(rm) = self.replica_manager() else {
            return Vec::new();
        };
        (rm.partitions().iter())
            .filter(|p| p.is_leader())
            .map(|p| (p.topic_id(), p.partition, p.size_in_bytes()))
            .collect()
    }

    /// The AssignReplicasToDirs this broker (`me`, at `broker_epoch`) should send given `image`: every
    /// local replica whose log's directory differs from the image's entry for it, at most
    /// [`MAX_ASSIGNMENTS_PER_REQUEST`]; `None` when there is none (or the ids are not known yet).
    pub fn pending_assignments(
        &self,
        me: BrokerId,
        broker_epoch: BrokerEpoch,
        image: &MetadataImage,
    ) -> Option<metadata::AssignReplicasToDirs> {
        let ids = self.directory_ids.get()?;
        let rm = self.replica_manager()?;
        let log_manager = rm.log_manager();
        let mut assignments = Vec::new();
        for p in rm.partitions() {
            let Some(reg) = image.partition(p.topic_id(), p.partition) else {
                continue;
            };
            let Some(dir) = log_manager.log_dir_index_of(&p.topic, p.partition) else {
                continue;
            };
            let Some(&id) = ids.get(dir) else {
                continue;
            };
            if reg.directory_of(me) != id {
                assignments.push((p.topic_id(), p.partition, id));
                if assignments.len() == MAX_ASSIGNMENTS_PER_REQUEST {
                    break;
                }
            }
        }
        (!assignments.is_empty()).then_some(metadata::AssignReplicasToDirs {
            broker_id: me,
            broker_epoch,
            assignments,
        })
    }
}

/// The log dir failure handler's report ([`crate::log_dir_failure::ReportLogDir`]): a cluster member's
/// next heartbeat carries the offline dirs (sent at once); a standalone broker has no one to tell.
pub fn log_dir_reporter(
    cluster: Option<Arc<crate::cluster::BrokerCluster>>,
) -> crate::log_dir_failure::ReportLogDir {
    Arc::new(move |offline: Vec<usize>| {
        if let Some(c) = &cluster {
            c.set_offline_log_dirs(offline);
        }
    })
}
