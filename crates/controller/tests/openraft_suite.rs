//! openraft's own storage conformance suite (`openraft::testing::Suite`, openraft 0.9, exposed
//! without a feature flag; with `storage-v2` it drives [`RaftLogStorage`] and
//! [`RaftStateMachine`] directly) run against the controller's disk-backed [`LogStore`] and
//! [`StateMachineStore`].
//!
//! Each suite case is its own `#[test]` (the suite's `test_all` stops at the first failing
//! assertion), every one on a fresh store in its own temporary directory, and followed by a reopen
//! of the log store that must give back the same log; `whole_suite` also runs `Suite::test_all` so
//! that a case added to the suite by an openraft upgrade is not missed. No case is skipped here.
//! One case skips part of itself: `get_initial_state_re_apply_committed` returns early when the
//! store does not persist the committed log id (`RaftLogStorage::save_committed` is optional in
//! openraft 0.9, and our log store does not implement it: after a restart the committed entries past
//! the last snapshot are re-applied once a leader commits again, not at open).
//!
//! [`RaftLogStorage`]: openraft::storage::RaftLogStorage
//! [`RaftStateMachine`]: openraft::storage::RaftStateMachine

use controller::log_store::LogStore;
use controller::raft_types::{StorageError, TypeConfig};
use controller::state_machine::StateMachineStore;
use openraft::storage::RaftLogStorage;
use openraft::testing::{StoreBuilder, Suite};
use openraft::{AnyError, RaftLogReader, StorageIOError};
use tempfile::TempDir;

/// Builds a log store and a state machine in one fresh temporary directory, laid out as the
/// controller lays them out (both in the store directory); the directory is the guard.
struct DiskStoreBuilder;

impl StoreBuilder<TypeConfig, LogStore, StateMachineStore, TempDir> for DiskStoreBuilder {
    async fn build(&self) -> Result<(TempDir, LogStore, StateMachineStore), StorageError> {
        let io = |e: std::io::Error| StorageError::from(StorageIOError::read(AnyError::new(&e)));
        let dir = tempfile::tempdir().map_err(io)?;
        let log = LogStore::open(storage::real_fs(), dir.path()).map_err(io)?;
        let sm =
            StateMachineStore::open(storage::real_fs(), dir.path(), "suite-cluster").map_err(io)?;
        Ok((dir, log, sm))
    }
}

/// Runs one case on a fresh runtime, as the suite's own (not exported) `run_fut` does, so that a task left
/// behind by one case cannot affect the next. (The error type is openraft's, as the suite returns it.)
#[allow(clippy::result_large_err)]
fn run_fut(
    case: impl std::future::Future<Output = Result<(), StorageError>>,
) -> Result<(), StorageError> {
    tokio::runtime::Runtime::new()
        .expect("a tokio runtime")
        .block_on(case)
}

type S = Suite<TypeConfig, LogStore, StateMachineStore, DiskStoreBuilder, TempDir>;

/// What a reopen must give back: the log state, the vote, and every live entry (as `Debug` text).
async fn durable_state(log: &mut LogStore) -> Result<String, StorageError> {
    let state = log.get_log_state().await?;
    let vote = log.read_vote().await?;
    let entries = log.try_get_log_entries(..).await?;
    Ok(format!("{state:?}\n{vote:?}\n{entries:?}"))
}

/// One `#[test]` per suite case taking `(LogStore, StateMachineStore)`. After the case, the log store is
/// reopened from its directory and must hold exactly what the case left (the suite itself never reopens a
/// store, so this is what checks the on-disk format against every sequence of calls the suite makes).
macro_rules! suite_cases {
    ($($case:ident),* $(,)?) => {
        $(
            #[test]
            fn $case() {
                run_fut(async {
                    let (dir, mut log, sm) = DiskStoreBuilder.build().await?;
                    S::$case(log.clone(), sm).await?;
                    let before = durable_state(&mut log).await?;
                    drop(log);
                    let mut reopened = LogStore::open(storage::real_fs(), dir.path()).expect("reopen the log store");
                    assert_eq!(durable_state(&mut reopened).await?, before, "after a reopen");
                    Ok(())
                })
                .unwrap();
            }
        )*
    };
}

// In the order of `Suite::test_store` (openraft 0.9.25).
suite_cases!(
    last_membership_in_log_initial,
    last_membership_in_log,
    last_membership_in_log_multi_step,
    get_membership_initial,
    get_membership_from_log_and_empty_sm,
    get_membership_from_empty_log_and_sm,
    get_membership_from_log_le_sm_last_applied,
    get_membership_from_log_gt_sm_last_applied_1,
    get_membership_from_log_gt_sm_last_applied_2,
    get_initial_state_without_init,
    get_initial_state_membership_from_log_and_sm,
    get_initial_state_with_state,
    get_initial_state_last_log_gt_sm,
    get_initial_state_last_log_lt_sm,
    get_initial_state_log_ids,
    get_initial_state_re_apply_committed,
    save_vote,
    get_log_entries,
    limited_get_log_entries,
    try_get_log_entry,
    initial_logs,
    get_log_state,
    get_log_id,
    last_id_in_log,
    last_applied_state,
    purge_logs_upto_0,
    purge_logs_upto_5,
    purge_logs_upto_20,
    delete_logs_since_11,
    delete_logs_since_0,
    append_to_log,
    snapshot_meta,
    apply_single,
    apply_multiple,
);

#[test]
fn transfer_snapshot() {
    run_fut(S::transfer_snapshot(&DiskStoreBuilder)).unwrap();
}

#[test]
fn whole_suite() {
    S::test_all(DiskStoreBuilder).unwrap();
}
