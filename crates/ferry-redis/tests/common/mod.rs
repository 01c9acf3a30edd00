//! Shared by ferry-redis's integration tests: start a server on an ephemeral port, find an
//! external client tool, and the rule for a missing one: the test prints why and returns
//! (skips), unless `FERRY_REQUIRE_TOOLS=1` (CI) makes it fail. Also a runner for a tool's
//! process that kills it, and fails the test, when it runs past its time limit.
//!
//! What it is not: a Redis client. Each test file speaks RESP itself.

#![allow(dead_code)] // each test binary uses its own subset

use std::env;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use ferry_redis::{Config, Server, ServerHandle};

/// Set to `1` (CI does) to turn a missing tool into a failure instead of a skip.
pub const REQUIRE_TOOLS: &str = "FERRY_REQUIRE_TOOLS";

/// The default configuration, listening on an ephemeral loopback port.
/// A request as every client sends it: an array of bulk strings.
pub fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    out
}

pub fn config() -> Config {
    Config {
        bind: "127.0.0.1:0".parse().expect("an address"),
        ..Config::default()
    }
}

/// A running server for `config` (stopped when the handle drops).
pub fn start(config: Config) -> ServerHandle {
    Server::bind(config)
        .expect("bind the server")
        .spawn()
        .expect("start the server")
}

/// A missing prerequisite: `None` after printing why the test is skipped, or a panic when
/// [`REQUIRE_TOOLS`] is `1`.
pub fn missing<T>(what: &str) -> Option<T> {
    if env::var(REQUIRE_TOOLS).is_ok_and(|v| v == "1") {
        panic!("{what}, and {REQUIRE_TOOLS}=1 requires it");
    }
    eprintln!("SKIPPED: {what} (set {REQUIRE_TOOLS}=1 to make this a failure)");
    None
}

/// The executable `name` found on `PATH`.
pub fn find_tool(name: &str) -> Option<PathBuf> {
    env::split_paths(&env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// The executable `name` on `PATH`; `None` (the test skips) when there is none.
pub fn require_tool(name: &str) -> Option<PathBuf> {
    find_tool(name).or_else(|| missing(&format!("{name} is not on PATH")))
}

/// A `python3` that can `import redis, hiredis`; `None` (the test skips) otherwise.
pub fn require_python_redis() -> Option<PathBuf> {
    let python = require_tool("python3")?;
    let mut cmd = Command::new(&python);
    cmd.args([
        "-c",
        "import redis, hiredis; print(redis.__version__, hiredis.__version__)",
    ]);
    let out = run(
        "python3 -c 'import redis, hiredis'",
        cmd,
        b"",
        Duration::from_secs(60),
    );
    if !out.status.success() {
        return missing(&format!(
            "python3 cannot import redis and hiredis (pip install redis hiredis): {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    eprintln!(
        "redis-py, hiredis: {}",
        String::from_utf8_lossy(&out.stdout).trim()
    );
    Some(python)
}

/// What a finished process wrote.
#[derive(Debug)]
pub struct Output {
    /// Its exit status.
    pub status: ExitStatus,
    /// Everything it wrote to stdout.
    pub stdout: Vec<u8>,
    /// Everything it wrote to stderr.
    pub stderr: Vec<u8>,
}

impl Output {
    /// Stdout as text (lossy).
    pub fn out(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// Stderr as text (lossy).
    pub fn err(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }

    /// Status and both streams, for a failure message.
    pub fn describe(&self) -> String {
        format!(
            "{}\n--- stdout:\n{}\n--- stderr:\n{}",
            self.status,
            self.out(),
            self.err()
        )
    }
}

/// Kills and reaps the child when dropped, whatever ends the test.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}

/// Runs `cmd` to its end with `stdin` as its input, collecting its output. A hang guard, not
/// a measurement: a process still running after `limit` is killed and the test fails with what
/// it wrote so far.
pub fn run(what: &str, mut cmd: Command, stdin: &[u8], limit: Duration) -> Output {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {what}: {e}"));
    let mut child = KillOnDrop(child);
    let mut input = child.0.stdin.take().expect("piped stdin");
    let stdin = stdin.to_vec();
    // A child that exits without reading all of it is not an error here (its status says).
    let writer = thread::spawn(move || drop(input.write_all(&stdin)));
    let mut out = child.0.stdout.take().expect("piped stdout");
    let mut err = child.0.stderr.take().expect("piped stderr");
    let stdout = thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let stderr = thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.0.try_wait().expect("try_wait") {
            break Some(status);
        }
        if start.elapsed() > limit {
            let _ = child.0.kill();
            let _ = child.0.wait();
            break None;
        }
        thread::sleep(Duration::from_millis(10));
    };
    let _ = writer.join();
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    match status {
        Some(status) => Output {
            status,
            stdout,
            stderr,
        },
        None => panic!(
            "hang guard: {what} still running after {limit:?}, killed\n--- stdout:\n{}\n--- stderr:\n{}",
            String::from_utf8_lossy(&stdout),
            String::from_utf8_lossy(&stderr)
        ),
    }
}
