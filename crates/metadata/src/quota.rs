//! Client quotas as metadata (KIP-546, Kafka's `ClientQuotaRecord`, `ClientQuotasImage` and
//! `ClientQuotaControlManager`): the quota entities (a user, a client id, both, or an IP, each named or the
//! `<default>`), their values per quota key, the image they are replayed into, and the pure rules that turn an
//! AlterClientQuotas entry into records and a DescribeClientQuotas filter into matches. The controller and a
//! standalone broker both use these, so the two modes validate and store alike.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Entity type `user` (a principal's name).
pub const USER: &str = "user";
/// Entity type `client-id` (the request header's client id).
pub const CLIENT_ID: &str = "client-id";
/// Entity type `ip` (a client address; KIP-612 connection-rate quotas).
pub const IP: &str = "ip";

/// `producer_byte_rate`: bytes/s of Produce requests (a whole number).
pub const PRODUCER_BYTE_RATE: &str = "producer_byte_rate";
/// `consumer_byte_rate`: bytes/s of Fetch responses (a whole number).
pub const CONSUMER_BYTE_RATE: &str = "consumer_byte_rate";
/// `request_percentage`: percent of one request-handler thread's time (KIP-124).
pub const REQUEST_PERCENTAGE: &str = "request_percentage";
/// `controller_mutation_rate`: topic/partition mutations per second (KIP-599).
pub const CONTROLLER_MUTATION_RATE: &str = "controller_mutation_rate";
/// `connection_creation_rate`: new connections per second from one IP (KIP-612; a whole number).
pub const CONNECTION_CREATION_RATE: &str = "connection_creation_rate";

/// The keys a user and/or client-id entity takes, and whether each must be a whole number (Kafka's LONG
/// quota configs) — Kafka's `QuotaConfigs.clientConfigs`.
const CLIENT_KEYS: &[(&str, bool)] = &[
    (PRODUCER_BYTE_RATE, true),
    (CONSUMER_BYTE_RATE, true),
    (REQUEST_PERCENTAGE, false),
    (CONTROLLER_MUTATION_RATE, false),
];
/// The keys an ip entity takes (Kafka's `QuotaConfigs.ipConfigs`).
const IP_KEYS: &[(&str, bool)] = &[(CONNECTION_CREATION_RATE, true)];

/// The name of one entity component: a name, or the default for that type (`<default>` in Kafka's tools,
/// `null` on the wire). Serialized as `"default"` or `{"name": "..."}`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntityName {
    /// The default entity of its type.
    Default,
    /// A named entity.
    Name(String),
}

impl EntityName {
    /// From the wire form: `None` is the default.
    pub fn from_wire(name: Option<&str>) -> EntityName {
        name.map_or(EntityName::Default, |n| EntityName::Name(n.to_string()))
    }

    /// The wire form: `None` for the default.
    pub fn to_wire(&self) -> Option<String> {
        match self {
            EntityName::Default => None,
            EntityName::Name(n) => Some(n.clone()),
        }
    }
}

/// A quota entity: the components present (Kafka's `ClientQuotaEntity`, a map from entity type to name).
/// Valid combinations: user, client-id, user + client-id, or ip alone. Absent components are omitted from the
/// JSON.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ClientQuotaEntity {
    /// The `user` component.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<EntityName>,
    /// The `client-id` component.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<EntityName>,
    /// The `ip` component.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip: Option<EntityName>,
}

impl ClientQuotaEntity {
    /// The entity of `user` and/or `client_id` (each `None` when absent).
    pub fn of(user: Option<EntityName>, client_id: Option<EntityName>) -> ClientQuotaEntity {
        ClientQuotaEntity {
            user,
            client_id,
            ip: None,
        }
    }

    /// The components as (entity type, wire name) pairs, in Kafka's type order.
    pub fn components(&self) -> Vec<(&'static str, Option<String>)> {
        [
            (USER, &self.user),
            (CLIENT_ID, &self.client_id),
            (IP, &self.ip),
        ]
        .into_iter()
        .filter_map(|(t, n)| n.as_ref().map(|n| (t, n.to_wire())))
        .collect()
    }

    /// Builds an entity from wire components (Kafka's `ClientQuotaControlManager.validateEntity` and
    /// `configKeysForEntityType`). Errors (Kafka's INVALID_REQUEST messages): empty, a repeated or unknown
    /// type, an empty name, ip combined with another type.
    pub fn from_components<'a>(
        components: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
    ) -> Result<ClientQuotaEntity, String> {
        let mut entity = ClientQuotaEntity::default();
        for (entity_type, name) in components {
            let slot = match entity_type {
                USER => &mut entity.user,
                CLIENT_ID => &mut entity.client_id,
                IP => &mut entity.ip,
                other => return Err(format!("Unhandled client quota entity type: {other}")),
            };
            if slot.is_some() {
                return Err(format!(
                    "Invalid empty client quota entity, duplicate entity entry {entity_type}"
                ));
            }
            if name == Some("") {
                return Err(format!("Empty {entity_type} not supported"));
            }
            *slot = Some(EntityName::from_wire(name));
        }
        let has_ip = entity.ip.is_some();
        let has_client = entity.user.is_some() || entity.client_id.is_some();
        if has_ip == has_client {
            return Err("Invalid empty client quota entity".into());
        }
        if let Some(EntityName::Name(ip)) = &entity.ip {
            if ip.parse::<std::net::IpAddr>().is_err() {
                return Err(format!("{ip} is not a valid IP or resolvable host."));
            }
        }
        Ok(entity)
    }

    /// The quota keys this entity takes, each with whether it must be a whole number.
    fn keys(&self) -> &'static [(&'static str, bool)] {
        if self.ip.is_some() {
            IP_KEYS
        } else {
            CLIENT_KEYS
        }
    }

    /// The component of `entity_type`, if present.
    fn name_of(&self, entity_type: &str) -> Option<&EntityName> {
        match entity_type {
            USER => self.user.as_ref(),
            CLIENT_ID => self.client_id.as_ref(),
            IP => self.ip.as_ref(),
            _ => None,
        }
    }

    /// How many components it has.
    fn len(&self) -> usize {
        [&self.user, &self.client_id, &self.ip]
            .iter()
            .filter(|c| c.is_some())
            .count()
    }
}

/// A quota value (a finite `f64`; whole numbers for the byte and connection rates). Compared bit for bit, so
/// images stay `Eq`.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct QuotaValue(pub f64);

impl PartialEq for QuotaValue {
    fn eq(&self, other: &QuotaValue) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for QuotaValue {}

/// An entity's quota values by key.
pub type QuotaValues = BTreeMap<String, QuotaValue>;

/// The entities a DescribeClientQuotas filter matched, with their values.
pub type QuotaMatches<'a> = Vec<(&'a ClientQuotaEntity, &'a QuotaValues)>;

/// One AlterClientQuotas entry, validated: the entity and its operations (`Some` sets a key, `None` removes
/// it), at most one per key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuotaAlteration {
    /// The entity.
    pub entity: ClientQuotaEntity,
    /// (key, new value or `None` to remove).
    pub ops: Vec<(String, Option<QuotaValue>)>,
}

impl QuotaAlteration {
    /// Checks `ops` for `entity` (Kafka's `validateQuotaKeyValue`): known keys for the entity's type, no key
    /// twice, whole numbers where Kafka's key is a LONG, finite values. Errors: Kafka's INVALID_REQUEST
    /// messages.
    pub fn new(
        entity: ClientQuotaEntity,
        ops: Vec<(String, Option<f64>)>,
    ) -> Result<QuotaAlteration, String> {
        let mut checked: Vec<(String, Option<QuotaValue>)> = Vec::with_capacity(ops.len());
        for (key, value) in ops {
            if checked.iter().any(|(k, _)| *k == key) {
                return Err(format!(
                    "Duplicate quota key {key} not updating quota for this entity"
                ));
            }
            let Some((_, whole)) = entity.keys().iter().find(|(k, _)| *k == key) else {
                return Err(format!("Invalid configuration key {key}"));
            };
            if let Some(v) = value {
                if !v.is_finite() {
                    return Err(format!("Configuration {key} must be a finite number"));
                }
                if *whole && (v - (v + 1e-6).trunc()).abs() > 1e-6 {
                    return Err(format!("Configuration {key} must be a Long value"));
                }
            }
            checked.push((key, value.map(QuotaValue)));
        }
        Ok(QuotaAlteration {
            entity,
            ops: checked,
        })
    }
}

/// One quota key set or removed for an entity (Kafka's `ClientQuotaRecord`, its `remove` flag as a `None`
/// value).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientQuotaChange {
    /// The entity.
    pub entity: ClientQuotaEntity,
    /// The quota key.
    pub key: String,
    /// The new value; `None` removes the key.
    pub value: Option<QuotaValue>,
}

/// The quotas of every entity (Kafka's `ClientQuotasImage`): serialized as a list of `{entity, values}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "Vec<QuotaEntry>", into = "Vec<QuotaEntry>")]
pub struct ClientQuotasImage(pub BTreeMap<ClientQuotaEntity, BTreeMap<String, QuotaValue>>);

/// The serialized form of one entity's quotas.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct QuotaEntry {
    /// The entity.
    pub entity: ClientQuotaEntity,
    /// Its quota values by key.
    pub values: BTreeMap<String, QuotaValue>,
}

impl From<Vec<QuotaEntry>> for ClientQuotasImage {
    fn from(entries: Vec<QuotaEntry>) -> Self {
        ClientQuotasImage(entries.into_iter().map(|e| (e.entity, e.values)).collect())
    }
}

impl From<ClientQuotasImage> for Vec<QuotaEntry> {
    fn from(image: ClientQuotasImage) -> Self {
        image
            .0
            .into_iter()
            .map(|(entity, values)| QuotaEntry { entity, values })
            .collect()
    }
}

/// A DescribeClientQuotas filter component, parsed: exact name, the default, or any named entity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QuotaMatch {
    /// `match_type` 0: this exact name.
    Exact(String),
    /// `match_type` 1: the default entity.
    Default,
    /// `match_type` 2: any entity of the type (Kafka's MATCH_TYPE_SPECIFIED; the default included).
    Specified,
}

impl ClientQuotasImage {
    /// Whether no entity has a quota.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The value of `key` for exactly `entity`.
    pub fn get(&self, entity: &ClientQuotaEntity, key: &str) -> Option<f64> {
        self.0.get(entity)?.get(key).map(|v| v.0)
    }

    /// Replays one change: sets or removes the key, dropping an entity left without keys.
    pub fn apply(&mut self, change: &ClientQuotaChange) {
        match change.value {
            Some(v) => {
                self.0
                    .entry(change.entity.clone())
                    .or_default()
                    .insert(change.key.clone(), v);
            }
            None => {
                if let Some(values) = self.0.get_mut(&change.entity) {
                    values.remove(&change.key);
                    if values.is_empty() {
                        self.0.remove(&change.entity);
                    }
                }
            }
        }
    }

    /// The changes `alteration` makes to this image (Kafka's `alterClientQuotaEntity`): a removal only of a
    /// key present, a set only of a value that differs.
    pub fn changes(&self, alteration: &QuotaAlteration) -> Vec<ClientQuotaChange> {
        let current = self.0.get(&alteration.entity);
        alteration
            .ops
            .iter()
            .filter(|(key, value)| current.and_then(|c| c.get(key)) != value.as_ref())
            .map(|(key, value)| ClientQuotaChange {
                entity: alteration.entity.clone(),
                key: key.clone(),
                value: *value,
            })
            .collect()
    }

    /// DescribeClientQuotas (Kafka's `ClientQuotasImage.describe`): the entities matching every component of
    /// `filter` (type, match); with `strict`, only entities with no other components. Errors: (`true` for
    /// UNSUPPORTED_VERSION, `false` for INVALID_REQUEST, message): an empty, unknown or repeated type, ip
    /// combined with user or client-id.
    pub fn describe(
        &self,
        filter: &[(String, QuotaMatch)],
        strict: bool,
    ) -> Result<QuotaMatches<'_>, (bool, String)> {
        for (i, (t, _)) in filter.iter().enumerate() {
            if t.is_empty() {
                return Err((false, "Invalid empty entity type.".into()));
            }
            if filter[..i].iter().any(|(u, _)| u == t) {
                return Err((
                    false,
                    format!("Entity type {t} cannot appear more than once in the filter."),
                ));
            }
            if ![USER, CLIENT_ID, IP].contains(&t.as_str()) {
                return Err((true, format!("Unsupported entity type {t}")));
            }
        }
        let has = |t: &str| filter.iter().any(|(u, _)| u == t);
        if has(IP) && (has(USER) || has(CLIENT_ID)) {
            return Err((false, "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.".into()));
        }
        Ok(self
            .0
            .iter()
            .filter(|(entity, _)| {
                filter.iter().all(|(t, m)| match (entity.name_of(t), m) {
                    (Some(EntityName::Name(n)), QuotaMatch::Exact(want)) => n == want,
                    (Some(EntityName::Default), QuotaMatch::Default) => true,
                    (Some(_), QuotaMatch::Specified) => true,
                    _ => false,
                }) && (!strict || entity.len() == filter.len())
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(n: &str) -> Option<EntityName> {
        Some(EntityName::Name(n.into()))
    }

    #[test]
    fn entities_are_validated_as_kafka_does() {
        let ok = ClientQuotaEntity::from_components([(USER, Some("a")), (CLIENT_ID, None)]);
        assert_eq!(
            ok.unwrap(),
            ClientQuotaEntity::of(named("a"), Some(EntityName::Default))
        );
        for bad in [
            vec![],
            vec![(USER, Some("a")), (USER, Some("b"))],
            vec![("group", Some("g"))],
            vec![(USER, Some(""))],
            vec![(IP, Some("1.2.3.4")), (USER, Some("a"))],
            vec![(IP, Some("not-an-ip"))],
        ] {
            assert!(
                ClientQuotaEntity::from_components(bad.clone()).is_err(),
                "{bad:?}"
            );
        }
        let e = ClientQuotaEntity::of(None, named("c"));
        assert!(
            QuotaAlteration::new(e.clone(), vec![("producer_byte_rate".into(), Some(1.5))])
                .is_err()
        );
        assert!(QuotaAlteration::new(e.clone(), vec![("bogus".into(), Some(1.0))]).is_err());
        let dup = vec![
            (CONSUMER_BYTE_RATE.into(), Some(1.0)),
            (CONSUMER_BYTE_RATE.into(), None),
        ];
        assert!(QuotaAlteration::new(e.clone(), dup).is_err());
        assert!(QuotaAlteration::new(e, vec![(REQUEST_PERCENTAGE.into(), Some(12.5))]).is_ok());
    }

    #[test]
    fn changes_apply_and_describe_filters_match() {
        let mut image = ClientQuotasImage::default();
        let alice = ClientQuotaEntity::of(named("alice"), None);
        let c1 = ClientQuotaEntity::of(None, named("c1"));
        let both = ClientQuotaEntity::of(named("alice"), Some(EntityName::Default));
        for e in [&alice, &c1, &both] {
            let alt =
                QuotaAlteration::new(e.clone(), vec![(PRODUCER_BYTE_RATE.into(), Some(100.0))])
                    .unwrap();
            for c in image.changes(&alt) {
                image.apply(&c);
            }
            assert!(
                image.changes(&alt).is_empty(),
                "a set of the same value is no change"
            );
        }
        assert_eq!(image.get(&c1, PRODUCER_BYTE_RATE), Some(100.0));
        let user_alice = vec![(USER.to_string(), QuotaMatch::Exact("alice".into()))];
        assert_eq!(image.describe(&user_alice, false).unwrap().len(), 2);
        assert_eq!(image.describe(&user_alice, true).unwrap().len(), 1);
        let default_client = vec![(CLIENT_ID.to_string(), QuotaMatch::Default)];
        assert_eq!(image.describe(&default_client, false).unwrap().len(), 1);
        let any_client = vec![(CLIENT_ID.to_string(), QuotaMatch::Specified)];
        assert_eq!(image.describe(&any_client, false).unwrap().len(), 2);
        assert_eq!(image.describe(&[], false).unwrap().len(), 3);
        assert!(image.describe(&[], true).unwrap().is_empty());
        let bad = vec![("group".to_string(), QuotaMatch::Specified)];
        assert!(matches!(image.describe(&bad, false), Err((true, _))));
        let remove = QuotaAlteration::new(c1.clone(), vec![(PRODUCER_BYTE_RATE.into(), None)]);
        for c in image.changes(&remove.unwrap()) {
            image.apply(&c);
        }
        assert_eq!(image.0.len(), 2, "an entity without keys is dropped");
    }
}
