//! The Prometheus endpoint: [`MetricsEndpoint`] serves [`Metrics::encode`] over HTTP/1.x from a
//! thread of its own, with std alone (no HTTP library, no async runtime: one small text a few
//! times a minute does not need them). The request line is parsed by pure functions
//! ([`route`], [`head_end`]) tested on bytes; the rest is the socket.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::Metrics;
use crate::http::{Answer, head_end, route};

/// The longest request head read (request line and headers).
const MAX_HEAD: usize = 8 * 1024;
/// How long a client has to send its whole request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a client has to take the whole answer.
const WRITE_TIMEOUT: Duration = Duration::from_secs(2);
/// How often a connection being served looks whether the endpoint is stopping.
const POLL: Duration = Duration::from_millis(100);

/// How long to wait before accepting again after `accept` failed (out of descriptors, ...).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);
/// How long stopping waits to connect to the listener to wake its thread.
const WAKE_TIMEOUT: Duration = Duration::from_secs(1);
/// After answering, how long and how much to read and discard until the client closes, so that
/// closing with unread bytes does not reset the connection before the client reads the answer.
const LINGER_TIME: Duration = Duration::from_millis(500);
const LINGER_BYTES: usize = 64 * 1024;

/// Serves the metrics over HTTP (`GET /metrics`; any path answers the same) on a listener, from
/// a thread of its own, until the handle is dropped or [`stop`](MetricsEndpoint::stop)ped.
///
/// # Untrusted peers
///
/// Whoever reaches the port may send anything, so the endpoint reads at most 8 KiB of a request
/// head, waits at most 2 s for all of it and at most 2 s to hand over the answer, never
/// allocates from what the peer sends, never panics, and answers each connection once and
/// closes it (`Connection: close`):
///
/// | request | answer |
/// |---|---|
/// | `GET <any path> HTTP/1.0` or `HTTP/1.1` | `200`, the metrics (`Content-Type: application/openmetrics-text; version=1.0.0; charset=utf-8`) |
/// | another method (`POST`, `HEAD`, ...) | `405`, `Allow: GET` |
/// | a well-formed request line of another version (`HTTP/2.0`) | `505` |
/// | anything that is not a request line, or a head cut short | `400` |
/// | a head longer than 8 KiB | `431` |
/// | a head still incomplete after 2 s | `408` |
///
/// The request line alone decides the answer: headers and bodies are read (within the
/// limits) but not interpreted.
///
/// # One connection at a time
///
/// Connections are served one after the other on the endpoint's thread: a scrape takes
/// microseconds and Prometheus scrapes a target from one connection at a time. The cost: a
/// client that sends or reads slowly delays the others (they wait in the listener's backlog)
/// by up to about 4.5 s: 2 s for its head, 2 s for the answer, 0.5 s to close.
///
/// # Stopping
///
/// The thread blocks in `accept` (no wake-ups while idle). [`stop`](MetricsEndpoint::stop) and
/// `drop` set a flag and connect to the listener to wake the thread; a connection being served
/// notices the flag within 100 ms. Then the thread exits, is joined, and the listener closes.
///
/// ```
/// use std::io::{Read, Write};
/// use std::net::{TcpListener, TcpStream};
/// use std::sync::Arc;
/// use ferry_rpc::{Metrics, MetricsEndpoint};
///
/// let metrics = Arc::new(Metrics::new(&[("/ferry.test.Echo/Say", 1)]));
/// let endpoint = MetricsEndpoint::start(TcpListener::bind("127.0.0.1:0")?, metrics)?;
///
/// let mut scrape = TcpStream::connect(endpoint.local_addr())?;
/// scrape.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")?;
/// let mut answer = String::new();
/// scrape.read_to_string(&mut answer)?;
/// assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"));
/// assert!(answer.ends_with("# EOF\n"));
///
/// endpoint.stop();
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct MetricsEndpoint {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    /// `None` once stopped.
    thread: Option<JoinHandle<()>>,
}

impl MetricsEndpoint {
    /// Starts serving `metrics` on `listener` (put in blocking mode) from a new thread.
    /// Fails if the listener's address cannot be read or the thread cannot be started.
    pub fn start(listener: TcpListener, metrics: Arc<Metrics>) -> io::Result<MetricsEndpoint> {
        listener.set_nonblocking(false)?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let thread = thread::Builder::new().name("ferry-metrics-http".into()).spawn({
            let stop = stop.clone();
            move || serve_all(&listener, &metrics, &stop)
        })?;
        Ok(MetricsEndpoint {
            addr,
            stop,
            thread: Some(thread),
        })
    }

    /// The address the endpoint listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops serving: the thread leaves the connection it serves, if any, within 100 ms, exits
    /// and is joined, and the listener is closed. Dropping the endpoint does the same.
    pub fn stop(self) {
        drop(self);
    }
}

impl Drop for MetricsEndpoint {
    fn drop(&mut self) {
        let Some(thread) = self.thread.take() else {
            return;
        };
        self.stop.store(true, Ordering::Release);
        // Wake the thread from `accept`. Any connection does; an unspecified address
        // (0.0.0.0, ::) is reached through loopback.
        let mut wake = self.addr;
        if wake.ip().is_unspecified() {
            wake.set_ip(match wake {
                SocketAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
                SocketAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
            });
        }
        match TcpStream::connect_timeout(&wake, WAKE_TIMEOUT) {
            // The thread never panics; if it did, there is nothing more to clean up.
            Ok(_) => drop(thread.join()),
            // Not joined: waiting could take forever. The thread exits at its next connection.
            Err(e) => eprintln!(
                "ferry-rpc: could not wake the metrics endpoint on {wake} to stop it ({e}); \
                 its thread exits at its next connection"
            ),
        }
    }
}

/// The endpoint's thread: accepts and serves connections one at a time until stopped.
fn serve_all(listener: &TcpListener, metrics: &Metrics, stop: &AtomicBool) {
    let mut head = [0u8; MAX_HEAD];
    loop {
        let accepted = listener.accept();
        if stop.load(Ordering::Acquire) {
            return;
        }
        match accepted {
            Ok((stream, _)) => serve(stream, &mut head, metrics, stop),
            Err(e) if matches!(e.kind(), ErrorKind::Interrupted | ErrorKind::ConnectionAborted) => {}
            // Out of descriptors or buffers: wait for some to be freed rather than spin.
            Err(_) => thread::sleep(ACCEPT_BACKOFF),
        }
    }
}

/// Answers one connection and closes it; gives up silently on I/O errors and when stopping.
fn serve(mut stream: TcpStream, buf: &mut [u8; MAX_HEAD], metrics: &Metrics, stop: &AtomicBool) {
    // Accepted sockets may inherit the listener's flags on some systems.
    if stream.set_nonblocking(false).is_err() {
        return;
    }
    let answer = match read_head(&mut stream, buf, stop) {
        Ok(head) => route(head),
        Err(HeadError::TooLarge) => Answer::HeadTooLarge,
        Err(HeadError::CutShort) => Answer::BadRequest,
        Err(HeadError::TimedOut) => Answer::Timeout,
        Err(HeadError::Closed | HeadError::Stopped | HeadError::Io) => return,
    };
    let response = answer.response(metrics);
    if write_all(&mut stream, &response, stop).is_ok() {
        linger(stream);
    }
}

/// Why no complete request head was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HeadError {
    /// [`MAX_HEAD`] bytes without the blank line that ends a head.
    TooLarge,
    /// The client closed its side after some bytes but before the end of the head.
    CutShort,
    /// The client closed without sending anything (a port check, or the wake-up of `stop`).
    Closed,
    /// [`HEAD_TIMEOUT`] passed.
    TimedOut,
    /// The endpoint is stopping.
    Stopped,
    /// The connection failed.
    Io,
}

/// Reads into `buf` until the end of a request head; returns the head.
fn read_head<'b>(
    stream: &mut TcpStream,
    buf: &'b mut [u8; MAX_HEAD],
    stop: &AtomicBool,
) -> Result<&'b [u8], HeadError> {
    let deadline = Instant::now() + HEAD_TIMEOUT;
    let mut len = 0;
    loop {
        let left = remaining(deadline, stop).map_err(|e| match e {
            Expired::Deadline => HeadError::TimedOut,
            Expired::Stopping => HeadError::Stopped,
        })?;
        stream.set_read_timeout(Some(left)).map_err(|_| HeadError::Io)?;
        let Some(free) = buf.get_mut(len..) else {
            return Err(HeadError::Io);
        };
        match stream.read(free) {
            Ok(0) if len == 0 => return Err(HeadError::Closed),
            Ok(0) => return Err(HeadError::CutShort),
            Ok(n) => {
                // A terminator may straddle reads: look again from up to 3 bytes back.
                let from = len.saturating_sub(3);
                len += n;
                let read = buf.get(..len).ok_or(HeadError::Io)?;
                if let Some(end) = head_end(read, from) {
                    return Ok(&buf[..end]);
                }
                if len == MAX_HEAD {
                    return Err(HeadError::TooLarge);
                }
            }
            Err(e) if is_retry(&e) => {}
            Err(_) => return Err(HeadError::Io),
        }
    }
}

/// Writes all of `bytes` before [`WRITE_TIMEOUT`] passes (or the endpoint stops).
fn write_all(stream: &mut TcpStream, mut bytes: &[u8], stop: &AtomicBool) -> Result<(), ()> {
    let deadline = Instant::now() + WRITE_TIMEOUT;
    while !bytes.is_empty() {
        let left = remaining(deadline, stop).map_err(drop)?;
        stream.set_write_timeout(Some(left)).map_err(drop)?;
        match stream.write(bytes) {
            Ok(0) => return Err(()),
            Ok(n) => bytes = bytes.get(n..).unwrap_or_default(),
            Err(e) if is_retry(&e) => {}
            Err(_) => return Err(()),
        }
    }
    Ok(())
}

/// Closes after answering: ends the sending side, then reads and discards what the client
/// still sends (a body, a pipelined request) until it closes, for a bounded time and amount.
/// Closing with unread bytes would send a reset, which may destroy the answer before the
/// client reads it.
fn linger(mut stream: TcpStream) {
    if stream.shutdown(Shutdown::Write).is_err() {
        return;
    }
    let deadline = Instant::now() + LINGER_TIME;
    let mut discarded = 0;
    let mut sink = [0u8; 4096];
    while discarded < LINGER_BYTES {
        let Some(left) = deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
        else {
            return;
        };
        if stream.set_read_timeout(Some(left)).is_err() {
            return;
        }
        match stream.read(&mut sink) {
            Ok(0) => return,
            Ok(n) => discarded += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// Why a connection's time is up.
enum Expired {
    Deadline,
    Stopping,
}

/// The time to wait for in one read or write: until `deadline`, at most [`POLL`].
fn remaining(deadline: Instant, stop: &AtomicBool) -> Result<Duration, Expired> {
    if stop.load(Ordering::Acquire) {
        return Err(Expired::Stopping);
    }
    match deadline.checked_duration_since(Instant::now()) {
        Some(left) if !left.is_zero() => Ok(left.min(POLL)),
        _ => Err(Expired::Deadline),
    }
}

/// A read or write that timed out (one [`POLL`] slice) or was interrupted: try again.
fn is_retry(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
    )
}
