//! Appending the coordinator's records to `__consumer_offsets`, plain and transactional.

use super::*;
use types::{ProducerEpoch, ProducerId};

/// A transactional producer's id and epoch.
pub(super) type Producer = (ProducerId, ProducerEpoch);

/// A record to append, with the producer whose TRANSACTIONAL batch carries it (`None`: a plain batch).
pub(super) type ToPersist<'a> = (Option<Producer>, &'a GroupRecord);

impl GroupCoordinatorService {
    /// Appends `records` to `__consumer_offsets`: one batch per partition and producer (plain records in
    /// one batch; the records of each transactional producer in a TRANSACTIONAL batch with its id and
    /// epoch and base sequence 0, as Kafka's `CoordinatorRuntime` writes them), records in call order.
    ///
    /// Appended with `AppendOrigin::Coordinator`, as Kafka appends coordinator batches: the log checks a
    /// transactional batch's producer epoch and transaction state but not its sequence (every such batch
    /// starts at sequence 0), and never takes it for a duplicate.
    pub(super) fn persist(
        &self,
        records: &[ToPersist<'_>],
    ) -> Result<Vec<Appended>, CoordinatorError> {
        if records.is_empty() {
            return Ok(Vec::new());
        }
        // Created by `ready`/`ready_for` before any call that writes; never created under the state lock.
        if self.metadata.topic(OFFSETS_TOPIC).is_none() {
            return Err(CoordinatorError::NotAvailable);
        }
        let n = self.num_partitions.load(Ordering::Acquire);
        let mut by_partition: BTreeMap<(i32, Option<Producer>), Vec<&GroupRecord>> =
            BTreeMap::new();
        for (producer, r) in records {
            by_partition
                .entry((partition_for(r.group_id(), n), *producer))
                .or_default()
                .push(r);
        }
        let now = self.clock.now_ms();
        let mut result = Ok(Vec::with_capacity(by_partition.len()));
        for ((p, producer), recs) in by_partition {
            let mut builder = RecordBatchBuilder::new(Compression::None);
            if let Some((id, epoch)) = producer {
                builder = builder
                    .producer(id.get(), epoch.get(), 0)
                    .transactional(true);
            }
            for r in recs {
                let (key, value) = encode_record(r);
                builder.append(now, Some(key), value, Vec::new());
            }
            let appended = match builder.build() {
                Err(e) => {
                    tracing::error!(partition = p, error = %e, "cannot encode group records");
                    Err(CoordinatorError::NotAvailable)
                }
                Ok(bytes) => match self.replica_manager.partition(OFFSETS_TOPIC, p) {
                    None => {
                        tracing::error!(partition = p, "{OFFSETS_TOPIC} partition is not hosted");
                        Err(if self.cluster_mode {
                            CoordinatorError::NotCoordinator
                        } else {
                            CoordinatorError::NotAvailable
                        })
                    }
                    Some(partition) => {
                        let origin = storage::AppendOrigin::Coordinator;
                        let now = self.clock.now_ms();
                        match partition.append_as_leader_with_origin(bytes, origin, 0, now) {
                            Ok((info, epoch)) => Ok((partition, info.last_offset.next(), epoch)),
                            Err(e) => {
                                tracing::error!(partition = p, error = %e, "cannot write group records");
                                Err(write_error(&e))
                            }
                        }
                    }
                },
            };
            match (&mut result, appended) {
                (Ok(v), Ok(a)) => v.push(a),
                (Ok(_), Err(e)) => result = Err(e),
                (Err(_), _) => {}
            }
        }
        result
    }
}
