//! The grantor: a landlord issuing, renewing, cancelling and expiring leases on resources
//! (opaque byte strings), and answering the wire protocol.

use std::ffi::{c_char, c_void};

use leasehold_core::lease::{Cookie, LandlordId};
use leasehold_core::wire::Limits;
use leasehold_core::{Landlord, LandlordConfig, LandlordSnapshot};

use crate::common::{c_string, give_bytes, leasehold_cookie, leasehold_limits};
use crate::error::{
    arg, arg_mut, guard, guard_void, leasehold_status, slice, text, Fail, Out, Res,
};
use crate::lease::leasehold_lease;
use crate::policy::leasehold_policy;

/// Length of a landlord's cookie seed in bytes.
pub const LEASEHOLD_SEED_SIZE: usize = 32;

/// How a landlord is set up (opaque): id, secret seed, grace, expiry budget, limits.
/// A landlord copies it when made; the caller frees it with `leasehold_landlord_config_free`.
#[allow(non_camel_case_types)]
pub struct leasehold_landlord_config {
    pub(crate) inner: LandlordConfig,
}

/// A landlord (opaque). Free with `leasehold_landlord_free`. Not to be used from two threads at
/// once; it may move between threads.
#[allow(non_camel_case_types)]
pub struct leasehold_landlord {
    pub(crate) inner: Landlord<Vec<u8>>,
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
    /// `LEASEHOLD_STATUS_OK` or why this lease failed.
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
        if seed.is_null() {
            return Err(crate::error::null("seed"));
        }
        let s = unsafe { slice(seed, seed_len, "seed") }?;
        let seed: [u8; LEASEHOLD_SEED_SIZE] = s.try_into().map_err(|_| {
            Fail::invalid(format!("seed must be {LEASEHOLD_SEED_SIZE} bytes, got {seed_len}"))
        })?;
        let inner = LandlordConfig::new(LandlordId(id), seed);
        unsafe { out.write(Box::into_raw(Box::new(leasehold_landlord_config { inner }))) };
        Ok(())
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

/// Frees a configuration. NULL is ignored.
///
/// # Safety
/// `config` was made by libleasehold and not freed before.
#[no_mangle]
pub unsafe extern "C" fn leasehold_landlord_config_free(config: *mut leasehold_landlord_config) {
    guard_void(|| {
        if !config.is_null() {
            drop(unsafe { Box::from_raw(config) });
        }
    })
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
        let inner = Landlord::new(c.inner.clone(), p.spec.build()?);
        unsafe { out.write(Box::into_raw(Box::new(leasehold_landlord { inner }))) };
        Ok(())
    })
}

/// Frees a landlord and every lease it holds. NULL is ignored.
///
/// # Safety
/// `landlord` was made by libleasehold and not freed before.
#[no_mangle]
pub unsafe extern "C" fn leasehold_landlord_free(landlord: *mut leasehold_landlord) {
    guard_void(|| {
        if !landlord.is_null() {
            drop(unsafe { Box::from_raw(landlord) });
        }
    })
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
    guard(|| {
        let out = Out::new(out, "out")?;
        let l = unsafe { arg(landlord, "landlord") }?;
        unsafe { out.write(l.inner.id().0) };
        Ok(())
    })
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
    guard(|| {
        let out = Out::new(out, "out")?;
        let l = unsafe { arg(landlord, "landlord") }?;
        unsafe { out.write(l.inner.len()) };
        Ok(())
    })
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
        let l = unsafe { arg_mut(landlord, "landlord") }?;
        let r = unsafe { slice(resource, resource_len, "resource") }?;
        let g = l.inner.grant(r.to_vec(), requested, now)?;
        let g = leasehold_grant {
            cookie: g.cookie.into(),
            duration: g.duration,
            expiration: g.expiration,
        };
        unsafe { out.write(g) };
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
        let l = unsafe { arg_mut(landlord, "landlord") }?;
        let d = l.inner.renew(cookie.into(), requested, now)?;
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
        let l = unsafe { arg_mut(landlord, "landlord") }?;
        let r = l.inner.cancel(cookie.into(), now)?;
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

fn batch_status(results: &[leasehold_batch_result]) -> Res {
    let failed =
        results.iter().filter(|r| r.status != leasehold_status::LEASEHOLD_STATUS_OK).count();
    if failed > 0 {
        return Err(Fail::new(
            leasehold_status::LEASEHOLD_STATUS_LEASE_MAP,
            format!("{failed} of {} lease(s) of the batch failed", results.len()),
        ));
    }
    Ok(())
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
    guard(|| {
        let l = unsafe { arg_mut(landlord, "landlord") }?;
        check_batch(count, &l.inner.config().limits)?;
        let items = unsafe { slice(items, count, "items") }?;
        if count > 0 && results.is_null() {
            return Err(crate::error::null("results"));
        }
        let items: Vec<(Cookie, i64)> =
            items.iter().map(|i| (i.cookie.into(), i.duration)).collect();
        let out: Vec<leasehold_batch_result> = l
            .inner
            .renew_all(&items, now)
            .into_iter()
            .map(|r| match r {
                Ok(d) => leasehold_batch_result {
                    status: leasehold_status::LEASEHOLD_STATUS_OK,
                    duration: d,
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
        batch_status(&out)
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
    guard(|| {
        let l = unsafe { arg_mut(landlord, "landlord") }?;
        check_batch(count, &l.inner.config().limits)?;
        let cookies = unsafe { slice(cookies, count, "cookies") }?;
        if count > 0 && results.is_null() {
            return Err(crate::error::null("results"));
        }
        let cookies: Vec<Cookie> = cookies.iter().map(|&c| c.into()).collect();
        let out: Vec<leasehold_batch_result> = l
            .inner
            .cancel_all(&cookies, now)
            .into_iter()
            .map(|r| leasehold_batch_result {
                status: match r {
                    Ok(_) => leasehold_status::LEASEHOLD_STATUS_OK,
                    Err(e) => leasehold_status::from_code(e.code()),
                },
                duration: 0,
            })
            .collect();
        if count > 0 {
            unsafe { std::ptr::copy_nonoverlapping(out.as_ptr(), results, count) };
        }
        batch_status(&out)
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
        let l = unsafe { arg(landlord, "landlord") }?;
        let (e, r) =
            l.inner.get(cookie.into(), now).ok_or(leasehold_core::LeaseError::UnknownLease)?;
        if let Some((d, n)) = outs {
            unsafe { give_bytes(r.clone(), d, n) };
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
    guard(|| {
        let out = Out::new(out, "out")?;
        let l = unsafe { arg(landlord, "landlord") }?;
        let lease =
            l.inner.lease(cookie.into(), now).ok_or(leasehold_core::LeaseError::UnknownLease)?;
        unsafe { out.write(lease.into()) };
        Ok(())
    })
}

/// Calls `visit` for every lease held (in no particular order) until it returns non-zero.
/// `visit` must not call back into this landlord.
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
        let l = unsafe { arg(landlord, "landlord") }?;
        let visit = visit.ok_or_else(|| crate::error::null("visit"))?;
        for (c, e, r) in l.inner.iter() {
            if unsafe { visit(user_data, c.into(), e, r.as_ptr(), r.len()) } != 0 {
                break;
            }
        }
        Ok(())
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
    guard(|| {
        let has = Out::new(out_has, "out_has")?;
        let at = Out::new(out_at, "out_at")?;
        let l = unsafe { arg(landlord, "landlord") }?;
        match l.inner.poll_timeout() {
            Some(t) => unsafe {
                has.write(true);
                at.write(t);
            },
            None => unsafe { has.write(false) },
        }
        Ok(())
    })
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
    guard(|| {
        unsafe { arg_mut(landlord, "landlord") }?.inner.handle_timeout(now);
        Ok(())
    })
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
    guard(|| {
        let out = Out::new(out, "out")?;
        let found = Out::new(out_found, "out_found")?;
        let l = unsafe { arg_mut(landlord, "landlord") }?;
        match l.inner.poll_expired() {
            Some(e) => {
                let b = e.resource.into_boxed_slice();
                let resource_len = b.len();
                let resource = Box::into_raw(b).cast::<u8>();
                unsafe {
                    out.write(leasehold_expired {
                        cookie: e.cookie.into(),
                        expiration: e.expiration,
                        resource,
                        resource_len,
                    });
                    found.write(true);
                }
            }
            None => unsafe { found.write(false) },
        }
        Ok(())
    })
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
    guard(|| {
        let d = Out::new(out_reply, "out_reply")?;
        let n = Out::new(out_reply_len, "out_reply_len")?;
        let enc = crate::common::encoding(encoding)?;
        let l = unsafe { arg_mut(landlord, "landlord") }?;
        let b = unsafe { slice(request, len, "request") }?;
        let reply = l.inner.handle_bytes(b, enc, now);
        unsafe { give_bytes(reply, d, n) };
        Ok(())
    })
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
        let l = unsafe { arg(landlord, "landlord") }?;
        let s = serde_json::to_string(&l.inner.snapshot(now))
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
        let inner = Landlord::restore(snap, p.spec.build()?, now)?;
        unsafe { out.write(Box::into_raw(Box::new(leasehold_landlord { inner }))) };
        Ok(())
    })
}
