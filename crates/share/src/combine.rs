//! Merging state batches (Kafka's `PersisterStateBatchCombiner`): how the share coordinator folds a
//! WriteShareGroupState (or a ShareUpdate record) into the stored batches.

use std::collections::BTreeMap;

use crate::state::{DeliveryState, StateBatch};

/// Combines the stored batches `so_far` with `new_batches` into non-overlapping batches, ascending.
///
/// Rules (Kafka's `PersisterStateBatchCombiner.combineStateBatches`):
/// - with `start_offset != -1`, batches ending below it are dropped and a batch straddling it is cut to
///   start there;
/// - where batches overlap, each offset takes the batch of highest priority: the higher delivery count, then
///   the higher delivery state id (Archived 4 > Acknowledged 2 > Available 0). A record's delivery count and
///   state only move forward, so this is the newest state whatever order the batches arrive in;
/// - adjacent or overlapping batches of equal count and state are merged.
///
/// Batches with `first_offset > last_offset` are ignored. Runs in O(n log n) for n batches, whatever their
/// offset spans.
pub fn combine_state_batches(
    so_far: &[StateBatch],
    new_batches: &[StateBatch],
    start_offset: i64,
) -> Vec<StateBatch> {
    // Sweep over the batch boundaries (i128: `last_offset + 1` of i64::MAX must not overflow).
    let mut events: Vec<(i128, bool, (i16, DeliveryState))> = Vec::new();
    for b in so_far.iter().chain(new_batches) {
        let first = if start_offset == -1 {
            b.first_offset
        } else {
            b.first_offset.max(start_offset)
        };
        if first > b.last_offset {
            continue;
        }
        let priority = (b.delivery_count, b.delivery_state);
        events.push((first as i128, true, priority));
        events.push((b.last_offset as i128 + 1, false, priority));
    }
    events.sort_by_key(|e| e.0);
    let mut active: BTreeMap<(i16, DeliveryState), usize> = BTreeMap::new();
    let mut out: Vec<StateBatch> = Vec::new();
    let mut i = 0;
    while i < events.len() {
        let at = events[i].0;
        while i < events.len() && events[i].0 == at {
            let (_, open, priority) = events[i];
            if open {
                *active.entry(priority).or_default() += 1;
            } else if let Some(n) = active.get_mut(&priority) {
                *n -= 1;
                if *n == 0 {
                    active.remove(&priority);
                }
            }
            i += 1;
        }
        let (Some((&(count, state), _)), Some(next)) = (active.last_key_value(), events.get(i))
        else {
            continue;
        };
        push_merged(&mut out, at as i64, (next.0 - 1) as i64, state, count);
    }
    out
}

/// Appends `[first, last]` to `out`, extending the last batch when adjacent with equal state and count.
fn push_merged(out: &mut Vec<StateBatch>, first: i64, last: i64, state: DeliveryState, count: i16) {
    if let Some(b) = out.last_mut() {
        if b.last_offset.checked_add(1) == Some(first)
            && b.delivery_state == state
            && b.delivery_count == count
        {
            b.last_offset = last;
            return;
        }
    }
    out.push(StateBatch {
        first_offset: first,
        last_offset: last,
        delivery_state: state,
        delivery_count: count,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use DeliveryState::{Acknowledged as Ack, Archived as Arch, Available as Avail};

    fn b(first: i64, last: i64, state: DeliveryState, count: i16) -> StateBatch {
        StateBatch {
            first_offset: first,
            last_offset: last,
            delivery_state: state,
            delivery_count: count,
        }
    }

    #[test]
    fn disjoint_batches_are_kept_and_adjacent_equal_ones_merged() {
        let got = combine_state_batches(
            &[b(0, 4, Avail, 1)],
            &[b(5, 9, Avail, 1), b(20, 21, Ack, 1)],
            -1,
        );
        assert_eq!(got, vec![b(0, 9, Avail, 1), b(20, 21, Ack, 1)]);
    }

    #[test]
    fn overlap_takes_the_higher_delivery_count_then_the_higher_state() {
        // Stored: 0..=9 available once; new: 3..=5 acknowledged once, 7..=8 available twice.
        let got = combine_state_batches(
            &[b(0, 9, Avail, 1)],
            &[b(3, 5, Ack, 1), b(7, 8, Avail, 2)],
            -1,
        );
        assert_eq!(
            got,
            vec![
                b(0, 2, Avail, 1),
                b(3, 5, Ack, 1),
                b(6, 6, Avail, 1),
                b(7, 8, Avail, 2),
                b(9, 9, Avail, 1)
            ]
        );
        // A stale write (lower priority) does not undo a newer state.
        let got = combine_state_batches(&[b(0, 3, Arch, 2)], &[b(0, 3, Avail, 1)], -1);
        assert_eq!(got, vec![b(0, 3, Arch, 2)]);
        // Same count: archived beats acknowledged beats available.
        let got = combine_state_batches(&[b(0, 3, Ack, 1)], &[b(2, 5, Arch, 1)], -1);
        assert_eq!(got, vec![b(0, 1, Ack, 1), b(2, 5, Arch, 1)]);
    }

    #[test]
    fn start_offset_prunes_and_cuts() {
        let got = combine_state_batches(&[b(0, 4, Ack, 1), b(5, 9, Avail, 1)], &[], 7);
        assert_eq!(got, vec![b(7, 9, Avail, 1)]);
        let got = combine_state_batches(&[b(0, 4, Ack, 1)], &[b(10, 12, Avail, 1)], 20);
        assert!(got.is_empty());
    }

    #[test]
    fn extreme_offsets_and_inverted_batches_do_not_panic() {
        let got = combine_state_batches(
            &[b(i64::MAX - 1, i64::MAX, Avail, 1), b(5, 4, Ack, 1)],
            &[b(i64::MAX, i64::MAX, Ack, 1)],
            -1,
        );
        assert_eq!(
            got,
            vec![
                b(i64::MAX - 1, i64::MAX - 1, Avail, 1),
                b(i64::MAX, i64::MAX, Ack, 1)
            ]
        );
    }
}
