//! The broker's own SASL login on its inter-broker connections (the replica fetchers'): a [`Connector`] that
//! opens the connection with the inner connector (TCP, or TLS for SASL_SSL), then runs SaslHandshake v1 and
//! SaslAuthenticate v2 with the mechanism of `sasl.mechanism.inter.broker.protocol` and the inter-broker
//! listener's JAAS `username`/`password` (Kafka's `SaslClientAuthenticator`, KIP-152 framing).

use std::io;
use std::sync::Arc;

use bytes::Bytes;
use futures::future::BoxFuture;
use protocol::messages::{SaslAuthenticateRequest, SaslHandshakeRequest};
use protocol::{RequestBody, RequestHeader, ResponseBody};
use replica::transport::{BoxedStream, Connector};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::scram::{ScramClient, ScramMechanism};
use super::SaslClientConfig;

/// Largest server response accepted during the login (bytes).
const MAX_RESPONSE: usize = 1 << 20;

/// A [`Connector`] that authenticates every connection it opens.
pub struct SaslConnector {
    inner: Arc<dyn Connector>,
    login: SaslClientConfig,
}

impl SaslConnector {
    /// Logs in as `login` on connections opened by `inner`.
    pub fn new(inner: Arc<dyn Connector>, login: SaslClientConfig) -> SaslConnector {
        SaslConnector { inner, login }
    }
}

impl Connector for SaslConnector {
    fn connect(&self, host: &str, port: u16) -> BoxFuture<'static, io::Result<BoxedStream>> {
        let connecting = self.inner.connect(host, port);
        let login = self.login.clone();
        Box::pin(async move {
            let mut stream = connecting.await?;
            login_on(&mut stream, &login).await?;
            Ok(stream)
        })
    }
}

fn denied(message: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, message.into())
}

/// Sends one request and reads its response.
async fn call<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    correlation_id: i32,
    version: i16,
    body: RequestBody,
) -> io::Result<ResponseBody> {
    let api = body.api_key();
    let header = RequestHeader {
        request_api_key: api as i16,
        request_api_version: version,
        correlation_id,
        client_id: Some("runnel-broker".into()),
        unknown_tagged_fields: Vec::new(),
    };
    let frame = protocol::encode_request(&header, &body).map_err(io::Error::other)?;
    stream.write_all(&frame).await?;
    stream.flush().await?; // over TLS the last records may still be buffered
    let size = stream.read_i32().await?;
    let size = usize::try_from(size)
        .ok()
        .filter(|s| *s <= MAX_RESPONSE)
        .ok_or_else(|| denied(format!("{} response of {size} bytes", api.name())))?;
    let mut bytes = vec![0u8; size];
    stream.read_exact(&mut bytes).await?;
    let (_, body) = protocol::decode_response(api, version, Bytes::from(bytes))
        .map_err(|e| denied(format!("{}: {e}", api.name())))?;
    Ok(body)
}

/// One SaslAuthenticate round: sends `token`, returns the server's bytes. Errors: the server's error message.
async fn authenticate<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    correlation_id: i32,
    token: Vec<u8>,
) -> io::Result<Vec<u8>> {
    let request = SaslAuthenticateRequest {
        auth_bytes: Bytes::from(token),
        ..Default::default()
    };
    match call(stream, correlation_id, 2, request.into()).await? {
        ResponseBody::SaslAuthenticate(r) if r.error_code == 0 => Ok(r.auth_bytes.to_vec()),
        ResponseBody::SaslAuthenticate(r) => Err(denied(format!(
            "SASL authentication failed ({}): {}",
            r.error_code,
            r.error_message.unwrap_or_default()
        ))),
        _ => Err(denied("unexpected response to SaslAuthenticate")),
    }
}

/// Runs the login on `stream`. Errors: the mechanism refused, wrong credentials, a server that does not
/// prove it knows the SCRAM credential, I/O.
pub async fn login_on<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    login: &SaslClientConfig,
) -> io::Result<()> {
    let handshake = SaslHandshakeRequest {
        mechanism: login.mechanism.clone(),
    };
    match call(stream, 1, 1, handshake.into()).await? {
        ResponseBody::SaslHandshake(r) if r.error_code == 0 => {}
        ResponseBody::SaslHandshake(r) => {
            return Err(denied(format!(
                "SASL mechanism {} refused ({}); enabled: {:?}",
                login.mechanism, r.error_code, r.mechanisms
            )))
        }
        _ => return Err(denied("unexpected response to SaslHandshake")),
    }
    if login.mechanism == "PLAIN" {
        let token = format!("\0{}\0{}", login.username, login.password).into_bytes();
        authenticate(stream, 2, token).await?;
        return Ok(());
    }
    let mechanism = ScramMechanism::from_name(&login.mechanism)
        .ok_or_else(|| denied(format!("unsupported mechanism {}", login.mechanism)))?;
    let mut client = ScramClient::new(mechanism, &login.username, &login.password);
    let server_first = authenticate(stream, 2, client.first()).await?;
    let client_final = client
        .answer(&server_first)
        .map_err(|e| denied(e.to_string()))?;
    let server_final = authenticate(stream, 3, client_final).await?;
    client
        .verify(&server_final)
        .map_err(|e| denied(e.to_string()))
}
