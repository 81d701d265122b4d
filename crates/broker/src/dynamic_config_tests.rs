//! Unit tests of `dynamic_config`.

use super::*;
use crate::server::apis::errors::ApiError;
use protocol::error::ErrorCode;

fn static_config(dir: &Path, pairs: &[(&str, &str)]) -> BrokerConfig {
    let mut p: Vec<(String, String)> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    p.push(("log.dirs".into(), dir.display().to_string()));
    BrokerConfig::from_pairs(&p).unwrap()
}

fn map(p: &[(&str, &str)]) -> BTreeMap<String, String> {
    entries(p).into_iter().collect()
}

fn entries(p: &[(&str, &str)]) -> Vec<(String, String)> {
    p.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn precedence_per_broker_over_default_over_static() {
    let dir = tempfile::tempdir().unwrap();
    let d = DynamicBrokerConfig::load(static_config(
        dir.path(),
        &[
            ("log.retention.ms", "1000"),
            ("log.segment.bytes", "2097152"),
        ],
    ))
    .unwrap();
    assert_eq!(
        d.effective().value("log.retention.ms").as_deref(),
        Some("1000")
    );
    d.set(
        ConfigLevel::ClusterDefault,
        entries(&[("log.retention.ms", "2000")]),
        false,
    )
    .unwrap();
    assert_eq!(
        d.effective().value("log.retention.ms").as_deref(),
        Some("2000")
    );
    d.set(
        ConfigLevel::PerBroker,
        entries(&[("log.retention.ms", "3000")]),
        false,
    )
    .unwrap();
    assert_eq!(
        d.effective().value("log.retention.ms").as_deref(),
        Some("3000")
    );
    let syn: Vec<(String, i8)> = d
        .synonyms("log.retention.ms")
        .into_iter()
        .map(|s| (s.value.unwrap(), s.source))
        .collect();
    assert_eq!(
        syn,
        vec![
            ("3000".to_string(), 2),
            ("2000".to_string(), 3),
            ("1000".to_string(), 4),
            ("168".to_string(), 5)
        ]
    );
    d.set(ConfigLevel::PerBroker, Vec::new(), false).unwrap();
    assert_eq!(
        d.effective().value("log.retention.ms").as_deref(),
        Some("2000")
    );
}

#[test]
fn unset_retention_ms_has_no_synonyms_like_kafka() {
    let dir = tempfile::tempdir().unwrap();
    let d = DynamicBrokerConfig::load(static_config(dir.path(), &[])).unwrap();
    assert!(d.synonyms("log.retention.ms").is_empty());
    assert_eq!(d.synonyms("log.segment.bytes").len(), 1);
}

#[test]
fn survives_reload_and_validate_only_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = static_config(dir.path(), &[]);
    let d = DynamicBrokerConfig::load(cfg.clone()).unwrap();
    d.set(
        ConfigLevel::ClusterDefault,
        entries(&[("log.retention.bytes", "5")]),
        false,
    )
    .unwrap();
    d.set(
        ConfigLevel::PerBroker,
        entries(&[("message.max.bytes", "7")]),
        true,
    )
    .unwrap();
    drop(d);
    let d = DynamicBrokerConfig::load(cfg).unwrap();
    assert_eq!(
        d.get(ConfigLevel::ClusterDefault, "log.retention.bytes")
            .as_deref(),
        Some("5")
    );
    assert_eq!(d.get(ConfigLevel::PerBroker, "message.max.bytes"), None);
}

#[test]
fn corrupt_file_is_an_error_and_bad_entries_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = static_config(dir.path(), &[]);
    std::fs::write(dir.path().join(DYNAMIC_CONFIG_FILE), b"{nope").unwrap();
    assert!(DynamicBrokerConfig::load(cfg.clone()).is_err());
    std::fs::write(
        dir.path().join(DYNAMIC_CONFIG_FILE),
        br#"{"version":1,"default":{"node.id":"4","log.retention.ms":"x","log.retention.bytes":"9"}}"#,
    )
    .unwrap();
    let d = DynamicBrokerConfig::load(cfg).unwrap();
    assert_eq!(
        d.level_configs(ConfigLevel::ClusterDefault),
        map(&[("log.retention.bytes", "9")])
    );
}

#[test]
fn errors_match_kafka() {
    let d = DynamicBrokerConfig::in_memory(BrokerConfig::from_pairs(&[]).unwrap());
    let err = |l, p: &[(&str, &str)]| ApiError::from(d.set(l, entries(p), false).unwrap_err());
    let e = err(
        ConfigLevel::PerBroker,
        &[("num.partitions", "3"), ("log.dirs", "/x")],
    );
    assert_eq!(e.code, ErrorCode::INVALID_REQUEST);
    assert_eq!(
        e.message,
        "Cannot update these configs dynamically: [num.partitions, log.dirs]"
    );
    let e = err(ConfigLevel::PerBroker, &[("log.retention.ms", "soon")]);
    assert_eq!(
        e.message,
        "Invalid value soon for configuration log.retention.ms: Not a number of type LONG"
    );
    let e = err(ConfigLevel::PerBroker, &[("log.segment.bytes", "10")]);
    assert_eq!(
        e.message,
        "Invalid value 10 for configuration log.segment.bytes: Value must be at least 1048576"
    );
    let e = err(
        ConfigLevel::ClusterDefault,
        &[("listeners", "PLAINTEXT://:1")],
    );
    assert!(e.message.contains("default cluster level"));
    let e = err(ConfigLevel::PerBroker, &[("no.such.key", "1")]);
    assert_eq!(e.code, ErrorCode::INVALID_CONFIG);
    assert!(e.message.contains("no.such.key"));
    assert_eq!(d.resolve("", false), Ok(ConfigLevel::ClusterDefault));
    assert_eq!(d.resolve("1", false), Ok(ConfigLevel::PerBroker));
    assert_eq!(
        d.resolve("2", false).unwrap_err().to_string(),
        "Unexpected broker id, expected 1, but received 2"
    );
    assert_eq!(
        d.resolve("x", true).unwrap_err().to_string(),
        "Broker id must be an integer, but it is: x"
    );
}

/// A cluster member's levels come from the image (`broker_configs`: "" and broker ids), not from a file;
/// another broker's id is addressable for AlterConfigs (not for DescribeConfigs), and only this broker's
/// levels reach its effective config.
#[test]
fn following_an_image_lays_in_the_default_and_own_levels_and_addresses_other_brokers() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = static_config(dir.path(), &[("message.max.bytes", "1000")]);
    config.node_id = types::BrokerId(1);
    let standalone = DynamicBrokerConfig::in_memory(config.clone());
    assert!(standalone.resolve("2", false).is_err());
    let d = DynamicBrokerConfig::following_image(config);
    assert_eq!(d.resolve("2", false).unwrap(), ConfigLevel::OtherBroker(2));
    assert_eq!(d.resolve("1", false).unwrap(), ConfigLevel::PerBroker);
    assert!(d.resolve("2", true).is_err());
    assert!(d.resolve("-3", false).is_err());
    let mut image: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    image.insert("".into(), map(&[("message.max.bytes", "2000")]));
    image.insert("2".into(), map(&[("message.max.bytes", "3000")]));
    assert!(d.replace_levels(&image));
    assert_eq!(
        d.effective().value("message.max.bytes").as_deref(),
        Some("2000")
    );
    assert_eq!(
        d.get(ConfigLevel::OtherBroker(2), "message.max.bytes")
            .as_deref(),
        Some("3000")
    );
    let sources: Vec<i8> = d
        .synonyms("message.max.bytes")
        .iter()
        .map(|s| s.source)
        .collect();
    assert_eq!(sources[0], source::DYNAMIC_DEFAULT_BROKER_CONFIG);
    // Another broker's level changes nothing here; this broker's own level (valid entries only) does.
    image.insert("2".into(), map(&[("message.max.bytes", "4000")]));
    assert!(!d.replace_levels(&image));
    image.insert(
        "1".into(),
        map(&[("message.max.bytes", "5000"), ("node.id", "9")]),
    );
    assert!(d.replace_levels(&image));
    assert_eq!(
        d.effective().value("message.max.bytes").as_deref(),
        Some("5000")
    );
    assert_eq!(
        d.level_configs(ConfigLevel::PerBroker),
        map(&[("message.max.bytes", "5000")])
    );
    assert_eq!(
        d.synonyms("message.max.bytes")[0].source,
        source::DYNAMIC_BROKER_CONFIG
    );
}
