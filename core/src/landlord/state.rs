//! A landlord's whole state, out and back in: the JSON-friendly [`LandlordSnapshot`], the compact
//! binary snapshot of durable landlords, and the one checked way back from either.
//!
//! Both carry the same things: the configuration (with the cookie seed: store a snapshot like a
//! key), the cookie generator's position, every slot (held or free, and the order in which free
//! slots are reused), every lease with its expiration and resource, and the expired leases not
//! yet handed out. Restoring checks every invariant the landlord relies on and refuses anything
//! else with a [`LeaseError::Decode`] error.
//!
//! Binary body (version [`BINARY_SNAPSHOT_VERSION`], inside a [`crate::journal`] snapshot
//! container of kind [`crate::journal::KIND_LANDLORD`]; integers little-endian, counts LEB128):
//!
//! ```text
//! id u64, seed [32], grace i64, expiry_budget u64, journal_clock_interval i64,
//! max_message_bytes u64, max_batch u64, max_resource_bytes u64,
//! clock i64, journal_clock i64, rng_stream u64, rng_word_pos u128, slots u32,
//! free: count, then u32 each (next reused first),
//! leases: count, then each: cookie u128, expiration i64, resource length, resource,
//! expired: count, then each as a lease (oldest first)
//! ```
//!
//! A lease costs 25 bytes plus its resource (plus 4 per free slot).
//!
//! Version 2 is version 1 followed by the coordination section (tokens, labels, watches; see
//! `landlord::coord`); it is written only by a landlord with coordination on, so a landlord
//! without it writes exactly the bytes of version 1. Both are read.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::{
    cookie_of, cookie_rng, split, Expired, Landlord, LandlordConfig, LeaseError, Result, Slot,
    Wheel, NIL,
};
use crate::journal::{put_varint, read_snapshot, write_snapshot, Durable, Reader, KIND_LANDLORD};
use crate::lease::{Cookie, LandlordId};
use crate::policy::LeasePolicy;
use crate::time::{self, Duration, Millis, FOREVER};
use crate::wire::Limits;
use rand_chacha::ChaCha12Rng;

/// Version of [`LandlordSnapshot`] written by this build (and the only one it reads).
///
/// Version 2 binds cookies to their landlord (the generator's stream is the landlord's id);
/// version 1 snapshots (leasehold 0.1.0) are refused.
pub const SNAPSHOT_VERSION: u32 = 2;

/// Version of the binary snapshot body written by this build without coordination (with
/// coordination on it writes [`BINARY_SNAPSHOT_VERSION_COORD`]); it reads both.
pub const BINARY_SNAPSHOT_VERSION: u16 = 1;

/// Version of the binary snapshot body of a landlord with coordination on: version 1 and a
/// coordination section.
pub const BINARY_SNAPSHOT_VERSION_COORD: u16 = 2;

/// The position of the cookie generator in a [`LandlordSnapshot`] (its key is the config's seed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RngState {
    /// ChaCha stream number: the landlord's id.
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
    /// The landlord's time when the snapshot was taken, on the host's clock.
    pub taken_at: Millis,
    /// Where the cookie generator was.
    pub rng: RngState,
    /// Slab length: every cookie's slot index is below it.
    pub slots: u32,
    /// Free slots, the next one to reuse first.
    pub free: Vec<u32>,
    /// The leases held (including any not yet swept after expiry), in slot order.
    pub leases: Vec<SnapshotLease<R>>,
    /// Expired leases swept but not yet handed out by [`Landlord::poll_expired`], in order.
    pub expired: Vec<SnapshotLease<R>>,
}

fn bad(msg: String) -> LeaseError {
    LeaseError::Decode(format!("bad landlord snapshot: {msg}"))
}

/// The state of a landlord as plain data: what both snapshot forms decode to, and the one thing
/// [`Landlord::from_state`] builds from (after checking it). Times are on the landlord's clock.
struct State<R> {
    config: LandlordConfig,
    clock: Millis,
    journal_clock: Millis,
    rng: (u64, u128),
    slots: u32,
    free: Vec<u32>,
    leases: Vec<(Cookie, Millis, R)>,
    expired: Vec<(Cookie, Millis, R)>,
}

impl<R: Clone> Landlord<R> {
    /// Everything this landlord holds, with each lease's time left at `now` (read as the
    /// landlord's time: never before the latest `now` it has seen).
    ///
    /// Leases past expiration that no [`Landlord::handle_timeout`] swept yet are kept (with a
    /// negative remaining time), as are expired leases not yet taken by
    /// [`Landlord::poll_expired`], so that the restored landlord still hands them out.
    pub fn snapshot(&self, now: Millis) -> LandlordSnapshot<R> {
        let now = self.landlord_time(now);
        let lease = |cookie, exp, r: &R| SnapshotLease {
            cookie,
            remaining: time::remaining(exp, now),
            resource: r.clone(),
        };
        let leases = self
            .slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                s.resource
                    .as_ref()
                    .map(|r| lease(cookie_of(s.hi, s.mid, i as u32), s.expiration, r))
            })
            .collect();
        let expired =
            self.expired.iter().map(|e| lease(e.cookie, e.expiration, &e.resource)).collect();
        LandlordSnapshot {
            version: SNAPSHOT_VERSION,
            config: self.config.clone(),
            taken_at: self.to_host(now),
            rng: RngState {
                stream: self.rng.get_stream(),
                word_pos: String128(self.rng.get_word_pos()),
            },
            slots: self.slots.len() as u32,
            free: self.free_list(),
            leases,
            expired,
        }
    }
}

impl<R> Landlord<R> {
    fn free_list(&self) -> Vec<u32> {
        let mut free = Vec::with_capacity(self.slots.len() - self.live);
        let mut f = self.free;
        while f != NIL {
            free.push(f);
            f = self.slots[f as usize].mid;
        }
        free
    }

    /// Rebuilds a landlord from a [`LandlordSnapshot`] at `now`, with `policy` (policies are
    /// code, not data, so the host supplies it again).
    ///
    /// Every lease keeps its cookie and the time it had left when the snapshot was taken,
    /// counted from `now`; the cookie generator continues where it was and free slots are
    /// reused in the same order, so the restored landlord, fed the same requests, answers as
    /// the original would have. A snapshot of another version, or one that is inconsistent in
    /// any way (a cookie twice, a lease both held and expired, two leases in one slot, a slot
    /// both free and held or free twice, a slot outside the table, a generator that is not the
    /// landlord's, an expired lease that was not past its deadline) is a [`LeaseError::Decode`]
    /// error.
    pub fn restore(
        snapshot: LandlordSnapshot<R>,
        policy: impl LeasePolicy + 'static,
        now: Millis,
    ) -> Result<Landlord<R>> {
        let LandlordSnapshot { version, config, taken_at: _, rng, slots, free, leases, expired } =
            snapshot;
        if version != SNAPSHOT_VERSION {
            return Err(bad(format!(
                "version {version}, this build reads version {SNAPSHOT_VERSION}"
            )));
        }
        let shift =
            |l: SnapshotLease<R>| (l.cookie, time::expiration_after(now, l.remaining), l.resource);
        // A remaining time below FOREVER never shifts to FOREVER (expiration_after caps at
        // FOREVER - 1), so a finite lease stays finite.
        let state = State {
            config,
            clock: now,
            journal_clock: now,
            rng: (rng.stream, rng.word_pos.0),
            slots,
            free,
            leases: leases.into_iter().map(shift).collect(),
            expired: expired.into_iter().map(shift).collect(),
        };
        Landlord::from_state(state, Box::new(policy))
    }

    /// The one way in: checks every invariant, then builds the tables.
    fn from_state(state: State<R>, policy: Box<dyn LeasePolicy>) -> Result<Landlord<R>> {
        let State { config, clock, journal_clock, rng, slots, free, leases, expired } = state;
        if slots == NIL {
            return Err(bad(format!("{slots} slots is more than a landlord holds")));
        }
        let n = slots as usize;
        if leases.len() + free.len() != n {
            return Err(bad(format!(
                "{} leases and {} free slots do not make up {n} slots",
                leases.len(),
                free.len()
            )));
        }
        if rng.0 != config.id.0 {
            return Err(bad(format!(
                "cookie generator on stream {}, which is not landlord {}'s",
                rng.0, config.id
            )));
        }
        if journal_clock > clock {
            return Err(bad(format!(
                "journal time {journal_clock} is ahead of the landlord's time {clock}"
            )));
        }
        let mut ll = Landlord::empty(config, policy);
        let mut generator: ChaCha12Rng = cookie_rng(&ll.config);
        generator.set_word_pos(rng.1);
        ll.rng = generator;
        ll.clock = clock;
        ll.slots.reserve_exact(n);
        ll.slots.extend((0..n).map(|_| Slot::free()));
        // Lowest due key first, so the wheel starts behind every lease.
        let mut min_key = super::key_of(clock);
        for (cookie, expiration, resource) in leases {
            let (hi, mid, idx) = split(cookie);
            if (hi, mid) == (0, 0) {
                return Err(bad(format!("cookie {cookie} has no random part")));
            }
            let s = ll
                .slots
                .get_mut(idx as usize)
                .ok_or_else(|| bad(format!("cookie {cookie} names slot {idx} of {n}")))?;
            if s.resource.is_some() {
                return Err(bad(format!(
                    "cookie {} and {cookie} share slot {idx} (a duplicate cookie?)",
                    cookie_of(s.hi, s.mid, idx)
                )));
            }
            *s = Slot {
                hi,
                expiration,
                mid,
                list: super::LIST_NONE,
                resource: Some(resource),
                ..Slot::free()
            };
            ll.live += 1;
            if let Some(k) = ll.due_key(expiration) {
                min_key = min_key.min(k - 1);
            }
        }
        let mut seen = vec![0u64; n.div_ceil(64)];
        for &f in &free {
            match ll.slots.get(f as usize) {
                None => return Err(bad(format!("free slot {f} of {n}"))),
                Some(s) if s.resource.is_some() => {
                    return Err(bad(format!("slot {f} is both free and held")))
                }
                Some(_) => {
                    let (w, bit) = (f as usize / 64, 1u64 << (f % 64));
                    if seen[w] & bit != 0 {
                        return Err(bad(format!("slot {f} is free twice")));
                    }
                    seen[w] |= bit;
                }
            }
        }
        for &f in free.iter().rev() {
            ll.slots[f as usize].mid = ll.free;
            ll.free = f;
        }
        ll.wheel = Wheel::new(min_key);
        for idx in 0..slots {
            if ll.slots[idx as usize].resource.is_some() {
                ll.file(idx);
            }
        }
        let mut gone = HashSet::with_capacity(expired.len());
        for (cookie, expiration, resource) in expired {
            if ll.slot_of(cookie).is_some() {
                return Err(bad(format!("cookie {cookie} is both held and expired")));
            }
            if !gone.insert(cookie) {
                return Err(bad(format!("expired cookie {cookie} appears twice")));
            }
            if expiration == FOREVER || ll.deadline(expiration) >= clock {
                return Err(bad(format!(
                    "cookie {cookie} is listed as expired but is not past its deadline"
                )));
            }
            ll.expired.push_back(Expired { cookie, expiration, resource });
        }
        Ok(ll)
    }
}

impl<R: Durable> Landlord<R> {
    /// Writes a compact binary snapshot (see the module docs of [`crate::journal`]) to `out` and
    /// returns the sequence number of the last journal record it includes. Log records up to
    /// it may then be dropped. Marks the journal so that no record it includes changes later.
    pub fn snapshot_bytes(&mut self, out: &mut Vec<u8>) -> u64 {
        self.seal_journal();
        let seq = self.journal_seq();
        let mut body = Vec::with_capacity(
            160 + self.live * 32 + (self.slots.len() - self.live) * 4 + self.expired.len() * 32,
        );
        let c = &self.config;
        body.extend_from_slice(&c.id.0.to_le_bytes());
        body.extend_from_slice(&c.seed);
        for v in [c.grace, c.expiry_budget as i64, c.journal_clock_interval] {
            body.extend_from_slice(&v.to_le_bytes());
        }
        for v in [c.limits.max_message_bytes, c.limits.max_batch, c.limits.max_resource_bytes] {
            body.extend_from_slice(&(v as u64).to_le_bytes());
        }
        body.extend_from_slice(&self.clock.to_le_bytes());
        body.extend_from_slice(&self.journal_clock().to_le_bytes());
        body.extend_from_slice(&self.rng.get_stream().to_le_bytes());
        body.extend_from_slice(&self.rng.get_word_pos().to_le_bytes());
        body.extend_from_slice(&(self.slots.len() as u32).to_le_bytes());
        let free = self.free_list();
        put_varint(&mut body, free.len() as u64);
        for f in free {
            body.extend_from_slice(&f.to_le_bytes());
        }
        let mut scratch = Vec::new();
        let mut lease = |body: &mut Vec<u8>, cookie: Cookie, exp: Millis, r: &R| {
            body.extend_from_slice(&cookie.0.to_le_bytes());
            body.extend_from_slice(&exp.to_le_bytes());
            scratch.clear();
            r.encode(&mut scratch);
            put_varint(body, scratch.len() as u64);
            body.extend_from_slice(&scratch);
        };
        put_varint(&mut body, self.live as u64);
        for (i, s) in self.slots.iter().enumerate() {
            if let Some(r) = &s.resource {
                lease(&mut body, cookie_of(s.hi, s.mid, i as u32), s.expiration, r);
            }
        }
        put_varint(&mut body, self.expired.len() as u64);
        for e in &self.expired {
            lease(&mut body, e.cookie, e.expiration, &e.resource);
        }
        let version = match self.coord.as_deref() {
            Some(c) => {
                c.write_binary(&mut body);
                BINARY_SNAPSHOT_VERSION_COORD
            }
            None => BINARY_SNAPSHOT_VERSION,
        };
        write_snapshot(out, KIND_LANDLORD, version, seq, &body);
        seq
    }

    /// Rebuilds a landlord from a binary snapshot ([`Landlord::snapshot_bytes`]) with its
    /// journal, ready for [`Landlord::replay_segments`]; then call [`Landlord::resume`] (or use
    /// [`Landlord::recover`], which does all three). Damage, another kind or version, or any
    /// inconsistency is a [`LeaseError::Decode`] error.
    pub fn from_snapshot_bytes(
        bytes: &[u8],
        policy: impl LeasePolicy + 'static,
    ) -> Result<Landlord<R>> {
        let snap = read_snapshot(bytes)?;
        if snap.kind != KIND_LANDLORD {
            return Err(bad(format!("snapshot of kind {}, not a landlord's", snap.kind)));
        }
        if snap.version != BINARY_SNAPSHOT_VERSION && snap.version != BINARY_SNAPSHOT_VERSION_COORD
        {
            return Err(bad(format!(
                "binary version {}, this build reads versions {BINARY_SNAPSHOT_VERSION} and \
                 {BINARY_SNAPSHOT_VERSION_COORD}",
                snap.version
            )));
        }
        let mut r = Reader::new(snap.body, "landlord snapshot");
        let id = LandlordId(r.u64()?);
        let seed: [u8; 32] = r.take(32)?.try_into().expect("32 bytes");
        let grace = r.i64()?;
        let expiry_budget = r.u64()?;
        let journal_clock_interval = r.i64()?;
        let mut limit = || -> Result<usize> {
            let v = r.u64()?;
            usize::try_from(v).map_err(|_| r.error(format!("limit {v} too large")))
        };
        let limits = Limits {
            max_message_bytes: limit()?,
            max_batch: limit()?,
            max_resource_bytes: limit()?,
        };
        let config = LandlordConfig {
            id,
            seed,
            grace,
            expiry_budget: usize::try_from(expiry_budget).unwrap_or(usize::MAX),
            limits,
            journal_clock_interval,
        };
        let clock = r.i64()?;
        let journal_clock = r.i64()?;
        let rng = (r.u64()?, r.u128()?);
        let slots = r.u32()?;
        let nfree = r.count(4)?;
        let mut free = Vec::with_capacity(nfree);
        for _ in 0..nfree {
            free.push(r.u32()?);
        }
        let leases_of = |r: &mut Reader<'_>| -> Result<Vec<(Cookie, Millis, R)>> {
            let n = r.count(25)?;
            let mut v = Vec::with_capacity(n);
            for _ in 0..n {
                let cookie = Cookie(r.u128()?);
                let exp = r.i64()?;
                let len = r.count(1)?;
                v.push((cookie, exp, R::decode(r.take(len)?)?));
            }
            Ok(v)
        };
        let leases = leases_of(&mut r)?;
        let expired = leases_of(&mut r)?;
        let coord = if snap.version == BINARY_SNAPSHOT_VERSION_COORD {
            Some(super::coord::Coord::<R>::read_binary(&mut r)?)
        } else {
            None
        };
        r.finish()?;
        let state = State { config, clock, journal_clock, rng, slots, free, leases, expired };
        let mut ll = Landlord::from_state(state, Box::new(policy))?;
        if let Some(c) = coord {
            ll.install_coord(c, R::encode, R::decode, false)?;
            let config = crate::coord::CoordConfig::new();
            ll.configure_coord(config);
        }
        ll.set_journal(snap.seq, journal_clock);
        Ok(ll)
    }
}
