//! Lookup discovery (seed 003, LD) for C, the values and the messages: texts and lists, groups,
//! registrar ids, registrars, announcements, discovery events, and the wire messages a client
//! exchanges with a discovery service over any transport (requests, replies, events and the
//! listener's answers), JSON or binary. The service itself is in `discovery.rs`.
//!
//! Values the library hands out that hold lists (`leasehold_registrar`, `leasehold_groups`,
//! `leasehold_text_list`, `leasehold_announcement`, `leasehold_discovery_event`, ...) are the
//! caller's, released with their `_clear` function, which frees everything inside and zeroes the
//! struct. Only clear what the library filled; clearing a zeroed struct does nothing.

use std::ffi::c_char;

use leasehold_core::discovery::wire::{
    DiscoveryReply, DiscoveryReplyBody as RB, DiscoveryRequest, DiscoveryRequestBody as QB,
    EventReply, EventReplyBody,
};
use leasehold_core::discovery::{
    check_group, Announcement, DiscoveryChange, Groups, Locator, Registrar, RegistrarId,
    RemoteDiscoveryEvent, UnicastRequest,
};
use leasehold_core::event::{EventSource, RemoteEvent};
use leasehold_core::lease::LandlordId;
use leasehold_core::wire::WireError;
use leasehold_core::LeaseError;

use crate::common::{
    bytes_out, c_string, encoding, leasehold_bytes_free, leasehold_cookie, leasehold_limits,
    leasehold_string_free, limits_or_default, take_bytes, LEASEHOLD_COOKIE_HEX_SIZE,
};
use crate::error::{arg, guard, guard_void, leasehold_status, null, slice, text, Fail, Out, Res};
use crate::event::leasehold_event_source;
use crate::handle::{free_box, give_box};
use crate::sansio::CEvent;
use crate::wire::{message, wrong_op};

// ---------- values ----------

/// A piece of text: `len` bytes of UTF-8 at `ptr`. Text you pass in needs no NUL; text the
/// library hands out has one after the `len` bytes (so `ptr` is also a C string) and belongs to
/// the struct holding it.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct leasehold_text {
    /// The bytes (NULL is allowed when `len` is 0).
    pub ptr: *const c_char,
    /// Their number, without any NUL.
    pub len: usize,
}

/// A list of texts the library hands out (a registrar's groups or locators): `count` of them
/// at `items`. Release one returned alone with `leasehold_text_list_clear`.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug)]
pub struct leasehold_text_list {
    /// The texts.
    pub items: *const leasehold_text,
    /// How many.
    pub count: usize,
}

/// The groups a registration wants (Jini's managed set of groups): `all` for every group
/// (Jini's `ALL_GROUPS`; `names` is then ignored), else the `count` names at `names` (none at
/// all is `NO_GROUPS`; `""` is the public group; each at most 255 bytes; duplicates collapse).
/// As an input the names are yours; filled by the library, release it with
/// `leasehold_groups_clear`.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug)]
pub struct leasehold_groups {
    /// Every group (`names` ignored).
    pub all: bool,
    /// The names.
    pub names: *const leasehold_text,
    /// How many names.
    pub count: usize,
}

/// A lookup service's id (Jini's `ServiceID`): 128 bits, most significant byte first.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct leasehold_registrar_id {
    /// The 16 bytes, big-endian.
    pub bytes: [u8; 16],
}

impl From<RegistrarId> for leasehold_registrar_id {
    fn from(r: RegistrarId) -> Self {
        leasehold_registrar_id { bytes: r.0.to_be_bytes() }
    }
}

impl From<leasehold_registrar_id> for RegistrarId {
    fn from(r: leasehold_registrar_id) -> Self {
        RegistrarId(u128::from_be_bytes(r.bytes))
    }
}

/// A lookup service as the discovery service knows it: its id, the groups it is a member of,
/// and the locators (`"host:port"`, `"[v6]:port"`) it was found at. Filled by the library:
/// release with `leasehold_registrar_clear` (or with the list or event holding it).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug)]
pub struct leasehold_registrar {
    /// Its id.
    pub id: leasehold_registrar_id,
    /// Its groups, in order.
    pub groups: leasehold_text_list,
    /// Where it was found, in order.
    pub locators: leasehold_text_list,
}

/// Registrars in id order. Filled by the library: release with
/// `leasehold_registrar_list_clear` (or with the event holding it).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug)]
pub struct leasehold_registrar_list {
    /// The registrars.
    pub items: *const leasehold_registrar,
    /// How many.
    pub count: usize,
}

/// A registrar's announcement (the datagram's fields): who, its groups, where it takes unicast
/// discovery, a sequence number that grows with every announcement (across restarts), and how
/// long (ms, 1 to 2^32 - 1) it counts as present without another. As an input the texts are
/// yours; filled by `leasehold_announcement_decode`, release with `leasehold_announcement_clear`.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug)]
pub struct leasehold_announcement {
    /// Who announces.
    pub registrar: leasehold_registrar_id,
    /// Its groups.
    pub groups: leasehold_text_list,
    /// Its locator, `"host:port"` or `"[v6]:port"`.
    pub locator: leasehold_text,
    /// Grows with every announcement of this registrar.
    pub sequence: u64,
    /// How long it counts as present after this announcement, in ms.
    pub ttl: i64,
}

/// An event for a registration's listener (Jini's `RemoteDiscoveryEvent`): registrars
/// discovered or discarded, with the registration's event id, a sequence number strictly
/// greater than every earlier one of that event id, and the handback exactly as registered.
/// From `leasehold_discovery_service_poll_event` or `leasehold_discovery_event_decode` it is
/// yours: release it with `leasehold_discovery_event_clear`. Inside a driver callback it is
/// borrowed for the call.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug)]
pub struct leasehold_discovery_event {
    /// The registration's event id.
    pub event_id: u64,
    /// Who sent it: the service's id and the registration's number.
    pub source: leasehold_event_source,
    /// Strictly greater than every earlier sequence number of this event id.
    pub sequence: u64,
    /// The registration's handback, byte for byte.
    pub handback: *const u8,
    /// Length of `handback`.
    pub handback_len: usize,
    /// True for a discarded event, false for a discovered one.
    pub discarded: bool,
    /// The registrars discovered or discarded (at least one), in id order.
    pub registrars: leasehold_registrar_list,
}

/// A unicast discovery for the host to make: contact the lookup service at `host`:`port` and
/// report what it found, quoting `id`. Filled by the library: release with
/// `leasehold_unicast_request_clear` (inside a driver callback it is borrowed for the call).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug)]
pub struct leasehold_unicast_request {
    /// Quote it in the answer.
    pub id: u64,
    /// The host (lower case; an IPv6 literal without brackets), NUL-terminated.
    pub host: *mut c_char,
    /// The port.
    pub port: u16,
    /// The locator as text (`"host:port"`, `"[v6]:port"`), NUL-terminated.
    pub locator: *mut c_char,
}

// ---------- values: into and out of C ----------

/// A vector as a C list the caller owns (freed by [`take_list`]).
fn give_list<T>(v: Vec<T>) -> (*const T, usize) {
    let b = v.into_boxed_slice();
    let n = b.len();
    (Box::into_raw(b).cast::<T>().cast_const(), n)
}

/// Takes back a list made by [`give_list`] (NULL: empty).
///
/// # Safety
/// `p` and `n` came from [`give_list`] and were not taken back before.
unsafe fn take_list<T>(p: *const T, n: usize) -> Vec<T> {
    if p.is_null() {
        return Vec::new();
    }
    unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(p.cast_mut(), n)) }.into_vec()
}

fn give_text(s: &str) -> leasehold_text {
    let mut v = Vec::with_capacity(s.len() + 1);
    v.extend_from_slice(s.as_bytes());
    v.push(0);
    let (p, n) = take_bytes(v);
    leasehold_text { ptr: p.cast::<c_char>().cast_const(), len: n - 1 }
}

/// # Safety
/// `t` was made by [`give_text`] and not freed before.
unsafe fn free_text(t: &leasehold_text) {
    if !t.ptr.is_null() {
        unsafe { leasehold_bytes_free(t.ptr.cast::<u8>().cast_mut(), t.len + 1) }
    }
}

pub(crate) fn give_texts<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> leasehold_text_list {
    let v: Vec<leasehold_text> = items.into_iter().map(|s| give_text(s.as_ref())).collect();
    let (items, count) = give_list(v);
    leasehold_text_list { items, count }
}

/// # Safety
/// `l` was filled by the library (or zeroed).
unsafe fn clear_texts(l: &mut leasehold_text_list) {
    for t in unsafe { take_list(l.items, l.count) } {
        unsafe { free_text(&t) };
    }
    *l = leasehold_text_list { items: std::ptr::null(), count: 0 };
}

pub(crate) fn give_groups(g: &Groups) -> leasehold_groups {
    match g.names() {
        None => leasehold_groups { all: true, names: std::ptr::null(), count: 0 },
        Some(names) => {
            let l = give_texts(names);
            leasehold_groups { all: false, names: l.items, count: l.count }
        }
    }
}

pub(crate) fn give_registrar(r: &Registrar) -> leasehold_registrar {
    leasehold_registrar {
        id: r.id.into(),
        groups: give_texts(&r.groups),
        locators: give_texts(r.locators.iter().map(|l| l.to_string())),
    }
}

/// # Safety
/// `r` was filled by the library (or zeroed).
unsafe fn clear_registrar(r: &mut leasehold_registrar) {
    unsafe {
        clear_texts(&mut r.groups);
        clear_texts(&mut r.locators);
    }
}

pub(crate) fn give_registrars(v: &[Registrar]) -> leasehold_registrar_list {
    let (items, count) = give_list(v.iter().map(give_registrar).collect());
    leasehold_registrar_list { items, count }
}

/// # Safety
/// `l` was filled by the library (or zeroed).
unsafe fn clear_registrars(l: &mut leasehold_registrar_list) {
    for mut r in unsafe { take_list(l.items, l.count) } {
        unsafe { clear_registrar(&mut r) };
    }
    *l = leasehold_registrar_list { items: std::ptr::null(), count: 0 };
}

/// `count` texts at `p` as `&str`s (each checked: NULL with a length, UTF-8).
///
/// # Safety
/// `p` is NULL or points to `count` texts, each NULL or pointing to its `len` bytes.
pub(crate) unsafe fn texts_in<'a>(
    p: *const leasehold_text,
    count: usize,
    name: &str,
) -> Res<Vec<&'a str>> {
    let items = unsafe { slice(p, count, name) }?;
    let mut v = Vec::with_capacity(items.len());
    for (i, t) in items.iter().enumerate() {
        v.push(unsafe { text(t.ptr, t.len, &format!("{name}[{i}]")) }?);
    }
    Ok(v)
}

/// Group names (each at most 255 bytes).
///
/// # Safety
/// As [`texts_in`].
pub(crate) unsafe fn names_in(
    p: *const leasehold_text,
    count: usize,
    name: &str,
) -> Res<Vec<String>> {
    let v = unsafe { texts_in(p, count, name) }?;
    v.iter().try_for_each(|n| check_group(n))?;
    Ok(v.into_iter().map(str::to_string).collect())
}

/// # Safety
/// `g`'s names as for [`texts_in`].
pub(crate) unsafe fn groups_in(g: &leasehold_groups) -> Res<Groups> {
    if g.all {
        return Ok(Groups::All);
    }
    Ok(Groups::of(unsafe { names_in(g.names, g.count, "groups.names") }?))
}

/// Locators from their text forms (a bad one is `INVALID_ARGUMENT`).
///
/// # Safety
/// As [`texts_in`].
pub(crate) unsafe fn locators_in(
    p: *const leasehold_text,
    count: usize,
    name: &str,
) -> Res<Vec<Locator>> {
    let v = unsafe { texts_in(p, count, name) }?;
    Ok(v.into_iter().map(str::parse).collect::<Result<Vec<Locator>, LeaseError>>()?)
}

/// # Safety
/// `r`'s lists point to valid texts.
unsafe fn registrar_in(r: &leasehold_registrar) -> Res<Registrar> {
    let groups = unsafe { names_in(r.groups.items, r.groups.count, "groups") }?;
    let locators = unsafe { locators_in(r.locators.items, r.locators.count, "locators") }?;
    Ok(Registrar {
        id: r.id.into(),
        groups: groups.into_iter().collect(),
        locators: locators.into_iter().collect(),
    })
}

/// # Safety
/// `a`'s texts are valid.
pub(crate) unsafe fn announcement_in(a: &leasehold_announcement) -> Res<Announcement> {
    let groups = unsafe { names_in(a.groups.items, a.groups.count, "groups") }?;
    let locator = unsafe { text(a.locator.ptr, a.locator.len, "locator") }?.parse()?;
    Ok(Announcement {
        registrar: a.registrar.into(),
        groups: groups.into_iter().collect(),
        locator,
        sequence: a.sequence,
        ttl: a.ttl,
    })
}

fn give_announcement(a: &Announcement) -> leasehold_announcement {
    leasehold_announcement {
        registrar: a.registrar.into(),
        groups: give_texts(&a.groups),
        locator: give_text(&a.locator.to_string()),
        sequence: a.sequence,
        ttl: a.ttl,
    }
}

impl CEvent for leasehold_discovery_event {
    type Core = RemoteDiscoveryEvent;
    fn convert(e: RemoteDiscoveryEvent) -> Res<leasehold_discovery_event> {
        let (handback, handback_len) = take_bytes(e.handback);
        Ok(leasehold_discovery_event {
            event_id: e.event_id,
            source: e.source.into(),
            sequence: e.sequence,
            handback: handback.cast_const(),
            handback_len,
            discarded: e.kind.discarded,
            registrars: give_registrars(&e.kind.registrars),
        })
    }
    unsafe fn free_fields(&self) {
        unsafe {
            leasehold_bytes_free(self.handback.cast_mut(), self.handback_len);
            let mut r = leasehold_registrar_list {
                items: self.registrars.items,
                count: self.registrars.count,
            };
            clear_registrars(&mut r);
        }
    }
}

impl CEvent for leasehold_unicast_request {
    type Core = UnicastRequest;
    fn convert(r: UnicastRequest) -> Res<leasehold_unicast_request> {
        Ok(leasehold_unicast_request {
            id: r.id,
            host: c_string(r.locator.host().to_string())?,
            port: r.locator.port(),
            locator: c_string(r.locator.to_string())?,
        })
    }
    unsafe fn free_fields(&self) {
        unsafe {
            leasehold_string_free(self.host);
            leasehold_string_free(self.locator);
        }
    }
}

/// # Safety
/// `e`'s pointers are valid for their lengths.
unsafe fn event_in(e: &leasehold_discovery_event) -> Res<RemoteDiscoveryEvent> {
    let handback = unsafe { slice(e.handback, e.handback_len, "handback") }?.to_vec();
    let rs = unsafe { slice(e.registrars.items, e.registrars.count, "registrars.items") }?;
    let registrars = rs.iter().map(|r| unsafe { registrar_in(r) }).collect::<Res<Vec<_>>>()?;
    Ok(RemoteEvent {
        event_id: e.event_id,
        source: EventSource { service: LandlordId(e.source.service), object: e.source.object },
        sequence: e.sequence,
        handback,
        kind: DiscoveryChange { discarded: e.discarded, registrars },
    })
}

/// The body of a `_clear`: NULL is ignored.
///
/// # Safety
/// `p` is NULL or points to a struct the library filled (or a zeroed one).
unsafe fn clear<T>(p: *mut T, f: impl FnOnce(&mut T)) {
    guard_void(|| {
        if let Some(v) = unsafe { p.as_mut() } {
            f(v)
        }
    })
}

// ---------- values: exported ----------

/// Length of a registrar id's text form: 32 lower-case hex digits and the NUL.
pub const LEASEHOLD_REGISTRAR_ID_HEX_SIZE: usize = LEASEHOLD_COOKIE_HEX_SIZE;

/// Writes a registrar id as 32 lower-case hex digits and a NUL into `buf` of `buf_len` bytes
/// (at least `LEASEHOLD_REGISTRAR_ID_HEX_SIZE`, else `BUFFER_TOO_SMALL`).
///
/// # Safety
/// `buf` is NULL or points to `buf_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn leasehold_registrar_id_to_hex(
    id: leasehold_registrar_id,
    buf: *mut c_char,
    buf_len: usize,
) -> leasehold_status {
    let as_cookie = leasehold_cookie { bytes: id.bytes };
    unsafe { crate::common::leasehold_cookie_to_hex(as_cookie, buf, buf_len) }
}

/// Reads a registrar id from exactly 32 hex digits (`len` bytes, no NUL needed).
///
/// # Safety
/// `hex` is NULL or points to `len` bytes; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_registrar_id_from_hex(
    hex: *const c_char,
    len: usize,
    out: *mut leasehold_registrar_id,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let id: RegistrarId = unsafe { text(hex, len, "hex") }?.parse()?;
        unsafe { out.write(id.into()) };
        Ok(())
    })
}

/// Releases a text list the library filled and zeroes it. NULL is ignored.
///
/// # Safety
/// `list` is NULL, zeroed, or filled by libleasehold and not cleared since.
#[no_mangle]
pub unsafe extern "C" fn leasehold_text_list_clear(list: *mut leasehold_text_list) {
    unsafe { clear(list, |l| clear_texts(l)) }
}

/// Releases groups the library filled and zeroes them. NULL is ignored.
///
/// # Safety
/// `groups` is NULL, zeroed, or filled by libleasehold and not cleared since.
#[no_mangle]
pub unsafe extern "C" fn leasehold_groups_clear(groups: *mut leasehold_groups) {
    unsafe {
        clear(groups, |g| {
            let mut l = leasehold_text_list { items: g.names, count: g.count };
            clear_texts(&mut l);
            *g = leasehold_groups { all: false, names: std::ptr::null(), count: 0 };
        })
    }
}

/// Releases a registrar the library filled and zeroes it. NULL is ignored.
///
/// # Safety
/// `registrar` is NULL, zeroed, or filled by libleasehold and not cleared since.
#[no_mangle]
pub unsafe extern "C" fn leasehold_registrar_clear(registrar: *mut leasehold_registrar) {
    unsafe { clear(registrar, |r| clear_registrar(r)) }
}

/// Releases a registrar list the library filled (every registrar in it) and zeroes it. NULL is
/// ignored.
///
/// # Safety
/// `list` is NULL, zeroed, or filled by libleasehold and not cleared since.
#[no_mangle]
pub unsafe extern "C" fn leasehold_registrar_list_clear(list: *mut leasehold_registrar_list) {
    unsafe { clear(list, |l| clear_registrars(l)) }
}

/// Releases a unicast request the library filled and zeroes it. NULL is ignored.
///
/// # Safety
/// `request` is NULL, zeroed, or filled by libleasehold and not cleared since.
#[no_mangle]
pub unsafe extern "C" fn leasehold_unicast_request_clear(request: *mut leasehold_unicast_request) {
    unsafe {
        clear(request, |r| {
            r.free_fields();
            *r = leasehold_unicast_request {
                id: 0,
                host: std::ptr::null_mut(),
                port: 0,
                locator: std::ptr::null_mut(),
            };
        })
    }
}

/// Releases an event the library filled (its handback and registrars) and zeroes it. NULL is
/// ignored.
///
/// # Safety
/// `event` is NULL, zeroed, or filled by libleasehold and not cleared since.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_event_clear(event: *mut leasehold_discovery_event) {
    unsafe {
        clear(event, |e| {
            e.free_fields();
            *e = leasehold_discovery_event {
                event_id: 0,
                source: leasehold_event_source { service: 0, object: 0 },
                sequence: 0,
                handback: std::ptr::null(),
                handback_len: 0,
                discarded: false,
                registrars: leasehold_registrar_list { items: std::ptr::null(), count: 0 },
            };
        })
    }
}

/// Releases an announcement `leasehold_announcement_decode` filled and zeroes it. NULL is
/// ignored.
///
/// # Safety
/// `announcement` is NULL, zeroed, or filled by libleasehold and not cleared since.
#[no_mangle]
pub unsafe extern "C" fn leasehold_announcement_clear(announcement: *mut leasehold_announcement) {
    unsafe {
        clear(announcement, |a| {
            clear_texts(&mut a.groups);
            free_text(&a.locator);
            a.locator = leasehold_text { ptr: std::ptr::null(), len: 0 };
            a.registrar = Default::default();
            a.sequence = 0;
            a.ttl = 0;
        })
    }
}

// ---------- announcements ----------

/// The announcement datagram of `announcement` (format: `core/tests/vectors/README.md`),
/// at most 1200 bytes; free with `leasehold_bytes_free`. A bad locator, a `ttl` outside 1 to
/// 2^32 - 1 ms, a group name over 255 bytes or a datagram over 1200 bytes is
/// `INVALID_ARGUMENT`.
///
/// # Safety
/// `announcement` is NULL or valid (its texts too); the outputs are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_announcement_encode(
    announcement: *const leasehold_announcement,
    out_data: *mut *mut u8,
    out_len: *mut usize,
) -> leasehold_status {
    unsafe {
        bytes_out(out_data, out_len, || {
            Ok(announcement_in(arg(announcement, "announcement")?)?.encode()?)
        })
    }
}

/// Reads an announcement datagram into `*out` (release with `leasehold_announcement_clear`).
/// Anything malformed, truncated, oversized or of another version is `DECODE`.
///
/// # Safety
/// `data` is NULL or points to `len` bytes; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_announcement_decode(
    data: *const u8,
    len: usize,
    out: *mut leasehold_announcement,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let a = Announcement::decode(unsafe { slice(data, len, "data") }?)?;
        unsafe { out.write(give_announcement(&a)) };
        Ok(())
    })
}

// ---------- events and the listener's answers ----------

/// Encodes an event as the message to its registration's listener, in `encoding`; free with
/// `leasehold_bytes_free`. A bad locator or group name in it is `INVALID_ARGUMENT`.
///
/// # Safety
/// `event` is NULL or valid (its buffers too); the outputs are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_event_encode(
    event: *const leasehold_discovery_event,
    encoding_: i32,
    out_data: *mut *mut u8,
    out_len: *mut usize,
) -> leasehold_status {
    unsafe {
        bytes_out(out_data, out_len, || {
            let enc = encoding(encoding_)?;
            Ok(event_in(arg(event, "event")?)?.encode(enc))
        })
    }
}

/// Decodes an event message (as a listener does) into `*out`, within `limits` (NULL: the
/// defaults); release it with `leasehold_discovery_event_clear`.
///
/// # Safety
/// `data` is NULL or points to `len` bytes; `limits` is NULL or valid; `out` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_event_decode(
    data: *const u8,
    len: usize,
    encoding_: i32,
    limits: *const leasehold_limits,
    out: *mut leasehold_discovery_event,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let enc = encoding(encoding_)?;
        let b = unsafe { slice(data, len, "data") }?;
        let e = RemoteDiscoveryEvent::decode(b, enc, &unsafe { limits_or_default(limits) })?;
        unsafe { out.write(leasehold_discovery_event::convert(e)?) };
        Ok(())
    })
}

/// What a listener answers to an event (the numbers are the binary op codes).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum leasehold_event_reply_op {
    /// The event was received.
    LEASEHOLD_EVENT_REPLY_RECEIVED = 1,
    /// The listener does not know the event id: the service cancels the registration.
    LEASEHOLD_EVENT_REPLY_UNKNOWN_EVENT = 2,
    /// Another failure: INDEFINITE is retried, any other code cancels the registration.
    LEASEHOLD_EVENT_REPLY_ERROR = 3,
}

/// A listener's answer to an event, as `leasehold_event_reply_decode` reads it. Its
/// `error_message` (ERROR only, else NULL) is the caller's: free it with `leasehold_string_free`.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug)]
pub struct leasehold_event_reply {
    /// The event's id.
    pub event_id: u64,
    /// The event's sequence number.
    pub sequence: u64,
    /// What the listener says.
    pub op: leasehold_event_reply_op,
    /// ERROR: the status number sent (else 0).
    pub error_code: i32,
    /// ERROR: the message (else NULL).
    pub error_message: *mut c_char,
}

/// A listener's answer to event (`event_id`, `sequence`) in `encoding`: `op` is a
/// `leasehold_event_reply_op`; for ERROR, `code` (a non-zero status number) and `message`
/// (`message_len` bytes of UTF-8) say why (else they are ignored). Free with
/// `leasehold_bytes_free`.
///
/// # Safety
/// `message` is NULL or points to `message_len` bytes; the outputs are NULL or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn leasehold_event_reply_encode(
    event_id: u64,
    sequence: u64,
    op: i32,
    code: i32,
    message: *const c_char,
    message_len: usize,
    encoding_: i32,
    out_data: *mut *mut u8,
    out_len: *mut usize,
) -> leasehold_status {
    unsafe {
        bytes_out(out_data, out_len, || {
            let enc = encoding(encoding_)?;
            let body = match op {
                1 => EventReplyBody::Received,
                2 => EventReplyBody::UnknownEvent,
                3 if code != 0 => EventReplyBody::Error(WireError {
                    code,
                    message: text(message, message_len, "message")?.to_string(),
                }),
                3 => return Err(Fail::invalid("an ERROR answer needs a non-zero code")),
                _ => return Err(Fail::invalid(format!("op must be 1 to 3, got {op}"))),
            };
            Ok(EventReply { event_id, sequence, body }.encode(enc))
        })
    }
}

/// Decodes a listener's answer within `limits` (NULL: the defaults). A service hands it to
/// `leasehold_discovery_service_handle_event_reply_bytes` directly; this is for hosts that
/// look inside.
///
/// # Safety
/// `data` is NULL or points to `len` bytes; `limits` is NULL or valid; `out` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_event_reply_decode(
    data: *const u8,
    len: usize,
    encoding_: i32,
    limits: *const leasehold_limits,
    out: *mut leasehold_event_reply,
) -> leasehold_status {
    use leasehold_event_reply_op as O;
    guard(|| {
        let out = Out::new(out, "out")?;
        let enc = encoding(encoding_)?;
        let b = unsafe { slice(data, len, "data") }?;
        let r = EventReply::decode(b, enc, &unsafe { limits_or_default(limits) })?;
        let (op, error_code, error_message) = match r.body {
            EventReplyBody::Received => {
                (O::LEASEHOLD_EVENT_REPLY_RECEIVED, 0, std::ptr::null_mut())
            }
            EventReplyBody::UnknownEvent => {
                (O::LEASEHOLD_EVENT_REPLY_UNKNOWN_EVENT, 0, std::ptr::null_mut())
            }
            EventReplyBody::Error(e) => {
                (O::LEASEHOLD_EVENT_REPLY_ERROR, e.code, c_string(e.message)?)
            }
        };
        let reply = leasehold_event_reply {
            event_id: r.event_id,
            sequence: r.sequence,
            op,
            error_code,
            error_message,
        };
        unsafe { out.write(reply) };
        Ok(())
    })
}

// ---------- requests ----------

/// What a discovery request asks (the numbers are the binary op codes).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum leasehold_discovery_op {
    /// A new registration (`leasehold_discovery_request_new_register`).
    LEASEHOLD_DISCOVERY_REGISTER = 1,
    /// The managed set of groups.
    LEASEHOLD_DISCOVERY_GET_GROUPS = 2,
    /// Adds groups.
    LEASEHOLD_DISCOVERY_ADD_GROUPS = 3,
    /// Replaces the groups (all groups allowed).
    LEASEHOLD_DISCOVERY_SET_GROUPS = 4,
    /// Removes groups.
    LEASEHOLD_DISCOVERY_REMOVE_GROUPS = 5,
    /// The managed set of locators.
    LEASEHOLD_DISCOVERY_GET_LOCATORS = 6,
    /// Adds locators.
    LEASEHOLD_DISCOVERY_ADD_LOCATORS = 7,
    /// Replaces the locators.
    LEASEHOLD_DISCOVERY_SET_LOCATORS = 8,
    /// Removes locators.
    LEASEHOLD_DISCOVERY_REMOVE_LOCATORS = 9,
    /// The registrars discovered for the registration.
    LEASEHOLD_DISCOVERY_GET_REGISTRARS = 10,
    /// Discards a registrar (`leasehold_discovery_request_new_discard`).
    LEASEHOLD_DISCOVERY_DISCARD = 11,
}

/// A request to a discovery service (opaque, immutable). A registration is named by its lease
/// cookie. Free with `leasehold_discovery_request_free`.
#[allow(non_camel_case_types)]
pub struct leasehold_discovery_request {
    pub(crate) inner: DiscoveryRequest,
}
message!(leasehold_discovery_request, DiscoveryRequest, "request");

fn give_request(id: u64, body: QB, out: Out<*mut leasehold_discovery_request>) {
    give_box(leasehold_discovery_request { inner: DiscoveryRequest { id, body } }, out)
}

/// A register request: the groups and locators (texts `"host:port"`) to discover, the handback
/// every event returns (`handback_len` bytes, copied), and the lease duration asked for. Bad
/// names or locators are `INVALID_ARGUMENT`.
///
/// # Safety
/// `groups.names`, `locators` and `handback` are NULL or point to their counts; `out` is NULL
/// or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn leasehold_discovery_request_new_register(
    id: u64,
    groups: leasehold_groups,
    locators: *const leasehold_text,
    locator_count: usize,
    handback: *const u8,
    handback_len: usize,
    duration: i64,
    out: *mut *mut leasehold_discovery_request,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let groups = unsafe { groups_in(&groups) }?;
        let locators = unsafe { locators_in(locators, locator_count, "locators") }?;
        let handback = unsafe { slice(handback, handback_len, "handback") }?.to_vec();
        give_request(id, QB::Register { groups, locators, handback, duration }, out);
        Ok(())
    })
}

/// A request about the registration with lease `cookie` that carries nothing else:
/// `op` is `LEASEHOLD_DISCOVERY_GET_GROUPS`, `_GET_LOCATORS` or `_GET_REGISTRARS`.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_request_new_get(
    id: u64,
    op: i32,
    cookie: leasehold_cookie,
    out: *mut *mut leasehold_discovery_request,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let cookie = cookie.into();
        let body = match op {
            2 => QB::GetGroups { cookie },
            6 => QB::GetLocators { cookie },
            10 => QB::GetRegistrars { cookie },
            _ => return Err(Fail::invalid(format!("op {op} is not a GET_ op"))),
        };
        give_request(id, body, out);
        Ok(())
    })
}

/// A change to the groups of the registration with lease `cookie`: `op` is
/// `LEASEHOLD_DISCOVERY_ADD_GROUPS` or `_REMOVE_GROUPS` (names only: `groups.all` is
/// `INVALID_ARGUMENT`) or `_SET_GROUPS` (all groups allowed).
///
/// # Safety
/// `groups.names` is NULL or points to `groups.count` texts; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_request_new_groups(
    id: u64,
    op: i32,
    cookie: leasehold_cookie,
    groups: leasehold_groups,
    out: *mut *mut leasehold_discovery_request,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let cookie = cookie.into();
        // Add and remove carry the names as given (in order, repeats kept); set carries a set.
        let names = || {
            if groups.all {
                return Err(Fail::invalid("only SET_GROUPS takes all groups"));
            }
            unsafe { names_in(groups.names, groups.count, "groups.names") }
        };
        let body = match op {
            3 => QB::AddGroups { cookie, groups: names()? },
            4 => QB::SetGroups { cookie, groups: unsafe { groups_in(&groups) }? },
            5 => QB::RemoveGroups { cookie, groups: names()? },
            _ => return Err(Fail::invalid(format!("op {op} is not a groups op"))),
        };
        give_request(id, body, out);
        Ok(())
    })
}

/// A change to the locators of the registration with lease `cookie`: `op` is
/// `LEASEHOLD_DISCOVERY_ADD_LOCATORS`, `_SET_LOCATORS` or `_REMOVE_LOCATORS`; `locators` are
/// texts `"host:port"` (a bad one is `INVALID_ARGUMENT`).
///
/// # Safety
/// `locators` is NULL or points to `locator_count` texts; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_request_new_locators(
    id: u64,
    op: i32,
    cookie: leasehold_cookie,
    locators: *const leasehold_text,
    locator_count: usize,
    out: *mut *mut leasehold_discovery_request,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let cookie = cookie.into();
        let locators = unsafe { locators_in(locators, locator_count, "locators") }?;
        let body = match op {
            7 => QB::AddLocators { cookie, locators },
            8 => QB::SetLocators { cookie, locators },
            9 => QB::RemoveLocators { cookie, locators },
            _ => return Err(Fail::invalid(format!("op {op} is not a locators op"))),
        };
        give_request(id, body, out);
        Ok(())
    })
}

/// A request to discard `registrar` from the registration with lease `cookie`.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_request_new_discard(
    id: u64,
    cookie: leasehold_cookie,
    registrar: leasehold_registrar_id,
    out: *mut *mut leasehold_discovery_request,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        give_request(id, QB::Discard { cookie: cookie.into(), registrar: registrar.into() }, out);
        Ok(())
    })
}

/// Decodes a discovery request (`len` bytes in `encoding`) within `limits` (NULL: defaults).
///
/// # Safety
/// `data` is NULL or points to `len` bytes; `limits` is NULL or valid; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_request_decode(
    data: *const u8,
    len: usize,
    encoding: i32,
    limits: *const leasehold_limits,
    out: *mut *mut leasehold_discovery_request,
) -> leasehold_status {
    unsafe { crate::wire::decode(data, len, encoding, limits, out) }
}

/// Encodes a discovery request in `encoding`; free the bytes with `leasehold_bytes_free`.
///
/// # Safety
/// `request` is NULL or live; outputs are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_request_encode(
    request: *const leasehold_discovery_request,
    encoding: i32,
    out_data: *mut *mut u8,
    out_len: *mut usize,
) -> leasehold_status {
    unsafe { crate::wire::encode(request, encoding, out_data, out_len) }
}

/// The request's id (echoed by the reply).
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_request_id(
    request: *const leasehold_discovery_request,
    out: *mut u64,
) -> leasehold_status {
    unsafe { crate::wire::message_id(request, out) }
}

/// What the request asks.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_request_get_op(
    request: *const leasehold_discovery_request,
    out: *mut leasehold_discovery_op,
) -> leasehold_status {
    use leasehold_discovery_op as O;
    guard(|| {
        let out = Out::new(out, "out")?;
        let op = match unsafe { arg(request, "request") }?.inner.body {
            QB::Register { .. } => O::LEASEHOLD_DISCOVERY_REGISTER,
            QB::GetGroups { .. } => O::LEASEHOLD_DISCOVERY_GET_GROUPS,
            QB::AddGroups { .. } => O::LEASEHOLD_DISCOVERY_ADD_GROUPS,
            QB::SetGroups { .. } => O::LEASEHOLD_DISCOVERY_SET_GROUPS,
            QB::RemoveGroups { .. } => O::LEASEHOLD_DISCOVERY_REMOVE_GROUPS,
            QB::GetLocators { .. } => O::LEASEHOLD_DISCOVERY_GET_LOCATORS,
            QB::AddLocators { .. } => O::LEASEHOLD_DISCOVERY_ADD_LOCATORS,
            QB::SetLocators { .. } => O::LEASEHOLD_DISCOVERY_SET_LOCATORS,
            QB::RemoveLocators { .. } => O::LEASEHOLD_DISCOVERY_REMOVE_LOCATORS,
            QB::GetRegistrars { .. } => O::LEASEHOLD_DISCOVERY_GET_REGISTRARS,
            QB::Discard { .. } => O::LEASEHOLD_DISCOVERY_DISCARD,
        };
        unsafe { out.write(op) };
        Ok(())
    })
}

/// The registration cookie a request names (`INVALID_ARGUMENT` for REGISTER).
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_request_cookie(
    request: *const leasehold_discovery_request,
    out: *mut leasehold_cookie,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let c = match &unsafe { arg(request, "request") }?.inner.body {
            QB::Register { .. } => return Err(wrong_op("cookie")),
            QB::GetGroups { cookie }
            | QB::AddGroups { cookie, .. }
            | QB::SetGroups { cookie, .. }
            | QB::RemoveGroups { cookie, .. }
            | QB::GetLocators { cookie }
            | QB::AddLocators { cookie, .. }
            | QB::SetLocators { cookie, .. }
            | QB::RemoveLocators { cookie, .. }
            | QB::GetRegistrars { cookie }
            | QB::Discard { cookie, .. } => *cookie,
        };
        unsafe { out.write(c.into()) };
        Ok(())
    })
}

/// Frees a discovery request. NULL is ignored.
///
/// # Safety
/// `request` was made by libleasehold and not freed before.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_request_free(
    request: *mut leasehold_discovery_request,
) {
    unsafe { free_box(request) }
}

// ---------- replies ----------

/// What a discovery reply answers (the numbers are the binary op codes).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum leasehold_discovery_reply_op {
    /// A registration was made (`leasehold_discovery_reply_registered`).
    LEASEHOLD_DISCOVERY_REGISTERED = 1,
    /// The managed set of groups (`leasehold_discovery_reply_groups`).
    LEASEHOLD_DISCOVERY_GROUPS = 2,
    /// The managed set of locators (`leasehold_discovery_reply_locators`).
    LEASEHOLD_DISCOVERY_LOCATORS = 3,
    /// The registrars discovered (`leasehold_discovery_reply_registrars`).
    LEASEHOLD_DISCOVERY_REGISTRARS = 4,
    /// A change was made (or there was nothing to change).
    LEASEHOLD_DISCOVERY_DONE = 5,
    /// The request failed (`leasehold_discovery_reply_error`); an unknown, expired or cancelled
    /// registration is UNKNOWN_LEASE (Jini's `NoSuchObjectException`).
    LEASEHOLD_DISCOVERY_ERROR = 6,
}

/// What a REGISTERED reply carries. The client's lease is `leasehold_lease_from_grant`-style:
/// the service's id (`leasehold_discovery_reply_landlord`), `cookie`, and `duration` counted
/// from when the request was sent; the next event of `event_id` carries a number above
/// `sequence`.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct leasehold_discovery_registered {
    /// The registration's number (the events' source object).
    pub registration: u64,
    /// The registration's lease cookie (it names the registration in every later request).
    pub cookie: leasehold_cookie,
    /// The granted lease duration.
    pub duration: i64,
    /// The registration's event id.
    pub event_id: u64,
    /// The sequence number the first event follows.
    pub sequence: u64,
}

/// A discovery service's reply (opaque, immutable). Free with `leasehold_discovery_reply_free`.
#[allow(non_camel_case_types)]
pub struct leasehold_discovery_reply {
    pub(crate) inner: DiscoveryReply,
}
message!(leasehold_discovery_reply, DiscoveryReply, "reply");

pub(crate) fn give_reply(r: DiscoveryReply, out: Out<*mut leasehold_discovery_reply>) {
    give_box(leasehold_discovery_reply { inner: r }, out)
}

/// The body of a reply accessor: `f` picks the value out of the body (or says which op has it).
///
/// # Safety
/// `reply` is NULL or live; `out` is NULL or writable.
unsafe fn reply_get<T>(
    reply: *const leasehold_discovery_reply,
    out: *mut T,
    f: impl FnOnce(&RB) -> Option<T>,
    what: &str,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let v = f(&unsafe { arg(reply, "reply") }?.inner.body).ok_or_else(|| wrong_op(what))?;
        unsafe { out.write(v) };
        Ok(())
    })
}

/// Decodes a discovery reply (`len` bytes in `encoding`) within `limits` (NULL: defaults).
///
/// # Safety
/// `data` is NULL or points to `len` bytes; `limits` is NULL or valid; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_reply_decode(
    data: *const u8,
    len: usize,
    encoding: i32,
    limits: *const leasehold_limits,
    out: *mut *mut leasehold_discovery_reply,
) -> leasehold_status {
    unsafe { crate::wire::decode(data, len, encoding, limits, out) }
}

/// Encodes a discovery reply in `encoding`; free the bytes with `leasehold_bytes_free`.
///
/// # Safety
/// `reply` is NULL or live; outputs are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_reply_encode(
    reply: *const leasehold_discovery_reply,
    encoding: i32,
    out_data: *mut *mut u8,
    out_len: *mut usize,
) -> leasehold_status {
    unsafe { crate::wire::encode(reply, encoding, out_data, out_len) }
}

/// The id of the request this reply answers.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_reply_id(
    reply: *const leasehold_discovery_reply,
    out: *mut u64,
) -> leasehold_status {
    unsafe { crate::wire::message_id(reply, out) }
}

/// The id of the service that answered (the landlord of its registration leases).
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_reply_landlord(
    reply: *const leasehold_discovery_reply,
    out: *mut u64,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        unsafe { out.write(arg(reply, "reply")?.inner.landlord.0) };
        Ok(())
    })
}

/// What the reply answers.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_reply_get_op(
    reply: *const leasehold_discovery_reply,
    out: *mut leasehold_discovery_reply_op,
) -> leasehold_status {
    use leasehold_discovery_reply_op as O;
    let op = |b: &RB| {
        Some(match b {
            RB::Registered { .. } => O::LEASEHOLD_DISCOVERY_REGISTERED,
            RB::Groups { .. } => O::LEASEHOLD_DISCOVERY_GROUPS,
            RB::Locators { .. } => O::LEASEHOLD_DISCOVERY_LOCATORS,
            RB::Registrars { .. } => O::LEASEHOLD_DISCOVERY_REGISTRARS,
            RB::Done => O::LEASEHOLD_DISCOVERY_DONE,
            RB::Error(_) => O::LEASEHOLD_DISCOVERY_ERROR,
        })
    };
    unsafe { reply_get(reply, out, op, "op") }
}

/// What a REGISTERED reply carries (`INVALID_ARGUMENT` for other ops).
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_reply_registered(
    reply: *const leasehold_discovery_reply,
    out: *mut leasehold_discovery_registered,
) -> leasehold_status {
    let f = |b: &RB| match *b {
        RB::Registered { registration, cookie, duration, event_id, sequence } => {
            Some(leasehold_discovery_registered {
                registration,
                cookie: cookie.into(),
                duration,
                event_id,
                sequence,
            })
        }
        _ => None,
    };
    unsafe { reply_get(reply, out, f, "registration") }
}

/// The groups of a GROUPS reply (`INVALID_ARGUMENT` for other ops); release them with
/// `leasehold_groups_clear`.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_reply_groups(
    reply: *const leasehold_discovery_reply,
    out: *mut leasehold_groups,
) -> leasehold_status {
    let f = |b: &RB| match b {
        RB::Groups { groups } => Some(give_groups(groups)),
        _ => None,
    };
    unsafe { reply_get(reply, out, f, "groups") }
}

/// The locators of a LOCATORS reply (`INVALID_ARGUMENT` for other ops); release them with
/// `leasehold_text_list_clear`.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_reply_locators(
    reply: *const leasehold_discovery_reply,
    out: *mut leasehold_text_list,
) -> leasehold_status {
    let f = |b: &RB| match b {
        RB::Locators { locators } => Some(give_texts(locators.iter().map(|l| l.to_string()))),
        _ => None,
    };
    unsafe { reply_get(reply, out, f, "locators") }
}

/// The registrars of a REGISTRARS reply (`INVALID_ARGUMENT` for other ops); release them with
/// `leasehold_registrar_list_clear`.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_reply_registrars(
    reply: *const leasehold_discovery_reply,
    out: *mut leasehold_registrar_list,
) -> leasehold_status {
    let f = |b: &RB| match b {
        RB::Registrars { registrars } => Some(give_registrars(registrars)),
        _ => None,
    };
    unsafe { reply_get(reply, out, f, "registrars") }
}

/// The error of an ERROR reply: its code as sent and, optionally (NULL to skip), its message
/// (free with `leasehold_string_free`). `INVALID_ARGUMENT` for other ops.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_reply_error(
    reply: *const leasehold_discovery_reply,
    out_code: *mut i32,
    out_message: *mut *mut c_char,
) -> leasehold_status {
    guard(|| {
        let code = Out::new(out_code, "out_code")?;
        let msg = Out::optional(out_message);
        let e = match &unsafe { arg(reply, "reply") }?.inner.body {
            RB::Error(e) => e.clone(),
            _ => return Err(wrong_op("error")),
        };
        if let Some(msg) = msg {
            unsafe { msg.write(c_string(e.message)?) };
        }
        unsafe { code.write(e.code) };
        Ok(())
    })
}

/// Frees a discovery reply. NULL is ignored.
///
/// # Safety
/// `reply` was made by libleasehold and not freed before.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_reply_free(reply: *mut leasehold_discovery_reply) {
    unsafe { free_box(reply) }
}

/// A required callback, or `NULL_ARGUMENT`.
pub(crate) fn required<F>(f: Option<F>, name: &str) -> Res<F> {
    f.ok_or_else(|| null(name))
}
