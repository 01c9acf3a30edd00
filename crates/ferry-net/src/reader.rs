//! The receive side, without I/O: read buffers in, frames out.
//!
//! The driver reads into the targets [`FrameReader::read_targets`] names (one `readv`) and
//! reports how many bytes arrived; [`FrameReader::next_frame`] then hands out frames.
//!
//! - **Batched reads.** Reads land in a pool buffer of [`Config::read_buf`] bytes. A frame
//!   wholly inside it is handed up as a [`SharedBuf`] sub-buffer: no copy, and the decoder
//!   reads it in place. Many small frames arrive per read.
//! - **Exact reads.** Once a *large* frame has been seen ([`Config::exact_read_min`] bytes or
//!   more, header included, or too long for a read buffer), each read ends at the end of the
//!   next frame's 16-byte header: the header is parsed, the frame's payload gets a pool buffer
//!   of its exact size, and the next read fills it (plus the following header, into a 16-byte
//!   array) and nothing more. No frame is then ever cut by the end of a read, so none is
//!   copied. After [`EXACT_SMALL_RUN`] small frames in a row, reads are batched again.
//! - **Predicted reads.** One read per frame would be the cost of exact reads; instead, when
//!   the last two large frames had the same payload length (streams of large frames are
//!   usually uniform), an exact read also carries, after the next header, up to
//!   [`MAX_GUESSES`] pairs of a payload buffer of that length and a 16-byte header array (at
//!   most [`GUESS_BYTES`] and a read buffer in all), and only while the pending frame has that
//!   length too. When a header is parsed (checked first, as always) and its length is the
//!   predicted one, the buffer after it already holds its payload: it becomes the pending
//!   payload, the next header array the next header, and nothing is copied
//!   ([`RecvCounters::predicted`]). Otherwise ([`RecvCounters::mispredicted`]): a shorter
//!   frame whole in its buffer is handed out as a prefix of it; a frame whose buffer can hold
//!   it and past which nothing was read goes on filling it; else it gets a buffer of its exact
//!   size. Bytes read past it (into the following pairs) are moved to its payload and then to
//!   a read buffer, which parses them as a batched read would: copied, counted in
//!   [`RecvCounters::copied`]. Unused predicted buffers go back to the pool. Predictions come
//!   only from frames already checked; a peer's header never sizes an allocation before its
//!   check.
//! - **Cut frames.** A frame cut by the end of a batched read (with other frames before it in
//!   the read buffer, which is frozen to hand them out) gets a payload buffer of its exact
//!   size: the part of its payload already read is copied there, the only payload copy on
//!   this path ([`RecvCounters::straddled`]), and the rest is read straight into it, together
//!   with the next read buffer in the same `readv`. Its header is parsed where it lies, never
//!   copied. A *header* cut by the end of a read is carried (at most 15 bytes copied,
//!   [`RecvCounters::split_headers`]) to the front of the next read buffer, or to the header
//!   array in exact reads.
//! - Headers are checked (version, length against [`Config::max_frame_len`]) before anything
//!   is allocated for the frame, so a peer's header never allocates beyond that limit.
//! - The buffers of frames in progress (the pending payload and the predicted buffers) are
//!   charged to [`Config::frame_budget`], which a server's connections share: a frame that
//!   would pass it fails with [`FrameError::OverBudget`], predicted buffers without room are
//!   not made. So peers that announce long frames and send nothing hold at most the budget
//!   between them, whatever their number.
//!
//! Which payloads can still be copied: those of frames whose header arrived in a batched read
//! and which that read ended inside (small frames, and at most one large frame each time reads
//! turn exact: the one the last batched read ended inside), and, when a prediction fails, the
//! mispredicted frame's and the bytes read past it (at most two large frames copied per
//! misprediction). A frame whose header arrives in an exact read is otherwise never copied,
//! however short the reads, and the payload of a frame read into a predicted buffer never is.
//! Besides payloads, only split headers are copied: a header that the end of a batched read
//! cut has its first bytes (at most 15) carried, whatever its frame, predicted or not.
//!
//! [`FrameReader`] is public so that other drivers (and the `frame_reader` fuzz target) can
//! feed it: peer bytes go in through [`read_targets`](FrameReader::read_targets) and
//! [`filled`](FrameReader::filled), frames or typed errors come out of
//! [`next_frame`](FrameReader::next_frame), and no input makes it panic.
//!
//! ```text
//!  batched:  readv [ rest of a cut frame's payload        | read buffer (read_buf)       ]
//!  exact:    readv [ payload buffer (exact size)          | next header (16 B, an array) ]
//!            or    [ read buffer, to its first frame's end | next header (16 B, an array) ]
//!  predicted: the exact targets, then up to MAX_GUESSES pairs
//!                  [ payload buffer (predicted size) | header (16 B) ] ...
//! ```

use std::collections::VecDeque;
use std::io::IoSliceMut;

use ferry_buf::{BufMut, Pool, SharedBuf};

use crate::frame::{FrameHeader, HEADER_LEN};
use crate::{Config, FrameError, Meta, TransportError};

/// Small frames in a row after which exact reads stop and whole read buffers are read again
/// (each small frame costs a read of its own while reads are exact).
pub const EXACT_SMALL_RUN: u32 = 8;

/// At most this many predicted (payload buffer, header) pairs follow the next header in an
/// exact read.
pub const MAX_GUESSES: usize = 8;

/// At most this many bytes (payloads and headers) are read into predicted buffers per read
/// (and never more than a read buffer: a misprediction moves them into one).
pub const GUESS_BYTES: usize = 256 << 10;

/// The most targets [`FrameReader::read_targets`] names: a payload or read buffer, the next
/// header, and [`MAX_GUESSES`] predicted pairs.
pub const MAX_READ_TARGETS: usize = 2 + 2 * MAX_GUESSES;

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

    /// A frame of `payload` with `meta`, as if received: what a receiver makes of a payload it
    /// copied into its pool from elsewhere (ferry-rpc copies the shared-memory frames a slow
    /// stream reader holds, which would otherwise hold the peer's blocks). `None` if the
    /// payload is longer than a frame can say (4 GiB).
    pub fn from_parts(meta: Meta, payload: SharedBuf) -> Option<Frame> {
        let len = u32::try_from(payload.len()).ok()?;
        Some(Frame {
            header: FrameHeader { meta, len },
            payload,
        })
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
    /// Read calls that found nothing (`EAGAIN`).
    pub empty_reads: u64,
    /// Frames cut by the end of a read whose already-read payload bytes were copied to a
    /// buffer of their own (a frame cut right after its header is not copied, not counted).
    pub straddled: u64,
    /// Frame headers cut by the end of a read, whose first bytes (at most 15) were carried.
    pub split_headers: u64,
    /// Bytes copied in user space: the already-read payload part of straddling frames, the
    /// carried bytes of split headers, and the bytes read into predicted buffers that a
    /// misprediction moved. Nothing else is ever copied.
    pub copied: u64,
    /// Frames whose payload was read into a buffer sized by a prediction that held (exact
    /// reads of uniform large frames): their payloads are never copied.
    pub predicted: u64,
    /// Frames whose length differed from the prediction after bytes had been read past their
    /// header into predicted buffers (those bytes were moved, counted in `copied`, unless the
    /// frame's payload simply went on filling its predicted buffer).
    pub mispredicted: u64,
}

/// The targets of one read, in stream order (see [`FrameReader::read_targets`]): never
/// empty, each slice non-empty.
pub struct ReadTargets<'a> {
    slices: [&'a mut [u8]; MAX_READ_TARGETS],
    len: usize,
}

impl<'a> ReadTargets<'a> {
    /// The targets, in order.
    pub fn slices(&mut self) -> &mut [&'a mut [u8]] {
        &mut self.slices[..self.len]
    }

    /// How many targets there are.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never true (there is always somewhere to read to).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Their total length.
    pub fn total(&self) -> usize {
        self.slices[..self.len].iter().map(|s| s.len()).sum()
    }

    /// The targets as `readv` entries: pass `&mut iov[..n]`.
    pub fn io_slices(&mut self) -> ([IoSliceMut<'_>; MAX_READ_TARGETS], usize) {
        let mut it = self.slices.iter_mut();
        let iov = std::array::from_fn(|_| IoSliceMut::new(it.next().expect("MAX_READ_TARGETS slices")));
        (iov, self.len)
    }
}

/// A payload buffer sized by a prediction, then the header that follows it.
#[derive(Debug)]
struct Guess {
    /// The predicted payload length (the buffer's capacity may be more).
    len: usize,
    buf: BufMut,
    head: [u8; HEADER_LEN],
    head_len: usize,
}

/// What a target of [`FrameReader::read_targets`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// Nothing (an empty slice).
    None,
    /// The pending frame's payload buffer.
    Pending,
    /// The header array.
    Head,
    /// The read buffer.
    Next,
    /// A predicted payload buffer (`chain[i].buf`).
    Guess(usize),
    /// The header after it (`chain[i].head`).
    GuessHead(usize),
}

/// The sans-IO receive state of one stream (see the module docs): call
/// [`next_frame`](Self::next_frame) until it returns `None`, then read into
/// [`read_targets`](Self::read_targets) and report the count with [`filled`](Self::filled).
///
/// Stream order of the bytes not yet handed out: `ready` (a frame to hand out), `cur[pos..]`
/// (a frozen read buffer), then the pending frame (header parsed, payload in its exact
/// buffer), then `next` (the read buffer being filled), then `head` (a header read on its
/// own), then `chain` (predicted payload buffers, each followed by a header array). Reads fill
/// them in that order, and a later one only once the earlier ones are used up or whole.
#[derive(Debug)]
pub struct FrameReader {
    pool: Pool,
    max_frame_len: usize,
    read_buf: usize,
    /// Frames this long (header included) or longer are large: `exact_read_min`, or longer
    /// than a read buffer.
    large_min: usize,
    /// Bytes of an earlier read, handed out from `pos`.
    cur: Option<SharedBuf>,
    pos: usize,
    /// The read buffer batched reads fill.
    next: Option<BufMut>,
    /// A frame whose header is parsed, its payload filling a buffer of its exact size.
    pending: Option<(FrameHeader, BufMut)>,
    /// The next frame's header, read on its own (exact reads) or carried from a read's end.
    head: [u8; HEADER_LEN],
    head_len: usize,
    /// Reads end at the end of the next frame's header (see the module docs).
    exact: bool,
    /// Small frames handed out in a row while `exact`.
    small_run: u32,
    /// Predicted (payload, header) pairs after `head` in stream order (exact reads only).
    chain: VecDeque<Guess>,
    /// A frame handed out before everything else: a frame shorter than its prediction, a
    /// prefix of its predicted buffer.
    ready: Option<(FrameHeader, SharedBuf)>,
    /// The payload length of the last large frame handed out, and whether the one before it
    /// had the same (then it is the prediction).
    last_large: usize,
    uniform: bool,
    /// The last targets and their lengths (for `filled`).
    targets: [(Target, usize); MAX_READ_TARGETS],
    target_count: usize,
    /// Stream offset of the next frame's header: bytes of the frames handed out.
    offset: u64,
    counters: RecvCounters,
    /// What the buffers of frames in progress are charged to, and how much they hold of it.
    budget: crate::FrameBudget,
    charged: usize,
}

impl FrameReader {
    /// A reader taking its buffers from `pool`, with `config`'s `max_frame_len`, `read_buf`
    /// and `exact_read_min`.
    pub fn new(pool: &Pool, config: &Config) -> FrameReader {
        let read_buf = config.read_buf.clamp(HEADER_LEN, pool.max_class());
        FrameReader {
            pool: pool.clone(),
            max_frame_len: config.max_frame_len,
            read_buf,
            large_min: config.exact_read_min.min(read_buf + 1),
            cur: None,
            pos: 0,
            next: None,
            pending: None,
            head: [0; HEADER_LEN],
            head_len: 0,
            exact: false,
            small_run: 0,
            chain: VecDeque::new(),
            ready: None,
            last_large: 0,
            uniform: false,
            targets: [(Target::None, 0); MAX_READ_TARGETS],
            target_count: 0,
            offset: 0,
            counters: RecvCounters::default(),
            budget: config.frame_budget.clone(),
            charged: 0,
        }
    }

    /// Bytes the buffers of frames in progress hold: the pending payload's and the predicted
    /// buffers' lengths.
    fn held(&self) -> usize {
        let pending = self.pending.as_ref().map_or(0, |(h, _)| h.len as usize);
        pending + self.chain.iter().map(|g| g.len).sum::<usize>()
    }

    /// Brings the charge to the budget to what is held: gives back what was handed out or
    /// dropped, takes what was allocated. Past the budget, fails naming the frame in progress
    /// (its connection closes, and the charge is given back when the reader is cleared).
    fn settle(&mut self) -> Result<(), TransportError> {
        let held = self.held();
        if held < self.charged {
            self.budget.give(self.charged - held);
        } else if held > self.charged && !self.budget.take(held - self.charged) {
            return Err(TransportError::Frame {
                offset: self.offset,
                error: FrameError::OverBudget {
                    len: self.pending.as_ref().map_or(held, |(h, _)| h.len as usize),
                    in_use: self.budget.in_use(),
                    limit: self.budget.limit(),
                },
            });
        }
        self.charged = held;
        Ok(())
    }

    /// What was received and copied so far.
    pub fn counters(&self) -> RecvCounters {
        self.counters
    }

    /// Whether reads are exact now (see the module docs).
    pub fn is_exact(&self) -> bool {
        self.exact
    }

    #[inline]
    fn parse(&self, bytes: &[u8]) -> Result<FrameHeader, TransportError> {
        let header: &[u8; HEADER_LEN] = bytes[..HEADER_LEN].try_into().expect("HEADER_LEN bytes");
        FrameHeader::parse(header, self.max_frame_len).map_err(|error: FrameError| TransportError::Frame {
            offset: self.offset,
            error,
        })
    }

    /// A frame (of payload `len`) read on its own: at least `exact_read_min` long, header
    /// included, or too long for a read buffer.
    #[inline]
    fn is_large(&self, len: usize) -> bool {
        HEADER_LEN + len >= self.large_min
    }

    /// Turns exact reads on if a frame of `len` is large; says whether it is.
    #[inline]
    fn saw(&mut self, len: usize) -> bool {
        let large = self.is_large(len);
        if large {
            self.exact = true;
            self.small_run = 0;
        }
        large
    }

    #[inline]
    fn hand_out(&mut self, header: FrameHeader, payload: SharedBuf) -> Frame {
        self.offset += (HEADER_LEN + header.len as usize) as u64;
        self.counters.frames += 1;
        let len = header.len as usize;
        if self.is_large(len) {
            self.uniform = len == self.last_large;
            self.last_large = len;
        }
        if !self.saw(len) && self.exact {
            self.small_run += 1;
            if self.small_run >= EXACT_SMALL_RUN {
                self.exact = false;
            }
        }
        Frame { header, payload }
    }

    /// Gives the frame of `header` (checked) a payload buffer of its exact size, holding
    /// `already` (payload bytes read with an earlier frame: copied, counted).
    fn start_pending(&mut self, header: FrameHeader, already: &[u8]) -> Result<(), TransportError> {
        let mut buf = self.pool.alloc(header.len as usize)?;
        if !already.is_empty() {
            buf.extend_from_slice(already);
            self.counters.copied += already.len() as u64;
            self.counters.straddled += 1;
        }
        self.saw(header.len as usize);
        self.pending = Some((header, buf));
        Ok(())
    }

    /// The next complete frame among the bytes read so far, if any.
    #[inline]
    pub fn next_frame(&mut self) -> Result<Option<Frame>, TransportError> {
        // The common case, kept small: a whole frame in the current read buffer.
        if let (None, Some(cur)) = (&self.pending, &self.cur) {
            let rest = &cur[self.pos..];
            if rest.len() >= HEADER_LEN {
                let header = self.parse(rest)?;
                let total = HEADER_LEN + header.len as usize;
                if rest.len() >= total {
                    let payload = cur.slice(self.pos + HEADER_LEN..self.pos + total);
                    self.pos += total;
                    return Ok(Some(self.hand_out(header, payload)));
                }
            }
        }
        self.next_frame_slow()
    }

    /// [`next_frame`](Self::next_frame), every case.
    #[inline(never)]
    fn next_frame_slow(&mut self) -> Result<Option<Frame>, TransportError> {
        let frame = self.next_frame_any();
        self.settle()?;
        frame
    }

    /// [`next_frame_slow`](Self::next_frame_slow) before the budget is settled.
    fn next_frame_any(&mut self) -> Result<Option<Frame>, TransportError> {
        loop {
            if let Some((header, payload)) = self.ready.take() {
                return Ok(Some(self.hand_out(header, payload)));
            }
            if let Some((header, buf)) = &self.pending {
                if buf.len() < header.len as usize {
                    return Ok(None);
                }
                let (header, buf) = self.pending.take().expect("checked above");
                return Ok(Some(self.hand_out(header, buf.freeze())));
            }
            if let Some(cur) = &self.cur {
                let rest = &cur[self.pos..];
                if rest.len() >= HEADER_LEN {
                    let header = self.parse(rest)?;
                    let total = HEADER_LEN + header.len as usize;
                    if rest.len() >= total {
                        let payload = cur.slice(self.pos + HEADER_LEN..self.pos + total);
                        self.pos += total;
                        return Ok(Some(self.hand_out(header, payload)));
                    }
                    // Cut by the end of the read: the payload goes to a buffer of its exact
                    // size, the part already read copied there (nothing if it was cut right
                    // after its header), the rest read straight into it.
                    let (cur, pos) = (self.cur.take().expect("matched above"), self.pos);
                    self.start_pending(header, &cur[pos + HEADER_LEN..])?;
                } else if !rest.is_empty() {
                    // A split header: carry its few bytes to the header array (exact reads) or
                    // to the front of the next read buffer (empty: reads only happen once
                    // `cur` is used up). Not handed out: `offset` moves when their frame is.
                    let (cur, pos) = (self.cur.take().expect("matched above"), self.pos);
                    let rest = &cur[pos..];
                    self.counters.copied += rest.len() as u64;
                    self.counters.split_headers += 1;
                    if self.exact {
                        self.head[..rest.len()].copy_from_slice(rest);
                        self.head_len = rest.len();
                    } else {
                        let next = self.next_buf()?;
                        debug_assert!(next.is_empty());
                        next.extend_from_slice(rest);
                    }
                }
                self.cur = None;
                self.pos = 0;
                continue;
            }
            // Hand the read buffer over to parsing once it holds a whole frame, or a frame
            // that cannot complete inside it. Until then reads keep filling it: no copy.
            if let Some(next) = self.next.as_ref().filter(|n| !n.is_empty()) {
                if next.len() < HEADER_LEN {
                    return Ok(None);
                }
                let header = self.parse(next)?;
                let total = HEADER_LEN + header.len as usize;
                if next.len() < total && total <= next.capacity() {
                    // A large one: read the rest of it, then the next header on its own.
                    self.saw(header.len as usize);
                    return Ok(None);
                }
                self.cur = Some(self.next.take().expect("checked above").freeze());
                self.pos = 0;
                continue;
            }
            // The header array comes last in the stream (after the read buffer's first frame).
            if self.head_len == HEADER_LEN {
                let head = self.head;
                let header = self.parse(&head)?;
                self.head_len = 0;
                self.head_frame(header)?;
                continue;
            }
            return Ok(None);
        }
    }

    /// The frame of the (checked) header just read into the header array. Its payload follows
    /// in the first predicted buffer, if there is one: when the prediction holds, that buffer
    /// is its payload buffer (no copy) and the header after it the next header. Otherwise the
    /// bytes read into predicted buffers are moved where they belong (counted).
    fn head_frame(&mut self, header: FrameHeader) -> Result<(), TransportError> {
        let len = header.len as usize;
        let Some(first) = self.chain.front() else {
            return self.start_pending(header, &[]);
        };
        if first.len == len {
            let guess = self.chain.pop_front().expect("front above");
            self.counters.predicted += 1;
            self.saw(len);
            self.pending = Some((header, guess.buf));
            self.head = guess.head;
            self.head_len = guess.head_len;
            return Ok(());
        }
        let mut chain = std::mem::take(&mut self.chain);
        let first = chain.pop_front().expect("front above");
        let read = first.buf.len();
        if first.head_len == 0 && read <= len && first.buf.capacity() >= len {
            // Nothing was read past this buffer, which can hold the whole payload: it goes on
            // filling it. The later predicted buffers are empty (dropped).
            if read > 0 {
                self.counters.mispredicted += 1;
            }
            self.saw(len);
            self.pending = Some((header, first.buf));
            return Ok(());
        }
        self.counters.mispredicted += 1;
        debug_assert!(self.next.as_ref().is_none_or(|n| n.is_empty()));
        if read >= len {
            // Shorter than predicted and whole: a prefix of its buffer. What was read after it
            // moves to the read buffer.
            let buf = first.buf.freeze();
            self.ready = Some((header, buf.slice(0..len)));
            self.spill(&buf[len..])?;
        } else {
            // Longer than its buffer (or bytes were read past it): a buffer of its exact size,
            // the bytes already read copied there, what follows it to the read buffer.
            let mut buf = self.pool.alloc(len)?;
            buf.extend_from_slice(&first.buf);
            self.counters.copied += read as u64;
            self.saw(len);
            self.pending = Some((header, buf));
            if read > 0 || first.head_len > 0 {
                self.counters.straddled += 1;
            }
        }
        self.spill(&first.head[..first.head_len])?;
        for guess in &chain {
            self.spill(&guess.buf)?;
            self.spill(&guess.head[..guess.head_len])?;
        }
        Ok(())
    }

    /// Moves bytes read into predicted buffers after a misprediction: to the pending payload
    /// while it is short, then to the read buffer (which holds them: the predicted targets of
    /// one read total at most a read buffer).
    fn spill(&mut self, mut bytes: &[u8]) -> Result<(), TransportError> {
        if bytes.is_empty() {
            return Ok(());
        }
        self.counters.copied += bytes.len() as u64;
        if let Some((header, buf)) = &mut self.pending {
            let take = (header.len as usize - buf.len()).min(bytes.len());
            buf.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        if !bytes.is_empty() {
            self.next_buf()?.extend_from_slice(bytes);
        }
        Ok(())
    }

    /// The predicted payload length of the next large frames: that of the last two large
    /// frames, when they were equal.
    fn guess(&self) -> Option<usize> {
        (self.uniform && self.last_large > 0).then_some(self.last_large)
    }

    /// Keeps `chain` at the predicted buffers an exact read should carry (all empty here).
    fn plan_guesses(&mut self, guess: Option<usize>) {
        debug_assert!(self.chain.iter().all(|g| g.buf.is_empty() && g.head_len == 0));
        let Some(len) = guess else {
            self.chain.clear();
            return;
        };
        let count = (GUESS_BYTES.min(self.read_buf) / (len + HEADER_LEN)).min(MAX_GUESSES);
        if self.chain.front().is_some_and(|g| g.len != len) {
            self.chain.clear();
        }
        self.chain.truncate(count);
        while self.chain.len() < count {
            // A prediction is an optimisation: without pool or budget room, fewer of them.
            if self.budget.in_use() + len > self.budget.limit() {
                break;
            }
            let Ok(buf) = self.pool.alloc(len) else { break };
            self.chain.push_back(Guess {
                len,
                buf,
                head: [0; HEADER_LEN],
                head_len: 0,
            });
        }
    }

    fn next_buf(&mut self) -> Result<&mut BufMut, TransportError> {
        if self.next.is_none() {
            self.next = Some(self.pool.alloc(self.read_buf)?);
        }
        Ok(self.next.as_mut().expect("allocated above"))
    }

    /// Where the next read should go, in order (call only after
    /// [`next_frame`](Self::next_frame) returned `None`), for one `readv`:
    ///
    /// - batched: the rest of a cut frame's payload (exact size), then the read buffer;
    /// - exact: the rest of the pending frame's payload, or of the read buffer's first frame,
    ///   then the header array (the read ends at the end of the next frame's header), then,
    ///   when the last large frames had one length, up to [`MAX_GUESSES`] pairs of a payload
    ///   buffer of that length and a header array.
    pub fn read_targets(&mut self) -> Result<ReadTargets<'_>, TransportError> {
        debug_assert!(
            self.pending.is_none() || self.next.as_ref().is_none_or(|n| n.is_empty()),
            "read buffer bytes come after the pending payload"
        );
        debug_assert!(self.ready.is_none(), "next_frame hands it out first");
        let next_len = self.next.as_ref().map_or(0, |n| n.len());
        // The read buffer's first frame, when its header is there (checked by `next_frame`: it
        // fits the buffer and is not whole yet).
        let first_total = match &self.next {
            Some(next) if next_len >= HEADER_LEN => {
                Some(HEADER_LEN + u32::from_le_bytes(next[4..8].try_into().expect("4 bytes")) as usize)
            }
            _ => None,
        };
        let (first, second, second_end) = if self.pending.is_some() {
            // The payload's buffer, then the next header (exact) or a read buffer (batched).
            if self.exact {
                (Target::Pending, Target::Head, HEADER_LEN)
            } else {
                (Target::Pending, Target::Next, usize::MAX)
            }
        } else if first_total.is_some() {
            if self.exact {
                // The rest of that frame, then the next header on its own.
                (Target::Next, Target::Head, HEADER_LEN)
            } else {
                (Target::None, Target::Next, usize::MAX)
            }
        } else if next_len > 0 {
            // A header carried to the read buffer: exact reads complete just the header.
            let end = if self.exact { HEADER_LEN } else { usize::MAX };
            (Target::None, Target::Next, end)
        } else if self.exact || self.head_len > 0 {
            (Target::None, Target::Head, HEADER_LEN)
        } else {
            (Target::None, Target::Next, usize::MAX)
        };
        if second == Target::Next {
            self.next_buf()?;
        }
        // Predicted pairs after the header: only while the frame before it has the predicted
        // length too (a stream whose lengths change reads one frame at a time, uncopied).
        let guess = self.guess().filter(|&len| {
            self.exact
                && second == Target::Head
                && self.pending.as_ref().is_none_or(|(h, _)| h.len as usize == len)
                && first_total.is_none_or(|total| total == HEADER_LEN + len)
        });
        self.plan_guesses(guess);
        if self.settle().is_err() {
            // Another connection took the room meanwhile: no predictions this time.
            self.chain.clear();
            self.settle()?;
        }
        let FrameReader {
            pending,
            next,
            head,
            head_len,
            chain,
            targets,
            target_count,
            ..
        } = self;
        let head = &mut head[*head_len..];
        let pending = pending.as_mut().map(|(header, buf)| {
            let start = buf.len();
            &mut buf.capacity_mut()[start..header.len as usize]
        });
        let next = next.as_mut().map(|next| &mut next.capacity_mut()[next_len..]);
        let (first_slice, second_slice): (&mut [u8], &mut [u8]) = match (first, second, pending, next) {
            (Target::Pending, Target::Head, Some(pending), _) => (pending, head),
            (Target::Pending, Target::Next, Some(pending), Some(next)) => {
                let end = second_end.min(next.len());
                (pending, &mut next[..end])
            }
            (Target::Next, Target::Head, _, Some(next)) => {
                let end = first_total.expect("header above") - next_len;
                (&mut next[..end], head)
            }
            (Target::None, Target::Next, _, Some(next)) => {
                let end = (second_end - next_len.min(second_end)).min(next.len());
                (&mut [][..], &mut next[..end])
            }
            (Target::None, Target::Head, ..) => (&mut [][..], head),
            _ => unreachable!("targets chosen above"),
        };
        let mut out = ReadTargets {
            slices: std::array::from_fn(|_| &mut [][..]),
            len: 0,
        };
        let mut n = 0;
        for (target, slice) in [(first, first_slice), (second, second_slice)] {
            if !slice.is_empty() {
                targets[n] = (target, slice.len());
                out.slices[n] = slice;
                n += 1;
            }
        }
        for (i, guess) in chain.iter_mut().enumerate() {
            let Guess { len, buf, head, .. } = guess;
            targets[n] = (Target::Guess(i), *len);
            out.slices[n] = &mut buf.capacity_mut()[..*len];
            targets[n + 1] = (Target::GuessHead(i), HEADER_LEN);
            out.slices[n + 1] = &mut head[..];
            n += 2;
        }
        *target_count = n;
        out.len = n;
        debug_assert!(n > 0, "read targets are never empty");
        Ok(out)
    }

    /// Records that a read put `n > 0` bytes into the targets, in order.
    ///
    /// # Panics
    /// If `n` exceeds the total length of the targets [`read_targets`](Self::read_targets)
    /// returned (a driver bug, not a peer's).
    pub fn filled(&mut self, n: usize) {
        let count = std::mem::take(&mut self.target_count);
        let total: usize = self.targets[..count].iter().map(|t| t.1).sum();
        assert!(
            n <= total,
            "filled({n}) beyond the {total} bytes of the read targets"
        );
        self.counters.reads += 1;
        self.counters.bytes += n as u64;
        let mut rest = n;
        for k in 0..count {
            if rest == 0 {
                break;
            }
            let (target, len) = self.targets[k];
            let take = rest.min(len);
            self.fill(target, take);
            rest -= take;
        }
    }

    fn fill(&mut self, target: Target, n: usize) {
        if n == 0 {
            return;
        }
        match target {
            Target::Pending => {
                let (_, buf) = self.pending.as_mut().expect("read_targets named it");
                buf.set_len(buf.len() + n);
            }
            Target::Next => {
                let next = self.next.as_mut().expect("read_targets allocated it");
                next.set_len(next.len() + n);
            }
            Target::Head => self.head_len += n,
            Target::Guess(i) => {
                let buf = &mut self.chain[i].buf;
                buf.set_len(buf.len() + n);
            }
            Target::GuessHead(i) => self.chain[i].head_len += n,
            Target::None => unreachable!("an empty target took no bytes"),
        }
    }

    /// The error for an end of stream now: [`TransportError::Closed`] between frames, else
    /// [`TransportError::Truncated`] (`received`: the bytes after the last frame handed out).
    pub fn eof(&self) -> TransportError {
        let rest = self.cur.as_ref().map_or(0, |c| c.len() - self.pos)
            + self.head_len
            + self.next.as_ref().map_or(0, |n| n.len());
        if let Some((header, buf)) = &self.pending {
            return TransportError::Truncated {
                received: HEADER_LEN + buf.len() + rest,
                expected: HEADER_LEN + header.len as usize,
            };
        }
        if rest == 0 {
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
            received: rest,
            expected,
        }
    }

    /// Bytes the stream must still bring before the frame in progress is whole: zero when no
    /// byte of it has come. Never more than that, so a socket told to report readable only
    /// once that many have come (`SO_RCVLOWAT`, see [`Receiver`](crate::Receiver)) reports
    /// it by the end of the frame at the latest.
    pub fn missing(&self) -> usize {
        if self.ready.is_some() {
            return 0;
        }
        if let Some((header, buf)) = &self.pending {
            return (header.len as usize).saturating_sub(buf.len());
        }
        if let Some(next) = self.next.as_ref().filter(|n| !n.is_empty()) {
            if next.len() < HEADER_LEN {
                return HEADER_LEN - next.len();
            }
            let len = u32::from_le_bytes(next[4..8].try_into().expect("4 bytes")) as usize;
            return (HEADER_LEN + len).saturating_sub(next.len());
        }
        if self.head_len > 0 {
            return HEADER_LEN.saturating_sub(self.head_len);
        }
        0
    }

    /// The socket had nothing to read: gives back the read buffer if no byte landed in it, so
    /// that a connection that waits holds no read buffer (2,000 idle connections would hold
    /// 2,000 of them). The next read takes one again from the pool.
    pub fn idle(&mut self) {
        self.counters.empty_reads += 1;
        self.give_back_untouched();
    }

    /// Gives back the read buffer if no byte landed in it (see [`idle`](Self::idle)), without
    /// counting a read: the last read already emptied the socket.
    pub fn give_back_untouched(&mut self) {
        self.target_count = 0;
        if self.next.as_ref().is_some_and(|n| n.is_empty()) {
            self.next = None;
        }
    }

    /// Drops every buffer (the connection failed or closed).
    pub fn clear(&mut self) {
        self.cur = None;
        self.next = None;
        self.pending = None;
        self.head_len = 0;
        self.chain.clear();
        self.ready = None;
        self.target_count = 0;
        let _ = self.settle();
    }
}

impl Drop for FrameReader {
    fn drop(&mut self) {
        self.budget.give(self.charged);
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
        // Byte i is (7 i + kind) mod 256, a pattern of period 256: built once and repeated (a
        // byte-at-a-time loop made the large-frame property tests take minutes in debug builds).
        let period: Vec<u8> = (0..256).map(|i| (i * 7 + kind as usize) as u8).collect();
        out.reserve(len);
        for _ in 0..len / 256 {
            out.extend_from_slice(&period);
        }
        out.extend_from_slice(&period[..len % 256]);
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
            let mut targets = r.read_targets().unwrap();
            // Emulate readv: fill the targets in order.
            let mut n = 0;
            for target in targets.slices() {
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

    /// What [`feed_traced`] saw: per frame, the bytes copied for it and whether its header
    /// began in an exact read; per read, its stream range and whether it was exact.
    struct Trace {
        frames: Vec<Frame>,
        reader: FrameReader,
        /// Per frame: bytes copied for it, its payload's and its header's.
        copied: Vec<u64>,
        /// Per frame: of those, the first bytes of its header (at most 15) carried from the end
        /// of a read (a split header), which a frame whose payload was read in place can have.
        carried: Vec<u64>,
        straddled: Vec<u64>,
        /// Per frame: read into a buffer sized by a prediction that held (1) or not (0).
        predicted: Vec<u64>,
        announced_exact: Vec<bool>,
        reads: Vec<(usize, usize, bool)>,
    }

    impl Trace {
        /// Reads that delivered no byte of a frame with a payload of `large` bytes or more.
        fn small_only_reads(&self, lens: &[usize], large: usize) -> usize {
            let mut spans = Vec::new();
            let mut at = 0;
            for &len in lens {
                spans.push((at, at + HEADER_LEN + len, len >= large));
                at += HEADER_LEN + len;
            }
            self.reads
                .iter()
                .filter(|&&(from, to, _)| !spans.iter().any(|&(a, b, big)| big && a < to && from < b))
                .count()
        }

        /// Times reads turned exact (one batched read, then an exact one).
        fn turned_exact(&self) -> usize {
            self.reads.windows(2).filter(|w| !w[0].2 && w[1].2).count()
        }

        /// Bytes of frame `k`'s payload copied (its copies but its carried header bytes).
        fn payload_copied(&self, k: usize) -> u64 {
            self.copied[k] - self.carried[k]
        }
    }

    /// [`feed`], tracing copies per frame (the copies made between handing out frame `k - 1`
    /// and frame `k` are frame `k`'s: its payload, or its split header) and reads. A split
    /// header is told apart by `split_headers`: the `next_frame` call that carries one ends
    /// with it (nothing is left of its read buffer), so what that call copied is the carry.
    fn feed_traced(config: &Config, pool: &Pool, stream: &[u8], chunks: &[usize]) -> Trace {
        let mut t = Trace {
            frames: Vec::new(),
            reader: FrameReader::new(pool, config),
            copied: Vec::new(),
            carried: Vec::new(),
            straddled: Vec::new(),
            predicted: Vec::new(),
            announced_exact: Vec::new(),
            reads: Vec::new(),
        };
        let mut last = RecvCounters::default();
        let mut carried = 0;
        let mut drain = |t: &mut Trace| loop {
            let before = t.reader.counters();
            let f = t.reader.next_frame().unwrap();
            let c = t.reader.counters();
            if c.split_headers > before.split_headers {
                let bytes = c.copied - before.copied;
                assert!(
                    f.is_none() && c.split_headers == before.split_headers + 1 && bytes < HEADER_LEN as u64,
                    "a split header's carry is all its call copies: {before:?} -> {c:?}"
                );
                carried += bytes;
            }
            let Some(f) = f else { break };
            t.copied.push(c.copied - last.copied);
            t.carried.push(std::mem::take(&mut carried));
            t.straddled.push(c.straddled - last.straddled);
            t.predicted.push(c.predicted - last.predicted);
            last = c;
            t.frames.push(f);
        };
        let mut at = 0;
        let mut chunks = chunks.iter().cycle();
        while at < stream.len() {
            drain(&mut t);
            let want = *chunks.next().unwrap();
            let exact = t.reader.is_exact();
            let mut targets = t.reader.read_targets().unwrap();
            let mut n = 0;
            for target in targets.slices() {
                let take = target.len().min(want - n).min(stream.len() - at - n);
                target[..take].copy_from_slice(&stream[at + n..at + n + take]);
                n += take;
            }
            assert!(n > 0);
            t.reader.filled(n);
            t.reads.push((at, at + n, exact));
            at += n;
        }
        drain(&mut t);
        let mut start = 0;
        for f in &t.frames {
            let read = t
                .reads
                .iter()
                .find(|&&(a, b, _)| a <= start && start < b)
                .unwrap();
            t.announced_exact.push(read.2);
            start += HEADER_LEN + f.header.len as usize;
        }
        t
    }

    fn check_bytes(frames: &[Frame], lens: &[usize]) -> Result<(), TestCaseError> {
        prop_assert_eq!(frames.len(), lens.len());
        for (k, f) in frames.iter().enumerate() {
            prop_assert_eq!(f.header.meta.kind, k as u16);
            prop_assert_eq!(f.payload.len(), lens[k]);
            prop_assert!(
                f.payload[..] == frame(k as u16, lens[k])[HEADER_LEN..],
                "frame {} differs",
                k
            );
        }
        Ok(())
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
            4096 - 116 - HEADER_LEN as u64,
            "only the part of the payload already read is copied, not the header"
        );
        assert!(r.is_exact(), "a large frame turns exact reads on");
        drop(frames);
        drop(r);
        assert_eq!(pool.stats().buffers_outstanding(), 0);
    }

    /// Writes `bytes` into the reader's next targets (at most what they take); how many.
    fn put(r: &mut FrameReader, bytes: &[u8]) -> usize {
        let mut targets = r.read_targets().unwrap();
        let mut n = 0;
        for t in targets.slices() {
            let take = t.len().min(bytes.len() - n);
            t[..take].copy_from_slice(&bytes[n..n + take]);
            n += take;
        }
        r.filled(n);
        n
    }

    #[test]
    fn frames_in_progress_share_the_budget() {
        let pool = pool();
        let budget = crate::FrameBudget::new(150_000);
        let config = Config {
            read_buf: 4096,
            frame_budget: budget.clone(),
            ..Config::default()
        };
        // Two peers announce 100,000 bytes and send 10: the first frame's buffer is charged,
        // the second would pass the budget and fails, naming it.
        let announced = &frame(1, 100_000)[..HEADER_LEN + 10];
        let mut first = FrameReader::new(&pool, &config);
        put(&mut first, announced);
        assert!(first.next_frame().unwrap().is_none());
        assert_eq!(budget.in_use(), 100_000);
        let mut second = FrameReader::new(&pool, &config);
        put(&mut second, announced);
        match second.next_frame() {
            Err(TransportError::Frame {
                error: FrameError::OverBudget { len, in_use, limit },
                ..
            }) => assert_eq!((len, in_use, limit), (100_000, 100_000, 150_000)),
            other => panic!("expected OverBudget, got {other:?}"),
        }
        second.clear();
        assert_eq!(budget.in_use(), 100_000, "a refused frame holds nothing");
        // The first frame completes: handed out, its charge is given back.
        let rest = &frame(1, 100_000)[HEADER_LEN + 10..];
        let mut at = 0;
        while at < rest.len() {
            at += put(&mut first, &rest[at..]);
        }
        let f = first.next_frame().unwrap().expect("whole");
        assert_eq!(f.payload.len(), 100_000);
        assert_eq!(budget.in_use(), 0);
        // A reader dropped mid-frame gives its charge back too.
        let mut third = FrameReader::new(&pool, &config);
        put(&mut third, announced);
        assert!(third.next_frame().unwrap().is_none());
        assert_eq!(budget.in_use(), 100_000);
        drop(third);
        assert_eq!(budget.in_use(), 0);
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
        let mut targets = r.read_targets().unwrap();
        let b = &mut targets.slices()[0];
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
        let mut targets = r.read_targets().unwrap();
        targets.slices()[0][..16].copy_from_slice(&[9; 16]);
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

    /// Regression (datapath.md, problem 3): a header cut by the end of a read was copied but
    /// not counted as anything but bytes; now it is a split header, counted.
    #[test]
    fn split_headers_are_counted() {
        let pool = pool();
        let config = Config {
            read_buf: 4096,
            ..Config::default()
        };
        let mut stream = frame(1, 100);
        stream.extend(frame(2, 100));
        // The first read ends 5 bytes into frame 2's header.
        let (frames, r) = feed(&config, &pool, &stream, &[116 + 5, 4096]);
        assert_eq!(frames.len(), 2);
        let c = r.counters();
        assert_eq!((c.split_headers, c.copied, c.straddled), (1, 5, 0));
        assert_eq!(&frames[1].payload[..], &frame(2, 100)[HEADER_LEN..]);
    }

    /// Regression: a frame cut right after its header had its header copied (16 bytes, counted
    /// as a straddling frame); now the header is parsed where it lies and nothing is copied.
    #[test]
    fn a_frame_cut_after_its_header_is_not_copied() {
        let pool = pool();
        let config = Config {
            read_buf: 4096,
            ..Config::default()
        };
        let mut stream = frame(1, 100);
        stream.extend(frame(2, 1000));
        let (frames, r) = feed(&config, &pool, &stream, &[116 + HEADER_LEN, 4096]);
        assert_eq!(frames.len(), 2);
        let c = r.counters();
        assert_eq!((c.straddled, c.copied, c.split_headers), (0, 0, 0));
        assert_eq!(&frames[1].payload[..], &frame(2, 1000)[HEADER_LEN..]);
    }

    /// The benchmark's shape: 64 KiB frames back to back, every read a whole 256 KiB read
    /// buffer if the reader asks for it. Before exact reads, one frame in four straddled a
    /// read buffer and was copied; now only the one cut by the very first (batched) read is,
    /// and predicted reads carry about four frames each.
    #[test]
    fn uniform_large_frames_are_copied_at_most_once() {
        let pool = pool();
        let lens = vec![(64 << 10) + 40; 200];
        let stream = stream_of(&lens);
        let t = feed_traced(&Config::default(), &pool, &stream, &[256 << 10]);
        check_bytes(&t.frames, &lens).unwrap();
        let c = t.reader.counters();
        assert_eq!(c.straddled, 1, "{c:?}");
        assert_eq!(t.copied.iter().filter(|&&c| c > 0).count(), 1);
        assert!(t.copied[4..].iter().all(|&c| c == 0), "{:?}", &t.copied[..8]);
        assert!(c.reads <= 200 / 3, "several frames per read: {c:?}");
        // All but the first read buffer's frames (the first four) came in exact reads.
        assert_eq!(t.announced_exact.iter().filter(|&&e| !e).count(), 4);
    }

    /// Exact reads go back to batched reads after a run of small frames.
    #[test]
    fn small_frames_after_large_ones_are_batched_again() {
        let pool = pool();
        let mut lens = vec![20 << 10; 3];
        lens.extend(vec![100; 1000]);
        let stream = stream_of(&lens);
        let t = feed_traced(&Config::default(), &pool, &stream, &[usize::MAX]);
        check_bytes(&t.frames, &lens).unwrap();
        assert!(!t.reader.is_exact());
        // The large frames: one read each (the first with the start of the stream); the small
        // ones: EXACT_SMALL_RUN exact reads, then whole read buffers (116 KB: one more read).
        assert!(
            t.reads.len() <= 3 + EXACT_SMALL_RUN as usize + 1,
            "{} reads",
            t.reads.len()
        );
        assert_eq!(t.reader.counters().copied, 0);
    }

    fn stream_of(lens: &[usize]) -> Vec<u8> {
        let mut stream = Vec::with_capacity(lens.iter().map(|l| l + HEADER_LEN).sum());
        for (k, &l) in lens.iter().enumerate() {
            stream.extend_from_slice(&frame(k as u16, l));
        }
        stream
    }

    /// Uniform large frames read in whole read buffers: after the first reads, each read fills
    /// the pending payload, the next header and predicted (payload, header) pairs, so several
    /// frames arrive per read and none is copied.
    #[test]
    fn uniform_large_frames_are_batched_by_prediction() {
        for (len, max_reads_per_frame) in [((16 << 10) - 16, 0.15), (64 << 10, 0.3), ((64 << 10) + 40, 0.4)] {
            let pool = pool();
            let lens = vec![len; 300];
            let stream = stream_of(&lens);
            let t = feed_traced(&Config::default(), &pool, &stream, &[usize::MAX]);
            check_bytes(&t.frames, &lens).unwrap();
            let c = t.reader.counters();
            // Only the frame the first (batched) read ended inside can be copied.
            assert!(c.straddled <= 1, "{len}: {c:?}");
            let first_read_frames = t.announced_exact.iter().filter(|&&e| !e).count();
            assert!(t.copied[first_read_frames + 1..].iter().all(|&c| c == 0), "{len}");
            assert_eq!(c.mispredicted, 0);
            // The frames whose headers end a read get exact buffers (not predicted, not copied);
            // the others were read into predicted buffers.
            assert!(c.predicted as usize >= lens.len() / 2, "{len}: {c:?}");
            let per_frame = c.reads as f64 / lens.len() as f64;
            assert!(
                per_frame < max_reads_per_frame,
                "{len}: {per_frame} reads per frame, {c:?}"
            );
            drop(t);
            assert_eq!(pool.stats().buffers_outstanding(), 0);
        }
    }

    /// A run of uniform frames, then other lengths: the first frame of each new length is
    /// mispredicted (bytes moved, counted), then predictions hold again.
    #[test]
    fn mispredictions_move_bytes_and_count_them() {
        for (a, b) in [
            (64 << 10, 40 << 10),
            (40 << 10, 64 << 10),
            (20 << 10, (20 << 10) + 1),
        ] {
            let pool = pool();
            let mut lens = vec![a; 20];
            lens.extend(vec![b; 20]);
            lens.extend(vec![a; 20]);
            let stream = stream_of(&lens);
            let t = feed_traced(&Config::default(), &pool, &stream, &[usize::MAX]);
            check_bytes(&t.frames, &lens).unwrap();
            let c = t.reader.counters();
            // A change of length is mispredicted unless its header ended a read.
            assert!((1..=2).contains(&c.mispredicted), "{a} then {b}: {c:?}");
            for k in 0..lens.len() {
                if t.predicted[k] > 0 {
                    assert_eq!(t.payload_copied(k), 0, "frame {k}");
                }
            }
            drop(t);
            assert_eq!(pool.stats().buffers_outstanding(), 0);
        }
    }

    /// Runs of frames ((payload length, count) each) fed in reads of `chunks`, with read buffers
    /// of `read_buf` bytes: the frames' lengths and the trace.
    fn feed_runs(
        pool: &Pool,
        runs: &[(usize, usize)],
        chunks: &[usize],
        read_buf: usize,
    ) -> (Vec<usize>, Trace) {
        let config = Config {
            read_buf,
            ..Config::default()
        };
        let lens: Vec<usize> = runs
            .iter()
            .flat_map(|&(len, n)| std::iter::repeat_n(len, n))
            .collect();
        let t = feed_traced(&config, pool, &stream_of(&lens), chunks);
        (lens, t)
    }

    /// The checks of `changing_lengths_are_received_intact` on one input: runs of (payload
    /// length, count), fed in reads of `chunks`, with read buffers of `read_buf` bytes.
    fn check_changing_lengths(
        runs: &[(usize, usize)],
        chunks: &[usize],
        read_buf: usize,
    ) -> Result<(), TestCaseError> {
        let pool = pool();
        let (lens, t) = feed_runs(&pool, runs, chunks, read_buf);
        check_bytes(&t.frames, &lens)?;
        for k in 0..lens.len() {
            if t.predicted[k] > 0 {
                prop_assert_eq!(t.payload_copied(k), 0, "predicted frame {} copied", k);
            }
        }
        let mispredicted = t.reader.counters().mispredicted as usize;
        let large_copied = (0..lens.len())
            .filter(|&k| lens[k] >= 16 << 10 && t.straddled[k] > 0)
            .count();
        prop_assert!(
            large_copied <= t.turned_exact() + 1 + 2 * mispredicted,
            "{} large frames copied, {} mispredicted",
            large_copied,
            mispredicted
        );
        prop_assert!(matches!(t.reader.eof(), TransportError::Closed));
        drop(t);
        prop_assert_eq!(pool.stats().buffers_outstanding(), 0);
        Ok(())
    }

    /// Regression (proptest, `changing_lengths_are_received_intact`): five 630-byte frames,
    /// then three of 42,414 bytes, in reads of 88,091 bytes. The first (batched) read ends one
    /// byte into frame 7's header, carried to the header array (a split header, the stream's
    /// only copy); frame 7's payload is then read into a predicted buffer, in place. The trace
    /// counted the carried byte as a copy of the predicted frame's payload.
    #[test]
    fn a_predicted_frame_whose_header_was_split_is_not_copied() {
        let (runs, chunks, read_buf) = ([(630, 5), (42_414, 3)], [88_091], 256 << 10);
        let pool = pool();
        let (_, t) = feed_runs(&pool, &runs, &chunks, read_buf);
        let c = t.reader.counters();
        assert_eq!(
            (
                c.copied,
                c.split_headers,
                c.straddled,
                c.predicted,
                c.mispredicted
            ),
            (1, 1, 0, 1, 0),
            "{c:?}"
        );
        assert_eq!((t.predicted[7], t.copied[7], t.carried[7]), (1, 1, 1));
        assert_eq!(t.payload_copied(7), 0);
        drop(t);
        check_changing_lengths(&runs, &chunks, read_buf).unwrap();
    }

    /// The checks of `small_frames_stay_batched_between_large_ones` on one input: rounds of
    /// (small lengths, large lengths), fed in reads of `chunks`.
    fn check_small_frames_between_large(
        rounds: &[(Vec<usize>, Vec<usize>)],
        chunks: &[usize],
    ) -> Result<(), TestCaseError> {
        let pool = pool();
        let lens: Vec<usize> = rounds
            .iter()
            .flat_map(|(s, l)| s.iter().chain(l).copied())
            .collect();
        let stream = stream_of(&lens);
        let t = feed_traced(&Config::default(), &pool, &stream, chunks);
        check_bytes(&t.frames, &lens)?;
        let small = lens.iter().filter(|&&l| l < 16 << 10).count();
        let small_reads = t.small_only_reads(&lens, 16 << 10);
        prop_assert!(
            (small_reads as f64) < 0.3 * small as f64,
            "{} reads for {} small frames",
            small_reads,
            small
        );
        let large_copied = (0..lens.len())
            .filter(|&k| lens[k] >= 16 << 10 && t.payload_copied(k) > 0)
            .count();
        let mispredicted = t.reader.counters().mispredicted as usize;
        prop_assert!(
            large_copied <= rounds.len() + 2 * mispredicted,
            "{} large frames copied in {} bursts",
            large_copied,
            rounds.len()
        );
        Ok(())
    }

    /// Regression (proptest, `small_frames_stay_batched_between_large_ones`, same cause as
    /// [`a_predicted_frame_whose_header_was_split_is_not_copied`]): 100 small frames, then
    /// large frames A and B. The first (batched) read ends one byte into A's header, carried to
    /// the front of the next read buffer; the second holds all of A (handed out in place) and
    /// ends one byte into B's header, carried to the header array. No payload is copied, but
    /// the check counted both carried bytes: two large frames copied in one burst.
    #[test]
    fn split_headers_of_large_frames_are_not_copied_frames() {
        let rounds = [(vec![100; 100], vec![20_000, 30_000])];
        let a = 100 * (HEADER_LEN + 100);
        let chunks = [a + 1, HEADER_LEN + 20_000, 4096];
        let pool = pool();
        let lens: Vec<usize> = rounds
            .iter()
            .flat_map(|(s, l)| s.iter().chain(l).copied())
            .collect();
        let t = feed_traced(&Config::default(), &pool, &stream_of(&lens), &chunks);
        let c = t.reader.counters();
        assert_eq!((c.copied, c.split_headers, c.straddled), (2, 2, 0), "{c:?}");
        assert_eq!((t.carried[100], t.carried[101]), (1, 1));
        drop(t);
        check_small_frames_between_large(&rounds, &chunks).unwrap();
    }

    proptest! {
        /// Uniform 16 KiB or 64 KiB frames, any chunking: bytes identical, no frame copied but
        /// the one the first (batched) read ended inside, no misprediction, nothing leaks; with
        /// reads of a read buffer or more, well under one read per frame.
        #[test]
        fn uniform_large_frames_in_any_chunking(
            len in prop_oneof![Just((16usize << 10) - 16), Just(16usize << 10), Just((64usize << 10) - 16), Just(64usize << 10), Just((64usize << 10) + 40)],
            count in 10usize..150,
            chunks in proptest::collection::vec(1usize..600_000, 1..8),
            large_chunks in any::<bool>(),
        ) {
            let pool = pool();
            let chunks: Vec<usize> = if large_chunks { chunks.iter().map(|c| c + (256 << 10)).collect() } else { chunks };
            let lens = vec![len; count];
            let stream = stream_of(&lens);
            let t = feed_traced(&Config::default(), &pool, &stream, &chunks);
            check_bytes(&t.frames, &lens)?;
            let c = t.reader.counters();
            prop_assert_eq!(c.mispredicted, 0);
            prop_assert!(c.straddled <= 1, "{:?}", c);
            let first_read_frames = t.announced_exact.iter().filter(|&&e| !e).count();
            for k in first_read_frames + 1..count {
                prop_assert_eq!(t.copied[k], 0, "frame {}", k);
            }
            if large_chunks && count >= 50 {
                let per_frame = c.reads as f64 / count as f64;
                prop_assert!(per_frame < 0.45, "{} reads per frame, {:?}", per_frame, c);
            }
            drop(t);
            prop_assert_eq!(pool.stats().buffers_outstanding(), 0);
        }

        /// Runs of equal large lengths that change (and small frames between), any chunking:
        /// bytes identical, predicted frames' payloads never copied, large copies bounded by
        /// the mispredictions, nothing leaks.
        #[test]
        fn changing_lengths_are_received_intact(
            runs in proptest::collection::vec(
                (prop_oneof![(16usize << 10)..(90 << 10), 0usize..3000], 1usize..12), 1..10),
            chunks in proptest::collection::vec(1usize..600_000, 1..8),
            read_buf in prop_oneof![Just(256usize << 10), 4096usize..300_000],
        ) {
            check_changing_lengths(&runs, &chunks, read_buf)?;
        }

        /// Mixed small and large frames, any chunking: bytes identical; no payload read into a
        /// predicted buffer is copied; without mispredictions, no frame whose header began in an
        /// exact read is copied at all (large or small); at most one large frame is copied each
        /// time reads turn exact, and two per misprediction; and nothing leaks.
        #[test]
        fn frames_announced_in_exact_reads_are_never_copied(
            lens in proptest::collection::vec(prop_oneof![0usize..2000, (16usize << 10)..(90 << 10)], 1..40),
            chunks in proptest::collection::vec(1usize..300_000, 1..8),
            read_buf in prop_oneof![Just(256usize << 10), 4096usize..300_000],
        ) {
            let pool = pool();
            let config = Config { read_buf, ..Config::default() };
            let stream = stream_of(&lens);
            let t = feed_traced(&config, &pool, &stream, &chunks);
            check_bytes(&t.frames, &lens)?;
            let mispredicted = t.reader.counters().mispredicted as usize;
            for (k, &len) in lens.iter().enumerate() {
                if t.predicted[k] > 0 {
                    prop_assert_eq!(t.payload_copied(k), 0, "predicted frame {} ({} B) copied", k, len);
                }
                if t.announced_exact[k] && mispredicted == 0 {
                    prop_assert_eq!(t.copied[k], 0, "frame {} ({} B) announced in an exact read", k, len);
                }
            }
            let large_copied = (0..lens.len()).filter(|&k| lens[k] >= 16 << 10 && t.straddled[k] > 0).count();
            prop_assert!(
                large_copied <= t.turned_exact() + 1 + 2 * mispredicted,
                "{} large frames copied", large_copied
            );
            prop_assert!(matches!(t.reader.eof(), TransportError::Closed));
            drop(t);
            prop_assert_eq!(pool.stats().buffers_outstanding(), 0);
        }

        /// Runs of small frames between bursts of large ones, reads of 4 KiB and more: small
        /// frames arrive many per read (reads that carry only small frames, per small frame,
        /// well below 1), and only the first large frame of a burst can have its payload copied
        /// (split headers carried aside).
        #[test]
        fn small_frames_stay_batched_between_large_ones(
            rounds in proptest::collection::vec(
                (proptest::collection::vec(0usize..500, 100..200),
                 proptest::collection::vec((16usize << 10)..(90 << 10), 1..6)),
                1..5),
            chunks in proptest::collection::vec(4096usize..300_000, 1..8),
        ) {
            check_small_frames_between_large(&rounds, &chunks)?;
        }

        #[test]
        fn any_split_gives_the_same_frames(
            lens in proptest::collection::vec(0usize..3000, 1..20),
            chunks in proptest::collection::vec(1usize..5000, 1..8),
            read_buf in 64usize..8192,
            exact_read_min in prop_oneof![Just(usize::MAX), 0usize..4000],
        ) {
            let pool = pool();
            let config = Config { read_buf, exact_read_min, ..Config::default() };
            let stream = stream_of(&lens);
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
