//! The operator subcommands (`runnel topic|produce|consume|group|cluster`) run as processes against a
//! real `runnel server` on a free port of 127.0.0.1 with a temporary data dir.
//!
//! With `RUNNEL_TEST_BOOTSTRAP=HOST:PORT` the same tests run against that broker instead (e.g. Apache Kafka
//! 4.4.0 from `scripts/kafka-reference.sh start`), which is how their expectations were checked.

mod common;

use std::process::Output;
use std::time::{Duration, Instant};

use common::{free_port, run_cli, Broker};
use serde_json::{json, Value};

/// Every CLI call in these tests must finish within this.
const LIMIT: Duration = Duration::from_secs(60);

/// The broker under test: our own, or an external one from RUNNEL_TEST_BOOTSTRAP.
struct Target {
    _broker: Option<Broker>,
    addr: String,
}

impl Target {
    fn start(extra: &[&str]) -> Target {
        match std::env::var("RUNNEL_TEST_BOOTSTRAP") {
            Ok(addr) if !addr.is_empty() => Target {
                _broker: None,
                addr,
            },
            _ => {
                let mut args = vec!["--set", "num.partitions=3"];
                args.extend_from_slice(extra);
                let b = Broker::start(&args);
                let addr = b.addr();
                Target {
                    _broker: Some(b),
                    addr,
                }
            }
        }
    }

    fn external(&self) -> bool {
        self._broker.is_none()
    }

    /// Runs `runnel SUBCOMMAND... -b ADDR`.
    fn run(&self, args: &[&str], stdin: &[u8]) -> Output {
        let mut a: Vec<&str> = args.to_vec();
        a.extend(["-b", &self.addr]);
        run_cli(&a, stdin, LIMIT)
    }

    /// Runs and asserts success; returns stdout.
    fn ok(&self, args: &[&str], stdin: &[u8]) -> Vec<u8> {
        let out = self.run(args, stdin);
        assert!(
            out.status.success(),
            "`runnel {}` failed with {}:\nstderr: {}\nstdout: {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        out.stdout
    }

    /// Runs with --json, asserts success and parses stdout.
    fn json(&self, args: &[&str]) -> Value {
        let mut a = args.to_vec();
        a.push("--json");
        let out = self.ok(&a, b"");
        serde_json::from_slice(&out).unwrap_or_else(|e| {
            panic!(
                "`runnel {}`: stdout is not JSON ({e}): {}",
                a.join(" "),
                String::from_utf8_lossy(&out)
            )
        })
    }

    /// Runs, asserts failure with exit code 1, returns stderr.
    fn fails(&self, args: &[&str], stdin: &[u8]) -> String {
        let out = self.run(args, stdin);
        assert_eq!(
            out.status.code(),
            Some(1),
            "`runnel {}` should fail with 1; stdout: {}; stderr: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    }
}

fn unique(prefix: &str) -> String {
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{prefix}-{}-{n}", std::process::id())
}

fn topic_names(t: &Target) -> Vec<String> {
    t.json(&["topic", "list"])
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn topic_create_list_describe_delete() {
    let t = Target::start(&[]);
    let name = unique("ops");
    let out = t.ok(
        &[
            "topic",
            "create",
            &name,
            "--partitions",
            "3",
            "--replication-factor",
            "1",
            "--config",
            "retention.ms=3600000",
        ],
        b"",
    );
    assert!(String::from_utf8_lossy(&out).contains(&name));

    // Already exists: an error naming it, unless --if-not-exists.
    let err = t.fails(&["topic", "create", &name], b"");
    assert!(
        err.contains(&name) && err.contains("TOPIC_ALREADY_EXISTS"),
        "{err}"
    );
    t.ok(&["topic", "create", &name, "--if-not-exists"], b"");

    let list = t.json(&["topic", "list"]);
    let entry = list
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == json!(name))
        .unwrap_or_else(|| panic!("{name} not listed: {list}"));
    assert_eq!(entry["partitions"], json!(3));
    assert_eq!(entry["replication_factor"], json!(1));
    let table = String::from_utf8(t.ok(&["topic", "list"], b"")).unwrap();
    assert!(table.starts_with("TOPIC"), "{table}");
    assert!(table.lines().any(|l| l.starts_with(&name)), "{table}");

    // Some records so the offsets are not all zero.
    t.ok(&["produce", &name, "--partition", "1"], b"a\nb\nc\n");
    let d = t.json(&["topic", "describe", &name]);
    assert_eq!(d["name"], json!(name));
    let parts = d["partitions"].as_array().unwrap();
    assert_eq!(parts.len(), 3);
    for (i, p) in parts.iter().enumerate() {
        assert_eq!(p["partition"], json!(i));
        assert!(p["leader"].as_i64().unwrap() >= 0, "{d}");
        assert_eq!(p["replicas"].as_array().unwrap().len(), 1, "{d}");
        assert_eq!(p["isr"], p["replicas"], "{d}");
        assert_eq!(p["log_start_offset"], json!(0));
        assert_eq!(
            p["log_end_offset"],
            json!(if i == 1 { 3 } else { 0 }),
            "{d}"
        );
    }
    assert_eq!(d["configs"]["retention.ms"], json!("3600000"), "{d}");
    let human = String::from_utf8(t.ok(&["topic", "describe", &name], b"")).unwrap();
    assert!(
        human.contains("LOG-END-OFFSET") && human.contains("retention.ms=3600000"),
        "{human}"
    );

    t.ok(&["topic", "delete", &name], b"");
    assert!(!topic_names(&t).contains(&name));
    t.ok(&["topic", "delete", &name, "--if-exists"], b"");
}

#[test]
fn unknown_topic_errors_name_the_topic_and_the_kafka_error() {
    let t = Target::start(&["--set", "auto.create.topics.enable=false"]);
    let name = unique("missing");
    for args in [
        vec!["topic", "describe", name.as_str()],
        vec!["topic", "delete", name.as_str()],
        vec!["consume", name.as_str(), "--from-beginning"],
        vec!["produce", name.as_str()],
    ] {
        if t.external() && args[0] == "produce" {
            continue; // an external broker may auto-create topics
        }
        let err = t.fails(&args, b"x\n");
        assert!(
            err.contains(&format!("'{name}'")) && err.contains("UNKNOWN_TOPIC_OR_PARTITION"),
            "`runnel {}`: {err}",
            args.join(" ")
        );
    }
    // A partition that does not exist.
    let name = unique("small");
    t.ok(&["topic", "create", &name, "--partitions", "1"], b"");
    let err = t.fails(&["produce", &name, "--partition", "5"], b"x\n");
    assert!(err.contains("partition 5") && err.contains(&name), "{err}");
    let err = t.fails(&["consume", &name, "--partition", "5"], b"");
    assert!(err.contains("partition 5") && err.contains(&name), "{err}");
}

#[test]
fn bad_config_key_and_bad_arguments_are_errors() {
    let t = Target::start(&[]);
    let name = unique("badcfg");
    let err = t.fails(
        &["topic", "create", &name, "--config", "retention.msx=5"],
        b"",
    );
    assert!(
        err.contains(&name) && err.contains("INVALID_CONFIG") && err.contains("retention.msx"),
        "{err}"
    );
    assert!(!topic_names(&t).contains(&name));
    // Malformed flags fail before contacting the broker.
    let err = t.fails(&["topic", "create", &name, "--config", "novalue"], b"");
    assert!(err.contains("KEY=VALUE"), "{err}");
    let err = t.fails(&["topic", "create", &name, "--partitions", "0"], b"");
    assert!(err.contains("--partitions"), "{err}");
    // Usage errors are clap's (exit code 2).
    let out = t.run(&["topic", "frobnicate"], b"");
    assert_eq!(out.status.code(), Some(2));
    // A JSON line that is not a record names its line.
    t.ok(&["topic", "create", &name, "--partitions", "1"], b"");
    let err = t.fails(
        &["produce", &name, "--format", "json"],
        b"{\"value\":\"ok\"}\n{\"value\":5}\n",
    );
    assert!(err.contains("line 2"), "{err}");
}

#[test]
fn broker_down_is_a_clear_error_within_bounded_time() {
    let port = free_port(); // nothing listens here
    let addr = format!("127.0.0.1:{port}");
    for args in [
        vec!["topic", "list"],
        vec!["topic", "create", "x"],
        vec!["topic", "describe", "x"],
        vec!["topic", "alter-config", "x", "--set", "retention.ms=1"],
        vec!["produce", "x"],
        vec!["consume", "x"],
        vec!["group", "list"],
        vec!["group", "describe", "g"],
        vec!["cluster", "info"],
    ] {
        let mut a = args.clone();
        a.extend(["-b", &addr, "--timeout", "3"]);
        let started = Instant::now();
        let out = run_cli(&a, b"hello\n", Duration::from_secs(20));
        let took = started.elapsed();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(1),
            "`runnel {}`: {err}",
            a.join(" ")
        );
        assert!(
            err.contains("broker unreachable") && err.contains(&addr),
            "`runnel {}`: {err}",
            a.join(" ")
        );
        assert!(
            took < Duration::from_secs(10),
            "`runnel {}` took {took:?}",
            a.join(" ")
        );
    }
}

/// A record as the JSON formats carry it.
fn record(i: usize) -> Value {
    // Keys and values with characters JSON must escape, non-ASCII text, and empty/null cases.
    let key = match i % 7 {
        0 => Value::Null,
        1 => json!(""),
        _ => json!(format!("key-{}\t\"{}\"", i % 13, i)),
    };
    let value = match i % 11 {
        0 => Value::Null,
        1 => json!(""),
        _ => json!(format!("value {i} \\ ü ☃ {}", "x".repeat(i % 50))),
    };
    let headers = match i % 5 {
        0 => json!([]),
        1 => json!([["h", format!("{i}")]]),
        2 => json!([["a", "1"], ["a", "2"], ["nullable", null]]),
        _ => json!([["trace", format!("t-{i}")], ["empty", ""]]),
    };
    json!({"key": key, "value": value, "headers": headers})
}

#[test]
fn produce_consume_round_trip_of_10000_records_with_keys_and_headers() {
    let t = Target::start(&[]);
    let name = unique("roundtrip");
    t.ok(&["topic", "create", &name, "--partitions", "1"], b"");
    const N: usize = 10_000;
    let mut input = Vec::new();
    let mut expected = Vec::new();
    for i in 0..N {
        let r = record(i);
        input.extend_from_slice(serde_json::to_string(&r).unwrap().as_bytes());
        input.push(b'\n');
        expected.push(r);
    }
    let summary: Value = serde_json::from_slice(&t.ok(
        &[
            "produce",
            &name,
            "--format",
            "json",
            "--json",
            "--compression",
            "lz4",
        ],
        &input,
    ))
    .unwrap();
    assert_eq!(summary["records"], json!(N));

    let out = t.ok(
        &["consume", &name, "--from-beginning", "--format", "json"],
        b"",
    );
    let lines: Vec<&[u8]> = out
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(lines.len(), N);
    for (i, line) in lines.iter().enumerate() {
        let got: Value = serde_json::from_slice(line).unwrap();
        assert_eq!(got["offset"], json!(i));
        assert_eq!(got["partition"], json!(0));
        assert_eq!(got["topic"], json!(name));
        let want = &expected[i];
        assert_eq!(
            (&got["key"], &got["value"], &got["headers"]),
            (&want["key"], &want["value"], &want["headers"]),
            "record {i}"
        );
        // Byte for byte: re-serialized, the carried fields are the input line's.
        let carried = json!({"key": got["key"], "value": got["value"], "headers": got["headers"]});
        assert_eq!(
            serde_json::to_string(&carried).unwrap(),
            serde_json::to_string(want).unwrap()
        );
    }

    // Text round trip with a key separator across partitions: the same multiset of lines.
    let name2 = unique("roundtrip-text");
    t.ok(&["topic", "create", &name2, "--partitions", "3"], b"");
    let mut text = Vec::new();
    for i in 0..N {
        text.extend_from_slice(format!("k{}|line {i} with | inside\n", i % 17).as_bytes());
    }
    t.ok(
        &[
            "produce",
            &name2,
            "--key-separator",
            "|",
            "--header",
            "src=test",
            "--compression",
            "zstd",
        ],
        &text,
    );
    let out = t.ok(
        &[
            "consume",
            &name2,
            "--from-beginning",
            "--print-key",
            "--key-separator",
            "|",
        ],
        b"",
    );
    let mut got: Vec<&[u8]> = out
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let mut want: Vec<&[u8]> = text
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    got.sort();
    want.sort();
    assert_eq!(got.len(), N);
    assert!(got == want, "text round trip differs");
    // Headers and positions on request.
    let out = String::from_utf8(t.ok(
        &[
            "consume",
            &name2,
            "--from-beginning",
            "--partition",
            "0",
            "--max-messages",
            "1",
            "--print-headers",
            "--print-partition",
            "--print-offset",
        ],
        b"",
    ))
    .unwrap();
    assert!(
        out.starts_with("Partition:0\tOffset:0\tsrc:test\t"),
        "{out}"
    );
}

#[test]
fn consume_positions_and_limits() {
    let t = Target::start(&[]);
    let name = unique("positions");
    t.ok(&["topic", "create", &name, "--partitions", "1"], b"");
    let lines: String = (0..100).map(|i| format!("{i}\n")).collect();
    t.ok(&["produce", &name], lines.as_bytes());
    let get = |args: &[&str]| -> Vec<String> {
        let mut a = vec!["consume", name.as_str()];
        a.extend_from_slice(args);
        String::from_utf8(t.ok(&a, b""))
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    };
    assert_eq!(get(&["--offset", "95"]), ["95", "96", "97", "98", "99"]);
    assert_eq!(get(&["--offset", "-2"]), ["98", "99"]);
    assert_eq!(
        get(&["--from-beginning", "--max-messages", "3"]),
        ["0", "1", "2"]
    );
    assert!(get(&[]).is_empty(), "default start is the end");
    assert_eq!(
        get(&["--from-timestamp", "0", "--max-messages", "1"]),
        ["0"]
    );
    let far_future = "4000-01-01T00:00:00Z";
    assert!(get(&["--from-timestamp", far_future]).is_empty());
}

#[test]
fn every_compression_codec_round_trips() {
    let t = Target::start(&[]);
    for codec in ["none", "gzip", "snappy", "lz4", "zstd"] {
        let name = unique(&format!("codec-{codec}"));
        t.ok(&["topic", "create", &name, "--partitions", "1"], b"");
        let lines: String = (0..500)
            .map(|i| format!("{codec} record {i} {}\n", "z".repeat(i % 40)))
            .collect();
        t.ok(
            &["produce", &name, "--compression", codec],
            lines.as_bytes(),
        );
        let out = t.ok(&["consume", &name, "--from-beginning"], b"");
        assert_eq!(String::from_utf8(out).unwrap(), lines, "codec {codec}");
    }
}

#[test]
fn cluster_info_shows_brokers_and_api_versions() {
    let t = Target::start(&[]);
    let v = t.json(&["cluster", "info"]);
    let brokers = v["brokers"].as_array().unwrap();
    assert!(!brokers.is_empty(), "{v}");
    if !t.external() {
        assert_eq!(format!("127.0.0.1:{}", brokers[0]["port"]), t.addr, "{v}");
    }
    let apis = v["api_versions"].as_array().unwrap();
    assert!(apis.iter().any(|a| a["name"] == json!("Produce")), "{v}");
    assert!(
        apis.iter().any(|a| a["name"] == json!("ApiVersions")),
        "{v}"
    );
    let human = String::from_utf8(t.ok(&["cluster", "info"], b"")).unwrap();
    assert!(
        human.contains("Cluster ID:") && human.contains("Fetch"),
        "{human}"
    );
}

#[test]
fn cluster_elect_leaders_on_one_broker_needs_no_election() {
    let t = Target::start(&[]);
    let name = unique("elect");
    t.ok(&["topic", "create", &name, "--partitions", "2"], b"");
    let v = t.json(&["cluster", "elect-leaders", "--topic", &name]);
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 2, "{v}");
    for r in rows {
        assert_eq!(r["error_code"], json!(84), "{v}");
        assert_eq!(r["result"], json!("not needed"), "{v}");
    }
    let human = String::from_utf8(t.ok(&["cluster", "elect-leaders"], b"")).unwrap();
    assert!(human.contains("No partition needed an election"), "{human}");
    let err = t.fails(
        &[
            "cluster",
            "elect-leaders",
            "--topic",
            &name,
            "--partition",
            "9",
        ],
        b"",
    );
    assert!(err.contains("UNKNOWN_TOPIC_OR_PARTITION"), "{err}");
    let err = t.fails(
        &["cluster", "elect-leaders", "--topic", "no-such-topic-x"],
        b"",
    );
    assert!(err.contains("no-such-topic-x"), "{err}");
}

#[test]
fn consume_with_a_group_then_inspect_lag_reset_and_delete() {
    let t = Target::start(&[]);
    let name = unique("grouped");
    let group = unique("g");
    t.ok(&["topic", "create", &name, "--partitions", "2"], b"");
    let lines: String = (0..100).map(|i| format!("k{i}:{i}\n")).collect();
    t.ok(
        &["produce", &name, "--key-separator", ":"],
        lines.as_bytes(),
    );

    // First run reads everything and commits; the second finds nothing new.
    let first = t.ok(
        &["consume", &name, "--group", &group, "--from-beginning"],
        b"",
    );
    assert_eq!(first.iter().filter(|b| **b == b'\n').count(), 100);
    let again = t.ok(
        &["consume", &name, "--group", &group, "--from-beginning"],
        b"",
    );
    assert!(again.is_empty(), "{}", String::from_utf8_lossy(&again));

    let groups = t.json(&["group", "list"]);
    assert!(
        groups
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["group"] == json!(group)),
        "{groups}"
    );
    let d = t.json(&["group", "describe", &group]);
    let offsets = d["offsets"].as_array().unwrap();
    assert_eq!(offsets.len(), 2, "{d}");
    let total: i64 = offsets
        .iter()
        .map(|o| o["committed_offset"].as_i64().unwrap())
        .sum();
    assert_eq!(total, 100, "{d}");
    assert!(offsets.iter().all(|o| o["lag"] == json!(0)), "{d}");

    // More records: lag shows up.
    t.ok(&["produce", &name, "--partition", "0"], b"x\ny\n");
    let d = t.json(&["group", "describe", &group]);
    let lag: i64 = d["offsets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["lag"].as_i64().unwrap())
        .sum();
    assert_eq!(lag, 2, "{d}");
    let human = String::from_utf8(t.ok(&["group", "describe", &group], b"")).unwrap();
    assert!(human.contains("LAG") && human.contains(&name), "{human}");

    // Reset: dry run changes nothing; to-earliest replays everything; to-offset clamps.
    let plan = t.json(&[
        "group",
        "reset-offsets",
        &group,
        "--topic",
        &name,
        "--to-earliest",
        "--dry-run",
    ]);
    assert!(
        plan["offsets"]
            .as_array()
            .unwrap()
            .iter()
            .all(|o| o["new_offset"] == json!(0)),
        "{plan}"
    );
    let d = t.json(&["group", "describe", &group]);
    let lag: i64 = d["offsets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["lag"].as_i64().unwrap())
        .sum();
    assert_eq!(lag, 2, "dry run must not commit: {d}");
    t.ok(
        &[
            "group",
            "reset-offsets",
            &group,
            "--topic",
            &name,
            "--to-earliest",
        ],
        b"",
    );
    let replay = t.ok(&["consume", &name, "--group", &group], b"");
    assert_eq!(replay.iter().filter(|b| **b == b'\n').count(), 102);
    t.ok(
        &[
            "group",
            "reset-offsets",
            &group,
            "--topic",
            &name,
            "--partition",
            "0",
            "--to-offset",
            "1000000",
        ],
        b"",
    );
    t.ok(
        &[
            "group",
            "reset-offsets",
            &group,
            "--topic",
            &name,
            "--to-latest",
        ],
        b"",
    );
    let d = t.json(&["group", "describe", &group]);
    let lag: i64 = d["offsets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["lag"].as_i64().unwrap())
        .sum();
    assert_eq!(lag, 0, "{d}");
    t.ok(
        &[
            "group",
            "reset-offsets",
            &group,
            "--topic",
            &name,
            "--to-timestamp",
            "0",
        ],
        b"",
    );
    let d = t.json(&["group", "describe", &group]);
    let lag: i64 = d["offsets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["lag"].as_i64().unwrap())
        .sum();
    assert_eq!(lag, 102, "{d}");

    t.ok(&["group", "delete", &group], b"");
    let err = t.fails(&["group", "describe", &group], b"");
    assert!(err.contains(&group), "{err}");
    let err = t.fails(&["group", "delete", &group], b"");
    assert!(
        err.contains(&group) && err.contains("GROUP_ID_NOT_FOUND"),
        "{err}"
    );
}

#[test]
fn topic_alter_config() {
    let t = Target::start(&[]);
    let name = unique("alter");
    t.ok(&["topic", "create", &name, "--partitions", "1"], b"");
    t.ok(
        &[
            "topic",
            "alter-config",
            &name,
            "--set",
            "retention.ms=12345",
            "--set",
            "max.message.bytes=2000",
        ],
        b"",
    );
    let d = t.json(&["topic", "describe", &name]);
    assert_eq!(d["configs"]["retention.ms"], json!("12345"), "{d}");
    assert_eq!(d["configs"]["max.message.bytes"], json!("2000"), "{d}");
    t.ok(
        &["topic", "alter-config", &name, "--delete", "retention.ms"],
        b"",
    );
    let d = t.json(&["topic", "describe", &name]);
    assert_eq!(d["configs"].get("retention.ms"), None, "{d}");
    let err = t.fails(
        &["topic", "alter-config", &name, "--set", "retention.msx=1"],
        b"",
    );
    assert!(
        err.contains(&name) && err.contains("INVALID_CONFIG"),
        "{err}"
    );
    let err = t.fails(
        &[
            "topic",
            "alter-config",
            &unique("nope"),
            "--set",
            "retention.ms=1",
        ],
        b"",
    );
    assert!(err.contains("UNKNOWN_TOPIC_OR_PARTITION"), "{err}");
}

#[test]
fn topic_add_partitions() {
    let t = Target::start(&[]);
    let name = unique("grow");
    t.ok(&["topic", "create", &name, "--partitions", "1"], b"");
    t.ok(&["topic", "add-partitions", &name, "--to", "4"], b"");
    let d = t.json(&["topic", "describe", &name]);
    assert_eq!(d["partitions"].as_array().unwrap().len(), 4, "{d}");
    let err = t.fails(&["topic", "add-partitions", &name, "--to", "2"], b"");
    assert!(
        err.contains(&name) && err.contains("INVALID_PARTITIONS"),
        "{err}"
    );
}

#[test]
fn produce_failures_name_the_topic_partition_and_broker_error() {
    let t = Target::start(&[]);
    let name = unique("toolarge");
    t.ok(
        &[
            "topic",
            "create",
            &name,
            "--partitions",
            "1",
            "--config",
            "max.message.bytes=1000",
        ],
        b"",
    );
    let mut input = b"small\n".to_vec();
    input.extend(std::iter::repeat_n(b'x', 5000));
    input.push(b'\n');
    let err = t.fails(&["produce", &name, "--delivery-timeout", "10"], &input);
    assert!(
        err.contains(&format!("topic '{name}' partition 0")) && err.contains("MESSAGE_TOO_LARGE"),
        "{err}"
    );
}

#[test]
fn follow_consumer_is_shown_as_a_member_blocks_resets_and_leaves_on_sigint() {
    use std::io::BufRead;
    let t = Target::start(&[]);
    let name = unique("follow");
    let group = unique("fg");
    t.ok(&["topic", "create", &name, "--partitions", "2"], b"");
    let lines: String = (0..20).map(|i| format!("{i}\n")).collect();
    t.ok(&["produce", &name], lines.as_bytes());

    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_runnel"))
        .args([
            "consume",
            &name,
            "--group",
            &group,
            "--from-beginning",
            "--follow",
            "-b",
            &t.addr,
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + LIMIT;
    let mut got = Vec::new();
    while got.len() < 20 {
        let left = deadline.saturating_duration_since(Instant::now());
        got.push(
            rx.recv_timeout(left)
                .expect("the follower printed all 20 records"),
        );
    }
    // It is a member with both partitions assigned; resets are refused while it is.
    let d = t.json(&["group", "describe", &group]);
    assert_eq!(d["members"].as_array().unwrap().len(), 1, "{d}");
    assert_eq!(
        d["members"][0]["assignment"].as_array().unwrap().len(),
        2,
        "{d}"
    );
    let err = t.fails(
        &[
            "group",
            "reset-offsets",
            &group,
            "--topic",
            &name,
            "--to-earliest",
        ],
        b"",
    );
    assert!(
        err.contains(&group) && err.contains("active member"),
        "{err}"
    );
    // Records produced now reach it.
    t.ok(&["produce", &name], b"late\n");
    let left = deadline.saturating_duration_since(Instant::now());
    assert_eq!(rx.recv_timeout(left).unwrap(), "late");

    // SIGINT: it commits, leaves the group and exits 0.
    // SAFETY: kill(2) on our own child's PID, not yet reaped.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let (stx, srx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = stx.send(child.wait());
    });
    let status = srx
        .recv_timeout(LIMIT)
        .expect("consumer exits after SIGINT")
        .unwrap();
    assert!(status.success(), "{status}");
    let d = t.json(&["group", "describe", &group]);
    assert_eq!(d["members"].as_array().unwrap().len(), 0, "{d}");
    let committed: i64 = d["offsets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["committed_offset"].as_i64().unwrap())
        .sum();
    assert_eq!(committed, 21, "{d}");
}
