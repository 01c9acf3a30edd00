//! `ferry demo` and `ferry calibrate --quick`, the real commands, while other work runs: two busy
//! loops and another Ferry server kept busy on the same two CPUs (a `ferry redis` at its
//! defaults, answering pipelined PINGs from a thread of the test without pause, as a server
//! under a test suite's load would). Each must still put a number in every row of its tables. Only that is checked, never
//! a speed: how fast is the machine's business, that the command measured something and said
//! so is the command's.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use common::{ferry, scratch, success};
use ferry_testkit::{BusyLoops, ChildProc};

/// Both tests load the machine and measure on the same two CPUs: they take turns.
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

/// PINGs sent per batch, pipelined.
const BATCH: usize = 16;

/// Other work: two busy loops, and a `ferry redis` kept busy by a thread that
/// sends it batches of PINGs and reads the PONGs, until stopped. All of it ends when dropped.
struct OtherWork {
    _busy: BusyLoops,
    _redis: ChildProc,
    stop: Arc<AtomicBool>,
    pongs: Arc<AtomicU64>,
    pinger: Option<JoinHandle<()>>,
}

impl OtherWork {
    fn start() -> OtherWork {
        let busy = BusyLoops::start(2);
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ferry"));
        cmd.args(["redis", "--port", "0"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut redis = ChildProc::spawn("ferry redis", cmd);
        let line = redis.expect_line("listening on ", "the address it serves");
        let addr = line.split_whitespace().next().unwrap().to_owned();
        let mut conn = TcpStream::connect(&addr).unwrap_or_else(|e| panic!("connect to {addr}: {e}"));
        let stop = Arc::new(AtomicBool::new(false));
        let pongs = Arc::new(AtomicU64::new(0));
        let pinger = {
            let (stop, pongs) = (stop.clone(), pongs.clone());
            std::thread::spawn(move || {
                let request = b"*1\r\n$4\r\nPING\r\n".repeat(BATCH);
                let mut reply = vec![0u8; b"+PONG\r\n".len() * BATCH];
                while !stop.load(Ordering::Relaxed) {
                    if conn.write_all(&request).is_err() || conn.read_exact(&mut reply).is_err() {
                        return;
                    }
                    pongs.fetch_add(BATCH as u64, Ordering::Relaxed);
                }
            })
        };
        OtherWork {
            _busy: busy,
            _redis: redis,
            stop,
            pongs,
            pinger: Some(pinger),
        }
    }

    /// Stops the pings; how many were answered.
    fn stop(&mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(p) = self.pinger.take() {
            p.join().expect("the pinging thread");
        }
        self.pongs.load(Ordering::Relaxed)
    }
}

impl Drop for OtherWork {
    /// Stops the pings (the busy loops and the server are killed as they drop).
    fn drop(&mut self) {
        self.stop();
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
    let mut other = OtherWork::start();
    let plot = scratch("demo-load", "demo.svg");
    let _ = std::fs::remove_file(&plot);
    let out = ferry(&["demo", "--plot", plot.to_str().unwrap()], &[]);
    let pongs = other.stop();
    drop(other);
    assert!(pongs > 0, "the other Ferry server answered nothing");
    let stdout = success(&out, "demo");
    println!("{stdout}");
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
    let mut other = OtherWork::start();
    let out = ferry(
        &["calibrate", "--quick", "--config", config.to_str().unwrap()],
        &[],
    );
    let pongs = other.stop();
    drop(other);
    assert!(pongs > 0, "the other Ferry server answered nothing");
    let stdout = success(&out, "calibrate --quick");
    println!("{stdout}");
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
