//! Coordination in the simulator: landlords with exclusive resources, a pool, fencing tokens
//! and watches; clients that contend for locks (waiting for them, writing to resources fenced
//! by their tokens) and watch them.
//!
//! Checks (besides every lease check of the simulator, which the acquired leases get too):
//!
//! - never two leases of an exclusive resource at a landlord (after every step);
//! - every token a landlord hands out in an acquired reply that leaves it (durable) is greater
//!   than every token it handed out before, across crashes and restores;
//! - a careful holder (it writes only while its lease is still good by its own clock, counted
//!   from when it sent the request) is never refused by the resource's fence: the landlord gave
//!   no one else the resource meanwhile (excused only by a clock step that the protocol cannot
//!   see, as check (a));
//! - every watcher sees event numbers one after the other, or is told exactly which it missed;
//!   every grant and every end of a watched lease once, an end only after its grant, and at
//!   most one holder of a resource at a time; at the end, what it believes is held is what the
//!   landlord holds.

use std::any::Any;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

use leasehold::coord::wire::{CoordReply, CoordReplyBody, CoordRequest, CoordRequestBody};
use leasehold::coord::{CoordConfig, EventKind, Events, Fence, Pool, Selector};
use leasehold::simnet::{Actor, Address, Clock, Message, NodeId, Outgoing};
use leasehold::{Cookie, Encoding, ErrorCode, LandlordId, Limits, Millis, Request, RequestBody};
use rand_chacha::ChaCha12Rng;

use crate::nodes::{range, unit, Check, Shared};

/// The resources clients acquire: two exclusive ones, a pool, a pool member by name.
pub const RESOURCES: [&[u8]; 4] = [b"x/0", b"x/1", b"pool", b"m/0"];
/// What watchers select.
pub const SELECTORS: [(&[u8], bool); 3] = [(b"x/", true), (b"m/", true), (b"x/0", false)];

/// The coordination every simulated landlord runs with.
pub fn config() -> CoordConfig {
    CoordConfig::new()
        .exclusive(Selector::prefix("x/"))
        .pool(Pool::new("pool", ["m/0", "m/1"]))
        .with_history(6)
}

/// Whether a resource is exclusive under [`config`].
pub fn exclusive(r: &[u8]) -> bool {
    r.starts_with(b"x/") || r.starts_with(b"m/")
}

/// Coordination's books in the shared context.
#[derive(Default)]
pub struct CoordBooks {
    /// The last token each landlord handed out in an acquired reply that left it.
    pub last_token: BTreeMap<LandlordId, u64>,
    /// The resources' fences.
    pub fences: BTreeMap<(LandlordId, Vec<u8>), Fence>,
    /// Writes a careful holder made that its fence refused: (node, landlord, real time the
    /// acquire was sent, what happened), for the world to judge (a clock step excuses them).
    pub careful_fenced: Vec<(NodeId, LandlordId, Millis, String)>,
    /// Counters for the summary.
    pub acquired: u64,
    pub writes: u64,
    pub fenced: u64,
    pub events: u64,
    pub missed: u64,
}

/// One line about a coordination message, if the bytes are one.
pub fn describe(b: &[u8]) -> Option<String> {
    let l = Limits::default();
    if let Ok(r) = CoordRequest::decode(b, Encoding::Binary, &l) {
        let what = match r.body {
            CoordRequestBody::Acquire { resource, duration, wait, .. } => {
                format!("acquire {} {duration} wait {wait}", String::from_utf8_lossy(&resource))
            }
            CoordRequestBody::Watch { resource, prefix, .. } => {
                format!(
                    "watch {}{}",
                    String::from_utf8_lossy(&resource),
                    if prefix { "*" } else { "" }
                )
            }
            CoordRequestBody::Poll { since, wait, .. } => format!("poll since {since} wait {wait}"),
            CoordRequestBody::Holders { .. } => "holders".into(),
        };
        return Some(format!("coord request #{} {what}", r.id));
    }
    let r = CoordReply::decode(b, Encoding::Binary, &l).ok()?;
    let what = match r.body {
        CoordReplyBody::Acquired { token, resource, waited, .. } => {
            format!("acquired {} token {token} waited {waited}", String::from_utf8_lossy(&resource))
        }
        CoordReplyBody::Watching { event_id, .. } => format!("watching {event_id}"),
        CoordReplyBody::Events(e) => format!(
            "events {:?}{}",
            e.events.iter().map(|e| (e.sequence, e.kind, e.token)).collect::<Vec<_>>(),
            e.missed.map_or(String::new(), |m| format!(" missed {}..={}", m.from, m.to))
        ),
        CoordReplyBody::Holders { holders } => format!("{} holders", holders.len()),
        CoordReplyBody::Error(e) => format!("error {} {}", e.code, e.message),
    };
    Some(format!("coord reply #{} from {} {what}", r.id, r.landlord))
}

/// A lock a client holds.
#[derive(Debug, Clone)]
struct HeldLock {
    landlord: LandlordId,
    cookie: Cookie,
    token: u64,
    resource: Vec<u8>,
    /// Until when (local) it is good, counted from the send time.
    good_until: Millis,
    /// When (local) it lets go.
    release_at: Millis,
    /// Real time the acquire was sent.
    sent_real: Millis,
}

/// A watch a client keeps.
#[derive(Debug, Clone)]
pub struct WatchState {
    /// Its landlord.
    pub landlord: LandlordId,
    /// Its lease's cookie.
    pub cookie: Cookie,
    /// What it selects.
    pub selector: Selector,
    /// The last event number applied.
    pub last: u64,
    /// What the watcher believes is held: resource -> tokens.
    pub live: BTreeMap<Vec<u8>, BTreeSet<u64>>,
    granted: BTreeSet<u64>,
    ended: BTreeSet<u64>,
    renew_at: Millis,
}

impl WatchState {
    /// Applies a poll's answer; an error message if it breaks a rule.
    pub fn apply(&mut self, e: &Events) -> Result<(), String> {
        if let Some(m) = e.missed {
            if m.from != self.last + 1 || m.to != e.last || !e.events.is_empty() {
                return Err(format!(
                    "missed {}..={} (last {}) after event {}, with {} events",
                    m.from,
                    m.to,
                    e.last,
                    self.last,
                    e.events.len()
                ));
            }
            self.last = m.to;
            self.live.clear();
            for h in e.current.iter().flatten() {
                self.live.entry(h.resource.clone()).or_default().insert(h.token);
            }
            return Ok(());
        }
        for ev in &e.events {
            if ev.sequence != self.last + 1 {
                return Err(format!("event {} after event {}", ev.sequence, self.last));
            }
            self.last = ev.sequence;
            match ev.kind {
                EventKind::Granted => {
                    if !self.granted.insert(ev.token) || self.ended.contains(&ev.token) {
                        return Err(format!("token {} granted twice", ev.token));
                    }
                    let held = self.live.entry(ev.resource.clone()).or_default();
                    held.insert(ev.token);
                    if exclusive(&ev.resource) && held.len() > 1 {
                        return Err(format!(
                            "two holders of {} at once: tokens {held:?}",
                            String::from_utf8_lossy(&ev.resource)
                        ));
                    }
                }
                EventKind::Renewed => {}
                EventKind::Cancelled | EventKind::Expired => {
                    if !self.ended.insert(ev.token) {
                        return Err(format!("token {} ended twice", ev.token));
                    }
                    let known =
                        self.live.get_mut(&ev.resource).is_some_and(|s| s.remove(&ev.token));
                    if !known && exclusive(&ev.resource) {
                        return Err(format!("token {} ended, never seen held", ev.token));
                    }
                }
            }
        }
        if e.last < self.last {
            return Err(format!("last {} below the events applied ({})", e.last, self.last));
        }
        Ok(())
    }

    /// Tokens believed held, per exclusive resource.
    pub fn believed(&self) -> BTreeMap<Vec<u8>, BTreeSet<u64>> {
        self.live
            .iter()
            .filter(|(r, t)| exclusive(r) && !t.is_empty())
            .map(|(r, t)| (r.clone(), t.clone()))
            .collect()
    }
}

/// A client node: contends for locks (acquire, maybe waiting; write to the fenced resource;
/// release) and keeps one watch.
pub struct CoordClient {
    node: NodeId,
    /// Its clock.
    pub clock: Clock,
    landlords: Vec<LandlordId>,
    /// Whether it writes without checking its lease (only the fence protects the resource).
    pub careless: bool,
    drift_ppm: u32,
    rng: ChaCha12Rng,
    ctx: Shared,
    next_id: u64,
    outbox: VecDeque<Outgoing>,
    /// The acquire in flight: (id, landlord, local send time, real send time, give up at).
    acquiring: Option<(u64, LandlordId, Millis, Millis, Millis)>,
    held: Option<HeldLock>,
    next_write: Millis,
    next_try: Millis,
    /// Its watch, once registered.
    pub watch: Option<WatchState>,
    /// A watch request or poll in flight: (id, give up at).
    watch_req: Option<(u64, Millis)>,
    next_watch_try: Millis,
    /// What the watch being registered selects.
    pending_selector: Option<Selector>,
    /// Whether it still works (false at the end, to let the world look).
    pub active: bool,
}

impl CoordClient {
    /// A client of `landlords`.
    pub fn new(
        node: NodeId,
        clock: Clock,
        landlords: Vec<LandlordId>,
        careless: bool,
        drift_ppm: u32,
        rng: ChaCha12Rng,
        ctx: Shared,
    ) -> CoordClient {
        CoordClient {
            node,
            clock,
            landlords,
            careless,
            drift_ppm,
            rng,
            ctx,
            next_id: 1,
            outbox: VecDeque::new(),
            acquiring: None,
            held: None,
            next_write: Millis::MAX,
            next_try: 0,
            watch: None,
            watch_req: None,
            next_watch_try: 0,
            pending_selector: None,
            active: true,
        }
    }

    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    fn send_coord(&mut self, landlord: LandlordId, body: CoordRequestBody) -> u64 {
        let id = self.id();
        let b = CoordRequest { id, body }.encode(Encoding::Binary);
        self.outbox
            .push_back(Outgoing { to: Address::Landlord(landlord), message: Message::Bytes(b) });
        id
    }

    fn send_lease(&mut self, landlord: LandlordId, body: RequestBody) -> u64 {
        let id = self.id();
        self.outbox.push_back(Outgoing {
            to: Address::Landlord(landlord),
            message: Message::Request(Request { id, body }),
        });
        id
    }

    fn pick_landlord(&mut self) -> LandlordId {
        let i = range(&mut self.rng, 0, self.landlords.len() as i64 - 1) as usize;
        self.landlords[i]
    }

    fn work(&mut self, now: Millis) {
        if !self.active {
            return;
        }
        let real = self.ctx.borrow().real;
        // Locks.
        if self.acquiring.is_some_and(|a| now >= a.4) {
            self.acquiring = None;
        }
        if self.held.is_none() && self.acquiring.is_none() && now >= self.next_try {
            let landlord = self.pick_landlord();
            let resource = RESOURCES[range(&mut self.rng, 0, RESOURCES.len() as i64 - 1) as usize];
            let duration = range(&mut self.rng, 300, 4_000);
            let wait = if unit(&mut self.rng) < 0.5 { 0 } else { range(&mut self.rng, 1, 3_000) };
            let body = CoordRequestBody::Acquire {
                resource: resource.to_vec(),
                duration,
                wait,
                holder: vec![self.node as u8],
            };
            let id = self.send_coord(landlord, body);
            self.acquiring = Some((id, landlord, now, real, now + wait + 5_000));
        }
        if let Some(h) = self.held.clone() {
            if now >= h.release_at {
                self.send_lease(h.landlord, RequestBody::Cancel { cookie: h.cookie });
                self.held = None;
                self.next_try = now + range(&mut self.rng, 0, 500);
            } else if now >= self.next_write {
                self.write(&h, now);
                self.next_write = now + range(&mut self.rng, 20, 400);
            }
        }
        // The watch.
        if self.watch_req.is_some_and(|w| now >= w.1) {
            self.watch_req = None;
        }
        if self.watch_req.is_none() && now >= self.next_watch_try {
            match &self.watch {
                None => {
                    let landlord = self.pick_landlord();
                    let (r, prefix) =
                        SELECTORS[range(&mut self.rng, 0, SELECTORS.len() as i64 - 1) as usize];
                    let body = CoordRequestBody::Watch {
                        resource: r.to_vec(),
                        prefix,
                        renewals: unit(&mut self.rng) < 0.5,
                        duration: range(&mut self.rng, 2_000, 20_000),
                        handback: vec![self.node as u8],
                    };
                    let id = self.send_coord(landlord, body);
                    self.watch_req = Some((id, now + 3_000));
                    self.pending_selector = Some(Selector { resource: r.to_vec(), prefix });
                }
                Some(w) => {
                    let (landlord, cookie, since) = (w.landlord, w.cookie, w.last);
                    let wait = range(&mut self.rng, 0, 2_000);
                    let max = range(&mut self.rng, 0, 4) as u32;
                    let id = self
                        .send_coord(landlord, CoordRequestBody::Poll { cookie, since, wait, max });
                    self.watch_req = Some((id, now + wait + 3_000));
                }
            }
        }
        if let Some(w) = &mut self.watch {
            if now >= w.renew_at {
                w.renew_at = now + 1_000;
                let (l, c) = (w.landlord, w.cookie);
                self.send_lease(l, RequestBody::Renew { cookie: c, duration: 20_000 });
            }
        }
    }

    /// Writes to the resource's fence with the lock's token.
    fn write(&mut self, h: &HeldLock, now: Millis) {
        let good = now < h.good_until;
        if !good && !self.careless {
            return;
        }
        let mut c = self.ctx.borrow_mut();
        let fence = c.coord.fences.entry((h.landlord, h.resource.clone())).or_default();
        let r = fence.check(h.token);
        c.coord.writes += 1;
        if let Err(f) = r {
            c.coord.fenced += 1;
            if good {
                let what = format!(
                    "client {} holds {} of landlord {} with token {} (good until its local {}, now \
                     {now}), yet the fence refused it: {f}",
                    self.node,
                    String::from_utf8_lossy(&h.resource),
                    h.landlord,
                    h.token,
                    h.good_until
                );
                c.coord.careful_fenced.push((self.node, h.landlord, h.sent_real, what));
            }
        }
    }

    fn on_coord_reply(&mut self, r: CoordReply, now: Millis) {
        if let Some((id, landlord, sent, sent_real, _)) = self.acquiring {
            if r.id == id && r.landlord == landlord {
                self.acquiring = None;
                self.next_try = now + range(&mut self.rng, 0, 300);
                if let CoordReplyBody::Acquired { cookie, duration, token, resource, waited } =
                    r.body
                {
                    let margin = duration.saturating_mul(self.drift_ppm as i64) / 1_000_000 + 1;
                    let good_until = sent + waited + duration - margin;
                    let hold = range(&mut self.rng, 0, duration + 1_000);
                    self.held = Some(HeldLock {
                        landlord,
                        cookie,
                        token,
                        resource,
                        good_until,
                        release_at: now + hold,
                        sent_real,
                    });
                    self.next_write = now;
                    self.ctx.borrow_mut().coord.acquired += 1;
                }
                return;
            }
        }
        let Some((id, _)) = self.watch_req else { return };
        if r.id != id {
            return;
        }
        self.watch_req = None;
        match r.body {
            CoordReplyBody::Watching { cookie, current, .. } => {
                let Some(selector) = self.pending_selector.take() else { return };
                let mut w = WatchState {
                    landlord: r.landlord,
                    cookie,
                    selector,
                    last: 0,
                    live: BTreeMap::new(),
                    granted: BTreeSet::new(),
                    ended: BTreeSet::new(),
                    renew_at: now + 1_000,
                };
                for h in current {
                    w.live.entry(h.resource).or_default().insert(h.token);
                }
                self.watch = Some(w);
            }
            CoordReplyBody::Events(e) => {
                let Some(w) = &mut self.watch else { return };
                if r.landlord != w.landlord {
                    return;
                }
                let mut c = self.ctx.borrow_mut();
                c.coord.events += e.events.len() as u64;
                if e.missed.is_some() {
                    c.coord.missed += 1;
                }
                if let Err(m) = w.apply(&e) {
                    let node = self.node;
                    c.fail(Check::Coord, format!("watcher {node} of landlord {}: {m}", w.landlord));
                }
            }
            CoordReplyBody::Error(e) if e.error_code() == Some(ErrorCode::UnknownLease) => {
                // The watch is gone (its lease ran out while it was cut off): watch again.
                self.watch = None;
                self.next_watch_try = now + range(&mut self.rng, 0, 500);
            }
            _ => {}
        }
    }
}

impl CoordClient {
    /// When the client next wants to act (local).
    fn due(&self) -> Millis {
        if !self.active {
            return Millis::MAX;
        }
        let mut t = self.next_try.max(0);
        if let Some(h) = &self.held {
            t = t.min(h.release_at).min(self.next_write);
        }
        if let Some(a) = self.acquiring {
            t = t.max(0).min(a.4);
        }
        if let Some(w) = &self.watch {
            t = t.min(w.renew_at);
        }
        t = t.min(self.watch_req.map_or(self.next_watch_try, |w| w.1));
        t
    }
}

impl Actor for CoordClient {
    fn poll_timeout(&self) -> Option<Millis> {
        let t = self.due();
        (t != Millis::MAX).then_some(t)
    }

    fn handle_timeout(&mut self, now: Millis) {
        self.work(now);
    }

    fn poll_outgoing(&mut self, _now: Millis) -> Option<Outgoing> {
        self.outbox.pop_front()
    }

    fn handle_message(&mut self, from: NodeId, message: Message, now: Millis) {
        let node = self.node;
        match message {
            Message::Bytes(b) => {
                let Ok(r) = CoordReply::decode(&b, Encoding::Binary, &Limits::default()) else {
                    return;
                };
                {
                    let mut c = self.ctx.borrow_mut();
                    c.ack_id(node, r.landlord, r.id);
                    c.touched_nodes.push(node);
                    let m = Message::Bytes(b.clone());
                    c.trace(|| {
                        format!(
                            "client {node} (local {now}) from node {from}: {}",
                            crate::nodes::describe(&m)
                        )
                    });
                }
                self.on_coord_reply(r, now);
            }
            // A cancel or a watch renewal answered (a watch that is gone is made again
            // when its next poll is told so).
            Message::Reply(r) => self.ctx.borrow_mut().ack_id(node, r.landlord, r.id),
            Message::Request(_) => {}
        }
        self.work(now);
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}
