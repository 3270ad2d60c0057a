//! The paper's three figures as experiments: scenarios, self-checks, CSV and SVG.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use leasehold::inverted::{self, MessageSizes};
use leasehold::policy::AdaptiveConfig;
use leasehold::{Duration, FOREVER};

use crate::engine::{derive_seed, Acc, Counts, Meter};
use crate::model::{self, Churn, ManagerKnobs, Scenario, Scheme};
use crate::svg::{self, Corner, Panel, Series, Style, COLORS};

/// Settings shared by every figure.
#[derive(Debug, Clone)]
pub struct Common {
    pub seed: u64,
    pub threads: usize,
    pub progress: bool,
    pub latency: Duration,
    pub sizes: MessageSizes,
    pub knobs: ManagerKnobs,
    /// Allowed relative error of every check, e.g. 0.05.
    pub tolerance: f64,
}

/// One comparison of a measurement with the analysis.
pub struct Check {
    pub what: String,
    pub measured: f64,
    pub expected: f64,
    /// `true`: measured must be at most expected (1 + tol); `false`: within +-tol.
    pub upper_bound: bool,
}

impl Check {
    pub fn error(&self) -> f64 {
        (self.measured - self.expected) / self.expected
    }
    pub fn passed(&self, tol: f64) -> bool {
        if !self.measured.is_finite() || !self.expected.is_finite() {
            return false;
        }
        if self.upper_bound {
            self.measured <= self.expected * (1.0 + tol)
        } else {
            self.error().abs() <= tol
        }
    }
}

/// What a figure produced.
pub struct Figure {
    pub name: &'static str,
    pub csv: String,
    pub svg: String,
    /// Human-readable comparison table (deterministic).
    pub table: String,
    pub checks: Vec<Check>,
    pub stats: RunStats,
}

/// How much was simulated, and how fast.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunStats {
    pub runs: usize,
    pub holders: usize,
    pub counts: Counts,
    pub wall_s: f64,
    /// Processor time of the whole process while the runs ran (Linux), seconds.
    pub cpu_s: Option<f64>,
}

/// User + system time of this process so far, from /proc/self/stat (Linux; clock ticks of
/// 1/100 s, the kernel's USER_HZ on every mainstream architecture).
pub fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

impl RunStats {
    pub fn describe(&self, name: &str) -> String {
        let c = &self.counts;
        let msgs = c.renewals + c.grants;
        let hh = c.holder_ms / 3.6e6;
        let mut s = format!(
            "{name}: {} runs, {} leaseholders, {:.0} leaseholder-hours of virtual time, {} request-reply exchanges, {} events\n",
            self.runs, self.holders, hh, msgs, c.events,
        );
        let mut per = |what: &str, secs: f64| {
            s += &format!(
                "{name}: {secs:.2} s {what}: {:.0} leaseholders/s, {:.0} leaseholder-hours/s, {:.2} M exchanges/s, {:.2} M events/s\n",
                self.holders as f64 / secs,
                hh / secs,
                msgs as f64 / secs / 1e6,
                c.events as f64 / secs / 1e6,
            );
        };
        per("wall", self.wall_s);
        if let Some(cpu) = self.cpu_s.filter(|&t| t > 0.0) {
            per("CPU (all threads)", cpu);
        }
        s.trim_end().to_string()
    }
}

/// Runs scenarios on `threads` threads; results come back in input order (deterministic).
fn run_all(label: &str, jobs: &[Scenario], c: &Common) -> Result<(Vec<Meter>, RunStats), String> {
    let start = Instant::now();
    let cpu_start = cpu_seconds();
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<Meter, String>>>> =
        Mutex::new((0..jobs.len()).map(|_| None).collect());
    let last_print = Mutex::new(Instant::now());
    let threads = c.threads.clamp(1, jobs.len().max(1));
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= jobs.len() {
                    break;
                }
                let r = model::run(&jobs[i]).map_err(|e| e.to_string());
                results.lock().expect("no panics while holding the lock")[i] = Some(r);
                let d = done.fetch_add(1, Ordering::Relaxed) + 1;
                if c.progress {
                    let mut lp = last_print.lock().expect("no panics while holding the lock");
                    if d == jobs.len() || lp.elapsed().as_millis() >= 100 {
                        *lp = Instant::now();
                        progress(label, d, jobs.len(), start.elapsed().as_secs_f64());
                    }
                }
            });
        }
    });
    if c.progress {
        eprintln!();
    }
    let mut meters = Vec::with_capacity(jobs.len());
    let mut stats = RunStats { runs: jobs.len(), ..RunStats::default() };
    for (r, job) in results.into_inner().expect("threads joined").into_iter().zip(jobs) {
        let m = r.expect("every job ran")?;
        stats.holders += job.initial + job.growth.map_or(0, |g| g.0);
        stats.counts.add(&m.counts);
        meters.push(m);
    }
    stats.wall_s = start.elapsed().as_secs_f64();
    stats.cpu_s = cpu_seconds().zip(cpu_start).map(|(b, a)| b - a);
    Ok((meters, stats))
}

fn progress(label: &str, done: usize, total: usize, secs: f64) {
    let width = 40;
    let filled = done * width / total.max(1);
    eprint!(
        "\r{label:>5} [{}{}] {done}/{total} runs, {secs:.1} s",
        "#".repeat(filled),
        ".".repeat(width - filled)
    );
}

fn ms(s: f64) -> Duration {
    (s * 1000.0).round() as Duration
}

fn max_ms(s: f64) -> Duration {
    if s.is_infinite() {
        FOREVER
    } else {
        ms(s)
    }
}

fn base(c: &Common, scheme: Scheme, seed: u64) -> Scenario {
    Scenario {
        scheme,
        sizes: c.sizes,
        latency: c.latency,
        seed,
        initial: 0,
        join_spread: 1,
        growth: None,
        churn: None,
        churn_from: 0,
        r_window: None,
        shrink: None,
        window: (0, 0),
        end: 0,
        bin_width: 0,
        knobs: c.knobs,
        retry_after_denial: 10_000,
    }
}

fn table_row(t: &mut String, cells: &[String]) {
    let _ = writeln!(t, "{}", cells.join("  "));
}

fn pct(x: f64) -> String {
    format!("{:+6.2}%", x * 100.0)
}

fn verdict(ch: &Check, tol: f64) -> &'static str {
    if ch.passed(tol) {
        "ok"
    } else {
        "FAIL"
    }
}

// ---------------------------------------------------------------------------------------------

/// Figure 3: fixed lease periods; B and R against N.
pub struct Fig3 {
    pub n: Vec<usize>,
    pub leases_s: Vec<f64>,
    pub plot_leases_s: Vec<f64>,
    /// Length of the failure-free stretch in which B is measured, in lease periods.
    pub b_periods: f64,
    /// Mean time between failures, in lease periods.
    pub mtbf_periods: f64,
    /// Failures to observe per point.
    pub failures: f64,
    /// Mean downtime before rejoining, seconds.
    pub downtime_s: f64,
}

pub fn fig3(f: &Fig3, c: &Common) -> Result<Figure, String> {
    let mut jobs = Vec::new();
    for (li, &l_s) in f.leases_s.iter().enumerate() {
        for (ni, &n) in f.n.iter().enumerate() {
            let l = ms(l_s);
            let mtbf = (f.mtbf_periods * l as f64) as Duration;
            // B: a failure-free stretch after every holder has joined and renewed once.
            let b_from = 2 * l;
            let b_to = b_from + (f.b_periods * l as f64) as Duration;
            // R: then holders fail and rejoin until about `failures` failures have happened.
            let r_len = (f.failures * mtbf as f64 / n as f64).ceil() as Duration;
            let mut sc =
                base(c, Scheme::Fixed { lease: l }, derive_seed(c.seed, (li * 1000 + ni) as u64));
            sc.initial = n;
            sc.join_spread = l;
            sc.churn = Some(Churn { mtbf, downtime: ms(f.downtime_s) });
            sc.churn_from = b_to;
            sc.window = (b_from, b_to);
            sc.r_window = Some((b_to, b_to + r_len));
            sc.end = b_to + r_len + l + 10 * c.latency + 1_000;
            jobs.push(sc);
        }
    }
    let (meters, stats) = run_all("fig3", &jobs, c)?;
    let s_rg = (c.sizes.request + c.sizes.grant) as f64;
    let mut csv = String::from(
        "lease_s,n,n_avg,b_bytes_per_s,b_paper_bytes_per_s,b_err_pct,r_s,r_paper_s,r_err_pct,r_stderr_s,failures_detected,renewals,grants,lost_leases\n",
    );
    let mut table = String::new();
    let _ = writeln!(
        table,
        "fig3: fixed lease periods, paper: B = (N/L_G)(S_R+S_G), R = L_G/2 (N = time-averaged live holders)"
    );
    table_row(
        &mut table,
        &[
            format!("{:>6}", "L_G s"),
            format!("{:>4}", "N"),
            format!("{:>7}", "N avg"),
            format!("{:>9}", "B B/s"),
            format!("{:>9}", "paper"),
            format!("{:>7}", "err"),
            format!("{:>4}", ""),
            format!("{:>8}", "R s"),
            format!("{:>8}", "paper"),
            format!("{:>7}", "err"),
            format!("{:>4}", ""),
            format!("{:>6}", "fails"),
        ],
    );
    let mut checks = Vec::new();
    // Per lease period: (N, B, R, paper's B) for each N.
    type Points = Vec<(f64, f64, f64, f64)>;
    let mut by_lease: Vec<(f64, Points)> = Vec::new();
    for (li, &l_s) in f.leases_s.iter().enumerate() {
        let mut pts = Vec::new();
        for (ni, &n) in f.n.iter().enumerate() {
            let m = &meters[li * f.n.len() + ni];
            let t = &m.total;
            let n_avg = t.n_avg();
            let b = t.bandwidth();
            let b_paper = n_avg / l_s * s_rg;
            let r = t.r_s();
            let r_paper = l_s / 2.0;
            let cb = Check {
                what: format!("fig3 fixed L_G={l_s}s N={n}: B"),
                measured: b,
                expected: b_paper,
                upper_bound: false,
            };
            let cr = Check {
                what: format!("fig3 fixed L_G={l_s}s N={n}: R"),
                measured: r,
                expected: r_paper,
                upper_bound: false,
            };
            table_row(
                &mut table,
                &[
                    format!("{l_s:>6.0}"),
                    format!("{n:>4}"),
                    format!("{n_avg:>7.2}"),
                    format!("{b:>9.2}"),
                    format!("{b_paper:>9.2}"),
                    pct(cb.error()),
                    format!("{:>4}", verdict(&cb, c.tolerance)),
                    format!("{r:>8.3}"),
                    format!("{r_paper:>8.3}"),
                    pct(cr.error()),
                    format!("{:>4}", verdict(&cr, c.tolerance)),
                    format!("{:>6}", t.r_n),
                ],
            );
            let _ = writeln!(
                csv,
                "{l_s},{n},{n_avg:.4},{b:.4},{b_paper:.4},{:.3},{r:.4},{r_paper:.4},{:.3},{:.4},{},{},{},{}",
                cb.error() * 100.0,
                cr.error() * 100.0,
                t.r_stderr_s(),
                t.r_n,
                m.counts.renewals,
                m.counts.grants,
                m.counts.lost
            );
            if m.counts.lost > 0 {
                checks.push(Check {
                    what: format!("fig3 fixed L_G={l_s}s N={n}: leases lost by live holders"),
                    measured: m.counts.lost as f64,
                    expected: 0.0,
                    upper_bound: true,
                });
            }
            checks.push(cb);
            checks.push(cr);
            pts.push((n as f64, b, r, b_paper));
        }
        by_lease.push((l_s, pts));
    }
    let plotted: Vec<_> = by_lease
        .iter()
        .filter(|(l, _)| f.plot_leases_s.iter().any(|p| (p - l).abs() < 1e-9))
        .collect();
    let mut pb = Panel {
        title: "Bandwidth B against system size".into(),
        x_label: "leaseholders N".into(),
        y_label: "B (bytes/s)".into(),
        series: vec![],
        legend: Corner::TopLeft,
        headroom: 1.0,
    };
    let mut pr = Panel {
        title: "Responsiveness R against system size".into(),
        x_label: "leaseholders N".into(),
        y_label: "R (s, failure to detection)".into(),
        series: vec![],
        legend: Corner::TopLeft,
        headroom: 1.6,
    };
    for (i, (l, pts)) in plotted.iter().enumerate() {
        let col = COLORS[i % COLORS.len()];
        pb.series.push(Series {
            name: format!("L_G = {l} s, simulated"),
            color: col,
            style: Style::Measured,
            points: pts.iter().map(|p| (p.0, p.1)).collect(),
        });
        pb.series.push(Series {
            name: format!("(N/L_G)(S_R+S_G), L_G = {l} s"),
            color: col,
            style: Style::Analysis,
            points: pts.iter().map(|p| (p.0, p.3)).collect(),
        });
        pr.series.push(Series {
            name: format!("L_G = {l} s, simulated"),
            color: col,
            style: Style::Measured,
            points: pts.iter().map(|p| (p.0, p.2)).collect(),
        });
        pr.series.push(Series {
            name: format!("L_G/2 = {} s", l / 2.0),
            color: col,
            style: Style::Analysis,
            points: pts.iter().map(|p| (p.0, l / 2.0)).collect(),
        });
    }
    let caption = format!(
        "Fig. 3 reproduced: fixed L_G, S_R = {} B, S_G = {} B; B over {} failure-free lease periods, R over {} failures per point; seed {}",
        c.sizes.request, c.sizes.grant, f.b_periods, f.failures, c.seed
    );
    Ok(Figure { name: "fig3", csv, svg: svg::render(&caption, &[pb, pr]), table, checks, stats })
}

// ---------------------------------------------------------------------------------------------

/// Settings of the self-adaptive schemes (figures 4 and 5).
#[derive(Debug, Clone, Copy)]
pub struct Adaptivity {
    pub g: f64,
    pub l_min_s: f64,
    pub l_max_s: f64,
    pub extra: f64,
}

impl Adaptivity {
    fn adaptive(&self) -> Scheme {
        Scheme::Adaptive(AdaptiveConfig {
            renewals_per_second: self.g,
            min: ms(self.l_min_s),
            max: max_ms(self.l_max_s),
            grantors: 1,
        })
    }
    fn inverted(&self) -> Scheme {
        Scheme::Inverted {
            g: self.g,
            min: ms(self.l_min_s),
            max: max_ms(self.l_max_s),
            extra: self.extra,
        }
    }
    /// The control variable the analysis predicts for n holders: max(N/G, L_MIN), s.
    fn control(&self, n: f64) -> f64 {
        (n / self.g).max(self.l_min_s).min(self.l_max_s)
    }
}

/// Figure 4: growing N.
pub struct Fig4 {
    pub a: Adaptivity,
    pub n_from: usize,
    pub n_to: usize,
    pub grow_s: f64,
    pub reps: usize,
    pub bin: usize,
}

/// Figure 5: shrinking N.
pub struct Fig5 {
    pub a: Adaptivity,
    pub n_from: usize,
    pub shrink_s: f64,
    pub reps: usize,
    pub bin: usize,
}

fn merged(meters: &[Meter]) -> Meter {
    let mut m = meters[0].clone();
    for o in &meters[1..] {
        m.merge(o);
    }
    m
}

fn bins_of(m: &Meter) -> Vec<&Acc> {
    m.bins.iter().filter(|b| b.time_ms > 0.0).collect()
}

pub fn fig4(f: &Fig4, c: &Common) -> Result<Figure, String> {
    let a = &f.a;
    let warm = ms(4.0 * a.l_min_s);
    let grow = ms(f.grow_s);
    let settle = ms(3.0 * a.control(f.n_to as f64));
    let mut jobs = Vec::new();
    for (si, scheme) in [a.adaptive(), a.inverted()].into_iter().enumerate() {
        for r in 0..f.reps {
            let mut sc =
                base(c, scheme, derive_seed(c.seed, (1 << 40) + (si * 100_000 + r) as u64));
            sc.initial = f.n_from;
            sc.join_spread = ms(a.l_min_s);
            sc.growth = Some((f.n_to - f.n_from, warm, warm + grow));
            sc.window = (warm, warm + grow + settle);
            sc.end = warm + grow + settle;
            sc.bin_width = f.bin;
            jobs.push(sc);
        }
    }
    let (meters, stats) = run_all("fig4", &jobs, c)?;
    let ad = merged(&meters[..f.reps]);
    let inv = merged(&meters[f.reps..]);
    let s = &c.sizes;
    let ceiling = a.g * (s.request + s.grant) as f64;
    let mut checks = Vec::new();
    let mut table = String::new();
    let _ = writeln!(
        table,
        "fig4: growing N {}..{} over {} s, G = {}/s, L_MIN = {} s, L_MAX = {} s, A = {} D, {} replications",
        f.n_from, f.n_to, f.grow_s, a.g, a.l_min_s, a.l_max_s, a.extra, f.reps
    );
    let _ = writeln!(
        table,
        "  adaptive: paper: B never above G(S_R+S_G) = {ceiling:.1} B/s; L_G = max(N/G, L_MIN)"
    );
    let _ = writeln!(
        table,
        "  inverted: analysis: B = (S_P + N(S_PR+S_RC))/P with P = D + A; D = max(N/G, L_MIN)"
    );
    let _ = writeln!(
        table,
        "{:>8}  {:>7}  {:>9}  {:>9}  {:>7}  {:>4}  {:>8}  {:>8}",
        "scheme", "N avg", "B B/s", "bound", "err", "", "ctrl s", "paper s"
    );
    let mut csv = String::from(
        "scheme,n_avg,b_bytes_per_s,b_analysis_bytes_per_s,control_s,control_paper_s\n",
    );
    let mut series = [vec![], vec![]];
    for (si, (name, m)) in [("adaptive", &ad), ("inverted", &inv)].into_iter().enumerate() {
        for b in bins_of(m) {
            let n = b.n_avg();
            let bw = b.bandwidth();
            let ctrl = b.ctrl_s();
            let (bound, upper) = if si == 0 {
                (ceiling, true)
            } else {
                let d = ctrl;
                let p = d * (1.0 + a.extra);
                (inverted::bandwidth(n, ms(p), s), false)
            };
            let ch = Check {
                what: format!(
                    "fig4 {name} N~{n:.0}: B {}",
                    if upper { "<= G(S_R+S_G)" } else { "= (S_P+N(S_PR+S_RC))/P" }
                ),
                measured: bw,
                expected: bound,
                upper_bound: upper,
            };
            let _ = writeln!(
                table,
                "{name:>8}  {n:>7.2}  {bw:>9.2}  {bound:>9.2}  {}  {:>4}  {ctrl:>8.2}  {:>8.2}",
                pct(ch.error()),
                verdict(&ch, c.tolerance),
                a.control(n)
            );
            let _ = writeln!(csv, "{name},{n:.4},{bw:.4},{bound:.4},{ctrl:.4},{:.4}", a.control(n));
            series[si].push((n, bw, ctrl));
            checks.push(ch);
        }
        if m.counts.lost > 0 {
            checks.push(Check {
                what: format!("fig4 {name}: leases lost by live holders"),
                measured: m.counts.lost as f64,
                expected: 0.0,
                upper_bound: true,
            });
        }
    }
    let pts = |i: usize, f: fn(&(f64, f64, f64)) -> (f64, f64)| series[i].iter().map(f).collect();
    let ns: Vec<f64> = series[0].iter().map(|p| p.0).collect();
    let pb = Panel {
        legend: Corner::BottomRight,
        headroom: 1.0,
        title: "Bandwidth B as N grows".into(),
        x_label: "leaseholders N (growing)".into(),
        y_label: "B (bytes/s)".into(),
        series: vec![
            Series {
                name: "Adaptive".into(),
                color: COLORS[0],
                style: Style::Measured,
                points: pts(0, |p| (p.0, p.1)),
            },
            Series {
                name: "Inverted".into(),
                color: COLORS[1],
                style: Style::Measured,
                points: pts(1, |p| (p.0, p.1)),
            },
            Series {
                name: "G(S_R+S_G)".into(),
                color: "#555",
                style: Style::Analysis,
                points: ns.iter().map(|&n| (n, ceiling)).collect(),
            },
        ],
    };
    let pc = Panel {
        legend: Corner::TopLeft,
        headroom: 1.0,
        title: "Control variable as N grows".into(),
        x_label: "leaseholders N (growing)".into(),
        y_label: "L_G (Adaptive) or D (Inverted), s".into(),
        series: vec![
            Series {
                name: "Adaptive L_G".into(),
                color: COLORS[0],
                style: Style::Measured,
                points: pts(0, |p| (p.0, p.2)),
            },
            Series {
                name: "Inverted D".into(),
                color: COLORS[1],
                style: Style::Measured,
                points: pts(1, |p| (p.0, p.2)),
            },
            Series {
                name: "max(N/G, L_MIN)".into(),
                color: "#555",
                style: Style::Analysis,
                points: ns.iter().map(|&n| (n, a.control(n))).collect(),
            },
        ],
    };
    let caption = format!(
        "Fig. 4 reproduced: N grows {}..{} over {} s; G = {}/s, L_MIN = {} s, L_MAX = {}, A = {} D; {} replications, seed {}",
        f.n_from, f.n_to, f.grow_s, a.g, a.l_min_s, a.l_max_s, a.extra, f.reps, c.seed
    );
    Ok(Figure { name: "fig4", csv, svg: svg::render(&caption, &[pb, pc]), table, checks, stats })
}

pub fn fig5(f: &Fig5, c: &Common) -> Result<Figure, String> {
    let a = &f.a;
    let top = a.control(f.n_from as f64);
    let warm = ms(4.0 * top);
    let shrink = ms(f.shrink_s);
    let tail = ms(2.0 * top * (1.0 + a.extra)) + 1_000;
    let mut jobs = Vec::new();
    for (si, scheme) in [a.adaptive(), a.inverted()].into_iter().enumerate() {
        for r in 0..f.reps {
            let mut sc =
                base(c, scheme, derive_seed(c.seed, (2 << 40) + (si * 100_000 + r) as u64));
            sc.initial = f.n_from;
            sc.join_spread = ms(a.l_min_s);
            sc.shrink = Some((warm, warm + shrink));
            sc.window = (warm, warm + shrink + tail);
            sc.end = warm + shrink + tail;
            sc.bin_width = f.bin;
            jobs.push(sc);
        }
    }
    let (meters, stats) = run_all("fig5", &jobs, c)?;
    let ad = merged(&meters[..f.reps]);
    let inv = merged(&meters[f.reps..]);
    let s = &c.sizes;
    let ceiling = a.g * (s.request + s.grant) as f64;
    let mut checks = Vec::new();
    let mut table = String::new();
    let _ = writeln!(
        table,
        "fig5: shrinking N {}..0 over {} s (each holder fails once, uniformly), G = {}/s, L_MIN = {} s, A = {} D, {} replications",
        f.n_from, f.shrink_s, a.g, a.l_min_s, a.extra, f.reps
    );
    let _ = writeln!(
        table,
        "  adaptive: paper: B never above G(S_R+S_G) = {ceiling:.1} B/s; R = L_G/2 (L_G granted to the failed holder)"
    );
    let _ = writeln!(
        table,
        "  inverted: paper: R = D; for failures uniform over the whole interval D + A the expectation is D + A/2 (checked)"
    );
    let _ = writeln!(
        table,
        "{:>8}  {:>7}  {:>9}  {:>4}  {:>8}  {:>8}  {:>8}  {:>7}  {:>4}  {:>6}",
        "scheme", "N avg", "B B/s", "", "R s", "paper", "expect", "err", "", "fails"
    );
    let mut csv = String::from(
        "scheme,n_avg,b_bytes_per_s,b_ceiling_bytes_per_s,r_s,r_paper_s,r_expected_s,r_err_pct,r_stderr_s,failures\n",
    );
    let mut series = [vec![], vec![]];
    for (si, (name, m)) in [("adaptive", &ad), ("inverted", &inv)].into_iter().enumerate() {
        for b in bins_of(m) {
            let n = b.n_avg();
            let bw = b.bandwidth();
            let r = b.r_s();
            let paper = b.r_paper_s();
            let expect = b.r_pred_s();
            let cr = Check {
                what: format!(
                    "fig5 {name} N~{n:.0}: R {}",
                    if si == 0 { "= L_G/2" } else { "= D + A/2" }
                ),
                measured: r,
                expected: expect,
                upper_bound: false,
            };
            let mut bv = "";
            if si == 0 {
                let cb = Check {
                    what: format!("fig5 adaptive N~{n:.0}: B <= G(S_R+S_G)"),
                    measured: bw,
                    expected: ceiling,
                    upper_bound: true,
                };
                bv = verdict(&cb, c.tolerance);
                checks.push(cb);
            }
            let _ = writeln!(
                table,
                "{name:>8}  {n:>7.2}  {bw:>9.2}  {bv:>4}  {r:>8.3}  {paper:>8.3}  {expect:>8.3}  {}  {:>4}  {:>6}",
                if b.r_n > 0.0 { pct(cr.error()) } else { "    n/a".into() },
                if b.r_n > 0.0 { verdict(&cr, c.tolerance) } else { "" },
                b.r_n
            );
            let _ = writeln!(
                csv,
                "{name},{n:.4},{bw:.4},{ceiling:.4},{r:.4},{paper:.4},{expect:.4},{:.3},{:.4},{}",
                cr.error() * 100.0,
                b.r_stderr_s(),
                b.r_n
            );
            if b.r_n > 0.0 {
                series[si].push((n, bw, r, paper, expect));
                checks.push(cr);
            }
        }
        if m.counts.lost > 0 {
            checks.push(Check {
                what: format!("fig5 {name}: leases lost by live holders"),
                measured: m.counts.lost as f64,
                expected: 0.0,
                upper_bound: true,
            });
        }
    }
    type P = (f64, f64, f64, f64, f64);
    let pts = |i: usize, f: fn(&P) -> (f64, f64)| series[i].iter().map(f).collect();
    let pb = Panel {
        legend: Corner::BottomRight,
        headroom: 1.0,
        title: "Bandwidth B as N shrinks".into(),
        x_label: "leaseholders N (shrinking from the right)".into(),
        y_label: "B (bytes/s)".into(),
        series: vec![
            Series {
                name: "Adaptive".into(),
                color: COLORS[0],
                style: Style::Measured,
                points: pts(0, |p| (p.0, p.1)),
            },
            Series {
                name: "Inverted".into(),
                color: COLORS[1],
                style: Style::Measured,
                points: pts(1, |p| (p.0, p.1)),
            },
            Series {
                name: "G(S_R+S_G)".into(),
                color: "#555",
                style: Style::Analysis,
                points: series[0].iter().map(|p| (p.0, ceiling)).collect(),
            },
        ],
    };
    let pr = Panel {
        legend: Corner::TopLeft,
        headroom: 1.0,
        title: "Responsiveness R as N shrinks".into(),
        x_label: "leaseholders N (shrinking from the right)".into(),
        y_label: "R (s, failure to detection)".into(),
        series: vec![
            Series {
                name: "Adaptive".into(),
                color: COLORS[0],
                style: Style::Measured,
                points: pts(0, |p| (p.0, p.2)),
            },
            Series {
                name: "Inverted".into(),
                color: COLORS[1],
                style: Style::Measured,
                points: pts(1, |p| (p.0, p.2)),
            },
            Series {
                name: "L_G/2".into(),
                color: COLORS[0],
                style: Style::Analysis,
                points: pts(0, |p| (p.0, p.4)),
            },
            Series {
                name: "paper: R = D".into(),
                color: COLORS[1],
                style: Style::Analysis,
                points: pts(1, |p| (p.0, p.3)),
            },
            Series {
                name: "D + A/2".into(),
                color: COLORS[2],
                style: Style::Analysis,
                points: pts(1, |p| (p.0, p.4)),
            },
        ],
    };
    let caption = format!(
        "Fig. 5 reproduced: N shrinks {}..0 over {} s; G = {}/s, L_MIN = {} s, L_MAX = {}, A = {} D; {} replications, seed {}",
        f.n_from, f.shrink_s, a.g, a.l_min_s, a.l_max_s, a.extra, f.reps, c.seed
    );
    Ok(Figure { name: "fig5", csv, svg: svg::render(&caption, &[pb, pr]), table, checks, stats })
}
