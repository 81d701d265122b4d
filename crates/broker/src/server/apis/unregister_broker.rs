//! UnregisterBroker (key 64), v0. Source: Kafka protocol guide; KIP-500 (the API), KIP-631 (the
//! `UnregisterBrokerRecord`).

use protocol::error::ErrorCode;
use protocol::messages::{UnregisterBrokerRequest, UnregisterBrokerResponse};
use types::BrokerId;

use super::errors::ApiError;
use super::KafkaApis;
use crate::server::context::RequestContext;
use authorizer::AclOperation;

/// Removes a broker's registration from the cluster metadata (ALTER on the cluster). An id this broker's
/// image does not hold is answered BROKER_ID_NOT_REGISTERED with Kafka's message; otherwise the controller
/// decides (in a cluster: fences-like moves of the broker's leaderships and ISR memberships, then the
/// `UnregisterBrokerRecord`; a live broker registers again with its next heartbeat, as in Kafka) and the
/// answer waits until this broker's image shows it. Standalone, the only registered broker is this one:
/// answered NONE, as Kafka's single node does (it registers again at once).
pub async fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: UnregisterBrokerRequest,
) -> UnregisterBrokerResponse {
    let result = match ctx.authorize_cluster(AclOperation::Alter) {
        Err(d) => Err(ApiError::from(d)),
        Ok(()) => unregister(apis, BrokerId(request.broker_id)).await,
    };
    match result {
        Ok(()) => UnregisterBrokerResponse {
            error_code: ErrorCode::NONE.0,
            error_message: Some(String::new()),
            ..Default::default()
        },
        Err(e) => UnregisterBrokerResponse {
            error_code: e.code.0,
            error_message: Some(e.message),
            ..Default::default()
        },
    }
}

async fn unregister(apis: &KafkaApis, id: BrokerId) -> Result<(), ApiError> {
    if !apis.metadata_cache().image().brokers.contains_key(&id) {
        return Err(ApiError::new(
            ErrorCode::BROKER_ID_NOT_REGISTERED,
            format!("Broker ID {id} is not currently registered"),
        ));
    }
    apis.topics().unregister_broker(id).await?;
    Ok(())
}
