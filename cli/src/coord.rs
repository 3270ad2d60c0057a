//! `leasehold lock`, `leasehold elect` and `leasehold lease watch`: the coordination recipes of
//! `leasehold-client` (`RenewalDriver::lock` and `elect`, a watch on `POST /coord`) as commands.
//!
//! `lock` and `elect` hold what they got while a command runs (or until Ctrl-C), with the
//! lease renewed by a [`RenewalDriver`]; the command learns its fencing token from
//! `LEASEHOLD_FENCING_TOKEN`. If the lease is lost (a renewal refused, or none got through
//! before it ran out) the command gets SIGTERM, and SIGKILL `--kill-after-ms` later. A lock
//! is not a promise that no one else acts (a paused command acts late): the token, checked by
//! the protected resource, is (`docs/coordination.md`).

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use hyper_util::client::legacy::connect::Connect;
use leasehold::coord::wire::{CoordReplyBody, CoordRequest, CoordRequestBody};
use leasehold::coord::{EventKind, Holder, LeaseEvent};
use leasehold::{ErrorCode, Lease, LeaseError, RenewalEvent, Request, RequestBody, FOREVER};
use leasehold_client::admin::hex;
use leasehold_client::recipes::{Leadership, Lock, LockOptions};
use leasehold_client::{ClientError, Cluster, RenewalDriver};
use serde_json::{json, Value};
use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio::sync::{mpsc, oneshot};

use crate::out::{ms, Output, Shown};
use crate::{Fail, Outcome};

/// Longest one poll of a watch asks the server to hold it.
const POLL_WAIT_MS: i64 = 20_000;

/// "For ever", as a wait: ten years (an `Instant` plus more can overflow).
const FOREVER_WAIT: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

/// Request ids of this process's coordination requests.
fn next_id() -> u64 {
    static IDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1 << 40);
    IDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// SIGINT and SIGTERM, caught (from the moment this is made, they no longer end the process).
struct Signals {
    int: Signal,
    term: Signal,
}

impl Signals {
    fn new() -> Result<Signals, Fail> {
        let make =
            |k| signal(k).map_err(|e| Fail::Unavailable(format!("cannot catch signals: {e}")));
        Ok(Signals { int: make(SignalKind::interrupt())?, term: make(SignalKind::terminate())? })
    }

    /// The next signal: `libc::SIGINT` or `libc::SIGTERM`.
    async fn recv(&mut self) -> i32 {
        tokio::select! {
            _ = self.int.recv() => libc::SIGINT,
            _ = self.term.recv() => libc::SIGTERM,
        }
    }
}

/// A bytes string as people read it: text, or `hex:...`.
fn text(b: &[u8]) -> String {
    match std::str::from_utf8(b) {
        Ok(s) if !s.chars().any(char::is_control) => s.to_string(),
        _ => format!("hex:{}", hex(b)),
    }
}

/// A bytes string in JSON: `name` (hex, as the wire writes it) and `name_text` when it is text.
fn put_bytes(v: &mut Value, name: &str, b: &[u8]) {
    v[name] = json!(hex(b));
    if let Ok(s) = std::str::from_utf8(b) {
        v[format!("{name}_text")] = json!(s);
    }
}

fn client_fail(e: ClientError) -> Fail {
    match e {
        ClientError::Refused(m) => Fail::No(crate::refused_message(&m)),
        e => e.into(),
    }
}

// ---------- lock and elect ----------

/// What `lock` and `elect` hold.
enum Held<C: Connect + Clone + Send + Sync + 'static> {
    Lock(Lock<C>),
    Leader(Leadership<C>),
}

impl<C: Connect + Clone + Send + Sync + 'static> Held<C> {
    fn lock(&self) -> &Lock<C> {
        match self {
            Held::Lock(l) => l,
            Held::Leader(l) => l.lock(),
        }
    }

    async fn release(self) -> Result<(), ClientError> {
        match self {
            Held::Lock(l) => l.release().await,
            Held::Leader(l) => l.resign().await,
        }
    }
}

/// What to do once held.
pub struct HoldArgs {
    pub command: Vec<String>,
    pub kill_after: Duration,
}

/// `leasehold lock NAME [--wait-ms N] [--duration-ms N] [-- COMMAND ...]`.
pub async fn lock<C: Connect + Clone + Send + Sync + 'static>(
    c: Cluster<C>,
    name: String,
    wait_ms: Option<u64>,
    lease_ms: i64,
    holder: String,
    hold: HoldArgs,
    output: Output,
) -> Result<Outcome, Fail> {
    let mut signals = Signals::new()?;
    let (driver, events) = RenewalDriver::start(c.clone(), Default::default())?;
    // First without waiting, so that a refusal, no server answering or a free lock are known
    // at once; then, if it is held, in line for it.
    let mut opts = LockOptions { lease_ms, wait: None, holder: holder.into_bytes() };
    let lock = match driver.lock(&name, &opts).await {
        Ok(l) => l,
        Err(ClientError::Lease(LeaseError::LeaseDenied(why))) if wait_ms != Some(0) => {
            let wait = wait_ms.map_or(FOREVER_WAIT, Duration::from_millis);
            let until = wait_ms.map_or(String::new(), |w| format!(" (up to {})", ms(w as i64)));
            eprintln!("leasehold: {why}; waiting{until}");
            opts.wait = Some(wait);
            tokio::select! {
                r = driver.lock(&name, &opts) => r.map_err(|e| held_fail(&name, e))?,
                _ = signals.recv() => {
                    eprintln!("leasehold: interrupted while waiting for {name:?}");
                    return Ok(Outcome::Exit(130));
                }
            }
        }
        Err(e) => return Err(held_fail(&name, e)),
    };
    let held = Held::Lock(lock);
    if let Err(f) = check_exclusive(&c, held.lock(), "lock").await {
        finish(held, &name).await;
        return Err(f);
    }
    let lock = held.lock();
    let summary = format!("locked {:?}", text(lock.resource()));
    let row = vec![
        text(lock.resource()),
        lock.token().to_string(),
        lock.landlord().to_string(),
        lock.lease().cookie().to_string(),
        ms(lease_ms),
    ];
    let mut js = json!({ "locked": true, "token": lock.token().to_string(), "landlord": lock.landlord(),
        "cookie": lock.lease().cookie(), "lease_ms": lease_ms.to_string() });
    put_bytes(&mut js, "resource", lock.resource());
    let shown = Shown {
        headers: vec!["RESOURCE", "TOKEN", "LANDLORD", "COOKIE", "LEASE"],
        rows: vec![row],
        json: js,
        note: None,
    };
    hold_and_run(&driver, events, held, (shown, summary), hold, signals, output).await
}

/// `leasehold elect NAME --value V [--wait-ms N] [--duration-ms N] [-- COMMAND ...]`.
pub async fn elect<C: Connect + Clone + Send + Sync + 'static>(
    c: Cluster<C>,
    name: String,
    value: String,
    wait_ms: Option<u64>,
    lease_ms: i64,
    hold: HoldArgs,
    output: Output,
) -> Result<Outcome, Fail> {
    let mut signals = Signals::new()?;
    let (driver, events) = RenewalDriver::start(c.clone(), Default::default())?;
    let leadership = match driver.elect(&name, value.clone(), lease_ms, Some(Duration::ZERO)).await
    {
        Ok(l) => l,
        Err(ClientError::Lease(LeaseError::LeaseDenied(why))) if wait_ms != Some(0) => {
            let leader = match leader_of(&c, name.as_bytes()).await {
                Some(h) => format!("{} leads (token {})", text(&h.holder), h.token),
                None => why,
            };
            eprintln!("leasehold: campaigning for {name:?}: {leader}");
            let give_up = Some(wait_ms.map_or(FOREVER_WAIT, Duration::from_millis));
            tokio::select! {
                r = driver.elect(&name, value.clone(), lease_ms, give_up) => {
                    r.map_err(|e| held_fail(&name, e))?
                }
                _ = signals.recv() => {
                    eprintln!("leasehold: interrupted while campaigning for {name:?}");
                    return Ok(Outcome::Exit(130));
                }
            }
        }
        Err(e) => return Err(held_fail(&name, e)),
    };
    let held = Held::Leader(leadership);
    if let Err(f) = check_exclusive(&c, held.lock(), "election").await {
        finish(held, &name).await;
        return Err(f);
    }
    let lock = held.lock();
    let summary = format!("leading {name:?} as {value:?}");
    let row = vec![
        name.clone(),
        value.clone(),
        lock.token().to_string(),
        lock.landlord().to_string(),
        ms(lease_ms),
    ];
    let js = json!({ "leader": true, "name": name, "value": value, "token": lock.token().to_string(),
        "landlord": lock.landlord(), "cookie": lock.lease().cookie(), "lease_ms": lease_ms.to_string() });
    let shown = Shown {
        headers: vec!["ELECTION", "LEADER", "TOKEN", "LANDLORD", "LEASE"],
        rows: vec![row],
        json: js,
        note: None,
    };
    hold_and_run(&driver, events, held, (shown, summary), hold, signals, output).await
}

/// A failure to get `name`: held (the wait ran out), refused, or no server.
fn held_fail(name: &str, e: ClientError) -> Fail {
    match e {
        ClientError::Lease(LeaseError::LeaseDenied(why)) => {
            if why.contains(&format!("{name:?}")) {
                Fail::No(format!("not acquired: {why}"))
            } else {
                Fail::No(format!("{name:?} not acquired: {why}"))
            }
        }
        e => client_fail(e),
    }
}

/// The current holder of `name`, if the caller may ask (`watch` permission) and it is held.
async fn leader_of<C: Connect + Clone + Send + Sync + 'static>(
    c: &Cluster<C>,
    name: &[u8],
) -> Option<Holder> {
    let req = CoordRequest {
        id: next_id(),
        body: CoordRequestBody::Holders { resource: name.to_vec(), prefix: false },
    };
    match c.send_coord(None, &req).await.ok()?.body {
        CoordReplyBody::Holders { holders } => holders.into_iter().next(),
        _ => None,
    }
}

/// That the lease just acquired excludes every other: its resource is exclusive at its landlord.
/// A resource that is not (the server has no `--exclusive-prefix` for it) is granted to
/// everyone who asks, which no lock may be.
///
/// Asked with `holders` (which lists the holders of exclusive resources only); for an identity
/// that may not watch, by a second acquire that must be denied.
async fn check_exclusive<C: Connect + Clone + Send + Sync + 'static>(
    c: &Cluster<C>,
    lock: &Lock<C>,
    what: &str,
) -> Result<(), Fail> {
    let resource = lock.resource().to_vec();
    let req = CoordRequest {
        id: next_id(),
        body: CoordRequestBody::Holders { resource: resource.clone(), prefix: false },
    };
    let exclusive = match c.send_coord(Some(lock.landlord()), &req).await.map_err(client_fail)?.body
    {
        CoordReplyBody::Holders { holders } => holders.iter().any(|h| h.token == lock.token()),
        _ => {
            let probe = CoordRequest {
                id: next_id(),
                body: CoordRequestBody::Acquire {
                    resource: resource.clone(),
                    duration: 1000,
                    wait: 0,
                    holder: b"leasehold exclusivity probe".to_vec(),
                },
            };
            let r = c.send_coord(None, &probe).await.map_err(client_fail)?;
            match r.acquired() {
                Ok(a) => {
                    let cancel =
                        Request { id: next_id(), body: RequestBody::Cancel { cookie: a.cookie } };
                    let _ = c.send(Some(r.landlord), &cancel).await;
                    false
                }
                Err(_) => true,
            }
        }
    };
    if exclusive {
        return Ok(());
    }
    Err(Fail::No(format!(
        "{} is not an exclusive resource on this server, so the {what} would exclude no one \
         (every grant of it succeeds); start leasehold-server with --exclusive-prefix (e.g. \
         --exclusive-prefix {}) or name it in [coordination] exclusive of its config file",
        leasehold::coord::show(&resource),
        suggest_prefix(&resource)
    )))
}

/// A prefix to suggest for `resource`: up to its first `/`, else itself.
fn suggest_prefix(resource: &[u8]) -> String {
    let t = String::from_utf8_lossy(resource);
    match t.find('/') {
        Some(i) => t[..=i].to_string(),
        None => t.to_string(),
    }
}

/// Until the lease is lost: the first `RenewalFailed` for it, or the driver no longer holding it
/// as of now. Sends why on `lost`.
fn watch_loss<C: Connect + Clone + Send + Sync + 'static>(
    driver: RenewalDriver<C>,
    lease: Lease,
    mut events: mpsc::UnboundedReceiver<RenewalEvent>,
    lost: oneshot::Sender<String>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            tokio::select! {
                ev = events.recv() => match ev {
                    Some(RenewalEvent::RenewalFailed { lease: l, error, .. }) if l.cookie() == lease.cookie() => {
                        let why = match error {
                            None => "no renewal got through before it ran out".into(),
                            Some(LeaseError::UnknownLease) => {
                                "its landlord no longer knows the lease (revoked, or it ran out)".into()
                            }
                            Some(e) => e.to_string(),
                        };
                        let _ = lost.send(why);
                        return;
                    }
                    Some(RenewalEvent::DesiredExpirationReached { lease: l, .. }) if l.cookie() == lease.cookie() => {
                        let _ = lost.send("it reached its end".into());
                        return;
                    }
                    Some(_) => {}
                    None => {
                        let _ = lost.send("the renewal driver stopped".into());
                        return;
                    }
                },
                _ = tokio::time::sleep(Duration::from_millis(200)) => {
                    let held = matches!(driver.lease(lease).await, Ok(Some((l, _))) if driver.now() < l.expiration());
                    if !held {
                        let _ = lost.send("no renewal got through before it ran out".into());
                        return;
                    }
                }
            }
        }
    })
}

fn send_signal(child: &tokio::process::Child, sig: i32) {
    if let Some(pid) = child.id() {
        // SAFETY: kill(2) on our own child's pid (not yet reaped: `id()` is `Some`).
        unsafe {
            libc::kill(pid as libc::pid_t, sig);
        }
    }
}

/// A process's exit status as a shell reports it: its code, or 128 + the signal that ended it.
fn exit_code(status: std::process::ExitStatus) -> u8 {
    match (status.code(), status.signal()) {
        (Some(c), _) => c.clamp(0, 255) as u8,
        (None, Some(s)) => (128 + s).clamp(0, 255) as u8,
        _ => 1,
    }
}

/// Prints what is held, then runs the command (or holds until SIGINT/SIGTERM), then releases.
async fn hold_and_run<C: Connect + Clone + Send + Sync + 'static>(
    driver: &RenewalDriver<C>,
    events: mpsc::UnboundedReceiver<RenewalEvent>,
    held: Held<C>,
    (shown, summary): (Shown, String),
    hold: HoldArgs,
    mut signals: Signals,
    output: Output,
) -> Result<Outcome, Fail> {
    let lock = held.lock();
    let (token, lease) = (lock.token(), lock.lease());
    let resource = text(lock.resource());
    let (lost_tx, mut lost) = oneshot::channel();
    let watcher = watch_loss(driver.clone(), lease, events, lost_tx);

    if hold.command.is_empty() {
        shown.print_line(output);
        eprintln!("leasehold: {summary} (token {token}); holding until Ctrl-C");
        let outcome = tokio::select! {
            _ = signals.recv() => Ok(Outcome::Exit(0)),
            why = &mut lost => Err(lost_fail(&resource, token, &why.unwrap_or_default(), None)),
        };
        watcher.abort();
        finish(held, &resource).await;
        return outcome;
    }

    eprintln!("leasehold: {summary} (token {token}); running {}", hold.command.join(" "));
    let mut cmd = tokio::process::Command::new(&hold.command[0]);
    cmd.args(&hold.command[1..])
        .env("LEASEHOLD_FENCING_TOKEN", token.to_string())
        .env("LEASEHOLD_LOCK_COOKIE", lease.cookie().to_string())
        .env("LEASEHOLD_LOCK_LANDLORD", lease.landlord().to_string())
        .env("LEASEHOLD_LOCK_RESOURCE", &resource);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            watcher.abort();
            finish(held, &resource).await;
            let code = if e.kind() == std::io::ErrorKind::NotFound { 127 } else { 126 };
            eprintln!("leasehold: cannot run {:?}: {e}", hold.command[0]);
            return Ok(Outcome::Exit(code));
        }
    };
    // A Ctrl-C at the terminal reaches the command too (one process group); a SIGINT sent to
    // this process alone is passed on if the command is still running a second later.
    let mut pass_int: Option<tokio::time::Instant> = None;
    let mut lost_why: Option<String> = None;
    let mut kill_at: Option<tokio::time::Instant> = None;
    let far = || tokio::time::Instant::now() + FOREVER_WAIT;
    let status = loop {
        tokio::select! {
            status = child.wait() => break status,
            sig = signals.recv() => {
                if sig == libc::SIGTERM {
                    send_signal(&child, libc::SIGTERM);
                } else if pass_int.is_none() {
                    pass_int = Some(tokio::time::Instant::now() + Duration::from_secs(1));
                }
            }
            _ = tokio::time::sleep_until(pass_int.unwrap_or_else(far)), if pass_int.is_some() => {
                send_signal(&child, libc::SIGINT);
                pass_int = None;
            }
            why = &mut lost, if lost_why.is_none() => {
                let why = why.unwrap_or_default();
                eprintln!("leasehold: lost {resource:?} (token {token}): {why}; stopping the command (SIGTERM)");
                send_signal(&child, libc::SIGTERM);
                lost_why = Some(why);
                kill_at = Some(tokio::time::Instant::now() + hold.kill_after);
            }
            _ = tokio::time::sleep_until(kill_at.unwrap_or_else(far)), if kill_at.is_some() => {
                eprintln!("leasehold: the command outlived SIGTERM by {}; SIGKILL", ms(hold.kill_after.as_millis() as i64));
                send_signal(&child, libc::SIGKILL);
                kill_at = None;
            }
        }
    };
    watcher.abort();
    finish(held, &resource).await;
    let status = status.map_err(|e| Fail::No(format!("waiting for the command: {e}")))?;
    match lost_why {
        Some(why) => Err(lost_fail(&resource, token, &why, Some(exit_code(status)))),
        None => Ok(Outcome::Exit(exit_code(status))),
    }
}

fn lost_fail(resource: &str, token: u64, why: &str, command: Option<u8>) -> Fail {
    let after = command.map_or(String::new(), |c| format!("; the command was stopped (exit {c})"));
    Fail::No(format!("lost {resource:?} (token {token}): {why}{after}"))
}

/// Releases what is held, saying so if the release did not get through.
async fn finish<C: Connect + Clone + Send + Sync + 'static>(held: Held<C>, resource: &str) {
    if let Err(e) = held.release().await {
        eprintln!("leasehold: could not release {resource:?} ({e}); its lease runs out by itself");
    }
}

// ---------- lease watch ----------

/// A watch's events as lines: a table's rows under one header, or one JSON document each.
struct Lines {
    output: Output,
    /// Whether the table's header is out (it goes before the first row).
    headed: std::cell::Cell<bool>,
}

impl Lines {
    fn new(output: Output) -> Lines {
        Lines { output, headed: std::cell::Cell::new(false) }
    }

    /// The header, if it is not out yet (before the first row, or once watching began).
    fn header(&self) {
        if self.output == Output::Table && !self.headed.replace(true) {
            let [a, b, c, d, e, f] = ["SEQ", "EVENT", "RESOURCE", "TOKEN", "HOLDER", "LEASE"];
            println!("{a:<6}  {b:<9}  {c:<24}  {d:<6}  {e:<24}  {f}");
        }
    }

    fn row(&self, cells: [String; 6]) {
        self.header();
        let [a, b, c, d, e, f] = cells;
        println!("{a:<6}  {b:<9}  {c:<24}  {d:<6}  {e:<24}  {f}");
    }

    fn held(&self, landlord: leasehold::LandlordId, h: &Holder) {
        match self.output {
            Output::Table => self.row([
                "-".into(),
                "held".into(),
                text(&h.resource),
                h.token.to_string(),
                text(&h.holder),
                format!("{} left", ms(h.remaining)),
            ]),
            Output::Json => {
                let mut v = json!({ "kind": "held", "landlord": landlord, "token": h.token.to_string(),
                    "remaining_ms": h.remaining.to_string() });
                put_bytes(&mut v, "resource", &h.resource);
                put_bytes(&mut v, "holder", &h.holder);
                println!("{v}");
            }
        }
    }

    fn event(&self, landlord: leasehold::LandlordId, e: &LeaseEvent) {
        let kind = match e.kind {
            EventKind::Granted => "granted",
            EventKind::Renewed => "renewed",
            EventKind::Cancelled => "cancelled",
            EventKind::Expired => "expired",
        };
        match self.output {
            Output::Table => self.row([
                e.sequence.to_string(),
                kind.into(),
                text(&e.resource),
                e.token.to_string(),
                text(&e.holder),
                match e.kind {
                    EventKind::Granted | EventKind::Renewed => ms(e.duration),
                    _ => "-".into(),
                },
            ]),
            Output::Json => {
                let mut v = json!({ "kind": kind, "sequence": e.sequence.to_string(), "landlord": landlord,
                    "token": e.token.to_string(), "duration_ms": e.duration.to_string() });
                put_bytes(&mut v, "resource", &e.resource);
                put_bytes(&mut v, "holder", &e.holder);
                println!("{v}");
            }
        }
    }

    fn missed(&self, from: u64, to: u64) {
        match self.output {
            Output::Table => self.row([
                format!("{from}-{to}"),
                "missed".into(),
                "(too far behind: the holders now follow)".into(),
                String::new(),
                String::new(),
                String::new(),
            ]),
            Output::Json => {
                println!(
                    "{}",
                    json!({ "kind": "missed", "from": from.to_string(), "to": to.to_string() })
                )
            }
        }
    }
}

/// A watch registration: its lease (kept renewed by the driver) and the last event number.
struct Watch {
    lease: Lease,
    last: u64,
}

async fn register<C: Connect + Clone + Send + Sync + 'static>(
    driver: &RenewalDriver<C>,
    selector: &[u8],
    prefix: bool,
    renewals: bool,
    lease_ms: i64,
    lines: &Lines,
) -> Result<Watch, Fail> {
    let sent = driver.now();
    let req = CoordRequest {
        id: next_id(),
        body: CoordRequestBody::Watch {
            resource: selector.to_vec(),
            prefix,
            renewals,
            duration: lease_ms,
            handback: Vec::new(),
        },
    };
    let r = driver.cluster().send_coord(None, &req).await.map_err(client_fail)?;
    match r.body {
        CoordReplyBody::Watching { cookie, duration, sequence, current, .. } => {
            let expiration =
                leasehold::holder::local_expiration(sent, duration, driver.max_clock_drift_ppm());
            let lease = Lease::new(r.landlord, cookie, expiration);
            driver.renew_for(lease, FOREVER, lease_ms).await.map_err(client_fail)?;
            for h in &current {
                lines.held(r.landlord, h);
            }
            lines.header();
            Ok(Watch { lease, last: sequence })
        }
        CoordReplyBody::Error(e)
            if r.landlord.0 == 0 && e.error_code() == Some(ErrorCode::LeaseDenied) =>
        {
            Err(Fail::No(crate::refused_message(&e.message)))
        }
        CoordReplyBody::Error(e) => Err(Fail::No(format!("the watch was refused: {}", e.message))),
        other => Err(Fail::No(format!("unexpected answer: {other:?}"))),
    }
}

/// `leasehold lease watch RESOURCE [--prefix]`: the events, as they come, until SIGINT/SIGTERM.
pub async fn watch<C: Connect + Clone + Send + Sync + 'static>(
    c: Cluster<C>,
    selector: Vec<u8>,
    prefix: bool,
    renewals: bool,
    lease_ms: i64,
    output: Output,
) -> Result<Outcome, Fail> {
    let mut signals = Signals::new()?;
    let (driver, _events) = RenewalDriver::start(c.clone(), Default::default())?;
    let lines = Lines::new(output);
    let mut w = tokio::select! {
        w = register(&driver, &selector, prefix, renewals, lease_ms, &lines) => w?,
        _ = signals.recv() => return Ok(Outcome::Exit(0)),
    };
    eprintln!(
        "leasehold: watching {}{} at landlord {} (events after {}) until Ctrl-C",
        if prefix { "every resource under " } else { "" },
        leasehold::coord::show(&selector),
        w.lease.landlord(),
        w.last
    );
    let mut unavailable = false;
    loop {
        let poll = CoordRequest {
            id: next_id(),
            body: CoordRequestBody::Poll {
                cookie: w.lease.cookie(),
                since: w.last,
                wait: POLL_WAIT_MS,
                max: 0,
            },
        };
        let answer = tokio::select! {
            a = c.send_coord(Some(w.lease.landlord()), &poll) => a,
            _ = signals.recv() => break,
        };
        match answer {
            Ok(r) => {
                if unavailable {
                    eprintln!("leasehold: a server answers again");
                    unavailable = false;
                }
                match r.body {
                    CoordReplyBody::Events(e) => {
                        if let Some(m) = e.missed {
                            lines.missed(m.from, m.to);
                            for h in e.current.as_deref().unwrap_or_default() {
                                lines.held(r.landlord, h);
                            }
                            w.last = m.to;
                        }
                        for ev in &e.events {
                            lines.event(r.landlord, ev);
                            w.last = ev.sequence;
                        }
                    }
                    // The watch's lease ran out (no renewal got through in time): watch again,
                    // from the holders as they are now.
                    CoordReplyBody::Error(e) if e.error_code() == Some(ErrorCode::UnknownLease) => {
                        eprintln!(
                            "leasehold: the watch ran out; watching again from what is held now"
                        );
                        let _ = driver.remove(w.lease).await;
                        w = tokio::select! {
                            w = register(&driver, &selector, prefix, renewals, lease_ms, &lines) => w?,
                            _ = signals.recv() => return Ok(Outcome::Exit(0)),
                        };
                    }
                    CoordReplyBody::Error(e) => {
                        let _ = driver.remove(w.lease).await;
                        return Err(Fail::No(format!("the watch was refused: {}", e.message)));
                    }
                    other => return Err(Fail::No(format!("unexpected answer: {other:?}"))),
                }
            }
            Err(ClientError::Unavailable(why)) => {
                if !unavailable {
                    eprintln!("leasehold: no server answered ({why}); trying again");
                    unavailable = true;
                }
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(250)) => {}
                    _ = signals.recv() => break,
                }
            }
            Err(e) => return Err(client_fail(e)),
        }
    }
    // Ended by a signal: the watch ends with it.
    let _ = driver.remove(w.lease).await;
    let cancel = Request { id: next_id(), body: RequestBody::Cancel { cookie: w.lease.cookie() } };
    let _ = tokio::time::timeout(Duration::from_secs(2), c.send(Some(w.lease.landlord()), &cancel))
        .await;
    Ok(Outcome::Exit(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_as_a_shell_reports_them() {
        assert_eq!(exit_code(std::process::ExitStatus::from_raw(3 << 8)), 3);
        assert_eq!(exit_code(std::process::ExitStatus::from_raw(libc::SIGTERM)), 143);
        assert_eq!(suggest_prefix(b"locks/db"), "locks/");
        assert_eq!(suggest_prefix(b"leader"), "leader");
        assert_eq!(text(b"a/b"), "a/b");
        assert_eq!(text(&[0, 255]), "hex:00ff");
    }
}
