//! Grant policies: the built-in ones, as immutable values a landlord copies when it is created.

use std::ffi::c_char;

use leasehold_core::policy::{Adaptive, AdaptiveConfig, PolicySpec};

use crate::common::c_string;
use crate::error::{arg, guard, leasehold_status, text, Fail, Out, Res};

/// A grant policy (opaque). Immutable once made: one policy may be shared by several threads
/// and used for several landlords. Free with `leasehold_policy_free`.
#[allow(non_camel_case_types)]
pub struct leasehold_policy {
    pub(crate) spec: PolicySpec,
}

fn give(spec: PolicySpec, out: Out<*mut leasehold_policy>) -> Res {
    // Building checks the settings now, so a bad policy fails here and not at the landlord.
    spec.build()?;
    crate::handle::give_box(leasehold_policy { spec }, out);
    Ok(())
}

/// Grants every request `duration` ms (or less, if less was asked). `duration` > 0 or FOREVER.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_policy_new_fixed(
    duration: i64,
    out: *mut *mut leasehold_policy,
) -> leasehold_status {
    guard(|| give(PolicySpec::Fixed { duration }, Out::new(out, "out")?))
}

/// The reference `LeaseDurationPolicy`: ANY gets `default_duration`, anything else
/// min(request, `max`). Both positive (or FOREVER), `default_duration <= max`.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_policy_new_bounded(
    max: i64,
    default_duration: i64,
    out: *mut *mut leasehold_policy,
) -> leasehold_status {
    guard(|| give(PolicySpec::Bounded { max, default: default_duration }, Out::new(out, "out")?))
}

/// Denies new leases once `max_leases` are live; `inner` decides the durations (it is copied,
/// the caller still owns and frees it).
///
/// # Safety
/// `inner` is NULL or a live policy; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_policy_new_capacity(
    max_leases: usize,
    inner: *const leasehold_policy,
    out: *mut *mut leasehold_policy,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let inner = unsafe { arg(inner, "inner") }?;
        give(PolicySpec::Capacity { max_leases, inner: Box::new(inner.spec.clone()) }, out)
    })
}

/// Shortens grants as the landlord fills: `max` ms when empty down to `min` ms at `capacity`
/// live leases; new leases beyond `capacity` are denied. Needs `capacity > 0`, `0 < min <= max`.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_policy_new_resource_aware(
    capacity: usize,
    max: i64,
    min: i64,
    out: *mut *mut leasehold_policy,
) -> leasehold_status {
    guard(|| give(PolicySpec::ResourceAware { capacity, max, min }, Out::new(out, "out")?))
}

/// The paper's adaptive policy: L_G = N / G with G = `renewals_per_second` shared among
/// `grantors` landlords; denied above L_MAX = `max` ms, clamped to L_MIN = `min` ms.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_policy_new_adaptive(
    renewals_per_second: f64,
    min: i64,
    max: i64,
    grantors: u32,
    out: *mut *mut leasehold_policy,
) -> leasehold_status {
    guard(|| {
        let c = AdaptiveConfig { renewals_per_second, min, max, grantors };
        give(PolicySpec::Adaptive(c), Out::new(out, "out")?)
    })
}

/// The adaptive policy with G from a bandwidth budget: G = `bytes_per_second` /
/// (`request_size` + `grant_size`), shared among `grantors` landlords.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_policy_new_adaptive_bandwidth(
    bytes_per_second: f64,
    request_size: f64,
    grant_size: f64,
    min: i64,
    max: i64,
    grantors: u32,
    out: *mut *mut leasehold_policy,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let mut c =
            AdaptiveConfig::from_bandwidth(bytes_per_second, request_size, grant_size, min, max)?;
        c.grantors = grantors;
        give(PolicySpec::Adaptive(c), out)
    })
}

/// A policy from its JSON description (`len` bytes), e.g.
/// `{"kind":"bounded","max":60000,"default":30000}` or
/// `{"kind":"capacity","max_leases":100,"inner":{"kind":"fixed","duration":5000}}`.
///
/// # Safety
/// `json` is NULL or points to `len` readable bytes; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_policy_from_json(
    json: *const c_char,
    len: usize,
    out: *mut *mut leasehold_policy,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let s = unsafe { text(json, len, "json") }?;
        let spec: PolicySpec = serde_json::from_str(s).map_err(|e| {
            Fail::new(leasehold_status::LEASEHOLD_STATUS_DECODE, format!("policy JSON: {e}"))
        })?;
        give(spec, out)
    })
}

/// The JSON description of a policy (what `leasehold_policy_from_json` reads). Free `*out` with
/// `leasehold_string_free`.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_policy_to_json(
    policy: *const leasehold_policy,
    out: *mut *mut c_char,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let p = unsafe { arg(policy, "policy") }?;
        let s = serde_json::to_string(&p.spec)
            .map_err(|e| Fail::invalid(format!("policy is not representable as JSON: {e}")))?;
        unsafe { out.write(c_string(s)?) };
        Ok(())
    })
}

fn adaptive(p: &leasehold_policy) -> Res<Adaptive> {
    match &p.spec {
        PolicySpec::Adaptive(c) => Ok(Adaptive::new(*c)?),
        _ => Err(Fail::invalid("the policy is not adaptive")),
    }
}

/// The adaptive policy's lease period L_G for `holders` leaseholders, in ms; `LEASE_DENIED` if
/// it would be above L_MAX, `INVALID_ARGUMENT` if the policy is not adaptive.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_policy_adaptive_period(
    policy: *const leasehold_policy,
    holders: usize,
    out: *mut i64,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let a = adaptive(unsafe { arg(policy, "policy") }?)?;
        unsafe { out.write(a.period(holders)?) };
        Ok(())
    })
}

/// The adaptive policy's N_MAX = L_MAX * G (infinity when L_MAX is FOREVER).
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_policy_adaptive_max_holders(
    policy: *const leasehold_policy,
    out: *mut f64,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let a = adaptive(unsafe { arg(policy, "policy") }?)?;
        unsafe { out.write(a.max_holders()) };
        Ok(())
    })
}

/// The adaptive policy's bandwidth ceiling B = G (S_R + S_G) in bytes per second.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_policy_adaptive_bandwidth_ceiling(
    policy: *const leasehold_policy,
    request_size: f64,
    grant_size: f64,
    out: *mut f64,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let a = adaptive(unsafe { arg(policy, "policy") }?)?;
        unsafe { out.write(a.bandwidth_ceiling(request_size, grant_size)) };
        Ok(())
    })
}

/// Frees a policy. NULL is ignored.
///
/// # Safety
/// `policy` was made by libleasehold and not freed before.
#[no_mangle]
pub unsafe extern "C" fn leasehold_policy_free(policy: *mut leasehold_policy) {
    unsafe { crate::handle::free_box(policy) }
}
