//! `ferry calibrate`: the threshold study of Cornflakes section 5 (Figure 5). For each
//! transport, values of N buffers of S bytes (N x S from 64 B to 64 KiB) are served from the
//! store with Ferry zero-copy-only (threshold 0) and copy-only (threshold infinite), each
//! swept in offered load; the percent difference of the server's work per request (its loop's
//! busy time over the requests it served, at the highest load both sustained) and of the
//! highest achieved load, zero-copy against copy, is the heat map. The crossover field size of
//! a transport is the smallest S from which zero-copy costs the server no measurable extra work
//! per request (median over N, within 5 %) for every larger S; it is printed and written to the thresholds
//! file every `ferry-rpc` driver reads ([`ferry_rpc::Thresholds`]). Nothing is written unless
//! every buffer size was measured on every transport (the results file and the plot are
//! written either way).
//!
//! Veth pairs between network namespaces are not measured: the server runs as a thread of this
//! process, in this namespace. TCP loopback stands for TCP.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use ferry_rpc::{LoopConfig, Thresholds};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::workload::{self, Kind, WorkloadSpec};
use super::{Measured, Summary, Sweep, System, Transport};
use crate::BoxError;
use crate::harness::Named;
use crate::harness::cli::Common;
use crate::harness::lifecycle::{self, Benchmark};
use crate::harness::progress::Progress;
use crate::harness::table::Table;
use crate::harness::{self, report as results, round};
use crate::plot;

/// Options of `ferry calibrate`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Transports, comma-separated (default: tcp,shm).
    #[arg(long, value_delimiter = ',')]
    transport: Vec<Transport>,
    /// Fewer cells (S in 64, 256, 1024, 4096; N in 1, 4) and shorter points.
    #[arg(long)]
    quick: bool,
    /// Write the results here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Draw the heat maps (CPU per request and highest load, percent difference) as SVG.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Where to write the thresholds (default: `ferry_rpc::Thresholds::path()`, i.e.
    /// `$FERRY_THRESHOLDS` or `~/.config/ferry/thresholds`).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Measure nothing: derive the thresholds from an earlier results file (print them, draw
    /// the plot, and write them unless --dry-run).
    #[arg(long, value_name = "RESULTS_JSON")]
    from: Option<PathBuf>,
    /// Print the thresholds without writing them.
    #[arg(long)]
    dry_run: bool,
    /// Buffer sizes S to measure, comma-separated (default 64 B .. 8 KiB in powers of two;
    /// --quick: 64, 256, 1024, 4096).
    #[arg(long, value_delimiter = ',')]
    sizes: Vec<u32>,
    /// Buffer counts N to measure, comma-separated (default 1, 2, 4, 8; --quick: 1, 4).
    #[arg(long, value_delimiter = ',')]
    buffers: Vec<u32>,
    /// First offered load of each sweep's grid, requests/s (after a point at 1,000, the
    /// unloaded latency).
    #[arg(long, default_value_t = 20_000.0)]
    start_rate: f64,
    /// Keys of the store in every cell.
    #[arg(long, default_value_t = 4000)]
    keys: u32,
    /// CPU of the client thread.
    #[arg(long, default_value_t = 0)]
    client_cpu: usize,
    /// CPU of the server loop.
    #[arg(long, default_value_t = 1)]
    server_cpu: usize,
}

/// One cell of the heat map: a record of the results file.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Cell {
    transport: Transport,
    buffers: u32,
    size: u32,
    /// (zero-copy - copy) / copy, percent, of server work per request at equal load.
    #[serde(rename = "cpu_diff_percent")]
    cpu_diff: Option<f64>,
    /// (zero-copy - copy) / copy, percent, of the highest achieved load.
    #[serde(rename = "load_diff_percent")]
    load_diff: Option<f64>,
    /// Copy-only's server work per request, ns, and achieved load, at the highest load both
    /// sustained; then zero-copy-only's.
    copy_server_ns: Option<f64>,
    zc_server_ns: Option<f64>,
    copy_max_load: Option<f64>,
    zc_max_load: Option<f64>,
    /// Why a system sustained no load, if one did not: its last point's figures (printed, not
    /// stored).
    #[serde(skip)]
    why_not: Option<String>,
}

/// The results of `ferry calibrate`.
#[derive(Serialize, Deserialize)]
struct Calibration {
    records: Vec<Cell>,
}

/// `ferry calibrate`, as the lifecycle runs it.
struct Calibrate<'a>(&'a Args);

impl Calibrate<'_> {
    /// The buffer sizes (ascending: the crossover walks them from the largest down), the
    /// buffer counts and the transports to measure.
    fn grid(&self) -> (Vec<u32>, Vec<u32>, Vec<Transport>) {
        let args = self.0;
        let (sizes, counts): (&[u32], &[u32]) = if args.quick {
            (&[64, 256, 1024, 4096], &[1, 4])
        } else {
            (&[64, 128, 256, 512, 1024, 2048, 4096, 8192], &[1, 2, 4, 8])
        };
        let chosen = |given: &[u32], default: &[u32]| harness::sorted(harness::or_all(given, default));
        let transports = harness::or_all(&args.transport, &Transport::DEFAULT);
        (
            chosen(&args.sizes, sizes),
            chosen(&args.buffers, counts),
            transports,
        )
    }
}

impl Benchmark for Calibrate<'_> {
    const NAME: &'static str = "calibrate";
    type Records = Calibration;

    fn plan(&self) -> u64 {
        let (sizes, counts, transports) = self.grid();
        (sizes.len() * counts.len() * transports.len()) as u64
    }

    fn run(&self, progress: &Progress) -> Result<(Value, Calibration), BoxError> {
        let args = self.0;
        let (sizes, counts, transports) = self.grid();
        let sweep = Sweep {
            start_rate: args.start_rate,
            step: 1.5,
            max_points: if args.quick { 4 } else { 8 },
            refine: if args.quick { 1 } else { 2 },
            sessions: 8,
            warmup: Duration::from_millis(if args.quick { 50 } else { 100 }),
            window: Duration::from_millis(if args.quick { 150 } else { 400 }),
            // Busy-polls, then sleeps when idle (as the demo's, for the same reason: on a
            // machine doing other work a loop that never sleeps waits out other programs' time
            // slices). The work per request compared is the loop's busy time, not its CPU
            // time, either way.
            server_spin: LoopConfig::default().spin,
            client_cpu: args.client_cpu,
            server_cpu: args.server_cpu.min(harness::cpus().saturating_sub(1)),
            seed: 11,
        };
        let systems = [System::FerryCopy, System::FerryZc];
        let mut cells = Vec::new();
        for &n in &counts {
            for &s in &sizes {
                let spec = WorkloadSpec {
                    keys: Some(args.keys),
                    ycsb_buffers: n,
                    ycsb_size: s,
                    ..WorkloadSpec::new(Kind::Ycsb)
                };
                let make = move || workload::build(&spec, 11).map_err(BoxError::from);
                let first = make()?;
                let store = super::load_store(&first)?;
                for &t in &transports {
                    progress.start(format!("{} {n} x {s} B", t.name()));
                    let points = super::sweep(&store, &make, &systems, &[t], &sweep, |_| {})?;
                    cells.push(cell(t, n, s, points));
                    progress.done();
                }
                drop(Arc::try_unwrap(store).ok());
            }
        }
        let t = thresholds(&cells);
        let settings = json!({ "thresholds": { "tcp": t.tcp, "shm": t.shm }, "keys": args.keys });
        Ok((settings, Calibration { records: cells }))
    }

    fn table(c: &Calibration) {
        let cells = &c.records;
        let (sizes, counts, transports) = axes(cells);
        for &t in &transports {
            for (what, _, f) in DIFFS {
                println!(
                    "\n{}: {what}, zero-copy against copy (%; negative: zero-copy lower)",
                    t.name()
                );
                let header = sizes.iter().map(|&s| plot::bytes_label(f64::from(s)));
                let mut table = Table::new(std::iter::once("N \\ S".to_owned()).chain(header));
                for &n in &counts {
                    let value = |s: u32| {
                        find(cells, t, n, s)
                            .and_then(f)
                            .map_or("-".to_owned(), |v| format!("{v:+.1}"))
                    };
                    table.row(std::iter::once(n.to_string()).chain(sizes.iter().map(|&s| value(s))));
                }
                print!("{}", table.render().trim_end());
                println!();
            }
        }
        for &t in &transports {
            match crossover(cells, t, &sizes) {
                Some(s) => println!(
                    "{}: zero-copy costs no measurable extra work from fields of {s} B: threshold {s}",
                    t.name()
                ),
                None => println!(
                    "{}: zero-copy costs measurable extra work at every size: threshold infinite",
                    t.name()
                ),
            }
        }
        for c in cells.iter().filter(|c| c.cpu_diff.is_none()) {
            println!(
                "not measured: {} {} x {} B, no load both systems sustained{}",
                c.transport.name(),
                c.buffers,
                c.size,
                c.why_not.as_ref().map_or(String::new(), |w| format!(" ({w})"))
            );
        }
    }

    fn plot(c: &Calibration, path: &Path) -> Result<(), BoxError> {
        let cells = &c.records;
        let (sizes, counts, transports) = axes(cells);
        let mut maps = Vec::new();
        for &t in &transports {
            for (_, what, f) in DIFFS {
                let values = counts
                    .iter()
                    .map(|&n| {
                        sizes
                            .iter()
                            .map(|&s| find(cells, t, n, s).and_then(f).unwrap_or(f64::NAN))
                            .collect()
                    })
                    .collect();
                maps.push(plot::HeatMap {
                    title: format!("{}: {what}, zero-copy vs copy (%)", t.name()),
                    columns: sizes.iter().map(|&s| plot::bytes_label(f64::from(s))).collect(),
                    rows: counts.iter().map(|n| format!("{n} buf")).collect(),
                    x_label: "buffer size S".to_owned(),
                    y_label: "buffers N".to_owned(),
                    values,
                });
            }
        }
        plot::heat_map_svg(
            path,
            "ferry calibrate: zero-copy against copy (negative: zero-copy better for CPU)",
            &maps,
        )
    }
}

/// A cell's figure in one heat map.
type Figure = fn(&Cell) -> Option<f64>;

/// The two heat maps of a transport: what they compare (in the table, in the plot), and the
/// figure of a cell.
const DIFFS: [(&str, &str, Figure); 2] = [
    ("server work per request", "server work per request", |c| {
        c.cpu_diff
    }),
    ("highest achieved load", "highest load", |c| c.load_diff),
];

fn find(cells: &[Cell], t: Transport, n: u32, s: u32) -> Option<&Cell> {
    cells
        .iter()
        .find(|c| c.transport == t && c.buffers == n && c.size == s)
}

/// The sizes (ascending), counts (ascending) and transports (in measured order) of `cells`.
fn axes(cells: &[Cell]) -> (Vec<u32>, Vec<u32>, Vec<Transport>) {
    (
        harness::sorted(cells.iter().map(|c| c.size)),
        harness::sorted(cells.iter().map(|c| c.buffers)),
        harness::unique(cells.iter().map(|c| c.transport)),
    )
}

/// The thresholds the servers read, with each transport of `cells` at its crossover.
fn thresholds(cells: &[Cell]) -> Thresholds {
    let (sizes, _, transports) = axes(cells);
    let mut thresholds = Thresholds::load();
    for t in transports {
        let value = crossover(cells, t, &sizes).map_or(usize::MAX, |s| s as usize);
        match t {
            Transport::Tcp => thresholds.tcp = value,
            Transport::Shm => thresholds.shm = value,
            // Refused by `tcp_or_shm`: no cell is ever measured over UDP.
            Transport::Udp | Transport::Xdp => {}
        }
    }
    thresholds
}

/// `ferry calibrate`: measures (or reads `--from`), prints, draws, then writes the thresholds.
pub fn run(args: &Args) -> Result<(), BoxError> {
    Transport::tcp_or_shm(&args.transport, "calibrate")?;
    let common = Common {
        quick: args.quick,
        json: args.json.clone(),
        from: args.from.clone(),
        plot: args.plot.clone(),
        duration_ms: None,
        count: None,
    };
    let Calibration { records: cells } = lifecycle::main(&Calibrate(args), &common)?;
    // A size with no measured cell at all leaves its transport's crossover unknown.
    let (sizes, _, transports) = axes(&cells);
    let blind = transports.iter().any(|&t| {
        sizes.iter().any(|&s| {
            !cells
                .iter()
                .any(|c| c.transport == t && c.size == s && c.cpu_diff.is_some())
        })
    });
    if blind {
        return Err("a buffer size has no measured cell on some transport; nothing written (run again, or with a lower --start-rate)".into());
    }
    if args.dry_run {
        println!("(--dry-run: not written)");
        return Ok(());
    }
    let path = args
        .config
        .clone()
        .or_else(Thresholds::path)
        .ok_or("no place for the thresholds file: set FERRY_THRESHOLDS or HOME")?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let comment = format!(
        "written by `ferry calibrate` on {} ({})",
        results::now_utc(),
        results::machine()["cpu_model"].as_str().unwrap_or("unknown CPU")
    );
    std::fs::write(&path, thresholds(&cells).to_file(&comment))?;
    println!("thresholds written to {}", path.display());
    Ok(())
}

/// A cell from the two sweeps of one (transport, N, S).
fn cell(transport: Transport, buffers: u32, size: u32, points: Vec<Measured>) -> Cell {
    let summary = Summary {
        workload: String::new(),
        points,
        copies: Vec::new(),
    };
    let pair = [System::FerryCopy, System::FerryZc];
    let copy = summary.at_common_load(System::FerryCopy, transport, &pair);
    let zc = summary.at_common_load(System::FerryZc, transport, &pair);
    let pct = |a: f64, b: f64| (b > 0.0).then(|| round((a - b) / b * 100.0, 1));
    let load_diff = match (
        summary.best(System::FerryZc, transport),
        summary.best(System::FerryCopy, transport),
    ) {
        (Some(z), Some(c)) => pct(z.achieved, c.achieved),
        _ => None,
    };
    let why_not = pair.iter().find_map(|&s| {
        summary
            .why_empty(s, transport)
            .map(|w| format!("{}, the last point: {w}", s.name()))
    });
    Cell {
        transport,
        buffers,
        size,
        cpu_diff: zc.zip(copy).and_then(|(z, c)| pct(z.server_ns, c.server_ns)),
        load_diff,
        copy_server_ns: copy.map(|m| m.server_ns),
        zc_server_ns: zc.map(|m| m.server_ns),
        copy_max_load: copy.map(|m| m.achieved),
        zc_max_load: zc.map(|m| m.achieved),
        why_not,
    }
}

/// Differences of work per request within this many percent are noise on these machines
/// (`../shared/platform.md`: "treat differences under about 15 % as noise"; a median over N
/// narrows it).
const NOISE_PERCENT: f64 = 5.0;

/// The smallest S from which zero-copy costs the server no measurable extra work per request
/// (the median over N, which one noisy cell cannot move, at most [`NOISE_PERCENT`] above
/// copying) for every larger S.
fn crossover(cells: &[Cell], transport: Transport, sizes: &[u32]) -> Option<u32> {
    let median_at = |s: u32| {
        let v: Vec<f64> = cells
            .iter()
            .filter(|c| c.transport == transport && c.size == s)
            .filter_map(|c| c.cpu_diff)
            .collect();
        harness::median(&v)
    };
    let mut best = None;
    for &s in sizes.iter().rev() {
        match median_at(s) {
            Some(d) if d <= NOISE_PERCENT => best = Some(s),
            _ => break,
        }
    }
    best
}
