//! grpc-go's own interop client (v1.85.0, `google.golang.org/grpc/interop/client`, installed
//! as `grpc-interop-client` by `.ci/run`) against `ferry gateway`'s engine in front of the
//! interop host (`ferry_offload::interop_host`: `grpc.testing.TestService` from the vendored,
//! unchanged `test.proto`, served by the tokio driver on shared memory), plaintext, every
//! non-auth case the issue lists, the soak cases cut to a CI-sized run, and the streaming shapes
//! again over TLS (certificates made at test time). The tests skip (and fail under
//! `FERRY_REQUIRE_TOOLS=1`) when the client is not installed.

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::start_interop_host;
use ferry_offload::engine::{Engine, EngineConfig};
use ferry_testkit::tools::run;

const CASES: &[&str] = &[
    "empty_unary",
    "large_unary",
    "client_streaming",
    "server_streaming",
    "ping_pong",
    "empty_stream",
    "timeout_on_sleeping_server",
    "cancel_after_begin",
    "cancel_after_first_response",
    "status_code_and_message",
    "special_status_message",
    "custom_metadata",
    "unimplemented_method",
    "unimplemented_service",
    "rpc_soak",
    "channel_soak",
];

/// The interop client, or `None` (the test skips, or fails under `FERRY_REQUIRE_TOOLS=1`).
fn require_client() -> Option<std::path::PathBuf> {
    common::require_go_tool(
        "grpc-interop-client",
        "-help",
        "GOBIN=$(mktemp -d) go install google.golang.org/grpc/interop/client@v1.85.0, renamed grpc-interop-client",
    )
}

/// Runs `cases` with the interop client (and `flags`) against an engine, in front of a fresh
/// interop host, that `tune` configured; fails the test naming every case that failed.
fn run_cases(client: &Path, cases: &[&str], flags: &[String], tune: impl FnOnce(&mut EngineConfig)) {
    let dir = common::dir();
    let host = format!("shm://{}", dir.path().join("interop.sock").display());
    start_interop_host(host.clone());
    let mut config = EngineConfig::new(host);
    config.listen = SocketAddr::from(([127, 0, 0, 1], 0));
    // large_unary sends 271,828 bytes and asks for 314,159.
    config.max_message = 4 << 20;
    tune(&mut config);
    let engine = Engine::start(config).expect("engine starts");
    engine
        .wait_ready(Duration::from_secs(20))
        .expect("the engine gets the table");
    let port = engine.local_addr().port().to_string();
    let mut failed = Vec::new();
    for case in cases {
        let mut cmd = Command::new(client);
        cmd.args([
            "--server_host=127.0.0.1",
            &format!("--server_port={port}"),
            &format!("--test_case={case}"),
            "--soak_iterations=10",
            "--soak_overall_timeout_seconds=60",
        ])
        .args(flags);
        let out = run(case, cmd, b"", Duration::from_secs(120));
        if out.status.success() {
            eprintln!("{case}: passed");
        } else {
            let said = format!("{}{}", out.out(), out.err());
            let tail: Vec<&str> = said.lines().rev().take(5).collect();
            eprintln!(
                "{case}: FAILED ({}): {}",
                out.describe(),
                tail.into_iter().rev().collect::<Vec<_>>().join("\n  ")
            );
            failed.push(*case);
        }
    }
    assert!(failed.is_empty(), "interop cases failed: {failed:?}");
}

#[test]
fn grpc_go_interop_client_passes_every_case_through_the_gateway() {
    let Some(client) = require_client() else { return };
    run_cases(&client, CASES, &[], |_| {});
}

/// Over TLS: the client's `--use_tls --use_test_ca`, its test CA replaced (`--ca_file`) by one
/// made at test time, the server's name checked as `localhost`.
#[test]
fn grpc_go_interop_client_calls_through_the_gateway_over_tls() {
    let Some(client) = require_client() else { return };
    let dir = common::dir();
    let files = common::TlsFiles::new(&dir, "interop");
    let flags = [
        "--use_tls".to_owned(),
        "--use_test_ca".to_owned(),
        format!("--ca_file={}", files.ca.display()),
        "--server_host_override=localhost".to_owned(),
    ];
    let cases = [
        "empty_unary",
        "large_unary",
        "server_streaming",
        "ping_pong",
        "client_streaming",
    ];
    run_cases(&client, &cases, &flags, |c| c.tls = Some(files.server(false)));
}
