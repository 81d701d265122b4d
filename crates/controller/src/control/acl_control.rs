//! ACLs (Kafka's `AclControlManager`, KIP-801): CreateAcls and DeleteAcls as records. The broker validates
//! the bindings and resolves DeleteAcls filters against its image before it asks; the controller gives new
//! ACLs fresh ids, skips one equal to an existing ACL (Kafka creates nothing for it either), and removes the
//! ids that still exist.

use std::collections::BTreeSet;

use metadata::{AclEntry, ControllerError, MetadataImage, MetadataRecord};
use rand::Rng;
use uuid::Uuid;

use super::QuorumControl;

/// Most ACLs one CreateAcls or DeleteAcls may name (bounds the work and the batch on bad input).
pub const MAX_ACLS_PER_REQUEST: usize = 10_000;

impl QuorumControl {
    /// The records creating `acls`: one `AccessControlEntryRecord` per ACL not already present (equal
    /// fields), each with an id no ACL has. Error: INVALID_REQUEST (42) for more than
    /// [`MAX_ACLS_PER_REQUEST`].
    pub fn create_acls(
        &mut self,
        image: &MetadataImage,
        acls: &[AclEntry],
    ) -> Result<Vec<MetadataRecord>, ControllerError> {
        too_many(acls.len())?;
        let existing: BTreeSet<&AclEntry> = image.acls.values().collect();
        let mut seen = BTreeSet::new();
        let mut records = Vec::new();
        for acl in acls {
            if existing.contains(acl) || !seen.insert(acl) {
                continue;
            }
            let id = self.new_acl_id(image, &records);
            records.push(MetadataRecord::AccessControlEntryRecord {
                id,
                acl: acl.clone(),
            });
        }
        Ok(records)
    }

    /// The records removing the ACLs `ids` that exist (a `RemoveAccessControlEntryRecord` each; unknown
    /// and repeated ids are skipped). Error: INVALID_REQUEST (42) for more than [`MAX_ACLS_PER_REQUEST`].
    pub fn delete_acls(
        &self,
        image: &MetadataImage,
        ids: &[Uuid],
    ) -> Result<Vec<MetadataRecord>, ControllerError> {
        too_many(ids.len())?;
        let unique: BTreeSet<&Uuid> = ids
            .iter()
            .filter(|id| image.acls.contains_key(id))
            .collect();
        Ok(unique
            .into_iter()
            .map(|id| MetadataRecord::RemoveAccessControlEntryRecord { id: *id })
            .collect())
    }

    fn new_acl_id(&mut self, image: &MetadataImage, pending: &[MetadataRecord]) -> Uuid {
        loop {
            let id = uuid::Builder::from_random_bytes(self.rng.gen()).into_uuid();
            let taken = image.acls.contains_key(&id)
                || pending.iter().any(|r| {
                    matches!(r, MetadataRecord::AccessControlEntryRecord { id: p, .. } if *p == id)
                });
            if !taken && !id.is_nil() {
                return id;
            }
        }
    }
}

fn too_many(n: usize) -> Result<(), ControllerError> {
    if n > MAX_ACLS_PER_REQUEST {
        return Err(super::err(
            types::ErrorCode::INVALID_REQUEST,
            format!("{n} ACLs in one request; at most {MAX_ACLS_PER_REQUEST}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::ControlConfig;

    fn control() -> QuorumControl {
        let config = ControlConfig {
            session_timeout_ms: 9000,
            default_num_partitions: 1,
            default_replication_factor: 1,
            unclean_leader_election: false,
            auto_leader_rebalance: false,
            leader_imbalance_check_interval_ms: 300_000,
            balancer: crate::control::BalancerConfig::disabled(),
        };
        QuorumControl::new(config, 7)
    }

    fn acl(name: &str) -> AclEntry {
        AclEntry {
            resource_type: 2,
            resource_name: name.into(),
            pattern_type: 3,
            principal: "User:alice".into(),
            host: "*".into(),
            operation: 3,
            permission_type: 3,
        }
    }

    #[test]
    fn create_skips_existing_and_repeated_acls_and_delete_skips_unknown_ids() {
        let mut ctl = control();
        let mut image = MetadataImage::default();
        let records = ctl
            .create_acls(&image, &[acl("a"), acl("b"), acl("a")])
            .unwrap();
        assert_eq!(records.len(), 2);
        for (i, r) in records.iter().enumerate() {
            image.apply(i as i64 + 1, r);
        }
        assert_eq!(image.acls.len(), 2);
        assert!(ctl.create_acls(&image, &[acl("b")]).unwrap().is_empty());
        let ids: Vec<Uuid> = image.acls.keys().copied().collect();
        let gone = ctl
            .delete_acls(&image, &[ids[0], ids[0], Uuid::from_u128(5)])
            .unwrap();
        assert_eq!(gone.len(), 1);
        image.apply(10, &gone[0]);
        assert_eq!(image.acls.len(), 1);
        let many = vec![acl("x"); MAX_ACLS_PER_REQUEST + 1];
        assert!(ctl.create_acls(&image, &many).is_err());
    }
}
