//! Several data directories (`log.dirs`, JBOD, KIP-112): where new partitions go, loading every
//! directory at startup, a partition in two directories refused, per-directory checkpoints.

use crate::*;
use std::path::PathBuf;

const NOW: i64 = 1_700_000_000_000;

fn load(online: bool, cordoned: bool, partitions: usize) -> LogDirLoad {
    LogDirLoad {
        online,
        cordoned,
        partitions,
    }
}

#[test]
fn a_new_partition_goes_to_the_online_uncordoned_dir_with_the_fewest_partitions() {
    assert_eq!(
        choose_log_dir(&[load(true, false, 2), load(true, false, 1)]),
        Some(1)
    );
    // A tie goes to the first in log.dirs order.
    assert_eq!(
        choose_log_dir(&[load(true, false, 1), load(true, false, 1)]),
        Some(0)
    );
    // Offline and cordoned dirs get nothing, however empty.
    let dirs = [
        load(false, false, 0),
        load(true, true, 0),
        load(true, false, 9),
    ];
    assert_eq!(choose_log_dir(&dirs), Some(2));
    assert_eq!(
        choose_log_dir(&[load(false, false, 0), load(true, true, 0)]),
        None
    );
    assert_eq!(choose_log_dir(&[]), None);
}

fn three_dirs(root: &std::path::Path) -> Vec<PathBuf> {
    ["a", "b", "c"].iter().map(|d| root.join(d)).collect()
}

fn open(dirs: &[PathBuf]) -> Result<LogManager, StorageError> {
    LogManager::open_dirs(
        dirs.to_vec(),
        |_| LogConfig::default(),
        crate::tests::clock_at(NOW),
    )
}

#[test]
fn partitions_spread_over_the_dirs_and_are_all_loaded_again() {
    let root = tempfile::tempdir().unwrap();
    let dirs = three_dirs(root.path());
    let lm = open(&dirs).unwrap();
    let id = uuid::Uuid::from_u128(3);
    for p in 0..6 {
        lm.get_or_create_log("t", p, id, LogConfig::default())
            .unwrap();
    }
    for i in 0..3 {
        assert_eq!(lm.partitions_in_dir(i).len(), 2, "dir {i}");
    }
    assert_eq!(lm.log_dir_of("t", 0), Some(dirs[0].as_path()));
    assert_eq!(lm.log_dir_of("t", 1), Some(dirs[1].as_path()));
    lm.shutdown().unwrap();
    // Each directory's checkpoint names only its own partitions.
    let cp = OffsetCheckpointFile::new(dirs[2].join("recovery-point-offset-checkpoint"))
        .read()
        .unwrap();
    let mut in_c: Vec<i32> = cp.keys().map(|(_, p)| *p).collect();
    in_c.sort();
    assert_eq!(in_c, vec![2, 5]);
    drop(lm);
    let lm = open(&dirs).unwrap();
    assert!(lm.had_clean_shutdown());
    assert_eq!(lm.all_logs().len(), 6);
    assert_eq!(lm.log_dir_of("t", 5), Some(dirs[2].as_path()));
    // The next partition goes where the fewest are: the dir whose partition was deleted.
    assert!(lm.delete_log("t", 4).unwrap());
    lm.get_or_create_log("u", 0, id, LogConfig::default())
        .unwrap();
    assert_eq!(lm.log_dir_of("u", 0), Some(dirs[1].as_path()));
}

#[test]
fn a_partition_in_two_dirs_refuses_to_start() {
    let root = tempfile::tempdir().unwrap();
    let dirs = three_dirs(root.path());
    let lm = open(&dirs).unwrap();
    lm.get_or_create_log("t", 0, uuid::Uuid::nil(), LogConfig::default())
        .unwrap();
    lm.shutdown().unwrap();
    drop(lm);
    std::fs::create_dir_all(dirs[2].join("t-0")).unwrap();
    let err = open(&dirs).unwrap_err();
    assert!(matches!(err, StorageError::DuplicateLog(_)), "{err}");
    assert!(err.to_string().contains("t-0"), "{err}");
    // The same directory named twice is refused too.
    let twice = vec![dirs[0].clone(), dirs[0].clone()];
    assert!(matches!(open(&twice), Err(StorageError::DuplicateLog(_))));
}
