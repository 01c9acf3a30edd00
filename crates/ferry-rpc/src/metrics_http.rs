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

/// The longest request head read (request line and headers).
const MAX_HEAD: usize = 8 * 1024;
/// How long a client has to send its whole request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a client has to take the whole answer.
const WRITE_TIMEOUT: Duration = Duration::from_secs(2);
/// How often a connection being served looks whether the endpoint is stopping.
const POLL: Duration = Duration::from_millis(100);

/// The `Content-Type` of the metrics.
const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
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

/// Where the head in `buf` ends (just past its blank line: `\r\n\r\n`, or `\n\n` as RFC 9112
/// lets a recipient accept), looking at line ends from `from` on.
fn head_end(buf: &[u8], from: usize) -> Option<usize> {
    let tail = buf.get(from..)?;
    tail.iter().enumerate().find_map(|(i, &b)| {
        let after = tail.get(i + 1..)?;
        if b != b'\n' {
            None
        } else if after.starts_with(b"\n") {
            Some(from + i + 2)
        } else if after.starts_with(b"\r\n") {
            Some(from + i + 3)
        } else {
            None
        }
    })
}

/// What to answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    Metrics,
    BadRequest,
    MethodNotAllowed,
    Timeout,
    HeadTooLarge,
    VersionNotSupported,
}

/// The answer to a complete request head, from its request line
/// (`method SP request-target SP HTTP-version`, RFC 9112 section 3).
fn route(head: &[u8]) -> Answer {
    let line = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let mut parts = line.split(|&b| b == b' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Answer::BadRequest;
    };
    if method.is_empty() || !method.iter().all(|&b| is_tchar(b)) {
        return Answer::BadRequest;
    }
    if target.is_empty() || !target.iter().all(|b| (0x21..=0x7e).contains(b)) {
        return Answer::BadRequest;
    }
    match version {
        b"HTTP/1.0" | b"HTTP/1.1" => {}
        [b'H', b'T', b'T', b'P', b'/', major, b'.', minor]
            if major.is_ascii_digit() && minor.is_ascii_digit() =>
        {
            return Answer::VersionNotSupported;
        }
        _ => return Answer::BadRequest,
    }
    if method == b"GET" {
        Answer::Metrics
    } else {
        Answer::MethodNotAllowed
    }
}

/// A character of a token (a method name), RFC 9110 section 5.6.2.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

impl Answer {
    /// The whole response: status line, headers, body.
    fn response(self, metrics: &Metrics) -> Vec<u8> {
        let (status, extra, content_type, body) = match self {
            Answer::Metrics => ("200 OK", "", CONTENT_TYPE, metrics.encode()),
            Answer::BadRequest => ("400 Bad Request", "", "", String::new()),
            Answer::MethodNotAllowed => ("405 Method Not Allowed", "Allow: GET\r\n", "", String::new()),
            Answer::Timeout => ("408 Request Timeout", "", "", String::new()),
            Answer::HeadTooLarge => ("431 Request Header Fields Too Large", "", "", String::new()),
            Answer::VersionNotSupported => ("505 HTTP Version Not Supported", "", "", String::new()),
        };
        let (content_type, body) = if content_type.is_empty() {
            ("text/plain; charset=utf-8", format!("{status}\n"))
        } else {
            (content_type, body)
        };
        let mut response = format!(
            "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n{extra}\r\n",
            body.len()
        )
        .into_bytes();
        response.extend_from_slice(body.as_bytes());
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_ends_at_the_blank_line() {
        assert_eq!(head_end(b"GET / HTTP/1.1\r\n\r\n", 0), Some(18));
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nHost: a\r\n\r\nbody", 0), Some(27));
        assert_eq!(head_end(b"GET / HTTP/1.0\n\n", 0), Some(16));
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nHost: a\r\n", 0), None);
        assert_eq!(head_end(b"GET / HTTP/1.1\r\n\r", 0), None);
        assert_eq!(head_end(b"", 0), None);
        assert_eq!(head_end(b"abc", 10), None);
        // Found again when looking from 3 bytes before the end of an earlier read.
        let head = b"GET / HTTP/1.1\r\n\r\n";
        assert_eq!(head_end(head, 17 - 3), Some(18));
    }

    #[test]
    fn routes_by_request_line() {
        let cases: &[(&[u8], Answer)] = &[
            (b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", Answer::Metrics),
            (b"GET / HTTP/1.0\r\n\r\n", Answer::Metrics),
            (b"GET /anything?x=1 HTTP/1.1\n\n", Answer::Metrics),
            (b"POST /metrics HTTP/1.1\r\n\r\n", Answer::MethodNotAllowed),
            (b"HEAD /metrics HTTP/1.1\r\n\r\n", Answer::MethodNotAllowed),
            (b"get /metrics HTTP/1.1\r\n\r\n", Answer::MethodNotAllowed),
            (b"GET /metrics HTTP/2.0\r\n\r\n", Answer::VersionNotSupported),
            (b"GET /metrics HTTP/1.1 extra\r\n\r\n", Answer::BadRequest),
            (b"GET  /metrics HTTP/1.1\r\n\r\n", Answer::BadRequest),
            (b"GET /metrics\r\n\r\n", Answer::BadRequest),
            (b"GET /metrics http/1.1\r\n\r\n", Answer::BadRequest),
            (b"GET /metrics HTTP/1.12\r\n\r\n", Answer::BadRequest),
            (b"GET /m\xe9trics HTTP/1.1\r\n\r\n", Answer::BadRequest),
            (b"G(T / HTTP/1.1\r\n\r\n", Answer::BadRequest),
            (b"garbage\r\n\r\n", Answer::BadRequest),
            (b"\r\n\r\n", Answer::BadRequest),
            (b"\x00\xff\x16\x03\x01\n\n", Answer::BadRequest),
            (b"", Answer::BadRequest),
        ];
        for &(head, answer) in cases {
            assert_eq!(route(head), answer, "{:?}", String::from_utf8_lossy(head));
        }
    }

    #[test]
    fn responses_are_framed() {
        let metrics = Metrics::new(&[]);
        let ok = String::from_utf8(Answer::Metrics.response(&metrics)).expect("utf-8");
        let (head, body) = ok.split_once("\r\n\r\n").expect("a head");
        assert_eq!(
            head,
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {CONTENT_TYPE}\r\nContent-Length: {}\r\nConnection: close",
                body.len()
            )
        );
        assert!(body.ends_with("# EOF\n"));

        let refused = String::from_utf8(Answer::MethodNotAllowed.response(&metrics)).expect("utf-8");
        assert_eq!(
            refused,
            "HTTP/1.1 405 Method Not Allowed\r\nContent-Type: text/plain; charset=utf-8\r\n\
             Content-Length: 23\r\nConnection: close\r\nAllow: GET\r\n\r\n405 Method Not Allowed\n"
        );
    }
}
