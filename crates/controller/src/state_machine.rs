//! The metadata state machine (openraft's [`RaftStateMachine`]): replays committed batches into the
//! [`MetadataImage`] and snapshots it.
//!
//! On-disk format: `<store dir>/snapshot.json` holds `{"meta": SnapshotMeta, "image":
//! MetadataImage}` as JSON, replaced atomically (tmp + fsync + rename + dir fsync) whenever a
//! snapshot is built or installed. The snapshot data exchanged with followers is the image alone as
//! JSON. Recovery rule: on open the image, last applied log id and membership come from
//! `snapshot.json` if present (else an empty image); openraft then re-applies committed log entries
//! after the snapshot, so startup never replays from the beginning of the log.
//!
//! For `fetch_metadata` the state machine keeps the most recent records (at most
//! [`MAX_RETAINED_RECORDS`], whole offsets only) with their offsets; older history is served as a
//! full image.

use std::collections::VecDeque;
use std::io::{self, Cursor};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use metadata::{MetadataImage, MetadataRecord};
use openraft::storage::RaftStateMachine;
use openraft::{
    AnyError, EntryPayload, RaftSnapshotBuilder, Snapshot, SnapshotMeta, StorageIOError,
    StoredMembership,
};
use parking_lot::RwLock;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use storage::Fs;

use crate::log_store::{read_json, write_json_atomic};
use crate::raft_types::{LogEntry, LogId, QuorumNode, StorageError, TypeConfig};

/// Most records kept in memory for incremental `fetch_metadata` answers.
pub const MAX_RETAINED_RECORDS: usize = 100_000;

const SNAPSHOT_FILE: &str = "snapshot.json";

/// The applied state, shared between the state machine and the controller server.
#[derive(Debug)]
pub(crate) struct SmState {
    pub image: MetadataImage,
    pub last_applied: Option<LogId>,
    pub membership: StoredMembership<u64, QuorumNode>,
    /// Records with offset > `retained_from`, in log order.
    pub recent: VecDeque<(i64, MetadataRecord)>,
    /// Every record with an offset above this is in `recent`.
    pub retained_from: i64,
    snapshot_seq: u64,
}

impl SmState {
    /// The offset a broker's image reaches once it holds everything this image holds: the offset of the
    /// last applied record, or `retained_from` (the snapshot's offset) when none followed it. Entries
    /// without records (blank, membership) advance the controller's image offset but never a broker's that
    /// replays records, so they are not counted.
    pub fn last_record_offset(&self) -> i64 {
        self.recent.back().map_or(self.retained_from, |(o, _)| *o)
    }
}

/// Shared handle to the applied state plus a notification of the last applied offset.
#[derive(Debug)]
pub(crate) struct SmShared {
    pub state: RwLock<SmState>,
    pub applied_tx: watch::Sender<i64>,
}

impl SmShared {
    /// Records after `since` from the retained window, at most `max` (never splitting an offset),
    /// or `None` when `since` is older than the window.
    pub fn records_after(&self, since: i64, max: usize) -> Option<Vec<(i64, MetadataRecord)>> {
        let st = self.state.read();
        if since < st.retained_from {
            return None;
        }
        let start = st.recent.partition_point(|(o, _)| *o <= since);
        let mut out: Vec<(i64, MetadataRecord)> = Vec::new();
        for (o, r) in st.recent.range(start..) {
            if out.len() >= max && out.last().is_some_and(|(lo, _)| lo != o) {
                break;
            }
            out.push((*o, r.clone()));
        }
        Some(out)
    }
}

#[derive(Serialize, Deserialize)]
struct StoredSnapshot {
    meta: SnapshotMeta<u64, QuorumNode>,
    image: MetadataImage,
}

/// The state machine store (see the module doc).
#[derive(Clone, Debug)]
pub struct StateMachineStore {
    fs: Fs,
    dir: PathBuf,
    cluster_id: String,
    pub(crate) shared: Arc<SmShared>,
}

fn sm_error(e: impl std::error::Error + 'static) -> StorageError {
    StorageIOError::write_state_machine(AnyError::new(&e)).into()
}

fn snapshot_error(e: impl std::error::Error + 'static) -> StorageError {
    StorageIOError::write_snapshot(None, AnyError::new(&e)).into()
}

impl StateMachineStore {
    /// Opens the state machine in `dir` on `fs`, loading `snapshot.json` if present. `cluster_id` is
    /// set on the image.
    pub fn open(fs: Fs, dir: &Path, cluster_id: &str) -> io::Result<StateMachineStore> {
        crate::log_store::create_dir_durable(&fs, dir)?;
        let stored: Option<StoredSnapshot> = read_json(&fs, dir, SNAPSHOT_FILE)?;
        let (mut image, last_applied, membership) = match stored {
            Some(s) => (s.image, s.meta.last_log_id, s.meta.last_membership),
            None => (MetadataImage::default(), None, StoredMembership::default()),
        };
        image.cluster_id = cluster_id.to_string();
        let offset = image.offset;
        let (applied_tx, _) = watch::channel(offset);
        Ok(StateMachineStore {
            fs,
            dir: dir.to_path_buf(),
            cluster_id: cluster_id.to_string(),
            shared: Arc::new(SmShared {
                state: RwLock::new(SmState {
                    image,
                    last_applied,
                    membership,
                    recent: VecDeque::new(),
                    retained_from: offset,
                    snapshot_seq: 0,
                }),
                applied_tx,
            }),
        })
    }

    fn read_snapshot(&self) -> io::Result<Option<Snapshot<TypeConfig>>> {
        let stored: Option<StoredSnapshot> = read_json(&self.fs, &self.dir, SNAPSHOT_FILE)?;
        Ok(match stored {
            Some(s) => {
                let data = serde_json::to_vec(&s.image).map_err(io::Error::other)?;
                Some(Snapshot {
                    meta: s.meta,
                    snapshot: Box::new(Cursor::new(data)),
                })
            }
            None => None,
        })
    }
}

impl RaftSnapshotBuilder<TypeConfig> for StateMachineStore {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError> {
        let (image, last_applied, membership, seq) = {
            let mut st = self.shared.state.write();
            st.snapshot_seq += 1;
            (
                st.image.clone(),
                st.last_applied,
                st.membership.clone(),
                st.snapshot_seq,
            )
        };
        let snapshot_id = match last_applied {
            Some(l) => format!("{}-{}-{seq}", l.leader_id.term, l.index),
            None => format!("none-{seq}"),
        };
        let meta = SnapshotMeta {
            last_log_id: last_applied,
            last_membership: membership,
            snapshot_id,
        };
        let data = serde_json::to_vec(&image).map_err(snapshot_error)?;
        let stored = StoredSnapshot {
            meta: meta.clone(),
            image,
        };
        write_json_atomic(&self.fs, &self.dir, SNAPSHOT_FILE, &stored).map_err(snapshot_error)?;
        Ok(Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(data)),
        })
    }
}

impl RaftStateMachine<TypeConfig> for StateMachineStore {
    type SnapshotBuilder = StateMachineStore;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId>, StoredMembership<u64, QuorumNode>), StorageError> {
        let st = self.shared.state.read();
        Ok((st.last_applied, st.membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<()>, StorageError>
    where
        I: IntoIterator<Item = LogEntry> + openraft::OptionalSend,
        I::IntoIter: openraft::OptionalSend,
    {
        let mut replies = Vec::new();
        let offset = {
            let mut st = self.shared.state.write();
            for entry in entries {
                let offset = entry.log_id.index as i64;
                st.last_applied = Some(entry.log_id);
                match entry.payload {
                    EntryPayload::Blank => {}
                    EntryPayload::Normal(batch) => {
                        for r in batch.records {
                            st.image.apply(offset, &r);
                            st.recent.push_back((offset, r));
                        }
                    }
                    EntryPayload::Membership(m) => {
                        st.membership = StoredMembership::new(Some(entry.log_id), m);
                    }
                }
                if offset > st.image.offset {
                    st.image.offset = offset;
                }
                replies.push(());
            }
            // Trim whole offsets from the front once over the bound.
            while st.recent.len() > MAX_RETAINED_RECORDS {
                let Some(&(o, _)) = st.recent.front() else {
                    break;
                };
                while st.recent.front().is_some_and(|(x, _)| *x == o) {
                    st.recent.pop_front();
                }
                st.retained_from = o;
            }
            st.image.offset
        };
        self.shared.applied_tx.send_replace(offset);
        Ok(replies)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<Cursor<Vec<u8>>>, StorageError> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<u64, QuorumNode>,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError> {
        let mut image: MetadataImage =
            serde_json::from_slice(snapshot.get_ref()).map_err(snapshot_error)?;
        image.cluster_id = self.cluster_id.clone();
        if let Some(l) = meta.last_log_id {
            image.offset = image.offset.max(l.index as i64);
        }
        let stored = StoredSnapshot {
            meta: meta.clone(),
            image: image.clone(),
        };
        write_json_atomic(&self.fs, &self.dir, SNAPSHOT_FILE, &stored).map_err(snapshot_error)?;
        let offset = image.offset;
        {
            let mut st = self.shared.state.write();
            st.image = image;
            st.last_applied = meta.last_log_id;
            st.membership = meta.last_membership.clone();
            st.recent.clear();
            st.retained_from = offset;
        }
        self.shared.applied_tx.send_replace(offset);
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<TypeConfig>>, StorageError> {
        self.read_snapshot().map_err(sm_error)
    }
}

#[cfg(test)]
mod tests {
    use openraft::{CommittedLeaderId, Membership};
    use uuid::Uuid;

    use super::*;
    use crate::raft_types::MetadataBatch;

    fn entry(index: u64, records: Vec<MetadataRecord>) -> LogEntry {
        LogEntry {
            log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
            payload: EntryPayload::Normal(MetadataBatch { records }),
        }
    }

    fn topic(name: &str, id: u128) -> MetadataRecord {
        MetadataRecord::TopicRecord {
            name: name.into(),
            topic_id: Uuid::from_u128(id),
        }
    }

    #[tokio::test]
    async fn apply_snapshot_install_and_reopen() {
        let a_dir = tempfile::tempdir().unwrap();
        let b_dir = tempfile::tempdir().unwrap();
        let mut a = StateMachineStore::open(storage::real_fs(), a_dir.path(), "c").unwrap();
        let membership = LogEntry {
            log_id: LogId::new(CommittedLeaderId::new(0, 0), 0),
            payload: EntryPayload::Membership(Membership::new(
                vec![std::collections::BTreeSet::from([1u64])],
                None,
            )),
        };
        a.apply(vec![
            membership,
            entry(1, vec![topic("x", 1), topic("y", 2)]),
            entry(2, vec![]),
            entry(3, vec![topic("z", 3)]),
        ])
        .await
        .unwrap();
        assert_eq!(a.shared.state.read().image.offset, 3);
        // Incremental answers never split an offset and start after `since`.
        let r = a.shared.records_after(0, 1).unwrap();
        assert_eq!(r.len(), 2);
        assert!(r.iter().all(|(o, _)| *o == 1));
        assert_eq!(a.shared.records_after(1, 10).unwrap().len(), 1);
        assert!(a.shared.records_after(3, 10).unwrap().is_empty());

        let mut builder = a.get_snapshot_builder().await;
        let snap = builder.build_snapshot().await.unwrap();
        assert_eq!(snap.meta.last_log_id.unwrap().index, 3);

        let mut b = StateMachineStore::open(storage::real_fs(), b_dir.path(), "c").unwrap();
        b.install_snapshot(&snap.meta, snap.snapshot).await.unwrap();
        assert_eq!(b.shared.state.read().image, a.shared.state.read().image);
        // Records before the snapshot are no longer available incrementally.
        assert!(b.shared.records_after(1, 10).is_none());
        let (applied, m) = b.applied_state().await.unwrap();
        assert_eq!(applied.unwrap().index, 3);
        assert_eq!(m.voter_ids().collect::<Vec<_>>(), vec![1]);

        // Reopening either store restores the snapshot.
        for dir in [a_dir.path(), b_dir.path()] {
            let mut s = StateMachineStore::open(storage::real_fs(), dir, "c").unwrap();
            let img = s.shared.state.read().image.clone();
            assert_eq!(img, a.shared.state.read().image);
            assert_eq!(s.applied_state().await.unwrap().0.unwrap().index, 3);
            assert!(s.get_current_snapshot().await.unwrap().is_some());
        }
    }
}
