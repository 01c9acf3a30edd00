//! One run of `redis-benchmark` against a running server, with the CPU time both used.
//!
//! `redis-benchmark` is a child process pinned to the client CPU (spawned from the calling
//! thread, which the caller has pinned there). Its CSV goes to a pipe; when the pipe closes
//! the process is exiting, and the harness waits for it to become a zombie (exited, not yet
//! reaped: its `/proc` entry and CPU counters are still there), reads its CPU time and the
//! server's, and only then reaps it. The server's CPU time is read just before the spawn and
//! just after the exit, so the window is the client's whole life: connecting its clients,
//! the requests, closing.

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::csv::{self, Row};
use crate::BoxError;
use crate::harness::cpu::{self, Source};

/// What to run.
#[derive(Debug, Clone)]
pub struct Invocation {
    /// The `redis-benchmark` executable.
    pub program: String,
    /// Its arguments, port included.
    pub args: Vec<String>,
    /// How long it may take before it is killed and the run fails.
    pub deadline: Duration,
    /// The server's CPU and redis-benchmark's (the calling thread's).
    pub cores: (usize, usize),
}

impl Invocation {
    /// The command line, quoted for a shell.
    pub fn display(&self) -> String {
        ferry_launch::display(Command::new(&self.program).args(&self.args))
    }
}

/// One run's results.
#[derive(Debug, Clone)]
pub struct ClientRun {
    /// Its single CSV line.
    pub row: Row,
    /// From the spawn to the exit.
    pub wall: Duration,
    /// The server's CPU time over that window, ns.
    pub server_cpu_ns: u64,
    /// Where the server's CPU time came from.
    pub server_source: Source,
    /// redis-benchmark's CPU time over its life, ns.
    pub client_cpu_ns: u64,
    /// Where the client's CPU time came from.
    pub client_source: Source,
    /// The CPUs redis-benchmark was allowed, as the kernel reported them.
    pub client_cpus_allowed: Option<String>,
    /// How long the server's core was busy (anything) over the window, s.
    pub server_core_busy_s: f64,
    /// How long the client's core was busy (anything) over the window, s.
    pub client_core_busy_s: f64,
}

/// Runs `inv` against the server with process id `server_pid`, from the calling thread.
pub fn run(inv: &Invocation, server_pid: u32) -> Result<ClientRun, BoxError> {
    let (server_cpu, client_cpu) = inv.cores;
    let server_before = cpu::cpu(server_pid).map_err(|e| format!("reading the server's CPU time: {e}"))?;
    let cores_before = (cpu::core(server_cpu)?, cpu::core(client_cpu)?);
    let started = Instant::now();
    let mut child = Command::new(&inv.program)
        .args(&inv.args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("starting {}: {e}", inv.program))?;
    let pid = child.id();
    let (mut out, mut err) = (child.stdout.take(), child.stderr.take());
    let (tx, rx) = mpsc::channel();
    let result = std::thread::scope(|s| {
        s.spawn(move || {
            let mut text = String::new();
            let r = out.as_mut().map(|o| o.read_to_string(&mut text));
            let _ = tx.send(r.map(|r| r.map(|_| text)));
        });
        let stderr = s.spawn(move || {
            let mut text = String::new();
            if let Some(e) = err.as_mut() {
                let _ = e.read_to_string(&mut text);
            }
            text
        });
        let stdout = match rx.recv_timeout(inv.deadline) {
            Ok(Some(Ok(text))) => Ok(text),
            Ok(_) => Err(BoxError::from("reading redis-benchmark's output failed")),
            Err(_) => Err(format!(
                "redis-benchmark did not finish within {} s",
                inv.deadline.as_secs()
            )
            .into()),
        };
        let measured = stdout.and_then(|text| {
            // Its stdout closed: it is exiting. Its counters are final once it is a zombie.
            wait_zombie(pid)?;
            let wall = started.elapsed();
            let client = cpu::cpu(pid)?;
            let server_after = cpu::cpu(server_pid).map_err(|e| format!("the server is gone: {e}"))?;
            let cores_after = (cpu::core(server_cpu)?, cpu::core(client_cpu)?);
            let cpus = cpu::cpus_allowed(pid);
            Ok::<_, BoxError>((text, wall, client, server_after, cores_after, cpus))
        });
        if measured.is_err() {
            let _ = child.kill();
        }
        let status = child.wait();
        let stderr = stderr.join().unwrap_or_default();
        (measured, status, stderr)
    });
    let (measured, status, stderr) = result;
    let (text, wall, client, server_after, cores_after, client_cpus_allowed) =
        measured.map_err(|e| format!("{}: {e}\n{stderr}", inv.display()))?;
    let status = status?;
    if !status.success() {
        return Err(format!("{} exited with {status}:\n{stderr}{text}", inv.display()).into());
    }
    let mut rows = csv::parse(&text).map_err(|e| format!("{}: {e}", inv.display()))?;
    if rows.len() != 1 {
        return Err(format!(
            "{}: {} CSV lines, expected one:\n{text}",
            inv.display(),
            rows.len()
        )
        .into());
    }
    let (server_cpu_ns, server_source) = server_after.since(server_before);
    let (client_cpu_ns, client_source) = client.total();
    Ok(ClientRun {
        row: rows.remove(0),
        wall,
        server_cpu_ns,
        server_source,
        client_cpu_ns,
        client_source,
        client_cpus_allowed,
        server_core_busy_s: cores_after.0.busy_since(cores_before.0),
        client_core_busy_s: cores_after.1.busy_since(cores_before.1),
    })
}

/// Waits (at most 2 s) until process `pid` is a zombie, polling every 100 µs.
fn wait_zombie(pid: u32) -> Result<(), BoxError> {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let state = cpu::stat(pid)?.state;
        if state == 'Z' || state == 'X' {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("process {pid} closed its output but did not exit (state {state})").into());
        }
        std::thread::sleep(Duration::from_micros(100));
    }
}
