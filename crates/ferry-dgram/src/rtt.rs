//! The RTT estimate and retransmission timeout of RFC 6298, with exponential backoff.

use std::time::Duration;

use crate::Config;

#[derive(Debug, Clone)]
pub(crate) struct Rtt {
    srtt: Option<Duration>,
    rttvar: Duration,
    /// The timeout without backoff.
    base: Duration,
    /// The timeout in force: `base` doubled per consecutive timeout, at most `max`.
    rto: Duration,
    min: Duration,
    max: Duration,
}

impl Rtt {
    pub(crate) fn new(config: &Config) -> Rtt {
        Rtt {
            srtt: None,
            rttvar: Duration::ZERO,
            base: config.rto_initial,
            rto: config.rto_initial,
            min: config.rto_min,
            max: config.rto_max,
        }
    }

    pub(crate) fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    pub(crate) fn rto(&self) -> Duration {
        self.rto
    }

    /// A sample from a packet sent once (Karn: never from a retransmitted one).
    pub(crate) fn sample(&mut self, r: Duration) {
        let srtt = match self.srtt {
            None => {
                self.rttvar = r / 2;
                r
            }
            Some(s) => {
                self.rttvar = (self.rttvar * 3 + s.abs_diff(r)) / 4;
                (s * 7 + r) / 8
            }
        };
        self.srtt = Some(srtt);
        self.base = (srtt + self.rttvar * 4).clamp(self.min, self.max);
        self.rto = self.base;
    }

    /// Progress: the backoff ends.
    pub(crate) fn reset_backoff(&mut self) {
        self.rto = self.base;
    }

    /// A timeout fired: double the timeout, up to the maximum.
    pub(crate) fn back_off(&mut self) {
        self.rto = (self.rto * 2).min(self.max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc6298_estimate_clamp_and_backoff() {
        let config = Config::default();
        let mut rtt = Rtt::new(&config);
        assert_eq!(rtt.rto(), config.rto_initial);
        rtt.sample(Duration::from_millis(10));
        // srtt 10, rttvar 5: rto = 10 + 4 * 5.
        assert_eq!(
            (rtt.srtt(), rtt.rto()),
            (Some(Duration::from_millis(10)), Duration::from_millis(30))
        );
        rtt.sample(Duration::from_millis(18));
        // rttvar = (3 * 5 + 8) / 4 = 5.75; srtt = (7 * 10 + 18) / 8 = 11.
        assert_eq!(rtt.srtt(), Some(Duration::from_millis(11)));
        assert_eq!(rtt.rto(), Duration::from_millis(34));
        for _ in 0..10 {
            rtt.back_off();
        }
        assert_eq!(rtt.rto(), config.rto_max);
        rtt.reset_backoff();
        assert_eq!(rtt.rto(), Duration::from_millis(34));
        rtt.sample(Duration::from_micros(1));
        let mut tiny = Rtt::new(&config);
        tiny.sample(Duration::from_micros(1));
        assert_eq!(tiny.rto(), config.rto_min);
    }
}
