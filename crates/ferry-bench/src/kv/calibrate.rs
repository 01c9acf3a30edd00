//! `ferry calibrate`: the threshold study of Cornflakes section 5 (Figure 5). For each
//! transport, values of N buffers of S bytes (N x S from 64 B to 64 KiB) are served from the
//! store with Ferry zero-copy-only (threshold 0) and copy-only (threshold infinite), each
//! swept in offered load; the percent difference of the server's CPU per request (at the
//! highest load both sustained) and of the highest achieved load, zero-copy against copy, is
//! the heat map. The crossover field size of a transport is the smallest S from which
//! zero-copy costs the server no more CPU per request than copying, for every larger S (mean
//! over N); it is printed and written to the thresholds file every `ferry-rpc` driver reads
//! ([`ferry_rpc::Thresholds`]).
//!
//! Veth pairs between network namespaces are not measured: the server runs as a thread of this
//! process, in this namespace. TCP loopback stands for TCP.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    /// (zero-copy - copy) / copy, percent, of server CPU per request at equal load.
    cpu_diff: f64,
    /// (zero-copy - copy) / copy, percent, of the highest achieved load.
    load_diff: f64,
    copy: Option<Measured>,
    zc: Option<Measured>,
}

/// `ferry calibrate`.
pub fn run(args: &Args) -> Result<(), BoxError> {
    let started = Instant::now();
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
    let sizes = if args.sizes.is_empty() {
        sizes
    } else {
        &args.sizes[..]
    };
    let counts = if args.buffers.is_empty() {
        counts
    } else {
        &args.buffers[..]
    };
    let sweep = Sweep {
        start_rate: 20_000.0,
        step: 1.5,
        max_points: if args.quick { 4 } else { 8 },
        sessions: 8,
        warmup: Duration::from_millis(if args.quick { 50 } else { 100 }),
        window: Duration::from_millis(if args.quick { 150 } else { 400 }),
        server_spin: Duration::MAX,
        client_cpu: args.client_cpu,
        server_cpu: args.server_cpu.min(harness::cpus().saturating_sub(1)),
        seed: 11,
    };
    let systems = [System::FerryCopy, System::FerryZc];
    let cells_total = sizes.len() * counts.len() * transports.len();
    let progress = Progress::new(cells_total as u64, "calibrate");
    let mut cells = Vec::new();
    for &n in counts {
        for &s in sizes {
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
            Some(s) => println!("{}: zero-copy pays from fields of {s} B: threshold {s}", t.name()),
            None => println!(
                "{}: zero-copy never cost less CPU than copying: threshold infinite",
                t.name()
            ),
        }
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
    if let Some(json) = &args.json {
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
                    "server CPU per request",
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
    Cell {
        transport,
        buffers,
        size,
        cpu_diff,
        load_diff,
        copy,
        zc,
    }
}

/// The smallest S from which zero-copy's CPU per request (mean over N) is no worse than
/// copying's for every larger S.
fn crossover(cells: &[Cell], transport: Transport, sizes: &[u32]) -> Option<u32> {
    let mean_at = |s: u32| {
        let v: Vec<f64> = cells
            .iter()
            .filter(|c| c.transport == transport && c.size == s && c.cpu_diff.is_finite())
            .map(|c| c.cpu_diff)
            .collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    let mut best = None;
    for &s in sizes.iter().rev() {
        match mean_at(s) {
            Some(d) if d <= 0.0 => best = Some(s),
            _ => break,
        }
    }
    best
}

fn print(cells: &[Cell], sizes: &[u32], counts: &[u32], transports: &[Transport]) {
    for &t in transports {
        for (what, f) in [
            (
                "server CPU per request",
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
