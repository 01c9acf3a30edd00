//! rkyv 0.8, the reference for zero-copy deserialization (issue 11 asks for it beside Ferry).
//!
//! rkyv writes a value's archived form, whose layout is the in-memory layout of the archived
//! types, so that a reader uses the bytes as they are. The record is archived from borrowed
//! slices (`InlineAsBox`: `&[u8]` archived as a boxed byte slice), so building the value copies
//! nothing; serialization then copies every byte into a reused `AlignedVec` (rkyv has no
//! scatter-gather output) and takes its scratch space from rkyv's thread-local arena. Decode:
//! `rkyv::access` with bytecheck validation (the safe API, as Ferry's decoder validates), then
//! every field read in place.
//!
//! rkyv is not wire-compatible across versions, endianness settings or schema changes (no
//! field numbers or presence), which is part of why it can be faster than a protobuf-like
//! format: there is no header to interpret, only relative pointers to check.

use rkyv::rancor::Error;
use rkyv::util::AlignedVec;
use rkyv::with::{InlineAsBox, Map};

use crate::systems::{Decoder, Serializer, Sink};
use crate::{BenchError, Shape};

/// The benchmark schema, `Record { key, fields }`, over borrowed slices.
#[derive(rkyv::Archive, rkyv::Serialize)]
struct Record<'a> {
    #[rkyv(with = InlineAsBox)]
    key: &'a [u8],
    #[rkyv(with = Map<InlineAsBox>)]
    fields: Vec<&'a [u8]>,
}

/// Archives a record of the shape's buffers into a reused aligned vector.
#[derive(Default)]
pub struct RkyvSerializer {
    /// The field list's allocation, kept between calls (emptied, so it borrows nothing).
    fields: Vec<&'static [u8]>,
    out: AlignedVec,
}

/// Reuses an empty vector's allocation for slices of another lifetime (in-place collect: the
/// element type has the same size and alignment, so no allocation is made).
fn recycle<'b>(mut v: Vec<&[u8]>) -> Vec<&'b [u8]> {
    v.clear();
    v.into_iter()
        .map(|_| -> &'b [u8] { unreachable!("the vector is empty") })
        .collect()
}

impl Serializer for RkyvSerializer {
    fn serialize(&mut self, shape: &Shape) -> Result<&[u8], BenchError> {
        let mut fields = recycle(std::mem::take(&mut self.fields));
        fields.extend(shape.fields().iter().map(|f| &f[..]));
        let record = Record {
            key: &shape.key()[..],
            fields,
        };
        self.out.clear();
        let result = rkyv::api::high::to_bytes_in::<_, Error>(&record, &mut self.out);
        self.fields = recycle(record.fields);
        result?;
        Ok(&self.out)
    }
}

/// Validates a prepared archive and reads every field.
#[derive(Default)]
pub struct RkyvDecoder {
    input: Option<AlignedVec>,
}

impl Decoder for RkyvDecoder {
    fn prepare(&mut self, shape: &Shape) -> Result<(), BenchError> {
        let mut serializer = RkyvSerializer::default();
        serializer.serialize(shape)?;
        self.input = Some(serializer.out);
        Ok(())
    }

    fn decode_and_read(&mut self, sink: &mut Sink) -> Result<(), BenchError> {
        let input = self
            .input
            .as_ref()
            .ok_or(BenchError::NotPrepared { system: "rkyv" })?;
        let record = rkyv::access::<ArchivedRecord<'_>, Error>(input)?;
        sink.key(&record.key);
        for field in record.fields.iter() {
            sink.field(field);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_field_list_keeps_its_allocation() {
        let shape = Shape::by_name("google16").unwrap();
        let mut serializer = RkyvSerializer::default();
        serializer.serialize(&shape).unwrap();
        let (ptr, cap) = (serializer.fields.as_ptr(), serializer.fields.capacity());
        assert!(cap >= 16);
        serializer.serialize(&shape).unwrap();
        assert_eq!(
            (serializer.fields.as_ptr(), serializer.fields.capacity()),
            (ptr, cap)
        );
    }
}
