//! SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka's `ScramSaslServer`/`ScramSaslClient`:
//! no channel binding (`n,,` GS2 header), user names with `=2C`/`=3D` escapes, the server nonce appended to
//! the client's, the client's final nonce checked against the server-first message, the proof checked in
//! constant time against the stored key, and the server signature returned for the client to verify.
//! Credentials come from the broker's `ScramCredentialCache` (KIP-554 records), never a password.
//!
//! Messages:
//! client-first `n,[a=<authzid>],n=<user>,r=<cnonce>[,ext...]` → server-first `r=<cnonce+snonce>,s=<salt
//! b64>,i=<iterations>` → client-final `c=<b64 gs2 header>,r=<nonce>,p=<proof b64>` → server-final
//! `v=<server signature b64>`.

use std::sync::Arc;

use base64ct::{Base64, Encoding};
use hmac::{Hmac, Mac};
use metadata::scram::{ScramCredential, MIN_ITERATIONS, SCRAM_SHA_256, SCRAM_SHA_512};
use rand::Rng;
use sha2::{Digest, Sha256, Sha512};
use subtle::ConstantTimeEq;

use super::{SaslError, SaslStep};
use crate::scram::ScramCredentialCache;

/// A SCRAM mechanism Kafka defines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScramMechanism {
    /// SCRAM-SHA-256 (type code 1).
    Sha256,
    /// SCRAM-SHA-512 (type code 2).
    Sha512,
}

impl ScramMechanism {
    /// The SASL mechanism name.
    pub fn name(self) -> &'static str {
        match self {
            ScramMechanism::Sha256 => "SCRAM-SHA-256",
            ScramMechanism::Sha512 => "SCRAM-SHA-512",
        }
    }

    /// The mechanism of a SASL name.
    pub fn from_name(name: &str) -> Option<ScramMechanism> {
        match name {
            "SCRAM-SHA-256" => Some(ScramMechanism::Sha256),
            "SCRAM-SHA-512" => Some(ScramMechanism::Sha512),
            _ => None,
        }
    }

    /// Kafka's type code (AlterUserScramCredentials, the metadata records).
    pub fn code(self) -> i8 {
        match self {
            ScramMechanism::Sha256 => SCRAM_SHA_256,
            ScramMechanism::Sha512 => SCRAM_SHA_512,
        }
    }

    /// HMAC(key, data) with the mechanism's hash.
    pub fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        match self {
            ScramMechanism::Sha256 => {
                let mut m = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("any key length");
                m.update(data);
                m.finalize().into_bytes().to_vec()
            }
            ScramMechanism::Sha512 => {
                let mut m = <Hmac<Sha512> as Mac>::new_from_slice(key).expect("any key length");
                m.update(data);
                m.finalize().into_bytes().to_vec()
            }
        }
    }

    /// H(data).
    pub fn hash(self, data: &[u8]) -> Vec<u8> {
        match self {
            ScramMechanism::Sha256 => Sha256::digest(data).to_vec(),
            ScramMechanism::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    /// SaltedPassword = Hi(password, salt, iterations) (PBKDF2 with the mechanism's HMAC).
    pub fn salted_password(self, password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
        match self {
            ScramMechanism::Sha256 => {
                let mut out = vec![0u8; 32];
                pbkdf2::pbkdf2_hmac::<Sha256>(password, salt, iterations, &mut out);
                out
            }
            ScramMechanism::Sha512 => {
                let mut out = vec![0u8; 64];
                pbkdf2::pbkdf2_hmac::<Sha512>(password, salt, iterations, &mut out);
                out
            }
        }
    }

    /// The stored credential of a salted password: StoredKey = H(HMAC(SaltedPassword, "Client Key")),
    /// ServerKey = HMAC(SaltedPassword, "Server Key").
    pub fn credential(self, salted: &[u8], salt: &[u8], iterations: i32) -> ScramCredential {
        ScramCredential {
            salt: salt.to_vec(),
            stored_key: self.hash(&self.hmac(salted, b"Client Key")),
            server_key: self.hmac(salted, b"Server Key"),
            iterations,
        }
    }
}

/// A random nonce of printable characters (Kafka's `ScramFormatter.secureRandomString`: base-36 digits).
pub fn random_nonce() -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut rng = rand::rngs::OsRng;
    (0..26)
        .map(|_| DIGITS[rng.gen_range(0..DIGITS.len())] as char)
        .collect()
}

/// `=2C` → `,` and `=3D` → `=` (RFC 5802 saslname); `None` for any other `=`.
fn decode_saslname(s: &str) -> Option<String> {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find('=') {
        out.push_str(&rest[..i]);
        match rest.get(i..i + 3) {
            Some("=2C") => out.push(','),
            Some("=3D") => out.push('='),
            _ => return None,
        }
        rest = &rest[i + 3..];
    }
    out.push_str(rest);
    Some(out)
}

/// `,` → `=2C`, `=` → `=3D`.
fn encode_saslname(s: &str) -> String {
    s.replace('=', "=3D").replace(',', "=2C")
}

fn valid_nonce(n: &str) -> bool {
    !n.is_empty() && n.bytes().all(|b| (0x21..=0x7e).contains(&b) && b != b',')
}

/// The parts of a client-first message the server uses.
struct ClientFirst {
    gs2_header: String,
    authzid: String,
    user: String,
    nonce: String,
    bare: String,
}

fn parse_client_first(text: &str) -> Option<ClientFirst> {
    let rest = text.strip_prefix("n,")?;
    let (authzid, bare) = match rest.strip_prefix("a=") {
        Some(r) => {
            let (a, b) = r.split_once(',')?;
            (decode_saslname(a)?, b)
        }
        None => ("".to_string(), rest.strip_prefix(',')?),
    };
    let gs2_header = text[..text.len() - bare.len()].to_string();
    let mut fields = bare.split(',');
    let user = decode_saslname(fields.next()?.strip_prefix("n=")?)?;
    let nonce = fields.next()?.strip_prefix("r=")?.to_string();
    if !valid_nonce(&nonce) {
        return None;
    }
    for ext in fields {
        let (k, v) = ext.split_once('=')?;
        // Delegation tokens (`tokenauth`) are not supported; any other extension is ignored, as Kafka does.
        if k.is_empty()
            || !k.bytes().all(|b| b.is_ascii_alphabetic())
            || (k == "tokenauth" && v == "true")
        {
            return None;
        }
    }
    Some(ClientFirst {
        gs2_header,
        authzid,
        user,
        nonce,
        bare: bare.to_string(),
    })
}

enum ServerState {
    ExpectClientFirst,
    ExpectClientFinal {
        user: String,
        credential: ScramCredential,
        gs2_header: String,
        nonce: String,
        client_first_bare: String,
        server_first: String,
    },
    Done,
}

/// One SCRAM exchange on the server side.
pub struct ScramServer {
    mechanism: ScramMechanism,
    credentials: Arc<ScramCredentialCache>,
    server_nonce: String,
    state: ServerState,
}

impl std::fmt::Debug for ScramServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScramServer")
            .field("mechanism", &self.mechanism)
            .finish_non_exhaustive()
    }
}

fn invalid(reason: &str) -> SaslError {
    SaslError::InvalidCredentials(reason.to_string())
}

impl ScramServer {
    /// A server for `mechanism` looking credentials up in `credentials`, with a random server nonce.
    pub fn new(mechanism: ScramMechanism, credentials: Arc<ScramCredentialCache>) -> ScramServer {
        ScramServer::with_nonce(mechanism, credentials, random_nonce())
    }

    /// The same with a given server nonce (tests).
    pub fn with_nonce(
        mechanism: ScramMechanism,
        credentials: Arc<ScramCredentialCache>,
        server_nonce: String,
    ) -> ScramServer {
        ScramServer {
            mechanism,
            credentials,
            server_nonce,
            state: ServerState::ExpectClientFirst,
        }
    }

    /// Evaluates the next client message. Errors: `Failed` with Kafka's message for an authorization id
    /// other than the user; `InvalidCredentials` (the client gets Kafka's generic message) for a malformed
    /// message, an unknown user, a credential with too few iterations, a client-final nonce that is not the
    /// server-first one, a channel binding other than the GS2 header sent, or a wrong proof.
    pub fn evaluate(&mut self, token: &[u8]) -> Result<SaslStep, SaslError> {
        let text = std::str::from_utf8(token).map_err(|_| invalid("message is not UTF-8"))?;
        match std::mem::replace(&mut self.state, ServerState::Done) {
            ServerState::ExpectClientFirst => self.client_first(text),
            ServerState::ExpectClientFinal {
                user,
                credential,
                gs2_header,
                nonce,
                client_first_bare,
                server_first,
            } => {
                let auth = AuthExchange {
                    credential: &credential,
                    gs2_header: &gs2_header,
                    nonce: &nonce,
                    client_first_bare: &client_first_bare,
                    server_first: &server_first,
                };
                let response = self.client_final(text, &auth)?;
                Ok(SaslStep::Complete {
                    response,
                    user,
                    expires_at_ms: None,
                })
            }
            ServerState::Done => Err(SaslError::InvalidState(
                "SCRAM authentication already complete or failed".into(),
            )),
        }
    }

    fn client_first(&mut self, text: &str) -> Result<SaslStep, SaslError> {
        let first = parse_client_first(text)
            .ok_or_else(|| invalid("invalid SCRAM client first message"))?;
        if !first.authzid.is_empty() && first.authzid != first.user {
            return Err(SaslError::Failed(
                "Authentication failed: Client requested an authorization id that is different from username"
                    .into(),
            ));
        }
        let credential = self
            .credentials
            .get(&first.user, self.mechanism.code())
            .ok_or_else(|| invalid("Authentication failed: Invalid user credentials"))?;
        if credential.iterations < MIN_ITERATIONS {
            return Err(invalid("credential has too few iterations"));
        }
        let nonce = format!("{}{}", first.nonce, self.server_nonce);
        let server_first = format!(
            "r={nonce},s={},i={}",
            Base64::encode_string(&credential.salt),
            credential.iterations
        );
        let response = server_first.clone().into_bytes();
        self.state = ServerState::ExpectClientFinal {
            user: first.user,
            credential,
            gs2_header: first.gs2_header,
            nonce,
            client_first_bare: first.bare,
            server_first,
        };
        Ok(SaslStep::Continue(response))
    }

    fn client_final(&self, text: &str, auth: &AuthExchange<'_>) -> Result<Vec<u8>, SaslError> {
        let (without_proof, proof) = text
            .rsplit_once(",p=")
            .ok_or_else(|| invalid("invalid SCRAM client final message"))?;
        let mut fields = without_proof.split(',');
        let binding = fields
            .next()
            .and_then(|f| f.strip_prefix("c="))
            .ok_or_else(|| invalid("invalid SCRAM client final message"))?;
        let nonce = fields
            .next()
            .and_then(|f| f.strip_prefix("r="))
            .ok_or_else(|| invalid("invalid SCRAM client final message"))?;
        if nonce != auth.nonce {
            return Err(invalid("Invalid client nonce in the final client message."));
        }
        if binding != Base64::encode_string(auth.gs2_header.as_bytes()) {
            return Err(invalid(
                "Invalid channel binding in the final client message.",
            ));
        }
        let proof = Base64::decode_vec(proof).map_err(|_| invalid("invalid proof encoding"))?;
        let auth_message = format!(
            "{},{},{}",
            auth.client_first_bare, auth.server_first, without_proof
        );
        let m = self.mechanism;
        let signature = m.hmac(&auth.credential.stored_key, auth_message.as_bytes());
        if proof.len() != signature.len() {
            return Err(invalid("Invalid client credentials"));
        }
        let client_key: Vec<u8> = proof.iter().zip(&signature).map(|(a, b)| a ^ b).collect();
        let ok: bool = m
            .hash(&client_key)
            .ct_eq(&auth.credential.stored_key)
            .into();
        if !ok {
            return Err(invalid("Invalid client credentials"));
        }
        let server_signature = m.hmac(&auth.credential.server_key, auth_message.as_bytes());
        Ok(format!("v={}", Base64::encode_string(&server_signature)).into_bytes())
    }
}

struct AuthExchange<'a> {
    credential: &'a ScramCredential,
    gs2_header: &'a str,
    nonce: &'a str,
    client_first_bare: &'a str,
    server_first: &'a str,
}

/// The client side (Kafka's `ScramSaslClient`), used by the broker's inter-broker connections and tests.
#[derive(Debug)]
pub struct ScramClient {
    mechanism: ScramMechanism,
    user: String,
    password: String,
    nonce: String,
    client_first_bare: String,
    server_signature: Option<Vec<u8>>,
}

impl ScramClient {
    /// A client for `user`/`password` with a random nonce.
    pub fn new(mechanism: ScramMechanism, user: &str, password: &str) -> ScramClient {
        ScramClient {
            mechanism,
            user: user.to_string(),
            password: password.to_string(),
            nonce: random_nonce(),
            client_first_bare: String::new(),
            server_signature: None,
        }
    }

    /// The client-first message.
    pub fn first(&mut self) -> Vec<u8> {
        self.client_first_bare = format!("n={},r={}", encode_saslname(&self.user), self.nonce);
        format!("n,,{}", self.client_first_bare).into_bytes()
    }

    /// The client-final message answering `server_first`. Errors: a malformed message, a nonce that does
    /// not extend ours, fewer than 4096 iterations.
    pub fn answer(&mut self, server_first: &[u8]) -> Result<Vec<u8>, SaslError> {
        let text =
            std::str::from_utf8(server_first).map_err(|_| invalid("server first not UTF-8"))?;
        let mut f = text.split(',');
        let mut field = |p: &str| f.next().and_then(|x| x.strip_prefix(p)).map(str::to_string);
        let (nonce, salt, iterations) = match (field("r="), field("s="), field("i=")) {
            (Some(n), Some(s), Some(i)) => (n, s, i),
            _ => return Err(invalid("invalid SCRAM server first message")),
        };
        let salt = Base64::decode_vec(&salt).map_err(|_| invalid("invalid salt"))?;
        let iterations: i32 = iterations
            .parse()
            .map_err(|_| invalid("invalid iterations"))?;
        if !nonce.starts_with(&self.nonce) || nonce.len() == self.nonce.len() {
            return Err(invalid("server nonce does not extend the client nonce"));
        }
        if iterations < MIN_ITERATIONS {
            return Err(invalid("too few iterations"));
        }
        let m = self.mechanism;
        let salted = m.salted_password(self.password.as_bytes(), &salt, iterations as u32);
        let without_proof = format!("c={},r={nonce}", Base64::encode_string(b"n,,"));
        let auth_message = format!("{},{text},{without_proof}", self.client_first_bare);
        let client_key = m.hmac(&salted, b"Client Key");
        let signature = m.hmac(&m.hash(&client_key), auth_message.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&signature)
            .map(|(a, b)| a ^ b)
            .collect();
        let server_key = m.hmac(&salted, b"Server Key");
        self.server_signature = Some(m.hmac(&server_key, auth_message.as_bytes()));
        Ok(format!("{without_proof},p={}", Base64::encode_string(&proof)).into_bytes())
    }

    /// Checks the server-final message (the server proves it knows the credential).
    pub fn verify(&self, server_final: &[u8]) -> Result<(), SaslError> {
        let text =
            std::str::from_utf8(server_final).map_err(|_| invalid("server final not UTF-8"))?;
        let got = text
            .strip_prefix("v=")
            .and_then(|v| Base64::decode_vec(v).ok())
            .ok_or_else(|| invalid("invalid SCRAM server final message"))?;
        match &self.server_signature {
            Some(s) if bool::from(s.ct_eq(&got)) => Ok(()),
            _ => Err(invalid("invalid server signature")),
        }
    }
}

#[cfg(test)]
#[path = "scram_tests.rs"]
mod tests;
