//! The test service every driver test serves, and helpers to start servers and clients.

#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ferry_rpc::{Call, Code, MethodInfo, Mode, Reply, Request, Service, Shape, Status};
use ferry_transport::{Payload, method_id};
use ferry_wire::sample::{RECORD, Record};
use ferry_wire::{Message, MessageView};

/// Echoes a `Record` in the foreground: the response's fields reference the request's.
pub const ECHO: u16 = method_id("/ferry.test.Rpc/Echo");
/// The same in the background.
pub const ECHO_BG: u16 = method_id("/ferry.test.Rpc/EchoBg");
/// Echoes raw bytes.
pub const RAW: u16 = method_id("/ferry.test.Rpc/Raw");
/// Background: sleeps the milliseconds its key says (in steps, stopping if cancelled).
pub const SLOW: u16 = method_id("/ferry.test.Rpc/Slow");
/// Foreground: panics.
pub const PANIC: u16 = method_id("/ferry.test.Rpc/Panic");
/// Foreground: fails with NOT_FOUND.
pub const MISSING: u16 = method_id("/ferry.test.Rpc/Missing");
/// Foreground: answers the caller's certificate identity (`Call::peer`), or `none`.
pub const WHOAMI: u16 = method_id("/ferry.test.Rpc/WhoAmI");
/// The same in the background.
pub const WHOAMI_BG: u16 = method_id("/ferry.test.Rpc/WhoAmIBg");

/// What the handlers saw.
#[derive(Debug, Default)]
pub struct Seen {
    /// Slow calls started.
    pub slow_started: AtomicUsize,
    /// Slow calls that saw their cancellation and stopped early.
    pub slow_cancelled: AtomicUsize,
    /// Slow handlers running now.
    pub slow_running: AtomicUsize,
    /// Slow calls that slept their whole time.
    pub slow_finished: AtomicUsize,
    /// Echo calls whose largest request field was viewed inside the received frame, and
    /// whose response referenced that same memory (pointer identity).
    pub zero_copy: Mutex<Vec<(bool, bool)>>,
    /// Raw calls whose request came as a pool buffer (`Incoming::shared`: TCP), which the
    /// handler then sent back by reference, and raw calls whose request did not. Counters,
    /// not a record per call: the soak makes tens of millions of calls.
    pub raw_shared: AtomicUsize,
    pub raw_not_shared: AtomicUsize,
}

/// The test service.
#[derive(Debug, Clone, Default)]
pub struct TestService {
    /// What the handlers saw.
    pub seen: Arc<Seen>,
}

fn info(path: &'static str, request: bool, mode: Mode) -> MethodInfo {
    MethodInfo {
        path,
        id: method_id(path),
        request: request.then_some(&RECORD),
        mode,
        shape: Shape::Unary,
    }
}

impl Service for TestService {
    fn methods(&self) -> Vec<MethodInfo> {
        vec![
            info("/ferry.test.Rpc/Echo", true, Mode::Foreground),
            info("/ferry.test.Rpc/EchoBg", true, Mode::Background),
            info("/ferry.test.Rpc/Raw", false, Mode::Foreground),
            info("/ferry.test.Rpc/Slow", true, Mode::Background),
            info("/ferry.test.Rpc/Panic", false, Mode::Foreground),
            info("/ferry.test.Rpc/Missing", false, Mode::Foreground),
            info("/ferry.test.Rpc/WhoAmI", false, Mode::Foreground),
            info("/ferry.test.Rpc/WhoAmIBg", false, Mode::Background),
        ]
    }

    fn call<'a>(&self, call: &Call<'a>, request: Request<'a>, reply: &mut Reply<'_>) -> Result<(), Status> {
        match call.method() {
            ECHO | ECHO_BG => {
                let view = request.decode::<Record<'static>>()?;
                let resp = view
                    .to_message(call.ctx())
                    .map_err(|e| Status::new(Code::InvalidArgument, e.to_string()))?;
                if let Some(big) = view.fields().iter().max_by_key(|f| f.len()) {
                    let frame = request.incoming().bytes().unwrap_or_default();
                    let inside = frame.as_ptr_range().contains(&big.as_ptr());
                    let referenced = resp
                        .fields()
                        .iter()
                        .any(|f| f.is_zero_copy() && f.as_slice().as_ptr() == big.as_ptr());
                    self.seen.zero_copy.lock().unwrap().push((inside, referenced));
                }
                reply.send(&resp)
            }
            RAW => {
                let incoming = request.incoming();
                let counter = match incoming.shared() {
                    Some(_) => &self.seen.raw_shared,
                    None => &self.seen.raw_not_shared,
                };
                counter.fetch_add(1, Ordering::Relaxed);
                match incoming.shared() {
                    // The received pool buffer itself, as a gather entry: no copy.
                    Some(buf) => reply.send_payload(Payload::Gather {
                        head: &[],
                        parts: std::slice::from_ref(buf),
                    }),
                    None => reply.send_payload(Payload::Bytes(incoming.bytes().unwrap_or_default())),
                }
            }
            SLOW => {
                let view = request.decode::<Record<'static>>()?;
                let ms: u64 = std::str::from_utf8(view.key())
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0);
                self.seen.slow_started.fetch_add(1, Ordering::SeqCst);
                self.seen.slow_running.fetch_add(1, Ordering::SeqCst);
                let _running = Running(&self.seen.slow_running);
                for _ in 0..ms {
                    if call.is_cancelled() {
                        self.seen.slow_cancelled.fetch_add(1, Ordering::SeqCst);
                        return Err(Status::new(Code::Cancelled, "stopped"));
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                self.seen.slow_finished.fetch_add(1, Ordering::SeqCst);
                let resp = view
                    .to_message(call.ctx())
                    .map_err(|e| Status::new(Code::Internal, e.to_string()))?;
                reply.send(&resp)
            }
            PANIC => panic!("the test handler panics"),
            MISSING => Err(Status::new(Code::NotFound, "no such thing")),
            WHOAMI | WHOAMI_BG => {
                let who = call.peer().map_or_else(|| "none".to_string(), |p| p.to_string());
                reply.send_payload(Payload::Bytes(who.as_bytes()))
            }
            other => Err(Status::new(Code::Unimplemented, format!("method {other}"))),
        }
    }
}

/// Counts a running handler down when it returns.
struct Running<'a>(&'a AtomicUsize);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A record with `key` and fields of the given sizes (filled with their index + 1), built in
/// `ctx`'s pool when they are large enough to be referenced.
pub fn record<'a>(ctx: &'a ferry_wire::Context, key: &'a [u8], sizes: &[usize]) -> Record<'a> {
    let mut r = Record::new(ctx);
    r.set_key(key);
    for (i, &n) in sizes.iter().enumerate() {
        let fill = vec![i as u8 + 1; n];
        match ctx.pool() {
            Some(pool) if n >= 512 => r.append_field(pool.copy_from(&fill).expect("pool")),
            _ => r.append_field(fill),
        }
    }
    r
}

/// Checks that `view` holds what [`record`] built.
pub fn check_record(view: &<Record<'static> as Message<'static>>::View<'_>, key: &[u8], sizes: &[usize]) {
    assert_eq!(view.key(), key);
    let fields: Vec<&[u8]> = view.fields().iter().collect();
    assert_eq!(fields.len(), sizes.len());
    for (i, (f, &n)) in fields.iter().zip(sizes).enumerate() {
        assert_eq!(f.len(), n, "field {i}");
        assert!(f.iter().all(|&b| b == i as u8 + 1), "field {i} contents");
    }
}

pub use ferry_testkit::Scratch;

/// Both transports' addresses to listen on: TCP on a free port and a shared-memory socket.
pub fn addrs(scratch: &Scratch) -> [String; 2] {
    ["tcp://127.0.0.1:0".to_string(), scratch.shm("rpc")]
}

/// A server of `service` (2 workers) on TCP and shared memory, with `loops` loops, `config`,
/// and a metrics endpoint.
pub fn serve(
    service: TestService,
    scratch: &Scratch,
    loops: usize,
    config: ferry_rpc::LoopConfig,
) -> ferry_rpc::Server {
    let services = ferry_rpc::Services::builder()
        .service(service)
        .expect("add")
        .workers(2)
        .build()
        .expect("services");
    let [tcp, shm] = addrs(scratch);
    ferry_rpc::Server::builder(services)
        .listen(&tcp)
        .listen(&shm)
        .loops(loops)
        .config(config)
        .metrics("127.0.0.1:0")
        .start()
        .expect("server starts")
}

/// The value of the series `series` (a name with its labels, as the exposition writes it:
/// `ferry_rpc_sessions{transport="tcp"}`) in `server`'s metrics.
pub fn metric(server: &ferry_rpc::Server, series: &str) -> u64 {
    let text = server.services().metrics().encode();
    let key = format!("{series} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&key))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {series} in {text}"))
}

/// A blocking channel to `addr` whose calls give up at [`ferry_testkit::DEADLINE`].
pub fn channel(addr: &str) -> ferry_rpc::Channel {
    let config = ferry_rpc::ChannelConfig {
        timeout: Some(ferry_testkit::DEADLINE),
        ..ferry_rpc::ChannelConfig::default()
    };
    ferry_rpc::Channel::connect_with(addr, config).expect("connect")
}

/// Calls of 64 B raw echo ([`RAW`]) completed per second over `addr` for `secs` seconds with
/// `in_flight` calls at once (1: the blocking [`channel`]; more: tasks on one tokio channel):
/// the datagram transports' first measurements.
pub fn echo_rate(addr: &str, in_flight: usize, secs: f64) -> f64 {
    use std::rc::Rc;
    use std::time::Instant;
    let run = Duration::from_secs_f64(secs);
    let payload = [7u8; 64];
    if in_flight == 1 {
        let ch = channel(addr);
        let start = Instant::now();
        let mut calls = 0u64;
        while start.elapsed() < run {
            ch.call_payload(RAW, Payload::Bytes(&payload)).expect("call");
            calls += 1;
        }
        return calls as f64 / start.elapsed().as_secs_f64();
    }
    let local = tokio::task::LocalSet::new();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let addr = addr.to_string();
    local.block_on(&rt, async move {
        let mut config = ferry_rpc::ChannelConfig {
            timeout: Some(ferry_testkit::DEADLINE),
            ..ferry_rpc::ChannelConfig::default()
        };
        config.client.window = in_flight;
        let chan = Rc::new(
            ferry_rpc::tokio::AsyncChannel::connect_with(&addr, config)
                .await
                .expect("connect"),
        );
        let start = Instant::now();
        let tasks: Vec<_> = (0..in_flight)
            .map(|_| {
                let chan = Rc::clone(&chan);
                tokio::task::spawn_local(async move {
                    let mut calls = 0u64;
                    while start.elapsed() < run {
                        chan.call_payload(RAW, Payload::Bytes(&payload))
                            .await
                            .expect("call");
                        calls += 1;
                    }
                    calls
                })
            })
            .collect();
        let mut calls = 0;
        for t in tasks {
            calls += t.await.expect("task");
        }
        calls as f64 / start.elapsed().as_secs_f64()
    })
}

/// Raw bytes for call `i` of `len` bytes (every call's differ).
pub fn payload(i: usize, len: usize) -> Vec<u8> {
    (0..len).map(|k| (k * 13 + i) as u8).collect()
}

/// `rounds` rounds of 16 calls at once to `method` (an echo) on `chan`: call `k` carries
/// [`payload`]`(k, sizes[k % sizes.len()])`, every answer is checked, and a round starts when
/// the last has been answered. The calls made. On a `LocalSet`.
pub async fn sixteen_in_flight(
    chan: std::rc::Rc<ferry_rpc::tokio::AsyncChannel>,
    method: u16,
    rounds: usize,
    sizes: &'static [usize],
) -> usize {
    for round in 0..rounds {
        let tasks: Vec<_> = (0..16)
            .map(|i| {
                let chan = std::rc::Rc::clone(&chan);
                let k = round * 16 + i;
                tokio::task::spawn_local(async move {
                    let bytes = payload(k, sizes[k % sizes.len()]);
                    let resp = chan
                        .call_payload(method, Payload::Bytes(&bytes))
                        .await
                        .expect("call");
                    assert_eq!(
                        ferry_transport::Received::bytes(resp.frame()),
                        Some(&bytes[..]),
                        "call {k}"
                    );
                })
            })
            .collect();
        for t in tasks {
            t.await.expect("call task");
        }
    }
    rounds * 16
}

/// A well-formed datagram packet for a session no server has (an Ack from session 78 to 77):
/// what a forger sends; a server answers it with a Reset.
pub fn forged_ack() -> Vec<u8> {
    let h = ferry_dgram::packet::Header {
        dst: ferry_dgram::SessionId(77),
        src: ferry_dgram::SessionId(78),
        epoch: 1,
        body: ferry_dgram::packet::Body::Ack { cum: 0, sack: 0 },
    };
    let mut b = vec![0; h.encoded_len()];
    h.encode(&mut b).expect("encode");
    b
}
