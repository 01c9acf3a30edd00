//! The receiving half of a connection: `readv` into the [`FrameReader`]'s targets.

use std::io::{self, Read};
use std::net::TcpStream;
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::Arc;

use ferry_buf::Pool;

use crate::reader::{Frame, FrameReader, RecvCounters};
use crate::sys::socket;
use crate::{Config, TransportError};

/// The receiving half: [`recv`](Receiver::recv) waits, [`try_recv`](Receiver::try_recv) does not.
#[derive(Debug)]
pub struct Receiver {
    stream: Arc<TcpStream>,
    reader: FrameReader,
    failed: bool,
}

impl Receiver {
    pub(crate) fn new(stream: Arc<TcpStream>, pool: &Pool, config: &Config) -> Receiver {
        Receiver {
            stream,
            reader: FrameReader::new(pool, config),
            failed: false,
        }
    }

    /// Statistics so far.
    pub fn stats(&self) -> RecvCounters {
        self.reader.counters()
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

    fn read_nowait(&mut self) -> Result<Option<Frame>, TransportError> {
        loop {
            if let Some(frame) = self.reader.next_frame()? {
                return Ok(Some(frame));
            }
            let mut targets = self.reader.read_targets()?;
            let (mut iov, count) = targets.io_slices();
            match (&*self.stream).read_vectored(&mut iov[..count]) {
                Ok(0) => return Err(self.reader.eof()),
                Ok(n) => self.reader.filled(n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                Err(e) => return Err(TransportError::io("readv", e)),
            }
        }
    }
}

impl AsFd for Receiver {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.stream.as_fd()
    }
}
