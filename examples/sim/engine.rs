//! The discrete-event core of the simulator: a time-ordered event queue, a seeded random
//! source, and the measurement accumulators every scenario fills.
//!
//! Time is virtual milliseconds. Nothing sleeps: the loop jumps from one event to the next.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use leasehold::Millis;
use rand_chacha::ChaCha12Rng;
use rand_core::{RngCore, SeedableRng};

/// A queued event's key: due time, insertion order (ties are broken by it, so runs are
/// deterministic) and its slot in the event store. Kept small so the heap moves little.
#[derive(PartialEq, Eq)]
struct Key {
    at: Millis,
    seq: u64,
    slot: u32,
}

impl PartialOrd for Key {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Key {
    fn cmp(&self, o: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap, we want the earliest first.
        (o.at, o.seq).cmp(&(self.at, self.seq))
    }
}

/// Time-ordered events.
pub struct Queue<E> {
    heap: BinaryHeap<Key>,
    store: Vec<Option<E>>,
    free: Vec<u32>,
    seq: u64,
    /// Events taken out so far.
    pub processed: u64,
}

impl<E> Queue<E> {
    pub fn new() -> Queue<E> {
        Queue { heap: BinaryHeap::new(), store: Vec::new(), free: Vec::new(), seq: 0, processed: 0 }
    }
    pub fn push(&mut self, at: Millis, ev: E) {
        self.seq += 1;
        let slot = match self.free.pop() {
            Some(s) => {
                self.store[s as usize] = Some(ev);
                s
            }
            None => {
                self.store.push(Some(ev));
                (self.store.len() - 1) as u32
            }
        };
        self.heap.push(Key { at, seq: self.seq, slot });
    }
    /// The next event at or before `until`.
    pub fn pop_until(&mut self, until: Millis) -> Option<(Millis, E)> {
        if self.heap.peek()?.at > until {
            return None;
        }
        self.processed += 1;
        let k = self.heap.pop()?;
        self.free.push(k.slot);
        let ev = self.store[k.slot as usize].take().expect("a queued slot holds its event");
        Some((k.at, ev))
    }
}

/// The simulator's randomness: ChaCha12 from a 64-bit seed, so a seed gives the same run.
pub struct Rng(ChaCha12Rng);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(ChaCha12Rng::seed_from_u64(seed))
    }
    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform in `[lo, hi)` ms.
    pub fn between(&mut self, lo: Millis, hi: Millis) -> Millis {
        if hi <= lo {
            return lo;
        }
        lo + (self.unit() * (hi - lo) as f64) as Millis
    }
    pub fn seed32(&mut self) -> [u8; 32] {
        let mut s = [0u8; 32];
        self.0.fill_bytes(&mut s);
        s
    }
}

/// Derives the seed of replication or point `index` from the run's seed (SplitMix64 step).
pub fn derive_seed(seed: u64, index: u64) -> u64 {
    let mut z =
        seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(0x632B_E59B_D9B3_E9B5);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// What one slice of a run (a bin of system size N, or the whole window) accumulated.
#[derive(Debug, Clone, Copy, Default)]
pub struct Acc {
    /// Virtual time spent, ms.
    pub time_ms: f64,
    /// Integral of the number of live holders over that time (holder-ms).
    pub holder_ms: f64,
    /// Bytes sent (both directions).
    pub bytes: f64,
    /// Sum and count of the control variable (granted L_G, or poll D), ms.
    pub ctrl_sum: f64,
    pub ctrl_n: f64,
    /// Failure-detection delays: sum of measured R, of the analysis' prediction for that
    /// failure, and their count.
    pub r_sum: f64,
    pub r_pred_sum: f64,
    pub r_n: f64,
    /// Sum of the paper's formula for R (L_G / 2, or D for inverted leasing).
    pub r_paper_sum: f64,
    /// Sum of squared R, for a confidence interval.
    pub r_sq: f64,
}

impl Acc {
    pub fn add(&mut self, o: &Acc) {
        self.time_ms += o.time_ms;
        self.holder_ms += o.holder_ms;
        self.bytes += o.bytes;
        self.ctrl_sum += o.ctrl_sum;
        self.ctrl_n += o.ctrl_n;
        self.r_sum += o.r_sum;
        self.r_pred_sum += o.r_pred_sum;
        self.r_n += o.r_n;
        self.r_paper_sum += o.r_paper_sum;
        self.r_sq += o.r_sq;
    }
    /// Bytes per second.
    pub fn bandwidth(&self) -> f64 {
        if self.time_ms > 0.0 {
            self.bytes / (self.time_ms / 1000.0)
        } else {
            f64::NAN
        }
    }
    /// Time-averaged number of live holders.
    pub fn n_avg(&self) -> f64 {
        if self.time_ms > 0.0 {
            self.holder_ms / self.time_ms
        } else {
            f64::NAN
        }
    }
    /// Mean control variable in seconds.
    pub fn ctrl_s(&self) -> f64 {
        if self.ctrl_n > 0.0 {
            self.ctrl_sum / self.ctrl_n / 1000.0
        } else {
            f64::NAN
        }
    }
    /// Mean measured R in seconds.
    pub fn r_s(&self) -> f64 {
        if self.r_n > 0.0 {
            self.r_sum / self.r_n / 1000.0
        } else {
            f64::NAN
        }
    }
    /// Mean predicted R in seconds.
    pub fn r_pred_s(&self) -> f64 {
        if self.r_n > 0.0 {
            self.r_pred_sum / self.r_n / 1000.0
        } else {
            f64::NAN
        }
    }
    /// Standard error of the mean R, seconds.
    pub fn r_stderr_s(&self) -> f64 {
        if self.r_n < 2.0 {
            return f64::NAN;
        }
        let m = self.r_sum / self.r_n;
        let var = (self.r_sq / self.r_n - m * m).max(0.0) * self.r_n / (self.r_n - 1.0);
        (var / self.r_n).sqrt() / 1000.0
    }
    /// Mean of the paper's R formula in seconds.
    pub fn r_paper_s(&self) -> f64 {
        if self.r_n > 0.0 {
            self.r_paper_sum / self.r_n / 1000.0
        } else {
            f64::NAN
        }
    }
    pub fn record_r(&mut self, measured: f64, predicted: f64, paper: f64) {
        self.r_paper_sum += paper;
        self.r_sum += measured;
        self.r_sq += measured * measured;
        self.r_pred_sum += predicted;
        self.r_n += 1.0;
    }
}

/// Accumulators by system size: one [`Acc`] per bin of `width` holders, plus the window total.
#[derive(Debug, Clone)]
pub struct Meter {
    /// Width of a bin in holders (0: no bins, only the total).
    pub width: usize,
    pub bins: Vec<Acc>,
    /// The whole measurement window.
    pub total: Acc,
    /// Measurement window `[from, to)` of B and the control variable.
    pub from: Millis,
    pub to: Millis,
    /// Window `[r_from, r_to)` of the failures whose detection delay R is measured.
    pub r_from: Millis,
    pub r_to: Millis,
    last: Millis,
    /// Counters of everything, window or not.
    pub counts: Counts,
}

/// Message and anomaly counters of a run.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counts {
    /// Renewal (or poll-response) exchanges.
    pub renewals: u64,
    /// Grant (or join) exchanges.
    pub grants: u64,
    /// Denied requests.
    pub denials: u64,
    /// Leases a live holder lost (a renewal failed or came too late): should be 0.
    pub lost: u64,
    /// Failures injected.
    pub failures: u64,
    /// Leaseholder joins (first joins and rejoins).
    pub joins: u64,
    /// Virtual holder-milliseconds simulated (all the run).
    pub holder_ms: f64,
    /// Events processed.
    pub events: u64,
}

impl Counts {
    pub fn add(&mut self, d: &Counts) {
        self.renewals += d.renewals;
        self.grants += d.grants;
        self.denials += d.denials;
        self.lost += d.lost;
        self.failures += d.failures;
        self.joins += d.joins;
        self.holder_ms += d.holder_ms;
        self.events += d.events;
    }
}

impl Meter {
    pub fn new(width: usize, max_n: usize, from: Millis, to: Millis) -> Meter {
        // The last bin is closed: with width 10 and max_n 200 it holds 190..=200.
        let bins = if width == 0 { 0 } else { max_n.div_ceil(width).max(1) };
        Meter {
            width,
            bins: vec![Acc::default(); bins],
            total: Acc::default(),
            from,
            to,
            r_from: from,
            r_to: to,
            last: 0,
            counts: Counts::default(),
        }
    }

    fn bin(&mut self, n: usize) -> Option<&mut Acc> {
        if self.width == 0 {
            return None;
        }
        let i = (n / self.width).min(self.bins.len() - 1);
        self.bins.get_mut(i)
    }

    fn in_window(&self, t: Millis) -> bool {
        t >= self.from && t < self.to
    }

    /// Advances the clock to `now` with `n` live holders since the last call.
    pub fn advance(&mut self, now: Millis, n: usize) {
        let dt_all = (now - self.last) as f64;
        self.counts.holder_ms += dt_all * n as f64;
        let a = self.last.max(self.from);
        let b = now.min(self.to);
        self.last = now;
        if b <= a {
            return;
        }
        let dt = (b - a) as f64;
        self.total.time_ms += dt;
        self.total.holder_ms += dt * n as f64;
        if let Some(acc) = self.bin(n) {
            acc.time_ms += dt;
            acc.holder_ms += dt * n as f64;
        }
    }

    /// `bytes` sent at `now` with `n` live holders.
    pub fn bytes(&mut self, now: Millis, n: usize, bytes: u64) {
        if !self.in_window(now) {
            return;
        }
        self.total.bytes += bytes as f64;
        if let Some(b) = self.bin(n) {
            b.bytes += bytes as f64;
        }
    }

    /// A control-variable setting (granted L_G or poll D) made at `now`.
    pub fn control(&mut self, now: Millis, n: usize, value: i64) {
        if !self.in_window(now) {
            return;
        }
        self.total.ctrl_sum += value as f64;
        self.total.ctrl_n += 1.0;
        if let Some(b) = self.bin(n) {
            b.ctrl_sum += value as f64;
            b.ctrl_n += 1.0;
        }
    }

    /// A failure at `failed_at` (with `n` live holders just before it) detected after
    /// `measured` ms, where the analysis predicts `predicted` ms.
    pub fn detection(
        &mut self,
        failed_at: Millis,
        n: usize,
        measured: f64,
        predicted: f64,
        paper: f64,
    ) {
        if failed_at < self.r_from || failed_at >= self.r_to {
            return;
        }
        self.total.record_r(measured, predicted, paper);
        if let Some(b) = self.bin(n) {
            b.record_r(measured, predicted, paper);
        }
    }

    /// Adds another run's accumulators (replications), in a fixed order.
    pub fn merge(&mut self, o: &Meter) {
        self.total.add(&o.total);
        for (a, b) in self.bins.iter_mut().zip(&o.bins) {
            a.add(b);
        }
        self.counts.add(&o.counts);
    }
}
