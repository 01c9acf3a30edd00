//! The receiving half of a connection: `readv` into the [`FrameReader`]'s targets.

use std::io::{self, Read};
use std::net::TcpStream;
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::Arc;

use ferry_buf::Pool;

use crate::reader::{Frame, FrameReader, RecvCounters};
use crate::sys::socket;
use crate::tls::session::{self, Plain, Shared};
use crate::{Config, TransportError};

/// The receiving half: [`recv`](Receiver::recv) waits, [`try_recv`](Receiver::try_recv) does not.
#[derive(Debug)]
pub struct Receiver {
    stream: Arc<TcpStream>,
    reader: FrameReader,
    failed: bool,
    /// The TLS session, shared with the sender; `None` for plain TCP.
    tls: Option<Shared>,
    tls_copied: u64,
    /// The socket's `SO_RCVLOWAT` as last set (see [`LOW_WATER_MAX`]).
    low_water: usize,
    /// The last `readv` filled less than its targets, so the socket was empty when it
    /// returned: the next look for a frame answers `Ok(None)` without a system call, once.
    /// Every caller that gets `None` waits for readiness before it asks again (a level- or
    /// edge-triggered wait; a byte that arrives after that `readv` makes the socket readable
    /// and is an edge), so nothing waits unseen; what is saved is the `readv` that would
    /// only have found `EAGAIN` after each frame.
    drained: bool,
}

/// Most bytes a receiver asks its socket to hold before it polls readable. While a frame is in
/// progress the socket's low-water mark (`SO_RCVLOWAT`) is the bytes it still needs, up to
/// this: a peer that trickles a frame a byte at a time (slowloris) wakes its reader once per
/// frame, or per this many bytes, not once per byte. An end of stream, an error or a
/// receive window shrunk to a segment still report readable at once (Linux `tcp_poll`).
/// Kept small so that it never makes the kernel grow the socket's buffer for it.
const LOW_WATER_MAX: usize = 16 << 10;

impl Receiver {
    pub(crate) fn new(stream: Arc<TcpStream>, pool: &Pool, config: &Config, tls: Option<Shared>) -> Receiver {
        Receiver {
            stream,
            reader: FrameReader::new(pool, config),
            failed: false,
            tls,
            tls_copied: 0,
            low_water: 1,
            drained: false,
        }
    }

    /// Statistics so far.
    pub fn stats(&self) -> RecvCounters {
        self.reader.counters()
    }

    /// Over TLS: bytes the receive path copied in user space: each decrypted byte twice, once
    /// by rustls into its received-plaintext buffer and once from there into the reader's
    /// targets (see the `tls` module's measurement). Zero without TLS.
    pub fn tls_copied(&self) -> u64 {
        self.tls_copied
    }

    /// The next frame, waiting for it. Many frames arrive per read; each is a sub-buffer of
    /// the buffer it was read into. Any error is final: the buffers are released and later
    /// calls return [`TransportError::Poisoned`].
    pub fn recv(&mut self) -> Result<Frame, TransportError> {
        loop {
            if let Some(frame) = self.try_recv()? {
                return Ok(frame);
            }
            let ready = socket::poll(self.stream.as_fd(), true, false, -1)
                .map_err(|e| self.fail(TransportError::io("poll", e)))?;
            if ready.error && !ready.read {
                // Only zero-copy completions for the sending half (on another thread, after
                // `split`), which collects them; let it run.
                std::thread::yield_now();
            }
        }
    }

    /// The next frame if one has arrived, never waiting: `Ok(None)` when the socket has no
    /// whole frame yet (what was read is kept). Errors are final, as for [`recv`](Self::recv).
    pub fn try_recv(&mut self) -> Result<Option<Frame>, TransportError> {
        if self.failed {
            return Err(TransportError::Poisoned);
        }
        self.read_nowait().map_err(|e| self.fail(e))
    }

    /// A frame among the bytes already read, if there is one (no system call).
    pub(crate) fn buffered(&mut self) -> Result<Option<Frame>, TransportError> {
        if self.failed {
            return Err(TransportError::Poisoned);
        }
        self.reader.next_frame().map_err(|e| self.fail(e))
    }

    fn fail(&mut self, e: TransportError) -> TransportError {
        self.failed = true;
        self.reader.clear();
        e
    }

    /// Before answering that no frame is whole: the socket's low-water mark becomes the
    /// bytes the frame in progress still needs (see [`LOW_WATER_MAX`]), one between frames.
    fn set_low_water(&mut self) -> Result<(), TransportError> {
        let want = self.reader.missing().clamp(1, LOW_WATER_MAX);
        if want != self.low_water {
            socket::set_recv_low_water(self.stream.as_fd(), want)
                .map_err(|e| TransportError::io("setsockopt(SO_RCVLOWAT)", e))?;
            self.low_water = want;
        }
        Ok(())
    }

    fn read_nowait(&mut self) -> Result<Option<Frame>, TransportError> {
        if let Some(tls) = &self.tls {
            return self.read_tls(&Arc::clone(tls));
        }
        loop {
            if let Some(frame) = self.reader.next_frame()? {
                return Ok(Some(frame));
            }
            if std::mem::take(&mut self.drained) {
                self.reader.give_back_untouched();
                self.set_low_water()?;
                return Ok(None);
            }
            let mut targets = self.reader.read_targets()?;
            let (mut iov, count) = targets.io_slices();
            let room: usize = iov[..count].iter().map(|slice| slice.len()).sum();
            match (&*self.stream).read_vectored(&mut iov[..count]) {
                Ok(0) => return Err(self.reader.eof()),
                Ok(n) => {
                    self.drained = n < room;
                    self.reader.filled(n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.reader.idle();
                    self.set_low_water()?;
                    return Ok(None);
                }
                Err(e) => return Err(TransportError::io("readv", e)),
            }
        }
    }
}

impl Receiver {
    /// Reads bytes of a stream that is not framed (a protocol of its own, as RESP) into
    /// `target`, decrypted over TLS, never waiting: `Ok(0)` when the peer has closed,
    /// [`TransportError::WouldBlock`] when nothing has arrived. The mirror of
    /// [`Sender::send_unframed`](crate::Sender::send_unframed); the frame reader is not used.
    ///
    /// Over TLS, rustls may hold decrypted bytes that the socket no longer shows (`epoll`
    /// does not see them): after a read that filled `target`, read again before waiting.
    pub fn read_unframed(&mut self, target: &mut [u8]) -> Result<usize, TransportError> {
        let Some(tls) = &self.tls else {
            return loop {
                match (&*self.stream).read(target) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    r => break r.map_err(|e| TransportError::io("read", e)),
                }
            };
        };
        let mut tls = session::lock(tls);
        loop {
            match tls.read_plain(&mut [&mut *target])? {
                Plain::Copied(n) => {
                    self.tls_copied += 2 * n as u64;
                    return Ok(n);
                }
                Plain::Closed => return Ok(0),
                Plain::Empty => tls.read_in(&self.stream)?,
            }
        }
    }
}

impl Receiver {
    /// [`read_nowait`](Self::read_nowait) over TLS: the decrypted bytes rustls holds are
    /// copied into the reader's targets (the one copy on this path), and the socket is read
    /// into rustls when it holds none.
    fn read_tls(&mut self, tls: &Shared) -> Result<Option<Frame>, TransportError> {
        loop {
            if let Some(frame) = self.reader.next_frame()? {
                return Ok(Some(frame));
            }
            let mut tls = session::lock(tls);
            let mut targets = self.reader.read_targets()?;
            match tls.read_plain(targets.slices())? {
                Plain::Copied(n) => {
                    // rustls' move into its plaintext buffer, and this copy out of it.
                    self.tls_copied += 2 * n as u64;
                    self.reader.filled(n);
                }
                Plain::Closed => return Err(self.reader.eof()),
                Plain::Empty => match tls.read_in(&self.stream) {
                    Ok(()) => {}
                    Err(TransportError::WouldBlock) => {
                        drop(tls);
                        self.reader.idle();
                        return Ok(None);
                    }
                    Err(e) => return Err(e),
                },
            }
        }
    }
}

impl AsFd for Receiver {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.stream.as_fd()
    }
}
