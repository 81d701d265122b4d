//! `TransactionState` and `TransactionMetadata` on their own (Kafka's `TransactionState`,
//! `TransactionMetadata.prepareTransitionTo` / `completeTransitionTo`).

use types::{ProducerEpoch, ProducerId};

use super::*;

fn md_in(state: TransactionState) -> TransactionMetadata {
    let mut md = TransactionMetadata::new("t", ProducerId(9), 60_000, T0);
    md.state = state;
    md.producer_epoch = ProducerEpoch(5);
    md
}

#[test]
fn state_ids_names_and_expiration_are_kafkas() {
    let want = [
        ("Empty", 0, true),
        ("Ongoing", 1, false),
        ("PrepareCommit", 2, false),
        ("PrepareAbort", 3, false),
        ("CompleteCommit", 4, true),
        ("CompleteAbort", 5, true),
        ("Dead", 6, false),
        ("PrepareEpochFence", 7, false),
    ];
    for (s, (name, id, expirable)) in TransactionState::ALL.into_iter().zip(want) {
        assert_eq!(
            (s.name(), s.id(), s.is_expiration_allowed()),
            (name, id, expirable)
        );
        assert_eq!(TransactionState::from_id(id), Some(s));
        assert_eq!(TransactionState::from_name(name), Some(s));
    }
    assert_eq!(TransactionState::from_id(8), None);
    assert_eq!(TransactionState::from_name("ongoing"), None);
}

#[test]
fn prepare_follows_the_valid_previous_states_table_exactly() {
    // Kafka's `validPreviousStates`, checked for every (from, to) pair.
    use TransactionState::*;
    let table: [(TransactionState, &[TransactionState]); 8] = [
        (Empty, &[Empty, CompleteCommit, CompleteAbort]),
        (Ongoing, &[Ongoing, Empty, CompleteCommit, CompleteAbort]),
        (PrepareCommit, &[Ongoing]),
        (
            PrepareAbort,
            &[
                Ongoing,
                PrepareEpochFence,
                Empty,
                CompleteCommit,
                CompleteAbort,
            ],
        ),
        (CompleteCommit, &[PrepareCommit]),
        (CompleteAbort, &[PrepareAbort]),
        (Dead, &[Empty, CompleteAbort, CompleteCommit]),
        (PrepareEpochFence, &[Ongoing]),
    ];
    for (to, from_ok) in table {
        for from in TransactionState::ALL {
            let mut md = md_in(from);
            let data = md.base(to);
            let got = md.prepare(data);
            assert_eq!(got.is_ok(), from_ok.contains(&from), "{from} -> {to}");
            assert_eq!(to.can_transition_from(from), from_ok.contains(&from));
            assert_eq!(md.pending_state, got.is_ok().then_some(to));
        }
    }
}

#[test]
fn a_second_prepare_while_pending_is_refused() {
    // Kafka: "Preparing transaction state transition ... while it already a pending state".
    let mut md = md_in(TransactionState::Ongoing);
    md.prepare_abort_or_commit(
        TransactionState::PrepareCommit,
        TV1,
        ProducerId::NONE,
        T0,
        false,
    )
    .unwrap();
    let err = md.prepare_fence_producer_epoch().unwrap_err();
    assert_eq!(err.pending, Some(TransactionState::PrepareCommit));
    md.abort_pending();
    assert!(md.prepare_fence_producer_epoch().is_ok());
}

#[test]
fn completion_applies_only_the_pending_transition_and_checks_fields() {
    // Kafka's `completeTransitionTo`: the pending state must match; PrepareEpochFence and Dead never
    // complete; a transit that changes what the target state must keep is refused.
    let mut md = md_in(TransactionState::Ongoing);
    md.partitions.insert(tp("a", 0));
    let t = md
        .prepare_abort_or_commit(
            TransactionState::PrepareCommit,
            TV1,
            ProducerId::NONE,
            T0 + 1,
            false,
        )
        .unwrap();
    let mut wrong = t.clone();
    wrong.state = TransactionState::PrepareAbort;
    assert!(md.complete_transition(&wrong).is_err());
    let mut bad = t.clone();
    bad.partitions.clear();
    assert!(md.complete_transition(&bad).is_err());
    assert_eq!(
        (md.state, md.pending_state),
        (TransactionState::Ongoing, None)
    );
    let t = md
        .prepare_abort_or_commit(
            TransactionState::PrepareCommit,
            TV1,
            ProducerId::NONE,
            T0 + 1,
            false,
        )
        .unwrap();
    md.complete_transition(&t).unwrap();
    assert_eq!(
        (md.state, md.txn_last_update_timestamp),
        (TransactionState::PrepareCommit, T0 + 1)
    );
    let mut md = md_in(TransactionState::Ongoing);
    let fence = md.prepare_fence_producer_epoch().unwrap();
    assert_eq!(fence.producer_epoch, ProducerEpoch(6));
    assert!(md.complete_transition(&fence).is_err());
    let mut md = md_in(TransactionState::Empty);
    let dead = md.prepare_dead().unwrap();
    assert!(md.complete_transition(&dead).is_err());
}

#[test]
fn fence_never_bumps_past_i16_max() {
    // Kafka's `prepareFenceProducerEpoch`: no bump at Short.MaxValue or after a failed fence.
    let mut md = md_in(TransactionState::Ongoing);
    md.producer_epoch = ProducerEpoch(i16::MAX);
    assert_eq!(
        md.prepare_fence_producer_epoch().unwrap().producer_epoch,
        ProducerEpoch(i16::MAX)
    );
    let mut md = md_in(TransactionState::Ongoing);
    md.has_failed_epoch_fence = true;
    assert_eq!(
        md.prepare_fence_producer_epoch().unwrap().producer_epoch,
        ProducerEpoch(5)
    );
}

#[test]
fn tv2_abort_at_i16_max_does_not_overflow() {
    // Kafka's `prepareAbortOrCommit`: a TV2 abort at Short.MaxValue keeps the epoch (recovery path).
    let mut md = md_in(TransactionState::Ongoing);
    md.producer_epoch = ProducerEpoch(i16::MAX);
    let t = md
        .prepare_abort_or_commit(
            TransactionState::PrepareAbort,
            TV2,
            ProducerId::NONE,
            T0,
            false,
        )
        .unwrap();
    assert_eq!(
        (t.producer_epoch, t.last_producer_epoch),
        (ProducerEpoch(i16::MAX), ProducerEpoch(i16::MAX))
    );
}

#[test]
fn epoch_exhaustion_threshold() {
    // Kafka's `isEpochExhausted`: epoch >= Short.MaxValue - 1.
    assert!(!is_epoch_exhausted(ProducerEpoch(i16::MAX - 2)));
    assert!(is_epoch_exhausted(ProducerEpoch(i16::MAX - 1)));
    assert!(is_epoch_exhausted(ProducerEpoch(i16::MAX)));
    assert_eq!(TransactionVersion::TV_0.log_value_version(), 0);
    assert_eq!(TransactionVersion::TV_1.log_value_version(), 1);
    assert!(!TV1.supports_epoch_bump() && TV2.supports_epoch_bump());
}
