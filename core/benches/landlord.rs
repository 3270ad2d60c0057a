//! Landlord benchmark: grant, renew, cancel and expire at N live leases, and bytes per lease,
//! against baselines measured in the same run:
//!
//! - **floor** (the headline): what a Rust user who cares writes instead, a hand-written
//!   landlord: `HashMap<u128, i64>` with the `foldhash` hasher (cookie -> expiration) plus a
//!   `BinaryHeap` of (deadline, cookie) with lazy deletion (a renewal pushes a new entry, a
//!   cancel leaves the old one to be skipped, expiry pops and skips stale entries);
//! - **fmap**: the foldhash map alone, insert / update / remove; it keeps no order, so it
//!   cannot expire anything by itself: its "expire" is a remove of every key;
//! - **sipmap**, **sipheap**: the same two with std's default SipHash (the old floor);
//! - **delayq**: a foldhash `HashMap<u128, delay_queue::Key>` plus
//!   `tokio_util::time::DelayQueue`, run inside a current-thread tokio runtime with a paused clock.
//!
//! The landlord is `Landlord<()>` (the peers store no resource either) with a `Bounded`
//! policy (max and default 10 min). Workload, the same for all: N grants of 10 min with the
//! clock advancing 1 ms per 64 operations; N renewals (10 min again, so each extends the lease) in
//! random order; N cancels in random order; and, on a fresh table of N leases that were each
//! renewed once, expiry of all N (time per expired lease, everything the host does included:
//! for the landlord a host loop that sleeps until `poll_timeout`, calls `handle_timeout` and
//! drains `poll_expired`, with the default budget of 10 000; for DelayQueue, `poll_expired`
//! under the paused clock's auto-advance; the floor just removes every key).
//! Times are CPU time of the benchmark thread on Linux (wall time elsewhere).
//! Cookies for the baselines are random `u128`s made before timing starts; the landlord makes
//! its own (ChaCha12) inside `grant`. Bytes per lease: heap bytes live after the N grants
//! (counted by a global allocator), divided by N.
//!
//! `cargo bench -p leasehold --bench landlord` runs N = 1e3, 1e5, 1e6 (and 1e7 with
//! `LEASEHOLD_BENCH_1E7=1`). Without `--bench` (as `cargo test --all-targets` runs it) it does
//! one quick round at N = 1000 as a smoke test.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cmp::Reverse;
use std::collections::hash_map::RandomState as Sip;
use std::collections::{BinaryHeap, HashMap};
use std::hash::BuildHasher;
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Duration as StdDuration;

use foldhash::fast::RandomState as Fold;
use leasehold::policy::Bounded;
use leasehold::{Cookie, Landlord, LandlordConfig, LandlordId, ANY};
use tokio_util::time::{delay_queue, DelayQueue};

struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size(), Relaxed);
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Relaxed);
        System.dealloc(p, l)
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size(), Relaxed);
        System.alloc_zeroed(l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        LIVE.fetch_add(new, Relaxed);
        LIVE.fetch_sub(l.size(), Relaxed);
        System.realloc(p, l, new)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn live() -> usize {
    LIVE.load(Relaxed)
}

/// Time spent by this thread on a CPU (the machine running the benchmark may be shared, and
/// time spent descheduled is not the code's); wall-clock time where that is not available.
#[derive(Clone, Copy)]
struct Clock(StdDuration);

impl Clock {
    #[cfg(target_os = "linux")]
    fn now() -> Clock {
        #[repr(C)]
        struct Timespec {
            sec: i64,
            nsec: i64,
        }
        extern "C" {
            fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
        }
        const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
        let mut ts = Timespec { sec: 0, nsec: 0 };
        // SAFETY: clock_gettime writes one timespec (two 64-bit fields on 64-bit Linux).
        let rc = unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        assert_eq!(rc, 0, "clock_gettime");
        Clock(StdDuration::new(ts.sec as u64, ts.nsec as u32))
    }
    #[cfg(not(target_os = "linux"))]
    fn now() -> Clock {
        use std::sync::OnceLock;
        static START: OnceLock<std::time::Instant> = OnceLock::new();
        Clock(START.get_or_init(std::time::Instant::now).elapsed())
    }
    fn elapsed(self) -> StdDuration {
        Clock::now().0.saturating_sub(self.0)
    }
}

const LEASE: i64 = 600_000;
const T0: i64 = 1_700_000_000_000;
const OPS_PER_MS: i64 = 64;

/// splitmix64: fast, deterministic randomness for keys and shuffles.
struct Mix(u64);
impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            v.swap(i, j);
        }
    }
}

fn keys(n: usize, seed: u64) -> Vec<u128> {
    let mut m = Mix(seed);
    (0..n).map(|_| (m.next() as u128) << 64 | m.next() as u128).collect()
}

fn order(n: usize, seed: u64) -> Vec<usize> {
    let mut v: Vec<usize> = (0..n).collect();
    Mix(seed).shuffle(&mut v);
    v
}

/// Nanoseconds per operation for one run of each phase, and bytes per lease.
#[derive(Debug, Clone, Copy, Default)]
struct Sample {
    grant: f64,
    renew: f64,
    cancel: f64,
    expire: f64,
    bytes: f64,
    /// Landlord only: renew through `renew_all` in batches of [`BATCH`].
    renew_batch: f64,
}

const BATCH: usize = 1000;

fn per(d: StdDuration, n: usize) -> f64 {
    d.as_nanos() as f64 / n as f64
}

fn tick(i: usize) -> i64 {
    i as i64 / OPS_PER_MS
}

// ---------------------------------------------------------------- landlord

fn landlord() -> Landlord<()> {
    Landlord::new(LandlordConfig::new(LandlordId(1), [9; 32]), Bounded::new(LEASE, LEASE).unwrap())
}

fn run_landlord(n: usize) -> Sample {
    let mut s = Sample::default();
    let mut cookies: Vec<Cookie> = Vec::with_capacity(n);
    let ord = order(n, 7);
    let ord2 = order(n, 8);
    let before = live();
    let mut ll = landlord();
    let t = Clock::now();
    for i in 0..n {
        cookies.push(ll.grant((), ANY, T0 + tick(i)).unwrap().cookie);
    }
    s.grant = per(t.elapsed(), n);
    s.bytes = (live() - before) as f64 / n as f64;
    let t1 = T0 + tick(n) + 1_000;
    let t = Clock::now();
    for (j, &i) in ord.iter().enumerate() {
        black_box(ll.renew(cookies[i], ANY, t1 + tick(j)).unwrap());
    }
    s.renew = per(t.elapsed(), n);
    let t = Clock::now();
    for &i in &ord2 {
        ll.cancel(cookies[i], t1).unwrap();
    }
    s.cancel = per(t.elapsed(), n);
    assert!(ll.is_empty());
    drop(ll);

    // Expire: N leases, each renewed once, all past their deadline.
    let mut ll = landlord();
    cookies.clear();
    for i in 0..n {
        cookies.push(ll.grant((), ANY, T0 + tick(i)).unwrap().cookie);
    }
    // The renewals, timed as batches through renew_all (same order, same times per batch).
    let t = Clock::now();
    for (b, chunk) in ord.chunks(BATCH).enumerate() {
        let items: Vec<(Cookie, i64)> = chunk.iter().map(|&i| (cookies[i], ANY)).collect();
        for r in ll.renew_all(&items, t1 + tick(b * BATCH)) {
            black_box(r.unwrap());
        }
    }
    s.renew_batch = per(t.elapsed(), n);
    // The host follows poll_timeout, as a real one would (its clock is virtual here).
    let mut now = t1 + tick(n);
    let t = Clock::now();
    let mut expired = 0;
    while let Some(p) = ll.poll_timeout() {
        now = now.max(p);
        ll.handle_timeout(now);
        while let Some(e) = ll.poll_expired() {
            black_box(e);
            expired += 1;
        }
    }
    s.expire = per(t.elapsed(), n);
    assert_eq!(expired, n);
    s
}

// ---------------------------------------------------------------- floor

fn run_map<S: BuildHasher + Default>(n: usize) -> Sample {
    let mut s = Sample::default();
    let ks = keys(n, 1);
    let ord = order(n, 7);
    let ord2 = order(n, 8);
    let before = live();
    let mut m: HashMap<u128, i64, S> = HashMap::default();
    let t = Clock::now();
    for (i, &k) in ks.iter().enumerate() {
        m.insert(k, T0 + tick(i) + LEASE);
    }
    s.grant = per(t.elapsed(), n);
    s.bytes = (live() - before) as f64 / n as f64;
    let t1 = T0 + tick(n) + 1_000;
    let t = Clock::now();
    for (j, &i) in ord.iter().enumerate() {
        *m.get_mut(&ks[i]).unwrap() = t1 + tick(j) + LEASE;
    }
    s.renew = per(t.elapsed(), n);
    let t = Clock::now();
    for &i in &ord2 {
        black_box(m.remove(&ks[i]).unwrap());
    }
    s.cancel = per(t.elapsed(), n);
    drop(m);

    let mut m: HashMap<u128, i64, S> = HashMap::default();
    for (i, &k) in ks.iter().enumerate() {
        m.insert(k, T0 + tick(i) + LEASE);
    }
    for (j, &i) in ord.iter().enumerate() {
        *m.get_mut(&ks[i]).unwrap() = t1 + tick(j) + LEASE;
    }
    let t = Clock::now();
    for k in &ks {
        black_box(m.remove(k).unwrap());
    }
    s.expire = per(t.elapsed(), n);
    s
}

// ---------------------------------------------------------------- heap

/// A competent hand-written landlord: cookie -> (expiration, resource) in a `HashMap` with
/// hasher `S`, plus a min-heap of (deadline, cookie) with lazy deletion.
#[derive(Default)]
struct HeapTable<S> {
    map: HashMap<u128, i64, S>,
    heap: BinaryHeap<Reverse<(i64, u128)>>,
}

impl<S: BuildHasher> HeapTable<S> {
    fn grant(&mut self, k: u128, deadline: i64) {
        self.map.insert(k, deadline);
        self.heap.push(Reverse((deadline, k)));
    }
    fn renew(&mut self, k: u128, deadline: i64) {
        *self.map.get_mut(&k).unwrap() = deadline;
        self.heap.push(Reverse((deadline, k)));
    }
    fn cancel(&mut self, k: u128) -> i64 {
        self.map.remove(&k).unwrap()
    }
    fn expire(&mut self, now: i64) -> usize {
        let mut n = 0;
        while let Some(&Reverse((d, k))) = self.heap.peek() {
            if d >= now {
                break;
            }
            self.heap.pop();
            if self.map.get(&k) == Some(&d) {
                self.map.remove(&k);
                n += 1;
            }
        }
        n
    }
}

fn run_heap<S: BuildHasher + Default>(n: usize) -> Sample {
    let mut s = Sample::default();
    let ks = keys(n, 1);
    let ord = order(n, 7);
    let ord2 = order(n, 8);
    let before = live();
    let mut h = HeapTable::<S>::default();
    let t = Clock::now();
    for (i, &k) in ks.iter().enumerate() {
        h.grant(k, T0 + tick(i) + LEASE);
    }
    s.grant = per(t.elapsed(), n);
    s.bytes = (live() - before) as f64 / n as f64;
    let t1 = T0 + tick(n) + 1_000;
    let t = Clock::now();
    for (j, &i) in ord.iter().enumerate() {
        h.renew(ks[i], t1 + tick(j) + LEASE);
    }
    s.renew = per(t.elapsed(), n);
    let t = Clock::now();
    for &i in &ord2 {
        black_box(h.cancel(ks[i]));
    }
    s.cancel = per(t.elapsed(), n);
    drop(h);

    let mut h = HeapTable::<S>::default();
    for (i, &k) in ks.iter().enumerate() {
        h.grant(k, T0 + tick(i) + LEASE);
    }
    for (j, &i) in ord.iter().enumerate() {
        h.renew(ks[i], t1 + tick(j) + LEASE);
    }
    let end = t1 + tick(n) + LEASE + 1;
    let t = Clock::now();
    let expired = h.expire(end);
    s.expire = per(t.elapsed(), n);
    assert_eq!(expired, n);
    s
}

// ---------------------------------------------------------------- DelayQueue

fn run_delayq(n: usize) -> Sample {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async move {
        let mut s = Sample::default();
        let ks = keys(n, 1);
        let ord = order(n, 7);
        let ord2 = order(n, 8);
        let ms = |x: i64| StdDuration::from_millis(x as u64);
        let start = tokio::time::Instant::now();
        let before = live();
        let mut map: HashMap<u128, delay_queue::Key, Fold> = HashMap::default();
        let mut dq: DelayQueue<u128> = DelayQueue::new();
        let t = Clock::now();
        for (i, &k) in ks.iter().enumerate() {
            map.insert(k, dq.insert_at(k, start + ms(tick(i) + LEASE)));
        }
        s.grant = per(t.elapsed(), n);
        s.bytes = (live() - before) as f64 / n as f64;
        let t1 = tick(n) + 1_000;
        let t = Clock::now();
        for (j, &i) in ord.iter().enumerate() {
            dq.reset_at(&map[&ks[i]], start + ms(t1 + tick(j) + LEASE));
        }
        s.renew = per(t.elapsed(), n);
        let t = Clock::now();
        for &i in &ord2 {
            let key = map.remove(&ks[i]).unwrap();
            black_box(dq.remove(&key));
        }
        s.cancel = per(t.elapsed(), n);
        drop((map, dq));

        let mut map: HashMap<u128, delay_queue::Key, Fold> = HashMap::default();
        let mut dq: DelayQueue<u128> = DelayQueue::new();
        for (i, &k) in ks.iter().enumerate() {
            map.insert(k, dq.insert_at(k, start + ms(tick(i) + LEASE)));
        }
        for (j, &i) in ord.iter().enumerate() {
            dq.reset_at(&map[&ks[i]], start + ms(t1 + tick(j) + LEASE));
        }
        tokio::time::advance(ms(t1 + tick(n) + LEASE + 1)).await;
        let t = Clock::now();
        let mut expired = 0;
        while let Some(e) = std::future::poll_fn(|cx| dq.poll_expired(cx)).await {
            map.remove(e.get_ref());
            expired += 1;
        }
        s.expire = per(t.elapsed(), n);
        assert_eq!(expired, n);
        assert!(map.is_empty());
        s
    })
}

// ---------------------------------------------------------------- table

/// Reads one measurement out of a [`Sample`].
type Field = fn(&Sample) -> f64;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// The median of each measurement over `all`.
fn medians(all: &[Sample]) -> Sample {
    let pick = |g: Field| median(all.iter().map(g).collect());
    Sample {
        grant: pick(|s| s.grant),
        renew: pick(|s| s.renew),
        cancel: pick(|s| s.cancel),
        expire: pick(|s| s.expire),
        bytes: pick(|s| s.bytes),
        renew_batch: pick(|s| s.renew_batch),
    }
}

/// Runs every contender `reps` times, interleaved (one run of each per round, so that a change
/// in the machine's load falls on all of them alike), and keeps the median of each measurement.
fn rounds<const K: usize>(reps: usize, contenders: [&dyn Fn() -> Sample; K]) -> [Sample; K] {
    let mut all: [Vec<Sample>; K] = std::array::from_fn(|_| Vec::with_capacity(reps));
    for _ in 0..reps {
        for (runs, f) in all.iter_mut().zip(&contenders) {
            runs.push(f());
        }
    }
    std::array::from_fn(|k| medians(&all[k]))
}

/// `LEASEHOLD_BENCH_FOCUS=N`: the floor and the landlord alone at N leases, alternated for
/// `LEASEHOLD_BENCH_REPS` rounds (default 7), every round printed, then the medians: a quick,
/// repeatable A/B for work on the landlord's hot paths.
fn focus(n: usize) {
    let reps = std::env::var("LEASEHOLD_BENCH_REPS").ok().and_then(|v| v.parse().ok()).unwrap_or(7);
    println!("focus at N = {n}, {reps} rounds (ns/op, thread CPU time; x = landlord / floor)");
    println!("| round | renew floor | landlord |    x | cancel floor | landlord |    x | expire floor | landlord |    x |");
    println!("|------:|------------:|---------:|-----:|-------------:|---------:|-----:|-------------:|---------:|-----:|");
    let (mut fs, mut ls) = (Vec::new(), Vec::new());
    for r in 0..reps {
        let f = run_heap::<Fold>(n);
        let l = run_landlord(n);
        println!(
            "| {:>5} | {:>11.1} | {:>8.1} | {:>4.2} | {:>12.1} | {:>8.1} | {:>4.2} | {:>12.1} | {:>8.1} | {:>4.2} |",
            r, f.renew, l.renew, l.renew / f.renew, f.cancel, l.cancel, l.cancel / f.cancel,
            f.expire, l.expire, l.expire / f.expire
        );
        fs.push(f);
        ls.push(l);
    }
    let ratios = |g: Field| median(fs.iter().zip(&ls).map(|(f, l)| g(l) / g(f)).collect());
    let (f, l) = (medians(&fs), medians(&ls));
    println!(
        "medians: renew {:.1} / {:.1} ns, cancel {:.1} / {:.1} ns, expire {:.1} / {:.1} ns, \
         bytes {:.1} / {:.1} B/lease (floor / landlord)",
        f.renew, l.renew, f.cancel, l.cancel, f.expire, l.expire, f.bytes, l.bytes
    );
    println!(
        "median of the per-round ratios: renew {:.2}x  cancel {:.2}x  expire {:.2}x  \
         renew_all {:.2}x",
        ratios(|s| s.renew),
        ratios(|s| s.cancel),
        ratios(|s| s.expire),
        median(fs.iter().zip(&ls).map(|(f, l)| l.renew_batch / f.renew).collect()),
    );
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    // For a profiler: `LEASEHOLD_BENCH_PROFILE=N` runs only the landlord at N leases, 5 times.
    if let Some(n) = std::env::var("LEASEHOLD_BENCH_PROFILE").ok().and_then(|v| v.parse().ok()) {
        for _ in 0..5 {
            black_box(run_landlord(n));
        }
        return;
    }
    if let Some(n) = std::env::var("LEASEHOLD_BENCH_FOCUS").ok().and_then(|v| v.parse().ok()) {
        focus(n);
        return;
    }
    let mut sizes = if full { vec![1_000, 100_000, 1_000_000] } else { vec![1_000] };
    if full && std::env::var_os("LEASEHOLD_BENCH_1E7").is_some() {
        sizes.push(10_000_000);
    }
    println!(
        "leasehold landlord benchmark ({} mode). Landlord<()> (no resource, like the peers), \
         Bounded policy, 10 min leases, clock +1 ms per 64 ops; renew/cancel in random order; \
         expire = per expired lease after one renewal each, host following poll_timeout. \
         ns/op = thread CPU time (median of interleaved rounds, at least 5); bytes/lease = live heap bytes after N grants / N.",
        if full { "full" } else { "quick smoke, not a measurement" }
    );
    println!(
        "floor = hand-written landlord: foldhash HashMap<u128, i64> + BinaryHeap, lazy deletion. \
         fmap = foldhash map alone (keeps no order: its expire is a remove); sipmap, sipheap = the \
         same two with std's SipHash; delayq = foldhash map + tokio DelayQueue. xF = time / floor \
         time (< 1: faster than the floor)."
    );
    println!();
    println!(
        "| {:>9} | {:<7} | {:>8} | {:>8} {:>5} | {:>8} {:>5} | {:>8} {:>5} | {:>8} {:>5} | {:>8} {:>5} |",
        "N", "op", "floor", "landlord", "xF", "fmap", "xF", "sipmap", "xF", "sipheap", "xF", "delayq", "xF"
    );
    println!(
        "|{:-<11}|{:-<9}|{:-<10}|{:-<16}|{:-<16}|{:-<16}|{:-<16}|{:-<16}|",
        "", "", "", "", "", "", "", ""
    );
    let mut summary = Vec::new();
    for &n in &sizes {
        let reps = if full { (200_000 / n).clamp(5, 50) } else { 1 };
        let [f, l, fm, sm, sh, d] = rounds(
            reps,
            [
                &|| run_heap::<Fold>(n),
                &|| run_landlord(n),
                &|| run_map::<Fold>(n),
                &|| run_map::<Sip>(n),
                &|| run_heap::<Sip>(n),
                &|| run_delayq(n),
            ],
        );
        let rows: [(&str, Field); 5] = [
            ("grant", |s| s.grant),
            ("renew", |s| s.renew),
            ("cancel", |s| s.cancel),
            ("expire", |s| s.expire),
            ("bytes", |s| s.bytes),
        ];
        for (name, g) in rows {
            let fv = g(&f);
            print!(
                "| {:>9} | {:<7} | {:>8.1} |",
                n,
                if name == "bytes" { "B/lease" } else { name },
                fv
            );
            for x in [&l, &fm, &sm, &sh, &d] {
                print!(" {:>8.1} {:>5.2} |", g(x), g(x) / fv);
            }
            println!();
        }
        if n >= 100_000 {
            summary.push((n, f, l, fm));
        }
    }
    if !summary.is_empty() {
        println!();
        println!("landlord / floor (hand-written, foldhash + heap); in brackets landlord / fmap:");
        for (n, f, l, fm) in &summary {
            println!(
                "  N = {:>9}: grant {:.2}x [{:.2}x]  renew {:.2}x [{:.2}x]  cancel {:.2}x [{:.2}x]  \
                 expire {:.2}x [{:.2}x]  bytes {:.2}x [{:.2}x]",
                n,
                l.grant / f.grant,
                l.grant / fm.grant,
                l.renew / f.renew,
                l.renew / fm.renew,
                l.cancel / f.cancel,
                l.cancel / fm.cancel,
                l.expire / f.expire,
                l.expire / fm.expire,
                l.bytes / f.bytes,
                l.bytes / fm.bytes,
            );
        }
        for (n, f, l, _) in &summary {
            println!(
                "  N = {:>9}: landlord renew_all in batches of {BATCH} (its batch entry point): \
                 {:.1} ns/renewal, {:.2}x floor",
                n,
                l.renew_batch,
                l.renew_batch / f.renew
            );
        }
        if let Some((_, f, l, _)) = summary.iter().find(|s| s.0 == 1_000_000) {
            let ok = |b: bool| if b { "met" } else { "MISSED" };
            println!(
                "targets at 1e6 (issue 28): renew <= 1.0x floor: {:.2}x {}; cancel <= 1.0x floor: \
                 {:.2}x {}; expire no worse than 0.25x floor: {:.2}x {}; bytes no worse than 33.6 \
                 B/lease: {:.1} {}",
                l.renew / f.renew,
                ok(l.renew <= f.renew),
                l.cancel / f.cancel,
                ok(l.cancel <= f.cancel),
                l.expire / f.expire,
                ok(l.expire <= 0.25 * f.expire),
                l.bytes,
                ok(l.bytes <= 33.6),
            );
        }
    }
}
