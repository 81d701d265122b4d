//! OAUTHBEARER: the client initial response, the unsecured validator, the JWKS validator (HS256 `oct` keys,
//! signed here; the RS256 path over a real client is tests/test_oauthbearer.py) and the exchange.

use super::*;
use crate::security::sasl::jwks::{parse_jwks, JwksSettings, JwksValidator};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::json;

const NOW_MS: i64 = 1_700_000_000_000;
const NOW_S: i64 = NOW_MS / 1000;

fn b64(v: &Value) -> String {
    Base64UrlUnpadded::encode_string(v.to_string().as_bytes())
}

fn unsecured_token(claims: Value) -> String {
    format!("{}.{}.", b64(&json!({"alg": "none"})), b64(&claims))
}

fn unsecured() -> UnsecuredValidator {
    UnsecuredValidator::from_options(&BTreeMap::new()).unwrap()
}

fn initial(token: &str) -> Vec<u8> {
    format!("n,,\x01auth=Bearer {token}\x01\x01").into_bytes()
}

#[test]
fn client_initial_responses_parse_as_rfc_7628_says() {
    let r =
        parse_client_initial_response(b"n,a=al=2Cice,\x01auth=Bearer a.b.\x01traceId=123\x01\x01")
            .unwrap();
    assert_eq!(r.authzid, "al,ice");
    assert_eq!(r.token, "a.b.");
    assert_eq!(r.extensions["traceId"], "123");
    for bad in [
        &b"n,,auth=Bearer a.b.\x01\x01"[..],
        b"n,,\x01auth=Basic abc\x01\x01",
        b"n,,\x01auth=Bearer \x01\x01",
        b"n,,\x01auth=Bearer a b\x01\x01",
        b"n,,\x01auth=Bearer a.b.\x01",
        b"n,,\x01x=1\x01\x01",
        b"y,,\x01auth=Bearer a.b.\x01\x01",
        b"n,a=x=y,\x01auth=Bearer a.b.\x01\x01",
        b"\xff",
        b"",
    ] {
        assert_eq!(parse_client_initial_response(bad), None, "{bad:?}");
    }
}

#[test]
fn the_unsecured_validator_checks_principal_lifetime_and_scope() {
    let v = unsecured();
    let ok =
        unsecured_token(json!({"sub": "alice", "iat": NOW_S, "exp": NOW_S + 60, "scope": "a b"}));
    let t = v.validate(&ok, NOW_MS).unwrap();
    assert_eq!(
        (t.principal.as_str(), t.lifetime_ms, t.scope.len()),
        ("alice", NOW_MS + 60_000, 2)
    );
    let cases = [
        json!({"sub": "alice", "exp": NOW_S - 1}),
        json!({"sub": "alice", "exp": NOW_S}),
        json!({"sub": "alice"}),
        json!({"exp": NOW_S + 60}),
        json!({"sub": "", "exp": NOW_S + 60}),
        json!({"sub": "alice", "exp": "soon"}),
        json!({"sub": "alice", "exp": NOW_S + 60, "iat": NOW_S + 30}),
    ];
    for claims in cases {
        let e = v.validate(&unsecured_token(claims.clone()), NOW_MS);
        assert!(matches!(e, Err(TokenError::Invalid(_))), "{claims}: {e:?}");
    }
    let signed = format!(
        "{}sig",
        unsecured_token(json!({"sub": "a", "exp": NOW_S + 9}))
    );
    assert!(v.validate(&signed, NOW_MS).is_err());
    assert!(v.validate("abc", NOW_MS).is_err());
    assert!(v.validate("%%.%%.", NOW_MS).is_err());
}

#[test]
fn unsecured_options_rename_claims_require_scopes_and_allow_skew() {
    let options: BTreeMap<String, String> = [
        ("unsecuredValidatorPrincipalClaimName", "user"),
        ("unsecuredValidatorScopeClaimName", "scp"),
        ("unsecuredValidatorRequiredScope", "kafka,read"),
        ("unsecuredValidatorAllowableClockSkewMs", "5000"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let v = UnsecuredValidator::from_options(&options).unwrap();
    let token = |scp: Value| {
        unsecured_token(json!({"user": "bob", "exp": NOW_S - 2, "iat": NOW_S + 3, "scp": scp}))
    };
    assert_eq!(
        v.validate(&token(json!(["kafka", "read"])), NOW_MS)
            .unwrap()
            .principal,
        "bob"
    );
    let e = v.validate(&token(json!("kafka")), NOW_MS).unwrap_err();
    assert_eq!(
        e.json(),
        r#"{"scope":"kafka,read","status":"insufficient_scope"}"#
    );
    let bad: BTreeMap<String, String> =
        [("unsecuredValidatorAllowableClockSkewMs".into(), "-1".into())].into();
    assert!(UnsecuredValidator::from_options(&bad).is_err());
}

#[test]
fn the_exchange_completes_or_answers_the_json_error_then_fails() {
    let validator = Arc::new(TokenValidator::Unsecured(unsecured()));
    let good = unsecured_token(json!({"sub": "alice", "exp": NOW_S + 60}));
    let mut s = OAuthBearerServer::new(validator.clone(), NOW_MS);
    assert_eq!(
        s.evaluate(&initial(&good)).unwrap(),
        SaslStep::Complete {
            response: Vec::new(),
            user: "alice".into(),
            expires_at_ms: Some(NOW_MS + 60_000),
        }
    );
    assert!(matches!(s.evaluate(b"x"), Err(SaslError::InvalidState(_))));

    let expired = unsecured_token(json!({"sub": "alice", "exp": NOW_S - 60}));
    let mut s = OAuthBearerServer::new(validator.clone(), NOW_MS);
    let json = r#"{"status":"invalid_token"}"#;
    assert_eq!(
        s.evaluate(&initial(&expired)).unwrap(),
        SaslStep::Continue(json.as_bytes().to_vec())
    );
    assert_eq!(s.evaluate(b"\x01"), Err(SaslError::Failed(json.into())));

    let mut s = OAuthBearerServer::new(validator.clone(), NOW_MS);
    assert!(matches!(
        s.evaluate(b"\x01"),
        Err(SaslError::InvalidCredentials(_))
    ));
    let mut s = OAuthBearerServer::new(validator, NOW_MS);
    let other = format!("n,a=bob,\x01auth=Bearer {good}\x01\x01");
    let e = s.evaluate(other.as_bytes()).unwrap_err();
    assert!(e.to_string().contains("(bob)"), "{e}");
}

const SECRET: &[u8] = b"a-test-secret-of-enough-length-000";

fn jwks_validator(issuer: Option<&str>, audience: &[&str]) -> JwksValidator {
    let k = Base64UrlUnpadded::encode_string(SECRET);
    let keys = parse_jwks(
        &json!({"keys": [{"kty": "oct", "kid": "k1", "alg": "HS256", "k": k}]}).to_string(),
    )
    .unwrap();
    let settings = JwksSettings {
        jwks_file: "unused".into(),
        refresh: std::time::Duration::from_secs(3600),
        expected_issuer: issuer.map(str::to_string),
        expected_audience: audience.iter().map(|a| a.to_string()).collect(),
        clock_skew_ms: 30_000,
        sub_claim: "sub".into(),
        scope_claim: "scope".into(),
    };
    JwksValidator::new(settings, keys)
}

fn signed(kid: Option<&str>, claims: Value, secret: &[u8]) -> String {
    let mut header = Header::new(Algorithm::HS256);
    header.kid = kid.map(str::to_string);
    jsonwebtoken::encode(&header, &claims, &EncodingKey::from_secret(secret)).unwrap()
}

#[test]
fn the_jwks_validator_accepts_a_good_token_and_refuses_each_fault() {
    let v = jwks_validator(Some("https://issuer"), &["kafka"]);
    let claims = |patch: Value| {
        let mut c = json!({"sub": "carol", "iss": "https://issuer", "aud": ["kafka", "x"],
                           "iat": NOW_S, "exp": NOW_S + 300, "scope": "s1"});
        for (k, val) in patch.as_object().unwrap() {
            if val.is_null() {
                c.as_object_mut().unwrap().remove(k);
            } else {
                c[k] = val.clone();
            }
        }
        c
    };
    let good = signed(Some("k1"), claims(json!({})), SECRET);
    let t = v.validate(&good, NOW_MS).unwrap();
    assert_eq!(
        (t.principal.as_str(), t.lifetime_ms),
        ("carol", NOW_MS + 300_000)
    );
    // Within the 30 s skew: just expired, issued or valid-from slightly in the future.
    let skewed = json!({"exp": NOW_S - 10, "iat": NOW_S + 10, "nbf": NOW_S + 10});
    assert!(v
        .validate(&signed(Some("k1"), claims(skewed), SECRET), NOW_MS)
        .is_ok());
    let faults = [
        (
            "expired",
            signed(Some("k1"), claims(json!({"exp": NOW_S - 31})), SECRET),
        ),
        (
            "not yet valid",
            signed(Some("k1"), claims(json!({"nbf": NOW_S + 31})), SECRET),
        ),
        (
            "issued later",
            signed(Some("k1"), claims(json!({"iat": NOW_S + 31})), SECRET),
        ),
        (
            "no exp",
            signed(Some("k1"), claims(json!({"exp": null})), SECRET),
        ),
        (
            "no iat",
            signed(Some("k1"), claims(json!({"iat": null})), SECRET),
        ),
        (
            "no sub",
            signed(Some("k1"), claims(json!({"sub": null})), SECRET),
        ),
        (
            "issuer",
            signed(Some("k1"), claims(json!({"iss": "https://evil"})), SECRET),
        ),
        (
            "audience",
            signed(Some("k1"), claims(json!({"aud": "other"})), SECRET),
        ),
        (
            "signature",
            signed(
                Some("k1"),
                claims(json!({})),
                b"another-secret-of-enough-length-00",
            ),
        ),
        ("unknown kid", signed(Some("k2"), claims(json!({})), SECRET)),
        ("alg none", unsecured_token(claims(json!({})))),
        ("malformed", "a.b.c".to_string()),
    ];
    for (what, token) in faults {
        let e = v.validate(&token, NOW_MS);
        assert!(matches!(e, Err(TokenError::Invalid(_))), "{what}: {e:?}");
    }
    // A token without a kid uses the only key; issuer and audience are not checked when not configured.
    let lax = jwks_validator(None, &[]);
    let t = signed(None, claims(json!({"iss": "any", "aud": null})), SECRET);
    assert_eq!(lax.validate(&t, NOW_MS).unwrap().principal, "carol");
}

#[test]
fn a_reloaded_key_set_validates_tokens_of_the_new_key() {
    let v = jwks_validator(None, &[]);
    let token = signed(
        Some("k2"),
        json!({"sub": "dan", "iat": NOW_S, "exp": NOW_S + 60}),
        b"a-rotated-secret-of-enough-length-0",
    );
    assert!(v.validate(&token, NOW_MS).is_err());
    let k = Base64UrlUnpadded::encode_string(b"a-rotated-secret-of-enough-length-0");
    v.set_keys(
        parse_jwks(&json!({"keys": [{"kty": "oct", "kid": "k2", "k": k}]}).to_string()).unwrap(),
    );
    assert_eq!(v.validate(&token, NOW_MS).unwrap().principal, "dan");
}
