//! The renewal service's journal: a command log, replayed through the same code.
//!
//! The service is deterministic (its policies are data), so its journal records every call
//! that changes it, with the service's time, and replay runs each again through
//! [`RenewalService::execute`], the one place where the service changes. Snapshot plus journal
//! gives the same service: the same replies, requests, events and time-outs.
//!
//! Records (each framed by [`crate::journal`]; `dt` is the host's `now` given to the call minus
//! the one of the previous record that has one, zigzag LEB128 (a host clock may step back; the
//! service's own time, worked out from it by the same code on replay, never does); other signed
//! numbers zigzag LEB128; leases are landlord, cookie, expiration on the host's clock and serial
//! format; messages are their binary wire encoding):
//!
//! | kind | record        | body                                       |
//! |------|---------------|--------------------------------------------|
//! | 1    | create set    | dt, duration                               |
//! | 2    | add           | dt, set, lease, membership, renew duration |
//! | 3    | remove        | dt, set, lease                             |
//! | 4    | warning       | dt, set, min warning, handback             |
//! | 5    | failure lstn  | dt, set, handback                          |
//! | 6    | clear warning | dt, set                                    |
//! | 7    | clear failure | dt, set                                    |
//! | 8    | unknown event | event id                                   |
//! | 9    | request       | dt, request message                        |
//! | 10   | time-out      | dt                                         |
//! | 11   | transmit      | dt                                         |
//! | 12   | reply         | dt, reply message                          |
//! | 13   | send failure  | dt, request id, error                      |
//! | 14   | resume        | dt                                         |
//! | 15   | clock         | dt                                         |
//! | 16   | taken         | count (u32): events handed out             |
//! | 17   | locator       | landlord, locator bytes (no time)          |
//! | 18   | delivered     | dt, event id, sequence number              |
//!
//! A `taken` record moves events from the queue into their registrations' outbox, a
//! `delivered` record takes one out of it, and `resume` puts the outbox back in front of the
//! queue: a restart hands out again what was handed out and not delivered (at least once; see
//! the module docs of [`super`], "Delivery"). Journals written before `delivered` existed read
//! as ever; their events handed out are handed out once more after the upgrade.
//!
//! # Time across restarts
//!
//! Set leases follow the landlord's rule: time spent down does not count. [`RenewalService::
//! resume`] continues their clock from the last recorded time, so no set lease expires before
//! the time its client was told; a set whose client died during an outage ends at most its
//! remaining time at the crash, plus the set-lease landlord's `journal_clock_interval` (time
//! before the crash that no record covers), after the service resumes. Client leases and
//! memberships are absolute times on the host's clock (their landlords kept counting): recover
//! with a clock that continues across restarts. The service's time never runs backwards: a host
//! clock behind the last recorded time freezes it until the clock catches up.
//!
//! # Reply after durable
//!
//! Everything a call hands out (its return value, a reply, a request to send, an event) may
//! leave only once the journal is durable up to [`RenewalService::journal_seq`] read right
//! after the call: push it into a [`crate::journal::Gate`] with that number and release it
//! when the store confirms. Events record that they were handed out and that they were
//! delivered, so a restart hands out again only those not reported delivered; requests to
//! client landlords wait too, so that a request id the service forgets in a crash was never
//! sent.

use std::ops::Range;

use super::{Command, RenewalService, RenewalServiceConfig};
use crate::error::{LeaseError, Result};
use crate::holder::bin;
use crate::journal::{
    put_bytes, put_ivarint, put_varint, read_snapshot, replay_segments, write_snapshot, Frame,
    Pending, Reader, Recovered, KIND_RENEWAL_SERVICE,
};
use crate::lease::Cookie;
use crate::time::Millis;
use crate::wire::{Encoding, Limits, Reply, Request};

use super::snapshot::BINARY_SNAPSHOT_VERSION;

const CREATE_SET: u8 = 1;
const ADD: u8 = 2;
const REMOVE: u8 = 3;
const SET_WARNING: u8 = 4;
const SET_FAILURE: u8 = 5;
const CLEAR_WARNING: u8 = 6;
const CLEAR_FAILURE: u8 = 7;
const UNKNOWN_EVENT: u8 = 8;
const REQUEST: u8 = 9;
const TIMEOUT: u8 = 10;
const TRANSMIT: u8 = 11;
const REPLY: u8 = 12;
const FAILURE: u8 = 13;
const RESUME: u8 = 14;
const CLOCK: u8 = 15;
const TAKEN: u8 = 16;
const LOCATE: u8 = 17;
const DELIVERED: u8 = 18;

/// Messages in records were checked when they first came in: read them back without limits.
const UNLIMITED: Limits =
    Limits { max_message_bytes: usize::MAX, max_batch: usize::MAX, max_resource_bytes: usize::MAX };

/// A service's journal: the records not yet taken, and the time of the last one.
pub(crate) struct Journal {
    pending: Pending,
    /// The service's time as of the last record.
    clock: Millis,
    /// The host's `now` of the last record that has one.
    raw: Millis,
    /// Records up to this one are in a snapshot: never update them in place.
    sealed: u64,
}

impl Journal {
    fn new(last_seq: u64, clock: Millis, raw: Millis) -> Journal {
        Journal { pending: Pending::new(last_seq), clock, raw, sealed: last_seq }
    }

    /// The service's time as of the last record.
    pub(crate) fn clock(&self) -> Millis {
        self.clock
    }

    /// Starts a record of `kind` for a call given the host's `raw` now, which made the
    /// service's time `now`.
    fn head(&mut self, kind: u8, raw: Millis, now: Millis) -> &mut Vec<u8> {
        let dt = raw.wrapping_sub(self.raw);
        self.raw = raw;
        self.clock = now;
        let b = self.pending.begin(kind);
        put_ivarint(b, dt);
        b
    }

    /// Records `c`, called with the host's `raw` now (`None`: a call without one), which made
    /// the service's time `now`.
    pub(crate) fn command(&mut self, c: &Command, raw: Option<Millis>, now: Millis) {
        if let Command::UnknownEvent { event_id } = c {
            // The one call without a time.
            put_varint(self.pending.begin(UNKNOWN_EVENT), *event_id);
            self.pending.end();
            return;
        }
        if let Command::Locate { landlord, locator } = c {
            // No time either: a locator changes nothing that depends on it.
            let b = self.pending.begin(LOCATE);
            bin::put_landlord(b, *landlord);
            put_bytes(b, locator);
            self.pending.end();
            return;
        }
        let now = (raw.unwrap_or(self.raw), now);
        match c {
            Command::CreateSet { duration } => {
                let b = self.head(CREATE_SET, now.0, now.1);
                put_ivarint(b, *duration);
            }
            Command::Add { set, lease, membership, renew } => {
                let b = self.head(ADD, now.0, now.1);
                put_varint(b, set.0);
                bin::put_lease(b, lease);
                put_ivarint(b, *membership);
                put_ivarint(b, *renew);
            }
            Command::Remove { set, lease } => {
                let b = self.head(REMOVE, now.0, now.1);
                put_varint(b, set.0);
                bin::put_lease(b, lease);
            }
            Command::SetWarning { set, min_warning, handback } => {
                let b = self.head(SET_WARNING, now.0, now.1);
                put_varint(b, set.0);
                put_ivarint(b, *min_warning);
                put_bytes(b, handback);
            }
            Command::SetFailure { set, handback } => {
                let b = self.head(SET_FAILURE, now.0, now.1);
                put_varint(b, set.0);
                put_bytes(b, handback);
            }
            Command::ClearWarning { set } => {
                put_varint(self.head(CLEAR_WARNING, now.0, now.1), set.0)
            }
            Command::ClearFailure { set } => {
                put_varint(self.head(CLEAR_FAILURE, now.0, now.1), set.0)
            }
            Command::UnknownEvent { .. } | Command::Locate { .. } => {
                unreachable!("recorded above")
            }
            Command::Request(r) => {
                let bytes = r.encode(Encoding::Binary);
                self.head(REQUEST, now.0, now.1).extend_from_slice(&bytes);
            }
            Command::Timeout => {
                self.head(TIMEOUT, now.0, now.1);
            }
            Command::Transmit => {
                self.head(TRANSMIT, now.0, now.1);
            }
            Command::Reply(r) => {
                let bytes = r.encode(Encoding::Binary);
                self.head(REPLY, now.0, now.1).extend_from_slice(&bytes);
            }
            Command::Failure { id, error } => {
                let b = self.head(FAILURE, now.0, now.1);
                put_varint(b, *id);
                bin::put_error(b, error);
            }
            Command::Resume { .. } => {
                self.head(RESUME, now.0, now.1);
            }
            Command::Delivered { event_id, sequence } => {
                let b = self.head(DELIVERED, now.0, now.1);
                put_varint(b, *event_id);
                put_varint(b, *sequence);
            }
        }
        self.pending.end();
    }

    /// Records a call that changed nothing but the time: the host's `raw` now, which made the
    /// service's time `now`.
    pub(crate) fn clock_record(&mut self, raw: Millis, now: Millis) {
        self.head(CLOCK, raw, now);
        self.pending.end();
    }

    /// One event handed out: counted into the last record if that is a pending `taken`
    /// record no snapshot includes yet.
    pub(crate) fn taken(&mut self) {
        if self.pending.last_seq() > self.sealed {
            if let Some(body) = self.pending.last_body_mut(TAKEN) {
                let n = u32::from_le_bytes(body[..4].try_into().expect("4 bytes"));
                if n < u32::MAX {
                    body[..4].copy_from_slice(&(n + 1).to_le_bytes());
                    return;
                }
            }
        }
        self.pending.begin(TAKEN).extend_from_slice(&1u32.to_le_bytes());
        self.pending.end();
    }
}

/// One record read back: the host's `now` of the call (if it had one) and what to do.
enum Record {
    Run(Option<Millis>, Command),
    Clock(Millis),
    Taken(u32),
}

/// Reads one record; `raw` is the host's `now` of the last record that had one.
fn read_record(rec: &[u8], raw: Millis) -> Result<Record> {
    let mut r = Reader::new(rec, "renewal service journal record");
    let kind = r.u8()?;
    if kind == TAKEN {
        let n = r.u32()?;
        r.finish()?;
        return Ok(Record::Taken(n));
    }
    if kind == UNKNOWN_EVENT {
        let event_id = r.varint()?;
        r.finish()?;
        return Ok(Record::Run(None, Command::UnknownEvent { event_id }));
    }
    if kind == LOCATE {
        let landlord = bin::landlord(&mut r)?;
        let locator = r.bytes()?.to_vec();
        r.finish()?;
        return Ok(Record::Run(None, Command::Locate { landlord, locator }));
    }
    let t = raw.wrapping_add(r.ivarint()?);
    let set = |r: &mut Reader<'_>| -> Result<super::SetId> { Ok(super::SetId(r.varint()?)) };
    let command = match kind {
        CREATE_SET => Command::CreateSet { duration: r.ivarint()? },
        ADD => Command::Add {
            set: set(&mut r)?,
            lease: bin::lease(&mut r)?,
            membership: r.ivarint()?,
            renew: r.ivarint()?,
        },
        REMOVE => Command::Remove { set: set(&mut r)?, lease: bin::lease(&mut r)? },
        SET_WARNING => Command::SetWarning {
            set: set(&mut r)?,
            min_warning: r.ivarint()?,
            handback: r.bytes()?.to_vec(),
        },
        SET_FAILURE => Command::SetFailure { set: set(&mut r)?, handback: r.bytes()?.to_vec() },
        CLEAR_WARNING => Command::ClearWarning { set: set(&mut r)? },
        CLEAR_FAILURE => Command::ClearFailure { set: set(&mut r)? },
        REQUEST => Command::Request(Request::decode(r.rest(), Encoding::Binary, &UNLIMITED)?),
        TIMEOUT => Command::Timeout,
        TRANSMIT => Command::Transmit,
        REPLY => Command::Reply(Reply::decode(r.rest(), Encoding::Binary, &UNLIMITED)?),
        FAILURE => Command::Failure { id: r.varint()?, error: bin::error(&mut r)? },
        // The time before it is the service's, filled in when it runs.
        RESUME => Command::Resume { before: Millis::MIN },
        DELIVERED => Command::Delivered { event_id: r.varint()?, sequence: r.varint()? },
        CLOCK => {
            r.finish()?;
            return Ok(Record::Clock(t));
        }
        k => return Err(r.error(format!("unknown record kind {k}"))),
    };
    r.finish()?;
    Ok(Record::Run(Some(t), command))
}

impl RenewalService {
    /// Continues the service's time from where it was, on a host clock that now reads `now`
    /// (see the module docs of [`super`]: set leases do not count the time spent down; client
    /// leases and memberships are absolute; the service's time never runs backwards).
    ///
    /// [`RenewalService::recover`] calls it; call it yourself after
    /// [`RenewalService::replay_segments`]. With a journal, it is journaled like any other
    /// call.
    pub fn resume(&mut self, now: Millis) {
        self.command(Command::Resume { before: self.clock }, Some(now));
    }

    /// Moves set leases' clock so that the time between `before` and `now` does not count.
    pub(super) fn do_resume(&mut self, before: Millis, now: Millis) {
        if before == Millis::MIN || now <= before {
            return;
        }
        // The landlord must have seen `before` (on its clock, `before` plus the offset) for
        // its resume to keep exactly that time: a renewal of a cookie no landlord issues (the
        // zero cookie) moves its clock and changes nothing else.
        let _ = self.landlord.renew(Cookie(0), 0, before);
        self.landlord.resume(now);
        let d = now.saturating_sub(before);
        self.set_offset = self.set_offset.saturating_sub(d);
        // Set expirations on the host's clock moved on by `d`: so do their time-outs and
        // the warnings.
        self.file_all_sets();
        let sets: Vec<super::SetId> = self.sets.keys().copied().collect();
        // So do the expirations that warnings not delivered yet name.
        for e in &mut self.out {
            if let super::SetEventKind::ExpirationWarning { expiration, .. } = &mut e.kind {
                *expiration = crate::time::expiration_after(*expiration, d);
            }
        }
        for set in sets {
            if let Some(w) = self.sets.get_mut(&set).and_then(|s| s.warning.as_mut()) {
                w.sent_for = w.sent_for.map(|t| crate::time::expiration_after(t, d));
            }
            self.arm_warning(set, now);
        }
    }

    /// Starts a journal: from now on every change is recorded (see the module docs of
    /// [`crate::journal`]). A service rebuilt from a binary snapshot has one already.
    pub fn enable_journal(&mut self) {
        if self.journal.is_none() {
            let raw = self.to_host(self.clock);
            self.journal = Some(Box::new(Journal::new(0, self.clock, raw)));
        }
    }

    /// Sequence number of the last journal record written (0 without a journal or before the
    /// first record). Anything handed out by the last call depends on every record up to it:
    /// it may leave once that is durable ([`crate::journal::Gate`]).
    pub fn journal_seq(&self) -> u64 {
        self.journal.as_ref().map_or(0, |j| j.pending.last_seq())
    }

    /// Appends the records written since the last call to `out`, as one frame for the host to
    /// write in one go, and returns their sequence numbers; `None` if there are none.
    pub fn take_journal(&mut self, out: &mut Vec<u8>) -> Option<Range<u64>> {
        self.journal.as_deref_mut()?.pending.take(out)
    }

    /// Writes a binary snapshot (versioned, checksummed, in a [`crate::journal`] snapshot
    /// container of kind [`KIND_RENEWAL_SERVICE`]) to `out` and returns the sequence number of
    /// the last journal record it includes; log records up to it may then be dropped. Write it
    /// at the service's own time: it holds the service exactly as it is.
    pub fn snapshot_bytes(&mut self, out: &mut Vec<u8>) -> u64 {
        if let Some(j) = self.journal.as_deref_mut() {
            j.sealed = j.pending.last_seq();
        }
        let seq = self.journal_seq();
        let raw = self.journal.as_ref().map_or(self.to_host(self.clock), |j| j.raw);
        let snap = self.snapshot_in(self.clock);
        let mut body = Vec::with_capacity(256 + 64 * self.clients.len() + 32 * self.sets.len());
        snap.encode(&self.config.set_policy, self.config.restore_jump, raw, &mut body);
        write_snapshot(out, KIND_RENEWAL_SERVICE, BINARY_SNAPSHOT_VERSION, seq, &body);
        seq
    }

    /// Rebuilds a service from a binary snapshot ([`RenewalService::snapshot_bytes`]), exactly
    /// as it was (no restore jump: its journal follows), with a journal, ready for
    /// [`RenewalService::replay_segments`]; then call [`RenewalService::resume`] (or use
    /// [`RenewalService::recover`], which does all three). Its configuration (set policy,
    /// manager and landlord settings, restore jump) comes from the snapshot.
    ///
    /// Damage, another kind or version, or any inconsistency is a [`LeaseError::Decode`]
    /// error. Checked, in both snapshot forms: the set-lease landlord's own snapshot (see
    /// [`crate::Landlord::restore`]); each set has its lease in that landlord and each set lease
    /// belongs to one set; set numbers were handed out; memberships name client leases the
    /// snapshot holds, follow the LR rules and appear once per set; every client lease is in a
    /// set, once; event registrations belong to their set, one each, and their numbers can
    /// take the restore jump; the renewal manager's own snapshot (see
    /// [`crate::RenewalManager::restore`]), whose time is not ahead of the service's and which
    /// renews only leases a set holds; events not yet handed out fit their registrations and
    /// are in order; events handed out and not delivered (the outbox) belong to active
    /// registrations, at most [`super::MAX_UNACKED_EVENTS`] each, in order and before that
    /// registration's events not yet handed out.
    pub fn from_snapshot_bytes(bytes: &[u8]) -> Result<RenewalService> {
        let snap = read_snapshot(bytes)?;
        let bad = |m: String| LeaseError::Decode(format!("bad renewal service snapshot: {m}"));
        if snap.kind != KIND_RENEWAL_SERVICE {
            return Err(bad(format!("snapshot of kind {}, not a renewal service's", snap.kind)));
        }
        if snap.version == 0 || snap.version > BINARY_SNAPSHOT_VERSION {
            return Err(bad(format!(
                "binary version {}, this build reads versions 1 to {BINARY_SNAPSHOT_VERSION}",
                snap.version
            )));
        }
        let mut r = Reader::new(snap.body, "renewal service snapshot");
        let (set_policy, restore_jump, raw, s) =
            super::ServiceSnapshot::decode(&mut r, snap.version)?;
        r.finish()?;
        let mut config = RenewalServiceConfig::new(s.landlord_id(), [0; 32]);
        config.set_policy = set_policy;
        config.restore_jump = restore_jump;
        let mut svc = RenewalService::from_snapshot(config, s, 0)?;
        svc.journal = Some(Box::new(Journal::new(snap.seq, svc.clock, raw)));
        Ok(svc)
    }

    /// Applies the frames of a log that follow this service's state (records it already has
    /// are skipped). Fails on a gap, or on a record that does not read.
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
            self.apply(j, rec).map_err(|e| {
                LeaseError::Decode(format!("journal record {seq} does not apply: {}", e.detail()))
            })?;
            j.pending.advance_to(seq);
            j.sealed = seq;
            applied += 1;
        }
        Ok(applied)
    }

    fn apply(&mut self, j: &mut Journal, rec: &[u8]) -> Result<()> {
        match read_record(rec, j.raw)? {
            Record::Taken(n) => {
                if n as usize > self.out.len() {
                    return Err(LeaseError::Decode(format!(
                        "{n} events handed out, {} were waiting",
                        self.out.len()
                    )));
                }
                for _ in 0..n {
                    self.hand_out();
                }
            }
            Record::Clock(raw) => {
                j.clock = self.tick(raw);
                j.raw = raw;
            }
            Record::Run(raw, command) => {
                // The same steps as the live call (`RenewalService::command`).
                let before = self.clock;
                let t = match raw {
                    Some(raw) => {
                        j.raw = raw;
                        self.tick(raw)
                    }
                    None => self.clock,
                };
                let command = match command {
                    Command::Resume { .. } => Command::Resume { before },
                    c => c,
                };
                j.clock = t;
                self.execute(&command, t);
            }
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

    /// Rebuilds a durable service: its binary snapshot ([`RenewalService::snapshot_bytes`])
    /// and the log segments that follow it; then [`RenewalService::resume`]s at `now`.
    pub fn recover(
        snapshot: &[u8],
        segments: &[&[u8]],
        now: Millis,
    ) -> Result<(RenewalService, Recovered)> {
        let mut svc = RenewalService::from_snapshot_bytes(snapshot)?;
        let rec = svc.replay_segments(segments)?;
        svc.resume(now);
        Ok((svc, rec))
    }
}

impl crate::journal::Journaled for RenewalService {
    const KIND: u16 = KIND_RENEWAL_SERVICE;
    fn journal_seq(&self) -> u64 {
        RenewalService::journal_seq(self)
    }
    fn take_journal(&mut self, out: &mut Vec<u8>) -> Option<Range<u64>> {
        RenewalService::take_journal(self, out)
    }
    fn snapshot_bytes(&mut self, out: &mut Vec<u8>) -> u64 {
        RenewalService::snapshot_bytes(self, out)
    }
    fn replay_segments(&mut self, segments: &[&[u8]]) -> Result<Recovered> {
        RenewalService::replay_segments(self, segments)
    }
    fn resume(&mut self, now: Millis) {
        RenewalService::resume(self, now)
    }
}
