//! Distributed events: registrations as a client receives them, and the receiver's gap tracker.

use leasehold_core::event::{Delivery, EventRegistration, EventSource, GapTracker};

use crate::error::{arg, arg_mut, guard, guard_void, leasehold_status, Out};
use crate::lease::leasehold_lease;

/// What sends the events of a registration: a service and an object inside it (for a renewal
/// service, its landlord id and the set's number).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct leasehold_event_source {
    /// The service that generates the events.
    pub service: u64,
    /// The object inside the service the events are about.
    pub object: u64,
}

impl From<EventSource> for leasehold_event_source {
    fn from(s: EventSource) -> Self {
        leasehold_event_source { service: s.service.0, object: s.object }
    }
}

/// What a client gets back when it registers for events (Jini `EventRegistration`).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct leasehold_event_registration {
    /// The id every event of this registration carries.
    pub event_id: u64,
    /// Who sends the events.
    pub source: leasehold_event_source,
    /// The lease that covers the registration: when it ends, so does the registration.
    pub lease: leasehold_lease,
    /// Sequence number of the last event sent before the registration was returned; hand it
    /// to `leasehold_gap_tracker_expect`.
    pub sequence: u64,
}

impl From<EventRegistration> for leasehold_event_registration {
    fn from(r: EventRegistration) -> Self {
        leasehold_event_registration {
            event_id: r.event_id,
            source: r.source.into(),
            lease: r.lease.into(),
            sequence: r.sequence,
        }
    }
}

/// What a receiver learns from an event's sequence number.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum leasehold_delivery {
    /// The first event seen for this event id, with no expectation set.
    LEASEHOLD_DELIVERY_FIRST = 1,
    /// Exactly one past the last: nothing was missed.
    LEASEHOLD_DELIVERY_IN_ORDER = 2,
    /// More than one past the last: up to `missed` events may have been missed (or none,
    /// after a restart of the sender). Resynchronise with the sender.
    LEASEHOLD_DELIVERY_GAP = 3,
    /// At or below the last number seen: a duplicate or an overtaken event.
    LEASEHOLD_DELIVERY_STALE = 4,
}

/// The receiver side of events (opaque): the last sequence number seen per event id, and gap
/// detection. Free with `leasehold_gap_tracker_free`.
#[allow(non_camel_case_types)]
pub struct leasehold_gap_tracker {
    inner: GapTracker,
}

/// A tracker that has seen nothing.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_gap_tracker_new(
    out: *mut *mut leasehold_gap_tracker,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let t = Box::new(leasehold_gap_tracker { inner: GapTracker::new() });
        unsafe { out.write(Box::into_raw(t)) };
        Ok(())
    })
}

/// Frees a tracker. NULL is ignored.
///
/// # Safety
/// `tracker` was made by libleasehold and not freed before.
#[no_mangle]
pub unsafe extern "C" fn leasehold_gap_tracker_free(tracker: *mut leasehold_gap_tracker) {
    guard_void(|| {
        if !tracker.is_null() {
            drop(unsafe { Box::from_raw(tracker) });
        }
    })
}

/// Sets the last sequence number seen for `event_id` (typically a registration's `sequence`).
///
/// # Safety
/// `tracker` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn leasehold_gap_tracker_expect(
    tracker: *mut leasehold_gap_tracker,
    event_id: u64,
    sequence: u64,
) -> leasehold_status {
    guard(|| {
        unsafe { arg_mut(tracker, "tracker") }?.inner.expect(event_id, sequence);
        Ok(())
    })
}

/// Classifies an event of `event_id` numbered `sequence`; `*out_missed` (optional) is the most
/// events that can have been missed (GAP only, else 0).
///
/// # Safety
/// `tracker` is NULL or live; the outputs are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_gap_tracker_observe(
    tracker: *mut leasehold_gap_tracker,
    event_id: u64,
    sequence: u64,
    out: *mut leasehold_delivery,
    out_missed: *mut u64,
) -> leasehold_status {
    use leasehold_delivery as D;
    guard(|| {
        let out = Out::new(out, "out")?;
        let missed_out = Out::optional(out_missed);
        let t = unsafe { arg_mut(tracker, "tracker") }?;
        let (d, missed) = match t.inner.observe(event_id, sequence) {
            Delivery::First => (D::LEASEHOLD_DELIVERY_FIRST, 0),
            Delivery::InOrder => (D::LEASEHOLD_DELIVERY_IN_ORDER, 0),
            Delivery::Gap { missed } => (D::LEASEHOLD_DELIVERY_GAP, missed),
            Delivery::Stale => (D::LEASEHOLD_DELIVERY_STALE, 0),
        };
        unsafe { out.write(d) };
        if let Some(m) = missed_out {
            unsafe { m.write(missed) };
        }
        Ok(())
    })
}

/// The last sequence number seen for `event_id`: `*out_has` is false if none.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_gap_tracker_last(
    tracker: *const leasehold_gap_tracker,
    event_id: u64,
    out_has: *mut bool,
    out_sequence: *mut u64,
) -> leasehold_status {
    guard(|| {
        let has = Out::new(out_has, "out_has")?;
        let seq = Out::new(out_sequence, "out_sequence")?;
        match unsafe { arg(tracker, "tracker") }?.inner.last(event_id) {
            Some(s) => unsafe {
                has.write(true);
                seq.write(s);
            },
            None => unsafe { has.write(false) },
        }
        Ok(())
    })
}

/// Forgets `event_id` (its registration ended).
///
/// # Safety
/// `tracker` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn leasehold_gap_tracker_forget(
    tracker: *mut leasehold_gap_tracker,
    event_id: u64,
) -> leasehold_status {
    guard(|| {
        unsafe { arg_mut(tracker, "tracker") }?.inner.forget(event_id);
        Ok(())
    })
}
