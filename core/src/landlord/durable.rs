//! The landlord's journal: a record for every change, replayed exactly.
//!
//! Records (each framed by [`crate::journal`]; `dt` is the landlord's time since the previous
//! record, LEB128; cookies are 16 bytes little-endian; durations LEB128, FOREVER as `i64::MAX`):
//!
//! | kind | record    | body                                   | replay                               |
//! |------|-----------|----------------------------------------|--------------------------------------|
//! | 1    | grant     | dt, cookie, duration, resource bytes   | the next slot and cookie must match  |
//! | 2    | renew     | dt, cookie, duration                   | the lease must be honoured           |
//! | 3    | cancel    | dt, cookie                             | the lease must be honoured           |
//! | 4    | sweep     | dt, count                              | exactly `count` leases must be due   |
//! | 5    | clock     | dt                                     | time moves on                        |
//! | 6    | delivered | count (u32)                            | that many expired leases handed out  |
//! | 7-10 | coordination | see `landlord::coord`               | tokens, labels, watches              |
//! | 11   | reserve   | dt, cookie, time reserved past now     | the lease must be held; remembered   |
//! | 12   | apply     | dt                                     | reservations extend their leases     |
//!
//! Records 11 and 12 are written only with relaxed renewals on
//! ([`Landlord::set_relaxed_renewals`]); see there for the rule they carry out.
//!
//! Records carry outcomes, not requests, so replay never consults the policy; it re-runs the
//! same state changes (slot reuse, cookie generator, canonical expiry order) and checks that
//! they give what was recorded, refusing a journal that does not fit its snapshot.

use std::collections::HashMap;
use std::ops::Range;

use super::{Landlord, LeaseError, Millis, Result, NIL};
use crate::journal::{put_varint, replay_segments, Durable, Frame, Pending, Reader, Recovered};
use crate::lease::Cookie;
use crate::policy::LeasePolicy;
use crate::time::{Duration, FOREVER};

const GRANT: u8 = 1;
const RENEW: u8 = 2;
const CANCEL: u8 = 3;
const SWEEP: u8 = 4;
const CLOCK: u8 = 5;
const DELIVERED: u8 = 6;
const RESERVE: u8 = 11;
const APPLY: u8 = 12;

/// A reservation (relaxed renewals): the lease in a slot may be answered renewed, before its
/// renewal record is durable, up to `until` (landlord time), once record `seq` is durable.
#[derive(Debug, Clone, Copy)]
pub(super) struct Reservation {
    cookie: Cookie,
    until: Millis,
    seq: u64,
}

/// A landlord's journal: the records not yet taken, and the time of the last one.
pub(super) struct Journal<R> {
    pending: Pending,
    /// The landlord's time as of the last record.
    clock: Millis,
    /// Records up to this one are in a snapshot: never update them in place.
    sealed: u64,
    encode: fn(&R, &mut Vec<u8>),
    /// Relaxed renewals on ([`Landlord::set_relaxed_renewals`]).
    relaxed: bool,
    /// The last record the host said is durable ([`Landlord::set_durable`]).
    durable: u64,
    /// Reservations by slot, from `reserve` records since the last snapshot or `apply`.
    reserved: HashMap<u32, Reservation>,
    /// Renewals answerable before their records are durable, since the count was last reset.
    early: usize,
}

impl<R> Journal<R> {
    fn new(last_seq: u64, clock: Millis, encode: fn(&R, &mut Vec<u8>)) -> Journal<R> {
        Journal {
            pending: Pending::new(last_seq),
            clock,
            sealed: last_seq,
            encode,
            relaxed: false,
            durable: last_seq,
            reserved: HashMap::new(),
            early: 0,
        }
    }

    /// Relaxed renewals: decides whether a renewal just recorded (`cookie` in slot `idx`, its
    /// expiration moved from `old` to `expiration` for `duration`) may be answered before its
    /// record is durable. It may when a durable reservation of this lease covers the new
    /// expiration (and the renewal does not shorten the lease). Otherwise the renewal waits for
    /// the sync, and if no reservation covers it, a new one is recorded: one `duration` past the
    /// expiration granted now, so that after a crash the lease lives at most one lease period
    /// longer than its holder was told.
    #[inline]
    pub(super) fn relax(
        &mut self,
        idx: u32,
        cookie: Cookie,
        old: Millis,
        expiration: Millis,
        duration: Duration,
        now: Millis,
    ) {
        if expiration == FOREVER || expiration < old {
            return;
        }
        if let Some(r) = self.reserved.get(&idx) {
            if r.cookie == cookie && expiration <= r.until {
                if r.seq <= self.durable {
                    self.early += 1;
                }
                return;
            }
        }
        let until = crate::time::expiration_after(expiration, duration);
        if until == FOREVER {
            return;
        }
        let b = self.head(RESERVE, now);
        b.extend_from_slice(&cookie.0.to_le_bytes());
        put_varint(b, (until - now) as u64);
        self.pending.end();
        let seq = self.pending.last_seq();
        self.reserved.insert(idx, Reservation { cookie, until, seq });
    }

    /// Forgets the reservation of a slot whose lease ended.
    #[inline]
    pub(super) fn ended(&mut self, idx: u32) {
        if !self.reserved.is_empty() {
            self.reserved.remove(&idx);
        }
    }

    pub(super) fn relaxed(&self) -> bool {
        self.relaxed
    }

    pub(super) fn take_early(&mut self) -> usize {
        std::mem::take(&mut self.early)
    }

    pub(super) fn clock(&self) -> Millis {
        self.clock
    }

    pub(super) fn heap_bytes(&self) -> usize {
        self.pending.heap_bytes()
    }

    /// Starts a record of `kind` at landlord time `now`.
    #[inline]
    fn head(&mut self, kind: u8, now: Millis) -> &mut Vec<u8> {
        let dt = (now as u64).wrapping_sub(self.clock as u64);
        self.clock = now;
        let b = self.pending.begin(kind);
        put_varint(b, dt);
        b
    }

    pub(super) fn grant(&mut self, now: Millis, cookie: Cookie, duration: Duration, r: &R) {
        let encode = self.encode;
        let b = self.head(GRANT, now);
        b.extend_from_slice(&cookie.0.to_le_bytes());
        put_varint(b, duration as u64);
        encode(r, b);
        self.pending.end();
    }

    pub(super) fn renew(&mut self, now: Millis, cookie: Cookie, duration: Duration) {
        let b = self.head(RENEW, now);
        b.extend_from_slice(&cookie.0.to_le_bytes());
        put_varint(b, duration as u64);
        self.pending.end();
    }

    pub(super) fn cancel(&mut self, now: Millis, cookie: Cookie) {
        let b = self.head(CANCEL, now);
        b.extend_from_slice(&cookie.0.to_le_bytes());
        self.pending.end();
    }

    pub(super) fn sweep(&mut self, now: Millis, count: u64) {
        let b = self.head(SWEEP, now);
        put_varint(b, count);
        self.pending.end();
    }

    /// A record of `kind` at landlord time `now` whose body (after `dt`) `body` writes.
    pub(super) fn coord_record(&mut self, kind: u8, now: Millis, body: impl FnOnce(&mut Vec<u8>)) {
        body(self.head(kind, now));
        self.pending.end();
    }

    pub(super) fn clock_record(&mut self, now: Millis) {
        self.head(CLOCK, now);
        self.pending.end();
    }

    /// One expired lease handed out: counted into the last record if that is a pending
    /// `delivered` record no snapshot includes yet.
    pub(super) fn delivered(&mut self) {
        if self.pending.last_seq() > self.sealed {
            if let Some(body) = self.pending.last_body_mut(DELIVERED) {
                let n = u32::from_le_bytes(body[..4].try_into().expect("4 bytes"));
                if n < u32::MAX {
                    body[..4].copy_from_slice(&(n + 1).to_le_bytes());
                    return;
                }
            }
        }
        self.pending.begin(DELIVERED).extend_from_slice(&1u32.to_le_bytes());
        self.pending.end();
    }
}

impl<R> Landlord<R> {
    /// Continues the landlord's time from where it was, on a host clock that now reads `now`.
    ///
    /// Time spent down does not count: a lease with 10 s left at the last journal record has
    /// 10 s left after the resume. So no lease ever expires before the time its holder was
    /// told, whatever the new host's clock says; and a lease whose holder died during an outage
    /// ends at most its remaining time at the crash, plus
    /// [`super::LandlordConfig::journal_clock_interval`] (time before the crash that no record
    /// covers), after the landlord resumes: never more than one lease period.
    ///
    /// [`Landlord::recover`] calls it; call it yourself after [`Landlord::replay_segments`].
    /// A landlord that never saw a time keeps the host's clock as it is.
    pub fn resume(&mut self, now: Millis) {
        self.offset = if self.clock == Millis::MIN { 0 } else { self.clock.saturating_sub(now) };
    }
}

impl<R: Durable> Landlord<R> {
    /// Starts a journal: from now on every change is recorded (see [`crate::journal`]).
    /// A landlord rebuilt from a binary snapshot has one already.
    pub fn enable_journal(&mut self) {
        if self.journal.is_none() {
            self.journal = Some(Box::new(Journal::new(0, self.clock, R::encode)));
        }
    }

    /// [`Landlord::resume`], and then (relaxed renewals) applies the reservations that replay
    /// found, with an `apply` record: what a host calls after [`Landlord::replay_segments`].
    pub fn resume_durable(&mut self, now: Millis) {
        self.resume(now);
        self.apply_recovered_reservations();
    }

    pub(super) fn set_journal(&mut self, last_seq: u64, clock: Millis) {
        self.journal = Some(Box::new(Journal::new(last_seq, clock, R::encode)));
    }

    pub(super) fn seal_journal(&mut self) {
        if let Some(j) = self.journal.as_deref_mut() {
            j.sealed = j.pending.last_seq();
            // A snapshot holds every lease's expiration as answered so far; reservations made
            // before it are not in it, so renewals after it need new ones (relaxed renewals).
            j.reserved.clear();
        }
    }

    /// Relaxed renewals (opt-in; off by default): a renewal may be answered before its journal
    /// record is durable, on this rule.
    ///
    /// - Grants, cancels, errors and coordination answers are never answered early.
    /// - A renewal that extends a lease up to `until` (landlord time) of a *durable reservation*
    ///   of that lease is answered at once ([`Landlord::handle_request_relaxed`] says so). Any
    ///   other renewal waits for the sync as usual, and records a reservation of its lease up
    ///   to one granted duration past the expiration it grants (`reserve` record). So the first
    ///   renewal of a lease after a sync point waits; the renewals that follow before that
    ///   renewal's expiration do not.
    /// - Recovery applies the reservations: [`Landlord::resume`] writes an `apply` record that
    ///   extends each reserved lease to its reservation (replay re-applies it at the same
    ///   point, so a second crash extends nothing again).
    ///
    /// Hence after a crash every lease lives at least until the expiration its holder was told
    /// (a told expiration past the durable record is at most its durable reservation), and at
    /// most one lease period (the duration granted by the renewal that made the reservation)
    /// longer than the last expiration told (renewals answered early never shorten a lease).
    /// As always, time before the crash that no record covers (at most
    /// [`super::LandlordConfig::journal_clock_interval`]) is not counted either.
    ///
    /// The host tells the landlord what is durable with [`Landlord::set_durable`]. A snapshot
    /// clears the reservations (it holds every expiration answered so far). Turning it off
    /// only stops early answers; records already written are replayed as written.
    pub fn set_relaxed_renewals(&mut self, on: bool) {
        if let Some(j) = self.journal.as_deref_mut() {
            j.relaxed = on;
        }
    }

    /// Whether relaxed renewals are on ([`Landlord::set_relaxed_renewals`]).
    pub fn relaxed_renewals(&self) -> bool {
        self.journal.as_deref().is_some_and(|j| j.relaxed)
    }

    /// The host says that journal records up to `seq` are durable (relaxed renewals: a
    /// reservation counts from then on).
    pub fn set_durable(&mut self, seq: u64) {
        if let Some(j) = self.journal.as_deref_mut() {
            j.durable = j.durable.max(seq.min(j.pending.last_seq()));
        }
    }

    pub(super) fn journal_clock(&self) -> Millis {
        self.journal.as_ref().map_or(self.clock, |j| j.clock)
    }

    /// Sequence number of the last journal record written (0 without a journal or before the
    /// first record). A reply handed out now depends on every record up to it.
    pub fn journal_seq(&self) -> u64 {
        self.journal.as_ref().map_or(0, |j| j.pending.last_seq())
    }

    /// Appends the records written since the last call to `out`, as one frame for the host to
    /// write in one go, and returns their sequence numbers; `None` if there are none.
    pub fn take_journal(&mut self, out: &mut Vec<u8>) -> Option<Range<u64>> {
        self.journal.as_deref_mut()?.pending.take(out)
    }

    /// Applies the frames of a log that follow this landlord's state (records it already has
    /// are skipped). Fails on a gap, or on a record that does not fit the state.
    pub fn replay(&mut self, frame: &Frame<'_>) -> Result<u64> {
        let Some(mut j) = self.journal.take() else {
            return Err(LeaseError::InvalidArgument(
                "replay needs a journaled landlord (enable_journal or a binary snapshot)".into(),
            ));
        };
        let result = self.replay_frame(&mut j, frame);
        self.journal = Some(j);
        result
    }

    fn replay_frame(&mut self, j: &mut Journal<R>, frame: &Frame<'_>) -> Result<u64> {
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
            j.durable = seq;
            applied += 1;
        }
        Ok(applied)
    }

    /// Reads the landlord's time forward by a record's `dt`.
    fn replay_time(&mut self, j: &mut Journal<R>, r: &mut Reader<'_>) -> Result<()> {
        let dt = r.varint()?;
        let t = (j.clock as u64).wrapping_add(dt) as i64;
        if t < j.clock || t < self.clock {
            return Err(r.error(format!("time runs backwards to {t}")));
        }
        j.clock = t;
        self.clock = t;
        Ok(())
    }

    fn apply(&mut self, j: &mut Journal<R>, rec: &[u8]) -> Result<()> {
        let mut r = Reader::new(rec, "journal record");
        let duration = |r: &mut Reader<'_>| -> Result<Duration> {
            let d = r.varint()?;
            if d > FOREVER as u64 {
                return Err(r.error(format!("duration {d} out of range")));
            }
            Ok(d as Duration)
        };
        match r.u8()? {
            GRANT => {
                self.replay_time(j, &mut r)?;
                let cookie = Cookie(r.u128()?);
                let d = duration(&mut r)?;
                let resource = R::decode(r.rest())?;
                if self.free == NIL && self.slots.len() >= NIL as usize {
                    return Err(r.error("grant to a full landlord"));
                }
                let (got, _) = self.place(resource, d);
                if got != cookie {
                    return Err(r.error(format!(
                        "grant of cookie {cookie}, but the landlord's next cookie is {got}"
                    )));
                }
            }
            RENEW => {
                self.replay_time(j, &mut r)?;
                let cookie = Cookie(r.u128()?);
                let d = duration(&mut r)?;
                r.finish()?;
                match self.live_slot(cookie) {
                    Ok(idx) => {
                        self.extend(idx, d);
                        if let Some(c) = self.coord.as_deref_mut() {
                            let res = self.slots[idx as usize].resource.as_ref().expect("held");
                            c.renewed(cookie, res, d);
                        }
                    }
                    Err(_) if self.replay_renew_watch(cookie, d) => {}
                    Err(_) => {
                        return Err(r.error(format!("renewal of lease {cookie}, which is not held")))
                    }
                }
            }
            CANCEL => {
                self.replay_time(j, &mut r)?;
                let cookie = Cookie(r.u128()?);
                r.finish()?;
                match self.live_slot(cookie) {
                    Ok(idx) => {
                        let res = self.vacate(idx);
                        if let Some(c) = self.coord.as_deref_mut() {
                            c.ended(cookie, &res, crate::coord::EventKind::Cancelled);
                        }
                    }
                    Err(_) if self.replay_cancel_watch(cookie) => {}
                    Err(_) => {
                        return Err(r.error(format!("cancel of lease {cookie}, which is not held")))
                    }
                }
            }
            SWEEP => {
                self.replay_time(j, &mut r)?;
                let count = r.varint()?;
                r.finish()?;
                let n = self.sweep(count.min(usize::MAX as u64) as usize) as u64;
                if n != count {
                    return Err(r.error(format!("sweep of {count} leases, {n} were due")));
                }
            }
            CLOCK => {
                self.replay_time(j, &mut r)?;
                r.finish()?;
            }
            DELIVERED => {
                let count = r.u32()?;
                r.finish()?;
                if (count as usize) > self.expired.len() {
                    return Err(r.error(format!(
                        "{count} expired leases handed out, {} were waiting",
                        self.expired.len()
                    )));
                }
                self.expired.drain(..count as usize);
            }
            k @ (super::coord::COORD_ON
            | super::coord::HOLDER
            | super::coord::WATCH
            | super::coord::WATCH_SWEEP) => {
                self.replay_time(j, &mut r)?;
                self.apply_coord(k, &mut r)?;
            }
            RESERVE => {
                self.replay_time(j, &mut r)?;
                let cookie = Cookie(r.u128()?);
                let ahead = r.varint()?;
                r.finish()?;
                let idx = self.live_slot(cookie).map_err(|_| {
                    r.error(format!("reservation of lease {cookie}, which is not held"))
                })?;
                let until =
                    (j.clock as u64).saturating_add(ahead).min(FOREVER as u64 - 1) as Millis;
                let seq = j.pending.last_seq() + 1;
                j.reserved.insert(idx, Reservation { cookie, until, seq });
            }
            APPLY => {
                self.replay_time(j, &mut r)?;
                r.finish()?;
                self.apply_reservations(j);
            }
            k => return Err(r.error(format!("unknown record kind {k}"))),
        }
        Ok(())
    }

    /// Extends every reserved lease to its reservation (in slot order), and forgets them.
    fn apply_reservations(&mut self, j: &mut Journal<R>) {
        let mut all: Vec<(u32, Reservation)> = j.reserved.drain().collect();
        all.sort_unstable_by_key(|(idx, _)| *idx);
        for (idx, r) in all {
            // A lease past its deadline but not yet swept is extended too (its holder may have
            // been told more); one already taken off the wheel to expire was past its deadline
            // before any renewal that could rely on this reservation.
            if self.slot_of(r.cookie) != Some(idx) || self.due.contains(&idx) {
                continue;
            }
            let exp = self.slots[idx as usize].expiration;
            if exp == FOREVER || exp >= r.until || r.until <= self.clock {
                continue;
            }
            let d = r.until - self.clock;
            self.extend(idx, d);
            if let Some(c) = self.coord.as_deref_mut() {
                let res = self.slots[idx as usize].resource.as_ref().expect("held");
                c.renewed(r.cookie, res, d);
            }
        }
    }

    /// After a replay: applies the reservations found (relaxed renewals), with an `apply`
    /// record so that a later replay applies them at the same point. Nothing without them.
    fn apply_recovered_reservations(&mut self) {
        let Some(mut j) = self.journal.take() else { return };
        if !j.reserved.is_empty() {
            let now = self.clock.max(j.clock);
            j.head(APPLY, now);
            j.pending.end();
            self.apply_reservations(&mut j);
        }
        self.journal = Some(j);
    }

    /// Replays a log kept in segments (oldest first) onto this landlord's state.
    ///
    /// Records the state already has are skipped; the rest must follow on without a gap. A torn
    /// tail is accepted in the last segment only (and reported, with the length to truncate it
    /// to); damage anywhere else is a [`LeaseError::Decode`] error.
    pub fn replay_segments(&mut self, segments: &[&[u8]]) -> Result<Recovered> {
        let mut out = replay_segments(segments, |f| self.replay(f))?;
        out.last_seq = self.journal_seq();
        Ok(out)
    }

    /// Rebuilds a durable landlord: its binary snapshot ([`Landlord::snapshot_bytes`]), the log
    /// segments that follow it, and `policy` (code, not data: the host supplies it again).
    /// Then [`Landlord::resume`]s at `now`: time spent down does not count.
    pub fn recover(
        snapshot: &[u8],
        segments: &[&[u8]],
        policy: impl LeasePolicy + 'static,
        now: Millis,
    ) -> Result<(Landlord<R>, Recovered)> {
        let mut ll = Landlord::from_snapshot_bytes(snapshot, policy)?;
        let rec = ll.replay_segments(segments)?;
        ll.resume_durable(now);
        Ok((ll, rec))
    }
}

impl<R: Durable> crate::journal::Journaled for Landlord<R> {
    const KIND: u16 = crate::journal::KIND_LANDLORD;
    fn journal_seq(&self) -> u64 {
        Landlord::journal_seq(self)
    }
    fn take_journal(&mut self, out: &mut Vec<u8>) -> Option<Range<u64>> {
        Landlord::take_journal(self, out)
    }
    fn snapshot_bytes(&mut self, out: &mut Vec<u8>) -> u64 {
        Landlord::snapshot_bytes(self, out)
    }
    fn replay_segments(&mut self, segments: &[&[u8]]) -> Result<Recovered> {
        Landlord::replay_segments(self, segments)
    }
    fn resume(&mut self, now: Millis) {
        Landlord::resume_durable(self, now)
    }
}
