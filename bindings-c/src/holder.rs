//! The holder side: lease maps (Jini `LeaseMap`), the grant helpers, and the renewal manager
//! that keeps leases alive, with a driver that runs it through C callbacks.

use std::ffi::{c_char, c_void};

use leasehold_core::holder::{self, LeaseMap, RenewalEvent, RenewalManager, RenewalManagerConfig};
use leasehold_core::lease::{LandlordId, Lease};
use leasehold_core::LeaseError;

use crate::common::{c_string, leasehold_cookie};
use crate::error::{arg, guard, leasehold_status, null, Fail, Out, Res};
use crate::handle::{self, give, opaque, read, write, Call, Handle, Opaque};
use crate::lease::leasehold_lease;
use crate::sansio::{self, CEvent, Component};
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

/// Turns a core error into a status, reporting each per-lease failure of a `LeaseMap` error
/// (nothing of the handle borrowed; a callback that frees the handle ends the reports).
fn report_failures<H: Opaque>(
    call: &Call<H>,
    e: LeaseError,
    on_failure: leasehold_failure_fn,
    user_data: *mut c_void,
) -> Fail {
    if let (LeaseError::LeaseMap(failures), Some(cb)) = (&e, on_failure) {
        for f in failures {
            if call.freed() {
                break;
            }
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
    h: Handle<LeaseMap>,
}
opaque!(leasehold_lease_map, LeaseMap, "map", "lease map");

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
        give(LeaseMap::new(), Out::new(out, "out")?);
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
        give(LeaseMap::for_landlord(LandlordId(landlord)), Out::new(out, "out")?);
        Ok(())
    })
}

/// Frees a lease map. NULL is ignored. Inside a callback that one of this map's calls is
/// running (a visitor, a failure report), the map is freed when that call returns, the call
/// makes no further callbacks, and any other call on the map is `BUSY`.
///
/// # Safety
/// `map` was made by libleasehold and not freed before.
#[no_mangle]
pub unsafe extern "C" fn leasehold_lease_map_free(map: *mut leasehold_lease_map) {
    unsafe { handle::free(map) }
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
    unsafe {
        handle::get_maybe(map, out_has, out_landlord, ["out_has", "out_landlord"], |m| {
            Ok(m.landlord().map(|l| l.0))
        })
    }
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
    unsafe { handle::get(map, out, |m| Ok(m.can_contain_key(&lease_in(lease)?))) }
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
    unsafe { handle::change(map, |m| Ok(m.insert(lease_in(lease)?, duration)?)) }
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
        let l = unsafe { lease_in(lease) }?;
        let found = unsafe { write(map, |m| Ok(m.remove(&l))) }?;
        unsafe { entry_out(found, out_lease, out_duration) }
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
        let l = unsafe { lease_in(lease) }?;
        let found = unsafe { read(map, |m| Ok(m.get(&l))) }?;
        unsafe { entry_out(found, out_lease, out_duration) }
    })
}

/// A map entry to its two optional outputs; `UNKNOWN_LEASE` if there is none.
///
/// # Safety
/// The outputs are NULL or writable.
unsafe fn entry_out(
    found: Option<(Lease, i64)>,
    out_lease: *mut leasehold_lease,
    out_duration: *mut i64,
) -> Res {
    let (stored, d) = found.ok_or(LeaseError::UnknownLease)?;
    if let Some(o) = Out::optional(out_lease) {
        unsafe { o.write(stored.into()) };
    }
    if let Some(o) = Out::optional(out_duration) {
        unsafe { o.write(d) };
    }
    Ok(())
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
    unsafe { handle::get(map, out, |m| Ok(m.len())) }
}

/// Calls `visit` for every lease in the map when the call starts (in cookie order) until it
/// returns non-zero. The visit runs over a copy: `visit` may call anything on this map (an
/// insert or remove takes effect at once but does not change what this call visits); freeing
/// the map ends the visit.
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
        let visit = visit.ok_or_else(|| null("visit"))?;
        let collect = |m: &LeaseMap| Ok(m.iter().map(|(l, d)| ((*l).into(), d)).collect());
        unsafe {
            handle::for_each(map, collect, |(l, d): &(leasehold_lease, i64)| {
                visit(user_data, l, *d)
            })
        }
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
        give_request(unsafe { write(map, |m| Ok(m.renew_all_request(id))) }?, out);
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
        give_request(unsafe { write(map, |m| Ok(m.cancel_all_request(id))) }?, out);
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
        let call = unsafe { Call::enter(map) }?;
        let r = unsafe { arg(reply, "reply") }?;
        let res = call.with_mut(|m| Ok(m.apply_renew_all(&r.inner, sent_at)))?;
        res.map_err(|e| report_failures(&call, e, on_failure, user_data))
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
        let call = unsafe { Call::enter(map) }?;
        let r = unsafe { arg(reply, "reply") }?;
        let res = call.with_mut(|m| Ok(m.apply_cancel_all(&r.inner)))?;
        res.map_err(|e| report_failures(&call, e, on_failure, user_data))
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
    h: Handle<RenewalManager>,
}
opaque!(leasehold_renewal_manager, RenewalManager, "manager", "renewal manager");

impl Component for leasehold_renewal_manager {
    type Event = leasehold_renewal_event;
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
        give(RenewalManager::try_new(c)?, out);
        Ok(())
    })
}

/// Frees a renewal manager (its leases are not cancelled). NULL is ignored. Inside a callback
/// that one of this manager's calls is running (`drive`, `for_each`), the manager is freed
/// when that call returns, the call makes no further callbacks, and any other call on the
/// manager is `BUSY`.
///
/// # Safety
/// `manager` was made by libleasehold and not freed before.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_manager_free(manager: *mut leasehold_renewal_manager) {
    unsafe { handle::free(manager) }
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
    unsafe { handle::get(manager, out, |m| Ok(m.config().into())) }
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
    unsafe {
        handle::change(manager, |m| {
            Ok(m.renew_for(lease_in(lease)?, duration, renew_duration, now)?)
        })
    }
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
    unsafe {
        handle::change(manager, |m| {
            Ok(m.renew_until(lease_in(lease)?, desired_expiration, renew_duration, now)?)
        })
    }
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
        let l = unsafe { lease_in(lease) }?;
        let got = unsafe { write(manager, |m| Ok(m.remove(&l)?)) }?;
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
    unsafe { handle::change(manager, |m| Ok(m.cancel(&lease_in(lease)?, now)?)) }
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
    unsafe { handle::get(manager, out, |m| Ok(m.expiration(&lease_in(lease)?)?)) }
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
    unsafe {
        handle::change(manager, |m| {
            Ok(m.set_expiration(&lease_in(lease)?, desired_expiration, now)?)
        })
    }
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
    unsafe {
        handle::get(manager, out, |m| {
            Ok(m.lease(&lease_in(lease)?).ok_or(LeaseError::UnknownLease)?.into())
        })
    }
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
    unsafe { handle::get(manager, out, |m| Ok(m.renew_duration(&lease_in(lease)?)?)) }
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
    unsafe {
        handle::get_maybe(manager, out_has, out_at, ["out_has", "out_at"], |m| {
            Ok(m.next_renewal(&lease_in(lease)?))
        })
    }
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
    unsafe {
        handle::get_maybe(manager, out_has, out, ["out_has", "out"], |m| {
            Ok(m.rtt(LandlordId(landlord)).map(|r| leasehold_rtt {
                srtt: r.srtt(),
                rttvar: r.rttvar(),
                rto: r.rto(),
                samples: r.samples(),
            }))
        })
    }
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
    unsafe { handle::get(manager, out, |m| Ok(m.len())) }
}

/// Calls `visit` for every lease managed when the call starts (current actual expirations, no
/// particular order) until it returns non-zero. The visit runs over a copy: `visit` may call
/// anything on this manager (changes take effect at once but do not change what this call
/// visits); freeing the manager ends the visit.
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
        let visit = visit.ok_or_else(|| null("visit"))?;
        let collect = |m: &RenewalManager| Ok(m.leases().map(|&l| l.into()).collect());
        unsafe { handle::for_each(manager, collect, |l: &leasehold_lease| visit(user_data, l)) }
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
    unsafe { handle::get(manager, out, |m| Ok(stats_of(m.stats()))) }
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
    unsafe { sansio::poll_timeout(manager, out_has, out_at) }
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
    unsafe { sansio::handle_timeout(manager, now) }
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
    unsafe { sansio::poll_transmit(manager, now, out_found, out_landlord, out_request) }
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
    unsafe { sansio::handle_reply(manager, reply, now) }
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
    unsafe { sansio::handle_reply_bytes(manager, data, len, encoding, now) }
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
    unsafe { sansio::handle_failure(manager, request_id, code, message, message_len, now) }
}

impl CEvent for leasehold_renewal_event {
    type Core = RenewalEvent;
    fn convert(e: RenewalEvent) -> Res<leasehold_renewal_event> {
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
        let (error_code, error_message) = error_parts(err)?;
        Ok(leasehold_renewal_event {
            kind,
            lease: lease.into(),
            desired_expiration: desired,
            error_code,
            error_message,
        })
    }
    unsafe fn free_fields(&self) {
        unsafe { crate::common::leasehold_string_free(self.error_message) }
    }
}

/// An optional error as an event carries it: its status number (0 for none) and its message
/// (NULL for none), the message to free with `leasehold_string_free`.
pub(crate) fn error_parts(e: Option<LeaseError>) -> Res<(i32, *mut c_char)> {
    Ok(match e {
        Some(e) => (e.code() as i32, c_string(e.to_string().replace('\0', " "))?),
        None => (0, std::ptr::null_mut()),
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
    unsafe { sansio::poll_event(manager, out, out_found) }
}

/// One turn of the C driver at `now`: `handle_timeout(now)`, then every request that is due
/// goes to `transmit` (encoded in `encoding`), then every event to `on_event` (optional: NULL
/// drops them), all on the calling thread. Then `*out_has` / `*out_next` say when to call again
/// (or as soon as a reply arrives: pass it to `handle_reply_bytes`, then drive again).
///
/// The callbacks run with nothing of the manager borrowed, so they may call back into it: read
/// it, change it, hand it a reply (`handle_reply_bytes` inside `transmit`, for an in-process
/// landlord), even drive it. What they queue goes out in further rounds of this call, up to
/// `LEASEHOLD_DRIVE_MAX_ROUNDS`; if work is left after that, `*out_next` is `now` (call again at
/// once). A callback may free the manager: no further callback runs, the manager goes when this
/// call returns, and the call answers OK with `*out_has` false.
///
/// # Safety
/// `manager` is NULL or live; the callbacks are NULL or valid functions; the outputs are NULL or
/// writable.
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
    unsafe {
        sansio::drive(manager, now, encoding, transmit, on_event, user_data, out_has, out_next)
    }
}
