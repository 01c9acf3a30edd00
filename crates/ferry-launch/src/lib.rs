//! Servers run as child processes, for the benchmarks (`ferry bench redis` runs redis-server
//! and `ferry redis`) and for tests (the Redis differential test's reference redis-server):
//!
//! - started on a free loopback port, their stdout and stderr in a log file whose last lines
//!   every error quotes;
//! - ready when the caller's check passes (a connect, a `PING`), polled until then: a
//!   condition, never a fixed sleep; a server that exits first (its port was taken between the
//!   probe and its bind) is started again on another port;
//! - killed and reaped when their [`Server`] drops, on every exit path, a panic's unwinding
//!   included.
//!
//! A child starts with the CPU mask of the thread that spawns it: to pin a server, call
//! [`Server::start`] from a pinned thread.
//!
//! What it is not: a process supervisor (no restarts once ready) or a runner of tools to their
//! end (`ferry_testkit::tools::run`). It is its own crate, depending on nothing but
//! `thiserror` (its error type), because both ferry-bench's library and test crates launch
//! servers, and the test support crate (ferry-testkit) is dev-only.

#![forbid(unsafe_code)]

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use std::{fs, io, thread};

/// Starts tried when the server exits before it is ready.
const ATTEMPTS: usize = 3;
/// Time between two readiness checks.
const POLL: Duration = Duration::from_millis(10);
/// Lines of the log quoted in an error.
const TAIL_LINES: usize = 20;

/// Why a server did not start or stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LaunchError {
    /// No free port, or no log file.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: io::Error,
    },
    /// The process could not be started.
    #[error("starting {command}: {source}")]
    Spawn {
        /// The command line.
        command: String,
        /// The error.
        source: io::Error,
    },
    /// It exited (before it was ready, or since).
    #[error("{command} exited with {status}\n{log}")]
    Exited {
        /// The command line.
        command: String,
        /// How it ended.
        status: ExitStatus,
        /// The last lines of its output.
        log: String,
    },
    /// Its readiness check did not pass in time.
    #[error("{command} was not ready within {waited:?} (last check: {last})\n{log}")]
    NotReady {
        /// The command line.
        command: String,
        /// How long it was given.
        waited: Duration,
        /// What the last check said.
        last: String,
        /// The last lines of its output.
        log: String,
    },
}

/// A running server; killed and reaped (and its log removed) when dropped.
#[derive(Debug)]
pub struct Server {
    child: Child,
    addr: SocketAddr,
    command: String,
    log: PathBuf,
}

impl Server {
    /// Starts the command `command(port)` builds for a free port on 127.0.0.1 and waits until
    /// `ready(addr)` passes, for at most `timeout`. `name` names its log file.
    pub fn start(
        name: &str,
        command: impl Fn(u16) -> Command,
        mut ready: impl FnMut(SocketAddr) -> io::Result<()>,
        timeout: Duration,
    ) -> Result<Server, LaunchError> {
        let mut attempt = 1;
        loop {
            let port = free_port()?;
            let mut server = Server::spawn(name, port, command(port))?;
            match server.wait_ready(&mut ready, timeout) {
                Err(LaunchError::Exited { .. }) if attempt < ATTEMPTS => attempt += 1,
                Err(e) => return Err(e),
                Ok(()) => return Ok(server),
            }
        }
    }

    fn spawn(name: &str, port: u16, mut cmd: Command) -> Result<Server, LaunchError> {
        static STARTED: AtomicU64 = AtomicU64::new(0);
        let n = STARTED.fetch_add(1, Ordering::Relaxed);
        let log = std::env::temp_dir().join(format!("ferry-launch-{name}-{}-{n}.log", std::process::id()));
        let io = |what: String| move |source| LaunchError::Io { what, source };
        let out = fs::File::create(&log).map_err(io(format!("creating {}", log.display())))?;
        let err = out
            .try_clone()
            .map_err(io(format!("sharing {}", log.display())))?;
        let command = display(&cmd);
        let child = cmd
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|source| LaunchError::Spawn {
                command: command.clone(),
                source,
            })?;
        Ok(Server {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            command,
            log,
        })
    }

    fn wait_ready(
        &mut self,
        ready: &mut impl FnMut(SocketAddr) -> io::Result<()>,
        timeout: Duration,
    ) -> Result<(), LaunchError> {
        let deadline = Instant::now() + timeout;
        loop {
            self.check_alive()?;
            let last = match ready(self.addr) {
                Ok(()) => return Ok(()),
                Err(e) => e.to_string(),
            };
            if Instant::now() > deadline {
                return Err(LaunchError::NotReady {
                    command: self.command.clone(),
                    waited: timeout,
                    last,
                    log: self.log_tail(),
                });
            }
            thread::sleep(POLL);
        }
    }

    /// Its address: 127.0.0.1 and the port it was given.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its command line, quoted for a shell.
    pub fn command(&self) -> &str {
        &self.command
    }

    /// An error if it has exited.
    pub fn check_alive(&mut self) -> Result<(), LaunchError> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(LaunchError::Exited {
                command: self.command.clone(),
                status,
                log: self.log_tail(),
            }),
            Err(source) => Err(LaunchError::Io {
                what: format!("waiting for {}", self.command),
                source,
            }),
        }
    }

    /// The last lines of its output, after the log's path.
    pub fn log_tail(&self) -> String {
        let text = fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n");
        format!("(its output, {}:)\n{tail}", self.log.display())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
        let _ = fs::remove_file(&self.log);
    }
}

/// A port on 127.0.0.1 that was free a moment ago.
pub fn free_port() -> Result<u16, LaunchError> {
    let io = |source| LaunchError::Io {
        what: "finding a free port on 127.0.0.1".to_owned(),
        source,
    };
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(io)
}

/// `cmd`'s program and arguments, each quoted for a shell where needed.
pub fn display(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|w| shell_quote(&w.to_string_lossy()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `w` as a shell word: unchanged if it needs no quoting, else in single quotes.
pub fn shell_quote(w: &str) -> String {
    let plain = !w.is_empty()
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,@%+{}".contains(c));
    if plain {
        w.to_owned()
    } else {
        format!("'{}'", w.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `sh -c script sh PORT`.
    fn sh(script: &str) -> impl Fn(u16) -> Command {
        let script = script.to_owned();
        move |port| {
            let mut c = Command::new("sh");
            c.args(["-c", &script, "sh", &port.to_string()]);
            c
        }
    }

    #[test]
    fn ready_when_the_check_passes_then_killed_and_reaped_on_drop() {
        // `sh` cannot listen: the condition here is a file the child writes when it is up.
        let flag = std::env::temp_dir().join(format!("ferry-launch-test-{}", std::process::id()));
        let script = format!("echo up on $1 > {}; exec sleep 600", flag.display());
        let ready = |_| match fs::read_to_string(&flag) {
            Ok(text) if text.starts_with("up on ") => Ok(()),
            _ => Err(io::Error::other("not up yet")),
        };
        let server = Server::start("t-ready", sh(&script), ready, Duration::from_secs(30)).unwrap();
        let port = server.addr().port().to_string();
        assert_eq!(fs::read_to_string(&flag).unwrap().trim(), format!("up on {port}"));
        assert!(
            server.command().starts_with("sh -c 'echo up on $1 > "),
            "{}",
            server.command()
        );
        let proc = PathBuf::from(format!("/proc/{}", server.pid()));
        assert!(proc.exists());
        drop(server);
        assert!(!proc.exists(), "killed and reaped on drop");
        fs::remove_file(&flag).unwrap();
    }

    #[test]
    fn an_early_exit_says_why_with_the_output() {
        let never = |_| Err(io::Error::other("no"));
        let err = Server::start(
            "t-exit",
            sh("echo bad port $1 >&2; exit 3"),
            never,
            Duration::from_secs(30),
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, LaunchError::Exited { .. }), "{text}");
        assert!(
            text.contains("exit status: 3") && text.contains("bad port"),
            "{text}"
        );
    }

    #[test]
    fn a_server_never_ready_times_out_with_the_last_check() {
        let mut checks = 0;
        let refuse = |_| {
            checks += 1;
            Err(io::Error::other(format!("check {checks} refused")))
        };
        let err =
            Server::start("t-slow", sh("exec sleep 600"), refuse, Duration::from_millis(50)).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, LaunchError::NotReady { .. }), "{text}");
        assert!(text.contains("refused"), "{text}");
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("--port"), "--port");
        let mut c = Command::new("redis-server");
        c.args(["--save", "", "--port", "7000"]);
        assert_eq!(display(&c), "redis-server --save '' --port 7000");
    }
}
