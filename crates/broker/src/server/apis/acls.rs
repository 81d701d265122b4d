//! DescribeAcls (key 29), CreateAcls (key 30) and DeleteAcls (key 31), v1–3 (KIP-140, KIP-290 pattern types;
//! Kafka 4 removed v0). Kafka's `AclApis`: without an authorizer every entry answers SECURITY_DISABLED;
//! DescribeAcls needs DESCRIBE on the cluster, CreateAcls and DeleteAcls ALTER (else
//! CLUSTER_AUTHORIZATION_FAILED for every entry); invalid bindings and filters answer INVALID_REQUEST.

use std::collections::BTreeMap;

use authorizer::{
    AccessControlEntry, AclBinding, AclBindingFilter, AclOperation, AclPermissionType, PatternType,
    ResourcePattern, ResourceType,
};
use protocol::messages::create_acls_response::AclCreationResult;
use protocol::messages::delete_acls_response::{DeleteAclsFilterResult, DeleteAclsMatchingAcl};
use protocol::messages::describe_acls_response::{AclDescription, DescribeAclsResource};
use protocol::messages::{
    CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse,
    DescribeAclsRequest, DescribeAclsResponse,
};

use super::errors::{security_disabled, ApiError};
use crate::server::context::RequestContext;

/// The refusal every entry of a request gets, if any: no authorizer, or the cluster operation denied.
fn refusal(ctx: &RequestContext, op: AclOperation) -> Option<ApiError> {
    if !ctx.has_authorizer() {
        return Some(security_disabled());
    }
    ctx.authorize_cluster(op).err().map(ApiError::from)
}

/// A DescribeAcls/DeleteAcls filter from its wire fields.
#[allow(clippy::too_many_arguments)]
fn filter(
    resource_type: i8,
    name: Option<String>,
    pattern_type: i8,
    principal: Option<String>,
    host: Option<String>,
    operation: i8,
    permission_type: i8,
) -> AclBindingFilter {
    AclBindingFilter {
        resource_type: ResourceType::from_code(resource_type),
        name,
        pattern_type: PatternType::from_code(pattern_type),
        principal,
        host,
        operation: AclOperation::from_code(operation),
        permission_type: AclPermissionType::from_code(permission_type),
    }
}

/// DescribeAcls: the matching ACLs grouped by resource pattern.
pub fn describe(ctx: &RequestContext, r: DescribeAclsRequest) -> DescribeAclsResponse {
    let fail = |e: ApiError| {
        let (error_code, error_message) = e.into_parts();
        DescribeAclsResponse {
            error_code,
            error_message,
            ..Default::default()
        }
    };
    if let Some(e) = refusal(ctx, AclOperation::Describe) {
        return fail(e);
    }
    let Some(authorizer) = ctx.authorizer() else {
        return fail(security_disabled());
    };
    let f = filter(
        r.resource_type_filter,
        r.resource_name_filter,
        r.pattern_type_filter,
        r.principal_filter,
        r.host_filter,
        r.operation,
        r.permission_type,
    );
    if let Err(e) = f.validate() {
        return fail(ApiError::from(crate::error::AclError::Invalid(e.0)));
    }
    let mut by_pattern: BTreeMap<ResourcePattern, Vec<AccessControlEntry>> = BTreeMap::new();
    for b in authorizer.describe(&f) {
        by_pattern.entry(b.pattern).or_default().push(b.entry);
    }
    DescribeAclsResponse {
        resources: by_pattern
            .into_iter()
            .map(|(p, entries)| DescribeAclsResource {
                resource_type: p.resource_type.code(),
                resource_name: p.name,
                pattern_type: p.pattern_type.code(),
                acls: entries
                    .into_iter()
                    .map(|e| AclDescription {
                        principal: e.principal,
                        host: e.host,
                        operation: e.operation.code(),
                        permission_type: e.permission_type.code(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// CreateAcls: one result per creation, in order.
pub async fn create(ctx: &RequestContext, r: CreateAclsRequest) -> CreateAclsResponse {
    let n = r.creations.len();
    let result = |e: Option<ApiError>| {
        let (error_code, error_message) = e.map_or((0, None), ApiError::into_parts);
        AclCreationResult {
            error_code,
            error_message,
            ..Default::default()
        }
    };
    let authorizer = match (refusal(ctx, AclOperation::Alter), ctx.authorizer()) {
        (None, Some(a)) => a,
        (e, _) => {
            let e = e.unwrap_or_else(security_disabled);
            return CreateAclsResponse {
                results: (0..n).map(|_| result(Some(e.clone()))).collect(),
                ..Default::default()
            };
        }
    };
    let bindings = r
        .creations
        .into_iter()
        .map(|c| AclBinding {
            pattern: ResourcePattern {
                resource_type: ResourceType::from_code(c.resource_type),
                name: c.resource_name,
                pattern_type: PatternType::from_code(c.resource_pattern_type),
            },
            entry: AccessControlEntry {
                principal: c.principal,
                host: c.host,
                operation: AclOperation::from_code(c.operation),
                permission_type: AclPermissionType::from_code(c.permission_type),
            },
        })
        .collect();
    let outcomes = authorizer.create(bindings).await;
    CreateAclsResponse {
        results: outcomes
            .into_iter()
            .map(|o| result(o.err().map(ApiError::from)))
            .collect(),
        ..Default::default()
    }
}

/// DeleteAcls: per filter, the ACLs it deleted.
pub async fn delete(ctx: &RequestContext, r: DeleteAclsRequest) -> DeleteAclsResponse {
    let n = r.filters.len();
    let failed = |e: ApiError| {
        let (error_code, error_message) = e.into_parts();
        DeleteAclsFilterResult {
            error_code,
            error_message,
            ..Default::default()
        }
    };
    let authorizer = match (refusal(ctx, AclOperation::Alter), ctx.authorizer()) {
        (None, Some(a)) => a,
        (e, _) => {
            let e = e.unwrap_or_else(security_disabled);
            return DeleteAclsResponse {
                filter_results: (0..n).map(|_| failed(e.clone())).collect(),
                ..Default::default()
            };
        }
    };
    let filters = r
        .filters
        .into_iter()
        .map(|f| {
            filter(
                f.resource_type_filter,
                f.resource_name_filter,
                f.pattern_type_filter,
                f.principal_filter,
                f.host_filter,
                f.operation,
                f.permission_type,
            )
        })
        .collect();
    let outcomes = authorizer.delete(filters).await;
    DeleteAclsResponse {
        filter_results: outcomes
            .into_iter()
            .map(|o| match o {
                Ok(acls) => DeleteAclsFilterResult {
                    matching_acls: acls.into_iter().map(matching_acl).collect(),
                    ..Default::default()
                },
                Err(e) => failed(ApiError::from(e)),
            })
            .collect(),
        ..Default::default()
    }
}

fn matching_acl(b: AclBinding) -> DeleteAclsMatchingAcl {
    DeleteAclsMatchingAcl {
        resource_type: b.pattern.resource_type.code(),
        resource_name: b.pattern.name,
        pattern_type: b.pattern.pattern_type.code(),
        principal: b.entry.principal,
        host: b.entry.host,
        operation: b.entry.operation.code(),
        permission_type: b.entry.permission_type.code(),
        ..Default::default()
    }
}
