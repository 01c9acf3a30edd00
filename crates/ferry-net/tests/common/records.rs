//! Random [`Record`]s with zero-copy fields, as plain specs: generated from a seed (so a peer
//! in another process regenerates the same ones), built into messages on the sending side, and
//! checked byte for byte on the receiving side.

use ferry_buf::{Pool, SharedBuf};
use ferry_net::{Connection, Frame, Meta, Mode, TransportError, auto};
use ferry_wire::Message as _;
use ferry_wire::hybrid::DEFAULT_THRESHOLD;
use ferry_wire::sample::Record;
use ferry_wire::{Context, Outgoing};

use super::Rng;

/// Where a value lives when the message is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// An ordinary heap `Vec`: always copied.
    Heap,
    /// A pool buffer, set by slice (`&buf[..]`): referenced if at least the threshold.
    PoolBorrowed,
    /// A pool buffer, set by value (`SharedBuf`): referenced if at least the threshold.
    PoolOwned,
}

/// One bytes value of a record.
#[derive(Debug, Clone)]
pub struct ValueSpec {
    /// Its bytes.
    pub data: Vec<u8>,
    /// Where it lives.
    pub source: Source,
}

impl ValueSpec {
    /// Whether the hybrid rule makes it a zero-copy reference: pool-resident and at least
    /// [`DEFAULT_THRESHOLD`] (512) bytes.
    pub fn zero_copy(&self) -> bool {
        self.source != Source::Heap && self.data.len() >= DEFAULT_THRESHOLD
    }
}

/// A record to send: frame metadata, key, fields.
#[derive(Debug, Clone)]
pub struct RecordSpec {
    /// Kind, flags, request id.
    pub meta: Meta,
    /// The key.
    pub key: ValueSpec,
    /// The repeated field.
    pub fields: Vec<ValueSpec>,
}

/// A random value: sizes below, at and above the 512-byte threshold, up to `max` bytes.
pub fn random_value(rng: &mut Rng, max: usize) -> ValueSpec {
    let len = match rng.range(0, 20) {
        0..=6 => rng.range(0, DEFAULT_THRESHOLD),
        7 | 8 => rng.pick(&[DEFAULT_THRESHOLD - 1, DEFAULT_THRESHOLD, DEFAULT_THRESHOLD + 1]),
        9..=16 => rng.range(DEFAULT_THRESHOLD + 1, 20_000),
        _ => rng.range(20_000, 300_000),
    }
    .min(max);
    let source = match rng.range(0, 5) {
        0 => Source::Heap,
        1 | 2 => Source::PoolBorrowed,
        _ => Source::PoolOwned,
    };
    ValueSpec {
        data: rng.bytes(len),
        source,
    }
}

/// A random record of at most about 1.5 MiB.
pub fn random_record(rng: &mut Rng) -> RecordSpec {
    let meta = Meta {
        kind: rng.u64() as u16,
        flags: rng.u64() as u8,
        request_id: rng.u64(),
    };
    let key = if rng.chance(3, 5) {
        let len = rng.range(0, 64);
        ValueSpec {
            data: rng.bytes(len),
            source: Source::Heap,
        }
    } else {
        random_value(rng, 64 << 10)
    };
    let mut budget: usize = 1536 << 10;
    let mut fields = Vec::new();
    for _ in 0..rng.range(0, 11) {
        let v = random_value(rng, budget);
        budget -= v.data.len();
        fields.push(v);
    }
    RecordSpec { meta, key, fields }
}

/// `n` random records from `seed`.
pub fn records(seed: u64, n: usize) -> Vec<RecordSpec> {
    let mut rng = Rng::new(seed);
    (0..n).map(|_| random_record(&mut rng)).collect()
}

/// The pool buffers of a spec's values (key first), `None` for heap values.
pub fn place(spec: &RecordSpec, pool: &Pool) -> Vec<Option<SharedBuf>> {
    std::iter::once(&spec.key)
        .chain(&spec.fields)
        .map(|v| match v.source {
            Source::Heap => None,
            _ => Some(pool.copy_from(&v.data).expect("pool value")),
        })
        .collect()
}

/// Builds the message for `spec`, its pool values taken from `placed` (see [`place`]).
pub fn build<'a>(spec: &'a RecordSpec, placed: &'a [Option<SharedBuf>], ctx: &'a Context) -> Record<'a> {
    let mut rec = Record::new(ctx);
    let values = std::iter::once(&spec.key).chain(&spec.fields);
    for (i, (v, buf)) in values.zip(placed).enumerate() {
        let hybrid = match (v.source, buf) {
            (Source::Heap, _) => ferry_wire::HybridBytes::new(&v.data, ctx),
            (Source::PoolBorrowed, Some(b)) => ferry_wire::HybridBytes::new(&b[..], ctx),
            (Source::PoolOwned, Some(b)) => ferry_wire::HybridBytes::from_shared(b.clone(), ctx),
            _ => unreachable!("place() puts pool values in the pool"),
        };
        assert_eq!(
            hybrid.is_zero_copy(),
            v.zero_copy(),
            "hybrid rule for a {:?} value of {} bytes",
            v.source,
            v.data.len()
        );
        if i == 0 {
            rec.set_key(hybrid);
        } else {
            rec.append_field(hybrid);
        }
    }
    rec
}

/// Zero-copy value bytes a sender in `mode` should reference (gather) and copy, for messages
/// of these layouts (see `Sender::send` and [`auto`]).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    /// Bytes posted as gather entries.
    pub referenced: u64,
    /// Bytes copied into staging.
    pub copied: u64,
}

impl Placement {
    /// Adds one message of `layout` sent in `mode` (the effective mode).
    pub fn add(&mut self, mode: Mode, layout: &ferry_wire::Layout) {
        let gather = match mode {
            Mode::Copy => false,
            Mode::Gather | Mode::ZeroCopy | Mode::Uring => true,
            Mode::Auto => layout
                .zero_copy_len
                .checked_div(layout.zero_copy_count)
                .is_some_and(|avg| avg >= auto::GATHER_MIN_VALUE),
        };
        if gather {
            self.referenced += layout.zero_copy_len as u64;
        } else {
            self.copied += layout.zero_copy_len as u64;
        }
    }
}

/// Sends every spec on `conn`, building each message from fresh pool values that are dropped
/// right after `send` (so only the connection keeps them alive). Returns where the zero-copy
/// bytes should have gone, and the wire bytes (headers included).
pub fn send_all(
    conn: &mut Connection,
    pool: &Pool,
    specs: &[RecordSpec],
) -> Result<(Placement, u64), TransportError> {
    let ctx = Context::new(pool.clone());
    let mut placement = Placement::default();
    let mut wire = 0;
    for spec in specs {
        let placed = place(spec, pool);
        let rec = build(spec, &placed, &ctx);
        let layout = rec.layout();
        let zc: usize = std::iter::once(&spec.key)
            .chain(&spec.fields)
            .filter(|v| v.zero_copy())
            .map(|v| v.data.len())
            .sum();
        assert_eq!(layout.zero_copy_len, zc, "layout agrees with the hybrid rule");
        placement.add(conn.mode(), &layout);
        wire += (ferry_net::frame::HEADER_LEN + layout.total_len()) as u64;
        conn.send(spec.meta, &rec)?;
    }
    Ok((placement, wire))
}

/// Checks a received frame against `spec`: metadata, key and every field, byte for byte.
pub fn check(spec: &RecordSpec, frame: &Frame, index: usize) {
    assert_eq!(frame.meta(), spec.meta, "frame {index}: metadata");
    let view = Record::decode_shared(frame.payload())
        .unwrap_or_else(|e| panic!("frame {index}: does not decode: {e}"));
    assert!(view.key() == &spec.key.data[..], "frame {index}: key differs");
    let fields = view.fields();
    assert_eq!(fields.len(), spec.fields.len(), "frame {index}: field count");
    for (j, want) in spec.fields.iter().enumerate() {
        let got = fields.get(j).expect("in range");
        assert!(
            got == &want.data[..],
            "frame {index}: field {j} ({} bytes, {:?}) differs",
            want.data.len(),
            want.source
        );
    }
}

/// Receives `specs.len()` frames on `conn` and checks each; then expects a clean end of
/// stream ([`TransportError::Closed`]) once the peer is gone. Returns the bytes received.
pub fn receive_all(conn: &mut Connection, specs: &[RecordSpec]) -> u64 {
    for (i, spec) in specs.iter().enumerate() {
        let frame = conn
            .recv()
            .unwrap_or_else(|e| panic!("recv frame {i} of {}: {e}", specs.len()));
        check(spec, &frame, i);
    }
    match conn.recv() {
        Err(TransportError::Closed) => {}
        other => panic!("after the last frame: expected Closed, got {other:?}"),
    }
    conn.stats().recv.bytes
}
