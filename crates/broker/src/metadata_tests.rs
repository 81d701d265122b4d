//! Tests of the topic registry (`metadata.rs`).

use super::*;

#[test]
fn cluster_id_is_22_chars_and_stable() {
    let dir = tempfile::tempdir().unwrap();
    let a = MetadataStore::open(dir.path(), 1).unwrap();
    assert_eq!(a.cluster_id().len(), 22);
    let id = a.cluster_id().to_string();
    drop(a);
    let b = MetadataStore::open(dir.path(), 1).unwrap();
    assert_eq!(b.cluster_id(), id);
    assert!(MetadataStore::open(dir.path(), 2).is_err());
}

#[test]
fn topics_persist_and_collide() {
    let dir = tempfile::tempdir().unwrap();
    let s = MetadataStore::open(dir.path(), 1).unwrap();
    let t = TopicMetadata {
        topic_id: Uuid::new_v4(),
        partitions: 3,
        configs: BTreeMap::new(),
    };
    assert!(s.create_topic("a.b", t.clone()).unwrap());
    assert!(!s.create_topic("a.b", t.clone()).unwrap());
    assert_eq!(s.colliding_topic("a_b").as_deref(), Some("a.b"));
    drop(s);
    let s = MetadataStore::open(dir.path(), 1).unwrap();
    assert_eq!(s.topic("a.b"), Some(t.clone()));
    assert_eq!(s.topic_by_id(t.topic_id).unwrap().0, "a.b");
    assert!(s.delete_topic("a.b").unwrap().is_some());
    assert!(s.topic("a.b").is_none());
}

#[tokio::test]
async fn producer_ids_never_repeat_across_restart() {
    let dir = tempfile::tempdir().unwrap();
    let s = MetadataStore::open(dir.path(), 1).unwrap();
    let a = s.allocate_producer_id().await.unwrap();
    let b = s.allocate_producer_id().await.unwrap();
    assert_eq!(b.get(), a.get() + 1);
    drop(s);
    let s = MetadataStore::open(dir.path(), 1).unwrap();
    assert!(s.allocate_producer_id().await.unwrap() > b);
}

fn topic(partitions: i32) -> TopicMetadata {
    TopicMetadata {
        topic_id: Uuid::new_v4(),
        partitions,
        configs: BTreeMap::new(),
    }
}

/// Crash safety of the change log: the log cut at every byte offset of its last entry (a torn append)
/// reopens with every earlier change and without the torn one; the cut tail is removed from the file.
#[test]
fn a_torn_last_change_is_dropped_and_earlier_ones_kept() {
    let dir = tempfile::tempdir().unwrap();
    let s = MetadataStore::open(dir.path(), 1).unwrap();
    let (a, b) = (topic(1), topic(2));
    s.create_topic("a", a.clone()).unwrap();
    s.create_topic("b", b.clone()).unwrap();
    s.update_topic("a", |t| {
        Ok::<_, ()>(TopicMetadata {
            partitions: 5,
            ..t.clone()
        })
    })
    .unwrap();
    assert!(s.delete_topic("b").unwrap().is_some());
    let log = dir.path().join(CHANGE_LOG);
    let before_last = fs::metadata(&log).unwrap().len();
    s.create_topic("c", topic(3)).unwrap();
    drop(s);
    let full = fs::read(&log).unwrap();
    assert!(
        !dir.path().join(SNAPSHOT).exists(),
        "no compaction expected yet"
    );
    for cut in before_last..full.len() as u64 {
        fs::write(&log, &full[..cut as usize]).unwrap();
        let s = MetadataStore::open(dir.path(), 1).unwrap();
        assert_eq!(s.topic("a").map(|t| t.partitions), Some(5), "cut at {cut}");
        assert_eq!(s.topic("b"), None, "cut at {cut}");
        assert_eq!(s.topic("c"), None, "cut at {cut}");
        assert_eq!(
            fs::metadata(&log).unwrap().len(),
            before_last,
            "cut at {cut}"
        );
        drop(s);
    }
    fs::write(&log, &full).unwrap();
    let s = MetadataStore::open(dir.path(), 1).unwrap();
    assert_eq!(s.topic("c").map(|t| t.partitions), Some(3));
}

/// The log is compacted into the snapshot once it outgrows it; a crash between writing the snapshot and
/// emptying the log (the old entries replayed over the new snapshot) ends in the same state.
#[test]
fn the_log_compacts_into_the_snapshot_and_replay_over_it_is_harmless() {
    let dir = tempfile::tempdir().unwrap();
    let s = MetadataStore::open(dir.path(), 1).unwrap();
    let log = dir.path().join(CHANGE_LOG);
    let mut n = 0;
    while !dir.path().join(SNAPSHOT).exists() {
        s.create_topic(&format!("t{n}"), topic(1)).unwrap();
        n += 1;
        assert!(n < 10_000, "never compacted");
    }
    assert_eq!(fs::metadata(&log).unwrap().len(), 0);
    let before = s.topics();
    s.create_topic("after", topic(2)).unwrap();
    s.delete_topic("t0").unwrap();
    let entries = fs::read(&log).unwrap();
    {
        let state = s.state.read();
        compact(dir.path(), &state, &mut s.persistence.lock()).unwrap();
    }
    drop(s);
    fs::write(&log, &entries).unwrap(); // the crash left the log as it was
    let s = MetadataStore::open(dir.path(), 1).unwrap();
    let mut want = before;
    want.remove("t0");
    want.insert("after".into(), s.topic("after").unwrap());
    assert_eq!(s.topics(), want);
    assert_eq!(s.topics().len(), n);
}

/// A data dir of an earlier version (the snapshot only) opens, and later changes go to the log.
#[test]
fn a_snapshot_only_data_dir_opens() {
    let dir = tempfile::tempdir().unwrap();
    let t = topic(4);
    let old = serde_json::json!({
        "topics": { "old": { "topic_id": t.topic_id, "partitions": 4, "configs": {} } },
        "next_producer_id": 2000
    });
    fs::write(dir.path().join(SNAPSHOT), old.to_string()).unwrap();
    let s = MetadataStore::open(dir.path(), 1).unwrap();
    assert_eq!(s.topic("old"), Some(t));
    s.create_topic("new", topic(1)).unwrap();
    drop(s);
    let s = MetadataStore::open(dir.path(), 1).unwrap();
    assert_eq!(s.topics().len(), 2);
}

/// ACLs survive a restart (through the change log and through a compaction into the snapshot).
#[test]
fn acls_persist() {
    let dir = tempfile::tempdir().unwrap();
    let s = MetadataStore::open(dir.path(), 1).unwrap();
    let acl = AclEntry {
        resource_type: 2,
        resource_name: "t".into(),
        pattern_type: 3,
        principal: "User:a".into(),
        host: "*".into(),
        operation: 3,
        permission_type: 3,
    };
    let (a, b) = (Uuid::from_u128(1), Uuid::from_u128(2));
    s.put_acls(vec![(a, acl.clone()), (b, acl.clone())])
        .unwrap();
    s.delete_acls(vec![a, Uuid::from_u128(3)]).unwrap();
    drop(s);
    let s = MetadataStore::open(dir.path(), 1).unwrap();
    assert_eq!(s.acls().into_iter().collect::<Vec<_>>(), vec![(b, acl)]);
    let state = s.state.read().clone();
    compact(dir.path(), &state, &mut s.persistence.lock()).unwrap();
    drop(state);
    drop(s);
    let s = MetadataStore::open(dir.path(), 1).unwrap();
    assert_eq!(s.acls().len(), 1);
}

#[test]
fn base64url_matches_known_value() {
    let id = Uuid::from_u128(0);
    assert_eq!(base64url_uuid(id), "AAAAAAAAAAAAAAAAAAAAAA");
    let id = Uuid::from_u128(u128::MAX);
    assert_eq!(base64url_uuid(id), "_____________________w");
}

#[test]
fn group_configs_persist_and_an_empty_set_removes_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let s = MetadataStore::open(dir.path(), 1).unwrap();
    let configs: BTreeMap<String, String> = [(
        "share.auto.offset.reset".to_string(),
        "earliest".to_string(),
    )]
    .into();
    s.set_group_config("g", configs.clone()).unwrap();
    drop(s);
    let s = MetadataStore::open(dir.path(), 1).unwrap();
    assert_eq!(s.group_config("g"), configs);
    assert_eq!(s.groups_with_configs(), vec!["g".to_string()]);
    s.set_group_config("g", BTreeMap::new()).unwrap();
    drop(s);
    let s = MetadataStore::open(dir.path(), 1).unwrap();
    assert!(s.group_config("g").is_empty());
    assert!(s.groups_with_configs().is_empty());
    s.replace_group_configs(&[("h".to_string(), configs.clone())].into());
    assert_eq!(s.group_config("h"), configs);
}
