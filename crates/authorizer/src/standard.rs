//! [`StandardAuthorizer`]: Kafka's `org.apache.kafka.metadata.authorizer.StandardAuthorizer` decision over an
//! indexed ACL set.
//!
//! The rules (Kafka's `StandardAuthorizerData.authorize`/`findAclRule`/`findResult`):
//! 1. a principal named in `super.users` is allowed everything;
//! 2. the ACLs that apply to a resource are its type's LITERAL ACLs of the same name, the LITERAL `*` ACLs and
//!    the PREFIXED ACLs whose name is a prefix of the resource's name;
//! 3. of those, an entry matches when its principal is the request's or `User:*`, its host the client's or
//!    `*`, and its operation the requested one (an ALLOW for ALL, READ/WRITE/DELETE/ALTER → DESCRIBE,
//!    ALTER_CONFIGS → DESCRIBE_CONFIGS also match; a DENY matches only its own operation or ALL);
//! 4. a matching DENY wins; else a matching ALLOW allows; else, if any ACL applies to the resource at all,
//!    denied; else `allow.everyone.if.no.acl.found` decides (default false: denied).
//!
//! The index keeps, per resource type, LITERAL ACLs by name and PREFIXED ACLs by prefix together with the
//! set of prefix lengths in use, so a decision costs one hash lookup per distinct prefix length no longer
//! than the name plus the LITERAL and `*` lookups, whatever the number of ACLs (Kafka walks a sorted set).

use std::collections::{BTreeMap, HashMap, HashSet};

use uuid::Uuid;

use crate::acl::{
    AccessControlEntry, AclBinding, AclBindingFilter, AclOperation, AclPermissionType, PatternType,
    ResourceType, WILDCARD_HOST, WILDCARD_PRINCIPAL, WILDCARD_RESOURCE,
};

/// The outcome of [`StandardAuthorizer::authorize`] (Kafka's `AuthorizationResult`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthorizationResult {
    /// The action may proceed.
    Allowed,
    /// The action is refused.
    Denied,
}

/// Who asks: the principal as `type:name` and the client's IP address as Kafka prints it (`127.0.0.1`).
#[derive(Debug, Clone, Copy)]
pub struct Requester<'a> {
    /// `User:alice`.
    pub principal: &'a str,
    /// The client address (`InetAddress.getHostAddress()`), compared with the entries' hosts.
    pub host: &'a str,
}

/// The broker's authorizer settings (`super.users`, `allow.everyone.if.no.acl.found`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthorizerConfig {
    /// Principals (`User:admin`) allowed everything.
    pub super_users: HashSet<String>,
    /// What a resource with no ACL at all gets (Kafka's default: denied).
    pub allow_everyone_if_no_acl_found: bool,
}

impl AuthorizerConfig {
    /// Parses `super.users` as Kafka does: principals separated by `;`, blanks trimmed and dropped.
    pub fn parse_super_users(value: &str) -> HashSet<String> {
        value
            .split(';')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    }
}

type Entries = Vec<(Uuid, AccessControlEntry)>;

#[derive(Debug, Default, Clone)]
struct TypeIndex {
    literal: HashMap<String, Entries>,
    prefixed: HashMap<String, Entries>,
    /// Byte length of a prefix in use → how many prefixes of that length exist.
    prefix_lens: BTreeMap<usize, usize>,
}

/// What the scan of the ACLs that apply to one resource found.
#[derive(Default)]
struct Scan {
    has_resource_acls: bool,
    allow: bool,
    deny: bool,
}

impl Scan {
    fn check(&mut self, entries: &Entries, who: &Requester<'_>, op: AclOperation) {
        for (_, e) in entries {
            self.has_resource_acls = true;
            if e.principal != who.principal && e.principal != WILDCARD_PRINCIPAL {
                continue;
            }
            if e.host != WILDCARD_HOST && e.host != who.host {
                continue;
            }
            match e.permission_type {
                AclPermissionType::Deny
                    if e.operation == AclOperation::All || e.operation == op =>
                {
                    self.deny = true;
                    return;
                }
                AclPermissionType::Allow if e.operation.allow_implies(op) => self.allow = true,
                _ => {}
            }
        }
    }
}

/// Kafka's StandardAuthorizer: the ACL set by id, indexed for decisions, plus the settings.
#[derive(Debug, Clone, Default)]
pub struct StandardAuthorizer {
    config: AuthorizerConfig,
    by_id: HashMap<Uuid, AclBinding>,
    by_type: HashMap<ResourceType, TypeIndex>,
}

impl StandardAuthorizer {
    /// An authorizer with no ACLs.
    pub fn new(config: AuthorizerConfig) -> StandardAuthorizer {
        StandardAuthorizer {
            config,
            ..StandardAuthorizer::default()
        }
    }

    /// The settings.
    pub fn config(&self) -> &AuthorizerConfig {
        &self.config
    }

    /// How many ACLs there are.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Whether there are no ACLs.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// Adds (or replaces) the ACL `id`.
    pub fn add(&mut self, id: Uuid, binding: AclBinding) {
        self.remove(id);
        let index = self
            .by_type
            .entry(binding.pattern.resource_type)
            .or_default();
        let name = binding.pattern.name.clone();
        let map = match binding.pattern.pattern_type {
            PatternType::Prefixed => {
                if !index.prefixed.contains_key(&name) {
                    *index.prefix_lens.entry(name.len()).or_default() += 1;
                }
                &mut index.prefixed
            }
            _ => &mut index.literal,
        };
        map.entry(name)
            .or_default()
            .push((id, binding.entry.clone()));
        self.by_id.insert(id, binding);
    }

    /// Removes the ACL `id`, returning it (`None` if there is none).
    pub fn remove(&mut self, id: Uuid) -> Option<AclBinding> {
        let binding = self.by_id.remove(&id)?;
        let p = &binding.pattern;
        let index = self.by_type.get_mut(&p.resource_type)?;
        let prefixed = p.pattern_type == PatternType::Prefixed;
        let map = if prefixed {
            &mut index.prefixed
        } else {
            &mut index.literal
        };
        if let Some(entries) = map.get_mut(&p.name) {
            entries.retain(|(i, _)| *i != id);
            if entries.is_empty() {
                map.remove(&p.name);
                if prefixed {
                    if let Some(n) = index.prefix_lens.get_mut(&p.name.len()) {
                        *n -= 1;
                        if *n == 0 {
                            index.prefix_lens.remove(&p.name.len());
                        }
                    }
                }
            }
        }
        Some(binding)
    }

    /// The id of an ACL equal to `binding`, if one exists (CreateAcls of an existing ACL creates nothing).
    pub fn find(&self, binding: &AclBinding) -> Option<Uuid> {
        let index = self.by_type.get(&binding.pattern.resource_type)?;
        let map = match binding.pattern.pattern_type {
            PatternType::Prefixed => &index.prefixed,
            _ => &index.literal,
        };
        let entries = map.get(&binding.pattern.name)?;
        let found = entries.iter().find(|(_, e)| *e == binding.entry)?;
        Some(found.0)
    }

    /// Every ACL `filter` selects, with its id, sorted by binding (DescribeAcls, DeleteAcls).
    pub fn acls(&self, filter: &AclBindingFilter) -> Vec<(Uuid, AclBinding)> {
        let mut out: Vec<(Uuid, AclBinding)> = self
            .by_id
            .iter()
            .filter(|(_, b)| filter.matches(b))
            .map(|(id, b)| (*id, b.clone()))
            .collect();
        out.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(&b.0)));
        out
    }

    /// Whether the principal is in `super.users`.
    pub fn is_super_user(&self, principal: &str) -> bool {
        self.config.super_users.contains(principal)
    }

    /// Kafka's decision for `who` doing `op` on the resource `resource_type`/`name` (a LITERAL resource: a
    /// topic, a group id, `kafka-cluster`, ...). See the module documentation for the rules.
    pub fn authorize(
        &self,
        who: &Requester<'_>,
        op: AclOperation,
        resource_type: ResourceType,
        name: &str,
    ) -> AuthorizationResult {
        if self.is_super_user(who.principal) {
            return AuthorizationResult::Allowed;
        }
        let mut scan = Scan::default();
        if let Some(index) = self.by_type.get(&resource_type) {
            Self::scan(index, who, op, name, &mut scan);
        }
        let no_acl_allows = !scan.has_resource_acls && self.config.allow_everyone_if_no_acl_found;
        if !scan.deny && (scan.allow || no_acl_allows) {
            AuthorizationResult::Allowed
        } else {
            AuthorizationResult::Denied
        }
    }

    fn scan(index: &TypeIndex, who: &Requester<'_>, op: AclOperation, name: &str, scan: &mut Scan) {
        if let Some(entries) = index.literal.get(name) {
            scan.check(entries, who, op);
        }
        if name != WILDCARD_RESOURCE {
            if let Some(entries) = index.literal.get(WILDCARD_RESOURCE) {
                scan.check(entries, who, op);
            }
        }
        for &len in index.prefix_lens.keys() {
            if scan.deny || len > name.len() {
                break;
            }
            let Some(prefix) = name.get(..len) else {
                continue;
            };
            if let Some(entries) = index.prefixed.get(prefix) {
                scan.check(entries, who, op);
            }
        }
    }

    /// Whether `who` may do `op` on the resource (a shorthand of [`StandardAuthorizer::authorize`]).
    pub fn is_allowed(
        &self,
        who: &Requester<'_>,
        op: AclOperation,
        resource_type: ResourceType,
        name: &str,
    ) -> bool {
        self.authorize(who, op, resource_type, name) == AuthorizationResult::Allowed
    }

    /// Whether `who` may do `op` on some resource of `resource_type` (Kafka's `Authorizer.authorizeByResourceType`,
    /// KIP-679: an idempotent producer with WRITE on any topic). As Kafka's default implementation: allowed if
    /// a resource named `hardcode` would be (super users; no ACL with `allow.everyone.if.no.acl.found`);
    /// denied by a DENY on `*`; else allowed by an ALLOW on a LITERAL or PREFIXED pattern that no DENY on the
    /// same LITERAL name or a PREFIXED pattern it starts with cancels.
    pub fn authorize_any(
        &self,
        who: &Requester<'_>,
        op: AclOperation,
        resource_type: ResourceType,
    ) -> AuthorizationResult {
        if self.is_allowed(who, op, resource_type, "hardcode") {
            return AuthorizationResult::Allowed;
        }
        let Some(index) = self.by_type.get(&resource_type) else {
            return AuthorizationResult::Denied;
        };
        let applies = |e: &AccessControlEntry, perm: AclPermissionType| {
            e.permission_type == perm
                && (e.principal == who.principal || e.principal == WILDCARD_PRINCIPAL)
                && (e.host == WILDCARD_HOST || e.host == who.host)
        };
        let denies = |e: &AccessControlEntry| {
            applies(e, AclPermissionType::Deny)
                && (e.operation == AclOperation::All || e.operation == op)
        };
        let allows = |e: &AccessControlEntry| {
            applies(e, AclPermissionType::Allow) && e.operation.allow_implies(op)
        };
        if index
            .literal
            .get(WILDCARD_RESOURCE)
            .is_some_and(|es| es.iter().any(|(_, e)| denies(e)))
        {
            return AuthorizationResult::Denied;
        }
        let denied_prefixes: Vec<&str> = index
            .prefixed
            .iter()
            .filter(|(_, es)| es.iter().any(|(_, e)| denies(e)))
            .map(|(p, _)| p.as_str())
            .collect();
        let denied_by_prefix = |name: &str| denied_prefixes.iter().any(|p| name.starts_with(p));
        let literal_ok = index.literal.iter().any(|(name, es)| {
            es.iter().any(|(_, e)| allows(e))
                && !es.iter().any(|(_, e)| denies(e))
                && !denied_by_prefix(name)
        });
        let prefixed_ok = index
            .prefixed
            .iter()
            .any(|(name, es)| es.iter().any(|(_, e)| allows(e)) && !denied_by_prefix(name));
        if literal_ok || prefixed_ok {
            AuthorizationResult::Allowed
        } else {
            AuthorizationResult::Denied
        }
    }

    /// Kafka's authorized-operations bit field for one resource: bit `op.code()` set for every operation of
    /// [`AclOperation::supported_by`] the requester is allowed.
    pub fn authorized_operations(
        &self,
        who: &Requester<'_>,
        resource_type: ResourceType,
        name: &str,
    ) -> i32 {
        AclOperation::supported_by(resource_type)
            .iter()
            .filter(|op| self.is_allowed(who, **op, resource_type, name))
            .fold(0, |bits, op| bits | (1 << op.code()))
    }
}
