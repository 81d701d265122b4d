//! The HTTP API's way into the broker: each REST call becomes the Kafka request(s) it stands for, encoded and
//! handed to [`KafkaApis::handle`] in-process, exactly as a frame read from a Kafka connection is. So ACLs
//! (as `User:ANONYMOUS`), validation, quotas, request metrics and, in a cluster, the forwarding of admin
//! requests to the controller all apply as they do to a Kafka client.
//!
//! The connection the requests come from is named after the broker's advertised listener (so Metadata and
//! DescribeCluster answer the endpoints Kafka clients use) with the HTTP peer's address, the caller's
//! principal ([`Origin`]: `User:ANONYMOUS` unless HTTP Basic authentication named a user) and client id
//! `rest-proxy`.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use protocol::{Chunk, RequestBody, RequestHeader, ResponseBody};

use super::error::RestError;
use crate::server::apis::{advertised_range, KafkaApis, RequestOutcome};
use crate::server::context::{ConnectionContext, KafkaPrincipal};

/// Where an HTTP API call comes from: the HTTP peer (`None` for background work) and the principal —
/// `User:<name>` once HTTP Basic authentication checked the name ([`super::auth`]), else `User:ANONYMOUS`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The HTTP client's address (the ACL host).
    pub peer: Option<SocketAddr>,
    /// Who the requests are made as.
    pub principal: KafkaPrincipal,
}

impl Origin {
    /// An unauthenticated caller at `peer`.
    pub fn anonymous(peer: Option<SocketAddr>) -> Origin {
        Origin {
            peer,
            principal: KafkaPrincipal::ANONYMOUS,
        }
    }
}

/// The client id of every request the HTTP API sends.
pub const CLIENT_ID: &str = "rest-proxy";

/// Dispatches Kafka requests in-process (see the module doc).
#[derive(Debug)]
pub struct Bridge {
    apis: Arc<KafkaApis>,
    listener_name: Arc<str>,
    correlation_id: AtomicI32,
}

impl Bridge {
    /// A bridge into `apis`.
    pub fn new(apis: Arc<KafkaApis>) -> Bridge {
        let listener_name = apis.config().advertised_listener.name.as_str().into();
        Bridge {
            apis,
            listener_name,
            correlation_id: AtomicI32::new(0),
        }
    }

    /// The request handlers (for the cluster id and the node id).
    pub fn apis(&self) -> &Arc<KafkaApis> {
        &self.apis
    }

    /// Sends `body` in the highest version this broker serves, as `origin`, and returns the
    /// decoded response. Errors: a request the broker closes the connection for, or that cannot be encoded
    /// or decoded (HTTP 500; none of these happens for the requests this module builds).
    pub async fn call(
        &self,
        origin: &Origin,
        body: RequestBody,
    ) -> Result<ResponseBody, RestError> {
        self.call_at_most(origin, body, i16::MAX).await
    }

    /// [`call`](Self::call) in the highest version this broker serves that is at most `max_version` (for
    /// a request whose later versions name topics by id only, e.g. Fetch v13+).
    pub async fn call_at_most(
        &self,
        origin: &Origin,
        body: RequestBody,
        max_version: i16,
    ) -> Result<ResponseBody, RestError> {
        let api = body.api_key();
        let (low, high) = advertised_range(api)
            .ok_or_else(|| RestError::internal(format!("{} is not served", api.name())))?;
        let version = high.min(max_version);
        if version < low {
            return Err(RestError::internal(format!(
                "{} v{max_version} is not served",
                api.name()
            )));
        }
        let correlation_id = self.correlation_id.fetch_add(1, Ordering::Relaxed);
        let header = RequestHeader {
            request_api_key: api as i16,
            request_api_version: version,
            correlation_id,
            client_id: Some(CLIENT_ID.to_string()),
            unknown_tagged_fields: Vec::new(),
        };
        let frame = protocol::encode_request(&header, &body)
            .map_err(|e| RestError::internal(format!("encoding {}: {e}", api.name())))?;
        let mut connection = ConnectionContext::anonymous(self.listener_name.clone(), origin.peer);
        connection.principal = origin.principal.clone();
        let connection = Arc::new(connection);
        let chunks = match self.apis.handle(frame.slice(4..), &connection).await {
            RequestOutcome::Respond(chunks) => chunks,
            RequestOutcome::Throttled {
                response: Some(chunks),
                ..
            } => chunks,
            RequestOutcome::Throttled { response: None, .. } | RequestOutcome::NoResponse => {
                return Err(RestError::internal(format!(
                    "{} got no response",
                    api.name()
                )))
            }
            RequestOutcome::Close(reason) => {
                return Err(RestError::internal(format!("{}: {reason}", api.name())))
            }
        };
        let frame = gather(chunks)
            .map_err(|e| RestError::internal(format!("reading {} response: {e}", api.name())))?;
        let (_, response) = protocol::decode_response(api, version, frame.slice(4..))
            .map_err(|e| RestError::internal(format!("decoding {} response: {e}", api.name())))?;
        Ok(response)
    }
}

/// An encoded response's chunks as one buffer (a Fetch's file slices read from their segments).
fn gather(chunks: Vec<Chunk>) -> std::io::Result<Bytes> {
    use std::os::unix::fs::FileExt;
    let mut buf = BytesMut::with_capacity(chunks.iter().map(Chunk::len).sum());
    for chunk in chunks {
        match chunk {
            Chunk::Bytes(b) => buf.extend_from_slice(&b),
            Chunk::File(f) => {
                let start = buf.len();
                buf.resize(start + f.len as usize, 0);
                f.file.read_exact_at(&mut buf[start..], f.position)?;
            }
        }
    }
    if buf.len() < 4 {
        return Err(std::io::Error::other(
            "response shorter than its size prefix",
        ));
    }
    Ok(buf.freeze())
}
