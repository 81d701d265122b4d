//! Kafka error codes, as carried in every response's `error_code` fields.
//!
//! The table lives in the `types` crate (one table for every Runnel crate); it is re-exported here so the wire
//! codec's users find it next to the messages that carry it.

pub use types::ErrorCode;
