//! Future logs (KIP-113, AlterReplicaLogDirs): moving a partition's log to another data directory of the
//! same broker while the partition keeps taking appends and serving reads.
//!
//! On disk a future log is a partition directory named `<topic>-<partition>.<32 hex uuid>-future` in the
//! destination data directory, with a current log's layout (segments, indexes, `partition.metadata`,
//! `leader-epoch-checkpoint`, producer snapshots). It starts empty at the current log's LogStartOffset and
//! is filled by [`LogManager::copy_to_future`] (the [`crate::ReplicaAlterLogDirsThread`] calls it), which
//! appends the current log's batches as a follower does, truncating the future where the current log was
//! truncated (leader-epoch divergence, as a follower against its leader) and following its LogStartOffset.
//!
//! The swap ([`LogManager::replace_current_with_future`]) runs under the current log's lock once the
//! future has caught up: the future is closed (fsynced, producer snapshot), the current log's producer
//! state is written over that snapshot (it also knows producers whose batches were deleted), then
//! 1. the current directory is renamed to `<topic>-<partition>.<uuid>-delete` and its parent fsynced;
//! 2. the future directory is renamed to `<topic>-<partition>` and its parent fsynced;
//! 3. the log is reopened there and takes the place of the current one in the same `Arc<Mutex<Log>>`
//!    (everyone holding the partition's log sees the moved one), and the `-delete` directory is removed.
//!
//! Recovery rule at startup ([`load_futures`]): `-delete` directories are removed (as always); a future
//! directory whose partition has a current log elsewhere is opened with full recovery and the move resumes;
//! a future directory without a current log is the result of a crash between steps 1 and 2 (only a
//! caught-up, fsynced future is ever renamed) and is promoted to the current log; a future in the current
//! log's own directory, or a second future of one partition, is removed.

use crate::checkpoint::read_partition_metadata;
use crate::config::LogConfig;
use crate::error::StorageError;
use crate::log::Log;
use crate::log_dir::LogDirHealth;
use crate::manager::LogManager;
use crate::vfs::Fs;
use bytes::Bytes;
use parking_lot::{Condvar, Mutex, RwLock};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use types::{Clock, LeaderEpoch, Offset, TopicPartition};

/// The suffix of a future log's directory name (Kafka's `UnifiedLog.FutureDirSuffix`).
pub const FUTURE_DIR_SUFFIX: &str = "-future";

/// The most bytes the swap copies while it holds the current log's lock; a future further behind is
/// not swapped yet ([`LogManager::replace_current_with_future`] returns false).
const SWAP_CATCH_UP_BYTES: usize = 8 << 20;

/// A partition's log and the index of its data directory (into [`LogManager::dirs`]).
pub(crate) type LogMap = HashMap<TopicPartition, (Arc<Mutex<Log>>, usize)>;

/// The future logs of a [`LogManager`], the destinations recorded for partitions not hosted yet, and the
/// mover thread's wakeup.
#[derive(Default)]
pub(crate) struct FutureLogs {
    pub(crate) logs: RwLock<LogMap>,
    /// AlterReplicaLogDirs for a partition this broker does not host yet: where its log goes once created
    /// (Kafka's `LogManager.preferredLogDirs`).
    pub(crate) preferred: Mutex<HashMap<TopicPartition, usize>>,
    wake: (Mutex<bool>, Condvar),
}

/// What [`LogManager::alter_log_dir`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlterLogDir {
    /// The log is already in the requested directory (a move elsewhere, if any, was cancelled).
    AlreadyThere,
    /// A future log was created there; the move runs in the background.
    Started,
    /// A move to that directory is already under way.
    InProgress,
    /// The broker hosts no log of the partition: the directory is recorded for when it is created
    /// (Kafka answers REPLICA_NOT_AVAILABLE).
    NotHosted,
}

/// Progress of one [`LogManager::copy_to_future`] step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FutureCopy {
    /// The future log has everything the current log had during the step: time to swap.
    CaughtUp,
    /// Still behind the current LogEndOffset.
    Behind {
        /// By this many offsets.
        offsets: i64,
        /// Bytes the step copied: less than asked means the read reached the LogEndOffset (or a
        /// segment's end), so the swap is worth trying (it copies a few MiB more under the lock).
        copied: usize,
    },
    /// No move of that partition is under way (finished, cancelled or the partition deleted).
    Gone,
}

/// `<topic>-<partition>.<uuid>-future`, a fresh future directory name.
fn future_dir_name(tp: &TopicPartition) -> String {
    let id = uuid::Uuid::new_v4().simple();
    format!("{}.{id}{FUTURE_DIR_SUFFIX}", tp.dir_name())
}

/// The partition of a future directory name (`<topic>-<partition>.<32 hex>-future`), `None` for any other.
pub(crate) fn parse_future_dir_name(name: &str) -> Option<TopicPartition> {
    let (tp, id) = name.strip_suffix(FUTURE_DIR_SUFFIX)?.rsplit_once('.')?;
    let hex = id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit());
    hex.then(|| TopicPartition::from_dir_name(tp)).flatten()
}

/// A future directory found at startup: its partition, path and data directory index.
pub(crate) type FoundFuture = (TopicPartition, PathBuf, usize);

/// What opening a data directory's logs needs to know (shared by current and future logs).
#[derive(Clone, Copy)]
pub(crate) struct OpenContext<'a> {
    pub fs: &'a Fs,
    pub dirs: &'a [PathBuf],
    pub config_for: &'a dyn Fn(&str) -> LogConfig,
    pub clock: &'a Arc<dyn Clock>,
    pub health: &'a [Arc<LogDirHealth>],
    /// Threads opening (recovering) one directory's logs at once (`num.recovery.threads.per.data.dir`).
    pub threads: usize,
}

impl OpenContext<'_> {
    /// Opens the log at `path` (in data directory `index`) with full recovery, tied to the directory's
    /// health and the clock.
    fn open_recovered(
        &self,
        tp: &TopicPartition,
        path: &std::path::Path,
        index: usize,
    ) -> Result<Log, StorageError> {
        let topic_id = read_partition_metadata(self.fs, path).unwrap_or(uuid::Uuid::nil());
        let config = (self.config_for)(&tp.topic);
        let now_ms = self.clock.now_ms();
        let mut log = Log::open_in(
            self.fs.clone(),
            path,
            config,
            topic_id,
            true,
            Offset::ZERO,
            now_ms,
        )?;
        log.attach_dir_health(self.health[index].clone());
        log.attach_clock(self.clock.clone());
        Ok(log)
    }
}

/// Applies the module's recovery rule to the future directories `found` at startup, given the current
/// logs `logs` (a promoted future joins them). Returns the futures whose move resumes.
pub(crate) fn load_futures(
    cx: &OpenContext<'_>,
    found: Vec<FoundFuture>,
    logs: &mut LogMap,
) -> Result<LogMap, StorageError> {
    let mut futures = LogMap::new();
    for (tp, path, index) in found {
        let current_index = logs.get(&tp).map(|(_, i)| *i);
        if futures.contains_key(&tp) || current_index == Some(index) {
            tracing::warn!(dir = %path.display(), "removing a redundant future log");
            cx.fs.remove_dir_all(&path)?;
            continue;
        }
        if current_index.is_some() {
            let log = cx.open_recovered(&tp, &path, index)?;
            tracing::info!(dir = %path.display(), log_end_offset = log.log_end_offset().get(), "resuming a log directory move");
            futures.insert(tp, (Arc::new(Mutex::new(log)), index));
            continue;
        }
        // Step 1 of the swap happened, step 2 did not: the future is the partition's log now.
        let final_path = cx.dirs[index].join(tp.dir_name());
        cx.fs.rename(&path, &final_path)?;
        cx.fs.sync_dir(&cx.dirs[index])?;
        let log = cx.open_recovered(&tp, &final_path, index)?;
        tracing::warn!(dir = %final_path.display(), "completed an interrupted log directory move");
        logs.insert(tp, (Arc::new(Mutex::new(log)), index));
    }
    Ok(futures)
}

/// The bytes of a read (a file slice is read now, under the caller's lock).
fn bytes_of(records: protocol::record::Records) -> std::io::Result<Bytes> {
    use std::os::unix::fs::FileExt;
    match records {
        protocol::record::Records::Memory(b) => Ok(b),
        protocol::record::Records::File(f) => {
            let mut buf = vec![0u8; f.len as usize];
            f.file.read_exact_at(&mut buf, f.position)?;
            Ok(Bytes::from(buf))
        }
    }
}

/// One copy step from `current` into `future` (both locked by the caller): truncates the future where
/// the current log diverged from it or started later, then appends up to `max_bytes` of the current
/// log's batches from the future's LogEndOffset. Returns how many bytes were appended.
fn copy_step(
    current: &mut Log,
    future: &mut Log,
    max_bytes: usize,
    now_ms: i64,
) -> Result<usize, StorageError> {
    if current.is_offline() {
        return Err(StorageError::LogOffline(format!(
            "{} is offline: the move stops",
            current.dir().display()
        )));
    }
    let (lso, leo) = (current.log_start_offset(), current.log_end_offset());
    let mut keep = future.log_end_offset().min(leo);
    if let Some(epoch) = future.latest_epoch() {
        let (found, end) = current.end_offset_for_epoch(epoch);
        if found != LeaderEpoch::NONE && end != Offset::NONE {
            keep = keep.min(end);
        }
    }
    if keep < lso || future.log_start_offset() > leo {
        future.truncate_fully_and_start_at(lso)?;
    } else if keep < future.log_end_offset() {
        future.truncate_to(keep)?;
    }
    if lso > future.log_start_offset() && lso <= future.log_end_offset() {
        future.update_high_watermark(lso);
        future.delete_records_before(lso)?;
    }
    let from = future.log_end_offset();
    if from >= leo {
        return Ok(0);
    }
    let read = current.read(from, max_bytes, leo, true)?;
    if read.records.is_empty() {
        return Ok(0);
    }
    if read.first_batch_base_offset < from {
        // The batch holding `from` starts below it (the cleaner rewrote it): take it whole.
        future.truncate_to(read.first_batch_base_offset)?;
    }
    let bytes = bytes_of(read.records)?;
    let n = bytes.len();
    future.append_as_follower(bytes, now_ms)?;
    Ok(n)
}

impl LogManager {
    /// Moves a partition's log to the data directory `dest` (index into [`dirs`](Self::dirs)), KIP-113:
    /// creates a future log there (cancelling a move to another directory) that the
    /// [`crate::ReplicaAlterLogDirsThread`] fills and then swaps in. Panics: `dest` out of range (the caller
    /// maps paths to indexes). Errors: `dest` or the partition's directory offline → [`StorageError::LogOffline`] (KAFKA_STORAGE_ERROR);
    /// a name too long for a future directory → [`StorageError::InvalidTopic`]; I/O errors.
    pub fn alter_log_dir(
        &self,
        topic: &str,
        partition: i32,
        dest: usize,
    ) -> Result<AlterLogDir, StorageError> {
        let tp = TopicPartition::new(topic, partition);
        if future_dir_name(&tp).len() > 255 {
            return Err(StorageError::InvalidTopic(
                "the topic name is too long to move its log".into(),
            ));
        }
        let _g = self.create_lock.lock();
        if self.health[dest].is_offline() {
            return Err(StorageError::LogOffline(format!(
                "{} is offline",
                self.dirs[dest].display()
            )));
        }
        let Some((current, index)) = self.logs.read().get(&tp).cloned() else {
            self.futures.preferred.lock().insert(tp, dest);
            return Ok(AlterLogDir::NotHosted);
        };
        if self.health[index].is_offline() {
            return Err(StorageError::LogOffline(format!(
                "{} is offline",
                self.dirs[index].display()
            )));
        }
        let existing = self.futures.logs.read().get(&tp).map(|(_, i)| *i);
        match existing {
            Some(i) if i == dest => return Ok(AlterLogDir::InProgress),
            Some(_) => self.remove_future(&tp)?,
            None => {}
        }
        if index == dest {
            return Ok(AlterLogDir::AlreadyThere);
        }
        let (topic_id, config, lso) = {
            let c = current.lock();
            (c.topic_id(), c.config().clone(), c.log_start_offset())
        };
        let mut log = self.create_log_in(dest, &future_dir_name(&tp), topic_id, config)?;
        log.truncate_fully_and_start_at(lso)?;
        tracing::info!(partition = %tp.dir_name(), to = %self.dirs[dest].display(), "moving a log to another directory");
        self.futures
            .logs
            .write()
            .insert(tp, (Arc::new(Mutex::new(log)), dest));
        self.wake_mover();
        Ok(AlterLogDir::Started)
    }

    /// The data directory AlterReplicaLogDirs chose for a partition not hosted when it was asked (taken:
    /// asked once per log creation).
    pub(crate) fn take_preferred_dir(&self, tp: &TopicPartition) -> Option<usize> {
        self.futures.preferred.lock().remove(tp)
    }

    /// The future logs (moves under way): partition, log and destination directory index, sorted.
    pub fn future_logs(&self) -> Vec<(TopicPartition, Arc<Mutex<Log>>, usize)> {
        let mut v: Vec<_> = (self.futures.logs.read().iter())
            .map(|(tp, (l, i))| (tp.clone(), l.clone(), *i))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// Copies up to `max_bytes` of a partition's current log into its future log (see the module doc).
    /// Errors: the current or the future log failed (the caller cancels the move).
    pub fn copy_to_future(
        &self,
        tp: &TopicPartition,
        max_bytes: usize,
    ) -> Result<FutureCopy, StorageError> {
        let (Some(current), Some(future)) = (
            self.get_log(&tp.topic, tp.partition),
            self.futures.logs.read().get(tp).map(|(l, _)| l.clone()),
        ) else {
            return Ok(FutureCopy::Gone);
        };
        let now_ms = self.clock.now_ms();
        let mut c = current.lock();
        let mut f = future.lock();
        let copied = copy_step(&mut c, &mut f, max_bytes, now_ms)?;
        let behind = c.log_end_offset().get() - f.log_end_offset().get();
        Ok(match behind {
            0 => FutureCopy::CaughtUp,
            offsets => FutureCopy::Behind { offsets, copied },
        })
    }

    /// The swap of the module doc, once the future log has caught up: returns false (nothing done) when
    /// it is more than a few MiB behind, or when no move is under way. Errors: I/O during the swap; the
    /// caller cancels the move (before step 1 the current log is untouched; after it, the log is offline
    /// until a restart completes the move).
    pub fn replace_current_with_future(&self, tp: &TopicPartition) -> Result<bool, StorageError> {
        let _g = self.create_lock.lock();
        let (Some((current, from)), Some((future, dest))) = (
            self.logs.read().get(tp).cloned(),
            self.futures.logs.read().get(tp).cloned(),
        ) else {
            return Ok(false);
        };
        let now_ms = self.clock.now_ms();
        let mut c = current.lock();
        let mut f = future.lock();
        let mut budget = SWAP_CATCH_UP_BYTES;
        loop {
            let n = copy_step(&mut c, &mut f, budget.min(1 << 20), now_ms)?;
            if n == 0 && f.log_end_offset() == c.log_end_offset() {
                break;
            }
            budget = budget.saturating_sub(n.max(1));
            if budget == 0 {
                return Ok(false);
            }
        }
        for &(epoch, start) in c.leader_epoch_entries() {
            f.assign_epoch_start_offset(epoch, start)?;
        }
        f.close()?;
        if c.producer_state().map_end_offset() == c.log_end_offset() {
            c.producer_state().write_snapshot_into(f.dir())?;
        }
        let deleted = self.dirs[from].join(format!(
            "{}.{}-delete",
            tp.dir_name(),
            uuid::Uuid::new_v4().simple()
        ));
        let old_path = c.dir().to_path_buf();
        self.fs.rename(&old_path, &deleted)?;
        self.fs.sync_dir(&self.dirs[from])?;
        let final_path = self.dirs[dest].join(tp.dir_name());
        let renamed = (self.fs.rename(f.dir(), &final_path))
            .and_then(|()| self.fs.sync_dir(&self.dirs[dest]));
        if let Err(e) = renamed {
            // Put the current log back where it was; if even that fails, a restart sorts it out.
            if self.fs.rename(&deleted, &old_path).is_err() {
                c.mark_deleted();
            }
            return Err(e.into());
        }
        let config = c.config().clone();
        let mut moved = match Log::open_in(
            self.fs.clone(),
            &final_path,
            config,
            c.topic_id(),
            false,
            c.log_end_offset(),
            now_ms,
        ) {
            Ok(l) => l,
            Err(e) => {
                c.mark_deleted(); // its files are gone; a restart opens the moved log
                return Err(e);
            }
        };
        moved.attach_dir_health(self.health[dest].clone());
        moved.take_over_from(&mut c);
        let old = std::mem::replace(&mut *c, moved);
        drop((f, c, old));
        self.logs.write().insert(tp.clone(), (current, dest));
        self.futures.logs.write().remove(tp);
        if let Err(e) = self.fs.remove_dir_all(&deleted) {
            tracing::warn!(dir = %deleted.display(), error = %e, "removing the moved log's old directory failed");
        }
        tracing::info!(partition = %tp.dir_name(), to = %self.dirs[dest].display(), "log moved to another directory");
        Ok(true)
    }

    /// Cancels a partition's move: its future log is deleted. A no-op without one.
    pub fn cancel_move(&self, tp: &TopicPartition) -> Result<(), StorageError> {
        let _g = self.create_lock.lock();
        self.remove_future(tp)
    }

    /// Deletes a partition's future log (caller holds `create_lock`).
    pub(crate) fn remove_future(&self, tp: &TopicPartition) -> Result<(), StorageError> {
        let Some((log, index)) = self.futures.logs.write().remove(tp) else {
            return Ok(());
        };
        let mut guard = log.lock();
        guard.mark_deleted();
        let dir = &self.dirs[index];
        let to = dir.join(format!(
            "{}.{}-delete",
            tp.dir_name(),
            uuid::Uuid::new_v4().simple()
        ));
        self.fs.rename(guard.dir(), &to)?;
        self.fs.sync_dir(dir)?;
        drop(guard);
        self.fs.remove_dir_all(&to)?;
        Ok(())
    }

    /// Wakes the mover thread (a move was started, or it should stop).
    pub fn wake_mover(&self) {
        let (m, cv) = &self.futures.wake;
        *m.lock() = true;
        cv.notify_all();
    }

    /// Waits up to `timeout` for [`wake_mover`](Self::wake_mover).
    pub fn wait_for_mover_work(&self, timeout: Duration) {
        let (m, cv) = &self.futures.wake;
        let mut woken = m.lock();
        if !*woken {
            cv.wait_for(&mut woken, timeout);
        }
        *woken = false;
    }

    /// Closes every future log at a clean shutdown (flushed, producer snapshot), so the next start
    /// resumes the moves. Errors: the first failure.
    pub(crate) fn close_futures(&self) -> Result<(), StorageError> {
        let mut first_err = None;
        for (tp, (log, _)) in self.futures.logs.read().iter() {
            if let Err(e) = log.lock().close() {
                tracing::error!(partition = %tp.dir_name(), error = %e, "closing a future log failed");
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }
}
