//! Figure 8's open-loop load generator: the driver, on a tokio `LocalSet`, of the harness's
//! open-loop accounting ([`crate::harness::loadgen`]: when requests are due, which fall in the
//! measured window, achieved load counting only the window's own requests, latency from the
//! scheduled time). [`drive`] sleeps until each request is due, starts the call the caller's
//! `send` makes (at most `max_in_flight` out: past it a request is dropped), reports each right
//! answer, and reads the caller's `mark` (CPU times) as the window opens and closes. It knows
//! nothing of gRPC or CPU time.
//!
//! Two latencies are kept. The harness's, from each request's scheduled time, is the issue's
//! measure (a client that falls behind shows in it). But tokio's timer ticks every
//! millisecond, so requests leave in bursts at each tick, up to 1 ms after they were due, and
//! that charges every call up to 1 ms that no server spent. Busy-waiting from the tick to the
//! due time would close the gap, but the load generator shares CPU 0 with the engine: the spin
//! would take the engine's CPU and inflate the load generator's. So Figure 8's latency is timed
//! from each send, as it was measured, and the scheduled one is recorded beside it.

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use crate::BoxError;
use crate::harness::Histogram;
use crate::harness::loadgen::{self, Arrivals, OpenLoop};

/// How long answers may still come after the last scheduled send (answers in it count as
/// achieved).
pub const DRAIN: Duration = Duration::from_secs(1);

/// What a run measured.
#[derive(Debug)]
pub struct Outcome<M> {
    /// The window's accounting: latency from the scheduled time; requests dropped, failed or
    /// not answered by the end of the drain are unanswered.
    pub window: loadgen::Outcome,
    /// Latency from the send of each of the window's requests answered right, ns.
    pub from_send: Histogram,
    /// Requests of the window not sent: `max_in_flight` were out.
    pub dropped: u64,
    /// `mark()` as the window opened, and as the sends ended.
    pub marks: (M, M),
}

impl<M> Outcome<M> {
    /// Requests of the window answered right, in it or during the drain.
    pub fn completed(&self) -> u64 {
        self.window.answered + self.window.late
    }

    /// Requests of the window sent that failed, were answered wrong, or not by the end of the
    /// drain.
    pub fn errors(&self) -> u64 {
        self.window.unanswered.saturating_sub(self.dropped)
    }
}

/// The driver's state, shared with the calls in flight.
struct State {
    open: OpenLoop,
    from_send: Histogram,
    dropped: u64,
    in_flight: usize,
}

/// Runs `arrivals` on the current `LocalSet` for `warmup` then a measured `window`: `send(i)`
/// starts the `i`-th request (its future resolves to whether the answer was right), at most
/// `max_in_flight` at once.
pub async fn drive<M, F>(
    arrivals: Arrivals,
    (warmup, window): (Duration, Duration),
    max_in_flight: usize,
    mut send: impl FnMut(u64) -> F,
    mut mark: impl FnMut() -> M,
) -> Result<Outcome<M>, BoxError>
where
    F: Future<Output = bool> + 'static,
{
    let state = Rc::new(RefCell::new(State {
        open: OpenLoop::new(arrivals, Instant::now(), warmup, window),
        from_send: Histogram::default(),
        dropped: 0,
        in_flight: 0,
    }));
    let idle = Rc::new(Notify::new());
    let mut opened = None;
    let mut i = 0u64;
    loop {
        let due = state.borrow_mut().open.due(Instant::now());
        let Some(at) = due else {
            let (done, next) = (state.borrow().open.done(), state.borrow().open.next());
            if done {
                break;
            }
            tokio::time::sleep_until(next.into()).await;
            continue;
        };
        let measured = state.borrow().open.window().contains(at);
        if measured && opened.is_none() {
            opened = Some(mark());
        }
        {
            let mut s = state.borrow_mut();
            if s.in_flight >= max_in_flight.max(1) {
                s.dropped += u64::from(measured);
                continue;
            }
            s.in_flight += 1;
        }
        let call = send(i);
        i += 1;
        let (state, idle) = (state.clone(), idle.clone());
        tokio::task::spawn_local(async move {
            let sent = Instant::now();
            let ok = call.await;
            let mut s = state.borrow_mut();
            s.in_flight -= 1;
            if ok {
                s.open.answered(at, Instant::now());
                if measured {
                    s.from_send.record_duration(sent.elapsed());
                }
            }
            if s.in_flight == 0 {
                idle.notify_one();
            }
        });
    }
    let closed = mark();
    let first = opened.ok_or("the run had no measured window")?;
    let drained = async {
        while state.borrow().in_flight > 0 {
            idle.notified().await;
        }
    };
    let _ = tokio::time::timeout(DRAIN, drained).await;
    let s = state.borrow();
    Ok(Outcome {
        window: s.open.outcome(),
        from_send: s.from_send.clone(),
        dropped: s.dropped,
        marks: (first, closed),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_driver_counts_every_answer_and_marks_the_window() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut marks = 0;
        let outcome = tokio::task::LocalSet::new()
            .block_on(
                &rt,
                drive(
                    Arrivals::uniform(2000.0).unwrap(),
                    (Duration::from_millis(5), Duration::from_millis(20)),
                    1000,
                    |i| async move { i % 4 != 0 },
                    || {
                        marks += 1;
                        marks
                    },
                ),
            )
            .unwrap();
        // 40 requests due in the window (every 500 µs), every fourth answered wrong.
        assert_eq!(outcome.window.scheduled, 40);
        assert_eq!(
            (outcome.completed(), outcome.errors(), outcome.dropped),
            (30, 10, 0)
        );
        assert_eq!(outcome.from_send.count(), 30);
        assert_eq!(outcome.window.latency.count(), 30);
        assert_eq!(outcome.marks, (1, 2));
    }

    #[test]
    fn a_full_pipe_drops_and_a_call_never_answered_is_an_error() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let outcome = tokio::task::LocalSet::new()
            .block_on(
                &rt,
                drive(
                    Arrivals::uniform(2000.0).unwrap(),
                    (Duration::ZERO, Duration::from_millis(10)),
                    2,
                    // The first two calls never end: the pipe stays full.
                    |i| async move {
                        if i < 2 {
                            std::future::pending::<()>().await;
                        }
                        true
                    },
                    || (),
                ),
            )
            .unwrap();
        // 19 due in the window (every 500 µs from the first after its start): 2 sent, 17 not.
        assert_eq!(outcome.window.scheduled, 19);
        assert_eq!(
            (outcome.completed(), outcome.errors(), outcome.dropped),
            (0, 2, 17)
        );
    }
}
