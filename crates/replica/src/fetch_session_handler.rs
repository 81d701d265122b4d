//! The follower's side of incremental fetch sessions (KIP-227; Kafka's `FetchSessionHandler`), sans I/O: which
//! session id and epoch the next Fetch carries, and which partitions it names.
//!
//! The first Fetch to a leader is a full fetch at epoch 0 (session id 0): the leader answers a new session id,
//! or 0 when it has no slot, in which case every Fetch stays a full one at epoch 0 (asking again each time).
//! With a session, each Fetch is incremental at the session's next epoch (1, 2, ..., wrapping from `i32::MAX`
//! to 1): it names only the partitions added or whose fetch parameters changed since the leader last heard
//! them, and forgets (`forgotten_topics_data`) those no longer fetched — a partition paused for truncation or
//! a backoff leaves the session and comes back as a new one. The answer then holds only the partitions that
//! changed. A session error (FETCH_SESSION_ID_NOT_FOUND, e.g. after the leader restarted or evicted the
//! session: a new full fetch at epoch 0; any other error: the same, also closing the session by naming it)
//! and a lost connection start over with a full fetch.

use std::collections::HashMap;

use protocol::error::ErrorCode;
use protocol::messages::fetch_request::FetchPartition;

use crate::cluster_link::TopicPartition;

/// What the leader's session holds of one partition: the fetch parameters it last received.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SentFetch {
    fetch_offset: i64,
    current_leader_epoch: i32,
    last_fetched_epoch: i32,
    log_start_offset: i64,
    partition_max_bytes: i32,
}

impl SentFetch {
    fn of(p: &FetchPartition) -> SentFetch {
        SentFetch {
            fetch_offset: p.fetch_offset,
            current_leader_epoch: p.current_leader_epoch,
            last_fetched_epoch: p.last_fetched_epoch,
            log_start_offset: p.log_start_offset,
            partition_max_bytes: p.partition_max_bytes,
        }
    }
}

/// One Fetch's session part, built by [`FetchSessionHandler::build`].
#[derive(Debug)]
pub(crate) struct SessionFetch {
    /// The request's `session_id` (0: none yet).
    pub(crate) session_id: i32,
    /// The request's `session_epoch` (0: full fetch asking for a session; ≥ 1: incremental).
    pub(crate) epoch: i32,
    /// The partitions to name: all of them in a full fetch, the added and changed ones in an incremental.
    pub(crate) to_send: Vec<(TopicPartition, FetchPartition)>,
    /// The partitions to forget (incremental only).
    pub(crate) to_forget: Vec<TopicPartition>,
}

/// A follower's session with one leader (one per replica fetcher).
#[derive(Debug, Default)]
pub(crate) struct FetchSessionHandler {
    /// The leader's session id (0: none).
    session_id: i32,
    /// The next request's epoch: 0 = a full fetch asking for a session.
    epoch: i32,
    /// What the leader's session holds (empty without a session).
    session: HashMap<TopicPartition, SentFetch>,
    /// What the session will hold once the request in flight is answered.
    pending: Option<HashMap<TopicPartition, SentFetch>>,
}

impl FetchSessionHandler {
    /// No session yet: the next Fetch is a full one at epoch 0.
    pub(crate) fn new() -> FetchSessionHandler {
        FetchSessionHandler::default()
    }

    /// The session part of a Fetch of `wanted` (this round's partitions with their fetch parameters).
    pub(crate) fn build(&mut self, wanted: Vec<(TopicPartition, FetchPartition)>) -> SessionFetch {
        let next: HashMap<TopicPartition, SentFetch> = (wanted.iter())
            .map(|(k, p)| (k.clone(), SentFetch::of(p)))
            .collect();
        let full = self.session_id == 0 || self.epoch == 0;
        let (to_send, to_forget) = if full {
            (wanted, Vec::new())
        } else {
            let to_forget = (self.session.keys())
                .filter(|k| !next.contains_key(*k))
                .cloned()
                .collect();
            let to_send = (wanted.into_iter())
                .filter(|(k, p)| self.session.get(k) != Some(&SentFetch::of(p)))
                .collect();
            (to_send, to_forget)
        };
        self.pending = Some(next);
        SessionFetch {
            session_id: self.session_id,
            epoch: self.epoch,
            to_send,
            to_forget,
        }
    }

    /// The leader answered the request [`build`](Self::build) made with top-level `error` and `session_id`.
    /// Returns false when the answer carries no partitions to apply (an error).
    pub(crate) fn handle_response(&mut self, error: ErrorCode, session_id: i32) -> bool {
        let pending = self.pending.take().unwrap_or_default();
        if error != ErrorCode::NONE {
            self.session.clear();
            if error == ErrorCode::FETCH_SESSION_ID_NOT_FOUND {
                self.session_id = 0;
            }
            // Otherwise the next full fetch names the session, closing it (Kafka's `nextCloseExisting`).
            self.epoch = 0;
            return false;
        }
        if session_id == 0 {
            // No session (none created, or the leader closed it): full fetches at epoch 0 from now on.
            self.session.clear();
            self.session_id = 0;
            self.epoch = 0;
            return true;
        }
        let full = self.session_id == 0 || self.epoch == 0;
        if !full && session_id != self.session_id {
            // Not what a leader answers: distrust both sessions, start over (closing ours).
            tracing::warn!(
                expected = self.session_id,
                got = session_id,
                "leader answered another fetch session"
            );
            self.handle_error();
            return true;
        }
        self.session_id = session_id;
        self.epoch = match full {
            true => 1,
            false if self.epoch == i32::MAX => 1,
            false => self.epoch + 1,
        };
        self.session = pending;
        true
    }

    /// The request was not answered (connection lost, timeout): the next Fetch is a full one, naming the
    /// session so the leader closes it and makes a new one.
    pub(crate) fn handle_error(&mut self) {
        self.pending = None;
        self.session.clear();
        self.epoch = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(p: i32) -> TopicPartition {
        TopicPartition::new("t".to_string(), p)
    }

    fn part(p: i32, offset: i64) -> (TopicPartition, FetchPartition) {
        let fp = FetchPartition {
            partition: p,
            fetch_offset: offset,
            ..Default::default()
        };
        (tp(p), fp)
    }

    fn sent(f: &SessionFetch) -> Vec<(i32, i64)> {
        let mut v: Vec<_> = f
            .to_send
            .iter()
            .map(|(k, p)| (k.partition, p.fetch_offset))
            .collect();
        v.sort();
        v
    }

    #[test]
    fn session_is_created_then_fetches_are_incremental() {
        let mut h = FetchSessionHandler::new();
        let f = h.build(vec![part(0, 0), part(1, 0)]);
        assert_eq!(
            (f.session_id, f.epoch, sent(&f)),
            (0, 0, vec![(0, 0), (1, 0)])
        );
        assert!(h.handle_response(ErrorCode::NONE, 42));
        // Nothing changed: nothing named.
        let f = h.build(vec![part(0, 0), part(1, 0)]);
        assert_eq!((f.session_id, f.epoch, sent(&f)), (42, 1, vec![]));
        assert!(h.handle_response(ErrorCode::NONE, 42));
        // Partition 1 moved on, partition 0 is paused (forgotten), partition 2 is new.
        let f = h.build(vec![part(1, 5), part(2, 0)]);
        assert_eq!((f.epoch, sent(&f)), (2, vec![(1, 5), (2, 0)]));
        assert_eq!(f.to_forget, vec![tp(0)]);
        assert!(h.handle_response(ErrorCode::NONE, 42));
        // Partition 0 comes back as new.
        let f = h.build(vec![part(0, 0), part(1, 5), part(2, 0)]);
        assert_eq!((f.epoch, sent(&f)), (3, vec![(0, 0)]));
    }

    #[test]
    fn no_session_keeps_full_fetches() {
        let mut h = FetchSessionHandler::new();
        for _ in 0..3 {
            let f = h.build(vec![part(0, 0)]);
            assert_eq!((f.session_id, f.epoch, sent(&f)), (0, 0, vec![(0, 0)]));
            assert!(h.handle_response(ErrorCode::NONE, 0));
        }
    }

    #[test]
    fn session_errors_start_over_with_a_full_fetch() {
        let mut h = FetchSessionHandler::new();
        h.build(vec![part(0, 0)]);
        h.handle_response(ErrorCode::NONE, 7);
        h.build(vec![part(0, 0)]);
        assert!(!h.handle_response(ErrorCode::FETCH_SESSION_ID_NOT_FOUND, 0));
        let f = h.build(vec![part(0, 0)]);
        assert_eq!((f.session_id, f.epoch, sent(&f)), (0, 0, vec![(0, 0)]));
        h.handle_response(ErrorCode::NONE, 8);
        h.build(vec![part(0, 0)]);
        assert!(!h.handle_response(ErrorCode::INVALID_FETCH_SESSION_EPOCH, 0));
        // The session is named, so the leader closes it and makes a new one.
        let f = h.build(vec![part(0, 0)]);
        assert_eq!((f.session_id, f.epoch, sent(&f)), (8, 0, vec![(0, 0)]));
        h.handle_response(ErrorCode::NONE, 9);
        let f = h.build(vec![part(0, 0)]);
        assert_eq!((f.session_id, f.epoch), (9, 1));
        h.handle_error();
        let f = h.build(vec![part(0, 0)]);
        assert_eq!((f.session_id, f.epoch, sent(&f)), (9, 0, vec![(0, 0)]));
    }

    #[test]
    fn epoch_wraps_to_one() {
        let mut h = FetchSessionHandler::new();
        h.build(vec![part(0, 0)]);
        h.handle_response(ErrorCode::NONE, 3);
        h.epoch = i32::MAX;
        let f = h.build(vec![part(0, 0)]);
        assert_eq!(f.epoch, i32::MAX);
        h.handle_response(ErrorCode::NONE, 3);
        assert_eq!(h.build(vec![part(0, 0)]).epoch, 1);
    }
}
