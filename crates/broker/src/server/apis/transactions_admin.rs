//! DescribeTransactions (key 65, v0; KIP-664) and ListTransactions (key 66, v0–2; KIP-664, KIP-994 duration
//! filter, KIP-1152 transactional id pattern): what `kafka-transactions.sh list|describe` reads.
//!
//! Both answer from the transactional ids this broker coordinates (clients ask every broker for List, and
//! the coordinator for Describe). DESCRIBE on a TransactionalId is required to see it: Describe answers
//! TRANSACTIONAL_ID_AUTHORIZATION_FAILED for it, List leaves it out; Describe also leaves out the topics the
//! caller may not DESCRIBE (as Kafka). A List pattern that does not compile, or is longer than 1 KiB or
//! compiles larger than 1 MiB, answers INVALID_REGULAR_EXPRESSION (Kafka sets no bound: this one bounds a
//! request's matching cost), and the matching runs on the blocking pool.

use protocol::error::ErrorCode;
use protocol::messages::describe_transactions_response::{TopicData, TransactionState};
use protocol::messages::list_transactions_response::TransactionState as ListedState;
use protocol::messages::{
    DescribeTransactionsRequest, DescribeTransactionsResponse, ListTransactionsRequest,
    ListTransactionsResponse,
};

use super::KafkaApis;
use crate::server::context::RequestContext;
use authorizer::{AclOperation, ResourceType};
use coordinator::transaction::ListTransactionsFilter;
use types::ProducerId;

/// DescribeTransactions.
pub fn describe(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: DescribeTransactionsRequest,
) -> DescribeTransactionsResponse {
    let (allowed, denied): (Vec<String>, Vec<String>) = request
        .transactional_ids
        .into_iter()
        .partition(|id| ctx.is_allowed(AclOperation::Describe, ResourceType::TransactionalId, id));
    let mut states: Vec<TransactionState> = apis
        .transactions
        .describe_transactions(&allowed)
        .into_iter()
        .map(|d| TransactionState {
            error_code: d.error_code.0,
            transactional_id: d.transactional_id,
            transaction_state: d.transaction_state,
            transaction_timeout_ms: d.transaction_timeout_ms,
            transaction_start_time_ms: d.transaction_start_time_ms,
            producer_id: d.producer_id.get(),
            producer_epoch: d.producer_epoch.get(),
            topics: d
                .topics
                .into_iter()
                .filter(|(t, _)| ctx.is_allowed(AclOperation::Describe, ResourceType::Topic, t))
                .map(|(topic, partitions)| TopicData {
                    topic,
                    partitions,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    states.extend(denied.into_iter().map(|id| TransactionState {
        error_code: ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED.0,
        transactional_id: id,
        transaction_start_time_ms: -1,
        producer_id: -1,
        producer_epoch: -1,
        ..Default::default()
    }));
    DescribeTransactionsResponse {
        transaction_states: states,
        ..Default::default()
    }
}

/// Longest ListTransactions v2 pattern accepted (bytes); longer ones answer INVALID_REGULAR_EXPRESSION. Kafka
/// sets no bound; this one keeps a request's matching cost (pattern × id length × ids) bounded.
const MAX_PATTERN_BYTES: usize = 1024;

/// Compiled-size bound of a ListTransactions pattern (bytes).
const MAX_REGEX_BYTES: usize = 1 << 20;

/// ListTransactions. The pattern is matched on the blocking pool, off the request workers.
pub async fn list(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: ListTransactionsRequest,
) -> ListTransactionsResponse {
    let compiled = match request.transactional_id_pattern.as_deref() {
        None | Some("") => Ok(None),
        Some(p) if p.len() > MAX_PATTERN_BYTES => Err(()),
        Some(p) => regex::RegexBuilder::new(&format!("^(?:{p})$"))
            .size_limit(MAX_REGEX_BYTES)
            .dfa_size_limit(MAX_REGEX_BYTES)
            .build()
            .map(Some)
            .map_err(|_| ()),
    };
    let Ok(pattern) = compiled else {
        return ListTransactionsResponse {
            error_code: ErrorCode::INVALID_REGULAR_EXPRESSION.0,
            ..Default::default()
        };
    };
    let filter = ListTransactionsFilter {
        state_filters: request.state_filters,
        producer_id_filters: request
            .producer_id_filters
            .into_iter()
            .map(ProducerId)
            .collect(),
        duration_filter_ms: request.duration_filter,
    };
    let r = apis.transactions.list_transactions(&filter);
    let listed = r.transaction_states;
    let matched = match pattern {
        None => listed,
        Some(p) => tokio::task::spawn_blocking(move || {
            listed
                .into_iter()
                .filter(|t| p.is_match(&t.transactional_id))
                .collect()
        })
        .await
        .unwrap_or_default(),
    };
    ListTransactionsResponse {
        error_code: r.error_code.0,
        unknown_state_filters: r.unknown_state_filters,
        transaction_states: matched
            .into_iter()
            .filter(|t| {
                ctx.is_allowed(
                    AclOperation::Describe,
                    ResourceType::TransactionalId,
                    &t.transactional_id,
                )
            })
            .map(|t| ListedState {
                transactional_id: t.transactional_id,
                producer_id: t.producer_id.get(),
                transaction_state: t.transaction_state,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}
