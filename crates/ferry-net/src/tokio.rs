//! [`AsyncConnection`]: a [`Connection`] driven by tokio's reactor through [`AsyncFd`].

use std::os::fd::{AsFd, AsRawFd, RawFd};

use ferry_wire::Serialize;
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

use crate::frame::Meta;
use crate::reader::Frame;
use crate::sender::Raw;
use crate::{Connection, NetError, Stats};

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
}

impl AsyncConnection {
    /// Registers `conn` with the current tokio runtime.
    pub fn new(mut conn: Connection) -> Result<AsyncConnection, NetError> {
        conn.set_nonblocking(true);
        let interest = Interest::READABLE | Interest::WRITABLE | Interest::ERROR;
        // SAFETY: the descriptor is the connection's socket, owned (through an `Arc` shared
        // only by its two halves, both inside `Registered`) by the value the `AsyncFd` owns:
        // it stays open and refers to the same socket until the `AsyncFd` is dropped or
        // `into_inner` returns it.
        #[allow(unsafe_code)]
        let inner = unsafe { AsyncFd::register_with_interest(Registered(conn), interest) }
            .map_err(|e| NetError::io("epoll_ctl", e.into_parts().1))?;
        Ok(AsyncConnection { inner })
    }

    /// Runs `op` until it stops returning `WouldBlock`, waiting for `interest` in between.
    async fn drive<T>(
        &mut self,
        interest: Interest,
        mut op: impl FnMut(&mut Connection) -> Result<T, NetError>,
    ) -> Result<T, NetError> {
        loop {
            let mut guard = self
                .inner
                .ready_mut(interest | Interest::ERROR)
                .await
                .map_err(|e| NetError::io("epoll_wait", e))?;
            if guard.ready().is_error() {
                // Zero-copy completions wait on the error queue.
                guard.get_inner_mut().0.sender().poll_completions()?;
            }
            match op(&mut guard.get_inner_mut().0) {
                Err(NetError::WouldBlock) => guard.clear_ready(),
                other => return other,
            }
        }
    }

    /// Queues a Ferry message ([`Connection::send`]), waiting while the queue is full.
    pub async fn send<M: Serialize + ?Sized>(&mut self, meta: Meta, msg: &M) -> Result<(), NetError> {
        // The first attempt queues the frame; a retry only happens if it was not queued.
        self.drive(Interest::WRITABLE, |c| c.send(meta, msg)).await
    }

    /// Queues a raw payload ([`Connection::send_raw`]).
    pub async fn send_raw(&mut self, meta: Meta, raw: Raw<'_>) -> Result<(), NetError> {
        self.drive(Interest::WRITABLE, |c| c.send_raw(meta, raw)).await
    }

    /// Writes every queued frame.
    pub async fn flush(&mut self) -> Result<(), NetError> {
        self.drive(Interest::WRITABLE, Connection::flush).await
    }

    /// Waits until every zero-copy buffer has been released by the kernel.
    pub async fn wait_idle(&mut self) -> Result<(), NetError> {
        self.flush().await?;
        self.drive(Interest::ERROR, |c| {
            c.sender().poll_completions()?;
            if c.sender().in_flight() == 0 {
                Ok(())
            } else {
                Err(NetError::WouldBlock)
            }
        })
        .await
    }

    /// Flushes, then receives the next frame.
    pub async fn recv(&mut self) -> Result<Frame, NetError> {
        self.flush().await?;
        self.drive(Interest::READABLE, Connection::recv).await
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
