//! Leader elections (ElectLeaders, the periodic preferred-leader check) and ISR changes
//! (AlterPartition) — Kafka's `ReplicationControlManager`.

use std::collections::BTreeSet;

use metadata::{
    ControllerError, ElectionResult, ElectionType, MetadataImage, MetadataRecord,
    PartitionRegistration, NO_LEADER,
};
use types::{BrokerId, ErrorCode};

use super::{check_broker_epoch, err, AlterPartition, Batch, Decision, QuorumControl};

impl QuorumControl {
    /// ElectLeaders (KIP-460): elects leaders of `partitions` (topic name, index), or of every partition when
    /// `None` — then only partitions where an election happened or failed are reported, not those that
    /// needed none (as Kafka's controller does). Results come in request order.
    ///
    /// Preferred: the first replica becomes leader when it is in the ISR and active, else
    /// `PREFERRED_LEADER_NOT_AVAILABLE`; `ELECTION_NOT_NEEDED` when it already leads. Unclean: a
    /// partition without a leader gets its first active ISR member, else its first active replica (the
    /// ISR becomes just that replica: records only the old ISR had are lost, which is what an unclean
    /// election means), else `ELIGIBLE_LEADERS_NOT_AVAILABLE`; `ELECTION_NOT_NEEDED` when it has a
    /// leader. Unknown partitions: `UNKNOWN_TOPIC_OR_PARTITION`.
    pub fn elect_leaders(
        &self,
        image: &MetadataImage,
        election: ElectionType,
        partitions: Option<&[(String, i32)]>,
    ) -> Decision<Vec<ElectionResult>> {
        let mut batch = Batch::new(image);
        let wanted: Vec<(String, i32)> = match partitions {
            Some(p) => p.to_vec(),
            None => image
                .topics
                .values()
                .flat_map(|t| t.partitions.keys().map(|&p| (t.name.clone(), p)))
                .collect(),
        };
        let mut results = Vec::with_capacity(wanted.len());
        for (topic, partition) in wanted {
            let outcome = Self::elect_one(&mut batch, election, &topic, partition);
            let (error_code, message) = match outcome {
                Ok(()) => (ErrorCode::NONE, None),
                Err((code, msg)) => (code, Some(msg)),
            };
            if partitions.is_none() && error_code == ErrorCode::ELECTION_NOT_NEEDED {
                continue;
            }
            results.push(ElectionResult {
                topic,
                partition,
                error_code: error_code.0,
                message,
            });
        }
        Decision {
            records: batch.records,
            reply: results,
        }
    }

    fn elect_one(
        batch: &mut Batch<'_>,
        election: ElectionType,
        topic: &str,
        partition: i32,
    ) -> Result<(), (ErrorCode, String)> {
        let unknown = || {
            (
                ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                format!("{topic}-{partition} does not exist"),
            )
        };
        let t = batch.view.topics.get(topic).ok_or_else(unknown)?;
        let p = t.partitions.get(&partition).ok_or_else(unknown)?;
        let topic_id = t.topic_id;
        let (leader, isr) = match election {
            ElectionType::Preferred => {
                let preferred = p.replicas.first().copied().ok_or_else(unknown)?;
                if p.leader == preferred {
                    return Err((
                        ErrorCode::ELECTION_NOT_NEEDED,
                        "the preferred replica is the leader".into(),
                    ));
                }
                if !p.isr.contains(&preferred) || !batch.view.is_replica_online(preferred, p) {
                    return Err((
                        ErrorCode::PREFERRED_LEADER_NOT_AVAILABLE,
                        format!("preferred replica {preferred} is not in the ISR or not active"),
                    ));
                }
                (preferred, None)
            }
            ElectionType::Unclean => {
                if p.leader != NO_LEADER {
                    return Err((
                        ErrorCode::ELECTION_NOT_NEEDED,
                        format!("partition has leader {}", p.leader),
                    ));
                }
                let active = |r: &BrokerId| batch.view.is_replica_online(*r, p);
                if let Some(&r) = p.isr.iter().find(|r| active(r)) {
                    (r, None)
                } else if let Some(&r) = p.replicas.iter().find(|r| active(r)) {
                    (r, Some(vec![r]))
                } else {
                    return Err((
                        ErrorCode::ELIGIBLE_LEADERS_NOT_AVAILABLE,
                        "no replica is active".into(),
                    ));
                }
            }
        };
        batch.push(MetadataRecord::isr_leader_change(
            topic_id,
            partition,
            isr,
            Some(leader),
        ));
        Ok(())
    }

    /// The periodic preferred-leader election (KIP-183's PREFERRED type, as [`elect_leaders`](Self::elect_leaders)
    /// does it): every partition not led by its first replica, while that replica is in the ISR and active,
    /// gets it as leader (new LeaderEpoch; the ISR is unchanged, so no acknowledged record can be lost). At
    /// most `limit` elections; returns whether candidates were left over.
    pub(super) fn elect_preferred_leaders(batch: &mut Batch<'_>, limit: usize) -> bool {
        let candidates: Vec<(String, i32)> = batch
            .view
            .topics
            .values()
            .flat_map(|t| {
                t.partitions
                    .iter()
                    .filter(|(_, p)| p.replicas.first().is_some_and(|&r| r != p.leader))
                    .map(|(&pid, _)| (t.name.clone(), pid))
            })
            .collect();
        let mut elected = 0;
        for (topic, partition) in candidates {
            if elected == limit {
                return true;
            }
            if Self::elect_one(batch, ElectionType::Preferred, &topic, partition).is_ok() {
                elected += 1;
            }
        }
        false
    }

    /// AlterPartition (KIP-497): a leader's ISR change. Returns the registration as it will be once
    /// the records commit (unchanged, with no records, when the ISR is already the requested set).
    ///
    /// Errors: `STALE_BROKER_EPOCH` (unknown broker or other epoch), `UNKNOWN_TOPIC_ID`,
    /// `UNKNOWN_TOPIC_OR_PARTITION`, `FENCED_LEADER_EPOCH`, `INVALID_REQUEST` (not the leader, ISR
    /// empty / with duplicates / outside the replicas / without the leader), `INVALID_UPDATE_VERSION`
    /// (partition epoch mismatch), `INELIGIBLE_REPLICA` (a new member is fenced or shutting down).
    pub fn alter_partition(
        &mut self,
        image: &MetadataImage,
        req: &AlterPartition,
    ) -> Result<Decision<PartitionRegistration>, ControllerError> {
        check_broker_epoch(image, req.broker_id, req.broker_epoch)?;
        let topic = image.topic_by_id(req.topic_id).ok_or_else(|| {
            err(
                ErrorCode::UNKNOWN_TOPIC_ID,
                format!("topic id {} does not exist", req.topic_id),
            )
        })?;
        let cur = topic.partitions.get(&req.partition).ok_or_else(|| {
            err(
                ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                format!("partition {}-{} does not exist", topic.name, req.partition),
            )
        })?;
        if req.leader_epoch != cur.leader_epoch {
            return Err(err(
                ErrorCode::FENCED_LEADER_EPOCH,
                format!(
                    "leader epoch {} is not the current {}",
                    req.leader_epoch, cur.leader_epoch
                ),
            ));
        }
        if req.broker_id != cur.leader {
            return Err(err(
                ErrorCode::INVALID_REQUEST,
                format!("broker {} is not the leader {}", req.broker_id, cur.leader),
            ));
        }
        if req.partition_epoch != cur.partition_epoch {
            return Err(err(
                ErrorCode::INVALID_UPDATE_VERSION,
                format!(
                    "partition epoch {} is not the current {}",
                    req.partition_epoch, cur.partition_epoch
                ),
            ));
        }
        let set: BTreeSet<BrokerId> = req.new_isr.iter().copied().collect();
        if req.new_isr.is_empty()
            || set.len() != req.new_isr.len()
            || !set.iter().all(|r| cur.replicas.contains(r))
            || !set.contains(&cur.leader)
        {
            return Err(err(
                ErrorCode::INVALID_REQUEST,
                format!(
                    "ISR {:?} must be distinct replicas of {:?} including the leader {}",
                    req.new_isr, cur.replicas, cur.leader
                ),
            ));
        }
        if let Some(bad) = req
            .new_isr
            .iter()
            .find(|r| !cur.isr.contains(r) && !image.is_replica_online(**r, cur))
        {
            return Err(err(
                ErrorCode::INELIGIBLE_REPLICA,
                format!(
                    "replica {bad} is fenced, shutting down, unregistered or in an offline log dir"
                ),
            ));
        }
        let cur_set: BTreeSet<BrokerId> = cur.isr.iter().copied().collect();
        if cur_set == set {
            return Ok(Decision {
                records: Vec::new(),
                reply: cur.clone(),
            });
        }
        // KIP-455: the ISR change that brings every target replica in completes a reassignment.
        let record = super::reassignment::completion_record(
            image,
            req.topic_id,
            req.partition,
            cur,
            &req.new_isr,
        )
        .unwrap_or_else(|| {
            MetadataRecord::isr_leader_change(
                req.topic_id,
                req.partition,
                Some(req.new_isr.clone()),
                None,
            )
        });
        let mut next = cur.clone();
        next.apply_change_record(&record);
        Ok(Decision {
            records: vec![record],
            reply: next,
        })
    }
}
