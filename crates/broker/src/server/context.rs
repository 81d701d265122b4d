//! Who sent a request and how: [`RequestContext`], built once per request from the decoded header and the
//! connection's [`ConnectionContext`], and passed to every handler (Kafka's `RequestContext`). It is the seam
//! TLS, SASL and ACLs use: the listener a request came in on and its security protocol, the peer address
//! and the authenticated [`KafkaPrincipal`] (`User:ANONYMOUS` on PLAINTEXT listeners and for TLS clients
//! without a certificate; `User:<mapped subject DN>` for a TLS client certificate).

use std::borrow::Cow;
use std::net::SocketAddr;
use std::sync::Arc;

use authorizer::{AclOperation, Requester, ResourceType, CLUSTER_NAME};
use protocol::RequestHeader;

use crate::acls::Authorizer;
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
    /// The client's software name and version from its ApiVersions v3+ (KIP-511), once it has sent one;
    /// a KIP-714 subscription's `match` selects on them.
    pub client_software: std::sync::OnceLock<(String, String)>,
    /// The share-group members (group id, member id) whose share session was opened on this connection
    /// (KIP-932): their acquired records are released when it closes, as Kafka does.
    pub share_members: crate::share::ConnectionShareMembers,
}

impl ConnectionContext {
    /// An unauthenticated connection from `peer` on PLAINTEXT listener `listener_name`.
    pub fn anonymous(listener_name: Arc<str>, peer: Option<SocketAddr>) -> ConnectionContext {
        ConnectionContext {
            listener_name,
            security_protocol: SecurityProtocol::Plaintext,
            peer,
            principal: KafkaPrincipal::ANONYMOUS,
            client_software: std::sync::OnceLock::new(),
            share_members: Default::default(),
        }
    }
}

/// One request's context: its decoded header (api key and version, correlation id, client id), its
/// connection's context and the broker's authorizer. Handlers take `&RequestContext` and check access with
/// [`RequestContext::authorize`].
#[derive(Debug, Clone)]
pub struct RequestContext {
    /// The decoded request header.
    pub header: RequestHeader,
    /// The connection the request arrived on.
    pub connection: Arc<ConnectionContext>,
    /// The authorizer, `None` without one (`authorizer.class.name` empty: everything is allowed).
    authorizer: Option<Arc<Authorizer>>,
    /// The principal as `type:name` and the client's IP, as the authorizer compares them.
    principal_text: String,
    host_text: String,
}

/// A refused action: the type of the resource it was refused on (mapped to TOPIC_/GROUP_/CLUSTER_/
/// TRANSACTIONAL_ID_AUTHORIZATION_FAILED in `apis/errors.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Denied(pub ResourceType);

impl RequestContext {
    /// The context of a request with `header` on `connection`, without an authorizer.
    pub fn new(header: RequestHeader, connection: Arc<ConnectionContext>) -> RequestContext {
        RequestContext {
            header,
            connection,
            authorizer: None,
            principal_text: String::new(),
            host_text: String::new(),
        }
    }

    /// The same context, checked by `authorizer`.
    pub fn with_authorizer(mut self, authorizer: Option<Arc<Authorizer>>) -> RequestContext {
        if authorizer.is_some() {
            self.principal_text = self.connection.principal.to_string();
            self.host_text = self.peer().map(|p| p.ip().to_string()).unwrap_or_default();
        }
        self.authorizer = authorizer;
        self
    }

    /// Whether an authorizer is configured.
    pub fn has_authorizer(&self) -> bool {
        self.authorizer.is_some()
    }

    /// The broker's authorizer, if any (the ACL APIs use it).
    pub fn authorizer(&self) -> Option<&Arc<Authorizer>> {
        self.authorizer.as_ref()
    }

    fn requester(&self) -> Requester<'_> {
        Requester {
            principal: &self.principal_text,
            host: &self.host_text,
        }
    }

    /// Whether the request's principal may do `op` on the resource `rt`/`name` (always, without an
    /// authorizer).
    pub fn is_allowed(&self, op: AclOperation, rt: ResourceType, name: &str) -> bool {
        self.authorizer
            .as_ref()
            .is_none_or(|a| a.is_allowed(&self.requester(), op, rt, name))
    }

    /// [`RequestContext::is_allowed`] as a `Result`: `Err(Denied(rt))` when refused.
    pub fn authorize(&self, op: AclOperation, rt: ResourceType, name: &str) -> Result<(), Denied> {
        if self.is_allowed(op, rt, name) {
            Ok(())
        } else {
            Err(Denied(rt))
        }
    }

    /// `op` on the cluster resource (`kafka-cluster`).
    pub fn authorize_cluster(&self, op: AclOperation) -> Result<(), Denied> {
        self.authorize(op, ResourceType::Cluster, CLUSTER_NAME)
    }

    /// Whether `op` is allowed on some resource of type `rt` (KIP-679).
    pub fn is_allowed_any(&self, op: AclOperation, rt: ResourceType) -> bool {
        self.authorizer
            .as_ref()
            .is_none_or(|a| a.is_allowed_any(&self.requester(), op, rt))
    }

    /// Kafka's authorized-operations bit field of a resource: every supported operation the principal is
    /// allowed (all of them without an authorizer).
    pub fn authorized_operations(&self, rt: ResourceType, name: &str) -> i32 {
        match &self.authorizer {
            Some(a) => a.authorized_operations(&self.requester(), rt, name),
            None => AclOperation::supported_by(rt)
                .iter()
                .fold(0, |bits, op| bits | (1 << op.code())),
        }
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
