//! Share sessions (KIP-932; Kafka's `ShareSessionCache`): the partitions a share-group member fetches from
//! this broker, and the epoch its next ShareFetch or ShareAcknowledge must carry. Sans-I/O.
//!
//! - epoch **0** opens a session (replacing the member's previous one) with the request's partitions;
//! - epoch **-1** closes it (its acknowledgements are still applied; the caller releases the member's
//!   acquired records);
//! - any other epoch must be the session's next one (SHARE_SESSION_NOT_FOUND without a session,
//!   INVALID_SHARE_SESSION_EPOCH otherwise); the request's partitions are added, forgotten ones removed, and
//!   the epoch moves on by one (wrapping to 1 after `i32::MAX`).
//! - a session belongs to the connection of its latest accepted request (`owner`, a connection id): when a
//!   connection closes, only the sessions it still owns are closed ([`ShareSessionCache::remove_owned`]), so a
//!   member that reconnected keeps the session it reopened on its new connection;
//! - at most `max_sessions` sessions (`group.share.max.share.sessions`, default 2000): one more is
//!   SHARE_SESSION_LIMIT_REACHED.

use std::collections::{BTreeSet, HashMap};

use uuid::Uuid;

/// A share-partition of a session: (topic id, partition).
pub type SessionPartition = (Uuid, i32);

/// Session key: (group id, member id).
type Key = (String, String);

#[derive(Debug, Default)]
struct Session {
    next_epoch: i32,
    /// Id of the connection whose request last opened or advanced the session.
    owner: u64,
    partitions: BTreeSet<SessionPartition>,
}

/// Why a request's share session was refused; the server edge answers each with its Kafka code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShareSessionError {
    /// No session for a non-zero epoch (SHARE_SESSION_NOT_FOUND, 122).
    #[error("share session not found")]
    NotFound,
    /// The epoch is not the session's next one (INVALID_SHARE_SESSION_EPOCH, 123).
    #[error("invalid share session epoch")]
    InvalidEpoch,
    /// Every session slot is taken (SHARE_SESSION_LIMIT_REACHED, 133).
    #[error("share session limit reached")]
    LimitReached,
}

/// What a request did to its session.
#[derive(Debug, PartialEq, Eq)]
pub enum SessionUpdate {
    /// The session's partitions after the request (the ones to fetch).
    Open(Vec<SessionPartition>),
    /// The session was closed (epoch -1): nothing is fetched.
    Closed,
}

/// The share sessions of one broker.
#[derive(Debug)]
pub struct ShareSessionCache {
    sessions: HashMap<Key, Session>,
    max_sessions: usize,
}

impl ShareSessionCache {
    /// An empty cache holding at most `max_sessions` sessions.
    pub fn new(max_sessions: usize) -> Self {
        ShareSessionCache {
            sessions: HashMap::new(),
            max_sessions: max_sessions.max(1),
        }
    }

    /// Applies one ShareFetch or ShareAcknowledge at `epoch`, arrived on connection `owner`, naming
    /// `partitions` and forgetting `forgotten`; the session then belongs to `owner`. Errors:
    /// SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH, SHARE_SESSION_LIMIT_REACHED (see the module doc).
    pub fn update(
        &mut self,
        (group, member): (&str, &str),
        owner: u64,
        epoch: i32,
        partitions: &[SessionPartition],
        forgotten: &[SessionPartition],
    ) -> Result<SessionUpdate, ShareSessionError> {
        let key = (group.to_string(), member.to_string());
        match epoch {
            0 => {
                if !self.sessions.contains_key(&key) && self.sessions.len() >= self.max_sessions {
                    return Err(ShareSessionError::LimitReached);
                }
                let session = Session {
                    next_epoch: 1,
                    owner,
                    partitions: partitions.iter().copied().collect(),
                };
                let open = session.partitions.iter().copied().collect();
                self.sessions.insert(key, session);
                Ok(SessionUpdate::Open(open))
            }
            -1 => match self.sessions.remove(&key) {
                Some(_) => Ok(SessionUpdate::Closed),
                None => Err(ShareSessionError::NotFound),
            },
            e => {
                let Some(s) = self.sessions.get_mut(&key) else {
                    return Err(ShareSessionError::NotFound);
                };
                if e != s.next_epoch {
                    return Err(ShareSessionError::InvalidEpoch);
                }
                s.owner = owner;
                s.partitions.extend(partitions.iter().copied());
                for f in forgotten {
                    s.partitions.remove(f);
                }
                s.next_epoch = if s.next_epoch == i32::MAX {
                    1
                } else {
                    s.next_epoch + 1
                };
                Ok(SessionUpdate::Open(s.partitions.iter().copied().collect()))
            }
        }
    }

    /// Drops the member's session (it left its group, or its connection closed); true when there was one.
    pub fn remove(&mut self, group: &str, member: &str) -> bool {
        self.sessions
            .remove(&(group.to_string(), member.to_string()))
            .is_some()
    }

    /// Drops the member's session if connection `owner` still owns it (the connection closed); true when
    /// it did.
    pub fn remove_owned(&mut self, group: &str, member: &str, owner: u64) -> bool {
        let key = (group.to_string(), member.to_string());
        match self.sessions.get(&key) {
            Some(s) if s.owner == owner => self.sessions.remove(&key).is_some(),
            _ => false,
        }
    }

    /// Number of open sessions.
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    /// True when no session is open.
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Uuid = Uuid::from_u128(1);

    #[test]
    fn epochs_open_advance_and_close_a_session() {
        let mut c = ShareSessionCache::new(10);
        assert_eq!(
            c.update(("g", "m"), 1, 1, &[], &[]),
            Err(ShareSessionError::NotFound)
        );
        assert_eq!(
            c.update(("g", "m"), 1, 0, &[(T, 0)], &[]),
            Ok(SessionUpdate::Open(vec![(T, 0)]))
        );
        assert_eq!(
            c.update(("g", "m"), 1, 2, &[], &[]),
            Err(ShareSessionError::InvalidEpoch)
        );
        assert_eq!(
            c.update(("g", "m"), 1, 1, &[(T, 1)], &[]),
            Ok(SessionUpdate::Open(vec![(T, 0), (T, 1)]))
        );
        assert_eq!(
            c.update(("g", "m"), 1, 2, &[], &[(T, 0)]),
            Ok(SessionUpdate::Open(vec![(T, 1)]))
        );
        assert_eq!(
            c.update(("g", "m"), 1, -1, &[], &[]),
            Ok(SessionUpdate::Closed)
        );
        assert!(c.is_empty());
        assert_eq!(
            c.update(("g", "m"), 1, -1, &[], &[]),
            Err(ShareSessionError::NotFound)
        );
    }

    #[test]
    fn the_limit_refuses_new_sessions_but_not_a_reopened_one() {
        let mut c = ShareSessionCache::new(1);
        assert!(c.update(("g", "a"), 1, 0, &[], &[]).is_ok());
        assert_eq!(
            c.update(("g", "b"), 1, 0, &[], &[]),
            Err(ShareSessionError::LimitReached)
        );
        assert!(c.update(("g", "a"), 1, 0, &[], &[]).is_ok());
        assert!(c.remove("g", "a"));
        assert!(c.update(("g", "b"), 1, 0, &[], &[]).is_ok());
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn a_closed_connection_closes_only_the_sessions_it_still_owns() {
        let mut c = ShareSessionCache::new(10);
        assert!(c.update(("g", "m"), 1, 0, &[(T, 0)], &[]).is_ok());
        // The member reconnects: connection 2 reopens the session.
        assert!(c.update(("g", "m"), 2, 0, &[(T, 0)], &[]).is_ok());
        assert!(
            !c.remove_owned("g", "m", 1),
            "the old connection no longer owns it"
        );
        assert_eq!(c.len(), 1);
        // An incremental request moves ownership too.
        assert!(c.update(("g", "m"), 3, 1, &[], &[]).is_ok());
        assert!(!c.remove_owned("g", "m", 2));
        assert!(c.remove_owned("g", "m", 3));
        assert!(c.is_empty());
    }
}
