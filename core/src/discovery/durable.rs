//! The discovery service's journal and its compact binary snapshot: registrations that survive
//! restarts (LD.2: "registrations persist across restarts and crashes").
//!
//! # A command log, replayed through the same code
//!
//! The service is deterministic: the same calls at the same times give the same state, byte
//! for byte. So its journal records the *inputs that change state*, each at the service's time,
//! and replay feeds them back through the very functions that handled them the first time.
//! Outcome records (one per registrar discovered, event queued, retry scheduled, ...) would
//! need a second implementation of every rule of LD.4 for replay, which is exactly the kind of
//! rule written twice that drifts. What the service cannot re-decide by itself is recorded as
//! an outcome: the lease durations the policy granted (replay takes them as they were, so a
//! host that changes its policy between runs still recovers), and the configuration, which is
//! in the snapshot and, when it changes, in the journal.
//!
//! Time is a record too. Every call first brings the service to its `now`; when that moves
//! the service's time, or makes something fall due (a lease ending, a registrar falling silent,
//! a time-out), a time record says so before the call's own record. A time record whose step
//! changed nothing but the time is moved forward in place while it is the last record pending,
//! so polling costs no log growth. Replay checks that each time record changes what it changed
//! the first time, and that each command has the effect it had (the same cookie, the same
//! request id, the same event handed out), so a log that does not belong to its snapshot is
//! refused instead of replayed into something else.
//!
//! # Records
//!
//! Framed by [`crate::journal`]. Integers are little-endian; `varint` is LEB128; a *string* or
//! *bytes* is a varint length and the bytes; *groups* are `0` (all) or `1` and *names* (a varint
//! count and that many strings); a *locator* is its host (a string) and a `u16` port;
//! *locators* a varint count and that many; a registrar id and a cookie are 16 bytes.
//!
//! | kind | record | body | replayed as |
//! |---|---|---|---|
//! | 1 | time | time `i64` | the service brought to that time, nothing due |
//! | 2 | tick | time `i64` | the service brought to that time, something due |
//! | 3 | register | granted duration `i64`, cookie, groups, locators, handback bytes | `register` with that lease; the cookie must match |
//! | 4 | set groups | registration varint, groups | the managed set replaced |
//! | 5 | set locators | registration varint, locators | the managed set replaced |
//! | 6 | discard | registration varint, registrar id | `discard` |
//! | 7 | announcement | registrar id, sequence varint, ttl `i64`, locator, names | `handle_announcement` |
//! | 8 | unicast found | request varint, registrar id, names | `handle_unicast` answered |
//! | 9 | unicast failed | request varint | `handle_unicast` failed |
//! | 10 | unreachable | registrar id | `registrar_unreachable` |
//! | 11 | transmit | request varint | `poll_transmit`; the same request must come out |
//! | 12 | event out | registration varint, sequence varint | `poll_event`; the same event must come out |
//! | 13 | delivered | event id varint, sequence varint | `delivered` |
//! | 14 | delivery failed | event id varint, sequence varint, definite `u8` | `delivery_failed` |
//! | 15 | renew | cookie, granted duration `i64` | the lease renewed for that long |
//! | 16 | cancel | cookie | the lease cancelled |
//! | 17 | listener | registration varint, bytes | `set_listener` |
//! | 18 | configuration | the configuration, as in the snapshot | `reconfigure` |
//!
//! Add, set and remove of groups and locators are all recorded as the set they leave.
//!
//! # Binary snapshot
//!
//! Kind [`crate::journal::KIND_DISCOVERY`], version [`BINARY_SNAPSHOT_VERSION`]: the
//! configuration (the policy as its JSON text, the retry schedules and time-outs, the limits on
//! registrars and announcements, the restore jump), then what [`DiscoverySnapshot`] holds: the
//! service's time, its counters, the landlord (configuration with its seed, the cookie
//! generator, slots, free list, leases with their time left and registration number), the event
//! table, every registration (cookie, event id, managed sets, registrars held, queued events and
//! how their delivery stands, listener), every registrar known, every unicast discovery under
//! way. It is read back through the same checked [`DiscoveryService::restore`] as the JSON form,
//! at the time it was taken and without a sequence-number jump (the journal carries on exactly).

use std::collections::BTreeSet;
use std::ops::Range;

use crate::error::{LeaseError, Result};
use crate::event::{EventId, EventSource, EventTable, Registration as EventReg};
use crate::journal::{
    put_varint, read_snapshot, replay_segments, write_snapshot, Frame, Journaled, Pending, Reader,
    Recovered, KIND_DISCOVERY,
};
use crate::landlord::{
    LandlordConfig, LandlordSnapshot, RngState, SnapshotLease, String128, SNAPSHOT_VERSION as LL_V,
};
use crate::lease::{Cookie, LandlordId};
use crate::policy::PolicySpec;
use crate::time::{Duration, Millis, FOREVER};
use crate::wire::Limits;

use super::snapshot::{
    OutboxRecord, ProbeRecord, QueuedEvent, RegistrarRecord, RegistrationRecord, UnicastRecord,
};
use super::{
    Announcement, Ask, DiscoveryConfig, DiscoveryService, DiscoverySnapshot, Groups, Locator,
    Registrar, RegistrarId, RegistrationId, UnicastResponse, SNAPSHOT_VERSION,
};

/// Version of the discovery service's binary snapshot body written by this build (and the only
/// one it reads).
pub const BINARY_SNAPSHOT_VERSION: u16 = 1;

const TIME: u8 = 1;
const TICK: u8 = 2;
const REGISTER: u8 = 3;
const SET_GROUPS: u8 = 4;
const SET_LOCATORS: u8 = 5;
const DISCARD: u8 = 6;
const ANNOUNCE: u8 = 7;
const UNICAST_OK: u8 = 8;
const UNICAST_ERR: u8 = 9;
const UNREACHABLE: u8 = 10;
const TRANSMIT: u8 = 11;
const EVENT_OUT: u8 = 12;
const DELIVERED: u8 = 13;
const FAILED: u8 = 14;
const RENEW: u8 = 15;
const CANCEL: u8 = 16;
const LISTENER: u8 = 17;
const CONFIG: u8 = 18;

// ---- encoding helpers ----

fn put_i64(out: &mut Vec<u8>, v: i64) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn put_names<'a>(out: &mut Vec<u8>, names: impl ExactSizeIterator<Item = &'a String>) {
    put_varint(out, names.len() as u64);
    for n in names {
        put_bytes(out, n.as_bytes());
    }
}

fn put_groups(out: &mut Vec<u8>, g: &Groups) {
    match g {
        Groups::All => out.push(0),
        Groups::Only(names) => {
            out.push(1);
            put_names(out, names.iter());
        }
    }
}

fn put_locator(out: &mut Vec<u8>, l: &Locator) {
    put_bytes(out, l.host().as_bytes());
    out.extend_from_slice(&l.port().to_le_bytes());
}

fn put_locators<'a>(out: &mut Vec<u8>, ls: impl ExactSizeIterator<Item = &'a Locator>) {
    put_varint(out, ls.len() as u64);
    for l in ls {
        put_locator(out, l);
    }
}

fn put_registrar(out: &mut Vec<u8>, g: &Registrar) {
    out.extend_from_slice(&g.id.0.to_le_bytes());
    put_names(out, g.groups.iter());
    put_locators(out, g.locators.iter());
}

fn put_opt_i64(out: &mut Vec<u8>, v: Option<i64>) {
    match v {
        None => out.push(0),
        Some(v) => {
            out.push(1);
            put_i64(out, v);
        }
    }
}

fn get_bytes<'a>(r: &mut Reader<'a>) -> Result<&'a [u8]> {
    let n = r.count(1)?;
    r.take(n)
}

fn get_string(r: &mut Reader<'_>) -> Result<String> {
    let b = get_bytes(r)?;
    String::from_utf8(b.to_vec()).map_err(|_| r.error("a name is not UTF-8"))
}

fn get_names(r: &mut Reader<'_>) -> Result<BTreeSet<String>> {
    let n = r.count(1)?;
    let mut s = BTreeSet::new();
    for _ in 0..n {
        if !s.insert(get_string(r)?) {
            return Err(r.error("a name appears twice"));
        }
    }
    Ok(s)
}

fn get_groups(r: &mut Reader<'_>) -> Result<Groups> {
    match r.u8()? {
        0 => Ok(Groups::All),
        1 => Ok(Groups::Only(get_names(r)?)),
        t => Err(r.error(format!("groups tag {t}"))),
    }
}

fn get_locator(r: &mut Reader<'_>) -> Result<Locator> {
    let host = get_string(r)?;
    let port = r.u16()?;
    Locator::new(&host, port).map_err(|e| r.error(e.detail()))
}

fn get_locators(r: &mut Reader<'_>) -> Result<Vec<Locator>> {
    let n = r.count(3)?;
    (0..n).map(|_| get_locator(r)).collect()
}

fn get_locator_set(r: &mut Reader<'_>) -> Result<BTreeSet<Locator>> {
    let v = get_locators(r)?;
    let n = v.len();
    let s: BTreeSet<Locator> = v.into_iter().collect();
    if s.len() != n {
        return Err(r.error("a locator appears twice"));
    }
    Ok(s)
}

fn get_registrar(r: &mut Reader<'_>) -> Result<Registrar> {
    let id = RegistrarId(r.u128()?);
    let groups = get_names(r)?;
    let locators = get_locator_set(r)?;
    Ok(Registrar { id, groups, locators })
}

fn get_opt_i64(r: &mut Reader<'_>) -> Result<Option<i64>> {
    match r.u8()? {
        0 => Ok(None),
        1 => Ok(Some(r.i64()?)),
        t => Err(r.error(format!("option tag {t}"))),
    }
}

fn get_u32(r: &mut Reader<'_>) -> Result<u32> {
    let v = r.varint()?;
    u32::try_from(v).map_err(|_| r.error(format!("{v} does not fit 32 bits")))
}

fn get_usize(r: &mut Reader<'_>) -> Result<usize> {
    let v = r.varint()?;
    usize::try_from(v).map_err(|_| r.error(format!("{v} does not fit usize")))
}

/// The service's own settings (the landlord's are in the landlord part).
fn put_config(out: &mut Vec<u8>, c: &DiscoveryConfig) {
    let policy = serde_json::to_vec(&c.lease_policy).expect("a policy always serializes");
    put_bytes(out, &policy);
    for schedule in [&c.event_retry, &c.unicast_retry] {
        put_varint(out, schedule.len() as u64);
        for &d in schedule.iter() {
            put_i64(out, d);
        }
    }
    put_i64(out, c.delivery_timeout);
    put_i64(out, c.unicast_timeout);
    put_varint(out, c.max_registrars as u64);
    put_i64(out, c.max_announcement_ttl);
    put_varint(out, c.restore_jump);
}

/// Reads [`put_config`]'s bytes; the landlord part is left as `landlord`.
fn get_config(r: &mut Reader<'_>, landlord: LandlordConfig) -> Result<DiscoveryConfig> {
    let policy: PolicySpec =
        serde_json::from_slice(get_bytes(r)?).map_err(|e| r.error(format!("lease policy: {e}")))?;
    let schedule = |r: &mut Reader<'_>| -> Result<Vec<Duration>> {
        let n = r.count(8)?;
        (0..n).map(|_| r.i64()).collect()
    };
    let event_retry = schedule(r)?;
    let unicast_retry = schedule(r)?;
    Ok(DiscoveryConfig {
        landlord,
        lease_policy: policy,
        event_retry,
        unicast_retry,
        delivery_timeout: r.i64()?,
        unicast_timeout: r.i64()?,
        max_registrars: get_usize(r)?,
        max_announcement_ttl: r.i64()?,
        restore_jump: r.varint()?,
    })
}

// ---- the journal ----

/// The service's journal: the records not yet taken.
#[derive(Debug)]
pub(super) struct Journal {
    pending: Pending,
    /// Records up to this one are in a snapshot: never update them in place.
    sealed: u64,
}

impl Journal {
    fn new(last_seq: u64) -> Journal {
        Journal { pending: Pending::new(last_seq), sealed: last_seq }
    }

    fn begin(&mut self, kind: u8) -> &mut Vec<u8> {
        self.pending.begin(kind)
    }

    fn end(&mut self) {
        self.pending.end();
    }

    /// The service moved to time `t`; `effect`: something fell due.
    pub(super) fn time(&mut self, t: Millis, effect: bool) {
        if !effect && self.pending.last_seq() > self.sealed {
            if let Some(body) = self.pending.last_body_mut(TIME) {
                body.copy_from_slice(&t.to_le_bytes());
                return;
            }
        }
        put_i64(self.begin(if effect { TICK } else { TIME }), t);
        self.end();
    }

    pub(super) fn register(
        &mut self,
        granted: Duration,
        cookie: Cookie,
        groups: &Groups,
        locators: &BTreeSet<Locator>,
        handback: &[u8],
    ) {
        let b = self.begin(REGISTER);
        put_i64(b, granted);
        b.extend_from_slice(&cookie.0.to_le_bytes());
        put_groups(b, groups);
        put_locators(b, locators.iter());
        put_bytes(b, handback);
        self.end();
    }

    pub(super) fn set_groups(&mut self, id: RegistrationId, groups: &Groups) {
        let b = self.begin(SET_GROUPS);
        put_varint(b, id.0);
        put_groups(b, groups);
        self.end();
    }

    pub(super) fn set_locators(&mut self, id: RegistrationId, locators: &BTreeSet<Locator>) {
        let b = self.begin(SET_LOCATORS);
        put_varint(b, id.0);
        put_locators(b, locators.iter());
        self.end();
    }

    pub(super) fn discard(&mut self, id: RegistrationId, g: RegistrarId) {
        let b = self.begin(DISCARD);
        put_varint(b, id.0);
        b.extend_from_slice(&g.0.to_le_bytes());
        self.end();
    }

    pub(super) fn announce(&mut self, a: &Announcement) {
        let b = self.begin(ANNOUNCE);
        b.extend_from_slice(&a.registrar.0.to_le_bytes());
        put_varint(b, a.sequence);
        put_i64(b, a.ttl);
        put_locator(b, &a.locator);
        put_names(b, a.groups.iter());
        self.end();
    }

    pub(super) fn unicast(&mut self, request: u64, found: Option<&UnicastResponse>) {
        match found {
            Some(f) => {
                let b = self.begin(UNICAST_OK);
                put_varint(b, request);
                b.extend_from_slice(&f.registrar.0.to_le_bytes());
                put_names(b, f.groups.iter());
            }
            None => put_varint(self.begin(UNICAST_ERR), request),
        }
        self.end();
    }

    pub(super) fn unreachable(&mut self, g: RegistrarId) {
        self.begin(UNREACHABLE).extend_from_slice(&g.0.to_le_bytes());
        self.end();
    }

    pub(super) fn transmit(&mut self, request: u64) {
        put_varint(self.begin(TRANSMIT), request);
        self.end();
    }

    pub(super) fn poll_event(&mut self, id: RegistrationId, sequence: u64) {
        let b = self.begin(EVENT_OUT);
        put_varint(b, id.0);
        put_varint(b, sequence);
        self.end();
    }

    pub(super) fn delivered(&mut self, event_id: EventId, sequence: u64) {
        let b = self.begin(DELIVERED);
        put_varint(b, event_id);
        put_varint(b, sequence);
        self.end();
    }

    pub(super) fn delivery_failed(&mut self, event_id: EventId, sequence: u64, definite: bool) {
        let b = self.begin(FAILED);
        put_varint(b, event_id);
        put_varint(b, sequence);
        b.push(definite as u8);
        self.end();
    }

    pub(super) fn renew(&mut self, cookie: Cookie, granted: Duration) {
        let b = self.begin(RENEW);
        b.extend_from_slice(&cookie.0.to_le_bytes());
        put_i64(b, granted);
        self.end();
    }

    pub(super) fn cancel(&mut self, cookie: Cookie) {
        self.begin(CANCEL).extend_from_slice(&cookie.0.to_le_bytes());
        self.end();
    }

    pub(super) fn listener(&mut self, id: RegistrationId, listener: &[u8]) {
        let b = self.begin(LISTENER);
        put_varint(b, id.0);
        put_bytes(b, listener);
        self.end();
    }

    fn config(&mut self, config: &[u8]) {
        self.begin(CONFIG).extend_from_slice(config);
        self.end();
    }
}

// ---- the binary snapshot body ----

fn put_lease(out: &mut Vec<u8>, l: &SnapshotLease<RegistrationId>) {
    out.extend_from_slice(&l.cookie.0.to_le_bytes());
    put_i64(out, l.remaining);
    put_varint(out, l.resource.0);
}

fn get_leases(r: &mut Reader<'_>) -> Result<Vec<SnapshotLease<RegistrationId>>> {
    let n = r.count(25)?;
    (0..n)
        .map(|_| {
            Ok(SnapshotLease {
                cookie: Cookie(r.u128()?),
                remaining: r.i64()?,
                resource: RegistrationId(r.varint()?),
            })
        })
        .collect()
}

fn put_landlord(out: &mut Vec<u8>, l: &LandlordSnapshot<RegistrationId>) {
    let c = &l.config;
    out.extend_from_slice(&c.id.0.to_le_bytes());
    out.extend_from_slice(&c.seed);
    put_i64(out, c.grace);
    put_varint(out, c.expiry_budget as u64);
    put_i64(out, c.journal_clock_interval);
    for v in [c.limits.max_message_bytes, c.limits.max_batch, c.limits.max_resource_bytes] {
        put_varint(out, v as u64);
    }
    out.extend_from_slice(&l.rng.stream.to_le_bytes());
    out.extend_from_slice(&l.rng.word_pos.0.to_le_bytes());
    out.extend_from_slice(&l.slots.to_le_bytes());
    put_varint(out, l.free.len() as u64);
    for f in &l.free {
        out.extend_from_slice(&f.to_le_bytes());
    }
    for list in [&l.leases, &l.expired] {
        put_varint(out, list.len() as u64);
        for x in list.iter() {
            put_lease(out, x);
        }
    }
}

fn get_landlord(r: &mut Reader<'_>, taken_at: Millis) -> Result<LandlordSnapshot<RegistrationId>> {
    let id = LandlordId(r.u64()?);
    let seed: [u8; 32] = r.take(32)?.try_into().expect("32 bytes");
    let grace = r.i64()?;
    let expiry_budget = get_usize(r)?;
    let journal_clock_interval = r.i64()?;
    let limits = Limits {
        max_message_bytes: get_usize(r)?,
        max_batch: get_usize(r)?,
        max_resource_bytes: get_usize(r)?,
    };
    let config = LandlordConfig { id, seed, grace, expiry_budget, limits, journal_clock_interval };
    let rng = RngState { stream: r.u64()?, word_pos: String128(r.u128()?) };
    let slots = r.u32()?;
    let nfree = r.count(4)?;
    let free = (0..nfree).map(|_| r.u32()).collect::<Result<Vec<u32>>>()?;
    let leases = get_leases(r)?;
    let expired = get_leases(r)?;
    Ok(LandlordSnapshot { version: LL_V, config, taken_at, rng, slots, free, leases, expired })
}

fn put_body(out: &mut Vec<u8>, s: &DiscoverySnapshot) {
    put_i64(out, s.taken_at);
    put_varint(out, s.next_registration);
    put_varint(out, s.next_request);
    put_landlord(out, &s.landlord);
    put_varint(out, s.events.next_id());
    put_varint(out, s.events.len() as u64);
    for (id, e) in s.events.iter() {
        put_varint(out, id);
        out.extend_from_slice(&e.source.service.0.to_le_bytes());
        put_varint(out, e.source.object);
        put_varint(out, e.sequence);
        put_bytes(out, &e.handback);
    }
    put_varint(out, s.registrations.len() as u64);
    for g in &s.registrations {
        put_varint(out, g.id.0);
        out.extend_from_slice(&g.cookie.0.to_le_bytes());
        put_varint(out, g.event_id);
        put_groups(out, &g.groups);
        put_locators(out, g.locators.iter());
        put_varint(out, g.held.len() as u64);
        for h in &g.held {
            out.extend_from_slice(&h.0.to_le_bytes());
        }
        put_varint(out, g.queue.len() as u64);
        for q in &g.queue {
            put_varint(out, q.sequence);
            out.push(q.discarded as u8);
            put_varint(out, q.registrars.len() as u64);
            for x in &q.registrars {
                put_registrar(out, x);
            }
        }
        match g.outbox {
            OutboxRecord::Idle => out.push(0),
            OutboxRecord::Due { at, failures } => {
                out.push(1);
                put_i64(out, at);
                put_varint(out, failures.into());
            }
            OutboxRecord::InFlight { deadline, failures } => {
                out.push(2);
                put_i64(out, deadline);
                put_varint(out, failures.into());
            }
        }
        put_bytes(out, &g.listener);
    }
    put_varint(out, s.registrars.len() as u64);
    for k in &s.registrars {
        out.extend_from_slice(&k.id.0.to_le_bytes());
        put_names(out, k.groups.iter());
        put_locators(out, k.locators.iter());
        out.push(k.present as u8);
        put_opt_i64(out, k.silent_at);
        match k.last_sequence {
            None => out.push(0),
            Some(v) => {
                out.push(1);
                put_varint(out, v);
            }
        }
    }
    put_varint(out, s.unicast.len() as u64);
    for u in &s.unicast {
        put_locator(out, &u.locator);
        put_varint(out, u.failures.into());
        match u.state {
            ProbeRecord::Due { at } => {
                out.push(0);
                put_i64(out, at);
            }
            ProbeRecord::InFlight { request, deadline } => {
                out.push(1);
                put_varint(out, request);
                put_i64(out, deadline);
            }
        }
    }
}

fn get_bool(r: &mut Reader<'_>) -> Result<bool> {
    match r.u8()? {
        0 => Ok(false),
        1 => Ok(true),
        t => Err(r.error(format!("boolean {t}"))),
    }
}

fn get_body(r: &mut Reader<'_>) -> Result<DiscoverySnapshot> {
    let taken_at = r.i64()?;
    let next_registration = r.varint()?;
    let next_request = r.varint()?;
    let landlord = get_landlord(r, taken_at)?;
    let next_id = r.varint()?;
    let n = r.count(12)?;
    let mut events = Vec::with_capacity(n);
    for _ in 0..n {
        let id = r.varint()?;
        let source = EventSource { service: LandlordId(r.u64()?), object: r.varint()? };
        let sequence = r.varint()?;
        let handback = get_bytes(r)?.to_vec();
        events.push((id, EventReg { source, handback, sequence }));
    }
    let ids: BTreeSet<EventId> = events.iter().map(|(id, _)| *id).collect();
    if ids.len() != events.len() {
        return Err(r.error("an event id appears twice"));
    }
    let events = EventTable::from_parts(next_id, events);
    let n = r.count(24)?;
    let mut registrations = Vec::with_capacity(n);
    for _ in 0..n {
        let id = RegistrationId(r.varint()?);
        let cookie = Cookie(r.u128()?);
        let event_id = r.varint()?;
        let groups = get_groups(r)?;
        let locators = get_locators(r)?;
        let nh = r.count(16)?;
        let held = (0..nh).map(|_| r.u128().map(RegistrarId)).collect::<Result<Vec<_>>>()?;
        let nq = r.count(3)?;
        let mut queue = Vec::with_capacity(nq);
        for _ in 0..nq {
            let sequence = r.varint()?;
            let discarded = get_bool(r)?;
            let nr = r.count(18)?;
            let registrars = (0..nr).map(|_| get_registrar(r)).collect::<Result<Vec<_>>>()?;
            queue.push(QueuedEvent { sequence, discarded, registrars });
        }
        let outbox = match r.u8()? {
            0 => OutboxRecord::Idle,
            1 => OutboxRecord::Due { at: r.i64()?, failures: get_u32(r)? },
            2 => OutboxRecord::InFlight { deadline: r.i64()?, failures: get_u32(r)? },
            t => return Err(r.error(format!("delivery state {t}"))),
        };
        let listener = get_bytes(r)?.to_vec();
        registrations.push(RegistrationRecord {
            id,
            cookie,
            event_id,
            groups,
            locators,
            held,
            queue,
            outbox,
            listener,
        });
    }
    let n = r.count(21)?;
    let mut registrars = Vec::with_capacity(n);
    for _ in 0..n {
        let id = RegistrarId(r.u128()?);
        let groups = get_names(r)?;
        let locators = get_locators(r)?;
        let present = get_bool(r)?;
        let silent_at = get_opt_i64(r)?;
        let last_sequence = match r.u8()? {
            0 => None,
            1 => Some(r.varint()?),
            t => return Err(r.error(format!("option tag {t}"))),
        };
        registrars.push(RegistrarRecord {
            id,
            groups,
            locators,
            present,
            silent_at,
            last_sequence,
        });
    }
    let n = r.count(5)?;
    let mut unicast = Vec::with_capacity(n);
    for _ in 0..n {
        let locator = get_locator(r)?;
        let failures = get_u32(r)?;
        let state = match r.u8()? {
            0 => ProbeRecord::Due { at: r.i64()? },
            1 => ProbeRecord::InFlight { request: r.varint()?, deadline: r.i64()? },
            t => return Err(r.error(format!("unicast state {t}"))),
        };
        unicast.push(UnicastRecord { locator, failures, state });
    }
    Ok(DiscoverySnapshot {
        version: SNAPSHOT_VERSION,
        taken_at,
        next_registration,
        next_request,
        landlord,
        events,
        registrations,
        registrars,
        unicast,
    })
}

fn bad(msg: impl std::fmt::Display) -> LeaseError {
    LeaseError::Decode(format!("bad discovery service snapshot: {msg}"))
}

impl DiscoveryService {
    /// Starts a journal: from now on every change is recorded (see the module docs of
    /// [`crate::discovery`], "Durability"). A service rebuilt from a binary snapshot has one.
    pub fn enable_journal(&mut self) {
        if self.journal.is_none() {
            self.journal = Some(Box::new(Journal::new(0)));
        }
    }

    /// Sequence number of the last journal record written (0 without a journal or before the
    /// first record). An output handed out now (a reply to a client, an event for a listener)
    /// depends on every record up to it: hold it in a [`crate::journal::Gate`] until the store
    /// says that record is durable.
    pub fn journal_seq(&self) -> u64 {
        self.journal.as_ref().map_or(0, |j| j.pending.last_seq())
    }

    /// Appends the records written since the last call to `out`, as one frame for the host to
    /// write in one go, and returns their sequence numbers; `None` if there are none.
    pub fn take_journal(&mut self, out: &mut Vec<u8>) -> Option<Range<u64>> {
        self.journal.as_deref_mut()?.pending.take(out)
    }

    /// Writes a compact binary snapshot (see the module docs of [`crate::discovery`]) to
    /// `out` and returns the sequence number of the last journal record it includes; log
    /// records up to it may then be dropped. It holds the registration-cookie secret: store it
    /// like a key.
    pub fn snapshot_bytes(&mut self, out: &mut Vec<u8>) -> u64 {
        let seq = self.journal_seq();
        if let Some(j) = self.journal.as_deref_mut() {
            j.sealed = seq;
        }
        let mut body = Vec::with_capacity(256 + self.regs.len() * 96);
        put_config(&mut body, &self.config);
        put_body(&mut body, &self.snapshot());
        write_snapshot(out, KIND_DISCOVERY, BINARY_SNAPSHOT_VERSION, seq, &body);
        seq
    }

    /// Rebuilds a service from a binary snapshot ([`DiscoveryService::snapshot_bytes`]), with
    /// its journal, at the time it was taken: ready for [`DiscoveryService::replay_segments`],
    /// then [`DiscoveryService::resume`] (or use [`DiscoveryService::recover`], which does all
    /// three). The configuration is the snapshot's own (change it with
    /// [`DiscoveryService::reconfigure`]). Damage, another kind or version, or any
    /// inconsistency is a [`LeaseError::Decode`] error.
    pub fn from_snapshot_bytes(bytes: &[u8]) -> Result<DiscoveryService> {
        let snap = read_snapshot(bytes)?;
        if snap.kind != KIND_DISCOVERY {
            return Err(bad(format!("snapshot of kind {}, not a discovery service's", snap.kind)));
        }
        if snap.version != BINARY_SNAPSHOT_VERSION {
            return Err(bad(format!(
                "binary version {}, this build reads version {BINARY_SNAPSHOT_VERSION}",
                snap.version
            )));
        }
        let mut r = Reader::new(snap.body, "discovery service snapshot");
        let placeholder = LandlordConfig::new(LandlordId(0), [0; 32]);
        let mut config = get_config(&mut r, placeholder)?;
        let body = get_body(&mut r)?;
        r.finish()?;
        config.landlord = body.landlord.config.clone();
        let jump = config.restore_jump;
        config.restore_jump = 0;
        let taken_at = body.taken_at;
        let mut svc = DiscoveryService::restore(config, body, taken_at)?;
        svc.config.restore_jump = jump;
        svc.journal = Some(Box::new(Journal::new(snap.seq)));
        Ok(svc)
    }

    /// Applies the frames of a log that follow this service's state (records it already has
    /// are skipped). Fails on a gap, or on a record that does not fit the state.
    pub fn replay(&mut self, frame: &Frame<'_>) -> Result<u64> {
        let Some(mut j) = self.journal.take() else {
            return Err(LeaseError::InvalidArgument(
                "replay needs a journaled service (enable_journal or a binary snapshot)".into(),
            ));
        };
        let result = self.replay_frame(&mut j, frame);
        self.journal = Some(j);
        result
    }

    fn replay_frame(&mut self, j: &mut Journal, frame: &Frame<'_>) -> Result<u64> {
        let mut applied = 0;
        for (seq, rec) in frame.records()? {
            let have = j.pending.last_seq();
            if seq <= have {
                continue;
            }
            if seq != have + 1 {
                return Err(LeaseError::Decode(format!(
                    "journal record {seq} follows record {have}: records missing"
                )));
            }
            self.apply(rec).map_err(|e| {
                LeaseError::Decode(format!(
                    "discovery journal record {seq} does not apply: {}",
                    e.detail()
                ))
            })?;
            j.pending.advance_to(seq);
            j.sealed = seq;
            applied += 1;
        }
        Ok(applied)
    }

    fn apply(&mut self, rec: &[u8]) -> Result<()> {
        let mut r = Reader::new(rec, "discovery journal record");
        let kind = r.u8()?;
        let reg = |r: &mut Reader<'_>| r.varint().map(RegistrationId);
        match kind {
            TIME | TICK => {
                let t = r.i64()?;
                r.finish()?;
                if t < self.now {
                    return Err(r.error(format!("time runs backwards to {t}")));
                }
                if self.due_by(t) != (kind == TICK) {
                    return Err(r.error(format!(
                        "at time {t}, {} was due, the journal says otherwise",
                        if kind == TICK { "nothing" } else { "something" }
                    )));
                }
                self.advance(t);
            }
            REGISTER => {
                let granted = r.i64()?;
                let cookie = Cookie(r.u128()?);
                let groups = get_groups(&mut r)?;
                let locators = get_locator_set(&mut r)?;
                let handback = get_bytes(&mut r)?.to_vec();
                r.finish()?;
                if !(0..=FOREVER).contains(&granted) {
                    return Err(r.error(format!("granted duration {granted}")));
                }
                let got = self.register_now(groups, locators, handback, Ask::Exact(granted))?;
                if got.lease.cookie() != cookie {
                    return Err(r.error(format!(
                        "registration with cookie {cookie}, but the service's next cookie is {}",
                        got.lease.cookie()
                    )));
                }
            }
            SET_GROUPS => {
                let id = reg(&mut r)?;
                let groups = get_groups(&mut r)?;
                r.finish()?;
                self.live(id)?;
                self.set_groups_checked(id, groups)?;
            }
            SET_LOCATORS => {
                let id = reg(&mut r)?;
                let set = get_locator_set(&mut r)?;
                r.finish()?;
                self.live(id)?;
                self.set_locators_checked(id, set)?;
            }
            DISCARD => {
                let id = reg(&mut r)?;
                let g = RegistrarId(r.u128()?);
                r.finish()?;
                self.discard_now(id, g)?;
            }
            ANNOUNCE => {
                let registrar = RegistrarId(r.u128()?);
                let sequence = r.varint()?;
                let ttl = r.i64()?;
                let locator = get_locator(&mut r)?;
                let groups = get_names(&mut r)?;
                r.finish()?;
                self.announce_now(&Announcement { registrar, groups, locator, sequence, ttl })?;
            }
            UNICAST_OK | UNICAST_ERR => {
                let request = r.varint()?;
                let result = if kind == UNICAST_OK {
                    let registrar = RegistrarId(r.u128()?);
                    let groups = get_names(&mut r)?;
                    Ok(UnicastResponse { registrar, groups })
                } else {
                    Err(LeaseError::Decode("unicast discovery failed".into()))
                };
                r.finish()?;
                if !self.unicast_now(request, result) {
                    return Err(r.error(format!("unicast request {request} was not awaited")));
                }
            }
            UNREACHABLE => {
                let g = RegistrarId(r.u128()?);
                r.finish()?;
                if !self.unreachable_now(g) {
                    return Err(r.error(format!("registrar {g} is not known")));
                }
            }
            TRANSMIT => {
                let request = r.varint()?;
                r.finish()?;
                let got = self.transmit_now().map(|t| t.id);
                if got != Some(request) {
                    return Err(r.error(format!("unicast request {request} due, got {got:?}")));
                }
            }
            EVENT_OUT => {
                let id = reg(&mut r)?;
                let sequence = r.varint()?;
                r.finish()?;
                let got = self.event_now().map(|e| (e.source.object, e.sequence));
                if got != Some((id.0, sequence)) {
                    return Err(r.error(format!(
                        "event {sequence} of {id} due, got {got:?} (registration, sequence)"
                    )));
                }
            }
            DELIVERED | FAILED => {
                let event_id = r.varint()?;
                let sequence = r.varint()?;
                let ok = if kind == DELIVERED {
                    r.finish()?;
                    self.delivered_now(event_id, sequence)
                } else {
                    let definite = get_bool(&mut r)?;
                    r.finish()?;
                    self.failed_now(event_id, sequence, definite)
                };
                if !ok {
                    return Err(r.error(format!("event {sequence} of {event_id} was not awaited")));
                }
            }
            RENEW => {
                let cookie = Cookie(r.u128()?);
                let granted = r.i64()?;
                r.finish()?;
                if !(0..=FOREVER).contains(&granted) {
                    return Err(r.error(format!("granted duration {granted}")));
                }
                self.renew_now(cookie, Ask::Exact(granted))?;
                self.flush();
            }
            CANCEL => {
                let cookie = Cookie(r.u128()?);
                r.finish()?;
                self.cancel_lease(cookie)?;
                self.flush();
            }
            LISTENER => {
                let id = reg(&mut r)?;
                let listener = get_bytes(&mut r)?.to_vec();
                r.finish()?;
                self.live(id)?;
                self.listener_now(id, listener);
            }
            CONFIG => {
                let config = get_config(&mut r, self.config.landlord.clone())?;
                r.finish()?;
                self.set_config(config)?;
            }
            k => return Err(r.error(format!("unknown record kind {k}"))),
        }
        Ok(())
    }

    /// Replays a log kept in segments (oldest first) onto this service's state.
    ///
    /// Records the state already has are skipped; the rest must follow on without a gap. A torn
    /// tail is accepted in the last segment only (and reported, with the length to truncate it
    /// to); damage anywhere else is a [`LeaseError::Decode`] error.
    pub fn replay_segments(&mut self, segments: &[&[u8]]) -> Result<Recovered> {
        let mut out = replay_segments(segments, |f| self.replay(f))?;
        out.last_seq = self.journal_seq();
        Ok(out)
    }

    /// Continues the service's time from where it was, on a host clock that now reads `now`.
    ///
    /// Time spent down does not count, as for a landlord ([`crate::Landlord::resume`]): a
    /// registration lease with 10 s left at the last journal record has 10 s left after the
    /// resume, and so has every other wait of the service (a registrar's silence, a retry, a
    /// time-out). A registration whose client died during an outage therefore ends at most its
    /// remaining time at the crash after the service is back (every call the service handles
    /// journals its time, so no time before the crash goes unrecorded). From now on every time
    /// the service hands out (lease expirations, [`DiscoveryService::poll_timeout`],
    /// [`DiscoveryService::now`]) is on the host's clock.
    pub fn resume(&mut self, now: Millis) {
        self.offset = if self.now == Millis::MIN { 0 } else { self.now.saturating_sub(now) };
    }

    /// Rebuilds a durable service: its binary snapshot, the log segments that follow it, then
    /// [`DiscoveryService::resume`] at `now`.
    pub fn recover(
        snapshot: &[u8],
        segments: &[&[u8]],
        now: Millis,
    ) -> Result<(DiscoveryService, Recovered)> {
        let mut svc = DiscoveryService::from_snapshot_bytes(snapshot)?;
        let rec = svc.replay_segments(segments)?;
        svc.resume(now);
        Ok((svc, rec))
    }

    /// Changes the service's settings: the lease policy, the retry schedules and time-outs, the
    /// limits on registrars and announcements, the restore jump (journaled, so that replay
    /// applies them from the same point). The landlord's settings (id, seed, grace, limits)
    /// are the service's for life: `config.landlord` is ignored but for its id, which must be
    /// the service's ([`LeaseError::InvalidArgument`] otherwise, or for a bad setting).
    /// Registrations keep their leases; later grants and renewals follow the new policy.
    pub fn reconfigure(&mut self, config: DiscoveryConfig) -> Result<()> {
        if config.landlord.id != self.landlord.id() {
            return Err(LeaseError::InvalidArgument(format!(
                "the configuration names service {}, this is {}",
                config.landlord.id,
                self.landlord.id()
            )));
        }
        let mut config = config;
        config.landlord = self.config.landlord.clone();
        let (mut old, mut new) = (Vec::new(), Vec::new());
        put_config(&mut old, &self.config);
        put_config(&mut new, &config);
        if old == new {
            return Ok(());
        }
        self.set_config(config)?;
        if let Some(j) = self.journal.as_deref_mut() {
            j.config(&new);
        }
        Ok(())
    }

    fn set_config(&mut self, config: DiscoveryConfig) -> Result<()> {
        config.check()?;
        let policy = config.lease_policy.build()?;
        self.landlord.set_policy(policy);
        self.config = config;
        Ok(())
    }
}

impl Journaled for DiscoveryService {
    const KIND: u16 = KIND_DISCOVERY;
    fn journal_seq(&self) -> u64 {
        DiscoveryService::journal_seq(self)
    }
    fn take_journal(&mut self, out: &mut Vec<u8>) -> Option<Range<u64>> {
        DiscoveryService::take_journal(self, out)
    }
    fn snapshot_bytes(&mut self, out: &mut Vec<u8>) -> u64 {
        DiscoveryService::snapshot_bytes(self, out)
    }
    fn replay_segments(&mut self, segments: &[&[u8]]) -> Result<Recovered> {
        DiscoveryService::replay_segments(self, segments)
    }
    fn resume(&mut self, now: Millis) {
        DiscoveryService::resume(self, now)
    }
}
