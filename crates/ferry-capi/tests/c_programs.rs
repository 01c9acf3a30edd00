//! The C programs of `examples/c`, built by the system compiler (`cc`) against the shared
//! library and run under AddressSanitizer with LeakSanitizer on: any memory error or leak fails
//! them. `example.c` exercises the API without a server; `kv_client.c` calls ferry-kv's service
//! served by another process (this test binary in its server role) over TCP and shared memory.
//! Without `cc` they skip, unless `FERRY_REQUIRE_TOOLS=1` (CI), which makes that a failure.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use ferry::buf::{Pool, PoolConfig};
use ferry::rpc::{ConnConfig, LoopConfig, Server, Services};
use ferry_kv::proto::ferry::kv::KvServer;
use ferry_kv::{KvService, Store, StoreConfig};
use ferry_testkit::tools::{require_tool, run};
use ferry_testkit::{ChildProc, Scratch, self_command};

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

/// `examples/c/<name>.c` compiled with AddressSanitizer into `scratch`; `None` (skipped) without
/// `cc`.
fn build(name: &str, scratch: &Scratch) -> Option<PathBuf> {
    let cc = require_tool("cc")?;
    let lib = lib_dir();
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
    .arg(repo().join(format!("examples/c/{name}.c")))
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

/// Runs `exe args` under the sanitizers and returns its stdout, failing on any report.
fn run_clean(exe: &Path, args: &[&str]) -> String {
    let mut cmd = Command::new(exe);
    cmd.args(args)
        // Leaks are errors, and a report is a failed run even if the program's checks passed.
        .env("ASAN_OPTIONS", "detect_leaks=1:halt_on_error=1:exitcode=23")
        // cargo's search path would find `target/<profile>/libferry_capi.so`, which only
        // `cargo build` refreshes, before the rpath's.
        .env_remove("LD_LIBRARY_PATH");
    let out = run(&exe.display().to_string(), cmd, b"", LIMIT);
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
    let Some(exe) = build("example", &scratch) else {
        return;
    };
    let dir = repo().join("examples/c");
    let out = run_clean(&exe, &[dir.to_str().unwrap()]);
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
    let Some(exe) = build("kv_client", &scratch) else {
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
    let out = run_clean(&exe, &args);
    for addr in &addrs {
        assert!(out.contains(&format!("kv_client: ok {addr}")), "{out}");
    }
    server.wait_success();
}
