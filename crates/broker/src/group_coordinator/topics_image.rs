//! The coordinator's view of the topics (`coordinator::TopicsImage`), built from the metadata image:
//! partition counts and, for the rack-aware assignors (KIP-881), each partition's replica racks.

use std::collections::BTreeSet;

/// The coordinator's [`coordinator::TopicsImage`] of a metadata image: every topic's name, id and partition
/// count, and per partition the set of its replicas' brokers' `broker.rack` (brokers without a rack, or not
/// registered, add none; a rack-less cluster's image has no racks at all).
pub(super) fn build(image: &metadata::MetadataImage) -> coordinator::TopicsImage {
    let topics =
        (image.topics.values()).map(|t| (t.name.clone(), t.topic_id, t.partitions.len() as i32));
    let mut out = coordinator::TopicsImage::new(image.offset as u64, topics);
    if image.brokers.values().all(|b| b.rack.is_none()) {
        return out;
    }
    for t in image.topics.values() {
        let mut racks = vec![BTreeSet::new(); t.partitions.len()];
        for (p, reg) in &t.partitions {
            let Some(slot) = usize::try_from(*p).ok().and_then(|p| racks.get_mut(p)) else {
                continue;
            };
            slot.extend((reg.replicas.iter()).filter_map(|b| image.brokers.get(b)?.rack.clone()));
        }
        out.set_partition_racks(t.topic_id, racks);
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use metadata::{BrokerRegistration, MetadataImage, PartitionRegistration, TopicImage};
    use types::{BrokerEpoch, BrokerId, LeaderEpoch, PartitionEpoch};
    use uuid::Uuid;

    use super::*;

    fn broker(id: i32, rack: Option<&str>) -> (BrokerId, BrokerRegistration) {
        let reg = BrokerRegistration {
            broker_id: BrokerId(id),
            broker_epoch: BrokerEpoch(1),
            incarnation_id: Uuid::nil(),
            host: "localhost".into(),
            port: 9092,
            listeners: Vec::new(),
            rack: rack.map(str::to_string),
            fenced: false,
            in_controlled_shutdown: false,
            log_dir_offline: false,
            log_dirs: Vec::new(),
            offline_log_dirs: Vec::new(),
        };
        (BrokerId(id), reg)
    }

    fn partition(replicas: &[i32]) -> PartitionRegistration {
        let replicas: Vec<BrokerId> = replicas.iter().map(|b| BrokerId(*b)).collect();
        PartitionRegistration {
            leader: replicas[0],
            isr: replicas.clone(),
            replicas,
            leader_epoch: LeaderEpoch(0),
            partition_epoch: PartitionEpoch(0),
            adding_replicas: Vec::new(),
            removing_replicas: Vec::new(),
            directories: Vec::new(),
        }
    }

    fn image(racks: [Option<&str>; 3]) -> MetadataImage {
        let mut image = MetadataImage {
            offset: 42,
            ..Default::default()
        };
        for (id, rack) in (1..).zip(racks) {
            let (id, reg) = broker(id, rack);
            image.brokers.insert(id, reg);
        }
        let partitions: BTreeMap<i32, PartitionRegistration> = [
            (0, partition(&[1, 2])),
            (1, partition(&[2, 3])),
            (2, partition(&[3, 9])),
        ]
        .into();
        let topic = TopicImage {
            name: "t".into(),
            topic_id: Uuid::from_u128(7),
            partitions,
            configs: BTreeMap::new(),
        };
        image.topics.insert("t".into(), topic);
        image
    }

    fn set(racks: &[&str]) -> BTreeSet<String> {
        racks.iter().map(|r| r.to_string()).collect()
    }

    #[test]
    fn partitions_carry_their_replicas_racks() {
        let t = build(&image([Some("a"), Some("b"), None]));
        assert_eq!(
            (t.version, t.topic("t")),
            (42, Some((Uuid::from_u128(7), 3)))
        );
        // Broker 3 has no rack and broker 9 is not registered: they add none.
        assert_eq!(
            t.partition_racks(&Uuid::from_u128(7)),
            [set(&["a", "b"]), set(&["b"]), set(&[])]
        );
    }

    #[test]
    fn a_rackless_cluster_has_no_racks() {
        let t = build(&image([None, None, None]));
        assert!(t.partition_racks(&Uuid::from_u128(7)).is_empty());
        assert_eq!(
            t,
            coordinator::TopicsImage::new(42, [("t".to_string(), Uuid::from_u128(7), 3)])
        );
    }
}
