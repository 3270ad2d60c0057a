//! The lease renewal service (Jini `LeaseRenewalService`): leased renewal sets of client leases,
//! expiration-warning and renewal-failure events, snapshot and restore.

use std::ffi::{c_char, c_void};

use leasehold_core::lease::LandlordId;
use leasehold_core::service::{
    RenewalService, RenewalServiceConfig, ServiceSnapshot, SetEvent, SetEventKind, SetId,
};
use leasehold_core::{LeaseError, RenewalManagerConfig};

use crate::common::{c_string, give_bytes, leasehold_limits};
use crate::error::{
    arg, arg_mut, guard, guard_void, leasehold_status, null, slice, text, Fail, Out, Res,
};
use crate::event::{leasehold_event_registration, leasehold_event_source};
use crate::holder::{
    leasehold_renewal_manager_config, leasehold_renewal_stats, leasehold_transmit_fn,
};
use crate::landlord::LEASEHOLD_SEED_SIZE;
use crate::lease::leasehold_lease;
use crate::policy::leasehold_policy;
use crate::wire::{give_reply, give_request, leasehold_reply, leasehold_request};

/// How a renewal service is set up (opaque): the id and seed of its set-lease landlord, the
/// set-lease policy, the renewal manager's settings, the event restore jump. Copied by
/// `leasehold_renewal_service_new`; free with `leasehold_service_config_free`.
#[allow(non_camel_case_types)]
pub struct leasehold_service_config {
    inner: RenewalServiceConfig,
}

/// The renewal service (opaque). Free with `leasehold_renewal_service_free`. Not to be used
/// from two threads at once; it may move between threads.
#[allow(non_camel_case_types)]
pub struct leasehold_renewal_service {
    inner: RenewalService,
}

/// A client lease's place in a set: until when it is renewed, and for how long each time.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct leasehold_membership {
    /// The desired expiration (FOREVER for never).
    pub expiration: i64,
    /// The renewal duration (positive, FOREVER, or ANY with a FOREVER membership).
    pub renew_duration: i64,
}

/// What a set event reports.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum leasehold_set_event_kind {
    /// The set's lease expires at `expiration`: renew it or lose the set.
    LEASEHOLD_SET_EXPIRATION_WARNING = 1,
    /// A client lease could not be renewed and left the set (`lease`, `error_code`).
    LEASEHOLD_SET_RENEWAL_FAILURE = 2,
}

/// An event of a renewal set, to deliver to the registered listener. From
/// `leasehold_renewal_service_poll_event`, `handback` (free with `leasehold_bytes_free(handback,
/// handback_len)`) and `error_message` (free with `leasehold_string_free`, may be NULL) are the
/// caller's; inside a driver callback they are borrowed for the call.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug)]
pub struct leasehold_set_event {
    /// The registration's event id.
    pub event_id: u64,
    /// Who sent it (the service's landlord id and the set).
    pub source: leasehold_event_source,
    /// Strictly greater than every earlier sequence number of this event id.
    pub sequence: u64,
    /// The registration's handback, byte for byte.
    pub handback: *mut u8,
    /// Length of `handback`.
    pub handback_len: usize,
    /// What happened.
    pub kind: leasehold_set_event_kind,
    /// The set.
    pub set: u64,
    /// EXPIRATION_WARNING: when the set's lease expires (else 0).
    pub expiration: i64,
    /// RENEWAL_FAILURE: the client lease with its last known expiration (else zeroed).
    pub lease: leasehold_lease,
    /// RENEWAL_FAILURE: the last error as a status number, or 0 if the lease simply expired.
    pub error_code: i32,
    /// The error's message, or NULL.
    pub error_message: *mut c_char,
}

/// Delivers one set event to the host (borrowed for the call).
#[allow(non_camel_case_types)]
pub type leasehold_set_event_fn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, event: *const leasehold_set_event)>;

/// Visits one set id. Return 0 to go on, non-zero to stop.
#[allow(non_camel_case_types)]
pub type leasehold_set_visit_fn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, set: u64) -> i32>;

/// Visits one lease. Return 0 to go on, non-zero to stop.
#[allow(non_camel_case_types)]
pub type leasehold_service_lease_visit_fn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, lease: *const leasehold_lease) -> i32>;

/// Visits one event registration. Return 0 to go on, non-zero to stop.
#[allow(non_camel_case_types)]
pub type leasehold_registration_visit_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        registration: *const leasehold_event_registration,
    ) -> i32,
>;

// ---------- config ----------

/// A configuration for a service whose set leases carry landlord id `id`, with the secret
/// cookie seed (`seed_len` = `LEASEHOLD_SEED_SIZE`). Defaults: set leases bounded at 2 h (1 h
/// for ANY), default renewal manager settings, restore jump 2^32.
///
/// # Safety
/// `seed` is NULL or points to `seed_len` bytes; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_service_config_new(
    id: u64,
    seed: *const u8,
    seed_len: usize,
    out: *mut *mut leasehold_service_config,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        if seed.is_null() {
            return Err(null("seed"));
        }
        let s = unsafe { slice(seed, seed_len, "seed") }?;
        let seed: [u8; LEASEHOLD_SEED_SIZE] = s.try_into().map_err(|_| {
            Fail::invalid(format!("seed must be {LEASEHOLD_SEED_SIZE} bytes, got {seed_len}"))
        })?;
        let inner = RenewalServiceConfig::new(LandlordId(id), seed);
        unsafe { out.write(Box::into_raw(Box::new(leasehold_service_config { inner }))) };
        Ok(())
    })
}

/// Sets the policy granting set leases (copied).
///
/// # Safety
/// Pointers are NULL or live.
#[no_mangle]
pub unsafe extern "C" fn leasehold_service_config_set_set_policy(
    config: *mut leasehold_service_config,
    policy: *const leasehold_policy,
) -> leasehold_status {
    guard(|| {
        let c = unsafe { arg_mut(config, "config") }?;
        let p = unsafe { arg(policy, "policy") }?;
        c.inner.set_policy = p.spec.clone();
        Ok(())
    })
}

/// Sets the renewal manager's settings; settings out of range are `INVALID_ARGUMENT`.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_service_config_set_manager(
    config: *mut leasehold_service_config,
    manager: *const leasehold_renewal_manager_config,
) -> leasehold_status {
    guard(|| {
        let c = unsafe { arg_mut(config, "config") }?;
        let m = unsafe { arg(manager, "manager") }?;
        let m = RenewalManagerConfig::from(m);
        m.validate()?;
        c.inner.manager = m;
        Ok(())
    })
}

/// Sets the grace after expiry of set leases, and the decoding limits of set-lease requests
/// (`limits` NULL: the defaults).
///
/// # Safety
/// `config` is NULL or live; `limits` is NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_service_config_set_landlord(
    config: *mut leasehold_service_config,
    grace: i64,
    limits: *const leasehold_limits,
) -> leasehold_status {
    guard(|| {
        let c = unsafe { arg_mut(config, "config") }?;
        c.inner.landlord = c.inner.landlord.clone().with_grace(grace);
        c.inner.landlord.limits = unsafe { crate::common::limits_or_default(limits) };
        Ok(())
    })
}

/// Sets how far event sequence numbers jump on restore.
///
/// # Safety
/// `config` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn leasehold_service_config_set_restore_jump(
    config: *mut leasehold_service_config,
    jump: u64,
) -> leasehold_status {
    guard(|| {
        unsafe { arg_mut(config, "config") }?.inner.restore_jump = jump;
        Ok(())
    })
}

/// Frees a configuration. NULL is ignored.
///
/// # Safety
/// `config` was made by libleasehold and not freed before.
#[no_mangle]
pub unsafe extern "C" fn leasehold_service_config_free(config: *mut leasehold_service_config) {
    guard_void(|| {
        if !config.is_null() {
            drop(unsafe { Box::from_raw(config) });
        }
    })
}

// ---------- the service ----------

fn give_service(inner: RenewalService, out: Out<*mut leasehold_renewal_service>) {
    unsafe { out.write(Box::into_raw(Box::new(leasehold_renewal_service { inner }))) }
}

/// A renewal service with no sets, set up by `config` (copied).
///
/// # Safety
/// `config` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_service_new(
    config: *const leasehold_service_config,
    out: *mut *mut leasehold_renewal_service,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let c = unsafe { arg(config, "config") }?;
        give_service(RenewalService::new(c.inner.clone())?, out);
        Ok(())
    })
}

/// Frees a service (client leases are not cancelled). NULL is ignored.
///
/// # Safety
/// `service` was made by libleasehold and not freed before.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_service_free(service: *mut leasehold_renewal_service) {
    guard_void(|| {
        if !service.is_null() {
            drop(unsafe { Box::from_raw(service) });
        }
    })
}

/// The id of the service's landlord (every set lease carries it).
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_service_id(
    service: *const leasehold_renewal_service,
    out: *mut u64,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        unsafe { out.write(arg(service, "service")?.inner.id().0) };
        Ok(())
    })
}

/// Creates a set whose lease lasts at most `lease_duration` (positive, FOREVER or ANY; the set
/// policy decides): `*out_set` is its id, `*out_lease` its lease.
///
/// # Safety
/// `service` is NULL or live; the outputs are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_service_create_set(
    service: *mut leasehold_renewal_service,
    lease_duration: i64,
    now: i64,
    out_set: *mut u64,
    out_lease: *mut leasehold_lease,
) -> leasehold_status {
    guard(|| {
        let set_out = Out::new(out_set, "out_set")?;
        let lease_out = Out::new(out_lease, "out_lease")?;
        let s = unsafe { arg_mut(service, "service") }?;
        let (set, lease) = s.inner.create_set(lease_duration, now)?;
        unsafe {
            set_out.write(set.0);
            lease_out.write(lease.into());
        }
        Ok(())
    })
}

/// Calls `visit` for every set alive, in creation order, until it returns non-zero.
///
/// # Safety
/// `service` is NULL or live; `visit` is NULL or a valid function not calling into `service`.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_service_for_each_set(
    service: *const leasehold_renewal_service,
    visit: leasehold_set_visit_fn,
    user_data: *mut c_void,
) -> leasehold_status {
    guard(|| {
        let s = unsafe { arg(service, "service") }?;
        let visit = visit.ok_or_else(|| null("visit"))?;
        for set in s.inner.sets() {
            if unsafe { visit(user_data, set.0) } != 0 {
                break;
            }
        }
        Ok(())
    })
}

/// The set's own lease at `now` (`UNKNOWN_LEASE` for a set that is gone).
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_service_set_lease(
    service: *const leasehold_renewal_service,
    set: u64,
    now: i64,
    out: *mut leasehold_lease,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let s = unsafe { arg(service, "service") }?;
        let l = s.inner.set_lease(SetId(set), now).ok_or(LeaseError::UnknownLease)?;
        unsafe { out.write(l.into()) };
        Ok(())
    })
}

/// The set whose lease is `lease`, if alive at `now` (`UNKNOWN_LEASE` otherwise).
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_service_set_of(
    service: *const leasehold_renewal_service,
    lease: *const leasehold_lease,
    now: i64,
    out_set: *mut u64,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out_set, "out_set")?;
        let s = unsafe { arg(service, "service") }?;
        let l = unsafe { arg(lease, "lease") }?.to_core()?;
        let set = s.inner.set_of(&l, now).ok_or(LeaseError::UnknownLease)?;
        unsafe { out.write(set.0) };
        Ok(())
    })
}

/// Adds (or updates) `lease` in `set`: renewed until `membership_duration` from `now`, asking
/// `renew_duration` each time (Jini `renewFor`). ANY only with a FOREVER membership.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_service_add(
    service: *mut leasehold_renewal_service,
    set: u64,
    lease: *const leasehold_lease,
    membership_duration: i64,
    renew_duration: i64,
    now: i64,
) -> leasehold_status {
    guard(|| {
        let s = unsafe { arg_mut(service, "service") }?;
        let l = unsafe { arg(lease, "lease") }?.to_core()?;
        s.inner.add(SetId(set), l, membership_duration, renew_duration, now)?;
        Ok(())
    })
}

/// Takes `lease` out of `set` without cancelling it: `*out_removed` says whether the set held
/// it, and then `*out_lease` (optional) is the lease as last known.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_service_remove(
    service: *mut leasehold_renewal_service,
    set: u64,
    lease: *const leasehold_lease,
    now: i64,
    out_removed: *mut bool,
    out_lease: *mut leasehold_lease,
) -> leasehold_status {
    guard(|| {
        let removed = Out::new(out_removed, "out_removed")?;
        let s = unsafe { arg_mut(service, "service") }?;
        let l = unsafe { arg(lease, "lease") }?.to_core()?;
        match s.inner.remove(SetId(set), &l, now)? {
            Some(got) => unsafe {
                removed.write(true);
                if let Some(o) = Out::optional(out_lease) {
                    o.write(got.into());
                }
            },
            None => unsafe { removed.write(false) },
        }
        Ok(())
    })
}

/// Calls `visit` for every client lease of `set` (as last known) until it returns non-zero.
///
/// # Safety
/// `service` is NULL or live; `visit` is NULL or a valid function not calling into `service`.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_service_for_each_lease(
    service: *const leasehold_renewal_service,
    set: u64,
    now: i64,
    visit: leasehold_service_lease_visit_fn,
    user_data: *mut c_void,
) -> leasehold_status {
    guard(|| {
        let s = unsafe { arg(service, "service") }?;
        let visit = visit.ok_or_else(|| null("visit"))?;
        for l in s.inner.leases(SetId(set), now)? {
            let v: leasehold_lease = l.into();
            if unsafe { visit(user_data, &v) } != 0 {
                break;
            }
        }
        Ok(())
    })
}

/// The membership of `lease` in `set`: `*out_found` says whether the set holds it.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_service_membership(
    service: *const leasehold_renewal_service,
    set: u64,
    lease: *const leasehold_lease,
    now: i64,
    out_found: *mut bool,
    out: *mut leasehold_membership,
) -> leasehold_status {
    guard(|| {
        let found = Out::new(out_found, "out_found")?;
        let out = Out::new(out, "out")?;
        let s = unsafe { arg(service, "service") }?;
        let l = unsafe { arg(lease, "lease") }?.to_core()?;
        match s.inner.membership(SetId(set), &l, now)? {
            Some(m) => unsafe {
                found.write(true);
                out.write(leasehold_membership {
                    expiration: m.expiration,
                    renew_duration: m.renew_duration,
                });
            },
            None => unsafe { found.write(false) },
        }
        Ok(())
    })
}

/// Registers for the set's expiration-warning event, due `min_warning` ms before the set's lease
/// expires, with `handback` (`handback_len` bytes, copied) returned in every event. Replaces an
/// earlier registration of the set (same event id and numbering).
///
/// # Safety
/// `service` is NULL or live; `handback` is NULL or points to `handback_len` bytes; `out` is
/// NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_service_set_expiration_warning_listener(
    service: *mut leasehold_renewal_service,
    set: u64,
    min_warning: i64,
    handback: *const u8,
    handback_len: usize,
    now: i64,
    out: *mut leasehold_event_registration,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let s = unsafe { arg_mut(service, "service") }?;
        let h = unsafe { slice(handback, handback_len, "handback") }?.to_vec();
        let r = s.inner.set_expiration_warning_listener(SetId(set), min_warning, h, now)?;
        unsafe { out.write(r.into()) };
        Ok(())
    })
}

/// Registers for the set's renewal-failure events, with `handback` (copied). Replaces an earlier
/// registration of the set.
///
/// # Safety
/// As `leasehold_renewal_service_set_expiration_warning_listener`.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_service_set_renewal_failure_listener(
    service: *mut leasehold_renewal_service,
    set: u64,
    handback: *const u8,
    handback_len: usize,
    now: i64,
    out: *mut leasehold_event_registration,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let s = unsafe { arg_mut(service, "service") }?;
        let h = unsafe { slice(handback, handback_len, "handback") }?.to_vec();
        let r = s.inner.set_renewal_failure_listener(SetId(set), h, now)?;
        unsafe { out.write(r.into()) };
        Ok(())
    })
}

/// Ends the set's expiration-warning registration, if any.
///
/// # Safety
/// `service` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_service_clear_expiration_warning_listener(
    service: *mut leasehold_renewal_service,
    set: u64,
    now: i64,
) -> leasehold_status {
    guard(|| {
        unsafe { arg_mut(service, "service") }?
            .inner
            .clear_expiration_warning_listener(SetId(set), now)?;
        Ok(())
    })
}

/// Ends the set's renewal-failure registration, if any.
///
/// # Safety
/// `service` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_service_clear_renewal_failure_listener(
    service: *mut leasehold_renewal_service,
    set: u64,
    now: i64,
) -> leasehold_status {
    guard(|| {
        unsafe { arg_mut(service, "service") }?
            .inner
            .clear_renewal_failure_listener(SetId(set), now)?;
        Ok(())
    })
}

/// Reports that the listener of `event_id` answered "unknown event": that registration ends.
/// `*out_was_active` (optional) says whether it was active.
///
/// # Safety
/// `service` is NULL or live; `out_was_active` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_service_unknown_event(
    service: *mut leasehold_renewal_service,
    event_id: u64,
    out_was_active: *mut bool,
) -> leasehold_status {
    guard(|| {
        let was = unsafe { arg_mut(service, "service") }?.inner.unknown_event(event_id);
        if let Some(o) = Out::optional(out_was_active) {
            unsafe { o.write(was) };
        }
        Ok(())
    })
}

/// Calls `visit` for every active registration of `set` (warning first, then failure).
///
/// # Safety
/// `service` is NULL or live; `visit` is NULL or a valid function not calling into `service`.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_service_for_each_registration(
    service: *const leasehold_renewal_service,
    set: u64,
    now: i64,
    visit: leasehold_registration_visit_fn,
    user_data: *mut c_void,
) -> leasehold_status {
    guard(|| {
        let s = unsafe { arg(service, "service") }?;
        let visit = visit.ok_or_else(|| null("visit"))?;
        for r in s.inner.registrations(SetId(set), now)? {
            let v: leasehold_event_registration = r.into();
            if unsafe { visit(user_data, &v) } != 0 {
                break;
            }
        }
        Ok(())
    })
}

/// Answers a request about set leases (renew, cancel, renew_all, cancel_all); a cancelled set
/// is destroyed at once. Free `*out` with `leasehold_reply_free`.
///
/// # Safety
/// `service` and `request` are NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_service_handle_request(
    service: *mut leasehold_renewal_service,
    request: *const leasehold_request,
    now: i64,
    out: *mut *mut leasehold_reply,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let s = unsafe { arg_mut(service, "service") }?;
        let r = unsafe { arg(request, "request") }?;
        give_reply(s.inner.handle_request(&r.inner, now), out);
        Ok(())
    })
}

/// Answers an encoded request about set leases with an encoded reply (free with
/// `leasehold_bytes_free`); an undecodable request gets an error reply.
///
/// # Safety
/// `service` is NULL or live; `request` is NULL or points to `len` bytes; outputs writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_service_handle_bytes(
    service: *mut leasehold_renewal_service,
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
        let s = unsafe { arg_mut(service, "service") }?;
        let b = unsafe { slice(request, len, "request") }?;
        unsafe { give_bytes(s.inner.handle_bytes(b, enc, now), d, n) };
        Ok(())
    })
}

/// When the host should next call `leasehold_renewal_service_handle_timeout`.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_service_poll_timeout(
    service: *const leasehold_renewal_service,
    out_has: *mut bool,
    out_at: *mut i64,
) -> leasehold_status {
    guard(|| {
        let has = Out::new(out_has, "out_has")?;
        let at = Out::new(out_at, "out_at")?;
        match unsafe { arg(service, "service") }?.inner.poll_timeout() {
            Some(t) => unsafe {
                has.write(true);
                at.write(t);
            },
            None => unsafe { has.write(false) },
        }
        Ok(())
    })
}

/// Advances time to `now`: destroys expired sets, ends memberships, issues warnings, renews.
///
/// # Safety
/// `service` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_service_handle_timeout(
    service: *mut leasehold_renewal_service,
    now: i64,
) -> leasehold_status {
    guard(|| {
        unsafe { arg_mut(service, "service") }?.inner.handle_timeout(now);
        Ok(())
    })
}

/// The next renewal request to send to a client lease's landlord (as
/// `leasehold_renewal_manager_poll_transmit`).
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_service_poll_transmit(
    service: *mut leasehold_renewal_service,
    now: i64,
    out_found: *mut bool,
    out_landlord: *mut u64,
    out_request: *mut *mut leasehold_request,
) -> leasehold_status {
    guard(|| {
        let found = Out::new(out_found, "out_found")?;
        let landlord = Out::new(out_landlord, "out_landlord")?;
        let req = Out::new(out_request, "out_request")?;
        match unsafe { arg_mut(service, "service") }?.inner.poll_transmit(now) {
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

/// A landlord's reply to a request from `poll_transmit`.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_service_handle_reply(
    service: *mut leasehold_renewal_service,
    reply: *const leasehold_reply,
    now: i64,
) -> leasehold_status {
    guard(|| {
        let s = unsafe { arg_mut(service, "service") }?;
        let r = unsafe { arg(reply, "reply") }?;
        s.inner.handle_reply(&r.inner, now);
        Ok(())
    })
}

/// An encoded reply (default limits) to a request from `poll_transmit`; `DECODE` if it does not
/// decode (nothing changes).
///
/// # Safety
/// `service` is NULL or live; `data` is NULL or points to `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_service_handle_reply_bytes(
    service: *mut leasehold_renewal_service,
    data: *const u8,
    len: usize,
    encoding: i32,
    now: i64,
) -> leasehold_status {
    guard(|| {
        let enc = crate::common::encoding(encoding)?;
        let s = unsafe { arg_mut(service, "service") }?;
        let b = unsafe { slice(data, len, "data") }?;
        let reply = leasehold_core::Reply::decode(b, enc, &Default::default())?;
        s.inner.handle_reply(&reply, now);
        Ok(())
    })
}

/// Request `request_id` got no reply: `code` (non-zero status number; INDEFINITE is retried)
/// and `message` (`message_len` bytes of UTF-8) say why.
///
/// # Safety
/// `service` is NULL or live; `message` is NULL or points to `message_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_service_handle_failure(
    service: *mut leasehold_renewal_service,
    request_id: u64,
    code: i32,
    message: *const c_char,
    message_len: usize,
    now: i64,
) -> leasehold_status {
    guard(|| {
        let s = unsafe { arg_mut(service, "service") }?;
        let msg = unsafe { text(message, message_len, "message") }?;
        if code == 0 {
            return Err(Fail::invalid("a failure needs a non-zero code"));
        }
        s.inner.handle_failure(request_id, LeaseError::from_code(code, msg), now);
        Ok(())
    })
}

fn set_event_of(e: SetEvent) -> Res<leasehold_set_event> {
    use leasehold_set_event_kind as K;
    let zero = leasehold_lease {
        landlord: 0,
        cookie: Default::default(),
        expiration: 0,
        serial_format: crate::lease::LEASEHOLD_SERIAL_DURATION,
    };
    let (kind, set, expiration, lease, err) = match e.kind {
        SetEventKind::ExpirationWarning { set, expiration } => {
            (K::LEASEHOLD_SET_EXPIRATION_WARNING, set, expiration, zero, None)
        }
        SetEventKind::RenewalFailure { set, lease, error } => {
            (K::LEASEHOLD_SET_RENEWAL_FAILURE, set, 0, lease.into(), error)
        }
    };
    let (error_code, error_message) = match err {
        Some(e) => (e.code() as i32, c_string(e.to_string().replace('\0', " "))?),
        None => (0, std::ptr::null_mut()),
    };
    let b = e.handback.into_boxed_slice();
    let handback_len = b.len();
    let handback = Box::into_raw(b).cast::<u8>();
    Ok(leasehold_set_event {
        event_id: e.event_id,
        source: e.source.into(),
        sequence: e.sequence,
        handback,
        handback_len,
        kind,
        set: set.0,
        expiration,
        lease,
        error_code,
        error_message,
    })
}

unsafe fn free_set_event_fields(e: &leasehold_set_event) {
    unsafe {
        crate::common::leasehold_bytes_free(e.handback, e.handback_len);
        crate::common::leasehold_string_free(e.error_message);
    }
}

/// The next event to deliver: `*out_found` says whether there was one; if so `*out` is filled
/// and its `handback` and `error_message` are the caller's to free.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_service_poll_event(
    service: *mut leasehold_renewal_service,
    out: *mut leasehold_set_event,
    out_found: *mut bool,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let found = Out::new(out_found, "out_found")?;
        match unsafe { arg_mut(service, "service") }?.inner.poll_event() {
            Some(e) => {
                let ev = set_event_of(e)?;
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

/// One turn of the C driver at `now` (as `leasehold_renewal_manager_drive`): handle_timeout,
/// every due request to `transmit`, every event to `on_event` (optional), then when to call
/// again in `*out_has` / `*out_next`.
///
/// # Safety
/// `service` is NULL or live; the callbacks are NULL or valid functions that do not call back
/// into this service; the outputs are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_service_drive(
    service: *mut leasehold_renewal_service,
    now: i64,
    encoding: i32,
    transmit: leasehold_transmit_fn,
    on_event: leasehold_set_event_fn,
    user_data: *mut c_void,
    out_has: *mut bool,
    out_next: *mut i64,
) -> leasehold_status {
    guard(|| {
        let has = Out::new(out_has, "out_has")?;
        let next = Out::new(out_next, "out_next")?;
        let enc = crate::common::encoding(encoding)?;
        let transmit = transmit.ok_or_else(|| null("transmit"))?;
        let s = unsafe { arg_mut(service, "service") }?;
        let at = unsafe {
            crate::holder::drive_turn(&mut s.inner, now, enc, transmit, user_data, |e| {
                let ev = set_event_of(e)?;
                if let Some(cb) = on_event {
                    cb(user_data, &ev);
                }
                free_set_event_fields(&ev);
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

/// The counters of the service's renewal manager.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_service_stats(
    service: *const leasehold_renewal_service,
    out: *mut leasehold_renewal_stats,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let s = unsafe { arg(service, "service") }?.inner.manager().stats();
        unsafe { out.write(crate::holder::stats_of(s)) };
        Ok(())
    })
}

/// Everything the service holds at `now` (sets, memberships, client leases, registrations,
/// pending events), as JSON text for `leasehold_renewal_service_restore`. It contains the
/// set-lease secret: store it like a key. Free `*out` with `leasehold_string_free`.
///
/// # Safety
/// `service` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_service_snapshot(
    service: *const leasehold_renewal_service,
    now: i64,
    out: *mut *mut c_char,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let s = unsafe { arg(service, "service") }?;
        unsafe { out.write(c_string(s.inner.snapshot(now).to_json())?) };
        Ok(())
    })
}

/// A service rebuilt at `now` from `config` (copied) and a snapshot (`len` bytes of JSON).
/// Event sequence numbers jump by the configured restore jump, so listeners see a gap. A
/// snapshot of another version or an inconsistent one is `DECODE`.
///
/// # Safety
/// `config` is NULL or live; `json` is NULL or points to `len` bytes; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_service_restore(
    config: *const leasehold_service_config,
    json: *const c_char,
    len: usize,
    now: i64,
    out: *mut *mut leasehold_renewal_service,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let c = unsafe { arg(config, "config") }?;
        let snap = ServiceSnapshot::from_json(unsafe { text(json, len, "json") }?)?;
        give_service(RenewalService::restore(c.inner.clone(), snap, now)?, out);
        Ok(())
    })
}
