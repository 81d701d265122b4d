//! Log directory failure handling (Kafka's `LogDirFailureHandler`, KIP-112; KRaft reporting per KIP-858),
//! with Runnel's one data dir per broker, and recovery without a restart (beyond Kafka).
//!
//! The first write or fsync failure of any log (ENOSPC, EIO, ...) marks the data dir offline
//! ([`storage::LogDirHealth`]) and wakes [`run`], which
//! 1. takes every log of the dir offline: appends answer KAFKA_STORAGE_ERROR (56) at once, standalone
//!    too (no hang), reads of what was written go on;
//! 2. in a cluster, heartbeats at once with `log_dir_offline` (the controller moves the broker's
//!    leaderships to other ISR members, drops it from every ISR and elects it nowhere meanwhile);
//! 3. every [`PROBE_INTERVAL`] probes the dir (write + fsync + delete a page-sized file); after a
//!    successful probe every log is reopened with recovery (a torn tail is cut to the last valid batch),
//!    the dir is online again, followers rejoin their leaders' fetchers (truncate by epoch, catch up,
//!    ISR expansion by the leader) and the next heartbeat reports the dir online, which makes the broker
//!    eligible again.

use std::sync::Arc;
use std::time::Duration;

use replica::replica_manager::ReplicaManager;
use tokio::sync::{watch, Notify};

/// Tells the controller whether this broker's data dir is offline (`true`) or online again (`false`): a
/// cluster member's next heartbeat carries it (KIP-858); a standalone broker has no one to tell.
pub type ReportLogDir = Arc<dyn Fn(bool) + Send + Sync>;

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

/// Runs until `shutdown`: reacts to the data dir going offline and brings it back once healthy (see
/// the module docs); `report` is called on each change of the dir's state.
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
    let w = wake.clone();
    log_manager
        .dir_health()
        .set_listener(move |_| w.notify_one());
    let mut handled = false;
    loop {
        let offline = log_manager.dir_health().is_offline();
        if offline && !handled {
            let lm = log_manager.clone();
            let _ = io.run(move || lm.take_dir_offline()).await;
            handled = true;
            report(true);
            continue;
        }
        // Online: wait for a failure (the listener); offline: probe again after the interval.
        let wait = if offline {
            PROBE_INTERVAL
        } else {
            Duration::from_secs(3600)
        };
        tokio::select! {
            _ = wake.notified() => continue,
            _ = tokio::time::sleep(wait) => {}
            _ = shutdown.changed() => return,
        }
        if !offline || *shutdown.borrow() {
            continue;
        }
        let lm = log_manager.clone();
        let recovered = io.run(move || lm.try_recover_dir()).await;
        match recovered {
            Ok(Ok(true)) => {
                handled = false;
                replica_manager.log_dir_recovered();
                report(false);
            }
            Ok(Ok(false)) => handled = false,
            Ok(Err(e)) => tracing::debug!(error = %e, "log directory still failing"),
            Err(e) => tracing::error!(error = %e, "log directory recovery panicked"),
        }
    }
}
