//! Shared by ferry-redis's integration tests: start a server on an ephemeral port, encode a
//! request, and check for redis-py with hiredis. Finding an external client tool, the rule for
//! a missing one (the test prints why and returns, unless `FERRY_REQUIRE_TOOLS=1` makes it
//! fail) and the runner that kills a tool's process, and fails the test, past its time limit
//! are ferry-testkit's [`ferry_testkit::tools`], re-exported here.
//!
//! What it is not: a Redis client. Each test file speaks RESP itself.

#![allow(dead_code)] // each test binary uses its own subset

pub mod dataset;

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use ferry_redis::resp::client::{Reply, ReplyReader, ping};
use ferry_redis::{Config, Server, ServerHandle};
use ferry_testkit::DEADLINE;
#[allow(unused_imports)] // each test binary uses its own subset
pub use ferry_testkit::tools::{Output, find_tool, missing, require_tool, run};

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

/// A blocking RESP connection whose reads and writes have the hang guard [`DEADLINE`].
pub type Conn = ReplyReader<TcpStream>;

/// Connects to `addr` (no Nagle delay).
pub fn connect(addr: SocketAddr) -> Conn {
    let s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    s.set_read_timeout(Some(DEADLINE)).expect("read timeout");
    s.set_write_timeout(Some(DEADLINE)).expect("write timeout");
    s.set_nodelay(true).expect("nodelay");
    ReplyReader::new(s)
}

/// Sends one request.
pub fn send(c: &mut Conn, args: &[&[u8]]) {
    c.get_mut().write_all(&encode(args)).expect("write a request");
}

/// Reads one reply (a failure past the hang guard).
pub fn read(c: &mut Conn) -> Reply {
    c.reply().unwrap_or_else(|e| panic!("reading a reply: {e}"))
}

/// Sends one request and reads one reply.
pub fn cmd(c: &mut Conn, args: &[&[u8]]) -> Reply {
    send(c, args);
    read(c)
}

/// The default configuration, listening on an ephemeral loopback port.
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

/// `redis-server` 7.0 from `$FERRY_REDIS_SERVER` or `PATH`, the reference the tests compare
/// Ferry with; `None` (after printing why, see [`missing`]) when there is none, or it is another
/// version: Ferry follows Redis 7.0, and another version differs in ways that are not Ferry's
/// bugs.
pub fn redis_server_7_0(test: &str) -> Option<PathBuf> {
    let path = std::env::var_os("FERRY_REDIS_SERVER")
        .map(PathBuf::from)
        .or_else(|| find_tool("redis-server"))
        .filter(|p| p.is_file());
    let Some(path) = path else {
        return missing(&format!(
            "{test}: redis-server is not on PATH (nor named by $FERRY_REDIS_SERVER)"
        ));
    };
    let version = Command::new(&path)
        .arg("--version")
        .output()
        .unwrap_or_else(|e| panic!("{} --version: {e}", path.display()));
    let version = String::from_utf8_lossy(&version.stdout).into_owned();
    if !version.contains(" v=7.0.") {
        return missing(&format!(
            "{test}: the reference must be Redis 7.0.x; {} is {}",
            path.display(),
            version.trim()
        ));
    }
    Some(path)
}

/// `redis-server` at `path` as a child process on a free loopback port, killed on drop:
/// without persistence (`--save ""`, no AOF), in `dir`, with `extra` arguments; ready once it
/// answers `PING`, which a server loading a file does only after it (at most `wait`).
pub fn start_redis_server(path: &Path, dir: &Path, extra: &[&str], wait: Duration) -> ferry_launch::Server {
    let command = |port: u16| {
        let mut c = Command::new(path);
        c.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .args(extra)
            .arg("--dir")
            .arg(dir);
        c
    };
    let ready = |addr| ping(addr, Duration::from_secs(2));
    ferry_launch::Server::start("redis-server", command, ready, wait)
        .unwrap_or_else(|e| panic!("{} did not start: {e}", path.display()))
}
