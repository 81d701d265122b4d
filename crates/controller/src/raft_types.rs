//! The openraft type configuration of the metadata quorum.

use std::fmt;
use std::io::Cursor;

use metadata::MetadataRecord;
use serde::{Deserialize, Serialize};

/// The application data of one raft log entry: the metadata records one controller decision
/// appends, all committed at the entry's log index (their offset).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct MetadataBatch {
    /// Records in replay order.
    pub records: Vec<MetadataRecord>,
}

impl fmt::Display for MetadataBatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MetadataBatch({} records)", self.records.len())
    }
}

openraft::declare_raft_types!(
    /// openraft types of the quorum: node ids are controller ids (`node.id` as u64), nodes carry
    /// their RPC address, snapshots are in-memory JSON images.
    pub TypeConfig:
        D = MetadataBatch,
        R = (),
        NodeId = u64,
        Node = openraft::BasicNode,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = Cursor<Vec<u8>>,
        AsyncRuntime = openraft::TokioRuntime,
);

/// A raft log entry of the quorum.
pub type LogEntry = openraft::Entry<TypeConfig>;
/// A raft log id (term + index).
pub type LogId = openraft::LogId<u64>;
/// openraft's storage error with our node id.
pub type StorageError = openraft::StorageError<u64>;
