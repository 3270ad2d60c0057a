//! A landlord's coordination state (see [`crate::coord`]): fencing tokens, the holders of
//! exclusive resources, watches and their events, and the requests held waiting.
//!
//! What is durable (in the binary snapshot's coordination section and replayed from the
//! journal): the last token granted, each lease's token and holder label, the next event id,
//! every watch with its lease, sequence number and the events it keeps. What is derived (built
//! again after a restore): the index of exclusive holders, the watch indexes. What is volatile
//! (lost in a crash, on purpose: see the module docs of [`crate::coord`]): waiting requests and
//! answers not yet handed out.
//!
//! The hooks (`placed`, `renewed`, `ended`) run on the same calls in live operation and in
//! replay, so that replay rebuilds exactly what the live landlord had: tokens come from the
//! grant records, events from the grant, renew, cancel and sweep records.
//!
//! Journal records (numbering continues [`super::durable`]'s; every one starts with `dt`):
//!
//! | kind | record      | body                                                      |
//! |------|-------------|-----------------------------------------------------------|
//! | 7    | coord on    | (nothing): coordination starts here                       |
//! | 8    | holder      | label bytes: the label of the lease granted next          |
//! | 9    | watch       | cookie, duration, event id, flags, selector, handback     |
//! | 10   | watch sweep | count: that many watches expired, in order of deadline    |
//!
//! A watch's lease is renewed and cancelled with the landlord's own renew and cancel records
//! (its cookie's slot bits are all ones, a slot no lease ever has).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};

use serde::{Deserialize, Serialize};

use super::{Landlord, LeaseError, Result, NIL};
use crate::coord::wire::{CoordReply, CoordReplyBody, CoordRequest, CoordRequestBody};
use crate::coord::{
    Acquire, CoordConfig, CoordStats, EventKind, Handled, LeaseEvent, Selector, Ticket,
};
use crate::event::EventId;
use crate::journal::{put_bytes, put_varint, Durable, Reader};
use crate::lease::{Cookie, LandlordId};
use crate::policy::LeasePolicy;
use crate::time::{self, Duration, Millis};
use crate::wire::WireError;

pub(super) const COORD_ON: u8 = 7;
pub(super) const HOLDER: u8 = 8;
pub(super) const WATCH: u8 = 9;
pub(super) const WATCH_SWEEP: u8 = 10;

/// Token and label of one lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Info {
    pub(super) token: u64,
    pub(super) holder: Vec<u8>,
}

/// One watch registration.
#[derive(Debug, Clone)]
pub(super) struct Watch {
    pub(super) cookie: Cookie,
    pub(super) selector: Selector,
    pub(super) renewals: bool,
    pub(super) handback: Vec<u8>,
    /// On the landlord's clock.
    pub(super) expiration: Millis,
    /// Number of the last event issued.
    pub(super) sequence: u64,
    /// The last events, oldest first.
    pub(super) events: VecDeque<LeaseEvent>,
    /// Long polls waiting for its next event (volatile).
    pub(super) polls: Vec<u64>,
}

/// A request held to be answered later.
#[derive(Debug, Clone)]
pub(super) enum Wait {
    Acquire {
        id: u64,
        /// The queue it waits in: the resource, or the pool's name.
        target: Vec<u8>,
        duration: Duration,
        holder: Vec<u8>,
        /// When it arrived (landlord's clock).
        arrived: Millis,
        deadline: Millis,
    },
    Poll {
        id: u64,
        event_id: EventId,
        since: u64,
        max: usize,
        deadline: Millis,
    },
}

impl Wait {
    fn deadline(&self) -> Millis {
        match self {
            Wait::Acquire { deadline, .. } | Wait::Poll { deadline, .. } => *deadline,
        }
    }
}

/// Everything coordination keeps for one landlord.
pub(super) struct Coord<R> {
    pub(super) landlord: LandlordId,
    /// A resource's bytes (its durable encoding).
    key: fn(&R, &mut Vec<u8>),
    /// A resource from its bytes.
    pub(super) make: fn(&[u8]) -> Result<R>,
    scratch: Vec<u8>,
    pub(super) config: CoordConfig,
    exact: HashSet<Vec<u8>>,
    prefixes: Vec<Vec<u8>>,
    pub(super) member_pool: HashMap<Vec<u8>, usize>,
    pub(super) pool_index: HashMap<Vec<u8>, usize>,
    // --- durable ---
    pub(super) last_token: u64,
    pub(super) info: HashMap<Cookie, Info>,
    pub(super) next_holder: Option<Vec<u8>>,
    pub(super) next_event_id: EventId,
    pub(super) watches: BTreeMap<EventId, Watch>,
    // --- derived ---
    /// Exclusive resources held, and by which leases (one, unless the configuration changed).
    pub(super) held: BTreeMap<Vec<u8>, Vec<Cookie>>,
    pub(super) by_cookie: HashMap<Cookie, EventId>,
    watch_exact: HashMap<Vec<u8>, Vec<EventId>>,
    watch_prefix: BTreeMap<Vec<u8>, Vec<EventId>>,
    /// Lengths of the watched prefixes (how many of each).
    prefix_lens: BTreeMap<usize, usize>,
    renewal_watches: usize,
    /// Watches by (expiration, event id).
    pub(super) watch_due: BTreeSet<(Millis, EventId)>,
    // --- volatile ---
    next_ticket: u64,
    pub(super) waits: HashMap<u64, Wait>,
    pub(super) queues: HashMap<Vec<u8>, VecDeque<u64>>,
    pub(super) deadlines: BTreeSet<(Millis, u64)>,
    pub(super) freed: VecDeque<Vec<u8>>,
    pub(super) ready: VecDeque<(Ticket, CoordReply)>,
    pub(super) ready_polls: VecDeque<u64>,
}

impl<R> Coord<R> {
    /// The watches whose leases ran out by `clock` (`deadline`: an expiration's end, grace
    /// included), earliest first.
    fn watches_due(&self, clock: Millis, deadline: impl Fn(Millis) -> Millis) -> Vec<EventId> {
        self.watch_due
            .iter()
            .take_while(|&&(exp, _)| exp != time::FOREVER && deadline(exp) < clock)
            .map(|&(_, id)| id)
            .collect()
    }

    pub(super) fn new(
        landlord: LandlordId,
        key: fn(&R, &mut Vec<u8>),
        make: fn(&[u8]) -> Result<R>,
    ) -> Coord<R> {
        Coord {
            landlord,
            key,
            make,
            scratch: Vec::new(),
            config: CoordConfig::new(),
            exact: HashSet::new(),
            prefixes: Vec::new(),
            member_pool: HashMap::new(),
            pool_index: HashMap::new(),
            last_token: 0,
            info: HashMap::new(),
            next_holder: None,
            next_event_id: 1,
            watches: BTreeMap::new(),
            held: BTreeMap::new(),
            by_cookie: HashMap::new(),
            watch_exact: HashMap::new(),
            watch_prefix: BTreeMap::new(),
            prefix_lens: BTreeMap::new(),
            renewal_watches: 0,
            watch_due: BTreeSet::new(),
            next_ticket: 1,
            waits: HashMap::new(),
            queues: HashMap::new(),
            deadlines: BTreeSet::new(),
            freed: VecDeque::new(),
            ready: VecDeque::new(),
            ready_polls: VecDeque::new(),
        }
    }

    /// The bytes of `r`, in the scratch buffer (take it back with [`Coord::give_back`]).
    pub(super) fn key_of(&mut self, r: &R) -> Vec<u8> {
        let mut k = std::mem::take(&mut self.scratch);
        k.clear();
        (self.key)(r, &mut k);
        k
    }

    pub(super) fn give_back(&mut self, k: Vec<u8>) {
        self.scratch = k;
    }

    fn set_config(&mut self, config: CoordConfig) {
        self.exact.clear();
        self.prefixes.clear();
        for s in &config.exclusive {
            if s.prefix {
                self.prefixes.push(s.resource.clone());
            } else {
                self.exact.insert(s.resource.clone());
            }
        }
        self.member_pool.clear();
        self.pool_index.clear();
        for (i, p) in config.pools.iter().enumerate() {
            self.pool_index.insert(p.name.clone(), i);
            for m in &p.members {
                self.member_pool.insert(m.clone(), i);
            }
        }
        let history = config.history.max(1);
        for w in self.watches.values_mut() {
            while w.events.len() > history {
                w.events.pop_front();
            }
        }
        self.config = config;
    }

    /// Whether any resource is exclusive.
    fn any_exclusive(&self) -> bool {
        !self.exact.is_empty() || !self.prefixes.is_empty() || !self.member_pool.is_empty()
    }

    pub(super) fn is_exclusive(&self, key: &[u8]) -> bool {
        self.exact.contains(key)
            || self.member_pool.contains_key(key)
            || self.prefixes.iter().any(|p| key.starts_with(p))
    }

    pub(super) fn next_ticket(&mut self) -> Ticket {
        let t = self.next_ticket;
        self.next_ticket += 1;
        Ticket(t)
    }

    pub(super) fn reply(&self, id: u64, body: CoordReplyBody) -> CoordReply {
        CoordReply { id, landlord: self.landlord, body }
    }

    pub(super) fn error_reply(&self, id: u64, e: &LeaseError) -> CoordReply {
        self.reply(id, CoordReplyBody::Error(WireError::from(e)))
    }

    // ---------- hooks: the same in live operation and in replay ----------

    /// A lease was placed: its token, its label, the holder index, `granted` events.
    pub(super) fn placed(&mut self, cookie: Cookie, r: &R, duration: Duration) {
        self.last_token += 1;
        let token = self.last_token;
        let holder = self.next_holder.take().unwrap_or_default();
        let k = self.key_of(r);
        if self.any_exclusive() && self.is_exclusive(&k) {
            self.held.entry(k.clone()).or_default().push(cookie);
        }
        self.emit(&k, EventKind::Granted, token, &holder, duration);
        self.give_back(k);
        self.info.insert(cookie, Info { token, holder });
    }

    /// A lease was renewed: `renewed` events to the watches that want them.
    pub(super) fn renewed(&mut self, cookie: Cookie, r: &R, duration: Duration) {
        if self.renewal_watches == 0 {
            return;
        }
        let (token, holder) =
            self.info.get(&cookie).map_or((0, Vec::new()), |i| (i.token, i.holder.clone()));
        let k = self.key_of(r);
        self.emit(&k, EventKind::Renewed, token, &holder, duration);
        self.give_back(k);
    }

    /// A lease ended (cancelled or expired): out of the holder index (waiters are served by
    /// the live caller), `cancelled` or `expired` events.
    pub(super) fn ended(&mut self, cookie: Cookie, r: &R, kind: EventKind) {
        let info = self.info.remove(&cookie).unwrap_or(Info { token: 0, holder: Vec::new() });
        let k = self.key_of(r);
        if let Some(hs) = self.held.get_mut(k.as_slice()) {
            hs.retain(|&c| c != cookie);
            if hs.is_empty() {
                self.held.remove(k.as_slice());
                let pool_waits = self
                    .member_pool
                    .get(k.as_slice())
                    .and_then(|&p| self.queues.get(&self.config.pools[p].name))
                    .is_some_and(|q| !q.is_empty());
                if pool_waits || self.queues.get(k.as_slice()).is_some_and(|q| !q.is_empty()) {
                    self.freed.push_back(k.clone());
                }
            }
        }
        self.emit(&k, kind, info.token, &info.holder, 0);
        self.give_back(k);
    }

    /// Appends an event to every watch that selects `key`.
    fn emit(&mut self, key: &[u8], kind: EventKind, token: u64, holder: &[u8], duration: Duration) {
        if self.watches.is_empty() {
            return;
        }
        let mut ids: Vec<EventId> = Vec::new();
        if let Some(v) = self.watch_exact.get(key) {
            ids.extend_from_slice(v);
        }
        for &len in self.prefix_lens.keys() {
            if len > key.len() {
                break;
            }
            if let Some(v) = self.watch_prefix.get(&key[..len]) {
                ids.extend_from_slice(v);
            }
        }
        if ids.is_empty() {
            return;
        }
        ids.sort_unstable();
        let history = self.config.history.max(1);
        for id in ids {
            let Some(w) = self.watches.get_mut(&id) else { continue };
            if kind == EventKind::Renewed && !w.renewals {
                continue;
            }
            w.sequence = w.sequence.saturating_add(1);
            w.events.push_back(LeaseEvent {
                sequence: w.sequence,
                kind,
                resource: key.to_vec(),
                token,
                holder: holder.to_vec(),
                duration,
            });
            while w.events.len() > history {
                w.events.pop_front();
            }
            if !w.polls.is_empty() {
                self.ready_polls.extend(w.polls.drain(..));
            }
        }
    }

    // ---------- watch indexes ----------

    pub(super) fn add_watch(&mut self, event_id: EventId, w: Watch) {
        self.by_cookie.insert(w.cookie, event_id);
        let r = w.selector.resource.clone();
        if w.selector.prefix {
            self.watch_prefix.entry(r.clone()).or_default().push(event_id);
            *self.prefix_lens.entry(r.len()).or_default() += 1;
        } else {
            self.watch_exact.entry(r).or_default().push(event_id);
        }
        if w.renewals {
            self.renewal_watches += 1;
        }
        self.watch_due.insert((w.expiration, event_id));
        self.watches.insert(event_id, w);
    }

    /// Removes a watch; its waiting polls are answered "unknown lease".
    pub(super) fn remove_watch(&mut self, event_id: EventId) -> Option<Watch> {
        let mut w = self.watches.remove(&event_id)?;
        self.by_cookie.remove(&w.cookie);
        let r = &w.selector.resource;
        let index = if w.selector.prefix {
            let n = self.prefix_lens.get_mut(&r.len()).expect("a watched prefix length");
            *n -= 1;
            if *n == 0 {
                self.prefix_lens.remove(&r.len());
            }
            self.watch_prefix.get_mut(r.as_slice())
        } else {
            self.watch_exact.get_mut(r.as_slice())
        };
        if let Some(v) = index {
            v.retain(|&i| i != event_id);
            if v.is_empty() {
                if w.selector.prefix {
                    self.watch_prefix.remove(r.as_slice());
                } else {
                    self.watch_exact.remove(r.as_slice());
                }
            }
        }
        if w.renewals {
            self.renewal_watches -= 1;
        }
        self.watch_due.remove(&(w.expiration, event_id));
        for t in std::mem::take(&mut w.polls) {
            if let Some(Wait::Poll { id, deadline, .. }) = self.waits.remove(&t) {
                self.deadlines.remove(&(deadline, t));
                let reply = self.error_reply(id, &LeaseError::UnknownLease);
                self.ready.push_back((Ticket(t), reply));
            }
        }
        Some(w)
    }

    pub(super) fn set_watch_expiration(&mut self, event_id: EventId, expiration: Millis) {
        if let Some(w) = self.watches.get_mut(&event_id) {
            self.watch_due.remove(&(w.expiration, event_id));
            w.expiration = expiration;
            self.watch_due.insert((expiration, event_id));
        }
    }

    // ---------- waits ----------

    pub(super) fn hold(&mut self, wait: Wait) -> Ticket {
        let t = self.next_ticket();
        self.deadlines.insert((wait.deadline(), t.0));
        match &wait {
            Wait::Acquire { target, .. } => {
                self.queues.entry(target.clone()).or_default().push_back(t.0)
            }
            Wait::Poll { event_id, .. } => {
                if let Some(w) = self.watches.get_mut(event_id) {
                    w.polls.push(t.0);
                }
            }
        }
        self.waits.insert(t.0, wait);
        t
    }

    /// Takes a wait out of every index.
    pub(super) fn unhold(&mut self, t: u64) -> Option<Wait> {
        let wait = self.waits.remove(&t)?;
        self.deadlines.remove(&(wait.deadline(), t));
        match &wait {
            Wait::Acquire { target, .. } => {
                if let Some(q) = self.queues.get_mut(target.as_slice()) {
                    q.retain(|&x| x != t);
                    if q.is_empty() {
                        self.queues.remove(target.as_slice());
                    }
                }
            }
            Wait::Poll { event_id, .. } => {
                if let Some(w) = self.watches.get_mut(event_id) {
                    w.polls.retain(|&x| x != t);
                }
                self.ready_polls.retain(|&x| x != t);
            }
        }
        Some(wait)
    }

    pub(super) fn stats(&self) -> CoordStats {
        CoordStats {
            last_token: self.last_token,
            held: self.held.len(),
            waiting: self.waits.len(),
            watches: self.watches.len(),
        }
    }
}

impl<R> Landlord<R> {
    /// Whether coordination is on ([`Landlord::enable_coordination`]).
    pub fn coordinated(&self) -> bool {
        self.coord.is_some()
    }

    /// The coordination settings in force, if coordination is on.
    pub fn coord_config(&self) -> Option<&CoordConfig> {
        self.coord.as_deref().map(|c| &c.config)
    }

    /// Counters of coordination (zeros if it is off).
    pub fn coord_stats(&self) -> CoordStats {
        self.coord.as_deref().map(Coord::stats).unwrap_or_default()
    }

    /// The fencing token of a lease still held (0 for one granted before coordination was
    /// turned on); `None` if the lease is not held or coordination is off.
    pub fn token(&self, cookie: Cookie) -> Option<u64> {
        let c = self.coord.as_deref()?;
        self.slot_of(cookie)?;
        Some(c.info.get(&cookie).map_or(0, |i| i.token))
    }

    fn coord_off() -> LeaseError {
        LeaseError::InvalidArgument(
            "coordination is not enabled on this landlord (enable_coordination)".into(),
        )
    }

    pub(super) fn coord_mut(&mut self) -> Result<&mut Coord<R>> {
        self.coord.as_deref_mut().ok_or_else(Self::coord_off)
    }

    /// Answers one coordination request: now, or later (with a ticket: the answer comes out of
    /// [`Landlord::poll_deferred`]).
    ///
    /// With a journal, an answer (now or later) may leave only once [`Landlord::journal_seq`],
    /// read right after the call that produced it, is durable.
    pub fn handle_coord(&mut self, request: &CoordRequest, now: Millis) -> Handled {
        let id = request.id;
        let landlord = self.config.id;
        let now_reply = |body| Handled::Now(CoordReply { id, landlord, body });
        let err = |e: LeaseError| now_reply(CoordReplyBody::Error(WireError::from(&e)));
        let Some(make) = self.coord.as_deref().map(|c| c.make) else {
            self.tick(now);
            return err(Self::coord_off());
        };
        match &request.body {
            CoordRequestBody::Acquire { resource, duration, wait, holder } => {
                let r = match make(resource) {
                    Ok(r) => r,
                    Err(e) => return err(e),
                };
                match self.acquire_request(r, *duration, *wait, holder.clone(), id, now) {
                    Ok(Acquire::Granted(a)) => now_reply(CoordReplyBody::Acquired {
                        cookie: a.cookie,
                        duration: a.duration,
                        token: a.token,
                        resource: a.resource,
                        waited: a.waited,
                    }),
                    Ok(Acquire::Waiting(t)) => Handled::Later(t),
                    Err(e) => err(e),
                }
            }
            CoordRequestBody::Watch { resource, prefix, renewals, duration, handback } => {
                let selector = Selector { resource: resource.clone(), prefix: *prefix };
                match self.watch(selector, *duration, handback.clone(), *renewals, now) {
                    Ok(w) => now_reply(CoordReplyBody::Watching {
                        cookie: w.cookie,
                        duration: w.duration,
                        event_id: w.event_id,
                        sequence: w.sequence,
                        current: w.current,
                    }),
                    Err(e) => err(e),
                }
            }
            CoordRequestBody::Poll { cookie, since, wait, max } => {
                match self.poll_request(*cookie, *since, *max as usize, *wait, id, now) {
                    Ok(Ok(events)) => now_reply(CoordReplyBody::Events(events)),
                    Ok(Err(t)) => Handled::Later(t),
                    Err(e) => err(e),
                }
            }
            CoordRequestBody::Holders { resource, prefix } => {
                self.tick(now);
                let selector = Selector { resource: resource.clone(), prefix: *prefix };
                now_reply(CoordReplyBody::Holders { holders: self.holders(&selector) })
            }
        }
    }

    /// The next answer to a request that was held (a waiting acquire, a long poll), with its
    /// ticket. Call it after every call that may have answered one (a cancel,
    /// [`Landlord::handle_timeout`], any request). Answers come out in the order they were
    /// made: those made while a request was handled (an acquire that sweeps a lapsed holder
    /// first serves the requests queued before it) were made before that request's own.
    pub fn poll_deferred(&mut self) -> Option<(Ticket, CoordReply)> {
        let c = self.coord.as_deref_mut()?;
        if let Some(r) = c.ready.pop_front() {
            return Some(r);
        }
        while let Some(t) = c.ready_polls.pop_front() {
            let Some(Wait::Poll { id, event_id, since, max, deadline }) = c.waits.remove(&t) else {
                continue;
            };
            c.deadlines.remove(&(deadline, t));
            let reply = self.events_reply(id, event_id, since, max);
            return Some((Ticket(t), reply));
        }
        None
    }

    /// Drops a request held waiting (its requester went away); false if it is not waiting (it
    /// may already have been answered: that answer still comes out of
    /// [`Landlord::poll_deferred`]).
    pub fn abandon(&mut self, ticket: Ticket) -> bool {
        self.coord.as_deref_mut().and_then(|c| c.unhold(ticket.0)).is_some()
    }

    /// Requests held waiting.
    pub fn waiting(&self) -> usize {
        self.coord.as_deref().map_or(0, |c| c.waits.len())
    }

    /// The earliest coordination deadline on the landlord's clock: a watch's lease to sweep, a
    /// wait to end.
    pub(super) fn coord_deadline(&self) -> Option<Millis> {
        let c = self.coord.as_deref()?;
        let watch = c.watch_due.first().map(|&(exp, _)| {
            let d = self.deadline(exp);
            if d == time::FOREVER {
                d
            } else {
                d + 1
            }
        });
        let wait = c.deadlines.first().map(|&(d, _)| d);
        match (watch, wait) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
        .filter(|&t| t != time::FOREVER)
    }

    /// Coordination's part of [`Landlord::handle_timeout`]: expired watches (journaled), waits
    /// that ran out, waiters served.
    pub(super) fn coord_timeout(&mut self) {
        let Some(c) = self.coord.as_deref() else { return };
        let clock = self.clock;
        let due = c.watches_due(clock, |exp| self.deadline(exp));
        if !due.is_empty() {
            if let Some(j) = self.journal.as_deref_mut() {
                j.coord_record(WATCH_SWEEP, clock, |b| put_varint(b, due.len() as u64));
            }
            let c = self.coord.as_deref_mut().expect("coordination");
            for id in due {
                c.remove_watch(id);
            }
        }
        let c = self.coord.as_deref_mut().expect("coordination");
        let over: Vec<u64> =
            c.deadlines.iter().take_while(|&&(d, _)| d <= clock).map(|&(_, t)| t).collect();
        for t in over {
            let Some(wait) = self.coord.as_deref_mut().expect("coordination").unhold(t) else {
                continue;
            };
            let reply = match wait {
                Wait::Acquire { id, target, arrived, .. } => {
                    let why = self.busy(&target);
                    let e = LeaseError::LeaseDenied(format!(
                        "waited {} ms: {why}",
                        clock.saturating_sub(arrived)
                    ));
                    self.coord.as_deref().expect("coordination").error_reply(id, &e)
                }
                Wait::Poll { id, event_id, since, max, .. } => {
                    self.events_reply(id, event_id, since, max)
                }
            };
            self.coord.as_deref_mut().expect("coordination").ready.push_back((Ticket(t), reply));
        }
        self.serve_freed();
    }
}

impl<R: Durable> Landlord<R> {
    /// Turns coordination on (tokens, exclusive resources, pools, watches) with `config`, or
    /// changes its configuration if it is on already (a landlord rebuilt from a snapshot or
    /// journal that had it on has it on again, and takes the configuration from here).
    ///
    /// With a journal, turning it on is journaled, so that replay counts tokens from the same
    /// grant. Turn it on before the first grant (a host that runs coordination turns it on
    /// whenever it makes or opens a landlord, before replaying its journal).
    pub fn enable_coordination(&mut self, config: CoordConfig) -> Result<()> {
        config.validate()?;
        if self.coord.is_none() {
            self.coord = Some(Box::new(Coord::new(self.config.id, R::encode, R::decode)));
            let clock = self.clock.max(self.journal_clock());
            if let Some(j) = self.journal.as_deref_mut() {
                j.coord_record(COORD_ON, clock, |_| {});
            }
        }
        self.configure_coord(config);
        Ok(())
    }

    pub(super) fn configure_coord(&mut self, config: CoordConfig) {
        let Some(c) = self.coord.as_deref_mut() else { return };
        c.set_config(config);
        // Rebuild the holder index under the (maybe new) rules.
        c.held.clear();
        if c.any_exclusive() {
            for s in self.slots.iter().enumerate() {
                let (i, s) = s;
                let Some(r) = &s.resource else { continue };
                let k = c.key_of(r);
                if c.is_exclusive(&k) {
                    c.held
                        .entry(k.clone())
                        .or_default()
                        .push(super::cookie_of(s.hi, s.mid, i as u32));
                }
                c.give_back(k);
            }
        }
    }

    /// Replays a coordination record (its `dt` already read).
    pub(super) fn apply_coord(&mut self, kind: u8, r: &mut Reader<'_>) -> Result<()> {
        match kind {
            COORD_ON => {
                r.finish()?;
                if self.coord.is_none() {
                    self.coord = Some(Box::new(Coord::new(self.config.id, R::encode, R::decode)));
                }
            }
            HOLDER => {
                let label = r.rest().to_vec();
                let c = self
                    .coord
                    .as_deref_mut()
                    .ok_or_else(|| r.error("holder label before coordination"))?;
                c.next_holder = Some(label);
            }
            WATCH => {
                let cookie = Cookie(r.u128()?);
                let d = r.varint()?;
                if d > time::FOREVER as u64 {
                    return Err(r.error(format!("duration {d} out of range")));
                }
                let event_id = r.varint()?;
                let flags = r.u8()?;
                let resource = r.bytes()?.to_vec();
                let handback = r.bytes()?.to_vec();
                r.finish()?;
                if flags > 3 {
                    return Err(r.error(format!("watch flags {flags}")));
                }
                let got = self.new_watch(
                    Selector { resource, prefix: flags & 1 != 0 },
                    d as Duration,
                    handback,
                    flags & 2 != 0,
                )?;
                if got != (cookie, event_id) {
                    return Err(r.error(format!(
                        "watch {event_id} with cookie {cookie}, but the landlord's next is watch {} \
                         with cookie {}",
                        got.1, got.0
                    )));
                }
            }
            WATCH_SWEEP => {
                let count = r.varint()?;
                r.finish()?;
                let clock = self.clock;
                let c = self
                    .coord
                    .as_deref()
                    .ok_or_else(|| r.error("watch sweep before coordination"))?;
                let due = c.watches_due(clock, |exp| self.deadline(exp));
                if due.len() as u64 != count {
                    return Err(
                        r.error(format!("sweep of {count} watches, {} were due", due.len()))
                    );
                }
                let c = self.coord.as_deref_mut().expect("coordination");
                for id in due {
                    c.remove_watch(id);
                }
            }
            k => return Err(r.error(format!("unknown record kind {k}"))),
        }
        Ok(())
    }
}

// ---------- snapshots ----------

/// One lease's token and label in a [`CoordSnapshot`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SnapshotInfo {
    /// The lease.
    pub cookie: Cookie,
    /// Its fencing token.
    #[serde(with = "crate::time::dec::u64")]
    pub token: u64,
    /// Its holder's label.
    #[serde(with = "crate::wire::hex_bytes")]
    pub holder: Vec<u8>,
}

/// One watch in a [`CoordSnapshot`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SnapshotWatch {
    /// Its event id.
    #[serde(with = "crate::time::dec::u64")]
    pub event_id: EventId,
    /// Its lease's cookie.
    pub cookie: Cookie,
    /// Time left on its lease when the snapshot was taken (FOREVER for a perpetual one).
    #[serde(with = "crate::time::dec::i64")]
    pub remaining: Duration,
    /// What it selects.
    pub selector: Selector,
    /// Whether renewals are events.
    pub renewals: bool,
    /// Its handback.
    #[serde(with = "crate::wire::hex_bytes")]
    pub handback: Vec<u8>,
    /// Number of the last event issued.
    #[serde(with = "crate::time::dec::u64")]
    pub sequence: u64,
    /// The events it keeps, oldest first.
    pub events: Vec<LeaseEvent>,
}

/// The durable coordination state of a landlord, in JSON-friendly form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoordSnapshot {
    /// The last fencing token granted.
    #[serde(with = "crate::time::dec::u64")]
    pub last_token: u64,
    /// The event id the next watch gets.
    #[serde(with = "crate::time::dec::u64")]
    pub next_event_id: EventId,
    /// Token and label of every lease held that has them, in cookie order.
    pub leases: Vec<SnapshotInfo>,
    /// Every watch, in event id order.
    pub watches: Vec<SnapshotWatch>,
}

/// A landlord's snapshot with its coordination state ([`Landlord::snapshot_coordinated`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoordinatedSnapshot<R> {
    /// The leases.
    pub landlord: super::LandlordSnapshot<R>,
    /// Tokens and watches (`None`: coordination was off).
    pub coord: Option<CoordSnapshot>,
}

fn bad(msg: String) -> LeaseError {
    LeaseError::Decode(format!("bad coordination state: {msg}"))
}

impl<R> Coord<R> {
    /// The durable state, with watch times relative to `now` (landlord's clock) if `relative`.
    pub(super) fn to_snapshot(&self, now: Millis, relative: bool) -> CoordSnapshot {
        let mut leases: Vec<SnapshotInfo> = self
            .info
            .iter()
            .map(|(c, i)| SnapshotInfo { cookie: *c, token: i.token, holder: i.holder.clone() })
            .collect();
        leases.sort_by_key(|l| l.cookie);
        let watches = self
            .watches
            .iter()
            .map(|(&event_id, w)| SnapshotWatch {
                event_id,
                cookie: w.cookie,
                remaining: if relative { time::remaining(w.expiration, now) } else { w.expiration },
                selector: w.selector.clone(),
                renewals: w.renewals,
                handback: w.handback.clone(),
                sequence: w.sequence,
                events: w.events.iter().cloned().collect(),
            })
            .collect();
        CoordSnapshot {
            last_token: self.last_token,
            next_event_id: self.next_event_id,
            leases,
            watches,
        }
    }

    /// Appends the binary coordination section.
    pub(super) fn write_binary(&self, out: &mut Vec<u8>) {
        let s = self.to_snapshot(0, false);
        put_varint(out, s.last_token);
        put_varint(out, s.next_event_id);
        put_varint(out, s.leases.len() as u64);
        for l in &s.leases {
            out.extend_from_slice(&l.cookie.0.to_le_bytes());
            put_varint(out, l.token);
            put_bytes(out, &l.holder);
        }
        put_varint(out, s.watches.len() as u64);
        for w in &s.watches {
            put_varint(out, w.event_id);
            out.extend_from_slice(&w.cookie.0.to_le_bytes());
            out.extend_from_slice(&w.remaining.to_le_bytes());
            out.push(u8::from(w.selector.prefix) | u8::from(w.renewals) << 1);
            put_bytes(out, &w.selector.resource);
            put_bytes(out, &w.handback);
            put_varint(out, w.sequence);
            put_varint(out, w.events.len() as u64);
            for e in &w.events {
                put_varint(out, e.sequence);
                out.push(e.kind.code());
                put_bytes(out, &e.resource);
                put_varint(out, e.token);
                put_bytes(out, &e.holder);
                crate::journal::put_ivarint(out, e.duration);
            }
        }
    }

    /// Reads a binary coordination section (watch expirations absolute, landlord's clock).
    pub(super) fn read_binary(r: &mut Reader<'_>) -> Result<CoordSnapshot> {
        let last_token = r.varint()?;
        let next_event_id = r.varint()?;
        let n = r.count(18)?;
        let mut leases = Vec::with_capacity(n);
        for _ in 0..n {
            leases.push(SnapshotInfo {
                cookie: Cookie(r.u128()?),
                token: r.varint()?,
                holder: r.bytes()?.to_vec(),
            });
        }
        let n = r.count(30)?;
        let mut watches = Vec::with_capacity(n);
        for _ in 0..n {
            let event_id = r.varint()?;
            let cookie = Cookie(r.u128()?);
            let remaining = r.i64()?;
            let flags = r.u8()?;
            if flags > 3 {
                return Err(r.error(format!("watch flags {flags}")));
            }
            let resource = r.bytes()?.to_vec();
            let handback = r.bytes()?.to_vec();
            let sequence = r.varint()?;
            let k = r.count(6)?;
            let mut events = Vec::with_capacity(k);
            for _ in 0..k {
                let sequence = r.varint()?;
                let code = r.u8()?;
                let kind = EventKind::from_code(code)
                    .ok_or_else(|| r.error(format!("event kind {code}")))?;
                events.push(LeaseEvent {
                    sequence,
                    kind,
                    resource: r.bytes()?.to_vec(),
                    token: r.varint()?,
                    holder: r.bytes()?.to_vec(),
                    duration: r.ivarint()?,
                });
            }
            watches.push(SnapshotWatch {
                event_id,
                cookie,
                remaining,
                selector: Selector { resource, prefix: flags & 1 != 0 },
                renewals: flags & 2 != 0,
                handback,
                sequence,
                events,
            });
        }
        Ok(CoordSnapshot { last_token, next_event_id, leases, watches })
    }
}

impl<R> Landlord<R> {
    /// Installs coordination state read from a snapshot, after checking it against the leases
    /// held. Watch times are absolute on the landlord's clock (`expirations`) or remaining
    /// times from its clock.
    pub(super) fn install_coord(
        &mut self,
        s: CoordSnapshot,
        key: fn(&R, &mut Vec<u8>),
        make: fn(&[u8]) -> Result<R>,
        relative: bool,
    ) -> Result<()> {
        let mut c = Coord::new(self.config.id, key, make);
        if s.next_event_id == 0 {
            return Err(bad("event id 0 is never handed out".into()));
        }
        let mut tokens = HashSet::with_capacity(s.leases.len());
        for l in s.leases {
            if self.slot_of(l.cookie).is_none() {
                return Err(bad(format!("token of lease {}, which is not held", l.cookie)));
            }
            if l.token > s.last_token || !tokens.insert(l.token) {
                return Err(bad(format!(
                    "lease {} has token {}: above the last ({}) or given twice",
                    l.cookie, l.token, s.last_token
                )));
            }
            if c.info.insert(l.cookie, Info { token: l.token, holder: l.holder }).is_some() {
                return Err(bad(format!("lease {} is listed twice", l.cookie)));
            }
        }
        c.last_token = s.last_token;
        c.next_event_id = s.next_event_id;
        for w in s.watches {
            let (hi, mid, idx) = super::split(w.cookie);
            if idx != NIL || (hi, mid) == (0, 0) {
                return Err(bad(format!(
                    "watch {} has cookie {}, not a watch's",
                    w.event_id, w.cookie
                )));
            }
            if w.event_id == 0
                || w.event_id >= s.next_event_id
                || c.watches.contains_key(&w.event_id)
            {
                return Err(bad(format!(
                    "watch {} is not below the next event id, or twice",
                    w.event_id
                )));
            }
            if c.by_cookie.contains_key(&w.cookie) {
                return Err(bad(format!("cookie {} names two watches", w.cookie)));
            }
            let mut last = 0;
            for e in &w.events {
                if e.sequence <= last || e.sequence > w.sequence {
                    return Err(bad(format!(
                        "watch {} has event {} out of order",
                        w.event_id, e.sequence
                    )));
                }
                last = e.sequence;
            }
            let expiration = if relative {
                time::expiration_after(self.clock, w.remaining)
            } else {
                w.remaining
            };
            c.add_watch(
                w.event_id,
                Watch {
                    cookie: w.cookie,
                    selector: w.selector,
                    renewals: w.renewals,
                    handback: w.handback,
                    expiration,
                    sequence: w.sequence,
                    events: w.events.into(),
                    polls: Vec::new(),
                },
            );
        }
        self.coord = Some(Box::new(c));
        Ok(())
    }
}

impl<R: Clone> Landlord<R> {
    /// [`Landlord::snapshot`] with the coordination state (tokens, labels, watches).
    pub fn snapshot_coordinated(&self, now: Millis) -> CoordinatedSnapshot<R> {
        let at = self.landlord_time(now);
        CoordinatedSnapshot {
            landlord: self.snapshot(now),
            coord: self.coord.as_deref().map(|c| c.to_snapshot(at, true)),
        }
    }
}

impl<R: Durable> Landlord<R> {
    /// Rebuilds a landlord from a [`CoordinatedSnapshot`] at `now` (as [`Landlord::restore`]),
    /// with `policy`, and the coordination `config` if the snapshot had coordination on.
    /// Inconsistent coordination state (a token for a lease not held, tokens above the last or
    /// twice, a watch id at or above the next, events out of order) is a
    /// [`LeaseError::Decode`] error.
    pub fn restore_coordinated(
        snapshot: CoordinatedSnapshot<R>,
        policy: impl LeasePolicy + 'static,
        config: CoordConfig,
        now: Millis,
    ) -> Result<Landlord<R>> {
        config.validate()?;
        let mut ll = Landlord::restore(snapshot.landlord, policy, now)?;
        if let Some(s) = snapshot.coord {
            ll.install_coord(s, R::encode, R::decode, true)?;
            ll.configure_coord(config);
        }
        Ok(ll)
    }
}
