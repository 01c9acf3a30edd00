//! The DPU offload paper's benchmarks (`ferry bench offload`): what an offload engine that
//! turns gRPC clients' protobuf into Ferry messages in shared memory saves the host, measured
//! against a tonic host that decodes the protobuf itself.
//!
//! - [`decode`]: Figure 7, the time to deserialize one message (an int array, a char array)
//!   against its element count, on one pinned core, with no datapath: the tonic host's prost
//!   decode, the engine's decoder (protobuf to a `DynamicMessage`, then the Ferry image written
//!   into a pool buffer), and the host's side with offload (validate the image in place, read
//!   every element).
//!
//! - [`serve`]: Figure 8, the paper's three messages served at one offered rate by a tonic host
//!   (prost on the host), by the offload engine in front of a Ferry host, and by Zerializer's
//!   null serializer (no decoding anywhere): requests per second, host CPU per request, the
//!   engine's CPU apart, latency.
//!
//! The messages are the demo schema's (`crates/ferry-offload/proto/ferry/offload/demo.proto`):
//! the Ferry side builds its schema from the descriptors a host sends the engine
//! (`ferry_offload::DEMO_DESCRIPTORS`), as the engine does; the prost side is generated at
//! build time ([`crate::generated::demo_prost`], with the tonic `Demo` client and server).
//!
//! What it is NOT: the offload engine (that is `ferry-offload`; the benchmark calls the same
//! `ferry-reflect` and `ferry-wire` functions the engine's decoder is made of), or a test of it
//! (the benchmark checks that every system reads the same values before timing it, and asserts
//! nothing about speed).

pub mod decode;
pub mod serve;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::BoxError;
use crate::harness::cli::Common;
use crate::harness::progress::Progress;

/// Which of the paper's figures to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Figure {
    /// Figure 7: decoding one message against its element count.
    #[value(name = "7")]
    Decode,
    /// Figure 8: the three messages served by tonic, by the engine, and by the null serializer.
    #[value(name = "8")]
    Serve,
}

/// Options of `ferry bench offload`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    /// Figures to run, comma-separated (default: 7,8). Each writes its own results and plot:
    /// `--json out.json` gives `out-figure7.json` and `out-figure8.json` (and so for `--plot`).
    #[arg(long, value_delimiter = ',')]
    figures: Vec<Figure>,
    /// Figure 7: element counts, comma-separated (default 1, 2, 4, ..., 8192).
    #[arg(long, value_delimiter = ',')]
    counts: Vec<usize>,
    /// Figure 7: repetitions per point (default 51, 11 with --quick); Figure 8: repetitions of
    /// every run (default 3, 1 with --quick). Every figure is the median over them.
    #[arg(long)]
    reps: Option<usize>,
    /// Figure 8: the messages, comma-separated (default: small,x512-ints,x8000-chars).
    #[arg(long, value_delimiter = ',')]
    messages: Vec<serve::PaperMessage>,
    /// Figure 8: offered rates in requests per second, comma-separated (default 10000,40000;
    /// the highest shows where each setup saturates).
    #[arg(long, value_delimiter = ',')]
    rates: Vec<u64>,
    /// Figure 8: the offered rate host CPU per request is compared at (default: the lowest of
    /// --rates).
    #[arg(long)]
    cpu_rate: Option<u64>,
    /// Figure 8: gRPC connections of the load generator.
    #[arg(long, default_value_t = 4)]
    connections: usize,
    /// Figure 8: how long the Ferry host's loop busy-polls before sleeping, in µs (default 0:
    /// it sleeps at once, as the tonic host does).
    #[arg(long, default_value_t = 0)]
    host_spin_us: u64,
    /// CPU of the host (the tonic server, or the Ferry host's loop).
    #[arg(long, default_value_t = 1)]
    host_cpu: usize,
    /// CPU of the engine, the load generator, and Figure 7's measuring thread.
    #[arg(long, default_value_t = 0)]
    client_cpu: usize,
}

/// `out.json` → `out-figure7.json`.
fn per_figure(path: &Path, figure: u8) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let ext = path
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    path.with_file_name(format!("{stem}-figure{figure}{ext}"))
}

/// Runs `ferry bench offload`.
pub fn run(args: &Args) -> Result<(), BoxError> {
    if args.common.from.is_some() {
        return Err("ferry bench offload does not redraw from --from; run it again".into());
    }
    let json = args.common.json_path()?;
    let quick = args.common.quick;
    let figures = if args.figures.is_empty() {
        vec![Figure::Decode, Figure::Serve]
    } else {
        args.figures.clone()
    };
    if figures.contains(&Figure::Decode) {
        let mut opts = if quick {
            decode::Figure7Options::quick()
        } else {
            decode::Figure7Options::default()
        };
        if !args.counts.is_empty() {
            opts.counts = args.counts.clone();
        }
        if let Some(r) = args.reps {
            opts.reps = r.max(1);
        }
        opts.cpu = Some(args.client_cpu);
        println!(
            "ferry bench offload, Figure 7: ns to decode one message against its element count, on CPU {} ({} repetitions per point, medians)\n",
            args.client_cpu, opts.reps
        );
        let progress = Progress::new(opts.runs(), "figure 7");
        let report = decode::figure7(&opts, Some(&progress))?;
        progress.finish();
        print!("{}", report.table());
        let plot = args.common.plot.as_deref().map(|p| per_figure(p, 7));
        decode::write_figure7(&report, Some(&per_figure(json, 7)), plot.as_deref())?;
    }
    if figures.contains(&Figure::Serve) {
        let mut opts = serve::Figure8Options::default();
        if quick {
            opts.reps = 1;
            opts.duration = Duration::from_millis(800);
            opts.unary_calls = 1000;
        }
        if let Some(ms) = args.common.duration_ms {
            opts.duration = Duration::from_millis(ms.max(100));
        }
        if let Some(r) = args.reps {
            opts.reps = r.max(1);
        }
        if !args.messages.is_empty() {
            opts.messages = args.messages.clone();
        }
        if !args.rates.is_empty() {
            opts.rates = args.rates.clone();
        }
        opts.cpu_rate = args
            .cpu_rate
            .or_else(|| opts.rates.iter().copied().min())
            .unwrap_or(opts.cpu_rate);
        if !opts.rates.contains(&opts.cpu_rate) {
            opts.rates.push(opts.cpu_rate);
        }
        opts.connections = args.connections.max(1);
        opts.host_spin = Duration::from_micros(args.host_spin_us);
        opts.host_cpu = args.host_cpu;
        opts.client_cpu = args.client_cpu;
        println!(
            "\nferry bench offload, Figure 8: tonic host against the offload engine and a Ferry host, and the null serializer; host on CPU {}, engine and load generator on CPU {}; {} ms per run, {} repetition(s) (medians)\n",
            opts.host_cpu,
            opts.client_cpu,
            opts.duration.as_millis(),
            opts.reps
        );
        let started = Instant::now();
        let progress = Progress::new(serve::figure8_runs(&opts), "figure 8");
        let report = serve::figure8(&opts, Some(&progress))?;
        progress.finish();
        print!("{}", report.table());
        let plot = args.common.plot.as_deref().map(|p| per_figure(p, 8));
        serve::write_figure8(
            &report,
            Some(&per_figure(json, 8)),
            plot.as_deref(),
            started.elapsed(),
        )?;
    }
    Ok(())
}
