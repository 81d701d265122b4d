//! Request metrics: Kafka's `kafka.network:type=RequestMetrics` per API (`request` label = Kafka's API name,
//! e.g. `Produce`, `FetchConsumer`/`FetchFollower` for Fetch as Kafka splits it).
//!
//! | name | kind | Kafka MBean |
//! |---|---|---|
//! | `kafka_network_requestmetrics_requests_total{request,version}` | counter | `RequestsPerSec` |
//! | `kafka_network_requestmetrics_errors_total{request,error}` | counter | `ErrorsPerSec` (every error code in the response, NONE included; counted at the server edge, `server::apis`) |
//! | `kafka_network_requestmetrics_totaltimems{request}` | summary, ms | `TotalTimeMs` |
//! | `kafka_network_requestmetrics_requestqueuetimems{request}` | summary, ms | `RequestQueueTimeMs` |
//! | `kafka_network_requestmetrics_localtimems{request}` | summary, ms | `LocalTimeMs` |
//! | `kafka_network_requestmetrics_remotetimems{request}` | summary, ms | `RemoteTimeMs` |
//! | `kafka_network_requestmetrics_throttletimems{request}` | summary, ms | `ThrottleTimeMs` |
//! | `kafka_network_requestmetrics_responsesendtimems{request}` | summary, ms | `ResponseSendTimeMs` |
//! | `kafka_network_requestmetrics_requestbytes{request}` | summary, bytes | `RequestBytes` |
//!
//! How Runnel's phases map onto Kafka's: a connection's requests are served one at a time on its own task,
//! with no request channel, so the queue time is the time from the frame's last byte to the handler's
//! first poll (scheduling only); local time is the time the handler's future spent being polled; remote
//! time is the rest of the handler's wall time (a purgatory — an acks=all wait, a Fetch's long poll — or
//! the controller); send time is writing the response (`sendfile` included). Kafka's ResponseQueueTimeMs
//! has no counterpart (always 0) and is not exported.

use std::time::Duration;

use metrics::{counter, describe_counter, describe_histogram, histogram, Unit};
use protocol::ApiKey;

/// What one request's handling measured, recorded with [`RequestTiming::record`] once its response was
/// written.
#[derive(Debug, Clone)]
pub struct RequestTiming {
    /// Kafka's request name (`Fetch` split into `FetchConsumer` and `FetchFollower`).
    pub request: &'static str,
    /// The request's version.
    pub version: i16,
    /// The request frame's size, bytes.
    pub request_bytes: usize,
    /// From the frame's last byte to the handler's first poll.
    pub queue: Duration,
    /// The handler's poll time.
    pub local: Duration,
    /// The handler's wall time minus its poll time.
    pub remote: Duration,
    /// The quota throttle applied after the response (mute time).
    pub throttle: Duration,
}

impl RequestTiming {
    /// Records the request with its response's write time `send`.
    pub fn record(&self, send: Duration) {
        let request = self.request;
        counter!("kafka_network_requestmetrics_requests_total", "request" => request, "version" => version_label(self.version))
            .increment(1);
        let total = self.queue + self.local + self.remote + send;
        histogram!("kafka_network_requestmetrics_totaltimems", "request" => request)
            .record(ms(total));
        histogram!("kafka_network_requestmetrics_requestqueuetimems", "request" => request)
            .record(ms(self.queue));
        histogram!("kafka_network_requestmetrics_localtimems", "request" => request)
            .record(ms(self.local));
        histogram!("kafka_network_requestmetrics_remotetimems", "request" => request)
            .record(ms(self.remote));
        histogram!("kafka_network_requestmetrics_throttletimems", "request" => request)
            .record(ms(self.throttle));
        histogram!("kafka_network_requestmetrics_responsesendtimems", "request" => request)
            .record(ms(send));
        histogram!("kafka_network_requestmetrics_requestbytes", "request" => request)
            .record(self.request_bytes as f64);
    }
}

/// Kafka's `request` label: the API's name, with Fetch split by who sent it.
pub fn request_name(api: ApiKey, follower_fetch: bool) -> &'static str {
    match (api, follower_fetch) {
        (ApiKey::Fetch, true) => "FetchFollower",
        (ApiKey::Fetch, false) => "FetchConsumer",
        (api, _) => api.name(),
    }
}

/// Milliseconds, fractional.
fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The `version` label: static strings for the versions Kafka has (0-20), so no allocation per request.
fn version_label(version: i16) -> &'static str {
    const LABELS: [&str; 21] = [
        "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16",
        "17", "18", "19", "20",
    ];
    usize::try_from(version)
        .ok()
        .and_then(|v| LABELS.get(v))
        .copied()
        .unwrap_or("other")
}

/// Registers the descriptions (HELP lines) of the request metrics.
pub(super) fn describe() {
    describe_counter!(
        "kafka_network_requestmetrics_requests_total",
        "Requests served, by API and version (Kafka RequestsPerSec)."
    );
    describe_counter!(
        "kafka_network_requestmetrics_errors_total",
        "Error codes in responses, by API and code, NONE included (Kafka ErrorsPerSec)."
    );
    for (name, what) in [
        ("totaltimems", "Request total time"),
        (
            "requestqueuetimems",
            "Time from the request's last byte to its handler",
        ),
        ("localtimems", "Time the handler spent working"),
        (
            "remotetimems",
            "Time the handler waited (purgatory, controller)",
        ),
        ("throttletimems", "Quota throttle after the response"),
        ("responsesendtimems", "Time writing the response"),
    ] {
        describe_histogram!(
            format!("kafka_network_requestmetrics_{name}"),
            Unit::Milliseconds,
            format!("{what}, ms (Kafka {name}).")
        );
    }
    describe_histogram!(
        "kafka_network_requestmetrics_requestbytes",
        Unit::Bytes,
        "Request sizes, bytes (Kafka RequestBytes)."
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
    use protocol::messages::ProduceResponse;
    use protocol::ResponseBody;
    use types::ErrorCode;

    #[test]
    fn version_labels_cover_kafkas_versions() {
        assert_eq!(version_label(0), "0");
        assert_eq!(version_label(13), "13");
        assert_eq!(version_label(20), "20");
        assert_eq!(version_label(21), "other");
        assert_eq!(version_label(-1), "other");
    }

    #[test]
    fn fetch_is_split_by_sender() {
        assert_eq!(request_name(ApiKey::Fetch, true), "FetchFollower");
        assert_eq!(request_name(ApiKey::Fetch, false), "FetchConsumer");
        assert_eq!(request_name(ApiKey::Produce, false), "Produce");
    }

    #[test]
    fn nested_error_codes_are_visited() {
        let partition = |code: ErrorCode| PartitionProduceResponse {
            error_code: code.0,
            ..Default::default()
        };
        let response = ResponseBody::Produce(ProduceResponse {
            responses: vec![TopicProduceResponse {
                partition_responses: vec![
                    partition(ErrorCode::NONE),
                    partition(ErrorCode::NOT_LEADER_OR_FOLLOWER),
                    partition(ErrorCode::NONE),
                ],
                ..Default::default()
            }],
            ..Default::default()
        });
        let mut seen = Vec::new();
        response.visit_error_codes(&mut |c| seen.push(c));
        assert_eq!(seen, vec![0, ErrorCode::NOT_LEADER_OR_FOLLOWER.0, 0]);
    }
}
