//! `vopr`: deterministic simulation testing of leasehold, in the manner of TigerBeetle's VOPR
//! and FoundationDB's simulator.
//!
//! Each seed is one run: the seed picks a world (landlords, holders, maybe a renewal service;
//! which faults and how often) and drives the real core code over `simnet` with seeded faults:
//! loss, duplication, reordering and delay of messages, partitions, clock skew, drift and steps
//! (backwards too), crashes restored from the last durable commit (sometimes taken at the
//! crash moment), corrupted snapshots, hostile replies and misrouted requests. After every step
//! it checks:
//!
//! - (a) no holder believes in a lease its landlord has dropped (in real time, across clock
//!   rates; beliefs made unsafe by a clock step that the protocol cannot see are excused);
//! - (b) nothing acknowledged is lost across a restore;
//! - (c) no lease comes back once its landlord said it was gone;
//! - (d) event sequence numbers strictly increase per registration (and handbacks come back);
//! - (e) in the liveness phase (faults stopped), a holder that keeps renewing keeps its lease;
//! - coordination (when the seed turns it on): never two leases of an exclusive resource at a
//!   landlord, tokens that only grow, careful lock holders never fenced, watchers that see every
//!   event in order or are told what they missed (see `coord.rs`);
//!
//! and also that no landlord honours another's cookie, that restore refuses inconsistent
//! snapshots, and that a landlord restored from a commit taken at its crash answers exactly as
//! the same landlord that never crashed.
//!
//! A failure prints its seed, the world, and the last steps; `--seed S` replays it exactly.

mod coord;
mod discovery;
mod durable;
mod nodes;
mod world;

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use clap::{Parser, ValueEnum};

use nodes::Faults;
use world::{run, Outcome, RunConfig};

/// Deterministic simulation of landlords, renewal managers and the renewal service under
/// seeded faults, checking safety after every step and liveness once faults stop.
#[derive(Debug, Parser)]
#[command(name = "vopr")]
struct Args {
    /// How many seeds to run (from --first-seed on).
    #[arg(long, default_value_t = 1000)]
    seeds: u64,
    /// The first seed of a --seeds run.
    #[arg(long, default_value_t = 0)]
    first_seed: u64,
    /// Replay one seed: prints its world, its last steps and its outcome.
    #[arg(long)]
    seed: Option<u64>,
    /// Worker threads (default: the machine's cores).
    #[arg(long)]
    jobs: Option<usize>,
    /// Steps of trace printed for a failure (and for --seed).
    #[arg(long, default_value_t = 40)]
    trace: usize,
    /// Print only the failing seeds and the summary.
    #[arg(long)]
    quiet: bool,
    /// A seed still running after this many seconds of wall time is reported as a hang (the
    /// process then exits, naming it).
    #[arg(long, default_value_t = 60)]
    hang_secs: u64,
    /// Steer around known bugs, to hunt for others while they are open (comma-separated).
    #[arg(long, value_enum, value_delimiter = ',')]
    avoid: Vec<Known>,
}

/// Known bugs `--avoid` can steer around.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Known {
    /// Renew durations shorter than a lease has left.
    ShortRenewals,
    /// Clock steps backwards.
    StepsBack,
    /// Two landlords with one cookie seed.
    SharedSeeds,
    /// Corrupted snapshots handed to restore.
    CorruptSnapshots,
    /// The restored-landlord twin comparison.
    RestoreTwin,
    /// A restored renewal service reusing request ids (the host starts them afresh instead).
    ReusedRequestIds,
}

/// The flags a replay needs besides the seed.
fn replay_flags(args: &Args) -> String {
    let mut s = String::new();
    if !args.avoid.is_empty() {
        let names: Vec<String> = args
            .avoid
            .iter()
            .map(|k| k.to_possible_value().expect("named").get_name().to_string())
            .collect();
        s.push_str(&format!(" --avoid {}", names.join(",")));
    }
    s
}

/// The report of one failing (or replayed) seed.
fn report(o: &Outcome, replay: &str) -> String {
    let mut s = String::new();
    match &o.failure {
        Some(f) => s.push_str(&format!(
            "seed {} FAILED {} at {} ms (step {}): {}\n",
            o.seed,
            f.check.name(),
            f.at,
            o.steps,
            f.message
        )),
        None => s.push_str(&format!(
            "seed {} passed: {} steps, {} ms simulated, {} renewals, {} events\n",
            o.seed, o.steps, o.simulated, o.renewals, o.events
        )),
    }
    s.push_str(&format!("  world: {}\n", o.options));
    s.push_str(&format!("  faults: {}\n", o.faults));
    s.push_str(&format!("  last {} steps:\n", o.trace.len()));
    for l in &o.trace {
        s.push_str("    ");
        s.push_str(l);
        s.push('\n');
    }
    s.push_str(&format!("  replay: vopr --seed {}{replay}\n", o.seed));
    s
}

fn main() {
    let args = Args::parse();
    // A panic of the code under test is reported as the failure of its seed, with its message.
    std::panic::set_hook(Box::new(|_| {}));
    let avoid = world::Avoid {
        short_renewals: args.avoid.contains(&Known::ShortRenewals),
        steps_back: args.avoid.contains(&Known::StepsBack),
        shared_seeds: args.avoid.contains(&Known::SharedSeeds),
        corrupt_snapshots: args.avoid.contains(&Known::CorruptSnapshots),
        restore_twin: args.avoid.contains(&Known::RestoreTwin),
        reused_request_ids: args.avoid.contains(&Known::ReusedRequestIds),
    };
    let replay = replay_flags(&args);
    let traced = RunConfig { trace: args.trace.max(1), avoid };
    if let Some(seed) = args.seed {
        let o = run(seed, &traced);
        print!("{}", report(&o, &replay));
        let (p, f) = if o.failure.is_some() { (0, 1) } else { (1, 0) };
        println!("vopr: {p} passed, {f} failed");
        std::process::exit(f);
    }
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let fast = RunConfig { trace: 0, avoid };
    let next = AtomicU64::new(0);
    let total = Mutex::new((0u64, 0u64, 0u64, Faults::default()));
    let failures: Mutex<Vec<Outcome>> = Mutex::new(Vec::new());
    let start = Instant::now();
    // What each worker runs, and since when: a seed that never ends (a loop inside the core)
    // must not hang the whole sweep silently.
    let running: Mutex<Vec<Option<(u64, Instant)>>> = Mutex::new(vec![None; jobs]);
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(std::time::Duration::from_millis(200));
                let slow = running
                    .lock()
                    .expect("lock")
                    .iter()
                    .flatten()
                    .find(|(_, t)| t.elapsed().as_secs() >= args.hang_secs)
                    .copied();
                if let Some((seed, _)) = slow {
                    println!(
                        "seed {seed} HANGS: still running after {} s of wall time (replay: vopr \
                         --seed {seed}{replay})",
                        args.hang_secs
                    );
                    println!("vopr: 0 passed, 1 failed");
                    std::process::exit(2);
                }
            }
        });
        let workers: Vec<_> = (0..jobs)
            .map(|w| {
                let (next, running, total, failures) = (&next, &running, &total, &failures);
                let (fast, traced, args) = (&fast, &traced, &args);
                s.spawn(move || loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= args.seeds {
                        return;
                    }
                    let seed = args.first_seed.wrapping_add(i);
                    running.lock().expect("lock")[w] = Some((seed, Instant::now()));
                    let o = run(seed, fast);
                    {
                        let mut t = total.lock().expect("lock");
                        t.0 += 1;
                        t.1 += o.steps;
                        t.2 += o.simulated as u64;
                        t.3.add(&o.faults);
                    }
                    if o.failure.is_some() {
                        // Replay with a trace: the same seed gives the same run, step for step.
                        let mut r = run(seed, traced);
                        if r.failure != o.failure || r.steps != o.steps {
                            r.failure = Some(nodes::Failure {
                                check: nodes::Check::Twin,
                                message: format!(
                                "NONDETERMINISM: the replay of seed {seed} differs ({:?} after \
                                 {} steps, then {:?} after {} steps)",
                                o.failure, o.steps, r.failure, r.steps
                            ),
                                at: 0,
                            });
                        }
                        failures.lock().expect("lock").push(r);
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().expect("a worker panicked");
        }
        done.store(true, Ordering::Relaxed);
    });
    let elapsed = start.elapsed();
    let mut failures = failures.into_inner().expect("lock");
    failures.sort_by_key(|o| o.seed);
    let out = std::io::stdout();
    let mut out = out.lock();
    for o in &failures {
        let _ = write!(out, "{}", report(o, &replay));
    }
    let (n, steps, simulated, faults) = total.into_inner().expect("lock");
    if !failures.is_empty() {
        let seeds: Vec<String> = failures.iter().map(|o| o.seed.to_string()).collect();
        let _ = writeln!(out, "failing seeds: {}", seeds.join(" "));
    }
    if !args.quiet || !failures.is_empty() {
        let mut by_check = std::collections::BTreeMap::new();
        for o in &failures {
            if let Some(f) = &o.failure {
                *by_check.entry(f.check.name()).or_insert(0u64) += 1;
            }
        }
        let _ = writeln!(
            out,
            "failures by check: {}",
            if by_check.is_empty() {
                "none".to_string()
            } else {
                by_check.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
            }
        );
    }
    let _ = writeln!(
        out,
        "vopr summary: {n} seeds ({}..{}), {steps} steps, {:.1} h simulated, {:.1} s on {jobs} \
         threads; faults injected: {faults}",
        args.first_seed,
        args.first_seed.wrapping_add(n),
        simulated as f64 / 3_600_000.0,
        elapsed.as_secs_f64(),
    );
    let _ = writeln!(out, "vopr: {} passed, {} failed", n - failures.len() as u64, failures.len());
    drop(out);
    std::process::exit(if failures.is_empty() { 0 } else { 1 });
}
