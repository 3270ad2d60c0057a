//! Per-call cost of `Landlord::renew` called from Rust, for comparison with the same call made
//! through libleasehold from C (`bindings-c/bench/renew_bench.c`; both driven by
//! `scripts/bench-c.sh`). Same landlord, policy, seed, lease count and call sequence.
//!
//! Usage: `cargo bench -p leasehold-c --bench renew -- [LEASES] [CALLS] [RUNS]`; prints
//! `rust_renew_ns <best ns per call over RUNS runs>`.

use std::hint::black_box;
use std::time::Instant;

use leasehold_core::policy::Bounded;
use leasehold_core::{Cookie, Landlord, LandlordConfig, LandlordId};

fn arg(args: &[String], i: usize, default: usize) -> usize {
    args.get(i).and_then(|s| s.parse().ok()).unwrap_or(default)
}

fn main() {
    // cargo bench passes "--bench"; keep only the numbers.
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let leases = arg(&args, 0, 10_000).max(1);
    let calls = arg(&args, 1, 2_000_000).max(1);
    let runs = arg(&args, 2, 5).max(1);

    let config = LandlordConfig::new(LandlordId(1), [42; 32]);
    let mut ll: Landlord<Vec<u8>> =
        Landlord::new(config, Bounded::new(60_000, 30_000).expect("valid policy"));
    let cookies: Vec<Cookie> = (0..leases)
        .map(|_| ll.grant(b"resource".to_vec(), 30_000, 0).expect("grant").cookie)
        .collect();

    let mut best = f64::INFINITY;
    let mut now: i64 = 1;
    for _ in 0..runs {
        let start = Instant::now();
        let mut sum: i64 = 0;
        for i in 0..calls {
            if i % leases == 0 {
                now += 1;
            }
            let granted = ll.renew(black_box(cookies[i % leases]), 30_000, now).expect("renew");
            sum = sum.wrapping_add(granted);
        }
        let ns = start.elapsed().as_nanos() as f64 / calls as f64;
        black_box(sum);
        best = best.min(ns);
    }
    println!("rust_renew_ns {best:.1}");
}
