//! Helpers shared by ferry-net's integration tests: pools, socket pairs, a seeded RNG, a
//! deadlock guard, `poll(2)`, child processes (the test binary re-executed in a role) and
//! network namespaces.
//!
//! Every test binary compiles this module and uses a part of it.
#![allow(dead_code)]

pub mod records;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd};
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use ferry_buf::{Pool, PoolConfig};
use ferry_net::{Config, Connection};

/// The environment variable that tells a re-executed test binary which role to play.
pub const ROLE_VAR: &str = "FERRY_NET_TEST_ROLE";

/// Set (to anything) to make a test that needs a kernel feature this machine lacks (network
/// namespaces, `MSG_ZEROCOPY`, io_uring `SEND_ZC`, ...) fail instead of skipping. CI sets it:
/// its machines have every feature these tests use.
pub const REQUIRE_KERNEL_FEATURES_VAR: &str = "FERRY_REQUIRE_KERNEL_FEATURES";

/// A pool like the default one (8 MiB regions) with a smaller address reservation.
pub fn pool() -> Pool {
    Pool::new(PoolConfig {
        region_size: 8 << 20,
        max_bytes: 512 << 20,
        ..PoolConfig::default()
    })
    .expect("pool")
}

/// A connected loopback pair: (client, server), each with its own pool and config.
pub fn pair(
    client_pool: &Pool,
    client_config: &Config,
    server_pool: &Pool,
    server_config: &Config,
) -> (Connection, Connection) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let client = TcpStream::connect(listener.local_addr().unwrap()).expect("connect");
    let (server, _) = listener.accept().expect("accept");
    (
        Connection::new(client, client_pool, client_config).expect("client connection"),
        Connection::new(server, server_pool, server_config).expect("server connection"),
    )
}

/// A raw client stream and the server-side connection it talks to.
pub fn raw_pair(server_pool: &Pool, server_config: &Config) -> (TcpStream, Connection) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let client = TcpStream::connect(listener.local_addr().unwrap()).expect("connect");
    client.set_nodelay(true).unwrap();
    let (server, _) = listener.accept().expect("accept");
    (
        client,
        Connection::new(server, server_pool, server_config).expect("server connection"),
    )
}

/// Buffers a pool has handed out and not got back.
pub fn outstanding(pool: &Pool) -> usize {
    pool.stats().buffers_outstanding()
}

// Each test binary uses a part of these (as of the rest of this module).
#[allow(unused_imports)]
pub use ferry_testkit::{DEADLINE, Rng, within};

/// The seed for randomized tests: `FERRY_NET_SEED` if set (to reproduce a failure), else
/// `default`.
pub fn seed(default: u64) -> u64 {
    ferry_testkit::seed("FERRY_NET_SEED", default)
}

/// `poll(2)` on `fds` with the deadline as timeout; panics (deadlock guard) if nothing becomes
/// ready in time. Returns the number of ready descriptors.
#[allow(unsafe_code)]
pub fn poll(fds: &mut [libc::pollfd]) -> usize {
    loop {
        // SAFETY: `fds` is an exclusively borrowed, initialized array of `pollfd` whose length
        // is passed with it; the kernel writes only `revents` inside it.
        let n = unsafe {
            libc::poll(
                fds.as_mut_ptr(),
                fds.len() as libc::nfds_t,
                DEADLINE.as_millis() as i32,
            )
        };
        if n > 0 {
            return n as usize;
        }
        if n == 0 {
            panic!("deadlock guard: no descriptor became ready within {DEADLINE:?}");
        }
        let e = std::io::Error::last_os_error();
        assert_eq!(e.kind(), std::io::ErrorKind::Interrupted, "poll: {e}");
    }
}

/// A `pollfd` for `fd` and `events`.
pub fn pollfd(fd: &impl AsFd, events: libc::c_short) -> libc::pollfd {
    libc::pollfd {
        fd: fd.as_fd().as_raw_fd(),
        events,
        revents: 0,
    }
}

/// Waits until at least `n` bytes are queued for reading on `sock` (peeked, not consumed), so
/// that the next read sees them all at once. A deadlock guard bounds the wait.
pub fn wait_queued(sock: &impl AsFd, n: usize) {
    let stream = TcpStream::from(sock.as_fd().try_clone_to_owned().expect("dup"));
    let mut buf = vec![0; n];
    let start = Instant::now();
    loop {
        match stream.peek(&mut buf) {
            Ok(k) if k >= n => return,
            Ok(_) => thread::yield_now(),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                let mut fds = [pollfd(&stream, libc::POLLIN)];
                poll(&mut fds);
            }
            Err(e) => panic!("peek: {e}"),
        }
        assert!(
            start.elapsed() < DEADLINE,
            "deadlock guard: {n} bytes never arrived"
        );
    }
}

/// This test binary, re-executed to run only `test` in the role `role` (see [`ROLE_VAR`]),
/// optionally inside network namespace `netns` (through `ip netns exec`).
pub fn self_command(test: &str, role: &str, netns: Option<&str>) -> Command {
    let exe = std::env::current_exe().expect("current_exe");
    let mut cmd = match netns {
        Some(ns) => {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", ns]).arg(exe);
            c
        }
        None => Command::new(exe),
    };
    cmd.args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(ROLE_VAR, role)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// The role this process was started in, if it is a re-executed child.
pub fn role() -> Option<String> {
    std::env::var(ROLE_VAR).ok()
}

/// A child process that is killed (if still running) and reaped when dropped. Its stdout is
/// read line by line; its stderr is collected for failure messages.
pub struct ChildProc {
    name: String,
    child: Child,
    lines: mpsc::Receiver<String>,
    stderr: Option<thread::JoinHandle<String>>,
}

impl ChildProc {
    /// Spawns `cmd` (stdout and stderr piped).
    pub fn spawn(name: &str, mut cmd: Command) -> ChildProc {
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {name}: {e}"));
        let stdout: ChildStdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut err = child.stderr.take().expect("piped stderr");
        let stderr = Some(thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        }));
        ChildProc {
            name: name.to_owned(),
            child,
            lines,
            stderr,
        }
    }

    /// The rest of the first stdout line that contains `prefix`, after it (earlier lines are
    /// skipped; the test harness may print on the same line first). Fails if the child ends,
    /// or the deadline passes, first.
    pub fn expect_line(&mut self, prefix: &str) -> String {
        let start = Instant::now();
        loop {
            let left = DEADLINE.saturating_sub(start.elapsed());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    if let Some(at) = line.find(prefix) {
                        return line[at + prefix.len()..].trim().to_owned();
                    }
                }
                Err(_) => {
                    let _ = self.child.kill();
                    let status = self.child.wait();
                    let stderr = self.stderr_text();
                    panic!(
                        "{}: no line with {prefix:?} ({status:?}); stderr:\n{stderr}",
                        self.name
                    );
                }
            }
        }
    }

    /// Every remaining stdout line (the child must have exited or be about to).
    pub fn remaining_lines(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        while let Ok(line) = self.lines.recv_timeout(DEADLINE) {
            out.push(line);
        }
        out
    }

    /// `SIGKILL`s the child and reaps it.
    pub fn kill(&mut self) {
        self.child.kill().expect("kill");
        self.child.wait().expect("wait");
    }

    /// Waits for the child to exit (deadlock guard: killed and failed after the deadline).
    pub fn wait(&mut self) -> ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status;
            }
            if start.elapsed() > DEADLINE {
                let _ = self.child.kill();
                let _ = self.child.wait();
                let stderr = self.stderr_text();
                panic!(
                    "deadlock guard: {} did not exit within {DEADLINE:?}; stderr:\n{stderr}",
                    self.name
                );
            }
            thread::sleep(Duration::from_millis(5));
        }
    }

    /// Waits for the child and fails the test, with its stderr, unless it succeeded.
    pub fn wait_success(&mut self) {
        let status = self.wait();
        if !status.success() {
            let stderr = self.stderr_text();
            panic!("{} failed ({status}); stderr:\n{stderr}", self.name);
        }
    }

    /// What the child wrote to stderr (after it exited).
    pub fn stderr_text(&mut self) -> String {
        self.stderr
            .take()
            .map(|h| h.join().unwrap_or_default())
            .unwrap_or_default()
    }
}

impl Drop for ChildProc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Runs `ip` with `args`: its stdout, or why it failed.
pub fn ip(args: &[&str]) -> Result<String, String> {
    run("ip", args)
}

/// Runs `program` with `args`: its stdout, or why it failed.
pub fn run(program: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                format!("`{program}` is not installed (Debian: apt-get install iproute2)")
            } else {
                format!("cannot run `{program}`: {e}")
            }
        })?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "`{program} {}` failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// A network namespace this test created; deleted (with its interfaces) when dropped.
#[derive(Debug)]
pub struct Netns {
    /// Its name (unique to this process).
    pub name: String,
}

impl Netns {
    /// Creates `ferrynet-<pid>-<tag>`.
    pub fn create(tag: &str) -> Result<Netns, String> {
        let name = format!("ferrynet-{}-{tag}", std::process::id());
        // A namespace of this name can only be left over from an earlier process with the same
        // pid that was killed before its guard ran.
        let _ = ip(&["netns", "del", &name]);
        ip(&["netns", "add", &name])?;
        Ok(Netns { name })
    }

    /// Runs `program args` inside the namespace.
    pub fn exec(&self, program: &str, args: &[&str]) -> Result<String, String> {
        let mut all = vec!["netns", "exec", &self.name, program];
        all.extend_from_slice(args);
        ip(&all)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        if let Err(e) = ip(&["netns", "del", &self.name]) {
            eprintln!("warning: could not delete network namespace {}: {e}", self.name);
        }
    }
}

/// Reports that a test could not run here. Loud, so that it is never mistaken for a pass; with
/// [`REQUIRE_KERNEL_FEATURES_VAR`] set it fails the test instead.
pub fn skip(test: &str, reason: &str) {
    if std::env::var_os(REQUIRE_KERNEL_FEATURES_VAR).is_some() {
        panic!("{test}: cannot run ({reason}) and {REQUIRE_KERNEL_FEATURES_VAR} is set");
    }
    // Straight to the process's stderr: the test harness captures `eprintln!` of passing
    // tests, and a skip must be seen.
    let banner = "*".repeat(70);
    let _ = writeln!(
        std::io::stderr().lock(),
        "\n{banner}\nSKIPPED: {test}: {reason}\n{banner}\n"
    );
}
