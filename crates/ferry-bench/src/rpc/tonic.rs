//! The tonic peer of `ferry bench rpc`: one measured run of a gRPC unary echo with tonic
//! (HTTP/2 over TCP loopback, prost messages), set beside Ferry's.
//!
//! - **server**: a tonic [`Server`] on a current-thread tokio runtime, on a thread pinned to
//!   the server CPU, bound to `127.0.0.1:0`. Its one method, `ferry_bench.echo.Echo/Echo`
//!   (`schema/echo.proto`), answers with the [`Record`] it was sent: prost decodes the request's
//!   `bytes` fields as [`Bytes`] slices of tonic's receive buffer and encodes the same slices
//!   into the response, so the server copies nothing beyond what prost and tonic do.
//! - **client**: an [`EchoClient`] over one [`Channel`] (one HTTP/2 connection), on a
//!   current-thread runtime on a thread pinned to the client CPU, keeping `in_flight` calls
//!   outstanding as Ferry's client does (each call a task; a new one as each completes).
//!   Every request is one [`Record`] with an empty key and the point's fields, built once; a
//!   call clones it (reference counts, no byte copies). Every echo is checked.
//!
//! Both sides use tonic's defaults (HTTP/2 windows and frame sizes, no compression, no
//! per-call timeout), with `TCP_NODELAY` on both ends. One run is one connection: a warm-up,
//! then the measured window of [`crate::harness::window`], whose `mark` and `end` are echo
//! calls with that word as their key. The server's runtime runs every connection task and
//! handler on its one thread, so that thread's [`Reading`]s cover exactly the measured
//! calls; the run fails if the server's count over the window is not the client's.
//!
//! Latency and calls/s are taken as Ferry's client takes them (see [`super`]). Every run stops
//! by itself: the client gives up on a connection after 10 s and on a phase in which no call
//! completed for 10 s; the server stops when the client's thread ends (whether it succeeded or
//! not), and gives up on closing its connection after 5 s.
//!
//! What it is NOT: a tuned gRPC setup (no adaptive windows, no connection pools) or a
//! multi-threaded one; it is tonic as an application would use it, on one core per side like
//! Ferry's runs.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::watch;
use tokio::task::{JoinSet, LocalSet};
use tonic::transport::{Channel, Server};
use tonic::{Request, Response, Status};

use crate::BoxError;
use crate::generated::record_prost::Record;
use crate::generated::record_prost::echo::echo_client::EchoClient;
use crate::generated::record_prost::echo::echo_server::{Echo, EchoServer};
use crate::harness::grpc::{connect, incoming, pinned_runtime};
use crate::harness::window::{self, END, MARK, Reading, Readings, Span};
use crate::harness::{Budget, thread_cpu_time};

use super::client::{STALL, check_field, fill};
use super::plan::{Fields, Point};
use super::{Cpus, Measured};
use crate::harness::closed::Phase;

/// The server gives up on closing its connection this long after the client's thread ended.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Runs `point` (its fields and in-flight count) for `budget` after a warm-up of a tenth of
/// it, the client on `cpus.0` and the server on `cpus.1`.
pub(super) fn run(point: &Point, budget: Budget, cpus: Cpus) -> Result<Measured, BoxError> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let (stop, stopped) = watch::channel(false);
    let (client, server) = thread::scope(|s| -> Result<_, BoxError> {
        let server = thread::Builder::new()
            .name("tonic-server".to_owned())
            .spawn_scoped(s, move || serve(cpus.1, listener, stopped))?;
        let client = thread::Builder::new()
            .name("tonic-client".to_owned())
            .spawn_scoped(s, move || drive(point, budget, cpus.0, addr));
        // Whatever became of the client (even if its thread could not start), the server stops.
        let client = client.map_err(BoxError::from).and_then(joined);
        let _ = stop.send(true);
        Ok((client, joined(server)))
    })?;
    let (c, s) = match (client, server) {
        (Ok(c), Ok(s)) => (c, s),
        (c, s) => {
            let c = c.err().map(|e| format!("tonic client: {}", sources(e)));
            let s = s.err().map(|e| format!("tonic server: {}", sources(e)));
            return Err(c.into_iter().chain(s).collect::<Vec<_>>().join("; ").into());
        }
    };
    let (window, elapsed, client_cpu) = c;
    Measured::new(window, elapsed, (client_cpu, None), s)
}

/// `e` and its sources, joined by ": " (tonic's transport errors say only "transport error"
/// and keep the cause in their source).
fn sources(e: BoxError) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text = format!("{text}: {cause}");
        source = cause.source();
    }
    text
}

fn joined<T>(handle: thread::ScopedJoinHandle<'_, Result<T, BoxError>>) -> Result<T, BoxError> {
    handle.join().unwrap_or_else(|_| Err("thread panicked".into()))
}

/// The echo service: counts every echo ([`window::count_request`]) and records a
/// [`Reading`] at the control calls.
#[derive(Default)]
struct EchoState {
    readings: Readings,
}

#[tonic::async_trait]
impl Echo for EchoState {
    async fn echo(&self, request: Request<Record>) -> Result<Response<Record>, Status> {
        let record = request.into_inner();
        if record.key.is_empty() {
            window::count_request();
        } else if !self.readings.record(&record.key, Reading::here()) {
            return Err(Status::invalid_argument("unknown control key"));
        }
        Ok(Response::new(record))
    }
}

/// Serves echo calls on `listener` until `stopped` says so (or its sender is gone).
fn serve(cpu: usize, listener: TcpListener, stopped: watch::Receiver<bool>) -> Result<Span, BoxError> {
    let runtime = pinned_runtime(cpu)?;
    let state = Arc::new(EchoState::default());
    runtime.block_on(async {
        let incoming = incoming(listener)?;
        let mut signal = stopped.clone();
        let shutdown = async move {
            let _ = signal.wait_for(|&stop| stop).await;
        };
        let server = Server::builder()
            .add_service(EchoServer::from_arc(Arc::clone(&state)))
            .serve_with_incoming_shutdown(incoming, shutdown);
        let mut stopped = stopped;
        let overdue = async move {
            let _ = stopped.wait_for(|&stop| stop).await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        };
        tokio::select! {
            r = server => r.map_err(BoxError::from),
            () = overdue => Err(format!("connection still open {SHUTDOWN_GRACE:?} after the client ended").into()),
        }
    })?;
    Ok(state
        .readings
        .take()
        .ok_or("the client ended without a mark and an end")?)
}

/// Connects to `addr`, warms up, and measures the window: the client's side of a run, and
/// its thread's CPU time.
fn drive(
    point: &Point,
    budget: Budget,
    cpu: usize,
    addr: SocketAddr,
) -> Result<(Phase, Duration, Duration), BoxError> {
    let runtime = pinned_runtime(cpu)?;
    LocalSet::new().block_on(&runtime, async {
        let mut client = EchoClient::new(connect(addr).await?);
        let request = Record {
            key: Bytes::new(),
            fields: (0..point.fields.count)
                .map(|i| Bytes::from(vec![fill(i); point.fields.len]))
                .collect(),
        };
        phase(&client, &request, point, budget.warmup()).await?;
        control(&mut client, MARK).await?;
        let (t0, cpu0) = (Instant::now(), thread_cpu_time());
        let window = phase(&client, &request, point, budget).await?;
        let (t1, cpu1) = (Instant::now(), thread_cpu_time());
        control(&mut client, END).await?;
        Ok((window, t1 - t0, cpu1.saturating_sub(cpu0)))
    })
}

/// A control call: its key names it, and it carries no fields.
async fn control(client: &mut EchoClient<Channel>, key: &'static [u8]) -> Result<(), BoxError> {
    let request = Record {
        key: Bytes::from_static(key),
        fields: Vec::new(),
    };
    let response = tokio::time::timeout(STALL, client.echo(request))
        .await
        .map_err(|_| "a control call timed out")??;
    if response.get_ref().key != key {
        return Err("a control call's echo has another key".into());
    }
    Ok(())
}

/// Keeps `point.in_flight` calls outstanding, each a task on this thread's [`LocalSet`],
/// until `budget` is spent and they have all completed, checking every echo.
async fn phase(
    client: &EchoClient<Channel>,
    request: &Record,
    point: &Point,
    budget: Budget,
) -> Result<Phase, BoxError> {
    let in_flight = point.in_flight.max(1);
    let mut p = Phase::new(budget, in_flight);
    let mut calls = JoinSet::new();
    // One timer for the phase rather than one per call: the calls are measured as tonic makes
    // them.
    let mut stall = std::pin::pin!(tokio::time::sleep(STALL));
    let mut seen = 0;
    loop {
        while p.outstanding < in_flight {
            let Some(at) = p.next_call() else { break };
            let (mut client, request) = (client.clone(), request.clone());
            calls.spawn_local(async move { (at, client.echo(request).await) });
            p.started();
        }
        let joined = tokio::select! {
            joined = calls.join_next() => joined,
            () = &mut stall => {
                if p.completed == seen {
                    return Err(format!("no call completed for {STALL:?}").into());
                }
                seen = p.completed;
                stall.as_mut().reset(tokio::time::Instant::now() + STALL);
                continue;
            }
        };
        let Some(joined) = joined else {
            return Ok(p);
        };
        let (at, response) = joined?;
        check(response?.get_ref(), point.fields)?;
        p.completed(at);
    }
}

/// Checks an echo: an empty key and the request's fields.
fn check(record: &Record, fields: Fields) -> Result<(), BoxError> {
    if !record.key.is_empty() || record.fields.len() != fields.count {
        return Err(format!(
            "echo with a key of {} B and {} fields (expected none and {})",
            record.key.len(),
            record.fields.len(),
            fields.count
        )
        .into());
    }
    for (i, field) in record.fields.iter().enumerate() {
        check_field(i, field, fields)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpc::plan::{System, Transport};

    fn point(in_flight: usize) -> Point {
        Point {
            system: System::Tonic,
            transport: Transport::Tcp,
            fields: Fields { count: 2, len: 100 },
            in_flight,
            link: crate::harness::Link::Plain,
        }
    }

    const RUN: Budget = Budget::Time(Duration::from_millis(50));

    fn cpus() -> Cpus {
        (0, 1 % crate::harness::cpus())
    }

    #[test]
    fn one_in_flight_times_every_call() {
        let r = run(&point(1), RUN, cpus()).unwrap();
        assert!(r.calls > 0);
        assert_eq!(r.latency.count(), r.calls);
        assert!(r.elapsed > Duration::ZERO);
        assert!(r.server_cpu > Duration::ZERO && r.client_cpu > Duration::ZERO);
    }

    #[test]
    fn pipelined_samples_calls() {
        let r = run(&point(16), RUN, cpus()).unwrap();
        assert!(r.calls > 0);
        assert!(r.latency.count() > 0 && r.latency.count() <= r.calls);
    }

    #[test]
    fn count_budget_makes_exactly_that_many_calls() {
        let r = run(&point(4), Budget::Count(100), cpus()).unwrap();
        assert_eq!(r.calls, 100);
        assert!(r.latency.count() > 0);
    }

    #[test]
    fn a_side_that_fails_ends_the_run() {
        let nowhere = 1 << 20;
        for (what, cpus) in [("server", (0, nowhere)), ("client", (nowhere, cpus().1))] {
            let start = Instant::now();
            let e = run(&point(1), RUN, cpus).expect_err(what).to_string();
            assert!(e.contains(&format!("tonic {what}: pinning")), "{e}");
            assert!(start.elapsed() < Duration::from_secs(5), "{what}: {e}");
        }
    }

    #[test]
    fn checks_the_echo() {
        let f = |count, len| Fields { count, len };
        let ok = Record {
            key: Bytes::new(),
            fields: vec![Bytes::from(vec![fill(0); 3]), Bytes::from(vec![fill(1); 3])],
        };
        assert!(check(&ok, f(2, 3)).is_ok());
        assert!(check(&ok, f(1, 3)).is_err());
        assert!(check(&ok, f(2, 4)).is_err());
        let mut bad = ok.clone();
        bad.fields[1] = Bytes::from(vec![fill(1), fill(1), 0]);
        assert!(check(&bad, f(2, 3)).is_err());
        let swapped = Record {
            key: Bytes::new(),
            fields: vec![ok.fields[1].clone(), ok.fields[0].clone()],
        };
        assert!(check(&swapped, f(2, 3)).is_err());
        let keyed = Record {
            key: Bytes::from_static(b"k"),
            ..ok
        };
        assert!(check(&keyed, f(2, 3)).is_err());
        let empty = Record {
            key: Bytes::new(),
            fields: vec![Bytes::new()],
        };
        assert!(check(&empty, f(1, 0)).is_ok());
    }
}
