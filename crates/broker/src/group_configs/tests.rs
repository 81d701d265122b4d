use std::collections::BTreeMap;

use super::*;

fn broker(pairs: &[(&str, &str)]) -> BrokerConfig {
    let pairs: Vec<(String, String)> = (pairs.iter())
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    BrokerConfig::from_pairs(&pairs).unwrap()
}

fn set(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    (pairs.iter())
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn the_table_is_sorted_and_every_synonym_and_bound_is_a_broker_key() {
    let names: Vec<&str> = GROUP_CONFIGS.iter().map(|d| d.name).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted);
    for d in GROUP_CONFIGS {
        let mut keys = vec![d.broker_synonym];
        match d.bound {
            Bound::Range(a, b) => keys.extend([a, b]),
            Bound::Max(k) | Bound::Min(k) => keys.push(k),
            Bound::None => {}
        }
        for k in keys.into_iter().filter(|k| !k.is_empty()) {
            assert!(crate::config::broker_def(k).is_some(), "{}: {k}", d.name);
        }
    }
}

/// Kafka 4.4's answers with its default broker config (taken from a running 4.4.0 broker).
#[test]
fn validation_matches_kafka_messages() {
    let c = broker(&[]);
    let err = |pairs: &[(&str, &str)]| validate(&c, &set(pairs)).unwrap_err();
    assert_eq!(
        err(&[("foo.bar", "1")]),
        "Unknown group config name: foo.bar"
    );
    assert_eq!(
        err(&[("consumer.session.timeout.ms", "1000")]),
        "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive."
    );
    assert_eq!(
        err(&[("consumer.session.timeout.ms", "abc")]),
        "Invalid value abc for configuration consumer.session.timeout.ms: Not a number of type INT"
    );
    assert_eq!(
        err(&[("consumer.session.timeout.ms", "0")]),
        "Invalid value 0 for configuration consumer.session.timeout.ms: Value must be at least 1"
    );
    assert_eq!(
        err(&[("share.record.lock.duration.ms", "999999999")]),
        "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive."
    );
    assert_eq!(
        err(&[("share.delivery.count.limit", "11")]),
        "share.delivery.count.limit must be in the range 2 to 10 inclusive."
    );
    assert_eq!(
        err(&[("share.partition.max.record.locks", "99")]),
        "Invalid value 99 for configuration share.partition.max.record.locks: Value must be at least 100"
    );
    assert_eq!(
        err(&[("share.auto.offset.reset", "EARLIEST")]),
        "Invalid value EARLIEST for configuration share.auto.offset.reset: Invalid value `EARLIEST` for \
         configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the \
         format 'by_duration:<PnDTnHnMn.nS>'."
    );
    assert!(err(&[("share.auto.offset.reset", "by_duration:-PT1H")]).contains("by_duration:<"));
    assert_eq!(
        err(&[("share.isolation.level", "x")]),
        "Invalid value x for configuration share.isolation.level: String must be one of: \
         read_committed, read_uncommitted"
    );
    assert_eq!(
        err(&[("share.renew.acknowledge.enable", "maybe")]),
        "Invalid value maybe for configuration share.renew.acknowledge.enable: Expected value to be \
         either true or false"
    );
    assert_eq!(
        err(&[("errors.deadletterqueue.topic.name", "__x")]),
        "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'"
    );
    assert_eq!(
        err(&[("streams.num.standby.replicas", "5")]),
        "streams.num.standby.replicas must be less than or equal to 2"
    );
    assert_eq!(
        err(&[("streams.task.offset.interval.ms", "1")]),
        "streams.task.offset.interval.ms must be greater than or equal to 15000"
    );
    assert_eq!(
        err(&[("streams.rack.aware.assignment.tags", "a,a")]),
        "streams.rack.aware.assignment.tags must not contain duplicate tag keys."
    );
    assert_eq!(
        err(&[("streams.assignor.name", "nope")]),
        "streams.assignor.name 'nope' is not a registered task assignor. Registered assignors are: [sticky]."
    );
    for ok in [
        &[
            ("share.auto.offset.reset", "earliest"),
            ("consumer.session.timeout.ms", "50000"),
        ][..],
        &[("share.auto.offset.reset", "by_duration:PT1H")],
        &[("share.isolation.level", "read_committed")],
        &[
            ("streams.num.warmup.replicas", "1"),
            ("consumer.assignor.offload.enable", "true"),
        ],
        &[
            ("consumer.heartbeat.interval.ms", "15000"),
            ("consumer.session.timeout.ms", "45000"),
        ],
    ] {
        assert_eq!(validate(&c, &set(ok)), Ok(()), "{ok:?}");
    }
}

#[test]
fn a_session_timeout_must_exceed_the_heartbeat_interval_with_the_broker_default_for_the_other() {
    let c = broker(&[
        ("group.share.min.session.timeout.ms", "1000"),
        ("group.share.max.heartbeat.interval.ms", "60000"),
    ]);
    assert_eq!(
        validate(&c, &set(&[("share.session.timeout.ms", "5000")])),
        Err("share.session.timeout.ms must be greater than share.heartbeat.interval.ms".into())
    );
    assert_eq!(
        validate(&c, &set(&[("share.heartbeat.interval.ms", "45000")])),
        Err("share.session.timeout.ms must be greater than share.heartbeat.interval.ms".into())
    );
    assert_eq!(
        validate(&c, &set(&[("share.session.timeout.ms", "6000")])),
        Ok(())
    );
}

#[test]
fn share_settings_take_the_group_value_clamped_else_the_broker_default() {
    let c = broker(&[("group.share.delivery.count.limit", "7")]);
    let defaults = share_settings(&c, &BTreeMap::new());
    assert_eq!(
        defaults,
        ShareGroupSettingsValues {
            record_lock_duration_ms: 30_000,
            delivery_count_limit: 7,
            max_record_locks: 2000,
            auto_offset_reset: "latest".into(),
            isolation_level: "read_uncommitted".into(),
            session_timeout_ms: 45_000,
            heartbeat_interval_ms: 5000,
        }
    );
    let group = set(&[
        ("share.record.lock.duration.ms", "20000"),
        ("share.delivery.count.limit", "3"),
        ("share.partition.max.record.locks", "9000"),
        ("share.auto.offset.reset", "by_duration:PT10M"),
        ("share.isolation.level", "read_committed"),
        ("share.session.timeout.ms", "50000"),
    ]);
    let s = share_settings(&c, &group);
    assert_eq!(s.record_lock_duration_ms, 20_000);
    assert_eq!(s.delivery_count_limit, 3);
    assert_eq!(
        s.max_record_locks, 4000,
        "capped to group.share.max.partition.max.record.locks"
    );
    assert_eq!(s.auto_offset_reset, "by_duration:PT10M");
    assert_eq!(parse_iso8601_ms("PT10M"), Some(600_000));
    assert_eq!(s.isolation_level, "read_committed");
    assert_eq!(
        (s.session_timeout_ms, s.heartbeat_interval_ms),
        (50_000, 5000)
    );
    let consumer = consumer_settings(&c, &set(&[("consumer.session.timeout.ms", "55000")]));
    assert_eq!(
        (consumer.session_timeout_ms, consumer.heartbeat_interval_ms),
        (55_000, 5000)
    );
}
