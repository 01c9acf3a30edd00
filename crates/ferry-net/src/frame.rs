//! The frame header: 16 bytes in front of every message on a stream.
//!
//! ```text
//! offset  size  field
//!      0     1  version      always 1; anything else is a malformed frame
//!      1     1  flags        application-defined (the RPC layer: request/response/error)
//!      2     2  kind         application-defined message type
//!      4     4  len          payload bytes that follow the header (little endian)
//!      8     8  request_id   slot for the RPC layer's request id (little endian)
//! ```
//!
//! The payload follows immediately; the next frame starts right after it. Payloads need no
//! alignment: Ferry's decoder reads unaligned.

use crate::{FrameError, Meta};

/// Bytes in a frame header.
pub const HEADER_LEN: usize = 16;
/// The only frame version this crate speaks.
pub const VERSION: u8 = 1;

/// A decoded frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FrameHeader {
    /// Kind, flags and request id.
    pub meta: Meta,
    /// Payload length in bytes.
    pub len: u32,
}

impl FrameHeader {
    /// Writes the header into the first [`HEADER_LEN`] bytes of `out`.
    ///
    /// # Panics
    /// If `out` is shorter than [`HEADER_LEN`] (a caller bug, never peer input).
    pub fn write(&self, out: &mut [u8]) {
        let out = &mut out[..HEADER_LEN];
        out[0] = VERSION;
        out[1] = self.meta.flags;
        out[2..4].copy_from_slice(&self.meta.kind.to_le_bytes());
        out[4..8].copy_from_slice(&self.len.to_le_bytes());
        out[8..16].copy_from_slice(&self.meta.request_id.to_le_bytes());
    }

    /// The header as bytes.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut out = [0; HEADER_LEN];
        self.write(&mut out);
        out
    }

    /// Parses and checks a header from peer bytes: the version, and `len` against `max_len`.
    pub fn parse(bytes: &[u8; HEADER_LEN], max_len: usize) -> Result<FrameHeader, FrameError> {
        if bytes[0] != VERSION {
            return Err(FrameError::Version { found: bytes[0] });
        }
        let [_, flags, k0, k1, l0, l1, l2, l3, rest @ ..] = *bytes;
        let header = FrameHeader {
            meta: Meta {
                kind: u16::from_le_bytes([k0, k1]),
                flags,
                request_id: u64::from_le_bytes(rest),
            },
            len: u32::from_le_bytes([l0, l1, l2, l3]),
        };
        if header.len as usize > max_len {
            return Err(FrameError::TooLong {
                len: header.len as usize,
                max: max_len,
            });
        }
        Ok(header)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_both_ways() {
        let h = FrameHeader {
            meta: Meta {
                kind: 0x0302,
                flags: 0x81,
                request_id: 0x0f0e_0d0c_0b0a_0908,
            },
            len: 0x0706_0504,
        };
        let bytes = [1, 0x81, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15];
        assert_eq!(h.to_bytes(), bytes);
        assert_eq!(FrameHeader::parse(&bytes, usize::MAX), Ok(h));
    }

    #[test]
    fn rejects_version_and_length() {
        let mut bytes = FrameHeader {
            len: 100,
            ..Default::default()
        }
        .to_bytes();
        assert_eq!(
            FrameHeader::parse(&bytes, 99),
            Err(FrameError::TooLong { len: 100, max: 99 })
        );
        assert!(FrameHeader::parse(&bytes, 100).is_ok());
        bytes[0] = 2;
        assert_eq!(
            FrameHeader::parse(&bytes, 100),
            Err(FrameError::Version { found: 2 })
        );
    }
}
