//! The peers' side of the server: one hand-written [`Service`] over a [`Store`] with one raw
//! method per library (`/ferry_bench.kv.Peers/Prost`, `.../Flatbuf`, `.../Capnp`), served by
//! the same loop as Ferry's own `Kv` service.
//!
//! Every handler runs in the foreground, on the loop's thread, with that thread's set of
//! codecs (reused across calls, like a server's buffers): it hands the request to
//! [`KvCodec::serve`] with the session's pool (the store's, when the server is set up with
//! [`Store::serving_config`]; else the store's own pool) and answers with the serialized
//! response by reference, `Payload::Gather` of that one pool buffer: over TCP it is a
//! `sendmsg` entry (the kernel's copy is the only one); over shared memory the transport copies
//! a raw payload into its block (the receiver reads raw payloads contiguously).
//!
//! Errors: the store's own status (`NOT_FOUND` naming the key, `FAILED_PRECONDITION`,
//! `INVALID_ARGUMENT` past a limit, `RESOURCE_EXHAUSTED`), `INVALID_ARGUMENT` naming the
//! library for a request that does not decode, `UNIMPLEMENTED` for another method id.

use std::cell::RefCell;
use std::sync::Arc;

use ferry_kv::Store;
use ferry_rpc::{Call, Code, MethodInfo, Mode, Reply, Request, Service, Shape, Status};
use ferry_transport::Payload;

use super::{CODECS, KvCodec};
use crate::systems::Input;

thread_local! {
    /// The codecs of this (a server loop's) thread, in [`CODECS`] order.
    static HERE: RefCell<Vec<Box<dyn KvCodec>>> = RefCell::new(CODECS.iter().map(|e| (e.new)()).collect());
}

/// The store served with the peers' serializations (see the module docs).
#[derive(Debug, Clone)]
pub struct PeerKvService {
    store: Arc<Store>,
}

impl PeerKvService {
    /// Serves `store`.
    pub fn new(store: Arc<Store>) -> PeerKvService {
        PeerKvService { store }
    }
}

impl Service for PeerKvService {
    fn methods(&self) -> Vec<MethodInfo> {
        CODECS
            .iter()
            .map(|e| MethodInfo {
                path: e.path,
                id: e.method(),
                request: None,
                mode: Mode::Foreground,
                shape: Shape::Unary,
            })
            .collect()
    }

    fn call<'a>(&self, call: &Call<'a>, request: Request<'a>, reply: &mut Reply<'_>) -> Result<(), Status> {
        let method = call.method();
        let Some(peer) = CODECS.iter().position(|e| e.method() == method) else {
            return Err(Status::new(Code::Unimplemented, format!("method {method}")));
        };
        let incoming = request.incoming();
        let input = Input {
            bytes: incoming.bytes().unwrap_or_default(),
            shared: incoming.shared(),
        };
        let pool = call.ctx().pool().unwrap_or(self.store.pool());
        let response = HERE.with_borrow_mut(|codecs| codecs[peer].serve(input, &self.store, pool))?;
        reply.send_payload(Payload::Gather {
            head: &[],
            parts: std::slice::from_ref(&response),
        })
    }
}

#[cfg(test)]
mod tests {
    //! The service on a real server, over TCP loopback and shared memory, every peer.

    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use ferry_rpc::{Channel, LoopConfig, Server, Services};
    use ferry_transport::{Received, method_id};

    use super::super::tests::{store, value};
    use super::super::{KvRequest, codec};
    use super::*;

    /// A scratch directory for the shared-memory socket, removed on drop.
    struct Scratch(std::path::PathBuf);

    impl Scratch {
        fn new() -> Scratch {
            static N: AtomicUsize = AtomicUsize::new(0);
            let dir = std::env::temp_dir().join(format!(
                "ferry-bench-kv-peers-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::SeqCst)
            ));
            std::fs::create_dir_all(&dir).expect("scratch dir");
            Scratch(dir)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// One call: the values of the response, or its status.
    fn call(
        ch: &Channel,
        client: &mut dyn KvCodec,
        method: u16,
        req: &KvRequest<'_>,
    ) -> Result<Vec<Vec<u8>>, Status> {
        let request = client.encode_request(req).expect("encode").to_vec();
        let response = ch.call_payload(method, Payload::Bytes(&request))?;
        let frame = response.frame();
        let input = Input {
            bytes: Received::bytes(frame).expect("a payload"),
            shared: frame.shared(),
        };
        let mut got = Vec::new();
        client
            .read_response(input, &mut |v| got.push(v.to_vec()))
            .expect("read");
        Ok(got)
    }

    #[test]
    fn every_peer_over_tcp_and_shared_memory() {
        let store = store(true);
        let scratch = Scratch::new();
        let services = Services::builder()
            .service(PeerKvService::new(store.clone()))
            .expect("add")
            .build()
            .expect("services");
        let config = LoopConfig {
            conn: store.serving_config(Default::default()),
            ..LoopConfig::default()
        };
        let server = Server::builder(services)
            .listen("tcp://127.0.0.1:0")
            .listen(&format!("shm://{}/kv.sock", scratch.0.display()))
            .loops(1)
            .config(config)
            .start()
            .expect("server starts");
        for addr in server.addrs() {
            let addr = addr.to_string();
            let ch = Channel::connect(&addr).expect("connect");
            for entry in CODECS {
                let name = format!("{} over {addr}", entry.name);
                let mut client = (entry.new)();
                let client = client.as_mut();
                let method = codec(entry.name).unwrap().method();
                let got = call(&ch, client, method, &KvRequest::Get(b"one")).unwrap();
                assert_eq!(got, [value("one", 0, 2048)], "{name}");
                let got = call(&ch, client, method, &KvRequest::GetList(b"big")).unwrap();
                let want = [value("big", 0, 100), value("big", 1, 4096), value("big", 2, 7)];
                assert_eq!(got, want, "{name}");
                let keys: [&[u8]; 3] = [b"one", b"two", b"small"];
                let got = call(&ch, client, method, &KvRequest::GetM(&keys)).unwrap();
                let want = [value("one", 0, 2048), value("two", 0, 3), Vec::new()];
                assert_eq!(got, want, "{name}");
                let key = format!("put-{}", entry.name);
                let parts: [&[u8]; 2] = [&[1; 600], b"x"];
                let put = KvRequest::Put {
                    key: key.as_bytes(),
                    values: &parts,
                };
                assert!(call(&ch, client, method, &put).unwrap().is_empty(), "{name}");
                let got = call(&ch, client, method, &KvRequest::GetList(key.as_bytes())).unwrap();
                assert_eq!(got, parts, "{name}");

                let err = call(&ch, client, method, &KvRequest::Get(b"missing")).unwrap_err();
                assert_eq!(err.code, Code::NotFound, "{name}: {err}");
                let err = ch
                    .call_payload(method, Payload::Bytes(&[0xff; 24]))
                    .expect_err("garbage");
                assert_eq!(err.code, Code::InvalidArgument, "{name}: {err}");
                assert!(err.message.contains(entry.name), "{name}: {err}");
                // The session survives the failures.
                let got = call(&ch, client, method, &KvRequest::Get(b"two")).unwrap();
                assert_eq!(got, [value("two", 0, 3)], "{name}");
            }
            let err = ch
                .call_payload(method_id("/ferry_bench.kv.Peers/Nope"), Payload::Bytes(b""))
                .expect_err("unknown method");
            assert_eq!(err.code, Code::Unimplemented, "{err}");
        }
        server.shutdown(Duration::from_secs(1));
    }
}
