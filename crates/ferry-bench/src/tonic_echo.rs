//! The tonic peer of `ferry bench rpc`: one measured run of a gRPC unary echo with tonic
//! (HTTP/2 over TCP loopback, prost messages), for the RPC benchmark to set beside Ferry's.
//!
//! - **server**: a tonic [`Server`] on a current-thread tokio runtime, on a thread pinned to
//!   `server_cpu`, bound to `127.0.0.1:0`. Its one method, `ferry_bench.echo.Echo/Echo`
//!   (`schema/echo.proto`), answers with the [`Record`] it was sent: prost decodes the request's
//!   `bytes` fields as [`Bytes`] slices of tonic's receive buffer and encodes the same slices
//!   into the response, so the server copies nothing beyond what prost and tonic do.
//! - **client**: an [`EchoClient`] over one [`Channel`] (one HTTP/2 connection), on a
//!   current-thread runtime on a thread pinned to `client_cpu`. `in_flight` tasks each loop
//!   "call, check the echo, call again" (a closed loop: a new call as each one completes). Every
//!   request is one [`Record`] with an empty key and `fields` values of `field_len` bytes, built
//!   once; a call clones it (reference counts, no byte copies). Every response is checked: the
//!   number of fields, and each field's length, first and last byte.
//!
//! Both sides use tonic's defaults (HTTP/2 windows and frame sizes, no compression, no
//! per-call timeout), with `TCP_NODELAY` on both ends. One run is one connection:
//!
//! ```text
//!  client (CPU a)  warm-up │ MARK ⇄ │ t0, cpu0 ── calls, in_flight outstanding ── t1, cpu1 │ END ⇄
//!  server (CPU b)  warm-up │ MARK: cpu0, calls0 ── echo every call ───── END: cpu1, calls1 │
//! ```
//!
//! The warm-up is a tenth of the budget ([`Budget::warmup`]); each phase drains its calls
//! before the next begins. `MARK` and `END` are echo calls whose key names them: the server
//! reads its own thread's CPU time ([`thread_cpu_time`]) and its count of echoed calls when it
//! handles them, so its CPU per call covers exactly the measured calls (its runtime runs every
//! connection task and handler on that one thread). The run fails if the server's count over
//! the window is not the client's.
//!
//! Round-trip latency is from just before a call is issued to just after its response is
//! checked, into a [`Histogram`] in nanoseconds. With one call in flight every call is timed,
//! one clock reading each (the end of one is the start of the next); with more, every 16th
//! call. calls/s = calls in the window / (t1 - t0).
//!
//! Every run stops by itself: the client gives up on a connection after 10 s and on a phase in
//! which no call completed for 10 s; the server stops when the client's thread ends (whether it
//! succeeded or not), and gives up on closing its connection after 5 s.
//!
//! What it is NOT: a tuned gRPC setup (no adaptive windows, no connection pools) or a
//! multi-threaded one; it is tonic as an application would use it, on one core per side like
//! Ferry's runs.

use std::cell::{Cell, RefCell};
use std::net::{SocketAddr, TcpListener};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::runtime::Runtime;
use tokio::sync::watch;
use tokio::task::{JoinSet, LocalSet};
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Channel, Endpoint, Server};
use tonic::{Request, Response, Status};

use crate::BoxError;
use crate::generated::record_prost::Record;
use crate::generated::record_prost::echo::echo_client::EchoClient;
use crate::generated::record_prost::echo::echo_server::{Echo, EchoServer};
use crate::harness::{self, Budget, Histogram, thread_cpu_time};

/// Fill byte of the request's values (the echo carries them back).
const FILL: u8 = 0x5a;

/// Keys of the control calls; echo calls have an empty key.
const MARK: &[u8] = b"ferry-bench/mark";
const END: &[u8] = b"ferry-bench/end";

/// Calls timed when more than one is in flight: one in this many.
const TIMED_EVERY: u64 = 16;

/// The client gives up on connecting, on a control call, or on a phase in which no call
/// completed, after this long.
const STALL: Duration = Duration::from_secs(10);

/// The server gives up on closing its connection this long after the client's thread ended.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// The settings of one run.
#[derive(Debug, Clone, Copy)]
pub struct TonicRun {
    /// CPU of the server's thread.
    pub server_cpu: usize,
    /// CPU of the client's thread.
    pub client_cpu: usize,
    /// Calls the client keeps outstanding (at least 1).
    pub in_flight: usize,
    /// Values in each request's `fields`.
    pub fields: usize,
    /// Bytes of each value.
    pub field_len: usize,
    /// The measured window, after a warm-up of a tenth of it: a time, or a number of calls.
    pub budget: Budget,
}

/// What one run measured, over the measured window.
#[derive(Debug, Clone)]
pub struct TonicResult {
    /// Calls completed per second of the window.
    pub calls_per_sec: f64,
    /// Round trips in nanoseconds: every call with one in flight, every 16th with more.
    pub latency: Histogram,
    /// The server thread's CPU time (user plus system) per call.
    pub server_cpu_per_call_ns: f64,
    /// The client thread's CPU time (user plus system) per call.
    pub client_cpu_per_call_ns: f64,
    /// Calls completed in the window.
    pub calls: u64,
}

/// Runs one tonic echo benchmark (see the module docs) and returns its measurements.
pub fn run(opts: &TonicRun) -> Result<TonicResult, BoxError> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let (stop, stopped) = watch::channel(false);
    let (client, server) = thread::scope(|s| -> Result<_, BoxError> {
        let server = thread::Builder::new()
            .name("tonic-server".to_owned())
            .spawn_scoped(s, move || serve(opts.server_cpu, listener, stopped))?;
        let client = thread::Builder::new()
            .name("tonic-client".to_owned())
            .spawn_scoped(s, move || drive(opts, addr));
        // Whatever became of the client (even if its thread could not start), the server stops.
        let client = client.map_err(BoxError::from).and_then(joined);
        let _ = stop.send(true);
        Ok((client, joined(server)))
    })?;
    let (client, server) = (client.map_err(sources), server.map_err(sources));
    let (c, s) = match (client, server) {
        (Ok(c), Ok(s)) => (c, s),
        (Err(c), Err(s)) => return Err(format!("tonic client: {c}; tonic server: {s}").into()),
        (Err(e), Ok(_)) => return Err(format!("tonic client: {e}").into()),
        (Ok(_), Err(e)) => return Err(format!("tonic server: {e}").into()),
    };
    if s.calls != c.calls {
        return Err(format!(
            "the server echoed {} calls in the measured window, the client completed {}",
            s.calls, c.calls
        )
        .into());
    }
    let per_call = |cpu: Duration| cpu.as_nanos() as f64 / c.calls.max(1) as f64;
    Ok(TonicResult {
        calls_per_sec: c.calls as f64 / c.elapsed.as_secs_f64().max(1e-9),
        latency: c.latency,
        server_cpu_per_call_ns: per_call(s.cpu),
        client_cpu_per_call_ns: per_call(c.cpu),
        calls: c.calls,
    })
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

/// A current-thread runtime (timers and I/O) for the calling thread, pinned to `cpu` first.
fn pinned_runtime(cpu: usize) -> Result<Runtime, BoxError> {
    harness::pin_current_thread(cpu)?;
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

/// The server's CPU time and count of echoed calls at a control call.
type Reading = (Duration, u64);

/// The echo service, and what it saw: shared by the handler and the server's thread.
#[derive(Default)]
struct EchoState {
    /// Echo calls answered so far.
    echoed: AtomicU64,
    /// At `MARK`.
    mark: Mutex<Option<Reading>>,
    /// At `END`.
    end: Mutex<Option<Reading>>,
}

#[tonic::async_trait]
impl Echo for EchoState {
    async fn echo(&self, request: Request<Record>) -> Result<Response<Record>, Status> {
        let record = request.into_inner();
        if record.key.is_empty() {
            self.echoed.fetch_add(1, Ordering::Relaxed);
        } else {
            let reading = (thread_cpu_time(), self.echoed.load(Ordering::Relaxed));
            let slot = match &record.key[..] {
                MARK => &self.mark,
                END => &self.end,
                _ => return Err(Status::invalid_argument("unknown control key")),
            };
            *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(reading);
        }
        Ok(Response::new(record))
    }
}

/// The server's side of a run.
struct ServerSide {
    /// Calls echoed between `MARK` and `END`.
    calls: u64,
    /// CPU time of the server's thread between them.
    cpu: Duration,
}

/// Serves echo calls on `listener` until `stopped` says so (or its sender is gone).
fn serve(cpu: usize, listener: TcpListener, stopped: watch::Receiver<bool>) -> Result<ServerSide, BoxError> {
    let runtime = pinned_runtime(cpu)?;
    let state = Arc::new(EchoState::default());
    runtime.block_on(async {
        listener.set_nonblocking(true)?;
        let incoming =
            TcpIncoming::from(tokio::net::TcpListener::from_std(listener)?).with_nodelay(Some(true));
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
    let reading = |slot: &Mutex<Option<Reading>>| *slot.lock().unwrap_or_else(PoisonError::into_inner);
    let (Some((cpu0, calls0)), Some((cpu1, calls1))) = (reading(&state.mark), reading(&state.end)) else {
        return Err("the client ended without a MARK and an END".into());
    };
    Ok(ServerSide {
        calls: calls1 - calls0,
        cpu: cpu1.saturating_sub(cpu0),
    })
}

/// The client's side of a run.
struct ClientSide {
    /// Calls completed in the measured window.
    calls: u64,
    /// Length of the window.
    elapsed: Duration,
    /// CPU time of the client's thread over it.
    cpu: Duration,
    latency: Histogram,
}

/// Connects to `addr`, warms up, and measures (see the module docs).
fn drive(opts: &TonicRun, addr: SocketAddr) -> Result<ClientSide, BoxError> {
    let runtime = pinned_runtime(opts.client_cpu)?;
    // The call tasks share the phase's counters and the histogram through `Rc`: they all run on
    // this thread.
    LocalSet::new().block_on(&runtime, async {
        let channel = Endpoint::from_shared(format!("http://{addr}"))?
            .tcp_nodelay(true)
            .connect_timeout(STALL)
            .connect()
            .await?;
        let mut client = EchoClient::new(channel);
        let request = Record {
            key: Bytes::new(),
            fields: (0..opts.fields)
                .map(|_| Bytes::from(vec![FILL; opts.field_len]))
                .collect(),
        };
        let warm = Rc::new(RefCell::new(Histogram::default()));
        phase(&client, &request, opts, opts.budget.warmup(), &warm).await?;
        control(&mut client, MARK).await?;
        let latency = Rc::new(RefCell::new(Histogram::default()));
        let (t0, cpu0) = (Instant::now(), thread_cpu_time());
        let calls = phase(&client, &request, opts, opts.budget, &latency).await?;
        let (t1, cpu1) = (Instant::now(), thread_cpu_time());
        control(&mut client, END).await?;
        drop(client);
        let latency = Rc::try_unwrap(latency)
            .map_err(|_| "histogram still shared")?
            .into_inner();
        Ok(ClientSide {
            calls,
            elapsed: t1 - t0,
            cpu: cpu1.saturating_sub(cpu0),
            latency,
        })
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

/// What the call tasks of one phase share.
struct Phase {
    budget: Budget,
    start: Instant,
    /// Calls issued so far.
    issued: Cell<u64>,
    /// Calls completed so far.
    completed: Cell<u64>,
    /// A task failed: the others issue no more calls.
    failed: Cell<bool>,
}

impl Phase {
    /// Whether the budget is spent; `last` is the issuing task's latest clock reading.
    fn spent(&self, last: Instant) -> bool {
        match self.budget {
            Budget::Count(n) => self.issued.get() >= n,
            Budget::Time(d) => last - self.start >= d,
        }
    }
}

/// Keeps `opts.in_flight` calls outstanding until `budget` is spent and they have all
/// completed; returns the calls completed.
async fn phase(
    client: &EchoClient<Channel>,
    request: &Record,
    opts: &TonicRun,
    budget: Budget,
    latency: &Rc<RefCell<Histogram>>,
) -> Result<u64, BoxError> {
    let in_flight = opts.in_flight.max(1);
    let phase = Rc::new(Phase {
        budget,
        start: Instant::now(),
        issued: Cell::new(0),
        completed: Cell::new(0),
        failed: Cell::new(false),
    });
    let mut tasks = JoinSet::new();
    for _ in 0..in_flight {
        let task = call_loop(
            client.clone(),
            request.clone(),
            (opts.fields, opts.field_len),
            Rc::clone(&phase),
            Rc::clone(latency),
            in_flight == 1,
        );
        tasks.spawn_local(task);
    }
    let all = async {
        let mut first_error = None;
        while let Some(joined) = tasks.join_next().await {
            if let Err(e) = joined.map_err(BoxError::from).and_then(|r| r) {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    };
    // One timer for the phase rather than one per call: the calls are measured as tonic makes
    // them.
    let watchdog = async {
        let mut seen = phase.completed.get();
        loop {
            tokio::time::sleep(STALL).await;
            let now = phase.completed.get();
            if now == seen {
                return;
            }
            seen = now;
        }
    };
    tokio::select! {
        r = all => r?,
        () = watchdog => return Err(format!("no call completed for {STALL:?}").into()),
    }
    Ok(phase.completed.get())
}

/// One call task: call, check the echo, call again, until the phase's budget is spent. With
/// `every`, times every call (one in flight); otherwise every [`TIMED_EVERY`]th call issued.
async fn call_loop(
    mut client: EchoClient<Channel>,
    request: Record,
    shape: (usize, usize),
    phase: Rc<Phase>,
    latency: Rc<RefCell<Histogram>>,
    every: bool,
) -> Result<(), BoxError> {
    let mut last = phase.start;
    while !phase.failed.get() && !phase.spent(if every { last } else { Instant::now() }) {
        let n = phase.issued.get();
        phase.issued.set(n + 1);
        let at = if every {
            Some(last)
        } else {
            (n % TIMED_EVERY == 0).then(Instant::now)
        };
        let checked = match client.echo(request.clone()).await {
            Ok(response) => check(response.get_ref(), shape),
            Err(status) => Err(status.into()),
        };
        if let Err(e) = checked {
            phase.failed.set(true);
            return Err(e);
        }
        phase.completed.set(phase.completed.get() + 1);
        if let Some(at) = at {
            last = Instant::now();
            latency.borrow_mut().record_duration(last - at);
        }
    }
    Ok(())
}

/// Checks an echo: an empty key, `fields` values, each of `field_len` bytes that begin and end
/// with the fill byte.
fn check(record: &Record, (fields, field_len): (usize, usize)) -> Result<(), BoxError> {
    if !record.key.is_empty() || record.fields.len() != fields {
        return Err(format!(
            "echo with a key of {} B and {} fields (expected none and {fields})",
            record.key.len(),
            record.fields.len()
        )
        .into());
    }
    for (i, field) in record.fields.iter().enumerate() {
        let fill = |b: Option<&u8>| b.is_none_or(|&b| b == FILL);
        if field.len() != field_len || !fill(field.first()) || !fill(field.last()) {
            return Err(format!(
                "field {i} of the echo arrived wrong: {} B (expected {field_len} B of {FILL:#x})",
                field.len()
            )
            .into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(in_flight: usize, budget: Budget) -> TonicRun {
        let cpus = harness::cpus();
        TonicRun {
            server_cpu: 1 % cpus,
            client_cpu: 0,
            in_flight,
            fields: 2,
            field_len: 100,
            budget,
        }
    }

    #[test]
    fn one_in_flight_times_every_call() {
        let r = run(&opts(1, Budget::Time(Duration::from_millis(50)))).unwrap();
        assert!(r.calls > 0);
        assert_eq!(r.latency.count(), r.calls);
        assert!(r.calls_per_sec > 0.0);
        assert!(r.server_cpu_per_call_ns > 0.0 && r.client_cpu_per_call_ns > 0.0);
    }

    #[test]
    fn pipelined_samples_calls() {
        let r = run(&opts(16, Budget::Time(Duration::from_millis(50)))).unwrap();
        assert!(r.calls > 0);
        assert!(r.latency.count() > 0 && r.latency.count() <= r.calls);
    }

    #[test]
    fn count_budget_makes_exactly_that_many_calls() {
        let r = run(&opts(4, Budget::Count(100))).unwrap();
        assert_eq!(r.calls, 100);
        assert!(r.latency.count() > 0);
    }

    #[test]
    fn a_side_that_fails_ends_the_run() {
        let budget = Budget::Time(Duration::from_millis(50));
        let nowhere = 1 << 20;
        for (what, o) in [
            (
                "server",
                TonicRun {
                    server_cpu: nowhere,
                    ..opts(1, budget)
                },
            ),
            (
                "client",
                TonicRun {
                    client_cpu: nowhere,
                    ..opts(1, budget)
                },
            ),
        ] {
            let start = Instant::now();
            let e = run(&o).expect_err(what).to_string();
            assert!(e.contains(&format!("tonic {what}: pinning")), "{e}");
            assert!(start.elapsed() < Duration::from_secs(5), "{what}: {e}");
        }
    }

    #[test]
    fn checks_the_echo() {
        let ok = Record {
            key: Bytes::new(),
            fields: vec![Bytes::from(vec![FILL; 3]); 2],
        };
        assert!(check(&ok, (2, 3)).is_ok());
        assert!(check(&ok, (1, 3)).is_err());
        assert!(check(&ok, (2, 4)).is_err());
        let mut bad = ok.clone();
        bad.fields[1] = Bytes::from(vec![FILL, FILL, 0]);
        assert!(check(&bad, (2, 3)).is_err());
        let empty = Record {
            key: Bytes::new(),
            fields: vec![Bytes::new()],
        };
        assert!(check(&empty, (1, 0)).is_ok());
    }

    /// `cargo test -p ferry-bench --release -- --ignored --nocapture tonic_numbers`: one run of
    /// 1 s at 1 and 16 in flight, 2 fields of 2048 B, client on CPU 0 and server on CPU 1.
    #[test]
    #[ignore = "a measurement, not a test: 2 s"]
    fn tonic_numbers() {
        for in_flight in [1, 16] {
            let r = run(&TonicRun {
                server_cpu: 1 % harness::cpus(),
                client_cpu: 0,
                in_flight,
                fields: 2,
                field_len: 2048,
                budget: Budget::Time(Duration::from_secs(1)),
            })
            .unwrap();
            let q = |q| r.latency.quantile(q).unwrap_or(0);
            println!(
                "in_flight {in_flight:>2}: {} calls, {:.0} calls/s, p50 {} ns, p99 {} ns, p99.9 {} ns, server CPU {:.0} ns/call, client CPU {:.0} ns/call ({} timed)",
                r.calls,
                r.calls_per_sec,
                q(0.5),
                q(0.99),
                q(0.999),
                r.server_cpu_per_call_ns,
                r.client_cpu_per_call_ns,
                r.latency.count()
            );
        }
    }
}
