//! Transaction markers: the control records ending a transaction (Kafka's `ControlRecordType` and
//! `EndTransactionMarker`, KIP-98), and the control batch carrying one.

use crate::error::StorageError;
use bytes::Bytes;
use protocol::record::{Compression, Record, RecordBatchBuilder, NO_SEQUENCE};
use types::{ProducerEpoch, ProducerId};

/// The type of a control record, its key's second i16 (Kafka's `ControlRecordType`). Only ABORT and
/// COMMIT end a transaction; the other known types are KRaft's, kept to name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlRecordType {
    /// 0: the transaction aborted.
    Abort,
    /// 1: the transaction committed.
    Commit,
    /// Any other type id (2 LEADER_CHANGE, 3 SNAPSHOT_HEADER, ... in KRaft logs; unknown here).
    Other(i16),
}

impl ControlRecordType {
    /// The type id on the wire.
    pub fn id(self) -> i16 {
        match self {
            ControlRecordType::Abort => 0,
            ControlRecordType::Commit => 1,
            ControlRecordType::Other(id) => id,
        }
    }

    /// The control record key: version i16 (0) then the type id i16, big-endian (4 bytes).
    pub fn key_bytes(self) -> [u8; 4] {
        let mut k = [0u8; 4];
        k[2..4].copy_from_slice(&self.id().to_be_bytes());
        k
    }

    /// Parses a control record key (Kafka's `ControlRecordType.parse`): at least 4 bytes, a version
    /// ≥ 0 (newer versions are read as version 0), then the type. Else InvalidRecord.
    pub fn parse_key(key: &[u8]) -> Result<ControlRecordType, StorageError> {
        if key.len() < 4 {
            return Err(StorageError::InvalidRecord(format!(
                "control record key of {} bytes, at least 4 expected",
                key.len()
            )));
        }
        if i16::from_be_bytes([key[0], key[1]]) < 0 {
            return Err(StorageError::InvalidRecord(
                "negative control record key version".into(),
            ));
        }
        Ok(match i16::from_be_bytes([key[2], key[3]]) {
            0 => ControlRecordType::Abort,
            1 => ControlRecordType::Commit,
            id => ControlRecordType::Other(id),
        })
    }
}

/// An end-transaction marker (Kafka's `EndTransactionMarker`): the single record of a control batch
/// written by the transaction coordinator's WriteTxnMarkers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndTransactionMarker {
    /// COMMIT or ABORT.
    pub control_type: ControlRecordType,
    /// The epoch of the coordinator that wrote it; a marker from an older one is fenced.
    pub coordinator_epoch: i32,
}

impl EndTransactionMarker {
    /// A COMMIT (`commit`) or ABORT marker.
    pub fn new(commit: bool, coordinator_epoch: i32) -> Self {
        let control_type = if commit {
            ControlRecordType::Commit
        } else {
            ControlRecordType::Abort
        };
        EndTransactionMarker {
            control_type,
            coordinator_epoch,
        }
    }

    /// True for an ABORT marker.
    pub fn is_abort(&self) -> bool {
        self.control_type == ControlRecordType::Abort
    }

    /// The record value: version i16 (0) then the coordinator epoch i32, big-endian (6 bytes).
    pub fn value_bytes(&self) -> [u8; 6] {
        let mut v = [0u8; 6];
        v[2..6].copy_from_slice(&self.coordinator_epoch.to_be_bytes());
        v
    }

    /// Reads the marker of a control record (Kafka's `EndTransactionMarker.deserialize`): the key's type
    /// must be ABORT or COMMIT, the value ≥ 6 bytes with a version ≥ 0. Else InvalidRecord.
    pub fn parse(record: &Record) -> Result<EndTransactionMarker, StorageError> {
        let key = record.key.as_deref().unwrap_or_default();
        let control_type = ControlRecordType::parse_key(key)?;
        if !matches!(
            control_type,
            ControlRecordType::Abort | ControlRecordType::Commit
        ) {
            return Err(StorageError::InvalidRecord(format!(
                "control record type {} is not an end transaction marker",
                control_type.id()
            )));
        }
        let value = record.value.as_deref().unwrap_or_default();
        if value.len() < 6 || i16::from_be_bytes([value[0], value[1]]) < 0 {
            return Err(StorageError::InvalidRecord(format!(
                "invalid end transaction marker value of {} bytes",
                value.len()
            )));
        }
        let coordinator_epoch = i32::from_be_bytes([value[2], value[3], value[4], value[5]]);
        Ok(EndTransactionMarker {
            control_type,
            coordinator_epoch,
        })
    }

    /// The control batch carrying this marker (Kafka's `MemoryRecords.withEndTransactionMarker`):
    /// one record (key, value as above, timestamp `timestamp_ms`), uncompressed, base offset 0 (the log
    /// assigns it), the producer's id and epoch, base sequence -1, transactional and control flags.
    pub fn to_batch(
        &self,
        producer_id: ProducerId,
        producer_epoch: ProducerEpoch,
        timestamp_ms: i64,
    ) -> Result<Bytes, StorageError> {
        let mut b = RecordBatchBuilder::new(Compression::None)
            .producer(producer_id.get(), producer_epoch.get(), NO_SEQUENCE)
            .transactional(true)
            .control(true);
        b.append(
            timestamp_ms,
            Some(Bytes::copy_from_slice(&self.control_type.key_bytes())),
            Some(Bytes::copy_from_slice(&self.value_bytes())),
            Vec::new(),
        );
        Ok(b.build()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::record::RecordBatch;

    #[test]
    fn marker_bytes_follow_kafkas_layout() {
        let abort = EndTransactionMarker::new(false, 7);
        assert_eq!(abort.control_type.key_bytes(), [0, 0, 0, 0]);
        assert_eq!(abort.value_bytes(), [0, 0, 0, 0, 0, 7]);
        let commit = EndTransactionMarker::new(true, 0x01020304);
        assert_eq!(commit.control_type.key_bytes(), [0, 0, 0, 1]);
        assert_eq!(commit.value_bytes(), [0, 0, 1, 2, 3, 4]);

        let bytes = commit
            .to_batch(ProducerId(42), ProducerEpoch(3), 1000)
            .unwrap();
        let batch = RecordBatch::new(bytes.clone()).unwrap();
        batch.validate().unwrap();
        assert!(batch.is_control() && batch.is_transactional());
        assert_eq!(batch.producer_id(), 42);
        assert_eq!(batch.producer_epoch(), 3);
        assert_eq!(batch.base_sequence(), -1);
        assert_eq!(batch.records_count(), 1);
        // attributes (offset 21): transactional 0x10 | control 0x20, no compression
        assert_eq!(&bytes[21..23], &[0x00, 0x30]);
        let recs = batch.records().unwrap();
        assert_eq!(recs[0].key.as_deref(), Some(&[0u8, 0, 0, 1][..]));
        assert_eq!(recs[0].value.as_deref(), Some(&[0u8, 0, 1, 2, 3, 4][..]));
        assert_eq!(EndTransactionMarker::parse(&recs[0]).unwrap(), commit);
    }

    #[test]
    fn bad_marker_records_are_invalid() {
        let rec = |key: &[u8], value: &[u8]| Record {
            offset: 0,
            timestamp: 0,
            key: Some(Bytes::copy_from_slice(key)),
            value: Some(Bytes::copy_from_slice(value)),
            headers: Vec::new(),
        };
        let ok_value = [0u8, 0, 0, 0, 0, 1];
        for (k, v) in [
            (&[0u8, 0, 0][..], &ok_value[..]),
            (&[0xff, 0xff, 0, 0][..], &ok_value[..]),
            (&[0, 0, 0, 2][..], &ok_value[..]),
            (&[0, 0, 0, 0][..], &[0u8, 0, 0, 0, 1][..]),
            (&[0, 0, 0, 0][..], &[0x80u8, 0, 0, 0, 0, 1][..]),
        ] {
            assert!(matches!(
                EndTransactionMarker::parse(&rec(k, v)),
                Err(StorageError::InvalidRecord(_))
            ));
        }
        // a newer version is read as version 0
        let m = EndTransactionMarker::parse(&rec(&[0, 1, 0, 1], &[0, 1, 0, 0, 0, 9])).unwrap();
        assert_eq!(m, EndTransactionMarker::new(true, 9));
    }
}
