//! FlatBuffers (`flatbuffers` 25.12) with a reused builder.
//!
//! Outgoing: `reset()` the builder (it zeroes only the bytes the last message used), copy
//! each field into a `[ubyte]` vector wrapped in a `Field` table, then the key and the root
//! `Record`. The output is `finished_data()`, a slice of the builder's own buffer.
//!
//! Decode: `root_as_record` (runs the verifier) or, as `flatbuf_unchecked`,
//! `root_as_record_unchecked` (trusts the buffer), then every field's `[ubyte]` vector.
//!
//! RPC echo ([`FlatbufCodec`]): the server verifies the request (`root_as_record`: it is a
//! peer's input) and builds the response with the same reused builder, copying each field
//! out of the request into it.

use flatbuffers::{FlatBufferBuilder, WIPOffset};

use crate::generated::record_generated::ferry_bench::{Field, FieldArgs, Record, RecordArgs, root_as_record};
use crate::systems::{Codec, Decoder, Input, Serializer, Sink};
use crate::{BenchError, Shape};

/// Builds a `Record` table with a builder and an offsets vector kept across calls.
#[derive(Default)]
pub struct FlatbufSerializer {
    builder: FlatBufferBuilder<'static>,
    field_offsets: Vec<WIPOffset<Field<'static>>>,
}

impl Serializer for FlatbufSerializer {
    fn serialize(&mut self, shape: &Shape) -> Result<&[u8], BenchError> {
        Ok(self.build(shape.key(), shape.fields().iter().map(|f| f.as_ref())))
    }
}

impl FlatbufSerializer {
    /// Builds a `Record` of `key` (none if empty) and `fields`, in the builder.
    fn build<'f>(&mut self, key: &[u8], fields: impl Iterator<Item = &'f [u8]>) -> &[u8] {
        let builder = &mut self.builder;
        builder.reset();
        self.field_offsets.clear();
        for field in fields {
            let data = builder.create_vector(field);
            let table = Field::create(builder, &FieldArgs { data: Some(data) });
            self.field_offsets.push(table);
        }
        let fields = builder.create_vector(&self.field_offsets);
        let key = (!key.is_empty()).then(|| builder.create_vector(key));
        let root = Record::create(
            builder,
            &RecordArgs {
                key,
                fields: Some(fields),
            },
        );
        builder.finish(root, None);
        builder.finished_data()
    }
}

/// Reads a `Record`; `VERIFY = false` skips the verifier (`flatbuf_unchecked`).
#[derive(Debug, Default)]
pub struct FlatbufDecoder<const VERIFY: bool> {
    /// Set by `prepare`: our own serializer's output, verified once there.
    input: Option<Vec<u8>>,
}

impl<const VERIFY: bool> FlatbufDecoder<VERIFY> {
    const fn system() -> &'static str {
        if VERIFY { "flatbuf" } else { "flatbuf_unchecked" }
    }
}

impl<const VERIFY: bool> Decoder for FlatbufDecoder<VERIFY> {
    fn prepare(&mut self, shape: &Shape) -> Result<(), BenchError> {
        let encoded = FlatbufSerializer::default().serialize(shape)?.to_vec();
        // The unchecked decoder relies on this: only verified bytes are ever stored.
        root_as_record(&encoded)?;
        self.input = Some(encoded);
        Ok(())
    }

    fn decode_and_read(&mut self, sink: &mut Sink) -> Result<(), BenchError> {
        let input = self.input.as_deref().ok_or(BenchError::NotPrepared {
            system: Self::system(),
        })?;
        let record = if VERIFY {
            root_as_record(input)?
        } else {
            unverified::root_as_record(input)
        };
        sink.key(record.key().map_or(&[][..], |k| k.bytes()));
        for field in record.fields().iter().flatten() {
            sink.field(field.data().map_or(&[][..], |d| d.bytes()));
        }
        Ok(())
    }
}

/// The crate's one unsafe call: FlatBuffers' unverified root, which is what is measured.
#[allow(unsafe_code)]
mod unverified {
    use crate::generated::record_generated::ferry_bench::{Record, root_as_record_unchecked};

    /// Reads the root of `input` without running the verifier.
    ///
    /// Only called on `FlatbufDecoder::input`, which `prepare` fills solely with bytes that
    /// `root_as_record` (the verifier) accepted and that are never mutated afterwards.
    pub(super) fn root_as_record(input: &[u8]) -> Record<'_> {
        // SAFETY: `input` passed `flatbuffers::root_as_record` in `FlatbufDecoder::prepare`
        // and has not changed since (it is only ever borrowed immutably), which is the
        // precondition `root_as_record_unchecked` documents.
        unsafe { root_as_record_unchecked(input) }
    }
}

/// Both sides of an RPC echo with FlatBuffers (see the module docs).
#[derive(Default)]
pub struct FlatbufCodec {
    serializer: FlatbufSerializer,
}

impl Codec for FlatbufCodec {
    fn encode(&mut self, shape: &Shape) -> Result<&[u8], BenchError> {
        self.serializer.serialize(shape)
    }

    fn echo(&mut self, input: Input<'_>) -> Result<&[u8], BenchError> {
        let record = root_as_record(input.bytes)?;
        let key = record.key().map_or(&[][..], |k| k.bytes());
        let fields = record.fields();
        let data = fields
            .iter()
            .flatten()
            .map(|f| f.data().map_or(&[][..], |d| d.bytes()));
        Ok(self.serializer.build(key, data))
    }

    fn read(&mut self, input: Input<'_>, read: &mut dyn FnMut(&[u8])) -> Result<(), BenchError> {
        let record = root_as_record(input.bytes)?;
        read(record.key().map_or(&[][..], |k| k.bytes()));
        for field in record.fields().iter().flatten() {
            read(field.data().map_or(&[][..], |d| d.bytes()));
        }
        Ok(())
    }
}
