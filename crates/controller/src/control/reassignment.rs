//! Partition reassignment (KIP-455) — Kafka's `ReplicationControlManager.alterPartitionReassignments`,
//! `PartitionReassignmentReplicas` and `PartitionReassignmentRevert`.
//!
//! A reassignment from the current replicas R to a target T is recorded in one `PartitionChangeRecord`:
//! replicas = T followed by the members of R not in T, `adding_replicas` = T − R, `removing_replicas` = R − T.
//! The leader and ISR are left alone: the new replicas start as followers and catch up. The reassignment
//! completes — in the same decision as the ISR change that makes it possible (AlterPartition) — once every
//! target replica is in the ISR without the removed ones: replicas = T, ISR = ISR − removing, both lists
//! emptied, and a leader outside T handed to the first member of T in the new ISR that is active. A new
//! reassignment of a partition already moving starts from its current replica list. Cancelling (a `None`
//! target) reverts: replicas = R (the list without `adding_replicas`), ISR without the added replicas; when
//! no ISR member would remain, only with unclean leader election (the first original replica becomes leader
//! and sole ISR member), else INVALID_REPLICA_ASSIGNMENT.

use std::collections::BTreeSet;

use metadata::{
    ControllerError, MetadataImage, MetadataRecord, PartitionRegistration, Reassignment, NO_LEADER,
};
use types::{BrokerId, ErrorCode};

use super::{err, Batch, Decision, QuorumControl};

/// The replica list, ISR and leader a completed reassignment leaves `p` with once its ISR is `isr`
/// (Kafka's `maybeCompleteReassignment`): `None` while a target replica is missing from the ISR, or
/// when nothing is being reassigned.
pub(super) fn completed(
    image: &MetadataImage,
    p: &PartitionRegistration,
    isr: &[BrokerId],
) -> Option<(Vec<BrokerId>, Vec<BrokerId>, Option<BrokerId>)> {
    if !p.is_reassigning() {
        return None;
    }
    let removing = &p.removing_replicas;
    let new_isr: Vec<BrokerId> = isr
        .iter()
        .filter(|r| !removing.contains(r))
        .copied()
        .collect();
    let replicas = p.target_replicas();
    if new_isr.is_empty() || replicas.is_empty() || !replicas.iter().all(|r| new_isr.contains(r)) {
        return None;
    }
    let leader = (!new_isr.contains(&p.leader)).then(|| {
        (replicas.iter())
            .find(|r| new_isr.contains(r) && image.is_replica_online(**r, p))
            .copied()
            .unwrap_or(NO_LEADER)
    });
    Some((replicas, new_isr, leader))
}

/// The record completing `p`'s reassignment with ISR `isr`, if it completes (see [`completed`]).
pub(super) fn completion_record(
    image: &MetadataImage,
    topic_id: uuid::Uuid,
    partition: i32,
    p: &PartitionRegistration,
    isr: &[BrokerId],
) -> Option<MetadataRecord> {
    let (replicas, isr, leader) = completed(image, p, isr)?;
    Some(MetadataRecord::PartitionChangeRecord {
        topic_id,
        partition_id: partition,
        isr: Some(isr),
        leader,
        replicas: Some(replicas),
        adding_replicas: Some(Vec::new()),
        removing_replicas: Some(Vec::new()),
        directories: None,
    })
}

impl QuorumControl {
    /// AlterPartitionReassignments (KIP-455): starts, replaces or cancels the reassignment of each
    /// partition (see the module doc), all in one batch. One result per request entry, in order.
    ///
    /// Errors per partition: UNKNOWN_TOPIC_OR_PARTITION; INVALID_REPLICA_ASSIGNMENT (an empty target, a
    /// duplicate, a broker that is not registered, or a cancellation that would need an unclean election
    /// with it disabled); INVALID_REPLICATION_FACTOR (a target of another size than the replicas before
    /// any ongoing move, with `allow_rf_change` false — KIP-860); NO_REASSIGNMENT_IN_PROGRESS (cancelling
    /// when nothing moves).
    pub fn alter_partition_reassignments(
        &self,
        image: &MetadataImage,
        reassignments: &[Reassignment],
        allow_rf_change: bool,
    ) -> Decision<Vec<Result<(), ControllerError>>> {
        let mut batch = Batch::new(image);
        let results = reassignments
            .iter()
            .map(|r| self.reassign_one(&mut batch, r, allow_rf_change))
            .collect();
        Decision {
            records: batch.records,
            reply: results,
        }
    }

    fn reassign_one(
        &self,
        batch: &mut Batch<'_>,
        r: &Reassignment,
        allow_rf_change: bool,
    ) -> Result<(), ControllerError> {
        let unknown = || {
            err(
                ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                format!("partition {}-{} does not exist", r.topic, r.partition),
            )
        };
        let topic = batch.view.topics.get(&r.topic).ok_or_else(unknown)?;
        let topic_id = topic.topic_id;
        let p = topic
            .partitions
            .get(&r.partition)
            .ok_or_else(unknown)?
            .clone();
        let record = match &r.target {
            Some(target) => {
                validate_target(&batch.view, target)?;
                let original = p.original_replicas().len();
                if !allow_rf_change && target.len() != original {
                    return Err(err(
                        ErrorCode::INVALID_REPLICATION_FACTOR,
                        format!(
                            "the target would change the replication factor from {original} to {}, \
                             and allowReplicationFactorChange is false",
                            target.len()
                        ),
                    ));
                }
                start_record(&batch.view, topic_id, r.partition, &p, target)
            }
            None => self.revert_record(&batch.view, topic_id, r.partition, &p)?,
        };
        if let Some(record) = record {
            batch.push(record);
        }
        Ok(())
    }

    /// The record cancelling `p`'s reassignment (Kafka's `PartitionReassignmentRevert`).
    fn revert_record(
        &self,
        image: &MetadataImage,
        topic_id: uuid::Uuid,
        partition: i32,
        p: &PartitionRegistration,
    ) -> Result<Option<MetadataRecord>, ControllerError> {
        if !p.is_reassigning() {
            return Err(err(
                ErrorCode::NO_REASSIGNMENT_IN_PROGRESS,
                "no reassignment is in progress for the partition",
            ));
        }
        let replicas = p.original_replicas();
        let mut isr: Vec<BrokerId> = (p.isr.iter())
            .filter(|r| !p.adding_replicas.contains(r))
            .copied()
            .collect();
        let mut leader = None;
        if isr.is_empty() {
            let Some(&first) = replicas
                .first()
                .filter(|_| self.config.unclean_leader_election)
            else {
                return Err(err(
                    ErrorCode::INVALID_REPLICA_ASSIGNMENT,
                    "reverting the reassignment would need an unclean leader election, which is disabled",
                ));
            };
            isr = vec![first];
            leader = Some(first);
        } else if !isr.contains(&p.leader) {
            let next =
                (replicas.iter()).find(|r| isr.contains(r) && image.is_replica_online(**r, p));
            leader = Some(next.copied().unwrap_or(NO_LEADER));
        }
        Ok(Some(MetadataRecord::PartitionChangeRecord {
            topic_id,
            partition_id: partition,
            isr: Some(isr),
            leader,
            replicas: Some(replicas),
            adding_replicas: Some(Vec::new()),
            removing_replicas: Some(Vec::new()),
            directories: None,
        }))
    }
}

/// Kafka's `validateManualPartitionAssignment`: not empty, no duplicate, every broker registered.
fn validate_target(image: &MetadataImage, target: &[BrokerId]) -> Result<(), ControllerError> {
    let invalid = |m: String| err(ErrorCode::INVALID_REPLICA_ASSIGNMENT, m);
    if target.is_empty() {
        return Err(invalid("the target replica list is empty".into()));
    }
    let distinct: BTreeSet<BrokerId> = target.iter().copied().collect();
    if distinct.len() != target.len() {
        return Err(invalid(format!(
            "the target replicas {target:?} repeat a broker"
        )));
    }
    if let Some(b) = target.iter().find(|b| !image.brokers.contains_key(b)) {
        return Err(invalid(format!(
            "the target includes broker {b}, which is not registered"
        )));
    }
    Ok(())
}

/// The record starting the move of `p` to `target` (Kafka's `PartitionReassignmentReplicas` from the
/// current replica list), completed at once when the ISR already allows it; `None` when `p` already has
/// exactly these replicas and nothing moves.
pub(super) fn start_record(
    image: &MetadataImage,
    topic_id: uuid::Uuid,
    partition: i32,
    p: &PartitionRegistration,
    target: &[BrokerId],
) -> Option<MetadataRecord> {
    if !p.is_reassigning() && p.replicas == target {
        return None;
    }
    let current = &p.replicas;
    let removing: Vec<BrokerId> = current
        .iter()
        .filter(|r| !target.contains(r))
        .copied()
        .collect();
    let adding: Vec<BrokerId> = target
        .iter()
        .filter(|r| !current.contains(r))
        .copied()
        .collect();
    let replicas: Vec<BrokerId> = target.iter().chain(&removing).copied().collect();
    let moving = PartitionRegistration {
        directories: replicas.iter().map(|&r| p.directory_of(r)).collect(),
        replicas: replicas.clone(),
        adding_replicas: adding.clone(),
        removing_replicas: removing.clone(),
        ..p.clone()
    };
    if let Some(done) = completion_record(image, topic_id, partition, &moving, &p.isr) {
        return Some(done);
    }
    Some(MetadataRecord::PartitionChangeRecord {
        topic_id,
        partition_id: partition,
        isr: None,
        leader: None,
        replicas: Some(replicas),
        adding_replicas: Some(adding),
        removing_replicas: Some(removing),
        directories: None,
    })
}
