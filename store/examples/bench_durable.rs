//! Durable landlords against in-memory ones, in one run (issue 14, item 6).
//!
//! `cargo run --release -p leasehold-store --example bench_durable -- [--leases N] [--secs S]`
//!
//! 1. Grants and renewals per second with 1, 16 and 256 requests in flight: that many client
//!    threads, each sending one request and waiting for its answer before the next. In memory,
//!    the answer is ready when the landlord has answered; durable, when the journal record
//!    behind it is written and synced ([`leasehold_store::Shared`]: one sync per group of
//!    requests that arrived meanwhile).
//! 2. At N leases (default 1e6): binary snapshot write time and size, bytes on disk per lease,
//!    and recovery time (snapshot plus a log of renewals).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use leasehold::policy::Bounded;
use leasehold::store::StoreConfig;
use leasehold::{Cookie, Landlord, LandlordConfig, LandlordId, FOREVER};
use leasehold_store::{Durable, Shared};

type LL = Landlord<Vec<u8>>;

fn policy() -> Bounded {
    Bounded::new(FOREVER, 60_000).unwrap()
}

fn fresh() -> LL {
    let mut ll = LL::new(LandlordConfig::new(LandlordId(1), [7; 32]), policy());
    ll.enable_journal();
    ll
}

fn open(dir: &std::path::Path, sc: StoreConfig) -> Durable<LL> {
    Durable::open(dir, sc, 0, |snap| match snap {
        Some(b) => LL::from_snapshot_bytes(b, policy()),
        None => Ok(fresh()),
    })
    .expect("open store")
}

#[derive(Clone, Copy, PartialEq)]
enum Op {
    Grant,
    Renew,
    /// One request renewing 100 leases (what a renewal manager sends for one landlord).
    RenewBatch,
}

/// Leases renewed (or granted) by one request of `op`.
fn per_request(op: Op) -> u64 {
    if op == Op::RenewBatch {
        100
    } else {
        1
    }
}

/// Runs `threads` clients for `secs`; returns (ops per second, syncs).
fn run(op: Op, threads: usize, secs: f64, durable: Option<&std::path::Path>) -> (f64, u64) {
    let base: usize = 10_000;
    enum Host {
        Mem(Box<Mutex<LL>>),
        Disk(Box<Shared<LL>>),
    }
    let host = Arc::new(match durable {
        None => Host::Mem(Box::new(Mutex::new(fresh()))),
        Some(dir) => Host::Disk(Box::new(Shared::new(open(dir, StoreConfig::default())))),
    });
    // Leases to renew, granted first.
    let cookies: Arc<Vec<Cookie>> = Arc::new(match &*host {
        Host::Mem(m) => {
            let mut ll = m.lock().unwrap();
            (0..base).map(|i| ll.grant(vec![i as u8; 8], 60_000, 0).unwrap().cookie).collect()
        }
        Host::Disk(s) => {
            let (cs, seq) = s.with(|ll| {
                (0..base).map(|i| ll.grant(vec![i as u8; 8], 60_000, 0).unwrap().cookie).collect()
            });
            s.wait_durable(seq).unwrap();
            cs
        }
    });
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let writes0 = match &*host {
        Host::Disk(s) => s.writes(),
        Host::Mem(_) => 0,
    };
    let start = Instant::now();
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let (host, cookies, stop, done) =
                (host.clone(), cookies.clone(), stop.clone(), done.clone());
            std::thread::spawn(move || {
                let mut i = t;
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let now = 1 + (i / base) as i64;
                    let act = |ll: &mut LL| match op {
                        Op::Grant => drop(ll.grant(vec![7; 8], 60_000, now).unwrap()),
                        Op::Renew => drop(ll.renew(cookies[i % base], 60_000, now).unwrap()),
                        Op::RenewBatch => {
                            let items: Vec<_> =
                                (0..100).map(|k| (cookies[(i * 100 + k) % base], 60_000)).collect();
                            for r in ll.renew_all(&items, now) {
                                r.unwrap();
                            }
                        }
                    };
                    match &*host {
                        Host::Mem(m) => act(&mut m.lock().unwrap()),
                        Host::Disk(s) => {
                            let ((), seq) = s.with(act);
                            s.wait_durable(seq).unwrap();
                        }
                    }
                    i += threads;
                    n += 1;
                }
                done.fetch_add(n, Ordering::Relaxed);
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs_f64(secs));
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
    let elapsed = start.elapsed().as_secs_f64();
    let writes = match &*host {
        Host::Disk(s) => s.writes() - writes0,
        Host::Mem(_) => 0,
    };
    (done.load(Ordering::Relaxed) as f64 * per_request(op) as f64 / elapsed, writes)
}

/// CPU time this thread has run, in ms (Linux; 0 elsewhere): on a loaded machine the wall
/// clock also counts time spent waiting for a core.
fn cpu_ms() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse::<f64>().ok()))
        .map_or(0.0, |ns| ns / 1e6)
}

fn dir_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().metadata().unwrap().len()).sum()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut n, mut secs, mut inflight) = (1_000_000usize, 2.0f64, true);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--leases" => n = args.next().and_then(|v| v.parse().ok()).expect("--leases N"),
            "--secs" => secs = args.next().and_then(|v| v.parse().ok()).expect("--secs S"),
            "--no-inflight" => inflight = false,
            _ => panic!("usage: bench_durable [--leases N] [--secs S] [--no-inflight]"),
        }
    }
    let tmp = std::env::temp_dir().join(format!("leasehold-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);

    println!("## Durable vs in-memory, requests in flight (each client waits for its answer)");
    println!();
    println!("| op (leases per request) | requests in flight | in memory leases/s | durable leases/s | durable / memory | syncs/s | requests per sync |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for op in [Op::Grant, Op::Renew, Op::RenewBatch].into_iter().filter(|_| inflight) {
        for threads in [1usize, 16, 256] {
            let (mem, _) = run(op, threads, secs, None);
            let d = tmp.join(format!(
                "run-{threads}-{}",
                per_request(op) as usize + (op == Op::Grant) as usize
            ));
            let (dur, writes) = run(op, threads, secs, Some(&d));
            let _ = std::fs::remove_dir_all(&d);
            let syncs = writes as f64 / secs;
            let name = match op {
                Op::Grant => "grant (1)",
                Op::Renew => "renew (1)",
                Op::RenewBatch => "renew_all (100)",
            };
            println!(
                "| {name} | {threads} | {mem:.0} | {dur:.0} | {:.3} | {syncs:.0} | {:.1} |",
                dur / mem,
                dur / per_request(op) as f64 / syncs.max(1.0),
            );
        }
    }

    println!();
    println!("## {n} leases: snapshot, bytes on disk, recovery");
    println!();
    let d = tmp.join("big");
    let mut durable =
        open(&d, StoreConfig { segment_bytes: 64 << 20, min_compact_bytes: u64::MAX });
    let resource = 8usize;
    let cookies: Vec<Cookie> = (0..n)
        .map(|i| {
            durable
                .state_mut()
                .grant((i as u64).to_le_bytes().to_vec(), 3_600_000, 0)
                .unwrap()
                .cookie
        })
        .collect();
    durable.commit().unwrap();
    let (t, c) = (Instant::now(), cpu_ms());
    let mut snap = Vec::new();
    durable.state_mut().snapshot_bytes(&mut snap);
    let (snap_ms, snap_cpu) = (t.elapsed().as_secs_f64() * 1e3, cpu_ms() - c);
    let per_lease = snap.len() as f64 / n as f64;
    drop(snap);
    let t = Instant::now();
    durable.compact().unwrap();
    let compact_ms = t.elapsed().as_secs_f64() * 1e3;
    // A log of renewals after the snapshot: one record per lease, committed in batches of 1000.
    for (i, c) in cookies.iter().enumerate() {
        durable.state_mut().renew(*c, 3_600_000, 1 + i as i64 / 1000).unwrap();
        if i % 1000 == 999 {
            durable.commit().unwrap();
        }
    }
    durable.commit().unwrap();
    let disk = dir_bytes(&d);
    drop(durable);
    let (t, c) = (Instant::now(), cpu_ms());
    let back = open(&d, StoreConfig { segment_bytes: 64 << 20, min_compact_bytes: u64::MAX });
    let (recover_ms, recover_cpu) = (t.elapsed().as_secs_f64() * 1e3, cpu_ms() - c);
    assert_eq!(back.state().len(), n);
    let replayed = back.recovered().replayed;
    drop(back);
    // Recovery from the snapshot alone.
    let mut only = open(&d, StoreConfig::default());
    let mut out = Vec::new();
    only.state_mut().snapshot_bytes(&mut out);
    let snap_file = d.join("snapshot-only");
    std::fs::write(&snap_file, &out).unwrap();
    drop(only);
    let (t, c) = (Instant::now(), cpu_ms());
    let bytes = std::fs::read(&snap_file).unwrap();
    let ll = LL::from_snapshot_bytes(&bytes, policy()).unwrap();
    let (snap_recover_ms, snap_recover_cpu) = (t.elapsed().as_secs_f64() * 1e3, cpu_ms() - c);
    assert_eq!(ll.len(), n);
    println!("| measure | value | CPU time of it |");
    println!("|---|---:|---:|");
    println!("| snapshot write (in memory), ms | {snap_ms:.1} | {snap_cpu:.1} |");
    println!("| snapshot written to disk and synced, old log dropped, ms | {compact_ms:.0} | |");
    println!("| snapshot bytes per lease ({resource}-byte resource) | {per_lease:.1} | |");
    println!(
        "| snapshot bytes per lease, less the resource | {:.1} | |",
        per_lease - resource as f64
    );
    println!("| recovery from the snapshot alone, ms (read + rebuild) | {snap_recover_ms:.0} | {snap_recover_cpu:.0} |");
    println!("| recovery from snapshot + log of {replayed} renewals, ms | {recover_ms:.0} | {recover_cpu:.0} |");
    println!("| bytes on disk per lease (snapshot + that log) | {:.1} | |", disk as f64 / n as f64);
    let _ = std::fs::remove_dir_all(&tmp);
}
