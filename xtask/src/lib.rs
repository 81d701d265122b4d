//! Repository automation for Runnel, run as `cargo run -p xtask -- <command>` (rust-analyzer's `xtask`
//! convention: plain Rust instead of shell scripts).
//!
//! * [`tidy`]: file and function size limits and the broker's ban on blocking calls, as a ratchet. Also run
//!   by `cargo test --workspace` (see `tests/tidy.rs`).

#![warn(missing_docs)]

pub mod tidy;
