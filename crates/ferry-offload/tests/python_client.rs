//! Python's grpcio, with the stub grpc_tools.protoc generates from demo.proto, calls the engine
//! and the reference tonic server the same way (tests/python/client.py): seeded random `Kinds`
//! with every field kind echo back equal to the reference's answer and to the request; the DPU
//! paper's messages get the same `Ack` (and the count and sum the request implies); every status
//! code, unknown methods (`UNIMPLEMENTED`) and a deadline come out as the reference gives them;
//! requests compressed by the channel (`compression=grpc.Compression.Gzip`) and per call (gzip,
//! deflate) echo back intact, as do plain ones an engine compressing its answers answers.
//!
//! Needs `python3` with `grpcio` and `grpcio-tools` (`pip install grpcio==1.85.1
//! grpcio-tools==1.85.1`); without them each test skips, saying so, unless
//! `FERRY_REQUIRE_TOOLS=1`.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::{Host, dir, engine_with, reference, scripts};
use ferry_offload::engine::EngineConfig;
use ferry_offload::framing::Encoding;
use ferry_testkit::tools::{missing, require_tool, run};

/// A `python3` that can import grpc and grpc_tools; `None` (the test skips) otherwise.
fn require_python_grpc() -> Option<PathBuf> {
    let python = require_tool("python3")?;
    let mut cmd = Command::new(&python);
    cmd.args([
        "-c",
        "import grpc, grpc_tools, google.protobuf as p; print('grpcio', grpc.__version__, 'protobuf', p.__version__)",
    ]);
    let out = run(
        "python3 -c 'import grpc, grpc_tools'",
        cmd,
        b"",
        Duration::from_secs(60),
    );
    if !out.status.success() {
        return missing(&format!(
            "python3 cannot import grpc and grpc_tools (pip install grpcio==1.85.1 grpcio-tools==1.85.1): {}",
            out.err().trim()
        ));
    }
    eprintln!("{}", out.out().trim());
    Some(python)
}

/// Runs client.py's `check` against a fresh engine (two sessions) and the reference server;
/// fails the test with its output unless every answer agreed.
fn client_check(check: &str, extra: &[&str]) {
    client_check_with(check, extra, |_| {});
}

/// [`client_check`] against an engine with `tune`'s settings.
fn client_check_with(check: &str, extra: &[&str], tune: impl FnOnce(&mut EngineConfig)) {
    let Some(python) = require_python_grpc() else {
        return;
    };
    let dir = dir();
    let host = Host::start(&dir);
    let engine = engine_with(&host, |c| {
        c.sessions = 2;
        tune(c);
    });
    let reference = reference();
    let proto = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("proto");
    let seed = ferry_testkit::seed("FERRY_TEST_SEED", 15);
    // A package named `ferry` ahead of site-packages, as Ferry's own Python bindings are once
    // installed: the generated `ferry.offload` must still be the one imported.
    let shadow = dir.path().join("shadow");
    std::fs::create_dir_all(shadow.join("ferry")).expect("shadow package");
    std::fs::write(
        shadow.join("ferry/__init__.py"),
        "raise ImportError('an installed package named ferry shadowed the generated ferry.offload')\n",
    )
    .expect("shadow package");
    let mut cmd = Command::new(python);
    cmd.env("PYTHONPATH", &shadow)
        .arg(scripts().join("python/client.py"))
        .args(["--engine", &engine.local_addr().to_string()])
        .args(["--reference", &reference.to_string()])
        .arg("--proto-dir")
        .arg(proto)
        .args(["--check", check, "--seed", &seed.to_string()])
        .args(extra);
    let out = run(
        &format!("client.py --check {check}"),
        cmd,
        b"",
        Duration::from_secs(300),
    );
    assert!(out.status.success(), "{}", out.describe());
    eprintln!("{}", out.out().trim());
}

#[test]
fn every_field_kind_echoes_as_the_reference_server_answers() {
    client_check("echo", &["--count", "200"]);
}

#[test]
fn the_papers_messages_get_the_reference_servers_acks() {
    client_check("paper", &[]);
}

#[test]
fn statuses_unknown_methods_and_deadlines_come_out_as_the_reference_gives_them() {
    client_check("statuses", &[]);
}

#[test]
fn compressed_requests_and_answers_round_trip() {
    client_check_with("compression", &[], |c| c.compress = Some(Encoding::Gzip));
}
