//! Runnel's group coordinator for Kafka's classic consumer-group protocol and the KIP-848 consumer protocol
//! ([`consumer`]), and committed offsets; and its
//! transaction coordinator ([`transaction`], KIP-98/360/664/890), built the same way.
//!
//! A pure state machine: no sockets, no tasks, no files, no clock. Every call that can change state takes
//! `now_ms` (milliseconds since the Unix epoch); operations that complete later (a JoinGroup waiting for the
//! rebalance, a follower's SyncGroup waiting for the leader) take a caller-chosen [`RequestId`] and are answered
//! through [`Effect`]s, from that call or a later one (including [`GroupCoordinator::tick`], which the glue calls
//! at [`GroupCoordinator::next_deadline`]). Durable state is emitted as [`Effect::Persist`] records in Kafka's
//! `__consumer_offsets` format ([`encode_record`] / [`decode_record`]) and rebuilt with
//! [`GroupCoordinator::replay`] + [`GroupCoordinator::loaded`].
//!
//! Errors are Kafka's: the result structs carry them as [`types::ErrorCode`], and the glue writes the raw `i16`
//! into the response field they fill (`error_code`) at the wire edge, without mapping.
//!
//! The transaction coordinator ([`TransactionCoordinator`], module [`transaction`]) has the same shape: calls take
//! `now_ms` and a caller-chosen [`RequestId`] and return [`transaction::TxnEffect`]s — `Append` a record to
//! `__transaction_state` and report it with `append_completed`, `Respond` to a request, `WriteMarkers` and report
//! them with `markers_written`. New producer ids come from an injected [`transaction::ProducerIdSource`].
//!
//! Source: Kafka protocol guide (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch,
//! OffsetDelete, DescribeGroups, ListGroups, DeleteGroups), KIP-345 (static membership), KIP-394 (member id
//! required), KIP-814 (skip assignment), and the behaviour of Kafka's `group-coordinator` module.

#![warn(missing_docs)]

mod api;
mod config;
pub mod consumer;
mod group;
mod group_coordinator;
mod records;
pub mod share_group;
mod timers;
pub mod transaction;

pub use api::*;
pub use config::{ConsumerGroupMigrationPolicy, GroupConfig, GroupTimeouts};
pub use consumer::api::{
    ConsumerHeartbeatRequest, ConsumerHeartbeatResult, DescribedConsumerGroup,
    DescribedConsumerMember, TopicsImage,
};
pub use group::{GroupState, CONSUMER_PROTOCOL_TYPE};
pub use group_coordinator::{GroupCoordinator, GroupSummary, TxnOffsetsSnapshot};
pub use records::{
    decode_record, encode_record, java_string_hashcode, partition_for, GroupMetadataValue,
    GroupRecord, MemberMetadataValue, OffsetCommitValue, RecordDecodeError,
    GROUP_METADATA_KEY_VERSION, MAX_RECORD_STRING_BYTES, OFFSET_COMMIT_KEY_VERSION,
};
pub use share_group::{
    DescribedShareGroup, DescribedShareMember, ShareHeartbeatRequest, ShareHeartbeatResult,
};
pub use transaction::{TransactionConfig, TransactionCoordinator};
