//! Figure 7 of the DPU offload paper: the time to deserialize one message made of an array,
//! an int array (`Ints { repeated uint32 values = 1; }`) and a char array
//! (`Chars { string text = 1; }`), against its element count (1, 2, 4, ..., 8192), on one
//! pinned core, with no datapath.
//!
//! # The inputs
//!
//! What a gRPC client sends: the protobuf encoding (prost's, packed) of
//! - **ints**: `n` random `u32`, smaller ones likelier: a bit width `k` uniform in 1..=32, then
//!   a value uniform in `[2^(k-1), 2^k)` (log-uniform), so that the varints take 1 byte (7 in
//!   32 of the values), 2, 3, 4 (7 in 32 each) or 5 bytes (4 in 32) and decoding runs every
//!   varint length, unaligned ([`int_values`]);
//! - **chars**: `n` random ASCII letters, one byte each in UTF-8 and on the wire
//!   ([`char_text`]).
//!
//! The paper draws from a Mersenne twister with a constant seed; this uses the seeded ChaCha8
//! generator the other workloads of this crate use (`rand_chacha`: the same stream on every
//! platform and version), seeded with [`Figure7Options::seed`]. Every count starts from the
//! same seed, so a message's elements are the first `n` of one stream. The exact distribution the paper used is not given; the figure's shape
//! (linear in `n` once the per-message cost is amortized) does not depend on it.
//!
//! # The series ([`Figure7Series`])
//!
//! - **prost**: `Ints::decode(&bytes[..])` / `Chars::decode`, the prost types generated from the
//!   same `.proto` ([`crate::generated::demo_prost`]), the message then dropped: what a tonic
//!   host does before its handler runs. prost materializes every element (a `Vec<u32>`, a
//!   `String` after a UTF-8 check).
//! - **prost+read**: the same, then every element read: the ints summed, the text's bytes
//!   summed (the `Demo` service's handlers answer such a digest). The host's whole work without
//!   offload, comparable with host-validate.
//! - **engine**: the offload engine's decoder, on the engine's core:
//!   [`ferry_reflect::protobuf::decode`] into a `DynamicMessage` under
//!   [`Context::copy_only`], then the Ferry wire image written into a pool buffer: `layout()`,
//!   a [`Pool::alloc`] of `head_len`, `write_head`. The pool is shared memory (a memfd mapped
//!   `MAP_SHARED`, what `ferry-shm` sends from). The copy-only context is the choice that makes
//!   every byte of a string land once in shared memory: the protobuf input is in the gRPC
//!   stack's receive buffer, not in the pool, so a zero-copy reference to it is impossible and
//!   a pool context would only copy it the same way; with copy-only, `decode` borrows the
//!   string from the input (no copy) and `write_head` copies it once, into the image. The
//!   ints are decoded into the `DynamicMessage`'s `Vec<u32>` and written packed (4 bytes each)
//!   into the image. The buffer is dropped (back to the pool) after each message; the
//!   transport's part (a block header, the doorbell) is not included.
//! - **host-validate**: the host's side with offload: [`View::decode`] of that image against
//!   the message's Ferry descriptor (validation in place, no copy), then every element read as
//!   in prost+read (the ints summed from the packed list, the text UTF-8 checked with
//!   `View::str`, as prost checks it, and its bytes summed). No protobuf is parsed.
//!
//! Before a point is timed, the values prost reads and the values the host reads from the
//! engine's image are compared element by element with the generated ones (a mismatch is an
//! error, [`BenchError::Mismatch`]).
//!
//! # Timing
//!
//! Per point (message and count) and series: a loop of `n` messages back to back, the clock
//! read once around it, `n` calibrated so that the loop takes at least
//! [`Figure7Options::batch`] (the calibration runs are the warm-up); then
//! [`Figure7Options::reps`] timed loops of each series, the series interleaved so that they
//! are compared moments apart. The figure is the median of the repetitions' ns per message;
//! beside it the median absolute percentage error around it (MdAPE, the paper's stability
//! figure) and the minimum. Loops are short and many (100 µs, 51 by default) rather than long
//! and few: a loop that the scheduler interrupts (another thread on the same core) counts its
//! time away as the message's, so it must be a rare outlier that the median drops. The input is
//! passed through `black_box` every iteration and every result to it, so nothing is hoisted
//! or left unread. The thread is pinned to [`Figure7Options::cpu`].

use std::hint::black_box;
use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use ferry::wire::{Context, Limits, MessageDesc, Outgoing, View};
use ferry_buf::{BufMut, Pool, PoolConfig};
use ferry_reflect::Schema;
use ferry_reflect::protobuf::{self, ProtobufLimits};
use prost::Message as _;
use prost_reflect::MessageDescriptor;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::SeedableRng;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::generated::demo_prost::{Chars, Ints};
use crate::harness::progress::Progress;
use crate::harness::table::Table;
use crate::harness::{self, Named, median, round};
use crate::plot::{self, Panel, XAxis};
use crate::{BenchError, BoxError};

/// The field both messages carry their elements in.
const FIELD: u32 = 1;

/// The paper's CPU figures at high counts (Xeon Gold 6430, its own C++ stack-based decoder):
/// ns per int and ns per char.
const PAPER_NS_PER_INT: f64 = 2.75;
const PAPER_NS_PER_CHAR: f64 = 42.5 / 1024.0;

/// A message of the figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Figure7Message {
    /// The int array: `ferry.offload.demo.Ints`.
    Ints,
    /// The char array: `ferry.offload.demo.Chars`.
    Chars,
}

impl Figure7Message {
    /// Both, in the figure's order.
    pub const ALL: [Figure7Message; 2] = [Figure7Message::Ints, Figure7Message::Chars];

    /// Its full protobuf name.
    pub fn full_name(self) -> &'static str {
        match self {
            Figure7Message::Ints => "ferry.offload.demo.Ints",
            Figure7Message::Chars => "ferry.offload.demo.Chars",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Figure7Message::Ints => "int array (Ints: repeated uint32, varints of 1-5 bytes)",
            Figure7Message::Chars => "char array (Chars: string, 1 byte per char)",
        }
    }

    fn paper_ns_per_element(self) -> f64 {
        match self {
            Figure7Message::Ints => PAPER_NS_PER_INT,
            Figure7Message::Chars => PAPER_NS_PER_CHAR,
        }
    }
}

/// A series of the figure: whose work is timed (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Figure7Series {
    /// prost decode, the message dropped: the tonic host's decoding.
    #[serde(rename = "prost")]
    Prost,
    /// prost decode, then every element read: the tonic host's decoding and reading.
    #[serde(rename = "prost+read")]
    ProstRead,
    /// The engine's decoder: protobuf to a `DynamicMessage`, the Ferry image into a pool buffer.
    #[serde(rename = "engine")]
    Engine,
    /// The host with offload: `View::decode` of the image, then every element read.
    #[serde(rename = "host-validate")]
    HostValidate,
}

impl Figure7Series {
    /// All, in the table's and the plot's order.
    pub const ALL: [Figure7Series; 4] = [
        Figure7Series::Prost,
        Figure7Series::ProstRead,
        Figure7Series::Engine,
        Figure7Series::HostValidate,
    ];
}

/// What [`figure7`] measures and how.
#[derive(Debug, Clone)]
pub struct Figure7Options {
    /// Element counts.
    pub counts: Vec<usize>,
    /// Timed loops per point and series; the figure is their median.
    pub reps: usize,
    /// The least wall time of one timed loop; its message count is calibrated to it (short,
    /// so that most loops run within one scheduler time slice and the median ignores the few
    /// that another thread interrupts).
    pub batch: Duration,
    /// The CPU the measuring thread is pinned to (`None`: not pinned).
    pub cpu: Option<usize>,
    /// Seed of the inputs' generator (5489, `std::mt19937`'s default).
    pub seed: u64,
}

impl Figure7Options {
    /// The runs a [`Progress`] bar over [`figure7`] counts: one per message and count.
    pub fn runs(&self) -> u64 {
        (Figure7Message::ALL.len() * self.counts.len()) as u64
    }
}

/// One measured point: a series on a message of some element count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// The message.
    pub message: Figure7Message,
    /// Its element count.
    pub elements: usize,
    /// Whose work was timed.
    pub series: Figure7Series,
    /// Bytes of the protobuf input.
    pub protobuf_bytes: usize,
    /// Bytes of the Ferry image the engine writes.
    pub ferry_bytes: usize,
    /// Messages per timed loop (calibrated).
    #[serde(rename = "iterations_per_loop")]
    pub iterations: u64,
    /// The median of `samples_ns`.
    pub ns_per_message: f64,
    /// `ns_per_message / elements`.
    pub ns_per_element: f64,
    /// The fastest loop's ns per message.
    pub min_ns_per_message: f64,
    /// Median absolute deviation of the samples from `ns_per_message`, in percent of it.
    pub mdape_percent: f64,
    /// ns per message of each timed loop, in run order.
    pub samples_ns: Vec<f64>,
}

impl Point {
    /// The point of `series` on `message` of `elements` elements measured as `samples_ns`.
    fn new(
        (message, elements, series): (Figure7Message, usize, Figure7Series),
        case: &Case<'_>,
        iterations: u64,
        samples_ns: Vec<f64>,
    ) -> Point {
        let ns = median(&samples_ns).unwrap_or(f64::NAN);
        let deviations: Vec<f64> = samples_ns.iter().map(|s| (s - ns).abs() / ns * 100.0).collect();
        Point {
            message,
            elements,
            series,
            protobuf_bytes: case.input.len(),
            ferry_bytes: case.image.len(),
            iterations,
            ns_per_message: round(ns, 2),
            ns_per_element: round(ns / elements.max(1) as f64, 4),
            min_ns_per_message: round(samples_ns.iter().copied().fold(f64::INFINITY, f64::min), 2),
            mdape_percent: round(median(&deviations).unwrap_or(f64::NAN), 3),
            samples_ns: samples_ns.iter().map(|&s| round(s, 2)).collect(),
        }
    }
}

/// What [`figure7`] measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figure7 {
    /// The least wall time of one timed loop, µs.
    pub batch_us: u64,
    /// The CPU the measuring thread was pinned to.
    pub cpu: Option<usize>,
    /// Every point: per message, per count, per series in [`Figure7Series::ALL`] order.
    pub points: Vec<Point>,
}

impl Figure7 {
    fn point(&self, message: Figure7Message, elements: usize, series: Figure7Series) -> Option<&Point> {
        self.points
            .iter()
            .find(|p| p.message == message && p.elements == elements && p.series == series)
    }

    /// Per message, a row per count with each series' ns per message and [ns per element],
    /// then the paper's CPU figures beside ours at the largest count.
    pub fn table(&self) {
        let reps = self.points.first().map_or(0, |p| p.samples_ns.len());
        println!(
            "Figure 7: ns to deserialize one message, median of {reps} loops of >= {} us (ns per element in brackets){}\n",
            self.batch_us,
            self.cpu.map(|c| format!("; CPU {c}")).unwrap_or_default(),
        );
        let mut counts: Vec<usize> = self.points.iter().map(|p| p.elements).collect();
        counts.sort_unstable();
        counts.dedup();
        for message in Figure7Message::ALL {
            println!("{}", message.title());
            let series = Figure7Series::ALL.map(|s| s.name());
            let mut t = Table::new(
                ["elements", "pb B", "ferry B"]
                    .map(String::from)
                    .into_iter()
                    .chain(series),
            );
            for &n in &counts {
                let Some(first) = self.point(message, n, Figure7Series::Prost) else {
                    continue;
                };
                let cells = Figure7Series::ALL.map(|s| {
                    self.point(message, n, s).map_or("-".to_owned(), |p| {
                        format!("{:.1} [{:.3}]", p.ns_per_message, p.ns_per_element)
                    })
                });
                let sizes = [n, first.protobuf_bytes, first.ferry_bytes].map(|v| v.to_string());
                t.row(sizes.into_iter().chain(cells));
            }
            t.print();
            if let Some(&largest) = counts.last() {
                let per = |s| {
                    self.point(message, largest, s)
                        .map_or(f64::NAN, |p| p.ns_per_element)
                };
                println!(
                    "at {largest}: ns/element prost {:.3}, engine {:.3}, host-validate {:.3} (the paper's CPU, its C++ decoder: {:.3}); host-validate / prost+read: {:.2}x\n",
                    per(Figure7Series::Prost),
                    per(Figure7Series::Engine),
                    per(Figure7Series::HostValidate),
                    message.paper_ns_per_element(),
                    per(Figure7Series::HostValidate) / per(Figure7Series::ProstRead),
                );
            }
        }
    }

    /// ns per message against elements, log-log, a panel per message with a line per series.
    pub fn plot(&self, path: &Path) -> Result<(), BoxError> {
        let panel = |message: Figure7Message| Panel {
            title: message.title().to_owned(),
            x_label: "elements".to_owned(),
            x_axis: XAxis::Count,
            y_label: "ns per message".to_owned(),
            series: Figure7Series::ALL
                .into_iter()
                .map(|series| plot::Series {
                    name: series.name(),
                    points: self
                        .points
                        .iter()
                        .filter(|p| p.message == message && p.series == series)
                        .map(|p| (p.elements as f64, p.ns_per_message))
                        .collect(),
                })
                .collect(),
        };
        plot::log_log_svg(
            path,
            "Figure 7: time to deserialize one message against its element count",
            2,
            &Figure7Message::ALL.map(panel),
        )
    }
}

/// Measures Figure 7 (see the module docs) on a thread pinned to `opts.cpu`, counting one run
/// of `progress` per message and count ([`Figure7Options::runs`]).
pub fn figure7(opts: &Figure7Options, progress: &Progress) -> Result<Figure7, BenchError> {
    let points = thread::scope(|s| {
        thread::Builder::new()
            .name("offload-fig7".to_owned())
            .spawn_scoped(s, || {
                if let Some(cpu) = opts.cpu {
                    harness::pin_current_thread(cpu).map_err(BenchError::Setup)?;
                }
                measure(opts, progress)
            })
            .map_err(|e| BenchError::Setup(format!("spawning the measuring thread: {e}")))?
            .join()
            .unwrap_or_else(|_| Err(BenchError::Setup("the measuring thread panicked".to_owned())))
    })?;
    Ok(Figure7 {
        batch_us: opts.batch.as_micros() as u64,
        cpu: opts.cpu,
        points,
    })
}

impl Figure7Options {
    /// The results' settings.
    pub fn settings(&self) -> Value {
        json!({
            "paper": "Protobuf deserialization offload to a DPU, Figure 7 (one message, one core, no datapath)",
            "counts": self.counts,
            "reps": self.reps,
            "batch_us": self.batch.as_micros() as u64,
            "cpu": self.cpu,
            "statistic": "median over reps of a loop's ns per message; the loop's message count calibrated to batch_us (the calibration is the warm-up); series interleaved per rep",
            "schema": "ferry-offload's demo.proto: the Ferry side from the descriptors a host sends the engine (ferry_offload::DEMO_DESCRIPTORS), as the engine builds its schema; prost types generated from the same file",
            "seed": self.seed,
            "rng": "ChaCha8 (rand_chacha) seeded with seed, the same stream for every count (the paper: a Mersenne twister with a constant seed)",
            "ints": "bit width k uniform in 1..=32, value uniform in [2^(k-1), 2^k): varints of 1 (7/32), 2, 3, 4 (7/32 each) or 5 bytes (4/32); packed",
            "chars": "ASCII letters a-z, one byte each",
            "pool": "ferry_buf::Pool, shared memory (memfd), 2 MiB regions",
            "check": "before timing, prost's values and the host's values read from the engine's image equal the generated ones, element by element",
            "series": {
                "prost": "prost-generated Ints::decode / Chars::decode of the client's bytes (Vec<u32>; String after a UTF-8 check), then dropped: the tonic host's decoding",
                "prost+read": "prost as above, then every element read (ints summed; the text's bytes summed): the tonic host's decoding and reading",
                "engine": "ferry_reflect::protobuf::decode into a DynamicMessage under Context::copy_only() (strings borrowed from the input), then layout(), Pool::alloc(head_len) from a shared-memory pool, write_head (strings copied once, into the image), buffer dropped: the offload engine's decoder",
                "host-validate": "View::decode of the engine's image against the Ferry descriptor (validated in place), then every element read as in prost+read (the text UTF-8 checked with View::str): the host's side with offload",
            },
            "paper_cpu_ns_per_element": {"ints": PAPER_NS_PER_INT, "chars": PAPER_NS_PER_CHAR},
        })
    }
}

/// `count` random `u32`, smaller ones likelier (see the module docs): the int array's values.
pub fn int_values(count: usize, seed: u64) -> Vec<u32> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..count)
        .map(|_| {
            let k: u32 = rng.random_range(1..=32);
            (rng.random::<u32>() >> (32 - k)) | (1 << (k - 1))
        })
        .collect()
}

/// `count` random ASCII letters: the char array's text.
pub fn char_text(count: usize, seed: u64) -> String {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..count)
        .map(|_| char::from(b'a' + rng.random_range(0..26u8)))
        .collect()
}

/// The elements of one message, as generated or as some system read them.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Elements {
    Ints(Vec<u32>),
    Chars(String),
}

impl Elements {
    fn generate(message: Figure7Message, count: usize, seed: u64) -> Elements {
        match message {
            Figure7Message::Ints => Elements::Ints(int_values(count, seed)),
            Figure7Message::Chars => Elements::Chars(char_text(count, seed)),
        }
    }

    /// What a client sends: prost's encoding.
    fn protobuf(&self) -> Vec<u8> {
        match self {
            Elements::Ints(values) => Ints {
                values: values.clone(),
            }
            .encode_to_vec(),
            Elements::Chars(text) => Chars { text: text.clone() }.encode_to_vec(),
        }
    }

    /// Where `self` and `other` first differ, or `None`.
    fn first_difference(&self, other: &Elements) -> Option<String> {
        match (self, other) {
            (Elements::Ints(a), Elements::Ints(b)) => diff(a, b),
            (Elements::Chars(a), Elements::Chars(b)) => diff(a.as_bytes(), b.as_bytes()),
            _ => Some("other message types".to_owned()),
        }
    }
}

fn diff<T: PartialEq + std::fmt::Debug>(a: &[T], b: &[T]) -> Option<String> {
    if let Some(i) = a.iter().zip(b).position(|(x, y)| x != y) {
        return Some(format!("element {i}: {:?} instead of {:?}", a[i], b[i]));
    }
    (a.len() != b.len()).then(|| format!("{} elements instead of {}", a.len(), b.len()))
}

fn ferry(e: impl std::fmt::Display) -> BenchError {
    BenchError::Ferry(e.to_string())
}

/// The sum of the ints: how every series reads an int array (the demo host's `SendInts`).
#[inline]
pub(super) fn digest_ints(values: impl Iterator<Item = u32>) -> u64 {
    values.fold(0u64, |d, v| d.wrapping_add(u64::from(v)))
}

/// The text's digest: how every series reads a char array (the demo host's `SendChars`:
/// every byte read, a word at a time).
#[inline]
fn digest_text(text: &str) -> u64 {
    ferry_offload::demo_host::digest(ferry_offload::demo_host::DIGEST_SEED, text.as_bytes())
}

/// The demo schema, built as the engine builds it: from the descriptors a host sends.
fn load_schema() -> Result<Schema, BenchError> {
    let pool = prost_reflect::DescriptorPool::decode(ferry_offload::DEMO_DESCRIPTORS)
        .map_err(|e| BenchError::Setup(format!("the demo's descriptors: {e}")))?;
    Schema::new(pool).map_err(|e| BenchError::Setup(format!("the demo's schema: {e}")))
}

/// The engine's pool: shared memory, as `ferry-shm` sends from.
fn engine_pool() -> Result<Pool, BenchError> {
    Pool::new(PoolConfig {
        shared: true,
        region_size: 2 << 20,
        max_bytes: 64 << 20,
        ..PoolConfig::default()
    })
    .map_err(ferry)
}

/// A message's two descriptors: protobuf's for the engine's decoder, Ferry's for the engine's
/// writer and the host's validator.
struct Descs<'s> {
    md: MessageDescriptor,
    desc: &'s MessageDesc<'s>,
}

impl<'s> Descs<'s> {
    fn of(schema: &'s Schema, message: Figure7Message) -> Result<Self, BenchError> {
        let missing = || BenchError::Setup(format!("demo.proto has no message {}", message.full_name()));
        Ok(Descs {
            md: schema.descriptor(message.full_name()).ok_or_else(missing)?,
            desc: schema.message(message.full_name()).ok_or_else(missing)?,
        })
    }
}

/// The engine's work for one message: decode `input` into a `DynamicMessage` (strings
/// borrowed from it), write the Ferry image into a buffer of `pool` (strings copied once).
#[inline]
fn engine_write(d: &Descs<'_>, input: &[u8], pool: &Pool) -> Result<BufMut, BenchError> {
    let m = protobuf::decode(
        &d.md,
        d.desc,
        input,
        Context::copy_only(),
        &ProtobufLimits::default(),
    )
    .map_err(ferry)?;
    let layout = m.layout();
    let mut buf = pool.alloc(layout.head_len).map_err(ferry)?;
    m.write_head(&layout, &mut buf.capacity_mut()[..layout.head_len])
        .map_err(ferry)?;
    buf.set_len(layout.head_len);
    Ok(buf)
}

/// The host's work for an int array: validate the image in place, sum the ints.
#[inline]
fn host_ints(image: &[u8], desc: &MessageDesc<'_>, limits: &Limits) -> Result<u64, BenchError> {
    let view = View::decode(image, desc, limits).map_err(ferry)?;
    Ok(digest_ints(view.scalars::<u32>(FIELD).iter()))
}

/// The host's work for a char array: validate the image in place, UTF-8 check the text, sum
/// its bytes.
#[inline]
fn host_chars(image: &[u8], desc: &MessageDesc<'_>, limits: &Limits) -> Result<u64, BenchError> {
    let view = View::decode(image, desc, limits).map_err(ferry)?;
    Ok(digest_text(view.str(FIELD).map_err(ferry)?.unwrap_or_default()))
}

/// What prost reads from `input`.
fn prost_elements(message: Figure7Message, input: &[u8]) -> Result<Elements, BenchError> {
    Ok(match message {
        Figure7Message::Ints => Elements::Ints(Ints::decode(input)?.values),
        Figure7Message::Chars => Elements::Chars(Chars::decode(input)?.text),
    })
}

/// What the host reads from the Ferry image `image`, element by element.
fn image_elements(
    message: Figure7Message,
    image: &[u8],
    desc: &MessageDesc<'_>,
) -> Result<Elements, BenchError> {
    let view = View::decode(image, desc, &Limits::default()).map_err(ferry)?;
    Ok(match message {
        Figure7Message::Ints => Elements::Ints(view.scalars::<u32>(FIELD).iter().collect()),
        Figure7Message::Chars => {
            Elements::Chars(view.str(FIELD).map_err(ferry)?.unwrap_or_default().to_owned())
        }
    })
}

/// One message of the figure, ready to time: the client's bytes and the engine's image.
struct Case<'s> {
    message: Figure7Message,
    descs: Descs<'s>,
    input: Vec<u8>,
    image: BufMut,
}

impl<'s> Case<'s> {
    /// Generates the message, writes its image, and checks that prost and the host (reading
    /// the engine's image) both read the generated elements.
    fn new(
        schema: &'s Schema,
        message: Figure7Message,
        elements: usize,
        seed: u64,
        pool: &Pool,
    ) -> Result<Self, BenchError> {
        let descs = Descs::of(schema, message)?;
        let generated = Elements::generate(message, elements, seed);
        let input = generated.protobuf();
        let image = engine_write(&descs, &input, pool)?;
        let what = || format!("{} of {elements} elements", message.full_name());
        let mismatch = |system, detail| BenchError::Mismatch {
            system,
            reference: "the generated values",
            input: what(),
            detail,
        };
        if let Some(d) = prost_elements(message, &input)?.first_difference(&generated) {
            return Err(mismatch("prost", d));
        }
        if let Some(d) = image_elements(message, &image, descs.desc)?.first_difference(&generated) {
            return Err(mismatch("the engine's image", d));
        }
        Ok(Case {
            message,
            descs,
            input,
            image,
        })
    }

    /// Runs `series` on `n` messages back to back; returns the wall time.
    fn time(&self, series: Figure7Series, n: u64, pool: &Pool) -> Result<Duration, BenchError> {
        use Figure7Message as M;
        use Figure7Series as S;
        let limits = Limits::default();
        let input = &self.input[..];
        let image = &self.image[..];
        let desc = self.descs.desc;
        match (self.message, series) {
            (M::Ints, S::Prost) => repeat(n, || Ok(Ints::decode(black_box(input))?)),
            (M::Chars, S::Prost) => repeat(n, || Ok(Chars::decode(black_box(input))?)),
            (M::Ints, S::ProstRead) => repeat(n, || {
                Ok(digest_ints(Ints::decode(black_box(input))?.values.into_iter()))
            }),
            (M::Chars, S::ProstRead) => repeat(n, || Ok(digest_text(&Chars::decode(black_box(input))?.text))),
            (_, S::Engine) => repeat(n, || engine_write(&self.descs, black_box(input), pool)),
            (M::Ints, S::HostValidate) => repeat(n, || host_ints(black_box(image), desc, &limits)),
            (M::Chars, S::HostValidate) => repeat(n, || host_chars(black_box(image), desc, &limits)),
        }
    }

    /// The message count of a loop of `series` that takes at least `target` (the runs that find
    /// it are the warm-up).
    fn calibrate(&self, series: Figure7Series, target: Duration, pool: &Pool) -> Result<u64, BenchError> {
        let mut n = 1u64;
        loop {
            let took = self.time(series, n, pool)?;
            if took >= target {
                return Ok(n);
            }
            // Aim a little past the target from this estimate; at most 100 times more at once
            // (the first loops are cold).
            let grow = if took.is_zero() {
                100.0
            } else {
                (target.as_secs_f64() / took.as_secs_f64() * 1.2).min(100.0)
            };
            n = ((n as f64 * grow).ceil() as u64).max(n + 1);
        }
    }
}

/// Runs `f` `n` times back to back, each result passed to `black_box`; returns the wall time.
#[inline]
fn repeat<T>(n: u64, mut f: impl FnMut() -> Result<T, BenchError>) -> Result<Duration, BenchError> {
    let start = Instant::now();
    for _ in 0..n {
        black_box(f()?);
    }
    Ok(start.elapsed())
}

/// Every point, on the calling thread.
fn measure(opts: &Figure7Options, progress: &Progress) -> Result<Vec<Point>, BenchError> {
    let schema = load_schema()?;
    let pool = engine_pool()?;
    let mut points = Vec::new();
    for message in Figure7Message::ALL {
        for &elements in &opts.counts {
            progress.start(format!("{} x{elements}", message.name()));
            let case = Case::new(&schema, message, elements, opts.seed, &pool)?;
            let mut iterations = [0u64; Figure7Series::ALL.len()];
            for (n, &s) in iterations.iter_mut().zip(&Figure7Series::ALL) {
                *n = case.calibrate(s, opts.batch, &pool)?;
            }
            let mut samples = vec![Vec::new(); Figure7Series::ALL.len()];
            for _ in 0..opts.reps.max(1) {
                for ((samples, &s), &n) in samples.iter_mut().zip(&Figure7Series::ALL).zip(&iterations) {
                    samples.push(case.time(s, n, &pool)?.as_nanos() as f64 / n as f64);
                }
            }
            for ((&series, samples_ns), &n) in Figure7Series::ALL.iter().zip(samples).zip(&iterations) {
                points.push(Point::new((message, elements, series), &case, n, samples_ns));
            }
            progress.done();
        }
    }
    Ok(points)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The engine path (protobuf decode, image in a pool buffer, validated and read by the
    /// host) reads exactly what prost reads, element by element, and the host's digests equal
    /// prost's.
    #[test]
    fn the_engine_path_reads_what_prost_reads() {
        let schema = load_schema().unwrap();
        let pool = engine_pool().unwrap();
        for message in Figure7Message::ALL {
            let d = Descs::of(&schema, message).unwrap();
            for count in [1, 2, 3, 127, 128, 1000, 8192] {
                let input = Elements::generate(message, count, 5489).protobuf();
                let prost = prost_elements(message, &input).unwrap();
                let image = engine_write(&d, &input, &pool).unwrap();
                let host = image_elements(message, &image, d.desc).unwrap();
                assert_eq!(host.first_difference(&prost), None, "{} x{count}", message.name());
                assert_eq!(host, prost);
                let limits = Limits::default();
                match &prost {
                    Elements::Ints(v) => {
                        assert_eq!(v.len(), count);
                        assert_eq!(
                            host_ints(&image, d.desc, &limits).unwrap(),
                            digest_ints(v.iter().copied())
                        );
                    }
                    Elements::Chars(t) => {
                        assert_eq!(t.len(), count);
                        assert_eq!(host_chars(&image, d.desc, &limits).unwrap(), digest_text(t));
                    }
                }
                // Copy-only: the image holds every byte (no zero-copy entries), and a string's
                // bytes appear in it once.
                match &prost {
                    Elements::Chars(t) if count >= 64 => {
                        let found = image.windows(t.len()).filter(|w| *w == t.as_bytes()).count();
                        assert_eq!(found, 1);
                    }
                    _ => {}
                }
            }
        }
    }

    /// The comparison the check before timing relies on finds the first difference.
    #[test]
    fn a_wrong_element_is_reported() {
        let a = Elements::Ints(vec![1, 2, 3]);
        assert_eq!(a.first_difference(&a), None);
        let b = Elements::Ints(vec![1, 5, 3]);
        assert_eq!(a.first_difference(&b).unwrap(), "element 1: 2 instead of 5");
        let c = Elements::Ints(vec![1, 2]);
        assert_eq!(a.first_difference(&c).unwrap(), "3 elements instead of 2");
        let s = Elements::Chars("abc".to_owned());
        assert!(s.first_difference(&a).is_some());
    }

    /// The ints take every varint length, 1 to 5 bytes, smaller ones likelier than 5.
    #[test]
    fn the_ints_use_every_varint_length() {
        let values = int_values(4096, 5489);
        let mut lengths = [0usize; 6];
        for v in &values {
            lengths[prost::encoding::encoded_len_varint(u64::from(*v))] += 1;
        }
        assert_eq!(lengths[0], 0);
        assert!(lengths[1..].iter().all(|&n| n > 0), "{lengths:?}");
        assert!(lengths[1] > lengths[5], "{lengths:?}");
        assert_eq!(int_values(16, 5489), values[..16]);
        assert!(char_text(100, 1).bytes().all(|b| b.is_ascii_lowercase()));
    }

    /// A tiny run produces every point, with positive times and the table's rows.
    #[test]
    fn a_short_run_measures_every_point() {
        let opts = Figure7Options {
            counts: vec![1, 64],
            reps: 2,
            batch: Duration::from_micros(50),
            cpu: None,
            seed: 5489,
        };
        let progress = Progress::new(opts.runs(), "test");
        let report = figure7(&opts, &progress).unwrap();
        progress.finish();
        assert_eq!(report.points.len(), 2 * 2 * 4);
        assert!(
            report
                .points
                .iter()
                .all(|p| p.ns_per_message > 0.0 && p.samples_ns.len() == 2)
        );
        let dir = std::env::temp_dir().join(format!("ferry-bench-fig7-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let svg = dir.join("fig7.svg");
        report.plot(&svg).unwrap();
        assert!(std::fs::read_to_string(&svg).unwrap().contains("host-validate"));
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(serde_json::from_value::<Figure7>(json).unwrap(), report);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
