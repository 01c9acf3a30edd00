//! One connection's rustls state, shared by its sender and receiver, fed by their sockets.

use std::io::{self, IoSlice, Read};
use std::net::TcpStream;
use std::os::fd::AsFd;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rustls::pki_types::ServerName;

use super::{Handshake, PeerIdentity, TlsClient, TlsError, TlsServer};
use crate::TransportError;
use crate::sys::socket;

/// Most records rustls holds before it takes no more plaintext (it then waits for them to be
/// written): a batch's worth, as the plain send queue holds.
const RECORD_BUFFER: usize = 256 << 10;

/// The sender's and receiver's handle on the session.
pub(crate) type Shared = Arc<Mutex<TlsSession>>;

/// Locks the session (a panic while holding it leaves nothing half-done that matters here:
/// the connection fails on its next error anyway).
pub(crate) fn lock(shared: &Shared) -> MutexGuard<'_, TlsSession> {
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

/// What [`TlsSession::read_plain`] found.
pub(crate) enum Plain {
    /// This many bytes copied into the targets.
    Copied(usize),
    /// Nothing decrypted waits: read the socket.
    Empty,
    /// The peer closed (cleanly or not): no more will come.
    Closed,
}

/// See the module docs.
#[derive(Debug)]
pub(crate) struct TlsSession {
    conn: rustls::Connection,
    /// While handshaking: when the handshake must be done by.
    deadline: Option<Instant>,
    timeout: Duration,
    identity: Option<Arc<PeerIdentity>>,
    eof: bool,
}

fn rustls_error(e: rustls::Error) -> TransportError {
    TlsError::Other(e.to_string()).into_transport()
}

impl TlsSession {
    /// A server's side: the handshake starts with the client's first bytes.
    pub(crate) fn server(config: &TlsServer) -> Result<TlsSession, TransportError> {
        let conn = rustls::ServerConnection::new(Arc::clone(&config.config)).map_err(rustls_error)?;
        Ok(TlsSession::new(conn.into(), config.handshake_timeout))
    }

    /// A client's side, asking for `host`'s certificate (or the configured SNI name); its
    /// first flight is ready to write.
    pub(crate) fn client(config: &TlsClient, host: &str) -> Result<TlsSession, TransportError> {
        let name = ServerName::try_from(config.name_for(host).to_owned())
            .map_err(|e| TransportError::Config(format!("TLS server name {host:?}: {e}")))?;
        let mut conn =
            rustls::ClientConnection::new(Arc::clone(&config.config), name).map_err(rustls_error)?;
        conn.set_buffer_limit(Some(RECORD_BUFFER));
        Ok(TlsSession::new(conn.into(), config.handshake_timeout))
    }

    fn new(mut conn: rustls::Connection, timeout: Duration) -> TlsSession {
        conn.set_buffer_limit(Some(RECORD_BUFFER));
        TlsSession {
            conn,
            deadline: Some(Instant::now() + timeout),
            timeout,
            identity: None,
            eof: false,
        }
    }

    pub(crate) fn into_shared(self) -> Shared {
        Arc::new(Mutex::new(self))
    }

    pub(crate) fn is_handshaking(&self) -> bool {
        self.conn.is_handshaking()
    }

    /// When the handshake must be done by, while it is not.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.deadline.filter(|_| self.conn.is_handshaking())
    }

    /// Whether records wait to be written.
    pub(crate) fn wants_write(&self) -> bool {
        self.conn.wants_write()
    }

    /// Fails once the handshake's deadline has passed.
    fn check_deadline(&self) -> Result<(), TransportError> {
        match self.deadline() {
            Some(at) if Instant::now() >= at => {
                Err(TlsError::HandshakeTimeout(self.timeout).into_transport())
            }
            _ => Ok(()),
        }
    }

    /// Writes the records rustls holds: `Ok` when none is left, `WouldBlock` when the socket
    /// is full. Each call is one plain `sendmsg` of up to 64 records.
    pub(crate) fn write_out(&mut self, stream: &TcpStream) -> Result<u64, TransportError> {
        let mut calls = 0;
        while self.conn.wants_write() {
            match self.conn.write_tls(&mut Socket(stream)) {
                Ok(_) => calls += 1,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(TransportError::io("sendmsg", e)),
            }
        }
        Ok(calls)
    }

    /// Reads what the socket holds into rustls and opens the records; writes what the
    /// handshake answers (as far as the socket takes it: the rest waits in
    /// [`wants_write`](Self::wants_write)). `WouldBlock` when the socket had nothing.
    pub(crate) fn read_in(&mut self, stream: &TcpStream) -> Result<(), TransportError> {
        self.check_deadline()?;
        let n = loop {
            match self.conn.read_tls(&mut &*stream) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(TransportError::io("read", e)),
            }
        };
        let handshaking = self.conn.is_handshaking();
        if let Err(e) = self.conn.process_new_packets() {
            // rustls queued an alert that tells the peer why: send it if the socket takes it.
            let _ = self.write_out(stream);
            return Err(TlsError::from_rustls(&e, handshaking).into_transport());
        }
        match self.write_out(stream) {
            Ok(_) | Err(TransportError::WouldBlock) => {}
            Err(e) => return Err(e),
        }
        if n == 0 {
            if self.conn.is_handshaking() {
                return Err(TlsError::ClosedInHandshake.into_transport());
            }
            self.eof = true;
        }
        Ok(())
    }

    /// Hands rustls as much of `parts` as its record buffer takes; it copies each record's
    /// plaintext once into the record and encrypts it there. Returns the bytes taken.
    pub(crate) fn encrypt(&mut self, parts: &[IoSlice<'_>]) -> Result<usize, TransportError> {
        use std::io::Write;
        self.conn
            .writer()
            .write_vectored(parts)
            .map_err(|e| TlsError::Other(e.to_string()).into_transport())
    }

    /// Copies decrypted bytes into `targets`, in order, as far as they go.
    pub(crate) fn read_plain(&mut self, targets: &mut [&mut [u8]]) -> Result<Plain, TransportError> {
        let mut copied = 0;
        for target in targets.iter_mut() {
            let mut filled = 0;
            while filled < target.len() {
                match self.conn.reader().read(&mut target[filled..]) {
                    Ok(0) => {
                        return Ok(if copied + filled > 0 {
                            Plain::Copied(copied + filled)
                        } else {
                            Plain::Closed
                        });
                    }
                    Ok(n) => filled += n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        let total = copied + filled;
                        return Ok(match (total, self.eof) {
                            (0, true) => Plain::Closed,
                            (0, false) => Plain::Empty,
                            (n, _) => Plain::Copied(n),
                        });
                    }
                    // Closed without close_notify: what was decrypted is handed out first.
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                        let total = copied + filled;
                        return Ok(if total > 0 {
                            Plain::Copied(total)
                        } else {
                            Plain::Closed
                        });
                    }
                    Err(e) => return Err(TlsError::Other(e.to_string()).into_transport()),
                }
            }
            copied += filled;
        }
        Ok(Plain::Copied(copied))
    }

    /// Moves the handshake on without waiting: writes what it has, reads what arrived.
    pub(crate) fn step(&mut self, stream: &TcpStream) -> Result<Handshake, TransportError> {
        self.check_deadline()?;
        let mut blocked_write = false;
        loop {
            match self.write_out(stream) {
                Ok(_) => {}
                Err(TransportError::WouldBlock) => blocked_write = true,
                Err(e) => return Err(e),
            }
            if !self.conn.is_handshaking() {
                return Ok(if blocked_write {
                    Handshake::Waiting {
                        read: false,
                        write: true,
                    }
                } else {
                    Handshake::Done
                });
            }
            match self.read_in(stream) {
                Ok(()) => continue,
                Err(TransportError::WouldBlock) => {
                    self.check_deadline()?;
                    return Ok(Handshake::Waiting {
                        read: self.conn.wants_read(),
                        write: self.conn.wants_write(),
                    });
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Blocks until the handshake is done, at most until its deadline (a blocking client's
    /// connect).
    pub(crate) fn complete(&mut self, stream: &TcpStream) -> Result<(), TransportError> {
        loop {
            let Handshake::Waiting { read, write } = self.step(stream)? else {
                return Ok(());
            };
            let left = self
                .deadline
                .map_or(Duration::ZERO, |d| d.saturating_duration_since(Instant::now()));
            let ms = left.as_millis().clamp(1, i32::MAX as u128) as i32;
            socket::poll(stream.as_fd(), read, write, ms).map_err(|e| TransportError::io("poll", e))?;
        }
    }

    /// The peer's certificate's subject and SANs, once the handshake is done and if it sent one.
    pub(crate) fn identity(&mut self) -> Option<Arc<PeerIdentity>> {
        if self.identity.is_none() && !self.conn.is_handshaking() {
            let der = self.conn.peer_certificates()?.first()?;
            self.identity = PeerIdentity::from_der(der).map(Arc::new);
        }
        self.identity.clone()
    }
}

/// The socket as rustls' `io::Write`: vectored writes are one `sendmsg` without `SIGPIPE`.
struct Socket<'a>(&'a TcpStream);

impl io::Write for Socket<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_vectored(&[IoSlice::new(buf)])
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        socket::send_slices(self.0.as_fd(), bufs)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
