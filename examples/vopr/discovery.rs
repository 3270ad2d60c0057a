//! The lookup discovery service in the simulation: registrars that announce themselves over
//! `simnet` (with its loss, duplication and reordering) and answer unicast discovery, a host
//! running the real `DiscoveryService` with its journal on a simulated disk (see
//! [`crate::durable`]), and the client side of registrations, which lives in the holder hosts
//! (they register over the wire, renew the registration leases with their renewal managers,
//! receive events and answer them, sometimes with a failure).
//!
//! Every discovery message travels as `Message::Bytes`: the service's own wire format (magic
//! `0x4C`: requests, replies, events, event replies, announcement datagrams; requests in JSON
//! start with `{`), and two messages of the simulator's unicast discovery (`UQ`: a probe of a
//! locator, `UA`: the registrar's answer, its announcement), which carry the incarnation of the
//! service that asked, as a TCP connection would: an answer never reaches a service restarted
//! since.
//!
//! The checks (besides the lease checks every landlord gets: the service is the landlord of
//! its registration leases):
//!
//! - event sequence numbers strictly increase per event registration, and an event handed out
//!   again (after a crash, or a failed delivery) is the same event;
//! - exactly one discovered event per (registration, registrar) until it is discarded (and a
//!   discarded event only for a registrar discovered): checked by each client on the events it
//!   receives, which come in order, one at a time, without a gap;
//! - a passive (communication) discard never goes to a registration that wants the registrar
//!   by locator only;
//! - registrations survive crashes: every registration acknowledged to its client is there
//!   after a recovery until its lease ends, and one the service said was gone never comes back.

use std::any::Any;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

use leasehold::discovery::wire::{
    DiscoveryReply, DiscoveryReplyBody, DiscoveryRequest, DiscoveryRequestBody, EventReply,
    EventReplyBody, KIND_ANNOUNCEMENT, KIND_EVENT, KIND_EVENT_REPLY, KIND_REPLY, KIND_REQUEST,
};
use leasehold::discovery::{
    Announcement, DiscoveryConfig, DiscoveryService, Groups, Locator, RegistrarId, RegistrationId,
    RemoteDiscoveryEvent, UnicastResponse,
};
use leasehold::event::EventId;
use leasehold::simnet::{Actor, Address, Clock, Message, NodeId, Outgoing};
use leasehold::wire::{Limits, WireError};
use leasehold::{
    Cookie, Encoding, LandlordId, Lease, LeaseError, Millis, Reply, ReplyBody, Result, FOREVER,
};
use rand_chacha::ChaCha12Rng;

use crate::durable::{CrashAt, Disk};
use crate::nodes::{
    describe as describe_message, range, unit, Check, Ctx, Effect, Held, Meta, Releaser, Shared,
};

const PROBE: &[u8; 2] = b"UQ";
const ANSWER: &[u8; 2] = b"UA";

/// The groups registrars are members of, and registrations ask for.
pub const GROUPS: [&str; 3] = ["a", "b", "c"];

/// The locator of registrar `k`.
pub fn locator_of(k: usize) -> Locator {
    Locator::new(&format!("r{k}.sim"), 4160).expect("a valid locator")
}

/// A locator no registrar is at (unicast discovery of it always fails).
pub fn ghost_locator() -> Locator {
    Locator::new("ghost.sim", 4160).expect("a valid locator")
}

fn le_u64(b: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(..8)?.try_into().ok()?))
}

/// What kind of discovery message `bytes` is (its binary kind, or `b'{'` for JSON).
fn kind(bytes: &[u8]) -> Option<u8> {
    match bytes {
        [b'{', ..] => Some(b'{'),
        [0x4C, 1, k, ..] => Some(*k),
        _ => None,
    }
}

/// A cheap fingerprint of an event, to tell the same event handed out again from another.
fn fingerprint(e: &RemoteDiscoveryEvent) -> u64 {
    let bytes = e.encode(Encoding::Binary);
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
    }
    h
}

/// One line about a message of the discovery protocols, for traces.
pub fn describe(bytes: &[u8]) -> String {
    let limits = Limits::default();
    let regs = |rs: &[leasehold::discovery::Registrar]| {
        rs.iter()
            .map(|r| {
                let ls: Vec<String> = r.locators.iter().map(|l| l.to_string()).collect();
                format!("{:x} {:?} at {:?}", r.id.0, r.groups, ls)
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    if bytes.starts_with(PROBE) {
        return format!("unicast probe #{}", le_u64(&bytes[10..]).unwrap_or(0));
    }
    if bytes.starts_with(ANSWER) {
        return format!("unicast answer #{}", le_u64(&bytes[10..]).unwrap_or(0));
    }
    let enc = if bytes.first() == Some(&b'{') { Encoding::Json } else { Encoding::Binary };
    match kind(bytes) {
        Some(KIND_ANNOUNCEMENT) => match Announcement::decode(bytes) {
            Ok(a) => format!(
                "announcement of {:x} #{} groups {:?} ttl {}",
                a.registrar.0, a.sequence, a.groups, a.ttl
            ),
            Err(e) => format!("bad announcement: {e}"),
        },
        Some(KIND_EVENT) => match RemoteDiscoveryEvent::decode(bytes, enc, &limits) {
            Ok(e) => format!(
                "event {} #{} {} [{}]",
                e.event_id,
                e.sequence,
                if e.is_discarded() { "discarded" } else { "discovered" },
                regs(e.registrars())
            ),
            Err(e) => format!("bad event: {e}"),
        },
        Some(KIND_EVENT_REPLY) => match EventReply::decode(bytes, enc, &limits) {
            Ok(r) => format!("event reply {} #{} {:?}", r.event_id, r.sequence, r.body),
            Err(e) => format!("bad event reply: {e}"),
        },
        Some(KIND_REPLY) => match DiscoveryReply::decode(bytes, enc, &limits) {
            Ok(r) => format!("discovery reply #{} {:?}", r.id, r.body),
            Err(e) => format!("bad discovery reply: {e}"),
        },
        Some(KIND_REQUEST) | Some(b'{') => match DiscoveryRequest::decode(bytes, enc, &limits) {
            Ok(r) => format!("discovery request #{} {:?}", r.id, r.body),
            Err(_) => match DiscoveryReply::decode(bytes, enc, &limits) {
                Ok(r) => format!("discovery reply #{} {:?}", r.id, r.body),
                Err(e) => format!("bad discovery message: {e}"),
            },
        },
        _ => format!("{} bytes", bytes.len()),
    }
}

// ---------------------------------------------------------------------------------------------
// Registrars

/// A lookup service: announces itself to the discovery service every so often, and answers
/// unicast discovery, while it is up.
pub struct RegistrarNode {
    /// Its id.
    pub id: RegistrarId,
    /// Where it takes unicast discovery.
    pub locator: Locator,
    /// Its groups.
    pub groups: BTreeSet<String>,
    /// Whether it runs.
    pub up: bool,
    /// The discovery service's node (announcements go there: multicast, as one listener hears
    /// it).
    pub to: NodeId,
    interval: Millis,
    ttl: Millis,
    next: Option<Millis>,
    sequence: u64,
    outbox: VecDeque<Outgoing>,
    rng: ChaCha12Rng,
    /// Probability of sending an announcement twice.
    pub dup: f64,
    ctx: Shared,
}

impl RegistrarNode {
    /// A registrar that announces every `interval` ms, each announcement good for `ttl`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        id: RegistrarId,
        locator: Locator,
        groups: BTreeSet<String>,
        to: NodeId,
        interval: Millis,
        ttl: Millis,
        rng: ChaCha12Rng,
        dup: f64,
        ctx: Shared,
    ) -> RegistrarNode {
        RegistrarNode {
            id,
            locator,
            groups,
            up: true,
            to,
            interval,
            ttl,
            next: Some(0),
            sequence: 1 << 20,
            outbox: VecDeque::new(),
            rng,
            dup,
            ctx,
        }
    }

    fn announcement(&mut self) -> Announcement {
        // Grows with every announcement, across restarts.
        self.sequence += 1;
        Announcement {
            registrar: self.id,
            groups: self.groups.clone(),
            locator: self.locator.clone(),
            sequence: self.sequence,
            ttl: self.ttl,
        }
    }

    /// Stops (no announcements, no answers) or starts again (announcing at once).
    pub fn set_up(&mut self, up: bool, now: Millis) {
        self.up = up;
        self.next = up.then_some(now);
    }

    /// Changes its groups (announced at once, if it is up).
    pub fn set_groups(&mut self, groups: BTreeSet<String>, now: Millis) {
        self.groups = groups;
        if self.up {
            self.next = Some(now);
        }
    }
}

impl Actor for RegistrarNode {
    fn poll_timeout(&self) -> Option<Millis> {
        self.next
    }

    fn handle_timeout(&mut self, now: Millis) {
        if !self.up || self.next.is_none_or(|t| t > now) {
            return;
        }
        let a = self.announcement();
        let bytes = a.encode().expect("a valid announcement");
        let out = Outgoing { to: Address::Node(self.to), message: Message::Bytes(bytes) };
        if unit(&mut self.rng) < self.dup {
            self.ctx.borrow_mut().faults.duplicated += 1;
            self.outbox.push_back(out.clone());
        }
        self.outbox.push_back(out);
        self.ctx.borrow_mut().faults.announcements += 1;
        let jitter = range(&mut self.rng, 0, self.interval / 4);
        self.next = Some(now + self.interval - self.interval / 8 + jitter);
    }

    fn poll_outgoing(&mut self, _now: Millis) -> Option<Outgoing> {
        self.outbox.pop_front()
    }

    fn handle_message(&mut self, from: NodeId, message: Message, _now: Millis) {
        let Message::Bytes(b) = message else { return };
        if !self.up || !b.starts_with(PROBE) || b.len() != 18 {
            return;
        }
        // Answer on the same "connection": the incarnation and request id come back.
        let mut out = ANSWER.to_vec();
        out.extend_from_slice(&b[2..18]);
        let a = self.announcement();
        out.extend(a.encode().expect("a valid announcement"));
        self.outbox.push_back(Outgoing { to: Address::Node(from), message: Message::Bytes(out) });
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

// ---------------------------------------------------------------------------------------------
// The service's host

/// A node running the lookup discovery service with its journal on a simulated disk.
pub struct DiscoveryHost {
    /// This node.
    pub node: NodeId,
    /// Its clock (kept in step by the simulator).
    pub clock: Clock,
    /// The service's landlord id.
    pub id: LandlordId,
    config: DiscoveryConfig,
    /// The service; `None` while crashed.
    pub svc: Option<DiscoveryService>,
    /// Its store's directory and the file operations under way.
    pub disk: Disk,
    /// Operations answered, per registration lease (as a landlord host keeps them).
    pub meta: Meta,
    meta_at: BTreeMap<u64, Meta>,
    /// The registrations as of the last call, with their cookies.
    regs: BTreeMap<RegistrationId, Cookie>,
    /// Each live registration lease's expiration on the host's clock, as the service answered
    /// it (rebuilt from the service's snapshot at each recovery).
    leases: BTreeMap<Cookie, Millis>,
    /// Registrar locators, and the nodes they reach (the simulation's name service).
    pub dns: BTreeMap<Locator, NodeId>,
    /// Restarts so far: unicast answers to an earlier incarnation are dropped.
    incarnation: u64,
    rel: Releaser,
    ctx: Shared,
}

impl DiscoveryHost {
    /// A host for a new service, its store created on an empty disk.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        node: NodeId,
        clock: Clock,
        config: DiscoveryConfig,
        disk: Disk,
        rng: ChaCha12Rng,
        dup: f64,
        sync_commit: f64,
        commit_delay: Millis,
        ctx: Shared,
    ) -> DiscoveryHost {
        let mut h = DiscoveryHost {
            node,
            clock,
            id: config.landlord.id,
            config,
            svc: None,
            disk,
            meta: Meta::default(),
            meta_at: BTreeMap::new(),
            regs: BTreeMap::new(),
            leases: BTreeMap::new(),
            dns: BTreeMap::new(),
            incarnation: 0,
            rel: Releaser::new(rng, dup, sync_commit, commit_delay),
            ctx,
        };
        let now = clock.local(0);
        h.svc = Some(h.open(now, true).expect("a new store opens"));
        h
    }

    fn open(&mut self, now: Millis, at_once: bool) -> Result<DiscoveryService> {
        let config = self.config.clone();
        let (mut svc, _) = self.disk.open(now, at_once, |snapshot| match snapshot {
            Some(bytes) => DiscoveryService::from_snapshot_bytes(bytes),
            None => {
                let mut svc = DiscoveryService::new(config)?;
                svc.enable_journal();
                Ok(svc)
            }
        })?;
        svc.resume(now);
        Ok(svc)
    }

    /// Sets the probability of duplicating what it sends.
    pub fn set_dup(&mut self, dup: f64) {
        self.rel.dup = dup;
    }

    /// The clock stepped (host timers are monotonic).
    pub fn clock_stepped(&mut self, delta: Millis) {
        self.rel.clock_stepped(delta);
        self.disk.clock_stepped(delta);
    }

    /// Grace after the end of a registration lease.
    pub fn grace(&self) -> Millis {
        self.config.landlord.grace.max(0)
    }

    /// The expiration (host's clock) of a registration lease the service honours at `now`.
    pub fn honoured(&self, cookie: Cookie, now: Millis) -> Option<Millis> {
        let svc = self.svc.as_ref()?;
        let e = *self.leases.get(&cookie)?;
        let t = now.max(svc.now());
        (e == FOREVER || t <= leasehold::time::expiration_after(e, self.grace())).then_some(e)
    }

    /// Whether nothing waits to be written and the disk is idle.
    pub fn disk_idle(&self) -> bool {
        self.svc.as_ref().is_none_or(|s| !self.disk.pending(s))
            && self.disk.poll_timeout().is_none()
    }

    fn hold(&mut self, mut h: Held) {
        h.clock = Some(self.clock);
        let seq = self.svc.as_ref().map_or(0, |s| s.journal_seq());
        self.rel.gate.push(seq, h);
    }

    fn note_meta(&mut self) {
        let seq = self.svc.as_ref().map_or(0, |s| s.journal_seq());
        self.meta_at.insert(seq, self.meta.clone());
    }

    /// After every call on the service: what ended, events and probes to send, what became
    /// durable, and the next commit.
    fn after(&mut self, now: Millis, after_sync: bool) {
        let Some(svc) = self.svc.as_mut() else { return };
        // Registrations that ended (lease over, cancelled, a definite delivery failure): said
        // gone once the records behind it are durable.
        let live: BTreeSet<RegistrationId> = svc.registrations().into_iter().collect();
        let ended: Vec<(RegistrationId, Cookie)> =
            self.regs.iter().filter(|(id, _)| !live.contains(id)).map(|(i, c)| (*i, *c)).collect();
        if !ended.is_empty() {
            let mut effects = Vec::new();
            for (id, cookie) in ended {
                self.regs.remove(&id);
                self.leases.remove(&cookie);
                self.meta.last_op.remove(&cookie);
                effects.push(Effect::Gone(cookie));
                let sid = self.id;
                effects.push(Effect::Hook(Box::new(move |c: &mut Ctx| {
                    c.disco.ended.insert((sid, id));
                })));
            }
            self.hold(Held { out: None, to: usize::MAX, id: 0, effects, clock: None });
            self.note_meta();
        }
        self.probes(now);
        self.events(now);
        let grace = self.grace();
        self.rel.release_durable(self.disk.durable(), self.id, self.clock, grace, &self.ctx);
        let durable = self.disk.durable();
        if let Some(k) = self.meta_at.range(..=durable).next_back().map(|(k, _)| *k) {
            self.meta_at = self.meta_at.split_off(&k);
        }
        let svc = self.svc.as_mut().expect("up");
        // Commit only when something waits for it: the service journals its time whenever it
        // moves, and committing that alone would wake the host again when the commit is done,
        // for ever (a commit per disk operation). A time record left unsynced rides along with
        // the next commit; a crash that loses it loses nothing a client was told.
        if !self.disk.pending(svc) || self.disk.committing() || self.rel.gate.is_empty() {
            return;
        }
        if after_sync || self.rel.group(now) {
            self.rel.commit_at = None;
            self.disk.commit(svc, now);
        }
    }

    /// Unicast discovery the service asks for: a probe to the registrar at the locator (no
    /// registrar there: the name does not resolve, a failure at once).
    fn probes(&mut self, now: Millis) {
        loop {
            let svc = self.svc.as_mut().expect("up");
            let Some(t) = svc.poll_transmit(now) else { return };
            match self.dns.get(&t.locator) {
                Some(&to) => {
                    let mut b = PROBE.to_vec();
                    b.extend_from_slice(&self.incarnation.to_le_bytes());
                    b.extend_from_slice(&t.id.to_le_bytes());
                    self.rel
                        .outbox
                        .push_back(Outgoing { to: Address::Node(to), message: Message::Bytes(b) });
                }
                None => {
                    let e = LeaseError::Indefinite(format!("{} does not resolve", t.locator));
                    svc.handle_unicast(t.id, Err(e), now);
                }
            }
        }
    }

    /// Events the service hands out: each goes to its registration's listener once the
    /// records behind it are durable.
    fn events(&mut self, now: Millis) {
        loop {
            let svc = self.svc.as_mut().expect("up");
            let Some(e) = svc.poll_event(now) else { return };
            let reg = RegistrationId(e.source.object);
            let to = svc.listener(reg).and_then(le_u64).map(|n| n as NodeId).unwrap_or(usize::MAX);
            let (sid, eid, seq, print) = (self.id, e.event_id, e.sequence, fingerprint(&e));
            // No event for a registration whose lease is over (past its grace) or that ended.
            let snow = svc.now();
            let over = match self.regs.get(&reg).and_then(|c| self.leases.get(c)) {
                None => Some("that the service does not hold".to_string()),
                Some(&x) if leasehold::time::expiration_after(x, self.grace()) < snow => {
                    Some(format!("whose lease ended at {x} (grace {})", self.grace()))
                }
                Some(_) => None,
            };
            if let Some(why) = over {
                let msg = format!(
                    "discovery service {sid} (its time {snow}) hands out event {seq} of \
                     registration {} {why}",
                    reg.0
                );
                self.ctx.borrow_mut().fail(Check::Discovery, msg);
            }
            let hook = Effect::Hook(Box::new(move |c: &mut Ctx| {
                c.events += 1;
                if c.disco.ended.contains(&(sid, reg)) {
                    c.fail(
                        Check::Discovery,
                        format!(
                            "discovery service {sid}: event {seq} of registration {} released \
                             after the registration was said ended",
                            reg.0
                        ),
                    );
                }
                let seen = c.disco.events.entry((sid, eid)).or_default();
                let problem = match seen.get(&seq) {
                    Some(&p) if p != print => Some(format!(
                        "discovery service {sid} event registration {eid}: event {seq} handed \
                         out again, different"
                    )),
                    Some(_) => None,
                    None => {
                        let last = seen.last_key_value().map(|(k, _)| *k);
                        seen.insert(seq, print);
                        last.filter(|&l| seq < l).map(|l| {
                            format!(
                                "discovery service {sid} event registration {eid}: a new event \
                                 numbered {seq} after {l}"
                            )
                        })
                    }
                };
                if let Some(p) = problem {
                    c.fail(Check::Sequence, p);
                }
            }));
            let out = (to != usize::MAX).then(|| Outgoing {
                to: Address::Node(to),
                message: Message::Bytes(e.encode(Encoding::Binary)),
            });
            self.hold(Held { out, to, id: 0, effects: vec![hook], clock: None });
        }
    }

    fn handle_lease_request(&mut self, from: NodeId, req: leasehold::Request, now: Millis) {
        let svc = self.svc.as_mut().expect("up");
        let reply = svc.handle_request(&req, now);
        let snow = svc.now();
        // The reply promises the term from the host's `now`; the service, whose time stands
        // still while its host's clock is behind it (stepped back), honours it from its own
        // time, later on the host's clock (a bonus a rebuilt service does not keep).
        let (effects, changed) = crate::nodes::effects(&req, &reply, &mut self.meta, now);
        let bonus = snow.saturating_sub(now).max(0);
        for e in &effects {
            if let Effect::Promise(p) = e {
                let honoured = if p.expiration == FOREVER {
                    FOREVER
                } else {
                    p.expiration.saturating_add(bonus).min(FOREVER - 1)
                };
                self.leases.insert(p.cookie, honoured);
            }
        }
        {
            let id = self.id;
            let (r, q) = (Message::Reply(reply.clone()), Message::Request(req.clone()));
            self.ctx.borrow_mut().trace(|| {
                format!(
                    "discovery {id} (local {now}) node {from} {} -> {}",
                    describe_message(&q),
                    describe_message(&r)
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
    }

    fn handle_discovery_request(&mut self, from: NodeId, bytes: &[u8], now: Millis) {
        let enc = if bytes.first() == Some(&b'{') { Encoding::Json } else { Encoding::Binary };
        let svc = self.svc.as_mut().expect("up");
        let limits = svc.config().landlord.limits;
        let reply = match DiscoveryRequest::decode(bytes, enc, &limits) {
            Ok(req) => svc.handle_discovery(&req, now),
            Err(e) => DiscoveryReply {
                id: 0,
                landlord: svc.id(),
                body: DiscoveryReplyBody::Error(WireError::from(&e)),
            },
        };
        let mut effects = Vec::new();
        let sid = self.id;
        match &reply.body {
            DiscoveryReplyBody::Registered { registration, cookie, duration, .. } => {
                let id = RegistrationId(*registration);
                // The host tells the service where the events go, in the same step.
                let _ = svc.set_listener(id, (from as u64).to_le_bytes().to_vec(), now);
                // Promised from the host's `now`, honoured from the service's (see
                // handle_lease_request).
                let exp = leasehold::time::expiration_after(now, *duration);
                self.regs.insert(id, *cookie);
                self.leases
                    .insert(*cookie, leasehold::time::expiration_after(svc.now(), *duration));
                let op = self.meta.bump(*cookie);
                self.note_meta();
                let mut c = self.ctx.borrow_mut();
                c.issued.entry(*cookie).or_default().push(sid);
                drop(c);
                effects.push(Effect::Promise(crate::nodes::Promise {
                    cookie: *cookie,
                    expiration: exp,
                    op,
                    until_real: None,
                    made: 0,
                }));
            }
            DiscoveryReplyBody::Done => {
                if let Ok(DiscoveryRequest {
                    body: DiscoveryRequestBody::Discard { cookie, registrar },
                    ..
                }) = DiscoveryRequest::decode(bytes, enc, &limits)
                {
                    // Counted now, not when the reply is released: a crash before the
                    // commit may still keep the journal's unsynced append, and the discard
                    // then happens although its reply never went out (seed 569731744).
                    let mut c = self.ctx.borrow_mut();
                    *c.disco.discards.entry((sid, cookie, registrar)).or_default() += 1;
                }
            }
            DiscoveryReplyBody::Error(e) if e.code == leasehold::ErrorCode::UnknownLease as i32 => {
                if let Ok(req) = DiscoveryRequest::decode(bytes, enc, &limits) {
                    if let Some(c) = request_cookie(&req.body) {
                        effects.push(Effect::Gone(c));
                    }
                }
            }
            _ => {}
        }
        {
            let line = format!(
                "discovery {sid} (local {now}) node {from} {} -> {}",
                describe(bytes),
                describe(&reply.encode(Encoding::Binary))
            );
            self.ctx.borrow_mut().trace(|| line);
        }
        let out = Outgoing { to: Address::Node(from), message: Message::Bytes(reply.encode(enc)) };
        self.hold(Held { out: Some(out), to: from, id: reply.id, effects, clock: None });
    }

    fn handle_bytes(&mut self, from: NodeId, bytes: Vec<u8>, now: Millis) {
        let sid = self.id;
        if bytes.starts_with(ANSWER) {
            let (Some(inc), Some(id)) = (le_u64(&bytes[2..]), le_u64(&bytes[10..])) else {
                return;
            };
            if inc != self.incarnation {
                return;
            }
            let svc = self.svc.as_mut().expect("up");
            let found = Announcement::decode(&bytes[18..]).map(|a| UnicastResponse::from(&a));
            let awaited = svc.handle_unicast(id, found, now);
            self.ctx.borrow_mut().trace(|| {
                format!("discovery {sid} (local {now}) unicast answer #{id} from node {from} (awaited: {awaited})")
            });
            return;
        }
        match kind(&bytes) {
            Some(KIND_ANNOUNCEMENT) => {
                let svc = self.svc.as_mut().expect("up");
                let r = svc.handle_datagram(&bytes, now);
                self.ctx.borrow_mut().trace(|| {
                    format!("discovery {sid} (local {now}) {} ({r:?})", describe(&bytes))
                });
            }
            Some(KIND_EVENT_REPLY) => {
                let svc = self.svc.as_mut().expect("up");
                let limits = svc.config().landlord.limits;
                if let Ok(r) = EventReply::decode(&bytes, Encoding::Binary, &limits) {
                    let awaited = svc.handle_event_reply(&r, now);
                    self.ctx.borrow_mut().trace(|| {
                        format!(
                            "discovery {sid} (local {now}) node {from} {} (awaited: {awaited})",
                            describe(&bytes)
                        )
                    });
                }
            }
            Some(KIND_REQUEST) | Some(b'{') => self.handle_discovery_request(from, &bytes, now),
            _ => {}
        }
    }

    /// A host found a registrar unreachable (a fault: it may be wrong).
    pub fn report_unreachable(&mut self, g: RegistrarId, now: Millis) {
        let Some(svc) = self.svc.as_mut() else { return };
        let known = svc.registrar_unreachable(g, now);
        let sid = self.id;
        self.ctx.borrow_mut().trace(|| {
            format!(
                "fault: discovery {sid} told registrar {:x} is unreachable (known: {known})",
                g.0
            )
        });
        self.after(now, false);
    }

    /// Crashes the host, at a moment of its disk's work.
    pub fn crash(&mut self, at: CrashAt, now: Millis) {
        let Some(mut svc) = self.svc.take() else { return };
        match at {
            CrashAt::Now => {}
            CrashAt::AfterCommit => {
                self.disk.flush();
                self.disk.commit(&mut svc, now);
                self.disk.flush();
                let grace = self.grace();
                let durable = self.disk.durable();
                self.rel.release_durable(durable, self.id, self.clock, grace, &self.ctx);
            }
            CrashAt::MidWrite => self.disk.part_way(&mut svc, now),
        }
        self.disk.crash();
        self.rel.crash();
        let (id, node) = (self.id, self.node);
        self.ctx.borrow_mut().trace(|| format!("discovery {id} (node {node}) crashes ({at:?})"));
    }

    /// Rebuilds the service from its disk (`Store::open`, replay, resume at `now`); then the
    /// registration leases are read from the service itself.
    pub fn recover(&mut self, now: Millis) {
        self.incarnation += 1;
        match self.open(now, false) {
            Ok(svc) => {
                let seq = svc.journal_seq();
                self.meta = self
                    .meta_at
                    .range(..=seq)
                    .next_back()
                    .map(|(_, m)| m.clone())
                    .unwrap_or_default();
                self.meta_at.retain(|k, _| *k <= seq);
                self.meta_at.insert(seq, self.meta.clone());
                match registration_leases(&svc) {
                    Ok((regs, leases)) => {
                        self.regs = regs;
                        self.leases = leases;
                    }
                    Err(e) => {
                        let msg = format!("discovery {}: its snapshot does not read: {e}", self.id);
                        self.ctx.borrow_mut().fail(Check::Restore, msg);
                    }
                }
                let (id, n) = (self.id, self.regs.len());
                self.ctx.borrow_mut().trace(|| {
                    format!(
                        "discovery {id} rebuilt at local {now}: {seq} records, {n} registrations"
                    )
                });
                self.svc = Some(svc);
                self.after(now, false);
            }
            Err(e) => {
                let msg = format!("discovery {} could not open its store: {e}", self.id);
                self.ctx.borrow_mut().fail(Check::Restore, msg);
            }
        }
    }
}

/// The cookie a discovery request names, if any.
fn request_cookie(b: &DiscoveryRequestBody) -> Option<Cookie> {
    use DiscoveryRequestBody as B;
    match b {
        B::Register { .. } => None,
        B::GetGroups { cookie }
        | B::AddGroups { cookie, .. }
        | B::SetGroups { cookie, .. }
        | B::RemoveGroups { cookie, .. }
        | B::GetLocators { cookie }
        | B::AddLocators { cookie, .. }
        | B::SetLocators { cookie, .. }
        | B::RemoveLocators { cookie, .. }
        | B::GetRegistrars { cookie }
        | B::Discard { cookie, .. } => Some(*cookie),
    }
}

/// Every registration of `svc` with its cookie, and every registration lease's expiration on
/// the host's clock, read from the service's snapshot (a read-only view of its landlord).
#[allow(clippy::type_complexity)]
fn registration_leases(
    svc: &DiscoveryService,
) -> std::result::Result<(BTreeMap<RegistrationId, Cookie>, BTreeMap<Cookie, Millis>), String> {
    let v: serde_json::Value =
        serde_json::from_str(&svc.snapshot().to_json()).map_err(|e| e.to_string())?;
    let now = svc.now();
    let mut leases = BTreeMap::new();
    for l in v["landlord"]["leases"].as_array().ok_or("no landlord leases")? {
        let l: leasehold::landlord::SnapshotLease<serde_json::Value> =
            serde_json::from_value(l.clone()).map_err(|e| e.to_string())?;
        let exp = if l.remaining == FOREVER { FOREVER } else { now.saturating_add(l.remaining) };
        leases.insert(l.cookie, exp);
    }
    let mut regs = BTreeMap::new();
    for r in v["registrations"].as_array().ok_or("no registrations")? {
        let id: u64 = serde_json::from_value(r["id"].clone()).map_err(|e| e.to_string())?;
        let cookie: Cookie =
            serde_json::from_value(r["cookie"].clone()).map_err(|e| e.to_string())?;
        regs.insert(RegistrationId(id), cookie);
    }
    Ok((regs, leases))
}

impl Actor for DiscoveryHost {
    fn poll_timeout(&self) -> Option<Millis> {
        let svc = self.svc.as_ref()?;
        [svc.poll_timeout(), self.rel.commit_at, self.disk.poll_timeout()]
            .into_iter()
            .flatten()
            .min()
    }

    fn handle_timeout(&mut self, now: Millis) {
        self.ctx.borrow_mut().touched_landlords.push(self.id);
        if self.svc.is_none() {
            return;
        }
        let mut synced = false;
        if self.disk.poll_timeout().is_some_and(|t| t <= now) {
            synced = self.disk.handle_timeout(now);
        }
        if self.rel.commit_at.is_some_and(|t| t <= now) {
            self.rel.commit_at = None;
            if !self.disk.committing() {
                let svc = self.svc.as_mut().expect("up");
                self.disk.commit(svc, now);
            }
        }
        let svc = self.svc.as_mut().expect("up");
        if svc.poll_timeout().is_some_and(|t| t <= now) {
            svc.handle_timeout(now);
        }
        self.after(now, synced);
    }

    fn poll_outgoing(&mut self, _now: Millis) -> Option<Outgoing> {
        self.rel.outbox.pop_front()
    }

    fn handle_message(&mut self, from: NodeId, message: Message, now: Millis) {
        let id = self.id;
        self.ctx.borrow_mut().touched_landlords.push(id);
        if self.svc.is_none() {
            self.ctx.borrow_mut().trace(|| format!("discovery {id} is down: drops a message"));
            return;
        }
        match message {
            Message::Request(req) => {
                self.rel.note_request(from, req.id, &self.ctx);
                self.handle_lease_request(from, req, now);
            }
            Message::Bytes(b) => self.handle_bytes(from, b, now),
            Message::Reply(_) => {}
        }
        self.after(now, false);
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

// ---------------------------------------------------------------------------------------------
// The client side

/// The books the discovery checks keep in [`Ctx`].
#[derive(Default)]
pub struct DiscoBooks {
    /// Per (service, event registration): each event handed out, by sequence number, with its
    /// fingerprint.
    pub events: BTreeMap<(LandlordId, EventId), BTreeMap<u64, u64>>,
    /// Discard requests the service carried out (each counted as it arrived, so a
    /// duplicated request counts twice), per (service, registration lease, registrar): each
    /// may explain one discard the rules would not (the registrar may be rediscovered between
    /// two).
    pub discards: BTreeMap<(LandlordId, Cookie, RegistrarId), u32>,
    /// Registrations the service said ended (without a reply: lease over, or a definite
    /// delivery failure), once durable.
    pub ended: BTreeSet<(LandlordId, RegistrationId)>,
}

/// What a client asked for in one register request.
#[derive(Debug, Clone)]
struct Asked {
    groups: Groups,
    locators: BTreeSet<Locator>,
    hold: Millis,
    renew: Millis,
    sent: Option<(Millis, Millis)>,
    request: DiscoveryRequest,
    encoding: Encoding,
}

/// A client's view of one registration (one event registration).
#[derive(Debug, Clone, Default)]
struct ClientReg {
    /// The handback it was registered with.
    handback: Vec<u8>,
    cookie: Option<Cookie>,
    /// The sequence number the first event follows (from the register reply), if known.
    first_after: Option<u64>,
    /// The last event accepted, and the fingerprints of every event accepted.
    last: Option<u64>,
    seen: BTreeMap<u64, u64>,
    /// The registrars discovered and not discarded since, as its events say.
    held: BTreeSet<RegistrarId>,
    /// Its groups or locators were changed after it was made.
    changed: bool,
    /// The client gave up on it (it answered its events "unknown event").
    dead: bool,
}

/// The discovery side of a holder host.
pub struct DiscoClient {
    /// The service's node and id.
    pub service: (NodeId, LandlordId),
    next_id: u64,
    asked: BTreeMap<Vec<u8>, Asked>,
    /// Register requests waiting for their reply: request id -> handback.
    pending: BTreeMap<u64, Vec<u8>>,
    regs: BTreeMap<EventId, ClientReg>,
    queued: VecDeque<u64>,
    outbox: VecDeque<Outgoing>,
    /// Probability of answering an event with an indefinite failure.
    pub fail_rate: f64,
    /// Probability of answering an event "unknown event" (the registration is then cancelled).
    pub unknown_rate: f64,
}

impl DiscoClient {
    /// A client of the service at `service`.
    pub fn new(service: (NodeId, LandlordId), node: NodeId) -> DiscoClient {
        DiscoClient {
            service,
            next_id: (node as u64) << 48 | 1 << 40,
            asked: BTreeMap::new(),
            pending: BTreeMap::new(),
            regs: BTreeMap::new(),
            queued: VecDeque::new(),
            outbox: VecDeque::new(),
            fail_rate: 0.0,
            unknown_rate: 0.0,
        }
    }

    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Asks the service for a registration.
    #[allow(clippy::too_many_arguments)]
    pub fn register(
        &mut self,
        node: NodeId,
        groups: Groups,
        locators: BTreeSet<Locator>,
        duration: Millis,
        hold: Millis,
        renew: Millis,
        json: bool,
    ) {
        let id = self.id();
        let handback = format!("n{node}-{id}").into_bytes();
        let request = DiscoveryRequest {
            id,
            body: DiscoveryRequestBody::Register {
                groups: groups.clone(),
                locators: locators.iter().cloned().collect(),
                handback: handback.clone(),
                duration,
            },
        };
        let encoding = if json { Encoding::Json } else { Encoding::Binary };
        self.asked.insert(
            handback.clone(),
            Asked { groups, locators, hold, renew, sent: None, request, encoding },
        );
        self.pending.insert(id, handback);
        self.queued.push_back(id);
    }

    /// Registrations it knows the cookie of and still follows, with the registrars each holds.
    pub fn live(&self) -> Vec<(EventId, Cookie, Vec<RegistrarId>)> {
        self.regs
            .iter()
            .filter(|(_, r)| !r.dead)
            .filter_map(|(e, r)| r.cookie.map(|c| (*e, c, r.held.iter().copied().collect())))
            .collect()
    }

    /// The cookie of registration `e`'s lease, once its register reply came.
    pub fn cookie_of(&self, e: EventId) -> Option<Cookie> {
        self.regs.get(&e).and_then(|r| r.cookie)
    }

    /// Asks the service to discard `g` from registration `e`.
    pub fn discard(&mut self, e: EventId, g: RegistrarId) {
        let id = self.id();
        let Some(cookie) = self.regs.get(&e).and_then(|r| r.cookie) else { return };
        let req =
            DiscoveryRequest { id, body: DiscoveryRequestBody::Discard { cookie, registrar: g } };
        self.send(req, Encoding::Binary);
    }

    /// Changes registration `e`'s groups or locators.
    pub fn change(&mut self, e: EventId, body: impl FnOnce(Cookie) -> DiscoveryRequestBody) {
        let id = self.id();
        let Some(r) = self.regs.get_mut(&e) else { return };
        let Some(cookie) = r.cookie else { return };
        r.changed = true;
        self.send(DiscoveryRequest { id, body: body(cookie) }, Encoding::Binary);
    }

    fn send(&mut self, req: DiscoveryRequest, enc: Encoding) {
        let to = Address::Node(self.service.0);
        self.outbox.push_back(Outgoing { to, message: Message::Bytes(req.encode(enc)) });
    }

    /// The next message to send; `sent` is called with the register requests as they leave.
    pub fn poll_outgoing(&mut self, now: Millis, real: Millis) -> Option<Outgoing> {
        if let Some(o) = self.outbox.pop_front() {
            return Some(o);
        }
        let id = self.queued.pop_front()?;
        let hb = self.pending.get(&id)?.clone();
        let a = self.asked.get_mut(&hb)?;
        a.sent = Some((now, real));
        let bytes = a.request.encode(a.encoding);
        Some(Outgoing { to: Address::Node(self.service.0), message: Message::Bytes(bytes) })
    }

    /// A reply to a register request: the lease to keep renewing, when it was asked for, and
    /// for how long to keep it.
    pub fn on_reply(
        &mut self,
        bytes: &[u8],
        ctx: &mut Ctx,
        node: NodeId,
    ) -> Option<(Reply, Millis, Millis, Millis, Millis)> {
        let enc = if bytes.first() == Some(&b'{') { Encoding::Json } else { Encoding::Binary };
        let reply = DiscoveryReply::decode(bytes, enc, &Limits::default()).ok()?;
        ctx.ack_id(node, reply.landlord, reply.id);
        let hb = self.pending.remove(&reply.id)?;
        let a = self.asked.get(&hb)?.clone();
        let (sent_local, sent_real) = a.sent?;
        let DiscoveryReplyBody::Registered { cookie, duration, event_id, sequence, .. } =
            reply.body
        else {
            return None;
        };
        let r = self.regs.entry(event_id).or_default();
        r.handback = hb;
        r.cookie = Some(cookie);
        r.first_after = Some(sequence);
        if let Some(&first) = r.seen.keys().next() {
            if first != sequence + 1 {
                ctx.fail(
                    Check::Discovery,
                    format!(
                        "node {node}: registration {event_id} was registered with sequence \
                         number {sequence}, but its first event is {first}"
                    ),
                );
            }
        }
        if r.dead {
            // It answered an event "unknown event" before this reply came: the service cancels
            // the registration, and the client never starts renewing it.
            return None;
        }
        let as_grant = Reply {
            id: reply.id,
            landlord: reply.landlord,
            body: ReplyBody::Granted { cookie, duration },
        };
        Some((as_grant, sent_local, sent_real, a.hold, a.renew))
    }

    /// An event: checked, and answered (or failed, as the client's faults say). Returns the
    /// lease to stop renewing if the client gave up on the registration.
    pub fn on_event(
        &mut self,
        e: &RemoteDiscoveryEvent,
        ctx: &mut Ctx,
        node: NodeId,
        rng: &mut ChaCha12Rng,
        faults_on: bool,
    ) -> (EventReplyBody, Option<Lease>) {
        let sid = self.service.1;
        let Some(a) = self.asked.get(&e.handback).cloned() else {
            return (EventReplyBody::UnknownEvent, None);
        };
        let r = self.regs.entry(e.event_id).or_default();
        if r.handback.is_empty() {
            r.handback = e.handback.clone();
        }
        if r.dead {
            return (EventReplyBody::UnknownEvent, None);
        }
        let print = fingerprint(e);
        if let Some(last) = r.last {
            if e.sequence <= last {
                // Handed out again (a crash before its delivery was journaled, a lost answer).
                if r.seen.get(&e.sequence).is_some_and(|p| *p != print) {
                    ctx.fail(
                        Check::Discovery,
                        format!(
                            "node {node}: event {} of registration {} came again, different",
                            e.sequence, e.event_id
                        ),
                    );
                }
                return (EventReplyBody::Received, None);
            }
            if e.sequence != last + 1 {
                ctx.fail(
                    Check::Discovery,
                    format!(
                        "node {node}: registration {} got event {} after {last}: events lost",
                        e.event_id, e.sequence
                    ),
                );
            }
        } else if let Some(f) = r.first_after {
            if e.sequence != f + 1 {
                ctx.fail(
                    Check::Discovery,
                    format!(
                        "node {node}: registration {} was registered with sequence number {f}, \
                         but its first event is {}",
                        e.event_id, e.sequence
                    ),
                );
            }
        }
        if faults_on && unit(rng) < self.unknown_rate {
            r.dead = true;
            ctx.faults.event_failures += 1;
            let lease = r.cookie.map(|c| Lease::new(sid, c, 0));
            return (EventReplyBody::UnknownEvent, lease);
        }
        if faults_on && unit(rng) < self.fail_rate {
            ctx.faults.event_failures += 1;
            let err = WireError::from(&LeaseError::Indefinite("listener busy".into()));
            return (EventReplyBody::Error(err), None);
        }
        r.last = Some(e.sequence);
        r.seen.insert(e.sequence, print);
        for g in e.registrars() {
            if e.is_discarded() {
                if !r.held.remove(&g.id) {
                    ctx.fail(
                        Check::Discovery,
                        format!(
                            "node {node}: registration {} got a discarded event (#{}) for \
                             registrar {:x}, which it never discovered",
                            e.event_id, e.sequence, g.id.0
                        ),
                    );
                }
                let by_locator = g.locators.iter().any(|l| a.locators.contains(l));
                let by_group = a.groups.matches(&g.groups);
                // A discard it asked for explains one discard the rules would not; only such
                // a discard spends the request (a passive discard by group may come first,
                // and the request then discards the registrar rediscovered since).
                let suspect = !r.changed && by_locator && !by_group;
                let asked = suspect
                    && r.cookie.is_some_and(|c| {
                        let k = (sid, c, g.id);
                        match ctx.disco.discards.get_mut(&k) {
                            Some(n) if *n > 1 => {
                                *n -= 1;
                                true
                            }
                            Some(_) => ctx.disco.discards.remove(&k).is_some(),
                            None => false,
                        }
                    });
                if suspect && !asked {
                    ctx.fail(
                        Check::Discovery,
                        format!(
                            "node {node}: registration {} (groups {:?}, locators {:?}) wants \
                             registrar {:x} (groups {:?}, at {:?}) by locator only, yet it was \
                             discarded (event #{}) without asking",
                            e.event_id,
                            a.groups,
                            a.locators,
                            g.id.0,
                            g.groups,
                            g.locators,
                            e.sequence
                        ),
                    );
                }
            } else if !r.held.insert(g.id) {
                ctx.fail(
                    Check::Discovery,
                    format!(
                        "node {node}: registration {} got a second discovered event (#{}) for \
                         registrar {:x} without a discard between",
                        e.event_id, e.sequence, g.id.0
                    ),
                );
            }
        }
        (EventReplyBody::Received, None)
    }

    /// Queues an answer to an event.
    pub fn answer(&mut self, e: &RemoteDiscoveryEvent, body: EventReplyBody) {
        let r = EventReply { event_id: e.event_id, sequence: e.sequence, body };
        let to = Address::Node(self.service.0);
        self.outbox.push_back(Outgoing { to, message: Message::Bytes(r.encode(Encoding::Binary)) });
    }

    /// Handles a discovery message; see the holder host.
    pub fn is_event(bytes: &[u8]) -> bool {
        kind(bytes) == Some(KIND_EVENT)
    }

    /// Decodes an event.
    pub fn decode_event(bytes: &[u8]) -> Option<RemoteDiscoveryEvent> {
        RemoteDiscoveryEvent::decode(bytes, Encoding::Binary, &Limits::default()).ok()
    }
}
