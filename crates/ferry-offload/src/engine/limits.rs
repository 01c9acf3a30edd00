//! The gateway's limits on its gRPC connections, in one place, and their counters.
//!
//! | limit | where | default | at the edge |
//! |---|---|---|---|
//! | connections open at once (TLS handshakes included) | [`GatewayLimits::max_connections`] | 4096 | the next is accepted and closed at once: [`ConnStats::refused`] |
//! | idle time: no byte either way | [`GatewayLimits::idle_timeout`] | 5 min | closed: [`ConnStats::idle_closed`] |
//! | TLS handshake | [`TlsServer::handshake_timeout`](ferry::net::tls::TlsServer) | 10 s | closed: [`ConnStats::handshake_timeouts`] |
//! | HTTP/2 streams per connection | [`GatewayLimits::max_concurrent_streams`] | 256 | the client is told in SETTINGS; more are refused (`REFUSED_STREAM`) |
//! | HTTP/2 header block | [`GatewayLimits::max_header_list_size`] | 16 KiB | the stream is refused |
//! | HTTP/2 receive windows | [`GatewayLimits::stream_window`], [`GatewayLimits::connection_window`] | 1 MiB, 2 MiB | the client waits for window (what a client that sends and never reads can hold) |
//! | a request message | [`EngineConfig::max_message`](super::EngineConfig::max_message) | 4 MiB | `RESOURCE_EXHAUSTED` |
//! | calls waiting for the host | [`EngineConfig::queue`](super::EngineConfig::queue) | 4096 | the gRPC side waits |
//!
//! So one connection holds at most its receive window (the connection's) in request bytes
//! plus, per stream, one message being deframed (at most `max_message`).

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// Limits on the gateway's gRPC connections (see the module docs for all of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GatewayLimits {
    /// Connections open at once, TLS handshakes included (default 4096). One more is
    /// accepted and closed at once, before any handshake, and counted.
    pub max_connections: usize,
    /// A connection with no byte read or written for this long is closed (default 5 min;
    /// `None`: never). A call or stream that stays silent that long goes with it.
    pub idle_timeout: Option<Duration>,
    /// HTTP/2 streams open at once on a connection (default 256).
    pub max_concurrent_streams: u32,
    /// HTTP/2 header block of a request, decoded, at most (default 16 KiB).
    pub max_header_list_size: u32,
    /// HTTP/2 receive window of each stream (default 1 MiB).
    pub stream_window: u32,
    /// HTTP/2 receive window of each connection (default 2 MiB).
    pub connection_window: u32,
}

impl Default for GatewayLimits {
    fn default() -> GatewayLimits {
        GatewayLimits {
            max_connections: 4096,
            idle_timeout: Some(Duration::from_secs(300)),
            max_concurrent_streams: 256,
            max_header_list_size: 16 << 10,
            stream_window: 1 << 20,
            connection_window: 2 << 20,
        }
    }
}

/// The gateway's connections so far ([`Engine::connections`](super::Engine::connections)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConnStats {
    /// Open now (TLS handshakes included).
    pub open: u64,
    /// Accepted over [`GatewayLimits::max_connections`] and closed at once.
    pub refused: u64,
    /// Closed for [`GatewayLimits::idle_timeout`].
    pub idle_closed: u64,
    /// TLS handshakes that did not finish in time.
    pub handshake_timeouts: u64,
    /// TLS handshakes that failed (a bad certificate, a peer that left or sent garbage).
    pub handshake_failures: u64,
}

/// The counters behind [`ConnStats`], shared by the accept loop and every connection.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    open: AtomicU64,
    refused: AtomicU64,
    idle_closed: AtomicU64,
    pub(crate) handshake_timeouts: AtomicU64,
    pub(crate) handshake_failures: AtomicU64,
}

impl Counters {
    pub(crate) fn snapshot(&self) -> ConnStats {
        ConnStats {
            open: self.open.load(Relaxed),
            refused: self.refused.load(Relaxed),
            idle_closed: self.idle_closed.load(Relaxed),
            handshake_timeouts: self.handshake_timeouts.load(Relaxed),
            handshake_failures: self.handshake_failures.load(Relaxed),
        }
    }

    /// Wraps an accepted stream under `limits`, or drops it (closing it) and counts it when
    /// [`GatewayLimits::max_connections`] are open: `None`.
    pub(crate) fn admit<IO>(self: &Arc<Counters>, io: IO, limits: &GatewayLimits) -> Option<Limited<IO>> {
        let before = self.open.fetch_add(1, Relaxed);
        if before >= limits.max_connections as u64 {
            self.open.fetch_sub(1, Relaxed);
            self.refused.fetch_add(1, Relaxed);
            return None;
        }
        Some(Limited {
            io,
            idle: limits.idle_timeout.map(|t| (t, Box::pin(tokio::time::sleep(t)))),
            counters: Arc::clone(self),
        })
    }
}

/// A connection under the limits: counted as open until dropped, and failed with
/// `io::ErrorKind::TimedOut` once idle past the timeout (its reader, which HTTP/2 always has
/// waiting, sees it).
#[derive(Debug)]
pub(crate) struct Limited<IO> {
    io: IO,
    /// The idle timeout and the timer, pushed back by every byte.
    idle: Option<(Duration, Pin<Box<Sleep>>)>,
    counters: Arc<Counters>,
}

impl<IO> Limited<IO> {
    /// A byte went either way: the idle timer starts again.
    fn active(&mut self) {
        if let Some((t, sleep)) = &mut self.idle {
            sleep.as_mut().reset(Instant::now() + *t);
        }
    }
}

impl<IO> Drop for Limited<IO> {
    fn drop(&mut self) {
        self.counters.open.fetch_sub(1, Relaxed);
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for Limited<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        match Pin::new(&mut self.io).poll_read(cx, buf) {
            Poll::Ready(r) => {
                if buf.filled().len() > before {
                    self.active();
                }
                Poll::Ready(r)
            }
            Poll::Pending => {
                if let Some((t, sleep)) = &mut self.idle {
                    ready!(sleep.as_mut().poll(cx));
                    let t = *t;
                    self.counters.idle_closed.fetch_add(1, Relaxed);
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("no byte either way for {t:?} (GatewayLimits::idle_timeout)"),
                    )));
                }
                Poll::Pending
            }
        }
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Limited<IO> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let r = ready!(Pin::new(&mut self.io).poll_write(cx, buf));
        if matches!(r, Ok(n) if n > 0) {
            self.active();
        }
        Poll::Ready(r)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = ready!(Pin::new(&mut self.io).poll_write_vectored(cx, bufs));
        if matches!(r, Ok(n) if n > 0) {
            self.active();
        }
        Poll::Ready(r)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

impl<IO: tonic::transport::server::Connected> tonic::transport::server::Connected for Limited<IO> {
    type ConnectInfo = IO::ConnectInfo;

    fn connect_info(&self) -> IO::ConnectInfo {
        self.io.connect_info()
    }
}
