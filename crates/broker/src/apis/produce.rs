//! Produce (key 0), v3–12. Source: Kafka protocol guide; KIP-98 (idempotence), KIP-467 (record errors, v8+),
//! KIP-110 (zstd needs v7+).
//!
//! Each partition's batches are validated and appended by the storage layer; on this single node the ISR is
//! this broker alone, so acks=1 and acks=-1 are answered after the append, and acks=-1 with
//! `min.insync.replicas` > 1 gets NOT_ENOUGH_REPLICAS (19). acks=0 gets no response at all (pitfall 2); if a
//! partition fails under acks=0 the connection is closed so the client notices, as Kafka does.

use protocol::error::ErrorCode;
use protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, PartitionProduceResponse, TopicProduceResponse,
};
use protocol::messages::{ProduceRequest, ProduceResponse};
use protocol::record::{Compression, Records};
use protocol::RequestHeader;
use storage::StorageError;

use super::{storage_error_code, KafkaApis};

/// What the connection does after a Produce.
#[derive(Debug)]
pub enum Outcome {
    /// Send the response.
    Respond(ProduceResponse),
    /// acks=0 and everything was appended.
    NoResponse,
    /// acks=0 and something failed.
    Close(String),
}

/// Appends every partition's records and reports each partition's outcome.
pub fn handle(apis: &KafkaApis, header: &RequestHeader, request: ProduceRequest) -> Outcome {
    let version = header.request_api_version;
    let acks = request.acks;
    let mut responses = Vec::with_capacity(request.topic_data.len());
    let mut first_error: Option<String> = None;
    for topic in request.topic_data {
        let mut partitions = Vec::with_capacity(topic.partition_data.len());
        let topic_meta = apis.metadata.topic(&topic.name);
        for p in topic.partition_data {
            let mut resp = PartitionProduceResponse {
                index: p.index,
                ..Default::default()
            };
            let mut record_errors = Vec::new();
            let result = (|| -> Result<(), (ErrorCode, Option<String>)> {
                if !matches!(acks, -1..=1) {
                    return Err((ErrorCode::INVALID_REQUIRED_ACKS, None));
                }
                if request.transactional_id.is_some() {
                    return Err((
                        ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                        Some("transactions are not supported yet".into()),
                    ));
                }
                let meta = topic_meta
                    .as_ref()
                    .ok_or((ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, None))?;
                let partition = apis
                    .replica_manager
                    .partition(&topic.name, p.index)
                    .ok_or((ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, None))?;
                let records = match p.records {
                    Some(Records::Memory(b)) => b,
                    _ => {
                        return Err((
                            ErrorCode::CORRUPT_MESSAGE,
                            Some("produce request without records".into()),
                        ))
                    }
                };
                if version < 7 && batches_use_codec(&records, Compression::Zstd) {
                    return Err((ErrorCode::UNSUPPORTED_COMPRESSION_TYPE, None));
                }
                if acks == -1 {
                    let min_isr: i32 = apis
                        .topics
                        .topic_config_value(&meta.configs, "min.insync.replicas")
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(1);
                    if min_isr > 1 {
                        return Err((
                            ErrorCode::NOT_ENOUGH_REPLICAS,
                            Some(format!(
                                "The size of the current ISR 1 is insufficient to satisfy the min.isr requirement of {min_isr}"
                            )),
                        ));
                    }
                }
                let info = apis
                    .replica_manager
                    .append(&partition, records)
                    .map_err(|e| {
                        if let StorageError::InvalidRecords {
                            message,
                            batch_indexes,
                        } = &e
                        {
                            record_errors = batch_indexes
                                .iter()
                                .map(|i| BatchIndexAndErrorMessage {
                                    batch_index: *i,
                                    batch_index_error_message: Some(message.clone()),
                                    ..Default::default()
                                })
                                .collect();
                        }
                        (storage_error_code(&e), Some(e.to_string()))
                    })?;
                resp.base_offset = info.first_offset;
                resp.log_append_time_ms = info.log_append_time_ms;
                resp.log_start_offset = info.log_start_offset;
                Ok(())
            })();
            if let Err((code, message)) = result {
                resp.error_code = code.0;
                resp.base_offset = -1;
                resp.log_append_time_ms = -1;
                resp.log_start_offset = -1;
                if first_error.is_none() {
                    first_error = Some(format!(
                        "{}-{}: {}",
                        topic.name,
                        p.index,
                        message.clone().unwrap_or_else(|| code.name().to_string())
                    ));
                }
                resp.error_message = message;
                resp.record_errors = record_errors;
            }
            partitions.push(resp);
        }
        responses.push(TopicProduceResponse {
            name: topic.name,
            partition_responses: partitions,
            ..Default::default()
        });
    }
    if acks == 0 {
        return match first_error {
            Some(e) => Outcome::Close(format!("acks=0 produce failed: {e}")),
            None => Outcome::NoResponse,
        };
    }
    Outcome::Respond(ProduceResponse {
        responses,
        ..Default::default()
    })
}

/// True when any whole v2 batch in `records` is compressed with `codec` (reads only batch headers, through
/// `protocol::record::batches`; stops at the first batch it cannot frame).
pub fn batches_use_codec(records: &bytes::Bytes, codec: Compression) -> bool {
    protocol::record::batches(records)
        .map_while(Result::ok)
        .any(|b| b.header().compression().ok() == Some(codec))
}
