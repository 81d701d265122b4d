//! The groups' own session timeouts and heartbeat intervals (KIP-848 `consumer.*`, KIP-932 `share.*` group
//! configs), resolved from the dynamic GROUP configs of the metadata and handed to the coordinator
//! ([`coordinator::GroupCoordinator::set_group_timeouts`]). Rebuilt only when the metadata's generation moved.

use std::collections::BTreeMap;
use std::sync::Arc;

use coordinator::GroupTimeouts;
use parking_lot::Mutex;

use crate::config::BrokerConfig;
use crate::group_configs::effective_i64;
use crate::metadata::MetadataStore;

/// Every group with a timeout config, by group id.
pub(super) type TimeoutsByGroup = Arc<BTreeMap<String, GroupTimeouts>>;

/// The last resolution, with the metadata generation it was made at.
#[derive(Debug, Default)]
pub(super) struct GroupTimeoutsCache {
    cached: Mutex<Option<(u64, TimeoutsByGroup)>>,
}

impl GroupTimeoutsCache {
    /// The groups' timeouts as of `metadata`'s current group configs, each clamped to `config`'s bounds
    /// (`group.consumer.min/max.session.timeout.ms` and the like, as Kafka's `GroupConfig.evaluate`).
    pub(super) fn current(
        &self,
        config: &BrokerConfig,
        metadata: &MetadataStore,
    ) -> TimeoutsByGroup {
        let generation = metadata.generation();
        let mut cached = self.cached.lock();
        if let Some((at, t)) = cached.as_ref() {
            if *at == generation {
                return t.clone();
            }
        }
        let groups = metadata.groups_with_configs().into_iter();
        let all: BTreeMap<String, GroupTimeouts> = groups
            .filter_map(|g| {
                let t = resolve(config, &metadata.group_config(&g));
                (t != GroupTimeouts::default()).then_some((g, t))
            })
            .collect();
        let t = Arc::new(all);
        *cached = Some((generation, t.clone()));
        t
    }
}

/// One group's timeouts from its `group_configs`: a key it sets, clamped to the broker's bounds.
pub(super) fn resolve(
    config: &BrokerConfig,
    group_configs: &BTreeMap<String, String>,
) -> GroupTimeouts {
    let value = |name: &str| {
        group_configs.contains_key(name).then(|| {
            effective_i64(config, group_configs, name).clamp(1, i64::from(i32::MAX)) as i32
        })
    };
    GroupTimeouts {
        consumer_session_timeout_ms: value("consumer.session.timeout.ms"),
        consumer_heartbeat_interval_ms: value("consumer.heartbeat.interval.ms"),
        share_session_timeout_ms: value("share.session.timeout.ms"),
        share_heartbeat_interval_ms: value("share.heartbeat.interval.ms"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_set_keys_are_resolved_and_values_are_clamped_to_the_broker_bounds() {
        let config = BrokerConfig::from_pairs(&[]).unwrap();
        let set = |kv: &[(&str, &str)]| -> BTreeMap<String, String> {
            kv.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        assert_eq!(resolve(&config, &BTreeMap::new()), GroupTimeouts::default());
        let t = resolve(
            &config,
            &set(&[
                ("consumer.session.timeout.ms", "50000"),
                ("share.heartbeat.interval.ms", "1"),
            ]),
        );
        assert_eq!(t.consumer_session_timeout_ms, Some(50000));
        assert_eq!(t.consumer_heartbeat_interval_ms, None);
        // Below `group.share.min.heartbeat.interval.ms` (5000 by default): clamped up to it.
        assert_eq!(t.share_heartbeat_interval_ms, Some(5000));
        assert_eq!(t.share_session_timeout_ms, None);
    }
}
