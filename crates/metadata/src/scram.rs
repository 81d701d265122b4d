//! SCRAM credentials as metadata (KIP-554): what a `UserScramCredentialRecord` stores, and the one decision
//! of an AlterUserScramCredentials request — which deletions and upsertions apply and what each user is
//! answered — shared by the controller (cluster) and the broker's local store (standalone).
//!
//! Source: Kafka's `ScramControlManager.alterCredentials` (validation order and messages) and
//! `UserScramCredentialRecord`/`RemoveUserScramCredentialRecord`. The keys are derived from the client's
//! salted password by the broker before a change is decided (RFC 5802: StoredKey = H(HMAC(SaltedPassword,
//! "Client Key")), ServerKey = HMAC(SaltedPassword, "Server Key")), so no salted password reaches the log.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use types::ErrorCode;

/// Kafka's `ScramMechanism` type code of SCRAM-SHA-256.
pub const SCRAM_SHA_256: i8 = 1;
/// Kafka's `ScramMechanism` type code of SCRAM-SHA-512.
pub const SCRAM_SHA_512: i8 = 2;
/// The fewest iterations a credential may have (Kafka's `ScramMechanism.minIterations`, 4096 for both).
pub const MIN_ITERATIONS: i32 = 4096;
/// The most iterations a credential may have (Kafka's `ScramControlManager.MAX_ITERATIONS`).
pub const MAX_ITERATIONS: i32 = 16384;

/// The SASL mechanism name of a SCRAM type code (`None` for a code Kafka does not define).
pub fn mechanism_name(code: i8) -> Option<&'static str> {
    match code {
        SCRAM_SHA_256 => Some("SCRAM-SHA-256"),
        SCRAM_SHA_512 => Some("SCRAM-SHA-512"),
        _ => None,
    }
}

/// One user's credential for one mechanism, as the metadata log stores it (the fields of Kafka's
/// `UserScramCredentialRecord` besides name and mechanism).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScramCredential {
    /// The salt the client chose.
    pub salt: Vec<u8>,
    /// H(ClientKey) (RFC 5802).
    pub stored_key: Vec<u8>,
    /// HMAC(SaltedPassword, "Server Key").
    pub server_key: Vec<u8>,
    /// The PBKDF2 iteration count the salted password was made with.
    pub iterations: i32,
}

/// Keys stay out of logs (as Kafka's `ScramCredentialValue.toString`).
impl std::fmt::Debug for ScramCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ScramCredential([hidden])")
    }
}

/// Every user's credentials: user name → mechanism code → credential.
pub type ScramCredentials = BTreeMap<String, BTreeMap<i8, ScramCredential>>;

/// A deletion of one user's credential for one mechanism (AlterUserScramCredentials' `Deletions`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScramDeletion {
    /// The user name.
    pub name: String,
    /// The mechanism type code.
    pub mechanism: i8,
}

/// An upsertion (AlterUserScramCredentials' `Upsertions`), its keys already derived by the broker.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScramUpsertion {
    /// The user name.
    pub name: String,
    /// The mechanism type code.
    pub mechanism: i8,
    /// The credential (its `iterations` is the request's).
    pub credential: ScramCredential,
}

/// What one user is answered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScramAlterResult {
    /// The user name.
    pub user: String,
    /// The error code (NONE on success).
    pub error_code: ErrorCode,
    /// Kafka's message for the error, if any.
    pub error_message: Option<String>,
}

/// A change the decision makes (one metadata record each in a cluster).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScramChange {
    /// Set `user`'s credential for `mechanism` (`UserScramCredentialRecord`).
    Upsert(ScramUpsertion),
    /// Remove it (`RemoveUserScramCredentialRecord`).
    Delete(ScramDeletion),
}

fn failure(user: &str, code: ErrorCode, message: &str) -> ScramAlterResult {
    ScramAlterResult {
        user: user.to_string(),
        error_code: code,
        error_message: Some(message.to_string()),
    }
}

fn check_name_and_mechanism(name: &str, mechanism: i8) -> Result<(), (ErrorCode, &'static str)> {
    if name.is_empty() {
        return Err((
            ErrorCode::UNACCEPTABLE_CREDENTIAL,
            "Username must not be empty",
        ));
    }
    if mechanism_name(mechanism).is_none() {
        return Err((
            ErrorCode::UNSUPPORTED_SASL_MECHANISM,
            "Unknown SCRAM mechanism",
        ));
    }
    Ok(())
}

/// Decides an AlterUserScramCredentials request against `current`: a user named twice (in either list) gets
/// DUPLICATE_RESOURCE and none of its changes apply; an empty name UNACCEPTABLE_CREDENTIAL; an unknown
/// mechanism UNSUPPORTED_SASL_MECHANISM; iterations outside [`MIN_ITERATIONS`]..=[`MAX_ITERATIONS`]
/// UNACCEPTABLE_CREDENTIAL; deleting a credential that does not exist RESOURCE_NOT_FOUND. Returns the
/// changes (deletions first) and one result per user named (successes first, as Kafka lists them).
pub fn decide_alter(
    current: &ScramCredentials,
    deletions: &[ScramDeletion],
    upsertions: &[ScramUpsertion],
) -> (Vec<ScramChange>, Vec<ScramAlterResult>) {
    let mut errors: BTreeMap<String, ScramAlterResult> = BTreeMap::new();
    let mut deletes: BTreeMap<String, ScramDeletion> = BTreeMap::new();
    let mut upserts: BTreeMap<String, ScramUpsertion> = BTreeMap::new();
    let duplicate = "A user credential cannot be altered twice in the same request";
    for d in deletions {
        if errors.contains_key(&d.name) {
            continue;
        }
        if deletes.remove(&d.name).is_some() {
            errors.insert(
                d.name.clone(),
                failure(&d.name, ErrorCode::DUPLICATE_RESOURCE, duplicate),
            );
            continue;
        }
        let exists = current
            .get(&d.name)
            .is_some_and(|m| m.contains_key(&d.mechanism));
        match check_name_and_mechanism(&d.name, d.mechanism) {
            Err((code, msg)) => {
                errors.insert(d.name.clone(), failure(&d.name, code, msg));
            }
            Ok(()) if !exists => {
                let msg = "Attempt to delete a user credential that does not exist";
                errors.insert(
                    d.name.clone(),
                    failure(&d.name, ErrorCode::RESOURCE_NOT_FOUND, msg),
                );
            }
            Ok(()) => {
                deletes.insert(d.name.clone(), d.clone());
            }
        }
    }
    for u in upsertions {
        if errors.contains_key(&u.name) {
            continue;
        }
        if deletes.remove(&u.name).is_some() || upserts.remove(&u.name).is_some() {
            errors.insert(
                u.name.clone(),
                failure(&u.name, ErrorCode::DUPLICATE_RESOURCE, duplicate),
            );
            continue;
        }
        let iterations = u.credential.iterations;
        let iteration_check = if iterations < MIN_ITERATIONS {
            Err((ErrorCode::UNACCEPTABLE_CREDENTIAL, "Too few iterations"))
        } else if iterations > MAX_ITERATIONS {
            Err((ErrorCode::UNACCEPTABLE_CREDENTIAL, "Too many iterations"))
        } else {
            Ok(())
        };
        let checked = check_name_and_mechanism(&u.name, u.mechanism).and(iteration_check);
        match checked {
            Err((code, msg)) => {
                errors.insert(u.name.clone(), failure(&u.name, code, msg));
            }
            Ok(()) => {
                upserts.insert(u.name.clone(), u.clone());
            }
        }
    }
    let ok = |user: &str| ScramAlterResult {
        user: user.to_string(),
        error_code: ErrorCode::NONE,
        error_message: None,
    };
    let mut changes = Vec::new();
    let mut results = Vec::new();
    for (user, d) in deletes {
        results.push(ok(&user));
        changes.push(ScramChange::Delete(d));
    }
    for (user, u) in upserts {
        results.push(ok(&user));
        changes.push(ScramChange::Upsert(u));
    }
    results.extend(errors.into_values());
    (changes, results)
}

/// Applies `change` to `credentials` (a deletion of an absent credential is a no-op; a user whose last
/// credential goes is removed).
pub fn apply_change(credentials: &mut ScramCredentials, change: &ScramChange) {
    match change {
        ScramChange::Upsert(u) => {
            credentials
                .entry(u.name.clone())
                .or_default()
                .insert(u.mechanism, u.credential.clone());
        }
        ScramChange::Delete(d) => {
            if let Some(m) = credentials.get_mut(&d.name) {
                m.remove(&d.mechanism);
                if m.is_empty() {
                    credentials.remove(&d.name);
                }
            }
        }
    }
}

/// The users a DescribeUserScramCredentials request names more than once (Kafka answers each with
/// DUPLICATE_RESOURCE).
pub fn duplicate_names<'a>(names: impl IntoIterator<Item = &'a str>) -> BTreeSet<&'a str> {
    let mut seen = BTreeSet::new();
    names.into_iter().filter(|n| !seen.insert(*n)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cred(iterations: i32) -> ScramCredential {
        ScramCredential {
            salt: vec![1],
            stored_key: vec![2],
            server_key: vec![3],
            iterations,
        }
    }

    fn up(name: &str, mechanism: i8, iterations: i32) -> ScramUpsertion {
        ScramUpsertion {
            name: name.into(),
            mechanism,
            credential: cred(iterations),
        }
    }

    fn del(name: &str, mechanism: i8) -> ScramDeletion {
        ScramDeletion {
            name: name.into(),
            mechanism,
        }
    }

    fn code_of(results: &[ScramAlterResult], user: &str) -> ErrorCode {
        results.iter().find(|r| r.user == user).unwrap().error_code
    }

    #[test]
    fn validates_as_kafkas_scram_control_manager() {
        let mut current = ScramCredentials::new();
        apply_change(
            &mut current,
            &ScramChange::Upsert(up("carol", SCRAM_SHA_256, 4096)),
        );
        let (changes, results) = decide_alter(
            &current,
            &[
                del("carol", SCRAM_SHA_256),
                del("dave", SCRAM_SHA_512),
                del("x", 9),
            ],
            &[
                up("alice", SCRAM_SHA_512, 8192),
                up("bob", SCRAM_SHA_256, 4095),
                up("eve", SCRAM_SHA_256, 16385),
                up("", SCRAM_SHA_256, 4096),
                up("frank", SCRAM_SHA_256, 4096),
                up("frank", SCRAM_SHA_512, 4096),
            ],
        );
        assert_eq!(code_of(&results, "carol"), ErrorCode::NONE);
        assert_eq!(code_of(&results, "alice"), ErrorCode::NONE);
        assert_eq!(code_of(&results, "dave"), ErrorCode::RESOURCE_NOT_FOUND);
        assert_eq!(
            code_of(&results, "x"),
            ErrorCode::UNSUPPORTED_SASL_MECHANISM
        );
        assert_eq!(code_of(&results, "bob"), ErrorCode::UNACCEPTABLE_CREDENTIAL);
        assert_eq!(code_of(&results, "eve"), ErrorCode::UNACCEPTABLE_CREDENTIAL);
        assert_eq!(code_of(&results, ""), ErrorCode::UNACCEPTABLE_CREDENTIAL);
        assert_eq!(code_of(&results, "frank"), ErrorCode::DUPLICATE_RESOURCE);
        assert_eq!(results.len(), 8);
        assert_eq!(changes.len(), 2);
        for c in &changes {
            apply_change(&mut current, c);
        }
        assert!(!current.contains_key("carol"));
        assert_eq!(current["alice"][&SCRAM_SHA_512].iterations, 8192);
        assert_eq!(
            format!("{:?}", current["alice"][&SCRAM_SHA_512]),
            "ScramCredential([hidden])"
        );
    }

    #[test]
    fn duplicate_describe_names_are_found() {
        let d = duplicate_names(["a", "b", "a", "c", "a"]);
        assert_eq!(d.into_iter().collect::<Vec<_>>(), vec!["a"]);
    }
}
