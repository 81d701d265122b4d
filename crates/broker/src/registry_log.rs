//! The append-only change log of the standalone topic registry ([`crate::metadata::MetadataStore`]): one
//! entry per change, so a change costs O(its size) on disk instead of a rewrite of the whole registry.
//!
//! On-disk format (file `runnel-metadata.log` next to the `runnel-metadata.json` snapshot): a sequence of
//! entries `[len: u32 BE][crc32c(payload): u32 BE][payload: len bytes]`, the payload being opaque here (the
//! store writes one JSON change per entry). Each append is written and `fdatasync`ed before it returns;
//! the file's creation is made durable with an fsync of the directory.
//!
//! Recovery rule: at open the entries are read from the start up to the first one that is incomplete, fails
//! its CRC or claims more than [`MAX_ENTRY`] bytes; the file is cut there (a torn tail from a crash during
//! an append: since every append is synced before the change is acknowledged, only the last entry can be
//! torn) and the valid prefix is returned. The same layout and rule as the controller's Raft log segments.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// Largest payload accepted at open (bytes); a longer claimed length is treated as a torn tail.
pub const MAX_ENTRY: usize = 64 << 20;

/// Length prefix plus CRC (bytes).
const HEADER: usize = 8;

/// An open registry change log, positioned at its end.
#[derive(Debug)]
pub struct RegistryLog {
    path: PathBuf,
    file: File,
    len: u64,
    /// A failed append could not be cut back: appending more would put entries after garbage.
    broken: bool,
}

impl RegistryLog {
    /// Opens (creating if needed) the log at `path`, cuts a torn tail and returns the log with the payloads
    /// of its valid entries, oldest first. Errors: I/O.
    pub fn open(path: &Path) -> io::Result<(RegistryLog, Vec<Vec<u8>>)> {
        let existed = path.exists();
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)?;
        if !existed {
            sync_parent(path)?;
        }
        let mut data = Vec::new();
        file.read_to_end(&mut data)?;
        let (entries, valid) = decode(&data);
        if valid < data.len() {
            tracing::warn!(path = %path.display(), valid, len = data.len(), "registry log: cutting a torn tail");
            file.set_len(valid as u64)?;
            file.sync_all()?;
        }
        let log = RegistryLog {
            path: path.to_path_buf(),
            file,
            len: valid as u64,
            broken: false,
        };
        Ok((log, entries))
    }

    /// Appends one entry and syncs it. Errors: I/O — a partly written entry is cut off again so a later
    /// append never lands behind it; if even that fails, every later append fails too.
    pub fn append(&mut self, payload: &[u8]) -> io::Result<()> {
        if self.broken {
            return Err(io::Error::other(
                "registry log unusable after a failed append",
            ));
        }
        let mut entry = Vec::with_capacity(HEADER + payload.len());
        entry.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        entry.extend_from_slice(&crc32c::crc32c(payload).to_be_bytes());
        entry.extend_from_slice(payload);
        let written = self
            .file
            .write_all(&entry)
            .and_then(|()| self.file.sync_data());
        if let Err(e) = written {
            self.broken = self.file.set_len(self.len).is_err();
            return Err(e);
        }
        self.len += entry.len() as u64;
        Ok(())
    }

    /// Empties the log (after its changes went into a snapshot) and syncs.
    pub fn clear(&mut self) -> io::Result<()> {
        self.file.set_len(0)?;
        self.file.sync_all()?;
        self.len = 0;
        Ok(())
    }

    /// Current size (bytes).
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True when the log holds no entry.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The payloads of the valid entries at the start of `data`, and the length of that valid prefix.
fn decode(data: &[u8]) -> (Vec<Vec<u8>>, usize) {
    let mut entries = Vec::new();
    let mut pos = 0;
    while data.len() - pos >= HEADER {
        let len = u32::from_be_bytes(data[pos..pos + 4].try_into().expect("4 bytes")) as usize;
        let crc = u32::from_be_bytes(data[pos + 4..pos + 8].try_into().expect("4 bytes"));
        if len > MAX_ENTRY || data.len() - pos - HEADER < len {
            break;
        }
        let payload = &data[pos + HEADER..pos + HEADER + len];
        if crc32c::crc32c(payload) != crc {
            break;
        }
        entries.push(payload.to_vec());
        pos += HEADER + len;
    }
    (entries, pos)
}

fn sync_parent(path: &Path) -> io::Result<()> {
    match path.parent() {
        Some(dir) => fs::File::open(dir)?.sync_all(),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_a_torn_tail_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let (mut log, entries) = RegistryLog::open(&path).unwrap();
        assert!(entries.is_empty() && log.is_empty());
        log.append(b"one").unwrap();
        log.append(b"").unwrap();
        log.append(b"three").unwrap();
        drop(log);
        let (log, entries) = RegistryLog::open(&path).unwrap();
        assert_eq!(entries, vec![b"one".to_vec(), vec![], b"three".to_vec()]);
        assert_eq!(log.len(), 3 * 8 + 8);
        drop(log);
        // A flipped payload byte fails the CRC: that entry and everything after it are cut.
        let mut bytes = fs::read(&path).unwrap();
        bytes[8] ^= 1;
        fs::write(&path, &bytes).unwrap();
        let (_, entries) = RegistryLog::open(&path).unwrap();
        assert!(entries.is_empty());
        assert_eq!(fs::metadata(&path).unwrap().len(), 0);
    }
}
