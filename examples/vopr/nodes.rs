//! The simulated hosts: a landlord host, a renewal-service host, a holder host and an
//! adversary, each an [`Actor`] of `simnet`, all reporting to one shared [`Ctx`] in which the
//! checks of the simulator keep their books.
//!
//! Landlord and service hosts follow the durability contract (see [`crate::durable`]): every
//! reply and event is held until the change behind it is committed, and a crash loses what was
//! not.

use std::any::Any;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::rc::Rc;

use leasehold::error::ErrorCode;
use leasehold::event::EventId;
use leasehold::holder::{self, RenewalEvent, RenewalManager, Transmit};
use leasehold::policy::PolicySpec;
use leasehold::service::{RenewalService, RenewalServiceConfig, SetEventKind};
use leasehold::simnet::{Actor, Address, Clock, Message, NodeId, Outgoing};
use leasehold::wire::Outcome;
use leasehold::{
    Cookie, Encoding, LandlordConfig, LandlordId, Lease, Millis, Reply, ReplyBody, Request,
    RequestBody, FOREVER,
};
use rand_chacha::ChaCha12Rng;
use rand_core::RngCore;

use crate::durable::{LandlordStore, RestoreMode, ServiceStore};

/// The shared books of one simulated run.
pub type Shared = Rc<RefCell<Ctx>>;

/// Faults injected, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Faults {
    /// Messages lost by the network.
    pub lost: u64,
    /// Messages sent twice.
    pub duplicated: u64,
    /// Requests that reached their landlord after a later request of the same sender.
    pub reordered: u64,
    /// Links made slow (and lossy) for a while: long delays and reordering.
    pub delayed: u64,
    /// Partitions between two nodes.
    pub partitions: u64,
    /// Clock steps forward.
    pub clock_forward: u64,
    /// Clock steps backward.
    pub clock_back: u64,
    /// Crashes of a landlord or the service (restored from the last commit).
    pub crashes: u64,
    /// Of those, crashes right after a commit (the snapshot taken at the crash moment).
    pub crashes_at_commit: u64,
    /// Corrupted snapshots handed to restore (which must refuse them).
    pub corrupt_snapshots: u64,
    /// Hostile replies (wrong ids, other landlords, malformed bodies).
    pub hostile: u64,
    /// Requests replayed to a landlord they were not meant for.
    pub misrouted: u64,
}

impl Faults {
    /// Adds `o`.
    pub fn add(&mut self, o: &Faults) {
        self.lost += o.lost;
        self.duplicated += o.duplicated;
        self.reordered += o.reordered;
        self.delayed += o.delayed;
        self.partitions += o.partitions;
        self.clock_forward += o.clock_forward;
        self.clock_back += o.clock_back;
        self.crashes += o.crashes;
        self.crashes_at_commit += o.crashes_at_commit;
        self.corrupt_snapshots += o.corrupt_snapshots;
        self.hostile += o.hostile;
        self.misrouted += o.misrouted;
    }
}

impl std::fmt::Display for Faults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "lost {}, duplicated {}, reordered {}, slow links {}, partitions {}, \
             clock steps forward {}, clock steps back {}, crashes {} ({} at a commit), \
             corrupt snapshots {}, hostile replies {}, misrouted requests {}",
            self.lost,
            self.duplicated,
            self.reordered,
            self.delayed,
            self.partitions,
            self.clock_forward,
            self.clock_back,
            self.crashes,
            self.crashes_at_commit,
            self.corrupt_snapshots,
            self.hostile,
            self.misrouted
        )
    }
}

/// What a landlord promised in a reply: the lease `cookie` is honoured until `expiration`
/// (landlord's clock), as set by operation number `op` of that landlord.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Promise {
    /// The lease.
    pub cookie: Cookie,
    /// Its expiration on the landlord's clock.
    pub expiration: Millis,
    /// The landlord's operation that set it.
    pub op: u64,
    /// The first real time the landlord no longer honours it, as its clock ran when the reply
    /// was released (`None`: never).
    pub until_real: Option<Millis>,
    /// Real time the reply was released.
    pub made: Millis,
}

/// Which check failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Check {
    /// (a) a holder believes in a lease its landlord has dropped.
    Belief,
    /// (b) something acknowledged was lost across a restore.
    Acknowledged,
    /// (c) a lease came back.
    ComesBack,
    /// (d) event sequence numbers.
    Sequence,
    /// (e) liveness.
    Liveness,
    /// A landlord honoured a cookie it did not issue.
    Cookie,
    /// A restored landlord behaves differently from its twin that never crashed.
    Twin,
    /// Restore accepted an inconsistent snapshot, or refused a good one.
    Restore,
    /// The code under test panicked.
    Panic,
}

impl Check {
    /// Short name, as printed.
    pub fn name(self) -> &'static str {
        match self {
            Check::Belief => "(a) belief",
            Check::Acknowledged => "(b) acknowledged",
            Check::ComesBack => "(c) comes back",
            Check::Sequence => "(d) sequence",
            Check::Liveness => "(e) liveness",
            Check::Cookie => "cookie binding",
            Check::Twin => "restore twin",
            Check::Restore => "restore check",
            Check::Panic => "panic",
        }
    }
}

/// The first check that failed in a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// Which.
    pub check: Check,
    /// What happened.
    pub message: String,
    /// Real time.
    pub at: Millis,
}

/// The shared books.
pub struct Ctx {
    /// Real (virtual) time of the latest step.
    pub real: Millis,
    trace: Option<VecDeque<String>>,
    trace_cap: usize,
    /// Print trace lines as they happen (VOPR_TRACE_LIVE=1), to see a run that hangs.
    live: bool,
    /// The first failed check.
    pub failure: Option<Failure>,
    /// Faults injected.
    pub faults: Faults,
    /// Replies released by landlords and not yet received: (to, landlord, request id).
    pub promises: BTreeMap<(NodeId, LandlordId, u64), Vec<Promise>>,
    /// Promises whose reply reached its holder, latest operation per lease.
    pub acked: BTreeMap<(LandlordId, Cookie), Promise>,
    /// Leases a landlord said are gone (unknown, cancelled, expired), with the real time.
    pub gone: BTreeMap<LandlordId, BTreeMap<Cookie, Millis>>,
    /// Who issued each cookie.
    pub issued: BTreeMap<Cookie, Vec<LandlordId>>,
    /// Last sequence number handed out per event registration.
    pub seqs: BTreeMap<(LandlordId, EventId), u64>,
    /// Handback registered per event registration.
    pub handbacks: BTreeMap<(LandlordId, EventId), Vec<u8>>,
    /// Events handed out.
    pub events: u64,
    /// Successful renewals seen by holders (a sanity count: the run did something).
    pub renewals: u64,
    /// Liveness is being checked (faults have stopped and settled).
    pub liveness: bool,
    /// Leases that must stay alive while liveness is checked: (holder node, landlord, cookie).
    pub healthy: BTreeSet<(NodeId, LandlordId, Cookie)>,
    /// Requests the adversary sent to a landlord they were not meant for: id -> meant for.
    pub misrouted: BTreeMap<u64, LandlordId>,
    /// The adversary's node.
    pub adversary: NodeId,
    /// Renewer nodes that handled something since the last check.
    pub touched_nodes: Vec<NodeId>,
    /// Landlords that handled something since the last check.
    pub touched_landlords: Vec<LandlordId>,
    /// Promises acknowledged since the last check.
    pub newly_acked: Vec<(LandlordId, Cookie)>,
}

impl Ctx {
    /// Books with a trace of the last `trace` lines (0: no trace).
    pub fn new(trace: usize) -> Ctx {
        Ctx {
            real: 0,
            trace: (trace > 0).then(VecDeque::new),
            trace_cap: trace,
            live: trace > 0 && std::env::var_os("VOPR_TRACE_LIVE").is_some(),
            failure: None,
            faults: Faults::default(),
            promises: BTreeMap::new(),
            acked: BTreeMap::new(),
            gone: BTreeMap::new(),
            issued: BTreeMap::new(),
            seqs: BTreeMap::new(),
            handbacks: BTreeMap::new(),
            events: 0,
            renewals: 0,
            liveness: false,
            healthy: BTreeSet::new(),
            misrouted: BTreeMap::new(),
            adversary: usize::MAX,
            touched_nodes: Vec::new(),
            touched_landlords: Vec::new(),
            newly_acked: Vec::new(),
        }
    }

    /// Records the first failure.
    pub fn fail(&mut self, check: Check, message: String) {
        if self.failure.is_none() {
            self.trace(|| format!("FAILED {}: {message}", check.name()));
            self.failure = Some(Failure { check, message, at: self.real });
        }
    }

    /// Adds a trace line (formatted only when tracing).
    pub fn trace(&mut self, line: impl FnOnce() -> String) {
        if let Some(t) = &mut self.trace {
            if t.len() == self.trace_cap {
                t.pop_front();
            }
            t.push_back(format!("{:>10} {}", self.real, line()));
            if self.live {
                eprintln!("{}", t.back().expect("pushed"));
            }
        }
    }

    /// The trace lines kept.
    pub fn trace_lines(&self) -> Vec<String> {
        self.trace.iter().flatten().cloned().collect()
    }

    fn issued_by(&self, cookie: Cookie, landlord: LandlordId) -> bool {
        self.issued.get(&cookie).is_some_and(|v| v.contains(&landlord))
    }

    fn ack(&mut self, to: NodeId, reply: &Reply) {
        if let Some(ps) = self.promises.remove(&(to, reply.landlord, reply.id)) {
            for p in ps {
                self.newly_acked.push((reply.landlord, p.cookie));
                let e = self.acked.entry((reply.landlord, p.cookie)).or_insert(p);
                if p.op > e.op {
                    *e = p;
                }
            }
        }
    }
}

/// Host bookkeeping made durable with the state: an operation counter and, per lease, the
/// last operation that changed it (to tell a lost acknowledged change from a later one).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Meta {
    /// Operations so far.
    pub op: u64,
    /// Last operation per live lease.
    pub last_op: BTreeMap<Cookie, u64>,
}

impl Meta {
    fn bump(&mut self, cookie: Cookie) -> u64 {
        self.op += 1;
        self.last_op.insert(cookie, self.op);
        self.op
    }
}

/// A uniform draw in [0, 1).
pub fn unit(rng: &mut ChaCha12Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// A uniform draw in `lo..=hi`.
pub fn range(rng: &mut ChaCha12Rng, lo: i64, hi: i64) -> i64 {
    if hi <= lo {
        return lo;
    }
    lo + (rng.next_u64() % ((hi - lo) as u64 + 1)) as i64
}

/// The cookies a request names.
pub fn named(request: &Request) -> Vec<Cookie> {
    match &request.body {
        RequestBody::Renew { cookie, .. } | RequestBody::Cancel { cookie } => vec![*cookie],
        RequestBody::RenewAll { items } => items.iter().map(|(c, _)| *c).collect(),
        RequestBody::CancelAll { cookies } => cookies.clone(),
        RequestBody::Grant { .. } => Vec::new(),
    }
}

fn short(c: Cookie) -> String {
    format!("{:08x}", c.0 as u32 ^ (c.0 >> 96) as u32)
}

/// One line about a message, for traces.
pub fn describe(m: &Message) -> String {
    match m {
        Message::Request(r) => {
            let what = match &r.body {
                RequestBody::Grant { duration, .. } => format!("grant {duration}"),
                RequestBody::Renew { cookie, duration } => {
                    format!("renew {} {duration}", short(*cookie))
                }
                RequestBody::Cancel { cookie } => format!("cancel {}", short(*cookie)),
                RequestBody::RenewAll { items } => format!(
                    "renew_all [{}]",
                    items
                        .iter()
                        .map(|(c, d)| format!("{} {d}", short(*c)))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                RequestBody::CancelAll { cookies } => format!(
                    "cancel_all [{}]",
                    cookies.iter().map(|c| short(*c)).collect::<Vec<_>>().join(", ")
                ),
            };
            format!("request #{} {what}", r.id)
        }
        Message::Reply(r) => {
            let what = match &r.body {
                ReplyBody::Granted { cookie, duration } => {
                    format!("granted {} {duration}", short(*cookie))
                }
                ReplyBody::Renewed { duration } => format!("renewed {duration}"),
                ReplyBody::Cancelled => "cancelled".into(),
                ReplyBody::RenewedAll { results } => format!(
                    "renewed_all [{}]",
                    results
                        .iter()
                        .map(|o| match o {
                            Outcome::Ok(d) => d.to_string(),
                            Outcome::Err(e) => format!("error {}", e.code),
                        })
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                ReplyBody::CancelledAll { results } => {
                    format!("cancelled_all ({} results)", results.len())
                }
                ReplyBody::Error(e) => format!("error {} {}", e.code, e.message),
            };
            format!("reply #{} from {} {what}", r.id, r.landlord)
        }
    }
}

/// What a held reply does to the books when it is released.
#[derive(Debug, Clone, Copy)]
enum Effect {
    /// The lease is honoured until this expiration.
    Promise(Promise),
    /// The landlord answered for the lease with success.
    Honoured(Cookie),
    /// The landlord said the lease is gone.
    Gone(Cookie),
}

struct Held {
    /// The reply (none for an expiry, which only tells the books).
    out: Option<Outgoing>,
    to: NodeId,
    id: u64,
    effects: Vec<Effect>,
}

/// Group commit and release of held replies, shared by landlord and service hosts.
struct Releaser {
    held: Vec<Held>,
    outbox: VecDeque<Outgoing>,
    commit_at: Option<Millis>,
    dirty: bool,
    rng: ChaCha12Rng,
    /// Probability of duplicating a released reply.
    dup: f64,
    /// Probability that a change is committed at once (else within `commit_delay`).
    sync_commit: f64,
    commit_delay: Millis,
    last_request: BTreeMap<NodeId, u64>,
}

impl Releaser {
    fn new(rng: ChaCha12Rng, dup: f64, sync_commit: f64, commit_delay: Millis) -> Releaser {
        Releaser {
            held: Vec::new(),
            outbox: VecDeque::new(),
            commit_at: None,
            dirty: false,
            rng,
            dup,
            sync_commit,
            commit_delay: commit_delay.max(1),
            last_request: BTreeMap::new(),
        }
    }

    fn note_request(&mut self, from: NodeId, id: u64, ctx: &Shared) {
        let last = self.last_request.entry(from).or_insert(0);
        if id < *last {
            ctx.borrow_mut().faults.reordered += 1;
        } else {
            *last = id;
        }
    }

    /// After a change: commit now, or schedule a commit.
    fn wants_commit(&mut self, now: Millis) -> bool {
        if !self.dirty {
            return !self.held.is_empty();
        }
        if unit(&mut self.rng) < self.sync_commit {
            return true;
        }
        if self.commit_at.is_none() {
            self.commit_at = Some(now + range(&mut self.rng, 1, self.commit_delay));
        }
        false
    }

    /// Releases every held reply (their changes are now durable).
    fn release(&mut self, landlord: LandlordId, clock: Clock, grace: Millis, ctx: &Shared) {
        self.dirty = false;
        self.commit_at = None;
        let mut c = ctx.borrow_mut();
        for h in self.held.drain(..) {
            for e in h.effects {
                match e {
                    Effect::Promise(mut p) => {
                        p.made = c.real;
                        p.until_real = if p.expiration >= FOREVER - 1 - grace {
                            None
                        } else {
                            clock.real_at(p.expiration + grace + 1)
                        };
                        c.promises.entry((h.to, landlord, h.id)).or_default().push(p);
                    }
                    Effect::Honoured(cookie) => {
                        if let Some(at) = c.gone.get(&landlord).and_then(|g| g.get(&cookie)) {
                            let at = *at;
                            c.fail(
                                Check::ComesBack,
                                format!(
                                    "landlord {landlord} answers for lease {cookie} (request #{} \
                                     of node {}), which it said was gone at {at}",
                                    h.id, h.to
                                ),
                            );
                        }
                        let meant = if h.to == c.adversary { c.misrouted.get(&h.id) } else { None };
                        if let Some(&meant) = meant.filter(|m| **m != landlord) {
                            if c.issued_by(cookie, meant) {
                                let both = c.issued_by(cookie, landlord);
                                c.fail(
                                    Check::Cookie,
                                    format!(
                                        "landlord {landlord} honours cookie {cookie} of landlord \
                                         {meant} (a request meant for {meant}, misrouted){}",
                                        if both {
                                            "; both landlords issued this very cookie"
                                        } else {
                                            ""
                                        }
                                    ),
                                );
                            }
                        }
                        if !c.issued_by(cookie, landlord) {
                            let others = c.issued.get(&cookie).cloned().unwrap_or_default();
                            c.fail(
                                Check::Cookie,
                                format!(
                                    "landlord {landlord} honours cookie {cookie}, which it never \
                                     issued (issued by {others:?}; request #{} of node {})",
                                    h.id, h.to
                                ),
                            );
                        }
                    }
                    Effect::Gone(cookie) => {
                        if c.issued_by(cookie, landlord) {
                            let real = c.real;
                            c.gone.entry(landlord).or_default().entry(cookie).or_insert(real);
                            c.acked.remove(&(landlord, cookie));
                        }
                    }
                }
            }
            let Some(out) = h.out else { continue };
            if unit(&mut self.rng) < self.dup {
                c.faults.duplicated += 1;
                self.outbox.push_back(out.clone());
            }
            self.outbox.push_back(out);
        }
    }

    /// The host's clock stepped by `delta`: its commit timer is monotonic, so it keeps its
    /// distance from now.
    fn clock_stepped(&mut self, delta: Millis) {
        if let Some(t) = &mut self.commit_at {
            *t = t.saturating_add(delta);
        }
    }

    fn crash(&mut self) {
        self.held.clear();
        self.outbox.clear();
        self.commit_at = None;
        self.dirty = false;
    }
}

/// The effects of answering `req` with `reply`, and whether the landlord changed.
fn effects(
    req: &Request,
    reply: &Reply,
    meta: &mut Meta,
    expiration: impl Fn(Cookie) -> Option<Millis>,
) -> (Vec<Effect>, bool) {
    let mut out = Vec::new();
    let mut changed = false;
    let unknown = |e: &leasehold::wire::WireError| e.code == ErrorCode::UnknownLease as i32;
    let mut renewed = |c: Cookie, out: &mut Vec<Effect>, changed: &mut bool| {
        let op = meta.bump(c);
        *changed = true;
        out.push(Effect::Honoured(c));
        if let Some(exp) = expiration(c) {
            out.push(Effect::Promise(Promise {
                cookie: c,
                expiration: exp,
                op,
                until_real: None,
                made: 0,
            }));
        }
    };
    match (&req.body, &reply.body) {
        (RequestBody::Grant { .. }, ReplyBody::Granted { cookie, .. }) => {
            let op = meta.bump(*cookie);
            changed = true;
            if let Some(exp) = expiration(*cookie) {
                out.push(Effect::Promise(Promise {
                    cookie: *cookie,
                    expiration: exp,
                    op,
                    until_real: None,
                    made: 0,
                }));
            }
        }
        (RequestBody::Renew { cookie, .. }, ReplyBody::Renewed { .. }) => {
            renewed(*cookie, &mut out, &mut changed)
        }
        (
            RequestBody::Renew { cookie, .. } | RequestBody::Cancel { cookie },
            ReplyBody::Error(e),
        ) if unknown(e) => out.push(Effect::Gone(*cookie)),
        (RequestBody::Cancel { cookie }, ReplyBody::Cancelled) => {
            meta.op += 1;
            meta.last_op.remove(cookie);
            changed = true;
            out.push(Effect::Honoured(*cookie));
            out.push(Effect::Gone(*cookie));
        }
        (RequestBody::RenewAll { items }, ReplyBody::RenewedAll { results }) => {
            for ((c, _), r) in items.iter().zip(results) {
                match r {
                    Outcome::Ok(_) => renewed(*c, &mut out, &mut changed),
                    Outcome::Err(e) if unknown(e) => out.push(Effect::Gone(*c)),
                    Outcome::Err(_) => {}
                }
            }
        }
        (RequestBody::CancelAll { cookies }, ReplyBody::CancelledAll { results }) => {
            for (c, r) in cookies.iter().zip(results) {
                match r {
                    Outcome::Ok(()) => {
                        meta.op += 1;
                        meta.last_op.remove(c);
                        changed = true;
                        out.push(Effect::Honoured(*c));
                        out.push(Effect::Gone(*c));
                    }
                    Outcome::Err(e) if unknown(e) => out.push(Effect::Gone(*c)),
                    Outcome::Err(_) => {}
                }
            }
        }
        _ => {}
    }
    (out, changed)
}

/// A node running a landlord, with durable commits, crashes and restores.
pub struct LandlordHost {
    /// Its clock (kept in step with the network's by the simulator).
    pub clock: Clock,
    /// The landlord id.
    pub id: LandlordId,
    /// The policy, as data (a restore builds it again).
    pub policy: PolicySpec,
    /// The landlord; `None` while crashed.
    pub ll: Option<leasehold::Landlord<Vec<u8>>>,
    /// What survives a crash.
    pub store: Box<dyn LandlordStore>,
    /// Bookkeeping, durable with the state.
    pub meta: Meta,
    /// The landlord as it was at a crash right after a commit: it never crashed, and must keep
    /// answering exactly as the restored one does.
    pub twin: Option<leasehold::Landlord<Vec<u8>>>,
    /// How restores count time.
    pub mode: RestoreMode,
    /// How late the host's expiry timer fires.
    pub timer_lag: Millis,
    twin_on: bool,
    rel: Releaser,
    twin_diff: BTreeMap<(Cookie, Millis), i32>,
    ctx: Shared,
}

impl LandlordHost {
    /// A host for a new landlord.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        clock: Clock,
        config: LandlordConfig,
        policy: PolicySpec,
        mode: RestoreMode,
        twin_on: bool,
        rng: ChaCha12Rng,
        dup: f64,
        sync_commit: f64,
        commit_delay: Millis,
        ctx: Shared,
    ) -> LandlordHost {
        let id = config.id;
        let ll = leasehold::Landlord::new(config, policy.build().expect("valid policy"));
        let meta = Meta::default();
        let now = clock.local(0);
        let store = Box::new(crate::durable::SnapshotStore::new(&ll, &meta, now));
        LandlordHost {
            clock,
            id,
            policy,
            ll: Some(ll),
            store,
            meta,
            twin: None,
            mode,
            timer_lag: 0,
            twin_on,
            rel: Releaser::new(rng, dup, sync_commit, commit_delay),
            twin_diff: BTreeMap::new(),
            ctx,
        }
    }

    /// Sets the probability of duplicating replies.
    pub fn set_dup(&mut self, dup: f64) {
        self.rel.dup = dup;
    }

    /// The clock stepped (host timers are monotonic).
    pub fn clock_stepped(&mut self, delta: Millis) {
        self.rel.clock_stepped(delta);
    }

    /// The expiration of a lease honoured at `now`, if it is.
    pub fn honoured(&self, cookie: Cookie, now: Millis) -> Option<Millis> {
        self.ll.as_ref()?.get(cookie, now).map(|(e, _)| e)
    }

    /// Grace after expiry.
    pub fn grace(&self) -> Millis {
        self.ll.as_ref().map_or(0, |l| l.config().grace.max(0))
    }

    /// Commits: snapshot, then release what was held.
    pub fn commit(&mut self, now: Millis) {
        let Some(ll) = &self.ll else { return };
        self.store.commit(ll, &self.meta, now);
        let grace = self.grace();
        self.rel.release(self.id, self.clock, grace, &self.ctx);
    }

    fn after_change(&mut self, now: Millis) {
        if self.rel.wants_commit(now) {
            self.commit(now);
        }
    }

    fn take_expired(&mut self, now: Millis) {
        let Some(ll) = &mut self.ll else { return };
        while let Some(e) = ll.poll_expired() {
            self.meta.last_op.remove(&e.cookie);
            // In order with the replies: an expiry is said (and durable) at the next commit.
            self.rel.held.push(Held {
                out: None,
                to: usize::MAX,
                id: 0,
                effects: vec![Effect::Gone(e.cookie)],
            });
            self.rel.dirty = true;
            if self.twin.is_some() {
                *self.twin_diff.entry((e.cookie, e.expiration)).or_insert(0) += 1;
            }
        }
        let Some(tw) = &mut self.twin else { return };
        while let Some(e) = tw.poll_expired() {
            *self.twin_diff.entry((e.cookie, e.expiration)).or_insert(0) -= 1;
        }
        self.twin_diff.retain(|_, v| *v != 0);
        // Expiry work may be spread over calls (the per-call budget): compare once both are done.
        let idle = |t: Option<Millis>| !matches!(t, Some(t) if t <= now);
        if !self.twin_diff.is_empty() && idle(ll.poll_timeout()) && idle(tw.poll_timeout()) {
            let msg = format!(
                "after a restore landlord {} expires differently from the landlord that never \
                 crashed: (cookie, expiration) -> +1 restored only, -1 original only: {:?}",
                self.id, self.twin_diff
            );
            self.ctx.borrow_mut().fail(Check::Twin, msg);
        }
    }

    /// Crashes the host. With `at_commit`, it commits first (a snapshot at the crash moment).
    pub fn crash(&mut self, at_commit: bool, now: Millis) {
        if self.ll.is_none() {
            return;
        }
        if at_commit {
            self.commit(now);
        }
        let old = self.ll.take();
        self.twin = if at_commit && self.twin_on && self.mode == RestoreMode::Absolute {
            old
        } else {
            None
        };
        self.twin_diff.clear();
        self.rel.crash();
        let (id, twin) = (self.id, self.twin.is_some());
        self.ctx.borrow_mut().trace(|| {
            format!("landlord {id} crashes{}", if twin { " right after a commit" } else { "" })
        });
    }

    /// Restores the host from its store.
    pub fn recover(&mut self, now: Millis) {
        let policy = self.policy.build().expect("valid policy");
        match self.store.recover(policy, now, self.mode) {
            Ok((ll, meta)) => {
                self.ll = Some(ll);
                self.meta = meta;
                if let Some(tw) = &mut self.twin {
                    tw.handle_timeout(now);
                }
                let id = self.id;
                self.ctx.borrow_mut().trace(|| format!("landlord {id} restored at local {now}"));
                self.take_expired(now);
                if self.rel.dirty {
                    self.commit(now);
                }
            }
            Err(e) => {
                let msg = format!("landlord {} could not restore its last commit: {e}", self.id);
                self.ctx.borrow_mut().fail(Check::Restore, msg);
            }
        }
    }
}

impl Actor for LandlordHost {
    fn poll_timeout(&self) -> Option<Millis> {
        let ll = self.ll.as_ref()?;
        // The host's expiry timer fires `timer_lag` late (a busy host): expired leases then
        // wait a while to be swept, and are answered "unknown" meanwhile.
        let expiry = ll.poll_timeout().map(|t| t.saturating_add(self.timer_lag));
        [expiry, self.rel.commit_at].into_iter().flatten().min()
    }

    fn handle_timeout(&mut self, now: Millis) {
        self.ctx.borrow_mut().touched_landlords.push(self.id);
        let Some(ll) = &mut self.ll else { return };
        ll.handle_timeout(now);
        if let Some(tw) = &mut self.twin {
            tw.handle_timeout(now);
        }
        self.take_expired(now);
        if self.rel.commit_at.is_some_and(|t| t <= now) {
            self.commit(now);
        } else {
            self.after_change(now);
        }
    }

    fn poll_outgoing(&mut self, _now: Millis) -> Option<Outgoing> {
        self.rel.outbox.pop_front()
    }

    fn handle_message(&mut self, from: NodeId, message: Message, now: Millis) {
        let Message::Request(req) = message else { return };
        let id = self.id;
        self.ctx.borrow_mut().touched_landlords.push(id);
        let Some(ll) = &mut self.ll else {
            self.ctx.borrow_mut().trace(|| format!("landlord {id} is down: drops request"));
            return;
        };
        self.rel.note_request(from, req.id, &self.ctx);
        let reply = ll.handle_request(&req, now);
        if let Some(tw) = &mut self.twin {
            let twin_reply = tw.handle_request(&req, now);
            if twin_reply.encode(Encoding::Binary) != reply.encode(Encoding::Binary) {
                let msg = format!(
                    "after a restore landlord {id} answers {} to {}; the landlord that never \
                     crashed answers {}",
                    describe(&Message::Reply(reply.clone())),
                    describe(&Message::Request(req.clone())),
                    describe(&Message::Reply(twin_reply))
                );
                self.ctx.borrow_mut().fail(Check::Twin, msg);
            }
        }
        let (effects, changed) =
            effects(&req, &reply, &mut self.meta, |c| ll.get(c, now).map(|(e, _)| e));
        if let ReplyBody::Granted { cookie, .. } = &reply.body {
            let mut c = self.ctx.borrow_mut();
            let v = c.issued.entry(*cookie).or_default();
            if !v.contains(&id) {
                v.push(id);
            }
        }
        {
            let (r, q) = (Message::Reply(reply.clone()), Message::Request(req.clone()));
            self.ctx.borrow_mut().trace(|| {
                format!(
                    "landlord {id} (local {now}) node {from} {} -> {}",
                    describe(&q),
                    describe(&r)
                )
            });
        }
        self.rel.dirty |= changed;
        self.rel.held.push(Held {
            out: Some(Outgoing { to: Address::Node(from), message: Message::Reply(reply) }),
            to: from,
            id: req.id,
            effects,
        });
        self.after_change(now);
    }

    fn landlord_id(&self) -> Option<LandlordId> {
        Some(self.id)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// What a renewer sent, so a reply can be matched to the leases it changes.
struct Sent {
    landlord: LandlordId,
    cookies: Vec<Cookie>,
    real: Millis,
}

/// Books of a renewer (holder or service): send times, and the real time of the request
/// behind each lease's current local expiration.
#[derive(Default)]
pub struct Tap {
    sent: BTreeMap<u64, Sent>,
    /// (landlord, cookie) -> real send time of the request that set the current expiration.
    pub established: BTreeMap<(LandlordId, Cookie), Millis>,
    /// The last requests sent, for the adversary to replay elsewhere.
    pub recent: VecDeque<(LandlordId, Request)>,
}

impl Tap {
    fn on_send(&mut self, t: &Transmit, real: Millis) {
        self.sent
            .insert(t.request.id, Sent { landlord: t.landlord, cookies: named(&t.request), real });
        while self.sent.len() > 512 {
            self.sent.pop_first();
        }
        self.recent.push_back((t.landlord, t.request.clone()));
        if self.recent.len() > 16 {
            self.recent.pop_front();
        }
    }

    fn before(
        &self,
        reply: &Reply,
        exp: impl Fn(LandlordId, Cookie) -> Option<Millis>,
    ) -> Vec<(LandlordId, Cookie, Option<Millis>)> {
        match self.sent.get(&reply.id) {
            Some(s) if s.landlord == reply.landlord => {
                s.cookies.iter().map(|c| (s.landlord, *c, exp(s.landlord, *c))).collect()
            }
            _ => Vec::new(),
        }
    }

    fn after(
        &mut self,
        reply: &Reply,
        before: Vec<(LandlordId, Cookie, Option<Millis>)>,
        exp: impl Fn(LandlordId, Cookie) -> Option<Millis>,
    ) {
        let Some(real) = self.sent.get(&reply.id).map(|s| s.real) else { return };
        for (l, c, old) in before {
            let new = exp(l, c);
            if new.is_some() && new != old {
                self.established.insert((l, c), real);
            }
        }
    }

    /// The recent requests sent.
    pub fn recent(&self) -> &VecDeque<(LandlordId, Request)> {
        &self.recent
    }

    /// The ids of requests sent recently, with their landlord.
    pub fn recent_ids(&self) -> Vec<(u64, LandlordId)> {
        self.sent.iter().rev().take(8).map(|(id, s)| (*id, s.landlord)).collect()
    }
}

/// How long a holder keeps a lease it asks for.
#[derive(Debug, Clone, Copy)]
pub enum Hold {
    /// For this long from the grant.
    For(i64),
}

struct PendingGrant {
    landlord: LandlordId,
    request: Request,
    hold: Hold,
    renew: i64,
    sent: Option<(Millis, Millis)>,
}

/// A node running a renewal manager; it also asks landlords for new leases.
pub struct HolderHost {
    /// This node.
    pub node: NodeId,
    /// Its clock (kept in step by the simulator).
    pub clock: Clock,
    /// The manager.
    pub manager: RenewalManager,
    /// Send and establish times.
    pub tap: Tap,
    /// Leases that failed (real time, lease).
    pub failed: Vec<(Millis, Lease)>,
    grants: BTreeMap<u64, PendingGrant>,
    queued: VecDeque<u64>,
    next_grant: u64,
    extra: VecDeque<Outgoing>,
    rng: ChaCha12Rng,
    dup: f64,
    ctx: Shared,
}

impl HolderHost {
    /// A holder host.
    pub fn new(
        node: NodeId,
        clock: Clock,
        manager: RenewalManager,
        rng: ChaCha12Rng,
        dup: f64,
        ctx: Shared,
    ) -> HolderHost {
        HolderHost {
            node,
            clock,
            manager,
            tap: Tap::default(),
            failed: Vec::new(),
            grants: BTreeMap::new(),
            queued: VecDeque::new(),
            next_grant: 1 << 62,
            extra: VecDeque::new(),
            rng,
            dup,
            ctx,
        }
    }

    /// Sets the probability of duplicating requests.
    pub fn set_dup(&mut self, dup: f64) {
        self.dup = dup;
    }

    /// Asks `landlord` for a lease.
    pub fn request_grant(&mut self, landlord: LandlordId, duration: i64, hold: Hold, renew: i64) {
        let id = self.next_grant;
        self.next_grant += 1;
        let request = holder::grant_request(id, format!("r{id}").into_bytes(), duration);
        self.grants.insert(id, PendingGrant { landlord, request, hold, renew, sent: None });
        self.queued.push_back(id);
    }

    fn real(&self, now: Millis) -> Millis {
        self.clock.real_at(now).unwrap_or(0)
    }

    fn send(&mut self, t: Transmit, now: Millis) -> Outgoing {
        let real = self.real(now);
        self.tap.on_send(&t, real);
        let out =
            Outgoing { to: Address::Landlord(t.landlord), message: Message::Request(t.request) };
        if unit(&mut self.rng) < self.dup {
            self.ctx.borrow_mut().faults.duplicated += 1;
            self.extra.push_back(out.clone());
        }
        out
    }

    fn drain(&mut self, now: Millis) {
        while let Some(e) = self.manager.poll_event() {
            let real = self.real(now);
            match e {
                RenewalEvent::Renewed { .. } => self.ctx.borrow_mut().renewals += 1,
                RenewalEvent::RenewalFailed { lease, error, .. } => {
                    self.failed.push((real, lease));
                    let key = (self.node, lease.landlord(), lease.cookie());
                    let mut c = self.ctx.borrow_mut();
                    let node = self.node;
                    c.trace(|| format!("holder {node} lost lease {} ({error:?})", lease.cookie()));
                    if c.liveness && c.healthy.contains(&key) {
                        c.fail(
                            Check::Liveness,
                            format!(
                                "holder {} lost lease {} of landlord {} while faults had \
                                 stopped: {error:?}",
                                self.node,
                                lease.cookie(),
                                lease.landlord()
                            ),
                        );
                    }
                    c.healthy.remove(&key);
                }
                RenewalEvent::DesiredExpirationReached { lease, .. } => {
                    let key = (self.node, lease.landlord(), lease.cookie());
                    self.ctx.borrow_mut().healthy.remove(&key);
                }
            }
        }
    }

    fn handle_grant(&mut self, reply: &Reply, now: Millis) -> bool {
        let Some(g) = self.grants.get(&reply.id) else { return false };
        let Some((sent_local, sent_real)) = g.sent else { return false };
        if reply.landlord != g.landlord {
            return false;
        }
        let g = self.grants.remove(&reply.id).expect("checked");
        let drift = self.manager.config().max_clock_drift_ppm;
        if let Ok(lease) = holder::lease_from_reply_with_drift(reply, sent_local, drift) {
            let Hold::For(d) = g.hold;
            if self.manager.renew_for(lease, d, g.renew, now).is_ok() {
                self.tap.established.insert((lease.landlord(), lease.cookie()), sent_real);
            }
        }
        true
    }
}

impl Actor for HolderHost {
    fn poll_timeout(&self) -> Option<Millis> {
        self.manager.poll_timeout()
    }
    fn handle_timeout(&mut self, now: Millis) {
        self.ctx.borrow_mut().touched_nodes.push(self.node);
        self.manager.handle_timeout(now);
        self.drain(now);
    }
    fn poll_outgoing(&mut self, now: Millis) -> Option<Outgoing> {
        if let Some(o) = self.extra.pop_front() {
            return Some(o);
        }
        if let Some(id) = self.queued.pop_front() {
            let real = self.real(now);
            if let Some(g) = self.grants.get_mut(&id) {
                g.sent = Some((now, real));
                let t = Transmit { landlord: g.landlord, request: g.request.clone() };
                return Some(self.send(t, now));
            }
        }
        let t = self.manager.poll_transmit(now)?;
        Some(self.send(t, now))
    }
    fn handle_message(&mut self, from: NodeId, message: Message, now: Millis) {
        let Message::Reply(reply) = message else { return };
        {
            let node = self.node;
            let mut c = self.ctx.borrow_mut();
            c.touched_nodes.push(node);
            c.ack(node, &reply);
            let m = Message::Reply(reply.clone());
            c.trace(|| format!("holder {node} (local {now}) from node {from}: {}", describe(&m)));
        }
        if !self.handle_grant(&reply, now) {
            let m = &self.manager;
            let exp = |l, c| m.lease(&Lease::new(l, c, 0)).map(|x| x.expiration());
            let before = self.tap.before(&reply, exp);
            self.manager.handle_reply(&reply, now);
            let m = &self.manager;
            let exp = |l, c| m.lease(&Lease::new(l, c, 0)).map(|x| x.expiration());
            self.tap.after(&reply, before, exp);
        }
        self.drain(now);
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// A node running the renewal service: a landlord of set leases and a renewer of client leases.
pub struct ServiceHost {
    /// This node.
    pub node: NodeId,
    /// Its clock (kept in step by the simulator).
    pub clock: Clock,
    /// The service's landlord id.
    pub id: LandlordId,
    /// Its configuration (a restore needs it again).
    pub config: RenewalServiceConfig,
    /// The service; `None` while crashed.
    pub svc: Option<RenewalService>,
    /// What survives a crash.
    pub store: Box<dyn ServiceStore>,
    /// Bookkeeping, durable with the state.
    pub meta: Meta,
    /// Send and establish times of client-lease renewals.
    pub tap: Tap,
    /// Whether events go out at once rather than at the next commit.
    pub eager_events: bool,
    /// Whether a restore starts request ids afresh (steering around a known bug).
    pub fresh_ids: bool,
    restores: u64,
    rel: Releaser,
    extra: VecDeque<Outgoing>,
    ctx: Shared,
}

impl ServiceHost {
    /// A host for a new service.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        node: NodeId,
        clock: Clock,
        config: RenewalServiceConfig,
        rng: ChaCha12Rng,
        dup: f64,
        sync_commit: f64,
        commit_delay: Millis,
        ctx: Shared,
    ) -> ServiceHost {
        let svc = RenewalService::new(config.clone()).expect("valid service config");
        let meta = Meta::default();
        let store =
            Box::new(crate::durable::ServiceSnapshotStore::new(&svc, &meta, clock.local(0)));
        ServiceHost {
            node,
            clock,
            id: config.landlord.id,
            config,
            svc: Some(svc),
            store,
            meta,
            tap: Tap::default(),
            eager_events: false,
            fresh_ids: false,
            restores: 0,
            rel: Releaser::new(rng, dup, sync_commit, commit_delay),
            extra: VecDeque::new(),
            ctx,
        }
    }

    /// Sets the probability of duplicating messages.
    pub fn set_dup(&mut self, dup: f64) {
        self.rel.dup = dup;
    }

    /// The clock stepped (host timers are monotonic).
    pub fn clock_stepped(&mut self, delta: Millis) {
        self.rel.clock_stepped(delta);
    }

    fn real(&self, now: Millis) -> Millis {
        self.clock.real_at(now).unwrap_or(0)
    }

    /// The expiration of a set lease honoured at `now`, if it is.
    pub fn honoured(&self, cookie: Cookie, now: Millis) -> Option<Millis> {
        let svc = self.svc.as_ref()?;
        let set = svc.set_of(&Lease::new(self.id, cookie, 0), now)?;
        svc.set_lease(set, now).map(|l| l.expiration())
    }

    /// Grace after expiry of set leases.
    pub fn grace(&self) -> Millis {
        self.config.landlord.grace.max(0)
    }

    /// Runs a client's management call on the service and commits it before answering.
    pub fn manage<T>(
        &mut self,
        now: Millis,
        f: impl FnOnce(&mut RenewalService, &Shared) -> T,
    ) -> Option<T> {
        let svc = self.svc.as_mut()?;
        let t = f(svc, &self.ctx);
        self.rel.dirty = true;
        self.commit(now);
        Some(t)
    }

    /// Hands out the service's events (to their listeners; the books check them).
    fn emit_events(&mut self) {
        let Some(svc) = &mut self.svc else { return };
        let mut c = self.ctx.borrow_mut();
        while let Some(e) = svc.poll_event() {
            c.events += 1;
            let key = (self.id, e.event_id);
            if let Some(last) = c.seqs.get(&key).copied() {
                if e.sequence <= last {
                    c.fail(
                        Check::Sequence,
                        format!(
                            "service {} event registration {}: sequence number {} after {last}",
                            self.id, e.event_id, e.sequence
                        ),
                    );
                }
            }
            c.seqs.insert(key, e.sequence);
            if let Some(h) = c.handbacks.get(&key).cloned() {
                if h != e.handback {
                    c.fail(
                        Check::Sequence,
                        format!(
                            "service {} event registration {}: handback {:?}, registered {h:?}",
                            self.id, e.event_id, e.handback
                        ),
                    );
                }
            }
            if let SetEventKind::RenewalFailure { lease, error, set } = &e.kind {
                let key = (self.node, lease.landlord(), lease.cookie());
                c.trace(|| {
                    format!("service: {set} lost client lease {} ({error:?})", lease.cookie())
                });
                if c.liveness && c.healthy.contains(&key) {
                    c.fail(
                        Check::Liveness,
                        format!(
                            "the renewal service lost client lease {} of landlord {} ({set}) \
                             while faults had stopped: {error:?}",
                            lease.cookie(),
                            lease.landlord()
                        ),
                    );
                }
                c.healthy.remove(&key);
            }
        }
    }

    /// Commits: events out (unless already handed out eagerly), snapshot, then release what
    /// was held.
    pub fn commit(&mut self, now: Millis) {
        self.emit_events();
        let Some(svc) = &mut self.svc else { return };
        self.store.commit(svc, &self.meta, now);
        let grace = self.grace();
        self.rel.release(self.id, self.clock, grace, &self.ctx);
    }

    fn after_change(&mut self, now: Millis) {
        self.rel.dirty = true;
        if self.eager_events {
            // Events are notifications: many hosts send them at once, before the change behind
            // them is durable. Then only the restore jump keeps their numbers increasing.
            self.emit_events();
        }
        if self.rel.wants_commit(now) {
            self.commit(now);
        }
    }

    /// Crashes the service. With `at_commit`, it commits first.
    pub fn crash(&mut self, at_commit: bool, now: Millis) {
        if self.svc.is_none() {
            return;
        }
        if at_commit {
            self.commit(now);
        }
        self.svc = None;
        self.rel.crash();
        self.extra.clear();
        let id = self.id;
        self.ctx.borrow_mut().trace(|| format!("service {id} crashes"));
    }

    /// Restores the service from its store.
    pub fn recover(&mut self, now: Millis) {
        self.restores += 1;
        let mut config = self.config.clone();
        if self.fresh_ids {
            // Steering around a known bug: a restored service starts its request ids where
            // the first one did, so replies to requests sent before the crash match new ones.
            config.manager.first_request_id += self.restores << 32;
        }
        match self.store.recover(config, now) {
            Ok((svc, meta)) => {
                self.svc = Some(svc);
                self.meta = meta;
                // The restored beliefs may be older than the ones last established: count them
                // as established at time 0 (any unsafe clock step since then excuses them).
                self.tap.established.clear();
                let id = self.id;
                self.ctx.borrow_mut().trace(|| format!("service {id} restored at local {now}"));
                self.rel.dirty = true;
                self.commit(now);
            }
            Err(e) => {
                let msg = format!("service {} could not restore its last commit: {e}", self.id);
                self.ctx.borrow_mut().fail(Check::Restore, msg);
            }
        }
    }
}

impl Actor for ServiceHost {
    fn poll_timeout(&self) -> Option<Millis> {
        let svc = self.svc.as_ref()?;
        [svc.poll_timeout(), self.rel.commit_at].into_iter().flatten().min()
    }

    fn handle_timeout(&mut self, now: Millis) {
        {
            let mut c = self.ctx.borrow_mut();
            c.touched_nodes.push(self.node);
            c.touched_landlords.push(self.id);
        }
        let Some(svc) = &mut self.svc else { return };
        svc.handle_timeout(now);
        if self.rel.commit_at.is_some_and(|t| t <= now) {
            self.commit(now);
        } else {
            self.after_change(now);
        }
    }

    fn poll_outgoing(&mut self, now: Millis) -> Option<Outgoing> {
        if let Some(o) = self.rel.outbox.pop_front() {
            return Some(o);
        }
        if let Some(o) = self.extra.pop_front() {
            return Some(o);
        }
        let t = self.svc.as_mut()?.poll_transmit(now)?;
        let real = self.real(now);
        self.tap.on_send(&t, real);
        let out =
            Outgoing { to: Address::Landlord(t.landlord), message: Message::Request(t.request) };
        if unit(&mut self.rel.rng) < self.rel.dup {
            self.ctx.borrow_mut().faults.duplicated += 1;
            self.extra.push_back(out.clone());
        }
        Some(out)
    }

    fn handle_message(&mut self, from: NodeId, message: Message, now: Millis) {
        let id = self.id;
        {
            let mut c = self.ctx.borrow_mut();
            c.touched_nodes.push(self.node);
            c.touched_landlords.push(id);
        }
        let Some(svc) = &mut self.svc else {
            self.ctx.borrow_mut().trace(|| format!("service {id} is down: drops a message"));
            return;
        };
        match message {
            Message::Request(req) => {
                self.rel.note_request(from, req.id, &self.ctx);
                let reply = svc.handle_request(&req, now);
                let svc_ref = &*svc;
                let (effects, _) = effects(&req, &reply, &mut self.meta, |c| {
                    let set = svc_ref.set_of(&Lease::new(id, c, 0), now)?;
                    svc_ref.set_lease(set, now).map(|l| l.expiration())
                });
                {
                    let (r, q) = (Message::Reply(reply.clone()), Message::Request(req.clone()));
                    self.ctx.borrow_mut().trace(|| {
                        format!(
                            "service {id} (local {now}) node {from} {} -> {}",
                            describe(&q),
                            describe(&r)
                        )
                    });
                }
                self.rel.held.push(Held {
                    out: Some(Outgoing { to: Address::Node(from), message: Message::Reply(reply) }),
                    to: from,
                    id: req.id,
                    effects,
                });
            }
            Message::Reply(reply) => {
                {
                    let node = self.node;
                    let mut c = self.ctx.borrow_mut();
                    c.ack(node, &reply);
                    let m = Message::Reply(reply.clone());
                    c.trace(|| {
                        format!("service {id} (local {now}) from node {from}: {}", describe(&m))
                    });
                }
                let m = svc.manager();
                let exp = |l, c| m.lease(&Lease::new(l, c, 0)).map(|x| x.expiration());
                let before = self.tap.before(&reply, exp);
                svc.handle_reply(&reply, now);
                let m = svc.manager();
                let exp = |l, c| m.lease(&Lease::new(l, c, 0)).map(|x| x.expiration());
                self.tap.after(&reply, before, exp);
            }
        }
        self.after_change(now);
    }

    fn landlord_id(&self) -> Option<LandlordId> {
        Some(self.id)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// A node that sends what the simulator tells it to: hostile replies and misrouted requests.
pub struct Adversary {
    /// Messages to send.
    pub outbox: VecDeque<Outgoing>,
    ctx: Shared,
    node: NodeId,
}

impl Adversary {
    /// An adversary.
    pub fn new(node: NodeId, ctx: Shared) -> Adversary {
        Adversary { outbox: VecDeque::new(), ctx, node }
    }
}

impl Actor for Adversary {
    fn poll_timeout(&self) -> Option<Millis> {
        None
    }
    fn handle_timeout(&mut self, _now: Millis) {}
    fn poll_outgoing(&mut self, _now: Millis) -> Option<Outgoing> {
        self.outbox.pop_front()
    }
    fn handle_message(&mut self, from: NodeId, message: Message, _now: Millis) {
        let mut c = self.ctx.borrow_mut();
        if let Message::Reply(r) = &message {
            c.ack(self.node, r);
        }
        c.trace(|| format!("adversary from node {from}: {}", describe(&message)));
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}
