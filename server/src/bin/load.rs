//! `leasehold-load`: holders that renew leases through a `leasehold-server` (one or a cluster)
//! over loopback HTTP, with the core's `RenewalManager` and `leasehold-client`'s failover transport (one tokio task per holder), and
//! check every promise the servers made. Used by the crash, failover and bench scripts.
//!
//! Each holder task grants its leases, keeps most of them renewed for ever, cancels some,
//! and abandons some (stops renewing). It remembers what each lease was promised (the time
//! the request was *sent* plus the duration granted) and checks:
//!
//! - `early_expiries`: a landlord said "unknown lease" to a request sent before the lease's
//!   promised expiration (a grant or renewal acknowledged but not honoured);
//! - `lost`: a lease renewed to the end is unknown at the final check;
//! - `cancel_came_back`: a lease whose cancel was acknowledged is renewable again;
//! - `expiry_came_back`: an abandoned lease that a landlord once said was gone is renewable
//!   again;
//! - `lingered` (with `--max-linger-ms N`): an abandoned lease still renewable more than N ms
//!   past its promise (the upper bound of relaxed renewals: one lease period, plus slack for
//!   the time a restart does not count).
//!
//! `--probe N` instead waits until every landlord 1..=N answers through the servers and
//! prints how long that took (a takeover's end).
//!
//! `--history FILE` also writes every request as one JSON line (the fault suite's checker,
//! `scripts/faults/check.py`, judges these): `{"t":"req","h":holder,"op":..,"sent":ms,
//! "done":ms,"server":..,"ok":bool,"err":..,"items":[[cookie,landlord,outcome,duration]]}`
//! with times in ms since the Unix epoch (the machine's clock, shared by every process of a
//! test) and outcomes `granted`, `renewed`, `cancelled` or an error code's name
//! (`unknown_lease`, ...); `ok` false when no server answered. Besides requests: `abandon` (the
//! holder stops renewing a lease), `gave_up` (its renewal failed for good) and `end` (the
//! holder stops renewing everything and starts its final check). `--churn-ms N` keeps traffic
//! flowing all run long: every N ms each holder grants one more lease to keep, and every third
//! time cancels one, or abandons one.

use std::collections::HashMap;
use std::io::Write as _;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration as StdDuration, Instant, SystemTime, UNIX_EPOCH};

use clap::Parser;
use leasehold::holder::{grant_request, lease_from_reply_with_drift};
use leasehold::wire::Outcome;
use leasehold::{
    Cookie, Encoding, ErrorCode, LandlordId, Lease, LeaseError, Millis, RenewalEvent,
    RenewalManager, RenewalManagerConfig, Reply, ReplyBody, Request, RequestBody, FOREVER,
};
use leasehold_client::{Answered, Cluster, ClusterConfig};

#[derive(Debug, Parser)]
#[command(
    name = "leasehold-load",
    about = "Holders renewing through leasehold servers, checking every promise"
)]
struct Opts {
    /// Server URLs, comma-separated (http://127.0.0.1:7420,...).
    #[arg(long, value_delimiter = ',', required = true)]
    servers: Vec<String>,
    /// Holder threads.
    #[arg(long, default_value_t = 4)]
    holders: usize,
    /// Leases per holder.
    #[arg(long, default_value_t = 50)]
    leases: usize,
    /// Lease length asked for, ms.
    #[arg(long, default_value_t = 4000)]
    lease_ms: i64,
    /// How long the holders run, ms.
    #[arg(long, default_value_t = 10_000)]
    run_ms: u64,
    /// json or binary.
    #[arg(long, default_value = "json")]
    encoding: String,
    /// Fraction of leases cancelled (at 40 % of the run).
    #[arg(long, default_value_t = 0.1)]
    cancel: f64,
    /// Fraction of leases abandoned (at 30 % of the run) and probed once past their promise.
    #[arg(long, default_value_t = 0.1)]
    abandon: f64,
    /// Time-out of one HTTP attempt, ms.
    #[arg(long, default_value_t = 1000)]
    timeout_ms: u64,
    /// The renewal manager renews when 1/N of a lease is left (its `renew_divisor`, default 8).
    /// Through a cluster, N = 2 lets a holder ride out a takeover as long as half its lease.
    #[arg(long, default_value_t = 8)]
    renew_divisor: u32,
    /// Write the counts as JSON here.
    #[arg(long)]
    json: Option<String>,
    /// Only wait until landlords 1..=N all answer; print the ms it took.
    #[arg(long)]
    probe: Option<u64>,
    /// Give up probing after this many ms.
    #[arg(long, default_value_t = 60_000)]
    probe_limit_ms: u64,
    /// Write every request and its outcome here, one JSON line each.
    #[arg(long)]
    history: Option<String>,
    /// Holder names in the history: PREFIX-0, PREFIX-1, ...
    #[arg(long, default_value = "rs")]
    name: String,
    /// Every N ms each holder grants one more lease, and every third time cancels or abandons
    /// one (0: the leases granted at the start only).
    #[arg(long, default_value_t = 0)]
    churn_ms: u64,
    /// How long one renewal keeps trying every server (at most until its leases end) before
    /// the renewal manager is told it failed (and asks again later), ms.
    #[arg(long, default_value_t = 2000)]
    retry_ms: u64,
    /// Stop renewing (and start the final check) as soon as this file exists, or after
    /// --run-ms, whichever comes first.
    #[arg(long)]
    stop_file: Option<std::path::PathBuf>,
    /// Count an abandoned lease still renewable more than this many ms past its promise as a
    /// violation (`lingered`); without it, no upper bound is checked.
    #[arg(long)]
    max_linger_ms: Option<i64>,
}

/// Milliseconds since the Unix epoch, with microseconds.
fn wall_ms() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64() * 1000.0).unwrap_or(0.0)
}

/// The history file: JSON lines, written by every holder task.
struct History {
    out: Mutex<std::io::BufWriter<std::fs::File>>,
}

impl History {
    fn create(path: &str) -> std::io::Result<History> {
        Ok(History { out: Mutex::new(std::io::BufWriter::new(std::fs::File::create(path)?)) })
    }

    fn line(&self, text: &str) {
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        let _ = writeln!(out, "{text}");
    }

    fn flush(&self) {
        let _ = self.out.lock().unwrap_or_else(|p| p.into_inner()).flush();
    }
}

/// What a holder writes into the history (nothing without `--history`).
struct Recorder {
    history: Option<Arc<History>>,
    holder: String,
}

/// One item of a request's outcome: the cookie (empty for a failed grant), its landlord, the
/// outcome's name (None: no answer) and the duration granted.
type Item = (String, u64, Option<&'static str>, Option<i64>);

impl Recorder {
    #[allow(clippy::too_many_arguments)]
    fn request(
        &self,
        op: &str,
        sent: f64,
        done: f64,
        server: Option<&Answered>,
        err: Option<&str>,
        items: &[Item],
    ) {
        let Some(h) = &self.history else { return };
        let mut line = serde_json::json!({
            "t": "req", "h": self.holder, "op": op, "sent": sent, "done": done, "ok": err.is_none(),
            "items": items.iter().map(|(c, l, o, d)| serde_json::json!([c, l, o, d])).collect::<Vec<_>>(),
        });
        if let Some(a) = server {
            line["server"] = a.server.to_string().into();
            if let Some(o) = &a.owner {
                line["owner"] = o.clone().into();
            }
        }
        if let Some(e) = err {
            line["err"] = e.into();
        }
        h.line(&line.to_string());
    }

    fn event(&self, t: &str, cookie: Option<&Cookie>, why: Option<&str>) {
        let Some(h) = &self.history else { return };
        let mut line = serde_json::json!({"t": t, "h": self.holder, "at": wall_ms()});
        if let Some(c) = cookie {
            line["cookie"] = c.to_string().into();
        }
        if let Some(w) = why {
            line["why"] = w.into();
        }
        h.line(&line.to_string());
    }
}

/// The name of an outcome in the history.
fn outcome_name(e: &leasehold::wire::WireError) -> &'static str {
    e.error_code().map_or("error", |c| c.name())
}

fn origin() -> Instant {
    static O: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *O.get_or_init(Instant::now)
}

fn now() -> Millis {
    origin().elapsed().as_millis() as Millis
}

#[derive(Default)]
struct Counts {
    grants: AtomicU64,
    grant_failures: AtomicU64,
    renewals: AtomicU64,
    renew_requests: AtomicU64,
    cancels: AtomicU64,
    probes: AtomicU64,
    transport_failures: AtomicU64,
    early_expiries: AtomicU64,
    lost: AtomicU64,
    cancel_came_back: AtomicU64,
    expiry_came_back: AtomicU64,
    lingered: AtomicU64,
    renewal_failures: AtomicU64,
    kept_checked: AtomicU64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Kept,
    Cancelling,
    Cancelled,
    Abandoned {
        gone: bool,
    },
    /// Not tracked any more (its cancel was not acknowledged, or renewal failed for good).
    Unknown,
}

struct Track {
    lease: Lease,
    promised: Millis,
    kind: Kind,
    next_probe: Millis,
}

const PROBE_IDS: u64 = 1 << 40;
const GRANT_IDS: u64 = 1 << 41;

fn main() -> ExitCode {
    let o = Opts::parse();
    let enc = match o.encoding.as_str() {
        "json" => Encoding::Json,
        "binary" => Encoding::Binary,
        e => {
            eprintln!("--encoding is json or binary, got {e}");
            return ExitCode::from(2);
        }
    };
    let timeout = StdDuration::from_millis(o.timeout_ms);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(run(o, timeout, enc))
}

fn cluster_of(urls: &[&str], timeout: StdDuration, enc: Encoding) -> Result<Cluster, String> {
    let config = ClusterConfig::new(urls.iter().copied()).encoding(enc).attempt_timeout(timeout);
    Cluster::new(config).map_err(|e| e.to_string())
}

async fn run(o: Opts, timeout: StdDuration, enc: Encoding) -> ExitCode {
    let urls: Vec<&str> = o.servers.iter().map(String::as_str).collect();
    if let Err(e) = cluster_of(&urls, timeout, enc) {
        eprintln!("{e}");
        return ExitCode::from(2);
    }
    origin();
    if let Some(n) = o.probe {
        return probe(&urls, timeout, n, enc, o.probe_limit_ms).await;
    }
    let history = match &o.history {
        Some(p) => match History::create(p) {
            Ok(h) => Some(Arc::new(h)),
            Err(e) => {
                eprintln!("{p}: {e}");
                return ExitCode::from(2);
            }
        },
        None => None,
    };
    let counts = Arc::new(Counts::default());
    let started = Instant::now();
    let stop_renewing = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = (0..o.holders)
        .map(|h| {
            // Each holder starts with another server first, to spread the load.
            let mut mine: Vec<&str> = urls.clone();
            mine.rotate_left(h % urls.len());
            let cluster = cluster_of(&mine, timeout, enc).expect("checked");
            let counts = counts.clone();
            let stop = stop_renewing.clone();
            let (leases, lease_ms, run_ms, cancel, abandon) =
                (o.leases, o.lease_ms, o.run_ms as Millis, o.cancel, o.abandon);
            let renew_divisor = o.renew_divisor;
            let churn_ms = o.churn_ms as Millis;
            let stop_file = o.stop_file.clone();
            let retry_ms = o.retry_ms as Millis;
            let max_linger_ms = o.max_linger_ms;
            let rec = Recorder { history: history.clone(), holder: format!("{}-{h}", o.name) };
            tokio::spawn(async move {
                let plan = Plan {
                    leases,
                    lease_ms,
                    run_ms,
                    cancel,
                    abandon,
                    renew_divisor,
                    churn_ms,
                    stop_file,
                    retry_ms,
                    max_linger_ms,
                };
                holder(h, cluster, plan, &counts, &stop, &rec).await
            })
        })
        .collect();
    for t in threads {
        let _ = t.await;
    }
    if let Some(h) = &history {
        h.flush();
    }
    let secs = started.elapsed().as_secs_f64();
    let c = &counts;
    let g = |a: &AtomicU64| a.load(Relaxed);
    let violations = g(&c.early_expiries)
        + g(&c.lost)
        + g(&c.cancel_came_back)
        + g(&c.expiry_came_back)
        + g(&c.lingered);
    let renewals_per_s = g(&c.renewals) as f64 / secs;
    let summary = format!(
        "{{\"holders\":{},\"leases\":{},\"grants_acked\":{},\"grant_failures\":{},\"renewals_acked\":{},\
\"renew_requests\":{},\"cancels_acked\":{},\"probes\":{},\"transport_failures\":{},\"kept_checked\":{},\
\"early_expiries\":{},\"lost\":{},\"cancel_came_back\":{},\"expiry_came_back\":{},\"lingered\":{},\"renewal_failures\":{},\
\"seconds\":{:.1},\"renewals_per_s\":{:.0}}}",
        o.holders,
        o.holders * o.leases,
        g(&c.grants),
        g(&c.grant_failures),
        g(&c.renewals),
        g(&c.renew_requests),
        g(&c.cancels),
        g(&c.probes),
        g(&c.transport_failures),
        g(&c.kept_checked),
        g(&c.early_expiries),
        g(&c.lost),
        g(&c.cancel_came_back),
        g(&c.expiry_came_back),
        g(&c.lingered),
        g(&c.renewal_failures),
        secs,
        renewals_per_s
    );
    println!(
        "load: grants acked {}, renewals acked {} ({:.0}/s in {} requests), cancels acked {}, probes {}, \
kept leases checked at the end {}, transport failures {}",
        g(&c.grants),
        g(&c.renewals),
        renewals_per_s,
        g(&c.renew_requests),
        g(&c.cancels),
        g(&c.probes),
        g(&c.kept_checked),
        g(&c.transport_failures)
    );
    println!(
        "check: early expiries {}, acknowledged leases lost {}, cancelled leases back {}, expired leases back {}, \
abandoned leases past the upper bound {}, renewal failures {}",
        g(&c.early_expiries),
        g(&c.lost),
        g(&c.cancel_came_back),
        g(&c.expiry_came_back),
        g(&c.lingered),
        g(&c.renewal_failures)
    );
    if let Some(p) = &o.json {
        if let Err(e) = std::fs::write(p, summary + "\n") {
            eprintln!("{p}: {e}");
        }
    }
    if violations > 0 || g(&c.grants) == 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Sends one request; the reply (an error reply is a definite answer, whatever its HTTP
/// status) and who gave it, or `None` when no server gave one.
async fn send(
    cluster: &Cluster,
    landlord: Option<LandlordId>,
    req: &Request,
) -> Option<(Reply, Answered)> {
    cluster.send_traced(landlord, req).await.ok()
}

/// Like [`send`], but keeps trying every server until `until` (on [`now`]'s clock): a renewal
/// goes on until its lease's end instead of giving up after one round (finding 6 of issue 21:
/// a holder gave up with "no server answered" while an owner was paused and two servers were
/// up). At most `--retry-ms` at a time, though: then the renewal manager is told it failed
/// and asks again (with its back-off) until the lease would expire, so that its retries and
/// the history follow what happened. Each send runs in its own task: a shard that stays
/// unavailable (quarantined, its store failed) holds up no other shard's renewals.
async fn send_until(
    cluster: &Cluster,
    landlord: Option<LandlordId>,
    req: &Request,
    until: Millis,
    retry_ms: Millis,
) -> Option<(Reply, Answered)> {
    let left = StdDuration::from_millis(until.saturating_sub(now()).clamp(0, retry_ms) as u64);
    let deadline = tokio::time::Instant::now() + left;
    cluster.send_until(landlord, req, deadline).await.ok()
}

fn is_unknown(e: &leasehold::wire::WireError) -> bool {
    e.error_code() == Some(ErrorCode::UnknownLease)
}

/// What one holder does.
struct Plan {
    leases: usize,
    lease_ms: i64,
    run_ms: Millis,
    cancel: f64,
    abandon: f64,
    renew_divisor: u32,
    churn_ms: Millis,
    stop_file: Option<std::path::PathBuf>,
    retry_ms: Millis,
    max_linger_ms: Option<Millis>,
}

/// Grants one lease of `resource`; the track of the lease granted, if one was.
async fn grant(
    cluster: &Cluster,
    id: u64,
    resource: Vec<u8>,
    lease_ms: i64,
    c: &Counts,
    rec: &Recorder,
) -> Option<Track> {
    let req = grant_request(id, resource, lease_ms);
    let sent = now();
    let wall = wall_ms();
    let reply = send(cluster, None, &req).await;
    let done = wall_ms();
    match reply {
        Some((reply, by)) => match lease_from_reply_with_drift(&reply, sent, 0) {
            Ok(lease) => {
                c.grants.fetch_add(1, Relaxed);
                let d = lease.expiration() - sent;
                let item =
                    (lease.cookie().to_string(), lease.landlord().0, Some("granted"), Some(d));
                rec.request("grant", wall, done, Some(&by), None, &[item]);
                Some(Track { promised: lease.expiration(), lease, kind: Kind::Kept, next_probe: 0 })
            }
            Err(e) => {
                c.grant_failures.fetch_add(1, Relaxed);
                let o = match &reply.body {
                    ReplyBody::Error(w) => outcome_name(w),
                    _ => "error",
                };
                let item = (String::new(), reply.landlord.0, Some(o), None);
                rec.request("grant", wall, done, Some(&by), None, &[item]);
                let _ = e;
                None
            }
        },
        None => {
            c.grant_failures.fetch_add(1, Relaxed);
            rec.request("grant", wall, done, None, Some("no server answered"), &[]);
            None
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn holder(
    h: usize,
    cluster: Cluster,
    plan: Plan,
    c: &Counts,
    _stop: &AtomicBool,
    rec: &Recorder,
) {
    let Plan {
        leases: n,
        lease_ms,
        run_ms,
        cancel,
        abandon,
        renew_divisor,
        churn_ms,
        stop_file,
        retry_ms,
        max_linger_ms,
    } = plan;
    let start = now();
    let end = start + run_ms;
    let mut tracks: HashMap<Cookie, Track> = HashMap::new();
    // Grants, one request each (the server picks the shard).
    for i in 0..n {
        let resource = format!("holder-{h}-lease-{i}").into_bytes();
        if let Some(t) = grant(&cluster, GRANT_IDS + i as u64, resource, lease_ms, c, rec).await {
            tracks.insert(t.lease.cookie(), t);
        }
    }
    let config = RenewalManagerConfig {
        report_renewals: false,
        min_rto: 100,
        renew_divisor,
        ..Default::default()
    };
    let mut m = RenewalManager::new(config);
    for t in tracks.values() {
        m.renew_until(t.lease, FOREVER, lease_ms, now()).expect("a fresh lease");
    }
    let cookies: Vec<Cookie> = {
        let mut v: Vec<Cookie> = tracks.keys().copied().collect();
        v.sort();
        v
    };
    let n_cancel = (cookies.len() as f64 * cancel) as usize;
    let n_abandon = (cookies.len() as f64 * abandon) as usize;
    let (cancel_set, rest) = cookies.split_at(n_cancel.min(cookies.len()));
    let abandon_set = &rest[..n_abandon.min(rest.len())];
    let (mut cancelled_yet, mut abandoned_yet) = (false, false);
    // Requests in flight: id -> (sent, cookies in request order).
    let mut probe_id = PROBE_IDS + ((h as u64) << 32);
    let (mut churned, mut next_churn) = (0u64, if churn_ms > 0 { start + churn_ms } else { end });
    // Probes of leases already gone: every 300 ms, or every 3 s when churning (the abandoned
    // leases add up).
    let gone_probe_ms = if churn_ms > 0 { 3000 } else { 300 };
    let mut inflight: tokio::task::JoinSet<Sent> = tokio::task::JoinSet::new();
    loop {
        let t = now();
        if t >= end || stop_file.as_deref().is_some_and(std::path::Path::exists) {
            break;
        }
        if t >= next_churn {
            next_churn = t + churn_ms;
            churned += 1;
            let resource = format!("holder-{h}-churn-{churned}").into_bytes();
            let id = GRANT_IDS + n as u64 + churned;
            if let Some(tr) = grant(&cluster, id, resource, lease_ms, c, rec).await {
                m.renew_until(tr.lease, FOREVER, lease_ms, now()).expect("a fresh lease");
                tracks.insert(tr.lease.cookie(), tr);
            }
            // Every third time one kept lease is cancelled, or abandoned (the oldest first).
            if churned % 3 != 0 {
                let pick = tracks
                    .iter()
                    .filter(|(_, tr)| tr.kind == Kind::Kept)
                    .map(|(ck, tr)| (tr.promised, *ck))
                    .min();
                if let Some((_, ck)) = pick {
                    let t = now();
                    let tr = tracks.get_mut(&ck).expect("listed");
                    if churned % 3 == 1 {
                        if m.cancel(&tr.lease, t).is_ok() {
                            tr.kind = Kind::Cancelling;
                        }
                    } else if m.remove(&tr.lease).is_ok() {
                        tr.kind = Kind::Abandoned { gone: false };
                        tr.next_probe = tr.promised + 50;
                        rec.event("abandon", Some(&ck), None);
                    }
                }
            }
        }
        if !abandoned_yet && t >= start + run_ms * 3 / 10 {
            abandoned_yet = true;
            for ck in abandon_set {
                if let Some(tr) = tracks.get_mut(ck) {
                    if tr.kind == Kind::Kept && m.remove(&tr.lease).is_ok() {
                        tr.kind = Kind::Abandoned { gone: false };
                        tr.next_probe = tr.promised + 50;
                        rec.event("abandon", Some(ck), None);
                    }
                }
            }
        }
        if !cancelled_yet && t >= start + run_ms * 4 / 10 {
            cancelled_yet = true;
            for ck in cancel_set {
                if let Some(tr) = tracks.get_mut(ck) {
                    if tr.kind == Kind::Kept && m.cancel(&tr.lease, t).is_ok() {
                        tr.kind = Kind::Cancelling;
                    }
                }
            }
        }
        m.handle_timeout(now());
        // Every renewal and cancel is sent in a task of its own, so that one that keeps trying
        // (a shard unavailable for a while: quarantined, its owner paused) holds up no other:
        // the holder goes on renewing the leases of every other shard meanwhile. Each request
        // is stamped with the time it is handed out (what the manager counts from).
        while let Some(tx) = m.poll_transmit(now()) {
            let sent = now();
            let wall = wall_ms();
            let op = match &tx.request.body {
                RequestBody::Renew { .. } => "renew",
                RequestBody::RenewAll { .. } => "renew_all",
                RequestBody::Cancel { .. } => "cancel",
                RequestBody::CancelAll { .. } => "cancel_all",
                RequestBody::Grant { .. } => "grant",
            };
            let order: Vec<Cookie> = match &tx.request.body {
                RequestBody::Renew { cookie, .. } | RequestBody::Cancel { cookie } => vec![*cookie],
                RequestBody::RenewAll { items } => items.iter().map(|x| x.0).collect(),
                RequestBody::CancelAll { cookies } => cookies.clone(),
                RequestBody::Grant { .. } => vec![],
            };
            let renewing =
                matches!(tx.request.body, RequestBody::Renew { .. } | RequestBody::RenewAll { .. });
            if renewing {
                c.renew_requests.fetch_add(1, Relaxed);
            }
            // A renewal keeps trying until the earliest end of its leases.
            let until = order
                .iter()
                .filter_map(|ck| tracks.get(ck))
                .map(|t| t.promised)
                .min()
                .filter(|_| renewing)
                .unwrap_or(0);
            let cluster = cluster.clone();
            inflight.spawn(async move {
                let reply =
                    send_until(&cluster, Some(tx.landlord), &tx.request, until, retry_ms).await;
                Sent { landlord: tx.landlord, id: tx.request.id, op, order, sent, wall, reply }
            });
        }
        while let Some(done) = inflight.try_join_next() {
            if let Ok(done) = done {
                finish(done, &mut m, &mut tracks, c, rec);
            }
        }
        while let Some(ev) = m.poll_event() {
            if let RenewalEvent::RenewalFailed { lease, error, .. } = ev {
                c.renewal_failures.fetch_add(1, Relaxed);
                eprintln!("holder {h}: renewal of {} failed: {error:?}", lease.cookie());
                rec.event("gave_up", Some(&lease.cookie()), Some(&format!("{error:?}")));
                if let Some(tr) = tracks.get_mut(&lease.cookie()) {
                    tr.kind = Kind::Unknown;
                }
            }
        }
        // Probes: cancelled leases must stay unknown; abandoned ones, once past their promise,
        // may be renewed (for 1 ms) until the landlord says they are gone, then never again.
        let t = now();
        let due: Vec<Cookie> = tracks
            .iter()
            .filter(|(_, tr)| {
                matches!(tr.kind, Kind::Cancelled | Kind::Abandoned { .. })
                    && tr.next_probe <= t
                    && (tr.kind != Kind::Abandoned { gone: false } || tr.promised + 50 <= t)
            })
            .map(|(c, _)| *c)
            .take(64)
            .collect();
        for ck in due {
            probe_id += 1;
            let tr = tracks.get_mut(&ck).expect("listed");
            let req =
                Request { id: probe_id, body: RequestBody::Renew { cookie: ck, duration: 1 } };
            tr.next_probe = t + if matches!(tr.kind, Kind::Abandoned { gone: false }) {
                300
            } else {
                gone_probe_ms
            };
            c.probes.fetch_add(1, Relaxed);
            let wall = wall_ms();
            let landlord = tr.lease.landlord().0;
            let Some((reply, by)) = send(&cluster, Some(tr.lease.landlord()), &req).await else {
                let item = (ck.to_string(), landlord, None, None);
                rec.request("probe", wall, wall_ms(), None, Some("no server answered"), &[item]);
                c.transport_failures.fetch_add(1, Relaxed);
                continue;
            };
            let (o, d) = reply_outcome(&reply.body, 0);
            let item = (ck.to_string(), landlord, o, d);
            rec.request("probe", wall, wall_ms(), Some(&by), None, &[item]);
            match (&reply.body, tr.kind) {
                (ReplyBody::Renewed { .. }, Kind::Cancelled) => {
                    eprintln!("holder {h}: cancelled lease {ck} renewed again");
                    c.cancel_came_back.fetch_add(1, Relaxed);
                }
                (ReplyBody::Renewed { .. }, Kind::Abandoned { gone: false })
                    if max_linger_ms.is_some_and(|m| t > tr.promised + m) =>
                {
                    eprintln!(
                        "holder {h}: abandoned lease {ck} renewable {} ms past its promise",
                        t - tr.promised
                    );
                    c.lingered.fetch_add(1, Relaxed);
                }
                (ReplyBody::Renewed { .. }, Kind::Abandoned { gone: true }) => {
                    eprintln!("holder {h}: expired lease {ck} renewed again");
                    c.expiry_came_back.fetch_add(1, Relaxed);
                }
                (ReplyBody::Error(e), Kind::Abandoned { .. }) if is_unknown(e) => {
                    tr.kind = Kind::Abandoned { gone: true };
                }
                _ => {}
            }
        }
        let wake = m.poll_timeout().unwrap_or(end).min(end).min(now() + 50);
        let wait = StdDuration::from_millis((wake - now()).max(0) as u64);
        tokio::select! {
            Some(Ok(done)) = inflight.join_next(), if !inflight.is_empty() => {
                finish(done, &mut m, &mut tracks, c, rec);
            }
            _ = tokio::time::sleep(wait) => {}
        }
    }
    // The answers still on their way count too.
    while let Some(done) = inflight.join_next().await {
        if let Ok(done) = done {
            finish(done, &mut m, &mut tracks, c, rec);
        }
    }
    // Final check: every lease kept to the end is held, for as long as it was promised.
    rec.event("end", None, None);
    let kept: Vec<(Cookie, LandlordId, Millis)> = tracks
        .iter()
        .filter(|(_, t)| t.kind == Kind::Kept)
        .map(|(c, t)| (*c, t.lease.landlord(), t.promised))
        .collect();
    for (ck, landlord, promised) in kept {
        probe_id += 1;
        let req =
            Request { id: probe_id, body: RequestBody::Renew { cookie: ck, duration: lease_ms } };
        let mut answered = None;
        for _ in 0..50 {
            let sent = now();
            let wall = wall_ms();
            let r = send(&cluster, Some(landlord), &req).await;
            let done = wall_ms();
            let (o, d) = r.as_ref().map_or((None, None), |(r, _)| reply_outcome(&r.body, 0));
            let err = r.is_none().then_some("no server answered");
            let server = r.as_ref().map(|(_, by)| by);
            rec.request("final", wall, done, server, err, &[(ck.to_string(), landlord.0, o, d)]);
            if let Some((r, _)) = r {
                answered = Some((r, sent));
                break;
            }
            tokio::time::sleep(StdDuration::from_millis(100)).await;
        }
        c.kept_checked.fetch_add(1, Relaxed);
        match answered {
            Some((Reply { body: ReplyBody::Renewed { .. }, .. }, _)) => {}
            Some((Reply { body: ReplyBody::Error(e), .. }, sent)) if is_unknown(&e) => {
                eprintln!(
                    "holder {h}: lease {ck} (landlord {}) renewed to the end is unknown ({} ms before its promise)",
                    landlord.0,
                    promised - sent
                );
                c.lost.fetch_add(1, Relaxed);
            }
            other => {
                eprintln!("holder {h}: final check of {ck}: {:?}", other.map(|x| x.0.body));
                c.lost.fetch_add(1, Relaxed);
            }
        }
    }
}

/// A renewal or cancel that was sent, and what came of it.
struct Sent {
    landlord: LandlordId,
    id: u64,
    op: &'static str,
    /// Its leases, in the request's order.
    order: Vec<Cookie>,
    /// When it was handed out ([`now`]'s clock) and sent (ms since the epoch).
    sent: Millis,
    wall: f64,
    reply: Option<(Reply, Answered)>,
}

/// Records a renewal's or cancel's outcome, checks it, and tells the renewal manager.
fn finish(
    s: Sent,
    m: &mut RenewalManager,
    tracks: &mut HashMap<Cookie, Track>,
    c: &Counts,
    rec: &Recorder,
) {
    let done = wall_ms();
    let items = |out: &dyn Fn(usize) -> (Option<&'static str>, Option<i64>)| {
        s.order
            .iter()
            .enumerate()
            .map(|(i, ck)| {
                let (o, d) = out(i);
                (ck.to_string(), s.landlord.0, o, d)
            })
            .collect::<Vec<Item>>()
    };
    match &s.reply {
        Some((r, by)) => {
            let items = items(&|i| reply_outcome(&r.body, i));
            rec.request(s.op, s.wall, done, Some(by), None, &items);
        }
        None => {
            let items = items(&|_| (None, None));
            rec.request(s.op, s.wall, done, None, Some("no server answered"), &items);
        }
    }
    match s.reply {
        Some((reply, _)) => {
            judge(&reply, s.sent, &s.order, tracks, c);
            m.handle_reply(&reply, now());
        }
        None => {
            c.transport_failures.fetch_add(1, Relaxed);
            m.handle_failure(s.id, LeaseError::Indefinite("no server answered".into()), now());
        }
    }
}

/// The outcome of item `i` of a reply, for the history: its name and the duration granted.
fn reply_outcome(body: &ReplyBody, i: usize) -> (Option<&'static str>, Option<i64>) {
    match body {
        ReplyBody::Granted { duration, .. } => (Some("granted"), Some(*duration)),
        ReplyBody::Renewed { duration } => (Some("renewed"), Some(*duration)),
        ReplyBody::Cancelled => (Some("cancelled"), None),
        ReplyBody::RenewedAll { results } => match results.get(i) {
            Some(Outcome::Ok(d)) => (Some("renewed"), Some(*d)),
            Some(Outcome::Err(e)) => (Some(outcome_name(e)), None),
            None => (Some("missing"), None),
        },
        ReplyBody::CancelledAll { results } => match results.get(i) {
            Some(Outcome::Ok(())) => (Some("cancelled"), None),
            Some(Outcome::Err(e)) => (Some(outcome_name(e)), None),
            None => (Some("missing"), None),
        },
        ReplyBody::Error(e) => (Some(outcome_name(e)), None),
    }
}

/// Checks a reply against what each lease was promised, and updates the promises.
fn judge(
    reply: &Reply,
    sent: Millis,
    order: &[Cookie],
    tracks: &mut HashMap<Cookie, Track>,
    c: &Counts,
) {
    let mut one = |ck: &Cookie, outcome: Result<Option<i64>, &leasehold::wire::WireError>| {
        let Some(tr) = tracks.get_mut(ck) else { return };
        match outcome {
            Ok(Some(d)) => {
                c.renewals.fetch_add(1, Relaxed);
                tr.promised = tr.promised.max(leasehold::time::expiration_after(sent, d));
            }
            Ok(None) => {
                c.cancels.fetch_add(1, Relaxed);
                tr.kind = Kind::Cancelled;
                tr.next_probe = sent + 100;
            }
            Err(e) => {
                if is_unknown(e) && sent < tr.promised {
                    eprintln!(
                        "lease {ck} (landlord {}) unknown {} ms before its promised expiration",
                        tr.lease.landlord().0,
                        tr.promised - sent
                    );
                    c.early_expiries.fetch_add(1, Relaxed);
                }
                if tr.kind == Kind::Cancelling {
                    tr.kind = Kind::Unknown;
                }
            }
        }
    };
    match &reply.body {
        ReplyBody::Renewed { duration } => order.iter().for_each(|ck| one(ck, Ok(Some(*duration)))),
        ReplyBody::Cancelled => order.iter().for_each(|ck| one(ck, Ok(None))),
        ReplyBody::RenewedAll { results } => {
            for (ck, r) in order.iter().zip(results) {
                match r {
                    Outcome::Ok(d) => one(ck, Ok(Some(*d))),
                    Outcome::Err(e) => one(ck, Err(e)),
                }
            }
        }
        ReplyBody::CancelledAll { results } => {
            for (ck, r) in order.iter().zip(results) {
                match r {
                    Outcome::Ok(()) => one(ck, Ok(None)),
                    Outcome::Err(e) => one(ck, Err(e)),
                }
            }
        }
        ReplyBody::Error(e) => order.iter().for_each(|ck| one(ck, Err(e))),
        ReplyBody::Granted { .. } => {}
    }
}

/// Waits until every landlord 1..=n answers (any reply: "unknown lease" to a made-up cookie
/// means the shard is served); prints the ms it took.
async fn probe(
    urls: &[&str],
    timeout: StdDuration,
    n: u64,
    enc: Encoding,
    limit_ms: u64,
) -> ExitCode {
    let started = Instant::now();
    let cluster = cluster_of(urls, timeout, enc).expect("checked");
    let mut pending: Vec<u64> = (1..=n).collect();
    while !pending.is_empty() {
        if started.elapsed() > StdDuration::from_millis(limit_ms) {
            eprintln!("probe: landlords {pending:?} still unanswered after {limit_ms} ms");
            return ExitCode::FAILURE;
        }
        let mut still = Vec::new();
        for id in pending {
            let req = Request { id, body: RequestBody::Renew { cookie: Cookie(1), duration: 1 } };
            let answered = send(&cluster, Some(LandlordId(id)), &req).await;
            if !matches!(answered, Some((r, _)) if r.landlord == LandlordId(id)) {
                still.push(id);
            }
        }
        pending = still;
        if !pending.is_empty() {
            tokio::time::sleep(StdDuration::from_millis(20)).await;
        }
    }
    println!("{}", started.elapsed().as_millis());
    ExitCode::SUCCESS
}
