//! The broker's lifecycle: [`Server::start`] is the one composition root (every service is built once, in
//! [`Services::build`], and shared), and [`Server::shutdown`] stops it cleanly.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use controller::{ControllerConfig, ControllerSeams, ControllerServer, ControllerTuning};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use types::{BrokerId, Clock};

use crate::acls::{authorizer_config, AclAdmin, AclCache, AclPublisher, Authorizer, LocalAclAdmin};
use crate::cluster::{
    BrokerCluster, ControllerLink, QuorumAclAdmin, QuorumBrokerConfigAdmin, QuorumQuotaAdmin,
    QuorumTopicAdmin,
};
use crate::config::{bind_addr, keys, BrokerConfig};
use crate::config_admin::{
    BrokerConfigAdmin, BrokerConfigManager, DynamicConfigPublisher, LocalBrokerConfigAdmin,
};
use crate::dynamic_config::DynamicBrokerConfig;
use crate::group_coordinator::{GroupCoordinatorPublisher, GroupCoordinatorService};
use crate::log_dirs;
use crate::metadata::MetadataStore;
use crate::metadata_cache::{LocalMetadataCache, MetadataCache};
use crate::observability::MetricsEndpoint;
use crate::publisher::Publishers;
use crate::quota::replication::{ReplicationQuotaManager, ReplicationSide};
use crate::quota::{ConnectionQuotaConfig, LocalQuotaAdmin, QuotaPublisher, Quotas};
use crate::scram::ScramCredentialCache;
use crate::security::controller::ControllerListenerSecurity;
use crate::security::sasl::client::SaslConnector;
use crate::security::sasl::{SaslClientConfig, SaslListener};
use crate::security::{TlsConnector, TlsListener};
use crate::server::apis::KafkaApis;
use crate::server::network::{self, ListenerSecurity};
use crate::topic_admin::{LocalTopicAdmin, TopicAdmin};
use crate::topic_config::cleaner_config;
use crate::topics::TopicManager;
use replica::cluster_link::{ClusterLink, StandaloneLink};
use replica::replica_manager::ReplicaManager;
use replica::transport::{Connector, TcpConnector};

/// A running broker (and, in cluster mode, possibly a controller).
pub struct Server {
    replica_manager: Option<Arc<ReplicaManager>>,
    controller: Option<ControllerServer>,
    cluster: Option<Arc<BrokerCluster>>,
    log_threads: Option<storage::LogThreads>,
    shutdown: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    local_addr: std::net::SocketAddr,
    listener_addrs: Vec<(String, SocketAddr)>,
}

/// A bound listener socket with its security setup.
struct BoundListener {
    tcp: TcpListener,
    security: ListenerSecurity,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("local_addr", &self.local_addr)
            .field("controller", &self.controller.is_some())
            .field("cluster", &self.cluster)
            .finish()
    }
}

impl Server {
    /// Opens the data directory (recovering logs as needed), binds the listener, and starts serving.
    ///
    /// With `listeners` on port 0 the kernel picks a free port; an advertised listener on port 0 then
    /// advertises that bound port (see [`Server::local_addr`]).
    ///
    /// This is the one composition root: every service (dynamic configs, logs, ReplicaManager, the topic
    /// admin of the mode, TopicManager, group coordinator, request handlers) is built once, here, and shared.
    pub async fn start(mut config: BrokerConfig) -> anyhow::Result<Server> {
        let started = std::time::Instant::now();
        // SCRAM credentials: read by the SASL listeners, filled by the credential admin of the mode.
        let credentials = Arc::new(ScramCredentialCache::new());
        let listeners = if config.process_roles.broker {
            bind_listeners(&mut config, &credentials).await?
        } else {
            Vec::new()
        };
        let metrics = MetricsEndpoint::bind(&config, config.process_roles.broker).await?;
        let listener_addrs = listeners
            .iter()
            .map(|l| Ok((l.security.name.to_string(), l.tcp.local_addr()?)))
            .collect::<std::io::Result<Vec<_>>>()?;
        let voters = resolve_voters(&config)?;
        let cluster_id = cluster_id(&config);
        // Both ends of the controller listener (issue 14): its server, and how raft peers and clients connect.
        let controller_security = match config.is_cluster() {
            true => Some(
                ControllerListenerSecurity::new(&config, config.process_roles.controller)
                    .context("controller listener")?,
            ),
            false => None,
        };
        // A controller runs first: a broker of the same process registers with the quorum it is part of.
        let controller = match &controller_security {
            Some(security) => {
                start_controller(&config, &voters, cluster_id.as_deref(), security).await?
            }
            None => None,
        };
        let Some(&(_, local_addr)) = listener_addrs.first() else {
            let (shutdown, _) = watch::channel(false);
            let local_addr = match &controller {
                Some(c) => c.local_addr(),
                None => anyhow::bail!("a process without the broker role runs a controller"),
            };
            return Ok(Server {
                replica_manager: None,
                log_threads: None,
                shutdown,
                tasks: Vec::new(),
                local_addr,
                listener_addrs,
                controller,
                cluster: None,
            });
        };
        let controller_transport = controller_security.as_ref().map(|s| s.transport());
        let services = Services::build(
            &config,
            voters,
            cluster_id.as_deref(),
            credentials,
            controller_transport,
        )?;
        log_dirs::ensure_and_register(&config, &services.metadata, services.cluster.as_deref())?;
        // TLS listeners follow dynamic `listener.name.<l>.ssl.*` changes (a standalone broker's persisted ones
        // apply now, a cluster member's with its first image); so does a combined process's controller listener.
        let controller_tls = controller_security.as_ref().and_then(|s| s.tls_listener());
        let broker_tls = listeners.iter().filter_map(|l| l.security.tls.clone());
        for tls in broker_tls.chain(controller_tls) {
            tls.reload(&services.dynamic.effective())?;
            services.dynamic.add_reconfigurable(tls);
        }
        let (shutdown, shutdown_rx) = watch::channel(false);
        let mut tasks = services.spawn(listeners, &config, shutdown_rx.clone());
        let status = controller.as_ref().map(|c| c.status());
        tasks.extend(metrics.start(
            &services.apis,
            &services.replica_manager,
            status,
            shutdown_rx,
        ));
        let listen: Vec<String> = listener_addrs
            .iter()
            .map(|(name, a)| format!("{name}://{a}"))
            .collect();
        tracing::info!(
            listen = %listen.join(","),
            advertised = %config.advertised_listener,
            node_id = config.node_id.get(),
            cluster_id = services.metadata.cluster_id(),
            data_dir = %config.log_dir.display(),
            startup_ms = started.elapsed().as_millis() as u64,
            "runnel broker started"
        );
        Ok(Server {
            replica_manager: Some(services.replica_manager),
            log_threads: Some(services.log_threads),
            shutdown,
            tasks,
            local_addr,
            listener_addrs,
            controller,
            cluster: services.cluster,
        })
    }

    /// The first bound listener's address (useful with port 0).
    pub fn local_addr(&self) -> std::net::SocketAddr {
        self.local_addr
    }

    /// Every bound listener: (name, address).
    pub fn listener_addrs(&self) -> &[(String, SocketAddr)] {
        &self.listener_addrs
    }

    /// Stops accepting and serving, then flushes and closes every log and writes the clean-shutdown marker.
    ///
    /// In cluster mode the broker first asks for controlled shutdown (its leaderships move to other ISR
    /// members, bounded by 30 s), and the controller stops last.
    pub async fn shutdown(self) -> anyhow::Result<()> {
        if let Some(c) = &self.cluster {
            c.controlled_shutdown(Duration::from_secs(30)).await;
        }
        let _ = self.shutdown.send(true);
        for t in self.tasks {
            let _ = t.await;
        }
        if let Some(threads) = self.log_threads {
            tokio::task::spawn_blocking(move || threads.shutdown()).await?;
        }
        if let Some(rm) = self.replica_manager {
            tokio::task::spawn_blocking(move || rm.shutdown())
                .await?
                .context("closing logs")?;
        }
        if let Some(controller) = self.controller {
            controller
                .shutdown()
                .await
                .context("stopping the controller")?;
        }
        tracing::info!("runnel broker stopped cleanly");
        Ok(())
    }

    /// The broker's cluster membership (cluster mode only).
    pub fn cluster(&self) -> Option<&Arc<BrokerCluster>> {
        self.cluster.as_ref()
    }
}

/// Binds every broker listener and sets up its security (the TLS server side of SSL and SASL_SSL listeners,
/// the SASL settings of SASL_PLAINTEXT and SASL_SSL ones, checking `credentials`). An advertised listener on
/// port 0 advertises its listener's bound port.
async fn bind_listeners(
    config: &mut BrokerConfig,
    credentials: &Arc<ScramCredentialCache>,
) -> anyhow::Result<Vec<BoundListener>> {
    let mut bound = Vec::new();
    for l in config.listeners.listeners.clone() {
        let name = l.name().to_string();
        let protocol = l.security_protocol;
        let tls = match protocol.uses_tls() {
            true => Some(Arc::new(TlsListener::new(config, &name)?)),
            false => None,
        };
        let sasl = match protocol.uses_sasl() {
            true => Some(Arc::new(SaslListener::new(
                config,
                &name,
                credentials.clone(),
            )?)),
            false => None,
        };
        if let Some(s) = &sasl {
            s.spawn_background_tasks();
        }
        let addr = bind_addr(&l.endpoint)?;
        let tcp = TcpListener::bind(addr)
            .await
            .with_context(|| format!("binding {name} listener {addr}"))?;
        let port = tcp.local_addr()?.port();
        for a in config.listeners.advertised.iter_mut() {
            if a.name == name && a.port == 0 {
                a.port = port;
            }
        }
        let security = ListenerSecurity {
            name: name.as_str().into(),
            protocol: l.security_protocol,
            tls,
            sasl,
        };
        bound.push(BoundListener { tcp, security });
    }
    if let Some(e) = config.listeners.inter_broker() {
        config.advertised_listener = e.clone();
    }
    Ok(bound)
}

/// The replica fetchers' connector: TLS when the inter-broker listener uses it, else plain TCP; on a SASL
/// inter-broker listener every connection then logs in (`sasl.mechanism.inter.broker.protocol`).
fn fetcher_connector(config: &BrokerConfig) -> anyhow::Result<Arc<dyn Connector>> {
    let listeners = &config.listeners;
    let name = &listeners.inter_broker_listener_name;
    let protocol = listeners.inter_broker_protocol();
    let transport: Arc<dyn Connector> = match protocol.uses_tls() {
        true => Arc::new(TlsConnector::new(config, name)?),
        false => Arc::new(TcpConnector),
    };
    if !protocol.uses_sasl() {
        return Ok(transport);
    }
    let login = SaslClientConfig::inter_broker(config, name)?;
    Ok(Arc::new(SaslConnector::new(transport, login)))
}

/// Starts this process's controller (a voter, or joining through bootstrap servers) in a cluster.
async fn start_controller(
    config: &BrokerConfig,
    voters: &BTreeMap<BrokerId, SocketAddr>,
    cluster_id: Option<&str>,
    security: &ControllerListenerSecurity,
) -> anyhow::Result<Option<ControllerServer>> {
    if !(config.is_cluster() && config.process_roles.controller) {
        return Ok(None);
    }
    let endpoint = config.controller_endpoint().context("no listener")?;
    let listen = bind_addr(endpoint)?;
    let tcp = TcpListener::bind(listen)
        .await
        .with_context(|| format!("binding the controller listener {listen}"))?;
    let seams = ControllerSeams {
        transport: security.transport(),
        ..ControllerSeams::default()
    };
    let controller_config = ControllerConfig {
        node_id: config.node_id,
        voters: voters.clone(),
        bootstrap_servers: config.controller_bootstrap_servers(),
        listen,
        data_dir: config.log_dir.clone(),
        cluster_id: cluster_id.unwrap_or_default().to_string(),
        broker_session_timeout_ms: config.broker_session_timeout_ms,
        default_num_partitions: config.num_partitions,
        default_replication_factor: config.default_replication_factor,
        unclean_leader_election: config.unclean_leader_election_enable,
        auto_leader_rebalance: config.auto_leader_rebalance_enable,
        leader_imbalance_check_interval_ms: config.leader_imbalance_check_interval_ms,
        balancer: config.balancer.clone(),
    };
    let controller = ControllerServer::start_with_seams(
        controller_config,
        security.listener(tcp),
        ControllerTuning::default(),
        seams,
    )
    .await
    .context("starting the controller")?;
    tracing::info!(
        controller_listen = %controller.local_addr(),
        protocol = ?security.protocol(),
        "controller started"
    );
    Ok(Some(controller))
}

/// The broker's services, each built once and shared by `Arc`.
struct Services {
    metadata: Arc<MetadataStore>,
    log_manager: Arc<storage::LogManager>,
    log_threads: storage::LogThreads,
    replica_manager: Arc<ReplicaManager>,
    dynamic: Arc<DynamicBrokerConfig>,
    groups: Arc<GroupCoordinatorService>,
    apis: Arc<KafkaApis>,
    cluster: Option<Arc<BrokerCluster>>,
    publishers: Arc<Publishers>,
}

impl Services {
    /// Opens the metadata, the dynamic configs and the logs in the data directory, and wires the services
    /// of the mode: standalone (a [`LocalTopicAdmin`], every local partition opened as leader) or cluster
    /// member (a [`QuorumTopicAdmin`]; partitions arrive with metadata images).
    fn build(
        config: &BrokerConfig,
        voters: BTreeMap<BrokerId, SocketAddr>,
        cluster_id: Option<&str>,
        credentials: Arc<ScramCredentialCache>,
        controller_transport: Option<Arc<dyn controller::Transport>>,
    ) -> anyhow::Result<Services> {
        let dir = &config.log_dir;
        authorizer_config(config).map_err(anyhow::Error::msg)?;
        crate::metadata_cache::replica_selector(config).map_err(anyhow::Error::msg)?;
        ConnectionQuotaConfig::from_config(config)?;
        let metadata = Arc::new(
            match cluster_id {
                Some(id) => MetadataStore::open_for_cluster(dir, config.node_id.get(), id),
                None => MetadataStore::open(dir, config.node_id.get()),
            }
            .with_context(|| format!("opening metadata in {}", dir.display()))?,
        );
        // Dynamic broker configs: the data dir's file standalone, the metadata log's in a cluster.
        let dynamic = Arc::new(match cluster_id {
            Some(_) => DynamicBrokerConfig::following_image(config.clone()),
            None => DynamicBrokerConfig::load(config.clone())
                .context("loading dynamic broker configs")?,
        });
        let log_manager = Arc::new(crate::log_dirs::open_logs(config, &metadata, &dynamic)?);
        // `log.cleaner.enable=false` leaves compacted topics uncompacted, as in Kafka.
        let effective = dynamic.effective();
        let cleaner = (effective.get(keys::LOG_CLEANER_ENABLE)).then(|| cleaner_config(&effective));
        let rate_config = dynamic.clone();
        let move_rate: storage::MoveRate = Box::new(move || {
            let rate = keys::REPLICA_ALTER_LOG_DIRS_IO_MAX_BYTES_PER_SECOND;
            rate_config.effective().get(rate).max(0) as u64
        });
        let log_threads = storage::LogThreads::start(log_manager.clone(), cleaner, move_rate)
            .context("starting the log cleaner and the log mover")?;
        let cluster = config.is_cluster().then(|| {
            let id = metadata.cluster_id();
            Arc::new(BrokerCluster::new(config, id, voters, controller_transport))
        });
        let link: Arc<dyn ClusterLink> = match &cluster {
            Some(c) => Arc::new(ControllerLink(c.clone())),
            None => Arc::new(StandaloneLink),
        };
        let follower_quota = Arc::new(ReplicationQuotaManager::new(
            ReplicationSide::Follower,
            config.node_id,
            dynamic.clone(),
            metadata.clone(),
            Arc::new(types::SystemClock),
        ));
        let replica_manager = Arc::new(
            ReplicaManager::with_seams(
                log_manager.clone(),
                config.node_id,
                link,
                config.replica_lag_time_max_ms,
                Arc::new(types::SystemClock),
                fetcher_connector(config)?,
            )
            .with_follower_quota(follower_quota),
        );
        let publishers = Arc::new(Publishers::default());
        let apis = wire(
            config,
            metadata.clone(),
            dynamic.clone(),
            replica_manager.clone(),
            cluster.clone(),
            &publishers,
            credentials,
        );
        if cluster.is_none() {
            // Standalone: every local partition is led here. (A cluster member's arrive with images.)
            apis.topics()
                .load_all()
                .context("opening topic partitions")?;
        }
        let groups = apis.group_coordinator().clone();
        Ok(Services {
            metadata,
            log_manager,
            log_threads,
            replica_manager,
            dynamic,
            groups,
            apis,
            cluster,
            publishers,
        })
    }

    /// Starts serving `listeners` and the background tasks: group timers and loading, log maintenance, and
    /// in a cluster the metadata listener with its publishers, registration and heartbeats.
    fn spawn(
        &self,
        listeners: Vec<BoundListener>,
        config: &BrokerConfig,
        shutdown_rx: watch::Receiver<bool>,
    ) -> Vec<JoinHandle<()>> {
        let mut tasks: Vec<JoinHandle<()>> = listeners
            .into_iter()
            .map(|l| {
                tokio::spawn(network::serve(
                    l.tcp,
                    l.security,
                    self.apis.clone(),
                    shutdown_rx.clone(),
                ))
            })
            .collect();
        let groups = self.groups.clone();
        tasks.push(tokio::spawn(groups.clone().run_timers(shutdown_rx.clone())));
        let shares = self.apis.shares().clone();
        tasks.push(tokio::spawn(shares.run_timers(shutdown_rx.clone())));
        // Replays __consumer_offsets off the async workers; group requests get COORDINATOR_LOAD_IN_PROGRESS
        // until it is done.
        tokio::task::spawn_blocking(move || groups.load());
        let transactions = self.apis.transaction_coordinator().clone();
        tasks.push(tokio::spawn(transactions.start(shutdown_rx.clone())));
        tasks.push(tokio::spawn(log_maintenance(
            config.clone(),
            self.log_manager.clone(),
            shutdown_rx.clone(),
            crate::log_dir_failure::BackgroundIo::blocking_pool(),
        )));
        let report = crate::cluster_reports::log_dir_reporter(self.cluster.clone());
        let failures =
            crate::log_dir_failure::run(self.replica_manager.clone(), report, shutdown_rx.clone());
        tasks.push(tokio::spawn(failures));
        let Some(c) = &self.cluster else {
            return tasks;
        };
        c.reports().watch(&self.replica_manager);
        tasks.push(tokio::spawn(c.clone().run_metadata_listener(
            self.dynamic.clone(),
            self.metadata.clone(),
            self.replica_manager.clone(),
            self.publishers.clone(),
            shutdown_rx.clone(),
        )));
        // Registration waits for the quorum to elect a leader, which needs the other voters: it runs in
        // the background so that a cluster's processes can start in any order.
        let c = c.clone();
        let host = config.advertised_listener.host.clone();
        let port = config.advertised_listener.port;
        let interval = Duration::from_millis(config.broker_heartbeat_interval_ms.max(50) as u64);
        tasks.push(tokio::spawn(async move {
            let registered = tokio::select! {
                r = c.register(&host, port, Duration::from_secs(3600)) => r,
                _ = wait_true(shutdown_rx.clone()) => return,
            };
            if let Err(e) = registered {
                tracing::error!(error = %e, "broker registration failed");
                return;
            }
            c.run_heartbeats(interval, host, port, shutdown_rx).await;
        }));
        tasks
    }
}

/// Wires the request-serving services over opened storage: the topic admin of the mode, the one
/// TopicManager, the group coordinator and the request handlers. In a cluster, producer-id blocks come from
/// the controller.
pub(crate) fn wire(
    config: &BrokerConfig,
    metadata: Arc<MetadataStore>,
    dynamic: Arc<DynamicBrokerConfig>,
    replica_manager: Arc<ReplicaManager>,
    cluster: Option<Arc<BrokerCluster>>,
    publishers: &Arc<Publishers>,
    credentials: Arc<ScramCredentialCache>,
) -> Arc<KafkaApis> {
    let seams = WireSeams::default();
    wire_with(
        config,
        metadata,
        dynamic,
        replica_manager,
        cluster,
        publishers,
        credentials,
        seams,
    )
}

/// What a deterministic simulation (issue 13) replaces in [`wire`]; a broker uses the default (none).
#[derive(Default)]
pub(crate) struct WireSeams {
    /// Handlers read cluster metadata (FindCoordinator's `__consumer_offsets` leaders, brokers) from this
    /// cache instead of the mode's: the images the simulation publishes.
    pub metadata_cache: Option<Arc<dyn MetadataCache>>,
    /// The group coordinator coordinates only the `__consumer_offsets` partitions the published images say
    /// this broker leads (cluster mode) and takes these seams (see
    /// [`GroupCoordinatorService::with_seams`]): clock, where loads run, member-id seed.
    pub groups: Option<(Arc<dyn Clock>, crate::log_dir_failure::BackgroundIo, u64)>,
}

/// [`wire`] with a simulation's `seams`.
#[allow(clippy::too_many_arguments)] // `wire`'s services plus the seams
pub(crate) fn wire_with(
    config: &BrokerConfig,
    metadata: Arc<MetadataStore>,
    dynamic: Arc<DynamicBrokerConfig>,
    replica_manager: Arc<ReplicaManager>,
    cluster: Option<Arc<BrokerCluster>>,
    publishers: &Arc<Publishers>,
    credentials: Arc<ScramCredentialCache>,
    seams: WireSeams,
) -> Arc<KafkaApis> {
    let (admin, cache): (Arc<dyn TopicAdmin>, Arc<dyn MetadataCache>) = match &cluster {
        Some(c) => (Arc::new(QuorumTopicAdmin(c.clone())), c.clone()),
        None => {
            let cache = Arc::new(LocalMetadataCache::new(config, metadata.clone()));
            let admin = LocalTopicAdmin::new(
                metadata.clone(),
                replica_manager.clone(),
                dynamic.clone(),
                cache.clone(),
                publishers.clone(),
            );
            (Arc::new(admin), cache)
        }
    };
    let topics = Arc::new(TopicManager::new(
        metadata.clone(),
        replica_manager.clone(),
        dynamic.clone(),
        admin,
    ));
    let config_admin: Arc<dyn BrokerConfigAdmin> = match &cluster {
        Some(c) => {
            // First publisher: later ones (and the partitions' LogConfigs) see the image's broker configs.
            let publisher = DynamicConfigPublisher::new(dynamic.clone(), topics.clone());
            publishers.install(Arc::new(publisher));
            Arc::new(QuorumBrokerConfigAdmin::new(c.clone(), dynamic.clone()))
        }
        None => Arc::new(LocalBrokerConfigAdmin::new(dynamic.clone(), topics.clone())),
    };
    let broker_configs = Arc::new(BrokerConfigManager::new(dynamic.clone(), config_admin));
    let authorizer = wire_authorizer(config, &metadata, cluster.as_ref(), publishers);
    let scram = crate::scram::wire_scram(&metadata, cluster.as_ref(), publishers, credentials);
    let groups = GroupCoordinatorService::new(
        config.clone(),
        metadata.clone(),
        replica_manager.clone(),
        topics.clone(),
        cluster.is_some(),
    );
    let groups = Arc::new(match seams.groups {
        Some((clock, io, seed)) => groups.with_cluster_mode().with_seams(clock, io, seed),
        None => groups,
    });
    let cache = seams.metadata_cache.unwrap_or(cache);
    publishers.install(Arc::new(GroupCoordinatorPublisher {
        groups: groups.clone(),
        node_id: config.node_id,
    }));
    if let Some(c) = &cluster {
        let c = c.clone();
        metadata.set_producer_id_source(Arc::new(move || {
            let c = c.clone();
            Box::pin(async move { c.allocate_producer_ids().await.map_err(|e| e.message) })
        }));
    }
    let quotas = wire_quotas(config, &metadata, &dynamic, cluster.as_ref(), publishers);
    let quorum = crate::quorum::metadata_quorum(config.node_id, cluster.as_ref(), &cache);
    let transactions = crate::txn_coordinator::TransactionCoordinatorService::new(
        config.clone(),
        metadata.clone(),
        replica_manager.clone(),
        topics.clone(),
        cache.clone(),
        groups.clone(),
    )
    .installed(publishers);
    let telemetry = crate::client_metrics::wire(config, &metadata, cluster.as_ref(), publishers);
    let group_config_admin = crate::group_configs::wire(&metadata, cluster.as_ref());
    let apis = KafkaApis::new(
        config.clone(),
        metadata,
        replica_manager,
        topics,
        groups,
        broker_configs,
        cache,
        authorizer,
        quotas,
        scram,
        quorum,
        transactions,
        telemetry,
    );
    Arc::new(apis.with_group_config_admin(group_config_admin))
}

/// Client quotas (from the registry standalone, from each metadata image in a cluster), the connection
/// limits ([`Services::build`] refused invalid ones) and the leader's replication throttle.
fn wire_quotas(
    config: &BrokerConfig,
    metadata: &Arc<MetadataStore>,
    dynamic: &Arc<DynamicBrokerConfig>,
    cluster: Option<&Arc<BrokerCluster>>,
    publishers: &Arc<Publishers>,
) -> Arc<Quotas> {
    Quotas::new(config, metadata, dynamic, |clients| match cluster {
        Some(c) => {
            publishers.install(Arc::new(QuotaPublisher(clients.clone())));
            Arc::new(QuorumQuotaAdmin(c.clone()))
        }
        None => Arc::new(LocalQuotaAdmin::new(metadata.clone(), clients.clone())),
    })
}

/// The authorizer of `authorizer.class.name` (`None` when empty; [`Services::build`] refused other values):
/// its ACLs come from the registry standalone, from each metadata image in a cluster.
fn wire_authorizer(
    config: &BrokerConfig,
    metadata: &Arc<MetadataStore>,
    cluster: Option<&Arc<BrokerCluster>>,
    publishers: &Arc<Publishers>,
) -> Option<Arc<Authorizer>> {
    let settings = authorizer_config(config).ok().flatten()?;
    let cache = Arc::new(AclCache::new(settings));
    let admin: Arc<dyn AclAdmin> = match cluster {
        Some(c) => {
            publishers.install(Arc::new(AclPublisher(cache.clone())));
            Arc::new(QuorumAclAdmin(c.clone()))
        }
        None => Arc::new(LocalAclAdmin::new(metadata.clone(), cache.clone())),
    };
    Some(Arc::new(Authorizer::new(cache, admin)))
}

/// Resolves `controller.quorum.voters` to socket addresses (empty in standalone mode).
fn resolve_voters(
    config: &BrokerConfig,
) -> anyhow::Result<std::collections::BTreeMap<BrokerId, std::net::SocketAddr>> {
    config
        .controller_quorum_voters
        .iter()
        .map(|(id, e)| Ok((*id, bind_addr(e)?)))
        .collect()
}

/// The cluster id of a cluster member: `cluster.id` if set, else derived from the voter set so that every
/// member of one quorum agrees without a formatting step (22-character base64url, as Kafka's). `None` in
/// standalone mode (the data dir keeps a random one).
fn cluster_id(config: &BrokerConfig) -> Option<String> {
    if !config.is_cluster() {
        return None;
    }
    if let Some(id) = &config.cluster_id {
        return Some(id.clone());
    }
    let voters: Vec<String> = config
        .controller_quorum_voters
        .iter()
        .map(|(id, e)| format!("{id}@{e}"))
        .collect();
    let text = voters.join(",");
    let mut bytes = [0u8; 16];
    for (i, chunk) in bytes.chunks_mut(4).enumerate() {
        let crc = crc32c::crc32c_append(i as u32, text.as_bytes());
        chunk.copy_from_slice(&crc.to_be_bytes());
    }
    Some(crate::metadata::base64url_uuid(uuid::Uuid::from_bytes(
        bytes,
    )))
}

/// Resolves once `rx` holds `true`.
async fn wait_true(mut rx: watch::Receiver<bool>) {
    while !*rx.borrow() {
        if rx.changed().await.is_err() {
            return;
        }
    }
}

/// Periodic log work: retention every `log.retention.check.interval.ms`, the flush policy every
/// `log.flush.scheduler.interval.ms` (and at least every second for `flush.ms` topics), and recovery-point /
/// log-start checkpoints every `log.flush.offset.checkpoint.interval.ms`. Runs its file I/O and reads the
/// time through `io` (the blocking pool and the system clock in a broker; the simulation's own).
pub(crate) async fn log_maintenance(
    config: BrokerConfig,
    log_manager: Arc<storage::LogManager>,
    mut shutdown: watch::Receiver<bool>,
    io: crate::log_dir_failure::BackgroundIo,
) {
    let tick =
        Duration::from_millis(config.log_flush_scheduler_interval_ms.clamp(100, 1000) as u64);
    let clock = log_manager.clock().clone();
    let mut next_retention = clock.now_ms() + config.log_retention_check_interval_ms.max(100);
    let mut next_checkpoint =
        clock.now_ms() + config.log_flush_offset_checkpoint_interval_ms.max(100);
    loop {
        tokio::select! {
            _ = tokio::time::sleep(tick) => {}
            _ = shutdown.changed() => return,
        }
        let now = clock.now_ms();
        let lm = log_manager.clone();
        let do_retention = now >= next_retention;
        let do_checkpoint = now >= next_checkpoint;
        if do_retention {
            next_retention = now + config.log_retention_check_interval_ms.max(100);
        }
        if do_checkpoint {
            next_checkpoint = now + config.log_flush_offset_checkpoint_interval_ms.max(100);
        }
        let result = io
            .run(move || -> Result<(), storage::StorageError> {
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
