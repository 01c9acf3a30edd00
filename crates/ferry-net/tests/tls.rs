//! TLS over real loopback sockets, certificates made at test time: round trips with large
//! gathered values checked byte for byte (blocking and tokio), the copy count, the peer's
//! identity under mTLS, each named error cause, and a handshake that never waits.

mod common;

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::thread;
use std::time::Duration;

use common::pool;
use ferry_buf::Pool;
use ferry_net::tls::test_certs::{TestCa, TestCert};
use ferry_net::{
    AsyncConnection, ClientAuth, Config, Connection, Handshake, Meta, Mode, TlsClient, TlsError, TlsServer,
    TransportError,
};
use ferry_wire::sample::Record;
use ferry_wire::{Context, Message as _};

fn server_config(cert: &TestCert, auth: ClientAuth) -> TlsServer {
    TlsServer::from_pem(cert.cert.as_bytes(), cert.key.as_bytes(), auth).expect("server config")
}

fn client_config(ca: &TestCa, cert: Option<&TestCert>) -> TlsClient {
    TlsClient::from_pem(
        ca.pem().as_bytes(),
        cert.map(|c| (c.cert.as_bytes(), c.key.as_bytes())),
    )
    .expect("client config")
}

/// A listener and a thread that accepts one connection over TLS and runs `serve` on it.
fn serve<T: Send + 'static>(
    tls: TlsServer,
    serve: impl FnOnce(Result<Connection, TransportError>) -> T + Send + 'static,
) -> (String, thread::JoinHandle<T>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let handle = thread::spawn(move || {
        let pool = pool();
        let (stream, _) = listener.accept().unwrap();
        let conn = Connection::tls_server(stream, &pool, &Config::default(), &tls);
        serve(conn)
    });
    (addr, handle)
}

/// Runs the server side's handshake to its end (or error) by receiving.
fn server_recv(conn: Result<Connection, TransportError>) -> Result<ferry_net::Frame, TransportError> {
    conn?.recv()
}

/// A record with a key and `values` pool values of `len` bytes each (distinct patterns).
fn values(pool: &Pool, count: usize, len: usize) -> Vec<ferry_buf::SharedBuf> {
    (0..count)
        .map(|i| {
            let bytes: Vec<u8> = (0..len).map(|j| (j * 31 + i * 7) as u8).collect();
            pool.copy_from(&bytes).unwrap()
        })
        .collect()
}

#[test]
fn large_gathered_values_cross_byte_for_byte_with_one_copy_into_records() {
    let ca = TestCa::new("ferry test CA");
    let server_cert = ca.leaf("server", &["localhost"]);
    let (addr, server) = serve(server_config(&server_cert, ClientAuth::None), |conn| {
        let mut conn = conn.expect("server connection");
        // Echo every frame back, its payload referenced.
        for _ in 0..3 {
            let frame = conn.recv().expect("server recv");
            let meta = frame.meta();
            conn.send_payload(
                meta,
                ferry_net::Payload::Gather {
                    head: &[],
                    parts: std::slice::from_ref(frame.payload()),
                },
            )
            .unwrap();
        }
        conn.flush().unwrap();
        conn.stats()
    });
    let pool = pool();
    let port = addr.rsplit_once(':').unwrap().1;
    let mut client = Connection::connect_tls(
        &format!("localhost:{port}"),
        &pool,
        &Config::with_mode(Mode::ZeroCopy),
        &client_config(&ca, None),
    )
    .expect("connect");
    assert!(client.is_tls());
    assert_eq!(
        client.mode(),
        Mode::Gather,
        "zerocopy falls back to gather under TLS"
    );
    let identity = client.peer_identity().expect("the server's identity");
    assert_eq!(identity.subject, "CN=server");
    assert_eq!(identity.sans, ["DNS:localhost"]);

    let ctx = Context::new(pool.clone());
    let vals = values(&pool, 3, 300 << 10);
    let keys: Vec<String> = (0..vals.len()).map(|i| format!("key-{i}")).collect();
    let mut sent = Vec::new();
    for (i, v) in vals.iter().enumerate() {
        let mut rec = Record::new(&ctx);
        rec.set_key(keys[i].as_bytes());
        rec.append_field(&v[..]);
        rec.append_field(&vals[(i + 1) % vals.len()][..1000]);
        client.send(Meta::new(1, i as u64), &rec).unwrap();
        sent.push(ferry_wire::Outgoing::to_vec(&rec).unwrap());
    }
    client.flush().unwrap();
    for (i, expect) in sent.iter().enumerate() {
        let frame = client.recv().expect("client recv");
        assert_eq!(frame.meta().request_id, i as u64);
        assert!(frame.payload()[..] == expect[..], "frame {i} differs");
        let view = Record::decode_shared(frame.payload()).unwrap();
        assert_eq!(view.fields().get(0), Some(&vals[i][..]));
    }
    let server = server.join().unwrap();
    let stats = client.stats();
    // Every byte on the wire was copied once, into TLS records, and nothing else was: the
    // values were gathered (not staged), and the records went to the kernel as they were.
    assert_eq!(stats.send.tls_copied, stats.send.queue.wire_bytes);
    assert_eq!(stats.send.queue.zero_copy_values_copied, 0);
    assert_eq!(
        stats.send.queue.zero_copy_values_referenced,
        3 * (300 << 10) + 3 * 1000
    );
    // Receiving copies twice (rustls' plaintext buffer, then the frame reader's targets).
    assert_eq!(stats.recv_tls_copied, 2 * stats.recv.bytes);
    assert_eq!(server.recv_tls_copied, 2 * stats.send.queue.wire_bytes);
    assert_eq!(server.send.tls_copied, server.send.queue.wire_bytes);
    assert_eq!(
        server.send.queue.staged_bytes,
        3 * 16,
        "only the echo's frame headers were staged"
    );
}

#[test]
fn plain_connections_count_no_tls_copies() {
    let (client_pool, server_pool) = (pool(), pool());
    let (mut client, mut server) =
        common::pair(&client_pool, &Config::default(), &server_pool, &Config::default());
    client
        .send_payload(Meta::new(1, 1), ferry_net::Payload::Bytes(b"plain"))
        .unwrap();
    client.flush().unwrap();
    assert_eq!(&server.recv().unwrap().payload()[..], b"plain");
    assert!(client.peer_identity().is_none());
    assert_eq!(client.stats().send.tls_copied, 0);
    assert_eq!(server.stats().recv_tls_copied, 0);
}

#[test]
fn mtls_gives_the_server_the_clients_subject_and_sans() {
    let ca = TestCa::new("ferry test CA");
    let server_cert = ca.leaf("server", &["localhost"]);
    let client_cert = ca.leaf("client-a", &["client-a.example", "10.0.0.7"]);
    let auth = ClientAuth::Required(ca.pem().into_bytes());
    let (addr, server) = serve(server_config(&server_cert, auth), |conn| {
        let mut conn = conn.expect("server connection");
        let frame = conn.recv().expect("server recv");
        (frame.payload().to_vec(), conn.peer_identity())
    });
    let pool = pool();
    let port = addr.rsplit_once(':').unwrap().1;
    let mut client = Connection::connect_tls(
        &format!("localhost:{port}"),
        &pool,
        &Config::default(),
        &client_config(&ca, Some(&client_cert)),
    )
    .expect("connect");
    client
        .send_payload(Meta::new(1, 1), ferry_net::Payload::Bytes(b"who am I"))
        .unwrap();
    client.flush().unwrap();
    let (payload, identity) = server.join().unwrap();
    assert_eq!(payload, b"who am I");
    let identity = identity.expect("the client's identity");
    assert_eq!(identity.subject, "CN=client-a");
    assert_eq!(identity.sans, ["DNS:client-a.example", "IP:10.0.0.7"]);
}

/// Connects with `client` to a server with `tls`, returning both sides' errors (the client's
/// from connecting or from its first receive, where a TLS 1.3 server's rejection arrives).
fn both_errors(tls: TlsServer, client: &TlsClient, host: &str) -> (Option<TlsError>, Option<TlsError>) {
    let (addr, server) = serve(tls, |conn| server_recv(conn).err());
    let port = addr.rsplit_once(':').unwrap().1;
    let pool = pool();
    let client_err =
        match Connection::connect_tls(&format!("{host}:{port}"), &pool, &Config::default(), client) {
            Err(e) => Some(e),
            Ok(mut conn) => {
                let _ = conn.send_payload(Meta::new(1, 1), ferry_net::Payload::Bytes(b"x"));
                let _ = conn.flush();
                conn.recv().err()
            }
        };
    let server_err = server.join().unwrap();
    let name = |e: Option<TransportError>| e.and_then(|e| TlsError::of(&e).cloned());
    (name(client_err), name(server_err))
}

#[test]
fn an_unknown_ca_is_named_on_both_sides() {
    let (ca, other) = (TestCa::new("server's CA"), TestCa::new("another CA"));
    let tls = server_config(&ca.leaf("server", &["localhost"]), ClientAuth::None);
    let (client, server) = both_errors(tls, &client_config(&other, None), "localhost");
    assert_eq!(client, Some(TlsError::UnknownCa));
    assert_eq!(server, Some(TlsError::UnknownCa), "named by the client's alert");
}

#[test]
fn an_expired_certificate_is_named() {
    let ca = TestCa::new("ferry test CA");
    let tls = server_config(&ca.expired_leaf("server", &["localhost"]), ClientAuth::None);
    let (client, server) = both_errors(tls, &client_config(&ca, None), "localhost");
    assert_eq!(client, Some(TlsError::Expired));
    assert_eq!(server, Some(TlsError::Expired));
}

#[test]
fn a_name_mismatch_is_named() {
    let ca = TestCa::new("ferry test CA");
    let tls = server_config(&ca.leaf("server", &["elsewhere.example"]), ClientAuth::None);
    let (client, _) = both_errors(tls, &client_config(&ca, None), "localhost");
    assert_eq!(client, Some(TlsError::NameMismatch));
}

#[test]
fn a_missing_client_certificate_is_named_when_required() {
    let ca = TestCa::new("ferry test CA");
    let auth = ClientAuth::Required(ca.pem().into_bytes());
    let tls = server_config(&ca.leaf("server", &["localhost"]), auth);
    let (client, server) = both_errors(tls, &client_config(&ca, None), "localhost");
    assert_eq!(server, Some(TlsError::NoClientCert));
    assert_eq!(
        client,
        Some(TlsError::NoClientCert),
        "named by the server's alert"
    );
}

#[test]
fn a_peer_that_does_not_speak_tls_is_named() {
    let ca = TestCa::new("ferry test CA");
    let tls = server_config(&ca.leaf("server", &["localhost"]), ClientAuth::None);
    let (addr, server) = serve(tls, |conn| server_recv(conn).err());
    // A plain Ferry frame where a ClientHello belongs.
    let mut plain = TcpStream::connect(&addr).unwrap();
    let header = ferry_net::FrameHeader {
        meta: Meta::new(1, 1),
        len: 4,
    };
    plain.write_all(&header.to_bytes()).unwrap();
    plain.write_all(b"ping").unwrap();
    let e = server.join().unwrap().expect("the server fails the handshake");
    assert_eq!(TlsError::of(&e), Some(&TlsError::NotTls), "{e}");

    // And a TLS client that meets a plain server: it reads the ClientHello record whole and
    // answers with a Ferry frame, then waits for the client to close.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let plain_server = thread::spawn(move || {
        use std::io::Read;
        let (mut s, _) = listener.accept().unwrap();
        let mut head = [0u8; 5];
        s.read_exact(&mut head).unwrap();
        let mut hello = vec![0u8; u16::from_be_bytes([head[3], head[4]]) as usize];
        s.read_exact(&mut hello).unwrap();
        s.write_all(&header.to_bytes()).unwrap();
        s.write_all(b"pong").unwrap();
        let _ = s.read_to_end(&mut Vec::new());
    });
    let pool = pool();
    let e = Connection::connect_tls(
        &format!("localhost:{port}"),
        &pool,
        &Config::default(),
        &client_config(&ca, None),
    )
    .expect_err("no handshake");
    plain_server.join().unwrap();
    assert_eq!(TlsError::of(&e), Some(&TlsError::NotTls), "{e}");
}

#[test]
fn the_handshake_never_waits_and_ends_at_its_deadline() {
    let ca = TestCa::new("ferry test CA");
    let mut tls = server_config(&ca.leaf("server", &["localhost"]), ClientAuth::None);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let _silent = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (stream, _) = listener.accept().unwrap();
    let pool = pool();
    let mut conn = Connection::tls_server(stream, &pool, &Config::default(), &tls).unwrap();
    conn.set_nonblocking(true);
    // A peer that says nothing: every step returns at once, waiting to read.
    for _ in 0..3 {
        assert_eq!(
            conn.handshake_step().unwrap(),
            Handshake::Waiting {
                read: true,
                write: false
            }
        );
        assert!(conn.try_recv().unwrap().is_none());
    }
    assert!(conn.handshake_deadline().is_some());
    // With no time allowed, the next step names the timeout.
    tls.handshake_timeout = Duration::ZERO;
    let (stream, _) = {
        let _silent2 = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        listener.accept().unwrap()
    };
    let mut conn = Connection::tls_server(stream, &pool, &Config::default(), &tls).unwrap();
    let e = conn.handshake_step().expect_err("past the deadline");
    assert_eq!(
        TlsError::of(&e),
        Some(&TlsError::HandshakeTimeout(Duration::ZERO))
    );
}

#[test]
fn tokio_round_trip_over_tls() {
    let ca = TestCa::new("ferry test CA");
    let server_tls = server_config(&ca.leaf("server", &["localhost"]), ClientAuth::None);
    let client_tls = client_config(&ca, None);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (client_pool, server_pool) = (pool(), pool());
        let server = async {
            let (stream, _) = listener.accept().await.unwrap();
            let conn = Connection::tls_server(
                stream.into_std().unwrap(),
                &server_pool,
                &Config::default(),
                &server_tls,
            )
            .unwrap();
            let mut conn = AsyncConnection::new(conn).unwrap();
            conn.handshake().await.unwrap();
            let frame = conn.recv().await.unwrap();
            conn.send_payload(
                frame.meta(),
                ferry_net::Payload::Gather {
                    head: b"echo:",
                    parts: std::slice::from_ref(frame.payload()),
                },
            )
            .await
            .unwrap();
            conn.flush().await.unwrap();
        };
        let client = async {
            let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
            let conn = Connection::tls_client(
                stream.into_std().unwrap(),
                "localhost",
                &client_pool,
                &Config::default(),
                &client_tls,
            )
            .unwrap();
            let mut conn = AsyncConnection::new(conn).unwrap();
            conn.handshake().await.unwrap();
            let value = values(&client_pool, 1, 1 << 20).remove(0);
            conn.send_payload(
                Meta::new(1, 5),
                ferry_net::Payload::Gather {
                    head: &[],
                    parts: std::slice::from_ref(&value),
                },
            )
            .await
            .unwrap();
            conn.flush().await.unwrap();
            let frame = conn.recv().await.unwrap();
            assert_eq!(&frame.payload()[..5], b"echo:");
            assert!(frame.payload()[5..] == value[..]);
            assert_eq!(conn.stats().send.tls_copied, 16 + (1 << 20));
        };
        tokio::join!(server, client);
    });
}

#[test]
fn pem_files_sni_override_and_copy_mode() {
    let ca = TestCa::new("ferry test CA");
    let cert = ca.leaf("server", &["service.internal"]);
    let dir = ferry_testkit::Scratch::new("tls-pem");
    let path = |name: &str, text: &str| {
        let p = dir.0.join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let (chain, key, roots) = (
        path("server.pem", &cert.cert),
        path("server.key", &cert.key),
        path("ca.pem", &ca.pem()),
    );
    let tls = TlsServer::from_pem_files(&chain, &key, ClientAuth::None).expect("server from files");
    let mut client_tls = TlsClient::from_pem_files(&roots, None).expect("client from files");
    // The address's host (localhost) is not on the certificate: the SNI name is.
    client_tls.server_name = Some("service.internal".into());
    let (addr, server) = serve(tls, |conn| {
        let mut conn = conn.expect("server connection");
        let frame = conn.recv().expect("server recv");
        (frame.payload().to_vec(), conn.stats())
    });
    let port = addr.rsplit_once(':').unwrap().1;
    let pool = pool();
    let mut client = Connection::connect_tls(
        &format!("localhost:{port}"),
        &pool,
        &Config::with_mode(Mode::Copy),
        &client_tls,
    )
    .expect("the SNI name matches");
    assert_eq!(client.mode(), Mode::Copy, "copy mode stays copy under TLS");
    let ctx = Context::new(pool.clone());
    let value = values(&pool, 1, 64 << 10).remove(0);
    let mut rec = Record::new(&ctx);
    rec.append_field(&value[..]);
    client.send(Meta::new(1, 1), &rec).unwrap();
    client.flush().unwrap();
    let (payload, _) = server.join().unwrap();
    assert!(payload[..] == ferry_wire::Outgoing::to_vec(&rec).unwrap()[..]);
    let stats = client.stats().send;
    // Copy mode stages the value (one copy), then TLS copies every byte into records (another).
    assert_eq!(stats.queue.zero_copy_values_copied, 64 << 10);
    assert_eq!(stats.queue.staged_bytes, stats.queue.wire_bytes);
    assert_eq!(stats.tls_copied, stats.queue.wire_bytes);

    let missing = TlsServer::from_pem_files(&dir.0.join("absent.pem"), &key, ClientAuth::None)
        .expect_err("no such file");
    assert!(missing.to_string().contains("absent.pem"), "{missing}");
    let e = TlsClient::from_pem(b"not PEM at all", None).expect_err("no certificate");
    assert!(e.to_string().contains("no CERTIFICATE"), "{e}");
}
