//! Streaming calls on the tokio driver over real sockets, TCP, TLS and shared memory: a hand-written
//! service with all four shapes on an `AsyncServer` of its own thread, called by an
//! `AsyncChannel` on the test's thread (`tokio_driver.rs` says why two threads). Flow control,
//! cancellation from each side, a deadline mid-stream, the bound on calls in progress, and many
//! streams on one session where one is never read. Every test runs under a time bound; what a
//! test waits for is a condition (a handler's counter, a send future found pending), never a
//! fixed sleep.

#[macro_use]
mod tokio_support;
mod common;

use std::future::{Future, poll_fn};
use std::pin::pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use ferry_rpc::tokio::{
    AsyncCall, AsyncChannel, AsyncRequest, AsyncService, AsyncServices, LocalBoxFuture, RequestStream,
    ResponseSink, ResponseStream,
};
use ferry_rpc::wire::STREAM_WINDOW_MESSAGES;
use ferry_rpc::{
    CallOptions, ChannelConfig, Code, Encoded, LoopConfig, Metadata, MethodInfo, Mode, Shape, Status,
};
use ferry_transport::{Payload, Received, method_id};
use ferry_wire::sample::{RECORD, Record};

use common::{check_record, record};
use tokio_support::{ServerThread, Transport, eventually, flag, local_runtime, within};

/// Unary: echoes its raw request.
const UNARY: u16 = method_id("/ferry.test.Streams/Unary");
/// Client-streaming: answers with its raw requests joined by commas.
const JOIN: u16 = method_id("/ferry.test.Streams/Join");
/// Server-streaming: its request is a count `n` (decimal); answers `0`..`n`, with headers
/// `x-count: n` and trailers `x-done: yes`; `n` = `fail` sends two messages, then fails with
/// `ABORTED` and trailers `x-why: asked`.
const COUNT: u16 = method_id("/ferry.test.Streams/Count");
/// Bidirectional, Ferry messages: echoes each `Record`.
const ECHO: u16 = method_id("/ferry.test.Streams/Echo");
/// Server-streaming: sends ten windows of messages, noting when a send is first found pending.
const FLOOD: u16 = method_id("/ferry.test.Streams/Flood");
/// Client-streaming: reads nothing until `Seen::release`, then answers with how many came.
const HOLD: u16 = method_id("/ferry.test.Streams/Hold");
/// Bidirectional: sends `first`, then waits for a request; notes the status its request stream
/// ends with and the status a send then fails with.
const WAIT: u16 = method_id("/ferry.test.Streams/Wait");
/// Declared bidirectional by a service that serves no streams (the default `stream`).
const NOT_SERVED: u16 = method_id("/ferry.test.Plain/NotServed");

/// What the handlers did, seen from the test's thread.
#[derive(Debug)]
struct Seen {
    /// JOIN: messages received.
    joined: AtomicUsize,
    /// FLOOD: sends that completed.
    flood_sent: AtomicUsize,
    /// FLOOD: the index of the first send found pending (`usize::MAX`: none yet).
    flood_blocked_at: AtomicUsize,
    /// HOLD: the handler may read.
    release: Arc<AtomicBool>,
    /// HOLD handlers started, and dropped before their end (aborted).
    hold_started: AtomicUsize,
    hold_aborted: AtomicUsize,
    /// WAIT: the status its request stream failed with, then the status its send failed with.
    wait_recv: Mutex<Option<Code>>,
    wait_send: Mutex<Option<Code>>,
    /// WAIT handlers started.
    wait_started: AtomicUsize,
}

impl Default for Seen {
    fn default() -> Seen {
        Seen {
            joined: AtomicUsize::new(0),
            flood_sent: AtomicUsize::new(0),
            flood_blocked_at: AtomicUsize::new(usize::MAX),
            release: Arc::default(),
            hold_started: AtomicUsize::new(0),
            hold_aborted: AtomicUsize::new(0),
            wait_recv: Mutex::default(),
            wait_send: Mutex::default(),
            wait_started: AtomicUsize::new(0),
        }
    }
}

/// The service: all four shapes.
struct Streams {
    seen: Arc<Seen>,
}

fn method(path: &'static str, shape: Shape, request: bool) -> MethodInfo {
    MethodInfo {
        path,
        id: method_id(path),
        request: request.then_some(&RECORD),
        mode: Mode::Foreground,
        shape,
    }
}

fn raw(request: &AsyncRequest<()>) -> Result<&[u8], Status> {
    request
        .bytes()
        .ok_or_else(|| Status::new(Code::InvalidArgument, "not a raw payload"))
}

fn metadata(key: &str, value: &str) -> Metadata {
    let mut md = Metadata::new();
    md.insert(key, value).expect("valid metadata");
    md
}

/// Polls `fut` once: whether it is ready now.
async fn poll_once<F: Future + Unpin>(fut: &mut F) -> Poll<F::Output> {
    poll_fn(|cx| Poll::Ready(std::pin::Pin::new(&mut *fut).poll(cx))).await
}

impl AsyncService for Streams {
    fn methods(&self) -> Vec<MethodInfo> {
        vec![
            method("/ferry.test.Streams/Unary", Shape::Unary, false),
            method("/ferry.test.Streams/Join", Shape::ClientStreaming, false),
            method("/ferry.test.Streams/Count", Shape::ServerStreaming, false),
            method("/ferry.test.Streams/Echo", Shape::Bidirectional, true),
            method("/ferry.test.Streams/Flood", Shape::ServerStreaming, false),
            method("/ferry.test.Streams/Hold", Shape::ClientStreaming, false),
            method("/ferry.test.Streams/Wait", Shape::Bidirectional, false),
        ]
    }

    fn call(&self, _call: AsyncCall, request: AsyncRequest<()>) -> LocalBoxFuture<Result<Encoded, Status>> {
        Box::pin(async move { Ok(Encoded::bytes(raw(&request)?)) })
    }

    fn stream(
        &self,
        call: AsyncCall,
        mut requests: RequestStream<()>,
        mut responses: ResponseSink,
    ) -> LocalBoxFuture<Result<(), Status>> {
        let seen = Arc::clone(&self.seen);
        Box::pin(async move {
            match call.method() {
                JOIN => {
                    let mut parts = Vec::new();
                    while let Some(request) = requests.message().await? {
                        parts.push(String::from_utf8_lossy(raw(&request)?).into_owned());
                        seen.joined.fetch_add(1, Ordering::SeqCst);
                    }
                    responses
                        .send_payload(Payload::Bytes(parts.join(",").as_bytes()))
                        .await
                }
                COUNT => {
                    let request = requests.message().await?.expect("one request");
                    let n = String::from_utf8_lossy(raw(&request)?).into_owned();
                    call.set_headers(metadata("x-count", &n));
                    if n == "fail" {
                        for i in 0..2 {
                            responses
                                .send_payload(Payload::Bytes(format!("{i}").as_bytes()))
                                .await?;
                        }
                        return Err(Status::new(Code::Aborted, "asked to fail")
                            .with_metadata(metadata("x-why", "asked")));
                    }
                    let n: usize = n
                        .parse()
                        .map_err(|_| Status::new(Code::InvalidArgument, "a count"))?;
                    for i in 0..n {
                        responses
                            .send_payload(Payload::Bytes(format!("{i}").as_bytes()))
                            .await?;
                    }
                    call.set_trailers(metadata("x-done", "yes"));
                    Ok(())
                }
                ECHO => {
                    let mut requests = requests.typed::<Record<'static>>();
                    while let Some(request) = requests.message().await? {
                        let view = request.view()?;
                        let mut answer = Record::new(call.ctx());
                        answer.set_key(view.key());
                        for field in view.fields().iter() {
                            answer.append_field(field);
                        }
                        responses.send(&answer).await?;
                    }
                    Ok(())
                }
                FLOOD => {
                    for i in 0..10 * STREAM_WINDOW_MESSAGES as usize {
                        let body = format!("{i:08}").repeat(16);
                        let mut send = pin!(responses.send_payload(Payload::Bytes(body.as_bytes())));
                        if let Poll::Ready(sent) = poll_once(&mut send).await {
                            sent?;
                        } else {
                            let _ = seen.flood_blocked_at.compare_exchange(
                                usize::MAX,
                                i,
                                Ordering::SeqCst,
                                Ordering::SeqCst,
                            );
                            send.await?;
                        }
                        seen.flood_sent.fetch_add(1, Ordering::SeqCst);
                    }
                    Ok(())
                }
                HOLD => {
                    let mut aborted = Aborted(&seen, true);
                    seen.hold_started.fetch_add(1, Ordering::SeqCst);
                    flag(Arc::clone(&seen.release)).await;
                    aborted.1 = false;
                    let mut n = 0;
                    while requests.message().await?.is_some() {
                        n += 1;
                    }
                    responses
                        .send_payload(Payload::Bytes(format!("{n}").as_bytes()))
                        .await
                }
                WAIT => {
                    seen.wait_started.fetch_add(1, Ordering::SeqCst);
                    responses.send_payload(Payload::Bytes(b"first")).await?;
                    let status = requests.message().await.expect_err("the call ends first");
                    *seen.wait_recv.lock().unwrap() = Some(status.code);
                    let status = responses
                        .send_payload(Payload::Bytes(b"late"))
                        .await
                        .expect_err("the call is over");
                    *seen.wait_send.lock().unwrap() = Some(status.code);
                    Err(status)
                }
                m => Err(Status::new(Code::Unimplemented, format!("method {m}"))),
            }
        })
    }
}

/// Counts a HOLD handler dropped before its end (while `.1`).
struct Aborted<'s>(&'s Seen, bool);

impl Drop for Aborted<'_> {
    fn drop(&mut self) {
        if self.1 {
            self.0.hold_aborted.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// A service with a streaming method and no `stream` of its own.
struct Plain;

impl AsyncService for Plain {
    fn methods(&self) -> Vec<MethodInfo> {
        vec![method("/ferry.test.Plain/NotServed", Shape::Bidirectional, false)]
    }

    fn call(&self, _call: AsyncCall, _request: AsyncRequest<()>) -> LocalBoxFuture<Result<Encoded, Status>> {
        Box::pin(async { Err(Status::new(Code::Internal, "no unary method here")) })
    }
}

/// The server of [`Streams`] (and [`Plain`]) on `t`, with `config`.
fn start(t: Transport, config: LoopConfig) -> (ServerThread, Arc<Seen>) {
    let seen = Arc::new(Seen::default());
    let (addr, scratch) = t.bind_addr();
    let service = Streams {
        seen: Arc::clone(&seen),
    };
    let server = ServerThread::serve(&addr, Duration::ZERO, scratch, config, move |_| {
        AsyncServices::new()
            .service(service)
            .and_then(|s| s.service(Plain))
            .expect("services")
    });
    (server, seen)
}

/// [`serve_with`] the default configuration and room for 8 calls in flight.
fn with_server<F, T>(what: &'static str, t: Transport, test: F)
where
    F: FnOnce(Rc<AsyncChannel>, Arc<Seen>) -> T + Send + 'static,
    T: Future<Output = ()>,
{
    serve_with(what, t, LoopConfig::default(), 8, test);
}

/// Runs `test` under a time bound, with a server of [`Streams`] on `t` (with `config`) and a
/// channel to it with room for `window` calls in flight.
fn serve_with<F, T>(what: &'static str, t: Transport, config: LoopConfig, window: usize, test: F)
where
    F: FnOnce(Rc<AsyncChannel>, Arc<Seen>) -> T + Send + 'static,
    T: Future<Output = ()>,
{
    within(what, 60, move || {
        let (server, seen) = start(t, config);
        let addr = server.addr.clone();
        local_runtime(async move { test(Rc::new(channel(&addr, window).await), seen).await });
        server.stop();
    });
}

/// A channel with room for `window` calls in flight.
async fn channel(addr: &str, window: usize) -> AsyncChannel {
    let mut config = ChannelConfig::default();
    config.client.window = window;
    config.conn = tokio_support::tls::with_tls(config.conn);
    AsyncChannel::connect_with(addr, config).await.expect("connect")
}

/// The raw payload of each remaining message of `responses`, and how it ended.
async fn drain(responses: &mut ResponseStream<()>) -> (Vec<String>, Result<(), Status>) {
    let mut got = Vec::new();
    loop {
        match responses.message().await {
            Ok(Some(m)) => got.push(String::from_utf8_lossy(m.frame().bytes().expect("raw")).into_owned()),
            Ok(None) => return (got, Ok(())),
            Err(status) => return (got, Err(status)),
        }
    }
}

/// Opens ECHO, sends `n` records one at a time (the `i`th with fields of `sizes(i)`, its key
/// tagged `tag`), checks each answer, then ends and checks the OK end.
async fn ping_pong(chan: &AsyncChannel, tag: &str, n: usize, sizes: impl Fn(usize) -> Vec<usize>) {
    let (mut sink, responses) = chan.open(ECHO, &CallOptions::default()).expect("open");
    let mut responses = responses.typed::<Record<'static>>();
    for i in 0..n {
        let (key, sizes) = (format!("{tag} message {i}"), sizes(i));
        sink.send(&record(chan.context(), key.as_bytes(), &sizes))
            .await
            .expect("send");
        let answer = responses.message().await.expect("answer").expect("a message");
        check_record(&answer.view().expect("a Record"), key.as_bytes(), &sizes);
    }
    sink.end().await.expect("end");
    assert!(responses.message().await.expect("OK").is_none());
}

fn numbers(n: usize) -> Vec<String> {
    (0..n).map(|i| i.to_string()).collect()
}

every_transport!(
    client_streaming_joins_the_requests_in_order,
    server_streaming_sends_headers_messages_and_trailers,
    server_failure_mid_stream_carries_trailers_and_fails_the_sink,
    bidirectional_echoes_ferry_messages_read_in_place,
    shape_mismatches_and_unserved_streams_are_unimplemented,
    a_reader_that_does_not_read_blocks_the_sender_at_the_window,
    a_server_that_does_not_read_blocks_the_client_at_the_window,
    dropping_the_response_stream_cancels_the_handler,
    a_deadline_mid_stream_ends_both_sides,
    opening_past_max_in_flight_is_resource_exhausted,
    one_unread_stream_does_not_stall_the_others,
    a_wait_dropped_pending_hands_the_connection_on,
    a_handler_busy_elsewhere_is_aborted_when_its_call_ends,
    a_fed_message_is_written_while_its_task_waits_for_something_else,
);

fn client_streaming_joins_the_requests_in_order(t: Transport) {
    with_server("client streaming", t, |chan, _| async move {
        // More than a window of messages: grants come back as the handler reads.
        let n = 3 * STREAM_WINDOW_MESSAGES as usize;
        let (mut sink, mut responses) = chan.open(JOIN, &CallOptions::default()).expect("open");
        for i in 0..n {
            sink.send_payload(Payload::Bytes(i.to_string().as_bytes()))
                .await
                .expect("send");
        }
        sink.end().await.expect("end");
        let (got, end) = drain(&mut responses).await;
        end.expect("OK");
        assert_eq!(got, [numbers(n).join(",")]);
        assert_eq!(responses.trailers(), Some(&Metadata::new()));
    });
}

fn server_streaming_sends_headers_messages_and_trailers(t: Transport) {
    with_server("server streaming", t, |chan, _| async move {
        let n = 5 * STREAM_WINDOW_MESSAGES as usize;
        let (mut sink, mut responses) = chan.open(COUNT, &CallOptions::default()).expect("open");
        sink.send_payload(Payload::Bytes(n.to_string().as_bytes()))
            .await
            .expect("send");
        drop(sink); // half-closes
        let headers = responses.headers().await;
        assert_eq!(headers.get("x-count"), Some(n.to_string().as_bytes()));
        assert_eq!(responses.trailers(), None, "not before the end");
        let (got, end) = drain(&mut responses).await;
        end.expect("OK");
        assert_eq!(got, numbers(n));
        assert_eq!(
            responses.trailers().and_then(|t| t.get("x-done")),
            Some(&b"yes"[..])
        );
        // Fused after its end; the channel goes on.
        assert!(responses.message().await.expect("fused").is_none());
        let echo = chan
            .call_payload(UNARY, Payload::Bytes(b"after"))
            .await
            .expect("unary");
        assert_eq!(echo.frame().bytes(), Some(&b"after"[..]));
    });
}

fn server_failure_mid_stream_carries_trailers_and_fails_the_sink(t: Transport) {
    with_server("server failure", t, |chan, _| async move {
        let (mut sink, mut responses) = chan.open(COUNT, &CallOptions::default()).expect("open");
        sink.send_payload(Payload::Bytes(b"fail")).await.expect("send");
        let (got, end) = drain(&mut responses).await;
        assert_eq!(got, numbers(2));
        let status = end.expect_err("the handler failed");
        assert_eq!(status.code, Code::Aborted, "{status}");
        assert_eq!(status.metadata.get("x-why"), Some(&b"asked"[..]));
        assert_eq!(responses.headers().await.get("x-count"), Some(&b"fail"[..]));
        let late = sink
            .send_payload(Payload::Bytes(b"late"))
            .await
            .expect_err("over");
        assert_eq!(late.code, Code::Aborted, "{late}");
    });
}

fn bidirectional_echoes_ferry_messages_read_in_place(t: Transport) {
    with_server("bidirectional", t, |chan, _| async move {
        // Fields large enough to go by reference (pool memory).
        ping_pong(&chan, "", 3 * STREAM_WINDOW_MESSAGES as usize, |i| {
            vec![i % 7, 600 + i, 40_000]
        })
        .await;
    });
}

fn shape_mismatches_and_unserved_streams_are_unimplemented(t: Transport) {
    with_server("shapes", t, |chan, _| async move {
        let (_sink, mut responses) = chan.open(UNARY, &CallOptions::default()).expect("open");
        let status = responses.message().await.expect_err("a unary method");
        assert_eq!(status.code, Code::Unimplemented, "{status}");
        assert!(status.message.contains("/ferry.test.Streams/Unary"), "{status}");
        let status = chan
            .call_payload(COUNT, Payload::Bytes(b"1"))
            .await
            .expect_err("a stream");
        assert_eq!(status.code, Code::Unimplemented, "{status}");
        assert!(status.message.contains("server-streaming"), "{status}");
        let (_sink, mut responses) = chan.open(NOT_SERVED, &CallOptions::default()).expect("open");
        let status = responses.message().await.expect_err("not served");
        assert_eq!(status.code, Code::Unimplemented, "{status}");
        let (_sink, mut responses) = chan
            .open(method_id("/no.Such/Method"), &CallOptions::default())
            .expect("open");
        let status = responses.message().await.expect_err("no such method");
        assert_eq!(status.code, Code::Unimplemented, "{status}");
    });
}

/// The server sends ten windows to a client that takes nothing: its send is found pending
/// right after one window, and stays so while the client's channel serves other calls (which
/// read the connection); then the client reads all, in order.
fn a_reader_that_does_not_read_blocks_the_sender_at_the_window(t: Transport) {
    with_server("slow reader", t, |chan, seen| async move {
        let (sink, mut responses) = chan.open(FLOOD, &CallOptions::default()).expect("open");
        drop(sink);
        let window = STREAM_WINDOW_MESSAGES as usize;
        // Unary calls drive the connection meanwhile: the stream's messages arrive and wait.
        while seen.flood_blocked_at.load(Ordering::SeqCst) == usize::MAX {
            chan.call_payload(UNARY, Payload::Bytes(b"x"))
                .await
                .expect("unary");
        }
        assert_eq!(seen.flood_blocked_at.load(Ordering::SeqCst), window);
        for _ in 0..20 {
            chan.call_payload(UNARY, Payload::Bytes(b"x"))
                .await
                .expect("unary");
        }
        assert_eq!(
            seen.flood_sent.load(Ordering::SeqCst),
            window,
            "sent past the window"
        );
        let (got, end) = drain(&mut responses).await;
        end.expect("OK");
        let want: Vec<String> = (0..10 * window).map(|i| format!("{i:08}").repeat(16)).collect();
        assert_eq!(got, want);
    });
}

/// The handler reads nothing: the client's send is found pending right after one window, and
/// goes on once the handler reads.
fn a_server_that_does_not_read_blocks_the_client_at_the_window(t: Transport) {
    with_server("slow server", t, |chan, seen| async move {
        let (mut sink, mut responses) = chan.open(HOLD, &CallOptions::default()).expect("open");
        let window = STREAM_WINDOW_MESSAGES as usize;
        let mut blocked_at = None;
        for i in 0..3 * window {
            let mut send = pin!(sink.send_payload(Payload::Bytes(b"m")));
            if let Poll::Ready(sent) = poll_once(&mut send).await {
                sent.expect("send");
                continue;
            }
            blocked_at.get_or_insert(i);
            seen.release.store(true, Ordering::SeqCst);
            send.await.expect("send");
        }
        assert_eq!(blocked_at, Some(window));
        sink.end().await.expect("end");
        let (got, end) = drain(&mut responses).await;
        end.expect("OK");
        assert_eq!(got, [(3 * window).to_string()]);
    });
}

fn dropping_the_response_stream_cancels_the_handler(t: Transport) {
    with_server("client cancels", t, |chan, seen| async move {
        let (mut sink, mut responses) = chan.open(WAIT, &CallOptions::default()).expect("open");
        let first = responses.message().await.expect("first").expect("a message");
        assert_eq!(first.frame().bytes(), Some(&b"first"[..]));
        drop(responses);
        let status = sink
            .send_payload(Payload::Bytes(b"x"))
            .await
            .expect_err("cancelled");
        assert_eq!(status.code, Code::Cancelled, "{status}");
        // The handler sees it; the channel serves the next call.
        let echo = chan
            .call_payload(UNARY, Payload::Bytes(b"next"))
            .await
            .expect("unary");
        assert_eq!(echo.frame().bytes(), Some(&b"next"[..]));
        eventually("the handler sees the cancellation", || {
            seen.wait_send.lock().unwrap().is_some()
        })
        .await;
        assert_eq!(*seen.wait_recv.lock().unwrap(), Some(Code::Cancelled));
        assert_eq!(*seen.wait_send.lock().unwrap(), Some(Code::Cancelled));
    });
}

fn a_deadline_mid_stream_ends_both_sides(t: Transport) {
    with_server("deadline", t, |chan, seen| async move {
        let options = CallOptions {
            timeout: Some(Duration::from_millis(300)),
            ..CallOptions::default()
        };
        let (mut sink, mut responses) = chan.open(WAIT, &options).expect("open");
        let first = responses.message().await.expect("first").expect("a message");
        assert_eq!(first.frame().bytes(), Some(&b"first"[..]));
        let status = responses.message().await.expect_err("expired");
        assert_eq!(status.code, Code::DeadlineExceeded, "{status}");
        let status = sink
            .send_payload(Payload::Bytes(b"x"))
            .await
            .expect_err("expired");
        assert_eq!(status.code, Code::DeadlineExceeded, "{status}");
        eventually("the handler sees the end", || {
            seen.wait_send.lock().unwrap().is_some()
        })
        .await;
        // The server's own clock, or the client's cancel, whichever reached it first.
        let ended = [Some(Code::DeadlineExceeded), Some(Code::Cancelled)];
        assert!(ended.contains(&*seen.wait_recv.lock().unwrap()), "{seen:?}");
        assert_eq!(*seen.wait_send.lock().unwrap(), *seen.wait_recv.lock().unwrap());
    });
}

fn opening_past_max_in_flight_is_resource_exhausted(t: Transport) {
    let mut config = LoopConfig::default();
    config.server.max_in_flight = 2;
    serve_with("max in flight", t, config, 8, |chan, seen| async move {
        let mut open = Vec::new();
        for _ in 0..2 {
            let (sink, mut responses) = chan.open(WAIT, &CallOptions::default()).expect("open");
            assert!(responses.message().await.expect("first").is_some());
            open.push((sink, responses));
        }
        let (_sink, mut responses) = chan.open(WAIT, &CallOptions::default()).expect("open");
        let status = responses.message().await.expect_err("past the bound");
        assert_eq!(status.code, Code::ResourceExhausted, "{status}");
        assert_eq!(seen.wait_started.load(Ordering::SeqCst), 2);
        // One ends: the next is served.
        drop(open.pop());
        // Its cancel goes before the next open, on the same connection.
        let (_sink, mut responses) = chan.open(WAIT, &CallOptions::default()).expect("open");
        assert!(responses.message().await.expect("served").is_some());
    });
}

/// Sixteen bidirectional streams exchange messages on one channel while a seventeenth, never
/// read, holds a window's worth of messages: they all complete, and the unread one's sender
/// stays at one window.
fn one_unread_stream_does_not_stall_the_others(t: Transport) {
    serve_with(
        "many streams",
        t,
        LoopConfig::default(),
        32,
        |chan, seen| async move {
            let (flood_sink, mut flood) = chan.open(FLOOD, &CallOptions::default()).expect("open");
            drop(flood_sink);
            let tasks: Vec<_> = (0..16)
                .map(|s| {
                    let chan = Rc::clone(&chan);
                    tokio::task::spawn_local(async move {
                        let tag = format!("stream {s}");
                        ping_pong(&chan, &tag, 2 * STREAM_WINDOW_MESSAGES as usize, |i| {
                            vec![s, 1000 + i]
                        })
                        .await;
                    })
                })
                .collect();
            for task in tasks {
                task.await.expect("stream task");
            }
            let window = STREAM_WINDOW_MESSAGES as usize;
            eventually("the flood blocks", || {
                seen.flood_blocked_at.load(Ordering::SeqCst) != usize::MAX
            })
            .await;
            assert_eq!(seen.flood_sent.load(Ordering::SeqCst), window);
            let (got, end) = drain(&mut flood).await;
            end.expect("OK");
            assert_eq!(got.len(), 10 * window);
        },
    );
}

/// A task's `message()` future dropped while it held the connection's registration (it parked
/// last) hands it on: another task's stream, parked before it, still learns its deadline.
fn a_wait_dropped_pending_hands_the_connection_on(t: Transport) {
    with_server("handoff", t, |chan, _| async move {
        let first = Rc::new(std::cell::Cell::new(false));
        let other = {
            let (chan, first) = (Rc::clone(&chan), Rc::clone(&first));
            tokio::task::spawn_local(async move {
                let options = CallOptions {
                    timeout: Some(Duration::from_millis(500)),
                    ..CallOptions::default()
                };
                let (_sink, mut responses) = chan.open(WAIT, &options).expect("open");
                assert!(responses.message().await.expect("first").is_some());
                first.set(true);
                // Parks; only the connection's reader can tell it of its deadline.
                responses.message().await.expect_err("expired").code
            })
        };
        eventually("the other task's first message", || first.get()).await;
        let (_sink, mut responses) = chan.open(WAIT, &CallOptions::default()).expect("open");
        assert!(responses.message().await.expect("first").is_some());
        tokio::select! {
            biased;
            _ = responses.message() => unreachable!("the handler sends one message"),
            // The wait above parked (it is the reader now), then is dropped.
            () = tokio::task::yield_now() => {}
        }
        // This task no longer polls the channel: the other task must.
        assert_eq!(other.await.expect("the other task"), Code::DeadlineExceeded);
    });
}

/// HOLD's handler waits on something else than its stream: cancelling the call drops it (a
/// handler waiting on its stream sees the status instead: `dropping_the_response_stream...`).
fn a_handler_busy_elsewhere_is_aborted_when_its_call_ends(t: Transport) {
    with_server("busy handler", t, |chan, seen| async move {
        let (mut sink, responses) = chan.open(HOLD, &CallOptions::default()).expect("open");
        sink.send_payload(Payload::Bytes(b"m")).await.expect("send");
        // Started: a task aborted before its first poll would show nothing.
        eventually("the handler starts", || {
            seen.hold_started.load(Ordering::SeqCst) == 1
        })
        .await;
        drop(responses);
        eventually("the handler is aborted", || {
            seen.hold_aborted.load(Ordering::SeqCst) == 1
        })
        .await;
        // The channel goes on.
        let echo = chan
            .call_payload(UNARY, Payload::Bytes(b"next"))
            .await
            .expect("unary");
        assert_eq!(echo.frame().bytes(), Some(&b"next"[..]));
    });
}

/// A feed resolves once the transport has taken its message, and fed messages are written
/// together: while the feeding task waits for something else, its message is written by the
/// response stream parked on the connection (the feed wakes it) or, with nothing of the
/// channel waiting, by `flush`.
fn a_fed_message_is_written_while_its_task_waits_for_something_else(t: Transport) {
    with_server("sends written", t, |chan, seen| async move {
        let (mut sink, mut responses) = chan.open(JOIN, &CallOptions::default()).expect("open");
        sink.feed_payload(Payload::Bytes(b"a")).await.expect("feed");
        sink.flush().await.expect("flush");
        eventually("the flushed message to arrive", || {
            seen.joined.load(Ordering::SeqCst) == 1
        })
        .await;
        let reader = tokio::task::spawn_local(async move { drain(&mut responses).await });
        // The reader's task runs first (the local set's queue is in order): it parks on the
        // connection before the send.
        tokio::task::yield_now().await;
        sink.feed_payload(Payload::Bytes(b"b")).await.expect("feed");
        eventually("the message the reader wrote to arrive", || {
            seen.joined.load(Ordering::SeqCst) == 2
        })
        .await;
        sink.end().await.expect("end");
        let (got, end) = reader.await.expect("the reader's task");
        end.expect("OK");
        assert_eq!(got, ["a,b"]);
    });
}
