//! The request quota (KIP-124, Kafka's `ClientRequestQuotaManager` as `KafkaApis` applies it) and how every
//! quota's throttle reaches a response (KIP-219).
//!
//! A request's handler time is the time its future spent being polled — decoding, the handler's own work,
//! encoding — not the time it waited (a Fetch's long poll, an acks=all Produce, the controller), as Kafka
//! counts request-thread time and not purgatory time. It is read from tokio's monotonic clock, which a paused
//! test runtime stands still. Exempt, as in Kafka: a follower's Fetch (a cluster action) and the ApiVersions a
//! SASL connection sends before it authenticated (served by Kafka's authenticator, outside `KafkaApis`).

use std::future::Future;
use std::time::Duration;

use protocol::{RequestBody, ResponseBody};

use crate::config::SecurityProtocol;
use crate::quota::ClientQuotas;
use crate::server::context::{KafkaPrincipal, RequestContext};
use authorizer::AclOperation;

/// Whether `body` is exempt from the request quota (Kafka's `sendResponseExemptThrottle` callers).
pub(super) fn is_exempt(ctx: &RequestContext, body: &RequestBody) -> bool {
    match body {
        RequestBody::Fetch(f) => super::fetch::replica_id(ctx.api_version(), f) >= 0,
        // A cluster action (Kafka's `ApiKeys.clusterAction`) by an authorized peer.
        RequestBody::WriteTxnMarkers(_) => {
            (ctx.authorize_cluster(AclOperation::ClusterAction)).is_ok()
        }
        RequestBody::ApiVersions(_) => {
            let conn = &ctx.connection;
            matches!(
                conn.security_protocol,
                SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl
            ) && conn.principal == KafkaPrincipal::ANONYMOUS
        }
        _ => false,
    }
}

/// Runs `fut` to completion, adding the time spent inside its `poll` to `busy` (the request quota's
/// handler time and the request metrics' local time).
pub(super) async fn timed<F: Future>(busy: &mut Duration, fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    std::future::poll_fn(|cx| {
        let start = tokio::time::Instant::now();
        let polled = fut.as_mut().poll(cx);
        *busy += start.elapsed();
        polled
    })
    .await
}

/// Nanoseconds of `d`, saturated.
pub(super) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Puts the larger of the quotas' throttle times in `response` (Kafka's `maybeSetThrottleTimeMs` with
/// `max(request, bandwidth or mutation)`): the handler's own (a Fetch's byte rate, an admin request's
/// mutation quota), the Produce byte rate's `produce_ms` and the request quota's `request_ms`. A consumer's
/// Fetch throttled by its request time is answered without partitions, its bytes taken back out of its
/// byte rate (Kafka's `handleFetchRequest`). Returns how long to mute the connection (ms).
pub(super) fn apply(
    quotas: &ClientQuotas,
    ctx: &RequestContext,
    response: &mut ResponseBody,
    produce_ms: u64,
    request_ms: u64,
) -> u64 {
    if let ResponseBody::Fetch(f) = response {
        if request_ms > 0 && f.throttle_time_ms <= 0 {
            let bytes = super::fetch::record_bytes(f);
            let user = &ctx.connection.principal.name;
            quotas.unrecord_fetch(user, ctx.client_id().unwrap_or(""), bytes);
            f.responses.clear();
        }
    }
    let most = produce_ms.max(request_ms).min(i32::MAX as u64);
    match response.throttle_time_ms_mut() {
        Some(field) => {
            let ms = u64::try_from(*field).unwrap_or(0).max(most);
            *field = ms as i32;
            ms
        }
        // A response without the field (SaslHandshake, SaslAuthenticate): the connection is muted all the same.
        None => most,
    }
}
