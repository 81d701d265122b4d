//! Log directory failure handling (Kafka's `LogDirFailureHandler`, KIP-112; KRaft reporting per KIP-858),
//! one failure domain per data directory of `log.dirs`, and recovery without a restart (beyond Kafka).
//!
//! The first write or fsync failure of any log (ENOSPC, EIO, ...) marks its data dir offline
//! ([`storage::LogDirHealth`]) and wakes [`run`], which
//! 1. takes every log of that dir offline: appends answer KAFKA_STORAGE_ERROR (56) at once, standalone
//!    too (no hang), reads of what was written go on; the broker's other dirs go on taking writes;
//! 2. in a cluster, heartbeats at once with the dir's id among its `OfflineLogDirs` (the controller moves
//!    the leaderships of the replicas in that dir to other ISR members, drops those replicas from their
//!    ISRs and elects them nowhere meanwhile; a broker with every dir offline is treated as before: all
//!    of its leaderships move);
//! 3. every [`PROBE_INTERVAL`] probes the dir (write + fsync + delete a page-sized file); after a
//!    successful probe every log of it is reopened with recovery (a torn tail is cut to the last valid
//!    batch), the dir is online again, its followers rejoin their leaders' fetchers (truncate by epoch,
//!    catch up, ISR expansion by the leader) and the next heartbeat reports the dir online, which makes
//!    its replicas eligible again.

use std::sync::Arc;
use std::time::Duration;

use replica::replica_manager::ReplicaManager;
use tokio::sync::{watch, Notify};

/// Tells the controller which of this broker's data dirs are offline now (indexes into `log.dirs`; empty:
/// every dir online), called on each change: a cluster member's next heartbeat carries their directory
/// ids (KIP-858); a standalone broker has no one to tell.
pub type ReportLogDir = Arc<dyn Fn(Vec<usize>) + Send + Sync>;

/// How often an offline data dir is probed.
pub const PROBE_INTERVAL: Duration = Duration::from_secs(1);

/// How the background storage tasks (this one, the log maintenance) run their blocking file I/O: on
/// tokio's blocking pool in a broker; inline in the deterministic simulation (a thread outside turmoil's
/// scheduler would make a run depend on more than its seed). Their wall clock is the `LogManager`'s.
#[derive(Clone, Copy, Debug)]
pub struct BackgroundIo {
    /// Run the I/O on the calling task instead of the blocking pool.
    pub inline: bool,
}

impl BackgroundIo {
    /// A broker's: the blocking pool.
    pub fn blocking_pool() -> Self {
        BackgroundIo { inline: false }
    }

    /// Runs `f` (blocking file I/O). Errors: `f` panicked on the blocking pool (the message).
    pub async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, String> {
        if self.inline {
            return Ok(f());
        }
        tokio::task::spawn_blocking(f)
            .await
            .map_err(|e| e.to_string())
    }
}

/// Runs until `shutdown`: reacts to a data dir going offline and brings it back once healthy (see the
/// module docs); `report` is called with the offline dirs on each change.
pub async fn run(
    replica_manager: Arc<ReplicaManager>,
    report: ReportLogDir,
    shutdown: watch::Receiver<bool>,
) {
    run_with(
        replica_manager,
        report,
        shutdown,
        BackgroundIo::blocking_pool(),
    )
    .await;
}

/// [`run`] with its I/O and clock seam (see [`BackgroundIo`]).
pub async fn run_with(
    replica_manager: Arc<ReplicaManager>,
    report: ReportLogDir,
    mut shutdown: watch::Receiver<bool>,
    io: BackgroundIo,
) {
    let log_manager = replica_manager.log_manager().clone();
    let wake = Arc::new(Notify::new());
    for health in log_manager.dir_healths() {
        let w = wake.clone();
        health.set_listener(move |_| w.notify_one());
    }
    // The dirs whose logs were taken offline (and reported) since they last failed.
    let mut handled = vec![false; log_manager.dirs().len()];
    loop {
        let offline = log_manager.offline_dirs();
        let fresh: Vec<usize> = offline.iter().copied().filter(|&i| !handled[i]).collect();
        if !fresh.is_empty() {
            for i in fresh {
                let lm = log_manager.clone();
                let _ = io.run(move || lm.take_dir_offline(i)).await;
                handled[i] = true;
            }
            report(offline);
            continue;
        }
        // All online: wait for a failure (the listeners); else probe again after the interval.
        let wait = if offline.is_empty() {
            Duration::from_secs(3600)
        } else {
            PROBE_INTERVAL
        };
        tokio::select! {
            _ = wake.notified() => continue,
            _ = tokio::time::sleep(wait) => {}
            _ = shutdown.changed() => return,
        }
        if offline.is_empty() || *shutdown.borrow() {
            continue;
        }
        let mut changed = false;
        for i in offline {
            let lm = log_manager.clone();
            match io.run(move || lm.try_recover_dir(i)).await {
                Ok(Ok(true)) => {
                    handled[i] = false;
                    changed = true;
                    replica_manager.log_dir_recovered(i);
                }
                Ok(Ok(false)) => handled[i] = false,
                Ok(Err(e)) => tracing::debug!(dir = i, error = %e, "log directory still failing"),
                Err(e) => tracing::error!(dir = i, error = %e, "log directory recovery panicked"),
            }
        }
        if changed {
            report(log_manager.offline_dirs());
        }
    }
}
