//! Reconciliation of one member towards its target assignment (Kafka's `CurrentAssignmentBuilder`).
//!
//! Revocation comes before assignment: a member first gives up the partitions its target no longer holds
//! (UNREVOKED_PARTITIONS, at its old epoch); only when its heartbeat's owned partitions no longer include
//! them does it move to the target epoch and receive new partitions — those no other member still holds
//! (UNRELEASED_PARTITIONS while some are held, STABLE once it has them all).

use std::collections::BTreeSet;

use uuid::Uuid;

use super::records::CurrentAssignmentValue;
use super::{Assignment, MemberState};

/// What reconciling a member needs to know.
pub struct Inputs<'a> {
    /// The member's current assignment and epochs.
    pub current: &'a CurrentAssignmentValue,
    /// The member's id (a partition held by the member itself is not "unreleased").
    pub member_id: &'a str,
    /// The target assignment epoch.
    pub target_epoch: i32,
    /// The member's target assignment.
    pub target: &'a Assignment,
    /// Ids of the topics the member subscribes to (topics it left are revoked even before a new target).
    pub subscribed: &'a BTreeSet<Uuid>,
    /// Who holds a partition now (assigned or pending revocation), if anyone.
    pub owner: &'a dyn Fn(Uuid, i32) -> Option<&'a str>,
    /// The partitions the member reported owning in this heartbeat; `None` when it did not say.
    pub owned: Option<&'a Assignment>,
}

/// The member's next current assignment, or `Err(())` when the member must be fenced (an UNKNOWN state
/// and a heartbeat still reporting partitions).
#[allow(clippy::result_unit_err)]
pub fn next(i: &Inputs<'_>) -> Result<CurrentAssignmentValue, ()> {
    let c = i.current;
    match c.state {
        MemberState::Stable if c.member_epoch == i.target_epoch => Ok(c.clone()),
        MemberState::Stable | MemberState::UnreleasedPartitions => Ok(compute(i, c.member_epoch)),
        MemberState::UnrevokedPartitions => {
            if owns_any(i.owned, &c.pending_revocation) {
                Ok(c.clone())
            } else {
                Ok(compute(i, c.member_epoch))
            }
        }
        MemberState::Unknown => {
            if i.owned.is_none_or(|o| o.values().any(|ps| !ps.is_empty())) {
                return Err(());
            }
            Ok(compute(i, i.target_epoch))
        }
    }
}

/// Whether `owned` (`None`: unknown, assumed yes) still includes any partition of `revoking`.
fn owns_any(owned: Option<&Assignment>, revoking: &Assignment) -> bool {
    let Some(owned) = owned else {
        return true;
    };
    owned.iter().any(|(t, ps)| {
        revoking
            .get(t)
            .is_some_and(|r| ps.iter().any(|p| r.contains(p)))
    })
}

/// Kafka's `computeNextAssignment` from epoch `member_epoch`.
fn compute(i: &Inputs<'_>, member_epoch: i32) -> CurrentAssignmentValue {
    let c = i.current;
    let mut assigned = Assignment::new();
    let mut revoking = Assignment::new();
    let mut pending_assignment = Assignment::new();
    let mut unreleased = false;
    let topics: BTreeSet<Uuid> = i.target.keys().chain(c.assigned.keys()).copied().collect();
    let empty = BTreeSet::new();
    for topic in topics {
        let target = match i.subscribed.contains(&topic) {
            true => i.target.get(&topic).unwrap_or(&empty),
            false => &empty,
        };
        let current = c.assigned.get(&topic).unwrap_or(&empty);
        let keep: BTreeSet<i32> = current.intersection(target).copied().collect();
        let revoke: BTreeSet<i32> = current.difference(&keep).copied().collect();
        let own_pending = c.pending_revocation.get(&topic).unwrap_or(&empty);
        let mut add = BTreeSet::new();
        for &p in target.difference(&keep) {
            let held_elsewhere = (i.owner)(topic, p).is_some_and(|o| o != i.member_id);
            if held_elsewhere && !own_pending.contains(&p) {
                unreleased = true;
            } else {
                add.insert(p);
            }
        }
        if !keep.is_empty() {
            assigned.insert(topic, keep);
        }
        if !revoke.is_empty() {
            revoking.insert(topic, revoke);
        }
        if !add.is_empty() {
            pending_assignment.insert(topic, add);
        }
    }
    if !revoking.is_empty() && owns_any(i.owned, &revoking) {
        return CurrentAssignmentValue {
            member_epoch,
            previous_member_epoch: c.previous_member_epoch,
            state: MemberState::UnrevokedPartitions,
            assigned,
            pending_revocation: revoking,
        };
    }
    for (t, ps) in pending_assignment {
        assigned.entry(t).or_default().extend(ps);
    }
    CurrentAssignmentValue {
        member_epoch: i.target_epoch,
        previous_member_epoch: c.member_epoch,
        state: match unreleased {
            true => MemberState::UnreleasedPartitions,
            false => MemberState::Stable,
        },
        assigned,
        pending_revocation: Assignment::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t() -> Uuid {
        Uuid::from_u128(1)
    }

    fn a(ps: &[i32]) -> Assignment {
        [(t(), ps.iter().copied().collect())].into_iter().collect()
    }

    fn run(
        current: &CurrentAssignmentValue,
        target: &Assignment,
        owned: Option<&Assignment>,
        other: &[i32],
    ) -> CurrentAssignmentValue {
        let subscribed: BTreeSet<Uuid> = [t()].into();
        let owner = |_: Uuid, p: i32| other.contains(&p).then_some("other");
        next(&Inputs {
            current,
            member_id: "me",
            target_epoch: 5,
            target,
            subscribed: &subscribed,
            owner: &owner,
            owned,
        })
        .unwrap()
    }

    fn at(epoch: i32, assigned: &[i32]) -> CurrentAssignmentValue {
        CurrentAssignmentValue {
            member_epoch: epoch,
            previous_member_epoch: epoch - 1,
            state: MemberState::Stable,
            assigned: a(assigned),
            pending_revocation: Assignment::new(),
        }
    }

    #[test]
    fn revocation_comes_before_assignment() {
        // Owns 0,1,2; target 0,3: first revoke 1,2 at the old epoch.
        let c = at(4, &[0, 1, 2]);
        let r = run(&c, &a(&[0, 3]), Some(&a(&[0, 1, 2])), &[]);
        assert_eq!(r.state, MemberState::UnrevokedPartitions);
        assert_eq!(
            (
                r.member_epoch,
                r.assigned.clone(),
                r.pending_revocation.clone()
            ),
            (4, a(&[0]), a(&[1, 2]))
        );
        // Still reporting 1: no progress.
        assert_eq!(run(&r, &a(&[0, 3]), Some(&a(&[0, 1])), &[]), r);
        // Revoked: moves to epoch 5 with 0 and 3.
        let s = run(&r, &a(&[0, 3]), Some(&a(&[0])), &[]);
        assert_eq!(
            (s.state, s.member_epoch, s.previous_member_epoch, s.assigned),
            (MemberState::Stable, 5, 4, a(&[0, 3]))
        );
    }

    #[test]
    fn partitions_held_by_another_member_are_unreleased() {
        let c = at(4, &[]);
        let r = run(&c, &a(&[0, 1]), Some(&Assignment::new()), &[1]);
        assert_eq!(
            (r.state, r.member_epoch, r.assigned.clone()),
            (MemberState::UnreleasedPartitions, 5, a(&[0]))
        );
        let s = run(&r, &a(&[0, 1]), Some(&a(&[0])), &[]);
        assert_eq!((s.state, s.assigned), (MemberState::Stable, a(&[0, 1])));
    }

    #[test]
    fn a_reconciled_member_is_unchanged() {
        let c = at(5, &[0, 1]);
        assert_eq!(run(&c, &a(&[0, 1]), None, &[]), c);
    }
}
