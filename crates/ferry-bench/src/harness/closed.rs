//! The closed loop every benchmark client runs (`ferry bench rpc`'s event-loop and tonic
//! clients, `ferry bench shm`'s): `in_flight` calls kept outstanding until the budget is
//! spent, and which of them are timed.

use std::time::Instant;

use super::{Budget, Histogram};

/// Calls timed when more than one is in flight: one in this many.
const TIMED_EVERY: u64 = 16;

/// The accounting of one closed-loop phase: when the budget is spent, which calls are timed
/// and when they started, what completed.
/// With one call in flight every call is timed, one clock reading each (the end of one is
/// the start of the next); with more, every [`TIMED_EVERY`]th.
pub struct Phase {
    budget: Budget,
    one: bool,
    start: Instant,
    /// The clock reading that ended the last timed call.
    last: Instant,
    issued: u64,
    /// Calls completed.
    pub completed: u64,
    /// Calls started and not yet completed.
    pub outstanding: usize,
    /// The budget is spent: no more calls are started.
    stopping: bool,
    /// The timed calls' round trips, ns.
    pub latency: Histogram,
}

impl Phase {
    /// A phase of `budget` with `in_flight` calls outstanding.
    pub fn new(budget: Budget, in_flight: usize) -> Phase {
        let now = Instant::now();
        Phase {
            budget,
            one: in_flight <= 1,
            start: now,
            last: now,
            issued: 0,
            completed: 0,
            outstanding: 0,
            stopping: false,
            latency: Histogram::default(),
        }
    }

    /// May another call start? `None` once the budget is spent; else `Some` of when it starts
    /// if it is timed.
    pub fn next_call(&mut self) -> Option<Option<Instant>> {
        let timed = self.one || self.issued % TIMED_EVERY == 0;
        self.stopping = self.stopping
            || match self.budget {
                Budget::Count(n) => self.issued >= n,
                Budget::Time(t) if self.one => self.last - self.start >= t,
                Budget::Time(t) => timed && self.start.elapsed() >= t,
            };
        match (self.stopping, self.one) {
            (true, _) => None,
            (false, true) => Some(Some(self.last)),
            (false, false) => Some(timed.then(Instant::now)),
        }
    }

    /// The call [`Phase::next_call`] allowed has started.
    pub fn started(&mut self) {
        self.issued += 1;
        self.outstanding += 1;
    }

    /// A call has completed; `at` is what [`Phase::next_call`] said of it.
    pub fn completed(&mut self, at: Option<Instant>) {
        self.outstanding -= 1;
        self.completed += 1;
        if let Some(at) = at {
            self.last = Instant::now();
            self.latency.record_duration(self.last - at);
        }
    }

    /// Whether the budget is spent and every call completed.
    pub fn done(&self) -> bool {
        self.stopping && self.outstanding == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `phase` to its end, each call completing as soon as it starts; returns the calls
    /// timed.
    fn drain(phase: &mut Phase) -> u64 {
        let mut timed = 0;
        while let Some(at) = phase.next_call() {
            phase.started();
            timed += u64::from(at.is_some());
            phase.completed(at);
        }
        timed
    }

    #[test]
    fn a_phase_stops_at_its_budget_and_times_every_call_or_every_16th() {
        let mut many = Phase::new(Budget::Count(40), 4);
        assert_eq!(drain(&mut many), 3, "calls 0, 16 and 32");
        assert_eq!((many.completed, many.latency.count()), (40, 3));
        assert!(many.done());
        let mut one = Phase::new(Budget::Count(5), 1);
        assert_eq!(drain(&mut one), 5);
        assert_eq!(one.latency.count(), 5);
        let mut outstanding = Phase::new(Budget::Count(1), 1);
        let at = outstanding.next_call().unwrap();
        outstanding.started();
        assert!(
            outstanding.next_call().is_none() && !outstanding.done(),
            "spent, one still out"
        );
        outstanding.completed(at);
        assert!(outstanding.done());
    }
}
