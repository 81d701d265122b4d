//! InitProducerId (key 22), v0–5. Source: Kafka protocol guide; KIP-98 (idempotent producers), KIP-360
//! (epoch bump for an existing producer id, v3+).
//!
//! Idempotent producers only: a request with a transactional id gets COORDINATOR_NOT_AVAILABLE (15), since
//! there is no transaction coordinator yet.

use protocol::error::ErrorCode;
use protocol::messages::{InitProducerIdRequest, InitProducerIdResponse};

use super::KafkaApis;
use crate::metadata::MetadataError;
use crate::server::context::RequestContext;
use authorizer::{AclOperation, ResourceType};

/// Allocates a producer id with epoch 0, or bumps the epoch of the given id (a new id when it would overflow).
pub async fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: InitProducerIdRequest,
) -> InitProducerIdResponse {
    let mut response = InitProducerIdResponse {
        producer_id: -1,
        producer_epoch: -1,
        ..Default::default()
    };
    // Kafka: WRITE on the transactional id; an idempotent producer needs IDEMPOTENT_WRITE on the cluster or
    // WRITE on some topic (KIP-679).
    let allowed = match &request.transactional_id {
        Some(id) => ctx.authorize(AclOperation::Write, ResourceType::TransactionalId, id),
        None if ctx.is_allowed_any(AclOperation::Write, ResourceType::Topic) => Ok(()),
        None => ctx.authorize_cluster(AclOperation::IdempotentWrite),
    };
    if let Err(d) = allowed {
        response.error_code = ErrorCode::from(d).0;
        return response;
    }
    if request.transactional_id.is_some() {
        response.error_code = ErrorCode::COORDINATOR_NOT_AVAILABLE.0;
        return response;
    }
    if request.producer_id >= 0
        && request.producer_epoch >= 0
        && request.producer_epoch < i16::MAX - 1
    {
        response.producer_id = request.producer_id;
        response.producer_epoch = request.producer_epoch + 1;
        return response;
    }
    match apis.metadata.allocate_producer_id().await {
        Ok(id) => {
            response.producer_id = id.get();
            response.producer_epoch = 0;
        }
        // No block from the controller yet (e.g. this broker is not registered yet): the retriable
        // COORDINATOR_LOAD_IN_PROGRESS, as Kafka's ProducerIdManager answers (KIP-730).
        Err(e @ MetadataError::ProducerIdsUnavailable(_)) => {
            tracing::warn!(error = %e, "no producer id block from the controller yet");
            response.error_code = ErrorCode::COORDINATOR_LOAD_IN_PROGRESS.0;
        }
        Err(e) => {
            tracing::error!(error = %e, "cannot allocate producer id");
            response.error_code = ErrorCode::KAFKA_STORAGE_ERROR.0;
        }
    }
    response
}
