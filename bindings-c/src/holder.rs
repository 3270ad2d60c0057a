//! The holder side: lease maps (Jini `LeaseMap`), the grant helpers, and the renewal manager
//! that keeps leases alive, with a driver that runs it through C callbacks.

use std::ffi::{c_char, c_void};

use leasehold_core::holder::{
    self, LeaseMap, RenewalEvent, RenewalManager, RenewalManagerConfig, Renewer,
};
use leasehold_core::lease::{LandlordId, Lease};
use leasehold_core::LeaseError;

use crate::common::leasehold_cookie;
use crate::error::{
    arg, arg_mut, guard, guard_void, leasehold_status, slice, text, Fail, Out, Res,
};
use crate::lease::leasehold_lease;
use crate::wire::{give_request, leasehold_reply, leasehold_request};

// ---------- grant helpers ----------

/// The holder's lease from a landlord's reply to a grant request it sent at `sent_at` (holder's
/// clock): expiration = `sent_at` + granted, shortened for clocks whose rates may differ by up to
/// `max_drift_ppm` parts per million (0: exactly `sent_at` + granted). An ERROR reply gives its
/// error as the status; a reply of another kind is `DECODE`.
///
/// # Safety
/// `reply` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_lease_from_reply(
    reply: *const leasehold_reply,
    sent_at: i64,
    max_drift_ppm: u32,
    out: *mut leasehold_lease,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let r = unsafe { arg(reply, "reply") }?;
        let l = holder::lease_from_reply_with_drift(&r.inner, sent_at, max_drift_ppm)?;
        unsafe { out.write(l.into()) };
        Ok(())
    })
}

/// The local expiration of a lease granted `granted` ms in reply to a request sent at
/// `sent_at`, allowing for `max_drift_ppm` of clock-rate difference (FOREVER stays FOREVER).
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_local_expiration(
    sent_at: i64,
    granted: i64,
    max_drift_ppm: u32,
    out: *mut i64,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        unsafe { out.write(holder::local_expiration(sent_at, granted, max_drift_ppm)) };
        Ok(())
    })
}

// ---------- failures of a batch ----------

/// Called once per lease that failed in a batch: `user_data` as given, the lease's cookie, its
/// error code (a `leasehold_status` number) and message (borrowed for the call only).
#[allow(non_camel_case_types)]
pub type leasehold_failure_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        cookie: leasehold_cookie,
        code: i32,
        message: *const c_char,
    ),
>;

/// Turns a core error into a status, reporting each per-lease failure of a `LeaseMap` error.
fn report_failures(
    e: LeaseError,
    on_failure: leasehold_failure_fn,
    user_data: *mut c_void,
) -> Fail {
    if let (LeaseError::LeaseMap(failures), Some(cb)) = (&e, on_failure) {
        for f in failures {
            let msg =
                std::ffi::CString::new(f.error.to_string().replace('\0', " ")).unwrap_or_default();
            unsafe { cb(user_data, f.cookie.into(), f.error.code() as i32, msg.as_ptr()) };
        }
    }
    Fail::from(e)
}

// ---------- lease map ----------

/// Leases of one landlord with a renewal duration each (Jini `LeaseMap`), renewed or cancelled
/// together in one request (opaque). Free with `leasehold_lease_map_free`.
#[allow(non_camel_case_types)]
pub struct leasehold_lease_map {
    inner: LeaseMap,
}

/// Visits one lease of a map with its renewal duration. Return 0 to go on, non-zero to stop.
#[allow(non_camel_case_types)]
pub type leasehold_lease_map_visit_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        lease: *const leasehold_lease,
        duration: i64,
    ) -> i32,
>;

/// An empty map, bound to the landlord of the first lease inserted.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_lease_map_new(
    out: *mut *mut leasehold_lease_map,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        unsafe {
            out.write(Box::into_raw(Box::new(leasehold_lease_map { inner: LeaseMap::new() })))
        };
        Ok(())
    })
}

/// An empty map for the leases of `landlord`.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_lease_map_new_for_landlord(
    landlord: u64,
    out: *mut *mut leasehold_lease_map,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let inner = LeaseMap::for_landlord(LandlordId(landlord));
        unsafe { out.write(Box::into_raw(Box::new(leasehold_lease_map { inner }))) };
        Ok(())
    })
}

/// Frees a lease map. NULL is ignored.
///
/// # Safety
/// `map` was made by libleasehold and not freed before.
#[no_mangle]
pub unsafe extern "C" fn leasehold_lease_map_free(map: *mut leasehold_lease_map) {
    guard_void(|| {
        if !map.is_null() {
            drop(unsafe { Box::from_raw(map) });
        }
    })
}

unsafe fn lease_in(p: *const leasehold_lease) -> Res<Lease> {
    unsafe { arg(p, "lease") }?.to_core()
}

/// The landlord whose leases the map holds: `*out_has` is false until it is known.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_lease_map_landlord(
    map: *const leasehold_lease_map,
    out_has: *mut bool,
    out_landlord: *mut u64,
) -> leasehold_status {
    guard(|| {
        let has = Out::new(out_has, "out_has")?;
        let id = Out::new(out_landlord, "out_landlord")?;
        let m = unsafe { arg(map, "map") }?;
        match m.inner.landlord() {
            Some(l) => unsafe {
                has.write(true);
                id.write(l.0);
            },
            None => unsafe { has.write(false) },
        }
        Ok(())
    })
}

/// Jini `canContainKey`: whether `lease` can batch with the leases of the map.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_lease_map_can_contain(
    map: *const leasehold_lease_map,
    lease: *const leasehold_lease,
    out: *mut bool,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let m = unsafe { arg(map, "map") }?;
        let l = unsafe { lease_in(lease) }?;
        unsafe { out.write(m.inner.can_contain_key(&l)) };
        Ok(())
    })
}

/// Adds (or replaces) `lease` with the duration to renew it for. A lease of another landlord or
/// a negative duration other than ANY is `INVALID_ARGUMENT` and leaves the map unchanged.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_lease_map_insert(
    map: *mut leasehold_lease_map,
    lease: *const leasehold_lease,
    duration: i64,
) -> leasehold_status {
    guard(|| {
        let m = unsafe { arg_mut(map, "map") }?;
        let l = unsafe { lease_in(lease) }?;
        m.inner.insert(l, duration)?;
        Ok(())
    })
}

/// Removes `lease` (`UNKNOWN_LEASE` if absent), giving back, optionally, the stored copy and its
/// renewal duration (pass NULL to skip either).
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_lease_map_remove(
    map: *mut leasehold_lease_map,
    lease: *const leasehold_lease,
    out_lease: *mut leasehold_lease,
    out_duration: *mut i64,
) -> leasehold_status {
    guard(|| {
        let m = unsafe { arg_mut(map, "map") }?;
        let l = unsafe { lease_in(lease) }?;
        let (stored, d) = m.inner.remove(&l).ok_or(LeaseError::UnknownLease)?;
        if let Some(o) = Out::optional(out_lease) {
            unsafe { o.write(stored.into()) };
        }
        if let Some(o) = Out::optional(out_duration) {
            unsafe { o.write(d) };
        }
        Ok(())
    })
}

/// The stored copy of `lease` (with its current expiration) and its renewal duration;
/// `UNKNOWN_LEASE` if absent. Either output may be NULL.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_lease_map_get(
    map: *const leasehold_lease_map,
    lease: *const leasehold_lease,
    out_lease: *mut leasehold_lease,
    out_duration: *mut i64,
) -> leasehold_status {
    guard(|| {
        let m = unsafe { arg(map, "map") }?;
        let l = unsafe { lease_in(lease) }?;
        let (stored, d) = m.inner.get(&l).ok_or(LeaseError::UnknownLease)?;
        if let Some(o) = Out::optional(out_lease) {
            unsafe { o.write(stored.into()) };
        }
        if let Some(o) = Out::optional(out_duration) {
            unsafe { o.write(d) };
        }
        Ok(())
    })
}

/// Number of leases in the map.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_lease_map_len(
    map: *const leasehold_lease_map,
    out: *mut usize,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        unsafe { out.write(arg(map, "map")?.inner.len()) };
        Ok(())
    })
}

/// Calls `visit` for every lease (in cookie order) until it returns non-zero. `visit` must not
/// call back into this map.
///
/// # Safety
/// `map` is NULL or live; `visit` is NULL or a valid function.
#[no_mangle]
pub unsafe extern "C" fn leasehold_lease_map_for_each(
    map: *const leasehold_lease_map,
    visit: leasehold_lease_map_visit_fn,
    user_data: *mut c_void,
) -> leasehold_status {
    guard(|| {
        let m = unsafe { arg(map, "map") }?;
        let visit = visit.ok_or_else(|| crate::error::null("visit"))?;
        for (l, d) in m.inner.iter() {
            let v: leasehold_lease = (*l).into();
            if unsafe { visit(user_data, &v, d) } != 0 {
                break;
            }
        }
        Ok(())
    })
}

/// One request renewing every lease of the map for its duration (Jini `renewAll`), with id `id`.
/// The map remembers which leases it names, for `leasehold_lease_map_apply_renew_all`.
///
/// # Safety
/// `map` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_lease_map_renew_all_request(
    map: *mut leasehold_lease_map,
    id: u64,
    out: *mut *mut leasehold_request,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let m = unsafe { arg_mut(map, "map") }?;
        give_request(m.inner.renew_all_request(id), out);
        Ok(())
    })
}

/// One request cancelling every lease of the map (Jini `cancelAll`), with id `id`.
///
/// # Safety
/// `map` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_lease_map_cancel_all_request(
    map: *mut leasehold_lease_map,
    id: u64,
    out: *mut *mut leasehold_request,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let m = unsafe { arg_mut(map, "map") }?;
        give_request(m.inner.cancel_all_request(id), out);
        Ok(())
    })
}

/// Applies the reply to the map's renew_all request, sent at `sent_at` (holder's clock).
/// Renewed leases take `sent_at` + granted. Leases that failed are removed and reported through
/// `on_failure` (optional), and the call returns `LEASE_MAP`. A whole-request error reply, or a
/// reply that does not match the request, changes nothing and is returned as its error.
///
/// # Safety
/// `map` and `reply` are NULL or live; `on_failure` is NULL or a valid function.
#[no_mangle]
pub unsafe extern "C" fn leasehold_lease_map_apply_renew_all(
    map: *mut leasehold_lease_map,
    reply: *const leasehold_reply,
    sent_at: i64,
    on_failure: leasehold_failure_fn,
    user_data: *mut c_void,
) -> leasehold_status {
    guard(|| {
        let m = unsafe { arg_mut(map, "map") }?;
        let r = unsafe { arg(reply, "reply") }?;
        m.inner
            .apply_renew_all(&r.inner, sent_at)
            .map_err(|e| report_failures(e, on_failure, user_data))
    })
}

/// Applies the reply to the map's cancel_all request. Leases whose cancel failed are removed
/// and reported through `on_failure` (optional), and the call returns `LEASE_MAP`; cancelled
/// leases stay in the map, as in Jini.
///
/// # Safety
/// `map` and `reply` are NULL or live; `on_failure` is NULL or a valid function.
#[no_mangle]
pub unsafe extern "C" fn leasehold_lease_map_apply_cancel_all(
    map: *mut leasehold_lease_map,
    reply: *const leasehold_reply,
    on_failure: leasehold_failure_fn,
    user_data: *mut c_void,
) -> leasehold_status {
    guard(|| {
        let m = unsafe { arg_mut(map, "map") }?;
        let r = unsafe { arg(reply, "reply") }?;
        m.inner.apply_cancel_all(&r.inner).map_err(|e| report_failures(e, on_failure, user_data))
    })
}

// ---------- renewal manager ----------

/// How a renewal manager schedules, batches and retries (all times in ms). Start from
/// `leasehold_renewal_manager_config_default` and change what you need.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct leasehold_renewal_manager_config {
    /// Leases of one landlord due within this window join one request (default 5 minutes).
    pub batch_window: i64,
    /// Fraction (0 to 1) of its grant a lease must have used before it joins a batch early
    /// (default 0.25).
    pub batch_join_after: f64,
    /// Most leases in one request; 1 turns batching off (default 10 000).
    pub max_batch: usize,
    /// Round-trip estimate before anything is measured (default 1 s).
    pub initial_rtt: i64,
    /// Smallest request time-out and gap between attempts (default 200 ms).
    pub min_rto: i64,
    /// Largest request time-out (default 60 s).
    pub max_rto: i64,
    /// Attempts that must fit before the actual expiration, time-outs doubling (default 3).
    pub attempts: u32,
    /// Renew when 1/renew_divisor of the grant is left (default 8).
    pub renew_divisor: u32,
    /// Longest wait between retries after indefinite failures (default 60 s).
    pub max_retry_interval: i64,
    /// Clock-rate difference allowed for, in parts per million (default 100).
    pub max_clock_drift_ppm: u32,
    /// Id of the first request; ids then count up (default 1).
    pub first_request_id: u64,
    /// Whether every successful renewal is reported as a RENEWED event (default true).
    pub report_renewals: bool,
}

impl From<&RenewalManagerConfig> for leasehold_renewal_manager_config {
    fn from(c: &RenewalManagerConfig) -> Self {
        leasehold_renewal_manager_config {
            batch_window: c.batch_window,
            batch_join_after: c.batch_join_after,
            max_batch: c.max_batch,
            initial_rtt: c.initial_rtt,
            min_rto: c.min_rto,
            max_rto: c.max_rto,
            attempts: c.attempts,
            renew_divisor: c.renew_divisor,
            max_retry_interval: c.max_retry_interval,
            max_clock_drift_ppm: c.max_clock_drift_ppm,
            first_request_id: c.first_request_id,
            report_renewals: c.report_renewals,
        }
    }
}

impl From<&leasehold_renewal_manager_config> for RenewalManagerConfig {
    fn from(c: &leasehold_renewal_manager_config) -> Self {
        RenewalManagerConfig {
            batch_window: c.batch_window,
            batch_join_after: c.batch_join_after,
            max_batch: c.max_batch,
            initial_rtt: c.initial_rtt,
            min_rto: c.min_rto,
            max_rto: c.max_rto,
            attempts: c.attempts,
            renew_divisor: c.renew_divisor,
            max_retry_interval: c.max_retry_interval,
            max_clock_drift_ppm: c.max_clock_drift_ppm,
            first_request_id: c.first_request_id,
            report_renewals: c.report_renewals,
        }
    }
}

/// Counters of a renewal manager.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct leasehold_renewal_stats {
    /// Requests handed out (renewals and cancels).
    pub requests_sent: u64,
    /// Of those, renewal requests.
    pub renew_requests: u64,
    /// Of those, cancel requests.
    pub cancel_requests: u64,
    /// Successful renewals of single leases.
    pub leases_renewed: u64,
    /// RENEWAL_FAILED events.
    pub failures: u64,
    /// DESIRED_EXPIRATION_REACHED events.
    pub desired_reached: u64,
    /// Indefinite per-lease failures that were retried.
    pub indefinite_failures: u64,
    /// Requests that got no reply within their time-out.
    pub timeouts: u64,
    /// Cancels the landlord confirmed.
    pub leases_cancelled: u64,
    /// Replies ignored (unknown or stale id, other landlord).
    pub replies_ignored: u64,
}

pub(crate) fn stats_of(s: leasehold_core::RenewalStats) -> leasehold_renewal_stats {
    leasehold_renewal_stats {
        requests_sent: s.requests_sent,
        renew_requests: s.renew_requests,
        cancel_requests: s.cancel_requests,
        leases_renewed: s.leases_renewed,
        failures: s.failures,
        desired_reached: s.desired_reached,
        indefinite_failures: s.indefinite_failures,
        timeouts: s.timeouts,
        leases_cancelled: s.leases_cancelled,
        replies_ignored: s.replies_ignored,
    }
}

/// What a renewal event reports.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum leasehold_renewal_event_kind {
    /// The lease could not be kept until its desired expiration; the manager dropped it.
    LEASEHOLD_RENEWAL_FAILED = 1,
    /// The desired expiration came; the manager dropped the lease (it is not cancelled).
    LEASEHOLD_RENEWAL_DESIRED_EXPIRATION_REACHED = 2,
    /// A renewal succeeded; `lease` has the new actual expiration.
    LEASEHOLD_RENEWAL_RENEWED = 3,
}

/// An event of a renewal manager. From `leasehold_renewal_manager_poll_event`, `error_message`
/// is the caller's to free with `leasehold_string_free`; inside a driver callback it is borrowed
/// for the call.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug)]
pub struct leasehold_renewal_event {
    /// What happened.
    pub kind: leasehold_renewal_event_kind,
    /// The lease, with its (last) actual expiration.
    pub lease: leasehold_lease,
    /// When the holder wanted it to end (RENEWAL_FAILED and DESIRED_EXPIRATION_REACHED, else 0).
    pub desired_expiration: i64,
    /// Why it failed, as a status number (RENEWAL_FAILED with a known error), else 0.
    pub error_code: i32,
    /// The error's message, or NULL.
    pub error_message: *mut c_char,
}

/// Keeps leases alive until their desired expirations (opaque), as a sans-I/O state machine:
/// the host sends what `poll_transmit` hands out, feeds replies to `handle_reply`, runs the timer
/// `poll_timeout` asks for, and reads `poll_event`. Free with `leasehold_renewal_manager_free`.
#[allow(non_camel_case_types)]
pub struct leasehold_renewal_manager {
    inner: RenewalManager,
}

/// Hands one request to the host's transport: `user_data` as given, the landlord to send it
/// to, the request id, and the encoded request (borrowed for the call). Return 0 if it was
/// sent (or queued); non-zero reports an indefinite failure of that request to the manager.
#[allow(non_camel_case_types)]
pub type leasehold_transmit_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        landlord: u64,
        request_id: u64,
        data: *const u8,
        len: usize,
    ) -> i32,
>;

/// Delivers one renewal event to the host (borrowed for the call).
#[allow(non_camel_case_types)]
pub type leasehold_renewal_event_fn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, event: *const leasehold_renewal_event)>;

/// Visits one managed lease. Return 0 to go on, non-zero to stop.
#[allow(non_camel_case_types)]
pub type leasehold_lease_visit_fn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, lease: *const leasehold_lease) -> i32>;

/// The default settings.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_manager_config_default(
    out: *mut leasehold_renewal_manager_config,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        unsafe { out.write((&RenewalManagerConfig::default()).into()) };
        Ok(())
    })
}

/// A renewal manager with `config` (NULL: the defaults); settings out of range are
/// `INVALID_ARGUMENT` naming the first bad one.
///
/// # Safety
/// `config` is NULL or valid; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_manager_new(
    config: *const leasehold_renewal_manager_config,
    out: *mut *mut leasehold_renewal_manager,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let c = match unsafe { config.as_ref() } {
            Some(c) => RenewalManagerConfig::from(c),
            None => RenewalManagerConfig::default(),
        };
        let inner = RenewalManager::try_new(c)?;
        unsafe { out.write(Box::into_raw(Box::new(leasehold_renewal_manager { inner }))) };
        Ok(())
    })
}

/// Frees a renewal manager (its leases are not cancelled). NULL is ignored.
///
/// # Safety
/// `manager` was made by libleasehold and not freed before.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_manager_free(manager: *mut leasehold_renewal_manager) {
    guard_void(|| {
        if !manager.is_null() {
            drop(unsafe { Box::from_raw(manager) });
        }
    })
}

/// The settings in force.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_manager_config_get(
    manager: *const leasehold_renewal_manager,
    out: *mut leasehold_renewal_manager_config,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let m = unsafe { arg(manager, "manager") }?;
        unsafe { out.write(m.inner.config().into()) };
        Ok(())
    })
}

/// Renews `lease` until `duration` from `now` (FOREVER: forever), asking for `renew_duration`
/// each time. `lease->expiration` is its actual expiration. A managed lease is replaced.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_manager_renew_for(
    manager: *mut leasehold_renewal_manager,
    lease: *const leasehold_lease,
    duration: i64,
    renew_duration: i64,
    now: i64,
) -> leasehold_status {
    guard(|| {
        let m = unsafe { arg_mut(manager, "manager") }?;
        let l = unsafe { lease_in(lease) }?;
        m.inner.renew_for(l, duration, renew_duration, now)?;
        Ok(())
    })
}

/// Renews `lease` until `desired_expiration` (holder's clock), asking for `renew_duration` each
/// time: positive, FOREVER, or ANY with a FOREVER desired expiration.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_manager_renew_until(
    manager: *mut leasehold_renewal_manager,
    lease: *const leasehold_lease,
    desired_expiration: i64,
    renew_duration: i64,
    now: i64,
) -> leasehold_status {
    guard(|| {
        let m = unsafe { arg_mut(manager, "manager") }?;
        let l = unsafe { lease_in(lease) }?;
        m.inner.renew_until(l, desired_expiration, renew_duration, now)?;
        Ok(())
    })
}

/// Stops managing `lease` (it is not cancelled); `*out_lease` (optional) is the manager's copy
/// with its current actual expiration. `UNKNOWN_LEASE` if not managed.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_manager_remove(
    manager: *mut leasehold_renewal_manager,
    lease: *const leasehold_lease,
    out_lease: *mut leasehold_lease,
) -> leasehold_status {
    guard(|| {
        let m = unsafe { arg_mut(manager, "manager") }?;
        let l = unsafe { lease_in(lease) }?;
        let got = m.inner.remove(&l)?;
        if let Some(o) = Out::optional(out_lease) {
            unsafe { o.write(got.into()) };
        }
        Ok(())
    })
}

/// Stops managing `lease` and queues a cancel request for it (handed out by `poll_transmit`).
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_manager_cancel(
    manager: *mut leasehold_renewal_manager,
    lease: *const leasehold_lease,
    now: i64,
) -> leasehold_status {
    guard(|| {
        let m = unsafe { arg_mut(manager, "manager") }?;
        let l = unsafe { lease_in(lease) }?;
        m.inner.cancel(&l, now)?;
        Ok(())
    })
}

/// The desired expiration of a managed lease.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_manager_expiration(
    manager: *const leasehold_renewal_manager,
    lease: *const leasehold_lease,
    out: *mut i64,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let m = unsafe { arg(manager, "manager") }?;
        let l = unsafe { lease_in(lease) }?;
        unsafe { out.write(m.inner.expiration(&l)?) };
        Ok(())
    })
}

/// Sets the desired expiration of a managed lease.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_manager_set_expiration(
    manager: *mut leasehold_renewal_manager,
    lease: *const leasehold_lease,
    desired_expiration: i64,
    now: i64,
) -> leasehold_status {
    guard(|| {
        let m = unsafe { arg_mut(manager, "manager") }?;
        let l = unsafe { lease_in(lease) }?;
        m.inner.set_expiration(&l, desired_expiration, now)?;
        Ok(())
    })
}

/// The manager's copy of a lease, with its current actual expiration (`UNKNOWN_LEASE` if not
/// managed).
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_manager_lease(
    manager: *const leasehold_renewal_manager,
    lease: *const leasehold_lease,
    out: *mut leasehold_lease,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let m = unsafe { arg(manager, "manager") }?;
        let l = unsafe { lease_in(lease) }?;
        let got = m.inner.lease(&l).ok_or(LeaseError::UnknownLease)?;
        unsafe { out.write(got.into()) };
        Ok(())
    })
}

/// The renew duration of a managed lease.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_manager_renew_duration(
    manager: *const leasehold_renewal_manager,
    lease: *const leasehold_lease,
    out: *mut i64,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let m = unsafe { arg(manager, "manager") }?;
        let l = unsafe { lease_in(lease) }?;
        unsafe { out.write(m.inner.renew_duration(&l)?) };
        Ok(())
    })
}

/// When a managed lease will next be sent for renewal: `*out_has` is false if none is
/// scheduled (a request is in flight, or the actual expiration covers the desired one).
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_manager_next_renewal(
    manager: *const leasehold_renewal_manager,
    lease: *const leasehold_lease,
    out_has: *mut bool,
    out_at: *mut i64,
) -> leasehold_status {
    guard(|| {
        let has = Out::new(out_has, "out_has")?;
        let at = Out::new(out_at, "out_at")?;
        let m = unsafe { arg(manager, "manager") }?;
        let l = unsafe { lease_in(lease) }?;
        match m.inner.next_renewal(&l) {
            Some(t) => unsafe {
                has.write(true);
                at.write(t);
            },
            None => unsafe { has.write(false) },
        }
        Ok(())
    })
}

/// The round-trip estimate of a renewal manager for one landlord.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct leasehold_rtt {
    /// Smoothed round-trip time, ms.
    pub srtt: i64,
    /// Round-trip variation, ms.
    pub rttvar: i64,
    /// Current retransmission time-out, ms.
    pub rto: i64,
    /// Round trips measured.
    pub samples: u64,
}

/// The round-trip estimate for `landlord`: `*out_has` is false until the manager has dealt
/// with it.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_manager_rtt(
    manager: *const leasehold_renewal_manager,
    landlord: u64,
    out_has: *mut bool,
    out: *mut leasehold_rtt,
) -> leasehold_status {
    guard(|| {
        let has = Out::new(out_has, "out_has")?;
        let out = Out::new(out, "out")?;
        match unsafe { arg(manager, "manager") }?.inner.rtt(LandlordId(landlord)) {
            Some(r) => unsafe {
                has.write(true);
                out.write(leasehold_rtt {
                    srtt: r.srtt(),
                    rttvar: r.rttvar(),
                    rto: r.rto(),
                    samples: r.samples(),
                });
            },
            None => unsafe { has.write(false) },
        }
        Ok(())
    })
}

/// Number of leases managed.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_manager_len(
    manager: *const leasehold_renewal_manager,
    out: *mut usize,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        unsafe { out.write(arg(manager, "manager")?.inner.len()) };
        Ok(())
    })
}

/// Calls `visit` for every managed lease (current actual expirations, no particular order)
/// until it returns non-zero. `visit` must not call back into this manager.
///
/// # Safety
/// `manager` is NULL or live; `visit` is NULL or a valid function.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_manager_for_each(
    manager: *const leasehold_renewal_manager,
    visit: leasehold_lease_visit_fn,
    user_data: *mut c_void,
) -> leasehold_status {
    guard(|| {
        let m = unsafe { arg(manager, "manager") }?;
        let visit = visit.ok_or_else(|| crate::error::null("visit"))?;
        for l in m.inner.leases() {
            let v: leasehold_lease = (*l).into();
            if unsafe { visit(user_data, &v) } != 0 {
                break;
            }
        }
        Ok(())
    })
}

/// The counters.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_manager_stats(
    manager: *const leasehold_renewal_manager,
    out: *mut leasehold_renewal_stats,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let s = unsafe { arg(manager, "manager") }?.inner.stats();
        unsafe { out.write(stats_of(s)) };
        Ok(())
    })
}

/// When the host should next call `leasehold_renewal_manager_handle_timeout`: `*out_has` is
/// false if nothing is scheduled.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_manager_poll_timeout(
    manager: *const leasehold_renewal_manager,
    out_has: *mut bool,
    out_at: *mut i64,
) -> leasehold_status {
    guard(|| {
        let has = Out::new(out_has, "out_has")?;
        let at = Out::new(out_at, "out_at")?;
        match unsafe { arg(manager, "manager") }?.inner.poll_timeout() {
            Some(t) => unsafe {
                has.write(true);
                at.write(t);
            },
            None => unsafe { has.write(false) },
        }
        Ok(())
    })
}

/// Advances the manager to `now`: schedules renewals that fell due, times out requests,
/// reports leases whose desired expiration came.
///
/// # Safety
/// `manager` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_manager_handle_timeout(
    manager: *mut leasehold_renewal_manager,
    now: i64,
) -> leasehold_status {
    guard(|| {
        unsafe { arg_mut(manager, "manager") }?.inner.handle_timeout(now);
        Ok(())
    })
}

/// The next request to send: `*out_found` says whether there is one; if so `*out_landlord` is
/// where it goes and `*out_request` the request (free with `leasehold_request_free`). Its
/// `now` is the send time the manager counts from: send it right away.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_manager_poll_transmit(
    manager: *mut leasehold_renewal_manager,
    now: i64,
    out_found: *mut bool,
    out_landlord: *mut u64,
    out_request: *mut *mut leasehold_request,
) -> leasehold_status {
    guard(|| {
        let found = Out::new(out_found, "out_found")?;
        let landlord = Out::new(out_landlord, "out_landlord")?;
        let req = Out::new(out_request, "out_request")?;
        let m = unsafe { arg_mut(manager, "manager") }?;
        match m.inner.poll_transmit(now) {
            Some(t) => {
                unsafe {
                    found.write(true);
                    landlord.write(t.landlord.0);
                }
                give_request(t.request, req);
            }
            None => unsafe { found.write(false) },
        }
        Ok(())
    })
}

/// Takes a landlord's reply (to a request the manager handed out) at `now`. Replies it does not
/// expect are counted and ignored.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_manager_handle_reply(
    manager: *mut leasehold_renewal_manager,
    reply: *const leasehold_reply,
    now: i64,
) -> leasehold_status {
    guard(|| {
        let m = unsafe { arg_mut(manager, "manager") }?;
        let r = unsafe { arg(reply, "reply") }?;
        m.inner.handle_reply(&r.inner, now);
        Ok(())
    })
}

/// Decodes an encoded reply (default limits) and takes it as `handle_reply` does. Bytes that
/// do not decode give `DECODE` and change nothing (the request then times out and is retried).
///
/// # Safety
/// `manager` is NULL or live; `data` is NULL or points to `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_manager_handle_reply_bytes(
    manager: *mut leasehold_renewal_manager,
    data: *const u8,
    len: usize,
    encoding: i32,
    now: i64,
) -> leasehold_status {
    guard(|| {
        let enc = crate::common::encoding(encoding)?;
        let m = unsafe { arg_mut(manager, "manager") }?;
        let b = unsafe { slice(data, len, "data") }?;
        let reply = leasehold_core::Reply::decode(b, enc, &Default::default())?;
        m.inner.handle_reply(&reply, now);
        Ok(())
    })
}

/// Reports that request `request_id` failed in transport at `now`: `code` is a status number
/// (`LEASEHOLD_STATUS_INDEFINITE` for a retryable failure such as a lost connection) and
/// `message` (`message_len` bytes of UTF-8, may be empty) says why.
///
/// # Safety
/// `manager` is NULL or live; `message` is NULL or points to `message_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_manager_handle_failure(
    manager: *mut leasehold_renewal_manager,
    request_id: u64,
    code: i32,
    message: *const c_char,
    message_len: usize,
    now: i64,
) -> leasehold_status {
    guard(|| {
        let m = unsafe { arg_mut(manager, "manager") }?;
        let msg = unsafe { text(message, message_len, "message") }?;
        if code == 0 {
            return Err(Fail::invalid("a failure needs a non-zero code"));
        }
        m.inner.handle_failure(request_id, LeaseError::from_code(code, msg), now);
        Ok(())
    })
}

fn event_of(e: RenewalEvent) -> Res<leasehold_renewal_event> {
    use leasehold_renewal_event_kind as K;
    let (kind, lease, desired, err) = match e {
        RenewalEvent::RenewalFailed { lease, desired_expiration, error } => {
            (K::LEASEHOLD_RENEWAL_FAILED, lease, desired_expiration, error)
        }
        RenewalEvent::DesiredExpirationReached { lease, desired_expiration } => {
            (K::LEASEHOLD_RENEWAL_DESIRED_EXPIRATION_REACHED, lease, desired_expiration, None)
        }
        RenewalEvent::Renewed { lease } => (K::LEASEHOLD_RENEWAL_RENEWED, lease, 0, None),
    };
    let (error_code, error_message) = match err {
        Some(e) => (e.code() as i32, crate::common::c_string(e.to_string().replace('\0', " "))?),
        None => (0, std::ptr::null_mut()),
    };
    Ok(leasehold_renewal_event {
        kind,
        lease: lease.into(),
        desired_expiration: desired,
        error_code,
        error_message,
    })
}

/// The next event: `*out_found` says whether there was one; if so `*out` is filled and its
/// `error_message` (if not NULL) is the caller's to free with `leasehold_string_free`.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_manager_poll_event(
    manager: *mut leasehold_renewal_manager,
    out: *mut leasehold_renewal_event,
    out_found: *mut bool,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let found = Out::new(out_found, "out_found")?;
        let m = unsafe { arg_mut(manager, "manager") }?;
        match m.inner.poll_event() {
            Some(e) => {
                let ev = event_of(e)?;
                unsafe {
                    out.write(ev);
                    found.write(true);
                }
            }
            None => unsafe { found.write(false) },
        }
        Ok(())
    })
}

/// One turn of the C driver at `now`: `handle_timeout(now)`, then every request that is due
/// goes to `transmit` (encoded in `encoding`), then every event to `on_event` (optional: NULL
/// drops them), all on the calling thread. Then `*out_has` / `*out_next` say when to call again
/// (or as soon as a reply arrives: pass it to `handle_reply_bytes`, then drive again).
///
/// # Safety
/// `manager` is NULL or live; the callbacks are NULL or valid functions that do not call back
/// into this manager; the outputs are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_manager_drive(
    manager: *mut leasehold_renewal_manager,
    now: i64,
    encoding: i32,
    transmit: leasehold_transmit_fn,
    on_event: leasehold_renewal_event_fn,
    user_data: *mut c_void,
    out_has: *mut bool,
    out_next: *mut i64,
) -> leasehold_status {
    guard(|| {
        let has = Out::new(out_has, "out_has")?;
        let next = Out::new(out_next, "out_next")?;
        let enc = crate::common::encoding(encoding)?;
        let transmit = transmit.ok_or_else(|| crate::error::null("transmit"))?;
        let m = unsafe { arg_mut(manager, "manager") }?;
        let at = unsafe {
            drive_turn(&mut m.inner, now, enc, transmit, user_data, |e| {
                let ev = event_of(e)?;
                if let Some(cb) = on_event {
                    cb(user_data, &ev);
                }
                crate::common::leasehold_string_free(ev.error_message);
                Ok(())
            })
        }?;
        match at {
            Some(t) => unsafe {
                has.write(true);
                next.write(t);
            },
            None => unsafe { has.write(false) },
        }
        Ok(())
    })
}

/// One turn of a C driver for any renewer (the renewal manager or the renewal service):
/// `handle_timeout(now)`, every due request encoded to `transmit` (a non-zero answer is an
/// indefinite failure of that request), every event to `deliver`; answers when to call again.
///
/// # Safety
/// `transmit` is a valid function; `user_data` is what the caller passed with it.
pub(crate) unsafe fn drive_turn<T: Renewer>(
    inner: &mut T,
    now: i64,
    enc: leasehold_core::Encoding,
    transmit: unsafe extern "C" fn(*mut c_void, u64, u64, *const u8, usize) -> i32,
    user_data: *mut c_void,
    mut deliver: impl FnMut(T::Event) -> Res<()>,
) -> Res<Option<i64>> {
    inner.handle_timeout(now);
    while let Some(t) = inner.poll_transmit(now) {
        let bytes = t.request.encode(enc);
        let rc =
            unsafe { transmit(user_data, t.landlord.0, t.request.id, bytes.as_ptr(), bytes.len()) };
        if rc != 0 {
            let e = LeaseError::Indefinite(format!("the transport callback returned {rc}"));
            inner.handle_failure(t.request.id, e, now);
        }
    }
    while let Some(e) = inner.poll_event() {
        deliver(e)?;
    }
    Ok(inner.poll_timeout())
}
