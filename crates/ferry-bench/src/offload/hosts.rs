//! Figure 8's servers, one setup at a time: the tonic host (prost decodes every request), the
//! null host (tonic with no decoding: each request's body dropped, the handler run on the
//! object it would have decoded to) and the offload engine in front of a Ferry host; and the
//! requests they serve, each with the digest its answer must carry.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use ferry_offload::demo_host::{DIGEST_SEED, DemoHost, digest};
use ferry_offload::engine::{Engine, EngineConfig, RawCodec};
use prost::Message as _;

use super::decode::{char_text, digest_ints, int_values};
use super::serve::{Figure8Options, PaperMessage, Setup};
use crate::BoxError;
use crate::generated::demo_prost as pb;
use crate::harness::pin_current_thread;

/// The requests of one message: several distinct ones (seeded), encoded once, each with the
/// digest its answer must carry.
#[derive(Clone)]
pub(super) struct Requests {
    pub(super) bodies: Vec<Bytes>,
    pub(super) digests: Vec<u64>,
    /// The decoded requests: the null host's pre-built objects.
    prebuilt: Vec<Prebuilt>,
    pub(super) path: &'static str,
}

#[derive(Clone)]
enum Prebuilt {
    Small(pb::Small),
    Ints(pb::Ints),
    Chars(pb::Chars),
}

impl Prebuilt {
    /// The handler's work: the digest (the same computation as `DemoHost`'s).
    fn answer(&self) -> pb::Ack {
        match self {
            Prebuilt::Small(r) => pb::Ack {
                digest: ferry_offload::demo_host::small_digest(
                    r.id,
                    r.timestamp,
                    r.flag,
                    r.score,
                    r.tag.as_bytes(),
                ),
                count: 1,
            },
            Prebuilt::Ints(r) => pb::Ack {
                digest: digest_ints(r.values.iter().copied()),
                count: r.values.len() as u32,
            },
            Prebuilt::Chars(r) => pb::Ack {
                digest: digest(DIGEST_SEED, r.text.as_bytes()),
                count: r.text.len() as u32,
            },
        }
    }
}

/// Distinct requests per message.
const VARIANTS: usize = 64;

impl Requests {
    pub(super) fn new(message: PaperMessage, seed: u64) -> Requests {
        let mut prebuilt = Vec::with_capacity(VARIANTS);
        for v in 0..VARIANTS as u64 {
            let seed = seed.wrapping_mul(1_000_003).wrapping_add(v);
            prebuilt.push(match message {
                PaperMessage::Small => Prebuilt::Small(pb::Small {
                    id: 1000 + v as u32,
                    timestamp: 1_700_000 + v as i64,
                    flag: v % 2 == 0,
                    score: 0.5,
                    tag: "ab".into(),
                }),
                PaperMessage::Ints => Prebuilt::Ints(pb::Ints {
                    values: int_values(512, seed),
                }),
                PaperMessage::Chars => Prebuilt::Chars(pb::Chars {
                    text: char_text(8000, seed),
                }),
            });
        }
        let encode = |p: &Prebuilt| match p {
            Prebuilt::Small(m) => m.encode_to_vec(),
            Prebuilt::Ints(m) => m.encode_to_vec(),
            Prebuilt::Chars(m) => m.encode_to_vec(),
        };
        let bodies = prebuilt.iter().map(|p| Bytes::from(encode(p))).collect();
        let digests = prebuilt.iter().map(|p| p.answer().digest).collect();
        Requests {
            bodies,
            digests,
            prebuilt,
            path: message.path(),
        }
    }
}

/// Thread names (at most 15 bytes: what `comm` keeps), by which CPU time is read.
pub(super) const TONIC_HOST: &str = "offload-tonic";
pub(super) const FERRY_HOST: &str = "ferry-rpc-";
pub(super) const ENGINE: &str = "ferry-gateway";

/// The servers of one setup, running.
pub(super) enum Servers {
    Tonic(std::thread::JoinHandle<()>, tokio::sync::oneshot::Sender<()>),
    Engine(Box<(Engine, ferry::rpc::Server, tempfile::TempDir)>),
}

impl Servers {
    pub(super) fn start(
        setup: Setup,
        opts: &Figure8Options,
        requests: &Requests,
    ) -> Result<(Servers, SocketAddr), BoxError> {
        match setup {
            Setup::Tonic | Setup::Null => {
                let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
                let addr = listener.local_addr()?;
                listener.set_nonblocking(true)?;
                let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
                let cpu = opts.host_cpu;
                let prebuilt = requests.prebuilt.clone();
                let thread = std::thread::Builder::new()
                    .name(TONIC_HOST.into())
                    .spawn(move || {
                        // The host still serves unpinned; its CPU figures then say so by their spread.
                        if let Err(e) = pin_current_thread(cpu) {
                            eprintln!("offload: the {} host runs unpinned: {e}", setup.name());
                        }
                        let rt = tokio::runtime::Builder::new_current_thread()
                            .enable_all()
                            .build()
                            .expect("tokio runtime");
                        rt.block_on(async move {
                            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                            let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
                            let shutdown = async {
                                let _ = stopped.await;
                            };
                            let served = if setup == Setup::Tonic {
                                tonic::transport::Server::builder()
                                    .tcp_nodelay(true)
                                    .add_service(pb::demo_server::DemoServer::new(TonicHost))
                                    .serve_with_incoming_shutdown(nodelay(incoming), shutdown)
                                    .await
                            } else {
                                let router = axum::Router::new()
                                    .fallback_service(NullHost(std::sync::Arc::new(prebuilt)));
                                tonic::transport::Server::builder()
                                    .serve_with_incoming_shutdown(
                                        tonic::service::Routes::from(router),
                                        nodelay(incoming),
                                        shutdown,
                                    )
                                    .await
                            };
                            served.expect("the tonic host serves");
                        });
                    })?;
                Ok((Servers::Tonic(thread, stop), addr))
            }
            Setup::Engine => {
                let dir = tempfile::tempdir()?;
                let host_addr = format!("shm://{}", dir.path().join("host.sock").display());
                let services =
                    ferry_offload::demo_host::services(ferry_offload::demo::DemoServer::new(DemoHost))?;
                let config = ferry::rpc::LoopConfig {
                    spin: opts.host_spin,
                    ..ferry::rpc::LoopConfig::default()
                };
                let host = ferry::rpc::Server::builder(services)
                    .listen(&host_addr)
                    .loops(1)
                    .pin(vec![opts.host_cpu])
                    .config(config)
                    .start()?;
                let mut engine = EngineConfig::new(host_addr);
                engine.listen = SocketAddr::from(([127, 0, 0, 1], 0));
                engine.core = Some(opts.client_cpu);
                let engine = Engine::start(engine)?;
                engine.wait_ready(Duration::from_secs(20))?;
                let addr = engine.local_addr();
                Ok((Servers::Engine(Box::new((engine, host, dir))), addr))
            }
        }
    }

    pub(super) fn stop(self) {
        match self {
            Servers::Tonic(thread, stop) => {
                let _ = stop.send(());
                let _ = thread.join();
            }
            Servers::Engine(parts) => {
                let (engine, host, _dir) = *parts;
                let _ = engine.shutdown();
                host.shutdown(Duration::from_millis(100));
            }
        }
    }
}

/// TCP_NODELAY on every accepted connection (tonic sets it only on listeners it binds).
fn nodelay(
    incoming: tokio_stream::wrappers::TcpListenerStream,
) -> impl tokio_stream::Stream<Item = std::io::Result<tokio::net::TcpStream>> {
    use tokio_stream::StreamExt as _;
    incoming.map(|s| s.and_then(|s| s.set_nodelay(true).map(|()| s)))
}

/// The tonic host: prost decodes every request before the handler runs.
#[derive(Debug, Clone, Copy)]
struct TonicHost;

#[tonic::async_trait]
impl pb::demo_server::Demo for TonicHost {
    async fn echo(&self, _: tonic::Request<pb::Kinds>) -> Result<tonic::Response<pb::Kinds>, tonic::Status> {
        Err(tonic::Status::unimplemented("not in the benchmark"))
    }

    async fn fail(
        &self,
        _: tonic::Request<pb::FailRequest>,
    ) -> Result<tonic::Response<pb::Empty>, tonic::Status> {
        Err(tonic::Status::unimplemented("not in the benchmark"))
    }

    async fn sleep(
        &self,
        _: tonic::Request<pb::SleepRequest>,
    ) -> Result<tonic::Response<pb::SleepReply>, tonic::Status> {
        Err(tonic::Status::unimplemented("not in the benchmark"))
    }

    async fn send_small(
        &self,
        request: tonic::Request<pb::Small>,
    ) -> Result<tonic::Response<pb::Ack>, tonic::Status> {
        Ok(tonic::Response::new(
            Prebuilt::Small(request.into_inner()).answer(),
        ))
    }

    async fn send_ints(
        &self,
        request: tonic::Request<pb::Ints>,
    ) -> Result<tonic::Response<pb::Ack>, tonic::Status> {
        Ok(tonic::Response::new(
            Prebuilt::Ints(request.into_inner()).answer(),
        ))
    }

    async fn send_chars(
        &self,
        request: tonic::Request<pb::Chars>,
    ) -> Result<tonic::Response<pb::Ack>, tonic::Status> {
        Ok(tonic::Response::new(
            Prebuilt::Chars(request.into_inner()).answer(),
        ))
    }
}

/// The null host: every request's body is received and dropped undecoded, and the handler runs
/// on the pre-built object the body would have decoded to (found by the body's position in the
/// request list: the client sends body `i % VARIANTS` and says which in the `x-variant` header).
#[derive(Clone)]
struct NullHost(std::sync::Arc<Vec<Prebuilt>>);

impl tower_service::Service<http::Request<axum::body::Body>> for NullHost {
    type Response = http::Response<tonic::body::Body>;
    type Error = std::convert::Infallible;
    type Future =
        std::pin::Pin<Box<dyn std::future::Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<axum::body::Body>) -> Self::Future {
        let prebuilt = self.0.clone();
        Box::pin(async move {
            let variant = req
                .headers()
                .get("x-variant")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<usize>().ok())
                .unwrap_or(0);
            let mut grpc = tonic::server::Grpc::new(RawCodec);
            Ok(grpc
                .unary(NullCall(prebuilt, variant), req.map(tonic::body::Body::new))
                .await)
        })
    }
}

struct NullCall(std::sync::Arc<Vec<Prebuilt>>, usize);

impl tonic::server::UnaryService<Bytes> for NullCall {
    type Response = Bytes;
    type Future = std::future::Ready<Result<tonic::Response<Bytes>, tonic::Status>>;

    fn call(&mut self, _: tonic::Request<Bytes>) -> Self::Future {
        let answer = self.0[self.1 % self.0.len()].answer().encode_to_vec();
        std::future::ready(Ok(tonic::Response::new(Bytes::from(answer))))
    }
}
