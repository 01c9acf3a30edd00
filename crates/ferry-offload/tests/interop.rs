//! grpc-go's own interop client (v1.85.0, `google.golang.org/grpc/interop/client`, installed
//! as `grpc-interop-client` by `.ci/run`) against `ferry gateway`'s engine in front of the
//! interop host (`ferry_offload::interop_host`: `grpc.testing.TestService` from the vendored,
//! unchanged `test.proto`, served by the tokio driver on shared memory), plaintext, every
//! non-auth case the issue lists, the soak cases cut to a CI-sized run. The test skips (and
//! fails under `FERRY_REQUIRE_TOOLS=1`) when the client is not installed.

mod common;

use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;

use ferry::rpc::LoopConfig;
use ferry::rpc::tokio::{AsyncServer, AsyncServices};
use ferry_offload::engine::{Engine, EngineConfig};
use ferry_offload::grpc_testing::grpc::testing::AsyncTestServiceServer;
use ferry_offload::interop_host::{InteropHost, describe};
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

/// The interop host on a thread of its own, serving until the test process ends.
fn start_host(addr: String) {
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        tokio::task::LocalSet::new().block_on(&rt, async move {
            let services = AsyncServices::new()
                .service(AsyncTestServiceServer::new(InteropHost))
                .and_then(|s| s.service(describe().expect("the interop table")))
                .expect("services");
            let server = AsyncServer::bind(services, &[addr.as_str()], LoopConfig::default()).expect("bind");
            ready_tx.send(()).expect("the test waits");
            server
                .run(std::future::pending(), Duration::from_secs(1))
                .await
                .expect("serve");
        });
    });
    ready_rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the host binds");
}

#[test]
fn grpc_go_interop_client_passes_every_case_through_the_gateway() {
    let Some(client) = common::require_go_tool(
        "grpc-interop-client",
        "-help",
        "GOBIN=$(mktemp -d) go install google.golang.org/grpc/interop/client@v1.85.0, renamed grpc-interop-client",
    ) else {
        return;
    };
    let dir = common::dir();
    let host = format!("shm://{}", dir.path().join("interop.sock").display());
    start_host(host.clone());
    let mut config = EngineConfig::new(host);
    config.listen = SocketAddr::from(([127, 0, 0, 1], 0));
    // large_unary sends 271,828 bytes and asks for 314,159.
    config.max_message = 4 << 20;
    let engine = Engine::start(config).expect("engine starts");
    engine
        .wait_ready(Duration::from_secs(20))
        .expect("the engine gets the table");
    let port = engine.local_addr().port().to_string();
    let mut failed = Vec::new();
    for case in CASES {
        let mut cmd = Command::new(&client);
        cmd.args([
            "--server_host=127.0.0.1",
            &format!("--server_port={port}"),
            &format!("--test_case={case}"),
            "--soak_iterations=10",
            "--soak_overall_timeout_seconds=60",
        ]);
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
