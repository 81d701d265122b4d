//! SASL authentication of one connection on a SASL_PLAINTEXT or SASL_SSL listener (Kafka's
//! `SaslServerAuthenticator`; KIP-43 SaslHandshake, KIP-152 SaslAuthenticate): [`SaslAuthenticator`] is the
//! sans-I/O exchange — one frame in, one [`Action`] out — and [`authenticate`] drives it over the stream
//! before `network` serves any other request.
//!
//! The exchange, as Kafka 4.4 runs it:
//! - Until SaslHandshake only ApiVersions (once) and SaslHandshake are served; any other request closes the
//!   connection unanswered ("Unexpected Kafka request of type ... during SASL handshake").
//! - SaslHandshake names a mechanism: enabled → NONE and the enabled list; else UNSUPPORTED_SASL_MECHANISM
//!   with the enabled list, then close.
//! - After a v1 handshake the tokens come in SaslAuthenticate requests (v0-v2); each is answered with the
//!   mechanism's challenge and, once complete, `session_lifetime_ms` (KIP-368, Kafka's formula: the
//!   credential's remaining life — an OAUTHBEARER token's `exp` — and `connections.max.reauth.ms` when
//!   positive, the smaller of the two; 0 when neither applies). A failure answers SASL_AUTHENTICATION_FAILED with Kafka's message and closes. Another
//!   SaslHandshake in this state answers ILLEGAL_SASL_STATE and closes; any other request closes unanswered
//!   (Kafka answers it with ILLEGAL_SASL_STATE in that request's error response).
//! - After a v0 handshake (clients before KIP-152) the tokens are raw size-prefixed frames without a Kafka
//!   header, answered the same way; a failure closes without an answer.
//!
//! Re-authentication (KIP-368): on an authenticated connection a SaslHandshake starts a new exchange
//! ([`reauthenticate`]) without ApiVersions; the mechanism must be the session's (else the handshake is
//! answered and the connection closed) and so must the principal ("Cannot change principals during
//! re-authentication", SASL_AUTHENTICATION_FAILED, then close). It ends with a new session lifetime.
//!
//! Every frame before authentication completes is bounded by `sasl.server.max.receive.size` (512 KiB by
//! default) and by `connections.max.idle.ms`, as Kafka bounds them.

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use protocol::messages::{
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeResponse,
};
use protocol::{ApiKey, Chunk, ErrorCode, RequestBody, RequestHeader, ResponseBody};

use crate::security::sasl::{SaslError, SaslListener, SaslServer, SaslStep};
use crate::server::apis::errors::sasl_error_code;
use crate::server::apis::{KafkaApis, RequestOutcome};
use crate::server::context::ConnectionContext;
use crate::server::network::{read_frame_within, write_chunks, ConnectionError, ServerStream};

/// What the connection does with one frame during authentication.
#[derive(Debug)]
pub enum Action {
    /// Serve this ApiVersions request as any other connection would.
    ApiVersions(Bytes),
    /// Send this response; more frames follow.
    Respond(Vec<Chunk>),
    /// Send this last response; the connection is authenticated as `User:<session.user>`.
    Complete {
        /// The final response.
        response: Vec<Chunk>,
        /// The session it starts.
        session: SaslSession,
    },
    /// Send `response` (if any), then close; `reason` is logged.
    Fail {
        /// The error response, when the protocol has one.
        response: Option<Vec<Chunk>>,
        /// Why.
        reason: String,
    },
}

/// An authenticated SASL session (KIP-368).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaslSession {
    /// The mechanism used.
    pub mechanism: String,
    /// The authenticated user name (the principal is `User:<user>`).
    pub user: String,
    /// How long the session lasts, in milliseconds from completion; 0: it does not expire.
    pub lifetime_ms: i64,
}

enum State {
    /// Before anything: ApiVersions or SaslHandshake.
    HandshakeOrVersions,
    /// After ApiVersions: SaslHandshake only.
    Handshake,
    /// After the handshake: the mechanism's tokens.
    Authenticate {
        server: SaslServer,
        mechanism: String,
        raw_tokens: bool,
    },
    /// Completed or failed.
    Done,
}

/// One connection's SASL exchange (sans I/O).
pub struct SaslAuthenticator<'a> {
    listener: &'a SaslListener,
    state: State,
    now_ms: i64,
    previous: Option<SaslSession>,
}

fn fail(response: Option<Vec<Chunk>>, reason: impl Into<String>) -> Action {
    Action::Fail {
        response,
        reason: reason.into(),
    }
}

fn encode(
    correlation_id: i32,
    api: ApiKey,
    version: i16,
    body: ResponseBody,
) -> Option<Vec<Chunk>> {
    protocol::encode_response(correlation_id, api, version, &body).ok()
}

/// A raw (v0) token: its size and bytes.
fn raw(token: &[u8]) -> Vec<Chunk> {
    let mut out = Vec::with_capacity(4 + token.len());
    out.extend_from_slice(&(token.len() as i32).to_be_bytes());
    out.extend_from_slice(token);
    vec![Chunk::Bytes(Bytes::from(out))]
}

impl<'a> SaslAuthenticator<'a> {
    /// A new exchange on `listener` at `now_ms` (milliseconds since the Unix epoch: what credentials are
    /// checked against and session lifetimes counted from).
    pub fn new(listener: &'a SaslListener, now_ms: i64) -> SaslAuthenticator<'a> {
        SaslAuthenticator {
            listener,
            state: State::HandshakeOrVersions,
            now_ms,
            previous: None,
        }
    }

    /// A re-authentication of `previous` (KIP-368): SaslHandshake first, no ApiVersions; the mechanism and
    /// principal must stay the same.
    pub fn reauthenticate(
        listener: &'a SaslListener,
        now_ms: i64,
        previous: SaslSession,
    ) -> SaslAuthenticator<'a> {
        SaslAuthenticator {
            listener,
            state: State::Handshake,
            now_ms,
            previous: Some(previous),
        }
    }

    /// The session a completed exchange starts: Kafka's `calcCompletionTimesAndReturnSessionLifetimeMs`.
    /// Errors: a re-authentication that changed the principal (Kafka's message).
    fn session(
        &self,
        mechanism: &str,
        user: String,
        expires_at_ms: Option<i64>,
    ) -> Result<SaslSession, String> {
        if let Some(p) = &self.previous {
            if p.user != user {
                return Err(format!(
                    "Cannot change principals during re-authentication from User.{}: User.{user}",
                    p.user
                ));
            }
        }
        let max = self.listener.max_reauth_ms(mechanism);
        let remaining = expires_at_ms.map(|e| e.saturating_sub(self.now_ms).max(0));
        let lifetime_ms = match (remaining, max > 0) {
            (None, false) => 0,
            (None, true) => max,
            (Some(r), false) => r,
            (Some(r), true) => r.min(max),
        };
        Ok(SaslSession {
            mechanism: mechanism.to_string(),
            user,
            lifetime_ms,
        })
    }

    /// Whether the next frame is a raw token (after a v0 handshake), which may be shorter than a header.
    pub fn expects_raw_token(&self) -> bool {
        matches!(
            self.state,
            State::Authenticate {
                raw_tokens: true,
                ..
            }
        )
    }

    /// Handles one frame (without its size prefix).
    pub fn on_frame(&mut self, frame: Bytes) -> Action {
        match std::mem::replace(&mut self.state, State::Done) {
            State::HandshakeOrVersions => self.handshake(frame, true),
            State::Handshake => self.handshake(frame, false),
            State::Authenticate {
                server,
                mechanism,
                raw_tokens: true,
            } => self.raw_token(frame, server, mechanism),
            State::Authenticate {
                server,
                mechanism,
                raw_tokens: false,
            } => self.authenticate_request(frame, server, mechanism),
            State::Done => fail(None, "request after SASL authentication ended"),
        }
    }

    fn handshake(&mut self, frame: Bytes, versions_allowed: bool) -> Action {
        let Some((key, version, correlation_id)) = RequestHeader::peek(&frame) else {
            return fail(
                None,
                "invalid request during SASL handshake (wrong security protocol?)",
            );
        };
        match ApiKey::from_i16(key) {
            Some(ApiKey::ApiVersions) if versions_allowed => {
                self.state = State::Handshake;
                Action::ApiVersions(frame)
            }
            Some(ApiKey::SaslHandshake) if (0..=1).contains(&version) => {
                let Ok((_, RequestBody::SaslHandshake(r))) = protocol::decode_request(frame) else {
                    return fail(None, "undecodable SaslHandshake request");
                };
                let mechanisms = self.listener.enabled_mechanisms().to_vec();
                let answer = |code: ErrorCode| {
                    let body = SaslHandshakeResponse {
                        error_code: code.0,
                        mechanisms: mechanisms.clone(),
                    };
                    encode(correlation_id, ApiKey::SaslHandshake, version, body.into())
                };
                let Some(server) = self.listener.server(&r.mechanism, self.now_ms) else {
                    let reason = format!("SASL mechanism '{}' is not enabled", r.mechanism);
                    return fail(answer(ErrorCode::UNSUPPORTED_SASL_MECHANISM), reason);
                };
                let Some(response) = answer(ErrorCode::NONE) else {
                    return fail(None, "cannot encode the SaslHandshake response");
                };
                if let Some(p) = self
                    .previous
                    .as_ref()
                    .filter(|p| p.mechanism != r.mechanism)
                {
                    // Kafka answers the handshake, then ends the connection (its REAUTH_BAD_MECHANISM).
                    let reason = format!(
                        "SASL mechanism '{}' requested by client is not supported for re-authentication of mechanism '{}'",
                        r.mechanism, p.mechanism
                    );
                    return fail(Some(response), reason);
                }
                self.state = State::Authenticate {
                    server,
                    mechanism: r.mechanism,
                    raw_tokens: version == 0,
                };
                Action::Respond(response)
            }
            _ => fail(
                None,
                format!("Unexpected Kafka request of type {key} v{version} during SASL handshake"),
            ),
        }
    }

    fn raw_token(&mut self, frame: Bytes, mut server: SaslServer, mechanism: String) -> Action {
        match server.evaluate(&frame) {
            Ok(SaslStep::Continue(challenge)) => {
                self.state = State::Authenticate {
                    server,
                    mechanism,
                    raw_tokens: true,
                };
                Action::Respond(raw(&challenge))
            }
            Ok(SaslStep::Complete {
                response,
                user,
                expires_at_ms,
            }) => match self.session(&mechanism, user, expires_at_ms) {
                Ok(session) => Action::Complete {
                    response: raw(&response),
                    session,
                },
                Err(reason) => fail(None, reason),
            },
            Err(e) => fail(None, format!("{mechanism}: {e}")),
        }
    }

    fn authenticate_request(
        &mut self,
        frame: Bytes,
        mut server: SaslServer,
        mechanism: String,
    ) -> Action {
        let Some((key, version, correlation_id)) = RequestHeader::peek(&frame) else {
            return fail(None, "invalid request during SASL authentication");
        };
        match ApiKey::from_i16(key) {
            Some(ApiKey::SaslAuthenticate) if (0..=2).contains(&version) => {}
            Some(ApiKey::SaslHandshake) if (0..=1).contains(&version) => {
                let body = SaslHandshakeResponse {
                    error_code: ErrorCode::ILLEGAL_SASL_STATE.0,
                    mechanisms: Vec::new(),
                };
                let response = encode(correlation_id, ApiKey::SaslHandshake, version, body.into());
                return fail(
                    response,
                    "Unexpected SaslHandshake during SASL authentication",
                );
            }
            _ => {
                return fail(
                    None,
                    format!("Unexpected Kafka request of type {key} during SASL authentication"),
                )
            }
        }
        let Ok((_, RequestBody::SaslAuthenticate(SaslAuthenticateRequest { auth_bytes, .. }))) =
            protocol::decode_request(frame)
        else {
            return fail(None, "undecodable SaslAuthenticate request");
        };
        let answer =
            |code: ErrorCode, message: Option<String>, bytes: Vec<u8>, lifetime_ms: i64| {
                let body = SaslAuthenticateResponse {
                    error_code: code.0,
                    error_message: message,
                    auth_bytes: Bytes::from(bytes),
                    session_lifetime_ms: lifetime_ms,
                    ..Default::default()
                };
                encode(
                    correlation_id,
                    ApiKey::SaslAuthenticate,
                    version,
                    body.into(),
                )
            };
        match server.evaluate(&auth_bytes) {
            Ok(SaslStep::Continue(challenge)) => {
                match answer(ErrorCode::NONE, None, challenge, 0) {
                    Some(response) => {
                        self.state = State::Authenticate {
                            server,
                            mechanism,
                            raw_tokens: false,
                        };
                        Action::Respond(response)
                    }
                    None => fail(None, "cannot encode the SaslAuthenticate response"),
                }
            }
            Ok(SaslStep::Complete {
                response,
                user,
                expires_at_ms,
            }) => match self.session(&mechanism, user, expires_at_ms) {
                Ok(session) => match answer(ErrorCode::NONE, None, response, session.lifetime_ms) {
                    Some(response) => Action::Complete { response, session },
                    None => fail(None, "cannot encode the SaslAuthenticate response"),
                },
                Err(message) => {
                    let code = ErrorCode::SASL_AUTHENTICATION_FAILED;
                    let response = answer(code, Some(message.clone()), Vec::new(), 0);
                    fail(response, message)
                }
            },
            Err(e) => {
                let during = match self.previous {
                    Some(_) => "re-authentication",
                    None => "authentication",
                };
                let message = match &e {
                    SaslError::InvalidCredentials(_) => format!(
                        "Authentication failed during {during} due to invalid credentials with SASL mechanism {mechanism}"
                    ),
                    other => other.to_string(),
                };
                let response = answer(sasl_error_code(&e), Some(message), Vec::new(), 0);
                fail(response, format!("{mechanism}: {e}"))
            }
        }
    }
}

/// The wall clock in milliseconds since the Unix epoch (what tokens' `exp`/`iat`/`nbf` are compared with).
pub fn unix_now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Authenticates the connection on `stream` (frames read into `buf`, which keeps any bytes that follow):
/// returns the session, or the error that closes the connection after any error response was sent.
/// ApiVersions is served by `apis` with the unauthenticated `conn`.
pub async fn authenticate<S: ServerStream>(
    stream: &mut S,
    buf: &mut BytesMut,
    listener: &SaslListener,
    apis: &KafkaApis,
    conn: &Arc<ConnectionContext>,
    idle: Option<Duration>,
) -> Result<SaslSession, ConnectionError> {
    let auth = SaslAuthenticator::new(listener, unix_now_ms());
    drive(stream, buf, auth, None, Some((apis, conn)), idle).await
}

/// Re-authenticates `previous` on `stream` (KIP-368), starting with `handshake`, the SaslHandshake request
/// just read: returns the new session, or the error that closes the connection.
pub async fn reauthenticate<S: ServerStream>(
    stream: &mut S,
    buf: &mut BytesMut,
    listener: &SaslListener,
    previous: SaslSession,
    handshake: Bytes,
    idle: Option<Duration>,
) -> Result<SaslSession, ConnectionError> {
    let auth = SaslAuthenticator::reauthenticate(listener, unix_now_ms(), previous);
    drive(stream, buf, auth, Some(handshake), None, idle).await
}

/// Runs `auth` over `stream` until it completes or fails, starting with `first` when given.
async fn drive<S: ServerStream>(
    stream: &mut S,
    buf: &mut BytesMut,
    mut auth: SaslAuthenticator<'_>,
    mut first: Option<Bytes>,
    versions: Option<(&KafkaApis, &Arc<ConnectionContext>)>,
    idle: Option<Duration>,
) -> Result<SaslSession, ConnectionError> {
    let max = i32::try_from(auth.listener.max_receive_size()).unwrap_or(i32::MAX);
    loop {
        let frame = match first.take() {
            Some(f) => f,
            None => {
                let min = if auth.expects_raw_token() { 0 } else { 8 };
                let Some(frame) = read_frame_within(stream, buf, min, max, idle).await? else {
                    return Err(ConnectionError::Authentication(
                        "peer closed during SASL authentication".into(),
                    ));
                };
                frame
            }
        };
        match auth.on_frame(frame) {
            Action::ApiVersions(frame) => {
                let Some((apis, conn)) = versions else {
                    return Err(ConnectionError::Authentication(
                        "ApiVersions during re-authentication".into(),
                    ));
                };
                match apis.handle(frame, conn).await {
                    RequestOutcome::Respond(chunks) => write_chunks(stream, chunks).await?,
                    RequestOutcome::NoResponse => {}
                    // ApiVersions is not quota-limited; answered all the same should it ever be.
                    RequestOutcome::Throttled { response, .. } => {
                        if let Some(chunks) = response {
                            write_chunks(stream, chunks).await?;
                        }
                    }
                    RequestOutcome::Close(reason) => {
                        return Err(ConnectionError::InvalidRequest(reason))
                    }
                }
            }
            Action::Respond(chunks) => write_chunks(stream, chunks).await?,
            Action::Complete { response, session } => {
                write_chunks(stream, response).await?;
                return Ok(session);
            }
            Action::Fail { response, reason } => {
                if let Some(chunks) = response {
                    write_chunks(stream, chunks).await?;
                    tokio::io::AsyncWriteExt::flush(stream).await?;
                }
                return Err(ConnectionError::Authentication(reason));
            }
        }
    }
}

#[cfg(test)]
#[path = "sasl_authenticator_tests.rs"]
mod tests;
