//! The crate's rule (see the crate docs): no I/O, no tokio, no openraft. Its normal dependencies are
//! an allow list, and nothing they pull in (per the workspace `Cargo.lock`) may be tokio or openraft.

use std::collections::{BTreeMap, BTreeSet};

/// The only normal dependencies this crate may have.
const ALLOWED: &[&str] = &["imbl", "serde", "thiserror", "types", "uuid"];
/// Packages that must not be reachable from this crate's normal dependencies.
const FORBIDDEN: &[&str] = &["tokio", "openraft", "mio", "parking_lot"];

/// Names in the `[dependencies]` table of this crate's `Cargo.toml`.
fn normal_dependencies() -> Vec<String> {
    let manifest = include_str!("../Cargo.toml");
    let mut in_deps = false;
    let mut deps = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_deps = line == "[dependencies]";
        } else if in_deps && !line.is_empty() && !line.starts_with('#') {
            let name = line.split(['=', '.']).next().unwrap_or("").trim();
            deps.push(name.to_owned());
        }
    }
    deps
}

/// Package name → names of its dependencies, from the `[[package]]` entries of `Cargo.lock`.
fn lock_graph(lock: &str) -> BTreeMap<String, Vec<String>> {
    let mut graph: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut name = String::new();
    let mut in_deps = false;
    for line in lock.lines().map(str::trim) {
        if line == "[[package]]" {
            in_deps = false;
        } else if let Some(n) = line.strip_prefix("name = ") {
            name = n.trim_matches('"').to_owned();
            graph.entry(name.clone()).or_default();
        } else if line == "dependencies = [" {
            in_deps = true;
        } else if in_deps && line == "]" {
            in_deps = false;
        } else if in_deps {
            // `"serde"`, or `"syn 2.0.1"` when several versions are locked.
            let dep = line
                .trim_matches([',', '"'])
                .split(' ')
                .next()
                .unwrap_or("");
            graph.entry(name.clone()).or_default().push(dep.to_owned());
        }
    }
    graph
}

#[test]
fn normal_dependencies_are_the_allowed_ones() {
    let deps = normal_dependencies();
    assert!(!deps.is_empty(), "no [dependencies] found in Cargo.toml");
    for d in &deps {
        assert!(
            ALLOWED.contains(&d.as_str()),
            "metadata must not depend on `{d}`: the crate does no I/O and uses no tokio or openraft"
        );
    }
}

#[test]
fn nothing_reachable_pulls_in_tokio_or_openraft() {
    let lock_path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.lock");
    let lock = std::fs::read_to_string(lock_path).expect("workspace Cargo.lock");
    let graph = lock_graph(&lock);
    assert!(graph.contains_key("serde"), "Cargo.lock was not parsed");
    let mut seen = BTreeSet::new();
    let mut todo = normal_dependencies();
    while let Some(p) = todo.pop() {
        if seen.insert(p.clone()) {
            todo.extend(graph.get(&p).into_iter().flatten().cloned());
        }
    }
    for f in FORBIDDEN {
        assert!(
            !seen.contains(*f),
            "`{f}` is reachable from metadata's dependencies"
        );
    }
}
