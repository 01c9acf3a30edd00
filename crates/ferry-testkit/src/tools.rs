//! External tools a test runs (`redis-cli`, `flatc`, `python3` with a package), and the one
//! rule for a missing one: the test prints why and returns, a skip with a reason, never a
//! silent pass; unless [`REQUIRE_TOOLS`] is `1` (CI sets it), where a missing tool fails the
//! test. A tool that is found is run to its end by [`run`], under a hang guard.
//!
//! ```no_run
//! use std::path::PathBuf;
//! use std::process::Command;
//! use std::time::Duration;
//!
//! use ferry_testkit::tools::{missing, require_tool, run};
//!
//! /// A `redis-cli` that runs; `None` (the test skips) otherwise.
//! fn require_cli() -> Option<PathBuf> {
//!     let cli = require_tool("redis-cli")?;
//!     let mut cmd = Command::new(&cli);
//!     cmd.arg("--version");
//!     let out = run("redis-cli --version", cmd, b"", Duration::from_secs(60));
//!     if !out.status.success() {
//!         // On PATH but unusable (a broken install): the same skip-or-fail rule.
//!         return missing(&format!("redis-cli --version failed: {}", out.describe()));
//!     }
//!     Some(cli)
//! }
//!
//! // In a test:
//! let Some(cli) = require_cli() else {
//!     return; // skipped, and said so on stderr
//! };
//! let mut cmd = Command::new(&cli);
//! cmd.arg("PING");
//! let out = run("redis-cli PING", cmd, b"", Duration::from_secs(60));
//! assert!(out.status.success(), "{}", out.describe());
//! ```
//!
//! What it is not: an installer (a missing tool is reported, never fetched), a check of a
//! tool's version or packages (each suite asserts what it needs on top of
//! [`require_tool`]), or a driver for a long-lived child read while it runs (that is
//! [`ChildProc`](crate::ChildProc)).

use std::env;
use std::path::PathBuf;

pub use crate::child::{Output, run};

/// Set to `1` (CI does) to turn a missing tool into a failure instead of a skip.
pub const REQUIRE_TOOLS: &str = "FERRY_REQUIRE_TOOLS";

/// A missing prerequisite: `None` after printing why the test is skipped, or a panic when
/// [`REQUIRE_TOOLS`] is `1`. `what` says what is missing (and, best, how to install it).
pub fn missing<T>(what: &str) -> Option<T> {
    if env::var(REQUIRE_TOOLS).is_ok_and(|v| v == "1") {
        panic!("{what}, and {REQUIRE_TOOLS}=1 requires it");
    }
    eprintln!("SKIPPED: {what} (set {REQUIRE_TOOLS}=1 to make this a failure)");
    None
}

/// The executable `name` found on `PATH` (the first file of that name; whether it runs is
/// not checked).
pub fn find_tool(name: &str) -> Option<PathBuf> {
    env::split_paths(&env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// The executable `name` on `PATH`; `None` (the test skips, see [`missing`]) when there is
/// none.
pub fn require_tool(name: &str) -> Option<PathBuf> {
    find_tool(name).or_else(|| missing(&format!("{name} is not on PATH")))
}

/// Set (to anything; CI does) to make a test that needs a kernel feature this machine lacks
/// (network namespaces, `MSG_ZEROCOPY`, io_uring `SEND_ZC`) fail instead of skipping.
pub const REQUIRE_KERNEL_FEATURES: &str = "FERRY_REQUIRE_KERNEL_FEATURES";

/// Reports that `test` could not run here for `reason` (a missing kernel feature). Loud, so
/// that it is never mistaken for a pass; with [`REQUIRE_KERNEL_FEATURES`] set it fails the test
/// instead.
pub fn skip(test: &str, reason: &str) {
    if std::env::var_os(REQUIRE_KERNEL_FEATURES).is_some() {
        panic!("{test}: cannot run ({reason}) and {REQUIRE_KERNEL_FEATURES} is set");
    }
    // Straight to the process's stderr: the test harness captures `eprintln!` of passing
    // tests, and a skip must be seen.
    use std::io::Write;
    let banner = "*".repeat(70);
    let _ = writeln!(
        std::io::stderr().lock(),
        "\n{banner}\nSKIPPED: {test}: {reason}\n{banner}\n"
    );
}

#[cfg(test)]
mod tests {
    use std::panic::catch_unwind;
    use std::process::Command;
    use std::time::{Duration, Instant};

    use super::*;

    const LIMIT: Duration = Duration::from_secs(60);

    fn sh(script: &str) -> Command {
        let mut cmd = Command::new(find_tool("sh").expect("sh on PATH"));
        cmd.args(["-c", script]);
        cmd
    }

    #[test]
    fn finds_sh_and_not_a_made_up_name() {
        assert!(find_tool("sh").is_some_and(|p| p.is_file()));
        assert_eq!(find_tool("ferry-no-such-tool-7f3a"), None);
    }

    #[test]
    fn missing_skips_or_fails_by_the_env_var() {
        let required = env::var(REQUIRE_TOOLS).is_ok_and(|v| v == "1");
        let result = catch_unwind(|| require_tool("ferry-no-such-tool-7f3a"));
        match result {
            Ok(found) => {
                assert!(!required, "{REQUIRE_TOOLS}=1 must turn a skip into a failure");
                assert_eq!(found, None);
            }
            Err(panic) => {
                assert!(required, "a missing tool must skip unless {REQUIRE_TOOLS}=1");
                let text = panic.downcast_ref::<String>().expect("a formatted panic");
                assert_eq!(
                    text,
                    "ferry-no-such-tool-7f3a is not on PATH, and FERRY_REQUIRE_TOOLS=1 requires it"
                );
            }
        }
    }

    #[test]
    fn run_feeds_stdin_and_collects_both_streams_and_the_status() {
        let out = run("sh", sh("cat; echo oops >&2; exit 3"), b"in\x00put", LIMIT);
        assert_eq!(out.stdout, b"in\x00put");
        assert_eq!(out.err(), "oops\n");
        assert_eq!(out.status.code(), Some(3));
        let text = out.describe();
        assert!(
            text.contains("--- stdout:\nin\0put\n--- stderr:\noops\n"),
            "{text}"
        );
    }

    #[test]
    fn run_with_no_input_reads_end_of_file() {
        let out = run("sh", sh("wc -c"), b"", LIMIT);
        assert!(out.status.success(), "{}", out.describe());
        assert_eq!(out.out().trim(), "0");
    }

    #[test]
    fn run_does_not_fail_when_the_process_leaves_its_input_unread() {
        let out = run("sh", sh("exit 0"), &vec![b'x'; 1 << 20], LIMIT);
        assert!(out.status.success(), "{}", out.describe());
    }

    #[test]
    fn the_hang_guard_kills_and_fails_with_what_was_written() {
        let start = Instant::now();
        let limit = Duration::from_millis(300);
        let panic = catch_unwind(|| run("sleeper", sh("echo before; exec sleep 30"), b"", limit))
            .expect_err("a process past its limit fails the test");
        let text = panic.downcast_ref::<String>().expect("a formatted panic");
        assert!(
            text.starts_with("hang guard: sleeper still running after 300ms, killed\n"),
            "{text}"
        );
        assert!(text.contains("--- stdout:\nbefore\n"), "{text}");
        // Killed, not waited out.
        assert!(start.elapsed() < Duration::from_secs(20), "{:?}", start.elapsed());
    }

    #[test]
    #[should_panic(expected = "spawn nothing: ")]
    fn a_process_that_cannot_spawn_fails() {
        run("nothing", Command::new("/nonexistent/ferry-tool"), b"", LIMIT);
    }
}
