//! A TCP connection: one [`Sender`] and one [`Receiver`] over a shared socket.

use std::net::{TcpStream, ToSocketAddrs};
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::Arc;

use ferry_buf::Pool;
use ferry_wire::Serialize;

use crate::frame::{HEADER_LEN, Meta};
use crate::reader::{Frame, RecvCounters};
use crate::sender::{Raw, SendStats, Sender};
use crate::sys::socket;
use crate::{Config, Mode, NetError};

/// Both halves' statistics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// The sending half.
    pub send: SendStats,
    /// The receiving half.
    pub recv: RecvCounters,
}

/// A framed, batched TCP connection that sends Ferry objects (see the crate docs).
#[derive(Debug)]
pub struct Connection {
    tx: Sender,
    rx: crate::Receiver,
}

impl Connection {
    /// Wraps a connected stream. The socket is switched to non-blocking I/O (blocking calls
    /// wait in `poll`), `TCP_NODELAY` is set (the connection batches itself), and
    /// `SO_ZEROCOPY` for the zero-copy modes.
    ///
    /// Fails if `config.max_frame_len` does not fit the pool's largest buffer (a frame that
    /// straddles reads is received into one buffer of its exact size).
    pub fn new(stream: TcpStream, pool: &Pool, config: &Config) -> Result<Connection, NetError> {
        let largest = pool.max_class() - HEADER_LEN;
        if config.max_frame_len > largest {
            return Err(NetError::Config(format!(
                "max_frame_len {} exceeds what the pool's largest buffer holds after a frame header ({largest})",
                config.max_frame_len
            )));
        }
        stream
            .set_nonblocking(true)
            .map_err(|e| NetError::io("fcntl(O_NONBLOCK)", e))?;
        stream
            .set_nodelay(true)
            .map_err(|e| NetError::io("setsockopt(TCP_NODELAY)", e))?;
        let stream = Arc::new(stream);
        Ok(Connection {
            tx: Sender::new(Arc::clone(&stream), pool, config)?,
            rx: crate::Receiver::new(stream, pool, config),
        })
    }

    /// Connects to `addr` and wraps the stream (see [`Connection::new`]).
    pub fn connect(addr: impl ToSocketAddrs, pool: &Pool, config: &Config) -> Result<Connection, NetError> {
        let stream = TcpStream::connect(addr).map_err(|e| NetError::io("connect", e))?;
        Connection::new(stream, pool, config)
    }

    /// The send mode in use (the configured one or its fallback).
    pub fn mode(&self) -> Mode {
        self.tx.mode()
    }

    /// Queues a Ferry message ([`Sender::send`]).
    pub fn send<M: Serialize + ?Sized>(&mut self, meta: Meta, msg: &M) -> Result<(), NetError> {
        self.tx.send(meta, msg)
    }

    /// Queues a payload that is not a Ferry message ([`Sender::send_raw`]).
    pub fn send_raw(&mut self, meta: Meta, raw: Raw<'_>) -> Result<(), NetError> {
        self.tx.send_raw(meta, raw)
    }

    /// Writes every queued frame ([`Sender::flush`]).
    pub fn flush(&mut self) -> Result<(), NetError> {
        self.tx.flush()
    }

    /// Returns the next frame received, writing queued frames meanwhile: while it waits, it
    /// waits for the socket to become readable *or* writable, so two peers that both send
    /// before they receive cannot deadlock on full socket buffers.
    pub fn recv(&mut self) -> Result<Frame, NetError> {
        // A frame already read is returned without a system call: pipelined callers then keep
        // batching their sends.
        if let Some(frame) = self.rx.buffered()? {
            return Ok(frame);
        }
        loop {
            let unsent = match self.tx.flush_nowait() {
                Ok(()) => false,
                Err(NetError::WouldBlock) => true,
                Err(e) => return Err(e),
            };
            match self.rx.recv_nowait() {
                Err(NetError::WouldBlock) => {}
                other => return other,
            }
            if self.rx.is_nonblocking() {
                return Err(NetError::WouldBlock);
            }
            let ready = socket::poll(self.as_fd(), true, unsent, -1).map_err(|e| NetError::io("poll", e))?;
            if ready.error {
                self.tx.poll_completions()?;
            }
        }
    }

    /// Switches both halves between blocking and non-blocking calls.
    pub fn set_nonblocking(&mut self, nonblocking: bool) {
        self.tx.set_nonblocking(nonblocking);
        self.rx.set_nonblocking(nonblocking);
    }

    /// Sets `SO_SNDBUF` (the kernel doubles it, with a floor).
    pub fn set_send_buffer(&self, bytes: usize) -> Result<(), NetError> {
        socket::set_send_buffer(self.as_fd(), bytes).map_err(|e| NetError::io("setsockopt(SO_SNDBUF)", e))
    }

    /// Sets `SO_RCVBUF` (the kernel doubles it, with a floor).
    pub fn set_recv_buffer(&self, bytes: usize) -> Result<(), NetError> {
        socket::set_recv_buffer(self.as_fd(), bytes).map_err(|e| NetError::io("setsockopt(SO_RCVBUF)", e))
    }

    /// Sets the TCP congestion control (`cubic`, `bbr`, `reno`): benchmarks fix it.
    pub fn set_congestion(&self, name: &str) -> Result<(), NetError> {
        socket::set_congestion(self.as_fd(), name).map_err(|e| NetError::io("setsockopt(TCP_CONGESTION)", e))
    }

    /// Both halves' statistics.
    pub fn stats(&self) -> Stats {
        Stats {
            send: self.tx.stats(),
            recv: self.rx.stats(),
        }
    }

    /// The sending half.
    pub fn sender(&mut self) -> &mut Sender {
        &mut self.tx
    }

    /// The receiving half.
    pub fn receiver(&mut self) -> &mut crate::Receiver {
        &mut self.rx
    }

    /// Splits into halves that can live on different threads.
    pub fn split(self) -> (Sender, crate::Receiver) {
        (self.tx, self.rx)
    }
}

impl AsFd for Connection {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.tx.as_fd()
    }
}
