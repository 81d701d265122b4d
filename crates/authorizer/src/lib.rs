//! Kafka's authorization model as values (KIP-11 ACLs, KIP-290 prefixed patterns, KIP-801's
//! StandardAuthorizer): [`acl`] has the bindings and filters with their wire codes, [`standard`] the
//! decision over an indexed ACL set. No I/O and no async: the broker feeds it ACLs from its metadata
//! (the metadata log's `AccessControlEntryRecord`s in a cluster, the topic registry standalone) and asks
//! it per request.

pub mod acl;
pub mod standard;

pub use acl::{
    AccessControlEntry, AclBinding, AclBindingFilter, AclOperation, AclPermissionType, InvalidAcl,
    PatternType, ResourcePattern, ResourceType, CLUSTER_NAME, WILDCARD_HOST, WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
};
pub use standard::{AuthorizationResult, AuthorizerConfig, Requester, StandardAuthorizer};

#[cfg(test)]
mod tests;
