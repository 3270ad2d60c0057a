//! A measured round-trip estimate, in the manner of TCP's SRTT and RTTVAR (RFC 6298).

use crate::time::{Duration, Millis};

/// The clock granularity `G` of RFC 6298, in ms: the time-out is at least this much above the
/// smoothed round trip, however steady the link.
///
/// Round trips are measured as the difference of two millisecond readings of the host's clock,
/// so a sample can be off by a millisecond either way, and a host's timers fire a little late.
/// Without this term a link without jitter drives the variation to zero, the time-out to exactly
/// the round trip, and every reply to the edge of its time-out (spurious time-outs and a retry
/// per request when `min_rto` is small).
pub const CLOCK_GRANULARITY: Duration = 5;

/// Smoothed round-trip time and its variation, from request/reply times.
///
/// Before the first sample the estimate is the configured initial round trip, with a variation
/// of half of it. Each sample `r` then moves the estimate: `rttvar = 3/4 rttvar + 1/4 |srtt - r|`,
/// `srtt = 7/8 srtt + 1/8 r`. The time-out for one request is
/// `srtt + max(G, 4 rttvar)` (`G` is [`CLOCK_GRANULARITY`]), within `[min_rto, max_rto]`, doubled for each time-out in a row until a reply is measured again
/// (Karn's back-off).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RttEstimator {
    srtt: f64,
    rttvar: f64,
    samples: u64,
    backoff: u32,
    min_rto: Duration,
    max_rto: Duration,
}

impl RttEstimator {
    /// An estimator starting from `initial_rtt`, with time-outs kept within `[min_rto, max_rto]`.
    pub fn new(initial_rtt: Duration, min_rto: Duration, max_rto: Duration) -> RttEstimator {
        let initial = initial_rtt.max(0) as f64;
        RttEstimator {
            srtt: initial,
            rttvar: initial / 2.0,
            samples: 0,
            backoff: 0,
            min_rto: min_rto.max(1),
            max_rto: max_rto.max(min_rto.max(1)),
        }
    }

    /// Takes one round-trip sample (negative samples, from a host clock that stepped back, are
    /// ignored).
    pub fn sample(&mut self, rtt: Duration) {
        if rtt < 0 {
            return;
        }
        let r = rtt as f64;
        if self.samples == 0 {
            self.srtt = r;
            self.rttvar = r / 2.0;
        } else {
            self.rttvar = 0.75 * self.rttvar + 0.25 * (self.srtt - r).abs();
            self.srtt = 0.875 * self.srtt + 0.125 * r;
        }
        self.samples += 1;
        self.backoff = 0;
    }

    /// Notes a request that got no reply in time (doubles the time-out, up to `max_rto`).
    pub fn timed_out(&mut self) {
        self.backoff = (self.backoff + 1).min(20);
    }

    /// The smoothed round trip, in ms.
    pub fn srtt(&self) -> Millis {
        self.srtt.round() as Millis
    }

    /// The round-trip variation, in ms.
    pub fn rttvar(&self) -> Millis {
        self.rttvar.round() as Millis
    }

    /// Samples taken so far.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// The time-out for one request, without back-off: `srtt + max(G, 4 rttvar)` within the
    /// bounds (`G` is [`CLOCK_GRANULARITY`]).
    pub fn rto(&self) -> Duration {
        let rto = (self.srtt + (4.0 * self.rttvar).max(CLOCK_GRANULARITY as f64)).ceil();
        (rto.min(self.max_rto as f64) as Duration).clamp(self.min_rto, self.max_rto)
    }

    /// Everything the estimator holds: srtt, rttvar, samples, back-off, min and max rto.
    pub(crate) fn parts(&self) -> (f64, f64, u64, u32, Duration, Duration) {
        (self.srtt, self.rttvar, self.samples, self.backoff, self.min_rto, self.max_rto)
    }

    /// An estimator from [`RttEstimator::parts`], checked: finite, non-negative estimates, a
    /// back-off of at most 20, `1 <= min_rto <= max_rto`.
    pub(crate) fn from_parts(
        (srtt, rttvar, samples, backoff, min_rto, max_rto): (
            f64,
            f64,
            u64,
            u32,
            Duration,
            Duration,
        ),
    ) -> Result<RttEstimator, String> {
        if !(srtt.is_finite() && srtt >= 0.0 && rttvar.is_finite() && rttvar >= 0.0) {
            return Err(format!("round-trip estimate {srtt} / {rttvar} is not a finite time"));
        }
        if backoff > 20 {
            return Err(format!("back-off {backoff} is above 20"));
        }
        if min_rto < 1 || max_rto < min_rto {
            return Err(format!("time-out bounds {min_rto}..{max_rto} are not 1 <= min <= max"));
        }
        Ok(RttEstimator { srtt, rttvar, samples, backoff, min_rto, max_rto })
    }

    /// The time-out for the next request, with Karn's back-off after time-outs.
    pub fn request_timeout(&self) -> Duration {
        let rto = self.rto();
        rto.saturating_mul(1i64 << self.backoff.min(40)).min(self.max_rto)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converges_and_backs_off() {
        let mut e = RttEstimator::new(1_000, 50, 60_000);
        assert_eq!(e.rto(), 3_000);
        for _ in 0..50 {
            e.sample(100);
        }
        assert_eq!(e.srtt(), 100);
        assert_eq!(e.rto(), 100 + CLOCK_GRANULARITY, "a steady link: srtt + G");
        assert_eq!(e.rto().max(50), e.rto());
        e.timed_out();
        e.timed_out();
        assert_eq!(e.request_timeout(), 4 * e.rto());
        for _ in 0..30 {
            e.timed_out();
        }
        assert_eq!(e.request_timeout(), 60_000);
        e.sample(100);
        assert_eq!(e.request_timeout(), e.rto());
        e.sample(-5);
        assert_eq!(e.samples(), 51);
    }

    #[test]
    fn granularity_keeps_the_timeout_above_a_steady_round_trip() {
        let mut e = RttEstimator::new(40, 1, 60_000);
        for _ in 0..10_000 {
            e.sample(40);
        }
        assert_eq!(e.rttvar(), 0);
        assert_eq!(e.rto(), 40 + CLOCK_GRANULARITY);
        // A measured zero round trip (same millisecond) still leaves a positive time-out.
        let mut z = RttEstimator::new(0, 1, 60_000);
        z.sample(0);
        assert_eq!(z.rto(), CLOCK_GRANULARITY);
    }

    #[test]
    fn variation_raises_the_timeout() {
        let mut e = RttEstimator::new(100, 10, 60_000);
        for i in 0..100 {
            e.sample(if i % 2 == 0 { 50 } else { 250 });
        }
        assert!(e.rto() > 250 + 100, "rto {}", e.rto());
    }
}
