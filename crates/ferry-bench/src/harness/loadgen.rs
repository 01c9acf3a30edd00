//! The bookkeeping of an open-loop load generator, without I/O: when requests are due
//! (Poisson arrivals at an offered rate, or evenly spaced ones, whether or not earlier ones
//! were answered), which of
//! them fall in the measured window, their latency from the *scheduled* time (so a server that
//! falls behind shows in the tail instead of slowing the offered load: no coordinated
//! omission), and whether a point counts, or why it does not.
//!
//! The driver owns the sockets and the clock: it asks [`OpenLoop::due`] with the time it read,
//! sends what is due, and reports each checked answer with [`OpenLoop::answered`]. Nothing here
//! reads a clock, so the accounting is tested with made-up times.
//!
//! The accounting, for a window `[start, end)` after a warm-up:
//! - *offered*: requests scheduled in the window, per second of window;
//! - *achieved*: requests scheduled in the window and answered before its end, or after it by
//!   less than a grace the caller gives (a request scheduled just before the end cannot be
//!   answered before it: the grace is the latency a point may have), per second, so it can
//!   never exceed offered (an answer to a request of the warm-up is not counted);
//! - *late*: requests of the window answered after its end (during the drain);
//! - *unanswered*: requests of the window never answered (or never sent);
//! - *latency*: from each window request's scheduled time to its answer, late ones included.
//!
//! What it is NOT: a client. Sessions, request contents and checking the answers are the
//! drivers' (`kv/loadgen.rs` on an event loop, `offload/load.rs` on tokio).

use std::fmt;
use std::time::{Duration, Instant};

use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp};

use super::Histogram;

/// Exponential gaps between arrivals: a Poisson process at `rate` per second, drawn from a
/// seeded RNG (so a seed names the schedule).
///
/// Cornflakes' load generator sends with Poisson arrivals (§6.1.1 of
/// `papers/cornflakes-zero-copy-serialization-sosp23.txt`).
#[derive(Debug, Clone)]
pub struct Poisson {
    rate: f64,
    exp: Exp<f64>,
    rng: ChaCha8Rng,
}

impl Poisson {
    /// Arrivals at `rate` per second from `rng`, or an error if `rate` is not finite and
    /// positive.
    pub fn try_new(rate: f64, rng: ChaCha8Rng) -> Result<Poisson, String> {
        check_rate("Poisson", rate)?;
        let exp = Exp::new(rate).map_err(|e| format!("exponential gaps at rate {rate}: {e}"))?;
        Ok(Poisson { rate, exp, rng })
    }

    /// The rate, in arrivals per second.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// The gap to the next arrival (saturating at `Duration::MAX`, which no finite rate reaches
    /// in practice).
    pub fn next_gap(&mut self) -> Duration {
        let secs = self.exp.sample(&mut self.rng);
        Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX)
    }
}

/// `rate` if it is finite and positive, or an error naming the `kind` of arrivals.
fn check_rate(kind: &str, rate: f64) -> Result<(), String> {
    if rate.is_finite() && rate > 0.0 {
        Ok(())
    } else {
        Err(format!(
            "{kind} arrival rate must be finite and > 0, found {rate}"
        ))
    }
}

/// When requests arrive.
#[derive(Debug, Clone)]
pub enum Arrivals {
    /// A Poisson process (kv's sweeps, as Cornflakes'); boxed, as its RNG is large.
    Poisson(Box<Poisson>),
    /// Evenly spaced, this far apart (offload's Figure 8, as it was measured).
    Uniform(Duration),
}

impl Arrivals {
    /// Evenly spaced arrivals at `rate` per second (the gap in whole ns, at least 1), or an
    /// error if `rate` is not finite and positive.
    pub fn uniform(rate: f64) -> Result<Arrivals, String> {
        check_rate("uniform", rate)?;
        let gap = Duration::try_from_secs_f64(1.0 / rate).unwrap_or(Duration::MAX);
        Ok(Arrivals::Uniform(gap.max(Duration::from_nanos(1))))
    }

    /// The gap to the next arrival.
    pub fn next_gap(&mut self) -> Duration {
        match self {
            Arrivals::Poisson(p) => p.next_gap(),
            Arrivals::Uniform(gap) => *gap,
        }
    }
}

impl From<Poisson> for Arrivals {
    fn from(p: Poisson) -> Arrivals {
        Arrivals::Poisson(Box::new(p))
    }
}

/// The measured window of a run: `[start, end)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Its first instant.
    pub start: Instant,
    /// Just past its last instant.
    pub end: Instant,
}

impl Window {
    /// Whether `t` falls in it.
    pub fn contains(&self, t: Instant) -> bool {
        t >= self.start && t < self.end
    }

    /// Its length.
    pub fn len(&self) -> Duration {
        self.end.saturating_duration_since(self.start)
    }
}

/// One run at one offered rate: the schedule and the tally of its window.
#[derive(Debug, Clone)]
pub struct OpenLoop {
    arrivals: Arrivals,
    window: Window,
    /// The next arrival not yet handed out by [`due`](Self::due).
    next: Instant,
    scheduled: u64,
    answered: u64,
    /// How long after the window's end each late answer came.
    late_by: Vec<Duration>,
    latency: Histogram,
}

impl OpenLoop {
    /// A run starting at `start`: arrivals from `arrivals`, `warmup` of them unmeasured, then
    /// a measured window of `window`.
    pub fn new(
        arrivals: impl Into<Arrivals>,
        start: Instant,
        warmup: Duration,
        window: Duration,
    ) -> OpenLoop {
        let mut arrivals = arrivals.into();
        let next = start + arrivals.next_gap();
        let window = Window {
            start: start + warmup,
            end: start + warmup + window,
        };
        OpenLoop {
            arrivals,
            window,
            next,
            scheduled: 0,
            answered: 0,
            late_by: Vec::new(),
            latency: Histogram::default(),
        }
    }

    /// The measured window.
    pub fn window(&self) -> Window {
        self.window
    }

    /// The scheduled time of the next request due at `now` (call again until `None`). Requests
    /// are scheduled until the window ends; none after.
    pub fn due(&mut self, now: Instant) -> Option<Instant> {
        let at = self.next;
        if at > now || at >= self.window.end {
            return None;
        }
        self.scheduled += u64::from(self.window.contains(at));
        self.next = at + self.arrivals.next_gap();
        Some(at)
    }

    /// When the next request falls due (a driver with nothing to do may sleep until then).
    pub fn next(&self) -> Instant {
        self.next
    }

    /// Whether the schedule is over: nothing more will be due.
    pub fn done(&self) -> bool {
        self.next >= self.window.end
    }

    /// A checked answer, at `now`, to the request scheduled at `at`.
    pub fn answered(&mut self, at: Instant, now: Instant) {
        if !self.window.contains(at) {
            return;
        }
        match now.checked_duration_since(self.window.end) {
            None => self.answered += 1,
            Some(by) => self.late_by.push(by),
        }
        self.latency.record_duration(now.saturating_duration_since(at));
    }

    /// What the window measured (requests of it still unanswered count as such).
    pub fn outcome(&self) -> Outcome {
        let late = self.late_by.len() as u64;
        Outcome {
            window: self.window.len(),
            scheduled: self.scheduled,
            answered: self.answered,
            late,
            late_by: self.late_by.clone(),
            unanswered: self.scheduled.saturating_sub(self.answered + late),
            latency: self.latency.clone(),
        }
    }
}

/// What one run's window measured.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The window's length.
    pub window: Duration,
    /// Requests scheduled in the window.
    pub scheduled: u64,
    /// Of those, answered before the window ended.
    pub answered: u64,
    /// Of those, answered after the window ended (while draining).
    pub late: u64,
    /// How long after the window's end each of those came.
    pub late_by: Vec<Duration>,
    /// Of those, never answered (or never sent).
    pub unanswered: u64,
    /// Latency from the scheduled time of every answered request of the window, ns.
    pub latency: Histogram,
}

impl Outcome {
    /// Offered load: requests scheduled in the window per second.
    pub fn offered(&self) -> f64 {
        self.scheduled as f64 / self.window.as_secs_f64()
    }

    /// Achieved load: requests of the window answered in it or less than `grace` after it,
    /// per second (never above [`offered`](Self::offered)).
    pub fn achieved_within(&self, grace: Duration) -> f64 {
        let late = self.late_by.iter().filter(|&&by| by < grace).count() as u64;
        (self.answered + late) as f64 / self.window.as_secs_f64()
    }

    /// The figures `rule` judges, achieved counted with its median limit as the grace.
    pub fn figures(&self, rule: &Rule) -> Figures {
        Figures {
            offered: self.offered(),
            achieved: self.achieved_within(rule.max_p50),
            p50: self.latency.quantile(0.5).map(Duration::from_nanos),
            unanswered: self.unanswered,
        }
    }
}

/// What a [`Rule`] reads of a point: offered and achieved load (requests/s), the median
/// latency (`None`: nothing was answered), and the requests of the window never answered.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figures {
    /// Requests scheduled in the window, per second.
    pub offered: f64,
    /// Requests of the window answered in it (or within the rule's grace after it), per second.
    pub achieved: f64,
    /// Median latency from the scheduled time.
    pub p50: Option<Duration>,
    /// Requests of the window never answered.
    pub unanswered: u64,
}

/// When a point counts: the server kept up with the offered load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rule {
    /// Achieved at least this share of offered (Cornflakes §6.1.1: 0.95).
    pub min_share: f64,
    /// The median latency at most this: a queue that grows through the window shows in the
    /// median long before it costs 5 % of the load.
    pub max_p50: Duration,
}

impl Rule {
    /// Whether `f` counts; if not, why, as [`Shortfall`] says.
    pub fn judge(&self, f: &Figures) -> Result<(), Shortfall> {
        let short = f.offered <= 0.0 || f.achieved < self.min_share * f.offered;
        let slow = f.p50.is_none_or(|p| p > self.max_p50);
        if short || slow || f.unanswered > 0 {
            Err(Shortfall {
                rule: *self,
                figures: *f,
            })
        } else {
            Ok(())
        }
    }
}

/// Why a point did not count: its figures, against the rule they broke.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shortfall {
    /// The rule.
    pub rule: Rule,
    /// The point's figures.
    pub figures: Figures,
}

impl fmt::Display for Shortfall {
    /// "offered 50000 req/s, achieved 31000 (62.0 % < 95 %), p50 2.30 ms (> 1.00 ms),
    /// 120 unanswered": every figure, each broken limit after it.
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Shortfall { rule, figures: f } = self;
        let share = if f.offered > 0.0 {
            f.achieved / f.offered
        } else {
            0.0
        };
        write!(
            out,
            "offered {:.0} req/s, achieved {:.0} ({:.1} %",
            f.offered,
            f.achieved,
            share * 100.0
        )?;
        if share < rule.min_share {
            write!(out, " < {:.0} %", rule.min_share * 100.0)?;
        }
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        match f.p50 {
            Some(p) if p > rule.max_p50 => {
                write!(out, "), p50 {:.2} ms (> {:.2} ms)", ms(p), ms(rule.max_p50))?
            }
            Some(p) => write!(out, "), p50 {:.2} ms", ms(p))?,
            None => write!(out, "), no answer")?,
        }
        write!(out, ", {} unanswered", f.unanswered)
    }
}

#[cfg(test)]
mod tests {
    use rand_chacha::rand_core::SeedableRng;

    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn rng(seed: u64) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(seed)
    }

    /// A run from `t0` at `rate`, warm-up 100 ms, window 1 s.
    fn run(t0: Instant, rate: f64) -> OpenLoop {
        OpenLoop::new(Poisson::try_new(rate, rng(5)).unwrap(), t0, 100 * MS, 1000 * MS)
    }

    const RULE: Rule = Rule {
        min_share: 0.95,
        max_p50: MS,
    };

    #[test]
    fn poisson_gaps_are_seeded_with_the_right_mean() {
        let mut a = Poisson::try_new(50_000.0, rng(9)).unwrap();
        let mut b = Poisson::try_new(50_000.0, rng(9)).unwrap();
        let n = 100_000u32;
        let mut total = Duration::ZERO;
        for _ in 0..n {
            let g = a.next_gap();
            assert_eq!(g, b.next_gap());
            total += g;
        }
        let mean = total.as_secs_f64() / f64::from(n);
        assert!((mean - 1.0 / 50_000.0).abs() < 0.02 / 50_000.0, "mean gap {mean}");
        for bad in [0.0, f64::INFINITY, -1.0, f64::NAN] {
            assert!(Poisson::try_new(bad, rng(1)).is_err(), "{bad}");
        }
    }

    #[test]
    fn uniform_arrivals_are_evenly_spaced_and_fill_the_window_at_the_rate() {
        let t0 = Instant::now();
        let gap = Duration::from_micros(100);
        assert!(matches!(Arrivals::uniform(10_000.0), Ok(Arrivals::Uniform(g)) if g == gap));
        let mut lp = OpenLoop::new(Arrivals::uniform(10_000.0).unwrap(), t0, 100 * MS, 1000 * MS);
        let mut all = Vec::new();
        while let Some(at) = lp.due(t0 + 5000 * MS) {
            all.push(at);
        }
        assert_eq!(all.first(), Some(&(t0 + gap)));
        assert!(all.windows(2).all(|w| w[1] - w[0] == gap));
        // 1 s of window at 10,000/s, and the warm-up's 1,000 before it.
        assert_eq!(lp.outcome().scheduled, 10_000);
        assert_eq!(all.len(), 10_999);
        assert_eq!(lp.outcome().offered(), 10_000.0);
        // No rate gives a zero gap, which would hand out one instant forever.
        assert!(matches!(Arrivals::uniform(1e12), Ok(Arrivals::Uniform(g)) if g == Duration::from_nanos(1)));
        for bad in [0.0, f64::INFINITY, -1.0, f64::NAN] {
            let err = Arrivals::uniform(bad).unwrap_err();
            assert!(err.starts_with("uniform arrival rate"), "{err}");
        }
    }

    #[test]
    fn due_hands_out_each_arrival_once_in_order_until_the_window_ends() {
        let t0 = Instant::now();
        let mut lp = run(t0, 20_000.0);
        // Asked at 50 ms: everything due by then, in order, then nothing more.
        let mut all = Vec::new();
        while let Some(at) = lp.due(t0 + 50 * MS) {
            all.push(at);
        }
        assert!(all.windows(2).all(|w| w[0] <= w[1]));
        assert!(all.iter().all(|&at| at <= t0 + 50 * MS));
        assert_eq!(lp.due(t0 + 50 * MS), None);
        // Asked long after the end: the rest, none at or past the window's end.
        while let Some(at) = lp.due(t0 + 5000 * MS) {
            all.push(at);
        }
        assert!(lp.done());
        assert!(all.iter().all(|&at| at < lp.window().end));
        let in_window = all.iter().filter(|&&at| lp.window().contains(at)).count() as u64;
        assert_eq!(lp.outcome().scheduled, in_window);
        // About 20,000 in the 1 s window (Poisson: within 5 standard deviations).
        assert!(
            (in_window as f64 - 20_000.0).abs() < 5.0 * 20_000f64.sqrt(),
            "{in_window}"
        );
    }

    /// The bug of issue 25: a quick `ferry bench kv` showed 22,997 req/s achieved at 20,000
    /// offered, because answers received in the window to requests of the warm-up were counted.
    /// Here the server is stalled through the warm-up and answers its whole backlog early in
    /// the window: only the window's own requests count, so achieved stays at most offered.
    #[test]
    fn achieved_never_exceeds_offered_when_a_backlog_of_the_warm_up_is_answered_in_the_window() {
        let t0 = Instant::now();
        let mut lp = run(t0, 20_000.0);
        let start = lp.window().start;
        let mut backlog = Vec::new();
        while let Some(at) = lp.due(start) {
            backlog.push(at);
        }
        let warmup = backlog.len();
        assert!(warmup > 1000, "{warmup} requests in the warm-up");
        // The whole warm-up's backlog answered in the window's first millisecond.
        for &at in &backlog {
            lp.answered(at, start + MS / 2);
        }
        // Then every request of the window answered 50 µs after it was scheduled.
        while let Some(at) = lp.due(t0 + 5000 * MS) {
            lp.answered(at, at + Duration::from_micros(50));
        }
        let o = lp.outcome();
        let achieved = o.achieved_within(Duration::MAX);
        assert!(achieved <= o.offered(), "{achieved} > {}", o.offered());
        assert_eq!(o.answered + o.late, o.scheduled);
        assert_eq!(o.unanswered, 0);
        // The latency is the window's only: 50 µs each, not the backlog's wait.
        assert_eq!(o.latency.count(), o.scheduled);
        for q in [0.0, 1.0] {
            // The histogram keeps three significant digits.
            let v = o.latency.quantile(q).unwrap();
            assert!((49_950..50_050).contains(&v), "{v} ns at quantile {q}");
        }
        assert!(RULE.judge(&o.figures(&RULE)).is_ok(), "{:?}", o.figures(&RULE));
    }

    #[test]
    fn an_answer_after_the_window_is_late_and_one_never_given_is_unanswered() {
        let t0 = Instant::now();
        let mut lp = run(t0, 1_000.0);
        let end = lp.window().end;
        let mut n = 0;
        while let Some(at) = lp.due(t0 + 5000 * MS) {
            n += 1;
            match n % 10 {
                // Every tenth never answered, every tenth but one answered 2 ms after the window.
                0 => {}
                1 => lp.answered(at, end + 2 * MS),
                _ => lp.answered(at, at + MS / 10),
            }
        }
        let o = lp.outcome();
        let in_window = o.scheduled;
        assert_eq!(o.answered + o.late + o.unanswered, in_window);
        assert!(o.late > 0 && o.unanswered > 0);
        // The late ones are timed (to their answer, after the window); the lost ones are not.
        assert_eq!(o.latency.count(), o.answered + o.late);
        // Late answers count as achieved within the grace only.
        let window = o.window.as_secs_f64();
        assert_eq!(o.achieved_within(2 * MS) * window, o.answered as f64);
        assert_eq!(o.achieved_within(3 * MS) * window, (o.answered + o.late) as f64);
        let why = RULE
            .judge(&o.figures(&RULE))
            .expect_err("a point with unanswered requests");
        let text = why.to_string();
        assert!(text.contains(&format!("{} unanswered", o.unanswered)), "{text}");
        assert!(text.contains("< 95 %"), "{text}");
    }

    #[test]
    fn the_rule_names_each_limit_a_point_broke() {
        let f = Figures {
            offered: 50_000.0,
            achieved: 49_000.0,
            p50: Some(Duration::from_micros(80)),
            unanswered: 0,
        };
        assert_eq!(RULE.judge(&f), Ok(()));
        let slow = Figures {
            p50: Some(Duration::from_micros(2300)),
            ..f
        };
        assert_eq!(
            RULE.judge(&slow).unwrap_err().to_string(),
            "offered 50000 req/s, achieved 49000 (98.0 %), p50 2.30 ms (> 1.00 ms), 0 unanswered"
        );
        let short = Figures {
            achieved: 47_400.0,
            unanswered: 12,
            ..f
        };
        assert_eq!(
            RULE.judge(&short).unwrap_err().to_string(),
            "offered 50000 req/s, achieved 47400 (94.8 % < 95 %), p50 0.08 ms, 12 unanswered"
        );
        let silent = Figures {
            achieved: 0.0,
            p50: None,
            unanswered: 500,
            ..f
        };
        assert!(RULE.judge(&silent).unwrap_err().to_string().contains("no answer"));
        let nothing = Figures {
            offered: 0.0,
            achieved: 0.0,
            p50: None,
            unanswered: 0,
        };
        assert!(
            RULE.judge(&nothing).is_err(),
            "a window with no request proves nothing"
        );
    }
}
