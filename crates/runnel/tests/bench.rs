//! `runnel bench produce|consume` as processes against a real `runnel server` on 127.0.0.1: a count is
//! reported exactly, a broker that stops answering mid-run ends the run within `--timeout` instead of
//! librdkafka's message timeout, and Ctrl-C ends a run with a report of what was done.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{run_cli, Broker};
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(120);

fn bench_json(args: &[&str]) -> Value {
    let out = run_cli(args, b"", LIMIT);
    assert!(
        out.status.success(),
        "`runnel {}` failed with {}: {}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn consume_count_is_reported_exactly_even_when_a_batch_runs_past_it() {
    let b = Broker::start(&[]);
    let addr = b.addr();
    let produced = bench_json(&[
        "bench",
        "produce",
        "-t",
        "exact",
        "--partitions",
        "1",
        "-n",
        "5000",
        "-s",
        "100",
        "--json",
        "-b",
        &addr,
    ]);
    assert_eq!(produced["records"], 5000, "{produced}");
    for n in ["1", "10", "4999"] {
        let consumed = bench_json(&[
            "bench", "consume", "-t", "exact", "-n", n, "--json", "-b", &addr,
        ]);
        let want: u64 = n.parse().unwrap();
        assert_eq!(consumed["records"], want, "{consumed}");
        assert_eq!(consumed["bytes"], want * 100, "{consumed}");
    }
}

#[test]
fn produce_gives_up_within_the_timeout_when_the_broker_stops_answering() {
    let b = Broker::start(&[]);
    let addr = b.addr();
    let mut bench = spawn_endless_produce(&addr, "stall", &["--timeout", "2"]);
    // Wait (bounded) until records reach the log, then freeze the broker.
    wait_for_log_bytes(&b, "stall-0");
    // SAFETY: kill(2) on our own child's PID.
    unsafe { libc::kill(b.child.id() as i32, libc::SIGSTOP) };
    let stopped = Instant::now();
    let limit = Duration::from_secs(60);
    let status = loop {
        if let Some(s) = bench.try_wait().unwrap() {
            break s;
        }
        if stopped.elapsed() > limit {
            let _ = bench.kill();
            let _ = bench.wait();
            // SAFETY: as above.
            unsafe { libc::kill(b.child.id() as i32, libc::SIGCONT) };
            panic!("bench produce still running {limit:?} after the broker stopped (--timeout 2)");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let took = stopped.elapsed();
    // SAFETY: as above.
    unsafe { libc::kill(b.child.id() as i32, libc::SIGCONT) };
    let mut err = String::new();
    use std::io::Read;
    let _ = bench.stderr.take().unwrap().read_to_string(&mut err);
    assert!(
        !status.success(),
        "bench produce succeeded against a stopped broker"
    );
    assert!(
        err.contains("stopped acknowledging"),
        "expected a stall error, got ({took:?}): {err}"
    );
}

/// Starts `runnel bench produce` of 100-byte records for 600 s into one-partition `topic`, with `extra`
/// arguments; stdout and stderr piped.
fn spawn_endless_produce(addr: &str, topic: &str, extra: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_runnel"))
        .args([
            "bench",
            "produce",
            "-t",
            topic,
            "--partitions",
            "1",
            "-d",
            "600",
            "-s",
            "100",
            "-b",
            addr,
        ])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn runnel bench")
}

/// Waits (bounded, 60 s) until partition directory `dir` of the broker holds log bytes.
fn wait_for_log_bytes(b: &Broker, dir: &str) {
    let segment_dir = b.data_dir().join(dir);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let bytes: u64 = std::fs::read_dir(&segment_dir)
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
                    .filter_map(|e| e.metadata().ok())
                    .map(|m| m.len())
                    .sum()
            })
            .unwrap_or(0);
        if bytes > 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no record reached {} within 60 s",
            segment_dir.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn ctrl_c_ends_a_produce_run_with_a_report() {
    let b = Broker::start(&[]);
    let addr = b.addr();
    let bench = spawn_endless_produce(&addr, "intr", &["--json"]);
    wait_for_log_bytes(&b, "intr-0");
    // SAFETY: kill(2) on our own child's PID.
    unsafe { libc::kill(bench.id() as i32, libc::SIGINT) };
    let pid = bench.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(bench.wait_with_output());
    });
    let out = match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            // SAFETY: as above.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("bench produce still running 60 s after SIGINT");
        }
    };
    assert!(
        out.status.success(),
        "interrupted run failed with {}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)));
    assert!(v["records"].as_u64().unwrap_or(0) > 0, "{v}");
    assert!(v["seconds"].as_f64().unwrap_or(600.0) < 600.0, "{v}");
}
