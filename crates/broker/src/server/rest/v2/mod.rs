//! Confluent REST Proxy API v2 consumer instances: the consume half of the HTTP API (`/consumers/...`).
//!
//! `POST /consumers/{group}` creates a named instance (a Kafka consumer living in the broker, in
//! `group`) with an embedded format (`binary`, `json`, or Runnel's `string`; see [`format`]), and answers
//! its `instance_id` and `base_uri`. Under `/consumers/{group}/instances/{instance}`: `subscription`
//! (POST topics or a `topic_pattern`, GET, DELETE), `assignments` (POST a manual assignment, GET),
//! `positions`, `positions/beginning`, `positions/end` (seek), `records` (GET, the `Accept` header's
//! embedded format must be the instance's), `offsets` (POST commits, GET reads committed ones), and
//! DELETE of the instance (it leaves its group). See [`instance`] for how an instance joins its group,
//! heartbeats and reads; every Kafka request goes through the in-process [`Bridge`].
//!
//! Limits: at most [`MAX_INSTANCES`] instances per broker (429 above); an instance idle (no request) for
//! [`CONSUMER_INSTANCE_TIMEOUT_MS`] is closed; a records call waits at most [`MAX_FETCH_WAIT_MS`] and
//! returns at most [`MAX_RECORDS_BYTES`] of keys and values; a body names at most
//! [`MAX_ITEMS`] topics, partitions or offsets. Instances live in this broker's memory: they are
//! gone after a restart, and in a cluster each broker serves its own — through its own handlers, so the
//! group must be coordinated by this broker (else 50003, NOT_COORDINATOR) and only partitions it leads
//! return records (others answer NOT_LEADER_OR_FOLLOWER to the Fetch and are skipped). A group leader
//! computes the assignment from the partition counts at the join; a topic created after a topics
//! subscription joined is not picked up until the next rebalance. A record that is not JSON in a `json`
//! instance fails the records call (50002) and stays where it is.
//!
//! Errors (Confluent's codes): unknown instance 404/40403, an instance name taken 409/40902, a
//! subscription and a manual assignment together (or a seek on an unassigned partition) 409/40903, an
//! `Accept` format other than the instance's 406/40601, an invalid instance configuration 422/42204.

pub mod assignor;
pub mod format;
mod handlers;
pub mod instance;
pub mod kafka;
pub mod registry;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::routing::{delete, get, post};
use axum::Router;
use parking_lot::Mutex;

use super::bridge::Bridge;
use super::error::RestError;
use super::RestState;
use crate::server::context::KafkaPrincipal;
use instance::ConsumerInstance;
use kafka::Kafka;
use registry::Registry;

/// An instance not used by any request for this long is closed (ms; REST Proxy's
/// `consumer.instance.timeout.ms` default).
pub const CONSUMER_INSTANCE_TIMEOUT_MS: i64 = 300_000;
/// The most consumer instances one broker holds.
pub const MAX_INSTANCES: usize = 1000;
/// How often an instance heartbeats its group (ms).
pub const HEARTBEAT_INTERVAL_MS: u64 = 1_000;
/// The longest a records call waits for records (ms; a larger `timeout` is cut to it). Kept well under
/// [`kafka::SESSION_TIMEOUT_MS`]: the instance does not heartbeat while a records call waits.
pub const MAX_FETCH_WAIT_MS: i32 = 5_000;
/// The most bytes of keys and values one records call returns (REST Proxy's
/// `consumer.request.max.bytes` default, 64 MiB).
pub const MAX_RECORDS_BYTES: i32 = 64 * 1024 * 1024;

/// The most topics, partitions or offsets one request body may name (422 above).
pub const MAX_ITEMS: usize = 10_000;

/// Confluent's "Consumer instance not found." (HTTP 404).
pub const INSTANCE_NOT_FOUND: i32 = 40403;
/// Confluent's code for an `Accept` format other than the instance's (HTTP 406).
pub const FORMAT_MISMATCH: i32 = 40601;
/// Confluent's code for an instance name already taken in the group (HTTP 409).
pub const INSTANCE_EXISTS: i32 = 40902;
/// Confluent's "Illegal state" (HTTP 409).
pub const ILLEGAL_STATE: i32 = 40903;
/// Confluent's "Invalid consumer configuration" (HTTP 422).
pub const INVALID_CONSUMER_CONFIG: i32 = 42204;

/// 409 (40903) "Illegal state: `message`".
pub fn illegal_state(message: &str) -> RestError {
    RestError::new(ILLEGAL_STATE, format!("Illegal state: {message}"))
}

/// The consumer instances of this broker and what their background work needs.
#[derive(Debug)]
pub struct Consumers {
    bridge: Arc<Bridge>,
    registry: Mutex<Registry<Arc<ConsumerInstance>>>,
    reaper_started: AtomicBool,
    next_id: AtomicU64,
}

impl Consumers {
    /// No instances yet, dispatching through `bridge`.
    pub fn new(bridge: Arc<Bridge>) -> Consumers {
        Consumers {
            bridge,
            registry: Mutex::new(Registry::new(MAX_INSTANCES, CONSUMER_INSTANCE_TIMEOUT_MS)),
            reaper_started: AtomicBool::new(false),
            next_id: AtomicU64::new(0),
        }
    }

    /// The instance `name` of `group` (marked used), or 404 (40403) — also when `caller` is not the
    /// principal that created it, so another user can neither use nor detect it.
    fn get(
        &self,
        group: &str,
        name: &str,
        caller: &KafkaPrincipal,
    ) -> Result<Arc<ConsumerInstance>, RestError> {
        let now = super::time::now_ms();
        (self.registry.lock().get(group, name, now))
            .filter(|i| i.owner.principal == *caller)
            .ok_or_else(|| RestError::new(INSTANCE_NOT_FOUND, "Consumer instance not found."))
    }

    /// A fresh instance name: `rest-consumer-<node id>-<n>`.
    fn generated_name(&self) -> String {
        let n = self.next_id.fetch_add(1, Ordering::Relaxed);
        let node = self.bridge.apis().config().node_id.0;
        format!("rest-consumer-{node}-{n}")
    }

    /// Starts (once) the task that closes idle instances, checking every heartbeat interval.
    fn start_reaper(self: &Arc<Self>) {
        if self.reaper_started.swap(true, Ordering::AcqRel) {
            return;
        }
        let consumers = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(HEARTBEAT_INTERVAL_MS)).await;
                let expired = consumers.registry.lock().expire(super::time::now_ms());
                for instance in expired {
                    tracing::info!(group = %instance.group, instance = %instance.name,
                        "closing an idle REST consumer instance");
                    let k = Kafka {
                        bridge: &consumers.bridge,
                        origin: &instance.owner,
                    };
                    instance.close(k).await;
                }
            }
        });
    }
}

/// The API v2 consumer routes (merged into the HTTP API's router).
pub fn routes() -> Router<Arc<RestState>> {
    let i = "/consumers/{group}/instances/{instance}";
    Router::new()
        .route("/consumers/{group}", post(handlers::create))
        .route(i, delete(handlers::delete))
        .route(
            &format!("{i}/subscription"),
            post(handlers::subscribe)
                .get(handlers::subscription)
                .delete(handlers::unsubscribe),
        )
        .route(
            &format!("{i}/assignments"),
            post(handlers::assign).get(handlers::assignments),
        )
        .route(&format!("{i}/positions"), post(handlers::seek))
        .route(
            &format!("{i}/positions/beginning"),
            post(handlers::seek_to_beginning),
        )
        .route(&format!("{i}/positions/end"), post(handlers::seek_to_end))
        .route(&format!("{i}/records"), get(handlers::records))
        .route(
            &format!("{i}/offsets"),
            post(handlers::commit).get(handlers::committed),
        )
}
