//! Transaction verification guards (KIP-890 part 1; Kafka's `VerificationGuard` and
//! `VerificationStateEntry` in `ProducerStateManager`).
//!
//! Before the first transactional batch of a transaction lands on a partition, its leader asks the
//! transaction coordinator whether the partition is in the producer's ongoing transaction (or, under
//! transaction version 2, adds it). The question takes a network round trip; meanwhile the transaction can
//! end (its marker written here) and the producer's late batch would then open a transaction nobody will
//! ever end (a "hanging transaction"). So the leader first takes a guard for the producer
//! ([`VerificationGuards::start`]), asks, and appends with it; any batch of the producer or a marker
//! appended in between clears the guard ([`VerificationGuards::clear`]), and the append, finding no
//! matching guard, is refused with INVALID_TXN_STATE.
//!
//! In memory only: after a restart the guards are gone and a client's first transactional batch is
//! verified again.

use std::collections::HashMap;

/// A token the append must present to open a transaction (Kafka's `VerificationGuard`).
/// [`VerificationGuard::SENTINEL`] is "no verification was done": it never matches a stored guard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VerificationGuard(u64);

impl VerificationGuard {
    /// No verification: an append opening a transaction with it is refused.
    pub const SENTINEL: VerificationGuard = VerificationGuard(0);
}

/// One producer's guard: the token, the producer epoch verified for, and when it was taken (ms).
#[derive(Debug, Clone, Copy)]
struct Entry {
    guard: VerificationGuard,
    epoch: i16,
    created_ms: i64,
}

/// The guards of one log, by producer id. Bounded by the producers verifying at once: a guard is
/// cleared by the producer's next append or marker, and expired with the producer ids
/// ([`VerificationGuards::expire`]).
#[derive(Debug, Default)]
pub(crate) struct VerificationGuards {
    entries: HashMap<i64, Entry>,
    next: u64,
}

impl VerificationGuards {
    /// The guard for `producer_id` at `epoch`: the existing one when taken for this epoch or a newer one
    /// (concurrent requests of one producer share it, as Kafka's), else a new one replacing it.
    pub(crate) fn start(&mut self, producer_id: i64, epoch: i16, now_ms: i64) -> VerificationGuard {
        if let Some(e) = self.entries.get_mut(&producer_id) {
            if e.epoch >= epoch {
                return e.guard;
            }
        }
        self.next += 1;
        let guard = VerificationGuard(self.next);
        self.entries.insert(
            producer_id,
            Entry {
                guard,
                epoch,
                created_ms: now_ms,
            },
        );
        guard
    }

    /// True when `guard` is `producer_id`'s current guard (never for the sentinel).
    pub(crate) fn verify(&self, producer_id: i64, guard: VerificationGuard) -> bool {
        guard != VerificationGuard::SENTINEL
            && self
                .entries
                .get(&producer_id)
                .is_some_and(|e| e.guard == guard)
    }

    /// Forgets `producer_id`'s guard: a batch or marker of it was appended.
    pub(crate) fn clear(&mut self, producer_id: i64) {
        self.entries.remove(&producer_id);
    }

    /// Drops guards older than `max_age_ms`.
    pub(crate) fn expire(&mut self, now_ms: i64, max_age_ms: i64) {
        self.entries
            .retain(|_, e| now_ms.saturating_sub(e.created_ms) < max_age_ms);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guard_is_shared_within_an_epoch_replaced_by_a_newer_one_and_cleared_by_an_append() {
        let mut g = VerificationGuards::default();
        let a = g.start(7, 0, 0);
        assert_eq!(g.start(7, 0, 1), a, "concurrent requests share the guard");
        assert!(g.verify(7, a));
        assert!(!g.verify(7, VerificationGuard::SENTINEL));
        assert!(!g.verify(8, a));
        let b = g.start(7, 1, 2);
        assert_ne!(a, b, "a newer epoch replaces the guard");
        assert!(!g.verify(7, a));
        g.clear(7);
        assert!(!g.verify(7, b));
        let c = g.start(7, 1, 3);
        g.expire(10, 5);
        assert!(!g.verify(7, c), "expired");
    }
}
