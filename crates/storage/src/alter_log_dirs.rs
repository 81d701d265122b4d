//! The thread that moves logs between data directories (Kafka's `ReplicaAlterLogDirsThread`, KIP-113),
//! and [`LogThreads`], the storage layer's background threads as one handle.
//!
//! The thread copies every future log forward in turns of [`COPY_CHUNK_BYTES`] (so many moves share it
//! fairly and no log's lock is held for long) and swaps a future in once it has caught up
//! ([`LogManager::replace_current_with_future`]). A move whose copy or swap fails is cancelled (its future
//! log deleted); the operator asks again. Idle, it sleeps until [`LogManager::wake_mover`].

use crate::cleaner::CleanerConfig;
use crate::future_log::FutureCopy;
use crate::log_cleaner::LogCleaner;
use crate::manager::LogManager;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Bytes copied per turn of one move.
pub const COPY_CHUNK_BYTES: usize = 1 << 20;

/// The copy rate limit in bytes per second (`replica.alter.log.dirs.io.max.bytes.per.second`), read
/// before every chunk so a dynamic change applies at once; `u64::MAX` (or anything ≥ 2^63) = none.
pub type MoveRate = Box<dyn Fn() -> u64 + Send>;

/// Keeps the mover's copy rate under [`MoveRate`]: after each chunk it sleeps until the bytes copied in
/// the current one-second window are within the rate. Sleeps are cut short by `stop`.
struct Throttle {
    rate: MoveRate,
    window: std::time::Instant,
    bytes: u64,
}

impl Throttle {
    fn record(&mut self, n: usize, stop: &AtomicBool) {
        let rate = (self.rate)();
        if rate >= i64::MAX as u64 || n == 0 {
            return;
        }
        self.bytes += n as u64;
        let due = Duration::from_secs_f64(self.bytes as f64 / rate.max(1) as f64);
        let elapsed = self.window.elapsed();
        if elapsed >= Duration::from_secs(1) && due <= elapsed {
            (self.window, self.bytes) = (std::time::Instant::now(), 0);
            return;
        }
        let mut wait = due.saturating_sub(elapsed);
        while !wait.is_zero() && !stop.load(Ordering::Relaxed) {
            let nap = wait.min(Duration::from_millis(100));
            std::thread::sleep(nap);
            wait -= nap;
        }
    }
}

/// The running mover thread; stopped by [`shutdown`](Self::shutdown) or on drop (a move in progress
/// stays on disk and resumes at the next start).
pub struct ReplicaAlterLogDirsThread {
    manager: Arc<LogManager>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for ReplicaAlterLogDirsThread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplicaAlterLogDirsThread")
            .finish_non_exhaustive()
    }
}

impl ReplicaAlterLogDirsThread {
    /// Starts the thread over `manager`'s future logs (those loaded at startup resume at once), copying
    /// at most `rate()` bytes per second.
    pub fn start(manager: Arc<LogManager>, rate: MoveRate) -> io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let (m, s) = (manager.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("replica-alter-log-dirs".into())
            .spawn(move || {
                let window = std::time::Instant::now();
                let throttle = Throttle {
                    rate,
                    window,
                    bytes: 0,
                };
                run(&m, &s, throttle)
            })?;
        Ok(ReplicaAlterLogDirsThread {
            manager,
            stop,
            thread: Some(thread),
        })
    }

    /// Stops the thread and waits for it.
    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.manager.wake_mover();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ReplicaAlterLogDirsThread {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

fn run(manager: &LogManager, stop: &AtomicBool, mut throttle: Throttle) {
    while !stop.load(Ordering::Relaxed) {
        let moves = manager.future_logs();
        if moves.is_empty() {
            manager.wait_for_mover_work(Duration::from_secs(1));
            continue;
        }
        for (tp, _, _) in moves {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            let step = manager
                .copy_to_future(&tp, COPY_CHUNK_BYTES)
                .inspect(|p| {
                    if let FutureCopy::Behind { copied, .. } = p {
                        throttle.record(*copied, stop);
                    }
                })
                .and_then(|p| match p {
                    FutureCopy::CaughtUp => manager.replace_current_with_future(&tp).map(|_| ()),
                    // A short read: at the LogEndOffset, or at a segment's end (the swap declines).
                    FutureCopy::Behind { copied, .. } if copied < COPY_CHUNK_BYTES / 2 => {
                        manager.replace_current_with_future(&tp).map(|_| ())
                    }
                    FutureCopy::Behind { .. } | FutureCopy::Gone => Ok(()),
                });
            if let Err(e) = step {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                tracing::error!(partition = %tp.dir_name(), error = %e, "moving a log between directories failed; the move is cancelled");
                if let Err(e) = manager.cancel_move(&tp) {
                    tracing::warn!(partition = %tp.dir_name(), error = %e, "removing the cancelled move's future log failed");
                }
            }
        }
    }
}

/// The storage layer's background threads: the log cleaner (when `log.cleaner.enable`) and the
/// [`ReplicaAlterLogDirsThread`]. Stop them before closing the logs.
#[derive(Debug)]
pub struct LogThreads {
    cleaner: Option<LogCleaner>,
    mover: ReplicaAlterLogDirsThread,
}

impl LogThreads {
    /// Starts the threads over `manager`; `cleaner` is the cleaner's config, `None` for no cleaner;
    /// `move_rate` bounds the mover. Errors: a thread that could not be spawned.
    pub fn start(
        manager: Arc<LogManager>,
        cleaner: Option<CleanerConfig>,
        move_rate: MoveRate,
    ) -> io::Result<LogThreads> {
        let cleaner = match cleaner {
            Some(config) => Some(LogCleaner::start(manager.clone(), config)?),
            None => None,
        };
        let mover = ReplicaAlterLogDirsThread::start(manager, move_rate)?;
        Ok(LogThreads { cleaner, mover })
    }

    /// Stops every thread and waits for them.
    pub fn shutdown(self) {
        if let Some(c) = self.cleaner {
            c.shutdown();
        }
        self.mover.shutdown();
    }
}
