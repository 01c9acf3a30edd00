//! Fuzz target `tls_stream`: a client's bytes through ferry-net's TLS glue on the server's side
//! (rustls driven sans-IO by `Connection::handshake_step` and `try_recv`, its plaintext copied
//! into the frame reader's targets), over a real loopback connection per input.
//!
//! The first byte picks what the rest is:
//! - even: what a client sends before any handshake (no ClientHello, a truncated or corrupt
//!   one, records of any type), then it closes. The handshake must fail with an error a peer
//!   can cause: a named TLS error, or the stream closed.
//! - odd: a real client (rustls, trusting the test CA) completes a handshake, then sends the
//!   rest (after one more byte choosing how it is cut into records) as application data, and
//!   closes. The frames the server receives, re-serialized, must be exactly the plaintext's
//!   first bytes; a frame error comes at the bad header, and the end of the stream is `Closed`
//!   only between frames (`Truncated` inside one).
#![no_main]

mod common;

use std::io::{ErrorKind, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::OnceLock;
use std::time::Duration;

use ferry_net::frame::HEADER_LEN;
use ferry_net::tls::test_certs::TestCa;
use ferry_net::{ClientAuth, Config, Connection, Handshake, TlsClient, TlsError, TlsServer, TransportError};
use libfuzzer_sys::fuzz_target;
use rustls::ClientConnection;
use rustls::pki_types::ServerName;

struct Setup {
    listener: TcpListener,
    server: TlsServer,
    client: TlsClient,
}

/// A listener, a server certificate for `localhost` and a client trusting its CA, made once.
fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let ca = TestCa::new("ferry fuzz CA");
        let leaf = ca.leaf("server", &["localhost"]);
        let mut server =
            TlsServer::from_pem(leaf.cert.as_bytes(), leaf.key.as_bytes(), ClientAuth::None).expect("server");
        // A handshake that cannot finish fails by its deadline at the latest.
        server.handshake_timeout = Duration::from_secs(5);
        let client = TlsClient::from_pem(ca.pem().as_bytes(), None).expect("client");
        Setup {
            listener: TcpListener::bind("127.0.0.1:0").expect("listener"),
            server,
            client,
        }
    })
}

/// A loopback connection: the client's socket, and the server's TLS side of it (non-blocking).
fn connect(s: &Setup) -> (TcpStream, Connection) {
    let client = TcpStream::connect(s.listener.local_addr().unwrap()).expect("connect");
    let (accepted, _) = s.listener.accept().expect("accept");
    // Frames up to 64 KiB, read 16 KiB at a time: within the fuzz pool's 1 MiB regions.
    let config = Config {
        max_frame_len: 64 << 10,
        read_buf: 16 << 10,
        ..Config::default()
    };
    let mut server = Connection::tls_server(accepted, common::pool(), &config, &s.server).expect("server side");
    server.set_nonblocking(true);
    (client, server)
}

/// An error a client can cause during the handshake.
fn from_the_peer(e: &TransportError) -> bool {
    TlsError::of(e).is_some() || matches!(e, TransportError::Closed | TransportError::Truncated { .. })
}

fn garbage_before_the_handshake(bytes: &[u8]) {
    let (mut client, mut server) = connect(setup());
    // The server may close (or reset) as soon as it has seen enough to refuse.
    let _ = client.write_all(bytes);
    let _ = client.shutdown(Shutdown::Write);
    loop {
        match server.handshake_step() {
            Ok(Handshake::Done) => panic!("a handshake completed on bytes that are no client's"),
            Ok(Handshake::Waiting { .. }) => std::thread::yield_now(),
            Err(e) => {
                assert!(from_the_peer(&e), "an error a peer cannot cause: {e}");
                return;
            }
        }
    }
}

/// Moves the client's TLS bytes to the socket until it has none or the socket is full.
fn write_tls(tls: &mut ClientConnection, sock: &mut TcpStream) {
    while tls.wants_write() {
        match tls.write_tls(sock) {
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock => return,
            Err(e) => panic!("client write: {e}"),
        }
    }
}

fn frames_through_records(cut: u8, plain: &[u8]) {
    let s = setup();
    let (mut sock, mut server) = connect(s);
    sock.set_nonblocking(true).unwrap();
    let name = ServerName::try_from("localhost").unwrap();
    let mut tls = ClientConnection::new(s.client.config.clone(), name).expect("client session");
    let mut server_done = false;
    while tls.is_handshaking() || !server_done {
        write_tls(&mut tls, &mut sock);
        if !server_done {
            server_done = server.handshake_step().expect("a real client's handshake") == Handshake::Done;
        }
        match tls.read_tls(&mut sock) {
            Ok(0) => panic!("the server closed during a real handshake"),
            Ok(_) => {
                tls.process_new_packets().expect("the server's handshake");
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::yield_now(),
            Err(e) => panic!("client read: {e}"),
        }
    }
    // The plaintext in writes of 1 to 4,081 bytes: records cut anywhere in frames.
    let piece = 1 + usize::from(cut) * 16;
    for chunk in plain.chunks(piece) {
        tls.writer().write_all(chunk).expect("plaintext");
        write_tls(&mut tls, &mut sock);
    }
    tls.send_close_notify();
    sock.set_nonblocking(false).unwrap();
    write_tls(&mut tls, &mut sock);
    let _ = sock.shutdown(Shutdown::Write);

    let mut rebuilt = Vec::with_capacity(plain.len());
    loop {
        match server.try_recv() {
            Ok(Some(frame)) => {
                rebuilt.extend_from_slice(&frame.header().to_bytes());
                rebuilt.extend_from_slice(frame.payload());
                assert_eq!(&plain[..rebuilt.len()], &rebuilt[..], "frames are the plaintext's bytes");
            }
            Ok(None) => std::thread::yield_now(),
            Err(TransportError::Closed) => {
                assert_eq!(rebuilt.len(), plain.len(), "Closed only between frames");
                return;
            }
            Err(TransportError::Truncated { received, expected }) => {
                assert!(rebuilt.len() < plain.len());
                assert_eq!(received, plain.len() - rebuilt.len(), "truncation counts the rest");
                assert!(received < expected.max(HEADER_LEN + 1));
                return;
            }
            Err(TransportError::Frame { offset, .. }) => {
                assert_eq!(offset, rebuilt.len() as u64, "error at the bad header");
                return;
            }
            Err(e) => panic!("an error the plaintext cannot cause: {e}"),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    match data {
        [mode, rest @ ..] if mode % 2 == 0 => garbage_before_the_handshake(rest),
        [_, cut, plain @ ..] => frames_through_records(*cut, plain),
        _ => {}
    }
});
