//! The background cleaner thread (Kafka's `LogCleaner` with one `CleanerThread`): it runs
//! [`Cleaner::clean_one`](crate::Cleaner::clean_one) over the [`LogManager`]'s logs, sleeping when nothing
//! qualifies. The cleaning itself — selection, offset map, rewrite, atomic swap — is `cleaner.rs`.

use crate::cleaner::{Cleaner, CleanerConfig, CleanerStats};
use crate::log::SwapStep;
use crate::manager::{LogManager, TopicPartition};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// Test hook: environment variable naming a swap step (`IndexesToSwap`, `LogToSwap`,
/// `IndexesInPlace`, `LogInPlace`) after which the [`LogCleaner`] thread aborts the process
/// (system-level crash injection; tests/test_compaction.py).
pub const CRASH_ENV: &str = "RUNNEL_TEST_CLEANER_CRASH_AFTER";

/// Peak resident memory of this process (`VmHWM` from /proc/self/status, bytes), when known.
pub fn process_peak_rss_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Set by [`LogCleaner::wakeup`], taken by the thread's sleep.
type Wake = Arc<(Mutex<bool>, Condvar)>;

/// The background cleaner thread (Kafka's `LogCleaner` with one `CleanerThread`): loops over [`Cleaner::clean_one`]
/// on the [`LogManager`]'s logs, sleeping `backoff_ms` (or until the next tombstone or marker horizon) when
/// nothing qualifies; writes `cleaner-offset-checkpoint` after each clean. Logs each clean at info level with
/// its throughput (MB/s of segments cleaned) and memory; [`crate::stats`] has its metrics.
#[derive(Debug)]
pub struct LogCleaner {
    stop: Arc<AtomicBool>,
    wake: Wake,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl LogCleaner {
    /// Starts the cleaner thread for `manager`'s logs.
    pub fn start(manager: Arc<LogManager>, config: CleanerConfig) -> io::Result<LogCleaner> {
        let mut cleaner = Cleaner::new(manager.fs().clone(), manager.dir(), config.clone());
        cleaner.crash_after = crash_step_from_env();
        let stop = cleaner.stop.clone();
        let wake: Wake = Arc::new((Mutex::new(false), Condvar::new()));
        let (wake2, stop2) = (wake.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("log-cleaner".into())
            .spawn(move || run(&manager, &mut cleaner, &config, &stop2, &wake2))?;
        Ok(LogCleaner {
            stop,
            wake,
            thread: Some(thread),
        })
    }

    /// Wakes the thread to look for work now.
    pub fn wakeup(&self) {
        let (m, cv) = &*self.wake;
        *m.lock().unwrap_or_else(|e| e.into_inner()) = true;
        cv.notify_all();
    }

    /// Stops the thread (an in-progress clean is abandoned; its `.cleaned` files are removed
    /// now or at the next open) and waits for it.
    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.wakeup();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for LogCleaner {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// Crash injection for system tests ([`CRASH_ENV`]): the process aborts right after the named step of the
/// first segment swap.
fn crash_step_from_env() -> Option<SwapStep> {
    let step = match std::env::var(CRASH_ENV).ok()?.as_str() {
        "IndexesToSwap" => SwapStep::IndexesToSwap,
        "LogToSwap" => SwapStep::LogToSwap,
        "IndexesInPlace" => SwapStep::IndexesInPlace,
        "LogInPlace" => SwapStep::LogInPlace,
        _ => return None,
    };
    tracing::warn!(step = ?step, "{CRASH_ENV} is set: the broker aborts during its first cleaner swap");
    Some(step)
}

/// The thread's loop: one clean per round, then a sleep unless that round made progress.
fn run(
    manager: &LogManager,
    cleaner: &mut Cleaner,
    config: &CleanerConfig,
    stop: &AtomicBool,
    wake: &Wake,
) {
    let mut peak = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let logs = manager.all_logs();
        let mut sleep_ms = config.backoff_ms;
        match cleaner.clean_one(&logs, crate::now_ms()) {
            Ok(Some((tp, st))) => {
                peak = peak.max(st.peak_memory_bytes);
                log_clean(&tp, &st, peak);
                if let Err(e) = cleaner.write_checkpoint(&logs) {
                    tracing::error!(error = %e, "writing cleaner offset checkpoint failed");
                }
                // Look for more work at once, unless this round made no progress.
                if st.segments_swapped > 0 || st.end_offset > st.first_dirty_offset {
                    sleep_ms = 0;
                }
            }
            Ok(None) => {}
            Err(e) => {
                if cleaner.crash_after.is_some() && e.to_string().contains("injected crash") {
                    tracing::error!(error = %e, "aborting ({CRASH_ENV})");
                    std::process::abort();
                }
                if !stop.load(Ordering::Relaxed) {
                    tracing::error!(error = %e, "log cleaner failed");
                }
            }
        }
        if let Some(h) = logs
            .iter()
            .filter_map(|(tp, _)| cleaner.pending_horizon(tp))
            .min()
        {
            // Wake when the earliest tombstone or marker horizon passes (not more often than every 200 ms
            // when it already has and nothing could be done).
            let until = (h - crate::now_ms()).max(0) as u64 + 1;
            if sleep_ms > 0 {
                sleep_ms = sleep_ms.min(until.max(200));
            }
        }
        if sleep_ms > 0 {
            let (m, cv) = &**wake;
            let g = m.lock().unwrap_or_else(|e| e.into_inner());
            let _ = cv
                .wait_timeout_while(g, Duration::from_millis(sleep_ms), |woken| {
                    !std::mem::take(woken) && !stop.load(Ordering::Relaxed)
                })
                .unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// One clean at info level: what it read, kept and removed, its throughput and memory.
fn log_clean(tp: &TopicPartition, st: &CleanerStats, peak: u64) {
    tracing::info!(
        partition = %tp.dir_name(),
        first_dirty_offset = st.first_dirty_offset,
        cleaned_to = st.end_offset,
        segment_mb = format!("{:.2}", st.segment_bytes_cleaned as f64 / 1e6),
        written_mb = format!("{:.2}", st.bytes_written as f64 / 1e6),
        records_read = st.records_read,
        records_retained = st.records_retained,
        tombstones_removed = st.tombstones_removed,
        aborted_batches_removed = st.aborted_batches_removed,
        txn_markers_removed = st.txn_markers_removed,
        segments_swapped = st.segments_swapped,
        map_entries = st.map_entries,
        elapsed_ms = st.elapsed.as_millis() as u64,
        mb_per_sec = format!("{:.1}", st.mb_per_sec()),
        cleaner_memory_mb = format!("{:.2}", st.peak_memory_bytes as f64 / 1e6),
        cleaner_peak_memory_mb = format!("{:.2}", peak as f64 / 1e6),
        process_peak_rss_mb = format!("{:.1}", process_peak_rss_bytes().unwrap_or(0) as f64 / 1e6),
        "log cleaner cleaned log"
    );
}
