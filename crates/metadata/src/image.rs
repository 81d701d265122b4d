//! The image built by replaying the metadata log records ([`crate::record`]).
//!
//! Source: KIP-500 (the metadata log replaces ZooKeeper), KIP-631 (the record types:
//! `RegisterBrokerRecord`, `FenceBrokerRecord`, `TopicRecord`, `PartitionRecord`,
//! `PartitionChangeRecord`, ...), Kafka's `MetadataImage`/`MetadataDelta`.
//!
//! Every controller (and every broker) builds the same [`MetadataImage`] by replaying the committed
//! records in log order with [`MetadataImage::apply`]. Replay is total and deterministic: a record
//! that does not fit the image (unknown broker, unknown topic id, stale broker epoch) is ignored, never
//! a panic, so a replay of the same records on a fresh image always yields an equal image.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use types::{BrokerEpoch, BrokerId, LeaderEpoch, PartitionEpoch, ProducerId};
use uuid::Uuid;

use crate::quota::ClientQuotasImage;
use crate::record::{
    AclEntry, MetadataRecord, RESOURCE_BROKER, RESOURCE_CLIENT_METRICS, RESOURCE_GROUP,
    RESOURCE_TOPIC,
};
use crate::scram::{self, ScramCredentials};
use crate::topics_image::TopicsImage;

/// A broker's registration as replayed from the log (Kafka `BrokerRegistration`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokerRegistration {
    /// Broker id.
    pub broker_id: BrokerId,
    /// Broker epoch: the offset of the `RegisterBrokerRecord` of this registration.
    pub broker_epoch: BrokerEpoch,
    /// Incarnation id sent by the broker process at registration.
    pub incarnation_id: Uuid,
    /// Advertised host.
    pub host: String,
    /// Advertised port.
    pub port: u16,
    /// Every advertised listener (`host`/`port` are the inter-broker listener's). Empty for a registration
    /// from before named listeners. Absent from the JSON when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub listeners: Vec<crate::record::BrokerEndpoint>,
    /// Rack, if configured.
    pub rack: Option<String>,
    /// Fenced brokers are neither leaders nor ISR members.
    pub fenced: bool,
    /// The broker asked for controlled shutdown (KIP-631); it is not chosen as leader or added to ISRs.
    pub in_controlled_shutdown: bool,
    /// Every data directory of the broker is offline (KIP-858 `OfflineLogDirs` naming all of them, or
    /// Kafka's `DirectoryId.LOST`): it stays registered and unfenced but is not chosen as leader, added to
    /// ISRs or given new replicas. Absent from the JSON when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub log_dir_offline: bool,
    /// The `directory.id` of each of its data directories (KIP-858 `LogDirs`, `log.dirs` order). Absent
    /// from the JSON when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub log_dirs: Vec<Uuid>,
    /// Its offline data directories (sorted ids): the replicas assigned to them are neither leaders nor
    /// ISR members ([`MetadataImage::is_replica_online`]). Absent from the JSON when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub offline_log_dirs: Vec<Uuid>,
}

impl BrokerRegistration {
    /// The broker's advertised `(host, port)` on listener `name` (Kafka's `BrokerRegistration.node(listener)`):
    /// `None` when it has no such listener. A registration from before named listeners has one listener,
    /// `host`/`port`, which answers for every name.
    pub fn endpoint(&self, name: &str) -> Option<(&str, u16)> {
        if self.listeners.is_empty() {
            return Some((&self.host, self.port));
        }
        self.listeners
            .iter()
            .find(|l| l.name == name)
            .map(|l| (l.host.as_str(), l.port))
    }
}

/// A partition's replica state (Kafka `PartitionRegistration`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionRegistration {
    /// Replica broker ids, preferred leader first.
    pub replicas: Vec<BrokerId>,
    /// In-sync replicas (a subset of `replicas`).
    pub isr: Vec<BrokerId>,
    /// Leader broker id, or [`crate::NO_LEADER`] ([`BrokerId::NONE`], -1).
    pub leader: BrokerId,
    /// Leader epoch: bumped on every leader change.
    pub leader_epoch: LeaderEpoch,
    /// Partition epoch: bumped on every change of this registration (KIP-497 AlterPartition uses it
    /// to reject stale updates).
    pub partition_epoch: PartitionEpoch,
    /// Replicas an ongoing reassignment is adding (KIP-455; in `replicas` too). Empty: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub adding_replicas: Vec<BrokerId>,
    /// Replicas an ongoing reassignment is removing (KIP-455; in `replicas` until it completes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removing_replicas: Vec<BrokerId>,
    /// The data directory of each replica, aligned with `replicas` (KIP-858; empty or
    /// [`crate::record::DIRECTORY_UNASSIGNED`] entries: not yet assigned by the broker).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub directories: Vec<Uuid>,
}

impl PartitionRegistration {
    /// The data directory of `broker`'s replica ([`crate::record::DIRECTORY_UNASSIGNED`] when unknown or
    /// not a replica).
    pub fn directory_of(&self, broker: BrokerId) -> Uuid {
        (self.replicas.iter().position(|&r| r == broker))
            .and_then(|i| self.directories.get(i).copied())
            .unwrap_or(crate::record::DIRECTORY_UNASSIGNED)
    }

    /// The directories aligned with `replicas` with `broker`'s set to `dir` (unassigned entries filled
    /// in): what an AssignReplicasToDirs writes. `None` when `broker` is not a replica.
    pub fn directories_with(&self, broker: BrokerId, dir: Uuid) -> Option<Vec<Uuid>> {
        let at = self.replicas.iter().position(|&r| r == broker)?;
        let mut dirs: Vec<Uuid> = (0..self.replicas.len())
            .map(|i| self.directories.get(i).copied().unwrap_or_default())
            .collect();
        dirs[at] = dir;
        Some(dirs)
    }

    /// True while a reassignment is in progress (something is being added or removed).
    pub fn is_reassigning(&self) -> bool {
        !self.adding_replicas.is_empty() || !self.removing_replicas.is_empty()
    }

    /// The replicas a reassignment is moving to: `replicas` without `removing_replicas`, in order (the
    /// replicas themselves when none is in progress).
    pub fn target_replicas(&self) -> Vec<BrokerId> {
        (self.replicas.iter())
            .filter(|r| !self.removing_replicas.contains(r))
            .copied()
            .collect()
    }

    /// Applies a `PartitionChangeRecord`'s fields (replay): sets what is `Some`, bumps the partition epoch,
    /// and the leader epoch when `leader` is `Some`. The controller uses it to answer with the
    /// registration a change will produce.
    pub fn apply_change_record(&mut self, record: &MetadataRecord) {
        if let MetadataRecord::PartitionChangeRecord {
            isr,
            leader,
            replicas,
            adding_replicas,
            removing_replicas,
            directories,
            ..
        } = record
        {
            self.apply_change(&PartitionChange {
                isr: isr.as_deref(),
                leader: *leader,
                replicas: replicas.as_deref(),
                adding: adding_replicas.as_deref(),
                removing: removing_replicas.as_deref(),
                directories: directories.as_deref(),
            });
        }
    }

    fn apply_change(&mut self, c: &PartitionChange<'_>) {
        let p = self;
        if let Some(isr) = c.isr {
            p.isr = isr.to_vec();
        }
        if let Some(replicas) = c.replicas {
            // A replica kept keeps its directory; a new one is unassigned (unless the record says).
            if !p.directories.is_empty() {
                p.directories = (replicas.iter()).map(|&r| p.directory_of(r)).collect();
            }
            p.replicas = replicas.to_vec();
        }
        if let Some(dirs) = c.directories {
            p.directories = dirs.to_vec();
        }
        if let Some(adding) = c.adding {
            p.adding_replicas = adding.to_vec();
        }
        if let Some(removing) = c.removing {
            p.removing_replicas = removing.to_vec();
        }
        if let Some(leader) = c.leader {
            p.leader = leader;
            p.leader_epoch = LeaderEpoch(p.leader_epoch.get().saturating_add(1));
        }
        p.partition_epoch = p.partition_epoch.next();
    }

    /// The replicas before the reassignment: `replicas` without `adding_replicas`, in order.
    pub fn original_replicas(&self) -> Vec<BrokerId> {
        (self.replicas.iter())
            .filter(|r| !self.adding_replicas.contains(r))
            .copied()
            .collect()
    }
}

/// The per-broker dynamic config (KIP-1066) listing the log dirs that take no new replicas; Runnel has one
/// log dir per broker, so any non-empty value (Kafka's `*` or the dir's path) cordons the whole broker.
pub const CORDONED_LOG_DIRS: &str = "cordoned.log.dirs";

/// The fields a `PartitionChangeRecord` sets (`None`: unchanged).
struct PartitionChange<'a> {
    isr: Option<&'a [BrokerId]>,
    leader: Option<BrokerId>,
    replicas: Option<&'a [BrokerId]>,
    adding: Option<&'a [BrokerId]>,
    removing: Option<&'a [BrokerId]>,
    directories: Option<&'a [Uuid]>,
}

/// A topic in the image.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct TopicImage {
    /// Topic name.
    pub name: String,
    /// Topic id (KIP-516).
    pub topic_id: Uuid,
    /// Partitions by index.
    pub partitions: BTreeMap<i32, PartitionRegistration>,
    /// Dynamic topic configs (name to value).
    pub configs: BTreeMap<String, String>,
}

/// The whole replayed metadata state (Kafka `MetadataImage`): snapshots are this value serialized.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetadataImage {
    /// Last applied metadata log offset (raft log index), -1 for an empty image.
    pub offset: i64,
    /// The cluster id (from the controller config; not a log record).
    pub cluster_id: String,
    /// Registered brokers by id.
    pub brokers: BTreeMap<BrokerId, BrokerRegistration>,
    /// Topics by name (and by id): persistent maps, so a clone of the image is O(1) and a change
    /// O(log n) (see [`TopicsImage`]).
    pub topics: TopicsImage,
    /// Dynamic broker configs: `""` = cluster default, otherwise the decimal broker id.
    pub broker_configs: BTreeMap<String, BTreeMap<String, String>>,
    /// First producer id not yet handed out (KIP-730).
    pub next_producer_id: ProducerId,
    /// ACLs by id (KIP-801's `AccessControlEntryRecord`s). Absent from the JSON when empty.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub acls: BTreeMap<Uuid, AclEntry>,
    /// Client quotas by entity (Kafka's `ClientQuotasImage`). Absent from the JSON when empty.
    #[serde(default, skip_serializing_if = "ClientQuotasImage::is_empty")]
    pub client_quotas: ClientQuotasImage,
    /// SCRAM credentials by user and mechanism (KIP-554's `UserScramCredentialRecord`s). Absent from the
    /// JSON when empty.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scram_credentials: ScramCredentials,
    /// Client metrics subscriptions (KIP-714's CLIENT_METRICS `ConfigRecord`s) by name. Absent from the
    /// JSON when empty.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub client_metrics: BTreeMap<String, BTreeMap<String, String>>,
    /// Dynamic group configs (GROUP `ConfigRecord`s, KIP-848/KIP-932) by group id. Absent from the JSON when
    /// empty.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub group_configs: BTreeMap<String, BTreeMap<String, String>>,
}

impl Default for MetadataImage {
    fn default() -> Self {
        MetadataImage {
            offset: -1,
            cluster_id: String::new(),
            brokers: BTreeMap::new(),
            topics: TopicsImage::default(),
            broker_configs: BTreeMap::new(),
            next_producer_id: ProducerId(0),
            acls: BTreeMap::new(),
            client_quotas: ClientQuotasImage::default(),
            scram_credentials: BTreeMap::new(),
            client_metrics: BTreeMap::new(),
            group_configs: BTreeMap::new(),
        }
    }
}

impl MetadataImage {
    /// Replays one record committed at `offset` (several records may share an offset) and sets
    /// [`MetadataImage::offset`] to `offset`. Records that do not apply are ignored.
    pub fn apply(&mut self, offset: i64, record: &MetadataRecord) {
        if offset > self.offset {
            self.offset = offset;
        }
        match record {
            MetadataRecord::RegisterBrokerRecord {
                broker_id,
                incarnation_id,
                host,
                port,
                rack,
                listeners,
                log_dirs,
            } => self.replay_register_broker(
                offset,
                (*broker_id, *incarnation_id),
                (host, *port),
                rack.as_deref(),
                (listeners, log_dirs),
            ),
            MetadataRecord::FenceBrokerRecord { .. }
            | MetadataRecord::UnfenceBrokerRecord { .. }
            | MetadataRecord::BrokerRegistrationChangeRecord { .. }
            | MetadataRecord::UnregisterBrokerRecord { .. } => self.replay_broker_change(record),
            MetadataRecord::TopicRecord { name, topic_id } => self.replay_topic(name, *topic_id),
            MetadataRecord::PartitionRecord {
                topic_id,
                partition_id,
                replicas,
                isr,
                leader,
                leader_epoch,
                partition_epoch,
                directories,
            } => self.replay_partition(
                *topic_id,
                *partition_id,
                PartitionRegistration {
                    replicas: replicas.clone(),
                    isr: isr.clone(),
                    leader: *leader,
                    leader_epoch: *leader_epoch,
                    partition_epoch: *partition_epoch,
                    adding_replicas: Vec::new(),
                    removing_replicas: Vec::new(),
                    directories: directories.clone(),
                },
            ),
            MetadataRecord::PartitionChangeRecord {
                topic_id,
                partition_id,
                ..
            } => self.replay_partition_change(*topic_id, *partition_id, record),
            MetadataRecord::RemoveTopicRecord { topic_id } => {
                if let Some(name) = self.topic_name_by_id(*topic_id) {
                    self.topics.remove(&name);
                }
            }
            MetadataRecord::ConfigRecord {
                resource_type,
                resource_name,
                name,
                value,
            } => self.replay_config(*resource_type, resource_name, name, value.as_deref()),
            MetadataRecord::ProducerIdsRecord {
                next_producer_id, ..
            } => self.next_producer_id = self.next_producer_id.max(*next_producer_id),
            MetadataRecord::AccessControlEntryRecord { id, acl } => {
                self.acls.insert(*id, acl.clone());
            }
            MetadataRecord::RemoveAccessControlEntryRecord { id } => {
                self.acls.remove(id);
            }
            MetadataRecord::ClientQuotaRecord(change) => self.client_quotas.apply(change),
            MetadataRecord::UserScramCredentialRecord { .. }
            | MetadataRecord::RemoveUserScramCredentialRecord { .. } => self.replay_scram(record),
        }
    }

    /// `UserScramCredentialRecord` sets a user's credential for a mechanism; `RemoveUserScramCredentialRecord`
    /// removes it (an unknown one is ignored).
    fn replay_scram(&mut self, record: &MetadataRecord) {
        let change = match record {
            MetadataRecord::UserScramCredentialRecord {
                name,
                mechanism,
                credential,
            } => scram::ScramChange::Upsert(scram::ScramUpsertion {
                name: name.clone(),
                mechanism: *mechanism,
                credential: credential.clone(),
            }),
            MetadataRecord::RemoveUserScramCredentialRecord { name, mechanism } => {
                scram::ScramChange::Delete(scram::ScramDeletion {
                    name: name.clone(),
                    mechanism: *mechanism,
                })
            }
            _ => return,
        };
        scram::apply_change(&mut self.scram_credentials, &change);
    }

    /// `RegisterBrokerRecord`: replaces any registration of `broker_id`; the new one starts fenced, not
    /// in controlled shutdown, with broker epoch `offset`.
    fn replay_register_broker(
        &mut self,
        offset: i64,
        (broker_id, incarnation_id): (BrokerId, Uuid),
        (host, port): (&str, u16),
        rack: Option<&str>,
        (listeners, log_dirs): (&[crate::record::BrokerEndpoint], &[Uuid]),
    ) {
        self.brokers.insert(
            broker_id,
            BrokerRegistration {
                broker_id,
                broker_epoch: BrokerEpoch(offset),
                incarnation_id,
                host: host.to_owned(),
                port,
                listeners: listeners.to_vec(),
                rack: rack.map(str::to_owned),
                fenced: true,
                in_controlled_shutdown: false,
                log_dir_offline: false,
                log_dirs: log_dirs.to_vec(),
                offline_log_dirs: Vec::new(),
            },
        );
    }

    /// `FenceBrokerRecord`, `UnfenceBrokerRecord` and `BrokerRegistrationChangeRecord`: sets the flags
    /// that are `Some`, if `broker_epoch` is the current registration's.
    fn replay_broker_flags(
        &mut self,
        broker_id: BrokerId,
        broker_epoch: BrokerEpoch,
        fenced: Option<bool>,
        in_controlled_shutdown: Option<bool>,
    ) {
        if let Some(b) = self.broker_mut(broker_id, broker_epoch) {
            if let Some(f) = fenced {
                b.fenced = f;
            }
            if let Some(s) = in_controlled_shutdown {
                b.in_controlled_shutdown = s;
            }
        }
    }

    /// `TopicRecord`: a new topic without partitions or configs.
    fn replay_topic(&mut self, name: &str, topic_id: Uuid) {
        // A name is bound to one id: drop any other topic that used this id.
        if let Some(old) = self.topic_name_by_id(topic_id) {
            if old != name {
                self.topics.remove(&old);
            }
        }
        self.topics.insert(
            name.to_owned(),
            TopicImage {
                name: name.to_owned(),
                topic_id,
                partitions: BTreeMap::new(),
                configs: BTreeMap::new(),
            },
        );
    }

    /// `PartitionRecord`: sets the whole partition, if its topic exists.
    fn replay_partition(
        &mut self,
        topic_id: Uuid,
        partition_id: i32,
        registration: PartitionRegistration,
    ) {
        if let Some(t) = self.topic_by_id_mut(topic_id) {
            t.partitions.insert(partition_id, registration);
        }
    }

    /// `PartitionChangeRecord`: sets what is `Some`, bumps the partition epoch, and the leader epoch
    /// when `leader` is `Some`.
    fn replay_partition_change(
        &mut self,
        topic_id: Uuid,
        partition_id: i32,
        record: &MetadataRecord,
    ) {
        if let Some(p) = self
            .topic_by_id_mut(topic_id)
            .and_then(|t| t.partitions.get_mut(&partition_id))
        {
            p.apply_change_record(record);
        }
    }

    /// `ConfigRecord`: sets (`Some`) or deletes (`None`) a topic, broker, client-metrics or group config; a
    /// broker, client-metrics or group resource left without configs is removed. Unknown topics and other
    /// resource types are ignored.
    fn replay_config(
        &mut self,
        resource_type: i8,
        resource_name: &str,
        name: &str,
        value: Option<&str>,
    ) {
        let configs = match resource_type {
            RESOURCE_TOPIC => match self.topics.get_mut(resource_name) {
                Some(t) => &mut t.configs,
                None => return,
            },
            RESOURCE_BROKER => self
                .broker_configs
                .entry(resource_name.to_owned())
                .or_default(),
            RESOURCE_CLIENT_METRICS => self
                .client_metrics
                .entry(resource_name.to_owned())
                .or_default(),
            RESOURCE_GROUP => self
                .group_configs
                .entry(resource_name.to_owned())
                .or_default(),
            _ => return,
        };
        match value {
            Some(v) => {
                configs.insert(name.to_owned(), v.to_owned());
            }
            None => {
                configs.remove(name);
            }
        }
        let resources = match resource_type {
            RESOURCE_BROKER => &mut self.broker_configs,
            RESOURCE_CLIENT_METRICS => &mut self.client_metrics,
            RESOURCE_GROUP => &mut self.group_configs,
            _ => return,
        };
        if resources.get(resource_name).is_some_and(|m| m.is_empty()) {
            resources.remove(resource_name);
        }
    }

    /// The topic with id `id`, if any (O(log n): the id index of [`TopicsImage`]).
    pub fn topic_by_id(&self, id: Uuid) -> Option<&TopicImage> {
        self.topics.by_id(id)
    }

    /// The partition `partition` of topic `topic_id`, if any.
    pub fn partition(&self, topic_id: Uuid, partition: i32) -> Option<&PartitionRegistration> {
        self.topic_by_id(topic_id)
            .and_then(|t| t.partitions.get(&partition))
    }

    /// True when `broker_id` is registered, unfenced, not in controlled shutdown and its data dir is
    /// online: eligible as leader, new ISR member and placement target.
    pub fn is_active_broker(&self, broker_id: BrokerId) -> bool {
        self.brokers
            .get(&broker_id)
            .is_some_and(|b| !b.fenced && !b.in_controlled_shutdown && !b.log_dir_offline)
    }

    /// True when `broker`'s replica of partition `p` may lead or join the ISR: the broker is active
    /// ([`Self::is_active_broker`]) and the replica's directory is not among its offline ones (an
    /// unassigned directory counts as online, as Kafka's `DirectoryId.isOnline`).
    pub fn is_replica_online(&self, broker: BrokerId, p: &PartitionRegistration) -> bool {
        self.is_active_broker(broker) && !self.is_replica_dir_offline(broker, p)
    }

    /// True when `broker`'s replica of `p` is in one of its offline directories (only the directory is
    /// looked at: a fenced broker's replica in an online directory is not).
    pub fn is_replica_dir_offline(&self, broker: BrokerId, p: &PartitionRegistration) -> bool {
        let Some(b) = self.brokers.get(&broker) else {
            return false;
        };
        if b.log_dir_offline {
            return true;
        }
        let dir = p.directory_of(broker);
        dir != crate::record::DIRECTORY_UNASSIGNED && b.offline_log_dirs.binary_search(&dir).is_ok()
    }

    /// True when `broker_id`'s dynamic config `cordoned.log.dirs` (KIP-1066) is set to a non-empty value:
    /// the broker keeps its replicas but gets no new ones — neither from topic creation nor from
    /// automatic balancing. `runnel cluster decommission` cordons the broker it drains.
    pub fn is_cordoned(&self, broker_id: BrokerId) -> bool {
        self.broker_configs
            .get(&broker_id.get().to_string())
            .and_then(|c| c.get(CORDONED_LOG_DIRS))
            .is_some_and(|v| !v.trim().is_empty())
    }

    /// True when new replicas may be placed on `broker_id`: active ([`Self::is_active_broker`]) and not
    /// cordoned ([`Self::is_cordoned`]).
    pub fn accepts_new_replicas(&self, broker_id: BrokerId) -> bool {
        self.is_active_broker(broker_id) && !self.is_cordoned(broker_id)
    }

    fn topic_by_id_mut(&mut self, id: Uuid) -> Option<&mut TopicImage> {
        self.topics.by_id_mut(id)
    }

    fn topic_name_by_id(&self, id: Uuid) -> Option<String> {
        self.topics.name_by_id(id).map(str::to_owned)
    }

    /// Replays a change of an existing registration: fencing, unfencing, its flags, its removal.
    fn replay_broker_change(&mut self, record: &MetadataRecord) {
        match record {
            MetadataRecord::FenceBrokerRecord {
                broker_id,
                broker_epoch,
            } => self.replay_broker_flags(*broker_id, *broker_epoch, Some(true), None),
            MetadataRecord::UnfenceBrokerRecord {
                broker_id,
                broker_epoch,
            } => self.replay_broker_flags(*broker_id, *broker_epoch, Some(false), None),
            MetadataRecord::BrokerRegistrationChangeRecord {
                broker_id,
                broker_epoch,
                fenced,
                in_controlled_shutdown,
                log_dir_offline,
                offline_log_dirs,
            } => {
                self.replay_broker_flags(
                    *broker_id,
                    *broker_epoch,
                    *fenced,
                    *in_controlled_shutdown,
                );
                if let (Some(o), Some(b)) =
                    (log_dir_offline, self.broker_mut(*broker_id, *broker_epoch))
                {
                    b.log_dir_offline = *o;
                }
                if let (Some(dirs), Some(b)) =
                    (offline_log_dirs, self.broker_mut(*broker_id, *broker_epoch))
                {
                    b.offline_log_dirs = dirs.clone();
                    b.offline_log_dirs.sort();
                }
            }
            MetadataRecord::UnregisterBrokerRecord {
                broker_id,
                broker_epoch,
            } if self.broker_mut(*broker_id, *broker_epoch).is_some() => {
                self.brokers.remove(broker_id);
            }
            _ => {}
        }
    }

    fn broker_mut(
        &mut self,
        broker_id: BrokerId,
        broker_epoch: BrokerEpoch,
    ) -> Option<&mut BrokerRegistration> {
        self.brokers
            .get_mut(&broker_id)
            .filter(|b| b.broker_epoch == broker_epoch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::NO_LEADER;

    #[test]
    fn replay_builds_topics_and_bumps_epochs() {
        let mut img = MetadataImage::default();
        let id = Uuid::from_u128(7);
        img.apply(
            3,
            &MetadataRecord::RegisterBrokerRecord {
                broker_id: BrokerId(1),
                incarnation_id: Uuid::from_u128(1),
                host: "h".into(),
                port: 9092,
                rack: None,
                listeners: Vec::new(),
                log_dirs: Vec::new(),
            },
        );
        assert_eq!(img.brokers[&BrokerId(1)].broker_epoch, BrokerEpoch(3));
        assert!(img.brokers[&BrokerId(1)].fenced);
        img.apply(
            4,
            &MetadataRecord::UnfenceBrokerRecord {
                broker_id: BrokerId(1),
                broker_epoch: BrokerEpoch(2), // stale: ignored
            },
        );
        assert!(img.brokers[&BrokerId(1)].fenced);
        img.apply(
            5,
            &MetadataRecord::TopicRecord {
                name: "t".into(),
                topic_id: id,
            },
        );
        img.apply(
            5,
            &MetadataRecord::PartitionRecord {
                topic_id: id,
                partition_id: 0,
                replicas: vec![BrokerId(1)],
                isr: vec![BrokerId(1)],
                leader: BrokerId(1),
                leader_epoch: LeaderEpoch(0),
                partition_epoch: PartitionEpoch(0),
                directories: Vec::new(),
            },
        );
        img.apply(
            6,
            &MetadataRecord::isr_leader_change(id, 0, None, Some(NO_LEADER)),
        );
        let p = img.partition(id, 0).unwrap();
        assert_eq!(
            (p.leader, p.leader_epoch, p.partition_epoch),
            (NO_LEADER, LeaderEpoch(1), PartitionEpoch(1))
        );
        img.apply(
            7,
            &MetadataRecord::ConfigRecord {
                resource_type: RESOURCE_TOPIC,
                resource_name: "t".into(),
                name: "retention.ms".into(),
                value: Some("5".into()),
            },
        );
        assert_eq!(img.topics["t"].configs["retention.ms"], "5");
        img.apply(8, &MetadataRecord::RemoveTopicRecord { topic_id: id });
        assert!(img.topics.is_empty());
        assert_eq!(img.offset, 8);
        let json = serde_json::to_string(&img).unwrap();
        let back: MetadataImage = serde_json::from_str(&json).unwrap();
        assert_eq!(back, img);
    }

    #[test]
    fn group_config_records_set_and_remove_a_group_resource() {
        let mut img = MetadataImage::default();
        let record = |value: Option<&str>| MetadataRecord::ConfigRecord {
            resource_type: RESOURCE_GROUP,
            resource_name: "g".into(),
            name: "share.auto.offset.reset".into(),
            value: value.map(str::to_string),
        };
        img.apply(1, &record(Some("earliest")));
        assert_eq!(
            img.group_configs["g"]["share.auto.offset.reset"],
            "earliest"
        );
        let json = serde_json::to_string(&img).unwrap();
        assert_eq!(serde_json::from_str::<MetadataImage>(&json).unwrap(), img);
        img.apply(2, &record(None));
        assert!(
            img.group_configs.is_empty(),
            "a group left without configs is removed"
        );
    }
}
