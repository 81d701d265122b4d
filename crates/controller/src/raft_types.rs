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

/// A member of the quorum's raft membership (a voter or a learner): what KIP-853's `VotersRecord` keeps
/// per voter, Runnel-sized. Serialized as `{"addr":"host:port"}` plus `"directory_id"` when known, so
/// the membership entries written before KIP-853 support (openraft's `BasicNode`, `{"addr":...}`)
/// read back unchanged.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuorumNode {
    /// The controller listener's `host:port` (the first of `controller.listener.names`), where raft
    /// peers and tools reach the node.
    pub addr: String,
    /// The node's metadata log directory id (`directory.id` of its `meta.properties`, KIP-853's
    /// `ReplicaDirectoryId`); `None` for a voter of the static `controller.quorum.voters`, which
    /// KIP-853 reports as the zero UUID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directory_id: Option<uuid::Uuid>,
}

impl QuorumNode {
    /// A node at `addr` with no directory id (a static voter).
    pub fn new(addr: impl Into<String>) -> QuorumNode {
        QuorumNode {
            addr: addr.into(),
            directory_id: None,
        }
    }

    /// A node at `addr` with directory id `directory_id` (a controller joining the quorum).
    pub fn with_directory(addr: impl ToString, directory_id: uuid::Uuid) -> QuorumNode {
        QuorumNode {
            addr: addr.to_string(),
            directory_id: Some(directory_id),
        }
    }

    /// The directory id as DescribeQuorum reports it: the zero UUID when none was recorded.
    pub fn directory_id_or_zero(&self) -> uuid::Uuid {
        self.directory_id.unwrap_or(uuid::Uuid::nil())
    }

    /// `addr` split into host and port (Kafka's endpoint shape); `None` when it has no `:port`.
    pub fn host_port(&self) -> Option<(String, u16)> {
        let (host, port) = self.addr.rsplit_once(':')?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        Some((host.to_string(), port.parse().ok()?))
    }
}

impl fmt::Display for QuorumNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.directory_id {
            Some(d) => write!(f, "{}@{d}", self.addr),
            None => f.write_str(&self.addr),
        }
    }
}

openraft::declare_raft_types!(
    /// openraft types of the quorum: node ids are controller ids (`node.id` as u64), nodes carry
    /// their RPC address and directory id ([`QuorumNode`]), snapshots are in-memory JSON images.
    pub TypeConfig:
        D = MetadataBatch,
        R = (),
        NodeId = u64,
        Node = QuorumNode,
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

/// The quorum's raft membership as openraft keeps it (log and snapshots).
pub type Membership = openraft::Membership<u64, QuorumNode>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quorum_node_reads_basic_nodes_and_splits_its_address() {
        let old: QuorumNode = serde_json::from_str(r#"{"addr":"127.0.0.1:9093"}"#).unwrap();
        assert_eq!(old, QuorumNode::new("127.0.0.1:9093"));
        assert_eq!(
            serde_json::to_string(&old).unwrap(),
            r#"{"addr":"127.0.0.1:9093"}"#
        );
        assert!(old.directory_id_or_zero().is_nil());
        assert_eq!(old.host_port(), Some(("127.0.0.1".to_string(), 9093)));
        let v6 = QuorumNode::new("[::1]:19093");
        assert_eq!(v6.host_port(), Some(("::1".to_string(), 19093)));
        assert_eq!(QuorumNode::new("nohost").host_port(), None);
        let d = uuid::Uuid::from_u128(7);
        let with = QuorumNode {
            directory_id: Some(d),
            ..old
        };
        let back: QuorumNode =
            serde_json::from_str(&serde_json::to_string(&with).unwrap()).unwrap();
        assert_eq!(back.directory_id, Some(d));
    }
}
