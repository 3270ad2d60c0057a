//! Distributed events: registrations as a client receives them, and the receiver's gap tracker.

use std::ffi::c_char;

use leasehold_core::event::{Delivery, EventRegistration, EventSource, EventTable, GapTracker};
use leasehold_core::lease::LandlordId;

use crate::common::{c_string, take_bytes};
use crate::error::{arg, guard, leasehold_status, slice, text, Fail, Out};
use crate::handle::{self, give, opaque, write, Handle};
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
        let (event_id, source, lease, sequence) =
            (r.event_id, r.source.into(), r.lease.into(), r.sequence);
        leasehold_event_registration { event_id, source, lease, sequence }
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
    h: Handle<GapTracker>,
}
opaque!(leasehold_gap_tracker, GapTracker, "tracker", "gap tracker");

/// A tracker that has seen nothing.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_gap_tracker_new(
    out: *mut *mut leasehold_gap_tracker,
) -> leasehold_status {
    guard(|| Out::new(out, "out").map(|o| give(GapTracker::new(), o)))
}

/// Frees a tracker. NULL is ignored.
///
/// # Safety
/// `tracker` was made by libleasehold and not freed before.
#[no_mangle]
pub unsafe extern "C" fn leasehold_gap_tracker_free(tracker: *mut leasehold_gap_tracker) {
    unsafe { handle::free(tracker) }
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
    guard(|| unsafe { handle::apply(tracker, |t| t.expect(event_id, sequence)) })
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
        let (d, missed) = match unsafe { write(tracker, |t| Ok(t.observe(event_id, sequence))) }? {
            Delivery::First => (D::LEASEHOLD_DELIVERY_FIRST, 0),
            Delivery::InOrder => (D::LEASEHOLD_DELIVERY_IN_ORDER, 0),
            Delivery::Gap { missed } => (D::LEASEHOLD_DELIVERY_GAP, missed),
            Delivery::Stale => (D::LEASEHOLD_DELIVERY_STALE, 0),
        };
        unsafe { out.write(d) };
        unsafe { Out::put(out_missed, missed) };
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
    unsafe {
        handle::get_maybe(tracker, out_has, out_sequence, ["out_has", "out_sequence"], |t| {
            Ok(t.last(event_id))
        })
    }
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
    guard(|| unsafe { handle::apply(tracker, |t| t.forget(event_id)) })
}

// ---------- the sender side ----------

/// The sender side of events (opaque), for hosts that issue events of their own: active
/// registrations with their handbacks and sequence numbers. Free with
/// `leasehold_event_table_free`.
#[allow(non_camel_case_types)]
pub struct leasehold_event_table {
    h: Handle<EventTable>,
}
opaque!(leasehold_event_table, EventTable, "table", "event table");

/// An event numbered by an event table: the host attaches its own payload and delivers it with
/// the handback (caller-owned: free with `leasehold_bytes_free(handback, handback_len)`).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug)]
pub struct leasehold_event {
    /// The registration's event id.
    pub event_id: u64,
    /// Who sends it.
    pub source: leasehold_event_source,
    /// One past the previous event of this id.
    pub sequence: u64,
    /// The registration's handback.
    pub handback: *mut u8,
    /// Length of `handback`.
    pub handback_len: usize,
}

/// An empty table; the first event id handed out is 1.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_event_table_new(
    out: *mut *mut leasehold_event_table,
) -> leasehold_status {
    guard(|| Out::new(out, "out").map(|o| give(EventTable::new(), o)))
}

/// Frees a table. NULL is ignored.
///
/// # Safety
/// `table` was made by libleasehold and not freed before.
#[no_mangle]
pub unsafe extern "C" fn leasehold_event_table_free(table: *mut leasehold_event_table) {
    unsafe { handle::free(table) }
}

/// A new registration for events of `source` with `handback` (copied); `*out_event_id` is its
/// id, unique among the active registrations.
///
/// # Safety
/// `table` is NULL or live; `handback` is NULL or points to `handback_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn leasehold_event_table_register(
    table: *mut leasehold_event_table,
    source: leasehold_event_source,
    handback: *const u8,
    handback_len: usize,
    out_event_id: *mut u64,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out_event_id, "out_event_id")?;
        let h = unsafe { slice(handback, handback_len, "handback") }?.to_vec();
        let src = EventSource { service: LandlordId(source.service), object: source.object };
        unsafe { out.write(write(table, |t| Ok(t.register(src, h)))?) };
        Ok(())
    })
}

/// Replaces the handback of an active registration (`INVALID_ARGUMENT` if not active).
///
/// # Safety
/// As `leasehold_event_table_register`.
#[no_mangle]
pub unsafe extern "C" fn leasehold_event_table_set_handback(
    table: *mut leasehold_event_table,
    event_id: u64,
    handback: *const u8,
    handback_len: usize,
) -> leasehold_status {
    unsafe {
        handle::change(table, |t| {
            let h = slice(handback, handback_len, "handback")?.to_vec();
            Ok(t.set_handback(event_id, h)?)
        })
    }
}

/// The sequence number of the last event issued for `event_id`; `*out_active` is false if the
/// registration is not active.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_event_table_sequence(
    table: *const leasehold_event_table,
    event_id: u64,
    out_active: *mut bool,
    out_sequence: *mut u64,
) -> leasehold_status {
    unsafe {
        handle::get_maybe(table, out_active, out_sequence, ["out_active", "out_sequence"], |t| {
            Ok(t.sequence(event_id))
        })
    }
}

/// Ends a registration; `*out_was_active` (optional) says whether it was active.
///
/// # Safety
/// `table` is NULL or live; `out_was_active` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_event_table_remove(
    table: *mut leasehold_event_table,
    event_id: u64,
    out_was_active: *mut bool,
) -> leasehold_status {
    guard(|| {
        let was = unsafe { write(table, |t| Ok(t.remove(event_id).is_some())) }?;
        unsafe { Out::put(out_was_active, was) };
        Ok(())
    })
}

/// Active registrations.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_event_table_len(
    table: *const leasehold_event_table,
    out: *mut usize,
) -> leasehold_status {
    unsafe { handle::get(table, out, |t| Ok(t.len())) }
}

/// Numbers the next event of `event_id` (one past the last); an inactive registration is
/// `INVALID_ARGUMENT`. `*out` gets the event with a copy of the handback.
///
/// # Safety
/// `table` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_event_table_next_event(
    table: *mut leasehold_event_table,
    event_id: u64,
    out: *mut leasehold_event,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let e = unsafe { write(table, |t| Ok(t.next_event(event_id, ()))) }?;
        let e = e.ok_or_else(|| inactive(event_id))?;
        let (handback, handback_len) = take_bytes(e.handback);
        let (event_id, source, sequence) = (e.event_id, e.source.into(), e.sequence);
        unsafe {
            out.write(leasehold_event { event_id, source, sequence, handback, handback_len })
        };
        Ok(())
    })
}

/// The registration as handed to a client, covered by `lease` (`INVALID_ARGUMENT` if not
/// active).
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_event_table_registration(
    table: *const leasehold_event_table,
    event_id: u64,
    lease: *const leasehold_lease,
    out: *mut leasehold_event_registration,
) -> leasehold_status {
    unsafe {
        handle::get(table, out, |t| {
            let l = arg(lease, "lease")?.to_core()?;
            Ok(t.registration(event_id, l).ok_or_else(|| inactive(event_id))?.into())
        })
    }
}

/// The table as JSON text, to store and give back to `leasehold_event_table_restore`. Free
/// `*out` with `leasehold_string_free`.
///
/// # Safety
/// `table` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_event_table_snapshot(
    table: *const leasehold_event_table,
    out: *mut *mut c_char,
) -> leasehold_status {
    let e = |e| Fail::invalid(format!("event table is not representable as JSON: {e}"));
    unsafe { handle::get(table, out, |t| c_string(serde_json::to_string(t).map_err(e)?)) }
}

/// A table restored after a restart from its JSON (`len` bytes): every sequence number moves
/// forward by `jump` (e.g. `LEASEHOLD_DEFAULT_RESTORE_JUMP`), so no number is issued twice and
/// receivers see a gap.
///
/// # Safety
/// `json` is NULL or points to `len` bytes; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_event_table_restore(
    json: *const c_char,
    len: usize,
    jump: u64,
    out: *mut *mut leasehold_event_table,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let s = unsafe { text(json, len, "json") }?;
        let t: EventTable = serde_json::from_str(s).map_err(|e| {
            Fail::new(leasehold_status::LEASEHOLD_STATUS_DECODE, format!("event table: {e}"))
        })?;
        give(t.restore(jump), out);
        Ok(())
    })
}

fn inactive(event_id: u64) -> Fail {
    Fail::invalid(format!("no active event registration with id {event_id}"))
}

/// How far sequence numbers jump on restore unless told otherwise: 2^32.
pub const LEASEHOLD_DEFAULT_RESTORE_JUMP: u64 = 4294967296;

// The restore jump is the core's.
const _: () =
    assert!(LEASEHOLD_DEFAULT_RESTORE_JUMP == leasehold_core::event::DEFAULT_RESTORE_JUMP);
