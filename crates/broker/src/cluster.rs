//! Cluster mode: a broker that is a member of a Raft-replicated metadata quorum (KIP-500, KIP-631).
//!
//! Active when `controller.quorum.voters` is set. The broker
//! - registers with the active controller (a new incarnation id per process; the reply is its broker
//!   epoch) and heartbeats every `broker.heartbeat.interval.ms`; the controller fences it after
//!   `broker.session.timeout.ms` of silence and moves its leaderships to other ISR members;
//! - follows the committed metadata log (`fetch_metadata` long-polls) and replays it into a local
//!   [`MetadataImage`]; every new image is *published*: the topic registry the request handlers read is
//!   replaced, and every partition this broker is a replica of is handed to the [`ReplicaManager`] as
//!   leader or follower with its leader epoch and ISR (partitions no longer assigned here are stopped and
//!   deleted);
//! - sends topic changes (CreateTopics, DeleteTopics, CreatePartitions, configs), dynamic broker configs
//!   (BROKER `ConfigRecord`s), elections, producer-id block requests and ISR changes (AlterPartition, KIP-497)
//!   to the controller; an admin change is answered once this broker has published an image at the metadata
//!   offset the controller's reply names (read-your-writes across the broker's handlers; an offset, unlike a
//!   condition on the topic, cannot be overtaken by a concurrent change);
//! - on SIGTERM, asks for controlled shutdown (heartbeats with `want_shutdown`) so that its leaderships
//!   move before it exits.
//!
//! Invariant: the ReplicaManager only ever sees partition states from a published image, in image order,
//! so a leader epoch it is given never goes backwards.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use controller::ControllerClient;
use futures::future::BoxFuture;
use imbl::ordmap::DiffItem;
use metadata::{
    ControllerError, CreateTopic, ElectionResult, ElectionType, MetadataImage, MetadataUpdate,
    PartitionRegistration, Reassignment, TopicImage, RESOURCE_TOPIC,
};
use parking_lot::RwLock;
use storage::StorageError;
use tokio::sync::watch;
use types::{BrokerEpoch, BrokerId, ProducerId};
use uuid::Uuid;

use crate::config::BrokerConfig;
use crate::dynamic_config::DynamicBrokerConfig;
use crate::error::{MetadataLag, TopicError};
use crate::metadata::{MetadataStore, TopicMetadata};
use crate::metadata_cache::{advertised_endpoints, broker_rack, ControllerEndpoint, MetadataCache};
use crate::publisher::Publishers;
use crate::topic_config::log_config;
use replica::cluster_link::ClusterLink;
use replica::replica_manager::{PartitionState, ReplicaManager};

pub use crate::cluster_admin::{
    QuorumAclAdmin, QuorumBrokerConfigAdmin, QuorumQuotaAdmin, QuorumScramAdmin, QuorumTopicAdmin,
};

/// How long a broker waits for its own image to show a change it asked the controller for.
const READ_YOUR_WRITES_TIMEOUT: Duration = Duration::from_secs(15);

/// A broker's membership in the cluster: controller client, registration, and the replayed metadata image.
pub struct BrokerCluster {
    node_id: BrokerId,
    client: ControllerClient,
    incarnation_id: Uuid,
    broker_epoch: AtomicI64,
    /// The active controller as last learned (-1 unknown).
    controller_id: std::sync::atomic::AtomicI32,
    image: RwLock<Arc<MetadataImage>>,
    /// The offset of the last image published to every [`MetadataPublisher`](crate::publisher::MetadataPublisher).
    published: watch::Sender<i64>,
    /// The controller quorum's voters as configured.
    controllers: Vec<ControllerEndpoint>,
    /// Every advertised listener, registered with the controller.
    listeners: Vec<metadata::BrokerEndpoint>,
    /// `broker.rack`, registered with the controller (rack-aware placement, KIP-36).
    rack: Option<String>,
    /// `inter.broker.listener.name`: whose endpoint of another broker this one connects to.
    inter_broker_listener: String,
    /// Its data directories, the offline ones and its replicas' directories, as reported (KIP-858).
    reports: crate::cluster_reports::BrokerReports,
    /// Wakes the heartbeat loop to report a log dir change at once.
    heartbeat_now: tokio::sync::Notify,
    /// Started with `controller.quorum.bootstrap.servers` instead of voters (KIP-853): the client's voters
    /// are refreshed from the active controller at registration and every few heartbeats.
    follows_bootstrap: bool,
    /// Heartbeats sent; every [`metadata::request::PARTITION_SIZES_EVERY`]th is followed by the partition
    /// sizes.
    heartbeats_sent: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for BrokerCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrokerCluster")
            .field("node_id", &self.node_id)
            .field("broker_epoch", &self.broker_epoch.load(Ordering::Relaxed))
            .field("image_offset", &self.image.read().offset)
            .finish()
    }
}

impl BrokerCluster {
    /// A member of cluster `cluster_id` (named in its BrokerRegistration) for `config` (cluster mode) whose
    /// controller client knows `voters` and connects through `transport` (the controller listener's;
    /// `None`: plain TCP).
    pub fn new(
        config: &BrokerConfig,
        cluster_id: &str,
        voters: BTreeMap<BrokerId, std::net::SocketAddr>,
        transport: Option<Arc<dyn controller::Transport>>,
    ) -> BrokerCluster {
        let client = match voters.is_empty() {
            // KIP-853: the bootstrap controllers stand in until the voters are learned.
            true => ControllerClient::bootstrap(&config.controller_bootstrap_addrs()),
            false => ControllerClient::new(voters),
        };
        let client = client
            .with_cluster_id(cluster_id)
            .with_session_attempt_timeout(Duration::from_millis(
                (config.broker_session_timeout_ms / 2).max(100) as u64,
            ));
        BrokerCluster {
            node_id: config.node_id,
            // Heartbeats and metadata fetches give up on a silent controller within half the session
            // (Kafka's heartbeat channel uses the same bound).
            client: match transport {
                Some(t) => client.with_transport(t),
                None => client,
            },
            incarnation_id: Uuid::new_v4(),
            broker_epoch: AtomicI64::new(-1),
            controller_id: std::sync::atomic::AtomicI32::new(-1),
            image: RwLock::new(Arc::new(MetadataImage::default())),
            published: watch::channel(-1).0,
            controllers: config
                .controller_quorum_voters
                .iter()
                .map(|(id, e)| (*id, e.host.clone(), e.port))
                .collect(),
            reports: Default::default(),
            heartbeat_now: Default::default(),
            heartbeats_sent: Default::default(),
            follows_bootstrap: config.controller_quorum_voters.is_empty(),
            listeners: advertised_endpoints(config),
            rack: broker_rack(config),
            inter_broker_listener: config.listeners.inter_broker_listener_name.clone(),
        }
    }

    /// Records which data dirs are offline now (indexes into `log.dirs`) and heartbeats at once to tell
    /// the controller (see [`crate::log_dir_failure`]).
    pub fn set_offline_log_dirs(&self, offline: Vec<usize>) {
        self.reports.set_offline_dirs(offline);
        self.heartbeat_now.notify_one();
    }

    /// What this broker reports of its storage (its data directories' ids are set there at startup).
    pub fn reports(&self) -> &crate::cluster_reports::BrokerReports {
        &self.reports
    }

    /// The heartbeat this broker sends now (KIP-631 BrokerHeartbeat with KIP-858's offline log dirs).
    fn heartbeat_request(&self, want_shutdown: bool) -> metadata::Heartbeat {
        self.heartbeats_sent.fetch_add(1, Ordering::Relaxed);
        metadata::Heartbeat {
            broker_id: self.node_id,
            broker_epoch: self.broker_epoch(),
            metadata_offset: self.image.read().offset,
            want_fence: false,
            want_shutdown,
            offline_log_dirs: self.reports.offline_log_dirs(),
        }
    }

    /// After a heartbeat: AssignReplicasToDirs for the replicas whose directory the image does not show
    /// yet, and every [`metadata::request::PARTITION_SIZES_EVERY`]th time the partition sizes. A failure
    /// is logged; the next heartbeat tries again.
    async fn send_reports(&self, heartbeats_sent: u64) {
        let (me, epoch) = (self.node_id, self.broker_epoch());
        if let Some(req) = self.reports.pending_assignments(me, epoch, &self.image()) {
            if let Err(e) = self.client.assign_replicas_to_dirs(req).await {
                tracing::debug!(error = %e, "AssignReplicasToDirs failed");
            }
        }
        if heartbeats_sent.is_multiple_of(metadata::request::PARTITION_SIZES_EVERY) {
            let sizes = metadata::PartitionSizes {
                broker_id: me,
                broker_epoch: epoch,
                sizes: self.reports.partition_sizes(),
            };
            if let Err(e) = self.client.report_partition_sizes(sizes).await {
                tracing::debug!(error = %e, "reporting partition sizes failed");
            }
        }
    }

    /// The controller client.
    pub fn client(&self) -> &ControllerClient {
        &self.client
    }

    /// The active controller (Raft leader of the metadata quorum) as last learned, if known.
    pub fn controller_id(&self) -> Option<BrokerId> {
        let id = BrokerId(self.controller_id.load(Ordering::Relaxed));
        (!id.is_none()).then_some(id)
    }

    /// Remembers the active controller the client last talked to.
    fn refresh_controller_id(&self) {
        if let Some(id) = self.client.leader_hint() {
            self.controller_id.store(id.get(), Ordering::Relaxed);
        }
    }

    /// This broker's epoch from its last registration ([`BrokerEpoch::NONE`] before it registered).
    pub fn broker_epoch(&self) -> BrokerEpoch {
        BrokerEpoch(self.broker_epoch.load(Ordering::Relaxed))
    }

    /// The last published metadata image.
    pub fn image(&self) -> Arc<MetadataImage> {
        self.image.read().clone()
    }

    /// With `controller.quorum.bootstrap.servers`: learns the quorum's voters from the active controller
    /// (KIP-853), so that controllers added, removed or replaced since are followed. A failure keeps the
    /// voters known (the next call retries).
    async fn maybe_refresh_voters(&self) {
        if self.follows_bootstrap {
            if let Err(e) = self.client.refresh_voters().await {
                tracing::debug!(error = %e, "refreshing the controller voters failed");
            }
        }
    }

    /// Registers this broker (retrying while the quorum has no leader, up to `timeout`).
    pub async fn register(&self, host: &str, port: u16, timeout: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + timeout;
        let mut attempts = 0u64;
        loop {
            self.maybe_refresh_voters().await;
            let registration = metadata::RegisterBroker {
                broker_id: self.node_id,
                incarnation_id: self.incarnation_id,
                host: host.to_string(),
                port,
                rack: self.rack.clone(),
                listeners: self.listeners.clone(),
                log_dirs: self.reports.directory_ids(),
            };
            match self.client.send_registration(registration).await {
                Ok(epoch) => {
                    self.broker_epoch.store(epoch.get(), Ordering::Relaxed);
                    tracing::info!(broker_epoch = %epoch, "registered with the controller");
                    return Ok(());
                }
                Err(e) if Instant::now() < deadline => {
                    // Said at warn now and then: a quorum without a leader, or this node id registered by
                    // another live process (DUPLICATE_BROKER_REGISTRATION until its session expires).
                    attempts += 1;
                    if attempts % 25 == 1 {
                        tracing::warn!(error = %e, attempts, "broker registration failed; retrying");
                    }
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(e) => anyhow::bail!("registering broker {} failed: {e}", self.node_id),
            }
        }
    }

    /// Heartbeats until `shutdown` turns true; re-registers when the controller no longer knows this
    /// broker's epoch (e.g. it was fenced and a newer registration is needed).
    pub async fn run_heartbeats(
        self: Arc<Self>,
        interval: Duration,
        host: String,
        port: u16,
        mut shutdown: watch::Receiver<bool>,
    ) {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(interval) => {}
                _ = self.heartbeat_now.notified() => {}
                _ = shutdown.changed() => return,
            }
            if *shutdown.borrow() {
                return;
            }
            let sent = self.heartbeats_sent.load(Ordering::Relaxed);
            if sent.is_multiple_of(metadata::request::PARTITION_SIZES_EVERY) {
                self.maybe_refresh_voters().await;
            }
            match self
                .client
                .send_heartbeat(self.heartbeat_request(false))
                .await
            {
                Ok(_) => {
                    self.refresh_controller_id();
                    self.send_reports(sent).await;
                }
                Err(e) if e.is_stale_registration() => {
                    tracing::warn!(error = %e, "heartbeat refused; registering again");
                    let _ = self.register(&host, port, interval * 5).await;
                }
                Err(e) => tracing::debug!(error = %e, "heartbeat failed"),
            }
        }
    }

    /// Controlled shutdown (KIP-631): heartbeats with `want_shutdown` until the controller says every
    /// leadership has moved, or `timeout` passes.
    pub async fn controlled_shutdown(&self, timeout: Duration) {
        if self.broker_epoch().get() < 0 {
            tracing::info!("not registered with the controller: no controlled shutdown");
            return;
        }
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            match self
                .client
                .send_heartbeat(self.heartbeat_request(true))
                .await
            {
                Ok(reply) if reply.should_shut_down => {
                    tracing::info!("controlled shutdown complete");
                    return;
                }
                Ok(_) => {}
                Err(e) => tracing::debug!(error = %e, "controlled shutdown heartbeat failed"),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        tracing::warn!("controlled shutdown did not complete in {timeout:?}");
    }

    /// Whether `image` holds this process's registration (its incarnation id): the controller has then
    /// taken away every leadership and ISR membership of any earlier incarnation of this node id
    /// (the controller's `QuorumControl::register_broker` moves them in the same batch).
    fn registered_in(&self, image: &MetadataImage) -> bool {
        image
            .brokers
            .get(&self.node_id)
            .is_some_and(|b| b.incarnation_id == self.incarnation_id)
    }

    /// Follows the committed metadata log and publishes every new image until `shutdown` turns true: this
    /// broker's topic registry and partitions first ([`BrokerCluster::publish`]), then each of `publishers`
    /// in order (Kafka's `MetadataPublisher`s), with the previous and the new image.
    ///
    /// Nothing is published until the followed image holds this process's own registration (Kafka's broker
    /// likewise waits for its registration before publishing). An image from before it still shows the
    /// leaderships of this node id's previous incarnation: a broker restarted within its old session (after
    /// `kill -9` or a power loss that cut its log short) would otherwise lead those partitions at their old
    /// epoch with a log the followers may be ahead of.
    pub async fn run_metadata_listener(
        self: Arc<Self>,
        dynamic: Arc<DynamicBrokerConfig>,
        metadata: Arc<MetadataStore>,
        replica_manager: Arc<ReplicaManager>,
        publishers: Arc<Publishers>,
        mut shutdown: watch::Receiver<bool>,
    ) {
        // The image replayed so far; published once this process is registered in it.
        let mut following = MetadataImage::default();
        let mut registered = false;
        loop {
            if *shutdown.borrow() {
                return;
            }
            let update = tokio::select! {
                u = self.client.fetch_metadata(following.offset, Duration::from_millis(500)) => u,
                _ = shutdown.changed() => return,
            };
            match update {
                Ok(MetadataUpdate::Image(image)) => following = *image,
                Ok(MetadataUpdate::Records(records)) if records.is_empty() => continue,
                Ok(MetadataUpdate::Records(records)) => {
                    for (offset, record) in &records {
                        following.apply(*offset, record);
                    }
                }
                Err(e) => {
                    tracing::debug!(error = %e, "fetching metadata failed");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                }
            };
            if !registered {
                registered = self.registered_in(&following);
                if !registered {
                    continue;
                }
                tracing::info!(
                    offset = following.offset,
                    "registration in the metadata log: publishing"
                );
            }
            let next = following.clone();
            let previous = self.image.read().clone();
            self.publish(&dynamic, &metadata, &replica_manager, &previous, next);
            let current = self.image.read().clone();
            publishers.publish(&previous, &current);
            // Only now may a change waiting for this offset answer: every publisher has the image.
            self.published.send_replace(current.offset);
        }
    }

    /// Makes `next` the current image: topic registry, partition states, then the image itself. Only the
    /// topics that differ from `previous` are visited: the images share their unchanged topics (persistent
    /// maps), so the diff costs O(changes · log topics), not O(topics) (issue 13).
    fn publish(
        &self,
        dynamic: &DynamicBrokerConfig,
        metadata: &MetadataStore,
        replica_manager: &ReplicaManager,
        previous: &MetadataImage,
        next: MetadataImage,
    ) {
        let registry_topic = |t: &TopicImage| TopicMetadata {
            topic_id: t.topic_id,
            partitions: t.partitions.len() as i32,
            configs: t.configs.clone(),
        };
        if previous.offset < 0 {
            // The first image replaces whatever the registry held (a data dir used standalone before keeps
            // a registry on disk); later ones change what differs from the image the registry mirrors.
            metadata.replace_topics(
                next.topics
                    .iter()
                    .map(|(name, t)| (name.clone(), registry_topic(t))),
            );
            self.delete_stray_logs(replica_manager, &next);
        } else {
            metadata.apply_topic_changes(previous.topics.diff(&next.topics).map(|d| match d {
                DiffItem::Add(name, t) | DiffItem::Update { new: (name, t), .. } => {
                    (name.clone(), Some(registry_topic(t)))
                }
                DiffItem::Remove(name, _) => (name.clone(), None),
            }));
        }
        for change in previous.topics.diff(&next.topics) {
            let (old, new) = match change {
                DiffItem::Add(name, t) => (None, Some((name, t))),
                DiffItem::Update { old, new } => (Some(old), Some(new)),
                DiffItem::Remove(name, t) => (Some((name, t)), None),
            };
            if let Some((name, old)) = old {
                self.stop_departed(replica_manager, name, old, new.map(|(_, t)| t));
            }
            if let Some((name, t)) = new {
                let old = old.map(|(_, o)| o).filter(|o| o.topic_id == t.topic_id);
                self.apply_topic(dynamic, replica_manager, name, old, t);
            }
        }
        if previous.offset < 0 || previous.group_configs != next.group_configs {
            metadata.replace_group_configs(&next.group_configs);
        }
        *self.image.write() = Arc::new(next);
    }

    /// Stray logs (Kafka's KAFKA-14616 handling): on the first image, logs in the data dir of topics that no
    /// longer exist, were re-created with another id, or moved off this broker while it was down are deleted,
    /// so a re-created topic of the same name is not blocked by the old log.
    fn delete_stray_logs(&self, replica_manager: &ReplicaManager, next: &MetadataImage) {
        let node = self.node_id;
        for (tp, log) in replica_manager.log_manager().all_logs() {
            let (topic, p) = (tp.topic, tp.partition);
            let id = log.lock().topic_id();
            let assigned = next.topics.get(&topic).is_some_and(|t| {
                (id.is_nil() || t.topic_id == id)
                    && t.partitions
                        .get(&p)
                        .is_some_and(|r| r.replicas.contains(&node))
            });
            if !assigned {
                tracing::info!(topic = %topic, partition = p, topic_id = %id, "deleting stray log");
                if let Err(e) = replica_manager.stop_replica(&topic, p, true) {
                    tracing::error!(topic = %topic, partition = p, error = %e, "deleting stray log failed");
                }
            }
        }
    }

    /// Partitions of topic `name` (`old` in the previous image, `new` in the next, if still there) that left
    /// this broker — the topic deleted or re-created, or the replica moved: stopped and deleted.
    fn stop_departed(
        &self,
        replica_manager: &ReplicaManager,
        name: &str,
        old: &TopicImage,
        new: Option<&TopicImage>,
    ) {
        let node = self.node_id;
        for (p, reg) in &old.partitions {
            if !reg.replicas.contains(&node) {
                continue;
            }
            let still_here = new.is_some_and(|t| {
                t.topic_id == old.topic_id
                    && t.partitions
                        .get(p)
                        .is_some_and(|r| r.replicas.contains(&node))
            });
            if !still_here {
                if let Err(e) = replica_manager.stop_replica(name, *p, true) {
                    tracing::error!(topic = %name, partition = p, error = %e, "stopping replica failed");
                }
            }
        }
    }

    /// Hands the ReplicaManager the state of each partition of topic `name` hosted here that is new or changed
    /// since `old` (the same topic, same id, in the previous image), or all of them when its configs changed.
    fn apply_topic(
        &self,
        dynamic: &DynamicBrokerConfig,
        replica_manager: &ReplicaManager,
        name: &str,
        old: Option<&TopicImage>,
        t: &TopicImage,
    ) {
        let configs_changed = old.is_none_or(|o| o.configs != t.configs);
        for (p, reg) in &t.partitions {
            if !reg.replicas.contains(&self.node_id) {
                continue;
            }
            let unchanged = old.and_then(|o| o.partitions.get(p)) == Some(reg);
            if unchanged && !configs_changed {
                continue;
            }
            let state = partition_state(t.topic_id, reg);
            // The effective config: dynamic broker values (KIP-226) hold across leader and ISR changes.
            let config = log_config(&dynamic.effective(), &t.configs);
            let mut result =
                replica_manager.apply_partition_state(name, *p, config.clone(), state.clone());
            if let Err(StorageError::InconsistentTopicId(_)) = &result {
                // A log of an older topic of the same name (deleted while this broker was away).
                tracing::info!(topic = %name, partition = p, "replacing the log of a deleted topic of the same name");
                result = replica_manager
                    .stop_replica(name, *p, true)
                    .and_then(|()| replica_manager.apply_partition_state(name, *p, config, state));
            }
            if let Err(e) = result {
                tracing::error!(topic = %name, partition = p, error = %e, "applying partition state failed");
            }
        }
    }

    /// Waits (bounded) until this broker has published an image at or past metadata offset `offset` (every
    /// [`MetadataPublisher`](crate::publisher::MetadataPublisher) included): the offset the controller named
    /// for a change, as Kafka's brokers wait for their metadata to reach a change's offset. Error:
    /// REQUEST_TIMED_OUT after 15 s (the change is committed; this broker's metadata lags).
    pub async fn wait_for_offset(&self, offset: i64) -> Result<(), MetadataLag> {
        let mut rx = self.published.subscribe();
        let deadline = tokio::time::Instant::now() + READ_YOUR_WRITES_TIMEOUT;
        loop {
            if *rx.borrow_and_update() >= offset {
                return Ok(());
            }
            match tokio::time::timeout_at(deadline, rx.changed()).await {
                Ok(Ok(())) => {}
                _ => return Err(MetadataLag(offset)),
            }
        }
    }

    /// CreateTopics through the controller; answers once this broker's image has the topic.
    pub async fn create_topic(
        &self,
        topic: CreateTopic,
        validate_only: bool,
    ) -> Result<TopicMetadata, TopicError> {
        let configs = topic.configs.clone();
        let mut committed = self.client.create_topics(vec![topic], validate_only).await;
        let created = committed
            .reply
            .pop()
            .unwrap_or_else(|| Err(ControllerError::unknown("no result")))
            .map_err(TopicError::Controller)?;
        if !validate_only {
            self.wait_for_offset(committed.offset).await?;
        }
        Ok(TopicMetadata {
            topic_id: created.topic_id,
            partitions: created.num_partitions,
            configs,
        })
    }

    /// DeleteTopics through the controller; answers once this broker's image no longer has the topic.
    pub async fn delete_topic(&self, name: &str) -> Result<Uuid, TopicError> {
        let mut committed = self.client.delete_topics(vec![name.to_string()]).await;
        let id = committed
            .reply
            .pop()
            .unwrap_or_else(|| Err(ControllerError::unknown("no result")))
            .map_err(TopicError::Controller)?;
        self.wait_for_offset(committed.offset).await?;
        Ok(id)
    }

    /// UnregisterBroker through the controller (KIP-500); answers once this broker's image shows the
    /// registration gone (bounded wait: REQUEST_TIMED_OUT).
    pub async fn unregister_broker(&self, id: BrokerId) -> Result<(), TopicError> {
        let at = self
            .client
            .unregister_broker(id)
            .await
            .map_err(TopicError::Controller)?;
        self.wait_for_offset(at).await?;
        Ok(())
    }

    /// ElectLeaders through the controller (KIP-460); answers once this broker's image shows the outcome
    /// (bounded wait: REQUEST_TIMED_OUT).
    pub async fn elect_leaders(
        &self,
        election: ElectionType,
        partitions: Option<Vec<(String, i32)>>,
    ) -> Result<Vec<ElectionResult>, TopicError> {
        let committed = self
            .client
            .elect_leaders(election, partitions)
            .await
            .map_err(TopicError::Controller)?;
        self.wait_for_offset(committed.offset).await?;
        Ok(committed.reply)
    }

    /// AlterPartitionReassignments through the controller (KIP-455); answers once this broker's image shows
    /// the outcome (bounded wait: REQUEST_TIMED_OUT).
    pub async fn alter_partition_reassignments(
        &self,
        reassignments: Vec<Reassignment>,
        allow_replication_factor_change: bool,
    ) -> Result<Vec<Result<(), ControllerError>>, TopicError> {
        let committed = self
            .client
            .alter_partition_reassignments(reassignments, allow_replication_factor_change)
            .await
            .map_err(TopicError::Controller)?;
        self.wait_for_offset(committed.offset).await?;
        Ok(committed.reply)
    }

    /// CreatePartitions through the controller; answers once this broker's image shows `count` partitions.
    pub async fn create_partitions(
        &self,
        name: &str,
        count: i32,
        validate_only: bool,
    ) -> Result<(), TopicError> {
        let at = self
            .client
            .create_partitions(name.to_string(), count, validate_only)
            .await
            .map_err(TopicError::Controller)?;
        if !validate_only {
            self.wait_for_offset(at).await?;
        }
        Ok(())
    }

    /// Replaces a topic's config overrides through the controller (keys not in `configs` are deleted);
    /// answers once this broker's image shows them.
    pub async fn set_topic_configs(
        &self,
        name: &str,
        configs: BTreeMap<String, String>,
        validate_only: bool,
    ) -> Result<(), TopicError> {
        let current = self
            .image()
            .topics
            .get(name)
            .map(|t| t.configs.clone())
            .ok_or(TopicError::UnknownTopic)?;
        let mut ops: Vec<(String, Option<String>)> = current
            .keys()
            .filter(|k| !configs.contains_key(*k))
            .map(|k| (k.clone(), None))
            .collect();
        ops.extend(configs.iter().map(|(k, v)| (k.clone(), Some(v.clone()))));
        self.alter_configs(RESOURCE_TOPIC, name.to_string(), ops, validate_only)
            .await
    }

    /// IncrementalAlterConfigs of one resource (topic or broker) through the controller; answers once this
    /// broker's image shows it.
    pub(crate) async fn alter_configs<E: From<ControllerError> + From<MetadataLag>>(
        &self,
        resource_type: i8,
        name: String,
        ops: Vec<(String, Option<String>)>,
        validate_only: bool,
    ) -> Result<(), E> {
        let at = self
            .client
            .alter_configs(resource_type, name, ops, validate_only)
            .await?;
        if !validate_only {
            self.wait_for_offset(at).await?;
        }
        Ok(())
    }

    /// A block of producer ids from the controller (KIP-730 AllocateProducerIds).
    pub async fn allocate_producer_ids(&self) -> Result<(ProducerId, i32), ControllerError> {
        self.client
            .allocate_producer_ids(self.node_id, self.broker_epoch())
            .await
    }
}

/// The ReplicaManager's view of a partition registration.
pub fn partition_state(topic_id: Uuid, reg: &PartitionRegistration) -> PartitionState {
    PartitionState {
        topic_id,
        leader: reg.leader,
        leader_epoch: reg.leader_epoch,
        partition_epoch: reg.partition_epoch,
        isr: reg.isr.clone(),
        replicas: reg.replicas.clone(),
    }
}

/// The [`ClusterLink`] of a cluster member: endpoints from the image, ISR changes through the controller.
#[derive(Debug)]
pub struct ControllerLink(pub Arc<BrokerCluster>);

impl ClusterLink for ControllerLink {
    fn broker_endpoint(&self, broker_id: BrokerId) -> Option<(String, u16)> {
        self.0
            .image()
            .brokers
            .get(&broker_id)
            .and_then(|b| b.endpoint(&self.0.inter_broker_listener))
            .map(|(host, port)| (host.to_string(), port))
    }

    fn alter_partition(
        &self,
        topic: String,
        partition: i32,
        state: PartitionState,
    ) -> BoxFuture<'static, Result<PartitionState, ControllerError>> {
        let cluster = self.0.clone();
        Box::pin(async move {
            let reg = cluster
                .client
                .alter_partition(
                    cluster.node_id,
                    cluster.broker_epoch(),
                    state.topic_id,
                    partition,
                    state.leader_epoch,
                    state.partition_epoch,
                    state.isr.clone(),
                )
                .await
                .map_err(|e| {
                    tracing::debug!(topic = %topic, partition, error = %e, "AlterPartition refused");
                    e
                })?;
            Ok(PartitionState {
                topic_id: state.topic_id,
                leader: reg.leader,
                leader_epoch: reg.leader_epoch,
                partition_epoch: reg.partition_epoch,
                isr: reg.isr,
                // AlterPartition never changes the replica set (its answer carries none).
                replicas: state.replicas,
            })
        })
    }
}

impl MetadataCache for BrokerCluster {
    fn image(&self) -> Arc<MetadataImage> {
        BrokerCluster::image(self)
    }

    fn controller_id(&self) -> BrokerId {
        BrokerCluster::controller_id(self).unwrap_or(BrokerId::NONE)
    }

    fn controllers(&self) -> Vec<ControllerEndpoint> {
        if !self.follows_bootstrap {
            return self.controllers.clone();
        }
        (self.client.voters().iter())
            .filter(|(id, _)| id.get() >= 0)
            .map(|(id, a)| (*id, a.ip().to_string(), a.port()))
            .collect()
    }
}
