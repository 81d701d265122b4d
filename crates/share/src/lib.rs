//! KIP-932 share groups ("queues for Kafka"), sans I/O: the two state machines behind a share group's record
//! delivery, with injected time and no sockets, tasks, files or clock.
//!
//! - [`SharePartition`] (Kafka's `kafka.server.share.SharePartition`): the in-flight state of one share group
//!   on one topic-partition, held by the partition leader. It decides which offsets a ShareFetch may acquire
//!   ([`SharePartition::next_fetch_offset`], [`SharePartition::acquire`]), applies ShareAcknowledge
//!   ([`SharePartition::acknowledge`]), releases a departed member's records
//!   ([`SharePartition::release_member`]) and expires acquisition locks ([`SharePartition::tick`] at
//!   [`SharePartition::next_deadline`]). What must survive a leader change is [`SharePartition::snapshot`], a
//!   [`ShareState`] the leader writes with WriteShareGroupState and reads back with ReadShareGroupState.
//! - [`ShareCoordinator`] (Kafka's share-coordinator module, `ShareCoordinatorShard`): the durable
//!   per-share-partition state, kept in `__share_group_state` as [`ShareRecord`]s
//!   ([`encode_record`] / [`decode_record`], Kafka's exact byte layout). Its operations mirror the persister
//!   RPCs (InitializeShareGroupState, ReadShareGroupState, WriteShareGroupState,
//!   ReadShareGroupStateSummary, DeleteShareGroupState); each validates, applies its change at once and
//!   returns the record the caller must append. [`ShareCoordinator::replay`] rebuilds the state at load.
//!
//! Every call that depends on time takes `now_ms` (milliseconds since the Unix epoch). Errors are typed
//! ([`ShareError`], [`StateError`], [`RecordDecodeError`]); the first two map to Kafka error codes with
//! `code()` for the broker to answer with.
//!
//! Source: KIP-932, Kafka 4.4 (`SharePartition`, `InFlightState`, `ShareCoordinatorShard`,
//! `PersisterStateBatchCombiner`, `SharePartitionKey`, `share-coordinator/.../common/message/Share*.json`).

#![warn(missing_docs)]

mod combine;
mod coordinator;
mod error;
mod partition;
mod records;
mod state;

pub use combine::combine_state_batches;
pub use coordinator::{
    share_partition_for, ReadSummary, ShareCoordinator, SharePartitionKey, StoredState,
    WriteRequest,
};
pub use error::{ShareError, StateError};
pub use partition::{
    AcknowledgeType, AcknowledgementBatch, AcquiredRecords, InFlightCounts, InFlightRecord,
    RecordState, SharePartition, SharePartitionConfig,
};
pub use records::{
    decode_record, encode_record, RecordDecodeError, ShareRecord, ShareSnapshotValue,
    ShareUpdateValue, SHARE_SNAPSHOT_RECORD_TYPE, SHARE_UPDATE_RECORD_TYPE,
};
pub use state::{DeliveryState, ShareState, StateBatch};
