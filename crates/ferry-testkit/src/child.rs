//! Child processes for tests that need a second process, which never outlive the test. Two
//! kinds:
//!
//! - the test binary re-executed to play a role ([`self_command`]), driven through
//!   [`ChildProc`], which reads its stdout line by line while it runs and keeps its stderr for
//!   failure messages;
//! - an external tool run to its end ([`run`]): its input given up front, its whole output
//!   (bytes, not lines) returned as an [`Output`], under a hang guard of the caller's length.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, MutexGuard, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use crate::DEADLINE;

/// This test binary, re-executed to run only `test`, with `role_var` set to `role` in its
/// environment (the test reads it back and plays that role instead of the parent's). Stdin,
/// stdout and stderr are piped, as [`ChildProc::spawn`] expects. `launcher` is a command the
/// binary is run through (`["ip", "netns", "exec", name]`), or empty to run it directly.
pub fn self_command(launcher: &[&str], test: &str, role_var: &str, role: &str) -> Command {
    let exe = std::env::current_exe().expect("current_exe");
    let mut cmd = match launcher {
        [] => Command::new(exe),
        [program, args @ ..] => {
            let mut c = Command::new(program);
            c.args(args).arg(exe);
            c
        }
    };
    cmd.args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(role_var, role)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// A child process that is killed (if still running) and reaped when dropped. Its stdout is
/// read line by line; its stderr is kept for failure messages; its stdin stays open until
/// [`ChildProc::close_stdin`] (or the drop), so a child may block on it to wait for its parent.
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
    /// Spawns `cmd`, whose stdout and stderr must be piped (and stdin, to use
    /// [`ChildProc::close_stdin`]).
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

    /// The child's process id (to signal it, e.g. `SIGSTOP`).
    pub fn id(&self) -> u32 {
        self.child().id()
    }

    /// A handle that kills the child when dropped (or on [`Killer::kill`]).
    pub fn killer(&self) -> Killer {
        Killer(Arc::clone(&self.child))
    }

    fn child(&self) -> MutexGuard<'_, Child> {
        self.child.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The rest of the first stdout line that contains `prefix`, after it (earlier lines are
    /// skipped). Fails, with `why` (what the line would have shown) and the child's stderr, if
    /// the child ends or [`DEADLINE`] passes first.
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
                        "{}: no line with {prefix:?} ({how}; {status:?}): {why}\nstderr:\n{stderr}",
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

    /// Closes the child's stdin: a child blocked reading it goes on.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// `SIGKILL`s the child and reaps it.
    pub fn kill(&mut self) {
        let mut child = self.child();
        child.kill().expect("kill");
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

    /// Closes the child's stdin, waits for it, and fails the test, with its stderr, unless it
    /// succeeded.
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
        kill_and_reap(&mut self.child());
    }
}

/// Kills `child` if it is still running, and reaps it.
fn kill_and_reap(child: &mut Child) {
    if let Ok(None) = child.try_wait() {
        let _ = child.kill();
    }
    let _ = child.wait();
}

/// Kills and reaps the child when dropped, whatever ends the test.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        kill_and_reap(&mut self.0);
    }
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

/// Runs `cmd` to its end with `stdin` written to its input (a pipe, closed after it; empty:
/// the process reads end-of-file at once), collecting its output; `what` names it in failure
/// messages. A hang guard, not a measurement: a process still running after `limit` is killed
/// and the test fails with what it wrote so far. A process that cannot be spawned fails the
/// test too (to skip when a tool is missing, look for it first: [`crate::tools::require_tool`]).
///
/// Its exit status is returned, not judged: the caller asserts on it, with
/// [`Output::describe`] in the message.
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
