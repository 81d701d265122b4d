//! The gauges read at scrape time: each `/metrics` request sets them from the broker's state just before the
//! exposition is rendered, so no hot path keeps them up to date. Names and their Kafka MBeans:
//!
//! | name | Kafka MBean / source |
//! |---|---|
//! | `kafka_server_replicamanager_partitioncount` | ReplicaManager `PartitionCount` |
//! | `kafka_server_replicamanager_leadercount` | ReplicaManager `LeaderCount` |
//! | `kafka_server_replicamanager_underreplicatedpartitions` | ReplicaManager `UnderReplicatedPartitions` (led here, ISR smaller than the replicas) |
//! | `kafka_server_replicamanager_underminisrpartitioncount` | ReplicaManager `UnderMinIsrPartitionCount` |
//! | `kafka_server_replicamanager_atminisrpartitioncount` | ReplicaManager `AtMinIsrPartitionCount` |
//! | `kafka_cluster_partition_underreplicated{topic,partition}` | Partition `UnderReplicated` (led here) |
//! | `kafka_log_log_size{topic,partition}` | Log `Size` (bytes) |
//! | `kafka_log_log_numlogsegments{topic,partition}` | Log `NumLogSegments` |
//! | `kafka_log_log_logstartoffset{topic,partition}` | Log `LogStartOffset` |
//! | `kafka_log_log_logendoffset{topic,partition}` | Log `LogEndOffset` |
//! | `kafka_log_log_highwatermark{topic,partition}` | (Runnel) the replica's HighWatermark |
//! | `kafka_coordinator_group_groupmetadatamanager_numgroups{,stable,preparingrebalance,completingrebalance,empty,dead}` | GroupMetadataManager `NumGroups*` |
//! | `kafka_consumergroup_members{consumergroup}` | kafka_exporter's |
//! | `kafka_consumergroup_current_offset{consumergroup,topic,partition}` | kafka_exporter's: the committed offset |
//! | `kafka_consumergroup_lag{consumergroup,topic,partition}` | kafka_exporter's: HighWatermark − committed offset |
//! | `kafka_server_group_coordinator_metrics_group_completed_rebalance_count` | group-coordinator-metrics `group-completed-rebalance-count` (rebalances completed by this coordinator since start; its `rate()` is Kafka's `-rate`) |
//! | `kafka_server_group_coordinator_metrics_group_completed_rebalance_count{consumergroup}` | (Runnel) the same per group, since the group was created or loaded here |
//! | `kafka_server_socket_server_metrics_connection_count{listener}` | socket-server-metrics `connection-count` (`connection_creation_total` is a counter kept by the acceptor) |
//! | `kafka_server_broker_metadata_metrics_last_applied_record_offset` | broker-metadata-metrics `last-applied-record-offset` |
//! | `kafka_controller_kafkacontroller_activecontrollercount` | KafkaController `ActiveControllerCount` (controllers only) |
//! | `kafka_controller_kafkacontroller_offlinepartitionscount`, `globalpartitioncount`, `globaltopiccount`, `activebrokercount`, `fencedbrokercount`, `preferredreplicaimbalancecount` | KafkaController, on the active controller |
//! | `kafka_server_raftmetrics_current_leader`, `current_epoch`, `log_end_offset`, `last_applied_offset` | raft-metrics (controllers only) |
//! | `kafka_controller_kafkacontroller_brokermetadataoffset{broker}` | (Runnel) on the active controller, the metadata offset each broker reported in its last heartbeat (DescribeQuorum's observer `LogEndOffset`) |
//! | `kafka_controller_kafkacontroller_brokermetadatalag{broker}` | (Runnel) on the active controller, its last applied offset − that broker's (records the broker has yet to replay) |
//! | `process_cpu_seconds_total`, `process_resident_memory_bytes`, `process_open_fds`, `process_max_fds`, ... | the process (`metrics-process`) |
//!
//! Per-partition and per-(group, partition) series are bounded by `metrics.partition.series.max`: the
//! first partitions in (topic, partition) order, the first committed offsets in (group, topic,
//! partition) order. Consumer lag uses the coordinator's own replica's HighWatermark where it hosts one
//! (leader or follower), else the leader's as [`super::end_offsets`] last learnt it with ListOffsets (every
//! 5 s; none while the leader does not answer, so `kafka_consumergroup_current_offset` alone for up to 15 s).

use std::collections::BTreeSet;
use std::sync::Arc;

use controller::ControllerStatus;
use coordinator::GroupState;
use metrics::gauge;
use replica::replica_manager::ReplicaManager;
use types::BrokerId;

use super::end_offsets::RemoteEndOffsets;
use crate::group_coordinator::GroupCoordinatorService;
use crate::metadata_cache::MetadataCache;
use crate::quota::connection::ConnectionLimiter;

/// What the scrape-time gauges read: the broker's services, shared with the request handlers.
pub struct Sources {
    /// End offsets of the partitions led elsewhere that groups coordinated here committed to.
    pub end_offsets: RemoteEndOffsets,
    /// The partitions hosted here.
    pub replica_manager: Arc<ReplicaManager>,
    /// The cluster metadata this broker follows.
    pub metadata_cache: Arc<dyn MetadataCache>,
    /// The group coordinator (groups and committed offsets).
    pub groups: Arc<GroupCoordinatorService>,
    /// This process's controller, when it has the controller role.
    pub controller: Option<ControllerStatus>,
    /// This broker's id.
    pub local_broker: BrokerId,
    /// `metrics.partition.series.max`.
    pub partition_series_max: usize,
    /// Process CPU, memory and file descriptors.
    pub process: metrics_process::Collector,
    /// The acceptors' connection counts.
    pub connections: Arc<ConnectionLimiter>,
    /// The series clients push (KIP-714), appended to each scrape.
    pub telemetry: Arc<crate::client_metrics::ClientTelemetry>,
}

impl std::fmt::Debug for Sources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sources")
            .field("local_broker", &self.local_broker)
            .finish_non_exhaustive()
    }
}

impl Sources {
    /// Sets every scrape-time gauge from the current state.
    pub fn collect(&self) {
        self.partitions();
        self.groups();
        self.controller();
        let image_offset = self.metadata_cache.image().offset;
        gauge!("kafka_server_broker_metadata_metrics_last_applied_record_offset")
            .set(image_offset as f64);
        for (listener, open) in self.connections.per_listener() {
            gauge!("kafka_server_socket_server_metrics_connection_count", "listener" => listener)
                .set(f64::from(open));
        }
        self.process.collect();
    }

    /// ReplicaManager counts and the per-partition log gauges.
    fn partitions(&self) {
        let mut partitions = self.replica_manager.partitions();
        partitions.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
        let (mut leaders, mut under_replicated, mut under_min, mut at_min) = (0, 0, 0, 0);
        for (i, p) in partitions.iter().enumerate() {
            let leads = p.is_leader();
            let urp = match leads {
                true => {
                    let reg = p.registration();
                    let min_isr = p.min_insync_replicas();
                    leaders += 1;
                    under_min += usize::from(reg.isr.len() < min_isr);
                    at_min += usize::from(reg.isr.len() == min_isr);
                    reg.isr.len() < reg.replicas.len()
                }
                false => false,
            };
            under_replicated += usize::from(urp);
            if i >= self.partition_series_max {
                continue;
            }
            let labels = [
                ("topic", p.topic.clone()),
                ("partition", p.partition.to_string()),
            ];
            let stats = p.log_stats();
            gauge!("kafka_log_log_size", &labels).set(stats.size_bytes as f64);
            gauge!("kafka_log_log_numlogsegments", &labels).set(stats.segments as f64);
            gauge!("kafka_log_log_logstartoffset", &labels).set(stats.log_start_offset.0 as f64);
            gauge!("kafka_log_log_logendoffset", &labels).set(stats.log_end_offset.0 as f64);
            gauge!("kafka_log_log_highwatermark", &labels).set(stats.high_watermark.0 as f64);
            if leads {
                gauge!("kafka_cluster_partition_underreplicated", &labels)
                    .set(f64::from(u8::from(urp)));
            }
        }
        gauge!("kafka_server_replicamanager_partitioncount").set(partitions.len() as f64);
        gauge!("kafka_server_replicamanager_leadercount").set(leaders as f64);
        gauge!("kafka_server_replicamanager_underreplicatedpartitions")
            .set(under_replicated as f64);
        gauge!("kafka_server_replicamanager_underminisrpartitioncount").set(under_min as f64);
        gauge!("kafka_server_replicamanager_atminisrpartitioncount").set(at_min as f64);
        let log_manager = self.replica_manager.log_manager();
        gauge!("kafka_log_logmanager_offlinelogdirectorycount")
            .set(log_manager.offline_dirs().len() as f64);
    }

    /// Group counts by state, members, committed offsets and lag (of the groups coordinated here).
    fn groups(&self) {
        let max = self.partition_series_max;
        let rm = &self.replica_manager;
        let read = self.groups.read(|c| {
            let mut committed = Vec::new();
            c.for_each_committed_offset(max, |g, t, p, offset| {
                committed.push((g.to_string(), t.to_string(), p, offset));
            });
            (c.group_summaries(), committed, c.completed_rebalances())
        });
        // Not loaded yet (or not a coordinator at all): no group gauges.
        let Ok((summaries, committed, rebalances)) = read else {
            return;
        };
        let gcm = "kafka_server_group_coordinator_metrics_group_completed_rebalance_count";
        gauge!(gcm).set(rebalances as f64);
        let count =
            |state: GroupState| summaries.iter().filter(|g| g.state == state).count() as f64;
        let prefix = "kafka_coordinator_group_groupmetadatamanager_numgroups";
        gauge!(prefix).set(summaries.len() as f64);
        for (suffix, state) in [
            ("stable", GroupState::Stable),
            ("preparingrebalance", GroupState::PreparingRebalance),
            ("completingrebalance", GroupState::CompletingRebalance),
            ("empty", GroupState::Empty),
            ("dead", GroupState::Dead),
        ] {
            gauge!(format!("{prefix}{suffix}")).set(count(state));
        }
        for g in summaries.iter().take(max) {
            let labels = [("consumergroup", g.group_id.clone())];
            gauge!("kafka_consumergroup_members", &labels).set(g.members as f64);
            gauge!(gcm, &labels).set(g.completed_rebalances as f64);
        }
        for (group, topic, partition, offset) in committed {
            let labels = [
                ("consumergroup", group),
                ("topic", topic.clone()),
                ("partition", partition.to_string()),
            ];
            gauge!("kafka_consumergroup_current_offset", &labels).set(offset as f64);
            let end = match rm.partition(&topic, partition) {
                Some(p) => Some(p.high_watermark().0),
                None => self.end_offsets.get(&topic, partition),
            };
            if let Some(end) = end {
                let lag = (end - offset).max(0);
                gauge!("kafka_consumergroup_lag", &labels).set(lag as f64);
            }
        }
    }

    /// The committed (topic, partition)s the scrape exports (the first `metrics.partition.series.max`) that
    /// have no replica here: whose end offsets [`RemoteEndOffsets`] asks their leaders for.
    pub fn remote_committed_partitions(&self) -> BTreeSet<(String, i32)> {
        let rm = &self.replica_manager;
        let mut out = BTreeSet::new();
        let _ = self.groups.read(|c| {
            c.for_each_committed_offset(self.partition_series_max, |_, t, p, _| {
                out.insert((t.to_string(), p));
            });
        });
        out.retain(|(t, p)| rm.partition(t, *p).is_none());
        out
    }

    /// Raft state on every controller; cluster counts on the active one.
    fn controller(&self) {
        let Some(c) = &self.controller else { return };
        let raft = c.raft_status();
        let active = raft.is_leader;
        gauge!("kafka_controller_kafkacontroller_activecontrollercount")
            .set(f64::from(u8::from(active)));
        let leader = raft.leader.map_or(-1, |l| l.get());
        gauge!("kafka_server_raftmetrics_current_leader").set(f64::from(leader));
        gauge!("kafka_server_raftmetrics_current_epoch").set(raft.term as f64);
        let end = raft.last_log_index.map_or(0, |i| i + 1);
        gauge!("kafka_server_raftmetrics_log_end_offset").set(end as f64);
        let applied = raft.last_applied.map_or(-1, |i| i as i64);
        gauge!("kafka_server_raftmetrics_last_applied_offset").set(applied as f64);
        if !active {
            return;
        }
        let kc = "kafka_controller_kafkacontroller";
        for (broker, offset) in c.broker_metadata_offsets().unwrap_or_default() {
            let labels = [("broker", broker.get().to_string())];
            gauge!(format!("{kc}_brokermetadataoffset"), &labels).set(offset as f64);
            if offset >= 0 {
                let lag = (applied - offset).max(0);
                gauge!(format!("{kc}_brokermetadatalag"), &labels).set(lag as f64);
            }
        }
        let counts = c.with_image(|image| {
            let (mut partitions, mut offline, mut imbalance) = (0u64, 0u64, 0u64);
            for topic in image.topics.values() {
                for p in topic.partitions.values() {
                    partitions += 1;
                    offline += u64::from(p.leader.is_none());
                    imbalance += u64::from(p.replicas.first() != Some(&p.leader));
                }
            }
            let fenced = image.brokers.values().filter(|b| b.fenced).count();
            let brokers = image.brokers.len();
            (
                image.topics.len(),
                partitions,
                offline,
                imbalance,
                brokers - fenced,
                fenced,
            )
        });
        let (topics, partitions, offline, imbalance, active_brokers, fenced) = counts;
        gauge!(format!("{kc}_globaltopiccount")).set(topics as f64);
        gauge!(format!("{kc}_globalpartitioncount")).set(partitions as f64);
        gauge!(format!("{kc}_offlinepartitionscount")).set(offline as f64);
        gauge!(format!("{kc}_preferredreplicaimbalancecount")).set(imbalance as f64);
        gauge!(format!("{kc}_activebrokercount")).set(active_brokers as f64);
        gauge!(format!("{kc}_fencedbrokercount")).set(fenced as f64);
    }

    /// Readiness for `/health/ready`: the failed checks (empty = ready). A cluster member is ready once its
    /// registration is in the metadata it follows, unfenced (the controller unfences a broker that caught
    /// up with the metadata log) and not shutting down; logs were loaded before the listener started.
    pub fn not_ready(&self) -> Vec<&'static str> {
        let image = self.metadata_cache.image();
        if image.brokers.is_empty() {
            return Vec::new(); // standalone: the derived image has no registrations
        }
        let mut failed = Vec::new();
        match image.brokers.get(&self.local_broker) {
            None => failed.push("not registered in the metadata this broker follows"),
            Some(b) if b.fenced => failed.push("fenced: not caught up with the metadata log"),
            Some(b) if b.in_controlled_shutdown => failed.push("in controlled shutdown"),
            Some(b) if b.log_dir_offline => failed.push("log dir offline"),
            Some(_) => {}
        }
        failed
    }
}
