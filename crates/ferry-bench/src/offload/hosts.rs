//! The served figures' servers, one setup at a time. Figure 8's: the tonic host (prost decodes
//! every request), the null host (tonic with no decoding: each request's body dropped, the
//! handler run on the object it would have decoded to) and the offload engine in front of a
//! Ferry host; and the requests they serve, each with the digest its answer must carry. The
//! streams figure's: the engine in front of gRPC's interop host
//! ([`ferry_offload::interop_host`], the tokio driver), and a tonic `TestService` host doing the
//! same work ([`TonicInterop`]).

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
use crate::generated::interop_prost as it;
use crate::harness::grpc::incoming;
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
/// The interop host's thread (the tokio driver serves on the thread that runs it): named so
/// that [`FERRY_HOST`] finds it.
const INTEROP_HOST: &str = "ferry-rpc-tokio";

/// A server thread, and what stops it.
type Thread = (std::thread::JoinHandle<()>, tokio::sync::oneshot::Sender<()>);

/// The servers of one setup, running.
pub(super) enum Servers {
    Tonic(Thread),
    Engine(Box<(Engine, Host, tempfile::TempDir)>),
}

/// The Ferry host behind an engine: an event loop, or the tokio driver on its thread.
pub(super) enum Host {
    Loop(ferry::rpc::Server),
    Tokio(Thread),
}

impl Servers {
    /// Figure 8's servers of `setup`.
    pub(super) fn start(
        setup: Setup,
        opts: &Figure8Options,
        requests: &Requests,
    ) -> Result<(Servers, SocketAddr), BoxError> {
        match setup {
            Setup::Tonic => Servers::tonic(opts.host_cpu, || {
                tonic::service::Routes::new(pb::demo_server::DemoServer::new(TonicHost))
            }),
            Setup::Null => {
                let prebuilt = std::sync::Arc::new(requests.prebuilt.clone());
                Servers::tonic(opts.host_cpu, move || {
                    axum::Router::new().fallback_service(NullHost(prebuilt)).into()
                })
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
                Servers::engine(Host::Loop(host), dir, host_addr, opts.client_cpu)
            }
        }
    }

    /// A tonic server of `routes` on its thread ([`TONIC_HOST`]), pinned to `cpu`.
    pub(super) fn tonic(
        cpu: usize,
        routes: impl FnOnce() -> tonic::service::Routes + Send + 'static,
    ) -> Result<(Servers, SocketAddr), BoxError> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let thread = serving_thread(TONIC_HOST, cpu, move |stopped| async move {
            tonic::transport::Server::builder()
                .serve_with_incoming_shutdown(routes(), incoming(listener)?, stopped)
                .await?;
            Ok(())
        })?;
        Ok((Servers::Tonic(thread), addr))
    }

    /// The engine, on `client_cpu`, in front of gRPC's interop host
    /// (`ferry_offload::interop_host`) served by the tokio driver on `host_cpu`.
    pub(super) fn interop(host_cpu: usize, client_cpu: usize) -> Result<(Servers, SocketAddr), BoxError> {
        use ferry::rpc::tokio::{AsyncServer, AsyncServices};
        use ferry_offload::grpc_testing::grpc::testing::AsyncTestServiceServer;
        use ferry_offload::interop_host::{InteropHost, describe};
        let dir = tempfile::tempdir()?;
        let host_addr = format!("shm://{}", dir.path().join("host.sock").display());
        let listen = host_addr.clone();
        let host = serving_thread(INTEROP_HOST, host_cpu, move |stopped| async move {
            let services = AsyncServices::new()
                .service(AsyncTestServiceServer::new(InteropHost))?
                .service(describe()?)?;
            let server = AsyncServer::bind(services, &[listen.as_str()], ferry::rpc::LoopConfig::default())?;
            server.run(stopped, Duration::from_millis(100)).await?;
            Ok(())
        })?;
        // The engine connects once the host listens (it retries until then).
        Servers::engine(Host::Tokio(host), dir, host_addr, client_cpu)
    }

    fn engine(
        host: Host,
        dir: tempfile::TempDir,
        host_addr: String,
        core: usize,
    ) -> Result<(Servers, SocketAddr), BoxError> {
        let mut engine = EngineConfig::new(host_addr);
        engine.listen = SocketAddr::from(([127, 0, 0, 1], 0));
        engine.core = Some(core);
        let engine = Engine::start(engine)?;
        engine.wait_ready(Duration::from_secs(20))?;
        let addr = engine.local_addr();
        Ok((Servers::Engine(Box::new((engine, host, dir))), addr))
    }

    pub(super) fn stop(self) {
        match self {
            Servers::Tonic(thread) => stop_thread(thread),
            Servers::Engine(parts) => {
                let (engine, host, _dir) = *parts;
                let _ = engine.shutdown();
                host.stop();
            }
        }
    }
}

impl Host {
    fn stop(self) {
        match self {
            Host::Loop(host) => drop(host.shutdown(Duration::from_millis(100))),
            Host::Tokio(thread) => stop_thread(thread),
        }
    }
}

fn stop_thread((thread, stop): Thread) {
    let _ = stop.send(());
    let _ = thread.join();
}

/// A thread `name`, pinned to `cpu`, running `serve(stopped)` on a current-thread runtime's
/// `LocalSet` (the tokio driver's sessions are `!Send`) until it returns; `stopped` resolves
/// when the returned sender is used (or dropped). An error is printed: the client then fails
/// to connect, and says so.
fn serving_thread<F, Fut>(name: &str, cpu: usize, serve: F) -> std::io::Result<Thread>
where
    F: FnOnce(std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Result<(), BoxError>>,
{
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let who = name.to_owned();
    let thread = std::thread::Builder::new().name(who.clone()).spawn(move || {
        // The host still serves unpinned; its CPU figures then say so by their spread.
        if let Err(e) = pin_current_thread(cpu) {
            eprintln!("offload: {who} runs unpinned: {e}");
        }
        let served = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(BoxError::from)
            .and_then(|rt| {
                let stopped = Box::pin(async {
                    let _ = stopped.await;
                });
                tokio::task::LocalSet::new().block_on(&rt, serve(stopped))
            });
        if let Err(e) = served {
            eprintln!("offload: {who} stopped serving: {e}");
        }
    })?;
    Ok((thread, stop))
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

/// The tonic `TestService` host of the streams figure: the two streaming methods it serves do
/// the interop host's work (a payload of zeros of each size a request asks for).
#[derive(Debug, Clone, Copy)]
pub(super) struct TonicInterop;

type Responses = tonic::codegen::BoxStream<it::StreamingOutputCallResponse>;

/// A response with a payload of `size` zero bytes, as the interop host builds it.
fn interop_response(size: i32) -> Result<it::StreamingOutputCallResponse, tonic::Status> {
    let size = usize::try_from(size).map_err(|_| tonic::Status::invalid_argument("a negative size"))?;
    Ok(it::StreamingOutputCallResponse {
        payload: Some(it::Payload {
            r#type: it::PayloadType::Compressable.into(),
            body: Bytes::from(vec![0u8; size]),
        }),
        ..Default::default()
    })
}

/// The sizes a request asks for.
fn sizes(request: &it::StreamingOutputCallRequest) -> Vec<i32> {
    request.response_parameters.iter().map(|p| p.size).collect()
}

#[tonic::async_trait]
impl it::test_service_server::TestService for TonicInterop {
    async fn streaming_output_call(
        &self,
        request: tonic::Request<it::StreamingOutputCallRequest>,
    ) -> Result<tonic::Response<Responses>, tonic::Status> {
        let sizes = sizes(request.get_ref());
        Ok(tonic::Response::new(Box::pin(tokio_stream::iter(
            sizes.into_iter().map(interop_response),
        ))))
    }

    async fn full_duplex_call(
        &self,
        request: tonic::Request<tonic::Streaming<it::StreamingOutputCallRequest>>,
    ) -> Result<tonic::Response<Responses>, tonic::Status> {
        use tokio_stream::StreamExt as _;
        let mut requests = request.into_inner();
        // Each request's answers go out as it is read: a task feeds them to the response
        // stream through a channel, as tonic's examples do.
        let (tx, rx) = tokio::sync::mpsc::channel(128);
        tokio::spawn(async move {
            while let Some(request) = requests.next().await {
                let answers = match request {
                    Ok(r) => sizes(&r).into_iter().map(interop_response).collect(),
                    Err(e) => vec![Err(e)],
                };
                for answer in answers {
                    if tx.send(answer).await.is_err() {
                        return;
                    }
                }
            }
        });
        Ok(tonic::Response::new(Box::pin(
            tokio_stream::wrappers::ReceiverStream::new(rx),
        )))
    }
}
