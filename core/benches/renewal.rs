//! Renewal manager benchmark: cost per managed lease per round, and requests per round with
//! and without batching; plus how fast the virtual-time network runs.
//!
//! Run: `cargo bench -p leasehold --bench renewal` (or `scripts/bench-renewal.sh`).
//! Optional argument: `--quick` for smaller sizes.

use std::collections::VecDeque;
use std::time::Instant;

use leasehold::holder::{RenewalManager, RenewalManagerConfig, Transmit};
use leasehold::policy::Fixed;
use leasehold::simnet::{Clock, Hold, LinkConfig, SimNet};
use leasehold::wire::Outcome;
use leasehold::{
    Cookie, Landlord, LandlordConfig, LandlordId, Lease, Millis, Reply, ReplyBody, RequestBody,
    FOREVER,
};

const SEC: Millis = 1_000;
const MIN: Millis = 60 * SEC;

struct Scenario {
    name: &'static str,
    leases: usize,
    landlords: u64,
    config: RenewalManagerConfig,
}

struct Measured {
    rounds: f64,
    requests: u64,
    renewed: u64,
    manager_ns: u128,
    failures: u64,
}

fn reply_to(t: &Transmit, granted: i64) -> Reply {
    let body = match &t.request.body {
        RequestBody::Renew { .. } => ReplyBody::Renewed { duration: granted },
        RequestBody::RenewAll { items } => {
            ReplyBody::RenewedAll { results: vec![Outcome::Ok(granted); items.len()] }
        }
        _ => ReplyBody::Cancelled,
    };
    Reply { id: t.request.id, landlord: t.landlord, body }
}

/// Drives one manager against an answering machine that grants `grant` ms after `rtt` ms,
/// for `run` ms of virtual time after a warm-up of `warm` ms. Only manager calls are timed.
fn drive(s: &Scenario, grant: i64, rtt: Millis, warm: Millis, run: Millis) -> Measured {
    let mut m = RenewalManager::new(s.config.clone());
    let n = s.leases as i64;
    for i in 0..s.leases {
        // Expirations spread evenly over one grant: the worst case for batching.
        let exp = 10 * SEC + (i as i64 * (grant - 10 * SEC)) / n;
        let landlord = LandlordId(1 + i as u64 % s.landlords);
        let lease = Lease::new(landlord, Cookie(0x9e37_79b9_7f4a_7c15 * (i as u128 + 1)), exp);
        m.renew_until(lease, FOREVER, grant, 0).expect("valid");
    }
    let mut replies: VecDeque<(Millis, Reply)> = VecDeque::new();
    let mut sent = Vec::new();
    let mut ns: u128 = 0;
    let mut base = None;
    let end = warm + run;
    loop {
        let next_timer = m.poll_timeout().unwrap_or(Millis::MAX);
        let next_reply = replies.front().map(|r| r.0).unwrap_or(Millis::MAX);
        let now = next_timer.min(next_reply);
        if now > end {
            break;
        }
        if base.is_none() && now >= warm {
            base = Some((m.stats(), ns));
        }
        let t0 = Instant::now();
        if next_reply <= next_timer {
            let (_, r) = replies.pop_front().expect("peeked");
            m.handle_reply(&r, now);
        } else {
            m.handle_timeout(now);
        }
        while let Some(t) = m.poll_transmit(now) {
            sent.push(t);
        }
        while m.poll_event().is_some() {}
        ns += t0.elapsed().as_nanos();
        for t in sent.drain(..) {
            replies.push_back((now + rtt, reply_to(&t, grant)));
        }
    }
    let (s0, ns0) = base.expect("ran past the warm-up");
    let s1 = m.stats();
    let renewed = s1.leases_renewed - s0.leases_renewed;
    Measured {
        rounds: renewed as f64 / s.leases as f64,
        requests: s1.renew_requests - s0.renew_requests,
        renewed,
        manager_ns: ns - ns0,
        failures: s1.failures,
    }
}

fn sim_speed(hours: i64) -> (f64, u64, u64) {
    let mut net = SimNet::new(1);
    net.set_default_link(LinkConfig { latency: 20, jitter: 60, loss: 0.01 });
    let ll = LandlordId(7);
    net.add_landlord(
        Landlord::new(LandlordConfig::new(ll, [1; 32]), Fixed::new(2 * MIN).unwrap()),
        Clock::exact(),
    );
    let mut holders = Vec::new();
    for i in 0..4 {
        let h = net.add_holder(RenewalManager::new(Default::default()), Clock::new(i * MIN, 1.0));
        for d in [10 * SEC, MIN, 30 * SEC, 2 * MIN] {
            net.holder_mut(h).request_grant(ll, vec![i as u8], d, Hold::For(FOREVER), d);
        }
        holders.push(h);
    }
    let t0 = Instant::now();
    net.run_until(hours * 60 * MIN);
    let secs = t0.elapsed().as_secs_f64();
    let renewed = holders.iter().map(|&h| net.holder(h).manager.stats().leases_renewed).sum();
    (secs, net.stats().steps, renewed)
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --all-targets` runs this without it, as a
    // smoke test with small sizes.
    let smoke = !std::env::args().any(|a| a == "--bench");
    let quick = smoke || std::env::args().any(|a| a == "--quick");
    let big = if smoke {
        1_000
    } else if quick {
        10_000
    } else {
        100_000
    };
    let d = RenewalManagerConfig::default();
    let scenarios = vec![
        Scenario { name: "batched (default)", leases: big, landlords: 1, config: d.clone() },
        Scenario { name: "batched (default)", leases: big, landlords: 10, config: d.clone() },
        Scenario {
            name: "window 0 (same-ms only)",
            leases: big,
            landlords: 1,
            config: RenewalManagerConfig { batch_window: 0, ..d.clone() },
        },
        Scenario {
            name: "no batching (max_batch 1)",
            leases: big,
            landlords: 1,
            config: RenewalManagerConfig { max_batch: 1, ..d.clone() },
        },
        Scenario { name: "batched (default)", leases: 1_000, landlords: 1, config: d.clone() },
        Scenario {
            name: "no batching (max_batch 1)",
            leases: 1_000,
            landlords: 1,
            config: RenewalManagerConfig { max_batch: 1, ..d.clone() },
        },
    ];
    if smoke {
        println!(
            "smoke run (small sizes, maybe unoptimised): run scripts/bench-renewal.sh for figures"
        );
    }
    let (grant, rtt) = (MIN, 20);
    let (warm, run) = (
        5 * MIN,
        if smoke {
            2 * MIN
        } else if quick {
            10 * MIN
        } else {
            20 * MIN
        },
    );
    println!("renewal manager: {} s leases, expirations spread over 10 s to one grant, {rtt} ms round trips,", grant / SEC);
    println!(
        "{} min measured after {} min warm-up; only manager calls are timed",
        run / MIN,
        warm / MIN
    );
    println!();
    println!(
        "| {:<26} | {:>7} | {:>9} | {:>6} | {:>13} | {:>15} | {:>8} |",
        "scenario", "leases", "landlords", "rounds", "requests/round", "ns/lease/round", "failures"
    );
    println!("|{:-<28}|{:->9}|{:->11}|{:->8}|{:->15}|{:->17}|{:->10}|", "", "", "", "", "", "", "");
    let args: Vec<String> = std::env::args().collect();
    let only = args.iter().position(|a| a == "--only").and_then(|i| args.get(i + 1)).cloned();
    for s in &scenarios {
        if only.as_ref().is_some_and(|o| !s.name.contains(o.as_str())) {
            continue;
        }
        let o = drive(s, grant, rtt, warm, run);
        let per_round = o.requests as f64 / o.rounds;
        let ns = o.manager_ns as f64 / o.renewed.max(1) as f64;
        println!(
            "| {:<26} | {:>7} | {:>9} | {:>6.1} | {:>14.1} | {:>15.0} | {:>8} |",
            s.name, s.leases, s.landlords, o.rounds, per_round, ns, o.failures
        );
    }
    println!();
    let hours = if smoke {
        1
    } else if quick {
        2
    } else {
        8
    };
    let (secs, steps, renewed) = sim_speed(hours);
    println!("simnet: 1 landlord, 4 holders x 4 leases (10 s to 2 min), 1% loss");
    println!(
        "| {:>13} | {:>9} | {:>10} | {:>9} | {:>22} |",
        "virtual hours", "real s", "steps", "renewals", "virtual h per real s"
    );
    println!("|{:->15}|{:->11}|{:->12}|{:->11}|{:->24}|", "", "", "", "", "");
    println!(
        "| {:>13} | {:>9.3} | {:>10} | {:>9} | {:>22.0} |",
        hours,
        secs,
        steps,
        renewed,
        hours as f64 / secs
    );
}
