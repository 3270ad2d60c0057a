//! The holder side: lease maps (Jini `LeaseMap`), the grant helpers, and the renewal manager
//! that keeps leases alive: a `leasehold_machine` of kind `"RenewalManager"` (every call through
//! the machine interface), with the typed calls a host's loop uses and a driver that runs it
//! through C callbacks.

use std::ffi::{c_char, c_void};

use leasehold_core::holder::ManagerOptions;
use leasehold_core::holder::{self, LeaseMap, RenewalEvent, RenewalManager, RenewalManagerConfig};
use leasehold_core::lease::{LandlordId, Lease};
use leasehold_core::machine::Machine;
use leasehold_core::{LeaseError, Reply};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::common::{self, c_string, leasehold_cookie};
use crate::error::{arg, guard, leasehold_status, null, slice, Fail, Maybe, Out, Res};
use crate::handle::{self, give, opaque, read, write, Call, Handle, Opaque};
use crate::lease::leasehold_lease;
use crate::machine::{give_part, leasehold_machine, InMemory};
use crate::sansio::CEvent;
use crate::wire::{leasehold_reply, leasehold_request, request_out};

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
    unsafe { Out::put(out_lease, stored.into()) };
    unsafe { Out::put(out_duration, d) };
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
    unsafe { request_out(out, || write(map, |m| Ok(m.renew_all_request(id)))) }
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
    unsafe { request_out(out, || write(map, |m| Ok(m.cancel_all_request(id)))) }
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
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
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

/// Counters of a renewal manager.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, Deserialize)]
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

/// An event of a renewal manager, as `leasehold_renewal_manager_drive` delivers it (borrowed for
/// the callback, `error_message` too; `leasehold_machine_poll_event` gives the same as JSON).
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

/// Most rounds one `_drive` call makes (see `leasehold_renewal_manager_drive`): a round hands
/// out every request and event queued when it starts; callbacks that queue more get further
/// rounds, up to this many, after which the call asks to be called again at once.
pub const LEASEHOLD_DRIVE_MAX_ROUNDS: u32 = 16;

/// Keeps leases alive until their desired expirations: a `leasehold_machine` of kind
/// `"RenewalManager"`, so every machine call works on it (`leasehold_machine_handle` with
/// `{"op": "renew_until" | "remove" | "expiration" | "set_expiration" | "lease" |
/// "renew_duration" | "next_renewal" | "rtt" | "size" | "leases" | "stats" | "config" | "reply" |
/// "failure", ...}`, `_poll_timeout`, `_handle_timeout`, `_poll_transmit`, `_poll_event`,
/// `_snapshot`). The `leasehold_renewal_manager_*` calls are the typed ones a host's loop uses.
/// Free with `leasehold_renewal_manager_free` or `leasehold_machine_free`.
#[allow(non_camel_case_types)]
pub type leasehold_renewal_manager = leasehold_machine;

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

/// Runs `f` on the renewal manager inside the machine `m` (another kind is `INVALID_ARGUMENT`).
///
/// # Safety
/// `m` is NULL or live.
unsafe fn with<R>(m: *mut Mgr, f: impl FnOnce(&mut RenewalManager) -> Res<R>) -> Res<R> {
    unsafe { write(m, |s| f(s.typed()?)) }
}

type Mgr = leasehold_renewal_manager;

/// A core value as the C struct of the same fields, or back: through their data form.
fn recast<A: Serialize, B: DeserializeOwned>(a: &A) -> Res<B> {
    let v = serde_json::to_value(a).and_then(serde_json::from_value);
    v.map_err(|e| Fail::invalid(format!("settings: {e}")))
}

/// Runs `f` on the renewal manager of a driver's call (nothing else borrowed meanwhile).
fn on<R>(call: &Call<Mgr>, f: impl FnOnce(&mut RenewalManager) -> R) -> Res<R> {
    call.with_mut(|s| Ok(f(s.typed()?)))
}

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
        unsafe { out.write(recast(&RenewalManagerConfig::default())?) };
        Ok(())
    })
}

/// A renewal manager with `config` (NULL: the defaults); settings out of range are
/// `INVALID_ARGUMENT` naming the first bad one. The same as `leasehold_machine_new` of kind
/// `"RenewalManager"` with these settings as JSON options.
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
        let o = unsafe { config.as_ref() }.map(recast::<_, ManagerOptions>).transpose()?;
        give_part(Box::new(InMemory(RenewalManager::create(o, [0; 32])?)), out);
        Ok(())
    })
}

/// Frees a renewal manager (its leases are not cancelled): `leasehold_machine_free`.
///
/// # Safety
/// `manager` was made by libleasehold and not freed before.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_manager_free(manager: *mut leasehold_renewal_manager) {
    unsafe { handle::free(manager) }
}

/// Renews `lease` until `duration` from `now` (FOREVER: forever), asking for `renew_duration`
/// each time. `lease->expiration` is its actual expiration. A managed lease is replaced.
/// (`renew_until` and the other calls: `leasehold_machine_handle`.)
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
    guard(|| unsafe {
        with(manager, |m| Ok(m.renew_for(lease_in(lease)?, duration, renew_duration, now)?))
    })
}

/// Stops managing `lease` and queues a cancel request for it (handed out by the driver).
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_manager_cancel(
    manager: *mut leasehold_renewal_manager,
    lease: *const leasehold_lease,
    now: i64,
) -> leasehold_status {
    guard(|| unsafe { with(manager, |m| Ok(m.cancel(&lease_in(lease)?, now)?)) })
}

/// The manager's copy of a lease, with its current actual expiration (`UNKNOWN_LEASE` if not
/// managed).
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_manager_lease(
    manager: *mut leasehold_renewal_manager,
    lease: *const leasehold_lease,
    out: *mut leasehold_lease,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let l = unsafe { with(manager, |m| Ok(m.lease(&lease_in(lease)?))) }?;
        unsafe { out.write(l.ok_or(LeaseError::UnknownLease)?.into()) };
        Ok(())
    })
}

/// The counters.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_manager_stats(
    manager: *mut leasehold_renewal_manager,
    out: *mut leasehold_renewal_stats,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        unsafe { out.write(recast(&with(manager, |m| Ok(m.stats()))?)?) };
        Ok(())
    })
}

/// Decodes an encoded reply (default limits) and takes it at `now`. Replies the manager does
/// not expect are counted and ignored; bytes that do not decode give `DECODE` and change
/// nothing (the request then times out and is retried).
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
        let enc = common::encoding(encoding)?;
        let reply = Reply::decode(unsafe { slice(data, len, "data") }?, enc, &Default::default())?;
        unsafe {
            with(manager, |m| {
                m.handle_reply(&reply, now);
                Ok(())
            })
        }
    })
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
        let (error_code, error_message) = match err {
            Some(e) => (e.code() as i32, c_string(e.to_string().replace('\0', " "))?),
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
    unsafe fn free_fields(&self) {
        unsafe { crate::common::leasehold_string_free(self.error_message) }
    }
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
#[allow(clippy::too_many_arguments)]
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
        let out = Maybe::new(out_has, "out_has", out_next, "out_next")?;
        let enc = common::encoding(encoding)?;
        let transmit = transmit.ok_or_else(|| null("transmit"))?;
        let call = unsafe { Call::enter(manager) }?;
        on(&call, |m| m.handle_timeout(now))?;
        let mut next = Some(now);
        for _ in 0..LEASEHOLD_DRIVE_MAX_ROUNDS {
            let (mut sends, mut events) = (Vec::new(), Vec::new());
            on(&call, |m| {
                while let Some(t) = m.poll_transmit(now) {
                    sends.push((t.landlord.0, t.request.id, t.request.encode(enc)));
                }
                events.extend(std::iter::from_fn(|| m.poll_event()));
            })?;
            if sends.is_empty() && events.is_empty() {
                next = on(&call, |m| m.poll_timeout())?;
                break;
            }
            for (landlord, id, bytes) in &sends {
                if call.freed() {
                    break;
                }
                let rc =
                    unsafe { transmit(user_data, *landlord, *id, bytes.as_ptr(), bytes.len()) };
                if rc != 0 && !call.freed() {
                    let e = LeaseError::Indefinite(format!("the transport callback returned {rc}"));
                    on(&call, |m| m.handle_failure(*id, e, now))?;
                }
            }
            for e in events {
                if call.freed() {
                    break;
                }
                let ev = leasehold_renewal_event::convert(e)?;
                if let Some(cb) = on_event {
                    unsafe { cb(user_data, &ev) };
                }
                unsafe { ev.free_fields() };
            }
            if call.freed() {
                next = None;
                break;
            }
        }
        unsafe { out.write(next) };
        Ok(())
    })
}
