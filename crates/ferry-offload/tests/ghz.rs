//! ghz, a Go gRPC load generator, drives concurrent load through the engine by server
//! reflection (no .proto given): thousands of calls from several connections and concurrent
//! workers, sharing two shared-memory sessions, all answered OK (ghz's own count, status codes
//! and error list); the DPU paper's messages and Echo under load the same; and a failing
//! method's statuses counted as the code asked for, so that the status check can fail; and a
//! short run over TLS.
//!
//! ghz checks statuses, not answers: tests/grpcurl.rs and tests/tonic_client.rs check the
//! answers. Needs `ghz` (`go install github.com/bojand/ghz/cmd/ghz@v0.120.0`), on `PATH` or in
//! GOPATH/bin; without it each test skips, saying so, unless `FERRY_REQUIRE_TOOLS=1`.

mod common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{Host, dir, engine};
use ferry_testkit::tools::run;
use serde_json::{Value, json};

fn require_ghz() -> Option<PathBuf> {
    common::require_go_tool(
        "ghz",
        "--version",
        "go install github.com/bojand/ghz/cmd/ghz@v0.120.0",
    )
}

/// One ghz run: `total` calls of `method` with the JSON `data` (an argument: ghz's command-line
/// parser takes `-d @`, meaning stdin, for a response file), from
/// `concurrency` workers over `connections` connections, each call under a 20 s timeout and the
/// whole run under the hang guard. Returns ghz's JSON report.
fn ghz(
    tool: &Path,
    addr: SocketAddr,
    method: &str,
    data: &Value,
    total: u32,
    concurrency: u32,
    connections: u32,
) -> Value {
    ghz_over(
        tool,
        &["--insecure"],
        addr,
        method,
        data,
        [total, concurrency, connections],
    )
}

/// [`ghz`] with `security`: `--insecure` (plaintext), or TLS flags; `load` is the total, the
/// concurrency and the connections.
fn ghz_over(
    tool: &Path,
    security: &[&str],
    addr: SocketAddr,
    method: &str,
    data: &Value,
    load: [u32; 3],
) -> Value {
    let [total, concurrency, connections] = load;
    let mut cmd = Command::new(tool);
    cmd.args(security)
        .args([
            "--call",
            method,
            "--data",
            &data.to_string(),
            "--format",
            "json",
            "--timeout",
            "20s",
        ])
        .args(["--connect-timeout", "20s"])
        .args(["-n", &total.to_string(), "-c", &concurrency.to_string()])
        .args(["--connections", &connections.to_string()])
        .arg(addr.to_string());
    let what = format!("ghz {method} -n {total} -c {concurrency} --connections {connections}");
    let out = run(&what, cmd, b"", Duration::from_secs(300));
    assert!(out.status.success(), "{}", out.describe());
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{what}: the report is not JSON ({e}): {}", out.describe()))
}

/// The report's parts that say what happened to each call, for failure messages.
fn summary(report: &Value) -> Value {
    json!({
        "count": report["count"],
        "statusCodeDistribution": report["statusCodeDistribution"],
        "errorDistribution": report["errorDistribution"],
        "endReason": report["endReason"],
    })
}

/// Every one of the `total` calls was made and answered `OK`, and ghz saw no error.
fn assert_all_ok(report: &Value, total: u32, what: &str) {
    let summary = summary(report);
    assert_eq!(report["count"], json!(total), "{what}: {summary:#}");
    assert_eq!(
        report["statusCodeDistribution"],
        json!({ "OK": total }),
        "{what}: {summary:#}"
    );
    let errors = &report["errorDistribution"];
    assert!(
        errors.is_null() || errors.as_object().is_some_and(|e| e.is_empty()),
        "{what}: {summary:#}"
    );
    let details = report["details"]
        .as_array()
        .unwrap_or_else(|| panic!("{what}: no details: {summary:#}"));
    assert_eq!(details.len(), total as usize, "{what}: one detail per call");
    if let Some(bad) = details
        .iter()
        .find(|d| d["status"] != "OK" || d["error"].as_str().is_some_and(|e| !e.is_empty()))
    {
        panic!("{what}: a call was not OK: {bad}");
    }
}

#[test]
fn thousands_of_calls_over_four_connections_are_all_ok() {
    let Some(tool) = require_ghz() else { return };
    let dir = dir();
    let host = Host::start(&dir);
    let engine = engine(&host, 2);
    let report = ghz(
        &tool,
        engine.local_addr(),
        "ferry.offload.demo.Demo/SendInts",
        &json!({"values": [1, 2, 3, 4_000_000_000u32]}),
        2000,
        8,
        4,
    );
    assert_all_ok(&report, 2000, "SendInts");
}

#[test]
fn the_papers_messages_and_echo_under_load_are_all_ok() {
    let Some(tool) = require_ghz() else { return };
    let dir = dir();
    let host = Host::start(&dir);
    let engine = engine(&host, 2);
    let addr = engine.local_addr();
    let small = json!({"id": 7, "timestamp": "-1700000000", "flag": true, "score": 0.5, "tag": "héllo"});
    let chars = json!({ "text": "x€🦀".repeat(1000) });
    let kinds = json!({
        "fInt64": "-5", "fDouble": 0.1, "fString": "ü".repeat(3000), "fBytes": "AAEC",
        "rUint32": [1, 2, 4_294_967_295u32], "mString": {"1": "one"}, "cInner": {"label": "x"},
        "fMessage": {"label": "a", "children": [{"label": "b"}]}, "oInt32": 0,
    });
    for (method, data) in [("SendSmall", small), ("SendChars", chars), ("Echo", kinds)] {
        let report = ghz(
            &tool,
            addr,
            &format!("ferry.offload.demo.Demo/{method}"),
            &data,
            500,
            4,
            2,
        );
        assert_all_ok(&report, 500, method);
    }
}

#[test]
fn failures_under_load_are_counted_by_their_code() {
    let Some(tool) = require_ghz() else { return };
    let dir = dir();
    let host = Host::start(&dir);
    let engine = engine(&host, 1);
    let report = ghz(
        &tool,
        engine.local_addr(),
        "ferry.offload.demo.Demo/Fail",
        &json!({"code": 5, "message": "no such thing"}),
        200,
        4,
        2,
    );
    let summary = summary(&report);
    assert_eq!(report["count"], json!(200), "{summary:#}");
    assert_eq!(
        report["statusCodeDistribution"],
        json!({"NotFound": 200}),
        "{summary:#}"
    );
    let errors = report["errorDistribution"]
        .as_object()
        .unwrap_or_else(|| panic!("no errors listed: {summary:#}"));
    let listed: u64 = errors.values().filter_map(Value::as_u64).sum();
    assert_eq!(listed, 200, "{summary:#}");
    assert!(errors.keys().all(|e| e.contains("no such thing")), "{summary:#}");
}

/// Over TLS (`--cacert`, certificates made at test time): a short run, every call OK.
#[test]
fn calls_over_tls_are_all_ok() {
    let Some(tool) = require_ghz() else { return };
    let dir = dir();
    let files = common::TlsFiles::new(&dir, "gateway");
    let host = Host::start(&dir);
    let engine = common::engine_with(&host, |c| {
        c.sessions = 2;
        c.tls = Some(files.server(false));
    });
    let ca = files.ca.to_str().expect("a UTF-8 path");
    let report = ghz_over(
        &tool,
        &["--cacert", ca],
        engine.local_addr(),
        "ferry.offload.demo.Demo/SendInts",
        &json!({"values": [1, 2, 3]}),
        [500, 8, 4],
    );
    assert_all_ok(&report, 500, "SendInts over TLS");
}
