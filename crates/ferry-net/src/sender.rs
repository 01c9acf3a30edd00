//! The sending half of a connection: drives the [`SendQueue`] and the zero-copy
//! [`Completions`] with `sendmsg` or io_uring.

use std::io;
use std::net::TcpStream;
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferry_buf::{Pool, SharedBuf};
use ferry_wire::Outgoing;

use crate::auto::Auto;
use crate::completions::{CompletionCounters, Completions};
use crate::queue::{Placement, PushError, QueueCounters, SendQueue, Written};
use crate::sys::uring::Ring;
use crate::sys::{Iovecs, socket};
use crate::tls::session::{self, Shared};
use crate::{Config, Mode, TransportError, probe};
use crate::{Meta, Payload};

/// How long the reaper of a dropped sender waits for the kernel to release zero-copy buffers
/// (it finishes as soon as they are; a peer that reads nothing for this long costs the leak).
const REAP_LIMIT: Duration = Duration::from_secs(600);

/// Zero-copy batches held before the sender collects completions without being asked.
const COLLECT_EVERY: usize = 8;

/// Send-side statistics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SendStats {
    /// What was queued, and what was copied in user space.
    pub queue: QueueCounters,
    /// Zero-copy completions, and how many the kernel reported as copied.
    pub completions: CompletionCounters,
    /// `sendmsg` calls and io_uring submissions that moved data.
    pub send_calls: u64,
    /// Batches written (one or more calls each).
    pub batches: u64,
    /// `ENOBUFS` from a `MSG_ZEROCOPY` send (the kernel's option-memory limit), each followed
    /// by draining completions and retrying, or by sending that call without `MSG_ZEROCOPY`.
    pub enobufs: u64,
    /// io_uring sends issued as `SEND_ZC` from a registered pool region (a batch that is one
    /// contiguous staging range); the others use `SENDMSG_ZC`.
    pub fixed_buffer_sends: u64,
    /// Over TLS: plaintext bytes copied into TLS records, each byte once, the copy the
    /// encryption then works on in place (every frame byte, headers included: the gather
    /// list's user-space copy). Zero without TLS.
    pub tls_copied: u64,
}

/// The sending half. Frames are queued by [`send`](Self::send) and written when the batch
/// fills or on [`flush`](Self::flush).
///
/// In blocking mode (the default) calls wait for the socket; in non-blocking mode they return
/// [`TransportError::WouldBlock`] instead, keeping their progress (see [`Sender::set_nonblocking`]).
#[derive(Debug)]
pub struct Sender {
    stream: Arc<TcpStream>,
    queue: SendQueue,
    mode: Mode,
    zc: Completions,
    ring: Option<Ring>,
    auto: Auto,
    iov: Iovecs,
    /// Last zero-copy call id of the batch being written, if any call of it was zero-copy.
    batch_zc: Option<u32>,
    batch_enobufs: u32,
    max_in_flight: usize,
    nonblocking: bool,
    failed: bool,
    stats: SendStats,
    /// The TLS session, shared with the receiver; `None` for plain TCP.
    tls: Option<Shared>,
}

impl Sender {
    /// The sending half of `stream` (which the caller reads from itself, e.g. with its own
    /// framing). [`Connection`](crate::Connection) makes one for its own use.
    pub fn new(stream: Arc<TcpStream>, pool: &Pool, config: &Config) -> Result<Sender, TransportError> {
        Sender::build(stream, pool, config, None)
    }

    /// The sending half over TLS: [`Mode::Copy`] stays, every other mode sends as
    /// [`Mode::Gather`] (the kernel sees records, never the caller's buffers).
    pub(crate) fn with_tls(
        stream: Arc<TcpStream>,
        pool: &Pool,
        config: &Config,
        tls: Shared,
    ) -> Result<Sender, TransportError> {
        Sender::build(stream, pool, config, Some(tls))
    }

    fn build(
        stream: Arc<TcpStream>,
        pool: &Pool,
        config: &Config,
        tls: Option<Shared>,
    ) -> Result<Sender, TransportError> {
        let mode = match (&tls, config.mode) {
            (None, mode) => probe::effective_mode(mode),
            (Some(_), Mode::Copy) => Mode::Copy,
            (Some(_), _) => Mode::Gather,
        };
        let fd = stream.as_fd();
        if matches!(mode, Mode::ZeroCopy | Mode::Auto) && probe::features().so_zerocopy.is_ok() {
            socket::enable_zerocopy(fd).map_err(|e| TransportError::io("setsockopt(SO_ZEROCOPY)", e))?;
        }
        let ring = match mode {
            Mode::Uring => Some(Ring::new(pool).map_err(|e| TransportError::io("io_uring_setup", e))?),
            _ => None,
        };
        Ok(Sender {
            zc: Completions::default(),
            stream,
            queue: SendQueue::new(pool, config),
            mode,
            ring,
            auto: Auto::new(probe::features().so_zerocopy.is_ok()),
            iov: Iovecs::default(),
            batch_zc: None,
            batch_enobufs: 0,
            max_in_flight: config.max_in_flight,
            nonblocking: false,
            failed: false,
            stats: SendStats::default(),
            tls,
        })
    }

    pub(crate) fn stream(&self) -> &TcpStream {
        &self.stream
    }

    /// The mode in use: the configured one, or its fallback when the kernel lacks a feature.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Statistics so far.
    pub fn stats(&self) -> SendStats {
        SendStats {
            queue: self.queue.counters(),
            completions: self.zc.counters(),
            ..self.stats
        }
    }

    /// Non-blocking mode: calls return [`TransportError::WouldBlock`] rather than wait. For
    /// run-to-completion loops: poll [`as_fd`](AsFd::as_fd) for writability (and `POLLERR`,
    /// which signals zero-copy completions), then call again.
    pub fn set_nonblocking(&mut self, nonblocking: bool) {
        self.nonblocking = nonblocking;
    }

    /// Bytes the kernel may still read from (zero-copy modes), held until their completion.
    pub fn in_flight(&self) -> usize {
        self.zc.held_bytes()
    }

    /// Whether frames are queued or being written.
    pub fn has_pending(&self) -> bool {
        !self.queue.is_empty() || self.tls.as_ref().is_some_and(|t| session::lock(t).wants_write())
    }

    /// Queues a Ferry message: its header segment is written into the staging buffer and its
    /// zero-copy values are referenced (or copied, in [`Mode::Copy`] or when
    /// [`Mode::Auto`] finds them small). Flushes the batch when it reaches a cap.
    pub fn send<M: Outgoing + ?Sized>(&mut self, meta: Meta, msg: &M) -> Result<(), TransportError> {
        // One walk over the fields for the sizes; auto decides from the same layout.
        let layout = msg.layout();
        let placement = match self.mode {
            Mode::Copy => Placement::Copy,
            Mode::Auto => self.auto.placement(&layout),
            Mode::Gather | Mode::ZeroCopy | Mode::Uring => Placement::Gather,
        };
        self.push(|q| q.push_message(meta, msg, &layout, placement))
    }

    /// Queues a payload that is not a Ferry message: bytes are copied into staging, gather
    /// parts posted by reference.
    pub fn send_payload(&mut self, meta: Meta, payload: Payload<'_>) -> Result<(), TransportError> {
        match payload {
            Payload::Bytes(bytes) => {
                self.push(|q| q.push_with(meta, bytes.len(), |out| out.copy_from_slice(bytes)))
            }
            Payload::Gather { head, parts } => self.push(|q| q.push_gather(meta, head, parts)),
        }
    }

    /// Queues `parts` with no frame header, each posted by reference: for protocols with their
    /// own framing over the same datapath (`ferry-redis` sends RESP replies this way, framing
    /// and small values in one pool buffer, large values referenced where they are stored).
    /// Either every part is queued or, on error, none is.
    pub fn send_unframed(&mut self, parts: &[SharedBuf]) -> Result<(), TransportError> {
        self.push(|q| {
            q.push_unframed(parts);
            Ok(())
        })
    }

    /// Queues a frame of `len` bytes that `write` fills in place in the staging buffer (for
    /// serializers that write into a slice: the one copy is the serialization itself).
    pub fn send_with(
        &mut self,
        meta: Meta,
        len: usize,
        write: impl FnOnce(&mut [u8]),
    ) -> Result<(), TransportError> {
        let mut write = Some(write);
        self.push(|q| {
            // `push_with` only consumes the closure when the frame is queued.
            q.push_with(meta, len, |out| (write.take().expect("called once"))(out))
        })
    }

    fn push(
        &mut self,
        mut push: impl FnMut(&mut SendQueue) -> Result<(), PushError>,
    ) -> Result<(), TransportError> {
        if self.failed {
            return Err(TransportError::Poisoned);
        }
        if self.queue.is_full() {
            // A non-blocking sender whose batch is at a cap queues nothing more until the
            // previous batch is written (the queue stays bounded).
            self.make_room()?;
        }
        loop {
            match push(&mut self.queue) {
                Ok(()) => break,
                Err(PushError::Fatal(e)) => return Err(e),
                // The staging buffer is out of room: write the batch, then try again.
                Err(PushError::Full) => self.make_room()?,
            }
        }
        if self.queue.is_full() {
            // Start writing; in non-blocking mode the frame is queued whatever happens.
            match self.flush_inner() {
                Ok(()) | Err(TransportError::WouldBlock) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Writes until the filling batch is empty (it became the writing batch), or returns
    /// `WouldBlock` in non-blocking mode if it could not.
    fn make_room(&mut self) -> Result<(), TransportError> {
        match self.flush_inner() {
            Ok(()) => Ok(()),
            Err(TransportError::WouldBlock) if !self.queue.has_filling() => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Writes every queued frame (waiting for the socket in blocking mode). Zero-copy buffers
    /// may still be held afterwards, until their completions; see [`wait_idle`](Self::wait_idle).
    pub fn flush(&mut self) -> Result<(), TransportError> {
        if self.failed {
            return Err(TransportError::Poisoned);
        }
        self.flush_inner()
    }

    /// One flush attempt that never waits, whatever the mode.
    pub(crate) fn flush_nowait(&mut self) -> Result<(), TransportError> {
        let nonblocking = std::mem::replace(&mut self.nonblocking, true);
        let result = self.flush();
        self.nonblocking = nonblocking;
        result
    }

    /// Flushes, then waits until the kernel has released every zero-copy buffer.
    pub fn wait_idle(&mut self) -> Result<(), TransportError> {
        self.flush()?;
        while !self.zc.is_idle() {
            self.completions(true)?;
        }
        Ok(())
    }

    /// Collects zero-copy completions that have arrived, without waiting, releasing buffers.
    /// Works after a failure too (the kernel still owes completions for what it held).
    pub fn poll_completions(&mut self) -> Result<(), TransportError> {
        match self.completions(false) {
            Err(TransportError::WouldBlock) => Ok(()),
            other => other,
        }
    }

    fn flush_inner(&mut self) -> Result<(), TransportError> {
        let result = self.flush_steps();
        if let Err(e) = &result {
            if !matches!(e, TransportError::WouldBlock) {
                self.fail();
            }
        }
        result
    }

    fn flush_steps(&mut self) -> Result<(), TransportError> {
        loop {
            if !self.queue.is_writing() {
                // Bound what the kernel holds before handing it more.
                while self.zc.held_bytes() > self.max_in_flight {
                    self.completions(true)?;
                }
                if !self.queue.start_write() {
                    // Over TLS, done once the records of the last batch are written too.
                    match self.write_records() {
                        Ok(()) => return Ok(()),
                        Err(TransportError::WouldBlock) if !self.nonblocking => self.wait_writable()?,
                        Err(e) => return Err(e),
                    }
                    continue;
                }
                self.batch_zc = None;
                self.batch_enobufs = 0;
            }
            let wrote = match &self.tls {
                Some(tls) => self.write_once_tls(&Arc::clone(tls)),
                None => self.write_once(),
            };
            match wrote {
                Ok(()) => {}
                Err(TransportError::WouldBlock) if !self.nonblocking => self.wait_writable()?,
                Err(e) => return Err(e),
            }
        }
    }

    /// Blocking mode: waits until the socket takes more (collecting zero-copy completions
    /// that arrive meanwhile); over TLS during the handshake, completes the handshake.
    fn wait_writable(&mut self) -> Result<(), TransportError> {
        if let Some(tls) = &self.tls {
            let mut tls = session::lock(tls);
            if tls.is_handshaking() {
                return tls.complete(&self.stream);
            }
        }
        let ready =
            socket::poll(self.stream.as_fd(), false, true, -1).map_err(|e| TransportError::io("poll", e))?;
        if ready.error && self.zc_active() {
            self.completions(false)?;
        }
        Ok(())
    }

    /// Over TLS: writes the records rustls holds (`WouldBlock` if the socket is full). Plain
    /// TCP holds none.
    fn write_records(&mut self) -> Result<(), TransportError> {
        let Some(tls) = &self.tls else { return Ok(()) };
        self.stats.send_calls += session::lock(tls).write_out(&self.stream)?;
        Ok(())
    }

    /// Over TLS: writes the records of earlier calls, then encrypts as much of the writing
    /// batch as rustls takes (one copy into records, see the `tls` module), releasing the
    /// batch's buffers once all of it is taken, and writes the new records.
    fn write_once_tls(&mut self, tls: &Shared) -> Result<(), TransportError> {
        let mut tls = session::lock(tls);
        self.stats.send_calls += tls.write_out(&self.stream)?;
        if tls.is_handshaking() {
            // Application data waits for the handshake, which reads drive (the receiver's, or
            // `Connection::handshake_step`).
            return Err(TransportError::WouldBlock);
        }
        let mut parts = Vec::new();
        self.queue.slices(&mut parts);
        let taken = tls.encrypt(&parts)?;
        drop(parts);
        self.stats.tls_copied += taken as u64;
        if self.queue.advance(taken) {
            let written = self.queue.take_written().expect("advance said done");
            self.stats.batches += 1;
            self.queue.recycle(written.segs);
        }
        match tls.write_out(&self.stream) {
            Ok(calls) => self.stats.send_calls += calls,
            Err(TransportError::WouldBlock) => {}
            Err(e) => return Err(e),
        }
        Ok(())
    }

    fn zc_active(&self) -> bool {
        matches!(self.mode, Mode::ZeroCopy | Mode::Auto)
    }

    /// One send call for the writing batch.
    fn write_once(&mut self) -> Result<(), TransportError> {
        self.queue.iovecs(&mut self.iov.0);
        let zerocopy = match self.mode {
            Mode::ZeroCopy => self.batch_enobufs < 8,
            Mode::Auto => self.auto.zerocopy(&self.iov.0) && self.batch_enobufs < 8,
            _ => false,
        };
        let sent = if let Some(ring) = &mut self.ring {
            let id = self.zc.next_call();
            let zc = &mut self.zc;
            let queue = &mut self.queue;
            let mut notified = |id: u32, copied: bool| zc.complete(id, id, copied, |w| queue.recycle(w.segs));
            // SAFETY: the entries point into the writing batch, which stays in the queue until
            // fully written and is then held in `self.zc` until the notification for its last
            // request id, or the result says none follows (handled below).
            #[allow(unsafe_code)]
            let result = unsafe { ring.send(self.stream.as_fd(), &self.iov.0, id, &mut notified) }
                .map_err(|e| TransportError::io("io_uring_enter", e))?;
            if !result.more {
                self.zc.complete(id, id, false, |w| self.queue.recycle(w.segs));
            }
            self.stats.fixed_buffer_sends += u64::from(result.fixed);
            if result.res < 0 {
                return Err(TransportError::io(
                    "io_uring send_zc",
                    io::Error::from_raw_os_error(-result.res),
                ));
            }
            self.batch_zc = Some(id);
            result.res as usize
        } else {
            // SAFETY: the entries point into the writing batch, which stays in the queue until
            // fully written; with MSG_ZEROCOPY it is then held in `self.zc` until the kernel's
            // completion covers this call's id.
            #[allow(unsafe_code)]
            match unsafe { socket::sendmsg(self.stream.as_fd(), &self.iov.0, zerocopy) } {
                Ok(n) => {
                    if zerocopy && n > 0 {
                        self.batch_zc = Some(self.zc.next_call());
                    }
                    n
                }
                Err(e) if zerocopy && e.raw_os_error() == Some(libc::ENOBUFS) => {
                    // Option memory for completion notifications is exhausted: collect what
                    // has completed and try again (after 8 tries, without MSG_ZEROCOPY).
                    self.stats.enobufs += 1;
                    self.batch_enobufs += 1;
                    return self.completions(false).or_else(|e| match e {
                        TransportError::WouldBlock => Ok(()),
                        e => Err(e),
                    });
                }
                Err(e) => return Err(TransportError::io("sendmsg", e)),
            }
        };
        self.stats.send_calls += 1;
        if self.queue.advance(sent) {
            let written = self.queue.take_written().expect("advance said done");
            self.stats.batches += 1;
            self.release_or_hold(written);
            // Collect MSG_ZEROCOPY completions every few batches (one `recvmsg` that returns at
            // once when there are none), so buffers go back to the pool promptly and auto's
            // probe sees the kernel's verdict early. io_uring reaps them with every submission.
            if self.ring.is_none() && self.zc.held_batches() >= COLLECT_EVERY {
                match self.completions(false) {
                    Ok(()) | Err(TransportError::WouldBlock) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(())
    }

    fn release_or_hold(&mut self, written: Written) {
        match self.batch_zc.take() {
            Some(last) => {
                let queue = &mut self.queue;
                self.zc.hold(last, written, |w| queue.recycle(w.segs));
            }
            None => self.queue.recycle(written.segs),
        }
    }

    /// Collects completions; with `wait`, waits for at least one first (unless idle).
    fn completions(&mut self, wait: bool) -> Result<(), TransportError> {
        let zc = &mut self.zc;
        let queue = &mut self.queue;
        if let Some(ring) = &mut self.ring {
            let block = wait && !zc.is_idle() && !self.nonblocking;
            ring.reap(block.then_some(Duration::from_secs(1)), &mut |id, copied| {
                zc.complete(id, id, copied, |w| queue.recycle(w.segs))
            })
            .map_err(|e| TransportError::io("io_uring_enter", e))?;
            // Non-blocking: the caller polls `completion_fd` and calls again.
            return if wait && self.nonblocking && !self.zc.is_idle() {
                Err(TransportError::WouldBlock)
            } else {
                Ok(())
            };
        }
        loop {
            match socket::recv_completion(self.stream.as_fd()) {
                Ok(Some(c)) => {
                    zc.complete(c.lo, c.hi, c.copied, |w| queue.recycle(w.segs));
                    self.auto.observe(c.copied, c.hi.wrapping_sub(c.lo) + 1);
                }
                Ok(None) if !wait || zc.is_idle() => return Ok(()),
                Ok(None) if self.nonblocking => return Err(TransportError::WouldBlock),
                Ok(None) => {
                    // `POLLERR` signals an error-queue entry.
                    socket::poll(self.stream.as_fd(), false, false, -1)
                        .map_err(|e| TransportError::io("poll", e))?;
                }
                Err(e) => return Err(TransportError::io("recvmsg(MSG_ERRQUEUE)", e)),
            }
        }
    }

    /// Marks the half failed and releases every buffer it holds.
    fn fail(&mut self) {
        self.failed = true;
        let _ = self.stream.shutdown(std::net::Shutdown::Write);
        self.retire();
        // After a reset the kernel has purged its queues and posted the completions already.
        let nonblocking = std::mem::replace(&mut self.nonblocking, true);
        let _ = self.completions(false);
        self.nonblocking = nonblocking;
    }

    /// Drops every queued buffer the kernel has not seen. A batch that went out partly with
    /// zero copy is the kernel's too: it joins the held batches, which are released only by
    /// their completions (the kernel keeps sending from them after an error or a close, and
    /// memory the pool handed out again would reach the peer).
    fn retire(&mut self) {
        if let Some(last) = self.batch_zc.take() {
            if let Some(written) = self.queue.take_writing() {
                let queue = &mut self.queue;
                self.zc.hold(last, written, |w| queue.recycle(w.segs));
            }
        }
        self.queue.clear();
    }

    /// The descriptor to poll for zero-copy completions in non-blocking mode: the io_uring
    /// instance (readable) in [`Mode::Uring`], else the socket (`POLLERR`).
    pub fn completion_fd(&self) -> BorrowedFd<'_> {
        match &self.ring {
            Some(ring) => ring.fd(),
            None => self.stream.as_fd(),
        }
    }
}

impl Drop for Sender {
    /// Zero-copy buffers the kernel still holds go to a reaper thread that keeps the socket
    /// open, collects their completions and then releases them; dropping never blocks.
    fn drop(&mut self) {
        self.retire();
        if self.zc.is_idle() {
            return;
        }
        let mut reaper = Reaper {
            stream: Arc::clone(&self.stream),
            zc: std::mem::take(&mut self.zc),
            ring: self.ring.take(),
        };
        reaper.collect(Duration::ZERO);
        if reaper.zc.is_idle() {
            return;
        }
        let spawned = std::thread::Builder::new()
            .name("ferry-net-reaper".into())
            .spawn(move || reaper.run());
        if spawned.is_err() {
            eprintln!("ferry-net: no thread to wait for zero-copy completions; leaking their buffers");
        }
    }
}

/// Waits, after its sender is gone, for the kernel to release zero-copy buffers.
struct Reaper {
    stream: Arc<TcpStream>,
    zc: Completions,
    ring: Option<Ring>,
}

impl Reaper {
    /// Collects completions, waiting up to `wait` for the first. Returns false on an error.
    fn collect(&mut self, wait: Duration) -> bool {
        let zc = &mut self.zc;
        match &mut self.ring {
            Some(ring) => ring
                .reap((!wait.is_zero()).then_some(wait), &mut |id, copied| {
                    zc.complete(id, id, copied, drop)
                })
                .is_ok(),
            None => loop {
                match socket::recv_completion(self.stream.as_fd()) {
                    Ok(Some(c)) => zc.complete(c.lo, c.hi, c.copied, drop),
                    Ok(None) if wait.is_zero() || zc.is_idle() => return true,
                    Ok(None) => {
                        let ms = wait.as_millis().min(i32::MAX as u128) as i32;
                        return socket::poll(self.stream.as_fd(), false, false, ms).is_ok();
                    }
                    Err(_) => return false,
                }
            },
        }
    }

    fn run(mut self) {
        let deadline = Instant::now() + REAP_LIMIT;
        while !self.zc.is_idle() && Instant::now() < deadline {
            if !self.collect(Duration::from_millis(100)) {
                break;
            }
        }
        if !self.zc.is_idle() {
            eprintln!(
                "ferry-net: the kernel still holds {} bytes of zero-copy sends of a closed \
                 connection; leaking them rather than letting the pool reuse memory it may still send",
                self.zc.held_bytes()
            );
            self.zc.leak();
        }
    }
}

impl AsFd for Sender {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.stream.as_fd()
    }
}
