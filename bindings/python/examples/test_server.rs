//! The Rust server the Python tests call (tests/conftest.py starts it): raw methods of
//! `ferry.pytest.Test` on every address given, plus `EchoMessage`, which reads the request as a
//! message of a run-time schema in Rust and answers with it re-encoded (a Ferry message: over
//! shared memory it stays in the server's memory, read in place by the client).
//!
//! ```text
//! cargo run -p ferry-python --example test_server -- --proto t.proto --message t.M \
//!     tcp://127.0.0.1:0 shm:///tmp/ferry-pytest.sock
//! ```
//!
//! Prints `listening ADDR` for each address once it accepts connections, then serves until its
//! standard input closes (the test that started it is gone).
//!
//! - `Echo`: the request's bytes back.
//! - `Fail`: fails with the status the request names, as text: `CODE:message`.
//! - `Metadata`: the value of the request's metadata entry `x-echo`.
//! - `Hold`: answers `released` once `Release` is called after it started, or fails when its
//!   deadline passes.
//! - `Held`: how many `Hold` calls wait, as decimal text.
//! - `Release`: releases the waiting `Hold` calls.

use std::io::Read;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use ferry_rpc::{Call, Code, MethodInfo, Mode, Reply, Request, Server, Service, Services, Shape, Status};
use ferry_transport::{Payload, method_id};
use ferry_wire::{Context, DynamicMessage, Limits, View};

const ECHO: &str = "/ferry.pytest.Test/Echo";
const FAIL: &str = "/ferry.pytest.Test/Fail";
const METADATA: &str = "/ferry.pytest.Test/Metadata";
const HOLD: &str = "/ferry.pytest.Test/Hold";
const RELEASE: &str = "/ferry.pytest.Test/Release";
const HELD: &str = "/ferry.pytest.Test/Held";
const ECHO_MESSAGE: &str = "/ferry.pytest.Test/EchoMessage";

struct Test {
    schema: ferry_reflect::Schema,
    message: String,
    holds: Mutex<Holds>,
    release: Condvar,
}

/// The `Hold` calls: how many wait, and how many times `Release` was called.
#[derive(Default)]
struct Holds {
    waiting: u32,
    releases: u64,
}

fn info(path: &'static str, mode: Mode) -> MethodInfo {
    MethodInfo {
        path,
        id: method_id(path),
        request: None,
        mode,
        shape: Shape::Unary,
    }
}

impl Service for Test {
    fn methods(&self) -> Vec<MethodInfo> {
        vec![
            info(ECHO, Mode::Foreground),
            info(FAIL, Mode::Foreground),
            info(METADATA, Mode::Foreground),
            info(HOLD, Mode::Background),
            info(RELEASE, Mode::Foreground),
            info(HELD, Mode::Foreground),
            info(ECHO_MESSAGE, Mode::Foreground),
        ]
    }

    fn call<'a>(&self, call: &Call<'a>, request: Request<'a>, reply: &mut Reply<'_>) -> Result<(), Status> {
        let bytes = request.incoming().bytes().unwrap_or_default();
        let method = call.method();
        if method == method_id(ECHO) {
            reply.send_payload(Payload::Bytes(bytes))
        } else if method == method_id(FAIL) {
            let text = String::from_utf8_lossy(bytes);
            let (code, message) = text.split_once(':').unwrap_or(("2", &text));
            let code = code.parse().ok().and_then(Code::from_u8).unwrap_or(Code::Unknown);
            Err(Status::new(code, message))
        } else if method == method_id(METADATA) {
            reply.send_payload(Payload::Bytes(call.metadata().get("x-echo").unwrap_or_default()))
        } else if method == method_id(HOLD) {
            let mut holds = self.holds.lock().unwrap_or_else(PoisonError::into_inner);
            let start = holds.releases;
            holds.waiting += 1;
            while holds.releases == start && !call.is_cancelled() {
                // Woken by `Release`; the timeout only lets a cancelled call notice.
                holds = self
                    .release
                    .wait_timeout(holds, Duration::from_millis(50))
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
            holds.waiting -= 1;
            if holds.releases == start {
                return Err(Status::new(Code::Cancelled, "held call cancelled"));
            }
            reply.send_payload(Payload::Bytes(b"released"))
        } else if method == method_id(HELD) {
            let waiting = self.holds.lock().unwrap_or_else(PoisonError::into_inner).waiting;
            reply.send_payload(Payload::Bytes(waiting.to_string().as_bytes()))
        } else if method == method_id(RELEASE) {
            self.holds.lock().unwrap_or_else(PoisonError::into_inner).releases += 1;
            self.release.notify_all();
            reply.send_payload(Payload::Bytes(&[]))
        } else if method == method_id(ECHO_MESSAGE) {
            let bad = |e: &dyn std::fmt::Display| Status::new(Code::InvalidArgument, e.to_string());
            let desc = self
                .schema
                .message(&self.message)
                .ok_or_else(|| bad(&"no such message"))?;
            let view = View::decode(bytes, desc, &Limits::default()).map_err(|e| bad(&e))?;
            let m = DynamicMessage::from_view(&view, Context::copy_only()).map_err(|e| bad(&e))?;
            reply.send(&m)
        } else {
            Err(Status::new(Code::Unimplemented, format!("method {method}")))
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (mut proto, mut message, mut addrs) = (None, None, Vec::new());
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--proto" => proto = args.next(),
            "--message" => message = args.next(),
            _ => addrs.push(arg),
        }
    }
    let (Some(proto), Some(message)) = (proto, message) else {
        return Err("usage: test_server --proto FILE --message NAME ADDR...".into());
    };
    let proto = std::path::PathBuf::from(proto);
    let includes = [proto.parent().unwrap_or(std::path::Path::new(".")).to_path_buf()];
    let schema = ferry_reflect::Schema::load(&[&proto], &includes)?;
    let test = Test {
        schema,
        message,
        holds: Mutex::default(),
        release: Condvar::new(),
    };
    let services = Services::builder().service(test)?.workers(2).build()?;
    let mut builder = Server::builder(services).loops(1);
    for addr in &addrs {
        builder = builder.listen(addr);
    }
    let server = Arc::new(builder.start()?);
    for addr in server.addrs() {
        println!("listening {addr}");
    }
    // Serves until the parent closes standard input.
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    Ok(())
}
