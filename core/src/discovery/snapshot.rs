//! Snapshot and restore of a whole discovery service: see [`DiscoverySnapshot`].

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde::{Deserialize, Serialize};

use crate::error::{LeaseError, Result};
use crate::event::{EventId, EventTable, RemoteEvent};
use crate::landlord::{Landlord, LandlordSnapshot};
use crate::lease::Cookie;
use crate::time::{Millis, FOREVER};

use super::types::check_names;
use super::{
    DiscoveryChange, DiscoveryConfig, DiscoveryService, Groups, Known, Locator, Outbox, Probe, Reg,
    Registrar, RegistrarId, RegistrationId, Unicast,
};

/// Version of [`DiscoverySnapshot`] written by this build (and the only one it reads).
pub const SNAPSHOT_VERSION: u32 = 1;

/// Everything a discovery service holds, to restart it without losing a registration, a
/// registrar or an event ([`DiscoveryService::snapshot`], [`DiscoveryService::restore`]).
///
/// It contains the registration-lease cookie secret (the landlord's seed): store it like a key.
///
/// A snapshot holds every registration (with its lease, from the internal
/// landlord's own snapshot; its managed sets; its events not yet delivered and how their
/// delivery stands), every registrar the service knows, every unicast discovery under way, the
/// event table with its sequence numbers, and the counters. It serializes with serde (JSON via
/// [`DiscoverySnapshot::to_json`]).
///
/// [`DiscoveryService::restore`] checks every invariant the service relies on and refuses
/// anything else with a [`LeaseError::Decode`] error: unique ids and event ids, registrations
/// and registration leases one to one, managed sets within limits, every registrar a
/// registration holds known and wanted by it, every registrar of the service's set held by
/// every registration that wants it, unicast discovery under way for exactly the locators that
/// need it, queued events numbered strictly increasing and not beyond their registration's
/// sequence number.
///
/// Times follow the landlord's rule: the service resumes as if it had been paused while it was
/// down. Registration leases keep the time they had left when the snapshot was taken, counted
/// again from the restore's `now`, and every time of the service's own (when a registrar counts
/// as silent, when an event or a unicast discovery is retried or times out) moves by the same
/// amount, `now - taken_at`. Restored at `now` equal to [`DiscoverySnapshot::taken_at`] with
/// [`DiscoveryConfig::restore_jump`] zero, a service is exactly the one snapshotted: fed the
/// same calls, it gives the same answers, events and transmissions.
///
/// Event sequence numbers jump forward by [`DiscoveryConfig::restore_jump`] on restore (by
/// default 2^32), so that a number handed out after an older snapshot was taken is never handed
/// out again; listeners read the jump as a gap and can resynchronise with `registrars()`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiscoverySnapshot {
    pub(super) version: u32,
    pub(super) taken_at: Millis,
    pub(super) next_registration: u64,
    pub(super) next_request: u64,
    pub(super) landlord: LandlordSnapshot<RegistrationId>,
    pub(super) events: EventTable,
    pub(super) registrations: Vec<RegistrationRecord>,
    pub(super) registrars: Vec<RegistrarRecord>,
    pub(super) unicast: Vec<UnicastRecord>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RegistrationRecord {
    pub(super) id: RegistrationId,
    pub(super) cookie: Cookie,
    pub(super) event_id: EventId,
    pub(super) groups: Groups,
    pub(super) locators: Vec<Locator>,
    pub(super) held: Vec<RegistrarId>,
    pub(super) queue: Vec<QueuedEvent>,
    pub(super) outbox: OutboxRecord,
    /// The host's listener address ([`DiscoveryService::set_listener`]), hex in JSON; left out
    /// when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty", with = "crate::wire::hex_bytes")]
    pub(super) listener: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct QueuedEvent {
    pub(super) sequence: u64,
    pub(super) discarded: bool,
    pub(super) registrars: Vec<Registrar>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub(super) enum OutboxRecord {
    Idle,
    Due { at: Millis, failures: u32 },
    InFlight { deadline: Millis, failures: u32 },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RegistrarRecord {
    pub(super) id: RegistrarId,
    pub(super) groups: BTreeSet<String>,
    pub(super) locators: Vec<Locator>,
    pub(super) present: bool,
    pub(super) silent_at: Option<Millis>,
    pub(super) last_sequence: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct UnicastRecord {
    pub(super) locator: Locator,
    pub(super) failures: u32,
    pub(super) state: ProbeRecord,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub(super) enum ProbeRecord {
    Due { at: Millis },
    InFlight { request: u64, deadline: Millis },
}

impl DiscoverySnapshot {
    /// The format version.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The service's time when the snapshot was taken.
    pub fn taken_at(&self) -> Millis {
        self.taken_at
    }

    /// The snapshot as JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a snapshot always serializes")
    }

    /// A snapshot from JSON text written by [`DiscoverySnapshot::to_json`].
    pub fn from_json(text: &str) -> Result<DiscoverySnapshot> {
        serde_json::from_str(text).map_err(|e| bad(e.to_string()))
    }
}

fn bad(msg: impl std::fmt::Display) -> LeaseError {
    LeaseError::Decode(format!("bad discovery service snapshot: {msg}"))
}

/// `t` moved by `delta`, keeping FOREVER exactly FOREVER and a finite time finite.
fn shift(t: Millis, delta: i64) -> Millis {
    if t == FOREVER {
        FOREVER
    } else {
        t.saturating_add(delta).min(FOREVER - 1)
    }
}

impl DiscoveryService {
    /// Everything this service holds, at its own time ([`DiscoveryService::now`]; call
    /// [`DiscoveryService::handle_timeout`] first to bring it to the present).
    pub fn snapshot(&self) -> DiscoverySnapshot {
        let registrations = self
            .regs
            .iter()
            .map(|(id, r)| RegistrationRecord {
                id: *id,
                cookie: r.cookie,
                event_id: r.event_id,
                groups: r.groups.clone(),
                locators: r.locators.iter().cloned().collect(),
                held: r.held.iter().copied().collect(),
                queue: r
                    .queue
                    .iter()
                    .map(|e| QueuedEvent {
                        sequence: e.sequence,
                        discarded: e.kind.discarded,
                        registrars: e.kind.registrars.clone(),
                    })
                    .collect(),
                outbox: match r.outbox {
                    Outbox::Idle => OutboxRecord::Idle,
                    Outbox::Due { at, failures } => OutboxRecord::Due { at, failures },
                    Outbox::InFlight { deadline, failures } => {
                        OutboxRecord::InFlight { deadline, failures }
                    }
                },
                listener: r.listener.clone(),
            })
            .collect();
        let registrars = self
            .known
            .iter()
            .map(|(id, k)| RegistrarRecord {
                id: *id,
                groups: k.groups.clone(),
                locators: k.locators.iter().cloned().collect(),
                present: k.present,
                silent_at: k.silent_at,
                last_sequence: k.last_sequence,
            })
            .collect();
        let unicast = self
            .unicast
            .iter()
            .map(|(l, u)| UnicastRecord {
                locator: l.clone(),
                failures: u.failures,
                state: match u.state {
                    Probe::Due(at) => ProbeRecord::Due { at },
                    Probe::InFlight { request, deadline } => {
                        ProbeRecord::InFlight { request, deadline }
                    }
                },
            })
            .collect();
        DiscoverySnapshot {
            version: SNAPSHOT_VERSION,
            taken_at: self.now,
            next_registration: self.next_registration,
            next_request: self.next_request,
            landlord: self.landlord.snapshot(self.now),
            events: self.events.clone(),
            registrations,
            registrars,
            unicast,
        }
    }

    /// Rebuilds a service from a snapshot at `now` (see [`DiscoverySnapshot`] for times).
    /// `config` supplies what is code or local choice (the lease policy, retry schedules,
    /// time-outs, limits, the sequence-number jump); the landlord's id, seed and cookie
    /// generator come from the snapshot, and its id must match `config.landlord.id`
    /// ([`LeaseError::InvalidArgument`] otherwise). An inconsistent snapshot is a
    /// [`LeaseError::Decode`] error.
    pub fn restore(
        config: DiscoveryConfig,
        snapshot: DiscoverySnapshot,
        now: Millis,
    ) -> Result<DiscoveryService> {
        let DiscoverySnapshot {
            version,
            taken_at,
            next_registration,
            next_request,
            landlord,
            events,
            registrations,
            registrars,
            unicast,
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
        let delta = now.saturating_sub(taken_at);
        // Registration leases held, and expired ones not yet handed out (their registrations
        // end at the first call).
        let mut lease_of: BTreeMap<RegistrationId, Cookie> = BTreeMap::new();
        for l in landlord.leases.iter().chain(&landlord.expired) {
            if lease_of.insert(l.resource, l.cookie).is_some() {
                return Err(bad(format!("{} has two leases", l.resource)));
            }
        }
        let mut config = config;
        config.landlord = landlord.config.clone();
        let policy = config.lease_policy.build()?;
        let ll = Landlord::restore(landlord, policy, now)?;
        let mut svc = DiscoveryService::new(config)?;
        svc.landlord = ll;
        svc.now = now;
        svc.next_registration = next_registration;
        svc.next_request = next_request;
        let limits = svc.config.landlord.limits;
        let jump = svc.config.restore_jump;

        for r in registrars {
            check_names(r.groups.iter(), r.groups.len(), limits.max_batch).map_err(bad)?;
            let mut k = Known {
                groups: r.groups,
                locators: BTreeSet::new(),
                present: r.present,
                silent_at: r.silent_at.map(|t| shift(t, delta)).filter(|&t| t != FOREVER),
                last_sequence: r.last_sequence,
                holders: BTreeSet::new(),
            };
            for l in r.locators {
                if let Some(other) = svc.by_locator.insert(l.clone(), r.id) {
                    return Err(bad(format!("locator {l} belongs to {other} and {}", r.id)));
                }
                k.locators.insert(l);
            }
            if let Some(t) = k.silent_at {
                svc.silence_due.insert((t, r.id));
            }
            if svc.known.insert(r.id, k).is_some() {
                return Err(bad(format!("registrar {} appears twice", r.id)));
            }
        }

        for (id, reg) in events.iter() {
            if reg.sequence.checked_add(jump).is_none() {
                return Err(bad(format!(
                    "event registration {id} is at sequence number {}, too close to the end for \
                     a restore jump of {jump}",
                    reg.sequence
                )));
            }
        }
        let mut event_ids = BTreeSet::new();
        for r in registrations {
            let id = r.id;
            if id.0 == 0 || id.0 >= next_registration {
                return Err(bad(format!("{id} is outside the numbers handed out")));
            }
            if lease_of.get(&id) != Some(&r.cookie) {
                return Err(bad(format!("{id} has no lease {} in the landlord", r.cookie)));
            }
            let Some(er) = events.get(r.event_id) else {
                return Err(bad(format!(
                    "{id} names event registration {} that is not there",
                    r.event_id
                )));
            };
            if er.source != svc.source(id) || !event_ids.insert(r.event_id) {
                return Err(bad(format!("{id} names event registration {} wrongly", r.event_id)));
            }
            if er.handback.len() > limits.max_resource_bytes {
                return Err(bad(format!("{id}: handback of {} bytes", er.handback.len())));
            }
            if r.listener.len() > limits.max_resource_bytes {
                return Err(bad(format!("{id}: listener of {} bytes", r.listener.len())));
            }
            r.groups.check(limits.max_batch).map_err(bad)?;
            let locators: BTreeSet<Locator> = r.locators.iter().cloned().collect();
            if locators.len() != r.locators.len() || locators.len() > limits.max_batch {
                return Err(bad(format!("{id}: locators repeated or too many")));
            }
            let held: BTreeSet<RegistrarId> = r.held.iter().copied().collect();
            if held.len() != r.held.len() {
                return Err(bad(format!("{id} holds a registrar twice")));
            }
            for g in &held {
                let Some(k) = svc.known.get_mut(g) else {
                    return Err(bad(format!("{id} holds unknown registrar {g}")));
                };
                k.holders.insert(id);
            }
            for l in &locators {
                svc.wanted.entry(l.clone()).or_default().insert(id);
            }
            let mut queue = VecDeque::with_capacity(r.queue.len());
            let mut last = 0;
            for q in r.queue {
                if q.sequence <= last || q.sequence > er.sequence {
                    return Err(bad(format!(
                        "{id}: queued event number {} after {last}, registration at {}",
                        q.sequence, er.sequence
                    )));
                }
                last = q.sequence;
                if q.registrars.is_empty() || !q.registrars.windows(2).all(|w| w[0].id < w[1].id) {
                    return Err(bad(format!(
                        "{id}: event {} lists no registrars or not in order",
                        q.sequence
                    )));
                }
                for g in &q.registrars {
                    check_names(g.groups.iter(), g.groups.len(), limits.max_batch).map_err(bad)?;
                }
                queue.push_back(RemoteEvent {
                    event_id: r.event_id,
                    source: er.source,
                    sequence: q.sequence,
                    handback: er.handback.clone(),
                    kind: DiscoveryChange { discarded: q.discarded, registrars: q.registrars },
                });
            }
            let outbox = match (r.outbox, queue.is_empty()) {
                (OutboxRecord::Idle, true) => Outbox::Idle,
                (OutboxRecord::Due { at, failures }, false) => {
                    let at = shift(at, delta);
                    svc.event_due.insert((at, id));
                    Outbox::Due { at, failures }
                }
                (OutboxRecord::InFlight { deadline, failures }, false) => {
                    let deadline = shift(deadline, delta);
                    if deadline != FOREVER {
                        svc.event_deadlines.insert((deadline, id));
                    }
                    Outbox::InFlight { deadline, failures }
                }
                (o, _) => {
                    return Err(bad(format!(
                        "{id}: delivery {o:?} with {} queued events",
                        queue.len()
                    )))
                }
            };
            let reg = Reg {
                cookie: r.cookie,
                ends_at: None,
                event_id: r.event_id,
                groups: r.groups,
                locators,
                held,
                queue,
                outbox,
                listener: r.listener,
            };
            if svc.regs.insert(id, reg).is_some() {
                return Err(bad(format!("{id} appears twice")));
            }
        }
        if svc.regs.len() != lease_of.len() {
            return Err(bad("a registration lease belongs to no registration"));
        }
        if event_ids.len() != events.len() {
            return Err(bad("an event registration belongs to no registration"));
        }
        svc.events = events.restore(jump);
        for id in svc.regs.keys().copied().collect::<Vec<_>>() {
            svc.schedule_lease(id);
        }

        for u in unicast {
            let state = match u.state {
                ProbeRecord::Due { at } => {
                    let at = shift(at, delta);
                    svc.unicast_due.insert((at, u.locator.clone()));
                    Probe::Due(at)
                }
                ProbeRecord::InFlight { request, deadline } => {
                    if request == 0 || request >= next_request {
                        return Err(bad(format!("unicast request {request} was never handed out")));
                    }
                    if svc.unicast_inflight.insert(request, u.locator.clone()).is_some() {
                        return Err(bad(format!("unicast request {request} appears twice")));
                    }
                    let deadline = shift(deadline, delta);
                    if deadline != FOREVER {
                        svc.unicast_deadlines.insert((deadline, request));
                    }
                    Probe::InFlight { request, deadline }
                }
            };
            let locator = u.locator;
            if svc
                .unicast
                .insert(locator.clone(), Unicast { failures: u.failures, state })
                .is_some()
            {
                return Err(bad(format!("unicast discovery of {locator} appears twice")));
            }
        }
        svc.verify().map_err(bad)?;
        Ok(svc)
    }

    /// The invariants that tie the service's maps together (the indexes are rebuilt by restore,
    /// so they hold by construction).
    fn verify(&self) -> std::result::Result<(), String> {
        for (g, k) in &self.known {
            if !k.present && k.holders.is_empty() {
                return Err(format!("registrar {g} is neither discovered nor held"));
            }
            for id in self.regs.keys() {
                let r = &self.regs[id];
                let wants = Self::wants(r, k);
                if r.held.contains(g) && !wants {
                    return Err(format!("{id} holds registrar {g} without wanting it"));
                }
                if k.present && wants && !r.held.contains(g) {
                    return Err(format!(
                        "{id} wants discovered registrar {g} but does not hold it"
                    ));
                }
            }
        }
        let probes: BTreeSet<&Locator> =
            self.wanted.keys().filter(|l| self.needs_probe(l)).collect();
        if probes != self.unicast.keys().collect() {
            return Err(
                "unicast discovery under way for other locators than those that need it".into()
            );
        }
        Ok(())
    }
}
