//! The servers under test as child processes: started pinned to the server CPU, waited for
//! until they answer `PING`, and killed when their [`Server`] is dropped (on every exit path,
//! a panic's unwinding included).
//!
//! Pinning: a child process starts with the CPU mask of the thread that spawned it, so each
//! child is spawned from a short-lived thread pinned with [`harness::pin_current_thread`]
//! (no `taskset` needed); the mask the child really has is read back from
//! `/proc/PID/status` and recorded.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::resp::{Conn, Reply};
use crate::BoxError;
use crate::harness;
use crate::harness::cpu as procfs;

/// How long a server has to answer its first `PING`.
const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// A server's command line. `{port}` and `{cpu}` in the arguments are replaced by the port
/// it must listen on (127.0.0.1) and the CPU it is pinned to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerCmd {
    /// The executable (a path, or a name looked up on `PATH`).
    pub program: PathBuf,
    /// Its arguments, with the placeholders.
    pub args: Vec<String>,
}

impl ServerCmd {
    /// `redis-server` with no persistence: `--port {port} --save '' --appendonly no
    /// --protected-mode no`.
    pub fn redis_server(program: impl Into<PathBuf>) -> ServerCmd {
        ServerCmd {
            program: program.into(),
            args: [
                "--port",
                "{port}",
                "--save",
                "",
                "--appendonly",
                "no",
                "--protected-mode",
                "no",
            ]
            .map(str::to_owned)
            .to_vec(),
        }
    }

    /// Ferry's server as the `ferry` binary at `exe` runs it: `redis --port {port} --pin {cpu}
    /// --maxmemory 4gb`. The memory limit is raised from `ferry redis`'s default (1 GB) because
    /// the tests' data is about 1 GB of values at 100,000 keys; redis-server runs with no
    /// limit (its default).
    pub fn ferry(exe: impl Into<PathBuf>) -> ServerCmd {
        ServerCmd {
            program: exe.into(),
            args: [
                "redis",
                "--port",
                "{port}",
                "--pin",
                "{cpu}",
                "--maxmemory",
                "4gb",
            ]
            .map(str::to_owned)
            .to_vec(),
        }
    }

    /// Parses a command line typed as one string (`--ferry-cmd`): words split at whitespace,
    /// `'...'` and `"..."` quote (so `''` is an empty argument), no other escapes.
    pub fn parse(line: &str) -> Result<ServerCmd, BoxError> {
        let mut words = Vec::new();
        let mut word: Option<String> = None;
        let mut quote: Option<char> = None;
        for c in line.chars() {
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some(_), c) => word.get_or_insert_with(String::new).push(c),
                (None, '\'' | '"') => {
                    quote = Some(c);
                    word.get_or_insert_with(String::new);
                }
                (None, c) if c.is_whitespace() => words.extend(word.take()),
                (None, c) => word.get_or_insert_with(String::new).push(c),
            }
        }
        if quote.is_some() {
            return Err(format!("unterminated quote in {line:?}").into());
        }
        words.extend(word);
        let mut words = words.into_iter();
        let program = words.next().ok_or("an empty server command")?;
        Ok(ServerCmd {
            program: program.into(),
            args: words.collect(),
        })
    }

    /// The arguments with the placeholders filled in.
    pub fn args_for(&self, port: u16, cpu: usize) -> Vec<String> {
        self.args
            .iter()
            .map(|a| {
                a.replace("{port}", &port.to_string())
                    .replace("{cpu}", &cpu.to_string())
            })
            .collect()
    }

    /// The command line with its placeholders, quoted for a shell where needed.
    pub fn template(&self) -> String {
        std::iter::once(self.program.display().to_string())
            .chain(self.args.iter().cloned())
            .map(|w| shell_quote(&w))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The command line for `port` and `cpu`, quoted for a shell where needed.
    pub fn display(&self, port: u16, cpu: usize) -> String {
        std::iter::once(self.program.display().to_string())
            .chain(self.args_for(port, cpu))
            .map(|w| shell_quote(&w))
            .collect::<Vec<_>>()
            .join(" ")
    }
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

/// Spawns `cmd` from a new thread pinned to `cpu`, so that the child starts with that CPU
/// as its only one.
pub fn spawn_pinned(cmd: &mut Command, cpu: usize) -> Result<Child, BoxError> {
    std::thread::scope(|s| {
        s.spawn(|| -> Result<Child, BoxError> {
            harness::pin_current_thread(cpu)?;
            Ok(cmd.spawn()?)
        })
        .join()
        .unwrap_or_else(|_| Err("the spawning thread panicked".into()))
    })
}

/// A port on 127.0.0.1 that was free a moment ago.
pub fn free_port() -> Result<u16, BoxError> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// A running server; killed (and reaped) when dropped.
pub struct Server {
    child: Child,
    /// The port it listens on.
    pub port: u16,
    /// Its process id.
    pub pid: u32,
    /// The command line it was started with.
    pub command: String,
    /// The CPUs it may run on, as the kernel reports them.
    pub cpus_allowed: Option<String>,
    log: PathBuf,
}

impl Server {
    /// Starts `cmd` pinned to `cpu` on a free port and waits until it answers `PING`. Its
    /// output goes to a log file in the temporary directory, quoted in the error if it fails.
    pub fn start(name: &'static str, cmd: &ServerCmd, cpu: usize) -> Result<Server, BoxError> {
        let port = free_port()?;
        let log = std::env::temp_dir().join(format!("ferry-bench-redis-{name}-{}.log", std::process::id()));
        let out = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let mut command = Command::new(&cmd.program);
        command
            .args(cmd.args_for(port, cpu))
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out);
        let display = cmd.display(port, cpu);
        let child = spawn_pinned(&mut command, cpu).map_err(|e| format!("starting {display}: {e}"))?;
        let mut server = Server {
            pid: child.id(),
            child,
            port,
            command: display,
            cpus_allowed: None,
            log,
        };
        server.wait_ready()?;
        server.cpus_allowed = procfs::cpus_allowed(server.pid);
        Ok(server)
    }

    fn wait_ready(&mut self) -> Result<(), BoxError> {
        let deadline = Instant::now() + READY_TIMEOUT;
        let mut last = String::new();
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait()? {
                return Err(format!(
                    "{} exited with {status} before answering PING:\n{}",
                    self.command,
                    self.log_tail()
                )
                .into());
            }
            match Conn::connect(self.port, Duration::from_secs(1))
                .map_err(BoxError::from)
                .and_then(|mut c| c.call(&[b"PING"]))
            {
                Ok(Reply::Simple(s)) if s == "PONG" => return Ok(()),
                Ok(other) => last = format!("PING answered {other:?}"),
                Err(e) => last = e.to_string(),
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(format!(
            "{} did not answer PING within {} s ({last}):\n{}",
            self.command,
            READY_TIMEOUT.as_secs(),
            self.log_tail()
        )
        .into())
    }

    /// The last lines of its log.
    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(20)..].join("\n");
        format!("(log {})\n{tail}", self.log.display())
    }

    /// Whether it is still running.
    pub fn check_alive(&mut self) -> Result<(), BoxError> {
        match self.child.try_wait()? {
            None => Ok(()),
            Some(status) => {
                Err(format!("{} exited with {status}:\n{}", self.command, self.log_tail()).into())
            }
        }
    }

    /// Kills it, reaps it and removes its log.
    pub fn stop(mut self) {
        self.kill();
        let _ = std::fs::remove_file(&self.log);
    }

    fn kill(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_command_lines() {
        let c = ServerCmd::parse("redis-server --port {port} --save '' --appendonly no").unwrap();
        assert_eq!(c.program, PathBuf::from("redis-server"));
        assert_eq!(c.args, ["--port", "{port}", "--save", "", "--appendonly", "no"]);
        assert_eq!(c.args, ServerCmd::redis_server("redis-server").args[..6]);
        assert_eq!(
            c.display(7000, 1),
            "redis-server --port 7000 --save '' --appendonly no"
        );
        let q = ServerCmd::parse(r#"  /opt/x  "a b"c 'it''s' "#).unwrap();
        assert_eq!(q.args, ["a bc", "its"]);
        assert!(ServerCmd::parse("x 'open").is_err());
        assert!(ServerCmd::parse("   ").is_err());
        let f = ServerCmd::ferry("/t/ferry");
        assert_eq!(
            f.args_for(6400, 1)[..5],
            ["redis", "--port", "6400", "--pin", "1"]
        );
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(
            f.template(),
            "/t/ferry redis --port {port} --pin {cpu} --maxmemory 4gb"
        );
    }
}
