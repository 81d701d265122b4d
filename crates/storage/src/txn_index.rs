//! The per-segment transaction index (Kafka's `TransactionIndex` and `AbortedTxn`, KIP-98).

use crate::vfs::Fs;
use std::io;
use std::path::{Path, PathBuf};
use types::{Offset, ProducerId};

/// Size in bytes of one [`AbortedTxn`] entry on disk.
pub const ABORTED_TXN_ENTRY_SIZE: usize = 34;
/// The only entry version (Kafka's `AbortedTxn.CURRENT_VERSION`).
const ABORTED_TXN_VERSION: i16 = 0;

/// One aborted transaction (Kafka's `AbortedTxn`), as stored in a `.txnindex` file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbortedTxn {
    /// The transactional producer.
    pub producer_id: ProducerId,
    /// Offset of the transaction's first batch.
    pub first_offset: Offset,
    /// Offset of the ABORT marker that ended it.
    pub last_offset: Offset,
    /// The partition's first unstable offset once this transaction completed, not capped by the
    /// HighWatermark (Kafka's `ProducerStateManager.lastStableOffset(CompletedTxn)`: the first offset of
    /// the earliest other ongoing transaction, else `last_offset + 1`). Lets a search stop early: no
    /// later entry starts below it.
    pub last_stable_offset: Offset,
}

impl AbortedTxn {
    /// The 34 bytes on disk: version i16 (0), producer id i64, first offset i64, last offset i64,
    /// last stable offset i64, all big-endian.
    pub fn encode(&self) -> [u8; ABORTED_TXN_ENTRY_SIZE] {
        let mut b = [0u8; ABORTED_TXN_ENTRY_SIZE];
        b[0..2].copy_from_slice(&ABORTED_TXN_VERSION.to_be_bytes());
        b[2..10].copy_from_slice(&self.producer_id.get().to_be_bytes());
        b[10..18].copy_from_slice(&self.first_offset.get().to_be_bytes());
        b[18..26].copy_from_slice(&self.last_offset.get().to_be_bytes());
        b[26..34].copy_from_slice(&self.last_stable_offset.get().to_be_bytes());
        b
    }

    /// Parses one entry; `None` when the version is not 0 or `first_offset > last_offset`.
    pub fn decode(b: &[u8; ABORTED_TXN_ENTRY_SIZE]) -> Option<AbortedTxn> {
        let i64_at = |p: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[p..p + 8]);
            i64::from_be_bytes(a)
        };
        if i16::from_be_bytes([b[0], b[1]]) != ABORTED_TXN_VERSION {
            return None;
        }
        let t = AbortedTxn {
            producer_id: ProducerId(i64_at(2)),
            first_offset: Offset(i64_at(10)),
            last_offset: Offset(i64_at(18)),
            last_stable_offset: Offset(i64_at(26)),
        };
        (t.first_offset <= t.last_offset).then_some(t)
    }
}

/// What [`TransactionIndex::collect_aborted`] found in one segment (Kafka's `TxnIndexSearchResult`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TxnIndexSearchResult {
    /// The aborted transactions overlapping the range, in index order.
    pub aborted: Vec<AbortedTxn>,
    /// True when an entry's last stable offset reached the upper bound: later segments cannot hold
    /// an overlapping transaction, the search stops.
    pub is_complete: bool,
}

/// The aborted transactions whose ABORT marker lies in one segment, file `<base>.txnindex`.
///
/// On-disk format (Kafka's, byte for byte): [`AbortedTxn`] entries of 34 bytes back to back, in the
/// order their markers were appended, so last offsets strictly ascend. The file is created with the
/// first entry (a segment without aborted transactions has none) and written through on every append;
/// it is fsynced with the segment. The entries are also kept in memory (aborts are rare; a read of
/// `read_committed` consults them without I/O).
///
/// Recovery rule: at open the file is sanity-checked — size a multiple of 34, every entry version 0
/// with first ≤ last offset, last offsets strictly ascending and not below the segment's base offset
/// (Kafka's `sanityCheck`); a file failing it is not trusted:
/// [`needs_rebuild`](Self::needs_rebuild) is set and the log rebuilds it from the segment's markers
/// (as it does for every segment its crash recovery re-reads). Never panics on file contents.
#[derive(Debug)]
pub struct TransactionIndex {
    fs: Fs,
    path: PathBuf,
    entries: Vec<AbortedTxn>,
    dirty: bool,
    needs_rebuild: bool,
}

impl TransactionIndex {
    /// Loads `path`, the index of the segment at `base_offset`, when it exists (a missing file = no
    /// entries). I/O errors are returned; bad contents are not an error (see the type's recovery rule).
    pub fn open(fs: Fs, path: &Path, base_offset: i64) -> io::Result<TransactionIndex> {
        let mut idx = TransactionIndex {
            fs,
            path: path.to_path_buf(),
            entries: Vec::new(),
            dirty: false,
            needs_rebuild: false,
        };
        let bytes = match idx.fs.read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(idx),
            Err(e) => return Err(e),
        };
        match Self::parse(&bytes, base_offset) {
            Some(entries) => idx.entries = entries,
            None => {
                tracing::warn!(path = %path.display(), bytes = bytes.len(), "transaction index fails its sanity check; it will be rebuilt");
                idx.needs_rebuild = true;
            }
        }
        Ok(idx)
    }

    fn parse(bytes: &[u8], base_offset: i64) -> Option<Vec<AbortedTxn>> {
        if !bytes.len().is_multiple_of(ABORTED_TXN_ENTRY_SIZE) {
            return None;
        }
        let mut out: Vec<AbortedTxn> = Vec::with_capacity(bytes.len() / ABORTED_TXN_ENTRY_SIZE);
        for chunk in bytes.chunks_exact(ABORTED_TXN_ENTRY_SIZE) {
            let t = AbortedTxn::decode(chunk.try_into().ok()?)?;
            if t.last_offset.get() < base_offset
                || out.last().is_some_and(|l| l.last_offset >= t.last_offset)
            {
                return None;
            }
            out.push(t);
        }
        Some(out)
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The entries, in file order.
    pub fn entries(&self) -> &[AbortedTxn] {
        &self.entries
    }

    /// True when the file failed its sanity check at open and awaits a rebuild.
    pub fn needs_rebuild(&self) -> bool {
        self.needs_rebuild
    }

    /// Appends `txn` to the file and memory. A last offset not above the previous entry's →
    /// `InvalidInput` (Kafka: "The last offset of appended transactions must increase sequentially").
    pub fn append(&mut self, txn: AbortedTxn) -> io::Result<()> {
        if let Some(l) = self.entries.last() {
            if txn.last_offset <= l.last_offset {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "aborted transaction ending at {} appended after one ending at {} in {}",
                        txn.last_offset,
                        l.last_offset,
                        self.path.display()
                    ),
                ));
            }
        }
        let f = self.fs.open(&self.path, true)?;
        let pos = (self.entries.len() * ABORTED_TXN_ENTRY_SIZE) as u64;
        f.write_all_at(&txn.encode(), pos)?;
        self.entries.push(txn);
        self.dirty = true;
        Ok(())
    }

    /// Drops the entries whose last offset is ≥ `offset` (Kafka's `truncateTo`).
    pub fn truncate_to(&mut self, offset: Offset) -> io::Result<()> {
        let keep = self.entries.partition_point(|t| t.last_offset < offset);
        if keep == self.entries.len() {
            return Ok(());
        }
        self.entries.truncate(keep);
        self.write_len()
    }

    /// Empties the index (before a rebuild); clears [`needs_rebuild`](Self::needs_rebuild).
    pub fn reset(&mut self) -> io::Result<()> {
        self.entries.clear();
        self.needs_rebuild = false;
        if self.fs.exists(&self.path) {
            self.write_len()?;
        }
        Ok(())
    }

    fn write_len(&mut self) -> io::Result<()> {
        let f = self.fs.open(&self.path, true)?;
        f.set_len((self.entries.len() * ABORTED_TXN_ENTRY_SIZE) as u64)?;
        self.dirty = true;
        Ok(())
    }

    /// Kafka's `collectAbortedTxns`: the entries with `last_offset ≥ fetch_offset` and
    /// `first_offset < upper_bound_offset`, stopping at the first entry whose last stable offset is
    /// ≥ `upper_bound_offset` (then `is_complete`).
    pub fn collect_aborted(
        &self,
        fetch_offset: Offset,
        upper_bound_offset: Offset,
    ) -> TxnIndexSearchResult {
        let mut r = TxnIndexSearchResult::default();
        for t in &self.entries {
            if t.last_offset >= fetch_offset && t.first_offset < upper_bound_offset {
                r.aborted.push(*t);
            }
            if t.last_stable_offset >= upper_bound_offset {
                r.is_complete = true;
                break;
            }
        }
        r
    }

    /// fsyncs the file when it changed.
    pub fn flush(&mut self) -> io::Result<()> {
        if std::mem::take(&mut self.dirty) && self.fs.exists(&self.path) {
            self.fs.open(&self.path, false)?.sync_all()?;
        }
        Ok(())
    }

    /// Clears the dirty flag and returns the path to fsync, when it changed.
    pub(crate) fn take_dirty_path(&mut self) -> Option<PathBuf> {
        std::mem::take(&mut self.dirty).then(|| self.path.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vfs::real_fs;

    fn txn(pid: i64, first: i64, last: i64, lso: i64) -> AbortedTxn {
        AbortedTxn {
            producer_id: ProducerId(pid),
            first_offset: Offset(first),
            last_offset: Offset(last),
            last_stable_offset: Offset(lso),
        }
    }

    #[test]
    fn entry_bytes_match_kafkas_layout() {
        let b = txn(0x0102030405060708, 5, 9, 10).encode();
        let mut want = vec![0u8, 0];
        want.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        want.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 5]);
        want.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 9]);
        want.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 10]);
        assert_eq!(b.to_vec(), want);
        assert_eq!(
            AbortedTxn::decode(&b),
            Some(txn(0x0102030405060708, 5, 9, 10))
        );
    }

    #[test]
    fn append_reopen_truncate_and_collect() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("00000000000000000000.txnindex");
        let mut idx = TransactionIndex::open(real_fs(), &p, 0).unwrap();
        assert!(!p.exists(), "created lazily");
        idx.append(txn(1, 0, 10, 11)).unwrap();
        idx.append(txn(2, 5, 20, 21)).unwrap();
        assert!(idx.append(txn(3, 1, 20, 21)).is_err());
        idx.flush().unwrap();
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 68);
        let mut idx = TransactionIndex::open(real_fs(), &p, 0).unwrap();
        assert_eq!(idx.entries().len(), 2);
        let r = idx.collect_aborted(Offset(11), Offset(30));
        assert_eq!(r.aborted, vec![txn(2, 5, 20, 21)]);
        assert!(!r.is_complete);
        let r = idx.collect_aborted(Offset(0), Offset(5));
        assert_eq!(r.aborted, vec![txn(1, 0, 10, 11)]);
        assert!(r.is_complete, "lso 11 >= upper bound 5 stops the search");
        idx.truncate_to(Offset(20)).unwrap();
        assert_eq!(idx.entries(), &[txn(1, 0, 10, 11)]);
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 34);
    }

    #[test]
    fn bad_files_are_flagged_for_rebuild_not_trusted() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x.txnindex");
        let good = [txn(1, 0, 10, 11).encode(), txn(1, 12, 14, 15).encode()].concat();
        let mut bad_cases = vec![good[..40].to_vec()];
        let mut descending = good.clone();
        descending[18 + 34..26 + 34].copy_from_slice(&3i64.to_be_bytes());
        bad_cases.push(descending);
        let mut version = good.clone();
        version[1] = 1;
        bad_cases.push(version);
        let mut first_after_last = good.clone();
        first_after_last[10..18].copy_from_slice(&99i64.to_be_bytes());
        bad_cases.push(first_after_last);
        for bad in bad_cases {
            std::fs::write(&p, &bad).unwrap();
            let mut idx = TransactionIndex::open(real_fs(), &p, 0).unwrap();
            assert!(idx.needs_rebuild() && idx.entries().is_empty());
            idx.reset().unwrap();
            assert!(!idx.needs_rebuild());
            assert_eq!(std::fs::metadata(&p).unwrap().len(), 0);
        }
    }

    proptest::proptest! {
        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
            let _ = TransactionIndex::parse(&bytes, 0);
        }
    }
}
