//! The floor: copy the key and every field, back to back, into one reused buffer.
//!
//! No framing, no lengths: this is the least work any serializer that produces one
//! contiguous buffer can do, so every other row is reported as a ratio to it.

use crate::systems::Serializer;
use crate::{BenchError, Shape};

/// Copies the payload into a reused `Vec<u8>`; the output is that vector.
#[derive(Debug, Default)]
pub struct MemcpySerializer {
    out: Vec<u8>,
}

impl Serializer for MemcpySerializer {
    fn serialize(&mut self, shape: &Shape) -> Result<&[u8], BenchError> {
        self.out.clear();
        self.out.extend_from_slice(shape.key());
        for field in shape.fields() {
            self.out.extend_from_slice(field);
        }
        Ok(&self.out)
    }
}
