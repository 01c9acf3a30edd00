//! What the service tests share: scratch directories for socket paths, requests, and the
//! tokio server on a thread of its own.

#![allow(dead_code)]

use std::thread::JoinHandle;
use std::time::Duration;

use ferry::Context;
use ferry::rpc::tokio::{AsyncServer, AsyncServices};
use ferry::rpc::{Addr, LoopConfig};
use ferry_codegen_tests::generated::ferry::test as t;

/// A fresh directory for shared-memory rendezvous sockets.
pub fn scratch(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("ferry-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `n` bytes in a pattern the checks recognize.
pub fn payload(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8).collect()
}

/// A `SayRequest`; a large payload goes in the context's pool (by reference).
pub fn request<'a>(ctx: &'a Context, payload: &[u8], tag: &'a str) -> t::SayRequest<'a> {
    let mut req = t::SayRequest::new(ctx);
    match ctx.pool() {
        Some(pool) if payload.len() >= 512 => req.set_payload(pool.copy_from(payload).unwrap()),
        _ => req.set_payload(payload.to_vec()),
    }
    req.set_tag(tag);
    req
}

/// The tokio server of the services `services` makes, on a thread of its own (a
/// shared-memory connect waits for the server's side of the handshake, so server and client
/// do not share a thread): its addresses, the sender that stops it, and its thread.
pub fn tokio_server(
    addrs: Vec<String>,
    services: fn() -> AsyncServices,
) -> (Vec<Addr>, tokio::sync::oneshot::Sender<()>, JoinHandle<()>) {
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, async move {
            let addrs: Vec<&str> = addrs.iter().map(String::as_str).collect();
            let server = AsyncServer::bind(services(), &addrs, LoopConfig::default()).expect("bind");
            ready_tx.send(server.addrs().to_vec()).unwrap();
            server
                .run(
                    async {
                        let _ = stop_rx.await;
                    },
                    Duration::from_secs(1),
                )
                .await
                .expect("serve");
        });
    });
    let addrs = ready_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the server binds");
    (addrs, stop_tx, thread)
}
