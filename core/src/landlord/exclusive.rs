//! Exclusive resources and pools: acquire (now, or held waiting, first come first served),
//! the denial with the time the resource is free at the latest, serving waiters when a
//! resource is let go, and the list of holders.

use std::ops::Bound;

use super::coord::Wait;
use super::{limit, Landlord, LeaseError, Result, NIL};
use crate::coord::wire::CoordReplyBody;
use crate::coord::{show, Acquire, Acquired, Holder, Selector, Ticket};
use crate::policy::PolicyContext;
use crate::time::{self, Duration, Millis, FOREVER};

impl<R> Landlord<R> {
    /// Grants a lease on `resource` with a fencing token, or on a free member if `resource`
    /// names a pool.
    ///
    /// If the resource is exclusive and held (or every member of the pool is), the request is
    /// denied with how long the holder's lease has left (`wait` 0), or held for up to `wait` ms:
    /// [`Acquire::Waiting`], answered through [`Landlord::poll_deferred`] when the resource is
    /// let go (first come, first served) or when the wait runs out (denied). `holder` is a label
    /// watchers see with the lease's events (empty for none).
    pub fn acquire(
        &mut self,
        resource: R,
        requested: Duration,
        wait: Duration,
        holder: Vec<u8>,
        now: Millis,
    ) -> Result<Acquire> {
        self.acquire_request(resource, requested, wait, holder, 0, now)
    }

    pub(super) fn acquire_request(
        &mut self,
        resource: R,
        requested: Duration,
        wait: Duration,
        holder: Vec<u8>,
        id: u64,
        now: Millis,
    ) -> Result<Acquire> {
        let clock = self.tick(now);
        time::check_requested(requested)?;
        if wait < 0 {
            return Err(LeaseError::InvalidArgument(format!("wait {wait} ms is negative")));
        }
        let max = self.config.limits.max_resource_bytes;
        if holder.len() > max {
            return Err(LeaseError::InvalidArgument(format!(
                "holder label of {} bytes, more than the {max} allowed",
                holder.len()
            )));
        }
        let c = self.coord_mut()?;
        let target = c.key_of(&resource);
        if let Some(&p) = c.pool_index.get(target.as_slice()) {
            let member = c.config.pools[p]
                .members
                .iter()
                .find(|m| !c.held.contains_key(m.as_slice()))
                .cloned();
            let make = c.make;
            return match member {
                Some(m) => {
                    let r = make(&m)?;
                    self.grant_acquired(r, &m, requested, holder, clock).map(Acquire::Granted)
                }
                None => self.wait_or_deny(target, requested, wait, holder, id),
            };
        }
        if c.is_exclusive(&target) && c.held.contains_key(target.as_slice()) {
            // A holder past its deadline that no sweep has taken yet: sweep first (waiters
            // queued before this request are served first).
            if self.held_only_by_gone(&target) {
                self.handle_timeout(now);
            }
            let c = self.coord_mut()?;
            if c.held.contains_key(target.as_slice()) {
                return self.wait_or_deny(target, requested, wait, holder, id);
            }
        }
        let a = self.grant_acquired(resource, &target, requested, holder, self.clock);
        if let Some(c) = self.coord.as_deref_mut() {
            c.give_back(target);
        }
        a.map(Acquire::Granted)
    }

    /// Whether every lease holding `key` is past its deadline.
    fn held_only_by_gone(&self, key: &[u8]) -> bool {
        let Some(c) = self.coord.as_deref() else { return false };
        c.held.get(key).is_some_and(|hs| {
            hs.iter().all(|&cookie| {
                self.slot_of(cookie)
                    .map_or(true, |i| !self.honoured(self.slots[i as usize].expiration, self.clock))
            })
        })
    }

    fn wait_or_deny(
        &mut self,
        target: Vec<u8>,
        requested: Duration,
        wait: Duration,
        holder: Vec<u8>,
        id: u64,
    ) -> Result<Acquire> {
        if wait == 0 {
            return Err(LeaseError::LeaseDenied(self.busy(&target)));
        }
        let clock = self.clock;
        let c = self.coord_mut()?;
        if c.waits.len() >= c.config.max_waiters {
            return Err(LeaseError::LeaseDenied(format!(
                "{} requests are waiting already, the most this landlord holds: {}",
                c.waits.len(),
                self.busy(&target)
            )));
        }
        let deadline = time::expiration_after(clock, wait);
        let t = c.hold(Wait::Acquire {
            id,
            target,
            duration: requested,
            holder,
            arrived: clock,
            deadline,
        });
        Ok(Acquire::Waiting(t))
    }

    /// Grants `resource` (whose bytes are `key`) now, with its label; `arrived` is when the
    /// request came (for [`Acquired::waited`]).
    fn grant_acquired(
        &mut self,
        resource: R,
        key: &[u8],
        requested: Duration,
        holder: Vec<u8>,
        arrived: Millis,
    ) -> Result<Acquired> {
        if self.free == NIL && self.slots.len() >= NIL as usize {
            return Err(LeaseError::LeaseDenied(format!(
                "landlord full: {} leases held",
                self.slots.len()
            )));
        }
        let ctx = PolicyContext { now: self.clock, live: self.live };
        let duration = limit(requested, self.policy.grant(requested, &ctx)?);
        if !holder.is_empty() {
            let clock = self.clock;
            if let Some(j) = self.journal.as_deref_mut() {
                j.coord_record(super::coord::HOLDER, clock, |b| b.extend_from_slice(&holder));
            }
            self.coord_mut()?.next_holder = Some(holder);
        }
        let (cookie, _) = self.place(resource, duration);
        let token = self.coord.as_deref().and_then(|c| c.info.get(&cookie)).map_or(0, |i| i.token);
        Ok(Acquired {
            cookie,
            duration,
            token,
            resource: key.to_vec(),
            waited: self.clock.saturating_sub(arrived).max(0),
        })
    }

    /// Why a request for `target` (a resource or a pool) cannot be granted now: who holds it
    /// and when it is free at the latest.
    pub(super) fn busy(&self, target: &[u8]) -> String {
        let Some(c) = self.coord.as_deref() else { return String::new() };
        let left = |key: &[u8]| -> Option<Duration> {
            let hs = c.held.get(key)?;
            let mut most: Duration = 0;
            for &cookie in hs {
                let exp = self.slot_of(cookie).map(|i| self.slots[i as usize].expiration)?;
                if exp == FOREVER {
                    return Some(FOREVER);
                }
                most = most.max(self.deadline(exp).saturating_sub(self.clock).max(0));
            }
            Some(most)
        };
        let when = |d: Option<Duration>| match d {
            Some(FOREVER) => "held until its holder cancels".to_string(),
            Some(d) => format!("free in at most {d} ms (unless its holder renews)"),
            None => "free now".to_string(),
        };
        match c.pool_index.get(target) {
            Some(&p) => {
                let first = c.config.pools[p].members.iter().filter_map(|m| left(m)).min();
                format!("every member of pool {} is held: the first {}", show(target), when(first))
            }
            None => format!("{} is held by another lease: {}", show(target), when(left(target))),
        }
    }

    /// Refuses a plain grant of a held exclusive resource or of a pool's name.
    pub(super) fn coord_check_grant(&mut self, resource: &R) -> Result<()> {
        let Some(c) = self.coord.as_deref_mut() else { return Ok(()) };
        if c.held.is_empty() && c.pool_index.is_empty() {
            return Ok(());
        }
        let k = c.key_of(resource);
        let result = if c.pool_index.contains_key(k.as_slice()) {
            Err(LeaseError::InvalidArgument(format!(
                "{} is a pool: acquire it (the answer names the member granted)",
                show(&k)
            )))
        } else if c.held.contains_key(k.as_slice()) {
            Err(LeaseError::LeaseDenied(self.busy(&k)))
        } else {
            Ok(())
        };
        if let Some(c) = self.coord.as_deref_mut() {
            c.give_back(k);
        }
        result
    }

    /// Grants resources let go to the requests waiting for them, oldest first.
    pub(super) fn serve_freed(&mut self) {
        loop {
            let Some(c) = self.coord.as_deref_mut() else { return };
            let Some(key) = c.freed.pop_front() else { return };
            loop {
                let c = self.coord.as_deref_mut().expect("coordination");
                if c.held.contains_key(key.as_slice()) {
                    break;
                }
                let head = |q: Option<&std::collections::VecDeque<u64>>| {
                    q.and_then(|q| q.front().copied())
                };
                let direct = head(c.queues.get(key.as_slice()));
                let pooled = c
                    .member_pool
                    .get(key.as_slice())
                    .and_then(|&p| head(c.queues.get(c.config.pools[p].name.as_slice())));
                let t = match (direct, pooled) {
                    (Some(a), Some(b)) => a.min(b),
                    (a, b) => match a.or(b) {
                        Some(t) => t,
                        None => break,
                    },
                };
                let Some(Wait::Acquire { id, duration, holder, arrived, .. }) = c.unhold(t) else {
                    continue;
                };
                let make = c.make;
                let granted = make(&key)
                    .and_then(|r| self.grant_acquired(r, &key, duration, holder, arrived));
                let c = self.coord.as_deref_mut().expect("coordination");
                let reply = match granted {
                    Ok(a) => c.reply(
                        id,
                        CoordReplyBody::Acquired {
                            cookie: a.cookie,
                            duration: a.duration,
                            token: a.token,
                            resource: a.resource,
                            waited: a.waited,
                        },
                    ),
                    Err(e) => c.error_reply(id, &e),
                };
                c.ready.push_back((Ticket(t), reply));
            }
        }
    }

    /// The holders of the exclusive resources `selector` selects, in resource order (at most
    /// the batch limit): token, label, time left.
    pub fn holders(&self, selector: &Selector) -> Vec<Holder> {
        let Some(c) = self.coord.as_deref() else { return Vec::new() };
        let max = self.config.limits.max_batch;
        let mut out = Vec::new();
        let add = |out: &mut Vec<Holder>, key: &[u8], cookies: &[crate::lease::Cookie]| {
            for &cookie in cookies {
                let Some(i) = self.slot_of(cookie) else { continue };
                let info = c.info.get(&cookie);
                out.push(Holder {
                    resource: key.to_vec(),
                    token: info.map_or(0, |i| i.token),
                    holder: info.map_or_else(Vec::new, |i| i.holder.clone()),
                    remaining: time::remaining(self.slots[i as usize].expiration, self.clock),
                });
            }
        };
        if selector.prefix {
            let start = Bound::Included(selector.resource.as_slice());
            for (k, hs) in c.held.range::<[u8], _>((start, Bound::Unbounded)) {
                if !k.starts_with(&selector.resource) || out.len() >= max {
                    break;
                }
                add(&mut out, k, hs);
            }
        } else if let Some(hs) = c.held.get(selector.resource.as_slice()) {
            add(&mut out, &selector.resource, hs);
        }
        out.truncate(max);
        out
    }
}
