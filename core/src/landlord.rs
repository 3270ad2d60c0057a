//! The grantor side: a landlord issues leases on resources, keyed by unguessable cookies.
//!
//! Sans-I/O: every call takes `now`; expiry is driven by the host with
//! [`Landlord::poll_timeout`], [`Landlord::handle_timeout`] and [`Landlord::poll_expired`].
//!
//! ```
//! use leasehold::{Landlord, LandlordConfig, LandlordId, policy::Bounded};
//! let mut ll: Landlord<&str> = Landlord::new(
//!     LandlordConfig::new(LandlordId(1), [7; 32]),
//!     Bounded::new(60_000, 30_000).unwrap(),
//! );
//! let g = ll.grant("printer", 10_000, 0).unwrap();
//! assert_eq!(g.duration, 10_000);
//! ll.handle_timeout(10_001);
//! assert_eq!(ll.poll_expired().unwrap().resource, "printer");
//! ```
//!
//! # How it scales
//!
//! Leases live in a slab (a `Vec` of compact slots) indexed by the low 32 bits of the cookie;
//! the other 96 bits are drawn from the seeded ChaCha generator, so a cookie cannot be guessed
//! and the cookie of a slot's earlier occupant does not match its new one. Deadlines are filed in
//! a hierarchical timing wheel (64 lists per level, 11 levels over the whole time range) whose
//! lists run through the slots themselves, so:
//!
//! - grant, renew, cancel and lookup are O(1), with no hashing; a renewal that extends a lease
//!   (the common case) only rewrites the slot, and the wheel re-files the lease when its old
//!   deadline comes up;
//! - expiry costs grow with the leases that expire (and the wheel levels they cascade through),
//!   never with the number of leases held;
//! - one [`Landlord::handle_timeout`] call does at most [`LandlordConfig::expiry_budget`] units
//!   of work (a lease expired or moved between levels), so a million simultaneous expiries are
//!   handed out over several calls, with [`Landlord::poll_timeout`] asking to be called again
//!   at once while work remains;
//! - [`FOREVER`] leases never enter the wheel.
//!
//! # Snapshots
//!
//! [`Landlord::snapshot`] and [`Landlord::restore`] carry every lease with its *remaining* time:
//! a lease with 10 s left when the snapshot was taken has 10 s left after the restore, whatever
//! the clock says then (the holders could not reach the landlord while it was down, so they keep
//! their time; and the host's clock may restart from zero). To keep absolute expirations instead,
//! restore with `now` equal to [`LandlordSnapshot::taken_at`] and then call
//! [`Landlord::handle_timeout`] with the real time.

mod wheel;

use std::collections::{HashSet, VecDeque};

use rand_chacha::ChaCha12Rng;
use rand_core::{RngCore, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::error::{LeaseError, Result};
use crate::lease::{Cookie, LandlordId, Lease};
use crate::policy::{LeasePolicy, PolicyContext};
use crate::time::{self, Duration, Millis, ANY, FOREVER};
use crate::wire::{Encoding, Limits, Outcome, Reply, ReplyBody, Request, RequestBody, WireError};

use wheel::{key_of, time_of, Links, Node, Wheel, LIST_EARLY, LIST_FREE, LIST_NONE, NIL};

/// How a landlord is set up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LandlordConfig {
    /// This landlord's id, carried by every lease it grants.
    pub id: LandlordId,
    /// Secret seed for cookies; supply real entropy (the core has none of its own).
    pub seed: [u8; 32],
    /// Slack after expiry during which a lease is still honoured (clock skew, seed 001).
    /// A negative value counts as zero.
    pub grace: Duration,
    /// Most units of expiry work per [`Landlord::handle_timeout`] call: each lease expired, or
    /// moved from one timing-wheel level to a lower one, counts one. So it also bounds the
    /// expired leases handed out per call. Zero counts as one.
    pub expiry_budget: usize,
    /// Bounds for decoding requests in [`Landlord::handle_bytes`].
    pub limits: Limits,
}

impl LandlordConfig {
    /// Defaults: no grace, 10 000 expiries per call, default limits.
    pub fn new(id: LandlordId, seed: [u8; 32]) -> LandlordConfig {
        LandlordConfig { id, seed, grace: 0, expiry_budget: 10_000, limits: Limits::default() }
    }
    /// With a grace period after expiry.
    pub fn with_grace(mut self, grace: Duration) -> LandlordConfig {
        self.grace = grace.max(0);
        self
    }
    /// With another per-call expiry budget (see [`LandlordConfig::expiry_budget`]).
    pub fn with_expiry_budget(mut self, budget: usize) -> LandlordConfig {
        self.expiry_budget = budget;
        self
    }
}

/// A granted lease, as the landlord answers a grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    /// The new lease's cookie.
    pub cookie: Cookie,
    /// Granted duration.
    pub duration: Duration,
    /// Expiration on the landlord's clock.
    pub expiration: Millis,
}

/// A lease that expired, handed back with its resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expired<R> {
    /// The lease.
    pub cookie: Cookie,
    /// When it expired (before grace).
    pub expiration: Millis,
    /// What it was for.
    pub resource: R,
}

/// One slab slot: 32 bytes plus the resource. The cookie is split (`hi`, `mid`, slot index) so
/// that no field needs 16-byte alignment.
struct Slot<R> {
    /// Cookie bits 64..128.
    hi: u64,
    /// Expiration on the landlord's clock ([`FOREVER`] for never).
    expiration: Millis,
    /// Cookie bits 32..64.
    mid: u32,
    /// Wheel list links (see [`Links`]); `next` also chains the free list.
    prev: u32,
    next: u32,
    list: u16,
    /// `None` exactly when the slot is free.
    resource: Option<R>,
}

impl<R> Node for Slot<R> {
    #[inline]
    fn links(&self) -> Links {
        Links { prev: self.prev, next: self.next, list: self.list }
    }
    #[inline]
    fn set_links(&mut self, l: Links) {
        (self.prev, self.next, self.list) = (l.prev, l.next, l.list);
    }
    #[inline]
    fn set_prev(&mut self, prev: u32) {
        self.prev = prev;
    }
    #[inline]
    fn set_next(&mut self, next: u32) {
        self.next = next;
    }
}

#[inline]
fn cookie_of(hi: u64, mid: u32, idx: u32) -> Cookie {
    Cookie((hi as u128) << 64 | (mid as u128) << 32 | idx as u128)
}

#[inline]
fn split(cookie: Cookie) -> (u64, u32, u32) {
    ((cookie.0 >> 64) as u64, (cookie.0 >> 32) as u32, cookie.0 as u32)
}

/// Issues, renews, cancels and expires leases. `R` is what a lease is for.
pub struct Landlord<R = Vec<u8>> {
    config: LandlordConfig,
    policy: Box<dyn LeasePolicy>,
    rng: ChaCha12Rng,
    slots: Vec<Slot<R>>,
    free: u32,
    live: usize,
    wheel: Wheel,
    expired: VecDeque<Expired<R>>,
}

/// Version of [`LandlordSnapshot`] written by this build (and the only one it reads).
pub const SNAPSHOT_VERSION: u32 = 1;

/// The position of the cookie generator in a [`LandlordSnapshot`] (its key is the config's seed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RngState {
    /// ChaCha stream number.
    pub stream: u64,
    /// ChaCha word position, as a decimal string (it may exceed 64 bits).
    pub word_pos: String128,
}

/// A `u128` written as a decimal string, so that JSON readers without big integers keep it exact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct String128(pub u128);

impl Serialize for String128 {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for String128 {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        if s.is_empty() || s.len() > 39 || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(serde::de::Error::custom("expected a decimal u128 string"));
        }
        s.parse().map(String128).map_err(serde::de::Error::custom)
    }
}

/// One lease in a [`LandlordSnapshot`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SnapshotLease<R> {
    /// The lease's cookie (its low 32 bits are its slot).
    pub cookie: Cookie,
    /// Time left when the snapshot was taken: [`FOREVER`] for a perpetual lease, negative for
    /// a lease past its expiration (in grace, or not yet swept; for an expired lease, how long
    /// ago it expired).
    pub remaining: Duration,
    /// What it is for.
    pub resource: R,
}

/// Everything a landlord holds, to restart it without losing a lease
/// ([`Landlord::snapshot`], [`Landlord::restore`]).
///
/// It contains the cookie secret (the seed and the generator's position): store it like a key.
/// Serializes with serde (JSON via `serde_json` works).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LandlordSnapshot<R> {
    /// Format version, [`SNAPSHOT_VERSION`].
    pub version: u32,
    /// The landlord's configuration (with its seed).
    pub config: LandlordConfig,
    /// The landlord's `now` when the snapshot was taken.
    pub taken_at: Millis,
    /// Where the cookie generator was.
    pub rng: RngState,
    /// Slab length: every cookie's slot index is below it.
    pub slots: u32,
    /// Free slots, the next one to reuse first.
    pub free: Vec<u32>,
    /// The leases held (including any not yet swept after expiry).
    pub leases: Vec<SnapshotLease<R>>,
    /// Expired leases swept but not yet handed out by [`Landlord::poll_expired`], in order.
    pub expired: Vec<SnapshotLease<R>>,
}

fn bad_snapshot(msg: String) -> LeaseError {
    LeaseError::Decode(format!("bad landlord snapshot: {msg}"))
}

/// `now + remaining`, keeping FOREVER exactly FOREVER and a finite lease finite.
fn shift(now: Millis, remaining: Duration) -> Millis {
    if remaining == FOREVER {
        FOREVER
    } else {
        now.saturating_add(remaining).min(FOREVER - 1)
    }
}

impl<R> Landlord<R> {
    /// A landlord with `policy`.
    pub fn new(config: LandlordConfig, policy: impl LeasePolicy + 'static) -> Landlord<R> {
        let rng = ChaCha12Rng::from_seed(config.seed);
        Landlord {
            config,
            policy: Box::new(policy),
            rng,
            slots: Vec::new(),
            free: NIL,
            live: 0,
            wheel: Wheel::new(0),
            expired: VecDeque::new(),
        }
    }

    /// This landlord's id.
    pub fn id(&self) -> LandlordId {
        self.config.id
    }

    /// The configuration.
    pub fn config(&self) -> &LandlordConfig {
        &self.config
    }

    /// Leases held, including any past expiration that no [`Landlord::handle_timeout`] has swept yet.
    pub fn len(&self) -> usize {
        self.live
    }

    /// No leases held.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Expired leases swept by [`Landlord::handle_timeout`] and waiting for [`Landlord::poll_expired`].
    pub fn expired_len(&self) -> usize {
        self.expired.len()
    }

    /// Heap bytes held by this landlord's tables (slab, wheel, expired queue), not counting
    /// what the resources themselves own.
    pub fn heap_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Slot<R>>()
            + self.wheel.heap_bytes()
            + self.expired.capacity() * std::mem::size_of::<Expired<R>>()
    }

    #[inline]
    fn deadline(&self, expiration: Millis) -> Millis {
        time::expiration_after(expiration, self.config.grace.max(0))
    }

    #[inline]
    fn honoured(&self, expiration: Millis, now: Millis) -> bool {
        expiration == FOREVER || now <= self.deadline(expiration)
    }

    /// The wheel key at which a lease expiring at `expiration` is due (its deadline is before
    /// then), or `None` if it never is.
    #[inline]
    fn due_key(&self, expiration: Millis) -> Option<u64> {
        if expiration == FOREVER {
            return None;
        }
        let d = self.deadline(expiration);
        if d == FOREVER {
            None
        } else {
            Some(key_of(d) + 1)
        }
    }

    #[inline]
    fn budget(&self) -> usize {
        self.config.expiry_budget.max(1)
    }

    /// The slot of a lease held (swept or not) under `cookie`.
    #[inline]
    fn slot_of(&self, cookie: Cookie) -> Option<u32> {
        let (hi, mid, idx) = split(cookie);
        let s = self.slots.get(idx as usize)?;
        (s.list != LIST_FREE && s.hi == hi && s.mid == mid).then_some(idx)
    }

    /// The slot of a lease still honoured at `now`.
    #[inline]
    fn live_slot(&self, cookie: Cookie, now: Millis) -> Result<u32> {
        match self.slot_of(cookie) {
            Some(i) if self.honoured(self.slots[i as usize].expiration, now) => Ok(i),
            _ => Err(LeaseError::UnknownLease),
        }
    }

    fn file(&mut self, idx: u32, now: Millis) {
        match self.due_key(self.slots[idx as usize].expiration) {
            Some(k) => self.wheel.insert(&mut self.slots, idx, k, key_of(now)),
            None => self.slots[idx as usize].list = LIST_NONE,
        }
    }

    fn unfile(&mut self, idx: u32) {
        let s = &self.slots[idx as usize];
        let key = if s.list == LIST_EARLY { self.due_key(s.expiration).unwrap_or(0) } else { 0 };
        self.wheel.remove(&mut self.slots, idx, key);
    }

    /// Frees a slot (already unfiled) and hands back its resource.
    fn release(&mut self, idx: u32) -> R {
        let s = &mut self.slots[idx as usize];
        s.set_links(Links { prev: NIL, next: self.free, list: LIST_FREE });
        self.free = idx;
        self.live -= 1;
        s.resource.take().expect("a live slot holds its resource")
    }

    /// Grants a lease on `resource` for (at most) `requested` ms.
    pub fn grant(&mut self, resource: R, requested: Duration, now: Millis) -> Result<Grant> {
        time::check_requested(requested)?;
        if self.free == NIL && self.slots.len() >= NIL as usize {
            return Err(LeaseError::LeaseDenied(format!(
                "landlord full: {} leases held",
                self.slots.len()
            )));
        }
        let ctx = PolicyContext { now, live: self.live };
        let duration = limit(requested, self.policy.grant(requested, &ctx)?);
        let expiration = time::expiration_after(now, duration);
        let idx = if self.free != NIL {
            let idx = self.free;
            let (old_hi, old_mid) = {
                let s = &self.slots[idx as usize];
                (s.hi, s.mid)
            };
            let (hi, mid) = self.new_tag(old_hi, old_mid);
            let s = &mut self.slots[idx as usize];
            self.free = s.next;
            s.hi = hi;
            s.mid = mid;
            s.expiration = expiration;
            s.set_links(Links { prev: NIL, next: NIL, list: LIST_NONE });
            s.resource = Some(resource);
            idx
        } else {
            let (hi, mid) = self.new_tag(0, 0);
            let idx = self.slots.len() as u32;
            self.slots.push(Slot {
                hi,
                expiration,
                mid,
                prev: NIL,
                next: NIL,
                list: LIST_NONE,
                resource: Some(resource),
            });
            idx
        };
        self.live += 1;
        self.file(idx, now);
        let s = &self.slots[idx as usize];
        Ok(Grant { cookie: cookie_of(s.hi, s.mid, idx), duration, expiration })
    }

    /// 96 fresh random cookie bits, never all zero and never the slot's previous ones.
    fn new_tag(&mut self, old_hi: u64, old_mid: u32) -> (u64, u32) {
        loop {
            let hi = self.rng.next_u64();
            let mid = self.rng.next_u32();
            if (hi, mid) != (0, 0) && (hi, mid) != (old_hi, old_mid) {
                return (hi, mid);
            }
        }
    }

    /// Renews a lease for (at most) `requested` ms from `now`; returns the granted duration.
    /// A denied renewal leaves the lease as it was.
    pub fn renew(&mut self, cookie: Cookie, requested: Duration, now: Millis) -> Result<Duration> {
        time::check_requested(requested)?;
        let idx = self.live_slot(cookie, now)?;
        let old = self.slots[idx as usize].expiration;
        let ctx = PolicyContext { now, live: self.live };
        let duration = limit(requested, self.policy.renew(requested, old, &ctx)?);
        let expiration = time::expiration_after(now, duration);
        let list = self.slots[idx as usize].list;
        let lazy = list < LIST_EARLY
            && match (self.due_key(old), self.due_key(expiration)) {
                (Some(o), Some(n)) => n >= o,
                _ => false,
            };
        if lazy {
            // Extended: the wheel re-files the lease when its old deadline comes up.
            self.slots[idx as usize].expiration = expiration;
        } else {
            self.unfile(idx);
            self.slots[idx as usize].expiration = expiration;
            self.file(idx, now);
        }
        Ok(duration)
    }

    /// Cancels a lease and hands back its resource.
    pub fn cancel(&mut self, cookie: Cookie, now: Millis) -> Result<R> {
        let idx = self.live_slot(cookie, now)?;
        self.unfile(idx);
        Ok(self.release(idx))
    }

    /// Renews many leases; one result per lease, in order. One failure never aborts the batch.
    pub fn renew_all(
        &mut self,
        items: &[(Cookie, Duration)],
        now: Millis,
    ) -> Vec<Result<Duration>> {
        self.warm(items.iter().map(|&(c, _)| c));
        items.iter().map(|&(c, d)| self.renew(c, d, now)).collect()
    }

    /// Loads the slots a batch names, in a tight loop with no work between the loads, so the CPU
    /// overlaps their cache misses instead of taking them one at a time inside each operation.
    /// Pure performance: it reads, changes nothing, and answers nothing.
    fn warm(&self, cookies: impl Iterator<Item = Cookie>) {
        let mut acc = 0u64;
        for c in cookies {
            if let Some(s) = self.slots.get(c.0 as u32 as usize) {
                acc ^= s.hi;
            }
        }
        std::hint::black_box(acc);
    }

    /// Cancels many leases; one result per lease, in order.
    pub fn cancel_all(&mut self, cookies: &[Cookie], now: Millis) -> Vec<Result<R>> {
        self.warm(cookies.iter().copied());
        cookies.iter().map(|&c| self.cancel(c, now)).collect()
    }

    /// The expiration and resource of a lease still honoured at `now`.
    pub fn get(&self, cookie: Cookie, now: Millis) -> Option<(Millis, &R)> {
        let idx = self.live_slot(cookie, now).ok()?;
        let s = &self.slots[idx as usize];
        s.resource.as_ref().map(|r| (s.expiration, r))
    }

    /// The holder's view of a lease still honoured at `now` (expiration on the landlord's clock).
    pub fn lease(&self, cookie: Cookie, now: Millis) -> Option<Lease> {
        self.get(cookie, now).map(|(exp, _)| Lease::new(self.config.id, cookie, exp))
    }

    /// Every lease held: cookie, expiration, resource (in slot order). Includes leases past
    /// expiration that no [`Landlord::handle_timeout`] has swept yet.
    pub fn iter(&self) -> impl Iterator<Item = (Cookie, Millis, &R)> + '_ {
        self.slots.iter().enumerate().filter_map(|(i, s)| {
            s.resource.as_ref().map(|r| (cookie_of(s.hi, s.mid, i as u32), s.expiration, r))
        })
    }

    /// When the host should next call [`Landlord::handle_timeout`]; `None` if nothing will expire.
    ///
    /// Never later than the next expiry (it may be earlier: the wheel then refines its view
    /// and asks again). While expiry work is left over from a call that ran out of budget, it
    /// is at most that call's `now`: call again at once.
    pub fn poll_timeout(&self) -> Option<Millis> {
        self.wheel.next_key().map(time_of)
    }

    /// Advances expiry to `now`: leases whose expiration plus grace is before `now` are removed
    /// and queued for [`Landlord::poll_expired`]. At most [`LandlordConfig::expiry_budget`]
    /// units of work per call; [`Landlord::poll_timeout`] tells whether more is waiting.
    pub fn handle_timeout(&mut self, now: Millis) {
        let t = key_of(now);
        let mut budget = self.budget();
        // 1. Finish a cascade that an earlier call left half done.
        if let Some(list) = self.wheel.cascading() {
            loop {
                if budget == 0 {
                    return;
                }
                match self.wheel.pop(&mut self.slots, list) {
                    Some(idx) => {
                        budget -= 1;
                        self.expire_or_refile(idx, t, now);
                    }
                    None => {
                        self.wheel.end_cascade();
                        break;
                    }
                }
            }
        }
        // 2. Leases filed while the host's clock was behind the wheel.
        loop {
            if budget == 0 {
                return;
            }
            match self.wheel.pop_early(t) {
                Some((_, idx)) => {
                    budget -= 1;
                    self.expire(idx);
                }
                None => break,
            }
        }
        // 3. The wheel, earliest list first.
        while let Some(due) = self.wheel.earliest() {
            if due.start > t {
                break;
            }
            if due.end > t {
                // Only partly due: move its leases down a level (or out, if due).
                self.wheel.begin_cascade(due);
            }
            loop {
                if budget == 0 {
                    return;
                }
                match self.wheel.pop(&mut self.slots, due.list) {
                    Some(idx) => {
                        budget -= 1;
                        self.expire_or_refile(idx, t, now);
                    }
                    None => break,
                }
            }
            self.wheel.end_cascade();
        }
        self.wheel.advance(t);
    }

    /// A lease taken off a wheel list: expires it if due at `t`, else files it again (it was
    /// extended, or is being cascaded).
    #[inline]
    fn expire_or_refile(&mut self, idx: u32, t: u64, now: Millis) {
        match self.due_key(self.slots[idx as usize].expiration) {
            Some(k) if k <= t => self.expire(idx),
            Some(k) => self.wheel.insert(&mut self.slots, idx, k, key_of(now)),
            None => self.slots[idx as usize].list = LIST_NONE,
        }
    }

    /// Moves a lease (already unfiled) to the expired queue.
    #[inline]
    fn expire(&mut self, idx: u32) {
        let (hi, mid, expiration) = {
            let s = &self.slots[idx as usize];
            (s.hi, s.mid, s.expiration)
        };
        let resource = self.release(idx);
        self.expired.push_back(Expired { cookie: cookie_of(hi, mid, idx), expiration, resource });
    }

    /// The next expired lease found by [`Landlord::handle_timeout`].
    pub fn poll_expired(&mut self) -> Option<Expired<R>> {
        self.expired.pop_front()
    }
}

/// The duration actually granted for `requested` when the policy offered `offered`: never more
/// than asked (ANY takes the offer), never negative.
#[inline]
fn limit(requested: Duration, offered: Duration) -> Duration {
    let d = if requested == ANY { offered } else { offered.min(requested) };
    d.max(0)
}

impl<R: Clone> Landlord<R> {
    /// Everything this landlord holds, with each lease's time left at `now`.
    ///
    /// Leases past expiration that no [`Landlord::handle_timeout`] swept yet are kept (with a
    /// negative remaining time), as are expired leases not yet taken by
    /// [`Landlord::poll_expired`], so that the restored landlord still hands them out.
    pub fn snapshot(&self, now: Millis) -> LandlordSnapshot<R> {
        let mut free = Vec::new();
        let mut f = self.free;
        while f != NIL {
            free.push(f);
            f = self.slots[f as usize].next;
        }
        let leases = self
            .iter()
            .map(|(cookie, exp, r)| SnapshotLease {
                cookie,
                remaining: time::remaining(exp, now),
                resource: r.clone(),
            })
            .collect();
        let expired = self
            .expired
            .iter()
            .map(|e| SnapshotLease {
                cookie: e.cookie,
                remaining: time::remaining(e.expiration, now),
                resource: e.resource.clone(),
            })
            .collect();
        LandlordSnapshot {
            version: SNAPSHOT_VERSION,
            config: self.config.clone(),
            taken_at: now,
            rng: RngState {
                stream: self.rng.get_stream(),
                word_pos: String128(self.rng.get_word_pos()),
            },
            slots: self.slots.len() as u32,
            free,
            leases,
            expired,
        }
    }
}

impl<R> Landlord<R> {
    /// Rebuilds a landlord from a [`LandlordSnapshot`] at `now`, with `policy` (policies are
    /// code, not data, so the host supplies it again).
    ///
    /// Every lease keeps its cookie and the time it had left when the snapshot was taken,
    /// counted from `now`; the cookie generator continues where it was, so no cookie is ever
    /// issued twice. A snapshot of another version, or one that is inconsistent (a cookie twice,
    /// two leases in one slot, a slot both free and held, a slot outside the table) is a
    /// [`LeaseError::Decode`] error.
    pub fn restore(
        snapshot: LandlordSnapshot<R>,
        policy: impl LeasePolicy + 'static,
        now: Millis,
    ) -> Result<Landlord<R>> {
        let LandlordSnapshot { version, config, taken_at: _, rng, slots, free, leases, expired } =
            snapshot;
        if version != SNAPSHOT_VERSION {
            return Err(bad_snapshot(format!(
                "version {version}, this build reads version {SNAPSHOT_VERSION}"
            )));
        }
        if slots == NIL {
            return Err(bad_snapshot(format!("{slots} slots is more than a landlord holds")));
        }
        let n = slots as usize;
        if leases.len() + free.len() != n {
            return Err(bad_snapshot(format!(
                "{} leases and {} free slots do not make up {n} slots",
                leases.len(),
                free.len()
            )));
        }
        let mut rng_state = ChaCha12Rng::from_seed(config.seed);
        rng_state.set_stream(rng.stream);
        rng_state.set_word_pos(rng.word_pos.0);
        let mut ll = Landlord {
            config,
            policy: Box::new(policy) as Box<dyn LeasePolicy>,
            rng: rng_state,
            slots: Vec::with_capacity(n),
            free: NIL,
            live: 0,
            wheel: Wheel::new(0),
            expired: VecDeque::with_capacity(expired.len()),
        };
        ll.slots.extend((0..n).map(|_| Slot {
            hi: 0,
            expiration: 0,
            mid: 0,
            prev: NIL,
            next: NIL,
            list: LIST_FREE,
            resource: None,
        }));
        // Lowest due key first, so the wheel starts behind every lease.
        let mut min_key = key_of(now);
        for l in leases {
            let (hi, mid, idx) = split(l.cookie);
            if (hi, mid) == (0, 0) {
                return Err(bad_snapshot(format!("cookie {} has no random part", l.cookie)));
            }
            let s = ll.slots.get_mut(idx as usize).ok_or_else(|| {
                bad_snapshot(format!("cookie {} names slot {idx} of {n}", l.cookie))
            })?;
            if s.resource.is_some() {
                return Err(bad_snapshot(format!(
                    "cookie {} and {} share slot {idx} (a duplicate cookie?)",
                    cookie_of(s.hi, s.mid, idx),
                    l.cookie
                )));
            }
            let expiration = shift(now, l.remaining);
            *s = Slot {
                hi,
                expiration,
                mid,
                prev: NIL,
                next: NIL,
                list: LIST_NONE,
                resource: Some(l.resource),
            };
            ll.live += 1;
            if let Some(k) = ll.due_key(expiration) {
                min_key = min_key.min(k - 1);
            }
        }
        let mut seen = HashSet::with_capacity(free.len());
        for &f in &free {
            match ll.slots.get(f as usize) {
                None => return Err(bad_snapshot(format!("free slot {f} of {n}"))),
                Some(s) if s.resource.is_some() => {
                    return Err(bad_snapshot(format!("slot {f} is both free and held")))
                }
                Some(_) if !seen.insert(f) => {
                    return Err(bad_snapshot(format!("slot {f} is free twice")))
                }
                Some(_) => {}
            }
        }
        for &f in free.iter().rev() {
            ll.slots[f as usize].next = ll.free;
            ll.free = f;
        }
        ll.wheel = Wheel::new(min_key);
        for idx in 0..slots {
            if ll.slots[idx as usize].resource.is_some() {
                ll.file(idx, time_of(min_key));
            }
        }
        let mut cookies = HashSet::with_capacity(expired.len());
        for e in expired {
            if !cookies.insert(e.cookie) {
                return Err(bad_snapshot(format!("expired cookie {} appears twice", e.cookie)));
            }
            ll.expired.push_back(Expired {
                cookie: e.cookie,
                expiration: shift(now, e.remaining),
                resource: e.resource,
            });
        }
        Ok(ll)
    }
}

impl<R: From<Vec<u8>>> Landlord<R> {
    /// Answers one request message.
    pub fn handle_request(&mut self, request: &Request, now: Millis) -> Reply {
        let body = match &request.body {
            RequestBody::Grant { resource, duration } => {
                match self.grant(R::from(resource.clone()), *duration, now) {
                    Ok(g) => ReplyBody::Granted { cookie: g.cookie, duration: g.duration },
                    Err(e) => ReplyBody::Error(WireError::from(&e)),
                }
            }
            RequestBody::Renew { cookie, duration } => match self.renew(*cookie, *duration, now) {
                Ok(d) => ReplyBody::Renewed { duration: d },
                Err(e) => ReplyBody::Error(WireError::from(&e)),
            },
            RequestBody::Cancel { cookie } => match self.cancel(*cookie, now) {
                Ok(_) => ReplyBody::Cancelled,
                Err(e) => ReplyBody::Error(WireError::from(&e)),
            },
            RequestBody::RenewAll { items } => ReplyBody::RenewedAll {
                results: self.renew_all(items, now).into_iter().map(Outcome::from).collect(),
            },
            RequestBody::CancelAll { cookies } => ReplyBody::CancelledAll {
                results: self
                    .cancel_all(cookies, now)
                    .into_iter()
                    .map(|r| Outcome::from(r.map(|_| ())))
                    .collect(),
            },
        };
        Reply { id: request.id, landlord: self.config.id, body }
    }

    /// Decodes a request, answers it, and encodes the reply in the same encoding. An undecodable
    /// request gets an error reply with id 0.
    pub fn handle_bytes(&mut self, bytes: &[u8], encoding: Encoding, now: Millis) -> Vec<u8> {
        let reply = match Request::decode(bytes, encoding, &self.config.limits) {
            Ok(req) => self.handle_request(&req, now),
            Err(e) => Reply {
                id: 0,
                landlord: self.config.id,
                body: ReplyBody::Error(WireError::from(&e)),
            },
        };
        reply.encode(encoding)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_stay_compact() {
        assert_eq!(std::mem::size_of::<Slot<()>>(), 32);
        assert_eq!(std::mem::size_of::<Slot<u64>>(), 48);
    }
}
