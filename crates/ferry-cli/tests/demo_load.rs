//! `ferry demo` and `ferry calibrate --quick`, the real commands, while other work runs: two busy
//! loops and another Ferry process busy-polling on the same CPUs (a `ferry bench kv` whose
//! server loop never sleeps, pinned where the demo pins its own). Each must still put a number
//! in every row of its tables. Only that is checked, never a speed: how fast is the machine's
//! business, that the command measured something and said so is the command's.

mod common;

use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard, PoisonError};

use common::{ferry, scratch, success};
use ferry_testkit::BusyLoops;

/// Both tests load the machine and measure on the same two CPUs: they take turns.
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Other work: two busy loops, and a `ferry bench kv` serving a small store from a server loop
/// that busy-polls (the default) on CPU 1 while its client runs on CPU 0, for longer than any
/// test here takes (killed and reaped when dropped).
struct OtherWork {
    _busy: BusyLoops,
    kv: Child,
}

impl OtherWork {
    fn start(name: &str) -> OtherWork {
        let busy = BusyLoops::start(2);
        let json = scratch("demo-load", &format!("{name}-other-kv.json"));
        let kv = Command::new(env!("CARGO_BIN_EXE_ferry"))
            .args(["bench", "kv", "--workload", "ycsb", "--keys", "1000"])
            .args(["--system", "ferry", "--transport", "shm"])
            // One slow rate, point after point (each a little higher than the last), for
            // minutes: the server loop polls throughout.
            .args([
                "--start-rate",
                "2000",
                "--step",
                "1.001",
                "--max-points",
                "100000",
            ])
            .args(["--duration-ms", "500", "--json", json.to_str().unwrap()])
            .env("FERRY_THRESHOLDS", "/nonexistent/ferry-thresholds")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the other ferry bench kv");
        OtherWork { _busy: busy, kv }
    }

    /// Whether the other Ferry process is still serving (it should be, throughout).
    fn kv_running(&mut self) -> bool {
        matches!(self.kv.try_wait(), Ok(None))
    }
}

impl Drop for OtherWork {
    fn drop(&mut self) {
        let _ = self.kv.kill();
        let _ = self.kv.wait();
    }
}

/// The cells of the table rows of `stdout` that start with one of `names` (lines with a colon
/// are notes, not rows), under the table's title (a line with " over " or ": server work" or
/// ": highest"), as (title, row name, cells).
fn rows<'a>(stdout: &'a str, names: &[&str]) -> Vec<(&'a str, &'a str, Vec<&'a str>)> {
    let mut out = Vec::new();
    let mut title = "";
    for line in stdout.lines() {
        let mut cells = line.split_whitespace();
        match cells.next() {
            Some(first) if names.contains(&first) && !line.contains(':') && !title.is_empty() => {
                out.push((title, first, cells.collect()));
            }
            _ if line.contains(" over ") || line.contains(": server work") || line.contains(": highest") => {
                title = line
            }
            _ => {}
        }
    }
    out
}

fn is_number(cell: &str) -> bool {
    cell.parse::<f64>().is_ok_and(f64::is_finite)
}

#[test]
fn the_demo_fills_every_row_while_other_work_runs() {
    let _turn = one_at_a_time();
    let mut other = OtherWork::start("demo");
    let plot = scratch("demo-load", "demo.svg");
    let _ = std::fs::remove_file(&plot);
    let out = ferry(&["demo", "--plot", plot.to_str().unwrap()], &[]);
    assert!(
        other.kv_running(),
        "the other Ferry process stopped before the demo ended"
    );
    drop(other);
    let stdout = success(&out, "demo");
    let table = rows(&stdout, &["ferry", "prost"]);
    // Two systems over two transports: four rows, each with the highest load and its p50, p99.
    assert_eq!(table.len(), 4, "{stdout}");
    for (title, system, cells) in &table {
        assert!(
            cells.len() >= 3 && cells[..3].iter().all(|c| is_number(c)),
            "{system} in \"{title}\" has no figure:\n{stdout}"
        );
    }
    assert!(std::fs::read_to_string(&plot).unwrap().contains("<svg"));
}

#[test]
fn calibrate_quick_measures_every_cell_and_writes_while_other_work_runs() {
    let _turn = one_at_a_time();
    let config = scratch("demo-load", "thresholds");
    let _ = std::fs::remove_file(&config);
    let mut other = OtherWork::start("calibrate");
    let out = ferry(
        &["calibrate", "--quick", "--config", config.to_str().unwrap()],
        &[],
    );
    assert!(
        other.kv_running(),
        "the other Ferry process stopped before calibrate ended"
    );
    drop(other);
    let stdout = success(&out, "calibrate --quick");
    // --quick: N in 1 and 4 (the rows), S in 64 B .. 4 KiB (4 columns), two tables per
    // transport, two transports.
    let table = rows(&stdout, &["1", "4"]);
    assert_eq!(table.len(), 2 * 2 * 2, "{stdout}");
    for (title, n, cells) in &table {
        assert!(
            cells.len() == 4 && cells.iter().all(|c| is_number(c)),
            "N = {n} in \"{title}\" has a cell without a figure:\n{stdout}"
        );
    }
    let written = std::fs::read_to_string(&config).expect("calibrate wrote its thresholds");
    ferry::rpc::Thresholds::parse(&written).expect("a thresholds file that parses");
    assert!(stdout.contains("thresholds written to"), "{stdout}");
}
