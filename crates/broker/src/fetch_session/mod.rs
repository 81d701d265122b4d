//! Incremental fetch sessions (KIP-227; Kafka's `FetchSession`, `CachedPartition`, `FetchSessionCache`), sans
//! I/O: time comes in as `now_ms` arguments (ms on the broker's
//! monotonic clock), session ids from a seeded generator, and
//! the errors are typed ([`FetchSessionError`]); `server/apis/fetch_session.rs` maps them to Kafka codes and
//! drives the cache from the Fetch handler.
//!
//! A Fetch request's `(session_id, session_epoch)` says what it is ([`SessionRequest::classify`]):
//!
//! | session_id | epoch | meaning |
//! |---|---|---|
//! | 0 | -1 (FINAL_EPOCH) | sessionless full fetch, no session created |
//! | 0 | 0 (INITIAL_EPOCH) | full fetch creating a session if a slot is free (else answered with id 0) |
//! | id | -1 | closes session `id`, then a sessionless full fetch |
//! | id | 0 | closes session `id`, then a full fetch creating a new session |
//! | any | other | incremental fetch of session `id` at that epoch |
//!
//! An incremental fetch carries only the partitions whose fetch parameters changed (added or updated in the
//! session) and `forgotten_topics_data` (removed); the broker reads every partition of the session, in the
//! session's order, and answers only the partitions that changed since the last answer
//! ([`CachedPartition::must_respond`]: records, a new HighWatermark, LastStableOffset or LogStartOffset, an
//! error, a diverging epoch, a preferred read replica). Partitions that returned records move to the end of
//! the session's order, so that under `max_bytes` the others get their turn (Kafka does the same).
//! An unknown session is FETCH_SESSION_ID_NOT_FOUND, a wrong epoch INVALID_FETCH_SESSION_EPOCH, a session
//! created with topic ids (Fetch v13+) used without them, or the reverse, FETCH_SESSION_TOPIC_ID_ERROR.
//! The session's epoch advances with every accepted incremental request: [`next_epoch`] wraps from
//! `i32::MAX` to 1 (0 and -1 are reserved).
//!
//! Partitions are keyed by topic id in sessions of Fetch v13+ and by topic name before ([`TopicKey`]); a
//! session's partition count is bounded by [`FetchSessionConfig::max_partitions`] (what one request frame
//! can carry), so incremental requests cannot grow a session without bound.
//!
//! Sessions live in this broker's memory only: a restart forgets them, and the clients' next incremental
//! fetch is FETCH_SESSION_ID_NOT_FOUND, after which they start over with a full fetch. The cache and its
//! eviction rule are in [`cache`].

pub mod cache;
#[cfg(test)]
mod tests;

use std::collections::HashMap;

use uuid::Uuid;

pub use cache::{FetchSessionCache, FetchSessionConfig};

/// The session id of "no session" (Kafka's `INVALID_SESSION_ID`).
pub const INVALID_SESSION_ID: i32 = 0;
/// The epoch of a full fetch that asks for a new session (Kafka's `INITIAL_EPOCH`).
pub const INITIAL_EPOCH: i32 = 0;
/// The epoch of a full fetch that wants no session (Kafka's `FINAL_EPOCH`).
pub const FINAL_EPOCH: i32 = -1;

/// The epoch after `epoch` (Kafka's `FetchMetadata.nextEpoch`): -1 stays -1, `i32::MAX` wraps to 1 (0 and
/// -1 are reserved), any other epoch is incremented.
pub fn next_epoch(epoch: i32) -> i32 {
    if epoch < 0 {
        FINAL_EPOCH
    } else if epoch == i32::MAX {
        1
    } else {
        epoch + 1
    }
}

/// What a Fetch request asks of the session cache, from its `session_id` and `session_epoch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionRequest {
    /// A full fetch answered without a session (epoch -1); `close` is a session to close first.
    Sessionless {
        /// The session the request names (closed before it is served), if any.
        close: Option<i32>,
    },
    /// A full fetch that creates a new session if a slot is free (epoch 0); `close` is a session to close
    /// first.
    Full {
        /// The session the request names (closed before it is served), if any.
        close: Option<i32>,
    },
    /// An incremental fetch of `session_id` at `epoch` (any other epoch; only an existing session at its
    /// epoch accepts it).
    Incremental {
        /// The session (0 is never a session: FETCH_SESSION_ID_NOT_FOUND).
        session_id: i32,
        /// The request's epoch.
        epoch: i32,
    },
}

impl SessionRequest {
    /// Kafka's `FetchMetadata` reading of a request: epoch -1 or 0 is a full fetch (closing the named
    /// session), anything else incremental.
    pub fn classify(session_id: i32, epoch: i32) -> SessionRequest {
        let close = (session_id != INVALID_SESSION_ID).then_some(session_id);
        match epoch {
            FINAL_EPOCH => SessionRequest::Sessionless { close },
            INITIAL_EPOCH => SessionRequest::Full { close },
            _ => SessionRequest::Incremental { session_id, epoch },
        }
    }
}

/// How a session names a partition's topic: by id in sessions of Fetch v13+ (KIP-516), by name before.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TopicKey {
    /// Fetch v13+: the topic id (it may no longer resolve: UNKNOWN_TOPIC_ID for its partitions).
    Id(Uuid),
    /// Fetch v7–12: the topic name.
    Name(String),
}

/// A partition of a session: its topic key and index.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PartitionKey {
    /// The topic, by id or by name (see [`TopicKey`]).
    pub topic: TopicKey,
    /// The partition index.
    pub partition: i32,
}

/// What a fetcher asks of one partition (the request half of Kafka's `CachedPartition`); an incremental
/// request sends a partition again only when one of these changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartitionFetch {
    /// Where to read from (offset).
    pub fetch_offset: i64,
    /// The fetcher's own LogStartOffset (followers; -1 for consumers).
    pub log_start_offset: i64,
    /// Most record bytes to return for the partition.
    pub max_bytes: i32,
    /// KIP-320: the leader epoch the fetcher knows (-1: unchecked).
    pub current_leader_epoch: i32,
    /// KIP-595: the epoch of the fetcher's last fetched record (-1: none).
    pub last_fetched_epoch: i32,
}

/// The offsets the fetcher was last told for a partition (the response half of Kafka's `CachedPartition`);
/// -1 where nothing was told yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartitionState {
    /// The HighWatermark last answered.
    pub high_watermark: i64,
    /// The LastStableOffset last answered.
    pub last_stable_offset: i64,
    /// The LogStartOffset last answered.
    pub log_start_offset: i64,
}

impl PartitionState {
    /// Nothing answered yet: the partition's first answer always goes out.
    pub const UNKNOWN: PartitionState = PartitionState {
        high_watermark: -1,
        last_stable_offset: -1,
        log_start_offset: -1,
    };
}

/// One partition's answer in this round, as the session decides whether to send it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartitionAnswer {
    /// The offsets in the answer.
    pub state: PartitionState,
    /// The answer carries record bytes.
    pub has_records: bool,
    /// The answer carries an error code.
    pub error: bool,
    /// The answer carries a diverging epoch or a preferred read replica (sent whatever else changed).
    pub urgent: bool,
}

/// One partition of a session: what the fetcher asks and what it was last told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CachedPartition {
    /// The partition.
    pub key: PartitionKey,
    /// The fetch parameters in force.
    pub fetch: PartitionFetch,
    /// What the fetcher was last told.
    pub sent: PartitionState,
}

impl CachedPartition {
    /// A partition newly in a session: nothing told yet.
    pub fn new(key: PartitionKey, fetch: PartitionFetch) -> CachedPartition {
        CachedPartition {
            key,
            fetch,
            sent: PartitionState::UNKNOWN,
        }
    }

    /// Kafka's `maybeUpdateResponseData`: whether `answer` must be sent in an incremental response —
    /// records, a changed HighWatermark / LastStableOffset / LogStartOffset, an error, a diverging epoch or a
    /// preferred read replica — recording what is sent. After an error the HighWatermark is forgotten (-1),
    /// so the partition is answered again once the error clears.
    pub fn must_respond(&mut self, answer: &PartitionAnswer) -> bool {
        let changed = answer.state != self.sent;
        self.sent = answer.state;
        if answer.error {
            self.sent.high_watermark = -1;
        }
        changed || answer.has_records || answer.error || answer.urgent
    }
}

/// Why a session refused a request. Mapped to Kafka codes at the protocol edge (`server/apis/errors.rs`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FetchSessionError {
    /// No session has this id (never created, closed, evicted, or lost with a restart):
    /// FETCH_SESSION_ID_NOT_FOUND.
    #[error("fetch session {session_id} not found")]
    NotFound {
        /// The requested session id.
        session_id: i32,
    },
    /// The request's epoch is not the session's: INVALID_FETCH_SESSION_EPOCH.
    #[error("fetch session {session_id} expected epoch {expected}, got {got}")]
    InvalidEpoch {
        /// The session id.
        session_id: i32,
        /// The epoch the session expects next.
        expected: i32,
        /// The request's epoch.
        got: i32,
    },
    /// The session was created with topic ids (Fetch v13+) and the request has none, or the reverse:
    /// FETCH_SESSION_TOPIC_ID_ERROR.
    #[error(
        "fetch session {session_id} uses topic ids: {uses_topic_ids}; the request does not match"
    )]
    TopicIdUsageChanged {
        /// The session id.
        session_id: i32,
        /// Whether the session was created with topic ids.
        uses_topic_ids: bool,
    },
    /// The request would take the session past [`FetchSessionConfig::max_partitions`]; the session is
    /// closed: INVALID_REQUEST.
    #[error("fetch session {session_id} would hold {partitions} partitions, more than {max}")]
    TooManyPartitions {
        /// The session id.
        session_id: i32,
        /// The partitions the session would hold.
        partitions: usize,
        /// The bound.
        max: usize,
    },
}

/// One fetcher's session (Kafka's `FetchSession`): its partitions in session order, the epoch its next
/// incremental request must carry, and the times and privilege the eviction rule looks at.
#[derive(Debug)]
pub struct FetchSession {
    id: i32,
    /// Created by a follower's Fetch (replica id ≥ 0): wins eviction over consumers' sessions.
    privileged: bool,
    /// Created by Fetch v13+ (partitions keyed by topic id).
    uses_topic_ids: bool,
    /// The epoch the next incremental request must carry (≥ 1).
    epoch: i32,
    creation_ms: u64,
    last_used_ms: u64,
    partitions: Vec<CachedPartition>,
    /// Key → index in `partitions`; rebuilt after any change of order.
    index: HashMap<PartitionKey, usize>,
}

impl FetchSession {
    /// A new session at epoch 1 with `partitions` in order, as answered so far (a repeated key keeps its
    /// first place and its last parameters and answer).
    fn new(
        id: i32,
        privileged: bool,
        uses_topic_ids: bool,
        now_ms: u64,
        partitions: Vec<CachedPartition>,
    ) -> FetchSession {
        assert!(id != INVALID_SESSION_ID, "session id 0 is reserved");
        let mut session = FetchSession {
            id,
            privileged,
            uses_topic_ids,
            epoch: next_epoch(INITIAL_EPOCH),
            creation_ms: now_ms,
            last_used_ms: now_ms,
            partitions: Vec::with_capacity(partitions.len()),
            index: HashMap::with_capacity(partitions.len()),
        };
        for p in partitions {
            match session.index.get(&p.key) {
                Some(&i) => session.partitions[i] = p,
                None => {
                    session
                        .index
                        .insert(p.key.clone(), session.partitions.len());
                    session.partitions.push(p);
                }
            }
        }
        session
    }

    /// The session id (never 0).
    pub fn id(&self) -> i32 {
        self.id
    }

    /// The epoch the next incremental request must carry.
    pub fn epoch(&self) -> i32 {
        self.epoch
    }

    /// Whether a follower created it.
    pub fn privileged(&self) -> bool {
        self.privileged
    }

    /// Whether it keys partitions by topic id (Fetch v13+).
    pub fn uses_topic_ids(&self) -> bool {
        self.uses_topic_ids
    }

    /// Its partitions in session order.
    pub fn partitions(&self) -> &[CachedPartition] {
        &self.partitions
    }

    /// Number of partitions.
    pub fn len(&self) -> usize {
        self.partitions.len()
    }

    /// True with no partition.
    pub fn is_empty(&self) -> bool {
        self.partitions.is_empty()
    }

    /// Adds `key` at the end, or updates its fetch parameters in place (its answer state is kept).
    fn upsert(&mut self, key: PartitionKey, fetch: PartitionFetch) {
        match self.index.get(&key) {
            Some(&i) => self.partitions[i].fetch = fetch,
            None => {
                self.index.insert(key.clone(), self.partitions.len());
                self.partitions.push(CachedPartition::new(key, fetch));
            }
        }
    }

    /// Removes the partitions in `forgotten` (unknown ones are ignored).
    fn forget(&mut self, forgotten: &[PartitionKey]) {
        let before = self.partitions.len();
        for key in forgotten {
            self.index.remove(key);
        }
        if self.index.len() == before {
            return;
        }
        let index = &self.index;
        self.partitions.retain(|p| index.contains_key(&p.key));
        self.reindex();
    }

    /// Records this round's answers (in session order) and returns which must be sent; partitions that
    /// returned records move to the end, keeping their relative order (Kafka's rotation).
    fn respond(&mut self, answers: &[PartitionAnswer]) -> Vec<bool> {
        assert_eq!(
            answers.len(),
            self.partitions.len(),
            "one answer per partition"
        );
        let sent: Vec<bool> = (self.partitions.iter_mut())
            .zip(answers)
            .map(|(p, a)| p.must_respond(a))
            .collect();
        if answers.iter().any(|a| a.has_records) {
            let (mut rest, moved): (Vec<_>, Vec<_>) = std::mem::take(&mut self.partitions)
                .into_iter()
                .zip(answers)
                .partition(|(_, a)| !a.has_records);
            rest.extend(moved);
            self.partitions = rest.into_iter().map(|(p, _)| p).collect();
            self.reindex();
        }
        sent
    }

    fn reindex(&mut self) {
        self.index.clear();
        for (i, p) in self.partitions.iter().enumerate() {
            self.index.insert(p.key.clone(), i);
        }
        debug_assert_eq!(self.index.len(), self.partitions.len());
    }
}
