//! [`SimFs`]: an in-memory, deterministic [`FileSystem`] that loses what POSIX lets a crash lose.

use super::{DirEntry, FileRef, FileSystem, Fs, StorageFile};
use bytes::Bytes;
use parking_lot::Mutex;
use protocol::record::Records;
use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::{Component, Path};
use std::sync::Arc;

/// An in-memory file system for deterministic simulation and crash tests.
///
/// Model: files are inodes holding their durable bytes plus the writes made since the last fsync
/// (`write_all_at`/`set_len` operations, in order); directories hold a live and a durable entry
/// table (name → file or directory). [`crash`](Self::crash) keeps, per file, a seeded random prefix
/// of its unsynced operations, the last one possibly cut short (a torn write), and resets every
/// directory to its durable entries (creates, renames and removals not followed by a
/// [`FileSystem::sync_dir`] of their directory are undone). Handles opened before a crash fail
/// afterwards. Faults: [`set_disk_full`](Self::set_disk_full) makes writes fail with ENOSPC (after
/// writing a seeded random prefix), [`fail_next_sync`](Self::fail_next_sync) makes the next fsync
/// fail with EIO (the writes stay unsynced), [`fail_next_sync_dropping`](Self::fail_next_sync_dropping)
/// too but as Linux does ("fsyncgate"): the file's unsynced writes are dropped from the durable state
/// while reads still see them, and a later fsync succeeds without persisting them. Every random
/// choice comes from the seed, so a run is reproduced by its seed. Cheap to clone (shared state).
#[derive(Debug, Clone)]
pub struct SimFs {
    state: Arc<Mutex<State>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Node {
    File(u64),
    Dir(u64),
}

#[derive(Debug)]
enum Op {
    Write(u64, Vec<u8>),
    SetLen(u64),
}

#[derive(Debug, Default)]
struct Inode {
    durable: Vec<u8>,
    current: Vec<u8>,
    pending: Vec<Op>,
    mtime_ms: i64,
}

#[derive(Debug, Default)]
struct Dir {
    live: BTreeMap<String, Node>,
    durable: BTreeMap<String, Node>,
}

#[derive(Debug)]
struct State {
    rng: super::SimRng,
    generation: u64,
    next_id: u64,
    files: HashMap<u64, Inode>,
    dirs: HashMap<u64, Dir>,
    disk_full: bool,
    fail_next_sync: bool,
    /// The failing fsync drops the file's unsynced writes (they never become durable).
    drop_on_failed_sync: bool,
    /// Only an fsync of a path ending so fails (empty: any).
    failing_sync_suffix: String,
    now_ms: i64,
}

const ROOT: u64 = 0;

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{}: no such file or directory", path.display()),
    )
}

fn enospc() -> io::Error {
    io::Error::from_raw_os_error(libc::ENOSPC)
}

fn eio(what: &str) -> io::Error {
    io::Error::new(
        io::Error::from_raw_os_error(libc::EIO).kind(),
        format!("simulated EIO: {what}"),
    )
}

fn apply(data: &mut Vec<u8>, op: &Op) {
    match op {
        Op::Write(pos, buf) => {
            let end = *pos as usize + buf.len();
            if data.len() < end {
                data.resize(end, 0);
            }
            data[*pos as usize..end].copy_from_slice(buf);
        }
        Op::SetLen(len) => data.resize(*len as usize, 0),
    }
}

impl State {
    fn next_u64(&mut self) -> u64 {
        self.rng.next()
    }

    /// Uniform in `0..=n`.
    fn upto(&mut self, n: usize) -> usize {
        (self.next_u64() % (n as u64 + 1)) as usize
    }

    fn new_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    fn lookup(&self, path: &Path) -> Option<Node> {
        let mut node = Node::Dir(ROOT);
        for c in path.components() {
            match c {
                Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
                Component::ParentDir => return None,
                Component::Normal(name) => {
                    let Node::Dir(d) = node else { return None };
                    node = *self.dirs[&d].live.get(name.to_str()?)?;
                }
            }
        }
        Some(node)
    }

    /// The directory holding `path` and the entry name.
    fn parent(&self, path: &Path) -> io::Result<(u64, String)> {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| not_found(path))?
            .to_string();
        match path.parent().map(|p| self.lookup(p)) {
            Some(Some(Node::Dir(d))) => Ok((d, name)),
            _ => Err(not_found(path)),
        }
    }

    fn file(&self, path: &Path) -> io::Result<u64> {
        match self.lookup(path) {
            Some(Node::File(id)) => Ok(id),
            Some(Node::Dir(_)) => Err(io::Error::other(format!(
                "{}: is a directory",
                path.display()
            ))),
            None => Err(not_found(path)),
        }
    }

    fn push(&mut self, id: u64, op: Op) {
        let now = self.now_ms;
        let f = self.files.get_mut(&id).expect("inode");
        apply(&mut f.current, &op);
        f.pending.push(op);
        f.mtime_ms = now;
    }

    /// The injected fsync failure, if any; with `file`, a dropping failure forgets its unsynced
    /// writes (the page cache keeps showing them, the disk never gets them).
    fn sync_fault(&mut self, what: &str, path: &Path, file: Option<u64>) -> io::Result<()> {
        let matches = path
            .to_str()
            .is_some_and(|p| p.ends_with(self.failing_sync_suffix.as_str()));
        if matches && std::mem::take(&mut self.fail_next_sync) {
            let drop = std::mem::take(&mut self.drop_on_failed_sync);
            if let (true, Some(id)) = (drop, file) {
                self.files.get_mut(&id).expect("inode").pending.clear();
            }
            return Err(eio(what));
        }
        Ok(())
    }

    fn crash(&mut self) {
        self.generation += 1;
        for d in self.dirs.values_mut() {
            d.live = d.durable.clone();
        }
        let mut ids: Vec<u64> = self.files.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            let n = self.files[&id].pending.len();
            if n == 0 {
                // Nothing unsynced, yet the cache may show writes a failed fsync dropped.
                let f = self.files.get_mut(&id).expect("inode");
                f.current = f.durable.clone();
                continue;
            }
            let keep = self.upto(n);
            let torn = if keep < n {
                match &self.files[&id].pending[keep] {
                    Op::Write(_, b) if !b.is_empty() => Some(self.upto(b.len() - 1)),
                    _ => None,
                }
            } else {
                None
            };
            let f = self.files.get_mut(&id).expect("inode");
            let ops = std::mem::take(&mut f.pending);
            for op in &ops[..keep] {
                apply(&mut f.durable, op);
            }
            if let (Some(cut), Some(Op::Write(pos, b))) = (torn, ops.get(keep)) {
                apply(&mut f.durable, &Op::Write(*pos, b[..cut].to_vec()));
            }
            f.current = f.durable.clone();
        }
    }
}

impl SimFs {
    /// An empty file system (only `/`, durable) whose random choices come from `seed`.
    pub fn new(seed: u64) -> Self {
        let mut dirs = HashMap::new();
        dirs.insert(ROOT, Dir::default());
        SimFs {
            state: Arc::new(Mutex::new(State {
                rng: super::SimRng(seed),
                generation: 0,
                next_id: ROOT,
                files: HashMap::new(),
                dirs,
                disk_full: false,
                fail_next_sync: false,
                drop_on_failed_sync: false,
                failing_sync_suffix: String::new(),
                now_ms: 0,
            })),
        }
    }

    /// This file system as the [`Fs`] storage takes.
    pub fn fs(&self) -> Fs {
        Arc::new(self.clone())
    }

    /// Simulated power loss: every file keeps its synced bytes plus a seeded random prefix of its
    /// unsynced writes (the last kept one possibly torn); every directory goes back to its synced
    /// entries. Handles opened before fail from now on (reopen after a crash).
    pub fn crash(&self) {
        self.state.lock().crash();
    }

    /// While set, every write and every growing `set_len` fails with ENOSPC (a write first stores
    /// a seeded random prefix of its bytes, as a short write would).
    pub fn set_disk_full(&self, full: bool) {
        self.state.lock().disk_full = full;
    }

    /// The next fsync (file or directory) fails with EIO; its writes stay unsynced.
    pub fn fail_next_sync(&self) {
        self.state.lock().fail_next_sync = true;
    }

    /// The next fsync fails with EIO as on Linux after a writeback error ("fsyncgate"): a failing file
    /// fsync drops that file's unsynced writes — reads still return them, a later fsync succeeds,
    /// yet a crash loses them (leaving a hole if later writes were synced). Only what was synced
    /// before the failure may be trusted.
    pub fn fail_next_sync_dropping(&self) {
        self.fail_next_sync_dropping_on("");
    }

    /// [`fail_next_sync_dropping`](Self::fail_next_sync_dropping) for the next fsync of a path ending
    /// with `suffix` (e.g. `.log`: a segment's data, not a checkpoint).
    pub fn fail_next_sync_dropping_on(&self, suffix: &str) {
        let mut st = self.state.lock();
        st.fail_next_sync = true;
        st.drop_on_failed_sync = true;
        st.failing_sync_suffix = suffix.to_string();
    }

    /// Whether an injected fsync failure is still waiting for an fsync.
    pub fn sync_failure_pending(&self) -> bool {
        self.state.lock().fail_next_sync
    }

    /// Ends every injected fault (disk full, pending fsync failure).
    pub fn clear_faults(&self) {
        let mut st = self.state.lock();
        st.disk_full = false;
        st.fail_next_sync = false;
        st.drop_on_failed_sync = false;
        st.failing_sync_suffix.clear();
    }

    /// The time stamped on written files (ms since the epoch), for retention by file age.
    pub fn set_now_ms(&self, now_ms: i64) {
        self.state.lock().now_ms = now_ms;
    }

    /// Bytes written but not yet fsynced, over all files (a crash may lose them).
    pub fn unsynced_ops(&self) -> usize {
        self.state
            .lock()
            .files
            .values()
            .map(|f| f.pending.len())
            .sum()
    }

    fn handle(&self, st: &State, id: u64, path: &Path) -> FileRef {
        Arc::new(SimFile {
            state: self.state.clone(),
            id,
            generation: st.generation,
            path: path.to_path_buf(),
        })
    }
}

impl FileSystem for SimFs {
    fn open(&self, path: &Path, create: bool) -> io::Result<FileRef> {
        let mut st = self.state.lock();
        if let Some(Node::File(id)) = st.lookup(path) {
            return Ok(self.handle(&st, id, path));
        }
        if !create || st.lookup(path).is_some() {
            return st.file(path).map(|_| unreachable!("checked"));
        }
        let (dir, name) = st.parent(path)?;
        let id = st.new_id();
        st.files.insert(id, Inode::default());
        st.dirs
            .get_mut(&dir)
            .expect("dir")
            .live
            .insert(name, Node::File(id));
        Ok(self.handle(&st, id, path))
    }

    fn create(&self, path: &Path) -> io::Result<FileRef> {
        let f = self.open(path, true)?;
        f.set_len(0)?;
        Ok(f)
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        let st = self.state.lock();
        let id = st.file(path)?;
        Ok(st.files[&id].current.clone())
    }

    fn len(&self, path: &Path) -> io::Result<u64> {
        let st = self.state.lock();
        let id = st.file(path)?;
        Ok(st.files[&id].current.len() as u64)
    }

    fn exists(&self, path: &Path) -> bool {
        self.state.lock().lookup(path).is_some()
    }

    fn read_dir(&self, dir: &Path) -> io::Result<Vec<DirEntry>> {
        let st = self.state.lock();
        let Some(Node::Dir(d)) = st.lookup(dir) else {
            return Err(not_found(dir));
        };
        Ok(st.dirs[&d]
            .live
            .iter()
            .map(|(name, n)| DirEntry {
                name: name.clone(),
                is_dir: matches!(n, Node::Dir(_)),
            })
            .collect())
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut st = self.state.lock();
        let mut cur = ROOT;
        for c in dir.components() {
            let Component::Normal(name) = c else { continue };
            let name = name.to_str().ok_or_else(|| not_found(dir))?.to_string();
            cur = match st.dirs[&cur].live.get(&name) {
                Some(Node::Dir(d)) => *d,
                Some(Node::File(_)) => {
                    return Err(io::Error::other(format!(
                        "{}: not a directory",
                        dir.display()
                    )))
                }
                None => {
                    let id = st.new_id();
                    st.dirs.insert(id, Dir::default());
                    st.dirs
                        .get_mut(&cur)
                        .expect("dir")
                        .live
                        .insert(name, Node::Dir(id));
                    id
                }
            };
        }
        Ok(())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut st = self.state.lock();
        let (fd, fname) = st.parent(from)?;
        let (td, tname) = st.parent(to)?;
        let node = st
            .dirs
            .get_mut(&fd)
            .expect("dir")
            .live
            .remove(&fname)
            .ok_or_else(|| not_found(from))?;
        st.dirs.get_mut(&td).expect("dir").live.insert(tname, node);
        Ok(())
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let mut st = self.state.lock();
        st.file(path)?;
        let (d, name) = st.parent(path)?;
        st.dirs.get_mut(&d).expect("dir").live.remove(&name);
        Ok(())
    }

    fn remove_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut st = self.state.lock();
        let Some(Node::Dir(_)) = st.lookup(dir) else {
            return Err(not_found(dir));
        };
        let (d, name) = st.parent(dir)?;
        st.dirs.get_mut(&d).expect("dir").live.remove(&name);
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut st = self.state.lock();
        let Some(Node::Dir(d)) = st.lookup(dir) else {
            return Err(not_found(dir));
        };
        st.sync_fault("directory fsync", dir, None)?;
        let e = st.dirs.get_mut(&d).expect("dir");
        e.durable = e.live.clone();
        Ok(())
    }
}

/// A handle on a [`SimFs`] file.
#[derive(Debug)]
struct SimFile {
    state: Arc<Mutex<State>>,
    id: u64,
    generation: u64,
    /// The path it was opened by (for faults aimed at some files).
    path: std::path::PathBuf,
}

impl SimFile {
    /// The state, checked that this handle survived no crash.
    fn live(&self) -> io::Result<parking_lot::MutexGuard<'_, State>> {
        let st = self.state.lock();
        if st.generation != self.generation {
            return Err(eio("handle opened before a simulated crash"));
        }
        Ok(st)
    }
}

impl StorageFile for SimFile {
    fn read_at(&self, buf: &mut [u8], pos: u64) -> io::Result<usize> {
        let st = self.live()?;
        let data = &st.files[&self.id].current;
        let start = (pos as usize).min(data.len());
        let n = buf.len().min(data.len() - start);
        buf[..n].copy_from_slice(&data[start..start + n]);
        Ok(n)
    }

    fn write_all_at(&self, buf: &[u8], pos: u64) -> io::Result<()> {
        let mut st = self.live()?;
        if st.disk_full {
            let short = st.upto(buf.len().saturating_sub(1));
            if short > 0 {
                st.push(self.id, Op::Write(pos, buf[..short].to_vec()));
            }
            return Err(enospc());
        }
        st.push(self.id, Op::Write(pos, buf.to_vec()));
        Ok(())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let mut st = self.live()?;
        if st.disk_full && len > st.files[&self.id].current.len() as u64 {
            return Err(enospc());
        }
        st.push(self.id, Op::SetLen(len));
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.live()?.files[&self.id].current.len() as u64)
    }

    fn sync_data(&self) -> io::Result<()> {
        let mut st = self.live()?;
        st.sync_fault("fsync", &self.path, Some(self.id))?;
        // The unsynced writes reach the disk (not the cached bytes: those of a dropping fsync failure
        // never do).
        let f = st.files.get_mut(&self.id).expect("inode");
        for op in std::mem::take(&mut f.pending) {
            apply(&mut f.durable, &op);
        }
        Ok(())
    }

    fn sync_all(&self) -> io::Result<()> {
        self.sync_data()
    }

    fn modified_ms(&self) -> io::Result<i64> {
        Ok(self.live()?.files[&self.id].mtime_ms)
    }

    fn slice(&self, position: u64, len: u32) -> io::Result<Records> {
        let mut buf = vec![0u8; len as usize];
        let n = self.read_at(&mut buf, position)?;
        buf.truncate(n);
        Ok(Records::Memory(Bytes::from(buf)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(seed: u64) -> (SimFs, FileRef) {
        let fs = SimFs::new(seed);
        fs.create_dir_all(Path::new("/d")).unwrap();
        fs.sync_dir(Path::new("/")).unwrap();
        let f = fs.open(Path::new("/d/f"), true).unwrap();
        fs.sync_dir(Path::new("/d")).unwrap();
        (fs, f)
    }

    #[test]
    fn synced_writes_survive_and_unsynced_ones_keep_a_prefix() {
        for seed in 0..100 {
            let (fs, f) = setup(seed);
            f.write_all_at(b"durable", 0).unwrap();
            f.sync_data().unwrap();
            f.write_all_at(b"-pending-more", 7).unwrap();
            fs.crash();
            let got = fs.read(Path::new("/d/f")).unwrap();
            let full = b"durable-pending-more";
            assert!(
                got.len() >= 7 && full.starts_with(&got),
                "seed {seed}: {got:?}"
            );
            assert!(f.read_at(&mut [0; 4], 0).is_err(), "stale handle works");
        }
    }

    #[test]
    fn directory_entries_need_a_directory_fsync() {
        let (fs, f) = setup(1);
        f.sync_data().unwrap();
        fs.open(Path::new("/d/new"), true)
            .unwrap()
            .sync_data()
            .unwrap();
        fs.rename(Path::new("/d/f"), Path::new("/d/g")).unwrap();
        fs.crash();
        assert!(fs.exists(Path::new("/d/f")));
        assert!(!fs.exists(Path::new("/d/g")) && !fs.exists(Path::new("/d/new")));
        fs.rename(Path::new("/d/f"), Path::new("/d/g")).unwrap();
        fs.sync_dir(Path::new("/d")).unwrap();
        fs.crash();
        assert!(fs.exists(Path::new("/d/g")) && !fs.exists(Path::new("/d/f")));
    }

    #[test]
    fn faults() {
        let (fs, f) = setup(3);
        fs.set_disk_full(true);
        let e = f.write_all_at(b"abc", 0).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOSPC));
        fs.set_disk_full(false);
        f.write_all_at(b"abc", 0).unwrap();
        fs.fail_next_sync();
        assert!(f.sync_data().is_err());
        assert!(fs.unsynced_ops() >= 1);
        f.sync_data().unwrap();
        assert_eq!(fs.unsynced_ops(), 0);
    }

    #[test]
    fn a_dropping_fsync_failure_loses_the_unsynced_writes_for_good() {
        let (fs, f) = setup(4);
        f.write_all_at(b"old", 0).unwrap();
        f.sync_data().unwrap();
        f.write_all_at(b"lost", 3).unwrap();
        fs.fail_next_sync_dropping();
        assert!(fs.sync_failure_pending());
        assert!(f.sync_data().is_err());
        assert_eq!(
            fs.read(Path::new("/d/f")).unwrap(),
            b"oldlost",
            "still cached"
        );
        f.write_all_at(b"new", 7).unwrap();
        f.sync_data().unwrap();
        fs.crash();
        assert_eq!(
            fs.read(Path::new("/d/f")).unwrap(),
            b"old\0\0\0\0new",
            "the dropped writes are a hole"
        );
    }

    #[test]
    fn same_seed_same_crash() {
        let run = |seed| {
            let (fs, f) = setup(seed);
            for i in 0..20u8 {
                f.write_all_at(&[i; 10], u64::from(i) * 10).unwrap();
            }
            fs.crash();
            fs.read(Path::new("/d/f")).unwrap()
        };
        assert_eq!(run(9), run(9));
    }
}
