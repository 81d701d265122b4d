use super::*;

fn config(lines: &str) -> BrokerConfig {
    BrokerConfig::from_pairs(&crate::config::parse_properties(lines).unwrap()).unwrap()
}

const PLAIN: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";

fn peer(principal: &str) -> Peer {
    Peer {
        principal: principal.into(),
        host: "127.0.0.1".into(),
    }
}

#[test]
fn the_protocol_comes_from_the_map_and_defaults_to_plaintext() {
    let c = config("process.roles=broker,controller\n");
    assert_eq!(controller_listener_name(&c), "CONTROLLER");
    assert_eq!(
        controller_protocol(&c).unwrap(),
        SecurityProtocol::Plaintext
    );
    let c = config(
        "controller.listener.names=CTL\n\
         listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CTL:SASL_PLAINTEXT\n",
    );
    assert_eq!(controller_listener_name(&c), "CTL");
    assert_eq!(
        controller_protocol(&c).unwrap(),
        SecurityProtocol::SaslPlaintext
    );
}

#[test]
fn sasl_plain_needs_its_users_and_login_and_scram_is_refused() {
    let base = "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT\n\
                sasl.mechanism.controller.protocol=PLAIN\n";
    let jaas = format!(
        "listener.name.controller.plain.sasl.jaas.config={PLAIN} required username=\"ctl\" password=\"pw\" user_ctl=\"pw\";\n"
    );
    let ok = config(&format!(
        "{base}listener.name.controller.sasl.enabled.mechanisms=PLAIN\n\
         max.connections=3\nlistener.name.controller.max.connections=7\n{jaas}"
    ));
    let s = ControllerListenerSecurity::new(&ok, true).unwrap();
    assert_eq!(s.protocol(), SecurityProtocol::SaslPlaintext);
    assert_eq!(s.limits.max_connections, 7);
    assert_eq!(s.limits.idle_timeout, Duration::from_millis(600_000));
    let scram = config(&format!(
        "{base}listener.name.controller.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256\n{jaas}"
    ));
    let e = ControllerListenerSecurity::new(&scram, true).unwrap_err();
    assert!(
        e.to_string().contains("SCRAM-SHA-256 cannot authenticate"),
        "{e}"
    );
    let no_login = config(&format!(
        "{base}listener.name.controller.sasl.enabled.mechanisms=PLAIN\n\
         listener.name.controller.plain.sasl.jaas.config={PLAIN} required user_ctl=\"pw\";\n"
    ));
    let e = ControllerListenerSecurity::new(&no_login, true).unwrap_err();
    assert!(e.to_string().contains("username and password"), "{e}");
}

#[test]
fn peers_must_be_super_users_or_hold_cluster_action() {
    let c = config("super.users=User:ctl;User:admin\n");
    let a = ControllerAuthorizer::new(&c).unwrap();
    let image = MetadataImage::default();
    assert!(a
        .authorize(&peer("User:ctl"), &image, ClusterOperation::ClusterAction)
        .is_ok());
    let e = a
        .authorize(
            &peer("User:mallory"),
            &image,
            ClusterOperation::ClusterAction,
        )
        .unwrap_err();
    assert!(e.contains("User:mallory is not in super.users"), "{e}");

    let c = config(
        "super.users=User:ctl\n\
         authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\n",
    );
    let a = ControllerAuthorizer::new(&c).unwrap();
    let mut image = MetadataImage::default();
    let cluster_action = ClusterOperation::ClusterAction;
    assert!(a
        .authorize(&peer("User:broker9"), &image, cluster_action)
        .is_err());
    let allow = authorizer::AclBinding {
        pattern: authorizer::acl::ResourcePattern {
            resource_type: ResourceType::Cluster,
            name: CLUSTER_NAME.into(),
            pattern_type: authorizer::acl::PatternType::Literal,
        },
        entry: authorizer::acl::AccessControlEntry {
            principal: "User:broker9".into(),
            host: "*".into(),
            operation: AclOperation::ClusterAction,
            permission_type: authorizer::acl::AclPermissionType::Allow,
        },
    };
    image
        .acls
        .insert(uuid::Uuid::new_v4(), crate::acls::to_entry(&allow));
    assert!(a
        .authorize(&peer("User:broker9"), &image, cluster_action)
        .is_ok());
    assert!(a
        .authorize(&peer("User:other"), &image, cluster_action)
        .is_err());
    // CLUSTER_ACTION is not DESCRIBE nor ALTER (the tools' requests), as in Kafka.
    let describe = ClusterOperation::Describe;
    let e = a
        .authorize(&peer("User:broker9"), &image, describe)
        .unwrap_err();
    assert!(e.contains("allowed DESCRIBE on the cluster"), "{e}");
    let bits = a.cluster_operations(&peer("User:broker9"), &image);
    assert_eq!(bits, 1 << AclOperation::ClusterAction.code());
    assert_eq!(a.cluster_operations(&peer("User:other"), &image), 0);
    // ALTER implies DESCRIBE (Kafka's implication): an admin allowed ALTER may use both tools' requests.
    let mut alter = allow.clone();
    alter.entry.principal = "User:admin".into();
    alter.entry.operation = AclOperation::Alter;
    image
        .acls
        .insert(uuid::Uuid::new_v4(), crate::acls::to_entry(&alter));
    for op in [ClusterOperation::Alter, describe] {
        assert!(
            a.authorize(&peer("User:admin"), &image, op).is_ok(),
            "{op:?}"
        );
    }
    assert!(a
        .authorize(&peer("User:admin"), &image, cluster_action)
        .is_err());
    // A super user may do anything, without ACLs.
    assert!(a.authorize(&peer("User:ctl"), &image, describe).is_ok());
}
