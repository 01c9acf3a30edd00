//! [`AsyncConnection`]: a [`Connection`] driven by tokio's reactor through [`AsyncFd`].

use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};

use ferry_wire::Outgoing;
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

use crate::Meta;
use crate::Payload;
use crate::reader::Frame;
use crate::{Connection, Mode, Stats, TransportError};

/// The connection in non-blocking mode, registered with tokio's reactor.
#[derive(Debug)]
struct Registered(Connection);

impl AsRawFd for Registered {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_fd().as_raw_fd()
    }
}

/// A [`Connection`] for async code: the same batching, modes and buffers, waiting on tokio's
/// reactor instead of `poll(2)`. Create it inside a tokio runtime.
#[derive(Debug)]
pub struct AsyncConnection {
    inner: AsyncFd<Registered>,
    /// In [`Mode::Uring`]: a duplicate of the ring's descriptor, readable when notifications
    /// wait (they do not show on the socket).
    ring: Option<AsyncFd<OwnedFd>>,
}

impl AsyncConnection {
    /// Registers `conn` with the current tokio runtime.
    pub fn new(mut conn: Connection) -> Result<AsyncConnection, TransportError> {
        conn.set_nonblocking(true);
        let ring = match conn.mode() {
            Mode::Uring => {
                let fd = conn
                    .sender()
                    .completion_fd()
                    .try_clone_to_owned()
                    .map_err(|e| TransportError::io("dup", e))?;
                // SAFETY: `fd` is a descriptor this value owns (a fresh duplicate), and the
                // `AsyncFd` owns `fd`: it stays open until the `AsyncFd` is dropped.
                #[allow(unsafe_code)]
                let ring = unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }
                    .map_err(|e| TransportError::io("epoll_ctl", e.into_parts().1))?;
                Some(ring)
            }
            _ => None,
        };
        let interest = Interest::READABLE | Interest::WRITABLE | Interest::ERROR;
        // SAFETY: the descriptor is the connection's socket, owned (through an `Arc` shared
        // only by its two halves, both inside `Registered`) by the value the `AsyncFd` owns:
        // it stays open and refers to the same socket until the `AsyncFd` is dropped or
        // `into_inner` returns it.
        #[allow(unsafe_code)]
        let inner = unsafe { AsyncFd::register_with_interest(Registered(conn), interest) }
            .map_err(|e| TransportError::io("epoll_ctl", e.into_parts().1))?;
        Ok(AsyncConnection { inner, ring })
    }

    fn conn(&mut self) -> &mut Connection {
        &mut self.inner.get_mut().0
    }

    /// Waits until the socket is ready for `interest` or has zero-copy completions (the
    /// error queue, or the ring in uring mode), and collects those completions.
    async fn wait(&mut self, interest: Interest) -> Result<(), TransportError> {
        let epoll = |e| TransportError::io("epoll_wait", e);
        // `ready_mut`, not `ready`: a shared borrow held across the await would need the
        // connection to be `Sync`, and it is only `Send`.
        let (inner, ring) = (&mut self.inner, &self.ring);
        match ring {
            None => inner
                .ready_mut(interest | Interest::ERROR)
                .await
                .map_err(epoll)?
                .clear_ready(),
            Some(ring) => {
                tokio::select! {
                    guard = inner.ready_mut(interest | Interest::ERROR) => guard.map_err(epoll)?.clear_ready(),
                    guard = ring.readable() => guard.map_err(epoll)?.clear_ready(),
                }
            }
        }
        self.conn().sender().poll_completions()
    }

    /// Runs `op` until it stops returning `WouldBlock`, waiting for `interest` in between.
    async fn drive<T>(
        &mut self,
        interest: Interest,
        mut op: impl FnMut(&mut Connection) -> Result<T, TransportError>,
    ) -> Result<T, TransportError> {
        loop {
            match op(self.conn()) {
                Err(TransportError::WouldBlock) => self.wait(interest).await?,
                other => return other,
            }
        }
    }

    /// Completes a TLS handshake (at once without TLS), waiting on the reactor, never past
    /// the handshake's deadline ([`TlsError::HandshakeTimeout`](crate::TlsError::HandshakeTimeout)).
    pub async fn handshake(&mut self) -> Result<(), TransportError> {
        loop {
            let Some(interest) = self.conn().handshake_step()?.interest() else {
                return Ok(());
            };
            let Some(deadline) = self.conn().handshake_deadline() else {
                continue;
            };
            if tokio::time::timeout_at(deadline.into(), self.wait(interest))
                .await
                .is_err()
            {
                // The step reports the timeout, named.
                self.conn().handshake_step()?;
            }
        }
    }

    /// Queues a Ferry message ([`Connection::send`]), waiting while the queue is full.
    pub async fn send<M: Outgoing + ?Sized>(&mut self, meta: Meta, msg: &M) -> Result<(), TransportError> {
        // An attempt that returns `WouldBlock` queued nothing; the retry queues the frame.
        self.drive(Interest::WRITABLE, |c| c.send(meta, msg)).await
    }

    /// Queues a raw payload ([`Connection::send_payload`]).
    pub async fn send_payload(&mut self, meta: Meta, raw: Payload<'_>) -> Result<(), TransportError> {
        self.drive(Interest::WRITABLE, |c| c.send_payload(meta, raw))
            .await
    }

    /// Writes every queued frame.
    pub async fn flush(&mut self) -> Result<(), TransportError> {
        self.drive(Interest::WRITABLE, Connection::flush).await
    }

    /// Waits until every zero-copy buffer has been released by the kernel.
    pub async fn wait_idle(&mut self) -> Result<(), TransportError> {
        self.flush().await?;
        loop {
            self.conn().sender().poll_completions()?;
            if self.conn().sender().in_flight() == 0 {
                return Ok(());
            }
            self.wait(Interest::ERROR).await?;
        }
    }

    /// Flushes, then receives the next frame.
    pub async fn recv(&mut self) -> Result<Frame, TransportError> {
        self.flush().await?;
        // `try_recv`, not `recv`: `recv` would wait in `poll(2)` and hold the runtime's thread.
        self.drive(Interest::READABLE, |c| {
            c.try_recv()?.ok_or(TransportError::WouldBlock)
        })
        .await
    }

    /// Both halves' statistics.
    pub fn stats(&self) -> Stats {
        self.inner.get_ref().0.stats()
    }

    /// Deregisters and returns the connection (still in non-blocking mode).
    pub fn into_inner(self) -> Connection {
        self.inner.into_inner().0
    }
}
