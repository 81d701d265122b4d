//! [`ControllerStatus`]: a running controller's raft state and applied image, read from outside the server
//! (the broker's metrics endpoint, issue 17).

use std::sync::Arc;

use metadata::MetadataImage;
use openraft::ServerState;
use types::BrokerId;

use crate::server::{node_id, Inner, RaftStatus};

/// Reads a running controller's state: its raft status and the image it applied (issue 17's metrics).
/// Cloned freely; it outlives neither the data nor the server's shutdown in any way that matters (after
/// shutdown it reports the last state).
#[derive(Clone)]
pub struct ControllerStatus {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for ControllerStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControllerStatus").finish_non_exhaustive()
    }
}

impl ControllerStatus {
    pub(crate) fn new(inner: Arc<Inner>) -> ControllerStatus {
        ControllerStatus { inner }
    }

    /// This node's raft state as it sees it now.
    pub fn raft_status(&self) -> RaftStatus {
        let m = self.inner.raft.metrics();
        let m = m.borrow();
        RaftStatus {
            term: m.current_term,
            leader: m.current_leader.map(node_id),
            is_leader: m.state == ServerState::Leader,
            last_log_index: m.last_log_index,
            last_applied: m.last_applied.map(|l| l.index),
        }
    }

    /// The metadata offset each broker with a session reported in its last heartbeat to this controller (-1
    /// before its first), in broker id order: meaningful on the active controller (issue 17's per-broker
    /// metadata lag). `None` while a controller decision holds its state: a scrape does not wait for it.
    pub fn broker_metadata_offsets(&self) -> Option<Vec<(BrokerId, i64)>> {
        let active = self.inner.active.try_lock().ok()?;
        let progress = active.control.broker_progress().into_iter();
        Some(progress.map(|(id, _, offset)| (id, offset)).collect())
    }

    /// Calls `f` with this node's applied metadata image (committed state; may lag the leader).
    pub fn with_image<T>(&self, f: impl FnOnce(&MetadataImage) -> T) -> T {
        f(&self.inner.sm.state.read().image)
    }
}
