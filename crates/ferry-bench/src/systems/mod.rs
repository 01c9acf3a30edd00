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
//! 2. Add `pub mod <name>;` below and one entry to [`SERIALIZERS`] (with `sweeps: true` to
//!    join the size and count sweeps) and to [`DECODERS`].
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

/// A codec in the registry.
#[derive(Debug, Clone, Copy)]
pub struct CodecEntry {
    /// The system's name (as in [`SERIALIZERS`]).
    pub name: &'static str,
    /// Makes a fresh instance with empty reusable buffers.
    pub new: fn() -> Box<dyn Codec>,
}

/// Every peer library's codec, in the order `ferry bench rpc` reports them.
pub static CODECS: &[CodecEntry] = &[
    CodecEntry {
        name: "prost",
        new: new_codec::<prost::ProstCodec>,
    },
    CodecEntry {
        name: "flatbuf",
        new: new_codec::<flatbuf::FlatbufCodec>,
    },
    CodecEntry {
        name: "capnp",
        new: new_codec::<capnp::CapnpCodec>,
    },
];

/// Looks a codec up by name.
pub fn codec(name: &str) -> Result<&'static CodecEntry, BenchError> {
    CODECS
        .iter()
        .find(|e| e.name == name)
        .ok_or_else(|| BenchError::Unknown {
            what: "codec",
            name: name.to_owned(),
            expected: names(CODECS.iter().map(|e| e.name)),
        })
}

/// A serializer in the registry.
#[derive(Debug, Clone, Copy)]
pub struct SerializerEntry {
    /// Name used as the Criterion function id and on the callgrind command line.
    pub name: &'static str,
    /// Makes a fresh instance with empty reusable buffers.
    pub new: fn() -> Box<dyn Serializer>,
    /// Whether the system also runs the field-size and field-count sweeps.
    pub sweeps: bool,
}

/// A decoder in the registry.
#[derive(Debug, Clone, Copy)]
pub struct DecoderEntry {
    /// Name used as the Criterion function id and on the callgrind command line.
    pub name: &'static str,
    /// Makes a fresh, unprepared instance.
    pub new: fn() -> Box<dyn Decoder>,
}

/// Every serializer, floor first: reports divide each row by `memcpy` of the same group.
pub static SERIALIZERS: &[SerializerEntry] = &[
    SerializerEntry {
        name: "memcpy",
        new: new_serializer::<memcpy::MemcpySerializer>,
        sweeps: true,
    },
    SerializerEntry {
        name: "prost",
        new: new_serializer::<prost::ProstSerializer>,
        sweeps: true,
    },
    SerializerEntry {
        name: "ferry_copy",
        new: ferry::FerrySerializer::<{ usize::MAX }>::boxed,
        sweeps: true,
    },
    SerializerEntry {
        name: "ferry",
        new: ferry::FerrySerializer::<{ ferry_wire_threshold() }>::boxed,
        sweeps: true,
    },
    SerializerEntry {
        name: "ferry_zc",
        new: ferry::FerrySerializer::<0>::boxed,
        sweeps: true,
    },
    SerializerEntry {
        name: "flatbuf",
        new: new_serializer::<flatbuf::FlatbufSerializer>,
        sweeps: false,
    },
    SerializerEntry {
        name: "capnp",
        new: new_serializer::<capnp::CapnpSerializer>,
        sweeps: false,
    },
    SerializerEntry {
        name: "rkyv",
        new: new_serializer::<rkyv::RkyvSerializer>,
        sweeps: false,
    },
];

/// A fresh `T` (reusable buffers empty), boxed: what a registry entry makes.
fn new_serializer<T: Serializer + Default + 'static>() -> Box<dyn Serializer> {
    Box::<T>::default()
}

/// A fresh, unprepared `T`, boxed.
fn new_decoder<T: Decoder + Default + 'static>() -> Box<dyn Decoder> {
    Box::<T>::default()
}

/// A fresh `T` (reusable buffers empty), boxed.
fn new_codec<T: Codec + Default + 'static>() -> Box<dyn Codec> {
    Box::<T>::default()
}

/// Ferry's default zero-copy threshold (the `ferry` row is the hybrid default).
const fn ferry_wire_threshold() -> usize {
    ::ferry::wire::DEFAULT_THRESHOLD
}

/// Every decoder. FlatBuffers appears twice: with its verifier and without.
pub static DECODERS: &[DecoderEntry] = &[
    DecoderEntry {
        name: "ferry",
        new: new_decoder::<ferry::FerryDecoder>,
    },
    DecoderEntry {
        name: "prost",
        new: new_decoder::<prost::ProstDecoder>,
    },
    DecoderEntry {
        name: "flatbuf",
        new: new_decoder::<flatbuf::FlatbufDecoder<true>>,
    },
    DecoderEntry {
        name: "flatbuf_unchecked",
        new: new_decoder::<flatbuf::FlatbufDecoder<false>>,
    },
    DecoderEntry {
        name: "capnp",
        new: new_decoder::<capnp::CapnpDecoder>,
    },
    DecoderEntry {
        name: "rkyv",
        new: new_decoder::<rkyv::RkyvDecoder>,
    },
];

/// Looks a serializer up by name.
pub fn serializer(name: &str) -> Result<&'static SerializerEntry, BenchError> {
    SERIALIZERS
        .iter()
        .find(|e| e.name == name)
        .ok_or_else(|| BenchError::Unknown {
            what: "serializer",
            name: name.to_owned(),
            expected: names(SERIALIZERS.iter().map(|e| e.name)),
        })
}

/// Looks a decoder up by name.
pub fn decoder(name: &str) -> Result<&'static DecoderEntry, BenchError> {
    DECODERS
        .iter()
        .find(|e| e.name == name)
        .ok_or_else(|| BenchError::Unknown {
            what: "decoder",
            name: name.to_owned(),
            expected: names(DECODERS.iter().map(|e| e.name)),
        })
}

fn names(names: impl Iterator<Item = &'static str>) -> String {
    names.collect::<Vec<_>>().join(", ")
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
            assert_eq!(codec(entry.name).unwrap().name, entry.name);
        }
        assert!(codec("memcpy").is_err());
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
            assert_eq!(serializer(entry.name).unwrap().name, entry.name);
        }
        for entry in DECODERS {
            assert_eq!(decoder(entry.name).unwrap().name, entry.name);
        }
        assert!(serializer("nope").is_err());
        assert!(decoder("memcpy").is_err());
    }
}
