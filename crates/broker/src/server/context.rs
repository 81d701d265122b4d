//! Who sent a request and how: [`RequestContext`], built once per request from the decoded header and the
//! connection's [`ConnectionContext`], and passed to every handler (Kafka's `RequestContext`). It is the seam
//! TLS, SASL and ACLs use: the listener a request came in on and its security protocol, the peer address
//! and the authenticated [`KafkaPrincipal`] (`User:ANONYMOUS` on PLAINTEXT listeners and for TLS clients
//! without a certificate; `User:<mapped subject DN>` for a TLS client certificate).

use std::borrow::Cow;
use std::net::SocketAddr;
use std::sync::Arc;

use protocol::RequestHeader;

use crate::config::SecurityProtocol;

/// The identity a request is authorized as (Kafka's `KafkaPrincipal`: a type and a name, shown as
/// `type:name`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KafkaPrincipal {
    /// Principal type; Kafka's built-in one is `User`.
    pub principal_type: Cow<'static, str>,
    /// Principal name.
    pub name: Cow<'static, str>,
}

impl KafkaPrincipal {
    /// `User:ANONYMOUS`, the principal of an unauthenticated connection (Kafka's `KafkaPrincipal.ANONYMOUS`).
    pub const ANONYMOUS: KafkaPrincipal = KafkaPrincipal {
        principal_type: Cow::Borrowed("User"),
        name: Cow::Borrowed("ANONYMOUS"),
    };

    /// `User:<name>` (Kafka's `KafkaPrincipal.USER_TYPE`).
    pub fn user(name: String) -> KafkaPrincipal {
        KafkaPrincipal {
            principal_type: Cow::Borrowed("User"),
            name: Cow::Owned(name),
        }
    }
}

impl std::fmt::Display for KafkaPrincipal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.principal_type, self.name)
    }
}

/// What every request of one connection shares; built once per connection and shared by `Arc`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionContext {
    /// The name of the listener the connection came in on (`PLAINTEXT`, or the name in `listeners`).
    pub listener_name: Arc<str>,
    /// The listener's security protocol.
    pub security_protocol: SecurityProtocol,
    /// The peer's address (`None` when the socket could not tell, or outside a connection in tests).
    pub peer: Option<SocketAddr>,
    /// Who the connection is authenticated as.
    pub principal: KafkaPrincipal,
}

impl ConnectionContext {
    /// An unauthenticated connection from `peer` on PLAINTEXT listener `listener_name`.
    pub fn anonymous(listener_name: Arc<str>, peer: Option<SocketAddr>) -> ConnectionContext {
        ConnectionContext {
            listener_name,
            security_protocol: SecurityProtocol::Plaintext,
            peer,
            principal: KafkaPrincipal::ANONYMOUS,
        }
    }
}

/// One request's context: its decoded header (api key and version, correlation id, client id) and its
/// connection's context. Handlers take `&RequestContext`.
#[derive(Debug, Clone)]
pub struct RequestContext {
    /// The decoded request header.
    pub header: RequestHeader,
    /// The connection the request arrived on.
    pub connection: Arc<ConnectionContext>,
}

impl RequestContext {
    /// The context of a request with `header` on `connection`.
    pub fn new(header: RequestHeader, connection: Arc<ConnectionContext>) -> RequestContext {
        RequestContext { header, connection }
    }

    /// The API key.
    pub fn api_key(&self) -> i16 {
        self.header.request_api_key
    }

    /// The API version.
    pub fn api_version(&self) -> i16 {
        self.header.request_api_version
    }

    /// The correlation id echoed in the response.
    pub fn correlation_id(&self) -> i32 {
        self.header.correlation_id
    }

    /// The client id from the header, if any.
    pub fn client_id(&self) -> Option<&str> {
        self.header.client_id.as_deref()
    }

    /// The listener name.
    pub fn listener_name(&self) -> &str {
        &self.connection.listener_name
    }

    /// The peer's address, if known.
    pub fn peer(&self) -> Option<SocketAddr> {
        self.connection.peer
    }

    /// Who the request is authorized as.
    pub fn principal(&self) -> &KafkaPrincipal {
        &self.connection.principal
    }

    /// The peer's IP as Kafka shows a group member's host: `/a.b.c.d` (`/unknown` without a peer).
    pub fn client_host(&self) -> String {
        self.peer()
            .map_or_else(|| "/unknown".to_string(), |p| format!("/{}", p.ip()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_exposes_header_and_connection() {
        let peer: SocketAddr = "10.0.0.7:5555".parse().unwrap();
        let conn = Arc::new(ConnectionContext::anonymous("PLAINTEXT".into(), Some(peer)));
        let header = RequestHeader {
            request_api_key: 11,
            request_api_version: 9,
            correlation_id: 42,
            client_id: Some("c1".into()),
            unknown_tagged_fields: Vec::new(),
        };
        let ctx = RequestContext::new(header, conn);
        assert_eq!((ctx.api_key(), ctx.api_version()), (11, 9));
        assert_eq!(ctx.correlation_id(), 42);
        assert_eq!(ctx.client_id(), Some("c1"));
        assert_eq!(ctx.listener_name(), "PLAINTEXT");
        assert_eq!(ctx.client_host(), "/10.0.0.7");
        assert_eq!(ctx.principal().to_string(), "User:ANONYMOUS");
        let unknown = ConnectionContext::anonymous("PLAINTEXT".into(), None);
        let ctx = RequestContext::new(ctx.header, Arc::new(unknown));
        assert_eq!(ctx.client_host(), "/unknown");
    }
}
