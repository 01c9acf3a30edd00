//! Benchmark shapes: an optional key plus a list of opaque byte fields.
//!
//! Application data lives where a server would hold it: every key and field value is its
//! own heap allocation (`bytes::Bytes`), made once up front, outside any timed loop. A
//! serializer reads these buffers; none of them is owned by the serializer.
//!
//! Shape names are shared by the Criterion groups (`serialize/<shape>`, `decode/<shape>`)
//! and the `ferry-callgrind` command line:
//!
//! | name        | key   | fields            | source (`shared/workloads.md`)                        |
//! |-------------|-------|-------------------|-------------------------------------------------------|
//! | `muser`     | 24 B  | 10 x 100 B        | "muSer table 1 shape"                                 |
//! | `echo`      | none  | 2 x 2048 B        | "YCSB-C": values of 2 x 2048 B (mget-2, lrange-2)     |
//! | `kv8k`      | 64 B  | 1 x 8192 B        | `platform.md` peer table; 64-byte keys as in Cornflakes |
//! | `google16`  | 64 B  | 16, Google sizes  | "Google protobuf `bytes` field sizes": 16 sizes drawn once (seed [`GOOGLE_SEED`]) |
//! | `google16-copied` | 64 B | the 15 below 512 B | `google16` without the field Ferry's hybrid rule references: the memcpy floor of its copied bytes |
//! | `size-<n>`  | none  | 1 x n B           | "YCSB-C" threshold study: N buffers of size S         |
//! | `count-<n>` | none  | n x 512 B         | same; 512 B covers ~94.9 % of Google `bytes` fields   |
//!
//! The sweeps carry no key so that they measure the per-field cost alone.

use bytes::Bytes;

use crate::BenchError;
use crate::kv::workload::dist::{Stream, rng};
use crate::kv::workload::google::{self, DEFAULT_MAX_FIELD, field_sizes};

/// `n` field sizes drawn from the Google table with [`GOOGLE_SEED`].
fn google_field_sizes(n: usize) -> Vec<usize> {
    let sizes = field_sizes(DEFAULT_MAX_FIELD).expect("the default table is valid");
    let mut rng = rng(GOOGLE_SEED, Stream::Objects);
    (0..n).map(|_| sizes.sample(&mut rng) as usize).collect()
}

/// The shapes every system is compared on, in report order.
pub const HEADLINE: [&str; 4] = ["muser", "echo", "kv8k", "google16"];

/// Seed of the `google16` shape's field sizes: drawn once from the Google table (the key-value
/// workload's sampler, [`field_sizes`]), so every run and every system sees the same 16 sizes.
/// It is the first seed whose draw holds a field above the 512 B zero-copy threshold (seeds 1
/// and 2 draw none; 56 % of 16-field draws hold one): 64 B key, 15 fields of 5-354 B and one
/// of 3,400 B, 4,566 B in all.
pub const GOOGLE_SEED: u64 = 3;

/// Shapes that only the memcpy floor runs: the bytes a hybrid Ferry message of a headline shape
/// copies (`google16`'s target is relative to them, issue 11).
pub const COPY_FLOORS: [&str; 1] = ["google16-copied"];

/// Field sizes of the one-field size sweep (`size-<n>`).
pub const SWEEP_FIELD_SIZES: [usize; 6] = [64, 256, 1024, 4096, 16 * 1024, 64 * 1024];

/// Field counts of the count sweep (`count-<n>`), each field [`SWEEP_COUNT_FIELD_LEN`] bytes.
pub const SWEEP_FIELD_COUNTS: [usize; 5] = [1, 2, 4, 8, 16];

/// Field length used by the count sweep.
pub const SWEEP_COUNT_FIELD_LEN: usize = 512;

/// One message's worth of application data, held in separately allocated buffers.
#[derive(Debug, Clone)]
pub struct Shape {
    name: String,
    key: Bytes,
    fields: Vec<Bytes>,
}

impl Shape {
    /// Builds a shape with a key of `key_len` bytes (0 = no key) and one field per entry of
    /// `field_lens`. Contents are deterministic pseudo-random bytes.
    pub fn new(name: impl Into<String>, key_len: usize, field_lens: &[usize]) -> Self {
        let name = name.into();
        let mut rng = XorShift::seeded(&name);
        let key = app_buffer(&mut rng, key_len);
        let fields = field_lens.iter().map(|&len| app_buffer(&mut rng, len)).collect();
        Self { name, key, fields }
    }

    /// Looks a shape up by name: one of [`HEADLINE`], `size-<n>` or `count-<n>`
    /// (any `n` is accepted, not only the sweep points).
    pub fn by_name(name: &str) -> Result<Self, BenchError> {
        let unknown = || BenchError::Unknown {
            what: "shape",
            name: name.to_owned(),
            expected: "muser, echo, kv8k, google16, size-<bytes>, count-<fields>".to_owned(),
        };
        let shape = match name {
            "muser" => Self::new(name, 24, &[100; 10]),
            "echo" => Self::new(name, 0, &[2048; 2]),
            "kv8k" => Self::new(name, 64, &[8192]),
            "google16" => Self::new(name, google::KEY_LEN, &google_field_sizes(16)),
            "google16-copied" => {
                let copied: Vec<usize> = google_field_sizes(16)
                    .into_iter()
                    .filter(|&len| len < ferry::wire::DEFAULT_THRESHOLD)
                    .collect();
                Self::new(name, google::KEY_LEN, &copied)
            }
            _ => {
                let (kind, n) = name.split_once('-').ok_or_else(unknown)?;
                let n: usize = n.parse().map_err(|_| unknown())?;
                match kind {
                    "size" => Self::new(name, 0, &[n]),
                    "count" => Self::new(name, 0, &vec![SWEEP_COUNT_FIELD_LEN; n]),
                    _ => return Err(unknown()),
                }
            }
        };
        Ok(shape)
    }

    /// A shape of the given key and fields, as they are (no copy): for benchmarks whose
    /// values carry a known pattern that their peer checks.
    pub fn from_parts(name: impl Into<String>, key: Bytes, fields: Vec<Bytes>) -> Self {
        Self {
            name: name.into(),
            key,
            fields,
        }
    }

    /// The headline shapes, in [`HEADLINE`] order.
    pub fn headline() -> Vec<Self> {
        HEADLINE
            .map(|n| Self::by_name(n).expect("headline shape names are valid"))
            .to_vec()
    }

    /// The copy floors, in [`COPY_FLOORS`] order.
    pub fn copy_floors() -> Vec<Self> {
        COPY_FLOORS
            .map(|n| Self::by_name(n).expect("floor shape names are valid"))
            .to_vec()
    }

    /// The one-field size sweep, in [`SWEEP_FIELD_SIZES`] order.
    pub fn size_sweep() -> Vec<Self> {
        SWEEP_FIELD_SIZES
            .map(|n| Self::new(format!("size-{n}"), 0, &[n]))
            .to_vec()
    }

    /// The field-count sweep, in [`SWEEP_FIELD_COUNTS`] order.
    pub fn count_sweep() -> Vec<Self> {
        let shape = |n| Self::new(format!("count-{n}"), 0, &vec![SWEEP_COUNT_FIELD_LEN; n]);
        SWEEP_FIELD_COUNTS.map(shape).to_vec()
    }

    /// The shape's name, as used in benchmark ids and on the command line.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The key; empty means the message has no key.
    pub fn key(&self) -> &Bytes {
        &self.key
    }

    /// The data fields, in order.
    pub fn fields(&self) -> &[Bytes] {
        &self.fields
    }

    /// Key plus field bytes: what the memcpy floor copies and what Criterion's throughput
    /// figures are based on.
    pub fn payload_len(&self) -> usize {
        self.key.len() + self.fields.iter().map(Bytes::len).sum::<usize>()
    }
}

/// One application buffer of `len` bytes in its own allocation.
fn app_buffer(rng: &mut XorShift, len: usize) -> Bytes {
    let data: Vec<u8> = (0..len).map(|_| rng.next_byte()).collect();
    let buffer = Bytes::from(data);
    // `Bytes::from(Vec)` starts in a "promotable" state whose first clone allocates the
    // shared refcount. Pay that once here rather than inside the first timed iteration.
    drop(buffer.clone());
    buffer
}

/// Tiny deterministic generator, so runs and callgrind counts are reproducible.
struct XorShift(u64);

impl XorShift {
    fn seeded(name: &str) -> Self {
        // FNV-1a of the name; `| 1` keeps the state non-zero.
        let seed = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        Self(seed | 1)
    }

    fn next_byte(&mut self) -> u8 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0.to_le_bytes()[0]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headline_shapes_match_workloads_md() {
        let [muser, echo, kv8k, google16] = <[Shape; 4]>::try_from(Shape::headline()).unwrap();
        assert_eq!((muser.key().len(), muser.fields().len()), (24, 10));
        assert!(muser.fields().iter().all(|f| f.len() == 100));
        assert_eq!(muser.payload_len(), 1024);
        assert_eq!((echo.key().len(), echo.payload_len()), (0, 4096));
        assert_eq!((kv8k.key().len(), kv8k.payload_len()), (64, 64 + 8192));
        assert_eq!((google16.key().len(), google16.fields().len()), (64, 16));
        let sizes: Vec<usize> = google16.fields().iter().map(Bytes::len).collect();
        eprintln!("google16 field sizes: {sizes:?}");
        assert_eq!(sizes, google_field_sizes(16), "drawn again, the same sizes");
        assert_eq!(google16.payload_len(), 4566, "the sizes GOOGLE_SEED's doc names");
        assert_eq!(sizes.iter().filter(|&&s| s > 512).count(), 1);
        let [copied] = <[Shape; 1]>::try_from(Shape::copy_floors()).unwrap();
        assert_eq!((copied.fields().len(), copied.payload_len()), (15, 4566 - 3400));
    }

    #[test]
    fn every_field_is_its_own_allocation() {
        let shape = Shape::by_name("count-4").unwrap();
        let mut ptrs: Vec<_> = shape.fields().iter().map(|f| f.as_ptr()).collect();
        ptrs.dedup();
        assert_eq!(ptrs.len(), 4);
    }

    #[test]
    fn sweep_names_round_trip_through_by_name() {
        for shape in Shape::size_sweep().into_iter().chain(Shape::count_sweep()) {
            let again = Shape::by_name(shape.name()).unwrap();
            assert_eq!(again.fields(), shape.fields());
        }
    }

    #[test]
    fn unknown_shape_names_are_errors() {
        for bad in ["", "mu", "size-", "size-x", "count", "blob-3"] {
            assert!(Shape::by_name(bad).is_err(), "{bad:?} accepted");
        }
    }
}
