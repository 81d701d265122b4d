//! InitProducerId (key 22), v0–5. Source: Kafka protocol guide; KIP-98 (idempotent producers), KIP-360
//! (epoch bump for an existing producer id, v3+).
//!
//! A request with a transactional id goes to the transaction coordinator
//! ([`crate::txn_coordinator::TransactionCoordinatorService::init_producer_id`]; NOT_COORDINATOR when this
//! broker does not own the id); PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH below v4 (KIP-588).

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
    if let Some(id) = &request.transactional_id {
        let expected = (request.producer_id >= 0).then_some((
            types::ProducerId(request.producer_id),
            types::ProducerEpoch(request.producer_epoch),
        ));
        let r = apis
            .transactions
            .init_producer_id(id, request.transaction_timeout_ms, expected)
            .await;
        let api = coordinator::transaction::TxnApi::InitProducerId;
        let code = coordinator::transaction::producer_fenced_for_version(
            r.error_code,
            api,
            ctx.api_version(),
        );
        response.error_code = code.0;
        if code == ErrorCode::NONE {
            response.producer_id = r.producer_id.get();
            response.producer_epoch = r.producer_epoch.get();
        }
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
