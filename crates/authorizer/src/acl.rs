//! ACL bindings and filters as Kafka's `org.apache.kafka.common.acl` / `common.resource` define them: the
//! enums with their wire codes (the `int8` fields of CreateAcls/DescribeAcls/DeleteAcls and of the
//! `AccessControlEntryRecord`), [`AclBinding`] (a resource pattern plus an access control entry) and
//! [`AclBindingFilter`] (what DescribeAcls and DeleteAcls select with, `ANY`/`MATCH` included).

/// The resource name of the wildcard literal pattern, matching every resource of its type
/// (Kafka's `ResourcePattern.WILDCARD_RESOURCE`).
pub const WILDCARD_RESOURCE: &str = "*";
/// The principal matching every user (Kafka's `Acl.WILDCARD_PRINCIPAL_STRING`).
pub const WILDCARD_PRINCIPAL: &str = "User:*";
/// The host matching every client address (Kafka's `Acl.WILDCARD_HOST`).
pub const WILDCARD_HOST: &str = "*";
/// The only valid name of the CLUSTER resource (Kafka's `Resource.CLUSTER_NAME`).
pub const CLUSTER_NAME: &str = "kafka-cluster";

macro_rules! wire_enum {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $code:expr, $text:expr;)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$vdoc])* $variant = $code,)*
        }

        impl $name {
            /// The value of a wire code; codes Kafka does not define are `Unknown` (as Kafka's `fromCode`).
            pub fn from_code(code: i8) -> $name {
                match code {
                    $($code => $name::$variant,)*
                    _ => $name::Unknown,
                }
            }

            /// The wire code.
            pub fn code(self) -> i8 {
                self as i8
            }

            /// Kafka's upper-case name (`TOPIC`, `PREFIXED`, `DESCRIBE_CONFIGS`, `ALLOW`).
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)*
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

wire_enum!(
    /// A resource type (Kafka's `ResourceType`).
    ResourceType {
        /// A code this version does not know.
        Unknown = 0, "UNKNOWN";
        /// Any type (filters only).
        Any = 1, "ANY";
        /// A topic.
        Topic = 2, "TOPIC";
        /// A consumer group.
        Group = 3, "GROUP";
        /// The cluster (name [`CLUSTER_NAME`]).
        Cluster = 4, "CLUSTER";
        /// A transactional id.
        TransactionalId = 5, "TRANSACTIONAL_ID";
        /// A delegation token.
        DelegationToken = 6, "DELEGATION_TOKEN";
        /// A user (KIP-373).
        User = 7, "USER";
    }
);

wire_enum!(
    /// How a pattern's name matches resource names (Kafka's `PatternType`, KIP-290).
    PatternType {
        /// A code this version does not know.
        Unknown = 0, "UNKNOWN";
        /// Filters only: any pattern type, the name compared exactly.
        Any = 1, "ANY";
        /// Filters only: every pattern that would match the filter's name (literal, `*`, prefixes).
        Match = 2, "MATCH";
        /// The name is the resource's name, or `*` for every resource.
        Literal = 3, "LITERAL";
        /// The name is a prefix of the resources' names.
        Prefixed = 4, "PREFIXED";
    }
);

wire_enum!(
    /// An operation (Kafka's `AclOperation`).
    AclOperation {
        /// A code this version does not know.
        Unknown = 0, "UNKNOWN";
        /// Any operation (filters only).
        Any = 1, "ANY";
        /// Every operation.
        All = 2, "ALL";
        /// Read.
        Read = 3, "READ";
        /// Write.
        Write = 4, "WRITE";
        /// Create.
        Create = 5, "CREATE";
        /// Delete.
        Delete = 6, "DELETE";
        /// Alter.
        Alter = 7, "ALTER";
        /// Describe.
        Describe = 8, "DESCRIBE";
        /// Inter-broker actions (replica fetches).
        ClusterAction = 9, "CLUSTER_ACTION";
        /// Describe configs.
        DescribeConfigs = 10, "DESCRIBE_CONFIGS";
        /// Alter configs.
        AlterConfigs = 11, "ALTER_CONFIGS";
        /// Idempotent produce (KIP-679 also allows it with WRITE on any topic).
        IdempotentWrite = 12, "IDEMPOTENT_WRITE";
        /// Create delegation tokens.
        CreateTokens = 13, "CREATE_TOKENS";
        /// Describe delegation tokens.
        DescribeTokens = 14, "DESCRIBE_TOKENS";
        /// Two-phase commit (KIP-939).
        TwoPhaseCommit = 15, "TWO_PHASE_COMMIT";
    }
);

wire_enum!(
    /// Whether an entry allows or denies (Kafka's `AclPermissionType`).
    AclPermissionType {
        /// A code this version does not know.
        Unknown = 0, "UNKNOWN";
        /// Any permission (filters only).
        Any = 1, "ANY";
        /// Deny: wins over every ALLOW.
        Deny = 2, "DENY";
        /// Allow.
        Allow = 3, "ALLOW";
    }
);

impl AclOperation {
    /// Whether an ALLOW entry for `self` also allows `requested` (Kafka's `StandardAuthorizerData.findResult`:
    /// ALL allows everything; READ, WRITE, DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS implies
    /// DESCRIBE_CONFIGS). A DENY entry denies only its own operation (or every one, for ALL).
    pub fn allow_implies(self, requested: AclOperation) -> bool {
        use AclOperation::*;
        match (self, requested) {
            (All, _) => true,
            (Read | Write | Delete | Alter | Describe, Describe) => true,
            (AlterConfigs | DescribeConfigs, DescribeConfigs) => true,
            (granted, requested) => granted == requested,
        }
    }

    /// The operations a resource type supports, in Kafka's order (`AclEntry.supportedOperations`); the
    /// authorized-operations bit fields of Metadata, DescribeCluster and DescribeGroups are built over them.
    pub fn supported_by(resource_type: ResourceType) -> &'static [AclOperation] {
        use AclOperation::*;
        match resource_type {
            ResourceType::Topic => &[
                Read,
                Write,
                Create,
                Describe,
                Delete,
                Alter,
                DescribeConfigs,
                AlterConfigs,
            ],
            ResourceType::Group => &[Read, Describe, Delete],
            ResourceType::Cluster => &[
                Create,
                ClusterAction,
                DescribeConfigs,
                AlterConfigs,
                IdempotentWrite,
                Alter,
                Describe,
            ],
            ResourceType::TransactionalId => &[Describe, Write, TwoPhaseCommit],
            ResourceType::DelegationToken => &[Describe],
            ResourceType::User => &[CreateTokens, DescribeTokens],
            ResourceType::Unknown | ResourceType::Any => &[],
        }
    }
}

/// A resource pattern (Kafka's `ResourcePattern`): a type, a name and how the name matches.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResourcePattern {
    /// The resource type.
    pub resource_type: ResourceType,
    /// The resource name, a prefix for [`PatternType::Prefixed`], `*` for every resource.
    pub name: String,
    /// LITERAL or PREFIXED in a binding.
    pub pattern_type: PatternType,
}

/// An access control entry (Kafka's `AccessControlEntry`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AccessControlEntry {
    /// `type:name`, e.g. `User:alice`, or [`WILDCARD_PRINCIPAL`].
    pub principal: String,
    /// A client IP address as Kafka prints it, or [`WILDCARD_HOST`].
    pub host: String,
    /// The operation.
    pub operation: AclOperation,
    /// ALLOW or DENY.
    pub permission_type: AclPermissionType,
}

/// An ACL: a resource pattern and an entry (Kafka's `AclBinding`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AclBinding {
    /// What it applies to.
    pub pattern: ResourcePattern,
    /// Who may or may not do what from where.
    pub entry: AccessControlEntry,
}

/// Why a binding cannot be created (each answered INVALID_REQUEST, as Kafka's `AclControlManager.validateNewAcl`
/// and `AclApis.handleCreateAcls` do).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidAcl(pub String);

impl std::fmt::Display for InvalidAcl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidAcl {}

impl AclBinding {
    /// Checks a binding a CreateAcls asks for, with Kafka's messages: a concrete resource type, LITERAL or
    /// PREFIXED, a concrete operation and permission, a non-empty name (`kafka-cluster` for CLUSTER) and a
    /// `type:name` principal.
    pub fn validate(&self) -> Result<(), InvalidAcl> {
        let invalid = |m: String| Err(InvalidAcl(m));
        let p = &self.pattern;
        if matches!(p.resource_type, ResourceType::Unknown | ResourceType::Any) {
            return invalid(format!("Invalid resourceType {}", p.resource_type));
        }
        if !matches!(p.pattern_type, PatternType::Literal | PatternType::Prefixed) {
            return invalid(format!("Invalid patternType {}", p.pattern_type));
        }
        let e = &self.entry;
        if matches!(e.operation, AclOperation::Unknown | AclOperation::Any) {
            return invalid(format!("Invalid operation {}", e.operation));
        }
        if !matches!(
            e.permission_type,
            AclPermissionType::Allow | AclPermissionType::Deny
        ) {
            return invalid(format!("Invalid permissionType {}", e.permission_type));
        }
        if p.name.is_empty() {
            return invalid("Invalid empty resource name".into());
        }
        if p.resource_type == ResourceType::Cluster && p.name != CLUSTER_NAME {
            return invalid(format!(
                "The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
            ));
        }
        if !e.principal.contains(':') {
            return invalid(format!(
                "Could not parse principal from `{}` (no colon is present separating the principal type from the principal name)",
                e.principal
            ));
        }
        Ok(())
    }
}

/// A selection of ACLs (Kafka's `AclBindingFilter`): `None` strings and the `ANY` values match everything;
/// [`PatternType::Match`] selects every pattern that would apply to the named resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclBindingFilter {
    /// Resource type, or `Any`.
    pub resource_type: ResourceType,
    /// Resource name, or `None` for any.
    pub name: Option<String>,
    /// Pattern type, `Any` or `Match`.
    pub pattern_type: PatternType,
    /// Principal, or `None` for any.
    pub principal: Option<String>,
    /// Host, or `None` for any.
    pub host: Option<String>,
    /// Operation, or `Any`.
    pub operation: AclOperation,
    /// Permission, or `Any`.
    pub permission_type: AclPermissionType,
}

impl AclBindingFilter {
    /// The filter that matches every ACL.
    pub const ANY: AclBindingFilter = AclBindingFilter {
        resource_type: ResourceType::Any,
        name: None,
        pattern_type: PatternType::Any,
        principal: None,
        host: None,
        operation: AclOperation::Any,
        permission_type: AclPermissionType::Any,
    };

    /// Whether an element is UNKNOWN (Kafka refuses such a filter: "Unknown pattern filter." /
    /// "Unknown entry filter.").
    pub fn validate(&self) -> Result<(), InvalidAcl> {
        if self.resource_type == ResourceType::Unknown || self.pattern_type == PatternType::Unknown
        {
            return Err(InvalidAcl("Unknown pattern filter.".into()));
        }
        if self.operation == AclOperation::Unknown
            || self.permission_type == AclPermissionType::Unknown
        {
            return Err(InvalidAcl("Unknown entry filter.".into()));
        }
        Ok(())
    }

    /// Whether `binding` is selected (Kafka's `ResourcePatternFilter.matches` and
    /// `AccessControlEntryFilter.matches`).
    pub fn matches(&self, binding: &AclBinding) -> bool {
        self.matches_pattern(&binding.pattern) && self.matches_entry(&binding.entry)
    }

    fn matches_pattern(&self, p: &ResourcePattern) -> bool {
        if self.resource_type != ResourceType::Any && self.resource_type != p.resource_type {
            return false;
        }
        let any_or_match = matches!(self.pattern_type, PatternType::Any | PatternType::Match);
        if !any_or_match && self.pattern_type != p.pattern_type {
            return false;
        }
        let Some(name) = &self.name else {
            return true;
        };
        if self.pattern_type == PatternType::Any || self.pattern_type == p.pattern_type {
            return *name == p.name;
        }
        match p.pattern_type {
            PatternType::Literal => *name == p.name || p.name == WILDCARD_RESOURCE,
            PatternType::Prefixed => name.starts_with(&p.name),
            _ => false,
        }
    }

    fn matches_entry(&self, e: &AccessControlEntry) -> bool {
        self.principal.as_ref().is_none_or(|p| *p == e.principal)
            && self.host.as_ref().is_none_or(|h| *h == e.host)
            && (self.operation == AclOperation::Any || self.operation == e.operation)
            && (self.permission_type == AclPermissionType::Any
                || self.permission_type == e.permission_type)
    }
}
