//! Share groups (KIP-932, "queues for Kafka"): membership and partition assignment. The members of a share
//! group consume the same partitions together; which records each member gets is decided by the partition
//! leaders' share-partition state (crate `share`), not here.
//!
//! The model (Kafka's `ShareGroup`, `ShareGroupMember`, `GroupMetadataManager.shareGroupHeartbeat`):
//!
//! - the **group epoch** is bumped when a member joins, leaves or changes its subscription, or a subscribed
//!   topic's partitions change (tracked by the metadata hash);
//! - the **target assignment** is recomputed by the simple assignor ([`assignor`]) when the group epoch is ahead
//!   of the assignment epoch. A partition may be assigned to several members (more members than partitions),
//!   so there is no revocation: a member moves to the assignment epoch and its target on its next heartbeat.
//!
//! Durable state: the group epoch (record type 11) and each member's subscription (type 10) in
//! `__consumer_offsets` ([`records`]). Target and current assignments (types 12–14) are not written; they are
//! recomputed after a load, and a recovered member's first heartbeat is accepted at any epoch up to the group
//! epoch (share groups own nothing exclusively, so an epoch only orders assignments).
//!
//! Source: KIP-932; Kafka 4.4's `group-coordinator` module.

pub mod assignor;
pub mod records;

use std::collections::{BTreeMap, BTreeSet};

use types::ErrorCode;

use crate::consumer::Assignment;

/// The group type ListGroups reports for share groups.
pub const SHARE_GROUP_TYPE: &str = "share";
/// The protocol type ListGroups reports for share groups (Kafka's `ShareGroup.PROTOCOL_TYPE`).
pub const SHARE_PROTOCOL_TYPE: &str = "share";
/// The one assignor share groups have (`group.share.assignors`).
pub const SIMPLE_ASSIGNOR: &str = "simple";
/// Member epoch of a member leaving (ShareGroupHeartbeat `member_epoch` -1).
pub const LEAVE_GROUP_MEMBER_EPOCH: i32 = -1;

/// A share group's state (Kafka's `ShareGroup.ShareGroupState`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShareGroupState {
    /// No members.
    Empty,
    /// Members (assignments are handed out on their heartbeats).
    Stable,
}

impl ShareGroupState {
    /// Kafka's name, as ListGroups, ShareGroupDescribe and the tools show it.
    pub fn as_str(self) -> &'static str {
        match self {
            ShareGroupState::Empty => "Empty",
            ShareGroupState::Stable => "Stable",
        }
    }
}

/// One member of a share group.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShareMember {
    /// Member id (client-generated, ShareGroupHeartbeat v1).
    pub member_id: String,
    /// Subscription and client details (persisted).
    pub metadata: records::ShareMemberMetadataValue,
    /// The epoch the member must heartbeat with; `None` for a member recovered from the log, whose epoch is
    /// not persisted (its next heartbeat is accepted at any epoch up to the group epoch).
    pub member_epoch: Option<i32>,
    /// The epoch before the last bump (accepted once more, in case that response was lost).
    pub previous_member_epoch: i32,
    /// The partitions the member was last given.
    pub assignment: Assignment,
}

/// One share group. Members are ordered by member id so that behaviour is deterministic.
#[derive(Clone, Debug, Default)]
pub struct ShareGroup {
    /// Group id.
    pub group_id: String,
    /// The group epoch.
    pub group_epoch: i32,
    /// The epoch of the current target assignment (≤ `group_epoch`).
    pub assignment_epoch: i32,
    /// Hash of the subscribed topics' metadata when the group epoch was last bumped (0: unknown).
    pub metadata_hash: i64,
    /// Members by id.
    pub members: BTreeMap<String, ShareMember>,
    /// Target assignment by member id.
    pub target: BTreeMap<String, Assignment>,
}

impl ShareGroup {
    /// An empty group at epoch 0.
    pub fn new(group_id: &str) -> Self {
        ShareGroup {
            group_id: group_id.to_string(),
            ..Default::default()
        }
    }

    /// The group's state.
    pub fn state(&self) -> ShareGroupState {
        match self.members.is_empty() {
            true => ShareGroupState::Empty,
            false => ShareGroupState::Stable,
        }
    }

    /// Every topic name some member subscribes to.
    pub fn subscribed_topics(&self) -> BTreeSet<String> {
        (self.members.values())
            .flat_map(|m| m.metadata.subscribed_topic_names.iter().cloned())
            .collect()
    }
}

/// ShareGroupHeartbeat request (v1, KIP-932). `None` fields mean "unchanged since the last heartbeat".
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShareHeartbeatRequest {
    /// Group id.
    pub group_id: String,
    /// Member id (client-generated UUID).
    pub member_id: String,
    /// 0 to join, -1 to leave, else the member's epoch.
    pub member_epoch: i32,
    /// `client.rack`.
    pub rack_id: Option<String>,
    /// Subscribed topic names.
    pub subscribed_topic_names: Option<Vec<String>>,
    /// Client id of the request header.
    pub client_id: String,
    /// Client address, e.g. "/127.0.0.1".
    pub client_host: String,
}

/// ShareGroupHeartbeat response.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShareHeartbeatResult {
    /// Error code (0 = none).
    pub error_code: ErrorCode,
    /// Error message, if any.
    pub error_message: Option<String>,
    /// The member id.
    pub member_id: Option<String>,
    /// The member's epoch after this heartbeat (-1 after a leave).
    pub member_epoch: i32,
    /// How often the member must heartbeat, ms.
    pub heartbeat_interval_ms: i32,
    /// The member's partitions when they changed or it joined; `None` = unchanged.
    pub assignment: Option<Assignment>,
}

impl ShareHeartbeatResult {
    /// An error answer.
    pub fn error(code: ErrorCode, message: impl Into<String>) -> Self {
        ShareHeartbeatResult {
            error_code: code,
            error_message: Some(message.into()),
            ..Default::default()
        }
    }
}

/// One member of a ShareGroupDescribe answer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DescribedShareMember {
    /// Member id.
    pub member_id: String,
    /// `client.rack`.
    pub rack_id: Option<String>,
    /// Member epoch (the group epoch for a recovered member that has not heartbeated yet).
    pub member_epoch: i32,
    /// Client id.
    pub client_id: String,
    /// Client host.
    pub client_host: String,
    /// Subscribed topic names.
    pub subscribed_topic_names: Vec<String>,
    /// The member's partitions.
    pub assignment: Assignment,
}

/// One group of a ShareGroupDescribe answer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DescribedShareGroup {
    /// 0, or GROUP_ID_NOT_FOUND (69) for an unknown group or one that is not a share group.
    pub error_code: ErrorCode,
    /// Error message, if any.
    pub error_message: Option<String>,
    /// Group id.
    pub group_id: String,
    /// "Empty" or "Stable" ("Dead" with an error).
    pub group_state: String,
    /// Group epoch.
    pub group_epoch: i32,
    /// Target assignment epoch.
    pub assignment_epoch: i32,
    /// The assignor ("simple").
    pub assignor_name: String,
    /// Members, by member id.
    pub members: Vec<DescribedShareMember>,
}
