//! Vocabulary types shared by every Runnel crate. A leaf: no I/O, no tokio, no other Runnel crate.
//!
//! * [`ErrorCode`]: the one table of Kafka error codes (protocol guide, "Error Codes"). Crates below the
//!   protocol edge (coordinator, controller) use these constants instead of keeping their own numbers.
//! * [`Clock`], [`SystemClock`], [`ManualClock`]: wall-clock time in ms since the Unix epoch, injectable so
//!   tests and a simulator control time.
//! * [`Offset`], [`LeaderEpoch`], [`PartitionEpoch`], [`BrokerId`], [`ProducerId`], [`ProducerEpoch`]: newtypes
//!   over the wire integers, used wherever these values cross a crate boundary (storage ↔ broker, and the
//!   metadata image, controller and replication state).
//!
//! Feature `serde`: `ErrorCode` and the id newtypes serialize as their plain integers.

#![warn(missing_docs)]

pub mod clock;
pub mod error_code;
pub mod ids;
pub mod topic_partition;

pub use clock::{Clock, ManualClock, SystemClock};
pub use error_code::ErrorCode;
pub use ids::{
    BrokerEpoch, BrokerId, LeaderEpoch, Offset, PartitionEpoch, ProducerEpoch, ProducerId,
};
pub use topic_partition::{is_legal_topic_name, TopicPartition};
