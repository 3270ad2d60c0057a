//! The typed calls of the landlord written once: when to call back (`_poll_timeout`),
//! advancing time (`_handle_timeout`), what happened (`_poll_event`), and answering requests
//! (`_handle_request`, `_handle_bytes`). Every other sans-I/O part is a `leasehold_machine`
//! (`machine.rs`).
//!
//! A typed part needs: its handle struct made [`Opaque`] with `opaque!`, [`Machine`] for its
//! state ([`Answers`] if it answers requests), and a C event struct that implements [`CEvent`].
//! The re-entrancy rules of [`crate::handle`] then hold for it too.

use leasehold_core::{Encoding, Millis, Reply, Request};

use crate::common::{encoding, give_bytes};
use crate::error::{arg, guard, leasehold_status, slice, Maybe, Out, Res};
use crate::handle::{self, apply, write, Opaque};
use crate::wire::{give_reply, leasehold_reply, leasehold_request};

/// The timer and the events of a sans-I/O state machine, as its C calls see them.
pub(crate) trait Machine {
    /// What `poll_event` hands out.
    type Event;
    fn poll_timeout(&self) -> Option<Millis>;
    fn handle_timeout(&mut self, now: Millis);
    fn poll_event(&mut self) -> Option<Self::Event>;
}

/// The C form of an event: a `#[repr(C)]` struct whose buffers the library allocates.
pub(crate) trait CEvent: Sized {
    /// The core event it is made from.
    type Core;
    /// Converts; the buffers become the caller's (`_poll_event`) or are lent to a callback.
    fn convert(e: Self::Core) -> Res<Self>;
    /// Frees the buffers of an event that was only lent to a callback.
    ///
    /// # Safety
    /// `self` came from [`CEvent::convert`] and its buffers were not handed to the caller.
    unsafe fn free_fields(&self);
}

/// A handle whose state is a [`Machine`], with the C struct of its events.
pub(crate) trait Component: Opaque<Inner: Machine> {
    type Event: CEvent<Core = <Self::Inner as Machine>::Event>;
}

/// A part that answers wire requests.
pub(crate) trait Answers {
    fn handle_request(&mut self, request: &Request, now: Millis) -> Reply;
    fn handle_bytes(&mut self, bytes: &[u8], encoding: Encoding, now: Millis) -> Vec<u8>;
}

// ---------- timer and events ----------

/// `_poll_timeout`.
///
/// # Safety
/// Pointers are NULL or valid.
pub(crate) unsafe fn poll_timeout<H: Opaque<Inner: Machine>>(
    p: *const H,
    out_has: *mut bool,
    out_at: *mut i64,
) -> leasehold_status {
    unsafe {
        handle::get_maybe(p, out_has, out_at, ["out_has", "out_at"], |m| Ok(m.poll_timeout()))
    }
}

/// `_handle_timeout`.
///
/// # Safety
/// `p` is NULL or live.
pub(crate) unsafe fn handle_timeout<H: Opaque<Inner: Machine>>(
    p: *mut H,
    now: i64,
) -> leasehold_status {
    guard(|| unsafe { apply(p, |m| m.handle_timeout(now)) })
}

/// `_poll_event`: the next event, its buffers the caller's.
///
/// # Safety
/// Pointers are NULL or valid.
pub(crate) unsafe fn poll_event<H: Component>(
    p: *mut H,
    out: *mut H::Event,
    out_found: *mut bool,
) -> leasehold_status {
    guard(|| {
        let out = Maybe::new(out_found, "out_found", out, "out")?;
        let e = unsafe { write(p, |m| m.poll_event().map(H::Event::convert).transpose()) }?;
        unsafe { out.write(e) };
        Ok(())
    })
}

// ---------- answering requests ----------

/// `_handle_request`: the reply to a request message.
///
/// # Safety
/// `p` and `request` are NULL or live; `out` is NULL or writable.
pub(crate) unsafe fn answer_request<H: Opaque<Inner: Answers>>(
    p: *mut H,
    request: *const leasehold_request,
    now: i64,
    out: *mut *mut leasehold_reply,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let r = unsafe { arg(request, "request") }?;
        let reply = unsafe { write(p, |a| Ok(a.handle_request(&r.inner, now))) }?;
        give_reply(reply, out);
        Ok(())
    })
}

/// `_handle_bytes`: an encoded reply to an encoded request (an undecodable request gets an
/// error reply), to free with `leasehold_bytes_free`.
///
/// # Safety
/// `p` is NULL or live; `request` is NULL or points to `len` bytes; outputs writable.
pub(crate) unsafe fn answer_bytes<H: Opaque<Inner: Answers>>(
    p: *mut H,
    request: *const u8,
    len: usize,
    enc: i32,
    now: i64,
    out_reply: *mut *mut u8,
    out_reply_len: *mut usize,
) -> leasehold_status {
    guard(|| {
        let d = Out::new(out_reply, "out_reply")?;
        let n = Out::new(out_reply_len, "out_reply_len")?;
        let enc = encoding(enc)?;
        let b = unsafe { slice(request, len, "request") }?;
        let reply = unsafe { write(p, |a| Ok(a.handle_bytes(b, enc, now))) }?;
        unsafe { give_bytes(reply, d, n) };
        Ok(())
    })
}
