//! The metadata log records and the image built by replaying them.
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
use uuid::Uuid;

/// `leader` value of a partition without a leader (Kafka's `LeaderConstants.NO_LEADER`).
pub const NO_LEADER: i32 = -1;

/// Config resource type of a topic (Kafka `ConfigResource.Type.TOPIC`).
pub const RESOURCE_TOPIC: i8 = 2;
/// Config resource type of a broker (Kafka `ConfigResource.Type.BROKER`); resource name `""` is the
/// cluster-wide default, otherwise the decimal broker id.
pub const RESOURCE_BROKER: i8 = 4;

/// One record of the metadata log (`__cluster_metadata-0`), serialized as JSON with a `"type"` tag
/// naming the Kafka record (KIP-631).
///
/// Several records committed by one controller decision share one raft log index (their offset).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum MetadataRecord {
    /// A broker registered (KIP-631 `RegisterBrokerRecord`). Replaces any previous registration of
    /// `broker_id`; the new registration starts fenced, not in controlled shutdown, and its broker
    /// epoch is the offset (raft log index) at which this record is applied.
    RegisterBrokerRecord {
        /// The broker id (`node.id`).
        broker_id: i32,
        /// Random id of this broker process incarnation.
        incarnation_id: Uuid,
        /// Advertised host of the broker's client listener.
        host: String,
        /// Advertised port of the broker's client listener.
        port: u16,
        /// `broker.rack`, if set.
        rack: Option<String>,
    },
    /// The broker is fenced (KIP-631 `FenceBrokerRecord`): not eligible as leader or ISR member.
    /// Ignored unless `broker_epoch` matches the current registration.
    FenceBrokerRecord {
        /// The broker id.
        broker_id: i32,
        /// The registration's broker epoch.
        broker_epoch: i64,
    },
    /// The broker is unfenced (KIP-631 `UnfenceBrokerRecord`). Ignored unless `broker_epoch` matches.
    UnfenceBrokerRecord {
        /// The broker id.
        broker_id: i32,
        /// The registration's broker epoch.
        broker_epoch: i64,
    },
    /// A change of a registration's flags (KIP-631/KIP-841 `BrokerRegistrationChangeRecord`); `None`
    /// leaves a flag unchanged. Ignored unless `broker_epoch` matches.
    BrokerRegistrationChangeRecord {
        /// The broker id.
        broker_id: i32,
        /// The registration's broker epoch.
        broker_epoch: i64,
        /// New fenced flag, if changed.
        fenced: Option<bool>,
        /// New controlled-shutdown flag, if changed.
        in_controlled_shutdown: Option<bool>,
    },
    /// A topic was created (KIP-631 `TopicRecord`); its partitions follow as `PartitionRecord`s.
    TopicRecord {
        /// Topic name.
        name: String,
        /// Topic id (KIP-516).
        topic_id: Uuid,
    },
    /// A partition was created (KIP-631 `PartitionRecord`) with its full state.
    PartitionRecord {
        /// Id of the owning topic; the record is ignored if the topic does not exist.
        topic_id: Uuid,
        /// Partition index.
        partition_id: i32,
        /// Replica broker ids, preferred leader first.
        replicas: Vec<i32>,
        /// In-sync replica broker ids.
        isr: Vec<i32>,
        /// Leader broker id or [`NO_LEADER`].
        leader: i32,
        /// Leader epoch.
        leader_epoch: i32,
        /// Partition epoch (bumped on every change).
        partition_epoch: i32,
    },
    /// A change of a partition (KIP-631 `PartitionChangeRecord`). `None` leaves a field unchanged.
    /// Replay bumps `partition_epoch` by one, and `leader_epoch` by one when `leader` is `Some`.
    PartitionChangeRecord {
        /// Id of the owning topic.
        topic_id: Uuid,
        /// Partition index.
        partition_id: i32,
        /// New ISR, if changed.
        isr: Option<Vec<i32>>,
        /// New leader (or [`NO_LEADER`]), if changed.
        leader: Option<i32>,
    },
    /// The topic and all its partitions and configs are removed (KIP-631 `RemoveTopicRecord`).
    RemoveTopicRecord {
        /// Id of the removed topic.
        topic_id: Uuid,
    },
    /// A dynamic config was set (`value: Some`) or deleted (`value: None`) (KIP-631 `ConfigRecord`).
    ConfigRecord {
        /// [`RESOURCE_TOPIC`] or [`RESOURCE_BROKER`]; other types are ignored on replay.
        resource_type: i8,
        /// Topic name, or broker id (`""` = cluster default).
        resource_name: String,
        /// Config name.
        name: String,
        /// Config value, `None` to delete.
        value: Option<String>,
    },
    /// A block of producer ids was handed to a broker (KIP-730 `ProducerIdsRecord`):
    /// `next_producer_id` is the first id not yet handed out.
    ProducerIdsRecord {
        /// Broker that received the block.
        broker_id: i32,
        /// Its broker epoch.
        broker_epoch: i64,
        /// First producer id not yet allocated.
        next_producer_id: i64,
    },
}

/// A broker's registration as replayed from the log (Kafka `BrokerRegistration`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokerRegistration {
    /// Broker id.
    pub broker_id: i32,
    /// Broker epoch: the offset of the `RegisterBrokerRecord` of this registration.
    pub broker_epoch: i64,
    /// Incarnation id sent by the broker process at registration.
    pub incarnation_id: Uuid,
    /// Advertised host.
    pub host: String,
    /// Advertised port.
    pub port: u16,
    /// Rack, if configured.
    pub rack: Option<String>,
    /// Fenced brokers are neither leaders nor ISR members.
    pub fenced: bool,
    /// The broker asked for controlled shutdown (KIP-631); it is not chosen as leader or added to ISRs.
    pub in_controlled_shutdown: bool,
}

/// A partition's replica state (Kafka `PartitionRegistration`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct PartitionRegistration {
    /// Replica broker ids, preferred leader first.
    pub replicas: Vec<i32>,
    /// In-sync replicas (a subset of `replicas`).
    pub isr: Vec<i32>,
    /// Leader broker id, or [`NO_LEADER`] (-1).
    pub leader: i32,
    /// Leader epoch: bumped on every leader change.
    pub leader_epoch: i32,
    /// Partition epoch: bumped on every change of this registration (KIP-497 AlterPartition uses it
    /// to reject stale updates).
    pub partition_epoch: i32,
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
    pub brokers: BTreeMap<i32, BrokerRegistration>,
    /// Topics by name.
    pub topics: BTreeMap<String, TopicImage>,
    /// Dynamic broker configs: `""` = cluster default, otherwise the decimal broker id.
    pub broker_configs: BTreeMap<String, BTreeMap<String, String>>,
    /// First producer id not yet handed out (KIP-730).
    pub next_producer_id: i64,
}

impl Default for MetadataImage {
    fn default() -> Self {
        MetadataImage {
            offset: -1,
            cluster_id: String::new(),
            brokers: BTreeMap::new(),
            topics: BTreeMap::new(),
            broker_configs: BTreeMap::new(),
            next_producer_id: 0,
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
            } => {
                self.brokers.insert(
                    *broker_id,
                    BrokerRegistration {
                        broker_id: *broker_id,
                        broker_epoch: offset,
                        incarnation_id: *incarnation_id,
                        host: host.clone(),
                        port: *port,
                        rack: rack.clone(),
                        fenced: true,
                        in_controlled_shutdown: false,
                    },
                );
            }
            MetadataRecord::FenceBrokerRecord {
                broker_id,
                broker_epoch,
            } => {
                if let Some(b) = self.broker_mut(*broker_id, *broker_epoch) {
                    b.fenced = true;
                }
            }
            MetadataRecord::UnfenceBrokerRecord {
                broker_id,
                broker_epoch,
            } => {
                if let Some(b) = self.broker_mut(*broker_id, *broker_epoch) {
                    b.fenced = false;
                }
            }
            MetadataRecord::BrokerRegistrationChangeRecord {
                broker_id,
                broker_epoch,
                fenced,
                in_controlled_shutdown,
            } => {
                if let Some(b) = self.broker_mut(*broker_id, *broker_epoch) {
                    if let Some(f) = fenced {
                        b.fenced = *f;
                    }
                    if let Some(s) = in_controlled_shutdown {
                        b.in_controlled_shutdown = *s;
                    }
                }
            }
            MetadataRecord::TopicRecord { name, topic_id } => {
                // A name is bound to one id: drop any other topic that used this id.
                if let Some(old) = self.topic_name_by_id(*topic_id) {
                    if &old != name {
                        self.topics.remove(&old);
                    }
                }
                self.topics.insert(
                    name.clone(),
                    TopicImage {
                        name: name.clone(),
                        topic_id: *topic_id,
                        partitions: BTreeMap::new(),
                        configs: BTreeMap::new(),
                    },
                );
            }
            MetadataRecord::PartitionRecord {
                topic_id,
                partition_id,
                replicas,
                isr,
                leader,
                leader_epoch,
                partition_epoch,
            } => {
                if let Some(t) = self.topic_by_id_mut(*topic_id) {
                    t.partitions.insert(
                        *partition_id,
                        PartitionRegistration {
                            replicas: replicas.clone(),
                            isr: isr.clone(),
                            leader: *leader,
                            leader_epoch: *leader_epoch,
                            partition_epoch: *partition_epoch,
                        },
                    );
                }
            }
            MetadataRecord::PartitionChangeRecord {
                topic_id,
                partition_id,
                isr,
                leader,
            } => {
                if let Some(p) = self
                    .topic_by_id_mut(*topic_id)
                    .and_then(|t| t.partitions.get_mut(partition_id))
                {
                    if let Some(isr) = isr {
                        p.isr = isr.clone();
                    }
                    if let Some(leader) = leader {
                        p.leader = *leader;
                        p.leader_epoch = p.leader_epoch.saturating_add(1);
                    }
                    p.partition_epoch = p.partition_epoch.saturating_add(1);
                }
            }
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
            } => {
                let configs = match *resource_type {
                    RESOURCE_TOPIC => match self.topics.get_mut(resource_name) {
                        Some(t) => &mut t.configs,
                        None => return,
                    },
                    RESOURCE_BROKER => self
                        .broker_configs
                        .entry(resource_name.clone())
                        .or_default(),
                    _ => return,
                };
                match value {
                    Some(v) => {
                        configs.insert(name.clone(), v.clone());
                    }
                    None => {
                        configs.remove(name);
                    }
                }
                if *resource_type == RESOURCE_BROKER
                    && self
                        .broker_configs
                        .get(resource_name)
                        .is_some_and(|m| m.is_empty())
                {
                    self.broker_configs.remove(resource_name);
                }
            }
            MetadataRecord::ProducerIdsRecord {
                next_producer_id, ..
            } => {
                if *next_producer_id > self.next_producer_id {
                    self.next_producer_id = *next_producer_id;
                }
            }
        }
    }

    /// The topic with id `id`, if any (a linear scan over topics).
    pub fn topic_by_id(&self, id: Uuid) -> Option<&TopicImage> {
        self.topics.values().find(|t| t.topic_id == id)
    }

    /// The partition `partition` of topic `topic_id`, if any.
    pub fn partition(&self, topic_id: Uuid, partition: i32) -> Option<&PartitionRegistration> {
        self.topic_by_id(topic_id)
            .and_then(|t| t.partitions.get(&partition))
    }

    /// True when `broker_id` is registered, unfenced and not in controlled shutdown: eligible as
    /// leader, new ISR member and placement target.
    pub fn is_active_broker(&self, broker_id: i32) -> bool {
        self.brokers
            .get(&broker_id)
            .is_some_and(|b| !b.fenced && !b.in_controlled_shutdown)
    }

    fn topic_by_id_mut(&mut self, id: Uuid) -> Option<&mut TopicImage> {
        self.topics.values_mut().find(|t| t.topic_id == id)
    }

    fn topic_name_by_id(&self, id: Uuid) -> Option<String> {
        self.topic_by_id(id).map(|t| t.name.clone())
    }

    fn broker_mut(&mut self, broker_id: i32, broker_epoch: i64) -> Option<&mut BrokerRegistration> {
        self.brokers
            .get_mut(&broker_id)
            .filter(|b| b.broker_epoch == broker_epoch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_builds_topics_and_bumps_epochs() {
        let mut img = MetadataImage::default();
        let id = Uuid::from_u128(7);
        img.apply(
            3,
            &MetadataRecord::RegisterBrokerRecord {
                broker_id: 1,
                incarnation_id: Uuid::from_u128(1),
                host: "h".into(),
                port: 9092,
                rack: None,
            },
        );
        assert_eq!(img.brokers[&1].broker_epoch, 3);
        assert!(img.brokers[&1].fenced);
        img.apply(
            4,
            &MetadataRecord::UnfenceBrokerRecord {
                broker_id: 1,
                broker_epoch: 2, // stale: ignored
            },
        );
        assert!(img.brokers[&1].fenced);
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
                replicas: vec![1],
                isr: vec![1],
                leader: 1,
                leader_epoch: 0,
                partition_epoch: 0,
            },
        );
        img.apply(
            6,
            &MetadataRecord::PartitionChangeRecord {
                topic_id: id,
                partition_id: 0,
                isr: None,
                leader: Some(NO_LEADER),
            },
        );
        let p = img.partition(id, 0).unwrap();
        assert_eq!((p.leader, p.leader_epoch, p.partition_epoch), (-1, 1, 1));
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
}
