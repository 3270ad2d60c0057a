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
//!
//! Records carry outcomes, not requests, so replay never consults the policy; it re-runs the
//! same state changes (slot reuse, cookie generator, canonical expiry order) and checks that
//! they give what was recorded, refusing a journal that does not fit its snapshot.

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

/// A landlord's journal: the records not yet taken, and the time of the last one.
pub(super) struct Journal<R> {
    pending: Pending,
    /// The landlord's time as of the last record.
    clock: Millis,
    /// Records up to this one are in a snapshot: never update them in place.
    sealed: u64,
    encode: fn(&R, &mut Vec<u8>),
}

impl<R> Journal<R> {
    fn new(last_seq: u64, clock: Millis, encode: fn(&R, &mut Vec<u8>)) -> Journal<R> {
        Journal { pending: Pending::new(last_seq), clock, sealed: last_seq, encode }
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

    pub(super) fn set_journal(&mut self, last_seq: u64, clock: Millis) {
        self.journal = Some(Box::new(Journal::new(last_seq, clock, R::encode)));
    }

    pub(super) fn seal_journal(&mut self) {
        if let Some(j) = self.journal.as_deref_mut() {
            j.sealed = j.pending.last_seq();
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
            k => return Err(r.error(format!("unknown record kind {k}"))),
        }
        Ok(())
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
        ll.resume(now);
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
        Landlord::resume(self, now)
    }
}
