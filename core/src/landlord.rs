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
//! # Time
//!
//! A landlord's time never runs backwards, whatever `now` the host passes: it is the latest
//! `now` seen so far. A host clock that steps back freezes the landlord's time until the clock
//! catches up, so once a landlord has said a lease is gone (expired it, or answered "unknown
//! lease" because it was past its expiration plus grace), the lease stays gone. Every `now` in
//! this module is read that way.
//!
//! # Cookies
//!
//! A cookie is 128 bits: the lease's slot in the table (low 32 bits) and 96 bits drawn from a
//! ChaCha generator keyed by the configured seed, on a stream chosen by the landlord's id. Two
//! landlords with different ids never issue (or honour) each other's cookies, even when a
//! careless host gives both the same seed; a cookie cannot be guessed without the seed.
//!
//! # How it scales
//!
//! Leases live in a slab (a `Vec` of compact slots) indexed by the low 32 bits of the cookie.
//! Deadlines are filed in a hierarchical timing wheel (64 lists per level, 11 levels over the
//! whole time range) whose lists run through the slots themselves, so:
//!
//! - grant, renew, cancel and lookup are O(1), with no hashing; a renewal that extends a lease
//!   (the common case) only rewrites the slot, and the wheel re-files the lease when its old
//!   deadline comes up; a cancel frees the slot but leaves it in its wheel list (unlinking would
//!   touch the list's neighbours), where the wheel drops it when the list comes up or a grant
//!   reusing the slot finds it; so renew and cancel read and write one slot (one cache line);
//! - expiry costs grow with the leases that expire (and the wheel levels they cascade through),
//!   never with the number of leases held;
//! - one [`Landlord::handle_timeout`] call expires at most [`LandlordConfig::expiry_budget`]
//!   leases, so a million simultaneous expiries are handed out over several calls, with
//!   [`Landlord::poll_timeout`] asking to be called again at once while some are left;
//! - [`FOREVER`] leases never enter the wheel.
//!
//! # Exactness
//!
//! What a landlord does depends only on the leases it holds, never on how its internal tables
//! happen to be laid out: leases expire in order of deadline, then slot (whatever order they
//! were filed in), a freed slot is reused last-freed-first, and cookies come from the generator
//! in order. So a landlord restored from a snapshot (or rebuilt from a snapshot and its
//! journal), fed the same requests at the same times, gives the same replies byte for byte and
//! the same expiries as the original.
//!
//! # Snapshots and the journal
//!
//! [`Landlord::snapshot`] and [`Landlord::restore`] carry every lease with its *remaining* time
//! in JSON-friendly form: a lease with 10 s left when the snapshot was taken has 10 s left after
//! the restore, whatever the clock says then. For durability, a landlord keeps a journal
//! ([`Landlord::enable_journal`], [`Landlord::take_journal`]) and writes compact binary
//! snapshots ([`Landlord::snapshot_bytes`]); [`Landlord::recover`] rebuilds it from both. The
//! same rule holds there: time spent down does not count (see [`Landlord::resume`]).

mod coord;
mod durable;
mod exclusive;
mod state;
mod watch;
mod wheel;

use std::collections::VecDeque;

use rand_chacha::ChaCha12Rng;
use rand_core::{RngCore, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::error::{LeaseError, Result};
use crate::lease::{Cookie, LandlordId, Lease};
use crate::policy::{LeasePolicy, PolicyContext};
use crate::time::{self, Duration, Millis, ANY, FOREVER};
use crate::wire::{Encoding, Limits, Outcome, Reply, ReplyBody, Request, RequestBody, WireError};

pub use crate::journal::Recovered;
pub use coord::{CoordSnapshot, CoordinatedSnapshot, SnapshotInfo, SnapshotWatch};
pub use state::{
    LandlordSnapshot, RngState, SnapshotLease, String128, BINARY_SNAPSHOT_VERSION,
    BINARY_SNAPSHOT_VERSION_COORD, SNAPSHOT_VERSION,
};
use wheel::{key_of, time_of, Links, Node, Wheel, LIST_EARLY, LIST_NONE, NIL};

/// `Slot::list` bit of a free slot. The other bits still say where the slot is filed: a
/// cancelled lease's slot stays in its wheel list until the wheel takes it out (see
/// [`Landlord::cancel`]).
const FREE: u16 = 0x8000;
/// `Slot::list` of a free slot filed nowhere.
const LIST_FREE: u16 = FREE | LIST_NONE;

fn default_clock_interval() -> Duration {
    1_000
}

/// How a landlord is set up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LandlordConfig {
    /// This landlord's id, carried by every lease it grants; it also picks the stream its
    /// cookies come from, so landlords with different ids never share cookies.
    pub id: LandlordId,
    /// Secret seed for cookies; supply real entropy (the core has none of its own).
    pub seed: [u8; 32],
    /// Slack after expiry during which a lease is still honoured (clock skew, seed 001).
    /// A negative value counts as zero.
    pub grace: Duration,
    /// Most leases expired per [`Landlord::handle_timeout`] call (so also the most handed out
    /// by one call). Zero counts as one.
    pub expiry_budget: usize,
    /// Bounds for decoding requests in [`Landlord::handle_bytes`].
    pub limits: Limits,
    /// With a journal and leases held, the longest the landlord's time may run on without a
    /// journal record saying so (a clock record is written when it would be longer). After a
    /// crash the landlord resumes from the last recorded time, so this bounds the time before
    /// a crash that does not count. Zero turns the clock records off. Default 1 s.
    #[serde(default = "default_clock_interval")]
    pub journal_clock_interval: Duration,
}

impl LandlordConfig {
    /// Defaults: no grace, 10 000 expiries per call, default limits, a clock record a second.
    pub fn new(id: LandlordId, seed: [u8; 32]) -> LandlordConfig {
        LandlordConfig {
            id,
            seed,
            grace: 0,
            expiry_budget: 10_000,
            limits: Limits::default(),
            journal_clock_interval: default_clock_interval(),
        }
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
    /// Expiration on the host's clock.
    pub expiration: Millis,
}

/// A lease that expired, handed back with its resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expired<R> {
    /// The lease.
    pub cookie: Cookie,
    /// When it expired (before grace), on the host's clock.
    pub expiration: Millis,
    /// What it was for.
    pub resource: R,
}

/// One slab slot: 32 bytes plus the resource. The cookie is split (`hi`, `mid`, slot index) so
/// that no field needs 16-byte alignment.
///
/// A lease's renew, lookup and cancel read and write this slot alone (one cache line): the
/// wheel's links of a slot change only when the wheel files or takes out that slot.
struct Slot<R> {
    /// Cookie bits 64..128 (0 in a free slot).
    hi: u64,
    /// Expiration on the landlord's clock ([`FOREVER`] for never).
    expiration: Millis,
    /// Cookie bits 32..64; in a free slot, the next free slot ([`NIL`] ends the free list).
    mid: u32,
    /// Wheel list links (see [`Links`]).
    prev: u32,
    next: u32,
    /// The wheel list (or `LIST_*` tag), with the [`FREE`] bit set in a free slot.
    list: u16,
    /// `None` exactly when the slot is free.
    resource: Option<R>,
}

impl<R> Slot<R> {
    fn free() -> Slot<R> {
        Slot { hi: 0, expiration: 0, mid: 0, prev: NIL, next: NIL, list: LIST_FREE, resource: None }
    }
}

impl<R> Slot<R> {
    #[inline]
    fn is_free(&self) -> bool {
        self.list & FREE != 0
    }
}

/// The wheel sees the links without the [`FREE`] bit, and keeps the bit as it is when it sets
/// them: whether a slot is free is the landlord's business.
impl<R> Node for Slot<R> {
    #[inline]
    fn links(&self) -> Links {
        Links { prev: self.prev, next: self.next, list: self.list & !FREE }
    }
    #[inline]
    fn set_links(&mut self, l: Links) {
        (self.prev, self.next, self.list) = (l.prev, l.next, l.list | (self.list & FREE));
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

/// The cookie generator of a landlord: keyed by the seed, on the stream of the landlord's id.
fn cookie_rng(config: &LandlordConfig) -> ChaCha12Rng {
    let mut rng = ChaCha12Rng::from_seed(config.seed);
    rng.set_stream(config.id.0);
    rng
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
    /// Free slots still in a wheel list (cancelled leases the wheel has not taken out yet).
    vacated: usize,
    /// Leases past their deadline, taken off the wheel in order of (deadline, slot), waiting
    /// for expiry budget.
    due: VecDeque<u32>,
    /// Scratch for sorting a wheel list's due leases.
    batch: Vec<(u64, u32)>,
    /// Expired leases not yet handed out (expirations on the landlord's clock).
    expired: VecDeque<Expired<R>>,
    /// The landlord's time: the latest `now` seen, on its own clock (`i64::MIN` before any).
    clock: Millis,
    /// Added to the host's `now` to give the landlord's clock (non-zero after a resume).
    offset: Millis,
    journal: Option<Box<durable::Journal<R>>>,
    /// Tokens, exclusive resources, watches, waiting requests ([`crate::coord`]); `None`
    /// until [`Landlord::enable_coordination`].
    coord: Option<Box<coord::Coord<R>>>,
}

impl<R> Landlord<R> {
    /// A landlord with `policy`.
    pub fn new(config: LandlordConfig, policy: impl LeasePolicy + 'static) -> Landlord<R> {
        Landlord::empty(config, Box::new(policy))
    }

    fn empty(config: LandlordConfig, policy: Box<dyn LeasePolicy>) -> Landlord<R> {
        let rng = cookie_rng(&config);
        Landlord {
            config,
            policy,
            rng,
            slots: Vec::new(),
            free: NIL,
            live: 0,
            wheel: Wheel::new(0),
            vacated: 0,
            due: VecDeque::new(),
            batch: Vec::new(),
            expired: VecDeque::new(),
            clock: Millis::MIN,
            offset: 0,
            journal: None,
            coord: None,
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

    /// The landlord's time on the host's clock: the latest `now` it has seen (`i64::MIN`
    /// before any).
    pub fn now(&self) -> Millis {
        if self.clock == Millis::MIN {
            Millis::MIN
        } else {
            self.to_host(self.clock)
        }
    }

    /// Heap bytes held by this landlord's tables (slab, wheel, queues), not counting what the
    /// resources themselves own.
    pub fn heap_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Slot<R>>()
            + self.wheel.heap_bytes()
            + self.due.capacity() * std::mem::size_of::<u32>()
            + self.batch.capacity() * std::mem::size_of::<(u64, u32)>()
            + self.expired.capacity() * std::mem::size_of::<Expired<R>>()
            + self.journal.as_ref().map_or(0, |j| j.heap_bytes())
    }

    /// The host's `now` on the landlord's clock, without moving the clock.
    #[inline]
    fn landlord_time(&self, now: Millis) -> Millis {
        now.saturating_add(self.offset).max(self.clock)
    }

    /// Moves the landlord's clock to the host's `now` (never backwards) and returns it.
    #[inline]
    fn tick(&mut self, now: Millis) -> Millis {
        self.clock = self.landlord_time(now);
        self.clock
    }

    /// A time on the landlord's clock, on the host's.
    #[inline]
    fn to_host(&self, t: Millis) -> Millis {
        if t == FOREVER {
            FOREVER
        } else {
            t.saturating_sub(self.offset).min(FOREVER - 1)
        }
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
        (s.hi == hi && s.mid == mid && !s.is_free()).then_some(idx)
    }

    /// The slot of a lease still honoured at the landlord's time. A lease held but past its
    /// deadline is unknown from now on: with a journal, the time that made it so is recorded
    /// before the answer can leave (so that a restart cannot bring the lease back).
    #[inline]
    fn live_slot(&mut self, cookie: Cookie) -> Result<u32> {
        match self.slot_of(cookie) {
            Some(i) if self.honoured(self.slots[i as usize].expiration, self.clock) => Ok(i),
            Some(_) => Err(self.gone()),
            None => Err(LeaseError::UnknownLease),
        }
    }

    /// The answer for a lease held but past its deadline (see [`Landlord::live_slot`]).
    #[cold]
    #[inline(never)]
    fn gone(&mut self) -> LeaseError {
        self.record_clock();
        LeaseError::UnknownLease
    }

    /// Files a live slot filed nowhere at its deadline.
    fn file(&mut self, idx: u32) {
        let now = key_of(self.clock);
        match self.due_key(self.slots[idx as usize].expiration) {
            Some(k) => self.wheel.insert(&mut self.slots, idx, k, now),
            None => self.slots[idx as usize].list = LIST_NONE,
        }
    }

    /// Takes a live slot out of wherever it is filed (the side set needs its key: call this
    /// before its expiration changes).
    fn unfile(&mut self, idx: u32) {
        let s = &self.slots[idx as usize];
        let key = if s.list == LIST_EARLY { self.due_key(s.expiration).unwrap_or(0) } else { 0 };
        self.wheel.remove(&mut self.slots, idx, key);
    }

    /// Files a live slot whose expiration was just set (a grant, or a renewal, which has
    /// already taken it out of the side set) where the wheel will find it in time.
    ///
    /// A slot in a wheel list stays there while its deadline is not before the list's start:
    /// the wheel takes the list before anything in it is due and then re-files or expires each
    /// lease by its own deadline. So the common renewal (later) rewrites the slot alone, and a
    /// grant into a cancelled lease's slot usually leaves the slot where it was; only a lease
    /// moved before its list's start is unlinked, which touches its two neighbours.
    #[inline]
    fn settle(&mut self, idx: u32) {
        let s = &self.slots[idx as usize];
        let list = s.list;
        if list < LIST_EARLY {
            if let Some(k) = self.due_key(s.expiration) {
                if k >= self.wheel.list_start(list) {
                    return;
                }
            }
            self.wheel.remove(&mut self.slots, idx, 0);
        }
        self.file(idx);
    }

    /// Frees the slot of a lease that ended (off the wheel already, or a cancelled lease's, see
    /// [`Landlord::vacate`]) and hands back its resource. The freed slot is the next one reused.
    fn release(&mut self, idx: u32) -> R {
        let s = &mut self.slots[idx as usize];
        // Still in a wheel list only if cancelled (an expired lease is off the wheel).
        s.list = if s.list < LIST_EARLY { s.list | FREE } else { LIST_FREE };
        s.hi = 0;
        s.mid = self.free;
        self.free = idx;
        self.live -= 1;
        s.resource.take().expect("a live slot holds its resource")
    }

    /// Ends a cancelled lease. Its slot is freed but, if it is in a wheel list, stays linked
    /// there (unlinking would touch its two neighbours, two more cache misses): the wheel drops
    /// it when the list comes up, or a grant that reuses the slot settles it first.
    fn vacate(&mut self, idx: u32) -> R {
        match self.slots[idx as usize].list {
            LIST_EARLY => self.unfile(idx),
            LIST_NONE => {}
            _ => self.vacated += 1,
        }
        self.release(idx)
    }

    /// Grants a lease on `resource` for (at most) `requested` ms.
    pub fn grant(&mut self, resource: R, requested: Duration, now: Millis) -> Result<Grant> {
        let now = self.tick(now);
        check_requested(requested)?;
        if self.free == NIL && self.slots.len() >= NIL as usize {
            return Err(LeaseError::LeaseDenied(format!(
                "landlord full: {} leases held",
                self.slots.len()
            )));
        }
        if self.coord.is_some() {
            self.coord_check_grant(&resource)?;
        }
        let ctx = PolicyContext { now, live: self.live };
        let duration = limit(requested, (*self.policy).grant(requested, &ctx)?);
        let (cookie, expiration) = self.place(resource, duration);
        Ok(Grant { cookie, duration, expiration: self.to_host(expiration) })
    }

    /// Grants a lease of exactly `duration` (already decided: no policy is asked), for hosts
    /// that replay their own journal of outcomes (the discovery service's).
    pub(crate) fn grant_exact(
        &mut self,
        resource: R,
        duration: Duration,
        now: Millis,
    ) -> Result<Grant> {
        self.tick(now);
        if self.free == NIL && self.slots.len() >= NIL as usize {
            return Err(LeaseError::LeaseDenied("landlord full".into()));
        }
        let (cookie, expiration) = self.place(resource, duration);
        Ok(Grant { cookie, duration, expiration: self.to_host(expiration) })
    }

    /// Renews a lease for exactly `duration` (already decided: no policy is asked).
    pub(crate) fn renew_exact(
        &mut self,
        cookie: Cookie,
        duration: Duration,
        now: Millis,
    ) -> Result<Duration> {
        self.tick(now);
        let idx = self.live_slot(cookie)?;
        self.extend(idx, duration);
        if let Some(j) = self.journal.as_deref_mut() {
            j.renew(self.clock, cookie, duration);
        }
        Ok(duration)
    }

    /// Replaces the policy that decides later grants and renewals.
    pub(crate) fn set_policy(&mut self, policy: Box<dyn LeasePolicy>) {
        self.policy = policy;
    }

    /// Puts a new lease of `duration` from the landlord's time into the next slot, with the
    /// next cookie, and journals it.
    fn place(&mut self, resource: R, duration: Duration) -> (Cookie, Millis) {
        let expiration = time::expiration_after(self.clock, duration);
        let (hi, mid) = self.new_tag();
        let idx = if self.free != NIL {
            let idx = self.free;
            let s = &mut self.slots[idx as usize];
            self.free = s.mid;
            s.hi = hi;
            s.mid = mid;
            s.expiration = expiration;
            s.resource = Some(resource);
            // Live again, filed where the cancelled lease left it (if anywhere).
            s.list &= !FREE;
            if s.list != LIST_NONE {
                self.vacated -= 1;
            }
            idx
        } else {
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
        self.settle(idx);
        let cookie = cookie_of(hi, mid, idx);
        if let Some(j) = self.journal.as_deref_mut() {
            let r = self.slots[idx as usize].resource.as_ref().expect("just placed");
            j.grant(self.clock, cookie, duration, r);
        }
        if let Some(c) = self.coord.as_deref_mut() {
            c.placed(cookie, self.slots[idx as usize].resource.as_ref().expect("placed"), duration);
        }
        (cookie, expiration)
    }

    /// 96 fresh random cookie bits, never all zero.
    fn new_tag(&mut self) -> (u64, u32) {
        loop {
            let hi = self.rng.next_u64();
            let mid = self.rng.next_u32();
            if (hi, mid) != (0, 0) {
                return (hi, mid);
            }
        }
    }

    /// Renews a lease for (at most) `requested` ms from `now`; returns the granted duration.
    /// A denied renewal leaves the lease as it was.
    #[inline(always)]
    pub fn renew(&mut self, cookie: Cookie, requested: Duration, now: Millis) -> Result<Duration> {
        let now = self.tick(now);
        check_requested(requested)?;
        // The hot path of a busy landlord, written out: one slot, read and written once.
        let (hi, mid, idx) = split(cookie);
        let Some(s) = self.slots.get_mut(idx as usize) else {
            return self.renew_unheld(cookie, requested);
        };
        if s.hi != hi || s.mid != mid || s.is_free() {
            return self.renew_unheld(cookie, requested);
        }
        let old = s.expiration;
        if !(old == FOREVER || now <= time::expiration_after(old, self.config.grace.max(0))) {
            return Err(self.gone());
        }
        let ctx = PolicyContext { now, live: self.live };
        let duration = limit(requested, (*self.policy).renew(requested, old, &ctx)?);
        let expiration = time::expiration_after(now, duration);
        // The common renewal: in a wheel list, not FOREVER, and no earlier than before, so no
        // earlier than the list's start either (see `settle`): only the slot changes.
        if s.list < LIST_EARLY && expiration >= old && expiration != FOREVER {
            s.expiration = expiration;
        } else {
            self.move_lease(idx, expiration);
        }
        if let Some(j) = self.journal.as_deref_mut() {
            j.renew(now, cookie, duration);
        }
        if let Some(c) = self.coord.as_deref_mut() {
            c.renewed(cookie, self.slots[idx as usize].resource.as_ref().expect("held"), duration);
        }
        Ok(duration)
    }

    /// A renewal of a cookie that names no lease in a slot: a watch registration's lease when
    /// coordination is on, else unknown.
    #[cold]
    #[inline(never)]
    fn renew_unheld(&mut self, cookie: Cookie, requested: Duration) -> Result<Duration> {
        if self.coord.is_some() {
            self.renew_watch(cookie, requested, LeaseError::UnknownLease)
        } else {
            Err(LeaseError::UnknownLease)
        }
    }

    /// Sets a held lease's expiration to `duration` from the landlord's time.
    #[inline]
    fn extend(&mut self, idx: u32, duration: Duration) {
        let expiration = time::expiration_after(self.clock, duration);
        let s = &self.slots[idx as usize];
        // The common renewal: in a wheel list, not FOREVER, and no earlier than before, so no
        // earlier than the list's start either (see `settle`): only the slot changes.
        if s.list < LIST_EARLY && expiration >= s.expiration && expiration != FOREVER {
            self.slots[idx as usize].expiration = expiration;
        } else {
            self.move_lease(idx, expiration);
        }
    }

    /// The rest of [`Landlord::extend`]: a lease moved earlier, or out of the side set, or to
    /// or from FOREVER.
    #[cold]
    #[inline(never)]
    fn move_lease(&mut self, idx: u32, expiration: Millis) {
        if self.slots[idx as usize].list == LIST_EARLY {
            self.unfile(idx);
        }
        self.slots[idx as usize].expiration = expiration;
        self.settle(idx);
    }

    /// Cancels a lease and hands back its resource.
    #[inline]
    pub fn cancel(&mut self, cookie: Cookie, now: Millis) -> Result<R> {
        self.tick(now);
        let idx = self.live_slot(cookie)?;
        if let Some(j) = self.journal.as_deref_mut() {
            j.cancel(self.clock, cookie);
        }
        let r = self.vacate(idx);
        if let Some(c) = self.coord.as_deref_mut() {
            c.ended(cookie, &r, crate::coord::EventKind::Cancelled);
            self.serve_freed();
        }
        Ok(r)
    }

    /// Renews many leases; one result per lease, in order. One failure never aborts the batch.
    pub fn renew_all(
        &mut self,
        items: &[(Cookie, Duration)],
        now: Millis,
    ) -> Vec<Result<Duration>> {
        // Even an empty batch is a call at `now`: the clock moves as for any other.
        self.tick(now);
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
        // Even an empty batch is a call at `now`: the clock moves as for any other.
        self.tick(now);
        self.warm(cookies.iter().copied());
        cookies.iter().map(|&c| self.cancel(c, now)).collect()
    }

    /// The expiration (on the host's clock) and resource of a lease still honoured at `now`
    /// (read as the landlord's time: never before the latest `now` it has seen).
    pub fn get(&self, cookie: Cookie, now: Millis) -> Option<(Millis, &R)> {
        let idx = self.slot_of(cookie)?;
        let s = &self.slots[idx as usize];
        if !self.honoured(s.expiration, self.landlord_time(now)) {
            return None;
        }
        s.resource.as_ref().map(|r| (self.to_host(s.expiration), r))
    }

    /// The holder's view of a lease still honoured at `now` (expiration on the host's clock).
    pub fn lease(&self, cookie: Cookie, now: Millis) -> Option<Lease> {
        self.get(cookie, now).map(|(exp, _)| Lease::new(self.config.id, cookie, exp))
    }

    /// Every lease held: cookie, expiration (host's clock), resource, in slot order. Includes
    /// leases past expiration that no [`Landlord::handle_timeout`] has swept yet.
    pub fn iter(&self) -> impl Iterator<Item = (Cookie, Millis, &R)> + '_ {
        self.slots.iter().enumerate().filter_map(|(i, s)| {
            s.resource
                .as_ref()
                .map(|r| (cookie_of(s.hi, s.mid, i as u32), self.to_host(s.expiration), r))
        })
    }

    /// When the host should next call [`Landlord::handle_timeout`] (host's clock); `None` if
    /// nothing will expire.
    ///
    /// Never later than the next expiry (it may be earlier: the wheel then refines its view
    /// and asks again). While leases are left over from a call that ran out of budget, it is
    /// already past: call again at once. With a journal and leases held, never later
    /// than the next clock record is due ([`LandlordConfig::journal_clock_interval`]).
    pub fn poll_timeout(&self) -> Option<Millis> {
        if let Some(&idx) = self.due.front() {
            // Left over from a call that ran out of budget: due already.
            let k = self.due_key(self.slots[idx as usize].expiration).expect("a due lease");
            return Some(self.to_host(time_of(k)));
        }
        debug_assert!(self.vacated <= self.wheel.filed());
        // Only cancelled leases' slots in the wheel: nothing will expire.
        let wheel = if self.wheel.filed() == self.vacated && self.wheel.early_len() == 0 {
            None
        } else {
            self.wheel.next_key().map(time_of)
        };
        let clock = match &self.journal {
            Some(j) if self.live > 0 && self.config.journal_clock_interval > 0 => {
                Some(j.clock().saturating_add(self.config.journal_clock_interval))
            }
            _ => None,
        };
        let t = match (wheel, clock) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let t = match (t, self.coord_deadline()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        t.map(|t| self.to_host(t))
    }

    /// Advances expiry to `now`: leases whose expiration plus grace is before `now` are removed
    /// and queued for [`Landlord::poll_expired`], in order of deadline, then slot. At most
    /// [`LandlordConfig::expiry_budget`] per call; [`Landlord::poll_timeout`] tells whether
    /// more are waiting.
    pub fn handle_timeout(&mut self, now: Millis) {
        self.tick(now);
        let n = self.sweep(self.budget());
        let interval = self.config.journal_clock_interval;
        if let Some(j) = self.journal.as_deref_mut() {
            if n > 0 {
                j.sweep(self.clock, n as u64);
            } else if interval > 0
                && self.live > 0
                && self.clock.saturating_sub(j.clock()) >= interval
            {
                j.clock_record(self.clock);
            }
        }
        if self.coord.is_some() {
            self.coord_timeout();
        }
    }

    /// Expires up to `limit` leases due at the landlord's time, in canonical order; returns how
    /// many it expired.
    fn sweep(&mut self, limit: usize) -> usize {
        let t = key_of(self.clock);
        let mut n = 0;
        loop {
            while n < limit {
                let Some(idx) = self.due.pop_front() else { break };
                self.expire(idx);
                n += 1;
            }
            if n == limit {
                // Out of budget: the rest waits (poll_timeout asks for another call).
                return n;
            }
            if !self.refill(t) {
                break;
            }
        }
        self.wheel.advance(t);
        n
    }

    /// Moves the next leases due at key `t` from the wheel to `due`, sorted by (deadline, slot);
    /// false if none are due.
    fn refill(&mut self, t: u64) -> bool {
        let now = key_of(self.clock);
        loop {
            // The side set holds keys at or behind the wheel's position: always the earliest.
            let mut found = false;
            while let Some((_, idx)) = self.wheel.pop_early(t) {
                self.slots[idx as usize].list = LIST_NONE;
                self.due.push_back(idx);
                found = true;
            }
            if found {
                return true;
            }
            let Some(due) = self.wheel.earliest() else { return false };
            if due.start > t {
                return false;
            }
            // Empty the list first, then file again what must be: filing into an emptied wheel
            // may move its position forward, and an entry must never land back in the list
            // being emptied (it would be taken again, for ever).
            let mut batch = std::mem::take(&mut self.batch);
            while let Some(idx) = self.wheel.pop(&mut self.slots, due.list) {
                let s = &self.slots[idx as usize];
                if s.is_free() {
                    // A cancelled lease's slot: off the wheel at last, and nothing more.
                    self.vacated -= 1;
                    continue;
                }
                match self.due_key(s.expiration) {
                    Some(k) => batch.push((k, idx)),
                    None => self.slots[idx as usize].list = LIST_NONE,
                }
            }
            let mut found = false;
            if due.end > t {
                // Only partly due: its leases move down a level (or to the side set).
                self.wheel.begin_cascade(due);
                for &(k, idx) in &batch {
                    self.wheel.insert(&mut self.slots, idx, k, now);
                }
                batch.clear();
            } else {
                // Wholly due: its leases expire, except those extended meanwhile, which are
                // filed again at their new deadline (even one that is due too: leases of later
                // lists may come before it).
                batch.retain(|&(k, idx)| {
                    k <= due.end || {
                        self.wheel.insert(&mut self.slots, idx, k, now);
                        false
                    }
                });
                found = !batch.is_empty();
                batch.sort_unstable();
                self.due.extend(batch.drain(..).map(|(_, idx)| idx));
            }
            self.batch = batch;
            if found {
                return true;
            }
        }
    }

    /// Moves a lease (already off the wheel) to the expired queue.
    #[inline]
    fn expire(&mut self, idx: u32) {
        let (hi, mid, expiration) = {
            let s = &self.slots[idx as usize];
            (s.hi, s.mid, s.expiration)
        };
        let resource = self.release(idx);
        let cookie = cookie_of(hi, mid, idx);
        if let Some(c) = self.coord.as_deref_mut() {
            c.ended(cookie, &resource, crate::coord::EventKind::Expired);
        }
        self.expired.push_back(Expired { cookie, expiration, resource });
    }

    /// The next expired lease found by [`Landlord::handle_timeout`] (expiration on the host's
    /// clock). With a journal, that it was handed out is journaled too.
    pub fn poll_expired(&mut self) -> Option<Expired<R>> {
        let mut e = self.expired.pop_front()?;
        e.expiration = self.to_host(e.expiration);
        if let Some(j) = self.journal.as_deref_mut() {
            j.delivered();
        }
        Some(e)
    }

    /// Journals the landlord's time if it ran on since the last record (an answer about to
    /// leave depends on it).
    fn record_clock(&mut self) {
        if let Some(j) = self.journal.as_deref_mut() {
            if self.clock > j.clock() {
                j.clock_record(self.clock);
            }
        }
    }
}

/// [`time::check_requested`], with the error made out of line (renew and grant stay short).
#[inline]
fn check_requested(requested: Duration) -> Result<()> {
    if requested >= 0 || requested == ANY {
        Ok(())
    } else {
        Err(bad_request(requested))
    }
}

#[cold]
#[inline(never)]
fn bad_request(requested: Duration) -> LeaseError {
    time::check_requested(requested).expect_err("a bad request")
}

/// The duration actually granted for `requested` when the policy offered `offered`: never more
/// than asked (ANY takes the offer), never negative.
#[inline]
fn limit(requested: Duration, offered: Duration) -> Duration {
    let d = if requested == ANY { offered } else { offered.min(requested) };
    d.max(0)
}

impl<R: From<Vec<u8>>> Landlord<R> {
    /// Answers one request message.
    ///
    /// With a journal, the reply may leave only once [`Landlord::journal_seq`] (read right
    /// after this call) is durable: see [`crate::journal::Gate`].
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
            RequestBody::Cancel { cookie } => match self.cancel_any(*cookie, now) {
                Ok(()) => ReplyBody::Cancelled,
                Err(e) => ReplyBody::Error(WireError::from(&e)),
            },
            RequestBody::RenewAll { items } => ReplyBody::RenewedAll {
                results: self.renew_all(items, now).into_iter().map(Outcome::from).collect(),
            },
            RequestBody::CancelAll { cookies } if self.coord.is_some() => {
                self.tick(now);
                ReplyBody::CancelledAll {
                    results: cookies
                        .iter()
                        .map(|&c| Outcome::from(self.cancel_any(c, now)))
                        .collect(),
                }
            }
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

    /// Cancels a lease, or a watch registration by its lease's cookie.
    fn cancel_any(&mut self, cookie: Cookie, now: Millis) -> Result<()> {
        match self.cancel(cookie, now) {
            Ok(_) => Ok(()),
            Err(LeaseError::UnknownLease) if self.is_watch(cookie) => {
                self.cancel_watch(cookie, now)
            }
            Err(e) => Err(e),
        }
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

    /// The tables agree with themselves: the wheel's count, the cancelled slots still linked,
    /// the free list, and every live slot in a wheel list due no earlier than the list's start
    /// (what lets renewals, cancels and grants leave slots where they are).
    fn check(ll: &Landlord<u32>) {
        let mut linked = 0;
        let mut vacated = 0;
        let mut early = 0;
        for s in &ll.slots {
            let list = s.list & !FREE;
            if list == LIST_EARLY {
                assert!(!s.is_free(), "a free slot in the side set");
                early += 1;
            } else if list < LIST_EARLY {
                linked += 1;
                if s.is_free() {
                    vacated += 1;
                    assert!(s.resource.is_none());
                } else {
                    let k = ll.due_key(s.expiration).expect("a lease in the wheel expires");
                    assert!(k >= ll.wheel.list_start(list), "filed after its deadline");
                }
            }
            assert_eq!(s.is_free(), s.resource.is_none());
        }
        assert_eq!(linked, ll.wheel.filed());
        assert_eq!(vacated, ll.vacated);
        assert_eq!(early, ll.wheel.early_len());
        let mut free = 0;
        let mut f = ll.free;
        while f != NIL {
            assert!(ll.slots[f as usize].is_free());
            free += 1;
            f = ll.slots[f as usize].mid;
        }
        assert_eq!(free + ll.live, ll.slots.len());
    }

    /// Random grants, renewals (longer and shorter), cancels and expiry, with the host's clock
    /// sometimes stepping back; the tables are checked after every call, and the lazy paths
    /// (a grant leaving a cancelled lease's slot in its list, or having to unlink it) are taken.
    #[test]
    fn tables_stay_consistent_under_churn() {
        let (mut lazy_reuse, mut moved_reuse) = (0, 0);
        for seed in 0..40u64 {
            let mut rng = ChaCha12Rng::seed_from_u64(seed);
            let config = LandlordConfig::new(LandlordId(1), [seed as u8; 32])
                .with_grace((seed % 3) as i64 * 50)
                .with_expiry_budget(1 + (seed % 4) as usize * 7);
            let mut ll: Landlord<u32> =
                Landlord::new(config, crate::policy::Bounded::new(FOREVER, 5_000).unwrap());
            let mut cookies: Vec<Cookie> = Vec::new();
            let mut now = 10_000i64;
            for step in 0..3_000u32 {
                let r = rng.next_u32();
                let pick = |c: &[Cookie]| c[(r >> 8) as usize % c.len()];
                let d = match r % 7 {
                    0 => ANY,
                    1 => FOREVER,
                    2 => (r >> 4) as i64 % 100,
                    _ => (r >> 4) as i64 % 20_000,
                };
                match r % 11 {
                    0..=2 => {
                        // A cancelled lease's slot, still in its wheel list, is reused next.
                        let idx = ll.free;
                        let before = ll.slots.get(idx as usize).map(|s| s.list & !FREE);
                        cookies.push(ll.grant(step, d, now).unwrap().cookie);
                        if let Some(l) = before.filter(|&l| l < LIST_EARLY) {
                            if ll.slots[idx as usize].list == l {
                                lazy_reuse += 1;
                            } else {
                                moved_reuse += 1;
                            }
                        }
                    }
                    3..=5 if !cookies.is_empty() => {
                        let _ = ll.renew(pick(&cookies), d, now);
                    }
                    6 | 7 if !cookies.is_empty() => {
                        let _ = ll.cancel(pick(&cookies), now);
                    }
                    8 => now += (r >> 4) as i64 % 3_000,
                    9 => now -= (r >> 4) as i64 % 200,
                    _ => {
                        ll.handle_timeout(now);
                        while ll.poll_expired().is_some() {}
                    }
                }
                check(&ll);
                if ll.live == 0 {
                    assert_eq!(ll.poll_timeout(), None);
                }
            }
        }
        assert!(lazy_reuse > 300 && moved_reuse > 100, "{lazy_reuse} left, {moved_reuse} moved");
    }
}
