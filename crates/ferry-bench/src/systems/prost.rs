//! prost 0.14 with `bytes::Bytes` fields (`prost-build` `.bytes(["."])`).
//!
//! Outgoing: the message struct is reused; each call points its fields at the
//! application's buffers (a refcount increment per field, no copy) and encodes into a
//! reused `Vec<u8>`, which is the output. Decode: `Record::decode` from a `Bytes` input, so
//! every decoded field is a zero-copy slice of the input.

use bytes::Bytes;
use prost::Message;

use crate::generated::record_prost::Record;
use crate::systems::{Decoder, Serializer, Sink};
use crate::{BenchError, Shape};

/// Encodes a reused [`Record`] into a reused output vector.
#[derive(Debug, Default)]
pub struct ProstSerializer {
    message: Record,
    out: Vec<u8>,
}

impl ProstSerializer {
    /// A fresh instance for the registry.
    pub fn boxed() -> Box<dyn Serializer> {
        Box::<Self>::default()
    }
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

impl ProstDecoder {
    /// A fresh, unprepared instance for the registry.
    pub fn boxed() -> Box<dyn Decoder> {
        Box::<Self>::default()
    }
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
