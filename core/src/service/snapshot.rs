//! Snapshot and restore of a whole renewal service.
//!
//! A [`ServiceSnapshot`] holds every set (with its lease, from the internal landlord's own
//! snapshot), every membership, every client lease with its actual expiration, every event
//! registration with its sequence number, and the events not yet handed out by
//! [`super::RenewalService::poll_event`]. It serializes with serde (JSON via
//! [`ServiceSnapshot::to_json`]).
//!
//! Times: set leases follow the landlord's rule (each keeps the time it had left when the
//! snapshot was taken, counted again from the restore's `now`: their clients could not reach
//! the service while it was down). Client leases and memberships are absolute times on the
//! host's clock, because the client leases' landlords kept counting while the service was down:
//! restore with a clock that continues across restarts (epoch milliseconds). A client lease
//! whose actual expiration passed meanwhile is reported as a renewal failure at the first
//! [`super::RenewalService::handle_timeout`]; a membership that ended meanwhile ends silently.
//!
//! Event sequence numbers jump forward by [`super::RenewalServiceConfig::restore_jump`] on
//! restore, so a number handed out after the snapshot was taken is never handed out again;
//! listeners read the jump as a gap.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::error::{LeaseError, Result};
use crate::event::{EventId, EventSource, EventTable, RemoteEvent};
use crate::landlord::{Landlord, LandlordSnapshot};
use crate::lease::{Cookie, LandlordId, Lease};
use crate::time::{Duration, Millis, ANY, FOREVER};

use super::set::{ClientKey, Membership, SetId, SetState, Warning};
use super::{RenewalService, RenewalServiceConfig, SetEvent, SetEventKind};

/// Version of [`ServiceSnapshot`] written by this build (and the only one it reads).
pub const SNAPSHOT_VERSION: u32 = 1;

/// Everything a renewal service holds, to restart it without losing a set, a lease or an
/// event registration ([`RenewalService::snapshot`], [`RenewalService::restore`]).
///
/// It contains the set-lease cookie secret (the landlord's seed): store it like a key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceSnapshot {
    version: u32,
    taken_at: Millis,
    next_set: u64,
    landlord: LandlordSnapshot<SetId>,
    sets: Vec<SetRecord>,
    clients: Vec<ClientRecord>,
    events: EventTable,
    pending: Vec<PendingEvent>,
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
    /// Whether the warning for the set's current expiration was already sent.
    sent: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ClientRecord {
    landlord: LandlordId,
    cookie: Cookie,
    /// Actual expiration (absolute, host clock).
    expiration: Millis,
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
    ExpirationWarning {
        set: SetId,
        expiration: Millis,
    },
    RenewalFailure {
        set: SetId,
        landlord: LandlordId,
        cookie: Cookie,
        expiration: Millis,
        error: Option<LeaseError>,
    },
}

impl ServiceSnapshot {
    /// The format version.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The service's `now` when the snapshot was taken.
    pub fn taken_at(&self) -> Millis {
        self.taken_at
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

fn bad(msg: String) -> LeaseError {
    LeaseError::Decode(format!("bad renewal service snapshot: {msg}"))
}

impl RenewalService {
    /// Everything this service holds, at `now`.
    pub fn snapshot(&self, now: Millis) -> ServiceSnapshot {
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
                    sent: w.sent_for.is_some()
                        && w.sent_for == self.landlord.get(s.cookie, now).map(|(e, _)| e),
                }),
                failure: s.failure,
            })
            .collect();
        let clients = self
            .clients
            .keys()
            .filter_map(|k| self.client_lease(*k))
            .map(|l| ClientRecord {
                landlord: l.landlord(),
                cookie: l.cookie(),
                expiration: l.expiration(),
                covered: self.covered.get(&(l.landlord(), l.cookie())).copied(),
            })
            .collect();
        let pending = self
            .out
            .iter()
            .map(|e| PendingEvent {
                event_id: e.event_id,
                source: e.source,
                sequence: e.sequence,
                handback: e.handback.clone(),
                kind: match &e.kind {
                    SetEventKind::ExpirationWarning { set, expiration } => {
                        PendingKind::ExpirationWarning { set: *set, expiration: *expiration }
                    }
                    SetEventKind::RenewalFailure { set, lease, error } => {
                        PendingKind::RenewalFailure {
                            set: *set,
                            landlord: lease.landlord(),
                            cookie: lease.cookie(),
                            expiration: lease.expiration(),
                            error: error.clone(),
                        }
                    }
                },
            })
            .collect();
        ServiceSnapshot {
            version: SNAPSHOT_VERSION,
            taken_at: now,
            next_set: self.next_set,
            landlord: self.landlord.snapshot(now),
            sets,
            clients,
            events: self.events.clone(),
            pending,
        }
    }

    /// Rebuilds a service from a snapshot at `now`. `config` supplies what is code or local
    /// choice (the set policy, the manager's settings, the sequence-number jump); the landlord's
    /// id, seed and cookie generator come from the snapshot, and its id must match
    /// `config.landlord.id`. An inconsistent snapshot is a [`LeaseError::Decode`] error.
    pub fn restore(
        config: RenewalServiceConfig,
        snapshot: ServiceSnapshot,
        now: Millis,
    ) -> Result<RenewalService> {
        let ServiceSnapshot {
            version,
            taken_at: _,
            next_set,
            landlord,
            sets,
            clients,
            events,
            pending,
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
        // Set leases held, and set leases expired but not yet handed out (their sets are
        // destroyed at the first handle_timeout).
        let set_of_cookie: BTreeMap<Cookie, SetId> = landlord
            .leases
            .iter()
            .chain(&landlord.expired)
            .map(|l| (l.cookie, l.resource))
            .collect();
        let mut config = config;
        config.landlord = landlord.config.clone();
        let policy = config.set_policy.build()?;
        let ll = Landlord::restore(landlord, policy, now)?;
        let mut svc = RenewalService::new(config.clone())?;
        svc.landlord = ll;
        svc.next_set = next_set;
        // Each number must be able to move forward by the jump, or the registration would
        // issue u64::MAX again and again (every receiver drops repeats as stale).
        for (id, reg) in events.iter() {
            if reg.sequence.checked_add(config.restore_jump).is_none() {
                return Err(bad(format!(
                    "event registration {id} is at sequence number {}, too close to the end \
                     for a restore jump of {}",
                    reg.sequence, config.restore_jump
                )));
            }
        }
        svc.events = events.restore(config.restore_jump);

        let mut client_map: BTreeMap<ClientKey, ClientRecord> = BTreeMap::new();
        for c in clients {
            if client_map.insert((c.landlord, c.cookie), c.clone()).is_some() {
                return Err(bad(format!("client lease {} appears twice", c.cookie)));
            }
        }
        let mut used_events = BTreeSet::new();
        let mut sent_warnings = Vec::new();
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
                let ok = svc.events.get(id).is_some_and(|reg| reg.source.object == r.id.0);
                if !ok || !used_events.insert(id) {
                    return Err(bad(format!("{} names event registration {id} wrongly", r.id)));
                }
            }
            if let Some(w) = r.warning {
                super::set::check_min_warning(w.min_warning).map_err(|e| bad(e.to_string()))?;
                state.warning = Some(Warning {
                    event_id: w.event_id,
                    min_warning: w.min_warning,
                    sent_for: None,
                    due: None,
                });
                if w.sent {
                    sent_warnings.push(r.id);
                }
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
        if svc.events.len() != used_events.len() {
            return Err(bad("an event registration belongs to no set".into()));
        }
        for (key, c) in client_map {
            if !svc.holders.contains_key(&key) {
                continue;
            }
            svc.clients.insert(key, Lease::new(c.landlord, c.cookie, c.expiration));
            if let Some(cov) = c.covered {
                svc.covered.insert(key, cov);
            }
        }
        for set in sent_warnings {
            let cookie = svc.sets[&set].cookie;
            let exp = svc.landlord.get(cookie, now).map(|(e, _)| e);
            if let Some(w) = svc.sets.get_mut(&set).and_then(|s| s.warning.as_mut()) {
                w.sent_for = exp;
            }
        }
        for p in pending {
            let kind = match p.kind {
                PendingKind::ExpirationWarning { set, expiration } => {
                    SetEventKind::ExpirationWarning { set, expiration }
                }
                PendingKind::RenewalFailure { set, landlord, cookie, expiration, error } => {
                    SetEventKind::RenewalFailure {
                        set,
                        lease: Lease::new(landlord, cookie, expiration),
                        error,
                    }
                }
            };
            let e: SetEvent = RemoteEvent {
                event_id: p.event_id,
                source: p.source,
                sequence: p.sequence,
                handback: p.handback,
                kind,
            };
            svc.out.push_back(e);
        }
        let keys: Vec<ClientKey> = svc.holders.keys().copied().collect();
        for key in keys {
            svc.resync(key, now)?;
        }
        let ids: Vec<SetId> = svc.sets.keys().copied().collect();
        for set in ids {
            svc.arm_warning(set, now);
        }
        Ok(svc)
    }
}
