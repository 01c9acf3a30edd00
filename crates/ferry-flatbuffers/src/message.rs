//! [`Message`]: a finished FlatBuffer as the list of slices it was built in.

use ferry_buf::SharedBuf;
use ferry_transport::Payload;

/// A finished FlatBuffer: its slices, first byte first (the paper's Message). Each slice holds
/// its block (a counted pool buffer), so a message outlives the builder that made it and can
/// be queued on a transport while the builder goes on to the next one.
///
/// Concatenated, the slices are what the stock builder's `finished_data()` returns for the
/// same calls; a transport sends them as one frame ([`payload`](Self::payload)), and the
/// receiver reads that frame with the stock `flatbuffers::root`.
#[derive(Debug, Clone, Default)]
pub struct Message {
    slices: Vec<SharedBuf>,
}

impl Message {
    pub(crate) fn new(slices: Vec<SharedBuf>) -> Message {
        Message { slices }
    }

    /// The slices, first byte first.
    pub fn slices(&self) -> &[SharedBuf] {
        &self.slices
    }

    /// Total length in bytes.
    pub fn len(&self) -> usize {
        self.slices.iter().map(|s| s.len()).sum()
    }

    /// Whether the message has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The message as one frame's payload: one gather entry per slice over TCP, copied into
    /// the block over shared memory (whose receiver reads a payload contiguously).
    pub fn payload(&self) -> Payload<'_> {
        Payload::Gather {
            head: &[],
            parts: &self.slices,
        }
    }

    /// The bytes when the message is one slice (no copy).
    pub fn contiguous(&self) -> Option<&[u8]> {
        match self.slices.as_slice() {
            [one] => Some(one),
            [] => Some(&[]),
            _ => None,
        }
    }

    /// The bytes, copied into one `Vec` (for tests and for readers that need them in one
    /// piece locally; a transport delivers them contiguous without this).
    pub fn to_vec(&self) -> Vec<u8> {
        concat(&self.slices)
    }
}

/// `slices` copied one after the other into one `Vec`.
pub(crate) fn concat(slices: &[SharedBuf]) -> Vec<u8> {
    let mut out = Vec::with_capacity(slices.iter().map(|s| s.len()).sum());
    for s in slices {
        out.extend_from_slice(s);
    }
    out
}
