//! Parked JoinGroup/SyncGroup requests and the answers held back for them.

use super::*;

/// A parked request's answer: the coordinator's result, or a runtime failure.
pub(super) type Parked<T> = oneshot::Sender<Result<T, CoordinatorError>>;

pub(super) enum Pending {
    Join(Parked<JoinResult>),
    Sync(Parked<SyncResult>),
}

/// A parked request with its answer, held back until the group records written with it are replicated.
pub(super) enum Reply {
    Join(Parked<JoinResult>, JoinResult),
    Sync(Parked<SyncResult>, SyncResult),
}

impl Reply {
    pub(super) fn send(self) {
        match self {
            Reply::Join(tx, r) => {
                let _ = tx.send(Ok(r));
            }
            Reply::Sync(tx, r) => {
                let _ = tx.send(Ok(r));
            }
        }
    }

    /// Sends `error` instead (the records could not be replicated).
    pub(super) fn fail(self, error: CoordinatorError) {
        match self {
            Reply::Join(tx, _) => {
                let _ = tx.send(Err(error));
            }
            Reply::Sync(tx, _) => {
                let _ = tx.send(Err(error));
            }
        }
    }
}
