//! DescribeClientQuotas (key 48) and AlterClientQuotas (key 49), v0–1 (KIP-546). Kafka's
//! `ClientQuotasImage.describe` and `ClientQuotaControlManager`: DescribeClientQuotas needs
//! DESCRIBE_CONFIGS on the cluster, AlterClientQuotas ALTER_CONFIGS (else CLUSTER_AUTHORIZATION_FAILED); a
//! bad filter answers INVALID_REQUEST (an unknown entity type UNSUPPORTED_VERSION); an invalid entry answers
//! INVALID_REQUEST for that entry, and the valid entries are applied together.

use authorizer::AclOperation;
use metadata::quota::{ClientQuotaEntity, QuotaAlteration, QuotaMatch};
use protocol::error::ErrorCode;
use protocol::messages::alter_client_quotas_response::{
    EntityData as AlterEntity, EntryData as AlterEntry,
};
use protocol::messages::describe_client_quotas_response::{EntityData, EntryData, ValueData};
use protocol::messages::{
    AlterClientQuotasRequest, AlterClientQuotasResponse, DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
};

use super::errors::ApiError;
use super::KafkaApis;
use crate::error::QuotaError;
use crate::server::context::RequestContext;

/// DescribeClientQuotas: the entities matching the filter, with their quota values.
pub fn describe(
    apis: &KafkaApis,
    ctx: &RequestContext,
    r: DescribeClientQuotasRequest,
) -> DescribeClientQuotasResponse {
    let fail = |e: ApiError| {
        let (error_code, error_message) = e.into_parts();
        DescribeClientQuotasResponse {
            error_code,
            error_message,
            entries: None,
            ..Default::default()
        }
    };
    if let Err(d) = ctx.authorize_cluster(AclOperation::DescribeConfigs) {
        return fail(ApiError::from(d));
    }
    let mut filter = Vec::with_capacity(r.components.len());
    for c in r.components {
        let m = match (c.match_type, c.r#match) {
            (0, Some(name)) => QuotaMatch::Exact(name),
            (0, None) => {
                return fail(invalid(
                    "Request specified MATCH_TYPE_EXACT, but set match string to null.",
                ))
            }
            (1, None) => QuotaMatch::Default,
            (2, None) => QuotaMatch::Specified,
            (1 | 2, Some(_)) => {
                return fail(invalid(&format!(
                    "Request specified {}, but also specified a match string.",
                    if c.match_type == 1 {
                        "MATCH_TYPE_DEFAULT"
                    } else {
                        "MATCH_TYPE_SPECIFIED"
                    }
                )))
            }
            (other, _) => return fail(invalid(&format!("Unknown match type {other}"))),
        };
        filter.push((c.entity_type, m));
    }
    let image = apis.quotas().clients.image();
    let matches = match image.describe(&filter, r.strict) {
        Ok(m) => m,
        Err((unsupported, message)) => {
            return fail(if unsupported {
                ApiError::new(ErrorCode::UNSUPPORTED_VERSION, message)
            } else {
                invalid(&message)
            })
        }
    };
    let entries = matches
        .into_iter()
        .map(|(entity, values)| EntryData {
            entity: entity
                .components()
                .into_iter()
                .map(|(entity_type, entity_name)| EntityData {
                    entity_type: entity_type.to_string(),
                    entity_name,
                    ..Default::default()
                })
                .collect(),
            values: values
                .iter()
                .map(|(key, v)| ValueData {
                    key: key.clone(),
                    value: v.0,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    DescribeClientQuotasResponse {
        error_code: 0,
        error_message: None,
        entries: Some(entries),
        ..Default::default()
    }
}

fn invalid(message: &str) -> ApiError {
    ApiError::from(QuotaError::Invalid(message.to_string()))
}

/// AlterClientQuotas: one result per entry, in order.
pub async fn alter(
    apis: &KafkaApis,
    ctx: &RequestContext,
    r: AlterClientQuotasRequest,
) -> AlterClientQuotasResponse {
    let denied = ctx.authorize_cluster(AclOperation::AlterConfigs).err();
    let mut wire_entities = Vec::with_capacity(r.entries.len());
    let mut checked: Vec<Result<QuotaAlteration, ApiError>> = Vec::with_capacity(r.entries.len());
    for entry in r.entries {
        let entity: Vec<AlterEntity> = entry
            .entity
            .iter()
            .map(|e| AlterEntity {
                entity_type: e.entity_type.clone(),
                entity_name: e.entity_name.clone(),
                ..Default::default()
            })
            .collect();
        wire_entities.push(entity);
        let result = match denied {
            Some(d) => Err(ApiError::from(d)),
            None => parse_entry(entry).map_err(|m| ApiError::from(QuotaError::Invalid(m))),
        };
        checked.push(result);
    }
    let valid: Vec<QuotaAlteration> = checked.iter().filter_map(|c| c.clone().ok()).collect();
    let outcome = if valid.is_empty() {
        Ok(())
    } else {
        apis.quotas()
            .admin
            .alter(valid, r.validate_only)
            .await
            .map_err(ApiError::from)
    };
    let entries = checked
        .into_iter()
        .zip(wire_entities)
        .map(|(c, entity)| {
            let (error_code, error_message) = match c.and_then(|_| outcome.clone()) {
                Ok(()) => (0, None),
                Err(e) => e.into_parts(),
            };
            AlterEntry {
                error_code,
                error_message,
                entity,
                ..Default::default()
            }
        })
        .collect();
    AlterClientQuotasResponse {
        entries,
        ..Default::default()
    }
}

/// One entry's entity and operations, validated (Kafka's messages on error).
fn parse_entry(
    entry: protocol::messages::alter_client_quotas_request::EntryData,
) -> Result<QuotaAlteration, String> {
    let entity = ClientQuotaEntity::from_components(
        entry
            .entity
            .iter()
            .map(|e| (e.entity_type.as_str(), e.entity_name.as_deref())),
    )?;
    let ops = entry
        .ops
        .into_iter()
        .map(|op| (op.key, (!op.remove).then_some(op.value)))
        .collect();
    QuotaAlteration::new(entity, ops)
}
