//! Shared by the integration tests: a real `runnel server` process on a free port of 127.0.0.1
//! with a temporary data dir, killed on drop, and a bounded runner for `runnel` subcommands.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The port in the last "runnel broker started listen=HOST:PORT" line of a broker log.
fn started_port(log: &str) -> Option<u16> {
    let line = log
        .lines()
        .rev()
        .find(|l| l.contains("runnel broker started"))?;
    let addr = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("listen="))?;
    addr.rsplit(':').next()?.parse().ok()
}

/// A running broker process, killed on drop.
pub struct Broker {
    pub child: Child,
    pub port: u16,
    pub dir: tempfile::TempDir,
}

impl Broker {
    pub fn start(extra: &[&str]) -> Broker {
        let dir = tempfile::tempdir().unwrap();
        Broker::start_in(dir, extra)
    }

    /// Starts `runnel server` on port 0 of 127.0.0.1 and learns the port the kernel picked from the
    /// broker's own startup line, so no other process can own it (no free-port race).
    pub fn start_in(dir: tempfile::TempDir, extra: &[&str]) -> Broker {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.path().join("broker.log"))
            .unwrap();
        // A restart appends to the same log: only lines after this offset are this child's.
        let log_from = log.metadata().unwrap().len() as usize;
        let child = Command::new(env!("CARGO_BIN_EXE_runnel"))
            .arg("server")
            .arg("--listen")
            .arg("127.0.0.1:0")
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            // The metrics endpoint on a port the kernel picks: tests run in parallel.
            .args(["--set", "metrics.listeners=http://127.0.0.1:0"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn runnel");
        let mut b = Broker {
            child,
            port: 0,
            dir,
        };
        b.wait_ready(log_from);
        b
    }

    /// `127.0.0.1:PORT`
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Waits (bounded) for this child's "runnel broker started listen=127.0.0.1:PORT" line, then for a
    /// TCP connect to that port.
    fn wait_ready(&mut self, log_from: usize) {
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                let err = self.log();
                panic!("runnel exited during startup with {status}: {err}");
            }
            if self.port == 0 {
                self.port = started_port(self.log().get(log_from..).unwrap_or("")).unwrap_or(0);
            }
            if self.port != 0 && TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "runnel did not start within {STARTUP_TIMEOUT:?}; log:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The broker's stderr so far (its log).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("broker.log")).unwrap_or_default()
    }

    /// The data directory (`log.dirs`).
    pub fn data_dir(&self) -> std::path::PathBuf {
        self.dir.path().join("data")
    }

    pub fn connect(&self) -> TcpStream {
        let s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s
    }

    /// Sends SIGTERM and waits (bounded) for the exit status.
    pub fn terminate(mut self) -> (std::process::ExitStatus, tempfile::TempDir) {
        // SAFETY: kill(2) on our own child's PID.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                let dir = std::mem::replace(&mut self.dir, tempfile::tempdir().unwrap());
                return (status, dir);
            }
            assert!(
                Instant::now() < deadline,
                "runnel did not exit within 30 s of SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `runnel ARGS` with `stdin`, killing it if it takes longer than `limit`; returns its output.
pub fn run_cli(args: &[&str], stdin: &[u8], limit: Duration) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_runnel"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn runnel");
    let pid = child.id() as i32;
    let mut input = child.stdin.take().unwrap();
    let data = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&data);
    });
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => {
            let _ = writer.join();
            out.expect("wait for runnel")
        }
        Err(_) => {
            // SAFETY: kill(2) on our own child's PID, which has not been reaped yet.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            let out = rx.recv().unwrap().unwrap();
            panic!(
                "`runnel {}` did not finish within {limit:?}; stderr:\n{}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// Sends `body` as request `api` v`version` on `stream` and returns the decoded response (correlation id 7).
pub fn round_trip(
    stream: &mut TcpStream,
    api: protocol::ApiKey,
    version: i16,
    body: protocol::RequestBody,
) -> protocol::ResponseBody {
    let header = protocol::RequestHeader {
        request_api_key: api as i16,
        request_api_version: version,
        correlation_id: 7,
        client_id: Some("runnel-test".into()),
        unknown_tagged_fields: vec![],
    };
    let frame = protocol::encode_request(&header, &body).unwrap();
    stream.write_all(&frame).unwrap();
    let mut size = [0u8; 4];
    stream.read_exact(&mut size).unwrap();
    let mut buf = vec![0u8; i32::from_be_bytes(size) as usize];
    stream.read_exact(&mut buf).unwrap();
    let (correlation_id, body) =
        protocol::decode_response(api, version, bytes::Bytes::from(buf)).unwrap();
    assert_eq!(correlation_id.correlation_id, 7);
    body
}
