//! Cap'n Proto (`capnp` 0.27) with reused scratch space.
//!
//! Outgoing: a `message::Builder` over a `ScratchSpaceHeapAllocator` that lives as long as
//! the serializer, so every message is built in the same (already zeroed) first segment and
//! only the words it used are re-zeroed when the builder is dropped. The output is
//! `serialize::write_message` (segment table + segments) into a reused `Vec<u8>`: one
//! contiguous buffer like the other systems, which costs one copy of the segment compared
//! to handing `get_segments_for_output()` slices to `writev`.
//!
//! Decode: `read_message_from_flat_slice_no_alloc` over a word-aligned input (no copy, no
//! allocation), then `get_root` and every field.
//!
//! RPC echo ([`CapnpCodec`]): the server reads the request in place when it is word-aligned
//! (else it first copies it into a reused word buffer, as capnp's stream reader would) and
//! builds the response in the reused scratch space, copying each field into it, then frames
//! it into the reused output vector.

use capnp::Word;
use capnp::message::{ReaderOptions, ScratchSpaceHeapAllocator};

use crate::generated::record_capnp::record;
use crate::systems::{Codec, Decoder, Input, Serializer, Sink};
use crate::{BenchError, Shape};

/// Words of scratch space: a 64 KiB field plus framing fits in the first segment, so no
/// shape the benches use spills into heap segments.
const SCRATCH_WORDS: usize = (64 + 4) * 1024 / 8;

/// Builds each message in scratch space reused across calls.
pub struct CapnpSerializer {
    allocator: ScratchSpaceHeapAllocator<'static>,
    out: Vec<u8>,
}

impl Default for CapnpSerializer {
    fn default() -> Self {
        // The allocator borrows its scratch for its whole life, and the serializer owns the
        // allocator, so the scratch is leaked: 68 KiB once per instance, a handful of
        // instances per benchmark process. Reuse is the point, so this is not per message.
        let scratch: &'static mut [Word] =
            Box::leak(Word::allocate_zeroed_vec(SCRATCH_WORDS).into_boxed_slice());
        Self {
            allocator: ScratchSpaceHeapAllocator::new(Word::words_to_bytes_mut(scratch)),
            out: Vec::new(),
        }
    }
}

impl Serializer for CapnpSerializer {
    fn serialize(&mut self, shape: &Shape) -> Result<&[u8], BenchError> {
        let fields = shape.fields();
        self.build(shape.key(), fields.len(), fields.iter().map(|f| Ok(f.as_ref())))
    }
}

impl CapnpSerializer {
    /// Builds and frames a `Record` of `key` (none if empty) and the `count` `fields`.
    fn build<'f>(
        &mut self,
        key: &[u8],
        count: usize,
        fields: impl Iterator<Item = Result<&'f [u8], BenchError>>,
    ) -> Result<&[u8], BenchError> {
        let count = u32::try_from(count).map_err(|_| BenchError::TooManyFields {
            system: "capnp",
            fields: count,
        })?;
        let mut message = capnp::message::Builder::new(&mut self.allocator);
        let mut root = message.init_root::<record::Builder<'_>>();
        if !key.is_empty() {
            root.set_key(key);
        }
        let mut list = root.init_fields(count);
        for (index, field) in (0..count).zip(fields) {
            list.set(index, field?);
        }
        self.out.clear();
        capnp::serialize::write_message(&mut self.out, &message)?;
        Ok(&self.out)
    }
}

/// Reads a framed message in place from a word-aligned buffer.
#[derive(Debug, Default)]
pub struct CapnpDecoder {
    /// Words, not bytes, so the input is 8-byte aligned as capnp requires.
    input: Option<Vec<Word>>,
}

impl Decoder for CapnpDecoder {
    fn prepare(&mut self, shape: &Shape) -> Result<(), BenchError> {
        let encoded = CapnpSerializer::default().serialize(shape)?.to_vec();
        let mut words = Word::allocate_zeroed_vec(encoded.len().div_ceil(8));
        Word::words_to_bytes_mut(&mut words)[..encoded.len()].copy_from_slice(&encoded);
        self.input = Some(words);
        Ok(())
    }

    fn decode_and_read(&mut self, sink: &mut Sink) -> Result<(), BenchError> {
        let words = self
            .input
            .as_deref()
            .ok_or(BenchError::NotPrepared { system: "capnp" })?;
        let mut input = Word::words_to_bytes(words);
        let message =
            capnp::serialize::read_message_from_flat_slice_no_alloc(&mut input, ReaderOptions::new())?;
        let root = message.get_root::<record::Reader<'_>>()?;
        sink.key(root.get_key()?);
        for field in root.get_fields()?.iter() {
            sink.field(field?);
        }
        Ok(())
    }
}

/// Both sides of an RPC echo with Cap'n Proto (see the module docs).
#[derive(Default)]
pub struct CapnpCodec {
    serializer: CapnpSerializer,
    /// Where a request that is not word-aligned is copied before it is read.
    aligned: Vec<Word>,
}

/// `bytes` if word-aligned, else a copy of it in `scratch`.
pub(crate) fn words<'a>(bytes: &'a [u8], scratch: &'a mut Vec<Word>) -> &'a [u8] {
    if bytes.as_ptr().align_offset(8) == 0 {
        return bytes;
    }
    scratch.clear();
    scratch.resize(bytes.len().div_ceil(8), capnp::word(0, 0, 0, 0, 0, 0, 0, 0));
    let out = &mut Word::words_to_bytes_mut(scratch)[..bytes.len()];
    out.copy_from_slice(bytes);
    out
}

impl Codec for CapnpCodec {
    fn encode(&mut self, shape: &Shape) -> Result<&[u8], BenchError> {
        self.serializer.serialize(shape)
    }

    fn echo(&mut self, input: Input<'_>) -> Result<&[u8], BenchError> {
        let CapnpCodec { serializer, aligned } = self;
        let mut bytes = words(input.bytes, aligned);
        let message =
            capnp::serialize::read_message_from_flat_slice_no_alloc(&mut bytes, ReaderOptions::new())?;
        let root = message.get_root::<record::Reader<'_>>()?;
        let key = if root.has_key() { root.get_key()? } else { &[] };
        let fields = root.get_fields()?;
        serializer.build(key, fields.len() as usize, fields.iter().map(|f| Ok(f?)))
    }

    fn read(&mut self, input: Input<'_>, read: &mut dyn FnMut(&[u8])) -> Result<(), BenchError> {
        let mut bytes = words(input.bytes, &mut self.aligned);
        let message =
            capnp::serialize::read_message_from_flat_slice_no_alloc(&mut bytes, ReaderOptions::new())?;
        let root = message.get_root::<record::Reader<'_>>()?;
        read(root.get_key()?);
        for field in root.get_fields()?.iter() {
            read(field?);
        }
        Ok(())
    }
}
