//! The receiving half of a connection: `readv` into the [`FrameReader`]'s targets.

use std::io::{self, IoSliceMut, Read};
use std::net::TcpStream;
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::Arc;

use ferry_buf::Pool;

use crate::reader::{Frame, FrameReader, RecvCounters};
use crate::sys::socket;
use crate::{Config, NetError};

/// The receiving half. Blocking by default; see [`Receiver::set_nonblocking`].
#[derive(Debug)]
pub struct Receiver {
    stream: Arc<TcpStream>,
    reader: FrameReader,
    nonblocking: bool,
    failed: bool,
}

impl Receiver {
    pub(crate) fn new(stream: Arc<TcpStream>, pool: &Pool, config: &Config) -> Receiver {
        Receiver {
            stream,
            reader: FrameReader::new(pool, config),
            nonblocking: false,
            failed: false,
        }
    }

    /// Non-blocking mode: [`recv`](Self::recv) returns [`NetError::WouldBlock`] when no whole
    /// frame has arrived, keeping what it has read.
    pub fn set_nonblocking(&mut self, nonblocking: bool) {
        self.nonblocking = nonblocking;
    }

    /// Statistics so far.
    pub fn stats(&self) -> RecvCounters {
        self.reader.counters()
    }

    /// The next frame. Many frames arrive per read; each is a sub-buffer of the buffer it was
    /// read into. Any error but [`NetError::WouldBlock`] is final: the buffers are released
    /// and later calls return [`NetError::Poisoned`] (or the same end of stream).
    pub fn recv(&mut self) -> Result<Frame, NetError> {
        if self.failed {
            return Err(NetError::Poisoned);
        }
        let result = self.recv_inner();
        if let Err(e) = &result {
            if !matches!(e, NetError::WouldBlock) {
                self.failed = true;
                self.reader.clear();
            }
        }
        result
    }

    /// A frame among the bytes already read, if there is one (no system call).
    pub(crate) fn buffered(&mut self) -> Result<Option<Frame>, NetError> {
        if self.failed {
            return Err(NetError::Poisoned);
        }
        let result = self.reader.next_frame();
        if result.is_err() {
            self.failed = true;
            self.reader.clear();
        }
        result
    }

    /// One receive attempt that never waits, whatever the mode.
    pub(crate) fn recv_nowait(&mut self) -> Result<Frame, NetError> {
        let nonblocking = std::mem::replace(&mut self.nonblocking, true);
        let result = self.recv();
        self.nonblocking = nonblocking;
        result
    }

    pub(crate) fn is_nonblocking(&self) -> bool {
        self.nonblocking
    }

    fn recv_inner(&mut self) -> Result<Frame, NetError> {
        loop {
            if let Some(frame) = self.reader.next_frame()? {
                return Ok(frame);
            }
            let (first, second) = self.reader.read_targets()?;
            let mut targets = [IoSliceMut::new(first), IoSliceMut::new(second)];
            match (&*self.stream).read_vectored(&mut targets) {
                Ok(0) => return Err(self.reader.eof()),
                Ok(n) => self.reader.filled(n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if self.nonblocking {
                        return Err(NetError::WouldBlock);
                    }
                    let ready = socket::poll(self.stream.as_fd(), true, false, -1)
                        .map_err(|e| NetError::io("poll", e))?;
                    if ready.error && !ready.read {
                        // Only zero-copy completions for the sending half (on another thread,
                        // after `split`), which collects them; let it run.
                        std::thread::yield_now();
                    }
                }
                Err(e) => return Err(NetError::io("readv", e)),
            }
        }
    }
}

impl AsFd for Receiver {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.stream.as_fd()
    }
}
