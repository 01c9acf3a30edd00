//! TLS for gRPC clients: ferry-net's rustls configuration ([`TlsServer`]: ring, PEM loaded and
//! checked with named errors, mTLS roots) under tokio-rustls, whose streams tonic serves.
//!
//! Why not tonic's own `tls-ring`: it parses the PEM itself (a second loader beside
//! ferry-net's, with its own errors) and reports a failed handshake only to `tracing`; here the
//! workspace has one TLS configuration, and a failed handshake is logged with its cause.
//!
//! Each accepted connection's handshake is a local task of its own on the engine's thread,
//! bounded by [`TlsServer::handshake_timeout`]: a peer that stalls holds its task only, never
//! the accept loop or another client. Finished handshakes reach tonic through a channel.

use std::path::Path;
use std::sync::Arc;

use ferry::net::tls::{ClientAuth, TlsError, TlsServer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::server::TlsStream;

use std::sync::atomic::Ordering::Relaxed;

use super::EngineError;
use super::limits::{Counters, GatewayLimits, Limited};

/// The HTTP/2 ALPN id: grpc-go refuses a TLS server that does not agree on it.
const ALPN_H2: &[u8] = b"h2";

/// Loads the server's certificate chain and key (PEM files), and with `client_ca` the roots
/// that client certificates must lead to (then required: mTLS). A file that cannot be read or
/// does not hold what it should is an error naming it.
pub fn server_from_files(
    cert: &Path,
    key: &Path,
    client_ca: Option<&Path>,
) -> Result<TlsServer, EngineError> {
    let mut files = format!("certificate {}, key {}", cert.display(), key.display());
    if let Some(ca) = client_ca {
        files += &format!(", client CA {}", ca.display());
    }
    let auth = match client_ca {
        Some(ca) => ClientAuth::Required(std::fs::read(ca).map_err(|e| EngineError::Tls {
            files: format!("client CA {}", ca.display()),
            why: e.to_string(),
        })?),
        None => ClientAuth::None,
    };
    TlsServer::from_pem_files(cert, key, auth).map_err(|e| EngineError::Tls {
        files,
        why: e.to_string(),
    })
}

/// The TLS connections accepted on `listener`, handshakes done, as tonic's incoming stream.
pub(super) fn incoming(
    listener: TcpListener,
    tls: &TlsServer,
    counters: Arc<Counters>,
    limits: GatewayLimits,
) -> tokio_stream::wrappers::ReceiverStream<std::io::Result<TlsStream<Limited<TcpStream>>>> {
    let mut config = (*tls.config).clone();
    config.alpn_protocols = vec![ALPN_H2.to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let timeout = tls.handshake_timeout;
    let (done, rx) = mpsc::channel(64);
    tokio::task::spawn_local(async move {
        loop {
            let tcp = tokio::select! {
                accepted = listener.accept() => accepted,
                // tonic stopped taking connections (the engine is shutting down).
                () = done.closed() => return,
            };
            let tcp = match tcp.and_then(|(s, _)| s.set_nodelay(true).map(|()| s)) {
                Ok(tcp) => tcp,
                // Out of descriptors, or a peer gone before it was accepted: the next accept
                // may succeed.
                Err(e) => {
                    let _ = done.send(Err(e)).await;
                    continue;
                }
            };
            // Over the limit: closed before any handshake.
            let Some(tcp) = counters.admit(tcp, &limits) else {
                continue;
            };
            let (acceptor, done, counters) = (acceptor.clone(), done.clone(), Arc::clone(&counters));
            tokio::task::spawn_local(async move {
                // Held here, not by the timeout: a failed handshake's socket closes after it
                // is counted, so a peer that sees the close sees the count.
                let accept = acceptor.accept(tcp);
                tokio::pin!(accept);
                match tokio::time::timeout(timeout, &mut accept).await {
                    Ok(Ok(stream)) => {
                        let _ = done.send(Ok(stream)).await;
                    }
                    Ok(Err(e)) => {
                        counters.handshake_failures.fetch_add(1, Relaxed);
                        eprintln!(
                            "ferry gateway: a TLS connection failed its handshake: {}",
                            cause(&e)
                        )
                    }
                    Err(_) => {
                        counters.handshake_timeouts.fetch_add(1, Relaxed);
                        eprintln!(
                            "ferry gateway: a TLS connection did not finish its handshake within {timeout:?}"
                        )
                    }
                }
            });
        }
    });
    tokio_stream::wrappers::ReceiverStream::new(rx)
}

/// Why a handshake failed, named as ferry-net names it when rustls said why (tokio-rustls
/// hands rustls' error inside an `io::Error`), else the I/O error itself.
fn cause(e: &std::io::Error) -> String {
    match e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<tokio_rustls::rustls::Error>())
    {
        Some(tls) => TlsError::from_rustls(tls, true).to_string(),
        None => e.to_string(),
    }
}
