//! The cost of one authorization decision with 10,000 ACLs (issue 14's target: microseconds).

use authorizer::{
    AccessControlEntry, AclBinding, AclOperation, AclPermissionType, AuthorizerConfig, PatternType,
    Requester, ResourcePattern, ResourceType, StandardAuthorizer,
};
use criterion::{criterion_group, criterion_main, Criterion};
use uuid::Uuid;

fn authorizer_with(n: usize) -> StandardAuthorizer {
    let mut a = StandardAuthorizer::new(AuthorizerConfig::default());
    for i in 0..n {
        let pattern_type = if i % 2 == 0 {
            PatternType::Literal
        } else {
            PatternType::Prefixed
        };
        let binding = AclBinding {
            pattern: ResourcePattern {
                resource_type: ResourceType::Topic,
                name: format!("team-{}-topic-{i}", i % 100),
                pattern_type,
            },
            entry: AccessControlEntry {
                principal: format!("User:user-{}", i % 500),
                host: "*".into(),
                operation: AclOperation::Write,
                permission_type: AclPermissionType::Allow,
            },
        };
        a.add(Uuid::from_u128(i as u128 + 1), binding);
    }
    a
}

fn bench(c: &mut Criterion) {
    let a = authorizer_with(10_000);
    let who = Requester {
        principal: "User:user-42",
        host: "127.0.0.1",
    };
    c.bench_function("authorize_10k_acls_literal_hit", |b| {
        b.iter(|| {
            a.authorize(
                &who,
                AclOperation::Write,
                ResourceType::Topic,
                "team-42-topic-42",
            )
        })
    });
    c.bench_function("authorize_10k_acls_miss", |b| {
        b.iter(|| {
            a.authorize(
                &who,
                AclOperation::Read,
                ResourceType::Topic,
                "team-42-topic-4299-x",
            )
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
