//! The open-loop load generator's driver (Cornflakes section 6.1.1): requests leave at Poisson
//! arrival times at an offered rate, whether or not earlier ones were answered, from one
//! client event loop over many sessions; every response is checked against the bytes the
//! store was loaded with. The schedule, the window's tally and latency from each request's
//! *scheduled* time are [`harness::loadgen`](crate::harness::loadgen)'s; this file owns the
//! sockets and the clock.
//!
//! One run at one rate: warm-up, then a measured window bracketed by `mark` and `end`
//! control calls (the server reads its loop thread's CPU time at each), then a bounded drain.
//! A request that cannot be sent yet (the session's window is full) waits in a backlog and
//! keeps its scheduled time.
//!
//! The client busy-polls while there is work, and when a turn has found none for [`SPIN`] it
//! sleeps: until just before the next arrival, and with requests outstanding for [`NAP`] at
//! most (the loop cannot be woken by the next arrival, only by an answer). On a machine doing
//! other work a thread that never sleeps is descheduled for whole time slices (milliseconds,
//! during which its requests wait) and, spinning, takes the CPU share the server's thread
//! needs, where one that sleeps is woken promptly. At loads near the server's limit every turn
//! finds work and the client never sleeps.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::{Duration, Instant};

use ferry::Context;
use ferry_kv::fill;
use ferry_kv::proto::ferry::kv::{self as pb, kv_service};
use ferry_rpc::session::ClientConfig;
use ferry_rpc::{Addr, Code, Continuation, EventLoop, Incoming, LoopConfig, SessionId, Status};
use ferry_transport::Payload;

use super::System;
use super::peers::{self, KvCodec, KvRequest};
use super::server::CONTROL;
use super::workload::dist::{self, Stream};
use super::workload::{Object, Op, Workload};
use crate::BoxError;
use crate::harness::loadgen::{OpenLoop, Outcome, Poisson};
use crate::harness::thread_cpu_time;
use crate::harness::window::{self, END, MARK, Readings};

/// How long the drain after a window may go on sending and waiting for answers; requests of
/// the window still unsent or unanswered then are counted unanswered.
const DRAIN: Duration = Duration::from_secs(2);

/// How long the control calls may take after the drain before the run fails.
const CONTROL_LIMIT: Duration = Duration::from_secs(10);

/// Requests outstanding per session at most (the client window).
const WINDOW: usize = 256;

/// How long before the next arrival a sleeping client wakes (a sleep ends up to the timer
/// slack, 50 µs, late).
const WAKE_EARLY: Duration = Duration::from_micros(60);

/// How long the client busy-polls after its last piece of work before it sleeps.
const SPIN: Duration = Duration::from_micros(50);

/// The longest sleep with requests outstanding.
const NAP: Duration = Duration::from_micros(100);

/// One run's settings.
#[derive(Debug, Clone)]
pub(super) struct RunSpec {
    /// Offered requests per second.
    pub(super) rate: f64,
    /// Sessions (connections) the requests are spread over, round robin.
    pub(super) sessions: usize,
    /// Before the window.
    pub(super) warmup: Duration,
    /// The measured window.
    pub(super) window: Duration,
    /// Seeds the arrival times.
    pub(super) seed: u64,
}

/// What one run measured.
#[derive(Debug, Clone)]
pub(super) struct Point {
    /// The window's tally: offered, achieved, latency, unanswered.
    pub(super) outcome: Outcome,
    /// The server loop thread's CPU time over the window.
    pub(super) server_cpu: Duration,
    /// The time the server loop spent working over the window (not polling or sleeping).
    pub(super) server_busy: Duration,
    /// Requests the server served between the control calls.
    pub(super) server_requests: u64,
    /// The client thread's CPU time over the window.
    pub(super) client_cpu: Duration,
}

/// The shared state of a run, touched by the driver and by the continuations.
struct State {
    workload: Workload,
    /// The peer's codec (client side) and its method, for peer systems.
    codec: Option<(Box<dyn KvCodec>, u16)>,
    /// The schedule and the window's tally.
    open: OpenLoop,
    /// Load requests sent and not answered yet.
    outstanding: u64,
    /// The first wrong response or failed call: the run fails with it.
    error: Option<String>,
}

/// Runs the workload at `spec.rate` against `system` at `addr`; `readings` are the server's.
pub(super) fn run(
    workload: Workload,
    system: System,
    addr: &Addr,
    readings: &Readings,
    spec: &RunSpec,
) -> Result<Point, BoxError> {
    let mut lp = EventLoop::new(LoopConfig {
        spin: Duration::MAX,
        client: ClientConfig { window: WINDOW },
        ..LoopConfig::default()
    })?;
    let sessions = (0..spec.sessions.max(1))
        .map(|_| lp.connect(addr))
        .collect::<Result<Vec<_>, _>>()?;
    // The control calls have a session of their own: a full request window of the load's
    // sessions must not refuse them.
    let control_session = lp.connect(addr)?;
    let ctx = lp.context(sessions[0]).ok_or("the session is gone")?;
    let arrivals = Poisson::try_new(spec.rate, dist::rng(spec.seed, Stream::Arrivals))?;
    let open = OpenLoop::new(arrivals, Instant::now(), spec.warmup, spec.window);
    let window = open.window();
    let state = Rc::new(RefCell::new(State {
        workload,
        codec: system
            .codec_name()
            .map(|n| peers::codec(n).map(|e| ((e.new)(), e.method())))
            .transpose()?,
        open,
        outstanding: 0,
        error: None,
    }));
    // Requests due and not yet sent: their scheduled time and what they ask, drawn when due
    // (so the trace's mix does not depend on backpressure).
    let mut backlog: VecDeque<(Instant, Op)> = VecDeque::new();
    let mut turn = 0usize;
    let mut marked = None;
    let mut client_cpu0 = None;
    let mut last_work = Instant::now();

    // Until the window's end, and past it if the window started while this thread was not
    // running (a busy machine): the server's readings must bracket it.
    while Instant::now() < window.end || marked.is_none() {
        let now = Instant::now();
        if marked.is_none() && now >= window.start {
            client_cpu0 = Some(thread_cpu_time());
            marked = Some(window::call(&mut lp, control_session, CONTROL, MARK)?);
        }
        schedule(&state, now, &mut backlog);
        send_due(&mut lp, &sessions, &mut turn, &ctx, &state, &mut backlog)?;
        let worked = lp.turn();
        let s = state.borrow();
        if let Some(e) = &s.error {
            return Err(e.clone().into());
        }
        let now = Instant::now();
        if worked || !backlog.is_empty() {
            last_work = now;
        } else if now.duration_since(last_work) >= SPIN {
            let next = if marked.is_none() {
                window.start
            } else {
                window.end
            };
            let mut wake = s.open.next().min(next).checked_sub(WAKE_EARLY).unwrap_or(now);
            if s.outstanding > 0 {
                wake = wake.min(now + NAP);
            }
            if wake > now {
                std::thread::sleep(wake - now);
            }
        }
    }
    let client_cpu = thread_cpu_time().saturating_sub(client_cpu0.unwrap_or_default());
    let ended = window::call(&mut lp, control_session, CONTROL, END)?;
    // Drain (bounded): requests of the window still due are sent, and timed from when they
    // were due; what is unanswered after the bound counts as such.
    let drained = Instant::now() + DRAIN;
    loop {
        let now = Instant::now();
        if now < drained {
            schedule(&state, now, &mut backlog);
            send_due(&mut lp, &sessions, &mut turn, &ctx, &state, &mut backlog)?;
        }
        lp.turn();
        let s = state.borrow();
        if let Some(e) = &s.error {
            return Err(e.clone().into());
        }
        let answered = marked.as_ref().is_some_and(|m| m.borrow().is_some()) && ended.borrow().is_some();
        let idle = backlog.is_empty() && s.outstanding == 0;
        if answered && (idle || now >= drained) {
            break;
        }
        if now >= drained + CONTROL_LIMIT {
            return Err(format!(
                "the server did not answer the control calls within {:?} of the window's end",
                DRAIN + CONTROL_LIMIT
            )
            .into());
        }
    }
    for answer in [marked.as_ref(), Some(&ended)].into_iter().flatten() {
        if let Some(Err(e)) = answer.borrow().as_ref() {
            return Err(e.clone().into());
        }
    }
    let Some(span) = readings.take() else {
        return Err("the server did not answer the control calls".into());
    };
    let outcome = state.borrow().open.outcome();
    Ok(Point {
        outcome,
        server_cpu: span.cpu,
        server_busy: span.busy,
        server_requests: span.served,
        client_cpu,
    })
}

/// Moves what the schedule has due by `now` into the backlog, drawing each request's op.
fn schedule(state: &Rc<RefCell<State>>, now: Instant, backlog: &mut VecDeque<(Instant, Op)>) {
    let mut s = state.borrow_mut();
    while let Some(at) = s.open.due(now) {
        let op = s.workload.next_op();
        backlog.push_back((at, op));
    }
}

/// What a response must hold: `(key, part, length)` of every value, in order.
type Expected = Vec<(u32, u32, u32)>;

/// The values `op` must return, from the key space.
pub(super) fn expected(objects: &[Object], op: &Op) -> Expected {
    let single = |k: u32| (k, 0, objects[k as usize].parts[0]);
    match op {
        Op::Get(k) => vec![single(*k)],
        Op::GetList(k) => objects[*k as usize]
            .parts
            .iter()
            .enumerate()
            .map(|(p, &len)| (*k, p as u32, len))
            .collect(),
        Op::GetM(keys) => keys.iter().map(|&k| single(k)).collect(),
        Op::Put(_) => Vec::new(),
    }
}

/// What kind of response a request gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    /// A `Count` of the buffers written (`Put`).
    Put(u64),
    /// One value (`Get`).
    Single,
    /// A list of values (`GetList`, `GetM`).
    Many,
}

/// Sends what is due, round robin over the sessions, until a session's window is full.
fn send_due(
    lp: &mut EventLoop,
    sessions: &[SessionId],
    turn: &mut usize,
    ctx: &Context,
    state: &Rc<RefCell<State>>,
    backlog: &mut VecDeque<(Instant, Op)>,
) -> Result<(), BoxError> {
    while let Some((at, op)) = backlog.front() {
        let session = sessions[*turn % sessions.len()];
        match issue(lp, session, ctx, state, *at, op) {
            Ok(()) => {
                backlog.pop_front();
                *turn += 1;
            }
            Err(s) if s.code == Code::ResourceExhausted => break,
            Err(s) => return Err(format!("sending a request: {s}").into()),
        }
    }
    Ok(())
}

/// Builds and starts the request `op`, scheduled at `at`.
fn issue(
    lp: &mut EventLoop,
    session: SessionId,
    ctx: &Context,
    state: &Rc<RefCell<State>>,
    at: Instant,
    op: &Op,
) -> Result<(), Status> {
    let mut guard = state.borrow_mut();
    let State { workload, codec, .. } = &mut *guard;
    let objects = workload.objects();
    let expect = expected(objects, op);
    let key_of = |k: u32| objects[k as usize].key.as_slice();
    // Put values: the object's own sizes and fill bytes, so later reads still check.
    let put_values: Vec<Vec<u8>> = match op {
        Op::Put(k) => objects[*k as usize]
            .parts
            .iter()
            .enumerate()
            .map(|(p, &len)| fill::value(key_of(*k), p as u32, len as usize))
            .collect(),
        _ => Vec::new(),
    };
    let answer = match *op {
        Op::Put(_) => Answer::Put(put_values.len() as u64),
        Op::Get(_) => Answer::Single,
        Op::GetList(_) | Op::GetM(_) => Answer::Many,
    };
    let then = continuation(state.clone(), at, expect, answer);
    match codec {
        None => {
            let text = |k: u32| String::from_utf8_lossy(key_of(k)).into_owned();
            match op {
                Op::Get(k) | Op::GetList(k) => {
                    let mut m = pb::Key::new(ctx);
                    m.set_key(text(*k));
                    let method = if answer == Answer::Single {
                        kv_service::GET
                    } else {
                        kv_service::GET_LIST
                    };
                    drop(guard);
                    lp.call(session, method, &m, then)?;
                }
                Op::GetM(ks) => {
                    let mut m = pb::Keys::new(ctx);
                    m.init_keys(ks.len());
                    for &k in ks {
                        m.append_keys(text(k));
                    }
                    drop(guard);
                    lp.call(session, kv_service::GET_M, &m, then)?;
                }
                Op::Put(k) => {
                    let mut m = pb::Put::new(ctx);
                    m.set_key(text(*k));
                    for v in &put_values {
                        m.append_values(&v[..]);
                    }
                    drop(guard);
                    lp.call(session, kv_service::PUT, &m, then)?;
                }
            }
        }
        Some((codec, method)) => {
            let method = *method;
            let values: Vec<&[u8]> = put_values.iter().map(Vec::as_slice).collect();
            let keys: Vec<&[u8]> = match op {
                Op::GetM(ks) => ks.iter().map(|&k| key_of(k)).collect(),
                _ => Vec::new(),
            };
            let request = match op {
                Op::Get(k) => KvRequest::Get(key_of(*k)),
                Op::GetList(k) => KvRequest::GetList(key_of(*k)),
                Op::GetM(_) => KvRequest::GetM(&keys),
                Op::Put(k) => KvRequest::Put {
                    key: key_of(*k),
                    values: &values,
                },
            };
            let bytes = codec
                .encode_request(&request)
                .map_err(|e| Status::new(Code::Internal, e.to_string()))?
                .to_vec();
            drop(guard);
            lp.call_payload(session, method, Payload::Bytes(&bytes), then)?;
        }
    }
    state.borrow_mut().outstanding += 1;
    Ok(())
}

/// The continuation of a request scheduled at `at`: checks the response, records it.
fn continuation(state: Rc<RefCell<State>>, at: Instant, expect: Expected, answer: Answer) -> Continuation {
    Box::new(move |_: &mut EventLoop, result: Result<Incoming<'_>, Status>| {
        let now = Instant::now();
        let mut s = state.borrow_mut();
        s.outstanding -= 1;
        let checked = match result {
            Ok(incoming) => check(&mut s, incoming, &expect, answer),
            Err(status) => Err(format!("a request failed: {status}")),
        };
        match checked {
            Ok(()) => s.open.answered(at, now),
            Err(e) => drop(s.error.get_or_insert(e)),
        }
    })
}

/// Checks a response against what it must hold.
fn check(s: &mut State, incoming: Incoming<'_>, expect: &Expected, answer: Answer) -> Result<(), String> {
    let State { workload, codec, .. } = s;
    let objects = workload.objects();
    let mut at = 0usize;
    let mut bad: Option<String> = None;
    let mut value = |v: &[u8]| {
        if bad.is_some() {
            return;
        }
        let Some(&(k, p, len)) = expect.get(at) else {
            bad = Some(format!("a response with more than {} values", expect.len()));
            return;
        };
        at += 1;
        let key = &objects[k as usize].key;
        if v.len() != len as usize {
            bad = Some(format!(
                "value {p} of key {:?}: {} B, expected {len}",
                String::from_utf8_lossy(key),
                v.len()
            ));
        } else if let Some(i) = fill::mismatch(key, p, v) {
            bad = Some(format!(
                "value {p} of key {:?} differs at byte {i}",
                String::from_utf8_lossy(key)
            ));
        }
    };
    match (codec, answer) {
        (None, Answer::Put(parts)) => {
            let c = incoming
                .decode::<pb::Count<'static>>()
                .map_err(|e| format!("a Put response: {e}"))?;
            if c.count() != parts {
                return Err(format!(
                    "a Put response counts {} buffers, not {parts}",
                    c.count()
                ));
            }
            return Ok(());
        }
        (None, Answer::Single) => {
            let v = incoming
                .decode::<pb::Value<'static>>()
                .map_err(|e| format!("a Value response: {e}"))?;
            value(v.value());
        }
        (None, Answer::Many) => {
            let v = incoming
                .decode::<pb::Values<'static>>()
                .map_err(|e| format!("a Values response: {e}"))?;
            for x in v.values().iter() {
                value(x);
            }
        }
        (Some((codec, _)), _) => {
            let input = crate::systems::Input {
                bytes: incoming.bytes().ok_or("a peer's response without bytes")?,
                shared: incoming.shared(),
            };
            codec
                .read_response(input, &mut value)
                .map_err(|e| format!("a peer's response: {e}"))?;
        }
    }
    if let Some(b) = bad {
        return Err(b);
    }
    if at != expect.len() {
        return Err(format!("a response with {at} values, expected {}", expect.len()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::super::server::KvBenchServer;
    use super::super::workload::{self, Kind, WorkloadSpec};
    use super::super::{System, load_store};
    use super::*;
    use crate::harness::Named;

    /// A store of 4 keys of one 64 B value each, with `corrupt` (if any) given other bytes of
    /// the same length, served on this machine's first CPU.
    fn serve(
        corrupt: Option<usize>,
    ) -> (
        Arc<ferry_kv::Store>,
        KvBenchServer,
        WorkloadSpec,
        ferry_testkit::Scratch,
    ) {
        let spec = WorkloadSpec {
            keys: Some(4),
            ycsb_buffers: 1,
            ycsb_size: 64,
            ..WorkloadSpec::new(Kind::Ycsb)
        };
        let w = workload::build(&spec, 1).unwrap();
        let store = load_store(&w).unwrap();
        if let Some(i) = corrupt {
            let key = &w.objects()[i].key;
            // Part 1's bytes where part 0's belong: the right length, the wrong content.
            store.put(key, &[&fill::value(key, 1, 64)]).unwrap();
        }
        let scratch = ferry_testkit::Scratch::new("loadgen");
        let server = KvBenchServer::start(&store, 0, None, Duration::from_micros(100), &scratch.0).unwrap();
        (store, server, spec, scratch)
    }

    fn run_at(system: System, corrupt: Option<usize>) -> Result<Point, BoxError> {
        let (_store, server, spec, _scratch) = serve(corrupt);
        let spec_run = RunSpec {
            rate: 2_000.0,
            sessions: 2,
            warmup: Duration::from_millis(20),
            window: Duration::from_millis(100),
            seed: 3,
        };
        let result = run(
            workload::build(&spec, 1)?,
            system,
            &server.addrs[1],
            &server.readings,
            &spec_run,
        );
        server.stop();
        result
    }

    #[test]
    fn every_response_is_checked_and_a_wrong_value_fails_the_run() {
        for system in [System::Ferry, System::Prost] {
            let point = run_at(system, None).expect("a run against the right values");
            // Answers were checked: in the window, or during the drain when a busy machine
            // kept the server from running in the 100 ms window (then the window's own
            // readings are 0, which is the accounting's business, not this test's).
            let checked = point.outcome.answered + point.outcome.late;
            assert!(checked > 0, "{}: no answer was checked", system.name());
            // Every key is read (4 keys, Zipf, about 200 requests): the corrupted one too.
            let err = run_at(system, Some(0)).expect_err("a wrong value went unnoticed");
            assert!(
                err.to_string().contains("differs at byte"),
                "{}: {err}",
                system.name()
            );
        }
    }
}
