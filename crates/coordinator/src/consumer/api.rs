//! Request and response shapes of the consumer-group operations (ConsumerGroupHeartbeat,
//! ConsumerGroupDescribe), and the topics image the coordinator assigns from.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use types::ErrorCode;
use uuid::Uuid;

use super::Assignment;

/// The topics as the coordinator sees them when it assigns: name → (id, partition count), and per partition
/// the racks of its replicas (KIP-881/KIP-1101: the `broker.rack` of each replica's broker; empty when the
/// brokers have no rack). Built by the glue from the broker's metadata; `version` changes whenever the
/// topics, a partition count or a partition's racks change (regular expressions are re-resolved only then).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TopicsImage {
    /// Changes whenever the topics change.
    pub version: u64,
    by_name: BTreeMap<String, (Uuid, i32)>,
    names: HashMap<Uuid, String>,
    /// Topic id → racks of each partition's replicas, indexed by partition; absent for a topic without racks.
    racks: HashMap<Uuid, Vec<BTreeSet<String>>>,
}

impl TopicsImage {
    /// An image of `topics` (name, id, partition count) at `version`.
    pub fn new(version: u64, topics: impl IntoIterator<Item = (String, Uuid, i32)>) -> Self {
        let mut image = TopicsImage {
            version,
            ..Default::default()
        };
        for (name, id, partitions) in topics {
            image.names.insert(id, name.clone());
            image.by_name.insert(name, (id, partitions));
        }
        image
    }

    /// Sets the racks of topic `id`'s partitions: `racks[p]` is the set of racks of partition `p`'s replicas.
    /// A topic whose partitions have no rack at all is stored as having none (so that a rack-less cluster's
    /// image is the same as one built without racks).
    pub fn set_partition_racks(&mut self, id: Uuid, racks: Vec<BTreeSet<String>>) {
        if racks.iter().all(BTreeSet::is_empty) {
            self.racks.remove(&id);
        } else {
            self.racks.insert(id, racks);
        }
    }

    /// This image with the racks of topic `id`'s partitions set ([`Self::set_partition_racks`]).
    #[must_use]
    pub fn with_partition_racks(mut self, id: Uuid, racks: Vec<BTreeSet<String>>) -> Self {
        self.set_partition_racks(id, racks);
        self
    }

    /// The racks of topic `id`'s partitions, indexed by partition (a partition past the end has none); empty
    /// when the topic's replicas have no rack.
    pub fn partition_racks(&self, id: &Uuid) -> &[BTreeSet<String>] {
        self.racks.get(id).map_or(&[], Vec::as_slice)
    }

    /// The topic's id and partition count.
    pub fn topic(&self, name: &str) -> Option<(Uuid, i32)> {
        self.by_name.get(name).copied()
    }

    /// The name of topic `id`.
    pub fn name(&self, id: &Uuid) -> Option<&str> {
        self.names.get(id).map(String::as_str)
    }

    /// Every topic name, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.by_name.keys().map(String::as_str)
    }
}

/// ConsumerGroupHeartbeat request (v0–v1, KIP-848). `None` fields mean "unchanged since the last heartbeat".
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConsumerHeartbeatRequest {
    /// API version: v1+ requires a client-generated member id (KIP-1082) and allows `subscribed_topic_regex`.
    pub api_version: i16,
    /// Group id.
    pub group_id: String,
    /// Member id ("" on a v0 first heartbeat: the coordinator generates one).
    pub member_id: String,
    /// 0 to join, -1 to leave, -2 for a static member leaving temporarily, else the member's epoch.
    pub member_epoch: i32,
    /// `group.instance.id` of a static member.
    pub instance_id: Option<String>,
    /// `client.rack`.
    pub rack_id: Option<String>,
    /// Rebalance timeout, ms (-1: unchanged).
    pub rebalance_timeout_ms: i32,
    /// Subscribed topic names.
    pub subscribed_topic_names: Option<Vec<String>>,
    /// Subscribed regular expression (RE2 syntax, v1+).
    pub subscribed_topic_regex: Option<String>,
    /// Server assignor name.
    pub server_assignor: Option<String>,
    /// Partitions the member owns.
    pub topic_partitions: Option<Assignment>,
    /// Client id of the request header.
    pub client_id: String,
    /// Client address, e.g. "/127.0.0.1".
    pub client_host: String,
}

/// ConsumerGroupHeartbeat response.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConsumerHeartbeatResult {
    /// Error code (0 = none).
    pub error_code: ErrorCode,
    /// Error message, if any.
    pub error_message: Option<String>,
    /// The member id (the generated one for a v0 join).
    pub member_id: Option<String>,
    /// The member's epoch after this heartbeat.
    pub member_epoch: i32,
    /// How often the member must heartbeat, ms.
    pub heartbeat_interval_ms: i32,
    /// The member's partitions when they changed or the request was full; `None` = unchanged.
    pub assignment: Option<Assignment>,
}

impl ConsumerHeartbeatResult {
    /// An error answer.
    pub fn error(code: ErrorCode, message: impl Into<String>) -> Self {
        ConsumerHeartbeatResult {
            error_code: code,
            error_message: Some(message.into()),
            ..Default::default()
        }
    }
}

/// One member of a ConsumerGroupDescribe answer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DescribedConsumerMember {
    /// Member id.
    pub member_id: String,
    /// `group.instance.id`.
    pub instance_id: Option<String>,
    /// `client.rack`.
    pub rack_id: Option<String>,
    /// Member epoch.
    pub member_epoch: i32,
    /// Client id.
    pub client_id: String,
    /// Client host.
    pub client_host: String,
    /// Subscribed topic names.
    pub subscribed_topic_names: Vec<String>,
    /// Subscribed regular expression.
    pub subscribed_topic_regex: Option<String>,
    /// Owned partitions.
    pub assignment: Assignment,
    /// Target partitions.
    pub target_assignment: Assignment,
    /// ConsumerGroupDescribe v1 `MemberType` (KIP-1099): 0 for a member speaking the classic protocol, 1 for
    /// one speaking the consumer protocol.
    pub member_type: i8,
}

/// One group of a ConsumerGroupDescribe answer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DescribedConsumerGroup {
    /// 0, or GROUP_ID_NOT_FOUND (69) for an unknown group or one that is not a consumer group.
    pub error_code: ErrorCode,
    /// Error message, if any.
    pub error_message: Option<String>,
    /// Group id.
    pub group_id: String,
    /// "Empty", "Assigning", "Reconciling", "Stable" (or "Dead" with an error).
    pub group_state: String,
    /// Group epoch.
    pub group_epoch: i32,
    /// Target assignment epoch.
    pub assignment_epoch: i32,
    /// The assignor the group uses.
    pub assignor_name: String,
    /// Members, by member id.
    pub members: Vec<DescribedConsumerMember>,
}
