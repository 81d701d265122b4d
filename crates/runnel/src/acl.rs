//! `runnel acl create|list|delete`: ACLs through CreateAcls, DescribeAcls and DeleteAcls (v3, KIP-140 and
//! KIP-290 pattern types) with our own codec — librdkafka's ACL calls are not in rust-rdkafka. Kafka's
//! `kafka-acls.sh` does the same with `--add`, `--list` and `--remove`.

use anyhow::bail;
use authorizer::{
    AclOperation, AclPermissionType, PatternType, ResourceType, CLUSTER_NAME, WILDCARD_HOST,
};
use clap::Subcommand;
use protocol::messages::create_acls_request::AclCreation;
use protocol::messages::delete_acls_request::DeleteAclsFilter;
use protocol::messages::{CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest};
use serde_json::json;

use crate::client::{check, print_json, print_table, protocol_words, ConnArgs};
use crate::wire::{call_api, Wire};

/// `runnel acl ...`
#[derive(clap::Args, Debug)]
pub struct AclArgs {
    #[command(flatten)]
    conn: ConnArgs,
    #[command(subcommand)]
    command: AclCommand,
}

/// Which resource an ACL is about, and how its name matches.
#[derive(clap::Args, Debug, Clone)]
struct Resource {
    /// A topic name (or prefix with --prefixed; `*` = every topic).
    #[arg(long, group = "resource")]
    topic: Option<String>,
    /// A consumer group id (or prefix).
    #[arg(long, group = "resource")]
    group: Option<String>,
    /// A transactional id (or prefix).
    #[arg(long, group = "resource")]
    transactional_id: Option<String>,
    /// The cluster itself (cluster-level operations: CREATE, ALTER, DESCRIBE, ALTER_CONFIGS, ...).
    #[arg(long, group = "resource")]
    cluster: bool,
    /// The name is a prefix (PREFIXED pattern) instead of a literal name.
    #[arg(long)]
    prefixed: bool,
}

#[derive(Subcommand, Debug)]
enum AclCommand {
    /// Add an ACL: PRINCIPAL may (or with --deny may not) do OPERATION on the resource from HOST.
    Create {
        #[command(flatten)]
        resource: Resource,
        /// The principal, e.g. `User:alice` (`User:*` = everyone).
        #[arg(long)]
        principal: String,
        /// The operation: READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS,
        /// ALTER_CONFIGS, IDEMPOTENT_WRITE or ALL (repeatable).
        #[arg(long = "operation", required = true)]
        operations: Vec<String>,
        /// The client host the ACL applies to (`*` = any).
        #[arg(long, default_value = WILDCARD_HOST)]
        host: String,
        /// A DENY ACL (DENY wins over ALLOW).
        #[arg(long)]
        deny: bool,
    },
    /// List ACLs, optionally only those of a resource and/or principal.
    List {
        #[command(flatten)]
        resource: Resource,
        /// Only ACLs of this principal.
        #[arg(long)]
        principal: Option<String>,
    },
    /// Delete the ACLs matching a resource (required), and optionally a principal, operation and host.
    Delete {
        #[command(flatten)]
        resource: Resource,
        /// Only ACLs of this principal.
        #[arg(long)]
        principal: Option<String>,
        /// Only ACLs of this operation.
        #[arg(long)]
        operation: Option<String>,
        /// Only ACLs of this host.
        #[arg(long)]
        host: Option<String>,
    },
}

/// Runs an `acl` subcommand.
pub fn run(args: AclArgs) -> anyhow::Result<()> {
    let conn = &args.conn;
    match args.command {
        AclCommand::Create {
            resource,
            principal,
            operations,
            host,
            deny,
        } => create(conn, &resource, &principal, &operations, &host, deny),
        AclCommand::List {
            resource,
            principal,
        } => list(conn, &resource, principal),
        AclCommand::Delete {
            resource,
            principal,
            operation,
            host,
        } => delete(conn, &resource, principal, operation, host),
    }
}

impl Resource {
    /// (type, name) of the named resource, `None` when none was named.
    fn named(&self) -> Option<(ResourceType, String)> {
        let pick = |t, n: &Option<String>| n.clone().map(|n| (t, n));
        pick(ResourceType::Topic, &self.topic)
            .or_else(|| pick(ResourceType::Group, &self.group))
            .or_else(|| pick(ResourceType::TransactionalId, &self.transactional_id))
            .or_else(|| {
                self.cluster
                    .then(|| (ResourceType::Cluster, CLUSTER_NAME.to_string()))
            })
    }

    fn pattern(&self) -> PatternType {
        if self.prefixed {
            PatternType::Prefixed
        } else {
            PatternType::Literal
        }
    }
}

/// An operation by Kafka's name, case-insensitive (`read`, `DESCRIBE_CONFIGS`, `describe-configs`).
fn operation(name: &str) -> anyhow::Result<AclOperation> {
    let wanted = name.to_ascii_uppercase().replace('-', "_");
    (2..=14)
        .map(AclOperation::from_code)
        .find(|op| op.name() == wanted)
        .ok_or_else(|| anyhow::anyhow!("unknown operation {name:?}"))
}

fn create(
    conn: &ConnArgs,
    resource: &Resource,
    principal: &str,
    operations: &[String],
    host: &str,
    deny: bool,
) -> anyhow::Result<()> {
    let Some((resource_type, name)) = resource.named() else {
        bail!("name the resource: --topic, --group, --transactional-id or --cluster");
    };
    let permission = if deny {
        AclPermissionType::Deny
    } else {
        AclPermissionType::Allow
    };
    let creations = operations
        .iter()
        .map(|op| {
            Ok(AclCreation {
                resource_type: resource_type.code(),
                resource_name: name.clone(),
                resource_pattern_type: resource.pattern().code(),
                principal: principal.to_string(),
                host: host.to_string(),
                operation: operation(op)?.code(),
                permission_type: permission.code(),
                ..Default::default()
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut wire = Wire::connect_any(conn)?;
    let request = CreateAclsRequest {
        creations,
        ..Default::default()
    };
    let resp = call_api!(wire, CreateAcls, request, 3);
    let mut failed = Vec::new();
    for (op, r) in operations.iter().zip(&resp.results) {
        if r.error_code != 0 {
            failed.push(format!(
                "{op}: {}",
                protocol_words(r.error_code, r.error_message.as_deref())
            ));
        }
    }
    if !failed.is_empty() {
        bail!("creating ACLs failed: {}", failed.join("; "));
    }
    if conn.json {
        print_json(&json!({"created": operations.len()}));
    } else {
        println!(
            "created {} ACL(s) on {resource_type} '{name}'",
            operations.len()
        );
    }
    Ok(())
}

fn list(conn: &ConnArgs, resource: &Resource, principal: Option<String>) -> anyhow::Result<()> {
    let (resource_type, name) = resource
        .named()
        .map_or((ResourceType::Any, None), |(t, n)| (t, Some(n)));
    let pattern = if resource.named().is_some() {
        resource.pattern()
    } else {
        PatternType::Any
    };
    let request = DescribeAclsRequest {
        resource_type_filter: resource_type.code(),
        resource_name_filter: name,
        pattern_type_filter: pattern.code(),
        principal_filter: principal,
        host_filter: None,
        operation: AclOperation::Any.code(),
        permission_type: AclPermissionType::Any.code(),
        ..Default::default()
    };
    let mut wire = Wire::connect_any(conn)?;
    let resp = call_api!(wire, DescribeAcls, request, 3);
    check(
        resp.error_code,
        resp.error_message.as_deref(),
        "listing ACLs",
    )?;
    let mut rows = Vec::new();
    for r in &resp.resources {
        for a in &r.acls {
            rows.push(vec![
                ResourceType::from_code(r.resource_type).to_string(),
                r.resource_name.clone(),
                PatternType::from_code(r.pattern_type).to_string(),
                a.principal.clone(),
                a.host.clone(),
                AclOperation::from_code(a.operation).to_string(),
                AclPermissionType::from_code(a.permission_type).to_string(),
            ]);
        }
    }
    if conn.json {
        let acls: Vec<_> = rows
            .iter()
            .map(|r| {
                json!({"resource_type": r[0], "name": r[1], "pattern": r[2], "principal": r[3],
                            "host": r[4], "operation": r[5], "permission": r[6]})
            })
            .collect();
        print_json(&json!(acls));
    } else {
        print_table(
            &[
                "RESOURCE",
                "NAME",
                "PATTERN",
                "PRINCIPAL",
                "HOST",
                "OPERATION",
                "PERMISSION",
            ],
            &rows,
        );
    }
    Ok(())
}

fn delete(
    conn: &ConnArgs,
    resource: &Resource,
    principal: Option<String>,
    op: Option<String>,
    host: Option<String>,
) -> anyhow::Result<()> {
    let Some((resource_type, name)) = resource.named() else {
        bail!("name the resource whose ACLs to delete: --topic, --group, --transactional-id or --cluster");
    };
    let operation = match op {
        Some(op) => operation(&op)?,
        None => AclOperation::Any,
    };
    let filter = DeleteAclsFilter {
        resource_type_filter: resource_type.code(),
        resource_name_filter: Some(name.clone()),
        pattern_type_filter: resource.pattern().code(),
        principal_filter: principal,
        host_filter: host,
        operation: operation.code(),
        permission_type: AclPermissionType::Any.code(),
        ..Default::default()
    };
    let mut wire = Wire::connect_any(conn)?;
    let request = DeleteAclsRequest {
        filters: vec![filter],
        ..Default::default()
    };
    let resp = call_api!(wire, DeleteAcls, request, 3);
    let Some(r) = resp.filter_results.first() else {
        bail!("DeleteAcls answered no result");
    };
    check(r.error_code, r.error_message.as_deref(), "deleting ACLs")?;
    let n = r.matching_acls.len();
    if conn.json {
        print_json(&json!({"deleted": n}));
    } else {
        println!("deleted {n} ACL(s) on {resource_type} '{name}'");
    }
    Ok(())
}
