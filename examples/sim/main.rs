//! `sim`: reproduces Bowers, Mills and Rose, "Self-Adaptive Leasing for Jini" (seed 004) with
//! leasehold's own sans-I/O core, in virtual time.
//!
//! Every rule comes from `leasehold`: real `Landlord`s with the `Fixed` and `Adaptive` policies,
//! one `RenewalManager` per leaseholder, and the inverted-leasing `Poller` and `PollListener`.
//! The simulator carries their messages, injects failures and joins, and measures bandwidth B
//! (bytes of the messages actually exchanged) and responsiveness R (failure to detection).

mod engine;
mod figures;
mod model;
mod svg;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use leasehold::inverted::MessageSizes;

use figures::{Adaptivity, Common, Fig3, Fig4, Fig5, Figure};
use model::ManagerKnobs;

/// Reproduces the figures of "Self-Adaptive Leasing for Jini" (Bowers, Mills, Rose) with the
/// leasehold core, in virtual time.
///
/// Each subcommand runs its experiment, writes <out>/<figure>.csv and <out>/<figure>.svg, prints
/// a table comparing every point with the paper's analysis, and exits with status 1 if any
/// point is off by more than the tolerance. Progress and speed go to stderr; everything on
/// stdout and in the files is the same for the same seed and parameters.
#[derive(Parser, Debug)]
#[command(name = "sim", version)]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Figure 3: fixed lease periods. B and R against N for every L_G; checks
    /// B = (N/L_G)(S_R+S_G) and R = L_G/2 at every point.
    Fig3(Fig3Args),
    /// Figure 4: growing N, Adaptive vs Inverted. B and the control variable (L_G or D)
    /// against N; checks Adaptive B <= G(S_R+S_G) and Inverted B = (S_P + N(S_PR+S_RC))/P.
    Fig4(Fig4Args),
    /// Figure 5: shrinking N, Adaptive vs Inverted. B and R against N; checks Adaptive
    /// B <= G(S_R+S_G), Adaptive R = L_G/2 and Inverted R = D + A/2 (the paper's R = D when A = 0).
    Fig5(Fig5Args),
    /// All three figures with their default settings.
    All,
}

#[derive(Args, Debug, Clone)]
struct CommonArgs {
    /// Seed of every random choice (join, failure and answer times, cookies).
    #[arg(long, global = true, default_value_t = 1)]
    seed: u64,
    /// Directory for the CSV and SVG files.
    #[arg(long, global = true, default_value = "docs/figures")]
    out: PathBuf,
    /// Worker threads (default: the machine's cores). Results do not depend on it.
    #[arg(long, global = true)]
    threads: Option<usize>,
    /// No progress bar on stderr.
    #[arg(long, global = true)]
    quiet: bool,
    /// Allowed relative error of every check, in percent.
    #[arg(long, global = true, default_value_t = 5.0, allow_negative_numbers = true)]
    tolerance: f64,
    /// One-way message latency in milliseconds.
    #[arg(long, global = true, default_value_t = 5.0, allow_negative_numbers = true)]
    latency_ms: f64,
    /// S_R: size of a lease request in bytes.
    #[arg(long, global = true, default_value_t = 128.0, allow_negative_numbers = true)]
    request_size: f64,
    /// S_G: size of a lease grant in bytes.
    #[arg(long, global = true, default_value_t = 32.0, allow_negative_numbers = true)]
    grant_size: f64,
    /// S_P: size of a poll (inverted leasing) in bytes.
    #[arg(long, global = true, default_value_t = 64.0, allow_negative_numbers = true)]
    poll_size: f64,
    /// S_PR: size of a poll response (inverted leasing) in bytes.
    #[arg(long, global = true, default_value_t = 128.0, allow_negative_numbers = true)]
    response_size: f64,
    /// S_RC: size of a response confirmation (inverted leasing) in bytes.
    #[arg(long, global = true, default_value_t = 32.0, allow_negative_numbers = true)]
    confirm_size: f64,
    /// RenewalManager knob: renew when 1/DIVISOR of the grant is left (or the round-trip
    /// margin, if more). The manager's default, 8, renews 1/8 early and so raises the renewal
    /// rate by 14% over the paper's 1/L_G; 1000 keeps it within a few tenths of a percent.
    #[arg(long, global = true, default_value_t = 1000, allow_negative_numbers = true)]
    renew_divisor: i64,
    /// RenewalManager knob: round trips kept in hand before expiry (the margin is ATTEMPTS
    /// times the measured RTO).
    #[arg(long, global = true, default_value_t = 1, allow_negative_numbers = true)]
    attempts: i64,
    /// RenewalManager knob: smallest request time-out in ms (bounds the RTO from below). On the
    /// simulator's jitter-free network the measured RTO converges to the RTT itself, so a reply
    /// would race its own time-out; keep this well above 2 x latency.
    #[arg(long, global = true, default_value_t = 50.0, allow_negative_numbers = true)]
    min_rto_ms: f64,
}

#[derive(Args, Debug, Clone)]
struct Fig3Args {
    /// Smallest N.
    #[arg(long, default_value_t = 10, allow_negative_numbers = true)]
    n_from: i64,
    /// Largest N.
    #[arg(long, default_value_t = 200, allow_negative_numbers = true)]
    n_to: i64,
    /// Step of N.
    #[arg(long, default_value_t = 10, allow_negative_numbers = true)]
    n_step: i64,
    /// Shortest lease period L_G, seconds.
    #[arg(long, default_value_t = 15.0, allow_negative_numbers = true)]
    lease_from: f64,
    /// Longest lease period L_G, seconds.
    #[arg(long, default_value_t = 300.0, allow_negative_numbers = true)]
    lease_to: f64,
    /// Step of L_G, seconds.
    #[arg(long, default_value_t = 15.0, allow_negative_numbers = true)]
    lease_step: f64,
    /// Lease periods drawn in the SVG (all are in the CSV and checked).
    #[arg(long, value_delimiter = ',', default_values_t = [15.0, 60.0, 120.0])]
    plot_leases: Vec<f64>,
    /// B is measured over a failure-free stretch of this many lease periods, after every
    /// holder has joined (rejoins after failures cost extra request-grant pairs, L_G/(2 MTBF)
    /// of B, which the paper's formula leaves out).
    #[arg(long, default_value_t = 40.0, allow_negative_numbers = true)]
    b_periods: f64,
    /// Then holders fail (and rejoin) with this mean time between failures, in lease periods;
    /// each failure time is uniform on 0..2 MTBF after the holder (re)joined.
    #[arg(long, default_value_t = 2.0, allow_negative_numbers = true)]
    mtbf_periods: f64,
    /// Failures to observe per point for R (sets the run length: failures x MTBF / N). R of
    /// one failure is spread uniformly over 0..L_G, so the mean of 3000 has a standard error
    /// of 1.05%.
    #[arg(long, default_value_t = 3000.0, allow_negative_numbers = true)]
    failures: f64,
    /// Mean downtime of a failed holder before it rejoins, seconds (uniform on 0..2x).
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    downtime: f64,
}

#[derive(Args, Debug, Clone)]
struct AdaptArgs {
    /// G: renewals (or poll responses) per second the landlord affords.
    #[arg(long, default_value_t = 3.0, allow_negative_numbers = true)]
    g: f64,
    /// L_MIN: shortest lease period (Adaptive) or D (Inverted), seconds.
    #[arg(long, default_value_t = 15.0, allow_negative_numbers = true)]
    l_min: f64,
    /// L_MAX: longest lease period, or D + A, seconds ("inf" for unbounded).
    #[arg(long, default_value_t = f64::INFINITY, allow_negative_numbers = true)]
    l_max: f64,
    /// A as a fraction of D (Inverted).
    #[arg(long, default_value_t = 0.2, allow_negative_numbers = true)]
    extra: f64,
    /// Independent replications averaged per point [default: 20 for fig4, 200 for fig5].
    #[arg(long, allow_negative_numbers = true)]
    reps: Option<i64>,
    /// Width of a bin of N, in leaseholders.
    #[arg(long, default_value_t = 10, allow_negative_numbers = true)]
    bin: i64,
}

#[derive(Args, Debug, Clone)]
struct Fig4Args {
    #[command(flatten)]
    a: AdaptArgs,
    /// N at the start.
    #[arg(long, default_value_t = 10, allow_negative_numbers = true)]
    n_from: i64,
    /// N at the end.
    #[arg(long, default_value_t = 200, allow_negative_numbers = true)]
    n_to: i64,
    /// Seconds over which the new holders join (at uniformly distributed times).
    #[arg(long, default_value_t = 6000.0, allow_negative_numbers = true)]
    grow_time: f64,
}

#[derive(Args, Debug, Clone)]
struct Fig5Args {
    #[command(flatten)]
    a: AdaptArgs,
    /// N at the start; every holder then fails once, at a uniformly distributed time.
    #[arg(long, default_value_t = 200, allow_negative_numbers = true)]
    n_from: i64,
    /// Seconds over which the holders fail.
    #[arg(long, default_value_t = 6000.0, allow_negative_numbers = true)]
    shrink_time: f64,
}

fn size(name: &str, v: f64) -> Result<u64, String> {
    if !v.is_finite() || v < 0.0 || v.fract() != 0.0 {
        return Err(format!("--{name} must be a whole number of bytes, zero or more; got {v}"));
    }
    Ok(v as u64)
}

fn positive(name: &str, v: f64) -> Result<f64, String> {
    if v.is_nan() || v <= 0.0 || v.is_infinite() {
        return Err(format!("--{name} must be a positive number, got {v}"));
    }
    Ok(v)
}

fn count(name: &str, v: i64, min: i64) -> Result<usize, String> {
    if v < min {
        return Err(format!("--{name} must be at least {min}, got {v}"));
    }
    Ok(v as usize)
}

fn common(a: &CommonArgs) -> Result<Common, String> {
    let sizes = MessageSizes {
        request: size("request-size", a.request_size)?,
        grant: size("grant-size", a.grant_size)?,
        poll: size("poll-size", a.poll_size)?,
        response: size("response-size", a.response_size)?,
        confirm: size("confirm-size", a.confirm_size)?,
    };
    if sizes.request + sizes.grant == 0 {
        return Err("S_R + S_G (--request-size + --grant-size) must be positive".into());
    }
    if a.latency_ms.is_nan() || a.latency_ms < 0.0 || a.latency_ms > 60_000.0 {
        return Err(format!("--latency-ms must be between 0 and 60000, got {}", a.latency_ms));
    }
    let tolerance = positive("tolerance", a.tolerance)? / 100.0;
    let renew_divisor = count("renew-divisor", a.renew_divisor, 2)?;
    let attempts = count("attempts", a.attempts, 1)?;
    let min_rto = positive("min-rto-ms", a.min_rto_ms)?.round().max(1.0) as i64;
    let threads = match a.threads {
        Some(0) => return Err("--threads must be at least 1".into()),
        Some(t) => t,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    Ok(Common {
        seed: a.seed,
        threads,
        progress: !a.quiet,
        latency: a.latency_ms.round() as i64,
        sizes,
        knobs: ManagerKnobs {
            renew_divisor: renew_divisor.min(u32::MAX as usize) as u32,
            attempts: attempts.min(u32::MAX as usize) as u32,
            min_rto,
        },
        tolerance,
    })
}

fn adaptivity(a: &AdaptArgs, default_reps: i64) -> Result<(Adaptivity, usize, usize), String> {
    let g = positive("g", a.g)?;
    let l_min = positive("l-min", a.l_min)?;
    if a.l_max.is_nan() || a.l_max <= 0.0 {
        return Err(format!("--l-max must be positive (or inf), got {}", a.l_max));
    }
    if l_min > a.l_max {
        return Err(format!("--l-min ({l_min} s) must not exceed --l-max ({} s)", a.l_max));
    }
    if a.extra.is_nan() || a.extra < 0.0 || a.extra.is_infinite() {
        return Err(format!("--extra (A/D) must be zero or more, got {}", a.extra));
    }
    let reps = count("reps", a.reps.unwrap_or(default_reps), 1)?;
    let bin = count("bin", a.bin, 1)?;
    Ok((Adaptivity { g, l_min_s: l_min, l_max_s: a.l_max, extra: a.extra }, reps, bin))
}

fn range_f(name: &str, from: f64, to: f64, step: f64) -> Result<Vec<f64>, String> {
    positive(&format!("{name}-from"), from)?;
    positive(&format!("{name}-step"), step)?;
    if to.is_nan() || to < from || to.is_infinite() {
        return Err(format!("--{name}-to ({to}) must be at least --{name}-from ({from})"));
    }
    let k = ((to - from) / step + 1e-9).floor() as usize;
    Ok((0..=k).map(|i| from + step * i as f64).collect())
}

fn fig3_settings(a: &Fig3Args) -> Result<Fig3, String> {
    let n_from = count("n-from", a.n_from, 1)?;
    let n_to = count("n-to", a.n_to, 1)?;
    let n_step = count("n-step", a.n_step, 1)?;
    if n_to < n_from {
        return Err(format!("--n-to ({n_to}) must be at least --n-from ({n_from})"));
    }
    let leases_s = range_f("lease", a.lease_from, a.lease_to, a.lease_step)?;
    for l in &a.plot_leases {
        positive("plot-leases", *l)?;
    }
    if a.downtime.is_nan() || a.downtime < 0.0 || a.downtime.is_infinite() {
        return Err(format!("--downtime must be zero or more seconds, got {}", a.downtime));
    }
    Ok(Fig3 {
        n: (n_from..=n_to).step_by(n_step).collect(),
        leases_s,
        plot_leases_s: a.plot_leases.clone(),
        b_periods: positive("b-periods", a.b_periods)?,
        mtbf_periods: positive("mtbf-periods", a.mtbf_periods)?,
        failures: positive("failures", a.failures)?,
        downtime_s: a.downtime,
    })
}

fn fig4_settings(a: &Fig4Args) -> Result<Fig4, String> {
    let (ad, reps, bin) = adaptivity(&a.a, 20)?;
    let n_from = count("n-from", a.n_from, 1)?;
    let n_to = count("n-to", a.n_to, 1)?;
    if n_to <= n_from {
        return Err(format!(
            "--n-to ({n_to}) must be above --n-from ({n_from}) for a growing system"
        ));
    }
    Ok(Fig4 { a: ad, n_from, n_to, grow_s: positive("grow-time", a.grow_time)?, reps, bin })
}

fn fig5_settings(a: &Fig5Args) -> Result<Fig5, String> {
    let (ad, reps, bin) = adaptivity(&a.a, 200)?;
    Ok(Fig5 {
        a: ad,
        n_from: count("n-from", a.n_from, 1)?,
        shrink_s: positive("shrink-time", a.shrink_time)?,
        reps,
        bin,
    })
}

fn write(out: &Path, fig: &Figure) -> Result<(), String> {
    std::fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    for (ext, body) in [("csv", &fig.csv), ("svg", &fig.svg)] {
        let p = out.join(format!("{}.{ext}", fig.name));
        std::fs::write(&p, body).map_err(|e| format!("cannot write {}: {e}", p.display()))?;
    }
    Ok(())
}

fn defaults<T: clap::FromArgMatches + clap::Args>(name: &'static str) -> T {
    let cmd = T::augment_args(clap::Command::new(name));
    T::from_arg_matches(&cmd.get_matches_from([name])).expect("defaults parse")
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("sim: error: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: &Cli) -> Result<bool, String> {
    let c = common(&cli.common)?;
    // Check every setting before running anything.
    let plan: Vec<Box<dyn Fn() -> Result<Figure, String>>> = match &cli.command {
        Command::Fig3(a) => {
            let f = fig3_settings(a)?;
            let c = c.clone();
            vec![Box::new(move || figures::fig3(&f, &c))]
        }
        Command::Fig4(a) => {
            let f = fig4_settings(a)?;
            let c = c.clone();
            vec![Box::new(move || figures::fig4(&f, &c))]
        }
        Command::Fig5(a) => {
            let f = fig5_settings(a)?;
            let c = c.clone();
            vec![Box::new(move || figures::fig5(&f, &c))]
        }
        Command::All => {
            let f3 = fig3_settings(&defaults::<Fig3Args>("fig3"))?;
            let f4 = fig4_settings(&defaults::<Fig4Args>("fig4"))?;
            let f5 = fig5_settings(&defaults::<Fig5Args>("fig5"))?;
            let (c3, c4, c5) = (c.clone(), c.clone(), c.clone());
            vec![
                Box::new(move || figures::fig3(&f3, &c3)),
                Box::new(move || figures::fig4(&f4, &c4)),
                Box::new(move || figures::fig5(&f5, &c5)),
            ]
        }
    };
    let (mut passed, mut failed) = (0, 0);
    for job in plan {
        let fig = job()?;
        write(&cli.common.out, &fig)?;
        print!("{}", fig.table);
        let bad: Vec<_> = fig.checks.iter().filter(|ch| !ch.passed(c.tolerance)).collect();
        let worst = fig
            .checks
            .iter()
            .filter(|ch| !ch.upper_bound && ch.expected != 0.0)
            .map(|ch| ch.error().abs())
            .fold(0.0f64, f64::max);
        println!(
            "{}: {} checks, {} failed, largest |error| {:.2}% (tolerance {:.1}%); wrote {}/{}.csv and .svg",
            fig.name,
            fig.checks.len(),
            bad.len(),
            worst * 100.0,
            c.tolerance * 100.0,
            cli.common.out.display(),
            fig.name
        );
        for ch in &bad {
            println!(
                "  FAILED {}: measured {:.4}, expected {}{:.4} ({:+.2}%)",
                ch.what,
                ch.measured,
                if ch.upper_bound { "at most " } else { "" },
                ch.expected,
                ch.error() * 100.0
            );
        }
        passed += fig.checks.len() - bad.len();
        failed += bad.len();
        eprintln!("{}", fig.stats.describe(fig.name));
    }
    println!("sim: {passed} passed, {failed} failed");
    Ok(failed == 0)
}
