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
use leasehold::journal::Gate;
use leasehold::policy::PolicySpec;
use leasehold::service::{RenewalService, RenewalServiceConfig, SetEventKind};
use leasehold::simnet::{Actor, Address, Clock, Message, NodeId, Outgoing};
use leasehold::wire::Outcome;
use leasehold::{
    Cookie, Encoding, LandlordConfig, LandlordId, Lease, Millis, Reply, ReplyBody, Request,
    RequestBody, Result, FOREVER,
};
use rand_chacha::ChaCha12Rng;
use rand_core::RngCore;

use crate::durable::{CrashAt, Disk, ServiceStore};

/// The shared books of one simulated run.
pub type Shared = Rc<RefCell<Ctx>>;

/// Declares [`Faults`]: each counter with its doc and the words it is printed with.
macro_rules! faults {
    ($($(#[doc = $doc:literal])* $name:ident: $label:literal,)*) => {
        /// Faults injected (and what the disks did), by kind.
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct Faults {
            $($(#[doc = $doc])* pub $name: u64,)*
        }

        impl Faults {
            /// Adds `o`.
            pub fn add(&mut self, o: &Faults) {
                $(self.$name += o.$name;)*
            }
        }

        impl std::fmt::Display for Faults {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                let mut first = true;
                $(
                    if !first {
                        f.write_str(", ")?;
                    }
                    first = false;
                    write!(f, "{} {}", $label, self.$name)?;
                )*
                let _ = first;
                Ok(())
            }
        }
    };
}

faults! {
    /// Messages lost by the network.
    lost: "lost",
    /// Messages sent twice.
    duplicated: "duplicated",
    /// Requests that reached their landlord after a later request of the same sender.
    reordered: "reordered",
    /// Links made slow (and lossy) for a while: long delays and reordering.
    delayed: "slow links",
    /// Partitions between two nodes.
    partitions: "partitions",
    /// Clock steps forward.
    clock_forward: "clock steps forward",
    /// Clock steps backward.
    clock_back: "clock steps back",
    /// Crashes of a landlord or a service.
    crashes: "crashes",
    /// Of those, crashes right after the disk caught up with everything written.
    crashes_at_commit: "at a commit",
    /// Crashes while file operations were queued (mid-commit, mid-compaction).
    crashes_mid_write: "mid-write",
    /// Crashes that kept a torn part of an unsynced append.
    torn_tails: "torn tails",
    /// Crashes that kept a whole unsynced append.
    unsynced_kept: "unsynced appends kept",
    /// Recoveries that rebuilt exactly the landlord that crashed (compared with its twin).
    exact_recoveries: "exact recoveries",
    /// Commits (an append and a sync).
    commits: "commits",
    /// Compactions (a snapshot replacing log segments).
    compactions: "compactions",
    /// Damaged copies of a store handed to `Store::open` (which must refuse them).
    damaged_stores: "damaged stores",
    /// Corrupted snapshots handed to restore (which must refuse them).
    corrupt_snapshots: "corrupt snapshots",
    /// Hostile replies (wrong ids, other landlords, malformed bodies).
    hostile: "hostile replies",
    /// Requests replayed to a landlord they were not meant for.
    misrouted: "misrouted requests",
    /// Announcements registrars sent.
    announcements: "announcements",
    /// Registrars stopped for a while.
    registrar_outages: "registrar outages",
    /// Registrars reported unreachable to the discovery service.
    unreachable: "unreachable reports",
    /// Events whose listener answered with a failure.
    event_failures: "event delivery failures",
    /// Locks acquired by coordination clients (acquired replies received).
    locks: "locks acquired",
    /// Writes to fenced resources by lock holders.
    fenced_writes: "fenced writes",
    /// Of those, writes the fence refused (a holder whose lease had ended).
    fence_refusals: "refused by the fence",
    /// Watch events received by coordination clients.
    watch_events: "watch events",
    /// Polls that were told events were missed.
    watch_missed: "watch gaps reported",
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
    /// A rule of the lookup discovery service (LD) broken.
    Discovery,
    /// A rule of coordination broken (exclusivity, tokens, fences, watches).
    Coord,
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
            Check::Discovery => "discovery",
            Check::Coord => "coordination",
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
    /// The books of the discovery checks.
    pub disco: crate::discovery::DiscoBooks,
    /// The books of the coordination checks.
    pub coord: crate::coord::CoordBooks,
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
            disco: Default::default(),
            coord: Default::default(),
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
        self.ack_id(to, reply.landlord, reply.id);
    }

    /// A reply (of any protocol) with request id `id` from `landlord` reached `to`.
    pub fn ack_id(&mut self, to: NodeId, landlord: LandlordId, id: u64) {
        if let Some(ps) = self.promises.remove(&(to, landlord, id)) {
            for p in ps {
                self.newly_acked.push((landlord, p.cookie));
                let e = self.acked.entry((landlord, p.cookie)).or_insert(p);
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
    pub(crate) fn bump(&mut self, cookie: Cookie) -> u64 {
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
        Message::Bytes(b) => {
            crate::coord::describe(b).unwrap_or_else(|| crate::discovery::describe(b))
        }
    }
}

/// What a held reply does to the books when it is released.
pub(crate) enum Effect {
    /// The lease is honoured until this expiration.
    Promise(Promise),
    /// The landlord answered for the lease with success.
    Honoured(Cookie),
    /// The landlord said the lease is gone.
    Gone(Cookie),
    /// Anything else the books learn once the output leaves.
    Hook(Box<dyn FnOnce(&mut Ctx)>),
}

/// An output held until the records behind it are durable, and what it tells the books.
pub(crate) struct Held {
    /// The reply (none for an expiry, which only tells the books).
    pub(crate) out: Option<Outgoing>,
    pub(crate) to: NodeId,
    pub(crate) id: u64,
    pub(crate) effects: Vec<Effect>,
    /// The host's clock when the output was made (set by the host as it holds it).
    pub(crate) clock: Option<Clock>,
}

/// Group commit and release of held replies, shared by landlord and service hosts.
///
/// A journaled host (landlords, the discovery service) holds each output in a
/// [`Gate`] under the journal's last sequence number at the time it was made, and releases it
/// once the disk says that record is synced. The renewal-service host (a snapshot per commit,
/// until its journal lands) holds outputs in `held` and releases them all at each commit.
pub(crate) struct Releaser {
    pub(crate) held: Vec<Held>,
    pub(crate) gate: Gate<Held>,
    pub(crate) outbox: VecDeque<Outgoing>,
    pub(crate) commit_at: Option<Millis>,
    pub(crate) dirty: bool,
    pub(crate) rng: ChaCha12Rng,
    /// Probability of duplicating a released reply.
    pub(crate) dup: f64,
    /// Probability that a change is committed at once (else within `commit_delay`).
    sync_commit: f64,
    commit_delay: Millis,
    last_request: BTreeMap<NodeId, u64>,
}

impl Releaser {
    pub(crate) fn new(
        rng: ChaCha12Rng,
        dup: f64,
        sync_commit: f64,
        commit_delay: Millis,
    ) -> Releaser {
        Releaser {
            held: Vec::new(),
            gate: Gate::new(),
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

    pub(crate) fn note_request(&mut self, from: NodeId, id: u64, ctx: &Shared) {
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
        self.group(now)
    }

    /// Whether to commit at once; else a commit is scheduled within the group-commit window
    /// (if none is yet).
    pub(crate) fn group(&mut self, now: Millis) -> bool {
        if self.commit_at.is_some() {
            return false;
        }
        if unit(&mut self.rng) < self.sync_commit {
            return true;
        }
        self.commit_at = Some(now + range(&mut self.rng, 1, self.commit_delay));
        false
    }

    /// Releases every held reply (their changes are now durable): the snapshot path.
    fn release(&mut self, landlord: LandlordId, clock: Clock, grace: Millis, ctx: &Shared) {
        self.dirty = false;
        self.commit_at = None;
        let held = std::mem::take(&mut self.held);
        self.deliver(held, landlord, clock, grace, ctx);
    }

    /// Releases what waits for records up to `durable`: the journal path.
    pub(crate) fn release_durable(
        &mut self,
        durable: u64,
        landlord: LandlordId,
        clock: Clock,
        grace: Millis,
        ctx: &Shared,
    ) {
        let out: Vec<Held> = self.gate.release(durable).collect();
        if !out.is_empty() {
            self.deliver(out, landlord, clock, grace, ctx);
        }
    }

    fn deliver(
        &mut self,
        held: Vec<Held>,
        landlord: LandlordId,
        clock: Clock,
        grace: Millis,
        ctx: &Shared,
    ) {
        let mut c = ctx.borrow_mut();
        for h in held {
            for e in h.effects {
                match e {
                    Effect::Promise(mut p) => {
                        p.made = c.real;
                        // The real time the term ends by the clock as it was when the reply
                        // was made, or as it is now, whichever is sooner: a step back in
                        // between gives a frozen landlord a bonus that a rebuilt one does not
                        // keep; a step forward shortens every lease.
                        p.until_real = if p.expiration >= FOREVER - 1 - grace {
                            None
                        } else {
                            let at = |k: Clock| k.real_at(p.expiration + grace + 1);
                            match (at(clock), h.clock.and_then(at)) {
                                (Some(a), Some(b)) => Some(a.min(b)),
                                (a, _) => a,
                            }
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
                    Effect::Hook(f) => f(&mut c),
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
    pub(crate) fn clock_stepped(&mut self, delta: Millis) {
        if let Some(t) = &mut self.commit_at {
            *t = t.saturating_add(delta);
        }
    }

    pub(crate) fn crash(&mut self) {
        self.held.clear();
        self.gate = Gate::new();
        self.outbox.clear();
        self.commit_at = None;
        self.dirty = false;
    }
}

/// The effects of answering `req` with `reply` at `now` (the landlord host's clock), and
/// whether the landlord changed.
///
/// What a reply promises is what its holder can rely on: the granted duration from the moment
/// the landlord answered (the holder counts it from its request, earlier still). A landlord
/// whose clock is frozen (its host's clock stepped back) may honour the lease longer than
/// that; a landlord rebuilt from its journal resumes its own time where the log left it, so it
/// keeps the duration but not that bonus.
pub(crate) fn effects(
    req: &Request,
    reply: &Reply,
    meta: &mut Meta,
    now: Millis,
) -> (Vec<Effect>, bool) {
    let mut out = Vec::new();
    let mut changed = false;
    let unknown = |e: &leasehold::wire::WireError| e.code == ErrorCode::UnknownLease as i32;
    let promise = |cookie: Cookie, d: Millis, op: u64| {
        Effect::Promise(Promise {
            cookie,
            expiration: leasehold::time::expiration_after(now, d.max(0)),
            op,
            until_real: None,
            made: 0,
        })
    };
    let mut renewed = |c: Cookie, d: Millis, out: &mut Vec<Effect>, changed: &mut bool| {
        let op = meta.bump(c);
        *changed = true;
        out.push(Effect::Honoured(c));
        out.push(promise(c, d, op));
    };
    match (&req.body, &reply.body) {
        (RequestBody::Grant { .. }, ReplyBody::Granted { cookie, duration }) => {
            let op = meta.bump(*cookie);
            changed = true;
            out.push(promise(*cookie, *duration, op));
        }
        (RequestBody::Renew { cookie, .. }, ReplyBody::Renewed { duration }) => {
            renewed(*cookie, *duration, &mut out, &mut changed)
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
                    Outcome::Ok(d) => renewed(*c, *d, &mut out, &mut changed),
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

/// A landlord as it was when its host crashed, kept to be the twin of the landlord rebuilt from
/// the disk (if that one turns out to be exactly it).
struct Crashed {
    ll: leasehold::Landlord<Vec<u8>>,
    /// Its last journal record.
    seq: u64,
    /// Its own time (the latest `now` it saw, on its own clock).
    clock: Millis,
    /// Its own time minus the host's.
    offset: Millis,
}

/// A node running a landlord that keeps a journal on a simulated disk: it commits, compacts,
/// releases replies once durable, crashes and comes back with `Store::open`.
pub struct LandlordHost {
    /// Its clock (kept in step with the network's by the simulator).
    pub clock: Clock,
    /// The landlord id.
    pub id: LandlordId,
    /// Its configuration (a new store starts from it).
    pub config: LandlordConfig,
    /// The policy, as data (a restore builds it again).
    pub policy: PolicySpec,
    /// The landlord; `None` while crashed.
    pub ll: Option<leasehold::Landlord<Vec<u8>>>,
    /// Its store's directory and the file operations under way.
    pub disk: Disk,
    /// Bookkeeping of the operations answered (to tell a lost acknowledged change from a
    /// later one).
    pub meta: Meta,
    /// The bookkeeping as of each journal record that changed it (a recovered landlord gets the
    /// bookkeeping of its last record).
    meta_at: BTreeMap<u64, Meta>,
    /// The landlord that never crashed: kept at a crash, it must answer and expire exactly as the
    /// landlord rebuilt from the disk when that one recovered every record it wrote and its time.
    pub twin: Option<leasehold::Landlord<Vec<u8>>>,
    /// Added to the host's `now` for the twin (the rebuilt landlord resumed on another clock).
    twin_shift: Millis,
    /// The landlord's own time minus the host's (set by each resume).
    offset: Millis,
    crashed: Option<Crashed>,
    /// How late the host's expiry timer fires.
    pub timer_lag: Millis,
    twin_on: bool,
    rel: Releaser,
    twin_diff: BTreeMap<(Cookie, Millis), i32>,
    /// Recoveries that rebuilt exactly the landlord that crashed (compared with its twin).
    pub twins: u64,
    /// Whether the landlord runs coordination ([`crate::coord::config`]).
    pub coord_on: bool,
    /// Requesters of coordination requests held waiting, by ticket: (node, request id).
    waiters: BTreeMap<leasehold::coord::Ticket, (NodeId, u64)>,
    ctx: Shared,
}

impl LandlordHost {
    /// A host for a new landlord, its store created on an empty disk.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        clock: Clock,
        config: LandlordConfig,
        policy: PolicySpec,
        twin_on: bool,
        disk: Disk,
        rng: ChaCha12Rng,
        dup: f64,
        sync_commit: f64,
        commit_delay: Millis,
        coord_on: bool,
        ctx: Shared,
    ) -> LandlordHost {
        let mut h = LandlordHost {
            clock,
            id: config.id,
            config,
            policy,
            ll: None,
            disk,
            meta: Meta::default(),
            meta_at: BTreeMap::new(),
            twin: None,
            twin_shift: 0,
            offset: 0,
            crashed: None,
            timer_lag: 0,
            twin_on,
            rel: Releaser::new(rng, dup, sync_commit, commit_delay),
            twin_diff: BTreeMap::new(),
            twins: 0,
            coord_on,
            waiters: BTreeMap::new(),
            ctx,
        };
        let now = clock.local(0);
        let ll = h.open(now, true).expect("a new store opens");
        h.ll = Some(ll);
        h
    }

    /// `Store::open` on the disk, then resume at `now` (a new landlord from the configuration
    /// if the directory holds no store).
    fn open(&mut self, now: Millis, at_once: bool) -> Result<leasehold::Landlord<Vec<u8>>> {
        let policy = self.policy.build().expect("valid policy");
        let config = self.config.clone();
        let coord = self.coord_on;
        // Coordination is on before the journal is replayed (replay counts tokens and makes
        // events as the live landlord did).
        let (mut ll, _) = self.disk.open(now, at_once, |snapshot| {
            let mut ll = match snapshot {
                Some(bytes) => leasehold::Landlord::from_snapshot_bytes(bytes, policy)?,
                None => {
                    let mut ll = leasehold::Landlord::new(config, policy);
                    ll.enable_journal();
                    ll
                }
            };
            if coord {
                ll.enable_coordination(crate::coord::config())?;
            }
            Ok(ll)
        })?;
        // Rebuilt, not resumed: its time is its own (the host's clock plays no part yet).
        let own = ll.now();
        ll.resume(now);
        self.offset = if own == Millis::MIN { 0 } else { own - now };
        Ok(ll)
    }

    /// Sets the probability of duplicating replies.
    pub fn set_dup(&mut self, dup: f64) {
        self.rel.dup = dup;
    }

    /// The clock stepped (host timers are monotonic).
    pub fn clock_stepped(&mut self, delta: Millis) {
        self.rel.clock_stepped(delta);
        self.disk.clock_stepped(delta);
    }

    /// The expiration of a lease honoured at `now`, if it is.
    pub fn honoured(&self, cookie: Cookie, now: Millis) -> Option<Millis> {
        self.ll.as_ref()?.get(cookie, now).map(|(e, _)| e)
    }

    /// Grace after expiry.
    pub fn grace(&self) -> Millis {
        self.config.grace.max(0)
    }

    /// Releases what the disk made durable, then commits what waits (at once after a sync, as
    /// group commit does; after a change, at once or within the group-commit window).
    fn settle(&mut self, now: Millis, after_sync: bool) {
        let grace = self.grace();
        self.rel.release_durable(self.disk.durable(), self.id, self.clock, grace, &self.ctx);
        let durable = self.disk.durable();
        if let Some(k) = self.meta_at.range(..=durable).next_back().map(|(k, _)| *k) {
            self.meta_at = self.meta_at.split_off(&k);
        }
        let Some(ll) = &mut self.ll else { return };
        if !self.disk.pending(ll) || self.disk.committing() {
            return;
        }
        if after_sync || self.rel.group(now) {
            self.rel.commit_at = None;
            self.disk.commit(ll, now);
        }
    }

    /// Holds an output until the records written so far are durable.
    fn hold(&mut self, mut h: Held) {
        h.clock = Some(self.clock);
        let seq = self.ll.as_ref().map_or(0, |l| l.journal_seq());
        self.rel.gate.push(seq, h);
    }

    /// Notes the bookkeeping as of the journal's last record.
    fn note_meta(&mut self) {
        let seq = self.ll.as_ref().map_or(0, |l| l.journal_seq());
        self.meta_at.insert(seq, self.meta.clone());
    }

    fn take_expired(&mut self, now: Millis) {
        let Some(ll) = &mut self.ll else { return };
        let mut gone = Vec::new();
        while let Some(e) = ll.poll_expired() {
            self.meta.last_op.remove(&e.cookie);
            gone.push(Effect::Gone(e.cookie));
            if self.twin.is_some() {
                let own = e.expiration.saturating_add(self.offset);
                *self.twin_diff.entry((e.cookie, own)).or_insert(0) += 1;
            }
        }
        if !gone.is_empty() {
            // In order with the replies: an expiry is said once its records are durable.
            self.hold(Held { out: None, to: usize::MAX, id: 0, effects: gone, clock: None });
            self.note_meta();
        }
        let Some(tw) = &mut self.twin else { return };
        let twin_offset = self.offset - self.twin_shift;
        while let Some(e) = tw.poll_expired() {
            let own = e.expiration.saturating_add(twin_offset);
            *self.twin_diff.entry((e.cookie, own)).or_insert(0) -= 1;
        }
        self.twin_diff.retain(|_, v| *v != 0);
        // Expiry work may be spread over calls (the per-call budget): compare once both are done.
        let ll = self.ll.as_ref().expect("up");
        let idle = |t: Option<Millis>, shift: Millis| !matches!(t, Some(t) if t <= now + shift);
        if !self.twin_diff.is_empty()
            && idle(ll.poll_timeout(), 0)
            && idle(tw.poll_timeout(), self.twin_shift)
        {
            let msg = format!(
                "after a restore landlord {} expires differently from the landlord that never \
                 crashed: (cookie, expiration on the landlord's own clock) -> +1 restored only, \
                 -1 original only: {:?}",
                self.id, self.twin_diff
            );
            self.ctx.borrow_mut().fail(Check::Twin, msg);
        }
    }

    /// Crashes the host, at a moment of its disk's work.
    pub fn crash(&mut self, at: CrashAt, now: Millis) {
        let Some(mut ll) = self.ll.take() else { return };
        // Requests held waiting die with the host (their requesters' connections with it).
        for t in std::mem::take(&mut self.waiters).into_keys() {
            ll.abandon(t);
        }
        match at {
            CrashAt::Now => {}
            CrashAt::AfterCommit => {
                self.disk.flush();
                self.disk.commit(&mut ll, now);
                self.disk.flush();
                let grace = self.grace();
                let durable = self.disk.durable();
                self.rel.release_durable(durable, self.id, self.clock, grace, &self.ctx);
            }
            CrashAt::MidWrite => self.disk.part_way(&mut ll, now),
        }
        let at_commit = at == CrashAt::AfterCommit;
        self.disk.crash();
        let seq = ll.journal_seq();
        let own = ll.now();
        let clock = if own == Millis::MIN { own } else { own.saturating_add(self.offset) };
        self.crashed = Some(Crashed { ll, seq, clock, offset: self.offset });
        self.twin = None;
        self.twin_diff.clear();
        self.rel.crash();
        let id = self.id;
        self.ctx.borrow_mut().trace(|| {
            format!("landlord {id} crashes{}", if at_commit { " right after a commit" } else { "" })
        });
    }

    /// Rebuilds the landlord from its disk (`Store::open`, replay, resume at `now`).
    pub fn recover(&mut self, now: Millis) {
        let crashed = self.crashed.take();
        match self.open(now, false) {
            Ok(ll) => {
                let seq = ll.journal_seq();
                // Its own time, as the log left it.
                let own = if ll.now() == Millis::MIN { Millis::MIN } else { now + self.offset };
                self.meta = self
                    .meta_at
                    .range(..=seq)
                    .next_back()
                    .map(|(_, m)| m.clone())
                    .unwrap_or_default();
                self.meta_at.retain(|k, _| *k <= seq);
                self.meta_at.insert(seq, self.meta.clone());
                if let Some(c) = crashed {
                    let lost = c.seq - seq.min(c.seq);
                    let exact = c.seq == seq && c.clock == own && own != Millis::MIN;
                    if exact && self.twin_on {
                        self.twin = Some(c.ll);
                        self.twin_shift = self.offset - c.offset;
                        self.twins += 1;
                    }
                    let id = self.id;
                    self.ctx.borrow_mut().trace(|| {
                        format!(
                            "landlord {id} rebuilt at local {now}: {seq} records ({lost} lost \
                             unsynced){}",
                            if exact { ", exactly the landlord that crashed" } else { "" }
                        )
                    });
                }
                self.ll = Some(ll);
                self.rel.release_durable(self.disk.durable(), self.id, self.clock, 0, &self.ctx);
                self.take_expired(now);
                self.settle(now, false);
            }
            Err(e) => {
                let msg = format!("landlord {} could not open its store: {e}", self.id);
                self.ctx.borrow_mut().fail(Check::Restore, msg);
            }
        }
    }

    /// A coordination request: answered now (held until durable) or later.
    fn handle_coord(&mut self, from: NodeId, bytes: &[u8], now: Millis) {
        use leasehold::coord::wire::CoordRequest;
        use leasehold::coord::Handled;
        let id = self.id;
        let Ok(req) = CoordRequest::decode(bytes, Encoding::Binary, &self.config.limits) else {
            return;
        };
        self.ctx.borrow_mut().touched_landlords.push(id);
        let tn = self.twin_now(now);
        let Some(ll) = &mut self.ll else {
            self.ctx.borrow_mut().trace(|| format!("landlord {id} is down: drops request"));
            return;
        };
        let handled = ll.handle_coord(&req, now);
        if let Some(tw) = &mut self.twin {
            let twin = tw.handle_coord(&req, tn);
            let same = match (&handled, &twin) {
                (Handled::Now(a), Handled::Now(b)) => {
                    a.encode(Encoding::Binary) == b.encode(Encoding::Binary)
                }
                (Handled::Later(_), Handled::Later(_)) => true,
                _ => false,
            };
            if !same {
                let msg = format!(
                    "after a restore landlord {id} handles a coordination request as {handled:?};                      the landlord that never crashed as {twin:?}"
                );
                self.ctx.borrow_mut().fail(Check::Twin, msg);
            }
        }
        {
            let q = Message::Bytes(bytes.to_vec());
            self.ctx.borrow_mut().trace(|| {
                format!("landlord {id} (local {now}) node {from} {} -> {handled:?}", describe(&q))
            });
        }
        // Answers the landlord gave while it handled this request (an acquire that swept a
        // lapsed holder first served the waiters queued before it) come before its own answer:
        // they were made first (their tokens are lower).
        self.deferred(now);
        match handled {
            Handled::Now(reply) => self.hold_coord(from, reply, now),
            Handled::Later(t) => {
                self.waiters.insert(t, (from, req.id));
            }
        }
        self.settle(now, false);
    }

    /// Answers that the landlord gives later (a resource let go, a wait that ran out, an
    /// event for a long poll), held like any reply; the twin must give the same.
    fn deferred(&mut self, now: Millis) {
        let Some(ll) = &mut self.ll else { return };
        let mut out = Vec::new();
        while let Some((t, reply)) = ll.poll_deferred() {
            out.push((t, reply));
        }
        if let Some(tw) = &mut self.twin {
            let mut twin = Vec::new();
            while let Some((_, reply)) = tw.poll_deferred() {
                twin.push(reply.encode(Encoding::Binary));
            }
            let ours: Vec<Vec<u8>> = out.iter().map(|(_, r)| r.encode(Encoding::Binary)).collect();
            if ours != twin {
                let msg = format!(
                    "after a restore landlord {} answers {} held requests; the landlord that never                      crashed {} (or other answers)",
                    self.id,
                    ours.len(),
                    twin.len()
                );
                self.ctx.borrow_mut().fail(Check::Twin, msg);
            }
        }
        for (t, reply) in out {
            if let Some((to, _)) = self.waiters.remove(&t) {
                self.hold_coord(to, reply, now);
            }
        }
    }

    /// Holds a coordination reply until durable, with what it tells the books.
    fn hold_coord(&mut self, to: NodeId, reply: leasehold::coord::CoordReply, now: Millis) {
        use leasehold::coord::wire::CoordReplyBody;
        let mut effects = Vec::new();
        let mut changed = false;
        let lid = self.id;
        if let CoordReplyBody::Acquired { cookie, duration, token, .. } = &reply.body {
            let op = self.meta.bump(*cookie);
            changed = true;
            effects.push(Effect::Promise(Promise {
                cookie: *cookie,
                expiration: leasehold::time::expiration_after(now, (*duration).max(0)),
                op,
                until_real: None,
                made: 0,
            }));
            {
                let mut c = self.ctx.borrow_mut();
                let v = c.issued.entry(*cookie).or_default();
                if !v.contains(&lid) {
                    v.push(lid);
                }
            }
            let token = *token;
            effects.push(Effect::Hook(Box::new(move |c: &mut Ctx| {
                let last = c.coord.last_token.entry(lid).or_insert(0);
                if token <= *last {
                    let l = *last;
                    c.fail(
                        Check::Coord,
                        format!("landlord {lid} handed out token {token} after token {l}"),
                    );
                } else {
                    *last = token;
                }
            })));
        }
        let id = reply.id;
        self.hold(Held {
            out: Some(Outgoing {
                to: Address::Node(to),
                message: Message::Bytes(reply.encode(Encoding::Binary)),
            }),
            to,
            id,
            effects,
            clock: None,
        });
        if changed {
            self.note_meta();
        }
    }

    /// Whether nothing waits to be written and the disk is idle.
    pub fn disk_idle(&self) -> bool {
        self.ll.as_ref().is_none_or(|ll| !self.disk.pending(ll))
            && self.disk.poll_timeout().is_none()
    }

    /// The landlord's time as seen by its twin, for `now` on the host's clock.
    fn twin_now(&self, now: Millis) -> Millis {
        now.saturating_add(self.twin_shift)
    }
}

impl Actor for LandlordHost {
    fn poll_timeout(&self) -> Option<Millis> {
        let ll = self.ll.as_ref()?;
        // The host's expiry timer fires `timer_lag` late (a busy host): expired leases then
        // wait a while to be swept, and are answered "unknown" meanwhile.
        let expiry = ll.poll_timeout().map(|t| t.saturating_add(self.timer_lag));
        [expiry, self.rel.commit_at, self.disk.poll_timeout()].into_iter().flatten().min()
    }

    fn handle_timeout(&mut self, now: Millis) {
        self.ctx.borrow_mut().touched_landlords.push(self.id);
        if self.ll.is_none() {
            return;
        }
        let mut synced = false;
        if self.disk.poll_timeout().is_some_and(|t| t <= now) {
            synced = self.disk.handle_timeout(now);
        }
        if self.rel.commit_at.is_some_and(|t| t <= now) {
            self.rel.commit_at = None;
            if !self.disk.committing() {
                let ll = self.ll.as_mut().expect("up");
                self.disk.commit(ll, now);
            }
        }
        let ll = self.ll.as_mut().expect("up");
        if ll.poll_timeout().is_some_and(|t| t.saturating_add(self.timer_lag) <= now) {
            ll.handle_timeout(now);
            let tn = self.twin_now(now);
            if let Some(tw) = &mut self.twin {
                tw.handle_timeout(tn);
            }
            self.take_expired(now);
            self.deferred(now);
        }
        self.settle(now, synced);
    }

    fn poll_outgoing(&mut self, _now: Millis) -> Option<Outgoing> {
        self.rel.outbox.pop_front()
    }

    fn handle_message(&mut self, from: NodeId, message: Message, now: Millis) {
        if let Message::Bytes(b) = &message {
            self.handle_coord(from, b, now);
            return;
        }
        let Message::Request(req) = message else { return };
        let id = self.id;
        self.ctx.borrow_mut().touched_landlords.push(id);
        let tn = self.twin_now(now);
        let Some(ll) = &mut self.ll else {
            self.ctx.borrow_mut().trace(|| format!("landlord {id} is down: drops request"));
            return;
        };
        self.rel.note_request(from, req.id, &self.ctx);
        // A watch's lease is no lease of the table: the lease checks do not apply to it.
        let watch = named(&req).iter().any(|c| ll.is_watch(*c));
        let reply = ll.handle_request(&req, now);
        if let Some(tw) = &mut self.twin {
            let twin_reply = tw.handle_request(&req, tn);
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
            if watch { (Vec::new(), false) } else { effects(&req, &reply, &mut self.meta, now) };
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
        self.hold(Held {
            out: Some(Outgoing { to: Address::Node(from), message: Message::Reply(reply) }),
            to: from,
            id: req.id,
            effects,
            clock: None,
        });
        if changed {
            self.note_meta();
        }
        // A cancel may have let a waiter have its resource.
        self.deferred(now);
        self.settle(now, false);
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

    /// Whether a request naming `cookie` of `landlord` was sent at real time `since` or later.
    pub fn named_since(&self, landlord: LandlordId, cookie: Cookie, since: Millis) -> bool {
        self.sent
            .values()
            .any(|s| s.real >= since && s.landlord == landlord && s.cookies.contains(&cookie))
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
    /// Its side of the discovery service's registrations, if the world has one.
    pub disco: Option<crate::discovery::DiscoClient>,
    /// Whether its own faults (failed event deliveries) are on.
    pub faults_on: bool,
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
            disco: None,
            faults_on: true,
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

    /// A message of the discovery service: an event (checked and answered) or a reply.
    fn handle_disco(&mut self, from: NodeId, b: &[u8], now: Millis) {
        let node = self.node;
        self.ctx.borrow_mut().touched_nodes.push(node);
        let Some(d) = self.disco.as_mut() else { return };
        self.ctx.borrow_mut().trace(|| {
            format!(
                "holder {node} (local {now}) from node {from}: {}",
                crate::discovery::describe(b)
            )
        });
        if crate::discovery::DiscoClient::is_event(b) {
            let Some(e) = crate::discovery::DiscoClient::decode_event(b) else { return };
            // It may give up on a registration only while it renews the lease itself: one
            // handed to the renewal service would be renewed there after the registration
            // ended, and the service has no way to know why.
            let sid = d.service.1;
            let mine = d
                .cookie_of(e.event_id)
                .is_none_or(|c| self.manager.lease(&leasehold::Lease::new(sid, c, 0)).is_some());
            let (body, drop) = {
                let mut c = self.ctx.borrow_mut();
                d.on_event(&e, &mut c, node, &mut self.rng, self.faults_on && mine)
            };
            if let Some(l) = drop {
                // It gave up on the registration: it stops renewing the lease (the service
                // cancels the registration once it hears the answer).
                let _ = self.manager.remove(&l);
                self.ctx.borrow_mut().healthy.remove(&(node, l.landlord(), l.cookie()));
            }
            d.answer(&e, body);
            return;
        }
        let got = {
            let mut c = self.ctx.borrow_mut();
            d.on_reply(b, &mut c, node)
        };
        let Some((as_grant, sent_local, sent_real, hold, renew)) = got else { return };
        let drift = self.manager.config().max_clock_drift_ppm;
        if let Ok(lease) = holder::lease_from_reply_with_drift(&as_grant, sent_local, drift) {
            if self.manager.renew_for(lease, hold, renew, now).is_ok() {
                self.tap.established.insert((lease.landlord(), lease.cookie()), sent_real);
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
        let real = self.real(now);
        if let Some(o) = self.disco.as_mut().and_then(|d| d.poll_outgoing(now, real)) {
            if unit(&mut self.rng) < self.dup {
                self.ctx.borrow_mut().faults.duplicated += 1;
                self.extra.push_back(o.clone());
            }
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
        if let Message::Bytes(b) = message {
            self.handle_disco(from, &b, now);
            self.drain(now);
            return;
        }
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

    /// Hands out the service's events (to their listeners; the books check them) and reports
    /// each delivered, as a host does once its listener took it: the service keeps an event
    /// in its outbox, and hands it out again after a restore, until then.
    fn emit_events(&mut self, now: Millis) {
        let Some(svc) = &mut self.svc else { return };
        let mut c = self.ctx.borrow_mut();
        while let Some(e) = svc.poll_event() {
            svc.delivered(e.event_id, e.sequence, now);
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
        self.emit_events(now);
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
            self.emit_events(now);
        }
        if self.rel.wants_commit(now) {
            self.commit(now);
        }
    }

    /// Crashes the service. Right after a commit, it commits first.
    pub fn crash(&mut self, at: CrashAt, now: Millis) {
        if self.svc.is_none() {
            return;
        }
        if at == CrashAt::AfterCommit {
            self.commit(now);
        }
        self.svc = None;
        self.rel.crash();
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
        loop {
            let t = self.svc.as_mut()?.poll_transmit(now)?;
            let real = self.real(now);
            self.tap.on_send(&t, real);
            // A request leaves once the change that made it is durable, as the service's
            // contract asks ("Reply after durable" in core's service::durable): a renewal that
            // may shorten a lease bounds the service's belief in it as it is made, and a
            // restore must not forget that bound while the landlord has already applied it
            // (vopr --seed 1271307766 sent first and crashed before the commit).
            let id = t.request.id;
            let out = Outgoing {
                to: Address::Landlord(t.landlord),
                message: Message::Request(t.request),
            };
            let held = Held { out: Some(out), to: self.node, id, effects: Vec::new(), clock: None };
            self.rel.held.push(held);
            self.rel.dirty = true;
            if self.rel.wants_commit(now) {
                self.commit(now);
            }
            if let Some(o) = self.rel.outbox.pop_front() {
                return Some(o);
            }
        }
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
                let (effects, _) = effects(&req, &reply, &mut self.meta, now);
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
                    clock: Some(self.clock),
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
            Message::Bytes(_) => return,
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
