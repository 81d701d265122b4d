//! Runs `tidy` on the repository, so `cargo test --workspace` (and CI) enforces the size ratchet.

use std::path::Path;

#[test]
fn tidy() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let report = xtask::tidy::check_repo(root).unwrap_or_else(|e| panic!("tidy: {e}"));
    print!("{report}");
    assert!(
        report.errors.is_empty(),
        "tidy found {} problem(s) (see above; `cargo run -p xtask -- tidy` shows the same):\n{report}",
        report.errors.len()
    );
}
