//! Producer-id blocks (AllocateProducerIds, KIP-730; Kafka's `ProducerIdControlManager`).

use metadata::{ControllerError, MetadataImage, MetadataRecord};
use types::{BrokerEpoch, BrokerId, ErrorCode, ProducerId};

use super::{check_broker_epoch, err, Decision, QuorumControl, PRODUCER_ID_BLOCK_SIZE};

impl QuorumControl {
    /// AllocateProducerIds (KIP-730): the next block of [`PRODUCER_ID_BLOCK_SIZE`] ids.
    ///
    /// Errors: `STALE_BROKER_EPOCH`, `UNKNOWN_SERVER_ERROR` when ids are exhausted.
    pub fn allocate_producer_ids(
        &mut self,
        image: &MetadataImage,
        broker_id: BrokerId,
        broker_epoch: BrokerEpoch,
    ) -> Result<Decision<(ProducerId, i32)>, ControllerError> {
        check_broker_epoch(image, broker_id, broker_epoch)?;
        let first = image.next_producer_id;
        let next = first
            .get()
            .checked_add(PRODUCER_ID_BLOCK_SIZE as i64)
            .map(ProducerId)
            .ok_or_else(|| err(ErrorCode::UNKNOWN_SERVER_ERROR, "producer ids exhausted"))?;
        Ok(Decision {
            records: vec![MetadataRecord::ProducerIdsRecord {
                broker_id,
                broker_epoch,
                next_producer_id: next,
            }],
            reply: (first, PRODUCER_ID_BLOCK_SIZE),
        })
    }
}
