//! The Kafka-facing edge of the broker: [`network`] accepts connections and frames requests (plain TCP, with
//! `sendfile` for Fetch), and [`apis`] holds one module per API key plus the one place where layer errors
//! (storage, replica, coordinator, controller, config) become Kafka error codes.

pub mod apis;
pub mod network;
