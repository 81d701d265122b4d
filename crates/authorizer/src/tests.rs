//! The StandardAuthorizer rules, one test per rule, plus filters, validation and a timing with 10,000 ACLs.

use std::time::Instant;

use uuid::Uuid;

use crate::acl::*;
use crate::standard::*;

use AclOperation as Op;
use AclPermissionType as Perm;
use PatternType as Pt;
use ResourceType as Rt;

fn acl(rt: Rt, name: &str, pt: Pt, principal: &str, host: &str, op: Op, perm: Perm) -> AclBinding {
    AclBinding {
        pattern: ResourcePattern {
            resource_type: rt,
            name: name.into(),
            pattern_type: pt,
        },
        entry: AccessControlEntry {
            principal: principal.into(),
            host: host.into(),
            operation: op,
            permission_type: perm,
        },
    }
}

fn topic_allow(name: &str, pt: Pt, principal: &str, op: Op) -> AclBinding {
    acl(Rt::Topic, name, pt, principal, "*", op, Perm::Allow)
}

fn topic_deny(name: &str, pt: Pt, principal: &str, op: Op) -> AclBinding {
    acl(Rt::Topic, name, pt, principal, "*", op, Perm::Deny)
}

fn with(acls: Vec<AclBinding>) -> StandardAuthorizer {
    let mut a = StandardAuthorizer::new(AuthorizerConfig::default());
    for (i, b) in acls.into_iter().enumerate() {
        a.add(Uuid::from_u128(i as u128 + 1), b);
    }
    a
}

const ALICE: Requester<'static> = Requester {
    principal: "User:alice",
    host: "10.0.0.1",
};
const BOB: Requester<'static> = Requester {
    principal: "User:bob",
    host: "10.0.0.2",
};

fn allowed(a: &StandardAuthorizer, who: &Requester<'_>, op: Op, rt: Rt, name: &str) -> bool {
    a.is_allowed(who, op, rt, name)
}

#[test]
fn no_acl_denies_by_default_and_allows_with_allow_everyone() {
    let a = with(vec![]);
    assert!(!allowed(&a, &ALICE, Op::Read, Rt::Topic, "t"));
    let cfg = AuthorizerConfig {
        allow_everyone_if_no_acl_found: true,
        ..AuthorizerConfig::default()
    };
    let mut a = StandardAuthorizer::new(cfg);
    assert!(allowed(&a, &ALICE, Op::Read, Rt::Topic, "t"));
    // An ACL on the resource for someone else: the resource has ACLs, so alice is denied.
    a.add(
        Uuid::from_u128(1),
        topic_allow("t", Pt::Literal, "User:bob", Op::Read),
    );
    assert!(!allowed(&a, &ALICE, Op::Read, Rt::Topic, "t"));
    assert!(allowed(&a, &ALICE, Op::Read, Rt::Topic, "other"));
    // A prefixed or wildcard ACL also counts as "an ACL for the resource".
    a.add(
        Uuid::from_u128(2),
        topic_allow("pre", Pt::Prefixed, "User:bob", Op::Read),
    );
    assert!(!allowed(&a, &ALICE, Op::Read, Rt::Topic, "prefix-topic"));
    a.add(
        Uuid::from_u128(3),
        topic_allow("*", Pt::Literal, "User:bob", Op::Write),
    );
    assert!(!allowed(&a, &ALICE, Op::Read, Rt::Topic, "other"));
}

#[test]
fn literal_allow_matches_only_its_name_principal_and_operation() {
    let a = with(vec![topic_allow("t", Pt::Literal, "User:alice", Op::Read)]);
    assert!(allowed(&a, &ALICE, Op::Read, Rt::Topic, "t"));
    assert!(!allowed(&a, &ALICE, Op::Write, Rt::Topic, "t"));
    assert!(!allowed(&a, &ALICE, Op::Read, Rt::Topic, "t2"));
    assert!(!allowed(&a, &ALICE, Op::Read, Rt::Group, "t"));
    assert!(!allowed(&a, &BOB, Op::Read, Rt::Topic, "t"));
}

#[test]
fn deny_wins_over_allow_wherever_it_comes_from() {
    let a = with(vec![
        topic_allow("t", Pt::Literal, "User:alice", Op::All),
        topic_deny("t", Pt::Literal, "User:alice", Op::Write),
    ]);
    assert!(allowed(&a, &ALICE, Op::Read, Rt::Topic, "t"));
    assert!(!allowed(&a, &ALICE, Op::Write, Rt::Topic, "t"));
    // DENY through a prefix, the wildcard resource and the wildcard principal.
    for deny in [
        topic_deny("t", Pt::Prefixed, "User:alice", Op::Read),
        topic_deny("*", Pt::Literal, "User:alice", Op::Read),
        topic_deny("t", Pt::Literal, "User:*", Op::Read),
        topic_deny("t", Pt::Literal, "User:alice", Op::All),
    ] {
        let a = with(vec![
            topic_allow("t", Pt::Literal, "User:alice", Op::Read),
            deny.clone(),
        ]);
        assert!(!allowed(&a, &ALICE, Op::Read, Rt::Topic, "t"), "{deny:?}");
    }
}

#[test]
fn implied_operations_come_from_allow_only() {
    for op in [Op::Read, Op::Write, Op::Delete, Op::Alter, Op::Describe] {
        let a = with(vec![topic_allow("t", Pt::Literal, "User:alice", op)]);
        assert!(allowed(&a, &ALICE, Op::Describe, Rt::Topic, "t"), "{op}");
    }
    for op in [Op::Create, Op::DescribeConfigs, Op::AlterConfigs] {
        let a = with(vec![topic_allow("t", Pt::Literal, "User:alice", op)]);
        assert!(!allowed(&a, &ALICE, Op::Describe, Rt::Topic, "t"), "{op}");
    }
    let a = with(vec![topic_allow(
        "t",
        Pt::Literal,
        "User:alice",
        Op::AlterConfigs,
    )]);
    assert!(allowed(&a, &ALICE, Op::DescribeConfigs, Rt::Topic, "t"));
    assert!(!allowed(&a, &ALICE, Op::Alter, Rt::Topic, "t"));
    // READ does not imply WRITE; ALL implies everything.
    let a = with(vec![topic_allow("t", Pt::Literal, "User:alice", Op::Read)]);
    assert!(!allowed(&a, &ALICE, Op::Write, Rt::Topic, "t"));
    let a = with(vec![topic_allow("t", Pt::Literal, "User:alice", Op::All)]);
    for op in AclOperation::supported_by(Rt::Topic) {
        assert!(allowed(&a, &ALICE, *op, Rt::Topic, "t"), "{op}");
    }
    // A DENY of READ does not deny DESCRIBE.
    let a = with(vec![
        topic_allow("t", Pt::Literal, "User:alice", Op::Describe),
        topic_deny("t", Pt::Literal, "User:alice", Op::Read),
    ]);
    assert!(allowed(&a, &ALICE, Op::Describe, Rt::Topic, "t"));
    assert!(!allowed(&a, &ALICE, Op::Read, Rt::Topic, "t"));
}

#[test]
fn prefixed_patterns_match_names_starting_with_them() {
    let a = with(vec![topic_allow(
        "foo",
        Pt::Prefixed,
        "User:alice",
        Op::Read,
    )]);
    assert!(allowed(&a, &ALICE, Op::Read, Rt::Topic, "foo"));
    assert!(allowed(&a, &ALICE, Op::Read, Rt::Topic, "foobar"));
    assert!(!allowed(&a, &ALICE, Op::Read, Rt::Topic, "fo"));
    assert!(!allowed(&a, &ALICE, Op::Read, Rt::Topic, "xfoo"));
    // A LITERAL that is a prefix of the name does not match it.
    let a = with(vec![topic_allow(
        "foo",
        Pt::Literal,
        "User:alice",
        Op::Read,
    )]);
    assert!(!allowed(&a, &ALICE, Op::Read, Rt::Topic, "foobar"));
    // Several prefixes: the longest allows, a shorter one denies -> denied.
    let a = with(vec![
        topic_allow("foob", Pt::Prefixed, "User:alice", Op::Read),
        topic_deny("f", Pt::Prefixed, "User:alice", Op::Read),
    ]);
    assert!(!allowed(&a, &ALICE, Op::Read, Rt::Topic, "foobar"));
    // Multi-byte names: a prefix length inside a character is skipped, not a panic.
    let a = with(vec![topic_allow("é", Pt::Prefixed, "User:alice", Op::Read)]);
    assert!(allowed(&a, &ALICE, Op::Read, Rt::Topic, "été"));
    let a = with(vec![topic_allow("a", Pt::Prefixed, "User:alice", Op::Read)]);
    assert!(!allowed(&a, &ALICE, Op::Read, Rt::Topic, "é"));
}

#[test]
fn wildcards_resource_principal_and_host() {
    let a = with(vec![topic_allow("*", Pt::Literal, "User:*", Op::Write)]);
    assert!(allowed(&a, &ALICE, Op::Write, Rt::Topic, "anything"));
    assert!(allowed(&a, &BOB, Op::Write, Rt::Topic, "x"));
    // "*" as a PREFIXED name is a literal star prefix, not a wildcard.
    let a = with(vec![topic_allow("*", Pt::Prefixed, "User:*", Op::Write)]);
    assert!(!allowed(&a, &ALICE, Op::Write, Rt::Topic, "anything"));
    assert!(allowed(&a, &ALICE, Op::Write, Rt::Topic, "*x"));
    // Hosts: an exact address or "*".
    let a = with(vec![acl(
        Rt::Topic,
        "t",
        Pt::Literal,
        "User:alice",
        "10.0.0.1",
        Op::Read,
        Perm::Allow,
    )]);
    assert!(allowed(&a, &ALICE, Op::Read, Rt::Topic, "t"));
    let elsewhere = Requester {
        principal: "User:alice",
        host: "10.0.0.9",
    };
    assert!(!allowed(&a, &elsewhere, Op::Read, Rt::Topic, "t"));
    // "User:*" matches a principal of any type, as Kafka's `matchingPrincipals` always adds it.
    let a = with(vec![topic_allow("t", Pt::Literal, "User:*", Op::Read)]);
    let group_principal = Requester {
        principal: "Group:admins",
        host: "10.0.0.1",
    };
    assert!(allowed(&a, &group_principal, Op::Read, Rt::Topic, "t"));
}

#[test]
fn super_users_are_allowed_everything_even_against_deny() {
    let cfg = AuthorizerConfig {
        super_users: AuthorizerConfig::parse_super_users(" User:alice ; User:carol;;"),
        ..AuthorizerConfig::default()
    };
    assert_eq!(cfg.super_users.len(), 2);
    let mut a = StandardAuthorizer::new(cfg);
    a.add(
        Uuid::from_u128(1),
        topic_deny("t", Pt::Literal, "User:alice", Op::All),
    );
    assert!(allowed(&a, &ALICE, Op::Read, Rt::Topic, "t"));
    assert!(allowed(
        &a,
        &ALICE,
        Op::ClusterAction,
        Rt::Cluster,
        CLUSTER_NAME
    ));
    assert!(!allowed(&a, &BOB, Op::Read, Rt::Topic, "t"));
}

#[test]
fn remove_and_replace_keep_the_index_consistent() {
    let mut a = with(vec![
        topic_allow("foo", Pt::Prefixed, "User:alice", Op::Read),
        topic_allow("fo", Pt::Prefixed, "User:alice", Op::Read),
    ]);
    assert_eq!(a.len(), 2);
    assert!(a.remove(Uuid::from_u128(1)).is_some());
    assert!(a.remove(Uuid::from_u128(1)).is_none());
    assert!(allowed(&a, &ALICE, Op::Read, Rt::Topic, "foobar"));
    a.remove(Uuid::from_u128(2));
    assert!(a.is_empty());
    assert!(!allowed(&a, &ALICE, Op::Read, Rt::Topic, "foobar"));
    let b = topic_allow("t", Pt::Literal, "User:alice", Op::Read);
    a.add(Uuid::from_u128(9), b.clone());
    assert_eq!(a.find(&b), Some(Uuid::from_u128(9)));
    a.add(
        Uuid::from_u128(9),
        topic_allow("u", Pt::Literal, "User:alice", Op::Read),
    );
    assert_eq!(a.find(&b), None);
    assert_eq!(a.len(), 1);
}

#[test]
fn filters_select_as_kafka_resource_pattern_filter() {
    let acls = vec![
        topic_allow("foo", Pt::Literal, "User:alice", Op::Read),
        topic_allow("fo", Pt::Prefixed, "User:alice", Op::Read),
        topic_allow("*", Pt::Literal, "User:bob", Op::Write),
        acl(
            Rt::Group,
            "foo",
            Pt::Literal,
            "User:alice",
            "*",
            Op::Read,
            Perm::Deny,
        ),
    ];
    let a = with(acls);
    let f = |rt, name: Option<&str>, pt| AclBindingFilter {
        resource_type: rt,
        name: name.map(str::to_string),
        pattern_type: pt,
        ..AclBindingFilter::ANY
    };
    assert_eq!(a.acls(&AclBindingFilter::ANY).len(), 4);
    assert_eq!(a.acls(&f(Rt::Topic, None, Pt::Any)).len(), 3);
    assert_eq!(a.acls(&f(Rt::Any, Some("foo"), Pt::Any)).len(), 2);
    assert_eq!(a.acls(&f(Rt::Topic, Some("foo"), Pt::Literal)).len(), 1);
    assert_eq!(a.acls(&f(Rt::Topic, None, Pt::Prefixed)).len(), 1);
    // MATCH: every pattern that applies to topic "foo": the literal, the prefix "fo" and "*".
    assert_eq!(a.acls(&f(Rt::Topic, Some("foo"), Pt::Match)).len(), 3);
    assert_eq!(a.acls(&f(Rt::Topic, Some("bar"), Pt::Match)).len(), 1);
    let by_entry = AclBindingFilter {
        principal: Some("User:alice".into()),
        permission_type: Perm::Deny,
        ..AclBindingFilter::ANY
    };
    assert_eq!(a.acls(&by_entry).len(), 1);
    let by_op = AclBindingFilter {
        operation: Op::Write,
        host: Some("*".into()),
        ..AclBindingFilter::ANY
    };
    assert_eq!(a.acls(&by_op).len(), 1);
    assert!(f(Rt::Unknown, None, Pt::Any).validate().is_err());
    assert!(f(Rt::Topic, None, Pt::Unknown).validate().is_err());
    let unknown_op = AclBindingFilter {
        operation: Op::Unknown,
        ..AclBindingFilter::ANY
    };
    assert!(unknown_op.validate().is_err());
    assert!(AclBindingFilter::ANY.validate().is_ok());
}

#[test]
fn new_bindings_are_validated_as_kafka() {
    let ok = topic_allow("t", Pt::Literal, "User:alice", Op::Read);
    assert!(ok.validate().is_ok());
    let mut b = ok.clone();
    b.pattern.pattern_type = Pt::Match;
    assert!(b.validate().unwrap_err().0.contains("patternType"));
    let mut b = ok.clone();
    b.pattern.resource_type = Rt::Any;
    assert!(b.validate().is_err());
    let mut b = ok.clone();
    b.entry.operation = Op::Any;
    assert!(b.validate().unwrap_err().0.contains("operation"));
    let mut b = ok.clone();
    b.entry.permission_type = Perm::Unknown;
    assert!(b.validate().is_err());
    let mut b = ok.clone();
    b.pattern.name = String::new();
    assert!(b.validate().is_err());
    let mut b = ok.clone();
    b.entry.principal = "alice".into();
    assert!(b.validate().unwrap_err().0.contains("no colon"));
    let c = acl(
        Rt::Cluster,
        "x",
        Pt::Literal,
        "User:a",
        "*",
        Op::Alter,
        Perm::Allow,
    );
    assert!(c.validate().unwrap_err().0.contains("kafka-cluster"));
    let c = acl(
        Rt::Cluster,
        CLUSTER_NAME,
        Pt::Literal,
        "User:a",
        "*",
        Op::Alter,
        Perm::Allow,
    );
    assert!(c.validate().is_ok());
}

#[test]
fn wire_codes_round_trip_and_unknown_codes_are_unknown() {
    for code in 0..=7 {
        assert_eq!(ResourceType::from_code(code).code(), code);
    }
    for code in 0..=15 {
        assert_eq!(AclOperation::from_code(code).code(), code);
    }
    assert_eq!(ResourceType::from_code(99), ResourceType::Unknown);
    assert_eq!(PatternType::from_code(-1), PatternType::Unknown);
    assert_eq!(AclPermissionType::from_code(3), AclPermissionType::Allow);
    assert_eq!(AclOperation::DescribeConfigs.name(), "DESCRIBE_CONFIGS");
}

#[test]
fn authorize_any_follows_kip_679() {
    // No ACL for alice: denied; WRITE on one topic: allowed; unless a DENY on "*" or on its prefix.
    let a = with(vec![]);
    assert_eq!(
        a.authorize_any(&ALICE, Op::Write, Rt::Topic),
        AuthorizationResult::Denied
    );
    let a = with(vec![topic_allow("t", Pt::Literal, "User:alice", Op::Write)]);
    assert_eq!(
        a.authorize_any(&ALICE, Op::Write, Rt::Topic),
        AuthorizationResult::Allowed
    );
    assert_eq!(
        a.authorize_any(&BOB, Op::Write, Rt::Topic),
        AuthorizationResult::Denied
    );
    let a = with(vec![
        topic_allow("t", Pt::Literal, "User:alice", Op::Write),
        topic_deny("*", Pt::Literal, "User:alice", Op::Write),
    ]);
    assert_eq!(
        a.authorize_any(&ALICE, Op::Write, Rt::Topic),
        AuthorizationResult::Denied
    );
    let a = with(vec![
        topic_allow("tx", Pt::Prefixed, "User:alice", Op::Write),
        topic_deny("t", Pt::Prefixed, "User:alice", Op::Write),
    ]);
    assert_eq!(
        a.authorize_any(&ALICE, Op::Write, Rt::Topic),
        AuthorizationResult::Denied
    );
    let cfg = AuthorizerConfig {
        allow_everyone_if_no_acl_found: true,
        ..AuthorizerConfig::default()
    };
    let a = StandardAuthorizer::new(cfg);
    assert_eq!(
        a.authorize_any(&ALICE, Op::Write, Rt::Topic),
        AuthorizationResult::Allowed
    );
}

#[test]
fn authorized_operations_sets_one_bit_per_allowed_operation() {
    let a = with(vec![topic_allow("t", Pt::Literal, "User:alice", Op::Read)]);
    let bits = a.authorized_operations(&ALICE, Rt::Topic, "t");
    assert_eq!(bits, (1 << Op::Read.code()) | (1 << Op::Describe.code()));
    assert_eq!(a.authorized_operations(&BOB, Rt::Topic, "t"), 0);
}

/// With 10,000 ACLs (half LITERAL, half PREFIXED, 500 principals) one decision costs microseconds: the index
/// does one lookup per distinct prefix length. Prints the measured mean; asserts a generous bound only.
#[test]
fn ten_thousand_acls_decide_in_microseconds() {
    let mut a = StandardAuthorizer::new(AuthorizerConfig::default());
    for i in 0..10_000u32 {
        let pt = if i % 2 == 0 {
            Pt::Literal
        } else {
            Pt::Prefixed
        };
        let name = format!("team-{}-topic-{i}", i % 100);
        let principal = format!("User:user-{}", i % 500);
        a.add(
            Uuid::from_u128(u128::from(i) + 1),
            topic_allow(&name, pt, &principal, Op::Write),
        );
    }
    let who = Requester {
        principal: "User:user-42",
        host: "127.0.0.1",
    };
    assert!(a.is_allowed(&who, Op::Write, Rt::Topic, "team-42-topic-42"));
    assert!(!a.is_allowed(&who, Op::Write, Rt::Topic, "team-43-topic-43"));
    let rounds = 100_000u32;
    let start = Instant::now();
    let mut allowed_count = 0u32;
    for i in 0..rounds {
        let name = if i % 2 == 0 {
            "team-42-topic-42"
        } else {
            "team-7-topic-4299-x"
        };
        allowed_count += u32::from(a.is_allowed(&who, Op::Write, Rt::Topic, name));
    }
    let per = start.elapsed() / rounds;
    println!("authorize with 10,000 ACLs: {per:?} per decision ({allowed_count} allowed)");
    assert!(per.as_micros() < 200, "{per:?} per decision");
}
