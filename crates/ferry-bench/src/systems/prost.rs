//! prost 0.14 with `bytes::Bytes` fields (`prost-build` `.bytes(["."])`).
//!
//! Outgoing: the message struct is reused; each call points its fields at the
//! application's buffers (a refcount increment per field, no copy) and encodes into a
//! reused `Vec<u8>`, which is the output. Decode: `Record::decode` from a `Bytes` input, so
//! every decoded field is a zero-copy slice of the input.
//!
//! RPC echo ([`ProstCodec`]): the server decodes the request into a `Record` and encodes that
//! same `Record` (what a tonic handler that returns its request does). From a counted pool
//! buffer (TCP) the input becomes `Bytes` without a copy (`SharedBuf::into_bytes`: one
//! allocation for the owner) and the fields are slices of it; from borrowed bytes (shared
//! memory) prost copies every field into a new `Bytes`.

use bytes::Bytes;
use prost::Message;

use crate::generated::record_prost::Record;
use crate::systems::{Codec, Decoder, Input, Serializer, Sink};
use crate::{BenchError, Shape};

/// Encodes a reused [`Record`] into a reused output vector.
#[derive(Debug, Default)]
pub struct ProstSerializer {
    message: Record,
    out: Vec<u8>,
}

impl Serializer for ProstSerializer {
    fn serialize(&mut self, shape: &Shape) -> Result<&[u8], BenchError> {
        self.message.key = shape.key().clone();
        self.message.fields.clear();
        self.message.fields.extend(shape.fields().iter().cloned());
        self.out.clear();
        self.message.encode(&mut self.out)?;
        Ok(&self.out)
    }
}

/// Decodes a `Bytes` input into a fresh [`Record`] per call.
#[derive(Debug, Default)]
pub struct ProstDecoder {
    input: Option<Bytes>,
}

impl Decoder for ProstDecoder {
    fn prepare(&mut self, shape: &Shape) -> Result<(), BenchError> {
        let encoded = ProstSerializer::default().serialize(shape)?.to_vec();
        self.input = Some(Bytes::from(encoded));
        Ok(())
    }

    fn decode_and_read(&mut self, sink: &mut Sink) -> Result<(), BenchError> {
        let input = self
            .input
            .clone()
            .ok_or(BenchError::NotPrepared { system: "prost" })?;
        let record = Record::decode(input)?;
        sink.key(&record.key);
        for field in &record.fields {
            sink.field(field);
        }
        Ok(())
    }
}

/// Both sides of an RPC echo with prost (see the module docs).
#[derive(Debug, Default)]
pub struct ProstCodec {
    serializer: ProstSerializer,
    out: Vec<u8>,
}

impl ProstCodec {
    fn decode(input: Input<'_>) -> Result<Record, BenchError> {
        Ok(match input.shared {
            Some(buf) => Record::decode(buf.clone().into_bytes())?,
            None => Record::decode(input.bytes)?,
        })
    }
}

impl Codec for ProstCodec {
    fn encode(&mut self, shape: &Shape) -> Result<&[u8], BenchError> {
        self.serializer.serialize(shape)
    }

    fn echo(&mut self, input: Input<'_>) -> Result<&[u8], BenchError> {
        let record = Self::decode(input)?;
        self.out.clear();
        record.encode(&mut self.out)?;
        Ok(&self.out)
    }

    fn read(&mut self, input: Input<'_>, read: &mut dyn FnMut(&[u8])) -> Result<(), BenchError> {
        let record = Self::decode(input)?;
        read(&record.key);
        for field in &record.fields {
            read(field);
        }
        Ok(())
    }
}
