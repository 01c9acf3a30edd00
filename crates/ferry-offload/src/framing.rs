//! gRPC's message framing and compression, without I/O: what the engine reads from a request
//! body and writes into a response body (gRPC over HTTP/2; the compression spec,
//! `grpc/doc/compression.md`).
//!
//! A message on the wire is a 5-byte prefix (a compressed flag, 0 or 1, and a big-endian
//! length) and that many bytes. A flagged message is compressed with the encoding the call's
//! `grpc-encoding` header names: the engine reads `identity`, `gzip` and `deflate` (zlib, as
//! gRPC means it) and advertises them in every answer's `grpc-accept-encoding`.
//!
//! - [`Encoding::of_request`]: a request's `grpc-encoding`; any other is `UNIMPLEMENTED`,
//!   naming it and the accepted list.
//! - [`Deframer`]: the messages of a request body, pushed chunk by chunk and taken one at a
//!   time (a stream's, read only as fast as they are handed on); [`OneMessage`]: a unary
//!   request's one message. A prefix that declares more than the limit is refused before its
//!   bytes are buffered.
//! - [`Frame::decompress`]: a message inflated with a bound (each message of a stream on its
//!   own): past the limit, inflating
//!   stops (`RESOURCE_EXHAUSTED`), so a small request that would inflate to gigabytes (a zip
//!   bomb) costs the engine the limit (a buffer that grows to at most twice it), not more.
//! - [`Encoding::for_response`], [`frame`]: how the answer is compressed, and its bytes.
//!
//! When the engine compresses an answer: with the request's own encoding when the request
//! was compressed (grpc-go's servers do the same), or else with the engine's configured
//! encoding ([`EngineConfig::compress`](crate::engine::EngineConfig::compress), off by
//! default, as in gRPC's own servers: grpcio and grpc-go clients list gzip in
//! `grpc-accept-encoding` on every call, and compressing every answer would cost the engine's
//! core for nothing they asked), and only when the client's `grpc-accept-encoding` lists it.
//! Messages under [`MIN_COMPRESSED`] bytes go uncompressed (flag 0) even then, which the spec
//! allows message by message (gzip's own 18 bytes of header and trailer would make them
//! larger), and so do messages that compression does not shorten. Answers are compressed at
//! flate2's fastest level: the engine's one core serves every call.

use std::collections::VecDeque;
use std::io::Read as _;

use bytes::{BufMut, Bytes, BytesMut};
use flate2::Compression;
use flate2::read::{GzDecoder, GzEncoder, ZlibDecoder, ZlibEncoder};

/// The length of a message's prefix: the compressed flag and the 4-byte length.
pub const PREFIX_LEN: usize = 5;

/// What every answer advertises in `grpc-accept-encoding`.
pub const ACCEPT_ENCODING: &str = "gzip,deflate,identity";

/// Answers shorter than this, in bytes, are sent uncompressed, whatever the encoding.
pub const MIN_COMPRESSED: usize = 128;

/// A message encoding the engine reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// Not compressed.
    Identity,
    /// gzip (RFC 1952).
    Gzip,
    /// gRPC's `deflate`: the zlib format (RFC 1950).
    Deflate,
}

impl Encoding {
    /// Its name in `grpc-encoding` and `grpc-accept-encoding`.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Identity => "identity",
            Encoding::Gzip => "gzip",
            Encoding::Deflate => "deflate",
        }
    }

    /// The encoding named `name` (ASCII case ignored, as for any token in HTTP), if the engine
    /// has it.
    pub fn from_name(name: &[u8]) -> Option<Encoding> {
        [Encoding::Identity, Encoding::Gzip, Encoding::Deflate]
            .into_iter()
            .find(|e| e.name().as_bytes().eq_ignore_ascii_case(name))
    }

    /// A request's `grpc-encoding` header (none: identity).
    pub fn of_request(header: Option<&[u8]>) -> Result<Encoding, FramingError> {
        let Some(name) = header else {
            return Ok(Encoding::Identity);
        };
        Encoding::from_name(name.trim_ascii()).ok_or_else(|| FramingError::UnsupportedEncoding {
            encoding: String::from_utf8_lossy(name).into_owned(),
        })
    }

    /// How to compress the answer to a request sent with `request`, for a client whose
    /// `grpc-accept-encoding` is `accept`, by an engine configured to compress with
    /// `configured`: the request's own encoding if it compresses, else `configured`, either
    /// only if the client lists it; else identity.
    pub fn for_response(request: Encoding, accept: Option<&[u8]>, configured: Option<Encoding>) -> Encoding {
        let listed = |e: Encoding| {
            accept.is_some_and(|list| {
                list.split(|&b| b == b',')
                    .any(|name| Encoding::from_name(name.trim_ascii()) == Some(e))
            })
        };
        [Some(request), configured]
            .into_iter()
            .flatten()
            .find(|&e| e != Encoding::Identity && listed(e))
            .unwrap_or(Encoding::Identity)
    }
}

/// Why a request's message cannot be read. [`code`](Self::code) is the gRPC status the client
/// gets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FramingError {
    /// The request's `grpc-encoding` is not one the engine has.
    #[error("grpc-encoding {encoding:?} is not supported; the engine accepts {ACCEPT_ENCODING}")]
    UnsupportedEncoding {
        /// The header's value.
        encoding: String,
    },
    /// The message's prefix declares more than the limit.
    #[error("request message of {len} bytes is over the engine's limit of {limit} bytes (max_message)")]
    TooLarge {
        /// The declared length.
        len: u64,
        /// The limit.
        limit: usize,
    },
    /// The message inflates past the limit (inflating stopped there).
    #[error(
        "request message inflates ({encoding}) past the engine's limit of {limit} bytes (max_message); \
         {compressed} compressed bytes"
    )]
    InflatesTooLarge {
        /// The request's encoding.
        encoding: &'static str,
        /// The compressed length.
        compressed: usize,
        /// The limit.
        limit: usize,
    },
    /// The message's compressed bytes are not valid in its encoding.
    #[error("request message is not valid {encoding}: {why}")]
    Corrupt {
        /// The request's encoding.
        encoding: &'static str,
        /// The inflater's complaint.
        why: String,
    },
    /// The compressed flag is set on a request whose `grpc-encoding` is identity (or absent).
    #[error("request message has the compressed flag but the request's grpc-encoding is identity")]
    CompressedWithoutEncoding,
    /// The flag byte is neither 0 nor 1.
    #[error("request message has compressed flag {0} (only 0 and 1 are defined)")]
    BadFlag(u8),
    /// The body ends with no message.
    #[error("the request has no message")]
    NoMessage,
    /// The body ends inside a message.
    #[error("the request ends {missing} bytes short of its message")]
    Truncated {
        /// Bytes missing.
        missing: usize,
    },
    /// More than one message in a unary request.
    #[error("the request has more than one message (the method is unary)")]
    TooManyMessages,
}

impl FramingError {
    /// The gRPC status code of the failure (the compression spec's: `UNIMPLEMENTED` for an
    /// unsupported encoding, `INTERNAL` for a flag without one; `RESOURCE_EXHAUSTED` for
    /// sizes, as for an uncompressed message over the limit).
    pub fn code(&self) -> ferry::rpc::Code {
        use ferry::rpc::Code;
        match self {
            FramingError::UnsupportedEncoding { .. } => Code::Unimplemented,
            FramingError::TooLarge { .. } | FramingError::InflatesTooLarge { .. } => Code::ResourceExhausted,
            FramingError::Corrupt { .. }
            | FramingError::CompressedWithoutEncoding
            | FramingError::BadFlag(_)
            | FramingError::NoMessage
            | FramingError::Truncated { .. }
            | FramingError::TooManyMessages => Code::Internal,
        }
    }
}

impl From<FramingError> for ferry::rpc::Status {
    /// The status the client gets: [`FramingError::code`] and what is wrong.
    fn from(e: FramingError) -> ferry::rpc::Status {
        ferry::rpc::Status::new(e.code(), e.to_string())
    }
}

/// A message as it came: its flag and its bytes (still compressed if flagged).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The compressed flag.
    pub compressed: bool,
    /// The message's bytes, as sent.
    pub bytes: Bytes,
}

impl Frame {
    /// The message, inflated if flagged, under `encoding` (the request's `grpc-encoding`), at
    /// most `limit` bytes: inflating stops at `limit + 1` bytes of output.
    pub fn decompress(self, encoding: Encoding, limit: usize) -> Result<Bytes, FramingError> {
        if !self.compressed {
            return Ok(self.bytes);
        }
        inflate(&self.bytes[..], self.bytes.len(), encoding, limit).map(Bytes::from)
    }
}

/// The `compressed` bytes `src` reads, inflated under `encoding`, reading no further than
/// `limit + 1` bytes of output.
fn inflate(
    src: impl std::io::Read,
    compressed: usize,
    encoding: Encoding,
    limit: usize,
) -> Result<Vec<u8>, FramingError> {
    let bound = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    let mut out = Vec::new();
    let read = match encoding {
        Encoding::Identity => return Err(FramingError::CompressedWithoutEncoding),
        Encoding::Gzip => GzDecoder::new(src).take(bound).read_to_end(&mut out),
        Encoding::Deflate => ZlibDecoder::new(src).take(bound).read_to_end(&mut out),
    };
    read.map_err(|e| FramingError::Corrupt {
        encoding: encoding.name(),
        why: e.to_string(),
    })?;
    if out.len() > limit {
        return Err(FramingError::InflatesTooLarge {
            encoding: encoding.name(),
            compressed,
            limit,
        });
    }
    Ok(out)
}

/// The messages of a request body, from its chunks as they arrive: push a chunk, then take
/// messages with [`next_frame`](Self::next_frame) until it has none, then push the next chunk.
/// A prefix declaring more than the limit is refused as soon as it is buffered, before the
/// bytes it declares arrive. Driven that way, it holds at most one incomplete message (its
/// prefix and at most `limit` bytes) and the chunk that completes it: a reader that pushes
/// only when it wants another message reads the body only as fast as it hands messages on.
#[derive(Debug)]
pub struct Deframer {
    limit: usize,
    /// Chunks received and not yet handed on, oldest first (the first one cut to what is left).
    chunks: VecDeque<Bytes>,
    /// Their total length.
    buffered: usize,
}

impl Deframer {
    /// A deframer refusing messages over `limit` bytes (as sent: a compressed message is
    /// bounded again once inflated).
    pub fn new(limit: usize) -> Deframer {
        Deframer {
            limit,
            chunks: VecDeque::new(),
            buffered: 0,
        }
    }

    /// Takes the next chunk of the body.
    pub fn push(&mut self, chunk: Bytes) {
        if !chunk.is_empty() {
            self.buffered += chunk.len();
            self.chunks.push_back(chunk);
        }
    }

    /// Bytes received and not yet handed on in a message.
    pub fn buffered(&self) -> usize {
        self.buffered
    }

    /// The next whole message, if it is all here (`None`: push more). A message within one
    /// chunk is a slice of it (no copy); one spread over chunks is copied together once.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, FramingError> {
        let Some((compressed, len)) = self.prefix()? else {
            return Ok(None);
        };
        if self.buffered - PREFIX_LEN < len {
            return Ok(None);
        }
        self.take(PREFIX_LEN);
        let bytes = self.take(len);
        Ok(Some(Frame { compressed, bytes }))
    }

    /// Checks the end of the body, once [`next_frame`](Self::next_frame) has no more: bytes
    /// left over are a message cut short.
    pub fn finish(&self) -> Result<(), FramingError> {
        if self.buffered == 0 {
            return Ok(());
        }
        // `next_frame` refused a prefix that does not check, so this one does, or is short.
        let whole = match self.prefix() {
            Ok(Some((_, len))) => PREFIX_LEN + len,
            _ => PREFIX_LEN,
        };
        Err(FramingError::Truncated {
            missing: whole.saturating_sub(self.buffered),
        })
    }

    /// The flag and length of the buffered prefix, checked; `None` if less than a prefix is
    /// buffered.
    fn prefix(&self) -> Result<Option<(bool, usize)>, FramingError> {
        let mut head = [0u8; PREFIX_LEN];
        let mut have = 0;
        for chunk in &self.chunks {
            let n = chunk.len().min(PREFIX_LEN - have);
            head[have..have + n].copy_from_slice(&chunk[..n]);
            have += n;
            if have == PREFIX_LEN {
                break;
            }
        }
        if have < PREFIX_LEN {
            return Ok(None);
        }
        let [flag, l0, l1, l2, l3] = head;
        let compressed = match flag {
            0 => false,
            1 => true,
            f => return Err(FramingError::BadFlag(f)),
        };
        let declared = u32::from_be_bytes([l0, l1, l2, l3]);
        match usize::try_from(declared) {
            Ok(len) if len <= self.limit => Ok(Some((compressed, len))),
            _ => Err(FramingError::TooLarge {
                len: u64::from(declared),
                limit: self.limit,
            }),
        }
    }

    /// The next `n` buffered bytes (the caller checked that `n` are buffered).
    fn take(&mut self, n: usize) -> Bytes {
        self.buffered -= n;
        if let Some(front) = self.chunks.front_mut()
            && front.len() >= n
        {
            let bytes = front.split_to(n);
            if front.is_empty() {
                self.chunks.pop_front();
            }
            return bytes;
        }
        let mut out = BytesMut::with_capacity(n);
        while let Some(front) = self.chunks.front_mut() {
            let k = (n - out.len()).min(front.len());
            out.extend_from_slice(&front.split_to(k));
            if front.is_empty() {
                self.chunks.pop_front();
            }
            if out.len() == n {
                break;
            }
        }
        out.freeze()
    }
}

/// The one message of a unary request, from the body's chunks as they arrive: a [`Deframer`]
/// that refuses a second message (or any byte after the first) as soon as it arrives.
#[derive(Debug)]
pub struct OneMessage {
    deframer: Deframer,
    frame: Option<Frame>,
}

impl OneMessage {
    /// Reading one message of at most `limit` bytes (as sent).
    pub fn new(limit: usize) -> OneMessage {
        OneMessage {
            deframer: Deframer::new(limit),
            frame: None,
        }
    }

    /// Takes the next chunk of the body.
    pub fn push(&mut self, chunk: Bytes) -> Result<(), FramingError> {
        if chunk.is_empty() {
            return Ok(());
        }
        if self.frame.is_some() {
            return Err(FramingError::TooManyMessages);
        }
        self.deframer.push(chunk);
        self.frame = self.deframer.next_frame()?;
        if self.frame.is_some() && self.deframer.buffered() > 0 {
            return Err(FramingError::TooManyMessages);
        }
        Ok(())
    }

    /// The message, once the body has ended.
    pub fn finish(self) -> Result<Frame, FramingError> {
        if let Some(frame) = self.frame {
            return Ok(frame);
        }
        self.deframer.finish()?;
        Err(FramingError::NoMessage)
    }
}

/// `message` as a response body: its prefix and its bytes, compressed with `encoding` unless
/// it is shorter than [`MIN_COMPRESSED`] or does not get shorter.
pub fn frame(message: &[u8], encoding: Encoding) -> Bytes {
    let level = Compression::fast();
    let mut out = BytesMut::with_capacity(PREFIX_LEN + message.len());
    out.put_bytes(0, PREFIX_LEN);
    let mut writer = out.writer();
    // Compressing from memory into memory cannot fail.
    let copied = match encoding {
        _ if message.len() < MIN_COMPRESSED => None,
        Encoding::Identity => None,
        Encoding::Gzip => Some(std::io::copy(&mut GzEncoder::new(message, level), &mut writer)),
        Encoding::Deflate => Some(std::io::copy(&mut ZlibEncoder::new(message, level), &mut writer)),
    };
    let mut out = writer.into_inner();
    let compressed = copied.is_some_and(|n| n.expect("compressing in memory") < message.len() as u64);
    if !compressed {
        out.truncate(PREFIX_LEN);
        out.put_slice(message);
    }
    let len = u32::try_from(out.len() - PREFIX_LEN).expect("a response message under 4 GiB");
    out[0] = u8::from(compressed);
    out[1..PREFIX_LEN].copy_from_slice(&len.to_be_bytes());
    out.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), Compression::default());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    fn prefixed(flag: u8, message: &[u8]) -> Vec<u8> {
        let mut v = vec![flag];
        v.extend((message.len() as u32).to_be_bytes());
        v.extend(message);
        v
    }

    fn deframe(chunks: &[&[u8]], limit: usize) -> Result<Frame, FramingError> {
        let mut d = OneMessage::new(limit);
        for c in chunks {
            d.push(Bytes::copy_from_slice(c))?;
        }
        d.finish()
    }

    #[test]
    fn encodings_are_read_from_grpc_encoding() {
        assert_eq!(Encoding::of_request(None), Ok(Encoding::Identity));
        assert_eq!(Encoding::of_request(Some(b"gzip")), Ok(Encoding::Gzip));
        assert_eq!(Encoding::of_request(Some(b"Deflate ")), Ok(Encoding::Deflate));
        assert_eq!(Encoding::of_request(Some(b"identity")), Ok(Encoding::Identity));
        let e = Encoding::of_request(Some(b"snappy")).unwrap_err();
        assert_eq!(e.code(), ferry::rpc::Code::Unimplemented);
        let said = e.to_string();
        assert!(
            said.contains("snappy") && said.contains(ACCEPT_ENCODING),
            "{said}"
        );
    }

    #[test]
    fn the_answer_is_compressed_only_as_the_client_accepts() {
        use Encoding::*;
        let grpcio = Some(&b"identity,deflate,gzip"[..]);
        // The request's own encoding first, then the configured one.
        assert_eq!(Encoding::for_response(Deflate, grpcio, Some(Gzip)), Deflate);
        assert_eq!(Encoding::for_response(Identity, grpcio, Some(Gzip)), Gzip);
        assert_eq!(Encoding::for_response(Identity, grpcio, None), Identity);
        // Not listed (or no list): identity.
        assert_eq!(
            Encoding::for_response(Gzip, Some(b"deflate, identity"), None),
            Identity
        );
        assert_eq!(Encoding::for_response(Gzip, None, Some(Gzip)), Identity);
        assert_eq!(Encoding::for_response(Gzip, Some(b"zstd, GZIP"), None), Gzip);
    }

    #[test]
    fn a_message_is_deframed_whole_or_in_pieces() {
        let body = prefixed(0, b"hello");
        let want = Frame {
            compressed: false,
            bytes: Bytes::from_static(b"hello"),
        };
        assert_eq!(deframe(&[&body], 16), Ok(want.clone()));
        for split in 1..body.len() {
            let (a, b) = body.split_at(split);
            assert_eq!(deframe(&[a, &[], b], 16), Ok(want.clone()), "split at {split}");
        }
        let empty = Frame {
            compressed: true,
            bytes: Bytes::new(),
        };
        assert_eq!(deframe(&[&prefixed(1, b"")], 0), Ok(empty));
    }

    #[test]
    fn malformed_bodies_are_refused_with_what_is_wrong() {
        assert_eq!(deframe(&[], 16), Err(FramingError::NoMessage));
        assert_eq!(
            deframe(&[&[0, 0, 0]], 16),
            Err(FramingError::Truncated { missing: 2 })
        );
        assert_eq!(
            deframe(&[&prefixed(0, b"hello")[..7]], 16),
            Err(FramingError::Truncated { missing: 3 })
        );
        assert_eq!(deframe(&[&prefixed(2, b"x")], 16), Err(FramingError::BadFlag(2)));
        let two = [prefixed(0, b"a"), prefixed(0, b"b")].concat();
        assert_eq!(deframe(&[&two], 16), Err(FramingError::TooManyMessages));
        assert_eq!(
            deframe(&[&prefixed(0, b"a"), &[0]], 16),
            Err(FramingError::TooManyMessages)
        );
        // Refused on the prefix alone, before the bytes it declares arrive.
        let mut d = OneMessage::new(16);
        assert_eq!(
            d.push(Bytes::from_static(&[0, 0xff, 0xff, 0xff, 0xff])),
            Err(FramingError::TooLarge {
                len: u64::from(u32::MAX),
                limit: 16
            })
        );
        assert_eq!(
            FramingError::TooLarge { len: 17, limit: 16 }.code(),
            ferry::rpc::Code::ResourceExhausted
        );
    }

    /// Every message of `body`, pushed in `chunk`-byte pieces and taken as a stream reader
    /// takes them (push only when no whole message is buffered), checking the bound on what is
    /// buffered at each push.
    fn stream(body: &[u8], chunk: usize, limit: usize) -> Result<Vec<Frame>, FramingError> {
        let mut d = Deframer::new(limit);
        let mut frames = Vec::new();
        for piece in body.chunks(chunk) {
            // One incomplete message at most, before the chunk that completes it.
            assert!(d.buffered() < PREFIX_LEN + limit, "{} buffered", d.buffered());
            d.push(Bytes::copy_from_slice(piece));
            while let Some(frame) = d.next_frame()? {
                frames.push(frame);
            }
        }
        d.finish()?;
        Ok(frames)
    }

    #[test]
    fn a_stream_of_messages_is_deframed_in_any_pieces() {
        let mut rng = ferry_testkit::Rng::new(26);
        for round in 0..200 {
            let messages: Vec<(bool, Vec<u8>)> = (0..rng.u64() % 6)
                .map(|_| {
                    let len = (rng.u64() % 40) as usize;
                    (rng.u64() % 2 == 1, (0..len).map(|_| rng.u64() as u8).collect())
                })
                .collect();
            let body: Vec<u8> = messages
                .iter()
                .flat_map(|(c, m)| prefixed(u8::from(*c), m))
                .collect();
            let chunk = 1 + (rng.u64() % 50) as usize;
            let frames = stream(&body, chunk, 40).unwrap_or_else(|e| panic!("round {round}: {e}"));
            let got: Vec<(bool, Vec<u8>)> = frames
                .into_iter()
                .map(|f| (f.compressed, f.bytes.to_vec()))
                .collect();
            assert_eq!(got, messages, "round {round}, chunks of {chunk}");
        }
    }

    #[test]
    fn a_message_whole_in_its_chunk_is_a_slice_of_it() {
        let body = Bytes::from([prefixed(0, b"one"), prefixed(0, b"two")].concat());
        let mut d = Deframer::new(16);
        d.push(body.clone());
        let one = d.next_frame().unwrap().unwrap();
        let two = d.next_frame().unwrap().unwrap();
        assert_eq!((&one.bytes[..], &two.bytes[..]), (&b"one"[..], &b"two"[..]));
        assert_eq!(one.bytes.as_ptr(), body[PREFIX_LEN..].as_ptr());
        assert_eq!(two.bytes.as_ptr(), body[2 * PREFIX_LEN + 3..].as_ptr());
        assert_eq!((d.next_frame(), d.buffered(), d.finish()), (Ok(None), 0, Ok(())));
    }

    #[test]
    fn a_stream_is_refused_at_the_first_bad_message() {
        let good = prefixed(0, b"ok");
        // Over the limit: refused on the prefix, after the messages before it.
        let mut d = Deframer::new(4);
        d.push(Bytes::from([&good[..], &[0, 0, 0, 0, 5]].concat()));
        assert_eq!(
            d.next_frame().unwrap().map(|f| f.bytes),
            Some(Bytes::from_static(b"ok"))
        );
        assert_eq!(d.next_frame(), Err(FramingError::TooLarge { len: 5, limit: 4 }));
        assert_eq!(
            stream(&[&good[..], &[7, 0, 0, 0, 1, 0]].concat(), 3, 4),
            Err(FramingError::BadFlag(7))
        );
        // Ending inside the prefix, or inside the message.
        assert_eq!(
            stream(&[&good[..], &[0, 0]].concat(), 3, 4),
            Err(FramingError::Truncated { missing: 3 })
        );
        assert_eq!(
            stream(&[&good[..], &prefixed(1, b"abcd")[..6]].concat(), 3, 4),
            Err(FramingError::Truncated { missing: 3 })
        );
        // No message at all is a stream of none.
        assert_eq!(stream(&[], 1, 4), Ok(Vec::new()));
    }

    #[test]
    fn compressed_messages_inflate_and_answers_round_trip() {
        let message: Vec<u8> = (0..4000u32).flat_map(|i| (i % 7).to_le_bytes()).collect();
        for encoding in [Encoding::Gzip, Encoding::Deflate, Encoding::Identity] {
            let framed = frame(&message, encoding);
            let got = deframe(&[&framed], message.len()).unwrap();
            assert_eq!(got.compressed, encoding != Encoding::Identity, "{encoding:?}");
            if got.compressed {
                assert!(
                    got.bytes.len() < message.len() / 4,
                    "{encoding:?} did not compress"
                );
            }
            assert_eq!(got.decompress(encoding, message.len()).unwrap(), message);
        }
        // Small answers, and answers that compression would not shorten, stay uncompressed.
        let small = frame(b"tiny", Encoding::Gzip);
        assert_eq!(&small[..], &prefixed(0, b"tiny")[..]);
        let mut rng = ferry_testkit::Rng::new(7);
        let noise: Vec<u8> = (0..4096).map(|_| rng.u64() as u8).collect();
        assert_eq!(&frame(&noise, Encoding::Deflate)[..], &prefixed(0, &noise)[..]);
    }

    #[test]
    fn a_message_without_the_flag_is_read_as_it_is_whatever_the_encoding() {
        let plain = Frame {
            compressed: false,
            bytes: Bytes::from_static(b"as sent"),
        };
        assert_eq!(
            plain.decompress(Encoding::Gzip, 7),
            Ok(Bytes::from_static(b"as sent"))
        );
    }

    #[test]
    fn a_compressed_flag_needs_an_encoding_and_valid_bytes() {
        let flagged = Frame {
            compressed: true,
            bytes: Bytes::from(gzip(b"hi")),
        };
        assert_eq!(
            flagged.clone().decompress(Encoding::Identity, 16),
            Err(FramingError::CompressedWithoutEncoding)
        );
        assert_eq!(
            FramingError::CompressedWithoutEncoding.code(),
            ferry::rpc::Code::Internal
        );
        let e = flagged.decompress(Encoding::Deflate, 16).unwrap_err();
        assert!(
            matches!(
                e,
                FramingError::Corrupt {
                    encoding: "deflate",
                    ..
                }
            ),
            "{e:?}"
        );
        let truncated = Frame {
            compressed: true,
            bytes: Bytes::from(gzip(b"hello there")[..10].to_vec()),
        };
        assert!(matches!(
            truncated.decompress(Encoding::Gzip, 64),
            Err(FramingError::Corrupt { .. })
        ));
    }

    /// A reader that gives at most 1 KiB a read and counts what is taken from it.
    struct Counted<'a> {
        inner: &'a [u8],
        taken: &'a std::cell::Cell<usize>,
    }

    impl std::io::Read for Counted<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min(1024);
            let n = self.inner.read(&mut buf[..n])?;
            self.taken.set(self.taken.get() + n);
            Ok(n)
        }
    }

    #[test]
    fn a_zip_bomb_stops_inflating_at_the_limit() {
        // 64 MiB of zeros, gzipped (about 64 KiB), against a 1 MiB limit.
        let mut e = flate2::write::GzEncoder::new(Vec::new(), Compression::best());
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..64 {
            e.write_all(&zeros).unwrap();
        }
        let bomb = e.finish().unwrap();
        let limit = 1 << 20;
        let refused = Frame {
            compressed: true,
            bytes: Bytes::from(bomb.clone()),
        }
        .decompress(Encoding::Gzip, limit)
        .unwrap_err();
        assert_eq!(
            refused,
            FramingError::InflatesTooLarge {
                encoding: "gzip",
                compressed: bomb.len(),
                limit
            }
        );
        assert!(refused.to_string().contains("1048576 bytes"), "{refused}");
        // Inflating stops near the limit's share of the input, not at its end.
        let taken = std::cell::Cell::new(0);
        let src = Counted {
            inner: &bomb,
            taken: &taken,
        };
        assert_eq!(inflate(src, bomb.len(), Encoding::Gzip, limit), Err(refused));
        assert!(
            taken.get() < bomb.len() / 8,
            "the inflater took {} of {} compressed bytes",
            taken.get(),
            bomb.len()
        );
    }
}
