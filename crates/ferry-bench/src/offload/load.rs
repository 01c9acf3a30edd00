//! Figure 8's open-loop load generator: requests sent on a uniform schedule at the offered
//! rate whether or not earlier ones were answered, so that a server that falls behind is
//! charged for it. Three parts with a boundary between them:
//!
//! - [`Schedule`]: when the `i`-th request is due, and whether it falls in the measured window
//!   (after the warm-up);
//! - [`Tally`]: the window's accounting: requests answered, failed, dropped (over the
//!   in-flight limit) and their latencies, counting only requests scheduled in the window;
//! - [`drive`]: the driver on a tokio `LocalSet`: it sleeps until each send, starts the call
//!   the caller's `send` makes, and reads the caller's `mark` (CPU times) as the window opens
//!   and closes.
//!
//! The schedule and the tally do no I/O; the driver knows nothing of gRPC or CPU time.

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;
use std::time::Duration;

use tokio::sync::Notify;

use crate::BoxError;
use crate::harness::Histogram;

/// How long answers may still come after the last scheduled send.
const DRAIN: Duration = Duration::from_secs(1);

/// When requests are due: every `1 / rate`, for `warmup` and then the measured `duration`.
#[derive(Debug, Clone, Copy)]
pub struct Schedule {
    /// Requests per second.
    pub rate: u64,
    /// Sends before the window.
    pub warmup: Duration,
    /// The window.
    pub duration: Duration,
}

impl Schedule {
    /// The `i`-th request's time from the start; `None` once past the window.
    pub fn at(&self, i: u64) -> Option<Duration> {
        let ns = u128::from(i) * 1_000_000_000 / u128::from(self.rate.max(1));
        let at = Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX));
        (at < self.warmup + self.duration).then_some(at)
    }

    /// Whether a request due at `at` is in the window.
    pub fn measured(&self, at: Duration) -> bool {
        at >= self.warmup
    }
}

/// The window's counts: only requests scheduled in it count.
#[derive(Debug, Default)]
pub struct Tally {
    /// Answered, and the answer was right.
    pub completed: u64,
    /// Failed, wrong, or not answered by the end of the drain.
    pub errors: u64,
    /// Not sent: `max_in_flight` were outstanding.
    pub dropped: u64,
    /// Sent and not answered yet (any request, measured or not).
    pub in_flight: usize,
    /// Round trips of the completed requests.
    pub latency: Histogram,
}

impl Tally {
    /// Whether a request may be sent now (fewer than `max_in_flight` out); one that may not is
    /// counted as dropped if it is `measured`.
    pub fn send(&mut self, measured: bool, max_in_flight: usize) -> bool {
        if self.in_flight >= max_in_flight {
            self.dropped += u64::from(measured);
            return false;
        }
        self.in_flight += 1;
        true
    }

    /// A request's answer, `ok` if right, after `took`.
    pub fn answer(&mut self, measured: bool, ok: bool, took: Duration) {
        self.in_flight -= 1;
        match (measured, ok) {
            (false, _) => {}
            (true, true) => {
                self.completed += 1;
                self.latency.record_duration(took);
            }
            (true, false) => self.errors += 1,
        }
    }
}

/// What a run measured: the tally, the window's length (from its first scheduled send to the
/// last), and the caller's marks as the window opened and closed.
#[derive(Debug)]
pub struct Outcome<M> {
    /// The window's counts (requests still in flight after the drain count as errors).
    pub tally: Tally,
    /// From the window's first scheduled send to the end of the sends.
    pub window: Duration,
    /// `mark()` as the window opened, and as the sends ended.
    pub marks: (M, M),
}

/// Runs `schedule` on the current `LocalSet`: `send(i)` starts the `i`-th request (its future
/// resolves to whether the answer was right), at most `max_in_flight` at once.
pub async fn drive<M, F>(
    schedule: &Schedule,
    max_in_flight: usize,
    mut send: impl FnMut(u64) -> F,
    mut mark: impl FnMut() -> M,
) -> Result<Outcome<M>, BoxError>
where
    F: Future<Output = bool> + 'static,
{
    let tally = Rc::new(RefCell::new(Tally::default()));
    let idle = Rc::new(Notify::new());
    let start = tokio::time::Instant::now();
    let mut opened = None;
    let mut i = 0u64;
    while let Some(at) = schedule.at(i) {
        let measured = schedule.measured(at);
        if measured && opened.is_none() {
            opened = Some((start + at, mark()));
        }
        tokio::time::sleep_until(start + at).await;
        if tally.borrow_mut().send(measured, max_in_flight.max(1)) {
            let call = send(i);
            let (tally, idle) = (tally.clone(), idle.clone());
            tokio::task::spawn_local(async move {
                // From the send, not from the schedule: tokio's timer ticks every millisecond,
                // so requests leave in bursts at each tick, and the schedule would charge
                // every call up to 1 ms.
                let sent = tokio::time::Instant::now();
                let ok = call.await;
                let mut t = tally.borrow_mut();
                t.answer(measured, ok, sent.elapsed());
                if t.in_flight == 0 {
                    idle.notify_one();
                }
            });
        }
        i += 1;
    }
    let closed = (tokio::time::Instant::now(), mark());
    let (opened_at, first) = opened.ok_or("the run had no measured window")?;
    let drained = async {
        while tally.borrow().in_flight > 0 {
            idle.notified().await;
        }
    };
    let _ = tokio::time::timeout(DRAIN, drained).await;
    let mut tally = std::mem::take(&mut *tally.borrow_mut());
    tally.errors += tally.in_flight as u64;
    Ok(Outcome {
        tally,
        window: closed.0.duration_since(opened_at),
        marks: (first, closed.1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schedule_spaces_sends_and_opens_the_window_after_the_warm_up() {
        let s = Schedule {
            rate: 1000,
            warmup: Duration::from_millis(10),
            duration: Duration::from_millis(20),
        };
        assert_eq!(s.at(0), Some(Duration::ZERO));
        assert_eq!(s.at(15), Some(Duration::from_millis(15)));
        assert_eq!(s.at(30), None);
        assert!(!s.measured(s.at(9).unwrap()) && s.measured(s.at(10).unwrap()));
    }

    #[test]
    fn only_the_windows_requests_count_and_a_full_pipe_drops() {
        let mut t = Tally::default();
        assert!(t.send(false, 2) && t.send(true, 2));
        assert!(!t.send(true, 2) && !t.send(false, 2));
        assert_eq!(t.dropped, 1);
        t.answer(false, true, Duration::from_micros(5));
        t.answer(true, true, Duration::from_micros(7));
        assert!(t.send(true, 2));
        t.answer(true, false, Duration::ZERO);
        assert_eq!((t.completed, t.errors, t.in_flight), (1, 1, 0));
        assert_eq!(t.latency.count(), 1);
    }

    #[test]
    fn the_driver_counts_every_answer_and_marks_the_window() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let schedule = Schedule {
            rate: 2000,
            warmup: Duration::from_millis(5),
            duration: Duration::from_millis(20),
        };
        let mut marks = 0;
        let outcome = tokio::task::LocalSet::new()
            .block_on(
                &rt,
                drive(
                    &schedule,
                    1000,
                    |i| async move { i % 4 != 0 },
                    || {
                        marks += 1;
                        marks
                    },
                ),
            )
            .unwrap();
        // 40 sends in the window, every fourth answered wrong.
        assert_eq!((outcome.tally.completed, outcome.tally.errors), (30, 10));
        assert_eq!(outcome.marks, (1, 2));
        assert!(outcome.window >= Duration::from_millis(19));
    }
}
