//! The file-system seam of the storage crate: every file and directory operation storage does goes
//! through a [`FileSystem`] and the [`StorageFile`]s it opens, so a deterministic simulation can put
//! an in-memory disk ([`SimFs`]) under the real storage code; production uses [`RealFs`] (`std::fs`,
//! unchanged behaviour and cost: one virtual call per file operation, never per byte).

mod sim;
mod sim_rng;

pub use sim::SimFs;
pub use sim_rng::{env_u64, sim_seeds, SimRng};

use protocol::record::{FileSlice, Records};
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

/// An open file, shared (`Arc`) between a segment, flush jobs, the cleaner and read results.
pub type FileRef = Arc<dyn StorageFile>;

/// The file system a [`crate::Log`] or [`crate::LogManager`] works on.
pub type Fs = Arc<dyn FileSystem>;

/// The production file system.
pub fn real_fs() -> Fs {
    Arc::new(RealFs)
}

/// A directory entry from [`FileSystem::read_dir`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// The entry's name (not the full path).
    pub name: String,
    /// True for a directory.
    pub is_dir: bool,
}

/// The file-system operations storage needs (and nothing more), with POSIX meaning.
///
/// Durability contract (what storage must do, and what [`SimFs`] enforces): data written to a file
/// is durable only after [`StorageFile::sync_data`]/[`sync_all`](StorageFile::sync_all) on it; a
/// create, rename or removal of a directory entry is durable only after [`sync_dir`](Self::sync_dir)
/// of the directory holding it. A crash may keep any prefix of a file's unsynced writes (a torn
/// write keeps part of one) and drops undurable directory changes.
///
/// What a simulation may model through it: lost unsynced writes and directory entries on a crash,
/// torn writes, ENOSPC, EIO from fsync, deterministic (seeded) choices. What it cannot model: memory
/// maps (storage keeps indexes in memory and uses `pwrite`, so none are needed), reordering of
/// writes inside one file beyond "a prefix survives", bit rot of synced data, file-descriptor
/// limits, and the zero-copy `sendfile` path (a non-real file's slice is copied into memory).
pub trait FileSystem: Send + Sync + fmt::Debug {
    /// Opens `path` for reading and writing; creates it empty when missing and `create`
    /// (NotFound otherwise). Never truncates.
    fn open(&self, path: &Path, create: bool) -> io::Result<FileRef>;
    /// Creates `path` empty (truncating an existing file), for writing.
    fn create(&self, path: &Path) -> io::Result<FileRef>;
    /// The whole contents of `path`.
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// Length in bytes of the file at `path` (NotFound when missing).
    fn len(&self, path: &Path) -> io::Result<u64>;
    /// True when `path` names a file or directory.
    fn exists(&self, path: &Path) -> bool;
    /// The entries of directory `dir`, in no particular order.
    fn read_dir(&self, dir: &Path) -> io::Result<Vec<DirEntry>>;
    /// Creates `dir` and its missing parents.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// Renames `from` to `to`, replacing a file at `to`.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Removes the file at `path`.
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// Removes the directory `dir` and everything under it.
    fn remove_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// fsyncs directory `dir`: its entries' creates, renames and removals become durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
}

/// An open file (positioned I/O only; there is no cursor).
pub trait StorageFile: Send + Sync + fmt::Debug {
    /// Reads up to `buf.len()` bytes at `pos`; 0 at or past the end.
    fn read_at(&self, buf: &mut [u8], pos: u64) -> io::Result<usize>;
    /// Writes all of `buf` at `pos` (extending the file as needed).
    fn write_all_at(&self, buf: &[u8], pos: u64) -> io::Result<()>;
    /// Writes `bufs` one after another from `pos`, as if concatenated (a real file: `pwritev`, so a batch
    /// whose edited header lives apart from its body is written without first being copied together).
    /// On an error, a prefix of the bytes may have been written, as with [`write_all_at`](Self::write_all_at).
    fn write_all_vectored_at(&self, bufs: &[&[u8]], mut pos: u64) -> io::Result<()> {
        for b in bufs {
            self.write_all_at(b, pos)?;
            pos += b.len() as u64;
        }
        Ok(())
    }
    /// Truncates or extends (with zeros) the file to `len` bytes.
    fn set_len(&self, len: u64) -> io::Result<()>;
    /// Current length in bytes.
    fn len(&self) -> io::Result<u64>;
    /// True when the file holds no bytes.
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }
    /// fsyncs the data (`fdatasync`).
    fn sync_data(&self) -> io::Result<()>;
    /// fsyncs data and metadata (`fsync`).
    fn sync_all(&self) -> io::Result<()>;
    /// Last modification time, ms since the epoch.
    fn modified_ms(&self) -> io::Result<i64>;
    /// `len` bytes at `position` as a fetch result: a zero-copy [`FileSlice`] of the real file
    /// (sent with `sendfile`), or a copy in memory for a file that has no descriptor.
    fn slice(&self, position: u64, len: u32) -> io::Result<Records>;

    /// Reads exactly `buf.len()` bytes at `pos` (UnexpectedEof when the file is shorter).
    fn read_exact_at(&self, mut buf: &mut [u8], mut pos: u64) -> io::Result<()> {
        while !buf.is_empty() {
            match self.read_at(buf, pos)? {
                0 => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "failed to fill whole buffer",
                    ))
                }
                n => {
                    buf = &mut buf[n..];
                    pos += n as u64;
                }
            }
        }
        Ok(())
    }
}

/// `std::fs`: what production uses.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealFs;

/// A real file; its descriptor goes to `sendfile` through [`StorageFile::slice`].
#[derive(Debug)]
pub struct RealFile(Arc<File>);

impl FileSystem for RealFs {
    fn open(&self, path: &Path, create: bool) -> io::Result<FileRef> {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .truncate(false)
            .open(path)?;
        Ok(Arc::new(RealFile(Arc::new(f))))
    }

    fn create(&self, path: &Path) -> io::Result<FileRef> {
        Ok(Arc::new(RealFile(Arc::new(File::create(path)?))))
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }

    fn len(&self, path: &Path) -> io::Result<u64> {
        Ok(std::fs::metadata(path)?.len())
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn read_dir(&self, dir: &Path) -> io::Result<Vec<DirEntry>> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            out.push(DirEntry {
                name: entry.file_name().to_string_lossy().into_owned(),
                is_dir: entry.file_type()?.is_dir(),
            });
        }
        Ok(out)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn remove_dir_all(&self, dir: &Path) -> io::Result<()> {
        std::fs::remove_dir_all(dir)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }
}

impl StorageFile for RealFile {
    fn read_at(&self, buf: &mut [u8], pos: u64) -> io::Result<usize> {
        self.0.read_at(buf, pos)
    }

    fn read_exact_at(&self, buf: &mut [u8], pos: u64) -> io::Result<()> {
        self.0.read_exact_at(buf, pos)
    }

    fn write_all_at(&self, buf: &[u8], pos: u64) -> io::Result<()> {
        self.0.write_all_at(buf, pos)
    }

    fn write_all_vectored_at(&self, bufs: &[&[u8]], pos: u64) -> io::Result<()> {
        if let [one] = bufs {
            return self.0.write_all_at(one, pos);
        }
        pwritev_all(&self.0, bufs, pos)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.0.metadata()?.len())
    }

    fn sync_data(&self) -> io::Result<()> {
        self.0.sync_data()
    }

    fn sync_all(&self) -> io::Result<()> {
        self.0.sync_all()
    }

    fn modified_ms(&self) -> io::Result<i64> {
        let t = self.0.metadata()?.modified()?;
        Ok(t.duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64))
    }

    fn slice(&self, position: u64, len: u32) -> io::Result<Records> {
        Ok(Records::File(FileSlice {
            file: self.0.clone(),
            position,
            len,
        }))
    }
}

/// `pwritev` until every byte of `bufs` is written from `pos` (short writes resumed, EINTR retried; at most
/// `IOV_MAX` slices per call).
fn pwritev_all(file: &File, bufs: &[&[u8]], mut pos: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    const IOV_MAX: usize = 1024;
    let mut bufs: Vec<&[u8]> = bufs.iter().copied().filter(|b| !b.is_empty()).collect();
    let mut first = 0;
    while first < bufs.len() {
        let iov: Vec<libc::iovec> = bufs[first..bufs.len().min(first + IOV_MAX)]
            .iter()
            .map(|b| libc::iovec {
                iov_base: b.as_ptr() as *mut libc::c_void,
                iov_len: b.len(),
            })
            .collect();
        // SAFETY: every iovec points at a live slice of `bufs` for the call; the descriptor is open.
        let n = unsafe {
            libc::pwritev(
                file.as_raw_fd(),
                iov.as_ptr(),
                iov.len() as libc::c_int,
                pos as libc::off_t,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        let mut n = n as usize;
        pos += n as u64;
        while n > 0 {
            let len = bufs[first].len();
            if n >= len {
                n -= len;
                first += 1;
            } else {
                bufs[first] = &bufs[first][n..];
                n = 0;
            }
        }
    }
    Ok(())
}
