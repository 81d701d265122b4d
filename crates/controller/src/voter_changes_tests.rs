//! The pure checks of AddRaftVoter and RemoveRaftVoter against a membership.

use super::*;

fn node(port: u16, dir: Option<u128>) -> QuorumNode {
    QuorumNode {
        addr: format!("127.0.0.1:{port}"),
        directory_id: dir.map(uuid::Uuid::from_u128),
    }
}

/// Voters 1 (static, no directory id) and 2 (directory id 2); learner 3.
fn membership() -> Membership {
    let nodes = BTreeMap::from([
        (1, node(9001, None)),
        (2, node(9002, Some(2))),
        (3, node(9003, Some(3))),
    ]);
    Membership::new(vec![BTreeSet::from([1, 2])], nodes)
}

fn add(id: i32, listeners: &[(&str, &str, u16)]) -> AddVoter {
    AddVoter {
        cluster_id: None,
        timeout_ms: 30_000,
        voter_id: BrokerId(id),
        directory_id: uuid::Uuid::from_u128(id as u128),
        listeners: listeners
            .iter()
            .map(|(n, h, p)| (n.to_string(), h.to_string(), *p))
            .collect(),
    }
}

#[test]
fn voters_and_learners_come_from_the_membership() {
    let m = membership();
    assert_eq!(
        voters(&m).keys().copied().collect::<Vec<_>>(),
        [BrokerId(1), BrokerId(2)]
    );
    assert_eq!(
        learners(&m).keys().copied().collect::<Vec<_>>(),
        [BrokerId(3)]
    );
    assert_eq!(voters(&m)[&BrokerId(2)].addr, "127.0.0.1:9002");
}

#[test]
fn add_takes_the_endpoint_of_the_controller_listener() {
    let m = membership();
    let req = add(3, &[("OTHER", "h", 1), ("controller", "127.0.0.1", 9003)]);
    let n = check_add(&m, false, &req, "CONTROLLER").unwrap();
    assert_eq!(n, node(9003, Some(3)));
    let v6 = check_add(
        &m,
        false,
        &add(4, &[("CONTROLLER", "::1", 9)]),
        "CONTROLLER",
    )
    .unwrap();
    assert_eq!(v6.addr, "[::1]:9");
}

#[test]
fn add_refusals_follow_kafkas_order() {
    let m = membership();
    let code = |r: Result<QuorumNode, Refusal>| r.unwrap_err().0;
    // A change in flight wins over everything else.
    let dup = add(2, &[("CONTROLLER", "h", 1)]);
    assert_eq!(
        code(check_add(&m, true, &dup, "CONTROLLER")),
        ErrorCode::REQUEST_TIMED_OUT
    );
    assert_eq!(
        code(check_add(&m, false, &dup, "CONTROLLER")),
        ErrorCode::DUPLICATE_VOTER
    );
    let no_listener = add(4, &[("BROKER", "h", 1)]);
    assert_eq!(
        code(check_add(&m, false, &no_listener, "CONTROLLER")),
        ErrorCode::INVALID_REQUEST
    );
    // A joint config is a change in flight too.
    let joint = Membership::new(
        vec![BTreeSet::from([1, 2]), BTreeSet::from([1, 2, 3])],
        BTreeMap::<u64, QuorumNode>::new(),
    );
    assert_eq!(
        code(check_add(
            &joint,
            false,
            &add(4, &[("CONTROLLER", "h", 1)]),
            "CONTROLLER"
        )),
        ErrorCode::REQUEST_TIMED_OUT
    );
}

#[test]
fn remove_matches_id_and_directory_id() {
    let m = membership();
    let dir = uuid::Uuid::from_u128;
    assert_eq!(check_remove(&m, false, BrokerId(2), dir(2)), Ok(()));
    // A static voter's directory id is the zero UUID.
    assert_eq!(
        check_remove(&m, false, BrokerId(1), uuid::Uuid::nil()),
        Ok(())
    );
    let code = |r: Result<(), Refusal>| r.unwrap_err().0;
    assert_eq!(
        code(check_remove(&m, false, BrokerId(2), dir(9))),
        ErrorCode::VOTER_NOT_FOUND
    );
    assert_eq!(
        code(check_remove(&m, false, BrokerId(3), dir(3))),
        ErrorCode::VOTER_NOT_FOUND
    );
    assert_eq!(
        code(check_remove(&m, true, BrokerId(2), dir(2))),
        ErrorCode::REQUEST_TIMED_OUT
    );
    let one = Membership::new(
        vec![BTreeSet::from([1])],
        BTreeMap::from([(1, node(9001, None))]),
    );
    assert_eq!(
        code(check_remove(&one, false, BrokerId(1), uuid::Uuid::nil())),
        ErrorCode::INVALID_REQUEST
    );
}
