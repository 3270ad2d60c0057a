//! The grantor: a landlord issuing, renewing, cancelling and expiring leases on resources
//! (opaque byte strings), and answering the wire protocol.

use std::cell::OnceCell;
use std::ffi::{c_char, c_void};

use leasehold_core::lease::{Cookie, LandlordId};
use leasehold_core::store::StoreConfig;
use leasehold_core::wire::Limits;
use leasehold_core::{
    Encoding, Expired, Grant, Landlord, LandlordConfig, LandlordSnapshot, LeaseError, Millis,
    Reply, Request,
};

use crate::common::{c_string, give_bytes, leasehold_cookie, leasehold_limits, take_bytes};
use crate::error::{arg, arg_mut, guard, leasehold_status, null, slice, text, Fail, Out, Res};
use crate::handle::{self, give, give_box, opaque, read, write, Handle};
use crate::lease::leasehold_lease;
use crate::policy::leasehold_policy;
use crate::sansio::{self, CEvent, Component, Machine};

/// Length of a landlord's cookie seed in bytes.
pub const LEASEHOLD_SEED_SIZE: usize = 32;

/// How a landlord is set up (opaque): id, secret seed, grace, expiry budget, limits.
/// A landlord copies it when made; the caller frees it with `leasehold_landlord_config_free`.
#[allow(non_camel_case_types)]
pub struct leasehold_landlord_config {
    pub(crate) inner: LandlordConfig,
    /// How a durable landlord's store rotates and compacts its log.
    pub(crate) store: StoreConfig,
}

/// A landlord (opaque): in memory (`leasehold_landlord_new`, `_restore`) or durable, kept in a
/// store (`leasehold_landlord_open_dir`, `leasehold_landlord_open_io`). Free with
/// `leasehold_landlord_free`. Not to be used from two threads at once; it may move between
/// threads (for many threads and group commit, see `leasehold_shared_landlord`).
#[allow(non_camel_case_types)]
pub struct leasehold_landlord {
    h: Handle<LandlordState>,
}
opaque!(leasehold_landlord, LandlordState, "landlord", "landlord");

/// What a landlord handle owns: the core's landlord and, for a durable one, its store.
pub(crate) type LandlordState = crate::store::Kept<Landlord<Vec<u8>>>;

impl Machine for LandlordState {
    type Event = Expired<Vec<u8>>;
    fn poll_timeout(&self) -> Option<Millis> {
        self.state.poll_timeout()
    }
    fn handle_timeout(&mut self, now: Millis) {
        self.state.handle_timeout(now)
    }
    fn poll_event(&mut self) -> Option<Expired<Vec<u8>>> {
        self.state.poll_expired()
    }
}

impl sansio::Answers for LandlordState {
    fn handle_request(&mut self, request: &Request, now: Millis) -> Reply {
        self.state.handle_request(request, now)
    }
    fn handle_bytes(&mut self, bytes: &[u8], encoding: Encoding, now: Millis) -> Vec<u8> {
        self.state.handle_bytes(bytes, encoding, now)
    }
}

impl Component for leasehold_landlord {
    type Event = leasehold_expired;
}

/// The answer to a grant.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct leasehold_grant {
    /// The new lease's cookie.
    pub cookie: leasehold_cookie,
    /// Granted duration in ms (never more than requested, unless ANY was requested).
    pub duration: i64,
    /// Expiration on the landlord's clock.
    pub expiration: i64,
}

impl From<Grant> for leasehold_grant {
    fn from(g: Grant) -> Self {
        leasehold_grant { cookie: g.cookie.into(), duration: g.duration, expiration: g.expiration }
    }
}

/// One lease of a batch renewal: which lease, and for how long.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct leasehold_renewal {
    /// The lease.
    pub cookie: leasehold_cookie,
    /// Requested duration in ms (or `LEASEHOLD_ANY`, `LEASEHOLD_FOREVER`).
    pub duration: i64,
}

/// One lease's outcome in a batch: a status, and the granted duration when it is OK.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct leasehold_batch_result {
    /// `LEASEHOLD_STATUS_OK` or why this lease failed (read from a reply, a code unknown to this
    /// build, sent by a newer peer, reads as `LEASEHOLD_STATUS_DECODE`).
    pub status: leasehold_status,
    /// Granted duration in ms when `status` is OK (renewals), else 0.
    pub duration: i64,
}

/// A lease that expired, handed back with its resource. `resource` is owned by the caller:
/// free it with `leasehold_bytes_free(resource, resource_len)`.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug)]
pub struct leasehold_expired {
    /// The lease.
    pub cookie: leasehold_cookie,
    /// When it expired (before grace), on the landlord's clock.
    pub expiration: i64,
    /// What it was for.
    pub resource: *mut u8,
    /// Length of `resource`.
    pub resource_len: usize,
}

/// Visits one lease of a landlord: `user_data` as given, the lease's cookie, expiration and
/// resource (borrowed for the call only). Return 0 to go on, anything else to stop.
#[allow(non_camel_case_types)]
pub type leasehold_landlord_visit_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        cookie: leasehold_cookie,
        expiration: i64,
        resource: *const u8,
        resource_len: usize,
    ) -> i32,
>;

// ---------- config ----------

/// A configuration with landlord id `id` and the secret cookie seed (`seed_len` must be
/// `LEASEHOLD_SEED_SIZE`; supply real entropy). Defaults: no grace, 10 000 expiries per
/// `handle_timeout`, default limits.
///
/// # Safety
/// `seed` is NULL or points to `seed_len` readable bytes; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_landlord_config_new(
    id: u64,
    seed: *const u8,
    seed_len: usize,
    out: *mut *mut leasehold_landlord_config,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let seed = unsafe { seed_arg(seed, seed_len) }?;
        give_box(
            leasehold_landlord_config {
                inner: LandlordConfig::new(LandlordId(id), seed),
                store: StoreConfig::default(),
            },
            out,
        );
        Ok(())
    })
}

/// A cookie seed from a pointer and a length that must be `LEASEHOLD_SEED_SIZE`.
///
/// # Safety
/// `seed` is NULL or points to `seed_len` readable bytes.
pub(crate) unsafe fn seed_arg(seed: *const u8, seed_len: usize) -> Res<[u8; LEASEHOLD_SEED_SIZE]> {
    if seed.is_null() {
        return Err(null("seed"));
    }
    let s = unsafe { slice(seed, seed_len, "seed") }?;
    s.try_into().map_err(|_| {
        Fail::invalid(format!("seed must be {LEASEHOLD_SEED_SIZE} bytes, got {seed_len}"))
    })
}

/// Sets the grace after expiry during which a lease is still honoured (clock skew); negative
/// values count as 0.
///
/// # Safety
/// `config` is NULL or a live configuration.
#[no_mangle]
pub unsafe extern "C" fn leasehold_landlord_config_set_grace(
    config: *mut leasehold_landlord_config,
    grace: i64,
) -> leasehold_status {
    guard(|| {
        let c = unsafe { arg_mut(config, "config") }?;
        c.inner = c.inner.clone().with_grace(grace);
        Ok(())
    })
}

/// Sets the most expired leases handled per `leasehold_landlord_handle_timeout` (at least 1).
///
/// # Safety
/// `config` is NULL or a live configuration.
#[no_mangle]
pub unsafe extern "C" fn leasehold_landlord_config_set_expiry_budget(
    config: *mut leasehold_landlord_config,
    budget: usize,
) -> leasehold_status {
    guard(|| {
        let c = unsafe { arg_mut(config, "config") }?;
        if budget == 0 {
            return Err(Fail::invalid("expiry budget must be at least 1"));
        }
        c.inner.expiry_budget = budget;
        Ok(())
    })
}

/// Sets the limits for decoding requests and for batches (NULL restores the defaults).
///
/// # Safety
/// `config` is NULL or a live configuration; `limits` is NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_landlord_config_set_limits(
    config: *mut leasehold_landlord_config,
    limits: *const leasehold_limits,
) -> leasehold_status {
    guard(|| {
        let c = unsafe { arg_mut(config, "config") }?;
        c.inner.limits = unsafe { crate::common::limits_or_default(limits) };
        Ok(())
    })
}

/// Sets how a durable landlord's store keeps its log (used by `leasehold_landlord_open_dir`,
/// `_open_io` and `leasehold_shared_landlord_open_dir`): a log segment that reaches
/// `segment_bytes` is closed and a new one started (default 64 MiB); the log is compacted (a new
/// snapshot, the old segments removed) once it is larger than both `min_compact_bytes` (default
/// 4 MiB) and the snapshot. Small values suit small devices and tests.
///
/// # Safety
/// `config` is NULL or a live configuration.
#[no_mangle]
pub unsafe extern "C" fn leasehold_landlord_config_set_store(
    config: *mut leasehold_landlord_config,
    segment_bytes: u64,
    min_compact_bytes: u64,
) -> leasehold_status {
    guard(|| {
        let c = unsafe { arg_mut(config, "config") }?;
        if segment_bytes == 0 {
            return Err(Fail::invalid("segment_bytes must be at least 1"));
        }
        c.store = StoreConfig { segment_bytes, min_compact_bytes };
        Ok(())
    })
}

/// Sets how long, at most, a durable landlord holding leases goes without journaling the time
/// (default 1000 ms; 0 turns these clock records off). After a crash, a lease whose holder died
/// lives on at most its remaining time at the crash plus this interval once the landlord is
/// back (time spent down does not count: see `leasehold_landlord_open_dir`).
///
/// # Safety
/// `config` is NULL or a live configuration.
#[no_mangle]
pub unsafe extern "C" fn leasehold_landlord_config_set_journal_clock_interval(
    config: *mut leasehold_landlord_config,
    interval: i64,
) -> leasehold_status {
    guard(|| {
        let c = unsafe { arg_mut(config, "config") }?;
        if interval < 0 {
            return Err(Fail::invalid(format!("interval must not be negative, got {interval}")));
        }
        c.inner.journal_clock_interval = interval;
        Ok(())
    })
}

/// Frees a configuration. NULL is ignored.
///
/// # Safety
/// `config` was made by libleasehold and not freed before.
#[no_mangle]
pub unsafe extern "C" fn leasehold_landlord_config_free(config: *mut leasehold_landlord_config) {
    unsafe { handle::free_box(config) }
}

// ---------- landlord ----------

/// A landlord set up by `config` granting by `policy` (both copied; the caller still frees them).
///
/// # Safety
/// `config` and `policy` are NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_landlord_new(
    config: *const leasehold_landlord_config,
    policy: *const leasehold_policy,
    out: *mut *mut leasehold_landlord,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let c = unsafe { arg(config, "config") }?;
        let p = unsafe { arg(policy, "policy") }?;
        give(LandlordState::memory(Landlord::new(c.inner.clone(), p.spec.build()?)), out);
        Ok(())
    })
}

/// Frees a landlord and every lease it holds. NULL is ignored. Inside a callback that this
/// landlord's `for_each` (or a store callback of its commit) is running, the landlord is freed
/// when that call returns, makes no further callbacks, and answers any other call with `BUSY`.
/// A durable landlord writes nothing here: what was not committed goes, as in a crash (commit
/// first for a clean shutdown); its directory's lock is released.
///
/// # Safety
/// `landlord` was made by libleasehold and not freed before.
#[no_mangle]
pub unsafe extern "C" fn leasehold_landlord_free(landlord: *mut leasehold_landlord) {
    unsafe { handle::free(landlord) }
}

/// This landlord's id.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_landlord_id(
    landlord: *const leasehold_landlord,
    out: *mut u64,
) -> leasehold_status {
    unsafe { handle::get(landlord, out, |l| Ok(l.id().0)) }
}

/// Leases held, including any past expiration that no `handle_timeout` has swept yet.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_landlord_len(
    landlord: *const leasehold_landlord,
    out: *mut usize,
) -> leasehold_status {
    unsafe { handle::get(landlord, out, |l| Ok(l.len())) }
}

/// Expired leases swept by `handle_timeout` and waiting for `leasehold_landlord_poll_expired`.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_landlord_expired_len(
    landlord: *const leasehold_landlord,
    out: *mut usize,
) -> leasehold_status {
    unsafe { handle::get(landlord, out, |l| Ok(l.expired_len())) }
}

/// Heap bytes held by the landlord's tables (not counting the resources themselves).
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_landlord_heap_bytes(
    landlord: *const leasehold_landlord,
    out: *mut usize,
) -> leasehold_status {
    unsafe { handle::get(landlord, out, |l| Ok(l.heap_bytes())) }
}

/// Grants a lease on `resource` (`resource_len` bytes, copied; may be empty) for at most
/// `requested` ms (or `LEASEHOLD_ANY` / `LEASEHOLD_FOREVER`) at `now`.
///
/// # Safety
/// `landlord` is NULL or live; `resource` is NULL or points to `resource_len` readable bytes;
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_landlord_grant(
    landlord: *mut leasehold_landlord,
    resource: *const u8,
    resource_len: usize,
    requested: i64,
    now: i64,
    out: *mut leasehold_grant,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let r = unsafe { slice(resource, resource_len, "resource") }?;
        let g = unsafe { write(landlord, |l| Ok(l.grant(r.to_vec(), requested, now)?)) }?;
        unsafe { out.write(g.into()) };
        Ok(())
    })
}

/// Renews a lease for at most `requested` ms from `now`; `*out_granted` is the granted duration.
/// A denied renewal leaves the lease as it was.
///
/// # Safety
/// `landlord` is NULL or live; `out_granted` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_landlord_renew(
    landlord: *mut leasehold_landlord,
    cookie: leasehold_cookie,
    requested: i64,
    now: i64,
    out_granted: *mut i64,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out_granted, "out_granted")?;
        let d = unsafe { write(landlord, |l| Ok(l.renew(cookie.into(), requested, now)?)) }?;
        unsafe { out.write(d) };
        Ok(())
    })
}

/// Cancels a lease. Its resource is handed back in `*out_resource` / `*out_resource_len` (free with
/// `leasehold_bytes_free`); pass NULL for both to drop it.
///
/// # Safety
/// `landlord` is NULL or live; the outputs are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_landlord_cancel(
    landlord: *mut leasehold_landlord,
    cookie: leasehold_cookie,
    now: i64,
    out_resource: *mut *mut u8,
    out_resource_len: *mut usize,
) -> leasehold_status {
    guard(|| {
        let outs = optional_bytes(out_resource, out_resource_len)?;
        let r = unsafe { write(landlord, |l| Ok(l.cancel(cookie.into(), now)?)) }?;
        if let Some((d, n)) = outs {
            unsafe { give_bytes(r, d, n) };
        }
        Ok(())
    })
}

/// Both or neither of an optional byte output pair.
fn optional_bytes(data: *mut *mut u8, len: *mut usize) -> Res<Option<(Out<*mut u8>, Out<usize>)>> {
    match (Out::optional(data), Out::optional(len)) {
        (Some(d), Some(n)) => Ok(Some((d, n))),
        (None, None) => Ok(None),
        _ => Err(Fail::new(
            leasehold_status::LEASEHOLD_STATUS_NULL_ARGUMENT,
            "a resource output and its length must both be given or both be NULL",
        )),
    }
}

/// Checks a batch size against the landlord's limits.
pub(crate) fn check_batch(count: usize, limits: &Limits) -> Res {
    if count > limits.max_batch {
        return Err(Fail::invalid(format!(
            "batch of {count} leases is more than the {} allowed",
            limits.max_batch
        )));
    }
    Ok(())
}

/// The common part of `renew_all` and `cancel_all`: checks the size against the landlord's
/// limits, then `items` and `results`, runs `run`, writes one result per lease (the granted
/// duration of a renewal, else 0), and answers `LEASE_MAP` if any failed.
///
/// # Safety
/// `landlord` is NULL or live; `items` and `results` are NULL or point to `count` elements.
unsafe fn batch<I, T: BatchOk>(
    landlord: *mut leasehold_landlord,
    items: *const I,
    count: usize,
    name: &str,
    results: *mut leasehold_batch_result,
    run: impl FnOnce(&mut Landlord<Vec<u8>>, &[I]) -> Vec<Result<T, LeaseError>>,
) -> Res {
    let limits = unsafe { read(landlord, |l| Ok(l.config().limits)) }?;
    check_batch(count, &limits)?;
    let items = unsafe { slice(items, count, name) }?;
    if count > 0 && results.is_null() {
        return Err(null("results"));
    }
    let outcomes = unsafe { write(landlord, |l| Ok(run(l, items))) }?;
    let out: Vec<leasehold_batch_result> = outcomes
        .into_iter()
        .map(|r| match r {
            Ok(v) => leasehold_batch_result {
                status: leasehold_status::LEASEHOLD_STATUS_OK,
                duration: v.duration(),
            },
            Err(e) => leasehold_batch_result {
                status: leasehold_status::from_code(e.code()),
                duration: 0,
            },
        })
        .collect();
    if count > 0 {
        unsafe { std::ptr::copy_nonoverlapping(out.as_ptr(), results, count) };
    }
    let failed = out.iter().filter(|r| r.status != leasehold_status::LEASEHOLD_STATUS_OK).count();
    if failed > 0 {
        return Err(Fail::new(
            leasehold_status::LEASEHOLD_STATUS_LEASE_MAP,
            format!("{failed} of {count} lease(s) of the batch failed"),
        ));
    }
    Ok(())
}

/// What a batch result carries for a lease that succeeded.
trait BatchOk {
    fn duration(&self) -> i64;
}

impl BatchOk for i64 {
    fn duration(&self) -> i64 {
        *self
    }
}

impl BatchOk for Vec<u8> {
    fn duration(&self) -> i64 {
        0
    }
}

/// Renews `count` leases at `now`; `results` (room for `count`, caller-owned) gets one outcome
/// per lease, in order. Returns OK if all succeeded, `LEASE_MAP` if some failed (the results say
/// which; the others were renewed), `INVALID_ARGUMENT` without touching any lease if `count` is
/// above the landlord's `max_batch`.
///
/// # Safety
/// `landlord` is NULL or live; `items` and `results` are NULL or point to `count` elements.
#[no_mangle]
pub unsafe extern "C" fn leasehold_landlord_renew_all(
    landlord: *mut leasehold_landlord,
    items: *const leasehold_renewal,
    count: usize,
    now: i64,
    results: *mut leasehold_batch_result,
) -> leasehold_status {
    guard(|| unsafe {
        batch(landlord, items, count, "items", results, |l, items| {
            let items: Vec<(Cookie, i64)> =
                items.iter().map(|i| (i.cookie.into(), i.duration)).collect();
            l.renew_all(&items, now)
        })
    })
}

/// Cancels `count` leases at `now` (their resources are dropped); `results` (room for `count`)
/// gets one outcome per lease. Status as for `leasehold_landlord_renew_all`.
///
/// # Safety
/// `landlord` is NULL or live; `cookies` and `results` are NULL or point to `count` elements.
#[no_mangle]
pub unsafe extern "C" fn leasehold_landlord_cancel_all(
    landlord: *mut leasehold_landlord,
    cookies: *const leasehold_cookie,
    count: usize,
    now: i64,
    results: *mut leasehold_batch_result,
) -> leasehold_status {
    guard(|| unsafe {
        batch(landlord, cookies, count, "cookies", results, |l, cookies| {
            let cookies: Vec<Cookie> = cookies.iter().map(|&c| c.into()).collect();
            l.cancel_all(&cookies, now)
        })
    })
}

/// The expiration (landlord's clock) and optionally a copy of the resource of a lease still
/// honoured at `now`; `UNKNOWN_LEASE` otherwise. Pass NULL for both resource outputs to skip it.
///
/// # Safety
/// `landlord` is NULL or live; the outputs are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_landlord_get(
    landlord: *const leasehold_landlord,
    cookie: leasehold_cookie,
    now: i64,
    out_expiration: *mut i64,
    out_resource: *mut *mut u8,
    out_resource_len: *mut usize,
) -> leasehold_status {
    guard(|| {
        let exp = Out::new(out_expiration, "out_expiration")?;
        let outs = optional_bytes(out_resource, out_resource_len)?;
        let want = outs.is_some();
        let (e, r) = unsafe {
            read(landlord, |l| {
                let (e, r) = l.get(cookie.into(), now).ok_or(LeaseError::UnknownLease)?;
                Ok((e, want.then(|| r.clone())))
            })
        }?;
        if let (Some((d, n)), Some(r)) = (outs, r) {
            unsafe { give_bytes(r, d, n) };
        }
        unsafe { exp.write(e) };
        Ok(())
    })
}

/// The holder's view of a lease still honoured at `now` (expiration on the landlord's clock);
/// `UNKNOWN_LEASE` otherwise.
///
/// # Safety
/// `landlord` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_landlord_lease(
    landlord: *const leasehold_landlord,
    cookie: leasehold_cookie,
    now: i64,
    out: *mut leasehold_lease,
) -> leasehold_status {
    unsafe {
        handle::get(landlord, out, |l| {
            Ok(l.lease(cookie.into(), now).ok_or(LeaseError::UnknownLease)?.into())
        })
    }
}

/// Calls `visit` for every lease held when the call starts (in no particular order) until it
/// returns non-zero. The visit runs over a copy: `visit` may call anything on this landlord
/// (grant, cancel, ... take effect at once but do not change what this call visits); freeing
/// the landlord ends the visit.
///
/// # Safety
/// `landlord` is NULL or live; `visit` is NULL or a valid function.
#[no_mangle]
pub unsafe extern "C" fn leasehold_landlord_for_each(
    landlord: *const leasehold_landlord,
    visit: leasehold_landlord_visit_fn,
    user_data: *mut c_void,
) -> leasehold_status {
    guard(|| {
        let visit = visit.ok_or_else(|| null("visit"))?;
        // One buffer for every resource, so a copy costs two allocations, not one per lease.
        let buf = OnceCell::new();
        let collect = |l: &LandlordState| {
            let (mut items, mut bytes) = (Vec::with_capacity(l.len()), Vec::new());
            for (c, e, r) in l.iter() {
                items.push((leasehold_cookie::from(c), e, bytes.len(), r.len()));
                bytes.extend_from_slice(r);
            }
            let _ = buf.set(bytes);
            Ok(items)
        };
        unsafe {
            handle::for_each(landlord, collect, |&(c, e, at, n)| {
                let r = buf.get().map_or(&[][..], |b: &Vec<u8>| &b[at..at + n]);
                visit(user_data, c, e, r.as_ptr(), n)
            })
        }
    })
}

/// When the host should next call `leasehold_landlord_handle_timeout`: `*out_has` is false if
/// nothing will expire, else `*out_at` is the time (ms, landlord's clock).
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_landlord_poll_timeout(
    landlord: *const leasehold_landlord,
    out_has: *mut bool,
    out_at: *mut i64,
) -> leasehold_status {
    unsafe { sansio::poll_timeout(landlord, out_has, out_at) }
}

/// Advances expiry to `now`: expired leases are removed and queued for
/// `leasehold_landlord_poll_expired` (at most the configured budget per call).
///
/// # Safety
/// `landlord` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn leasehold_landlord_handle_timeout(
    landlord: *mut leasehold_landlord,
    now: i64,
) -> leasehold_status {
    unsafe { sansio::handle_timeout(landlord, now) }
}

/// The next expired lease found by `handle_timeout`: `*out_found` says whether there was one;
/// if so `*out` is filled and its `resource` is the caller's to free.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_landlord_poll_expired(
    landlord: *mut leasehold_landlord,
    out: *mut leasehold_expired,
    out_found: *mut bool,
) -> leasehold_status {
    unsafe { sansio::poll_event(landlord, out, out_found) }
}

/// Answers one encoded request message (`len` bytes in `encoding`, `LEASEHOLD_ENCODING_JSON` or
/// `LEASEHOLD_ENCODING_BINARY`) with an encoded reply in the same encoding, to free with
/// `leasehold_bytes_free`. An undecodable request still gets a reply (an error reply with id 0):
/// only bad arguments make this call fail.
///
/// # Safety
/// `landlord` is NULL or live; `request` is NULL or points to `len` bytes; outputs writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_landlord_handle_bytes(
    landlord: *mut leasehold_landlord,
    request: *const u8,
    len: usize,
    encoding: i32,
    now: i64,
    out_reply: *mut *mut u8,
    out_reply_len: *mut usize,
) -> leasehold_status {
    unsafe { sansio::answer_bytes(landlord, request, len, encoding, now, out_reply, out_reply_len) }
}

// ---------- snapshot and restore ----------

/// Everything the landlord holds at `now` (leases with their time left, the expired ones not yet
/// polled, the cookie generator's position), as JSON text to store and give back to
/// `leasehold_landlord_restore`. It contains the cookie secret: store it like a key. Free `*out`
/// with `leasehold_string_free`.
///
/// # Safety
/// `landlord` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_landlord_snapshot(
    landlord: *const leasehold_landlord,
    now: i64,
    out: *mut *mut c_char,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let s = unsafe { read(landlord, |l| Ok(serde_json::to_string(&l.snapshot(now)))) }?
            .map_err(|e| Fail::invalid(format!("snapshot is not representable as JSON: {e}")))?;
        unsafe { out.write(c_string(s)?) };
        Ok(())
    })
}

/// A landlord rebuilt at `now` from a snapshot (`len` bytes of JSON) and `policy` (policies are
/// code, not data: supply it again; it is copied). Every lease keeps its cookie and the time it
/// had left, counted from `now`; no cookie is ever issued twice. A snapshot of another version or
/// an inconsistent one is `DECODE`.
///
/// # Safety
/// `json` is NULL or points to `len` bytes; `policy` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_landlord_restore(
    json: *const c_char,
    len: usize,
    policy: *const leasehold_policy,
    now: i64,
    out: *mut *mut leasehold_landlord,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let s = unsafe { text(json, len, "json") }?;
        let p = unsafe { arg(policy, "policy") }?;
        let snap: LandlordSnapshot<Vec<u8>> = serde_json::from_str(s).map_err(|e| {
            Fail::new(leasehold_status::LEASEHOLD_STATUS_DECODE, format!("landlord snapshot: {e}"))
        })?;
        give(LandlordState::memory(Landlord::restore(snap, p.spec.build()?, now)?), out);
        Ok(())
    })
}

impl CEvent for leasehold_expired {
    type Core = Expired<Vec<u8>>;
    fn convert(e: Expired<Vec<u8>>) -> Res<leasehold_expired> {
        let (resource, resource_len) = take_bytes(e.resource);
        Ok(leasehold_expired {
            cookie: e.cookie.into(),
            expiration: e.expiration,
            resource,
            resource_len,
        })
    }
    unsafe fn free_fields(&self) {
        unsafe { crate::common::leasehold_bytes_free(self.resource, self.resource_len) }
    }
}
