//! The simulated producer: an idempotent producer (fixed producer id, epoch 0) sending one single-record
//! batch at a time with acks=all, retrying the same sequence number until it is acknowledged, then the next.
//! The record's value is its sequence number, so the checker can tell loss, duplicates and reorder apart.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use protocol::error::ErrorCode;
use protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use protocol::messages::ProduceRequest;
use protocol::record::{Compression, RecordBatchBuilder, Records};
use protocol::{RequestBody, ResponseBody};
use replica::replica_fetcher::Connection;
use types::{BrokerId, Clock};

use super::cluster::{host, SimClock, TurmoilConnector, World, PORT, TOPIC};

/// The producer id the simulated producer uses (no InitProducerId: the leader accepts a new producer at
/// sequence 0).
pub const PRODUCER_ID: i64 = 4242;

/// What the producer saw, shared with the test loop.
#[derive(Default)]
pub struct Acks {
    /// Acknowledged (sequence, offset), in order.
    pub acked: Mutex<Vec<(i32, i64)>>,
    /// Set by the test loop to end the producer after its current request.
    pub stop: AtomicBool,
    /// Error answers seen (code name → count is in the trace; unexpected ones fail the run).
    pub unexpected: Mutex<Vec<String>>,
}

/// One batch: a record whose value is `s<seq>`, base sequence `seq`.
fn batch(seq: i32) -> Bytes {
    let b = RecordBatchBuilder::new(Compression::None).producer(PRODUCER_ID, 0, seq);
    let mut b = b;
    b.append(
        SimClock::default().now_ms(),
        None,
        Some(Bytes::from(format!("s{seq}"))),
        vec![],
    );
    b.build().unwrap()
}

fn request(seq: i32) -> RequestBody {
    RequestBody::Produce(ProduceRequest {
        acks: -1,
        timeout_ms: 2_000,
        topic_data: vec![TopicProduceData {
            name: TOPIC.to_string(),
            partition_data: vec![PartitionProduceData {
                index: 0,
                records: Some(Records::Memory(batch(seq))),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    })
}

/// Errors a producer retries: leadership moving, too few in-sync replicas, timeouts.
fn retriable(code: ErrorCode) -> bool {
    [
        ErrorCode::NOT_LEADER_OR_FOLLOWER,
        ErrorCode::NOT_ENOUGH_REPLICAS,
        ErrorCode::NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ErrorCode::REQUEST_TIMED_OUT,
        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode::KAFKA_STORAGE_ERROR,
    ]
    .contains(&code)
}

/// The producer's request timeout. Shorter than the longest held link (800 ms), so a held Produce is given
/// up and its batch sent again on a new connection while the first copy is still on its way — what a
/// producer with a short `request.timeout.ms` does (the Java client disconnects on a request timeout) — and
/// the broker must recognise the second copy (idempotence), also when the two arrive in either order.
const REQUEST_TIMEOUT: Duration = Duration::from_millis(700);

/// The producer's software: runs until `acks.stop`.
pub async fn run_producer(world: Arc<World>, acks: Arc<Acks>) -> turmoil::Result {
    let mut seq = 0i32;
    let mut conn: Option<(i32, Connection)> = None;
    let backoff = Duration::from_millis(50);
    while !acks.stop.load(Ordering::Acquire) {
        let Some(leader) = world.leader() else {
            tokio::time::sleep(backoff).await;
            continue;
        };
        if conn.as_ref().is_none_or(|(l, _)| *l != leader) {
            let name = host(leader);
            let c = Connection::connect_with(&TurmoilConnector, &name, PORT, BrokerId(-1));
            match tokio::time::timeout(Duration::from_secs(2), c).await {
                Ok(Ok(c)) => conn = Some((leader, c)),
                _ => {
                    tokio::time::sleep(backoff).await;
                    continue;
                }
            }
        }
        let (_, c) = conn.as_mut().expect("connected");
        let resp = c.call(9, request(seq), REQUEST_TIMEOUT).await;
        let resp = match resp {
            Ok(ResponseBody::Produce(r)) => r,
            Ok(_) | Err(_) => {
                conn = None;
                tokio::time::sleep(backoff).await;
                continue;
            }
        };
        let p = &resp.responses[0].partition_responses[0];
        let code = ErrorCode(p.error_code);
        if code == ErrorCode::NONE {
            acks.acked.lock().push((seq, p.base_offset));
            seq += 1;
        } else {
            if !retriable(code) {
                acks.unexpected
                    .lock()
                    .push(format!("seq {seq}: {}", code.name()));
            }
            if code == ErrorCode::NOT_LEADER_OR_FOLLOWER {
                conn = None;
            }
            tokio::time::sleep(backoff).await;
        }
    }
    Ok(())
}
