//! Sends frames with large gathered values over TLS on loopback and prints the connection's
//! copy counters: run it under `valgrind --tool=dhat --mode=copy` to see which user-space
//! copies happen and where (the measurement behind the `tls` module's docs):
//!
//! ```sh
//! cargo build -p ferry-net --features test-certs --example tls_copies
//! valgrind --tool=dhat --mode=copy target/debug/examples/tls_copies
//! ```

use std::net::TcpListener;
use std::thread;

use ferry_buf::{Pool, PoolConfig};
use ferry_net::tls::test_certs::TestCa;
use ferry_net::{ClientAuth, Config, Connection, Meta, Payload, TlsClient, TlsServer};

/// Frames sent, each a 16-byte header, a 64-byte head and one referenced value.
const FRAMES: u64 = 32;
const VALUE: usize = 256 << 10;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ca = TestCa::new("copies CA");
    let cert = ca.leaf("server", &["localhost"]);
    let server_tls = TlsServer::from_pem(cert.cert.as_bytes(), cert.key.as_bytes(), ClientAuth::None)?;
    let client_tls = TlsClient::from_pem(ca.pem().as_bytes(), None)?;
    let pool = Pool::new(PoolConfig {
        max_bytes: 256 << 20,
        ..PoolConfig::default()
    })?;
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let server_pool = pool.clone();
    let server = thread::spawn(move || -> Result<u64, ferry_net::TransportError> {
        let (stream, _) = listener.accept().expect("accept");
        let mut conn = Connection::tls_server(stream, &server_pool, &Config::default(), &server_tls)?;
        let mut bytes = 0;
        for _ in 0..FRAMES {
            bytes += conn.recv()?.payload().len() as u64;
        }
        Ok(bytes)
    });
    let mut client = Connection::connect_tls(
        &format!("localhost:{port}"),
        &pool,
        &Config::default(),
        &client_tls,
    )?;
    let value = pool.copy_from(&vec![7u8; VALUE])?;
    for i in 0..FRAMES {
        client.send_payload(
            Meta::new(1, i),
            Payload::Gather {
                head: &[1u8; 64],
                parts: std::slice::from_ref(&value),
            },
        )?;
    }
    client.flush()?;
    let received = server.join().expect("server thread")?;
    let stats = client.stats();
    println!(
        "frames {FRAMES}, wire bytes {}, staged {} (headers and heads), tls_copied {}, received {received}",
        stats.send.queue.wire_bytes, stats.send.queue.staged_bytes, stats.send.tls_copied
    );
    Ok(())
}
