//! `cargo run -p xtask -- tidy [--print-allow]`.

use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: cargo run -p xtask -- tidy [--print-allow]

tidy               check file/function sizes and blocking calls against xtask/tidy-allow.txt
tidy --print-allow print every current offender in allow-list syntax (to review a new list)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the repository root")
        .to_path_buf();
    match args.as_slice() {
        ["tidy"] => match xtask::tidy::check_repo(&root) {
            Ok(report) => {
                print!("{report}");
                if report.errors.is_empty() {
                    println!("tidy: ok");
                    ExitCode::SUCCESS
                } else {
                    println!("tidy: {} error(s)", report.errors.len());
                    ExitCode::FAILURE
                }
            }
            Err(e) => {
                eprintln!("tidy: {e}");
                ExitCode::FAILURE
            }
        },
        ["tidy", "--print-allow"] => match xtask::tidy::measure_repo(&root) {
            Ok(measures) => {
                let report = xtask::tidy::check(&measures, &Default::default());
                for line in report.offenders {
                    println!("{line}");
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("tidy: {e}");
                ExitCode::FAILURE
            }
        },
        _ => {
            eprintln!("{USAGE}");
            ExitCode::FAILURE
        }
    }
}
