//! The disk-backed raft log store of the metadata log (`__cluster_metadata-0`), openraft's
//! [`RaftLogStorage`].
//!
//! On-disk format, under the store directory (`<data_dir>/__cluster_metadata-0/`):
//! - `log/<first index, 20 decimal digits>.log`: log segments. A segment is a sequence of frames
//!   `[len: u32 BE][crc32c(payload): u32 BE][payload: len bytes]`, the payload being one openraft
//!   entry (`{log_id, payload}`) as JSON. Indexes are consecutive within and across segments; a
//!   new segment is started once the active one reaches [`SEGMENT_BYTES`].
//! - `vote.json`: the last saved vote (JSON). `purged.json`: the last purged log id (JSON). Both are
//!   replaced atomically: written to `*.tmp`, fsynced, renamed over, directory fsynced.
//!
//! Every file operation goes through a `storage::Fs` (`RealFs` in production, `SimFs` in the quorum
//! simulation); directories the store creates are fsynced into their parents.
//!
//! Writes: an append writes all frames of the call to the active segment and fsyncs it before
//! openraft is told the entries are flushed. `truncate(i)` cuts the segment holding `i` at that
//! entry's frame and deletes later segments (fsynced). `purge(i)` first persists `purged.json`,
//! then deletes segments whose entries are all `<= i` (the active segment is never deleted).
//!
//! Recovery rule on open: read `vote.json` and `purged.json`, then every segment in index order. A
//! short frame or a CRC/JSON mismatch in the *last* segment is a torn write: the file is truncated
//! at that frame and everything after it is dropped (it was never acknowledged). The same damage in
//! an earlier segment, a frame larger than [`MAX_ENTRY_BYTES`], or a gap in the indexes is
//! corruption and fails the open. Entries at or below the purged index are skipped. The whole live
//! log (bounded by snapshotting + purging) is kept in memory for reads.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::io;
use std::ops::RangeBounds;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use openraft::storage::{LogFlushed, RaftLogStorage};
use openraft::{AnyError, LogState, OptionalSend, RaftLogReader, StorageIOError, Vote};
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use serde::Serialize;
use storage::vfs::FileRef;
use storage::Fs;

use crate::raft_types::{LogEntry, LogId, StorageError, TypeConfig};

/// A segment rolls once it holds at least this many bytes (8 MiB).
pub const SEGMENT_BYTES: u64 = 8 << 20;
/// Largest accepted entry frame payload (64 MiB); larger lengths on disk are corruption.
pub const MAX_ENTRY_BYTES: u32 = 64 << 20;

const FRAME_HEADER: usize = 8;

/// Where each live entry sits on disk.
#[derive(Clone, Copy, Debug)]
struct Slot {
    segment: u64,
    pos: u64,
}

#[derive(Debug)]
struct LogInner {
    fs: Fs,
    dir: PathBuf,
    log_dir: PathBuf,
    entries: BTreeMap<u64, (LogEntry, Slot)>,
    /// Segment base index -> byte length.
    segments: BTreeMap<u64, u64>,
    active: Option<FileRef>,
    vote: Option<Vote<u64>>,
    last_purged: Option<LogId>,
}

/// The disk-backed raft log store (see the module doc for format and recovery).
#[derive(Clone, Debug)]
pub struct LogStore {
    inner: Arc<Mutex<LogInner>>,
}

fn io_error(e: impl std::error::Error + 'static) -> StorageError {
    StorageIOError::write_logs(AnyError::new(&e)).into()
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

fn segment_path(log_dir: &Path, base: u64) -> PathBuf {
    log_dir.join(format!("{base:020}.log"))
}

/// Creates `dir` and its missing parents durably: each directory created is fsynced into its parent
/// (a new directory's entry is otherwise lost by a power loss, and with it the vote and log under it).
pub(crate) fn create_dir_durable(fs: &Fs, dir: &Path) -> io::Result<()> {
    let mut missing = Vec::new();
    let mut next = Some(dir);
    while let Some(d) = next.filter(|d| !d.as_os_str().is_empty() && !fs.exists(d)) {
        missing.push(d);
        next = d.parent();
    }
    fs.create_dir_all(dir)?;
    for d in missing.iter().rev() {
        let parent = d
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        fs.sync_dir(parent)?;
    }
    Ok(())
}

/// Writes `value` as JSON to `dir/name` atomically (tmp + fsync + rename + dir fsync).
pub(crate) fn write_json_atomic<T: Serialize>(
    fs: &Fs,
    dir: &Path,
    name: &str,
    value: &T,
) -> io::Result<()> {
    let tmp = dir.join(format!("{name}.tmp"));
    let data = serde_json::to_vec(value).map_err(|e| invalid(e.to_string()))?;
    {
        let f = fs.create(&tmp)?;
        f.write_all_at(&data, 0)?;
        f.sync_all()?;
    }
    fs.rename(&tmp, &dir.join(name))?;
    fs.sync_dir(dir)
}

/// Reads JSON `dir/name`, `None` when the file does not exist.
pub(crate) fn read_json<T: DeserializeOwned>(
    fs: &Fs,
    dir: &Path,
    name: &str,
) -> io::Result<Option<T>> {
    match fs.read(&dir.join(name)) {
        Ok(data) => serde_json::from_slice(&data)
            .map(Some)
            .map_err(|e| invalid(format!("{name}: {e}"))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

fn encode_frame(entry: &LogEntry, out: &mut Vec<u8>) -> io::Result<()> {
    let payload = serde_json::to_vec(entry).map_err(|e| invalid(e.to_string()))?;
    if payload.len() > MAX_ENTRY_BYTES as usize {
        return Err(invalid(format!(
            "entry of {} bytes exceeds {MAX_ENTRY_BYTES}",
            payload.len()
        )));
    }
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(&crc32c::crc32c(&payload).to_be_bytes());
    out.extend_from_slice(&payload);
    Ok(())
}

/// Result of scanning one segment: its entries with positions, and where valid data ends.
struct Scan {
    entries: Vec<(LogEntry, u64)>,
    valid_len: u64,
    torn: Option<String>,
}

fn scan_segment(data: &[u8]) -> Scan {
    let mut pos = 0usize;
    let mut entries = Vec::new();
    let torn = loop {
        if pos == data.len() {
            break None;
        }
        if data.len() - pos < FRAME_HEADER {
            break Some(format!("short frame header at byte {pos}"));
        }
        let len = u32::from_be_bytes(data[pos..pos + 4].try_into().expect("4 bytes"));
        let crc = u32::from_be_bytes(data[pos + 4..pos + 8].try_into().expect("4 bytes"));
        if len > MAX_ENTRY_BYTES {
            break Some(format!(
                "frame length {len} at byte {pos} exceeds the limit"
            ));
        }
        let start = pos + FRAME_HEADER;
        let end = start + len as usize;
        if end > data.len() {
            break Some(format!("short frame at byte {pos}"));
        }
        let payload = &data[start..end];
        if crc32c::crc32c(payload) != crc {
            break Some(format!("CRC mismatch at byte {pos}"));
        }
        match serde_json::from_slice::<LogEntry>(payload) {
            Ok(e) => entries.push((e, pos as u64)),
            Err(e) => break Some(format!("undecodable entry at byte {pos}: {e}")),
        }
        pos = end;
    };
    Scan {
        entries,
        valid_len: pos as u64,
        torn,
    }
}

impl LogStore {
    /// Opens (creating if needed) the log store in `dir` on `fs`, recovering as the module doc
    /// describes.
    ///
    /// Errors: I/O errors, and corruption outside the tail of the last segment.
    pub fn open(fs: Fs, dir: &Path) -> io::Result<LogStore> {
        let log_dir = dir.join("log");
        create_dir_durable(&fs, &log_dir)?;
        let vote: Option<Vote<u64>> = read_json(&fs, dir, "vote.json")?;
        let last_purged: Option<LogId> = read_json(&fs, dir, "purged.json")?;
        let mut bases = Vec::new();
        for ent in fs.read_dir(&log_dir)? {
            if let Some(base) = ent
                .name
                .strip_suffix(".log")
                .and_then(|b| b.parse::<u64>().ok())
            {
                bases.push(base);
            }
        }
        bases.sort_unstable();
        let purged_index = last_purged.map(|l| l.index);
        let mut entries = BTreeMap::new();
        let mut segments = BTreeMap::new();
        let mut prev: Option<u64> = purged_index;
        for (i, &base) in bases.iter().enumerate() {
            let path = segment_path(&log_dir, base);
            let data = fs.read(&path)?;
            let scan = scan_segment(&data);
            let last_segment = i + 1 == bases.len();
            if let Some(why) = &scan.torn {
                if !last_segment {
                    return Err(invalid(format!("{}: {why}", path.display())));
                }
                tracing::warn!(
                    "metadata log: truncating torn tail of {}: {why}",
                    path.display()
                );
                let f = fs.open(&path, false)?;
                f.set_len(scan.valid_len)?;
                f.sync_all()?;
            }
            for (entry, pos) in scan.entries {
                let index = entry.log_id.index;
                if purged_index.is_some_and(|p| index <= p) {
                    continue;
                }
                if let Some(p) = prev {
                    if index != p + 1 {
                        return Err(invalid(format!(
                            "{}: index {index} follows {p}",
                            path.display()
                        )));
                    }
                }
                prev = Some(index);
                entries.insert(index, (entry, Slot { segment: base, pos }));
            }
            segments.insert(base, scan.valid_len);
        }
        let active = match segments.keys().next_back() {
            Some(&base) => Some(fs.open(&segment_path(&log_dir, base), false)?),
            None => None,
        };
        Ok(LogStore {
            inner: Arc::new(Mutex::new(LogInner {
                fs,
                dir: dir.to_path_buf(),
                log_dir,
                entries,
                segments,
                active,
                vote,
                last_purged,
            })),
        })
    }
}

impl LogInner {
    fn last_log_id(&self) -> Option<LogId> {
        self.entries
            .values()
            .next_back()
            .map(|(e, _)| e.log_id)
            .or(self.last_purged)
    }

    fn append(&mut self, entries: Vec<LogEntry>) -> io::Result<()> {
        // openraft truncates conflicting entries first; overlapping appends are handled the same
        // way so that the files never hold an index twice.
        if let Some(first) = entries.first() {
            if self.entries.contains_key(&first.log_id.index) {
                self.truncate(first.log_id.index)?;
            }
        }
        let mut buf = Vec::new();
        let mut new_files = false;
        let mut pending: Vec<(LogEntry, u64)> = Vec::new();
        for entry in entries {
            let index = entry.log_id.index;
            let roll = match self.segments.iter().next_back() {
                None => true,
                Some((_, &len)) => len + buf.len() as u64 >= SEGMENT_BYTES,
            };
            if roll {
                self.flush_active(&mut buf, &mut pending)?;
                let path = segment_path(&self.log_dir, index);
                self.active = Some(self.fs.create(&path)?);
                self.segments.insert(index, 0);
                new_files = true;
            }
            let pos = self.segments.values().next_back().copied().unwrap_or(0) + buf.len() as u64;
            encode_frame(&entry, &mut buf)?;
            pending.push((entry, pos));
        }
        self.flush_active(&mut buf, &mut pending)?;
        if let Some(f) = &self.active {
            f.sync_data()?;
        }
        if new_files {
            self.fs.sync_dir(&self.log_dir)?;
        }
        Ok(())
    }

    /// Writes `buf` to the active segment and records the pending entries' slots.
    fn flush_active(
        &mut self,
        buf: &mut Vec<u8>,
        pending: &mut Vec<(LogEntry, u64)>,
    ) -> io::Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        let (&base, len) = self
            .segments
            .iter_mut()
            .next_back()
            .ok_or_else(|| invalid("no active segment".into()))?;
        let f = self
            .active
            .as_ref()
            .ok_or_else(|| invalid("no active segment".into()))?;
        f.write_all_at(buf, *len)?;
        // Fsync of a segment being left behind happens here; the active one is synced by append().
        f.sync_data()?;
        *len += buf.len() as u64;
        buf.clear();
        for (entry, pos) in pending.drain(..) {
            self.entries
                .insert(entry.log_id.index, (entry, Slot { segment: base, pos }));
        }
        Ok(())
    }

    fn truncate(&mut self, index: u64) -> io::Result<()> {
        let Some((_, slot)) = self.entries.get(&index).map(|(e, s)| (e.log_id, *s)) else {
            return Ok(());
        };
        self.entries.split_off(&index);
        let later: Vec<u64> = self
            .segments
            .range(slot.segment + 1..)
            .map(|(&b, _)| b)
            .collect();
        self.active = None;
        for base in later {
            self.fs.remove_file(&segment_path(&self.log_dir, base))?;
            self.segments.remove(&base);
        }
        let path = segment_path(&self.log_dir, slot.segment);
        let f = self.fs.open(&path, false)?;
        f.set_len(slot.pos)?;
        f.sync_all()?;
        self.segments.insert(slot.segment, slot.pos);
        self.active = Some(f);
        self.fs.sync_dir(&self.log_dir)
    }

    /// Purges the log up to and including `log_id`. Idempotent, and never moves the purge point back; the
    /// live entries at or below the purge point are dropped even when it does not move (entries appended
    /// there after an earlier purge, as openraft's `get_initial_state` may purge twice up to the state
    /// machine's last applied id), so the in-memory log always matches what a reopen rebuilds.
    fn purge(&mut self, log_id: LogId) -> io::Result<()> {
        let log_id = match self.last_purged {
            Some(p) if p.index >= log_id.index => p,
            _ => {
                write_json_atomic(&self.fs, &self.dir, "purged.json", &log_id)?;
                self.last_purged = Some(log_id);
                log_id
            }
        };
        self.entries = self.entries.split_off(&(log_id.index + 1));
        // Segment i holds [base_i, base_{i+1}); delete it when base_{i+1} - 1 <= purged index.
        let bases: Vec<u64> = self.segments.keys().copied().collect();
        let mut removed = false;
        for pair in bases.windows(2) {
            if pair[1] <= log_id.index + 1 {
                self.fs.remove_file(&segment_path(&self.log_dir, pair[0]))?;
                self.segments.remove(&pair[0]);
                removed = true;
            }
        }
        if removed {
            self.fs.sync_dir(&self.log_dir)?;
        }
        Ok(())
    }

    /// The entries in `range`; none for an empty or inverted one, where `BTreeMap::range` would panic.
    /// openraft asked for an inverted range in the quorum simulation once the log had lost entries it had
    /// acknowledged (appends not fsynced, a mutation): a broken disk, not a reason to crash the process.
    fn read_range<RB: RangeBounds<u64>>(&self, range: RB) -> Vec<LogEntry> {
        use std::ops::Bound;
        let start = match range.start_bound() {
            Bound::Included(&s) => u128::from(s),
            Bound::Excluded(&s) => u128::from(s) + 1,
            Bound::Unbounded => 0,
        };
        let end = match range.end_bound() {
            Bound::Included(&e) => u128::from(e) + 1,
            Bound::Excluded(&e) => u128::from(e),
            Bound::Unbounded => u128::from(u64::MAX) + 1,
        };
        if start >= end {
            return Vec::new();
        }
        self.entries
            .range(start as u64..)
            .take_while(|(&i, _)| u128::from(i) < end)
            .map(|(_, (e, _))| e.clone())
            .collect()
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<LogEntry>, StorageError> {
        Ok(self.inner.lock().read_range(range))
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError> {
        let inner = self.inner.lock();
        Ok(LogState {
            last_purged_log_id: inner.last_purged,
            last_log_id: inner.last_log_id(),
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<u64>) -> Result<(), StorageError> {
        let mut inner = self.inner.lock();
        write_json_atomic(&inner.fs, &inner.dir, "vote.json", vote)
            .map_err(|e| StorageError::from(StorageIOError::write_vote(AnyError::new(&e))))?;
        inner.vote = Some(*vote);
        Ok(())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<u64>>, StorageError> {
        Ok(self.inner.lock().vote)
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<TypeConfig>,
    ) -> Result<(), StorageError>
    where
        I: IntoIterator<Item = LogEntry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let entries: Vec<LogEntry> = entries.into_iter().collect();
        let result = self.inner.lock().append(entries);
        match result {
            Ok(()) => {
                callback.log_io_completed(Ok(()));
                Ok(())
            }
            Err(e) => {
                let msg = e.to_string();
                callback.log_io_completed(Err(io::Error::new(e.kind(), msg)));
                Err(io_error(e))
            }
        }
    }

    async fn truncate(&mut self, log_id: LogId) -> Result<(), StorageError> {
        self.inner.lock().truncate(log_id.index).map_err(io_error)
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), StorageError> {
        self.inner.lock().purge(log_id).map_err(io_error)
    }
}

#[cfg(test)]
mod tests {
    use openraft::{CommittedLeaderId, EntryPayload};

    use std::fs::{self, OpenOptions};

    use super::*;
    use crate::raft_types::MetadataBatch;

    fn entry(term: u64, index: u64) -> LogEntry {
        LogEntry {
            log_id: LogId::new(CommittedLeaderId::new(term, 1), index),
            payload: EntryPayload::Normal(MetadataBatch::default()),
        }
    }

    fn indexes(store: &LogStore) -> Vec<u64> {
        store.inner.lock().entries.keys().copied().collect()
    }

    fn append(store: &LogStore, from: u64, to: u64) {
        store
            .inner
            .lock()
            .append((from..to).map(|i| entry(1, i)).collect())
            .unwrap();
    }

    #[test]
    fn append_truncate_purge_and_recover() {
        let dir = tempfile::tempdir().unwrap();
        let store = LogStore::open(storage::real_fs(), dir.path()).unwrap();
        append(&store, 0, 10);
        store.inner.lock().truncate(7).unwrap();
        append(&store, 7, 12);
        store
            .inner
            .lock()
            .purge(LogId::new(CommittedLeaderId::new(1, 1), 3))
            .unwrap();
        assert_eq!(indexes(&store), (4..12).collect::<Vec<_>>());
        drop(store);
        let store = LogStore::open(storage::real_fs(), dir.path()).unwrap();
        assert_eq!(indexes(&store), (4..12).collect::<Vec<_>>());
        assert_eq!(store.inner.lock().last_purged.unwrap().index, 3);
    }

    #[test]
    fn torn_tail_is_truncated_and_corruption_elsewhere_fails() {
        let dir = tempfile::tempdir().unwrap();
        let store = LogStore::open(storage::real_fs(), dir.path()).unwrap();
        append(&store, 0, 5);
        drop(store);
        let seg = segment_path(&dir.path().join("log"), 0);
        let len = fs::metadata(&seg).unwrap().len();
        // Torn write: the last frame loses its final bytes.
        OpenOptions::new()
            .write(true)
            .open(&seg)
            .unwrap()
            .set_len(len - 3)
            .unwrap();
        let store = LogStore::open(storage::real_fs(), dir.path()).unwrap();
        assert_eq!(indexes(&store), vec![0, 1, 2, 3]);
        append(&store, 4, 6);
        drop(store);
        assert_eq!(
            indexes(&LogStore::open(storage::real_fs(), dir.path()).unwrap()),
            (0..6).collect::<Vec<_>>()
        );
        // A flipped byte in a segment that is not the last one is corruption.
        fs::copy(&seg, segment_path(&dir.path().join("log"), 6)).unwrap();
        let mut data = fs::read(&seg).unwrap();
        data[10] ^= 0xff;
        fs::write(&seg, data).unwrap();
        let e = LogStore::open(storage::real_fs(), dir.path()).unwrap_err();
        assert!(e.to_string().contains("CRC"), "{e}");
    }

    #[test]
    fn rolls_segments_and_purge_deletes_whole_segments() {
        let dir = tempfile::tempdir().unwrap();
        let store = LogStore::open(storage::real_fs(), dir.path()).unwrap();
        append(&store, 0, 3);
        {
            // Force a roll by pretending the active segment is full.
            let mut inner = store.inner.lock();
            *inner.segments.get_mut(&0).unwrap() = SEGMENT_BYTES;
        }
        append(&store, 3, 5);
        assert_eq!(store.inner.lock().segments.len(), 2);
        store
            .inner
            .lock()
            .purge(LogId::new(CommittedLeaderId::new(1, 1), 2))
            .unwrap();
        assert_eq!(
            store
                .inner
                .lock()
                .segments
                .keys()
                .copied()
                .collect::<Vec<_>>(),
            vec![3]
        );
        drop(store);
        let store = LogStore::open(storage::real_fs(), dir.path()).unwrap();
        assert_eq!(indexes(&store), vec![3, 4]);
    }

    #[test]
    fn overlapping_append_replaces_the_tail() {
        let dir = tempfile::tempdir().unwrap();
        let store = LogStore::open(storage::real_fs(), dir.path()).unwrap();
        append(&store, 0, 5);
        store
            .inner
            .lock()
            .append((3..7).map(|i| entry(2, i)).collect())
            .unwrap();
        drop(store);
        let store = LogStore::open(storage::real_fs(), dir.path()).unwrap();
        assert_eq!(indexes(&store), (0..7).collect::<Vec<_>>());
        assert_eq!(store.inner.lock().entries[&3].0.log_id.leader_id.term, 2);
    }

    /// openraft's storage suite (`get_initial_state_membership_from_log_and_sm`) appends below the purge
    /// point and purges up to it again: the entry must go from memory as it goes at a reopen.
    #[test]
    fn repeated_purge_drops_entries_appended_below_the_purge_point() {
        let dir = tempfile::tempdir().unwrap();
        let store = LogStore::open(storage::real_fs(), dir.path()).unwrap();
        let purged = LogId::new(CommittedLeaderId::new(1, 1), 2);
        store.inner.lock().purge(purged).unwrap();
        append(&store, 1, 2);
        store.inner.lock().purge(purged).unwrap();
        assert!(indexes(&store).is_empty());
        append(&store, 3, 4);
        assert_eq!(indexes(&store), vec![3]);
        drop(store);
        let store = LogStore::open(storage::real_fs(), dir.path()).unwrap();
        assert_eq!(indexes(&store), vec![3]);
        assert_eq!(store.inner.lock().last_purged, Some(purged));
    }

    #[test]
    fn a_new_store_survives_a_power_loss() {
        // The directories the store creates are fsynced into their parents: a power loss right after the
        // first vote keeps the vote (it lost the whole new directory before).
        let sim = storage::SimFs::new(7);
        let dir = Path::new("/data/__cluster_metadata-0");
        let mut store = LogStore::open(sim.fs(), dir).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async { store.save_vote(&Vote::new(3, 2)).await.unwrap() });
        append(&store, 0, 3);
        sim.crash();
        let mut store = LogStore::open(sim.fs(), dir).unwrap();
        let v = rt.block_on(async { store.read_vote().await.unwrap() });
        assert_eq!(v, Some(Vote::new(3, 2)));
        assert_eq!(indexes(&store), vec![0, 1, 2]);
    }

    #[test]
    fn empty_and_inverted_ranges_read_nothing() {
        use std::ops::Bound::{Excluded, Included, Unbounded};
        let dir = tempfile::tempdir().unwrap();
        let store = LogStore::open(storage::real_fs(), dir.path()).unwrap();
        append(&store, 0, 10);
        let read = |r: (std::ops::Bound<u64>, std::ops::Bound<u64>)| -> Vec<u64> {
            let inner = store.inner.lock();
            inner.read_range(r).iter().map(|e| e.log_id.index).collect()
        };
        assert_eq!(read((Included(5), Excluded(3))), Vec::<u64>::new());
        assert_eq!(read((Excluded(3), Excluded(3))), Vec::<u64>::new());
        assert_eq!(read((Included(4), Included(3))), Vec::<u64>::new());
        assert_eq!(read((Excluded(3), Included(5))), vec![4, 5]);
        assert_eq!(read((Included(8), Unbounded)), vec![8, 9]);
        assert_eq!(read((Unbounded, Excluded(2))), vec![0, 1]);
        assert_eq!(read((Excluded(u64::MAX), Unbounded)), Vec::<u64>::new());
    }

    #[test]
    fn vote_persists() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = LogStore::open(storage::real_fs(), dir.path()).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            store.save_vote(&Vote::new(3, 2)).await.unwrap();
        });
        let mut store = LogStore::open(storage::real_fs(), dir.path()).unwrap();
        let v = rt.block_on(async { store.read_vote().await.unwrap() });
        assert_eq!(v, Some(Vote::new(3, 2)));
    }
}
