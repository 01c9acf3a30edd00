//! Test support shared by Ferry's crates (dev-only; never a dependency of a library): a
//! seeded random generator, a builder of random messages for any descriptor, test pools,
//! threads run under a deadlock guard, child processes (the test binary re-executed in a role)
//! that never outlive their test, and external tools ([`tools`]: found on `PATH`, skipped with
//! a printed reason when missing unless `FERRY_REQUIRE_TOOLS=1`, run under a hang guard), and
//! [`assert_encoders_agree`] (a generated encoder against the generic visitor path), and a busy
//! machine on demand ([`BusyLoops`]) with [`wait_until`], the wait a fixed sleep stands for, and
//! the kernel's view of TCP sockets ([`tcp_sockets`]) for conditions only a socket shows, and
//! what hostile-load tests measure ([`load`]: latencies, resident memory, open descriptors, the
//! CPU of the hostile actors' threads and a burner of as much for a control half), and
//! network namespaces ([`netns`]: one made for a test, or nodes on a segment a test can
//! partition).
//!
//! What it is not: a fixture of any one crate. Helpers that only one test file needs stay in
//! that file.

#![forbid(unsafe_code)]

mod busy;
mod child;
mod encoders;
pub mod load;
pub mod netns;
mod scratch;
pub mod soak;
mod sockets;
pub mod tools;

pub use busy::{BusyLoops, wait_until};
pub use child::{ChildProc, Killer, Output, run, self_command};
pub use encoders::assert_encoders_agree;
pub use scratch::Scratch;
pub use sockets::{ESTABLISHED, LISTEN, TcpSocket, tcp_sockets};

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use ferry_buf::{Pool, PoolConfig};
use ferry_wire::{Context, DynamicMessage, HybridBytes, Kind, Label, List, MessageDesc, Value};

/// SplitMix64: a small, seeded, reproducible generator (every test that randomizes uses this
/// one, so a seed printed by a failing run reproduces it anywhere).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number below `n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.u64() % n
    }

    /// Uniform in `lo..hi` (`hi > lo`).
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        assert!(hi > lo);
        lo + (self.u64() % (hi - lo) as u64) as usize
    }

    /// True with probability `num / den`.
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.u64() % den < num
    }

    /// `len` random bytes.
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(len + 8);
        while out.len() < len {
            out.extend_from_slice(&self.u64().to_le_bytes());
        }
        out.truncate(len);
        out
    }

    /// Random bytes, of a random length in `lo..hi`.
    pub fn bytes_in(&mut self, lo: usize, hi: usize) -> Vec<u8> {
        let len = self.range(lo, hi);
        self.bytes(len)
    }

    /// One element of `items`.
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.range(0, items.len())]
    }
}

/// Builds random messages of any descriptor: every field kind, lists, maps, nesting up to
/// depth 2, strings as UTF-8 text, `bytes` of sizes around the zero-copy threshold, half of
/// them in `pool` (referenced when the context's threshold allows); proto2 required fields
/// always set.
pub struct Builder<'p> {
    /// The random source.
    pub rng: Rng,
    /// Where values that may be referenced are put.
    pub pool: &'p Pool,
    /// The context the values follow.
    pub ctx: &'p Context,
}

const SIZES: [usize; 10] = [0, 1, 7, 24, 100, 511, 512, 513, 2048, 9000];

impl Builder<'_> {
    fn data(&mut self) -> Vec<u8> {
        let len = SIZES[self.rng.below(SIZES.len() as u64) as usize];
        (0..len).map(|_| self.rng.u64() as u8).collect()
    }

    fn text(&mut self) -> Vec<u8> {
        const PARTS: [&str; 5] = ["a", "Zürich", "日本", "🦀", "0123456789abcdef"];
        let n = self.rng.below(80);
        let mut s = String::new();
        for _ in 0..n {
            s.push_str(PARTS[self.rng.below(PARTS.len() as u64) as usize]);
        }
        s.into_bytes()
    }

    /// Heap data is always copied; pool data is referenced when it reaches the threshold.
    fn hybrid(&mut self, data: Vec<u8>) -> HybridBytes<'static> {
        if self.rng.chance(50, 100) && !data.is_empty() {
            HybridBytes::from_shared(self.pool.copy_from(&data).unwrap(), self.ctx)
        } else {
            HybridBytes::from_vec(data)
        }
    }

    fn scalar(&mut self, kind: Kind) -> Value<'static> {
        let r = self.rng.u64();
        match kind {
            Kind::Bool => Value::Bool(r & 1 == 1),
            Kind::Int32 | Kind::SInt32 | Kind::SFixed32 | Kind::Enum => Value::I32(r as i32),
            Kind::Int64 | Kind::SInt64 | Kind::SFixed64 => Value::I64(r as i64),
            Kind::UInt32 | Kind::Fixed32 => Value::U32(r as u32),
            Kind::UInt64 | Kind::Fixed64 => Value::U64(r),
            Kind::Float => Value::F32((r as i32) as f32 / 7.0),
            Kind::Double => Value::F64((r as i64) as f64 / 3.0),
            _ => unreachable!("not a scalar"),
        }
    }

    fn list<'d>(&mut self, kind: Kind<'d>, depth: u32) -> List<'d> {
        let n = 1 + self.rng.below(6) as usize;
        macro_rules! scalars {
            ($variant:ident) => {
                List::$variant(
                    (0..n)
                        .map(|_| match self.scalar(kind) {
                            Value::$variant(x) => x,
                            _ => unreachable!(),
                        })
                        .collect(),
                )
            };
        }
        match kind {
            Kind::Bool => scalars!(Bool),
            Kind::Int32 | Kind::SInt32 | Kind::SFixed32 | Kind::Enum => scalars!(I32),
            Kind::Int64 | Kind::SInt64 | Kind::SFixed64 => scalars!(I64),
            Kind::UInt32 | Kind::Fixed32 => scalars!(U32),
            Kind::UInt64 | Kind::Fixed64 => scalars!(U64),
            Kind::Float => scalars!(F32),
            Kind::Double => scalars!(F64),
            Kind::String => List::Bytes(
                (0..n)
                    .map(|_| {
                        let t = self.text();
                        self.hybrid(t)
                    })
                    .collect(),
            ),
            Kind::Bytes => List::Bytes(
                (0..n)
                    .map(|_| {
                        let d = self.data();
                        self.hybrid(d)
                    })
                    .collect(),
            ),
            Kind::Message(d) => List::Messages((0..n.min(3)).map(|_| self.message(d, depth + 1)).collect()),
        }
    }

    /// A value for a singular field or a map key or value. Never the type's default (zero,
    /// `false`, empty): encoders may drop a present default, so a message built here encodes
    /// the same whichever encoder (dynamic or generated) writes it.
    fn singular<'d>(&mut self, kind: Kind<'d>, depth: u32) -> Option<Value<'d>> {
        Some(match kind {
            Kind::String => {
                let mut t = self.text();
                if t.is_empty() {
                    t.push(b'x');
                }
                Value::Bytes(self.hybrid(t))
            }
            Kind::Bytes => {
                let mut d = self.data();
                if d.is_empty() {
                    d.push(0);
                }
                Value::Bytes(self.hybrid(d))
            }
            Kind::Message(d) if depth >= 2 && !has_required(d) => return None,
            Kind::Message(d) => Value::Message(self.message(d, depth + 1)),
            k => match self.scalar(k) {
                Value::Bool(false) => Value::Bool(true),
                Value::I32(0) => Value::I32(1),
                Value::I64(0) => Value::I64(1),
                Value::U32(0) => Value::U32(1),
                Value::U64(0) => Value::U64(1),
                Value::F32(0.0) => Value::F32(1.0),
                Value::F64(0.0) => Value::F64(1.0),
                v => v,
            },
        })
    }

    /// A random message of `desc` at nesting `depth` (0 for a root).
    pub fn message<'d>(&mut self, desc: &'d MessageDesc<'d>, depth: u32) -> DynamicMessage<'d> {
        let mut m = DynamicMessage::new(desc);
        for f in desc.fields() {
            if f.label != Label::Required && !self.rng.chance(45, 100) {
                continue;
            }
            let value = match (f.label, f.kind) {
                (Label::Repeated, Kind::Message(entry)) if entry.map_entry => {
                    for _ in 0..self.rng.below(4) {
                        let (Some(k), Some(v)) = (
                            self.singular(entry.fields()[0].kind, depth),
                            self.singular(entry.fields()[1].kind, depth),
                        ) else {
                            break;
                        };
                        m.insert_map_entry(f.number, k, v).unwrap();
                    }
                    continue;
                }
                (Label::Repeated, Kind::Message(_)) if depth >= 2 => continue,
                (Label::Repeated, k) => Value::List(self.list(k, depth)),
                (_, k) => match self.singular(k, depth) {
                    Some(v) => v,
                    None => continue,
                },
            };
            m.set(f.number, value).unwrap();
        }
        m
    }
}

/// Whether a message of `desc` cannot be empty (it has a proto2 required field).
fn has_required(desc: &MessageDesc) -> bool {
    desc.fields().iter().any(|f| f.label == Label::Required)
}

/// A small private pool for tests: 1 MiB regions, at most 64 MiB.
pub fn pool() -> Pool {
    Pool::new(PoolConfig {
        region_size: 1 << 20,
        max_bytes: 64 << 20,
        ..PoolConfig::default()
    })
    .expect("a test pool")
}

/// A small shared pool (a memfd a peer can map: what the shared-memory transport sends
/// from): 2 MiB regions, at most 64 MiB, not `mlock`ed.
pub fn shared_pool() -> Pool {
    Pool::new(PoolConfig {
        shared: true,
        max_bytes: 64 << 20,
        region_size: 2 << 20,
        mlock: false,
        ..PoolConfig::default()
    })
    .expect("a shared test pool")
}

/// How long any guarded thread may take before the test fails: a deadlock guard, not a
/// performance threshold (every test finishes in a small fraction of it).
pub const DEADLINE: Duration = Duration::from_secs(20);

/// The seed for randomized tests: the environment variable `var` if set (to reproduce a
/// failure), else `default`. Printed, so that a failing run names it.
pub fn seed(var: &str, default: u64) -> u64 {
    let seed = std::env::var(var)
        .ok()
        .map(|s| s.parse().unwrap_or_else(|_| panic!("{var} must be a u64")))
        .unwrap_or(default);
    eprintln!("seed {seed} (set {var} to reproduce)");
    seed
}

fn panic_text(p: &(dyn Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic)".to_owned()
    }
}

/// A thread whose result is awaited with a deadlock guard.
pub struct Guarded<T> {
    what: String,
    rx: mpsc::Receiver<Result<T, String>>,
}

/// Runs `f` on its own thread; [`Guarded::join`] waits for it with a deadline.
pub fn spawn<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> Guarded<T> {
    let (tx, rx) = mpsc::channel();
    thread::Builder::new()
        .name(what.to_owned())
        .spawn(move || {
            let r = catch_unwind(AssertUnwindSafe(f)).map_err(|p| panic_text(&*p));
            let _ = tx.send(r);
        })
        .expect("spawn");
    Guarded {
        what: what.to_owned(),
        rx,
    }
}

impl<T> Guarded<T> {
    /// The thread's result, or its panic message; a deadlock-guard message if it does not
    /// finish by `deadline`.
    pub fn result_by(&self, deadline: Instant) -> Result<T, String> {
        match self
            .rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            Ok(r) => r.map_err(|p| format!("{} panicked: {p}", self.what)),
            Err(_) => Err(format!(
                "deadlock guard: {} did not finish within {DEADLINE:?}",
                self.what
            )),
        }
    }

    /// The thread's result; panics with its panic message, or if it does not finish within
    /// [`DEADLINE`].
    pub fn join(self) -> T {
        self.result_by(Instant::now() + DEADLINE)
            .unwrap_or_else(|e| panic!("{e}"))
    }
}

/// Runs `f` on its own thread and fails the test if it does not finish within [`DEADLINE`].
/// Panics in `f` fail the test with their message.
pub fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    spawn(what, f).join()
}
