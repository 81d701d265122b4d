//! Which member is on a rack holding a replica of which partition (KIP-881's rack matching).

use std::collections::BTreeMap;

use uuid::Uuid;

use super::{MemberSpec, PartitionRacks};

/// The members' racks and the partitions' replica racks, built only when rack awareness can matter.
pub(super) struct Racks<'a> {
    /// Member id → its (non-empty) rack.
    members: BTreeMap<&'a str, &'a str>,
    partitions: &'a PartitionRacks,
}

impl<'a> Racks<'a> {
    /// `None` (the assignors then run exactly as without racks) when no member has a rack or no partition of
    /// a subscribed topic has a replica rack.
    pub(super) fn new(
        members: &'a BTreeMap<String, MemberSpec>,
        partitions: &BTreeMap<Uuid, i32>,
        racks: &'a PartitionRacks,
    ) -> Option<Racks<'a>> {
        let by_member: BTreeMap<&str, &str> = (members.iter())
            .filter_map(|(m, s)| {
                let rack = s.rack.as_deref().filter(|r| !r.is_empty())?;
                Some((m.as_str(), rack))
            })
            .collect();
        if by_member.is_empty() {
            return None;
        }
        let any_partition_rack = (members.values())
            .flat_map(|s| &s.topics)
            .filter(|t| partitions.get(*t).is_some_and(|&n| n > 0))
            .any(|t| {
                racks
                    .get(t)
                    .is_some_and(|ps| ps.iter().any(|r| !r.is_empty()))
            });
        any_partition_rack.then_some(Racks {
            members: by_member,
            partitions: racks,
        })
    }

    /// True when `member` has a rack and it holds a replica of partition `p` of `topic`.
    pub(super) fn matches(&self, member: &str, topic: &Uuid, p: i32) -> bool {
        let Some(rack) = self.members.get(member) else {
            return false;
        };
        let Ok(p) = usize::try_from(p) else {
            return false;
        };
        (self.partitions.get(topic))
            .and_then(|ps| ps.get(p))
            .is_some_and(|racks| racks.contains(*rack))
    }
}
