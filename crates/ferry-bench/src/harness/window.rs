//! The measured window, one protocol for every benchmark with a server: after the warm-up the
//! client sends `mark`, then the measured load, then `end`; the server reads its own thread's
//! CPU time, busy time and requests served at each ([`Reading::here`]), so that its CPU per
//! request covers exactly the window and nothing of the warm-up or the drain.
//!
//! ```text
//!  client   warm-up │ mark ⇄ │ t0, cpu0 ── measured requests ── t1, cpu1 │ end ⇄ │ drain
//!  server   warm-up │ mark: Reading ── serve, count_request() each ──── end: Reading │
//! ```
//!
//! What carries the two words differs by server: a ferry-rpc service has the [`Control`]
//! method beside its own, wrapped in [`Counted`] ([`call`] is the client's side); the
//! transport benchmarks send them as frames with their own ids; the tonic peer as calls whose
//! key names them. Every one of them records a [`Reading`] per word in [`Readings`] and the
//! benchmark takes the [`Span`].

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use ferry_rpc::{Call, Code, EventLoop, MethodInfo, Mode, Reply, Request, Service, SessionId, Shape, Status};
use ferry_transport::Payload;

use super::cpu::thread_cpu_time;
use crate::BoxError;

/// The word that opens the window.
pub const MARK: &[u8] = b"mark";
/// The word that closes it.
pub const END: &[u8] = b"end";

/// How long a control call may take to be answered: a hang guard, not a measurement.
const STALL: Duration = Duration::from_secs(30);

thread_local! {
    /// Requests served on this (a server loop's) thread, counted by [`count_request`].
    static SERVED: Cell<u64> = const { Cell::new(0) };
}

/// Counts one request served on the calling (server) thread.
#[inline]
pub fn count_request() {
    SERVED.set(SERVED.get() + 1);
}

/// A server thread's counters at one control word.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reading {
    /// The thread's CPU time so far.
    pub cpu: Duration,
    /// The time the thread's ferry-rpc event loops spent working (zero on other threads).
    pub busy: Duration,
    /// Requests counted on the thread so far ([`count_request`]).
    pub served: u64,
    /// Syscalls the thread has entered, if the run counts them ([`super::syscalls`]).
    pub syscalls: Option<u64>,
}

impl Reading {
    /// The calling thread's counters now.
    pub fn here() -> Reading {
        Reading {
            cpu: thread_cpu_time(),
            busy: ferry_rpc::thread_busy_time(),
            served: SERVED.get(),
            syscalls: super::syscalls::thread_syscalls(),
        }
    }
}

/// What a server thread did between `mark` and `end`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Span {
    /// CPU time.
    pub cpu: Duration,
    /// Event-loop busy time.
    pub busy: Duration,
    /// Requests served.
    pub served: u64,
    /// Syscalls entered, if counted at both words.
    pub syscalls: Option<u64>,
}

impl Span {
    /// CPU per request served, in nanoseconds.
    pub fn cpu_per_request_ns(&self) -> f64 {
        self.cpu.as_nanos() as f64 / self.served.max(1) as f64
    }
}

/// The readings a server took at the control words, for the benchmark's thread.
#[derive(Debug, Default)]
pub struct Readings {
    mark: Mutex<Option<Reading>>,
    end: Mutex<Option<Reading>>,
}

impl Readings {
    /// Records `reading` for `word` (`MARK` or `END`); `false` for any other word.
    pub fn record(&self, word: &[u8], reading: Reading) -> bool {
        let slot = match word {
            MARK => &self.mark,
            END => &self.end,
            _ => return false,
        };
        *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(reading);
        true
    }

    /// The last window, taken (so a run never sees its predecessor's): `None` unless both
    /// words were read.
    pub fn take(&self) -> Option<Span> {
        let take = |m: &Mutex<Option<Reading>>| m.lock().unwrap_or_else(PoisonError::into_inner).take();
        let (mark, end) = (take(&self.mark)?, take(&self.end)?);
        Some(Span {
            cpu: end.cpu.saturating_sub(mark.cpu),
            busy: end.busy.saturating_sub(mark.busy),
            served: end.served.saturating_sub(mark.served),
            syscalls: end.syscalls.zip(mark.syscalls).map(|(e, m)| e.saturating_sub(m)),
        })
    }
}

/// The control method of a ferry-rpc server: `mark` and `end` record the loop thread's
/// [`Reading`] and are answered with their own word.
#[derive(Debug, Clone)]
pub struct Control {
    /// The method's path (its id is [`ferry_transport::method_id`] of it).
    pub path: &'static str,
    /// Where the readings go.
    pub readings: std::sync::Arc<Readings>,
}

impl Service for Control {
    fn methods(&self) -> Vec<MethodInfo> {
        vec![MethodInfo {
            path: self.path,
            id: ferry_transport::method_id(self.path),
            request: None,
            mode: Mode::Foreground,
            shape: Shape::Unary,
        }]
    }

    fn call<'a>(&self, _: &Call<'a>, request: Request<'a>, reply: &mut Reply<'_>) -> Result<(), Status> {
        let word = request.incoming().bytes().unwrap_or_default();
        if !self.readings.record(word, Reading::here()) {
            return Err(Status::new(Code::InvalidArgument, "unknown control word"));
        }
        reply.send_payload(Payload::Bytes(word))
    }
}

/// A service whose every call is counted ([`count_request`]) before it is served.
#[derive(Debug, Clone)]
pub struct Counted<S>(pub S);

impl<S: Service> Service for Counted<S> {
    fn methods(&self) -> Vec<MethodInfo> {
        self.0.methods()
    }

    fn call<'a>(&self, call: &Call<'a>, request: Request<'a>, reply: &mut Reply<'_>) -> Result<(), Status> {
        count_request();
        self.0.call(call, request, reply)
    }
}

/// An answer to a control call, once it has come: `Ok` if the server echoed the word.
pub type Answer = Rc<RefCell<Option<Result<(), String>>>>;

/// Starts the control call `word` to `method` on `session`; the returned cell fills with its
/// answer. The loop keeps turning for the caller's own work meanwhile.
pub fn call(
    lp: &mut EventLoop,
    session: SessionId,
    method: u16,
    word: &'static [u8],
) -> Result<Answer, BoxError> {
    let answer: Answer = Rc::default();
    let slot = answer.clone();
    lp.call_payload(
        session,
        method,
        Payload::Bytes(word),
        Box::new(move |_, r| {
            *slot.borrow_mut() = Some(match r {
                Ok(r) if r.bytes() == Some(word) => Ok(()),
                Ok(_) => Err("a control call's answer is not its word".to_owned()),
                Err(s) => Err(format!("a control call failed: {s}")),
            });
        }),
    )
    .map_err(|s| format!("starting a control call: {s}"))?;
    Ok(answer)
}

/// [`call`], then turns the loop until it is answered (at most 30 s, a hang guard).
pub fn call_and_wait(
    lp: &mut EventLoop,
    session: SessionId,
    method: u16,
    word: &'static [u8],
) -> Result<(), BoxError> {
    let answer = call(lp, session, method, word)?;
    let until = Instant::now() + STALL;
    loop {
        if let Some(r) = answer.borrow_mut().take() {
            return Ok(r?);
        }
        if Instant::now() > until {
            return Err(format!("a control call took more than {STALL:?}").into());
        }
        lp.turn();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_is_end_less_mark_and_is_taken_once() {
        let r = Readings::default();
        let at = |ms: u64, served: u64| Reading {
            cpu: Duration::from_millis(ms),
            busy: Duration::from_millis(ms / 2),
            served,
            syscalls: Some(served * 3),
        };
        assert!(r.record(MARK, at(10, 5)));
        assert_eq!(r.take(), None, "no end yet");
        assert!(r.record(MARK, at(10, 5)));
        assert!(r.record(END, at(30, 25)));
        assert!(!r.record(b"other", at(0, 0)));
        let span = r.take().unwrap();
        assert_eq!(
            span,
            Span {
                cpu: Duration::from_millis(20),
                busy: Duration::from_millis(10),
                served: 20,
                syscalls: Some(60),
            }
        );
        // A side without a count at either word has none.
        assert!(r.record(
            MARK,
            Reading {
                syscalls: None,
                ..at(0, 0)
            }
        ));
        assert!(r.record(END, at(1, 1)));
        assert_eq!(r.take().unwrap().syscalls, None);
        assert_eq!(span.cpu_per_request_ns(), 1e6);
        assert_eq!(r.take(), None);
    }

    #[test]
    fn requests_are_counted_per_thread() {
        let before = Reading::here().served;
        count_request();
        count_request();
        assert_eq!(Reading::here().served, before + 2);
        let elsewhere = std::thread::spawn(|| Reading::here().served).join().unwrap();
        assert_eq!(elsewhere, 0);
    }
}
