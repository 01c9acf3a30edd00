//! Helpers shared by ferry-shm's integration tests: shared pools, socket paths, a seeded RNG,
//! deterministic payloads, a deadlock guard, connection pairs on two threads, and peer
//! processes (the test binary re-executed in a role).
//!
//! Every test binary compiles this module and uses a part of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, MutexGuard, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use ferry_buf::{Pool, PoolConfig};
use ferry_shm::{ShmConfig, ShmConnection, ShmListener};
use ferry_transport::TransportError;
use ferry_wire::Limits;

/// The environment variable that tells a re-executed test binary which role to play.
pub const ROLE_VAR: &str = "FERRY_SHM_TEST_ROLE";

/// A shared pool (memfd-backed: the transport's send buffer) with 2 MiB regions.
pub fn shm_pool() -> Pool {
    Pool::new(PoolConfig {
        shared: true,
        region_size: 2 << 20,
        max_bytes: 64 << 20,
        huge_pages: false,
        mlock: false,
    })
    .expect("shared pool")
}

/// A private pool: values in it are not in shared memory, so the transport must copy them.
pub fn private_pool() -> Pool {
    Pool::new(PoolConfig {
        shared: false,
        region_size: 2 << 20,
        max_bytes: 64 << 20,
        huge_pages: false,
        mlock: false,
    })
    .expect("private pool")
}

/// Buffers a pool has handed out and not got back.
pub fn outstanding(pool: &Pool) -> usize {
    pool.stats().buffers_outstanding()
}

/// Decoding limits that admit a whole shared region (views are region-relative).
pub fn limits() -> Limits {
    Limits {
        max_message_len: 1 << 30,
        ..Limits::default()
    }
}

/// A socket path unique to this process and `name`.
pub fn socket_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("ferry-shm-{}-{name}.sock", std::process::id()))
}

/// Whether `e` says the peer went away: a clean close or a reset connection.
pub fn peer_gone(e: &TransportError) -> bool {
    match e {
        TransportError::Closed => true,
        TransportError::Io { source, .. } => source.kind() == std::io::ErrorKind::ConnectionReset,
        _ => false,
    }
}

// Each test binary uses a part of these (as of the rest of this module).
#[allow(unused_imports)]
pub use ferry_testkit::{DEADLINE, Guarded, Rng, spawn, within};

/// The seed for randomized tests: `FERRY_SHM_SEED` if set (to reproduce a failure), else
/// `default`.
pub fn seed(default: u64) -> u64 {
    ferry_testkit::seed("FERRY_SHM_SEED", default)
}

/// `len` bytes determined by `tag`: what a receiver regenerates to check a value.
pub fn pattern(len: usize, tag: u64) -> Vec<u8> {
    Rng::new(tag ^ 0x5eed_0000_0000_0000).bytes(len)
}

/// Connects two sides on two threads (each with its own shared pool; `b` accepts, `a`
/// connects) and runs `a` and `b` on them; once each returns (its connection, frames and
/// values dropped), checks that its pool has every buffer back. Fails with both sides'
/// messages if either panics, and fails (deadlock guard) if either does not finish within
/// [`DEADLINE`].
pub fn run_pair<A: Send + 'static, B: Send + 'static>(
    name: &str,
    config_a: ShmConfig,
    config_b: ShmConfig,
    a: impl FnOnce(ShmConnection) -> A + Send + 'static,
    b: impl FnOnce(ShmConnection) -> B + Send + 'static,
) -> (A, B) {
    let listener = ShmListener::bind(socket_path(name)).expect("bind");
    let path = listener.path().to_path_buf();
    let side_b = spawn(&format!("{name}: side B"), move || {
        let pool = shm_pool();
        let base = outstanding(&pool);
        let conn = listener.accept(&pool, &config_b).expect("accept");
        let r = b(conn);
        assert_eq!(outstanding(&pool), base, "side B: pool buffers leaked");
        r
    });
    let side_a = spawn(&format!("{name}: side A"), move || {
        let pool = shm_pool();
        let base = outstanding(&pool);
        let conn = ShmConnection::connect(&path, &pool, &config_a).expect("connect");
        let r = a(conn);
        assert_eq!(outstanding(&pool), base, "side A: pool buffers leaked");
        r
    });
    let deadline = Instant::now() + DEADLINE;
    match (side_a.result_by(deadline), side_b.result_by(deadline)) {
        (Ok(a), Ok(b)) => (a, b),
        (a, b) => panic!(
            "{name}:\n  A: {}\n  B: {}",
            a.err().unwrap_or_else(|| "ok".into()),
            b.err().unwrap_or_else(|| "ok".into())
        ),
    }
}

/// The role this process was started in, if it is a re-executed peer.
pub fn role() -> Option<String> {
    std::env::var(ROLE_VAR).ok()
}

/// An environment variable the parent passed to a peer.
pub fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("peer started without {name}"))
}

/// This test binary, re-executed to run only `test` in role `role`.
pub fn self_command(test: &str, role: &str) -> Command {
    let mut cmd = Command::new(std::env::current_exe().expect("current_exe"));
    cmd.args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(ROLE_VAR, role)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Blocks until the parent closes our stdin (or kills us): how a peer waits to be killed.
pub fn wait_for_parent() {
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
}

/// A child process that is killed (if still running) and reaped when dropped. Its stdout is
/// read line by line; its stderr is kept for failure messages.
pub struct ChildProc {
    name: String,
    child: Arc<Mutex<Child>>,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    stderr: Option<thread::JoinHandle<String>>,
}

/// Kills a child when dropped (held by the test thread while another thread drives the
/// child, so that a deadlock-guard failure does not leave it running).
pub struct Killer(Arc<Mutex<Child>>);

impl Killer {
    /// `SIGKILL`s the child and reaps it.
    pub fn kill(&self) {
        let mut child = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Killer {
    fn drop(&mut self) {
        self.kill();
    }
}

impl ChildProc {
    /// Spawns `cmd` (stdin, stdout and stderr piped).
    pub fn spawn(name: &str, mut cmd: Command) -> ChildProc {
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {name}: {e}"));
        let stdout = child.stdout.take().expect("piped stdout");
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
            stdin: child.stdin.take(),
            child: Arc::new(Mutex::new(child)),
            lines,
            stderr,
        }
    }

    /// A handle that kills the child when dropped (or on [`Killer::kill`]).
    pub fn killer(&self) -> Killer {
        Killer(Arc::clone(&self.child))
    }

    fn child(&self) -> MutexGuard<'_, Child> {
        self.child.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The rest of the first stdout line that contains `prefix` (earlier lines are skipped). Fails, with `why` and the child's stderr, if the child ends or
    /// [`DEADLINE`] passes first.
    pub fn expect_line(&mut self, prefix: &str, why: &str) -> String {
        let start = Instant::now();
        loop {
            let left = DEADLINE.saturating_sub(start.elapsed());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    // The test harness may have started the line ("test name ... ").
                    if let Some(at) = line.find(prefix) {
                        return line[at + prefix.len()..].trim().to_owned();
                    }
                }
                Err(e) => {
                    let status = {
                        let mut child = self.child();
                        let _ = child.kill();
                        child.wait()
                    };
                    let stderr = self.stderr_text();
                    let how = match e {
                        mpsc::RecvTimeoutError::Timeout => {
                            format!("deadlock guard: nothing within {DEADLINE:?}")
                        }
                        mpsc::RecvTimeoutError::Disconnected => "the child ended".to_owned(),
                    };
                    panic!(
                        "{}: no line starting with {prefix:?} ({how}; {status:?}): {why}\nstderr:\n{stderr}",
                        self.name
                    );
                }
            }
        }
    }

    /// Closes the child's stdin: a peer blocked in [`wait_for_parent`] goes on.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// `SIGKILL`s the child and reaps it.
    pub fn kill(&mut self) {
        let mut child = self.child();
        let _ = child.kill();
        child.wait().expect("wait");
    }

    /// Waits for the child to exit (deadlock guard: killed and failed after [`DEADLINE`]).
    pub fn wait(&mut self) -> ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child().try_wait().expect("try_wait") {
                return status;
            }
            if start.elapsed() > DEADLINE {
                {
                    let mut child = self.child();
                    let _ = child.kill();
                    let _ = child.wait();
                }
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
        self.close_stdin();
        let status = self.wait();
        if !status.success() {
            let stderr = self.stderr_text();
            panic!("{} failed ({status}); stderr:\n{stderr}", self.name);
        }
    }

    /// What the child wrote to stderr (complete once it has exited).
    pub fn stderr_text(&mut self) -> String {
        self.stderr
            .take()
            .map(|h| h.join().unwrap_or_default())
            .unwrap_or_default()
    }
}

impl Drop for ChildProc {
    fn drop(&mut self) {
        let mut child = self.child();
        if let Ok(None) = child.try_wait() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
