//! The uniform machine interface: one opaque `leasehold_machine` for every sans-I/O part the
//! core describes as a [`Machine`] (settings in as JSON, every call as one JSON input, answers,
//! transmissions, events and snapshots out as JSON, wire messages in and out as bytes), kept in
//! memory or in a store. A part costs this crate one line in [`KINDS`]; its rules, its inputs
//! and their checks are the core's (`docs/bindings.md`, section 3).
//!
//! JSON here is the core's *data form* as `serde_json` writes it: field names as in Rust, ids
//! and cookies as hex text, bytes as arrays of numbers (read also from text, as its UTF-8
//! bytes), durations in ms. Wire messages keep their two encodings: [`leasehold_message_transcode`]
//! turns any message kind from one into the other, so a C program builds a message as JSON text
//! and sends its binary form, or reads a binary message as JSON.
//!
//! No user code runs while a machine's state is borrowed: inputs are parsed and answers
//! written with nothing but serde inside the borrow, and the store's host callbacks run
//! outside it (`store.rs`).

use std::any::Any;
use std::ffi::{c_char, CStr};

use leasehold_core::discovery::wire::{DiscoveryReply, DiscoveryRequest, EventReply};
use leasehold_core::discovery::{Announcement, DiscoveryService, RemoteDiscoveryEvent};
use leasehold_core::journal::{Journaled, Recovered};
use leasehold_core::machine::{self, Machine, Message, Stored};
use leasehold_core::service::RenewalService;
use leasehold_core::store::StoreConfig;
use leasehold_core::RenewalManager;
use leasehold_core::{Encoding, LeaseError, Limits, Millis, Reply, Request};
use serde_json::Value;

use crate::common::{c_string, encoding, give_bytes, leasehold_limits, limits_or_default};
use crate::error::{guard, leasehold_status, null, slice, text, Fail, Maybe, Out, Res};
use crate::handle::{self, give, opaque, read, write, Handle};
use crate::landlord::seed_arg;
use crate::store::{self, leasehold_recovery, leasehold_store_file, leasehold_store_io};

// ---------- one object-safe face for every part ----------

/// What the generic layer needs of a part, object-safe: the [`Machine`] calls with their data
/// converted to and from JSON, and the journal of a [`Stored`] part (none in memory).
pub(crate) trait Part: Send {
    fn name(&self) -> &'static str;
    fn journal(&self) -> Option<&dyn Journal>;
    fn journal_mut(&mut self) -> Option<&mut dyn Journal>;
    fn handle(&mut self, input: &str, now: Millis) -> Res<String>;
    fn poll_timeout(&self) -> Option<Millis>;
    fn handle_timeout(&mut self, now: Millis);
    fn poll_transmit(&mut self, now: Millis) -> Res<Option<String>>;
    fn poll_event(&mut self, now: Millis) -> Res<Option<String>>;
    fn snapshot(&mut self, now: Millis) -> String;
    fn reconfigure(&mut self, options: Value) -> Res;
    fn held(&self) -> usize;
    /// The core part itself, for the typed calls of a kind ([`MachineState::typed`]).
    fn any(&mut self) -> &mut dyn Any;
}

/// A JSON text that does not read as the expected form: `INVALID_ARGUMENT`, naming `what`.
fn form(what: &str, e: serde_json::Error) -> Fail {
    Fail::invalid(format!("{what}: {e}"))
}

/// `v` as JSON text with room for the NUL that `c_string` adds (no reallocation there).
fn to_json<T: serde::Serialize>(v: &T) -> Res<String> {
    let mut buf = Vec::with_capacity(128);
    serde_json::to_writer(&mut buf, v)
        .map_err(|e| Fail::invalid(format!("writing the answer: {e}")))?;
    buf.reserve_exact(1);
    // SAFETY: serde_json writes UTF-8 only (its own `to_string` relies on the same).
    Ok(unsafe { String::from_utf8_unchecked(buf) })
}

/// [`Journaled`] without its snapshot kind: the object-safe part.
pub(crate) trait Journal {
    fn seq(&self) -> u64;
    fn take(&mut self, out: &mut Vec<u8>) -> Option<std::ops::Range<u64>>;
    fn snapshot_bytes(&mut self, out: &mut Vec<u8>) -> u64;
    fn replay(&mut self, segments: &[&[u8]]) -> leasehold_core::Result<Recovered>;
    fn resume(&mut self, now: Millis);
}

impl<J: Journaled> Journal for J {
    fn seq(&self) -> u64 {
        self.journal_seq()
    }
    fn take(&mut self, out: &mut Vec<u8>) -> Option<std::ops::Range<u64>> {
        self.take_journal(out)
    }
    fn snapshot_bytes(&mut self, out: &mut Vec<u8>) -> u64 {
        Journaled::snapshot_bytes(self, out)
    }
    fn replay(&mut self, segments: &[&[u8]]) -> leasehold_core::Result<Recovered> {
        self.replay_segments(segments)
    }
    fn resume(&mut self, now: Millis) {
        Journaled::resume(self, now)
    }
}

/// A core part as the generic layer holds it: [`Durable`] for a [`Stored`] part (it may be kept
/// in a store), [`InMemory`] for any other [`Machine`].
pub(crate) trait Held: Send {
    type M: Machine;
    fn m(&self) -> &Self::M;
    fn m_mut(&mut self) -> &mut Self::M;
    fn journal(&self) -> Option<&dyn Journal> {
        None
    }
    fn journal_mut(&mut self) -> Option<&mut dyn Journal> {
        None
    }
    fn reconfigure(&mut self, _options: Value) -> Res {
        Ok(())
    }
    fn held(&self) -> usize {
        0
    }
}

/// A [`Stored`] part.
pub(crate) struct Durable<M>(M);
/// A part with no store form.
pub(crate) struct InMemory<M>(pub(crate) M);

impl<M: Stored + Send> Held for Durable<M> {
    type M = M;
    fn m(&self) -> &M {
        &self.0
    }
    fn m_mut(&mut self) -> &mut M {
        &mut self.0
    }
    fn journal(&self) -> Option<&dyn Journal> {
        Some(&self.0)
    }
    fn journal_mut(&mut self) -> Option<&mut dyn Journal> {
        Some(&mut self.0)
    }
    fn reconfigure(&mut self, options: Value) -> Res {
        let o = serde_json::from_value(options).map_err(|e| form("options", e))?;
        Ok(Stored::reconfigure(&mut self.0, o)?)
    }
    fn held(&self) -> usize {
        Stored::held(&self.0)
    }
}

impl<M: Machine + Send> Held for InMemory<M> {
    type M = M;
    fn m(&self) -> &M {
        &self.0
    }
    fn m_mut(&mut self) -> &mut M {
        &mut self.0
    }
}

impl<H: Held<M: 'static>> Part for H {
    fn name(&self) -> &'static str {
        H::M::NAME
    }
    fn journal(&self) -> Option<&dyn Journal> {
        Held::journal(self)
    }
    fn journal_mut(&mut self) -> Option<&mut dyn Journal> {
        Held::journal_mut(self)
    }
    fn handle(&mut self, input: &str, now: Millis) -> Res<String> {
        // From `str`: the text is checked as UTF-8 once, by the caller.
        let input = serde_json::from_str(input).map_err(|e| form("input", e))?;
        to_json(&self.m_mut().handle(input, now)?)
    }
    fn poll_timeout(&self) -> Option<Millis> {
        self.m().poll_timeout()
    }
    fn handle_timeout(&mut self, now: Millis) {
        self.m_mut().handle_timeout(now)
    }
    fn poll_transmit(&mut self, now: Millis) -> Res<Option<String>> {
        self.m_mut().poll_transmit(now).map(|t| to_json(&t)).transpose()
    }
    fn poll_event(&mut self, now: Millis) -> Res<Option<String>> {
        self.m_mut().poll_event(now).map(|e| to_json(&e)).transpose()
    }
    fn snapshot(&mut self, now: Millis) -> String {
        self.m_mut().snapshot(now)
    }
    fn reconfigure(&mut self, options: Value) -> Res {
        Held::reconfigure(self, options)
    }
    fn held(&self) -> usize {
        Held::held(self)
    }
    fn any(&mut self) -> &mut dyn Any {
        self.m_mut()
    }
}

/// A boxed part is journaled as the part is (the store's functions take a sized state). Its
/// `KIND` is unused: the part's own snapshot bytes carry its kind.
pub(crate) struct Boxed(Box<dyn Part>);

impl Boxed {
    /// The journal of a part kept in a store (only a [`Stored`] part is: see [`Kind`]).
    fn journal(&mut self) -> &mut dyn Journal {
        self.0.journal_mut().expect("only a stored part is kept in a store")
    }
}

impl Journaled for Boxed {
    const KIND: u16 = 0;
    fn journal_seq(&self) -> u64 {
        self.0.journal().map_or(0, |j| j.seq())
    }
    fn take_journal(&mut self, out: &mut Vec<u8>) -> Option<std::ops::Range<u64>> {
        self.0.journal_mut()?.take(out)
    }
    fn snapshot_bytes(&mut self, out: &mut Vec<u8>) -> u64 {
        self.journal().snapshot_bytes(out)
    }
    fn replay_segments(&mut self, segments: &[&[u8]]) -> leasehold_core::Result<Recovered> {
        self.journal().replay(segments)
    }
    fn resume(&mut self, now: Millis) {
        self.journal().resume(now)
    }
}

// ---------- the kinds ----------

/// How the store builds a kind of part: from its snapshot bytes, or afresh.
type FromStore = fn(Option<&[u8]>, Value, [u8; 32]) -> leasehold_core::Result<Box<dyn Part>>;

/// How to make one kind of part, by its [`Machine::NAME`].
struct Kind {
    name: &'static str,
    c_name: &'static CStr,
    create: fn(Value, [u8; 32]) -> Res<Box<dyn Part>>,
    restore: fn(Value, &str, Millis) -> Res<Box<dyn Part>>,
    /// `None` for a part with no store form.
    from_store: Option<FromStore>,
}

fn options<M: Machine>(o: Value) -> Res<M::Options> {
    serde_json::from_value(o).map_err(|e| form("options", e))
}

impl Kind {
    const fn of<M: Stored + Send + 'static>(c_name: &'static CStr) -> Kind {
        Kind {
            name: M::NAME,
            c_name,
            create: |o, seed| Ok(Box::new(Durable(M::create(options::<M>(o)?, seed)?))),
            restore: |o, s, now| Ok(Box::new(Durable(M::restore(options::<M>(o)?, s, now)?))),
            from_store: Some(|snap, o, seed| {
                let o = serde_json::from_value(o)
                    .map_err(|e| LeaseError::InvalidArgument(format!("options: {e}")))?;
                Ok(Box::new(Durable(M::from_store(snap, o, seed)?)))
            }),
        }
    }

    const fn in_memory<M: Machine + Send + 'static>(c_name: &'static CStr) -> Kind {
        Kind {
            name: M::NAME,
            c_name,
            create: |o, seed| Ok(Box::new(InMemory(M::create(options::<M>(o)?, seed)?))),
            restore: |o, s, now| Ok(Box::new(InMemory(M::restore(options::<M>(o)?, s, now)?))),
            from_store: None,
        }
    }
}

/// Every kind of part a `leasehold_machine` can be: one line per part.
const KINDS: &[Kind] = &[
    Kind::of::<DiscoveryService>(c"DiscoveryService"),
    Kind::in_memory::<RenewalService>(c"RenewalService"),
    Kind::in_memory::<RenewalManager>(c"RenewalManager"),
];

/// The kind named by the NUL-terminated `kind`.
///
/// # Safety
/// `kind` is NULL or a NUL-terminated string.
unsafe fn kind_arg(kind: *const c_char) -> Res<&'static Kind> {
    if kind.is_null() {
        return Err(null("kind"));
    }
    let k = unsafe { CStr::from_ptr(kind) }.to_bytes();
    KINDS.iter().find(|k2| k2.name.as_bytes() == k).ok_or_else(|| {
        let names: Vec<_> = KINDS.iter().map(|k| k.name).collect();
        Fail::invalid(format!(
            "kind {:?} is not a part libleasehold knows (it knows {})",
            String::from_utf8_lossy(k),
            names.join(", ")
        ))
    })
}

/// Settings JSON (`len` bytes) as a value.
///
/// # Safety
/// `json` is NULL or points to `len` bytes.
unsafe fn json_arg(json: *const c_char, len: usize, what: &str) -> Res<Value> {
    if json.is_null() {
        return Err(null(what));
    }
    serde_json::from_str(unsafe { text(json, len, what) }?).map_err(|e| form(what, e))
}

// ---------- the handle ----------

/// A sans-I/O part of the core (opaque), of the kind named when it was made
/// (`"DiscoveryService"`), in memory or kept in a store. Free with `leasehold_machine_free`.
/// Not to be used from two threads at once; it may move between threads.
#[allow(non_camel_case_types)]
pub struct leasehold_machine {
    h: Handle<MachineState>,
}
opaque!(leasehold_machine, MachineState, "machine", "machine");

/// What a machine handle owns: the part and, for a durable one, its store.
pub(crate) type MachineState = store::Kept<Boxed>;

impl MachineState {
    /// The part as its core type, for the typed calls a kind keeps over this handle
    /// (`holder.rs`); a machine of another kind is `INVALID_ARGUMENT`.
    pub(crate) fn typed<T: 'static>(&mut self) -> Res<&mut T> {
        let name = self.state.0.name();
        let e = || Fail::invalid(format!("a {name} machine does not take this call"));
        self.state.0.any().downcast_mut().ok_or_else(e)
    }
}

type Mach = leasehold_machine;

pub(crate) fn give_part(part: Box<dyn Part>, out: Out<*mut Mach>) {
    give(MachineState::memory(Boxed(part)), out);
}

/// A new part of kind `kind` (NUL-terminated, its name: `"DiscoveryService"`) from its settings
/// `options` (`options_len` bytes of JSON: an object, each setting the part's documentation
/// names; unknown names are `INVALID_ARGUMENT`), with the secret cookie seed `seed`
/// (`seed_len` = `LEASEHOLD_SEED_SIZE`, real entropy; a `"seed"` in `options` wins).
///
/// # Safety
/// `kind` is NULL or NUL-terminated; `options` is NULL or points to `options_len` bytes; `seed`
/// is NULL or points to `seed_len` bytes; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_machine_new(
    kind: *const c_char,
    options: *const c_char,
    options_len: usize,
    seed: *const u8,
    seed_len: usize,
    out: *mut *mut leasehold_machine,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let k = unsafe { kind_arg(kind) }?;
        let o = unsafe { json_arg(options, options_len, "options") }?;
        give_part((k.create)(o, unsafe { seed_arg(seed, seed_len) }?)?, out);
        Ok(())
    })
}

/// A part of kind `kind` rebuilt at `now` from `snapshot` (`snapshot_len` bytes of the JSON
/// `leasehold_machine_snapshot` wrote) with `options` (its id must be the snapshot's).
///
/// # Safety
/// `kind` is NULL or NUL-terminated; the buffers are NULL or point to their lengths; `out` is
/// NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_machine_restore(
    kind: *const c_char,
    options: *const c_char,
    options_len: usize,
    snapshot: *const c_char,
    snapshot_len: usize,
    now: i64,
    out: *mut *mut leasehold_machine,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let k = unsafe { kind_arg(kind) }?;
        let o = unsafe { json_arg(options, options_len, "options") }?;
        let snap = unsafe { text(snapshot, snapshot_len, "snapshot") }?;
        give_part((k.restore)(o, snap, now)?, out);
        Ok(())
    })
}

/// Frees a machine. A durable one writes nothing more (commit first for a clean shutdown) and
/// releases its directory. NULL is ignored; inside a store callback of one of its calls it is
/// freed when that call returns.
///
/// # Safety
/// `machine` was made by libleasehold and not freed before.
#[no_mangle]
pub unsafe extern "C" fn leasehold_machine_free(machine: *mut leasehold_machine) {
    unsafe { handle::free(machine) }
}

/// The machine's kind (NUL-terminated, static: never freed).
///
/// # Safety
/// `machine` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_machine_kind(
    machine: *const leasehold_machine,
    out: *mut *const c_char,
) -> leasehold_status {
    unsafe {
        handle::get(machine, out, |s| {
            let name = s.state.0.name();
            let k = KINDS.iter().find(|k| k.name == name).expect("made from KINDS");
            Ok(k.c_name.as_ptr())
        })
    }
}

/// Hands JSON text to C (`leasehold_string_free`).
///
/// # Safety
/// `out` is writable.
unsafe fn give_json(v: String, out: Out<*mut c_char>) -> Res {
    unsafe { out.write(c_string(v)?) };
    Ok(())
}

/// Carries out one call of the part at `now`: `input` (`input_len` bytes) is a JSON object
/// whose `"op"` names the call and whose other members are its arguments (the part's
/// documentation lists them: `{"op": "add_groups", "registration": 1, "groups": ["a"]}`).
/// `*out_json` is the answer as JSON text (`null` for a call that answers nothing), freed with
/// `leasehold_string_free`. An input that is not one of the part's calls (unknown op, missing
/// or unknown member, wrong type) is `INVALID_ARGUMENT` naming what is wrong; a call the core
/// refuses fails with the core's status.
///
/// For a durable part, an answer that leaves the process depends on the records up to
/// `leasehold_machine_journal_seq` read right after the call: commit before sending it.
///
/// # Safety
/// `machine` is NULL or live; `input` is NULL or points to `input_len` bytes; `out_json` is
/// NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_machine_handle(
    machine: *mut leasehold_machine,
    input: *const c_char,
    input_len: usize,
    now: i64,
    out_json: *mut *mut c_char,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out_json, "out_json")?;
        if input.is_null() {
            return Err(null("input"));
        }
        let input = unsafe { text(input, input_len, "input") }?;
        let v = unsafe { write(machine, |s| s.state.0.handle(input, now)) }?;
        unsafe { give_json(v, out) }
    })
}

/// Hands one wire message (`len` bytes in `encoding`) to the part at `now` with the input
/// `{"op": op, "protocol": protocol, "message": <the bytes>, "encoding": ...}` (`op`
/// NUL-terminated; `protocol` NUL-terminated, or NULL for a part whose input has none), without
/// spelling the bytes as JSON. `*out_data` (`*out_len` bytes, `leasehold_bytes_free`) is the
/// answer: the reply's bytes, in the same encoding, when the input answers a message; else its
/// JSON text (`null`, `true`, ...). A discovery service serves with op `"serve"` and protocol
/// `"lease"`, `"discovery"` (a request that does not decode gets an error reply) or
/// `"event_reply"` (a listener's answer: `true` when a report was awaited); a renewal service
/// with op `"serve"` (requests about set leases) and `"reply"` (a client lease landlord's reply),
/// protocol NULL.
///
/// # Safety
/// `machine` is NULL or live; `op` is NULL or NUL-terminated; `protocol` is NULL or
/// NUL-terminated; `message` is NULL or points to `len` bytes; the outputs are NULL or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn leasehold_machine_serve(
    machine: *mut leasehold_machine,
    op: *const c_char,
    protocol: *const c_char,
    message: *const u8,
    len: usize,
    encoding_: i32,
    now: i64,
    out_data: *mut *mut u8,
    out_len: *mut usize,
) -> leasehold_status {
    guard(|| {
        let (d, n) = (Out::new(out_data, "out_data")?, Out::new(out_len, "out_len")?);
        if op.is_null() {
            return Err(null("op"));
        }
        let text = |p: *const c_char| unsafe { CStr::from_ptr(p) }.to_string_lossy();
        let enc = encoding(encoding_)?;
        let message = unsafe { slice(message, len, "message") }?;
        let mut input = serde_json::json!({"op": text(op), "message": message, "encoding": enc});
        if !protocol.is_null() {
            input["protocol"] = Value::from(text(protocol));
        }
        let input = serde_json::to_string(&input).map_err(|e| form("input", e))?;
        let v = unsafe { write(machine, |s| s.state.0.handle(&input, now)) }?;
        let bytes = match serde_json::from_str::<Vec<u8>>(&v) {
            Ok(b) => b,
            Err(_) => v.into_bytes(),
        };
        unsafe { give_bytes(bytes, d, n) };
        Ok(())
    })
}

/// When to call `leasehold_machine_handle_timeout` next: `*out_has` false when nothing is due.
///
/// # Safety
/// `machine` is NULL or live; the outputs are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_machine_poll_timeout(
    machine: *const leasehold_machine,
    out_has: *mut bool,
    out_at: *mut i64,
) -> leasehold_status {
    guard(|| {
        let out = Maybe::new(out_has, "out_has", out_at, "out_at")?;
        let at = unsafe { read(machine, |s| Ok(s.state.0.poll_timeout())) }?;
        unsafe { out.write(at) };
        Ok(())
    })
}

/// Advances the part to `now` (retries, time-outs, expiries).
///
/// # Safety
/// `machine` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn leasehold_machine_handle_timeout(
    machine: *mut leasehold_machine,
    now: i64,
) -> leasehold_status {
    unsafe {
        handle::change(machine, |s| {
            s.state.0.handle_timeout(now);
            Ok(())
        })
    }
}

/// The body of `_poll_transmit` and `_poll_event`.
///
/// # Safety
/// `machine` is NULL or live; the outputs are NULL or writable.
unsafe fn poll_json(
    machine: *mut Mach,
    out_found: *mut bool,
    out_json: *mut *mut c_char,
    f: impl FnOnce(&mut dyn Part) -> Res<Option<String>>,
) -> leasehold_status {
    guard(|| {
        let out = Maybe::new(out_found, "out_found", out_json, "out_json")?;
        let v = unsafe { write(machine, |s| f(&mut *s.state.0)) }?;
        let text = v.map(c_string).transpose()?;
        unsafe { out.write(text) };
        Ok(())
    })
}

/// The next thing the host must send (for a discovery service: a unicast probe,
/// `{"id", "locator", "host", "port"}`), as JSON text (`leasehold_string_free`);
/// `*out_found` false when there is none.
///
/// # Safety
/// `machine` is NULL or live; the outputs are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_machine_poll_transmit(
    machine: *mut leasehold_machine,
    now: i64,
    out_found: *mut bool,
    out_json: *mut *mut c_char,
) -> leasehold_status {
    unsafe { poll_json(machine, out_found, out_json, |p| p.poll_transmit(now)) }
}

/// The next event the host must deliver (for a discovery service: `{"event_id", "source",
/// "sequence", "handback", "discarded", "registrars", "listener"}`), as JSON text
/// (`leasehold_string_free`); `*out_found` false when there is none. Report the outcome with
/// the part's `delivered` / `delivery_failed` calls.
///
/// # Safety
/// `machine` is NULL or live; the outputs are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_machine_poll_event(
    machine: *mut leasehold_machine,
    now: i64,
    out_found: *mut bool,
    out_json: *mut *mut c_char,
) -> leasehold_status {
    unsafe { poll_json(machine, out_found, out_json, |p| p.poll_event(now)) }
}

/// Everything the part holds at `now`, as JSON text (`leasehold_string_free`; it holds
/// secrets: keep it like a key), for `leasehold_machine_restore`.
///
/// # Safety
/// `machine` is NULL or live; `out_json` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_machine_snapshot(
    machine: *mut leasehold_machine,
    now: i64,
    out_json: *mut *mut c_char,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out_json, "out_json")?;
        let s = unsafe { write(machine, |s| Ok(s.state.0.snapshot(now))) }?;
        unsafe { out.write(c_string(s)?) };
        Ok(())
    })
}

// ---------- durability ----------

/// Splits the store settings (`"store": {"segment_bytes", "min_compact_bytes"}`) off the
/// options of a durable part.
fn store_settings(mut o: Value) -> Res<(Value, StoreConfig)> {
    let mut c = StoreConfig::default();
    if let Some(s) = o.as_object_mut().and_then(|m| m.remove("store")) {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct S {
            segment_bytes: Option<u64>,
            min_compact_bytes: Option<u64>,
        }
        let s: S = serde_json::from_value(s).map_err(|e| form("options.store", e))?;
        c.segment_bytes = s.segment_bytes.unwrap_or(c.segment_bytes);
        c.min_compact_bytes = s.min_compact_bytes.unwrap_or(c.min_compact_bytes);
        if c.segment_bytes == 0 {
            return Err(Fail::invalid("options.store.segment_bytes must be at least 1"));
        }
    }
    Ok((o, c))
}

/// The body of `_open_dir` and `_open_io`: a part of kind `kind` from the store `src` names,
/// with the host's settings applied (journaled and committed at once).
///
/// # Safety
/// As the callers'.
unsafe fn open(
    out: *mut *mut Mach,
    out_info: *mut leasehold_recovery,
    kind: *const c_char,
    src: impl FnOnce() -> Res<store::Source>,
    (options, options_len): (*const c_char, usize),
    (seed, seed_len): (*const u8, usize),
    now: i64,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let k = unsafe { kind_arg(kind) }?;
        let k = k.from_store.ok_or_else(|| {
            Fail::invalid(format!("a {} is not kept in a store: make it with _new", k.name))
        })?;
        let (o, c) = store_settings(unsafe { json_arg(options, options_len, "options") }?)?;
        let (seed, o2) = (unsafe { seed_arg(seed, seed_len) }?, o.clone());
        let opened = src()?.open(c, now, move |snap| k(snap, o2, seed).map(Boxed))?;
        let store::Reopened { state: mut part, store: mut st, recovered, created } = opened;
        part.0.reconfigure(o)?;
        st.commit_now(&mut part)?;
        let r = store::recovery(&recovered, created, &part, part.0.held());
        give(store::Kept { state: part, store: Some(st) }, out);
        unsafe { Out::put(out_info, r) };
        Ok(())
    })
}

/// Opens a durable part of kind `kind` kept in the directory `path` (`path_len` bytes),
/// creating it if needed and recovering what is there exactly as `leasehold_landlord_open_dir`
/// does (a torn tail dropped, damage `DECODE` naming the file and offset, a directory in use
/// `IO`; time spent down does not count). `options` are the part's settings plus, optionally,
/// `"store": {"segment_bytes": n, "min_compact_bytes": n}`; a new store takes all of them, an
/// existing one keeps its id and seed (another id is `INVALID_ARGUMENT`) and takes the rest from
/// now on. `*out_info` (optional) says what was recovered (`leases`: what the part holds, for a
/// discovery service its registrations).
///
/// **Nothing leaves before it is durable**: an answer, a reply, an event or a probe handed out
/// depends on the records up to `leasehold_machine_journal_seq` read right after the call;
/// answer what is waiting, `leasehold_machine_commit` (one append, one sync), then send.
///
/// # Safety
/// `kind` is NULL or NUL-terminated; the buffers are NULL or point to their lengths; the
/// outputs are NULL or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn leasehold_machine_open_dir(
    kind: *const c_char,
    path: *const c_char,
    path_len: usize,
    options: *const c_char,
    options_len: usize,
    seed: *const u8,
    seed_len: usize,
    now: i64,
    out: *mut *mut leasehold_machine,
    out_info: *mut leasehold_recovery,
) -> leasehold_status {
    let src = || unsafe { store::Source::dir(path, path_len) };
    unsafe { open(out, out_info, kind, src, (options, options_len), (seed, seed_len), now) }
}

/// Opens a durable part kept in the host's own storage, as `leasehold_landlord_open_io`
/// (`files` as the host read them, `io` for every file operation, run inside this call,
/// `_commit` and `_compact`); the rest as `leasehold_machine_open_dir`.
///
/// # Safety
/// `kind` is NULL or NUL-terminated; `io` is NULL or valid with valid callbacks; `files` is
/// NULL or points to `file_count` valid entries; the buffers are NULL or point to their
/// lengths; the outputs are NULL or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn leasehold_machine_open_io(
    kind: *const c_char,
    io: *const leasehold_store_io,
    files: *const leasehold_store_file,
    file_count: usize,
    options: *const c_char,
    options_len: usize,
    seed: *const u8,
    seed_len: usize,
    now: i64,
    out: *mut *mut leasehold_machine,
    out_info: *mut leasehold_recovery,
) -> leasehold_status {
    let src = || unsafe { store::Source::host(io, files, file_count) };
    unsafe { open(out, out_info, kind, src, (options, options_len), (seed, seed_len), now) }
}

/// The sequence number of the last record the part journaled: what an answer handed out now
/// depends on. 0 in memory.
///
/// # Safety
/// `machine` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_machine_journal_seq(
    machine: *const leasehold_machine,
    out: *mut u64,
) -> leasehold_status {
    unsafe { store::journal_seq(machine, out) }
}

/// Makes everything journaled so far durable (one append, one sync: group commit; a compaction
/// when the log has outgrown the snapshot); `*out_durable` is the last durable record. A
/// failed write is `IO`, and so is every later commit: send nothing still waiting, free the
/// machine and open the store again. In memory: OK, `*out_durable` 0.
///
/// # Safety
/// `machine` is NULL or live; `out_durable` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_machine_commit(
    machine: *mut leasehold_machine,
    out_durable: *mut u64,
) -> leasehold_status {
    unsafe { store::commit_out(machine, false, out_durable) }
}

/// Commits, then writes a new snapshot and removes the log it covers.
///
/// # Safety
/// `machine` is NULL or live; `out_durable` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_machine_compact(
    machine: *mut leasehold_machine,
    out_durable: *mut u64,
) -> leasehold_status {
    unsafe { store::commit_out(machine, true, out_durable) }
}

/// Whether the machine is kept in a store (opened with `_open_dir` or `_open_io`).
///
/// # Safety
/// `machine` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_machine_is_durable(
    machine: *const leasehold_machine,
    out: *mut bool,
) -> leasehold_status {
    unsafe { store::is_durable(machine, out) }
}

// ---------- messages ----------

fn transcode<M: Message>(b: &[u8], from: Encoding, to: Encoding, l: &Limits) -> Res<Vec<u8>> {
    Ok(machine::transcode::<M>(b, from, to, l)?)
}

/// An announcement datagram: its JSON form is the data form, its binary form the datagram.
fn announcement(b: &[u8], from: Encoding, to: Encoding) -> Res<Vec<u8>> {
    let a = match from {
        Encoding::Binary => Announcement::decode(b)?,
        Encoding::Json => serde_json::from_slice(b).map_err(|e| {
            Fail::new(leasehold_status::LEASEHOLD_STATUS_DECODE, format!("announcement: {e}"))
        })?,
    };
    match to {
        Encoding::Binary => Ok(a.encode()?),
        Encoding::Json => serde_json::to_vec(&a).map_err(|e| form("announcement", e)),
    }
}

/// Re-encodes a wire message of kind `kind` (NUL-terminated: `"Request"`, `"Reply"`,
/// `"DiscoveryRequest"`, `"DiscoveryReply"`, `"DiscoveryEvent"`, `"EventReply"`, or
/// `"Announcement"`, whose binary form is the announcement datagram and JSON form
/// `{"registrar", "groups", "locator", "sequence", "ttl"}`): `data` (`len` bytes) is decoded
/// from encoding `from` and checked against `limits` (NULL: the defaults), then encoded as
/// `to` into `*out_data` (`*out_len` bytes, `leasehold_bytes_free`). From JSON to binary
/// builds a message from its JSON text (the form `core/tests/vectors` shows); from binary to
/// JSON reads one; from an encoding to itself checks and canonicalises. A message that does
/// not decode is `DECODE`.
///
/// # Safety
/// `kind` is NULL or NUL-terminated; `data` is NULL or points to `len` bytes; `limits` is NULL
/// or valid; the outputs are NULL or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn leasehold_message_transcode(
    kind: *const c_char,
    data: *const u8,
    len: usize,
    from: i32,
    to: i32,
    limits: *const leasehold_limits,
    out_data: *mut *mut u8,
    out_len: *mut usize,
) -> leasehold_status {
    guard(|| {
        let (d, n) = (Out::new(out_data, "out_data")?, Out::new(out_len, "out_len")?);
        if kind.is_null() {
            return Err(null("kind"));
        }
        let (from, to) = (encoding(from)?, encoding(to)?);
        let b = unsafe { slice(data, len, "data") }?;
        let l = unsafe { limits_or_default(limits) };
        let v = match unsafe { CStr::from_ptr(kind) }.to_bytes() {
            b"Request" => transcode::<Request>(b, from, to, &l),
            b"Reply" => transcode::<Reply>(b, from, to, &l),
            b"DiscoveryRequest" => transcode::<DiscoveryRequest>(b, from, to, &l),
            b"DiscoveryReply" => transcode::<DiscoveryReply>(b, from, to, &l),
            b"DiscoveryEvent" => transcode::<RemoteDiscoveryEvent>(b, from, to, &l),
            b"EventReply" => transcode::<EventReply>(b, from, to, &l),
            b"Announcement" => announcement(b, from, to),
            k => Err(Fail::invalid(format!(
                "kind {:?} is not a message kind",
                String::from_utf8_lossy(k)
            ))),
        }?;
        unsafe { give_bytes(v, d, n) };
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn kinds_carry_their_names() {
        for k in super::KINDS {
            assert_eq!(k.c_name.to_str().unwrap(), k.name);
        }
    }
}
