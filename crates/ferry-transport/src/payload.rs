//! Payloads that are not Ferry messages.

use ferry_buf::SharedBuf;

/// Bytes sent as they are, not a Ferry message: another protocol's encoding (the peer
/// serializations of the benchmarks, RESP), or a frame being forwarded.
#[derive(Debug, Clone, Copy)]
pub enum Payload<'a> {
    /// Contiguous bytes, copied into the transport's staging memory.
    Bytes(&'a [u8]),
    /// `head` copied, then `parts` in order. A transport that can gather posts the parts by
    /// reference (TCP: `sendmsg` entries); one that cannot copies them (shared memory: the
    /// receiver reads a payload contiguously).
    Gather {
        /// Copied in front.
        head: &'a [u8],
        /// After `head`, in order.
        parts: &'a [SharedBuf],
    },
}

impl Payload<'_> {
    /// Total length in bytes.
    pub fn len(&self) -> usize {
        match self {
            Payload::Bytes(bytes) => bytes.len(),
            Payload::Gather { head, parts } => head.len() + parts.iter().map(|p| p.len()).sum::<usize>(),
        }
    }

    /// Whether the payload has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
