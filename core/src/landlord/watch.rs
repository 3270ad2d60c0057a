//! Watches: leased event registrations on a resource or a prefix, their events, polls (now or
//! held until an event comes), and their leases' renewals and cancels.

use super::coord::{Wait, Watch, WATCH};
use super::{cookie_of, limit, Landlord, LeaseError, Result, NIL};
use crate::coord::wire::{CoordReply, CoordReplyBody};
use crate::coord::{Events, Missed, Selector, Ticket, Watching};
use crate::event::EventId;
use crate::journal::{put_bytes, put_varint};
use crate::lease::Cookie;
use crate::policy::PolicyContext;
use crate::time::{self, Duration, Millis};

impl<R> Landlord<R> {
    /// A watch registration on the resources `selector` selects: a lease of its own (renew and
    /// cancel it by its cookie like any lease; it is granted by the landlord's policy) and an
    /// event id; every grant, cancel and expiry of a selected lease from now on (and every
    /// renewal, with `renewals`) is an event with the next sequence number. The answer lists
    /// the selected exclusive resources held now ([`Watching::current`]).
    pub fn watch(
        &mut self,
        selector: Selector,
        requested: Duration,
        handback: Vec<u8>,
        renewals: bool,
        now: Millis,
    ) -> Result<Watching> {
        let clock = self.tick(now);
        time::check_requested(requested)?;
        let max = self.config.limits.max_resource_bytes;
        if selector.resource.len() > max || handback.len() > max {
            return Err(LeaseError::InvalidArgument(format!(
                "a watched resource or handback is more than the {max} bytes allowed"
            )));
        }
        let c = self.coord_mut()?;
        if c.watches.len() >= c.config.max_watches {
            return Err(LeaseError::LeaseDenied(format!(
                "{} watches held, the most this landlord holds",
                c.watches.len()
            )));
        }
        let ctx = PolicyContext { now: clock, live: self.live };
        let duration = limit(requested, self.policy.grant(requested, &ctx)?);
        let (cookie, event_id) = self.new_watch(selector.clone(), duration, handback, renewals)?;
        let current = self.holders(&selector);
        Ok(Watching { cookie, duration, event_id, sequence: 0, current })
    }

    /// Makes a watch with the next cookie and event id at the landlord's time, and journals it
    /// (replay makes it the same way and compares).
    pub(super) fn new_watch(
        &mut self,
        selector: Selector,
        duration: Duration,
        handback: Vec<u8>,
        renewals: bool,
    ) -> Result<(Cookie, EventId)> {
        self.coord_mut()?;
        let (hi, mid) = self.new_tag();
        let cookie = cookie_of(hi, mid, NIL);
        let clock = self.clock;
        let c = self.coord_mut()?;
        let event_id = c.next_event_id;
        c.next_event_id = event_id
            .checked_add(1)
            .ok_or_else(|| LeaseError::LeaseDenied("event ids are used up".into()))?;
        if let Some(j) = self.journal.as_deref_mut() {
            j.coord_record(WATCH, clock, |b| {
                b.extend_from_slice(&cookie.0.to_le_bytes());
                put_varint(b, duration as u64);
                put_varint(b, event_id);
                b.push(u8::from(selector.prefix) | u8::from(renewals) << 1);
                put_bytes(b, &selector.resource);
                put_bytes(b, &handback);
            });
        }
        let c = self.coord_mut()?;
        c.add_watch(
            event_id,
            Watch {
                cookie,
                selector,
                renewals,
                handback,
                expiration: time::expiration_after(clock, duration),
                sequence: 0,
                events: Default::default(),
                polls: Vec::new(),
            },
        );
        Ok((cookie, event_id))
    }

    /// The watch whose lease is `cookie`, if it is still honoured. A watch past its deadline is
    /// unknown from now on (the time that made it so is journaled, as for a lease).
    fn live_watch(&mut self, cookie: Cookie) -> Option<Result<EventId>> {
        let c = self.coord.as_deref()?;
        let &id = c.by_cookie.get(&cookie)?;
        let exp = c.watches[&id].expiration;
        if self.honoured(exp, self.clock) {
            Some(Ok(id))
        } else {
            self.record_clock();
            Some(Err(LeaseError::UnknownLease))
        }
    }

    /// A renewal of a cookie that is no lease: a watch's lease, or `not_held`.
    pub(super) fn renew_watch(
        &mut self,
        cookie: Cookie,
        requested: Duration,
        not_held: LeaseError,
    ) -> Result<Duration> {
        let id = match self.live_watch(cookie) {
            None => return Err(not_held),
            Some(r) => r?,
        };
        let c = self.coord.as_deref().expect("a watch");
        let old = c.watches[&id].expiration;
        let ctx = PolicyContext { now: self.clock, live: self.live };
        let duration = limit(requested, self.policy.renew(requested, old, &ctx)?);
        let clock = self.clock;
        if let Some(j) = self.journal.as_deref_mut() {
            j.renew(clock, cookie, duration);
        }
        let exp = time::expiration_after(clock, duration);
        self.coord_mut()?.set_watch_expiration(id, exp);
        Ok(duration)
    }

    /// Ends a watch registration by its lease's cookie (the landlord protocol's cancel does the
    /// same for a watch's cookie). Waiting polls are answered "unknown lease".
    pub fn cancel_watch(&mut self, cookie: Cookie, now: Millis) -> Result<()> {
        self.tick(now);
        let id = self.live_watch(cookie).ok_or(LeaseError::UnknownLease)??;
        let clock = self.clock;
        if let Some(j) = self.journal.as_deref_mut() {
            j.cancel(clock, cookie);
        }
        self.coord_mut()?.remove_watch(id);
        Ok(())
    }

    /// Whether `cookie` is a watch's lease this landlord holds (honoured or not yet swept).
    pub fn is_watch(&self, cookie: Cookie) -> bool {
        self.coord.as_deref().is_some_and(|c| c.by_cookie.contains_key(&cookie))
    }

    /// Replays a renewal of a watch's lease.
    pub(super) fn replay_renew_watch(&mut self, cookie: Cookie, duration: Duration) -> bool {
        let clock = self.clock;
        match self.live_watch(cookie) {
            Some(Ok(id)) => {
                let exp = time::expiration_after(clock, duration);
                self.coord.as_deref_mut().expect("a watch").set_watch_expiration(id, exp);
                true
            }
            _ => false,
        }
    }

    /// Replays a cancel of a watch's lease.
    pub(super) fn replay_cancel_watch(&mut self, cookie: Cookie) -> bool {
        match self.live_watch(cookie) {
            Some(Ok(id)) => {
                self.coord.as_deref_mut().expect("a watch").remove_watch(id);
                true
            }
            _ => false,
        }
    }

    /// The events of the watch whose lease is `cookie` after number `since` (at most `max`; 0
    /// for as many as a message holds).
    ///
    /// If some of the events after `since` are no longer kept (the watch keeps the last
    /// [`crate::coord::CoordConfig::history`]), the answer has no events: it says which numbers
    /// the watcher missed ([`Events::missed`]: from `since + 1` to the last issued) and gives
    /// the selected exclusive resources' holders now ([`Events::current`]), the state after the
    /// last event; the watcher goes on from there.
    pub fn poll_events(
        &mut self,
        cookie: Cookie,
        since: u64,
        max: usize,
        now: Millis,
    ) -> Result<Events> {
        match self.poll_request(cookie, since, max, 0, 0, now)? {
            Ok(e) => Ok(e),
            Err(_) => unreachable!("a poll without a wait is answered at once"),
        }
    }

    /// A poll that waits up to `wait` ms for an event if there is none: the events now, or a
    /// ticket.
    pub(super) fn poll_request(
        &mut self,
        cookie: Cookie,
        since: u64,
        max: usize,
        wait: Duration,
        id: u64,
        now: Millis,
    ) -> Result<std::result::Result<Events, Ticket>> {
        let clock = self.tick(now);
        if wait < 0 {
            return Err(LeaseError::InvalidArgument(format!("wait {wait} ms is negative")));
        }
        self.coord_mut()?;
        let event_id = self.live_watch(cookie).ok_or(LeaseError::UnknownLease)??;
        let max = if max == 0 {
            self.config.limits.max_batch
        } else {
            max.min(self.config.limits.max_batch)
        };
        let events = self.events_of(event_id, since, max)?;
        if events.events.is_empty() && events.missed.is_none() && wait > 0 {
            let c = self.coord_mut()?;
            if c.waits.len() < c.config.max_waiters {
                let deadline = time::expiration_after(clock, wait);
                return Ok(Err(c.hold(Wait::Poll { id, event_id, since, max, deadline })));
            }
        }
        Ok(Ok(events))
    }

    /// A watch's events after `since`.
    pub(super) fn events_of(&self, event_id: EventId, since: u64, max: usize) -> Result<Events> {
        let c = self.coord.as_deref().ok_or(LeaseError::UnknownLease)?;
        let w = c.watches.get(&event_id).ok_or(LeaseError::UnknownLease)?;
        if since > w.sequence {
            return Err(LeaseError::InvalidArgument(format!(
                "since {since} is past the last event of watch {event_id} ({}): it never issued \
                 that number",
                w.sequence
            )));
        }
        let first = w.events.front().map_or(w.sequence.saturating_add(1), |e| e.sequence);
        if since.saturating_add(1) < first {
            // Some events are gone: the watcher resynchronises from the holders now, which is
            // the state after the last event, and goes on from there.
            return Ok(Events {
                event_id,
                handback: w.handback.clone(),
                last: w.sequence,
                missed: Some(Missed { from: since + 1, to: w.sequence }),
                current: Some(self.holders(&w.selector)),
                events: Vec::new(),
            });
        }
        let budget = self.config.limits.max_message_bytes / 2;
        let mut bytes = 0usize;
        let mut events = Vec::new();
        for e in w.events.iter().filter(|e| e.sequence > since) {
            let size = 96 + 2 * (e.resource.len() + e.holder.len());
            if events.len() >= max || (!events.is_empty() && bytes + size > budget) {
                break;
            }
            bytes += size;
            events.push(e.clone());
        }
        Ok(Events {
            event_id,
            handback: w.handback.clone(),
            last: w.sequence,
            missed: None,
            current: None,
            events,
        })
    }

    /// A watch's events after `since` as a reply (an error if the watch is gone).
    pub(super) fn events_reply(
        &self,
        id: u64,
        event_id: EventId,
        since: u64,
        max: usize,
    ) -> CoordReply {
        let landlord = self.config.id;
        let body = match self.events_of(event_id, since, max) {
            Ok(e) => CoordReplyBody::Events(e),
            Err(e) => CoordReplyBody::Error((&e).into()),
        };
        CoordReply { id, landlord, body }
    }
}
