//! The health of a data directory (Kafka's `LogDirFailureChannel`, KIP-112): each of `log.dirs` is a
//! failure domain of its own.
//!
//! Rule: the first write or fsync failure of any [`crate::Log`] of a directory (ENOSPC, EIO, EROFS, ...)
//! marks that directory offline and calls the listener the broker installed; the broker then takes
//! every log of the directory offline ([`crate::LogManager::take_dir_offline`]), reports the dir to the
//! controller, and probes it ([`probe_dir`]) until a probe succeeds, when
//! [`crate::LogManager::try_recover_dir`] reopens every log of it with recovery and marks it online.
//! The broker's other directories go on meanwhile.

use crate::vfs::Fs;
use std::io;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;

/// Name of the file [`probe_dir`] writes, fsyncs and deletes.
pub const DIR_PROBE_FILE: &str = ".runnel-dir-probe";

/// Bytes [`probe_dir`] writes: one page, so a full file system refuses it.
const PROBE_BYTES: usize = 4096;

type Listener = Box<dyn Fn(&str) + Send + Sync>;

/// Online/offline state of one data directory, shared by its [`crate::LogManager`] and every log in it.
#[derive(Default)]
pub struct LogDirHealth {
    offline: Mutex<Option<String>>,
    /// The directory of the log whose write failed first (probed too: it may sit on its own mount).
    failed_path: Mutex<Option<PathBuf>>,
    listener: Mutex<Option<Listener>>,
}

impl std::fmt::Debug for LogDirHealth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogDirHealth")
            .field("offline", &*self.offline.lock())
            .finish()
    }
}

impl LogDirHealth {
    /// True while the directory is offline (a write failed and no probe has succeeded since).
    pub fn is_offline(&self) -> bool {
        self.offline.lock().is_some()
    }

    /// Why the directory went offline (the first failure), if it is offline.
    pub fn offline_reason(&self) -> Option<String> {
        self.offline.lock().clone()
    }

    /// Installs the function called (with the reason) each time the directory goes offline. It runs on
    /// the failing writer's thread, under that log's lock: it must only signal (e.g. wake a task).
    pub fn set_listener(&self, f: impl Fn(&str) + Send + Sync + 'static) {
        *self.listener.lock() = Some(Box::new(f));
    }

    /// The directory of the log whose write failure took the data dir offline, if offline.
    pub fn failed_path(&self) -> Option<PathBuf> {
        self.failed_path.lock().clone()
    }

    /// Marks the directory offline after a failure in `path`; the listener is called on the online →
    /// offline transition only.
    pub(crate) fn mark_offline(&self, reason: &str, path: &Path) {
        {
            let mut offline = self.offline.lock();
            if offline.is_some() {
                return;
            }
            *offline = Some(reason.to_string());
            *self.failed_path.lock() = Some(path.to_path_buf());
        }
        tracing::error!(reason, "log directory is offline");
        if let Some(f) = &*self.listener.lock() {
            f(reason);
        }
    }

    /// Marks the directory online again (after a successful probe and recovery).
    pub(crate) fn mark_online(&self) {
        *self.offline.lock() = None;
        *self.failed_path.lock() = None;
    }
}

/// Checks that `dir` takes writes again: creates [`DIR_PROBE_FILE`], writes one page, fsyncs it, deletes
/// it and fsyncs the directory. Errors: the first I/O error (ENOSPC while the file system is full).
pub fn probe_dir(fs: &Fs, dir: &Path) -> io::Result<()> {
    let path = dir.join(DIR_PROBE_FILE);
    let result = (|| {
        let f = fs.create(&path)?;
        f.write_all_at(&[0u8; PROBE_BYTES], 0)?;
        f.sync_all()
    })();
    let removed = fs.remove_file(&path);
    result?;
    removed?;
    fs.sync_dir(dir)
}
