//! A TCP connection: one [`Sender`] and one [`Receiver`] over a shared socket.

use std::net::{TcpStream, ToSocketAddrs};
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::Arc;

use ferry_buf::Pool;
use ferry_wire::Outgoing;

use crate::Meta;
use crate::Payload;
use crate::frame::HEADER_LEN;
use crate::reader::{Frame, RecvCounters};
use crate::sender::{SendStats, Sender};
use crate::sys::socket;
use crate::tls::session::{self, Shared, TlsSession};
use crate::tls::{Handshake, PeerIdentity, TlsClient, TlsServer};
use crate::{Config, Mode, TransportError};

/// What one non-waiting pass found.
enum Poll {
    Frame(Frame),
    Idle { unsent: bool },
}

/// Both halves' statistics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// The sending half.
    pub send: SendStats,
    /// The receiving half.
    pub recv: RecvCounters,
    /// Over TLS: bytes the receive path copied, each received byte twice (rustls' plaintext
    /// buffer, then the receive buffers: [`Receiver::tls_copied`](crate::Receiver::tls_copied));
    /// the sending half's count, each byte once, is [`SendStats::tls_copied`]. Zero without TLS.
    pub recv_tls_copied: u64,
}

/// A framed, batched TCP connection that sends Ferry objects (see the crate docs).
#[derive(Debug)]
pub struct Connection {
    tx: Sender,
    rx: crate::Receiver,
    tls: Option<Shared>,
}

impl Connection {
    /// Wraps a connected stream. The socket is switched to non-blocking I/O (blocking calls
    /// wait in `poll`), `TCP_NODELAY` is set (the connection batches itself), and
    /// `SO_ZEROCOPY` for the zero-copy modes.
    ///
    /// Fails if `config.max_frame_len` does not fit the pool's largest buffer (a frame that
    /// straddles reads is received into one buffer of its exact size).
    pub fn new(stream: TcpStream, pool: &Pool, config: &Config) -> Result<Connection, TransportError> {
        Connection::build(stream, pool, config, None)
    }

    /// The server's side of a TLS connection on an accepted stream, handshaking: it never
    /// waits for the client. Reads ([`try_recv`](Self::try_recv), or
    /// [`handshake_step`](Self::handshake_step)) drive the handshake, which fails with
    /// [`TlsError::HandshakeTimeout`](crate::TlsError::HandshakeTimeout) once
    /// `tls.handshake_timeout` has passed ([`handshake_deadline`](Self::handshake_deadline)
    /// says when, for a loop's timer).
    pub fn tls_server(
        stream: TcpStream,
        pool: &Pool,
        config: &Config,
        tls: &TlsServer,
    ) -> Result<Connection, TransportError> {
        Connection::build(stream, pool, config, Some(TlsSession::server(tls)?))
    }

    /// The client's side of a TLS connection to `host` (the certificate must name it, or
    /// `tls.server_name`), handshaking, without waiting (see [`tls_server`](Self::tls_server)).
    pub fn tls_client(
        stream: TcpStream,
        host: &str,
        pool: &Pool,
        config: &Config,
        tls: &TlsClient,
    ) -> Result<Connection, TransportError> {
        Connection::build(stream, pool, config, Some(TlsSession::client(tls, host)?))
    }

    /// Connects to `addr` (`host:port`) over TLS and completes the handshake, waiting at most
    /// `tls.handshake_timeout` for it.
    pub fn connect_tls(
        addr: &str,
        pool: &Pool,
        config: &Config,
        tls: &TlsClient,
    ) -> Result<Connection, TransportError> {
        let host = addr.rsplit_once(':').map_or(addr, |(host, _)| host);
        let stream = TcpStream::connect(addr).map_err(|e| TransportError::io("connect", e))?;
        let conn = Connection::tls_client(stream, host, pool, config, tls)?;
        if let Some(tls) = &conn.tls {
            session::lock(tls).complete(conn.tx.stream())?;
        }
        Ok(conn)
    }

    fn build(
        stream: TcpStream,
        pool: &Pool,
        config: &Config,
        tls: Option<TlsSession>,
    ) -> Result<Connection, TransportError> {
        let largest = pool.max_class() - HEADER_LEN;
        if config.max_frame_len > largest {
            return Err(TransportError::Config(format!(
                "max_frame_len {} exceeds what the pool's largest buffer holds after a frame header ({largest})",
                config.max_frame_len
            )));
        }
        stream
            .set_nonblocking(true)
            .map_err(|e| TransportError::io("fcntl(O_NONBLOCK)", e))?;
        stream
            .set_nodelay(true)
            .map_err(|e| TransportError::io("setsockopt(TCP_NODELAY)", e))?;
        let stream = Arc::new(stream);
        let tls = tls.map(TlsSession::into_shared);
        let tx = match &tls {
            Some(t) => Sender::with_tls(Arc::clone(&stream), pool, config, Arc::clone(t))?,
            None => Sender::new(Arc::clone(&stream), pool, config)?,
        };
        Ok(Connection {
            tx,
            rx: crate::Receiver::new(stream, pool, config, tls.clone()),
            tls,
        })
    }

    /// Whether the connection runs TLS.
    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// Moves a TLS handshake on without waiting and says what it waits for
    /// ([`Handshake::Done`] at once without TLS). Errors name the cause
    /// ([`TlsError::of`](crate::TlsError::of)); after one the connection is unusable.
    pub fn handshake_step(&mut self) -> Result<Handshake, TransportError> {
        match &self.tls {
            Some(tls) => session::lock(tls).step(self.tx.stream()),
            None => Ok(Handshake::Done),
        }
    }

    /// While a TLS handshake is in progress: when it must be done by.
    pub fn handshake_deadline(&self) -> Option<std::time::Instant> {
        self.tls.as_ref().and_then(|t| session::lock(t).deadline())
    }

    /// The peer's certificate's subject and SANs (TLS, after the handshake, if the peer
    /// presented one: a client under mTLS, always a server). `None` otherwise.
    pub fn peer_identity(&self) -> Option<Arc<PeerIdentity>> {
        self.tls.as_ref().and_then(|t| session::lock(t).identity())
    }

    /// Connects to `addr` and wraps the stream (see [`Connection::new`]).
    pub fn connect(
        addr: impl ToSocketAddrs,
        pool: &Pool,
        config: &Config,
    ) -> Result<Connection, TransportError> {
        let stream = TcpStream::connect(addr).map_err(|e| TransportError::io("connect", e))?;
        Connection::new(stream, pool, config)
    }

    /// The send mode in use (the configured one or its fallback).
    pub fn mode(&self) -> Mode {
        self.tx.mode()
    }

    /// Queues a Ferry message ([`Sender::send`]).
    pub fn send<M: Outgoing + ?Sized>(&mut self, meta: Meta, msg: &M) -> Result<(), TransportError> {
        self.tx.send(meta, msg)
    }

    /// Queues a payload that is not a Ferry message ([`Sender::send_payload`]).
    pub fn send_payload(&mut self, meta: Meta, raw: Payload<'_>) -> Result<(), TransportError> {
        self.tx.send_payload(meta, raw)
    }

    /// Writes every queued frame ([`Sender::flush`]).
    pub fn flush(&mut self) -> Result<(), TransportError> {
        self.tx.flush()
    }

    /// Returns the next frame received, writing queued frames meanwhile: while it waits, it
    /// waits for the socket to become readable *or* writable, so two peers that both send
    /// before they receive cannot deadlock on full socket buffers. Always waits (see
    /// [`try_recv`](Self::try_recv) for the call that does not).
    pub fn recv(&mut self) -> Result<Frame, TransportError> {
        loop {
            let unsent = match self.poll_once()? {
                Poll::Frame(frame) => return Ok(frame),
                Poll::Idle { unsent } => unsent,
            };
            let ready =
                socket::poll(self.as_fd(), true, unsent, -1).map_err(|e| TransportError::io("poll", e))?;
            if ready.error {
                self.tx.poll_completions()?;
            }
        }
    }

    /// The next frame if one has arrived, never waiting, whatever
    /// [`set_nonblocking`](Self::set_nonblocking) says: `Ok(None)` when none has. Writes
    /// queued frames as far as the socket takes them. A frame already read is returned without
    /// a system call, so an event loop calls this until `None` before it polls the socket
    /// ([`AsFd`]) for reading again.
    pub fn try_recv(&mut self) -> Result<Option<Frame>, TransportError> {
        match self.poll_once()? {
            Poll::Frame(frame) => Ok(Some(frame)),
            Poll::Idle { .. } => Ok(None),
        }
    }

    /// One pass of both halves that never waits.
    fn poll_once(&mut self) -> Result<Poll, TransportError> {
        // A frame already read is returned without a system call: pipelined callers then keep
        // batching their sends.
        if let Some(frame) = self.rx.buffered()? {
            return Ok(Poll::Frame(frame));
        }
        let unsent = match self.tx.flush_nowait() {
            Ok(()) => false,
            Err(TransportError::WouldBlock) => true,
            Err(e) => return Err(e),
        };
        match self.rx.try_recv()? {
            Some(frame) => Ok(Poll::Frame(frame)),
            None => Ok(Poll::Idle { unsent }),
        }
    }

    /// Non-blocking sends: [`send`](Self::send) and [`flush`](Self::flush) return
    /// [`TransportError::WouldBlock`] instead of waiting for the socket ([`Sender::set_nonblocking`]).
    /// Receiving is chosen per call: [`recv`](Self::recv) waits, [`try_recv`](Self::try_recv)
    /// does not.
    pub fn set_nonblocking(&mut self, nonblocking: bool) {
        self.tx.set_nonblocking(nonblocking);
    }

    /// Bytes held until the kernel's zero-copy completion ([`Sender::in_flight`]).
    pub fn in_flight(&self) -> usize {
        self.tx.in_flight()
    }

    /// Sets `SO_SNDBUF` (the kernel doubles it, with a floor).
    pub fn set_send_buffer(&self, bytes: usize) -> Result<(), TransportError> {
        socket::set_send_buffer(self.as_fd(), bytes)
            .map_err(|e| TransportError::io("setsockopt(SO_SNDBUF)", e))
    }

    /// Sets `SO_RCVBUF` (the kernel doubles it, with a floor).
    pub fn set_recv_buffer(&self, bytes: usize) -> Result<(), TransportError> {
        socket::set_recv_buffer(self.as_fd(), bytes)
            .map_err(|e| TransportError::io("setsockopt(SO_RCVBUF)", e))
    }

    /// Sets the TCP congestion control (`cubic`, `bbr`, `reno`): benchmarks fix it.
    pub fn set_congestion(&self, name: &str) -> Result<(), TransportError> {
        socket::set_congestion(self.as_fd(), name)
            .map_err(|e| TransportError::io("setsockopt(TCP_CONGESTION)", e))
    }

    /// Both halves' statistics.
    pub fn stats(&self) -> Stats {
        Stats {
            send: self.tx.stats(),
            recv: self.rx.stats(),
            recv_tls_copied: self.rx.tls_copied(),
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
