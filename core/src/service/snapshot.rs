//! Snapshot and restore of a whole renewal service: the JSON-friendly [`ServiceSnapshot`], its
//! compact binary body (inside the journal's snapshot container, see [`super::durable`]), and
//! the one checked way back from either.
//!
//! A [`ServiceSnapshot`] holds everything the service holds: the set-lease landlord (its own
//! snapshot), every set with its memberships and event registrations (with the warning's
//! schedule), every client lease as last known (with its serial format) and whether its grant
//! already covers its memberships, the renewal manager's whole state ([`ManagerSnapshot`]: its
//! schedules, round-trip estimates and requests in flight), the event table, the events not yet
//! handed out by [`super::RenewalService::poll_event`], the events handed out and not yet
//! reported [`super::RenewalService::delivered`] (the outbox, handed out again after a
//! restore), the service's time and the set-lease clock offset. Restored at the time it was taken, a service is the same service: fed the same
//! calls, it gives the same replies, requests, events and time-outs.
//!
//! Times: set leases follow the landlord's rule (each keeps the time it had left when the
//! snapshot was taken, counted again from the restore's `now`: their clients could not reach
//! the service while it was down). Client leases and memberships are absolute times on the
//! host's clock, because the client leases' landlords kept counting while the service was down:
//! restore with a clock that continues across restarts (epoch milliseconds). A client lease
//! whose actual expiration passed meanwhile is reported as a renewal failure at the first
//! [`super::RenewalService::handle_timeout`]; a membership that ended meanwhile ends silently.
//! The service's time never runs backwards: restored at a `now` before the snapshot's time, it
//! keeps the snapshot's time until the host's clock catches up.
//!
//! Event sequence numbers jump forward by [`super::RenewalServiceConfig::restore_jump`] on a
//! JSON restore (see [`crate::event::DEFAULT_RESTORE_JUMP`]: 0 when the snapshot is the
//! service's last state, the default when it may be stale). A service rebuilt from its binary
//! snapshot and journal is exact and jumps by 0.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::error::{LeaseError, Result};
use crate::event::{EventId, EventSource, EventTable, RemoteEvent};
use crate::holder::bin::{self, LeaseRecord};
use crate::holder::{ManagerSnapshot, RenewalManager};
use crate::journal::{put_bytes, put_ivarint, put_varint, Reader};
use crate::landlord::{
    Landlord, LandlordConfig, LandlordSnapshot, RngState, SnapshotLease, String128,
};
use crate::lease::{Cookie, LandlordId};
use crate::policy::{AdaptiveConfig, PolicySpec};
use crate::time::{Duration, Millis, ANY, FOREVER};
use crate::wire::Limits;

use super::set::{ClientKey, Membership, SetId, SetState, Warning};
use super::{RenewalService, RenewalServiceConfig, SetEvent, SetEventKind};

/// Version of [`ServiceSnapshot`] written by this build (and the only one it reads).
///
/// Version 2 keeps the renewal manager's whole state, the warnings' schedules and the set-lease
/// clock offset, so that a restore is exact; version 1 snapshots are refused.
pub const SNAPSHOT_VERSION: u32 = 2;

/// Everything a renewal service holds, to restart it without losing a set, a lease or an
/// event registration ([`RenewalService::snapshot`], [`RenewalService::restore`]).
///
/// It contains the set-lease cookie secret (the landlord's seed): store it like a key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceSnapshot {
    version: u32,
    taken_at: Millis,
    set_clock_offset: Millis,
    next_set: u64,
    landlord: LandlordSnapshot<SetId>,
    sets: Vec<SetRecord>,
    clients: Vec<ClientRecord>,
    manager: ManagerSnapshot,
    events: EventTable,
    pending: Vec<PendingEvent>,
    /// The host's locators of client-lease landlords (absent when there are none, as in
    /// snapshots written before locators existed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    locators: Vec<LocatorRecord>,
    /// Events handed out and not yet reported delivered, per registration in sequence order
    /// (absent when there are none, as in snapshots written before the outbox existed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    unacked: Vec<PendingEvent>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LocatorRecord {
    landlord: LandlordId,
    #[serde(with = "crate::wire::hex_bytes")]
    locator: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SetRecord {
    id: SetId,
    cookie: Cookie,
    members: Vec<MemberRecord>,
    warning: Option<WarningRecord>,
    failure: Option<EventId>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct MemberRecord {
    landlord: LandlordId,
    cookie: Cookie,
    /// Desired expiration (absolute, host clock).
    expiration: Millis,
    renew_duration: Duration,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WarningRecord {
    event_id: EventId,
    min_warning: Duration,
    /// The set expiration a warning was last sent for (host clock).
    sent_for: Option<Millis>,
    /// When the pending warning is due (host clock).
    due: Option<Millis>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ClientRecord {
    /// As last known (actual expiration, absolute, host clock).
    lease: LeaseRecord,
    /// Covered by its grant up to this desired expiration (no renewal needed until then).
    covered: Option<Millis>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PendingEvent {
    event_id: EventId,
    source: EventSource,
    sequence: u64,
    handback: Vec<u8>,
    kind: PendingKind,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum PendingKind {
    ExpirationWarning { set: SetId, expiration: Millis },
    RenewalFailure { set: SetId, lease: LeaseRecord, error: Option<LeaseError> },
}

impl ServiceSnapshot {
    /// The format version.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The service's time when the snapshot was taken, on the host's clock.
    pub fn taken_at(&self) -> Millis {
        if self.taken_at == Millis::MIN {
            Millis::MIN
        } else {
            self.taken_at.saturating_sub(self.manager.offset())
        }
    }

    /// The id of the service's landlord (every set lease carries it).
    pub fn landlord_id(&self) -> LandlordId {
        self.landlord.config.id
    }

    /// The snapshot as JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a snapshot always serializes")
    }

    /// A snapshot from JSON text written by [`ServiceSnapshot::to_json`].
    pub fn from_json(text: &str) -> Result<ServiceSnapshot> {
        serde_json::from_str(text)
            .map_err(|e| LeaseError::Decode(format!("bad renewal service snapshot: {e}")))
    }
}

fn bad(msg: impl std::fmt::Display) -> LeaseError {
    LeaseError::Decode(format!("bad renewal service snapshot: {msg}"))
}

impl RenewalService {
    /// Everything this service holds, at `now` (read as the service's time: never before the
    /// latest `now` it has seen). Taking it changes nothing. For an exact copy, take it at the
    /// service's own time ([`RenewalService::now`]).
    pub fn snapshot(&self, now: Millis) -> ServiceSnapshot {
        self.snapshot_in(self.at(now))
    }

    /// The snapshot at the service's time `now` (on its own clock).
    pub(super) fn snapshot_in(&self, now: Millis) -> ServiceSnapshot {
        let sets = self
            .sets
            .iter()
            .map(|(id, s)| SetRecord {
                id: *id,
                cookie: s.cookie,
                members: s
                    .members
                    .iter()
                    .map(|(k, m)| MemberRecord {
                        landlord: k.0,
                        cookie: k.1,
                        expiration: m.expiration,
                        renew_duration: m.renew_duration,
                    })
                    .collect(),
                warning: s.warning.map(|w| WarningRecord {
                    event_id: w.event_id,
                    min_warning: w.min_warning,
                    sent_for: w.sent_for,
                    due: w.due,
                }),
                failure: s.failure,
            })
            .collect();
        let clients = self
            .clients
            .iter()
            .map(|(k, l)| ClientRecord { lease: l.into(), covered: self.covered.get(k).copied() })
            .collect();
        let pending = self.out.iter().map(pending_of).collect();
        let unacked = self.unacked.values().flatten().map(pending_of).collect();
        ServiceSnapshot {
            version: SNAPSHOT_VERSION,
            taken_at: now,
            set_clock_offset: self.set_offset,
            next_set: self.next_set,
            landlord: self.landlord.snapshot(now),
            sets,
            clients,
            manager: self.manager.snapshot(),
            events: self.events.clone(),
            pending,
            locators: self
                .locators
                .iter()
                .map(|(l, b)| LocatorRecord { landlord: *l, locator: b.clone() })
                .collect(),
            unacked,
        }
    }

    /// Rebuilds a service from a snapshot, then continues at `now` ([`RenewalService::resume`]:
    /// set leases keep the time they had left, client leases and memberships are absolute).
    ///
    /// `config` supplies what is code or local choice: the set policy and the jump
    /// ([`RenewalServiceConfig::restore_jump`]; 0 gives an exact restore of a snapshot that is
    /// the service's last state) by which event sequence numbers and renewal request ids move
    /// on, so that none handed out after a stale snapshot is handed out again. The landlord's settings, seed and cookie generator and the
    /// renewal manager's settings come from the snapshot (they shape the state it holds); the
    /// landlord's id must match `config.landlord.id` ([`LeaseError::InvalidArgument`]
    /// otherwise). A snapshot of another version, or one that is inconsistent in any way, is a
    /// [`LeaseError::Decode`] error: see [`RenewalService::from_snapshot_bytes`] for what is
    /// checked.
    pub fn restore(
        config: RenewalServiceConfig,
        snapshot: ServiceSnapshot,
        now: Millis,
    ) -> Result<RenewalService> {
        let jump = config.restore_jump;
        let mut svc = RenewalService::from_snapshot(config, snapshot, jump)?;
        // Requests sent after a stale snapshot may still have replies on their way.
        svc.manager.skip_request_ids(jump);
        if jump > 0 {
            // And a request it had not sent yet may have left after the snapshot, under the id
            // the snapshot gives it (vopr --seed 5680).
            svc.manager.renumber_unsent();
        }
        let before = svc.clock;
        let now = svc.tick(now);
        // As a resume does: events handed out and not delivered are handed out again.
        svc.requeue_unacked();
        svc.do_resume(before, now);
        Ok(svc)
    }

    /// The one way in, from either snapshot form: checks every invariant, then builds the
    /// tables. Does not resume: the service's time is the snapshot's.
    pub(super) fn from_snapshot(
        config: RenewalServiceConfig,
        snapshot: ServiceSnapshot,
        jump: u64,
    ) -> Result<RenewalService> {
        let ServiceSnapshot {
            version,
            taken_at,
            set_clock_offset,
            next_set,
            landlord,
            sets,
            clients,
            manager,
            events,
            pending,
            locators,
            unacked,
        } = snapshot;
        if version != SNAPSHOT_VERSION {
            return Err(bad(format!(
                "version {version}, this build reads version {SNAPSHOT_VERSION}"
            )));
        }
        if landlord.config.id != config.landlord.id {
            return Err(LeaseError::InvalidArgument(format!(
                "the snapshot is of service {}, the configuration names {}",
                landlord.config.id, config.landlord.id
            )));
        }
        let service = landlord.config.id;
        // Set leases held, and set leases expired but not yet handed out (their sets are
        // destroyed at the first handle_timeout).
        let mut set_of_cookie: BTreeMap<Cookie, SetId> = BTreeMap::new();
        for l in landlord.leases.iter().chain(&landlord.expired) {
            if set_of_cookie.insert(l.cookie, l.resource).is_some() {
                return Err(bad(format!("set lease {} appears twice", l.cookie)));
            }
        }
        let mut config = config;
        config.landlord = landlord.config.clone();
        let policy = config.set_policy.build()?;
        // The landlord's own clock is the service's time plus the set-lease offset: restored at
        // that time, then set to read the service's time as it.
        let mut ll =
            Landlord::restore(landlord, policy, taken_at.saturating_add(set_clock_offset))?;
        ll.resume(taken_at);
        let mut manager = RenewalManager::restore(manager)?;
        if manager.clock() > taken_at {
            return Err(bad(format!(
                "the renewal manager's time {} is ahead of the service's {taken_at}",
                manager.clock()
            )));
        }
        // One clock: the service's time is its manager's (a snapshot taken at a later `now`
        // than the last call moves it on).
        manager.advance_to(taken_at);
        config.manager = manager.config().clone();
        let mut svc = RenewalService::new(config)?;
        svc.landlord = ll;
        svc.manager = manager;
        svc.clock = taken_at;
        svc.set_offset = set_clock_offset;
        if next_set == 0 {
            return Err(bad("set numbers start at 1"));
        }
        svc.next_set = next_set;
        svc.events = events.try_restore(jump).map_err(|e| bad(e.detail()))?;

        let mut client_map: BTreeMap<ClientKey, ClientRecord> = BTreeMap::new();
        for c in clients {
            let key = (c.lease.landlord, c.lease.cookie);
            if key.0 == service {
                return Err(bad(format!("client lease {} is a set lease", c.lease.cookie)));
            }
            if client_map.insert(key, c.clone()).is_some() {
                return Err(bad(format!("client lease {} appears twice", c.lease.cookie)));
            }
        }
        let mut used_events = BTreeSet::new();
        for r in sets {
            if r.id.0 == 0 || r.id.0 >= next_set {
                return Err(bad(format!("{} is outside the numbers handed out", r.id)));
            }
            if set_of_cookie.get(&r.cookie) != Some(&r.id) {
                return Err(bad(format!("{} has no lease {} in the landlord", r.id, r.cookie)));
            }
            let mut state = SetState::new(r.cookie);
            for m in r.members {
                let key = (m.landlord, m.cookie);
                if !client_map.contains_key(&key) {
                    return Err(bad(format!("{} holds unknown client lease {}", r.id, m.cookie)));
                }
                let any_ok = m.renew_duration != ANY || m.expiration == FOREVER;
                if !any_ok || (m.renew_duration <= 0 && m.renew_duration != ANY) {
                    return Err(bad(format!(
                        "{} renews {} with {} ms",
                        r.id, m.cookie, m.renew_duration
                    )));
                }
                let membership =
                    Membership { expiration: m.expiration, renew_duration: m.renew_duration };
                if state.members.insert(key, membership).is_some() {
                    return Err(bad(format!("{} holds {} twice", r.id, m.cookie)));
                }
                svc.holders.entry(key).or_default().insert(r.id);
                if m.expiration != FOREVER {
                    svc.memberships_due.insert((m.expiration, r.id, key));
                }
            }
            let ids = r.warning.as_ref().map(|w| w.event_id).into_iter().chain(r.failure);
            for id in ids {
                let ok = svc
                    .events
                    .get(id)
                    .is_some_and(|reg| reg.source == EventSource { service, object: r.id.0 });
                if !ok || !used_events.insert(id) {
                    return Err(bad(format!("{} names event registration {id} wrongly", r.id)));
                }
            }
            if let Some(w) = r.warning {
                super::set::check_min_warning(w.min_warning).map_err(|e| bad(e.detail()))?;
                if let Some(due) = w.due {
                    svc.warnings_due.insert((due, r.id));
                }
                state.warning = Some(Warning {
                    event_id: w.event_id,
                    min_warning: w.min_warning,
                    sent_for: w.sent_for,
                    due: w.due,
                });
            }
            state.failure = r.failure;
            if svc.sets.insert(r.id, state).is_some() {
                return Err(bad(format!("{} appears twice", r.id)));
            }
        }
        for (cookie, set) in &set_of_cookie {
            if svc.sets.get(set).map(|s| s.cookie) != Some(*cookie) {
                return Err(bad(format!("set lease {cookie} belongs to no set")));
            }
        }
        svc.file_all_sets();
        if svc.events.len() != used_events.len() {
            return Err(bad("an event registration belongs to no set"));
        }
        for (key, c) in client_map {
            if !svc.holders.contains_key(&key) {
                return Err(bad(format!("client lease {} is in no set", c.lease.cookie)));
            }
            svc.clients.insert(key, c.lease.into());
            if let Some(cov) = c.covered {
                svc.covered.insert(key, cov);
            }
        }
        for l in svc.manager.leases() {
            if !svc.holders.contains_key(&(l.landlord(), l.cookie())) {
                return Err(bad(format!(
                    "the renewal manager renews {}, which no set holds",
                    l.cookie()
                )));
            }
        }
        // The outbox first: each registration's events handed out are older than its events
        // still queued.
        let mut last_seq: BTreeMap<EventId, u64> = BTreeMap::new();
        let mut per_reg: BTreeMap<EventId, usize> = BTreeMap::new();
        for p in unacked {
            if !svc.events.contains(p.event_id) {
                return Err(bad(format!(
                    "an event handed out of registration {}, which is not active",
                    p.event_id
                )));
            }
            let n = per_reg.entry(p.event_id).or_default();
            *n += 1;
            if *n > super::MAX_UNACKED_EVENTS {
                return Err(bad(format!(
                    "more than {} events of registration {} handed out",
                    super::MAX_UNACKED_EVENTS,
                    p.event_id
                )));
            }
            let e = event_of(p, service, &svc.events, jump, &mut last_seq)?;
            svc.unacked.entry(e.event_id).or_default().push_back(e);
        }
        for p in pending {
            let e = event_of(p, service, &svc.events, jump, &mut last_seq)?;
            svc.out.push_back(e);
        }
        if locators.len() > super::MAX_LOCATORS {
            return Err(bad(format!(
                "{} locators, at most {}",
                locators.len(),
                super::MAX_LOCATORS
            )));
        }
        for l in locators {
            if l.locator.is_empty() || l.locator.len() > super::MAX_LOCATOR_BYTES {
                return Err(bad(format!(
                    "the locator of landlord {} is {} bytes",
                    l.landlord,
                    l.locator.len()
                )));
            }
            svc.by_locator.entry(l.locator.clone()).or_insert(l.landlord);
            if svc.locators.insert(l.landlord, l.locator).is_some() {
                return Err(bad(format!("two locators of landlord {}", l.landlord)));
            }
        }
        Ok(svc)
    }
}

/// An event in its snapshot form.
fn pending_of(e: &SetEvent) -> PendingEvent {
    PendingEvent {
        event_id: e.event_id,
        source: e.source,
        sequence: e.sequence,
        handback: e.handback.clone(),
        kind: match &e.kind {
            SetEventKind::ExpirationWarning { set, expiration } => {
                PendingKind::ExpirationWarning { set: *set, expiration: *expiration }
            }
            SetEventKind::RenewalFailure { set, lease, error } => {
                PendingKind::RenewalFailure { set: *set, lease: lease.into(), error: error.clone() }
            }
        },
    }
}

/// An event of a snapshot (queued or handed out), checked: of this service, about the set its
/// source names, fitting its registration (if active) after the restore `jump`, and after the
/// last one of its registration read so far (`last_seq`).
fn event_of(
    p: PendingEvent,
    service: LandlordId,
    events: &EventTable,
    jump: u64,
    last_seq: &mut BTreeMap<EventId, u64>,
) -> Result<SetEvent> {
    if p.source.service != service {
        return Err(bad(format!("a pending event of service {}", p.source.service)));
    }
    let (set, kind) = match p.kind {
        PendingKind::ExpirationWarning { set, expiration } => {
            (set, SetEventKind::ExpirationWarning { set, expiration })
        }
        PendingKind::RenewalFailure { set, lease, error } => {
            (set, SetEventKind::RenewalFailure { set, lease: lease.into(), error })
        }
    };
    if p.source.object != set.0 {
        return Err(bad(format!("a pending event of {set} names object {}", p.source.object)));
    }
    if let Some(reg) = events.get(p.event_id) {
        if reg.source != p.source || p.sequence > reg.sequence.saturating_sub(jump) {
            return Err(bad(format!(
                "pending event {} of registration {} does not fit it",
                p.sequence, p.event_id
            )));
        }
    }
    if let Some(&before) = last_seq.get(&p.event_id) {
        if p.sequence <= before {
            return Err(bad(format!(
                "pending events of registration {} are not in order",
                p.event_id
            )));
        }
    }
    last_seq.insert(p.event_id, p.sequence);
    Ok(RemoteEvent {
        event_id: p.event_id,
        source: p.source,
        sequence: p.sequence,
        handback: p.handback,
        kind,
    })
}

// ---- binary body ----

/// Version of the binary snapshot body written by this build. It reads versions 1 (written
/// before locators: a snapshot without any) and 2 (written before the outbox of events handed
/// out and not delivered: a snapshot with none) too.
pub const BINARY_SNAPSHOT_VERSION: u16 = 3;

/// Deepest nesting of capacity policies read back.
const MAX_POLICY_DEPTH: u32 = 8;

fn put_policy(out: &mut Vec<u8>, p: &PolicySpec) {
    match p {
        PolicySpec::Fixed { duration } => {
            out.push(1);
            put_ivarint(out, *duration);
        }
        PolicySpec::Bounded { max, default } => {
            out.push(2);
            put_ivarint(out, *max);
            put_ivarint(out, *default);
        }
        PolicySpec::Capacity { max_leases, inner } => {
            out.push(3);
            put_varint(out, *max_leases as u64);
            put_policy(out, inner);
        }
        PolicySpec::ResourceAware { capacity, max, min } => {
            out.push(4);
            put_varint(out, *capacity as u64);
            put_ivarint(out, *max);
            put_ivarint(out, *min);
        }
        PolicySpec::Adaptive(c) => {
            out.push(5);
            out.extend_from_slice(&c.renewals_per_second.to_bits().to_le_bytes());
            put_ivarint(out, c.min);
            put_ivarint(out, c.max);
            put_varint(out, c.grantors.into());
        }
    }
}

fn policy(r: &mut Reader<'_>, depth: u32) -> Result<PolicySpec> {
    let usize_of = |r: &mut Reader<'_>| -> Result<usize> {
        let v = r.varint()?;
        usize::try_from(v).map_err(|_| r.error(format!("{v} does not fit")))
    };
    Ok(match r.u8()? {
        1 => PolicySpec::Fixed { duration: r.ivarint()? },
        2 => PolicySpec::Bounded { max: r.ivarint()?, default: r.ivarint()? },
        3 => {
            if depth >= MAX_POLICY_DEPTH {
                return Err(r.error("policies nested too deep"));
            }
            let max_leases = usize_of(r)?;
            PolicySpec::Capacity { max_leases, inner: Box::new(policy(r, depth + 1)?) }
        }
        4 => PolicySpec::ResourceAware {
            capacity: usize_of(r)?,
            max: r.ivarint()?,
            min: r.ivarint()?,
        },
        5 => PolicySpec::Adaptive(AdaptiveConfig {
            renewals_per_second: f64::from_bits(r.u64()?),
            min: r.ivarint()?,
            max: r.ivarint()?,
            grantors: bin::u32_of(r, "grantors")?,
        }),
        k => return Err(r.error(format!("policy kind {k}"))),
    })
}

fn put_landlord_snapshot(out: &mut Vec<u8>, s: &LandlordSnapshot<SetId>) {
    put_varint(out, s.version.into());
    let c = &s.config;
    bin::put_landlord(out, c.id);
    out.extend_from_slice(&c.seed);
    put_ivarint(out, c.grace);
    put_varint(out, c.expiry_budget as u64);
    for v in [c.limits.max_message_bytes, c.limits.max_batch, c.limits.max_resource_bytes] {
        put_varint(out, v as u64);
    }
    put_ivarint(out, c.journal_clock_interval);
    put_ivarint(out, s.taken_at);
    put_varint(out, s.rng.stream);
    out.extend_from_slice(&s.rng.word_pos.0.to_le_bytes());
    put_varint(out, s.slots.into());
    put_varint(out, s.free.len() as u64);
    for &f in &s.free {
        put_varint(out, f.into());
    }
    for list in [&s.leases, &s.expired] {
        put_varint(out, list.len() as u64);
        for l in list {
            bin::put_cookie(out, l.cookie);
            put_ivarint(out, l.remaining);
            put_varint(out, l.resource.0);
        }
    }
}

fn landlord_snapshot(r: &mut Reader<'_>) -> Result<LandlordSnapshot<SetId>> {
    let version = bin::u32_of(r, "landlord snapshot version")?;
    let id = bin::landlord(r)?;
    let seed: [u8; 32] = r.take(32)?.try_into().expect("32 bytes");
    let grace = r.ivarint()?;
    let usize_of = |r: &mut Reader<'_>| -> Result<usize> {
        let v = r.varint()?;
        usize::try_from(v).map_err(|_| r.error(format!("{v} does not fit")))
    };
    let expiry_budget = usize_of(r)?;
    let limits = Limits {
        max_message_bytes: usize_of(r)?,
        max_batch: usize_of(r)?,
        max_resource_bytes: usize_of(r)?,
    };
    let journal_clock_interval = r.ivarint()?;
    let config = LandlordConfig { id, seed, grace, expiry_budget, limits, journal_clock_interval };
    let taken_at = r.ivarint()?;
    let rng = RngState { stream: r.varint()?, word_pos: String128(r.u128()?) };
    let slots = bin::u32_of(r, "slots")?;
    let n = r.count(1)?;
    let mut free = Vec::with_capacity(n);
    for _ in 0..n {
        free.push(bin::u32_of(r, "free slot")?);
    }
    let mut lists = [Vec::new(), Vec::new()];
    for list in &mut lists {
        let n = r.count(18)?;
        list.reserve(n);
        for _ in 0..n {
            list.push(SnapshotLease {
                cookie: bin::cookie(r)?,
                remaining: r.ivarint()?,
                resource: SetId(r.varint()?),
            });
        }
    }
    let [leases, expired] = lists;
    Ok(LandlordSnapshot { version, config, taken_at, rng, slots, free, leases, expired })
}

fn put_events(out: &mut Vec<u8>, events: &[PendingEvent]) {
    put_varint(out, events.len() as u64);
    for p in events {
        put_varint(out, p.event_id);
        bin::put_landlord(out, p.source.service);
        put_varint(out, p.source.object);
        put_varint(out, p.sequence);
        put_bytes(out, &p.handback);
        match &p.kind {
            PendingKind::ExpirationWarning { set, expiration } => {
                out.push(0);
                put_varint(out, set.0);
                put_ivarint(out, *expiration);
            }
            PendingKind::RenewalFailure { set, lease, error } => {
                out.push(1);
                put_varint(out, set.0);
                bin::put_lease(out, &(*lease).into());
                bin::put_opt_error(out, error.as_ref());
            }
        }
    }
}

fn read_events(r: &mut Reader<'_>) -> Result<Vec<PendingEvent>> {
    let n = r.count(7)?;
    let mut pending = Vec::with_capacity(n);
    for _ in 0..n {
        let event_id = r.varint()?;
        let source = EventSource { service: bin::landlord(r)?, object: r.varint()? };
        let sequence = r.varint()?;
        let handback = r.bytes()?.to_vec();
        let kind = match r.u8()? {
            0 => {
                PendingKind::ExpirationWarning { set: SetId(r.varint()?), expiration: r.ivarint()? }
            }
            1 => PendingKind::RenewalFailure {
                set: SetId(r.varint()?),
                lease: (&bin::lease(r)?).into(),
                error: bin::opt_error(r)?,
            },
            k => return Err(r.error(format!("event kind {k}"))),
        };
        pending.push(PendingEvent { event_id, source, sequence, handback, kind });
    }
    Ok(pending)
}

impl ServiceSnapshot {
    /// The binary body: the set policy and restore jump (what the JSON form leaves to the
    /// restoring host's configuration), then every field.
    pub(super) fn encode(
        &self,
        set_policy: &PolicySpec,
        restore_jump: u64,
        journal_raw: Millis,
        out: &mut Vec<u8>,
    ) {
        put_policy(out, set_policy);
        put_varint(out, restore_jump);
        put_ivarint(out, journal_raw);
        put_varint(out, self.version.into());
        put_ivarint(out, self.taken_at);
        put_ivarint(out, self.set_clock_offset);
        put_varint(out, self.next_set);
        put_landlord_snapshot(out, &self.landlord);
        put_varint(out, self.sets.len() as u64);
        for s in &self.sets {
            put_varint(out, s.id.0);
            bin::put_cookie(out, s.cookie);
            put_varint(out, s.members.len() as u64);
            for m in &s.members {
                bin::put_landlord(out, m.landlord);
                bin::put_cookie(out, m.cookie);
                put_ivarint(out, m.expiration);
                put_ivarint(out, m.renew_duration);
            }
            match &s.warning {
                None => out.push(0),
                Some(w) => {
                    out.push(1);
                    put_varint(out, w.event_id);
                    put_ivarint(out, w.min_warning);
                    bin::put_opt_time(out, w.sent_for);
                    bin::put_opt_time(out, w.due);
                }
            }
            bin::put_opt_u64(out, s.failure);
        }
        put_varint(out, self.clients.len() as u64);
        for c in &self.clients {
            bin::put_lease(out, &c.lease.into());
            bin::put_opt_time(out, c.covered);
        }
        self.manager.encode(out);
        self.events.write_binary(out);
        put_events(out, &self.pending);
        // Version 2.
        put_varint(out, self.locators.len() as u64);
        for l in &self.locators {
            bin::put_landlord(out, l.landlord);
            put_bytes(out, &l.locator);
        }
        // Version 3.
        put_events(out, &self.unacked);
    }

    /// Reads a binary body back: the set policy, the restore jump, the host's `now` of the
    /// journal's last record, and the snapshot (what it says is checked by
    /// [`RenewalService::from_snapshot`]).
    pub(super) fn decode(
        r: &mut Reader<'_>,
        binary_version: u16,
    ) -> Result<(PolicySpec, u64, Millis, ServiceSnapshot)> {
        let set_policy = policy(r, 0)?;
        let restore_jump = r.varint()?;
        let journal_raw = r.ivarint()?;
        let version = bin::u32_of(r, "version")?;
        let taken_at = r.ivarint()?;
        let set_clock_offset = r.ivarint()?;
        let next_set = r.varint()?;
        let landlord = landlord_snapshot(r)?;
        let n = r.count(19)?;
        let mut sets = Vec::with_capacity(n);
        for _ in 0..n {
            let id = SetId(r.varint()?);
            let cookie = bin::cookie(r)?;
            let k = r.count(19)?;
            let mut members = Vec::with_capacity(k);
            for _ in 0..k {
                members.push(MemberRecord {
                    landlord: bin::landlord(r)?,
                    cookie: bin::cookie(r)?,
                    expiration: r.ivarint()?,
                    renew_duration: r.ivarint()?,
                });
            }
            let warning = if bin::bool(r)? {
                Some(WarningRecord {
                    event_id: r.varint()?,
                    min_warning: r.ivarint()?,
                    sent_for: bin::opt_time(r)?,
                    due: bin::opt_time(r)?,
                })
            } else {
                None
            };
            let failure = bin::opt_u64(r)?;
            sets.push(SetRecord { id, cookie, members, warning, failure });
        }
        let n = r.count(20)?;
        let mut clients = Vec::with_capacity(n);
        for _ in 0..n {
            clients
                .push(ClientRecord { lease: (&bin::lease(r)?).into(), covered: bin::opt_time(r)? });
        }
        let manager = ManagerSnapshot::decode(r)?;
        let events = EventTable::read_binary(r)?;
        let pending = read_events(r)?;
        let mut locators = Vec::new();
        if binary_version >= 2 {
            let n = r.count(3)?;
            locators.reserve(n);
            for _ in 0..n {
                locators.push(LocatorRecord {
                    landlord: bin::landlord(r)?,
                    locator: r.bytes()?.to_vec(),
                });
            }
        }
        let unacked = if binary_version >= 3 { read_events(r)? } else { Vec::new() };
        let snapshot = ServiceSnapshot {
            version,
            taken_at,
            set_clock_offset,
            next_set,
            landlord,
            sets,
            clients,
            manager,
            events,
            pending,
            locators,
            unacked,
        };
        Ok((set_policy, restore_jump, journal_raw, snapshot))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_round_trip_bit_for_bit() {
        let specs = [
            PolicySpec::Fixed { duration: 5 },
            PolicySpec::Bounded { max: FOREVER, default: 1 },
            PolicySpec::Capacity {
                max_leases: 3,
                inner: Box::new(PolicySpec::ResourceAware { capacity: 9, max: 10, min: 2 }),
            },
            PolicySpec::Adaptive(AdaptiveConfig {
                renewals_per_second: 0.1 + 0.2,
                min: 1,
                max: 99,
                grantors: 2,
            }),
        ];
        for s in specs {
            let mut v = Vec::new();
            put_policy(&mut v, &s);
            let mut r = Reader::new(&v, "t");
            let back = policy(&mut r, 0).unwrap();
            r.finish().unwrap();
            assert_eq!(back, s);
        }
        let mut deep = PolicySpec::Fixed { duration: 1 };
        for _ in 0..20 {
            deep = PolicySpec::Capacity { max_leases: 1, inner: Box::new(deep) };
        }
        let mut v = Vec::new();
        put_policy(&mut v, &deep);
        assert!(policy(&mut Reader::new(&v, "t"), 0).is_err());
    }
}
