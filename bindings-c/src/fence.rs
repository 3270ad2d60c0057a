//! The resource's side of fencing tokens: the core's `Fence` (issue 25). A protected resource
//! (a file, a row, a device) keeps one beside its data and checks every operation's token with
//! `leasehold_fence_check` under the same lock as the write; a token older than the highest it
//! accepted is refused with `LEASEHOLD_STATUS_LEASE_DENIED` (its holder's lease has ended and the
//! resource has a newer holder). Tokens come from an acquire's `acquired` reply
//! (`leasehold-server`'s `POST /coord`, see `docs/coordination.md`).

use std::cell::Cell;

use leasehold_core::coord::Fence;

use crate::error::{arg, guard, leasehold_status, Fail, Out};

/// A fence (opaque): the highest token accepted so far. Not for use by two threads at once
/// (put it under the lock that guards the resource). Free with `leasehold_fence_free`.
#[allow(non_camel_case_types)]
pub struct leasehold_fence {
    fence: Cell<Fence>,
}

/// A fence that has accepted tokens up to `highest` (0 for a new resource; else the value kept
/// with the resource's data, so that a restart never accepts an older token again).
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_fence_new(
    highest: u64,
    out: *mut *mut leasehold_fence,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        crate::handle::give_box(
            leasehold_fence { fence: Cell::new(Fence::with_highest(highest)) },
            out,
        );
        Ok(())
    })
}

/// Checks `token`: at least the highest accepted, it is accepted (and becomes the highest) and
/// the call returns OK; older, the call returns `LEASEHOLD_STATUS_LEASE_DENIED` with a message
/// naming both tokens, and nothing changes. `highest` (may be NULL) receives the highest token
/// after the check either way.
///
/// # Safety
/// `fence` is NULL or a live fence; `highest` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_fence_check(
    fence: *const leasehold_fence,
    token: u64,
    highest: *mut u64,
) -> leasehold_status {
    guard(|| {
        let f = unsafe { arg(fence, "fence") }?;
        let mut v = f.fence.get();
        let r = v.check(token);
        f.fence.set(v);
        unsafe { Out::put(highest, v.highest()) };
        r.map_err(|e| Fail::new(leasehold_status::LEASEHOLD_STATUS_LEASE_DENIED, e.to_string()))
    })
}

/// Whether `token` would be accepted now (nothing changes).
///
/// # Safety
/// `fence` is NULL or a live fence; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_fence_admits(
    fence: *const leasehold_fence,
    token: u64,
    out: *mut bool,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let f = unsafe { arg(fence, "fence") }?;
        unsafe { out.write(f.fence.get().admits(token)) };
        Ok(())
    })
}

/// The highest token accepted so far (keep it with the resource's data).
///
/// # Safety
/// `fence` is NULL or a live fence; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_fence_highest(
    fence: *const leasehold_fence,
    out: *mut u64,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let f = unsafe { arg(fence, "fence") }?;
        unsafe { out.write(f.fence.get().highest()) };
        Ok(())
    })
}

/// Frees a fence. NULL is ignored.
///
/// # Safety
/// `fence` is NULL or a fence not freed before.
#[no_mangle]
pub unsafe extern "C" fn leasehold_fence_free(fence: *mut leasehold_fence) {
    unsafe { crate::handle::free_box(fence) }
}
