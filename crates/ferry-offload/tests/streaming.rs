//! The engine serves every method shape: a Ferry host's streams (a hand-written
//! `AsyncService`, with the table of `tests/proto/ferry/offload/streams.proto`) to tonic's
//! streaming clients, and to raw HTTP/2 clients that see exactly what goes on the wire. A
//! client that stops reading stops the host's sends within a bound derived from the windows;
//! cancellation goes both ways; streamed messages are compressed as unary ones are.

mod common;

use std::future::poll_fn;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::Poll;
use std::time::Duration;

use bytes::Bytes;
use common::pb;
use ferry::rpc::tokio::{
    AsyncCall, AsyncRequest, AsyncServer, AsyncService, AsyncServices, LocalBoxFuture, RequestStream,
    ResponseSink,
};
use ferry::rpc::{Code, Encoded, LoopConfig, Metadata, MethodInfo, Mode, Shape, Status};
use ferry::transport::method_id;
use ferry::wire::Message as _;
use ferry_offload::demo::{Ack, Small};
use ferry_offload::engine::Engine;
use ferry_offload::framing::{self, Deframer, Encoding};
use prost::Message as _;
use tokio_stream::StreamExt as _;
use tonic::codec::CompressionEncoding;

const SERVICE: &str = "ferry.offload.streams.Streams";
const DESCRIPTORS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/streams_descriptors.bin"));
/// The same `Small` back.
const UNARY: &str = "/ferry.offload.streams.Streams/Unary";
/// An `Ack` of the count of the messages and the sum of their ids.
const COLLECT: &str = "/ferry.offload.streams.Streams/Collect";
/// `id` messages, numbered from 0, with the request's tag.
const SPREAD: &str = "/ferry.offload.streams.Streams/Spread";
/// Each message back as it comes; the one with id [`FAIL`] fails the stream.
const CHAT: &str = "/ferry.offload.streams.Streams/Chat";
/// The id that makes `Chat` fail with `ABORTED` and a trailer.
const FAIL: u32 = 666;
/// How many answers the engine queues for HTTP/2 (its `engine::streams::QUEUED`).
const ENGINE_QUEUED: usize = 2;

/// What the host did, as the test's thread sees it.
#[derive(Debug, Default)]
struct Seen {
    /// Answer messages whose send completed.
    sent: AtomicUsize,
    /// The latest send waits for the window.
    blocked: AtomicBool,
    /// Stream handlers that did not end with OK: they failed, or the server dropped them (it
    /// aborts the handler of a call that was cancelled).
    cut_short: AtomicUsize,
}

/// Counts a stream handler into [`Seen::cut_short`] unless it ends with OK.
struct Outcome<'a>(&'a Seen, bool);

impl Drop for Outcome<'_> {
    fn drop(&mut self) {
        if !self.1 {
            self.0.cut_short.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// The host service: raw Ferry messages of the demo's types.
struct StreamsHost {
    seen: Arc<Seen>,
}

fn copy<'a>(call: &'a AsyncCall, request: &AsyncRequest<Small<'static>>) -> Result<Small<'a>, Status> {
    let view = request.view()?;
    let mut m = Small::new(call.ctx());
    m.set_id(view.id());
    m.set_tag(
        view.tag()
            .map_err(|e| Status::new(Code::InvalidArgument, e.to_string()))?
            .to_string(),
    );
    Ok(m)
}

impl AsyncService for StreamsHost {
    fn methods(&self) -> Vec<MethodInfo> {
        [
            (UNARY, Shape::Unary),
            (COLLECT, Shape::ClientStreaming),
            (SPREAD, Shape::ServerStreaming),
            (CHAT, Shape::Bidirectional),
        ]
        .into_iter()
        .map(|(path, shape)| MethodInfo {
            path,
            id: method_id(path),
            request: Some(Small::desc()),
            mode: Mode::Foreground,
            shape,
        })
        .collect()
    }

    fn call(&self, call: AsyncCall, request: AsyncRequest<()>) -> LocalBoxFuture<Result<Encoded, Status>> {
        Box::pin(async move { Encoded::message(&copy(&call, &request.typed())?) })
    }

    fn stream(
        &self,
        call: AsyncCall,
        requests: RequestStream<()>,
        responses: ResponseSink,
    ) -> LocalBoxFuture<Result<(), Status>> {
        let seen = self.seen.clone();
        Box::pin(async move {
            let mut outcome = Outcome(&seen, false);
            let mut requests = requests.typed::<Small<'static>>();
            let result = match call.method() {
                m if m == method_id(COLLECT) => collect(&call, &mut requests, responses).await,
                m if m == method_id(SPREAD) => spread(&call, &mut requests, responses, &seen).await,
                _ => chat(&call, &mut requests, responses).await,
            };
            outcome.1 = result.is_ok();
            result
        })
    }
}

async fn collect(
    call: &AsyncCall,
    requests: &mut RequestStream<Small<'static>>,
    mut responses: ResponseSink,
) -> Result<(), Status> {
    let (mut count, mut sum) = (0, 0);
    while let Some(request) = requests.message().await? {
        count += 1;
        sum += u64::from(request.view()?.id());
    }
    let mut ack = Ack::new(call.ctx());
    ack.set_count(count);
    ack.set_digest(sum);
    responses.send(&ack).await
}

async fn spread(
    call: &AsyncCall,
    requests: &mut RequestStream<Small<'static>>,
    mut responses: ResponseSink,
    seen: &Seen,
) -> Result<(), Status> {
    let mut request = requests
        .message()
        .await?
        .ok_or_else(|| Status::new(Code::InvalidArgument, "no request"))?;
    // Kept for the whole stream, as a server-streaming handler keeps its request: over shared
    // memory it must be out of the client's blocks, or their acknowledgements stop behind it.
    request.detach(call.ctx());
    let first = copy(call, &request)?;
    let mut headers = Metadata::new();
    headers.append("x-spread", first.id().to_string()).unwrap();
    call.set_headers(headers);
    for i in 0..first.id() {
        let mut m = Small::new(call.ctx());
        m.set_id(i);
        m.set_tag(first.tag());
        // Polled once by hand, to tell the test when a send waits for the window.
        let mut send = pin!(responses.send(&m));
        let result = match poll_fn(|cx| Poll::Ready(send.as_mut().poll(cx))).await {
            Poll::Ready(result) => result,
            Poll::Pending => {
                seen.blocked.store(true, Ordering::SeqCst);
                let result = send.await;
                seen.blocked.store(false, Ordering::SeqCst);
                result
            }
        };
        result?;
        seen.sent.fetch_add(1, Ordering::SeqCst);
    }
    let mut trailers = Metadata::new();
    trailers.append("x-sent", first.id().to_string()).unwrap();
    call.set_trailers(trailers);
    Ok(())
}

async fn chat(
    call: &AsyncCall,
    requests: &mut RequestStream<Small<'static>>,
    mut responses: ResponseSink,
) -> Result<(), Status> {
    while let Some(request) = requests.message().await? {
        let m = copy(call, &request)?;
        if m.id() == FAIL {
            let mut why = Metadata::new();
            why.append("x-why", "asked to").unwrap();
            return Err(Status::new(Code::Aborted, "told to fail").with_metadata(why));
        }
        responses.send(&m).await?;
    }
    Ok(())
}

/// The streams host on a thread of its own (a current-thread runtime and a `LocalSet`), at a
/// fresh shared-memory address.
struct HostThread {
    addr: String,
    seen: Arc<Seen>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    _dir: tempfile::TempDir,
}

impl HostThread {
    fn start() -> HostThread {
        let dir = common::dir();
        let addr = format!("shm://{}", dir.path().join("host.sock").display());
        let seen = Arc::new(Seen::default());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (bound, is_bound) = std::sync::mpsc::channel();
        let thread = {
            let (addr, seen) = (addr.clone(), seen.clone());
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("runtime");
                let local = tokio::task::LocalSet::new();
                local.block_on(&rt, async move {
                    let services = AsyncServices::new()
                        .service(StreamsHost { seen })
                        .and_then(|s| {
                            s.service(
                                ferry_offload::host::describe_async(DESCRIPTORS, &[SERVICE]).expect("table"),
                            )
                        })
                        .expect("services");
                    let server = AsyncServer::bind(services, &[&addr], LoopConfig::default()).expect("bind");
                    bound.send(()).expect("tell");
                    let stop = async {
                        let _ = stopped.await;
                    };
                    server.run(stop, Duration::from_millis(100)).await.expect("serve");
                });
            })
        };
        is_bound.recv().expect("the host binds");
        HostThread {
            addr,
            seen,
            stop: Some(stop),
            thread: Some(thread),
            _dir: dir,
        }
    }

    fn sent(&self) -> usize {
        self.seen.sent.load(Ordering::SeqCst)
    }

    fn blocked(&self) -> bool {
        self.seen.blocked.load(Ordering::SeqCst)
    }

    fn cut_short(&self) -> usize {
        self.seen.cut_short.load(Ordering::SeqCst)
    }
}

impl Drop for HostThread {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn engine(host: &HostThread) -> Engine {
    common::engine_at(&host.addr, |_| {})
}

/// Polls `cond` until it holds (at most 20 s): a condition, not a delay.
async fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !cond() {
        assert!(tokio::time::Instant::now() < deadline, "waited 20 s for {what}");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

fn small(id: u32, tag: &str) -> pb::Small {
    pb::Small {
        id,
        tag: tag.into(),
        ..pb::Small::default()
    }
}

type Codec<R> = tonic_prost::ProstCodec<pb::Small, R>;

/// A tonic client to `addr` (call `ready` before each call).
async fn client(addr: SocketAddr) -> tonic::client::Grpc<tonic::transport::Channel> {
    tonic::client::Grpc::new(common::channel(addr).await)
}

fn path(p: &'static str) -> http::uri::PathAndQuery {
    http::uri::PathAndQuery::from_static(p)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_shape_is_served() {
    let host = HostThread::start();
    let engine = engine(&host);
    let mut grpc = client(engine.local_addr()).await;

    grpc.ready().await.expect("ready");

    let one = grpc
        .unary(
            tonic::Request::new(small(7, "u")),
            path(UNARY),
            Codec::<pb::Small>::default(),
        )
        .await
        .expect("unary");
    assert_eq!(one.into_inner(), small(7, "u"));

    let many = tokio_stream::iter((1..=10).map(|i| small(i, "c")));
    grpc.ready().await.expect("ready");
    let ack = grpc
        .client_streaming(
            tonic::Request::new(many),
            path(COLLECT),
            Codec::<pb::Ack>::default(),
        )
        .await
        .expect("client streaming");
    assert_eq!(
        ack.into_inner(),
        pb::Ack {
            digest: 55,
            count: 10
        }
    );

    grpc.ready().await.expect("ready");

    let spread = grpc
        .server_streaming(
            tonic::Request::new(small(5, "s")),
            path(SPREAD),
            Codec::<pb::Small>::default(),
        )
        .await
        .expect("server streaming");
    assert_eq!(
        spread.metadata().get("x-spread").map(|v| v.to_str().unwrap()),
        Some("5")
    );
    let mut spread = spread.into_inner();
    let mut got = Vec::new();
    while let Some(m) = spread.message().await.expect("a message") {
        got.push(m);
    }
    assert_eq!(got, (0..5).map(|i| small(i, "s")).collect::<Vec<_>>());
    let trailers = spread.trailers().await.expect("trailers").expect("some");
    assert_eq!(trailers.get("x-sent").map(|v| v.to_str().unwrap()), Some("5"));

    // Ping-pong: each answer comes before the next request is sent.
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    tx.send(small(0, "p")).await.unwrap();
    grpc.ready().await.expect("ready");
    let chat = grpc
        .streaming(
            tonic::Request::new(tokio_stream::wrappers::ReceiverStream::new(rx)),
            path(CHAT),
            Codec::<pb::Small>::default(),
        )
        .await
        .expect("bidirectional");
    let mut chat = chat.into_inner();
    for i in 0..5 {
        assert_eq!(chat.message().await.expect("an echo"), Some(small(i, "p")));
        tx.send(small(i + 1, "p")).await.unwrap();
    }
    assert_eq!(chat.message().await.expect("an echo"), Some(small(5, "p")));
    drop(tx);
    assert_eq!(chat.message().await.expect("the end"), None);

    // No messages either way.
    grpc.ready().await.expect("ready");
    let empty = grpc
        .streaming(
            tonic::Request::new(tokio_stream::empty::<pb::Small>()),
            path(CHAT),
            Codec::<pb::Small>::default(),
        )
        .await
        .expect("an empty stream");
    assert_eq!(empty.into_inner().message().await.expect("the end"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_failure_mid_stream_is_the_client_status_with_its_trailers() {
    let host = HostThread::start();
    let engine = engine(&host);
    let mut grpc = client(engine.local_addr()).await;
    let requests = tokio_stream::iter([small(1, "a"), small(2, "b"), small(FAIL, "c"), small(3, "d")]);
    grpc.ready().await.expect("ready");
    let chat = grpc
        .streaming(
            tonic::Request::new(requests),
            path(CHAT),
            Codec::<pb::Small>::default(),
        )
        .await
        .expect("opens");
    let mut chat = chat.into_inner();
    assert_eq!(chat.message().await.unwrap(), Some(small(1, "a")));
    assert_eq!(chat.message().await.unwrap(), Some(small(2, "b")));
    let status = chat.message().await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::Aborted, "{status:?}");
    assert_eq!(status.message(), "told to fail");
    assert_eq!(
        status.metadata().get("x-why").map(|v| v.to_str().unwrap()),
        Some("asked to")
    );
}

/// Reads the rest of `body` (releasing the window as it goes): its messages, inflated with
/// `encoding`, each with its compressed flag, and the trailers.
async fn read_all(
    body: &mut h2::RecvStream,
    encoding: Encoding,
) -> (Vec<(bool, pb::Small)>, http::HeaderMap) {
    let mut deframer = Deframer::new(usize::MAX);
    let mut messages = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.expect("data");
        let _ = body.flow_control().release_capacity(chunk.len());
        deframer.push(chunk);
        while let Some(frame) = deframer.next_frame().expect("framed") {
            let compressed = frame.compressed;
            let bytes = frame.decompress(encoding, usize::MAX).expect("inflates");
            messages.push((compressed, pb::Small::decode(bytes).expect("a Small")));
        }
    }
    deframer.finish().expect("whole messages");
    let trailers = body.trailers().await.expect("trailers").unwrap_or_default();
    (messages, trailers)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_stops_the_hosts_sends() {
    let host = HostThread::start();
    let engine = engine(&host);
    // The client's window holds as many messages as the Ferry stream's window, whose reader
    // grants it back half a window at a time: the HTTP/2 side must take more than half of it
    // for the host to send past its first window.
    let ferry_window = ferry::rpc::wire::STREAM_WINDOW_MESSAGES as usize;
    const TAG: usize = 1 << 10;
    let window = u32::try_from(ferry_window * TAG).unwrap();
    let in_client_window = ferry_window;
    // Sent ahead of what the client read, at most: the Ferry window (messages the engine has
    // not taken), the engine's queue for HTTP/2 and the one it holds between the two, the
    // chunk hyper holds and h2 buffers beyond the window, and what the client's window let in.
    let bound = ferry_window + ENGINE_QUEUED + 1 + 2 + in_client_window;
    // 100 times each window (both hold 32 messages); under 4096 messages, past which a Ferry
    // stream over shared memory can stall today (`ferry_stream_over_shm_past_4096_messages`).
    let total = 100 * ferry_window;
    let (mut send, response) = common::h2_call(engine.local_addr(), SPREAD, &[], window).await;
    let request = common::framed(false, &small(total as u32, &"x".repeat(TAG)).encode_to_vec());
    send.send_data(Bytes::from(request), true).expect("sends");
    let response = response.await.expect("an answer");
    assert_eq!(response.status(), 200);
    let mut body = response.into_body();
    // The client reads nothing: the host blocks once the pipeline is full, past its first
    // window (the engine took more than half of it and granted it back).
    wait_for("the host to block with the pipeline full", || {
        host.blocked() && host.sent() >= ferry_window + ferry_window / 2
    })
    .await;
    // A call through the engine after that: the engine has run since the host blocked.
    let mut grpc = client(engine.local_addr()).await;
    grpc.ready().await.expect("ready");
    grpc.unary(
        tonic::Request::new(small(1, "u")),
        path(UNARY),
        Codec::<pb::Small>::default(),
    )
    .await
    .expect("unary");
    let (sent, blocked) = (host.sent(), host.blocked());
    eprintln!("the host sent {sent} of {total} messages to a client that read none, then blocked");
    // The client reads again (before the checks: a stream left open would hold the engine's
    // shutdown): every message arrives, in order.
    let (messages, trailers) = read_all(&mut body, Encoding::Identity).await;
    assert!(
        sent <= bound,
        "the host sent {sent} messages to a client that read none (bound {bound})"
    );
    assert!(blocked, "the host is not blocked at {sent} sent");
    assert_eq!(messages.len(), total);
    assert!(messages.iter().enumerate().all(|(i, (_, m))| m.id == i as u32));
    assert_eq!(trailers["grpc-status"], "0");
    assert_eq!(host.sent(), total);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_goes_away_cancels_the_host_stream() {
    let host = HostThread::start();
    let engine = engine(&host);
    let mut grpc = client(engine.local_addr()).await;
    // A server stream that would go on for a long time: read 3 messages, then drop it.
    grpc.ready().await.expect("ready");
    let spread = grpc
        .server_streaming(
            tonic::Request::new(small(u32::MAX, "forever")),
            path(SPREAD),
            Codec::<pb::Small>::default(),
        )
        .await
        .expect("opens");
    let mut spread = spread.into_inner();
    for i in 0..3 {
        assert_eq!(spread.message().await.unwrap(), Some(small(i, "forever")));
    }
    drop(spread);
    wait_for("the host's stream to be cancelled", || host.cut_short() == 1).await;

    // A bidirectional stream whose host waits for the next request when the client resets.
    let (mut send, response) = common::h2_call(engine.local_addr(), CHAT, &[], 1 << 20).await;
    let one = common::framed(false, &small(1, "a").encode_to_vec());
    send.send_data(Bytes::from(one), false).expect("sends");
    let mut body = response.await.expect("an answer").into_body();
    let chunk = body.data().await.expect("an echo").expect("data");
    assert_eq!(&chunk[5..], &small(1, "a").encode_to_vec()[..]);
    send.send_reset(h2::Reason::CANCEL);
    wait_for("the host's stream to be cancelled", || host.cut_short() == 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadline_ends_the_stream_midway() {
    let host = HostThread::start();
    let engine = engine(&host);
    // h2 runs no timer of its own: what ends the stream is the engine's deadline.
    let headers = [("grpc-timeout", "300m")];
    let (mut send, response) = common::h2_call(engine.local_addr(), CHAT, &headers, 1 << 20).await;
    let one = common::framed(false, &small(1, "a").encode_to_vec());
    send.send_data(Bytes::from(one), false).expect("sends");
    let mut body = response.await.expect("an answer").into_body();
    // The echo, then nothing until the deadline (the client does not half-close).
    let (messages, trailers) = read_all(&mut body, Encoding::Identity).await;
    assert_eq!(messages, [(false, small(1, "a"))]);
    assert_eq!(
        trailers["grpc-status"],
        (Code::DeadlineExceeded as u8).to_string().as_str()
    );
    wait_for("the host's stream to end", || host.cut_short() == 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamed_messages_are_compressed_both_ways() {
    let host = HostThread::start();
    let engine = engine(&host);
    let tag = "z".repeat(2000);
    // tonic: gzip both ways.
    let grpc = client(engine.local_addr()).await;
    let mut grpc = grpc
        .send_compressed(CompressionEncoding::Gzip)
        .accept_compressed(CompressionEncoding::Gzip);
    let requests = tokio_stream::iter((0..3).map(|i| small(i, &tag)).collect::<Vec<_>>());
    grpc.ready().await.expect("ready");
    let chat = grpc
        .streaming(
            tonic::Request::new(requests),
            path(CHAT),
            Codec::<pb::Small>::default(),
        )
        .await
        .expect("opens");
    let got: Vec<pb::Small> = chat.into_inner().map(|m| m.expect("a message")).collect().await;
    assert_eq!(got, (0..3).map(|i| small(i, &tag)).collect::<Vec<_>>());

    // On the wire: deflate requests, each flagged; the answers deflated too.
    let headers = [("grpc-encoding", "deflate"), ("grpc-accept-encoding", "deflate")];
    let (mut send, response) = common::h2_call(engine.local_addr(), CHAT, &headers, 1 << 20).await;
    for i in 0..3 {
        let message = framing::frame(&small(i, &tag).encode_to_vec(), Encoding::Deflate);
        assert_eq!(message[0], 1, "compressed");
        send.send_data(message, i == 2).expect("sends");
    }
    let response = response.await.expect("an answer");
    assert_eq!(response.headers()["grpc-encoding"], "deflate");
    let (messages, trailers) = read_all(&mut response.into_body(), Encoding::Deflate).await;
    assert_eq!(trailers["grpc-status"], "0");
    assert_eq!(
        messages,
        (0..3).map(|i| (true, small(i, &tag))).collect::<Vec<_>>()
    );
    // A message that inflates past the limit ends the stream with RESOURCE_EXHAUSTED.
    let (mut send, response) = common::h2_call(engine.local_addr(), CHAT, &headers, 1 << 20).await;
    let bomb = framing::frame(&small(0, &"z".repeat(2 << 20)).encode_to_vec(), Encoding::Deflate);
    send.send_data(bomb, true).expect("sends");
    let response = response.await.expect("an answer");
    let code = response.headers().get("grpc-status").cloned();
    let (_, trailers) = read_all(&mut response.into_body(), Encoding::Deflate).await;
    let code = code
        .or_else(|| trailers.get("grpc-status").cloned())
        .expect("a status");
    assert_eq!(code, (Code::ResourceExhausted as u8).to_string().as_str());
}

/// Regression: a Ferry stream over shared memory, without the engine, stalled after 4096
/// messages in about one run of four (the host's send and the client's read both waiting).
/// The host kept its request's frame in the client's block for the whole stream; blocks are
/// acknowledged in order, so the client's 256 credits ran out on its window grants (one per
/// 16 messages read) and the host's window closed. A server-streaming handler now copies the
/// request it keeps (`AsyncRequest::detach`, what generated handlers get).
#[test]
fn ferry_stream_over_shm_past_4096_messages() {
    let host = HostThread::start();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    for round in 0..10 {
        tokio::task::LocalSet::new().block_on(&rt, async {
            let chan = ferry::rpc::tokio::AsyncChannel::connect(&host.addr)
                .await
                .expect("connects");
            let mut request = Small::new(chan.context());
            request.set_id(6900);
            request.set_tag("x".repeat(1024));
            let options = ferry::rpc::CallOptions::default();
            let (mut sink, mut responses) = chan.open(method_id(SPREAD), &options).expect("opens");
            sink.send(&request).await.expect("sends");
            sink.end().await.expect("half-closes");
            let mut n = 0;
            let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
            while let Some(_message) = tokio::time::timeout_at(deadline, responses.message())
                .await
                .unwrap_or_else(|_| panic!("round {round}: stalled after {n} messages"))
                .expect("a message")
            {
                n += 1;
            }
            assert_eq!(n, 6900);
        });
    }
}
