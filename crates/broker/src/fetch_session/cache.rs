//! The broker's fetch sessions (Kafka's `FetchSessionCache`): at most `max.incremental.fetch.session.cache.slots`
//! sessions, in memory, with Kafka's eviction rule. Sans I/O: `now_ms` (ms on the broker's monotonic clock) is
//! passed in; session ids come from a seeded generator (random-looking, positive, never 0 or one in use).
//!
//! Eviction, when a new session needs a slot and none is free (Kafka's `tryEvict`):
//! 1. the least recently used session is evicted if it was idle more than `eviction_ms`
//!    (`min.incremental.fetch.session.eviction.ms`, Kafka's 120 000 ms);
//! 2. otherwise the "least valuable" evictable session is compared with the newcomer, valued by
//!    (privileged, partition count, id): followers' sessions beat consumers', larger beat smaller; it is
//!    evicted only if the newcomer is at least as valuable (with id 0 a newcomer of equal privilege needs more
//!    partitions). A session is evictable by a follower's newcomer if it is a consumer's or older than
//!    `eviction_ms`, by a consumer's only if older than `eviction_ms`; ages are judged when a session is last
//!    used (created or updated), as Kafka does.
//!
//! With no slot won, the fetch is served as a full fetch answering session id 0 (no error). Kafka 3.8+ splits
//! its slots over 8 shards, each evicting on its own; Runnel keeps one cache with the same rule over all the
//! slots.

use std::collections::{BTreeSet, HashMap};

use super::{
    next_epoch, CachedPartition, FetchSession, FetchSessionError, PartitionAnswer, PartitionFetch,
    PartitionKey,
};

/// The least bytes one partition takes in a Fetch v7+ request (index, fetch offset, log start offset,
/// partition max bytes): a frame of `MAX_FRAME_SIZE` bytes carries at most `MAX_FRAME_SIZE / 24` partitions.
const MIN_PARTITION_REQUEST_BYTES: usize = 24;

/// The cache's bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FetchSessionConfig {
    /// Most sessions (`max.incremental.fetch.session.cache.slots`, Kafka's default 1000; 0 = no sessions).
    pub max_slots: usize,
    /// Idle time after which a session may be evicted by anyone, and the age after which a follower's session
    /// may be (ms; Kafka's `min.incremental.fetch.session.eviction.ms`, 120 000).
    pub eviction_ms: u64,
    /// Most partitions in one session: what one request frame can carry.
    pub max_partitions: usize,
}

impl Default for FetchSessionConfig {
    fn default() -> FetchSessionConfig {
        FetchSessionConfig {
            max_slots: 1000,
            eviction_ms: 120_000,
            max_partitions: protocol::MAX_FRAME_SIZE / MIN_PARTITION_REQUEST_BYTES,
        }
    }
}

/// What an accepted incremental request leads to.
#[derive(Debug, PartialEq, Eq)]
pub enum Incremental {
    /// Read these partitions (the whole session, in session order), then report the answers with
    /// [`FetchSessionCache::respond`] at `epoch` (the session's epoch after this request).
    Read {
        /// The session's epoch now (its next request's).
        epoch: i32,
        /// The session's partitions in order.
        partitions: Vec<CachedPartition>,
    },
    /// Every partition was forgotten: the session is closed and the request is answered as a sessionless
    /// fetch of nothing (session id 0), as Kafka does.
    Closed,
}

/// A session's value in the eviction order (Kafka's `EvictableKey`): privileged, then size, then id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct EvictableKey {
    privileged: bool,
    size: usize,
    id: i32,
}

/// What the cache recorded when a session was last used.
#[derive(Clone, Copy, Debug)]
struct Touch {
    last_used_ms: u64,
    key: EvictableKey,
}

/// The sessions of this broker, bounded by [`FetchSessionConfig::max_slots`].
pub struct FetchSessionCache {
    config: FetchSessionConfig,
    sessions: HashMap<i32, FetchSession>,
    touched: HashMap<i32, Touch>,
    /// (last used ms, id), least recently used first.
    last_used: BTreeSet<(u64, i32)>,
    /// Sessions a consumer's newcomer may evict (older than `eviction_ms` when last used).
    evictable_by_all: BTreeSet<EvictableKey>,
    /// Sessions a follower's newcomer may evict (consumers', or older than `eviction_ms` when last used).
    evictable_by_privileged: BTreeSet<EvictableKey>,
    /// Partitions over all sessions, as of their last use.
    num_partitions: usize,
    evictions: u64,
    /// splitmix64 state for session ids.
    rng: u64,
}

impl std::fmt::Debug for FetchSessionCache {
    /// A summary: the sessions themselves can be many and large.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FetchSessionCache")
            .field("config", &self.config)
            .field("sessions", &self.sessions.len())
            .field("partitions", &self.num_partitions)
            .field("evictions", &self.evictions)
            .finish()
    }
}

impl FetchSessionCache {
    /// An empty cache bounded by `config`; `seed` starts the session-id generator.
    pub fn new(config: FetchSessionConfig, seed: u64) -> FetchSessionCache {
        FetchSessionCache {
            config,
            sessions: HashMap::new(),
            touched: HashMap::new(),
            last_used: BTreeSet::new(),
            evictable_by_all: BTreeSet::new(),
            evictable_by_privileged: BTreeSet::new(),
            num_partitions: 0,
            evictions: 0,
            rng: seed,
        }
    }

    /// The bounds it was made with.
    pub fn config(&self) -> FetchSessionConfig {
        self.config
    }

    /// Sessions held (Kafka's `NumIncrementalFetchSessions`).
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    /// True with no session.
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// Partitions over all sessions (Kafka's `NumIncrementalFetchPartitionsCached`).
    pub fn num_partitions(&self) -> usize {
        self.num_partitions
    }

    /// Sessions evicted since the cache was made (Kafka's `IncrementalFetchSessionEvictionsPerSec` counts
    /// them).
    pub fn evictions(&self) -> u64 {
        self.evictions
    }

    /// The session `id`, if held.
    pub fn get(&self, id: i32) -> Option<&FetchSession> {
        self.sessions.get(&id)
    }

    /// Closes session `id` (a full fetch naming it); false when it was not held.
    pub fn remove(&mut self, id: i32) -> bool {
        let Some(session) = self.sessions.remove(&id) else {
            return false;
        };
        let touch = self
            .touched
            .remove(&id)
            .expect("a held session was touched");
        self.last_used.remove(&(touch.last_used_ms, id));
        self.evictable_by_all.remove(&touch.key);
        self.evictable_by_privileged.remove(&touch.key);
        self.num_partitions -= touch.key.size;
        debug_assert_eq!(session.id, id);
        true
    }

    /// Kafka's `maybeCreateSession`: a new session at epoch 1 holding `partitions` (in order), created by a
    /// follower when `privileged`, by Fetch v13+ when `uses_topic_ids`; `None` when no slot is free and none
    /// may be evicted, or `partitions` is over the bound (the fetch is then answered with session id 0).
    pub fn create(
        &mut self,
        now_ms: u64,
        privileged: bool,
        uses_topic_ids: bool,
        partitions: Vec<CachedPartition>,
    ) -> Option<i32> {
        if self.config.max_slots == 0 || partitions.len() > self.config.max_partitions {
            return None;
        }
        if self.sessions.len() >= self.config.max_slots {
            let newcomer = EvictableKey {
                privileged,
                size: partitions.len(),
                id: 0,
            };
            if !self.try_evict(newcomer, now_ms) {
                return None;
            }
        }
        assert!(self.sessions.len() < self.config.max_slots);
        let id = self.new_session_id();
        let session = FetchSession::new(id, privileged, uses_topic_ids, now_ms, partitions);
        self.sessions.insert(id, session);
        self.touch(id, now_ms);
        Some(id)
    }

    /// An incremental request of session `id` at `epoch` (Fetch v13+ when `uses_topic_ids`): checks the
    /// session, then adds or updates `updates` in order and removes `forgotten` (Kafka's `FetchSession.update`)
    /// and advances the epoch. Errors: NotFound, InvalidEpoch, TopicIdUsageChanged (the session is kept);
    /// TooManyPartitions (the session is closed).
    pub fn update(
        &mut self,
        now_ms: u64,
        id: i32,
        epoch: i32,
        uses_topic_ids: bool,
        updates: Vec<(PartitionKey, PartitionFetch)>,
        forgotten: &[PartitionKey],
    ) -> Result<Incremental, FetchSessionError> {
        let max = self.config.max_partitions;
        let session = self.session_at(id, epoch)?;
        if session.uses_topic_ids != uses_topic_ids {
            return Err(FetchSessionError::TopicIdUsageChanged {
                session_id: id,
                uses_topic_ids: session.uses_topic_ids,
            });
        }
        for (key, fetch) in updates {
            session.upsert(key, fetch);
        }
        session.forget(forgotten);
        let len = session.len();
        if len > max {
            self.remove(id);
            return Err(FetchSessionError::TooManyPartitions {
                session_id: id,
                partitions: len,
                max,
            });
        }
        if session.is_empty() {
            self.remove(id);
            return Ok(Incremental::Closed);
        }
        session.epoch = next_epoch(session.epoch);
        let (epoch, partitions) = (session.epoch, session.partitions.clone());
        self.touch(id, now_ms);
        Ok(Incremental::Read { epoch, partitions })
    }

    /// Session `id`, if it exists and is at `epoch`. Errors: NotFound, InvalidEpoch.
    fn session_at(&mut self, id: i32, epoch: i32) -> Result<&mut FetchSession, FetchSessionError> {
        let Some(session) = self.sessions.get_mut(&id) else {
            return Err(FetchSessionError::NotFound { session_id: id });
        };
        if session.epoch != epoch {
            return Err(FetchSessionError::InvalidEpoch {
                session_id: id,
                expected: session.epoch,
                got: epoch,
            });
        }
        Ok(session)
    }

    /// Records the answers of the round [`update`](Self::update) started (one per partition, in the order it
    /// returned) and returns which must be sent. Errors: NotFound (closed or evicted meanwhile),
    /// InvalidEpoch (another request of the session came in meanwhile: its epoch moved on).
    pub fn respond(
        &mut self,
        id: i32,
        epoch: i32,
        answers: &[PartitionAnswer],
    ) -> Result<Vec<bool>, FetchSessionError> {
        let session = self.session_at(id, epoch)?;
        Ok(session.respond(answers))
    }

    /// Kafka's `touch`: the session was used at `now_ms`; its place in the LRU order, its eviction key (with
    /// its size now) and evictability are recomputed.
    fn touch(&mut self, id: i32, now_ms: u64) {
        let session = self.sessions.get_mut(&id).expect("touching a held session");
        if let Some(old) = self.touched.remove(&id) {
            self.last_used.remove(&(old.last_used_ms, id));
            self.evictable_by_all.remove(&old.key);
            self.evictable_by_privileged.remove(&old.key);
            self.num_partitions -= old.key.size;
        }
        // A clock step back must not make the session look older than it is.
        session.last_used_ms = now_ms.max(session.last_used_ms);
        let key = EvictableKey {
            privileged: session.privileged,
            size: session.len(),
            id,
        };
        let old_enough = now_ms.saturating_sub(session.creation_ms) > self.config.eviction_ms;
        if !session.privileged || old_enough {
            self.evictable_by_privileged.insert(key);
        }
        if old_enough {
            self.evictable_by_all.insert(key);
        }
        self.last_used.insert((session.last_used_ms, id));
        self.num_partitions += key.size;
        let touch = Touch {
            last_used_ms: session.last_used_ms,
            key,
        };
        self.touched.insert(id, touch);
        debug_assert_eq!(self.touched.len(), self.sessions.len());
    }

    /// Kafka's `tryEvict` (see the module doc); true when a slot was freed.
    fn try_evict(&mut self, newcomer: EvictableKey, now_ms: u64) -> bool {
        let Some(&(last_used_ms, lru)) = self.last_used.first() else {
            return false;
        };
        let victim = if now_ms.saturating_sub(last_used_ms) > self.config.eviction_ms {
            Some(lru)
        } else {
            let evictable = match newcomer.privileged {
                true => &self.evictable_by_privileged,
                false => &self.evictable_by_all,
            };
            evictable
                .first()
                .filter(|least| newcomer >= **least)
                .map(|least| least.id)
        };
        let Some(victim) = victim else {
            return false;
        };
        assert!(self.remove(victim), "an indexed session is held");
        self.evictions += 1;
        true
    }

    /// A random-looking positive id not in use (splitmix64; a full cache has at most `max_slots` ids, far
    /// fewer than the 2^31 - 1 candidates, so the loop ends).
    fn new_session_id(&mut self) -> i32 {
        loop {
            self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.rng;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            let id = (z >> 33) as i32;
            if id > 0 && !self.sessions.contains_key(&id) {
                return id;
            }
        }
    }

    /// Test access to a session's fields.
    #[cfg(test)]
    pub(super) fn sessions_mut_for_test(&mut self, id: i32) -> &mut FetchSession {
        self.sessions.get_mut(&id).expect("held")
    }

    /// Test access to [`touch`](Self::touch).
    #[cfg(test)]
    pub(super) fn touch_for_test(&mut self, id: i32, now_ms: u64) {
        self.touch(id, now_ms);
    }
}
