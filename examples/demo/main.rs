//! The leasehold demo: a landlord served over real loopback HTTP, holders renewing through real
//! requests with the core's `RenewalManager`, and a renewal service keeping one holder's lease
//! alive after that holder has gone.
//!
//! What happens (times scale with `--run-ms`):
//! - `steady-N` holders renew until the end of the run, then cancel cleanly;
//! - `crasher` stops renewing at a third of the run: its lease expires at the landlord;
//! - `canceller` cancels at half the run;
//! - `latecomer` asks when the landlord is full: denied (`--capacity`);
//! - `delegator` hands its lease to a renewal set and goes away: the service renews it.
//!
//! Run `cargo run --release -p leasehold-examples --bin demo -- --help` for the flags.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration as StdDuration, Instant};

use leasehold::holder::{grant_request, lease_from_reply, RenewalEvent, RenewalManager, Transmit};
use leasehold::journal::Recovered;
use leasehold::policy::AdaptiveConfig;
use leasehold::service::{RenewalService, RenewalServiceConfig, SetEventKind};
use leasehold::{
    Encoding, Landlord, LandlordConfig, LandlordId, Lease, LeaseError, Limits, Millis, PolicySpec,
    Reply, FOREVER,
};
use leasehold_examples::http::{Client, Server};
use leasehold_examples::timeline::{Kind, Timeline};
use leasehold_store::{Durable, Shared as Store};

const USAGE: &str = "\
leasehold demo: a landlord over loopback HTTP and holders that renew, crash, cancel, get denied
and delegate to a renewal set.

USAGE: demo [OPTIONS]

OPTIONS:
  --holders N       steady holders that renew until the end (default 3, 0..=50)
  --lease-ms MS     lease duration each holder asks for, in ms (default 2000, 200..=60000)
  --run-ms MS       how long the demo runs, in ms (default 12000, 2000..=55000)
  --policy P        landlord policy: bounded | fixed | adaptive (default bounded)
  --capacity N      most live leases before grants are denied (default: holders + 3)
  --grace-ms MS     landlord's grace after expiry, for clock skew (default 0)
  --encoding E      wire encoding: json | binary (default json)
  --svg PATH        where to write the timeline chart (default target/demo-timeline.svg)
  --data DIR        the landlord's store: journal and snapshot (default target/demo-data,
                    emptied first); replies leave only once their records are on disk
  --memory          keep the landlord in memory only (no store, no restart)
  --restart-at MS   crash the landlord then (dropped without a clean shutdown) and recover
                    it from its store while holders keep renewing (default: half the run;
                    0: never)
  --quiet           print only the summary
  -h, --help        this text
";

#[derive(Debug, Clone)]
struct Options {
    holders: usize,
    lease_ms: i64,
    run_ms: i64,
    policy: String,
    capacity: Option<usize>,
    grace_ms: i64,
    encoding: Encoding,
    svg: String,
    quiet: bool,
    data: Option<String>,
    restart_at: Option<i64>,
}

fn parse_args(args: &[String]) -> Result<Option<Options>, String> {
    let mut o = Options {
        holders: 3,
        lease_ms: 2000,
        run_ms: 12_000,
        policy: "bounded".into(),
        capacity: None,
        grace_ms: 0,
        encoding: Encoding::Json,
        svg: "target/demo-timeline.svg".into(),
        quiet: false,
        data: Some("target/demo-data".into()),
        restart_at: None,
    };
    let mut restart_set = false;
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = |name: &str| {
            it.next().cloned().ok_or_else(|| format!("{name} needs a value (see --help)"))
        };
        fn int(name: &str, v: &str, lo: i64, hi: i64) -> Result<i64, String> {
            let n: i64 =
                v.parse().map_err(|_| format!("{name} wants a whole number, got {v:?}"))?;
            if n < lo || n > hi {
                return Err(format!("{name} must be between {lo} and {hi}, got {n}"));
            }
            Ok(n)
        }
        match flag.as_str() {
            "-h" | "--help" => return Ok(None),
            "--holders" => o.holders = int(flag, &value(flag)?, 0, 50)? as usize,
            "--lease-ms" => o.lease_ms = int(flag, &value(flag)?, 200, 60_000)?,
            "--run-ms" => o.run_ms = int(flag, &value(flag)?, 2_000, 55_000)?,
            "--capacity" => o.capacity = Some(int(flag, &value(flag)?, 0, 10_000)? as usize),
            "--grace-ms" => o.grace_ms = int(flag, &value(flag)?, 0, 60_000)?,
            "--policy" => {
                let p = value(flag)?;
                if !["bounded", "fixed", "adaptive"].contains(&p.as_str()) {
                    return Err(format!("--policy must be bounded, fixed or adaptive, got {p:?}"));
                }
                o.policy = p;
            }
            "--encoding" => {
                o.encoding = match value(flag)?.as_str() {
                    "json" => Encoding::Json,
                    "binary" => Encoding::Binary,
                    e => return Err(format!("--encoding must be json or binary, got {e:?}")),
                }
            }
            "--svg" => o.svg = value(flag)?,
            "--quiet" => o.quiet = true,
            "--data" => o.data = Some(value(flag)?),
            "--memory" => o.data = None,
            "--restart-at" => {
                let t = int(flag, &value(flag)?, 0, 55_000)?;
                o.restart_at = (t > 0).then_some(t);
                restart_set = true;
            }
            other => return Err(format!("unknown option {other:?} (see --help)")),
        }
    }
    if !restart_set {
        o.restart_at = Some(o.run_ms / 2);
    }
    if o.data.is_none() {
        o.restart_at = None;
    }
    if o.lease_ms * 2 > o.run_ms {
        return Err(format!(
            "--run-ms ({}) must be at least twice --lease-ms ({}) for the crash to show",
            o.run_ms, o.lease_ms
        ));
    }
    Ok(Some(o))
}

/// What every thread of the demo shares: the clock, the timeline and the stop flag.
struct Shared {
    start: Instant,
    timeline: Mutex<Timeline>,
    quiet: bool,
    stop: AtomicBool,
}

impl Shared {
    /// The host clock the core is given: milliseconds since the demo started.
    fn now(&self) -> Millis {
        self.start.elapsed().as_millis() as Millis
    }
    fn log(&self, who: &str, kind: Kind, until: Option<Millis>, detail: impl Into<String>) {
        let line = self.timeline.lock().unwrap().record(self.now(), who, kind, until, detail);
        if !self.quiet {
            println!("{line}");
        }
    }
    fn sleep_until(&self, t: Millis) {
        let now = self.now();
        if t > now {
            std::thread::sleep(StdDuration::from_millis((t - now).min(50) as u64));
        }
    }
}

fn policy_spec(o: &Options) -> PolicySpec {
    let inner = match o.policy.as_str() {
        "fixed" => PolicySpec::Fixed { duration: o.lease_ms },
        "adaptive" => PolicySpec::Adaptive(AdaptiveConfig {
            // G renewals per second; small on purpose so L_G visibly grows with N.
            renewals_per_second: 4.0,
            min: o.lease_ms,
            max: o.lease_ms * 4,
            grantors: 1,
        }),
        _ => PolicySpec::Bounded { max: o.lease_ms, default: o.lease_ms },
    };
    PolicySpec::Capacity { max_leases: o.capacity.unwrap_or(o.holders + 3), inner: Box::new(inner) }
}

/// Sends one request over HTTP and feeds the answer back: a reply, or an indefinite failure.
fn send(client: &mut Client, enc: Encoding, tx: &Transmit) -> Result<Reply, LeaseError> {
    let bytes = client
        .post(&tx.request.encode(enc), enc)
        .map_err(|e| LeaseError::Indefinite(format!("HTTP: {e}")))?;
    Reply::decode(&bytes, enc, &Limits::default())
}

/// Asks the landlord for a lease over HTTP; the lease counts from the send time.
fn acquire(
    shared: &Shared,
    client: &mut Client,
    enc: Encoding,
    who: &str,
    ms: i64,
) -> Option<Lease> {
    let sent_at = shared.now();
    let req = grant_request(1, who.as_bytes().to_vec(), ms);
    let reply = client
        .post(&req.encode(enc), enc)
        .map_err(|e| LeaseError::Indefinite(e.to_string()))
        .and_then(|b| Reply::decode(&b, enc, &Limits::default()))
        .and_then(|r| lease_from_reply(&r, sent_at));
    match reply {
        Ok(lease) => {
            shared.log(who, Kind::Granted, Some(lease.expiration()), format!("asked {ms} ms"));
            Some(lease)
        }
        Err(LeaseError::LeaseDenied(why)) => {
            shared.log(who, Kind::Denied, None, why);
            None
        }
        Err(e) => {
            shared.log(who, Kind::Failed, None, e.to_string());
            None
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Steady,
    Crasher,
    Canceller,
}

/// One holder: a thread running the sans-I/O renewal manager on the real clock over HTTP.
fn run_holder(
    shared: Arc<Shared>,
    o: Options,
    addr: std::net::SocketAddr,
    who: String,
    role: Role,
) {
    let mut client = Client::new(addr, StdDuration::from_secs(2));
    let Some(lease) = acquire(&shared, &mut client, o.encoding, &who, o.lease_ms) else { return };
    let mut mgr = RenewalManager::new(Default::default());
    mgr.renew_for(lease, FOREVER, o.lease_ms, shared.now()).expect("valid durations");
    let stop_at = match role {
        Role::Steady => o.run_ms - 300,
        Role::Crasher => o.run_ms / 3,
        Role::Canceller => o.run_ms / 2,
    };
    loop {
        let now = shared.now();
        if now >= stop_at || shared.stop.load(Ordering::Relaxed) {
            if role == Role::Crasher {
                shared.log(&who, Kind::Stopped, None, "crashed: no more renewals, no cancel");
                return;
            }
            let current = mgr.lease(&lease).unwrap_or(lease);
            let _ = mgr.cancel(&lease, now);
            while let Some(tx) = mgr.poll_transmit(now) {
                match send(&mut client, o.encoding, &tx) {
                    Ok(reply) => mgr.handle_reply(&reply, shared.now()),
                    Err(e) => mgr.handle_failure(tx.request.id, e, shared.now()),
                }
            }
            let what = if role == Role::Canceller { "cancelled early" } else { "shutdown" };
            shared.log(&who, Kind::Cancelled, None, format!("{what}, lease {}", current.cookie()));
            return;
        }
        mgr.handle_timeout(now);
        while let Some(tx) = mgr.poll_transmit(now) {
            match send(&mut client, o.encoding, &tx) {
                Ok(reply) => mgr.handle_reply(&reply, shared.now()),
                Err(e) => mgr.handle_failure(tx.request.id, e, shared.now()),
            }
        }
        while let Some(ev) = mgr.poll_event() {
            match ev {
                RenewalEvent::Renewed { lease } => {
                    shared.log(&who, Kind::Renewed, Some(lease.expiration()), "")
                }
                RenewalEvent::RenewalFailed { error, .. } => shared.log(
                    &who,
                    Kind::Failed,
                    None,
                    error.map(|e| e.to_string()).unwrap_or_else(|| "expired".into()),
                ),
                RenewalEvent::DesiredExpirationReached { .. } => {
                    shared.log(&who, Kind::Note, None, "desired expiration reached")
                }
            }
        }
        shared.sleep_until(mgr.poll_timeout().unwrap_or(now + 50).min(stop_at));
    }
}

/// The renewal service: renews the delegator's lease over HTTP after the delegator is gone.
fn run_service(
    shared: Arc<Shared>,
    o: Options,
    addr: std::net::SocketAddr,
    service: Arc<Mutex<RenewalService>>,
) {
    let mut client = Client::new(addr, StdDuration::from_secs(2));
    // Last expiration seen per client lease, to show the set's renewals on the timeline.
    let mut last: std::collections::HashMap<u128, Millis> = Default::default();
    while !shared.stop.load(Ordering::Relaxed) {
        let now = shared.now();
        let mut svc = service.lock().unwrap();
        svc.handle_timeout(now);
        while let Some(tx) = svc.poll_transmit(now) {
            match send(&mut client, o.encoding, &tx) {
                Ok(reply) => svc.handle_reply(&reply, shared.now()),
                Err(e) => svc.handle_failure(tx.request.id, e, shared.now()),
            }
        }
        while let Some(ev) = svc.poll_event() {
            match ev.kind {
                SetEventKind::RenewalFailure { lease, error, .. } => shared.log(
                    "delegator",
                    Kind::Failed,
                    None,
                    format!("set could not renew {}: {error:?}", lease.cookie()),
                ),
                SetEventKind::ExpirationWarning { expiration, .. } => {
                    shared.log("delegator", Kind::Note, Some(expiration), "set lease warning")
                }
            }
        }
        // The service renews through its own manager: show its renewals on the timeline.
        let renewed: Vec<Lease> = svc.manager().leases().copied().collect();
        let next = svc.poll_timeout().unwrap_or(now + 50);
        drop(svc);
        for l in renewed {
            if last.insert(l.cookie().0, l.expiration()).is_some_and(|e| e != l.expiration()) {
                shared.log("delegator", Kind::Renewed, Some(l.expiration()), "by the renewal set");
            }
        }
        shared.sleep_until(next);
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let o = match parse_args(&args) {
        Ok(Some(o)) => o,
        Ok(None) => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("demo: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&o) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("demo: {e}");
            ExitCode::from(1)
        }
    }
}

type LL = Landlord<Vec<u8>>;

/// One incarnation of the demo's landlord: in memory, or in its store directory.
enum Node {
    Memory(Box<Mutex<LL>>),
    Durable(Box<Store<LL>>),
}

/// The demo's landlord, which can crash and come back from its store while the HTTP server
/// and the holders carry on (requests that arrive meanwhile wait).
struct Host {
    spec: PolicySpec,
    config: LandlordConfig,
    data: Option<std::path::PathBuf>,
    current: Mutex<Option<Arc<Node>>>,
    back: Condvar,
}

impl Host {
    /// The landlord, from its store if it has one, resumed at `now` (time spent down does not
    /// count).
    fn open(&self, now: Millis) -> Result<Node, String> {
        let Some(dir) = &self.data else {
            let policy = self.spec.build().map_err(|e| e.to_string())?;
            return Ok(Node::Memory(Box::new(Mutex::new(Landlord::new(
                self.config.clone(),
                policy,
            )))));
        };
        // The previous incarnation may still be let go by a request in flight: its directory
        // lock goes with it.
        for _ in 0..500 {
            match Durable::open(dir, Default::default(), now, |snapshot| {
                let policy = self.spec.build()?;
                match snapshot {
                    Some(bytes) => LL::from_snapshot_bytes(bytes, policy),
                    None => {
                        let mut ll = Landlord::new(self.config.clone(), policy);
                        ll.enable_journal();
                        Ok(ll)
                    }
                }
            }) {
                Ok(d) => return Ok(Node::Durable(Box::new(Store::new(d)))),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(StdDuration::from_millis(2))
                }
                Err(e) => return Err(format!("cannot open the store in {}: {e}", dir.display())),
            }
        }
        Err(format!("{} stayed locked", dir.display()))
    }

    fn node(&self) -> Arc<Node> {
        let mut cur = self.current.lock().unwrap();
        loop {
            if let Some(n) = &*cur {
                return n.clone();
            }
            cur = self.back.wait(cur).unwrap();
        }
    }

    /// Runs `f` on the landlord; with a store, returns only once what `f` did is durable.
    fn with<T>(&self, f: impl FnOnce(&mut LL) -> T) -> T {
        match &*self.node() {
            Node::Memory(m) => f(&mut m.lock().unwrap()),
            Node::Durable(s) => {
                let (t, seq) = s.with(f);
                // A failed write means nothing is acknowledged: the caller's request times out.
                while s.wait_durable(seq).is_err() {
                    std::thread::sleep(StdDuration::from_millis(50));
                }
                t
            }
        }
    }

    /// Drops the landlord without a clean shutdown (what was not committed is lost, as in a
    /// crash) and recovers it from its store.
    fn crash_and_recover(&self, now: Millis) -> Result<(Recovered, usize), String> {
        let old = self.current.lock().unwrap().take();
        drop(old);
        let node = self.open(now)?;
        let (rec, n) = match &node {
            Node::Durable(s) => (s.recovered().clone(), s.read(|ll| ll.len())),
            Node::Memory(_) => (Recovered::default(), 0),
        };
        *self.current.lock().unwrap() = Some(Arc::new(node));
        self.back.notify_all();
        Ok((rec, n))
    }
}

fn run(o: &Options) -> Result<bool, String> {
    let shared = Arc::new(Shared {
        start: Instant::now(),
        timeline: Mutex::new(Timeline::new()),
        quiet: o.quiet,
        stop: AtomicBool::new(false),
    });
    // Seeds: real entropy from the OS, because the core has none of its own.
    let seed = |salt: u8| -> [u8; 32] {
        let mut s = [salt; 32];
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        s[..16].copy_from_slice(&t.to_le_bytes());
        let addr = &s as *const _ as usize;
        s[16..24].copy_from_slice(&(addr as u64).to_le_bytes());
        s
    };
    let config = LandlordConfig::new(LandlordId(0x1ea5e), seed(1)).with_grace(o.grace_ms);
    let data = o.data.as_ref().map(std::path::PathBuf::from);
    if let Some(dir) = &data {
        // A fresh store each run, so that the demo tells the same story every time.
        let _ = std::fs::remove_dir_all(dir);
    }
    let landlord = Arc::new(Host {
        spec: policy_spec(o),
        config,
        data,
        current: Mutex::new(None),
        back: Condvar::new(),
    });
    let first = landlord.open(shared.now())?;
    *landlord.current.lock().unwrap() = Some(Arc::new(first));

    // The landlord over HTTP, and its expiry driver on the real clock.
    let ll = landlord.clone();
    let sh = shared.clone();
    let mut server =
        Server::start(move |body, enc| ll.with(|l| l.handle_bytes(body, enc, sh.now())))
            .map_err(|e| format!("cannot listen on loopback: {e}"))?;
    let addr = server.addr();
    if !o.quiet {
        println!(
            "landlord {} serving {} ({} policy, capacity {}, {} encoding, {})\n",
            LandlordId(0x1ea5e),
            server.url(),
            o.policy,
            o.capacity.unwrap_or(o.holders + 3),
            if o.encoding == Encoding::Json { "JSON" } else { "binary" },
            match &o.data {
                Some(d) => format!("journaled to {d}"),
                None => "in memory only".into(),
            }
        );
    }
    let mut threads = Vec::new();
    {
        let (ll, sh) = (landlord.clone(), shared.clone());
        threads.push(std::thread::spawn(move || {
            while !sh.stop.load(Ordering::Relaxed) {
                let now = sh.now();
                let (gone, next) = ll.with(|l| {
                    l.handle_timeout(now);
                    let gone: Vec<_> = std::iter::from_fn(|| l.poll_expired()).collect();
                    (gone, l.poll_timeout().unwrap_or(now + 50).min(now + 50))
                });
                for e in gone {
                    let who = String::from_utf8_lossy(&e.resource).into_owned();
                    sh.log(&who, Kind::Expired, None, "landlord dropped the lease");
                }
                sh.sleep_until(next);
            }
        }));
    }

    // The renewal service (its own landlord id for set leases).
    let service = Arc::new(Mutex::new(
        RenewalService::new(RenewalServiceConfig::new(LandlordId(0x5e7), seed(2)))
            .map_err(|e| e.to_string())?,
    ));
    {
        let (sh, o2, svc) = (shared.clone(), o.clone(), service.clone());
        threads.push(std::thread::spawn(move || run_service(sh, o2, addr, svc)));
    }

    // Holders.
    let mut spawn = |who: String, role: Role| {
        let (sh, o2) = (shared.clone(), o.clone());
        threads.push(std::thread::spawn(move || run_holder(sh, o2, addr, who, role)));
    };
    for i in 1..=o.holders {
        spawn(format!("steady-{i}"), Role::Steady);
    }
    spawn("crasher".into(), Role::Crasher);
    spawn("canceller".into(), Role::Canceller);

    // The delegator: gets a lease, puts it into a renewal set for the rest of the run, leaves.
    std::thread::sleep(StdDuration::from_millis(150));
    let mut client = Client::new(addr, StdDuration::from_secs(2));
    let delegated = acquire(&shared, &mut client, o.encoding, "delegator", o.lease_ms);
    if let Some(lease) = delegated {
        let now = shared.now();
        let mut svc = service.lock().unwrap();
        let (set, set_lease) = svc.create_set(o.run_ms * 2, now).map_err(|e| e.to_string())?;
        svc.add(set, lease, o.run_ms - now, o.lease_ms, now).map_err(|e| e.to_string())?;
        drop(svc);
        shared.log(
            "delegator",
            Kind::Note,
            Some(lease.expiration()),
            format!("handed to renewal set (set lease {}), holder leaves", set_lease.cookie()),
        );
    }

    // The latecomer asks once everyone else holds a lease.
    std::thread::sleep(StdDuration::from_millis(400));
    let late = acquire(&shared, &mut client, o.encoding, "latecomer", o.lease_ms);

    // Let it run, then stop everything and check the story.
    let end = o.run_ms + o.lease_ms + o.grace_ms + 300;
    let mut restarted = None;
    if let Some(at) = o.restart_at {
        while shared.now() < at {
            std::thread::sleep(StdDuration::from_millis(20));
        }
        let t = Instant::now();
        let (rec, n) = landlord.crash_and_recover(shared.now())?;
        let took = t.elapsed().as_secs_f64() * 1e3;
        shared.log(
            "landlord",
            Kind::Note,
            None,
            format!(
                "crashed and recovered from its store in {took:.1} ms: {n} leases, {} journal \
                 records replayed{}",
                rec.replayed,
                if rec.torn.is_some() { ", a torn tail dropped" } else { "" }
            ),
        );
        restarted = Some(n);
    }
    while shared.now() < o.run_ms * 3 / 4 {
        std::thread::sleep(StdDuration::from_millis(20));
    }
    let delegated_alive =
        delegated.is_some_and(|l| landlord.with(|ll| ll.get(l.cookie(), shared.now()).is_some()));
    // Wait for the delegated lease to lapse after its membership ended, then stop.
    while shared.now() < end {
        std::thread::sleep(StdDuration::from_millis(20));
    }
    shared.stop.store(true, Ordering::Relaxed);
    for t in threads {
        let _ = t.join();
    }
    server.stop();

    let tl = shared.timeline.lock().unwrap();
    std::fs::create_dir_all(std::path::Path::new(&o.svg).parent().unwrap_or(".".as_ref()))
        .map_err(|e| format!("cannot create the folder of {}: {e}", o.svg))?;
    std::fs::write(&o.svg, tl.to_svg("leasehold demo: leases over loopback HTTP"))
        .map_err(|e| format!("cannot write {}: {e}", o.svg))?;

    // The checks: every scenario did what it should.
    let mut checks: Vec<(String, bool)> = Vec::new();
    for i in 1..=o.holders {
        let who = format!("steady-{i}");
        checks.push((
            format!("{who} renewed and never lapsed"),
            tl.count(&who, Kind::Renewed) > 0 && tl.count(&who, Kind::Expired) == 0,
        ));
    }
    checks.push((
        "crasher's lease expired at the landlord".into(),
        tl.count("crasher", Kind::Stopped) == 1 && tl.count("crasher", Kind::Expired) == 1,
    ));
    checks.push((
        "canceller's lease was cancelled, not expired".into(),
        tl.count("canceller", Kind::Cancelled) == 1 && tl.count("canceller", Kind::Expired) == 0,
    ));
    checks.push((
        "latecomer was denied at capacity".into(),
        late.is_none() && tl.count("latecomer", Kind::Denied) == 1,
    ));
    checks.push((
        "delegator's lease outlived its holder through the renewal set".into(),
        delegated_alive && tl.count("delegator", Kind::Renewed) > 0,
    ));
    if o.restart_at.is_some() {
        checks.push((
            "landlord crashed mid-run and came back from its store with every lease".into(),
            restarted.is_some_and(|n| n > 0),
        ));
    }
    let totals = tl.totals();
    println!("\nsummary after {:.1} s:", shared.now() as f64 / 1000.0);
    for (k, n) in &totals {
        println!("  {:<10} {n}", format!("{k:?}").to_lowercase());
    }
    let mut ok = true;
    for (what, pass) in &checks {
        println!("  [{}] {what}", if *pass { "ok" } else { "FAILED" });
        ok &= pass;
    }
    println!("timeline chart: {}", o.svg);
    println!(
        "demo: {} passed, {} failed",
        checks.iter().filter(|c| c.1).count(),
        checks.iter().filter(|c| !c.1).count()
    );
    Ok(ok)
}
