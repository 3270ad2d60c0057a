//! A renewal manager's whole state, out and back in: [`ManagerSnapshot`] (serde, JSON-friendly)
//! and its compact binary form (inside the renewal service's binary snapshot), with one checked
//! way back from either.
//!
//! Everything the manager holds is in it, so a restored manager is the same manager: fed the same
//! calls at the same times, it hands out the same requests byte for byte, the same events and the
//! same time-outs. That is: its settings and time, every lease with its desired expiration,
//! renew duration, current grant, retry state and timers, where each entry lives (its slot and
//! the slot's generation, and the order free slots are reused), each landlord's round-trip
//! estimator, every request in flight or ready to send (with the slots it names), queued cancels,
//! events not yet handed out, the next request id and the counters.
//!
//! Times are absolute, on the host's clock (the leases' landlords keep counting while the
//! manager is down): restore with a clock that continues across restarts.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use serde::{Deserialize, Serialize};

use super::{
    check_renew_duration, key, Cell, Entry, InFlight, Kind, Peer, RenewalEvent, RenewalManager,
    RenewalManagerConfig, RenewalStats, Slot, State,
};
use crate::error::{LeaseError, Result};
use crate::holder::bin::{self, LeaseRecord, F64};
use crate::holder::rtt::RttEstimator;
use crate::journal::{put_ivarint, put_varint, Reader};
use crate::lease::{Cookie, LandlordId};
use crate::time::{Duration, Millis, FOREVER};

/// Version of [`ManagerSnapshot`] (and of its binary form) written by this build, and the only
/// one it reads.
pub const MANAGER_SNAPSHOT_VERSION: u32 = 1;

/// Everything a [`RenewalManager`] holds ([`RenewalManager::snapshot`],
/// [`RenewalManager::restore`]). Serializes with serde (JSON via [`ManagerSnapshot::to_json`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManagerSnapshot {
    version: u32,
    config: ConfigRecord,
    clock: Millis,
    /// The manager's time minus the host's (see the manager's docs, "Time").
    offset: Millis,
    next_id: u64,
    cells: Vec<CellRecord>,
    free: Vec<u32>,
    peers: Vec<PeerRecord>,
    inflight: Vec<InFlightRecord>,
    ready: Vec<u64>,
    cancels: Vec<CancelRecord>,
    events: Vec<EventRecord>,
    stats: RenewalStats,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigRecord {
    batch_window: Duration,
    batch_join_after: F64,
    max_batch: u64,
    initial_rtt: Duration,
    min_rto: Duration,
    max_rto: Duration,
    attempts: u32,
    renew_divisor: u32,
    max_retry_interval: Duration,
    max_clock_drift_ppm: u32,
    first_request_id: u64,
    report_renewals: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CellRecord {
    gen: u32,
    entry: Option<EntryRecord>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct EntryRecord {
    lease: LeaseRecord,
    peer: u32,
    raw_expiration: Millis,
    desired: Millis,
    renew_duration: Duration,
    period: Duration,
    granted_at: Millis,
    last_sent: Millis,
    in_flight: Option<u64>,
    send_at: Option<Millis>,
    join_at: Millis,
    end_at: Option<Millis>,
    failures: u32,
    last_error: Option<LeaseError>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PeerRecord {
    id: LandlordId,
    srtt: F64,
    rttvar: F64,
    samples: u64,
    backoff: u32,
    min_rto: Duration,
    max_rto: Duration,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct InFlightRecord {
    id: u64,
    landlord: LandlordId,
    kind: KindRecord,
    sent_at: Option<Millis>,
    timeout_at: Millis,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum KindRecord {
    /// The slots (index, generation) a renewal names, with the durations asked.
    Renew {
        items: Vec<(u32, u32, Duration)>,
    },
    Cancel {
        cookies: Vec<Cookie>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CancelRecord {
    landlord: LandlordId,
    cookies: Vec<Cookie>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum EventRecord {
    RenewalFailed { lease: LeaseRecord, desired_expiration: Millis, error: Option<LeaseError> },
    DesiredExpirationReached { lease: LeaseRecord, desired_expiration: Millis },
    Renewed { lease: LeaseRecord },
}

impl ManagerSnapshot {
    /// The format version.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The manager's time when the snapshot was taken, on the host's clock (`i64::MIN` if it
    /// had seen none).
    pub fn taken_at(&self) -> Millis {
        if self.clock == Millis::MIN {
            Millis::MIN
        } else {
            self.clock.saturating_sub(self.offset)
        }
    }

    /// How far the manager's clock was ahead of the host's.
    pub(crate) fn offset(&self) -> Millis {
        self.offset
    }

    /// Leases managed.
    pub fn len(&self) -> usize {
        self.cells.iter().filter(|c| c.entry.is_some()).count()
    }

    /// No lease managed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The snapshot as JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a snapshot always serializes")
    }

    /// A snapshot from JSON text written by [`ManagerSnapshot::to_json`].
    pub fn from_json(text: &str) -> Result<ManagerSnapshot> {
        serde_json::from_str(text)
            .map_err(|e| LeaseError::Decode(format!("bad renewal manager snapshot: {e}")))
    }

    /// The same snapshot in compact binary form (LEB128 integers; no checksum of its own:
    /// keep it inside something that has one, such as a [`crate::journal`] snapshot container).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode(&mut out);
        out
    }

    /// A snapshot from [`ManagerSnapshot::to_bytes`]; bytes that do not parse, or trailing
    /// bytes, are a [`LeaseError::Decode`] error (what they say is checked by
    /// [`RenewalManager::restore`]).
    pub fn from_bytes(bytes: &[u8]) -> Result<ManagerSnapshot> {
        let mut r = Reader::new(bytes, "renewal manager snapshot");
        let s = ManagerSnapshot::decode(&mut r)?;
        r.finish()?;
        Ok(s)
    }
}

fn bad(msg: impl std::fmt::Display) -> LeaseError {
    LeaseError::Decode(format!("bad renewal manager snapshot: {msg}"))
}

fn event_record(e: &RenewalEvent) -> EventRecord {
    match e {
        RenewalEvent::RenewalFailed { lease, desired_expiration, error } => {
            EventRecord::RenewalFailed {
                lease: lease.into(),
                desired_expiration: *desired_expiration,
                error: error.clone(),
            }
        }
        RenewalEvent::DesiredExpirationReached { lease, desired_expiration } => {
            EventRecord::DesiredExpirationReached {
                lease: lease.into(),
                desired_expiration: *desired_expiration,
            }
        }
        RenewalEvent::Renewed { lease } => EventRecord::Renewed { lease: lease.into() },
    }
}

fn event_of(e: EventRecord) -> RenewalEvent {
    match e {
        EventRecord::RenewalFailed { lease, desired_expiration, error } => {
            RenewalEvent::RenewalFailed { lease: lease.into(), desired_expiration, error }
        }
        EventRecord::DesiredExpirationReached { lease, desired_expiration } => {
            RenewalEvent::DesiredExpirationReached { lease: lease.into(), desired_expiration }
        }
        EventRecord::Renewed { lease } => RenewalEvent::Renewed { lease: lease.into() },
    }
}

impl RenewalManager {
    /// Everything this manager holds (see [`ManagerSnapshot`]). Taking it changes nothing.
    pub fn snapshot(&self) -> ManagerSnapshot {
        let c = &self.config;
        let config = ConfigRecord {
            batch_window: c.batch_window,
            batch_join_after: F64::of(c.batch_join_after),
            max_batch: c.max_batch as u64,
            initial_rtt: c.initial_rtt,
            min_rto: c.min_rto,
            max_rto: c.max_rto,
            attempts: c.attempts,
            renew_divisor: c.renew_divisor,
            max_retry_interval: c.max_retry_interval,
            max_clock_drift_ppm: c.max_clock_drift_ppm,
            first_request_id: c.first_request_id,
            report_renewals: c.report_renewals,
        };
        let cells = self
            .cells
            .iter()
            .map(|cell| CellRecord {
                gen: cell.gen,
                entry: cell.entry.as_ref().map(|e| EntryRecord {
                    lease: (&e.lease).into(),
                    peer: e.peer,
                    raw_expiration: e.raw_expiration,
                    desired: e.desired,
                    renew_duration: e.renew_duration,
                    period: e.period,
                    granted_at: e.granted_at,
                    last_sent: e.last_sent,
                    in_flight: match e.state {
                        State::Idle => None,
                        State::InFlight(id) => Some(id),
                    },
                    send_at: e.send_at,
                    join_at: e.join_at,
                    end_at: e.end_at,
                    failures: e.failures,
                    last_error: e.last_error.clone(),
                }),
            })
            .collect();
        let peers = self
            .peers
            .iter()
            .map(|p| {
                let (srtt, rttvar, samples, backoff, min_rto, max_rto) = p.rtt.parts();
                PeerRecord {
                    id: p.id,
                    srtt: F64::of(srtt),
                    rttvar: F64::of(rttvar),
                    samples,
                    backoff,
                    min_rto,
                    max_rto,
                }
            })
            .collect();
        let mut inflight: Vec<InFlightRecord> = self
            .inflight
            .iter()
            .map(|(&id, rec)| InFlightRecord {
                id,
                landlord: rec.landlord,
                kind: match &rec.kind {
                    Kind::Renew(items) => KindRecord::Renew {
                        items: items.iter().map(|(s, d)| (s.idx, s.gen, *d)).collect(),
                    },
                    Kind::Cancel(cookies) => KindRecord::Cancel { cookies: cookies.clone() },
                },
                sent_at: rec.sent_at,
                timeout_at: rec.timeout_at,
            })
            .collect();
        inflight.sort_by_key(|r| r.id);
        ManagerSnapshot {
            version: MANAGER_SNAPSHOT_VERSION,
            config,
            clock: self.clock,
            offset: self.offset,
            next_id: self.next_id,
            cells,
            free: self.free.clone(),
            peers,
            inflight,
            ready: self.ready.iter().copied().collect(),
            cancels: self
                .cancels
                .iter()
                .map(|(l, c)| CancelRecord { landlord: *l, cookies: c.clone() })
                .collect(),
            events: self.events.iter().map(event_record).collect(),
            stats: self.stats,
        }
    }

    /// Rebuilds a manager from a [`ManagerSnapshot`], exactly: fed the same calls at the same
    /// times it does what the original would have done. Its time is the snapshot's (and never
    /// runs backwards from there).
    ///
    /// Everything is checked: the version; the settings; each slot holds at most one lease, every
    /// free slot is free and listed once; no lease twice; each lease's landlord is its peer's;
    /// renew durations and desired expirations follow the rules of
    /// [`RenewalManager::renew_until`]; a lease waiting for a reply is named by that request,
    /// and one with a renewal scheduled is not waiting; each lease's end is the one its grant
    /// and desired expiration give; requests have unique ids, a ready request is not sent yet
    /// and every unsent one is ready; round-trip estimates are finite. Anything else is a
    /// [`LeaseError::Decode`] error.
    pub fn restore(snapshot: ManagerSnapshot) -> Result<RenewalManager> {
        let ManagerSnapshot {
            version,
            config: c,
            clock,
            offset,
            next_id,
            cells,
            free,
            peers,
            inflight,
            ready,
            cancels,
            events,
            stats,
        } = snapshot;
        if version != MANAGER_SNAPSHOT_VERSION {
            return Err(bad(format!(
                "version {version}, this build reads version {MANAGER_SNAPSHOT_VERSION}"
            )));
        }
        let config = RenewalManagerConfig {
            batch_window: c.batch_window,
            batch_join_after: c.batch_join_after.get(),
            max_batch: usize::try_from(c.max_batch).map_err(|_| bad("max_batch too large"))?,
            initial_rtt: c.initial_rtt,
            min_rto: c.min_rto,
            max_rto: c.max_rto,
            attempts: c.attempts,
            renew_divisor: c.renew_divisor,
            max_retry_interval: c.max_retry_interval,
            max_clock_drift_ppm: c.max_clock_drift_ppm,
            first_request_id: c.first_request_id,
            report_renewals: c.report_renewals,
        };
        config.validate().map_err(|e| bad(e.detail()))?;
        if offset < 0 {
            return Err(bad(format!("clock offset {offset} is negative")));
        }
        let mut m = RenewalManager::new(config);
        m.clock = clock;
        m.offset = offset;
        m.next_id = next_id;
        m.stats = stats;

        for (i, p) in peers.into_iter().enumerate() {
            let rtt = RttEstimator::from_parts((
                p.srtt.get(),
                p.rttvar.get(),
                p.samples,
                p.backoff,
                p.min_rto,
                p.max_rto,
            ))
            .map_err(|e| bad(format!("landlord {}: {e}", p.id)))?;
            if m.peer_index.insert(p.id, i as u32).is_some() {
                return Err(bad(format!("landlord {} appears twice", p.id)));
            }
            m.peers.push(Peer { id: p.id, joins: Default::default(), rtt });
        }

        // Requests first, so that the leases waiting for them can be checked.
        let mut requests: HashMap<u64, InFlight> = HashMap::with_capacity(inflight.len());
        let mut named: HashSet<(u64, u32, u32)> = HashSet::new();
        for r in inflight {
            if !m.peer_index.contains_key(&r.landlord) {
                return Err(bad(format!(
                    "request {} is for unknown landlord {}",
                    r.id, r.landlord
                )));
            }
            let kind = match r.kind {
                KindRecord::Renew { items } => {
                    let mut v = Vec::with_capacity(items.len());
                    for (idx, gen, d) in items {
                        if !named.insert((r.id, idx, gen)) {
                            return Err(bad(format!("request {} names slot {idx} twice", r.id)));
                        }
                        v.push((Slot { idx, gen }, d));
                    }
                    Kind::Renew(v)
                }
                KindRecord::Cancel { cookies } => {
                    if r.sent_at.is_none() {
                        return Err(bad(format!("cancel request {} was never sent", r.id)));
                    }
                    Kind::Cancel(cookies)
                }
            };
            let rec = InFlight {
                landlord: r.landlord,
                kind,
                sent_at: r.sent_at,
                timeout_at: r.timeout_at,
            };
            if let Some(t) = rec.sent_at.map(|_| rec.timeout_at) {
                m.timeouts.insert((t, r.id));
            }
            if requests.insert(r.id, rec).is_some() {
                return Err(bad(format!("request {} appears twice", r.id)));
            }
        }
        let mut seen_ready = HashSet::with_capacity(ready.len());
        for &id in &ready {
            match requests.get(&id) {
                Some(rec) if rec.sent_at.is_none() => {}
                Some(_) => return Err(bad(format!("request {id} is ready but already sent"))),
                None => return Err(bad(format!("ready request {id} is unknown"))),
            }
            if !seen_ready.insert(id) {
                return Err(bad(format!("request {id} is ready twice")));
            }
        }
        if let Some((id, _)) =
            requests.iter().find(|(id, r)| r.sent_at.is_none() && !seen_ready.contains(id))
        {
            return Err(bad(format!("request {id} is neither sent nor ready")));
        }

        if cells.len() >= u32::MAX as usize {
            return Err(bad(format!("{} slots", cells.len())));
        }
        let n = cells.len();
        for (i, cell) in cells.into_iter().enumerate() {
            let s = Slot { idx: i as u32, gen: cell.gen };
            let entry = match cell.entry {
                None => None,
                Some(e) => {
                    let lease = e.lease.into();
                    let peer = m.peers.get(e.peer as usize).ok_or_else(|| {
                        bad(format!("lease {} names landlord #{}", e.lease.cookie, e.peer))
                    })?;
                    if peer.id != e.lease.landlord {
                        return Err(bad(format!(
                            "lease {} of landlord {} is filed under landlord {}",
                            e.lease.cookie, e.lease.landlord, peer.id
                        )));
                    }
                    check_renew_duration(e.renew_duration, e.desired).map_err(|err| {
                        bad(format!("lease {}: {}", e.lease.cookie, err.detail()))
                    })?;
                    let state = match e.in_flight {
                        None => State::Idle,
                        Some(id) => {
                            let ok = matches!(
                                requests.get(&id),
                                Some(InFlight { kind: Kind::Renew(_), .. })
                            ) && named.contains(&(id, s.idx, s.gen));
                            if !ok {
                                return Err(bad(format!(
                                    "lease {} waits for request {id}, which does not name it",
                                    e.lease.cookie
                                )));
                            }
                            State::InFlight(id)
                        }
                    };
                    if e.send_at.is_some() && state != State::Idle {
                        return Err(bad(format!(
                            "lease {} is both waiting for a reply and scheduled",
                            e.lease.cookie
                        )));
                    }
                    let shown = m.shown(lease);
                    let entry = Entry {
                        lease,
                        shown,
                        peer: e.peer,
                        raw_expiration: e.raw_expiration,
                        desired: e.desired,
                        renew_duration: e.renew_duration,
                        period: e.period,
                        granted_at: e.granted_at,
                        last_sent: e.last_sent,
                        state,
                        send_at: e.send_at,
                        join_at: e.join_at,
                        end_at: e.end_at,
                        failures: e.failures,
                        last_error: e.last_error,
                    };
                    let end = if entry.covers_desired() {
                        entry.desired
                    } else {
                        entry.desired.min(entry.lease.expiration())
                    };
                    if entry.end_at != (end != FOREVER).then_some(end) {
                        return Err(bad(format!(
                            "lease {} ends at {:?}, its grant and desired expiration say {end}",
                            e.lease.cookie, entry.end_at
                        )));
                    }
                    if m.index.insert(key(&entry.lease), s).is_some() {
                        return Err(bad(format!("lease {} appears twice", e.lease.cookie)));
                    }
                    Some(entry)
                }
            };
            m.cells.push(Cell { gen: cell.gen, entry });
        }
        let mut seen_free = HashSet::with_capacity(free.len());
        for &f in &free {
            match m.cells.get(f as usize) {
                None => return Err(bad(format!("free slot {f} of {n}"))),
                Some(c) if c.entry.is_some() => {
                    return Err(bad(format!("slot {f} is both free and held")))
                }
                Some(_) if !seen_free.insert(f) => {
                    return Err(bad(format!("slot {f} is free twice")))
                }
                Some(_) => {}
            }
        }
        if m.index.len() + free.len() != n {
            return Err(bad(format!(
                "{} leases and {} free slots do not make up {n} slots",
                m.index.len(),
                free.len()
            )));
        }
        m.free = free;
        m.inflight = requests;
        m.ready = VecDeque::from(ready);
        let mut cancel_map = BTreeMap::new();
        for c in cancels {
            if c.cookies.is_empty() {
                return Err(bad(format!("an empty cancel for landlord {}", c.landlord)));
            }
            if cancel_map.insert(c.landlord, c.cookies).is_some() {
                return Err(bad(format!("cancels for landlord {} appear twice", c.landlord)));
            }
        }
        m.cancels = cancel_map;
        m.events = events.into_iter().map(event_of).collect();
        m.rebuild();
        Ok(m)
    }
}

// ---- binary form (inside the renewal service's binary snapshot) ----

impl ManagerSnapshot {
    /// Appends the binary form to `out`.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        put_varint(out, u64::from(self.version));
        let c = &self.config;
        put_ivarint(out, c.batch_window);
        out.extend_from_slice(&c.batch_join_after.0.to_le_bytes());
        put_varint(out, c.max_batch);
        for v in [c.initial_rtt, c.min_rto, c.max_rto] {
            put_ivarint(out, v);
        }
        put_varint(out, c.attempts.into());
        put_varint(out, c.renew_divisor.into());
        put_ivarint(out, c.max_retry_interval);
        put_varint(out, c.max_clock_drift_ppm.into());
        put_varint(out, c.first_request_id);
        bin::put_bool(out, c.report_renewals);
        put_ivarint(out, self.clock);
        put_ivarint(out, self.offset);
        put_varint(out, self.next_id);
        put_varint(out, self.cells.len() as u64);
        for cell in &self.cells {
            put_varint(out, cell.gen.into());
            match &cell.entry {
                None => out.push(0),
                Some(e) => {
                    out.push(1);
                    put_lease_record(out, &e.lease);
                    put_varint(out, e.peer.into());
                    for v in [
                        e.raw_expiration,
                        e.desired,
                        e.renew_duration,
                        e.period,
                        e.granted_at,
                        e.last_sent,
                    ] {
                        put_ivarint(out, v);
                    }
                    bin::put_opt_u64(out, e.in_flight);
                    bin::put_opt_time(out, e.send_at);
                    put_ivarint(out, e.join_at);
                    bin::put_opt_time(out, e.end_at);
                    put_varint(out, e.failures.into());
                    bin::put_opt_error(out, e.last_error.as_ref());
                }
            }
        }
        put_varint(out, self.free.len() as u64);
        for &f in &self.free {
            put_varint(out, f.into());
        }
        put_varint(out, self.peers.len() as u64);
        for p in &self.peers {
            bin::put_landlord(out, p.id);
            out.extend_from_slice(&p.srtt.0.to_le_bytes());
            out.extend_from_slice(&p.rttvar.0.to_le_bytes());
            put_varint(out, p.samples);
            put_varint(out, p.backoff.into());
            put_ivarint(out, p.min_rto);
            put_ivarint(out, p.max_rto);
        }
        put_varint(out, self.inflight.len() as u64);
        for r in &self.inflight {
            put_varint(out, r.id);
            bin::put_landlord(out, r.landlord);
            match &r.kind {
                KindRecord::Renew { items } => {
                    out.push(0);
                    put_varint(out, items.len() as u64);
                    for &(idx, gen, d) in items {
                        put_varint(out, idx.into());
                        put_varint(out, gen.into());
                        put_ivarint(out, d);
                    }
                }
                KindRecord::Cancel { cookies } => {
                    out.push(1);
                    put_cookies(out, cookies);
                }
            }
            bin::put_opt_time(out, r.sent_at);
            put_ivarint(out, r.timeout_at);
        }
        put_varint(out, self.ready.len() as u64);
        for &id in &self.ready {
            put_varint(out, id);
        }
        put_varint(out, self.cancels.len() as u64);
        for c in &self.cancels {
            bin::put_landlord(out, c.landlord);
            put_cookies(out, &c.cookies);
        }
        put_varint(out, self.events.len() as u64);
        for e in &self.events {
            match e {
                EventRecord::RenewalFailed { lease, desired_expiration, error } => {
                    out.push(0);
                    put_lease_record(out, lease);
                    put_ivarint(out, *desired_expiration);
                    bin::put_opt_error(out, error.as_ref());
                }
                EventRecord::DesiredExpirationReached { lease, desired_expiration } => {
                    out.push(1);
                    put_lease_record(out, lease);
                    put_ivarint(out, *desired_expiration);
                }
                EventRecord::Renewed { lease } => {
                    out.push(2);
                    put_lease_record(out, lease);
                }
            }
        }
        let s = &self.stats;
        for v in [
            s.requests_sent,
            s.renew_requests,
            s.cancel_requests,
            s.leases_renewed,
            s.failures,
            s.desired_reached,
            s.indefinite_failures,
            s.timeouts,
            s.leases_cancelled,
            s.cancel_failures,
            s.replies_ignored,
        ] {
            put_varint(out, v);
        }
    }

    /// Reads the binary form back (what it says is checked by [`RenewalManager::restore`]).
    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<ManagerSnapshot> {
        let version = bin::u32_of(r, "version")?;
        let config = ConfigRecord {
            batch_window: r.ivarint()?,
            batch_join_after: F64(r.u64()?),
            max_batch: r.varint()?,
            initial_rtt: r.ivarint()?,
            min_rto: r.ivarint()?,
            max_rto: r.ivarint()?,
            attempts: bin::u32_of(r, "attempts")?,
            renew_divisor: bin::u32_of(r, "renew_divisor")?,
            max_retry_interval: r.ivarint()?,
            max_clock_drift_ppm: bin::u32_of(r, "max_clock_drift_ppm")?,
            first_request_id: r.varint()?,
            report_renewals: bin::bool(r)?,
        };
        let clock = r.ivarint()?;
        let offset = r.ivarint()?;
        let next_id = r.varint()?;
        let n = r.count(2)?;
        let mut cells = Vec::with_capacity(n);
        for _ in 0..n {
            let gen = bin::u32_of(r, "generation")?;
            let entry = if bin::bool(r)? {
                Some(EntryRecord {
                    lease: lease_record(r)?,
                    peer: bin::u32_of(r, "landlord index")?,
                    raw_expiration: r.ivarint()?,
                    desired: r.ivarint()?,
                    renew_duration: r.ivarint()?,
                    period: r.ivarint()?,
                    granted_at: r.ivarint()?,
                    last_sent: r.ivarint()?,
                    in_flight: bin::opt_u64(r)?,
                    send_at: bin::opt_time(r)?,
                    join_at: r.ivarint()?,
                    end_at: bin::opt_time(r)?,
                    failures: bin::u32_of(r, "failures")?,
                    last_error: bin::opt_error(r)?,
                })
            } else {
                None
            };
            cells.push(CellRecord { gen, entry });
        }
        let n = r.count(1)?;
        let mut free = Vec::with_capacity(n);
        for _ in 0..n {
            free.push(bin::u32_of(r, "free slot")?);
        }
        let n = r.count(22)?;
        let mut peers = Vec::with_capacity(n);
        for _ in 0..n {
            peers.push(PeerRecord {
                id: bin::landlord(r)?,
                srtt: F64(r.u64()?),
                rttvar: F64(r.u64()?),
                samples: r.varint()?,
                backoff: bin::u32_of(r, "back-off")?,
                min_rto: r.ivarint()?,
                max_rto: r.ivarint()?,
            });
        }
        let n = r.count(6)?;
        let mut inflight = Vec::with_capacity(n);
        for _ in 0..n {
            let id = r.varint()?;
            let landlord = bin::landlord(r)?;
            let kind = match r.u8()? {
                0 => {
                    let k = r.count(3)?;
                    let mut items = Vec::with_capacity(k);
                    for _ in 0..k {
                        items.push((
                            bin::u32_of(r, "slot")?,
                            bin::u32_of(r, "generation")?,
                            r.ivarint()?,
                        ));
                    }
                    KindRecord::Renew { items }
                }
                1 => KindRecord::Cancel { cookies: cookies(r)? },
                k => return Err(r.error(format!("request kind {k}"))),
            };
            inflight.push(InFlightRecord {
                id,
                landlord,
                kind,
                sent_at: bin::opt_time(r)?,
                timeout_at: r.ivarint()?,
            });
        }
        let n = r.count(1)?;
        let mut ready = Vec::with_capacity(n);
        for _ in 0..n {
            ready.push(r.varint()?);
        }
        let n = r.count(2)?;
        let mut cancels = Vec::with_capacity(n);
        for _ in 0..n {
            cancels.push(CancelRecord { landlord: bin::landlord(r)?, cookies: cookies(r)? });
        }
        let n = r.count(20)?;
        let mut events = Vec::with_capacity(n);
        for _ in 0..n {
            events.push(match r.u8()? {
                0 => EventRecord::RenewalFailed {
                    lease: lease_record(r)?,
                    desired_expiration: r.ivarint()?,
                    error: bin::opt_error(r)?,
                },
                1 => EventRecord::DesiredExpirationReached {
                    lease: lease_record(r)?,
                    desired_expiration: r.ivarint()?,
                },
                2 => EventRecord::Renewed { lease: lease_record(r)? },
                k => return Err(r.error(format!("event kind {k}"))),
            });
        }
        let mut v = [0u64; 11];
        for x in &mut v {
            *x = r.varint()?;
        }
        let stats = RenewalStats {
            requests_sent: v[0],
            renew_requests: v[1],
            cancel_requests: v[2],
            leases_renewed: v[3],
            failures: v[4],
            desired_reached: v[5],
            indefinite_failures: v[6],
            timeouts: v[7],
            leases_cancelled: v[8],
            cancel_failures: v[9],
            replies_ignored: v[10],
        };
        Ok(ManagerSnapshot {
            version,
            config,
            clock,
            offset,
            next_id,
            cells,
            free,
            peers,
            inflight,
            ready,
            cancels,
            events,
            stats,
        })
    }
}

fn put_lease_record(out: &mut Vec<u8>, l: &LeaseRecord) {
    bin::put_lease(out, &(*l).into());
}

fn lease_record(r: &mut Reader<'_>) -> Result<LeaseRecord> {
    Ok((&bin::lease(r)?).into())
}

fn put_cookies(out: &mut Vec<u8>, cookies: &[Cookie]) {
    put_varint(out, cookies.len() as u64);
    for &c in cookies {
        bin::put_cookie(out, c);
    }
}

fn cookies(r: &mut Reader<'_>) -> Result<Vec<Cookie>> {
    let n = r.count(16)?;
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        v.push(bin::cookie(r)?);
    }
    Ok(v)
}
