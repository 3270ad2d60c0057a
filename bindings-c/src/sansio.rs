//! The calls every active part (landlord, renewal manager, renewal service) shares, written
//! once: when to call back (`_poll_timeout`), advancing time (`_handle_timeout`), what happened
//! (`_poll_event`), what to send and what came back (`_poll_transmit`, `_handle_reply`,
//! `_handle_reply_bytes`, `_handle_failure`), the C driver (`_drive`), and answering requests
//! (`_handle_request`, `_handle_bytes`).
//!
//! A part's exported functions are one-line calls of these. A new sans-I/O part needs: its
//! handle struct made [`Opaque`] with `opaque!`, [`Machine`] for its core type (plus the core's
//! [`Renewer`] if it sends requests, [`Answers`] if it answers them), and a C event struct that
//! implements [`CEvent`]. The re-entrancy rules of [`crate::handle`] then hold for it too.

use std::ffi::{c_char, c_void};

use leasehold_core::holder::Renewer;
use leasehold_core::{Encoding, LeaseError, Millis, Reply, Request};

use crate::common::{encoding, give_bytes};
use crate::error::{arg, guard, leasehold_status, null, slice, text, Fail, Maybe, Out, Res};
use crate::handle::{self, apply, write, Call, Opaque};
use crate::holder::leasehold_transmit_fn;
use crate::wire::{give_reply, give_request, leasehold_reply, leasehold_request};

/// Most rounds one `_drive` call makes (see `leasehold_renewal_manager_drive`): a round hands
/// out every request and event queued when it starts; callbacks that queue more get further
/// rounds, up to this many, after which the call asks to be called again at once.
pub const LEASEHOLD_DRIVE_MAX_ROUNDS: u32 = 16;

/// The timer and the events of a sans-I/O state machine, as its C calls see them.
pub(crate) trait Machine {
    /// What `poll_event` hands out.
    type Event;
    fn poll_timeout(&self) -> Option<Millis>;
    fn handle_timeout(&mut self, now: Millis);
    fn poll_event(&mut self) -> Option<Self::Event>;
}

/// [`Machine`] for a core type that implements [`Renewer`].
macro_rules! renewer_machine {
    ($t:ty) => {
        impl Machine for $t {
            type Event = <$t as Renewer>::Event;
            fn poll_timeout(&self) -> Option<Millis> {
                Renewer::poll_timeout(self)
            }
            fn handle_timeout(&mut self, now: Millis) {
                Renewer::handle_timeout(self, now)
            }
            fn poll_event(&mut self) -> Option<Self::Event> {
                Renewer::poll_event(self)
            }
        }
    };
}
renewer_machine!(leasehold_core::RenewalManager);
renewer_machine!(leasehold_core::RenewalService);

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

macro_rules! answers {
    ($t:ty) => {
        impl Answers for $t {
            fn handle_request(&mut self, request: &Request, now: Millis) -> Reply {
                <$t>::handle_request(self, request, now)
            }
            fn handle_bytes(&mut self, bytes: &[u8], encoding: Encoding, now: Millis) -> Vec<u8> {
                <$t>::handle_bytes(self, bytes, encoding, now)
            }
        }
    };
}
answers!(leasehold_core::RenewalService);

/// A callback that delivers one event of type `E`, borrowed for the call.
pub(crate) type EventFn<E> = Option<unsafe extern "C" fn(user_data: *mut c_void, event: *const E)>;

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

// ---------- requests out, replies in ----------

/// `_poll_transmit`.
///
/// # Safety
/// Pointers are NULL or valid.
pub(crate) unsafe fn poll_transmit<H: Opaque<Inner: Renewer>>(
    p: *mut H,
    now: i64,
    out_found: *mut bool,
    out_landlord: *mut u64,
    out_request: *mut *mut leasehold_request,
) -> leasehold_status {
    guard(|| {
        let found = Out::new(out_found, "out_found")?;
        let landlord = Out::new(out_landlord, "out_landlord")?;
        let req = Out::new(out_request, "out_request")?;
        match unsafe { write(p, |r| Ok(r.poll_transmit(now))) }? {
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

/// `_handle_reply`.
///
/// # Safety
/// Pointers are NULL or valid.
pub(crate) unsafe fn handle_reply<H: Opaque<Inner: Renewer>>(
    p: *mut H,
    reply: *const leasehold_reply,
    now: i64,
) -> leasehold_status {
    guard(|| {
        let reply = unsafe { arg(reply, "reply") }?;
        unsafe { apply(p, |r| r.handle_reply(&reply.inner, now)) }
    })
}

/// `_handle_reply_bytes`: decoded with the default limits; bytes that do not decode are
/// `DECODE` and change nothing.
///
/// # Safety
/// `p` is NULL or live; `data` is NULL or points to `len` bytes.
pub(crate) unsafe fn handle_reply_bytes<H: Opaque<Inner: Renewer>>(
    p: *mut H,
    data: *const u8,
    len: usize,
    enc: i32,
    now: i64,
) -> leasehold_status {
    guard(|| {
        let enc = encoding(enc)?;
        let b = unsafe { slice(data, len, "data") }?;
        let reply = Reply::decode(b, enc, &Default::default())?;
        unsafe { apply(p, |r| r.handle_reply(&reply, now)) }
    })
}

/// `_handle_failure`.
///
/// # Safety
/// `p` is NULL or live; `message` is NULL or points to `message_len` bytes.
pub(crate) unsafe fn handle_failure<H: Opaque<Inner: Renewer>>(
    p: *mut H,
    request_id: u64,
    code: i32,
    message: *const c_char,
    message_len: usize,
    now: i64,
) -> leasehold_status {
    guard(|| {
        let msg = unsafe { text(message, message_len, "message") }?;
        if code == 0 {
            return Err(Fail::invalid("a failure needs a non-zero code"));
        }
        let e = LeaseError::from_code(code, msg);
        unsafe { apply(p, |r| r.handle_failure(request_id, e, now)) }
    })
}

// ---------- the driver ----------

/// A request to hand to the transport: landlord id, request id, encoded bytes.
type Outgoing = (u64, u64, Vec<u8>);

/// `_drive`: one turn of the C driver at `now`. `handle_timeout(now)`, then rounds: a round
/// takes every request and every event queued (one borrow), then, with nothing borrowed, hands
/// each request to `transmit` (a non-zero answer is an indefinite failure of that request) and
/// each event to `on_event`. Callbacks may call back into the handle; what they queue goes out
/// in the next round, up to [`LEASEHOLD_DRIVE_MAX_ROUNDS`], after which the answer is "again at
/// `now`". A callback that frees the handle ends the call at once: OK, `*out_has` false.
///
/// # Safety
/// `p` is NULL or live; the callbacks are NULL or valid; the outputs are NULL or writable.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn drive<H: Component<Inner: Renewer>>(
    p: *mut H,
    now: i64,
    enc: i32,
    transmit: leasehold_transmit_fn,
    on_event: EventFn<H::Event>,
    user_data: *mut c_void,
    out_has: *mut bool,
    out_next: *mut i64,
) -> leasehold_status {
    guard(|| {
        let out = Maybe::new(out_has, "out_has", out_next, "out_next")?;
        let enc = encoding(enc)?;
        let transmit = transmit.ok_or_else(|| null("transmit"))?;
        let call = unsafe { Call::enter(p) }?;
        call.apply(|m| Machine::handle_timeout(m, now))?;
        let take = |m: &mut H::Inner| {
            let mut sends = Vec::new();
            while let Some(t) = m.poll_transmit(now) {
                sends.push((t.landlord.0, t.request.id, t.request.encode(enc)));
            }
            let mut events = Vec::new();
            while let Some(e) = Machine::poll_event(m) {
                events.push(e);
            }
            Ok((!sends.is_empty() || !events.is_empty()).then_some((sends, events)))
        };
        let run = |(sends, events): (Vec<Outgoing>, Vec<_>)| {
            for (landlord, id, bytes) in &sends {
                if call.freed() {
                    break;
                }
                let rc =
                    unsafe { transmit(user_data, *landlord, *id, bytes.as_ptr(), bytes.len()) };
                if rc != 0 && !call.freed() {
                    let e = LeaseError::Indefinite(format!("the transport callback returned {rc}"));
                    call.apply(|m| m.handle_failure(*id, e, now))?;
                }
            }
            for e in events {
                if call.freed() {
                    break;
                }
                let ev = H::Event::convert(e)?;
                if let Some(cb) = on_event {
                    unsafe { cb(user_data, &ev) };
                }
                unsafe { ev.free_fields() };
            }
            Ok(())
        };
        let next = rounds(&call, now, take, run)?;
        unsafe { out.write(next) };
        Ok(())
    })
}

/// The loop of every driver: rounds, each taking what is due with the state borrowed (`take`:
/// `None` when nothing is) and handing it to the host's callbacks with nothing borrowed (`run`,
/// which stops calling back once `call.freed()`). Callbacks may call back in; what they cause
/// goes out in the next round. Answers when to drive again: the machine's next timeout once
/// nothing is due; `now` after [`LEASEHOLD_DRIVE_MAX_ROUNDS`] rounds (work is left); `None` if
/// a callback freed the handle.
pub(crate) fn rounds<H: Opaque<Inner: Machine>, W>(
    call: &Call<H>,
    now: Millis,
    mut take: impl FnMut(&mut H::Inner) -> Res<Option<W>>,
    mut run: impl FnMut(W) -> Res,
) -> Res<Option<Millis>> {
    for _ in 0..LEASEHOLD_DRIVE_MAX_ROUNDS {
        let Some(work) = call.with_mut(&mut take)? else {
            return call.with(|m| Ok(Machine::poll_timeout(m)));
        };
        run(work)?;
        if call.freed() {
            return Ok(None);
        }
    }
    Ok(Some(now))
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
