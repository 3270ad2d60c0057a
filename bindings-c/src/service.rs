//! The lease renewal service (Jini `LeaseRenewalService`): leased renewal sets of client leases,
//! expiration-warning and renewal-failure events, snapshot and restore.

use std::ffi::{c_char, c_void};

use leasehold_core::lease::{LandlordId, Lease};
use leasehold_core::service::{
    RenewalService, RenewalServiceConfig, ServiceSnapshot, SetEvent, SetEventKind, SetId,
};
use leasehold_core::{LeaseError, RenewalManagerConfig};

use crate::common::{c_string, leasehold_limits, take_bytes};
use crate::error::{arg, arg_mut, guard, leasehold_status, null, slice, text, Out, Res};
use crate::event::{leasehold_event_registration, leasehold_event_source};
use crate::handle::{self, give, give_box, opaque, read, write, Handle};
use crate::holder::{
    error_parts, leasehold_renewal_manager_config, leasehold_renewal_stats, leasehold_transmit_fn,
};
use crate::landlord::seed_arg;
use crate::lease::leasehold_lease;
use crate::policy::leasehold_policy;
use crate::sansio::{self, CEvent, Component};
use crate::wire::{leasehold_reply, leasehold_request};

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
    h: Handle<RenewalService>,
}
opaque!(leasehold_renewal_service, RenewalService, "service", "renewal service");

impl Component for leasehold_renewal_service {
    type Event = leasehold_set_event;
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
        let seed = unsafe { seed_arg(seed, seed_len) }?;
        let inner = RenewalServiceConfig::new(LandlordId(id), seed);
        give_box(leasehold_service_config { inner }, out);
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
    unsafe { handle::free_box(config) }
}

// ---------- the service ----------

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
        give(RenewalService::new(c.inner.clone())?, out);
        Ok(())
    })
}

/// Frees a service (client leases are not cancelled). NULL is ignored. Inside a callback that
/// one of this service's calls is running (`drive`, a `for_each_*`), the service is freed when
/// that call returns, the call makes no further callbacks, and any other call on the service
/// is `BUSY`.
///
/// # Safety
/// `service` was made by libleasehold and not freed before.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_service_free(service: *mut leasehold_renewal_service) {
    unsafe { handle::free(service) }
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
    unsafe { handle::get(service, out, |s| Ok(s.id().0)) }
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
        let (set, lease) = unsafe { write(service, |s| Ok(s.create_set(lease_duration, now)?)) }?;
        unsafe {
            set_out.write(set.0);
            lease_out.write(lease.into());
        }
        Ok(())
    })
}

/// Calls `visit` for every set alive when the call starts, in creation order, until it returns
/// non-zero. The visit runs over a copy: `visit` may call anything on this service (changes do
/// not change what this call visits); freeing the service ends the visit.
///
/// # Safety
/// `service` is NULL or live; `visit` is NULL or a valid function.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_service_for_each_set(
    service: *const leasehold_renewal_service,
    visit: leasehold_set_visit_fn,
    user_data: *mut c_void,
) -> leasehold_status {
    guard(|| {
        let visit = visit.ok_or_else(|| null("visit"))?;
        let collect = |s: &RenewalService| Ok(s.sets());
        unsafe { handle::for_each(service, collect, |set: &SetId| visit(user_data, set.0)) }
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
    unsafe {
        handle::get(service, out, |s| {
            Ok(s.set_lease(SetId(set), now).ok_or(LeaseError::UnknownLease)?.into())
        })
    }
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
        let l = unsafe { arg(lease, "lease") }?.to_core()?;
        let set =
            unsafe { read(service, |s| Ok(s.set_of(&l, now))) }?.ok_or(LeaseError::UnknownLease)?;
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
    unsafe {
        handle::change(service, |s| {
            let l = arg(lease, "lease")?.to_core()?;
            Ok(s.add(SetId(set), l, membership_duration, renew_duration, now)?)
        })
    }
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
        let l = unsafe { arg(lease, "lease") }?.to_core()?;
        match unsafe { write(service, |s| Ok(s.remove(SetId(set), &l, now)?)) }? {
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

/// Calls `visit` for every client lease of `set` (as last known when the call starts) until it
/// returns non-zero. The visit runs over a copy, as for `leasehold_renewal_service_for_each_set`.
///
/// # Safety
/// `service` is NULL or live; `visit` is NULL or a valid function.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_service_for_each_lease(
    service: *const leasehold_renewal_service,
    set: u64,
    now: i64,
    visit: leasehold_service_lease_visit_fn,
    user_data: *mut c_void,
) -> leasehold_status {
    guard(|| {
        let visit = visit.ok_or_else(|| null("visit"))?;
        let collect = |s: &RenewalService| Ok(s.leases(SetId(set), now)?);
        unsafe { handle::for_each(service, collect, |l: &Lease| visit(user_data, &(*l).into())) }
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
    unsafe {
        handle::get_maybe(service, out_found, out, ["out_found", "out"], |s| {
            let l = arg(lease, "lease")?.to_core()?;
            Ok(s.membership(SetId(set), &l, now)?.map(|m| leasehold_membership {
                expiration: m.expiration,
                renew_duration: m.renew_duration,
            }))
        })
    }
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
        let h = unsafe { slice(handback, handback_len, "handback") }?.to_vec();
        let r = unsafe {
            write(service, |s| {
                Ok(s.set_expiration_warning_listener(SetId(set), min_warning, h, now)?)
            })
        }?;
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
        let h = unsafe { slice(handback, handback_len, "handback") }?.to_vec();
        let r =
            unsafe { write(service, |s| Ok(s.set_renewal_failure_listener(SetId(set), h, now)?)) }?;
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
    unsafe {
        handle::change(service, |s| Ok(s.clear_expiration_warning_listener(SetId(set), now)?))
    }
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
    unsafe { handle::change(service, |s| Ok(s.clear_renewal_failure_listener(SetId(set), now)?)) }
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
        let was = unsafe { write(service, |s| Ok(s.unknown_event(event_id))) }?;
        if let Some(o) = Out::optional(out_was_active) {
            unsafe { o.write(was) };
        }
        Ok(())
    })
}

/// Calls `visit` for every active registration of `set` when the call starts (warning first,
/// then failure). The visit runs over a copy, as for `leasehold_renewal_service_for_each_set`.
///
/// # Safety
/// `service` is NULL or live; `visit` is NULL or a valid function.
#[no_mangle]
pub unsafe extern "C" fn leasehold_renewal_service_for_each_registration(
    service: *const leasehold_renewal_service,
    set: u64,
    now: i64,
    visit: leasehold_registration_visit_fn,
    user_data: *mut c_void,
) -> leasehold_status {
    guard(|| {
        let visit = visit.ok_or_else(|| null("visit"))?;
        let collect = |s: &RenewalService| {
            let r = s.registrations(SetId(set), now)?;
            Ok(r.into_iter().map(leasehold_event_registration::from).collect())
        };
        unsafe { handle::for_each(service, collect, |r| visit(user_data, r)) }
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
    unsafe { sansio::answer_request(service, request, now, out) }
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
    unsafe { sansio::answer_bytes(service, request, len, encoding, now, out_reply, out_reply_len) }
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
    unsafe { sansio::poll_timeout(service, out_has, out_at) }
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
    unsafe { sansio::handle_timeout(service, now) }
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
    unsafe { sansio::poll_transmit(service, now, out_found, out_landlord, out_request) }
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
    unsafe { sansio::handle_reply(service, reply, now) }
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
    unsafe { sansio::handle_reply_bytes(service, data, len, encoding, now) }
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
    unsafe { sansio::handle_failure(service, request_id, code, message, message_len, now) }
}

impl CEvent for leasehold_set_event {
    type Core = SetEvent;
    fn convert(e: SetEvent) -> Res<leasehold_set_event> {
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
        let (error_code, error_message) = error_parts(err)?;
        let (handback, handback_len) = take_bytes(e.handback);
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
    unsafe fn free_fields(&self) {
        unsafe {
            crate::common::leasehold_bytes_free(self.handback, self.handback_len);
            crate::common::leasehold_string_free(self.error_message);
        }
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
    unsafe { sansio::poll_event(service, out, out_found) }
}

/// One turn of the C driver at `now` (as `leasehold_renewal_manager_drive`): handle_timeout,
/// every due request to `transmit`, every event to `on_event` (optional), then when to call
/// again in `*out_has` / `*out_next`. The callbacks may call back into the service, and free
/// it, as for the renewal manager's driver.
///
/// # Safety
/// `service` is NULL or live; the callbacks are NULL or valid functions; the outputs are NULL
/// or writable.
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
    unsafe {
        sansio::drive(service, now, encoding, transmit, on_event, user_data, out_has, out_next)
    }
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
    unsafe { handle::get(service, out, |s| Ok(crate::holder::stats_of(s.manager().stats()))) }
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
        let json = unsafe { read(service, |s| Ok(s.snapshot(now).to_json())) }?;
        unsafe { out.write(c_string(json)?) };
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
        give(RenewalService::restore(c.inner.clone(), snap, now)?, out);
        Ok(())
    })
}
