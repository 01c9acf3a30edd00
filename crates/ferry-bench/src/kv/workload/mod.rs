//! Workload generators of the key-value benchmark: the four workloads of the Cornflakes
//! evaluation (§6.1.4 of `papers/cornflakes-zero-copy-serialization-sosp23.txt`), built from the
//! figures in `workloads.md` (both under the shared folder).
//!
//! What it is: for each workload, a key space ([`Workload::objects`]: every key with the sizes
//! of its value's parts, to preload the store and to check every response's length) and a
//! request stream ([`Workload::next_op`]), both reproducible from one seed (the load generator's
//! arrivals draw from a stream of the same seed, [`dist::Stream::Arrivals`]); and a command-line spec ([`WorkloadSpec`],
//! flattened into `ferry bench kv`) with [`build`].
//!
//! | workload | file | sizes | requests | popularity |
//! |---|---|---|---|---|
//! | `google-1-4` | [`google`] | 1-4 fields (or 1, 1-8, 1-16) from Google's fleet `bytes` table | `GetList` | uniform |
//! | `twitter-c4` | [`twitter`] | lognormal, mean 2439 B, 32 % >= 512 B | 93 % `Get`, 7 % `Put` | Zipf 1.1004 |
//! | `twitter-csv` | [`twitter_csv`] | from a real trace file | the trace's gets and sets | the trace's |
//! | `cdn`, `cdn-seg8192` | [`cdn`] | Tragen image class, 1 KB-116 MB, mean 22.9 KB | `Get` / `GetList` | Zipf 0.8 |
//! | `ycsb-4x1024` | [`ycsb`] | N buffers of S bytes | `Get` / `GetList` / `GetM` | Zipf 0.99 |
//!
//! Every object of one part is a single buffer, read with [`Op::Get`]; every object of several
//! parts is a vector of buffers, read with one [`Op::GetList`] ([`Op::read`] picks).
//!
//! What it is NOT: the store, the load generator or the client. Nothing here does I/O except
//! [`twitter_csv::open`], reading a trace file; nothing here measures time.
//!
//! Determinism: a seed fixes the objects (keys and sizes) and the request sequence; each comes
//! from its own stream of the seed ([`dist::Stream`]), so the key space does not depend on how
//! many requests were drawn. A `Put` rewrites its object with the object's own sizes, so a
//! client holding [`Workload::objects`] always knows every expected length.
//!
//! Memory: every synthetic key space stops growing at `--memory-budget` bytes of keys plus
//! values (default 1 GiB, on a 24 GiB machine that also runs the store and its peers); when
//! that cuts the key count, [`Workload::notes`] says so. The CSV reader is bounded by its line
//! limit instead.

pub mod cdn;
pub mod dist;
pub mod google;
mod keyspace;
pub mod twitter;
pub mod twitter_csv;
pub mod ycsb;

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

pub use twitter_csv::CsvError;
pub use ycsb::YcsbRead;

use dist::{Popularity, WorkloadRng};
use rand::Rng as _;

/// Default bytes of keys plus values a synthetic key space may take: 1 GiB.
pub const DEFAULT_MEMORY_BUDGET: u64 = 1 << 30;

/// One object of the key space: its key and the byte sizes of its parts (1 part: a single
/// buffer; N parts: a vector of N buffers, read back with one GetList).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Object {
    /// The key (ASCII for the synthetic workloads; UTF-8 from a trace).
    pub key: Vec<u8>,
    /// The size in bytes of each part of the value, in order; never empty, no part is 0.
    pub parts: Vec<u32>,
}

impl Object {
    /// The value's total size, bytes.
    pub fn value_len(&self) -> u64 {
        self.parts.iter().map(|&p| u64::from(p)).sum()
    }

    /// Whether the value is a vector of buffers (more than one part) rather than one buffer.
    pub fn is_list(&self) -> bool {
        self.parts.len() > 1
    }
}

/// What one request asks. Keys are indices into the key space (Workload::objects order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Read a single-buffer value.
    Get(u32),
    /// Read all parts of a multi-part value.
    GetList(u32),
    /// Read several single-buffer values in one request.
    GetM(Vec<u32>),
    /// (Re)write that object with its own sizes.
    Put(u32),
}

impl Op {
    /// The read of a whole object: [`Op::GetList`] if it has several parts, else [`Op::Get`].
    pub fn read(index: u32, object: &Object) -> Self {
        if object.is_list() {
            Op::GetList(index)
        } else {
            Op::Get(index)
        }
    }

    /// The key indices the request names.
    pub fn keys(&self) -> &[u32] {
        match self {
            Op::Get(i) | Op::GetList(i) | Op::Put(i) => std::slice::from_ref(i),
            Op::GetM(keys) => keys,
        }
    }
}

/// A workload: a key space and a deterministic request stream.
#[derive(Debug)]
pub struct Workload {
    name: String,
    objects: Vec<Object>,
    notes: Vec<String>,
    requests: Requests,
    /// The request stream's RNG ([`dist::Stream::Ops`] of the seed).
    rng: WorkloadRng,
}

/// How a workload draws its requests.
#[derive(Debug)]
enum Requests {
    /// A read of one whole object ([`Op::read`]), by popularity.
    Reads(Popularity),
    /// An object by popularity, then [`Op::Get`] with this probability, else [`Op::Put`].
    GetsOrPuts(Popularity, f64),
    /// One [`Op::GetM`] of this many keys, each by popularity.
    MultiGets(Popularity, u32),
    /// A trace's requests as `(key index, is_put)`, replayed in a loop from the next one.
    Replay(Vec<(u32, bool)>, usize),
}

impl Workload {
    /// A short name for results and plots, e.g. "google-1-16", "twitter-c4", "cdn", "ycsb-4x1024".
    pub fn name(&self) -> String {
        self.name.clone()
    }

    /// The key space, to preload the store and to know expected sizes.
    pub fn objects(&self) -> &[Object] {
        &self.objects
    }

    /// What the builder changed from what was asked (key count cut by the memory budget,
    /// values clamped, trace lines skipped), one sentence each, for the results and the log.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The next request; deterministic from the seed.
    pub fn next_op(&mut self) -> Op {
        match &mut self.requests {
            Requests::Reads(popularity) => {
                let index = popularity.sample(&mut self.rng);
                Op::read(index, &self.objects[index as usize])
            }
            Requests::GetsOrPuts(popularity, get_share) => {
                let index = popularity.sample(&mut self.rng);
                if self.rng.random::<f64>() < *get_share {
                    Op::Get(index)
                } else {
                    Op::Put(index)
                }
            }
            Requests::MultiGets(popularity, n) => {
                Op::GetM((0..*n).map(|_| popularity.sample(&mut self.rng)).collect())
            }
            Requests::Replay(ops, next) => {
                let (index, is_put) = ops[*next];
                *next = (*next + 1) % ops.len();
                if is_put { Op::Put(index) } else { Op::Get(index) }
            }
        }
    }
}

/// The workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// Lists of protobuf `bytes` fields of Google's fleet-wide sizes ([`google`]).
    Google,
    /// Twitter cache cluster 4: synthetic ([`twitter`]) or a trace file ([`twitter_csv`]).
    Twitter,
    /// CDN image objects ([`cdn`]).
    Cdn,
    /// YCSB-C ([`ycsb`]).
    Ycsb,
}

/// How the CDN workload stores its objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CdnMode {
    /// One buffer per object.
    Whole,
    /// Buffers of `--cdn-segment` bytes.
    Segments,
}

/// A range of list lengths, `N` or `MIN-MAX` on the command line (1, 1-4, 1-8, 1-16).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListLen {
    /// Fewest fields.
    pub min: u32,
    /// Most fields.
    pub max: u32,
}

impl ListLen {
    /// The most fields a list may have.
    pub const LIMIT: u32 = 1024;

    fn check(self) -> Result<(), String> {
        if self.min == 0 || self.min > self.max || self.max > Self::LIMIT {
            return Err(format!(
                "list length {self} must satisfy 1 <= min <= max <= {}",
                Self::LIMIT
            ));
        }
        Ok(())
    }
}

impl fmt::Display for ListLen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.min == self.max {
            write!(f, "{}", self.max)
        } else {
            write!(f, "{}-{}", self.min, self.max)
        }
    }
}

impl FromStr for ListLen {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let num = |t: &str| {
            t.trim()
                .parse::<u32>()
                .map_err(|_| format!("list length {s:?}: expected N or MIN-MAX"))
        };
        let len = match s.split_once('-') {
            Some((a, b)) => ListLen {
                min: num(a)?,
                max: num(b)?,
            },
            None => {
                let n = num(s)?;
                ListLen { min: n, max: n }
            }
        };
        len.check()?;
        Ok(len)
    }
}

/// A workload as chosen on the command line; [`build`] makes it. Flatten it into a command's
/// arguments (`#[command(flatten)]`); [`WorkloadSpec::new`] gives its defaults.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct WorkloadSpec {
    /// The workload.
    #[arg(long = "workload", value_enum, default_value_t = Kind::Twitter)]
    pub kind: Kind,
    /// Keys to preload [default: google 1000000, twitter 4000000, cdn 1000000, ycsb 1000000],
    /// cut to fit --memory-budget.
    #[arg(long)]
    pub keys: Option<u32>,
    /// Bytes of keys plus values a synthetic key space may take.
    #[arg(long, default_value_t = DEFAULT_MEMORY_BUDGET)]
    pub memory_budget: u64,
    /// Zipf exponent of key popularity [default: twitter 1.1004, cdn 0.8, ycsb 0.99]; google is
    /// uniform and a trace file has its own.
    #[arg(long)]
    pub zipf: Option<f64>,
    /// Google: fields per object, N or MIN-MAX (uniform): 1, 1-4, 1-8, 1-16.
    #[arg(long, default_value_t = ListLen { min: 1, max: 4 })]
    pub google_fields: ListLen,
    /// Google: largest field, bytes (the open end of the last size bucket).
    #[arg(long, default_value_t = google::DEFAULT_MAX_FIELD)]
    pub google_max_field: u32,
    /// Google: largest object, bytes; fields that would exceed it are drawn again (9000 is
    /// Cornflakes' jumbo frame).
    #[arg(long, default_value_t = google::DEFAULT_MAX_OBJECT)]
    pub google_max_object: u64,
    /// Twitter: replay this trace file (timestamp,key,key_size,value_size,client_id,operation,ttl)
    /// instead of the synthetic cluster-4 trace.
    #[arg(long)]
    pub twitter_trace: Option<PathBuf>,
    /// Twitter: largest value, bytes (larger ones are clamped).
    #[arg(long, default_value_t = twitter::DEFAULT_MAX_VALUE)]
    pub twitter_max_value: u32,
    /// Twitter: most lines read from --twitter-trace.
    #[arg(long, default_value_t = twitter_csv::DEFAULT_MAX_LINES)]
    pub twitter_max_lines: u64,
    /// CDN: objects whole (one buffer) or in segments.
    #[arg(long, value_enum, default_value_t = CdnMode::Whole)]
    pub cdn_mode: CdnMode,
    /// CDN: segment size, bytes.
    #[arg(long, default_value_t = cdn::DEFAULT_SEGMENT)]
    pub cdn_segment: u32,
    /// CDN: largest object, bytes, in both modes (larger ones are clamped; a response must fit
    /// the 8 MiB frame).
    #[arg(long, default_value_t = cdn::DEFAULT_MAX_OBJECT)]
    pub cdn_max_object: u32,
    /// YCSB: buffers per value (N).
    #[arg(long, default_value_t = ycsb::DEFAULT_BUFFERS)]
    pub ycsb_buffers: u32,
    /// YCSB: bytes per buffer (S).
    #[arg(long, default_value_t = ycsb::DEFAULT_SIZE)]
    pub ycsb_size: u32,
    /// YCSB: read N buffers as one list value (list) or as N keys of one buffer (multi: GetM).
    #[arg(long, value_enum, default_value_t = YcsbRead::List)]
    pub ycsb_read: YcsbRead,
}

impl WorkloadSpec {
    /// The command line's defaults for `kind`.
    pub fn new(kind: Kind) -> Self {
        #[derive(clap::Parser)]
        struct Defaults {
            #[command(flatten)]
            spec: WorkloadSpec,
        }
        let mut spec = <Defaults as clap::Parser>::parse_from(["workload"]).spec;
        spec.kind = kind;
        spec
    }
}

/// Parses nothing more: builds the workload `spec` describes, from `seed`. Errors say which
/// option is wrong (or, for a trace file, which line and field).
pub fn build(spec: &WorkloadSpec, seed: u64) -> Result<Workload, String> {
    match (spec.kind, &spec.twitter_trace) {
        (Kind::Google, _) if spec.zipf.is_some() => {
            Err("--zipf does not apply to google: its popularity is uniform".into())
        }
        (Kind::Google, _) => google::build(spec, seed),
        (Kind::Twitter, Some(_)) if spec.zipf.is_some() || spec.keys.is_some() => {
            Err("--zipf and --keys do not apply to --twitter-trace: the trace has its own".into())
        }
        (Kind::Twitter, Some(path)) => {
            twitter_csv::open(path, spec.twitter_max_lines, spec.twitter_max_value)
                .map_err(|e| format!("--twitter-trace {}: {e}", path.display()))
        }
        (Kind::Twitter, None) => twitter::build(spec, seed),
        (Kind::Cdn, _) => cdn::build(spec, seed),
        (Kind::Ycsb, _) => ycsb::build(spec, seed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        spec: WorkloadSpec,
    }

    fn parse(args: &[&str]) -> Result<WorkloadSpec, clap::Error> {
        Cli::try_parse_from(std::iter::once("bench").chain(args.iter().copied())).map(|c| c.spec)
    }

    /// Small key spaces of every workload, so tests stay fast in debug builds.
    fn small_specs() -> Vec<WorkloadSpec> {
        let keys = Some(3_000);
        let mut specs = Vec::new();
        for fields in ["1", "1-4", "1-8", "1-16"] {
            specs.push(WorkloadSpec {
                keys,
                google_fields: fields.parse().unwrap(),
                ..WorkloadSpec::new(Kind::Google)
            });
        }
        specs.push(WorkloadSpec {
            keys,
            ..WorkloadSpec::new(Kind::Twitter)
        });
        specs.push(WorkloadSpec {
            keys,
            ..WorkloadSpec::new(Kind::Cdn)
        });
        specs.push(WorkloadSpec {
            keys,
            cdn_mode: CdnMode::Segments,
            ..WorkloadSpec::new(Kind::Cdn)
        });
        specs.push(WorkloadSpec {
            keys,
            ..WorkloadSpec::new(Kind::Ycsb)
        });
        specs.push(WorkloadSpec {
            keys,
            ycsb_buffers: 1,
            ..WorkloadSpec::new(Kind::Ycsb)
        });
        specs.push(WorkloadSpec {
            keys,
            ycsb_read: YcsbRead::Multi,
            ..WorkloadSpec::new(Kind::Ycsb)
        });
        specs
    }

    #[test]
    fn clap_defaults_match_default() {
        let spec = parse(&[
            "--workload",
            "google",
            "--google-fields",
            "1-16",
            "--keys",
            "10",
            "--memory-budget",
            "1000000",
        ])
        .unwrap();
        assert_eq!(spec.kind, Kind::Google);
        assert_eq!(spec.google_fields, ListLen { min: 1, max: 16 });
        assert_eq!((spec.keys, spec.memory_budget), (Some(10), 1_000_000));
        let spec = parse(&[
            "--workload",
            "cdn",
            "--cdn-mode",
            "segments",
            "--cdn-segment",
            "4096",
        ])
        .unwrap();
        assert_eq!(
            (spec.kind, spec.cdn_mode, spec.cdn_segment),
            (Kind::Cdn, CdnMode::Segments, 4096)
        );
        let spec = parse(&[
            "--workload",
            "ycsb",
            "--ycsb-buffers",
            "2",
            "--ycsb-size",
            "2048",
            "--zipf",
            "0.5",
        ])
        .unwrap();
        assert_eq!(
            (spec.ycsb_buffers, spec.ycsb_size, spec.zipf),
            (2, 2048, Some(0.5))
        );
        assert!(parse(&["--google-fields", "0-4"]).is_err());
        assert!(parse(&["--google-fields", "4-1"]).is_err());
        assert!(parse(&["--workload", "memcached"]).is_err());
    }

    #[test]
    fn list_len_round_trips() {
        for s in ["1", "1-4", "1-8", "1-16", "3-3"] {
            let len: ListLen = s.parse().unwrap();
            let shown = len.to_string();
            assert_eq!(shown.parse::<ListLen>().unwrap(), len);
        }
        assert_eq!("3-3".parse::<ListLen>().unwrap().to_string(), "3");
        assert!("x".parse::<ListLen>().is_err());
        assert!("1-2000".parse::<ListLen>().is_err());
    }

    #[test]
    fn same_seed_same_workload_other_seed_other_keys() {
        for spec in small_specs() {
            let mut a = build(&spec, 42).unwrap();
            let mut b = build(&spec, 42).unwrap();
            let c = build(&spec, 43).unwrap();
            assert_eq!(a.name(), b.name());
            assert_eq!(a.objects(), b.objects(), "{}", a.name());
            assert_ne!(
                a.objects(),
                c.objects(),
                "{}: the seed changes the key space",
                a.name()
            );
            for _ in 0..2_000 {
                assert_eq!(a.next_op(), b.next_op(), "{}", a.name());
            }
        }
    }

    #[test]
    fn every_op_names_keys_in_range_and_objects_are_sane() {
        for spec in small_specs() {
            let mut w = build(&spec, 7).unwrap();
            let n = w.objects().len();
            assert!(n > 0);
            let keys: std::collections::HashSet<&[u8]> =
                w.objects().iter().map(|o| o.key.as_slice()).collect();
            assert_eq!(keys.len(), n, "{}: keys are unique", w.name());
            assert!(
                w.objects()
                    .iter()
                    .all(|o| !o.parts.is_empty() && o.parts.iter().all(|&p| p > 0))
            );
            assert!(w.objects().iter().all(|o| std::str::from_utf8(&o.key).is_ok()));
            for _ in 0..5_000 {
                let op = w.next_op();
                assert!(!op.keys().is_empty());
                assert!(
                    op.keys().iter().all(|&i| (i as usize) < n),
                    "{}: {op:?} out of {n}",
                    w.name()
                );
                if let Op::Get(i) | Op::GetList(i) = op {
                    assert_eq!(
                        op,
                        Op::read(i, &w.objects()[i as usize]),
                        "{}: read matches the layout",
                        w.name()
                    );
                }
            }
        }
    }

    #[test]
    fn names() {
        let names: Vec<String> = small_specs()
            .iter()
            .map(|s| build(s, 1).unwrap().name())
            .collect();
        assert_eq!(
            names,
            [
                "google-1",
                "google-1-4",
                "google-1-8",
                "google-1-16",
                "twitter-c4",
                "cdn",
                "cdn-seg8192",
                "ycsb-4x1024",
                "ycsb-1x1024",
                "ycsb-mget4x1024"
            ]
        );
    }

    fn build_err(spec: &WorkloadSpec) -> String {
        match build(spec, 1) {
            Ok(w) => panic!("built {}", w.name()),
            Err(e) => e,
        }
    }

    #[test]
    fn build_rejects_options_that_do_not_apply() {
        let google = WorkloadSpec {
            zipf: Some(1.0),
            ..WorkloadSpec::new(Kind::Google)
        };
        assert!(build_err(&google).contains("--zipf"));
        let trace = WorkloadSpec {
            twitter_trace: Some("/nonexistent.csv".into()),
            keys: Some(5),
            ..WorkloadSpec::new(Kind::Twitter)
        };
        assert!(build_err(&trace).contains("--keys"));
        let trace = WorkloadSpec {
            twitter_trace: Some("/nonexistent.csv".into()),
            ..WorkloadSpec::new(Kind::Twitter)
        };
        assert!(build_err(&trace).contains("/nonexistent.csv"));
        let tiny = WorkloadSpec {
            memory_budget: 10,
            ..WorkloadSpec::new(Kind::Ycsb)
        };
        assert!(build_err(&tiny).contains("memory budget"));
    }
}
