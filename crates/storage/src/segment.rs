//! One log segment: a `.log` file of record batches plus its two sparse indexes and its transaction
//! index.

use crate::index::{OffsetIndex, TimeIndex};
use crate::offset_file_name;
use crate::txn_index::TransactionIndex;
use crate::vfs::{real_fs, FileRef, Fs, StorageFile};
use protocol::record::{RecordBatchHeader, RecordError, Records, RECORD_BATCH_OVERHEAD};
use std::io;
use std::path::{Path, PathBuf};

/// What the segment needs to know about each appended batch.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AppendedBatch {
    pub last_offset: i64,
    pub max_timestamp: i64,
    pub size: u32,
}

/// A batch header located in a segment.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LocatedBatch {
    pub position: u64,
    pub header: RecordBatchHeader,
}

/// A segment of one partition's log: `<20-digit base offset>.log` holding whole RecordBatch v2
/// batches back to back (exactly the wire bytes, with offsets/leader epoch assigned by the
/// leader), plus [`OffsetIndex`] `.index`, [`TimeIndex`] `.timeindex` and the
/// [`TransactionIndex`] `.txnindex` (the aborted transactions whose ABORT marker is in this segment;
/// its file exists only once it has an entry).
///
/// Invariants: batches are in increasing offset order, every offset in the segment is >= its base
/// offset and within base + u32::MAX; the file ends on a batch boundary (a torn tail only after a
/// crash).
///
/// Recovery rule: after a clean shutdown the segment is trusted; only the tail after the last
/// offset-index entry is scanned (headers only) to find the next offset and max timestamp. After
/// a crash, [`recover`](Self::recover) re-reads every batch, checks header, CRC-32C and offset
/// order, truncates the file at the first bad or incomplete batch and rebuilds both indexes.
#[derive(Debug)]
pub struct LogSegment {
    fs: Fs,
    base_offset: i64,
    log_path: PathBuf,
    log: FileRef,
    size: u64,
    offset_index: OffsetIndex,
    time_index: TimeIndex,
    txn_index: TransactionIndex,
    index_interval_bytes: u64,
    bytes_since_last_index_entry: u64,
    max_timestamp_so_far: i64,
    offset_of_max_timestamp_so_far: i64,
    next_offset: Option<i64>,
    rolling_base_ms: Option<i64>,
    dirty: bool,
}

/// Suffix of the log cleaner's output files before the swap.
pub(crate) const CLEANED_SUFFIX: &str = ".cleaned";
/// Suffix of cleaned files committed to replace a segment (crash recovery completes the swap).
pub(crate) const SWAP_SUFFIX: &str = ".swap";

fn corrupt(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

impl LogSegment {
    /// Opens the segment with base offset `base_offset` in `dir`, creating empty files if
    /// missing. Reads no data.
    pub fn open(
        dir: &Path,
        base_offset: i64,
        index_interval_bytes: u64,
        segment_index_bytes: u64,
    ) -> io::Result<Self> {
        Self::open_in(
            &real_fs(),
            dir,
            base_offset,
            index_interval_bytes,
            segment_index_bytes,
        )
    }

    /// [`open`](Self::open) on `fs`.
    pub fn open_in(
        fs: &Fs,
        dir: &Path,
        base_offset: i64,
        index_interval_bytes: u64,
        segment_index_bytes: u64,
    ) -> io::Result<Self> {
        Self::open_with_suffix(
            fs,
            dir,
            base_offset,
            index_interval_bytes,
            segment_index_bytes,
            "",
        )
    }

    /// Creates an empty segment whose four files carry the `.cleaned` suffix
    /// (`<base>.log.cleaned`, `<base>.index.cleaned`, `<base>.timeindex.cleaned`, and an empty
    /// `<base>.txnindex.cleaned`): the log cleaner's output before it is swapped in (see
    /// [`crate::cleaner`]). Stale files of that name are removed first.
    pub(crate) fn create_cleaned(
        fs: &Fs,
        dir: &Path,
        base_offset: i64,
        index_interval_bytes: u64,
        segment_index_bytes: u64,
    ) -> io::Result<Self> {
        for suffix in ["log", "index", "timeindex", "txnindex"] {
            let p = dir.join(format!(
                "{}{CLEANED_SUFFIX}",
                offset_file_name(base_offset, suffix)
            ));
            match fs.remove_file(&p) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        // The transaction index always exists (maybe empty), so the swap replaces the live one.
        let txn = dir.join(format!(
            "{}{CLEANED_SUFFIX}",
            offset_file_name(base_offset, "txnindex")
        ));
        fs.open(&txn, true)?.sync_all()?;
        Self::open_with_suffix(
            fs,
            dir,
            base_offset,
            index_interval_bytes,
            segment_index_bytes,
            CLEANED_SUFFIX,
        )
    }

    fn open_with_suffix(
        fs: &Fs,
        dir: &Path,
        base_offset: i64,
        index_interval_bytes: u64,
        segment_index_bytes: u64,
        suffix: &str,
    ) -> io::Result<Self> {
        let path =
            |kind: &str| dir.join(format!("{}{suffix}", offset_file_name(base_offset, kind)));
        let log_path = path("log");
        let log = fs.open(&log_path, true)?;
        let size = log.len()?;
        let offset_index =
            OffsetIndex::open_in(fs.clone(), &path("index"), base_offset, segment_index_bytes)?;
        let time_index = TimeIndex::open_in(
            fs.clone(),
            &path("timeindex"),
            base_offset,
            segment_index_bytes,
        )?;
        let txn_index = TransactionIndex::open(fs.clone(), &path("txnindex"), base_offset)?;
        Ok(LogSegment {
            fs: fs.clone(),
            base_offset,
            log_path,
            log,
            size,
            offset_index,
            time_index,
            txn_index,
            index_interval_bytes,
            bytes_since_last_index_entry: 0,
            max_timestamp_so_far: -1,
            offset_of_max_timestamp_so_far: base_offset,
            next_offset: if size == 0 { Some(base_offset) } else { None },
            rolling_base_ms: None,
            dirty: false,
        })
    }

    /// The segment's transaction index.
    pub fn txn_index(&self) -> &TransactionIndex {
        &self.txn_index
    }

    pub(crate) fn txn_index_mut(&mut self) -> &mut TransactionIndex {
        &mut self.txn_index
    }

    /// First offset this segment may hold.
    pub fn base_offset(&self) -> i64 {
        self.base_offset
    }

    /// Bytes in the `.log` file.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The open `.log` file (the cleaner reads inactive segments through it without the lock).
    pub(crate) fn log_file(&self) -> &FileRef {
        &self.log
    }

    /// The `.log` file path.
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// Largest batch max timestamp seen (ms), -1 if unknown/none.
    pub fn max_timestamp_so_far(&self) -> i64 {
        self.max_timestamp_so_far
    }

    pub(crate) fn offset_of_max_timestamp_so_far(&self) -> i64 {
        self.offset_of_max_timestamp_so_far
    }

    pub(crate) fn offset_index_full(&self) -> bool {
        self.offset_index.is_full() || self.time_index.is_full()
    }

    pub(crate) fn indexes_torn(&self) -> bool {
        self.offset_index.is_torn() || self.time_index.is_torn()
    }

    pub(crate) fn rolling_base_ms(&self) -> Option<i64> {
        self.rolling_base_ms
    }

    pub(crate) fn set_rolling_base_ms(&mut self, ms: i64) {
        self.rolling_base_ms = Some(ms);
    }

    /// The offset after the last batch, when known (always known for the active segment).
    pub(crate) fn next_offset(&self) -> Option<i64> {
        self.next_offset
    }

    /// Loads the segment's max timestamp from the last time-index entry (O(1)); used for
    /// inactive segments after a clean shutdown.
    pub(crate) fn load_max_timestamp_from_index(&mut self) -> io::Result<()> {
        if let Some(e) = self.time_index.last_entry()? {
            self.max_timestamp_so_far = e.timestamp;
            self.offset_of_max_timestamp_so_far = e.offset;
        }
        self.time_index.release();
        Ok(())
    }

    /// Closes index file descriptors that have nothing to fsync (inactive segments keep only
    /// their `.log` descriptor open).
    pub(crate) fn release_index_handles(&mut self) {
        self.offset_index.release();
        self.time_index.release();
    }

    /// Clean-open path for the active segment: scans batch headers after the last offset-index
    /// entry to find the next offset and the max timestamp. Errors (InvalidData) when the tail is
    /// not whole batches; the caller then runs [`recover`](Self::recover).
    pub(crate) fn load_tail(&mut self) -> io::Result<()> {
        self.load_max_timestamp_from_index()?;
        let start = self
            .offset_index
            .last_entry()?
            .map_or(0, |e| e.position as u64);
        if start > self.size {
            return Err(corrupt(
                "offset index points past the end of the log".into(),
            ));
        }
        let mut scanner = HeaderScanner::new(&*self.log, self.size);
        let mut pos = start;
        let mut next = self.base_offset;
        let mut since_index = 0u64;
        while pos < self.size {
            let Some(h) = scanner.header_at(pos)? else {
                return Err(corrupt(format!("incomplete batch at position {pos}")));
            };
            let size = h.size_in_bytes() as u64;
            if pos + size > self.size {
                return Err(corrupt(format!(
                    "batch at position {pos} runs past the end"
                )));
            }
            if !self.offsets_in_range(&h, next) {
                return Err(corrupt(format!(
                    "batch at position {pos} has offsets outside this segment"
                )));
            }
            if h.max_timestamp > self.max_timestamp_so_far {
                self.max_timestamp_so_far = h.max_timestamp;
                self.offset_of_max_timestamp_so_far = h.last_offset();
            }
            next = h.next_offset();
            since_index += size;
            pos += size;
        }
        self.bytes_since_last_index_entry = since_index;
        self.next_offset = Some(next);
        Ok(())
    }

    /// Appends `buf` (whole batches described by `batches`, in order) at the end of the file and
    /// updates the indexes. `buf` must be non-empty.
    pub(crate) fn append(
        &mut self,
        buf: &[u8],
        batches: &[AppendedBatch],
        now_ms: i64,
    ) -> io::Result<()> {
        self.append_vectored(&[buf], batches, now_ms)
    }

    /// [`append`](Self::append) of the concatenation of `pieces` (one `pwritev`): `batches` describe
    /// the concatenated bytes.
    pub(crate) fn append_vectored(
        &mut self,
        pieces: &[&[u8]],
        batches: &[AppendedBatch],
        now_ms: i64,
    ) -> io::Result<()> {
        let mut position = self.size;
        self.log.write_all_vectored_at(pieces, position)?;
        if self.rolling_base_ms.is_none() {
            self.rolling_base_ms = Some(now_ms);
        }
        for b in batches {
            self.index_batch(b.last_offset, b.max_timestamp, position)?;
            position += b.size as u64;
            self.bytes_since_last_index_entry += b.size as u64;
            self.next_offset = Some(b.last_offset + 1);
        }
        self.size = position;
        self.dirty = true;
        Ok(())
    }

    fn index_batch(
        &mut self,
        last_offset: i64,
        max_timestamp: i64,
        position: u64,
    ) -> io::Result<()> {
        if max_timestamp > self.max_timestamp_so_far {
            self.max_timestamp_so_far = max_timestamp;
            self.offset_of_max_timestamp_so_far = last_offset;
        }
        if self.bytes_since_last_index_entry > self.index_interval_bytes {
            self.offset_index.append(last_offset, position as u32)?;
            self.time_index.maybe_append(
                self.max_timestamp_so_far,
                self.offset_of_max_timestamp_so_far,
            )?;
            self.bytes_since_last_index_entry = 0;
        }
        Ok(())
    }

    /// Adds the final time-index entry holding the segment's max timestamp (Kafka's
    /// `onBecomeInactiveSegment`), called on roll and close.
    pub(crate) fn on_become_inactive(&mut self) -> io::Result<()> {
        if self.max_timestamp_so_far >= 0 {
            self.time_index.maybe_append(
                self.max_timestamp_so_far,
                self.offset_of_max_timestamp_so_far,
            )?;
        }
        Ok(())
    }

    /// Offset of the time-index entry with the largest timestamp <= `ts` (base offset if none).
    pub(crate) fn time_index_lookup(&mut self, ts: i64) -> io::Result<i64> {
        Ok(self.time_index.lookup(ts)?.offset)
    }

    /// Offsets of `h` are at or after `next` (the previous batch's end) and the last one is
    /// within base + i32::MAX. baseOffset is not covered by the CRC, so this is checked apart.
    fn offsets_in_range(&self, h: &RecordBatchHeader, next: i64) -> bool {
        let rel_last = h
            .base_offset
            .checked_add(h.last_offset_delta as i64)
            .and_then(|l| l.checked_sub(self.base_offset));
        h.base_offset >= next
            && h.last_offset_delta >= 0
            && rel_last.is_some_and(|r| (0..=i32::MAX as i64).contains(&r))
    }

    /// Finds the first batch whose last offset >= `target`, starting from the offset index.
    pub(crate) fn find_batch(&mut self, target: i64) -> io::Result<Option<LocatedBatch>> {
        let start = self.offset_index.lookup(target)?.position as u64;
        let mut scanner = HeaderScanner::new(&*self.log, self.size);
        let mut pos = start;
        while pos < self.size {
            let Some(h) = scanner.header_at(pos)? else {
                return Ok(None);
            };
            if h.last_offset() >= target {
                return Ok(Some(LocatedBatch {
                    position: pos,
                    header: h,
                }));
            }
            pos += h.size_in_bytes() as u64;
        }
        Ok(None)
    }

    /// Calls `f` with each batch header from position `from` (a batch boundary) on.
    pub(crate) fn for_each_header(
        &self,
        from: u64,
        mut f: impl FnMut(&LocatedBatch) -> io::Result<bool>,
    ) -> io::Result<()> {
        let mut scanner = HeaderScanner::new(&*self.log, self.size);
        let mut pos = from;
        while pos < self.size {
            let Some(h) = scanner.header_at(pos)? else {
                return Ok(());
            };
            if !f(&LocatedBatch {
                position: pos,
                header: h,
            })? {
                return Ok(());
            }
            pos += h.size_in_bytes() as u64;
        }
        Ok(())
    }

    /// Position of the first batch with last offset >= `offset` (for header iteration).
    pub(crate) fn position_of(&mut self, offset: i64) -> io::Result<Option<u64>> {
        Ok(self.find_batch(offset)?.map(|b| b.position))
    }

    /// Reads whole batches starting with the one containing `start_offset`: at most `max_bytes`
    /// (except the first batch when `min_one_batch`), only batches whose last offset <
    /// `max_offset_exclusive`. `None` when no batch in this segment ends at or after
    /// `start_offset` (the caller moves to the next segment).
    pub(crate) fn read(
        &mut self,
        start_offset: i64,
        max_bytes: usize,
        max_offset_exclusive: i64,
        min_one_batch: bool,
    ) -> io::Result<Option<(Records, u64, i64)>> {
        let Some(first) = self.find_batch(start_offset)? else {
            return Ok(None);
        };
        let mut scanner = HeaderScanner::new(&*self.log, self.size);
        let start = first.position;
        let mut end = start;
        let mut h = first.header;
        let mut jumped = false;
        loop {
            // Once the first batch is in, jump over whole batches with the offset index: the entry with
            // the largest position within the byte limit starts a batch, and every batch before it ends
            // below that entry's offset. Only the tail past it is scanned header by header.
            if !jumped && end > start {
                jumped = true;
                let limit = (start + max_bytes as u64).min(u32::MAX as u64) as u32;
                if let Some(e) = self.offset_index.lookup_by_position(limit)? {
                    let pos = u64::from(e.position);
                    if pos > end && pos < self.size && e.offset < max_offset_exclusive {
                        match scanner.header_at(pos)? {
                            Some(next) => {
                                end = pos;
                                h = next;
                            }
                            None => break,
                        }
                    }
                }
            }
            if h.last_offset() >= max_offset_exclusive {
                break;
            }
            let size = h.size_in_bytes() as u64;
            if end + size > self.size {
                break;
            }
            if (end - start + size) as usize > max_bytes && !(min_one_batch && end == start) {
                break;
            }
            end += size;
            match scanner.header_at(end)? {
                Some(next) => h = next,
                None => break,
            }
        }
        Ok(Some((
            self.log.slice(start, (end - start) as u32)?,
            start,
            first.header.base_offset,
        )))
    }

    /// Base offset of the batch starting at byte `position`, `None` at the end of the segment.
    pub(crate) fn batch_base_at(&self, position: u64) -> io::Result<Option<i64>> {
        let mut scanner = HeaderScanner::new(&*self.log, self.size);
        Ok(scanner.header_at(position)?.map(|h| h.base_offset))
    }

    /// Reads the bytes of the batch at `position` (whole batch) into memory.
    pub(crate) fn read_batch_bytes(&self, b: &LocatedBatch) -> io::Result<Vec<u8>> {
        let mut buf = vec![0u8; b.header.size_in_bytes()];
        self.log.read_exact_at(&mut buf, b.position)?;
        Ok(buf)
    }

    /// Crash recovery: validates every batch (header, size, CRC-32C, offsets increasing and
    /// within this segment's range), truncates at the first invalid one, rebuilds the indexes.
    /// `on_batch` sees each valid header. Returns the number of bytes truncated.
    pub(crate) fn recover(
        &mut self,
        mut on_batch: impl FnMut(&RecordBatchHeader),
    ) -> io::Result<u64> {
        self.offset_index.reset()?;
        self.time_index.reset()?;
        self.bytes_since_last_index_entry = 0;
        self.max_timestamp_so_far = -1;
        self.offset_of_max_timestamp_so_far = self.base_offset;
        let mut pos = 0u64;
        let mut next = self.base_offset;
        let mut hdr = [0u8; RECORD_BATCH_OVERHEAD];
        while pos + RECORD_BATCH_OVERHEAD as u64 <= self.size {
            self.log.read_exact_at(&mut hdr, pos)?;
            let Ok(h) = RecordBatchHeader::parse(&hdr) else {
                break;
            };
            let size = h.size_in_bytes() as u64;
            if pos + size > self.size || !self.offsets_in_range(&h, next) {
                break;
            }
            let mut buf = vec![0u8; size as usize];
            self.log.read_exact_at(&mut buf, pos)?;
            if crc32c::crc32c(&buf[21..]) != h.crc {
                break;
            }
            self.index_batch(h.last_offset(), h.max_timestamp, pos)?;
            self.bytes_since_last_index_entry += size;
            on_batch(&h);
            next = h.next_offset();
            pos += size;
        }
        let truncated = self.size - pos;
        if truncated > 0 {
            self.log.set_len(pos)?;
            self.size = pos;
        }
        self.next_offset = Some(next);
        self.dirty = true;
        Ok(truncated)
    }

    /// Removes every batch from the one containing `offset` on (Kafka's `truncateTo`) and the
    /// index entries for them. Returns the new next offset of this segment.
    pub(crate) fn truncate_to(&mut self, offset: i64) -> io::Result<i64> {
        let Some(b) = self.find_batch(offset)? else {
            // Nothing at or after `offset` here: the segment already ends below it.
            if self.next_offset.is_none() {
                self.load_tail()?;
            }
            return Ok(self.next_offset.unwrap_or(self.base_offset));
        };
        self.offset_index.truncate_to(b.header.base_offset)?;
        self.time_index.truncate_to(b.header.base_offset)?;
        self.txn_index
            .truncate_to(types::Offset(b.header.base_offset))?;
        self.log.set_len(b.position)?;
        self.size = b.position;
        self.max_timestamp_so_far = -1;
        self.offset_of_max_timestamp_so_far = self.base_offset;
        self.load_tail()?;
        self.dirty = true;
        Ok(self.next_offset.unwrap_or(self.base_offset))
    }

    /// Writes the `.log` file's bytes again over themselves, in 1 MiB chunks, and marks the segment
    /// dirty, so the next [`flush`](Self::flush) persists them: after a failed fsync the page cache may
    /// hold bytes that never reach the disk although later fsyncs succeed ("fsyncgate"); rewriting
    /// what was read back (and CRC-checked by recovery) makes them durable again.
    pub(crate) fn rewrite(&mut self) -> io::Result<()> {
        const CHUNK: u64 = 1 << 20;
        let mut pos = 0;
        while pos < self.size {
            let n = CHUNK.min(self.size - pos);
            let mut buf = vec![0u8; n as usize];
            let got = self.log.read_at(&mut buf, pos)?;
            if got == 0 {
                break;
            }
            self.log.write_all_at(&buf[..got], pos)?;
            pos += got as u64;
        }
        self.dirty = true;
        Ok(())
    }

    /// fsyncs the log and both indexes.
    pub(crate) fn flush(&mut self) -> io::Result<()> {
        if self.dirty {
            self.log.sync_data()?;
            self.dirty = false;
        }
        self.offset_index.flush()?;
        self.time_index.flush()?;
        self.txn_index.flush()
    }

    /// Moves this segment's unsynced files into `job` (to be fsynced without the log lock).
    pub(crate) fn take_flush_targets(
        &mut self,
        files: &mut Vec<FileRef>,
        paths: &mut Vec<PathBuf>,
    ) {
        if std::mem::take(&mut self.dirty) {
            files.push(self.log.clone());
        }
        paths.extend(self.offset_index.take_dirty_path());
        paths.extend(self.time_index.take_dirty_path());
        paths.extend(self.txn_index.take_dirty_path());
    }

    /// Deletes the segment's files.
    pub(crate) fn delete_files(self, dir: &Path) -> io::Result<()> {
        for suffix in ["log", "index", "timeindex", "txnindex"] {
            match self
                .fs
                .remove_file(&dir.join(offset_file_name(self.base_offset, suffix)))
            {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// File modification time in ms (fallback for retention when no timestamp is known).
    pub(crate) fn last_modified_ms(&self) -> i64 {
        self.log.modified_ms().unwrap_or(0)
    }
}

/// Reads batch headers through a window buffer, so a run of small batches costs one `pread` per
/// window rather than one per batch.
pub(crate) struct HeaderScanner<'a> {
    file: &'a dyn StorageFile,
    file_size: u64,
    window: Vec<u8>,
    window_start: u64,
}

const SCAN_WINDOW: usize = 16 * 1024;

impl<'a> HeaderScanner<'a> {
    pub(crate) fn new(file: &'a dyn StorageFile, file_size: u64) -> Self {
        HeaderScanner {
            file,
            file_size,
            window: Vec::new(),
            window_start: 0,
        }
    }

    /// The header of the batch at `pos`; `None` when fewer than 61 bytes remain.
    /// Errors (InvalidData) when the bytes are not a v2 batch header.
    pub(crate) fn header_at(&mut self, pos: u64) -> io::Result<Option<RecordBatchHeader>> {
        if pos + RECORD_BATCH_OVERHEAD as u64 > self.file_size {
            return Ok(None);
        }
        let in_window = pos >= self.window_start
            && pos + RECORD_BATCH_OVERHEAD as u64 <= self.window_start + self.window.len() as u64;
        if !in_window {
            let len = (SCAN_WINDOW as u64).min(self.file_size - pos) as usize;
            self.window.resize(len, 0);
            self.file.read_exact_at(&mut self.window, pos)?;
            self.window_start = pos;
        }
        let off = (pos - self.window_start) as usize;
        RecordBatchHeader::parse(&self.window[off..off + RECORD_BATCH_OVERHEAD])
            .map(Some)
            .map_err(|e: RecordError| corrupt(format!("bad batch header at position {pos}: {e}")))
    }
}
