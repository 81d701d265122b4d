//! SCRAM credentials (Kafka's `ScramControlManager`, KIP-554): AlterUserScramCredentials as records. The
//! broker derives StoredKey and ServerKey from the client's salted password before it asks; the decision
//! (`metadata::scram::decide_alter`, shared with the standalone store) is made against the image here.

use metadata::scram::{self, ScramAlterResult, ScramChange, ScramDeletion, ScramUpsertion};
use metadata::{MetadataImage, MetadataRecord};

use super::QuorumControl;

impl QuorumControl {
    /// The records of an AlterUserScramCredentials (a `UserScramCredentialRecord` per accepted upsertion, a
    /// `RemoveUserScramCredentialRecord` per accepted deletion) and one result per user named.
    pub fn alter_scram_credentials(
        &self,
        image: &MetadataImage,
        deletions: &[ScramDeletion],
        upsertions: &[ScramUpsertion],
    ) -> (Vec<MetadataRecord>, Vec<ScramAlterResult>) {
        let (changes, results) =
            scram::decide_alter(&image.scram_credentials, deletions, upsertions);
        let records = changes
            .into_iter()
            .map(|c| match c {
                ScramChange::Upsert(u) => MetadataRecord::UserScramCredentialRecord {
                    name: u.name,
                    mechanism: u.mechanism,
                    credential: u.credential,
                },
                ScramChange::Delete(d) => MetadataRecord::RemoveUserScramCredentialRecord {
                    name: d.name,
                    mechanism: d.mechanism,
                },
            })
            .collect();
        (records, results)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use metadata::scram::{ScramCredential, SCRAM_SHA_256};
    use types::ErrorCode;

    #[test]
    fn records_replay_into_the_image_and_deletions_need_an_existing_credential() {
        let config = crate::control::ControlConfig {
            session_timeout_ms: 9000,
            default_num_partitions: 1,
            default_replication_factor: 1,
            unclean_leader_election: false,
            auto_leader_rebalance: false,
            leader_imbalance_check_interval_ms: 300_000,
            balancer: crate::control::BalancerConfig::disabled(),
        };
        let ctl = QuorumControl::new(config, 7);
        let mut image = MetadataImage::default();
        let up = ScramUpsertion {
            name: "alice".into(),
            mechanism: SCRAM_SHA_256,
            credential: ScramCredential {
                salt: vec![1],
                stored_key: vec![2],
                server_key: vec![3],
                iterations: 4096,
            },
        };
        let (records, results) = ctl.alter_scram_credentials(&image, &[], &[up]);
        assert_eq!(results[0].error_code, ErrorCode::NONE);
        for r in &records {
            image.apply(1, r);
        }
        assert_eq!(
            image.scram_credentials["alice"][&SCRAM_SHA_256].iterations,
            4096
        );
        let del = ScramDeletion {
            name: "alice".into(),
            mechanism: SCRAM_SHA_256,
        };
        let (records, _) = ctl.alter_scram_credentials(&image, std::slice::from_ref(&del), &[]);
        for r in &records {
            image.apply(2, r);
        }
        assert!(image.scram_credentials.is_empty());
        let (records, results) = ctl.alter_scram_credentials(&image, &[del], &[]);
        assert!(records.is_empty());
        assert_eq!(results[0].error_code, ErrorCode::RESOURCE_NOT_FOUND);
    }
}
