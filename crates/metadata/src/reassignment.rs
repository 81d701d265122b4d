//! Partition reassignment values (KIP-455): what AlterPartitionReassignments asks for and what
//! ListPartitionReassignments reports, and the image query behind the latter. The decisions are the
//! controller's (`controller::control::reassignment`).

use serde::{Deserialize, Serialize};
use types::BrokerId;

use crate::image::{MetadataImage, PartitionRegistration};

/// One partition of an AlterPartitionReassignments request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reassignment {
    /// Topic name.
    pub topic: String,
    /// Partition index.
    pub partition: i32,
    /// The replicas to move to, preferred leader first; `None` cancels the ongoing reassignment.
    pub target: Option<Vec<BrokerId>>,
}

/// An ongoing reassignment, as ListPartitionReassignments reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OngoingReassignment {
    /// Topic name.
    pub topic: String,
    /// Partition index.
    pub partition: i32,
    /// The current replica list (target first, then the replicas being removed).
    pub replicas: Vec<BrokerId>,
    /// Replicas being added.
    pub adding_replicas: Vec<BrokerId>,
    /// Replicas being removed.
    pub removing_replicas: Vec<BrokerId>,
}

/// ListPartitionReassignments (KIP-455): the ongoing reassignments of `partitions` (topic, indexes) in
/// `image`, or of every partition when `None`; unknown topics and partitions are left out, as Kafka
/// does. Ordered by topic name, then partition index, when `partitions` is `None`; in request order
/// otherwise.
pub fn ongoing_reassignments(
    image: &MetadataImage,
    partitions: Option<&[(String, Vec<i32>)]>,
) -> Vec<OngoingReassignment> {
    let ongoing = |topic: &str, partition: i32, p: &PartitionRegistration| {
        p.is_reassigning().then(|| OngoingReassignment {
            topic: topic.to_string(),
            partition,
            replicas: p.replicas.clone(),
            adding_replicas: p.adding_replicas.clone(),
            removing_replicas: p.removing_replicas.clone(),
        })
    };
    match partitions {
        None => (image.topics.values())
            .flat_map(|t| (t.partitions.iter()).filter_map(|(&i, p)| ongoing(&t.name, i, p)))
            .collect(),
        Some(wanted) => (wanted.iter())
            .filter_map(|(topic, indexes)| Some((topic, indexes, image.topics.get(topic)?)))
            .flat_map(|(topic, indexes, t)| {
                (indexes.iter())
                    .filter_map(|i| ongoing(topic, *i, t.partitions.get(i)?))
                    .collect::<Vec<_>>()
            })
            .collect(),
    }
}
