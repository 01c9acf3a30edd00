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
//!   engine's CPU apart, latency. Its servers are in `hosts`, its gRPC client in `client`,
//!   its open-loop load generator in [`load`].
//!
//! - [`streams`]: gRPC streams (server-streaming and bidirectional) under ghz's load, through
//!   the engine to a Ferry host and straight to a tonic host: messages per second, host CPU per
//!   streamed message, the engine's apart (issue 26).
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

mod client;
pub mod decode;
mod hosts;
pub mod load;
pub mod serve;
pub mod streams;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::BoxError;
use crate::harness::cli::Common;
use crate::harness::lifecycle::{self, Benchmark, Target};
use crate::harness::or_all;
use crate::harness::progress::Progress;
use decode::{Figure7, Figure7Options};
use serve::{Figure8, Figure8Options, PaperMessage};
use streams::{Streams, StreamsOptions};

/// Which of the paper's figures to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Figure {
    /// Figure 7: decoding one message against its element count.
    #[value(name = "7")]
    Decode,
    /// Figure 8: the three messages served by tonic, by the engine, and by the null serializer.
    #[value(name = "8")]
    Serve,
    /// Streams under ghz: the engine and a Ferry host against a tonic host (not run by default:
    /// it needs ghz).
    #[value(name = "streams")]
    Streams,
}

/// Options of `ferry bench offload`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    /// Figures to run, comma-separated (default: 7,8; `streams` too needs ghz). Their records
    /// share the results file; each draws its own plot: `--plot out.svg` gives
    /// `out-figure7.svg`, `out-figure8.svg` and `out-streams.svg`.
    #[arg(long, value_delimiter = ',')]
    figures: Vec<Figure>,
    /// Figure 7: element counts, comma-separated (default 1, 2, 4, ..., 8192).
    #[arg(long, value_delimiter = ',')]
    counts: Vec<usize>,
    /// Figure 7: repetitions per point (default 51, 11 with --quick); Figure 8: repetitions of
    /// every run (default 3, 1 with --quick); streams: of every ghz run (the same). Every figure
    /// is the median over them.
    #[arg(long)]
    reps: Option<usize>,
    /// Figure 8: the messages, comma-separated (default: small,x512-ints,x8000-chars).
    #[arg(long, value_delimiter = ',')]
    messages: Vec<PaperMessage>,
    /// Figure 8: offered rates in requests per second, comma-separated (default 10000,40000;
    /// the highest shows where each setup saturates).
    #[arg(long, value_delimiter = ',')]
    rates: Vec<u64>,
    /// Figure 8: the offered rate host CPU per request is compared at (default: the lowest of
    /// --rates).
    #[arg(long)]
    cpu_rate: Option<u64>,
    /// Figure 8 and streams: gRPC connections of the load generator (and of ghz).
    #[arg(long, default_value_t = 4)]
    connections: usize,
    /// Figure 8: how long the Ferry host's loop busy-polls before sleeping, in µs (default 0:
    /// it sleeps at once, as the tonic host does).
    #[arg(long, default_value_t = 0)]
    host_spin_us: u64,
    /// Streams: message sizes in bytes, comma-separated (default 64,4096).
    #[arg(long, value_delimiter = ',')]
    stream_sizes: Vec<u32>,
    /// Streams: messages per call (each way for bidi: ghz's --stream-call-count).
    #[arg(long, default_value_t = 100)]
    stream_messages: u32,
    /// Streams: calls per ghz run (default 1000, 40 with --quick), 8 in flight.
    #[arg(long)]
    stream_calls: Option<u32>,
    /// Streams: the ghz executable (0.120.0).
    #[arg(long, default_value = "ghz")]
    ghz: PathBuf,
    /// CPU of the host (the tonic server, or the Ferry host's loop).
    #[arg(long, default_value_t = 1)]
    host_cpu: usize,
    /// CPU of the engine, the load generator (ghz), and Figure 7's measuring thread.
    #[arg(long, default_value_t = 0)]
    client_cpu: usize,
}

/// Everything a run measured: a field per figure it ran.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Records {
    /// Figure 7: decoding one message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub figure7: Option<Figure7>,
    /// Figure 8: the three messages served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub figure8: Option<Figure8>,
    /// Streams under ghz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streams: Option<Streams>,
}

/// `ferry bench offload`: the figures asked for, with their options.
struct Offload {
    figure7: Option<Figure7Options>,
    figure8: Option<Figure8Options>,
    streams: Option<StreamsOptions>,
}

impl Offload {
    fn new(args: &Args) -> Offload {
        let (quick, wants) = (args.common.quick, |f| {
            (args.figures.is_empty() && f != Figure::Streams) || args.figures.contains(&f)
        });
        let figure7 = wants(Figure::Decode).then(|| Figure7Options {
            counts: or_all(&args.counts, &(0..=13).map(|i| 1 << i).collect::<Vec<_>>()),
            reps: args.reps.unwrap_or(if quick { 11 } else { 51 }).max(1),
            batch: Duration::from_micros(if quick { 50 } else { 100 }),
            cpu: Some(args.client_cpu),
            seed: 5489,
        });
        let figure8 = wants(Figure::Serve).then(|| {
            let mut rates = or_all(&args.rates, &[10_000, 40_000]);
            let cpu_rate = args.cpu_rate.or(rates.iter().copied().min()).unwrap_or(10_000);
            if !rates.contains(&cpu_rate) {
                rates.push(cpu_rate);
            }
            let default_ms = if quick { 800 } else { 4000 };
            Figure8Options {
                messages: or_all(&args.messages, &PaperMessage::ALL),
                rates,
                cpu_rate,
                duration: Duration::from_millis(args.common.duration_ms.unwrap_or(default_ms).max(100)),
                connections: args.connections.max(1),
                max_in_flight: 4096,
                reps: args.reps.unwrap_or(if quick { 1 } else { 3 }).max(1),
                host_cpu: args.host_cpu,
                client_cpu: args.client_cpu,
                seed: 8,
                unary_calls: if quick { 1000 } else { 5000 },
                host_spin: Duration::from_micros(args.host_spin_us),
            }
        });
        let streams = wants(Figure::Streams).then(|| StreamsOptions {
            sizes: or_all(&args.stream_sizes, &[64, 4096]),
            messages: args.stream_messages.max(1),
            calls: args.stream_calls.unwrap_or(if quick { 40 } else { 1000 }).max(1),
            in_flight: 8,
            connections: args.connections.max(1),
            reps: args.reps.unwrap_or(if quick { 1 } else { 3 }).max(1),
            host_cpu: args.host_cpu,
            client_cpu: args.client_cpu,
            ghz: args.ghz.clone(),
        });
        Offload {
            figure7,
            figure8,
            streams,
        }
    }
}

/// `out.svg` → `out-figure7.svg` (`figure` "figure7").
fn per_figure(path: &Path, figure: &str) -> PathBuf {
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    let ext = path
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    path.with_file_name(format!("{stem}-{figure}{ext}"))
}

impl Benchmark for Offload {
    const NAME: &'static str = "offload";
    type Records = Records;

    fn plan(&self) -> u64 {
        self.figure7.as_ref().map_or(0, Figure7Options::runs)
            + self.figure8.as_ref().map_or(0, Figure8Options::runs)
            + self.streams.as_ref().map_or(0, StreamsOptions::runs)
    }

    fn run(&self, progress: &Progress) -> Result<(Value, Records), BoxError> {
        let mut settings = Map::new();
        let mut records = Records::default();
        if let Some(o) = &self.figure7 {
            settings.insert("figure7".into(), o.settings());
            records.figure7 = Some(decode::figure7(o, progress)?);
        }
        if let Some(o) = &self.figure8 {
            settings.insert("figure8".into(), o.settings());
            records.figure8 = Some(serve::figure8(o, progress)?);
        }
        if let Some(o) = &self.streams {
            settings.insert("streams".into(), serde_json::to_value(o)?);
            records.streams = Some(streams::streams(o, progress)?);
        }
        Ok((Value::Object(settings), records))
    }

    fn table(records: &Records) {
        if let Some(f) = &records.figure7 {
            f.table();
        }
        if let Some(f) = &records.figure8 {
            f.table();
        }
        if let Some(s) = &records.streams {
            s.table();
        }
    }

    fn targets(records: &Records) -> Vec<Target> {
        let mut targets = records.figure8.as_ref().map_or_else(Vec::new, Figure8::targets);
        targets.extend(records.streams.iter().flat_map(Streams::targets));
        targets
    }

    /// A plot per figure, beside `path` (`out-figure7.svg`, `out-figure8.svg`,
    /// `out-streams.svg`).
    fn plot(records: &Records, path: &Path) -> Result<(), BoxError> {
        let draw = |name: &str, plot: &dyn Fn(&Path) -> Result<(), BoxError>| -> Result<(), BoxError> {
            let at = per_figure(path, name);
            plot(&at)?;
            println!("{name}'s plot in {}", at.display());
            Ok(())
        };
        if let Some(f) = &records.figure7 {
            draw("figure7", &|p| f.plot(p))?;
        }
        if let Some(f) = &records.figure8 {
            draw("figure8", &|p| f.plot(p))?;
        }
        if let Some(s) = &records.streams {
            draw("streams", &|p| s.plot(p))?;
        }
        Ok(())
    }
}

/// Runs `ferry bench offload`.
pub fn run(args: &Args) -> Result<(), BoxError> {
    lifecycle::main(&Offload::new(args), &args.common)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed results (`docs/benchmarks/offload.json`) read back: `--from` works on them.
    #[test]
    fn the_committed_results_read_back() {
        let (_, records): (serde_json::Value, Records) = lifecycle::committed("offload.json");
        let (f7, f8) = (records.figure7.unwrap(), records.figure8.unwrap());
        assert_eq!(f7.points.len(), 2 * 14 * 4);
        assert_eq!((f8.runs.len(), f8.unary.len(), f8.cpu_rate), (54, 27, 10_000));
        let targets = Offload::targets(&Records {
            figure7: None,
            figure8: Some(f8),
            streams: None,
        });
        assert_eq!(targets.len(), 6);
        assert!(targets.iter().all(|t| t.met.is_some()), "{targets:?}");
    }

    /// The streams figure's committed results (`docs/benchmarks/offload-streams.json`) read
    /// back: every run counted, a ratio for each shape and size.
    #[test]
    fn the_committed_streams_read_back() {
        let (_, records): (serde_json::Value, Records) = lifecycle::committed("offload-streams.json");
        let streams = records.streams.unwrap();
        assert_eq!(streams.runs.len(), 3 * 2 * 2 * 2);
        assert!(streams.runs.iter().all(|r| r.all_ok()), "{:?}", streams.runs);
        let targets = streams.targets();
        assert_eq!(targets.len(), 4);
        assert!(targets.iter().all(|t| t.met.is_some()), "{targets:?}");
    }

    #[test]
    fn plots_go_beside_the_path_asked() {
        assert_eq!(
            per_figure(Path::new("d/out.svg"), "figure7"),
            Path::new("d/out-figure7.svg")
        );
    }
}
