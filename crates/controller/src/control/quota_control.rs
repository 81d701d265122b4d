//! Client quotas (Kafka's `ClientQuotaControlManager`, KIP-546): AlterClientQuotas as `ClientQuotaRecord`s.
//! The broker validates the entries (entity types and names, keys, values: `metadata::quota`) before it asks,
//! as for ACLs; the controller turns each entry into the records that change the image — a set only of a
//! value that differs, a removal only of a key present — all committed together.

use metadata::quota::QuotaAlteration;
use metadata::{ControllerError, MetadataImage, MetadataRecord};

use super::QuorumControl;

/// Most entries one AlterClientQuotas may carry (bounds the work and the batch on bad input).
pub const MAX_QUOTA_ENTRIES: usize = 10_000;

impl QuorumControl {
    /// The records of `entries` (none with `validate_only`). Error: INVALID_REQUEST (42) for more than
    /// [`MAX_QUOTA_ENTRIES`] entries.
    pub fn alter_client_quotas(
        &self,
        image: &MetadataImage,
        entries: &[QuotaAlteration],
        validate_only: bool,
    ) -> Result<Vec<MetadataRecord>, ControllerError> {
        if entries.len() > MAX_QUOTA_ENTRIES {
            return Err(super::err(
                types::ErrorCode::INVALID_REQUEST,
                format!(
                    "{} quota entries in one request; at most {MAX_QUOTA_ENTRIES}",
                    entries.len()
                ),
            ));
        }
        let mut quotas = image.client_quotas.clone();
        let mut records = Vec::new();
        for entry in entries {
            for change in quotas.changes(entry) {
                quotas.apply(&change);
                records.push(MetadataRecord::ClientQuotaRecord(change));
            }
        }
        Ok(if validate_only { Vec::new() } else { records })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::ControlConfig;
    use metadata::quota::{ClientQuotaEntity, EntityName, PRODUCER_BYTE_RATE};

    #[test]
    fn alterations_become_records_that_replay_into_the_image() {
        let ctl = QuorumControl::new(
            ControlConfig {
                session_timeout_ms: 9000,
                default_num_partitions: 1,
                default_replication_factor: 1,
                unclean_leader_election: false,
                auto_leader_rebalance: false,
                leader_imbalance_check_interval_ms: 300_000,
                balancer: crate::control::BalancerConfig::disabled(),
            },
            7,
        );
        let mut image = MetadataImage::default();
        let c1 = ClientQuotaEntity::of(None, Some(EntityName::Name("c1".into())));
        let set = |v: Option<f64>| {
            QuotaAlteration::new(c1.clone(), vec![(PRODUCER_BYTE_RATE.into(), v)]).unwrap()
        };
        let records = ctl
            .alter_client_quotas(&image, &[set(Some(1024.0))], false)
            .unwrap();
        assert_eq!(records.len(), 1);
        image.apply(1, &records[0]);
        assert_eq!(
            image.client_quotas.get(&c1, PRODUCER_BYTE_RATE),
            Some(1024.0)
        );
        let same = ctl.alter_client_quotas(&image, &[set(Some(1024.0))], false);
        assert!(same.unwrap().is_empty());
        let dry = ctl.alter_client_quotas(&image, &[set(None)], true);
        assert!(dry.unwrap().is_empty());
        let removed = ctl
            .alter_client_quotas(&image, &[set(None)], false)
            .unwrap();
        image.apply(2, &removed[0]);
        assert!(image.client_quotas.is_empty());
        let many = vec![set(None); MAX_QUOTA_ENTRIES + 1];
        assert!(ctl.alter_client_quotas(&image, &many, false).is_err());
    }
}
