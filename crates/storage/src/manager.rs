//! [`LogManager`]: all partition logs of the broker's data directories (`log.dirs`, JBOD, KIP-112).
//!
//! Each data directory has the same layout (see the crate docs): its partitions' `<topic>-<partition>`
//! directories, its own checkpoint files naming only its own partitions, and its own clean-shutdown
//! marker, as in Kafka. A partition lives in exactly one directory; a new one goes to the directory
//! [`choose_log_dir`] picks.

use crate::checkpoint::{
    read_partition_metadata, write_atomically, write_partition_metadata, OffsetCheckpointFile,
};
use crate::config::LogConfig;
use crate::error::StorageError;
use crate::future_log::{
    load_futures, parse_future_dir_name, FoundFuture, FutureLogs, LogMap, OpenContext,
};
use crate::log::Log;
use crate::log_dir::{probe_dir, LogDirHealth};
use crate::parallel::map_bounded;
use crate::vfs::{real_fs, Fs};
use parking_lot::{Mutex, RwLock};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
pub use types::TopicPartition;
use types::{Clock, Offset};

/// The directory of the metadata quorum's Raft log inside a data dir (Kafka's `__cluster_metadata-0`);
/// never opened as a partition.
pub const METADATA_LOG_DIR: &str = "__cluster_metadata-0";

/// Marker file written after a clean shutdown, removed at startup (Kafka's name).
pub const CLEAN_SHUTDOWN_FILE: &str = ".kafka_cleanshutdown";
const RECOVERY_POINT_CHECKPOINT: &str = "recovery-point-offset-checkpoint";
const LOG_START_CHECKPOINT: &str = "log-start-offset-checkpoint";
const REPLICATION_CHECKPOINT: &str = "replication-offset-checkpoint";

/// Kafka's legal topic names ([`types::is_legal_topic_name`]). Errors: `InvalidTopic` naming the name.
pub fn validate_topic_name(topic: &str) -> Result<(), StorageError> {
    if types::is_legal_topic_name(topic) {
        Ok(())
    } else {
        Err(StorageError::InvalidTopic(format!(
            "illegal topic name {topic:?}"
        )))
    }
}

/// What [`choose_log_dir`] knows of one data directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogDirLoad {
    /// Whether the directory takes writes (not offline after a failure, KIP-112).
    pub online: bool,
    /// Whether the operator cordoned it (KIP-1066 `cordoned.log.dirs`): it keeps its replicas but gets
    /// no new one.
    pub cordoned: bool,
    /// How many partition logs it holds.
    pub partitions: usize,
}

/// The data directory a new partition log goes to (Kafka's `LogManager.nextLogDirs`): the online,
/// un-cordoned directory holding the fewest partitions, the first in `log.dirs` order on a tie. `None`
/// when every directory is offline or cordoned.
pub fn choose_log_dir(dirs: &[LogDirLoad]) -> Option<usize> {
    dirs.iter()
        .enumerate()
        .filter(|(_, d)| d.online && !d.cordoned)
        .min_by_key(|(i, d)| (d.partitions, *i))
        .map(|(i, _)| i)
}

/// Owns the data directories (see the crate docs for a directory's layout): opens every partition log
/// at startup, creates and deletes logs, writes each directory's checkpoint files and clean-shutdown
/// marker.
///
/// Startup rule, per directory: if `.kafka_cleanshutdown` exists the previous shutdown was clean and its
/// logs are opened without recovery; the marker is then removed (so a crash from now on is detected).
/// Without it every log of that directory is recovered from its checkpointed recovery point.
/// Directories named `*-delete` (interrupted deletions) are removed. A partition found in two data
/// directories is refused ([`StorageError::DuplicateLog`]), as Kafka refuses to start.
///
/// Health: every directory has its own [`LogDirHealth`] (KIP-112's failure domain): a write failure in
/// one takes only that directory's logs offline ([`take_dir_offline`](Self::take_dir_offline)); the
/// others keep taking appends, checkpoints, flushes and retention, and new partitions go to them.
///
/// Thread-safety: each log is an `Arc<parking_lot::Mutex<Log>>`; hold the lock only for the
/// duration of one call (reads return file slices consumed after unlocking).
pub struct LogManager {
    pub(crate) fs: Fs,
    /// The data directories, in `log.dirs` order (never empty); the first also holds the broker's
    /// metadata files and the cleaner's checkpoint.
    pub(crate) dirs: Vec<PathBuf>,
    pub(crate) logs: RwLock<LogMap>,
    /// Logs being moved to another directory (KIP-113, the `future_log` module).
    pub(crate) futures: FutureLogs,
    had_clean_shutdown: bool,
    /// Serializes create/delete/move so two creators can't open the same directory.
    pub(crate) create_lock: Mutex<()>,
    /// Online/offline state of each directory (index as in `dirs`), shared with every log in it.
    pub(crate) health: Vec<Arc<LogDirHealth>>,
    /// The wall clock (ms since the Unix epoch) every log of the directory reads when it decides by
    /// itself; `types::SystemClock` in production, the simulated clock in simulations.
    pub(crate) clock: Arc<dyn Clock>,
    /// Threads per data directory opening and closing logs (`num.recovery.threads.per.data.dir`; 1 on
    /// a file system other than the real one).
    recovery_threads: usize,
}

impl std::fmt::Debug for LogManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogManager")
            .field("dirs", &self.dirs)
            .finish_non_exhaustive()
    }
}

/// Creates `dir` and its missing ancestors, each fsynced into its parent (Kafka's
/// `LogManager.createAndValidateLogDirs` flushes the parent of a log dir it creates): without it a power
/// loss may take the new directory, and everything later fsynced into it, away.
fn create_dir_durably(fs: &Fs, dir: &Path) -> std::io::Result<()> {
    let missing: Vec<&Path> = dir
        .ancestors()
        .take_while(|p| !p.as_os_str().is_empty() && !fs.exists(p))
        .collect();
    fs.create_dir_all(dir)?;
    for created in missing.iter().rev() {
        match created.parent() {
            Some(p) if !p.as_os_str().is_empty() => fs.sync_dir(p)?,
            _ => fs.sync_dir(Path::new("."))?,
        }
    }
    Ok(())
}

/// Opens the partition logs of the data directory `dir` (index `index` in `log.dirs`) into `logs`,
/// following [`LogManager`]'s startup rule. Returns whether the directory had shut down cleanly.
/// Errors: a partition already opened from another directory → [`StorageError::DuplicateLog`].
/// Future log directories (KIP-113) are collected into `futures` for [`load_futures`].
fn open_dir(
    cx: &OpenContext<'_>,
    index: usize,
    logs: &mut LogMap,
    futures: &mut Vec<FoundFuture>,
) -> Result<bool, StorageError> {
    let OpenContext {
        fs,
        dirs,
        config_for,
        clock,
        health,
        threads,
    } = *cx;
    let dir = &dirs[index];
    let now_ms = clock.now_ms();
    create_dir_durably(fs, dir)?;
    let marker = dir.join(CLEAN_SHUTDOWN_FILE);
    let clean = fs.exists(&marker);
    let read_cp = |name: &str| {
        OffsetCheckpointFile::new_in(fs.clone(), dir.join(name))
            .read()
            .unwrap_or_else(|e| {
                tracing::warn!(error = %e, "ignoring unreadable checkpoint file");
                HashMap::new()
            })
    };
    let recovery_points = read_cp(RECOVERY_POINT_CHECKPOINT);
    let log_starts = read_cp(LOG_START_CHECKPOINT);
    let hws = read_cp(REPLICATION_CHECKPOINT);
    // One pass lists what to open; then the logs (sharing no file) are opened on the pool.
    let mut found = Vec::new();
    for entry in fs.read_dir(dir)? {
        if !entry.is_dir {
            continue;
        }
        let name = entry.name;
        let path = dir.join(&name);
        if name.ends_with("-delete") {
            fs.remove_dir_all(&path)?;
            continue;
        }
        // The metadata quorum's own Raft log (cluster mode) lives beside the partitions, as in Kafka.
        if name == METADATA_LOG_DIR {
            continue;
        }
        if let Some(tp) = parse_future_dir_name(&name) {
            futures.push((tp, path, index));
            continue;
        }
        let Some(tp) = TopicPartition::from_dir_name(&name) else {
            tracing::warn!(dir = %path.display(), "ignoring directory that is not <topic>-<partition>");
            continue;
        };
        if let Some((other, _)) = logs.get(&tp) {
            return Err(StorageError::DuplicateLog(format!(
                "partition {} is in both {} and {}; remove one copy",
                tp.dir_name(),
                other.lock().dir().display(),
                path.display()
            )));
        }
        found.push((config_for(&tp.topic), tp, path));
    }
    let opened = map_bounded(&found, threads, |(config, tp, path)| {
        let key = (tp.topic.clone(), tp.partition);
        let topic_id = read_partition_metadata(fs, path).unwrap_or(uuid::Uuid::nil());
        let rp = recovery_points.get(&key).copied().unwrap_or(0);
        let mut log = Log::open_in(
            fs.clone(),
            path,
            config.clone(),
            topic_id,
            !clean,
            Offset(rp),
            now_ms,
        )?;
        if let Some(&s) = log_starts.get(&key) {
            log.restore_log_start_offset(Offset(s));
        }
        // The checkpoint may be ahead of a log whose unflushed tail was lost in a crash: clamp.
        let hw = hws.get(&key).copied().unwrap_or(0);
        log.update_high_watermark(Offset(hw).min(log.log_end_offset()));
        Ok::<_, StorageError>(log)
    });
    let count = opened.len();
    // The first failure in directory order fails the startup, as when the logs were opened one by one.
    for ((_, tp, _), log) in found.into_iter().zip(opened) {
        let mut log = log?;
        log.attach_dir_health(health[index].clone());
        log.attach_clock(clock.clone());
        logs.insert(tp, (Arc::new(Mutex::new(log)), index));
    }
    if clean {
        fs.remove_file(&marker)?;
        fs.sync_dir(dir)?;
    }
    tracing::info!(dir = %dir.display(), logs = count, clean, threads, "log directory loaded");
    Ok(clean)
}

impl LogManager {
    /// Opens the data directory `dir` (created if missing) and all partition logs in it,
    /// using `config_for(topic)` as each log's config and `clock` as the wall clock of the directory's
    /// logs (recovery's producer expiry, flush times, retention the logs run by themselves).
    pub fn open(
        dir: impl Into<PathBuf>,
        config_for: impl Fn(&str) -> LogConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, StorageError> {
        Self::open_in(real_fs(), dir, config_for, clock)
    }

    /// [`open`](Self::open) on the file system `fs` (a [`crate::SimFs`] in simulations).
    pub fn open_in(
        fs: Fs,
        dir: impl Into<PathBuf>,
        config_for: impl Fn(&str) -> LogConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, StorageError> {
        Self::open_dirs_in(fs, vec![dir.into()], config_for, clock)
    }

    /// [`open`](Self::open) over several data directories (`log.dirs`, in order; each created if
    /// missing), each directory's logs opened (recovered after a crash) and later closed on
    /// [`default_recovery_threads`](crate::default_recovery_threads) threads. Errors: an empty list or a
    /// partition in two directories → [`StorageError::DuplicateLog`]; a directory's I/O error or a log
    /// that cannot be opened (the first in directory order).
    pub fn open_dirs(
        dirs: Vec<PathBuf>,
        config_for: impl Fn(&str) -> LogConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, StorageError> {
        let threads = crate::default_recovery_threads();
        Self::open_dirs_with_threads(dirs, config_for, clock, threads)
    }

    /// [`open_dirs`](Self::open_dirs) with `threads` (≥ 1; 0 counts as 1) threads per data directory
    /// (`num.recovery.threads.per.data.dir`): the directories are opened one after the other, each
    /// one's logs by up to `threads` threads at once; [`shutdown`](Self::shutdown) closes the logs on
    /// as many. The recovery rule and the result do not depend on the count.
    pub fn open_dirs_with_threads(
        dirs: Vec<PathBuf>,
        config_for: impl Fn(&str) -> LogConfig,
        clock: Arc<dyn Clock>,
        threads: usize,
    ) -> Result<Self, StorageError> {
        Self::open_all(real_fs(), dirs, &config_for, clock, threads.max(1))
    }

    /// [`open_dirs`](Self::open_dirs) on the file system `fs`, one log at a time (open and close): a
    /// simulation's [`crate::SimFs`] then sees the same order of file operations for a seed.
    pub fn open_dirs_in(
        fs: Fs,
        dirs: Vec<PathBuf>,
        config_for: impl Fn(&str) -> LogConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, StorageError> {
        Self::open_all(fs, dirs, &config_for, clock, 1)
    }

    fn open_all(
        fs: Fs,
        dirs: Vec<PathBuf>,
        config_for: &dyn Fn(&str) -> LogConfig,
        clock: Arc<dyn Clock>,
        threads: usize,
    ) -> Result<Self, StorageError> {
        if dirs.is_empty() {
            return Err(StorageError::DuplicateLog(
                "no log directory configured".into(),
            ));
        }
        for (i, d) in dirs.iter().enumerate() {
            if dirs[..i].contains(d) {
                return Err(StorageError::DuplicateLog(format!(
                    "{} is named twice in log.dirs",
                    d.display()
                )));
            }
        }
        let health: Vec<_> = dirs.iter().map(|_| Arc::default()).collect();
        let mut logs = HashMap::new();
        let mut found = Vec::new();
        let mut all_clean = true;
        let cx = OpenContext {
            fs: &fs,
            dirs: &dirs,
            config_for,
            clock: &clock,
            health: &health,
            threads,
        };
        for index in 0..dirs.len() {
            all_clean &= open_dir(&cx, index, &mut logs, &mut found)?;
        }
        let futures = FutureLogs::default();
        *futures.logs.write() = load_futures(&cx, found, &mut logs)?;
        Ok(LogManager {
            fs,
            dirs,
            logs: RwLock::new(logs),
            futures,
            had_clean_shutdown: all_clean,
            create_lock: Mutex::new(()),
            health,
            clock,
            recovery_threads: threads,
        })
    }

    /// The wall clock the directory's logs read (ms since the Unix epoch): what the maintenance loop
    /// should pass as `now_ms` so retention and flushes agree with the logs.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// The file system the data directory is on.
    pub fn fs(&self) -> &Fs {
        &self.fs
    }

    /// The first data directory (`log.dirs`' first entry): where the broker keeps its metadata files.
    pub fn dir(&self) -> &Path {
        &self.dirs[0]
    }

    /// Every data directory, in `log.dirs` order.
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// The data directory holding a partition's log, if present.
    pub fn log_dir_of(&self, topic: &str, partition: i32) -> Option<&Path> {
        let index = self
            .logs
            .read()
            .get(&TopicPartition::new(topic, partition))?
            .1;
        Some(&self.dirs[index])
    }

    /// The index (into [`dirs`](Self::dirs)) of the data directory holding a partition's log, if present.
    pub fn log_dir_index_of(&self, topic: &str, partition: i32) -> Option<usize> {
        let logs = self.logs.read();
        Some(logs.get(&TopicPartition::new(topic, partition))?.1)
    }

    /// The partitions of the data directory at `index` (into [`dirs`](Self::dirs)), sorted.
    pub fn partitions_in_dir(&self, index: usize) -> Vec<TopicPartition> {
        let mut v: Vec<_> = self
            .logs
            .read()
            .iter()
            .filter(|(_, (_, i))| *i == index)
            .map(|(tp, _)| tp.clone())
            .collect();
        v.sort();
        v
    }

    /// Whether the previous shutdown was clean (marker found at startup).
    pub fn had_clean_shutdown(&self) -> bool {
        self.had_clean_shutdown
    }

    /// The log of a partition, if present.
    pub fn get_log(&self, topic: &str, partition: i32) -> Option<Arc<Mutex<Log>>> {
        self.logs
            .read()
            .get(&TopicPartition::new(topic, partition))
            .map(|(l, _)| l.clone())
    }

    /// All logs.
    pub fn all_logs(&self) -> Vec<(TopicPartition, Arc<Mutex<Log>>)> {
        let mut v: Vec<_> = self
            .logs
            .read()
            .iter()
            .map(|(k, (v, _))| (k.clone(), v.clone()))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// Returns the log of the partition, creating its directory (with `partition.metadata`)
    /// when missing. An existing log with a different non-nil topic id → InconsistentTopicId;
    /// a nil stored id is replaced by `topic_id`. Illegal topic name → InvalidTopic.
    pub fn get_or_create_log(
        &self,
        topic: &str,
        partition: i32,
        topic_id: uuid::Uuid,
        config: LogConfig,
    ) -> Result<Arc<Mutex<Log>>, StorageError> {
        validate_topic_name(topic)?;
        if partition < 0 {
            return Err(StorageError::InvalidTopic(format!(
                "negative partition {partition}"
            )));
        }
        let tp = TopicPartition::new(topic, partition);
        if let Some((l, _)) = self.logs.read().get(&tp).cloned() {
            self.check_topic_id(&l, topic_id)?;
            return Ok(l);
        }
        let _g = self.create_lock.lock();
        if let Some((l, _)) = self.logs.read().get(&tp).cloned() {
            self.check_topic_id(&l, topic_id)?;
            return Ok(l);
        }
        let preferred = (self.take_preferred_dir(&tp)).filter(|&i| !self.health[i].is_offline());
        let index = preferred.or_else(|| self.next_log_dir()).ok_or_else(|| {
            let reason = (self.health.iter()).find_map(|h| h.offline_reason());
            StorageError::LogOffline(match reason {
                Some(r) if self.health.iter().all(|h| h.is_offline()) => {
                    format!("log directory offline: {r}")
                }
                _ => "no online log directory takes new partitions".into(),
            })
        })?;
        let log = self.create_log_in(index, &tp.dir_name(), topic_id, config)?;
        let log = Arc::new(Mutex::new(log));
        self.logs.write().insert(tp, (log.clone(), index));
        Ok(log)
    }

    /// Creates an empty log in the directory `name` of data directory `index` (with `partition.metadata`,
    /// the new directory fsynced into its parent), tied to that directory's health and the clock.
    pub(crate) fn create_log_in(
        &self,
        index: usize,
        name: &str,
        topic_id: uuid::Uuid,
        config: LogConfig,
    ) -> Result<Log, StorageError> {
        let dir = &self.dirs[index];
        let path = dir.join(name);
        self.fs.create_dir_all(&path)?;
        write_partition_metadata(&self.fs, &path, &topic_id)?;
        self.fs.sync_dir(dir)?;
        let now_ms = self.clock.now_ms();
        let mut log = Log::open_in(
            self.fs.clone(),
            &path,
            config,
            topic_id,
            false,
            Offset::ZERO,
            now_ms,
        )?;
        log.attach_dir_health(self.health[index].clone());
        log.attach_clock(self.clock.clone());
        Ok(log)
    }

    /// The data directory a new partition goes to ([`choose_log_dir`] over the current counts).
    fn next_log_dir(&self) -> Option<usize> {
        let mut loads: Vec<LogDirLoad> = (self.health.iter())
            .map(|h| LogDirLoad {
                online: !h.is_offline(),
                cordoned: false,
                partitions: 0,
            })
            .collect();
        for (_, i) in self.logs.read().values() {
            loads[*i].partitions += 1;
        }
        choose_log_dir(&loads)
    }

    fn check_topic_id(
        &self,
        log: &Arc<Mutex<Log>>,
        topic_id: uuid::Uuid,
    ) -> Result<(), StorageError> {
        let l = log.lock();
        let stored = l.topic_id();
        if !stored.is_nil() && !topic_id.is_nil() && stored != topic_id {
            return Err(StorageError::InconsistentTopicId(format!(
                "{} holds topic id {stored}, not {topic_id}",
                l.dir().display()
            )));
        }
        if stored.is_nil() && !topic_id.is_nil() {
            write_partition_metadata(&self.fs, l.dir(), &topic_id)?;
        }
        Ok(())
    }

    /// Deletes a partition's log: removed from the map, its directory renamed to
    /// `<topic>-<partition>.<uuid>-delete` and then removed. Returns false when absent.
    pub fn delete_log(&self, topic: &str, partition: i32) -> Result<bool, StorageError> {
        let _g = self.create_lock.lock();
        let tp = TopicPartition::new(topic, partition);
        self.futures.preferred.lock().remove(&tp);
        self.remove_future(&tp)?;
        let Some((log, index)) = self.logs.write().remove(&tp) else {
            return Ok(false);
        };
        let mut guard = log.lock();
        guard.mark_deleted();
        let from = guard.dir().to_path_buf();
        let dir = &self.dirs[index];
        let to = dir.join(format!(
            "{}.{}-delete",
            tp.dir_name(),
            uuid::Uuid::new_v4().simple()
        ));
        self.fs.rename(&from, &to)?;
        self.fs.sync_dir(dir)?;
        drop(guard);
        self.fs.remove_dir_all(&to)?;
        Ok(true)
    }

    /// Writes each online directory's three checkpoint files (recovery points, log start offsets, high
    /// watermarks) for its logs; an offline directory is skipped (nothing can be written; its files
    /// are put right after recovery). [`run_retention`](Self::run_retention) and
    /// [`flush_dirty`](Self::flush_dirty) likewise skip the logs of offline directories. Errors: the
    /// first directory whose files could not be written (it is then offline; the others are written).
    pub fn checkpoint(&self) -> Result<(), StorageError> {
        let logs: Vec<_> = self
            .logs
            .read()
            .iter()
            .map(|(tp, (l, i))| (tp.clone(), l.clone(), *i))
            .collect();
        let mut per_dir = vec![(HashMap::new(), HashMap::new(), HashMap::new()); self.dirs.len()];
        for (tp, log, index) in logs {
            let l = log.lock();
            let key = (tp.topic.clone(), tp.partition);
            let (rp, ls, hw) = &mut per_dir[index];
            rp.insert(key.clone(), l.recovery_point().get());
            ls.insert(key.clone(), l.log_start_offset().get());
            hw.insert(key, l.high_watermark().get());
        }
        let mut first_err = None;
        for (index, (dir, (rp, ls, hw))) in self.dirs.iter().zip(per_dir).enumerate() {
            if self.health[index].is_offline() {
                continue;
            }
            let cp = |name: &str| OffsetCheckpointFile::new_in(self.fs.clone(), dir.join(name));
            let written = cp(RECOVERY_POINT_CHECKPOINT)
                .write(&rp)
                .and_then(|()| cp(LOG_START_CHECKPOINT).write(&ls))
                .and_then(|()| cp(REPLICATION_CHECKPOINT).write(&hw));
            if let Err(e) = written {
                // As Kafka (`checkpointLogRecoveryOffsetsInDir` → the LogDirFailureChannel): a checkpoint
                // that cannot be written takes the directory offline; a stale recovery point must not be
                // trusted while appends go on (recovery after it comes back starts from each log's own).
                let msg = format!("checkpoint failed in {}: {e}", dir.display());
                tracing::error!("{msg}; log directory is now offline");
                self.health[index].mark_offline(&msg, dir);
                self.take_dir_offline(index);
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), |e| Err(e.into()))
    }

    /// Every log, with whether its directory is offline now.
    fn logs_with_health(&self) -> Vec<(TopicPartition, Arc<Mutex<Log>>, bool)> {
        let mut v: Vec<_> = (self.logs.read().iter())
            .map(|(tp, (l, i))| (tp.clone(), l.clone(), self.health[*i].is_offline()))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// Periodic retention (broker timer): [`Log::delete_old_segments`] on every log. Returns
    /// segments deleted; a failing log is logged and skipped.
    pub fn run_retention(&self, now_ms: i64) -> usize {
        let mut n = 0;
        for (tp, log, offline) in self.logs_with_health() {
            if offline {
                continue;
            }
            match log.lock().delete_old_segments(now_ms) {
                Ok(d) => n += d,
                Err(e) => {
                    tracing::error!(partition = %tp.dir_name(), error = %e, "retention failed")
                }
            }
        }
        n
    }

    /// Periodic flush (broker timer): [`Log::maybe_flush`] policy on every log, with the fsyncs
    /// done outside each log's lock. Returns how many logs fsynced something.
    pub fn flush_dirty(&self, now_ms: i64) -> usize {
        let mut n = 0;
        for (tp, log, offline) in self.logs_with_health() {
            if offline {
                continue;
            }
            let job = match log.lock().prepare_flush(now_ms) {
                Ok(Some(job)) => job,
                Ok(None) => continue,
                Err(e) => {
                    tracing::error!(partition = %tp.dir_name(), error = %e, "flush failed");
                    continue;
                }
            };
            // fsync without holding the log's lock: appends and reads go on meanwhile.
            let r = job.run();
            match log.lock().complete_flush(job, r) {
                Ok(()) => n += 1,
                Err(e) => tracing::error!(partition = %tp.dir_name(), error = %e, "flush failed"),
            }
        }
        n
    }

    /// Clean shutdown: closes (flushes, snapshots) every log — on up to the open's thread count at once
    /// ([`open_dirs_with_threads`](Self::open_dirs_with_threads)) —, writes the checkpoints, then each
    /// directory's clean-shutdown marker — only for a directory whose logs all closed and whose
    /// checkpoints were written (an offline one is recovered at the next start). The marker is written
    /// only after every close has returned, so it never covers a log still being flushed. Errors: the
    /// first failure, after every directory was tried.
    pub fn shutdown(&self) -> Result<(), StorageError> {
        let mut first_err = None;
        let mut failed = vec![false; self.dirs.len()];
        // Held while the logs close, as before: no log is created or deleted meanwhile.
        let map = self.logs.read();
        let logs: Vec<_> = (map.iter())
            .map(|(tp, (log, index))| (tp.clone(), log.clone(), *index))
            .collect();
        let closed = map_bounded(&logs, self.recovery_threads, |(_, log, _)| {
            log.lock().close()
        });
        drop(map);
        for ((tp, _, index), r) in logs.iter().zip(closed) {
            if let Err(e) = r {
                tracing::error!(partition = %tp.dir_name(), error = %e, "close failed");
                failed[*index] = true;
                first_err.get_or_insert(e);
            }
        }
        if let Err(e) = self.checkpoint().and_then(|()| self.close_futures()) {
            first_err.get_or_insert(e);
        }
        for (index, dir) in self.dirs.iter().enumerate() {
            if failed[index] || self.health[index].is_offline() {
                continue;
            }
            if let Err(e) = write_atomically(&self.fs, &dir.join(CLEAN_SHUTDOWN_FILE), b"") {
                first_err.get_or_insert(e.into());
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// The health of each data directory, in `log.dirs` order (offline after a write failure of any of
    /// its logs).
    pub fn dir_healths(&self) -> &[Arc<LogDirHealth>] {
        &self.health
    }

    /// The health of the data directory at `index` (into [`dirs`](Self::dirs)). Panics: `index` out of
    /// range.
    pub fn dir_health(&self, index: usize) -> &Arc<LogDirHealth> {
        &self.health[index]
    }

    /// The indexes of the data directories offline now.
    pub fn offline_dirs(&self) -> Vec<usize> {
        (0..self.dirs.len())
            .filter(|&i| self.health[i].is_offline())
            .collect()
    }

    /// Takes every log of the directory at `index` offline (KIP-112: a failed dir takes all its logs
    /// with it, and only them): appends, truncations and flushes fail with
    /// [`StorageError::LogOffline`] until [`try_recover_dir`](Self::try_recover_dir) succeeds; reads of
    /// what was written go on. A no-op while the directory is online.
    pub fn take_dir_offline(&self, index: usize) {
        let Some(reason) = self.health[index].offline_reason() else {
            return;
        };
        for tp in self.partitions_in_dir(index) {
            if let Some(log) = self.get_log(&tp.topic, tp.partition) {
                log.lock().mark_dir_offline(&reason);
            }
        }
        for (_, log, i) in self.future_logs() {
            if i == index {
                log.lock().mark_dir_offline(&reason);
            }
        }
    }

    /// Brings the offline directory at `index` back: [`probe_dir`] (write + fsync + delete a file) in
    /// it and in the directory of the log that failed (which may be a mount of its own), then every
    /// log of the directory is [`Log::reopen`]ed with recovery (a torn tail is truncated to the last
    /// valid batch) and the directory is marked online. Returns false when the directory was online
    /// (nothing done). Errors: the probe's or a reopen's; the directory stays offline (logs already
    /// reopened take writes again, and are reopened again by the next successful try).
    pub fn try_recover_dir(&self, index: usize) -> Result<bool, StorageError> {
        let now_ms = self.clock.now_ms();
        let health = &self.health[index];
        if !health.is_offline() {
            return Ok(false);
        }
        probe_dir(&self.fs, &self.dirs[index])?;
        if let Some(p) = health.failed_path().filter(|p| self.fs.exists(p)) {
            probe_dir(&self.fs, &p)?;
        }
        let _g = self.create_lock.lock();
        for tp in self.partitions_in_dir(index) {
            let Some(log) = self.get_log(&tp.topic, tp.partition) else {
                continue;
            };
            let reopened = log.lock().reopen(now_ms);
            if let Err(e) = reopened {
                tracing::warn!(partition = %tp.dir_name(), error = %e, "log not recovered yet");
                return Err(e);
            }
        }
        health.mark_online();
        tracing::info!(dir = %self.dirs[index].display(), "log directory is online again");
        Ok(true)
    }
}
