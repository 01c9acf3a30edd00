//! Streams on the event-loop server, called with the blocking channel, over real sockets, TCP,
//! TLS and shared memory: the three streaming shapes (raw payloads, and Ferry messages read in
//! place), headers and trailers, the window holding a server that outruns its reader,
//! cancellation from each side, a deadline mid-stream, the bound on calls in progress,
//! refusals by shape, and a slow stream beside busy ones on one session.

mod common;
mod tls_support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Scratch, addrs, check_record, record};
use ferry_rpc::session::ServerConfig;
use ferry_rpc::wire::STREAM_WINDOW_MESSAGES;
use ferry_rpc::{
    Call, CallOptions, Channel, ChannelConfig, Code, LoopConfig, Metadata, MethodInfo, Mode, Raw, Reply,
    Request, Server, Service, Services, Shape, Status, StreamHandler, StreamOut, Unsent,
};
use ferry_testkit::{DEADLINE, wait_until};
use ferry_transport::{Payload, Received, method_id};
use ferry_wire::MessageView;
use ferry_wire::sample::{RECORD, Record};

/// Client-streaming, raw: answers "<messages> <bytes>" once the client ends.
const SUM: u16 = method_id("/ferry.test.Streams/Sum");
/// Server-streaming, raw: the request is a u32 LE count; answers that many messages, each its
/// index (u32 LE); headers echo the client's `x-echo`, trailers say `x-sent`.
const COUNT: u16 = method_id("/ferry.test.Streams/Count");
/// Bidirectional, raw: echoes each message, holding one while the window is spent.
const ECHO: u16 = method_id("/ferry.test.Streams/Echo");
/// Bidirectional, `Record`s read in place and echoed by reference.
const RECORDS: u16 = method_id("/ferry.test.Streams/Records");
/// Server-streaming: sends two messages, then fails with ABORTED and a trailer.
const ABORT: u16 = method_id("/ferry.test.Streams/Abort");
/// Bidirectional: never ends by itself; records how it was ended.
const HANG: u16 = method_id("/ferry.test.Streams/Hang");
/// Bidirectional: its handler panics on a message.
const PANICS: u16 = method_id("/ferry.test.Streams/Panics");
/// Unary, raw echo.
const UNARY: u16 = method_id("/ferry.test.Streams/Unary");

/// What the handlers saw.
#[derive(Debug, Default)]
struct Seen {
    /// COUNT messages sent, and whether a send found the window spent.
    count_sent: AtomicUsize,
    count_full: AtomicBool,
    /// Why HANG streams ended (their `on_cancel`).
    hang_ended: Mutex<Vec<Code>>,
    /// HANG streams open now.
    hang_open: AtomicUsize,
    /// RECORDS messages whose largest field was read inside the received frame (TCP).
    records_in_place: AtomicUsize,
}

#[derive(Debug, Clone, Default)]
struct Streams {
    seen: Arc<Seen>,
}

fn info(path: &'static str, request: bool, shape: Shape) -> MethodInfo {
    MethodInfo {
        path,
        id: method_id(path),
        request: request.then_some(&RECORD),
        mode: Mode::Foreground,
        shape,
    }
}

impl Service for Streams {
    fn methods(&self) -> Vec<MethodInfo> {
        vec![
            info("/ferry.test.Streams/Sum", false, Shape::ClientStreaming),
            info("/ferry.test.Streams/Count", false, Shape::ServerStreaming),
            info("/ferry.test.Streams/Echo", false, Shape::Bidirectional),
            info("/ferry.test.Streams/Records", true, Shape::Bidirectional),
            info("/ferry.test.Streams/Abort", false, Shape::ServerStreaming),
            info("/ferry.test.Streams/Hang", false, Shape::Bidirectional),
            info("/ferry.test.Streams/Panics", false, Shape::Bidirectional),
            info("/ferry.test.Streams/Unary", false, Shape::Unary),
        ]
    }

    fn call<'a>(&self, _: &Call<'a>, request: Request<'a>, reply: &mut Reply<'_>) -> Result<(), Status> {
        reply.send_payload(Payload::Bytes(request.incoming().bytes().unwrap_or_default()))
    }

    fn open(&self, call: &Call<'_>) -> Result<Box<dyn StreamHandler>, Status> {
        let seen = Arc::clone(&self.seen);
        Ok(match call.method() {
            SUM => Box::new(Sum::default()),
            COUNT => {
                if let Some(v) = call.metadata().get("x-echo") {
                    let mut headers = Metadata::new();
                    headers.insert("x-echo", v).expect("valid");
                    call.set_headers(headers);
                }
                Box::new(Count {
                    seen,
                    next: 0,
                    total: None,
                })
            }
            ECHO => Box::new(Echo::default()),
            RECORDS => Box::new(Records { seen }),
            ABORT => Box::new(Abort),
            PANICS => Box::new(Panics),
            HANG => {
                seen.hang_open.fetch_add(1, Ordering::SeqCst);
                Box::new(Hang { seen })
            }
            other => return Err(Status::new(Code::Unimplemented, format!("method {other}"))),
        })
    }
}

#[derive(Default)]
struct Sum {
    messages: usize,
    bytes: usize,
}

impl StreamHandler for Sum {
    fn on_message(&mut self, request: Request<'_>, _: &mut StreamOut<'_>) -> Result<(), Status> {
        self.messages += 1;
        self.bytes += request.incoming().bytes().map_or(0, <[u8]>::len);
        Ok(())
    }

    fn on_half_close(&mut self, out: &mut StreamOut<'_>) -> Result<(), Status> {
        let answer = format!("{} {}", self.messages, self.bytes);
        out.send_payload(Payload::Bytes(answer.as_bytes()))
            .map_err(|e| Status::new(Code::Internal, format!("{e:?}")))?;
        out.finish();
        Ok(())
    }
}

struct Count {
    seen: Arc<Seen>,
    next: u32,
    total: Option<u32>,
}

impl Count {
    /// Sends until the count is reached (then finishes) or the window is spent.
    fn pump(&mut self, out: &mut StreamOut<'_>) -> Result<(), Status> {
        let Some(total) = self.total else { return Ok(()) };
        while self.next < total {
            match out.send_payload(Payload::Bytes(&self.next.to_le_bytes())) {
                Ok(()) => {
                    self.next += 1;
                    self.seen.count_sent.fetch_add(1, Ordering::SeqCst);
                }
                Err(Unsent::Full) => {
                    self.seen.count_full.store(true, Ordering::SeqCst);
                    return Ok(());
                }
                Err(Unsent::Ended) => return Err(Status::new(Code::Internal, "ended under the handler")),
            }
        }
        let mut trailers = Metadata::new();
        trailers.insert("x-sent", total.to_string()).expect("valid");
        out.set_trailers(trailers);
        out.finish();
        Ok(())
    }
}

impl StreamHandler for Count {
    fn on_message(&mut self, request: Request<'_>, out: &mut StreamOut<'_>) -> Result<(), Status> {
        let bytes = request.incoming().bytes().unwrap_or_default();
        let n = <[u8; 4]>::try_from(bytes).map_err(|_| Status::new(Code::InvalidArgument, "not a u32"))?;
        self.total = Some(u32::from_le_bytes(n));
        self.pump(out)
    }

    fn on_half_close(&mut self, _: &mut StreamOut<'_>) -> Result<(), Status> {
        match self.total {
            Some(_) => Ok(()),
            None => Err(Status::new(Code::InvalidArgument, "no count came")),
        }
    }

    fn on_window(&mut self, out: &mut StreamOut<'_>) -> Result<(), Status> {
        self.pump(out)
    }
}

/// Echoes; a message the window refuses waits here (no more come until it goes).
#[derive(Default)]
struct Echo {
    held: Option<Vec<u8>>,
}

impl StreamHandler for Echo {
    fn on_message(&mut self, request: Request<'_>, out: &mut StreamOut<'_>) -> Result<(), Status> {
        assert!(self.held.is_none(), "a message came while one was held");
        let incoming = request.incoming();
        let sent = match incoming.shared() {
            // TCP: the received pool buffer itself, by reference.
            Some(buf) => out.send_payload(Payload::Gather {
                head: &[],
                parts: std::slice::from_ref(buf),
            }),
            None => out.send_payload(Payload::Bytes(incoming.bytes().unwrap_or_default())),
        };
        if sent == Err(Unsent::Full) {
            self.held = incoming.bytes().map(<[u8]>::to_vec);
        }
        Ok(())
    }

    fn on_half_close(&mut self, out: &mut StreamOut<'_>) -> Result<(), Status> {
        out.finish();
        Ok(())
    }

    fn on_window(&mut self, out: &mut StreamOut<'_>) -> Result<(), Status> {
        if let Some(msg) = &self.held
            && out.send_payload(Payload::Bytes(msg)) != Err(Unsent::Full)
        {
            self.held = None;
        }
        Ok(())
    }
}

struct Records {
    seen: Arc<Seen>,
}

impl StreamHandler for Records {
    fn on_message(&mut self, request: Request<'_>, out: &mut StreamOut<'_>) -> Result<(), Status> {
        let view = request.decode::<Record<'static>>()?;
        if let (Some(big), Some(frame)) = (
            view.fields().iter().max_by_key(|f| f.len()),
            request.incoming().bytes(),
        ) && frame.as_ptr_range().contains(&big.as_ptr())
        {
            self.seen.records_in_place.fetch_add(1, Ordering::SeqCst);
        }
        let resp = view
            .to_message(out.ctx())
            .map_err(|e| Status::new(Code::Internal, e.to_string()))?;
        match out.send(&resp) {
            Ok(()) => Ok(()),
            Err(e) => Err(Status::new(
                Code::Internal,
                format!("the test sends one at a time: {e:?}"),
            )),
        }
    }

    fn on_half_close(&mut self, out: &mut StreamOut<'_>) -> Result<(), Status> {
        out.finish();
        Ok(())
    }
}

struct Abort;

impl StreamHandler for Abort {
    fn on_message(&mut self, _: Request<'_>, out: &mut StreamOut<'_>) -> Result<(), Status> {
        for m in [&b"one"[..], b"two"] {
            out.send_payload(Payload::Bytes(m))
                .map_err(|e| Status::new(Code::Internal, format!("{e:?}")))?;
        }
        let mut trailers = Metadata::new();
        trailers.insert("x-why", "on purpose").expect("valid");
        Err(Status::new(Code::Aborted, "the handler gave up").with_metadata(trailers))
    }

    fn on_half_close(&mut self, _: &mut StreamOut<'_>) -> Result<(), Status> {
        Ok(())
    }
}

struct Panics;

impl StreamHandler for Panics {
    fn on_message(&mut self, _: Request<'_>, _: &mut StreamOut<'_>) -> Result<(), Status> {
        panic!("the stream handler panics")
    }

    fn on_half_close(&mut self, _: &mut StreamOut<'_>) -> Result<(), Status> {
        Ok(())
    }
}

struct Hang {
    seen: Arc<Seen>,
}

impl StreamHandler for Hang {
    fn on_message(&mut self, _: Request<'_>, out: &mut StreamOut<'_>) -> Result<(), Status> {
        out.send_payload(Payload::Bytes(b"tick"))
            .map_err(|e| Status::new(Code::Internal, format!("{e:?}")))
    }

    fn on_half_close(&mut self, _: &mut StreamOut<'_>) -> Result<(), Status> {
        Ok(())
    }

    fn on_cancel(&mut self, why: &Status) {
        self.seen.hang_ended.lock().unwrap().push(why.code);
        self.seen.hang_open.fetch_sub(1, Ordering::SeqCst);
    }
}

fn start(service: Streams, scratch: &Scratch, config: LoopConfig) -> Server {
    let services = Services::builder()
        .service(service)
        .expect("add")
        .build()
        .expect("services");
    let [tcp, shm] = addrs(scratch);
    Server::builder(services)
        .listen(&tcp)
        .listen(&shm)
        .listen("tls://127.0.0.1:0")
        .loops(1)
        .config(LoopConfig {
            conn: tls_support::with_tls(config.conn.clone()),
            ..config
        })
        .start()
        .expect("server starts")
}

/// Runs `test` against a fresh server over each transport.
fn each_transport(config: LoopConfig, test: impl Fn(&Streams, &str)) {
    let scratch = Scratch::new("loop-streams");
    let service = Streams::default();
    let server = start(service.clone(), &scratch, config);
    for addr in server.addrs() {
        let addr = addr.to_string();
        eprintln!("over {addr}");
        test(&service, &addr);
    }
    server.shutdown(Duration::from_secs(1));
}

fn bytes_of<M>(r: &ferry_rpc::Response<M>) -> Vec<u8> {
    r.frame().bytes().expect("a raw payload").to_vec()
}

fn channel(addr: &str) -> Channel {
    Channel::connect_with(
        addr,
        ChannelConfig {
            client: ferry_rpc::session::ClientConfig { window: 16 },
            conn: tls_support::with_tls(Default::default()),
            ..ChannelConfig::default()
        },
    )
    .expect("connect")
}

#[test]
fn client_streaming_sums_more_than_a_window_of_bytes() {
    each_transport(LoopConfig::default(), |_, addr| {
        let ch = channel(addr);
        let mut s = ch.open::<Raw>(SUM, &CallOptions::default()).expect("open");
        let sizes: Vec<usize> = (0..80).map(|i| [0, 7, 64 << 10][i % 3]).collect();
        for &n in &sizes {
            s.send_payload(Payload::Bytes(&vec![7u8; n])).expect("send");
        }
        s.end().expect("end");
        let answer = s.next().expect("one answer").expect("ok");
        let want = format!("{} {}", sizes.len(), sizes.iter().sum::<usize>());
        assert_eq!(bytes_of(&answer), want.as_bytes());
        assert!(s.next().is_none(), "the stream ends after its answer");
    });
}

#[test]
fn server_streaming_sends_ten_windows_in_order_with_headers_and_trailers() {
    each_transport(LoopConfig::default(), |_, addr| {
        let ch = channel(addr);
        let mut md = Metadata::new();
        md.insert("x-echo", "hello").expect("valid");
        let options = CallOptions {
            metadata: md,
            ..CallOptions::default()
        };
        let mut s = ch.open::<Raw>(COUNT, &options).expect("open");
        let n = 10 * STREAM_WINDOW_MESSAGES;
        s.send_payload(Payload::Bytes(&n.to_le_bytes())).expect("send");
        s.end().expect("end");
        assert_eq!(s.headers().get("x-echo"), Some(&b"hello"[..]));
        let got: Vec<u32> = s
            .by_ref()
            .map(|r| u32::from_le_bytes(bytes_of(&r.expect("message")).try_into().expect("u32")))
            .collect();
        assert_eq!(got, (0..n).collect::<Vec<_>>());
        assert_eq!(s.trailers().get("x-sent"), Some(n.to_string().as_bytes()));
    });
}

#[test]
fn a_server_outrunning_a_reader_that_does_not_read_stops_at_the_window() {
    each_transport(LoopConfig::default(), |service, addr| {
        let seen = &service.seen;
        seen.count_sent.store(0, Ordering::SeqCst);
        seen.count_full.store(false, Ordering::SeqCst);
        let ch = channel(addr);
        let mut s = ch.open::<Raw>(COUNT, &CallOptions::default()).expect("open");
        let n = 10 * STREAM_WINDOW_MESSAGES;
        s.send_payload(Payload::Bytes(&n.to_le_bytes())).expect("send");
        s.end().expect("end");
        // The client reads nothing: the server's handler is told the window is spent.
        wait_until("the server's send to find the window spent", DEADLINE, || {
            seen.count_full.load(Ordering::SeqCst)
        });
        assert_eq!(
            seen.count_sent.load(Ordering::SeqCst),
            STREAM_WINDOW_MESSAGES as usize,
            "the server sent exactly one window"
        );
        // Reading takes them all, in order, the window reopening as the client consumes.
        for (i, r) in s.by_ref().enumerate() {
            assert_eq!(bytes_of(&r.expect("message")), (i as u32).to_le_bytes());
        }
        assert_eq!(seen.count_sent.load(Ordering::SeqCst), n as usize);
    });
}

#[test]
fn bidirectional_echo_interleaved_and_ahead_of_the_reader() {
    each_transport(LoopConfig::default(), |_, addr| {
        let ch = channel(addr);
        let mut s = ch.open::<Raw>(ECHO, &CallOptions::default()).expect("open");
        // Ping-pong.
        for i in 0..50u32 {
            s.send_payload(Payload::Bytes(&i.to_le_bytes())).expect("send");
            assert_eq!(bytes_of(&s.recv().expect("echo").expect("ok")), i.to_le_bytes());
        }
        // A burst ahead of the reader: the server's window fills, its handler holds one echo
        // and the loop holds the messages after it, until the client reads and grants room.
        let burst = STREAM_WINDOW_MESSAGES + 8;
        for i in 0..burst {
            s.send_payload(Payload::Bytes(&i.to_le_bytes())).expect("send");
        }
        s.end().expect("end");
        let echoed: Vec<Vec<u8>> = s.by_ref().map(|r| bytes_of(&r.expect("echo"))).collect();
        let want: Vec<Vec<u8>> = (0..burst).map(|i| i.to_le_bytes().to_vec()).collect();
        assert_eq!(echoed, want);
    });
}

#[test]
fn ferry_messages_are_read_in_place_and_echoed() {
    let scratch = Scratch::new("loop-streams");
    let service = Streams::default();
    let server = start(service.clone(), &scratch, LoopConfig::default());
    for addr in server.addrs() {
        let ch = channel(&addr.to_string());
        let mut s = ch
            .open::<Record<'static>>(RECORDS, &CallOptions::default())
            .expect("open");
        for sizes in [&[][..], &[10, 100][..], &[4096, 3][..], &[70_000][..]] {
            let req = record(ch.context(), b"k", sizes);
            s.send(&req).expect("send");
            let resp = s.recv().expect("echo").expect("ok");
            check_record(&resp.view().expect("view"), b"k", sizes);
        }
        s.end().expect("end");
        assert!(s.recv().is_none());
    }
    server.shutdown(Duration::from_secs(1));
    // Over TCP every request frame is one buffer the fields are read inside.
    assert!(service.seen.records_in_place.load(Ordering::SeqCst) >= 3);
}

#[test]
fn the_server_fails_a_stream_mid_way_with_trailers() {
    each_transport(LoopConfig::default(), |_, addr| {
        let ch = channel(addr);
        let mut s = ch.open::<Raw>(ABORT, &CallOptions::default()).expect("open");
        s.send_payload(Payload::Bytes(b"go")).expect("send");
        assert_eq!(bytes_of(&s.recv().expect("one").expect("ok")), b"one");
        assert_eq!(bytes_of(&s.recv().expect("two").expect("ok")), b"two");
        let err = s.recv().expect("the end").expect_err("aborted");
        assert_eq!(err.code, Code::Aborted, "{err}");
        assert_eq!(err.metadata.get("x-why"), Some(&b"on purpose"[..]));
        assert!(s.recv().is_none());
        let err = s.send_payload(Payload::Bytes(b"late")).expect_err("over");
        assert_eq!(err.code, Code::Aborted, "{err}");
        // The channel goes on.
        let r = ch.call_payload(UNARY, Payload::Bytes(b"still")).expect("unary");
        assert_eq!(bytes_of(&r), b"still");
    });
}

#[test]
fn dropping_a_stream_cancels_its_handler() {
    each_transport(LoopConfig::default(), |service, addr| {
        let seen = &service.seen;
        let before = seen.hang_ended.lock().unwrap().len();
        let ch = channel(addr);
        let mut s = ch.open::<Raw>(HANG, &CallOptions::default()).expect("open");
        s.send_payload(Payload::Bytes(b"x")).expect("send");
        assert_eq!(bytes_of(&s.recv().expect("tick").expect("ok")), b"tick");
        drop(s);
        wait_until("the handler to see the cancellation", DEADLINE, || {
            seen.hang_ended.lock().unwrap().len() == before + 1
        });
        assert_eq!(seen.hang_ended.lock().unwrap()[before], Code::Cancelled);
        // The channel goes on.
        assert!(ch.call_payload(UNARY, Payload::Bytes(b"ok")).is_ok());
    });
}

#[test]
fn a_deadline_ends_a_stream_mid_way_on_both_sides() {
    each_transport(LoopConfig::default(), |service, addr| {
        let seen = &service.seen;
        let before = seen.hang_ended.lock().unwrap().len();
        let ch = channel(addr);
        let options = CallOptions {
            timeout: Some(Duration::from_secs(1)),
            ..CallOptions::default()
        };
        let mut s = ch.open::<Raw>(HANG, &options).expect("open");
        s.send_payload(Payload::Bytes(b"x")).expect("send");
        assert_eq!(bytes_of(&s.recv().expect("tick").expect("ok")), b"tick");
        let err = s.recv().expect("the end").expect_err("expired");
        assert_eq!(err.code, Code::DeadlineExceeded, "{err}");
        let err = s.send_payload(Payload::Bytes(b"late")).expect_err("over");
        assert_eq!(err.code, Code::DeadlineExceeded, "{err}");
        wait_until("the handler to see its stream end", DEADLINE, || {
            seen.hang_ended.lock().unwrap().len() == before + 1
        });
        // Whichever came first at the server: its own deadline or the client's cancel.
        let code = seen.hang_ended.lock().unwrap()[before];
        assert!(
            matches!(code, Code::DeadlineExceeded | Code::Cancelled),
            "{code:?}"
        );
    });
}

#[test]
fn opening_past_the_bound_on_calls_in_progress_is_refused() {
    let config = LoopConfig {
        server: ServerConfig { max_in_flight: 2 },
        ..LoopConfig::default()
    };
    each_transport(config, |service, addr| {
        let ch = channel(addr);
        let mut open: Vec<_> = (0..2)
            .map(|_| ch.open::<Raw>(HANG, &CallOptions::default()).expect("open"))
            .collect();
        // The server has them (each answered a message) before the third comes.
        for s in &mut open {
            s.send_payload(Payload::Bytes(b"x")).expect("send");
            assert!(s.recv().expect("tick").is_ok());
        }
        let mut third = ch.open::<Raw>(HANG, &CallOptions::default()).expect("open");
        let err = third.recv().expect("refused").expect_err("refused");
        assert_eq!(err.code, Code::ResourceExhausted, "{err}");
        drop(open);
        wait_until("the open streams to end", DEADLINE, || {
            service.seen.hang_open.load(Ordering::SeqCst) == 0
        });
    });
}

#[test]
fn calls_of_the_wrong_shape_are_refused_naming_the_method() {
    each_transport(LoopConfig::default(), |_, addr| {
        let ch = channel(addr);
        let mut s = ch.open::<Raw>(UNARY, &CallOptions::default()).expect("open");
        let err = s.recv().expect("refused").expect_err("refused");
        assert_eq!(err.code, Code::Unimplemented, "{err}");
        assert!(err.message.contains("/ferry.test.Streams/Unary"), "{err}");
        assert!(err.message.contains("unary"), "{err}");
        let err = ch.call_payload(ECHO, Payload::Bytes(b"x")).expect_err("refused");
        assert_eq!(err.code, Code::Unimplemented, "{err}");
        assert!(err.message.contains("/ferry.test.Streams/Echo"), "{err}");
        assert!(err.message.contains("bidirectional"), "{err}");
    });
}

#[test]
fn a_stream_nobody_reads_does_not_stall_the_others_on_its_session() {
    each_transport(LoopConfig::default(), |_, addr| {
        let ch = channel(addr);
        let mut slow = ch.open::<Raw>(ECHO, &CallOptions::default()).expect("open");
        // More echoes than a window, which the client does not read: the server's handler
        // for it holds the last one, paused.
        let slow_sent = STREAM_WINDOW_MESSAGES + 1;
        for i in 0..slow_sent {
            slow.send_payload(Payload::Bytes(&i.to_le_bytes())).expect("send");
        }
        let mut busy: Vec<_> = (0..6)
            .map(|_| ch.open::<Raw>(ECHO, &CallOptions::default()).expect("open"))
            .collect();
        // Over shared memory the unread echoes are copied out of the server's memory, whose
        // blocks are acknowledged in order: held in place they would stop the others once
        // the server had published its credits' worth of blocks past them.
        for round in 0..3 * STREAM_WINDOW_MESSAGES {
            for (k, s) in busy.iter_mut().enumerate() {
                let msg = [k as u8, round as u8];
                s.send_payload(Payload::Bytes(&msg)).expect("send");
                assert_eq!(bytes_of(&s.recv().expect("echo").expect("ok")), msg);
            }
        }
        for mut s in busy {
            s.end().expect("end");
            assert!(s.recv().is_none());
        }
        slow.end().expect("end");
        let got: Vec<Vec<u8>> = slow.map(|r| bytes_of(&r.expect("echo"))).collect();
        let want: Vec<Vec<u8>> = (0..slow_sent).map(|i| i.to_le_bytes().to_vec()).collect();
        assert_eq!(got, want);
    });
}

/// Round trips on the busy stream of the stall tests: many more shared-memory blocks each way
/// than the transport's credits (`ShmConfig::credits`, 256 by default).
const PAST_THE_CREDITS: u32 = 4096;

/// Runs `scenario` on a thread of its own and waits for it at most [`DEADLINE`]: a stalled
/// session fails the test instead of hanging it (a blocking shared-memory send waits for
/// credits for ever). The thread of a stalled run is left behind.
fn within_deadline(what: &str, scenario: impl FnOnce() + Send + 'static) {
    let thread = std::thread::spawn(scenario);
    wait_until(what, DEADLINE, || thread.is_finished());
    if let Err(panic) = thread.join() {
        std::panic::resume_unwind(panic);
    }
}

/// `PAST_THE_CREDITS` echoes on a new ECHO stream of `ch`, each read before the next is sent.
fn echo_past_the_credits(ch: &Channel) {
    let mut busy = ch.open::<Raw>(ECHO, &CallOptions::default()).expect("open");
    for i in 0..PAST_THE_CREDITS {
        busy.send_payload(Payload::Bytes(&i.to_le_bytes())).expect("send");
        assert_eq!(
            bytes_of(&busy.recv().expect("echo").expect("ok")),
            i.to_le_bytes()
        );
    }
    busy.end().expect("end");
    assert!(busy.recv().is_none());
}

/// Issue 26, the blocking client: a stream whose messages the client leaves unread held them
/// in place in the server's shared memory, whose blocks are acknowledged in order, so the
/// other streams of the channel stalled once the server had published `credits` blocks past
/// them. They are copied out instead while their reader does not take them.
#[test]
fn issue_26_an_unread_stream_does_not_stall_its_blocking_channel() {
    each_transport(LoopConfig::default(), |_, addr| {
        let addr = addr.to_string();
        within_deadline("the busy stream to run past the credits", move || {
            let ch = channel(&addr);
            // A window of messages the client does not read (the server's handler then waits
            // for room), all of them arrived before the busy stream's first echo.
            let mut unread = ch.open::<Raw>(COUNT, &CallOptions::default()).expect("open");
            let n = 2 * STREAM_WINDOW_MESSAGES;
            unread
                .send_payload(Payload::Bytes(&n.to_le_bytes()))
                .expect("send");
            unread.end().expect("end");
            echo_past_the_credits(&ch);
            // The first window came while the busy stream's reader waited: each was copied.
            let copies = match addr.starts_with("shm:") {
                true => u64::from(STREAM_WINDOW_MESSAGES),
                false => 0,
            };
            assert_eq!(ch.held_copies(), copies);
            let got: Vec<u32> = unread
                .by_ref()
                .map(|r| u32::from_le_bytes(bytes_of(&r.expect("message")).try_into().expect("u32")))
                .collect();
            assert_eq!(got, (0..n).collect::<Vec<_>>());
            // The second came while its own reader waited: read in place.
            assert_eq!(ch.held_copies(), copies);
        });
    });
}

/// Issue 26, the event loop's server streams: the messages a paused handler's stream gets
/// (it sent a window to a client that does not read it) wait in the loop; held in place in the
/// client's shared memory they stalled the client's other streams of the session once it had
/// published `credits` blocks past them. They are copied out instead while the handler is
/// paused, and `LoopStats::held_copies` counts them.
#[test]
fn issue_26_a_paused_stream_handler_does_not_stall_its_session() {
    let scratch = Scratch::new("loop-streams");
    let server = start(Streams::default(), &scratch, LoopConfig::default());
    // Beyond the window the handler echoes: the first waits in the handler, the rest in the loop.
    let beyond = 8;
    for addr in server.addrs() {
        let addr = addr.to_string();
        within_deadline("the busy stream to run past the credits", move || {
            let ch = channel(&addr);
            let mut paused = ch.open::<Raw>(ECHO, &CallOptions::default()).expect("open");
            let sent = STREAM_WINDOW_MESSAGES + beyond;
            for i in 0..sent {
                paused
                    .send_payload(Payload::Bytes(&i.to_le_bytes()))
                    .expect("send");
            }
            echo_past_the_credits(&ch);
            paused.end().expect("end");
            let got: Vec<Vec<u8>> = paused.map(|r| bytes_of(&r.expect("echo"))).collect();
            let want: Vec<Vec<u8>> = (0..sent).map(|i| i.to_le_bytes().to_vec()).collect();
            assert_eq!(got, want);
        });
    }
    // Over shared memory (TCP frames are pool buffers already) the messages that waited in the
    // loop were copied, each once.
    let copies: u64 = server
        .shutdown(Duration::from_secs(1))
        .iter()
        .map(|report| report.stats.held_copies)
        .sum();
    assert_eq!(copies, u64::from(beyond - 1));
}

#[test]
fn a_message_that_does_not_decode_or_a_panic_fails_the_stream_and_the_server_goes_on() {
    each_transport(LoopConfig::default(), |_, addr| {
        let ch = channel(addr);
        let mut s = ch
            .open::<Record<'static>>(RECORDS, &CallOptions::default())
            .expect("open");
        s.send_payload(Payload::Bytes(&[0xff; 7])).expect("send");
        let err = s.recv().expect("the end").expect_err("invalid");
        assert_eq!(err.code, Code::InvalidArgument, "{err}");
        let mut s = ch.open::<Raw>(PANICS, &CallOptions::default()).expect("open");
        s.send_payload(Payload::Bytes(b"x")).expect("send");
        let err = s.recv().expect("the end").expect_err("panicked");
        assert_eq!(err.code, Code::Internal, "{err}");
        assert!(err.message.contains("the stream handler panics"), "{err}");
        let r = ch.call_payload(UNARY, Payload::Bytes(b"on")).expect("unary");
        assert_eq!(bytes_of(&r), b"on");
    });
}
