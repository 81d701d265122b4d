//! SASL/PLAIN (RFC 4616) as Kafka's `PlainSaslServer` with its `PlainServerCallbackHandler`: one client
//! message `[authzid] NUL authcid NUL passwd`, checked against the `user_<name>="<password>"` options of the
//! listener's JAAS entry with a constant-time comparison. The principal is `User:<authcid>`.

use std::collections::BTreeMap;
use std::sync::Arc;

use subtle::ConstantTimeEq;

use super::{SaslError, SaslStep};

/// The PLAIN users of one listener: name → password (the `user_<name>` JAAS options).
#[derive(Clone, Default)]
pub struct PlainUsers(BTreeMap<String, String>);

impl std::fmt::Debug for PlainUsers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

impl PlainUsers {
    /// The users named by `user_<name>` options (other options are ignored, as Kafka does).
    pub fn from_options(options: &BTreeMap<String, String>) -> PlainUsers {
        PlainUsers(
            options
                .iter()
                .filter_map(|(k, v)| Some((k.strip_prefix("user_")?.to_string(), v.clone())))
                .collect(),
        )
    }

    /// Whether `user` exists and `password` is its password; the password bytes are compared in constant
    /// time (an unknown user is compared against an empty password so it costs the same).
    pub fn authenticate(&self, user: &str, password: &str) -> bool {
        let (known, expected) = match self.0.get(user) {
            Some(p) => (true, p.as_bytes()),
            None => (false, &b""[..]),
        };
        let same: bool = expected.ct_eq(password.as_bytes()).into();
        known && same
    }
}

/// One PLAIN exchange: complete after the client's single message.
#[derive(Debug)]
pub struct PlainServer {
    users: Arc<PlainUsers>,
    complete: bool,
}

impl PlainServer {
    /// A server checking against `users`.
    pub fn new(users: Arc<PlainUsers>) -> PlainServer {
        PlainServer {
            users,
            complete: false,
        }
    }

    /// Evaluates the client's message. Errors (Kafka's messages, sent to the client): not three
    /// NUL-separated tokens, an empty user name or password, an authorization id other than the user,
    /// wrong credentials.
    pub fn evaluate(&mut self, token: &[u8]) -> Result<SaslStep, SaslError> {
        if self.complete {
            return Err(SaslError::InvalidState(
                "PLAIN authentication already complete".into(),
            ));
        }
        let text = std::str::from_utf8(token)
            .map_err(|_| SaslError::Failed("Invalid SASL/PLAIN response: not UTF-8".into()))?;
        let tokens: Vec<&str> = text.split('\u{0}').collect();
        if tokens.len() != 3 {
            return Err(SaslError::Failed(format!(
                "Invalid SASL/PLAIN response: expected 3 tokens, got {}",
                tokens.len()
            )));
        }
        let (authzid, user, password) = (tokens[0], tokens[1], tokens[2]);
        if user.is_empty() {
            return Err(SaslError::Failed(
                "Authentication failed: username not specified".into(),
            ));
        }
        if password.is_empty() {
            return Err(SaslError::Failed(
                "Authentication failed: password not specified".into(),
            ));
        }
        if !self.users.authenticate(user, password) {
            return Err(SaslError::Failed(
                "Authentication failed: Invalid username or password".into(),
            ));
        }
        if !authzid.is_empty() && authzid != user {
            return Err(SaslError::Failed(
                "Authentication failed: Client requested an authorization id that is different from username"
                    .into(),
            ));
        }
        self.complete = true;
        Ok(SaslStep::Complete {
            response: Vec::new(),
            user: user.to_string(),
            expires_at_ms: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server() -> PlainServer {
        let options = [("user_alice", "alice-secret"), ("username", "admin")]
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .into_iter()
            .collect();
        PlainServer::new(Arc::new(PlainUsers::from_options(&options)))
    }

    #[test]
    fn accepts_the_right_password_only() {
        let step = server().evaluate(b"\0alice\0alice-secret").unwrap();
        assert_eq!(
            step,
            SaslStep::Complete {
                response: vec![],
                user: "alice".into(),
                expires_at_ms: None,
            }
        );
        assert!(server().evaluate(b"alice\0alice\0alice-secret").is_ok());
        let failed = |t: &[u8]| match server().evaluate(t) {
            Err(SaslError::Failed(m)) => m,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            failed(b"\0alice\0wrong"),
            "Authentication failed: Invalid username or password"
        );
        assert_eq!(
            failed(b"\0admin\0admin"),
            "Authentication failed: Invalid username or password"
        );
        assert_eq!(
            failed(b"\0alice"),
            "Invalid SASL/PLAIN response: expected 3 tokens, got 2"
        );
        assert_eq!(
            failed(b"\0\0x"),
            "Authentication failed: username not specified"
        );
        assert_eq!(
            failed(b"\0alice\0"),
            "Authentication failed: password not specified"
        );
        assert!(failed(b"bob\0alice\0alice-secret").contains("authorization id"));
        let mut s = server();
        s.evaluate(b"\0alice\0alice-secret").unwrap();
        assert!(matches!(
            s.evaluate(b"\0alice\0alice-secret"),
            Err(SaslError::InvalidState(_))
        ));
    }
}
