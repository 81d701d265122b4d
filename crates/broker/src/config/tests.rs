//! Config parsing tests: keys, voters and roles, listeners, defaults.

use super::*;

#[test]
fn cluster_keys_parse_voters_roles_and_the_controller_listener() {
    let c = BrokerConfig::from_pairs(&pairs(&[
        ("node.id", "2"),
        (
            "listeners",
            "PLAINTEXT://127.0.0.1:9093,CONTROLLER://127.0.0.1:19093",
        ),
        (
            "controller.quorum.voters",
            "1@127.0.0.1:19092,2@127.0.0.1:19093,3@127.0.0.1:19094",
        ),
    ]))
    .unwrap();
    assert!(c.is_cluster());
    assert_eq!(c.listeners.listeners[0].endpoint.port, 9093);
    assert_eq!(c.controller_listener.as_ref().unwrap().port, 19093);
    assert_eq!(c.controller_quorum_voters.len(), 3);
    assert_eq!(c.controller_quorum_voters[&BrokerId(3)].port, 19094);
    assert!(c.process_roles.broker && c.process_roles.controller);
    let standalone = BrokerConfig::from_pairs(&[]).unwrap();
    assert!(!standalone.is_cluster());
    for bad in [
        vec![("controller.quorum.voters", "1@host")],
        vec![("controller.quorum.voters", "x@127.0.0.1:1")],
        vec![("controller.quorum.voters", "2@127.0.0.1:1")],
        vec![("process.roles", "broker")],
        vec![("process.roles", "nothing")],
        vec![
            ("node.id", "2"),
            (
                "listeners",
                "PLAINTEXT://127.0.0.1:9093,CONTROLLER://127.0.0.1:19099",
            ),
            ("controller.quorum.voters", "2@127.0.0.1:19093"),
        ],
    ] {
        assert!(BrokerConfig::from_pairs(&pairs(&bad)).is_err(), "{bad:?}");
    }
}

#[test]
fn a_controller_joins_through_bootstrap_servers_with_a_cluster_id() {
    let base = [
        ("node.id", "4"),
        ("process.roles", "controller"),
        ("listeners", "CONTROLLER://127.0.0.1:19095"),
        (
            "controller.quorum.bootstrap.servers",
            "127.0.0.1:19093, 127.0.0.1:19094",
        ),
    ];
    let with_id = [base.as_slice(), &[("cluster.id", "MkU3OEVBNTcwNTJENDM2Qg")]].concat();
    let c = BrokerConfig::from_pairs(&pairs(&with_id)).unwrap();
    assert!(c.is_cluster() && c.controller_quorum_voters.is_empty());
    let ports: Vec<u16> = c
        .controller_quorum_bootstrap_servers
        .iter()
        .map(|e| e.port)
        .collect();
    assert_eq!(ports, [19093, 19094]);
    // No cluster id; a combined process (it must start the quorum: controller.quorum.voters).
    assert!(BrokerConfig::from_pairs(&pairs(&base)).is_err());
    let combined = [
        with_id.as_slice(),
        &[("process.roles", "broker,controller")],
    ]
    .concat();
    assert!(BrokerConfig::from_pairs(&pairs(&combined)).is_err());
}

#[test]
fn a_broker_finds_the_controllers_through_bootstrap_servers_with_a_cluster_id() {
    let base = [
        ("node.id", "5"),
        ("process.roles", "broker"),
        ("listeners", "PLAINTEXT://127.0.0.1:19096"),
        ("controller.quorum.bootstrap.servers", "127.0.0.1:19093"),
    ];
    assert!(
        BrokerConfig::from_pairs(&pairs(&base)).is_err(),
        "needs cluster.id"
    );
    let with_id = [base.as_slice(), &[("cluster.id", "MkU3OEVBNTcwNTJENDM2Qg")]].concat();
    let c = BrokerConfig::from_pairs(&pairs(&with_id)).unwrap();
    assert!(c.is_cluster() && c.controller_quorum_voters.is_empty());
}

fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
    p.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn defaults_match_kafka() {
    let c = BrokerConfig::from_pairs(&[]).unwrap();
    assert_eq!(c.listeners.listeners[0].endpoint.port, 9092);
    assert_eq!(c.num_partitions, 1);
    assert_eq!(c.socket_request_max_bytes, 104_857_600);
    assert_eq!(c.value("log.retention.ms").as_deref(), Some("604800000"));
    assert_eq!(c.value("message.max.bytes").as_deref(), Some("1048588"));
}

#[test]
fn unknown_key_is_named() {
    let err = BrokerConfig::from_pairs(&pairs(&[("log.retention.mss", "1")])).unwrap_err();
    assert_eq!(err, ConfigError::UnknownKey("log.retention.mss".into()));
    assert!(err.to_string().contains("log.retention.mss"));
}

#[test]
fn bad_value_is_named() {
    let err = BrokerConfig::from_pairs(&pairs(&[("num.partitions", "many")])).unwrap_err();
    assert!(err.to_string().contains("num.partitions"));
}

#[test]
fn retention_precedence_ms_minutes_hours() {
    let c = BrokerConfig::from_pairs(&pairs(&[("log.retention.hours", "1")])).unwrap();
    assert_eq!(c.value("log.retention.ms").as_deref(), Some("3600000"));
    let c = BrokerConfig::from_pairs(&pairs(&[
        ("log.retention.hours", "1"),
        ("log.retention.minutes", "2"),
    ]))
    .unwrap();
    assert_eq!(c.value("log.retention.ms").as_deref(), Some("120000"));
    let c = BrokerConfig::from_pairs(&pairs(&[
        ("log.retention.minutes", "2"),
        ("log.retention.ms", "5"),
    ]))
    .unwrap();
    assert_eq!(c.value("log.retention.ms").as_deref(), Some("5"));
}

#[test]
fn properties_parse() {
    let p =
        parse_properties("# c\n\nlisteners=PLAINTEXT://:9093\nlog.dirs : /tmp/x,/tmp/y\n").unwrap();
    let c = BrokerConfig::from_pairs(&p).unwrap();
    assert_eq!(c.listeners.listeners[0].endpoint.host, "0.0.0.0");
    assert_eq!(c.listeners.listeners[0].endpoint.port, 9093);
    assert_eq!(c.advertised_listener.host, "127.0.0.1");
    assert_eq!(c.log_dir, PathBuf::from("/tmp/x"));
    assert_eq!(
        c.log_dirs,
        vec![PathBuf::from("/tmp/x"), PathBuf::from("/tmp/y")]
    );
}

#[test]
fn topic_config_validation() {
    assert!(validate_topic_config("retention.ms", "1000").is_ok());
    assert!(validate_topic_config("retention.ms", "x").is_err());
    assert!(validate_topic_config("cleanup.policy", "compact,delete").is_ok());
    assert!(validate_topic_config("cleanup.policy", "keep").is_err());
    assert!(matches!(
        validate_topic_config("nope", "1"),
        Err(ConfigError::UnknownKey(_))
    ));
}
