//! The server side of `ferry bench rpc`: one hand-written [`Service`] whose methods are the
//! echo variants (what generated code would do for a `Record` method, and raw methods for the
//! rest), counted ([`Counted`]) beside the measured window's [`Control`] method, served by one
//! busy-polling [`Server`] loop.
//!
//! Every handler runs in the foreground, inline on the server's one loop thread:
//!
//! | method | request | response |
//! |---|---|---|
//! | `Raw` | raw bytes | the same bytes: over TCP the received pool buffer itself as a gather entry (no copy); over shared memory the bytes are the peer's memory, copied once into a block |
//! | `EchoCopy` | `Record`, validated in place | `view.to_message(Context::copy_only())`: every field copied into the response |
//! | `EchoHybrid` | `Record`, validated in place | `view.to_message(call.ctx())`: fields of 512 B or more referenced where the request lies if that is the session's pool (TCP), else copied (shared memory: the peer's pool) |
//! | `Prost`, `Flatbuf`, `Capnp` | that library's encoding | decoded and re-encoded with the library ([`Codec::echo`]), then copied into the transport |

use std::cell::RefCell;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use ferry::Context;
use ferry::MessageView;
use ferry::sample::{RECORD, Record};
use ferry_rpc::{
    Addr, Call, Code, LoopConfig, MethodInfo, Mode, Reply, Request, Server, Service, Services, Shape, Status,
};
use ferry_transport::{Payload, method_id};

use super::plan::{System, Transport};
use crate::BoxError;
use crate::harness::window::{Control, Counted, Readings};
use crate::harness::{Link, Named};
use crate::systems::{CODECS, Codec, Input};

/// An echo method: the system it serves, its path and id.
#[derive(Debug, Clone, Copy)]
struct Method {
    system: System,
    path: &'static str,
    id: u16,
}

/// `/ferry_bench.rpc.Bench/<name>`, serving `system`.
macro_rules! method {
    ($system:ident, $name:literal) => {
        Method {
            system: System::$system,
            path: concat!("/ferry_bench.rpc.Bench/", $name),
            id: method_id(concat!("/ferry_bench.rpc.Bench/", $name)),
        }
    };
}

/// The echo methods, one per event-loop system.
const METHODS: [Method; 6] = [
    method!(Raw, "Raw"),
    method!(FerryCopy, "EchoCopy"),
    method!(FerryHybrid, "EchoHybrid"),
    method!(Prost, "Prost"),
    method!(Flatbuf, "Flatbuf"),
    method!(Capnp, "Capnp"),
];

/// The measured window's control method.
pub(super) const CONTROL: &str = "/ferry_bench.rpc.Bench/Control";

/// The id of the method that serves `system`'s echo.
pub(super) fn method(system: System) -> Result<u16, BoxError> {
    let m = METHODS.iter().find(|m| m.system == system);
    Ok(
        m.ok_or_else(|| format!("{} is not served by the Ferry server loop", system.name()))?
            .id,
    )
}

/// Where a peer system's codec sits in [`CODECS`] (its name is the system's).
pub(super) fn codec(system: System) -> Option<usize> {
    CODECS.iter().position(|e| e.name == system.name())
}

thread_local! {
    /// The peers' codecs, reused across calls like a server's buffers; one set per loop thread.
    static CODECS_HERE: RefCell<Vec<Box<dyn Codec>>> = RefCell::new(CODECS.iter().map(|e| (e.new)()).collect());
}

/// The benchmark's echo service.
#[derive(Debug, Clone)]
struct BenchService {
    /// Each method's system's codec in [`CODECS`], by [`METHODS`] index.
    codecs: [Option<usize>; 6],
}

fn failed(what: &str, e: impl std::fmt::Display) -> Status {
    Status::new(Code::InvalidArgument, format!("{what}: {e}"))
}

impl Service for BenchService {
    fn methods(&self) -> Vec<MethodInfo> {
        let info = |m: &Method| MethodInfo {
            path: m.path,
            id: m.id,
            request: matches!(m.system, System::FerryCopy | System::FerryHybrid).then_some(&RECORD),
            mode: Mode::Foreground,
            shape: Shape::Unary,
        };
        METHODS.iter().map(info).collect()
    }

    fn call<'a>(&self, call: &Call<'a>, request: Request<'a>, reply: &mut Reply<'_>) -> Result<(), Status> {
        let id = call.method();
        let Some(at) = METHODS.iter().position(|m| m.id == id) else {
            return Err(Status::new(Code::Unimplemented, format!("method {id}")));
        };
        let incoming = request.incoming();
        match METHODS[at].system {
            System::Raw => match (incoming.shared(), incoming.bytes()) {
                (Some(buf), _) => reply.send_payload(Payload::Gather {
                    head: &[],
                    parts: std::slice::from_ref(buf),
                }),
                (None, Some(bytes)) => reply.send_payload(Payload::Bytes(bytes)),
                (None, None) => Err(Status::new(Code::InvalidArgument, "a raw call without bytes")),
            },
            system @ (System::FerryCopy | System::FerryHybrid) => {
                let view = request.decode::<Record<'static>>()?;
                // Copy-only: the threshold is infinite, so no value is ever referenced and the
                // pool is never looked at; `Context::copy_only()` is that context without a
                // per-call clone (an atomic increment) of the session's.
                let ctx = if system == System::FerryCopy {
                    Context::copy_only()
                } else {
                    call.ctx()
                };
                let response = view.to_message(ctx).map_err(|e| failed("to_message", e))?;
                reply.send(&response)
            }
            _ => {
                let codec = self.codecs[at].ok_or_else(|| failed("method", "no codec"))?;
                let input = Input {
                    bytes: incoming.bytes().unwrap_or_default(),
                    shared: incoming.shared(),
                };
                CODECS_HERE.with_borrow_mut(|codecs| {
                    let out = codecs[codec]
                        .echo(input)
                        .map_err(|e| failed(CODECS[codec].name, e))?;
                    reply.send_payload(Payload::Bytes(out))
                })
            }
        }
    }
}

/// A running benchmark server; shut down (and its socket file removed) when dropped.
pub(super) struct Running {
    server: Option<Server>,
    socket: PathBuf,
    /// What the control calls read.
    pub(super) readings: Arc<Readings>,
}

/// Tells the sockets of the servers this process starts apart.
static SERVERS: AtomicUsize = AtomicUsize::new(0);

/// Starts the echo server: one loop with `config`, pinned to `cpu` if given, listening on
/// each of `transports` (TCP and UDP on `ip`, shared memory on a socket in the temp
/// directory).
pub(super) fn start(
    transports: &[Transport],
    ip: IpAddr,
    cpu: Option<usize>,
    config: LoopConfig,
) -> Result<Running, BoxError> {
    let readings = Arc::new(Readings::default());
    let echo = BenchService {
        codecs: METHODS.map(|m| codec(m.system)),
    };
    let control = Control {
        path: CONTROL,
        readings: Arc::clone(&readings),
    };
    let services = Services::builder()
        .service(Counted(echo))?
        .service(control)?
        .build()?;
    let n = SERVERS.fetch_add(1, Ordering::Relaxed);
    let socket = std::env::temp_dir().join(format!("ferry-bench-rpc-{}-{n}.sock", std::process::id()));
    let _ = std::fs::remove_file(&socket);
    let tls = config.conn.tls_server.is_some() && transports.contains(&Transport::Tcp);
    let mut builder = Server::builder(services).loops(1).config(config);
    for t in transports {
        builder = builder.listen(&match t {
            Transport::Tcp => format!("tcp://{ip}:0"),
            Transport::Shm => format!("shm://{}", socket.display()),
            Transport::Udp => format!("udp://{ip}:0"),
        });
    }
    if tls {
        builder = builder.listen(&format!("tls://{ip}:0"));
    }
    if let Some(cpu) = cpu {
        builder = builder.pin(vec![cpu]);
    }
    Ok(Running {
        server: Some(builder.start()?),
        socket,
        readings,
    })
}

impl Running {
    /// Its address on `transport` over `link` (TLS: TCP only, with a TLS config).
    pub(super) fn addr(&self, transport: Transport, link: Link) -> Result<&Addr, BoxError> {
        let addrs = self.server.as_ref().map_or(&[][..], Server::addrs);
        let on = |a: &&Addr| match (transport, link) {
            (Transport::Tcp, Link::Plain) => matches!(a, Addr::Tcp(_)),
            (Transport::Tcp, Link::Tls) => matches!(a, Addr::Tls(_)),
            (Transport::Shm, _) => matches!(a, Addr::Shm(_)),
            (Transport::Udp, _) => matches!(a, Addr::Udp(_)),
        };
        Ok(addrs
            .iter()
            .find(on)
            .ok_or_else(|| format!("the server has no {}{} address", transport.name(), link.suffix()))?)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            server.shutdown(Duration::from_secs(1));
        }
        let _ = std::fs::remove_file(&self.socket);
    }
}
