//! The Ferry peer of the streaming section: a hand-written [`AsyncService`] (what generated
//! code would do for `schema/stream.proto`'s `Streams` with `Record` chunks) on a tokio
//! [`AsyncServer`], called by an [`AsyncChannel`], both on pinned current-thread runtimes with
//! ferry-rpc's defaults, as an application would use them (see [`super::tonic`] for the peer).
//!
//! | method | shape | request | response |
//! |---|---|---|---|
//! | `Download` | server streaming | raw: `count`, `size` (u32 LE each) | `count` `Record`s of one `size`-byte field |
//! | `Upload` | client streaming | `Record`s | raw: messages, bytes (u64 LE each) |
//! | `PingPong` | bidirectional | `Record`s | each request's `Record` back |
//! | `Echo` | unary | a `Record` | the same `Record` (the ping-pong's unary twin) |
//! | `ServerCpu` | unary | nothing | raw: the server thread's CPU ns, its messages copied so far (u64 LE each) |
//!
//! Every message is a Ferry message read in place. A chunk's value lives in the sending
//! side's pool (built once per stream, sent `count` times), so it goes by reference when at
//! least the zero-copy threshold: a gather entry over TCP, in place over shared memory. An echo is `view.to_message(call.ctx())`:
//! over TCP the value is referenced where the request arrived (the session's pool), over
//! shared memory copied (the request is the peer's memory). Every message is checked (its
//! one field's length, first and last byte).

use std::cell::Cell;
use std::rc::Rc;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use ferry::Context;
use ferry::MessageView;
use ferry::sample::{RECORD, Record, RecordView};
use ferry_rpc::tokio::{
    AsyncCall, AsyncChannel, AsyncRequest, AsyncServer, AsyncService, AsyncServices, LocalBoxFuture,
    RequestStream, ResponseSink,
};
use ferry_rpc::{CallOptions, Code, Encoded, Frame, LoopConfig, MethodInfo, Mode, Shape as Kind, Status};
use ferry_transport::{Payload, Received, method_id};
use tokio::sync::watch;

use super::{Shape, StreamMeasured, StreamPoint, check, in_time, payload};
use crate::BoxError;
use crate::harness::grpc::pinned_runtime;
use crate::harness::{Histogram, thread_cpu_time};
use crate::rpc::Cpus;
use crate::rpc::client::STALL;
use crate::rpc::plan::Transport;

const DOWNLOAD: &str = "/ferry_bench.stream.Streams/Download";
const UPLOAD: &str = "/ferry_bench.stream.Streams/Upload";
const PING_PONG: &str = "/ferry_bench.stream.Streams/PingPong";
const ECHO: &str = "/ferry_bench.stream.Streams/Echo";
const SERVER_CPU: &str = "/ferry_bench.stream.Streams/ServerCpu";

/// Runs `point` once over `transport`: the client on `cpus.0`, the server on `cpus.1`.
pub(crate) fn run(point: &StreamPoint, transport: Transport, cpus: Cpus) -> Result<StreamMeasured, BoxError> {
    let socket = std::env::temp_dir().join(format!("ferry-bench-streams-{}.sock", std::process::id()));
    let listen = match transport {
        Transport::Tcp => "tcp://127.0.0.1:0".to_owned(),
        Transport::Shm => format!("shm://{}", socket.display()),
        Transport::Udp => "udp://127.0.0.1:0".to_owned(),
        // `plan::check` refuses it: AF_XDP needs `--net veth`, which runs no streams.
        Transport::Xdp => return Err("the streams do not run over xdp".into()),
    };
    let _ = std::fs::remove_file(&socket);
    let (stop, stopped) = watch::channel(false);
    let (bound, addr) = mpsc::channel();
    let shm = transport == Transport::Shm;
    let result = thread::scope(|s| {
        let server = thread::Builder::new()
            .name("ferry-streams".to_owned())
            .spawn_scoped(s, move || serve(cpus.1, &listen, shm, &bound, stopped))?;
        let measured = match addr.recv() {
            Ok(addr) => drive(point, shm, cpus.0, &addr),
            Err(_) => Err("the server stopped before it listened".into()),
        };
        let _ = stop.send(true);
        let served = server
            .join()
            .unwrap_or_else(|_| Err("the server thread panicked".into()));
        served?;
        measured
    });
    let _ = std::fs::remove_file(&socket);
    result
}

/// The service; every handler is a task on the server's one thread.
struct Streams {
    /// Whether it serves shared memory (where a request that arrives as a pool buffer was
    /// copied by the driver).
    shm: bool,
    /// Requests that reached a handler copied.
    copied: Rc<Cell<u64>>,
}

fn bad(what: impl std::fmt::Display) -> Status {
    Status::new(Code::InvalidArgument, what.to_string())
}

/// A `Record` of one `size`-byte field whose value lives in `ctx`'s pool (so it goes by
/// reference when at least the threshold).
fn chunk(ctx: &Context, size: usize) -> Result<Record<'_>, BoxError> {
    let pool = ctx.pool().ok_or("the context has no pool")?;
    let value = pool.copy_from(&payload(size))?;
    let mut record = Record::new(ctx);
    record.init_fields(1);
    record.append_field(value);
    Ok(record)
}

/// Checks a received `Record`: one field of `size` bytes as [`payload`] writes it.
fn check_record(view: &RecordView<'_>, size: usize) -> Result<(), String> {
    let fields = view.fields();
    match fields.get(0) {
        Some(data) if fields.len() == 1 => check(data, size),
        _ => Err(format!("a record of {} fields, expected 1", fields.len())),
    }
}

/// Whether `frame`, received over shared memory (`shm`), was copied by the driver (the only
/// way a frame of that transport becomes a pool buffer).
fn was_copied(shm: bool, frame: &Frame) -> bool {
    shm && matches!(frame, Frame::Tcp(_))
}

/// `values` as consecutive u64 LE.
fn le_words(values: &[u64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// The u64 LE words of a raw payload of exactly `N` of them.
fn words<const N: usize>(bytes: Option<&[u8]>) -> Result<[u64; N], String> {
    let bytes = bytes
        .filter(|b| b.len() == 8 * N)
        .ok_or("a raw answer of the wrong size")?;
    let mut out = [0; N];
    for (w, b) in out.iter_mut().zip(bytes.chunks_exact(8)) {
        *w = u64::from_le_bytes(b.try_into().map_err(|_| "eight bytes")?);
    }
    Ok(out)
}

impl AsyncService for Streams {
    fn methods(&self) -> Vec<MethodInfo> {
        let info = |path, shape, record: bool| MethodInfo {
            path,
            id: method_id(path),
            request: record.then_some(&RECORD),
            mode: Mode::Foreground,
            shape,
        };
        vec![
            info(DOWNLOAD, Kind::ServerStreaming, false),
            info(UPLOAD, Kind::ClientStreaming, true),
            info(PING_PONG, Kind::Bidirectional, true),
            info(ECHO, Kind::Unary, true),
            info(SERVER_CPU, Kind::Unary, false),
        ]
    }

    fn call(&self, call: AsyncCall, request: AsyncRequest<()>) -> LocalBoxFuture<Result<Encoded, Status>> {
        let copied = Rc::clone(&self.copied);
        let shm = self.shm;
        Box::pin(async move {
            match call.method() {
                id if id == method_id(ECHO) => {
                    copied.set(copied.get() + u64::from(was_copied(shm, request.frame())));
                    let request = request.typed::<Record<'static>>();
                    let view = request.view()?;
                    Encoded::message(&view.to_message(call.ctx()).map_err(bad)?)
                }
                id if id == method_id(SERVER_CPU) => {
                    let ns = u64::try_from(thread_cpu_time().as_nanos()).unwrap_or(u64::MAX);
                    Ok(Encoded::from_vec(le_words(&[ns, copied.get()])))
                }
                id => Err(Status::new(Code::Unimplemented, format!("method {id}"))),
            }
        })
    }

    fn stream(
        &self,
        call: AsyncCall,
        requests: RequestStream<()>,
        mut responses: ResponseSink,
    ) -> LocalBoxFuture<Result<(), Status>> {
        let copied = Rc::clone(&self.copied);
        let shm = self.shm;
        let mut requests = requests.typed::<Record<'static>>();
        Box::pin(async move {
            let note = |frame: &Frame| copied.set(copied.get() + u64::from(was_copied(shm, frame)));
            match call.method() {
                id if id == method_id(DOWNLOAD) => {
                    let down = requests.message().await?.ok_or_else(|| bad("no request"))?;
                    let [count, size] = words::<1>(down.bytes())
                        .map(|[w]| [w & 0xffff_ffff, w >> 32])
                        .map_err(bad)?;
                    let chunk = chunk(call.ctx(), size as usize)
                        .map_err(|e| Status::new(Code::Internal, e.to_string()))?;
                    for _ in 0..count {
                        responses.send(&chunk).await?;
                    }
                    Ok(())
                }
                id if id == method_id(UPLOAD) => {
                    let (mut messages, mut bytes) = (0u64, 0u64);
                    while let Some(request) = requests.message().await? {
                        note(request.frame());
                        let view = request.view()?;
                        messages += 1;
                        bytes += view.fields().iter().map(|f| f.len() as u64).sum::<u64>();
                    }
                    let total = le_words(&[messages, bytes]);
                    responses.send_payload(Payload::Bytes(&total)).await
                }
                id if id == method_id(PING_PONG) => {
                    while let Some(request) = requests.message().await? {
                        note(request.frame());
                        let view = request.view()?;
                        responses.send(&view.to_message(call.ctx()).map_err(bad)?).await?;
                    }
                    Ok(())
                }
                id => Err(Status::new(Code::Unimplemented, format!("method {id}"))),
            }
        })
    }
}

/// Serves on `listen`, pinned to `cpu`, until `stopped` says so; sends its address on `bound`
/// once it listens.
fn serve(
    cpu: usize,
    listen: &str,
    shm: bool,
    bound: &mpsc::Sender<String>,
    stopped: watch::Receiver<bool>,
) -> Result<(), BoxError> {
    let runtime = pinned_runtime(cpu)?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async {
        let service = Streams {
            shm,
            copied: Rc::default(),
        };
        let services = AsyncServices::new().service(service)?;
        let server = AsyncServer::bind(services, &[listen], LoopConfig::default())?;
        let addr = server
            .addrs()
            .first()
            .ok_or("the server listens nowhere")?
            .to_string();
        bound.send(addr)?;
        let mut stopped = stopped;
        let shutdown = async move {
            let _ = stopped.wait_for(|&stop| stop).await;
        };
        server.run(shutdown, Duration::ZERO).await?;
        Ok(())
    })
}

/// The server thread's CPU time and its messages copied so far.
async fn server_reading(channel: &AsyncChannel) -> Result<(Duration, u64), BoxError> {
    let answer = channel
        .call_payload(method_id(SERVER_CPU), Payload::Bytes(&[]))
        .await?;
    let [ns, copied] = words::<2>(answer.frame().bytes())?;
    Ok((Duration::from_nanos(ns), copied))
}

/// The client's side of one run.
fn drive(point: &StreamPoint, shm: bool, cpu: usize, addr: &str) -> Result<StreamMeasured, BoxError> {
    pinned_runtime(cpu)?.block_on(async {
        let channel = tokio::time::timeout(STALL, AsyncChannel::connect(addr))
            .await
            .map_err(|_| format!("connecting to {addr} took {STALL:?}"))??;
        in_time(
            "the warm-up stream",
            one_stream(&channel, &point.warmup(), shm, &mut StreamMeasured::default()),
        )
        .await?;
        let (server0, copied0) = server_reading(&channel).await?;
        let (t0, cpu0) = (Instant::now(), thread_cpu_time());
        let mut measured = StreamMeasured::default();
        in_time("a stream", one_stream(&channel, point, shm, &mut measured)).await?;
        measured.elapsed = t0.elapsed();
        measured.client_cpu = thread_cpu_time().saturating_sub(cpu0);
        let (server1, copied1) = server_reading(&channel).await?;
        measured.server_cpu = server1.saturating_sub(server0);
        measured.server_copied = copied1 - copied0;
        if point.shape == Shape::PingPong {
            in_time(
                "the unary calls",
                unary_calls(&channel, point, &mut measured.unary),
            )
            .await?;
        }
        Ok(measured)
    })
}

async fn one_stream(
    channel: &AsyncChannel,
    point: &StreamPoint,
    shm: bool,
    measured: &mut StreamMeasured,
) -> Result<(), BoxError> {
    let (size, count) = (point.size, point.count);
    let method = match point.shape {
        Shape::Download => DOWNLOAD,
        Shape::Upload => UPLOAD,
        Shape::PingPong => PING_PONG,
    };
    let (mut sink, responses) = channel.open(method_id(method), &CallOptions::default())?;
    let chunk = chunk(channel.context(), size)?;
    match point.shape {
        Shape::Download => {
            let down = u64::try_from(count)? | u64::try_from(size)? << 32;
            sink.send_payload(Payload::Bytes(&down.to_le_bytes())).await?;
            sink.end().await?;
            let mut chunks = responses.typed::<Record<'static>>();
            let mut got = 0;
            while let Some(chunk) = chunks.message().await? {
                measured.client_copied += u64::from(was_copied(shm, chunk.frame()));
                check_record(&chunk.view()?, size)?;
                measured.bytes += size as u64;
                got += 1;
            }
            if got != count {
                return Err(format!("downloaded {got} messages of {count}").into());
            }
        }
        Shape::Upload => {
            let mut responses = responses;
            // Fed, written in batches by `end` and the waits for the window (`send` would
            // wait for each to be written: a system call per message).
            for _ in 0..count {
                sink.feed(&chunk).await?;
            }
            sink.end().await?;
            let total = responses
                .message()
                .await?
                .ok_or("the upload ended without its total")?;
            let [messages, bytes] = words::<2>(total.frame().bytes())?;
            if messages != count as u64 || bytes != (count * size) as u64 {
                return Err(format!("the server received {messages} messages, {bytes} B").into());
            }
            if responses.message().await?.is_some() {
                return Err("a second answer to an upload".into());
            }
            measured.bytes = bytes;
        }
        Shape::PingPong => {
            let mut echoes = responses.typed::<Record<'static>>();
            for _ in 0..count {
                let at = Instant::now();
                sink.send(&chunk).await?;
                let echo = echoes.message().await?.ok_or("the ping-pong ended early")?;
                measured.client_copied += u64::from(was_copied(shm, echo.frame()));
                check_record(&echo.view()?, size)?;
                measured.round_trips.record_duration(at.elapsed());
                measured.bytes += 2 * size as u64;
            }
            sink.end().await?;
            if echoes.message().await?.is_some() {
                return Err("an echo nobody asked for".into());
            }
        }
    }
    Ok(())
}

/// `point.count` unary calls of the ping-pong's message on `channel`, each timed as a round
/// trip of the ping-pong is.
async fn unary_calls(
    channel: &AsyncChannel,
    point: &StreamPoint,
    timed: &mut Histogram,
) -> Result<(), BoxError> {
    let chunk = chunk(channel.context(), point.size)?;
    for _ in 0..point.count {
        let at = Instant::now();
        let echo = channel.call::<Record<'static>>(method_id(ECHO), &chunk).await?;
        check_record(&echo.view()?, point.size)?;
        timed.record_duration(at.elapsed());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shape_carries_what_it_says_over_both_transports() {
        for transport in [Transport::Tcp, Transport::Shm] {
            for (shape, size, count) in [
                (Shape::Download, 65_536, 40),
                (Shape::Upload, 65_536, 40),
                (Shape::PingPong, 64, 50),
                (Shape::PingPong, 4096, 50),
            ] {
                let what = format!("{transport:?} {shape:?} {size} B");
                let m = run(&StreamPoint { shape, size, count }, transport, (0, 1)).expect(&what);
                let (bytes, timed) = match shape {
                    Shape::PingPong => (2 * size * count, count as u64),
                    _ => (size * count, 0),
                };
                assert_eq!(m.bytes, bytes as u64, "{what}");
                assert_eq!(m.round_trips.count(), timed, "{what}");
                assert_eq!(m.unary.count(), timed, "{what}: as many unary calls");
                assert!(m.server_cpu > Duration::ZERO, "{what}: the server's CPU was read");
                if transport == Transport::Tcp {
                    assert_eq!((m.client_copied, m.server_copied), (0, 0), "{what}");
                }
                assert!(m.client_copied + m.server_copied <= count as u64, "{what}");
            }
        }
    }

    #[test]
    fn raw_words_read_back_and_refuse_the_wrong_size() {
        let bytes = le_words(&[7, u64::MAX]);
        assert_eq!(words::<2>(Some(&bytes)), Ok([7, u64::MAX]));
        assert!(words::<1>(Some(&bytes)).is_err());
        assert!(words::<2>(None).is_err());
    }
}
