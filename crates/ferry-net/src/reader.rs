//! The receive side, without I/O: read buffers in, frames out.
//!
//! The driver reads into the targets [`FrameReader::read_targets`] names (one `readv`) and
//! reports how many bytes arrived; [`FrameReader::next_frame`] then hands out frames.
//!
//! - Reads land in a pool buffer of [`Config::read_buf`] bytes. A frame wholly inside it is
//!   handed up as a [`SharedBuf`] sub-buffer: no copy, and the decoder reads it in place.
//! - A frame that straddles the end of a read buffer, or is larger than one, gets a pool buffer
//!   of its exact size: the part already read is copied there (the only copy on this path),
//!   and the rest is read straight into it, together with the next read buffer in the same
//!   `readv`.
//! - Headers are checked (version, length against [`Config::max_frame_len`]) before anything
//!   is allocated for the frame.
//!
//! [`FrameReader`] is public so that other drivers (and the `frame_reader` fuzz target) can
//! feed it: peer bytes go in through [`read_targets`](FrameReader::read_targets) and
//! [`filled`](FrameReader::filled), frames or typed errors come out of
//! [`next_frame`](FrameReader::next_frame), and no input makes it panic.

use ferry_buf::{BufMut, Pool, SharedBuf};

use crate::frame::{FrameHeader, HEADER_LEN};
use crate::{Config, FrameError, Meta, TransportError};

/// A received frame: its header and its payload, a sub-buffer of pool memory. `Send`: it
/// can be handed to another thread, and its read buffer is freed when its last frame drops.
#[derive(Debug, Clone)]
pub struct Frame {
    header: FrameHeader,
    payload: SharedBuf,
}

impl Frame {
    /// Kind, flags and request id.
    pub fn meta(&self) -> Meta {
        self.header.meta
    }

    /// The frame header as received (its `len` is the payload's length).
    pub fn header(&self) -> FrameHeader {
        self.header
    }

    /// The payload: decode it in place with `View::decode_shared` (or
    /// [`Received::view`](crate::Received::view)), or forward it as it is.
    pub fn payload(&self) -> &SharedBuf {
        &self.payload
    }
}

/// Receive-side counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecvCounters {
    /// Frames handed up.
    pub frames: u64,
    /// Bytes received (headers included).
    pub bytes: u64,
    /// Read calls that returned data.
    pub reads: u64,
    /// Frames that straddled a read buffer and went to a buffer of their own.
    pub straddled: u64,
    /// Bytes copied in user space: the already-read part of straddling frames and of split
    /// headers. Frames that arrive whole in one read are never copied.
    pub copied: u64,
}

/// The sans-IO receive state of one stream (see the module docs): call
/// [`next_frame`](Self::next_frame) until it returns `None`, then read into
/// [`read_targets`](Self::read_targets) and report the count with [`filled`](Self::filled).
#[derive(Debug)]
pub struct FrameReader {
    pool: Pool,
    max_frame_len: usize,
    read_buf: usize,
    /// Bytes of earlier reads, handed out from `pos`.
    cur: Option<SharedBuf>,
    pos: usize,
    /// The buffer reads fill (after `big`).
    next: Option<BufMut>,
    /// A straddling frame: its exact-size buffer and header.
    big: Option<(BufMut, FrameHeader)>,
    /// Stream offset of the first byte not yet handed out or moved (for error reports).
    offset: u64,
    counters: RecvCounters,
}

impl FrameReader {
    /// A reader taking its buffers from `pool`, with `config`'s `max_frame_len` and `read_buf`.
    pub fn new(pool: &Pool, config: &Config) -> FrameReader {
        FrameReader {
            pool: pool.clone(),
            max_frame_len: config.max_frame_len,
            read_buf: config.read_buf.clamp(HEADER_LEN, pool.max_class()),
            cur: None,
            pos: 0,
            next: None,
            big: None,
            offset: 0,
            counters: RecvCounters::default(),
        }
    }

    /// What was received and copied so far.
    pub fn counters(&self) -> RecvCounters {
        self.counters
    }

    fn parse(&self, bytes: &[u8], at: u64) -> Result<FrameHeader, TransportError> {
        let header: &[u8; HEADER_LEN] = bytes[..HEADER_LEN].try_into().expect("HEADER_LEN bytes");
        FrameHeader::parse(header, self.max_frame_len)
            .map_err(|error: FrameError| TransportError::Frame { offset: at, error })
    }

    /// The next complete frame among the bytes read so far, if any.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, TransportError> {
        loop {
            if let Some((buf, header)) = &self.big {
                if buf.len() < HEADER_LEN + header.len as usize {
                    return Ok(None);
                }
                let (buf, header) = self.big.take().expect("checked above");
                let whole = buf.freeze();
                self.counters.frames += 1;
                return Ok(Some(Frame {
                    header,
                    payload: whole.slice(HEADER_LEN..),
                }));
            }
            if let Some(cur) = &self.cur {
                let rest = &cur[self.pos..];
                if rest.len() >= HEADER_LEN {
                    let header = self.parse(rest, self.offset)?;
                    let total = HEADER_LEN + header.len as usize;
                    if rest.len() >= total {
                        let payload = cur.slice(self.pos + HEADER_LEN..self.pos + total);
                        self.pos += total;
                        self.offset += total as u64;
                        self.counters.frames += 1;
                        return Ok(Some(Frame { header, payload }));
                    }
                    // Straddles the end of this buffer: move the part read to a buffer of the
                    // frame's exact size, and read the rest straight into it.
                    let mut big = self.pool.alloc(total)?;
                    big.extend_from_slice(rest);
                    self.counters.copied += rest.len() as u64;
                    self.counters.straddled += 1;
                    self.offset += rest.len() as u64;
                    self.big = Some((big, header));
                } else if !rest.is_empty() {
                    // A split header: carry its few bytes to the front of the next read buffer
                    // (empty: reads only happen once `cur` is used up).
                    let len = rest.len();
                    let (cur, pos) = (self.cur.take().expect("matched above"), self.pos);
                    let next = self.next_buf()?;
                    debug_assert!(next.is_empty());
                    next.extend_from_slice(&cur[pos..]);
                    // Not handed out: `offset` moves when their frame is.
                    self.counters.copied += len as u64;
                }
                self.cur = None;
                self.pos = 0;
                continue;
            }
            // Hand the read buffer over to parsing once it holds a whole frame, or a frame
            // that cannot complete inside it. Until then reads keep filling it: no copy.
            let Some(next) = &self.next else { return Ok(None) };
            if next.len() < HEADER_LEN {
                return Ok(None);
            }
            let header = self.parse(next, self.offset)?;
            let total = HEADER_LEN + header.len as usize;
            if next.len() < total && total <= next.capacity() {
                return Ok(None);
            }
            self.cur = Some(self.next.take().expect("checked above").freeze());
            self.pos = 0;
        }
    }

    fn next_buf(&mut self) -> Result<&mut BufMut, TransportError> {
        if self.next.is_none() {
            self.next = Some(self.pool.alloc(self.read_buf)?);
        }
        Ok(self.next.as_mut().expect("allocated above"))
    }

    /// Where the next read should go: the rest of a straddling frame (exactly), then the read
    /// buffer. Call only after [`next_frame`](Self::next_frame) returned `None`.
    pub fn read_targets(&mut self) -> Result<(&mut [u8], &mut [u8]), TransportError> {
        self.next_buf()?;
        let next = self.next.as_mut().expect("allocated above");
        let start = next.len();
        let second = &mut next.capacity_mut()[start..];
        let first = match &mut self.big {
            Some((buf, header)) => {
                let (start, end) = (buf.len(), HEADER_LEN + header.len as usize);
                &mut buf.capacity_mut()[start..end]
            }
            None => &mut [][..],
        };
        Ok((first, second))
    }

    /// Records that a read put `n > 0` bytes into the targets, in order.
    ///
    /// # Panics
    /// If `n` exceeds the total length of the targets [`read_targets`](Self::read_targets)
    /// returned (a driver bug, not a peer's).
    pub fn filled(&mut self, n: usize) {
        self.counters.reads += 1;
        self.counters.bytes += n as u64;
        let mut n = n;
        if let Some((buf, header)) = &mut self.big {
            let take = n.min(HEADER_LEN + header.len as usize - buf.len());
            buf.set_len(buf.len() + take);
            self.offset += take as u64;
            n -= take;
        }
        if n > 0 {
            let next = self.next.as_mut().expect("read_targets allocated it");
            next.set_len(next.len() + n);
        }
    }

    /// The error for an end of stream now: [`TransportError::Closed`] between frames, else
    /// [`TransportError::Truncated`].
    pub fn eof(&self) -> TransportError {
        if let Some((buf, header)) = &self.big {
            return TransportError::Truncated {
                received: buf.len(),
                expected: HEADER_LEN + header.len as usize,
            };
        }
        let pending =
            self.cur.as_ref().map_or(0, |c| c.len() - self.pos) + self.next.as_ref().map_or(0, |n| n.len());
        if pending == 0 {
            return TransportError::Closed;
        }
        let expected = match &self.next {
            Some(next) if next.len() >= HEADER_LEN => {
                let len = u32::from_le_bytes(next[4..8].try_into().expect("4 bytes"));
                HEADER_LEN + len as usize
            }
            _ => HEADER_LEN,
        };
        TransportError::Truncated {
            received: pending,
            expected,
        }
    }

    /// Drops every buffer (the connection failed or closed).
    pub fn clear(&mut self) {
        self.cur = None;
        self.next = None;
        self.big = None;
    }
}

#[cfg(test)]
mod tests {
    use ferry_testkit::pool;
    use proptest::prelude::*;

    use super::*;

    fn frame(kind: u16, len: usize) -> Vec<u8> {
        let mut out = FrameHeader {
            meta: Meta::new(kind, kind as u64 * 3),
            len: len as u32,
        }
        .to_bytes()
        .to_vec();
        out.extend((0..len).map(|i| (i * 7 + kind as usize) as u8));
        out
    }

    /// Feeds `stream` in reads of the given sizes; returns the frames and the reader.
    fn feed(config: &Config, pool: &Pool, stream: &[u8], chunks: &[usize]) -> (Vec<Frame>, FrameReader) {
        let mut r = FrameReader::new(pool, config);
        let mut frames = Vec::new();
        let mut at = 0;
        let mut chunks = chunks.iter().cycle();
        while at < stream.len() {
            while let Some(f) = r.next_frame().unwrap() {
                frames.push(f);
            }
            let want = *chunks.next().unwrap();
            let (a, b) = r.read_targets().unwrap();
            // Emulate readv: fill `a`, then `b`.
            let mut n = 0;
            for target in [a, b] {
                let take = target.len().min(want - n).min(stream.len() - at - n);
                target[..take].copy_from_slice(&stream[at + n..at + n + take]);
                n += take;
            }
            assert!(n > 0);
            r.filled(n);
            at += n;
        }
        while let Some(f) = r.next_frame().unwrap() {
            frames.push(f);
        }
        (frames, r)
    }

    #[test]
    fn whole_frames_are_never_copied() {
        let pool = pool();
        let config = Config::default();
        let stream: Vec<u8> = (0..10).flat_map(|k| frame(k, 100)).collect();
        let (frames, r) = feed(&config, &pool, &stream, &[stream.len()]);
        assert_eq!(frames.len(), 10);
        assert_eq!(r.counters().copied, 0);
        assert_eq!(r.counters().reads, 1);
        // All ten payloads are sub-buffers of the one read buffer.
        let base = frames[0].payload.as_ptr() as usize - HEADER_LEN;
        for (k, f) in frames.iter().enumerate() {
            assert_eq!(f.payload.as_ptr() as usize, base + k * 116 + HEADER_LEN);
            assert_eq!(&f.payload[..], &frame(k as u16, 100)[HEADER_LEN..]);
        }
    }

    #[test]
    fn partial_reads_fill_the_same_buffer() {
        let pool = pool();
        let stream = frame(1, 5000);
        let (frames, r) = feed(&Config::default(), &pool, &stream, &[7, 100, 1000]);
        assert_eq!(frames.len(), 1);
        assert_eq!(
            r.counters().copied,
            0,
            "the frame fits the read buffer: reads go on filling it"
        );
        assert_eq!(&frames[0].payload[..], &stream[HEADER_LEN..]);
    }

    #[test]
    fn large_frames_get_an_exact_buffer() {
        let pool = pool();
        let config = Config {
            read_buf: 4096,
            ..Config::default()
        };
        let mut stream = frame(1, 100);
        stream.extend(frame(2, 100_000));
        stream.extend(frame(3, 10));
        let (frames, r) = feed(&config, &pool, &stream, &[4096]);
        assert_eq!(frames.len(), 3);
        assert_eq!(&frames[1].payload[..], &frame(2, 100_000)[HEADER_LEN..]);
        assert_eq!(r.counters().straddled, 1);
        assert_eq!(
            r.counters().copied,
            4096 - 116,
            "only the part already read is copied"
        );
        drop(frames);
        drop(r);
        assert_eq!(pool.stats().buffers_outstanding(), 0);
    }

    #[test]
    fn bad_headers_are_typed_errors() {
        let pool = pool();
        let config = Config {
            max_frame_len: 1000,
            ..Config::default()
        };
        let mut stream = frame(1, 10);
        stream.extend(frame(2, 1001));
        let mut r = FrameReader::new(&pool, &config);
        let (_, b) = r.read_targets().unwrap();
        let n = stream.len().min(b.len());
        b[..n].copy_from_slice(&stream[..n]);
        r.filled(stream.len());
        assert!(r.next_frame().unwrap().is_some());
        match r.next_frame() {
            Err(TransportError::Frame {
                offset: 26,
                error: FrameError::TooLong { len: 1001, max: 1000 },
            }) => {}
            other => panic!("{other:?}"),
        }
        let mut r = FrameReader::new(&pool, &config);
        let (_, b) = r.read_targets().unwrap();
        b[..16].copy_from_slice(&[9; 16]);
        r.filled(16);
        assert!(matches!(
            r.next_frame(),
            Err(TransportError::Frame {
                offset: 0,
                error: FrameError::Version { found: 9 }
            })
        ));
    }

    #[test]
    fn end_of_stream_inside_a_frame_is_truncation() {
        let pool = pool();
        let stream = frame(1, 50);
        let (frames, r) = feed(&Config::default(), &pool, &stream[..30], &[30]);
        assert!(frames.is_empty());
        assert!(matches!(
            r.eof(),
            TransportError::Truncated {
                received: 30,
                expected: 66
            }
        ));
        let (_, r) = feed(&Config::default(), &pool, &stream, &[66]);
        assert!(matches!(r.eof(), TransportError::Closed));
    }

    proptest! {
        #[test]
        fn any_split_gives_the_same_frames(
            lens in proptest::collection::vec(0usize..3000, 1..20),
            chunks in proptest::collection::vec(1usize..5000, 1..8),
            read_buf in 64usize..8192,
        ) {
            let pool = pool();
            let config = Config { read_buf, ..Config::default() };
            let stream: Vec<u8> = lens.iter().enumerate().flat_map(|(k, &l)| frame(k as u16, l)).collect();
            let (frames, r) = feed(&config, &pool, &stream, &chunks);
            prop_assert_eq!(frames.len(), lens.len());
            for (k, f) in frames.iter().enumerate() {
                prop_assert_eq!(f.header.meta.kind, k as u16);
                prop_assert_eq!(&f.payload[..], &frame(k as u16, lens[k])[HEADER_LEN..]);
            }
            prop_assert!(matches!(r.eof(), TransportError::Closed));
            drop(frames);
            drop(r);
            prop_assert_eq!(pool.stats().buffers_outstanding(), 0);
        }
    }
}
