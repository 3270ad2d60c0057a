//! The clock guard: a PostgreSQL-mode server measures its clock against the database's and
//! stops serving while the error is beyond a bound, in the manner of CockroachDB's maximum
//! clock offset. Sans-I/O: the ownership loop hands it [`Sample`]s, it keeps the verdict.
//!
//! # What is measured
//!
//! On each ownership round the server reads the database's `clock_timestamp()` and notes its
//! own clocks just before and just after. From that sample:
//!
//! - **offset**: this host's wall clock (the system clock, at the midpoint of the round trip)
//!   minus the database's, with an uncertainty of half the round trip. A host whose clock is
//!   seconds away from the database's is not under NTP's discipline, and the CockroachDB rule
//!   is to trust nothing it measures then.
//! - **rate**: how much faster the server's *lease clock* (the monotonic clock that times
//!   every lease, [`crate::clock`]) runs than the database's, in parts per million, over two
//!   windows: the previous round (quick to see a gross fault, such as a clock at 1.5 times
//!   the real rate) and the oldest sample kept, up to [`WINDOW_MS`] (precise). Its
//!   uncertainty is the two samples' uncertainties over the time between them. This is the
//!   error that matters for leases: a lease clock that runs fast by `r` ends a lease of `d`
//!   early by `r * d`.
//!
//! # The verdict
//!
//! The guard trips when an error is beyond its bound by more than the measurement's
//! uncertainty (it is sure the clock is wrong): offset beyond `max_offset_ms`, or either rate
//! beyond `max_rate_ppm`. While tripped the server serves nothing (it hands its shards back
//! and its readiness is 503). It is satisfied again when a fresh window (the samples from
//! before the trip are dropped) shows both within their bounds. A freshly started server is
//! not satisfied until its rate has been measured over at least [`MIN_WINDOW_MS`] with an
//! uncertainty below [`MAX_RATE_UNCERTAINTY_PPM`]: a server whose clock runs at 1.5 times
//! the real rate never serves a shard. Samples whose round trip exceeds the offset bound say
//! nothing and are skipped.

use std::collections::VecDeque;

use crate::health::ClockReport;

/// The longest window over which the rate is measured, ms of the database's clock.
pub const WINDOW_MS: f64 = 60_000.0;
/// The shortest window that gives a rate at all, ms.
pub const MIN_WINDOW_MS: f64 = 500.0;
/// A rate measured less precisely than this does not satisfy the guard (it may trip it).
pub const MAX_RATE_UNCERTAINTY_PPM: f64 = 5_000.0;

/// One measurement: the server's clocks at the midpoint of a round trip to the database, the
/// database's clock, and the round trip.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// The lease clock (monotonic), ms since any fixed origin.
    pub mono_ms: f64,
    /// The wall clock, Unix ms.
    pub wall_ms: f64,
    /// The database's `clock_timestamp()`, Unix ms.
    pub db_ms: f64,
    /// The round trip, ms.
    pub rtt_ms: f64,
}

/// A rate measured between two samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    /// Parts per million (positive: the server's clock runs fast).
    pub ppm: f64,
    /// Its uncertainty, ppm.
    pub uncertainty_ppm: f64,
    /// The window, ms of the database's clock.
    pub window_ms: f64,
}

fn rate(a: &Sample, b: &Sample) -> Option<Rate> {
    let db = b.db_ms - a.db_ms;
    if db <= 0.0 {
        return None;
    }
    let mono = b.mono_ms - a.mono_ms;
    Some(Rate {
        ppm: (mono - db) / db * 1e6,
        uncertainty_ppm: (a.rtt_ms + b.rtt_ms) / 2.0 / db * 1e6,
        window_ms: db,
    })
}

/// The rate with the least uncertainty between two of `samples` (oldest first) at least
/// [`MIN_WINDOW_MS`] apart.
fn best_rate(samples: &VecDeque<Sample>) -> Option<Rate> {
    let mut best: Option<Rate> = None;
    for (i, a) in samples.iter().enumerate() {
        for b in samples.iter().skip(i + 1) {
            if let Some(r) = rate(a, b).filter(|r| r.window_ms >= MIN_WINDOW_MS) {
                if best.is_none_or(|x| r.uncertainty_ppm < x.uncertainty_ppm) {
                    best = Some(r);
                }
            }
        }
    }
    best
}

/// The guard's state.
#[derive(Debug, Clone)]
pub struct Guard {
    max_offset_ms: f64,
    max_rate_ppm: f64,
    samples: VecDeque<Sample>,
    offset: Option<(f64, f64)>,
    rate: Option<Rate>,
    ok: bool,
    /// The last sample showed an error beyond its bound.
    bad: bool,
    why: Option<String>,
}

/// What the guard says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Not sure yet (no rate, or not precise enough): not serving.
    Unmeasured,
    /// Within bound: serving.
    Within,
    /// Beyond bound: not serving.
    Beyond,
}

impl Guard {
    /// A guard with these bounds, not satisfied until it has measured.
    pub fn new(max_offset_ms: f64, max_rate_ppm: f64) -> Guard {
        Guard {
            max_offset_ms,
            max_rate_ppm,
            samples: VecDeque::new(),
            offset: None,
            rate: None,
            ok: false,
            bad: false,
            why: Some("not measured yet".into()),
        }
    }

    /// Whether the server may serve.
    pub fn ok(&self) -> bool {
        self.ok
    }

    /// Why not, if not.
    pub fn why(&self) -> Option<&str> {
        self.why.as_deref()
    }

    /// Takes one measurement; returns the new verdict when it changed to [`Verdict::Within`]
    /// or [`Verdict::Beyond`] (the first time the guard is sure of either, and on every
    /// change after).
    pub fn observe(&mut self, s: Sample) -> Option<Verdict> {
        let u = s.rtt_ms / 2.0;
        if u > self.max_offset_ms {
            return None;
        }
        let offset = s.wall_ms - s.db_ms;
        self.offset = Some((offset, u));
        let prev = self.samples.back().copied();
        self.samples.push_back(s);
        while self.samples.front().is_some_and(|o| s.db_ms - o.db_ms > WINDOW_MS) {
            self.samples.pop_front();
        }
        let long = self.samples.front().and_then(|o| rate(o, &s));
        let short = prev.and_then(|p| rate(&p, &s));
        // What satisfies the guard is the most precise rate its kept samples give: on a loaded
        // host most round trips are long, and the window from the oldest sample to the latest
        // is only as precise as the latest's round trip.
        self.rate = best_rate(&self.samples);
        let beyond = |r: &Rate| r.ppm.abs() - r.uncertainty_ppm > self.max_rate_ppm;
        let bad = if offset.abs() - u > self.max_offset_ms {
            Some(format!(
                "this host's clock is {offset:.0} ms (+/- {u:.1}) from the database's, beyond the bound of {:.0} ms",
                self.max_offset_ms
            ))
        } else if let Some(r) = short.filter(beyond).or(long.filter(beyond)) {
            Some(format!(
                "the server's clock runs {:+.0} ppm (+/- {:.0}) against the database's over {:.0} ms, beyond the bound of {:.0} ppm",
                r.ppm, r.uncertainty_ppm, r.window_ms, self.max_rate_ppm
            ))
        } else {
            None
        };
        let was = self.state();
        match bad {
            Some(why) => {
                self.ok = false;
                self.why = Some(why);
                self.bad = true;
                if was != Verdict::Beyond {
                    // Measure afresh: a window that spans the fault would keep showing it.
                    self.samples.clear();
                    self.samples.push_back(s);
                    self.rate = None;
                }
            }
            None => match self.rate {
                Some(r) if r.uncertainty_ppm <= MAX_RATE_UNCERTAINTY_PPM => {
                    self.ok = true;
                    self.bad = false;
                    self.why = None;
                }
                _ => {
                    if !self.ok {
                        self.why = Some(match &self.why {
                            Some(w) if self.bad => format!("measuring again after: {w}"),
                            Some(w) if w.starts_with("measuring again") => w.clone(),
                            _ => "not measured yet (the rate needs a longer window)".into(),
                        });
                        self.bad = false;
                    }
                }
            },
        }
        let now = self.state();
        (now != was && now != Verdict::Unmeasured).then_some(now)
    }

    /// Something else proved the clock wrong (a write found the lease clock too far ahead of
    /// the database's): beyond bound now, measured afresh from the next sample. Returns whether
    /// that is news.
    pub fn fault(&mut self, why: &str) -> bool {
        let news = self.state() != Verdict::Beyond;
        self.ok = false;
        self.bad = true;
        self.why = Some(why.to_string());
        self.samples.clear();
        self.rate = None;
        news
    }

    /// The current verdict.
    pub fn state(&self) -> Verdict {
        if self.ok {
            Verdict::Within
        } else if self.bad {
            Verdict::Beyond
        } else {
            Verdict::Unmeasured
        }
    }

    /// What `/readyz` and `/metrics` show.
    pub fn report(&self) -> ClockReport {
        ClockReport {
            offset_ms: self.offset.map(|o| o.0),
            rate_ppm: self.rate.map(|r| r.ppm),
            bound_ms: self.max_offset_ms,
            rate_bound_ppm: self.max_rate_ppm,
            uncertainty_ms: self.offset.map(|o| o.1),
            ok: self.ok,
            why: self.why.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Samples every `period` ms of real time from a server whose wall clock is `offset` ms
    /// off and whose lease clock runs at `speed` times the real rate, with round trips of
    /// `rtt` ms.
    fn feed(
        g: &mut Guard,
        from: f64,
        n: usize,
        period: f64,
        offset: f64,
        speed: f64,
        rtt: f64,
    ) -> Vec<bool> {
        (0..n)
            .map(|i| {
                let t = from + i as f64 * period;
                g.observe(Sample {
                    mono_ms: t * speed,
                    wall_ms: 1.7e12 + t * speed + offset,
                    db_ms: 1.7e12 + t,
                    rtt_ms: rtt,
                });
                g.ok()
            })
            .collect()
    }

    #[test]
    fn a_good_clock_is_satisfied_after_a_short_window() {
        let mut g = Guard::new(500.0, 1000.0);
        assert!(!g.ok());
        let v = feed(&mut g, 0.0, 4, 500.0, 3.0, 1.00005, 1.0);
        assert_eq!(v, [false, true, true, true]);
        let r = g.report();
        assert!((r.rate_ppm.unwrap() - 50.0).abs() < 1.0, "{r:?}");
        assert!(r.ok && r.why.is_none());
    }

    #[test]
    fn a_clock_at_one_and_a_half_times_the_rate_never_satisfies_it() {
        let mut g = Guard::new(500.0, 1000.0);
        let at = |t: f64| Sample {
            mono_ms: t * 1.5,
            wall_ms: 1.7e12 + t * 1.5,
            db_ms: 1.7e12 + t,
            rtt_ms: 2.0,
        };
        assert_eq!(g.observe(at(0.0)), None);
        // The first time it is sure, it says so (the server logs it at ERROR).
        assert_eq!(g.observe(at(1000.0)), Some(Verdict::Beyond));
        let mut g = Guard::new(500.0, 1000.0);
        // Its first window already shows the rate (the wall clock, fast too, has not drifted
        // past the offset bound yet).
        let v = feed(&mut g, 0.0, 2, 1000.0, 0.0, 1.5, 2.0);
        assert_eq!(v, [false, false]);
        assert!(g.why().unwrap().contains("ppm"), "{:?}", g.why());
        let v = feed(&mut g, 2000.0, 30, 1000.0, 0.0, 1.5, 2.0);
        assert!(v.iter().all(|ok| !ok), "{v:?}");
    }

    #[test]
    fn an_offset_beyond_the_bound_trips_it_and_its_end_restores_it() {
        let mut g = Guard::new(500.0, 1000.0);
        assert!(feed(&mut g, 0.0, 3, 1000.0, 0.0, 1.0, 1.0)[2]);
        // The wall clock steps 2 s ahead (the lease clock is monotonic: it does not).
        let v = feed(&mut g, 3000.0, 3, 1000.0, 2000.0, 1.0, 1.0);
        assert_eq!(v, [false, false, false]);
        assert!(g.why().unwrap().contains("from the database's"));
        // Back within bound: the rate was never wrong, so the guard is satisfied at once.
        let v = feed(&mut g, 6000.0, 3, 1000.0, 0.0, 1.0, 1.0);
        assert_eq!(v, [true, true, true], "{:?}", g.why());
    }

    #[test]
    fn a_step_of_the_lease_clock_trips_it_until_a_fresh_window_is_clean() {
        let mut g = Guard::new(500.0, 1000.0);
        assert!(feed(&mut g, 0.0, 3, 1000.0, 0.0, 1.0, 1.0)[2]);
        // The lease clock jumps 300 ms (within the offset bound: only the rate sees it).
        g.observe(Sample {
            mono_ms: 3300.0,
            wall_ms: 1.7e12 + 3000.0,
            db_ms: 1.7e12 + 3000.0,
            rtt_ms: 1.0,
        });
        assert!(!g.ok());
        let v: Vec<bool> = (4..7)
            .map(|i| {
                let t = i as f64 * 1000.0;
                g.observe(Sample {
                    mono_ms: t + 300.0,
                    wall_ms: 1.7e12 + t,
                    db_ms: 1.7e12 + t,
                    rtt_ms: 1.0,
                });
                g.ok()
            })
            .collect();
        assert_eq!(v, [true, true, true]);
    }

    #[test]
    fn noisy_round_trips_neither_trip_it_nor_satisfy_it_alone() {
        let mut g = Guard::new(500.0, 1000.0);
        // Round trips of 1.2 s say nothing about a 500 ms bound.
        let v = feed(&mut g, 0.0, 5, 1000.0, 0.0, 1.0, 1200.0);
        assert!(v.iter().all(|ok| !ok));
        assert!(g.report().offset_ms.is_none());
        // 100 ms round trips: the offset is known, the rate only over a long window.
        let v = feed(&mut g, 5000.0, 40, 1000.0, 0.0, 1.0, 100.0);
        assert!(!v[1], "{v:?}");
        assert!(v[39], "{:?}", g.why());
    }

    #[test]
    fn a_loaded_host_is_measured_by_its_best_round_trips() {
        // Most round trips take 80 ms (a loaded host), one in five 2 ms: the oldest-to-latest
        // window alone stays above the uncertainty a satisfied guard needs for 16 s.
        let mut g = Guard::new(500.0, 1000.0);
        let v: Vec<bool> = (0..12)
            .map(|i| {
                let t = i as f64 * 667.0;
                let rtt = if i % 5 == 0 { 2.0 } else { 80.0 };
                g.observe(Sample {
                    mono_ms: t,
                    wall_ms: 1.7e12 + t,
                    db_ms: 1.7e12 + t,
                    rtt_ms: rtt,
                });
                g.ok()
            })
            .collect();
        // Samples 0 and 5 (3.3 s apart, 2 ms each) give +/- 600 ppm.
        assert!(v[5] && v[11], "{v:?} {:?}", g.why());
        assert!(g.report().rate_ppm.unwrap().abs() < 1.0);
        // A clock at 1.5 times the rate still trips it at once, whatever the best pair says.
        let mut g2 = g.clone();
        g2.observe(Sample {
            mono_ms: 12.0 * 667.0 + 333.0,
            wall_ms: 1.7e12 + 12.0 * 667.0,
            db_ms: 1.7e12 + 12.0 * 667.0,
            rtt_ms: 2.0,
        });
        assert!(!g2.ok(), "{:?}", g2.why());
    }
}
