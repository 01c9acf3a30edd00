//! The server side of `ferry bench rpc`: one hand-written [`Service`] whose methods are the
//! echo variants (what generated code would do for a `Record` method, and raw methods for the
//! rest), plus a control method that reads the server loop thread's CPU time.
//!
//! Every handler runs in the foreground, inline on the server's one loop thread:
//!
//! | method | request | response |
//! |---|---|---|
//! | `Raw` | raw bytes | the same bytes: over TCP the received pool buffer itself as a gather entry (no copy); over shared memory the bytes are the peer's memory, copied once into a block |
//! | `EchoCopy` | `Record`, validated in place | `view.to_message(Context::copy_only())`: every field copied into the response |
//! | `EchoHybrid` | `Record`, validated in place | `view.to_message(call.ctx())`: fields of 512 B or more referenced where the request lies if that is the session's pool (TCP), else copied (shared memory: the peer's pool) |
//! | `Prost`, `Flatbuf`, `Capnp` | that library's encoding | decoded and re-encoded with the library ([`Codec::echo`]), then copied into the transport |
//! | `Control` | `mark` or `end` | the same; the handler reads its thread's CPU time and count of echoes |

use std::cell::{Cell, RefCell};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use ferry::Context;
use ferry::MessageView;
use ferry::sample::{RECORD, Record};
use ferry_rpc::{Call, Code, MethodInfo, Mode, Reply, Request, Service, Status};
use ferry_transport::{Payload, method_id};

use crate::harness::thread_cpu_time;
use crate::systems::{CODECS, Codec, Input};

/// `/ferry_bench.rpc.Bench/<name>` and its id.
macro_rules! method {
    ($name:literal) => {
        (
            concat!("/ferry_bench.rpc.Bench/", $name),
            method_id(concat!("/ferry_bench.rpc.Bench/", $name)),
        )
    };
}

/// The raw echo.
pub(super) const RAW: (&str, u16) = method!("Raw");
/// Ferry, copy-only.
pub(super) const COPY: (&str, u16) = method!("EchoCopy");
/// Ferry, hybrid.
pub(super) const HYBRID: (&str, u16) = method!("EchoHybrid");
/// The peers, in [`CODECS`] order.
pub(super) const PEERS: [(&str, u16); 3] = [method!("Prost"), method!("Flatbuf"), method!("Capnp")];
/// Marks the start and the end of a measured window.
pub(super) const CONTROL: (&str, u16) = method!("Control");

/// Payloads of the control calls.
pub(super) const MARK: &[u8] = b"mark";
pub(super) const END: &[u8] = b"end";

/// The server loop thread's CPU time and count of echoes at a control call.
pub(super) type Reading = (Duration, u64);

/// What the control calls read, for the benchmark's thread.
#[derive(Debug, Default)]
pub(super) struct Readings {
    mark: Mutex<Option<Reading>>,
    end: Mutex<Option<Reading>>,
}

impl Readings {
    /// The readings at `MARK` and `END` of the last window, taken (so a run never sees its
    /// predecessor's).
    pub(super) fn take(&self) -> (Option<Reading>, Option<Reading>) {
        let take = |m: &Mutex<Option<Reading>>| m.lock().unwrap_or_else(PoisonError::into_inner).take();
        (take(&self.mark), take(&self.end))
    }
}

thread_local! {
    /// Echo calls answered on this (the server loop's) thread. A plain counter: the handlers
    /// and the control method all run on the loop's thread.
    static ECHOED: Cell<u64> = const { Cell::new(0) };
    /// The peers' codecs, reused across calls like a server's buffers; one set per loop thread.
    static CODECS_HERE: RefCell<Vec<Box<dyn Codec>>> = RefCell::new(CODECS.iter().map(|e| (e.new)()).collect());
}

/// The benchmark's service.
#[derive(Debug, Clone)]
pub(super) struct BenchService {
    readings: Arc<Readings>,
}

impl BenchService {
    pub(super) fn new(readings: Arc<Readings>) -> BenchService {
        BenchService { readings }
    }
}

fn info((path, id): (&'static str, u16), record: bool) -> MethodInfo {
    MethodInfo {
        path,
        id,
        request: record.then_some(&RECORD),
        mode: Mode::Foreground,
    }
}

fn failed(what: &str, e: impl std::fmt::Display) -> Status {
    Status::new(Code::InvalidArgument, format!("{what}: {e}"))
}

impl Service for BenchService {
    fn methods(&self) -> Vec<MethodInfo> {
        let mut methods = vec![info(RAW, false), info(COPY, true), info(HYBRID, true)];
        methods.extend(PEERS.iter().map(|&m| info(m, false)));
        methods.push(info(CONTROL, false));
        methods
    }

    fn call<'a>(&self, call: &Call<'a>, request: Request<'a>, reply: &mut Reply<'_>) -> Result<(), Status> {
        let method = call.method();
        let incoming = request.incoming();
        if method == CONTROL.1 {
            let bytes = incoming.bytes().unwrap_or_default();
            let slot = match bytes {
                MARK => &self.readings.mark,
                END => &self.readings.end,
                _ => return Err(Status::new(Code::InvalidArgument, "unknown control call")),
            };
            let reading = (thread_cpu_time(), ECHOED.get());
            *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(reading);
            return reply.send_payload(Payload::Bytes(bytes));
        }
        ECHOED.set(ECHOED.get() + 1);
        if method == RAW.1 {
            return match (incoming.shared(), incoming.bytes()) {
                (Some(buf), _) => reply.send_payload(Payload::Gather {
                    head: &[],
                    parts: std::slice::from_ref(buf),
                }),
                (None, Some(bytes)) => reply.send_payload(Payload::Bytes(bytes)),
                (None, None) => Err(Status::new(Code::InvalidArgument, "a raw call without bytes")),
            };
        }
        if method == COPY.1 || method == HYBRID.1 {
            let view = request.decode::<Record<'static>>()?;
            // Copy-only: the threshold is infinite, so no value is ever referenced and the pool
            // is never looked at; `Context::copy_only()` is that context without a per-call
            // clone (an atomic increment) of the session's.
            let ctx = if method == COPY.1 {
                Context::copy_only()
            } else {
                call.ctx()
            };
            let response = view.to_message(ctx).map_err(|e| failed("to_message", e))?;
            return reply.send(&response);
        }
        let Some(peer) = PEERS.iter().position(|&(_, id)| id == method) else {
            return Err(Status::new(Code::Unimplemented, format!("method {method}")));
        };
        let input = Input {
            bytes: incoming.bytes().unwrap_or_default(),
            shared: incoming.shared(),
        };
        CODECS_HERE.with_borrow_mut(|codecs| {
            let out = codecs[peer]
                .echo(input)
                .map_err(|e| failed(CODECS[peer].name, e))?;
            reply.send_payload(Payload::Bytes(out))
        })
    }
}
