//! Congestion control over the packet window: AIMD on loss, and optionally Timely-style
//! control by the RTT gradient (Mittal et al., SIGCOMM'15) applied to the window instead of a
//! paced rate. The window is capped by the credits.

use std::time::{Duration, Instant};

/// Timely-style parameters ([`Config::timely`](crate::Config::timely)).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timely {
    /// Below this RTT the window grows by one packet per RTT, whatever the gradient.
    pub t_low: Duration,
    /// Above this RTT the window shrinks by `beta * (1 - t_high / rtt)`.
    pub t_high: Duration,
    /// The multiplicative decrease factor, in (0, 1]; Timely uses 0.8.
    pub beta: f64,
}

impl Default for Timely {
    fn default() -> Self {
        Timely {
            t_low: Duration::from_micros(50),
            t_high: Duration::from_micros(500),
            beta: 0.8,
        }
    }
}

/// Timely's memory: the previous sample, the smoothed RTT difference, the lowest RTT seen.
#[derive(Debug)]
struct TimelyState {
    params: Timely,
    prev: Option<Duration>,
    /// Smoothed difference between consecutive samples, in seconds (may be negative).
    diff: f64,
    min_rtt: Duration,
    /// The window changes at most once per RTT.
    next_update: Option<Instant>,
}

/// Weight of a new RTT difference in the smoothed one.
const DIFF_GAIN: f64 = 0.5;

#[derive(Debug)]
pub(crate) struct Congestion {
    cwnd: u32,
    cap: u32,
    /// Packets acknowledged since `cwnd` last grew (additive increase: +1 per `cwnd` of them).
    acked_since_growth: u32,
    /// Losses of packets below this belong to the loss event already answered.
    recovery_until: u64,
    timely: Option<TimelyState>,
}

impl Congestion {
    /// Starts at the cap (the credits), as eRPC starts at line rate.
    pub(crate) fn new(cap: u32, timely: Option<Timely>) -> Congestion {
        Congestion {
            cwnd: cap,
            cap,
            acked_since_growth: 0,
            recovery_until: 0,
            timely: timely.map(|params| TimelyState {
                params,
                prev: None,
                diff: 0.0,
                min_rtt: Duration::MAX,
                next_update: None,
            }),
        }
    }

    /// Packets that may be in flight.
    pub(crate) fn window(&self) -> u32 {
        self.cwnd
    }

    /// `newly` packets acknowledged, with an RTT sample `rtt` if one was taken.
    pub(crate) fn on_acked(&mut self, now: Instant, newly: u32, rtt: Option<Duration>) {
        let Some(t) = &mut self.timely else {
            // Additive increase: one packet per window of acknowledged packets.
            self.acked_since_growth += newly;
            if self.acked_since_growth >= self.cwnd {
                self.acked_since_growth = 0;
                self.cwnd = (self.cwnd + 1).min(self.cap);
            }
            return;
        };
        let Some(r) = rtt else { return };
        t.min_rtt = t.min_rtt.min(r);
        if let Some(prev) = t.prev.replace(r) {
            let d = r.as_secs_f64() - prev.as_secs_f64();
            t.diff = (1.0 - DIFF_GAIN) * t.diff + DIFF_GAIN * d;
        }
        if t.next_update.is_some_and(|at| now < at) {
            return;
        }
        t.next_update = Some(now + r);
        let p = t.params;
        let gradient = t.diff / t.min_rtt.as_secs_f64().max(1e-9);
        let factor = if r < p.t_low {
            None
        } else if r > p.t_high {
            Some(1.0 - p.beta * (1.0 - p.t_high.as_secs_f64() / r.as_secs_f64()))
        } else if gradient <= 0.0 {
            None
        } else {
            Some(1.0 - p.beta * gradient.min(1.0))
        };
        self.cwnd = match factor {
            None => (self.cwnd + 1).min(self.cap),
            Some(f) => ((f64::from(self.cwnd) * f) as u32).clamp(1, self.cap),
        };
    }

    /// Packet `pkt` is lost; `snd_nxt` is the next new packet. Multiplicative decrease, once
    /// per loss event (losses among the packets sent before the last decrease belong to it).
    pub(crate) fn on_loss(&mut self, pkt: u64, snd_nxt: u64) {
        if pkt >= self.recovery_until {
            self.cwnd = (self.cwnd / 2).max(1);
            self.acked_since_growth = 0;
            self.recovery_until = snd_nxt;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aimd_grows_by_one_per_window_and_halves_once_per_event() {
        let now = Instant::now();
        let mut c = Congestion::new(32, None);
        c.on_loss(0, 10);
        assert_eq!(c.window(), 16);
        c.on_loss(5, 12);
        assert_eq!(c.window(), 16, "the same loss event");
        c.on_acked(now, 15, None);
        assert_eq!(c.window(), 16);
        c.on_acked(now, 1, None);
        assert_eq!(c.window(), 17);
        c.on_loss(10, 40);
        assert_eq!(c.window(), 8, "a new event");
    }

    #[test]
    fn timely_follows_the_rtt() {
        let us = Duration::from_micros;
        let mut now = Instant::now();
        let mut c = Congestion::new(32, Some(Timely::default()));
        let mut feed = |c: &mut Congestion, r: Duration| {
            now += us(2000);
            c.on_acked(now, 1, Some(r));
            c.window()
        };
        // Above t_high: 1 - 0.8 * (1 - 500/1000) = 0.6 of the window.
        assert_eq!(feed(&mut c, us(1000)), 19);
        // Falling RTT between the thresholds: +1.
        assert_eq!(feed(&mut c, us(400)), 20);
        // Below t_low: +1, whatever the gradient.
        assert_eq!(feed(&mut c, us(40)), 21);
        // Still falling on average (smoothed difference -135 µs): +1.
        assert_eq!(feed(&mut c, us(100)), 22);
        // Rising: smoothed difference 32.5 µs over the minimum 40 µs, a gradient of 0.8125;
        // the window is multiplied by 1 - 0.8 * 0.8125 = 0.35.
        let w = feed(&mut c, us(300));
        assert_eq!(w, 7);
        // Not again within the same RTT.
        now += us(1);
        c.on_acked(now, 1, Some(us(2000)));
        assert_eq!(c.window(), w);
    }
}
