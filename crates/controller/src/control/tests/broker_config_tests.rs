//! Dynamic broker configs in the metadata log (KIP-631 `ConfigRecord`s of resource type BROKER).

use super::*;

/// BROKER configs (KIP-631 `ConfigRecord`, resource type 4): the cluster default (name "") and any broker id,
/// registered or not, as Kafka's controller accepts; validate-only writes nothing; deletes empty a level.
#[test]
fn broker_configs_become_config_records_for_the_default_and_any_broker_id() {
    let mut s = Sim::new(false);
    s.active(&[1, 2]);
    let alter = |s: &mut Sim, name: &str, k: &str, v: Option<&str>, check: bool| {
        let ops = [(k.to_string(), v.map(str::to_string))];
        let image = s.image.clone();
        s.ctl
            .alter_configs(&image, RESOURCE_BROKER, name, &ops, check)
    };
    let recs = alter(&mut s, "", "message.max.bytes", Some("9"), false).unwrap();
    let name = "message.max.bytes".into();
    let (resource_name, value) = (String::new(), Some("9".into()));
    let resource_type = RESOURCE_BROKER;
    let want = MetadataRecord::ConfigRecord {
        resource_type,
        resource_name,
        name,
        value,
    };
    assert_eq!(recs, vec![want]);
    s.commit(recs);
    for id in ["2", "7"] {
        let recs = alter(&mut s, id, "log.roll.ms", Some("5"), false).unwrap();
        s.commit(recs);
    }
    assert_eq!(s.image.broker_configs[""]["message.max.bytes"], "9");
    assert_eq!(s.image.broker_configs["2"]["log.roll.ms"], "5");
    assert_eq!(s.image.broker_configs["7"]["log.roll.ms"], "5");
    assert!(alter(&mut s, "2", "log.roll.ms", None, true)
        .unwrap()
        .is_empty());
    let recs = alter(&mut s, "2", "log.roll.ms", None, false).unwrap();
    s.commit(recs);
    assert!(!s.image.broker_configs.contains_key("2"));
    let err = alter(&mut s, "-1", "a", None, false).unwrap_err();
    assert_eq!(err.code, ErrorCode::INVALID_REQUEST);
}
