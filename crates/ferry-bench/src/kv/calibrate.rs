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

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferry_rpc::LoopConfig;
use serde_json::json;

use super::workload::{self, Kind, WorkloadSpec};
use super::{Measured, Summary, Sweep, System, Transport};
use crate::BoxError;
use crate::harness::progress::Progress;
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

/// One cell of the heat map.
#[derive(Debug, Clone)]
struct Cell {
    transport: Transport,
    buffers: u32,
    size: u32,
    /// (zero-copy - copy) / copy, percent, of server work per request at equal load.
    cpu_diff: f64,
    /// (zero-copy - copy) / copy, percent, of the highest achieved load.
    load_diff: f64,
    copy: Option<Measured>,
    zc: Option<Measured>,
    /// Why a system sustained no load, if one did not: its last point's figures.
    why_not: Option<String>,
}

/// The cells, sizes, counts and transports of a measured run.
type Study = (Vec<Cell>, Vec<u32>, Vec<u32>, Vec<Transport>);

/// Measures every cell.
fn measure(args: &Args) -> Result<Study, BoxError> {
    let transports = if args.transport.is_empty() {
        vec![Transport::Tcp, Transport::Shm]
    } else {
        args.transport.clone()
    };
    let (sizes, counts): (&[u32], &[u32]) = if args.quick {
        (&[64, 256, 1024, 4096], &[1, 4])
    } else {
        (&[64, 128, 256, 512, 1024, 2048, 4096, 8192], &[1, 2, 4, 8])
    };
    let mut sizes = if args.sizes.is_empty() {
        sizes.to_vec()
    } else {
        args.sizes.clone()
    };
    let mut counts = if args.buffers.is_empty() {
        counts.to_vec()
    } else {
        args.buffers.clone()
    };
    // The crossover walks the sizes from the largest down.
    sizes.sort_unstable();
    sizes.dedup();
    counts.sort_unstable();
    counts.dedup();
    let sweep = Sweep {
        start_rate: args.start_rate,
        step: 1.5,
        max_points: if args.quick { 4 } else { 8 },
        refine: if args.quick { 1 } else { 2 },
        sessions: 8,
        warmup: Duration::from_millis(if args.quick { 50 } else { 100 }),
        window: Duration::from_millis(if args.quick { 150 } else { 400 }),
        // Busy-polls, then sleeps when idle (as the demo's, for the same reason: on a machine
        // doing other work a loop that never sleeps waits out other programs' time slices).
        // The work per request compared is the loop's busy time, not its CPU time, either way.
        server_spin: LoopConfig::default().spin,
        client_cpu: args.client_cpu,
        server_cpu: args.server_cpu.min(harness::cpus().saturating_sub(1)),
        seed: 11,
    };
    let systems = [System::FerryCopy, System::FerryZc];
    let cells_total = sizes.len() * counts.len() * transports.len();
    let progress = Progress::new(cells_total as u64, "calibrate");
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
            let store = super::load_store(first.as_ref())?;
            for &t in &transports {
                progress.start(format!("{} {n} x {s} B", t.name()));
                let points = super::sweep(&store, &make, &systems, &[t], &sweep, |_| {})?;
                cells.push(cell(t, n, s, points));
                progress.done();
            }
            drop(Arc::try_unwrap(store).ok());
        }
    }
    progress.finish();
    Ok((cells, sizes, counts, transports))
}

/// An earlier run's cells, from its results file.
fn from_file(path: &std::path::Path) -> Result<Study, BoxError> {
    let cells: Vec<Cell> = results::load(path, |r| {
        let name = r["transport"].as_str()?;
        Some(Cell {
            transport: [Transport::Tcp, Transport::Shm]
                .into_iter()
                .find(|t| t.name() == name)?,
            buffers: u32::try_from(r["buffers"].as_u64()?).ok()?,
            size: u32::try_from(r["size"].as_u64()?).ok()?,
            cpu_diff: r["cpu_diff_percent"].as_f64().unwrap_or(f64::NAN),
            load_diff: r["load_diff_percent"].as_f64().unwrap_or(f64::NAN),
            copy: None,
            zc: None,
            why_not: None,
        })
    })?;
    let mut sizes: Vec<u32> = cells.iter().map(|c| c.size).collect();
    let mut counts: Vec<u32> = cells.iter().map(|c| c.buffers).collect();
    let mut transports: Vec<Transport> = Vec::new();
    for c in &cells {
        if !transports.contains(&c.transport) {
            transports.push(c.transport);
        }
    }
    sizes.sort_unstable();
    sizes.dedup();
    counts.sort_unstable();
    counts.dedup();
    Ok((cells, sizes, counts, transports))
}

/// `ferry calibrate`.
pub fn run(args: &Args) -> Result<(), BoxError> {
    let started = Instant::now();
    let (cells, sizes, counts, transports) = match &args.from {
        Some(from) => from_file(from)?,
        None => measure(args)?,
    };
    let (sizes, counts) = (&sizes[..], &counts[..]);
    print(&cells, sizes, counts, &transports);
    let mut thresholds = ferry_rpc::Thresholds::load();
    for &t in &transports {
        let crossover = crossover(&cells, t, sizes);
        let value = crossover.map_or(usize::MAX, |s| s as usize);
        match t {
            Transport::Tcp => thresholds.tcp = value,
            Transport::Shm => thresholds.shm = value,
        }
        match crossover {
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
    if let (Some(json), None) = (&args.json, &args.from) {
        let records: Vec<_> = cells
            .iter()
            .map(|c| {
                json!({
                    "transport": c.transport.name(),
                    "buffers": c.buffers,
                    "size": c.size,
                    "cpu_diff_percent": round(c.cpu_diff, 1),
                    "load_diff_percent": round(c.load_diff, 1),
                    "copy_server_ns": c.copy.as_ref().map(|m| round(m.server_ns, 1)),
                    "zc_server_ns": c.zc.as_ref().map(|m| round(m.server_ns, 1)),
                    "copy_max_load": c.copy.as_ref().map(|m| round(m.achieved, 0)),
                    "zc_max_load": c.zc.as_ref().map(|m| round(m.achieved, 0)),
                })
            })
            .collect();
        results::save(
            json,
            "calibrate",
            json!({ "thresholds": { "tcp": thresholds.tcp, "shm": thresholds.shm }, "keys": args.keys }),
            &records,
            serde_json::Value::Null,
            started.elapsed(),
        )?;
    }
    if let Some(path) = &args.plot {
        let mut maps = Vec::new();
        for &t in &transports {
            for (what, f) in [
                (
                    "server work per request",
                    (|c: &Cell| c.cpu_diff) as fn(&Cell) -> f64,
                ),
                ("highest load", |c: &Cell| c.load_diff),
            ] {
                let values = counts
                    .iter()
                    .map(|&n| {
                        sizes
                            .iter()
                            .map(|&s| {
                                cells
                                    .iter()
                                    .find(|c| c.transport == t && c.buffers == n && c.size == s)
                                    .map_or(f64::NAN, f)
                            })
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
        )?;
        println!("plot in {}", path.display());
    }
    for c in cells.iter().filter(|c| !c.cpu_diff.is_finite()) {
        println!(
            "not measured: {} {} x {} B, no load both systems sustained{}",
            c.transport.name(),
            c.buffers,
            c.size,
            c.why_not.as_ref().map_or(String::new(), |w| format!(" ({w})"))
        );
    }
    // A size with no measured cell at all leaves its transport's crossover unknown.
    let blind = transports.iter().any(|&t| {
        sizes.iter().any(|&s| {
            !cells
                .iter()
                .any(|c| c.transport == t && c.size == s && c.cpu_diff.is_finite())
        })
    });
    if blind {
        return Err("a buffer size has no measured cell on some transport; nothing written (run again, or with a lower --start-rate)".into());
    }
    if args.dry_run {
        println!("(--dry-run: not written)");
    } else {
        let path = args
            .config
            .clone()
            .or_else(ferry_rpc::Thresholds::path)
            .ok_or("no place for the thresholds file: set FERRY_THRESHOLDS or HOME")?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let comment = format!(
            "written by `ferry calibrate` on {} ({})",
            results::now_utc(),
            results::machine()["cpu_model"].as_str().unwrap_or("unknown CPU")
        );
        std::fs::write(&path, thresholds.to_file(&comment))?;
        println!("thresholds written to {}", path.display());
    }
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
    let copy = summary
        .at_common_load(System::FerryCopy, transport, &pair)
        .cloned();
    let zc = summary.at_common_load(System::FerryZc, transport, &pair).cloned();
    let pct = |a: f64, b: f64| if b > 0.0 { (a - b) / b * 100.0 } else { f64::NAN };
    let cpu_diff = match (&zc, &copy) {
        (Some(z), Some(c)) => pct(z.server_ns, c.server_ns),
        _ => f64::NAN,
    };
    let load_diff = match (
        summary.best(System::FerryZc, transport),
        summary.best(System::FerryCopy, transport),
    ) {
        (Some(z), Some(c)) => pct(z.achieved, c.achieved),
        _ => f64::NAN,
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
        cpu_diff,
        load_diff,
        copy,
        zc,
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
            .filter(|c| c.transport == transport && c.size == s && c.cpu_diff.is_finite())
            .map(|c| c.cpu_diff)
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

fn print(cells: &[Cell], sizes: &[u32], counts: &[u32], transports: &[Transport]) {
    for &t in transports {
        for (what, f) in [
            (
                "server work per request",
                (|c: &Cell| c.cpu_diff) as fn(&Cell) -> f64,
            ),
            ("highest achieved load", |c: &Cell| c.load_diff),
        ] {
            println!(
                "\n{}: {what}, zero-copy against copy (%; negative: zero-copy lower)",
                t.name()
            );
            print!("{:>8}", "N \\ S");
            for s in sizes {
                print!("{:>9}", plot::bytes_label(f64::from(*s)));
            }
            println!();
            for &n in counts {
                print!("{n:>8}");
                for &s in sizes {
                    let v = cells
                        .iter()
                        .find(|c| c.transport == t && c.buffers == n && c.size == s)
                        .map_or(f64::NAN, f);
                    print!(
                        "{:>9}",
                        if v.is_finite() {
                            format!("{v:+.1}")
                        } else {
                            "-".to_owned()
                        }
                    );
                }
                println!();
            }
        }
    }
}
