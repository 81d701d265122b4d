//! The Runnel broker: configuration, the socket layer, request handlers, and the ReplicaManager that ties
//! them to the storage layer. [`Server::start`] brings a broker up; [`Server::shutdown`] takes it down
//! cleanly (stop accepting, flush and close every log, write the clean-shutdown marker).

pub mod apis;
pub mod config;
pub mod dynamic_config;
pub mod group_coordinator;
pub mod metadata;
pub mod network;
pub mod partition;
mod replica_fetcher;
pub mod replica_manager;
pub mod topics;

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::apis::KafkaApis;
use crate::config::{bind_addr, BrokerConfig};
use crate::metadata::MetadataStore;
use crate::replica_manager::{now_ms, ReplicaManager};

/// A running broker.
#[derive(Debug)]
pub struct Server {
    replica_manager: Arc<ReplicaManager>,
    log_cleaner: Option<storage::LogCleaner>,
    shutdown: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    local_addr: std::net::SocketAddr,
}

impl Server {
    /// Opens the data directory (recovering logs as needed), binds the listener, and starts serving.
    ///
    /// With `listeners` on port 0 the kernel picks a free port; an advertised listener on port 0 then
    /// advertises that bound port (see [`Server::local_addr`]).
    pub async fn start(mut config: BrokerConfig) -> anyhow::Result<Server> {
        let started = std::time::Instant::now();
        let addr = bind_addr(&config.listener)?;
        let listener = TcpListener::bind(addr)
            .await
            .with_context(|| format!("binding {addr}"))?;
        let local_addr = listener.local_addr()?;
        if config.advertised_listener.port == 0 {
            config.advertised_listener.port = local_addr.port();
        }
        let dir = config.log_dir.clone();
        let metadata = Arc::new(
            MetadataStore::open(&dir, config.node_id)
                .with_context(|| format!("opening metadata in {}", dir.display()))?,
        );
        let dynamic_config = Arc::new(
            dynamic_config::DynamicBrokerConfig::load(config.clone())
                .context("loading dynamic broker configs")?,
        );
        let log_manager = Arc::new(
            storage::LogManager::open(
                &dir,
                |topic| {
                    let overrides = metadata.topic(topic).map(|t| t.configs).unwrap_or_default();
                    topics::log_config(&dynamic_config.effective(), &overrides)
                },
                now_ms(),
            )
            .with_context(|| format!("opening logs in {}", dir.display()))?,
        );
        // `log.cleaner.enable=false` leaves compacted topics uncompacted, as in Kafka.
        let log_cleaner = if config.value("log.cleaner.enable").as_deref() == Some("true") {
            Some(
                storage::LogCleaner::start(
                    log_manager.clone(),
                    topics::cleaner_config(&dynamic_config.effective()),
                )
                .context("starting the log cleaner")?,
            )
        } else {
            None
        };
        let replica_manager = Arc::new(ReplicaManager::new(
            log_manager.clone(),
            config.node_id,
            Arc::new(crate::replica_manager::StandaloneLink),
            30_000,
        ));
        let apis = Arc::new(
            KafkaApis::new(config.clone(), metadata.clone(), replica_manager.clone())
                .with_dynamic_config(dynamic_config),
        );
        apis.load_topics().context("opening topic partitions")?;

        let (shutdown, shutdown_rx) = watch::channel(false);
        let mut tasks = vec![tokio::spawn(network::serve(
            listener,
            apis.clone(),
            shutdown_rx.clone(),
        ))];
        let groups = apis.group_coordinator().clone();
        tasks.push(tokio::spawn(groups.clone().run_timers(shutdown_rx.clone())));
        // Replays __consumer_offsets off the async workers; group requests get COORDINATOR_LOAD_IN_PROGRESS
        // until it is done.
        tokio::task::spawn_blocking(move || groups.load());
        tasks.push(tokio::spawn(log_maintenance(
            config.clone(),
            log_manager,
            shutdown_rx,
        )));
        tracing::info!(
            listen = %local_addr,
            advertised = %config.advertised_listener,
            node_id = config.node_id,
            cluster_id = metadata.cluster_id(),
            data_dir = %dir.display(),
            startup_ms = started.elapsed().as_millis() as u64,
            "runnel broker started"
        );
        Ok(Server {
            replica_manager,
            log_cleaner,
            shutdown,
            tasks,
            local_addr,
        })
    }

    /// The bound listener address (useful with port 0).
    pub fn local_addr(&self) -> std::net::SocketAddr {
        self.local_addr
    }

    /// Stops accepting and serving, then flushes and closes every log and writes the clean-shutdown marker.
    pub async fn shutdown(self) -> anyhow::Result<()> {
        let _ = self.shutdown.send(true);
        for t in self.tasks {
            let _ = t.await;
        }
        if let Some(cleaner) = self.log_cleaner {
            tokio::task::spawn_blocking(move || cleaner.shutdown()).await?;
        }
        let rm = self.replica_manager.clone();
        tokio::task::spawn_blocking(move || rm.shutdown())
            .await?
            .context("closing logs")?;
        tracing::info!("runnel broker stopped cleanly");
        Ok(())
    }
}

/// Periodic log work: retention every `log.retention.check.interval.ms`, the flush policy every
/// `log.flush.scheduler.interval.ms` (and at least every second for `flush.ms` topics), and recovery-point /
/// log-start checkpoints every `log.flush.offset.checkpoint.interval.ms`. Runs on the blocking pool since
/// it does file I/O.
async fn log_maintenance(
    config: BrokerConfig,
    log_manager: Arc<storage::LogManager>,
    mut shutdown: watch::Receiver<bool>,
) {
    let tick =
        Duration::from_millis(config.log_flush_scheduler_interval_ms.clamp(100, 1000) as u64);
    let mut next_retention = now_ms() + config.log_retention_check_interval_ms.max(100);
    let mut next_checkpoint = now_ms() + config.log_flush_offset_checkpoint_interval_ms.max(100);
    loop {
        tokio::select! {
            _ = tokio::time::sleep(tick) => {}
            _ = shutdown.changed() => return,
        }
        let now = now_ms();
        let lm = log_manager.clone();
        let do_retention = now >= next_retention;
        let do_checkpoint = now >= next_checkpoint;
        if do_retention {
            next_retention = now + config.log_retention_check_interval_ms.max(100);
        }
        if do_checkpoint {
            next_checkpoint = now + config.log_flush_offset_checkpoint_interval_ms.max(100);
        }
        let result = tokio::task::spawn_blocking(move || -> Result<(), storage::StorageError> {
            lm.flush_dirty(now);
            if do_retention {
                lm.run_retention(now);
            }
            if do_checkpoint {
                lm.checkpoint()?;
            }
            Ok(())
        })
        .await;
        match result {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::error!(error = %e, "log maintenance failed"),
            Err(e) => tracing::error!(error = %e, "log maintenance task panicked"),
        }
    }
}
