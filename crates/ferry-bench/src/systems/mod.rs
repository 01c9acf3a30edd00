//! The systems under comparison, one file each, and the registry the benches loop over.
//!
//! A system is a [`Serializer`] (application buffers in, bytes ready for a socket write out)
//! and, if it can be read back, one or more [`Decoder`]s. The bench targets and the
//! callgrind binary know systems only through [`SERIALIZERS`] and [`DECODERS`].
//!
//! Who owns which buffer, per serialize call (the returned slice stays valid until the next):
//!
//! ```text
//!  application (Shape)         system (reused across calls)          caller
//!  key: Bytes ─┐               prost:   Record{Bytes..} ──encode──▶ Vec<u8>  ─▶ &[u8]
//!  field: Bytes├── borrowed ──▶ flatbuf: FlatBufferBuilder ─finish──────────────▶ &[u8]
//!  field: Bytes┘   (read)      capnp:   scratch segment ──write_message─▶ Vec<u8> ─▶ &[u8]
//!                              memcpy:  ─────────────copy───────────▶ Vec<u8>  ─▶ &[u8]
//! ```
//!
//! # Adding a system (e.g. Ferry)
//!
//! 1. Add `src/systems/<name>.rs` with a serializer and a decoder type implementing the two
//!    traits; `prepare` should encode with the module's own serializer so that the decode
//!    bench reads exactly what the serialize bench writes.
//! 2. Add `pub mod <name>;` below and one entry to [`SERIALIZERS`] (among the first
//!    [`SWEEPERS`] to join the size and count sweeps) and to [`DECODERS`].
//! 3. Add the dependency to `crates/ferry-bench/Cargo.toml`.
//!
//! `cargo test -p ferry-bench` then checks that the new system round-trips every shape, and
//! both bench targets, `ferry-callgrind list` and `run-callgrind.sh` pick it up.

use std::hint::black_box;

use ferry_buf::SharedBuf;

use crate::{BenchError, Shape};

pub mod capnp;
pub mod ferry;
pub mod flatbuf;
pub mod memcpy;
pub mod prost;
pub mod rkyv;

/// Turns a shape's application buffers into bytes ready for a socket write.
///
/// Implementations own and reuse every buffer they need (output vector, builder, scratch
/// space) across calls, the way a server reuses them across requests. The harness makes a
/// fresh instance per shape, so reused buffers size themselves to that shape.
pub trait Serializer {
    /// Serializes `shape`; the returned bytes stay valid until the next call.
    fn serialize(&mut self, shape: &Shape) -> Result<&[u8], BenchError>;

    /// Bytes of the last output that go out by reference (scatter-gather entries beside the
    /// returned bytes) instead of inside them. Zero for contiguous serializers.
    fn referenced_len(&self) -> usize {
        0
    }
}

/// Decodes one prepared message and reads every field.
pub trait Decoder {
    /// Encodes `shape` into this decoder's input buffer (untimed setup).
    fn prepare(&mut self, shape: &Shape) -> Result<(), BenchError>;

    /// Decodes the prepared input and hands the key, then every field in order, to `sink`.
    fn decode_and_read(&mut self, sink: &mut Sink) -> Result<(), BenchError>;
}

/// A peer library on both sides of an RPC echo (`ferry bench rpc`): the client encodes each
/// request from a shape and decodes the response; the server decodes each request and builds
/// the response with the library. Buffers (output vector, builder, scratch) are reused across
/// calls, as a server would reuse them; the returned bytes stay valid until the next call.
pub trait Codec {
    /// Serializes `shape`: the client's request.
    fn encode(&mut self, shape: &Shape) -> Result<&[u8], BenchError>;

    /// Decodes `input` and serializes a message with the same key and fields: the server's
    /// response.
    fn echo(&mut self, input: Input<'_>) -> Result<&[u8], BenchError>;

    /// Decodes `input` and hands its key (empty if none), then every field in order, to
    /// `read`.
    fn read(&mut self, input: Input<'_>, read: &mut dyn FnMut(&[u8])) -> Result<(), BenchError>;
}

/// Bytes as a transport received them, and the counted pool buffer that holds them where the
/// transport has one (TCP), so that a library able to slice counted buffers (prost's `Bytes`
/// fields) need not copy. Without it (shared memory: the peer's memory, borrowed), such a
/// library copies what it keeps.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    /// The received payload.
    pub bytes: &'a [u8],
    /// The pool buffer that `bytes` is, if any.
    pub shared: Option<&'a SharedBuf>,
}

impl<'a> Input<'a> {
    /// Bytes with no counted buffer behind them.
    pub fn bytes(bytes: &'a [u8]) -> Self {
        Input { bytes, shared: None }
    }
}

/// A system in a registry: its name (the Criterion function id, and the callgrind command
/// line's) and a maker of fresh instances with empty reusable buffers.
#[derive(Debug)]
pub struct Entry<T: ?Sized> {
    /// The system's name.
    pub name: &'static str,
    /// Makes a fresh instance.
    pub new: fn() -> Box<T>,
}

/// Every peer library's codec, in the order `ferry bench rpc` reports them.
pub static CODECS: &[Entry<dyn Codec>] = &[
    Entry {
        name: "prost",
        new: || Box::new(prost::ProstCodec::default()),
    },
    Entry {
        name: "flatbuf",
        new: || Box::new(flatbuf::FlatbufCodec::default()),
    },
    Entry {
        name: "capnp",
        new: || Box::new(capnp::CapnpCodec::default()),
    },
];

/// Every serializer, floor first: reports divide each row by `memcpy` of the same group. The
/// first [`SWEEPERS`] also run the field-size and field-count sweeps.
pub static SERIALIZERS: &[Entry<dyn Serializer>] = &[
    Entry {
        name: "memcpy",
        new: || Box::new(memcpy::MemcpySerializer::default()),
    },
    Entry {
        name: "prost",
        new: || Box::new(prost::ProstSerializer::default()),
    },
    Entry {
        name: "ferry_copy",
        new: ferry::FerrySerializer::<{ usize::MAX }>::boxed,
    },
    Entry {
        name: "ferry",
        new: ferry::FerrySerializer::<{ ::ferry::wire::DEFAULT_THRESHOLD }>::boxed,
    },
    Entry {
        name: "ferry_zc",
        new: ferry::FerrySerializer::<0>::boxed,
    },
    Entry {
        name: "flatbuf",
        new: || Box::new(flatbuf::FlatbufSerializer::default()),
    },
    Entry {
        name: "capnp",
        new: || Box::new(capnp::CapnpSerializer::default()),
    },
    Entry {
        name: "rkyv",
        new: || Box::new(rkyv::RkyvSerializer::default()),
    },
];

/// How many of [`SERIALIZERS`], from the first, run the sweeps.
pub const SWEEPERS: usize = 5;

/// Every decoder. FlatBuffers appears twice: with its verifier and without.
pub static DECODERS: &[Entry<dyn Decoder>] = &[
    Entry {
        name: "ferry",
        new: || Box::new(ferry::FerryDecoder::default()),
    },
    Entry {
        name: "prost",
        new: || Box::new(prost::ProstDecoder::default()),
    },
    Entry {
        name: "flatbuf",
        new: || Box::new(flatbuf::FlatbufDecoder::<true>::default()),
    },
    Entry {
        name: "flatbuf_unchecked",
        new: || Box::new(flatbuf::FlatbufDecoder::<false>::default()),
    },
    Entry {
        name: "capnp",
        new: || Box::new(capnp::CapnpDecoder::default()),
    },
    Entry {
        name: "rkyv",
        new: || Box::new(rkyv::RkyvDecoder::default()),
    },
];

/// The entry of `registry` named `name` (`what` names the registry in the error).
pub fn find<T: ?Sized>(
    what: &'static str,
    registry: &'static [Entry<T>],
    name: &str,
) -> Result<&'static Entry<T>, BenchError> {
    registry
        .iter()
        .find(|e| e.name == name)
        .ok_or_else(|| BenchError::Unknown {
            what,
            name: name.to_owned(),
            expected: registry.iter().map(|e| e.name).collect::<Vec<_>>().join(", "),
        })
}

/// Where a decoder puts what it read.
///
/// "Reading a field" means obtaining its `&[u8]` (pointer and length, after whatever
/// offset-following and bounds checks the format does) and passing it through
/// [`black_box`]; the field's bytes are not scanned, since that costs the same for every
/// system. In recording mode (tests) the fields are also copied out for comparison.
#[derive(Debug, Default)]
pub struct Sink {
    bytes_read: usize,
    recorded: Option<Recorded>,
}

/// Key and fields copied out by a recording [`Sink`].
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// The key; empty if the message had none.
    pub key: Vec<u8>,
    /// The fields, in order.
    pub fields: Vec<Vec<u8>>,
}

impl Sink {
    /// A sink for timing: counts bytes, keeps nothing.
    pub fn counting() -> Self {
        Self::default()
    }

    /// A sink for tests: also copies the key and fields out.
    pub fn recording() -> Self {
        Self {
            bytes_read: 0,
            recorded: Some(Recorded::default()),
        }
    }

    /// Reads the key (empty if the message has none).
    #[inline]
    pub fn key(&mut self, key: &[u8]) {
        self.bytes_read += black_box(key).len();
        if let Some(r) = &mut self.recorded {
            r.key = key.to_vec();
        }
    }

    /// Reads the next field.
    #[inline]
    pub fn field(&mut self, field: &[u8]) {
        self.bytes_read += black_box(field).len();
        if let Some(r) = &mut self.recorded {
            r.fields.push(field.to_vec());
        }
    }

    /// Total key and field bytes seen since the sink was made.
    pub fn bytes_read(&self) -> usize {
        self.bytes_read
    }

    /// What a recording sink copied out; `None` for a counting sink.
    pub fn into_recorded(self) -> Option<Recorded> {
        self.recorded
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shapes() -> Vec<Shape> {
        let mut shapes = Shape::headline();
        shapes.extend(Shape::size_sweep());
        shapes.extend(Shape::count_sweep());
        shapes
    }

    fn expected(shape: &Shape) -> Recorded {
        Recorded {
            key: shape.key().to_vec(),
            fields: shape.fields().iter().map(|f| f.to_vec()).collect(),
        }
    }

    #[test]
    fn every_decoder_reads_back_every_shape() {
        for entry in DECODERS {
            for shape in shapes() {
                let mut decoder = (entry.new)();
                decoder.prepare(&shape).unwrap();
                // Twice: the second pass catches state wrongly carried between calls.
                for _ in 0..2 {
                    let mut sink = Sink::recording();
                    decoder.decode_and_read(&mut sink).unwrap();
                    assert_eq!(sink.bytes_read(), shape.payload_len());
                    let got = sink.into_recorded().unwrap();
                    assert!(got == expected(&shape), "{} / {}", entry.name, shape.name());
                }
            }
        }
    }

    #[test]
    fn serializers_are_stable_across_reuse() {
        // Reused builders and scratch space must give the same bytes on every call,
        // including after a larger message has been built with them.
        for entry in SERIALIZERS {
            let mut serializer = (entry.new)();
            let small = Shape::by_name("muser").unwrap();
            let large = Shape::by_name("kv8k").unwrap();
            let first = serializer.serialize(&small).unwrap().to_vec();
            serializer.serialize(&large).unwrap();
            let again = serializer.serialize(&small).unwrap().to_vec();
            assert_eq!(first, again, "{}", entry.name);
            serializer.serialize(&small).unwrap();
            let referenced = serializer.referenced_len();
            assert!(first.len() + referenced >= small.payload_len(), "{}", entry.name);
        }
    }

    #[test]
    fn every_codec_echoes_what_it_reads() {
        for entry in CODECS {
            let mut client = (entry.new)();
            let mut server = (entry.new)();
            for shape in shapes() {
                // Twice: reused buffers must not carry state between calls.
                for _ in 0..2 {
                    let request = client.encode(&shape).unwrap().to_vec();
                    let response = server.echo(Input::bytes(&request)).unwrap().to_vec();
                    let mut got = Recorded::default();
                    let mut first = true;
                    client
                        .read(Input::bytes(&response), &mut |b| {
                            if std::mem::take(&mut first) {
                                got.key = b.to_vec();
                            } else {
                                got.fields.push(b.to_vec());
                            }
                        })
                        .unwrap();
                    assert!(got == expected(&shape), "{} / {}", entry.name, shape.name());
                }
            }
            assert_eq!(find("codec", CODECS, entry.name).unwrap().name, entry.name);
        }
        assert!(find("codec", CODECS, "memcpy").is_err());
    }

    #[test]
    fn codecs_read_from_counted_and_unaligned_buffers() {
        let pool = ferry_buf::Pool::new(ferry_buf::PoolConfig::default()).unwrap();
        let shape = Shape::by_name("echo").unwrap();
        for entry in CODECS {
            let mut codec = (entry.new)();
            let encoded = codec.encode(&shape).unwrap().to_vec();
            // In a pool buffer (as TCP receives it), and one byte off 8-byte alignment.
            let shared = pool.copy_from(&encoded).unwrap();
            let mut unaligned = vec![0u8; encoded.len() + 1];
            unaligned[1..].copy_from_slice(&encoded);
            for input in [
                Input {
                    bytes: &shared,
                    shared: Some(&shared),
                },
                Input::bytes(&unaligned[1..]),
            ] {
                let mut fields = 0;
                codec
                    .read(input, &mut |b| fields += usize::from(!b.is_empty()))
                    .unwrap();
                assert_eq!(fields, 2, "{}", entry.name);
                let echoed = codec.echo(input).unwrap().to_vec();
                assert_eq!(echoed, encoded, "{}", entry.name);
            }
        }
    }

    #[test]
    fn decoders_refuse_to_run_unprepared() {
        for entry in DECODERS {
            let err = (entry.new)().decode_and_read(&mut Sink::counting());
            assert!(
                matches!(err, Err(BenchError::NotPrepared { .. })),
                "{}",
                entry.name
            );
        }
    }

    #[test]
    fn registry_names_are_unique_and_resolve() {
        for entry in SERIALIZERS {
            assert_eq!(
                find("serializer", SERIALIZERS, entry.name).unwrap().name,
                entry.name
            );
        }
        for entry in DECODERS {
            assert_eq!(find("decoder", DECODERS, entry.name).unwrap().name, entry.name);
        }
        assert!(find("serializer", SERIALIZERS, "nope").is_err());
        assert!(find("decoder", DECODERS, "memcpy").is_err());
    }
}
