//! C programs built by the system compiler (`cc`) against the shared library and run under
//! AddressSanitizer with LeakSanitizer on: any memory error or leak fails them.
//! `examples/c/example.c` exercises the API without a server; `examples/c/kv_client.c` calls
//! ferry-kv's service served by another process (this test binary in its server role) over TCP
//! and shared memory; `tests/vectors.c` checks every shared test vector (`tests/vectors`).
//! Without `cc` they skip, unless `FERRY_REQUIRE_TOOLS=1` (CI), which makes that a failure.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use ferry::buf::{Pool, PoolConfig};
use ferry::rpc::{ConnConfig, LoopConfig, Server, Services};
use ferry::wire::Limits;
use ferry_kv::proto::ferry::kv::KvServer;
use ferry_kv::{KvService, Store, StoreConfig};
use ferry_testkit::tools::{require_tool, run};
use ferry_testkit::{ChildProc, Scratch, self_command};
use serde_json::Value as Json;

/// A hang guard for the compiler and the programs (not a measurement).
const LIMIT: Duration = Duration::from_secs(300);

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Where cargo put the `libferry_capi.so` it built with this test: the `deps` folder the test
/// runs from (`target/<profile>/libferry_capi.so` is refreshed by `cargo build` only).
fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let dir = exe.parent().expect("target/<profile>/deps").to_owned();
    assert!(
        dir.join("libferry_capi.so").is_file(),
        "no libferry_capi.so in {}: cargo builds it with this test",
        dir.display()
    );
    dir
}

/// The C program `source` (from the repository's root) compiled with AddressSanitizer into
/// `scratch`; `None` (skipped) without `cc`.
fn build(source: &str, scratch: &Scratch) -> Option<PathBuf> {
    let cc = require_tool("cc")?;
    let lib = lib_dir();
    let name = Path::new(source)
        .file_stem()
        .expect("a file")
        .to_str()
        .expect("UTF-8");
    let exe = scratch.0.join(name);
    let mut cmd = Command::new(cc);
    cmd.args([
        "-std=c11",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-g",
        "-fsanitize=address",
    ])
    .arg("-fno-omit-frame-pointer")
    .arg("-I")
    .arg(repo().join("include"))
    .arg(repo().join(source))
    .arg("-L")
    .arg(&lib)
    .arg("-lferry_capi")
    .arg(format!("-Wl,-rpath,{}", lib.display()))
    .arg("-o")
    .arg(&exe);
    let out = run(&format!("cc {name}.c"), cmd, b"", LIMIT);
    assert!(out.status.success(), "cc {name}.c failed: {}", out.describe());
    Some(exe)
}

/// Runs `exe args` (`stdin` its input) under the sanitizers and returns its stdout, failing on
/// any report.
fn run_clean(exe: &Path, args: &[&str], stdin: &[u8]) -> String {
    let mut cmd = Command::new(exe);
    cmd.args(args)
        // Leaks are errors, and a report is a failed run even if the program's checks passed.
        .env("ASAN_OPTIONS", "detect_leaks=1:halt_on_error=1:exitcode=23")
        // cargo's search path would find `target/<profile>/libferry_capi.so`, which only
        // `cargo build` refreshes, before the rpath's.
        .env_remove("LD_LIBRARY_PATH");
    let out = run(&exe.display().to_string(), cmd, stdin, LIMIT);
    let err = out.err();
    assert!(
        out.status.success() && !err.contains("Sanitizer"),
        "{} did not run clean: {}",
        exe.display(),
        out.describe()
    );
    out.out()
}

#[test]
fn example_runs_clean_under_asan() {
    let scratch = Scratch::new("capi-example");
    let Some(exe) = build("examples/c/example.c", &scratch) else {
        return;
    };
    let dir = repo().join("examples/c");
    let out = run_clean(&exe, &[dir.to_str().unwrap()], b"");
    assert!(out.contains("example: ok"), "{out}");
    // The truncated message's error names the field and the offset the Rust decoder gives.
    assert!(out.contains("field `example.Shape.blob` at byte 64"), "{out}");
}

/// The child's role: serve ferry-kv's service over TCP and shared memory until stdin closes.
const ROLE: &str = "FERRY_CAPI_KV_ROLE";

fn serve_kv() {
    let scratch = Scratch::new("capi-kv-server");
    let pool = Pool::new(PoolConfig {
        shared: true,
        region_size: 8 << 20,
        max_bytes: 64 << 20,
        huge_pages: false,
        mlock: false,
    })
    .expect("pool");
    let store = Arc::new(Store::new(pool, StoreConfig::default()));
    let services = Services::builder()
        .service(KvServer::new(KvService::new(store.clone())))
        .expect("service")
        .build()
        .expect("services");
    let server = Server::builder(services)
        .listen("tcp://127.0.0.1:0")
        .listen(&scratch.shm("kv"))
        .loops(1)
        .config(LoopConfig {
            conn: store.serving_config(ConnConfig::default()),
            ..LoopConfig::default()
        })
        .start()
        .expect("server starts");
    let addrs: Vec<String> = server.addrs().iter().map(ToString::to_string).collect();
    // Ready: the listeners are bound. The parent waits for this line.
    println!("kv-addrs: {}", addrs.join(" "));
    let _ = std::io::stdin().read_line(&mut String::new());
    server.shutdown(Duration::from_secs(1));
}

#[test]
fn kv_client_calls_a_server_process_over_tcp_and_shm() {
    if std::env::var_os(ROLE).is_some() {
        return serve_kv();
    }
    let scratch = Scratch::new("capi-kv-client");
    let Some(exe) = build("examples/c/kv_client.c", &scratch) else {
        return;
    };
    let cmd = self_command(
        &[],
        "kv_client_calls_a_server_process_over_tcp_and_shm",
        ROLE,
        "server",
    );
    let mut server = ChildProc::spawn("kv server", cmd);
    let addrs = server.expect_line("kv-addrs:", "the server's addresses once it listens");
    let addrs: Vec<&str> = addrs.split_whitespace().collect();
    assert!(
        addrs[0].starts_with("tcp://") && addrs[1].starts_with("shm://"),
        "{addrs:?}"
    );
    let proto = repo().join("crates/ferry-kv/proto");
    let mut args = vec![proto.to_str().unwrap()];
    args.extend(&addrs);
    let out = run_clean(&exe, &args, b"");
    for addr in &addrs {
        assert!(out.contains(&format!("kv_client: ok {addr}")), "{out}");
    }
    server.wait_success();
}

/// The vectors as the lines `tests/vectors.c` reads (its top comment gives the format), and how
/// many of each kind there are.
fn vector_lines() -> (String, usize, usize) {
    let dir = repo().join("tests/vectors");
    let read = |file: &str| -> Vec<Json> {
        let text = std::fs::read_to_string(dir.join(file)).expect(file);
        serde_json::from_str(&text).expect(file)
    };
    let text = |v: &Json, key: &str| -> String {
        let s = v[key].as_str().unwrap_or_else(|| panic!("{key} in {v}"));
        assert!(
            !s.contains(['\t', '\n']),
            "{key} of {v}: a tab or newline would break the line"
        );
        s.to_owned()
    };
    let (valid, invalid) = (read("valid.json"), read("invalid.json"));
    let mut lines = String::new();
    for v in &valid {
        let encodes = if v["encodes"].as_bool().expect("encodes") {
            "1"
        } else {
            "0"
        };
        let fields = [
            text(v, "name"),
            text(v, "message"),
            encodes.to_owned(),
            text(v, "hex"),
            text(v, "json"),
        ];
        lines += &format!("valid\t{}\n", fields.join("\t"));
    }
    let defaults = Limits::default();
    for v in &invalid {
        let limit = |key: &str, default: u64| v["limits"][key].as_u64().unwrap_or(default).to_string();
        let e = &v["error"];
        let path: Vec<&str> = e["path"]
            .as_array()
            .expect("path")
            .iter()
            .filter_map(Json::as_str)
            .collect();
        let fields = [
            text(v, "name"),
            text(v, "message"),
            text(v, "stage"),
            limit("max_message_len", defaults.max_message_len),
            limit("max_depth", defaults.max_depth.into()),
            limit("max_elements", defaults.max_elements),
            text(v, "hex"),
            text(e, "kind"),
            e["offset"].as_u64().expect("offset").to_string(),
            path.join(" > "),
        ];
        lines += &format!("invalid\t{}\n", fields.join("\t"));
    }
    (lines, valid.len(), invalid.len())
}

#[test]
fn c_checks_every_shared_vector() {
    let scratch = Scratch::new("capi-vectors");
    let Some(exe) = build("crates/ferry-capi/tests/vectors.c", &scratch) else {
        return;
    };
    let (lines, valid, invalid) = vector_lines();
    assert!(valid > 0 && invalid > 0, "no vectors");
    let schemas = repo().join("tests/vectors/schemas");
    let mut files: Vec<String> = std::fs::read_dir(&schemas)
        .expect("tests/vectors/schemas")
        .map(|e| e.expect("entry").file_name().into_string().expect("UTF-8"))
        .filter(|name| name.ends_with(".proto"))
        .collect();
    files.sort();
    let mut args = vec![schemas.to_str().unwrap()];
    args.extend(files.iter().map(String::as_str));
    let out = run_clean(&exe, &args, lines.as_bytes());
    let summary = format!("vectors: {valid} valid, {invalid} invalid, 0 failed");
    assert!(out.contains(&summary), "expected {summary:?}:\n{out}");
}
