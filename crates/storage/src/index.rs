//! Sparse offset and time indexes of a log segment.

use crate::vfs::{real_fs, FileRef, Fs};
use std::io;
use std::path::{Path, PathBuf};

/// An append-only file of fixed-size entries, loaded into memory on first lookup (so opening a
/// segment costs one `stat`, not a read).
#[derive(Debug)]
struct IndexFile {
    fs: Fs,
    path: PathBuf,
    entry_size: usize,
    max_entries: usize,
    /// Entries in memory, `None` until first needed.
    data: Option<Vec<u8>>,
    /// Number of entries (on disk == in memory once loaded).
    len: usize,
    /// Open handle, `None` while released (inactive segments hold no index descriptors).
    file: Option<FileRef>,
    dirty: bool,
    /// File length was not a multiple of the entry size when opened.
    torn: bool,
}

impl IndexFile {
    fn open(fs: Fs, path: &Path, entry_size: usize, max_bytes: u64) -> io::Result<Self> {
        let disk_len = match fs.len(path) {
            Ok(l) => l,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                fs.create(path)?;
                0
            }
            Err(e) => return Err(e),
        };
        let torn = disk_len % entry_size as u64 != 0;
        Ok(IndexFile {
            fs,
            path: path.to_path_buf(),
            entry_size,
            max_entries: ((max_bytes / entry_size as u64).max(1)) as usize,
            data: None,
            len: (disk_len / entry_size as u64) as usize,
            file: None,
            dirty: false,
            torn,
        })
    }

    fn handle(&mut self) -> io::Result<&FileRef> {
        if self.file.is_none() {
            self.file = Some(self.fs.open(&self.path, false)?);
        }
        Ok(self.file.as_ref().expect("opened"))
    }

    /// Clears the dirty flag, returning whether it was set (the caller fsyncs by path).
    fn take_dirty(&mut self) -> bool {
        std::mem::take(&mut self.dirty)
    }

    /// Closes the descriptor when nothing is waiting for an fsync.
    fn release_if_clean(&mut self) {
        if !self.dirty {
            self.file = None;
        }
    }

    fn load(&mut self) -> io::Result<&[u8]> {
        if self.data.is_none() {
            let mut buf = vec![0u8; self.len * self.entry_size];
            self.handle()?.read_exact_at(&mut buf, 0)?;
            self.data = Some(buf);
            self.release_if_clean();
        }
        Ok(self.data.as_deref().expect("loaded"))
    }

    fn entry(&mut self, i: usize) -> io::Result<Vec<u8>> {
        if let Some(d) = &self.data {
            return Ok(d[i * self.entry_size..(i + 1) * self.entry_size].to_vec());
        }
        let mut buf = vec![0u8; self.entry_size];
        let at = (i * self.entry_size) as u64;
        self.handle()?.read_exact_at(&mut buf, at)?;
        Ok(buf)
    }

    fn push(&mut self, entry: &[u8]) -> io::Result<()> {
        debug_assert_eq!(entry.len(), self.entry_size);
        let at = (self.len * self.entry_size) as u64;
        self.handle()?.write_all_at(entry, at)?;
        if let Some(d) = &mut self.data {
            d.extend_from_slice(entry);
        }
        self.len += 1;
        self.dirty = true;
        Ok(())
    }

    /// Keeps the first `n` entries. Nothing is written when the file already holds exactly `n` whole
    /// entries (not torn): the file is not opened, not marked dirty, so no fsync follows — a crash
    /// recovery resetting an empty index costs no I/O.
    fn truncate_entries(&mut self, n: usize) -> io::Result<()> {
        let n = n.min(self.len);
        if n == self.len && !self.torn {
            return Ok(());
        }
        let new_len = (n * self.entry_size) as u64;
        self.handle()?.set_len(new_len)?;
        if let Some(d) = &mut self.data {
            d.truncate(n * self.entry_size);
        }
        self.len = n;
        self.torn = false;
        self.dirty = true;
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.dirty {
            self.handle()?.sync_all()?;
            self.dirty = false;
        }
        Ok(())
    }

    /// Index of the last entry whose key (decoded by `key`) is <= target, by binary search.
    fn floor<K: Ord>(&mut self, target: K, key: impl Fn(&[u8]) -> K) -> io::Result<Option<usize>> {
        let es = self.entry_size;
        let n = self.len;
        let data = self.load()?;
        // First index whose key > target.
        let (mut lo, mut hi) = (0usize, n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if key(&data[mid * es..(mid + 1) * es]) <= target {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo.checked_sub(1))
    }
}

/// A (offset, byte position) pair from the [`OffsetIndex`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetPosition {
    /// Absolute offset.
    pub offset: i64,
    /// Byte position in the segment's `.log` file.
    pub position: u32,
}

/// Sparse offset index of one segment: file `<20-digit base offset>.index`.
///
/// On-disk format (Kafka's): a sequence of 8-byte entries, big-endian
/// `relative_offset: u32` (offset − base offset) and `position: u32` (byte position of a batch in
/// the `.log` file). An entry is added when more than `index.interval.bytes` were appended since
/// the previous one; its offset is the *last* offset of the batch starting at `position`.
/// Entries are strictly increasing in both fields. Unlike Kafka the file is not preallocated: its
/// length is always a whole number of entries, and "full" means `segment.index.bytes / 8` entries.
///
/// Recovery rule: trusted after a clean shutdown (only a length that is not a multiple of 8 marks
/// it for rebuild); after a crash, the indexes of every segment from the recovery point on are
/// rebuilt from the batches in the `.log` file.
#[derive(Debug)]
pub struct OffsetIndex {
    base_offset: i64,
    inner: IndexFile,
}

impl OffsetIndex {
    /// Size of an entry in bytes.
    pub const ENTRY_SIZE: usize = 8;

    /// Opens (creating if missing) the index at `path`; reads nothing yet.
    pub fn open(path: &Path, base_offset: i64, max_index_bytes: u64) -> io::Result<Self> {
        Self::open_in(real_fs(), path, base_offset, max_index_bytes)
    }

    /// [`open`](Self::open) on `fs`.
    pub fn open_in(
        fs: Fs,
        path: &Path,
        base_offset: i64,
        max_index_bytes: u64,
    ) -> io::Result<Self> {
        Ok(OffsetIndex {
            base_offset,
            inner: IndexFile::open(fs, path, Self::ENTRY_SIZE, max_index_bytes)?,
        })
    }

    fn decode(&self, e: &[u8]) -> OffsetPosition {
        OffsetPosition {
            offset: self.base_offset + u32::from_be_bytes(e[0..4].try_into().expect("4")) as i64,
            position: u32::from_be_bytes(e[4..8].try_into().expect("4")),
        }
    }

    /// Number of entries.
    pub fn entries(&self) -> usize {
        self.inner.len
    }

    /// True when the index reached `segment.index.bytes`.
    pub fn is_full(&self) -> bool {
        self.inner.len >= self.inner.max_entries
    }

    /// True when the file length was not a whole number of entries (needs rebuild).
    pub fn is_torn(&self) -> bool {
        self.inner.torn
    }

    /// Path of the file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The last entry, read without loading the whole file.
    pub fn last_entry(&mut self) -> io::Result<Option<OffsetPosition>> {
        if self.inner.len == 0 {
            return Ok(None);
        }
        let e = self.inner.entry(self.inner.len - 1)?;
        Ok(Some(self.decode(&e)))
    }

    /// The entry with the largest position <= `position` (entries grow in both fields), or `None`.
    pub fn lookup_by_position(&mut self, position: u32) -> io::Result<Option<OffsetPosition>> {
        if self.inner.len == 0 {
            return Ok(None);
        }
        match self.inner.floor(position, |e| {
            u32::from_be_bytes(e[4..8].try_into().expect("4"))
        })? {
            None => Ok(None),
            Some(i) => {
                let e = self.inner.entry(i)?;
                Ok(Some(self.decode(&e)))
            }
        }
    }

    /// The entry with the largest offset <= `target`, or (base offset, 0) when none.
    pub fn lookup(&mut self, target: i64) -> io::Result<OffsetPosition> {
        let base = self.base_offset;
        let rel = target - base;
        if rel < 0 || self.inner.len == 0 {
            return Ok(OffsetPosition {
                offset: base,
                position: 0,
            });
        }
        let rel = rel.min(u32::MAX as i64) as u32;
        match self
            .inner
            .floor(rel, |e| u32::from_be_bytes(e[0..4].try_into().expect("4")))?
        {
            None => Ok(OffsetPosition {
                offset: base,
                position: 0,
            }),
            Some(i) => {
                let e = self.inner.entry(i)?;
                Ok(self.decode(&e))
            }
        }
    }

    /// Appends an entry. Entries not increasing in offset and position are ignored.
    pub fn append(&mut self, offset: i64, position: u32) -> io::Result<()> {
        if let Some(last) = self.last_entry()? {
            if offset <= last.offset || position <= last.position {
                return Ok(());
            }
        }
        let rel = offset - self.base_offset;
        if !(0..=u32::MAX as i64).contains(&rel) {
            return Ok(());
        }
        let mut e = [0u8; 8];
        e[0..4].copy_from_slice(&(rel as u32).to_be_bytes());
        e[4..8].copy_from_slice(&position.to_be_bytes());
        self.inner.push(&e)
    }

    /// Removes every entry with offset >= `offset`.
    pub fn truncate_to(&mut self, offset: i64) -> io::Result<()> {
        let keep = if offset <= self.base_offset {
            0
        } else {
            let rel = (offset - self.base_offset - 1).min(u32::MAX as i64) as u32;
            self.inner
                .floor(rel, |e| u32::from_be_bytes(e[0..4].try_into().expect("4")))?
                .map_or(0, |i| i + 1)
        };
        self.inner.truncate_entries(keep)
    }

    /// Removes all entries.
    pub fn reset(&mut self) -> io::Result<()> {
        self.inner.truncate_entries(0)
    }

    /// fsyncs the file if it changed.
    pub fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }

    /// Closes the file descriptor unless an fsync is pending (reopened on demand).
    pub fn release(&mut self) {
        self.inner.release_if_clean()
    }

    /// The file path when it has unsynced changes (and forgets them: the caller fsyncs).
    pub(crate) fn take_dirty_path(&mut self) -> Option<std::path::PathBuf> {
        self.inner.take_dirty().then(|| self.inner.path.clone())
    }
}

/// A (timestamp, offset) pair from the [`TimeIndex`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimestampOffset {
    /// Timestamp in ms.
    pub timestamp: i64,
    /// Absolute offset.
    pub offset: i64,
}

/// Sparse time index of one segment: file `<20-digit base offset>.timeindex`.
///
/// On-disk format (Kafka's): 12-byte entries, big-endian `timestamp: i64` (ms) and
/// `relative_offset: u32`. Entry (t, o) means: the largest timestamp among batches up to the one
/// ending at offset o is t. Entries are strictly increasing in timestamp and non-decreasing in
/// offset; one is added with each offset-index entry when the max timestamp grew, and one when
/// the segment becomes inactive (roll/close), so the last entry holds the segment's max timestamp.
///
/// Recovery rule: as [`OffsetIndex`].
#[derive(Debug)]
pub struct TimeIndex {
    base_offset: i64,
    inner: IndexFile,
}

impl TimeIndex {
    /// Size of an entry in bytes.
    pub const ENTRY_SIZE: usize = 12;

    /// Opens (creating if missing) the index at `path`; reads nothing yet.
    pub fn open(path: &Path, base_offset: i64, max_index_bytes: u64) -> io::Result<Self> {
        Self::open_in(real_fs(), path, base_offset, max_index_bytes)
    }

    /// [`open`](Self::open) on `fs`.
    pub fn open_in(
        fs: Fs,
        path: &Path,
        base_offset: i64,
        max_index_bytes: u64,
    ) -> io::Result<Self> {
        Ok(TimeIndex {
            base_offset,
            inner: IndexFile::open(fs, path, Self::ENTRY_SIZE, max_index_bytes)?,
        })
    }

    fn decode(&self, e: &[u8]) -> TimestampOffset {
        TimestampOffset {
            timestamp: i64::from_be_bytes(e[0..8].try_into().expect("8")),
            offset: self.base_offset + u32::from_be_bytes(e[8..12].try_into().expect("4")) as i64,
        }
    }

    /// Number of entries.
    pub fn entries(&self) -> usize {
        self.inner.len
    }

    /// True when the index reached `segment.index.bytes`.
    pub fn is_full(&self) -> bool {
        self.inner.len >= self.inner.max_entries
    }

    /// True when the file length was not a whole number of entries (needs rebuild).
    pub fn is_torn(&self) -> bool {
        self.inner.torn
    }

    /// The last entry, read without loading the whole file.
    pub fn last_entry(&mut self) -> io::Result<Option<TimestampOffset>> {
        if self.inner.len == 0 {
            return Ok(None);
        }
        let e = self.inner.entry(self.inner.len - 1)?;
        Ok(Some(self.decode(&e)))
    }

    /// The entry with the largest timestamp <= `timestamp`, or (-1, base offset) when none.
    pub fn lookup(&mut self, timestamp: i64) -> io::Result<TimestampOffset> {
        match self.inner.floor(timestamp, |e| {
            i64::from_be_bytes(e[0..8].try_into().expect("8"))
        })? {
            None => Ok(TimestampOffset {
                timestamp: -1,
                offset: self.base_offset,
            }),
            Some(i) => {
                let e = self.inner.entry(i)?;
                Ok(self.decode(&e))
            }
        }
    }

    /// Appends (timestamp, offset) when timestamp is larger than the last entry's (and offset
    /// not smaller); otherwise does nothing.
    pub fn maybe_append(&mut self, timestamp: i64, offset: i64) -> io::Result<()> {
        if let Some(last) = self.last_entry()? {
            if timestamp <= last.timestamp || offset < last.offset {
                return Ok(());
            }
        }
        let rel = offset - self.base_offset;
        if !(0..=u32::MAX as i64).contains(&rel) {
            return Ok(());
        }
        let mut e = [0u8; 12];
        e[0..8].copy_from_slice(&timestamp.to_be_bytes());
        e[8..12].copy_from_slice(&(rel as u32).to_be_bytes());
        self.inner.push(&e)
    }

    /// Removes every entry with offset >= `offset`.
    pub fn truncate_to(&mut self, offset: i64) -> io::Result<()> {
        // Offsets are non-decreasing: keep the prefix with offset < `offset`.
        let n = self.inner.len;
        let mut keep = n;
        while keep > 0 {
            let e = self.inner.entry(keep - 1)?;
            if self.decode(&e).offset < offset {
                break;
            }
            keep -= 1;
        }
        self.inner.truncate_entries(keep)
    }

    /// Removes all entries.
    pub fn reset(&mut self) -> io::Result<()> {
        self.inner.truncate_entries(0)
    }

    /// fsyncs the file if it changed.
    pub fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }

    /// Closes the file descriptor unless an fsync is pending (reopened on demand).
    pub fn release(&mut self) {
        self.inner.release_if_clean()
    }

    /// The file path when it has unsynced changes (and forgets them: the caller fsyncs).
    pub(crate) fn take_dirty_path(&mut self) -> Option<std::path::PathBuf> {
        self.inner.take_dirty().then(|| self.inner.path.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_index_lookup_and_truncate() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("00000000000000000100.index");
        let mut idx = OffsetIndex::open(&p, 100, 80).unwrap();
        assert_eq!(
            idx.lookup(150).unwrap(),
            OffsetPosition {
                offset: 100,
                position: 0
            }
        );
        for i in 1..=5 {
            idx.append(100 + i * 10, (i * 1000) as u32).unwrap();
        }
        idx.append(120, 99999).unwrap(); // ignored: not increasing
        assert_eq!(idx.entries(), 5);
        assert_eq!(
            idx.lookup(99).unwrap(),
            OffsetPosition {
                offset: 100,
                position: 0
            }
        );
        assert_eq!(
            idx.lookup(109).unwrap(),
            OffsetPosition {
                offset: 100,
                position: 0
            }
        );
        assert_eq!(
            idx.lookup(110).unwrap(),
            OffsetPosition {
                offset: 110,
                position: 1000
            }
        );
        assert_eq!(
            idx.lookup(135).unwrap(),
            OffsetPosition {
                offset: 130,
                position: 3000
            }
        );
        assert_eq!(
            idx.lookup(10_000).unwrap(),
            OffsetPosition {
                offset: 150,
                position: 5000
            }
        );
        // reopen: same answers, lazily loaded
        drop(idx);
        let mut idx = OffsetIndex::open(&p, 100, 80).unwrap();
        assert_eq!(
            idx.last_entry().unwrap(),
            Some(OffsetPosition {
                offset: 150,
                position: 5000
            })
        );
        assert_eq!(
            idx.lookup(135).unwrap(),
            OffsetPosition {
                offset: 130,
                position: 3000
            }
        );
        idx.truncate_to(130).unwrap();
        assert_eq!(idx.entries(), 2);
        assert_eq!(
            idx.lookup(135).unwrap(),
            OffsetPosition {
                offset: 120,
                position: 2000
            }
        );
        assert!(!idx.is_full());
        for i in 3..=10 {
            idx.append(100 + i * 10, (i * 1000) as u32).unwrap();
        }
        assert!(idx.is_full());
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 80);
    }

    #[test]
    fn torn_index_detected() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.index");
        std::fs::write(&p, [0u8; 11]).unwrap();
        let idx = OffsetIndex::open(&p, 0, 1 << 20).unwrap();
        assert!(idx.is_torn());
    }

    #[test]
    fn time_index_lookup() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("0.timeindex");
        let mut idx = TimeIndex::open(&p, 0, 1 << 20).unwrap();
        idx.maybe_append(1000, 5).unwrap();
        idx.maybe_append(1000, 9).unwrap(); // ignored
        idx.maybe_append(2000, 9).unwrap();
        idx.maybe_append(3000, 20).unwrap();
        assert_eq!(idx.entries(), 3);
        assert_eq!(idx.lookup(999).unwrap().offset, 0);
        assert_eq!(
            idx.lookup(1500).unwrap(),
            TimestampOffset {
                timestamp: 1000,
                offset: 5
            }
        );
        assert_eq!(
            idx.lookup(5000).unwrap(),
            TimestampOffset {
                timestamp: 3000,
                offset: 20
            }
        );
        idx.truncate_to(10).unwrap();
        assert_eq!(
            idx.last_entry().unwrap(),
            Some(TimestampOffset {
                timestamp: 2000,
                offset: 9
            })
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        #[test]
        fn garbage_index_files_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200), targets in proptest::collection::vec(proptest::prelude::any::<i64>(), 1..10)) {
            let dir = tempfile::tempdir().unwrap();
            let p = dir.path().join("0.index");
            std::fs::write(&p, &bytes).unwrap();
            let mut idx = OffsetIndex::open(&p, 1000, 1 << 20).unwrap();
            let t = dir.path().join("0.timeindex");
            std::fs::write(&t, &bytes).unwrap();
            let mut tidx = TimeIndex::open(&t, 1000, 1 << 20).unwrap();
            for &x in &targets {
                let _ = idx.lookup(x).unwrap();
                let _ = tidx.lookup(x).unwrap();
                idx.truncate_to(x).unwrap();
                tidx.truncate_to(x).unwrap();
            }
            let _ = idx.last_entry().unwrap();
            let _ = tidx.last_entry().unwrap();
        }
    }
}
