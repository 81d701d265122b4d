//! SCRAM against RFC 7677's SCRAM-SHA-256 example, our own client against our server for both mechanisms,
//! and the failures Kafka's `ScramSaslServer` refuses.

use super::*;

fn cache_with(
    user: &str,
    m: ScramMechanism,
    password: &str,
    salt: &[u8],
    iterations: i32,
) -> Arc<ScramCredentialCache> {
    let salted = m.salted_password(password.as_bytes(), salt, iterations as u32);
    let mut creds = metadata::scram::ScramCredentials::new();
    creds
        .entry(user.to_string())
        .or_default()
        .insert(m.code(), m.credential(&salted, salt, iterations));
    let cache = Arc::new(ScramCredentialCache::new());
    cache.sync(&creds);
    cache
}

#[test]
fn rfc7677_example_exchange() {
    let salt = Base64::decode_vec("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
    let cache = cache_with("user", ScramMechanism::Sha256, "pencil", &salt, 4096);
    let mut s = ScramServer::with_nonce(
        ScramMechanism::Sha256,
        cache,
        "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0".into(),
    );
    let first = s.evaluate(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO").unwrap();
    assert_eq!(
        first,
        SaslStep::Continue(
            b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096".to_vec()
        )
    );
    let last = s
        .evaluate(
            b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
        )
        .unwrap();
    assert_eq!(
        last,
        SaslStep::Complete {
            response: b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=".to_vec(),
            user: "user".into(),
            expires_at_ms: None,
        }
    );
    assert!(matches!(
        s.evaluate(b"again"),
        Err(SaslError::InvalidState(_))
    ));
}

fn exchange(
    m: ScramMechanism,
    cache: Arc<ScramCredentialCache>,
    user: &str,
    password: &str,
) -> Result<String, SaslError> {
    let mut server = ScramServer::new(m, cache);
    let mut client = ScramClient::new(m, user, password);
    let SaslStep::Continue(server_first) = server.evaluate(&client.first())? else {
        panic!("SCRAM completed after one message");
    };
    let client_final = client.answer(&server_first)?;
    match server.evaluate(&client_final)? {
        SaslStep::Complete { response, user, .. } => {
            client.verify(&response)?;
            Ok(user)
        }
        SaslStep::Continue(_) => panic!("SCRAM did not complete"),
    }
}

#[test]
fn our_client_and_server_agree_for_both_mechanisms_and_wrong_passwords_fail() {
    for m in [ScramMechanism::Sha256, ScramMechanism::Sha512] {
        let cache = cache_with("a,b=c", m, "secret", b"salt", 4096);
        assert_eq!(
            exchange(m, cache.clone(), "a,b=c", "secret").unwrap(),
            "a,b=c"
        );
        assert!(matches!(
            exchange(m, cache.clone(), "a,b=c", "wrong"),
            Err(SaslError::InvalidCredentials(_))
        ));
        assert!(matches!(
            exchange(m, cache, "nobody", "secret"),
            Err(SaslError::InvalidCredentials(_))
        ));
    }
    // A credential for the other mechanism does not authenticate this one.
    let cache = cache_with("u", ScramMechanism::Sha256, "pw", b"salt", 4096);
    assert!(exchange(ScramMechanism::Sha512, cache, "u", "pw").is_err());
}

#[test]
fn mismatched_nonce_binding_and_authzid_are_refused() {
    let cache = cache_with("alice", ScramMechanism::Sha256, "pw", b"salt", 4096);
    let m = ScramMechanism::Sha256;
    // The client-final message of one exchange replayed against another: the nonce differs.
    let mut first_server = ScramServer::new(m, cache.clone());
    let mut client = ScramClient::new(m, "alice", "pw");
    let first = client.first();
    let SaslStep::Continue(sf) = first_server.evaluate(&first).unwrap() else {
        panic!()
    };
    let client_final = client.answer(&sf).unwrap();
    let mut other = ScramServer::new(m, cache.clone());
    other.evaluate(&first).unwrap();
    match other.evaluate(&client_final) {
        Err(SaslError::InvalidCredentials(r)) => assert!(r.contains("nonce"), "{r}"),
        e => panic!("{e:?}"),
    }
    // A channel binding other than the GS2 header sent.
    let mut s = ScramServer::new(m, cache.clone());
    s.evaluate(&first).unwrap();
    let tampered = String::from_utf8(client_final.clone())
        .unwrap()
        .replace("c=biws", "c=eSws");
    assert!(matches!(
        s.evaluate(tampered.as_bytes()),
        Err(SaslError::InvalidCredentials(_))
    ));
    // An authorization id other than the user: Kafka's message to the client.
    let mut s = ScramServer::new(m, cache.clone());
    match s.evaluate(b"n,a=bob,n=alice,r=abc") {
        Err(SaslError::Failed(msg)) => assert!(msg.contains("authorization id"), "{msg}"),
        e => panic!("{e:?}"),
    }
    // Channel binding requested, a malformed message, delegation-token auth: refused.
    for bad in [
        &b"p=tls-unique,,n=alice,r=abc"[..],
        b"garbage",
        b"n,,n=alice,r=abc,tokenauth=true",
        b"n,,n=al=ice,r=x",
    ] {
        let mut s = ScramServer::new(m, cache.clone());
        assert!(
            matches!(s.evaluate(bad), Err(SaslError::InvalidCredentials(_))),
            "{bad:?}"
        );
    }
}

#[test]
fn credentials_below_the_minimum_iterations_do_not_authenticate() {
    let cache = cache_with("alice", ScramMechanism::Sha256, "pw", b"salt", 1000);
    assert!(exchange(ScramMechanism::Sha256, cache, "alice", "pw").is_err());
}
