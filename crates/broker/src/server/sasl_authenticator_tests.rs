//! The SASL exchange state machine, frame by frame (the real-socket behaviour is tests/test_sasl.py).

use super::*;
use crate::config::{parse_properties, BrokerConfig};
use crate::scram::ScramCredentialCache;
use protocol::messages::{ApiVersionsRequest, MetadataRequest, SaslHandshakeRequest};

fn listener() -> SaslListener {
    let props = "listeners=SASL_PLAINTEXT://127.0.0.1:0\n\
        sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256\n\
        listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_alice=\"alice-secret\";\n";
    let config = BrokerConfig::from_pairs(&parse_properties(props).unwrap()).unwrap();
    SaslListener::new(
        &config,
        "SASL_PLAINTEXT",
        Arc::new(ScramCredentialCache::new()),
    )
    .unwrap()
}

fn frame(version: i16, body: RequestBody) -> Bytes {
    let header = RequestHeader {
        request_api_key: body.api_key() as i16,
        request_api_version: version,
        correlation_id: 7,
        client_id: Some("t".into()),
        unknown_tagged_fields: Vec::new(),
    };
    protocol::encode_request(&header, &body).unwrap().slice(4..)
}

fn response(api: ApiKey, version: i16, chunks: Vec<Chunk>) -> ResponseBody {
    let mut bytes = Vec::new();
    for c in chunks {
        let Chunk::Bytes(b) = c else {
            panic!("file chunk")
        };
        bytes.extend_from_slice(&b);
    }
    protocol::decode_response(api, version, Bytes::from(bytes[4..].to_vec()))
        .unwrap()
        .1
}

fn handshake(mechanism: &str) -> RequestBody {
    SaslHandshakeRequest {
        mechanism: mechanism.into(),
    }
    .into()
}

fn authenticate(bytes: &[u8]) -> RequestBody {
    SaslAuthenticateRequest {
        auth_bytes: Bytes::copy_from_slice(bytes),
        ..Default::default()
    }
    .into()
}

#[test]
fn plain_over_sasl_authenticate_after_api_versions() {
    let l = listener();
    let mut a = SaslAuthenticator::new(&l, 0);
    assert!(matches!(
        a.on_frame(frame(3, ApiVersionsRequest::default().into())),
        Action::ApiVersions(_)
    ));
    let Action::Respond(r) = a.on_frame(frame(1, handshake("PLAIN"))) else {
        panic!()
    };
    let ResponseBody::SaslHandshake(r) = response(ApiKey::SaslHandshake, 1, r) else {
        panic!()
    };
    assert_eq!(
        (r.error_code, r.mechanisms),
        (0, vec!["PLAIN".to_string(), "SCRAM-SHA-256".to_string()])
    );
    match a.on_frame(frame(2, authenticate(b"\0alice\0alice-secret"))) {
        Action::Complete {
            session,
            response: r,
        } => {
            assert_eq!(session.user, "alice");
            let ResponseBody::SaslAuthenticate(r) = response(ApiKey::SaslAuthenticate, 2, r) else {
                panic!()
            };
            assert_eq!((r.error_code, r.session_lifetime_ms), (0, 0));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn wrong_password_answers_sasl_authentication_failed_then_closes() {
    let l = listener();
    let mut a = SaslAuthenticator::new(&l, 0);
    a.on_frame(frame(1, handshake("PLAIN")));
    let Action::Fail {
        response: Some(r), ..
    } = a.on_frame(frame(1, authenticate(b"\0alice\0nope")))
    else {
        panic!()
    };
    let ResponseBody::SaslAuthenticate(r) = response(ApiKey::SaslAuthenticate, 1, r) else {
        panic!()
    };
    assert_eq!(r.error_code, ErrorCode::SASL_AUTHENTICATION_FAILED.0);
    assert_eq!(
        r.error_message.as_deref(),
        Some("Authentication failed: Invalid username or password")
    );
}

#[test]
fn unknown_mechanism_lists_the_enabled_ones_and_closes() {
    let l = listener();
    let mut a = SaslAuthenticator::new(&l, 0);
    let Action::Fail {
        response: Some(r), ..
    } = a.on_frame(frame(1, handshake("GSSAPI")))
    else {
        panic!()
    };
    let ResponseBody::SaslHandshake(r) = response(ApiKey::SaslHandshake, 1, r) else {
        panic!()
    };
    assert_eq!(r.error_code, ErrorCode::UNSUPPORTED_SASL_MECHANISM.0);
    assert_eq!(r.mechanisms, ["PLAIN", "SCRAM-SHA-256"]);
}

#[test]
fn other_requests_before_authentication_close_unanswered() {
    let l = listener();
    let metadata = || frame(4, MetadataRequest::default().into());
    let mut a = SaslAuthenticator::new(&l, 0);
    assert!(matches!(
        a.on_frame(metadata()),
        Action::Fail { response: None, .. }
    ));
    // SaslAuthenticate before the handshake, and a second ApiVersions, close too.
    let mut a = SaslAuthenticator::new(&l, 0);
    assert!(matches!(
        a.on_frame(frame(2, authenticate(b"x"))),
        Action::Fail { response: None, .. }
    ));
    let mut a = SaslAuthenticator::new(&l, 0);
    a.on_frame(frame(3, ApiVersionsRequest::default().into()));
    assert!(matches!(
        a.on_frame(frame(3, ApiVersionsRequest::default().into())),
        Action::Fail { .. }
    ));
    // After the handshake: another handshake is ILLEGAL_SASL_STATE, anything else closes.
    let mut a = SaslAuthenticator::new(&l, 0);
    a.on_frame(frame(1, handshake("PLAIN")));
    let Action::Fail {
        response: Some(r), ..
    } = a.on_frame(frame(1, handshake("PLAIN")))
    else {
        panic!()
    };
    let ResponseBody::SaslHandshake(r) = response(ApiKey::SaslHandshake, 1, r) else {
        panic!()
    };
    assert_eq!(r.error_code, ErrorCode::ILLEGAL_SASL_STATE.0);
    let mut a = SaslAuthenticator::new(&l, 0);
    a.on_frame(frame(1, handshake("PLAIN")));
    assert!(matches!(
        a.on_frame(metadata()),
        Action::Fail { response: None, .. }
    ));
    // Garbage (not a Kafka request) closes.
    let mut a = SaslAuthenticator::new(&l, 0);
    assert!(matches!(
        a.on_frame(Bytes::from_static(b"\x16\x03")),
        Action::Fail { response: None, .. }
    ));
}

#[test]
fn v0_handshake_takes_raw_tokens() {
    let l = listener();
    let mut a = SaslAuthenticator::new(&l, 0);
    assert!(matches!(
        a.on_frame(frame(0, handshake("PLAIN"))),
        Action::Respond(_)
    ));
    assert!(a.expects_raw_token());
    match a.on_frame(Bytes::from_static(b"\0alice\0alice-secret")) {
        Action::Complete { response, session } => {
            assert_eq!(session.user, "alice");
            let Chunk::Bytes(b) = &response[0] else {
                panic!()
            };
            assert_eq!(&b[..], &[0, 0, 0, 0]);
        }
        other => panic!("{other:?}"),
    }
    let mut a = SaslAuthenticator::new(&l, 0);
    a.on_frame(frame(0, handshake("PLAIN")));
    assert!(matches!(
        a.on_frame(Bytes::from_static(b"\0a\0b")),
        Action::Fail { response: None, .. }
    ));
}

fn reauth_listener() -> SaslListener {
    let props = "listeners=SASL_PLAINTEXT://127.0.0.1:0\n\
        sasl.enabled.mechanisms=PLAIN,OAUTHBEARER\n\
        listener.name.sasl_plaintext.plain.connections.max.reauth.ms=5000\n\
        listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_alice=\"a\" user_bob=\"b\";\n";
    let config = BrokerConfig::from_pairs(&parse_properties(props).unwrap()).unwrap();
    SaslListener::new(
        &config,
        "SASL_PLAINTEXT",
        Arc::new(ScramCredentialCache::new()),
    )
    .unwrap()
}

/// Runs a v1 handshake and one SaslAuthenticate; the final action.
fn exchange(a: &mut SaslAuthenticator<'_>, mechanism: &str, token: &[u8]) -> Action {
    assert!(matches!(
        a.on_frame(frame(1, handshake(mechanism))),
        Action::Respond(_)
    ));
    a.on_frame(frame(1, authenticate(token)))
}

fn lifetime_of(action: Action) -> i64 {
    let Action::Complete {
        response: r,
        session,
    } = action
    else {
        panic!("{action:?}")
    };
    let ResponseBody::SaslAuthenticate(r) = response(ApiKey::SaslAuthenticate, 1, r) else {
        panic!()
    };
    assert_eq!(r.session_lifetime_ms, session.lifetime_ms);
    session.lifetime_ms
}

#[test]
fn session_lifetime_is_the_smaller_of_max_reauth_and_the_token_life() {
    use base64ct::Encoding;
    let l = reauth_listener();
    let now_ms = 1_700_000_000_000;
    let mut a = SaslAuthenticator::new(&l, now_ms);
    assert_eq!(lifetime_of(exchange(&mut a, "PLAIN", b"\0alice\0a")), 5000);
    // OAUTHBEARER without connections.max.reauth.ms: the token's remaining life (unsecured, 90 s).
    let b64 =
        |v: serde_json::Value| base64ct::Base64UrlUnpadded::encode_string(v.to_string().as_bytes());
    let exp = now_ms / 1000 + 90;
    let token = format!(
        "n,,\x01auth=Bearer {}.{}.\x01\x01",
        b64(serde_json::json!({"alg": "none"})),
        b64(serde_json::json!({"sub": "alice", "exp": exp}))
    );
    let mut a = SaslAuthenticator::new(&l, now_ms);
    assert_eq!(
        lifetime_of(exchange(&mut a, "OAUTHBEARER", token.as_bytes())),
        90_000
    );
}

#[test]
fn reauthentication_keeps_the_mechanism_and_the_principal() {
    let l = reauth_listener();
    let alice = SaslSession {
        mechanism: "PLAIN".into(),
        user: "alice".into(),
        lifetime_ms: 5000,
    };
    let mut a = SaslAuthenticator::reauthenticate(&l, 0, alice.clone());
    assert_eq!(lifetime_of(exchange(&mut a, "PLAIN", b"\0alice\0a")), 5000);
    // No ApiVersions during re-authentication.
    let mut a = SaslAuthenticator::reauthenticate(&l, 0, alice.clone());
    assert!(matches!(
        a.on_frame(frame(3, ApiVersionsRequest::default().into())),
        Action::Fail { response: None, .. }
    ));
    let mut a = SaslAuthenticator::reauthenticate(&l, 0, alice.clone());
    let Action::Fail {
        response: Some(r),
        reason,
    } = exchange(&mut a, "PLAIN", b"\0bob\0b")
    else {
        panic!()
    };
    let ResponseBody::SaslAuthenticate(r) = response(ApiKey::SaslAuthenticate, 1, r) else {
        panic!()
    };
    let expected = "Cannot change principals during re-authentication from User.alice: User.bob";
    assert_eq!(
        (r.error_code, r.error_message.as_deref(), reason.as_str()),
        (58, Some(expected), expected)
    );
    // Another mechanism: the handshake is answered, then the connection closes.
    let mut a = SaslAuthenticator::reauthenticate(&l, 0, alice);
    let Action::Fail {
        response: Some(r), ..
    } = a.on_frame(frame(1, handshake("OAUTHBEARER")))
    else {
        panic!()
    };
    let ResponseBody::SaslHandshake(r) = response(ApiKey::SaslHandshake, 1, r) else {
        panic!()
    };
    assert_eq!(r.error_code, 0);
}
