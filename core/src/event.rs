//! Distributed events in the Jini model (seed 003, LD.3.2): registrations, sequence numbers,
//! gaps and handbacks.
//!
//! A service that sends events keeps an [`EventTable`]: each registration gets an event id that
//! is unique among the table's active registrations, the source it belongs to, and an opaque
//! handback that comes back in every event byte for byte. Each event of a registration carries a
//! sequence number strictly greater than the one before it. Consecutive numbers (a difference
//! of one) mean nothing was missed; a larger difference is a *gap*: events may or may not have
//! been missed (a restart makes one even if nothing was lost), and the receiver should
//! resynchronise its view with the service.
//!
//! The receiver keeps a [`GapTracker`], which classifies every event it is handed as in order,
//! after a gap, or stale (a duplicate or an event overtaken by a later one).
//!
//! ```
//! use leasehold::event::{Delivery, EventSource, EventTable, GapTracker};
//! use leasehold::LandlordId;
//!
//! let mut table = EventTable::new();
//! let source = EventSource { service: LandlordId(9), object: 1 };
//! let id = table.register(source, b"mine".to_vec());
//! let mut tracker = GapTracker::new();
//! tracker.expect(id, table.sequence(id).unwrap());
//! let e = table.next_event(id, "hello").unwrap();
//! assert_eq!(e.handback, b"mine");
//! assert_eq!(tracker.observe(e.event_id, e.sequence), Delivery::InOrder);
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{LeaseError, Result};
use crate::holder::bin;
use crate::journal::{put_bytes, put_varint, Reader};
use crate::lease::{LandlordId, Lease};

/// Identifies an event registration; unique among the active registrations of one table.
pub type EventId = u64;

/// What sends the events of a registration: a service and an object inside it.
///
/// For a renewal service, `service` is the id of the landlord that grants its set leases and
/// `object` is the set's number ([`crate::service::SetId`]).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct EventSource {
    /// The service that generates the events.
    pub service: LandlordId,
    /// The object inside the service the events are about.
    pub object: u64,
}

/// What a client gets back when it registers for events (Jini `EventRegistration`).
///
/// Data form (serde): `{event_id, source: {service, object}, lease, sequence}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventRegistration {
    /// The id every event of this registration carries.
    pub event_id: EventId,
    /// Who sends the events.
    pub source: EventSource,
    /// The lease that covers the registration (it has none of its own): when that lease ends,
    /// so does the registration.
    pub lease: Lease,
    /// The sequence number of the last event sent before this registration was returned; the
    /// next event carries a greater one. Hand it to [`GapTracker::expect`].
    pub sequence: u64,
}

/// An event as sent to a listener (Jini `RemoteEvent`), with a service-specific `kind`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteEvent<K> {
    /// The registration's event id.
    pub event_id: EventId,
    /// Who sent it.
    pub source: EventSource,
    /// Strictly greater than the sequence number of every earlier event of this event id.
    pub sequence: u64,
    /// The registration's handback, exactly as registered.
    pub handback: Vec<u8>,
    /// What happened.
    pub kind: K,
}

/// One active registration inside an [`EventTable`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registration {
    /// Who sends the events.
    pub source: EventSource,
    /// Opaque bytes returned with every event.
    pub handback: Vec<u8>,
    /// Sequence number of the last event issued (0 before the first).
    pub sequence: u64,
}

/// How far sequence numbers jump on [`EventTable::restore`] unless told otherwise: 2^32.
///
/// The jump must exceed the events a table can issue between the snapshot it is restored from
/// and the crash, so that no number is ever issued twice; hosts that snapshot after every change
/// may use a far smaller one. With 2^32, two million restarts still stay below 2^53 (exact in
/// JavaScript numbers).
///
/// Which jump is right depends on what the snapshot is. A snapshot that is the table's *last*
/// state (taken at a clean shutdown, or a snapshot with its journal replayed onto it, as the
/// renewal service's [`crate::RenewalService::recover`] does) restores exactly with a jump of
/// 0: the same sequence numbers, so listeners see no gap. A snapshot that may be *stale* (events
/// may have been numbered and delivered after it was taken, and before a crash) needs a jump
/// larger than the events issued since, or a number would be issued twice.
pub const DEFAULT_RESTORE_JUMP: u64 = 1 << 32;

/// The sender side: active registrations, their handbacks and sequence numbers.
///
/// Serializes with serde (the JSON form is `{"next_id": 3, "registrations": {"1": {...}}}`);
/// reading it back checks it: an event id of 0, or one listed twice, is refused. It also has a
/// compact binary form ([`EventTable::write_binary`], [`EventTable::read_binary`]), for the
/// binary snapshots of the services that keep one. A table has no journal of its own: the state
/// machine that owns it (the renewal service, the lookup discovery service) journals the calls
/// that change it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventTable {
    next_id: EventId,
    #[serde(deserialize_with = "checked_registrations")]
    registrations: BTreeMap<EventId, Registration>,
}

/// Reads the registrations map, refusing event id 0 and ids listed twice (a JSON object may
/// repeat a key; a plain map would keep the last silently).
fn checked_registrations<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<BTreeMap<EventId, Registration>, D::Error> {
    struct V;
    impl<'de> serde::de::Visitor<'de> for V {
        type Value = BTreeMap<EventId, Registration>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a map of event ids to registrations")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> std::result::Result<Self::Value, A::Error> {
            let mut out = BTreeMap::new();
            while let Some((id, reg)) = map.next_entry::<EventId, Registration>()? {
                if id == 0 {
                    return Err(serde::de::Error::custom("event id 0 is never handed out"));
                }
                if out.insert(id, reg).is_some() {
                    return Err(serde::de::Error::custom(format!(
                        "event registration {id} appears twice"
                    )));
                }
            }
            Ok(out)
        }
    }
    d.deserialize_map(V)
}

impl EventTable {
    /// An empty table. The first event id handed out is 1.
    pub fn new() -> EventTable {
        EventTable { next_id: 1, registrations: BTreeMap::new() }
    }

    /// A new registration for events of `source`; returns its event id, unique among the active
    /// registrations (ids are not reused while the counter lasts, 2^64 registrations).
    pub fn register(&mut self, source: EventSource, handback: Vec<u8>) -> EventId {
        let mut id = self.next_id.max(1);
        while self.registrations.contains_key(&id) {
            id = id.checked_add(1).unwrap_or(1);
        }
        self.next_id = id.checked_add(1).unwrap_or(1);
        self.registrations.insert(id, Registration { source, handback, sequence: 0 });
        id
    }

    /// The event id the next registration tries first (for compact snapshots).
    pub fn next_id(&self) -> EventId {
        self.next_id
    }

    /// A table from its parts, as [`EventTable::next_id`] and [`EventTable::iter`] give them (for
    /// compact snapshots; the owner checks them).
    pub fn from_parts(
        next_id: EventId,
        registrations: impl IntoIterator<Item = (EventId, Registration)>,
    ) -> EventTable {
        EventTable { next_id, registrations: registrations.into_iter().collect() }
    }

    /// The registration with `event_id`, if active.
    pub fn get(&self, event_id: EventId) -> Option<&Registration> {
        self.registrations.get(&event_id)
    }

    /// Whether `event_id` is an active registration.
    pub fn contains(&self, event_id: EventId) -> bool {
        self.registrations.contains_key(&event_id)
    }

    /// The sequence number of the last event issued for `event_id`.
    pub fn sequence(&self, event_id: EventId) -> Option<u64> {
        self.get(event_id).map(|r| r.sequence)
    }

    /// Replaces the handback of an active registration (its event id and numbering stay).
    pub fn set_handback(&mut self, event_id: EventId, handback: Vec<u8>) -> Result<()> {
        match self.registrations.get_mut(&event_id) {
            Some(r) => {
                r.handback = handback;
                Ok(())
            }
            None => Err(unknown_event(event_id)),
        }
    }

    /// Ends a registration; its event id may be handed out again only after the counter wraps.
    pub fn remove(&mut self, event_id: EventId) -> Option<Registration> {
        self.registrations.remove(&event_id)
    }

    /// Active registrations, by event id.
    pub fn iter(&self) -> impl Iterator<Item = (EventId, &Registration)> + '_ {
        self.registrations.iter().map(|(id, r)| (*id, r))
    }

    /// Active registrations.
    pub fn len(&self) -> usize {
        self.registrations.len()
    }

    /// No active registrations.
    pub fn is_empty(&self) -> bool {
        self.registrations.is_empty()
    }

    /// The next event of `event_id`, numbered one past the last; `None` if the registration is
    /// not active. Sequence numbers saturate at `u64::MAX`, which 2^64 events never reach.
    pub fn next_event<K>(&mut self, event_id: EventId, kind: K) -> Option<RemoteEvent<K>> {
        let r = self.registrations.get_mut(&event_id)?;
        r.sequence = r.sequence.saturating_add(1);
        Some(RemoteEvent {
            event_id,
            source: r.source,
            sequence: r.sequence,
            handback: r.handback.clone(),
            kind,
        })
    }

    /// The registration as handed to a client, covered by `lease`.
    pub fn registration(&self, event_id: EventId, lease: Lease) -> Option<EventRegistration> {
        self.get(event_id).map(|r| EventRegistration {
            event_id,
            source: r.source,
            lease,
            sequence: r.sequence,
        })
    }

    /// The table as restored after a restart: every sequence number moved forward by `jump`,
    /// so that numbers issued after the snapshot was taken are never issued again. The receiver
    /// reads the jump as a gap. A jump of 0 gives the table exactly as it was (see
    /// [`DEFAULT_RESTORE_JUMP`] for which jump is right when). Numbers saturate at `u64::MAX`;
    /// [`EventTable::try_restore`] refuses a table they would not fit instead.
    pub fn restore(mut self, jump: u64) -> EventTable {
        for r in self.registrations.values_mut() {
            r.sequence = r.sequence.saturating_add(jump);
        }
        self
    }

    /// Like [`EventTable::restore`], but a registration whose number cannot move forward by
    /// `jump` (it would be stuck at `u64::MAX`, every later event read as stale) is a
    /// [`LeaseError::Decode`] error.
    pub fn try_restore(self, jump: u64) -> Result<EventTable> {
        for (id, r) in &self.registrations {
            if r.sequence.checked_add(jump).is_none() {
                return Err(LeaseError::Decode(format!(
                    "event registration {id} is at sequence number {}, too close to the end for \
                     a restore jump of {jump}",
                    r.sequence
                )));
            }
        }
        Ok(self.restore(jump))
    }

    /// Appends the table's compact binary form to `out`: the next id, then each registration
    /// (event id, source service and object, sequence number, handback), all LEB128.
    pub fn write_binary(&self, out: &mut Vec<u8>) {
        put_varint(out, self.next_id);
        put_varint(out, self.registrations.len() as u64);
        for (id, r) in &self.registrations {
            put_varint(out, *id);
            bin::put_landlord(out, r.source.service);
            put_varint(out, r.source.object);
            put_varint(out, r.sequence);
            put_bytes(out, &r.handback);
        }
    }

    /// Reads a table written by [`EventTable::write_binary`], with the checks of its serde
    /// form: event ids are listed once each, in increasing order, and none is 0.
    pub fn read_binary(r: &mut Reader<'_>) -> Result<EventTable> {
        let next_id = r.varint()?;
        let n = r.count(5)?;
        let mut registrations = BTreeMap::new();
        let mut last = 0;
        for _ in 0..n {
            let id = r.varint()?;
            if id <= last {
                return Err(r.error(format!("event id {id} after {last}")));
            }
            last = id;
            let source = EventSource { service: bin::landlord(r)?, object: r.varint()? };
            let sequence = r.varint()?;
            let handback = r.bytes()?.to_vec();
            registrations.insert(id, Registration { source, handback, sequence });
        }
        Ok(EventTable { next_id, registrations })
    }
}

fn unknown_event(event_id: EventId) -> LeaseError {
    LeaseError::InvalidArgument(format!("no active event registration with id {event_id}"))
}

/// What a receiver learns from the sequence number of an event it is handed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// The first event seen for this event id, with no expectation set: nothing to compare.
    First,
    /// Exactly one past the last: no event was missed.
    InOrder,
    /// More than one past the last: up to `missed` events may have been missed (or none, after
    /// a restart of the sender). Resynchronise with the sender.
    Gap {
        /// The difference minus one: the most events that can have been missed.
        missed: u64,
    },
    /// At or below the last number seen: a duplicate, or an event overtaken by a later one.
    /// The tracker keeps its position.
    Stale,
}

/// The receiver side: the last sequence number seen per event id, and gap detection.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GapTracker {
    last: BTreeMap<EventId, u64>,
}

impl GapTracker {
    /// A tracker that has seen nothing.
    pub fn new() -> GapTracker {
        GapTracker::default()
    }

    /// Sets the last sequence number seen for `event_id`, typically from
    /// [`EventRegistration::sequence`] right after registering.
    pub fn expect(&mut self, event_id: EventId, sequence: u64) {
        self.last.insert(event_id, sequence);
    }

    /// Classifies an event and, unless it is stale, records its number.
    pub fn observe(&mut self, event_id: EventId, sequence: u64) -> Delivery {
        match self.last.get(&event_id).copied() {
            None => {
                self.last.insert(event_id, sequence);
                Delivery::First
            }
            Some(last) if sequence <= last => Delivery::Stale,
            Some(last) => {
                self.last.insert(event_id, sequence);
                match sequence - last {
                    1 => Delivery::InOrder,
                    d => Delivery::Gap { missed: d - 1 },
                }
            }
        }
    }

    /// The last sequence number recorded for `event_id`.
    pub fn last(&self, event_id: EventId) -> Option<u64> {
        self.last.get(&event_id).copied()
    }

    /// Stops tracking `event_id` (its registration ended).
    pub fn forget(&mut self, event_id: EventId) {
        self.last.remove(&event_id);
    }
}
