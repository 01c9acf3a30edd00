//! Call metadata and per-call options end to end, over TCP and shared memory: the blocking
//! `Channel` and the `AsyncChannel` call the event-loop `Server` (foreground and background
//! handlers) and the tokio `AsyncServer`. Request metadata reaches the handler; the handler's
//! response headers reach `Response::headers` and trailers `Response::trailers` (or
//! `Status::metadata` when the call fails);
//! `CallOptions::timeout` overrides the channel's timeout, and the handler sees that deadline.

#[macro_use]
mod tokio_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ferry_rpc::tokio::{
    AsyncCall, AsyncChannel, AsyncRequest, AsyncServer, AsyncService, AsyncServices, LocalBoxFuture,
};
use ferry_rpc::{
    Call, CallOptions, Channel, Code, Encoded, LoopConfig, Metadata, MethodInfo, Mode, Reply, Request,
    Server, Service, Services, Shape, Status,
};
use ferry_transport::{Payload, Received, method_id};
use ferry_wire::sample::{RECORD, Record};
use ferry_wire::{Context, Message, MessageView};

use tokio_support::{Transport, flag, runtime, within};

/// Answers the request's bytes, with response metadata that tells what the handler saw.
const RAW: u16 = method_id("/ferry.test.Meta/Raw");
/// The same on the worker pool (event-loop server).
const RAW_BG: u16 = method_id("/ferry.test.Meta/RawBg");
/// Sets response metadata, then fails with `NOT_FOUND`.
const FAIL: u16 = method_id("/ferry.test.Meta/Fail");
/// Fails with a status that carries its own metadata (and sets other metadata, overridden).
const FAIL_STATUS: u16 = method_id("/ferry.test.Meta/FailStatus");
/// Echoes a `Record` (a Ferry message), with the same metadata as `RAW`.
const RECORD_ECHO: u16 = method_id("/ferry.test.Meta/Record");

fn methods() -> Vec<MethodInfo> {
    let info = |path, mode, request| MethodInfo {
        path,
        id: method_id(path),
        request,
        mode,
        shape: Shape::Unary,
    };
    vec![
        info("/ferry.test.Meta/Raw", Mode::Foreground, None),
        info("/ferry.test.Meta/RawBg", Mode::Background, None),
        info("/ferry.test.Meta/Fail", Mode::Foreground, None),
        info("/ferry.test.Meta/FailStatus", Mode::Foreground, None),
        info("/ferry.test.Meta/Record", Mode::Foreground, Some(&RECORD)),
    ]
}

fn md(entries: &[(&str, &[u8])]) -> Metadata {
    let mut md = Metadata::new();
    for (k, v) in entries {
        md.append(k, *v).expect("a valid entry");
    }
    md
}

/// What a handler answers with: the request's entries under `echo-<key>`, the milliseconds
/// left to its deadline (or `none`), and where it ran.
fn seen(request: &Metadata, deadline: Option<Instant>, ran: &str) -> Metadata {
    let mut out = Metadata::new();
    for (k, v) in request.iter() {
        out.append(&format!("echo-{k}"), v).expect("fits");
    }
    let left = deadline.map_or("none".to_string(), |d| {
        d.saturating_duration_since(Instant::now())
            .as_millis()
            .to_string()
    });
    out.insert("deadline-ms", left).expect("fits");
    out.insert("ran", ran).expect("fits");
    out
}

/// The event loop's service.
struct LoopMeta;

impl Service for LoopMeta {
    fn methods(&self) -> Vec<MethodInfo> {
        methods()
    }

    fn call<'a>(&self, call: &Call<'a>, request: Request<'a>, reply: &mut Reply<'_>) -> Result<(), Status> {
        let ran = if call.method() == RAW_BG {
            "background"
        } else {
            "foreground"
        };
        call.set_headers(seen(call.metadata(), call.deadline(), ran));
        call.set_trailers(md(&[("x-trailer", b"t")]));
        match call.method() {
            RAW | RAW_BG => {
                reply.send_payload(Payload::Bytes(request.incoming().bytes().unwrap_or_default()))
            }
            RECORD_ECHO => {
                let view = request.decode::<Record<'static>>()?;
                let resp = view
                    .to_message(call.ctx())
                    .map_err(|e| Status::new(Code::Internal, e.to_string()))?;
                reply.send(&resp)
            }
            FAIL => {
                call.set_trailers(md(&[("why", b"set")]));
                Err(Status::new(Code::NotFound, "no such thing"))
            }
            FAIL_STATUS => {
                Err(Status::new(Code::PermissionDenied, "no").with_metadata(md(&[("why", b"status")])))
            }
            m => Err(Status::new(Code::Unimplemented, format!("method {m}"))),
        }
    }
}

/// The tokio server's service (no background mode: every handler is a task).
struct AsyncMeta;

impl AsyncService for AsyncMeta {
    fn methods(&self) -> Vec<MethodInfo> {
        methods()
    }

    fn call(&self, call: AsyncCall, request: AsyncRequest<()>) -> LocalBoxFuture<Result<Encoded, Status>> {
        Box::pin(async move {
            // Set after an await: the metadata goes with the answer, whenever it comes.
            tokio::task::yield_now().await;
            call.set_headers(seen(call.metadata(), call.deadline(), "task"));
            call.set_trailers(md(&[("x-trailer", b"t")]));
            match call.method() {
                RAW | RAW_BG => Ok(Encoded::bytes(request.bytes().unwrap_or_default())),
                RECORD_ECHO => {
                    let request = request.typed::<Record<'static>>();
                    let view = request.view()?;
                    let mut r = Record::new(Context::copy_only());
                    r.set_key(view.key().to_vec());
                    Encoded::message(&r)
                }
                FAIL => {
                    let clone = call.clone();
                    clone.set_trailers(md(&[("why", b"set")]));
                    Err(Status::new(Code::NotFound, "no such thing"))
                }
                FAIL_STATUS => {
                    Err(Status::new(Code::PermissionDenied, "no").with_metadata(md(&[("why", b"status")])))
                }
                m => Err(Status::new(Code::Unimplemented, format!("method {m}"))),
            }
        })
    }
}

/// The event-loop server (two workers for the background method) on a new address.
fn loop_server(t: Transport) -> (Server, Option<tokio_support::Scratch>) {
    let services = Services::builder()
        .service(LoopMeta)
        .expect("add")
        .workers(2)
        .build()
        .expect("services");
    let (addr, scratch) = t.bind_addr();
    let server = Server::builder(services)
        .listen(&addr)
        .loops(1)
        .start()
        .expect("start the event-loop server");
    (server, scratch)
}

/// The tokio server on a thread of its own; stops when the flag is set.
struct AsyncServerThread {
    addr: String,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    _scratch: Option<tokio_support::Scratch>,
}

impl AsyncServerThread {
    fn start(t: Transport) -> AsyncServerThread {
        let (addr, scratch) = t.bind_addr();
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let local = tokio::task::LocalSet::new();
                local.block_on(&runtime(), async move {
                    let services = AsyncServices::new().service(AsyncMeta).expect("services");
                    let server = AsyncServer::bind(services, &[&addr], LoopConfig::default()).expect("bind");
                    tx.send(server.addrs()[0].to_string()).expect("report");
                    server.run(flag(stop), Duration::ZERO).await.expect("run");
                });
            })
        };
        let addr = rx.recv_timeout(Duration::from_secs(10)).expect("the address");
        AsyncServerThread {
            addr,
            stop,
            thread: Some(thread),
            _scratch: scratch,
        }
    }
}

impl Drop for AsyncServerThread {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A client, blocking or async, behind one synchronous face.
// One client of each kind per test: their sizes do not matter.
#[allow(clippy::large_enum_variant)]
enum Client {
    Blocking(Channel),
    Async(AsyncChannel, tokio::task::LocalSet, tokio::runtime::Runtime),
}

impl Client {
    fn connect(addr: &str, blocking: bool) -> Client {
        if blocking {
            return Client::Blocking(Channel::connect(addr).expect("connect"));
        }
        let (local, rt) = (tokio::task::LocalSet::new(), runtime());
        let chan = local.block_on(&rt, AsyncChannel::connect(addr)).expect("connect");
        Client::Async(chan, local, rt)
    }

    fn set_timeout(&self, timeout: Option<Duration>) {
        match self {
            Client::Blocking(c) => c.set_timeout(timeout),
            Client::Async(c, ..) => c.set_timeout(timeout),
        }
    }

    /// A raw call: the response bytes and metadata.
    fn call(
        &self,
        method: u16,
        payload: &[u8],
        options: &CallOptions,
    ) -> Result<(Vec<u8>, Metadata), Status> {
        let r = match self {
            Client::Blocking(c) => c.call_payload_with(method, Payload::Bytes(payload), options),
            Client::Async(c, local, rt) => {
                local.block_on(rt, c.call_payload_with(method, Payload::Bytes(payload), options))
            }
        }?;
        assert_eq!(
            r.trailers(),
            &md(&[("x-trailer", b"t")]),
            "trailers come with the response"
        );
        Ok((r.frame().bytes().expect("raw").to_vec(), r.headers().clone()))
    }

    /// A call with a Ferry message and no response type (`()`): the response is read against
    /// the descriptor at run time.
    fn call_record(&self, key: &[u8], options: &CallOptions) -> (Vec<u8>, Metadata) {
        let ctx = Context::copy_only();
        let mut record = Record::new(ctx);
        record.set_key(key);
        let r = match self {
            Client::Blocking(c) => c.call_with::<()>(RECORD_ECHO, &record, options),
            Client::Async(c, local, rt) => {
                local.block_on(rt, c.call_with::<()>(RECORD_ECHO, &record, options))
            }
        }
        .expect("record echo");
        let view = r.frame().view(&RECORD, r.limits()).expect("a Record");
        let view = Record::view_of(view).expect("validated");
        assert_eq!(
            r.trailers(),
            &md(&[("x-trailer", b"t")]),
            "trailers come with the response"
        );
        (view.key().to_vec(), r.headers().clone())
    }
}

/// Milliseconds left, as the handler reported them.
fn deadline_ms(md: &Metadata) -> Option<u64> {
    std::str::from_utf8(md.get("deadline-ms")?).ok()?.parse().ok()
}

/// Everything a client checks against a server whose handlers run where `ran` says.
fn check(client: &Client, methods: &[(u16, &str)]) {
    let headers = md(&[
        ("x-user", b"ann"),
        ("trace-bin", &[0, 255, 1]),
        ("x-user", b"bob"),
    ]);
    client.set_timeout(Some(Duration::from_secs(600)));
    for &(method, ran) in methods {
        // Metadata and a per-call timeout shorter than the channel's.
        let options = CallOptions {
            timeout: Some(Duration::from_secs(7)),
            metadata: headers.clone(),
        };
        let (bytes, got) = client.call(method, b"hello", &options).expect("raw call");
        assert_eq!(bytes, b"hello");
        assert_eq!(got.get_all("echo-x-user").collect::<Vec<_>>(), [b"ann", b"bob"]);
        assert_eq!(got.get("echo-trace-bin"), Some(&[0u8, 255, 1][..]));
        assert_eq!(got.get("ran"), Some(ran.as_bytes()));
        let left = deadline_ms(&got).expect("the handler saw a deadline");
        assert!(
            (1_000..=7_000).contains(&left),
            "{left} ms left: the call's 7 s, not the channel's 600 s"
        );

        // No options: the channel's timeout, no metadata (and no metadata frame).
        let (_, got) = client
            .call(method, b"plain", &CallOptions::default())
            .expect("raw call");
        assert_eq!(got.iter().filter(|(k, _)| k.starts_with("echo-")).count(), 0);
        let left = deadline_ms(&got).expect("the channel's deadline");
        assert!(left > 60_000, "{left} ms left: the channel's 600 s");
    }
    client.set_timeout(None);
    let (_, got) = client.call(RAW, b"x", &CallOptions::default()).expect("raw call");
    assert_eq!(got.get("deadline-ms"), Some(&b"none"[..]));

    // A Ferry message with `M = ()`, read by descriptor.
    let options = CallOptions {
        timeout: None,
        metadata: md(&[("x-record", b"1")]),
    };
    let (key, got) = client.call_record(b"the key", &options);
    assert_eq!(key, b"the key");
    assert_eq!(got.get("echo-x-record"), Some(&b"1"[..]));

    // Failures carry the metadata sent before their status.
    let err = client.call(FAIL, b"", &options).expect_err("fails");
    assert_eq!(err.code, Code::NotFound, "{err}");
    assert_eq!(err.metadata, md(&[("why", b"set")]));
    let err = client.call(FAIL_STATUS, b"", &options).expect_err("fails");
    assert_eq!(err.code, Code::PermissionDenied, "{err}");
    assert_eq!(
        err.metadata,
        md(&[("why", b"status")]),
        "the status's own metadata wins"
    );
    // A failure that no handler saw carries none.
    let err = client.call(4242, b"", &options).expect_err("no such method");
    assert_eq!(err.code, Code::Unimplemented, "{err}");
    assert!(err.metadata.is_empty());
    // The connection is still good after all of that.
    assert_eq!(
        client.call(RAW, b"again", &options).expect("raw call").0,
        b"again"
    );
}

both!(
    channel_to_loop_server,
    async_channel_to_loop_server,
    channel_to_async_server,
    async_channel_to_async_server,
);

const LOOP_METHODS: &[(u16, &str)] = &[(RAW, "foreground"), (RAW_BG, "background")];
const ASYNC_METHODS: &[(u16, &str)] = &[(RAW, "task")];

fn channel_to_loop_server(t: Transport) {
    within("Channel -> Server", 60, move || {
        let (server, _scratch) = loop_server(t);
        let client = Client::connect(&server.addrs()[0].to_string(), true);
        check(&client, LOOP_METHODS);
        drop(client);
        server.shutdown(Duration::ZERO);
    });
}

fn async_channel_to_loop_server(t: Transport) {
    within("AsyncChannel -> Server", 60, move || {
        let (server, _scratch) = loop_server(t);
        let client = Client::connect(&server.addrs()[0].to_string(), false);
        check(&client, LOOP_METHODS);
        drop(client);
        server.shutdown(Duration::ZERO);
    });
}

fn channel_to_async_server(t: Transport) {
    within("Channel -> AsyncServer", 60, move || {
        let server = AsyncServerThread::start(t);
        let client = Client::connect(&server.addr, true);
        check(&client, ASYNC_METHODS);
        drop(client);
    });
}

fn async_channel_to_async_server(t: Transport) {
    within("AsyncChannel -> AsyncServer", 60, move || {
        let server = AsyncServerThread::start(t);
        let client = Client::connect(&server.addr, false);
        check(&client, ASYNC_METHODS);
        drop(client);
    });
}
