//! The lookup discovery service (seed 003, LD; Jini's `LookupDiscoveryService`) for C: leased
//! registrations with managed sets of groups, locators and registrars; announcements, unicast
//! answers and unreachable reports in; discovered and discarded events and unicast probes out;
//! a driver; snapshot and restore; durability in a store. Every rule is the core's
//! (`leasehold::discovery`); this file converts, on the shared layers (`handle`, `sansio`,
//! `store`, `wire`). Values and messages are in `discovery_wire.rs`.

use std::ffi::{c_char, c_void};

use leasehold_core::discovery::wire::{DiscoveryRequest, EventReply};
use leasehold_core::discovery::{
    Announcement, DeliveryFailure, DiscoveryConfig, DiscoveryService, DiscoverySnapshot, Locator,
    Registrar, RegistrationId, RemoteDiscoveryEvent, UnicastRequest, UnicastResponse,
};
use leasehold_core::lease::{Cookie, LandlordId};
use leasehold_core::store::StoreConfig;
use leasehold_core::{Encoding, LeaseError, Millis, Reply, Request};

use crate::common::{c_string, encoding, give_bytes, leasehold_cookie, leasehold_limits};
use crate::discovery_wire::{
    give_groups, give_registrar, give_registrars, groups_in, leasehold_announcement,
    leasehold_discovery_event, leasehold_discovery_reply, leasehold_discovery_request,
    leasehold_groups, leasehold_registrar, leasehold_registrar_id, leasehold_registrar_list,
    leasehold_text, leasehold_text_list, leasehold_unicast_request, locators_in, names_in,
    required,
};
use crate::error::{arg, arg_mut, guard, leasehold_status, slice, text, Fail, Maybe, Out, Res};
use crate::event::leasehold_event_registration;
use crate::handle::{self, give, give_box, opaque, read, write, Call, Handle};
use crate::landlord::seed_arg;
use crate::lease::leasehold_lease;
use crate::policy::leasehold_policy;
use crate::sansio::{self, CEvent, Machine};
use crate::store::{self, leasehold_recovery, leasehold_store_file, leasehold_store_io, Kept};
use crate::wire::{leasehold_reply, leasehold_request};

// ---------- configuration ----------

/// How a discovery service is set up (opaque): its id and cookie seed, the registration-lease
/// policy, event and unicast retry schedules and time-outs, limits, the restore jump, and the
/// store settings of a durable service. Copied by `leasehold_discovery_service_new`, `_restore`
/// and `_open_*`; free with `leasehold_discovery_config_free`. A bad setting is
/// `INVALID_ARGUMENT` when the service is made.
#[allow(non_camel_case_types)]
pub struct leasehold_discovery_config {
    inner: DiscoveryConfig,
    store: StoreConfig,
}

/// The defaults for a service whose registration leases (and event sources) carry id `id`,
/// with the secret cookie seed (`seed_len` = `LEASEHOLD_SEED_SIZE`, real entropy): leases of at
/// most 30 minutes (30 minutes for ANY), events retried after 1 s, 5 s, 10 s, 1 min, 1 min,
/// then every 5 min, a 1 min delivery time-out, unicast retried from 1 s doubling to 1 min with
/// a 30 s time-out, at most 10 000 registrars, announcement ttls cut to 30 min.
///
/// # Safety
/// `seed` is NULL or points to `seed_len` bytes; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_config_new(
    id: u64,
    seed: *const u8,
    seed_len: usize,
    out: *mut *mut leasehold_discovery_config,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let seed = unsafe { seed_arg(seed, seed_len) }?;
        let inner = DiscoveryConfig::new(LandlordId(id), seed);
        give_box(leasehold_discovery_config { inner, store: StoreConfig::default() }, out);
        Ok(())
    })
}

/// The body of a configuration setter.
///
/// # Safety
/// `config` is NULL or live.
unsafe fn set(
    config: *mut leasehold_discovery_config,
    f: impl FnOnce(&mut leasehold_discovery_config) -> Res,
) -> leasehold_status {
    guard(|| f(unsafe { arg_mut(config, "config") }?))
}

/// Sets the policy granting registration leases (copied).
///
/// # Safety
/// Pointers are NULL or live.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_config_set_lease_policy(
    config: *mut leasehold_discovery_config,
    policy: *const leasehold_policy,
) -> leasehold_status {
    unsafe {
        set(config, |c| {
            c.inner.lease_policy = arg(policy, "policy")?.spec.clone();
            Ok(())
        })
    }
}

/// Sets the grace after expiry of registration leases, and the limits (`limits` NULL: the
/// defaults) that bound every discovery message and registration: names and locators per set
/// (`max_batch`), handback and listener bytes (`max_resource_bytes`).
///
/// # Safety
/// `config` is NULL or live; `limits` is NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_config_set_landlord(
    config: *mut leasehold_discovery_config,
    grace: i64,
    limits: *const leasehold_limits,
) -> leasehold_status {
    unsafe {
        set(config, |c| {
            c.inner.landlord = c.inner.landlord.clone().with_grace(grace);
            c.inner.landlord.limits = crate::common::limits_or_default(limits);
            Ok(())
        })
    }
}

/// Sets how events are retried: the waits (ms, positive) after the 1st, 2nd, ... indefinite
/// failure (`count` of them, the last repeating), and how long an event handed out may go
/// unreported before it counts as failed (`LEASEHOLD_FOREVER`: never).
///
/// # Safety
/// `config` is NULL or live; `waits` is NULL or points to `count` values.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_config_set_event_retry(
    config: *mut leasehold_discovery_config,
    waits: *const i64,
    count: usize,
    delivery_timeout: i64,
) -> leasehold_status {
    unsafe {
        set(config, |c| {
            c.inner.event_retry = slice(waits, count, "waits")?.to_vec();
            c.inner.delivery_timeout = delivery_timeout;
            Ok(())
        })
    }
}

/// Sets how unicast discovery is retried: the waits after the 1st, 2nd, ... failure (the last
/// repeating), and how long a probe handed out may go unanswered before it counts as failed.
///
/// # Safety
/// `config` is NULL or live; `waits` is NULL or points to `count` values.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_config_set_unicast_retry(
    config: *mut leasehold_discovery_config,
    waits: *const i64,
    count: usize,
    unicast_timeout: i64,
) -> leasehold_status {
    unsafe {
        set(config, |c| {
            c.inner.unicast_retry = slice(waits, count, "waits")?.to_vec();
            c.inner.unicast_timeout = unicast_timeout;
            Ok(())
        })
    }
}

/// Sets the most registrars the service keeps, and the longest announcement ttl it takes
/// (longer ones are cut to it).
///
/// # Safety
/// `config` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_config_set_registrars(
    config: *mut leasehold_discovery_config,
    max_registrars: usize,
    max_announcement_ttl: i64,
) -> leasehold_status {
    unsafe {
        set(config, |c| {
            c.inner.max_registrars = max_registrars;
            c.inner.max_announcement_ttl = max_announcement_ttl;
            Ok(())
        })
    }
}

/// Sets how far event sequence numbers jump when a JSON snapshot is restored (0: exactly on).
///
/// # Safety
/// `config` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_config_set_restore_jump(
    config: *mut leasehold_discovery_config,
    jump: u64,
) -> leasehold_status {
    unsafe {
        set(config, |c| {
            c.inner.restore_jump = jump;
            Ok(())
        })
    }
}

/// Sets how a durable service's store keeps its log, as `leasehold_landlord_config_set_store`.
///
/// # Safety
/// `config` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_config_set_store(
    config: *mut leasehold_discovery_config,
    segment_bytes: u64,
    min_compact_bytes: u64,
) -> leasehold_status {
    unsafe {
        set(config, |c| {
            if segment_bytes == 0 {
                return Err(Fail::invalid("segment_bytes must be at least 1"));
            }
            c.store = StoreConfig { segment_bytes, min_compact_bytes };
            Ok(())
        })
    }
}

/// Frees a configuration. NULL is ignored.
///
/// # Safety
/// `config` was made by libleasehold and not freed before.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_config_free(config: *mut leasehold_discovery_config) {
    unsafe { handle::free_box(config) }
}

// ---------- the service ----------

/// A lookup discovery service (opaque). Free with `leasehold_discovery_service_free`. Not to be
/// used from two threads at once; it may move between threads.
#[allow(non_camel_case_types)]
pub struct leasehold_discovery_service {
    h: Handle<DiscoveryState>,
}
opaque!(leasehold_discovery_service, DiscoveryState, "service", "discovery service");

/// What a discovery service handle owns: the core's service and, for a durable one, its store.
pub(crate) struct DiscoveryState {
    svc: DiscoveryService,
    store: Option<Box<store::Attached>>,
}

impl Machine for DiscoveryState {
    type Event = RemoteDiscoveryEvent;
    fn poll_timeout(&self) -> Option<Millis> {
        self.svc.poll_timeout()
    }
    fn handle_timeout(&mut self, now: Millis) {
        self.svc.handle_timeout(now)
    }
    fn poll_event(&mut self) -> Option<RemoteDiscoveryEvent> {
        let now = self.svc.now();
        self.svc.poll_event(now)
    }
}

impl sansio::Answers for DiscoveryState {
    fn handle_request(&mut self, request: &Request, now: Millis) -> Reply {
        self.svc.handle_request(request, now)
    }
    fn handle_bytes(&mut self, bytes: &[u8], encoding: Encoding, now: Millis) -> Vec<u8> {
        self.svc.handle_bytes(bytes, encoding, now)
    }
}

impl Kept for DiscoveryState {
    type State = DiscoveryService;
    fn state(&self) -> &DiscoveryService {
        &self.svc
    }
    fn parts(&mut self) -> (&mut DiscoveryService, Option<&mut store::Attached>) {
        (&mut self.svc, self.store.as_deref_mut())
    }
    fn is_durable(&self) -> bool {
        self.store.is_some()
    }
}

type Svc = leasehold_discovery_service;

/// What `leasehold_discovery_service_register` gives (Jini's `LookupDiscoveryRegistration`
/// with `getLease` and `getEventRegistration`).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct leasehold_discovery_registration {
    /// The registration's number inside the service (never reused; the events' source object).
    pub registration: u64,
    /// Its lease (landlord: the service's id), on the host's clock.
    pub lease: leasehold_lease,
    /// Its event registration: event id, source, the same lease, and the sequence number the
    /// first event follows.
    pub event: leasehold_event_registration,
}

/// A service with no registrations and no registrars, set up by `config` (copied).
///
/// # Safety
/// `config` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_new(
    config: *const leasehold_discovery_config,
    out: *mut *mut leasehold_discovery_service,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let c = unsafe { arg(config, "config") }?;
        give(DiscoveryState { svc: DiscoveryService::new(c.inner.clone())?, store: None }, out);
        Ok(())
    })
}

/// Frees a service. A durable one writes nothing more (commit first for a clean shutdown) and
/// releases its directory. NULL is ignored. Inside a callback of one of its calls (`drive`, a
/// `for_each_*`, a store callback) it is freed when that call returns, the call makes no
/// further callbacks, and any other call on it is `BUSY`.
///
/// # Safety
/// `service` was made by libleasehold and not freed before.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_free(
    service: *mut leasehold_discovery_service,
) {
    unsafe { handle::free(service) }
}

/// The service's id (the landlord of every registration lease, the service of every event
/// source).
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_id(
    service: *const leasehold_discovery_service,
    out: *mut u64,
) -> leasehold_status {
    unsafe { handle::get(service, out, |s| Ok(s.svc.id().0)) }
}

/// Registers a client (Jini's `register`): the groups and locators (texts `"host:port"`) it
/// wants discovered, the handback (`handback_len` bytes, copied) its events carry, and the lease
/// duration it asks (positive, `LEASEHOLD_FOREVER` or `LEASEHOLD_ANY`; else `INVALID_ARGUMENT`;
/// the policy may grant less or deny: `LEASE_DENIED`). Registrars the service already holds
/// that it wants are discovered for it at once (its first event).
///
/// # Safety
/// `service` is NULL or live; `groups.names`, `locators` and `handback` are NULL or point to
/// their counts; `out` is NULL or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn leasehold_discovery_service_register(
    service: *mut leasehold_discovery_service,
    groups: leasehold_groups,
    locators: *const leasehold_text,
    locator_count: usize,
    handback: *const u8,
    handback_len: usize,
    lease_duration: i64,
    now: i64,
    out: *mut leasehold_discovery_registration,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let g = unsafe { groups_in(&groups) }?;
        let ls = unsafe { locators_in(locators, locator_count, "locators") }?;
        let hb = unsafe { slice(handback, handback_len, "handback") }?.to_vec();
        let r = unsafe { write(service, |s| Ok(s.svc.register(g, ls, hb, lease_duration, now)?)) }?;
        let reg = leasehold_discovery_registration {
            registration: r.id.0,
            lease: r.lease.into(),
            event: r.event.into(),
        };
        unsafe { out.write(reg) };
        Ok(())
    })
}

/// The registration whose lease is `cookie`, if it is live at `now`: `*out_found` says whether.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_registration_of(
    service: *mut leasehold_discovery_service,
    cookie: leasehold_cookie,
    now: i64,
    out_found: *mut bool,
    out_registration: *mut u64,
) -> leasehold_status {
    guard(|| {
        let out = Maybe::new(out_found, "out_found", out_registration, "out_registration")?;
        let c: Cookie = cookie.into();
        let id = unsafe { write(service, |s| Ok(s.svc.registration_of(c, now))) }?;
        unsafe { out.write(id.map(|r| r.0)) };
        Ok(())
    })
}

/// Visits one registration number. Return 0 to go on, non-zero to stop.
#[allow(non_camel_case_types)]
pub type leasehold_discovery_registration_visit_fn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, registration: u64) -> i32>;

/// Visits one registrar (borrowed for the call). Return 0 to go on, non-zero to stop.
#[allow(non_camel_case_types)]
pub type leasehold_registrar_visit_fn = Option<
    unsafe extern "C" fn(user_data: *mut c_void, registrar: *const leasehold_registrar) -> i32,
>;

/// Calls `visit` for every live registration (as of the last call), in number order. The visit
/// runs over a copy: `visit` may call anything on this service; freeing it ends the visit.
///
/// # Safety
/// `service` is NULL or live; `visit` is NULL or a valid function.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_for_each_registration(
    service: *const leasehold_discovery_service,
    visit: leasehold_discovery_registration_visit_fn,
    user_data: *mut c_void,
) -> leasehold_status {
    guard(|| {
        let visit = required(visit, "visit")?;
        let collect = |s: &DiscoveryState| Ok(s.svc.registrations());
        unsafe { handle::for_each(service, collect, |r: &RegistrationId| visit(user_data, r.0)) }
    })
}

/// Calls `visit` for every registrar in the service's own discovered set, in id order, over a
/// copy (as `leasehold_discovery_service_for_each_registration`).
///
/// # Safety
/// `service` is NULL or live; `visit` is NULL or a valid function.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_for_each_discovered(
    service: *const leasehold_discovery_service,
    visit: leasehold_registrar_visit_fn,
    user_data: *mut c_void,
) -> leasehold_status {
    guard(|| {
        let visit = required(visit, "visit")?;
        let collect = |s: &DiscoveryState| Ok(s.svc.discovered());
        unsafe {
            handle::for_each(service, collect, |r: &Registrar| {
                let mut c = give_registrar(r);
                let rc = visit(user_data, &c);
                crate::discovery_wire::leasehold_registrar_clear(&mut c);
                rc
            })
        }
    })
}

// ---------- a registration's methods (Jini's LookupDiscoveryRegistration) ----------
//
// Each answers UNKNOWN_LEASE (no such object) once the registration's lease has expired or was
// cancelled, and first brings the service to `now`.

/// The body of a registration method that answers a value.
///
/// # Safety
/// `p` is NULL or live; `out` is NULL or writable.
unsafe fn reg_get<T>(
    p: *mut Svc,
    out: *mut T,
    f: impl FnOnce(&mut DiscoveryService) -> leasehold_core::Result<T>,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let v = unsafe { write(p, |s| Ok(f(&mut s.svc)?)) }?;
        unsafe { out.write(v) };
        Ok(())
    })
}

/// The registration's lease (`getLease`), its expiration on the host's clock.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_lease(
    service: *mut leasehold_discovery_service,
    registration: u64,
    now: i64,
    out: *mut leasehold_lease,
) -> leasehold_status {
    unsafe { reg_get(service, out, |s| Ok(s.lease(RegistrationId(registration), now)?.into())) }
}

/// The registration's event registration (`getEventRegistration`), with the sequence number
/// of the last event made so far.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_event_registration(
    service: *mut leasehold_discovery_service,
    registration: u64,
    now: i64,
    out: *mut leasehold_event_registration,
) -> leasehold_status {
    let id = RegistrationId(registration);
    unsafe { reg_get(service, out, |s| Ok(s.event_registration(id, now)?.into())) }
}

/// The registrars discovered for the registration and not discarded since (`getRegistrars`),
/// in id order; release them with `leasehold_registrar_list_clear`.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_registrars(
    service: *mut leasehold_discovery_service,
    registration: u64,
    now: i64,
    out: *mut leasehold_registrar_list,
) -> leasehold_status {
    let id = RegistrationId(registration);
    unsafe { reg_get(service, out, |s| Ok(give_registrars(&s.registrars(id, now)?))) }
}

/// The registration's managed set of groups (`getGroups`); release with
/// `leasehold_groups_clear`.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_groups(
    service: *mut leasehold_discovery_service,
    registration: u64,
    now: i64,
    out: *mut leasehold_groups,
) -> leasehold_status {
    let id = RegistrationId(registration);
    unsafe { reg_get(service, out, |s| Ok(give_groups(&s.groups(id, now)?))) }
}

/// The registration's managed set of locators (`getLocators`), in order; release with
/// `leasehold_text_list_clear`.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_locators(
    service: *mut leasehold_discovery_service,
    registration: u64,
    now: i64,
    out: *mut leasehold_text_list,
) -> leasehold_status {
    let id = RegistrationId(registration);
    let texts =
        |l: Vec<Locator>| crate::discovery_wire::give_texts(l.iter().map(|l| l.to_string()));
    unsafe { reg_get(service, out, |s| Ok(texts(s.locators(id, now)?))) }
}

/// Adds `count` group names to the managed set (`addGroups`). A registration that wants all
/// groups has no set to add to: `INVALID_ARGUMENT`. Discoveries follow at once (LD.4.1.1).
///
/// # Safety
/// `service` is NULL or live; `names` is NULL or points to `count` texts.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_add_groups(
    service: *mut leasehold_discovery_service,
    registration: u64,
    names: *const leasehold_text,
    count: usize,
    now: i64,
) -> leasehold_status {
    let id = RegistrationId(registration);
    guard(|| {
        let n = unsafe { names_in(names, count, "names") }?;
        unsafe { write(service, |s| Ok(s.svc.add_groups(id, n, now)?)) }
    })
}

/// Replaces the managed set of groups (`setGroups`): `groups.all` for every group, no names to
/// stop group discovery. Registrars no longer wanted are discarded, newly wanted ones
/// discovered (LD.4.1.1).
///
/// # Safety
/// `service` is NULL or live; `groups.names` is NULL or points to `groups.count` texts.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_set_groups(
    service: *mut leasehold_discovery_service,
    registration: u64,
    groups: leasehold_groups,
    now: i64,
) -> leasehold_status {
    let id = RegistrationId(registration);
    guard(|| {
        let g = unsafe { groups_in(&groups) }?;
        unsafe { write(service, |s| Ok(s.svc.set_groups(id, g, now)?)) }
    })
}

/// Removes group names from the managed set (`removeGroups`; names it does not hold are
/// ignored). All groups: `INVALID_ARGUMENT`.
///
/// # Safety
/// As `leasehold_discovery_service_add_groups`.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_remove_groups(
    service: *mut leasehold_discovery_service,
    registration: u64,
    names: *const leasehold_text,
    count: usize,
    now: i64,
) -> leasehold_status {
    let id = RegistrationId(registration);
    guard(|| {
        let n = unsafe { names_in(names, count, "names") }?;
        unsafe { write(service, |s| Ok(s.svc.remove_groups(id, n, now)?)) }
    })
}

/// Which locator operation `locators_op` carries out.
#[derive(Clone, Copy)]
enum LocOp {
    Add,
    Set,
    Remove,
}

/// # Safety
/// `p` is NULL or live; `locators` is NULL or points to `count` texts.
unsafe fn locators_op(
    p: *mut Svc,
    registration: u64,
    locators: *const leasehold_text,
    count: usize,
    now: i64,
    op: LocOp,
) -> leasehold_status {
    let id = RegistrationId(registration);
    guard(|| {
        let ls = unsafe { locators_in(locators, count, "locators") }?;
        unsafe {
            write(p, |s| {
                Ok(match op {
                    LocOp::Add => s.svc.add_locators(id, ls, now),
                    LocOp::Set => s.svc.set_locators(id, ls, now),
                    LocOp::Remove => s.svc.remove_locators(id, ls, now),
                }?)
            })
        }
    })
}

/// Adds locators (texts `"host:port"`, `"[v6]:port"`) to the managed set (`addLocators`).
///
/// # Safety
/// `service` is NULL or live; `locators` is NULL or points to `count` texts.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_add_locators(
    service: *mut leasehold_discovery_service,
    registration: u64,
    locators: *const leasehold_text,
    count: usize,
    now: i64,
) -> leasehold_status {
    unsafe { locators_op(service, registration, locators, count, now, LocOp::Add) }
}

/// Replaces the managed set of locators (`setLocators`).
///
/// # Safety
/// As `leasehold_discovery_service_add_locators`.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_set_locators(
    service: *mut leasehold_discovery_service,
    registration: u64,
    locators: *const leasehold_text,
    count: usize,
    now: i64,
) -> leasehold_status {
    unsafe { locators_op(service, registration, locators, count, now, LocOp::Set) }
}

/// Removes locators from the managed set (`removeLocators`; ones it does not hold are ignored).
///
/// # Safety
/// As `leasehold_discovery_service_add_locators`.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_remove_locators(
    service: *mut leasehold_discovery_service,
    registration: u64,
    locators: *const leasehold_text,
    count: usize,
    now: i64,
) -> leasehold_status {
    unsafe { locators_op(service, registration, locators, count, now, LocOp::Remove) }
}

/// Discards `registrar` from the registration (`discard`): it gets a discarded event, and the
/// service drops the registrar from its own set so that the next announcement or unicast
/// answer discovers it again for every registration that wants it and lacks it. A registrar
/// the registration does not hold is ignored.
///
/// # Safety
/// `service` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_discard(
    service: *mut leasehold_discovery_service,
    registration: u64,
    registrar: leasehold_registrar_id,
    now: i64,
) -> leasehold_status {
    let id = RegistrationId(registration);
    unsafe { handle::change(service, |s| Ok(s.svc.discard(id, registrar.into(), now)?)) }
}

/// Keeps where the host delivers the registration's events (opaque bytes, a URL say, at most
/// `max_resource_bytes`), durably with the registration; set it right after registering.
///
/// # Safety
/// `service` is NULL or live; `listener` is NULL or points to `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_set_listener(
    service: *mut leasehold_discovery_service,
    registration: u64,
    listener: *const u8,
    len: usize,
    now: i64,
) -> leasehold_status {
    let id = RegistrationId(registration);
    guard(|| {
        let b = unsafe { slice(listener, len, "listener") }?.to_vec();
        unsafe { write(service, |s| Ok(s.svc.set_listener(id, b, now)?)) }
    })
}

/// The registration's listener as set (empty if never set), for `leasehold_bytes_free`;
/// `UNKNOWN_LEASE` if there is no such registration (as of the last call).
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_listener(
    service: *const leasehold_discovery_service,
    registration: u64,
    out_data: *mut *mut u8,
    out_len: *mut usize,
) -> leasehold_status {
    guard(|| {
        let d = Out::new(out_data, "out_data")?;
        let n = Out::new(out_len, "out_len")?;
        let id = RegistrationId(registration);
        let l = unsafe { read(service, |s| Ok(s.svc.listener(id).map(<[u8]>::to_vec))) }?;
        unsafe { give_bytes(l.ok_or(LeaseError::UnknownLease)?, d, n) };
        Ok(())
    })
}

// ---------- what the host hears ----------

/// A multicast announcement the host received (a stale one, numbered at or below the last
/// accepted from that registrar, is ignored). A bad one is `INVALID_ARGUMENT`; one from a new
/// registrar while the service holds its maximum is `LEASE_DENIED`.
///
/// # Safety
/// `service` is NULL or live; `announcement` is NULL or valid (its texts too).
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_handle_announcement(
    service: *mut leasehold_discovery_service,
    announcement: *const leasehold_announcement,
    now: i64,
) -> leasehold_status {
    guard(|| {
        let a =
            unsafe { crate::discovery_wire::announcement_in(arg(announcement, "announcement")?) }?;
        unsafe { write(service, |s| Ok(s.svc.handle_announcement(&a, now)?)) }
    })
}

/// An announcement datagram the host received; bytes that do not decode are `DECODE` and change
/// nothing.
///
/// # Safety
/// `service` is NULL or live; `data` is NULL or points to `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_handle_datagram(
    service: *mut leasehold_discovery_service,
    data: *const u8,
    len: usize,
    now: i64,
) -> leasehold_status {
    guard(|| {
        let b = unsafe { slice(data, len, "data") }?;
        unsafe { write(service, |s| Ok(s.svc.handle_datagram(b, now)?)) }
    })
}

/// Writes an optional "was it awaited / known" answer.
fn flag(out: *mut bool, v: bool) {
    if let Some(o) = Out::optional(out) {
        unsafe { o.write(v) };
    }
}

/// # Safety
/// `p` is NULL or live; `out_awaited` is NULL or writable.
unsafe fn unicast(
    p: *mut Svc,
    request_id: u64,
    result: Result<UnicastResponse, LeaseError>,
    now: i64,
    out_awaited: *mut bool,
) -> Res {
    let awaited = unsafe { write(p, |s| Ok(s.svc.handle_unicast(request_id, result, now))) }?;
    flag(out_awaited, awaited);
    Ok(())
}

/// Unicast discovery `request_id` (from `poll_transmit`) found `registrar`, a member of the
/// `count` groups at `names`, at its locator. `*out_awaited` (optional) says whether the request
/// was still awaited (a late answer, or one for a locator no longer wanted, is ignored).
///
/// # Safety
/// `service` is NULL or live; `names` is NULL or points to `count` texts; `out_awaited` is NULL
/// or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_unicast_found(
    service: *mut leasehold_discovery_service,
    request_id: u64,
    registrar: leasehold_registrar_id,
    names: *const leasehold_text,
    count: usize,
    now: i64,
    out_awaited: *mut bool,
) -> leasehold_status {
    guard(|| {
        let groups = unsafe { names_in(names, count, "names") }?.into_iter().collect();
        let found = UnicastResponse { registrar: registrar.into(), groups };
        unsafe { unicast(service, request_id, Ok(found), now, out_awaited) }
    })
}

/// Unicast discovery `request_id` was answered with an announcement datagram (a lookup service
/// may answer a probe so): its id and groups are the answer. Bytes that do not decode are
/// `DECODE` and change nothing (report `leasehold_discovery_service_unicast_failed` then).
///
/// # Safety
/// `service` is NULL or live; `data` is NULL or points to `len` bytes; `out_awaited` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_unicast_found_datagram(
    service: *mut leasehold_discovery_service,
    request_id: u64,
    data: *const u8,
    len: usize,
    now: i64,
    out_awaited: *mut bool,
) -> leasehold_status {
    guard(|| {
        let a = Announcement::decode(unsafe { slice(data, len, "data") }?)?;
        unsafe { unicast(service, request_id, Ok(UnicastResponse::from(&a)), now, out_awaited) }
    })
}

/// Unicast discovery `request_id` failed (no answer, a refused connection, a bad answer): it is
/// tried again after a back-off while the locator is still wanted.
///
/// # Safety
/// `service` is NULL or live; `out_awaited` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_unicast_failed(
    service: *mut leasehold_discovery_service,
    request_id: u64,
    now: i64,
    out_awaited: *mut bool,
) -> leasehold_status {
    guard(|| {
        let e = LeaseError::Indefinite("the host's unicast discovery failed".into());
        unsafe { unicast(service, request_id, Err(e), now, out_awaited) }
    })
}

/// The host found `registrar` unreachable: a passive discard, as when its announcements stop
/// (registrations that want it by group discard it; those that want it only by locator keep
/// it). `*out_known` (optional) says whether the service knew it.
///
/// # Safety
/// `service` is NULL or live; `out_known` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_registrar_unreachable(
    service: *mut leasehold_discovery_service,
    registrar: leasehold_registrar_id,
    now: i64,
    out_known: *mut bool,
) -> leasehold_status {
    guard(|| {
        let g = registrar.into();
        let known = unsafe { write(service, |s| Ok(s.svc.registrar_unreachable(g, now))) }?;
        flag(out_known, known);
        Ok(())
    })
}

// ---------- what the host does ----------

/// The next unicast discovery to make: `*out_found` says whether there is one; if so `*out`
/// (release with `leasehold_unicast_request_clear`) says whom to contact. Answer with
/// `_unicast_found`, `_unicast_found_datagram` or `_unicast_failed`.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_poll_transmit(
    service: *mut leasehold_discovery_service,
    now: i64,
    out: *mut leasehold_unicast_request,
    out_found: *mut bool,
) -> leasehold_status {
    guard(|| {
        let out = Maybe::new(out_found, "out_found", out, "out")?;
        let conv = leasehold_unicast_request::convert;
        let r = unsafe { write(service, |s| s.svc.poll_transmit(now).map(conv).transpose()) }?;
        unsafe { out.write(r) };
        Ok(())
    })
}

/// The next event to deliver to a registration's listener: `*out_found` says whether there is
/// one; if so `*out` is filled (release with `leasehold_discovery_event_clear`). Report the
/// outcome with `_delivered` or `_delivery_failed` (the registration's next event waits until
/// then, or until the delivery time-out). A durable service: deliver it only once a commit
/// answered a durable number at least `leasehold_discovery_service_journal_seq` read right
/// after this call.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_poll_event(
    service: *mut leasehold_discovery_service,
    now: i64,
    out: *mut leasehold_discovery_event,
    out_found: *mut bool,
) -> leasehold_status {
    guard(|| {
        let out = Maybe::new(out_found, "out_found", out, "out")?;
        let conv = leasehold_discovery_event::convert;
        let e = unsafe { write(service, |s| s.svc.poll_event(now).map(conv).transpose()) }?;
        unsafe { out.write(e) };
        Ok(())
    })
}

/// The event (`event_id`, `sequence`) handed out reached its listener. `*out_awaited`
/// (optional) says whether it was the event awaited (a late or repeated report is ignored).
///
/// # Safety
/// `service` is NULL or live; `out_awaited` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_delivered(
    service: *mut leasehold_discovery_service,
    event_id: u64,
    sequence: u64,
    now: i64,
    out_awaited: *mut bool,
) -> leasehold_status {
    guard(|| {
        let ok = unsafe { write(service, |s| Ok(s.svc.delivered(event_id, sequence, now))) }?;
        flag(out_awaited, ok);
        Ok(())
    })
}

/// How the delivery of an event went, as a driver's event callback answers it (and as
/// `leasehold_discovery_service_delivery_failed` takes a failure).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum leasehold_delivery_outcome {
    /// The listener received it.
    LEASEHOLD_DELIVERED = 0,
    /// The host delivers it later and reports then (`_delivered`, `_delivery_failed`).
    LEASEHOLD_DELIVERY_PENDING = 1,
    /// A transport failure or time-out: sent again after a back-off, until delivered or the
    /// registration's lease ends.
    LEASEHOLD_DELIVERY_INDEFINITE = 2,
    /// The listener does not know the event id (`UnknownEventException`): the registration is
    /// cancelled.
    LEASEHOLD_DELIVERY_UNKNOWN_EVENT = 3,
    /// The listener is broken (a bad object): the registration is cancelled.
    LEASEHOLD_DELIVERY_BAD_OBJECT = 4,
    /// The call was refused (a bad invocation): the registration is cancelled.
    LEASEHOLD_DELIVERY_BAD_INVOCATION = 5,
}

/// The failure an outcome number stands for (`None` for delivered and pending; unknown numbers
/// count as indefinite).
fn failure(outcome: i32, why: String) -> Option<DeliveryFailure> {
    match outcome {
        0 | 1 => None,
        3 => Some(DeliveryFailure::UnknownEvent),
        4 => Some(DeliveryFailure::BadObject(why)),
        5 => Some(DeliveryFailure::BadInvocation(why)),
        _ => Some(DeliveryFailure::Indefinite(why)),
    }
}

/// The event (`event_id`, `sequence`) handed out could not be delivered: `outcome` is
/// `LEASEHOLD_DELIVERY_INDEFINITE` (sent again after a back-off, until the registration's lease
/// ends), `_UNKNOWN_EVENT`, `_BAD_OBJECT` or `_BAD_INVOCATION` (the registration is cancelled,
/// LD.3.1); `message` (`message_len` bytes of UTF-8) says why. `*out_awaited` as for
/// `_delivered`.
///
/// # Safety
/// `service` is NULL or live; `message` is NULL or points to `message_len` bytes;
/// `out_awaited` is NULL or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn leasehold_discovery_service_delivery_failed(
    service: *mut leasehold_discovery_service,
    event_id: u64,
    sequence: u64,
    outcome: i32,
    message: *const c_char,
    message_len: usize,
    now: i64,
    out_awaited: *mut bool,
) -> leasehold_status {
    guard(|| {
        let why = unsafe { text(message, message_len, "message") }?.to_string();
        if !(2..=5).contains(&outcome) {
            return Err(Fail::invalid(format!(
                "outcome must be a failure (2 to 5), got {outcome}"
            )));
        }
        let f = failure(outcome, why).expect("a failure");
        let ok =
            unsafe { write(service, |s| Ok(s.svc.delivery_failed(event_id, sequence, f, now))) }?;
        flag(out_awaited, ok);
        Ok(())
    })
}

/// A listener's encoded answer to an event (`leasehold_event_reply_encode`): delivered or
/// failed as it says. Bytes that do not decode are `DECODE` and change nothing. `*out_awaited`
/// as for `_delivered`.
///
/// # Safety
/// `service` is NULL or live; `data` is NULL or points to `len` bytes; `out_awaited` is NULL
/// or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_handle_event_reply_bytes(
    service: *mut leasehold_discovery_service,
    data: *const u8,
    len: usize,
    encoding_: i32,
    now: i64,
    out_awaited: *mut bool,
) -> leasehold_status {
    guard(|| {
        let enc = encoding(encoding_)?;
        let b = unsafe { slice(data, len, "data") }?;
        let ok = unsafe {
            write(service, |s| {
                let r = EventReply::decode(b, enc, &s.svc.config().landlord.limits)?;
                Ok(s.svc.handle_event_reply(&r, now))
            })
        }?;
        flag(out_awaited, ok);
        Ok(())
    })
}

/// When the host should next call `leasehold_discovery_service_handle_timeout` (or poll):
/// exactly the time of the next thing due; a time already past means a probe or an event is
/// waiting.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_poll_timeout(
    service: *const leasehold_discovery_service,
    out_has: *mut bool,
    out_at: *mut i64,
) -> leasehold_status {
    unsafe { sansio::poll_timeout(service, out_has, out_at) }
}

/// Brings the service to `now`: registrations whose lease ended are removed (without events),
/// registrars whose announcements stopped are discarded, overdue probes and deliveries count
/// as failed. The service's time never runs backwards.
///
/// # Safety
/// `service` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_handle_timeout(
    service: *mut leasehold_discovery_service,
    now: i64,
) -> leasehold_status {
    unsafe { sansio::handle_timeout(service, now) }
}

// ---------- requests from clients ----------

/// Answers a request about registration leases (renew, cancel, renew_all, cancel_all; grant
/// is refused: registrations are made by register). A cancelled registration ends at once,
/// without events. Free `*out` with `leasehold_reply_free`.
///
/// # Safety
/// `service` and `request` are NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_handle_request(
    service: *mut leasehold_discovery_service,
    request: *const leasehold_request,
    now: i64,
    out: *mut *mut leasehold_reply,
) -> leasehold_status {
    unsafe { sansio::answer_request(service, request, now, out) }
}

/// Answers an encoded lease request with an encoded reply (free with `leasehold_bytes_free`);
/// an undecodable request gets an error reply.
///
/// # Safety
/// `service` is NULL or live; `request` is NULL or points to `len` bytes; outputs writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_handle_bytes(
    service: *mut leasehold_discovery_service,
    request: *const u8,
    len: usize,
    encoding: i32,
    now: i64,
    out_reply: *mut *mut u8,
    out_reply_len: *mut usize,
) -> leasehold_status {
    unsafe { sansio::answer_bytes(service, request, len, encoding, now, out_reply, out_reply_len) }
}

/// Answers a discovery request (register and a registration's methods, the registration named
/// by its lease cookie; an unknown, expired or cancelled one is an UNKNOWN_LEASE error reply).
/// Free `*out` with `leasehold_discovery_reply_free`. A durable service: send the reply only
/// once it is durable (see `leasehold_discovery_service_open_dir`).
///
/// # Safety
/// `service` and `request` are NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_handle_discovery(
    service: *mut leasehold_discovery_service,
    request: *const leasehold_discovery_request,
    now: i64,
    out: *mut *mut leasehold_discovery_reply,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let r: &DiscoveryRequest = &unsafe { arg(request, "request") }?.inner;
        let reply = unsafe { write(service, |s| Ok(s.svc.handle_discovery(r, now))) }?;
        crate::discovery_wire::give_reply(reply, out);
        Ok(())
    })
}

/// Answers an encoded discovery request with an encoded reply in the same encoding (free with
/// `leasehold_bytes_free`); an undecodable request gets an error reply with id 0.
///
/// # Safety
/// `service` is NULL or live; `request` is NULL or points to `len` bytes; outputs writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_handle_discovery_bytes(
    service: *mut leasehold_discovery_service,
    request: *const u8,
    len: usize,
    encoding_: i32,
    now: i64,
    out_reply: *mut *mut u8,
    out_reply_len: *mut usize,
) -> leasehold_status {
    guard(|| {
        let d = Out::new(out_reply, "out_reply")?;
        let n = Out::new(out_reply_len, "out_reply_len")?;
        let enc = encoding(encoding_)?;
        let b = unsafe { slice(request, len, "request") }?;
        let reply = unsafe { write(service, |s| Ok(s.svc.handle_discovery_bytes(b, enc, now))) }?;
        unsafe { give_bytes(reply, d, n) };
        Ok(())
    })
}

// ---------- the driver ----------

/// Starts a unicast discovery (borrowed for the call). Return 0 once the host has taken it on
/// (it answers later, or at once from inside the callback, with `_unicast_found`,
/// `_unicast_found_datagram` or `_unicast_failed`); non-zero counts as a failure now.
#[allow(non_camel_case_types)]
pub type leasehold_probe_fn = Option<
    unsafe extern "C" fn(user_data: *mut c_void, probe: *const leasehold_unicast_request) -> i32,
>;

/// Delivers one event (borrowed for the call) and answers a `leasehold_delivery_outcome`:
/// `LEASEHOLD_DELIVERED`, `LEASEHOLD_DELIVERY_PENDING` (reported later), or a failure. Any other
/// number counts as `LEASEHOLD_DELIVERY_INDEFINITE`.
#[allow(non_camel_case_types)]
pub type leasehold_discovery_event_fn = Option<
    unsafe extern "C" fn(user_data: *mut c_void, event: *const leasehold_discovery_event) -> i32,
>;

/// One turn of the C driver at `now`: `handle_timeout(now)`, then rounds, each taking every
/// due probe and event (one borrow), making everything journaled so far durable (a durable
/// service: nothing leaves before it is durable; a failed write is `IO` and no callback runs),
/// then, with nothing borrowed, handing each probe to `on_probe` and each event to `on_event`
/// and applying what they answer. Callbacks may call back into the service (answer a probe,
/// report a delivery, register, discard, drive...); what they cause goes out in the next round,
/// up to `LEASEHOLD_DRIVE_MAX_ROUNDS`, after which `*out_next` is `now` (call again at once).
/// Otherwise `*out_has` / `*out_next` say when to call again. A callback that frees the service
/// ends the call: OK, `*out_has` false.
///
/// # Safety
/// `service` is NULL or live; the callbacks are NULL or valid functions; the outputs are NULL
/// or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn leasehold_discovery_service_drive(
    service: *mut leasehold_discovery_service,
    now: i64,
    on_probe: leasehold_probe_fn,
    on_event: leasehold_discovery_event_fn,
    user_data: *mut c_void,
    out_has: *mut bool,
    out_next: *mut i64,
) -> leasehold_status {
    guard(|| {
        let out = Maybe::new(out_has, "out_has", out_next, "out_next")?;
        let on_probe = required(on_probe, "on_probe")?;
        let on_event = required(on_event, "on_event")?;
        let call = unsafe { Call::enter(service) }?;
        call.apply(|s| s.svc.handle_timeout(now))?;
        let take = |s: &mut DiscoveryState| {
            let mut probes = Vec::new();
            while let Some(p) = s.svc.poll_transmit(now) {
                probes.push(p);
            }
            let mut events = Vec::new();
            while let Some(e) = s.svc.poll_event(now) {
                events.push(e);
            }
            Ok((!probes.is_empty() || !events.is_empty()).then_some((probes, events)))
        };
        let run = |(probes, events): (Vec<UnicastRequest>, Vec<RemoteDiscoveryEvent>)| {
            // Nothing leaves before it is durable.
            store::commit_in(&call, false)?;
            for p in probes {
                if call.freed() {
                    break;
                }
                let id = p.id;
                let c = leasehold_unicast_request::convert(p)?;
                let rc = unsafe { on_probe(user_data, &c) };
                unsafe { c.free_fields() };
                if rc != 0 && !call.freed() {
                    let e = LeaseError::Indefinite(format!("the probe callback returned {rc}"));
                    call.apply(|s| {
                        s.svc.handle_unicast(id, Err(e), now);
                    })?;
                }
            }
            for e in events {
                if call.freed() {
                    break;
                }
                let (event_id, sequence) = (e.event_id, e.sequence);
                let c = leasehold_discovery_event::convert(e)?;
                let rc = unsafe { on_event(user_data, &c) };
                unsafe { c.free_fields() };
                if call.freed() {
                    break;
                }
                let why = format!("the event callback answered {rc}");
                call.apply(|s| {
                    match failure(rc, why) {
                        None if rc == 0 => s.svc.delivered(event_id, sequence, now),
                        None => false,
                        Some(f) => s.svc.delivery_failed(event_id, sequence, f, now),
                    };
                })?;
            }
            Ok(())
        };
        let next = sansio::rounds(&call, now, take, run)?;
        unsafe { out.write(next) };
        Ok(())
    })
}

// ---------- snapshot and restore ----------

/// Everything the service holds, at its own time, as JSON text for
/// `leasehold_discovery_service_restore` (call `_handle_timeout` first to bring it to the
/// present). It holds the registration-cookie secret: store it like a key. Free `*out` with
/// `leasehold_string_free`.
///
/// # Safety
/// `service` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_snapshot(
    service: *const leasehold_discovery_service,
    out: *mut *mut c_char,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let json = unsafe { read(service, |s| Ok(s.svc.snapshot().to_json())) }?;
        unsafe { out.write(c_string(json)?) };
        Ok(())
    })
}

/// A service rebuilt at `now` from `config` (copied: the policy, schedules, time-outs, limits
/// and jump; its id must be the snapshot's, else `INVALID_ARGUMENT`) and a snapshot (`len`
/// bytes of JSON). Event sequence numbers jump by the configured restore jump. A snapshot of
/// another version or an inconsistent one is `DECODE`.
///
/// # Safety
/// `config` is NULL or live; `json` is NULL or points to `len` bytes; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_restore(
    config: *const leasehold_discovery_config,
    json: *const c_char,
    len: usize,
    now: i64,
    out: *mut *mut leasehold_discovery_service,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let c = unsafe { arg(config, "config") }?;
        let snap = DiscoverySnapshot::from_json(unsafe { text(json, len, "json") }?)?;
        let svc = DiscoveryService::restore(c.inner.clone(), snap, now)?;
        give(DiscoveryState { svc, store: None }, out);
        Ok(())
    })
}

// ---------- durability ----------

/// Makes the service from the snapshot's bytes, or afresh from the configuration.
fn builder(
    c: &DiscoveryConfig,
) -> impl FnOnce(Option<&[u8]>) -> leasehold_core::Result<DiscoveryService> {
    let c = c.clone();
    move |snapshot| match snapshot {
        Some(bytes) => DiscoveryService::from_snapshot_bytes(bytes),
        None => {
            let mut svc = DiscoveryService::new(c)?;
            svc.enable_journal();
            Ok(svc)
        }
    }
}

/// Applies the host's settings to a recovered service (journaled and committed at once) and
/// hands the handle to C.
fn give_opened(
    o: store::Reopened<DiscoveryService>,
    c: &DiscoveryConfig,
    out: Out<*mut leasehold_discovery_service>,
    info: Option<Out<leasehold_recovery>>,
) -> Res {
    let store::Reopened { state: mut svc, store: mut st, recovered, created } = o;
    svc.reconfigure(c.clone())?;
    st.commit_now(&mut svc)?;
    let r = store::recovery(&recovered, created, &svc, svc.registrations().len());
    give(DiscoveryState { svc, store: Some(st) }, out);
    if let Some(i) = info {
        unsafe { i.write(r) };
    }
    Ok(())
}

/// Opens a durable discovery service kept in the directory `path` (`path_len` bytes), creating
/// it if needed and recovering what is there exactly as `leasehold_landlord_open_dir` does (a
/// torn tail dropped, damage `DECODE`, a directory in use `IO`): every registration with its
/// lease, managed sets, registrars, event ids and sequence numbers, events queued or in
/// flight. Time spent down does not count: the service's clock goes on from the last journaled
/// time. A new store takes all of `config`; an existing one keeps its id and seed (`config`'s
/// id must be the same, else `INVALID_ARGUMENT`) and takes the rest of `config` (policy,
/// schedules, time-outs, limits on registrars) from now on. `*out_info` (optional) says what
/// was recovered (`leases`: registrations).
///
/// **Nothing leaves before it is durable.** A reply to a client (`_handle_discovery*`,
/// `_handle_bytes`: an error too) and an event or probe handed out depend on the records up to
/// `leasehold_discovery_service_journal_seq` read right after the call: answer what is
/// waiting, call `leasehold_discovery_service_commit` (one append and one sync for all of it),
/// then send. `_drive` commits by itself before any of its callbacks runs. An event whose
/// delivery was not yet durable when the process died is delivered again after recovery, with
/// the same sequence number.
///
/// # Safety
/// `path` is NULL or points to `path_len` bytes; `config` is NULL or live; `out` is NULL or
/// writable; `out_info` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_open_dir(
    path: *const c_char,
    path_len: usize,
    config: *const leasehold_discovery_config,
    now: i64,
    out: *mut *mut leasehold_discovery_service,
    out_info: *mut leasehold_recovery,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let info = Out::optional(out_info);
        let c = unsafe { arg(config, "config") }?;
        let o = unsafe { store::open_dir(path, path_len, c.store, now, builder(&c.inner)) }?;
        give_opened(o, &c.inner, out, info)
    })
}

/// Opens a durable discovery service kept in the host's own storage, as
/// `leasehold_landlord_open_io` (`files` as the host read them, `io` for every file operation,
/// run inside this call, `_commit` and `_compact`); the rest as
/// `leasehold_discovery_service_open_dir`.
///
/// # Safety
/// `io` is NULL or valid with valid callbacks; `files` is NULL or points to `file_count` valid
/// entries; `config` is NULL or live; the outputs are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_open_io(
    io: *const leasehold_store_io,
    files: *const leasehold_store_file,
    file_count: usize,
    config: *const leasehold_discovery_config,
    now: i64,
    out: *mut *mut leasehold_discovery_service,
    out_info: *mut leasehold_recovery,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let info = Out::optional(out_info);
        let c = unsafe { arg(config, "config") }?;
        let build = builder(&c.inner);
        let o = unsafe { store::open_io(io, files, file_count, c.store, now, build) }?;
        give_opened(o, &c.inner, out, info)
    })
}

/// The sequence number of the last record the service journaled: what a reply, event or probe
/// handed out now depends on (see `leasehold_discovery_service_open_dir`). 0 in memory.
///
/// # Safety
/// `service` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_journal_seq(
    service: *const leasehold_discovery_service,
    out: *mut u64,
) -> leasehold_status {
    unsafe { store::journal_seq(service, out) }
}

/// Makes everything journaled so far durable (one append, one sync: group commit; a
/// compaction when the log has outgrown the snapshot); `*out_durable` is the last durable
/// record. A failed write is `IO`, and so is every later commit: send nothing still waiting,
/// free the service and open the store again. In memory: OK, `*out_durable` 0.
///
/// # Safety
/// `service` is NULL or live; `out_durable` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_commit(
    service: *mut leasehold_discovery_service,
    out_durable: *mut u64,
) -> leasehold_status {
    unsafe { store::commit_out(service, false, out_durable) }
}

/// Commits, then writes a new snapshot and removes the log it covers.
///
/// # Safety
/// `service` is NULL or live; `out_durable` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_compact(
    service: *mut leasehold_discovery_service,
    out_durable: *mut u64,
) -> leasehold_status {
    unsafe { store::commit_out(service, true, out_durable) }
}

/// Whether the service is kept in a store (opened with `_open_dir` or `_open_io`).
///
/// # Safety
/// `service` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_discovery_service_is_durable(
    service: *const leasehold_discovery_service,
    out: *mut bool,
) -> leasehold_status {
    unsafe { store::is_durable(service, out) }
}
