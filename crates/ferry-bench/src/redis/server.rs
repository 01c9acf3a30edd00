//! The servers under test: their command lines, and [`start`], which launches one
//! ([`ferry_launch`]) pinned to the server CPU and ready once it answers `PING`. A child
//! starts with the CPU mask of the thread that spawns it, so it is spawned from a short-lived
//! thread pinned with [`harness::pin_current_thread`] (no `taskset` needed).

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use ferry_launch::{Server, free_port};
use ferry_redis::resp::client::ping;

use crate::BoxError;
use crate::harness;

/// How long a server has to answer its first `PING`.
const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// A server's command line. `{port}` and `{cpu}` in the arguments are replaced by the port
/// it must listen on (127.0.0.1) and the CPU it is pinned to, and `{tls_port}` (`--tls`) by a
/// second free port, for TLS.
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
    /// --maxmemory 8gb`. The memory limit is raised from `ferry redis`'s default (1 GB) because
    /// the tests' data is about 3.6 GB of values at 100,000 keys (1 GB of strings and lists, 2.6 GB
    /// of hashes, sets and sorted sets); redis-server runs with no
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
                "8gb",
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
    pub fn args_for(&self, port: u16, tls_port: Option<u16>, cpu: usize) -> Vec<String> {
        let tls_port = tls_port.map_or_else(String::new, |p| p.to_string());
        self.args
            .iter()
            .map(|a| {
                a.replace("{port}", &port.to_string())
                    .replace("{tls_port}", &tls_port)
                    .replace("{cpu}", &cpu.to_string())
            })
            .collect()
    }

    /// The command with the AOF on, synced every second, in `dir` (after the command's own
    /// options, so that these win: `--appendonly yes` overrides redis-server's `no`).
    pub fn with_aof(&self, dir: &std::path::Path) -> ServerCmd {
        let mut cmd = self.clone();
        let aof = ["--appendonly", "yes", "--appendfsync", "everysec", "--dir"];
        cmd.args.extend(aof.map(str::to_owned));
        cmd.args.push(dir.display().to_string());
        cmd
    }

    /// Whether its arguments ask for a TLS port.
    fn wants_tls_port(&self) -> bool {
        self.args.iter().any(|a| a.contains("{tls_port}"))
    }

    /// The command line with its placeholders, quoted for a shell where needed.
    pub fn template(&self) -> String {
        ferry_launch::display(Command::new(&self.program).args(&self.args))
    }
}

/// Starts `cmd` pinned to `cpu` on a free port (and a free TLS port, if it asks for one);
/// returns once it answers `PING` on the plain port.
pub fn start(name: &str, cmd: &ServerCmd, cpu: usize) -> Result<(Server, Option<u16>), BoxError> {
    let tls_port = cmd.wants_tls_port().then(free_port).transpose()?;
    let command = |port| {
        let mut c = Command::new(&cmd.program);
        c.args(cmd.args_for(port, tls_port, cpu));
        c
    };
    let ready = |addr| ping(addr, Duration::from_secs(1));
    let server = harness::on_cpu("redis-spawn", cpu, || {
        Ok(Server::start(name, command, ready, READY_TIMEOUT)?)
    })?;
    Ok((server, tls_port))
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
        assert_eq!(c.args_for(7000, None, 1)[1], "7000");
        let t = ServerCmd::parse("redis-server --port {port} --tls-port {tls_port}").unwrap();
        assert!(t.wants_tls_port() && !c.wants_tls_port());
        assert_eq!(t.args_for(7000, Some(7001), 1)[3], "7001");
        let q = ServerCmd::parse(r#"  /opt/x  "a b"c 'it''s' "#).unwrap();
        assert_eq!(q.args, ["a bc", "its"]);
        assert!(ServerCmd::parse("x 'open").is_err());
        assert!(ServerCmd::parse("   ").is_err());
        let aof = ServerCmd::redis_server("redis-server").with_aof(std::path::Path::new("/tmp/a"));
        assert_eq!(
            aof.template(),
            "redis-server --port {port} --save '' --appendonly no --protected-mode no --appendonly yes --appendfsync everysec --dir /tmp/a"
        );
        let f = ServerCmd::ferry("/t/ferry");
        assert_eq!(
            f.args_for(6400, None, 1)[..5],
            ["redis", "--port", "6400", "--pin", "1"]
        );
        assert_eq!(
            f.template(),
            "/t/ferry redis --port {port} --pin {cpu} --maxmemory 8gb"
        );
    }
}
