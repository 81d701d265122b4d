//! The Kafka-facing edge of the broker: [`network`] accepts connections and frames requests (plain TCP, with
//! `sendfile` for Fetch) and builds each connection's [`context::ConnectionContext`]; [`context`] is the
//! per-request [`context::RequestContext`] every handler receives; [`apis`] holds one module per API key plus
//! the one place where layer errors (storage, replica, topic changes, controller, config) become Kafka error
//! codes (`apis/errors.rs`).

pub mod apis;
pub mod context;
pub mod network;
pub mod rest;
pub mod sasl_authenticator;
