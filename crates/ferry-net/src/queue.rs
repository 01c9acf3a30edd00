//! The send queue, without I/O: frames in, gather lists out.
//!
//! Frames accumulate in a *filling* batch: frame headers, message header segments and copied
//! data are appended to one staging buffer from the pool, and each zero-copy value becomes a
//! gather entry holding a counted reference to its pool buffer. When the driver flushes, the
//! batch becomes the *writing* batch: the staging buffer is frozen, and [`SendQueue::iovecs`]
//! yields the gather list from wherever the last partial write stopped. When it is fully
//! written, [`SendQueue::take_written`] hands its buffers back, for the driver to drop (the
//! kernel copied them) or to hold until a zero-copy completion.
//!
//! Two batches at most (one filling, one writing) and the caps in [`Config`] bound the queue.

use ferry_buf::{BufMut, Pool, SharedBuf};
use ferry_wire::{Layout, Outgoing};

use crate::Meta;
use crate::frame::{FrameHeader, HEADER_LEN};
use crate::{Config, TransportError};

/// Most gather entries handed to one `sendmsg` (Linux `UIO_MAXIOV`).
pub(crate) const MAX_IOV: usize = 1024;

/// How a message's zero-copy values travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Placement {
    /// Copied into the staging buffer after the header segment.
    Copy,
    /// Posted as gather entries referencing their own memory.
    Gather,
}

/// One gather entry of a batch.
#[derive(Debug)]
pub(crate) enum Seg {
    /// A range of the batch's staging buffer.
    Staging { start: usize, len: usize },
    /// A referenced buffer (a zero-copy value or a caller's gather part).
    Buf(SharedBuf),
}

/// Why a frame was not queued.
#[derive(Debug)]
pub(crate) enum PushError {
    /// The filling batch has no room: flush, then push again.
    Full,
    /// The frame can never be sent.
    Fatal(TransportError),
}

impl From<TransportError> for PushError {
    fn from(e: TransportError) -> Self {
        PushError::Fatal(e)
    }
}

/// Counters the queue keeps (the driver adds syscall counts).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueCounters {
    /// Frames queued.
    pub frames: u64,
    /// Bytes queued on the wire (frame headers and payloads).
    pub wire_bytes: u64,
    /// Bytes written by the CPU into staging: frame headers, message header segments,
    /// copied fields, and zero-copy values copied in [`Mode::Copy`](crate::Mode::Copy).
    pub staged_bytes: u64,
    /// Of those, bytes of zero-copy values (values the message references) copied in user
    /// space. Zero in gather, zerocopy and uring modes.
    pub zero_copy_values_copied: u64,
    /// Bytes of zero-copy values posted as gather entries.
    pub zero_copy_values_referenced: u64,
}

#[derive(Debug, Default)]
struct Batch {
    staging: Option<BufMut>,
    segs: Vec<Seg>,
    frames: usize,
    bytes: usize,
}

#[derive(Debug)]
struct Writing {
    /// The frozen staging buffer (none for a batch of unframed parts only).
    head: Option<SharedBuf>,
    segs: Vec<Seg>,
    /// Next entry to write and the bytes of it already written.
    idx: usize,
    off: usize,
    remaining: usize,
}

/// The buffers of a fully written batch.
#[derive(Debug)]
pub(crate) struct Written {
    /// The frozen staging buffer, held (not read) for as long as the kernel may read it.
    #[expect(dead_code, reason = "held for its drop")]
    pub(crate) head: Option<SharedBuf>,
    pub(crate) segs: Vec<Seg>,
    pub(crate) bytes: usize,
}

/// See the module docs.
#[derive(Debug)]
pub(crate) struct SendQueue {
    pool: Pool,
    batch_bytes: usize,
    batch_frames: usize,
    max_frame_len: usize,
    fill: Batch,
    writing: Option<Writing>,
    written_bytes: usize,
    spare: Vec<Vec<Seg>>,
    scratch: Vec<SharedBuf>,
    counters: QueueCounters,
}

impl SendQueue {
    pub(crate) fn new(pool: &Pool, config: &Config) -> SendQueue {
        SendQueue {
            pool: pool.clone(),
            batch_bytes: config.batch_bytes.max(1),
            batch_frames: config.batch_frames.max(1),
            max_frame_len: config.max_frame_len,
            fill: Batch::default(),
            writing: None,
            written_bytes: 0,
            spare: Vec::new(),
            scratch: Vec::new(),
            counters: QueueCounters::default(),
        }
    }

    pub(crate) fn counters(&self) -> QueueCounters {
        self.counters
    }

    /// Whether the filling batch has reached a cap (the driver should flush).
    pub(crate) fn is_full(&self) -> bool {
        self.fill.frames >= self.batch_frames || self.fill.bytes >= self.batch_bytes
    }

    /// Whether nothing is queued or being written.
    pub(crate) fn is_empty(&self) -> bool {
        self.fill.frames == 0 && self.writing.is_none()
    }

    /// Whether a batch is being written.
    pub(crate) fn is_writing(&self) -> bool {
        self.writing.is_some()
    }

    fn check_len(&self, len: usize) -> Result<u32, TransportError> {
        if len > self.max_frame_len {
            return Err(TransportError::TooLong {
                len,
                max: self.max_frame_len,
            });
        }
        // `max_frame_len` is checked against the pool's largest buffer, far below 4 GiB, when
        // the connection is made; this conversion cannot fail for an accepted length.
        u32::try_from(len).map_err(|_| TransportError::TooLong {
            len,
            max: u32::MAX as usize,
        })
    }

    /// `need` contiguous bytes at the end of the staging buffer, or `Full`.
    fn staging(&mut self, need: usize) -> Result<&mut BufMut, PushError> {
        let fits = self
            .fill
            .staging
            .as_ref()
            .is_some_and(|s| s.capacity() - s.len() >= need);
        if !fits {
            // A staging buffer already holds queued frames: never replace it. (A batch of
            // unframed parts only has none yet.)
            if self.fill.staging.is_some() && self.fill.frames > 0 {
                return Err(PushError::Full);
            }
            // Room for a full batch of frames like this first one, up to the byte cap: an
            // unbatched connection (one frame per batch) then holds no more than it sends.
            let batch = need.saturating_mul(self.batch_frames).min(self.batch_bytes);
            let size = need.max(batch.min(self.pool.max_class()));
            self.fill.staging = Some(self.pool.alloc(size).map_err(TransportError::from)?);
        }
        Ok(self.fill.staging.as_mut().expect("allocated above"))
    }

    /// Appends `need` bytes written by `f` to staging, as a gather entry (merged with the
    /// previous one when adjacent). If `f` fails, nothing is appended.
    fn stage(
        &mut self,
        need: usize,
        f: impl FnOnce(&mut [u8]) -> Result<(), TransportError>,
    ) -> Result<(), PushError> {
        let staging = self.staging(need)?;
        let start = staging.len();
        f(&mut staging.capacity_mut()[start..start + need])?;
        staging.set_len(start + need);
        self.counters.staged_bytes += need as u64;
        match self.fill.segs.last_mut() {
            Some(Seg::Staging { start: s, len }) if *s + *len == start => *len += need,
            _ => self.fill.segs.push(Seg::Staging { start, len: need }),
        }
        Ok(())
    }

    fn finish_frame(&mut self, payload: usize) {
        self.fill.frames += 1;
        self.fill.bytes += HEADER_LEN + payload;
        self.counters.frames += 1;
        self.counters.wire_bytes += (HEADER_LEN + payload) as u64;
    }

    /// Queues a Ferry message whose layout is `layout` (`msg.layout()`, taken by the caller).
    /// Nothing is queued on error.
    pub(crate) fn push_message<M: Outgoing + ?Sized>(
        &mut self,
        meta: Meta,
        msg: &M,
        layout: &Layout,
        placement: Placement,
    ) -> Result<(), PushError> {
        let layout = *layout;
        let total = layout.total_len();
        let len = self.check_len(total)?;
        let header = FrameHeader { meta, len };
        // A message too large for one staging buffer keeps its values where they are, whatever
        // the placement.
        let copy = (placement == Placement::Copy || layout.zero_copy_count == 0)
            && HEADER_LEN + total <= self.pool.max_class();
        if copy {
            self.stage(HEADER_LEN + total, |out| {
                header.write(out);
                let (head, mut rest) = out[HEADER_LEN..].split_at_mut(layout.head_len);
                // The values are copied behind the segment as the write reaches them.
                msg.write_head_gather(&layout, head, &mut |value| {
                    let (dst, tail) = std::mem::take(&mut rest).split_at_mut(value.len());
                    dst.copy_from_slice(value);
                    rest = tail;
                })?;
                Ok(())
            })?;
            self.counters.zero_copy_values_copied += layout.zero_copy_len as u64;
        } else {
            let mut bufs = std::mem::take(&mut self.scratch);
            bufs.clear();
            let staged = msg
                .zero_copy_bufs(&mut bufs)
                .map_err(|e| TransportError::from(e).into())
                .and_then(|()| {
                    self.stage(HEADER_LEN + layout.head_len, |out| {
                        header.write(out);
                        Ok(msg.write_head(&layout, &mut out[HEADER_LEN..])?)
                    })
                });
            if let Err(e) = staged {
                bufs.clear();
                self.scratch = bufs;
                return Err(e);
            }
            self.counters.zero_copy_values_referenced += layout.zero_copy_len as u64;
            self.fill.segs.extend(bufs.drain(..).map(Seg::Buf));
            self.scratch = bufs;
        }
        self.finish_frame(total);
        Ok(())
    }

    /// Queues a frame whose payload `f` writes into `len` bytes of staging.
    pub(crate) fn push_with(
        &mut self,
        meta: Meta,
        len: usize,
        f: impl FnOnce(&mut [u8]),
    ) -> Result<(), PushError> {
        let header = FrameHeader {
            meta,
            len: self.check_len(len)?,
        };
        if HEADER_LEN + len > self.pool.max_class() {
            return Err(PushError::Fatal(TransportError::TooLong {
                len,
                max: self.pool.max_class() - HEADER_LEN,
            }));
        }
        self.stage(HEADER_LEN + len, |out| {
            header.write(out);
            f(&mut out[HEADER_LEN..]);
            Ok(())
        })?;
        self.finish_frame(len);
        Ok(())
    }

    /// Queues a frame of `head` (copied) followed by `parts` (referenced).
    pub(crate) fn push_gather(
        &mut self,
        meta: Meta,
        head: &[u8],
        parts: &[SharedBuf],
    ) -> Result<(), PushError> {
        let len = head.len() + parts.iter().map(SharedBuf::len).sum::<usize>();
        let header = FrameHeader {
            meta,
            len: self.check_len(len)?,
        };
        self.stage(HEADER_LEN + head.len(), |out| {
            header.write(out);
            out[HEADER_LEN..].copy_from_slice(head);
            Ok(())
        })?;
        self.fill.segs.extend(parts.iter().cloned().map(Seg::Buf));
        self.finish_frame(len);
        Ok(())
    }

    /// Queues `parts` as they are, without a frame header: a byte stream whose protocol has its
    /// own framing (RESP). Nothing is copied; nothing can be `Full`.
    pub(crate) fn push_unframed(&mut self, parts: &[SharedBuf]) {
        let len = parts.iter().map(SharedBuf::len).sum::<usize>();
        self.fill
            .segs
            .extend(parts.iter().filter(|p| !p.is_empty()).cloned().map(Seg::Buf));
        self.fill.frames += 1;
        self.fill.bytes += len;
        self.counters.frames += 1;
        self.counters.wire_bytes += len as u64;
    }

    /// Makes the filling batch the writing batch, if none is being written. Returns whether a
    /// batch is now being written.
    pub(crate) fn start_write(&mut self) -> bool {
        if self.writing.is_some() {
            return true;
        }
        if self.fill.frames == 0 {
            return false;
        }
        let spare = self.spare.pop().unwrap_or_default();
        let batch = std::mem::replace(
            &mut self.fill,
            Batch {
                segs: spare,
                ..Batch::default()
            },
        );
        let head = batch.staging.map(BufMut::freeze);
        self.writing = Some(Writing {
            head,
            segs: batch.segs,
            idx: 0,
            off: 0,
            remaining: batch.bytes,
        });
        self.written_bytes = batch.bytes;
        true
    }

    /// The writing batch's unwritten gather entries (at most [`MAX_IOV`]), into `out`.
    ///
    /// The pointers stay valid until [`take_written`](Self::take_written) returns the batch.
    pub(crate) fn iovecs(&self, out: &mut Vec<libc::iovec>) {
        out.clear();
        out.extend(self.unwritten().map(|bytes| libc::iovec {
            iov_base: bytes.as_ptr().cast_mut().cast(),
            iov_len: bytes.len(),
        }));
    }

    /// The same entries as borrowed slices (for TLS, which encrypts them in user space).
    pub(crate) fn slices<'a>(&'a self, out: &mut Vec<std::io::IoSlice<'a>>) {
        out.clear();
        out.extend(self.unwritten().map(std::io::IoSlice::new));
    }

    /// The writing batch's unwritten bytes, entry by entry (at most [`MAX_IOV`] entries).
    fn unwritten(&self) -> impl Iterator<Item = &[u8]> {
        let w = self.writing.as_ref();
        let segs = w.map_or(&[][..], |w| &w.segs[w.idx..]);
        segs.iter().enumerate().take(MAX_IOV).map(move |(i, seg)| {
            let w = w.expect("entries come from the writing batch");
            let bytes = match seg {
                Seg::Staging { start, len } => {
                    &w.head.as_ref().expect("staging entries have a staging buffer")[*start..*start + *len]
                }
                Seg::Buf(buf) => &buf[..],
            };
            if i == 0 { &bytes[w.off..] } else { bytes }
        })
    }

    /// Records that the kernel took `n` more bytes of the writing batch. Returns whether the
    /// batch is now fully written.
    pub(crate) fn advance(&mut self, mut n: usize) -> bool {
        let Some(w) = &mut self.writing else { return true };
        w.remaining -= n.min(w.remaining);
        while n > 0 && w.idx < w.segs.len() {
            let len = match &w.segs[w.idx] {
                Seg::Staging { len, .. } => *len,
                Seg::Buf(buf) => buf.len(),
            };
            let left = len - w.off;
            if n >= left {
                n -= left;
                w.idx += 1;
                w.off = 0;
            } else {
                w.off += n;
                n = 0;
            }
        }
        // Skip empty entries (empty gather parts) so that `remaining == 0` means done.
        while w.idx < w.segs.len() && matches!(&w.segs[w.idx], Seg::Buf(b) if b.is_empty()) {
            w.idx += 1;
        }
        w.remaining == 0
    }

    /// The buffers of the writing batch, once it is fully written.
    pub(crate) fn take_written(&mut self) -> Option<Written> {
        if self.writing.as_ref().is_some_and(|w| w.remaining == 0) {
            let w = self.writing.take().expect("checked above");
            return Some(Written {
                head: w.head,
                segs: w.segs,
                bytes: self.written_bytes,
            });
        }
        None
    }

    /// Whether frames are queued that are not being written yet.
    pub(crate) fn has_filling(&self) -> bool {
        self.fill.frames > 0
    }

    /// The writing batch, whatever was written of it (the connection is closing).
    pub(crate) fn take_writing(&mut self) -> Option<Written> {
        self.writing.take().map(|w| Written {
            head: w.head,
            segs: w.segs,
            bytes: self.written_bytes,
        })
    }

    /// Returns an emptied segment vector for reuse.
    pub(crate) fn recycle(&mut self, mut segs: Vec<Seg>) {
        segs.clear();
        if self.spare.len() < 4 {
            self.spare.push(segs);
        }
    }

    /// Drops every queued frame and buffer (the connection failed).
    pub(crate) fn clear(&mut self) {
        self.fill = Batch::default();
        self.writing = None;
    }
}

#[cfg(test)]
mod tests {
    use ferry_testkit::pool;

    use super::*;

    fn gathered(q: &SendQueue) -> Vec<u8> {
        let mut iov = Vec::new();
        q.iovecs(&mut iov);
        let mut out = Vec::new();
        for v in iov {
            // Test-only view of the queue's own entries, which the queue keeps alive.
            out.extend_from_slice(unsafe_free_view(&v, q));
        }
        out
    }

    /// Finds the bytes an iovec points at among the queue's live buffers, without unsafe code.
    fn unsafe_free_view<'q>(v: &libc::iovec, q: &'q SendQueue) -> &'q [u8] {
        let w = q.writing.as_ref().unwrap();
        let candidates = w
            .head
            .as_deref()
            .into_iter()
            .chain(w.segs.iter().filter_map(|s| match s {
                Seg::Buf(b) => Some(&b[..]),
                Seg::Staging { .. } => None,
            }));
        for c in candidates {
            let start = (v.iov_base as usize).wrapping_sub(c.as_ptr() as usize);
            if start <= c.len() && v.iov_len <= c.len() - start {
                return &c[start..start + v.iov_len];
            }
        }
        panic!("iovec points outside the batch");
    }

    #[test]
    fn unframed_parts_go_out_as_they_are_and_by_reference() {
        let pool = pool();
        let mut q = SendQueue::new(&pool, &Config::default());
        let framing = pool.copy_from(b"$5\r\n").unwrap();
        let value = pool.copy_from(b"hello").unwrap();
        let crlf = pool.copy_from(b"\r\n").unwrap();
        q.push_unframed(&[framing, value.clone(), pool.copy_from(b"").unwrap(), crlf]);
        q.push_with(Meta::new(1, 2), 1, |b| b[0] = b'x').unwrap();
        assert!(q.start_write());
        let mut iov = Vec::new();
        q.iovecs(&mut iov);
        assert_eq!(
            iov[1].iov_base as usize,
            value.as_ptr() as usize,
            "the value is referenced, not copied"
        );
        let mut expect = b"$5\r\nhello\r\n".to_vec();
        expect.extend_from_slice(
            &FrameHeader {
                meta: Meta::new(1, 2),
                len: 1,
            }
            .to_bytes(),
        );
        expect.push(b'x');
        assert_eq!(gathered(&q), expect);
        assert_eq!(q.counters().wire_bytes, expect.len() as u64);
        assert!(q.advance(expect.len()));
        assert!(q.take_written().is_some());
    }

    #[test]
    fn gather_batch_resumes_mid_entry() {
        let pool = pool();
        let mut q = SendQueue::new(&pool, &Config::default());
        let part = pool.copy_from(&[7u8; 1000]).unwrap();
        q.push_gather(Meta::new(1, 9), b"head", std::slice::from_ref(&part))
            .unwrap();
        q.push_with(Meta::new(2, 10), 3, |b| b.copy_from_slice(b"abc"))
            .unwrap();
        assert!(q.start_write());
        let whole = gathered(&q);
        let mut expect = FrameHeader {
            meta: Meta::new(1, 9),
            len: 1004,
        }
        .to_bytes()
        .to_vec();
        expect.extend_from_slice(b"head");
        expect.extend_from_slice(&[7u8; 1000]);
        expect.extend_from_slice(
            &FrameHeader {
                meta: Meta::new(2, 10),
                len: 3,
            }
            .to_bytes(),
        );
        expect.extend_from_slice(b"abc");
        assert_eq!(whole, expect);
        // Partial writes at every awkward boundary resume exactly.
        let mut sent = Vec::new();
        for step in [1, 15, 4, 500, 500, 1, 18] {
            let before = gathered(&q);
            sent.extend_from_slice(&before[..step]);
            let done = q.advance(step);
            assert_eq!(done, sent.len() == expect.len());
        }
        assert_eq!(sent, expect);
        let written = q.take_written().unwrap();
        assert_eq!(written.bytes, expect.len());
        assert_eq!(part.ref_count(), 2, "the batch still holds the part");
        drop(written);
        assert_eq!(part.ref_count(), 1);
    }

    #[test]
    fn caps_and_limits() {
        let pool = pool();
        let config = Config {
            batch_frames: 2,
            max_frame_len: 100,
            ..Config::default()
        };
        let mut q = SendQueue::new(&pool, &config);
        assert!(matches!(
            q.push_with(Meta::default(), 101, |_| {}),
            Err(PushError::Fatal(TransportError::TooLong { len: 101, max: 100 }))
        ));
        assert!(q.is_empty());
        q.push_with(Meta::default(), 100, |_| {}).unwrap();
        assert!(!q.is_full());
        q.push_with(Meta::default(), 100, |_| {}).unwrap();
        assert!(q.is_full());
        q.clear();
        assert!(q.is_empty());
        assert_eq!(pool.stats().buffers_outstanding(), 0);
    }

    #[test]
    fn zero_copy_values_are_gathered_from_their_own_memory() {
        use ferry_wire::Context;
        use ferry_wire::sample::Record;

        let pool = pool();
        let ctx = Context::new(pool.clone());
        let value = pool.copy_from(&[5u8; 4096]).unwrap();
        let small = [6u8; 10];
        let mut rec = Record::new(&ctx);
        rec.set_key(&small[..]);
        rec.append_field(&value[..]);
        for (placement, referenced) in [(Placement::Gather, true), (Placement::Copy, false)] {
            let mut q = SendQueue::new(&pool, &Config::default());
            q.push_message(Meta::new(1, 2), &rec, &rec.layout(), placement)
                .unwrap();
            assert!(q.start_write());
            let mut iov = Vec::new();
            q.iovecs(&mut iov);
            let points_at_value = iov.iter().any(|v| {
                std::ptr::eq(v.iov_base.cast_const().cast::<u8>(), value.as_ptr()) && v.iov_len == value.len()
            });
            assert_eq!(points_at_value, referenced, "{placement:?}");
            assert_eq!(iov.len(), if referenced { 2 } else { 1 });
            assert_eq!(value.ref_count(), if referenced { 2 } else { 1 }, "{placement:?}");
            let counters = q.counters();
            assert_eq!(
                counters.zero_copy_values_copied,
                if referenced { 0 } else { 4096 }
            );
            assert_eq!(gathered(&q), {
                let mut frame = FrameHeader {
                    meta: Meta::new(1, 2),
                    len: ferry_wire::Outgoing::to_vec(&rec).unwrap().len() as u32,
                }
                .to_bytes()
                .to_vec();
                frame.extend(ferry_wire::Outgoing::to_vec(&rec).unwrap());
                frame
            });
        }
        assert_eq!(value.ref_count(), 1);
    }
}
